"""Compile-only tests (no GPU) of the rules for tt.scan, tt.histogram, tt.gather, block pointers, fp8 casts,
non-splat constants and inline asm: each kernel goes to PTX for sm_90a, and to a cubin when ptxas exists."""
import re

import pytest

from tests.nvidia import extra_kernels as K
from tritium.compiler import ASTSource, compile

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def _check(k, n_args=None):
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx and f".entry {k.metadata['name']}" in ptx
    if n_args is not None:
        assert len(k.metadata["arg_types"]) == n_args
    if _has_ptxas():
        assert k.asm["cubin"][:4] == b"\x7fELF"
    return ptx


def build(fn, sig, num_warps=4, **ce):
    until = None if _has_ptxas() else "ptx"
    return compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", options={"num_warps": num_warps},
                   until=until)


def build_ttir(text, num_warps=4):
    until = None if _has_ptxas() else "ptx"
    return compile(text, target="cuda:90", options={"num_warps": num_warps}, until=until)


F = "*fp32"


# ------------------------------------------------------------------ scans
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("block,num_warps", [(16, 4), (128, 4), (256, 4), (1024, 4), (2048, 8), (64, 1)])
def test_cumsum_1d(block, num_warps, reverse):
    k = build(K.cumsum_1d, {"X": F, "Y": F, "n": "i32"}, num_warps, BLOCK=block, REVERSE=reverse)
    ptx = _check(k, 3)
    assert "shfl.sync.idx.b32" in ptx or block <= 1


@pytest.mark.parametrize("dtype", ["*i32", "*fp16", "*i64", "*fp64"])
def test_cumsum_dtypes(dtype):
    _check(build(K.cumsum_1d, {"X": dtype, "Y": dtype, "n": "i32"}, BLOCK=512, REVERSE=False), 3)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("bm,bn", [(32, 64), (64, 16), (8, 256)])
def test_cumsum_2d(axis, reverse, bm, bn):
    k = build(K.cumsum_2d, {"X": F, "Y": F, "stride": "i32"}, BM=bm, BN=bn, AXIS=axis, REVERSE=reverse)
    _check(k, 3)


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_tuple_noncommutative(reverse):
    _check(build(K.affine_scan, {"A": F, "B": F, "OA": F, "OB": F}, BLOCK=512, REVERSE=reverse), 4)


@pytest.mark.parametrize("axis", [0, 1])
def test_associative_scan_custom_2d(axis):
    _check(build(K.cummax_2d, {"X": "*i32", "Y": "*i32", "stride": "i32"}, BM=64, BN=32, AXIS=axis), 3)


def test_scan_uses_shared_memory_only_across_warps():
    k1 = build(K.cumsum_1d, {"X": F, "Y": F, "n": "i32"}, 1, BLOCK=1024, REVERSE=False)
    assert "bar.sync" not in k1.asm["ptx"] and "barrier" not in k1.asm["ptx"]
    k4 = build(K.cumsum_1d, {"X": F, "Y": F, "n": "i32"}, 4, BLOCK=1024, REVERSE=False)
    assert k4.metadata["shared"] > 0


# ------------------------------------------------------------------ block pointers
def test_block_ptr_copy_loop():
    k = build(K.block_ptr_copy, {"X": F, "Y": F, "M": "i32", "N": "i32", "sxm": "i32", "sxn": "i32", "sym": "i32",
                                 "syn": "i32"}, BM=32, BN=64, SCALE=2.0)
    assert "make_tensor_ptr" not in k.asm["ttir"] and "tt.advance" not in k.asm["ttir"]
    _check(k, 8)


def test_block_ptr_rowsum_and_nan_padding():
    _check(build(K.block_ptr_rowsum, {"X": F, "OUT": F, "M": "i32", "N": "i32", "sxm": "i32"}, BM=16, BN=64), 5)
    k = build(K.block_ptr_1d_nan, {"X": F, "Y": F, "n": "i32"}, BLOCK=256)
    assert "0x7FC00000" in k.asm["ttir"].upper() or "nan" in k.asm["ttir"].lower()
    _check(k, 3)


# ------------------------------------------------------------------ fp8
@pytest.mark.parametrize("src", ["*fp32", "*fp16", "*bf16"])
@pytest.mark.parametrize("fp8,name", [("fp8e4nv", "e4m3"), ("fp8e5", "e5m2")])
def test_fp8_casts(src, fp8, name):
    import tritium.language as tl

    k = build(K.fp8_roundtrip, {"X": src, "Y8": "*" + fp8, "Y": src, "n": "i32"}, FP8=getattr(tl, {
        "fp8e4nv": "float8e4nv", "fp8e5": "float8e5"}[fp8]), BLOCK=256)
    ptx = _check(k, 4)
    assert f"cvt.rn.satfinite.{name}x2.f32" in ptx and f"cvt.rn.f16x2.{name}x2" in ptx


@pytest.mark.parametrize("fp8", ["*fp8e4nv", "*fp8e5"])
def test_fp8_load(fp8):
    _check(build(K.fp8_load, {"X8": fp8, "Y": F, "n": "i32"}, BLOCK=1024), 3)


# ------------------------------------------------------------------ hand-written TTIR (extra_kernels)
ttir = K.ttir
HIST, GATHER, CONST, ASM, ASM2 = K.HIST, K.GATHER, K.CONST, K.ASM, K.ASM2


def test_histogram():
    k = build_ttir(HIST)
    ptx = _check(k, 2)
    assert "atom.shared.add" in ptx or "red.shared.add" in ptx


def test_gather():
    _check(build_ttir(GATHER), 3)


def test_non_splat_constant():
    ptx = _check(build_ttir(CONST), 1)
    assert re.search(r"\.global \.align 16 \.b8 tritium_const_\w+\[32\]", ptx), ptx[:2000]


def test_inline_asm_packed():
    ptx = _check(build_ttir(ASM), 2)
    assert "xor.b32" in ptx and "0x01010101" in ptx


def test_inline_asm_two_results():
    ptx = _check(build_ttir(ASM2), 2)
    assert "mul.f32" in ptx


def test_extern_elementwise_libdevice():
    text = ttir("""
    %v = "tt.load"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>} : (!tt.ptr<f32>) -> f32
    %w = "tt.extern_elementwise"(%v) {libname = "libdevice", libpath = "", symbol = "__nv_erfinvf", pure = true, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
    "tt.store"(%o, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<f32>, f32) -> ()
""", "%x: !tt.ptr<f32>, %o: !tt.ptr<f32>")
    ptx = _check(build_ttir(text), 2)
    assert "__nv_erfinvf" not in ptx or ".func" in ptx
