"""Axis info: contiguity, divisibility, constancy per value (Triton's AxisInfo), and the vectorisation queries."""
import logging

import pytest
from mlir import ir

import tritium
import tritium.language as tl
from tritium.dialects import make_context
from tritium.frontend import make_ttir
from tritium.passes.analysis.axis_info import AxisInfo, AxisInfoAnalysis, annotate, highest_pow2_divisor
from tritium.passes.ttir import run_ttir_pipeline
from tritium.passes.ir_helpers import walk as _walk

from tests.e2e import kernels as K

Z = 1 << 30  # divisibility of make_range(0, n)
ZERO = 1 << 62  # divisibility of the constant 0


def analyse(src: str):
    ctx = make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(src)
    return ctx, m, AxisInfoAnalysis(m.operation)


def by_name(m, analysis) -> dict:
    """SSA names are gone after parsing: look values up by a ``tag`` attribute on their defining op."""
    out = {}
    for op in _walk(m.operation):
        if "tag" in op.attributes:
            out[str(op.attributes["tag"]).strip('"')] = analysis.get(op.results[0])
    return out


def I(c, d, k, v=None):  # noqa: E743
    return AxisInfo(tuple(c), tuple(d), tuple(k), v)


# ----------------------------------------------------------------------------------------------
# Rules on hand-written TTIR
# ----------------------------------------------------------------------------------------------

RULES = """
func.func public @k(%n: i32, %n16: i32 {tt.divisibility = 16 : i32}, %s4: i32 {tt.divisibility = 4 : i32}) {
  %r = "tt.make_range"() {start = 0 : i32, end = 128 : i32, tag = "r"} : () -> tensor<128xi32>
  %r64 = "tt.make_range"() {start = 64 : i32, end = 192 : i32, tag = "r64"} : () -> tensor<128xi32>
  %c0 = arith.constant {tag = "c0"} dense<0> : tensor<128xi32>
  %c1 = arith.constant {tag = "c1"} dense<1> : tensor<128xi32>
  %c8 = arith.constant {tag = "c8"} dense<8> : tensor<128xi32>
  %c64 = arith.constant {tag = "c64"} dense<64> : tensor<128xi32>
  %c66 = arith.constant {tag = "c66"} dense<66> : tensor<128xi32>
  %c127 = arith.constant dense<127> : tensor<128xi32>
  %add = arith.addi %r, %c1 {tag = "add"} : tensor<128xi32>
  %addc = arith.addi %c1, %c127 {tag = "addc"} : tensor<128xi32>
  %sub = arith.subi %r, %c1 {tag = "sub"} : tensor<128xi32>
  %rsub = arith.subi %c1, %r {tag = "rsub"} : tensor<128xi32>
  %mul1 = arith.muli %r, %c1 {tag = "mul1"} : tensor<128xi32>
  %mul8 = arith.muli %r, %c8 {tag = "mul8"} : tensor<128xi32>
  %div64 = arith.divsi %r, %c64 {tag = "div64"} : tensor<128xi32>
  %div66 = arith.divui %r, %c66 {tag = "div66"} : tensor<128xi32>
  %rem64 = arith.remsi %r, %c64 {tag = "rem64"} : tensor<128xi32>
  %rem66 = arith.remui %r, %c66 {tag = "rem66"} : tensor<128xi32>
  %rem1 = arith.remsi %r, %c1 {tag = "rem1"} : tensor<128xi32>
  %and = arith.andi %div64, %c8 {tag = "and"} : tensor<128xi32>
  %shl = arith.shli %r, %c8 {tag = "shl"} : tensor<128xi32>
  %shr = arith.shrsi %r, %c8 {tag = "shr"} : tensor<128xi32>
  %max = arith.maxsi %r, %r64 {tag = "max"} : tensor<128xi32>
  %lt0 = arith.cmpi slt, %r, %c0 {tag = "lt0"} : tensor<128xi32>
  %le0 = arith.cmpi sle, %r, %c0 {tag = "le0"} : tensor<128xi32>
  %gt8 = arith.cmpi sgt, %c8, %r {tag = "gt8"} : tensor<128xi32>
  %eq = arith.cmpi eq, %r, %c0 {tag = "eq"} : tensor<128xi32>
  %ns = "tt.splat"(%n) {tag = "ns"} : (i32) -> tensor<128xi32>
  %n16s = "tt.splat"(%n16) {tag = "n16s"} : (i32) -> tensor<128xi32>
  %mask_n = arith.cmpi slt, %r, %ns {tag = "mask_n"} : tensor<128xi32>
  %mask_n16 = arith.cmpi slt, %r, %n16s {tag = "mask_n16"} : tensor<128xi32>
  %sel = arith.select %mask_n, %r, %mul8 {tag = "sel"} : tensor<128xi1>, tensor<128xi32>
  %e0 = "tt.expand_dims"(%r) {axis = 0 : i32, tag = "e0"} : (tensor<128xi32>) -> tensor<1x128xi32>
  %b0 = "tt.broadcast"(%e0) {tag = "b0"} : (tensor<1x128xi32>) -> tensor<64x128xi32>
  %t = "tt.trans"(%b0) {order = array<i32: 1, 0>, tag = "t"} : (tensor<64x128xi32>) -> tensor<128x64xi32>
  %ext = arith.extsi %r {tag = "ext"} : tensor<128xi32> to tensor<128xi64>
  %nc = arith.constant {tag = "nc"} dense<[0, 1, 2, 3, 8, 9, 10, 11]> : tensor<8xi32>
  %hint = arith.muli %ns, %c1 {tag = "hint", tt.divisibility = dense<16> : tensor<1xi32>} : tensor<128xi32>
  %pid = "tt.get_program_id"() {axis = 0 : i32, tag = "pid"} : () -> i32
  "tt.print"(%add, %addc, %sub, %rsub, %mul1, %mul8, %div64, %div66) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>} : (tensor<128xi32>, tensor<128xi32>, tensor<128xi32>, tensor<128xi32>, tensor<128xi32>, tensor<128xi32>, tensor<128xi32>, tensor<128xi32>) -> ()
  return
}
"""

