"""The hip backend's own TTGIR passes, which its ``make_ttgir`` puts between the core's layout fragment and its
cleanup fragment (:func:`tritium.passes.ttgir.pipeline.run_ttgir_pipeline`): the stream pipeliner."""
from __future__ import annotations


def ttgir_passes() -> tuple:
    """``(name, entry)`` pairs, in order (imported when a compile asks for them)."""
    from .stream_pipeline import stream_pipeline_pass

    return (("tritium-stream-pipeline", stream_pipeline_pass),)
