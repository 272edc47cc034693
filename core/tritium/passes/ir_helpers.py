"""IR helpers shared by the passes (TTIR and TTGIR), the analyses and the tools: op properties from the tt table, walking, constants, rewriting.

Binding facts these helpers rely on (MLIR 22 Python bindings, checked in tests/passes/test_bindings.py):

* ``ir.Value`` wrappers (``Value``, ``OpResult``, ``BlockArgument``) compare equal and hash equal when they
  wrap the same SSA value, whatever wrapper class they come in, so they can be dict keys;
* ``ir.Operation`` wrappers are NOT unique per operation (MLIR 22 has no live-object map): two wrappers of
  one op compare and hash equal, but ``op.erase()`` invalidates only the wrapper it is called on.  Any other
  wrapper of the erased op dangles (use-after-free).  So every pass here erases an op only through the
  wrapper it is visiting and never visits it again: sweeps walk a precomputed op list and a pattern may only
  erase the op it was given;
* ``op.attributes`` lists inherent (property) attributes too (``predicate``, ``fastmath``, ``overflowFlags``),
  and ``ir.Operation.create(..., attributes=...)`` puts inherent ones back into properties.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Optional

from mlir import ir

from tritium.dialects import tt, ttg

# Integer division / remainder can trap: never executed speculatively (LICM).
_MAY_TRAP = frozenset({
    "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
    "arith.floordivsi",
})

# Shape-preserving elementwise tt ops (Triton gives them the Elementwise trait): the table's ``elementwise``.
TT_ELEMENTWISE = frozenset(d.full_name for d in tt.OPS if d.elementwise)

# arith ops that are not elementwise computations (or do not exist on scalars the same way).
_ARITH_NOT_ELEMENTWISE = frozenset({"arith.constant"})


def as_op(op) -> ir.Operation:
    """The ``ir.Operation`` behind an ``OpView`` or ``Operation``."""
    return op.operation if hasattr(op, "operation") else op


def dialect(op) -> str:
    return as_op(op).name.split(".", 1)[0]


def bool_attr(op, name: str) -> Optional[bool]:
    """The boolean (or integer) attribute ``name`` of ``op`` as a bool; None when absent or of another kind."""
    attrs = as_op(op).attributes
    if name not in attrs:
        return None
    a = attrs[name]
    return bool(a.value) if isinstance(a, (ir.BoolAttr, ir.IntegerAttr)) else None


def is_pure(op) -> bool:
    """No memory effects, no regions: may be merged, removed when unused and moved.

    tt ops: the table's ``pure`` flag (``tt.extern_elementwise`` only with ``pure = true``).
    arith / math ops: all of them (they have no memory effects).
    """
    op = as_op(op)
    if len(op.regions):
        return False
    name = op.name
    d = tt.op_def(name)
    if d is not None:
        if name == "tt.extern_elementwise":
            return bool(bool_attr(op, "pure"))
        return d.pure
    return dialect(op) in ("arith", "math")


def is_speculatable(op) -> bool:
    """Pure and cannot trap: safe to execute even when the original would not have run."""
    return is_pure(op) and as_op(op).name not in _MAY_TRAP


def is_removable(op) -> bool:
    """May be erased when none of its results is used.

    Pure ops, and non-volatile ``tt.load`` (a read only; Triton removes unused loads too).  Stores, atomics,
    prints, asserts and inline asm are never removable.
    """
    op = as_op(op)
    if is_pure(op):
        return True
    if op.name == "tt.load":
        return not bool_attr(op, "isVolatile")
    return False


def is_elementwise(op) -> bool:
    """Elementwise computation on same-shaped operands and results (arith, math, tt elementwise ops)."""
    op = as_op(op)
    if not is_pure(op) or len(op.results) == 0:
        return False
    name = op.name
    if name in TT_ELEMENTWISE:
        return True
    d = dialect(op)
    if d == "math":
        return True
    if d == "arith" and name not in _ARITH_NOT_ELEMENTWISE:
        return True
    return False


def walk(root) -> list:
    """Every op nested under ``root`` (root excluded), parents before children, in program order (MLIR's own
    pre-order walk: a sixth of the time of visiting regions and blocks from Python, and every pass walks)."""
    out = []

    def visit(op):
        out.append(op)
        return _ADVANCE

    as_op(root).walk(visit, _PRE_ORDER)
    return out[1:]


_ADVANCE, _PRE_ORDER = ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER


def clone_ops(ops, mapping: dict, ip) -> None:
    """Clone ``ops`` at ``ip``, their operands and those of the ops nested in them through ``mapping`` (a value
    -> value dict), which is updated with each clone's results."""
    with ip:
        for op in ops:
            op = as_op(op)
            new = op.clone()
            for old_op, new_op in zip([op] + walk(op), [new] + walk(new)):
                for i, v in enumerate(old_op.operands):
                    if v in mapping:
                        new_op.operands[i] = mapping[v]
            for r_old, r_new in zip(op.results, new.results):
                mapping[r_old] = r_new


