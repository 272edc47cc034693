"""``tl.dot_scaled`` (microscaled operands: fp4 e2m1 packed two a byte, fp8 e4m3 / e5m2, bf16 / fp16; uint8 e8m0 scales
per 32 K elements) against a model written apart from the implementation: every fp4 and fp8 code decoded to its
value in float64, scales as powers of two (255: NaN), the product in float64 rounded once to the compute type (fp16
if either format is fp16, else bf16, as Triton's test_core reference).  The interpreter runs them here; the same
kernels run on the GPU in tests/gpu/test_dot_scaled_gpu.py.  Shapes and data as Triton's test_scaled_dot."""
import itertools

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError

torch = pytest.importorskip("torch")

FP4 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


@triton.jit
def dot_scale_kernel(a_base, stride_a0, stride_a1, a_scale, b_base, stride_b0, stride_b1, b_scale, out,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, type_a: tl.constexpr,
                     type_b: tl.constexpr):
    DIV_A: tl.constexpr = 2 if type_a == "e2m1" else 1
    DIV_B: tl.constexpr = 2 if type_b == "e2m1" else 1
    a = tl.load(a_base + tl.arange(0, BLOCK_M)[:, None] * stride_a0
                + tl.arange(0, BLOCK_K // DIV_A)[None, :] * stride_a1)
    b = tl.load(b_base + tl.arange(0, BLOCK_K // DIV_B)[:, None] * stride_b0
                + tl.arange(0, BLOCK_N)[None, :] * stride_b1)
    SK: tl.constexpr = BLOCK_K // 32
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, BLOCK_M)[:, None] * SK + tl.arange(0, SK)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, BLOCK_N)[:, None] * SK + tl.arange(0, SK)[None, :])
    c = tl.dot_scaled(a, a_scale, type_a, b, b_scale, type_b)
    tl.store(out + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], c.to(tl.bfloat16))