EXPECTED = {
    "r": I([128], [Z], [1]),
    "r64": I([128], [64], [1]),
    "c0": I([1], [ZERO], [128], 0),
    "c1": I([1], [1], [128], 1),
    "c66": I([1], [2], [128], 66),
    "add": I([128], [1], [1]),
    "addc": I([1], [128], [128], 128),
    "sub": I([128], [1], [1]),
    "rsub": I([1], [1], [1]),  # decreasing: not contiguous
    "mul1": I([128], [Z], [1]),
    "mul8": I([1], [8], [1]),  # [0, 8, 16, ...]: a contiguous operand counts as divisibility 1
    "div64": I([1], [1], [64]),
    "div66": I([1], [1], [2]),
    "rem64": I([64], [64], [1]),
    "rem66": I([2], [2], [1]),
    "rem1": I([1], [ZERO], [128], 0),
    "and": I([1], [1], [64]),
    "shl": I([1], [256], [1]),
    "shr": I([1], [1], [1]),
    "max": I([128], [64], [1]),
    "lt0": I([1], [1], [128]),
    "le0": I([1], [1], [1]),
    "gt8": I([1], [1], [8]),
    "eq": I([1], [1], [1]),
    "ns": I([1], [1], [128]),
    "n16s": I([1], [16], [128]),
    "mask_n": I([1], [1], [1]),
    "mask_n16": I([1], [1], [16]),
    "sel": I([1], [1], [1]),
    "e0": I([1, 128], [1, Z], [1, 1]),
    "b0": I([1, 128], [1, Z], [64, 1]),
    "t": I([128, 1], [Z, 1], [1, 64]),
    "ext": I([128], [Z], [1]),
    "nc": I([4], [8], [1]),
    "hint": I([1], [16], [128]),
    "pid": I([1], [1], [1]),
}


