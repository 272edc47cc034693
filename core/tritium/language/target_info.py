"""``tl.target_info``: compile-time questions about the target a kernel is compiled for (Triton 3.6's module).

Plain Python functions: a ``@jit`` function calls them with compile-time arguments and gets a constexpr, e.g.
``if tl.target_info.cuda_capability_geq(9, 0):``.  While the ``ttir`` stage generates code, the target is the one
being compiled for (``compile(..., target=...)``); outside a compilation it is the active driver's current target
(None when there is none).
"""
from __future__ import annotations

import contextlib
import threading

from ..target import GPUTarget
from ..target import current_target as _active_target

__all__ = ["current_target", "is_cuda", "cuda_capability_geq", "is_hip", "is_hip_cdna3", "is_hip_cdna4"]

_state = threading.local()


@contextlib.contextmanager
def compiling_for(target, options=None):
    """While generating code for ``target`` (a GPUTarget or its metadata dict), ``current_target()`` is it and
    ``current_options()`` the compile options (``num_warps``, ...; ``tl.extra.cuda.num_warps()`` reads them)."""
    prev = getattr(_state, "target", None), getattr(_state, "options", None)
    _state.target = GPUTarget.of(target)
    _state.options = options
    try:
        yield
    finally:
        _state.target, _state.options = prev


def current_options():
    """The options of the kernel being compiled (None outside the ``ttir`` stage)."""
    return getattr(_state, "options", None)


def current_target():
    t = getattr(_state, "target", None)
    if t is not None:
        return t
    return _active_target()  # the runtime's active driver's (tritium.target.current_target)


def is_cuda():
    t = current_target()
    return t is not None and t.backend == "cuda"


def cuda_capability_geq(major, minor=0):
    """Whether the target is CUDA with compute capability >= (major, minor)."""
    t = current_target()
    if t is None or t.backend != "cuda":
        return False
    return int(t.arch) >= major * 10 + minor


def is_hip():
    t = current_target()
    return t is not None and t.backend == "hip"


def is_hip_cdna3():
    t = current_target()
    return t is not None and t.backend == "hip" and t.arch == "gfx942"


def is_hip_cdna4():
    t = current_target()
    return t is not None and t.backend == "hip" and t.arch == "gfx950"
