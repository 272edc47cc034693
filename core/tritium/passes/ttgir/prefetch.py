"""Prefetch dot operands into registers one iteration ahead (Triton's ``Prefetch`` for ``mma.sync`` loops).

After the software pipeliner, a loop feeding ``mma.sync`` dots reads each iteration's operand tiles from shared
memory (``ldmatrix``) right before the dots, so every iteration starts with the full latency of those reads.  This
pass reads the *next* iteration's tiles at the end of the current one instead, as loop-carried registers::

    ttg.async_wait {num = S-2}                                     (before the loop: stage 0 has landed)
    %a0 = ttg.local_load %stack_a[%read0]  ...                     (the first iteration's operands)
    scf.for ... iter_args(..., %a = %a0, %b = %b0) {
      ... the copies, tt.dot %a, %b, %acc ...
      ttg.async_wait {num = S-2}                                   (the next iteration's stage has landed)
      %a_next = ttg.local_load %stack_a[%read_next]  ...
      yield ..., %a_next, %b_next
    }

so the shared-memory reads overlap the end of the body and the back edge and the dots of an iteration start at once;
the wait at the top of the body goes when nothing else there reads the stages.  Triton prefetches only the first
k-slice of each operand (and splits the dot); this pass carries whole tiles, so it applies while they fit a register
budget (``MAX_REGS`` 32-bit registers per thread for all of a loop's prefetched operands) and leaves larger tiles
alone.

Applies to a pipelined ``scf.for`` (the pipeliner's ``ttg.async_wait`` first in its body) whose ``tt.dot`` operands
in ``#ttg.dot_op`` of an ``nvidia_mma`` version 2 layout are ``ttg.local_load`` s of a ``ttg.memdesc_subview`` of a
stack defined before the loop at a loop-carried index, used by dots only.  wgmma reads shared memory itself: nothing
to prefetch there.  The last iteration's prefetch reads a stage no copy refilled (its value is never used).
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.analysis.allocation import elem_bytes

from .coalesce import as_op, layout_of, module_int, walk

log = logging.getLogger(__name__)

MAX_REGS = 64


def _regs(ty) -> int:
    """32-bit registers a thread holds for a distributed tensor of type ``ty``."""
    lay = layout_of(ty)
    n = lay.linear(tuple(tt.shape_of(ty))).num_regs
    return max(1, n * elem_bytes(ty) // 4)


def _candidates(body):
    out = []
    for op in body.operations:
        op = as_op(op)
        if op.name != ttg.LOCAL_LOAD:
            continue
        lay = layout_of(op.results[0])
        if not (isinstance(lay, layouts.DotOperandLayout) and isinstance(lay.parent, layouts.NvidiaMmaLayout)
                and lay.parent.version == 2):
            continue
        src = op.operands[0]
        if isinstance(src.owner, ir.Block) or as_op(src.owner).name != ttg.MEMDESC_SUBVIEW:
            continue
        sub = as_op(src.owner)
        stack, index = sub.operands[0], sub.operands[1]
        if sub.operation.block != body or not isinstance(index.owner, ir.Block) or index.owner != body:
            continue
        if not isinstance(stack.owner, ir.Block) and as_op(stack.owner).operation.block == body:
            continue
        if any(as_op(u.owner).name != tt.DOT for u in op.results[0].uses):
            continue
        out.append((op, sub, stack, index))
    return out


def _wait(num: int):
    i32 = ir.IntegerType.get_signless(32)
    return ir.Operation.create(ttg.ASYNC_WAIT, attributes={"num": ir.IntegerAttr.get(i32, num)})


def _load(stack, index, ty):
    shape, elem, lay = ttg.memdesc_layout(stack.type)
    sub_ty = ttg.memdesc_type(shape[1:], elem, lay, stack.type.context)
    sub = ir.Operation.create(ttg.MEMDESC_SUBVIEW, results=[sub_ty], operands=[stack, index]).results[0]
    return ir.Operation.create(ttg.LOCAL_LOAD, results=[ty], operands=[sub]).results[0]


def prefetch_loop(loop, stages: int) -> bool:
    loop = as_op(loop)
    body = loop.regions[0].blocks[0]
    ops = [as_op(o) for o in body.operations]
    if not ops or ops[0].name != ttg.ASYNC_WAIT:
        return False
    cands = _candidates(body)
    if not cands:
        return False
    regs = sum(_regs(op.results[0].type) for op, *_ in cands)
    if regs > MAX_REGS:
        log.debug("loop at %s: operands not prefetched (%d registers per thread > %d)", tt.loc_str(loop), regs,
                  MAX_REGS)
        return False
    term = ops[-1]
    n_old = len(loop.results)
    inits = list(loop.operands[3:])
    with loop.location:
        with ir.InsertionPoint(loop):
            _wait(max(0, stages - 2))
            first = [_load(stack, inits[index.arg_number - 1], op.results[0].type) for op, _, stack, index in cands]
            new_loop = ir.Operation.create("scf.for", results=[v.type for v in inits + first],
                                           operands=list(loop.operands[:3]) + inits + first, regions=1)
        nb = ir.Block.create_at_start(new_loop.regions[0], [a.type for a in body.arguments] + [v.type for v in first])
        with ir.InsertionPoint(nb):
            end_wait = _wait(max(0, stages - 2))  # the next iteration's stage has landed
        for op in ops[:-1]:
            op.move_before(end_wait)
        for i, a in enumerate(body.arguments):
            a.replace_all_uses_with(nb.arguments[i])
        carried = nb.arguments[len(body.arguments):]
        for (op, sub, _, _), v in zip(cands, carried):
            op.results[0].replace_all_uses_with(v)
            op.erase()
            if not list(sub.results[0].uses):
                sub.erase()
        with ir.InsertionPoint(nb):
            nxt = [_load(stack, _yielded(term, index, nb), v.type) for (_, _, stack, index), v in zip(cands, carried)]
            ir.Operation.create("scf.yield", operands=list(term.operands) + nxt)
        term.erase()
        # the top wait stays only while something else in the body still reads shared memory
        top = as_op(list(nb.operations)[0])
        readers = [o for o in walk(new_loop) if o.name in (ttg.LOCAL_LOAD, ttg.WARP_GROUP_DOT)
                   and o.operation.block == nb and not _after(o, end_wait)]
        if top.name == ttg.ASYNC_WAIT and not readers:
            top.erase()
        for i, r in enumerate(loop.results):
            r.replace_all_uses_with(new_loop.results[i])
        loop.erase()
    return True


def _yielded(term, index, nb):
    """The value the (old) yield gives ``index``'s iter_arg (the next iteration's read index), in the new body."""
    return term.operands[ir.BlockArgument(index).arg_number - 1]


def _after(op, anchor) -> bool:
    ops = [as_op(o) for o in as_op(anchor).operation.block.operations]
    return ops.index(as_op(op)) > ops.index(as_op(anchor))


def prefetch(root) -> int:
    """Prefetch the dot operands of the pipelined ``mma.sync`` loops of ``root`` (a module); returns how many."""
    mod = as_op(root)
    stages = module_int(mod, ttg.NUM_STAGES, 1)
    if stages < 2:
        return 0
    loops = [op for op in walk(mod) if op.name == "scf.for"]
    return sum(prefetch_loop(op, stages) for op in loops)


def prefetch_pass(op, pass_=None) -> None:
    with as_op(op).context:
        prefetch(op)


prefetch_pass.__name__ = "tritium-prefetch"
