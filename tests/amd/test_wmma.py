"""AMD RDNA3 WMMA (``#ttg.amd_wmma`` and its ``#ttg.dot_op`` operands, ``v_wmma_f32_16x16x16_{f16,bf16}`` on gfx11,
wave32), checked without an AMD GPU: the element-to-lane maps against the RDNA3 ISA's description of ``v_wmma``
(D matrix of a 32-bit result: lane ``l`` holds column ``l % 16`` and rows ``2 * r + l // 16`` in its 8 registers;
A / B sources: lane ``l`` gives row / column ``l % 16`` and all 16 K in its registers, lanes 16-31 the same as
lanes 0-15), coverage, attributes, the lowering's instruction schedule run on a NumPy model of the instruction
against ``A @ B`` (fp16 values), and the tutorial matmul compiled for gfx1100 (Triton 3.6's gfx1100 output has
``#ttg.amd_wmma<{version = 1, isTranspose = true, warpsPerCTA = [2, 2]}>`` and calls
``<8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<16 x half>, <16 x half>, <8 x float>)``)."""
import re

import numpy as np
import pytest

from tritium.dialects import layouts
from tritium.dialects.layouts import AmdWmmaLayout, DotOperandLayout

from tests.nvidia.test_layouts import _check_bijection


def isa_d(lane: int, r: int) -> tuple:
    """(row, column) of register ``r`` of ``lane`` in the D matrix of ``v_wmma_f32_16x16x16_*`` (wave32)."""
    return 2 * r + lane // 16, lane % 16


@pytest.mark.parametrize("transposed", [0, 1])
def test_accumulator_is_isa_d_layout(transposed):
    lay = AmdWmmaLayout(1, (1, 1), transposed)
    ll = lay.linear((16, 16))
    assert ll.num_regs == lay.tile_regs == 8 and ll.num_lanes == 32
    for lane in range(32):
        want = [isa_d(lane, r) for r in range(8)]
        if transposed:
            want = [(c, r) for r, c in want]
        assert ll.elements(0, lane) == want
    # lanes 0-15 hold the even rows, 16-31 the odd ones
    assert {r for ln in range(16) for r, _ in ll.elements(0, ln)} == set(range(0, 16, 2)) or transposed


def test_operands_are_isa_sources_replicated_across_half_waves():
    parent = AmdWmmaLayout(1, (1, 1))
    a = DotOperandLayout(0, parent, 16).linear((16, 16))
    b = DotOperandLayout(1, parent, 16).linear((16, 16))
    for lane in range(32):
        assert a.elements(0, lane) == [(lane % 16, k) for k in range(16)]
        assert b.elements(0, lane) == [(k, lane % 16) for k in range(16)]


def test_warps_run_along_n_then_m_and_tiles_repeat():
    lay = AmdWmmaLayout(1, (2, 2))
    ll = lay.linear((64, 64))
    assert ll.index(0, 0, 1) == (0, 16) and ll.index(0, 0, 2) == (16, 0)
    assert ll.index(8) == (0, 32) and ll.index(16) == (32, 0) and ll.num_regs == 32


@pytest.mark.parametrize("lay, shape", [
    (AmdWmmaLayout(1, (2, 2)), (64, 64)),
    (AmdWmmaLayout(1, (4, 1), 1), (128, 32)),
    (AmdWmmaLayout(1, (2, 2)), (16, 16)),  # warps beyond the tensor hold copies
    (AmdWmmaLayout(1, (1, 2, 2), 1), (4, 32, 32)),
    (DotOperandLayout(0, AmdWmmaLayout(1, (2, 2), 1), 16), (64, 32)),
    (DotOperandLayout(1, AmdWmmaLayout(1, (2, 2)), 16), (64, 32)),
])
def test_coverage_and_uniform_replication(lay, shape):
    _check_bijection(lay, shape)


def test_attribute_round_trip_and_checks():
    lay = AmdWmmaLayout(1, (2, 2), 1)
    assert lay.to_str() == "#ttg.amd_wmma<1 : i32, array<i32: 2, 2>, 1 : i32>"
    assert layouts.parse_layout(lay.to_str()) == lay
    op = DotOperandLayout(0, lay, 16)
    assert layouts.parse_layout(op.to_str()) == op
    pytest.importorskip("mlir")
    from mlir import ir

    from tritium.dialects import ttg

    with ir.Context() as ctx:
        ttg.load_dialect(ctx)
        assert layouts.from_attr(op.to_attr(ctx)) == op
    with pytest.raises(ValueError, match="version"):
        AmdWmmaLayout(2, (2, 2))
    with pytest.raises(ValueError, match="k_width 16"):
        DotOperandLayout(0, lay, 8).linear((16, 16))


