"""MLIR dialects of tritium: ``tt`` (TTIR) now, ``ttg`` (layouts) with the GPU backends.

Importing this package does not import MLIR; :func:`make_context` does.
"""
from __future__ import annotations


def make_context():
    """A fresh ``mlir.ir.Context`` with the upstream dialects and tt loaded."""
    from mlir import ir

    from . import tt

    ctx = ir.Context()
    tt.load_dialect(ctx)
    return ctx
