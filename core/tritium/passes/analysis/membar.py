"""Membar: insert ``ttg.barrier`` between shared-memory accesses that could race (Triton's ``Membar``).

Runs after :mod:`allocation` (it reads ``allocation.offset`` / ``allocation.size``).  Each op's shared-memory
accesses are byte intervals:

====================================  ===================================================================
op                                    accesses
====================================  ===================================================================
op with a scratch buffer              writes and reads its interval (convert_layout, reduce, scan, scalar
                                      atomics, calls of functions using shared memory); the lowering puts
                                      the barrier *between* its own write and read
``ttg.local_alloc`` with a source     writes its buffer
``ttg.local_store``                   writes the buffer of its destination
``ttg.local_load``                    reads the buffer of its source
``ttg.warp_group_dot``                reads the buffers of its memdesc operands (wgmma)
``ttg.async_copy_global_to_local``    writes the buffer of its destination (when issued: the copy completes by the
                                      ``ttg.async_wait`` the program puts before its readers)
``ttg.async_wait``                    writes every buffer a ``cp.async`` of the function writes, without a barrier
                                      before it: each thread waits for its own copies only, so a reader after it
                                      needs a barrier even when one followed the copies' issue
``ttg.init_barrier``                  writes its mbarrier (after a read of it: a wait on its previous use; not
                                      after writes: the thread that initialises is the one that copies)
``ttg.wait_barrier``                  reads its mbarrier
``ttg.async_tma_copy_global_to_local``  writes its destination for the hazards before it (a
                                      barrier before a copy into a buffer still being read) but leaves nothing
                                      pending: every thread waits on the mbarrier before reading the data, which
                                      makes the copy's writes visible to it
``ttg.async_tma_copy_local_to_global``  contains a CTA barrier (its lowering fences the generic writes of its
                                      source and syncs), then reads its source (one thread's bulk copy, done when
                                      the op ends)
``ttg.barrier``                       clears everything pending
====================================  ===================================================================

(the buffer of a memdesc is the interval of the ``ttg.local_alloc`` that defines it, through ``ttg.memdesc_subview``
to the whole stack; an unknown memdesc counts as
all of shared memory).  Walking the function in program order with the set of intervals read and written since
the last barrier, an op gets a barrier before it when it reads what is pending as written (RAW), or writes what is
pending as read or written (WAR, WAW).  Control flow, conservatively: ``scf.if`` joins (unions) what both branches
leave pending; ``scf.for`` / ``scf.while`` bodies are re-walked with what the previous iteration leaves pending
until nothing changes (a hazard between the end of one iteration and the start of the next gets its barrier inside
the loop), and the loop leaves the union of its entry and its body's exit.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import as_op as _as_op, walk as _walk

from .allocation import OFFSET_ATTR, SHARED_ATTR, SIZE_ATTR

BARRIER = "ttg.barrier"
TMA_LOAD, TMA_STORE = "ttg.async_tma_copy_global_to_local", "ttg.async_tma_copy_local_to_global"
ASYNC_WAIT = "ttg.async_wait"
_LOOPS = ("scf.for", "scf.while")



def _interval(op):
    op = _as_op(op)
    if OFFSET_ATTR not in op.attributes:
        return None
    off = int(op.attributes[OFFSET_ATTR].value)
    size = int(op.attributes[SIZE_ATTR].value) if SIZE_ATTR in op.attributes else 1
    return (off, off + size)


class _Membar:
    def __init__(self, func, total: int):
        self.func = func
        self.everything = (0, max(total, 1 << 30))
        self.inserted = 0
        self.async_buffers = frozenset(self._buffer_of(o.operands[1]) for o in _walk(func)
                                       if o.name == "ttg.async_copy_global_to_local")

    def _buffer_of(self, memdesc):
        owner = memdesc.owner
        if not isinstance(owner, ir.Block) and _as_op(owner).name == "ttg.memdesc_subview":
            return self._buffer_of(_as_op(owner).operands[0])  # a stage of a stack: the whole stack
        if not isinstance(owner, ir.Block):
            iv = _interval(_as_op(owner))
            if iv is not None:
                return iv
        return self.everything

    def accesses(self, op):
        """(reads, writes): tuples of intervals."""
        name = op.name
        if name == "ttg.local_alloc":
            iv = _interval(op)
            return ((), (iv,)) if len(op.operands) and iv else ((), ())
        if name == "ttg.local_store":
            return (), (self._buffer_of(op.operands[1]),)
        if name == "ttg.local_load":
            return (self._buffer_of(op.operands[0]),), ()
        if name == "ttg.async_copy_global_to_local":  # its write lands by the async_wait; ordered as issued
            return (), (self._buffer_of(op.operands[1]),)
        if name == "ttg.wait_barrier":
            return (self._buffer_of(op.operands[0]),), ()
        if name == "ttg.warp_group_dot":  # wgmma reads its memdesc operands (a may be registers)
            mems = [v for v in list(op.operands)[:2] if str(v.type).startswith("!ttg.memdesc")]
            return tuple(self._buffer_of(v) for v in mems), ()
        if name == "ttg.local_dealloc":
            return (), ()
        iv = _interval(op)
        if iv is not None:
            return (iv,), (iv,)
        return (), ()

    @staticmethod
    def _overlap(a, b) -> bool:
        return a[0] < b[1] and b[0] < a[1]

    def _hazard(self, state, reads, writes) -> bool:
        for kind, iv in state:
            for r in reads:
                if kind == "w" and self._overlap(iv, r):
                    return True
            for w in writes:
                if self._overlap(iv, w):
                    return True
        return False

    def _insert(self, op, insert: bool) -> None:
        if insert:
            with ir.InsertionPoint(op):
                ir.Operation.create(BARRIER, results=[], operands=[], loc=op.location)
            self.inserted += 1

    def block(self, block, state: frozenset, insert: bool) -> frozenset:
        for op in list(block.operations):
            state = self.op(_as_op(op), state, insert)
        return state

    def region(self, region, state, insert):
        out = frozenset()
        any_block = False
        for b in region.blocks:
            out |= self.block(b, state, insert)
            any_block = True
        return out if any_block else state

    def op(self, op, state: frozenset, insert: bool) -> frozenset:
        name = op.name
        if name == BARRIER:
            return frozenset()
        if name in _LOOPS:
            entry = state
            for _ in range(64):
                out = frozenset()
                for r in op.regions:  # while: before then after; for: the body
                    out = self.region(r, entry if not out else out, False)
                new = entry | out
                if new == entry:
                    break
                entry = new
            out = frozenset()
            for r in op.regions:
                out = self.region(r, entry if not out else out, insert)
            return entry | out
        if name == "scf.if":
            outs = [self.region(r, state, insert) for r in op.regions if len(r.blocks)]
            if len(outs) < 2:
                outs.append(state)
            res = frozenset()
            for o in outs:
                res |= o
            return res
        if len(op.regions):
            for r in op.regions:
                state = self.region(r, state, insert)
            return state
        if name == ASYNC_WAIT:  # other threads' cp.async writes land here: pending for the readers after it
            return state | {("w", iv) for iv in self.async_buffers}
        if name == TMA_STORE:  # its own barrier first
            return frozenset({("r", self._buffer_of(op.operands[-1]))})
        if name == TMA_LOAD:  # hazards as a write; visible through the mbarrier, nothing left pending (its
            dst = self._buffer_of(tt.operand_groups(op)["dst"][0])  # mbarrier: the thread that initialised it)
            if self._hazard(state, (), (dst,)):
                self._insert(op, insert)
                state = frozenset()
            return state
        if name == "ttg.init_barrier":  # one thread initialises: only waits on the barrier's last use conflict
            bar = self._buffer_of(op.operands[0])
            if any(kind == "r" and self._overlap(iv, bar) for kind, iv in state):
                self._insert(op, insert)
                state = frozenset()
            return state | {("w", bar)}
        reads, writes = self.accesses(op)
        if not reads and not writes:
            return state
        if self._hazard(state, reads, writes):
            self._insert(op, insert)
            state = frozenset()
        return state | {("r", iv) for iv in reads} | {("w", iv) for iv in writes}


def insert_barriers(module) -> int:
    """Insert the barriers every function of ``module`` needs; returns how many were inserted."""
    module = _as_op(module)
    total = int(module.attributes[SHARED_ATTR].value) if SHARED_ATTR in module.attributes else 0
    n = 0
    with module.context:
        for f in module.regions[0].blocks[0].operations:
            f = _as_op(f)
            if f.name != "func.func" or not len(f.regions) or not len(f.regions[0].blocks):
                continue
            m = _Membar(f, total)
            m.region(f.regions[0], frozenset(), True)
            n += m.inserted
    return n


membar_pass = pass_entry("tritium-membar", insert_barriers)
