"""``ttg.local_load`` of ``mma.sync`` operands with ``ldmatrix``.

A ``#ttg.dot_op<i, #nvidia_mma<2>, kWidth>`` tensor read from a ``#ttg.nvmma_shared`` buffer: every fragment is
made of 8x8 matrices of 16 bytes per row (:class:`tritium.dialects.layouts.DotOperandLayout`: A = four matrices
(rows 0-7 / 8-15 x the two K halves), B = two (the K halves)), so one ``ldmatrix.sync.aligned.m8n8.x4`` loads an A
fragment or two consecutive B fragments (``.x2`` for a last single one).  Lane ``l`` gives the address of row
``l % 8`` of matrix ``l // 8``.  When the buffer's contiguous dim is K the rows are along M / N; when it is M / N
(a transposed operand, 16-bit types only) ``.trans`` reads rows along K.  Addresses come from
:class:`tritium.lowering.rules.shared_memory.Addresser` (the lane's offset once, a constant XOR / add per fragment).
Everything else is the generic ``local_load``."""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.shared_memory import Addresser, byte_ptr, load_tensor, memdesc_layout
from tritium.lowering.utils import inline_asm, smem_elem

RULES = Rules()


def ldmatrix_plan(dlay, slay, shape, eb):
    """``(trans, matrices)`` for reading ``dlay`` (a dot_op of nvidia_mma v2) from ``slay``; None when ldmatrix
    cannot (an 8- or 32-bit operand whose contiguous dim is not K, a 64-bit one, an operand smaller than a
    fragment).  ``matrices``: per matrix of an A
    fragment (4) or of a B fragment (2), the ``(other, k)`` offset of its first element."""
    if not (isinstance(dlay, layouts.DotOperandLayout) and isinstance(dlay.parent, layouts.NvidiaMmaLayout)
            and dlay.parent.version == 2 and isinstance(slay, layouts.NVMMASharedLayout)):
        return None
    r = len(shape)
    k_dim = r - 1 if dlay.op_idx == 0 else r - 2
    fast, _ = slay.fast_slow(r)
    trans = fast != k_dim
    if (trans and eb != 2) or eb > 4:  # an f64 element is two of ldmatrix's 32-bit words: plain loads
        return None
    if shape[r - 2 if dlay.op_idx == 0 else r - 1] < (16 if dlay.op_idx == 0 else 8):
        # a small dot's operand (M < 16, N < 8): the fragment's extra rows are copies (zero bases of the layout),
        # but ldmatrix's lanes would address rows the buffer does not have
        return None
    kblk = 4 * dlay.k_width  # K elements of one matrix (16 bytes)
    if dlay.op_idx == 0:
        mats = [(0, 0), (8, 0), (0, kblk), (8, kblk)]
    else:
        mats = [(0, 0), (0, kblk)]
    return trans, mats


