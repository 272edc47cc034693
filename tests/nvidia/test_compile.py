"""Compile-only tests of the cuda backend (no GPU): every e2e kernel goes TTIR -> TTGIR -> LLVM IR -> PTX for
sm_90a, and to a cubin when ptxas (the ``nvidia`` extra) is installed."""
import re

import pytest

from tests.e2e import kernels as K
from tritium.compiler import ASTSource, compile

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


F = "*fp32"
D16 = {"tt.divisibility": 16}
CASES = {
    "add": (K.add_kernel, {"x_ptr": F, "y_ptr": F, "output_ptr": F, "n_elements": "i32"}, dict(BLOCK_SIZE=1024)),
    "softmax": (K.softmax_kernel, {"output_ptr": F, "input_ptr": F, "input_row_stride": "i32",
                                   "output_row_stride": "i32", "n_cols": "i32"}, dict(BLOCK_SIZE=1024)),
    "softmax_persistent": (K.softmax_persistent_kernel, {"output_ptr": F, "input_ptr": F, "input_row_stride": "i32",
                                                         "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                           dict(BLOCK_SIZE=256, num_stages=2)),
    "softmax_builtin": (K.softmax_builtin_kernel, {"output_ptr": F, "input_ptr": F, "stride": "i32", "n_cols": "i32"},
                        dict(BLOCK_SIZE=128)),
    "layer_norm": (K._layer_norm_fwd_fused, {"X": F, "Y": F, "W": F, "B": F, "Mean": F, "Rstd": F, "stride": "i32",
                                             "N": "i32", "eps": "fp32"}, dict(BLOCK_SIZE=512)),
    "copy_2d": (K.copy_2d_kernel, {"src": F, "dst": F, "M": "i32", "N": "i32", "stride_sm": "i32", "stride_sn": "i32",
                                   "stride_dm": "i32", "stride_dn": "i32"}, dict(BLOCK_M=32, BLOCK_N=64)),
    "nested": (K.nested_kernel, {"X": F, "Y": F, "n": "i32", "a": "fp32"}, dict(B=2.0, BLOCK=256)),
    "ragged_sum": (K.ragged_sum_kernel, {"X": F, "OFFS": "*i32", "OUT": F}, dict(BLOCK=128)),
    "collatz": (K.collatz_kernel, {"N": "*i32", "OUT": "*i32"}, {}),
    "branch": (K.branch_kernel, {"X": F, "Y": F, "n": "i32"}, dict(BLOCK=256)),
    "grid_2d": (K.grid_2d_kernel, {"OUT": "*i32", "stride": "i32"}, {}),
    "cast": (K.cast_kernel, {"X": F, "Y": "*fp16", "n": "i32"}, dict(BLOCK=256)),
    "int_ops": (K.int_ops_kernel, {"X": "*i32", "Y": "*i32", "OUT": "*i32", "n": "i32"}, dict(BLOCK=256)),
    "tuple_minmax": (K.tuple_minmax_kernel, {"X": F, "OUT": F, "n": "i32"}, dict(BLOCK=256, SCALE=2.0)),
    "device_print": (K.device_print_kernel, {"X": F, "n": "i32"}, dict(BLOCK=32)),
    "atomics": (K.atomic_kernel, {"X": "*i32", "HIST": "*i32", "SUM": "*i32", "MX": "*i32", "n": "i32"},
                dict(NBINS=16, BLOCK=1024)),
}
for _op in ("sum", "max", "min", "argmax", "argmin"):
    for _axis in (0, 1):
        CASES[f"reduce_{_op}_{_axis}"] = (K.reduce_2d_kernel, {"X": F, "OUT": F, "M": "i32", "N": "i32",
                                                               "stride_m": "i32"},
                                          dict(OTHER=0.0, AXIS=_axis, OP=_op, BLOCK_M=16, BLOCK_N=64))
for _fn in ("exp", "log", "sqrt", "rsqrt", "abs", "sin", "cos", "sigmoid", "minmax"):
    CASES[f"math_{_fn}"] = (K.math_kernel, {"X": F, "Y": F, "n": "i32"}, dict(FN=_fn, BLOCK=256))


def _compile(name, num_warps=4, attrs=None):
    fn, sig, ce = CASES[name]
    until = None if _has_ptxas() else "ptx"
    return compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target="cuda:90",
                   options={"num_warps": num_warps}, until=until)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles(name):
    k = _compile(name)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx and f".entry {k.metadata['name']}" in ptx
    assert ".maxntid 128, 1, 1" in ptx
    md = k.metadata
    assert md["num_warps"] == 4 and isinstance(md["shared"], int)
    assert len(md["arg_types"]) == len(CASES[name][1])
    if _has_ptxas():
        assert isinstance(k.asm["cubin"], bytes) and k.asm["cubin"][:4] == b"\x7fELF"
        assert md["n_regs"] > 0
    else:
        pytest.skip("ptxas not installed (pip install 'tritium[nvidia]'): compiled to PTX only")


def test_metadata_arg_types():
    k = _compile("layer_norm")
    assert k.metadata["arg_types"] == ["ptr"] * 6 + ["i32", "i32", "f32"]
    assert k.metadata["target"]["arch"] == 90


def test_vector_add_uses_128_bit_accesses():
    attrs = {n: D16 for n in ("x_ptr", "y_ptr", "output_ptr", "n_elements")}
    k = _compile("add", attrs=attrs)
    ptx = k.asm["ptx"]
    assert ptx.count("ld.global.v4.b32") == 4
    assert ptx.count("st.global.v4.b32") == 2


def test_reductions_use_shuffles_and_shared_memory():
    ptx = _compile("softmax").asm["ptx"]
    assert "shfl.sync.bfly.b32" in ptx
    assert "bar.sync" in ptx and "global_smem" in ptx
    assert "ex2.approx.f32" in ptx  # exp's fast path


def test_libdevice_is_linked_when_needed():
    ptx = _compile("math_sin").asm["ptx"]
    assert "__nv_sinf" not in ptx  # linked in and inlined


def test_ttgir_round_trips():
    from mlir import ir

    from tritium.dialects import make_context

    k = compile(ASTSource(*CASES["reduce_argmax_1"][:2], constexprs=CASES["reduce_argmax_1"][2]),
                target="cuda:90", until="ttgir")
    text = k.asm["ttgir"]
    assert "#ttg.blocked<" in text and "#ttg.slice<" in text and '"ttg.num-warps" = 4' in text
    with make_context():
        m = ir.Module.parse(text)
        assert ir.Module.parse(str(m)).operation.get_asm() == m.operation.get_asm()


def test_num_warps_8():
    k = _compile("softmax", num_warps=8)
    assert ".maxntid 256, 1, 1" in k.asm["ptx"]


@pytest.mark.parametrize("target,ptx_target", [("cuda:80", "sm_80"), ("cuda:90", "sm_90a")])
@pytest.mark.parametrize("name", ["add", "softmax", "layer_norm", "atomics", "cast", "reduce_argmax_1"])
def test_compiles_for_each_arch(name, target, ptx_target):
    fn, sig, ce = CASES[name]
    until = None if _has_ptxas() else "ptx"
    k = compile(ASTSource(fn, sig, constexprs=ce), target=target, options={"num_warps": 4}, until=until)
    ptx = k.asm["ptx"]
    assert f".target {ptx_target}" in ptx
    version = re.search(r"^\.version (\d+)\.(\d+)", ptx, re.M)
    assert version and (int(version.group(1)), int(version.group(2))) >= ((7, 0) if target == "cuda:80" else (8, 0))
    if _has_ptxas():
        assert k.asm["cubin"][:4] == b"\x7fELF"
        assert {"n_regs", "n_spills", "shared"} <= set(k.metadata)
