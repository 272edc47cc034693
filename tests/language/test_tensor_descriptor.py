"""Tensor descriptors (Triton 3.6's ``tl.make_tensor_descriptor``): loads and stores on the interpreter against
NumPy (TMA semantics: out-of-shape elements read the padding and are not written), Triton's compile-time checks
as CompilationErrors at the kernel's line, run-time errors, a persistent matmul in the style of Triton 3.6's
tutorial, and the cuda path (descriptors rewritten into masked loads and stores)."""
import inspect
import os

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile
from tritium.errors import CompilationError, KernelRuntimeError, OutOfBoundsError

# (no importorskip("mlir") here: tests/gpu imports these kernels on a machine without MLIR, from the kernel cache)

NP = {"fp16": np.float16, "fp32": np.float32, "int8": np.int8, "int32": np.int32}


def _line_of(fn, text):
    """The source line (in the file) of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn}")


def _random(rng, shape, dt):
    if np.issubdtype(NP[dt], np.integer):
        return rng.integers(-100, 100, size=shape).astype(NP[dt])
    return rng.standard_normal(shape).astype(NP[dt])


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------

@triton.jit
def scale_2d(X, Y, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr, ALPHA: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, shape=[M, N], strides=[stride_x, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(Y, [M, N], [stride_y, 1], [BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    v = xd.load([om, on])
    yd.store([om, on], v * ALPHA)


@triton.jit
def block_dump(X, OUT, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    """The block of X at (om, on) written whole (ordinary stores) into OUT: shows the padding."""
    xd = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    v = xd.load([om, on])
    r = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(OUT + r, v)


@triton.jit
def block_fill(Y, M, N, stride_y, om, on, value, BM: tl.constexpr, BN: tl.constexpr):
    yd = tl.make_tensor_descriptor(Y, [M, N], [stride_y, 1], [BM, BN])
    yd.store([om, on], tl.full((BM, BN), value, tl.float32))


@triton.jit
def copy_3d(X, Y, A, B, C, sxa, sxb, sya, syb, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, [A, B, C], [sxa, sxb, 1], [BA, BB, BC])
    yd = tl.make_tensor_descriptor(Y, [A, B, C], [sya, syb, 1], [BA, BB, BC])
    oa = tl.program_id(0) * BA
    ob = tl.program_id(1) * BB
    oc = tl.program_id(2) * BC
    tl.store_tensor_descriptor(yd, [oa, ob, oc], tl.load_tensor_descriptor(xd, [oa, ob, oc]) + 1)


@triton.jit
def row_sums(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor used in a loop over column blocks (loop-invariant) and one chosen by a branch."""
    xd = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    od = tl.make_tensor_descriptor(OUT, [M, 16], [16, 1], [BM, 16])
    om = tl.program_id(0) * BM
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(N, BN), num_stages=2):
        acc += xd.load([om, k * BN])
    s = tl.sum(acc, axis=1)
    od.store([om, 0], tl.broadcast_to(s[:, None], (BM, 16)))


