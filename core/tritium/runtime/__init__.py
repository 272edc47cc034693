"""The runtime: ``JITFunction`` (binder, specialisation, kernel cache, launch) and backend/driver selection."""
from . import driver
from .jit import JITFunction, KernelInterface, jit

__all__ = ["driver", "JITFunction", "KernelInterface", "jit"]
