"""torch.compile'd functions on Inductor's Triton CPU backend, compiled and run by tritium's interpreter, against
eager PyTorch on random inputs: pointwise with broadcasting, softmax, layer norm, RMS norm, cumsum, argmax, cross
entropy, RoPE, dropout's statistics, an MLP (forward and backward), across dtypes and shapes."""
import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _compiled(fn):
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, dynamic=False)


def _check(fn, *args, atol=1e-5, rtol=1e-5):
    from torch._inductor.utils import run_and_get_code

    out, code = run_and_get_code(_compiled(fn), *args)
    assert "@triton.jit" in "\n".join(code), "Inductor did not generate Triton kernels"
    ref = fn(*args)
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        torch.testing.assert_close(o, r, atol=atol, rtol=rtol)
    return out


def _tol(dtype):
    return dict(atol=1e-2, rtol=1e-2) if dtype in (torch.float16, torch.bfloat16) else dict(atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7, 33), (4, 16, 128)])
def test_pointwise_broadcast(inductor_cpu_triton, dtype, shape):
    x = torch.randn(shape, dtype=dtype)
    y = torch.randn(shape[-1], dtype=dtype)
    _check(lambda a, b: torch.sigmoid(a * 2 + b) - torch.tanh(b) * a.abs().sqrt(), x, y, **_tol(dtype))


@pytest.mark.parametrize("shape", [(8, 100), (3, 5, 1024)])
def test_softmax(inductor_cpu_triton, shape):
    x = torch.randn(shape) * 4
    _check(lambda a: torch.softmax(a, dim=-1), x)


@pytest.mark.parametrize("n", [64, 1000])
def test_layer_norm(inductor_cpu_triton, n):
    x, w, b = torch.randn(12, n), torch.randn(n), torch.randn(n)
    _check(lambda a, w, b: F.layer_norm(a, (n,), w, b, eps=1e-5), x, w, b, atol=1e-4, rtol=1e-4)


def test_rms_norm(inductor_cpu_triton):
    x, w = torch.randn(10, 384), torch.randn(384)

    def rms(a, w):
        return a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    _check(rms, x, w, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_cumsum(inductor_cpu_triton, dtype):
    x = torch.randn(6, 200) if dtype.is_floating_point else torch.randint(-50, 50, (6, 200), dtype=dtype)
    _check(lambda a: torch.cumsum(a, dim=1), x, atol=1e-4, rtol=1e-4)


def test_argmax(inductor_cpu_triton):
    x = torch.randn(9, 300)
    _check(lambda a: (torch.argmax(a, dim=1), torch.argmin(a, dim=0)), x)


def test_cross_entropy(inductor_cpu_triton):
    logits, target = torch.randn(32, 1000), torch.randint(0, 1000, (32,))
    _check(lambda x, t: F.cross_entropy(x, t), logits, target, atol=1e-4, rtol=1e-4)


def test_rope(inductor_cpu_triton):
    seq, heads, dim = 16, 4, 64
    q = torch.randn(2, seq, heads, dim)
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    ang = torch.arange(seq).float()[:, None] * inv[None, :]
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]

    def rope(x, cos, sin):
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    _check(rope, q, cos, sin)


def test_dropout_statistics(inductor_cpu_triton):
    """Inductor's dropout draws its own random numbers (tl.rand in the kernel): not eager's, so the statistics
    are checked: about p of the elements are zeroed, the rest scaled by 1 / (1 - p)."""
    p = 0.3
    x = torch.rand(256, 512) + 0.5
    out = _compiled(lambda a: F.dropout(a, p=p, training=True))(x)
    zero = out == 0
    frac = zero.float().mean().item()
    assert abs(frac - p) < 0.01, frac
    torch.testing.assert_close(out[~zero], x[~zero] / (1 - p))


def test_mlp_forward_backward(inductor_cpu_triton):
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32))
    x = torch.randn(16, 64)
    ref_out = mlp(x)
    ref_out.square().mean().backward()
    ref_grads = [p.grad.clone() for p in mlp.parameters()]
    for p in mlp.parameters():
        p.grad = None
    out = _compiled(mlp)(x)
    out.square().mean().backward()
    torch.testing.assert_close(out, ref_out, atol=1e-4, rtol=1e-4)
    for g, r in zip([p.grad for p in mlp.parameters()], ref_grads):
        torch.testing.assert_close(g, r, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("descending,stable", [(False, False), (True, True)])
@pytest.mark.parametrize("shape,dim", [((6, 5, 7), -1), ((5, 5, 5), 0), ((4, 100), 1)])
def test_sort_and_argsort(inductor_cpu_triton, shape, dim, descending, stable):
    # Inductor's sort kernel (triton_helpers.sort_with_index) calls tl.standard._log2, a constexpr_function
    x = torch.randn(shape)
    _check(lambda a: torch.sort(a, dim=dim, descending=descending, stable=stable), x, atol=0, rtol=0)
    ties = torch.randint(0, 4, shape).float()  # stable: equal keys keep their order, so the indices match
    if stable:
        _check(lambda a: torch.sort(a, dim=dim, descending=descending, stable=True), ties, atol=0, rtol=0)
