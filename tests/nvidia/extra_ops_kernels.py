"""Kernels using tl.histogram, tl.gather, tl.inline_asm_elementwise and tl.extra(.cuda).libdevice, shared by the
interpreter tests (tests/language/test_extra_ops.py), the cuda compile tests (tests/nvidia/test_extra_ops_compile.py)
and the GPU tests (tests/gpu/test_extra_ops_gpu.py)."""
import tritium as triton
import tritium.language as tl
from tritium.language.extra import libdevice
from tritium.language.extra.cuda import libdevice as cuda_libdevice


@triton.jit
def histogram_k(X, O, n, BLOCK: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=0)
    if MASKED:
        h = tl.histogram(x, BINS, mask=m & (r % 3 != 1))
    else:
        h = x.histogram(BINS)
    tl.store(O + tl.arange(0, BINS), h)


@triton.jit
def gather_1d(S, I, O, N: tl.constexpr, K: tl.constexpr):
    s = tl.load(S + tl.arange(0, N))
    i = tl.load(I + tl.arange(0, K))
    tl.store(O + tl.arange(0, K), tl.gather(s, i, 0))


@triton.jit
def gather_2d(S, I, O, M: tl.constexpr, N: tl.constexpr, IM: tl.constexpr, IN: tl.constexpr, AXIS: tl.constexpr):
    s = tl.load(S + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    ri = tl.arange(0, IM)[:, None] * IN + tl.arange(0, IN)[None, :]
    i = tl.load(I + ri)
    tl.store(O + ri, s.gather(i, AXIS))


@triton.jit
def ld_unary(X, O, n, NAME: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=1)
    tl.store(O + r, getattr(libdevice, NAME)(x), mask=m)


@triton.jit
def ld_binary(X, Y, O, n, NAME: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=1)
    y = tl.load(Y + r, mask=m, other=1)
    tl.store(O + r, getattr(libdevice, NAME)(x, y), mask=m)


@triton.jit
def ld_ternary(X, Y, Z, O, n, NAME: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=1)
    y = tl.load(Y + r, mask=m, other=1)
    z = tl.load(Z + r, mask=m, other=1)
    tl.store(O + r, getattr(libdevice, NAME)(x, y, z), mask=m)


@triton.jit
def ld_many(X, Y, Z, W, O, n, NAMES: tl.constexpr, NARGS: tl.constexpr, BLOCK: tl.constexpr):
    """Each libdevice function of NAMES (of one signature) on the same NARGS arguments, stored one after another."""
    r = tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=1)
    y = tl.load(Y + r, mask=m, other=1)
    z = tl.load(Z + r, mask=m, other=1)
    w = tl.load(W + r, mask=m, other=1)
    for k in tl.static_range(len(NAMES)):
        f = getattr(libdevice, NAMES[k])
        if NARGS == 1:
            v = f(x)
        elif NARGS == 2:
            v = f(x, y)
        elif NARGS == 3:
            v = f(x, y, z)
        else:
            v = f(x, y, z, w)
        tl.store(O + k * n + r, v, mask=m)


@triton.jit
def ld_outer(X, Y, O, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """atan2 of a column and a row (broadcast) and pow with a Python scalar, through both import paths."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm, mask=rm < M, other=1.0)
    y = tl.load(Y + rn, mask=rn < N, other=1.0)
    a = cuda_libdevice.atan2(x[:, None], y[None, :])
    b = tl.extra.cuda.libdevice.pow(x[:, None], 2) + tl.extra.libdevice.exp(y)[None, :]
    tl.store(O + rm[:, None] * N + rn[None, :], a + b, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def asm_shift(X, O, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m)
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(O + r, y, mask=m)


@triton.jit
def asm_two_results(X, Y, O1, O2, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Two results (a tuple of dtypes) from broadcast arguments: x[:, None] + y[None, :] and float(x) * 0.5."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm, mask=rm < M, other=0)
    y = tl.load(Y + rn, mask=rn < N, other=0)
    s, h = tl.inline_asm_elementwise(
        "add.s32 $0, $2, $3;\n\tcvt.rn.f32.s32 $1, $2;\n\tmul.f32 $1, $1, 0f3F000000;", "=r,=r,r,r",
        [x[:, None], y[None, :]], dtype=(tl.int32, tl.float32), is_pure=True, pack=1)
    off = rm[:, None] * N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(O1 + off, s, mask=mask)
    tl.store(O2 + off, h, mask=mask)


@triton.jit
def asm_packed_u8(X, O, n, BLOCK: tl.constexpr):
    """Four uint8 values packed in one register per asm instance: out = int32(x) + 7."""
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(X + r, mask=m, other=0)
    y = tl.inline_asm_elementwise(
        """{
        .reg .b8 t<4>;
        mov.b32 {t0, t1, t2, t3}, $4;
        cvt.u32.u8 $0, t0;
        cvt.u32.u8 $1, t1;
        cvt.u32.u8 $2, t2;
        cvt.u32.u8 $3, t3;
        add.u32 $0, $0, 7;
        add.u32 $1, $1, 7;
        add.u32 $2, $2, 7;
        add.u32 $3, $3, 7;
        }""", "=r,=r,=r,=r,r", [x], dtype=tl.int32, is_pure=True, pack=4)
    tl.store(O + r, y, mask=m)
