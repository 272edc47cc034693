"""Testing helpers with Triton's names: ``assert_close`` and ``do_bench``."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Optional, Sequence


def _to_numpy(x: Any):
    import numpy as np

    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch
        x = x.detach().cpu()
        if str(getattr(x, "dtype", "")) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: Optional[float] = None, rtol: Optional[float] = None,
                 err_msg: str = "") -> None:
    """Assert ``x`` and ``y`` (arrays, tensors or scalars) are elementwise close (like Triton's)."""
    import numpy as np

    a, b = _to_numpy(x), _to_numpy(y)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=rtol, equal_nan=True,
                               err_msg=err_msg)


def do_bench(fn: Callable, warmup: int = 25, rep: int = 100, grad_to_none: Any = None,
             quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean"):
    """Time ``fn()`` in milliseconds with ``time.perf_counter`` (warmup / rep are in ms, as in Triton).

    Host timing: right for the interpreter; GPU backends will time with device events.
    """
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, got {return_mode!r}")
    t0 = time.perf_counter()
    fn()
    est = max((time.perf_counter() - t0) * 1e3, 1e-6)
    n_warmup = max(1, int(warmup / est))
    n_rep = max(1, int(rep / est))
    for _ in range(min(n_warmup, 1000)):
        fn()
    times = []
    for _ in range(min(n_rep, 10000)):
        if grad_to_none is not None:
            for g in grad_to_none:
                g.grad = None
        s = time.perf_counter()
        fn()
        times.append((time.perf_counter() - s) * 1e3)
    if quantiles is not None:
        import numpy as np

        qs = [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
        return qs[0] if len(qs) == 1 else qs
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


__all__ = ["assert_close", "do_bench"]
