"""The epilogue of a TMA store computed from accumulators: stored from the accumulators' registers, as Triton does.

Liger-Kernel's fused SwiGLU forward stores ``silu(G) * U`` and ``G`` through tensor descriptors.  Rule 10 of
remove_layout_conversions: a conversion out of an ``nvidia_mma`` layout whose only users store it to shared memory
goes (``local_alloc`` writes any register layout).  Before, ``silu(G) * U`` went mma -> blocked through shared memory
(st.shared + ld.shared), then into the TMA buffer: fp32 at 64x128x64 had 160 st.shared and 64 ld.shared where
Triton 3.6 has 96 and 0 (PTX 1,716 lines against 1,528; ptxas and LLVM time grow with it)."""
import re

import pytest

from tritium.compiler import ASTSource, compile

pytest.importorskip("llvmlite")
pytest.importorskip("torch")  # the kernel is tests/gpu's, whose module needs torch
from tests.gpu.test_liger_patterns_gpu import swiglu_fwd  # noqa: E402  Liger's forward: A, G and U stored


def _swiglu(dt: str, BM: int, BK: int, warps: int, stages: int, BN: int = 128):
    sig = {"x_desc": f"tensordesc<{dt}[1, {BM}, {BK}]>", "wg_desc": f"tensordesc<{dt}[{BN}, {BK}]>",
           "wu_desc": f"tensordesc<{dt}[{BN}, {BK}]>", "a_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>",
           "g_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>", "u_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>",
           "S": "i32", "D": "i32", "H": "i32"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}  # descriptors of aligned tensors: TMA both ways
    return compile(ASTSource(swiglu_fwd, sig, constexprs={"BM": BM, "BN": BN, "BK": BK, "GROUP_M": 1}, attrs=attrs),
                   target="cuda:90", options={"num_warps": warps, "num_stages": stages})


@pytest.mark.parametrize("dt,BM,BK,warps,stages", [("fp32", 64, 64, 4, 2), ("fp16", 64, 64, 4, 3),
                                                   ("bf16", 128, 64, 8, 3), ("fp32", 32, 64, 4, 2)])
def test_accumulator_epilogue_goes_straight_to_the_tma_buffer(dt, BM, BK, warps, stages):
    k = _swiglu(dt, BM, BK, warps, stages)
    ttgir = k.asm["ttgir"]
    converted = set(re.findall(r'(%\w+) = "ttg.convert_layout"', ttgir))
    for stored in re.findall(r'"ttg.local_alloc"\((%\w+)\)', ttgir):
        assert stored not in converted, f"{stored} reaches its local_alloc through a convert_layout"
    ptx = k.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor") >= 2 and "ld.shared" not in ptx.replace("ld.shared::cta.b64", "")