@triton.jit
def attributes(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    tl.static_assert(xd.block_shape == [BM, BN])
    tl.static_assert(xd.dtype == tl.float16)
    tl.static_assert(xd.block_type == tl.block_type(tl.float16, [BM, BN]))
    tl.store(OUT + 0, xd.shape[0])
    tl.store(OUT + 1, xd.shape[1])
    tl.store(OUT + 2, xd.strides[0].to(tl.int32))
    tl.store(OUT + 3, xd.strides[1].to(tl.int32))


@triton.jit
def carried(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Descriptors carried through a loop and chosen by branches (run-time and compile-time conditions)."""
    a = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    b = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    pid = tl.program_id(0)
    d = a
    for i in range(0, 2):
        v = d.load([pid * BM, i * BN])
        b.store([pid * BM, i * BN], v + 1.0)
        d = d
    if pid % 2 == 1:
        e = b
    else:
        e = a
    w = e.load([pid * BM, 2 * BN])
    b.store([pid * BM, 2 * BN], w * 2.0)


def _ref_scale(x, alpha, dt):
    if np.issubdtype(NP[dt], np.integer):
        return (x.astype(np.int64) * alpha).astype(NP[dt])  # wraps as the kernel's int8 multiply does
    return (x * NP[dt](alpha)).astype(NP[dt])


# ---------------------------------------------------------------------------------------------
# results on the interpreter
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt,M,N,BM,BN", [
    ("fp32", 64, 64, 16, 32), ("fp32", 37, 52, 16, 16), ("fp16", 50, 40, 32, 16), ("fp16", 3, 200, 4, 64),
    ("int8", 45, 80, 16, 32), ("int8", 17, 16, 8, 16), ("int32", 20, 12, 8, 4),
])
def test_scale_2d(dt, M, N, BM, BN):
    rng = np.random.default_rng(M * 1000 + N)
    x = _random(rng, (M, N), dt)
    y = np.zeros((M, N), NP[dt])
    scale_2d[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, y, M, N, N, N, BM=BM, BN=BN, ALPHA=3)
    np.testing.assert_array_equal(y, _ref_scale(x, 3, dt))


def test_strided_rows_and_dropped_stores():
    """A row stride larger than the shape (a sub-matrix of a wider buffer): columns past N are never written,
    nor rows past M, though the blocks overhang both."""
    rng = np.random.default_rng(1)
    M, N, W = 29, 44, 64
    x = rng.standard_normal((M, W)).astype(np.float32)
    y = np.full((M + 5, W), -7.0, np.float32)
    scale_2d[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, y, M, N, W, W, BM=16, BN=16, ALPHA=2.0)
    np.testing.assert_array_equal(y[:M, :N], x[:, :N] * 2)
    assert (y[:M, N:] == -7.0).all() and (y[M:] == -7.0).all()


@pytest.mark.parametrize("om,on", [(8, 8), (-4, 0), (0, -8), (24, 28), (40, 0), (-16, -16)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_load_padding(om, on, pad):
    rng = np.random.default_rng(2)
    M, N, BM, BN = 30, 36, 16, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.empty(BM * BN, np.float32)
    block_dump[(1,)](x, out, M, N, om, on, BM=BM, BN=BN, PAD=pad)
    fill = 0.0 if pad == "zero" else np.nan
    ref = np.full((BM, BN), fill, np.float32)
    for i in range(BM):
        for j in range(BN):
            r, c = om + i, on + j
            if 0 <= r < M and 0 <= c < N:
                ref[i, j] = x[r, c]
    np.testing.assert_array_equal(out.reshape(BM, BN), ref)


@pytest.mark.parametrize("om,on", [(20, 24), (-8, -4), (0, 32), (100, 0)])
def test_store_drops_out_of_shape(om, on):
    M, N, W = 24, 30, 48
    y = np.zeros((M + 8, W), np.float32)
    block_fill[(1,)](y, M, N, W, om, on, 5.0, BM=16, BN=16)
    ref = np.zeros_like(y)
    ref[max(om, 0):min(om + 16, M), max(on, 0):min(on + 16, N)] = 5.0
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("dt", ["fp32", "fp16", "int8"])
@pytest.mark.parametrize("A,B,C", [(4, 8, 32), (5, 11, 48), (3, 2, 80)])
def test_copy_3d(dt, A, B, C):
    rng = np.random.default_rng(A * B * C)
    x = _random(rng, (A, B, C), dt)
    y = np.zeros((A, B, C), NP[dt])
    BA, BB, BC = 2, 4, 32
    copy_3d[(triton.cdiv(A, BA), triton.cdiv(B, BB), triton.cdiv(C, BC))](
        x, y, A, B, C, B * C, C, B * C, C, BA=BA, BB=BB, BC=BC)
    np.testing.assert_array_equal(y, (x.astype(np.int64) + 1).astype(NP[dt]) if dt == "int8" else x + NP[dt](1))


@pytest.mark.parametrize("M,N", [(32, 64), (45, 100), (8, 8)])
def test_loop_over_blocks(M, N):
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((M, 16), np.float32)
    row_sums[(triton.cdiv(M, 16),)](x, out, M, N, BM=16, BN=32)
    np.testing.assert_allclose(out, np.repeat(x.sum(1, keepdims=True), 16, 1), rtol=1e-5, atol=1e-5)


def test_descriptor_attributes():
    x = np.zeros((20, 24), np.float16)
    out = np.zeros(4, np.int32)
    attributes[(1,)](x, out, 20, 24, BM=8, BN=8)
    np.testing.assert_array_equal(out, [20, 24, 24, 1])


def test_descriptors_through_control_flow():
    rng = np.random.default_rng(3)
    M, N, BM, BN = 32, 48, 8, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, N), np.float32)
    carried[(M // BM,)](x, y, M, N, BM=BM, BN=BN)
    ref = np.zeros_like(y)
    ref[:, :2 * BN] = x[:, :2 * BN] + 1.0
    for p in range(M // BM):
        rows = slice(p * BM, (p + 1) * BM)
        # odd programs read their own (still zero) block of Y, even ones X's
        ref[rows, 2 * BN:] = 0.0 if p % 2 == 1 else x[rows, 2 * BN:] * 2.0
    np.testing.assert_array_equal(y, ref)


# ---------------------------------------------------------------------------------------------
# run-time errors on the interpreter
# ---------------------------------------------------------------------------------------------

def test_shape_larger_than_buffer_is_out_of_bounds():
    x = np.zeros((16, 16), np.float32)
    y = np.zeros((16, 16), np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        scale_2d[(1, 1)](x, y, 32, 16, 16, 16, BM=32, BN=16, ALPHA=1.0)  # the shape claims 32 rows
    assert f":{_line_of(scale_2d, 'xd.load')}" in str(e.value)


def test_misaligned_stride_is_an_error():
    x = np.zeros((8, 20), np.float32)  # a row of 20 fp32 is 80 bytes: fine; 10 fp32 (40 bytes) is not
    y = np.zeros((8, 20), np.float32)
    with pytest.raises(KernelRuntimeError, match="multiple of 16 bytes") as e:
        scale_2d[(1, 1)](x, y, 8, 10, 10, 20, BM=8, BN=16, ALPHA=1.0)
    assert f":{_line_of(scale_2d, 'xd = tl.make_tensor_descriptor')}" in str(e.value)


def test_misaligned_offset_is_an_error():
    x = np.zeros((16, 32), np.float32)
    out = np.zeros(16 * 16, np.float32)
    with pytest.raises(KernelRuntimeError, match="block offset along the last dimension"):
        block_dump[(1,)](x, out, 16, 32, 0, 2, BM=16, BN=16, PAD="zero")


# ---------------------------------------------------------------------------------------------
# compile-time errors: CompilationErrors at the kernel's line
# ---------------------------------------------------------------------------------------------

@triton.jit
def bad_kernel(X, M, N, S, CASE: tl.constexpr, B: tl.constexpr):
    if CASE == "strides_rank":
        d = tl.make_tensor_descriptor(X, [M, N], [N], [B, B])
    elif CASE == "block_rank":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B, B])
    elif CASE == "block_runtime":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, M])
    elif CASE == "block_pow2":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, 24])
    elif CASE == "last_stride":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 2], [B, B])
    elif CASE == "last_stride_runtime":
        d = tl.make_tensor_descriptor(X, [M, N], [N, S], [B, B])
    elif CASE == "too_narrow":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, 2])
    elif CASE == "rank0":
        d = tl.make_tensor_descriptor(X, [], [], [])
    elif CASE == "rank6":
        d = tl.make_tensor_descriptor(X, [M, M, M, M, M, N], [N, N, N, N, N, 1], [1, 1, 1, 1, 1, B])
    elif CASE == "not_pointer":
        d = tl.make_tensor_descriptor(M, [M, N], [N, 1], [B, B])
    elif CASE == "padding":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B], padding_option="ones")
    elif CASE == "offsets":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B])
        d.load([0])
    elif CASE == "offsets_i64":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B])
        d.load([0, N.to(tl.int64)])
    elif CASE == "store_shape":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B])
        d.store([0, 0], tl.zeros((B, 2 * B), tl.float32))
    elif CASE == "not_descriptor":
        tl.load_tensor_descriptor(X, [0, 0])
    elif CASE == "atomic":
        d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B])
        d.atomic_add([0, 0], tl.zeros((B, B), tl.float32))


@triton.jit
def bad_nan_int(X, M, N):
    d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16], padding_option="nan")


BAD = {
    "strides_rank": ("Expected 2 strides but got 1", "[N], [B, B]"),
    "block_rank": ("Expected block_shape to have 2 dimensions but got 3", "[B, B, B]"),
    "block_runtime": ("block_shape must be known at compile time", "[B, M]"),
    "block_pow2": ("must be a power of 2", "[B, 24]"),
    "last_stride": ("Tensor descriptor last dim must be 1 but got 2", "[N, 2]"),
    "last_stride_runtime": ("last dim must be 1 but got a run-time stride", "[N, S]"),
    "too_narrow": ("at least 16 bytes in the last dimension, but got 2 * 4 = 8 bytes", "[B, 2]"),
    "rank0": ("Expected 1 <= ndim <= 5 but got 0", "[], [], []"),
    "rank6": ("Expected 1 <= ndim <= 5 but got 6", "[M, M, M, M, M, N]"),
    "not_pointer": ("base must be a pointer", "(M, [M, N]"),
    "padding": ("unknown padding option 'ones'", "padding_option=\"ones\""),
    "offsets": ("expected 2 offsets, but got 1", "d.load([0])"),
    "offsets_i64": ("must be 32-bit", "to(tl.int64)"),
    "store_shape": ("differs from the descriptor's block shape [16, 16]", "d.store([0, 0]"),
    "not_descriptor": ("needs a tensor descriptor", "tl.load_tensor_descriptor(X"),
    "atomic": ("tensor_descriptor.atomic_add is not supported by tritium yet", "d.atomic_add("),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_compile_errors(case):
    message, where = BAD[case]
    src = ASTSource(bad_kernel, {"X": "*fp32", "M": "i32", "N": "i32", "S": "i32"},
                    constexprs={"CASE": case, "B": 16})
    with pytest.raises(CompilationError) as e:
        compile(src, target="interpreter")
    assert message in str(e.value)
    assert e.value.lineno == _line_of(bad_kernel, where), str(e.value)


def test_nan_padding_of_integers_is_an_error():
    with pytest.raises(CompilationError, match="`nan` is not supported for integer blocks") as e:
        compile(ASTSource(bad_nan_int, {"X": "*i32", "M": "i32", "N": "i32"}), target="interpreter")
    assert e.value.lineno == _line_of(bad_nan_int, "padding_option")


def test_int1_descriptors_are_rejected():
    with pytest.raises(CompilationError, match="at least 16 bytes"):
        compile(ASTSource(scale_2d, {"X": "*i1", "Y": "*i1", "M": "i32", "N": "i32", "stride_x": "i32",
                                     "stride_y": "i32"}, constexprs={"BM": 16, "BN": 16, "ALPHA": 1}),
                target="interpreter")


# ---------------------------------------------------------------------------------------------
# the persistent matmul of Triton 3.6's tutorial (09-persistent-matmul.py), descriptor version
# ---------------------------------------------------------------------------------------------

@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr,  #
                                        M, N, K,  #
                                        BLOCK_SIZE_M: tl.constexpr,  #
                                        BLOCK_SIZE_N: tl.constexpr,  #
                                        BLOCK_SIZE_K: tl.constexpr,  #
                                        GROUP_SIZE_M: tl.constexpr,  #
                                        EPILOGUE_SUBTILE: tl.constexpr,  #
                                        NUM_SMS: tl.constexpr,  #
                                        WARP_SPECIALIZE: tl.constexpr,  #
                                        FLATTEN: tl.constexpr,  #
                                        ):
    # b is given transposed (N x K), as in the tutorial
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tl.make_tensor_descriptor(
        a_ptr,
        shape=[M, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
    )
    b_desc = tl.make_tensor_descriptor(
        b_ptr,
        shape=[N, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K],
    )
    c_desc = tl.make_tensor_descriptor(
        c_ptr,
        shape=[M, N],
        strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2],
    )

    # tile_id_c is used in the epilogue to break the dependency between the prologue and the epilogue
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N

        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


def matmul_descriptor_persistent(a, b, warp_specialize=False, subtile=False, flatten=True, num_sms=4,
                                 BM=32, BN=32, BK=32):
    """The tutorial's host function, on NumPy arrays (``b`` transposed: N x K)."""
    M, K = a.shape
    N, K2 = b.shape
    assert K == K2 and a.dtype == b.dtype
    c = np.empty((M, N), a.dtype)

    def alloc_fn(size, alignment, stream):  # what the tutorial installs; tritium does not call it
        raise AssertionError("tritium's tensor descriptors need no global scratch")

    triton.set_allocator(alloc_fn)
    grid = lambda META: (min(num_sms, triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"])),)
    matmul_kernel_descriptor_persistent[grid](
        a, b, c, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=2,
        EPILOGUE_SUBTILE=subtile, NUM_SMS=num_sms, WARP_SPECIALIZE=warp_specialize, FLATTEN=flatten)
    return c


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (100, 72, 56), (33, 136, 40)])
@pytest.mark.parametrize("subtile,ws", [(False, False), (True, True)])
def test_persistent_matmul(M, N, K, subtile, ws):
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = matmul_descriptor_persistent(a, b, warp_specialize=ws, subtile=subtile)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=5e-2)


def test_persistent_matmul_fp32_more_programs_than_tiles():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    b = rng.standard_normal((20, 24)).astype(np.float32)
    c = matmul_descriptor_persistent(a, b, num_sms=16, BM=16, BN=16, BK=8, flatten=False)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4, atol=1e-4)


