"""``tl.map_elementwise`` on the GPU: the kernels of tests/language/test_map_elementwise.py against NumPy
(per-element branches, a data-dependent loop per element, pack=2 with two results and a broadcast operand).

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_map_elementwise as M

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", [100, 1000])
def test_branch_per_element(gpu, dtype, n):
    x, z = M.run_selu(torch, dtype, n, device=gpu.device)
    gpu.done()
    tol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(z, M._selu(x), rtol=tol, atol=tol)


def test_data_dependent_loop_per_element(gpu):
    x = np.random.default_rng(1).integers(1, 10000, 256).astype(np.int32)
    tx = torch.tensor(x, device=gpu.device)
    tz = torch.empty_like(tx)
    M.collatz_kernel[(1,)](tx, tz, BLOCK=256)
    gpu.done()
    np.testing.assert_array_equal(tz.cpu().numpy(), M.collatz_ref(x))


@pytest.mark.parametrize("m,n", [(4, 32), (16, 64)])
def test_pack_two_results_broadcast(gpu, m, n):
    rng = np.random.default_rng(m * n)
    a = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    b = rng.integers(1, 17, n).astype(np.int32)
    ta, tb = torch.tensor(a, device=gpu.device), torch.tensor(b, device=gpu.device)
    q, r = torch.empty_like(ta), torch.empty_like(ta)
    M.divmod_kernel[(1,)](ta, tb, q, r, M=m, N=n)
    gpu.done()
    qt = np.trunc(a / b).astype(np.int32)
    np.testing.assert_array_equal(q.cpu().numpy(), qt)
    np.testing.assert_array_equal(r.cpu().numpy(), a - qt * b)
