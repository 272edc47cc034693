"""The TTIR optimisation pipeline.

Order (Triton's ``make_ttir`` with our own passes where upstream ones cannot see tt ops):

    canonicalize, tritium-combine, tritium-reorder-broadcast, tritium-cse, tritium-licm, tritium-dce,
    canonicalize, cse, loop-invariant-code-motion, symbol-dce

then :func:`tritium.dialects.tt.verify_module`.  No inliner: the frontend inlines ``@jit`` callees itself.
Every pass runs inside one MLIR ``PassManager`` (Python passes through ``PassManager.add(callable)``), so
IR printing, timing and the verifier apply to all of them.
"""
from __future__ import annotations

from mlir import ir, passmanager

from tritium.dialects import tt

from .combine import combine_pass
from .cse import cse_pass
from .dce import dce_pass
from .licm import licm_pass
from .reorder_broadcast import reorder_broadcast_pass

# (name, entry) in order: a str is an upstream pass pipeline element, a callable a Python pass.
PIPELINE = (
    ("canonicalize", "canonicalize"),
    ("tritium-combine", combine_pass),
    ("tritium-reorder-broadcast", reorder_broadcast_pass),
    ("tritium-cse", cse_pass),
    ("tritium-licm", licm_pass),
    ("tritium-dce", dce_pass),
    ("canonicalize", "canonicalize"),
    ("cse", "cse"),
    ("loop-invariant-code-motion", "loop-invariant-code-motion"),
    ("symbol-dce", "symbol-dce"),
)


def add_ttir_passes(pm: passmanager.PassManager) -> None:
    """Append the TTIR pipeline to ``pm`` (a PassManager anchored on ``builtin.module``)."""
    for name, entry in PIPELINE:
        if isinstance(entry, str):
            pm.add(entry)
        else:
            pm.add(entry, name=name, argument=name)


def run_ttir_pipeline(module, *, print_ir_after_all: bool = False, timing: bool = False):
    """Optimise a TTIR ``module`` in place and verify it; returns the module.

    ``print_ir_after_all`` prints the IR after every pass (to stderr); ``timing`` prints pass timings when the
    pass manager is destroyed (end of this call).  Raises :class:`tritium.dialects.tt.VerificationError` when
    the result is not valid TTIR, and ``mlir.ir.MLIRError`` when a pass fails.
    """
    op = module.operation if hasattr(module, "operation") else module
    with op.context:
        pm = passmanager.PassManager("builtin.module")
        add_ttir_passes(pm)
        if print_ir_after_all:
            pm.enable_ir_printing(print_after_all=True)
        if timing:
            pm.enable_timing()
        pm.run(op)
        del pm
    tt.verify_module(module)
    return module
