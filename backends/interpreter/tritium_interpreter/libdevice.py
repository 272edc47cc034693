"""NumPy equivalents of libdevice functions, for ``tt.extern_elementwise`` on the interpreter.

``lookup(symbol)`` -> a callable over NumPy arrays (``None`` when the symbol is unknown).  The symbols are those
of ``tl.extra.cuda.libdevice`` (``SYMBOLS`` there: symbol -> function name, argument and result dtypes); an
implementation is chosen by the symbol where signedness or width matters (``__nv_umulhi``, ``__nv_clzll``) and
by the function's name otherwise.  ``__ocml_*`` (AMD) names fall back to the function named after the prefix
and a type suffix.  Values arrive as the interpreter stores them: float32 / float64, and signless integers as
signed int32 / int64 (an unsigned argument is reinterpreted here); the caller casts the result to the result
type.  Rounding-mode variants (``_rz``, ``_rd``, ``_ru``) compute in a wider type and round in the mode's
direction (fp64 operations through long double).  Bessel functions: J_n by its periodic integral, Y_0 / Y_1 by their
power series (x <= 12) and Hankel's expansion beyond, Y_n by recurrence.  A symbol with no NumPy implementation
here is a CompilationError naming its line (``missing(symbol)`` says why).
"""
from __future__ import annotations

import math

import numpy as np

_F64, _LD = np.float64, np.longdouble
_INT = {32: (np.int32, np.uint32), 64: (np.int64, np.uint64)}


def _quiet(fn):
    def f(*a):
        with np.errstate(all="ignore"):
            return fn(*[np.asarray(x) for x in a])

    f.__name__ = getattr(fn, "__name__", "f")
    return f


def _wide(x):
    """A type in which ``x``'s operations are exact enough to round once more: f32 -> f64, f64 -> long double."""
    return x.astype(_F64) if x.dtype == np.float32 else x.astype(_LD)


def _round_to(v, dt, mode):
    """``v`` (wide) rounded to ``dt`` towards nearest (rn), zero (rz), -inf (rd) or +inf (ru)."""
    r = np.asarray(v.astype(dt))
    if mode == "rn":
        return r
    back = r.astype(v.dtype)
    if mode == "rz":
        fix = np.abs(back) > np.abs(v)
        to = np.zeros_like(r)
    elif mode == "rd":
        fix, to = back > v, np.full_like(r, -np.inf)
    else:
        fix, to = back < v, np.full_like(r, np.inf)
    return np.where(fix, np.nextafter(r, to), r)


def _map(fn, otype=_F64):
    """A Python scalar function over arrays (computed in float64)."""
    uf = np.frompyfunc(fn, 1, 1)

    def f(x):
        return np.asarray(uf(np.asarray(x, dtype=_F64)), dtype=otype).astype(x.dtype, copy=False)

    return f


def _safe(fn, pole):
    def g(v):
        try:
            return fn(v)
        except ValueError:
            return pole(v)
        except OverflowError:
            return math.inf
    return g


def _lgamma_pole(v):
    return math.nan if math.isnan(v) else math.inf


def _tgamma_pole(v):
    if v == 0:
        return math.copysign(math.inf, v)
    return math.nan


_erf = _map(math.erf)
_erfc = _map(math.erfc)


def _erfinv(y):
    y64 = y.astype(_F64)
    with np.errstate(all="ignore"):
        a = 0.147
        ln = np.log((1.0 - y64) * (1.0 + y64))
        t = 2.0 / (math.pi * a) + ln / 2.0
        x = np.sign(y64) * np.sqrt(np.sqrt(t * t - ln / a) - t)
        ok = np.isfinite(x) & (np.abs(y64) < 1)
        x = np.where(ok, x, 0.0)
        erf = np.frompyfunc(math.erf, 1, 1)
        for _ in range(4):  # Newton on erf(x) = y
            err = np.asarray(erf(x), dtype=_F64) - y64
            x = x - np.where(ok, err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x)), 0.0)
        x = np.where(np.abs(y64) == 1, np.sign(y64) * np.inf, np.where(np.abs(y64) > 1, np.nan, x))
        x = np.where(np.isnan(y64), np.nan, x)
    return x.astype(y.dtype)


