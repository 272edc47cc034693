"""Registers the interpreter backend with tritium's plugin manager (entry point group ``tritium``)."""
from __future__ import annotations

import importlib.util

import pluggy

from tritium.compiler.backend import Backend

hookimpl = pluggy.HookimplMarker("tritium")


def _make_compiler():
    from .compiler import InterpreterCompiler
    return InterpreterCompiler()


def _make_driver():
    from .driver import InterpreterDriver
    return InterpreterDriver()


@hookimpl
def tritium_backends():
    missing = None if importlib.util.find_spec("numpy") is not None else "pip install numpy"
    return [Backend(name="interpreter", priority=0, make_compiler=_make_compiler, make_driver=_make_driver,
                    missing=missing, description="runs kernels on the CPU as vectorised NumPy programs")]
