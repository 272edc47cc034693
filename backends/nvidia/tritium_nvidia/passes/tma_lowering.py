"""Descriptor loads and stores through TMA tensor maps (sm_90+; Triton's TMA lowering of ``tt.descriptor_load`` /
``tt.descriptor_store``).

The descriptors are the kernel parameters :mod:`tritium.passes.ttir.tma_descriptors` kept as tensor maps.  A load
``%t = tt.descriptor_load %desc[%i, %j]`` becomes a TMA copy into a buffer in the map's shared layout
(:func:`~tritium.passes.ttir.tma_descriptors.tma_layout`), completed on an mbarrier::

    %buf = ttg.local_alloc : !ttg.memdesc<R x C, T, #ttg.nvmma_shared<sw, 0, bits>>
    %bar = ttg.local_alloc : !ttg.memdesc<1 x i64, #ttg.shared<1, 1, 1, [0]>>
    ttg.init_barrier %bar {count = 1}
    ttg.async_tma_copy_global_to_local %desc[%i, %j] %buf, %bar     (one thread: expect_tx + cp.async.bulk.tensor)
    ttg.wait_barrier %bar, %c0                                        (every thread: phase 0 done)

and the value is read from ``%buf`` as its consumer wants it (:func:`tma_consumer`): a ``ttg.local_alloc`` of the
loaded tile for a dot (the operand path of optimize_dot_operands) takes ``%buf`` itself; one of its transpose
(``tl.dot(a, b.T)``, the tutorial's ``b_desc.load(..).T``) takes ``ttg.memdesc_trans %buf`` -- the same bytes
viewed ``[C, R]`` with the other dim contiguous; any other use gets ``ttg.local_load %buf``.  Loads in loops that
feed dots are pipelined instead (:mod:`.pipeline_loops`: ``num_stages`` buffers and barriers, the copies issued
ahead); this pass, which runs after the pipeliner, lowers the rest.

A store ``tt.descriptor_store %desc[%i, %j], %v`` becomes ``ttg.local_alloc %v`` into the map's layout (of the
conversion's source when ``%v`` is a ``ttg.convert_layout``: an accumulator goes from its registers straight into the
buffer) and
``ttg.async_tma_copy_local_to_global %desc[%i, %j] %buf`` (the lowering fences the generic-proxy writes, syncs the
CTA, and one thread issues the bulk store and waits until the buffer has been read).
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.ttir.tma_descriptors import is_tma_desc, tma_layout

from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import as_op, walk

BARRIER_LAYOUT = layouts.SharedLayout(1, 1, 1, (0,))


def _single_use(value):
    uses = list(value.uses)
    return as_op(uses[0].owner) if len(uses) == 1 else None


def _users(value) -> list:
    return [(as_op(u.owner), u.operand_number) for u in value.uses]


def wgmma_reads(alloc_value, mem_ty) -> bool:
    """Every user of the buffer is a warp_group_dot that can read it laid out as ``mem_ty``: 16-bit operands in
    either orientation, other types K-major (A ``transposed`` 0, B ``transposed`` 1)."""
    users = _users(alloc_value)
    if not users:
        return False
    shape, elem, lay = ttg.memdesc_layout(mem_ty)
    bits = lay.element_bits if isinstance(lay, layouts.NVMMASharedLayout) else 0
    for op, i in users:
        if op.name != ttg.WARP_GROUP_DOT or i > 1:
            return False
        if bits != 16 and lay.transposed != i:
            return False
    return True


def buffer_type(block_ty, leading=()):
    """The memdesc a TMA copy of ``block_ty`` writes (a stack of ``leading`` of them): the 2-D tile, a ``[1, R, C]``
    block's leading 1 dims dropped (the copy takes one coordinate per dim of the block all the same)."""
    return ttg.memdesc_type(tuple(leading) + tt.squeezed_shape(tt.shape_of(block_ty)), tt.elem_of(block_ty),
                            tma_layout(block_ty), block_ty.context)


def barrier_type(n: int, context=None):
    """``n`` mbarriers (a stack of ``[n, 1]`` i64)."""
    return ttg.memdesc_type((n, 1), ir.IntegerType.get_signless(64, context), BARRIER_LAYOUT, context)


def transposed_type(mem_ty):
    """The ``[C, R]`` view of an ``[R, C]`` row-major nvmma buffer (the same bytes, the other dim contiguous)."""
    shape, elem, lay = ttg.memdesc_layout(mem_ty)
    lay_t = layouts.NVMMASharedLayout(lay.swizzle_bytes, 1 - lay.transposed, lay.element_bits)
    return ttg.memdesc_type((shape[1], shape[0]), elem, lay_t, mem_ty.context)


def register_reads(alloc_value) -> bool:
    """Every user of the buffer is a ``ttg.local_load`` (an ``mma.sync`` operand read into registers, with ldmatrix
    or plain loads: :mod:`..lowering.shared_memory` reads any shared layout), so it may be any layout."""
    users = _users(alloc_value)
    return bool(users) and all(op.name == ttg.LOCAL_LOAD for op, _ in users)