@pytest.mark.parametrize("tag", sorted(EXPECTED))
def test_transfer_rules(tag):
    ctx, m, a = analyse(RULES)
    with ctx:
        got = by_name(m, a)
    assert got[tag] == EXPECTED[tag], f"{tag}: {got[tag]}"


def test_highest_pow2_divisor():
    assert highest_pow2_divisor(0) == ZERO
    assert highest_pow2_divisor(96) == 32
    assert highest_pow2_divisor(-12) == 4
    assert highest_pow2_divisor(7) == 1


def test_scalar_addptr_scales_by_the_pointee_size():
    src = """
func.func public @k(%p8: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %p16: !tt.ptr<f16> {tt.divisibility = 16 : i32},
                    %p64: !tt.ptr<i64> {tt.divisibility = 16 : i32}) {
  %c1 = arith.constant 1 : i32
  %c4 = arith.constant 4 : i32
  %a = "tt.addptr"(%p8, %c1) {tag = "a"} : (!tt.ptr<i8>, i32) -> !tt.ptr<i8>
  %b = "tt.addptr"(%p16, %c1) {tag = "b"} : (!tt.ptr<f16>, i32) -> !tt.ptr<f16>
  %c = "tt.addptr"(%p64, %c1) {tag = "c"} : (!tt.ptr<i64>, i32) -> !tt.ptr<i64>
  %d = "tt.addptr"(%p16, %c4) {tag = "d"} : (!tt.ptr<f16>, i32) -> !tt.ptr<f16>
  "tt.print"(%a, %b, %c, %d) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>} : (!tt.ptr<i8>, !tt.ptr<f16>, !tt.ptr<i64>, !tt.ptr<f16>) -> ()
  return
}
"""
    ctx, m, a = analyse(src)
    with ctx:
        got = by_name(m, a)
    assert [got[k].divisibility[0] for k in "abcd"] == [1, 2, 8, 8]


# ----------------------------------------------------------------------------------------------
# Control flow
# ----------------------------------------------------------------------------------------------

def test_loop_carried_pointer_advanced_by_multiple_of_16_keeps_its_divisibility():
    src = """
func.func public @k(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %r = "tt.make_range"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %ps = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
  %p0 = "tt.addptr"(%ps, %r) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
  %step = arith.constant dense<64> : tensor<128xi32>
  %odd = arith.constant dense<3> : tensor<128xi32>
  %out:2 = scf.for %i = %c0 to %n step %c16 iter_args(%a = %p0, %b = %p0) -> (tensor<128x!tt.ptr<f32>>, tensor<128x!tt.ptr<f32>>) : i32 {
    %x = "tt.load"(%a) {operandSegmentSizes = array<i32: 1, 0, 0>, tag = "x"} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
    %iv = arith.addi %i, %c0 {tag = "iv"} : i32
    %a2 = "tt.addptr"(%a, %step) {tag = "a2"} : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    %b2 = "tt.addptr"(%b, %odd) {tag = "b2"} : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    scf.yield %a2, %b2 : tensor<128x!tt.ptr<f32>>, tensor<128x!tt.ptr<f32>>
  }
  %fa = "tt.load"(%out#0) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  %fb = "tt.load"(%out#1) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  return
}
"""
    ctx, m, a = analyse(src)
    with ctx:
        got = by_name(m, a)
        f = m.body.operations[0]
        loop = [o for o in _walk(m.operation) if o.name == "scf.for"][0]
        body_args = list(loop.regions[0].blocks[0].arguments)
        ra, rb = a.get(loop.results[0]), a.get(loop.results[1])
        ia = a.get(body_args[1])
        del f
    # advanced by 64 elements = 256 bytes each iteration: still 16-byte aligned and contiguous
    assert ia == I([128], [16], [1])
    assert ra == I([128], [16], [1]) and got["a2"] == I([128], [16], [1])
    # advanced by 3 floats = 12 bytes: only 4-byte aligned after the first iteration
    assert rb == I([128], [4], [1])
    # the induction variable: gcd(divisibility(lb), divisibility(step))
    assert got["iv"] == I([1], [16], [1])
    assert got["x"] == I([1], [1], [1])  # loads are unknown


