"""``triton.backends`` under :func:`tritium.install_as_triton`: Triton's view of the installed backends.

Triton keeps ``triton.backends.backends``, a dict ``{name: Backend(compiler=<class>, driver=<class>)}`` under its
plugin names (``nvidia``, ``amd``, and ``cpu`` for triton-cpu), which torch's Inductor reads: ``"cpu" in
triton.backends.backends`` turns on ``cpu_backend = "triton"``, ``backend.driver.is_active()`` picks a GPU,
``driver.set_active(backend.driver())`` switches to it.  Here that dict is built from tritium's own registry
(:mod:`tritium.compiler.registry`), one entry per registered backend: ``cuda`` as ``nvidia``, ``hip`` as ``amd``,
the interpreter as ``cpu`` (Triton's name for a backend that runs kernels on the host's CPU tensors), a plugin's
backend under its own name.  ``backend.compiler(target)`` is that backend's tritium compiler; ``backend.driver``
a class whose ``is_active()`` asks what Triton's does (torch, where imported) or else the tritium driver, whose
instances are that driver, and of which ``triton.runtime.driver.active`` is an instance while that backend is the
one set active (``driver.set_active``; asking never probes a device).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

#: tritium backend name -> Triton's plugin name for it
TRITON_NAMES = {"cuda": "nvidia", "hip": "amd", "interpreter": "cpu"}


@dataclass(frozen=True)
class Backend:
    """Triton's ``triton.backends.Backend``: the compiler and driver classes of one backend."""

    compiler: Any
    driver: Any


class _DriverMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from ..compiler import registry
        from ..runtime.driver import ActiveDriver

        name = cls.tritium_backend
        if isinstance(obj, ActiveDriver):
            # only a backend set active counts: selecting one would probe the devices (cuInit), which a process
            # that forks workers afterwards (Inductor's compile pool) must not do
            forced = registry.forced_backend
            if not isinstance(forced, str):
                return False
            fname = registry.parse_target_spec(forced)[0]
            return registry.ALIASES.get(fname, fname) == name
        return obj is registry._drivers.get(name)


def _torch_gpu(name: str):
    """Triton's own test for its GPU drivers, where torch is imported: ``torch.cuda.is_available()`` and the
    torch build's vendor.  It does not initialise the CUDA driver in this process (tritium's driver probe calls
    ``cuInit``), which matters to torch's Inductor: its compile pool forks workers after asking, and a process
    forked after ``cuInit`` has no CUDA.  None: no answer this way (no torch, or not a GPU backend)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or name not in ("cuda", "hip"):
        return None
    try:
        return bool(torch.cuda.is_available()) and ((torch.version.hip is None) == (name == "cuda"))
    except Exception:  # noqa: BLE001 - a broken torch: ask the driver
        return None


def _driver_class(name: str) -> type:
    def is_active(cls) -> bool:
        from ..compiler import registry

        answer = _torch_gpu(name)
        if answer is not None:
            return answer and not registry.get_backend(name, require_deps=False).missing
        try:
            return registry.backend_status(name)[0]
        except Exception:  # noqa: BLE001 - a backend whose driver cannot load is not active
            return False

    def new(cls, *args, **kwargs):
        from ..compiler import registry

        return registry.get_driver(name)

    return _DriverMeta(f"{TRITON_NAMES.get(name, name).capitalize()}Driver", (), {
        "tritium_backend": name, "is_active": classmethod(is_active), "__new__": new,
        "__doc__": f"The '{name}' backend's tritium driver, as a Triton driver class."})


def _compiler_class(name: str) -> type:
    def new(cls, target=None, *args, **kwargs):
        from ..compiler import registry

        return registry.get_compiler(name)

    def supports_target(target) -> bool:
        from ..compiler import registry

        return registry.get_compiler(name).supports_target(registry.canonical_target(target))

    return type(f"{TRITON_NAMES.get(name, name).capitalize()}Backend", (), {
        "tritium_backend": name, "__new__": new, "supports_target": staticmethod(supports_target),
        "__doc__": f"The '{name}' backend's tritium compiler, as a Triton backend class."})


class _Backends(Mapping):
    """``{triton_name: Backend}`` of tritium's registered backends (read from the registry on each use)."""

    _cache: dict = {}

    def _entries(self) -> dict:
        from ..compiler import registry

        out = {}
        for name in registry.backends():
            if name not in self._cache:
                self._cache[name] = Backend(compiler=_compiler_class(name), driver=_driver_class(name))
            out[TRITON_NAMES.get(name, name)] = self._cache[name]
        return out

    def __getitem__(self, key: str) -> Backend:
        return self._entries()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return f"tritium backends {dict(self._entries())!r}"


backends = _Backends()

from . import compiler  # noqa: E402,F401  (as Triton's: triton.backends.compiler without importing it)

__all__ = ["Backend", "backends", "TRITON_NAMES"]
