"""``tl.associative_scan`` with a non-commutative combine, forward and ``reverse=True``, along each axis of a 2-D
tile: the combine sees the accumulated prefix first in scan order, so a reverse scan is a forward scan of the
flipped tile, flipped back (Triton 3.6's results: linear recurrences, "first element" combines)."""
import numpy as np
import pytest

import tritium
import tritium.language as tl


@tritium.jit
def linear_recurrence(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@tritium.jit
def first(a, b):
    return a


@tritium.jit
def scan2d(A, B, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
           OP: tl.constexpr):
    o = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(A + o)
    b = tl.load(B + o)
    if OP == "linear_recurrence":
        _, z = tl.associative_scan((a, b), AXIS, linear_recurrence, reverse=REVERSE)
    else:
        z = tl.associative_scan(a, AXIS, first, reverse=REVERSE)
    tl.store(OUT + o, z)


def reference(a, b, axis, reverse, op):
    """Sequential scan in NumPy: acc = combine(acc, x) in scan order."""
    a, b = np.moveaxis(a, axis, -1).astype(np.float64), np.moveaxis(b, axis, -1).astype(np.float64)
    if reverse:
        a, b = a[..., ::-1], b[..., ::-1]
    out = np.empty_like(a)
    for r in range(a.shape[0]):
        acc_a, acc_b = a[r, 0], b[r, 0]
        out[r, 0] = acc_b if op == "linear_recurrence" else acc_a
        for j in range(1, a.shape[1]):
            if op == "linear_recurrence":
                acc_a, acc_b = acc_a * a[r, j], acc_b * a[r, j] + b[r, j]
                out[r, j] = acc_b
            else:
                out[r, j] = acc_a
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("op", ["linear_recurrence", "first"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(4, 8), (16, 32)])
def test_noncommutative_scan_2d(mode, op, axis, reverse, shape):
    rng = np.random.default_rng(hash((op, axis, reverse, shape)) % 2**32)
    M, N = shape
    a = (rng.random(shape) * 0.5 + 0.75).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    scan2d[(1,)](a, b, out, M, N, axis, reverse, op)
    np.testing.assert_allclose(out, reference(a, b, axis, reverse, op), rtol=1e-4, atol=1e-5)
