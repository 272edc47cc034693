"""Shape ops (join/split/cat/reshape/gather/histogram) and block pointers in a loop."""
import numpy as np

from conftest import compile_ttir, launch

SHAPES = """
module {
  func.func public @sh(%x: !tt.ptr<i32>, %o: !tt.ptr<i32>, %h: !tt.ptr<i32>) {
    %r = "tt.make_range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<i32>) -> tensor<8x!tt.ptr<i32>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<8x!tt.ptr<i32>>, tensor<8xi32>) -> tensor<8x!tt.ptr<i32>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tt.ptr<i32>>) -> tensor<8xi32>
    %c100 = arith.constant dense<100> : tensor<8xi32>
    %w = arith.addi %v, %c100 : tensor<8xi32>
    %j = "tt.join"(%v, %w) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8x2xi32>
    %f = "tt.reshape"(%j) : (tensor<8x2xi32>) -> tensor<16xi32>
    %a, %b = "tt.split"(%j) : (tensor<8x2xi32>) -> (tensor<8xi32>, tensor<8xi32>)
    %c = "tt.cat"(%b, %a) : (tensor<8xi32>, tensor<8xi32>) -> tensor<16xi32>
    %seven = arith.constant dense<7> : tensor<8xi32>
    %rev = arith.subi %seven, %r : tensor<8xi32>
    %g = "tt.gather"(%v, %rev) {axis = 0 : i32} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    %r16 = "tt.make_range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
    %os = "tt.splat"(%o) : (!tt.ptr<i32>) -> tensor<16x!tt.ptr<i32>>
    %op = "tt.addptr"(%os, %r16) : (tensor<16x!tt.ptr<i32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<i32>>
    "tt.store"(%op, %f) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tt.ptr<i32>>, tensor<16xi32>) -> ()
    %c16 = arith.constant dense<16> : tensor<16xi32>
    %r2 = arith.addi %r16, %c16 : tensor<16xi32>
    %op2 = "tt.addptr"(%os, %r2) : (tensor<16x!tt.ptr<i32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<i32>>
    "tt.store"(%op2, %c) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tt.ptr<i32>>, tensor<16xi32>) -> ()
    %c32 = arith.constant dense<32> : tensor<8xi32>
    %r3 = arith.addi %r, %c32 : tensor<8xi32>
    %os8 = "tt.splat"(%o) : (!tt.ptr<i32>) -> tensor<8x!tt.ptr<i32>>
    %op3 = "tt.addptr"(%os8, %r3) : (tensor<8x!tt.ptr<i32>>, tensor<8xi32>) -> tensor<8x!tt.ptr<i32>>
    "tt.store"(%op3, %g) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tt.ptr<i32>>, tensor<8xi32>) -> ()
    %c4 = arith.constant dense<4> : tensor<8xi32>
    %bins = arith.remsi %v, %c4 : tensor<8xi32>
    %hist = "tt.histogram"(%bins) : (tensor<8xi32>) -> tensor<4xi32>
    %r4 = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
    %hs = "tt.splat"(%h) : (!tt.ptr<i32>) -> tensor<4x!tt.ptr<i32>>
    %hp = "tt.addptr"(%hs, %r4) : (tensor<4x!tt.ptr<i32>>, tensor<4xi32>) -> tensor<4x!tt.ptr<i32>>
    "tt.store"(%hp, %hist) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x!tt.ptr<i32>>, tensor<4xi32>) -> ()
    return
  }
}
"""


def test_shape_ops(rng):
    x = rng.integers(0, 50, 8).astype(np.int32)
    o = np.zeros(40, np.int32)
    h = np.zeros(4, np.int32)
    launch(compile_ttir(SHAPES), (1,), x, o, h)
    np.testing.assert_array_equal(o[:16], np.stack([x, x + 100], -1).reshape(-1))
    np.testing.assert_array_equal(o[16:32], np.concatenate([x + 100, x]))
    np.testing.assert_array_equal(o[32:40], x[::-1])
    np.testing.assert_array_equal(h, np.bincount(x % 4, minlength=4))


BLOCKLOOP = """
module {
  func.func public @bl(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>, %M: i64, %N: i64) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c4 = arith.constant 4 : i32
    %row = arith.muli %pid, %c4 : i32
    %c0 = arith.constant 0 : i32
    %c1l = arith.constant 1 : i64
    %p = "tt.make_tensor_ptr"(%x, %M, %N, %N, %c1l, %row, %c0) {order = array<i32: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2>} : (!tt.ptr<f32>, i64, i64, i64, i64, i32, i32) -> !tt.ptr<tensor<4x8xf32>>
    %c8 = arith.constant 8 : i32
    %ntiles = arith.constant 3 : i32
    %zero = arith.constant dense<0.0> : tensor<4x8xf32>
    %acc, %pe = scf.for %i = %c0 to %ntiles step %c4 iter_args(%a = %zero, %pp = %p) -> (tensor<4x8xf32>, !tt.ptr<tensor<4x8xf32>>) : i32 {
      %v = "tt.load"(%pp) {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32, operandSegmentSizes = array<i32: 1, 0, 0>} : (!tt.ptr<tensor<4x8xf32>>) -> tensor<4x8xf32>
      %a2 = arith.addf %a, %v : tensor<4x8xf32>
      %pn = "tt.advance"(%pp, %c0, %c8) : (!tt.ptr<tensor<4x8xf32>>, i32, i32) -> !tt.ptr<tensor<4x8xf32>>
      scf.yield %a2, %pn : tensor<4x8xf32>, !tt.ptr<tensor<4x8xf32>>
    }
    %q = "tt.make_tensor_ptr"(%o, %M, %N, %N, %c1l, %row, %c0) {order = array<i32: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2>} : (!tt.ptr<f32>, i64, i64, i64, i64, i32, i32) -> !tt.ptr<tensor<4x8xf32>>
    "tt.store"(%q, %acc) {boundaryCheck = array<i32: 0, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<tensor<4x8xf32>>, tensor<4x8xf32>) -> ()
    return
  }
}
"""


def test_block_pointer_loop_with_boundary_check(rng):
    M, N = 10, 6  # last row block and the 8-wide column block are partial
    x = rng.standard_normal((M, N)).astype(np.float32)
    o = np.zeros((M, N), np.float32)
    launch(compile_ttir(BLOCKLOOP), (3,), x, o, M, N)
    np.testing.assert_array_equal(o, x)  # one iteration (0..3 step 4), padding zeros never stored
