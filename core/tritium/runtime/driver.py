"""Backend discovery and selection; ``tritium.runtime.driver.active`` (like ``triton.runtime.driver.active``).

Backends come from plugins (``tritium_backends`` hook, entry-point group ``tritium``).  Which one runs kernels:

* ``TRITIUM_TARGET=<name>[:<arch>]`` (``cuda``, ``hip``, ``interpreter`` or a plugin backend's name).  With an
  arch (``cuda:90``) the arch is the compile target whatever the device is, and compiling works without the
  backend's runtime dependencies or a device (launching still needs them);
* ``TRITON_INTERPRET=1``: an alias for ``TRITIUM_TARGET=interpreter`` (``TRITIUM_TARGET`` wins if both are set);
* otherwise the highest-priority backend whose dependencies are installed and whose driver ``is_active()``.

The selection is re-evaluated when those environment variables change or plugins are (un)registered.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Optional

from ..compiler.backend import Backend, BaseCompiler, BaseDriver, GPUTarget
from ..errors import BackendUnavailable

_lock = threading.RLock()
_backends: Optional[dict] = None
_compilers: dict = {}
_drivers: dict = {}
_selection_cache: dict = {}
_forced: Optional[str] = None  # set_active()


def reset() -> None:
    """Forget discovered backends, their compiler/driver instances and the selection (tests, plugin changes)."""
    global _backends
    with _lock:
        _backends = None
        _compilers.clear()
        _drivers.clear()
        _launch_drivers.clear()
        _selection_cache.clear()
        _launch_contexts.clear()


# ------------------------------------------------------------------------------------------- discovery
def backends() -> dict:
    """``{name: Backend}`` of every registered backend, highest priority first."""
    global _backends
    if _backends is not None:
        return _backends
    with _lock:
        if _backends is None:
            from ..plugins import get_plugin_manager

            found: dict = {}
            for result in get_plugin_manager().hook.tritium_backends():
                for b in result or ():
                    if not isinstance(b, Backend):
                        raise TypeError(f"a tritium_backends hook returned {b!r}, not a tritium Backend")
                    if b.name not in found or b.priority > found[b.name].priority:
                        found[b.name] = b
            _backends = dict(sorted(found.items(), key=lambda kv: (-kv[1].priority, kv[0])))
    return _backends


def parse_target_spec(spec: str) -> tuple:
    """``"cuda:90"`` -> ``("cuda", "90")``; ``"interpreter"`` -> ``("interpreter", None)``."""
    spec = spec.strip()
    if not spec:
        raise ValueError("empty target")
    name, sep, arch = spec.partition(":")
    return name.strip().lower(), (arch.strip() or None) if sep else None


def get_backend(name: str, require_deps: bool = True) -> Backend:
    """The backend called ``name``; ``BackendUnavailable`` if there is none or (``require_deps``) its extras are
    missing: the message has the pip command."""
    bs = backends()
    if name not in bs:
        from ..plugins import unavailable_plugins

        broken = unavailable_plugins()
        extra = ""
        if name in broken:
            extra = f": its plugin failed to load ({broken[name]})"
        known = ", ".join(bs) or "none"
        raise BackendUnavailable(f"unknown tritium backend '{name}'{extra} (installed backends: {known})")
    b = bs[name]
    if require_deps and b.missing:
        raise BackendUnavailable(f"the '{name}' backend's dependencies are not installed; install them with: "
                                 f"{b.missing}")
    return b


def get_compiler(name: str) -> BaseCompiler:
    """The (cached) compiler of backend ``name``.  Works without the backend's runtime dependencies."""
    with _lock:
        if name not in _compilers:
            _compilers[name] = get_backend(name, require_deps=False).make_compiler()
        return _compilers[name]


def get_driver(name: str) -> BaseDriver:
    """The (cached) driver of backend ``name``."""
    with _lock:
        if name not in _drivers:
            _drivers[name] = get_backend(name, require_deps=False).make_driver()
        return _drivers[name]


