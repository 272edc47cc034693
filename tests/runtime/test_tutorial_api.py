"""The runtime API Triton's fused-softmax tutorial uses, on the interpreter: device properties, warmup,
``n_regs`` / ``metadata.shared`` occupancy arithmetic, and launching a CompiledKernel with every parameter."""
import numpy as np
import pytest

import tritium as triton
from tritium.runtime import driver


def _ready():
    try:
        from tritium.frontend import make_ttir  # noqa: F401

        return "interpreter" in driver.backends()
    except ImportError:
        return False


pytestmark = pytest.mark.skipif(not _ready(), reason="frontend or interpreter backend not installed")


def test_softmax_tutorial_flow(monkeypatch):
    from tests.e2e.kernels import softmax_persistent_kernel as softmax_kernel

    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    NUM_SM, NUM_REGS = props["multiprocessor_count"], props["max_num_regs"]
    SIZE_SMEM, WARP_SIZE = props["max_shared_mem"], props["warpSize"]
    x = np.random.default_rng(0).random((33, 100), dtype=np.float32)
    y = np.empty_like(x)
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps, num_stages = 8, 2
    kernel = softmax_kernel.warmup(y, x, x.shape[1], y.shape[1], n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                   num_stages=num_stages, num_warps=num_warps, grid=(1,))
    kernel._init_handles()
    occupancy = NUM_REGS // (kernel.n_regs * WARP_SIZE * num_warps)
    occupancy = min(occupancy, SIZE_SMEM // kernel.metadata.shared)
    num_programs = max(1, min(NUM_SM * occupancy, n_rows))
    kernel[(num_programs, 1, 1)](y, x, x.shape[1], y.shape[1], n_rows, n_cols, BLOCK_SIZE, num_stages)
    e = np.exp(x - x.max(1, keepdims=True))
    triton.testing.assert_close(y, e / e.sum(1, keepdims=True), atol=1e-5)
