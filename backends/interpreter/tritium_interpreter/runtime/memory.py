"""The memory model: pointers are int64 virtual byte addresses; the i-th pointer argument's buffer occupies the
region ``[(i + 1) << SHIFT, (i + 1) << SHIFT + nbytes)``.  Loads, stores and atomics map addresses back to a flat
typed view of the caller's memory (no copies), checking bounds and alignment of every active, unmasked lane;
a bad access raises :class:`~tritium.errors.OutOfBoundsError` naming the source line, program and buffer.
A launch's :class:`Memory` lives for that launch only (the driver rebuilds it from the arguments every time)."""
from __future__ import annotations

import numpy as np

from tritium.errors import KernelRuntimeError, OutOfBoundsError

from .arith import bf16_bits_to_f32, f32_to_bf16_bits, round_bf16, s, u
from .fp8 import FORMATS as _FP8, fp8_bits, fp8_bits_to_f32
from .context import SHIFT, tile_lanes, where_loc  # noqa: F401  (SHIFT: the memory model's, defined there)
from .shapes import bmask, lane_mask



class Memory:
    """The pointer arguments of one launch: ``arrays[i]`` is a flat 1-D view (any dtype, stride = itemsize) of
    the memory the i-th pointer argument spans, ``sizes[i]`` its length in bytes, ``names[i]`` how errors name
    it.  ``view(b, dt)`` is buffer ``b`` as a flat ``dt`` array (the array itself when it already has that
    dtype, else its bytes reinterpreted, truncated to whole elements), built once per launch and dtype."""

    def __init__(self, arrays, names=None, sizes=None):
        self.arrays = arrays
        self.sizes = sizes if sizes is not None else [a.nbytes for a in arrays]
        self.names = names or [f"#{i}" for i in range(len(arrays))]
        self.views = {}
        self.races = None  # a races.RaceTracker when TRITIUM_INTERPRET_CHECKS has "races"

    def view(self, b, dt):
        key = (b, dt)
        v = self.views.get(key)
        if v is None:
            raw = self.arrays[b]
            if raw.dtype == dt:
                v = raw
            else:
                raw = raw.view(np.uint8)
                isz = np.dtype(dt).itemsize
                n = raw.shape[0] // isz * isz
                v = raw[:n].view(dt)
            self.views[key] = v
        return v


def _oob(ctx, kind, loc, addr, m, esize, dtname, active):
    """Raise OutOfBoundsError for the first offending lane of ``addr`` (broadcast with mask ``m``)."""
    mem = ctx.mem
    shape = np.broadcast_shapes(addr.shape, m.shape) if m is not None else addr.shape
    if active is not None and shape[0] == 1 and active.shape[0] > 1:
        shape = (active.shape[0],) + shape[1:]
    a = np.broadcast_to(addr, shape)
    lm = np.ones(shape, bool) if m is None else np.broadcast_to(m, shape)
    if active is not None:
        lm = lm & bmask(active, len(shape))
    b = a >> SHIFT
    off = a - (b << SHIFT)
    nb = len(mem.sizes)
    sizes = np.array([0] + mem.sizes, np.int64)
    bi = np.clip(b, 0, nb)
    inbuf = (b >= 1) & (b <= nb)
    bad_bounds = lm & (~inbuf | (off < 0) | (off + esize > sizes[bi]))
    bad_align = lm & (off % esize != 0)
    bad = bad_bounds | bad_align
    flat = int(np.argmax(bad.reshape(-1)))
    idx = np.unravel_index(flat, shape)
    pid = ctx.pid_tuple(idx[0])
    lane = tuple(int(i) for i in idx[1:])
    av, bv, ov = int(a[idx]), int(b[idx]), int(off[idx])
    if not (1 <= bv <= nb):
        what = f"address {av:#x} does not point into any buffer passed to the kernel"
    else:
        nbytes = int(sizes[bv])
        name = mem.names[bv - 1]
        if bad_bounds[idx]:
            eo = ov // esize if ov >= 0 else -((-ov + esize - 1) // esize)
            what = (f"element offset {eo} ({dtname}, byte offset {ov}) is outside pointer argument {name}, "
                    f"which holds {nbytes // esize} {dtname} elements ({nbytes} bytes)")
        else:
            what = f"byte offset {ov} into pointer argument {name} is not aligned to {esize} bytes ({dtname})"
    lane_s = tile_lanes(bad[idx[0]]) if lane else ""
    raise OutOfBoundsError(f"out-of-bounds {kind}: {what}{lane_s}", where_loc(loc), pid)


