"""The CUDA backend as a tritium plugin (entry point ``nvidia`` in group ``tritium``).

Nothing CUDA-specific is imported here: dependencies are probed with ``importlib.util.find_spec`` and the
driver probes ``libcuda.so.1`` with ctypes only when asked whether it is active.
"""
from __future__ import annotations

from typing import Optional

from tritium.compiler.backend import Backend
from tritium.plugins import hookimpl, missing_modules

from .arch import PIP



def missing() -> Optional[str]:
    """None if cuda-python is importable, else the pip command that installs the extra."""
    return missing_modules("cuda.bindings", pip=PIP)


def make_compiler():
    """The cuda compiler (:mod:`tritium_nvidia.compiler`), imported when first asked for."""
    from .compiler import CUDACompiler as _Compiler

    return _Compiler()


def make_driver():
    """The cuda driver (:mod:`tritium_nvidia.driver`), imported when first asked for: it imports cuda-python
    lazily too, so the plugin loads on a machine without it."""
    from .driver import CUDADriver as _Driver

    return _Driver()


@hookimpl
def tritium_backends():
    return [Backend(name="cuda", priority=20, make_compiler=make_compiler, make_driver=make_driver,
                    missing=missing(), description="NVIDIA GPUs: TTIR -> TTGIR -> LLVM -> PTX -> cubin")]
