"""``tritium.runtime.driver``: Triton's module name for the active device driver, ``driver.active``.

``active`` is a proxy to the driver of the backend selected now (:mod:`tritium.compiler.registry` selects it:
``TRITIUM_TARGET``, ``TRITON_INTERPRET``, priorities).  The registry's functions (``select``, ``get_driver``,
``set_active``, ``reset``, ...) and :func:`launch` are re-exported here under the names Triton users and older
code know; they are defined once, in :mod:`tritium.compiler`.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from ..compiler.backend import BaseCompiler, BaseDriver, GPUTarget
from ..compiler.launch import bound_launch, launch, launch_with_hooks
from ..compiler.registry import (LaunchContext, Selection, backend_status, backends, current_target, get_backend,
                                 get_compiler, get_driver, launch_context, parse_target_spec, requested_target,
                                 reset, reset_active, select, set_active, target_from_spec)
from ..errors import BackendUnavailable
from ..plugins import launch_hooks
from .. import target as _target


class ActiveDriver:
    """``driver.active``: the selected backend's driver, resolved on every use (cheap, cached); its own
    attributes are forwarded, and the :class:`~tritium.compiler.backend.BaseDriver` contract gives every backend
    Triton's methods (``get_current_device``, ``utils.get_device_properties``, ``get_benchmarker``, ...)."""

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
        return current_target()

    def get_current_device(self) -> int:
        d = self.driver
        return d.get_current_device() if d.is_active() else 0

    def get_current_stream(self, device: Optional[int] = None) -> int:
        d = self.driver
        return d.get_current_stream(device) if d.is_active() else 0

    def launch(self, kernel: Any, grid: tuple, args: list) -> None:
        launch(kernel, grid, args)

    def get_benchmarker(self):
        """The backend's own benchmarker, else ``tritium.testing.do_bench``."""
        bench = self.driver.get_benchmarker()
        if bench is None:
            from .bench import do_bench

            bench = do_bench
        return bench

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


def _active_target_or_none() -> Optional[GPUTarget]:
    try:
        return active.get_current_target()
    except BackendUnavailable:  # no usable backend: no target
        return None


# tl.target_info outside a compile (and anything below the runtime) asks the active driver through tritium.target
_target.set_current_target_provider(_active_target_or_none)

#: Triton's ``from triton.runtime.driver import driver`` (its DriverConfig: ``driver.active``,
#: ``driver.set_active(...)``, ``driver.reset_active()``): this module plays that part itself
driver = sys.modules[__name__]

__all__ = ["active", "driver", "ActiveDriver", "backends", "get_backend", "get_compiler", "get_driver", "backend_status",
           "select", "Selection", "set_active", "reset_active", "reset", "parse_target_spec", "target_from_spec",
           "current_target", "requested_target", "launch", "launch_with_hooks", "bound_launch", "launch_context",
           "LaunchContext", "launch_hooks"]
