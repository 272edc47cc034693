"""The runtime: ``@jit`` (``JITFunction``: binding, specialisation, the in-memory kernel cache, the generated
launch path), the autotuner, and ``driver.active`` (Triton's name for the active device driver).

Layering: the runtime builds on :mod:`tritium.compiler` (compile, the backend registry, the file cache, the
launch helper) and :mod:`tritium.plugins`; nothing below imports it.  Inside: specialization < binder,
dependencies < launch < jit < autotuner.
"""
from . import driver
from .jit import JITFunction, KernelInterface, MockTensor, jit

__all__ = ["driver", "JITFunction", "KernelInterface", "MockTensor", "jit"]
