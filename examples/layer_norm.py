"""Layer normalisation (forward), one program per row: ``python examples/layer_norm.py``.

``y = (x - mean) / sqrt(var + eps) * w + b`` over each row, statistics in fp32 whatever the input type.  Rows
longer than one block are walked in blocks twice: once for the mean and variance, once to normalise.  Runs on a GPU
when tritium drives one, else on the interpreter (see examples/_common.py)."""
import numpy as np

import tritium as triton
import tritium.language as tl
from _common import empty_like, report, to_device


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    """Layer norm of each row of a contiguous 2-D array; returns (y, mean, rstd)."""
    n_rows, n_cols = x.shape
    y = empty_like(x)
    mean = empty_like(x, (n_rows,), np.float32)
    rstd = empty_like(x, (n_rows,), np.float32)
    block = min(triton.next_power_of_2(n_cols), 4096)
    layer_norm_fwd[(n_rows,)](x, y, w, b, mean, rstd, n_cols, n_cols, eps, BLOCK_SIZE=block,
                              num_warps=min(max(block // 256, 1), 8))
    return y, mean, rstd


def main(n_rows=128, n_cols=1151):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((n_rows, n_cols)) * 2 + 0.5).astype(np.float32)
    w = rng.standard_normal(n_cols).astype(np.float32)
    b = rng.standard_normal(n_cols).astype(np.float32)
    y, mean, rstd = layer_norm(to_device(x), to_device(w), to_device(b))
    m = x.mean(axis=1, keepdims=True)
    ref = (x - m) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * w + b
    report("layer_norm", y, ref, atol=1e-4, rtol=1e-4)


if __name__ == "__main__":
    main()
