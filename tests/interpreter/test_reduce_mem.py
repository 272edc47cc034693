"""Reductions, scans, atomics, dot, block pointers, bf16, errors, printing, performance."""

import numpy as np
import pytest

from conftest import compile_ttir, launch
from tritium.errors import DeviceAssertionError, OutOfBoundsError

COMBINES = """
  func.func private @sumf(%a: f32, %b: f32) -> f32 {
    %r = arith.addf %a, %b : f32
    return %r : f32
  }
  func.func private @maxf(%a: f32, %b: f32) -> f32 {
    %r = arith.maxnumf %a, %b : f32
    return %r : f32
  }
  func.func private @custom(%a: f32, %b: f32) -> f32 {
    %aa = math.absf %a : f32
    %bb = math.absf %b : f32
    %gt = arith.cmpf ogt, %bb, %aa : f32
    %r = arith.select %gt, %b, %a : f32
    return %r : f32
  }
  func.func private @argmax(%v1: f32, %i1: i32, %v2: f32, %i2: i32) -> (f32, i32) {
    %gt = arith.cmpf ogt, %v1, %v2 : f32
    %eq = arith.cmpf oeq, %v1, %v2 : f32
    %lt = arith.cmpi slt, %i1, %i2 : i32
    %tie = arith.andi %eq, %lt : i1
    %pick = arith.ori %gt, %tie : i1
    %v = arith.select %pick, %v1, %v2 : f32
    %i = arith.select %pick, %i1, %i2 : i32
    return %v, %i : f32, i32
  }
  func.func private @addi(%a: i32, %b: i32) -> i32 {
    %r = arith.addi %a, %b : i32
    return %r : i32
  }
"""

ROWS = """
module {
COMBINES
  func.func public @rows(%x: !tt.ptr<f32>, %o1: !tt.ptr<f32>, %o2: !tt.ptr<f32>, %o3: !tt.ptr<i32>, %o4: !tt.ptr<f32>, %o5: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c = arith.constant 37 : i32
    %b = arith.muli %pid, %c : i32
    %r = "tt.make_range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %cs = "tt.splat"(%c) : (i32) -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %cs : tensor<64xi32>
    %bs = "tt.splat"(%b) : (i32) -> tensor<64xi32>
    %offs = arith.addi %bs, %r : tensor<64xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<f32>) -> tensor<64x!tt.ptr<f32>>
    %xp = "tt.addptr"(%xs, %offs) : (tensor<64x!tt.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tt.ptr<f32>>
    %zero = arith.constant dense<0.0> : tensor<64xf32>
    %v = "tt.load"(%xp, %m, %zero) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<64x!tt.ptr<f32>>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
    %s = "tt.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @sumf} : (tensor<64xf32>) -> f32
    %cu = "tt.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @custom} : (tensor<64xf32>) -> f32
    %am:2 = "tt.reduce"(%v, %r) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @argmax} : (tensor<64xf32>, tensor<64xi32>) -> (f32, i32)
    %cum = "tt.scan"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @sumf, reverse = false} : (tensor<64xf32>) -> tensor<64xf32>
    %ci = "tt.scan"(%r) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @addi, reverse = true} : (tensor<64xi32>) -> tensor<64xi32>
    %p1 = "tt.addptr"(%o1, %pid) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    "tt.store"(%p1, %s) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<f32>, f32) -> ()
    %p2 = "tt.addptr"(%o2, %pid) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    "tt.store"(%p2, %cu) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<f32>, f32) -> ()
    %p3 = "tt.addptr"(%o3, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p3, %am#1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    %c64 = arith.constant 64 : i32
    %b64 = arith.muli %pid, %c64 : i32
    %b64s = "tt.splat"(%b64) : (i32) -> tensor<64xi32>
    %o64 = arith.addi %b64s, %r : tensor<64xi32>
    %o4s = "tt.splat"(%o4) : (!tt.ptr<f32>) -> tensor<64x!tt.ptr<f32>>
    %o4p = "tt.addptr"(%o4s, %o64) : (tensor<64x!tt.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tt.ptr<f32>>
    "tt.store"(%o4p, %cum) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>) -> ()
    %o5s = "tt.splat"(%o5) : (!tt.ptr<i32>) -> tensor<64x!tt.ptr<i32>>
    %o5p = "tt.addptr"(%o5s, %o64) : (tensor<64x!tt.ptr<i32>>, tensor<64xi32>) -> tensor<64x!tt.ptr<i32>>
    "tt.store"(%o5p, %ci) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tt.ptr<i32>>, tensor<64xi32>) -> ()
    return
  }
}
""".replace("COMBINES", COMBINES)


