"""The non-dot language on the GPU against torch: tutorial kernels (tests/e2e/kernels.py) and a few more.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

import tritium as triton
import tritium.language as tl
from tests.e2e import kernels as K

torch = pytest.importorskip("torch")


def close(a, b, **kw):
    torch.testing.assert_close(a, b, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [98432, 1 << 20])
def test_vector_add(gpu, dtype, n):
    dt = getattr(torch, dtype)
    x, y = gpu.randn(n, dtype=dt), gpu.randn(n, dtype=dt)
    out = gpu.empty(n, dtype=dt)
    K.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    gpu.done()
    close(out, x + y)


@pytest.mark.parametrize("M,N", [(1823, 781), (64, 1024), (4, 4096)])
def test_softmax(gpu, M, N):
    x = gpu.randn(M, N)
    y = gpu.empty(M, N)
    K.softmax_kernel[(M,)](y, x, x.stride(0), y.stride(0), N, BLOCK_SIZE=triton.next_power_of_2(N))
    gpu.done()
    close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-5)


def test_softmax_persistent(gpu):
    M, N = 1000, 300
    x = gpu.randn(M, N)
    y = gpu.empty(M, N)
    K.softmax_persistent_kernel[(132,)](y, x, x.stride(0), y.stride(0), M, N, BLOCK_SIZE=512, num_stages=2)
    gpu.done()
    close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_layer_norm(gpu, dtype):
    dt = getattr(torch, dtype)
    M, N = 257, 1151
    x = gpu.randn(M, N, dtype=dt)
    w, b = gpu.rand(N, dtype=dt), gpu.rand(N, dtype=dt)
    y = gpu.empty(M, N, dtype=dt)
    mean, rstd = gpu.empty(M), gpu.empty(M)
    K._layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK_SIZE=256)
    gpu.done()
    ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5).to(dt)
    tol = dict(atol=1e-2, rtol=1e-2) if dt == torch.float16 else dict(atol=1e-5, rtol=1e-5)
    close(y, ref, **tol)
    close(mean, x.float().mean(1), atol=1e-5, rtol=1e-5)


def test_masked_strided_copy_2d(gpu):
    M, N = 300, 211
    src = gpu.randn(N, M).t()  # column-major view: strides (1, M)
    dst = gpu.empty(M, 2 * N)[:, ::2]  # every other column
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    K.copy_2d_kernel[grid](src, dst, M, N, src.stride(0), src.stride(1), dst.stride(0), dst.stride(1),
                           BLOCK_M=32, BLOCK_N=64)
    gpu.done()
    close(dst, src)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
def test_reduce_2d(gpu, axis, op):
    M, N = 50, 70
    x = gpu.randn(M, N)
    is_arg = op.startswith("arg")
    out = gpu.empty(N if axis == 0 else M, dtype=torch.int32 if is_arg else torch.float32)
    other = 0.0 if op == "sum" else (float("-inf") if op in ("max", "argmax") else float("inf"))
    K.reduce_2d_kernel[(1,)](x, out, M, N, x.stride(0), OTHER=other, AXIS=axis, OP=op, BLOCK_M=64, BLOCK_N=128)
    gpu.done()
    if op == "sum":
        close(out, x.sum(axis), atol=1e-4, rtol=1e-5)
    elif op in ("max", "min"):
        close(out, getattr(x, op)(axis).values)
    else:
        close(out.long(), getattr(x, op)(axis))


def test_nested_calls(gpu):
    n = 5000
    x = gpu.randn(n) * 4
    y = gpu.empty(n)
    K.nested_kernel[(triton.cdiv(n, 512),)](x, y, n, 1.5, B=2, BLOCK=512)
    gpu.done()
    close(y, torch.clamp(x * x * 1.5 + 2, -50, 50))


def test_loop_with_per_program_trip_counts(gpu):
    lens = [0, 5, 1000, 37, 4096, 1]
    offs = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32).to(gpu.device)
    x = gpu.randn(int(offs[-1]))
    out = gpu.empty(len(lens))
    K.ragged_sum_kernel[(len(lens),)](x, offs, out, BLOCK=128)
    gpu.done()
    ref = torch.stack([x[int(offs[i]):int(offs[i + 1])].sum() for i in range(len(lens))])
    close(out, ref, atol=1e-3, rtol=1e-4)


def test_while_loop(gpu):
    starts = [1, 2, 3, 6, 7, 27, 97, 871]
    n = torch.tensor(starts, dtype=torch.int32, device=gpu.device)
    out = gpu.empty(len(starts), dtype=torch.int32)
    K.collatz_kernel[(len(starts),)](n, out)
    gpu.done()

    def steps(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    assert out.tolist() == [steps(v) for v in starts]


def test_branch_and_2d_grid(gpu):
    n = 3000
    x = gpu.randn(n)
    y = gpu.empty(n)
    K.branch_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    g = gpu.empty(5, 7, dtype=torch.int32)
    K.grid_2d_kernel[(7, 5)](g, g.stride(0))
    gpu.done()
    pid = torch.arange(n, device=x.device) // 256
    close(y, torch.where(pid % 2 == 0, x * 2, x - 1))
    px = torch.arange(7, device=x.device)[None, :]
    py = torch.arange(5, device=x.device)[:, None]
    assert torch.equal(g, (px * 1000 + py * 10 + 35).int())


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"), ("float16", "float32"),
                                     ("float32", "int32"), ("int32", "float32"), ("int32", "int8"),
                                     ("bfloat16", "float32")])
def test_casts(gpu, src, dst):
    n = 4099
    s, d = getattr(torch, src), getattr(torch, dst)
    x = (gpu.randn(n) * 100).to(s) if s.is_floating_point else gpu.randint(-1000, 1000, (n,), dtype=s)
    y = gpu.empty(n, dtype=d)
    K.cast_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    gpu.done()
    close(y, x.to(d))


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "rsqrt", "abs", "sin", "cos", "sigmoid", "minmax"])
def test_math(gpu, fn):
    n = 10000
    x = gpu.rand(n) * 4 + 0.01 if fn in ("log", "sqrt", "rsqrt") else gpu.randn(n) * 3
    y = gpu.empty(n)
    K.math_kernel[(triton.cdiv(n, 1024),)](x, y, n, FN=fn, BLOCK=1024)
    gpu.done()
    ref = {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs,
           "sin": torch.sin, "cos": torch.cos, "sigmoid": torch.sigmoid,
           "minmax": lambda v: torch.clamp(v, min=0.5) + torch.clamp(v, max=0.25)}[fn](x)
    close(y, ref, atol=1e-5, rtol=1e-5)


def test_int_ops(gpu):
    n = 2000
    x = gpu.randint(-10000, 10000, (n,))
    y = gpu.randint(1, 50, (n,))
    out = gpu.empty(n, dtype=torch.int32)
    K.int_ops_kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    gpu.done()
    xl, yl = x.long(), y.long()
    q = torch.div(xl, yl, rounding_mode="trunc")  # Triton's // and % on ints are C's (truncating)
    r = xl - q * yl
    ref = q * 3 + r - (xl & 0xFF) + (xl ^ yl) + (xl >> 2) + (yl << 1)
    assert torch.equal(out.long(), torch.where(xl > yl, ref, -ref))


@triton.jit
def atomic_kernel(X, HIST, SUM, MX, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.atomic_add(HIST + (x % NBINS), 1, mask=m)
    tl.atomic_add(SUM, tl.sum(tl.where(m, x, 0), axis=0))
    tl.atomic_max(MX, tl.max(tl.where(m, x, -1), axis=0))


def test_atomics(gpu):
    n = 100_000
    x = gpu.randint(0, 1_000_000, (n,))
    hist = torch.zeros(16, dtype=torch.int32, device=gpu.device)
    s = torch.zeros(1, dtype=torch.int64, device=gpu.device)
    mx = torch.full((1,), -1, dtype=torch.int32, device=gpu.device)
    atomic_kernel[(triton.cdiv(n, 1024),)](x, hist, s, mx, n, NBINS=16, BLOCK=1024)
    gpu.done()
    assert torch.equal(hist.long(), torch.bincount((x % 16).long(), minlength=16))
    assert int(mx) == int(x.max())


@triton.jit
def atomic_cas_xchg_kernel(LOCK, OUT, COUNT):
    # every program takes a spin lock, increments a counter non-atomically, releases the lock
    while tl.atomic_cas(LOCK, 0, 1) == 1:
        pass
    c = tl.load(COUNT, volatile=True)
    tl.store(COUNT, c + 1)
    tl.atomic_xchg(LOCK, 0)
    tl.store(OUT + tl.program_id(0), c)


def test_atomic_cas_spinlock(gpu):
    P = 64
    lock = torch.zeros(1, dtype=torch.int32, device=gpu.device)
    count = torch.zeros(1, dtype=torch.int32, device=gpu.device)
    out = gpu.empty(P, dtype=torch.int32)
    atomic_cas_xchg_kernel[(P,)](lock, out, count)
    gpu.done()
    assert int(count) == P
    assert sorted(out.tolist()) == list(range(P))


def test_device_print(gpu, capfd):
    x = (torch.arange(4, dtype=torch.int32) * 11).to(gpu.device)
    K.device_print_kernel[(1,)](x, 4, BLOCK=4)
    gpu.done()
    out = capfd.readouterr().out
    assert "x=" in out
    for v in ("0", "11", "22", "33"):
        assert v in out
