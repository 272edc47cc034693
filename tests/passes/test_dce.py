from tritium.passes.ttir import dce_pass

from .ttir_pass_helpers import count, effect_sequence, func, run_pass


def test_removes_dead_chains_to_fixpoint():
    src = func("""
  %0 = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
  %r = "tt.make_range"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %s = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %o = arith.addi %r, %s : tensor<128xi32>
  %a = "tt.addptr"(%0, %o) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
  %x = "tt.load"(%a) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  %y = math.exp %x : tensor<128xf32>
  return""")
    out = run_pass(dce_pass, src)
    for name in ("tt.splat", "tt.make_range", "tt.addptr", "tt.load"):
        assert count(out, name) == 0, name
    assert count(out, "arith.addi") == 0 and count(out, "math.exp") == 0


def test_keeps_effects_and_volatile_loads():
    src = func("""
  %0 = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
  %v = "tt.load"(%0) {isVolatile = true, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  %x = "tt.load"(%0) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  "tt.store"(%0, %x) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
  %c = arith.constant 1.0 : f32
  %old = "tt.atomic_rmw"(%p, %c) {atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32} : (!tt.ptr<f32>, f32) -> f32
  %t = arith.constant true
  "tt.assert"(%t) {message = "m"} : (i1) -> ()
  "tt.print"(%n) {prefix = "n", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (i32) -> ()
  %ext = "tt.extern_elementwise"(%c) {libname = "", libpath = "", symbol = "f", pure = false, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  %ext2 = "tt.extern_elementwise"(%c) {libname = "", libpath = "", symbol = "f", pure = true, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> f32
  return""")
    out = run_pass(dce_pass, src)
    assert effect_sequence(out) == ["tt.load", "tt.load", "tt.store", "tt.atomic_rmw", "tt.assert", "tt.print"]
    assert "isVolatile = true" in out
    assert count(out, "tt.extern_elementwise") == 1 and "pure = false" in out


def test_removes_dead_loops_without_effects_only():
    src = func("""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %init = "tt.splat"(%n) : (i32) -> tensor<4xi32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<4xi32>) : i32 {
    %s = "tt.splat"(%i) : (i32) -> tensor<4xi32>
    %a = arith.addi %acc, %s : tensor<4xi32>
    scf.yield %a : tensor<4xi32>
  }
  %r2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<4xi32>) : i32 {
    "tt.print"(%i) {prefix = "i", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (i32) -> ()
    scf.yield %acc : tensor<4xi32>
  }
  return""")
    out = run_pass(dce_pass, src)
    assert out.count("scf.for") == 1
    assert count(out, "tt.print") == 1
