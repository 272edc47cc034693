"""tl.dot on the GPU (mma.sync / wgmma) against torch: the tl.dot kernels of tests/e2e/kernels.py.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py: CPU tensors,
float8 ones included, stand in for CUDA tensors; every kernel is compiled into the cache and nothing launched).

References are computed on the device after the launches: matmuls in float64 of the very inputs (float8 and
bf16 values are exact in float64; int8 products are exact integers in float64 below 2^53), attention with
torch's ``scaled_dot_product_attention`` in fp32.  Tolerances, as in Triton's tests:

* fp16 / bf16 inputs, fp32 accumulation (fp16, bf16 or fp32 C): ``atol = rtol = 0.01``
  (python/test/unit/language/test_matmul.py, ``test_simple_matmul``);
* fp32 inputs with ``input_precision="tf32"`` (the default): ``atol = rtol = 0.03`` (same test: "TF32 has lower
  precision than torch.float32");
* fp32 inputs with ``"ieee"`` or ``"tf32x3"``: ``atol = 1e-3, rtol = 1e-4``, tighter than Triton's 0.03, so
  that a dot computed in plain tf32 fails it (tf32's error at these sizes is ~1e-2);
* fp16 accumulation (``out_dtype=tl.float16``): ``atol = rtol = 0.06`` (test_matmul.py, fp16 destination);
* fp8 (e4m3 / e5m2) inputs: ``atol = 0.125, rtol = 0`` with K <= 512 (the matmul tutorial's fp8 check);
* int8 inputs, int32 accumulation: exact;
* fp64 inputs (fp64 accumulation, whatever ``out_dtype``): ``atol = rtol = 1e-10``;
* fused-attention forward, fp16 out: ``atol = 1e-2, rtol = 0`` (the fused-attention tutorial's test);
  M (the rows' log-sum-exp in log2 units): ``atol = 1e-2, rtol = 1e-3``.
"""
import math

import pytest

import tritium as triton
import tritium.language as tl
from tests.e2e import kernels as K

torch = pytest.importorskip("torch")

TOL_16 = dict(atol=1e-2, rtol=1e-2)
TOL_TF32 = dict(atol=3e-2, rtol=3e-2)
TOL_IEEE = dict(atol=1e-3, rtol=1e-4)
TOL_F16_ACC = dict(atol=6e-2, rtol=6e-2)
# fp8: the tutorial's 0.125 doubled: by default (as in Triton) Hopper adds fp8 products in its reduced-precision
# accumulator over all of K (max_num_imprecise_acc 2**30), 0.143 off on one element of a 512-long product seen
TOL_FP8 = dict(atol=0.25, rtol=0)
EXACT = dict(atol=0, rtol=0)
# fp64 (mma.sync .f64 on sm_90, fp64 FMA before): only the order of the additions differs from torch's
TOL_F64 = dict(atol=1e-10, rtol=1e-10)

FP8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def close(out, ref, **tol):
    torch.testing.assert_close(out.double(), ref.double(), **tol)


def f64(x):
    return x.float().double() if x.dtype.itemsize == 1 and x.dtype.is_floating_point else x.double()


def operand(gpu, shape, dtype, trans=False):
    """A random [rows, cols] operand of ``dtype``; ``trans``: stored column-major (a transposed view)."""
    rows, cols = shape
    shp = (cols, rows) if trans else (rows, cols)
    if dtype == torch.int8:
        x = gpu.randint(-128, 128, shp, dtype=torch.int8)
    else:
        x = gpu.randn(*shp, dtype=dtype)
    return x.t() if trans else x


def matmul(a, b, c, activation="", input_precision=None, **meta):
    M, Kd = a.shape
    N = b.shape[1]
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa
    return K.matmul_kernel[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                 c.stride(0), c.stride(1), ACTIVATION=activation, INPUT_PRECISION=input_precision,
                                 **meta)


def blocks(bm, bn, bk, group, warps, stages):
    return dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=group, num_warps=warps,
                num_stages=stages)


