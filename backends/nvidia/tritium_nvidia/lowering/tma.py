"""TMA copies and mbarriers (sm_90): ``ttg.init_barrier``, ``ttg.wait_barrier``,
``ttg.async_tma_copy_global_to_local``, ``ttg.async_tma_copy_local_to_global`` and ``ttg.memdesc_trans``.

A tensor map is a kernel parameter passed by value (``.param .align 64 .b8 p[128]``, ``__grid_constant__``): the
kernel function's argument is a generic pointer to it (``cvta.param``), which ``cp.async.bulk.tensor`` takes as
``[tmap, {x, y}]`` -- coordinates innermost first, in elements, out-of-shape ones filled (zero or NaN, as the map
was encoded) on loads and dropped on stores.

* ``init_barrier``: thread 0 ``mbarrier.init.shared::cta.b64 [bar], count`` then
  ``fence.mbarrier_init.release.cluster`` (the async proxy sees the initialised barrier);
* ``async_tma_copy_global_to_local``: thread 0 (and ``pred``) ``mbarrier.arrive.expect_tx`` of the block's bytes
  and one ``cp.async.bulk.tensor.2d...mbarrier::complete_tx::bytes`` per box: a row wider than the map's swizzle is
  several boxes ``[R, swizzle / bytes(T)]``, box k at inner coordinate ``x + k * w`` into slab k of the buffer
  (``k * R * w`` elements in), as ``#ttg.nvmma_shared`` lays slabs out;
* ``wait_barrier``: every thread spins on ``mbarrier.try_wait.parity.shared::cta.b64`` of the phase's parity;
* ``async_tma_copy_local_to_global``: every thread ``fence.proxy.async.shared::cta`` (its generic writes of the
  source become visible to the async proxy), ``bar.sync``, then thread 0 issues the bulk stores
  (``cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group``), commits and waits until they have read the
  source (``cp.async.bulk.wait_group.read 0``);
* ``memdesc_trans``: the same shared pointer (the result's layout addresses the bytes transposed).
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt, ttg
from tritium.dialects.enums import PaddingOption
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.shared_memory import memdesc_layout
from tritium.lowering.utils import cmpi, inline_asm, smem_elem
from tritium.passes.analysis.allocation import GLOBAL_SCRATCH_OFFSET, GLOBAL_SCRATCH_SIZE, TENSORMAP_BYTES
from tritium.passes.ttir.tma_descriptors import tma_box, tma_layout

from .wgmma import shared_address

RULES = Rules()


def _addr(ctx, ptr):
    """The i32 shared-space address of a ``!llvm.ptr<3>``."""
    return ctx.emit("llvm.ptrtoint", [ptr], ctx.i32())


def _tmap(ctx, desc):
    """The tensor map's generic address as an i64."""
    return ctx.emit("llvm.ptrtoint", [desc], ctx.int_ty(64))


def _leader(ctx, pred=None):
    """i1: this thread is thread 0 (and ``pred``)."""
    first = cmpi(ctx, "eq", ctx.thread_id(), ctx.c32(0))
    return first if pred is None else ctx.emit("arith.andi", [first, pred], ctx.int_ty(1))


@RULES.register("ttg.init_barrier")
def _init_barrier(ctx, barrier, count):
    inline_asm(ctx, f"@$0 mbarrier.init.shared::cta.b64 [$1], {int(count)};", "b,r",
               [_leader(ctx), _addr(ctx, barrier[0])], [], side_effects=True)
    inline_asm(ctx, "fence.mbarrier_init.release.cluster;", "", [], [], side_effects=True)
    return []


@RULES.register("ttg.wait_barrier")
def _wait_barrier(ctx, barrier, phase):
    inline_asm(ctx, "{\n.reg .pred P1;\nwait_barrier:\n"
                    "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n"
                    "@!P1 bra.uni wait_barrier;\n}", "r,r",
               [_addr(ctx, barrier[0]), phase[0]], [], side_effects=True)
    return []


