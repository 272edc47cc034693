"""fp8 element types: values live in the generated program as float32 (every fp8 value is exactly a float32),
buffers hold the 8-bit patterns.  Triton's names and the MLIR types:

==========  ================  ====  ========  =================================================
Triton      MLIR              bias  largest   special values
==========  ================  ====  ========  =================================================
fp8e4nv     ``f8E4M3FN``      7     448       no infinities; NaN = S.1111.111
fp8e5       ``f8E5M2``        15    57344     IEEE: infinities S.11111.00, NaNs S.11111.xx
fp8e4b8     ``f8E4M3FNUZ``    8     240       no infinities, no -0; NaN = 0x80
fp8e5b16    ``f8E5M2FNUZ``    16    57344     no infinities, no -0; NaN = 0x80
fp8e4b15    ``f8E4M3B11FNUZ`` 15    1.875     every pattern finite (no inf, no NaN; -0 = 0x80)
==========  ================  ====  ========  =================================================

(fp8e4b15 is Triton's format for pre-Hopper GPUs, the top byte of an fp16 whose exponent is below 16; Triton
stands the MLIR type ``f8E4M3B11FNUZ`` in for it, whose own bias of 11 is never used: only the patterns are.  It
has no NaN: a NaN converts to 0x7F, the largest value, as Triton's clamp to [-1.875, 1.875] does.)

Conversions to fp8 are what the GPU's ``cvt.rn.satfinite`` does (the cuda backend's casts): round to nearest,
ties to even, magnitudes beyond the largest finite value (infinities included) saturate to it with their sign,
NaN stays NaN (the format's canonical NaN; fnuz formats have no -0, so a negative value rounding to zero is +0).
An fp64 source is first rounded to fp32, as the GPU converts it.  ``rtz`` truncates toward zero instead (also
saturating).  Conversions from fp8 are exact (a table of the 256 values).

Loads, stores and bitcasts move bit patterns, as on the GPU: :func:`fp8_bits` maps a value back to its own
pattern (an infinity to the infinity, not saturated), and a NaN pattern is held as a float32 NaN carrying it
(``_NAN_MARK`` | pattern, the sign in the sign bit), so a copy keeps every pattern.  Other NaNs convert to the
format's canonical NaN.
"""
from __future__ import annotations

import numpy as np

_NAN_MARK = 0x7FC0A500  # a quiet float32 NaN whose bits 8..15 say "an fp8 NaN pattern in bits 0..7"

#: MLIR type name -> (exponent bits, mantissa bits, bias, special values: "fn" / "ieee" / "fnuz")
FORMATS = {"f8E4M3FN": (4, 3, 7, "fn"), "f8E5M2": (5, 2, 15, "ieee"), "f8E4M3FNUZ": (4, 3, 8, "fnuz"),
           "f8E5M2FNUZ": (5, 2, 16, "fnuz"), "f8E4M3B11FNUZ": (4, 3, 15, "finite")}


class _Format:
    """One fp8 format's tables: ``values`` (float32[256], the value of each bit pattern), ``grid`` (float64, the
    non-negative finite values in order: pattern i is ``grid[i]``), ``nan`` (the canonical NaN pattern) and
    ``signed_zero``."""

    def __init__(self, name):
        ebits, mbits, bias, special = FORMATS[name]
        self.name = name
        codes = np.arange(256)
        sign = np.where(codes & 0x80, -1.0, 1.0)
        e = (codes >> mbits) & ((1 << ebits) - 1)
        m = codes & ((1 << mbits) - 1)
        mag = np.where(e == 0, m / 2.0 ** mbits * 2.0 ** (1 - bias), (1 + m / 2.0 ** mbits) * 2.0 ** (e - bias))
        vals = sign * mag
        top = (1 << ebits) - 1
        if special == "fn":          # S.1111.111 is NaN
            vals[(codes & 0x7F) == 0x7F] = np.nan
            n_finite = 0x7F
        elif special == "ieee":      # exponent all ones: infinities and NaNs
            vals[(e == top) & (m == 0)] = sign[(e == top) & (m == 0)] * np.inf
            vals[(e == top) & (m != 0)] = np.nan
            n_finite = top << mbits
        elif special == "finite":    # every pattern is a number
            n_finite = 0x80
        else:                        # fnuz: 0x80 is the one NaN
            vals[0x80] = np.nan
            n_finite = 0x80
        vals = vals.astype(np.float32)
        nan = np.flatnonzero(np.isnan(vals))
        vals.view(np.uint32)[nan] = np.uint32(_NAN_MARK) | nan.astype(np.uint32) | \
            np.where(nan & 0x80, np.uint32(0x80000000), np.uint32(0))
        self.values = vals
        self.grid = mag[:n_finite].astype(np.float64)
        self.nan = 0x80 if special == "fnuz" else 0x7F  # "finite": a NaN becomes the largest value
        self.signed_zero = special != "fnuz"