class LdmatrixPlan:
    """Everything about reading ``dst_ty``'s fragments with ``ldmatrix`` that is plain Python (so a model can check
    it): ``trans``; ``mats``: the ``(other, k)`` offset of the matrix each group of 8 lanes addresses;
    ``thread_index(t)``: the element thread ``t`` gives the address of (before a fragment's constant offset);
    ``loads``: per ldmatrix, ``(first register, x2 or x4, registers of a second B fragment or None)``."""

    def __init__(self, dlay, slay, shape, eb, ll, threads_per_warp: int = 32):
        plan = ldmatrix_plan(dlay, slay, shape, eb)
        self.ok = plan is not None
        if not self.ok:
            return
        self.trans, mats = plan
        r = len(shape)
        self.k_dim = r - 1 if dlay.op_idx == 0 else r - 2
        self.other = r - 2 if dlay.op_idx == 0 else r - 1
        self.rank, self.ll, self.tpw = r, ll, threads_per_warp
        self.frag = dlay.fragment_regs()
        self.kstep = 8 * dlay.k_width
        # x4: an A fragment, or two B fragments (the second one k-step later: its matrices follow)
        self.mats = mats if len(mats) == 4 else mats + [(o, k + self.kstep) for o, k in mats]
        rmap = ll.register_of()
        self.loads, self.copies = [], []  # copies: (register, register it repeats)
        taken = set()
        K = shape[self.k_dim]
        for r0 in range(0, ll.num_regs, self.frag):
            if r0 in taken:
                continue
            start = ll.index(r0)
            if rmap[start] != r0:
                self.copies.append((r0, rmap[start]))
                continue
            pair = None
            if dlay.op_idx == 1 and start[self.k_dim] + self.kstep < K:
                nxt = list(start)
                nxt[self.k_dim] += self.kstep
                pair = rmap.get(tuple(nxt))
                if pair is not None and (pair % self.frag or pair in taken or pair < r0):
                    pair = None
            n = 4 if (dlay.op_idx == 0 or pair is not None) else 2
            self.loads.append((r0, n, pair))
            taken.add(r0)
            if pair is not None:
                taken.add(pair)

    def elem(self, o, k) -> tuple:
        idx = [0] * self.rank
        idx[self.other], idx[self.k_dim] = o, k
        return tuple(idx)

    def lane_elem(self, lane: int) -> tuple:
        """The (other, k) element lane ``lane`` addresses (matrix ``lane // 8``, its row ``lane % 8``)."""
        o, k = self.mats[(lane // 8) % len(self.mats)]
        i = lane % 8
        return (o, k + i) if self.trans else (o + i, k)

    def thread_index(self, t: int) -> tuple:
        w = self.ll.index(0, 0, t // self.tpw)
        return tuple(a + b for a, b in zip(w, self.elem(*self.lane_elem(t % self.tpw))))


def _pick(ctx, jv, vals):
    """``vals[j]`` for the running lane's matrix ``j`` (``vals`` affine in the bits of j)."""
    i32 = ctx.i32()
    if len(set(vals)) == 1:
        return ctx.c32(vals[0])
    b1, b2 = vals[1] - vals[0], vals[2] - vals[0]
    if vals[3] != vals[0] + b1 + b2:
        raise LoweringError(f"internal: ldmatrix offsets {vals} are not affine in the matrix index")
    v = ctx.c32(vals[0])
    for bits, b in (((lambda: ctx.emit("arith.andi", [jv, ctx.c32(1)], i32)), b1),
                    ((lambda: ctx.emit("arith.shrui", [jv, ctx.c32(1)], i32)), b2)):
        if b:
            v = ctx.emit("arith.addi", [v, ctx.emit("arith.muli", [bits(), ctx.c32(b)], i32)], i32)
    return v


@RULES.register("ttg.local_load")
def _local_load(ctx, src, offsets=None):
    dst_ty, mem_ty = ctx.op.results[0].type, ctx.op.operands[0].type
    shape, _, slay = memdesc_layout(mem_ty)
    dlay = ctx.layout(dst_ty)
    sty, _, from_s, eb = smem_elem(ctx, dst_ty)
    ll = ctx.linear(dst_ty)
    # a block of the buffer (offsets): the plan covers the result's shape, the addresses the buffer's
    plan = LdmatrixPlan(dlay, slay, tuple(ir.RankedTensorType(dst_ty).shape), eb, ll, ctx.threads_per_warp)
    if not plan.ok:
        return [load_tensor(ctx, src[0], dst_ty, mem_ty, offsets)]
    offs = tuple(offsets) if offsets else (0,) * len(shape)
    # the running lane's element: matrix j = lane >> 3, row i = lane & 7
    i32 = ctx.i32()
    lane = ctx.lane_id()
    jv = ctx.emit("arith.shrui", [lane, ctx.c32(3)], i32)
    iv = ctx.emit("arith.andi", [lane, ctx.c32(7)], i32)
    o_v = _pick(ctx, jv, [m[0] for m in plan.mats])
    k_v = _pick(ctx, jv, [m[1] for m in plan.mats])
    if plan.trans:
        k_v = ctx.emit("arith.addi", [k_v, iv], i32)
    else:
        o_v = ctx.emit("arith.addi", [o_v, iv], i32)
    vals = ctx.warp_offsets(ll)
    vals[plan.other] = ctx.emit("arith.addi", [vals[plan.other], o_v], i32)
    vals[plan.k_dim] = ctx.emit("arith.addi", [vals[plan.k_dim], k_v], i32)
    vals = [v if not o else ctx.emit("arith.addi", [v, ctx.c32(o)], i32) for v, o in zip(vals, offs)]
    addr = Addresser(ctx, slay, shape, eb, lambda t: tuple(a + o for a, o in zip(plan.thread_index(t), offs)),
                     ctx.num_warps * ctx.threads_per_warp, vals, "add")

    out = [None] * ll.num_regs
    per_word = 4 // eb
    word_ty = sty if eb == 4 else ir.VectorType.get([per_word], sty)
    frag = plan.frag
    for r0, n, pair in plan.loads:
        ptr = byte_ptr(ctx, src[0], addr.offset(ll.index(r0)))
        regs = ",".join(f"${q}" for q in range(n))
        text = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if plan.trans else ''}.shared.b16 {{{regs}}}, [${n}];"
        # a side effect: LLVM must not move the read across the barrier that orders it after the stores
        words = inline_asm(ctx, text, ",".join(["=r"] * n + ["l"]), [ptr], [i32] * n, side_effects=True)
        elems = []
        for w in words:
            if eb == 4:
                elems.append(from_s(ctx.emit("llvm.bitcast", [w], sty)))
            else:
                vec = ctx.emit("llvm.bitcast", [w], word_ty)
                elems += [from_s(ctx.emit("llvm.extractelement", [vec, ctx.c32(q)], sty)) for q in range(per_word)]
        out[r0:r0 + frag] = elems[:frag]
        if pair is not None:
            out[pair:pair + frag] = elems[frag:]
    for r0, src0 in plan.copies:
        out[r0:r0 + frag] = out[src0:src0 + frag]
    if any(v is None for v in out):
        raise LoweringError(f"internal: ldmatrix left registers of {dst_ty} unread")
    return [out]