@triton.jit
def dot_scale_packed_mn(a, a_scale, b, b_scale, acc_ptr, out, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # fp4 operands packed along M (lhs) and N (rhs) instead of K; an accumulator added
    av = tl.load(a + tl.arange(0, M // 2)[:, None] * K + tl.arange(0, K)[None, :])
    bv = tl.load(b + tl.arange(0, K)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :])
    sa = tl.load(a_scale + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    sb = tl.load(b_scale + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    o = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    c = tl.dot_scaled(av, sa, "e2m1", bv, sb, "e2m1", acc=tl.load(acc_ptr + o), lhs_k_pack=False, rhs_k_pack=False)
    tl.store(out + o, c)


def _fp4(n):
    mag = torch.tensor(FP4, dtype=torch.float64)[n & 7]
    return torch.where((n & 8) != 0, -mag, mag)


def model_operand(v, scale, fmt, comp, transposed, pack_k=True):
    """float64 values of an operand as the kernel sees it ([M, K] for lhs; rhs given [K, N] with ``transposed``)."""
    if transposed:
        v = v.mT
    v = v.contiguous()
    if fmt == "e2m1":
        lo, hi = _fp4((v & 0xF).long()), _fp4((v >> 4).long())
        if pack_k:
            vals = torch.stack([lo, hi], -1).reshape(v.shape[0], -1)
        else:
            vals = torch.stack([lo, hi], 1).reshape(-1, v.shape[1])
    elif fmt in ("e4m3", "e5m2"):
        vals = v.view(torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2).double()
    else:
        vals = v.double()
    vals = vals.to(comp).double()
    if scale is not None:
        s = torch.where(scale == 255, float("nan"), torch.pow(2.0, scale.double() - 127))
        if comp == torch.bfloat16:  # e8m0 0 is 2**-127: below bf16's range as the bit pattern the kernel builds
            s = torch.where(scale == 0, 0.0, s)
        vals = (vals.reshape(vals.shape[0], -1, 32) * s[:, :, None]).reshape(vals.shape[0], -1)
    return vals.mT if transposed else vals


def make_case(M, N, K, col_a, col_b, rhs_scale, mxfp_type, normal_type, device="cpu"):
    """Triton's test_scaled_dot inputs: uniform bytes made finite, clamped normal values, scales in range."""
    comp = torch.float16 if normal_type == "fp16" else torch.bfloat16
    maxexp = 6 if normal_type == "fp16" else 15
    g = torch.Generator().manual_seed(M * 7 + N * 3 + K + col_a * 2 + col_b + 5 * rhs_scale)

    def make_arg(shape, ty, col_major):
        if col_major:
            shape = (shape[1], shape[0])
        if ty in ("bf16", "fp16"):
            r = torch.randn(shape, generator=g).to(comp).clamp_(-2 ** maxexp, 2 ** maxexp - 1)
        else:
            r = torch.randint(256, shape, dtype=torch.uint8, generator=g)
            if ty in ("e4m3", "e5m2"):
                if ty == "e5m2" and comp == torch.float16:
                    r = r & 0xB
                mask = 0x7C if ty == "e5m2" else 0x7F
                finite = torch.arange(r.numel(), dtype=torch.uint8).reshape_as(r) % mask
                r = torch.where(r & mask == mask, finite | (0x80 & r), r)
        return r.mT if col_major else r

    type_a = normal_type if rhs_scale else mxfp_type
    type_b = mxfp_type if rhs_scale else normal_type
    x = make_arg((M, K // (2 if type_a == "e2m1" else 1)), type_a, col_a)
    y = make_arg((K // (2 if type_b == "e2m1" else 1), N), type_b, col_b)
    lo, hi = (0, 142) if comp == torch.bfloat16 else (124, 131)
    sx = torch.randint(lo, hi + 1, (M, K // 32), dtype=torch.uint8, generator=g)
    sy = torch.randint(lo, hi + 1, (N, K // 32), dtype=torch.uint8, generator=g)
    sx, sy = (None, sy) if rhs_scale else (sx, None)
    want = (model_operand(x, sx, type_a, comp, False) @ model_operand(y, sy, type_b, comp, True)).to(comp)
    mv = lambda t: None if t is None else t.to(device)  # noqa: E731
    return (mv(x), mv(sx), mv(y), mv(sy), type_a, type_b, comp), want


def run_case(M, N, K, col_a, col_b, rhs_scale, mxfp_type, normal_type, device="cpu"):
    (x, sx, y, sy, ta, tb, comp), want = make_case(M, N, K, col_a, col_b, rhs_scale, mxfp_type, normal_type, device)
    z = torch.empty((M, N), dtype=comp, device=device)
    dot_scale_kernel[(1,)](x, *x.stride(), sx, y, *y.stride(), sy, z, M, N, K, ta, tb)
    return z.cpu(), want


CASES = [(M, N, K, ca, cb, rs, mx, nt)
         for M, N, K in ((32, 32, 64), (64, 32, 128))
         for ca, cb in itertools.product((True, False), repeat=2)
         for rs in (False, True)
         for mx in ("e2m1", "e4m3", "e5m2")
         for nt in ("e4m3", "e5m2", "bf16", "fp16")]


@pytest.mark.parametrize("case", CASES[::4] + [CASES[1], CASES[-1]], ids=lambda c: "-".join(map(str, c)))
def test_dot_scaled_matches_the_model(case):
    z, want = run_case(*case)
    torch.testing.assert_close(z.double(), want.double(), atol=1e-5, rtol=1e-2)


def run_packed(M, N, K, device="cpu") -> str:
    """fp4 operands packed along M and N, with an accumulator: "" when the result is within the fp32 accumulation's
    bound of the model, else what differs."""
    g = torch.Generator().manual_seed(3)
    a = torch.randint(256, (M // 2, K), dtype=torch.uint8, generator=g)
    b = torch.randint(256, (K, N // 2), dtype=torch.uint8, generator=g)
    sa = torch.randint(120, 135, (M, K // 32), dtype=torch.uint8, generator=g)
    sb = torch.randint(120, 135, (N, K // 32), dtype=torch.uint8, generator=g)
    acc = torch.randn(M, N, generator=g)
    out = torch.empty(M, N, device=device)
    dev = lambda t: t.to(device)  # noqa: E731
    dot_scale_packed_mn[(1,)](dev(a), dev(sa), dev(b), dev(sb), dev(acc), out, M=M, N=N, K=K)
    am = model_operand(a, sa, "e2m1", torch.bfloat16, False, pack_k=False)
    bm = model_operand(b, sb, "e2m1", torch.bfloat16, True, pack_k=False)
    want = am @ bm + acc.double()
    bound = (am.abs() @ bm.abs() + acc.double().abs()) * 2.0 ** -23 * (K + 1)  # fp32 accumulation
    bad = (out.cpu().double() - want).abs() > bound
    return f"{int(bad.sum())} of {bad.numel()} elements outside the bound" if bad.any() else ""


def test_packed_along_m_and_n_with_an_accumulator():
    assert run_packed(32, 64, 64) == ""


def test_nan_scale():
    (x, sx, y, sy, ta, tb, comp), _ = make_case(32, 32, 64, False, False, False, "e4m3", "bf16")
    sx = sx.clone()
    sx[3, 1] = 255
    z = torch.empty((32, 32), dtype=comp)
    dot_scale_kernel[(1,)](x, *x.stride(), sx, y, *y.stride(), sy, z, 32, 32, 64, ta, tb)
    assert torch.isnan(z[3]).all() and not torch.isnan(z[:3]).any() and not torch.isnan(z[4:]).any()


@triton.jit
def bad_format(a, b, out):
    o = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(out + o, tl.dot_scaled(tl.load(a + o), None, "e3m3", tl.load(b + o), None, "bf16"))


def test_a_bad_format_names_the_line():
    a = np.zeros(1024, np.uint8)
    with pytest.raises(CompilationError, match=r"(?s)lhs_format must be e2m1, e4m3, e5m2, bf16 or fp16"):
        bad_format[(1,)](a, a, np.zeros(1024, np.float32))