_FORMATS: dict = {}


def fmt(name) -> _Format:
    f = _FORMATS.get(name)
    if f is None:
        f = _FORMATS[name] = _Format(name)
    return f


def is_fp8(name) -> bool:
    return name in FORMATS


def fp8_bits_to_f32(bits, name):
    """fp8 bit patterns (any 8-bit integer array) -> their values as float32."""
    b = np.asarray(bits)
    return fmt(name).values[b.view(np.uint8) if b.dtype.itemsize == 1 else b.astype(np.uint8)]


def f32_to_fp8_bits(x, name, rtz=False):
    """Float values -> the bit patterns (uint8) of fp8 format ``name``: round to nearest even (``rtz``: toward
    zero), saturating to the largest finite value, NaN to the canonical NaN (see the module doc)."""
    f = fmt(name)
    x = np.asarray(x)
    if x.dtype != np.float32:
        x = x.astype(np.float32)  # fp64 (and fp16) through fp32, as the GPU converts
    a = np.abs(x).astype(np.float64)
    grid = f.grid
    n = grid.shape[0]
    i = np.searchsorted(grid, a)  # grid[i - 1] < a <= grid[i]; n beyond the largest (NaN too)
    hi = np.minimum(i, n - 1)
    lo = np.maximum(i - 1, 0)
    if rtz:
        code = np.where(grid[hi] <= a, hi, lo)
    else:
        dlo, dhi = a - grid[lo], grid[hi] - a
        code = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo & 1, hi, lo)))
    neg = np.signbit(x)
    if not f.signed_zero:
        neg = neg & (code != 0)
    bits = code.astype(np.uint8) | np.where(neg, np.uint8(0x80), np.uint8(0))
    nan = np.isnan(x)
    if nan.any():  # a NaN holding one of this format's NaN patterns keeps it, others are the canonical NaN
        u = np.ascontiguousarray(x).view(np.uint32)
        p = (u & np.uint32(0xFF)).astype(np.uint8)
        keep = ((u & np.uint32(0x7FFFFF00)) == np.uint32(_NAN_MARK)) & np.isnan(f.values[p].astype(np.float32))
        bits = np.where(nan, np.where(keep, p, np.uint8(f.nan)), bits)
    return bits.astype(np.uint8, copy=False)


def fp8_bits(x, name):
    """The bit patterns of fp8 values (float32 values of format ``name``, as loads and fp8 operations give them):
    what a store or a bitcast writes.  Exact, infinities included (:func:`f32_to_fp8_bits` otherwise)."""
    bits = f32_to_fp8_bits(x, name)
    if FORMATS[name][3] == "ieee":
        x = np.asarray(x)
        inf = np.isinf(x)
        if inf.any():
            bits = np.where(inf, np.where(np.signbit(x), np.uint8(0xFC), np.uint8(0x7C)), bits).astype(np.uint8)
    return bits


def round_fp8(x, name, rtz=False):
    """Float values rounded to fp8 format ``name`` (see :func:`f32_to_fp8_bits`), as float32."""
    return fmt(name).values[f32_to_fp8_bits(x, name, rtz)]


def round_rtz(x, dt):
    """Float values -> numpy float dtype ``dt`` (float16 / float32) rounded toward zero (``tt.fp_to_fp`` with
    ``rounding = rtz``): numpy's nearest conversion, stepped back toward zero where it rounded away (so finite
    values never become infinite)."""
    x = np.asarray(x)
    r = x.astype(dt)
    away = np.abs(r.astype(np.float64)) > np.abs(x.astype(np.float64))
    if away.any():
        r = np.where(away, np.nextafter(r, np.zeros((), dt)), r)
    return r


def round_bf16_rtz(x):
    """Float values -> bf16 rounded toward zero, as float32 (the high 16 bits of the float32; NaN stays NaN)."""
    x = round_rtz(x, np.float32)
    u = np.ascontiguousarray(x).view(np.uint32) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), x, u.view(np.float32))
