"""Numbers assigned to names in a kernel, typed as Triton types them (tests/language/test_assigned_scalars.py has
the why; its kernels run here on the GPU).  Skipped without a CUDA device; compile-only under
TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_assigned_scalars as A

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n,num_warps", [(16, 1), (128, 4), (1024, 8)])
def test_int8_plus_assigned_int_is_int32(gpu, n, num_warps):
    x = torch.from_numpy(A._int8_input(n, n)).to(gpu.device)
    y = torch.zeros(n, dtype=torch.int32, device=gpu.device)
    A.int8_plus_assigned[(1,)](x, y, N=n, num_warps=num_warps)
    gpu.done()
    assert torch.equal(y.cpu(), x.cpu().to(torch.int32) + 1)


def test_int8_plus_annotated_constexpr_stays_int8(gpu):
    x = torch.from_numpy(A._int8_input(32, 1)).to(gpu.device)
    y = torch.zeros(32, dtype=torch.int32, device=gpu.device)
    A.int8_plus_constexpr[(1,)](x, y, N=32)
    gpu.done()
    assert torch.equal(y.cpu(), (x.cpu() + 1).to(torch.int32))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [64, 512])
def test_half_times_assigned_float_is_fp32(gpu, dtype, n):
    gen = torch.Generator().manual_seed(n)
    x = (torch.randn(n, generator=gen) * 10).to(dtype)
    y = torch.zeros(n, dtype=torch.float32, device=gpu.device)
    A.half_times_assigned[(1,)](x.to(gpu.device), y, N=n)
    gpu.done()
    xf = x.float().numpy()
    eps = np.float32(0.1)
    want = xf * eps + xf * (eps * np.float32(3))
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-6, atol=0)


def test_folded_values_follow_triton_arithmetic(gpu):
    oi = torch.zeros(4, dtype=torch.int32, device=gpu.device)
    of = torch.zeros(2, dtype=torch.float32, device=gpu.device)
    A.folded_values[(1,)](oi, of)
    gpu.done()
    assert oi.cpu().tolist() == [-3, -1, -2 ** 31, (7 << 29) - 2 ** 32]
    third = np.float32(1) / np.float32(3)
    assert of.cpu().numpy().tolist() == [third, third * np.float32(3) - np.float32(1)]


@pytest.mark.parametrize("block", [4, 16, 256])
def test_assigned_values_stay_compile_time(gpu, block):
    x = torch.from_numpy(A._int8_input(block // 2, block)).to(gpu.device)
    y = torch.zeros(block // 2, dtype=torch.int32, device=gpu.device)
    A.still_compile_time[(1,)](x, y, BLOCK=block)
    gpu.done()
    want = x.cpu().to(torch.int32) + 1
    assert torch.equal(y.cpu(), want * 2 if block > 4 else want)
