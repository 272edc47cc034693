"""Small kernels of the kind a kernel library's unit tests launch once each (scaling, activations, row reductions, an
RMS norm): bench/interpreter.py times each one's first launch in a process that has already launched a kernel (cold
start per kernel, cache empty), on tritium's interpreter and on Triton's.  ``BENCH_IMPL=triton`` imports Triton."""
import os, importlib
triton = importlib.import_module(os.environ.get("BENCH_IMPL", "tritium"))
tl = importlib.import_module(triton.__name__ + ".language")

@triton.jit
def warm(x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o) + 1)

@triton.jit
def scale(x_ptr, y_ptr, n, a, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * a, mask=m)

@triton.jit
def relu_sq(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    r = tl.where(x > 0, x, 0.0)
    tl.store(y_ptr + o, r * r, mask=m)

@triton.jit
def row_sum(x_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r * N + c, mask=c < N, other=0.0)
    tl.store(y_ptr + r, tl.sum(x, axis=0))

@triton.jit
def rms(x_ptr, w_ptr, y_ptr, N: tl.constexpr, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    x = tl.load(x_ptr + r * N + c, mask=m, other=0.0).to(tl.float32)
    rs = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + c, mask=m, other=0.0)
    tl.store(y_ptr + r * N + c, x * rs * w, mask=m)

@triton.jit
def silu_mul(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    a = tl.load(a_ptr + o, mask=m).to(tl.float32)
    b = tl.load(b_ptr + o, mask=m)
    tl.store(c_ptr + o, a * tl.sigmoid(a) * b, mask=m)
