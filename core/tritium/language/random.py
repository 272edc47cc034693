"""``tl.random``: Triton's counter-based Philox generator, as ``@jit`` functions the frontend inlines.

Bit-exact with Triton's: Philox-4x32 (or 4x64 with 64-bit counters) with the Weyl key increments and round
multipliers of Salmon et al., ``n_rounds`` rounds (default 10), key = the 64-bit seed split into (lo, hi) words;
the uniform float is ``(x < 0 ? ~x : x) * scale`` on the int32 (int64) view; normals are Box-Muller on two
uniforms.  ``randint``/``randint4x`` return ``uint32`` blocks like Triton 3.x.
"""
from ..source.function import jit
from . import core as _c
from . import semantic as _s
from . import functions as _f
from .core import builtin as _builtin

N_ROUNDS_DEFAULT = _c.constexpr(10)

# (key increment A, key increment B, round multiplier A, round multiplier B)
_PHILOX_4x32 = (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57)
_PHILOX_4x64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157)

# uint -> [0, 1) float scales: the largest value with INT_MAX * scale < 1.0 after float32 rounding
_SCALE_I32 = 4.6566127342e-10
_SCALE_I64 = 1.0842020432385337e-19

_uint32 = _c.uint32
_uint64 = _c.uint64
_int32 = _c.int32
_int64 = _c.int64


@_builtin
def _as_tensor(x):
    """A Python scalar or constexpr as a (scalar) tensor; tensors pass through."""
    return _s.to_tensor(x)


@_builtin
def _bits(x):
    return _c.constexpr(_s.to_tensor(x).type.scalar.primitive_bitwidth)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """``n_rounds`` Philox rounds on the counter (c0, c1, c2, c3) under the key (k0, k1), all uint32 or uint64."""
    if c0.dtype == _uint32:
        KA, KB, RA, RB = _PHILOX_4x32
    else:
        _f.static_assert(c0.dtype == _uint64, "philox_impl: counters must be uint32 or uint64")
        KA, KB, RA, RB = _PHILOX_4x64
    for _ in _f.static_range(n_rounds):
        prev0 = c0
        prev2 = c2
        c0 = _f.umulhi(RB, prev2) ^ c1 ^ k0
        c2 = _f.umulhi(RA, prev0) ^ c3 ^ k1
        c1 = prev2 * RB
        c3 = prev0 * RA
        k0 = k0 + KA
        k1 = k1 + KB
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """Philox on four counter blocks (32- or 64-bit integers) with an integer seed (scalar or block)."""
    seed = _as_tensor(seed)
    _f.static_assert(seed.dtype.is_int(), "philox: the seed must be an integer")
    seed = seed.to(_uint64)
    c0 = _as_tensor(c0)
    c1 = _as_tensor(c1)
    c2 = _as_tensor(c2)
    c3 = _as_tensor(c3)
    if _bits(c0) == 32:
        k_lo = (seed & 0xFFFFFFFF).to(_uint32)
        k_hi = ((seed >> 32) & 0xFFFFFFFF).to(_uint32)
        c0 = c0.to(_uint32, bitcast=True)
        c1 = c1.to(_uint32, bitcast=True)
        c2 = c2.to(_uint32, bitcast=True)
        c3 = c3.to(_uint32, bitcast=True)
    else:
        _f.static_assert(_bits(c0) == 64, "philox: counters must be 32- or 64-bit integers")
        k_lo = seed
        k_hi = _f.full((1, ), 0, dtype=_uint64)
        c0 = c0.to(_uint64, bitcast=True)
        c1 = c1.to(_uint64, bitcast=True)
        c2 = c2.to(_uint64, bitcast=True)
        c3 = c3.to(_uint64, bitcast=True)
    return philox_impl(c0, c1, c2, c3, k_lo, k_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for ``seed`` (scalar or block) and the ``offset`` block: the counter is
    (offset low word, offset high word, 0, 0)."""
    offset = _as_tensor(offset)
    lo = offset.to(_uint32)
    zero = lo * 0
    if _bits(offset) > 32:
        hi = (offset >> 32).to(_uint32)
    else:
        hi = zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """One block of random uint32 (the first of :func:`randint4x`'s four)."""
    r, _, _, _ = randint4x(seed, offset, n_rounds)
    return r


@jit
def uint_to_uniform_float(x):
    """A random 32/64-bit integer block -> float32 uniform in [0, 1)."""
    if x.dtype == _uint32 or x.dtype == _int32:
        x = x.to(_int32, bitcast=True)
        scale = _SCALE_I32
    else:
        _f.static_assert(x.dtype == _uint64 or x.dtype == _int64,
                         "uint_to_uniform_float: needs a 32- or 64-bit integer block")
        x = x.to(_int64, bitcast=True)
        scale = _SCALE_I64
    x = _f.where(x < 0, ~x, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offsets, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 uniform in [0, 1)."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3),
            uint_to_uniform_float(i4))


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks -> two standard normal blocks."""
    u1 = _f.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    radius = _f.sqrt(-2.0 * _f.log(u1))
    return radius * _f.cos(theta), radius * _f.sin(theta)


@jit
def randn(seed, offset, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 standard normals."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@jit
def randn4x(seed, offset, n_rounds: _c.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 standard normals."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4


__all__ = ["N_ROUNDS_DEFAULT", "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn",
           "randn4x", "pair_uniform_to_normal", "uint_to_uniform_float"]
