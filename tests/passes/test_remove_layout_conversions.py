"""remove_layout_conversions, reorder_instructions and the TTGIR pipeline."""
import pytest
from mlir import ir

import tritium
import tritium.language as tl
from tritium.dialects import layouts, make_context, ttg
from tritium.passes.ttgir.coalesce import coalesce
from tritium.passes.ttgir.pipeline import pipeline, run_ttgir_pipeline
from tritium.passes.ttgir.remove_layout_conversions import remove_layout_conversions
from tritium.passes.ttgir.reorder_instructions import reorder_instructions

from tests.e2e.kernels import branch_kernel

from .test_coalesce import ADD_SIG, DIV16, add_kernel, layout, ops_named, ttgir

A = "#ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
C = "#ttg.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
HEADER = f'#A = {A}\n#C = {C}\nmodule attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{\n'


def module(body, args="%p: !tt.ptr<f32>, %n: i32"):
    return HEADER + f"func.func public @k({args}) {{\n{body}\n  return\n}}\n}}\n"


def parse(src):
    ctx = make_context()
    with ctx, ir.Location.unknown():
        return ctx, ir.Module.parse(src)


def n_converts(m):
    return len(ops_named(m, "ttg.convert_layout"))


@tritium.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


@tritium.jit
def rows_kernel(x_ptr, o_ptr, stride, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :])
    s = tl.sum(x, axis=1)
    tl.store(o_ptr + rm[:, None] * stride + rn[None, :], x / s[:, None])


SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32", "out_row_stride": "i32", "n_cols": "i32"}
SOFTMAX_ATTRS = {k: {"tt.divisibility": 16} for k in ("out_ptr", "in_ptr", "in_row_stride", "out_row_stride")}


def test_vector_add_ends_without_conversions():
    ctx, m = ttgir(add_kernel, ADD_SIG, {"BLOCK_SIZE": 1024}, {k: DIV16[k] for k in ("x_ptr", "y_ptr", "output_ptr")})
    with ctx:
        coalesce(m.operation)
        assert n_converts(m) > 0
        assert remove_layout_conversions(m.operation) == 0
        assert n_converts(m) == 0
        want = layouts.BlockedLayout((4,), (32,), (4,), (0,))
        for name in ("tt.load", "tt.store", "arith.addf"):
            for op in ops_named(m, name):
                assert all(layout(v) == want for v in op.operands)
        m.operation.verify()
        ir.Module.parse(str(m))


def test_softmax_ends_without_conversions():
    ctx, m = ttgir(softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024}, SOFTMAX_ATTRS)
    with ctx:
        coalesce(m.operation)
        assert remove_layout_conversions(m.operation) == 0
        assert layout(ops_named(m, "tt.reduce")[0].operands[0]).size_per_thread == (4,)
        m.operation.verify()


def test_row_reduction_keeps_the_loaded_layout():
    ctx, m = ttgir(rows_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "stride": "i32"}, {"BM": 64, "BN": 128},
                   {k: {"tt.divisibility": 16} for k in ("x_ptr", "o_ptr", "stride")})
    with ctx:
        coalesce(m.operation)
        assert remove_layout_conversions(m.operation) == 0
        red = ops_named(m, "tt.reduce")[0]
        assert layout(red.operands[0]) == layout(ops_named(m, "tt.load")[0].results[0])
        assert isinstance(layout(red.results[0]), layouts.SliceLayout)


def test_a_to_b_to_a_chain_and_identity_are_removed():
    src = module(f"""
  %r = "tt.make_range"() {{start = 0 : i32, end = 1024 : i32}} : () -> tensor<1024xi32, #A>
  %x = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>, #A>
  %y = "tt.addptr"(%x, %r) : (tensor<1024x!tt.ptr<f32>, #A>, tensor<1024xi32, #A>) -> tensor<1024x!tt.ptr<f32>, #A>
  %v = "tt.load"(%y) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<1024x!tt.ptr<f32>, #A>) -> tensor<1024xf32, #A>
  %c1 = "ttg.convert_layout"(%v) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  %c2 = "ttg.convert_layout"(%c1) : (tensor<1024xf32, #C>) -> tensor<1024xf32, #A>
  %c3 = "ttg.convert_layout"(%c2) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #A>
  "tt.store"(%y, %c3) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<1024x!tt.ptr<f32>, #A>, tensor<1024xf32, #A>) -> ()""")
    ctx, m = parse(src)
    with ctx:
        assert remove_layout_conversions(m.operation) == 0
        st = ops_named(m, "tt.store")[0]
        assert st.operands[1] == ops_named(m, "tt.load")[0].results[0]