# block configs: the smallest mma tile up to the tutorial's largest, num_warps 4 / 8, num_stages 1..4
BLOCKS = {
    "16x16x16_w4_s1": blocks(16, 16, 16, 1, 4, 1),
    "32x64x32_w4_s2": blocks(32, 64, 32, 4, 4, 2),
    "64x128x64_w4_s3": blocks(64, 128, 64, 8, 4, 3),
    "128x128x64_w8_s4": blocks(128, 128, 64, 8, 8, 4),
    "128x256x64_w8_s3": blocks(128, 256, 64, 8, 8, 3),
    "64x32x128_w8_s2": blocks(64, 32, 128, 8, 8, 2),
}
# multiples of every block, Triton's test_matmul size, and sizes that are not multiples of 16 (M = 1 included)
SHAPES = [(512, 512, 512), (1024, 512, 256), (333, 777, 129), (1, 256, 64), (2049, 127, 33)]


# ------------------------------------------------------------------------------------------------ matmul
@pytest.mark.parametrize("cfg", list(BLOCKS))
@pytest.mark.parametrize("M,N,Kd", SHAPES)
def test_matmul_fp16(gpu, M, N, Kd, cfg):
    a, b = operand(gpu, (M, Kd), torch.float16), operand(gpu, (Kd, N), torch.float16)
    c = gpu.empty(M, N, dtype=torch.float16)
    matmul(a, b, c, **BLOCKS[cfg])
    gpu.done()
    close(c, f64(a) @ f64(b), **TOL_16)


@pytest.mark.parametrize("cfg", ["32x64x32_w4_s2", "128x128x64_w8_s4", "128x256x64_w8_s3"])
@pytest.mark.parametrize("out", ["bfloat16", "float32"])
@pytest.mark.parametrize("M,N,Kd", [(1024, 512, 256), (333, 777, 129)])
def test_matmul_bf16(gpu, M, N, Kd, out, cfg):
    a, b = operand(gpu, (M, Kd), torch.bfloat16), operand(gpu, (Kd, N), torch.bfloat16)
    c = gpu.empty(M, N, dtype=getattr(torch, out))
    matmul(a, b, c, **BLOCKS[cfg])
    gpu.done()
    close(c, f64(a) @ f64(b), **TOL_16)


@pytest.mark.parametrize("trans", ["a", "b", "ab"])
@pytest.mark.parametrize("cfg", ["32x64x32_w4_s2", "128x128x64_w8_s4"])
@pytest.mark.parametrize("M,N,Kd", [(512, 512, 512), (333, 777, 129)])
def test_matmul_fp16_transposed(gpu, M, N, Kd, cfg, trans):
    # column-major operands: a transposed view has strides (1, rows), which the kernel reads through its strides
    a = operand(gpu, (M, Kd), torch.float16, trans="a" in trans)
    b = operand(gpu, (Kd, N), torch.float16, trans="b" in trans)
    c = gpu.empty(M, N, dtype=torch.float16)
    matmul(a, b, c, **BLOCKS[cfg])
    gpu.done()
    close(c, f64(a) @ f64(b), **TOL_16)


def test_matmul_fp16_leaky_relu_fp32_out_transposed(gpu):
    M, N, Kd = 300, 200, 100
    a, b = operand(gpu, (M, Kd), torch.float16), operand(gpu, (Kd, N), torch.float16)
    c = gpu.empty(N, M, dtype=torch.float32).t()  # C column-major, fp32
    matmul(a, b, c, activation="leaky_relu", **BLOCKS["64x128x64_w4_s3"])
    gpu.done()
    ref = f64(a) @ f64(b)
    close(c, torch.where(ref >= 0, ref, 0.01 * ref), **TOL_16)


@pytest.mark.parametrize("precision", ["tf32", "ieee", "tf32x3", "bf16x3", "bf16x6"])
@pytest.mark.parametrize("cfg", ["32x64x32_w4_s2", "128x128x64_w8_s4"])
@pytest.mark.parametrize("M,N,Kd", [(1024, 512, 256), (333, 777, 129)])
def test_matmul_fp32(gpu, M, N, Kd, cfg, precision):
    a, b = operand(gpu, (M, Kd), torch.float32), operand(gpu, (Kd, N), torch.float32, trans=True)
    c = gpu.empty(M, N, dtype=torch.float32)
    meta = dict(BLOCKS[cfg])
    meta["num_stages"] = min(meta["num_stages"], 3)  # fp32 tiles are twice fp16's bytes: at most 3 stages
    matmul(a, b, c, input_precision=precision, **meta)
    gpu.done()
    close(c, f64(a) @ f64(b), **(TOL_TF32 if precision == "tf32" else TOL_IEEE))


