"""Coalesce: memory ops get the blocked layout axis info says is coalesced and vectorised."""
import logging

import pytest
from mlir import ir

import tritium
import tritium.language as tl
from tritium.dialects import layouts, make_context, ttg
from tritium.frontend import make_ttir
from tritium.passes.ttgir.coalesce import blocked_layout, coalesce, coalesce_pass, order_from_contiguity
from tritium.passes.ttgir.convert_to_ttgir import convert_to_ttgir
from tritium.passes.ttir import run_ttir_pipeline
from tritium.passes.ir_helpers import walk

from tests.e2e.kernels import add_kernel

B = layouts.BlockedLayout


def ttgir(fn, signature, constexprs, attrs, num_warps=4):
    """(context, module): ``fn`` through the frontend, the TTIR pipeline and convert_to_ttgir."""
    ctx = make_context()
    with ctx:
        m = make_ttir(fn, signature, constexprs, attrs, ctx)
        run_ttir_pipeline(m)
        convert_to_ttgir(m, num_warps=num_warps)
    return ctx, m


def ops_named(m, name):
    return [o for o in walk(m.operation) if o.name == name]


def layout(value):
    return ttg.encoding_of(value.type)


@tritium.jit
def copy_2d(a_ptr, b_ptr, stride, BM: tl.constexpr, BN: tl.constexpr, TRANSPOSED: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    if TRANSPOSED:
        offs = rm[:, None] + rn[None, :] * stride
    else:
        offs = rm[:, None] * stride + rn[None, :]
    tl.store(b_ptr + offs, tl.load(a_ptr + offs))


ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
DIV16 = {p: {"tt.divisibility": 16} for p in ("x_ptr", "y_ptr", "output_ptr", "a_ptr", "b_ptr", "stride")}


def test_vector_add_gets_128_bit_accesses():
    ctx, m = ttgir(add_kernel, ADD_SIG, {"BLOCK_SIZE": 1024}, {k: DIV16[k] for k in ("x_ptr", "y_ptr", "output_ptr")})
    with ctx:
        assert coalesce(m.operation) == 3
        want = B((4,), (32,), (4,), (0,))
        for op in ops_named(m, "tt.load") + ops_named(m, "tt.store"):
            for v in op.operands:
                assert layout(v) == want
        for op in ops_named(m, "tt.load"):
            assert layout(op.results[0]) == want
            # the result goes back to what its users had
            (use,) = [u.owner for u in op.results[0].uses]
            assert use.name == "ttg.convert_layout"
            assert layout(use.results[0]) == B((1,), (32,), (4,), (0,))
        m.operation.verify()
        ir.Module.parse(str(m))


def test_unaligned_pointers_keep_one_element_per_thread(caplog):
    ctx, m = ttgir(add_kernel, ADD_SIG, {"BLOCK_SIZE": 1024}, {})
    with ctx, caplog.at_level(logging.DEBUG, logger="tritium.passes"):
        assert coalesce(m.operation) == 0
        assert "ttg.convert_layout" not in str(m)
    # with debugging on, each access says why: nothing is known of its pointer's alignment
    lines = [r.getMessage() for r in caplog.records if r.name == "tritium.passes.ttgir.coalesce"]
    assert len(lines) == 3 and all("order [0], 1 element(s) per thread (its own alignment 1: contiguity 1024, "
                                   "divisibility 1 bytes along dim 0, 32-bit elements" in x for x in lines), lines
    assert sum("'tt.load'" in x for x in lines) == 2 and "kernels.py\":" in lines[0]


def test_f16_and_small_blocks():
    sig = dict(ADD_SIG, x_ptr="*fp16", y_ptr="*fp16", output_ptr="*fp16")
    attrs = {k: DIV16[k] for k in ("x_ptr", "y_ptr", "output_ptr")}
    ctx, m = ttgir(add_kernel, sig, {"BLOCK_SIZE": 2048}, attrs)
    with ctx:
        coalesce(m.operation)
        assert layout(ops_named(m, "tt.load")[0].results[0]).size_per_thread == (8,)  # 8 x 16 bits
    # 64 elements over 128 threads: one element per thread at most
    ctx, m = ttgir(add_kernel, sig, {"BLOCK_SIZE": 64}, attrs)
    with ctx:
        coalesce(m.operation)
        assert layout(ops_named(m, "tt.load")[0].results[0]).size_per_thread == (1,)


@pytest.mark.parametrize("transposed, want", [
    (False, B((1, 4), (2, 16), (4, 1), (1, 0))),
    (True, B((4, 1), (16, 2), (1, 4), (0, 1))),
])
def test_2d_order_follows_contiguity(transposed, want):
    ctx, m = ttgir(copy_2d, {"a_ptr": "*fp32", "b_ptr": "*fp32", "stride": "i32"},
                   {"BM": 64, "BN": 64, "TRANSPOSED": transposed}, {k: DIV16[k] for k in ("a_ptr", "b_ptr", "stride")})
    with ctx:
        coalesce(m.operation)
        for op in ops_named(m, "tt.load") + ops_named(m, "tt.store"):
            assert layout(op.operands[0]) == want


def test_pass_entry_point_runs_in_a_pass_manager():
    from mlir import passmanager

    ctx, m = ttgir(add_kernel, ADD_SIG, {"BLOCK_SIZE": 512}, {k: DIV16[k] for k in ("x_ptr", "y_ptr", "output_ptr")})
    with ctx:
        pm = passmanager.PassManager("builtin.module")
        pm.add(coalesce_pass, name="tritium-coalesce", argument="tritium-coalesce")
        pm.run(m.operation)
        assert layout(ops_named(m, "tt.store")[0].operands[0]).size_per_thread == (4,)


def test_order_from_contiguity_prefers_the_last_dim_on_ties():
    assert order_from_contiguity((1, 1)) == [1, 0]
    assert order_from_contiguity((64, 1)) == [0, 1]
    assert order_from_contiguity((1, 4, 4)) == [2, 1, 0]


@pytest.mark.parametrize("shape", [(1024,), (64, 64), (16, 256), (128, 8), (4, 8, 32)])
def test_blocked_layout_with_row_major_order_is_the_default_layout(shape):
    order = tuple(range(len(shape) - 1, -1, -1))
    assert blocked_layout(shape, [1] * len(shape), order, 4) == layouts.default_blocked(shape, 4)
