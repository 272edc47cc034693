"""Running a pipeline of passes in one MLIR ``PassManager``: the TTIR and TTGIR pipelines share this.

A pipeline is a sequence of ``(name, entry)``: a str entry is an upstream pass pipeline element
(``"canonicalize"``), a callable a Python pass ``fn(op, pass_)`` that the PassManager runs like any other, so IR
printing, timing and verification apply to all of them.
"""
from __future__ import annotations

from typing import Iterable

from mlir import ir, passmanager

from .ir_helpers import as_op


def pass_entry(name: str, *steps):
    """A Python pass for a pipeline: the ``fn(op, pass_)`` that ``PassManager.add`` runs, calling each of
    ``steps`` (``step(op)``) in order with the op's MLIR context entered; named ``name`` (``tritium-licm``: the
    pipeline's name for it, in printed IR and timings)."""
    def entry(op, pass_=None) -> None:
        with as_op(op).context:
            for step in steps:
                step(op)

    entry.__name__ = entry.__qualname__ = name
    entry.__doc__ = f"The pass {name}: " + ", then ".join(getattr(s, "__name__", repr(s)) for s in steps) + "."
    return entry


def add_passes(pm: passmanager.PassManager, pipeline: Iterable) -> None:
    """Append ``pipeline``'s passes to ``pm`` (a PassManager anchored on ``builtin.module``)."""
    for name, entry in pipeline:
        if isinstance(entry, str):
            pm.add(entry)
        else:
            pm.add(entry, name=name, argument=name)


def run_passes(module, pipeline: Iterable, *, print_ir_after_all: bool = False, timing: bool = False):
    """Run ``pipeline`` over ``module`` (an ``ir.Module`` or its operation) in place, in one PassManager.

    ``print_ir_after_all`` prints the IR after every pass (to stderr); ``timing`` prints pass timings when the pass
    manager is destroyed (end of this call).  Raises ``mlir.ir.MLIRError`` when a pass fails."""
    op = module.operation if hasattr(module, "operation") else module
    with op.context:
        pm = passmanager.PassManager("builtin.module")
        add_passes(pm, pipeline)
        if print_ir_after_all:
            pm.enable_ir_printing(print_after_all=True)
        if timing:
            pm.enable_timing()
        pm.run(op)
        del pm
    return module


__all__ = ["add_passes", "pass_entry", "run_passes", "ir"]
