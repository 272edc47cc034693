"""tl.histogram, tl.gather, tl.inline_asm_elementwise and tl.extra(.cuda).libdevice on the interpreter: results
against NumPy / Python's math on random inputs (several dtypes and shapes, masks over non-power-of-two sizes);
wrong uses are CompilationErrors naming the kernel's line.  Kernels: tests/nvidia/extra_ops_kernels.py."""
import math

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tests.nvidia import extra_ops_kernels as K
from tritium.errors import CompilationError
from tritium.language.extra import libdevice

pytest.importorskip("mlir.ir")


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


RNG = np.random.default_rng(20260321)


# ---------------------------------------------------------------------------------------------
# histogram
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.int32, np.uint32])
@pytest.mark.parametrize("n,block,bins", [(1, 16, 8), (100, 128, 16), (777, 1024, 64), (1000, 1024, 256),
                                          (37, 64, 2)])
def test_histogram_masked(n, block, bins, dt):
    lo = 0 if dt == np.uint32 else -5
    x = RNG.integers(lo, bins + 5, n).astype(dt)  # some values outside [0, bins): not counted
    o = np.full(bins, -1, np.int32)
    K.histogram_k[(1,)](x, o, n, BLOCK=block, BINS=bins, MASKED=True)
    keep = np.arange(n) % 3 != 1
    v = x.astype(np.int64)[keep]
    ref = np.bincount(v[(v >= 0) & (v < bins)], minlength=bins)
    np.testing.assert_array_equal(o, ref)
    assert o.sum() > 0 or n == 1


@pytest.mark.parametrize("n,bins", [(128, 32), (256, 256), (64, 128)])
def test_histogram_unmasked_member(n, bins):
    x = RNG.integers(0, bins, n).astype(np.int32)
    o = np.full(bins, -1, np.int32)
    K.histogram_k[(1,)](x, o, n, BLOCK=n, BINS=bins, MASKED=False)
    np.testing.assert_array_equal(o, np.bincount(x, minlength=bins))


# ---------------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sdt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("idt", [np.int32, np.int64])
@pytest.mark.parametrize("n,k", [(16, 16), (64, 8), (8, 128)])
def test_gather_1d(n, k, sdt, idt):
    s = (RNG.standard_normal(n) * 100).astype(sdt)
    i = RNG.integers(0, n, k).astype(idt)
    o = np.zeros(k, sdt)
    K.gather_1d[(1,)](s, i, o, N=n, K=k)
    np.testing.assert_array_equal(o, s[i])


