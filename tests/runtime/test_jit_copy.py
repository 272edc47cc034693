"""A ``@jit`` function copied and pickled: ``copy.deepcopy`` and ``pickle`` keep its source, parameters and hooks
and drop its compiled kernels, and the copy launches correctly.  Inductor depends on both: it deep-copies its
kernels' JITFunctions for its static launcher and pickles them into its FX graph cache, after clearing their
``fn`` and globals (``CachingAutotuner.prepare_for_pickle``, run here with torch's own code)."""
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


def test_inductor_prepare_for_pickle_deepcopy_and_restore():
    """Inductor's sequence on its own code: clear what does not pickle, deep-copy and pickle the autotuner's
    kernel, restore the original -- which still launches, as do copies given their function back."""
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    @tritium.jit
    def local_axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)

    _check(local_axpy)
    tuner = SimpleNamespace(fn=local_axpy, launchers=[object()], _cached_launcher=None,
                            benchmark_failure_reasons={})
    old = CachingAutotuner.prepare_for_pickle(tuner)
    deep = copy.deepcopy(tuner)
    pickled = pickle.loads(pickle.dumps(tuner))
    CachingAutotuner.restore_after_unpickle(tuner, old)
    for t in (deep, pickled):
        CachingAutotuner.restore_after_unpickle(t, None)
        assert t.fn is not local_axpy and t.fn.fn is None and t.fn.src == local_axpy.src
        assert t.fn.arg_names == local_axpy.arg_names and not t.fn.cache
        t.fn.fn, t.fn.__globals__ = local_axpy.fn, local_axpy.fn.__globals__
        _check(t.fn, n=1000)
    assert tuner.fn is local_axpy and local_axpy.fn is not None
    _check(local_axpy, n=77)
