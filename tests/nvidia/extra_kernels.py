"""Kernels for the lowering rules added for scans, histograms, gathers, block pointers, fp8 casts, non-splat
constants and inline asm; compiled by tests/nvidia/test_rules_*.py (no GPU) and run by tests/gpu/test_rules_gpu.py."""
import tritium as triton
import tritium.language as tl


@triton.jit
def cumsum_1d(X, Y, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.store(Y + offs, tl.cumsum(x, 0, reverse=REVERSE), mask=m)


@triton.jit
def cumsum_2d(X, Y, stride, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    x = tl.load(X + rm * stride + rn)
    tl.store(Y + rm * stride + rn, tl.cumsum(x, AXIS, reverse=REVERSE))


@triton.jit
def _affine_combine(a1, b1, a2, b2):
    # composition of x -> a1*x + b1 then x -> a2*x + b2: associative, not commutative
    return a1 * a2, b1 * a2 + b2


@triton.jit
def affine_scan(A, B, OA, OB, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs)
    b = tl.load(B + offs)
    ra, rb = tl.associative_scan((a, b), 0, _affine_combine, reverse=REVERSE)
    tl.store(OA + offs, ra)
    tl.store(OB + offs, rb)


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def cummax_2d(X, Y, stride, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    x = tl.load(X + rm * stride + rn)
    tl.store(Y + rm * stride + rn, tl.associative_scan(x, AXIS, _max_combine))


@triton.jit
def block_ptr_copy(X, Y, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr, SCALE: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(X, (M, N), (sxm, sxn), (pid * BM, 0), (BM, BN), (1, 0))
    yb = tl.make_block_ptr(Y, (M, N), (sym, syn), (pid * BM, 0), (BM, BN), (1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        x = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
        tl.store(yb, x * SCALE, boundary_check=(0, 1))
        xb = tl.advance(xb, (0, BN))
        yb = tl.advance(yb, (0, BN))


@triton.jit
def block_ptr_rowsum(X, OUT, M, N, sxm, BM: tl.constexpr, BN: tl.constexpr):
    # a 2-D block walked along columns with a loop-carried block pointer and accumulator; rows checked only
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(X, (M, N), (sxm, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), tl.float32)
    for _ in range(0, N // BN):
        acc += tl.sum(tl.load(xb, boundary_check=(0,)), 1)
        xb = tl.advance(xb, (0, BN))
    ob = tl.make_block_ptr(OUT, (M,), (1,), (pid * BM,), (BM,), (0,))
    tl.store(ob, acc, boundary_check=(0,))


@triton.jit
def block_ptr_1d_nan(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(X, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    x = tl.load(xb, boundary_check=(0,), padding_option="nan")
    yb = tl.make_block_ptr(Y, (pid * BLOCK + BLOCK,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    tl.store(yb, x)


@triton.jit
def fp8_roundtrip(X, Y8, Y, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    q = x.to(FP8)
    tl.store(Y8 + offs, q, mask=m)
    tl.store(Y + offs, q.to(X.dtype.element_ty), mask=m)


@triton.jit
def fp8_load(X8, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X8 + offs, mask=m)
    tl.store(Y + offs, x.to(tl.float32) * 2, mask=m)


# ------------------------------------------------------------------ hand-written TTIR (ops without a tl builtin)
BL = "#ttg.blocked"


def ttir(body, args):
    return f"""module {{
  func.func public @k({args}) {{
{body}
    return
  }}
}}"""


HIST = ttir("""
    %r = "tt.make_range"() {start = 0 : i32, end = 512 : i32} : () -> tensor<512xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<i32>) -> tensor<512x!tt.ptr<i32>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<512x!tt.ptr<i32>>, tensor<512xi32>) -> tensor<512x!tt.ptr<i32>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<512x!tt.ptr<i32>>) -> tensor<512xi32>
    %h = "tt.histogram"(%v) : (tensor<512xi32>) -> tensor<64xi32>
    %b = "tt.make_range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %os = "tt.splat"(%o) : (!tt.ptr<i32>) -> tensor<64x!tt.ptr<i32>>
    %op = "tt.addptr"(%os, %b) : (tensor<64x!tt.ptr<i32>>, tensor<64xi32>) -> tensor<64x!tt.ptr<i32>>
    "tt.store"(%op, %h) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tt.ptr<i32>>, tensor<64xi32>) -> ()
""", "%x: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<i32> {tt.divisibility = 16 : i32}")

GATHER = ttir("""
    %r = "tt.make_range"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
    %is = "tt.splat"(%i) : (!tt.ptr<i32>) -> tensor<128x!tt.ptr<i32>>
    %ip = "tt.addptr"(%is, %r) : (tensor<128x!tt.ptr<i32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<i32>>
    %idx = "tt.load"(%ip) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tt.ptr<i32>>) -> tensor<128xi32>
    %g = "tt.gather"(%v, %idx) {axis = 0 : i32} : (tensor<128xf32>, tensor<128xi32>) -> tensor<128xf32>
    %os = "tt.splat"(%o) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %r) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
    "tt.store"(%op, %g) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
""", "%x: !tt.ptr<f32>, %i: !tt.ptr<i32>, %o: !tt.ptr<f32>")

CONST = ttir("""
    %r = "tt.make_range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
    %c = arith.constant dense<[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]> : tensor<8xf32>
    %m = arith.constant dense<[true, false, true, true, false, true, true, false]> : tensor<8xi1>
    %os = "tt.splat"(%o) : (!tt.ptr<f32>) -> tensor<8x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %r) : (tensor<8x!tt.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tt.ptr<f32>>
    "tt.store"(%op, %c, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x!tt.ptr<f32>>, tensor<8xf32>, tensor<8xi1>) -> ()
""", "%o: !tt.ptr<f32>")

ASM = ttir("""
    %r = "tt.make_range"() {start = 0 : i32, end = 512 : i32} : () -> tensor<512xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<i8>) -> tensor<512x!tt.ptr<i8>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<512x!tt.ptr<i8>>, tensor<512xi32>) -> tensor<512x!tt.ptr<i8>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<512x!tt.ptr<i8>>) -> tensor<512xi8>
    %w = "tt.elementwise_inline_asm"(%v) {asm_string = "xor.b32 $0, $1, 0x01010101;", constraints = "=r,r", pure = true, packed_element = 4 : i32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<512xi8>) -> tensor<512xi8>
    %os = "tt.splat"(%o) : (!tt.ptr<i8>) -> tensor<512x!tt.ptr<i8>>
    %op = "tt.addptr"(%os, %r) : (tensor<512x!tt.ptr<i8>>, tensor<512xi32>) -> tensor<512x!tt.ptr<i8>>
    "tt.store"(%op, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<512x!tt.ptr<i8>>, tensor<512xi8>) -> ()
""", "%x: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %o: !tt.ptr<i8> {tt.divisibility = 16 : i32}")

ASM2 = ttir("""
    %r = "tt.make_range"() {start = 0 : i32, end = 256 : i32} : () -> tensor<256xi32>
    %xs = "tt.splat"(%x) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    %xp = "tt.addptr"(%xs, %r) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
    %v = "tt.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<256x!tt.ptr<f32>>) -> tensor<256xf32>
    %a, %b = "tt.elementwise_inline_asm"(%v, %r) {asm_string = "mul.f32 $0, $2, 2.0;\\n add.s32 $1, $3, 1;", constraints = "=f,=r,f,r", pure = true, packed_element = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<256xf32>, tensor<256xi32>) -> (tensor<256xf32>, tensor<256xi32>)
    %s = arith.sitofp %b : tensor<256xi32> to tensor<256xf32>
    %t = arith.addf %a, %s : tensor<256xf32>
    %os = "tt.splat"(%o) : (!tt.ptr<f32>) -> tensor<256x!tt.ptr<f32>>
    %op = "tt.addptr"(%os, %r) : (tensor<256x!tt.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tt.ptr<f32>>
    "tt.store"(%op, %t) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<256x!tt.ptr<f32>>, tensor<256xf32>) -> ()
""", "%x: !tt.ptr<f32>, %o: !tt.ptr<f32>")
