"""``tl.range(..., flatten=True)`` on the GPU: the nests of tests/language/test_flatten.py (prologue / epilogue,
carried values, empty inner loops) and persistent matmuls marked flatten=True (their nests are kept: the inner
loop has a dot), against NumPy / torch.  Skipped without a CUDA device; compile-only under
TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_flatten as F

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("m,n,lo,step", [(5, 3, 0, 1), (6, 4, 1, 2), (4, 0, 0, 1), (3, 2, 2, 1), (0, 3, 0, 1)])
@pytest.mark.parametrize("flatten", [False, True])
def test_nest_with_prologue_epilogue_and_carried_values(gpu, m, n, lo, step, flatten):
    B = 16
    x = np.random.default_rng(m * 7 + n).standard_normal((max(m, 1), max(n, 1), B)).astype(np.float32)
    xd = torch.from_numpy(x).to(gpu.device)
    out = torch.zeros((max(m, 1), B), device=gpu.device)
    tot = torch.zeros(B + 1, device=gpu.device)
    F.nest_sums[(1,)](xd, out, tot, m, max(n, 1) if n else 0, lo, step, BLOCK=B, FLATTEN=flatten)
    gpu.done()
    want, total, count = F._nest_sums_ref(x, m, n, lo, step)
    np.testing.assert_allclose(out.cpu().numpy()[:m], want[:m], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tot.cpu().numpy()[:B], total, rtol=1e-5, atol=1e-5)
    assert tot[B].item() == count


@pytest.mark.parametrize("m,n", [(4, 3), (3, 0), (0, 2)])
def test_nest_without_loads(gpu, m, n):
    out = torch.zeros(3 * max(m, 1), dtype=torch.int32, device=gpu.device)
    F.nest_counts[(1,)](out, m, n, K_CONST=5)
    gpu.done()
    want = np.zeros(3 * max(m, 1), np.int32)
    for i in range(m):
        want[i] = -1 + n * (n + 1) // 2
        want[m + i] = i
        want[2 * m + i] = 10 * i
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@pytest.mark.parametrize("mnk", [(256, 256, 256), (200, 136, 100), (33, 17, 5), (512, 384, 64)])
@pytest.mark.parametrize("programs", [1, 7, 132])
@pytest.mark.parametrize("flatten", [False, True])
def test_persistent_matmul(gpu, mnk, programs, flatten):
    M, N, K = mnk
    gen = torch.Generator().manual_seed(M + N + K + programs)
    a = torch.randn((M, K), generator=gen).half()
    b = torch.randn((K, N), generator=gen).half()
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device=gpu.device)
    F.persistent_matmul[(programs,)](a.to(gpu.device), b.to(gpu.device), c, M, N, K, K, N, N, BLOCK_M=64,
                                     BLOCK_N=64, BLOCK_K=32, NUM_PROGRAMS=programs, FLATTEN=flatten, num_warps=4,
                                     num_stages=3)
    gpu.done()
    torch.testing.assert_close(c.cpu().float(), a.float() @ b.float(), rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("n", [256, 1024])
@pytest.mark.parametrize("flatten", [False, True])
def test_tutorial_persistent_kernels(gpu, n, flatten):
    # the persistent-matmul tutorial's kernels (tests/e2e/kernels.py) at their tuned config, many tiles per program
    from tests.e2e import kernels as K

    gen = torch.Generator().manual_seed(n)
    a = torch.randn((n, n), generator=gen).half().to(gpu.device)
    b = torch.randn((n, n), generator=gen).half().to(gpu.device)
    ref = (a.float() @ b.float()).cpu()
    c = torch.full((n, n), float("nan"), dtype=torch.float16, device=gpu.device)
    K.matmul_persistent(K, a, b, c, n, n, n, 3, flatten=flatten)
    gpu.done()
    torch.testing.assert_close(c.cpu().float(), ref, rtol=1e-2, atol=1e-1)
    if flatten:
        K.triton.set_allocator(lambda size, align, stream: torch.empty(size, device=gpu.device, dtype=torch.int8))
        c.fill_(float("nan"))
        K.matmul_descriptor_persistent(K, a, b.T.contiguous(), c, n, n, n, 3)
        gpu.done()
        torch.testing.assert_close(c.cpu().float(), ref, rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("kind", ["triangle", "shifted", "mod"])
@pytest.mark.parametrize("m", [0, 1, 11])
@pytest.mark.parametrize("flatten", [False, True])
def test_inner_bounds_that_change_with_the_outer_index(gpu, kind, m, flatten):
    n = 5
    x = np.random.default_rng(m).standard_normal(64).astype(np.float32)
    xd = torch.from_numpy(x).to(gpu.device)
    oi = torch.full((256,), -1, dtype=torch.int32, device=gpu.device)
    oj = torch.full((256,), -1, dtype=torch.int32, device=gpu.device)
    os_, tot = torch.zeros(max(m, 1), device=gpu.device), torch.zeros(2, device=gpu.device)
    F.dependent_nest[(1,)](xd, oi, oj, os_, tot, m, n, KIND=kind, FLATTEN=flatten)
    gpu.done()
    vis, sums = F._dependent_ref(x, m, n, kind)
    oi, oj = oi.cpu().numpy(), oj.cpu().numpy()
    assert list(zip(oi[:len(vis)], oj[:len(vis)])) == vis and oi[len(vis)] == -1
    np.testing.assert_allclose(os_.cpu().numpy()[:m], sums[:m], rtol=1e-5, atol=1e-5)
    assert tot[1].item() == len(vis)