def _locate(ctx, addr, m, esize, kind, loc, dtname, active, fill=True):
    """Map addresses to (buffer index, element index array).  ``m`` is the effective lane mask (or None).

    Returns (b, idx) where idx has addr's shape (masked lanes hold a valid index; with ``fill=False``, for a
    caller that never reads masked lanes' indices, any value) or (None, None) when no lane is enabled.
    Multi-buffer accesses return b = -1 and idx = list of (b, sel, idx) parts.
    """
    mem = ctx.mem
    if m is None:
        a = addr
    elif m.shape == addr.shape:
        a = addr[m]
    else:
        bs = np.broadcast_shapes(addr.shape, m.shape)
        a = np.broadcast_to(addr, bs)[np.broadcast_to(m, bs)]
    if a.size == 0:
        return None, None
    lo, hi = int(a.min()), int(a.max())
    b = lo >> SHIFT
    sh = esize.bit_length() - 1
    if (hi >> SHIFT) == b and 1 <= b <= len(mem.sizes):
        base = b << SHIFT
        nbytes = mem.sizes[b - 1]
        if lo - base < 0 or hi - base + esize > nbytes:
            _oob(ctx, kind, loc, addr, m, esize, dtname, active)
        # aligned iff the OR of every enabled address has the low bits clear (one pass, no temporary)
        if esize > 1 and int(np.bitwise_or.reduce(a, axis=None)) & (esize - 1):
            _oob(ctx, kind, loc, addr, m, esize, dtname, active)
        idx = np.subtract(addr, base)
        if sh:
            np.right_shift(idx, sh, out=idx)
        if m is not None and fill:
            idx = np.where(m, idx, (lo - base) >> sh)
        return b - 1, idx
    # several buffers (or garbage): check every enabled lane
    bb = a >> SHIFT
    nb = len(mem.sizes)
    if bool(((bb < 1) | (bb > nb)).any()):
        _oob(ctx, kind, loc, addr, m, esize, dtname, active)
    full = addr if m is None else np.broadcast_to(addr, np.broadcast_shapes(addr.shape, m.shape))
    ball = full >> SHIFT
    parts = []
    for bi in np.unique(bb):
        bi = int(bi)
        base = bi << SHIFT
        sel = ball == bi
        if m is not None:
            sel = sel & m
        off = full[sel] - base
        if bool((off < 0).any()) or bool((off + esize > mem.sizes[bi - 1]).any()) or \
                (esize > 1 and bool((off & (esize - 1)).any())):
            _oob(ctx, kind, loc, addr, m, esize, dtname, active)
        parts.append((bi - 1, sel, off >> sh))
    return -1, parts


def _to_value(raw, kind):
    if kind == "bf16":
        return bf16_bits_to_f32(raw)
    if kind == "i1":
        return raw != 0
    if kind in _FP8:
        return fp8_bits_to_f32(raw, kind)
    return raw


def _to_storage(val, sdt, kind):
    if kind == "bf16":
        return f32_to_bf16_bits(val).view(np.int16)
    if kind == "i1":
        return val.astype(np.int8)
    if kind in _FP8:
        return fp8_bits(val, kind)
    return val.astype(sdt, copy=False)


def _value_dtype(sdt, kind):
    """The numpy dtype of values whose memory dtype is ``sdt``: float32 for bf16 and fp8, bool for i1."""
    if kind == "bf16" or kind in _FP8:
        return np.float32
    return np.bool_ if kind == "i1" else sdt


