"""MLIR dialects of tritium: ``tt`` (TTIR) and ``ttg`` (TTGIR: layouts, shared memory).

Importing this package does not import MLIR; :func:`make_context` does.
"""
from __future__ import annotations


def make_context():
    """A fresh ``mlir.ir.Context`` with the upstream dialects, tt and ttg loaded."""
    from mlir import ir

    from . import tt, ttg

    ctx = ir.Context()
    tt.load_dialect(ctx)
    ttg.load_dialect(ctx)
    return ctx
