"""The backend registry: which backends plugins provide, their compiler and driver instances, and which backend
runs kernels now (the selection).

Backends come from plugins (``tritium_backends`` hook, entry-point group ``tritium``).  Which one runs kernels:

* ``TRITIUM_TARGET=<name>[:<arch>]`` (``cuda``, ``hip``, ``interpreter`` or a plugin backend's name).  With an
  arch (``cuda:90``) the arch is the compile target whatever the device is, and compiling works without the
  backend's runtime dependencies or a device (launching still needs them);
* ``TRITON_INTERPRET=1``: an alias for ``TRITIUM_TARGET=interpreter`` (``TRITIUM_TARGET`` wins if both are set);
  with ``TRITIUM_INTERPRET_MODE=eager`` (read when the selection is made: at the first launch, or after
  :func:`reset`) the interpreter's step-through mode, ``interpreter:eager``, as it is for ``TRITIUM_TARGET=interpreter``;
* otherwise the highest-priority backend whose dependencies are installed and whose driver ``is_active()``.

The selection is re-evaluated when those environment variables change or when plugins providing backends are
(un)registered (:func:`tritium.plugins.on_backends_change` calls :func:`reset`).

Layering: above :mod:`tritium.plugins` and the contracts (:mod:`tritium.compiler.backend`), below ``compile()``
and the runtime; ``tritium.runtime.driver`` (Triton's name, with ``driver.active``) re-exports this API.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

from .. import plugins
from .._env import env_flag
from ..errors import BackendUnavailable, TargetError
from .backend import Backend, BaseCompiler, BaseDriver, GPUTarget

_lock = threading.RLock()
_backends: Optional[dict] = None
_compilers: dict = {}
_drivers: dict = {}
_selection_cache: dict = {}
forced_backend: Optional[str] = None  # set_active(): the backend (spec) forced regardless of the environment
_launch_drivers: dict = {}  # backend name -> its driver, once seen active
_launch_contexts: dict = {}  # _selection_key() -> LaunchContext


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


plugins.on_backends_change(reset)


# ------------------------------------------------------------------------------------------- discovery
def backends() -> dict:
    """``{name: Backend}`` of every registered backend, highest priority first."""
    global _backends
    if _backends is not None:
        return _backends
    with _lock:
        if _backends is None:
            found: dict = {}
            for result in plugins.get_plugin_manager().hook.tritium_backends():
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
        raise TargetError("empty target: give a backend, optionally with an arch (interpreter, cuda:90, hip:gfx942)")
    name, sep, arch = spec.partition(":")
    return name.strip().lower(), (arch.strip() or None) if sep else None


#: other names of backends: Triton's (``cpu``: triton-cpu's target name, which torch's Inductor gives CPU kernels;
#: ``nvidia`` / ``amd``: its plugin names) -> tritium's
ALIASES = {"cpu": "interpreter", "nvidia": "cuda", "amd": "hip"}


def canonical_target(target: GPUTarget) -> GPUTarget:
    """``target`` with its backend under tritium's name (``GPUTarget("cpu", ...)`` is the interpreter's)."""
    name = ALIASES.get(target.backend)
    if name is None:
        return target
    if name == "interpreter":
        return get_compiler(name).target_for_arch(None)
    return GPUTarget(name, target.arch, target.warp_size)


def get_backend(name: str, require_deps: bool = True) -> Backend:
    """The backend called ``name``; ``BackendUnavailable`` if there is none or (``require_deps``) its extras are
    missing: the message has the pip command."""
    bs = backends()
    name = ALIASES.get(name, name) if name not in bs else name
    if name not in bs:
        broken = plugins.unavailable_plugins()
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
    except Exception as e:  # noqa: BLE001 - a broken driver is reported (here and in `tritium backends`)
        return False, f"driver failed: {type(e).__name__}: {e}"


# ------------------------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class Selection:
    """The backend that runs kernels now, and why."""

    backend: Backend
    arch: Optional[str]  # from TRITIUM_TARGET=name:arch
    why: str  # "TRITIUM_TARGET", "TRITON_INTERPRET", "set_active" or "auto"

    @property
    def name(self) -> str:
        return self.backend.name


def requested_target() -> Optional[tuple]:
    """``(name, arch, source)`` asked for by set_active() / the environment, or None for automatic selection."""
    if forced_backend is not None:
        return (*parse_target_spec(forced_backend), "set_active")
    spec = os.environ.get("TRITIUM_TARGET", "").strip()
    if spec:
        name, arch = parse_target_spec(spec)
        if name == "interpreter" and arch is None:
            arch = _interpret_mode()
        return (name, arch, "TRITIUM_TARGET")
    if env_flag("TRITON_INTERPRET"):
        return ("interpreter", _interpret_mode(), "TRITON_INTERPRET")
    return None


def _interpret_mode() -> Optional[str]:
    """``TRITIUM_INTERPRET_MODE``: ``eager`` (the interpreter's step-through arch) or ``fast`` / unset (None)."""
    mode = os.environ.get("TRITIUM_INTERPRET_MODE", "").strip().lower()
    if mode in ("", "fast"):
        return None
    if mode == "eager":
        return "eager"
    raise BackendUnavailable(f"TRITIUM_INTERPRET_MODE={mode!r}: expected 'fast' (the default) or 'eager' "
                             "(step-through: the kernel's Python body runs program by program)")


# ``os.environ`` lookups encode the key and decode the value (~0.2 µs each); the launch path reads the two
# selection variables from the environment's raw mapping instead (same content, kept in sync by os.environ)
_env_data = getattr(os.environ, "_data", None)
if _env_data is not None and hasattr(os.environ, "encodekey"):  # CPython's os.environ
    _TARGET_KEY, _INTERPRET_KEY = os.environ.encodekey("TRITIUM_TARGET"), os.environ.encodekey("TRITON_INTERPRET")
else:  # pragma: no cover
    _env_data = None


def _selection_key() -> tuple:
    """What the selection depends on besides the registered backends: ``set_active()`` and the environment
    (:func:`launch_context` computes the same inline)."""
    d = _env_data
    if d is not None:
        return (forced_backend, d.get(_TARGET_KEY), d.get(_INTERPRET_KEY))
    return (forced_backend, os.environ.get("TRITIUM_TARGET"), os.environ.get("TRITON_INTERPRET"))


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


def set_active(name: Any) -> None:
    """Force the backend (``"interpreter"``, ``"cuda:90"``, ...) regardless of the environment; None undoes it.
    A backend's driver (Triton's ``driver.set_active(backend.driver())``) selects that backend."""
    global forced_backend
    if name is not None and not isinstance(name, str):
        drv = name
        name = next((n for n, d in list(_drivers.items()) if d is drv), None)
        if name is None:
            raise TypeError(f"set_active: {drv!r} is neither a backend name nor a tritium backend's driver")
    forced_backend = name
    _selection_cache.clear()
    _launch_contexts.clear()


def reset_active() -> None:
    set_active(None)


def current_target() -> GPUTarget:
    """The target kernels are compiled for now: the selected backend's arch from ``TRITIUM_TARGET=name:arch``
    (no device needed), else its driver's current device's target."""
    sel = select()
    if sel.arch is not None:
        return get_compiler(sel.name).target_for_arch(sel.arch)
    get_backend(sel.name)
    d = get_driver(sel.name)
    if not d.is_active():
        raise BackendUnavailable(f"the '{sel.name}' backend cannot run here: "
                                 f"{d.inactive_reason() or 'driver is not active'}")
    return d.get_current_target()


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


# ------------------------------------------------------------------------------------------- launching
def launch_driver(backend: Optional[str], kernel_name: str = "kernel") -> BaseDriver:
    """The driver that launches a kernel compiled for ``backend`` (None: the selected one), checked active:
    after the first call a dict lookup and the driver's ``is_active()``."""
    name = backend or select().name
    d = _launch_drivers.get(name)
    if d is None or not d.is_active():
        get_backend(name)  # missing extras -> pip command
        d = get_driver(name)
        if not d.is_active():
            raise BackendUnavailable(f"cannot launch '{kernel_name}' on the '{name}' backend: "
                                     f"{d.inactive_reason() or 'driver is not active'}")
        _launch_drivers[name] = d
    return d


class LaunchContext(NamedTuple):
    """The selection as the JIT's launch path needs it (one dict lookup while the selection holds)."""

    backend: str
    arch: Optional[str]
    driver: BaseDriver
    device: Callable[[], Any]  # returns the current device (the driver's ``device_getter()``)


class LaunchSnapshot(NamedTuple):
    """What the launch fast paths read of the selection without calling this module (the JIT's generated launchers,
    ``tritium._speedups``): live objects, so a snapshot taken once stays current.  The selection key is
    ``(state["forced_backend"], environ.get(target_key), environ.get(interpret_key))``, looked up in ``contexts``
    (a miss: call :func:`launch_context`)."""

    state: dict  # this module's namespace (``forced_backend`` read on every launch)
    contexts: dict  # selection key -> LaunchContext (cleared by reset / set_active)
    environ: Any  # os.environ's raw mapping (CPython); None where it cannot be read so (then no inline path)
    target_key: Any  # TRITIUM_TARGET as a key of ``environ``
    interpret_key: Any  # TRITON_INTERPRET as a key of ``environ``
    drivers: dict  # backend name -> its driver, once seen active (launch_driver)


def launch_snapshot() -> LaunchSnapshot:
    """The :class:`LaunchSnapshot` of this process's selection state."""
    return LaunchSnapshot(globals(), _launch_contexts, _env_data, _TARGET_KEY if _env_data is not None else None,
                          _INTERPRET_KEY if _env_data is not None else None, _launch_drivers)


def launch_context() -> LaunchContext:
    """The :class:`LaunchContext` of the selected backend (cleared by :func:`reset` and :func:`set_active`).
    On every launch of the JIT's fast path: the selection key is computed inline."""
    d = _env_data
    key = (forced_backend, d.get(_TARGET_KEY), d.get(_INTERPRET_KEY)) if d is not None else _selection_key()
    ctx = _launch_contexts.get(key)
    if ctx is None:
        sel = select()
        drv = get_driver(sel.name)
        ctx = LaunchContext(sel.name, sel.arch, drv, drv.device_getter() if drv.is_active() else _device_zero)
        _launch_contexts[key] = ctx
    return ctx


def _device_zero() -> int:
    return 0


__all__ = ["backends", "get_backend", "get_compiler", "get_driver", "backend_status", "select", "Selection",
           "set_active", "reset_active", "reset", "parse_target_spec", "target_from_spec", "current_target",
           "requested_target", "launch_driver", "launch_context", "LaunchContext", "launch_snapshot", "LaunchSnapshot"]
