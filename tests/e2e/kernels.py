"""Kernels written exactly as in Triton's tutorials, launched through ``import tritium as triton``.

The benchmarks run this same text on tritium and on Triton (bench/gpu.py, bench/interpreter.py):
``BENCH_IMPL=triton`` imports it against Triton instead.
"""
import importlib
import os

triton = importlib.import_module(os.environ.get("BENCH_IMPL", "tritium"))
tl = importlib.import_module(triton.__name__ + ".language")
TensorDescriptor = importlib.import_module(triton.__name__ + ".tools.tensor_descriptor").TensorDescriptor


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


# ------------------------------------------------------------------------------------------------------------
# tl.dot: the matmul tutorial, batched dots, dot options, the fused-attention forward
# ------------------------------------------------------------------------------------------------------------
# The matmul tutorial's CUDA autotune configs, as plain lists so that a caller (bench/gpu.py) wraps
# ``matmul_kernel`` with ``triton.autotune(configs=..., key=["M", "N", "K"])`` on tritium or on Triton.
MATMUL_CONFIGS_FP16 = [
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=3,
                  num_warps=8),
    triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                  num_warps=2),
    triton.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                  num_warps=2),
]
# the tutorial's "good configs for fp8 inputs" (larger K blocks)
MATMUL_CONFIGS_FP8 = [
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=3,
                  num_warps=8),
    triton.Config({'BLOCK_SIZE_M': 256, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=3,
                  num_warps=8),
    triton.Config({'BLOCK_SIZE_M': 256, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
    triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                  num_warps=4),
]


# Triton 3.6's persistent-matmul tutorial, matmul_kernel_tma: host-side TensorDescriptors, B given N x K (b.T);
# one config (the tutorial sets the descriptors' block shapes from it), on TMA copies on sm_90
MATMUL_TMA_CONFIG = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_stages=3,
                         num_warps=8)


@triton.jit
def _grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
    # the tutorials' grouped ordering: (pid_m, pid_n) of a tile id
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % num_pid_in_group) // group_size_m


@triton.jit
def matmul_kernel_tma(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                      BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    dtype = c_desc.dtype
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    pid_m, pid_n = _grouped_tile(pid, GROUP_SIZE_M * num_pid_n, num_pid_m, GROUP_SIZE_M)
    offs_am = pid_m * BLOCK_SIZE_M
    offs_bn = pid_n * BLOCK_SIZE_N
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(k_tiles):
        offs_k = k * BLOCK_SIZE_K
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_bn, offs_k])
        accumulator = tl.dot(a, b.T, accumulator)
    c_desc.store([offs_am, offs_bn], accumulator.to(dtype))


def matmul_tma(K, a, b, c, M, N, Kd, cfg=MATMUL_TMA_CONFIG):
    """``matmul_kernel_tma`` of the module ``K`` on A [M, K], B [N, K] (row-major), C [M, N]."""
    meta = dict(cfg)
    BM, BN, BK = meta["BLOCK_SIZE_M"], meta["BLOCK_SIZE_N"], meta["BLOCK_SIZE_K"]
    D = K.TensorDescriptor
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    K.matmul_kernel_tma[grid](D(a, [M, Kd], [Kd, 1], [BM, BK]), D(b, [N, Kd], [Kd, 1], [BN, BK]),
                              D(c, [M, N], [N, 1], [BM, BN]), M, N, Kd, **meta)


@triton.jit
def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                        BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                        GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # the tutorial's device-descriptor persistent matmul (no subtiling, no warp specialisation)
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(dtype))


def matmul_descriptor_persistent(K, a, b, c, M, N, Kd, num_sms, cfg=MATMUL_TMA_CONFIG):
    """``matmul_kernel_descriptor_persistent`` of the module ``K`` on A [M, K], B [N, K], C [M, N] (the caller
    installs a global-scratch allocator, as the tutorial does)."""
    meta = dict(cfg)
    grid = (min(num_sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])),)
    K.matmul_kernel_descriptor_persistent[grid](a, b, c, M, N, Kd, NUM_SMS=num_sms, **meta)


@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                             BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr,
                             FLATTEN: tl.constexpr):
    # the persistent-matmul tutorial's pointer kernel: one program per SM walks the tiles; FLATTEN fuses the tile
    # loop with the K loop (so the next tile's loads are issued during this tile's last K steps)
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = _grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = tl.where(start_m + tl.arange(0, BLOCK_SIZE_M) < M, start_m + tl.arange(0, BLOCK_SIZE_M), 0)
        offs_bn = tl.where(start_n + tl.arange(0, BLOCK_SIZE_N) < N, start_n + tl.arange(0, BLOCK_SIZE_N), 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator.to(c_ptr.dtype.element_ty), mask=c_mask)


