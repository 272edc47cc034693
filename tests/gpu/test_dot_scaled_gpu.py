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
    M, N, K = 64, 64, 64
    g = torch.Generator().manual_seed(3)
    a = torch.randint(256, (M // 2, K), dtype=torch.uint8, generator=g)
    b = torch.randint(256, (K, N // 2), dtype=torch.uint8, generator=g)
    sa = torch.randint(120, 135, (M, K // 32), dtype=torch.uint8, generator=g)
    sb = torch.randint(120, 135, (N, K // 32), dtype=torch.uint8, generator=g)
    acc = torch.randn(M, N, generator=g)
    out = torch.empty(M, N, device=gpu.device)
    dev = lambda t: t.to(gpu.device)  # noqa: E731
    D.dot_scale_packed_mn[(1,)](dev(a), dev(sa), dev(b), dev(sb), dev(acc), out, M=M, N=N, K=K)
    gpu.done()
    am = D.model_operand(a, sa, "e2m1", torch.bfloat16, False, pack_k=False)
    bm = D.model_operand(b, sb, "e2m1", torch.bfloat16, True, pack_k=False)
    want = am @ bm + acc.double()
    bound = (am.abs() @ bm.abs() + acc.double().abs()) * 2.0 ** -23 * (K + 1)
    assert ((out.cpu().double() - want).abs() <= bound).all()
