"""The Philox kernels whose results data/philox_*.npy hold (made by data/gen_random_ref.py under Triton's own
interpreter) and test_random.py checks on tritium's: one copy, imported by both.  Under the generator ``tritium``
names Triton (the script aliases it before importing this module)."""
import numpy as np

import tritium as triton
import tritium.language as tl

# (seed, offset base, n_rounds): int32 seeds (incl. negative: sign-extended to 64 bits), int64 seeds,
# int32 and int64 offsets (off_base > 2**31 makes the offsets int64), a non-default round count.
CASES = [(0, 0, 10), (42, 0, 10), (-7, 1000, 10), (2 ** 31 - 1, 123456, 10), (2 ** 33 + 5, 77, 10),
         (0x123456789ABCDEF, 2 ** 40 + 3, 10), (-(2 ** 40) - 11, 5, 10), (1234, 2 ** 32 - 20, 7)]
N = 37       # not a power of two: three programs of 16, the last one masked
BLOCK = 16


@triton.jit
def rng_rows(out_ptr, seed, off_base, N, BLOCK: tl.constexpr, N_ROUNDS: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    off = off_base + i
    r = tl.randint(seed, off, N_ROUNDS)
    a, b, c, d = tl.randint4x(seed, off, N_ROUNDS)
    u = tl.rand(seed, off, N_ROUNDS)
    u1, u2, u3, u4 = tl.rand4x(seed, off, N_ROUNDS)
    n = tl.randn(seed, off, N_ROUNDS)
    n1, n2, n3, n4 = tl.randn4x(seed, off, N_ROUNDS)
    tl.store(out_ptr + 0 * N + i, r.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 1 * N + i, a.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 2 * N + i, b.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 3 * N + i, c.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 4 * N + i, d.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 5 * N + i, u.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 6 * N + i, u1.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 7 * N + i, u2.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 8 * N + i, u3.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 9 * N + i, u4.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 10 * N + i, n.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 11 * N + i, n1.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 12 * N + i, n2.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 13 * N + i, n3.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 14 * N + i, n4.to(tl.int32, bitcast=True), mask=m)


@triton.jit
def rng_tensor_seed(out_ptr, seed_ptr, off_ptr, N, BLOCK: tl.constexpr):
    # seeds and offsets both tensors (per element), int64 seeds, int32 offsets
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    seed = tl.load(seed_ptr + i, mask=m, other=0)
    off = tl.load(off_ptr + i, mask=m, other=0)
    r = tl.randint(seed, off)
    u = tl.rand(seed, off)
    s0 = tl.load(seed_ptr)  # a scalar seed loaded from memory
    r2 = tl.randint(s0, off)
    tl.store(out_ptr + 0 * N + i, r.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 1 * N + i, u.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 2 * N + i, r2.to(tl.int32, bitcast=True), mask=m)


@triton.jit
def rng_philox(out_ptr, seed, N, BLOCK: tl.constexpr):
    # tl.philox with explicit 32-bit and 64-bit counters
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    c = i.to(tl.uint32)
    a, b, c2, d = tl.philox(seed, c, c * 3, c + 11, c ^ 5)
    c64 = i.to(tl.uint64) * 0x100000001
    e, f, g, h = tl.philox(seed, c64, c64 + 1, c64 * 7, c64, 6)
    tl.store(out_ptr + 0 * N + i, a.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 1 * N + i, b.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 2 * N + i, c2.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 3 * N + i, d.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 4 * N + i, (e & 0xFFFFFFFF).to(tl.uint32).to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 5 * N + i, (f >> 32).to(tl.uint32).to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 6 * N + i, (g >> 7).to(tl.uint32).to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 7 * N + i, (h >> 40).to(tl.uint32).to(tl.int32, bitcast=True), mask=m)


TENSOR_SEEDS = np.array([0, 1, -1, 2 ** 31, 2 ** 40 + 9, -(2 ** 35), 987654321987, 17] * 5, dtype=np.int64)[:N]
TENSOR_OFFS = (np.arange(N, dtype=np.int64) * 7919 - 100).astype(np.int32)
