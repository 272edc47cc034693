"""Launching a compiled kernel on its backend's driver, between the launch hooks.

Every launch goes through :func:`launch_with_hooks`: ``CompiledKernel[grid](...)`` / ``.launch`` and
``driver.active.launch`` through :func:`launch` (the driver's ``launch``), the JIT's relaunch fast path with the
function :func:`bound_launch` returns.  After a kernel's first launch on a device, every path takes the driver's
:meth:`~tritium.compiler.backend.BaseDriver.bind` of it, kept once per kernel, driver and device by
:func:`binding` (``kernel.bindings``).  The hooks (``tritium_launch_enter`` / ``_exit``) cost one attribute read
while no plugin implements them.

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

    Once the kernel was launched on a device, and while no plugin implements the launch hooks, its
    :func:`binding` there (the current device: the driver's ``device_getter()``) launches it straight away."""
    d = launch_driver(kernel.metadata.get("backend"), kernel.name)
    pm = _plugins._pm
    if pm is None or pm.launch_hooks is not None:
        launch_with_hooks(d.launch, kernel, grid, args)
        return
    bindings = kernel.__dict__.get("bindings")
    getter = _GETTERS.get(d)
    if getter is None:
        getter = _GETTERS[d] = d.device_getter()
    dev = getter()
    b = None if bindings is None else bindings.get((d, dev))
    if b is None:
        d.launch(kernel, grid, args)  # loads the kernel on this device on its first launch there
        b = binding(kernel, d, dev)
        if b.loaded:
            _bind_c(kernel, d, dev, getter, b)
        return
    b.launch(kernel, grid, args)


_GETTERS: dict = {}  # driver -> its device getter (forgotten with the drivers when the backends change)
_plugins.on_backends_change(_GETTERS.clear)


def binding(kernel: Any, d: BaseDriver, device: Any) -> Any:
    """``d.bind(kernel, device)``, kept in ``kernel.bindings[(d, device)]`` once the kernel is loaded there: the one
    cache of launch functions that :func:`launch`, :func:`bound_launch` (the JIT's fast entries) and the C subscript
    (:func:`_bind_c`) share.  While it is not loaded there (TRITIUM_COMPILE_ONLY) the binding (``loaded`` False:
    its launch is the driver's) is made afresh each time."""
    bindings = kernel.__dict__.setdefault("bindings", {})
    b = bindings.get((d, device))
    if b is None:
        b = d.bind(kernel, device)
        if b.loaded:
            bindings[(d, device)] = b
    return b


def _bind_c(kernel: Any, d: BaseDriver, dev: Any, getter: Callable[[], Any], b: Any) -> None:
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
        direct = b.direct(tuple(range(n)), n)
    except KernelRuntimeError:  # the driver's arguments are not the signature's (metadata without one): Python
        return
    if direct is None:
        return
    state = kernel.__dict__.get("_c_grid_state")
    if state is None or state.driver is not d:  # first, or a new driver since (a reset): directs of this one only
        state = kernel._c_grid_state = CompiledKernelState(kernel, _registry.launch_snapshot().drivers, backend, d,
                                                           getter, {}, vars(_plugins), torch.Tensor, kernel.launch, n)
    state.directs[dev] = direct


def bound_launch(kernel: Any, device: Any) -> tuple:
    """``(driver, binding)`` for the JIT's relaunch fast path, ``kernel`` already launched once on ``device``
    through :func:`launch`: ``binding.launch`` has ``launch``'s signature (callers launch through
    :func:`launch_with_hooks`), ``binding.direct(positions, n)`` gives the direct launch, if the driver has one
    (the binding's launch is the driver's plain ``launch`` where the kernel is not loaded: TRITIUM_COMPILE_ONLY)."""
    d: BaseDriver = launch_driver(kernel.metadata.get("backend"), kernel.name)
    return d, binding(kernel, d, device)


__all__ = ["launch", "launch_with_hooks", "bound_launch", "binding", "Subscript"]
