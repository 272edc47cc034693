"""``tl.dot_scaled``: the matrix product of microscaled (OCP MX) operands, as ``@jit`` functions the frontend inlines.

Each operand is upcast to the compute type (fp16 if either format is ``fp16``, else bf16) and multiplied by its
scales, then one ``tl.dot`` accumulates in fp32 -- the decomposition Triton 3.6 uses where the hardware has no
scaled MMA (Hopper, Ampere, the interpreter), so it runs on every backend:

* ``e2m1`` (fp4): two values per uint8, the first in the low nibble, packed along K (or along M / N with
  ``lhs_k_pack`` / ``rhs_k_pack`` False); each nibble becomes the compute type's bit pattern (sign, exponent rebiased,
  the subnormal 0.5 mapped, zero kept);
* ``e4m3`` / ``e5m2`` (fp8, as uint8 bits or fp8 tensors): a conversion (e5m2's infinities and NaNs kept);
* ``bf16`` / ``fp16``: a cast to the compute type;
* scales: uint8 e8m0 exponents, one per 32 consecutive K elements (``[M, K // 32]`` for lhs, ``[N, K // 32]`` for rhs),
  each ``2 ** (s - 127)``; 255 is NaN (unless ``fast_math``); ``None``: no scaling.
"""
from ..source.function import jit
from . import core as _c
from . import functions as _f

@jit
def _fp4_to_bits(x, TO_M_BITS: _c.constexpr, TO_BIAS: _c.constexpr, TO_HALF: _c.constexpr):
    """The two fp4 (e2m1) values of each uint8 of ``x`` as 16-bit patterns of the compute type (low nibble, high)."""
    em0 = x & 0x7
    em1 = x & 0x70
    x0 = (em0.to(_c.uint16) << (TO_M_BITS - 1)) | ((x & 0x8).to(_c.uint16) << 12)
    x1 = (em1.to(_c.uint16) << (TO_M_BITS - 1 - 4)) | ((x & 0x80).to(_c.uint16) << 8)
    # normal values: rebias the exponent; the subnormal (0bs001) is +-0.5; zero stays zero
    x0 = _f.where((em0 & 0x6) != 0, x0 + ((TO_BIAS - 1) << TO_M_BITS), x0)
    x1 = _f.where((em1 & 0x60) != 0, x1 + ((TO_BIAS - 1) << TO_M_BITS), x1)
    x0 = _f.where(em0 == 0x1, TO_HALF | (x0 & 0x8000), x0)
    x1 = _f.where(em1 == 0x10, TO_HALF | (x1 & 0x8000), x1)
    return x0, x1


@jit
def _upcast(v, scale, FMT: _c.constexpr, COMP: _c.constexpr, PACK_LAST: _c.constexpr, FAST_MATH: _c.constexpr):
    """Operand ``v`` oriented ``[rows, K]`` (fp4 packed along K when ``PACK_LAST``, else along the rows) as
    ``COMP`` values times its scales (``[rows, K // 32]``, or None)."""
    _f.static_assert(len(v.shape) == 2, "tl.dot_scaled: 3-D (batched) operands are not supported yet")
    if FMT == "e2m1":
        _f.static_assert(v.dtype == _c.uint8, "tl.dot_scaled: e2m1 operands are uint8 tensors (two values a byte)")
        if COMP == _c.bfloat16:
            x0, x1 = _fp4_to_bits(v, 7, 127, 16128)
        else:
            x0, x1 = _fp4_to_bits(v, 10, 15, 0x3800)
        if PACK_LAST:
            w = _f.interleave(x0, x1)
        else:
            w = _f.trans(_f.interleave(_f.trans(x0), _f.trans(x1)))
        up = w.to(COMP, bitcast=True)
    elif FMT == "e4m3" or FMT == "e5m2":
        if v.dtype == _c.uint8:
            f8 = v.to(_c.float8e4nv if FMT == "e4m3" else _c.float8e5, bitcast=True)
        else:
            f8 = v
        up = f8.to(COMP)
        if FMT == "e5m2":  # keep infinities and NaNs
            bits = f8.to(_c.uint8, bitcast=True)
            NONFINITE: _c.constexpr = 0x7C
            TOP: _c.constexpr = 0x7F80 if COMP == _c.bfloat16 else 0x7C00
            up = _f.where(bits & NONFINITE == NONFINITE, (up.to(_c.uint16, bitcast=True) | TOP).to(COMP, bitcast=True),
                          up)
    else:
        up = v.to(COMP)
    if scale is not None:
        _f.static_assert(scale.dtype == _c.uint8, "tl.dot_scaled: scales are uint8 (e8m0) tensors")
        R: _c.constexpr = up.shape[0]
        K: _c.constexpr = up.shape[1]
        _f.static_assert(scale.shape[0] == R and scale.shape[1] * 32 == K,
                         "tl.dot_scaled: a scale's shape must be [M, K // 32] for lhs and [N, K // 32] for rhs")
        if COMP == _c.bfloat16:
            s = (scale.to(_c.uint16) << 7).to(_c.bfloat16, bitcast=True)
        else:
            s = (scale.to(_c.uint32) << 23).to(_c.float32, bitcast=True).to(_c.float16)
        up3 = _f.reshape(up, [R, K // 32, 32]) * _f.expand_dims(s, 2)
        if not FAST_MATH:
            up3 = _f.where(_f.expand_dims(scale, 2) == 0xFF, float("nan"), up3)
        up = _f.reshape(up3, [R, K])
    return up


@jit
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=_c.float32):
    """``lhs @ rhs`` of microscaled operands (formats ``e2m1``, ``e4m3``, ``e5m2``, ``bf16``, ``fp16``; scales uint8
    e8m0 ``[M, K // 32]`` / ``[N, K // 32]`` or None), accumulated in fp32 (``out_dtype``), plus ``acc``."""
    _f.static_assert(lhs_format == "e2m1" or lhs_format == "e4m3" or lhs_format == "e5m2" or lhs_format == "bf16"
                     or lhs_format == "fp16", "tl.dot_scaled: lhs_format must be e2m1, e4m3, e5m2, bf16 or fp16")
    _f.static_assert(rhs_format == "e2m1" or rhs_format == "e4m3" or rhs_format == "e5m2" or rhs_format == "bf16"
                     or rhs_format == "fp16", "tl.dot_scaled: rhs_format must be e2m1, e4m3, e5m2, bf16 or fp16")
    _f.static_assert(lhs_k_pack or lhs_format == "e2m1",
                     "tl.dot_scaled: only e2m1 operands can be packed along a dimension other than K")
    _f.static_assert(rhs_k_pack or rhs_format == "e2m1",
                     "tl.dot_scaled: only e2m1 operands can be packed along a dimension other than K")
    _f.static_assert(out_dtype == _c.float32, "tl.dot_scaled: out_dtype must be float32")
    COMP: _c.constexpr = _c.float16 if lhs_format == "fp16" or rhs_format == "fp16" else _c.bfloat16
    a = _upcast(lhs, lhs_scale, lhs_format, COMP, lhs_k_pack, fast_math)
    b = _f.trans(_upcast(_f.trans(rhs), rhs_scale, rhs_format, COMP, rhs_k_pack, fast_math))
    return _f.dot(a, b, acc, out_dtype=out_dtype)
