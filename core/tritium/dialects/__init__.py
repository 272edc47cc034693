"""MLIR dialects of tritium: ``tt`` (TTIR) and ``ttg`` (TTGIR: layouts, shared memory).

Importing this package does not import MLIR; :func:`make_context` does.
"""
from __future__ import annotations

import threading


def _python_modules() -> None:
    """Empty ``mlir.dialects.tt`` / ``mlir.dialects.ttg`` modules: the bindings look for a dialect's Python module
    (its op classes) whenever they wrap an op, and cache only a module they found, so without these every op a
    pass touches cost a failed import (about a quarter of a matmul's compile); with them its ops are generic
    ``OpView``s, as before."""
    import sys
    import types

    for name in ("tt", "ttg"):
        sys.modules.setdefault(f"mlir.dialects.{name}", types.ModuleType(f"mlir.dialects.{name}"))


#: compiles a thread's context serves before it is replaced by a fresh one: uniqued types and attributes (locations
#: above all) accumulate in a context, and this bounds them in a process that compiles kernels for hours
CONTEXT_REUSE = 256

_local = threading.local()


def make_context():
    """An ``mlir.ir.Context`` with the upstream dialects, tt and ttg loaded: one per thread, shared by the compiles
    of that thread (a module lives in it until dropped), and replaced every ``CONTEXT_REUSE`` uses.  Creating one
    registers every upstream dialect and loads tt and ttg from IRDL: about 5 ms, a fifth of a small kernel's
    whole compile on the interpreter.  (These bindings keep no per-context map of live operations, so a module
    dropped from a shared context leaves nothing behind that a later compile could meet.)"""
    ctx, uses = getattr(_local, "ctx", None), getattr(_local, "uses", 0)
    if ctx is None or uses >= CONTEXT_REUSE:
        ctx, uses = fresh_context(), 0
        _local.ctx = ctx
    _local.uses = uses + 1
    return ctx


def fresh_context():
    """A new ``mlir.ir.Context`` of its own, with the upstream dialects, tt and ttg loaded."""
    from mlir import ir

    from . import tt, ttg

    _python_modules()
    ctx = ir.Context()
    tt.load_dialect(ctx)
    ttg.load_dialect(ctx)
    return ctx
