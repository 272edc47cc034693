"""tl.random (Philox): bit-exact with Triton 3.9's interpreter on the tritium interpreter.

The reference arrays under data/ were made once by data/gen_random_ref.py (Triton's interpreter, TRITON_INTERPRET=1);
the kernels below are the same as there.  Floats are compared through their bit patterns: randint, rand and randn
(Box-Muller with NumPy's float32 log/sqrt/cos/sin on both sides) match exactly."""
import os

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


from tests.language.random_kernels import (BLOCK, CASES, N, TENSOR_OFFS, TENSOR_SEEDS, rng_philox, rng_rows,
                                          rng_tensor_seed)


ROWS = ["randint", "randint4x.0", "randint4x.1", "randint4x.2", "randint4x.3", "rand", "rand4x.0", "rand4x.1",
        "rand4x.2", "rand4x.3", "randn", "randn4x.0", "randn4x.1", "randn4x.2", "randn4x.3"]
GRID = (triton.cdiv(N, BLOCK),)


def _diff(got, want, names):
    bad = [f"{names[r]}: {int((got[r] != want[r]).sum())} of {N} differ" for r in range(len(names))
           if not np.array_equal(got[r], want[r])]
    return "; ".join(bad)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"seed{s}-off{o}-r{n}" for s, o, n in CASES])
def test_matches_triton(case):
    seed, base, nr = CASES[case]
    want = np.load(os.path.join(DATA, "philox_rows.npy"))[case]
    out = np.zeros(15 * N, dtype=np.int32)
    rng_rows[GRID](out, seed, base, N, BLOCK=BLOCK, N_ROUNDS=nr)
    got = out.reshape(15, N)
    assert not _diff(got, want, ROWS), _diff(got, want, ROWS)


def test_tensor_seeds_and_explicit_counters_match_triton():
    want = np.load(os.path.join(DATA, "philox_misc.npy"))
    out = np.zeros(3 * N, dtype=np.int32)
    rng_tensor_seed[GRID](out, TENSOR_SEEDS, TENSOR_OFFS, N, BLOCK=BLOCK)
    got = out.reshape(3, N)
    assert not _diff(got, want[:3], ["randint", "rand", "randint(loaded scalar seed)"])
    out = np.zeros(8 * N, dtype=np.int32)
    rng_philox[GRID](out, 20260101, N, BLOCK=BLOCK)
    got = out.reshape(8, N)
    assert not _diff(got, want[3:], [f"philox.{i}" for i in range(8)])


# ---------------------------------------------------------------------------------------------
# an independent NumPy Philox-4x32-10 (Salmon et al.) for offsets and seeds not in the reference files
# ---------------------------------------------------------------------------------------------

def np_philox4x32(seed, c0, c1, c2, c3, n_rounds=10):
    m = np.uint64(0xFFFFFFFF)
    seed = np.uint64(np.int64(seed).astype(np.uint64))
    k0, k1 = np.uint64(seed & m), np.uint64(seed >> np.uint64(32))
    c = [np.asarray(x, dtype=np.uint64) & m for x in (c0, c1, c2, c3)]
    for _ in range(n_rounds):
        p0 = c[0] * np.uint64(0xD2511F53)
        p2 = c[2] * np.uint64(0xCD9E8D57)
        c = [(p2 >> np.uint64(32)) ^ c[1] ^ k0, p2 & m, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & m]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m
        k1 = (k1 + np.uint64(0xBB67AE85)) & m
    return [x.astype(np.uint32) for x in c]


@triton.jit
def randint_rand_kernel(out_i, out_f, seed, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    tl.store(out_i + i, tl.random.randint(seed, i).to(tl.int32, bitcast=True), mask=m)
    tl.store(out_f + i, tl.random.rand(seed, i), mask=m)


@pytest.mark.parametrize("seed", [0, 1, 5, -3, 2 ** 45 + 17])
def test_randint_matches_numpy_philox(seed):
    n = 1000
    oi = np.zeros(n, np.int32)
    of = np.zeros(n, np.float32)
    randint_rand_kernel[(triton.cdiv(n, 256),)](oi, of, seed, n, BLOCK=256)
    off = np.arange(n, dtype=np.uint64)
    r = np_philox4x32(seed, off, 0, 0, 0)[0]
    np.testing.assert_array_equal(oi.view(np.uint32), r)
    x = r.view(np.int32)
    want = np.where(x < 0, ~x, x).astype(np.float32) * np.float32(4.6566127342e-10)
    np.testing.assert_array_equal(of, want)
    assert of.min() >= 0 and of.max() < 1 and abs(of.mean() - 0.5) < 0.05


@triton.jit
def scalar_offset_kernel(out, seed, off):
    tl.store(out, tl.randint(seed, off).to(tl.int32, bitcast=True))
    tl.store(out + 1, tl.rand(seed, off).to(tl.int32, bitcast=True))


def test_scalar_seed_and_scalar_offset():
    out = np.zeros(2, np.int32)
    scalar_offset_kernel[(1,)](out, 77, 12345)
    r = np_philox4x32(77, 12345, 0, 0, 0)[0]
    assert out.view(np.uint32)[0] == r
    x = r.view(np.int32)
    assert out.view(np.float32)[1] == np.float32(~x if x < 0 else x) * np.float32(4.6566127342e-10)


@triton.jit
def dtype_kernel(out, seed):
    i = tl.arange(0, 4)
    r = tl.randint(seed, i)
    tl.static_assert(r.dtype == tl.uint32)
    a, b, c, d = tl.randint4x(seed, i.to(tl.int64))
    tl.static_assert(d.dtype == tl.uint32)
    u = tl.rand(seed, i)
    tl.static_assert(u.dtype == tl.float32)
    n = tl.randn(seed, i)
    tl.static_assert(n.dtype == tl.float32)
    e, f, g, h = tl.philox(seed, i.to(tl.int64), i.to(tl.int64), i.to(tl.int64), i.to(tl.int64))
    tl.static_assert(h.dtype == tl.uint64)
    tl.store(out + i, u)


def test_result_dtypes():
    out = np.zeros(4, np.float32)
    dtype_kernel[(1,)](out, 3)
    assert (out >= 0).all() and (out < 1).all()


@triton.jit
def float_seed_kernel(out, seed):
    i = tl.arange(0, 4)
    tl.store(out + i, tl.rand(seed, i))


def test_float_seed_is_a_compile_error():
    with pytest.raises(triton.CompilationError, match="seed must be an integer"):
        float_seed_kernel[(1,)](np.zeros(4, np.float32), 1.5)


def test_randn_statistics():
    @triton.jit
    def k(out, seed, N, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        a, b, c, d = tl.randn4x(seed, i)
        tl.store(out + i, a, mask=i < N)
        tl.store(out + N + i, b, mask=i < N)
        tl.store(out + 2 * N + i, c, mask=i < N)
        tl.store(out + 3 * N + i, d, mask=i < N)

    n = 4096
    out = np.zeros(4 * n, np.float32)
    k[(n // 1024,)](out, 123, n, BLOCK=1024)
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1) < 0.03


def test_namespace_and_types():
    assert tl.random.randint is tl.randint and tl.random.philox is tl.philox and tl.random.randn4x is tl.randn4x
    assert tl.random.N_ROUNDS_DEFAULT == 10
    for name in ("randint", "randint4x", "rand", "randn", "rand4x", "randn4x", "philox", "philox_impl",
                 "uint_to_uniform_float", "pair_uniform_to_normal"):
        assert isinstance(getattr(tl, name), triton.JITFunction)
