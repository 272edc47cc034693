"""Frontend fuzzing with a fixed seed and a budget CI affords (tests/fuzz/frontend.py; longer campaigns and their
numbers: docs/RELIABILITY.md): every mutated kernel compiles or fails with one of tritium's documented errors --
never another exception type, an "internal error", a hang or a dead worker."""
import pytest

from tests.fuzz.frontend import campaign, summary


def _bad(results):
    return [(name, kind, outcome, src) for name, kind, outcome, src in results
            if not (outcome == "ok" or outcome.startswith("error:"))]


@pytest.mark.campaign
def test_interpreter_frontend_fuzz():
    res = campaign(300, seed=20261124, target="interpreter")
    s = summary(res)
    assert not _bad(res), _bad(res)[:3]
    assert s.get("ok", 0) > 20 and sum(v for k, v in s.items() if k.startswith("error:")) > 100, s


@pytest.mark.campaign
def test_cuda_backend_fuzz_through_ptxas():
    pytest.importorskip("llvmlite")
    res = campaign(120, seed=11, target="cuda:90")  # through the LLVM lowering, llvmlite and ptxas
    assert not _bad(res), _bad(res)[:3]
    assert summary(res).get("ok", 0) > 10


# --- regressions: what the fuzzer found (docs/RELIABILITY.md) ---------------------------------------------------

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.compiler import ASTSource, compile  # noqa: E402
from tritium.errors import CompilationError  # noqa: E402


@triton.jit
def _false_mask_load(X, Y, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols is N  # a Python identity test: the constant False
    tl.store(Y + cols, tl.load(X + cols, mask=mask), mask=mask)


@triton.jit
def _huge_histogram(Y, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.histogram(offs % 8, BINS))


@pytest.mark.parametrize("dt", ["fp16", "fp32", "i32"])
def test_regression_load_under_a_false_mask_without_other(dt):
    """combine folded the load to a zero constant and built a float attribute outside any location: an MLIR
    RuntimeError escaped (seed 7, case 14 of 10000)."""
    k = compile(ASTSource(_false_mask_load, {"X": f"*{dt}", "Y": f"*{dt}", "N": "i32"}, constexprs={"BLOCK": 64}),
                target="interpreter", use_cache=False)
    assert "tt.load" not in k.asm["ttir"] and "tt.store" not in k.asm["ttir"]


def test_regression_histogram_with_more_bins_than_a_tensor_holds():
    """2**63 bins reached MLIR's type parser ('internal error ... invalid dimension')."""
    with pytest.raises(CompilationError, match="TRITON_MAX_TENSOR_NUMEL") as e:
        compile(ASTSource(_huge_histogram, {"Y": "*i32"}, constexprs={"BLOCK": 64, "BINS": 2 ** 63}),
                target="interpreter", use_cache=False)
    assert "internal error" not in str(e.value)


@triton.jit
def _int_fp8_roundtrip(X, Y, Z, BLOCK: tl.constexpr, F8: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    f = x.to(F8)
    tl.store(Y + offs, f)
    tl.store(Z + offs, f.to(tl.int32))


@pytest.mark.parametrize("f8,dt", [("fp8e4nv", "float8e4nv"), ("fp8e5", "float8e5")])
def test_regression_int_to_fp8_casts(f8, dt):
    """int -> fp8 lowered to llvm.sitofp with an i8 result (LLVM has no fp8 type): a LoweringError on cuda (seed 8);
    now through fp32 (the interpreter has no fp8 and says so at the line)."""
    pytest.importorskip("llvmlite")
    sig = {"X": "*i32", "Y": f"*{f8}", "Z": "*i32"}
    ce = {"BLOCK": 64, "F8": getattr(tl, dt)}
    k = compile(ASTSource(_int_fp8_roundtrip, sig, constexprs=ce), target="cuda:90", until="cubin", use_cache=False)
    ptx = k.asm["ptx"]
    assert "cvt.rn.f32.s32" in ptx and "cvt.rn.satfinite" in ptx and "cvt.rzi.s32.f" in ptx