def test_cheap_producers_are_rematerialised_in_the_target_layout():
    src = module(f"""
  %r = "tt.make_range"() {{start = 0 : i32, end = 1024 : i32}} : () -> tensor<1024xi32, #A>
  %x = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>, #A>
  %y = "tt.addptr"(%x, %r) : (tensor<1024x!tt.ptr<f32>, #A>, tensor<1024xi32, #A>) -> tensor<1024x!tt.ptr<f32>, #A>
  %z = arith.constant dense<1.0> : tensor<1024xf32, #A>
  %yc = "ttg.convert_layout"(%y) : (tensor<1024x!tt.ptr<f32>, #A>) -> tensor<1024x!tt.ptr<f32>, #C>
  %zc = "ttg.convert_layout"(%z) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  "tt.store"(%yc, %zc) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<1024x!tt.ptr<f32>, #C>, tensor<1024xf32, #C>) -> ()""")
    ctx, m = parse(src)
    with ctx:
        assert remove_layout_conversions(m.operation) == 0
        c = layouts.parse_layout(C)
        for name in ("tt.make_range", "tt.splat", "tt.addptr", "arith.constant"):
            (op,) = ops_named(m, name)  # the old copies in #A are dead and gone
            assert layout(op.results[0]) == c
        m.operation.verify()


def test_conversion_between_two_memory_ops_stays():
    src = module(f"""
  %r = "tt.make_range"() {{start = 0 : i32, end = 1024 : i32}} : () -> tensor<1024xi32, #A>
  %x = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>, #A>
  %y = "tt.addptr"(%x, %r) : (tensor<1024x!tt.ptr<f32>, #A>, tensor<1024xi32, #A>) -> tensor<1024x!tt.ptr<f32>, #A>
  %v = "tt.load"(%y) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<1024x!tt.ptr<f32>, #A>) -> tensor<1024xf32, #A>
  %w = math.exp %v : tensor<1024xf32, #A>
  %wc = "ttg.convert_layout"(%w) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  %yc = "ttg.convert_layout"(%y) : (tensor<1024x!tt.ptr<f32>, #A>) -> tensor<1024x!tt.ptr<f32>, #C>
  "tt.store"(%yc, %wc) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<1024x!tt.ptr<f32>, #C>, tensor<1024xf32, #C>) -> ()""")
    ctx, m = parse(src)
    with ctx:
        assert remove_layout_conversions(m.operation) == 1
        (cvt,) = ops_named(m, "ttg.convert_layout")
        assert cvt.operands[0].owner.name == "math.exp"


def test_reorder_moves_conversions_next_to_their_first_use():
    src = module(f"""
  %r = "tt.make_range"() {{start = 0 : i32, end = 1024 : i32}} : () -> tensor<1024xi32, #A>
  %rc = "ttg.convert_layout"(%r) : (tensor<1024xi32, #A>) -> tensor<1024xi32, #C>
  %x = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>, #C>
  %y = "tt.addptr"(%x, %rc) : (tensor<1024x!tt.ptr<f32>, #C>, tensor<1024xi32, #C>) -> tensor<1024x!tt.ptr<f32>, #C>
  %v = "tt.load"(%y) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<1024x!tt.ptr<f32>, #C>) -> tensor<1024xf32, #C>
  "tt.store"(%y, %v) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<1024x!tt.ptr<f32>, #C>, tensor<1024xf32, #C>) -> ()""")
    ctx, m = parse(src)
    with ctx:
        assert reorder_instructions(m.operation) == 1
        names = [o.operation.name for o in m.body.operations[0].regions[0].blocks[0].operations]
        assert names[:4] == ["tt.make_range", "tt.splat", "ttg.convert_layout", "tt.addptr"]
        assert reorder_instructions(m.operation) == 0  # already in place
        m.operation.verify()


