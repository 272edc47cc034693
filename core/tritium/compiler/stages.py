"""Generic stages every backend composes: ``make_ttir`` (Python AST -> TTIR text, after the TTIR passes).

MLIR is imported only when a stage runs.
"""
from __future__ import annotations

from typing import Any


def _frontend_make_ttir():
    try:
        from ..frontend import make_ttir
    except ImportError as e:  # the frontend is a separate piece of the core
        raise ImportError(f"tritium.frontend.make_ttir is not available: {e}") from e
    return make_ttir


def run_ttir_passes(module: Any) -> Any:
    """The core TTIR pipeline (``tritium.passes.ttir.run_ttir_pipeline``) over ``module``, in place."""
    from ..passes.ttir import run_ttir_pipeline

    out = run_ttir_pipeline(module)
    return module if out is None else out


def make_ttir(src: Any, metadata: dict, options: Any) -> str:
    """Stage ``ttir``: generate TTIR for ``src`` (an ASTSource), run the TTIR passes, return the module's text
    with locations (``loc(...)``), and set ``metadata["name"]``."""
    from ..dialects import make_context

    context = make_context()
    make = _frontend_make_ttir()
    from ..language.target_info import compiling_for

    with context, compiling_for(metadata.get("target"), options):  # tl.target_info answers for the target compiled for
        module = make(src.fn, src.signature, src.constexprs, src.attrs, context)
        module = run_ttir_passes(module)
        text = module.operation.get_asm(enable_debug_info=True)
    metadata["name"] = src.name
    return text
