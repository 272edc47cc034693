"""The software pipeliner for loops that feed dots (Triton's ``PipelineLoops`` with ``cp.async``, sm_80+).

A load in an ``scf.for`` body whose only use is a ``ttg.local_alloc`` (the dot-operand path of
optimize_dot_operands) is issued ``S - 1`` iterations ahead (``S`` = the loop's ``tt.num_stages`` from
``tl.range(..., num_stages=S)``, else the kernel's ``num_stages``, the module's ``ttg.num-stages``) as asynchronous copies into a stack of ``S`` buffers::

    %buf = ttg.local_alloc : !ttg.memdesc<S x ...>                     (before the loop)
    prologue, i = 0 .. S-2:  async_copy(ptrs(i) -> %buf[i], mask(i) & (lb + i*step < ub)); async_commit_group
                             (a group per copy, as Triton commits them: n copies a stage, n * (S-2) groups below)
    scf.for %iv ... iter_args(..., %x_ahead.., %read = 0, %write = S-1) {
      ttg.async_wait {num = n * (S-2)}                                  (this iteration's groups have landed)
      %tile = ttg.memdesc_subview %buf[%read]                           (replaces the local_alloc)
      async_copy(ptrs(iv + (S-1)*step) -> %buf[%write], mask & (iv + (S-1)*step < ub)); async_commit_group
      ... the body, its local_loads reading %tile ...
      yield ..., update(%x_ahead), next(%read), next(%write)
    }
    ttg.async_wait {num = 0}

``ptrs(j)`` / ``mask(j)`` are the load's operand slice (the ops of the body it depends on) recomputed for
iteration ``j``: from the induction variable and from iter_args ``%x`` whose yielded value depends only on ``%x``
itself, the induction variable and values defined outside the loop (the ``a_ptrs += BLOCK_K * stride`` of a
matmul).  Such an ``%x`` gets an extra iter_arg ``%x_ahead`` carried ``S - 1`` iterations ahead (its prologue
values by applying the update ``S - 1`` times); the original stays for its other users (DCE removes it when
none are left).  Membar then puts a barrier before the copies (the stage they overwrite was read in the
previous iteration) and before the reads (after the wait).

A load is left alone (and says why with ``TRITIUM_LOG``) when: its slice has side effects or regions, an
iter_arg's update depends on other loop-carried values, its ``other`` is not +0 (cp.async fills zero bits), or a thread's contiguous
share is narrower than 4 bytes (``cp.async`` copies 4, 8 or 16 bytes).  Loops with nested loops, and targets other
than cuda sm_80+, are not pipelined.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.dialects import tt, ttg
from tritium.passes.analysis.allocation import elem_bytes
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import is_zero

from tritium.passes.ttgir.accelerate_matmul import target_arch
from tritium.passes.ir_helpers import as_op, layout_of, module_int, walk
from tritium.passes.ttgir.loop_slices import LOOP, arith as _arith, clone_ops as _clone, cmp_lt as _cmp_lt, const as _const, \
    const_before as _const_at, dot_operand_loads, iter_arg_updates as _updates, load_vector, loop_stages, \
    PipelinedLoad, loop_slice as _slice, next_op as _next_op
from .tma_lowering import barrier_type, buffer_type, copy_in, init_barrier, is_tma_load, subview, tma_consumer, \
    transposed_type, use_tile, wait_barrier, wgmma_reads

log = logging.getLogger(__name__)


class _TMALoad:
    """A descriptor load through a TMA tensor map whose tile a dot reads (:func:`.tma_lowering.tma_consumer`)."""
    tma = True

    def __init__(self, load, kind, alloc, trans):
        self.load, self.kind, self.alloc, self.trans = load, kind, alloc, trans
        self.desc, self.indices = load.operands[0], list(load.operands[1:])

    def operands(self):
        return list(self.indices)


def _transposed_operand_loads(body) -> list:
    """``(load, alloc, trans)`` for each ``tt.load`` in ``body`` whose one use is a 2-D ``tt.trans`` whose one use is
    a ``ttg.local_alloc`` that only wgmma reads (``tl.dot(x, tl.trans(w))`` with pointer loads, Liger-Kernel's MoE
    kernels): the tile is copied as loaded and the dot reads its transposed view (``ttg.memdesc_trans``), as the
    TMA path does, instead of a transpose in registers and a synchronous copy every iteration."""
    out = []
    for op in body.operations:
        op = as_op(op)
        if op.name != tt.LOAD or len(tt.shape_of(op.results[0].type)) != 2:
            continue
        uses = list(op.results[0].uses)
        if len(uses) != 1 or as_op(uses[0].owner).name != tt.TRANS:
            continue
        trans = as_op(uses[0].owner)
        t_uses = list(trans.results[0].uses)
        if len(t_uses) != 1 or as_op(t_uses[0].owner).name != ttg.LOCAL_ALLOC:
            continue
        alloc = as_op(t_uses[0].owner)
        if alloc.operation.block == body and trans.operation.block == body and \
                wgmma_reads(alloc.results[0], alloc.results[0].type):
            out.append((op, alloc, trans))
    return out


def _stage_type(c):
    """The type of one stage of ``c``'s buffer: its alloc's, or the untransposed view of it."""
    ty = c.alloc.results[0].type
    return transposed_type(ty) if c.trans is not None else ty


def _candidates(body, info):
    """Loads to pipeline and the iter_arg numbers (block argument numbers) their slices read."""
    out = []
    for op in body.operations:
        op = as_op(op)
        if is_tma_load(op):
            kind, alloc, trans = tma_consumer(op)
            if kind != "load" and alloc.operation.block == body:
                out.append(_TMALoad(op, kind, alloc, trans))
    for op, alloc, trans in [(ld, a, None) for ld, a in dot_operand_loads(body)] + _transposed_operand_loads(body):
        c = PipelinedLoad(op, alloc)
        c.trans = trans
        where = tt.loc_str(op)
        if c.other is not None and not is_zero(c.other):
            log.debug("load at %s not pipelined: its other is not zero (cp.async fills zeros)", where)
            continue
        if not tt.is_tensor(c.ptr.type):
            continue
        lay = layout_of(c.ptr)
        eb = elem_bytes(op.results[0].type)
        try:
            vec = load_vector(info, c.ptr, c.mask, eb)
        except Exception as e:  # no answer from the analysis: not pipelined, still correct
            log.debug("load at %s not pipelined: no vector width (%s)", where, e)
            continue
        slay = ttg.memdesc_layout(_stage_type(c))[2]
        # the buffer's contiguous dim is another one (a K-major wgmma operand loaded N-major)
        if slay.fast_slow(len(tt.shape_of(c.ptr.type)))[0] != lay.order[0]:
            vec = 1
        if vec * eb < 4:
            log.debug("load at %s not pipelined: %d contiguous bytes per thread (cp.async needs 4)", where,
                      vec * eb)
            continue
        out.append(c)
    order = {as_op(o): i for i, o in enumerate(body.operations)}
    return sorted(out, key=lambda c: order[as_op(c.load)])  # program order, TMA and pointer loads together


def _issue(buf, index, ptr, mask, pred):
    """``async_copy(ptr -> buf[index], mask & pred)`` at the current insertion point."""
    ptr_ty = ir.RankedTensorType(ptr.type)
    i1 = ir.IntegerType.get_signless(1)
    mask_ty = ir.RankedTensorType.get(list(ptr_ty.shape), i1, ptr_ty.encoding)
    p = ir.Operation.create(tt.SPLAT, results=[mask_ty], operands=[pred]).results[0]
    m = p if mask is None else _arith("arith.andi", mask, p)
    sub = subview(buf, index)
    ir.Operation.create(ttg.ASYNC_COPY_GLOBAL_TO_LOCAL, results=[], operands=[ptr, sub, m],
                        attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 1, 0])})
    return sub


def async_wait(num: int):
    """``ttg.async_wait {num}`` at the insertion point."""
    return ir.Operation.create(ttg.ASYNC_WAIT, attributes={"num": ir.IntegerAttr.get(
        ir.IntegerType.get_signless(32), num)})


def pipeline_loop(loop, stages: int, info) -> bool:
    loop = as_op(loop)
    body = loop.regions[0].blocks[0]
    if any(as_op(o).name in (LOOP, "scf.while") for o in walk(loop) if as_op(o) != loop):
        return False
    iv_ty = body.arguments[0].type
    if not isinstance(iv_ty, ir.IntegerType):
        log.debug("loop at %s not pipelined: its induction variable is %s", tt.loc_str(loop), iv_ty)
        return False
    term = as_op(list(body.operations)[-1])
    cands = []
    arg_set = set()
    for c in _candidates(body, info):
        sl = _slice(c.operands(), body)
        if sl is None:
            log.debug("load at %s not pipelined: its operands have side effects", tt.loc_str(c.load))
            continue
        ups = _updates(body, term, sl[1], 0)
        if ups is None:
            log.debug("load at %s not pipelined: its pointers depend on other loop-carried values",
                      tt.loc_str(c.load))
            continue
        c.slice, c.args, c.ups = sl[0], sl[1] - {0}, ups
        cands.append(c)
        arg_set |= c.args
    if not cands:
        return False
    args = sorted(arg_set)
    ups = {}
    for c in cands:
        ups.update(c.ups)
    lb, ub, step = loop.operands[0], loop.operands[1], loop.operands[2]
    inits = list(loop.operands[3:])
    i32 = ir.IntegerType.get_signless(32)
    S = stages
    loc = loop.location
    with loc:
        # the buffers and the prologue, before the loop
        ip = ir.InsertionPoint(loop)
        bufs, bars = [], {}
        any_cp = any(not c.tma for c in cands)
        with ip:
            for c in cands:
                if c.tma:  # the tensor map's layout, and a barrier per stage
                    stack_ty = buffer_type(tt.desc_block_type(c.desc.type), (S,))
                    bars[c] = ir.Operation.create(ttg.LOCAL_ALLOC, results=[barrier_type(S, loop.context)],
                                                  operands=[]).results[0]
                    for i in range(S):
                        init_barrier(subview(bars[c], _const(i, i32)))
                else:
                    shape, elem, lay = ttg.memdesc_layout(_stage_type(c))
                    stack_ty = ttg.memdesc_type((S,) + tuple(shape), elem, lay, loop.context)
                with c.load.location:  # the stack is the load's (its source line names it)
                    bufs.append(ir.Operation.create(ttg.LOCAL_ALLOC, results=[stack_ty], operands=[]).results[0])
            if bars:  # every thread sees the barriers initialised before it waits on one (once, not in the loop)
                ir.Operation.create(ttg.BARRIER)
            cur = {a: inits[a - 1] for a in args}
            for i in range(S - 1):
                iv_i = _arith("arith.addi", lb, _arith("arith.muli", step, _const(i, iv_ty)))
                pred = _cmp_lt(iv_i, ub)
                for c, buf in zip(cands, bufs):
                    m = {body.arguments[0]: iv_i}
                    m.update({body.arguments[a]: cur[a] for a in args})
                    _clone(c.slice, m, ip)
                    with c.load.location:  # a copy keeps its load's source line
                        if c.tma:
                            _issue_tma(c, buf, bars[c], _const(i, i32), [m.get(v, v) for v in c.indices], pred)
                            continue
                        ptr = m.get(c.ptr, c.ptr)
                        mask = m.get(c.mask, c.mask) if c.mask is not None else None
                        _issue(buf, _const(i, i32), ptr, mask, pred)
                        ir.Operation.create(ttg.ASYNC_COMMIT_GROUP)  # a group per copy, as Triton commits
                # the iter_args of iteration i + 1
                nxt = {}
                for a in args:
                    m = {body.arguments[0]: iv_i, body.arguments[a]: cur[a]}
                    sl, y = ups[a]
                    _clone(sl, m, ip)
                    nxt[a] = m.get(y, y)
                cur = nxt
        # the new loop: old iter_args + the ahead ones + read / write stage indices
        new_inits = inits + [cur[a] for a in args] + [_const_at(loop, 0, i32), _const_at(loop, S - 1, i32),
                                                      _const_at(loop, 0, i32)]
        with ir.InsertionPoint(loop):
            new_loop = ir.Operation.create(LOOP, results=[v.type for v in new_inits],
                                           operands=[lb, ub, step] + new_inits, regions=1)
        nb = ir.Block.create_at_start(new_loop.regions[0], [iv_ty] + [v.type for v in new_inits])
        n_old = len(inits)
        with ir.InsertionPoint(nb):
            # this iteration's stage has landed: cp.async groups (a no-op without any), TMA barriers (below)
            wait = async_wait((S - 2) * sum(not c.tma for c in cands))
        anchor = wait
        for op in list(body.operations):
            op = as_op(op)
            op.move_after(anchor)
            anchor = op
        for i, a in enumerate(body.arguments):
            a.replace_all_uses_with(nb.arguments[i])
        iv = nb.arguments[0]
        ahead = {a: nb.arguments[1 + n_old + k] for k, a in enumerate(args)}
        read, write = nb.arguments[1 + n_old + len(args)], nb.arguments[2 + n_old + len(args)]
        phase = nb.arguments[3 + n_old + len(args)]
        # after the wait: this iteration's tiles, then the copies of iteration iv + (S-1) * step (after the
        # asynchronous dot's wait when there is one: the stage they overwrite is the one its previous instance read)
        after_wait = _next_op(wait)
        with ir.InsertionPoint(after_wait), loc:
            for c, buf in zip(cands, bufs):
                if c.tma:
                    wait_barrier(subview(bars[c], read), phase)
                tile = subview(buf, read)
                if c.tma:
                    use_tile(c.kind, c.alloc, c.trans, tile)
                elif c.trans is not None:  # the dot reads the transposed view of the tile as loaded
                    view = ir.Operation.create(ttg.MEMDESC_TRANS, results=[c.alloc.results[0].type], operands=[tile])
                    c.alloc.results[0].replace_all_uses_with(view.results[0])
                else:
                    c.alloc.results[0].replace_all_uses_with(tile)
        old_term = as_op(list(nb.operations)[-1])
        in_flight = _make_dots_async(nb, old_term)
        if in_flight is not None:  # the copies last: every dot of the previous iteration has been waited for
            after_wait = old_term
        ip = ir.InsertionPoint(after_wait)
        with ip:
            iv_a = _arith("arith.addi", iv, _arith("arith.muli", step, _const(S - 1, iv_ty)))
            pred = _cmp_lt(iv_a, ub)
            for c, buf in zip(cands, bufs):
                m = {iv: iv_a}
                m.update({nb.arguments[a]: ahead[a] for a in args})
                _clone(c.slice, m, ip)
                with c.load.location:
                    if c.tma:
                        _issue_tma(c, buf, bars[c], write, [m.get(v, v) for v in c.load.operands[1:]], pred)
                        continue
                    # the load moved into the new body: its operands are the new body's values now
                    ptr, mask = c.load.operands[0], (c.load.operands[1] if c.mask is not None else None)
                    _issue(buf, write, m.get(ptr, ptr), m.get(mask, mask) if mask is not None else None, pred)
                    ir.Operation.create(ttg.ASYNC_COMMIT_GROUP)
            new_ahead = {}
            for a in args:
                sl, y = ups[a]
                m = {iv: iv_a, nb.arguments[a]: ahead[a]}
                _clone(sl, m, ip)
                new_ahead[a] = m.get(y, y)
            one, last = _const(1, i32), _const(S - 1, i32)
            zero = _const(0, i32)

            def nxt(x):
                inc = _arith("arith.addi", x, one)
                wrap = ir.Operation.create("arith.cmpi", results=[ir.IntegerType.get_signless(1)],
                                           operands=[x, last],
                                           attributes={"predicate": ir.IntegerAttr.get(
                                               ir.IntegerType.get_signless(64), 0)}).results[0]
                return ir.Operation.create("arith.select", results=[i32], operands=[wrap, zero, inc]).results[0]

            r2, w2 = nxt(read), nxt(write)
            # the barriers' phase flips each time the read stage wraps around
            wrapped = ir.Operation.create("arith.cmpi", results=[ir.IntegerType.get_signless(1)],
                                          operands=[read, last], attributes={"predicate": ir.IntegerAttr.get(
                                              ir.IntegerType.get_signless(64), 0)}).results[0]
            flipped = _arith("arith.xori", phase, one)
            p2 = ir.Operation.create("arith.select", results=[i32], operands=[wrapped, flipped, phase]).results[0]
        # the yield: old values + the new iter_args
        with ir.InsertionPoint(old_term):
            ir.Operation.create("scf.yield", operands=list(old_term.operands) + [new_ahead[a] for a in args]
                                + [r2, w2, p2])
        old_term.erase()
        for c in cands:
            if not c.tma:
                c.alloc.erase()
                if c.trans is not None:
                    c.trans.erase()
            if not list(c.load.results[0].uses):
                c.load.erase()
        for i, r in enumerate(loop.results):
            r.replace_all_uses_with(new_loop.results[i])
        loop.erase()
        after = _next_op(new_loop)
        with ir.InsertionPoint(after):
            if in_flight:  # the last dots (and the buffers they read) until here
                _wait_after_loop(new_loop, in_flight, bufs, lb, ub)
            if any_cp:
                async_wait(0)
        if not any_cp:
            wait.erase()
    return True


def _issue_tma(c, buf, bars, index, indices, pred):
    """The TMA copy of ``c`` (at ``indices``) into stage ``index`` of ``buf``, completing on its barrier."""
    copy_in(c.desc, indices, subview(buf, index), subview(bars, index), pred)


def _wait_after_loop(loop, in_flight, bufs, lb, ub) -> None:
    """``ttg.warp_group_dot_wait {pendings = 0}`` after ``loop`` of its results still in flight (and the stacks
    their dots read), the loop and the wait inside ``scf.if lb < ub`` whose else yields the loop's initial values:
    LLVM rotates a loop behind a guard whose zero-trip path sets the accumulators' registers to their initial
    values; were that path to reach the wait, ptxas would count those moves inside the wgmma pipeline and
    serialise every wgmma (C7515)."""
    loop = as_op(loop)
    uses = [(as_op(u.owner), u.operand_number, j) for j, r in enumerate(loop.results) for u in r.uses]
    with ir.InsertionPoint(loop), loop.location:
        branch = ir.Operation.create("scf.if", results=[r.type for r in loop.results], operands=[_cmp_lt(lb, ub)],
                                     regions=2)
    then, other = (ir.Block.create_at_start(branch.regions[i], []) for i in (0, 1))
    with ir.InsertionPoint(other), loop.location:
        ir.Operation.create("scf.yield", operands=list(loop.operands)[3:])
    with ir.InsertionPoint(then), loop.location:
        res = [loop.results[k] for k in in_flight]
        keep = bufs[:max(0, tt.MIXED_SLOTS - len(res))]
        w0 = _wait_op(res + keep, 0)
        out = list(loop.results)
        for j, k in enumerate(in_flight):
            out[k] = w0.results[j]
        ir.Operation.create("scf.yield", operands=out)
    loop.operation.move_before(w0)
    for owner, i, j in uses:
        owner.operands[i] = branch.results[j]


_ASYNC_ACC = ("f32", "i32")


def _in_block(op, body):
    """The op of ``body`` that is or contains ``op`` (None when outside)."""
    op = as_op(op)
    while op is not None and op.operation.block != body:
        op = as_op(op.parent) if op.parent is not None else None
    return op


def _wait_op(values, pendings: int):
    """A ``ttg.warp_group_dot_wait {pendings}`` of ``values`` at the insertion point."""
    return tt.create_op(ttg.WARP_GROUP_DOT_WAIT, results=[v.type for v in values], operands=list(values),
                        attributes={"pendings": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), pendings)})


def _wait(before, values, pendings: int):
    """A ``ttg.warp_group_dot_wait {pendings}`` of ``values`` before ``before``."""
    with ir.InsertionPoint(before), before.location:
        return _wait_op(values, pendings)


def _make_dots_async(body, term):
    """Make the warp_group_dots of a pipelined loop body asynchronous (Triton's asynchronous wgmma); returns the
    yield positions whose values are still in flight when the loop ends (None: nothing changed).

    Each dot gets a ``ttg.warp_group_dot_wait`` before the first op that reads its result: in the same iteration
    (``pendings`` = the dots issued in between), or, for a result only yielded, before the first reader of its
    iter_arg in the next iteration (``pendings`` = the dots issued in between, across the back edge), the iter_arg
    tied through it; a result that only goes back into the same dot as its accumulator (a matmul's) is waited
    for with ``pendings = 1`` right after the dot (its previous instance done).  Either way every dot of
    iteration ``i - 1`` is done by the end of iteration ``i``: the copies into the stage it read go last.  Dots
    must be directly in the body, accumulate in f32 / s32 and not in fp8 partial sums (:func:`_async_ok`), and
    read no tile the body copies from registers (:func:`_operand_rewritten_in`)."""
    dots = [as_op(o) for o in walk(as_op(body.owner)) if as_op(o).name == ttg.WARP_GROUP_DOT]
    if not dots or any(d.operation.block != body or not _async_ok(d) or _operand_rewritten_in(d, body)
                       for d in dots):
        return None

    def pos(op):
        return [as_op(o) for o in body.operations].index(op)

    def issued_between(a, b):  # dots after op a and before op b in program order (wrapping around)
        lo, hi = pos(a), pos(b)
        ps = [pos(x) for x in dots]
        return sum(lo < p < hi for p in ps) if lo < hi else sum(p > lo or p < hi for p in ps)

    in_flight = []
    for d in dots:
        d.attributes["isAsync"] = ir.BoolAttr.get(True)
        res = d.results[0]
        readers = [(as_op(u.owner), u.operand_number) for u in res.uses]
        # a yield of an scf.if of the body whose result the loop only yields (a fused loop's inner values, handed
        # on by the branch that is not the last inner trip): passes the result on like the loop's own yield
        passed = {}
        for o, i in readers:
            if o.name == "scf.yield" and o.operation.block != body:
                owner = as_op(o.parent)
                if owner.name == "scf.if" and owner.operation.block == body:
                    uses = [(as_op(u.owner), u.operand_number) for u in owner.results[i].uses]
                    # only into the loop's yield, and the iter_arg read only as this dot's accumulator
                    if uses and all(x == term and all(
                            (as_op(a.owner), a.operand_number) == (d, 2) for a in body.arguments[j + 1].uses)
                            for x, j in uses):
                        passed[(o, i)] = [j for _, j in uses]
        readers = [(o, i) for o, i in readers if (o, i) not in passed]
        src = res  # what later waits take: the depth-1 wait's result once there is one (one live accumulator)
        if passed:
            w1 = _wait(_next_op(d), [res], 1)  # the accumulator's previous instance done
            src = w1.results[0]
            for (o, i), js in passed.items():
                o.operands[i] = src
                in_flight.extend(js)
        nested = [(o, i) for o, i in readers if o != term and o.operation.block != body]
        if nested and len(nested) + sum(o == term for o, _ in readers) == len(readers):
            # read only inside regions (a fused loop's epilogue under `if last inner trip`) and yielded: a full
            # wait where it is read, so the other iterations keep the dot in flight
            by_block = {}
            for o, i in nested:
                by_block.setdefault(o.operation.block, []).append((o, i))
            for blk, rs in by_block.items():
                order = [as_op(x) for x in blk.operations]
                first = min((o for o, _ in rs), key=order.index)
                w = _wait(first, [src], 0)
                for o, i in rs:
                    o.operands[i] = w.results[0]
            readers = [(o, i) for o, i in readers if o == term]
        inner = [_in_block(o, body) for o, _ in readers if o != term]
        if inner:  # read in this iteration
            first = min(inner, key=pos)
            w = _wait(first, [res], issued_between(d, first))
            at = pos(first)
            for o, i in readers:
                if o == term or pos(_in_block(o, body)) >= at:
                    o.operands[i] = w.results[0]
            continue
        ks = [i for o, i in readers if o == term]
        for k in ks:
            arg = body.arguments[k + 1]
            arg_readers = [(as_op(u.owner), u.operand_number) for u in arg.uses]
            if all(o == d and i == 2 for o, i in arg_readers):  # only this dot's accumulator: a matmul
                w = _wait(_next_op(d), [res], 1)
                term.operands[k] = w.results[0]
            else:
                first = min((_in_block(o, body) for o, _ in arg_readers), key=pos)
                # a wait for everything already there before the reader (attention's q @ k): the iter_arg joins it
                full = [w for w in body.operations if as_op(w).name == ttg.WARP_GROUP_DOT_WAIT and
                        pos(as_op(w)) < pos(first) and as_op(w).attributes["pendings"].value == 0]
                if full:
                    w = _join_wait(as_op(full[-1]), arg)
                else:
                    w = _wait(first, [arg], issued_between(d, first))
                for o, i in arg_readers:
                    o.operands[i] = w.results[-1]
            in_flight.append(k)
    return sorted(set(in_flight))


def _join_wait(w, value):
    """``w`` (a warp_group_dot_wait) remade with ``value`` as its last input; returns the new wait."""
    new = _wait(w, list(w.operands) + [value], w.attributes["pendings"].value)
    for old_r, new_r in zip(w.results, new.results):
        old_r.replace_all_uses_with(new_r)
    w.erase()
    return new


def _operand_rewritten_in(dot, body) -> bool:
    """Whether a shared-memory operand of ``dot`` is a buffer the loop body writes from registers
    (``ttg.local_alloc`` of a value, seen through views): not a stage of the pipeline.  Such a buffer is written
    again by the next iteration, and its shared-memory offset may be another such buffer's in the same iteration
    (a weight tile loaded without ``cp.async`` for the first of two dots, then the second's), while an
    asynchronous wgmma could still be reading it: the dots of such a loop stay synchronous, as Triton keeps dots
    that cannot be "properly async"."""
    for v in list(dot.operands)[:2]:
        while isinstance(v, ir.OpResult):
            op = as_op(v.owner)
            if op.name in (ttg.MEMDESC_TRANS, ttg.MEMDESC_SUBVIEW):
                v = op.operands[0]
                continue
            if op.name == ttg.LOCAL_ALLOC and len(op.operands) and _inside(op, as_op(body.owner)):
                return True
            break
    return False


def _inside(op, loop) -> bool:
    """Whether ``op`` is nested in ``loop`` (the walk up stops at the function)."""
    while op.parent is not None:
        op = as_op(op.parent)
        if op == loop:
            return True
        if op.name in ("tt.func", "builtin.module"):
            return False
    return False


def _async_ok(dot) -> bool:
    """An asynchronous dot keeps its accumulator in the instruction's registers: f32 / s32, no fp8 partial
    accumulators (``maxNumImpreciseAcc`` at most K: the lowering adds them to the accumulator after waiting for
    them, so such a dot is complete when it returns)."""
    if str(tt.elem_of(dot.results[0].type)) not in _ASYNC_ACC:
        return False
    b_shape, b_elem, _ = ttg.memdesc_layout(dot.operands[1].type)
    imprecise = dot.attributes["maxNumImpreciseAcc"].value if "maxNumImpreciseAcc" in dot.attributes else 0
    return not (tt.is_fp8(b_elem) and int(imprecise) <= int(b_shape[0]))


def pipeline_loops(root) -> int:
    """Pipeline the loops of ``root`` (a module); returns how many."""
    mod = as_op(root)
    stages = module_int(mod, ttg.NUM_STAGES, 1)
    backend, arch = target_arch(mod)
    if backend != "cuda" or arch is None or arch < 80:
        return 0
    # the loops first: pipelining erases ops (the loop, its loads), so the walk must not be read afterwards.  A
    # loop's own `tl.range(..., num_stages=k)` (its tt.num_stages) overrides the kernel's num_stages, as in Triton
    loops = [(op, loop_stages(op, stages)) for op in walk(mod) if op.name == LOOP]
    loops = [(op, s) for op, s in loops if s >= 2]
    if not loops:
        return 0
    from tritium.passes.analysis.axis_info import AxisInfoAnalysis

    info = AxisInfoAnalysis(mod)
    return sum(pipeline_loop(op, s, info) for op, s in loops)



pipeline_loops_pass = pass_entry("tritium-pipeline", pipeline_loops)
