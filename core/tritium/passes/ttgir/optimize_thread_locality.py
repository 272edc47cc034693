"""Optimize thread locality: a reduction in a loop whose result is folded into a loop-carried accumulator keeps
only its thread-local part in the loop (Triton's ``OptimizeThreadLocality``, its reduction rewrite).

The case (``tl.sum`` / ``tl.max`` / ``tl.min`` of a loaded tile, accumulated across iterations)::

    %acc = scf.for ... iter_args(%a = %cst) {             %acc = scf.for ... iter_args(%a = %neutral) {
      %x = tt.load ...   : [M, N], #blocked                  %x = tt.load ...     : [M, N], #blocked
      %r = tt.reduce(%x) {axis = 1} : [M]          ==>       %v = tt.reshape %x   : [M, N/S, S], #blocked3
      %u = OP %a, %r     : [M]                               %p = tt.reduce(%v) {axis = 2} : [M, N/S]
      scf.yield %u                                           %u = OP %a, %p       : [M, N/S]
    }                                                        scf.yield %u
                                                           }
                                                           %q = tt.reduce(%acc) {axis = 1} : [M]
                                                           %f = OP %cst, convert_layout(%q)

Every iteration each thread combines the ``S`` elements it holds along the reduced axis (``sizePerThread``) and
folds them, elementwise, into a wider accumulator it keeps in registers; the reduction across lanes and warps
(shuffles, a barrier and shared memory) runs once, after the loop, and the loop's original init value is
combined in last.  ``#blocked3`` is the load's layout with the reduced axis split in two: ``[.., tpw, 1]`` lanes,
``[.., wpc, 1]`` warps and ``[.., 1, S]`` elements per thread, the new dimension fastest, so the row-major
``tt.reshape`` only renames registers.  When a thread holds more tile repetitions ``R`` along the axis than
elements per repetition (``R > S``: unvectorised loads of a wide tile), the split is ``[.., R, N/R]`` and the
in-loop reduction runs over the ``R`` repetitions instead (all in registers too).  The new accumulator starts at
the combine op's neutral element (``-0.0`` for ``addf``, ``1`` for products, ``-inf`` / ``+inf`` (Triton's
choice for ``maxnumf`` / ``minnumf`` too), the integer extremes, all ones for ``andi``).

When it applies (Triton's conditions, checked per ``tt.reduce``; a DEBUG record of this module's logger says
which one failed, see ``TRITIUM_LOG``):

* one operand, and a combine function of exactly one op on its two arguments: ``arith.addf`` / ``mulf`` /
  ``maximumf`` / ``minimumf`` / ``maxnumf`` / ``minnumf``, and (beyond Triton, which takes floats only) the
  integer ``addi`` / ``muli`` / ``maxsi`` / ``minsi`` / ``maxui`` / ``minui`` / ``andi`` / ``ori`` / ``xori``;
* the operand is a ``tt.load`` result of rank > 1 in a blocked layout, reduced along its last axis, and a thread
  holds more than one element along it;
* the reduction's only user is the same op (the update; Triton only asks for a two-operand op) whose other
  operand is an iter_arg of the ``scf.for`` whose body holds the reduction, and whose only user is that loop's
  ``scf.yield`` at the iter_arg's position;
* the iter_arg has no other use in the loop (it would see the partial state), and its init value is an
  ``arith.constant`` (any value: it is combined after the loop).

Anything else, ``scf.while`` loops and reductions of several tensors included, is left alone.  It runs after the
first layout cleanup (it needs the coalesced layouts of the loads), before ``accelerate_matmul``, as in Triton's
cuda and AMD pipelines.  Not done: Triton's same-named pass also re-lays out ``tt.reshape`` (``allow_reorder``)
and ``tt.gather`` ops for their consumers; tritium's reshapes keep row-major order.
"""
from __future__ import annotations

import logging
from typing import Optional

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.layouts import BlockedLayout, SliceLayout
from tritium.dialects.layouts import reshape_index
from tritium.dialects.layouts import reg_lookup
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import create_op, defining_op, reduce_combine_op as combine_op, walk

from tritium.passes.ir_helpers import as_op, create_convert, layout_of
from .loop_slices import next_op

log = logging.getLogger(__name__)

LOOP = "scf.for"
YIELD = "scf.yield"

_FLOAT_OPS = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf")
_INT_OPS = ("arith.addi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
            "arith.andi", "arith.ori", "arith.xori")


# ----------------------------------------------------------------------------------------------
# neutral elements
# ----------------------------------------------------------------------------------------------

