"""Timing a callable on the active backend: Triton's ``do_bench`` and ``do_bench_cudagraph`` (re-exported by
:mod:`tritium.testing`, where users find them). Here, in the runtime, because the autotuner and the drivers
benchmark with them and the runtime sits below the testing helpers.

:func:`do_bench` times in milliseconds: with device events on GPU backends (the backend driver's own
benchmarker when it has one, else ``torch.cuda.Event`` when the active target is cuda/hip), with
``time.perf_counter`` on the interpreter.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, List, Optional, Sequence

_RETURN_MODES = ("min", "max", "mean", "median", "all")


# ------------------------------------------------------------------------------------------- do_bench
def _summarize(times: List[float], quantiles: Optional[Sequence[float]], return_mode: str):
    if quantiles is not None:
        import numpy as np

        qs = [float(q) for q in np.quantile(np.asarray(times, dtype=np.float64), list(quantiles))]
        return qs[0] if len(qs) == 1 else qs
    if return_mode == "all":
        return list(times)
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


def _clear_grads(grad_to_none: Any) -> None:
    if grad_to_none is not None:
        for g in grad_to_none:
            g.grad = None


class _HostTimer:
    """``time.perf_counter`` timing (the interpreter runs kernels synchronously on the host)."""

    def synchronize(self) -> None:
        pass

    def clear_cache(self) -> None:
        pass  # flushing a host "L2" would only add noise: the interpreter's cost is Python, not memory

    def iteration_ms(self, fn: Callable, budget: float) -> float:
        """What one timed run costs (up to 5 runs, fewer when one alone eats ``budget``: slow interpreter
        kernels)."""
        times: List[float] = []
        while len(times) < 5 and sum(times) < budget:
            times += self.time(fn, 1)
        return statistics.fmean(times)

    def time(self, fn: Callable, n: int, before: Optional[Callable] = None) -> List[float]:
        out = []
        for _ in range(n):
            if before is not None:
                before()
            s = time.perf_counter()
            fn()
            out.append((time.perf_counter() - s) * 1e3)
        return out


class _TorchEventTimer:
    """Device-event timing through ``torch.cuda`` (cuda and hip builds of torch), flushing L2 between runs."""

    def __init__(self, torch):
        self.torch = torch
        self._cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def clear_cache(self) -> None:
        self._cache.zero_()

    def iteration_ms(self, fn: Callable, budget: float) -> float:
        """What one run of :meth:`time`'s loop costs on the device, the L2 flush included: the flush (256 MB
        written, ~0.1 ms) dwarfs a small kernel, and counting runs from the kernel alone made the timed loop
        take hundreds of times ``rep`` (20,000 flushes for a 5 us kernel at rep = 100 ms)."""
        start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.clear_cache()
            fn()
        end.record()
        self.synchronize()
        return start.elapsed_time(end) / 5

    def time(self, fn: Callable, n: int, before: Optional[Callable] = None) -> List[float]:
        ev = self.torch.cuda.Event
        starts = [ev(enable_timing=True) for _ in range(n)]
        ends = [ev(enable_timing=True) for _ in range(n)]
        for i in range(n):
            if before is not None:
                before()
            self.clear_cache()
            starts[i].record()
            fn()
            ends[i].record()
        self.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _active_backend() -> Optional[str]:
    from ..compiler import registry
    from ..errors import BackendUnavailable

    try:
        return registry.select().name
    except BackendUnavailable:  # no backend: time on the host
        return None


def _backend_benchmarker(name: Optional[str]) -> Optional[Callable]:
    """A benchmarker the active backend's driver offers itself (``driver.get_benchmarker()``), if any."""
    if name is None:
        return None
    from ..compiler import registry

    bench = registry.get_driver(name).get_benchmarker()
    return None if bench is do_bench else bench


def _timer_for(name: Optional[str]):
    if name in ("cuda", "hip"):
        try:
            import torch

            if torch.cuda.is_available():
                return _TorchEventTimer(torch)
        except ImportError:
            pass
    return _HostTimer()


def do_bench(fn: Callable, warmup: float = 25, rep: float = 100, grad_to_none: Any = None,
             quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean",
             use_cuda_graph: bool = False):
    """Run ``fn()`` repeatedly and return its time in milliseconds (``triton.testing.do_bench``).

    ``warmup`` and ``rep`` are time budgets in ms: the number of warm-up and timed runs comes from a first
    estimate of ``fn``'s time (after one untimed call, which absorbs compilation).  ``grad_to_none``: tensors
    whose ``.grad`` is reset before every run.  ``quantiles`` (e.g. ``[0.5, 0.2, 0.8]``) returns those
    quantiles of the timed runs (a list, or one float for one quantile); otherwise ``return_mode`` picks
    ``min`` / ``max`` / ``mean`` / ``median`` of them, or ``all`` (the list of times).  ``use_cuda_graph``:
    time replays of a CUDA graph of ``fn`` instead (:func:`do_bench_cudagraph`, with ``rep``).
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    if use_cuda_graph:
        return do_bench_cudagraph(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                                  return_mode=return_mode)
    backend = _active_backend()
    bench = _backend_benchmarker(backend)
    if bench is not None:
        return bench(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                     return_mode=return_mode)
    timer = _timer_for(backend)
    fn()
    timer.synchronize()
    # the runs' counts from what one timed run costs (Triton's do_bench does the same), so that warmup and rep
    # bound the benchmark's time
    estimate_ms = max(timer.iteration_ms(fn, max(float(rep), 1e-3)), 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(min(n_warmup, 100_000)):
        fn()
    timer.synchronize()
    times = timer.time(fn, min(n_repeat, 100_000), before=lambda: _clear_grads(grad_to_none))
    return _summarize(times, quantiles, return_mode)


def _cuda_torch() -> Any:
    """torch, when kernels run on a CUDA (or HIP) device through it; else None."""
    if _active_backend() not in ("cuda", "hip"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def do_bench_cudagraph(fn: Callable, rep: float = 20, grad_to_none: Any = None,
                       quantiles: Optional[Sequence[float]] = None, return_mode: str = "mean"):
    """``fn()``'s time in milliseconds from replays of a CUDA graph holding it (``triton.testing.
    do_bench_cudagraph``): the launches' host cost is left out.

    On a side stream: one call (compiles, loads), an estimate from a few timed calls, then ``fn`` captured
    ``max(1, rep / estimate)`` times into one ``torch.cuda.CUDAGraph`` (``grad_to_none``'s ``.grad`` reset before
    each), whose replays are timed with CUDA events; each replay gives one sample, its time divided by the calls
    it holds.  ``quantiles`` / ``return_mode`` as :func:`do_bench`.  Where kernels do not run on a CUDA device
    (the interpreter) there is no graph to capture: :func:`do_bench`'s host timing is returned."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    torch = _cuda_torch()
    if torch is None:
        return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode)
    ev = torch.cuda.Event
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        _clear_grads(grad_to_none)
        start, end = ev(enable_timing=True), ev(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = start.elapsed_time(end) / 5
        calls = max(1, min(100_000, int(rep / estimate) if estimate > 0 else 1000))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                _clear_grads(grad_to_none)
                fn()
        torch.cuda.synchronize()
        graph.replay()  # the first replay uploads the graph
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start, end = ev(enable_timing=True), ev(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / calls)
        del graph
    return _summarize(times, quantiles, return_mode)