# ------------------------------------------------------------------------------------------ the lowering's schedule

def _simulate(c_lay, shape_a, shape_b, seed=0):
    """Run the lowering's ``wmma_schedule`` on a NumPy model of ``v_wmma_f32_16x16x16_f16``: every lane's registers
    from the layouts (fp16 values), each instruction's A / B assembled from what the lanes give (checking that
    both half-waves give the same, as the ISA requires), D scattered back to the lanes' registers (the ISA's D
    layout), accumulated in f32; returns (result by the layout, A @ B + C in f32)."""
    pytest.importorskip("mlir")
    from tritium_amd.lowering.dot import wmma_schedule

    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape_a).astype(np.float16)
    B = rng.standard_normal(shape_b).astype(np.float16)
    C = rng.standard_normal(shape_a[:-1] + shape_b[-1:]).astype(np.float32)
    a_ll = DotOperandLayout(0, c_lay, 16).linear(tuple(shape_a))
    b_ll = DotOperandLayout(1, c_lay, 16).linear(tuple(shape_b))
    c_ll = c_lay.linear(tuple(C.shape))
    sched = wmma_schedule(c_ll, a_ll, b_ll, shape_a[-1])
    got = np.full(C.shape, np.nan, dtype=np.float32)
    n_instr = 0
    for w in range(c_ll.num_warps):
        regs = {name: [[M[i] for i in ll.elements(w, ln)] for ln in range(32)]
                for name, M, ll in (("a", A, a_ll), ("b", B, b_ll), ("c", C, c_ll))}
        out = [list(r) for r in regs["c"]]
        for r0, steps in sched:
            if isinstance(steps, int):
                for ln in range(32):
                    out[ln][r0:r0 + 8] = out[ln][steps:steps + 8]
                continue
            D = np.zeros((16, 16), dtype=np.float32)
            for ln in range(32):
                for r in range(8):
                    D[isa_d(ln, r)] = out[ln][r0 + r]
            for ra, rb in steps:
                x, y = ("a", ra), ("b", rb)
                if c_lay.is_transposed:
                    x, y = y, x
                src = [np.array([regs[s][ln][r:r + 16] for ln in range(32)]) for s, r in (x, y)]
                for s in src:  # the two half-waves give the same sources
                    np.testing.assert_array_equal(s[:16], s[16:])
                IA, IB = src[0][:16], src[1][:16].T  # A: lane = row, B: lane = column
                D = IA.astype(np.float32) @ IB.astype(np.float32) + D
                n_instr += 1
            for ln in range(32):
                for r in range(8):
                    out[ln][r0 + r] = D[isa_d(ln, r)]
        for ln in range(32):
            for r, v in enumerate(out[ln]):
                got[c_ll.index(r, ln, w)] = v
    return got, A.astype(np.float32) @ B.astype(np.float32) + C, n_instr


@pytest.mark.parametrize("lay, sa, sb", [
    (AmdWmmaLayout(1, (2, 2), 1), (64, 32), (32, 64)),  # the compiler's choice: transposed
    (AmdWmmaLayout(1, (2, 2), 0), (64, 64), (64, 32)),
    (AmdWmmaLayout(1, (4, 1), 1), (64, 16), (16, 16)),
    (AmdWmmaLayout(1, (2, 2), 1), (16, 32), (32, 16)),  # replicated tiles (warps beyond the tensor)
    (AmdWmmaLayout(1, (2, 1, 2), 1), (4, 16, 32), (4, 32, 32)),  # batched (3-D)
])
def test_schedule_on_isa_model_computes_the_product(lay, sa, sb):
    got, want, n = _simulate(lay, sa, sb)
    assert n > 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------ compiled for gfx1100

def wmmas(asm: str) -> list:
    return re.findall(r"^\s*(v_wmma_\w+)", asm, re.M)