def ancestor_in_block(op, block) -> Optional[ir.Operation]:
    """The op of ``block`` that is ``op`` or holds it; None when ``op`` is outside ``block`` (within its
    function)."""
    while op is not None:
        if op.block == block:
            return op
        parent = op.parent
        op = as_op(parent) if parent is not None else None
        if op is not None and op.name in ("func.func", "builtin.module"):
            return None
    return None


def defining_op(value) -> Optional[ir.Operation]:
    """The op that defines ``value``, or None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return as_op(owner)


def has_uses(value) -> bool:
    for _ in value.uses:
        return True
    return False


def num_uses(value) -> int:
    return sum(1 for _ in value.uses)


def results_unused(op) -> bool:
    return not any(has_uses(r) for r in as_op(op).results)


def op_is(value, name: str) -> Optional[ir.Operation]:
    """The defining op of ``value`` if it is named ``name``."""
    d = defining_op(value)
    return d if d is not None and d.name == name else None


def constant_scalar(value) -> Optional[ir.Attribute]:
    """The scalar attribute ``value`` is (for a scalar) or is filled with (for a tensor), if known.

    Understands ``arith.constant`` scalars, ``arith.constant dense<splat>`` and ``tt.splat`` of a constant.
    """
    d = defining_op(value)
    if d is None:
        return None
    if d.name == "arith.constant":
        attr = d.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr):
            return attr.get_splat_value() if attr.is_splat else None
        if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr, ir.BoolAttr)):
            return attr
        return None
    if d.name == "tt.splat":
        return constant_scalar(d.operands[0])
    return None


def reduce_combine_op(reduce_op) -> Optional[ir.Operation]:
    """The one op of ``reduce_op``'s combine function when the function is ``return OP(%arg0, %arg1)`` (either
    operand order), else None."""
    sym = ir.FlatSymbolRefAttr(reduce_op.attributes["combine"]).value
    module = reduce_op
    while module.name != "builtin.module":
        if module.parent is None:
            return None
        module = as_op(module.parent)
    func = None
    for op in module.regions[0].blocks[0].operations:
        op = as_op(op)
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == sym:
            func = op
            break
    if func is None or len(func.regions[0].blocks) != 1:
        return None
    block = func.regions[0].blocks[0]
    ops = [as_op(o) for o in block.operations]
    if len(ops) != 2 or ops[1].name != "func.return" or len(block.arguments) != 2:
        return None
    op, ret = ops
    if len(op.operands) != 2 or len(op.results) != 1 or list(ret.operands) != [op.results[0]]:
        return None
    if set(op.operands) != set(block.arguments) or op.operands[0] == op.operands[1]:
        return None
    return op


def public_functions(root) -> list:
    """The ``func.func`` ops with a body under ``root`` that are not private (kernels)."""
    out = []
    for op in walk(root):
        if op.name != "func.func" or not op.regions[0].blocks:
            continue
        vis = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        if vis is None or ir.StringAttr(vis).value != "private":
            out.append(op)
    return out


def arg_attrs(func) -> list:
    """A ``func.func``'s argument attributes: one ``{name: attribute}`` dict per argument of its entry block."""
    n = len(func.regions[0].blocks[0].arguments)
    if "arg_attrs" not in func.attributes:
        return [{} for _ in range(n)]
    out = []
    for a in ir.ArrayAttr(func.attributes["arg_attrs"]):
        d = ir.DictAttr(a)
        out.append({d[i].name: d[i].attr for i in range(len(d))})
    return out + [{} for _ in range(n - len(out))]


def attr_int(attr) -> Optional[int]:
    """An integer (or boolean) attribute's value; None for None and attributes of other kinds."""
    return int(attr.value) if isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)) else None


def attr_float(attr) -> Optional[float]:
    """A float attribute's value; None for attributes of other kinds."""
    return float(attr.value) if isinstance(attr, ir.FloatAttr) else None


def is_constant_int(value, v: int) -> bool:
    return attr_int(constant_scalar(value)) == v


def is_zero(value, any_sign: bool = False) -> bool:
    """``value`` is a constant zero (a scalar, a splat tensor).  Floats: +0.0 only (-0.0 is not the additive
    identity and not all-zero bits), unless ``any_sign`` (where only the sum matters: x + -0.0 == x)."""
    a = constant_scalar(value)
    if a is None:
        return False
    i = attr_int(a)
    if i is not None:
        return i == 0
    f = attr_float(a)
    return f is not None and f == 0.0 and (any_sign or math.copysign(1.0, f) > 0)


def create_op(name: str, operands: Iterable, result_types: Iterable, attributes: Optional[dict] = None,
              *, loc=None, before=None) -> ir.Operation:
    """Create an op in generic form, inserted before ``before``."""
    kwargs = dict(results=list(result_types), operands=list(operands), attributes=dict(attributes or {}))
    if loc is not None:
        kwargs["loc"] = loc
    with ir.InsertionPoint(as_op(before)):
        return as_op(ir.Operation.create(name, **kwargs))