def _erfcx(x):
    x64 = x.astype(_F64)
    with np.errstate(all="ignore"):
        direct = np.exp(x64 * x64) * _erfc(x64)
        big = 1.0 / (x64 * math.sqrt(math.pi)) * (1.0 - 0.5 / (x64 * x64) + 0.75 / x64 ** 4)
        r = np.where(x64 > 25.0, big, direct)
    return r.astype(x.dtype)


def _round_half_away(x):
    t = np.trunc(x)
    d = x - t
    return np.where(np.abs(d) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _sinpi(x, fn):
    x64 = _wide(x)
    r = x64 - 2.0 * np.rint(x64 / 2.0)  # exact: r in [-1, 1]
    return fn(_LD(math.pi) * r.astype(_LD) if x.dtype == np.float64 else math.pi * r).astype(x.dtype)


def _frexp_exp(x):
    return np.frexp(x)[1].astype(np.int64) - 1


def _logb(x):
    r = _frexp_exp(x).astype(x.dtype)
    r = np.where(x == 0, -np.inf, r)
    return np.where(np.isinf(x), np.inf, np.where(np.isnan(x), np.nan, r)).astype(x.dtype)


def _ilogb(x):
    imin, imax = -2 ** 31, 2 ** 31 - 1
    r = np.where(np.isfinite(x) & (x != 0), _frexp_exp(np.where(np.isfinite(x), x, 1)), imin)
    return np.where(np.isinf(x), imax, r).astype(np.int32)


def _to_int(x, mode, bits, unsigned):
    """A float rounded by ``mode`` and saturated to a (un)signed integer of ``bits``; NaN -> 0."""
    w = _wide(x)
    r = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode](w)
    lo, hi = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    r = np.where(np.isnan(r), 0, r)
    sdt, udt = _INT[bits]
    big = r >= hi  # hi is not exact in the float type: saturate by comparison
    small = r <= lo
    safe = np.where(big | small, 0, r)
    out = safe.astype(udt if unsigned else sdt)
    out = np.where(big, udt(hi) if unsigned else sdt(hi), out)
    out = np.where(small, udt(lo) if unsigned else sdt(lo), out)
    return out.astype(udt if unsigned else sdt).view(sdt) if unsigned else out.astype(sdt)


def _uview(x):
    """Signless integers stored as signed -> their unsigned values."""
    return x.view(_INT[x.dtype.itemsize * 8][1]) if x.dtype.kind == "i" else x


def _from_int(x, unsigned, dt, mode):
    v = (_uview(np.ascontiguousarray(x)) if unsigned else x).astype(_LD)
    return _round_to(v, dt, mode)


def _bitlen(u):
    """Bit length of non-negative integers below 2**53 (or powers of two below 2**64)."""
    return np.frexp(u.astype(_F64))[1].astype(np.int32)


def _clz(x, bits):
    u = _uview(np.ascontiguousarray(x)).astype(np.uint64)
    if bits == 32:
        return (32 - _bitlen(u & 0xFFFFFFFF)).astype(np.int32)
    hi, lo = u >> np.uint64(32), u & np.uint64(0xFFFFFFFF)
    return np.where(hi != 0, 32 - _bitlen(hi), 64 - _bitlen(lo)).astype(np.int32)


def _ffs(x):
    u = _uview(np.ascontiguousarray(x)).astype(np.uint64)
    low = u & (~u + np.uint64(1))
    return np.where(u == 0, 0, _bitlen(low)).astype(np.int32)


_BREV = [(1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F), (8, 0x00FF00FF00FF00FF),
         (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)]


def _brev(x, bits):
    v = _uview(np.ascontiguousarray(x)).astype(np.uint64)
    for s, m in _BREV:
        if s >= bits:
            break
        s, m = np.uint64(s), np.uint64(m)
        v = ((v >> s) & m) | ((v & m) << s)
    if bits == 32:
        v = v & np.uint64(0xFFFFFFFF)
        return v.astype(np.uint32).view(np.int32)
    return v.view(np.int64)