def test_reduce_scan_argmax(rng):
    P, n = 5, 37
    x = rng.integers(-20, 20, P * n).astype(np.float32)  # many ties for argmax
    o1, o2, o4 = np.zeros(P, np.float32), np.zeros(P, np.float32), np.zeros(P * 64, np.float32)
    o3, o5 = np.zeros(P, np.int32), np.zeros(P * 64, np.int32)
    k = compile_ttir(ROWS)
    launch(k, (P,), x, o1, o2, o3, o4, o5)
    xr = x.reshape(P, n)
    full = np.zeros((P, 64), np.float32)
    full[:, :n] = xr
    np.testing.assert_allclose(o1, xr.sum(1), rtol=1e-6)
    np.testing.assert_array_equal(o2, [row[np.argmax(np.abs(row))] for row in full])
    np.testing.assert_array_equal(o3, full.argmax(1))  # first index among ties
    np.testing.assert_allclose(o4.reshape(P, 64), np.cumsum(full, 1), rtol=1e-6)
    np.testing.assert_array_equal(o5.reshape(P, 64), np.broadcast_to(np.cumsum(np.arange(64)[::-1])[::-1], (P, 64)))
    src = k.asm["npy"]
    assert "_rt.reduce_ufunc(np.add" in src and "_rt.reduce_generic(" in src and "_rt.scan_ufunc(np.add" in src


ATOMIC = """
module {
  func.func public @atom(%cnt: !tt.ptr<i32>, %old: !tt.ptr<i32>, %hist: !tt.ptr<f32>, %mx: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c1 = arith.constant 1 : i32
    %o = "tt.atomic_rmw"(%cnt, %c1) {atomic_rmw_op = 4 : i32, sem = 4 : i32, scope = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> i32
    %po = "tt.addptr"(%old, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%po, %o) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    %r = "tt.make_range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
    %c4 = arith.constant dense<4> : tensor<8xi32>
    %bin = arith.remsi %r, %c4 : tensor<8xi32>
    %hs = "tt.splat"(%hist) : (!tt.ptr<f32>) -> tensor<8x!tt.ptr<f32>>
    %hp = "tt.addptr"(%hs, %bin) : (tensor<8x!tt.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tt.ptr<f32>>
    %half = arith.constant dense<0.5> : tensor<8xf32>
    %x = "tt.atomic_rmw"(%hp, %half) {atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tt.ptr<f32>>, tensor<8xf32>) -> tensor<8xf32>
    %m = "tt.atomic_rmw"(%mx, %pid) {atomic_rmw_op = 6 : i32, sem = 4 : i32, scope = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> i32
    return
  }
}
"""


def test_atomics_with_duplicates():
    P = 100
    cnt, old = np.zeros(1, np.int32), np.full(P, -1, np.int32)
    hist, mx = np.zeros(4, np.float32), np.full(1, -5, np.int32)
    launch(compile_ttir(ATOMIC), (P,), cnt, old, hist, mx)
    assert cnt[0] == P
    np.testing.assert_array_equal(np.sort(old), np.arange(P))
    np.testing.assert_array_equal(hist, np.full(4, P * 2 * 0.5, np.float32))
    assert mx[0] == P - 1


CAS = """
module {
  func.func public @cas(%lock: !tt.ptr<i32>, %got: !tt.ptr<i32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %who = arith.addi %pid, %c1 : i32
    %o = "tt.atomic_cas"(%lock, %c0, %who) {sem = 4 : i32, scope = 1 : i32} : (!tt.ptr<i32>, i32, i32) -> i32
    %p = "tt.addptr"(%got, %pid) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p, %o) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return
  }
}
"""


