"""Common subexpression elimination for tt ops (and arith / math ops), driven by the tt op table.

Upstream ``cse`` sees IRDL tt ops as ops with unknown side effects and leaves them alone, so the core merges
them itself.  Two ops are merged when

* both are pure (``tritium.dialects.tt`` table; every arith / math op) and have no regions,
* they have the same name, operands (a multiset for commutative ops), attributes and result types,
* the first dominates the second: it comes earlier in the same block, or in a block of an enclosing region
  (not crossing an op that is isolated from above, such as ``func.func``).

The later op's uses are redirected to the earlier op's results and the later op is erased.
"""
from __future__ import annotations

from mlir import ir

from .. import ir_helpers as u

# Ops whose regions see values from the enclosing scope.  Any other op with regions (func.func, module)
# starts a fresh scope.
_SCOPE_TRANSPARENT_PREFIXES = ("scf.", "cf.")


def _key(op: ir.Operation):
    attrs = tuple(sorted((k, str(op.attributes[k])) for k in op.attributes))
    return (op.name, u.operand_key(op), attrs, tuple(str(r.type) for r in op.results))


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


def cse_pass(op, pass_=None) -> None:
    """``PassManager.add`` entry point."""
    cse(op)


cse_pass.__name__ = "tritium-cse"