def neutral_attr(name: str, elem) -> Optional[ir.Attribute]:
    """The neutral element of the combine op ``name`` on scalars of type ``elem`` (None when there is none we
    build): ``x OP neutral == x``."""
    if isinstance(elem, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)):
        value = {"arith.addf": -0.0, "arith.mulf": 1.0, "arith.maximumf": float("-inf"),
                 "arith.minimumf": float("inf"), "arith.maxnumf": float("-inf"),
                 "arith.minnumf": float("inf")}.get(name)
        return None if value is None else ir.FloatAttr.get(elem, value, loc=ir.Location.unknown(elem.context))
    if isinstance(elem, ir.IntegerType) and elem.width in (8, 16, 32, 64):
        w = elem.width
        value = {"arith.addi": 0, "arith.muli": 1, "arith.maxsi": -(1 << (w - 1)), "arith.minsi": (1 << (w - 1)) - 1,
                 "arith.maxui": 0, "arith.minui": -1, "arith.andi": -1, "arith.ori": 0, "arith.xori": 0}.get(name)
        return None if value is None else ir.IntegerAttr.get(elem, value)
    return None


# ----------------------------------------------------------------------------------------------
# matching
# ----------------------------------------------------------------------------------------------

class _Plan:
    """One reduction to rewrite: the ops involved and the view it reduces in the loop."""

    def __init__(self, reduce_op, update, loop, pos, acc_side, view_ty, view_lay, red_axis, neutral):
        self.reduce, self.update, self.loop, self.pos = reduce_op, update, loop, pos
        self.acc_side = acc_side  # the update's operand number of the iter_arg
        self.view_ty, self.view_lay, self.red_axis, self.neutral = view_ty, view_lay, red_axis, neutral


def _skip(op, why: str):
    if log.isEnabledFor(logging.DEBUG):
        log.debug("reduction at %s stays as it is: %s", tt.loc_str(op), why)
    return None