def tma_consumer(load):
    """How a TMA-capable descriptor load's value is consumed: ``("alloc", alloc, None)`` when its one use is a
    ``ttg.local_alloc`` that can take the TMA buffer itself, ``("trans", alloc, trans)`` for a ``tt.trans`` whose
    one use is such an alloc of the transposed view, else ``("load", None, None)``.  An alloc can take the buffer
    (or its view) when it has the same type, when only wgmma reads it (:func:`wgmma_reads`), or when only
    ``local_load`` reads it (:func:`register_reads`: ``tl.dot(x, w.T)`` on ``mma.sync``, Liger-Kernel's BLOCK_M = 32
    SwiGLU, whose weight tile otherwise went from the TMA buffer to registers, through a transpose, and back)."""
    block_ty = tt.desc_block_type(load.operands[0].type)
    mem_ty = buffer_type(block_ty)
    user = _single_use(load.results[0])
    if user is not None and user.name == ttg.LOCAL_ALLOC:
        if str(user.results[0].type) == str(mem_ty) or wgmma_reads(user.results[0], mem_ty):
            return "alloc", user, None
    if user is not None and user.name == tt.TRANS:
        alloc = _single_use(user.results[0])
        view = transposed_type(mem_ty)
        if alloc is not None and alloc.name == ttg.LOCAL_ALLOC and alloc.operation.block == user.operation.block \
                and (str(alloc.results[0].type) == str(view) or wgmma_reads(alloc.results[0], view)
                     or register_reads(alloc.results[0])):
            return "trans", alloc, user
    return "load", None, None


def is_tma_load(op) -> bool:
    return op.name == tt.DESCRIPTOR_LOAD and is_tma_desc(op.operands[0])


def create(name, operands, results=(), attrs=None):
    return tt.create_op(name, operands=operands, results=results, attributes=attrs or {})


def copy_in(desc, indices, buf, bar, pred=None):
    """``ttg.async_tma_copy_global_to_local`` at the insertion point."""
    seg = ir.DenseI32ArrayAttr.get([1, len(indices), 1, 1, 0 if pred is None else 1])
    operands = [desc, *indices, buf, bar] + ([] if pred is None else [pred])
    return create(ttg.ASYNC_TMA_COPY_GLOBAL_TO_LOCAL, operands, attrs={"operandSegmentSizes": seg})


def init_barrier(bar, count: int = 1):
    return create(ttg.INIT_BARRIER, [bar], attrs={"count": ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                                                  count)})


def wait_barrier(bar, phase):
    return create(ttg.WAIT_BARRIER, [bar, phase])


def subview(stack, index):
    shape, elem, lay = ttg.memdesc_layout(stack.type)
    ty = ttg.memdesc_type(shape[1:], elem, lay, stack.type.context)
    return create(ttg.MEMDESC_SUBVIEW, [stack, index], [ty]).results[0]


def use_tile(kind, alloc, trans, tile):
    """Replace the consumer of a pipelined / lowered load by ``tile`` (the TMA buffer) and erase what it leaves
    dead: ``alloc`` (and ``trans``) per :func:`tma_consumer`."""
    with ir.InsertionPoint(alloc), alloc.location:
        value = tile if kind == "alloc" else create(ttg.MEMDESC_TRANS, [tile], [transposed_type(tile.type)]).results[0]
    alloc.results[0].replace_all_uses_with(value)
    alloc.erase()
    if trans is not None:
        trans.erase()


def _c32(v):
    i32 = ir.IntegerType.get_signless(32)
    return ir.Operation.create("arith.constant", results=[i32], attributes={"value": ir.IntegerAttr.get(i32, v)}
                               ).results[0]


def _lower_load(op) -> None:
    desc, indices = op.operands[0], list(op.operands[1:])
    block_ty = tt.desc_block_type(desc.type)
    kind, alloc, trans = tma_consumer(op)
    with ir.InsertionPoint(op), op.location:
        buf = create(ttg.LOCAL_ALLOC, [], [buffer_type(block_ty)]).results[0]
        bar_stack = create(ttg.LOCAL_ALLOC, [], [barrier_type(1, op.context)]).results[0]
        bar = subview(bar_stack, _c32(0))
        init_barrier(bar)
        copy_in(desc, indices, buf, bar)
        wait_barrier(bar, _c32(0))
        if kind == "load":
            value = create(ttg.LOCAL_LOAD, [buf], [op.results[0].type]).results[0]
            op.results[0].replace_all_uses_with(value)
    if kind != "load":
        use_tile(kind, alloc, trans, buf)
    op.erase()


def _lower_store(op) -> None:
    desc, src, indices = op.operands[0], op.operands[1], list(op.operands[2:])
    block_ty = tt.desc_block_type(desc.type)
    d = src.owner if not isinstance(src.owner, ir.Block) else None
    if d is not None and as_op(d).name == ttg.CONVERT_LAYOUT:
        src = as_op(d).operands[0]  # the buffer takes the tile in any layout: no exchange on the way (Triton's too)
    with ir.InsertionPoint(op), op.location:
        buf = create(ttg.LOCAL_ALLOC, [src], [buffer_type(block_ty)]).results[0]
        create(ttg.ASYNC_TMA_COPY_LOCAL_TO_GLOBAL, [desc, *indices, buf],
               attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, len(indices), 1])})
    op.erase()


def lower_tma(root) -> int:
    """Lower every descriptor load / store through a TMA tensor map under ``root``; returns how many."""
    ops = [op for op in walk(as_op(root)) if op.name in (tt.DESCRIPTOR_LOAD, tt.DESCRIPTOR_STORE)
           and is_tma_desc(op.operands[0])]
    for op in ops:
        (_lower_load if op.name == tt.DESCRIPTOR_LOAD else _lower_store)(op)
    return len(ops)


tma_lowering_pass = pass_entry("tritium-tma-lowering", lower_tma)
