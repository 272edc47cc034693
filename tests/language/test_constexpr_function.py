"""``triton.constexpr_function`` (Triton 3.6): a Python function a kernel calls at compile time on tl.constexpr
arguments, its result a tl.constexpr; ``tl.standard._log2`` is one (Inductor's sort helpers call it)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError
from tritium.language.standard import _log2


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


@triton.constexpr_function
def padded(n, multiple=16):
    return (n + multiple - 1) // multiple * multiple


@triton.jit
def _fill_log2(out_ptr, N: tl.constexpr):
    LOG: tl.constexpr = _log2(N)
    P: tl.constexpr = padded(N, multiple=8)
    o = tl.arange(0, N)
    tl.store(out_ptr + o, tl.full([N], LOG, tl.int32) * 1000 + P)


@pytest.mark.parametrize("n", [1, 2, 16, 64])
def test_called_in_a_kernel_at_compile_time(n):
    out = np.zeros(n, np.int32)
    _fill_log2[(1,)](out, N=n)
    expect = int(np.log2(n)) * 1000 + (n + 7) // 8 * 8
    np.testing.assert_array_equal(out, np.full(n, expect, np.int32))


def test_host_calls_are_plain_python():
    assert padded(17) == 32 and padded(tl.constexpr(5), multiple=tl.constexpr(4)) == 8
    assert [_log2(i) for i in (1, 2, 3, 4, 1000, 1024)] == [0, 1, 1, 2, 9, 10]
    import importlib

    assert importlib.import_module("tritium.runtime.jit").constexpr_function is triton.constexpr_function


@triton.jit
def _bad(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 8), x + padded(x))


def test_a_tensor_argument_is_an_error_at_its_line():
    with pytest.raises(CompilationError) as e:
        _bad[(1,)](np.zeros(8, np.float32))
    assert "padded" in str(e.value) and "tensor" in str(e.value)
    assert "padded(x)" in str(e.value)