def thread_local_view(shape, lay: BlockedLayout, axis: int):
    """``(view shape, view layout, in-loop reduction axis)`` splitting ``axis`` (the last one) of a tensor of
    ``shape`` in layout ``lay`` into a part every thread holds whole and a part spread over lanes and warps, or
    None when a thread holds a single element along ``axis``.  See the module docstring."""
    rank = len(shape)
    n = shape[axis]
    s = min(lay.size_per_thread[axis], n)
    tile = lay.size_per_thread[axis] * lay.threads_per_warp[axis] * lay.warps_per_cta[axis]
    r = max(n // tile, 1)
    if s * r <= 1:
        return None
    lead = list(shape[:axis])
    spt, tpw, wpc = (list(x[:axis]) for x in (lay.size_per_thread, lay.threads_per_warp, lay.warps_per_cta))
    if s >= r:  # [.., N/S, S]: the S elements of a repetition, the new (fastest) dimension
        view = lead + [n // s, s]
        spt += [1, s]
        tpw += [lay.threads_per_warp[axis], 1]
        wpc += [lay.warps_per_cta[axis], 1]
        order = [rank] + list(lay.order)
        red = rank
    else:  # [.., R, N/R]: the R repetitions, all in registers
        view = lead + [r, n // r]
        spt += [1, s]
        tpw += [1, lay.threads_per_warp[axis]]
        wpc += [1, lay.warps_per_cta[axis]]
        order = []
        for d in lay.order:
            order += [rank, rank - 1] if d == axis else [d]
        red = rank - 1
    return view, BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order)), red


def _match(op) -> Optional[_Plan]:
    if len(op.operands) != 1 or len(op.results) != 1:
        return _skip(op, "it reduces several tensors")
    comb = combine_op(op)
    if comb is None:
        return _skip(op, "its combine function is not a single op of its two arguments")
    if comb.name not in _FLOAT_OPS + _INT_OPS:
        return _skip(op, f"its combine op {comb.name} is not one the rewrite knows")
    src = op.operands[0]
    if not isinstance(src.type, ir.RankedTensorType):
        return _skip(op, "its operand is not a tensor")
    shape = tuple(tt.shape_of(src.type))
    rank = len(shape)
    axis = int(ir.IntegerAttr(op.attributes["axis"]).value)
    lay = layout_of(src)
    if rank < 2 or not isinstance(lay, BlockedLayout):
        return _skip(op, "its operand is not a blocked tensor of rank > 1")
    if axis != rank - 1:
        return _skip(op, "it does not reduce the last axis")
    d = defining_op(src)
    if d is None or d.name != tt.LOAD:
        return _skip(op, "its operand is not a tt.load")
    elem = ir.RankedTensorType(src.type).element_type
    neutral = neutral_attr(comb.name, elem)
    if neutral is None:
        return _skip(op, f"no neutral element of {comb.name} on {elem}")
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return _skip(op, "its result has several uses")
    update = as_op(uses[0].owner)
    if update.name != comb.name or len(update.operands) != 2 or len(update.results) != 1:
        return _skip(op, f"its user {update.name} is not its combine op {comb.name}")
    if update.operands[0] == update.operands[1]:
        return _skip(op, "its user combines it with itself")
    red_side = uses[0].operand_number
    acc_side = 1 - red_side
    upd_uses = list(update.results[0].uses)
    if len(upd_uses) != 1 or as_op(upd_uses[0].owner).name != YIELD:
        return _skip(op, "the update's only use is not an scf.yield")
    yield_op = as_op(upd_uses[0].owner)
    loop = as_op(yield_op.parent)
    if loop.name != LOOP:
        return _skip(op, "it is not in an scf.for body")
    body = loop.regions[0].blocks[0]
    if op.operation.block != body or update.operation.block != body:
        return _skip(op, "it is nested deeper than the loop body")
    pos = upd_uses[0].operand_number
    arg = body.arguments[1 + pos]
    if update.operands[acc_side] != arg:
        return _skip(op, "the update does not read the iter_arg it yields")
    if len(list(arg.uses)) != 1:
        return _skip(op, "the accumulator is used elsewhere in the loop")
    init = loop.operands[3 + pos]
    init_op = defining_op(init)
    if init_op is None or init_op.name != "arith.constant":
        return _skip(op, "the accumulator's init value is not an arith.constant")
    split = thread_local_view(shape, lay, axis)
    if split is None:
        return _skip(op, "a thread holds one element along the reduced axis")
    view_shape, view_lay, red = split
    view_ty = ir.RankedTensorType.get(list(view_shape), elem, view_lay.to_attr())
    # the view must only rename registers and the in-loop reduction must stay in the thread
    try:
        src_ll, view_ll = lay.linear(shape), view_lay.linear(tuple(view_shape))
    except ValueError:
        return _skip(op, "its shape is not made of powers of two")
    if reg_lookup(src_ll, view_ll, lambda ix: reshape_index(ix, view_shape, shape)) is None or \
            any(b[red] for b in view_ll.lane + view_ll.warp):
        return _skip(op, f"the view {list(view_shape)} in {view_lay.to_str()} is not thread-local")
    return _Plan(op, update, loop, pos, acc_side, view_ty, view_lay, red, neutral)


# ----------------------------------------------------------------------------------------------
# rewriting
# ----------------------------------------------------------------------------------------------

def _rewrite(p: _Plan) -> None:
    op, update, loop, pos = p.reduce, p.update, p.loop, p.pos
    body = loop.regions[0].blocks[0]
    arg, res = body.arguments[1 + pos], loop.results[pos]
    init = loop.operands[3 + pos]
    old_ty = res.type
    rank = len(tt.shape_of(op.operands[0].type))
    acc_lay = SliceLayout(p.red_axis, p.view_lay)
    acc_shape = [x for i, x in enumerate(tt.shape_of(p.view_ty)) if i != p.red_axis]
    elem = p.view_ty.element_type
    acc_ty = ir.RankedTensorType.get(acc_shape, elem, acc_lay.to_attr())
    # in the loop: the view, the thread-local reduction, the elementwise update
    view = create_op(tt.RESHAPE, [op.operands[0]], [p.view_ty], {"efficient_layout": ir.BoolAttr.get(True)},
                     loc=op.location, before=op).results[0]
    with ir.InsertionPoint(op):
        local = op.clone()
    local.operands[0] = view
    local.attributes["axis"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), p.red_axis)
    local.results[0].set_type(acc_ty)
    update.operands[1 - p.acc_side] = local.results[0]
    update.results[0].set_type(acc_ty)
    # the accumulator: carried in the view's slice layout from the neutral element
    res_uses = list(res.uses)
    neutral = create_op("arith.constant", [], [acc_ty], {"value": ir.DenseElementsAttr.get_splat(acc_ty, p.neutral)},
                        loc=defining_op(init).location, before=loop).results[0]
    loop.operands[3 + pos] = neutral
    arg.set_type(acc_ty)
    res.set_type(acc_ty)
    # after the loop: the cross-thread reduction, back to the old layout, then the init value combined in
    post_ty = ir.RankedTensorType.get(list(tt.shape_of(old_ty)), elem, SliceLayout(rank - 1, acc_lay).to_attr())
    nxt = next_op(loop)
    with ir.InsertionPoint(nxt):
        post = op.clone()
    post.operands[0] = res
    post.attributes["axis"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), rank - 1)
    post.results[0].set_type(post_ty)
    back = create_convert(post.results[0], layout_of(old_ty), before=nxt, loc=op.location)
    with ir.InsertionPoint(nxt):
        final = update.clone()
    final.operands[p.acc_side] = init
    final.operands[1 - p.acc_side] = back
    final.results[0].set_type(old_ty)
    for u in res_uses:
        u.owner.operands[u.operand_number] = final.results[0]
    op.erase()
    if log.isEnabledFor(logging.DEBUG):
        log.debug("reduction at %s: thread-local in the loop over %s (axis %d), across threads after it",
                  tt.loc_str(local), list(tt.shape_of(p.view_ty)), p.red_axis)


def optimize_thread_locality(root) -> int:
    """Rewrite every matching reduction under ``root``; returns how many."""
    root = as_op(root)
    with root.context, ir.Location.unknown():
        plans = [p for p in (_match(op) for op in walk(root) if op.name == tt.REDUCE) if p is not None]
        for p in plans:
            _rewrite(p)
        return len(plans)


optimize_thread_locality_pass = pass_entry("tritium-optimize-thread-locality", optimize_thread_locality)
