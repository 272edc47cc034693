"""Float atomics on the GPU (tests/language/test_float_atomics.py's kernels): fp32 / fp64 max and min over values
with every special (+-0.0, +-inf, NaN of both signs, denormals) raced on by many programs, bit-exact against the
total order of the bits (what the interpreter computes too); fp16 / bf16 / fp32 / fp64 atomic add of small integers
(exact in any order) against torch.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

from tests.language import test_float_atomics as F

torch = pytest.importorskip("torch")

import tritium as triton  # noqa: E402

_NP = {torch.float32: np.float32, torch.float64: np.float64}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("n,nout,block", [(100000, 7, 256), (4096, 1, 128), (777, 16, 64)])
def test_max_min_bit_exact_in_the_total_order(gpu, dtype, is_max, n, nout, block):
    rng = np.random.default_rng(n + nout + is_max)
    x = F.specials(n, _NP[dtype], rng)
    init = F.specials(nout, _NP[dtype], rng)
    xt, out = torch.from_numpy(x).to(gpu.device), torch.from_numpy(init.copy()).to(gpu.device)
    F.atomic_extreme[(triton.cdiv(n, block),)](out, xt, n, NOUT=nout, BLOCK=block, MAX=is_max)
    gpu.done()
    got = out.cpu().numpy()
    assert np.array_equal(F.bits(got), F.bits(F.reference_extreme(x, init, nout, is_max)))


def test_scalar_max_returns_the_old_value(gpu):
    n, block = 50000, 128
    x = gpu.randn(n)
    out = torch.full((1 + triton.cdiv(n, block),), float("-inf"), device=gpu.device)
    F.atomic_scalar_max[(triton.cdiv(n, block),)](out, x, n, BLOCK=block)
    gpu.done()
    assert out[0].item() == x.max().item()
    olds = out[1:]
    assert bool((olds <= x.max()).all()) and bool(torch.isneginf(olds).any())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("nout", [1, 5, 64])
def test_atomic_add_of_floats(gpu, dtype, nout):
    n, block = 20000, 256
    lo, hi = (-1, 2) if dtype.itemsize == 2 else (-4, 5)
    x = gpu.randint(lo, hi, (n,)).to(dtype)
    if dtype.itemsize == 2:  # every partial sum an exact integer of the type: |sum| <= 256 (bf16), 2048 (fp16)
        x[2048 if dtype == torch.float16 else 256:] = 0
    out = torch.zeros(nout, dtype=dtype, device=gpu.device)
    F.atomic_sum[(triton.cdiv(n, block),)](out, x, n, NOUT=nout, BLOCK=block)
    gpu.done()
    want = torch.stack([x[i::nout].double().sum() for i in range(nout)])
    assert torch.equal(out.double(), want)
