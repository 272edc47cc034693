"""The epilogue of a TMA store computed from accumulators: stored from the accumulators' registers, as Triton does.

Liger-Kernel's fused SwiGLU forward stores ``silu(G) * U`` and ``G`` through tensor descriptors.  Rule 10 of
remove_layout_conversions: a conversion out of an ``nvidia_mma`` layout whose only users store it to shared memory
goes (``local_alloc`` writes any register layout).  Before, ``silu(G) * U`` went mma -> blocked through shared memory
(st.shared + ld.shared), then into the TMA buffer: fp32 at 64x128x64 had 160 st.shared and 64 ld.shared where
Triton 3.6 has 96 and 0 (PTX 1,716 lines against 1,528; ptxas and LLVM time grow with it)."""
import re

import pytest

import tritium as triton
import tritium.language as tl
from tests.language.test_tensor_descriptor import swiglu_3d_dots
from tritium.compiler import ASTSource, compile

pytest.importorskip("llvmlite")


@triton.jit
def swiglu_agu(x_desc, wg_desc, wu_desc, a_desc, g_desc, u_desc, D, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr):
    """Liger's forward: A = silu(G) * U, G and U, each through its descriptor."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    b = tl.program_id(2)
    acc_g, acc_u = swiglu_3d_dots(x_desc, wg_desc, wu_desc, b, m0, n0, D, BM, BN, BK)
    a = acc_g * tl.sigmoid(acc_g) * acc_u
    a_desc.store([b, m0, n0], tl.reshape(a, [1, BM, BN]).to(a_desc.dtype))
    g_desc.store([b, m0, n0], tl.reshape(acc_g, [1, BM, BN]).to(g_desc.dtype))
    u_desc.store([b, m0, n0], tl.reshape(acc_u, [1, BM, BN]).to(u_desc.dtype))


def _swiglu(dt: str, BM: int, BK: int, warps: int, stages: int, BN: int = 128):
    sig = {"x_desc": f"tensordesc<{dt}[1, {BM}, {BK}]>", "wg_desc": f"tensordesc<{dt}[{BN}, {BK}]>",
           "wu_desc": f"tensordesc<{dt}[{BN}, {BK}]>", "a_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>",
           "g_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>", "u_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>", "D": "i32"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}  # descriptors of aligned tensors: TMA both ways
    return compile(ASTSource(swiglu_agu, sig, constexprs={"BM": BM, "BN": BN, "BK": BK}, attrs=attrs),
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