def _boxes(ctx, buf, indices):
    """``([(i32 shared address, [coordinate values, innermost first])] per box, bytes of the block)`` of a TMA copy
    between the op's descriptor and ``buf`` (the buffer's lowered pointer): a row wider than the map's swizzle is
    several boxes, box k ``k * rows * width`` elements into the buffer (slab k) at inner coordinate ``+ k * width``."""
    groups = tt.operand_groups(ctx.op)
    shape, elem, _ = memdesc_layout((groups.get("dst") or groups["src"])[0].type)
    if len(shape) != 2:
        raise LoweringError(f"TMA copy of a {len(shape)}-D block at {tt.loc_str(ctx.op)}: only 2-D blocks")
    _, _, _, eb = smem_elem(ctx, elem)
    rows, cols = int(shape[0]), int(shape[1])
    width = int(tma_box(tt.desc_block_type(groups["desc"][0].type))[-1])
    base = _addr(ctx, buf)
    idx = [i[0] for i in indices]
    out = []
    for k in range(cols // width):
        at = base if not k else ctx.emit("arith.addi", [base, ctx.c32(k * rows * width * eb)], ctx.i32())
        inner = idx[-1] if not k else ctx.emit("arith.addi", [idx[-1], ctx.c32(k * width)], ctx.i32())
        out.append((at, [inner] + list(reversed(idx[:-1]))))
    return out, rows * cols * eb


def _coords_text(first: int, r: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(r)) + "}"


@RULES.register("ttg.async_tma_copy_global_to_local")
def _tma_load(ctx, desc, indices, dst, barrier, pred):
    boxes, nbytes = _boxes(ctx, dst[0], indices)
    leader = _leader(ctx, pred[0] if pred is not None else None)
    bar = _addr(ctx, barrier[0])
    inline_asm(ctx, f"@$0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {nbytes};", "b,r", [leader, bar], [],
               side_effects=True)
    tmap, r = _tmap(ctx, desc[0]), len(indices)
    for to, coords in boxes:
        inline_asm(ctx, f"@$0 cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                        f"[$1], [$2, {_coords_text(4, r)}], [$3];", "b,r,l,r" + ",r" * r,
                   [leader, to, tmap, bar] + coords, [], side_effects=True)
    return []


@RULES.register("ttg.async_tma_copy_local_to_global")
def _tma_store(ctx, desc, indices, src):
    boxes, _ = _boxes(ctx, src[0], indices)
    inline_asm(ctx, "fence.proxy.async.shared::cta;", "", [], [], side_effects=True)
    ctx.barrier()
    leader = _leader(ctx)
    tmap, r = _tmap(ctx, desc[0]), len(indices)
    for frm, coords in boxes:
        inline_asm(ctx, f"@$0 cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group [$1, "
                        f"{_coords_text(3, r)}], [$2];", "b,l,r" + ",r" * r, [leader, tmap, frm] + coords, [],
                   side_effects=True)
    inline_asm(ctx, "@$0 cp.async.bulk.commit_group;\n@$0 cp.async.bulk.wait_group.read 0;", "b", [leader], [],
               side_effects=True)
    return []


@RULES.register("ttg.memdesc_trans")
def _memdesc_trans(ctx, src):
    return [[src[0]]]


# tensormap.replace's elemtype encoding (PTX ISA; not the driver's CUtensorMapDataType numbering past f32)
_PTX_ELEMTYPE = {"i8": 0, "f8E4M3FN": 0, "f8E5M2": 0, "i16": 1, "i32": 3, "i64": 5, "f16": 6, "f32": 7, "f64": 9,
                 "bf16": 10}
_SWIZZLE_MODE = {0: 0, 32: 1, 64: 2, 128: 3}


@RULES.register("tt.make_tensor_descriptor")
def _make_tensormap(ctx, base, shape, strides, padding=None):
    """A tensor map made on the device (the op marked ``tt.tma``): warp 0 zeroes the op's 128 bytes of shared
    scratch, thread 0 fills every field with ``tensormap.replace`` (address, rank - 1, box, dims and byte strides
    innermost first, element strides 1, element type, no interleave, the swizzle, the fill), warp 0 copies it to the
    program's slot of global scratch with the release fence of the tensormap proxy and acquires it there
    (``fence.proxy.tensormap::generic.acquire``); a CTA barrier, and the map's generic address is the value."""
    op = ctx.op
    if ctx.global_scratch is None or GLOBAL_SCRATCH_OFFSET not in op.attributes:
        raise LoweringError(f"tensor map at {tt.loc_str(op)}: no global scratch slot (the allocation pass and a "
                            f"kernel function are needed)")
    block = tt.desc_block_type(op.results[0].type)
    elem = str(tt.elem_of(block))
    _, _, _, eb = smem_elem(ctx, tt.elem_of(block))
    box = list(reversed(tma_box(block)))
    r = len(box)
    i32, i64 = ctx.i32(), ctx.int_ty(64)
    tid = ctx.thread_id()
    warp0 = cmpi(ctx, "ult", tid, ctx.c32(32))
    first = _leader(ctx)
    scratch = ctx.scratch(op, TENSORMAP_BYTES)
    smem32 = shared_address(ctx, scratch.base)
    lane4 = ctx.emit("arith.shli", [ctx.emit("arith.andi", [tid, ctx.c32(31)], i32), ctx.c32(2)], i32)
    inline_asm(ctx, "@$0 st.shared.b32 [$1], 0;", "b,r",
               [warp0, ctx.emit("arith.addi", [smem32, lane4], i32)], [], side_effects=True)
    inline_asm(ctx, "bar.warp.sync -1;", "", [], [], side_effects=True)
    smem = ctx.emit("arith.extui", [smem32], i64)

    def replace(field, value, width=32, ordinal=None):
        where = "" if ordinal is None else f", {ordinal}"
        if isinstance(value, int):
            inline_asm(ctx, f"@$0 tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [$1]{where}, {value};",
                       "b,l", [first, smem], [], side_effects=True)
        else:
            inline_asm(ctx, f"@$0 tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [$1]{where}, $2;",
                       "b,l," + ("l" if width == 64 else "r"), [first, smem, value], [], side_effects=True)

    replace("global_address", ctx.emit("llvm.ptrtoint", [base[0]], i64), 64)
    replace("rank", r - 1)
    for i, b in enumerate(box):
        replace("box_dim", b, ordinal=i)
    for i, s in enumerate(reversed([x[0] for x in shape])):
        replace("global_dim", s, ordinal=i)
    outer = list(reversed([x[0] for x in strides]))[1:]  # dims 1.. innermost first, in bytes
    for i, s in enumerate(outer):
        replace("global_stride", ctx.emit("arith.muli", [s, ctx.const(i64, eb)], i64), 64, ordinal=i)
    for i in range(r):
        replace("element_stride", 1, ordinal=i)
    if elem not in _PTX_ELEMTYPE:
        raise LoweringError(f"tensor map of {elem} elements at {tt.loc_str(op)}")
    replace("elemtype", _PTX_ELEMTYPE[elem])
    replace("interleave_layout", 0)
    replace("swizzle_mode", _SWIZZLE_MODE[tma_layout(block).swizzle_bytes])
    replace("fill_mode", 1 if padding == PaddingOption.PAD_NAN else 0)
    # this program's slot: scratch + (linear program id * per-program bytes + offset), the id x + nx * (y + ny * z)
    t = ctx.target
    pid = ctx.emit("arith.addi", [t.program_id(ctx, 1), ctx.emit("arith.muli", [t.num_programs(ctx, 1),
                                                                                 t.program_id(ctx, 2)], i32)], i32)
    pid = ctx.emit("arith.addi", [t.program_id(ctx, 0), ctx.emit("arith.muli", [t.num_programs(ctx, 0), pid], i32)],
                   i32)
    per = ttg.module_int(ctx.module, GLOBAL_SCRATCH_SIZE, 0)
    off = ctx.emit("arith.addi", [ctx.emit("arith.muli", [ctx.emit("arith.extui", [pid], i64), ctx.const(i64, per)],
                                           i64), ctx.const(i64, int(op.attributes[GLOBAL_SCRATCH_OFFSET].value))], i64)
    gaddr = ctx.emit("arith.addi", [ctx.emit("llvm.ptrtoint", [ctx.global_scratch], i64), off], i64)
    inline_asm(ctx, "@$0 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
                    "[$1], [$2], 128;\n@$0 fence.proxy.tensormap::generic.acquire.gpu [$1], 128;", "b,l,l",
               [warp0, gaddr, smem], [], side_effects=True)
    ctx.release(scratch)
    ctx.barrier()
    generic = inline_asm(ctx, "cvta.global.u64 $0, $1;", "=l,l", [gaddr], [i64])[0]
    return [[ctx.emit("llvm.inttoptr", [generic], ir.Type.parse("!llvm.ptr"))]]