def backend_status(name: str) -> tuple:
    """``(usable, reason)``: reason is the pip command for missing extras or the driver's inactive reason."""
    b = get_backend(name, require_deps=False)
    if b.missing:
        return False, f"dependencies not installed: {b.missing}"
    try:
        d = get_driver(name)
        if d.is_active():
            return True, ""
        return False, d.inactive_reason() or "driver is not active"
    except Exception as e:  # noqa: BLE001 - a broken driver is reported, not fatal
        return False, f"driver failed: {type(e).__name__}: {e}"


# ------------------------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class Selection:
    backend: Backend
    arch: Optional[str]  # from TRITIUM_TARGET=name:arch
    why: str  # "TRITIUM_TARGET", "TRITON_INTERPRET", "set_active" or "auto"

    @property
    def name(self) -> str:
        return self.backend.name


def requested_target() -> Optional[tuple]:
    """``(name, arch, source)`` asked for by set_active() / the environment, or None for automatic selection."""
    if _forced is not None:
        return (*parse_target_spec(_forced), "set_active")
    spec = os.environ.get("TRITIUM_TARGET", "").strip()
    if spec:
        return (*parse_target_spec(spec), "TRITIUM_TARGET")
    if os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on"):
        return ("interpreter", None, "TRITON_INTERPRET")
    return None


# ``os.environ`` lookups encode the key and decode the value (~0.2 µs each); the launch path reads the two
# selection variables from the environment's raw mapping instead (same content, kept in sync by os.environ)
_env_data = getattr(os.environ, "_data", None)
try:
    _env_keys = (os.environ.encodekey("TRITIUM_TARGET"), os.environ.encodekey("TRITON_INTERPRET"))
except Exception:  # noqa: BLE001 - not CPython's os.environ
    _env_data = None


def _selection_key() -> tuple:
    """What the selection depends on besides the registered backends: ``set_active()`` and the environment."""
    d = _env_data
    if d is not None:
        return (_forced, d.get(_env_keys[0]), d.get(_env_keys[1]))
    return (_forced, os.environ.get("TRITIUM_TARGET"), os.environ.get("TRITON_INTERPRET"))


def select() -> Selection:
    """The backend that runs kernels now (see the module docstring); ``BackendUnavailable`` says why none."""
    key = _selection_key()
    sel = _selection_cache.get(key)
    if sel is not None and backends().get(sel.name) is sel.backend:
        return sel
    req = requested_target()
    if req is not None:
        name, arch, why = req
        b = get_backend(name, require_deps=arch is None)
        sel = Selection(b, arch, why)
    else:
        reasons = []
        for name, b in backends().items():
            ok, reason = backend_status(name)
            if ok:
                sel = Selection(b, None, "auto")
                break
            reasons.append(f"  {name}: {reason}")
        else:
            msg = "no tritium backend is active"
            if reasons:
                msg += ":\n" + "\n".join(reasons)
            else:
                msg += " (no backend is installed)"
            msg += "\nset TRITIUM_TARGET=interpreter (or TRITON_INTERPRET=1) to run kernels with NumPy"
            raise BackendUnavailable(msg)
    _selection_cache[key] = sel
    return sel


def set_active(name: Optional[str]) -> None:
    """Force the backend (``"interpreter"``, ``"cuda:90"``, ...) regardless of the environment; None undoes it."""
    global _forced
    _forced = name
    _selection_cache.clear()
    _launch_contexts.clear()


def reset_active() -> None:
    set_active(None)


def target_from_spec(spec: Any) -> GPUTarget:
    """A GPUTarget from a GPUTarget, ``"cuda:90"`` or ``"interpreter"`` (the driver's target if no arch)."""
    if isinstance(spec, GPUTarget):
        return spec
    name, arch = parse_target_spec(str(spec))
    if arch is not None:
        return get_compiler(name).target_for_arch(arch)
    get_backend(name)
    d = get_driver(name)
    if not d.is_active():
        raise BackendUnavailable(f"the '{name}' backend has no device here ({d.inactive_reason()}); "
                                 f"give an arch to compile for it, e.g. '{name}:<arch>'")
    return d.get_current_target()


