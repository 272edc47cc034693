"""Move splats and broadcasts after elementwise ops (Triton's ``reorder-broadcast`` pass).

* ``elementwise(splat(a), splat(b), dense<c>) -> splat(elementwise(a, b, c))``: the computation runs on
  scalars, once;
* ``elementwise(broadcast(a), broadcast(b) | splat(x) | dense<c>) -> broadcast(elementwise(a, b', ...))`` when
  every broadcast operand has the same source shape (splats and constants are rebuilt at that shape), so the
  computation runs on the smaller tensor;
* ``expand_dims(splat(x)) -> splat(x)`` and the broadcast folds of :mod:`.combine`, so the rules above see
  through chains.

Elementwise ops: arith / math ops (not ``arith.constant``) and the tt elementwise ops (``addptr``,
``fp_to_fp``, ``bitcast``, ``clampf``, ``precise_*``, ``mulhiui``, ``int_to_ptr``, ``ptr_to_int``, pure
``extern_elementwise``).  Every operand and result must be a ranked tensor of one shape.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u
from .combine import apply_patterns, broadcast_fold, shape_op_of_splat
from .dce import dce


def _tensor_operands_and_results(op) -> bool:
    vals = list(op.operands) + list(op.results)
    if not vals or not all(tt.is_tensor(v.type) for v in vals):
        return False
    shapes = {tt.shape_of(v.type) for v in vals}
    return len(shapes) == 1


def _clone_with(op, operands, result_types):
    """A copy of ``op`` (same name and attributes) on ``operands`` with ``result_types``, before ``op``."""
    attrs = u.copy_attributes(op)
    return u.create_op(op.name, operands, result_types, attrs, loc=op.location, before=op)


def _is_splat_like(v) -> bool:
    d = u.defining_op(v)
    if d is None:
        return False
    if d.name == "tt.splat":
        return True
    return d.name == "arith.constant" and u.constant_scalar(v) is not None


def move_splat_after_elementwise(op) -> bool:
    if not u.is_elementwise(op) or not _tensor_operands_and_results(op):
        return False
    if not op.operands or not all(_is_splat_like(v) for v in op.operands):
        return False
    if not any(u.op_is(v, "tt.splat") is not None for v in op.operands):
        return False  # constants only: left to upstream constant folding
    scalars = []
    for v in op.operands:
        d = u.defining_op(v)
        if d.name == "tt.splat":
            scalars.append(d.operands[0])
        else:
            elem = tt.elem_of(v.type)
            scalars.append(u.constant(u.constant_scalar(v), elem, loc=d.location, before=op))
    new = _clone_with(op, scalars, [tt.elem_of(r.type) for r in op.results])
    outs = [u.create_op("tt.splat", [s], [r.type], loc=op.location, before=op).results[0]
            for s, r in zip(new.results, op.results)]
    u.replace_op(op, outs)
    return True


def move_broadcast_after_elementwise(op) -> bool:
    if not u.is_elementwise(op) or not _tensor_operands_and_results(op):
        return False
    src_type = None
    for v in op.operands:
        b = u.op_is(v, "tt.broadcast")
        if b is not None:
            st = b.operands[0].type
            if src_type is None:
                src_type = st
            elif tt.shape_of(st) != tt.shape_of(src_type):
                return False
        elif not _is_splat_like(v):
            return False
    if src_type is None:
        return False
    src_shape = tt.shape_of(src_type)
    new_operands = []
    for v in op.operands:
        d = u.defining_op(v)
        if d.name == "tt.broadcast":
            new_operands.append(d.operands[0])
            continue
        ty = ir.RankedTensorType.get(list(src_shape), tt.elem_of(v.type), loc=op.location)
        if d.name == "tt.splat":
            new_operands.append(u.create_op("tt.splat", [d.operands[0]], [ty], loc=d.location,
                                            before=op).results[0])
        else:
            new_operands.append(u.constant(u.constant_scalar(v), ty, loc=d.location, before=op))
    new = _clone_with(op, new_operands,
                      [ir.RankedTensorType.get(list(src_shape), tt.elem_of(r.type), loc=op.location)
                       for r in op.results])
    outs = [u.create_op("tt.broadcast", [s], [r.type], loc=op.location, before=op).results[0]
            for s, r in zip(new.results, op.results)]
    u.replace_op(op, outs)
    return True


def _elementwise(op) -> bool:
    return move_splat_after_elementwise(op) or move_broadcast_after_elementwise(op)


class _AnyName(dict):
    """Pattern table: the shape folds by name, the elementwise rules for every other op."""

    _fixed = {
        "tt.expand_dims": (shape_op_of_splat,),
        "tt.broadcast": (broadcast_fold,),
    }

    def get(self, name, default=None):
        return self._fixed.get(name, (_elementwise,))


@u.in_context
def reorder_broadcast(root) -> int:
    """Run the rules under ``root``; returns the number of rewrites."""
    n = apply_patterns(root, _AnyName())
    if n:
        dce(root)
    return n


reorder_broadcast_pass = pass_entry("tritium-reorder-broadcast", reorder_broadcast)