def copy_attributes(op, drop: Iterable[str] = ()) -> dict:
    op = as_op(op)
    drop = set(drop)
    return {k: op.attributes[k] for k in op.attributes if k not in drop}


def constant(attr, ty, *, loc=None, before=None) -> ir.Value:
    """``arith.constant`` of ``attr`` (a scalar attr for scalar ``ty``, a splat of it for tensor ``ty``)."""
    if tt.is_tensor(ty):
        attr = ir.DenseElementsAttr.get_splat(ty, attr)
    return create_op("arith.constant", [], [ty], {"value": attr}, loc=loc, before=before).results[0]


def replace_op(op, values) -> None:
    """Replace every use of ``op``'s results with ``values`` and erase ``op``."""
    op = as_op(op)
    for r, v in zip(op.results, values):
        r.replace_all_uses_with(v)
    op.erase()


operand_groups = tt.operand_groups  # operands of a tt op split by group name (honours operandSegmentSizes)


def segment_sizes(*sizes: int) -> ir.Attribute:
    return ir.DenseI32ArrayAttr.get(list(sizes))


def operand_key(op) -> tuple:
    """Operands as a hashable key; for commutative ops a multiset."""
    op = as_op(op)
    ops = list(op.operands)
    if is_commutative(op):
        return ("multiset", frozenset(Counter(ops).items()))
    return tuple(ops)


_ARITH_COMMUTATIVE = frozenset({
    "arith.addi", "arith.addf", "arith.muli", "arith.mulf", "arith.andi", "arith.ori", "arith.xori",
    "arith.maxsi", "arith.maxui", "arith.minsi", "arith.minui", "arith.maximumf", "arith.minimumf",
    "arith.maxnumf", "arith.minnumf", "arith.mulsi_extended", "arith.mului_extended", "arith.addui_extended",
})


def is_commutative(op) -> bool:
    op = as_op(op)
    d = tt.op_def(op.name)
    if d is not None:
        return d.commutative
    return op.name in _ARITH_COMMUTATIVE


def in_context(fn):
    """Run ``fn(root, ...)`` with ``root``'s MLIR context entered (types and attributes need a current one)."""
    import functools

    @functools.wraps(fn)
    def wrapper(root, *args, **kwargs):
        with as_op(root).context:
            return fn(root, *args, **kwargs)

    return wrapper


# ----------------------------------------------------------------------------------------------
# TTGIR: values' layouts, layout conversions, dead ops (shared by the TTGIR passes)
# ----------------------------------------------------------------------------------------------
MEMORY_OPS = (tt.LOAD, tt.STORE, tt.ATOMIC_RMW, tt.ATOMIC_CAS)
CONVERT = ttg.CONVERT_LAYOUT


def is_tensor(ty) -> bool:
    return isinstance(ty, ir.RankedTensorType)


def layout_of(value_or_type):
    ty = value_or_type if isinstance(value_or_type, ir.Type) else value_or_type.type
    return ttg.encoding_of(ty) if is_tensor(ty) else None


def users(value) -> list:
    return [as_op(u.owner) for u in value.uses]


def with_layout(ty, layout):
    return ttg.with_encoding(ty, layout)


def create_convert(value, layout, *, before=None, after=None, loc=None):
    """``ttg.convert_layout`` of ``value`` into ``layout``, inserted before ``before`` or after ``after``."""
    new_ty = with_layout(value.type, layout)
    anchor = as_op(before if before is not None else after)
    loc = loc or anchor.location
    with ir.InsertionPoint(anchor):
        op = ir.Operation.create(CONVERT, results=[new_ty], operands=[value], loc=loc)
    if after is not None:
        op.move_after(anchor)
    return op.results[0]


def module_int(op, name, default):
    m = as_op(op)
    while m.name != "builtin.module" and m.parent is not None:
        m = as_op(m.parent)
    return ttg.module_int(m, name, default)


def is_pure_ttg(op) -> bool:
    """Pure for the TTGIR cleanups: the tt table's pure ops, arith/math, and ``ttg.convert_layout``."""
    op = as_op(op)
    if len(op.regions):
        return False
    return op.name == CONVERT or is_pure(op)


def erase_dead(root) -> int:
    """Erase unused pure ops (including conversions) to a fixpoint; returns how many."""
    total = 0
    while True:
        n = 0
        for op in reversed(walk(root)):
            results = op.results
            if len(results) and not any(has_uses(r) for r in results) and is_pure_ttg(op):
                op.erase()
                n += 1
        total += n
        if not n:
            return total


def retype_results(op, layout) -> None:
    """Give every tensor result of ``op`` ``layout``; users it already had get the old layout back through a
    ``ttg.convert_layout`` right after ``op``."""
    for r in op.results:
        if not is_tensor(r.type):
            continue
        old = layout_of(r)
        uses = list(r.uses)
        r.set_type(with_layout(r.type, layout))
        if not uses or old == layout:
            continue
        back = create_convert(r, old, after=op)
        for u in uses:
            u.owner.operands[u.operand_number] = back


# ----------------------------------------------------------------------------------------------
# layout choice
# ----------------------------------------------------------------------------------------------
