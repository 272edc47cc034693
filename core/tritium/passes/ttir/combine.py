"""Triton's TTIR combine rules (the ``triton-combine`` pass), plus the tt-op folds upstream canonicalize
cannot apply to IRDL ops.

Rules (``x`` a scalar, ``c`` a constant):

* ``addptr(addptr(p, a), b) -> addptr(p, a + b)`` when ``a`` and ``b`` have the same type;
* ``addptr(p, 0)`` / ``addptr(p, splat(0))`` / ``addptr(p, dense<0>) -> p``;
* ``select(c, load(p, splat(c), o1), o2) -> load(p, splat(c), o2)`` (also with the mask equal to ``c``);
* ``broadcast(splat(x)) -> splat(x)``, ``broadcast(broadcast(x)) -> broadcast(x)``, ``broadcast(x) -> x`` when
  the types agree, ``broadcast(dense<c>) -> dense<c>``;
* ``expand_dims`` / ``reshape`` / ``trans`` of ``splat(x)`` -> ``splat(x)``, of ``dense<c>`` -> ``dense<c>``;
* ``reshape(reshape(x))`` -> ``reshape(x)``, or ``x`` when the shapes agree (neither reordering);
  ``reshape(f(reshape(x)))`` -> ``f(reshape(reshape(x)))`` for a one-operand elementwise ``f`` (a cast) used once;
* ``splat(c) -> dense<c>`` for an integer / float constant ``c``;
* ``load(p, mask=all-true, other) -> load(p)``; ``load(p, mask=all-false, other) -> other`` (zeros when there
  is no ``other`` and the element type is a number);
* ``store(p, v, mask=all-true) -> store(p, v)``; ``store(p, v, mask=all-false)`` is erased;
* ``dot(a, b, 0) + d -> dot(a, b, d)`` (``arith.addi`` / ``arith.addf``, either operand order) when the add is
  the dot's only use and ``d`` has the dot's type (``addf`` only when ``maxNumImpreciseAcc`` is unset or 0);
* ``sum(broadcast(expand_dims(a, 2)) * broadcast(expand_dims(b, 0)), axis=1) -> dot(a, b, 0)``: a matrix product
  written as a broadcast multiply and a sum (``tl.sum(a[:, :, None] * b[None, :, :], 1)``), for fp32 ``a`` [M, K]
  and ``b`` [K, N] with M, N, K >= 16, on tensor cores at the dot's default fp32 precision (tf32), as Triton's
  ``CombineBroadcastMulReducePattern`` does.

The rules are applied to a fixpoint; ops left dead by a rewrite are removed by the DCE at the end.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u
from .dce import dce


def _replace_with_new(op, name, operands, types, attrs):
    new = u.create_op(name, operands, types, attrs, loc=op.location, before=op)
    u.replace_op(op, list(new.results))
    return new


def splat_or_constant(value, result_type, *, anchor):
    """A value of ``result_type`` filled with what ``value`` (a splat / constant splat) holds, or None."""
    d = u.defining_op(value)
    if d is None:
        return None
    if d.name == "tt.splat":
        return _replace_target(anchor, "tt.splat", [d.operands[0]], result_type)
    c = u.constant_scalar(value)
    if c is not None and d.name == "arith.constant":
        return u.constant(c, result_type, loc=anchor.location, before=anchor)
    return None


def _replace_target(anchor, name, operands, result_type):
    return u.create_op(name, operands, [result_type], {}, loc=anchor.location, before=anchor).results[0]


# ---------------------------------------------------------------------------------------------------------
# patterns: each takes an op, returns True when it rewrote it (the op may then be gone)
# ---------------------------------------------------------------------------------------------------------

def addptr_zero(op) -> bool:
    if u.is_constant_int(op.operands[1], 0) and op.operands[0].type == op.results[0].type:
        u.replace_op(op, [op.operands[0]])
        return True
    return False


def addptr_addptr(op) -> bool:
    inner = u.op_is(op.operands[0], "tt.addptr")
    if inner is None:
        return False
    a, b = inner.operands[1], op.operands[1]
    if a.type != b.type:
        return False
    s = u.create_op("arith.addi", [a, b], [a.type], loc=op.location, before=op).results[0]
    _replace_with_new(op, "tt.addptr", [inner.operands[0], s], [op.results[0].type], u.copy_attributes(op))
    return True


def select_masked_load(op) -> bool:
    cond, tv, fv = op.operands
    load = u.op_is(tv, "tt.load")
    if load is None:
        return False
    g = u.operand_groups(load)
    if not g["mask"]:
        return False
    mask = g["mask"][0]
    splat = u.op_is(mask, "tt.splat")
    if not (mask == cond or (splat is not None and splat.operands[0] == cond)):
        return False
    if fv.type != load.results[0].type:
        return False
    attrs = u.copy_attributes(load, drop=("operandSegmentSizes",))
    attrs["operandSegmentSizes"] = u.segment_sizes(1, 1, 1)
    _replace_with_new(op, "tt.load", [g["ptr"][0], mask, fv], [load.results[0].type], attrs)
    return True


def _constant_mask(op) -> bool | None:
    """True / False when the mask of a tt.load / tt.store is a constant all-true / all-false; None otherwise
    (no mask, or not a known constant)."""
    mask = u.operand_groups(op)["mask"]
    c = u.constant_scalar(mask[0]) if mask else None
    v = u.attr_int(c) if c is not None else None
    return None if v is None else v != 0


def _drop_mask(op, operands, segments) -> None:
    """Replace ``op`` (a tt.load / tt.store) by the same op on ``operands``, without its mask."""
    attrs = u.copy_attributes(op, drop=("operandSegmentSizes",))
    attrs["operandSegmentSizes"] = u.segment_sizes(*segments)
    _replace_with_new(op, op.name, operands, [r.type for r in op.results], attrs)


def load_constant_mask(op) -> bool:
    m = _constant_mask(op)
    if m is None:
        return False
    ptr, _, other = tt.split_operands(op)
    if m:
        _drop_mask(op, [ptr], (1, 0, 0))
        return True
    if u.bool_attr(op, "isVolatile"):
        return False
    if other is not None:
        u.replace_op(op, [other])
        return True
    res = op.results[0].type
    elem = tt.elem_of(res)
    if tt.is_int(elem):
        zero = ir.IntegerAttr.get(elem, 0)
    elif tt.is_float(elem):
        with op.location:  # FloatAttr.get reports through a location
            zero = ir.FloatAttr.get(elem, 0.0)
    else:
        return False
    u.replace_op(op, [u.constant(zero, res, loc=op.location, before=op)])
    return True


def store_constant_mask(op) -> bool:
    m = _constant_mask(op)
    if m is None:
        return False
    if not m:
        op.erase()
        return True
    ptr, value, _ = tt.split_operands(op)
    _drop_mask(op, [ptr, value], (1, 1, 0))
    return True


def broadcast_fold(op) -> bool:
    src, res = op.operands[0], op.results[0].type
    if src.type == res:
        u.replace_op(op, [src])
        return True
    inner = u.op_is(src, "tt.broadcast")
    if inner is not None:
        _replace_with_new(op, "tt.broadcast", [inner.operands[0]], [res], u.copy_attributes(op))
        return True
    v = splat_or_constant(src, res, anchor=op)
    if v is not None:
        u.replace_op(op, [v])
        return True
    return False


def shape_op_of_splat(op) -> bool:
    """expand_dims / reshape / trans of a splat or constant splat."""
    v = splat_or_constant(op.operands[0], op.results[0].type, anchor=op)
    if v is not None:
        u.replace_op(op, [v])
        return True
    return False


def reshape_reshape(op) -> bool:
    """reshape(reshape(x)) -> reshape(x), or x itself when the shapes agree (neither may reorder elements): a
    TMA load of a ``[1, R, C]`` block is an ``[R, C]`` tile reshaped, which the kernel reshapes back to 2-D."""
    inner = u.op_is(op.operands[0], "tt.reshape")
    if inner is None or any("allow_reorder" in o.attributes and ir.BoolAttr(o.attributes["allow_reorder"]).value
                            for o in (op, inner)):
        return False
    x, res = inner.operands[0], op.results[0]
    if x.type == res.type:
        u.replace_op(op, [x])
    else:
        _replace_with_new(op, "tt.reshape", [x], [res.type], u.copy_attributes(op))
    return True


def reshape_unary(op) -> bool:
    """reshape(f(x)) -> f(reshape(x)) for an elementwise ``f`` of one tensor operand used only there (a cast): the
    reshape moves up to meet another one (``tl.reshape(acc, [1, M, N]).to(tl.float16)`` stored through a TMA
    descriptor of ``[1, M, N]`` blocks, whose ``[M, N]`` tile is reshaped back)."""
    d = u.defining_op(op.operands[0])
    if d is None or not u.is_elementwise(d) or len(d.operands) != 1 or len(d.results) != 1 or \
            u.num_uses(d.results[0]) != 1 or u.op_is(d.operands[0], "tt.reshape") is None:
        return False
    x, res = d.operands[0], op.results[0]
    shape = tt.shape_of(res.type)
    moved = u.create_op("tt.reshape", [x], [ir.RankedTensorType.get(shape, tt.elem_of(x.type), loc=op.location)],
                        u.copy_attributes(op), loc=op.location, before=op)
    _replace_with_new(op, d.name, [moved.results[0]], [res.type], u.copy_attributes(d))
    return True


def splat_constant(op) -> bool:
    c = u.constant_scalar(op.operands[0])
    if c is None or u.defining_op(op.operands[0]).name != "arith.constant":
        return False
    res = op.results[0].type
    if not (tt.is_int(tt.elem_of(res)) or tt.is_float(tt.elem_of(res))):
        return False
    u.replace_op(op, [u.constant(c, res, loc=op.location, before=op)])
    return True


def dot_add(op) -> bool:
    for i in (0, 1):
        dot = u.op_is(op.operands[i], "tt.dot")
        d = op.operands[1 - i]
        if dot is None or d.type != dot.results[0].type or u.num_uses(dot.results[0]) != 1:
            continue
        if not u.is_zero(dot.operands[2]):
            continue
        if op.name == "arith.addf":
            acc = u.attr_int(dot.attributes["maxNumImpreciseAcc"]) if "maxNumImpreciseAcc" in dot.attributes else 0
            if acc:
                continue
        a, b = dot.operands[0], dot.operands[1]
        _replace_with_new(op, "tt.dot", [a, b, d], [dot.results[0].type], u.copy_attributes(dot))
        return True
    return False


def broadcast_mul_reduce(op) -> bool:
    if len(op.operands) != 1 or len(op.results) != 1 or u.attr_int(op.attributes["axis"]) != 1:
        return False
    comb = u.reduce_combine_op(op)
    if comb is None or comb.name != "arith.addf":
        return False
    mul = u.op_is(op.operands[0], "arith.mulf")
    if mul is None or u.num_uses(mul.results[0]) != 1:
        return False
    srcs = []
    for v, axis in zip(mul.operands, (2, 0)):
        bc = u.op_is(v, "tt.broadcast")
        ex = None if bc is None else u.op_is(bc.operands[0], "tt.expand_dims")
        if ex is None or u.attr_int(ex.attributes["axis"]) != axis:
            return False
        srcs.append(ex.operands[0])
    a, b = srcs
    ta, tb, tr = a.type, b.type, op.results[0].type
    if not (tt.is_tensor(ta) and tt.is_tensor(tb)) or len(ta.shape) != 2 or len(tb.shape) != 2:
        return False
    (m, k), (k2, n) = tt.shape_of(ta), tt.shape_of(tb)
    if k != k2 or min(m, n, k) < 16 or not all(str(tt.elem_of(t)) == "f32" for t in (ta, tb, tr)):
        return False
    zero = u.constant(ir.FloatAttr.get(tt.elem_of(tr), 0.0, loc=op.location), tr, loc=op.location, before=op)
    i32 = ir.IntegerType.get_signless(32)
    attrs = {"inputPrecision": ir.IntegerAttr.get(i32, 0), "maxNumImpreciseAcc": ir.IntegerAttr.get(i32, 0)}
    _replace_with_new(op, "tt.dot", [a, b, zero], [tr], attrs)
    return True


PATTERNS = {
    "tt.addptr": (addptr_zero, addptr_addptr),
    "arith.select": (select_masked_load,),
    "tt.load": (load_constant_mask,),
    "tt.store": (store_constant_mask,),
    "tt.broadcast": (broadcast_fold,),
    "tt.expand_dims": (shape_op_of_splat,),
    "tt.reshape": (shape_op_of_splat, reshape_reshape, reshape_unary),
    "tt.trans": (shape_op_of_splat,),
    "tt.splat": (splat_constant,),
    "arith.addi": (dot_add,),
    "arith.addf": (dot_add,),
    "tt.reduce": (broadcast_mul_reduce,),
}


def apply_patterns(root, patterns: dict, max_sweeps: int = 32) -> int:
    """Apply ``patterns`` (op name -> pattern functions) to every op under ``root`` until nothing changes.

    A pattern may only erase the op it is given, so the pre-computed op list of a sweep stays valid.
    """
    total = 0
    for _ in range(max_sweeps):
        changed = 0
        for op in u.walk(root):
            for pat in patterns.get(op.name, ()):
                if pat(op):
                    changed += 1
                    break
        total += changed
        if not changed:
            break
    return total


@u.in_context
def combine(root) -> int:
    """Run the combine rules under ``root``; returns the number of rewrites."""
    n = apply_patterns(root, PATTERNS)
    if n:
        dce(root)
    return n


combine_pass = pass_entry("tritium-combine", combine)
