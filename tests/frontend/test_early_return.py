"""``return`` inside an ``if`` whose condition is only known at run time, after (or inside) a constexpr ``if`` that
returns: the frontend moves what follows such an ``if`` into the branch that does not return, so both interpreter
modes and the NVIDIA compile see structured control flow (Triton branches between blocks for the same kernels)."""
import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import ASTSource, compile


@tritium.jit
def _semaphore(Sem, Out, total: tl.constexpr):
    if total == 1:
        tl.store(Out, tl.program_id(0))
        return
    prev = tl.atomic_add(Sem, 1)
    if prev + 1 != total:  # every program but the last one to arrive leaves here
        return
    tl.store(Out, tl.program_id(0) + 100 * prev)


@tritium.jit
def _clip_rows(X, Y, n_cols, LIMIT, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    s = tl.sum(x, axis=0)
    if s > LIMIT:
        tl.store(Y + row * n_cols + cols, x * 0.0 - 1.0, mask=cols < n_cols)
        return
    if s < -LIMIT:
        if row % 2 == 0:
            return  # even rows below -LIMIT are left untouched
        tl.store(Y + row * n_cols + cols, x * 2.0, mask=cols < n_cols)
        return
    tl.store(Y + row * n_cols + cols, x + 1.0, mask=cols < n_cols)


@tritium.jit
def _pick(x, lim):
    if x > lim:
        return x - lim
    y = x * 2.0
    if y < 0:
        return -y
    return y + 1.0


@tritium.jit
def _call_pick(X, Y, lim):
    i = tl.program_id(0)
    tl.store(Y + i, _pick(tl.load(X + i), lim))


def _clip_reference(x, limit):
    y = np.full_like(x, 7.0)
    for r in range(x.shape[0]):
        s = x[r].sum(dtype=np.float32)
        if s > limit:
            y[r] = -1.0
        elif s < -limit:
            if r % 2:
                y[r] = x[r] * 2
        else:
            y[r] = x[r] + 1
    return y


def test_return_in_runtime_if_after_constexpr_return(mode):
    for total in (1, 5):
        sem, out = np.zeros(1, np.int32), np.full(1, -1, np.int32)
        _semaphore[(total,)](sem, out, total)
        if total == 1:
            assert out[0] == 0 and sem[0] == 0
        else:  # the last program to arrive (whichever it is) stores its id + 100 * (total - 1)
            assert sem[0] == total and out[0] // 100 == total - 1 and 0 <= out[0] % 100 < total


@pytest.mark.parametrize("n_cols", [5, 16])
def test_nested_returns_per_program(mode, n_cols):
    rng = np.random.default_rng(n_cols)
    x = rng.standard_normal((12, n_cols)).astype(np.float32) * 2
    limit = np.float32(1.5)
    y = np.full_like(x, 7.0)
    _clip_rows[(12,)](x, y, n_cols, limit, BLOCK=16)
    ref = _clip_reference(x, limit)
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    sums = x.sum(axis=1)
    assert (sums > limit).any() and (sums < -limit).any() and (abs(sums) <= limit).any(), "inputs cover every path"


def test_callee_returns_in_runtime_branches(mode):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(64).astype(np.float32)
    y = np.zeros_like(x)
    _call_pick[(64,)](x, y, np.float32(0.5))
    ref = np.where(x > 0.5, x - 0.5, np.where(2 * x < 0, -2 * x, 2 * x + 1)).astype(np.float32)
    np.testing.assert_allclose(y, ref, rtol=1e-6)


@pytest.mark.parametrize("fn,sig,ce", [
    (_semaphore, {"Sem": "*i32", "Out": "*i32"}, {"total": 4}),
    (_clip_rows, {"X": "*fp32", "Y": "*fp32", "n_cols": "i32", "LIMIT": "fp32"}, {"BLOCK": 16}),
    (_call_pick, {"X": "*fp32", "Y": "*fp32", "lim": "fp32"}, {}),
])
def test_early_returns_compile_for_cuda(fn, sig, ce):
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", until="ptx", use_cache=False)
    assert f".entry {k.metadata['name']}" in k.asm["ptx"]
