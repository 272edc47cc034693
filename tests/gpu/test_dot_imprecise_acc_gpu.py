"""fp8 ``tl.dot(..., max_num_imprecise_acc=L)`` on the GPU: Triton's ``test_dot_max_num_imprecise_acc`` (M, N, K =
128, 256, 256; the 16 cuda combinations of blocks, fp8 type and L in tests/nvidia/imprecise_acc_kernels.py), values
against torch's fp16 matmul of the same fp8 inputs with Triton's tolerances (0.01 for e4m3, 1e-3 for e5m2), and
on sm_90 Triton's count of ``add.f32`` in the PTX (the partial accumulators added in fp32 every L elements of K).

Inputs as Triton's test makes fp8 ones: random bytes in [20, 40) read as fp8 (small positive values, so the sums
do not cancel).  Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

import tritium as triton
from tests.nvidia import imprecise_acc_kernels as IA

torch = pytest.importorskip("torch")

TORCH_FP8 = {"float8e5": "float8_e5m2", "float8e4nv": "float8_e4m3fn"}
TOL = {"float8e4nv": dict(rtol=0.01, atol=0.01), "float8e5": dict(rtol=1e-3, atol=1e-3)}


# Triton's cuda cases (its hip ones take other fp8 types); on a GPU without fp8 matrix instructions (gfx1100) the
# 128x256x128 fp8 tiles fall to FMA and take LLVM many minutes each
@pytest.mark.cuda_only("the fp8 types and block sizes of Triton's cuda cases")
@pytest.mark.parametrize("case", IA.CASES, ids=[IA.case_id(c) for c in IA.CASES])
def test_dot_max_num_imprecise_acc(gpu, case):
    bm, bn, bk, ty, acc = case
    M, N, K = IA.MNK
    dt = getattr(torch, TORCH_FP8[ty])
    a = gpu.randint(20, 40, (M, K), dtype=torch.int8).view(dt)
    b = gpu.randint(20, 40, (K, N), dtype=torch.int8).view(dt)
    c = gpu.empty(M, N, dtype=torch.float32)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), 1)
    h = IA.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                               c.stride(1), bm, bn, bk, IA.max_num_imprecise_acc(bk, acc), num_warps=IA.NUM_WARPS,
                               num_stages=IA.NUM_STAGES)
    gpu.done()
    ref = torch.matmul(a.to(torch.float16), b.to(torch.float16)).to(torch.float32)
    torch.testing.assert_close(c, ref, **TOL[ty])
    if acc > 0 and torch.cuda.get_device_capability()[0] == 9 and "ptx" in h.asm:
        assert h.asm["ptx"].count("add.f32") == IA.expected_add_f32(bm, bn, bk, acc)
