"""The cuda backend's own TTGIR passes, which its ``make_ttgir`` puts between the core's layout fragment and its
cleanup fragment (:func:`tritium.passes.ttgir.pipeline.run_ttgir_pipeline`): the ``cp.async`` / TMA software
pipeliner, the ``mma.sync`` operand prefetch, and the lowering of TMA descriptor loads / stores."""
from __future__ import annotations


def ttgir_passes() -> tuple:
    """``(name, entry)`` pairs, in order (imported when a compile asks for them)."""
    from .pipeline_loops import pipeline_loops_pass
    from .prefetch import prefetch_pass
    from .tma_lowering import tma_lowering_pass

    return (("tritium-pipeline", pipeline_loops_pass), ("tritium-prefetch", prefetch_pass),
            ("tritium-tma-lowering", tma_lowering_pass))
