"""tl.extra.cuda's globaltimer, smid, num_warps, num_threads, gdc_wait / gdc_launch_dependents on the interpreter
(both ``from tritium.language.extra.cuda import ...`` and ``tl.extra.cuda.<name>``); convert_custom_float8 is
inline PTX the interpreter cannot run: a CompilationError naming the call's line.
Kernels: tests/nvidia/cuda_utils_kernels.py."""
import time

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tests.nvidia import cuda_utils_kernels as K
from tritium.errors import CompilationError
from tritium.language.extra import cuda as extra_cuda

pytest.importorskip("mlir.ir")


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def test_exports_match_triton_36():
    names = {"libdevice", "globaltimer", "num_threads", "num_warps", "smid", "convert_custom_float8_sm70",
             "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait"}
    assert set(extra_cuda.__all__) == names
    for n in names:
        assert getattr(tl.extra.cuda, n) is getattr(extra_cuda, n)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8, 16])
def test_num_warps_threads_smid(num_warps):
    o = np.full(4 * 5, -1, np.int32)
    K.info_k[(5,)](o, num_warps=num_warps)
    np.testing.assert_array_equal(o.reshape(5, 4), [[num_warps, num_warps * 32, 0, num_warps * 1000]] * 5)


def test_num_warps_default_is_4():
    o = np.full(4, -1, np.int32)
    K.info_k[(1,)](o)
    np.testing.assert_array_equal(o, [4, 128, 0, 4000])


def test_num_warps_outside_a_kernel():
    with pytest.raises(Exception, match="num_warps"):
        extra_cuda.num_warps()


@pytest.mark.parametrize("grid,steps", [(1, 1), (4, 5), (33, 3)])
def test_globaltimer_non_decreasing(grid, steps):
    n = 100
    x = np.random.default_rng(0).random(n).astype(np.float32)
    ref = x.copy()
    t = np.zeros(grid * (steps + 1), np.int64)
    before = time.time_ns()
    K.timer_k[(grid,)](x, t, n, BLOCK=128, STEPS=steps)
    after = time.time_ns()
    t = t.reshape(grid, steps + 1)
    assert (np.diff(t, axis=1) >= 0).all(), t
    assert (t >= before - 10**9).all() and (t <= after + 10**9).all()  # nanoseconds of wall-clock time
    acc = sum(np.sin(ref + i) for i in range(steps))
    np.testing.assert_allclose(x, acc, rtol=1e-5, atol=1e-6)


def test_globaltimer_across_launches():
    a, b = np.zeros(1, np.int64), np.zeros(1, np.int64)
    K.timer_k[(1,)](np.zeros(4, np.float32), a, 4, BLOCK=4, STEPS=0)
    K.timer_k[(1,)](np.zeros(4, np.float32), b, 4, BLOCK=4, STEPS=0)
    assert b[0] >= a[0] > 0


def test_globaltimer_elapsed():
    o = np.full(3, -1, np.int64)
    K.timer_elapsed_k[(3,)](o, SPIN=8)
    assert (o >= 0).all()


@pytest.mark.parametrize("n,block", [(10, 4), (1000, 256)])
def test_gdc_noop(n, block):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    K.gdc_k[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
    np.testing.assert_array_equal(y, x * 2 + 1)
    z = np.zeros(1, np.int32)
    K.gdc_launch_k[(1,)](z)
    assert z[0] == 1


@pytest.mark.parametrize("sm80", [True, False])
def test_custom_fp8_is_a_compilation_error(sm80):
    with pytest.raises(CompilationError) as e:
        K.fp8_up_k[(1,)](np.zeros(4, np.uint8), np.zeros(4, np.float16), 4, BLOCK=4, DST=tl.float16, SM80=sm80)
    assert "inline assembly" in str(e.value) and "cuda_utils_kernels.py" in str(e.value)
    assert "convert_custom_float8_sm" in str(e.value)  # the call's source line
    with pytest.raises(CompilationError, match="inline assembly"):
        K.fp8_down_k[(1,)](np.zeros(4, np.float32), np.zeros(4, np.uint8), 4, BLOCK=4, SM80=sm80)


@triton.jit
def _bad_fp8_k(X, O):
    tl.store(O, tl.extra.cuda.convert_custom_float8_sm80(tl.load(X), tl.float16))


def test_custom_fp8_wrong_dtype():
    with pytest.raises(CompilationError, match="fp16/fp32"):
        _bad_fp8_k[(1,)](np.zeros(1, np.int32), np.zeros(1, np.float16))


@triton.jit
def _other_asm_k(O):
    tl.store(O, tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1))


def test_other_inline_asm_still_an_error():
    with pytest.raises(CompilationError, match="inline assembly"):
        _other_asm_k[(1,)](np.zeros(1, np.int32))
