"""tl's standard library on the interpreter: flip, sort, topk, bitonic_merge, swizzle2d, reduce_or, to_tensor,
add/sub/mul, condition; results against NumPy on random inputs; wrong uses are CompilationErrors at the line."""
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError

# the kernels below are also launched by tests/gpu/test_standard_gpu.py on a GPU machine without MLIR (from
# the carried cache): importing this module must not need MLIR, only running its tests does
try:
    import mlir.ir  # noqa: F401

    _NO_MLIR = None
except ImportError as e:
    _NO_MLIR = f"MLIR Python bindings not installed: {e}"
pytestmark = pytest.mark.skipif(_NO_MLIR is not None, reason=str(_NO_MLIR))


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def ttir(fn, signature, constexprs=None):
    from tritium.dialects import make_context
    from tritium.frontend import make_ttir

    return str(make_ttir(fn, signature, constexprs or {}, {}, make_context()))


# ---------------------------------------------------------------------------------------------
# combine functions are per element type (a regression: sum of f32 and of i32 shared one @sum_f32)
# ---------------------------------------------------------------------------------------------

@triton.jit
def _two_sums(X, Y, U, O):
    r = tl.arange(0, 8)
    x = tl.load(X + r)
    y = tl.load(Y + r)
    u = tl.load(U + r)
    tl.store(O, tl.sum(x, 0) + tl.sum(y, 0).to(tl.float32) + tl.max(y, 0).to(tl.float32)
             + tl.max(u, 0).to(tl.float32))


def test_combine_function_per_element_type():
    text = ttir(_two_sums, {"X": "*fp32", "Y": "*i32", "U": "*u32", "O": "*fp32"})
    assert "@sum_f32" in text and "@sum_i32" in text
    assert "arith.maxsi" in text and "arith.maxui" in text
    x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    y = np.arange(8, dtype=np.int32) * 3 - 5
    u = np.array([1, 2, 3, 0x80000000, 5, 6, 7, 8], dtype=np.uint32)
    o = np.zeros(1, np.float32)
    _two_sums[(1,)](x, y, u, o)
    np.testing.assert_allclose(o[0], x.sum() + y.sum() + y.max() + np.float32(u.max()), rtol=1e-6)


RNG = np.random.default_rng(20260101)


