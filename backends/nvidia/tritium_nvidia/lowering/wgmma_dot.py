"""``ttg.warp_group_dot`` on Hopper tensor cores (``wgmma.mma_async``, sm_90a), from the building blocks of
:mod:`tritium_nvidia.lowering.wgmma`; and the proxy fence after generic writes into wgmma-readable buffers.

The result (and accumulator) layout is ``#ttg.nvidia_mma<3, [wm, wn], [16, n, k]>``: warps ``4g .. 4g + 3`` are
warpgroup ``g``, which owns the ``64 x n`` instruction tiles its warp bases beyond the first two say (rows
``64 * ..`` of A, columns of B), repeated along N, then M (:func:`wgmma.acc_tiles`: ``n / 2`` registers per tile,
in the instruction's ``d`` order).  Both operands are memdescs (``!ttg.memdesc`` in ``#ttg.nvmma_shared``); in the
lowering a memdesc is one ``!llvm.ptr<3>``, the first byte of the buffer (a ``local_alloc``'s, or a stage of the
pipeliner's stack): the descriptors start from that value only.

Per op:

* the descriptor of each operand once: its buffer's shared address plus the running warpgroup's offset (one
  ``and`` / ``mul`` per warpgroup bit), ORed with the constant LBO / SBO / swizzle fields
  (:func:`wgmma.operand_descriptor`); every tile / k-step is that descriptor plus a constant
  (:func:`wgmma.tile_offset`, in 16-byte units);
* ``wgmma.fence``; per tile, per K step: ``wgmma.mma_async.m64n{n}k{k}`` (operand types f16 / bf16 / tf32 /
  e4m3 / e5m2 / s8; ``imm-trans`` for an MN-major 16-bit operand), the accumulator chained through the tile's
  steps, ``scale-d`` 0 on the first step when the accumulator operand is a zero constant;
* ``wgmma.commit_group``, then ``wgmma.wait_group`` (:data:`WAIT_PENDING`, 0: the dot is synchronous) with every
  accumulator register tied through it, so nothing reads them earlier.

fp8 into an fp32 accumulator (:func:`promotion_steps`, Triton's ``max_num_imprecise_acc`` split): Hopper's fp8
wgmma adds into its accumulator with about 14 bits of precision, so when ``maxNumImpreciseAcc <= K`` (the dot's
K) the wgmmas of every ``ceil(maxNumImpreciseAcc / 32)`` k-steps (at least one) go into a fresh, zero-initialised
partial tile (``scale-d`` 0), which is waited for and added to the real accumulator in fp32: one ``add.f32`` per
thread and accumulator register per group of K (``contract``, as every fadd under ``enable_fp_fusion``, so the
PTX says ``add.f32`` as Triton's does; ``add.rn.f32`` without fusion, as Triton's then).  The count is Triton's
(``test_dot_max_num_imprecise_acc`` checks ``BLOCK_M * BLOCK_N / threads * BLOCK_K / L`` of them; ``L == K``: one
add per dot; a zero-constant accumulator takes the first partial as is).  ``maxNumImpreciseAcc > K`` accumulates
all of K in the instruction (Triton's sm_90 default, which the language sets for fp8 dots that do not say: 2**30;
it loses about 0.15 on 512-long fp8 dot products).  ``maxNumImpreciseAcc < 32`` never reaches wgmma from a
``tt.dot``: accelerate_matmul keeps such dots on ``mma.sync`` with f16 operands, as Triton; a hand-written 0 adds
after every k-step, as Triton's lowering would.

This lives in the lowering rather than in a TTGIR rewrite into several ``warp_group_dot`` + ``arith.addf``: a
warp_group_dot reads whole memdescs (splitting K would need K-slices of the swizzled operand buffers and a zero
accumulator tensor per slice), while here a group is just a range of the k-steps the rule already walks, and the
partial tiles can be sub-tiles: each unit is a sub-tile at most 64 columns wide (32 registers, so the partials
do not double the accumulator's register footprint) times one group of k-steps, two units in flight (issue unit
``i + 1``, ``wgmma.wait_group 1``, add unit ``i``), the adds reading only waited-for registers.  Such a dot is
always complete when the rule returns: the pipeliner keeps it synchronous (``_async_ok``), and one marked
``isAsync`` (TTGIR from Triton, where it is followed by ``warp_group_dot_wait {pendings = 0}``) is lowered the
same way, its later ``warp_group_dot_wait`` then waiting for nothing of it.

``ttg.local_alloc`` (with a source) / ``ttg.local_store`` into an ``#ttg.nvmma_shared`` buffer on sm_90+: the
generic rule, then ``fence.proxy.async.shared::cta``, so the thread's generic-proxy stores are visible to wgmma's
async-proxy reads after the barrier membar puts before the dot.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.dialects.enums import InputPrecision
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules import shared_memory as generic_shared
from tritium.lowering.rules.shared_memory import memdesc_layout
from tritium.lowering.utils import pack_word, scalar_type
from tritium.passes.ir_helpers import is_zero

from . import wgmma as W
from .target_info import CUDATargetInfo

RULES = Rules()

#: ``wgmma.wait_group`` depth after a warp_group_dot: 0 waits for its own instructions (a synchronous dot)
WAIT_PENDING = 0

_ACC = {"f32": "f32", "i32": "s32", "f16": "f16"}


def _is_memdesc(ty) -> bool:
    return str(ty).startswith("!ttg.memdesc")


def warpgroup_terms(group_bases, lay, shape, operand: int, bits: int) -> list:
    """``[(warp id bit, bytes)]``: the running warpgroup's tile of operand ``operand`` (0: A, 1: B) starts the sum
    of ``bytes`` over the set bits of its warp id into the buffer.  ``group_bases``: the result layout's warp bases
    beyond the first two (the four warps of a warpgroup own rows 16 apart), for warp id bits 2, 3, ...: their rows
    move A's tile, their columns B's (zero bases: warpgroups computing the same tile)."""
    out = []
    for j, base in enumerate(group_bases, start=2):
        mn = base[0] if operand == 0 else base[1]
        if mn:
            out.append((j, W.tile_offset(lay, shape, operand, mn, 0, elem_bits=bits)))
    return out


class _RegisterA:
    """A from registers (``#ttg.dot_op<0, #nvidia_mma<3>, 2>``, 16-bit): the four 32-bit words of the fragment
    at ``(m, k)`` (the layout's fragment registers are PTX's a0..a7 order), packed once."""

    registers = True
    trans = 0

    def __init__(self, ctx, vals, ty, bits: int):
        lay = ctx.layout(ty)
        if bits != 16 or not isinstance(lay, layouts.DotOperandLayout) or lay.k_width != 2:
            raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(ctx.op)}: A from registers needs 16-bit "
                                f"elements in a dot_op layout with kWidth 2, got {ty}")
        self.ctx, self.vals = ctx, vals
        self.ll = ctx.linear(ty)
        self.map = self.ll.register_of()
        self.shape = tuple(tt.shape_of(ty))
        self.cache = {}

    def at(self, ctx, m: int, k: int, mn_size: int = None):
        r0 = self.map.get((m, k))
        if r0 is None or r0 % 8:
            raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(ctx.op)}: no A fragment at {(m, k)}")
        if r0 not in self.cache:
            self.cache[r0] = [pack_word(ctx, self.vals[r0 + 2 * w:r0 + 2 * w + 2]) for w in range(4)]
        return self.cache[r0]


class _Operand:
    """One shared-memory operand: its layout, shape, the running warpgroup's descriptor."""

    registers = False

    def __init__(self, ctx, ptr, mem_ty, operand: int, bits: int, group_bases):
        self.shape, _, self.lay = memdesc_layout(mem_ty)
        if not isinstance(self.lay, layouts.NVMMASharedLayout):
            raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(ctx.op)}: operand {operand} is in "
                                f"{self.lay}, not #ttg.nvmma_shared")
        self.operand, self.bits = operand, bits
        self.k_major = W.is_k_major(self.lay, operand)
        self.trans = 0 if self.k_major else 1
        try:
            fields = W.operand_descriptor(self.lay, self.shape, operand, elem_bits=bits)
        except ValueError as e:
            raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(ctx.op)}: operand {operand}: {e}") from None
        i32 = ctx.i32()
        addr = ctx.emit("llvm.ptrtoint", [ptr], i32)
        for j, off in warpgroup_terms(group_bases, self.lay, self.shape, operand, bits):
            bit = ctx.emit("arith.andi", [ctx.emit("arith.shrui", [ctx.warp_id(), ctx.c32(j)], i32), ctx.c32(1)], i32)
            addr = ctx.emit("arith.addi", [addr, ctx.emit("arith.muli", [bit, ctx.c32(off)], i32)], i32)
        self.desc = W.emit_descriptor(ctx, addr, fields)

    def offset(self, mn: int, k: int, mn_size: int = None) -> int:
        return W.tile_offset(self.lay, self.shape, self.operand, mn, k, elem_bits=self.bits, mn_size=mn_size)

    def at(self, ctx, mn: int, k: int, mn_size: int):
        """The descriptor of the tile at ``(mn, k)`` (relative to the warpgroup's)."""
        return W.advance_descriptor(ctx, self.desc, self.offset(mn, k, mn_size))