@pytest.mark.parametrize("cfg,trans", [("32x64x32_w4_s2", ""), ("128x128x64_w8_s4", ""), ("64x32x128_w8_s2", ""),
                                       ("32x64x32_w4_s2", "a"), ("128x128x64_w8_s4", "b")])
@pytest.mark.parametrize("M,N,Kd", [(512, 512, 512), (333, 777, 129)])
def test_matmul_int8(gpu, M, N, Kd, cfg, trans):
    a = operand(gpu, (M, Kd), torch.int8, trans="a" in trans)
    b = operand(gpu, (Kd, N), torch.int8, trans="b" in trans)
    c = gpu.empty(M, N, dtype=torch.int32)
    matmul(a, b, c, **BLOCKS[cfg])
    gpu.done()
    close(c, f64(a) @ f64(b), **EXACT)


@pytest.mark.parametrize("fp8", list(FP8))
@pytest.mark.parametrize("cfg,out,b_trans", [("64x128x64_w4_s3", "float16", True),
                                             ("128x128x64_w8_s4", "float16", False),
                                             ("128x128x64_w8_s4", "float32", True)],
                         ids=["64x128x64_fp16_b_kmajor", "128x128x64_fp16_b_rowmajor", "128x128x64_fp32_b_kmajor"])
@pytest.mark.parametrize("M,N,Kd", [(512, 512, 512), (333, 777, 160)])
def test_matmul_fp8(gpu, M, N, Kd, cfg, out, b_trans, fp8):
    # the tutorial pre-transposes B for fp8 (K-major: what wgmma reads); a row-major B is tested too
    dt = getattr(torch, FP8[fp8])
    a = operand(gpu, (M, Kd), dt)
    b = operand(gpu, (Kd, N), dt, trans=b_trans)
    c = gpu.empty(M, N, dtype=getattr(torch, out))
    matmul(a, b, c, **BLOCKS[cfg])
    gpu.done()
    close(c, f64(a) @ f64(b), **TOL_FP8)


@pytest.mark.parametrize("dtype,configs", [("float16", "MATMUL_CONFIGS_FP16"), ("bfloat16", "MATMUL_CONFIGS_FP16"),
                                           ("float8_e4m3fn", "MATMUL_CONFIGS_FP8")])
def test_matmul_autotuned_tutorial_configs(gpu, dtype, configs):
    # every config of the tutorial's lists runs (and, in compile-only mode, compiles: the autotuner benchmarks
    # each one); the chosen one writes C.  Same specialisation as bench/gpu.py's matmuls (C of the inputs' type,
    # fp16 for fp8; B K-major for fp8), so the carried cache holds these kernels once.
    dt = getattr(torch, dtype)
    tuned = triton.autotune(configs=getattr(K, configs), key=["M", "N", "K"])(K.matmul_kernel)
    M, N, Kd = 512, 512, 512
    a = operand(gpu, (M, Kd), dt)
    b = operand(gpu, (Kd, N), dt, trans=dt.itemsize == 1)
    c = gpu.empty(M, N, dtype=torch.float16 if dt.itemsize == 1 else dt)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa
    tuned[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    gpu.done()
    assert len(tuned.configs_timings) == 8
    close(c, f64(a) @ f64(b), **(TOL_FP8 if dt.itemsize == 1 else TOL_16))


# --------------------------------------------------------------------------------------- acc= / out_dtype
def dot(x, y, c, z, add_acc, out_dtype, precision=None, BM=64, BN=64, BK=64, num_warps=4):
    M, Kd = x.shape
    N = y.shape[1]
    K.dot_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        x, y, c, z, M, N, Kd, x.stride(0), x.stride(1), y.stride(0), y.stride(1), c.stride(0), c.stride(1),
        z.stride(0), z.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, ADD_ACC=add_acc, INPUT_PRECISION=precision,
        OUT_DTYPE=out_dtype, num_warps=num_warps)


