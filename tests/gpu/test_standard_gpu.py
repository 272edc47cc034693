"""tl.standard on the GPU: flip, sort, topk, bitonic_merge, swizzle2d, reduce_or and the small core functions,
with the kernels of tests/language/test_standard.py, against torch / NumPy.  Sort, flip and topk move values
exactly, so results are compared for equality.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_standard as S

torch = pytest.importorskip("torch")


def rows(gpu, m, n, dtype):
    if dtype.is_floating_point:
        return gpu.randn(m, n, dtype=dtype) * 10
    return gpu.randint(-50, 50, (m, n), dtype=dtype)  # many duplicates


@pytest.mark.parametrize("dtype,m,n,desc,num_warps", [
    (torch.float32, 4, 16, False, 4), (torch.float16, 8, 64, True, 4), (torch.int32, 1, 1024, False, 8),
    (torch.int8, 32, 32, True, 8), (torch.int64, 4, 128, False, 2), (torch.float32, 2, 2, True, 1),
])
def test_sort(gpu, dtype, m, n, desc, num_warps):
    x = rows(gpu, m, n, dtype)
    out = gpu.empty(m, n, dtype=dtype)
    S.sort_rows[(1,)](x, out, M=m, N=n, DESC=desc, num_warps=num_warps)
    gpu.done()
    assert torch.equal(out, torch.sort(x, dim=1, descending=desc).values)


def test_sort_1d_and_3d(gpu):
    x = gpu.randn(512)
    out = gpu.empty(512)
    S.sort_1d[(1,)](x, out, N=512, DESC=True)
    y = gpu.randn(2, 4, 32, dtype=torch.float16)
    out3 = gpu.empty(2, 4, 32, dtype=torch.float16)
    S.sort_3d[(1,)](y, out3, A=2, B=4, C=32, DESC=False)
    gpu.done()
    assert torch.equal(out, torch.sort(x, descending=True).values)
    assert torch.equal(out3, torch.sort(y, dim=-1).values)


@pytest.mark.parametrize("dtype,m,n,k,num_warps", [
    (torch.float32, 4, 16, 4, 4), (torch.float16, 4, 64, 1, 4), (torch.int32, 8, 128, 16, 8),
    (torch.uint8, 2, 32, 32, 2),
])
def test_topk(gpu, dtype, m, n, k, num_warps):
    x = gpu.randint(0, 200, (m, n), dtype=dtype) if dtype == torch.uint8 else rows(gpu, m, n, dtype)
    out = gpu.empty(m, k, dtype=dtype)
    S.topk_rows[(1,)](x, out, M=m, N=n, K=k, num_warps=num_warps)
    gpu.done()
    want = torch.sort(x.to(torch.int32) if dtype == torch.uint8 else x, dim=1, descending=True).values[:, :k]
    assert torch.equal(out, want.to(dtype))


@pytest.mark.parametrize("dtype,n,desc", [(torch.float32, 128, False), (torch.int32, 16, True),
                                          (torch.float16, 64, True)])
def test_bitonic_merge(gpu, dtype, n, desc):
    a = torch.sort(rows(gpu, 8, n, dtype).cpu(), dim=1).values
    x = torch.cat([a[:, 0::2], a[:, 1::2].flip(1)], dim=1)  # ascending then descending
    x = torch.stack([torch.roll(x[i], i) for i in range(8)]).to(gpu.device)
    out = gpu.empty(8, n, dtype=dtype)
    S.bitonic_merge_rows[(1,)](x, out, M=8, N=n, DESC=desc)
    gpu.done()
    assert torch.equal(out, torch.sort(x, dim=1, descending=desc).values)


@pytest.mark.parametrize("dtype,n,num_warps", [(torch.float32, 2048, 8), (torch.float16, 16, 1),
                                               (torch.int32, 128, 4), (torch.int8, 1024, 4)])
def test_flip_1d(gpu, dtype, n, num_warps):
    x = gpu.randn(n, dtype=dtype) if dtype.is_floating_point else gpu.randint(-100, 100, (n,), dtype=dtype)
    out = gpu.empty(n, dtype=dtype)
    S.flip_1d[(1,)](x, out, N=n, num_warps=num_warps)
    gpu.done()
    assert torch.equal(out, x.flip(0))


@pytest.mark.parametrize("dim", [0, 1])
def test_flip_2d_and_3d(gpu, dim):
    x = gpu.randn(64, 32)
    out = gpu.empty(64, 32)
    S.flip_2d[(1,)](x, out, M=64, N=32, DIM=dim)
    y = gpu.randn(2, 8, 4, dtype=torch.float16)
    out3 = gpu.empty(2, 8, 4, dtype=torch.float16)
    S.flip_3d[(1,)](y, out3, A=2, B=8, C=4, DIM=dim + 1)
    gpu.done()
    assert torch.equal(out, x.flip(dim))
    assert torch.equal(out3, y.flip(dim + 1))


@pytest.mark.parametrize("si,sj,g", [(13, 3, 5), (16, 16, 4)])
def test_swizzle2d(gpu, si, sj, g):
    oi = gpu.empty(si, sj, dtype=torch.int32)
    oj = gpu.empty(si, sj, dtype=torch.int32)
    S.swizzle_tensor[(1,)](oi, oj, SI=si, SJ=sj, BI=16, BJ=16, size_i=si, size_j=sj, size_g=g)
    pi = gpu.empty(si, sj, dtype=torch.int32)
    pj = gpu.empty(si, sj, dtype=torch.int32)
    S.swizzle_pids[(si, sj)](pi, pj, sj, GROUP=g)
    gpu.done()
    ni, nj = S.np_swizzle2d(si, sj, g)
    for a, b in ((oi, ni), (oj, nj), (pi, ni), (pj, nj)):
        np.testing.assert_array_equal(a.cpu().numpy(), b)


@pytest.mark.parametrize("dtype,m,n", [(torch.int32, 64, 32), (torch.int8, 4, 8), (torch.int64, 16, 16)])
def test_reduce_or(gpu, dtype, m, n):
    x = gpu.randint(0, 1 << 6, (m, n), dtype=dtype) << gpu.randint(0, 2, (m, n), dtype=dtype)
    o0, o1 = gpu.empty(n, dtype=dtype), gpu.empty(m, dtype=dtype)
    oa, ok = gpu.empty(1, dtype=dtype), gpu.empty(m, dtype=dtype)
    S.reduce_or_2d[(1,)](x, o0, o1, oa, ok, M=m, N=n)
    gpu.done()
    xn = x.cpu().numpy()
    np.testing.assert_array_equal(o0.cpu().numpy(), np.bitwise_or.reduce(xn, axis=0))
    np.testing.assert_array_equal(o1.cpu().numpy(), np.bitwise_or.reduce(xn, axis=1))
    np.testing.assert_array_equal(ok.cpu().numpy(), np.bitwise_or.reduce(xn, axis=1))
    assert int(oa.cpu()[0]) == int(np.bitwise_or.reduce(xn, axis=None))


def test_small_core_functions(gpu):
    x, y = gpu.randn(16), gpu.randn(16)
    o = gpu.empty(64)
    oi = gpu.empty(4, dtype=torch.int32)
    S.small_core[(1,)](x, y, o, oi, 9, C=21, BIG=2 ** 40)
    gpu.done()
    torch.testing.assert_close(o[:16], x + y)
    torch.testing.assert_close(o[16:32], x - 2)
    torch.testing.assert_close(o[32:48], 3 * y)
    assert torch.equal(o[48:], x)
    assert oi.cpu().tolist() == [42, 7, 45, 36]
