"""Common subexpression elimination for tt ops (and arith / math ops), driven by the tt op table.

Upstream ``cse`` sees IRDL tt ops as ops with unknown side effects and leaves them alone, so the core merges
them itself.  Two ops are merged when

* both are pure (``tritium.dialects.tt`` table; every arith / math op) and have no regions,
* they have the same name, operands (a multiset for commutative ops), attributes and result types,
* the first dominates the second: it comes earlier in the same block, or in a block of an enclosing region
  (not crossing an op that is isolated from above, such as ``func.func``).

The later op's uses are redirected to the earlier op's results and the later op is erased.  The pass then merges
loop-carried duplicates (:func:`merge_loop_duplicates`).
"""
from __future__ import annotations

from mlir import ir

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

# Ops whose regions see values from the enclosing scope.  Any other op with regions (func.func, module)
# starts a fresh scope.
_SCOPE_TRANSPARENT_PREFIXES = ("scf.", "cf.")


def _attrs(op: ir.Operation) -> tuple:
    return tuple(sorted((k, str(op.attributes[k])) for k in op.attributes))


def _key(op: ir.Operation):
    return (op.name, u.operand_key(op), _attrs(op), tuple(str(r.type) for r in op.results))


@u.in_context
def cse(root) -> int:
    """Run CSE over everything nested in ``root``; returns the number of ops erased."""
    erased = 0

    def visit_region(region, scope: dict):
        nonlocal erased
        for block in region.blocks:
            local = dict(scope)  # a block sees its dominators; its own entries die with it
            for op in list(block.operations):
                op = u.as_op(op)
                if len(op.regions):
                    inherit = op.name.startswith(_SCOPE_TRANSPARENT_PREFIXES)
                    for r in op.regions:
                        visit_region(r, local if inherit else {})
                    continue
                if not u.is_pure(op) or len(op.results) == 0:
                    continue
                key = _key(op)
                prev = local.get(key)
                if prev is None:
                    local[key] = op
                    continue
                u.replace_op(op, list(prev.results))
                erased += 1

    for r in u.as_op(root).regions:
        visit_region(r, {})
    return erased


def _congruent(a, b, hyp, depth: int = 0) -> bool:
    """``a`` and ``b`` hold the same value whenever the block-argument pairs in ``hyp`` do: the same value, a
    hypothesised pair, or pure ops of one name, attributes and type over congruent operands."""
    if a == b or (a, b) in hyp or (b, a) in hyp:
        return True
    if a.type != b.type or depth > 12:
        return False
    da, db = u.defining_op(a), u.defining_op(b)
    if da is None or db is None or da.name != db.name or not u.is_pure(da) or len(da.results) != 1 or \
            len(da.operands) != len(db.operands) or _attrs(da) != _attrs(db):
        return False
    return all(_congruent(x, y, hyp, depth + 1) for x, y in zip(da.operands, db.operands))


def merge_loop_duplicates(root) -> int:
    """Loop-carried values that are always equal become one (the offsets of two block pointers advanced together,
    such as attention's K and V: two i32 iter_args where one does): iter_args ``i`` and ``j`` of an ``scf.for`` whose
    inits are congruent and whose yielded values are congruent when ``i`` and ``j`` are assumed equal -- so, by
    induction, equal in every iteration.  Uses of ``j`` (and of its loop result) move to ``i``; canonicalize drops
    the dead iter_arg.  Returns how many were merged."""
    merged = 0
    for loop in u.walk(root):
        if loop.name != "scf.for":
            continue
        body = loop.regions[0].blocks[0]
        args = list(body.arguments)[1:]
        term = u.as_op(list(body.operations)[-1])
        inits = list(loop.operands)[3:]
        gone = set()
        for i in range(len(args)):
            if i in gone:
                continue
            for j in range(i + 1, len(args)):
                if j in gone or args[i].type != args[j].type or not _congruent(inits[i], inits[j], set()):
                    continue
                if not _congruent(term.operands[i], term.operands[j], {(args[i], args[j])}):
                    continue
                args[j].replace_all_uses_with(args[i])
                loop.results[j].replace_all_uses_with(loop.results[i])
                gone.add(j)
                merged += 1
    return merged


def _merge_loop_duplicates_then_cse(op) -> None:
    """Loop-carried duplicates merged, their updates CSE'd."""
    if merge_loop_duplicates(op):
        cse(op)


#: CSE, then loop-carried duplicates (their updates CSE next time)
cse_pass = pass_entry("tritium-cse", cse, _merge_loop_duplicates_then_cse)
