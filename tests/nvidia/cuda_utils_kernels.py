"""Kernels using tl.extra.cuda's globaltimer, smid, num_warps, num_threads, gdc_wait / gdc_launch_dependents and
convert_custom_float8_sm70/sm80, shared by the interpreter tests (tests/language/test_extra_cuda.py), the cuda
compile tests (tests/nvidia/test_extra_cuda_compile.py) and the GPU tests (tests/gpu/test_extra_cuda_gpu.py)."""
import tritium as triton
import tritium.language as tl
from tritium.language.extra.cuda import (convert_custom_float8_sm70, convert_custom_float8_sm80, gdc_launch_dependents,
                                         gdc_wait, globaltimer, num_threads, num_warps, smid)


@triton.jit
def info_k(O):
    """O[pid*4 + 0..3] = num_warps(), num_threads(), smid(), tl.extra.cuda.num_warps() * 1000 + tl.extra.cuda.smid()"""
    pid = tl.program_id(0)
    W: tl.constexpr = num_warps()
    T: tl.constexpr = num_threads()
    tl.store(O + pid * 4, W)
    tl.store(O + pid * 4 + 1, T)
    tl.store(O + pid * 4 + 2, smid())
    tl.store(O + pid * 4 + 3, tl.extra.cuda.num_warps() * 1000 + tl.extra.cuda.smid())


@triton.jit
def timer_k(X, T, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    """T[pid*(STEPS+1) + i] = globaltimer() before step i (and after the last); program 0 accumulates work in
    X[...] (it alone: another program reading X while program 0 stores there would race)."""
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    m = (r < n) & (pid == 0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(T + pid * (STEPS + 1), globaltimer())
    for i in range(STEPS):
        acc = acc + tl.sin(tl.load(X + r, mask=m, other=0.0) + i)
        tl.store(T + pid * (STEPS + 1) + i + 1, tl.extra.cuda.globaltimer())
    tl.store(X + r, acc, mask=m)


@triton.jit
def timer_elapsed_k(O, SPIN: tl.constexpr):
    """O[pid] = globaltimer() after SPIN timer reads minus the first one (>= 0)."""
    t0 = globaltimer()
    t = t0
    for _ in range(SPIN):
        t = tl.maximum(t, globaltimer())
    tl.store(O + tl.program_id(0), t - t0)


@triton.jit
def gdc_k(X, Y, n, BLOCK: tl.constexpr):
    gdc_wait()
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m)
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(Y + r, x * 2 + 1, mask=m)


@triton.jit
def gdc_launch_k(X):
    gdc_launch_dependents()
    tl.store(X, 1)


@triton.jit
def fp8_up_k(X, O, n, BLOCK: tl.constexpr, DST: tl.constexpr, SM80: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=0)
    if SM80:
        y = convert_custom_float8_sm80(x, DST)
    else:
        y = convert_custom_float8_sm70(x, DST)
    tl.store(O + r, y, mask=m)


@triton.jit
def fp8_down_k(X, O, n, BLOCK: tl.constexpr, SM80: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=0.0)
    if SM80:
        y = tl.extra.cuda.convert_custom_float8_sm80(x, tl.uint8)
    else:
        y = tl.extra.cuda.convert_custom_float8_sm70(x, tl.uint8)
    tl.store(O + r, y, mask=m)