# the tutorial's persistent config for fp16 on sm_90
MATMUL_PERSISTENT_CONFIG = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_stages=3,
                                num_warps=8)


def matmul_persistent(K, a, b, c, M, N, Kd, num_sms, flatten=True, cfg=MATMUL_PERSISTENT_CONFIG):
    """``matmul_kernel_persistent`` of the module ``K`` on A [M, K], B [K, N], C [M, N] (row-major)."""
    meta = dict(cfg)
    grid = (min(num_sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])),)
    K.matmul_kernel_persistent[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                     c.stride(0), c.stride(1), NUM_SMS=num_sms, FLATTEN=flatten, **meta)


@triton.jit
def leaky_relu(x):
    # fused into the matmul epilogue while the accumulator is still fp32
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(
        # pointers to the matrices: C (M x N) = A (M x K) @ B (K x N)
        a_ptr, b_ptr, c_ptr,
        # sizes: need not be multiples of the blocks
        M, N, K,
        # elements to step over to move one row / column in each matrix: a transposed operand is a stride swap
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        # meta-parameters
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
        ACTIVATION: tl.constexpr = "",
        INPUT_PRECISION: tl.constexpr = None,
):
    # which block of C this program computes: programs are grouped GROUP_SIZE_M block-rows at a time and walk
    # the group column-major, so consecutive programs share the rows of A and columns of B they load (L2 reuse)
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)  # the last group may be shorter
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # the first [BLOCK_SIZE_M, BLOCK_SIZE_K] block of A and [BLOCK_SIZE_K, BLOCK_SIZE_N] block of B; rows of A
    # and columns of B past M / N wrap around (they are loaded but never stored), K is masked
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # accumulate in fp32 (int32 for integer inputs, fp64 for fp64 ones: a dot's type), advancing both blocks along K
    elem = a_ptr.dtype.element_ty
    acc_dtype = tl.int32 if elem.is_int() else (tl.float64 if elem == tl.float64 else tl.float32)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # the tail block of K reads zeros
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision=INPUT_PRECISION, out_dtype=acc_dtype)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(c_ptr.dtype.element_ty)

    # write the block of C, masked to M x N
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def dot_kernel(X, Y, C, Z, M, N, K,
               stride_xm, stride_xk, stride_yk, stride_yn, stride_cm, stride_cn, stride_zm, stride_zn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               ADD_ACC: tl.constexpr, INPUT_PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr):
    # one tl.dot per program (K <= BLOCK_K): Z = X @ Y (+ C as the accumulator), in OUT_DTYPE
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x = tl.load(X + rm[:, None] * stride_xm + rk[None, :] * stride_xk, mask=(rm[:, None] < M) & (rk[None, :] < K),
                other=0)
    y = tl.load(Y + rk[:, None] * stride_yk + rn[None, :] * stride_yn, mask=(rk[:, None] < K) & (rn[None, :] < N),
                other=0)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if ADD_ACC:
        c = tl.load(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, mask=mask, other=0).to(OUT_DTYPE)
        z = tl.dot(x, y, acc=c, input_precision=INPUT_PRECISION, out_dtype=OUT_DTYPE)
    else:
        z = tl.dot(x, y, input_precision=INPUT_PRECISION, out_dtype=OUT_DTYPE)
    tl.store(Z + rm[:, None] * stride_zm + rn[None, :] * stride_zn, z.to(Z.dtype.element_ty), mask=mask)


