"""Import the compiler's heavy parts (the MLIR bindings, llvmlite and LLVM's targets, tritium's passes and lowering
rules) in a background thread, ahead of the first compile.

A process's first compile otherwise pays about a second or two of imports before any kernel work (measured on
the CPU machine: MLIR 1.1 s, llvmlite 0.6 s of a 3.1 s first compile whose second one took 0.14 s).  Code that
compiles later anyway -- torch.compile, which traces the model for seconds before it asks for the first kernel --
gets those imports for free when they start early: under :func:`tritium.install_as_triton`, the first ``import
triton`` calls :func:`start` (so do Inductor's compile workers).  ``TRITIUM_PREWARM=0`` turns it off.  Failures
are ignored here: the compile that needs the module reports them.

The process waits for the thread at exit (``atexit``): a thread still inside a C++ extension's import when the
interpreter finalises aborts the process.  On the interpreter backend (``TRITON_INTERPRET=1`` /
``TRITIUM_TARGET=interpreter``) LLVM and the GPU backends are not imported.
"""
from __future__ import annotations

import atexit
import importlib
import logging
import os
import threading

log = logging.getLogger(__name__)

#: what a GPU compile imports, in the order it needs them
MODULES = ("mlir.ir", "tritium.dialects", "tritium.frontend.codegen", "tritium.passes.ttir.pipeline")
#: and for a GPU backend
GPU_MODULES = ("tritium.passes.ttgir.pipeline", "tritium.lowering", "tritium.lowering.rules", "tritium.compiler.stages",
               "llvmlite.binding")

_started = False
_lock = threading.Lock()


_thread = None


def _interpreting() -> bool:
    from .._env import is_true

    return is_true(os.environ.get("TRITON_INTERPRET", "")) or \
        os.environ.get("TRITIUM_TARGET", "").strip().lower().startswith("interpreter")


def _work(extra: tuple) -> None:
    gpu = not _interpreting()
    for name in MODULES + (GPU_MODULES + extra if gpu else ()):
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - see the module doc
            log.debug("prewarm: %s: %s", name, e)
    if gpu:
        try:
            from .stages import llvm_binding

            llvm_binding()
        except Exception as e:  # noqa: BLE001
            log.debug("prewarm: llvm targets: %s", e)


def _join_at_exit() -> None:
    t = _thread
    if t is not None and t.is_alive():
        t.join(timeout=60)


def wait(timeout: float = 60.0) -> None:
    """Return once the imports are done (at once when none were started).  :func:`tritium.compiler.cache.triton_key`
    calls it: Inductor's compile-worker process computes the key before it forks its workers ("computing the triton
    key can be slow; before fork, it is cached for the forked subprocesses"), so the workers start with the compiler
    imported -- each one's first kernel no longer pays them -- and no fork happens while this thread holds an
    import lock (a child would wait on it for ever)."""
    t = _thread
    if t is not None and t.is_alive() and t is not threading.current_thread():
        t.join(timeout)


def start(extra: tuple = ("tritium_nvidia.compiler", "tritium_nvidia.passes.pipeline_loops", "tritium_nvidia.passes.prefetch",
                         "tritium_nvidia.lowering", "tritium_nvidia.ptx")) -> bool:
    """Start the imports in a daemon thread (once per process); False when disabled or already started."""
    global _started
    if os.environ.get("TRITIUM_PREWARM", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    global _thread
    with _lock:
        if _started:
            return False
        _started = True
    _thread = threading.Thread(target=_work, args=(extra,), name="tritium-prewarm", daemon=True)
    atexit.register(_join_at_exit)
    _thread.start()
    return True
