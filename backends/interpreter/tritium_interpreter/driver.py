"""The interpreter's driver: always active, one device; launches the generated NumPy program over the grid through
the kernel's :class:`~.launcher.Launcher` (its loaded state, ``kernel.loaded[DEVICE]``).
"""
from __future__ import annotations

from tritium.compiler.backend import BaseDriver, Binding, GPUTarget, no_direct_launch

from .launcher import Launcher

TARGET = GPUTarget("interpreter", "cpu", 1)

DEVICE = 0  # the interpreter's one device: its Launcher is ``kernel.loaded[DEVICE]``


def get_launcher(kernel) -> Launcher:
    """The kernel's :class:`Launcher` (an :class:`.eager.EagerLauncher` for a kernel compiled to stage ``eager``),
    built on its first launch and kept in ``kernel.loaded``."""
    ln = kernel.loaded.get(DEVICE)
    if ln is None:
        asm = getattr(kernel, "asm", None)
        if isinstance(asm, dict) and "eager" in asm:
            ln = _eager_launcher(kernel)
        else:
            ln = Launcher(kernel)
        kernel.loaded[DEVICE] = ln
    return ln




def _eager_launcher(kernel) -> Launcher:
    from .eager import EagerLauncher  # step-through mode's (it imports the language): only for such kernels

    return EagerLauncher(kernel)


class InterpreterDriver(BaseDriver):
    """Always active; one device (0); a kernel's state is its :class:`Launcher`."""

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> GPUTarget:
        return TARGET

    def launch(self, kernel, grid, args) -> None:
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(tuple(grid)))
        get_launcher(kernel).launch(kernel, grid, args)

    def bind(self, kernel, device) -> Binding:
        """The kernel's :class:`Launcher`'s ``launch``: what the JIT's relaunch fast path calls (no direct
        launch)."""
        return Binding(get_launcher(kernel).launch, no_direct_launch, True)
