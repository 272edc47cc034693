"""Divergent control flow: ``scf.for`` / ``scf.if`` / ``scf.while`` with the body as a function of the program
mask ``active``.  When every program agrees (uniform bounds or condition) they are plain Python loops and
branches; otherwise they run to the largest trip count, or both branches, under an ``active`` mask, merging
results with :func:`~.shapes.select`."""
from __future__ import annotations

import os

import numpy as np

from tritium.errors import KernelRuntimeError

from .context import where_loc
from .shapes import bmask, select


def _all_of(m, active):
    """True if mask m (P,) is set for every active program."""
    if active is None:
        return bool(m.all())
    return not bool((active & ~m).any())


def for_loop(body, lb, ub, step, inits, active):
    if lb.shape[0] == 1 and ub.shape[0] == 1 and step.shape[0] == 1:
        dt = lb.dtype
        vals = inits
        for i in range(int(lb[0]), int(ub[0]), int(step[0])):
            vals = body(active, np.array([i], dt), *vals)
        return vals
    dt = lb.dtype
    l64, u64, s64 = lb.astype(np.int64), ub.astype(np.int64), step.astype(np.int64)
    n = np.maximum((u64 - l64 + s64 - 1) // s64, 0)
    if active is not None:
        n = np.where(active, n, 0)
    n = np.broadcast_to(n, (max(n.shape[0], 1),))
    vals = tuple(inits)
    maxn = int(n.max()) if n.size else 0
    for k in range(maxn):
        act = k < n
        iv = (l64 + k * s64).astype(dt)
        new = body(act, iv, *vals)
        if act.all():
            vals = tuple(new)
        else:
            vals = tuple(select(act, a, b) for a, b in zip(new, vals))
    return vals


def if_(c, then, els, active):
    if c.size == 1:
        if c.reshape(-1)[0]:
            return then(active)
        return els(active) if els is not None else ()
    tm = c if active is None else (c & bmask(active, c.ndim))
    em = ~c if active is None else (~c & bmask(active, c.ndim))
    if not em.any():
        return then(active)
    if not tm.any():
        return els(active) if els is not None else ()
    rt = then(tm)
    re = els(em) if els is not None else ()
    return tuple(select(c, a, b) for a, b in zip(rt, re))


#: iterations a divergent ``while`` may run with the same programs in it while others have left it, before the fast
#: mode calls it a spin-wait on another program (TRITIUM_INTERPRET_SPIN_LIMIT; 0: no limit)
SPIN_LIMIT = int(os.environ.get("TRITIUM_INTERPRET_SPIN_LIMIT", "100000") or 0)

#: iterations of such a loop whose programs' loop-carried values do not change either (they wait on memory) before
#: a restartable chunk (:class:`SpinWait`) is run again one program at a time; after SPIN_RESTART_ANY iterations
#: it is, whatever the values do (a wait that counts its tries)
SPIN_RESTART = 64
SPIN_RESTART_ANY = 4096


class SpinWait(Exception):
    """Programs of a chunk wait in a loop on memory that programs which left the loop must change first: the
    launcher puts the chunk's memory back as it was and runs its programs one after another."""


def _unchanged(new, old) -> bool:
    return all(a is b or (a.shape == b.shape and np.array_equal(a, b)) if isinstance(a, np.ndarray) and
               isinstance(b, np.ndarray) else a is b for a, b in zip(new, old))


def _spin_error(ctx, loc, stay, left, n):
    """A program waits in a loop for what another program of its chunk does after leaving it: the fast mode runs a
    chunk's programs in lockstep, so the one that left never gets there (a lock taken with atomic_cas)."""
    waiting = [ctx.pid_tuple(p) for p in np.flatnonzero(stay)[:4]] if ctx is not None else []
    gone = [ctx.pid_tuple(p) for p in np.flatnonzero(left)[:4]] if ctx is not None else []
    raise KernelRuntimeError(
        f"a while loop has run {n} iterations with programs {waiting} in it after programs {gone} left it: "
        "the fast interpreter runs programs in lockstep, so a program waiting for another one to get past the loop "
        "(a lock taken with atomic_cas, a flag another program sets later) waits forever; step-through mode runs "
        "programs one after another (TRITIUM_INTERPRET_MODE=eager, or TRITIUM_TARGET=interpreter:eager); "
        "TRITIUM_INTERPRET_SPIN_LIMIT sets this limit (0: none)", where_loc(loc), waiting[0] if waiting else None)


def while_(before, after, inits, active, ctx=None, loc=None):
    args = tuple(inits)
    act = active
    results = None
    entered = None  # the programs in the loop at its first divergent iteration
    spins = waits = 0
    while True:
        c, fwd = before(act, *args)
        if c.shape[0] == 1 and (act is None or c.size == 1):
            if not c[0]:
                if results is None:
                    return tuple(fwd)
                return tuple(select(act, a, b) for a, b in zip(fwd, results)) if act is not None else tuple(fwd)
            args = tuple(after(act, *fwd))
            continue
        stay = c if act is None else (c & act)
        if stay.shape[0] == 1 and act is None:
            stay = np.broadcast_to(stay, (1,))
        leaving = ~c if act is None else (act & ~c)
        if results is None:
            results = tuple(fwd)
        elif leaving.any():
            results = tuple(select(leaving, a, b) for a, b in zip(fwd, results))
        if not stay.any():
            return results
        spinning = False
        if SPIN_LIMIT:
            if entered is None:
                entered = act if act is not None else np.ones(stay.shape[0], bool)
            if act is not None and stay.shape == act.shape and not (act & ~stay).any() and (entered & ~stay).any():
                spins += 1  # nobody left this iteration, and some program left before
                spinning = True
                if spins >= SPIN_LIMIT:
                    _spin_error(ctx, loc, stay, entered & ~stay, spins)
            else:
                spins = 0
        new = after(stay, *fwd)
        if spinning and getattr(ctx, "restartable", False):
            waits = waits + 1 if _unchanged(new, args) else 0  # ... and nothing they carry changed: a wait on memory
            if waits >= SPIN_RESTART or spins >= SPIN_RESTART_ANY:
                raise SpinWait()
        if _all_of(stay, act):
            args = tuple(new)
        else:
            args = tuple(select(stay, a, b) for a, b in zip(new, args))
        act = stay