_launch_drivers: dict = {}  # backend name -> its driver, once seen active (cleared by reset())


def _launch_driver(kernel: Any) -> tuple:
    """``(backend name, driver)`` that launches ``kernel``: the one of its backend, checked active."""
    md = getattr(kernel, "metadata", None)
    name = (md.get("backend") if md is not None else None) or select().name
    d = _launch_drivers.get(name)
    if d is None or not d.is_active():
        get_backend(name)  # missing extras -> pip command
        d = get_driver(name)
        if not d.is_active():
            raise BackendUnavailable(f"cannot launch '{kernel.name}' on the '{name}' backend: "
                                     f"{d.inactive_reason() or 'driver is not active'}")
        _launch_drivers[name] = d
    return name, d


def launch(kernel: Any, grid: tuple, args: list) -> None:
    """Launch a CompiledKernel on its backend's driver, calling the launch enter/exit plugin hooks.

    This is on every launch's path: after the first launch on a backend it is a dict lookup, the driver's
    ``is_active()``, and the hooks only when some plugin implements them."""
    d = _launch_driver(kernel)[1]
    hooks = launch_hooks()
    if hooks is None:
        d.launch(kernel, grid, args)
        return
    enter, leave = hooks
    enter(kernel=kernel, grid=grid, args=args)
    try:
        d.launch(kernel, grid, args)
    finally:
        leave(kernel=kernel)


# ------------------------------------------------------------------------------------- launch fast path
#: plugin manager, enter caller, exit caller, whether pluggy has ``_hookimpls`` lists, ``tritium.plugins``
_hook_state: list = [None, None, None, False, None]


def launch_hooks() -> Optional[tuple]:
    """``(enter, exit)`` hook callers when some plugin implements ``tritium_launch_enter`` / ``_exit``, else None.

    On every launch: the callers are looked up once per plugin manager and their implementation lists read
    directly, so (un)registering a plugin -- e.g. the profiler's ``start()`` / ``stop()`` -- takes effect at the
    next launch, and a process without launch-hook plugins pays two attribute reads."""
    st = _hook_state
    plugins = st[4]
    if plugins is None:
        from .. import plugins

        st[4] = plugins
    pm = plugins._pm
    if pm is None or st[0] is not pm:
        pm = plugins.get_plugin_manager()
        h = pm.hook
        enter, leave = h.tritium_launch_enter, h.tritium_launch_exit
        st[1], st[2] = enter, leave
        st[3] = isinstance(getattr(enter, "_hookimpls", None), list) and \
            isinstance(getattr(leave, "_hookimpls", None), list)
        st[0] = pm
    enter, leave = st[1], st[2]
    if st[3]:
        if enter._hookimpls or leave._hookimpls:
            return enter, leave
        return None
    if enter.get_hookimpls() or leave.get_hookimpls():
        return enter, leave
    return None


_launch_contexts: dict = {}  # _selection_key() -> (backend name, arch, driver, device getter)


def launch_context() -> tuple:
    """``(backend name, arch, driver, current device getter)`` of the selected backend, for ``JITFunction.run``:
    one dict lookup while the selection holds (cleared by :func:`reset` and :func:`set_active`)."""
    ctx = _launch_contexts.get(_selection_key())
    if ctx is None:
        sel = select()
        d = get_driver(sel.name)
        if d.is_active():
            fast = getattr(d, "device_getter", None)  # optional: a cheaper get_current_device
            dev = (fast() if fast is not None else None) or d.get_current_device
        else:
            dev = _device_zero
        ctx = _launch_contexts[_selection_key()] = (sel.name, sel.arch, d, dev)
    return ctx


def _device_zero() -> int:
    return 0


