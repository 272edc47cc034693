"""Inductor's looped reductions and scans compiled for cuda:90, as Triton compiles them (tests/gpu's kernels of
``test_inductor_reductions_gpu.py``, launched there against torch).

* A looped ``cumsum`` scans each block in the layout it was loaded in (rule 5 of remove_layout_conversions sinks a
  conversion through ``tt.scan``); the running total it adds is a ``[XBLOCK, 1]`` carried by the loop, whose
  conversions between layouts move nothing (one element: every thread holds it).  Before, each block crossed
  shared memory twice (loaded layout -> scan layout -> store layout): 2 x 8 KB and 4 barriers per iteration.
* A reduction over 8 or 16 warps with a costly combine (Inductor's arg-max with its NaN and tie rules, a Welford
  step: 14 operations) combines the warps' partials with a butterfly, 3-4 shuffle steps; a sum or a max still
  reads every partial and combines them in a chain (``reduce_partials = "auto"``)."""
import re

import pytest

from tritium.compiler import ASTSource, compile

pytest.importorskip("llvmlite")
pytest.importorskip("torch")  # the kernels are tests/gpu's, whose module needs torch
from tests.gpu.test_inductor_reductions_gpu import looped_argmax, looped_cumsum, welford_layer_norm  # noqa: E402

SIG = {"in_ptr": "*fp32", "out_ptr": "*fp32", "xnumel": "i32"}
ALIGNED = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}


def _compile(fn, sig, rn, xb, rb, nw, until="ptx"):
    return compile(ASTSource(fn, {**sig, "rnumel": "constexpr", "XBLOCK": "constexpr", "RBLOCK": "constexpr"},
                             constexprs={"rnumel": rn, "XBLOCK": xb, "RBLOCK": rb}, attrs=ALIGNED),
                   target="cuda:90", options={"num_warps": nw}, until=until)


def _converts(ttgir: str) -> list:
    """The shapes of the ``ttg.convert_layout`` ops of a TTGIR text."""
    return re.findall(r'"ttg.convert_layout"\(%\S+\)(?: \{[^}]*\})? : \(tensor<([0-9x]+)x', ttgir)


@pytest.mark.parametrize("rn,rb,nw", [(4096, 2048, 16), (3072, 1024, 8), (1024, 256, 4)])
def test_looped_cumsum_scans_in_the_loaded_layout(rn, rb, nw):
    """One row per program (``XBLOCK = 1``: Inductor's choice for long rows).  With ``XBLOCK = 2`` the running total
    is a ``[2, 1]``, whose conversion would move data: the block still goes through the scan layout there."""
    k = _compile(looped_cumsum, SIG, rn, 1, rb, nw)
    shapes = _converts(k.asm["ttgir"])
    assert all(s in ("1x1", "1") for s in shapes), shapes  # only the running total's, which move no data
    ptx = k.asm["ptx"]
    assert re.search(r"ld\.global\.\S*v[24]\.b32", ptx) and re.search(r"st\.global\.\S*v[24]\.b32", ptx)  # vectors
    if nw == 16:  # 4096 / 2048: 4 barriers (8 with the two conversions), 8 shared loads (25)
        assert ptx.count("bar.sync") <= 4 and ptx.count("ld.shared") <= 8


def test_argmax_over_sixteen_warps_combines_partials_with_a_butterfly():
    sig = {"in_ptr": "*fp32", "out_ptr": "*i32", "xnumel": "i32"}
    ptx = _compile(looped_argmax, sig, 4096, 1, 2048, 16).asm["ptx"]
    # within the warp: 5 butterfly steps of (value, index); across the 16 warps: 4 more (one partial per lane)
    assert ptx.count("shfl.sync.bfly.b32") == 2 * (5 + 4)
    few = _compile(looped_argmax, sig, 4096, 1, 512, 4).asm["ptx"]  # 4 warps: the chain is no longer
    assert few.count("shfl.sync.bfly.b32") == 2 * 5


def test_welford_over_sixteen_warps_combines_partials_with_a_butterfly():
    sig = {"in_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "xnumel": "i32"}
    ptx = _compile(welford_layer_norm, sig, 4096, 1, 2048, 16).asm["ptx"]
    assert ptx.count("shfl.sync.bfly.b32") == 3 * (5 + 4)  # mean, m2, weight


def test_sum_over_sixteen_warps_keeps_the_chain():
    """A cheap combine: every thread reads every partial (vector loads) and adds them, no cross-warp shuffles."""
    ptx = _compile(looped_cumsum, SIG, 4096, 1, 2048, 16).asm["ptx"]
    assert "ld.shared.v4.b32" in ptx


def test_one_element_conversions_do_not_ping_pong(monkeypatch):
    """A conversion of a one-element tensor is left where it is: rules 4 and 5 would move it above its producer and
    back below it for ever (the sweeps ran out at 50, and the loop rules 6 and 7, which run once the others are done,
    never ran: the arg-max's load was still converted in its loop)."""
    import tritium.passes.ttgir.remove_layout_conversions as R

    sweeps = []
    step = R._Rewriter.step
    monkeypatch.setattr(R._Rewriter, "step", lambda self: sweeps.append(1) or step(self))
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(__import__("tempfile").mkdtemp()))
    sig = {"in_ptr": "*fp32", "out_ptr": "*i32", "xnumel": "i32"}
    k = _compile(looped_argmax, sig, 4096, 1, 2048, 16, until="ttgir")
    assert len(sweeps) < 30, len(sweeps)  # three runs of the pass in the pipeline
    assert all(s in ("1x1", "1") for s in _converts(k.asm["ttgir"])), _converts(k.asm["ttgir"])
