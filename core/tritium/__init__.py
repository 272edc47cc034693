"""tritium: a Triton-compatible tile-language GPU compiler.  ``import tritium as triton``.

Importing tritium is cheap: MLIR and llvmlite are imported only when a kernel is compiled, and plugins
(backends) are discovered on first use.
"""
import importlib as _importlib

from .compiler.compiler import ASTSource, CompiledKernel, compile
from .errors import BackendUnavailable, CompilationError, OutOfResources, TritiumError, TritonError
from .runtime import driver as _driver  # noqa: F401  (tritium.runtime.driver.active)
from .runtime._allocation import set_allocator
from .runtime.autotuner import Autotuner, Heuristics, autotune, heuristics
from .runtime.config import Config
from .runtime.jit import JITFunction, KernelInterface, constexpr_function, jit
from .runtime.reinterpret import TensorWrapper, reinterpret
from .runtime.jit import set_explainer as _set_explainer
from .source import files as _sources
from .triton_alias import install_as_triton, uninstall_as_triton

_sources.install()  # remember exec()-built sources, so @jit finds them (source/files.py)


def _explain_launch(*args, **kwargs):
    from .tools.explain import explain_launch  # (the tools sit above the runtime: wired in here, imported on use)

    return explain_launch(*args, **kwargs)


_set_explainer(_explain_launch)

from ._version import __version__  # noqa: E402


def cdiv(x: int, y: int) -> int:
    """Ceiling division: ``(x + y - 1) // y``."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of 2 that is >= ``n`` (1 for n <= 1)."""
    n = int(n)
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()


_LAZY = ("language", "testing", "plugins", "cli", "frontend", "passes", "dialects", "tools", "knobs")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tritium' has no attribute {name!r}")


__all__ = ["jit", "JITFunction", "KernelInterface", "compile", "ASTSource", "CompiledKernel", "Config",
           "autotune", "heuristics", "Autotuner", "Heuristics", "set_allocator", "reinterpret", "TensorWrapper",
           "CompilationError", "OutOfResources", "TritiumError", "TritonError", "BackendUnavailable", "cdiv",
           "next_power_of_2", "constexpr_function", "install_as_triton", "uninstall_as_triton", "language", "testing",
           "runtime", "tools",
           "__version__"]
