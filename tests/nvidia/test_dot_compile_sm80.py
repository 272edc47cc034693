"""The tutorial-style dot kernels of tests/e2e/kernels.py compiled for sm_80 without a GPU: tensor-core dots on
``mma.sync`` (FMA for ``ieee`` fp32), operands through ``ldmatrix``, ``cp.async`` pipelining when num_stages > 1,
and a cubin; fp8 (sm_89 instructions) refused with the reason.  (sm_90: tests/nvidia/test_gpu_suite_compiles.py
compiles every GPU test kernel; results on a device: tests/gpu/test_dot_gpu.py.)"""
import os

import pytest

pytest.importorskip("mlir.ir")

os.environ.setdefault("BENCH_IMPL", "tritium")

import tritium  # noqa: E402
from tritium.compiler import ASTSource  # noqa: E402
from tritium.errors import TritiumError  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402

D16 = {"tt.divisibility": 16}


def _mm(dt, out, stages=3, precision=None, arch=80, warps=4):
    sig = {"a_ptr": f"*{dt}", "b_ptr": f"*{dt}", "c_ptr": f"*{out}", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
           "stride_cn": "i32"}
    cx = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "stride_ak": 1,
          "stride_bn": 1, "stride_cn": 1, "INPUT_PRECISION": precision}
    attrs = {k: D16 for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    return tritium.compile(ASTSource(K.matmul_kernel, sig, cx, attrs), target=f"cuda:{arch}",
                           options={"num_stages": stages, "num_warps": warps}, use_cache=False)


def _is_cubin(k):
    return k.asm["cubin"][:4] == b"\x7fELF"


@pytest.mark.parametrize("dt, out, instr", [
    ("fp16", "fp16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("bf16", "bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("fp32", "fp32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("i8", "i32", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
])
@pytest.mark.parametrize("stages", [1, 3])
def test_tutorial_matmul_on_mma_sync(dt, out, instr, stages):
    k = _mm(dt, out, stages)
    ptx = k.asm["ptx"]
    assert instr in ptx and ".target sm_80" in ptx and _is_cubin(k)
    assert "ldmatrix.sync.aligned.m8n8.x4" in ptx
    assert ("cp.async.cg.shared.global" in ptx) == (stages > 1)
    assert "wgmma" not in ptx


def test_ieee_fp32_takes_fma():
    ptx = _mm("fp32", "fp32", precision="ieee").asm["ptx"]
    assert "mma.sync" not in ptx and "fma.rn.f32" in ptx


def test_tf32x3_is_three_mmas_per_tile():
    one = _mm("fp32", "fp32", stages=1).asm["ptx"].count("mma.sync")
    three = _mm("fp32", "fp32", stages=1, precision="tf32x3").asm["ptx"].count("mma.sync")
    assert three == 3 * one


@pytest.mark.parametrize("precision, products", [("bf16x3", 3), ("bf16x6", 6)])
@pytest.mark.parametrize("arch, instr", [(80, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
                                         (90, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")])
def test_bf16x3_bf16x6_run_on_bf16_tensor_cores(precision, products, arch, instr):
    """fp32 dots asking for bf16x3 / bf16x6 are split into 3 / 6 bf16 dots (tritium-f32-dot-tc), each on bf16
    tensor cores: as many bf16 instructions per tile as plain bf16 operands take, times the products, and no
    tf32 or FMA dot left."""
    k = _mm("fp32", "fp32", stages=1, precision=precision, arch=arch, warps=4)
    ref = _mm("bf16", "fp32", stages=1, arch=arch, warps=4)
    ptx, op = k.asm["ptx"], instr.split(".")[0]
    assert instr in ptx and "tf32" not in ptx and "fma.rn.f32" not in ptx
    assert ptx.count(instr) == products * ref.asm["ptx"].count(instr) > 0
    ttir = k.asm["ttir"]
    assert ttir.count('"tt.dot"') == products and "bf16" in ttir and op in ptx


def test_fp8_needs_sm89():
    with pytest.raises(TritiumError) as e:
        _mm("fp8e4nv", "fp16")
    assert "sm_89" in str(e.value) and "sm_80" in str(e.value)
    k = _mm("fp8e4nv", "fp16", arch=89)
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" in k.asm["ptx"] and _is_cubin(k)


def test_batched_and_3d_dots():
    sig = {n: "i32" for n in ("BATCH", "M", "N", "K", "stride_az", "stride_am", "stride_bz", "stride_bk", "stride_cz",
                              "stride_cm")}
    sig.update({"A": "*fp16", "B": "*fp16", "C": "*fp32"})
    cx = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_B": 4, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}
    k = tritium.compile(ASTSource(K.dot3d_kernel, sig, cx, {"A": D16, "B": D16, "C": D16}), target="cuda:80",
                        use_cache=False)
    # a rank-3 mma layout (warps on M and N first, the batch in registers)
    assert "mma.sync.aligned.m16n8k16" in k.asm["ptx"] and "#ttg.nvidia_mma<2 : i32, array<i32: 1, 2, 2>" in \
        k.asm["ttgir"] and _is_cubin(k)


def test_fused_attention():
    import inspect

    params = list(inspect.signature(K._attn_fwd.fn).parameters)
    types = ["*fp16", "*fp16", "*fp16", "fp32", "*fp32", "*fp16"] + ["i32"] * 19
    sig = dict(zip(params, types))
    cx = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "STAGE": 3}
    for p in ("stride_qk", "stride_kk", "stride_vn", "stride_on"):
        cx[p] = 1
        sig.pop(p)
    attrs = {p: D16 for p, t in sig.items() if t != "fp32"}
    k = tritium.compile(ASTSource(K._attn_fwd, sig, cx, attrs), target="cuda:80",
                        options={"num_stages": 3, "num_warps": 4}, use_cache=False)
    ptx = k.asm["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k16") >= 2 and "cp.async" in ptx and _is_cubin(k)
    # the online softmax's running max / sum and the accumulator are carried in the MMA layout (rule 7 of
    # remove_layout_conversions): no conversion through shared memory inside either inner loop; p reaches the
    # second dot by a register-only conversion, q is read into registers once before the loops
    ttgir = k.asm["ttgir"]
    loops = ttgir.split("scf.for")[1:]
    assert len(loops) == 2
    for body in loops:
        body = body[:body.index("scf.yield")]
        convs = [ln for ln in body.splitlines() if '"ttg.convert_layout"' in ln]
        assert len(convs) == 1 and "allocation.offset" not in convs[0]
        assert "-> tensor<128x64xf16, #ttg.dot_op<0" in convs[0]
        assert '"tt.reduce"' in body and "slice<1 : i32, #ttg.nvidia_mma<2" in body
        assert body.count('"ttg.local_alloc"') == 0  # K and V arrive by cp.async, q is not stored again
    assert k.metadata["n_spills"] < 128  # 4 warps at 255 registers: a few spills (20-80 bytes as codegen moves)
