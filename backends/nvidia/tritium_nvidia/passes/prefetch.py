"""Prefetch (Triton's ``Prefetch``): in a pipelined loop of ``mma.sync`` dots, the first K-slice of the next
iteration's operands is read from shared memory at the end of the current iteration, and the dot is split along K.

After the software pipeliner a dot ``%d = tt.dot %a, %b, %c`` reads its operands with ``ttg.local_load`` from this
iteration's stage (``ttg.memdesc_subview %stack[%read]``) right before it, so each iteration starts with the
latency of those reads.  This pass makes it::

    ttg.async_wait {num = n*(S-2)}                              (before the loop: stage 0 has landed)
    %a0 = ttg.local_load %stack_a[%read0] {offsets = [0, 0]} : M x k      (the first k-slice)
    %b0 = ttg.local_load %stack_b[%read0] {offsets = [0, 0]} : k x N
    scf.for ... iter_args(..., %pa = %a0, %pb = %b0) {
      ... the copies ...
      %d0 = tt.dot %pa, %pb, %c
      %a1 = ttg.local_load %tile_a {offsets = [0, k]} ... %d1 = tt.dot %a1, %b1, %d0 ...     (the other slices)
      ttg.async_wait {num = n*(S-2)}                            (the next iteration's stage has landed)
      %na = ttg.local_load %stack_a[%read_next] {offsets = [0, 0]} ...
      yield ..., %na, %nb
    }

The dots run in the order the single dot's MMA instructions did (the same sums, bit for bit).  The wait at the top
of the body goes: the stage an iteration reads is the one the previous iteration's last wait covered.  ``k`` is the
MMA instruction's K: 256 bits of the operand type (16 fp16 / bf16, 32 8-bit, 8 tf32).  The last iteration's
prefetch reads a stage no copy refilled; its value is never used.

On sm_80 - sm_89 only, as in Triton: on an H100's ``mma.sync`` path (small tiles) it measured 1-3% slower than
without (4096^3 fp16, 64x64x64 / 64x64x32 / 32x64x32 / 64x32x32 tiles, 2 warps: 281-284 vs 289-290, 250 vs 255,
182 vs 185, 169 vs 172 TFLOP/s; bench/RESULTS.md), the extra barrier after the end-of-body wait costing more than
the overlap gains; the sm_80 gain it is made for is not measured (no A100 lent).

Applies to a loop the pipeliner made (its ``ttg.async_wait`` first in the body) whose ``tt.dot`` s with an
``nvidia_mma`` version 2 result take both operands from ``ttg.local_load`` s (used only by that dot) of
``ttg.memdesc_subview`` s of stacks defined before the loop at one loop-carried index, with K at least two slices.
wgmma reads shared memory itself: nothing to prefetch there.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.analysis.allocation import elem_bytes

from tritium.passes.ttgir.accelerate_matmul import target_arch
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import as_op, layout_of, walk
from .pipeline_loops import async_wait
from .tma_lowering import subview

log = logging.getLogger(__name__)


def _operand(value, body):
    """``(local_load, subview, stack, index)`` when ``value`` is a local_load (used once) of a stage of a stack
    defined before the loop at a loop-carried index, else None."""
    if isinstance(value.owner, ir.Block):
        return None
    load = as_op(value.owner)
    if load.name != ttg.LOCAL_LOAD or load.operation.block != body or "offsets" in load.attributes or \
            len(list(value.uses)) != 1:
        return None
    src = load.operands[0]
    if isinstance(src.owner, ir.Block) or as_op(src.owner).name != ttg.MEMDESC_SUBVIEW:
        return None
    sub = as_op(src.owner)
    stack, index = sub.operands[0], sub.operands[1]
    if not isinstance(index.owner, ir.Block) or index.owner != body:
        return None
    if not isinstance(stack.owner, ir.Block) and as_op(stack.owner).operation.block == body:
        return None
    return load, sub, stack, index


def _slice_k(ty) -> int:
    return max(1, 256 // (8 * elem_bytes(ty)))


def _candidates(body):
    out = []
    for op in body.operations:
        op = as_op(op)
        if op.name != tt.DOT:
            continue
        lay = layout_of(op.results[0])
        if not (isinstance(lay, layouts.NvidiaMmaLayout) and lay.version == 2):
            continue
        a, b = _operand(op.operands[0], body), _operand(op.operands[1], body)
        if a is None or b is None or a[3] != b[3]:
            continue
        K = tt.shape_of(op.operands[0].type)[-1]
        k = _slice_k(op.operands[0].type)
        if K % k or K < 2 * k:
            continue
        out.append((op, a, b, k))
    return out


def _slice_type(ty, dim: int, k: int):
    t = ir.RankedTensorType(ty)
    shape = list(t.shape)
    shape[dim] = k
    return ir.RankedTensorType.get(shape, t.element_type, t.encoding)


def _load(memdesc, ty, offsets):
    return ir.Operation.create(ttg.LOCAL_LOAD, results=[ty], operands=[memdesc], attributes={
        "offsets": ir.DenseI32ArrayAttr.get(list(offsets))}).results[0]


def _dot(a, b, c, like):
    attrs = {k: like.attributes[k] for k in ("inputPrecision", "maxNumImpreciseAcc") if k in like.attributes}
    return ir.Operation.create(tt.DOT, results=[c.type], operands=[a, b, c], attributes=attrs).results[0]


def prefetch_loop(loop) -> bool:
    loop = as_op(loop)
    body = loop.regions[0].blocks[0]
    ops = [as_op(o) for o in body.operations]
    if not ops or ops[0].name != ttg.ASYNC_WAIT:
        return False
    cands = _candidates(body)
    if not cands:
        return False
    term = ops[-1]
    inits = list(loop.operands[3:])
    n_args = len(body.arguments)
    wait_num = ir.IntegerAttr(ops[0].attributes["num"]).value  # the pipeliner's: n copies a stage * (S-2)
    with loop.location:
        # the first slices of the first iteration, before the loop
        with ir.InsertionPoint(loop):
            async_wait(wait_num)
            first = []
            for dot, (la, _, sa, idx), (lb, _, sb, _), k in cands:
                i0 = inits[ir.BlockArgument(idx).arg_number - 1]
                first.append(_load(subview(sa, i0), _slice_type(la.results[0].type, 1, k), (0, 0)))
                first.append(_load(subview(sb, i0), _slice_type(lb.results[0].type, 0, k), (0, 0)))
            new_loop = ir.Operation.create("scf.for", results=[v.type for v in inits + first],
                                           operands=list(loop.operands[:3]) + inits + first, regions=1)
        nb = ir.Block.create_at_start(new_loop.regions[0], [a.type for a in body.arguments] + [v.type for v in first])
        with ir.InsertionPoint(nb):
            end_wait = async_wait(wait_num)
        for op in ops[:-1]:
            op.move_before(end_wait)
        for i, a in enumerate(body.arguments):
            a.replace_all_uses_with(nb.arguments[i])
        carried = list(nb.arguments[n_args:])
        nexts = []
        for j, (dot, (la, suba, sa, idx), (lb, subb, sb, _), k) in enumerate(cands):
            pa, pb = carried[2 * j], carried[2 * j + 1]
            K = tt.shape_of(la.results[0].type)[-1]
            with ir.InsertionPoint(dot), dot.location:  # the slices keep the dot's source line
                acc = _dot(pa, pb, dot.operands[2], dot)
                for s in range(1, K // k):
                    a_s = _load(suba.results[0], pa.type, (0, s * k))
                    b_s = _load(subb.results[0], pb.type, (s * k, 0))
                    acc = _dot(a_s, b_s, acc, dot)
            dot.results[0].replace_all_uses_with(acc)
            dot.erase()
            la.erase()
            lb.erase()
            with ir.InsertionPoint(term):
                nxt = term.operands[ir.BlockArgument(idx).arg_number - 1]  # (moved: the new body's value)
                nexts.append((sa, sb, nxt, pa.type, pb.type))
        with ir.InsertionPoint(nb):
            out = []
            for sa, sb, nxt, ta, tb in nexts:
                out.append(_load(subview(sa, nxt), ta, (0, 0)))
                out.append(_load(subview(sb, nxt), tb, (0, 0)))
            ir.Operation.create("scf.yield", operands=list(term.operands) + out)
        term.erase()
        as_op(list(nb.operations)[0]).erase()  # the top wait: the previous iteration's last one covers the stage
        for i, r in enumerate(loop.results):
            r.replace_all_uses_with(new_loop.results[i])
        loop.erase()
    return True


def prefetch(root, arches=range(80, 90)) -> int:
    """Prefetch the dot operands of the pipelined ``mma.sync`` loops of ``root`` (a module) when its target's arch
    is in ``arches``; returns how many."""
    mod = as_op(root)
    backend, arch = target_arch(mod)
    if backend != "cuda" or arch not in arches:
        return 0
    # the pipelined loops (their first op the pipeliner's async_wait, whatever stages each one has)
    loops = [op for op in walk(mod) if op.name == "scf.for"]
    return sum(prefetch_loop(op) for op in loops)


prefetch_pass = pass_entry("tritium-prefetch", prefetch)