def rand(shape, dt, lo=-100, hi=100):
    """Random values of NumPy dtype ``dt`` (never all zeros; duplicates likely for small integer ranges)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 10).astype(dt)
    if dt.kind == "u":
        return RNG.integers(0, np.iinfo(dt).max, shape, dtype=np.uint64 if dt.itemsize == 8 else np.int64).astype(dt)
    return RNG.integers(lo, hi, shape).astype(dt)


def offsets2(M, N):
    return np.arange(M)[:, None] * N + np.arange(N)[None, :]


# ---------------------------------------------------------------------------------------------
# flip
# ---------------------------------------------------------------------------------------------

@triton.jit
def flip_1d(X, O, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(O + r, tl.flip(tl.load(X + r)))


@triton.jit
def flip_2d(X, O, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + r)
    tl.store(O + r, x.flip(DIM))


@triton.jit
def flip_3d(X, O, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    r = (tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C
         + tl.arange(0, C)[None, None, :])
    tl.store(O + r, tl.flip(tl.load(X + r), dim=DIM))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.int8, np.int64, np.uint16, np.float64])
@pytest.mark.parametrize("n", [1, 2, 16, 128])
def test_flip_1d(dt, n):
    x = rand(n, dt)
    o = np.zeros_like(x)
    flip_1d[(1,)](x, o, N=n)
    np.testing.assert_array_equal(o, x[::-1])


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("shape", [(4, 8), (16, 2), (8, 32)])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_flip_2d_each_dim(dt, shape, dim):
    x = rand(shape, dt)
    o = np.zeros_like(x)
    flip_2d[(1,)](x, o, M=shape[0], N=shape[1], DIM=dim)
    np.testing.assert_array_equal(o, np.flip(x, dim))


@pytest.mark.parametrize("dim", [0, 1, 2, None])
def test_flip_3d(dim):
    x = rand((2, 8, 4), np.float32)
    o = np.zeros_like(x)
    flip_3d[(1,)](x, o, A=2, B=8, C=4, DIM=dim)
    np.testing.assert_array_equal(o, np.flip(x, 2 if dim is None else dim))


def test_flip_keeps_bit_patterns():
    # -0.0, NaN payloads and infinities move as bits (an integer view), never through float arithmetic
    x = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, 1.5, -2.25, 3e-40], np.float32)
    x.view(np.uint32)[2] = 0x7FC01234
    o = np.zeros_like(x)
    flip_1d[(1,)](x, o, N=8)
    np.testing.assert_array_equal(o.view(np.uint32), x[::-1].view(np.uint32))


# ---------------------------------------------------------------------------------------------
# sort / topk / bitonic_merge
# ---------------------------------------------------------------------------------------------

@triton.jit
def sort_rows(X, O, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(O + r, tl.sort(tl.load(X + r), descending=DESC))


@triton.jit
def sort_1d(X, O, N: tl.constexpr, DESC: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(X + r)
    tl.store(O + r, x.sort(0, DESC))


@triton.jit
def sort_3d(X, O, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, DESC: tl.constexpr):
    r = (tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C
         + tl.arange(0, C)[None, None, :])
    tl.store(O + r, tl.sort(tl.load(X + r), dim=-1, descending=DESC))


@triton.jit
def topk_rows(X, O, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    ro = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    tl.store(O + ro, tl.topk(tl.load(X + r), K))


@triton.jit
def bitonic_merge_rows(X, O, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(O + r, tl.bitonic_merge(tl.load(X + r), descending=DESC))


def np_sort(x, desc, axis=-1):
    s = np.sort(x, axis=axis, kind="stable")
    return np.flip(s, axis) if desc else s


SORT_DTYPES = [np.float32, np.float16, np.int32, np.int8, np.uint32, np.int64, np.float64]


@pytest.mark.parametrize("dt", SORT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 2), (4, 16), (8, 64), (2, 256)])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_rows(dt, shape, desc):
    x = rand(shape, dt)
    x[0, : shape[1] // 2] = x[0, -1]  # duplicates
    o = np.zeros_like(x)
    sort_rows[(1,)](x, o, M=shape[0], N=shape[1], DESC=desc)
    np.testing.assert_array_equal(o, np_sort(x, desc))


@pytest.mark.parametrize("dt", [np.float32, np.int16])
@pytest.mark.parametrize("n", [1, 8, 512])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_1d(dt, n, desc):
    x = rand(n, dt, -5, 5)  # many duplicates
    o = np.zeros_like(x)
    sort_1d[(1,)](x, o, N=n, DESC=desc)
    np.testing.assert_array_equal(o, np_sort(x, desc))


@pytest.mark.parametrize("desc", [False, True])
def test_sort_3d(desc):
    x = rand((2, 4, 32), np.float16)
    o = np.zeros_like(x)
    sort_3d[(1,)](x, o, A=2, B=4, C=32, DESC=desc)
    np.testing.assert_array_equal(o, np_sort(x, desc))


def test_sort_is_a_permutation_with_nan_and_signed_zeros():
    # NaN's place is unspecified (as in Triton), but every step swaps whole pairs: nothing is lost or duplicated
    x = rand((4, 32), np.float32)
    x[0, [3, 17]] = np.nan
    x[1, :8] = 0.0
    x[1, 8:16] = -0.0
    o = np.zeros_like(x)
    sort_rows[(1,)](x, o, M=4, N=32, DESC=False)
    for i in range(4):
        np.testing.assert_array_equal(np.sort(o[i].view(np.uint32)), np.sort(x[i].view(np.uint32)))
    for i in (1, 2, 3):  # (-0.0 == 0.0: row 1's zeros compare equal in either order)
        np.testing.assert_array_equal(o[i], np.sort(x[i]))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.uint8])
@pytest.mark.parametrize("n,k", [(16, 4), (64, 1), (64, 8), (32, 32), (128, 16)])
def test_topk(dt, n, k):
    x = rand((4, n), dt, -20, 20)
    o = np.zeros((4, k), dt)
    topk_rows[(1,)](x, o, M=4, N=n, K=k)
    np.testing.assert_array_equal(o, np_sort(x, True)[:, :k])


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("n", [2, 16, 128])
@pytest.mark.parametrize("desc", [False, True])
def test_bitonic_merge(dt, n, desc):
    # rows that are bitonic: ascending then descending, descending then ascending, and rotations of those
    rows = []
    for i in range(8):
        a = np.sort(rand(n, dt))
        b = np.concatenate([a[0::2], a[1::2][::-1]])  # up then down
        if i % 2:
            b = b[::-1]
        rows.append(np.roll(b, i))
    x = np.stack(rows)
    o = np.zeros_like(x)
    bitonic_merge_rows[(1,)](x, o, M=8, N=n, DESC=desc)
    np.testing.assert_array_equal(o, np_sort(x, desc))


# ---------------------------------------------------------------------------------------------
# swizzle2d
# ---------------------------------------------------------------------------------------------

def np_swizzle2d(size_i, size_j, size_g):
    """(new_i, new_j) for every (i, j), built from the definition: within each group of size_g rows (the last
    may be shorter), the k-th element in row-major order goes to the k-th place in column-major order."""
    ni = np.zeros((size_i, size_j), np.int64)
    nj = np.zeros((size_i, size_j), np.int64)
    for g0 in range(0, size_i, size_g):
        rows = min(size_g, size_i - g0)
        places = [(g0 + r, c) for c in range(size_j) for r in range(rows)]  # column-major order
        src = [(g0 + r, c) for r in range(rows) for c in range(size_j)]     # row-major order
        for (i, j), (p, q) in zip(src, places):
            ni[i, j], nj[i, j] = p, q
    return ni, nj


@triton.jit
def swizzle_tensor(OI, OJ, SI: tl.constexpr, SJ: tl.constexpr, BI: tl.constexpr, BJ: tl.constexpr, size_i, size_j,
                   size_g):
    i = tl.arange(0, BI)[:, None] + tl.zeros([BI, BJ], tl.int32)
    j = tl.arange(0, BJ)[None, :] + tl.zeros([BI, BJ], tl.int32)
    ni, nj = tl.swizzle2d(i, j, size_i, size_j, size_g)
    m = (i < size_i) & (j < size_j)
    r = i * SJ + j
    tl.store(OI + r, ni, mask=m)
    tl.store(OJ + r, nj, mask=m)


@triton.jit
def swizzle_pids(OI, OJ, size_j, GROUP: tl.constexpr):
    # the matmul-tutorial use: one program per tile, scalar program ids
    i = tl.program_id(0)
    j = tl.program_id(1)
    ni, nj = tl.swizzle2d(i, j, tl.num_programs(0), tl.num_programs(1), GROUP)
    tl.store(OI + i * size_j + j, ni)
    tl.store(OJ + i * size_j + j, nj)


@triton.jit
def swizzle_constexpr(O, I: tl.constexpr, J: tl.constexpr, SI: tl.constexpr, SJ: tl.constexpr, G: tl.constexpr):
    ni, nj = tl.swizzle2d(I, J, SI, SJ, G)
    tl.static_assert((ni >= 0) & (nj >= 0))  # compile-time values: static_assert rejects tensors
    tl.store(O, ni)
    tl.store(O + 1, nj)


def test_swizzle2d_docstring_example():
    # Triton's docstring: 4x4, groups of 2 rows; out[new_i, new_j] = the row-major index of (i, j)
    oi = np.zeros((4, 4), np.int32)
    oj = np.zeros((4, 4), np.int32)
    swizzle_tensor[(1,)](oi, oj, SI=4, SJ=4, BI=4, BJ=4, size_i=4, size_j=4, size_g=2)
    out = np.zeros((4, 4), np.int32)
    out[oi, oj] = np.arange(16).reshape(4, 4)
    np.testing.assert_array_equal(out, [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]])


@pytest.mark.parametrize("si,sj,g", [(8, 4, 3), (5, 7, 2), (16, 16, 4), (13, 3, 5), (6, 9, 1), (7, 5, 8)])
def test_swizzle2d_tensors(si, sj, g):
    oi = np.full((si, sj), -1, np.int32)
    oj = np.full((si, sj), -1, np.int32)
    swizzle_tensor[(1,)](oi, oj, SI=si, SJ=sj, BI=16, BJ=16, size_i=si, size_j=sj, size_g=g)
    ni, nj = np_swizzle2d(si, sj, g)
    np.testing.assert_array_equal(oi, ni)
    np.testing.assert_array_equal(oj, nj)
    # a permutation of the grid
    assert len(set(zip(oi.ravel().tolist(), oj.ravel().tolist()))) == si * sj


@pytest.mark.parametrize("si,sj,g", [(6, 4, 4), (3, 5, 2)])
def test_swizzle2d_program_ids(si, sj, g):
    oi = np.full((si, sj), -1, np.int32)
    oj = np.full((si, sj), -1, np.int32)
    swizzle_pids[(si, sj)](oi, oj, sj, GROUP=g)
    ni, nj = np_swizzle2d(si, sj, g)
    np.testing.assert_array_equal(oi, ni)
    np.testing.assert_array_equal(oj, nj)


def test_swizzle2d_constexpr():
    ni, nj = np_swizzle2d(5, 7, 2)
    for i, j in [(0, 0), (4, 6), (1, 3), (4, 2)]:
        o = np.zeros(2, np.int32)
        swizzle_constexpr[(1,)](o, I=i, J=j, SI=5, SJ=7, G=2)
        assert tuple(o) == (ni[i, j], nj[i, j])


# ---------------------------------------------------------------------------------------------
# reduce_or
# ---------------------------------------------------------------------------------------------

@triton.jit
def reduce_or_2d(X, O0, O1, OA, OK, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(O0 + tl.arange(0, N), tl.reduce_or(x, 0))
    tl.store(O1 + tl.arange(0, M), x.reduce_or(axis=1))
    tl.store(OA, tl.reduce_or(x, None))
    k = tl.reduce_or(x, 1, keep_dims=True)
    tl.static_assert(k.shape[1] == 1)
    tl.store(OK + tl.arange(0, M)[:, None], k)


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint16, np.int64, np.uint32])
@pytest.mark.parametrize("shape", [(4, 8), (16, 2), (1, 64)])
def test_reduce_or(dt, shape):
    x = rand(shape, dt)
    x &= ~(x >> 3)  # sparser bits, so the ors differ
    M, N = shape
    o0, o1, oa, ok = np.zeros(N, dt), np.zeros(M, dt), np.zeros(1, dt), np.zeros(M, dt)
    reduce_or_2d[(1,)](x, o0, o1, oa, ok, M=M, N=N)
    np.testing.assert_array_equal(o0, np.bitwise_or.reduce(x, axis=0))
    np.testing.assert_array_equal(o1, np.bitwise_or.reduce(x, axis=1))
    np.testing.assert_array_equal(oa[0], np.bitwise_or.reduce(x, axis=None))
    np.testing.assert_array_equal(ok, o1)


# ---------------------------------------------------------------------------------------------
# to_tensor, add / sub / mul, condition
# ---------------------------------------------------------------------------------------------

@triton.jit
def small_core(X, Y, O, OI, n, C: tl.constexpr, BIG: tl.constexpr):
    r = tl.arange(0, 16)
    x = tl.load(X + r)
    y = tl.load(Y + r)
    tl.store(O + r, tl.add(x, y))
    tl.store(O + 16 + r, tl.sub(x, 2.0))
    tl.store(O + 32 + r, tl.mul(3, y, sanitize_overflow=False))
    c = tl.to_tensor(C)
    tl.static_assert(c.dtype == tl.int32)
    b = tl.to_tensor(BIG)
    tl.static_assert(b.dtype == tl.int64)
    t = tl.to_tensor(x)
    tl.store(OI, c * 2)
    tl.store(OI + 1, (b - BIG + 7).to(tl.int32))
    tl.store(OI + 2, tl.mul(tl.to_tensor(n), 5))
    tl.store(O + 48 + r, t)
    i = 0
    acc = 0
    while tl.condition(i < n, disable_licm=True):
        acc += i
        i += 1
    tl.store(OI + 3, acc)


def test_to_tensor_add_sub_mul_condition():
    x = rand(16, np.float32)
    y = rand(16, np.float32)
    o = np.zeros(64, np.float32)
    oi = np.zeros(4, np.int32)
    small_core[(1,)](x, y, o, oi, 9, C=21, BIG=2 ** 40)
    np.testing.assert_allclose(o[:16], x + y, rtol=1e-6)
    np.testing.assert_allclose(o[16:32], x - 2, rtol=1e-6)
    np.testing.assert_allclose(o[32:48], 3 * y, rtol=1e-6)
    np.testing.assert_array_equal(o[48:], x)
    np.testing.assert_array_equal(oi, [42, 7, 45, 36])


def test_names_match_triton_36():
    for n in ("flip", "sort", "topk", "bitonic_merge", "swizzle2d", "reduce_or", "to_tensor", "add", "sub", "mul",
              "condition"):
        assert hasattr(tl, n), n
    assert tl.standard.sort is tl.sort and tl.standard.sort_impl
    for n in ("flip", "sort", "reduce_or"):
        assert hasattr(tl.tensor, n), n


# ---------------------------------------------------------------------------------------------
# wrong uses: CompilationErrors naming the kernel's line
# ---------------------------------------------------------------------------------------------

@triton.jit
def bad_std(X, O, flag, WHAT: tl.constexpr):
    x = tl.load(X + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :])
    if WHAT == "sort_dim0":
        y = tl.sort(x, dim=0)  # ERR:sort_dim0
    elif WHAT == "flip_dim":
        y = tl.flip(x, 2)  # ERR:flip_dim
    elif WHAT == "topk_k3":
        y = tl.topk(x, 3)  # ERR:topk_k3
    elif WHAT == "topk_big":
        y = tl.topk(x, 32)  # ERR:topk_big
    elif WHAT == "topk_runtime_k":
        y = tl.topk(x, flag)  # ERR:topk_runtime_k
    elif WHAT == "sort_runtime_desc":
        y = tl.sort(x, descending=flag)  # ERR:sort_runtime_desc
    elif WHAT == "flip_runtime_dim":
        y = tl.flip(x, flag)  # ERR:flip_runtime_dim
    elif WHAT == "sort_scalar":
        y = tl.sort(flag)  # ERR:sort_scalar
    elif WHAT == "reduce_or_float":
        y = tl.reduce_or(x, 0)  # ERR:reduce_or_float
    elif WHAT == "swizzle_float":
        y, _ = tl.swizzle2d(x.to(tl.int32), 1, 8, 16, 2.0)  # ERR:swizzle_float
    elif WHAT == "merge_dim0":
        y = tl.bitonic_merge(x, 0)  # ERR:merge_dim0
    else:
        y = x
    tl.store(O + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :], y)


@triton.jit
def bad_flip_non_pow2(O):
    x = tl.full([3, 4], 1.0, tl.float32)
    y = tl.flip(x, 0)  # ERR:flip_non_pow2
    tl.store(O + tl.arange(0, 4), tl.sum(y, 0))


def _marked(tag):
    for i, line in enumerate(open(__file__).read().splitlines(), start=1):
        if line.rstrip().endswith(f"# ERR:{tag}"):
            return i
    raise AssertionError(tag)


@pytest.mark.parametrize("what,pattern", [
    ("sort_dim0", "only the last dimension"),
    ("flip_dim", "dim 2 is out of range"),
    ("topk_k3", "k must be a power of two, got 3"),
    ("topk_big", "k=32 is larger than the size of the last dimension"),
    ("topk_runtime_k", "'k' must be a compile-time"),
    ("sort_runtime_desc", "'descending' must be a compile-time value"),
    ("flip_runtime_dim", "'dim' must be a compile-time value"),
    ("sort_scalar", "needs a tensor"),
    ("reduce_or_float", "reduce_or only supported for integers"),
    ("swizzle_float", "'size_g' must be an integer"),
    ("merge_dim0", "only the last dimension"),
])
def test_wrong_uses_name_the_line(what, pattern):
    x = np.ones(128, np.float32)
    with pytest.raises(CompilationError, match=pattern) as e:
        bad_std[(1,)](x, np.zeros(128, np.float32), 5, WHAT=what)  # 5: a run-time int (1 would be a constexpr)
    assert e.value.lineno == _marked(what), str(e.value)
    assert e.value.filename.endswith("test_standard.py")
    assert f"test_standard.py:{_marked(what)}" in str(e.value)


def test_flip_non_power_of_two_names_the_line():
    # (tritium's tl.full accepts a [3, 4] shape; flip's hypercube needs a power of two)
    with pytest.raises(CompilationError, match="the size of dim 0 must be a power of two, got 3") as e:
        bad_flip_non_pow2[(1,)](np.zeros(4, np.float32))
    assert e.value.lineno == _marked("flip_non_pow2")


# ---------------------------------------------------------------------------------------------
# tl.target_info: answers for the target being compiled for
# ---------------------------------------------------------------------------------------------

@triton.jit
def target_flags(O):
    if tl.target_info.is_cuda():
        tl.store(O, 1)
    else:
        tl.store(O, 2)
    if tl.target_info.cuda_capability_geq(9, 0):
        tl.store(O + 1, 7)
    else:
        tl.store(O + 1, 3)
    if tl.target_info.is_hip() or tl.target_info.is_hip_cdna3() or tl.target_info.is_hip_cdna4():
        tl.store(O + 2, 5)
    else:
        tl.store(O + 2, 4)


def test_target_info_on_the_interpreter():
    o = np.full(3, -1, np.int32)
    target_flags[(1,)](o)
    np.testing.assert_array_equal(o, [2, 3, 4])
    assert tl.target_info.current_target().backend == "interpreter"


@pytest.mark.parametrize("target,want", [("cuda:90", (1, 7, 4)), ("cuda:80", (1, 3, 4)), ("interpreter", (2, 3, 4))])
def test_target_info_follows_the_compile_target(target, want):
    from tritium.compiler import ASTSource, compile

    text = compile(ASTSource(target_flags, {"O": "*i32"}), target=target, until="ttir").asm["ttir"]
    stored = [int(v) for v in re.findall(r'"tt.store"\(%[\w]+, %c(\d+)_i32\)', text)]
    assert stored == list(want), text