def test_atomic_cas_program_order():
    lock, got = np.zeros(1, np.int32), np.full(4, -1, np.int32)
    launch(compile_ttir(CAS), (4,), lock, got)
    assert lock[0] == 1
    np.testing.assert_array_equal(got, [0, 1, 1, 1])


OOB = """
module {
  func.func public @oob(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32 loc("my_kernel.py":3:10)
    %c = arith.constant 16 : i32
    %b = arith.muli %pid, %c : i32
    %r = "tt.make_range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
    %bs = "tt.splat"(%b) : (i32) -> tensor<16xi32>
    %offs = arith.addi %bs, %r : tensor<16xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<f32>) -> tensor<16x!tt.ptr<f32>>
    %xp = "tt.addptr"(%xs, %offs) : (tensor<16x!tt.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<f32>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tt.ptr<f32>>) -> tensor<16xf32> loc("my_kernel.py":7:8)
    %os = "tt.splat"(%o) : (!tt.ptr<f32>) -> tensor<16x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %offs) : (tensor<16x!tt.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<f32>>
    "tt.store"(%op, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>) -> ()
    return
  }
}
"""


def test_oob_load_names_line_and_pid():
    x = np.zeros(40, np.float32)  # programs 0, 1 fine; program 2 reads 40..47 out of bounds
    o = np.zeros(64, np.float32)
    with pytest.raises(OutOfBoundsError) as ei:
        launch(compile_ttir(OOB), (4,), x, o)
    msg = str(ei.value)
    assert "my_kernel.py:7" in msg and "(2, 0, 0)" in msg and "load" in msg and "40" in msg, msg
    assert ei.value.pid == (2, 0, 0)
    assert (o == 0).all()  # nothing stored before the failing load (programs run together)


def test_in_bounds_same_kernel_passes():
    x = np.arange(64, dtype=np.float32)
    o = np.zeros(64, np.float32)
    launch(compile_ttir(OOB), (4,), x, o)
    np.testing.assert_array_equal(o, x)


ASSERT_PRINT = """
module {
  func.func public @ap(%lim: i32) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %r = "tt.make_range"() {start = 0 : i32, end = 2 : i32} : () -> tensor<2xi32>
    %ps = "tt.splat"(%pid) : (i32) -> tensor<2xi32>
    %v = arith.addi %ps, %r : tensor<2xi32>
    "tt.print"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, prefix = " val: ", hex = false, isSigned = array<i32: 1>} : (tensor<2xi32>) -> ()
    %ls = "tt.splat"(%lim) : (i32) -> tensor<2xi32>
    %ok = arith.cmpi slt, %v, %ls : tensor<2xi32>
    "tt.assert"(%ok) {message = "v must stay below lim"} : (tensor<2xi1>) -> () loc("ak.py":12:4)
    return
  }
}
"""


def test_print_and_assert(capsys):
    k = compile_ttir(ASSERT_PRINT)
    launch(k, (2,), 100)
    out = capsys.readouterr().out
    assert "pid (1, 0, 0) idx (  1)  val: 2" in out, out
    assert len(out.strip().splitlines()) == 4
    with pytest.raises(DeviceAssertionError) as ei:
        launch(k, (3,), 2)
    msg = str(ei.value)
    assert "v must stay below lim" in msg and "ak.py:12" in msg and "(1, 0, 0)" in msg, msg


