"""Matrix multiplication C = A @ B on tensor cores: ``python examples/matmul.py``.

Each program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps with ``tl.dot`` (fp16 inputs, fp32
accumulation: ``mma.sync`` / ``wgmma`` on NVIDIA GPUs).  Programs are ordered in groups of GROUP_M rows of tiles so
that tiles running at the same time share their A and B blocks in the L2 cache.  Runs on a GPU when tritium
drives one, else on the interpreter (see examples/_common.py)."""
import numpy as np

import tritium as triton
import tritium.language as tl
from _common import empty_like, report, to_device


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, block_m=64, block_n=64, block_k=32, group_m=8):
    """a [M, K] @ b [K, N] for contiguous fp16 arrays; fp16 result, fp32 accumulation."""
    (m, k), (_, n) = a.shape, b.shape
    c = empty_like(a, (m, n))
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    matmul_kernel[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                        GROUP_M=group_m, num_warps=4, num_stages=3)
    return c


def main(m=192, n=160, k=200):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    report("matmul", matmul(to_device(a), to_device(b)), ref, atol=5e-2, rtol=1e-2)


if __name__ == "__main__":
    main()
