"""Dead code elimination for tt ops (and arith / math ops), to a fixpoint.

Upstream DCE (inside canonicalize) never erases a tt op: IRDL ops have unknown side effects.  This pass
erases an op when none of its results is used and it is

* pure (tt table, arith, math), or
* a non-volatile ``tt.load`` (a read only; Triton removes unused loads as well), or
* an ``scf.for`` / ``scf.if`` whose results are unused and whose body holds only such ops (plus
  ``scf.yield`` and nested loops / ifs of the same kind).

Stores, atomics, ``tt.print``, ``tt.assert`` and inline asm are never erased.
"""
from __future__ import annotations

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

_REGION_OPS = ("scf.for", "scf.if")
_TERMINATORS = ("scf.yield",)


def _dead_region_op(op) -> bool:
    """An scf.for / scf.if without used results whose nested ops could all be erased."""
    if op.name not in _REGION_OPS or not u.results_unused(op):
        return False
    for inner in u.walk(op):
        if inner.name in _TERMINATORS:
            continue
        if inner.name in _REGION_OPS:
            continue  # its own body is checked by this same walk
        if not u.is_removable(inner):
            return False
    return True


@u.in_context
def dce(root) -> int:
    """Erase dead ops under ``root`` until nothing changes; returns the number of ops erased."""
    total = 0
    while True:
        erased = 0
        # Reverse pre-order: users before the ops that define their operands, children before parents.
        # An op is only erased when it is visited itself, so no erased op is visited later in the sweep
        # (an erased region op's children were visited before it).
        for op in reversed(u.walk(root)):
            if len(op.regions) == 0:
                if u.is_removable(op) and u.results_unused(op):
                    op.erase()
                    erased += 1
            elif _dead_region_op(op):
                op.erase()
                erased += 1
        total += erased
        if not erased:
            return total


dce_pass = pass_entry("tritium-dce", dce)