DOT = """
module {
  func.func public @dot(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>) {
    %r16 = "tt.make_range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
    %r32 = "tt.make_range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rows = "tt.expand_dims"(%r16) {axis = 1 : i32} : (tensor<16xi32>) -> tensor<16x1xi32>
    %cols = "tt.expand_dims"(%r32) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32>
    %c32 = arith.constant dense<32> : tensor<16x1xi32>
    %rs = arith.muli %rows, %c32 : tensor<16x1xi32>
    %rb = "tt.broadcast"(%rs) : (tensor<16x1xi32>) -> tensor<16x32xi32>
    %cb = "tt.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<16x32xi32>
    %off = arith.addi %rb, %cb : tensor<16x32xi32>
    %as = "tt.splat"(%a) : (!tt.ptr<f16>) -> tensor<16x32x!tt.ptr<f16>>
    %ap = "tt.addptr"(%as, %off) : (tensor<16x32x!tt.ptr<f16>>, tensor<16x32xi32>) -> tensor<16x32x!tt.ptr<f16>>
    %av = "tt.load"(%ap) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x32x!tt.ptr<f16>>) -> tensor<16x32xf16>
    %bs = "tt.splat"(%b) : (!tt.ptr<f16>) -> tensor<16x32x!tt.ptr<f16>>
    %bp = "tt.addptr"(%bs, %off) : (tensor<16x32x!tt.ptr<f16>>, tensor<16x32xi32>) -> tensor<16x32x!tt.ptr<f16>>
    %bv = "tt.load"(%bp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x32x!tt.ptr<f16>>) -> tensor<16x32xf16>
    %bt = "tt.trans"(%bv) {order = array<i32: 1, 0>} : (tensor<16x32xf16>) -> tensor<32x16xf16>
    %acc = arith.constant dense<1.0> : tensor<16x16xf32>
    %d = "tt.dot"(%av, %bt, %acc) {inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32} : (tensor<16x32xf16>, tensor<32x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %ptr = "tt.make_tensor_ptr"(%c, %c16, %c16, %c16s, %c1s, %z, %z) {order = array<i32: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 2, 2>} : (!tt.ptr<f32>, i64, i64, i64, i64, i32, i32) -> !tt.ptr<tensor<16x16xf32>>
    "tt.store"(%ptr, %d) {boundaryCheck = array<i32: 0, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<tensor<16x16xf32>>, tensor<16x16xf32>) -> ()
    return
  }
}
""".replace("%ptr =", """%c16 = arith.constant 12 : i64
    %c16s = arith.constant 16 : i64
    %c1s = arith.constant 1 : i64
    %z = arith.constant 0 : i32
    %ptr =""")


