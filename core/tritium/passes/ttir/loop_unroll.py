"""Unroll ``scf.for`` loops by their ``tt.loop_unroll_factor`` (``tl.range(..., loop_unroll_factor=k)``), as
Triton's LoopUnroll does on TTIR.

A loop ``for iv in range(lb, ub, step)`` with factor ``k > 1`` and a step known at compile time to be positive
becomes a main loop of ``k`` copies of the body per iteration (the copies see ``iv``, ``iv + step``, ...,
``iv + (k-1) * step`` and chain the loop-carried values), running the whole groups of ``k`` trips, then a
remainder loop of the original body over what is left (``ub_main = lb + (trips // k) * k * step`` with ``trips =
max(0, ceil((ub - lb) / step))``).  Both carry no unroll attribute; other attributes stay on the main loop.  Loops
with a step not known to be positive are left alone (logged with ``TRITIUM_LOG``), as are factors of 0 and 1.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

log = logging.getLogger(__name__)

ATTR = "tt.loop_unroll_factor"


def _const_int(v):
    """The integer a constant-defined value holds, else None."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    op = u.as_op(owner)
    if op.name != "arith.constant":
        return None
    a = op.attributes["value"]
    return ir.IntegerAttr(a).value if isinstance(a, ir.IntegerAttr) else None


def _arith(name, a, b):
    return ir.Operation.create(name, results=[a.type], operands=[a, b]).results[0]


def _const(ty, value):
    return ir.Operation.create("arith.constant", results=[ty], attributes={"value": ir.IntegerAttr.get(ty, value)}
                               ).results[0]


def _clone_body(block, mapping, ip):
    """Clone the ops of ``block`` but its terminator at ``ip``, operands (also those of nested ops) through
    ``mapping``; returns the yielded values, mapped."""
    ops = [u.as_op(o) for o in block.operations]
    u.clone_ops(ops[:-1], mapping, ip)
    return [mapping.get(v, v) for v in ops[-1].operands]


def _unroll(loop, k: int) -> bool:
    lb, ub, step = loop.operands[0], loop.operands[1], loop.operands[2]
    inits = list(loop.operands[3:])
    s = _const_int(step)
    if s is None or s <= 0:
        log.debug("loop at %s: unroll factor %d ignored, its step is not a positive constant", loop.location, k)
        return False
    body = loop.regions[0].blocks[0]
    ity = lb.type
    with ir.InsertionPoint(loop), loop.location:
        span = _arith("arith.maxsi", _arith("arith.subi", ub, lb), _const(ity, 0))
        trips = _arith("arith.divsi", _arith("arith.addi", span, _const(ity, s - 1)), _const(ity, s))
        groups = _arith("arith.divsi", trips, _const(ity, k))
        ub_main = _arith("arith.addi", lb, _arith("arith.muli", groups, _const(ity, k * s)))
        attrs = {n: loop.attributes[n] for n in loop.attributes if n != ATTR}
        main = ir.Operation.create("scf.for", results=[r.type for r in loop.results],
                                   operands=[lb, ub_main, _const(ity, k * s)] + inits, attributes=attrs, regions=1)
        mblock = main.regions[0].blocks.append(*[a.type for a in body.arguments])
        carried = list(mblock.arguments[1:])
        ip = ir.InsertionPoint(mblock)
        for j in range(k):
            with ip, loop.location:
                iv = mblock.arguments[0] if j == 0 else _arith("arith.addi", mblock.arguments[0], _const(ity, j * s))
            mapping = {body.arguments[0]: iv}
            mapping.update(zip(list(body.arguments)[1:], carried))
            carried = _clone_body(body, mapping, ip)
        with ip, loop.location:
            ir.Operation.create("scf.yield", operands=carried)
        rest = ir.Operation.create("scf.for", results=[r.type for r in loop.results],
                                   operands=[ub_main, ub, step] + list(main.results), regions=1)
        rblock = rest.regions[0].blocks.append(*[a.type for a in body.arguments])
        mapping = dict(zip(body.arguments, rblock.arguments))
        out = _clone_body(body, mapping, ir.InsertionPoint(rblock))
        with ir.InsertionPoint(rblock), loop.location:
            ir.Operation.create("scf.yield", operands=out)
    for old, new in zip(loop.results, rest.results):
        old.replace_all_uses_with(new)
    loop.erase()
    return True


def loop_unroll(module) -> int:
    """Unroll every ``scf.for`` of ``module`` carrying a factor above 1; returns how many were."""
    n = 0
    for op in reversed(u.walk(u.as_op(module))):  # inner loops first
        if op.name == "scf.for" and ATTR in op.attributes:
            k = ir.IntegerAttr(op.attributes[ATTR]).value
            if k > 1 and _unroll(op, k):
                n += 1
            elif ATTR in op.attributes:
                del op.attributes[ATTR]
    return n


loop_unroll_pass = pass_entry("tritium-loop-unroll", loop_unroll)