def test_set_allocator_is_kept():
    import contextvars

    from tritium.runtime._allocation import NullAllocator, get_allocator

    def alloc(size, alignment, stream):
        return None

    default = contextvars.Context().run(get_allocator)  # a fresh context: the default
    assert isinstance(default, NullAllocator)
    with pytest.raises(RuntimeError, match="must provide an allocator"):
        default(128, 128, None)

    def set_and_get():
        triton.set_allocator(alloc)
        return get_allocator()

    assert contextvars.copy_context().run(set_and_get) is alloc
    with pytest.raises(TypeError):
        triton.set_allocator(3)


# ---------------------------------------------------------------------------------------------
# the cuda path: descriptors rewritten into masked loads and stores (compile only)
# ---------------------------------------------------------------------------------------------

def _cuda(fn, sig, until, **constexprs):
    pytest.importorskip("llvmlite")
    return compile(ASTSource(fn, sig, constexprs=constexprs), target="cuda:90", options={"num_warps": 4},
                   until=until)


def test_cuda_copy_compiles_to_ptx():
    k = _cuda(scale_2d, {"X": "*fp16", "Y": "*fp16", "M": "i32", "N": "i32", "stride_x": "i32", "stride_y": "i32"},
              "ptx", BM=32, BN=64, ALPHA=2.0)
    ttir = k.asm["ttir"]
    assert "!tt.tensordesc" not in ttir and '"tt.descriptor_' not in ttir and '"tt.make_tensor_' not in ttir
    assert ttir.count('"tt.load"') == 1 and ttir.count('"tt.store"') == 1
    assert ".entry scale_2d" in k.asm["ptx"]


