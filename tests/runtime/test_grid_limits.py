"""Grids are checked before a launch: every dimension an integer from 0 to the backend's limit (2^31 - 1: program
ids are 32-bit; CUDA's gridDim.y / .z: 65535), on the JIT's fast path and its general path alike, with errors
that name the kernel, the axis and the limit (a grid of 2^31 programs was a NumPy OverflowError)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.runtime.launch import grid3


@triton.jit
def mark(X, N):
    pid = tl.program_id(0)
    tl.store(X + pid % 4, pid, mask=pid < N)


@pytest.mark.parametrize("grid,err,match", [
    ((2 ** 31,), ValueError, r"2147483648 programs along axis 0; the backend takes 0 to 2147483647"),
    ((-1,), ValueError, r"-1 programs along axis 0"),
    ((1, 2 ** 31), ValueError, r"along axis 1"),
    ((3.5,), TypeError, "grid must be a tuple of ints"),
    (lambda meta: (2 ** 40,), ValueError, "along axis 0"),
])
def test_bad_grids_are_refused_before_the_launch(grid, err, match):
    x = np.zeros(4, np.int32)
    mark[(1,)](x, 4)  # compiled and on the fast path
    for _ in range(2):  # the fast path, then again (the general path raised the same)
        with pytest.raises(err, match=match) as e:
            mark[grid](x, 4)
        assert "kernel 'mark'" in str(e.value)
    assert x.tolist() == [0, 0, 0, 0]


def test_empty_and_numpy_grids_launch():
    x = np.full(4, -1, np.int32)
    mark[(0,)](x, 4)
    assert x.tolist() == [-1] * 4
    mark[(np.int64(4),)](x, 4)
    assert x.tolist() == [0, 1, 2, 3]


def test_cuda_grid_limits():
    CUDADriver = pytest.importorskip("tritium_nvidia.driver").CUDADriver

    assert grid3(mark, (2 ** 31 - 1, 65535, 65535), (), {}, CUDADriver.max_grid) == (2 ** 31 - 1, 65535, 65535)
    with pytest.raises(ValueError, match="70000 programs along axis 1; the backend takes 0 to 65535"):
        grid3(mark, (1, 70000), (), {}, CUDADriver.max_grid)
