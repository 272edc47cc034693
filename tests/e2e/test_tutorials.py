"""Tutorial-style kernels on the interpreter, compared with NumPy on random inputs."""
import numpy as np
import pytest

import tritium as triton

from . import kernels as K

RNG = np.random.default_rng(2026)


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def rand(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-1000, 1000, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("n", [1, 98, 1000, 4097])
def test_vector_add(dtype, n):
    x, y = rand(n, dtype), rand(n, dtype)
    out = np.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    K.add_kernel[grid](x, y, out, n, BLOCK_SIZE=256)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.randn(3001)
    y = torch.randn(3001)
    out = torch.empty_like(x)
    K.add_kernel[(triton.cdiv(3001, 512),)](x, y, out, 3001, BLOCK_SIZE=512)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def np_softmax(x):
    z = x.astype(np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 2e-3)])
@pytest.mark.parametrize("shape", [(1, 3), (17, 100), (64, 1000)])
def test_softmax(dtype, tol, shape):
    x = rand(shape, dtype)
    y = np.empty_like(x)
    block = triton.next_power_of_2(shape[1])
    K.softmax_kernel[(shape[0],)](y, x, x.shape[1], y.shape[1], shape[1], BLOCK_SIZE=block)
    np.testing.assert_allclose(y.astype(np.float64), np_softmax(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("programs", [1, 5, 8])
def test_softmax_persistent_loop(programs):
    # 37 rows over 5 programs: programs run 8 or 7 iterations
    x = rand((37, 130), "float32")
    y = np.empty_like(x)
    K.softmax_persistent_kernel[(programs, 1, 1)](y, x, x.shape[1], y.shape[1], 37, 130, BLOCK_SIZE=256,
                                                   num_stages=2)
    np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-6)


def test_softmax_builtin():
    x = rand((9, 70), "float32")
    y = np.empty_like(x)
    K.softmax_builtin_kernel[(9,)](y, x, 70, 70, BLOCK_SIZE=128)
    np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 1e-2)])
@pytest.mark.parametrize("M,N", [(3, 7), (31, 1000), (8, 300)])
def test_layer_norm_forward(dtype, tol, M, N):
    x = rand((M, N), dtype)
    w = rand((N,), dtype)
    b = rand((N,), dtype)
    y = np.empty_like(x)
    mean = np.empty((M,), np.float32)
    rstd = np.empty((M,), np.float32)
    eps = 1e-5
    K._layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, x.shape[1], N, eps, BLOCK_SIZE=128)
    xf = x.astype(np.float64)
    mu = xf.mean(axis=1)
    var = ((xf - mu[:, None]) ** 2).mean(axis=1)
    rs = 1 / np.sqrt(var + eps)
    ref = (xf - mu[:, None]) * rs[:, None] * w.astype(np.float64) + b.astype(np.float64)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rs, rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol * 5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("M,N", [(33, 65), (7, 130)])
def test_masked_strided_copy_2d(dtype, M, N):
    # read a (N, M) array transposed and write it into a padded (M, N + 3) buffer
    src = rand((N, M), dtype)
    dst = np.zeros((M, N + 3), dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
    K.copy_2d_kernel[grid](src, dst, M, N, 1, M, N + 3, 1, BLOCK_M=16, BLOCK_N=32)
    np.testing.assert_array_equal(dst[:, :N], src.T)
    assert not dst[:, N:].any()


NEUTRAL = {"sum": 0, "max": float("-inf"), "min": float("inf"), "argmax": float("-inf"), "argmin": float("inf")}
INT_NEUTRAL = {"sum": 0, "max": -2**31, "min": 2**31 - 1, "argmax": -2**31, "argmin": 2**31 - 1}


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_reduce_2d(op, axis, dtype):
    M, N = 13, 50
    x = rand((M, N), dtype)
    ref = getattr(np, op)(x.astype(np.float64) if op == "sum" and dtype == "float16" else x, axis=axis)
    out_dtype = np.int32 if op.startswith("arg") else (np.int32 if dtype == "int32" else x.dtype)
    if op == "sum" and dtype == "float16":
        out_dtype = np.float32
    out = np.empty(N if axis == 0 else M, out_dtype)
    other = (INT_NEUTRAL if dtype == "int32" else NEUTRAL)[op]
    K.reduce_2d_kernel[(1,)](x, out, M, N, N, OTHER=other, AXIS=axis, OP=op, BLOCK_M=16, BLOCK_N=64)
    if op == "sum" and dtype != "int32":
        np.testing.assert_allclose(out, ref, rtol=1e-2 if dtype == "float16" else 1e-5,
                                   atol=0.1 if dtype == "float16" else 1e-4)
    else:
        np.testing.assert_array_equal(out, ref.astype(out_dtype))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_nested_jit_calls(dtype):
    n = 1234
    x = rand(n, dtype)
    y = np.empty_like(x)
    K.nested_kernel[(triton.cdiv(n, 128),)](x, y, n, 0.5, B=3.0, BLOCK=128)
    xf = x.astype(np.float32)
    ref = np.clip(xf * xf * np.float32(0.5) + 3.0, -50, 50)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-3 if dtype == "float16" else 1e-6)


