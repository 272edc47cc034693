"""``tt.dot`` on AMD matrix cores, compiled without an AMD GPU: the e2e dot kernels (the tutorial matmul per dtype,
one-shot dots with an accumulator and ``out_dtype``, batched 2-D and 3-D dots, the fused-attention forward) go to
hsaco for gfx942 (CDNA3) and gfx90a (CDNA2) (gfx950 where its instructions differ) with ``v_mfma`` in the AMDGCN:
the instruction of the dtype and arch, as many per tile as the tile needs, no spills; what MFMA cannot do keeps
the FMA path (fp64; RDNA's dots: tests/amd/test_wmma.py), an fp8 format the arch does not have is upcast to f16 for the f16 instruction."""
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.amd.test_compile import build, check_code_object  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402

D16 = {"tt.divisibility": 16}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
          "stride_cn": "i32"}
MM_ATTRS = {k: D16 for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}


def matmul(dt, out, arch, bm=128, bn=128, bk=32, warps=4):
    sig = {**MM_SIG, "a_ptr": f"*{dt}", "b_ptr": f"*{dt}", "c_ptr": f"*{out}"}
    k = build(K.matmul_kernel, sig, arch, num_warps=warps, attrs=MM_ATTRS, options={"num_stages": 2},
              BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, INPUT_PRECISION=None)
    return k, sig


def mfmas(asm: str) -> list:
    return re.findall(r"^\s*(v_mfma_\w+)", asm, re.M)


#: (dtype, out, arch, instruction, K of one instruction)
MATMULS = [
    ("fp16", "fp32", "gfx942", "v_mfma_f32_32x32x8_f16", 8),
    ("bf16", "fp32", "gfx942", "v_mfma_f32_32x32x8_bf16", 8),
    ("fp32", "fp32", "gfx942", "v_mfma_f32_32x32x2_f32", 2),
    ("i8", "i32", "gfx942", "v_mfma_i32_32x32x16_i8", 16),
    ("fp8e4b8", "fp32", "gfx942", "v_mfma_f32_32x32x16_fp8_fp8", 16),
    ("fp8e5b16", "fp32", "gfx942", "v_mfma_f32_32x32x16_bf8_bf8", 16),
    ("fp16", "fp32", "gfx90a", "v_mfma_f32_32x32x8f16", 8),
    ("bf16", "fp32", "gfx90a", "v_mfma_f32_32x32x8bf16_1k", 8),
    ("fp32", "fp32", "gfx90a", "v_mfma_f32_32x32x2f32", 2),
    ("i8", "i32", "gfx90a", "v_mfma_i32_32x32x8i8", 8),
    ("fp16", "fp32", "gfx950", "v_mfma_f32_32x32x16_f16", 16),
    ("bf16", "fp32", "gfx950", "v_mfma_f32_32x32x16_bf16", 16),
    ("fp8e4nv", "fp32", "gfx950", "v_mfma_f32_32x32x16_fp8_fp8", 16),
    ("fp8e5", "fp32", "gfx950", "v_mfma_f32_32x32x16_bf8_bf8", 16),
]


@pytest.mark.parametrize("dt, out, arch, instr, ik", MATMULS)
def test_tutorial_matmul_on_mfma(dt, out, arch, instr, ik):
    k, sig = matmul(dt, out, arch)
    asm = k.asm["amdgcn"]
    got = mfmas(asm)
    # a 128x128 tile on 4 waves (2 x 2): four 32x32 tiles per wave, BLOCK_K / K steps each, in the loop body
    assert set(got) == {instr} and len(got) == 4 * 32 // ik
    assert "#ttg.amd_mfma<" in k.asm["ttgir"] and "llvm.amdgcn.mfma." in k.asm["llir"]
    assert "ds_read" in asm  # the operands reach the dot_op layout through LDS
    if arch != "gfx950":  # (the wave64 checks of tests/amd/test_compile.py know gfx942 / gfx90a / gfx1100)
        check_code_object(k, sig, arch)


