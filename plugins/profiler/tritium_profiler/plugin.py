"""The profiler plugin: state, the launch hooks (entry point ``profiler`` in group ``tritium``), reports.

The launch hooks are registered only while profiling: :func:`start` registers a separate hook object
(``profiler-launch-hooks``) with the plugin manager and :func:`stop` unregisters it, so a process that does not
profile pays nothing per launch (the launch path skips the plugin manager when no plugin implements the launch
hooks).  Under ``TRITIUM_PROFILE=1`` the module itself carries the hooks (it is imported by the plugin manager,
through its entry point, before any launch) and they stay registered; :func:`stop` then just stops recording."""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

from tritium.plugins import hookimpl

_TRUE = ("1", "true", "True", "yes", "on")


@dataclass
class KernelStats:
    """Host time of one kernel's launches, in nanoseconds."""

    name: str
    calls: int = 0
    total_ns: int = 0
    min_ns: int = 0
    max_ns: int = 0

    def add(self, dur_ns: int) -> None:
        if self.calls == 0 or dur_ns < self.min_ns:
            self.min_ns = dur_ns
        if dur_ns > self.max_ns:
            self.max_ns = dur_ns
        self.calls += 1
        self.total_ns += dur_ns

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


class _State:
    def __init__(self):
        self.enabled = False
        self.sync = False
        self.trace_path: Optional[str] = None
        self.max_events = 1_000_000
        self.lock = threading.Lock()
        self.stats: dict = {}
        self.events: list = []
        self.dropped = 0
        self.t0 = time.perf_counter_ns()
        self.pending = False  # data recorded since the last report
        self.atexit_registered = False
        self.local = threading.local()


_S = _State()


# ------------------------------------------------------------------------------------------ control
def start(trace: Optional[str] = None, sync: Optional[bool] = None, max_events: Optional[int] = None,
          _register: bool = True) -> None:
    """Start recording launches (keeps what was recorded before; :func:`reset` clears it).

    ``trace``: path of the Chrome trace :func:`report` writes (default ``TRITIUM_PROFILE_TRACE``); ``sync``:
    synchronize the device around each launch (default ``TRITIUM_PROFILE_SYNC``).  A report is printed at exit
    if anything was recorded since the last :func:`report`.
    """
    with _S.lock:
        _S.trace_path = trace if trace is not None else (os.environ.get("TRITIUM_PROFILE_TRACE") or None)
        _S.sync = bool(sync) if sync is not None else os.environ.get("TRITIUM_PROFILE_SYNC", "0") in _TRUE
        if max_events is None:
            try:
                max_events = int(os.environ.get("TRITIUM_PROFILE_MAX_EVENTS", "1000000"))
            except ValueError:
                max_events = 1_000_000
        _S.max_events = max(0, int(max_events))
        if _register:
            _ensure_registered()
            _register_launch_hooks()
        if not _S.atexit_registered:
            atexit.register(_at_exit)
            _S.atexit_registered = True
        _S.enabled = True


def _ensure_registered() -> None:
    """Make sure the hooks are registered even when this package was imported without its entry point."""
    from tritium.plugins import get_plugin_manager

    pm = get_plugin_manager()
    mod = sys.modules[__name__]
    if not pm.is_registered(mod) and not pm.has_plugin("profiler"):
        pm.register(mod, name="profiler")


def _register_launch_hooks() -> None:
    """Register the launch hooks (the ``_LaunchHooks`` object) unless this module carries them already."""
    from tritium.plugins import get_plugin_manager

    pm = get_plugin_manager()
    if _MODULE_HOOKS and pm.is_registered(sys.modules[__name__]):
        return
    if not pm.is_registered(_HOOKS):
        pm.register(_HOOKS, name=_HOOKS_NAME)


def _unregister_launch_hooks() -> None:
    from tritium import plugins

    pm = plugins._pm  # no plugin manager yet: nothing to unregister
    if pm is not None and pm.is_registered(_HOOKS):
        pm.unregister(_HOOKS)


def stop() -> None:
    """Stop recording (what was recorded stays, for :func:`report`); the launch hooks are unregistered."""
    _S.enabled = False
    _unregister_launch_hooks()


def enabled() -> bool:
    return _S.enabled


def reset() -> None:
    """Forget every recorded launch."""
    with _S.lock:
        _S.stats = {}
        _S.events = []
        _S.dropped = 0
        _S.pending = False
        _S.t0 = time.perf_counter_ns()


def stats() -> dict:
    """``{kernel name: KernelStats}`` (copies)."""
    with _S.lock:
        return {k: KernelStats(v.name, v.calls, v.total_ns, v.min_ns, v.max_ns) for k, v in _S.stats.items()}


def events() -> list:
    """The recorded launches: ``(name, start_ns, dur_ns, tid, grid, backend)`` tuples, start relative to reset."""
    with _S.lock:
        return list(_S.events)


# ------------------------------------------------------------------------------------------- hooks
def _synchronize(kernel: Any) -> None:
    """Wait for the device of the kernel's backend (its driver's ``synchronize()``); a device error surfaces
    here, as it would at the program's next synchronisation."""
    from tritium.compiler import registry

    backend = kernel.metadata.get("backend") or registry.select().name
    registry.get_driver(backend).synchronize()


