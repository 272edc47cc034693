"""Tutorial-style kernels through the frontend: TTIR text (ops, types, locations) and round-tripping."""
import re

import pytest

import tritium
import tritium.language as tl
from tritium.dialects import make_context
from tritium.frontend import make_ttir
from tests.e2e.kernels import _layer_norm_fwd_fused, add_kernel, softmax_persistent_kernel

mlir_ir = pytest.importorskip("mlir.ir")


def ttir(fn, signature, constexprs=None, attrs=None, debug=False):
    from tritium.compiler.backend import BaseOptions
    from tritium.language.target_info import compiling_for

    ctx = make_context()
    with compiling_for(None, BaseOptions(debug=debug)):
        module = make_ttir(fn, signature, constexprs or {}, attrs or {}, ctx)
    text = module.operation.get_asm(enable_debug_info=True)
    # round trip through the parser
    with ctx:
        again = mlir_ir.Module.parse(text)
        again.operation.verify()
    return text


def line_of(fn, needle):
    """Absolute line number in this file of the first source line of ``fn`` containing ``needle``."""
    for i, line in enumerate(fn.src.splitlines()):
        if needle in line:
            return fn.starting_line_number + i
    raise AssertionError(needle)


# ---------------------------------------------------------------------------------------------
# vector add
# ---------------------------------------------------------------------------------------------

def test_vector_add():
    t = ttir(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
             {"BLOCK_SIZE": 1024}, {"x_ptr": {"tt.divisibility": 16}, "n_elements": {"tt.divisibility": 16}})
    assert "func.func public @add_kernel(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in t
    assert re.search(r"%arg3: i32 \{tt.divisibility = 16 : i32\}", t)
    assert '"tt.make_range"() {end = 1024 : i32, start = 0 : i32} : () -> tensor<1024xi32>' in t
    assert "arith.cmpi slt" in t
    assert t.count('"tt.load"') == 2 and t.count('"tt.store"') == 1
    assert "arith.addf %" in t and "tensor<1024xf32>" in t
    assert '"tt.addptr"' in t and "tensor<1024x!tt.ptr<f32>>" in t
    # locations: the store carries the line of the tl.store call
    store_line = line_of(add_kernel, "tl.store(")
    locs = dict(re.findall(r"(#loc\d+) = loc\(\"[^\"]*kernels.py\":(\d+):\d+\)", t))
    store_loc = re.search(r'"tt.store".*loc\((#loc\d+)\)', t).group(1)
    assert int(locs[store_loc]) == store_line
    assert "tests/e2e/kernels.py" in t


def test_vector_add_fp16_and_i64_offsets():
    t = ttir(add_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "output_ptr": "*fp16", "n_elements": "i64"},
             {"BLOCK_SIZE": 256})
    assert "arith.addf %" in t and "tensor<256xf16>" in t
    # offsets are promoted to i64 because n_elements is i64
    assert "arith.extsi" in t and "tensor<256xi64>" in t


# ---------------------------------------------------------------------------------------------
# fused softmax
# ---------------------------------------------------------------------------------------------

