"""TTIR optimisation passes, one a file, and the pipeline that runs them.

Each pass module has a function over an op (``cse(root)``, ``dce(root)``, ``licm(root)``, ``combine(root)``,
``reorder_broadcast(root)``) and a ``*_pass(op, pass_)`` entry point for ``PassManager.add``.
"""
from .combine import combine, combine_pass
from .cse import cse, cse_pass
from .dce import dce, dce_pass
from .licm import licm, licm_pass
from .pipeline import PIPELINE, add_ttir_passes, run_ttir_pipeline
from .reorder_broadcast import reorder_broadcast, reorder_broadcast_pass

__all__ = [
    "PIPELINE", "add_ttir_passes", "run_ttir_pipeline",
    "combine", "combine_pass", "cse", "cse_pass", "dce", "dce_pass", "licm", "licm_pass",
    "reorder_broadcast", "reorder_broadcast_pass",
]
