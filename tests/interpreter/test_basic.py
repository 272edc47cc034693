"""Hand-written TTIR run on the interpreter, checked against numpy."""
import numpy as np
import pytest

from conftest import compile_ttir, launch

VADD = """
module {
  func.func public @vadd(%x: !tt.ptr<DT>, %y: !tt.ptr<DT>, %out: !tt.ptr<DT>, %n: i32) {
    %c = arith.constant BLOCK : i32
    %pid = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %s = arith.muli %pid, %c : i32
    %r = "tt.make_range"() {start = 0 : i32, end = BLOCK : i32} : () -> tensor<BLOCKxi32>
    %ss = "tt.splat"(%s) : (i32) -> tensor<BLOCKxi32>
    %o = arith.addi %ss, %r : tensor<BLOCKxi32>
    %ns = "tt.splat"(%n) : (i32) -> tensor<BLOCKxi32>
    %m = arith.cmpi slt, %o, %ns : tensor<BLOCKxi32>
    %xp = "tt.splat"(%x) : (!tt.ptr<DT>) -> tensor<BLOCKx!tt.ptr<DT>>
    %xa = "tt.addptr"(%xp, %o) : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxi32>) -> tensor<BLOCKx!tt.ptr<DT>>
    %xv = "tt.load"(%xa, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxi1>) -> tensor<BLOCKxDT>
    %yp = "tt.splat"(%y) : (!tt.ptr<DT>) -> tensor<BLOCKx!tt.ptr<DT>>
    %ya = "tt.addptr"(%yp, %o) : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxi32>) -> tensor<BLOCKx!tt.ptr<DT>>
    %yv = "tt.load"(%ya, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxi1>) -> tensor<BLOCKxDT>
    %z = ADD %xv, %yv : tensor<BLOCKxDT>
    %op = "tt.splat"(%out) : (!tt.ptr<DT>) -> tensor<BLOCKx!tt.ptr<DT>>
    %oa = "tt.addptr"(%op, %o) : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxi32>) -> tensor<BLOCKx!tt.ptr<DT>>
    "tt.store"(%oa, %z, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<BLOCKx!tt.ptr<DT>>, tensor<BLOCKxDT>, tensor<BLOCKxi1>) -> ()
    return
  }
}
"""


def vadd(dt, block, add):
    return compile_ttir(VADD.replace("BLOCK", str(block)).replace("DT", dt).replace("ADD", add))


@pytest.mark.parametrize("dt,npdt,add", [("f32", np.float32, "arith.addf"), ("f16", np.float16, "arith.addf"),
                                         ("i32", np.int32, "arith.addi")])
def test_vadd_masked_non_pow2(dt, npdt, add, rng):
    n = 1000
    x = (rng.standard_normal(n) * 100).astype(npdt)
    y = (rng.standard_normal(n) * 100).astype(npdt)
    out = np.zeros(n + 5, npdt)  # tail must stay untouched
    k = vadd(dt, 128, add)
    launch(k, (8,), x, y, out, n)
    np.testing.assert_array_equal(out[:n], x + y)
    assert (out[n:] == 0).all()
    assert "def kernel(" in k.asm["npy"]