def test_cuda_3d_and_loops_compile_to_ptx():
    k = _cuda(copy_3d, {"X": "*fp32", "Y": "*fp32", "A": "i32", "B": "i32", "C": "i32", "sxa": "i32", "sxb": "i32",
                        "sya": "i32", "syb": "i32"}, "ptx", BA=2, BB=4, BC=32)
    assert ".entry copy_3d" in k.asm["ptx"]
    k = _cuda(row_sums, {"X": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32"}, "ptx", BM=16, BN=32)
    assert ".entry row_sums" in k.asm["ptx"]


def test_cuda_persistent_matmul():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    ce = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, EPILOGUE_SUBTILE=True,
              NUM_SMS=132, WARP_SPECIALIZE=False, FLATTEN=True)
    k = _cuda(matmul_kernel_descriptor_persistent, sig, "ptx", **ce)
    # descriptors rewritten to pointer loads; the dot on Hopper tensor cores
    assert "!tt.tensordesc" not in k.asm["ttgir"] and '"ttg.warp_group_dot"' in k.asm["ttgir"]
    assert "wgmma.mma_async" in k.asm["ptx"]
    assert ".entry matmul_kernel_descriptor_persistent" in k.asm["ptx"]


# ---------------------------------------------------------------------------------------------
# host-side descriptors (triton.tools.tensor_descriptor.TensorDescriptor) as kernel arguments
# ---------------------------------------------------------------------------------------------

from tritium.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton.jit
def host_scale(x_desc, y_desc, ALPHA: tl.constexpr):
    BM: tl.constexpr = x_desc.block_shape[0]
    BN: tl.constexpr = x_desc.block_shape[1]
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    y_desc.store([om, on], x_desc.load([om, on]) * ALPHA)


@triton.jit
def host_mixed(X, n, y_desc, BLOCK: tl.constexpr):
    """A host descriptor among ordinary arguments: y[i, :] = x[i] (1-D block rows of a 2-D descriptor)."""
    i = tl.program_id(0)
    v = tl.load(X + i, mask=i < n, other=0.0)
    y_desc.store([i, 0], tl.full((1, BLOCK), v, tl.float32))


@pytest.mark.parametrize("dt,M,N,BM,BN", [("fp32", 37, 52, 16, 16), ("fp16", 50, 40, 32, 16), ("int8", 45, 80, 16, 32)])
def test_host_descriptor(dt, M, N, BM, BN):
    rng = np.random.default_rng(M + N)
    x = _random(rng, (M, N), dt)
    y = np.zeros((M, N), NP[dt])
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    k = host_scale[grid](TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor.from_tensor(y, [BM, BN]), ALPHA=3)
    np.testing.assert_array_equal(y, _ref_scale(x, 3, dt))
    ty = {"fp32": "fp32", "fp16": "fp16", "int8": "i8"}[dt]
    assert [t for _, t in k.signature] == [f"tensordesc<{ty}[{BM}, {BN}]>"] * 2
    # a relaunch with other arrays of another shape: the same kernel (shapes are run-time values), fast path
    x2 = _random(rng, (M + 16, N), dt)
    y2 = np.zeros_like(x2)
    count = host_scale.compile_count
    host_scale[(triton.cdiv(M + 16, BM), grid[1])](TensorDescriptor.from_tensor(x2, [BM, BN]),
                                                   TensorDescriptor.from_tensor(y2, [BM, BN]), ALPHA=3)
    np.testing.assert_array_equal(y2, _ref_scale(x2, 3, dt))
    assert host_scale.compile_count == count


def test_host_descriptor_of_a_sub_matrix_and_nan_padding():
    rng = np.random.default_rng(5)
    big = rng.standard_normal((40, 64)).astype(np.float32)
    x = TensorDescriptor(big, [30, 36], [64, 1], [16, 16], padding="nan")  # the top-left 30 x 36 of big
    out = np.zeros((32, 48), np.float32)
    host_scale[(2, 3)](x, TensorDescriptor.from_tensor(out, [16, 16]), ALPHA=1.0)
    ref = np.full((32, 48), np.nan, np.float32)
    ref[:30, :36] = big[:30, :36]
    np.testing.assert_array_equal(out, ref)


def test_host_descriptor_mixed_with_other_arguments():
    x = np.arange(10, dtype=np.float32)
    y = np.zeros((12, 8), np.float32)
    host_mixed[(12,)](x, 10, TensorDescriptor.from_tensor(y, [1, 8]), BLOCK=8)
    ref = np.zeros((12, 8), np.float32)
    ref[:10] = x[:, None]
    np.testing.assert_array_equal(y, ref)


def test_host_descriptor_torch_cpu():
    torch = pytest.importorskip("torch")
    x = torch.randn(33, 48)
    y = torch.zeros(33, 48)
    host_scale[(3, 3)](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(y, [16, 16]), ALPHA=2.0)
    assert torch.equal(y, x * 2)


def test_host_descriptor_warmup_with_type_strings():
    k = host_scale.warmup("tensordesc<fp16[32, 64]>", "tensordesc<fp16[32, 64]>", ALPHA=2.0, grid=(1,))
    assert "!tt.tensordesc<tensor<32x64xf16>>" in k.asm["ttir"]
    assert "ARG_TYPES = ('!tt.ptr<f16>', 'i32', 'i32', 'i64', 'i64', '!tt.ptr<f16>'" in k.asm["npy"]


@pytest.mark.parametrize("make,message", [
    (lambda a: TensorDescriptor(a, [8, 10], [10, 1], [8, 16]), "strides must be 16-byte aligned"),
    (lambda a: TensorDescriptor(a, [8, 16], [16, 1], [8, 12]), "must be a power of 2"),
    (lambda a: TensorDescriptor(a, [8, 16], [16, 1], [8]), "rank mismatch"),
    (lambda a: TensorDescriptor(a, [16, 8], [1, 16], [8, 8]), "last dimension must be contiguous"),
    (lambda a: TensorDescriptor(a, [8, 16], [16, 1], [8, 16], padding="one"), "padding must be 'zero' or 'nan'"),
    (lambda a: TensorDescriptor.from_tensor(a.reshape(-1)[1:], [16]), "base must be 16-byte aligned"),
])
def test_host_descriptor_checks(make, message):
    a = np.zeros((8, 16), np.float32)
    with pytest.raises(ValueError, match=message):
        make(a)


@triton.jit
def matmul_kernel_tma_persistent(a_desc, b_desc, c_desc,  #
                                 M, N, K,  #
                                 BLOCK_SIZE_M: tl.constexpr,  #
                                 BLOCK_SIZE_N: tl.constexpr,  #
                                 BLOCK_SIZE_K: tl.constexpr,  #
                                 GROUP_SIZE_M: tl.constexpr,  #
                                 EPILOGUE_SUBTILE: tl.constexpr,  #
                                 NUM_SMS: tl.constexpr,  #
                                 WARP_SPECIALIZE: tl.constexpr,  #
                                 ):
    # the tutorial's host-descriptor version: the descriptors come from the host
    dtype = tl.float16
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am_c = pid_m * BLOCK_SIZE_M
        offs_bn_c = pid_n * BLOCK_SIZE_N

        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c + BLOCK_SIZE_N // 2], c1)
        else:
            accumulator = accumulator.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c], accumulator)


