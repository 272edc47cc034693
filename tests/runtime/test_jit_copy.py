"""A ``@jit`` function copied and pickled: ``copy.deepcopy`` and ``pickle`` keep its source, parameters and hooks
and drop its compiled kernels, and the copy launches correctly (Inductor's use of both, with its own code:
tests/inductor/test_kernel_copy.py)."""
import copy
import pickle

import numpy as np
import pytest

import tritium
import tritium.language as tl


@tritium.jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


@tritium.autotune(configs=[tritium.Config({"BLOCK": 64}), tritium.Config({"BLOCK": 128})], key=["n"])
@tritium.jit
def tuned_axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


@tritium.heuristics({"BLOCK": lambda args: 128})
@tritium.jit
def heuristic_axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


def _check(fn, n=300, dtype=np.float32):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    fn[(-(-n // 128),)](x, y, out, 1.5, n, BLOCK=128)
    np.testing.assert_allclose(out, 1.5 * x + y, rtol=1e-6)


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "copy"])
def test_copy_launches(how):
    _check(axpy)  # compiled once before the copy
    hooks = []
    axpy.add_pre_run_hook(lambda *a, **k: hooks.append(1))
    try:
        new = {"deepcopy": copy.deepcopy, "copy": copy.copy,
               "pickle": lambda f: pickle.loads(pickle.dumps(f))}[how](axpy)
        assert isinstance(new, tritium.JITFunction) and new.src == axpy.src and new.arg_names == axpy.arg_names
        _check(new, n=517)
        assert hooks  # the hook came along
        if how == "deepcopy":
            assert new is not axpy and new.cache is not axpy.cache and new.pre_run_hooks is not axpy.pre_run_hooks
            assert new.fn is axpy.fn and new.__globals__ is axpy.__globals__
        else:  # a module-level kernel pickles by name, as functions do (copy.copy: the same object)
            assert new is axpy
    finally:
        axpy.pre_run_hooks.clear()


@pytest.mark.parametrize("kernel", [tuned_axpy, heuristic_axpy], ids=["autotune", "heuristics"])
def test_wrapped_kernels_pickle_by_name_and_deepcopy(kernel):
    """An ``@autotune`` / ``@heuristics`` kernel pickles by its module-level name (and so does the JITFunction under
    it: the name leads to it through ``.fn``); a deep copy has its own state and launches."""
    assert pickle.loads(pickle.dumps(kernel)) is kernel
    assert pickle.loads(pickle.dumps(kernel.fn)) is kernel.fn
    new = copy.deepcopy(kernel)
    assert type(new) is type(kernel) and new is not kernel and new.fn is not kernel.fn
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    for k in (kernel, new):
        out = np.full(1000, np.nan, np.float32)
        k[lambda meta: (-(-1000 // meta["BLOCK"]),)](x, y, out, 2.0, 1000)
        np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
