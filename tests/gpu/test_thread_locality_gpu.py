"""Reductions in a loop folded into a loop-carried accumulator, rewritten by the thread-locality pass (only the
thread-local part in the loop, the reduction across threads after it): values against torch, Triton's
``test_optimize_thread_locality`` (sum / max / min, BLOCK_N 32 / 64 / 128, N 512 / 1024 / 2048, num_pid_n 2 / 4,
BLOCK_M 32, 4 warps) for fp32 and int32, plus the masked kernel whose in-loop reduction runs over a thread's
repetitions (N of unknown alignment).  Kernels: tests/nvidia/thread_locality_kernels.py; the TTGIR they compile
to: tests/nvidia/test_optimize_thread_locality.py.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

from tests.nvidia import thread_locality_kernels as K

torch = pytest.importorskip("torch")

BLOCK_M = 32
FLOAT_INIT = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}
INT_INIT = {"sum": 0, "max": -2 ** 31, "min": 2 ** 31 - 1}


def _input(gpu, dtype, m, n):
    if dtype == torch.float32:
        return gpu.randn(m, n)
    return gpu.randint(-1000, 1000, (m, n), dtype=torch.int32)


def _reference(x, op, init, block_n, num_pid_n):
    x = x.cpu()
    m, n = x.shape
    out = torch.full((m, num_pid_n), init, dtype=x.dtype)
    for j in range(-(-n // block_n)):
        blk = x[:, j * block_n:(j + 1) * block_n]
        red = {"sum": lambda t: t.sum(1, dtype=x.dtype), "max": lambda t: t.amax(1),
               "min": lambda t: t.amin(1)}[op](blk)
        col = j % num_pid_n
        out[:, col] = {"sum": torch.add, "max": torch.maximum, "min": torch.minimum}[op](out[:, col], red)
    return out


def _check(got, want, dtype):
    if dtype == torch.float32:
        torch.testing.assert_close(got.cpu(), want, rtol=0.01, atol=1e-3)
    else:
        assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("num_pid_n", [2, 4])
@pytest.mark.parametrize("n", [512, 1024, 2048])
@pytest.mark.parametrize("block_n", [32, 64, 128])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_optimize_thread_locality(gpu, dtype, op, block_n, n, num_pid_n):
    init = (FLOAT_INIT if dtype == torch.float32 else INT_INIT)[op]
    x = _input(gpu, dtype, BLOCK_M, n)
    y = gpu.empty(BLOCK_M, num_pid_n, dtype=dtype)
    K.accumulate_reduce[(1, num_pid_n)](x, y, n, BLOCK_M=BLOCK_M, BLOCK_N=block_n, OP=op, INIT=init)
    gpu.done()
    _check(y, _reference(x, op, init, block_n, num_pid_n), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_init_value_is_combined_after_the_loop(gpu, dtype, op):
    init = {"sum": 5, "max": 3, "min": -3}[op]
    init = float(init) if dtype == torch.float32 else init
    x = _input(gpu, dtype, 2 * BLOCK_M, 1024)
    y = gpu.empty(2 * BLOCK_M, 4, dtype=dtype)
    K.accumulate_reduce[(2, 4)](x, y, 1024, BLOCK_M=BLOCK_M, BLOCK_N=64, OP=op, INIT=init)
    gpu.done()
    _check(y, _reference(x, op, init, 64, 4), dtype)


@pytest.mark.parametrize("n", [1000, 2048])
@pytest.mark.parametrize("block_n", [64, 256, 512])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_masked_and_unaligned(gpu, op, block_n, n):
    # n = 1000: one element per thread along N; 256 / 512 wide blocks give a thread 2 / 4 repetitions, which the
    # loop reduces; 64 leaves the loop as it is
    neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[op]
    x = _input(gpu, torch.float32, BLOCK_M, n)
    y = gpu.empty(BLOCK_M, 2)
    K.accumulate_reduce_masked[(1, 2)](x, y, n, BLOCK_M=BLOCK_M, BLOCK_N=block_n, OP=op, INIT=FLOAT_INIT[op],
                                       NEUTRAL=neutral)
    gpu.done()
    _check(y, _reference(x, op, FLOAT_INIT[op], block_n, 2), torch.float32)


@pytest.mark.parametrize("case", ["seen", "mixed", "computed", "plain"])
def test_loops_left_alone_and_plain(gpu, case):
    n, num_pid_n = 1024, 2
    x = gpu.randn(BLOCK_M, n)
    y = gpu.empty(BLOCK_M, num_pid_n)
    z = gpu.empty(BLOCK_M, num_pid_n)
    K.accumulate_reduce_other[(1, num_pid_n)](x, y, z, n, BLOCK_M=BLOCK_M, BLOCK_N=128, CASE=case)
    gpu.done()
    xs = x.cpu()
    blocks = [xs[:, j * 128:(j + 1) * 128] for j in range(n // 128)]
    want = torch.zeros(BLOCK_M, num_pid_n)
    prefix = torch.zeros(BLOCK_M, num_pid_n)
    for j, b in enumerate(blocks):
        c = j % num_pid_n
        prefix[:, c] += want[:, c]
        want[:, c] += {"mixed": b.amax(1), "computed": (b * 2).sum(1)}.get(case, b.sum(1))
    torch.testing.assert_close(y.cpu(), want, rtol=0.01, atol=1e-3)
    if case == "seen":
        torch.testing.assert_close(z.cpu(), prefix, rtol=0.01, atol=1e-3)
