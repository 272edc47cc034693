"""Inductor deep-copies its kernels' JITFunctions for its static launcher and pickles them into its FX graph cache,
after clearing their ``fn`` and globals (``CachingAutotuner.prepare_for_pickle``): run here with torch's own code on a
tritium kernel (under the alias the package's fixture installs: torch must not import its Triton helpers before)."""
import copy
import pickle


import tritium
import tritium.language as tl
from tests.runtime.test_jit_copy import _check


def test_inductor_prepare_for_pickle_deepcopy_and_restore(inductor_cpu_triton):
    """Inductor's sequence on its own code: clear what does not pickle, deep-copy and pickle the autotuner's
    kernel, restore the original -- which still launches, as do copies given their function back."""
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