@pytest.mark.parametrize("sdt", [np.float32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("m,n,other", [(8, 16, 4), (32, 8, 64), (4, 4, 4)])
def test_gather_2d(m, n, other, axis, sdt):
    s = (RNG.standard_normal((m, n)) * 100).astype(sdt)
    ax = axis % 2
    ishape = (other, n) if ax == 0 else (m, other)
    i = RNG.integers(0, s.shape[ax], ishape).astype(np.int32)
    o = np.zeros(ishape, sdt)
    K.gather_2d[(1,)](s, i, o, M=m, N=n, IM=ishape[0], IN=ishape[1], AXIS=axis)
    np.testing.assert_array_equal(o, np.take_along_axis(s, i, ax))


# ---------------------------------------------------------------------------------------------
# libdevice
# ---------------------------------------------------------------------------------------------

def _vec(f, nin=1):
    return np.frompyfunc(f, nin, 1)


def _half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


# name -> (reference in float64, input sampler(n) in float64)
_U = {
    "exp": (np.exp, lambda n: RNG.uniform(-10, 10, n)),
    "exp2": (np.exp2, lambda n: RNG.uniform(-10, 10, n)),
    "exp10": (lambda x: 10.0 ** x, lambda n: RNG.uniform(-5, 5, n)),
    "expm1": (np.expm1, lambda n: RNG.uniform(-3, 3, n)),
    "log": (np.log, lambda n: RNG.uniform(0.01, 100, n)),
    "log2": (np.log2, lambda n: RNG.uniform(0.01, 100, n)),
    "log10": (np.log10, lambda n: RNG.uniform(0.01, 100, n)),
    "log1p": (np.log1p, lambda n: RNG.uniform(-0.9, 100, n)),
    "sqrt": (np.sqrt, lambda n: RNG.uniform(0, 100, n)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda n: RNG.uniform(0.01, 100, n)),
    "cbrt": (np.cbrt, lambda n: RNG.uniform(-100, 100, n)),
    "rcbrt": (lambda x: 1 / np.cbrt(x), lambda n: RNG.uniform(0.1, 100, n)),
    "sin": (np.sin, lambda n: RNG.uniform(-10, 10, n)),
    "cos": (np.cos, lambda n: RNG.uniform(-10, 10, n)),
    "tan": (np.tan, lambda n: RNG.uniform(-1.4, 1.4, n)),
    "sinpi": (lambda x: np.sin(np.pi * x), lambda n: RNG.uniform(-4, 4, n)),
    "cospi": (lambda x: np.cos(np.pi * x), lambda n: RNG.uniform(-4, 4, n)),
    "asin": (np.arcsin, lambda n: RNG.uniform(-1, 1, n)),
    "acos": (np.arccos, lambda n: RNG.uniform(-1, 1, n)),
    "atan": (np.arctan, lambda n: RNG.uniform(-50, 50, n)),
    "sinh": (np.sinh, lambda n: RNG.uniform(-5, 5, n)),
    "cosh": (np.cosh, lambda n: RNG.uniform(-5, 5, n)),
    "tanh": (np.tanh, lambda n: RNG.uniform(-5, 5, n)),
    "asinh": (np.arcsinh, lambda n: RNG.uniform(-50, 50, n)),
    "acosh": (np.arccosh, lambda n: RNG.uniform(1, 50, n)),
    "atanh": (np.arctanh, lambda n: RNG.uniform(-0.99, 0.99, n)),
    "erf": (_vec(math.erf), lambda n: RNG.uniform(-3, 3, n)),
    "erfc": (_vec(math.erfc), lambda n: RNG.uniform(-3, 3, n)),
    "erfinv": (None, lambda n: RNG.uniform(-0.99, 0.99, n)),  # checked through erf
    "normcdf": (lambda x: 0.5 * _vec(math.erfc)(-x / math.sqrt(2)), lambda n: RNG.uniform(-4, 4, n)),
    "lgamma": (_vec(math.lgamma), lambda n: RNG.uniform(0.1, 20, n)),
    "tgamma": (_vec(math.gamma), lambda n: RNG.uniform(0.1, 10, n)),
    "floor": (np.floor, lambda n: RNG.uniform(-100, 100, n)),
    "ceil": (np.ceil, lambda n: RNG.uniform(-100, 100, n)),
    "trunc": (np.trunc, lambda n: RNG.uniform(-100, 100, n)),
    "round": (_half_away, lambda n: np.round(RNG.uniform(-100, 100, n) * 2) / 2),  # halves included
    "rint": (np.rint, lambda n: np.round(RNG.uniform(-100, 100, n) * 2) / 2),
    "nearbyint": (np.rint, lambda n: RNG.uniform(-100, 100, n)),
    "fabs": (np.abs, lambda n: RNG.uniform(-100, 100, n)),
    "abs": (np.abs, lambda n: RNG.uniform(-100, 100, n)),
    "j0": (None, lambda n: RNG.uniform(-20, 20, n)),  # checked against a series below
    "y0": ("mpmath", lambda n: RNG.uniform(0.01, 40, n)),  # against mpmath (torch's dependency)
    "y1": ("mpmath", lambda n: RNG.uniform(0.01, 40, n)),
    "fast_expf": (np.exp, lambda n: RNG.uniform(-10, 10, n)),
    "fast_logf": (np.log, lambda n: RNG.uniform(0.01, 100, n)),
    "fast_sinf": (np.sin, lambda n: RNG.uniform(-3, 3, n)),
}


def _bessely(n, x):
    mpmath = pytest.importorskip("mpmath")
    return np.array([float(mpmath.bessely(int(k), float(v))) for k, v in np.broadcast(n, x)])


@triton.jit
def _yn_kernel(N, X, O, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    tl.store(O + r, libdevice.yn(tl.load(N + r, mask=m, other=0), tl.load(X + r, mask=m, other=1)), mask=m)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_libdevice_yn_and_the_edges(dt):
    """Y_n of the second kind for n in -6..6 on the interpreter (series, Hankel's expansion, recurrence) against
    mpmath; -inf at 0, NaN below 0 (as libdevice)."""
    n = 300
    order = RNG.integers(-6, 7, n).astype(np.int32)
    x = RNG.uniform(0.3, 60, n).astype(dt)
    o = np.full(n, np.nan, dt)
    _yn_kernel[(triton.cdiv(n, 128),)](order, x, o, n, BLOCK=128)
    tol = dict(rtol=2e-6, atol=1e-6) if dt == np.float32 else dict(rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(o.astype(np.float64), _bessely(order, x.astype(np.float64)), **tol)
    edge = np.array([0.0, -1.0, np.inf], dt)
    oe = np.zeros(3, dt)
    K.ld_unary[(1,)](edge, oe, 3, NAME="y0", BLOCK=4)
    assert oe[0] == -np.inf and np.isnan(oe[1]) and oe[2] == 0


def _j0_series(x):
    out = np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(0, 80):
        if k:
            term = term * (-(x * x) / 4) / (k * k)
        out = out + term
    return out


@pytest.mark.parametrize("name,dt", [(nm, dt) for nm in sorted(_U) for dt in (np.float32, np.float64)
                                     if dt == np.float32 or not nm.startswith("fast_")])  # fast_*f: fp32 only
def test_libdevice_unary(name, dt):
    ref_fn, sample = _U[name]
    n = 300  # not a multiple of BLOCK: masked tail, 3 programs
    x = sample(n).astype(dt)
    o = np.full(n, np.nan, dt)
    K.ld_unary[(triton.cdiv(n, 128),)](x, o, n, NAME=name, BLOCK=128)
    x64 = x.astype(np.float64)
    tol = dict(rtol=2e-6, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
    if name == "erfinv":
        np.testing.assert_allclose(_vec(math.erf)(o.astype(np.float64)).astype(np.float64), x64, **tol)
    elif name == "j0":
        np.testing.assert_allclose(o, _j0_series(x64), rtol=1e-5, atol=1e-6 if dt == np.float32 else 1e-9)
    elif ref_fn == "mpmath":
        np.testing.assert_allclose(o.astype(np.float64), _bessely(int(name[1]), x64),
                                   **(tol if dt == np.float32 else dict(rtol=1e-9, atol=1e-10)))
    else:
        ref = np.asarray(ref_fn(x64), dtype=np.float64)
        np.testing.assert_allclose(o.astype(np.float64), ref, **tol)
    assert np.any(o != 0)


_B = {
    "atan2": (np.arctan2, lambda n: RNG.uniform(-10, 10, n), lambda n: RNG.uniform(-10, 10, n)),
    "pow": (np.power, lambda n: RNG.uniform(0.1, 4, n), lambda n: RNG.uniform(-3, 3, n)),
    "fmod": (np.fmod, lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(1, 10, n)),
    "remainder": (_vec(math.remainder, 2), lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(1, 10, n)),
    "hypot": (np.hypot, lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(-100, 100, n)),
    "copysign": (np.copysign, lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(-1, 1, n)),
    "fmin": (np.fmin, lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(-100, 100, n)),
    "fmax": (np.fmax, lambda n: RNG.uniform(-100, 100, n), lambda n: RNG.uniform(-100, 100, n)),
    "fdim": (lambda x, y: np.where(x > y, x - y, 0.0), lambda n: RNG.uniform(-10, 10, n),
             lambda n: RNG.uniform(-10, 10, n)),
    "div_rn": (np.divide, lambda n: RNG.uniform(-10, 10, n), lambda n: RNG.uniform(1, 10, n)),
    "add_rn": (np.add, lambda n: RNG.uniform(-10, 10, n), lambda n: RNG.uniform(-10, 10, n)),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_B))
def test_libdevice_binary(name, dt):
    ref_fn, sx, sy = _B[name]
    n = 200
    x, y = sx(n).astype(dt), sy(n).astype(dt)
    o = np.full(n, np.nan, dt)
    K.ld_binary[(triton.cdiv(n, 64),)](x, y, o, n, NAME=name, BLOCK=64)
    ref = np.asarray(ref_fn(x.astype(np.float64), y.astype(np.float64)), dtype=np.float64)
    tol = dict(rtol=2e-6, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o.astype(np.float64), ref, **tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_libdevice_fma_and_pow_int(dt):
    n = 100
    x, y, z = (RNG.uniform(-10, 10, n).astype(dt) for _ in range(3))
    o = np.zeros(n, dt)
    K.ld_ternary[(1,)](x, y, z, o, n, NAME="fma", BLOCK=128)
    np.testing.assert_allclose(o, x.astype(np.float64) * y + z, rtol=1e-6 if dt == np.float32 else 1e-13)
    e = RNG.integers(-4, 5, n).astype(np.int32)
    K.ld_binary[(1,)](x, e, o, n, NAME="pow", BLOCK=128)  # (float, int32) -> __nv_powi[f]
    np.testing.assert_allclose(o, x.astype(np.float64) ** e, rtol=1e-5 if dt == np.float32 else 1e-12)
    K.ld_binary[(1,)](x, e, o, n, NAME="ldexp", BLOCK=128)
    np.testing.assert_array_equal(o, np.ldexp(x, e))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_libdevice_predicates(dt):
    x = RNG.uniform(-10, 10, 64).astype(dt)
    x[::7], x[1::9], x[2::11], x[3::13] = np.nan, np.inf, -np.inf, -0.0
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)):
        o = np.full(64, -1, np.int32)
        K.ld_unary[(1,)](x, o, 64, NAME=name, BLOCK=64)
        np.testing.assert_array_equal(o != 0, ref(x), err_msg=name)
        assert (o != 0).any() and (o == 0).any()


def test_libdevice_rounding_modes_and_conversions():
    n = 128
    x = RNG.uniform(-1000, 1000, n).astype(np.float32)
    y = RNG.uniform(1, 7, n).astype(np.float32)
    exact = x.astype(np.float64) / y.astype(np.float64)
    o = np.zeros(n, np.float32)
    for mode, ok in (("rz", lambda r: np.abs(r) <= np.abs(exact)), ("rd", lambda r: r <= exact),
                     ("ru", lambda r: r >= exact)):
        K.ld_binary[(1,)](x, y, o, n, NAME=f"div_{mode}", BLOCK=n)
        r = o.astype(np.float64)
        assert ok(r).all(), mode
        np.testing.assert_allclose(r, exact, rtol=2.5e-7)
    oi = np.zeros(n, np.int32)
    for mode, fn in (("rn", np.rint), ("rz", np.trunc), ("rd", np.floor), ("ru", np.ceil)):
        K.ld_unary[(1,)](x, oi, n, NAME=f"float2int_{mode}", BLOCK=n)
        np.testing.assert_array_equal(oi, fn(x).astype(np.int32), err_msg=mode)
    K.ld_unary[(1,)](x, oi, n, NAME="float_as_int", BLOCK=n)
    np.testing.assert_array_equal(oi, x.view(np.int32))
    d = RNG.standard_normal(n)
    lo, hi = np.zeros(n, np.int32), np.zeros(n, np.int32)
    K.ld_unary[(1,)](d, lo, n, NAME="double2loint", BLOCK=n)
    K.ld_unary[(1,)](d, hi, n, NAME="double2hiint", BLOCK=n)
    np.testing.assert_array_equal(hi, (d.view(np.int64) >> 32).astype(np.int32))
    back = np.zeros(n, np.float64)
    K.ld_binary[(1,)](hi, lo, back, n, NAME="hiloint2double", BLOCK=n)
    np.testing.assert_array_equal(back, d)


def _py_ints(f, *arrays):
    return [f(*[int(v) for v in vals]) for vals in zip(*arrays)]


def test_libdevice_integers():
    n = 100
    x = RNG.integers(-2 ** 31, 2 ** 31, n).astype(np.int32)
    y = RNG.integers(-2 ** 31, 2 ** 31, n).astype(np.int32)
    x[:3] = [0, -1, 1]
    o = np.zeros(n, np.int32)
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731
    K.ld_unary[(1,)](x, o, n, NAME="popc", BLOCK=128)
    np.testing.assert_array_equal(o, _py_ints(lambda a: bin(u(a)).count("1"), x))
    K.ld_unary[(1,)](x, o, n, NAME="clz", BLOCK=128)
    np.testing.assert_array_equal(o, _py_ints(lambda a: 32 - u(a).bit_length(), x))
    K.ld_unary[(1,)](x, o, n, NAME="ffs", BLOCK=128)
    np.testing.assert_array_equal(o, _py_ints(lambda a: (u(a) & -u(a)).bit_length(), x))
    K.ld_unary[(1,)](x, o, n, NAME="brev", BLOCK=128)
    np.testing.assert_array_equal(o.view(np.uint32), _py_ints(lambda a: int(f"{u(a):032b}"[::-1], 2), x))
    K.ld_binary[(1,)](x, y, o, n, NAME="mulhi", BLOCK=128)
    np.testing.assert_array_equal(o, _py_ints(lambda a, b: (a * b) >> 32, x, y))
    xu, yu = x.view(np.uint32), y.view(np.uint32)
    ou = np.zeros(n, np.uint32)
    K.ld_binary[(1,)](xu, yu, ou, n, NAME="mulhi", BLOCK=128)  # uint32 -> __nv_umulhi
    np.testing.assert_array_equal(ou, _py_ints(lambda a, b: (a * b) >> 32, xu, yu))
    K.ld_binary[(1,)](x, y, o, n, NAME="hadd", BLOCK=128)
    np.testing.assert_array_equal(o, _py_ints(lambda a, b: (a + b) >> 1, x, y))
    K.ld_binary[(1,)](x, y, o, n, NAME="mul24", BLOCK=128)
    s24 = lambda a: ((a & 0xFFFFFF) ^ 0x800000) - 0x800000  # noqa: E731
    np.testing.assert_array_equal(o.view(np.uint32), _py_ints(lambda a, b: (s24(a) * s24(b)) & 0xFFFFFFFF, x, y))
    sel = RNG.integers(0, 2 ** 15, n).astype(np.int32)
    K.ld_ternary[(1,)](x, y, sel, o, n, NAME="byte_perm", BLOCK=128)

    def perm(a, b, s):
        both = (u(b) << 32) | u(a)
        return sum((((both >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i)) for i in range(4))

    np.testing.assert_array_equal(o.view(np.uint32), _py_ints(perm, x, y, sel))
    xl = RNG.integers(-2 ** 63, 2 ** 63, n, dtype=np.int64)
    yl = RNG.integers(-2 ** 63, 2 ** 63, n, dtype=np.int64)
    ol = np.zeros(n, np.int64)
    K.ld_binary[(1,)](xl, yl, ol, n, NAME="mulhi", BLOCK=128)  # int64 -> __nv_mul64hi
    np.testing.assert_array_equal(ol, _py_ints(lambda a, b: (a * b) >> 64, xl, yl))
    K.ld_unary[(1,)](xl, o, n, NAME="clz", BLOCK=128)  # int64 -> __nv_clzll (int32 result)
    np.testing.assert_array_equal(o, _py_ints(lambda a: 64 - (a & (2 ** 64 - 1)).bit_length(), xl))
    K.ld_unary[(1,)](xl, ol, n, NAME="brev", BLOCK=128)
    np.testing.assert_array_equal(ol.view(np.uint64),
                                  _py_ints(lambda a: int(f"{a & (2 ** 64 - 1):064b}"[::-1], 2), xl))
    K.ld_unary[(1,)](x, o, n, NAME="abs", BLOCK=128)
    np.testing.assert_array_equal(o, np.abs(x))


@pytest.mark.parametrize("m,n,bm,bn", [(5, 7, 8, 8), (16, 32, 16, 32), (30, 3, 32, 4)])
def test_libdevice_broadcast_and_import_paths(m, n, bm, bn):
    x = RNG.uniform(-3, 3, m).astype(np.float32)
    y = RNG.uniform(-3, 3, n).astype(np.float32)
    o = np.zeros((m, n), np.float32)
    K.ld_outer[(1,)](x, y, o, m, n, BM=bm, BN=bn)
    x64, y64 = x.astype(np.float64)[:, None], y.astype(np.float64)[None, :]
    np.testing.assert_allclose(o, np.arctan2(x64, y64) + x64 ** 2 + np.exp(y64), rtol=1e-5, atol=1e-5)


def test_libdevice_import_paths_are_one_module():
    import tritium.language.extra.cuda.libdevice as a
    from tritium.language.extra.cuda import libdevice as b
    assert tl.extra.cuda.libdevice is a is b
    assert tl.extra.libdevice.exp is a.exp and libdevice.pow is a.pow
    assert len(a.VARIANTS) >= 197 and a.VARIANTS["exp"][("fp32",)] == ("__nv_expf", "fp32")
    assert a.VARIANTS["exp"][("fp64",)] == ("__nv_exp", "fp64")


def test_libdevice_ttir_dispatch():
    from tritium.dialects import make_context
    from tritium.frontend import make_ttir
    text = str(make_ttir(K.ld_outer, {"X": "*fp32", "Y": "*fp32", "O": "*fp32", "M": "i32", "N": "i32"},
                         {"BM": 8, "BN": 8}, {}, make_context()))
    for sym in ("__nv_atan2f", "__nv_powif", "__nv_expf"):
        assert f'symbol = "{sym}"' in text
    assert 'libname = "libdevice"' in text


@triton.jit
def _user_extern(X, O, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.core.extern_elementwise("", "", [x], {(tl.float32,): ("__nv_expm1f", tl.float32)}, is_pure=True)
    tl.store(O + tl.arange(0, BLOCK), y)


def test_core_extern_elementwise():
    x = RNG.uniform(-2, 2, 32).astype(np.float32)
    o = np.zeros(32, np.float32)
    _user_extern[(1,)](x, o, BLOCK=32)
    np.testing.assert_allclose(o, np.expm1(x.astype(np.float64)), rtol=2e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# wrong uses: CompilationErrors naming the kernel's line
# ---------------------------------------------------------------------------------------------

@triton.jit
def bad_extra(X, I, O, flag, WHAT: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    i = tl.load(I + tl.arange(0, 16))
    y = x
    if WHAT == "hist_float":
        y = tl.histogram(x, 16).to(tl.float32)  # ERR:hist_float
    elif WHAT == "hist_2d":
        y = tl.histogram(i[:, None] + i[None, :], 16).to(tl.float32)  # ERR:hist_2d
    elif WHAT == "hist_runtime_bins":
        y = tl.histogram(i, flag).to(tl.float32)  # ERR:hist_runtime_bins
    elif WHAT == "hist_mask_float":
        y = tl.histogram(i, 16, mask=x).to(tl.float32)  # ERR:hist_mask_float
    elif WHAT == "gather_rank":
        y = tl.gather(x, i[:, None], 0)  # ERR:gather_rank
    elif WHAT == "gather_float_index":
        y = tl.gather(x, x, 0)  # ERR:gather_float_index
    elif WHAT == "gather_axis":
        y = tl.gather(x, i, 1)  # ERR:gather_axis
    elif WHAT == "gather_shape":
        y = tl.reshape(tl.gather(x[:, None] + x[None, :], tl.reshape(i, 2, 8), 0), 16)  # ERR:gather_shape
    elif WHAT == "libdevice_int":
        y = libdevice.exp(i)  # ERR:libdevice_int
    elif WHAT == "libdevice_fp16":
        y = libdevice.sin(x.to(tl.float16)).to(tl.float32)  # ERR:libdevice_fp16
    elif WHAT == "libdevice_arity":
        y = libdevice.atan2(x)  # ERR:libdevice_arity
    elif WHAT == "asm_runtime_string":
        y = tl.inline_asm_elementwise(x, "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)  # ERR:asm_runtime_string
    elif WHAT == "asm_pack0":
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=0)  # ERR:asm_pack0
    elif WHAT == "asm_dtype":
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype="f32", is_pure=True, pack=1)  # ERR:asm_dtype
    elif WHAT == "asm_interpreter":
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)  # ERR:asm_interpreter
    elif WHAT == "libdevice_no_numpy":
        y = tl.core.extern_elementwise("libfoo", "", [x], {(tl.float32,): ("foo_f32", tl.float32)}, is_pure=True)  # ERR:libdevice_no_numpy
    tl.store(O + tl.arange(0, 16), y)


def _marked(tag):
    for i, line in enumerate(open(__file__).read().splitlines(), start=1):
        if line.rstrip().endswith(f"# ERR:{tag}"):
            return i
    raise AssertionError(tag)


@pytest.mark.parametrize("what,pattern", [
    ("hist_float", r"histogram\(\) needs a 32-bit integer tensor \(int32 / uint32\), got fp32"),
    ("hist_2d", r"histogram\(\) needs a 1-D tensor"),
    ("hist_runtime_bins", r"num_bins must be a compile-time integer \(tl.constexpr\), got a tensor"),
    ("hist_mask_float", r"mask must be a boolean \(int1\) tensor, got fp32"),
    ("gather_rank", r"gather\(\) source and index must have the same rank, got shapes \[16\] and \[16, 1\]"),
    ("gather_float_index", r"gather\(\) index must be an integer tensor, got fp32"),
    ("gather_axis", r"axis 1 is out of range for a tensor of rank 1"),
    ("gather_shape", r"gather\(\) index dimension 1 \(8\) must match the source's \(16\)"),
    ("libdevice_int", r"libdevice.exp\(\) has no variant for argument types \(int32\); supported: \(fp32\), "
                      r"\(fp64\)"),
    ("libdevice_fp16", r"libdevice.sin\(\) has no variant for argument types \(fp16\)"),
    ("libdevice_arity", r"libdevice.atan2\(\) takes 2 argument\(s\), got 1"),
    ("asm_runtime_string", r"inline_asm_elementwise\(\) asm must be a compile-time string \(tl.constexpr\), "
                           r"got a tensor"),
    ("asm_pack0", r"inline_asm_elementwise\(\) pack must be >= 1, got 0"),
    ("asm_dtype", r"inline_asm_elementwise\(\) dtype must be a scalar tl dtype"),
    ("asm_interpreter", r"tt.elementwise_inline_asm \(inline assembly\) is not supported on the interpreter"),
    ("libdevice_no_numpy", r"the interpreter does not know the external function 'foo_f32'"),
])
def test_wrong_uses_name_the_line(what, pattern):
    x = np.ones(16, np.float32)
    i = np.arange(16, dtype=np.int32)
    with pytest.raises(CompilationError, match=pattern) as e:
        bad_extra[(1,)](x, i, np.zeros(16, np.float32), 5, WHAT=what)  # 5: a run-time int
    assert e.value.lineno == _marked(what), str(e.value)
    assert f"test_extra_ops.py:{_marked(what)}" in str(e.value)