@pytest.mark.parametrize("subtile", [False, True])
def test_persistent_matmul_host_descriptors(subtile):
    rng = np.random.default_rng(11)
    M, N, K = 72, 40, 48
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    BM, BN, BK, NUM_SMS = 32, 32, 16, 3
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BN, BK])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN // 2 if subtile else BN])
    grid = (min(NUM_SMS, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    matmul_kernel_tma_persistent[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
                                       BLOCK_SIZE_K=BK, GROUP_SIZE_M=2, EPILOGUE_SUBTILE=subtile, NUM_SMS=NUM_SMS,
                                       WARP_SPECIALIZE=False)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=5e-2)


def test_cuda_host_descriptors_compile_to_tma_on_sm90():
    """sm_90: each host descriptor is a TMA tensor map (a 128-byte parameter) followed by base, shape and strides;
    loads are TMA copies completed on an mbarrier, stores bulk TMA stores; the metadata tells the launcher how to
    encode each map."""
    sig = {"x_desc": "tensordesc<fp16[32, 64]>", "y_desc": "tensordesc<fp16[32, 64],nan>"}
    k = compile(ASTSource(host_scale, sig, constexprs={"ALPHA": 2.0}, attrs={"y_desc": {"tt.padding": 2, "tt.divisibility": 16}}),
                target="cuda:90", options={"num_warps": 4}, until="ptx")
    assert k.metadata["arg_types"] == ["tensormap", "ptr", "i32", "i32", "i64", "i64"] * 2
    assert k.metadata["tensormaps"] == [
        {"index": 0, "dtype": "fp16", "rank": 2, "box": [32, 64], "swizzle": 128, "fill_nan": False},
        {"index": 6, "dtype": "fp16", "rank": 2, "box": [32, 64], "swizzle": 128, "fill_nan": True}]
    ptx = k.asm["ptx"]
    assert ptx.count(".param .align 64 .b8") == 2 and "cvta.param.u64" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r" in ptx and "mbarrier.try_wait.parity" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx
    assert "fence.proxy.async.shared::cta" in ptx and "cp.async.bulk.wait_group.read 0" in ptx
    assert "ld.global" not in ptx and "st.global" not in ptx  # every access through TMA


def test_cuda_host_descriptors_compile_to_pointers_on_sm80_and_when_not_tma_capable():
    sig = {"x_desc": "tensordesc<fp16[32, 64]>", "y_desc": "tensordesc<fp16[32, 64],nan>"}
    k = compile(ASTSource(host_scale, sig, constexprs={"ALPHA": 2.0}), target="cuda:80", options={"num_warps": 4},
                until="ptx")
    assert k.metadata["arg_types"] == ["ptr", "i32", "i32", "i64", "i64"] * 2 and not k.metadata["tensormaps"]
    assert ".entry host_scale" in k.asm["ptx"] and "!tt.tensordesc" not in k.asm["ttgir"]
    # rows of 8 bytes: below TMA's 16 -- ordinary loads and stores on sm_90 too
    k = _cuda(host_scale, {"x_desc": "tensordesc<fp16[32, 4]>", "y_desc": "tensordesc<fp16[32, 4]>"}, "ptx",
              ALPHA=2.0)
    assert "tensormap" not in k.metadata["arg_types"] and "cp.async.bulk" not in k.asm["ptx"]


def test_host_descriptor_precompile_stub_specialises_alike():
    import pickle

    from tritium.runtime.precompile import _stub_args
    from tritium.runtime.specialization import describe_fn

    a = np.zeros((32, 64), np.float16)
    for d in (TensorDescriptor.from_tensor(a, [16, 32]), TensorDescriptor(a, [30, 64], [64, 1], [16, 64], "nan")):
        (stub,) = pickle.loads(pickle.dumps(_stub_args((d,))))
        describe = describe_fn(True, True)
        assert describe(stub) == describe(d)


# ---------------------------------------------------------------------------------------------
# Triton 3.6's persistent-matmul tutorial, matmul_kernel_tma: host descriptors, B given N x K (b.T); on sm_90
# every load and store is a TMA copy and the loop is pipelined on mbarriers
# ---------------------------------------------------------------------------------------------

os.environ.setdefault("BENCH_IMPL", "tritium")
from tests.e2e.kernels import matmul_kernel_tma  # noqa: E402  (the tutorial's kernel, also benchmarked)


def test_matmul_kernel_tma_on_the_interpreter():
    rng = np.random.default_rng(5)
    M, N, K = 70, 52, 40
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    BM, BN, BK = 32, 32, 16
    matmul_kernel_tma[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]), M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
        GROUP_SIZE_M=2)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt,out,acc_bits", [("fp16", "fp16", 16), ("bf16", "bf16", 16), ("fp8e4nv", "fp16", 8),
                                             ("fp32", "fp32", 32)])
