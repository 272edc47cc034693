"""tl.dot kernels (tests/e2e/kernels.py) on the interpreter, against NumPy on random inputs.

The matmul tutorial (every dtype the interpreter has: fp16, bf16, fp32 with each input precision, int8 with
int32 accumulation; shapes that are and are not multiples of the blocks; transposed operands through strides;
several block configs and the tutorial's autotune configs), a dot with ``acc=`` and ``out_dtype``, batched dots
(program_id(2) and a 3-D ``tl.dot``), and the fused-attention forward (causal and not, head dims 64 and 128).

The interpreter computes a dot in fp32 (int32 for integers) whatever ``input_precision`` says, and rounds the
result to the output type: references are float64 products of the same (already rounded) inputs, compared with
tolerances for the output type.  fp8 (``float8e4nv`` / ``float8e5``) tensors are not supported by the
interpreter (a CompilationError "the interpreter does not support the element type f8E4M3FN"); fp8 dots are
tested on the GPU only (tests/gpu/test_dot_gpu.py).
"""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

from . import kernels as K

torch = pytest.importorskip("torch")  # bf16 operands (numpy has no bf16) and the CPU tensors path

RNG = np.random.default_rng(2027)


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def rand(shape, dtype):
    """Random operands, never zeros: N(0, 1) floats, int8 over the whole range."""
    if dtype == "int8":
        return RNG.integers(-128, 128, size=shape).astype(np.int8)
    x = RNG.standard_normal(shape).astype(np.float32)
    if dtype == "bfloat16":
        return torch.from_numpy(x).to(torch.bfloat16)
    return x.astype(dtype)


def f64(x):
    """float64 (int64 for integers) NumPy copy of a NumPy array or CPU tensor."""
    if isinstance(x, torch.Tensor):
        x = x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    return x.astype(np.int64 if x.dtype.kind in "iu" else np.float64)


def empty(shape, dtype):
    """An output buffer filled with NaN (or a sentinel for ints), so elements left unwritten show."""
    if dtype == "bfloat16":
        return torch.full(shape, float("nan"), dtype=torch.bfloat16)
    if np.dtype(dtype).kind in "iu":
        return np.full(shape, -99, dtype)
    return np.full(shape, np.nan, dtype)


def strides(x):
    """Element strides of a NumPy array or tensor."""
    if isinstance(x, torch.Tensor):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def transposed(x):
    """The same values as ``x`` in a column-major buffer: a view whose strides are swapped."""
    if isinstance(x, torch.Tensor):
        return x.t().contiguous().t()
    return np.ascontiguousarray(x.T).T


# the output type of each input type, and the tolerance of the comparison with the float64 reference
OUT = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "int8": "int32"}
TOL = {"float16": dict(rtol=1e-2, atol=1e-2), "bfloat16": dict(rtol=2e-2, atol=5e-2),
       "float32": dict(rtol=1e-5, atol=1e-4), "int32": dict(rtol=0, atol=0)}


def check(out, ref):
    o = f64(out)
    assert not np.isnan(o).any(), "elements left unwritten"
    tol = TOL[str(out.dtype).replace("torch.", "")]
    np.testing.assert_allclose(o, ref, **tol)


def matmul(a, b, c, activation="", input_precision=None, **meta):
    M, Kd = a.shape
    N = b.shape[1]
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa
    K.matmul_kernel[grid](a, b, c, M, N, Kd, *strides(a), *strides(b), *strides(c), ACTIVATION=activation,
                          INPUT_PRECISION=input_precision, **meta)


BLOCKS = [dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, GROUP_SIZE_M=1),
          dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=4, num_warps=4),
          dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=32, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3)]


# ------------------------------------------------------------------------------------------------------ matmul
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
@pytest.mark.parametrize("M,N,Kd", [(64, 64, 64), (200, 72, 40), (33, 129, 17), (1, 5, 300)])
def test_matmul(dtype, M, N, Kd):
    a, b = rand((M, Kd), dtype), rand((Kd, N), dtype)
    c = empty((M, N), OUT[dtype])
    matmul(a, b, c, **BLOCKS[1])
    check(c, f64(a) @ f64(b))


@pytest.mark.parametrize("blocks", range(len(BLOCKS)))
@pytest.mark.parametrize("trans", ["a", "b", "ab"])
def test_matmul_transposed_operands_and_blocks(blocks, trans):
    # column-major A and/or B (strides swapped), grouped ordering with a shorter last group
    M, N, Kd = 150, 90, 70
    a, b = rand((M, Kd), "float16"), rand((Kd, N), "float16")
    if "a" in trans:
        a = transposed(a)
    if "b" in trans:
        b = transposed(b)
    c = empty((M, N), "float16")
    matmul(a, b, c, **BLOCKS[blocks])
    check(c, f64(a) @ f64(b))


