"""The thread-locality pass in the cuda TTGIR pipeline (core/tritium/passes/ttgir/optimize_thread_locality.py):
a reduction in a loop folded into a loop-carried accumulator keeps only its thread-local part in the loop, the
reduction across threads runs once after it (Triton's ``test_optimize_thread_locality``: two ``tt.reduce`` in
the TTGIR).  What the rewritten TTGIR computes is checked on the interpreter: its layouts dropped, the module
runs as TTIR (row-major reshapes, reductions) against NumPy.  Values on a GPU: tests/gpu/test_thread_locality_gpu.py.
"""
import re

import numpy as np
import pytest
from mlir import ir

from tritium.compiler import ASTSource, compile
from tritium.compiler.ir_source import IRSource
from tritium.dialects import make_context
from tritium.passes.ir_helpers import walk

from . import thread_locality_kernels as K

pytest.importorskip("llvmlite")

D16 = {"tt.divisibility": 16}
ALIGNED = {"X": D16, "Y": D16, "N": D16}  # what the launcher specialises for torch tensors and N = 512, 1024, ...
UNALIGNED = {"X": D16, "Y": D16}  # N not a multiple of 16: loads of one element per thread along N

FLOAT_INIT = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}
INT_INIT = {"sum": 0, "max": -2 ** 31, "min": 2 ** 31 - 1}


def _sig(dtype, n=2):
    t = {"float32": "fp32", "int32": "i32"}[dtype]
    return {"X": "*" + t, "Y": "*" + t, "N": "i32"} if n == 2 else {"X": "*" + t, "Y": "*" + t, "Z": "*" + t,
                                                                   "N": "i32"}


def _init(op, dtype):
    return (FLOAT_INIT if dtype == "float32" else INT_INIT)[op]


def _compile(fn, sig, ce, attrs, until="ttgir", num_warps=4):
    return compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target="cuda:90",
                   options={"num_warps": num_warps}, until=until)


def _loop_body(text):
    m = re.search(r"scf\.for", text)
    depth, i = 0, text.index("{", m.end())
    start = i
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
        i += 1


def _op_lines(text, name):
    return [ln for ln in text.splitlines() if f'"{name}"(' in ln]


def _without_layouts(ttgir: str) -> str:
    """The TTGIR module as TTIR: conversions and barriers dropped, every tensor type without its encoding."""
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(ttgir)
        for op in reversed(walk(m.operation)):
            if op.name == "ttg.convert_layout":
                op.results[0].replace_all_uses_with(op.operands[0])
                op.erase()
            elif op.name == "ttg.barrier":  # membar's, around shared-memory scratch
                op.erase()

        def bare(t):
            if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
                return ir.RankedTensorType.get(list(t.shape), t.element_type)
            return t

        for op in walk(m.operation):
            for r in op.results:
                r.set_type(bare(r.type))
            for region in op.regions:
                for block in region.blocks:
                    for a in block.arguments:
                        a.set_type(bare(a.type))
            if op.name == "arith.constant" and isinstance(op.results[0].type, ir.RankedTensorType):
                splat = ir.DenseElementsAttr(op.attributes["value"]).get_splat_value()
                op.attributes["value"] = ir.DenseElementsAttr.get_splat(op.results[0].type, splat)
        return str(m)