def test_matmul_kernel_tma_compiles_to_a_tma_pipeline_on_sm90(dt, out, acc_bits):
    """Both operands TMA-copied into 3 stages of mbarrier-completed buffers, B read transposed in place
    (memdesc_trans: K-major for every type), wgmma, a TMA store; no ld.global / st.global."""
    BK = 128 if dt == "fp8e4nv" else 64
    sig = {"a_desc": f"tensordesc<{dt}[128, {BK}]>", "b_desc": f"tensordesc<{dt}[128, {BK}]>",
           "c_desc": f"tensordesc<{out}[128, 128]>", "M": "i32", "N": "i32", "K": "i32"}
    ce = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8)
    k = compile(ASTSource(matmul_kernel_tma, sig, constexprs=ce, attrs={"c_desc": {"tt.divisibility": 16}}),
                target="cuda:90", options={"num_warps": 8, "num_stages": 3}, until="cubin")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count('"ttg.init_barrier"') == 6 and ttgir.count('"ttg.memdesc_trans"') == 1
    assert ttgir.count('"ttg.async_tma_copy_global_to_local"') == 3 * 2  # 2 in the prologue, 1 in the loop, each
    assert "ttg.local_load" not in ttgir and "ld.global" not in ptx and "st.global" not in ptx
    assert "wgmma.mma_async" in ptx and ptx.count("cp.async.bulk.tensor.2d.shared::cluster") >= 6
    assert k.metadata["n_spills"] == 0