def test_matmul_transposed_output_and_fp32_out():
    # fp16 inputs, an fp32 C written column-major: the cast goes to C's element type
    M, N, Kd = 45, 67, 80
    a, b = rand((M, Kd), "float16"), rand((Kd, N), "float16")
    c = transposed(empty((M, N), "float32"))
    matmul(a, b, c, **BLOCKS[0])
    np.testing.assert_allclose(c, f64(a) @ f64(b), rtol=1e-5, atol=1e-4)


def test_matmul_int8_transposed_exact():
    M, N, Kd = 77, 50, 129
    a, b = transposed(rand((M, Kd), "int8")), rand((Kd, N), "int8")
    c = empty((M, N), "int32")
    matmul(a, b, c, **BLOCKS[2])
    np.testing.assert_array_equal(c, f64(a) @ f64(b))


@pytest.mark.parametrize("precision", ["ieee", "tf32", "tf32x3"])
def test_matmul_fp32_input_precision(precision):
    M, N, Kd = 70, 40, 100
    a, b = rand((M, Kd), "float32"), rand((Kd, N), "float32")
    c = empty((M, N), "float32")
    matmul(a, b, c, input_precision=precision, **BLOCKS[1])
    check(c, f64(a) @ f64(b))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_matmul_leaky_relu(dtype):
    M, N, Kd = 96, 80, 48
    a, b = rand((M, Kd), dtype), rand((Kd, N), dtype)
    c = empty((M, N), dtype)
    matmul(a, b, c, activation="leaky_relu", **BLOCKS[1])
    ref = f64(a) @ f64(b)
    check(c, np.where(ref >= 0, ref, 0.01 * ref))


def test_matmul_torch_cpu_tensors():
    M, N, Kd = 65, 31, 47
    a = torch.randn(M, Kd, dtype=torch.float16)
    b = torch.randn(N, Kd, dtype=torch.float16).t()  # transposed view of a torch tensor
    c = torch.empty(M, N, dtype=torch.float16)
    matmul(a, b, c, **BLOCKS[0])
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("configs", ["MATMUL_CONFIGS_FP16", "MATMUL_CONFIGS_FP8"])
def test_matmul_autotune_configs(configs):
    # the tutorial's config lists drive the kernel through triton.autotune (every config benchmarked once)
    cfgs = getattr(K, configs)
    assert len(cfgs) == 8 and all(isinstance(c, triton.Config) for c in cfgs)
    tuned = triton.autotune(configs=cfgs, key=["M", "N", "K"], warmup=1, rep=1)(K.matmul_kernel)
    M, N, Kd = 40, 36, 136
    a, b = rand((M, Kd), "float16"), rand((Kd, N), "float16")
    c = empty((M, N), "float16")
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa
    tuned[grid](a, b, c, M, N, Kd, *strides(a), *strides(b), *strides(c))
    check(c, f64(a) @ f64(b))
    assert tuned.best_config in cfgs and len(tuned.configs_timings) == len(cfgs)


# ------------------------------------------------------------------------------------------- acc= / out_dtype
def dot(x, y, c, z, add_acc, out_dtype, input_precision=None, BM=16, BN=32, BK=32):
    M, Kd = x.shape
    N = y.shape[1]
    K.dot_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        x, y, c, z, M, N, Kd, *strides(x), *strides(y), *strides(c), *strides(z),
        BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, ADD_ACC=add_acc, INPUT_PRECISION=input_precision, OUT_DTYPE=out_dtype)


@pytest.mark.parametrize("add_acc", [False, True])
@pytest.mark.parametrize("dtype,out_dtype,acc_dtype", [
    ("float16", "float32", "float32"), ("float16", "float16", "float16"), ("bfloat16", "float32", "float32"),
    ("float32", "float32", "float32"), ("int8", "int32", "int32")])
def test_dot_acc_and_out_dtype(add_acc, dtype, out_dtype, acc_dtype):
    M, N, Kd = 40, 50, 30
    x, y = rand((M, Kd), dtype), rand((Kd, N), dtype)
    c = rand((M, N), "int8").astype(np.int32) if acc_dtype == "int32" else rand((M, N), acc_dtype)
    z = empty((M, N), out_dtype)
    dot(x, y, c, z, add_acc, getattr(tl, out_dtype))
    ref = f64(x) @ f64(y) + (f64(c) if add_acc else 0)
    check(z, ref)


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
def test_dot_input_precision(precision):
    M, N, Kd = 32, 32, 32
    x, y, c = rand((M, Kd), "float32"), transposed(rand((Kd, N), "float32")), rand((M, N), "float32")
    z = empty((M, N), "float32")
    dot(x, y, c, z, True, tl.float32, precision, BM=32, BN=32, BK=32)
    check(z, f64(x) @ f64(y) + f64(c))


