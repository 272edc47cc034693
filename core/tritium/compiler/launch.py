"""Launching a compiled kernel on its backend's driver, between the launch hooks.

Every launch goes through :func:`launch_with_hooks`: ``CompiledKernel[grid](...)`` / ``.launch`` and
``driver.active.launch`` through :func:`launch` (the driver's ``launch``), the JIT's relaunch fast path with the
function :func:`bound_launch` returns (the driver's ``launcher``).  The hooks (``tritium_launch_enter`` /
``_exit``) cost one attribute read while no plugin implements them.

Layering: above :mod:`tritium.plugins` and the backend registry, below ``CompiledKernel`` and the runtime.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from .. import plugins as _plugins
from ..errors import KernelRuntimeError
from . import registry as _registry
from .backend import BaseDriver
from .launch_states import CompiledKernelState
from .registry import launch_driver

try:  # ``obj[grid]`` without a Python frame (optional C helper, built with the package)
    from .._speedups import Subscript
except ImportError:  # pragma: no cover - without a C compiler at install time
    class Subscript:
        """``obj[grid]`` is ``obj._subscript(grid)`` (the C helper's base class does the same without a frame,
        or launches from C where ``obj._c_grid_state`` is set)."""

        def __getitem__(self, grid) -> Callable:
            return self._subscript(grid)

    _HAVE_C = False
else:
    _HAVE_C = True


def launch_with_hooks(launch: Callable[[Any, tuple, Sequence], None], kernel: Any, grid: tuple,
                      args: Sequence) -> None:
    """``launch(kernel, grid, args)`` -- a driver's ``launch`` or what its ``launcher`` returned -- between the
    ``tritium_launch_enter`` / ``tritium_launch_exit`` hooks when some plugin implements them (the hooks get
    ``args`` as a list)."""
    pm = _plugins._pm  # read directly: this is on every launch (the manager exists once a backend was selected)
    hooks = (pm or _plugins.get_plugin_manager()).launch_hooks
    if hooks is None:
        launch(kernel, grid, args)
        return
    enter, leave = hooks
    enter(kernel=kernel, grid=grid, args=list(args))
    try:
        launch(kernel, grid, args)
    finally:
        leave(kernel=kernel)


def launch(kernel: Any, grid: tuple, args: Sequence) -> None:
    """Launch a CompiledKernel over ``grid`` (a 3-tuple) with its runtime ``args`` on the driver of the backend
    it was compiled for (checked active), calling the launch hooks.

    Once the kernel was launched on a device, and while no plugin implements the launch hooks, the driver's
    ``launcher(kernel, device)`` for the current device (its ``device_getter()``) is called straight away (kept in
    ``kernel.launchers[driver]``: ``{"device": getter, device: fn}``)."""
    d = launch_driver(kernel.metadata.get("backend"), kernel.name)
    pm = _plugins._pm
    if pm is None or pm.launch_hooks is not None:
        launch_with_hooks(d.launch, kernel, grid, args)
        return
    launchers = kernel.__dict__.setdefault("launchers", {})
    bound = launchers.get(d)
    if bound is None:
        bound = launchers[d] = {"device": d.device_getter()}
    dev = bound["device"]()
    fn = bound.get(dev)
    if fn is None:
        d.launch(kernel, grid, args)  # loads the kernel on this device on its first launch there
        fn = d.launcher(kernel, dev)
        if fn is not d.launch:  # the loaded kernel's own launch function
            bound[dev] = fn
            _bind_c(kernel, d, dev, bound["device"])
        return
    fn(kernel, grid, args)


def _bind_c(kernel: Any, d: BaseDriver, dev: Any, getter: Callable[[], Any]) -> None:
    """``CompiledKernel[grid](...)`` from C (``tritium._speedups``, its ``CK_*`` state) once ``kernel`` is loaded
    on ``dev``: the driver's direct launch for the device (``fn(gx, *args)``, every runtime argument), taken by
    the C subscript while that driver is still the backend's launch driver, no plugin implements the launch
    hooks, the grid is one-dimensional, and every argument is a torch tensor on the current device or another
    value the direct launch packs; anything else goes to :meth:`CompiledKernel.launch` (this module)."""
    torch = sys.modules.get("torch")
    backend = kernel.metadata.get("backend")
    if not _HAVE_C or torch is None or not backend:
        return
    n = len(kernel.signature)
    try:
        direct = d.direct_launcher(kernel, dev, tuple(range(n)), n)
    except KernelRuntimeError:  # the driver's arguments are not the signature's (metadata without one): Python
        return
    if direct is None:
        return
    state = kernel.__dict__.get("_c_grid_state")
    if state is None or state.driver is not d:  # first, or a new driver since (a reset): directs of this one only
        state = kernel._c_grid_state = CompiledKernelState(kernel, _registry._launch_drivers, backend, d, getter, {},
                                                           vars(_plugins), torch.Tensor, kernel.launch, n)
    state.directs[dev] = direct


def bound_launch(kernel: Any, device: Any) -> tuple:
    """``(driver, fn)`` for the JIT's relaunch fast path: ``fn`` is the driver's ``launcher(kernel, device)``,
    with ``launch``'s signature, for ``kernel`` already launched once on ``device`` through :func:`launch`.
    Callers launch through :func:`launch_with_hooks`."""
    d: BaseDriver = launch_driver(kernel.metadata.get("backend"), kernel.name)
    return d, d.launcher(kernel, device)


__all__ = ["launch", "launch_with_hooks", "bound_launch", "Subscript"]
