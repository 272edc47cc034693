"""The wrong results Triton 3.6's test_core.py found on the GPU (root causes in tests/language/test_core_regressions.py,
whose kernels run here): bf16 scans, an atomic's result broadcast, a while loop in a for loop loading and storing
one address, parameters named like builtins.  Each failed on an H200 before its fix.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_core_regressions as R

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("prod", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,num_warps", [((32, 16), 4), ((16, 32), 4), ((64, 64), 8), ((128, 32), 4)])
def test_bf16_scan_accumulates_in_fp32(gpu, prod, axis, reverse, shape, num_warps):
    gen = torch.Generator().manual_seed(11 + 2 * axis + reverse + shape[0])
    x = R.scan_input(shape, prod, gen, gpu.device)
    z = torch.empty_like(x)
    R.scan2d[(1,)](x, z, BLOCK_M=shape[0], BLOCK_N=shape[1], AXIS=axis, REVERSE=reverse, PROD=prod,
                   num_warps=num_warps)
    gpu.done()
    want = R.scan_reference(x.cpu(), axis, reverse, prod)
    torch.testing.assert_close(z.cpu().float(), want.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16])
@pytest.mark.parametrize("cas", [False, True])
@pytest.mark.parametrize("n,num_warps", [(4, 4), (8, 1), (32, 4)])
def test_atomic_result_broadcast(gpu, dtype, cas, n, num_warps):
    p = torch.arange(n, dtype=torch.int32, device=gpu.device)
    out = torch.zeros(n * n, dtype=dtype, device=gpu.device)
    R.atomic_result_broadcast[(1,)](p, out, N=n, CAS=cas, num_warps=num_warps)
    gpu.done()
    assert torch.equal(out.cpu(), torch.arange(n * n).to(dtype))
    want_p = torch.full((n,), 9, dtype=torch.int32) if cas else torch.arange(1, n + 1, dtype=torch.int32)
    assert torch.equal(p.cpu(), want_p)


@pytest.mark.parametrize("n,num_warps", [(4, 4), (8, 4), (16, 8)])
def test_atomic_result_2d(gpu, n, num_warps):
    gen = torch.Generator().manual_seed(n)
    before = torch.randint(-100, 100, (n * n,), generator=gen, dtype=torch.int32)
    p = before.to(gpu.device)
    old = torch.zeros_like(p)
    R.atomic_result_2d[(1,)](p, old, N=n, num_warps=num_warps)
    gpu.done()
    assert torch.equal(old.cpu(), before)
    assert torch.equal(p.cpu(), before + torch.arange(n * n, dtype=torch.int32))


def test_while_in_for_loads_and_stores_one_address(gpu):
    data = torch.zeros(1, device=gpu.device)
    R.while_in_for[(1,)](data, torch.tensor([8], dtype=torch.int32, device=gpu.device))
    gpu.done()
    assert data.item() == 40.0


def test_parameters_named_like_builtins(gpu):
    x = torch.from_numpy(np.random.default_rng(5).random(16).astype(np.float32)).to(gpu.device)
    want = x + 1 + 2 * 2 + 3 * 3 + 4 * 4 + 5 * 5 + 6 * 6
    for _ in range(3):
        out = torch.zeros(16, device=gpu.device)
        R.builtin_named_params[(1,)](out, x, 1, 2, 3, 4, 5, 6, N=16)
        out2 = torch.zeros(16, device=gpu.device)
        R.builtin_named_params[(1,)](type=out2, len=x, int=1, id=2, tuple=3, Exception=4, isinstance=5, _M=6, N=16)
        gpu.done()
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(out2, want)


# ------------------------------------------------------------------------------------------------------------
# features test_core found missing (tests/language/test_core_gaps.py), run on the GPU
# ------------------------------------------------------------------------------------------------------------

from tests.language import test_core_gaps as G  # noqa: E402


@pytest.mark.parametrize("block,num_warps", [(256, 4), (1024, 8), (4096, 8)])
def test_debug_barrier_orders_the_threads_writes(gpu, block, num_warps):
    x = gpu.randn(block)
    y = torch.zeros(2 * block, device=gpu.device)
    G.barrier_kernel[(1,)](x, y, BLOCK=block, num_warps=num_warps)
    gpu.done()
    assert torch.equal(y[block:].cpu(), torch.roll(x.cpu() * 2, -1))


def test_hinted_copy(gpu):
    src = gpu.randn(4096)
    dst = torch.zeros_like(src)
    G.hinted_copy[(4,)](dst, src, torch.zeros(1, dtype=torch.int32, device=gpu.device), BLOCK=1024, HINT=True)
    gpu.done()
    assert torch.equal(dst, src)


def test_pinned_host_memory_is_a_pointer_argument(gpu):
    if gpu.compile_only:
        pytest.skip("needs a CUDA device (compile-only mode): pinned host memory is read by the GPU")
    x = torch.arange(256, dtype=torch.float32).pin_memory()
    y = torch.zeros(256, device=gpu.device)
    G.barrier_kernel[(1,)](x, y, BLOCK=128)  # reads the first 128 of pinned host memory
    torch.cuda.synchronize()
    assert torch.equal(y[:128].cpu(), x[:128] * 2)
    with pytest.raises(ValueError, match="pinned host memory"):
        G.barrier_kernel[(1,)](torch.arange(256, dtype=torch.float32), y, BLOCK=128)


@pytest.mark.parametrize("uf", [1, 4, 5])
@pytest.mark.parametrize("n", [0, 13, 31])
def test_loop_unroll_factor(gpu, uf, n):
    src = torch.from_numpy(np.random.default_rng(n).standard_normal(40).astype(np.float32))
    out = torch.zeros(1, device=gpu.device)
    G.unrolled_branchy[(1,)](out, src.to(gpu.device), n, UF=uf)
    gpu.done()
    ref = 0.0
    for i in range(1, n, 3):
        ref = ref + float(src[i]) * i if src[i] > 0 else ref - 1.0
    assert abs(out.item() - ref) < 1e-4


@pytest.mark.parametrize("m,n,k,bm,bn,bk", [(256, 192, 160, 128, 32, 32), (64, 64, 64, 32, 32, 16),
                                            (64, 32, 64, 32, 16, 8)])
def test_broadcast_multiply_sum(gpu, m, n, k, bm, bn, bk):
    """A matmul written as ``tl.sum(x[:, :, None] * y[None, :, :], 1)``: a tf32 dot when every tile side is >= 16
    (Triton's tolerance for tf32), an exact fp32 reduction otherwise (BK = 8)."""
    gen = torch.Generator().manual_seed(m + bk)
    x = (torch.randn(m, k, generator=gen) * 0.1).to(gpu.device)
    y = (torch.randn(k, n, generator=gen) * 0.1).to(gpu.device)
    z = torch.empty(m, n, device=gpu.device)
    G.mul_broadcast_matmul[(m // bm, n // bn)](z, x, y, M=m, N=n, K=k, BM=bm, BN=bn, BK=bk)
    gpu.done()
    ref = x.cpu().double() @ y.cpu().double()
    tol = dict(atol=1e-2, rtol=1e-2) if bk >= 16 else dict(atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(z.cpu().double(), ref, **tol)


@pytest.mark.parametrize("num_ctas", [2, 4])
@pytest.mark.parametrize("cooperative", [False, True])
def test_num_ctas_above_one_runs(gpu, num_ctas, cooperative):
    """``num_ctas > 1`` (Triton's thread-block clusters, a speed choice) used to be refused at launch; each program
    now runs as one CTA with the values of ``num_ctas=1`` (Triton's test_load_scope_sem_coop_grid_cta_not_one)."""
    gen = torch.Generator().manual_seed(num_ctas)
    m, n, k = 64, 64, 64
    x = (torch.randn(m, k, generator=gen) * 0.1).to(gpu.device)
    y = (torch.randn(k, n, generator=gen) * 0.1).to(gpu.device)
    z = torch.empty(m, n, device=gpu.device)
    G.mul_broadcast_matmul[(2, 2)](z, x, y, M=m, N=n, K=k, BM=32, BN=32, BK=8, num_ctas=num_ctas,
                                   launch_cooperative_grid=cooperative)
    gpu.done()
    torch.testing.assert_close(z.cpu().double(), x.cpu().double() @ y.cpu().double(), atol=1e-5, rtol=1e-5)
