"""rewrite_tensor_descriptor: tensor descriptors -> block pointers (then, in the cuda TTIR passes,
rewrite_tensor_pointer -> tensors of pointers + masks).

FileCheck on hand-written TTIR, and a semantic check: the interpreter runs each kernel's TTIR with descriptors
(natively) and the cuda backend's TTIR (descriptors rewritten into masked loads and stores) on random inputs,
and the results must agree exactly."""

import numpy as np
import pytest

pytest.importorskip("mlir")

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.compiler import ASTSource  # noqa: E402
from tritium.compiler.stages import make_ttir  # noqa: E402
from tritium.errors import RewriteError  # noqa: E402
from tritium.passes.ttir.rewrite_tensor_descriptor import (rewrite_tensor_descriptor,  # noqa: E402
                                                           rewrite_tensor_descriptor_pass)

from .ttir_pass_helpers import check_pass, count  # noqa: E402
from .ttir_pass_helpers import interpreter_kernel as _interp, interpreter_launch as _launch  # noqa: E402


def test_ops_become_block_pointer_ops():
    check_pass(rewrite_tensor_descriptor_pass, """
func.func public @k(%p: !tt.ptr<f16>, %m: i32, %n: i32, %s: i64, %i: i32, %j: i32) {
  %c1 = arith.constant 1 : i64
  %d = "tt.make_tensor_descriptor"(%p, %m, %n, %s, %c1) {operandSegmentSizes = array<i32: 1, 2, 2>, padding = 2 : i32} : (!tt.ptr<f16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<16x32xf16>>
  %x = "tt.descriptor_load"(%d, %i, %j) {cache = 3 : i32} : (!tt.tensordesc<tensor<16x32xf16>>, i32, i32) -> tensor<16x32xf16>
  "tt.descriptor_store"(%d, %x, %j, %i) : (!tt.tensordesc<tensor<16x32xf16>>, tensor<16x32xf16>, i32, i32) -> ()
  return
}
// CHECK: %[[M64:.+]] = arith.extsi %arg1 : i32 to i64
// CHECK: %[[N64:.+]] = arith.extsi %arg2 : i32 to i64
// CHECK: %[[Z:.+]] = arith.constant 0 : i32
// CHECK: %[[BP:.+]] = "tt.make_tensor_ptr"(%arg0, %[[M64]], %[[N64]], %arg3, %{{.+}}, %[[Z]], %[[Z]]) {operandSegmentSizes = array<i32: 1, 2, 2, 2>, order = array<i32: 1, 0>} : {{.*}} -> !tt.ptr<tensor<16x32xf16>>
// CHECK: %[[A:.+]] = "tt.advance"(%[[BP]], %arg4, %arg5)
// CHECK: %[[X:.+]] = "tt.load"(%[[A]]) {boundaryCheck = array<i32: 0, 1>, cache = 3 : i32, operandSegmentSizes = array<i32: 1, 0, 0>, padding = 2 : i32}
// CHECK: %[[B:.+]] = "tt.advance"(%[[BP]], %arg5, %arg4)
// CHECK: "tt.store"(%[[B]], %[[X]]) {boundaryCheck = array<i32: 0, 1>, operandSegmentSizes = array<i32: 1, 1, 0>}
// CHECK-NOT: tensordesc
""")


def test_loop_carried_descriptor_is_retyped():
    out = check_pass(rewrite_tensor_descriptor_pass, """
func.func public @k(%p: !tt.ptr<f32>, %m: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c4 = arith.constant 4 : i32
  %one = arith.constant 1 : i64
  %d = "tt.make_tensor_descriptor"(%p, %m, %one) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tt.ptr<f32>, i32, i64) -> !tt.tensordesc<tensor<32xf32>>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%e = %d) -> (!tt.tensordesc<tensor<32xf32>>) : i32 {
    %x = "tt.descriptor_load"(%e, %i) : (!tt.tensordesc<tensor<32xf32>>, i32) -> tensor<32xf32>
    "tt.descriptor_store"(%e, %x, %c0) : (!tt.tensordesc<tensor<32xf32>>, tensor<32xf32>, i32) -> ()
    scf.yield %e : !tt.tensordesc<tensor<32xf32>>
  }
  return
}
// CHECK: scf.for {{.*}} iter_args(%[[E:.+]] = %{{.+}}) -> (!tt.ptr<tensor<32xf32>>)
// CHECK: "tt.load"({{.*}}padding = 1 : i32
// CHECK: scf.yield %[[E]] : !tt.ptr<tensor<32xf32>>
""")
    assert "tensordesc" not in out