# ------------------------------------------------------------------------------------------------------ batched
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("B,M,N,Kd", [(3, 32, 32, 32), (4, 37, 50, 70)])
def test_batched_matmul(dtype, B, M, N, Kd):
    a, b = rand((B, M, Kd), dtype), rand((B, Kd, N), dtype)
    b = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)  # column-major matrices of B
    c = empty((B, M, N), dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 32), B)
    K.batched_matmul_kernel[grid](a, b, c, M, N, Kd, *strides(a), *strides(b), *strides(c),
                                  BLOCK_M=16, BLOCK_N=32, BLOCK_K=16)
    check(c, f64(a) @ f64(b))


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("BATCH,M,N,Kd,BB", [(4, 16, 16, 16, 2), (5, 20, 33, 17, 2), (3, 64, 32, 32, 4)])
def test_dot3d(dtype, BATCH, M, N, Kd, BB):
    a, b = rand((BATCH, M, Kd), dtype), rand((BATCH, Kd, N), dtype)
    c = empty((BATCH, M, N), OUT[dtype])
    bm, bn, bk = (max(16, triton.next_power_of_2(v)) for v in (M, N, Kd))
    K.dot3d_kernel[(triton.cdiv(BATCH, BB),)](a, b, c, BATCH, M, N, Kd, *strides(a), *strides(b), *strides(c),
                                              BLOCK_B=BB, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    check(c, f64(a) @ f64(b))


# ---------------------------------------------------------------------------------------------- fused attention
def attention_ref(q, k, v, causal, sm_scale):
    """O and M (the rows' log-sum-exp of the scaled scores, in log2 units) in float64."""
    q, k, v = f64(q), f64(k), f64(v)
    s = q @ np.swapaxes(k, -1, -2) * sm_scale
    n = q.shape[-2]
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    e = np.exp(s - mx)
    lse = np.log(e.sum(-1, keepdims=True)) + mx
    return (e / e.sum(-1, keepdims=True)) @ v, lse[..., 0] / np.log(2)


def attention(q, k, v, causal, sm_scale, BLOCK_M, BLOCK_N, o=None):
    Z, H, N_CTX, D = q.shape
    o = empty(q.shape, "float16") if o is None else o
    m = empty((Z, H, N_CTX), "float32")
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    K._attn_fwd[grid](q, k, v, sm_scale, m, o, *strides(q), *strides(k), *strides(v), *strides(o), Z, H, N_CTX,
                      HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=3 if causal else 1)
    return o, m


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("Z,H,N_CTX,BLOCK_M,BLOCK_N", [(1, 2, 128, 32, 32), (2, 3, 192, 64, 32)])
def test_attention_fwd(causal, D, Z, H, N_CTX, BLOCK_M, BLOCK_N):
    q, k, v = (rand((Z, H, N_CTX, D), "float16") for _ in range(3))
    sm_scale = 1.0 / D ** 0.5
    o, m = attention(q, k, v, causal, sm_scale, BLOCK_M, BLOCK_N)
    ref_o, ref_m = attention_ref(q, k, v, causal, sm_scale)
    np.testing.assert_allclose(f64(o), ref_o, rtol=0, atol=1e-2)
    np.testing.assert_allclose(m, ref_m, rtol=1e-5, atol=1e-4)


def test_attention_fwd_strided_bf16():
    # bf16 operands (p is cast to v's type), K and V in [Z, N_CTX, H, D] memory, O written the same way
    Z, H, N_CTX, D = 2, 2, 64, 64
    q = rand((Z, H, N_CTX, D), "bfloat16")
    k, v = (rand((Z, N_CTX, H, D), "bfloat16").transpose(1, 2) for _ in range(2))
    o = empty((Z, N_CTX, H, D), "bfloat16").transpose(1, 2)
    o, m = attention(q, k, v, True, 0.3, 32, 32, o=o)
    ref_o, ref_m = attention_ref(q, k, v, True, 0.3)
    np.testing.assert_allclose(f64(o), ref_o, rtol=0, atol=3e-2)
    np.testing.assert_allclose(m, ref_m, rtol=1e-5, atol=1e-4)