def _launch_enter(kernel: Any, grid: tuple, args: list) -> None:
    if not _S.enabled:
        return
    if _S.sync:
        _synchronize(kernel)
    stack = getattr(_S.local, "stack", None)
    if stack is None:
        stack = _S.local.stack = []
    stack.append((tuple(grid), time.perf_counter_ns()))


def _launch_exit(kernel: Any) -> None:
    stack = getattr(_S.local, "stack", None)
    if not stack:  # disabled, or started between this launch's enter and exit
        return
    if _S.sync:
        _synchronize(kernel)
    t1 = time.perf_counter_ns()
    grid, t0 = stack.pop()
    name = str(getattr(kernel, "name", None) or type(kernel).__name__)
    md = getattr(kernel, "metadata", None)
    backend = md.get("backend") if isinstance(md, dict) else None
    with _S.lock:
        st = _S.stats.get(name)
        if st is None:
            st = _S.stats[name] = KernelStats(name)
        st.add(t1 - t0)
        if len(_S.events) < _S.max_events:
            _S.events.append((name, t0 - _S.t0, t1 - t0, threading.get_native_id(), grid, backend))
        else:
            _S.dropped += 1
        _S.pending = True


class _LaunchHooks:
    """The launch hooks, registered with the plugin manager only while profiling (:func:`start` / :func:`stop`)."""

    @hookimpl
    def tritium_launch_enter(self, kernel: Any, grid: tuple, args: list) -> None:
        _launch_enter(kernel, grid, args)

    @hookimpl
    def tritium_launch_exit(self, kernel: Any) -> None:
        _launch_exit(kernel)


_HOOKS = _LaunchHooks()
_HOOKS_NAME = "profiler-launch-hooks"

#: TRITIUM_PROFILE=1: the module (registered through its entry point) carries the launch hooks itself
_MODULE_HOOKS = os.environ.get("TRITIUM_PROFILE", "0") in _TRUE
if _MODULE_HOOKS:
    @hookimpl
    def tritium_launch_enter(kernel: Any, grid: tuple, args: list) -> None:
        _launch_enter(kernel, grid, args)

    @hookimpl
    def tritium_launch_exit(kernel: Any) -> None:
        _launch_exit(kernel)


# ----------------------------------------------------------------------------------------- reports
def summary_table(st: Optional[dict] = None) -> str:
    """The per-kernel table: kernel, calls, total ms, mean / min / max µs (sorted by total time)."""
    st = stats() if st is None else st
    rows = sorted(st.values(), key=lambda s: (-s.total_ns, s.name))
    head = ("kernel", "calls", "total ms", "mean us", "min us", "max us")
    body = [(s.name, str(s.calls), f"{s.total_ns / 1e6:.3f}", f"{s.mean_ns / 1e3:.1f}", f"{s.min_ns / 1e3:.1f}",
             f"{s.max_ns / 1e3:.1f}") for s in rows]
    w = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]

    def line(r):
        return "  ".join((c.ljust(w[i]) if i == 0 else c.rjust(w[i])) for i, c in enumerate(r)).rstrip()

    out = ["tritium profiler (host time between launch enter and exit"
           + (", device synchronized)" if _S.sync else ")"), line(head), line(tuple("-" * x for x in w))]
    out += [line(r) for r in body]
    if not body:
        out.append("(no kernel launches recorded)")
    return "\n".join(out)


def trace_dict() -> dict:
    """The recorded launches as a Chrome trace: ``{"traceEvents": [...]}`` with one ``ph: "X"`` complete event
    per launch (``ts`` / ``dur`` in microseconds, ``args``: kernel, grid, backend)."""
    pid = os.getpid()
    evs: list = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "tritium"}}]
    with _S.lock:
        recorded = list(_S.events)
        dropped = _S.dropped
    for name, start_ns, dur_ns, tid, grid, backend in recorded:
        evs.append({"name": name, "cat": "kernel", "ph": "X", "ts": start_ns / 1e3, "dur": dur_ns / 1e3,
                    "pid": pid, "tid": tid,
                    "args": {"kernel": name, "grid": list(grid), "backend": backend}})
    out = {"traceEvents": evs, "displayTimeUnit": "ms"}
    if dropped:
        out["otherData"] = {"dropped_events": dropped}
    return out


def write_trace(path: str) -> str:
    """Write :func:`trace_dict` as JSON to ``path``; returns the path."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(trace_dict(), f)
    os.replace(tmp, path)
    return path


def report(file: Any = None, trace: Optional[str] = None) -> dict:
    """Print :func:`summary_table` to ``file`` (stderr) and write the Chrome trace to ``trace`` (default: the
    path given to :func:`start` / ``TRITIUM_PROFILE_TRACE``), if any.  Returns :func:`stats`."""
    st = stats()
    print(summary_table(st), file=file if file is not None else sys.stderr)
    path = trace or _S.trace_path
    if path:
        try:
            write_trace(path)
            print(f"tritium profiler: Chrome trace written to {path}", file=file if file is not None else sys.stderr)
        except OSError as e:
            print(f"tritium profiler: cannot write the trace to {path}: {e}", file=sys.stderr)
    _S.pending = False
    return st


def _at_exit() -> None:
    if _S.pending:
        try:
            report()
        except Exception as e:  # noqa: BLE001 - interpreter shutdown goes on; the failure is said
            print(f"tritium profiler: the report failed: {type(e).__name__}: {e}", file=sys.stderr)


if _MODULE_HOOKS:
    start(_register=False)  # imported by the plugin manager itself (entry point): registered already
