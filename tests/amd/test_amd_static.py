"""bench/amd_static.py's reading of an AMDGCN listing: loads / stores by width, the loops (natural loops of the
control-flow graph: a branch up to a label that closes no cycle is not one) and the main loop, on a hand-written
listing and on tritium's own gfx942 output (matmul: one K loop holding every v_mfma; layer norm: three loops)."""
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("amd_static", Path(__file__).resolve().parents[2] / "bench/amd_static.py")
S = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S)

LISTING = """\
k:
\ts_load_dwordx2 s[0:1], s[4:5], 0x0
\tglobal_load_dwordx4 v[0:3], v4, s[0:1]
\tglobal_load_ushort v5, v4, s[0:1]
\tbuffer_load_dword v6, v7, s[8:11], 0 offen
\ts_branch .LBB0_2
.LBB0_1:
\ts_add_u32 s2, s2, 64
\ts_cmp_lg_u32 s2, s3
\ts_cbranch_scc0 .LBB0_4
.LBB0_2:
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\ts_and_saveexec_b64 s[6:7], vcc
\ts_cbranch_execnz .LBB0_5
.LBB0_3:
\ts_or_b64 exec, exec, s[6:7]
\ts_branch .LBB0_1
.LBB0_4:
\tglobal_store_short v4, v5, s[0:1]
\tglobal_store_b128 v4, v[0:3], s[0:1]
\ts_and_saveexec_b64 s[6:7], vcc
\ts_cbranch_execnz .LBB0_6
.LBB0_7:
\ts_endpgm
.LBB0_5:
\tglobal_load_d16_hi_b16 v5, v4, s[0:1]
\ts_branch .LBB0_3
.LBB0_6:
\tglobal_store_dword v4, v5, s[0:1]
\ts_branch .LBB0_7
"""


def test_widths_and_loops_of_a_listing():
    r = S.analyze(LISTING)
    assert (r["global_load"], r["global_store"]) == (4, 3)  # s_load is no global load
    assert {k: v for k, v in r.items() if k.startswith(("global_load_b", "global_store_b"))} == {
        "global_load_b128": 1, "global_load_b16": 2, "global_load_b32": 1,
        "global_store_b16": 1, "global_store_b128": 1, "global_store_b32": 1}
    assert r["widest_global_load_bits"] == 128
    # the rotated loop: its header is .LBB0_2, where the entry jumps in, its latch .LBB0_1 above it; its body
    # includes the out-of-line masked load (.LBB0_5, below the function's end, back up to .LBB0_3); neither
    # .LBB0_3's branch up to .LBB0_1 nor .LBB0_6's up to .LBB0_7 closes a loop of its own
    (loop,) = S.loops(LISTING)
    assert loop["header"] == ".LBB0_2" and loop["mfma"] == 2
    assert loop["instructions"] == 4 + 3 + 2 + 2
    assert (r["loops"], r["main_loop_instructions"], r["main_loop_mfma"]) == (1, 11, 2)


def test_main_loop_choice():
    a, b, c = ({"header": "a", "instructions": 50, "mfma": 0}, {"header": "b", "instructions": 40, "mfma": 8},
               {"header": "c", "instructions": 60, "mfma": 8})
    assert S.main_loop([a, b, c]) is b  # the most MFMAs, the first of equals
    assert S.main_loop([a, {**b, "mfma": 0}]) is a  # no MFMA: the largest
    assert S.main_loop([]) is None


@pytest.mark.parametrize("name,loops,mfma", [("matmul_contig", 1, 32), ("layer_norm", 3, 0)])
def test_tritium_listings(name, loops, mfma):
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_compile import build
    from tests.e2e import kernels as K

    kname, sig, ce, opts, _ = S.WORKLOADS[name]
    aligned = S.divisible_args(sig)
    k = build(getattr(K, kname), sig, attrs={a: {"tt.divisibility": 16} for a in aligned},
              num_warps=opts["num_warps"], options={"num_stages": opts.get("num_stages", 2)}, **ce)
    r = S.analyze(k.asm["amdgcn"])
    assert r["loops"] == loops
    assert r["main_loop_mfma"] == mfma
    assert 0 < r["main_loop_instructions"] < r["instructions"]
    if mfma:  # the K loop holds the matmul's every v_mfma
        assert r["mfma"] == mfma
    else:  # layer norm: the largest of its three loops (normalise and store: the last)
        assert r["main_loop_instructions"] == max(lp["instructions"] for lp in S.loops(k.asm["amdgcn"]))
        assert S.main_loop(S.loops(k.asm["amdgcn"])) is not None
