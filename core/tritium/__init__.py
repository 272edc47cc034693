"""tritium: a Triton-compatible tile-language GPU compiler.  ``import tritium as triton``."""
from .errors import CompilationError, OutOfResources
from .runtime.jit import JITFunction, jit

__version__ = "0.1.0"


def cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    n -= 1
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    n |= n >> 32
    return n + 1


__all__ = ["jit", "JITFunction", "CompilationError", "OutOfResources", "cdiv", "next_power_of_2", "__version__"]
