"""Reorder instructions: put layout conversions and shared-memory ops where they cost the least live range
(Triton's ``ReorderInstructions``).

* ``ttg.convert_layout`` and ``ttg.local_load`` sink to just before their first user in their block (a user
  nested in a region counts as the op of this block that holds it): the converted value is not kept live across
  unrelated work, and a conversion whose users all sit in a later region is done once, right before it;
* ``ttg.local_alloc`` of a value produced by a ``tt.load`` moves right after the load, so the registers of the
  loaded tensor are released as soon as possible (Triton: "move alloc(load) immediately after the load").

Nothing moves across a block boundary, so dominance and loop structure are untouched.
"""
from __future__ import annotations

from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import ancestor_in_block

from tritium.passes.ir_helpers import CONVERT, as_op, defining_op, walk

_SINK = (CONVERT, "ttg.local_load")


def reorder_instructions(root) -> int:
    """Returns the number of ops moved."""
    root = as_op(root)
    moved = 0
    with root.context:
        for op in walk(root):
            if op.name in _SINK and len(op.results):
                block = op.block
                anchors = []
                for r in op.results:
                    for u in r.uses:
                        a = ancestor_in_block(as_op(u.owner), block)
                        if a is None:
                            anchors = None
                            break
                        anchors.append(a)
                    if anchors is None:
                        break
                if not anchors:
                    continue
                order = {o: i for i, o in enumerate(as_op(x) for x in block.operations)}
                first = min(anchors, key=lambda a: order[a])
                if order[first] != order[op] + 1:
                    op.move_before(first)
                    moved += 1
            elif op.name == "ttg.local_alloc" and len(op.operands):
                d = defining_op(op.operands[0])
                if d is not None and d.name == "tt.load" and d.block == op.block:
                    ops = [as_op(x) for x in op.block.operations]
                    if ops.index(op) != ops.index(d) + 1:
                        op.move_after(d)
                        moved += 1
    return moved


reorder_instructions_pass = pass_entry("tritium-reorder-instructions", reorder_instructions)
