"""Dot operands through shared memory (Triton's operand path: ``convert_layout`` to a ``#ttg.dot_op`` of an MMA
layout becomes a ``ttg.local_alloc`` into swizzled shared memory and a ``ttg.local_load``).

``%d = ttg.convert_layout %x : #blocked -> #ttg.dot_op<i, #nvidia_mma, k>`` becomes::

    %s = ttg.local_alloc %x : (tensor<..., #blocked>) -> !ttg.memdesc<shape, T, #ttg.nvmma_shared<sw, tr, bits>>
    %d = ttg.local_load %s : (!ttg.memdesc<...>) -> tensor<..., #ttg.dot_op<...>>

so the lowering stores the tile with the widest vector stores its blocked layout allows and reads the MMA
fragments with ``ldmatrix`` (the software pipeliner later turns the ``local_alloc`` of a loaded tile into
asynchronous copies).  The buffer's layout (:func:`operand_shared_layout`): the contiguous dim is the one the
source layout keeps contiguous per thread (``order[0]``; the second-to-last dim gives ``transposed = 1``), the
swizzle the widest of 128 / 64 / 32 bytes that a row of that dim fills (0 below 32 bytes).
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.analysis.allocation import elem_bytes

from .coalesce import CONVERT, as_op, layout_of, walk


def operand_shared_layout(shape, src_layout, eb: int) -> layouts.NVMMASharedLayout:
    rank = len(shape)
    order = getattr(src_layout, "order", None) or tuple(range(rank - 1, -1, -1))
    fast = order[0] if order[0] in (rank - 1, rank - 2) else rank - 1
    row = shape[fast] * eb
    swizzle = next((s for s in (128, 64, 32) if row >= s), 0)
    return layouts.NVMMASharedLayout(swizzle, int(fast == rank - 2), eb * 8)


def _is_mma_operand(layout) -> bool:
    return isinstance(layout, layouts.DotOperandLayout) and isinstance(layout.parent, layouts.NvidiaMmaLayout)


def dot_operands_through_shared(root) -> int:
    """Rewrite every conversion to an MMA dot operand under ``root``; returns how many."""
    n = 0
    for op in walk(as_op(root)):
        if op.name != CONVERT or not _is_mma_operand(layout_of(op.results[0])):
            continue
        src = op.operands[0]
        if isinstance(layout_of(src), layouts.DotOperandLayout):
            continue
        ty = ir.RankedTensorType(src.type)
        shape = tuple(ty.shape)
        lay = operand_shared_layout(shape, layout_of(src), elem_bytes(ty))
        mem_ty = ttg.memdesc_type(shape, ty.element_type, lay, ty.context)
        with op.location, ir.InsertionPoint(op):
            alloc = ir.Operation.create(ttg.LOCAL_ALLOC, results=[mem_ty], operands=[src])
            load = ir.Operation.create(ttg.LOCAL_LOAD, results=[op.results[0].type], operands=[alloc.results[0]])
        op.results[0].replace_all_uses_with(load.results[0])
        op.erase()
        n += 1
    return n


def optimize_dot_operands_pass(op, pass_=None) -> None:
    with as_op(op).context:
        dot_operands_through_shared(op)


optimize_dot_operands_pass.__name__ = "tritium-optimize-dot-operands"
