"""Loop-invariant code motion for tt ops out of ``scf.for`` / ``scf.while``.

Upstream LICM does not move IRDL tt ops (unknown side effects).  This pass hoists, from the top level of a
loop body, every op that

* is pure and cannot trap (tt table pure ops, arith / math ops other than integer division / remainder),
* has no regions, and
* only uses values defined outside the loop (or by ops already hoisted).

Loads, stores, atomics, prints and asserts are never moved.  Loops are processed innermost first, so an op
can climb out of a whole nest.  The hoisted op goes right before the loop.
"""
from __future__ import annotations

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

_LOOPS = ("scf.for", "scf.while")


def _defined_inside(loop) -> set:
    """Every value defined inside ``loop`` (block arguments of its regions and results of nested ops)."""
    vals = set()

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                vals.update(block.arguments)
                for child in block.operations:
                    child = u.as_op(child)
                    vals.update(child.results)
                    visit(child)

    visit(loop)
    return vals


def _hoist_from(loop) -> int:
    inside = _defined_inside(loop)
    moved = 0
    for region in loop.regions:
        for block in region.blocks:
            for op in list(block.operations):
                op = u.as_op(op)
                if len(op.regions) or not u.is_speculatable(op):
                    continue
                if any(v in inside for v in op.operands):
                    continue
                op.move_before(loop)
                inside.difference_update(op.results)
                moved += 1
    return moved


@u.in_context
def licm(root) -> int:
    """Hoist loop invariants out of every loop under ``root``; returns the number of ops moved."""
    loops = [op for op in u.walk(root) if op.name in _LOOPS]
    moved = 0
    for loop in reversed(loops):  # innermost first
        moved += _hoist_from(loop)
    return moved


licm_pass = pass_entry("tritium-licm", licm)