def _mulhi(x, y, bits, unsigned):
    if bits == 32:
        a = _uview(x).astype(np.int64) if unsigned else x.astype(np.int64)
        b = _uview(y).astype(np.int64) if unsigned else y.astype(np.int64)
        if unsigned:
            return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32).view(np.int32)
        return ((a * b) >> 32).astype(np.int32)
    conv = (lambda v: int(v) & (2 ** 64 - 1)) if unsigned else int
    f = np.frompyfunc(lambda a, b: ((conv(a) * conv(b)) >> 64) & (2 ** 64 - 1), 2, 1)
    return np.asarray(f(x, y), dtype=np.uint64).view(np.int64)


def _low32(v):
    return (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _s24(x):
    v = x.astype(np.int64) & 0xFFFFFF
    return (v ^ 0x800000) - 0x800000


def _byte_perm(x, y, s):
    x, y, s = np.broadcast_arrays(x, y, s)
    both = (_uview(np.ascontiguousarray(y)).astype(np.uint64) << np.uint64(32)) | \
        _uview(np.ascontiguousarray(x)).astype(np.uint64)
    sel = s.astype(np.int64)
    out = np.zeros(both.shape, np.uint64)
    for i in range(4):
        k = ((sel >> (4 * i)) & 7).astype(np.uint64)
        out |= ((both >> (k * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return out.astype(np.uint32).view(np.int32)


def _minmax(fn, unsigned):
    def f(x, y):
        if unsigned:
            return fn(_uview(np.ascontiguousarray(x)), _uview(np.ascontiguousarray(y))).view(x.dtype)
        return fn(x, y)
    return f


def _periodic_mean(x, f):
    """The mean of ``f(tau)`` over an equispaced grid of [0, 2 pi): the trapezoidal rule, exact to rounding for
    the smooth periodic integrands of the Bessel integrals once the grid resolves them."""
    m = float(np.max(np.abs(x), initial=0.0)) if np.size(x) else 0.0
    npts = int(m) + 64
    acc = np.zeros(np.shape(x), _F64)
    for k in range(npts):
        acc += f(2 * math.pi * k / npts)
    return acc / npts


def _jn(n, x):
    """Bessel J_n (integer n): (1/2 pi) * integral over [0, 2 pi) of cos(n t - x sin t)."""
    x64 = np.asarray(x, _F64)
    n64 = np.asarray(n, _F64)
    return _periodic_mean(x64, lambda t: np.cos(n64 * t - x64 * math.sin(t))).astype(np.asarray(x).dtype)


_EULER = 0.5772156649015329


def _y01_series(n, x):
    """Y_0 / Y_1 (``n`` 0 or 1) for 0 < x <= 12 from their power series (float64; the largest term is ~4e3, so about
    1e-12 of absolute error):  Y_n = (2/pi) ln(x/2) J_n - (1/pi) [n / (x/2)] - (1/pi) sum_k (psi(k+1) +
    psi(n+k+1)) (-x^2/4)^k (x/2)^n / (k! (n+k)!),  psi(m+1) = -gamma + H_m."""
    h = x / 2
    q = -h * h
    jn = np.zeros_like(x)
    tail = np.zeros_like(x)
    term = h ** n / math.factorial(n)  # (-x^2/4)^k (x/2)^n / (k! (n+k)!) at k = 0
    hk, hnk = 0.0, sum(1.0 / j for j in range(1, n + 1))  # H_k, H_(n+k)
    for k in range(60):
        jn += term
        tail += (hk + hnk - 2 * _EULER) * term
        term = term * q / ((k + 1) * (n + k + 1))
        hk += 1.0 / (k + 1)
        hnk += 1.0 / (n + k + 1)
    y = (2 / math.pi) * np.log(h) * jn - tail / math.pi
    return y - (1 / (math.pi * h) if n == 1 else 0.0)


def _y01_asymptotic(n, x):
    """Y_0 / Y_1 for x > 12 from Hankel's expansion, summed while its terms shrink (the smallest is below
    e^(-2x) ~ 4e-11 of the value):  Y_n = sqrt(2 / (pi x)) (P sin chi + Q cos chi), chi = x - (n/2 + 1/4) pi."""
    mu = 4.0 * n * n
    p, qs = np.ones_like(x), np.zeros_like(x)
    a = np.ones_like(x)
    live = np.ones(x.shape, bool)
    for k in range(1, 40):
        nxt = a * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
        live &= np.abs(nxt) < np.abs(a)
        a = np.where(live, nxt, 0.0)
        if k % 2:  # Q = a1 - a3 + a5 - ...
            qs += a if k % 4 == 1 else -a
        else:  # P = 1 - a2 + a4 - ...
            p += a if k % 4 == 0 else -a
    chi = x - (n / 2 + 0.25) * math.pi
    return np.sqrt(2 / (math.pi * x)) * (p * np.sin(chi) + qs * np.cos(chi))


def _y01(n, x):
    x64 = np.asarray(x, _F64)
    out = np.full(x64.shape, np.nan)
    out[x64 == 0] = -np.inf
    out[x64 == np.inf] = 0.0
    small = (x64 > 0) & (x64 <= 12)
    big = (x64 > 12) & np.isfinite(x64)
    out[small] = _y01_series(n, x64[small])
    out[big] = _y01_asymptotic(n, x64[big])
    return out


def _yn(n, x):
    """Bessel Y_n (integer n) of the second kind: Y_0 and Y_1 (:func:`_y01`), then the upward recurrence
    Y_(k+1) = (2k / x) Y_k - Y_(k-1), stable for Y; Y_(-n) = (-1)^n Y_n.  NaN for x < 0, -inf at 0."""
    dt = np.asarray(x).dtype
    x64 = np.asarray(x, _F64)
    n64 = np.broadcast_to(np.asarray(n, np.int64), x64.shape)
    m = np.abs(n64)
    y0, y1 = _y01(0, x64), _y01(1, x64)
    out = np.where(m == 0, y0, y1)
    prev, cur = y0, y1
    for k in range(1, int(m.max(initial=1))):
        with np.errstate(all="ignore"):
            prev, cur = cur, (2 * k / x64) * cur - prev
        out = np.where(m == k + 1, cur, out)
    out = np.where((n64 < 0) & (m % 2 == 1), -out, out)
    out = np.where(x64 == 0, -np.inf, out)
    return out.astype(dt)


def _i1(x):
    """Modified Bessel I_1: (1/2 pi) * integral over [0, 2 pi) of exp(x cos t) cos t."""
    x64 = np.asarray(x, _F64)
    return _periodic_mean(x64, lambda t: np.exp(x64 * math.cos(t)) * math.cos(t)).astype(x.dtype)


def _norm(*a):
    w = [_wide(x) for x in a]
    return np.sqrt(sum(v * v for v in w)).astype(a[0].dtype)


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0)).astype(x.dtype)


def _remainder(x, y):
    f = np.frompyfunc(lambda a, b: math.remainder(a, b) if b != 0 and math.isfinite(a) else math.nan, 2, 1)
    return np.asarray(f(x.astype(_F64), y.astype(_F64)), dtype=_F64).astype(x.dtype)


def _fma(x, y, z, mode="rn"):
    return _round_to(_wide(x) * _wide(y) + _wide(z), x.dtype, mode)


def _cast(dt):
    return lambda x: x.astype(dt)


# function name -> implementation (arguments as the interpreter holds them)
_BY_NAME = {
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "fabs": np.abs, "abs": np.abs, "sqrt": np.sqrt,
    "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype), "cbrt": np.cbrt,
    "rcbrt": lambda x: (1 / np.cbrt(x)).astype(x.dtype), "exp": np.exp, "exp2": np.exp2,
    "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "logb": _logb, "ilogb": _ilogb, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "sinpi": lambda x: _sinpi(x, np.sin), "cospi": lambda x: _sinpi(x, np.cos), "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "erfc": _erfc,
    "erfinv": _erfinv, "erfcinv": lambda x: _erfinv((1 - x.astype(_F64))).astype(x.dtype), "erfcx": _erfcx,
    "normcdf": lambda x: (0.5 * _erfc(-x.astype(_F64) / math.sqrt(2))).astype(x.dtype),
    "normcdfinv": lambda x: (math.sqrt(2) * _erfinv(2 * x.astype(_F64) - 1)).astype(x.dtype),
    "lgamma": _map(_safe(math.lgamma, _lgamma_pole)), "tgamma": _map(_safe(math.gamma, _tgamma_pole)),
    "cyl_bessel_i0": lambda x: np.i0(x.astype(_F64)).astype(x.dtype), "cyl_bessel_i1": _i1,
    "j0": lambda x: _jn(0, x), "j1": lambda x: _jn(1, x), "jn": _jn,
    "y0": lambda x: _yn(0, x), "y1": lambda x: _yn(1, x), "yn": _yn,
    "atan2": np.arctan2, "hypot": np.hypot, "rhypot": lambda x, y: (1 / np.hypot(x, y)).astype(x.dtype),
    "fmod": np.fmod, "remainder": _remainder, "copysign": np.copysign, "nextafter": np.nextafter,
    "fdim": _fdim, "fmin": np.fmin, "fmax": np.fmax, "min": np.fmin, "max": np.fmax,
    "pow": lambda x, y: np.power(x, y.astype(x.dtype)),
    "fma": _fma, "norm3d": _norm, "norm4d": _norm,
    "rnorm3d": lambda *a: (1 / _norm(*a)).astype(a[0].dtype), "rnorm4d": lambda *a: (1 / _norm(*a)).astype(a[0].dtype),
    "isnan": lambda x: np.isnan(x).astype(np.int32), "isinf": lambda x: np.isinf(x).astype(np.int32),
    "signbit": lambda x: np.signbit(x).astype(np.int32), "finitef": lambda x: np.isfinite(x).astype(np.int32),
    "isfinited": lambda x: np.isfinite(x).astype(np.int32),
    "llrint": lambda x: _to_int(x, "rn", 64, False), "llround": lambda x: _to_int(_round_half_away(x), "rz", 64, False),
    "ldexp": lambda x, n: np.ldexp(x, n.astype(np.int32)), "scalbn": lambda x, n: np.ldexp(x, n.astype(np.int32)),
    "saturatef": lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(x.dtype),
    "rcp64h": lambda x: (1 / x).astype(x.dtype), "rsqrt_rn": lambda x: (1 / np.sqrt(_wide(x))).astype(x.dtype),
    "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan, "fast_expf": np.exp,
    "fast_exp10f": lambda x: np.power(x.dtype.type(10), x), "fast_logf": np.log, "fast_log2f": np.log2,
    "fast_log10f": np.log10, "fast_powf": np.power, "fast_dividef": np.true_divide,
    "int2double_rn": _cast(_F64), "int_as_float": lambda x: x.astype(np.int32).view(np.float32),
    "uint_as_float": lambda x: x.astype(np.int32).view(np.float32),
    "float_as_int": lambda x: np.ascontiguousarray(x).view(np.int32),
    "float_as_uint": lambda x: np.ascontiguousarray(x).view(np.int32),
    "longlong_as_double": lambda x: np.ascontiguousarray(x.astype(np.int64)).view(_F64),
    "double_as_longlong": lambda x: np.ascontiguousarray(x).view(np.int64),
    "hiloint2double": lambda h, lo: np.ascontiguousarray(
        (h.astype(np.int64) << 32) | (lo.astype(np.int64) & 0xFFFFFFFF)).view(_F64),
    "double2loint": lambda x: _low32(np.ascontiguousarray(x).view(np.int64)),
    "double2hiint": lambda x: (np.ascontiguousarray(x).view(np.int64) >> 32).astype(np.int32),
    "byte_perm": _byte_perm,
}

# symbol (without __nv_) -> implementation, where the name alone does not say enough
_BY_SYMBOL = {
    "clz": lambda x: _clz(x, 32), "clzll": lambda x: _clz(x, 64),
    "popc": lambda x: np.bitwise_count(_uview(np.ascontiguousarray(x))).astype(np.int32),
    "popcll": lambda x: np.bitwise_count(_uview(np.ascontiguousarray(x))).astype(np.int32),
    "ffs": _ffs, "ffsll": _ffs, "brev": lambda x: _brev(x, 32), "brevll": lambda x: _brev(x, 64),
    "mulhi": lambda x, y: _mulhi(x, y, 32, False), "umulhi": lambda x, y: _mulhi(x, y, 32, True),
    "mul64hi": lambda x, y: _mulhi(x, y, 64, False), "umul64hi": lambda x, y: _mulhi(x, y, 64, True),
    "mul24": lambda x, y: _low32(_s24(x) * _s24(y)),
    "umul24": lambda x, y: _low32((x.astype(np.int64) & 0xFFFFFF) * (y.astype(np.int64) & 0xFFFFFF)),
    "hadd": lambda x, y: ((x.astype(np.int64) + y.astype(np.int64)) >> 1).astype(np.int32),
    "rhadd": lambda x, y: ((x.astype(np.int64) + y.astype(np.int64) + 1) >> 1).astype(np.int32),
    "uhadd": lambda x, y: _low32((_uview(x).astype(np.int64) + _uview(y).astype(np.int64)) >> 1),
    "urhadd": lambda x, y: _low32((_uview(x).astype(np.int64) + _uview(y).astype(np.int64) + 1) >> 1),
    "sad": lambda x, y, z: _low32(np.abs(x.astype(np.int64) - y.astype(np.int64)) + _uview(z).astype(np.int64)),
    "usad": lambda x, y, z: _low32(np.abs(_uview(x).astype(np.int64) - _uview(y).astype(np.int64))
                                   + _uview(z).astype(np.int64)),
    "abs": np.abs, "llabs": np.abs, "powif": lambda x, n: np.power(x, n.astype(x.dtype)),
    "powi": lambda x, n: np.power(x, n.astype(x.dtype)),
    "min": np.minimum, "llmin": np.minimum, "max": np.maximum, "llmax": np.maximum,
    "umin": _minmax(np.minimum, True), "ullmin": _minmax(np.minimum, True),
    "umax": _minmax(np.maximum, True), "ullmax": _minmax(np.maximum, True),
    "uint2double_rn": lambda x: _uview(np.ascontiguousarray(x)).astype(_F64),
}


def _rounded(name):
    """Implementations of <op>_<mode> and the <from>2<to>_<mode> conversions."""
    base, _, mode = name.rpartition("_")
    if mode not in ("rn", "rz", "rd", "ru"):
        return None
    ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b, "rcp": lambda a: 1 / a, "sqrt": np.sqrt}
    if base in ops:
        op = ops[base]
        return lambda *a: _round_to(op(*[_wide(x) for x in a]), a[0].dtype, mode)
    if base == "fma":
        return lambda x, y, z: _fma(x, y, z, mode)
    src, _, dst = base.partition("2")
    fdst = {"float": np.float32, "double": _F64}.get(dst)
    if src in ("float", "double") and fdst is not None:
        return lambda x: _round_to(_wide(x), fdst, mode)
    if src in ("float", "double"):
        bits, unsigned = {"int": (32, False), "uint": (32, True), "ll": (64, False), "ull": (64, True)}[dst]
        return lambda x: _to_int(x, mode, bits, unsigned)
    if fdst is not None and src in ("int", "uint", "ll", "ull"):
        return lambda x: _from_int(x, src.startswith("u"), fdst, mode)
    return None


def _build():
    from tritium.language.extra.cuda.libdevice import SYMBOLS
    table = {}
    for sym, (name, _args, _ret) in SYMBOLS.items():
        short = sym[len("__nv_"):]
        fn = _BY_SYMBOL.get(short) or _BY_NAME.get(name) or _rounded(name)
        if fn is not None:
            table[sym] = _quiet(fn)
    return table


FN = _build()


def missing(symbol: str) -> str:
    """Why ``symbol`` cannot run on the interpreter."""
    from tritium.language.extra.cuda.libdevice import SYMBOLS
    if symbol in SYMBOLS:
        return f"the interpreter has no NumPy implementation of libdevice.{SYMBOLS[symbol][0]} ('{symbol}')"
    return f"the interpreter does not know the external function '{symbol}' (tt.extern_elementwise)"


def lookup(symbol: str):
    """The NumPy implementation of an external function's symbol, or None."""
    fn = FN.get(symbol)
    if fn is not None:
        return fn
    for p in ("__nv_", "__ocml_", "__ockl_"):
        if symbol.startswith(p):
            name = symbol[len(p):]
            for suffix in ("", "_f32", "_f64", "_f16", "f"):
                base = name[:len(name) - len(suffix)] if suffix else name
                if name.endswith(suffix) and base in _BY_NAME:
                    return _quiet(_BY_NAME[base])
    return None
