"""tl's standard library on the interpreter: flip, sort, topk, bitonic_merge, swizzle2d, reduce_or, to_tensor,
add/sub/mul, condition; results against NumPy on random inputs; wrong uses are CompilationErrors at the line."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.dialects import make_context
from tritium.frontend import make_ttir

pytest.importorskip("mlir.ir")


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def ttir(fn, signature, constexprs=None):
    return str(make_ttir(fn, signature, constexprs or {}, {}, make_context()))


# ---------------------------------------------------------------------------------------------
# combine functions are per element type (a regression: sum of f32 and of i32 shared one @sum_f32)
# ---------------------------------------------------------------------------------------------

@triton.jit
def _two_sums(X, Y, U, O):
    r = tl.arange(0, 8)
    x = tl.load(X + r)
    y = tl.load(Y + r)
    u = tl.load(U + r)
    tl.store(O, tl.sum(x, 0) + tl.sum(y, 0).to(tl.float32) + tl.max(y, 0).to(tl.float32)
             + tl.max(u, 0).to(tl.float32))


def test_combine_function_per_element_type():
    text = ttir(_two_sums, {"X": "*fp32", "Y": "*i32", "U": "*u32", "O": "*fp32"})
    assert "@sum_f32" in text and "@sum_i32" in text
    assert "arith.maxsi" in text and "arith.maxui" in text
    x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    y = np.arange(8, dtype=np.int32) * 3 - 5
    u = np.array([1, 2, 3, 0x80000000, 5, 6, 7, 8], dtype=np.uint32)
    o = np.zeros(1, np.float32)
    _two_sums[(1,)](x, y, u, o)
    np.testing.assert_allclose(o[0], x.sum() + y.sum() + y.max() + np.float32(u.max()), rtol=1e-6)
