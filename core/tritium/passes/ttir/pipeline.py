"""The TTIR optimisation pipeline.

Order (Triton's ``make_ttir`` with our own passes where upstream ones cannot see tt ops)::

    [backend passes], canonicalize, tritium-loop-unroll, tritium-combine, tritium-reorder-broadcast, tritium-cse,
    tritium-licm, tritium-dce, canonicalize, cse, loop-invariant-code-motion, symbol-dce

then :func:`tritium.dialects.tt.verify_module`.  No inliner: the frontend inlines ``@jit`` callees itself.  A
backend puts its own TTIR passes first (the cuda backend: ``tritium-rewrite-tensor-pointer``, as Triton's
``make_ttir`` runs ``rewrite_tensor_pointer`` right after inlining), so the cleanups that follow fold what they
leave.  Every pass runs inside one MLIR ``PassManager`` (:mod:`tritium.passes.pass_manager`).
"""
from __future__ import annotations

from tritium.dialects import tt

from ..pass_manager import add_passes, run_passes
from .combine import combine_pass
from .cse import cse_pass
from .dce import dce_pass
from .licm import licm_pass
from .loop_unroll import loop_unroll_pass
from .reorder_broadcast import reorder_broadcast_pass

# (name, entry) in order: a str is an upstream pass pipeline element, a callable a Python pass.
PIPELINE = (
    ("canonicalize", "canonicalize"),
    ("tritium-loop-unroll", loop_unroll_pass),
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


def add_ttir_passes(pm, backend_passes=()) -> None:
    """Append ``backend_passes`` (``(name, entry)`` pairs) and the TTIR pipeline to ``pm`` (a PassManager anchored
    on ``builtin.module``)."""
    add_passes(pm, tuple(backend_passes) + PIPELINE)


def run_ttir_pipeline(module, *, backend_passes=(), print_ir_after_all: bool = False, timing: bool = False):
    """Optimise a TTIR ``module`` in place (``backend_passes`` first, then :data:`PIPELINE`) and verify it;
    returns the module.

    ``print_ir_after_all`` prints the IR after every pass (to stderr); ``timing`` prints pass timings.  Raises
    :class:`tritium.errors.VerificationError` when the result is not valid TTIR, and ``mlir.ir.MLIRError`` when a
    pass fails.
    """
    run_passes(module, tuple(backend_passes) + PIPELINE, print_ir_after_all=print_ir_after_all, timing=timing)
    tt.verify_module(module)
    return module
