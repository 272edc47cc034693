"""Integer, float and bf16 helpers of the generated program: the ``arith`` / ``math`` operations numpy has no
single function for.

Signless integers are stored as signed numpy ints: the unsigned operations reinterpret them (:func:`u`) and
convert back (:func:`s`).  bf16 values are float32 rounded to bf16; bf16 buffers hold the 16-bit patterns.
"""
from __future__ import annotations

import numpy as np

from .fp8 import fp8_bits, fp8_bits_to_f32

# ----------------------------------------------------------------------------------------------
# bf16
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
# Integers
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


def bitcast(x, dt, src_kind="", dst_kind=""):
    """``arith.bitcast`` to storage dtype ``dt``; ``src_kind`` / ``dst_kind``: "bf16" or an fp8 type's name where
    that side's values are held as float32 (their bit patterns are what is reinterpreted)."""
    if src_kind == "bf16":
        x = f32_to_bf16_bits(x)
    elif src_kind:
        x = fp8_bits(x, src_kind)
    if dst_kind == "bf16":
        return bf16_bits_to_f32(x.astype(np.uint16) if x.dtype.itemsize != 2 else x.view(np.uint16))
    if dst_kind:
        return fp8_bits_to_f32(x, dst_kind)
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
# Math
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
