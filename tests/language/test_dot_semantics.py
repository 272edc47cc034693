"""tl.dot's result type rules (Triton 3.6's): int32 for integer operands, fp32 for fp32 / bf16 operands whatever
out_dtype says, out_dtype for fp16 / fp8 operands; out_dtype=bfloat16 refused; an accumulator of another type
refused at its line."""
import re

import pytest

import tritium
import tritium.language as tl
from tritium.dialects import make_context
from tritium.errors import CompilationError
from tritium.frontend import make_ttir

pytest.importorskip("mlir.ir")


@tritium.jit
def _dot(X, Y, Z, OUT: tl.constexpr, ACC: tl.constexpr):
    r = tl.arange(0, 16)
    x = tl.load(X + r[:, None] * 16 + r[None, :])
    y = tl.load(Y + r[:, None] * 16 + r[None, :])
    if ACC:
        z = tl.dot(x, y, tl.zeros((16, 16), dtype=ACC), out_dtype=OUT)  # the dot
    else:
        z = tl.dot(x, y, out_dtype=OUT)  # the dot
    tl.store(Z + r[:, None] * 16 + r[None, :], z.to(Z.dtype.element_ty))


def _ttir(dt, out, acc=None):
    return make_ttir(_dot, {"X": f"*{dt}", "Y": f"*{dt}", "Z": "*fp32"}, {"OUT": out, "ACC": acc}, {},
                     make_context()).operation.get_asm()


@pytest.mark.parametrize("dt, out, want", [
    ("fp16", tl.float32, "f32"), ("fp16", tl.float16, "f16"),
    ("fp32", tl.float16, "f32"), ("bf16", tl.float16, "f32"),
    ("i8", tl.float32, "i32"), ("fp8e4nv", tl.float16, "f16"),
])
def test_result_type(dt, out, want):
    text = _ttir(dt, out)
    assert re.search(rf'"tt.dot".*-> tensor<16x16x{want}>', text), text


def test_bfloat16_out_dtype_is_refused_at_the_line():
    with pytest.raises(CompilationError) as e:
        _ttir("fp16", tl.bfloat16)
    assert "out_dtype=bfloat16 is unsupported" in str(e.value)
    assert "the dot" in str(e.value)  # the source line is shown


def test_accumulator_of_another_type_is_refused():
    with pytest.raises(CompilationError) as e:
        _ttir("fp16", tl.float32, acc=tl.float16)
    assert "accumulator must be fp32" in str(e.value) and "out_dtype=fp16" in str(e.value)
    # with out_dtype=fp16 the fp16 accumulator is what Triton wants
    assert re.search(r'"tt.dot".*-> tensor<16x16xf16>', _ttir("fp16", tl.float16, acc=tl.float16))


@pytest.mark.parametrize("arch, want", [(90, 2 ** 30), (89, 0)])
def test_fp8_imprecise_accumulation_default_is_tritons(arch, want):
    # Triton's default for fp8 dots: all of K in Hopper's reduced-precision accumulator on sm_90, none elsewhere
    from tritium.compiler import ASTSource, compile

    k = compile(ASTSource(_dot, {"X": "*fp8e4nv", "Y": "*fp8e4nv", "Z": "*fp32"}, {"OUT": tl.float32, "ACC": None}),
                target=f"cuda:{arch}", until="ttir", use_cache=False)
    assert f"maxNumImpreciseAcc = {want} : i32" in k.asm["ttir"]


@tritium.jit
def _dot_imprecise(X, Y, Z, M: tl.constexpr):
    r = tl.arange(0, 16)
    x = tl.load(X + r[:, None] * 16 + r[None, :])
    y = tl.load(Y + r[:, None] * 16 + r[None, :])
    tl.store(Z + r[:, None] * 16 + r[None, :], tl.dot(x, y, max_num_imprecise_acc=M))


def test_fp8_imprecise_accumulation_beyond_k_is_refused():
    ctx = make_context()
    sig = {"X": "*fp8e4nv", "Y": "*fp8e4nv", "Z": "*fp32"}
    assert "maxNumImpreciseAcc = 16 : i32" in make_ttir(_dot_imprecise, sig, {"M": 16}, {}, ctx).operation.get_asm()
    with pytest.raises(CompilationError) as e:
        make_ttir(_dot_imprecise, sig, {"M": 32}, {}, make_context())
    assert "max_num_imprecise_acc (32) must be <= K (16)" in str(e.value)