DOT_CASES = {  # input dtype, out_dtype (= the accumulator's type), tolerance
    "fp16_fp32": ("float16", "float32", TOL_16),
    "fp16_fp16": ("float16", "float16", TOL_F16_ACC),
    "bf16_fp32": ("bfloat16", "float32", TOL_16),
    "fp32_fp32": ("float32", "float32", TOL_TF32),
    "int8_int32": ("int8", "int32", EXACT),
    "e4m3_fp32": ("float8_e4m3fn", "float32", TOL_FP8),
    "e5m2_fp16": ("float8_e5m2", "float16", TOL_FP8),
}


@pytest.mark.parametrize("add_acc", [False, True], ids=["no_acc", "acc"])
@pytest.mark.parametrize("case", list(DOT_CASES))
@pytest.mark.parametrize("M,N,Kd,BM,BN,BK,warps", [(64, 64, 64, 64, 64, 64, 4), (100, 75, 50, 32, 64, 64, 8)])
def test_dot_acc_out_dtype(gpu, M, N, Kd, BM, BN, BK, warps, case, add_acc):
    dtype, out, tol = DOT_CASES[case]
    dt, odt = getattr(torch, dtype), getattr(torch, out)
    x, y = operand(gpu, (M, Kd), dt), operand(gpu, (Kd, N), dt, trans=dt.itemsize == 1)
    c = gpu.randint(-1000, 1000, (M, N), dtype=odt) if odt == torch.int32 else gpu.randn(M, N, dtype=odt)
    z = gpu.empty(M, N, dtype=odt)
    dot(x, y, c, z, add_acc, getattr(tl, out), BM=BM, BN=BN, BK=BK, num_warps=warps)
    gpu.done()
    close(z, f64(x) @ f64(y) + (f64(c) if add_acc else 0), **tol)


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"])
@pytest.mark.parametrize("add_acc", [False, True], ids=["no_acc", "acc"])
def test_dot_input_precision(gpu, precision, add_acc):
    M, N, Kd = 128, 64, 64
    x, y, c = gpu.randn(M, Kd), gpu.randn(Kd, N), gpu.randn(M, N)
    z = gpu.empty(M, N)
    dot(x, y, c, z, add_acc, tl.float32, precision, BM=64, BN=64, BK=64)
    gpu.done()
    close(z, f64(x) @ f64(y) + (f64(c) if add_acc else 0), **(TOL_TF32 if precision == "tf32" else TOL_IEEE))


# ------------------------------------------------------------------------------------------------- batched
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("B,M,N,Kd,BM,BN,BK,warps", [(4, 256, 128, 64, 64, 64, 32, 4),
                                                      (3, 200, 100, 70, 32, 64, 32, 8)])
def test_batched_matmul(gpu, B, M, N, Kd, BM, BN, BK, warps, dtype):
    dt = getattr(torch, dtype)
    a = gpu.randn(B, M, Kd, dtype=dt)
    b = gpu.randn(B, N, Kd, dtype=dt).transpose(1, 2)  # column-major matrices
    c = gpu.empty(B, M, N, dtype=dt)
    K.batched_matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN), B)](
        a, b, c, M, N, Kd, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
        num_warps=warps)
    gpu.done()
    close(c, f64(a) @ f64(b), **(TOL_16 if dt == torch.float16 else TOL_TF32))


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "float64"])
@pytest.mark.parametrize("BATCH,M,N,Kd,BB,warps", [(8, 16, 16, 16, 2, 1), (6, 32, 64, 32, 2, 4),
                                                    (5, 64, 32, 48, 4, 8), (4, 32, 32, 64, 4, 1)])
