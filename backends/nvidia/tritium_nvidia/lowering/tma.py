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

from tritium.dialects import tt
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.shared import memdesc_layout
from tritium.lowering.utils import inline_asm, smem_elem
from tritium.passes.ttir.tma_descriptors import tma_box

RULES = Rules()


def _addr(ctx, ptr):
    """The i32 shared-space address of a ``!llvm.ptr<3>``."""
    return ctx.emit("llvm.ptrtoint", [ptr], ctx.i32())


def _tmap(ctx, desc):
    """The tensor map's generic address as an i64."""
    return ctx.emit("llvm.ptrtoint", [desc], ctx.int_ty(64))


def _leader(ctx, pred=None):
    """i1: this thread is thread 0 (and ``pred``)."""
    first = ctx.emit("arith.cmpi", [ctx.thread_id(), ctx.c32(0)], ctx.int_ty(1),
                     {"predicate": _pred_attr(0)})
    return first if pred is None else ctx.emit("arith.andi", [first, pred], ctx.int_ty(1))


def _pred_attr(v):
    from mlir import ir

    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


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


def _boxes(ctx, desc_ty, mem_ty):
    """``(rank, [(byte offset in the buffer, inner coordinate delta)], block bytes)`` of a TMA block copy."""
    block = tt.desc_block_type(desc_ty)
    shape, elem, _ = memdesc_layout(mem_ty)
    _, _, _, eb = smem_elem(ctx, elem)
    box = tma_box(block)
    rows, width = int(shape[0]), int(box[-1])
    n = int(shape[-1]) // width
    if len(shape) != 2:
        raise LoweringError(f"TMA copy of a {len(shape)}-D block at {tt.loc_str(ctx.op)}: only 2-D blocks")
    return [(k * rows * width * eb, k * width) for k in range(n)], rows * int(shape[-1]) * eb


def _coords(ctx, indices, delta):
    """``{x, y}`` operands: innermost first, the inner one shifted by ``delta``."""
    inner = indices[-1] if not delta else ctx.emit("arith.addi", [indices[-1], ctx.c32(delta)], ctx.i32())
    return [inner] + list(reversed(indices[:-1]))


@RULES.register("ttg.async_tma_copy_global_to_local")
def _tma_load(ctx, desc, indices, dst, barrier, pred):
    op = ctx.op
    groups = tt.operand_groups(op)
    boxes, nbytes = _boxes(ctx, groups["desc"][0].type, groups["dst"][0].type)
    leader = _leader(ctx, pred[0] if pred is not None else None)
    bar = _addr(ctx, barrier[0])
    inline_asm(ctx, f"@$0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {nbytes};", "b,r", [leader, bar], [],
               side_effects=True)
    tmap, base = _tmap(ctx, desc[0]), _addr(ctx, dst[0])
    idx = [i[0] for i in indices]
    r = len(idx)
    for off, delta in boxes:
        to = base if not off else ctx.emit("arith.addi", [base, ctx.c32(off)], ctx.i32())
        coords = _coords(ctx, idx, delta)
        cs = ", ".join(f"${4 + i}" for i in range(r))
        inline_asm(ctx, f"@$0 cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                        f"[$1], [$2, {{{cs}}}], [$3];", "b,r,l,r" + ",r" * r,
                   [leader, to, tmap, bar] + coords, [], side_effects=True)
    return []


@RULES.register("ttg.async_tma_copy_local_to_global")
def _tma_store(ctx, desc, indices, src):
    op = ctx.op
    groups = tt.operand_groups(op)
    boxes, _ = _boxes(ctx, groups["desc"][0].type, groups["src"][0].type)
    inline_asm(ctx, "fence.proxy.async.shared::cta;", "", [], [], side_effects=True)
    ctx.barrier()
    leader = _leader(ctx)
    tmap, base = _tmap(ctx, desc[0]), _addr(ctx, src[0])
    idx = [i[0] for i in indices]
    r = len(idx)
    for off, delta in boxes:
        frm = base if not off else ctx.emit("arith.addi", [base, ctx.c32(off)], ctx.i32())
        coords = _coords(ctx, idx, delta)
        cs = ", ".join(f"${3 + i}" for i in range(r))
        inline_asm(ctx, f"@$0 cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group [$1, {{{cs}}}], [$2];",
                   "b,l,r" + ",r" * r, [leader, tmap, frm] + coords, [], side_effects=True)
    inline_asm(ctx, "@$0 cp.async.bulk.commit_group;\n@$0 cp.async.bulk.wait_group.read 0;", "b", [leader], [],
               side_effects=True)
    return []


@RULES.register("ttg.memdesc_trans")
def _memdesc_trans(ctx, src):
    return [[src[0]]]
