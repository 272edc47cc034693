"""A warpgroup dot whose accumulator is reset by a select takes the reset as its ``use_c`` flag (Triton's
OptimizeAccumulatorInit).

``ttg.warp_group_dot(a, b, arith.select(cond, zeros, acc))`` becomes ``ttg.warp_group_dot(a, b, acc, use_c =
not cond)`` (``select(cond, acc, zeros)``: ``use_c = cond``): wgmma's scale-d ignores the accumulator's input when
the flag is false, so the result is the same (``a @ b + 0``), without the select's register copies of the whole
accumulator; and the dot then reads the loop-carried accumulator itself, so the asynchronous-wgmma rule of the
pipeliner applies (the accumulator waited for one dot later).  A fused persistent matmul
(``tl.range(..., flatten=True)``, passes/ttir/fuse_nested_loops.py) resets its accumulator this way at the start
of every tile.  Runs before the pipeliner; a dot that already has the flag is left alone.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt, ttg
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import copy_attributes, is_zero

from tritium.passes.ir_helpers import as_op, walk


def _reset(c):
    """``(acc, cond, use_when)`` when ``c`` is ``select(cond, zeros, acc)`` (use_when False) or ``select(cond, acc,
    zeros)`` (True) with a scalar condition; else None."""
    owner = c.owner
    if isinstance(owner, ir.Block):
        return None
    sel = as_op(owner)
    if sel.name != "arith.select" or not isinstance(sel.operands[0].type, ir.IntegerType):
        return None
    cond, x, y = sel.operands
    if is_zero(x, any_sign=True):
        return y, cond, False
    if is_zero(y, any_sign=True):
        return x, cond, True
    return None


def optimize_accumulator_init(root) -> int:
    """Rewrite the dots of ``root`` whose accumulator is a select against zeros; returns how many."""
    n = 0
    for dot in [o for o in walk(as_op(root)) if o.name == ttg.WARP_GROUP_DOT and len(o.operands) == 3]:
        found = _reset(dot.operands[2])
        if found is None:
            continue
        acc, cond, use_when = found
        with ir.InsertionPoint(dot), dot.location:
            flag = cond
            if not use_when:
                one = ir.Operation.create("arith.constant", results=[cond.type],
                                          attributes={"value": ir.IntegerAttr.get(cond.type, 1)}).results[0]
                flag = ir.Operation.create("arith.xori", results=[cond.type], operands=[cond, one]).results[0]
            new = tt.create_op(ttg.WARP_GROUP_DOT, results=[dot.results[0].type],
                               operands=[dot.operands[0], dot.operands[1], acc, flag],
                               attributes=copy_attributes(dot))
        sel = as_op(dot.operands[2].owner)
        dot.results[0].replace_all_uses_with(new.results[0])
        dot.erase()
        if not list(sel.results[0].uses):  # the pipeliner counts the accumulator's readers: no dead one left
            sel.erase()
        n += 1
    return n


optimize_accumulator_init_pass = pass_entry("tritium-optimize-accumulator-init", optimize_accumulator_init)