def test_tma_stores_only_through_shapes_divisible_by_16():
    """A TMA store writes whole 16-byte chunks of the inner dim: a descriptor stored through takes TMA only when
    the JIT saw its shape divisible by 16 (``tt.divisibility``); loads take TMA either way."""
    sig = {"x_desc": "tensordesc<fp32[32, 32]>", "y_desc": "tensordesc<fp32[32, 32]>"}
    k = compile(ASTSource(host_scale, sig, constexprs={"ALPHA": 2.0}), target="cuda:90", until="ptx")
    assert [t["index"] for t in k.metadata["tensormaps"]] == [0]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in k.asm["ptx"] and "bulk_group" not in k.asm["ptx"]
    k = compile(ASTSource(host_scale, sig, constexprs={"ALPHA": 2.0}, attrs={"y_desc": {"tt.divisibility": 16}}),
                target="cuda:90", until="ptx")
    assert [t["index"] for t in k.metadata["tensormaps"]] == [0, 6] and "bulk_group" in k.asm["ptx"]


def test_device_descriptors_are_tma_tensor_maps_in_global_scratch_on_sm90():
    """tl.make_tensor_descriptor on sm_90: the map is built in shared memory with tensormap.replace, copied to the
    program's 128-byte slot of global scratch (a parameter after the runtime arguments; metadata
    global_scratch_size), and the loads / stores are TMA copies; without the alignment the JIT saw, pointers."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    ce = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, EPILOGUE_SUBTILE=False, NUM_SMS=132,
              WARP_SPECIALIZE=False, FLATTEN=True)
    aligned = {n: {"tt.divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "N", "K")}
    k = compile(ASTSource(matmul_kernel_descriptor_persistent, sig, constexprs=ce, attrs=aligned), target="cuda:90",
                options={"num_warps": 8}, until="ptx")
    ptx = k.asm["ptx"]
    assert k.metadata["global_scratch_size"] == 3 * 128 and k.metadata["arg_types"] == ["ptr"] * 3 + ["i32"] * 3
    assert ptx.count("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu") == 3
    assert "tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd" in ptx and "fence.proxy.tensormap" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "bulk_group" in ptx and "ld.global" not in ptx
    # K not known divisible by 16: the leading strides of A and B (K elements) may not be 16-byte multiples
    k = compile(ASTSource(matmul_kernel_descriptor_persistent, sig, constexprs=ce,
                          attrs={n: v for n, v in aligned.items() if n != "K"}), target="cuda:90",
                options={"num_warps": 8}, until="ptx")
    assert k.metadata["global_scratch_size"] == 128 and "ld.global" in k.asm["ptx"]
    k = compile(ASTSource(matmul_kernel_descriptor_persistent, sig, constexprs=ce, attrs=aligned), target="cuda:80",
                options={"num_warps": 8}, until="ptx")
    assert not k.metadata["global_scratch_size"] and "tensormap" not in k.asm["ptx"]


# ---------------------------------------------------------------------------------------------
# Blocks of rank 3 with a leading 1 (Liger-Kernel's fused SwiGLU forward: x [B, S, D] read as [1, BM, BK] tiles,
# reshaped to 2-D for two dots, the results stored as [1, BM, BN] tiles): on sm_90 these are TMA copies of
# [BM, BK] tiles with three coordinates, straight into the dots' buffers and out of the accumulators' registers
# ---------------------------------------------------------------------------------------------

@triton.jit
def swiglu_3d_dots(x_desc, wg_desc, wu_desc, b, m0, n0, D, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """x[b, m0:m0+BM, :] @ wg[n0:n0+BN, :]^T and the same with wu (Liger-Kernel's fused SwiGLU forward loop)."""
    acc_g = tl.zeros((BM, BN), dtype=tl.float32)
    acc_u = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, D, BK):
        x = tl.reshape(x_desc.load([b, m0, k]), [BM, BK])
        acc_g = tl.dot(x, tl.trans(wg_desc.load([n0, k])), acc=acc_g)
        acc_u = tl.dot(x, tl.trans(wu_desc.load([n0, k])), acc=acc_u)
    return acc_g, acc_u