def promotion_steps(a_type: str, acc_type: str, max_imprecise: int, K: int, kk: int):
    """For fp8 operands into an fp32 accumulator: how many k-steps (of ``kk`` elements) wgmma accumulates in its
    own (reduced, about 14-bit) precision before the partial result is added in fp32; None: all of K, in the
    instruction.  Triton's rule: a partial accumulator when ``maxNumImpreciseAcc <= K``, added once the k-steps
    issued into it reach ``maxNumImpreciseAcc`` elements (so every ``ceil(m / kk)`` steps, at least one) and after
    the last step."""
    if acc_type != "f32" or a_type not in ("e4m3", "e5m2"):
        return None
    if max_imprecise > K:
        return None
    return min(K // kk, max(1, -(-max_imprecise // kk)))


def _fadd(ctx, xs, ys):
    """``xs + ys`` in fp32, one ``arith.addf`` per register (``contract`` under ``enable_fp_fusion``, as the
    elementwise rule gives every fadd: NVPTX then prints ``add.f32``, else ``add.rn.f32``)."""
    attrs = {"fastmath": ir.Attribute.parse("#arith.fastmath<contract>")} if ctx.enable_fp_fusion else None
    return [ctx.emit("arith.addf", [x, y], x.type, attrs) for x, y in zip(xs, ys)]


def warp_group_dot(ctx, a, b, c, *, max_imprecise: int = 0, pending=WAIT_PENDING, use_c=None) -> list:
    """The accumulator registers of ``ctx.op`` (a ``ttg.warp_group_dot``) after ``a @ b + c``; ``pending``: the
    ``wgmma.wait_group`` depth (0: wait for every instruction issued here; None: no wait, the registers are
    those the instructions write, in flight until a ``ttg.warp_group_dot_wait``); ``use_c``: the op's ``use_c``
    register (an i1: false ignores ``c``, wgmma's scale-d on the first k-step), None when it has none."""
    op = ctx.op
    a_ty, b_ty, c_ty = (op.operands[i].type for i in range(3))
    lay = ctx.layout(op.results[0].type)
    if not isinstance(lay, layouts.NvidiaMmaLayout) or lay.version != 3:
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(op)}: the result is in {lay}, not nvidia_mma v3")
    shape = tuple(tt.shape_of(op.results[0].type))
    ll = lay.linear(shape)
    if ll.warp[:2] != ((16, 0), (32, 0)):
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(op)}: the warps of a warpgroup must own rows "
                            f"16 apart, got warp bases {ll.warp}")
    a_elem = memdesc_layout(a_ty)[1] if _is_memdesc(a_ty) else tt.elem_of(a_ty)
    _, b_elem, _ = memdesc_layout(b_ty)
    a_type, b_type = W.ptx_type(a_elem), W.ptx_type(b_elem)
    acc_s = str(scalar_type(c_ty))
    if acc_s not in _ACC:
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(op)}: no wgmma accumulates into {acc_s}")
    acc_type = _ACC[acc_s]
    bits = W.OPERAND_BITS[a_type]
    n = lay.instr_n
    kk = W.instr_k(a_type)
    A = _Operand(ctx, a[0], a_ty, 0, bits, ll.warp[2:]) if _is_memdesc(a_ty) else _RegisterA(ctx, a, a_ty, bits)
    B = _Operand(ctx, b[0], b_ty, 1, bits, ll.warp[2:])
    K = A.shape[1]
    if K % kk:
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(op)}: K = {K} is not a multiple of {kk}")
    steps = K // kk
    zero = is_zero(op.operands[2], any_sign=True)
    kw = dict(a_type=a_type, b_type=b_type, acc_type=acc_type, trans_a=A.trans, trans_b=B.trans)

    per = n // 2
    tiles, copies, seen = [], [], {}
    for r0, (m0, n0) in W.acc_tiles(lay, shape):
        if (m0, n0) in seen:  # a replicated tile (zero register bases): the same values
            copies.append((r0, seen[(m0, n0)]))
            continue
        seen[(m0, n0)] = r0
        tiles.append((r0, m0, n0))

    out = list(c)

    def issue(m0, n0, width, acc, j0, j1, scale_first):
        for j in range(j0, j1):
            acc = W.wgmma_mma_async(ctx, A.at(ctx, m0, j * kk, 64), B.at(ctx, n0, j * kk, width), acc,
                                    scale_d=scale_first if j == j0 else True, n=width,
                                    a_from_registers=A.registers, **kw)
        return acc

    group = promotion_steps(a_type, acc_type, max_imprecise, K, kk)
    if pending is None and acc_type == "f16":
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(op)}: an asynchronous dot needs its accumulator "
                            f"in the instruction's own registers (f32 / s32)")
    if A.registers:  # pack A's fragments before the fence: no register writes between it and the wgmmas
        for _, m0, _ in tiles:
            for j in range(steps):
                A.at(ctx, m0, j * kk)
    if group is None:
        W.wgmma_fence(ctx)
        accs = []
        for r0, m0, n0 in tiles:
            acc = None if zero else out[r0:r0 + per]
            accs.append(issue(m0, n0, n, acc, 0, steps, False if zero else True if use_c is None else use_c))
        W.wgmma_commit(ctx)
        flat = [v for acc in accs for v in acc]
        if pending is not None:
            flat = W.wgmma_wait(ctx, pending, flat)
        width = len(accs[0]) if accs else 0
        for t, (r0, m0, n0) in enumerate(tiles):
            words = flat[t * width:(t + 1) * width]
            out[r0:r0 + per] = W.unpack_f16(ctx, words) if acc_type == "f16" else words
    else:
        # fp8 -> fp32, promoted: each unit (a sub-tile at most 64 wide, `group` k-steps) into a fresh partial
        # accumulator, added to the fp32 accumulator once waited for; two units in flight (wait_group 1).  Done
        # (every unit waited for) even when the op is asynchronous (`pending` None): nothing is left in flight
        sub = min(n, 64)
        units = [(r0 + s * sub // 2, m0, n0 + s * sub, j0, min(steps, j0 + group))
                 for r0, m0, n0 in tiles for s in range(n // sub) for j0 in range(0, steps, group)]
        started, inflight = set(), []

        def retire(depth):
            r, part = inflight.pop(0)
            part = W.wgmma_wait(ctx, depth, part)
            if zero and r not in started:
                out[r:r + sub // 2] = part
            elif use_c is not None and r not in started:  # c counts only where use_c is true
                x0 = out[r]
                f0 = ctx.emit("arith.constant", [], x0.type, {"value": ir.FloatAttr.get(x0.type, 0.0)})
                kept = [ctx.emit("arith.select", [use_c, x, f0], x.type) for x in out[r:r + sub // 2]]
                out[r:r + sub // 2] = _fadd(ctx, kept, part)
            else:
                out[r:r + sub // 2] = _fadd(ctx, out[r:r + sub // 2], part)
            started.add(r)

        for r, m0, n0, j0, j1 in units:
            W.wgmma_fence(ctx)
            inflight.append((r, issue(m0, n0, sub, None, j0, j1, False)))
            W.wgmma_commit(ctx)
            if len(inflight) > 1:
                retire(1)
        while inflight:
            retire(len(inflight) - 1)
    for r0, src in copies:
        out[r0:r0 + per] = out[src:src + per]
    return out


@RULES.register("ttg.warp_group_dot")
def _warp_group_dot(ctx, a, b, c, use_c=None, *, inputPrecision=InputPrecision.IEEE, maxNumImpreciseAcc=0,
                    isAsync=False):
    if str(memdesc_layout(ctx.op.operands[1].type)[1]) == "f32" and inputPrecision != InputPrecision.TF32:
        raise LoweringError(f"ttg.warp_group_dot at {tt.loc_str(ctx.op)}: wgmma reads fp32 operands as tf32; "
                            f"input precision {inputPrecision.name} needs mma.sync")
    use_c = use_c[0] if use_c is not None else None
    return [warp_group_dot(ctx, a, b, c, max_imprecise=int(maxNumImpreciseAcc or 0),
                           pending=None if isAsync else WAIT_PENDING, use_c=use_c)]


@RULES.register("ttg.warp_group_dot_wait")
def _warp_group_dot_wait(ctx, inputs, *, pendings):
    """``wgmma.wait_group pendings``, the accumulator registers of the tensor inputs tied through it; memdesc
    inputs (buffers an asynchronous dot reads, kept alive until here) pass through."""
    flat, spans = [], []
    for i, (vals, v) in enumerate(zip(inputs, ctx.op.operands)):
        if not _is_memdesc(v.type):
            spans.append((i, len(flat), len(vals)))
            flat += vals
    waited = W.wgmma_wait(ctx, int(pendings), flat)
    out = [list(v) for v in inputs]
    for i, start, n in spans:
        out[i] = waited[start:start + n]
    return out


# ------------------------------------------------------------------------------------------------
# Generic-proxy writes into buffers wgmma reads
# ------------------------------------------------------------------------------------------------

_GENERIC_ALLOC = generic_shared.RULES["ttg.local_alloc"]
_GENERIC_STORE = generic_shared.RULES["ttg.local_store"]


def _fence_for_async_proxy(ctx, mem_ty) -> None:
    """``fence.proxy.async`` after this thread's stores into an ``#ttg.nvmma_shared`` buffer on sm_90+ (wgmma and
    TMA read through the async proxy); membar's barrier before the reader comes after it."""
    target = ctx.target
    if isinstance(target, CUDATargetInfo) and target.arch >= 90 and \
            isinstance(memdesc_layout(mem_ty)[2], layouts.NVMMASharedLayout):
        W.fence_proxy_async(ctx)


@RULES.register("ttg.local_alloc")
def _local_alloc(ctx, src):
    out = _GENERIC_ALLOC(ctx, src)
    if src is not None:
        _fence_for_async_proxy(ctx, ctx.op.results[0].type)
    return out


@RULES.register("ttg.local_store")
def _local_store(ctx, src, dst):
    out = _GENERIC_STORE(ctx, src, dst)
    _fence_for_async_proxy(ctx, ctx.op.operands[1].type)
    return out