def test_dot_trans_block_ptr_store(rng):
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((16, 32)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    launch(compile_ttir(DOT), (1,), a, b, c)
    ref = a.astype(np.float32) @ b.astype(np.float32).T + 1
    np.testing.assert_allclose(c[:12, :12], ref[:12, :12], rtol=1e-3, atol=1e-3)
    assert (c[12:] == 0).all() and (c[:, 12:] == 0).all()  # boundary check on a 12x12 shape


BF16 = """
module {
  func.func public @bf(%x: !tt.ptr<bf16>, %o: !tt.ptr<bf16>, %of: !tt.ptr<f32>) {
    %r = "tt.make_range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<bf16>) -> tensor<32x!tt.ptr<bf16>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<32x!tt.ptr<bf16>>, tensor<32xi32>) -> tensor<32x!tt.ptr<bf16>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<32x!tt.ptr<bf16>>) -> tensor<32xbf16>
    %t = arith.constant dense<3.0> : tensor<32xbf16>
    %w = arith.mulf %v, %t : tensor<32xbf16>
    %os = "tt.splat"(%o) : (!tt.ptr<bf16>) -> tensor<32x!tt.ptr<bf16>>
    %op = "tt.addptr"(%os, %r) : (tensor<32x!tt.ptr<bf16>>, tensor<32xi32>) -> tensor<32x!tt.ptr<bf16>>
    "tt.store"(%op, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<32x!tt.ptr<bf16>>, tensor<32xbf16>) -> ()
    %f = arith.extf %v : tensor<32xbf16> to tensor<32xf32>
    %ofs = "tt.splat"(%of) : (!tt.ptr<f32>) -> tensor<32x!tt.ptr<f32>>
    %ofp = "tt.addptr"(%ofs, %r) : (tensor<32x!tt.ptr<f32>>, tensor<32xi32>) -> tensor<32x!tt.ptr<f32>>
    "tt.store"(%ofp, %f) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> ()
    return
  }
}
"""


def _bf16_round(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16).view(np.float32)


def test_bf16_buffers_are_16_bit(rng):
    vals = _bf16_round(rng.standard_normal(32).astype(np.float32))
    bits = (vals.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    out = np.zeros(32, np.int16)
    of = np.zeros(32, np.float32)
    launch(compile_ttir(BF16), (1,), bits, out, of)
    np.testing.assert_array_equal(of, vals)
    got = (out.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, _bf16_round(vals * 3))


SOFTMAX = """
module {
  func.func private @maxf(%a: f32, %b: f32) -> f32 {
    %r = arith.maxnumf %a, %b : f32
    return %r : f32
  }
  func.func private @sumf(%a: f32, %b: f32) -> f32 {
    %r = arith.addf %a, %b : f32
    return %r : f32
  }
  func.func public @softmax(%out: !tt.ptr<f32>, %in: !tt.ptr<f32>, %stride: i32, %ncols: i32) {
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %start = arith.muli %pid, %stride : i32
    %r = "tt.make_range"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
    %ns = "tt.splat"(%ncols) : (i32) -> tensor<1024xi32>
    %m = arith.cmpi slt, %r, %ns : tensor<1024xi32>
    %ss = "tt.splat"(%start) : (i32) -> tensor<1024xi32>
    %offs = arith.addi %ss, %r : tensor<1024xi32>
    %is = "tt.splat"(%in) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>>
    %ip = "tt.addptr"(%is, %offs) : (tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tt.ptr<f32>>
    %ninf = arith.constant dense<0xFF800000> : tensor<1024xf32>
    %x = "tt.load"(%ip, %m, %ninf) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1024x!tt.ptr<f32>>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
    %mx = "tt.reduce"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @maxf} : (tensor<1024xf32>) -> f32
    %mxs = "tt.splat"(%mx) : (f32) -> tensor<1024xf32>
    %sh = arith.subf %x, %mxs : tensor<1024xf32>
    %e = math.exp %sh : tensor<1024xf32>
    %den = "tt.reduce"(%e) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @sumf} : (tensor<1024xf32>) -> f32
    %ds = "tt.splat"(%den) : (f32) -> tensor<1024xf32>
    %y = arith.divf %e, %ds : tensor<1024xf32>
    %os = "tt.splat"(%out) : (!tt.ptr<f32>) -> tensor<1024x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %offs) : (tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tt.ptr<f32>>
    "tt.store"(%op, %y, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1024x!tt.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>) -> ()
    return
  }
}
"""


def test_softmax_correct(rng):
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    out = np.zeros_like(x)
    k = compile_ttir(SOFTMAX)
    launch(k, (1024,), out, x, 1024, 1024)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    # non-power-of-2 columns: masked lanes read -inf
    x2 = rng.standard_normal((7, 1000)).astype(np.float32)
    out2 = np.zeros_like(x2)
    launch(k, (7,), out2, x2, 1000, 1000)
    e2 = np.exp(x2 - x2.max(1, keepdims=True))
    np.testing.assert_allclose(out2, e2 / e2.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


LAYERNORM = """
module {
  func.func private @sumf(%a: f32, %b: f32) -> f32 {
    %r = arith.addf %a, %b : f32
    return %r : f32
  }
  func.func public @ln(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %W: !tt.ptr<f32>, %B: !tt.ptr<f32>, %stride: i32, %N: i32, %eps: f32) {
    %row = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %base = arith.muli %row, %stride : i32
    %c0 = arith.constant 0 : i32
    %cB = arith.constant 256 : i32
    %r = "tt.make_range"() {start = 0 : i32, end = 256 : i32} : () -> tensor<256xi32>
    %ns = "tt.splat"(%N) : (i32) -> tensor<256xi32>
    %bs = "tt.splat"(%base) : (i32) -> tensor<256xi32>
    %xs = "tt.splat"(%X) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    %zero = arith.constant dense<0.0> : tensor<256xf32>
    %acc = scf.for %off = %c0 to %N step %cB iter_args(%a = %zero) -> (tensor<256xf32>) : i32 {
      %os = "tt.splat"(%off) : (i32) -> tensor<256xi32>
      %cols = arith.addi %os, %r : tensor<256xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<256xi32>
      %o = arith.addi %bs, %cols : tensor<256xi32>
      %p = "tt.addptr"(%xs, %o) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      %x = "tt.load"(%p, %m, %zero) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tt.ptr<f32>>, tensor<256xi1>, tensor<256xf32>) -> tensor<256xf32>
      %a2 = arith.addf %a, %x : tensor<256xf32>
      scf.yield %a2 : tensor<256xf32>
    }
    %sum = "tt.reduce"(%acc) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @sumf} : (tensor<256xf32>) -> f32
    %nf = arith.sitofp %N : i32 to f32
    %mean = arith.divf %sum, %nf : f32
    %means = "tt.splat"(%mean) : (f32) -> tensor<256xf32>
    %vacc = scf.for %off = %c0 to %N step %cB iter_args(%a = %zero) -> (tensor<256xf32>) : i32 {
      %os = "tt.splat"(%off) : (i32) -> tensor<256xi32>
      %cols = arith.addi %os, %r : tensor<256xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<256xi32>
      %o = arith.addi %bs, %cols : tensor<256xi32>
      %p = "tt.addptr"(%xs, %o) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      %x = "tt.load"(%p, %m, %zero) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tt.ptr<f32>>, tensor<256xi1>, tensor<256xf32>) -> tensor<256xf32>
      %d = arith.subf %x, %means : tensor<256xf32>
      %dm = arith.select %m, %d, %zero : tensor<256xi1>, tensor<256xf32>
      %sq = arith.mulf %dm, %dm : tensor<256xf32>
      %a2 = arith.addf %a, %sq : tensor<256xf32>
      scf.yield %a2 : tensor<256xf32>
    }
    %vs = "tt.reduce"(%vacc) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, axis = 0 : i32, combine = @sumf} : (tensor<256xf32>) -> f32
    %var = arith.divf %vs, %nf : f32
    %ve = arith.addf %var, %eps : f32
    %rstd = math.rsqrt %ve : f32
    %rstds = "tt.splat"(%rstd) : (f32) -> tensor<256xf32>
    %ws = "tt.splat"(%W) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    %bbs = "tt.splat"(%B) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    %ys = "tt.splat"(%Y) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    scf.for %off = %c0 to %N step %cB : i32 {
      %os = "tt.splat"(%off) : (i32) -> tensor<256xi32>
      %cols = arith.addi %os, %r : tensor<256xi32>
      %m = arith.cmpi slt, %cols, %ns : tensor<256xi32>
      %o = arith.addi %bs, %cols : tensor<256xi32>
      %p = "tt.addptr"(%xs, %o) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      %x = "tt.load"(%p, %m, %zero) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tt.ptr<f32>>, tensor<256xi1>, tensor<256xf32>) -> tensor<256xf32>
      %wp = "tt.addptr"(%ws, %cols) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      %w = "tt.load"(%wp, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<256x!tt.ptr<f32>>, tensor<256xi1>) -> tensor<256xf32>
      %bp = "tt.addptr"(%bbs, %cols) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      %b = "tt.load"(%bp, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<256x!tt.ptr<f32>>, tensor<256xi1>) -> tensor<256xf32>
      %d = arith.subf %x, %means : tensor<256xf32>
      %n = arith.mulf %d, %rstds : tensor<256xf32>
      %nw = arith.mulf %n, %w : tensor<256xf32>
      %y = arith.addf %nw, %b : tensor<256xf32>
      %yp = "tt.addptr"(%ys, %o) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
      "tt.store"(%yp, %y, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tt.ptr<f32>>, tensor<256xf32>, tensor<256xi1>) -> ()
    }
    return
  }
}
"""


def test_layernorm_correct(rng):
    M, N = 512, 1000
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    y = np.zeros_like(x)
    k = compile_ttir(LAYERNORM)
    launch(k, (M,), x, y, w, b, N, N, 1e-5)
    mu = x.mean(1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