def bound_launch(kernel: Any, device: Any) -> tuple:
    """``(driver, fn)``: ``fn(grid, args)`` launches ``kernel`` (already launched once through :func:`launch` on
    ``device``) without the per-launch checks of :func:`launch` and without calling the launch hooks (the
    caller does, see :func:`launch_hooks`).  A driver may provide ``launcher(kernel, device)`` returning such
    a function that goes straight to the device's launch call; otherwise ``fn`` calls ``driver.launch``."""
    _, d = _launch_driver(kernel)
    make = getattr(d, "launcher", None)
    fn = make(kernel, device) if make is not None else None
    if fn is None:
        dlaunch = d.launch

        def fn(grid, args, kernel=kernel):
            dlaunch(kernel, grid, list(args))
    return d, fn


# ------------------------------------------------------------------------------------------- active
class _GenericUtils:
    """``driver.active.utils`` for drivers that have none: plausible device properties."""

    def __init__(self, active: "ActiveDriver"):
        self._active = active

    def get_device_properties(self, device: Any = 0) -> dict:
        try:
            warp = self._active.get_current_target().warp_size
        except Exception:  # noqa: BLE001
            warp = 32
        return {
            "multiprocessor_count": max(1, os.cpu_count() or 1),
            "max_shared_mem": 232448,
            "max_num_regs": 65536,
            "warpSize": warp,
            "sm_clock_rate": 1_000_000,
            "mem_clock_rate": 1_000_000,
            "mem_bus_width": 256,
        }


class ActiveDriver:
    """Proxy to the selected backend's driver; resolves the selection on every use (cheap, cached)."""

    @property
    def selection(self) -> Selection:
        return select()

    @property
    def backend_name(self) -> str:
        return select().name

    @property
    def driver(self) -> BaseDriver:
        return get_driver(select().name)

    @property
    def compiler(self) -> BaseCompiler:
        return get_compiler(select().name)

    def is_active(self) -> bool:
        return self.driver.is_active()

    def get_current_target(self) -> GPUTarget:
        sel = select()
        if sel.arch is not None:
            return get_compiler(sel.name).target_for_arch(sel.arch)
        get_backend(sel.name)
        d = get_driver(sel.name)
        if not d.is_active():
            raise BackendUnavailable(f"the '{sel.name}' backend cannot run here: "
                                     f"{d.inactive_reason() or 'driver is not active'}")
        return d.get_current_target()

    def get_current_device(self) -> int:
        d = self.driver
        return d.get_current_device() if d.is_active() else 0

    def get_current_stream(self, device: Optional[int] = None) -> int:
        d = self.driver
        return d.get_current_stream(device) if d.is_active() else 0

    def launch(self, kernel: Any, grid: tuple, args: list) -> None:
        launch(kernel, grid, args)

    @property
    def utils(self) -> Any:
        u = getattr(self.driver, "utils", None)
        return u if u is not None else _GenericUtils(self)

    def get_active_torch_device(self) -> Any:
        d = self.driver
        if hasattr(d, "get_active_torch_device"):
            return d.get_active_torch_device()
        kind = {"cuda": "cuda", "hip": "cuda"}.get(select().name, "cpu")
        try:
            import torch

            return torch.device(kind, self.get_current_device()) if kind != "cpu" else torch.device("cpu")
        except ImportError:
            return kind

    def get_device_interface(self) -> Any:
        d = self.driver
        if hasattr(d, "get_device_interface"):
            return d.get_device_interface()
        import torch

        return torch.cuda if select().name in ("cuda", "hip") else torch.cpu

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        import numpy as np

        return np.empty(256 * 1024 * 1024 // 4, dtype=np.int32)

    def clear_cache(self, cache) -> None:
        cache.fill(0)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.driver, name)

    def __repr__(self) -> str:
        try:
            return f"<tritium active driver: {select().name}>"
        except BackendUnavailable as e:
            return f"<tritium active driver: none ({str(e).splitlines()[0]})>"


active = ActiveDriver()

__all__ = ["active", "backends", "get_backend", "get_compiler", "get_driver", "backend_status", "select",
           "Selection", "set_active", "reset_active", "reset", "parse_target_spec", "target_from_spec", "launch",
           "requested_target", "ActiveDriver", "launch_hooks", "launch_context", "bound_launch"]
