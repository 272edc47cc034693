"""Run-time support of the NumPy programs the interpreter generates.

Conventions (see codegen.py): every value is a numpy array whose leading axis is the program axis, of size
P (the programs of the current chunk) or 1 when the value is the same for every program.  ``active`` is
None (every program of the chunk runs this code) or a bool array of shape (P,).

Memory: pointers are int64 virtual byte addresses.  The i-th pointer argument's buffer occupies the region
``[(i + 1) << 40, (i + 1) << 40 + nbytes)``.  Loads, stores and atomics map addresses back to a flat typed
view of the caller's memory (no copies), checking bounds and alignment of every active, unmasked lane.
A launch's :class:`Memory` lives for that launch only (the driver rebuilds it from the arguments every time).

This module imports numpy only (never MLIR): it is all a launch needs.
"""
from __future__ import annotations

import sys

import numpy as np

from tritium.errors import DeviceAssertionError, KernelRuntimeError, OutOfBoundsError, format_source_line

SHIFT = 40
BUDGET = 1 << 24          # elements per chunk: P * (largest tensor numel) stays below this


# ----------------------------------------------------------------------------------------------
# bf16 (values are float32 rounded to bf16; buffers hold the 16-bit patterns)
# ----------------------------------------------------------------------------------------------

def f32_to_bf16_bits(x):
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(np.isnan(x), (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def bf16_bits_to_f32(b):
    b = np.asarray(b)
    return (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x):
    """Round float values to the nearest bf16 (ties to even), as float32."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


# ----------------------------------------------------------------------------------------------
# Launch context
# ----------------------------------------------------------------------------------------------

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


def program_ids(grid, start, count):
    """``(pid, nprog)`` of the programs [start, start + count) of ``grid``: the values ``tl.program_id`` and
    ``tl.num_programs`` read (arrays of shape (count,) or (1,), read-only so that a launcher may reuse them)."""
    gx, gy, gz = grid
    if count == 1:
        f = start
        pid = (np.array([f % gx], np.int32), np.array([(f // gx) % gy], np.int32),
               np.array([f // (gx * gy)], np.int32))
    else:
        flat = np.arange(start, start + count, dtype=np.int64)
        x = (flat % gx).astype(np.int32) if gx > 1 else np.zeros(1, np.int32)
        y = ((flat // gx) % gy).astype(np.int32) if gy > 1 else np.zeros(1, np.int32)
        z = (flat // (gx * gy)).astype(np.int32) if gz > 1 else np.zeros(1, np.int32)
        pid = (x, y, z)
    nprog = (np.array([gx], np.int32), np.array([gy], np.int32), np.array([gz], np.int32))
    for a in pid + nprog:
        a.flags.writeable = False
    return pid, nprog


class Ctx:
    """One chunk of programs: flat program ids [start, start + P) of a grid (gx, gy, gz).  ``ids``: their
    :func:`program_ids` when the caller has them already."""

    def __init__(self, mem, grid, start, count, ids=None):
        self.mem, self.grid, self.start, self.P = mem, grid, start, count
        self.pid, self.nprog = ids if ids is not None else program_ids(grid, start, count)

    def pid_tuple(self, p):
        f = self.start + int(p)
        gx, gy, _ = self.grid
        return (f % gx, (f // gx) % gy, f // (gx * gy))


def where_loc(loc):
    if not loc:
        return ""
    # columns are 0-based, as the frontend writes them (ast col_offset)
    return format_source_line(loc[0], loc[1], loc[2] if len(loc) > 2 else None)


# ----------------------------------------------------------------------------------------------
# Shapes and masks
# ----------------------------------------------------------------------------------------------

def bmask(m, ndim):
    """A mask of shape (L,) (or any leading shape) with axes appended to broadcast against rank ``ndim``."""
    if m.ndim >= ndim:
        return m
    return m.reshape(m.shape + (1,) * (ndim - m.ndim))


def select(c, a, b):
    """np.where with a condition of leading shape broadcast over trailing tensor axes; handles block ptrs."""
    if isinstance(a, BlockPtr):
        return BlockPtr(select(c, a.base, b.base), [select(c, x, y) for x, y in zip(a.shape, b.shape)],
                        [select(c, x, y) for x, y in zip(a.strides, b.strides)],
                        [select(c, x, y) for x, y in zip(a.offsets, b.offsets)], a.order, a.block, a.esize)
    nd = max(a.ndim, b.ndim)
    return np.where(bmask(c, nd), a, b)


def lane_mask(mask, active, ndim):
    """Combine a lane mask (None or bool array) with the program mask; None means everything."""
    if active is None:
        return mask
    am = bmask(active, ndim)
    return am if mask is None else (mask & am)


def splat(x, shape):
    return np.broadcast_to(x.reshape(x.shape + (1,) * len(shape)), x.shape + tuple(shape))


def bcast(x, shape):
    return np.broadcast_to(x, x.shape[:1] + tuple(shape))


def lead(*xs):
    return max(x.shape[0] for x in xs)


def same_lead(xs):
    n = max(x.shape[0] for x in xs)
    return [x if x.shape[0] == n else np.broadcast_to(x, (n,) + x.shape[1:]) for x in xs]


def cat(a, b):
    a, b = same_lead([a, b])
    return np.concatenate([a, b], axis=1)


def join(a, b):
    a, b = same_lead([a, b])
    return np.stack([a, b], axis=-1)


def gather(src, idx, axis):
    src, idx = same_lead([src, idx])
    idx = idx.astype(np.int64)
    n = src.shape[axis + 1]
    idx = np.where(idx < 0, idx + n, idx)
    return np.take_along_axis(src, np.clip(idx, 0, n - 1), axis + 1)


def addptr(p, o, size):
    r = o.astype(np.int64)
    if size != 1:
        r *= size
    rs, ps = r.shape, p.shape
    if rs == ps or (len(ps) == len(rs) and (p.size == 1 or all(b == 1 or b == a for a, b in zip(rs, ps)))):
        r += p            # p broadcasts to r's shape: add in place
        return r
    return r + p


def reshape(x, shape):
    return x.reshape(x.shape[:1] + tuple(shape))


# ----------------------------------------------------------------------------------------------
# Integer helpers (signless integers stored as signed numpy ints)
# ----------------------------------------------------------------------------------------------

_UNSIGNED = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16, np.dtype(np.int32): np.uint32,
             np.dtype(np.int64): np.uint64}


def u(x):
    """Reinterpret as unsigned."""
    if x.dtype == np.bool_:
        return x
    return x.view(_UNSIGNED[x.dtype])


def s(x, dt):
    """Back to the signed storage type ``dt``."""
    return x.astype(dt, copy=False) if x.dtype.itemsize != np.dtype(dt).itemsize else x.view(dt)


def divsi(a, b):
    if a.dtype == np.bool_:
        return a
    r = np.fmod(a, b)
    return (a - r) // b


def remsi(a, b):
    if a.dtype == np.bool_:
        return np.zeros_like(a)
    return np.fmod(a, b)


def divui(a, b):
    if a.dtype == np.bool_:
        return a
    return s(u(a) // u(b), a.dtype)


def remui(a, b):
    if a.dtype == np.bool_:
        return np.zeros_like(a)
    return s(u(a) % u(b), a.dtype)


def ceildivsi(a, b):
    q = a // b
    return q + (a - q * b != 0).astype(a.dtype)


def shrui(a, b):
    return s(u(a) >> u(b), a.dtype)


def shli(a, b):
    w = a.dtype.itemsize * 8
    r = np.left_shift(a, b)
    return np.where((b < 0) | (b >= w), np.zeros((), a.dtype), r)


def shrsi(a, b):
    w = a.dtype.itemsize * 8
    return np.right_shift(a, np.clip(b, 0, w - 1))


def extsi(x, dt):
    if x.dtype == np.bool_:
        return -(x.astype(dt))
    return x.astype(dt)


def extui(x, dt):
    if x.dtype == np.bool_:
        return x.astype(dt)
    return u(x).astype(dt).astype(dt)


def trunci(x, dt):
    if np.dtype(dt) == np.bool_:
        return (x & 1).astype(np.bool_)
    return x.astype(dt)


def sitofp(x, dt):
    if x.dtype == np.bool_:
        return -(x.astype(dt))
    return x.astype(dt)


def uitofp(x, dt):
    return u(x).astype(dt)


def fptosi(x, dt):
    if np.dtype(dt) == np.bool_:
        return x != 0
    return x.astype(dt)


def fptoui(x, dt):
    if np.dtype(dt) == np.bool_:
        return x != 0
    ud = _UNSIGNED[np.dtype(dt)]
    return x.astype(ud).view(dt)


def bitcast(x, dt, src_bf16=False, dst_bf16=False):
    if src_bf16:
        x = f32_to_bf16_bits(x)
    if dst_bf16:
        return bf16_bits_to_f32(x.astype(np.uint16) if x.dtype.itemsize != 2 else x.view(np.uint16))
    if x.dtype == np.bool_ or np.dtype(dt) == np.bool_:
        return x.astype(dt)
    if x.dtype.itemsize == np.dtype(dt).itemsize:
        return np.ascontiguousarray(x).view(dt)
    return x.astype(dt)


def mulhiui(a, b):
    if a.dtype.itemsize <= 4:
        w = a.dtype.itemsize * 8
        r = (u(a).astype(np.uint64) * u(b).astype(np.uint64)) >> np.uint64(w)
        return r.astype(_UNSIGNED[a.dtype]).view(a.dtype)
    x, y = u(a), u(b)
    m = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    xl, xh, yl, yh = x & m, x >> s32, y & m, y >> s32
    ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
    mid = (ll >> s32) + (lh & m) + (hl & m)
    return (hh + (lh >> s32) + (hl >> s32) + (mid >> s32)).view(a.dtype)


def mului_ext(a, b):
    return a * b, mulhiui(a, b)


def mulsi_ext(a, b):
    hi = mulhiui(a, b)
    # signed correction: hi_s = hi_u - (a < 0) * b - (b < 0) * a
    hi = hi - np.where(a < 0, b, 0).astype(a.dtype) - np.where(b < 0, a, 0).astype(a.dtype)
    return a * b, hi


def cmpf_one(a, b):
    return (a != b) & ~np.isnan(a) & ~np.isnan(b)


def cmpf_ueq(a, b):
    return (a == b) | np.isnan(a) | np.isnan(b)


def cmpf_ord(a, b):
    return ~(np.isnan(a) | np.isnan(b))


def cmpf_uno(a, b):
    return np.isnan(a) | np.isnan(b)


# ----------------------------------------------------------------------------------------------
# Math helpers
# ----------------------------------------------------------------------------------------------

def erf(x):
    # W. J. Cody-like accuracy is not needed: Numerical Recipes erfc (fractional error < 1.2e-7), in float64.
    dt = x.dtype
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    ans = t * np.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    r = 1.0 - ans
    # small |x|: Taylor series is more accurate than 1 - erfc
    small = z < 0.5
    if small.any():
        z2 = z * z
        ser = 2.0 / np.sqrt(np.pi) * z * (1 - z2 / 3 + z2 * z2 / 10 - z2 ** 3 / 42 + z2 ** 4 / 216 - z2 ** 5 / 1320)
        r = np.where(small, ser, r)
    return np.copysign(r, x).astype(dt)


def round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def fma(a, b, c):
    if a.dtype == np.float64:
        return a * b + c
    return (a.astype(np.float64) * b + c).astype(a.dtype)


def rsqrt(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


def ctpop(x):
    v = u(x).astype(np.uint64)
    c = np.zeros(v.shape, np.uint64)
    for _ in range(x.dtype.itemsize * 8):
        c += v & np.uint64(1)
        v = v >> np.uint64(1)
    return c.astype(x.dtype)


def ctlz(x):
    w = x.dtype.itemsize * 8
    v = u(x).astype(np.uint64)
    n = np.full(v.shape, w, np.int64)
    for i in range(w):
        n = np.where((v >> np.uint64(i)) & np.uint64(1), w - 1 - i, n)
    return n.astype(x.dtype)


def cttz(x):
    w = x.dtype.itemsize * 8
    v = u(x).astype(np.uint64)
    n = np.full(v.shape, w, np.int64)
    for i in reversed(range(w)):
        n = np.where((v >> np.uint64(i)) & np.uint64(1), i, n)
    return n.astype(x.dtype)


def clampf(x, lo, hi, propagate_nan):
    if propagate_nan:
        return np.minimum(np.maximum(x, lo), hi)
    return np.fmin(np.fmax(x, lo), hi)


# ----------------------------------------------------------------------------------------------
# Control flow
# ----------------------------------------------------------------------------------------------

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


def while_(before, after, inits, active):
    args = tuple(inits)
    act = active
    results = None
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
        new = after(stay, *fwd)
        if _all_of(stay, act):
            args = tuple(new)
        else:
            args = tuple(select(stay, a, b) for a, b in zip(new, args))
        act = stay


# ----------------------------------------------------------------------------------------------
# Reductions and scans
# ----------------------------------------------------------------------------------------------

def reduce_ufunc(uf, x, axis, bf16=False):
    r = uf.reduce(x, axis=axis + 1, dtype=x.dtype)
    return round_bf16(r) if bf16 else r


def scan_ufunc(uf, x, axis, reverse, bf16=False):
    ax = axis + 1
    if reverse:
        x = np.flip(x, ax)
    r = uf.accumulate(x, axis=ax, dtype=x.dtype)
    if reverse:
        r = np.flip(r, ax)
    return round_bf16(r) if bf16 else r


def reduce_generic(combine, xs, axis):
    """Tree reduction (adjacent pairs, left operand first) calling the generated combine function."""
    ax = axis + 1
    xs = same_lead(list(xs))
    xs = [np.moveaxis(x, ax, -1) for x in xs]
    n = xs[0].shape[-1]
    while n > 1:
        h = n // 2
        a = [x[..., 0:2 * h:2] for x in xs]
        b = [x[..., 1:2 * h:2] for x in xs]
        r = combine(None, *a, *b)
        if n % 2:
            r = [np.concatenate([ri, x[..., 2 * h:]], axis=-1) for ri, x in zip(r, xs)]
        xs = list(r)
        n = xs[0].shape[-1]
    return tuple(x[..., 0] for x in xs)


def scan_generic(combine, xs, axis, reverse):
    """Hillis-Steele inclusive scan (log steps, left operand first) with the generated combine function."""
    ax = axis + 1
    xs = same_lead(list(xs))
    xs = [np.moveaxis(x, ax, -1) for x in xs]
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    n = xs[0].shape[-1]
    d = 1
    while d < n:
        a = [x[..., :n - d] for x in xs]
        b = [x[..., d:] for x in xs]
        if reverse:
            r = combine(None, *b, *a)
        else:
            r = combine(None, *a, *b)
        xs = [np.concatenate([x[..., :d], ri.astype(x.dtype, copy=False)], axis=-1) for x, ri in zip(xs, r)]
        d *= 2
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    return tuple(np.moveaxis(x, -1, ax) for x in xs)


def histogram(ctx, x, nbins, mask, active, rdt):
    x = x.astype(np.int64)
    P = x.shape[0]
    m = lane_mask(mask, active, x.ndim)
    ok = (x >= 0) & (x < nbins)
    if m is not None:
        ok = ok & m
    P = max(P, ok.shape[0])
    x = np.broadcast_to(x, ok.shape)
    p = np.broadcast_to(np.arange(P).reshape((P,) + (1,) * (x.ndim - 1)), ok.shape)
    flat = (p * nbins + x)[ok]
    return np.bincount(flat, minlength=P * nbins).reshape(P, nbins).astype(rdt)


# ----------------------------------------------------------------------------------------------
# Memory
# ----------------------------------------------------------------------------------------------

class BlockPtr:
    __slots__ = ("base", "shape", "strides", "offsets", "order", "block", "esize")

    def __init__(self, base, shape, strides, offsets, order, block, esize):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.order, self.block, self.esize = order, block, esize


def make_block_ptr(base, shape, strides, offsets, order, block, esize):
    return BlockPtr(base, [x.astype(np.int64) for x in shape], [x.astype(np.int64) for x in strides],
                    [x.astype(np.int32) for x in offsets], order, block, esize)


def advance(bp, deltas):
    return BlockPtr(bp.base, bp.shape, bp.strides, [o + d.astype(np.int32) for o, d in zip(bp.offsets, deltas)],
                    bp.order, bp.block, bp.esize)


def block_addrs(bp, check):
    """Addresses (L, *block) and the boundary mask (None when no dim is checked)."""
    r = len(bp.block)
    addr = bp.base.astype(np.int64).reshape((-1,) + (1,) * r)
    mask = None
    for d, n in enumerate(bp.block):
        shp = [1] * (r + 1)
        shp[d + 1] = n
        idx = bp.offsets[d].astype(np.int64).reshape((-1,) + (1,) * r) + np.arange(n, dtype=np.int64).reshape(shp)
        addr = addr + idx * bp.strides[d].reshape((-1,) + (1,) * r) * bp.esize
        if d in check:
            m = (idx >= 0) & (idx < bp.shape[d].reshape((-1,) + (1,) * r))
            mask = m if mask is None else (mask & m)
    L = addr.shape[0]
    addr = np.broadcast_to(addr, (L,) + tuple(bp.block))
    if mask is not None:
        mask = np.broadcast_to(mask, (mask.shape[0],) + tuple(bp.block))
    return addr, mask


def _first_bad(ctx, bad, full_shape):
    """(pid tuple, lane index tuple) of the first True of ``bad`` in program order."""
    bad = np.broadcast_to(bad, full_shape) if bad.shape != full_shape else bad
    flat = int(np.argmax(bad.reshape(-1)))
    idx = np.unravel_index(flat, bad.shape)
    return ctx.pid_tuple(idx[0] if bad.shape[0] > 1 else _first_active(ctx)), tuple(int(i) for i in idx[1:])


def _first_active(ctx, active=None):
    return 0


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
    lane_s = f" (tensor index {lane})" if lane else ""
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
    return raw


def _to_storage(val, sdt, kind):
    if kind == "bf16":
        return f32_to_bf16_bits(val).view(np.int16)
    if kind == "i1":
        return val.astype(np.int8)
    return val.astype(sdt, copy=False)


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
    dt = np.float32 if kind == "bf16" else (np.bool_ if kind == "i1" else sdt)
    return np.zeros(shape, dt)


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


_RMW = {1: "and", 2: "or", 3: "xor", 4: "add", 5: "fadd", 6: "max", 7: "min", 8: "umax", 9: "umin", 10: "xchg"}


def _rmw_apply(op, old, val):
    if op == 1:
        return old & val
    if op == 2:
        return old | val
    if op == 3:
        return old ^ val
    if op in (4, 5):
        return old + val
    if op == 6:
        return np.maximum(old, val)
    if op == 7:
        return np.minimum(old, val)
    if op == 8:
        return s(np.maximum(u(old), u(val)), old.dtype)
    if op == 9:
        return s(np.minimum(u(old), u(val)), old.dtype)
    if op == 10:
        return val
    raise KernelRuntimeError(f"unknown atomic_rmw_op {op}")


def atomic(ctx, op, addr, val, cmp, mask, active, sdt, esize, kind, loc, dtname):
    """atomic_rmw (op = 1..10) or atomic_cas (op = 0, cmp given): executed by every active program, in
    program order; returns the old values."""
    shp = np.broadcast_shapes(addr.shape, val.shape, *( [mask.shape] if mask is not None else []),
                              *([cmp.shape] if cmp is not None else []))
    shp = (ctx.P,) + shp[1:]
    addr = np.broadcast_to(addr, shp)
    m = lane_mask(mask, active, len(shp))
    if m is not None:
        m = np.broadcast_to(m, shp)
        if bool(m.all()):
            m = None
    b, idx = _locate(ctx, addr, m, esize, "atomic_cas" if op == 0 else f"atomic_{_RMW[op]}", loc, dtname, active)
    vdt = np.float32 if kind == "bf16" else (np.bool_ if kind == "i1" else sdt)
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
    if op in (4, 5) and maxrank > 0 and kind != "bf16":
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


# ----------------------------------------------------------------------------------------------
# Debugging
# ----------------------------------------------------------------------------------------------

def device_print(ctx, prefix, args, active, hex_, signed):
    P = ctx.P
    progs = range(P) if active is None else np.flatnonzero(active)
    out = []
    nargs = len(args)
    for p in progs:
        pid = ctx.pid_tuple(p)
        if not args:
            out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) {prefix}")
            continue
        for k, a in enumerate(args):
            x = a[p if a.shape[0] > 1 else 0]
            opnd = f"(operand {k}) " if nargs > 1 else ""
            if x.ndim == 0:
                out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) idx () {prefix}{opnd}{_fmt(x, hex_)}")
                continue
            for ix in np.ndindex(x.shape):
                idx = ", ".join(f"{i:>3}" for i in ix)
                out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) idx ({idx}) {prefix}{opnd}{_fmt(x[ix], hex_)}")
    if out:
        sys.stdout.write("\n".join(out) + "\n")


def _fmt(v, hex_):
    if hex_:
        if isinstance(v, (np.floating,)):
            v = v.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[v.dtype.itemsize])
        return hex(int(v) & ((1 << (8 * np.dtype(type(v)).itemsize)) - 1)) if not isinstance(v, np.bool_) else hex(int(v))
    if isinstance(v, np.bool_):
        return str(int(v))
    return str(v)


def device_assert(ctx, cond, message, active, loc):
    c = cond if cond.dtype == np.bool_ else cond != 0
    bad = ~c
    if active is not None:
        bad = bad & bmask(active, c.ndim)
    if not bad.any():
        return
    shape = bad.shape
    if shape[0] == 1 and ctx.P > 1 and active is None:
        bad = np.broadcast_to(bad, (ctx.P,) + shape[1:])
    flat = int(np.argmax(bad.reshape(-1)))
    idx = np.unravel_index(flat, bad.shape)
    pid = ctx.pid_tuple(idx[0])
    lane = tuple(int(i) for i in idx[1:])
    lane_s = f" (tensor index {lane})" if lane else ""
    raise DeviceAssertionError(f"Device assertion failed: {message}{lane_s}", where_loc(loc), pid)


def unsupported(what, loc):
    raise KernelRuntimeError(f"{what} is not supported on the interpreter", where_loc(loc))
