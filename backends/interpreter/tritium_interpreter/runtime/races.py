"""The race detector (``TRITIUM_INTERPRET_CHECKS=races``): within one launch, every plain (non-atomic) load and
store records, per element of the buffer it touches, which program last stored there and which programs read
it, and raises :class:`~tritium.errors.DataRaceError` at the first access the GPU would not order:

* two different programs -- or two lanes of one store -- storing to the same element (a write-write race);
* a program reading an element another program of the launch stores to, in either order (the interpreter runs
  programs in some order; the GPU runs them in any order, or at once).

Atomics neither race nor are tracked.  With ``same-value-stores`` in ``TRITIUM_INTERPRET_CHECKS`` a store of the
value the element already holds (or, within one store, the same value from several lanes) is not a race: the
result does not depend on the order, which some kernels rely on.  A program's own stores and loads are ordered
(program order), so a program reading back what it stored is not a race.

The report names both accesses: source line, program id, tile index of the lane, and the element as an index into
the pointer argument (``hist[3]``, counted in elements of the access's type).  Bookkeeping is per pointer argument
and element size: arrays of the buffer's element count, the writers' made on its first store in the launch, the
readers' on its first load (a checking mode: up to ~36 bytes per element, and the launch a few times slower;
bench/RESULTS.md).
Accesses to one buffer through two element sizes are tracked apart (a race between them is not seen).
"""
from __future__ import annotations

import os

import numpy as np

from tritium.errors import DataRaceError

from .context import grid_pid, where_loc

NONE = -1  # no access recorded


def checks_from_env() -> frozenset:
    """The checks ``TRITIUM_INTERPRET_CHECKS`` asks for (comma-separated: ``races``, ``same-value-stores``)."""
    raw = os.environ.get("TRITIUM_INTERPRET_CHECKS", "")
    if raw == _last[0]:
        return _last[1]
    names = frozenset(p.strip().lower() for p in raw.split(",") if p.strip())
    unknown = names - {"races", "same-value-stores"}
    if unknown:
        raise ValueError(f"TRITIUM_INTERPRET_CHECKS: unknown check(s) {', '.join(sorted(unknown))} "
                         f"(known: races, same-value-stores)")
    _last[:] = [raw, names]
    return names


_last: list = [None, frozenset()]


class _Buffer:
    """What one launch did to one buffer at one element size, made on first use: ``w`` the program that last
    stored each element (``NONE``), ``wl`` that store's lane and source line (packed: ``lane << 20 | line id``);
    ``r`` a program that read it, ``r2`` another program that read it (``NONE``), ``rl`` / ``r2l`` their lanes
    and lines; ``stamp`` scratch for finding two lanes of one store on one element."""

    __slots__ = ("n", "w", "wl", "r", "rl", "r2", "r2l", "stamp")

    def __init__(self, n: int):
        self.n = n
        self.w = self.r = self.stamp = None

    def writes(self):
        if self.w is None:
            self.w = np.full(self.n, NONE, np.int32)
            self.wl = np.zeros(self.n, np.int64)
        return self.w

    def reads(self):
        if self.r is None:
            self.r = np.full(self.n, NONE, np.int32)
            self.rl = np.zeros(self.n, np.int64)
            self.r2 = np.full(self.n, NONE, np.int32)
            self.r2l = np.zeros(self.n, np.int64)
        return self.r

    def scratch(self):
        if self.stamp is None:
            self.stamp = np.empty(self.n, np.int64)
        return self.stamp