def test_small_tiles_take_16x16():
    k, _ = matmul("fp16", "fp32", "gfx942", bm=16, bn=16, bk=32, warps=1)
    assert set(mfmas(k.asm["amdgcn"])) == {"v_mfma_f32_16x16x16_f16"}
    assert "array<i32: 16, 16>" in k.asm["ttgir"]


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_what_mfma_cannot_do_takes_fma(arch):
    k, _ = matmul("fp64", "fp64", arch, bm=32, bn=32, bk=16)
    asm = k.asm["amdgcn"]
    assert not mfmas(asm) and re.search(r"v_(pk_)?fmac?_f(32|64)", asm) and "amd_mfma" not in k.asm["ttgir"]


def test_rdna_has_no_mfma():
    # (RDNA3 fp16 dots go to v_wmma: tests/amd/test_wmma.py)
    k, _ = matmul("fp16", "fp32", "gfx1100", bm=32, bn=32, bk=32)
    assert not mfmas(k.asm["amdgcn"]) and "amd_mfma" not in k.asm["ttgir"]


@pytest.mark.parametrize("dt, arch, instr", [("fp8e4nv", "gfx942", "v_mfma_f32_32x32x8_f16"),
                                             ("fp8e5", "gfx942", "v_mfma_f32_32x32x8_f16"),
                                             ("fp8e4b8", "gfx90a", "v_mfma_f32_32x32x8f16"),
                                             ("fp8e4b8", "gfx950", "v_mfma_f32_32x32x16_f16")])
def test_fp8_format_the_arch_lacks_is_upcast_to_f16(dt, arch, instr):
    """As Triton's AMD backend: fp8 operands without a v_mfma of their own on the arch are converted to f16 (exact)
    and multiplied by the f16 instruction."""
    k, _ = matmul(dt, "fp32", arch)
    got = mfmas(k.asm["amdgcn"])
    assert set(got) == {instr} and len(got) == 4 * 32 // (16 if arch == "gfx950" else 8)
    ttgir = k.asm["ttgir"]
    assert len(re.findall(r'"tt\.fp_to_fp"\(%\w+\) : \(tensor<\w+xf8\w+, [^\n]*-> tensor<\w+xf16', ttgir)) == 2
    assert re.search(r'"tt\.dot"\(%\w+, %\w+, %\w+\)[^\n]*: \(tensor<128x32xf16', ttgir)


DOT_SIG = {"X": "*fp16", "Y": "*fp16", "C": "*fp32", "Z": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           **{f"stride_{n}": "i32" for n in ("xm", "xk", "yk", "yn", "cm", "cn", "zm", "zn")}}


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
@pytest.mark.parametrize("dt, acc, out_dtype", [("fp16", "fp32", "float32"), ("bf16", "fp32", "float32"),
                                                ("i8", "i32", "int32")])
def test_dot_kernel_with_accumulator(arch, dt, acc, out_dtype):
    import tritium.language as tl

    sig = {**DOT_SIG, "X": f"*{dt}", "Y": f"*{dt}", "C": f"*{acc}", "Z": f"*{acc}"}
    k = build(K.dot_kernel, sig, arch, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, ADD_ACC=True, INPUT_PRECISION=None,
              OUT_DTYPE=getattr(tl, out_dtype))
    assert len(mfmas(k.asm["amdgcn"])) > 0
    check_code_object(k, sig, arch)


