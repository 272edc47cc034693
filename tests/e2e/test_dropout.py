"""Triton tutorial 04 (low-memory dropout) on the interpreter: the mask-tensor dropout and the seeded dropout
(`tl.rand(seed, offsets)`), compared with NumPy using the same Philox mask (an independent NumPy Philox-4x32-10)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

RNG = np.random.default_rng(404)


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


@triton.jit
def _dropout(x_ptr, x_keep_ptr, output_ptr, n_elements, p, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x_keep = tl.load(x_keep_ptr + offsets, mask=mask)
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, p, seed):
    out = np.empty_like(x)
    n = x.size
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    _seeded_dropout[grid](x, out, n, p, seed, BLOCK_SIZE=1024)
    return out


def np_rand(seed, n):
    """tl.rand(seed, arange(n)): Philox-4x32-10 on the counter (offset, 0, 0, 0), key = the 64-bit seed, first
    word -> float32 in [0, 1)."""
    m = np.uint64(0xFFFFFFFF)
    s = np.int64(seed).astype(np.uint64)
    k0, k1 = s & m, s >> np.uint64(32)
    c0, c1 = np.arange(n, dtype=np.uint64), np.zeros(n, np.uint64)
    c2, c3 = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for _ in range(10):
        p0, p2 = c0 * np.uint64(0xD2511F53), c2 * np.uint64(0xCD9E8D57)
        c0, c1, c2, c3 = (p2 >> np.uint64(32)) ^ c1 ^ k0, p2 & m, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m, (k1 + np.uint64(0xBB67AE85)) & m
    x = c0.astype(np.uint32).view(np.int32)
    return np.where(x < 0, ~x, x).astype(np.float32) * np.float32(4.6566127342e-10)


def np_dropout(x, keep, p):
    return np.where(keep, x / (np.float32(1) - np.float32(p)), np.float32(0)).astype(np.float32)


@pytest.mark.parametrize("n", [10, 98432])
def test_dropout_with_mask(n):
    x = RNG.standard_normal(n).astype(np.float32)
    p = 0.5
    keep = (RNG.random(n) > p).astype(np.int32)
    out = np.empty_like(x)
    _dropout[(triton.cdiv(n, 1024),)](x, keep, out, n, p, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out, np_dropout(x, keep.astype(bool), p))


@pytest.mark.parametrize("n,p,seed", [(10, 0.5, 123), (4097, 0.3, 512), (98432, 0.5, 2 ** 34 + 1)])
def test_seeded_dropout_matches_numpy(n, p, seed):
    x = RNG.standard_normal(n).astype(np.float32)
    out = seeded_dropout(x, p, seed)
    keep = np_rand(seed, n) > np.float32(p)
    np.testing.assert_array_equal(out, np_dropout(x, keep, p))
    if n > 1000:
        assert abs((out == 0).mean() - p) < 0.03


def test_seeded_dropout_is_reproducible():
    x = RNG.standard_normal(5000).astype(np.float32) + 10  # no zeros in x: out == 0 exactly where dropped
    a, b, c = seeded_dropout(x, 0.5, 123), seeded_dropout(x, 0.5, 123), seeded_dropout(x, 0.5, 512)
    np.testing.assert_array_equal(a, b)
    assert ((a == 0) != (c == 0)).any()