class RaceTracker:
    """One launch's record of plain loads and stores (``Memory.races``)."""

    def __init__(self, mem, same_value_ok: bool = False):
        self.mem = mem
        self.same_value_ok = same_value_ok
        self.buffers: dict = {}
        self.locs: list = []  # per line id: the statement's source location
        self.tiles: list = []  # per line id: its tile's shape (a recorded lane is a flat index into it)
        self.loc_ids: dict = {}

    # ------------------------------------------------------------------------------------------ bookkeeping
    def _buffer(self, b: int, esize: int) -> _Buffer:
        st = self.buffers.get((b, esize))
        if st is None:
            st = self.buffers[(b, esize)] = _Buffer(self.mem.sizes[b] // esize)
        return st

    def _loc_id(self, loc, tile: tuple) -> int:
        i = self.loc_ids.get((loc, tile))
        if i is None:
            i = self.loc_ids[(loc, tile)] = len(self.locs)
            self.locs.append(loc)
            self.tiles.append(tile)
        return i

    @staticmethod
    def _lanes(ctx, idx, m, *more):
        """The enabled lanes of an access: their element indices, programs (flat ids), flat tile indices, the
        tile's shape, and each of ``more`` (values broadcast alike) at those lanes."""
        shapes = [idx.shape] + ([m.shape] if m is not None else []) + [x.shape for x in more]
        shp = np.broadcast_shapes(*shapes)
        shp = (max(shp[0], ctx.P),) + shp[1:]  # a value uniform across programs: every program accesses it
        sel = None if m is None else np.broadcast_to(m, shp)
        tile = shp[1:]
        prog = np.broadcast_to((np.arange(shp[0], dtype=np.int32) + ctx.start).reshape((-1,) + (1,) * len(tile)),
                               shp)
        lane = np.broadcast_to(np.arange(int(np.prod(tile, dtype=np.int64)), dtype=np.int64).reshape(tile), shp)
        arrays = [np.broadcast_to(idx, shp), prog, lane] + [np.broadcast_to(x, shp) for x in more]
        if m is None:  # every lane: flat copies, no mask
            ix, prog, lane, *rest = [a.reshape(-1) for a in arrays]
        else:
            ix, prog, lane, *rest = [a[sel] for a in arrays]
        return ix, prog, lane, tile, rest

    def _parts(self, b, idx, m):
        """``(buffer, element indices, lane mask)`` per buffer an access touches (``memory._locate``'s result)."""
        if b >= 0:
            return [(b, idx, m)]
        return [(bi, _scatter(sel, ix), sel) for bi, sel, ix in idx]

    # ------------------------------------------------------------------------------------------ the checks
    def on_load(self, ctx, b, idx, m, esize, loc, dtname):
        for bi, ix_full, mm in self._parts(b, idx, m):
            ix, prog, lane, tile, _ = self._lanes(ctx, ix_full, mm)
            if ix.size == 0:
                continue
            lid = self._loc_id(loc, tile)
            st = self._buffer(bi, esize)
            if st.w is not None:
                w = st.w[ix]
                bad = (w != NONE) & (w != prog)
                if bad.any():
                    k = int(np.argmax(bad))
                    e = int(ix[k])
                    self._report("a load", "a store", bi, e, dtname, (int(prog[k]), int(lane[k]), lid),
                                 (int(w[k]), int(st.wl[e] >> 20), int(st.wl[e] & 0xFFFFF)), ctx)
            info = (lane << 20) | lid
            first = st.reads()[ix] == NONE
            if first.all():  # the common case: nobody read these elements before
                st.r[ix] = prog
                st.rl[ix] = info
            elif first.any():
                f = ix[first]
                st.r[f] = prog[first]
                st.rl[f] = info[first]
            other = st.r[ix] != prog  # read before by another program, or by another one of this load
            if other.any():
                o = ix[other]
                st.r2[o] = prog[other]
                st.r2l[o] = info[other]

    def on_store(self, ctx, b, idx, m, val, esize, loc, dtname):
        """``val``: the stored values in the buffer's storage type (``memory._to_storage``)."""
        for bi, ix_full, mm in self._parts(b, idx, m):
            if b < 0:  # values of a multi-buffer store: broadcast to the full shape, then the part's lanes
                v_full = np.broadcast_to(val, ix_full.shape)
            else:
                v_full = val
            ix, prog, lane, tile, (v,) = self._lanes(ctx, ix_full, mm, v_full)
            if ix.size == 0:
                continue
            lid = self._loc_id(loc, tile)
            st = self._buffer(bi, esize)
            # two lanes of this store on one element: the stamp of each element is the last lane storing there
            stamp = st.scratch()
            k_all = np.arange(ix.size, dtype=np.int64)
            stamp[ix] = k_all
            other = stamp[ix]
            dup = np.flatnonzero(other != k_all)
            if dup.size and self.same_value_ok:
                vb = _bits(v)
                dup = dup[vb[dup] != vb[other[dup]]]
            if dup.size:
                i, j = int(dup[0]), int(other[dup[0]])
                self._report("a store", "a store (the same statement)", bi, int(ix[j]), dtname,
                             (int(prog[j]), int(lane[j]), lid), (int(prog[i]), int(lane[i]), lid), ctx)
            # a store by another program before
            w = st.writes()[ix]
            bad = (w != NONE) & (w != prog)
            if bad.any() and self.same_value_ok:
                bad &= _bits(self.mem.view(bi, v.dtype)[ix]) != _bits(v)
            if bad.any():
                k = int(np.argmax(bad))
                e = int(ix[k])
                self._report("a store", "a store", bi, e, dtname, (int(prog[k]), int(lane[k]), lid),
                             (int(w[k]), int(st.wl[e] >> 20), int(st.wl[e] & 0xFFFFF)), ctx)
            # a load by another program (before: the loads after are checked by on_load)
            if st.r is not None:
                self._check_readers(st, ix, prog, lane, lid, bi, dtname, ctx)
            st.w[ix] = prog
            st.wl[ix] = (lane << 20) | lid

    def _check_readers(self, st, ix, prog, lane, lid, bi, dtname, ctx):
        r, r2 = st.r[ix], st.r2[ix]
        rb = (r != NONE) & (r != prog)
        r2b = (r2 != NONE) & (r2 != prog)
        bad = rb | r2b
        if bad.any():
            k = int(np.argmax(bad))
            e = int(ix[k])
            p, info = (int(r[k]), int(st.rl[e])) if rb[k] else (int(r2[k]), int(st.r2l[e]))
            self._report("a store", "a load", bi, e, dtname, (int(prog[k]), int(lane[k]), lid),
                         (p, info >> 20, info & 0xFFFFF), ctx)

    # ------------------------------------------------------------------------------------------ the report
    def _report(self, what, other, b, element, dtname, this, before, ctx):
        """Raise DataRaceError for accesses ``this`` and ``before``, each (flat program, lane, line id)."""
        name = self.mem.names[b].strip("'")
        (p1, l1, loc1), (p2, l2, loc2) = this, before
        pid1, pid2 = grid_pid(ctx.grid, p1), grid_pid(ctx.grid, p2)
        msg = (f"data race on {name}[{element}] (pointer argument {name}, {dtname} element {element}) within one "
               f"launch:\n"
               f"  {what} by program {pid1}{_tile_index(l1, self.tiles[loc1])} at {where_loc(self.locs[loc1])}\n"
               f"  {other} by program {pid2}{_tile_index(l2, self.tiles[loc2])} at {where_loc(self.locs[loc2])}\n"
               f"the GPU does not order these accesses: use an atomic, or have one program own each element "
               f"(TRITIUM_INTERPRET_CHECKS=races,same-value-stores accepts stores of the value already there)")
        err = DataRaceError(msg)  # the message names both places; the attributes the first
        err.location, err.pid = where_loc(self.locs[loc1]), pid1
        raise err


def _tile_index(lane: int, tile: tuple) -> str:
    if not tile:
        return ""
    return f", tile index {tuple(int(i) for i in np.unravel_index(lane, tile))}"


def _uint(esize: int):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[esize]


def _bits(v):
    """``v``'s elements as unsigned integers of their size: compared bit for bit (NaNs equal to themselves)."""
    v = np.ascontiguousarray(v)
    if v.dtype == np.bool_:
        return v.view(np.uint8)
    return v.view(_uint(v.dtype.itemsize))


def _scatter(sel, ix):
    """Element indices of a multi-buffer part as a full-shaped array (lanes outside ``sel``: 0, masked)."""
    full = np.zeros(sel.shape, np.int64)
    full[sel] = ix
    return full
