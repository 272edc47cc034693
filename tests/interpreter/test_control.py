"""Control flow: per-program loop bounds, divergent if, while, private function calls."""
import numpy as np

from conftest import compile_ttir, launch

LOOP = """
module {
  func.func public @loop(%out: !tt.ptr<i32>, %out2: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %ub = arith.addi %pid, %c1 : i32
    %s, %cnt = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %c0, %k = %c0) -> (i32, i32) : i32 {
      %a2 = arith.addi %acc, %i : i32
      %k2 = arith.addi %k, %c1 : i32
      scf.yield %a2, %k2 : i32, i32
    }
    %u = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc = %s) -> (i32) : i32 {
      %a3 = arith.addi %acc, %j : i32
      scf.yield %a3 : i32
    }
    %p = "tt.addptr"(%out, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p, %u) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    %p2 = "tt.addptr"(%out2, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p2, %cnt) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return
  }
}
"""


def test_per_program_trip_count():
    P = 37
    out = np.zeros(P, np.int32)
    cnt = np.zeros(P, np.int32)
    k = compile_ttir(LOOP)
    launch(k, (P,), out, cnt)
    p = np.arange(P)
    np.testing.assert_array_equal(out, p * (p + 1) // 2 + 3)
    np.testing.assert_array_equal(cnt, p + 1)


IF = """
module {
  func.func public @div(%out: !tt.ptr<f32>, %x: !tt.ptr<f32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c2 = arith.constant 2 : i32
    %c0 = arith.constant 0 : i32
    %r = arith.remsi %pid, %c2 : i32
    %even = arith.cmpi eq, %r, %c0 : i32
    %rg = "tt.make_range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
    %c16 = arith.constant 16 : i32
    %base = arith.muli %pid, %c16 : i32
    %bs = "tt.splat"(%base) : (i32) -> tensor<16xi32>
    %offs = arith.addi %bs, %rg : tensor<16xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<f32>) -> tensor<16x!tt.ptr<f32>>
    %xp = "tt.addptr"(%xs, %offs) : (tensor<16x!tt.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<f32>>
    %os = "tt.splat"(%out) : (!tt.ptr<f32>) -> tensor<16x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %offs) : (tensor<16x!tt.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<f32>>
    %v = scf.if %even -> (tensor<16xf32>) {
      %l = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tt.ptr<f32>>) -> tensor<16xf32>
      %d = arith.addf %l, %l : tensor<16xf32>
      scf.yield %d : tensor<16xf32>
    } else {
      %m1 = arith.constant dense<-1.0> : tensor<16xf32>
      "tt.store"(%op, %m1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> ()
      scf.yield %m1 : tensor<16xf32>
    }
    scf.if %even {
      "tt.store"(%op, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> ()
    }
    return
  }
}
"""


def test_divergent_if(rng):
    P = 9
    x = rng.standard_normal(P * 16).astype(np.float32)
    out = np.zeros(P * 16, np.float32)
    launch(compile_ttir(IF), (P,), out, x)
    ref = np.where((np.arange(P * 16) // 16) % 2 == 0, 2 * x, -1.0)
    np.testing.assert_array_equal(out, ref)


WHILE = """
module {
  func.func public @collatz(%out: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %n0 = arith.addi %pid, %c1 : i32
    %res:2 = scf.while (%n = %n0, %steps = %c0) : (i32, i32) -> (i32, i32) {
      %go = arith.cmpi ne, %n, %c1 : i32
      scf.condition(%go) %n, %steps : i32, i32
    } do {
    ^bb0(%n: i32, %steps: i32):
      %r = arith.remsi %n, %c2 : i32
      %odd = arith.cmpi ne, %r, %c0 : i32
      %h = arith.divsi %n, %c2 : i32
      %t = arith.muli %n, %c3 : i32
      %t1 = arith.addi %t, %c1 : i32
      %nn = arith.select %odd, %t1, %h : i32
      %s1 = arith.addi %steps, %c1 : i32
      scf.yield %nn, %s1 : i32, i32
    }
    %p = "tt.addptr"(%out, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p, %res#1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return
  }
}
"""


def _collatz(n):
    s = 0
    while n != 1:
        n = 3 * n + 1 if n % 2 else n // 2
        s += 1
    return s


def test_while_divergent():
    P = 50
    out = np.full(P, -1, np.int32)
    launch(compile_ttir(WHILE), (P,), out)
    np.testing.assert_array_equal(out, [_collatz(i + 1) for i in range(P)])


CALL = """
module {
  func.func private @bump(%p: !tt.ptr<i32>, %v: i32) -> i32 {
    %c10 = arith.constant 10 : i32
    %w = arith.muli %v, %c10 : i32
    "tt.store"(%p, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return %w : i32
  }
  func.func public @caller(%out: !tt.ptr<i32>, %out2: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c3 = arith.constant 3 : i32
    %small = arith.cmpi slt, %pid, %c3 : i32
    %p = "tt.addptr"(%out, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    %r = scf.if %small -> (i32) {
      %w = func.call @bump(%p, %pid) : (!tt.ptr<i32>, i32) -> i32
      scf.yield %w : i32
    } else {
      scf.yield %pid : i32
    }
    %p2 = "tt.addptr"(%out2, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p2, %r) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return
  }
}
"""


def test_noinline_call_under_mask():
    out = np.full(6, -1, np.int32)
    out2 = np.full(6, -1, np.int32)
    k = compile_ttir(CALL)
    launch(k, (6,), out, out2)
    np.testing.assert_array_equal(out, [0, 10, 20, -1, -1, -1])
    np.testing.assert_array_equal(out2, [0, 10, 20, 3, 4, 5])
    assert "def _f_bump(_ctx, _active" in k.asm["npy"]