def test_loop_trip_count_differs_between_programs():
    lengths = RNG.integers(0, 300, size=23)
    offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    x = rand(int(offs[-1]), "float32")
    out = np.empty(23, np.float32)
    K.ragged_sum_kernel[(23,)](x, offs, out, BLOCK=32)
    ref = np.array([x[offs[i]:offs[i + 1]].sum() for i in range(23)], np.float32)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_while_loop_trip_count_differs_between_programs():
    n = RNG.integers(1, 500, size=40).astype(np.int32)
    out = np.empty(40, np.int32)
    K.collatz_kernel[(40,)](n, out)

    def steps(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    np.testing.assert_array_equal(out, [steps(int(v)) for v in n])


def test_branch_differs_between_programs():
    n = 1000
    x = rand(n, "float32")
    y = np.empty_like(x)
    K.branch_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)
    pid = np.arange(n) // 64
    np.testing.assert_array_equal(y, np.where(pid % 2 == 0, x * 2, x - 1))


@pytest.mark.parametrize("gx,gy", [(3, 5), (1, 7), (6, 1)])
def test_grid_2d(gx, gy):
    out = np.full((gy, gx), -1, np.int32)
    K.grid_2d_kernel[(gx, gy)](out, gx)
    px, py = np.meshgrid(np.arange(gx), np.arange(gy))
    np.testing.assert_array_equal(out, px * 1000 + py * 10 + gx * gy)


@pytest.mark.parametrize("fn,ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
    ("rsqrt", lambda x: 1 / np.sqrt(x)), ("abs", np.abs), ("sin", np.sin), ("cos", np.cos),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("minmax", lambda x: np.maximum(x, 0.5) + np.minimum(x, 0.25)),
])
def test_math(fn, ref):
    n = 777
    x = rand(n, "float32")
    if fn in ("log", "rsqrt"):
        x = np.abs(x) + np.float32(1e-3)
    if fn == "sqrt":
        x = np.abs(x)
    y = np.empty_like(x)
    K.math_kernel[(triton.cdiv(n, 256),)](x, y, n, FN=fn, BLOCK=256)
    np.testing.assert_allclose(y, ref(x).astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float16", "float32"), ("float32", "int32"),
                                     ("int32", "float32"), ("int32", "int8"), ("int8", "int32"),
                                     ("float64", "float32")])
def test_casts(src, dst):
    n = 301
    x = (rand(n, src) * (10 if np.dtype(src).kind == "f" else 1)).astype(src)
    y = np.empty(n, dst)
    K.cast_kernel[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind == "i":
        ref = np.trunc(x).astype(dst)
    else:
        ref = x.astype(dst)
    np.testing.assert_array_equal(y, ref)


def test_integer_ops_c_semantics():
    n = 500
    x = rand(n, "int32")
    y = rand(n, "int32")
    y[y == 0] = 7
    out = np.empty(n, np.int32)
    K.int_ops_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    q = np.trunc(x / y).astype(np.int32)  # C division truncates toward zero
    r = x - q * y
    ref = q * 3 + r - (x & 0xFF) + (x ^ y) + (x >> 2) + (y << 1)
    np.testing.assert_array_equal(out, np.where(x > y, ref, -ref))


def test_tuples_min_max_builtins_static_range():
    n = 200
    x = rand(n, "float32")
    out = np.empty_like(x)
    K.tuple_minmax_kernel[(2,)](x, out, n, BLOCK=128, SCALE=2.0)
    np.testing.assert_allclose(out, np.clip(x * 2, -1, 1) + 3, rtol=1e-6)


def test_device_print(capfd):
    x = np.arange(4, dtype=np.int32) * 11
    K.device_print_kernel[(1,)](x, 4, BLOCK=4)
    out = capfd.readouterr().out
    assert "x=" in out
    for v in ("0", "11", "22", "33"):
        assert v in out


def test_atomics_collide_across_programs():
    n = 5000
    x = RNG.integers(0, 1_000_000, size=n).astype(np.int32)
    hist = np.zeros(16, np.int32)
    total = np.zeros(1, np.int32)
    mx = np.full(1, -1, np.int32)
    K.atomic_kernel[(triton.cdiv(n, 256),)](x, hist, total, mx, n, NBINS=16, BLOCK=256)
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))
    assert total[0] == x.sum(dtype=np.int32)  # i32 atomics wrap around like NumPy's int32 sum
    assert int(mx[0]) == int(x.max())