@triton.jit
def swiglu_3d_desc(x_desc, wg_desc, wu_desc, a_desc, g_desc, D, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    b = tl.program_id(2)
    acc_g, acc_u = swiglu_3d_dots(x_desc, wg_desc, wu_desc, b, m0, n0, D, BM, BN, BK)
    a = acc_g * tl.sigmoid(acc_g) * acc_u
    a_desc.store([b, m0, n0], tl.reshape(a, [1, BM, BN]).to(a_desc.dtype))
    g_desc.store([b, m0, n0], tl.reshape(acc_g, [1, BM, BN]).to(g_desc.dtype))


def swiglu_3d_reference(x, wg, wu):
    g = x.astype(np.float32) @ wg.astype(np.float32).T
    u = x.astype(np.float32) @ wu.astype(np.float32).T
    return g / (1 + np.exp(-g)) * u, g


def test_swiglu_3d_descriptors_on_the_interpreter():
    rng = np.random.default_rng(9)
    B, S, D, H, BM, BN, BK = 2, 40, 48, 64, 16, 32, 16  # S not a multiple of BM: rows past S read as zeros
    x = rng.standard_normal((B, S, D)).astype(np.float16)
    wg, wu = (rng.standard_normal((H, D)).astype(np.float16) * 0.2 for _ in range(2))
    a, g = np.zeros((B, S, H), np.float16), np.zeros((B, S, H), np.float16)
    swiglu_3d_desc[(triton.cdiv(S, BM), H // BN, B)](
        TensorDescriptor.from_tensor(x, [1, BM, BK]), TensorDescriptor.from_tensor(wg, [BN, BK]),
        TensorDescriptor.from_tensor(wu, [BN, BK]), TensorDescriptor.from_tensor(a, [1, BM, BN]),
        TensorDescriptor.from_tensor(g, [1, BM, BN]), D, BM=BM, BN=BN, BK=BK)
    want_a, want_g = swiglu_3d_reference(x, wg, wu)
    np.testing.assert_allclose(a.astype(np.float32), want_a, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(g.astype(np.float32), want_g, rtol=2e-2, atol=2e-2)


def _swiglu_sig(BM, BN, BK, dt="fp16"):
    return {"x_desc": f"tensordesc<{dt}[1, {BM}, {BK}]>", "wg_desc": f"tensordesc<{dt}[{BN}, {BK}]>",
            "wu_desc": f"tensordesc<{dt}[{BN}, {BK}]>", "a_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>",
            "g_desc": f"tensordesc<{dt}[1, {BM}, {BN}]>", "D": "i32"}


@pytest.mark.parametrize("BM,BK,warps,stages", [(128, 64, 4, 3), (64, 64, 8, 3), (128, 128, 8, 2)])
def test_leading_unit_dims_take_tma_on_sm90(BM, BK, warps, stages):
    """The [1, BM, BK] loads are pipelined TMA copies with 3 coordinates into the dots' buffers, the [1, BM, BN]
    stores TMA stores from the accumulators' registers: no pointer load or store, no layout conversion.  (128x128
    tiles in 3 stages need 288 KiB of shared memory: more than sm_90 has, refused by the compile.)"""
    sig = _swiglu_sig(BM, 128, BK)
    attrs = {n: {"tt.divisibility": 16} for n in ("a_desc", "g_desc")}
    k = compile(ASTSource(swiglu_3d_desc, sig, constexprs=dict(BM=BM, BN=128, BK=BK), attrs=attrs),
                target="cuda:90", options={"num_warps": warps, "num_stages": stages}, until="ptx")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert [t["rank"] for t in k.metadata["tensormaps"]] == [3, 2, 2, 3, 3]
    assert [t["box"][0] for t in k.metadata["tensormaps"] if t["rank"] == 3] == [1, 1, 1]
    assert '"tt.load"' not in ttgir and '"tt.store"' not in ttgir and "ttg.convert_layout" not in ttgir
    assert '"ttg.local_load"' not in ttgir  # the loaded tiles feed wgmma from their TMA buffers
    assert ptx.count("cp.async.bulk.tensor.3d.global.shared::cta") == 2 * (128 * 2 // 128)
    assert "cp.async.bulk.tensor.3d.shared::cluster" in ptx and "ld.global" not in ptx and "st.global" not in ptx


def test_leading_dims_other_than_one_stay_pointer_copies_on_sm90():
    """A [2, 16, 32] block is no 2-D tile: the descriptor is rewritten into pointers (right, not TMA)."""
    sig = {"X": "*fp32", "Y": "*fp32", "A": "i32", "B": "i32", "C": "i32", "sxa": "i32", "sxb": "i32", "sya": "i32",
           "syb": "i32"}
    k = compile(ASTSource(copy_3d, sig, constexprs=dict(BA=2, BB=16, BC=32)), target="cuda:90", until="ptx")
    assert "cp.async.bulk.tensor" not in k.asm["ptx"] and "ld.global" in k.asm["ptx"]