@triton.jit
def batched_matmul_kernel(A, B, C, M, N, K,
                          stride_az, stride_am, stride_ak,
                          stride_bz, stride_bk, stride_bn,
                          stride_cz, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one matrix of the batch per program_id(2); 2-D dots along K, every dimension masked
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_z = tl.program_id(2)
    A += pid_z.to(tl.int64) * stride_az
    B += pid_z.to(tl.int64) * stride_bz
    C += pid_z.to(tl.int64) * stride_cz
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(B + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dot3d_kernel(A, B, C, BATCH, M, N, K,
                 stride_az, stride_am, stride_ak,
                 stride_bz, stride_bk, stride_bn,
                 stride_cz, stride_cm, stride_cn,
                 BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # a batched (3-D) tl.dot: BLOCK_B matrices per program, each one [BLOCK_M, BLOCK_K] @ [BLOCK_K, BLOCK_N]
    rb = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    b3 = rb[:, None, None]
    a = tl.load(A + b3 * stride_az + rm[None, :, None] * stride_am + rk[None, None, :] * stride_ak,
                mask=(b3 < BATCH) & (rm[None, :, None] < M) & (rk[None, None, :] < K), other=0)
    b = tl.load(B + b3 * stride_bz + rk[None, :, None] * stride_bk + rn[None, None, :] * stride_bn,
                mask=(b3 < BATCH) & (rk[None, :, None] < K) & (rn[None, None, :] < N), other=0)
    c = tl.dot(a, b)
    tl.store(C + b3 * stride_cz + rm[None, :, None] * stride_cm + rn[None, None, :] * stride_cn,
             c.to(C.dtype.element_ty), mask=(b3 < BATCH) & (rm[None, :, None] < M) & (rn[None, None, :] < N))


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q,
                    K_block_ptr, V_block_ptr,
                    start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr,
                    N_CTX: tl.constexpr):
    # the key / value blocks this stage visits: 1 = left of the diagonal block (causal), 2 = the diagonal block
    # (masked), 3 = all of them (not causal)
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    K_block_ptr = tl.advance(K_block_ptr, (0, lo))
    V_block_ptr = tl.advance(V_block_ptr, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # scores of this block, in log2 units (qk_scale includes log2(e))
        k = tl.load(K_block_ptr)
        qk = tl.dot(q, k)
        if STAGE == 2:
            causal = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(causal, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        # online softmax: rescale what was accumulated under the old running max
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V_block_ptr)
        p = p.to(v.dtype)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        V_block_ptr = tl.advance(V_block_ptr, (BLOCK_N, 0))
        K_block_ptr = tl.advance(K_block_ptr, (0, BLOCK_N))
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out,
              stride_qz, stride_qh, stride_qm, stride_qk,
              stride_kz, stride_kh, stride_kn, stride_kk,
              stride_vz, stride_vh, stride_vk, stride_vn,
              stride_oz, stride_oh, stride_om, stride_on,
              Z, H, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    # the fused-attention forward (Flash Attention v2), grid (N_CTX / BLOCK_M, Z * H): one block of queries
    # of one head per program; N_CTX a multiple of BLOCK_M and BLOCK_N; STAGE 3 causal, 1 not
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    k_offset = off_z.to(tl.int64) * stride_kz + off_h.to(tl.int64) * stride_kh
    v_offset = off_z.to(tl.int64) * stride_vz + off_h.to(tl.int64) * stride_vh
    o_offset = off_z.to(tl.int64) * stride_oz + off_h.to(tl.int64) * stride_oh

    Q_block_ptr = tl.make_block_ptr(base=Q + q_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, stride_qk),
                                    offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    V_block_ptr = tl.make_block_ptr(base=V + v_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_vk, stride_vn),
                                    offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    # K read transposed: a [HEAD_DIM, BLOCK_N] block
    K_block_ptr = tl.make_block_ptr(base=K + k_offset, shape=(HEAD_DIM, N_CTX), strides=(stride_kk, stride_kn),
                                    offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    O_block_ptr = tl.make_block_ptr(base=Out + o_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_om, stride_on),
                                    offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    # running max, running sum and the output accumulator, in fp32
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1 / ln(2): exp(x) = exp2(x * log2(e))
    q = tl.load(Q_block_ptr)
    # causal: the blocks left of the diagonal without a mask (stage 1), then the diagonal block (stage 2);
    # not causal: every block (stage 3)
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr,
                                        start_m, qk_scale,
                                        BLOCK_M, HEAD_DIM, BLOCK_N,
                                        4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr,
                                        start_m, qk_scale,
                                        BLOCK_M, HEAD_DIM, BLOCK_N,
                                        2, offs_m, offs_n, N_CTX)
    # epilogue: M = the row's log-sum-exp (log2 units), O = acc / l
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    tl.store(O_block_ptr, acc.to(Out.type.element_ty))


# autotune configs for _attn_fwd (bench/gpu.py): a subset of the fused-attention tutorial's search space
# (BLOCK_M in 64 / 128, BLOCK_N in 32 / 64, 3 stages with 4 warps or 4 stages with 8 warps)
ATTN_FWD_CONFIGS = [
    triton.Config({'BLOCK_M': BM, 'BLOCK_N': BN}, num_stages=s, num_warps=w)
    for BM in [64, 128]
    for BN in [32, 64]
    for s, w in [(3, 4), (4, 8)]
]