def _reference(x, op, init, block_n, num_pid_n):
    m, n = x.shape
    fold = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
    out = np.full((m, num_pid_n), init, dtype=x.dtype)
    for j in range(-(-n // block_n)):
        red = {"sum": np.sum, "max": np.max, "min": np.min}[op](x[:, j * block_n:(j + 1) * block_n], axis=1)
        out[:, j % num_pid_n] = fold(out[:, j % num_pid_n], red.astype(x.dtype))
    return out


def _run_interpreted(ttgir, x, num_pid_n, tmp_path, block_m=32):
    k = compile(IRSource(tmp_path / "kernel.ttir", _without_layouts(ttgir)), target="interpreter")
    y = np.zeros((x.shape[0] * num_pid_n,), x.dtype)
    k[(x.shape[0] // block_m, num_pid_n, 1)](x, y, x.shape[1])
    return y.reshape(x.shape[0], num_pid_n)


def _input(dtype, m, n, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.standard_normal((m, n)).astype(np.float32)
    return rng.integers(-1000, 1000, (m, n)).astype(np.int32)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("block_n", [32, 64, 128])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_two_reductions_thread_local_in_the_loop(op, block_n, dtype):
    ce = {"BLOCK_M": 32, "BLOCK_N": block_n, "OP": op, "INIT": _init(op, dtype)}
    text = _compile(K.accumulate_reduce, _sig(dtype), ce, ALIGNED).asm["ttgir"]
    assert text.count('"tt.reduce"') == 2  # Triton's assertion
    body = _loop_body(text)
    (view,) = _op_lines(body, "tt.reshape")
    (local,) = _op_lines(body, "tt.reduce")
    # the view renames registers and the in-loop reduction stays in the thread: neither needs shared memory
    assert "allocation." not in view and "allocation." not in local
    assert "axis = 2 : i32" in local and f"32x{block_n // 4}x4x" in view
    assert '"ttg.convert_layout"' not in body


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_the_loop_has_no_shuffle_or_barrier(op):
    ce = {"BLOCK_M": 32, "BLOCK_N": 128, "OP": op, "INIT": FLOAT_INIT[op]}
    ptx = _compile(K.accumulate_reduce, _sig("float32"), ce, ALIGNED, until="ptx").asm["ptx"]
    loops = []
    for m in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ptx):
        label = m.group(1) + ":"
        start = ptx.find(label)
        if 0 <= start < m.start():
            loops.append(ptx[start:m.start()])
    assert loops and any("ld.global" in b for b in loops)
    for b in loops:
        assert "shfl.sync" not in b and "bar.sync" not in b
    assert "shfl.sync" in ptx  # after the loop


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("op,block_n,n,num_pid_n", [
    ("sum", 32, 512, 2), ("sum", 128, 2048, 4), ("max", 64, 1024, 2), ("max", 128, 512, 4), ("min", 32, 1024, 4),
    ("min", 64, 2048, 2),
])
def test_rewritten_ttgir_computes_the_same(op, block_n, n, num_pid_n, dtype, tmp_path):
    init = {"sum": 5, "max": 3, "min": -3}[op]  # any constant: it is combined in after the loop
    ce = {"BLOCK_M": 32, "BLOCK_N": block_n, "OP": op, "INIT": float(init) if dtype == "float32" else init}
    text = _compile(K.accumulate_reduce, _sig(dtype), ce, ALIGNED).asm["ttgir"]
    assert text.count('"tt.reduce"') == 2
    x = _input(dtype, 64, n, seed=block_n + n)
    got = _run_interpreted(text, x, num_pid_n, tmp_path)
    want = _reference(x, op, init, block_n, num_pid_n)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("block_n,view", [(256, "32x2x128x"), (512, "32x4x128x")])
def test_repetitions_reduced_in_the_loop(op, block_n, view, tmp_path):
    # N of unknown alignment: one element per thread and repetition along N, 2 / 4 repetitions a thread: the
    # in-loop reduction runs over the repetitions ([M, R, N/R], axis 1)
    neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[op]
    ce = {"BLOCK_M": 32, "BLOCK_N": block_n, "OP": op, "INIT": FLOAT_INIT[op], "NEUTRAL": neutral}
    text = _compile(K.accumulate_reduce_masked, _sig("float32"), ce, UNALIGNED).asm["ttgir"]
    assert text.count('"tt.reduce"') == 2
    body = _loop_body(text)
    (reshape,) = _op_lines(body, "tt.reshape")
    (local,) = _op_lines(body, "tt.reduce")
    assert view in reshape and "axis = 1 : i32" in local and "allocation." not in local
    x = _input("float32", 32, 1000, seed=block_n)
    got = _run_interpreted(text, x, 2, tmp_path)
    np.testing.assert_allclose(got, _reference(x, op, FLOAT_INIT[op], block_n, 2), rtol=1e-4, atol=1e-4)


def test_one_element_per_thread_is_left_alone():
    # unaligned N, BLOCK_N 64 over 32 lanes x 4 warps: a thread holds one element of a row
    ce = {"BLOCK_M": 32, "BLOCK_N": 64, "OP": "sum", "INIT": 0.0, "NEUTRAL": 0.0}
    text = _compile(K.accumulate_reduce_masked, _sig("float32"), ce, UNALIGNED).asm["ttgir"]
    assert text.count('"tt.reduce"') == 1 and '"tt.reshape"' not in text


@pytest.mark.parametrize("case", ["seen", "mixed", "computed", "loaded_init"])
def test_other_loops_are_left_alone(case):
    ce = {"BLOCK_M": 32, "BLOCK_N": 128, "CASE": case}
    text = _compile(K.accumulate_reduce_other, _sig("float32", 3), ce, {**ALIGNED, "Z": D16}).asm["ttgir"]
    assert text.count('"tt.reduce"') == 1 and '"tt.reshape"' not in text
    assert len(_op_lines(_loop_body(text), "tt.reduce")) == 1


def test_control_case_is_rewritten():
    # the same kernel without a CASE that stops the pass: rewritten (the cases above fail for their reason)
    ce = {"BLOCK_M": 32, "BLOCK_N": 128, "CASE": "plain"}
    text = _compile(K.accumulate_reduce_other, _sig("float32", 3), ce, {**ALIGNED, "Z": D16}).asm["ttgir"]
    assert text.count('"tt.reduce"') == 2


def test_hip_pipeline_runs_it_too():
    ce = {"BLOCK_M": 32, "BLOCK_N": 128, "OP": "sum", "INIT": 0.0}
    k = compile(ASTSource(K.accumulate_reduce, _sig("float32"), constexprs=ce, attrs=ALIGNED), target="hip:gfx942",
                options={"num_warps": 4}, until="ttgir")
    assert k.asm["ttgir"].count('"tt.reduce"') == 2