@pytest.mark.parametrize("kernel, sig, consts, attrs", [
    (add_kernel, ADD_SIG, {"BLOCK_SIZE": 1024}, {k: {"tt.divisibility": 16} for k in ("x_ptr", "y_ptr", "output_ptr")}),
    (softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024}, SOFTMAX_ATTRS),
])
def test_pipeline(kernel, sig, consts, attrs):
    ctx, m = ttgir(kernel, sig, consts, attrs)
    with ctx:
        run_ttgir_pipeline(m, None)
        text = str(m)
        assert n_converts(m) == 0
        assert text.count('"tt.make_range"') == 1  # CSE merged the rematerialised copies
        assert "ttg.shared" in m.operation.attributes
        ir.Module.parse(text)
        m.operation.verify()
        if kernel is softmax_kernel:
            # two 1024-element reductions over 4 warps: 4 floats of scratch each, a barrier between them
            reds = ops_named(m, "tt.reduce")
            assert [int(r.attributes["allocation.size"].value) for r in reds] == [16, 16]
            assert len(ops_named(m, "ttg.barrier")) == 1
            assert int(m.operation.attributes["ttg.shared"].value) == 16


def test_pipeline_order():
    names = [n for n, _ in pipeline()]
    assert names.index("tritium-coalesce") < names.index("tritium-remove-layout-conversions")
    assert names[-2:] == ["tritium-allocation", "tritium-membar"]


def test_if_results_are_yielded_in_the_layout_they_are_converted_to():
    ctx, m = ttgir(branch_kernel, {"X": "*fp32", "Y": "*fp32", "n": "i32"}, {"BLOCK": 512},
                   {"X": {"tt.divisibility": 16}, "Y": {"tt.divisibility": 16}})
    with ctx:
        coalesce(m.operation)
        assert remove_layout_conversions(m.operation) == 0
        (if_op,) = ops_named(m, "scf.if")
        assert layout(if_op.results[0]).size_per_thread == (4,)
        m.operation.verify()


