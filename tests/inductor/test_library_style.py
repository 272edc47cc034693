"""A kernel library written against ``import triton`` (tests/inductor/libstyle/liger_style.py: GEGLU forward and
backward through ``autograd``, RMS norm, an online-softmax cross entropy writing its gradient in place; the version
probe and ``triton.language.extra.libdevice`` as Liger-Kernel has them) runs unchanged on tritium's interpreter with
CPU tensors when ``TRITIUM_AS_TRITON=1`` is set for the process: no import of tritium in the library or the test
code.  Checked against PyTorch on random inputs, across dtypes and shapes, in a fresh process."""
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(code):
    env = dict(os.environ, TRITIUM_AS_TRITON="1", TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([os.path.join(HERE, "libstyle")] +
                                          ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_library_kernels_run_unchanged_through_the_variable():
    out = _run("""
        import torch
        import triton
        assert hasattr(triton, "__tritium__") and triton.__version__ == "3.6.0"
        import liger_style as L
        torch.manual_seed(0)
        for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-2)):
            for shape in ((4, 7, 33), (3, 256)):
                a = torch.randn(*shape, dtype=dtype, requires_grad=True)
                b = torch.randn(*shape, dtype=dtype, requires_grad=True)
                c = L.GEGLU.apply(a, b)
                a2, b2 = a.detach().float().requires_grad_(), b.detach().float().requires_grad_()
                ref = torch.nn.functional.gelu(a2, approximate="tanh") * b2
                torch.testing.assert_close(c.float(), ref, atol=tol, rtol=tol)
                g = torch.randn(*shape)
                c.backward(g.to(dtype))
                ref.backward(g)
                torch.testing.assert_close(a.grad.float(), a2.grad, atol=tol * 4, rtol=tol * 4)
                torch.testing.assert_close(b.grad.float(), b2.grad, atol=tol * 4, rtol=tol * 4)
                x, w = torch.randn(*shape, dtype=dtype), torch.randn(shape[-1], dtype=dtype)
                y, rstd = L.rms_norm(x, w)
                xf = x.float()
                ref_r = torch.rsqrt(xf.pow(2).mean(-1) + 1e-6)
                torch.testing.assert_close(rstd, ref_r.reshape(-1), atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(y.float(), (xf * ref_r[..., None]).to(dtype).float() * w.float(),
                                           atol=tol, rtol=tol)
        for n_cols in (1000, 4099):
            logits = torch.randn(16, n_cols) * 3
            target = torch.randint(0, n_cols, (16,))
            target[3] = -100
            loss, grad = L.cross_entropy(logits, target)
            x = logits.clone().requires_grad_()
            ref = torch.nn.functional.cross_entropy(x, target, ignore_index=-100)
            ref.backward()
            torch.testing.assert_close(loss, ref, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(grad, x.grad, atol=1e-6, rtol=1e-4)
        print("ok")
    """)
    assert out.strip().endswith("ok")
