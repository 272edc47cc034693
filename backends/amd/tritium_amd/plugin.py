"""The HIP (AMD) backend as a tritium plugin (entry point ``amd`` in group ``tritium``).

Nothing HIP-specific is imported here: dependencies are probed with ``importlib.util.find_spec``, and the
driver (:mod:`tritium_amd.driver`) imports hip-python and asks the HIP runtime for devices only when asked whether
it is active (``tritium backends`` shows its reason where it is not: no hip-python, no ROCm runtime, no AMD GPU).
"""
from __future__ import annotations

from typing import Optional

from tritium.compiler.backend import Backend
from tritium.plugins import hookimpl, missing_modules

from .arch import PIP


def missing() -> Optional[str]:
    """None if hip-python is importable, else the pip command that installs the extra."""
    return missing_modules("hip", pip=PIP)


def make_compiler():
    """The hip compiler (:mod:`tritium_amd.compiler`), imported when first asked for."""
    from .compiler import HIPCompiler as _Compiler

    return _Compiler()


def make_driver():
    """The hip driver (:mod:`tritium_amd.driver`), imported when first asked for: it imports hip-python lazily too,
    so the plugin loads on a machine without it."""
    from .driver import HIPDriver as _Driver

    return _Driver()


@hookimpl
def tritium_backends():
    return [Backend(name="hip", priority=10, make_compiler=make_compiler, make_driver=make_driver,
                    missing=missing(), description="AMD GPUs (CDNA wave64, RDNA wave32)")]