@tritium.jit
def row_sum_fp16_kernel(X, OUT, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    tl.store(OUT, tl.sum(acc, axis=0))


def test_loop_carried_accumulator_is_carried_in_the_loaded_layout():
    # the zeros are created in the default layout (1 per thread); the fp16 load is coalesced to 8 per thread:
    # the iter_arg, its init (a constant, rematerialised) and the loop result change layout instead of a
    # conversion running every iteration
    ctx, m = ttgir(row_sum_fp16_kernel, {"X": "*fp16", "OUT": "*fp32", "N": "i32"}, {"BLOCK": 2048},
                   {"X": {"tt.divisibility": 16}, "N": {"tt.divisibility": 16}})
    with ctx:
        coalesce(m.operation)
        assert remove_layout_conversions(m.operation) == 0
        (for_op,) = ops_named(m, "scf.for")
        body = for_op.regions[0].blocks[0]
        assert layout(body.arguments[1]).size_per_thread == (8,)
        assert layout(for_op.results[0]).size_per_thread == (8,)
        assert layout(for_op.operands[3]).size_per_thread == (8,)
        m.operation.verify()


@tritium.jit
def col_sum_kernel(X, OUT, stride, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * stride + rn[None, :])
    tl.store(OUT + rn, tl.sum(x, axis=0))


@pytest.mark.parametrize("bn, converts", [(64, 0), (512, 1)])
def test_a_store_smaller_than_the_cta_takes_the_reduction_layout(bn, converts):
    # Triton's isExpensiveLoadOrStore: 64 elements < 128 threads is no anchor; 512 elements are (the
    # conversion to the store's coalesced layout stays, as in Triton)
    ctx, m = ttgir(col_sum_kernel, {"X": "*fp32", "OUT": "*fp32", "stride": "i32"}, {"BM": 16, "BN": bn},
                   {k: {"tt.divisibility": 16} for k in ("X", "OUT", "stride")})
    with ctx:
        coalesce(m.operation)
        assert remove_layout_conversions(m.operation) == converts
        m.operation.verify()


@tritium.jit
def permute_kernel(X, OUT, S0: tl.constexpr, S1: tl.constexpr, TRANS_ONLY: tl.constexpr):
    x = tl.load(X + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    if TRANS_ONLY:
        y = tl.trans(x)
        tl.store(OUT + tl.arange(0, S1)[:, None] * S0 + tl.arange(0, S0)[None, :], y)
    else:
        y = tl.reshape(tl.permute(tl.reshape(x, (32, 4, 4, 2)), (1, 2, 3, 0)), (S0 * S1,))
        tl.store(OUT + tl.arange(0, S0 * S1), y)


@pytest.mark.parametrize("trans_only", [True, False])
def test_views_take_their_operand_layout(trans_only):
    # Triton's test_trans_reshape: a tt.trans / tt.reshape whose result keeps each element in its register (a
    # permuted blocked layout, a #ttg.linear) is a register rename; the only exchange left is the conversion to
    # the store's coalesced layout -- no scratch for the views themselves
    ctx, m = ttgir(permute_kernel, {"X": "*i32", "OUT": "*i32"}, {"S0": 32, "S1": 32, "TRANS_ONLY": trans_only},
                   {k: {"tt.divisibility": 16} for k in ("X", "OUT")})
    with ctx:
        run_ttgir_pipeline(m, None)
        assert n_converts(m) == 1
        for name in ("tt.trans", "tt.reshape"):
            for op in ops_named(m, name):
                assert "allocation.size" not in op.attributes, name
        (trans,) = ops_named(m, "tt.trans")
        if trans_only:  # a blocked layout, permuted
            src, dst = layout(trans.operands[0]), layout(trans.results[0])
            assert dst.size_per_thread == src.size_per_thread[::-1] and dst.order == tuple(1 - d for d in src.order)
        m.operation.verify()


@tritium.jit
def _max_with_index(a, ai, b, bi):
    mask = (a > b) | ((a != a) & (b == b))  # a NaN wins, as in torch.argmax
    equal = (a == b) | ((a != a) & (b != b))
    mask |= equal & (ai < bi)
    return tl.where(mask, a, b), tl.where(mask, ai, bi)


@tritium.jit
def _min_with_index(a, ai, b, bi):
    mask = (a < b) | ((a != a) & (b == b))
    equal = (a == b) | ((a != a) & (b != b))
    mask |= equal & (ai < bi)
    return tl.where(mask, a, b), tl.where(mask, ai, bi)


@tritium.jit
def strided_argmax_argmin_kernel(X, AMAX, AMIN, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """Inductor's looped reduction over a strided dimension (argmax / argmin over dim 0 of a row-major matrix):
    the load is coalesced along x (dim 0 of the tile), four accumulators carried in the loop in pairs."""
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    vmax = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    imax = tl.full([XBLOCK, RBLOCK], 2147483647, tl.int32)
    vmin = tl.full([XBLOCK, RBLOCK], float("inf"), tl.float32)
    imin = tl.full([XBLOCK, RBLOCK], 2147483647, tl.int32)
    for roffset in tl.range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        m = (rindex < rnumel) & xmask
        x = tl.load(X + (xindex + xnumel * rindex), m, other=0.0)
        vmax_n, imax_n = _max_with_index(vmax, imax, x, rindex)
        vmax, imax = tl.where(m, vmax_n, vmax), tl.where(m, imax_n, imax)
        vmin_n, imin_n = _min_with_index(vmin, imin, x, rindex)
        vmin, imin = tl.where(m, vmin_n, vmin), tl.where(m, imin_n, imin)
    _, amax = tl.reduce((vmax, imax), 1, _max_with_index)
    _, amin = tl.reduce((vmin, imin), 1, _min_with_index)
    tl.store(AMAX + xindex, amax[:, None], xmask)
    tl.store(AMIN + xindex, amin[:, None], xmask)


ARG_SIG = {"X": "*fp32", "AMAX": "*i64", "AMIN": "*i64", "xnumel": "i32", "rnumel": "i32"}


@pytest.mark.parametrize("xblock, rblock, num_warps", [(32, 128, 8), (64, 64, 8), (8, 512, 4)])
def test_loop_carried_web_takes_the_loaded_layout(xblock, rblock, num_warps):
    # the accumulators start in the default layout (order [1, 0]); the load is coalesced along dim 0 (order
    # [0, 1]).  No accumulator can move alone (value and index go through one select), nor one pair (the other
    # pair still needs the converted load): all four move together, and the loop holds no conversion
    ctx, m = ttgir(strided_argmax_argmin_kernel, ARG_SIG, {"XBLOCK": xblock, "RBLOCK": rblock},
                   {p: {"tt.divisibility": 16} for p in ("X", "AMAX", "AMIN", "xnumel")}, num_warps=num_warps)
    with ctx:
        coalesce(m.operation)
        (load,) = ops_named(m, "tt.load")
        assert layout(load.results[0]).order == (0, 1)
        remove_layout_conversions(m.operation)
        (for_op,) = ops_named(m, "scf.for")
        body = for_op.regions[0].blocks[0]
        assert not [o for o in body.operations if o.operation.name == "ttg.convert_layout"]
        for arg in list(body.arguments)[1:]:
            assert layout(arg) == layout(load.results[0])
        m.operation.verify()