def load(ctx, addr, mask, other, active, sdt, esize, kind, loc, dtname):
    """``addr`` int64 (L, *shape); returns values (L', *shape)."""
    if isinstance(addr, tuple):       # block pointer: (addr, boundary mask, padding value)
        addr, bmask_, pad = addr
        mask = bmask_
        if other is None and pad is not None:
            other = pad
    if mask is not None and mask.shape[0] == 1 and bool(mask.all()):
        mask = None
    if active is not None:
        if mask is None and addr.shape[0] == 1:
            if not active.any():
                m = None
                return _fill(addr.shape, other, sdt, kind)
            m = None
        else:
            m = lane_mask(mask, active, addr.ndim)
    else:
        m = mask
    if m is not None and m.shape[0] > 1 and bool(m.all()):
        m = None
    b, idx = _locate(ctx, addr, m, esize, "load", loc, dtname, active, fill=False)
    if b is None:
        shp = np.broadcast_shapes(addr.shape, m.shape) if m is not None else addr.shape
        return _fill(shp, other, sdt, kind)
    if ctx.mem.races is not None:  # the lanes that load: this mask with the programs' (not the shortcut above)
        ctx.mem.races.on_load(ctx, b, idx, m if m is not None else lane_mask(mask, active, addr.ndim), esize, loc,
                              dtname)
    if b >= 0:
        # every enabled lane's index was checked; masked lanes' (any value) are clipped, then replaced below
        v = _to_value(ctx.mem.view(b, sdt).take(idx, mode="clip" if m is not None else "raise"), kind)
    else:
        shp = np.broadcast_shapes(addr.shape, m.shape) if m is not None else addr.shape
        raw = np.zeros(shp, sdt)
        for bi, sel, ix in idx:
            raw[sel] = np.take(ctx.mem.view(bi, sdt), ix)
        v = _to_value(raw, kind)
    if m is not None:
        o = other if other is not None else np.zeros((), v.dtype)
        v = np.where(m, v, o)
    return v


def _fill(shape, other, sdt, kind):
    if other is not None:
        return np.broadcast_to(other, np.broadcast_shapes(shape, other.shape))
    return np.zeros(shape, _value_dtype(sdt, kind))


def store(ctx, addr, val, mask, active, sdt, esize, kind, loc, dtname):
    if isinstance(addr, tuple):
        addr, mask, _ = addr
    m = lane_mask(mask, active, addr.ndim)
    if m is not None and bool(m.all()):
        m = None
    b, idx = _locate(ctx, addr, m, esize, "store", loc, dtname, active, fill=False)
    if b is None:
        return
    v = _to_storage(val, sdt, kind)
    if ctx.mem.races is not None:
        ctx.mem.races.on_store(ctx, b, idx, m, v, esize, loc, dtname)
    if b >= 0:
        view = ctx.mem.view(b, sdt)
        if idx.shape == v.shape and (m is None or m.shape == idx.shape):
            if m is None:
                view[idx.reshape(-1)] = v.reshape(-1)
            else:
                view[idx[m]] = v[m]
            return
        shp = np.broadcast_shapes(idx.shape, v.shape, m.shape if m is not None else idx.shape)
        if m is None:
            view[np.broadcast_to(idx, shp).reshape(-1)] = np.broadcast_to(v, shp).reshape(-1)
        else:
            mm = np.broadcast_to(m, shp)
            view[np.broadcast_to(idx, shp)[mm]] = np.broadcast_to(v, shp)[mm]
    else:
        for bi, sel, ix in idx:
            view = ctx.mem.view(bi, sdt)
            view[ix] = np.broadcast_to(v, sel.shape)[sel]


def _float_order(x):
    """An unsigned key per float of ``x`` whose order is the total order of the floats' bits (sign-magnitude)."""
    x = np.asarray(x)
    ut = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    bits = np.ascontiguousarray(x).view(ut).astype(np.uint64)
    sign = np.uint64(1) << np.uint64(8 * x.dtype.itemsize - 1)
    full = np.uint64((1 << (8 * x.dtype.itemsize)) - 1)
    return np.where(bits & sign, ~bits & full, bits | sign)