def test_if_joins_both_branches_and_while_reaches_a_fixpoint():
    src = """
func.func public @k(%c: i1, %n: i32 {tt.divisibility = 32 : i32}) {
  %c64 = arith.constant dense<64> : tensor<8xi32>
  %c1 = arith.constant dense<1> : tensor<8xi32>
  %c48 = arith.constant dense<48> : tensor<8xi32>
  %x = scf.if %c -> tensor<8xi32> {
    scf.yield %c64 : tensor<8xi32>
  } else {
    scf.yield %c48 : tensor<8xi32>
  }
  %same = scf.if %c -> tensor<8xi32> {
    scf.yield %c64 : tensor<8xi32>
  } else {
    scf.yield %c64 : tensor<8xi32>
  }
  %w = scf.while (%v = %n) : (i32) -> i32 {
    %cond = arith.cmpi slt, %v, %n : i32
    scf.condition(%cond) %v : i32
  } do {
  ^bb0(%v2: i32):
    %c8 = arith.constant 8 : i32
    %nx = arith.addi %v2, %c8 : i32
    scf.yield %nx : i32
  }
  "tt.print"(%x, %same, %w) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<8xi32>, tensor<8xi32>, i32) -> ()
  return
}
"""
    ctx, m, a = analyse(src)
    with ctx:
        ifs = [o for o in _walk(m.operation) if o.name == "scf.if"]
        wh = [o for o in _walk(m.operation) if o.name == "scf.while"][0]
        x, same, w = a.get(ifs[0].results[0]), a.get(ifs[1].results[0]), a.get(wh.results[0])
    assert x == I([1], [16], [8])  # gcd(64, 48); value unknown
    assert same == I([1], [64], [8], 64)
    assert w.divisibility == (8,)  # n (32) joined with n + 8k


def test_private_callee_joins_its_call_sites():
    src = """
func.func public @k(%a: i32 {tt.divisibility = 16 : i32}, %b: i32 {tt.divisibility = 8 : i32}) {
  func.call @f(%a) : (i32) -> ()
  func.call @f(%b) : (i32) -> ()
  return
}
func.func private @f(%x: i32) {
  %c0 = arith.constant 0 : i32
  %y = arith.addi %x, %c0 {tag = "y"} : i32
  return
}
"""
    ctx, m, a = analyse(src)
    with ctx:
        got = by_name(m, a)
    assert got["y"].divisibility == (8,)


# ----------------------------------------------------------------------------------------------
# Kernels through the frontend and the TTIR pipeline
# ----------------------------------------------------------------------------------------------

