import re

from tritium.passes.ttir import licm_pass

from .ttir_pass_helpers import func, run_pass


def _before_loop(out: str, needle: str) -> bool:
    return out.index(needle) < out.index("scf.for")


def test_hoists_invariant_tt_ops_not_loads():
    src = func("""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %init = arith.constant dense<0.0> : tensor<128xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<128xf32>) : i32 {
    %base = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
    %range = "tt.make_range"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
    %ptrs = "tt.addptr"(%base, %range) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    %x = "tt.load"(%ptrs) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
    %iv = "tt.splat"(%i) : (i32) -> tensor<128xi32>
    %a = arith.addf %acc, %x : tensor<128xf32>
    scf.yield %a : tensor<128xf32>
  }
  %o = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
  "tt.store"(%o, %r) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
  return""")
    out = run_pass(licm_pass, src)
    assert _before_loop(out, '"tt.splat"(%arg0)')
    assert _before_loop(out, '"tt.make_range"')
    assert _before_loop(out, '"tt.addptr"')
    # the load and the splat of the induction variable stay in the loop
    assert out.index('"tt.load"') > out.index("scf.for")
    assert re.search(r'scf\.for %(\w+) .*\n(.*\n)*.*"tt\.splat"\(%\1\)', out)


def test_hoists_out_of_nests_and_while():
    src = func("""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    scf.for %j = %c0 to %n step %c1 : i32 {
      %s = "tt.splat"(%n) : (i32) -> tensor<4xi32>
      "tt.print"(%s) {prefix = "s", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xi32>) -> ()
    }
  }
  %w = scf.while (%k = %c0) : (i32) -> i32 {
    %t = "tt.splat"(%n) : (i32) -> tensor<8xi32>
    "tt.print"(%t) {prefix = "t", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xi32>) -> ()
    %cond = arith.cmpi slt, %k, %n : i32
    scf.condition(%cond) %k : i32
  } do {
  ^bb0(%k2: i32):
    %u = "tt.splat"(%n) : (i32) -> tensor<16xi32>
    "tt.print"(%u) {prefix = "u", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<16xi32>) -> ()
    %k3 = arith.addi %k2, %c1 : i32
    scf.yield %k3 : i32
  }
  return""")
    out = run_pass(licm_pass, src)
    first_loop = out.index("scf.for")
    assert out.index("tensor<4xi32>") < first_loop
    assert out.index("-> tensor<8xi32>") < out.index("scf.while")
    assert out.index("-> tensor<16xi32>") < out.index("scf.while")
    # prints never move
    assert out.index('"tt.print"') > first_loop
    assert out.count('"tt.print"') == 3


def test_does_not_hoist_integer_division():
    src = func("""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %d = arith.divsi %c1, %n : i32
    "tt.print"(%d) {prefix = "d", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (i32) -> ()
  }
  return""")
    out = run_pass(licm_pass, src)
    assert out.index("arith.divsi") > out.index("scf.for")