def test_dot3d(gpu, BATCH, M, N, Kd, BB, warps, dtype):
    dt = getattr(torch, dtype)
    if dt == torch.int8:
        a, b = gpu.randint(-128, 128, (BATCH, M, Kd), dt), gpu.randint(-128, 128, (BATCH, Kd, N), dt)
    else:
        a, b = gpu.randn(BATCH, M, Kd, dtype=dt), gpu.randn(BATCH, Kd, N, dtype=dt)
    c = gpu.empty(BATCH, M, N, dtype=torch.int32 if dt == torch.int8 else dt)
    bm, bn, bk = (max(16, triton.next_power_of_2(v)) for v in (M, N, Kd))
    K.dot3d_kernel[(triton.cdiv(BATCH, BB),)](a, b, c, BATCH, M, N, Kd, *a.stride(), *b.stride(), *c.stride(),
                                              BLOCK_B=BB, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps)
    gpu.done()
    tol = {torch.float16: TOL_16, torch.float32: TOL_TF32, torch.int8: EXACT, torch.float64: TOL_F64}[dt]
    close(c, f64(a) @ f64(b), **tol)


@triton.jit
def small_dot_kernel(X, Y, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(X + rm[:, None] * K + rk[None, :])
    y = tl.load(Y + rk[:, None] * N + rn[None, :])
    tl.store(Z + rm[:, None] * N + rn[None, :], tl.dot(x, y))


@pytest.mark.parametrize("warps", [1, 4])
@pytest.mark.parametrize("dtype", ["float16", "e5m2", "int8"])
@pytest.mark.parametrize("M,N,Kd", [(2, 4, 32), (16, 4, 32), (1, 1, 32)])
def test_small_dot(gpu, M, N, Kd, dtype, warps):
    """Dots smaller than one mma.sync tile (16x8), one warp and several: on one tile whose extra rows and columns
    are copies, as in Triton 3.6 (fp8 on sm_90 as f16 operands).  Its operands must not be read with ldmatrix,
    whose lanes address 16 rows (the first try did: an illegal address on the H200)."""
    if dtype in FP8:
        dt = getattr(torch, FP8[dtype])
        x, y = gpu.randn(M, Kd, dtype=torch.float16).to(dt), gpu.randn(Kd, N, dtype=torch.float16).to(dt)
    elif dtype == "int8":
        x, y = operand(gpu, (M, Kd), torch.int8), operand(gpu, (Kd, N), torch.int8)
    else:
        x, y = gpu.randn(M, Kd, dtype=getattr(torch, dtype)), gpu.randn(Kd, N, dtype=getattr(torch, dtype))
    z = gpu.empty(M, N, dtype=torch.int32 if dtype == "int8" else torch.float32)
    h = small_dot_kernel[(1,)](x, y, z, M, N, Kd, num_warps=warps)
    gpu.done()
    close(z, f64(x) @ f64(y), **(EXACT if dtype == "int8" else TOL_16))
    if torch.cuda.get_device_capability() >= (8, 9):
        assert "mma.sync.aligned.m16n8k" in h.asm["ptx"]


@triton.jit
def matmul_f64_kernel(A, B, C, M, N, Kd, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # fp64 in, fp64 accumulator: mma.sync m16n8k8 .f64 on sm_90 (operands through shared memory when pipelined)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float64)
    for k in range(0, Kd, BK):
        a = tl.load(A + rm[:, None] * Kd + (k + rk)[None, :], mask=(rm[:, None] < M) & (k + rk < Kd)[None, :],
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=(k + rk < Kd)[:, None] & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("BM,BN,BK,warps,stages", [(16, 16, 16, 1, 1), (64, 64, 32, 4, 3), (128, 64, 32, 8, 2)])
@pytest.mark.parametrize("M,N,Kd", [(256, 256, 256), (97, 130, 75)])
def test_matmul_fp64(gpu, M, N, Kd, BM, BN, BK, warps, stages):
    a, b = gpu.randn(M, Kd, dtype=torch.float64), gpu.randn(Kd, N, dtype=torch.float64)
    c = gpu.empty(M, N, dtype=torch.float64)
    matmul_f64_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, Kd, BM=BM, BN=BN, BK=BK,
                                                                 num_warps=warps, num_stages=stages)
    gpu.done()
    close(c, a @ b, **TOL_F64)


@triton.jit
def multidim_dot_kernel(X, Y, Z, RANK: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr):
    x = tl.load(X + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    y = tl.load(Y + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    if TRANS_A:
        x = tl.trans(x)  # the last two dims swapped
    if TRANS_B:
        y = tl.trans(y)
    z = tl.dot(x, y)
    tl.store(Z + tl.arange(0, 256 << RANK), z.reshape([256 << RANK]))


@pytest.mark.parametrize("rank", [3, 5])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_multidim(gpu, rank, ta, tb):
    shape = (2,) * (rank - 2) + (32, 32)
    a = gpu.randint(-4, 5, shape, dtype=torch.int8).to(torch.bfloat16)
    b = gpu.randint(-4, 5, shape, dtype=torch.int8).to(torch.bfloat16)
    c = gpu.empty(shape, dtype=torch.float32)
    multidim_dot_kernel[(1,)](a, b, c, rank, ta, tb)
    gpu.done()
    ra = a.transpose(-1, -2) if ta else a
    rb = b.transpose(-1, -2) if tb else b
    close(c, f64(ra) @ f64(rb), **EXACT)


# ------------------------------------------------------------------------------------------ fused attention
def attention_ref(q, k, v, causal, sm_scale):
    """O from torch's scaled_dot_product_attention in fp32, and M (log-sum-exp of the scores, log2 units)."""
    q, k, v = q.float(), k.float(), v.float()
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    s = (q @ k.transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return o, torch.logsumexp(s, dim=-1) / math.log(2)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("Z,H,N_CTX,BLOCK_M,BLOCK_N,warps,stages", [(1, 2, 1024, 128, 64, 8, 3),
                                                                     (2, 3, 256, 64, 32, 4, 3),
                                                                     (2, 16, 512, 128, 64, 8, 4)])
def test_attention_fwd(gpu, Z, H, N_CTX, BLOCK_M, BLOCK_N, warps, stages, D, causal):
    # the fused-attention tutorial's inputs: N(0, 0.5) in fp16, sm_scale 0.5; the tutorial's test shape, a head
    # count that is not a power of two, and (D = 64) bench/gpu.py's specialisation with one of its configs
    q, k, v = (gpu.randn(Z, H, N_CTX, D) * 0.5 for _ in range(3))
    q, k, v = q.half(), k.half(), v.half()
    sm_scale = 0.5
    o = gpu.empty(Z, H, N_CTX, D, dtype=torch.float16)
    m = gpu.empty(Z, H, N_CTX)
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    K._attn_fwd[grid](q, k, v, sm_scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H, N_CTX,
                      HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=3 if causal else 1, num_warps=warps,
                      num_stages=stages)
    gpu.done()
    ref_o, ref_m = attention_ref(q, k, v, causal, sm_scale)
    torch.testing.assert_close(o.float(), ref_o, atol=1e-2, rtol=0)
    torch.testing.assert_close(m, ref_m, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Z,H,N_CTX,BLOCK_M,BLOCK_N,stages", [(1, 4, 1024, 128, 32, 3), (2, 3, 384, 64, 64, 3),
                                                              (1, 2, 512, 128, 32, 4)])
def test_attention_fwd_maxnreg_auto(gpu, Z, H, N_CTX, BLOCK_M, BLOCK_N, stages, causal):
    """``maxnreg="auto"`` (a register cap for a second 256-thread CTA per SM where ptxas fits the kernel under it
    without spilling: tests/nvidia/test_resource_limits.py): head dim 128, 8 warps, the configs it caps, against
    torch."""
    D = 128
    q, k, v = ((gpu.randn(Z, H, N_CTX, D) * 0.5).half() for _ in range(3))
    o = gpu.empty(Z, H, N_CTX, D, dtype=torch.float16)
    m = gpu.empty(Z, H, N_CTX)
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    ck = K._attn_fwd[grid](q, k, v, 0.5, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H, N_CTX,
                           HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=3 if causal else 1, num_warps=8,
                           num_stages=stages, maxnreg="auto")
    gpu.done()
    assert ck.metadata["n_spills"] == 0
    ref_o, ref_m = attention_ref(q, k, v, causal, 0.5)
    torch.testing.assert_close(o.float(), ref_o, atol=1e-2, rtol=0)
    torch.testing.assert_close(m, ref_m, atol=1e-2, rtol=1e-3)