def test_call_with_a_descriptor_is_a_rewrite_error():
    from mlir import ir

    from tritium.dialects import make_context

    src = """
func.func private @f(%d: !tt.tensordesc<tensor<32xf32>>) {
  return
}
func.func public @k(%p: !tt.ptr<f32>, %m: i32) {
  %one = arith.constant 1 : i64
  %d = "tt.make_tensor_descriptor"(%p, %m, %one) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tt.ptr<f32>, i32, i64) -> !tt.tensordesc<tensor<32xf32>>
  func.call @f(%d) : (!tt.tensordesc<tensor<32xf32>>) -> ()
  return
}
"""
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        with pytest.raises(RewriteError, match="block argument"):
            rewrite_tensor_descriptor(m.operation)


# ---------------------------------------------------------------------------------------------
# the interpreter before and after the cuda TTIR passes
# ---------------------------------------------------------------------------------------------

@triton.jit
def desc_copy(X, Y, M, N, sx, sy, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, [M, N], [sx, 1], [BM, BN], padding_option=PAD)
    yd = tl.make_tensor_descriptor(Y, [M + BM, N + BN], [sy, 1], [BM, BN])
    om = tl.program_id(0) * BM - BM // 2
    on = tl.program_id(1) * BN
    # the block read half a block up (rows < 0 padded) is written whole, padding included
    yd.store([om + BM // 2, on], xd.load([om, on]) * 2.0)


@triton.jit
def desc_loops(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    b = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    pid = tl.program_id(0)
    d = a
    for i in range(0, tl.cdiv(N, BN)):
        b.store([pid * BM, i * BN], d.load([pid * BM, i * BN]) + 1.0)
        if i % 2 == 1:
            d = b
        else:
            d = a


def _both(fn, sig, **ce):
    from tritium.compiler.stages import Handoff
    from tritium_nvidia.compiler import CUDACompiler

    text = make_ttir(ASTSource(fn, sig, constexprs=ce), {}, None)
    # sm_80: every descriptor rewritten (sm_90 keeps host descriptors' loads / stores for TMA)
    new = CUDACompiler.make_ttir(text, {}, None, Handoff(), CUDACompiler().target_for_arch(80), 80)
    assert "tensordesc" not in new and '"tt.make_tensor_ptr"' not in new and '"tt.advance"' not in new
    assert count(text, "tt.descriptor_load") == count(new, "tt.load")
    return _interp(text), _interp(new), new


SIG = {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32"}


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("M,N", [(32, 64), (37, 20), (5, 100)])
def test_copy_matches_interpreter(pad, M, N):
    ref_k, new_k, new = _both(desc_copy, {**SIG, "sx": "i32", "sy": "i32"}, BM=8, BN=16, PAD=pad)
    if pad == "nan":
        assert "0x7FC00000" in new
    rng = np.random.default_rng(M * N)
    x = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    W = N + 16 + 4
    for k in (ref_k, new_k):
        y = np.full((M + 8, W), -1.0, np.float32)
        _launch(k, (triton.cdiv(M + 4, 8), triton.cdiv(N, 16)), x, y, M, N, N, W)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.vstack([np.full((4, N), 0.0 if pad == "zero" else np.nan, np.float32), x * 2])
    got = outs[1][:M + 4, :N]
    np.testing.assert_array_equal(got, ref[:M + 4])


@pytest.mark.parametrize("M,N", [(16, 64), (24, 40)])
def test_loop_and_branch_carried_matches_interpreter(M, N):
    ref_k, new_k, new = _both(desc_loops, SIG, BM=8, BN=8)
    assert count(new, "scf.for") == 1
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        y = np.zeros((M, N), np.float32)
        _launch(k, (M // 8,), x, y, M, N)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    # block column i reads X where i - 1 is even (and for i = 0), else Y, whose column i is still 0 then
    ref = x + 1.0
    for i in range(2, N // 8, 2):
        ref[:, 8 * i:8 * i + 8] = 1.0
    np.testing.assert_array_equal(outs[1], ref)


@triton.jit
def desc_lead1(X, Y, A, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    """[1, BM, BN] blocks of [A, M, N] tensors (a batch of matrices, Liger's layout): loaded and stored as 2-D tiles
    by the rewrite; the batch index runs from -1 to A (out of range at both ends: all padding, nothing stored)."""
    xd = tl.make_tensor_descriptor(X, [A, M, N], [M * N, N, 1], [1, BM, BN], padding_option=PAD)
    yd = tl.make_tensor_descriptor(Y, [A, M, N], [M * N, N, 1], [1, BM, BN])
    a = tl.program_id(2) - 1
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    t = tl.reshape(xd.load([a, om - 4, on]), [BM, BN])
    yd.store([a, om, on], tl.reshape((t * 2.0 + 1.0).to(tl.float16).to(tl.float32), [1, BM, BN]))


@pytest.mark.parametrize("pad", ["zero", "nan"])
@pytest.mark.parametrize("A,M,N", [(3, 20, 24), (2, 16, 40)])
def test_leading_unit_dims_are_2d_tiles_and_match_interpreter(pad, A, M, N):
    ref_k, new_k, new = _both(desc_lead1, {"X": "*fp32", "Y": "*fp32", "A": "i32", "M": "i32", "N": "i32"}, BM=8,
                              BN=16, PAD=pad)
    # one 2-D tile per access: the kernel's reshapes folded away with the rewrite's own
    assert '"tt.reshape"' not in new and "tensor<1x8x16x!tt.ptr<f32>>" not in new
    assert new.count("tensor<8x16x!tt.ptr<f32>>") >= 2
    rng = np.random.default_rng(A * M * N)
    x = rng.standard_normal((A, M, N)).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        y = np.full((A, M, N), -1.0, np.float32)
        _launch(k, (triton.cdiv(M, 8), triton.cdiv(N, 16), A + 2), x, y, A, M, N)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    shifted = np.full((A, M, N), 0.0 if pad == "zero" else np.nan, np.float32)
    shifted[:, 4:, :] = x[:, :M - 4, :]
    want = (shifted * 2.0 + 1.0).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(outs[1], want)


# ---------------------------------------------------------------------------------------------
# host-side descriptors: the kernel's descriptor parameters expanded into base, shape and strides
# ---------------------------------------------------------------------------------------------

def test_descriptor_parameters_are_expanded():
    from tritium.passes.ttir.expand_tensor_descriptor_args import expand_tensor_descriptor_args_pass

    out = check_pass(expand_tensor_descriptor_args_pass, """
func.func public @k(%n: i32, %d: !tt.tensordesc<tensor<16x32xf16>> {tt.divisibility = 16 : i32, tt.padding = 2 : i32}, %e: !tt.tensordesc<tensor<64xi8>>, %i: i32) {
  %x = "tt.descriptor_load"(%d, %i, %n) : (!tt.tensordesc<tensor<16x32xf16>>, i32, i32) -> tensor<16x32xf16>
  "tt.descriptor_store"(%d, %x, %n, %i) : (!tt.tensordesc<tensor<16x32xf16>>, tensor<16x32xf16>, i32, i32) -> ()
  %y = "tt.descriptor_load"(%e, %i) : (!tt.tensordesc<tensor<64xi8>>, i32) -> tensor<64xi8>
  return
}
func.func private @f(%d: !tt.tensordesc<tensor<64xi8>>) {
  return
}
// CHECK: func.func public @k(%arg0: i32, %arg1: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %arg2: i32, %arg3: i32 {tt.divisibility = 8 : i32}, %arg4: i64 {tt.divisibility = 8 : i32}, %arg5: i64, %arg6: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %arg7: i32, %arg8: i64, %arg9: i32)
// CHECK-DAG: %[[D:.+]] = "tt.make_tensor_descriptor"(%arg1, %arg2, %arg3, %arg4, %{{.+}}) {operandSegmentSizes = array<i32: 1, 2, 2>, padding = 2 : i32}
// CHECK-DAG: %[[E:.+]] = "tt.make_tensor_descriptor"(%arg6, %arg7, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 1>, padding = 1 : i32}
// CHECK: "tt.descriptor_load"(%[[D]], %arg9, %arg0)
// CHECK: "tt.descriptor_load"(%[[E]], %arg9)
// CHECK: func.func private @f(%arg0: !tt.tensordesc<tensor<64xi8>>)
""")
    assert out.count("arith.constant 1 : i64") == 2


def test_host_descriptor_kernel_through_cuda_ttir_matches_interpreter():
    from tritium.tools.tensor_descriptor import TensorDescriptor
    from tritium.runtime.specialization import descriptor_args

    ref_k, new_k, new = _both(host_copy, {"xd": "tensordesc<fp32[8, 16]>", "yd": "tensordesc<fp32[8, 16]>"})
    head = new[new.index("func.func public"):].split("{\n")[0]
    assert [t.split(" ")[0] for t in head.split("%arg")[1:]] == \
        ["0:", "1:", "2:", "3:", "4:", "5:", "6:", "7:", "8:", "9:"]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((21, 36)).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        y = np.zeros((21, 36), np.float32)
        args = [*descriptor_args(TensorDescriptor.from_tensor(x, [8, 16])),
                *descriptor_args(TensorDescriptor.from_tensor(y, [8, 16]))]
        _launch(k, (3, 3), *args)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], x + 1.0)


@triton.jit
def host_copy(xd, yd):
    om = tl.program_id(0) * 8
    on = tl.program_id(1) * 16
    yd.store([om, on], xd.load([om, on]) + 1.0)


def test_specialisation_of_host_descriptors():
    from tritium.runtime.specialization import Specialization, describe_fn
    from tritium.tools.tensor_descriptor import TensorDescriptor

    a = np.zeros((32, 64), np.float16)
    d = describe_fn(True, True)(TensorDescriptor.from_tensor(a, [16, 32]))
    assert d == Specialization("tensordesc<fp16[16, 32]>", True)
    d = describe_fn(True, True)(TensorDescriptor(a, [30, 64], [64, 1], [16, 32], padding="nan"))
    assert d == Specialization("tensordesc<fp16[16, 32],nan>", True)  # only the inner dim counts (TMA stores)
    d = describe_fn(True, True)(TensorDescriptor(a, [32, 56], [64, 1], [16, 32]))  # 112 bytes: 7 x 16
    assert d == Specialization("tensordesc<fp16[16, 32]>", True)
    d = describe_fn(True, True)(TensorDescriptor(a, [32, 60], [64, 1], [16, 32]))  # 120 bytes
    assert d == Specialization("tensordesc<fp16[16, 32]>", False)
    assert describe_fn(False, False)(TensorDescriptor.from_tensor(a, [16, 32])).divisible is False


@triton.jit
def two_block_ptrs_advanced_together(X, Y, OUT, N, BN: tl.constexpr):
    """Attention's K and V pattern: two block pointers advanced by the same step in one loop (after the rewrite two
    loop-carried offsets, always equal: merged into one by the cse pass)."""
    xp = tl.make_block_ptr(X, (16, N), (N, 1), (0, 0), (16, BN), (1, 0))
    yp = tl.make_block_ptr(Y, (N, 16), (16, 1), (0, 0), (BN, 16), (1, 0))
    acc = tl.zeros((16, 16), tl.float32)
    for _ in range(0, N, BN):
        acc += tl.dot(tl.load(xp, boundary_check=(0, 1)), tl.load(yp, boundary_check=(0, 1)))
        xp = tl.advance(xp, (0, BN))
        yp = tl.advance(yp, (BN, 0))
    tl.store(OUT + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], acc)


def test_offsets_advanced_together_are_one_loop_value_and_match_interpreter():
    from tritium.compiler.stages import Handoff
    from tritium_nvidia.compiler import CUDACompiler

    text = make_ttir(ASTSource(two_block_ptrs_advanced_together, {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32",
                                                                  "N": "i32"}, constexprs={"BN": 16}), {}, None)
    new = CUDACompiler.make_ttir(text, {}, None, Handoff(), CUDACompiler().target_for_arch(80), 80)
    ref_k, new_k = _interp(text), _interp(new)
    loop = new[new.index("scf.for"):].split("\n")[0]
    assert loop.split("->")[1].split(":")[0].strip() == "(tensor<16x16xf32>, i64)", loop  # the acc and one (i64) offset
    rng = np.random.default_rng(3)
    N = 40
    x = rng.standard_normal((16, N)).astype(np.float32)
    y = rng.standard_normal((N, 16)).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        out = np.zeros((16, 16), np.float32)
        _launch(k, (1,), x, y, out, N)
        outs.append(out)
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[1], x @ y, rtol=1e-4, atol=1e-4)
