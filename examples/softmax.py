"""Row-wise softmax, one program per row: ``python examples/softmax.py``.

Each program loads its whole row (padded to a power of two with -inf, which exp turns into 0), subtracts the row's
maximum for stability, exponentiates, and divides by the sum: one read and one write of the matrix.  Runs on a GPU
when tritium drives one, else on the interpreter (see examples/_common.py)."""
import numpy as np

import tritium as triton
import tritium.language as tl
from _common import empty_like, report, to_device


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    """Softmax of each row of a contiguous 2-D array (NumPy on the interpreter, a torch tensor on a GPU)."""
    n_rows, n_cols = x.shape
    out = empty_like(x)
    block = triton.next_power_of_2(n_cols)
    num_warps = 4 if block <= 2048 else 8
    softmax_kernel[(n_rows,)](out, x, n_cols, n_cols, n_cols, BLOCK_SIZE=block, num_warps=num_warps)
    return out


def main(n_rows=256, n_cols=781):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    report("softmax", softmax(to_device(x)), e / e.sum(axis=1, keepdims=True), atol=1e-6, rtol=1e-5)


if __name__ == "__main__":
    main()