BMM_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           **{f"stride_{n}": "i32" for n in ("az", "am", "ak", "bz", "bk", "bn", "cz", "cm", "cn")}}


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_batched_matmul(arch):
    k = build(K.batched_matmul_kernel, BMM_SIG, arch, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    assert len(mfmas(k.asm["amdgcn"])) == 32 // 8  # 64x64 on 4 waves: one 32x32 tile each, 4 K steps
    check_code_object(k, BMM_SIG, arch)


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_3d_dot(arch):
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "BATCH": "i32", "M": "i32", "N": "i32", "K": "i32",
           **{f"stride_{n}": "i32" for n in ("az", "am", "ak", "bz", "bk", "bn", "cz", "cm", "cn")}}
    k = build(K.dot3d_kernel, sig, arch, attrs={"A": D16, "B": D16, "C": D16}, BLOCK_B=4, BLOCK_M=32, BLOCK_N=32,
              BLOCK_K=16)
    assert re.search(r"#ttg\.amd_mfma<\d : i32, array<i32: \d, \d, \d>, array<i32: 1, 32, 32>", k.asm["ttgir"])
    assert mfmas(k.asm["amdgcn"])
    check_code_object(k, sig, arch)


ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16",
            **{f"stride_{t}{d}": "i32" for t, dims in (("q", "zhmk"), ("k", "zhnk"), ("v", "zhkn"), ("o", "zhmn"))
               for d in dims},
            "Z": "i32", "H": "i32", "N_CTX": "i32"}


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_fused_attention_forward(arch):
    k = build(K._attn_fwd, ATTN_SIG, arch, options={"num_stages": 1}, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64,
              STAGE=3)
    got = mfmas(k.asm["amdgcn"])
    # q @ k^T (128x64, K 64) and p @ v (128x64, K 64) on 4 waves, 32 rows each, in each of the two stages:
    # 2 tiles x 8 K steps x 2 dots x 2 stages
    assert len(got) == 64 and set(got) == {"v_mfma_f32_32x32x8_f16" if arch == "gfx942" else "v_mfma_f32_32x32x8f16"}
    assert "array<i32: 4, 1>" in k.asm["ttgir"]  # the chained dots put every wave along M
    check_code_object(k, ATTN_SIG, arch)
    # q, used by the dots of both causal loops, is stored once: 16 KiB of q (+ 512 bytes of an exchange), so two
    # work-groups fit a CU's 64 KiB (occupancy 2, as Triton)
    allocs = re.findall(r'"ttg\.local_alloc"\((%\w+)\)', k.asm["ttgir"])
    assert len(allocs) == 1 + 2 * 2, allocs  # q once, k and v in each loop
    assert k.metadata["shared"] <= 32 * 1024 and k.metadata["occupancy"] == 2


@pytest.mark.parametrize("nonkdim, instr, n", [(16, "v_mfma_f32_16x16x16_f16", 16 * 2),
                                             (32, "v_mfma_f32_32x32x8_f16", 4 * 4)])
def test_matrix_instr_nonkdim_forces_the_instruction(nonkdim, instr, n):
    k = build(K.matmul_kernel, MM_SIG, "gfx942", attrs=MM_ATTRS, options={"matrix_instr_nonkdim": nonkdim},
              BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, INPUT_PRECISION=None)
    got = mfmas(k.asm["amdgcn"])
    # 64x64 per wave: 16 tiles of 16x16 x 2 K steps, or 4 tiles of 32x32 x 4 K steps
    assert set(got) == {instr} and len(got) == n
    check_code_object(k, MM_SIG, "gfx942")


def test_matrix_instr_nonkdim_is_checked():
    with pytest.raises(Exception, match="matrix_instr_nonkdim"):
        build(K.matmul_kernel, MM_SIG, "gfx942", attrs=MM_ATTRS, options={"matrix_instr_nonkdim": 8},
              BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, INPUT_PRECISION=None)


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_epilogue_stores_from_the_mfma_registers(arch):
    # Triton's AMD OptimizeEpilogue: the pointers and the mask are rematerialised in the MFMA layout, so the result
    # is stored from its registers (no conversion through LDS)
    k, _ = matmul("fp16", "fp16", arch)
    ttgir = k.asm["ttgir"]
    assert "ttg.convert_layout" not in ttgir
    store = next(l for l in ttgir.splitlines() if '"tt.store"' in l)
    assert "#ttg.amd_mfma<" in store
