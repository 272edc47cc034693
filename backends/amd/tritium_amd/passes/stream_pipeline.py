"""The AMD stream pipeliner (Triton's AMD ``StreamPipeliner`` with its default two stages): hip targets,
``num_stages`` >= 2.

AMD has no asynchronous global-to-LDS copy we use, so the loads of the next iteration go into registers while this
iteration's dot reads LDS, and are stored to LDS at the end of the body; one LDS buffer per operand::

    %buf = ttg.local_alloc : !ttg.memdesc<shape>                       (before the loop, one per load)
    %x0 = scf.if (lb < ub) { tt.load(ptrs(lb), mask(lb)) } else { zeros }
    ttg.local_store %x0, %buf
    scf.for %iv ... iter_args(...) {
      ... the body up to its first dot: the local_loads reading %buf (replaces the local_alloc), loads left alone ...
      %next = scf.if (iv + step < ub) { tt.load(ptrs(iv + step), mask(iv + step)) } else { zeros }
      ... the dot, the rest of the body ...
      scf.if (iv + step < ub) { ttg.local_store %next, %buf }
      yield ...
    }

``ptrs(j)`` / ``mask(j)`` are the load's operand slice recomputed for iteration ``j``
(:mod:`.loop_slices`, as the cuda pipeliner does): from the induction variable and iter_args whose update reads
only themselves, the induction variable and values from outside the loop; iteration ``iv + step`` reads their
updated values (the update cloned at the top of the body, merged with the original by CSE), so nothing more is
loop-carried.  The ``scf.if`` guards are uniform branches: the prologue loads nothing when the loop runs zero
times, the last iteration loads nothing past its end (a masked K tail keeps its own mask).  Membar then puts a
barrier before the ``local_store`` (this iteration's ``local_load``\\ s read the buffer) and one before the reads
(the previous iteration's, or the prologue's, store), as for any single buffer rewritten in a loop.

A load whose thread reads fewer than 4 contiguous bytes per access is not pipelined (as Triton: the registers
held across the dot cost more than the latency hidden).  A loop is left alone when it has nested loops, a
non-integer induction variable, or ops that write memory (a store in the body could feed the next iteration's
load, which would then be issued before it); a load when its slice has side effects or regions (it depends on
another load) or reads an iter_arg whose update depends on other loop-carried values.
``TRITIUM_LOG=tritium_amd.passes.stream_pipeline`` says why.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.dialects import tt, ttg
from tritium.passes.analysis.allocation import elem_bytes
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import is_pure

from tritium.passes.ttgir.accelerate_matmul import target_arch
from tritium.passes.ir_helpers import as_op, module_int, walk
from tritium.passes.ttgir.loop_slices import LOOP, PipelinedLoad, arith, clone_ops, cmp_lt, dot_operand_loads, iter_arg_updates, \
    load_vector, loop_slice, loop_stages

log = logging.getLogger(__name__)

# ops that write memory (a body with one of them is not pipelined)
_WRITES = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_store", "ttg.async_copy_global_to_local",
           "ttg.async_tma_copy_global_to_local", "tt.print", "tt.assert")

# ops that read (shared or global) memory or only move values, none writing global memory
_READS = ("tt.load", "ttg.local_alloc", "ttg.local_load", "ttg.local_store", "ttg.convert_layout", "tt.dot",
          "ttg.warp_group_dot", "ttg.warp_group_dot_wait", "scf.if", "ttg.barrier", "tt.reduce",
          "tt.reduce.return", "tt.scan", "tt.scan.return")


class _Load(PipelinedLoad):
    def operands(self):  # the copy is a plain load into registers: ``other`` is one of its operands
        return super().operands() + ([self.other] if self.other is not None else [])


def _writes_memory(loop) -> bool:
    for op in walk(loop):
        op = as_op(op)
        if op == as_op(loop) or op.name == "scf.yield":
            continue
        if op.name in _WRITES or not (is_pure(op) or op.name in _READS):
            return True
    return False


def _zeros(ty):
    """A zero constant of tensor type ``ty`` (what a guarded-off load yields; never read)."""
    ty = ir.RankedTensorType(ty)
    elem = ty.element_type
    zero = ir.FloatAttr.get(elem, 0.0) if not isinstance(elem, ir.IntegerType) else ir.IntegerAttr.get(elem, 0)
    return ir.Operation.create("arith.constant", results=[ty],
                               attributes={"value": ir.DenseElementsAttr.get_splat(ty, zero)}).results[0]


def _guarded_loads(cands, pred, mapping, ip):
    """``scf.if pred`` yielding the loads of ``cands`` (their slices cloned with operands through ``mapping``),
    zeros else; returns the if's results, one per candidate."""
    with ip:
        branch = ir.Operation.create("scf.if", results=[c.load.results[0].type for c in cands], operands=[pred],
                                     regions=2)
    then, other = (ir.Block.create_at_start(branch.regions[i], []) for i in (0, 1))
    vals = []
    tip = ir.InsertionPoint(then)
    for c in cands:
        m = dict(mapping)
        clone_ops(c.slice, m, tip)
        with tip:
            new = c.load.clone()
            for i, v in enumerate(c.load.operands):
                new.operands[i] = m.get(v, v)
        vals.append(new.results[0])
    with tip:
        ir.Operation.create("scf.yield", operands=vals)
    with ir.InsertionPoint(other):
        ir.Operation.create("scf.yield", operands=[_zeros(c.load.results[0].type) for c in cands])
    return list(branch.results)


