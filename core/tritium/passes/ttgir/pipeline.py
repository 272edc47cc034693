"""The TTGIR optimisation pipeline: what runs between ``convert_to_ttgir`` and the LLVM lowering, composed of the
core's fragments and the backend's own passes (each backend's ``make_ttgir`` passes them as ``backend_passes``;
Triton's ``make_ttgir`` for what we have, then the analyses its ``make_llir`` runs first)::

    LAYOUTS:  tritium-coalesce, tritium-remove-layout-conversions, tritium-optimize-thread-locality,
              tritium-accelerate-matmul, tritium-remove-layout-conversions, tritium-optimize-dot-operands,
              tritium-fuse-nested-loops, tritium-optimize-accumulator-init
    the backend's passes: cuda tritium-pipeline, tritium-prefetch, tritium-tma-lowering
              (tritium_nvidia.passes); hip tritium-stream-pipeline (tritium_amd.passes)
    CLEANUP:  tritium-cse, tritium-dce, tritium-remove-layout-conversions, tritium-reorder-instructions,
              canonicalize, tritium-ttg-dce
    ANALYSES: tritium-allocation, tritium-membar

``tritium-cse`` / ``tritium-dce`` are the TTIR passes (they merge the ``tt.make_range`` / ``tt.splat`` copies that
rematerialisation leaves); ``tritium-ttg-dce`` also erases dead ``ttg.convert_layout`` ops, which the TTIR DCE
does not know.  Allocation writes ``allocation.offset`` / ``allocation.size`` on ops and ``ttg.shared`` on the
module; membar inserts ``ttg.barrier`` ops.  All of it runs in one MLIR ``PassManager``.
"""
from __future__ import annotations

from tritium.passes.analysis.allocation import allocation_pass
from tritium.passes.analysis.membar import membar_pass
from tritium.passes.ttir.cse import cse_pass
from tritium.passes.ttir.dce import dce_pass
from tritium.passes.ttir.fuse_nested_loops import fuse_nested_loops_pass
from tritium.passes.pass_manager import pass_entry
from ..pass_manager import run_passes
from tritium.passes.ir_helpers import as_op, erase_dead
from .accelerate_matmul import accelerate_matmul_pass
from .coalesce import coalesce_pass
from .optimize_accumulator_init import optimize_accumulator_init_pass
from .optimize_dot_operands import optimize_dot_operands_pass
from .optimize_thread_locality import optimize_thread_locality_pass
from .remove_layout_conversions import remove_layout_conversions_pass
from .reorder_instructions import reorder_instructions_pass


#: unused pure ops erased, ``ttg.convert_layout`` included
ttg_dce_pass = pass_entry("tritium-ttg-dce", erase_dead)

#: layouts: coalescing, conversions, tensor-core layouts, dot operands, loop nests, accumulators
LAYOUTS = (
    ("tritium-coalesce", coalesce_pass),
    ("tritium-remove-layout-conversions", remove_layout_conversions_pass),
    ("tritium-optimize-thread-locality", optimize_thread_locality_pass),
    ("tritium-accelerate-matmul", accelerate_matmul_pass),
    ("tritium-remove-layout-conversions", remove_layout_conversions_pass),
    ("tritium-optimize-dot-operands", optimize_dot_operands_pass),
    ("tritium-fuse-nested-loops", fuse_nested_loops_pass),
    ("tritium-optimize-accumulator-init", optimize_accumulator_init_pass),
)

#: after the backend's passes: the copies rematerialisation left, the last conversions, instruction order
CLEANUP = (
    ("tritium-cse", cse_pass),
    ("tritium-dce", dce_pass),
    ("tritium-remove-layout-conversions", remove_layout_conversions_pass),
    ("tritium-reorder-instructions", reorder_instructions_pass),
    ("canonicalize", "canonicalize"),
    ("tritium-ttg-dce", ttg_dce_pass),
)

#: shared-memory allocation and barriers, last
ANALYSES = (
    ("tritium-allocation", allocation_pass),
    ("tritium-membar", membar_pass),
)


def pipeline(backend_passes: tuple = ()) -> tuple:
    """The whole pass list: ``LAYOUTS``, the backend's ``(name, entry)`` passes, ``CLEANUP``, ``ANALYSES``."""
    return LAYOUTS + tuple(backend_passes) + CLEANUP + ANALYSES


def run_ttgir_pipeline(module, options=None, *, backend_passes: tuple = (), print_ir_after_all: bool = False,
                       timing: bool = False):
    """Optimise a TTGIR ``module`` (the output of ``convert_to_ttgir``) in place with :func:`pipeline`
    (``backend_passes``: the backend's own, between the core's fragments); returns it.

    ``options`` (the backend's options object, may be None) is read for ``print_ir_after_all`` / ``timing``
    flags when present.  The module's ``ttg.num-warps`` / ``ttg.threads-per-warp`` attributes drive the layouts.
    """
    print_ir_after_all = print_ir_after_all or bool(getattr(options, "print_ir_after_all", False))
    timing = timing or bool(getattr(options, "timing", False))
    run_passes(as_op(module), pipeline(backend_passes), print_ir_after_all=print_ir_after_all, timing=timing)
    return module