def _rmw_apply(op, old, val):
    """``old <op> val`` for the ``tt.atomic_rmw`` operation ``op`` (an :class:`RMWOp` value)."""
    from tritium.dialects.enums import RMWOp  # see atomic()

    if op == RMWOp.AND:
        return old & val
    if op == RMWOp.OR:
        return old | val
    if op == RMWOp.XOR:
        return old ^ val
    if op == RMWOp.ADD or op == RMWOp.FADD:
        return old + val
    if op in (RMWOp.MAX, RMWOp.MIN) and np.issubdtype(np.asarray(old).dtype, np.floating):
        # floats in the total order of their bits, as the GPU computes them (through the integer orderings):
        # -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN
        ko, kv = _float_order(old), _float_order(val)
        return np.where(kv > ko if op == RMWOp.MAX else kv < ko, val, old).astype(old.dtype)
    if op == RMWOp.MAX:
        return np.maximum(old, val)
    if op == RMWOp.MIN:
        return np.minimum(old, val)
    if op == RMWOp.UMAX:
        return s(np.maximum(u(old), u(val)), old.dtype)
    if op == RMWOp.UMIN:
        return s(np.minimum(u(old), u(val)), old.dtype)
    if op == RMWOp.XCHG:
        return val
    raise KernelRuntimeError(f"unknown atomic_rmw_op {op}")


def atomic(ctx, op, addr, val, cmp, mask, active, sdt, esize, kind, loc, dtname):
    """atomic_rmw (``op``: an :class:`RMWOp` value) or atomic_cas (``op`` = 0, ``cmp`` given): executed by every
    active program, in program order; returns the old values."""
    # imported here, not at the top: a launch without atomics imports nothing of the compiler's packages
    from tritium.dialects.enums import RMWOp

    shp = np.broadcast_shapes(addr.shape, val.shape, *( [mask.shape] if mask is not None else []),
                              *([cmp.shape] if cmp is not None else []))
    shp = (ctx.P,) + shp[1:]
    addr = np.broadcast_to(addr, shp)
    m = lane_mask(mask, active, len(shp))
    if m is not None:
        m = np.broadcast_to(m, shp)
        if bool(m.all()):
            m = None
    what = "atomic_cas" if op == 0 else f"atomic_{RMWOp(op).name.lower()}"
    b, idx = _locate(ctx, addr, m, esize, what, loc, dtname, active)
    vdt = _value_dtype(sdt, kind)
    old_all = np.zeros(shp, vdt)
    if b is None:
        return old_all
    if b < 0:
        raise KernelRuntimeError("an atomic operation touching several buffers at once is not supported",
                                 where_loc(loc))
    view = ctx.mem.view(b, sdt)
    sel = np.ones(shp, bool) if m is None else m
    ix = np.broadcast_to(idx, shp)[sel]
    v = np.broadcast_to(val, shp)[sel].astype(vdt, copy=False)
    c = np.broadcast_to(cmp, shp)[sel].astype(vdt, copy=False) if cmp is not None else None
    n = ix.shape[0]
    order = np.argsort(ix, kind="stable")
    sx = ix[order]
    start = np.ones(n, bool)
    start[1:] = sx[1:] != sx[:-1]
    gid = np.cumsum(start) - 1
    gstart = np.flatnonzero(start)
    rank = np.arange(n) - gstart[gid]
    maxrank = int(rank.max()) if n else 0
    old = np.empty(n, vdt)
    if (op == RMWOp.ADD or op == RMWOp.FADD) and maxrank > 0 and vdt is sdt:  # values held as stored
        sv = v[order]
        acc = np.float64 if np.issubdtype(vdt, np.floating) else np.int64
        cs = np.cumsum(sv.astype(acc))
        excl = cs - sv.astype(acc)
        excl = excl - excl[gstart][gid]
        cur = view[sx]
        old[order] = (cur.astype(acc) + excl).astype(vdt)
        ends = np.append(gstart[1:], n) - 1
        total = cs[ends] - (cs[gstart] - sv[gstart].astype(acc))
        uix = sx[gstart]
        view[uix] = (view[uix].astype(acc) + total).astype(sdt)
        old_all[sel] = old
        return old_all
    rank_p = np.empty(n, np.int64)
    rank_p[order] = rank
    for r in range(maxrank + 1):
        k = np.flatnonzero(rank_p == r) if maxrank else slice(None)
        kx = ix[k]
        cur = _to_value(view[kx], kind)
        old[k] = cur
        if op == 0:
            new = np.where(cur == c[k], v[k], cur)
        else:
            new = _rmw_apply(op, cur, v[k])
            if kind == "bf16":
                new = round_bf16(new)
        view[kx] = _to_storage(new, sdt, kind)
    old_all[sel] = old
    return old_all
