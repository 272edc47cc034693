"""Compile-only tests (no GPU) of tl.extra.cuda's globaltimer, smid, num_warps / num_threads, gdc_wait /
gdc_launch_dependents and convert_custom_float8_sm70/sm80: each kernel of tests/nvidia/cuda_utils_kernels.py goes
to PTX and a cubin for cuda:90; the special registers and griddepcontrol appear in the PTX; gdc on sm_80 is a
CompilationError."""
import re

import pytest

import tritium.language as tl
from tests.nvidia import cuda_utils_kernels as K
from tritium.compiler import ASTSource, compile
from tritium.errors import CompilationError

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def build(fn, sig, num_warps=4, target="cuda:90", **ce):
    k = compile(ASTSource(fn, sig, constexprs=ce), target=target, options={"num_warps": num_warps},
                until=None if _has_ptxas() else "ptx")
    ptx = k.asm["ptx"]
    assert f".entry {k.metadata['name']}" in ptx
    if _has_ptxas():
        assert k.asm["cubin"][:4] == b"\x7fELF"
    return k


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_info(num_warps):
    k = build(K.info_k, {"O": "*i32"}, num_warps)
    ptx = k.asm["ptx"]
    assert re.search(r"mov\.u32\s+%r\d+, %smid;", ptx)
    # num_warps() and num_threads() are constants in the stores
    ttir = k.asm["ttir"]
    assert f"arith.constant {num_warps} : i32" in ttir and f"arith.constant {num_warps * 32} : i32" in ttir


def test_globaltimer():
    k = build(K.timer_k, {"X": "*fp32", "T": "*i64", "n": "i32"}, BLOCK=128, STEPS=5)
    ptx = k.asm["ptx"]
    assert len(re.findall(r"mov\.u64\s+%rd\d+, %globaltimer;", ptx)) == 2  # before the loop and in it
    k = build(K.timer_elapsed_k, {"O": "*i64"}, SPIN=4)
    assert k.asm["ptx"].count("%globaltimer") == 5  # never merged: each read stays


def test_gdc():
    k = build(K.gdc_k, {"X": "*fp32", "Y": "*fp32", "n": "i32"}, BLOCK=512)
    ptx = k.asm["ptx"]
    assert "griddepcontrol.wait;" in ptx and "griddepcontrol.launch_dependents;" in ptx
    assert ptx.index("griddepcontrol.wait") < ptx.index("ld.global") < ptx.index("griddepcontrol.launch_dependents")
    k = build(K.gdc_launch_k, {"X": "*i32"})
    assert "griddepcontrol.launch_dependents;" in k.asm["ptx"]


@pytest.mark.parametrize("fn,sig", [(K.gdc_k, {"X": "*fp32", "Y": "*fp32", "n": "i32"}), (K.gdc_launch_k, {"X": "*i32"})])
def test_gdc_needs_sm90(fn, sig):
    ce = {"BLOCK": 128} if fn is K.gdc_k else {}
    with pytest.raises(CompilationError, match="sm_90") as e:
        compile(ASTSource(fn, sig, constexprs=ce), target="cuda:80", until="ttir")
    assert "cuda_utils_kernels.py" in str(e.value)


@pytest.mark.parametrize("sm80", [True, False])
@pytest.mark.parametrize("dst,ot", [(tl.float16, "*fp16"), (tl.float32, "*fp32")])
def test_fp8_upcast(sm80, dst, ot):
    k = build(K.fp8_up_k, {"X": "*u8", "O": ot, "n": "i32"}, BLOCK=1024, DST=dst, SM80=sm80)
    assert "prmt.b32" in k.asm["ptx"]


@pytest.mark.parametrize("sm80", [True, False])
@pytest.mark.parametrize("xt", ["*fp16", "*fp32"])
def test_fp8_downcast(sm80, xt):
    k = build(K.fp8_down_k, {"X": xt, "O": "*u8", "n": "i32"}, BLOCK=1024, SM80=sm80)
    ptx = k.asm["ptx"]
    assert ("min.f16x2" in ptx) == sm80 and ("min.u16" in ptx) == (not sm80)
    assert "prmt.b32" in ptx
    if xt == "*fp32":
        assert "cvt.rz.f16.f32" in ptx


@pytest.mark.parametrize("sm80", [True, False])
def test_fp8_and_timers_on_sm80(sm80):
    build(K.fp8_down_k, {"X": "*fp16", "O": "*u8", "n": "i32"}, BLOCK=1024, SM80=sm80, target="cuda:80")
    build(K.fp8_up_k, {"X": "*u8", "O": "*fp32", "n": "i32"}, BLOCK=1024, DST=tl.float32, SM80=sm80, target="cuda:80")
    k = build(K.info_k, {"O": "*i32"}, target="cuda:80")
    assert "%smid" in k.asm["ptx"]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "fma", "scalar", "where"])
@pytest.mark.parametrize("f8", ["fp8e4nv", "fp8e5"])
def test_fp8_arithmetic_computes_in_f32(f8, op):
    """PTX has no fp8 arithmetic: the operands go through cvt.rn.f16x2.{e4m3x2,e5m2x2} to f32, the op runs in f32
    and the result is rounded back with cvt.rn.satfinite (division's result is fp32: Triton promotes /)."""
    pytest.importorskip("torch")
    from tests.interpreter.test_fp8 import arith

    out = "fp32" if op == "div" else f8
    k = build(arith, {"X": f"*{f8}", "Y": f"*{f8}", "Z": f"*{out}", "N": "i32"}, OP=op, BLOCK=256)
    ptx = k.asm["ptx"]
    name = {"fp8e4nv": "e4m3x2", "fp8e5": "e5m2x2"}[f8]
    assert f"cvt.rn.f16x2.{name}" in ptx
    assert (f"cvt.rn.satfinite.{name}.f32" in ptx) == (op != "div")