def _first_dot(body):
    """The first op of ``body`` that is or holds a dot (the terminator when none does)."""
    ops = [as_op(o) for o in body.operations]
    for op in ops:
        if op.name in _DOTS or any(as_op(o).name in _DOTS for o in walk(op)):
            return op
    return ops[-1]


_DOTS = (tt.DOT, "ttg.warp_group_dot")


def _local_store(value, buf):
    ir.Operation.create(ttg.LOCAL_STORE, results=[], operands=[value, buf])


def stream_pipeline_loop(loop, info) -> bool:
    loop = as_op(loop)
    body = loop.regions[0].blocks[0]
    where = tt.loc_str(loop)
    if any(as_op(o).name in (LOOP, "scf.while") for o in walk(loop) if as_op(o) != loop):
        log.debug("loop at %s not pipelined: it has nested loops", where)
        return False
    iv_ty = body.arguments[0].type
    if not isinstance(iv_ty, ir.IntegerType):
        log.debug("loop at %s not pipelined: its induction variable is %s", where, iv_ty)
        return False
    pairs = dot_operand_loads(body)
    if not pairs:
        return False
    if _writes_memory(loop):
        log.debug("loop at %s not pipelined: its body writes memory (a load ahead could pass a store)", where)
        return False
    term = as_op(list(body.operations)[-1])
    cands, arg_set, ups = [], set(), {}
    for load, alloc in pairs:
        c = _Load(load, alloc)
        if not tt.is_tensor(c.ptr.type):
            continue
        try:
            vec = load_vector(info, c.ptr, c.mask, elem_bytes(load.results[0].type))
        except Exception as e:  # no answer from the analysis: not pipelined, still correct
            log.debug("load at %s not pipelined: no vector width (%s)", tt.loc_str(load), e)
            continue
        if vec * elem_bytes(load.results[0].type) < 4:  # as Triton: a sub-dword load per thread does not pay
            log.debug("load at %s not pipelined: %d contiguous bytes per thread (under 4: the registers held "
                      "across the dot cost more than the latency hidden)", tt.loc_str(load),
                      vec * elem_bytes(load.results[0].type))
            continue
        sl = loop_slice(c.operands(), body)
        if sl is None:
            log.debug("load at %s not pipelined: its operands depend on loads or side effects", tt.loc_str(load))
            continue
        u = iter_arg_updates(body, term, sl[1], 0)
        if u is None:
            log.debug("load at %s not pipelined: its pointers depend on other loop-carried values",
                      tt.loc_str(load))
            continue
        c.slice, c.args = sl[0], sl[1] - {0}
        ups.update(u)
        arg_set |= c.args
        cands.append(c)
    if not cands:
        return False
    args = sorted(arg_set)
    lb, ub, step = loop.operands[0], loop.operands[1], loop.operands[2]
    inits = list(loop.operands[3:])
    iv = body.arguments[0]
    with loop.location:
        # before the loop: the buffers and iteration lb's tiles stored into them
        ip = ir.InsertionPoint(loop)
        bufs = []
        with ip:
            for c in cands:
                with c.load.location:  # the buffer is the load's (its source line names it)
                    bufs.append(ir.Operation.create(ttg.LOCAL_ALLOC, results=[c.alloc.results[0].type],
                                                    operands=[]).results[0])
            first = cmp_lt(lb, ub)
        at_lb = {iv: lb}
        at_lb.update({body.arguments[a]: inits[a - 1] for a in args})
        tiles = _guarded_loads(cands, first, at_lb, ip)
        with ip:
            for c, t, buf in zip(cands, tiles, bufs):
                with c.load.location:
                    _local_store(t, buf)
        # before the body's first dot (after this iteration's loads that stay: a wait for one of them would wait
        # for the loads ahead too, the counter being in order): the iter_args' next values (their updates, merged by
        # CSE with the originals), then the next iteration's tiles into registers
        top = ir.InsertionPoint(_first_dot(body))
        at_next = {}
        with top:
            for a in args:
                sl, y = ups[a]
                m = {}
                clone_ops(sl, m, top)
                at_next[body.arguments[a]] = m.get(y, y)
            iv_n = arith("arith.addi", iv, step)
            at_next[iv] = iv_n
            more = cmp_lt(iv_n, ub)
        nexts = _guarded_loads(cands, more, at_next, top)
        for c, buf in zip(cands, bufs):
            c.alloc.results[0].replace_all_uses_with(buf)
        # the end of the body: the next tiles into the buffers (membar: a barrier before, after this iteration's
        # reads), under the same guard: its own basic block, which LLVM's scheduler does not hoist above the dot
        # (a store early in the block waits for the loads ahead right after they were issued)
        with ir.InsertionPoint(as_op(list(body.operations)[-1])):
            branch = ir.Operation.create("scf.if", results=[], operands=[more], regions=2)
        ir.Block.create_at_start(branch.regions[1], [])
        with ir.InsertionPoint(ir.Block.create_at_start(branch.regions[0], [])):
            for c, t, buf in zip(cands, nexts, bufs):
                with c.load.location:
                    _local_store(t, buf)
            ir.Operation.create("scf.yield", operands=[])
        with ir.InsertionPoint(branch.regions[1].blocks[0]):
            ir.Operation.create("scf.yield", operands=[])
        for c in cands:
            c.alloc.erase()
            if not list(c.load.results[0].uses):
                c.load.erase()
    return True


def stream_pipeline(root, *, force: bool = False) -> int:
    """Pipeline the loops of ``root`` (a module) on hip targets with ``num_stages`` >= 2; returns how many.
    ``force``: whatever the module's target and stages (tests)."""
    mod = as_op(root)
    backend, _ = target_arch(mod)
    if not force and backend != "hip":
        return 0
    stages = module_int(mod, ttg.NUM_STAGES, 1)
    loops = [op for op in walk(mod) if op.name == LOOP and (force or loop_stages(op, stages) >= 2)]
    if not loops:
        return 0
    from tritium.passes.analysis.axis_info import AxisInfoAnalysis

    info = AxisInfoAnalysis(mod)
    return sum(stream_pipeline_loop(op, info) for op in loops)


stream_pipeline_pass = pass_entry("tritium-stream-pipeline", stream_pipeline)
