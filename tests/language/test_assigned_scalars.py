"""A number assigned to a name in a kernel has the type of the scalar tensor Triton 3.6 makes of it.

Triton's code generator turns ``x = 1`` (any assignment of a Python number or a constexpr's number, not under a
``tl.constexpr`` annotation) into an int32 scalar tensor, ``eps = 0.1`` into an fp32 one, ``b = 2**40`` into
int64.  So ``int8_tensor + x`` is int32 (127 + 1 is 128, not -128) and ``fp16_tensor * eps`` is fp32 -- a weak
Python scalar would have given int8 / fp16.  tritium kept such values as weak compile-time numbers: the same
kernels computed in the narrower type and stored different values (found reading Triton's ``visit_Assign`` for
``test_poison_return``).  Now they are ``core.typed_constexpr``: Triton's type, the value still known at compile
time (a range's size, a branch).  Arithmetic among them is Triton's tensor arithmetic (int32 wrap-around, ``//`` and
``%`` truncating, fp32 rounding).  Both interpreter modes here; the same kernels on the GPU in
tests/gpu/test_assigned_scalars_gpu.py.
"""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def int8_plus_assigned(X, Y, N: tl.constexpr):
    one = 1
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) + one)


@triton.jit
def int8_plus_constexpr(X, Y, N: tl.constexpr):
    one: tl.constexpr = 1  # annotated: a weak compile-time number, the sum stays int8 (as in Triton)
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) + one)


@triton.jit
def int8_plus_annotated(X, Y, N: tl.constexpr):
    one: tl.int32 = 1  # annotated, not constexpr: still Triton's scalar tensor (the annotation is not a cast)
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) + one)


@triton.jit
def half_times_assigned(X, Y, N: tl.constexpr):
    eps = 0.1
    scale = eps * 3  # folded as fp32 arithmetic
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, x * eps + x * scale)


@triton.jit
def folded_values(OUT_I, OUT_F):
    a = -7
    big = 2147483647
    h = 1
    third = h / 3
    tl.store(OUT_I + 0, a // 2)
    tl.store(OUT_I + 1, a % 2)
    tl.store(OUT_I + 2, big + 1)
    tl.store(OUT_I + 3, -a << 29)  # 7 << 29 wraps in int32
    tl.store(OUT_F + 0, third)
    tl.store(OUT_F + 1, third * 3.0 - 1.0)


@triton.jit
def _add(x, k):
    return x + k


@triton.jit
def still_compile_time(X, Y, BLOCK: tl.constexpr):
    n = BLOCK
    half = n // 2
    a = 5
    b = 2 ** 40
    tl.static_assert(a.dtype == tl.int32)
    tl.static_assert(b.dtype == tl.int64)
    k = 1
    offs = tl.arange(0, half)  # an assigned value still sizes a range
    x = tl.load(X + offs)  # int8
    y = _add(x, k)  # passed to a @jit function: int32 there too
    tl.static_assert(y.dtype == tl.int32)
    if n > 4:  # and still picks a branch at compile time
        y = y * 2
    tl.store(Y + offs, y)


def _int8_input(n, seed):
    x = np.random.default_rng(seed).integers(-128, 128, n).astype(np.int8)
    x[:4] = [127, -128, 126, 0][:n]
    return x


@pytest.mark.parametrize("n", [16, 128])
def test_int8_plus_assigned_int_is_int32(mode, n):
    x = _int8_input(n, n)
    y = np.zeros(n, np.int32)
    int8_plus_assigned[(1,)](x, y, N=n)
    np.testing.assert_array_equal(y, x.astype(np.int32) + 1)
    assert y[0] == 128


def test_int8_plus_annotated_non_constexpr_is_int32(mode):
    x = _int8_input(32, 2)
    y = np.zeros(32, np.int32)
    int8_plus_annotated[(1,)](x, y, N=32)
    np.testing.assert_array_equal(y, x.astype(np.int32) + 1)


def test_int8_plus_annotated_constexpr_stays_int8(mode):
    x = _int8_input(32, 1)
    y = np.zeros(32, np.int32)
    int8_plus_constexpr[(1,)](x, y, N=32)
    np.testing.assert_array_equal(y, (x + np.int8(1)).astype(np.int32))  # wraps: 127 + 1 = -128
    assert y[0] == -128


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_times_assigned_float_is_fp32(mode, dtype):
    n = 64
    rng = np.random.default_rng(3)
    x32 = (rng.standard_normal(n) * 10).astype(np.float32)
    if dtype == "float16":
        x = x32.astype(np.float16)
        xf = x.astype(np.float32)
    else:
        torch = pytest.importorskip("torch")
        x = torch.from_numpy(x32).to(torch.bfloat16)
        xf = x.float().numpy()
    y = np.zeros(n, np.float32)
    half_times_assigned[(1,)](x, y, N=n)
    eps = np.float32(0.1)
    want = xf * eps + xf * (eps * np.float32(3))
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=0)  # in fp16 / bf16 the error would be ~1e-3 / 1e-2


def test_folded_values_follow_triton_arithmetic(mode):
    oi = np.zeros(4, np.int32)
    of = np.zeros(2, np.float32)
    folded_values[(1,)](oi, of)
    np.testing.assert_array_equal(oi, [-3, -1, -2 ** 31, (7 << 29) - 2 ** 32])
    third = np.float32(1) / np.float32(3)
    np.testing.assert_array_equal(of, [third, third * np.float32(3) - np.float32(1)])


@pytest.mark.parametrize("block", [4, 16])
def test_assigned_values_stay_compile_time(mode, block):
    x = _int8_input(block // 2, block)
    y = np.zeros(block // 2, np.int32)
    still_compile_time[(1,)](x, y, BLOCK=block)
    want = x.astype(np.int32) + 1
    np.testing.assert_array_equal(y, want * 2 if block > 4 else want)
