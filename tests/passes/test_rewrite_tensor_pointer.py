"""rewrite_tensor_pointer: block pointers -> tensors of pointers + masks.

Structure checks on the rewritten TTIR, and a semantic check: the interpreter runs each kernel's TTIR with
block pointers (natively) and after the rewrite, on random inputs, and the results must agree exactly."""

import numpy as np
import pytest

pytest.importorskip("mlir")

from tests.nvidia import extra_kernels as K  # noqa: E402
from tritium.compiler import ASTSource  # noqa: E402
from tritium.compiler.stages import make_ttir  # noqa: E402
from tritium.passes.ttir.rewrite_tensor_pointer import RewriteError, rewrite_tensor_pointer  # noqa: E402
from tritium_nvidia.compiler import CUDACompiler  # noqa: E402

from .ttir_pass_helpers import count, func, run_pass  # noqa: E402
from .ttir_pass_helpers import interpreter_kernel as _interp, interpreter_launch as _launch  # noqa: E402


def _ttir(fn, sig, **ce):
    """The TTIR every backend starts from (block pointers kept: the interpreter runs them natively)."""
    return make_ttir(ASTSource(fn, sig, constexprs=ce), {}, None)


def _cuda_ttir(text):
    """The cuda backend's ttir stage on TTIR text: its rewrite_tensor_pointer pass first in the TTIR pipeline."""
    from tritium.compiler.stages import Handoff

    return CUDACompiler.make_ttir(text, {}, None, Handoff(), CUDACompiler().target_for_arch(90), 90)


def _both(text):
    new = _cuda_ttir(text)
    assert "tt.make_tensor_ptr" not in new and "tt.advance" not in new and "!tt.ptr<tensor" not in new
    return _interp(text), _interp(new), new


COPY_SIG = {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "sxm": "i32", "sxn": "i32", "sym": "i32",
            "syn": "i32"}


@pytest.mark.parametrize("M,N", [(64, 128), (50, 77), (5, 200)])
def test_copy_loop_matches_interpreter(M, N):
    ref_k, new_k, new = _both(_ttir(K.block_ptr_copy, COPY_SIG, BM=16, BN=32, SCALE=3.0))
    assert count(new, "scf.for") == 1
    rng = np.random.default_rng(M * 1000 + N)
    src = rng.standard_normal((N, M)).astype(np.float32).T  # strides (1, M) in elements
    outs = []
    for k in (ref_k, new_k):
        y = np.full((M, 2 * N), np.nan, np.float32)
        # x is column-major: element (i, j) at i + j*M; y: every other column
        _launch(k, ((M + 15) // 16,), np.ascontiguousarray(src.T).reshape(-1), y.reshape(-1), M, N, 1, M, 2 * N, 2)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1][:, ::2], src * 3.0)
    assert np.isnan(outs[1][:, 1::2]).all()


@pytest.mark.parametrize("M", [16, 40, 3])
def test_rowsum_loop_carried_matches_interpreter(M):
    N = 256
    ref_k, new_k, new = _both(_ttir(K.block_ptr_rowsum, {"X": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32",
                                                          "sxm": "i32"}, BM=16, BN=64))
    rng = np.random.default_rng(M)
    x = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        o = np.full(M, np.nan, np.float32)
        _launch(k, ((M + 15) // 16,), x.reshape(-1), o, M, N, N)
        outs.append(o)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], x.sum(1), rtol=1e-5, atol=1e-5)


def test_nan_padding_matches_interpreter():
    ref_k, new_k, new = _both(_ttir(K.block_ptr_1d_nan, {"X": "*fp32", "Y": "*fp32", "n": "i32"}, BLOCK=64))
    n = 150
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    outs = []
    for k in (ref_k, new_k):
        y = np.zeros(192, np.float32)
        _launch(k, (3,), x, y, n)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1][:n], x)
    assert np.isnan(outs[1][n:]).all()


def test_structure_no_boundary_check_means_no_mask():
    src = func('''
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %n64 = arith.extsi %n : i32 to i64
    %b = "tt.make_tensor_ptr"(%p, %n64, %c1, %c0) {order = array<i32: 0>, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (!tt.ptr<f32>, i64, i64, i32) -> !tt.ptr<tensor<128xf32>>
    %v = "tt.load"(%b) {cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>} : (!tt.ptr<tensor<128xf32>>) -> tensor<128xf32>
    %c = arith.constant 4 : i32
    %b2 = "tt.advance"(%b, %c) : (!tt.ptr<tensor<128xf32>>, i32) -> !tt.ptr<tensor<128xf32>>
    "tt.store"(%b2, %v) {boundaryCheck = array<i32: 0>, cache = 1 : i32, evict = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<tensor<128xf32>>, tensor<128xf32>) -> ()
    return''')
    out = run_pass(rewrite_tensor_pointer, src, via_pm=False)
    assert count(out, "tt.make_tensor_ptr") == 0 and count(out, "tt.advance") == 0
    loads = [line for line in out.splitlines() if '"tt.load"' in line]
    stores = [line for line in out.splitlines() if '"tt.store"' in line]
    assert "array<i32: 1, 0, 0>" in loads[0]  # no boundary check: no mask
    assert "array<i32: 1, 1, 1>" in stores[0]  # checked: masked
    assert count(out, "tt.addptr") == 2


def test_unsupported_use_is_a_clear_error():
    src = func('''
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %b = "tt.make_tensor_ptr"(%p, %c1, %c1, %c0) {order = array<i32: 0>, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (!tt.ptr<f32>, i64, i64, i32) -> !tt.ptr<tensor<128xf32>>
    %r = scf.while (%a = %b) : (!tt.ptr<tensor<128xf32>>) -> !tt.ptr<tensor<128xf32>> {
      %t = arith.constant false
      scf.condition(%t) %a : !tt.ptr<tensor<128xf32>>
    } do {
    ^bb0(%a2: !tt.ptr<tensor<128xf32>>):
      scf.yield %a2 : !tt.ptr<tensor<128xf32>>
    }
    return''')
    with pytest.raises(RewriteError, match="scf.while"):
        run_pass(rewrite_tensor_pointer, src, via_pm=False)
