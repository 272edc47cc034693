"""tl.random on the GPU: the Philox kernels of tests/language/test_random.py against the same Triton 3.9 reference
arrays, and the seeded dropout of tutorial 04 against NumPy.

randint / rand are integer Philox plus one int->float conversion and one multiply: bit-exact on the GPU too.
randn goes through the GPU's log / sqrt / cos / sin (libdevice), which are not NumPy's float32 functions: compared
with a small tolerance.  Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1."""
import os

import numpy as np
import pytest

from tests.e2e.test_dropout import _seeded_dropout, np_dropout, np_rand
from tests.language import test_random as R

torch = pytest.importorskip("torch")

INT_ROWS = slice(0, 10)     # randint, randint4x x4, rand, rand4x x4: exact
NORMAL_ROWS = slice(10, 15)  # randn, randn4x x4: libdevice math


@pytest.mark.parametrize("case", range(len(R.CASES)))
def test_philox_rows_match_triton(gpu, case):
    seed, base, nr = R.CASES[case]
    out = gpu.empty(15 * R.N, dtype=torch.int32)
    R.rng_rows[R.GRID](out, seed, base, R.N, BLOCK=R.BLOCK, N_ROUNDS=nr)
    gpu.done()
    want = np.load(os.path.join(R.DATA, "philox_rows.npy"))[case]
    got = out.cpu().numpy().reshape(15, R.N)
    np.testing.assert_array_equal(got[INT_ROWS], want[INT_ROWS])
    np.testing.assert_allclose(got[NORMAL_ROWS].view(np.float32), want[NORMAL_ROWS].view(np.float32),
                               rtol=1e-4, atol=1e-5)


def test_tensor_seeds_and_philox_match_triton(gpu):
    want = np.load(os.path.join(R.DATA, "philox_misc.npy"))
    out = gpu.empty(3 * R.N, dtype=torch.int32)
    seeds = torch.from_numpy(R.TENSOR_SEEDS).to(gpu.device)
    offs = torch.from_numpy(R.TENSOR_OFFS).to(gpu.device)
    R.rng_tensor_seed[R.GRID](out, seeds, offs, R.N, BLOCK=R.BLOCK)
    out2 = gpu.empty(8 * R.N, dtype=torch.int32)
    R.rng_philox[R.GRID](out2, 20260101, R.N, BLOCK=R.BLOCK)
    gpu.done()
    np.testing.assert_array_equal(out.cpu().numpy().reshape(3, R.N), want[:3])
    np.testing.assert_array_equal(out2.cpu().numpy().reshape(8, R.N), want[3:])


@pytest.mark.parametrize("n,p,seed", [(98432, 0.5, 123), (1 << 20, 0.3, 2 ** 34 + 1)])
def test_seeded_dropout(gpu, n, p, seed):
    x = gpu.randn(n)
    out = gpu.empty(n)
    _seeded_dropout[((n + 1023) // 1024,)](x, out, n, p, seed, BLOCK_SIZE=1024)
    gpu.done()
    xn = x.cpu().numpy()
    want = np_dropout(xn, np_rand(seed, n) > np.float32(p), p)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-6, atol=0)
