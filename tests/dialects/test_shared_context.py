"""make_context(): one MLIR context per thread, shared by that thread's compiles and replaced after CONTEXT_REUSE uses;
kernels compiled one after another in it (and in two threads at once) still compute the right thing."""
import threading

import numpy as np

import tritium as triton
import tritium.language as tl
from tritium import dialects
from tritium.compiler.compiler import ASTSource, compile


@triton.jit
def _affine(x_ptr, y_ptr, n, a, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * a + 1.0, mask=m)


def test_one_context_per_thread_recycled(monkeypatch):
    monkeypatch.setattr(dialects, "CONTEXT_REUSE", 3)
    monkeypatch.setattr(dialects, "_local", threading.local())
    a, b, c = dialects.make_context(), dialects.make_context(), dialects.make_context()
    assert a is b is c
    d = dialects.make_context()  # the fourth use: a fresh one
    assert d is not a
    other = []
    t = threading.Thread(target=lambda: other.append(dialects.make_context()))
    t.start()
    t.join()
    assert other[0] is not d
    assert dialects.fresh_context() is not d


def test_kernels_compiled_in_a_shared_context_are_right(monkeypatch):
    monkeypatch.setattr(dialects, "CONTEXT_REUSE", 4)  # crosses a recycling on the way
    monkeypatch.setattr(dialects, "_local", threading.local())
    rng = np.random.default_rng(3)
    for block in (16, 32, 64, 128, 256, 512):
        x = rng.standard_normal(1000).astype(np.float32)
        y = np.empty_like(x)
        _affine[(triton.cdiv(1000, block),)](x, y, 1000, 1.5, BLOCK=block)
        np.testing.assert_allclose(y, x * np.float32(1.5) + 1, rtol=1e-6)


def test_two_threads_compile_at_once():
    errors, texts = [], {}

    def work(block):
        try:
            src = ASTSource(_affine, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "a": "fp32"}, {"BLOCK": block})
            texts[block] = compile(src, target="cuda:90").asm["ttgir"]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(b,)) for b in (64, 128, 256, 512)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for b, text in texts.items():
        assert f"tensor<{b}xf32" in text
