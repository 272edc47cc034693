"""``tl.dot_scaled`` on the GPU (the kernels and model of tests/language/test_dot_scaled.py): Triton's test_scaled_dot
shapes and data, fp4 / fp8 / bf16 / fp16 operands, scales on either side.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

from tests.language import test_dot_scaled as D

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("case", D.CASES[::3] + [(128, 128, 128, False, True, True, "e2m1", "fp16"),
                                                 (128, 64, 128, True, False, False, "e5m2", "bf16")],
                         ids=lambda c: "-".join(map(str, c)))
def test_dot_scaled_matches_the_model(gpu, case):
    (x, sx, y, sy, ta, tb, comp), want = D.make_case(*case, device=gpu.device)
    M, N, K = case[:3]
    z = torch.empty((M, N), dtype=comp, device=gpu.device)
    D.dot_scale_kernel[(1,)](x, *x.stride(), sx, y, *y.stride(), sy, z, M, N, K, ta, tb, num_warps=4)
    gpu.done()
    torch.testing.assert_close(z.cpu().double(), want.double(), atol=1e-5, rtol=1e-2)


def test_packed_along_m_and_n_with_an_accumulator(gpu):
    why = D.run_packed(64, 64, 64, gpu.device)  # (compile-only mode: compiled, not run; the skip comes next)
    gpu.done()
    assert why == ""