@tritium.jit
def tile_kernel(a_ptr, stride_am, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    ptrs = a_ptr + rm[:, None] * stride_am + rn[None, :]
    x = tl.load(ptrs)
    tl.store(ptrs, x + 1.0)


def compile_ttir(fn, signature, constexprs, attrs):
    ctx = make_context()
    with ctx:
        m = make_ttir(fn, signature, constexprs, attrs, ctx)
        run_ttir_pipeline(m)
    return ctx, m


def memory_ops(m):
    return [o for o in _walk(m.operation) if o.name in ("tt.load", "tt.store")]


def _ptr_and_mask(op):
    from tritium.dialects import tt
    g = tt.operand_groups(op)
    return g["ptr"][0], (g.get("mask") or [None])[0]


@pytest.mark.parametrize("n_div, mask_constancy, vec", [(16, 16, 4), (None, 1, 1)])
def test_vector_add(n_div, mask_constancy, vec):
    attrs = {p: {"tt.divisibility": 16} for p in ("x_ptr", "y_ptr", "output_ptr")}
    if n_div:
        attrs["n_elements"] = {"tt.divisibility": n_div}
    ctx, m = compile_ttir(K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                          {"BLOCK_SIZE": 1024}, attrs)
    with ctx:
        a = AxisInfoAnalysis(m.operation)
        ops = memory_ops(m)
        assert [o.name for o in ops] == ["tt.load", "tt.load", "tt.store"]
        for op in ops:
            ptr, mask = _ptr_and_mask(op)
            assert a.get(ptr) == I([1024], [16], [1])
            assert a.ptr_alignment(ptr) == 4  # 16 bytes / 4-byte floats
            assert a.mask_alignment(mask) == mask_constancy
            assert a.vector_width(ptr, mask) == vec
            assert a.vector_width(ptr, None) == 4
            assert a.vector_width(ptr, None, per_thread=2) == 2
            assert a.vector_width(ptr, None, elem_bits=16) == 4  # alignment still limits
            assert AxisInfo.of(ptr) == a.get(ptr)


def test_vector_add_without_pointer_divisibility_does_not_vectorise(caplog):
    ctx, m = compile_ttir(K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                          {"BLOCK_SIZE": 256}, {})
    with ctx, caplog.at_level(logging.DEBUG, logger="tritium.passes.analysis.axis_info"):
        a = AxisInfoAnalysis(m.operation)
        for op in memory_ops(m):
            ptr, mask = _ptr_and_mask(op)
            assert a.get(ptr).contiguity == (256,)
            assert a.get(ptr).divisibility == (1,)  # an argument pointer without a hint: nothing known
            assert a.vector_width(ptr, None) == 1
            # with debugging on, a width of 1 says why
            why = caplog.records[-1].getMessage()
            assert why.startswith("an access through the pointer from 'tt.addptr' at \"")
            assert why.endswith(": vector width 1: the pointer's contiguity is 256 and divisibility 1 bytes along "
                                "dim 0")


def test_ignored_hints_say_why(caplog):
    src = """func.func public @k(%p: !tt.ptr<f32> {tt.divisibility = "sixteen"}) {
      %r = "tt.make_range"() {start = 0 : i32, end = 4 : i32, tt.contiguity = array<i32: 2, 2>} : () -> tensor<4xi32>
      return
    }"""
    with caplog.at_level(logging.DEBUG, logger="tritium.passes.analysis.axis_info"):
        ctx, m, a = analyse(src)
    messages = [r.getMessage() for r in caplog.records]
    assert 'argument 0 of @k: hint tt.divisibility = "sixteen" ignored: not an integer or one integer per ' \
           'dimension (1)' in messages
    assert any(x.startswith("'tt.make_range' at ") and x.endswith(": hint tt.contiguity = array<i32: 2, 2> ignored: "
                                                                   "not an integer or one integer per dimension (1)")
               for x in messages)


@pytest.mark.parametrize("stride_div, want_div", [(16, (4, 16)), (None, (4, 4))])
def test_2d_tile_offsets(stride_div, want_div):
    attrs = {"a_ptr": {"tt.divisibility": 16}}
    if stride_div:
        attrs["stride_am"] = {"tt.divisibility": stride_div}
    ctx, m = compile_ttir(tile_kernel, {"a_ptr": "*fp32", "stride_am": "i32", "M": "i32", "N": "i32"},
                          {"BLOCK_M": 32, "BLOCK_N": 64}, attrs)
    with ctx:
        a = AxisInfoAnalysis(m.operation)
        for op in memory_ops(m):
            ptr, _ = _ptr_and_mask(op)
            info = a.get(ptr)
            assert info.contiguity == (1, 64)  # contiguous along dim 1 only
            # along dim 1 each row is a group starting at a_ptr + 4 * rm * stride bytes: 16-byte aligned only
            # when the stride is; along dim 0 every element is its own group (rn is not a multiple of anything)
            assert info.divisibility == want_div
            assert a.ptr_alignment(ptr, order=[1, 0]) == (4 if stride_div else 1)
            assert a.ptr_alignment(ptr, order=[0, 1]) == 1


def test_pessimistic_for_unanalysed_values():
    ctx, m, a = analyse("func.func public @k(%x: tensor<4x8xi32>) { return }")
    with ctx:
        arg = m.body.operations[0].regions[0].blocks[0].arguments[0]
        assert a.get(arg) == AxisInfo.pessimistic(2)
        assert annotate(m.operation, a) == []