@pytest.mark.parametrize("dt, out, instr, intrinsic", [
    ("fp16", "fp32", "v_wmma_f32_16x16x16_f16", "wmma.f32.16x16x16.f16"),
    ("bf16", "fp32", "v_wmma_f32_16x16x16_bf16", "wmma.f32.16x16x16.bf16"),
    ("i8", "i32", "v_wmma_i32_16x16x16_iu8", "wmma.i32.16x16x16.iu8"),
])
def test_tutorial_matmul_on_wmma(dt, out, instr, intrinsic):
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_compile import check_code_object
    from tests.amd.test_mfma_compile import matmul

    k, sig = matmul(dt, out, "gfx1100", bm=64, bn=64, bk=32)
    asm = k.asm["amdgcn"]
    got = wmmas(asm)
    # a 64x64 tile on 4 waves (2 x 2): four 16x16 tiles per wave, BLOCK_K / 16 = 2 K steps each
    assert set(got) == {instr} and len(got) == 4 * 32 // 16
    assert not re.search(r"^\s*v_mfma", asm, re.M)
    assert "#ttg.amd_wmma<1 : i32, array<i32: 2, 2>, 1 : i32>" in k.asm["ttgir"]
    assert f"llvm.amdgcn.{intrinsic}" in k.asm["llir"]
    if dt == "i8":  # signed A and B (tl.int8): the iu8 instruction's neg_lo bits 0 and 1, no clamp
        assert all(re.search(r"neg_lo:\[1,1,0\]", ln) and "clamp" not in ln for ln in asm.splitlines()
                   if "v_wmma" in ln)
    check_code_object(k, sig, "gfx1100")  # wave32, kernargs, no spills, ELF
    assert k.metadata["wavefront_size"] == 32 and k.metadata["max_flat_workgroup_size"] == 128


def test_f16_accumulator_is_computed_in_f32():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    import tritium.language as tl
    from tests.amd.test_compile import build, check_code_object
    from tests.amd.test_mfma_compile import DOT_SIG
    from tests.e2e import kernels as K

    sig = {**DOT_SIG, "C": "*fp16", "Z": "*fp16"}
    k = build(K.dot_kernel, sig, "gfx1100", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, ADD_ACC=True, INPUT_PRECISION=None,
              OUT_DTYPE=tl.float16)
    assert set(wmmas(k.asm["amdgcn"])) == {"v_wmma_f32_16x16x16_f16"}
    assert re.search(r"arith\.truncf %\w+ : tensor<64x64xf32, #ttg\.amd_wmma", k.asm["ttgir"])
    check_code_object(k, sig, "gfx1100")


def test_batched_and_3d_dots():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_compile import build, check_code_object
    from tests.amd.test_mfma_compile import BMM_SIG, D16
    from tests.e2e import kernels as K

    k = build(K.batched_matmul_kernel, BMM_SIG, "gfx1100", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    assert len(wmmas(k.asm["amdgcn"])) == 4 * 2  # 64x64 on 4 waves: four 16x16 tiles each, 2 K steps
    check_code_object(k, BMM_SIG, "gfx1100")
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "BATCH": "i32", "M": "i32", "N": "i32", "K": "i32",
           **{f"stride_{n}": "i32" for n in ("az", "am", "ak", "bz", "bk", "bn", "cz", "cm", "cn")}}
    k = build(K.dot3d_kernel, sig, "gfx1100", attrs={"A": D16, "B": D16, "C": D16}, BLOCK_B=4, BLOCK_M=32,
              BLOCK_N=32, BLOCK_K=16)
    assert re.search(r"#ttg\.amd_wmma<1 : i32, array<i32: \d, \d, \d>, 1 : i32>", k.asm["ttgir"])
    assert wmmas(k.asm["amdgcn"])
    check_code_object(k, sig, "gfx1100")


def test_fused_attention_forward():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_compile import build
    from tests.amd.test_mfma_compile import ATTN_SIG
    from tests.e2e import kernels as K

    k = build(K._attn_fwd, ATTN_SIG, "gfx1100", options={"num_stages": 1}, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64,
              STAGE=3)
    got = wmmas(k.asm["amdgcn"])
    # q @ k^T and p @ v (128x64, K 64) on 4 waves of 32 rows: 2 x 4 tiles x 4 K steps x 2 dots x 2 stages
    assert len(got) == 128 and set(got) == {"v_wmma_f32_16x16x16_f16"}
    assert "#ttg.amd_wmma<1 : i32, array<i32: 4, 1>, 1 : i32>" in k.asm["ttgir"]  # chained: waves along M
    assert k.metadata["wavefront_size"] == 32  # (spills: 128x64 blocks are too big for wave32 VGPRs, as Triton's)


def test_fp32_and_small_dots_keep_fma_on_gfx1100():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_mfma_compile import matmul

    k, _ = matmul("fp32", "fp32", "gfx1100", bm=64, bn=64, bk=32)
    assert "amd_wmma" not in k.asm["ttgir"] and not re.search(r"^\s*v_wmma", k.asm["amdgcn"], re.M)
