"""Triton's ``test_dot_max_num_imprecise_acc`` kernel and its parameters, shared by the cuda:90 compile test
(tests/nvidia/test_dot_max_num_imprecise_acc.py) and the GPU test (tests/gpu/test_dot_imprecise_acc_gpu.py)."""
import itertools

import tritium as triton
import tritium.language as tl

MNK = (128, 256, 256)
BLOCKS = [(128, 256, 128), (64, 64, 64)]
IN_TYPES = {"float8e5": "fp8e5", "float8e4nv": "fp8e4nv"}
LOW_PRECISION_ACC = [0, 32, 64, 128]
NUM_WARPS, NUM_STAGES = 8, 3

#: every (BLOCK_M, BLOCK_N, BLOCK_K, in_type_str, low_precision_acc) of Triton's test (float8e4b15 left out: no
#: fp8e4b15 tensors on CUDA from sm_90, as in Triton)
CASES = [(*blk, ty, acc) for blk, ty, acc in itertools.product(BLOCKS, IN_TYPES, LOW_PRECISION_ACC)]


def case_id(case) -> str:
    bm, bn, bk, ty, acc = case
    return f"{bm}x{bn}x{bk}-{ty}-L{acc}"


def max_num_imprecise_acc(block_k: int, low_precision_acc: int):
    """What Triton's test passes: ``low_precision_acc`` when at most BLOCK_K, else None (the default)."""
    return low_precision_acc if low_precision_acc <= block_k else None


def expected_add_f32(bm: int, bn: int, bk: int, low_precision_acc: int) -> int:
    """``add.f32`` in the PTX on sm_90: Triton's formula for ``low_precision_acc > 0`` (one per thread and
    accumulator register per ``low_precision_acc`` elements of BLOCK_K; 0 when it exceeds BLOCK_K: the default,
    all of K in wgmma's accumulator); 0 for ``low_precision_acc == 0`` (mma.sync on f16 operands, no split), as
    Triton's PTX."""
    if low_precision_acc == 0:
        return 0
    return (bm * bn) // (32 * NUM_WARPS) * (bk // low_precision_acc)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  low_precision_acc: tl.constexpr, num_stages: tl.constexpr = 3):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=num_stages):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        accumulator = tl.dot(a, b, acc=accumulator, max_num_imprecise_acc=low_precision_acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, accumulator)


def signature(fp8: str) -> dict:
    sig = {"a_ptr": "*" + fp8, "b_ptr": "*" + fp8, "c_ptr": "*fp32"}
    for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"):
        sig[name] = "i32"
    return sig


def constexprs(bm: int, bn: int, bk: int, low_precision_acc: int) -> dict:
    return dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                low_precision_acc=max_num_imprecise_acc(bk, low_precision_acc), num_stages=NUM_STAGES)