def test_fused_softmax():
    t = ttir(softmax_persistent_kernel, {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                              "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
             {"BLOCK_SIZE": 128, "num_stages": 3})
    assert "scf.for" in t and "tt.num_stages = 3 : i32" in t
    assert re.search(r'"tt.reduce"\(%\w+\) \{axis = 0 : i32, combine = @max_f32', t)
    assert re.search(r"combine = @sum_f32", t)
    assert "func.func private @max_f32(%arg0: f32" in t and "arith.maxnumf" in t
    assert "func.func private @sum_f32" in t
    assert "math.exp" in t and "arith.divf" in t
    assert "0xFF800000" in t  # other=-inf


def test_fused_softmax_fp16_divides_in_fp32():
    t = ttir(softmax_persistent_kernel, {"output_ptr": "*fp16", "input_ptr": "*fp16", "input_row_stride": "i32",
                              "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
             {"BLOCK_SIZE": 128, "num_stages": 2})
    assert "arith.extf" in t and re.search(r"arith.divf .* : tensor<128xf32>", t)
    assert "arith.truncf" in t  # stored back as fp16


# ---------------------------------------------------------------------------------------------
# layer norm forward
# ---------------------------------------------------------------------------------------------

def test_layer_norm_forward():
    t = ttir(_layer_norm_fwd_fused, {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
                                     "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
             {"BLOCK_SIZE": 512})
    assert t.count("scf.for") == 3
    # _mean is loop-carried
    assert re.search(r"scf.for %\w+ = %\w+ to %\w+ step %\w+ iter_args\(%\w+ = %\w+\) -> \(tensor<512xf32>\)", t)
    assert "math.sqrt" in t and "arith.select" in t
    assert "arith.sitofp" in t  # / N with N an i32
    assert "arith.truncf" in t  # y stored as fp16
    assert '"tt.store"' in t


# ---------------------------------------------------------------------------------------------
# strided 2-D copy and reductions along each axis
# ---------------------------------------------------------------------------------------------

@tritium.jit
def copy_2d(src, dst, M, N, stride_sm, stride_sn, stride_dm, stride_dn, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(src + rm[:, None] * stride_sm + rn[None, :] * stride_sn, mask=mask)
    tl.store(dst + rm[:, None] * stride_dm + rn[None, :] * stride_dn, x, mask=mask)


def test_strided_2d_copy():
    t = ttir(copy_2d, {"src": "*fp32", "dst": "*fp32", "M": "i32", "N": "i32", "stride_sm": "i32",
                       "stride_sn": "i32", "stride_dm": "i32", "stride_dn": "i32"}, {"BM": 32, "BN": 64})
    assert '"tt.expand_dims"' in t and "{axis = 1 : i32}" in t and "{axis = 0 : i32}" in t
    assert '"tt.broadcast"' in t
    assert "tensor<32x64x!tt.ptr<f32>>" in t
    assert "tensor<32x64xi1>" in t and "arith.andi" in t


@tritium.jit
def reduce_2d(X, Out0, Out1, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    s0 = tl.sum(x, axis=0)
    s1 = tl.max(x, axis=1)
    tl.store(Out0 + rn, s0)
    tl.store(Out1 + rm, s1)


def test_reductions_along_each_axis():
    t = ttir(reduce_2d, {"X": "*fp32", "Out0": "*fp32", "Out1": "*fp32"}, {"M": 16, "N": 32})
    assert re.search(r'"tt.reduce"\(%\w+\) \{axis = 0 : i32.*\(tensor<16x32xf32>\) -> tensor<32xf32>', t)
    assert re.search(r'"tt.reduce"\(%\w+\) \{axis = 1 : i32.*\(tensor<16x32xf32>\) -> tensor<16xf32>', t)


def test_reduction_of_int8_accumulates_in_int32():
    t = ttir(reduce_2d, {"X": "*i8", "Out0": "*i32", "Out1": "*i8"}, {"M": 16, "N": 32})
    assert "arith.extsi" in t and "@sum_i32" in t and "arith.maxsi" in t


# ---------------------------------------------------------------------------------------------
# nested @jit calls
# ---------------------------------------------------------------------------------------------

@tritium.jit
def _square(x):
    return x * x


@tritium.jit
def _scaled(x, FACTOR: tl.constexpr):
    if FACTOR == 1:
        return x
    return _square(x) * FACTOR


@tritium.jit(noinline=True)
def _noinline_add(a, b):
    return a + b


@tritium.jit
def nested_kernel(X, Y, N, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    y = _scaled(x, FACTOR)
    y = _noinline_add(y, x)
    tl.store(Y + offs, y, mask=offs < N)


def test_nested_jit_inlined_and_noinline():
    t = ttir(nested_kernel, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, {"FACTOR": 3, "BLOCK": 64})
    assert re.search(r"= call @_noinline_add\S*\(%\w+, %\w+\) : \(tensor<64xf32>, tensor<64xf32>\) -> tensor<64xf32>", t)
    assert re.search(r"func.func private @_noinline_add\S*\(%arg0: tensor<64xf32>.*-> tensor<64xf32>", t)
    # the inlined callee's multiply carries the callee's line
    sq_line = line_of(_square, "return x * x")
    loc_ids = [k for k, v in re.findall(r"(#loc\d+) = loc\(\"[^\"]*\":(\d+):\d+\)", t) if int(v) == sq_line]
    assert loc_ids and any(re.search(rf"arith.mulf .* loc\({k}\)", t) for k in loc_ids)
    # FACTOR == 1: statically skips the multiply
    t1 = ttir(nested_kernel, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, {"FACTOR": 1, "BLOCK": 64})
    assert "arith.mulf" not in t1.split("func.func public")[1]


@tritium.jit
def _pick(x, y, c):
    if c > 0:
        return x
    else:
        return y


@tritium.jit
def dynamic_return_kernel(X, c, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(X + offs)
    r = _pick(a, a * 2.0, c)
    tl.store(X + offs, r)


def test_dynamic_return_from_inlined_callee():
    t = ttir(dynamic_return_kernel, {"X": "*fp32", "c": "i32"}, {"BLOCK": 16})
    assert re.search(r"scf.if %\w+ -> \(tensor<16xf32>\)", t)


@tritium.jit
def early_exit_kernel(X, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= N:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.zeros([BLOCK], dtype=tl.float32))


def test_early_return_in_kernel():
    t = ttir(early_exit_kernel, {"X": "*fp32", "N": "i32"}, {"BLOCK": 16})
    assert "scf.if" in t and "} else {" in t and '"tt.store"' in t


# ---------------------------------------------------------------------------------------------
# loops
# ---------------------------------------------------------------------------------------------

@tritium.jit
def loop_kernel(X, Out, n_iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for i in range(0, n_iters + pid):
        acc += tl.load(X + i * BLOCK + offs)
        count += 1
    for j in tl.static_range(3):
        acc = acc * 2
    for k in range(10, 0, -2):
        acc += k
    tl.store(Out + pid * BLOCK + offs, acc / count)


def test_loops_with_per_program_trip_counts():
    t = ttir(loop_kernel, {"X": "*fp32", "Out": "*fp32", "n_iters": "i32"}, {"BLOCK": 32})
    assert t.count("scf.for") == 2  # static_range is unrolled
    assert re.search(r"iter_args\(%\w+ = %\w+, %\w+ = %\w+\) -> \(tensor<32xf32>, i32\)", t)
    assert t.count("arith.mulf") >= 3
    assert "arith.divsi" in t  # negative step: trip count


@tritium.jit
def while_kernel(X, n, BLOCK: tl.constexpr):
    i = 0
    total = tl.zeros([BLOCK], dtype=tl.int32)
    while i < n:
        total += tl.load(X + tl.arange(0, BLOCK))
        i += 1
    tl.store(X + tl.arange(0, BLOCK), total)


def test_while_loop():
    t = ttir(while_kernel, {"X": "*i32", "n": "i32"}, {"BLOCK": 8})
    assert "scf.while" in t and "scf.condition" in t
    assert re.search(r"scf.while \(%\w+ = %\w+, %\w+ = %\w+\) : \(tensor<8xi32>, i32\)", t)


@tritium.jit
def dyn_if_kernel(X, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = x
    if flag > 0:
        y = x + 1.0
        only_here = y * 2
    else:
        y = x - 1.0
    z = x * 3 if flag == 2 else x
    tl.store(X + offs, y + z)


def test_dynamic_if_yields():
    t = ttir(dyn_if_kernel, {"X": "*fp32", "flag": "i32"}, {"BLOCK": 16})
    assert len(re.findall(r"scf.if %\w+ -> \(tensor<16xf32>\)", t)) == 2
    assert t.count("scf.yield") >= 4


# ---------------------------------------------------------------------------------------------
# argmax, where, casts, dot, scans, atomics, block pointers
# ---------------------------------------------------------------------------------------------

@tritium.jit
def argmax_kernel(X, Out, Idx, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Idx, tl.argmax(x, axis=0))
    m, i = tl.max(x, axis=0, return_indices=True)
    tl.store(Out, m)
    tl.store(Idx + 1, i)
    y = tl.where(x > 0, x, -x)
    tl.store(X + offs, y)


def test_argmax_and_where():
    t = ttir(argmax_kernel, {"X": "*fp32", "Out": "*fp32", "Idx": "*i32"}, {"N": 64})
    assert re.search(r"func.func private @argmax_f32_i32\(%arg0: f32 .*, %arg1: i32 .*, %arg2: f32 .*, "
                     r"%arg3: i32 .*\) -> \(f32, i32\)", t)
    assert re.search(r'"tt.reduce"\(%\w+, %\w+\) \{axis = 0 : i32, combine = @argmax_f32_i32, '
                     r'operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>', t)
    assert t.count("combine = @argmax_f32_i32") == 2  # the combine function is shared
    assert "arith.select" in t


@tritium.jit
def cast_kernel(X, Y, Z, U, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, x.to(tl.int32))
    tl.store(Z + offs, x.to(tl.bfloat16))
    tl.store(U + offs, x.to(tl.float8e4nv))
    u = x.to(tl.uint32)
    tl.store(Y + offs, (u // 3).to(tl.int32))
    tl.store(Y + offs, x.to(tl.int32, bitcast=True))
    tl.store(Z + offs, tl.cast(x, tl.float16).to(tl.bfloat16))


def test_casts_across_dtypes():
    t = ttir(cast_kernel, {"X": "*fp32", "Y": "*i32", "Z": "*bf16", "U": "*fp8e4nv"}, {"BLOCK": 16})
    assert "arith.fptosi" in t and "arith.fptoui" in t
    assert re.search(r"arith.truncf %\w+ : tensor<16xf32> to tensor<16xbf16>", t)
    assert re.search(r'"tt.fp_to_fp"\(%\w+\) \{rounding = 1 : i32\} : \(tensor<16xf32>\) -> tensor<16xf8E4M3FN>', t)
    assert "arith.divui" in t
    assert "arith.bitcast" in t
    # fp16 -> bf16 goes through fp32
    assert re.search(r"arith.extf %\w+ : tensor<16xf16> to tensor<16xf32>", t)


@tritium.jit
def int_ops_kernel(A, B, U, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs)
    b = tl.load(B + offs)
    u = tl.load(U + offs)
    tl.store(A + offs, (a // b) + (a % b) + (a << 2) + (a >> 1) + (a & b) + (a | b) + (a ^ b) + ~a)
    tl.store(U + offs, (u // 3) + (u % 5) + (u >> 1))
    tl.store(A + offs, tl.where(u < 4, a, b))


def test_signed_and_unsigned_integer_ops():
    t = ttir(int_ops_kernel, {"A": "*i32", "B": "*i32", "U": "*u32"}, {"BLOCK": 16})
    for op in ("arith.divsi", "arith.remsi", "arith.shli", "arith.shrsi", "arith.andi", "arith.ori", "arith.xori",
               "arith.divui", "arith.remui", "arith.shrui", "arith.cmpi ult"):
        assert op in t, op


@tritium.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def test_matmul_dot():
    sig = {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
                              "stride_cn")}
    sig.update({"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"})
    t = ttir(matmul_kernel, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32})
    assert re.search(r'"tt.dot"\(%\w+, %\w+, %\w+\) \{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32\} : '
                     r'\(tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>\) -> tensor<64x64xf32>', t)
    assert re.search(r"-> \(tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>\)", t)


@tritium.jit
def misc_kernel(X, Y, L, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    c = tl.cumsum(x, axis=0)
    p = tl.associative_scan(x, 0, lambda a, b: a * b)
    r = tl.reduce(x, 0, lambda a, b: tl.maximum(a, b))
    tl.atomic_add(Y + offs, c)
    tl.atomic_max(Y, r)
    old = tl.atomic_cas(L, 0, 1)
    tl.store(Y + offs, p + tl.sigmoid(x) + tl.math.exp2(x) + tl.fma(x, x, x) + tl.clamp(x, 0.0, 1.0))
    bp = tl.make_block_ptr(X, shape=(BLOCK,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,))
    v = tl.load(bp, boundary_check=(0,), padding_option="zero")
    tl.store(tl.advance(bp, (BLOCK,)), v, boundary_check=(0,))
    tl.device_assert(old == 0, "lock was taken")
    tl.device_print("x", x)


def test_scans_atomics_block_pointers_debug():
    t = ttir(misc_kernel, {"X": "*fp32", "Y": "*fp32", "L": "*i32"}, {"BLOCK": 32}, debug=True)
    assert re.search(r'"tt.scan"\(%\w+\) \{axis = 0 : i32, combine = @cumsum_f32', t)
    assert len(re.findall(r"combine = @lambda_f32", t)) == 2
    assert re.search(r'"tt.atomic_rmw".*atomic_rmw_op = 5 : i32', t)
    assert re.search(r'"tt.atomic_rmw".*atomic_rmw_op = 6 : i32', t)
    assert '"tt.atomic_cas"' in t
    assert '"tt.make_tensor_ptr"' in t and "!tt.ptr<tensor<32xf32>>" in t
    assert re.search(r'"tt.load"\(%\w+\) \{boundaryCheck = array<i32: 0>, cache = 1 : i32', t)
    assert '"tt.advance"' in t and '"tt.clampf"' in t and "math.fma" in t and "math.exp2" in t
    assert '"tt.assert"' in t and '"tt.print"' in t


@tritium.jit
def shape_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    x2 = tl.reshape(x, (4, BLOCK // 4))
    xt = tl.trans(x2)
    y = x2.T
    j = tl.join(x, x)
    a, b = tl.split(j)
    e = tl.expand_dims(x, 0)
    bt = tl.broadcast_to(e, (2, BLOCK))
    s = tl.sum(bt, axis=0) + tl.sum(xt, axis=0).to(tl.float32).reshape(4).sum() + a + b
    tl.static_assert(x.shape[0] == BLOCK)
    tl.static_assert(x.dtype == tl.float32, "dtype")
    tl.store(X + offs, s + tl.sum(y, 0).sum())


def test_shape_ops():
    t = ttir(shape_kernel, {"X": "*fp32"}, {"BLOCK": 16})
    assert '"tt.reshape"' in t and "order = array<i32: 1, 0>" in t
    assert '"tt.join"' in t and '"tt.split"' in t and "tensor<16x2xf32>" in t
    assert '"tt.broadcast"' in t and "tensor<2x16xf32>" in t


@tritium.jit
def specialised_one_kernel(X, stride, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs * stride, tl.load(X + offs * stride))
    if n is None:
        tl.store(X, 1.0)


def test_constexpr_specialisation_and_none():
    t = ttir(specialised_one_kernel, {"X": "*fp32"}, {"stride": 1, "n": None, "BLOCK": 16})
    assert "func.func public @specialised_one_kernel(%arg0: !tt.ptr<f32>" in t
    assert "%arg1" not in t.split("{")[1].split(")")[0]
    assert t.count('"tt.store"') == 2


GLOBAL_SCALE = 2.5
GLOBAL_BLOCK = tl.constexpr(16)


@tritium.jit
def global_kernel(X):
    offs = tl.arange(0, GLOBAL_BLOCK)
    tl.store(X + offs, tl.load(X + offs) * GLOBAL_SCALE)


def test_globals_constexpr_and_scalar():
    t = ttir(global_kernel, {"X": "*fp32"})
    assert "tensor<16xf32>" in t and "2.500000e+00" in t


@tritium.jit
def _argmax_combine(a, ia, b, ib):
    gt = a > b
    return tl.where(gt, a, b), tl.where(gt, ia, ib)


@tritium.jit
def jit_combine_kernel(X, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    v, i = tl.reduce((x, offs), 0, _argmax_combine)
    tl.store(Out, v + i.to(tl.float32) + _noinline_add(v, v) + _noinline_add(v, v) + _noinline_add(v, 1.0))


def test_reduce_with_jit_combine_and_noinline_cache():
    t = ttir(jit_combine_kernel, {"X": "*fp32", "Out": "*fp32"}, {"BLOCK": 16})
    assert re.search(r"func.func private @_argmax_combine_f32_i32\(%arg0: f32 .*\) -> \(f32, i32\)", t)
    assert re.search(r'"tt.reduce"\(%\w+, %\w+\) \{axis = 0 : i32, combine = @_argmax_combine_f32_i32', t)
    # the noinline callee is generated once per argument types / constexpr values (1.0 is a constexpr)
    assert len(re.findall(r"func.func private @_noinline_add", t)) == 2
    assert len(re.findall(r"call @_noinline_add", t)) == 3


# ---------------------------------------------------------------------------------------------
# tensors passed to tl.constexpr parameters of an inner @jit function (fused-attention tutorial style)
# ---------------------------------------------------------------------------------------------

@tritium.jit
def _shift_rows(acc, offs_m: tl.constexpr, offs_n: tl.constexpr, SCALE: tl.constexpr, CAUSAL: tl.constexpr):
    if CAUSAL:  # a real constexpr still folds
        acc = tl.where(offs_m[:, None] >= offs_n[None, :], acc, 0.0)
    return acc * SCALE + offs_m[:, None].to(tl.float32)


@tritium.jit(noinline=True)
def _shift_rows_noinline(acc, offs_m: tl.constexpr, SCALE: tl.constexpr):
    return acc * SCALE + offs_m[:, None].to(tl.float32)


@tritium.jit
def constexpr_tensor_args_kernel(X, Y, Z, M: tl.constexpr, N: tl.constexpr, CAUSAL: tl.constexpr):
    offs_m = tl.arange(0, M)
    offs_n = tl.arange(0, N)
    x = tl.load(X + offs_m[:, None] * N + offs_n[None, :])
    tl.store(Y + offs_m[:, None] * N + offs_n[None, :], _shift_rows(x, offs_m, offs_n, 2.0, CAUSAL))
    tl.store(Z + offs_m[:, None] * N + offs_n[None, :], _shift_rows_noinline(x, offs_m, 3.0))


@pytest.mark.parametrize("causal", [False, True])
def test_tensor_to_constexpr_parameter_of_inner_jit(causal, monkeypatch):
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    y, z = np.empty_like(x), np.empty_like(x)
    constexpr_tensor_args_kernel[(1,)](x, y, z, M=16, N=32, CAUSAL=causal)
    rows = np.arange(16, dtype=np.float32)[:, None]
    ref = np.where(rows >= np.arange(32)[None, :], x, 0.0) if causal else x
    np.testing.assert_allclose(y, ref * 2.0 + rows, rtol=1e-6)
    np.testing.assert_allclose(z, x * 3.0 + rows, rtol=1e-6)
