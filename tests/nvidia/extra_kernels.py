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
