"""tl.trans / tl.permute / tl.reshape on the GPU against torch: the views keep each element in the register that
holds it (the result in the permuted blocked layout or a ``#ttg.linear`` of the source's, Triton's
``inferTransOpEncoding``) and the conversions move past them, so a view is often a register rename and the one
exchange left is the store's or the consumer's (Triton's test_trans_reshape counts one ``ttg.convert_layout``).
The kernels feed the views into elementwise ops, reductions, dots and other views, so every consumer sees the
new layouts.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import itertools

import pytest

import tritium as triton
import tritium.language as tl

torch = pytest.importorskip("torch")


@triton.jit
def trans2d_kernel(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    y = tl.trans(x) * 2 + 1
    tl.store(Z + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], y)


@triton.jit
def permute3d_kernel(X, Z, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, P0: tl.constexpr,
                     P1: tl.constexpr, P2: tl.constexpr, SA: tl.constexpr, SB: tl.constexpr, SC: tl.constexpr):
    i = tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    y = tl.permute(tl.load(X + i), (P0, P1, P2))
    o = tl.arange(0, SA)[:, None, None] * (SB * SC) + tl.arange(0, SB)[None, :, None] * SC + \
        tl.arange(0, SC)[None, None, :]
    tl.store(Z + o, y)


@triton.jit
def reshape_permute_kernel(X, Z, S0: tl.constexpr, S1: tl.constexpr, R0: tl.constexpr, R1: tl.constexpr,
                           R2: tl.constexpr, R3: tl.constexpr):
    x = tl.load(X + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    x = tl.permute(tl.reshape(x, (R0, R1, R2, R3)), (1, 2, 3, 0))
    tl.store(Z + tl.arange(0, S0 * S1), tl.reshape(x, (S0 * S1,)))


@triton.jit
def trans_reduce_kernel(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    s = tl.sum(tl.trans(x), axis=1)  # [N]: the sums of x's columns
    m = tl.max(tl.reshape(x, (M, N // 4, 4)), axis=2)  # [M, N / 4]
    tl.store(Z + tl.arange(0, N), s)
    tl.store(Z + N + tl.arange(0, M)[:, None] * (N // 4) + tl.arange(0, N // 4)[None, :], m)


@triton.jit
def dot_trans_kernel(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, N)[:, None] * K + tl.arange(0, K)[None, :])  # [N, K]
    c = tl.dot(a, tl.trans(b))
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def _input(gpu, shape, dtype):
    if dtype.is_floating_point:
        return gpu.randn(*shape, dtype=dtype)
    return gpu.randint(-100, 100, shape, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8])
@pytest.mark.parametrize("m,n,warps", [(32, 32, 4), (64, 16, 4), (16, 128, 8), (8, 8, 1), (128, 64, 8)])
def test_trans2d(gpu, dtype, m, n, warps):
    x = _input(gpu, (m, n), dtype)
    z = gpu.empty(n, m, dtype=dtype)
    trans2d_kernel[(1,)](x, z, m, n, num_warps=warps)
    gpu.done()
    assert torch.equal(z.cpu(), (x.cpu().t() * 2 + 1).to(dtype))


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("shape,warps", [((4, 8, 16), 4), ((16, 2, 32), 8), ((2, 64, 4), 1)])
def test_permute3d(gpu, perm, shape, warps):
    x = _input(gpu, shape, torch.float32)
    out = tuple(shape[p] for p in perm)
    z = gpu.empty(*out)
    permute3d_kernel[(1,)](x, z, *shape, *perm, *out, num_warps=warps)
    gpu.done()
    assert torch.equal(z.cpu(), x.cpu().permute(*perm).contiguous())


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16])
@pytest.mark.parametrize("s,r,warps", [((32, 32), (32, 4, 4, 2), 4), ((64, 16), (8, 8, 4, 4), 4),
                                       ((16, 64), (2, 8, 8, 8), 8), ((8, 32), (4, 2, 16, 2), 1)])
def test_reshape_permute(gpu, dtype, s, r, warps):
    # Triton's test_trans_reshape at several shapes
    x = _input(gpu, s, dtype)
    z = gpu.empty(s[0] * s[1], dtype=dtype)
    h = reshape_permute_kernel[(1,)](x, z, *s, *r, num_warps=warps)
    gpu.done()
    assert torch.equal(z.cpu(), x.cpu().reshape(r).permute(1, 2, 3, 0).reshape(-1))
    if s == (32, 32):
        assert h.asm["ttgir"].count("ttg.convert_layout") == 1


@pytest.mark.parametrize("m,n,warps", [(32, 64, 4), (128, 16, 8), (16, 16, 1)])
def test_trans_reduce(gpu, m, n, warps):
    x = _input(gpu, (m, n), torch.float32)
    z = gpu.empty(n + m * (n // 4))
    trans_reduce_kernel[(1,)](x, z, m, n, num_warps=warps)
    gpu.done()
    xc = x.cpu()
    torch.testing.assert_close(z.cpu()[:n], xc.sum(0), atol=1e-4, rtol=1e-4)
    assert torch.equal(z.cpu()[n:], xc.reshape(m, n // 4, 4).amax(2).reshape(-1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("m,n,k,warps", [(64, 64, 32, 4), (128, 64, 64, 8), (16, 16, 16, 1), (64, 32, 64, 4)])
def test_dot_of_trans(gpu, dtype, m, n, k, warps):
    a, b = _input(gpu, (m, k), dtype), _input(gpu, (n, k), dtype)
    c = gpu.empty(m, n)
    dot_trans_kernel[(1,)](a, b, c, m, n, k, num_warps=warps)
    gpu.done()
    ref = a.cpu().double() @ b.cpu().double().t()
    tol = dict(atol=1e-2, rtol=1e-2) if dtype == torch.float16 else dict(atol=3e-2, rtol=3e-2)  # tf32
    torch.testing.assert_close(c.cpu().double(), ref, **tol)
