"""Kernels written exactly as in Triton's tutorials, launched through ``import tritium as triton``.

The benchmarks run this same text on tritium and on Triton (bench/gpu.py, bench/interpreter.py):
``BENCH_IMPL=triton`` imports it against Triton instead.
"""
import importlib
import os

triton = importlib.import_module(os.environ.get("BENCH_IMPL", "tritium"))
tl = importlib.import_module(triton.__name__ + ".language")


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    # one row per program, as in the first version of the fused-softmax tutorial
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf'))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)


@triton.jit
def softmax_persistent_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                              BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # the persistent version of the tutorial: each program walks rows with a stride of the grid size,
    # so programs run different numbers of iterations
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def softmax_fused(x):
    return tl.softmax(x)


@triton.jit
def softmax_builtin_kernel(output_ptr, input_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(input_ptr + row * stride + cols, mask=cols < n_cols, other=-float('inf'))
    tl.store(output_ptr + row * stride + cols, softmax_fused(x), mask=cols < n_cols)


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def copy_2d_kernel(src, dst, M, N, stride_sm, stride_sn, stride_dm, stride_dn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(src + rm[:, None] * stride_sm + rn[None, :] * stride_sn, mask=mask)
    tl.store(dst + rm[:, None] * stride_dm + rn[None, :] * stride_dn, x, mask=mask)


@triton.jit
def reduce_2d_kernel(X, OUT, M, N, stride_m, OTHER: tl.constexpr, AXIS: tl.constexpr, OP: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_m + rn[None, :], mask=mask, other=OTHER)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    else:
        r = tl.argmin(x, axis=AXIS)
    if AXIS == 0:
        tl.store(OUT + rn, r, mask=rn < N)
    else:
        tl.store(OUT + rm, r, mask=rm < M)


@triton.jit
def _square(x):
    return x * x


@triton.jit
def _affine(x, a, B: tl.constexpr):
    return _square(x) * a + B


@triton.jit(noinline=True)
def _clamp_noinline(x, lo, hi):
    return tl.minimum(tl.maximum(x, lo), hi)


@triton.jit
def nested_kernel(X, Y, n, a, B: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = _clamp_noinline(_affine(x, a, B), -50.0, 50.0)
    tl.store(Y + offs, y, mask=m)


@triton.jit
def ragged_sum_kernel(X, OFFS, OUT, BLOCK: tl.constexpr):
    # the trip count of the loop depends on data loaded by each program
    pid = tl.program_id(0)
    start = tl.load(OFFS + pid)
    end = tl.load(OFFS + pid + 1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(start, end, BLOCK):
        idx = i + tl.arange(0, BLOCK)
        acc += tl.load(X + idx, mask=idx < end, other=0.)
    tl.store(OUT + pid, tl.sum(acc, axis=0))


@triton.jit
def collatz_kernel(N, OUT):
    pid = tl.program_id(0)
    n = tl.load(N + pid)
    steps = 0
    while n != 1:
        n = tl.where(n % 2 == 0, n // 2, 3 * n + 1)
        steps += 1
    tl.store(OUT + pid, steps)


@triton.jit
def branch_kernel(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    if pid % 2 == 0:
        y = x * 2
    else:
        y = x - 1
    tl.store(Y + offs, y, mask=m)


@triton.jit
def grid_2d_kernel(OUT, stride):
    # every program of a 2-D grid writes its ids and the grid size
    px = tl.program_id(0)
    py = tl.program_id(1)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    tl.store(OUT + py * stride + px, px * 1000 + py * 10 + nx * ny)


@triton.jit
def math_kernel(X, Y, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    else:
        y = tl.maximum(x, 0.5) + tl.minimum(x, 0.25)
    tl.store(Y + offs, y, mask=m)


@triton.jit
def cast_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    tl.store(Y + offs, x.to(Y.dtype.element_ty), mask=m)


@triton.jit
def int_ops_kernel(X, Y, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m, other=1)
    r = (x // y) * 3 + (x % y) - (x & 0xFF) + (x ^ y) + (x >> 2) + (y << 1)
    r = tl.where(x > y, r, -r)
    tl.store(OUT + offs, r, mask=m)


@triton.jit
def tuple_minmax_kernel(X, OUT, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    lo, hi = -1.0, 1.0
    x = tl.load(X + offs, mask=m)
    y = min(max(x * SCALE, lo), hi)
    for k in tl.static_range(3):
        y = y + k
    tl.store(OUT + offs, y, mask=m)


@triton.jit
def device_print_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.device_print("x=", x)


@triton.jit
def atomic_kernel(X, HIST, SUM, MX, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    # masked tensor atomics with colliding addresses, and scalar atomics of a reduction
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.atomic_add(HIST + (x % NBINS), 1, mask=m)
    tl.atomic_add(SUM, tl.sum(tl.where(m, x, 0), axis=0))
    tl.atomic_max(MX, tl.max(tl.where(m, x, -1), axis=0))