def test_vadd_chunked(monkeypatch, rng):
    from tritium_interpreter import runtime
    monkeypatch.setattr(runtime, "BUDGET", 300)  # forces chunks of 2 programs
    n = 1000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    launch(vadd("f32", 128, "arith.addf"), (8,), x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


def test_vadd_large_grid_relaunch(rng):
    # A million elements over 1024 programs, launched twice on new inputs: the cached
    # program's second run must see the new buffers (speed is bench/interpreter.py's job).
    n = 1 << 20
    k = vadd("f32", 1024, "arith.addf")
    for _ in range(2):
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        launch(k, (n // 1024,), x, y, out, n)
        np.testing.assert_array_equal(out, x + y)


GRID2 = """
module {
  func.func public @g(%out: !tt.ptr<i32>) {
    %x = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
    %y = "tt.get_program_id"() {axis = 1 : i32} : () -> i32
    %z = "tt.get_program_id"() {axis = 2 : i32} : () -> i32
    %nx = "tt.get_num_programs"() {axis = 0 : i32} : () -> i32
    %ny = "tt.get_num_programs"() {axis = 1 : i32} : () -> i32
    %t = arith.muli %z, %ny : i32
    %t2 = arith.addi %t, %y : i32
    %t3 = arith.muli %t2, %nx : i32
    %lin = arith.addi %t3, %x : i32
    %c100 = arith.constant 100 : i32
    %c10 = arith.constant 10 : i32
    %a = arith.muli %z, %c100 : i32
    %b = arith.muli %y, %c10 : i32
    %ab = arith.addi %a, %b : i32
    %v = arith.addi %ab, %x : i32
    %p = "tt.addptr"(%out, %lin) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.store"(%p, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<i32>, i32) -> ()
    return
  }
}
"""


def test_3d_grid_program_ids():
    out = np.full(3 * 4 * 2, -1, np.int32)
    launch(compile_ttir(GRID2), (3, 4, 2), out)
    z, y, x = np.meshgrid(np.arange(2), np.arange(4), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(out, (z * 100 + y * 10 + x).reshape(-1))


def _elementwise_kernel(dt, body, n=64, nin=2, outdt=None):
    """One program; loads nin inputs of type dt, runs body (uses %a, %b, %c), stores %r of type outdt."""
    outdt = outdt or dt
    ins = "".join(f"%p{i}: !tt.ptr<{dt}>, " for i in range(nin))
    loads = ""
    for i, nm in zip(range(nin), "abc"):
        loads += f"""
    %sp{i} = "tt.splat"(%p{i}) : (!tt.ptr<{dt}>) -> tensor<{n}x!tt.ptr<{dt}>>
    %ad{i} = "tt.addptr"(%sp{i}, %r) : (tensor<{n}x!tt.ptr<{dt}>>, tensor<{n}xi32>) -> tensor<{n}x!tt.ptr<{dt}>>
    %{nm} = "tt.load"(%ad{i}) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<{n}x!tt.ptr<{dt}>>) -> tensor<{n}x{dt}>"""
    return compile_ttir(f"""
module {{
  func.func public @ew({ins}%o: !tt.ptr<{outdt}>) {{
    %r = "tt.make_range"() {{start = 0 : i32, end = {n} : i32}} : () -> tensor<{n}xi32>{loads}
{body}
    %so = "tt.splat"(%o) : (!tt.ptr<{outdt}>) -> tensor<{n}x!tt.ptr<{outdt}>>
    %ao = "tt.addptr"(%so, %r) : (tensor<{n}x!tt.ptr<{outdt}>>, tensor<{n}xi32>) -> tensor<{n}x!tt.ptr<{outdt}>>
    "tt.store"(%ao, %res) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<{n}x!tt.ptr<{outdt}>>, tensor<{n}x{outdt}>) -> ()
    return
  }}
}}""")


def _i32_pairs(rng, n=64):
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[b == 0] = 7
    a[:4] = [-7, 7, -7, 7]
    b[:4] = [2, -2, -2, 2]
    return a, b


def _trunc_div(a, b):
    return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.int32)


INT_CASES = [
    ("arith.divsi", lambda a, b: _trunc_div(a, b)),
    ("arith.remsi", lambda a, b: (a - _trunc_div(a, b) * b).astype(np.int32)),
    ("arith.divui", lambda a, b: (a.view(np.uint32) // b.view(np.uint32)).view(np.int32)),
    ("arith.remui", lambda a, b: (a.view(np.uint32) % b.view(np.uint32)).view(np.int32)),
    ("arith.floordivsi", lambda a, b: a // b),
    ("arith.ceildivsi", lambda a, b: -((-a) // b)),
    ("arith.maxsi", np.maximum), ("arith.minsi", np.minimum),
    ("arith.maxui", lambda a, b: np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32)),
    ("arith.minui", lambda a, b: np.minimum(a.view(np.uint32), b.view(np.uint32)).view(np.int32)),
    ("arith.andi", np.bitwise_and), ("arith.ori", np.bitwise_or), ("arith.xori", np.bitwise_xor),
    ("arith.muli", np.multiply), ("arith.subi", np.subtract),
]


@pytest.mark.parametrize("op,ref", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_int_binary(op, ref, rng):
    a, b = _i32_pairs(rng)
    out = np.zeros(64, np.int32)
    k = _elementwise_kernel("i32", f"    %res = {op} %a, %b : tensor<64xi32>")
    launch(k, (1,), a, b, out)
    np.testing.assert_array_equal(out, ref(a, b))


SHIFT_CASES = [("arith.shli", lambda a, s: a << s), ("arith.shrsi", lambda a, s: a >> s),
               ("arith.shrui", lambda a, s: (a.view(np.uint32) >> s.view(np.uint32)).view(np.int32))]


@pytest.mark.parametrize("op,ref", SHIFT_CASES, ids=[c[0] for c in SHIFT_CASES])
def test_shifts(op, ref, rng):
    a = rng.integers(-2**31, 2**31 - 1, 64).astype(np.int32)
    s = rng.integers(0, 32, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    launch(_elementwise_kernel("i32", f"    %res = {op} %a, %b : tensor<64xi32>"), (1,), a, s, out)
    np.testing.assert_array_equal(out, ref(a, s))


CMPI = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
        "sge": np.greater_equal, "ult": lambda a, b: a.view(np.uint32) < b.view(np.uint32),
        "ule": lambda a, b: a.view(np.uint32) <= b.view(np.uint32),
        "ugt": lambda a, b: a.view(np.uint32) > b.view(np.uint32),
        "uge": lambda a, b: a.view(np.uint32) >= b.view(np.uint32)}


@pytest.mark.parametrize("pred", list(CMPI))
def test_cmpi_extui(pred, rng):
    a = rng.integers(-5, 5, 64).astype(np.int32)
    b = rng.integers(-5, 5, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    body = f"""    %t = arith.cmpi {pred}, %a, %b : tensor<64xi32>
    %res = arith.extui %t : tensor<64xi1> to tensor<64xi32>"""
    launch(_elementwise_kernel("i32", body), (1,), a, b, out)
    np.testing.assert_array_equal(out, CMPI[pred](a, b).astype(np.int32))


CMPF = {"oeq": lambda a, b: a == b, "ogt": lambda a, b: a > b, "oge": lambda a, b: a >= b,
        "olt": lambda a, b: a < b, "ole": lambda a, b: a <= b,
        "one": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
        "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b), "ueq": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
        "ugt": lambda a, b: ~(a <= b), "uge": lambda a, b: ~(a < b), "ult": lambda a, b: ~(a >= b),
        "ule": lambda a, b: ~(a > b), "une": lambda a, b: a != b, "uno": lambda a, b: np.isnan(a) | np.isnan(b),
        "false": lambda a, b: np.zeros(a.shape, bool), "true": lambda a, b: np.ones(a.shape, bool)}


@pytest.mark.parametrize("pred", list(CMPF))
def test_cmpf_select(pred, rng):
    a = rng.integers(-3, 3, 64).astype(np.float32)
    b = rng.integers(-3, 3, 64).astype(np.float32)
    a[::7] = np.nan
    b[::5] = np.nan
    out = np.zeros(64, np.float32)
    body = f"""    %t = arith.cmpf {pred}, %a, %b : tensor<64xf32>
    %one = arith.constant dense<1.0> : tensor<64xf32>
    %zero = arith.constant dense<0.0> : tensor<64xf32>
    %res = arith.select %t, %one, %zero : tensor<64xi1>, tensor<64xf32>"""
    launch(_elementwise_kernel("f32", body), (1,), a, b, out)
    np.testing.assert_array_equal(out, CMPF[pred](a, b).astype(np.float32))


def test_casts_int(rng):
    a = rng.integers(-2**31, 2**31 - 1, 64).astype(np.int32)
    a[:3] = [-1, 255, -129]
    out = np.zeros(64, np.int32)
    body = """    %t8 = arith.trunci %a : tensor<64xi32> to tensor<64xi8>
    %u = arith.extui %t8 : tensor<64xi8> to tensor<64xi32>
    %s = arith.extsi %t8 : tensor<64xi8> to tensor<64xi32>
    %c = arith.constant dense<1000> : tensor<64xi32>
    %us = arith.muli %u, %c : tensor<64xi32>
    %res = arith.addi %us, %s : tensor<64xi32>"""
    launch(_elementwise_kernel("i32", body, nin=1), (1,), a, out)
    t8 = a.astype(np.int8)
    np.testing.assert_array_equal(out, t8.view(np.uint8).astype(np.int32) * 1000 + t8.astype(np.int32))


def test_casts_float(rng):
    a = (rng.standard_normal(64) * 1000).astype(np.float32)
    a[0] = -3.7
    out = np.zeros(64, np.float32)
    body = """    %h = arith.truncf %a : tensor<64xf32> to tensor<64xf16>
    %i = arith.fptosi %h : tensor<64xf16> to tensor<64xi32>
    %f = arith.sitofp %i : tensor<64xi32> to tensor<64xf32>
    %u = arith.uitofp %i : tensor<64xi32> to tensor<64xf32>
    %bb = arith.bitcast %f : tensor<64xf32> to tensor<64xi32>
    %bf = arith.bitcast %bb : tensor<64xi32> to tensor<64xf32>
    %e = arith.extf %h : tensor<64xf16> to tensor<64xf32>
    %s = arith.addf %bf, %e : tensor<64xf32>
    %k = arith.constant dense<1.0e-6> : tensor<64xf32>
    %uu = arith.mulf %u, %k : tensor<64xf32>
    %res = arith.addf %s, %uu : tensor<64xf32>"""
    launch(_elementwise_kernel("f32", body, nin=1), (1,), a, out)
    h = a.astype(np.float16)
    i = h.astype(np.int32)
    ref = i.astype(np.float32) + h.astype(np.float32) + i.view(np.uint32).astype(np.float32) * np.float32(1e-6)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


MATH = [("math.exp", np.exp), ("math.exp2", np.exp2), ("math.log", lambda x: np.log(np.abs(x))),
        ("math.sqrt", lambda x: np.sqrt(np.abs(x))), ("math.rsqrt", lambda x: 1 / np.sqrt(np.abs(x))),
        ("math.sin", np.sin), ("math.cos", np.cos), ("math.tanh", np.tanh), ("math.floor", np.floor),
        ("math.ceil", np.ceil), ("math.absf", np.abs), ("arith.negf", np.negative),
        ("math.erf", None), ("math.log2", lambda x: np.log2(np.abs(x))), ("math.round", None)]


@pytest.mark.parametrize("op,ref", MATH, ids=[m[0] for m in MATH])
def test_math_unary(op, ref, rng):
    import math
    a = (rng.standard_normal(64) * 2).astype(np.float32)
    a[:4] = [0.5, -0.5, 2.5, -1.5]
    needs_abs = op in ("math.log", "math.sqrt", "math.rsqrt", "math.log2")
    body = ("    %x = math.absf %a : tensor<64xf32>\n" if needs_abs else "    %x = arith.addf %a, %a : tensor<64xf32>\n    %x2 = arith.constant dense<0.5> : tensor<64xf32>\n    %xx = arith.mulf %x, %x2 : tensor<64xf32>\n")
    arg = "%x" if needs_abs else "%xx"
    body += f"    %res = {op} {arg} : tensor<64xf32>"
    out = np.zeros(64, np.float32)
    launch(_elementwise_kernel("f32", body, nin=1), (1,), a, out)
    if op == "math.erf":
        expect = np.array([math.erf(v) for v in a], np.float32)
    elif op == "math.round":
        expect = np.array([math.copysign(math.floor(abs(v) + 0.5), v) for v in a], np.float32)
    else:
        expect = ref(a).astype(np.float32)
    np.testing.assert_allclose(out, expect, rtol=2e-6, atol=1e-6)


def test_fma_pow_maxnum(rng):
    a = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    c = rng.standard_normal(64).astype(np.float32)
    a[0] = np.nan
    body = """    %f = math.fma %a, %b, %c : tensor<64xf32>
    %m = arith.maxnumf %f, %b : tensor<64xf32>
    %mm = arith.maximumf %m, %c : tensor<64xf32>
    %ab = math.absf %b : tensor<64xf32>
    %p = math.powf %ab, %c : tensor<64xf32>
    %res = arith.addf %mm, %p : tensor<64xf32>"""
    out = np.zeros(64, np.float32)
    launch(_elementwise_kernel("f32", body, nin=3), (1,), a, b, c, out)
    f = a * b + c
    ref = np.maximum(np.fmax(f, b), c) + np.power(np.abs(b), c)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    assert not np.isnan(out[0])
