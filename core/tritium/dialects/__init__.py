"""MLIR dialects of tritium: ``tt`` (TTIR) and ``ttg`` (TTGIR: layouts, shared memory).

Importing this package does not import MLIR; :func:`make_context` does.
"""
from __future__ import annotations


def _python_modules() -> None:
    """Empty ``mlir.dialects.tt`` / ``mlir.dialects.ttg`` modules: the bindings look for a dialect's Python module
    (its op classes) whenever they wrap an op, and cache only a module they found, so without these every op a
    pass touches cost a failed import (about a quarter of a matmul's compile); with them its ops are generic
    ``OpView``s, as before."""
    import sys
    import types

    for name in ("tt", "ttg"):
        sys.modules.setdefault(f"mlir.dialects.{name}", types.ModuleType(f"mlir.dialects.{name}"))


def make_context():
    """A fresh ``mlir.ir.Context`` with the upstream dialects, tt and ttg loaded."""
    from mlir import ir

    from . import tt, ttg

    _python_modules()
    ctx = ir.Context()
    tt.load_dialect(ctx)
    ttg.load_dialect(ctx)
    return ctx
