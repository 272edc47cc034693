"""The warm path: a process whose kernels are all in the file cache imports neither MLIR nor llvmlite nor the
frontend; relaunching a kernel takes the generated-binder fast path and still specialises correctly."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.runtime import binder as binder_mod

WARM = textwrap.dedent('''
    import json, sys, time
    sys.path.insert(0, {d!r})
    import numpy as np
    import tritium
    from tritium.runtime import cache
    import wkernels
    n = 1000
    x = np.random.rand(n).astype(np.float32); y = np.random.rand(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    wkernels.add[(tritium.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    ok_add = bool(np.array_equal(out, x + y))
    a = np.random.rand(8, 64).astype(np.float32); o = np.zeros_like(a)
    wkernels.softmax[(8,)](o, a, a.strides[0] // 4, 64, BLOCK=64)
    e = np.exp(a - a.max(1, keepdims=True)); ok_sm = bool(np.allclose(o, e / e.sum(1, keepdims=True), atol=1e-6))
    mods = sorted(m for m in sys.modules if m.split(".")[0] in ("mlir", "llvmlite")
                  or m.startswith(("tritium.frontend", "tritium.passes", "tritium.dialects", "tritium.lowering")))
    print(json.dumps({{"ok": ok_add and ok_sm, "stats": cache.stats, "mods": mods}}))
''')

KERNELS = '''
import tritium
import tritium.language as tl


@tritium.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tritium.jit
def softmax(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)
'''


def test_second_process_runs_from_cache_without_mlir(tmp_path):
    (tmp_path / "wkernels.py").write_text(KERNELS)
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(tmp_path / "cache"), "TRITIUM_TARGET": "interpreter"}
    script = WARM.format(d=str(tmp_path))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["ok"] and warm["ok"]
    assert cold["stats"]["stores"] == 2 and any(m.startswith("mlir") for m in cold["mods"])
    assert warm["stats"]["hits"] == 2 and warm["stats"]["misses"] == 0
    assert warm["mods"] == [], f"the warm path imported {warm['mods']}"


# --------------------------------------------------------------------------------------------- fast path
@tritium.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@tritium.jit(do_not_specialize=["n"])
def scale_dns(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@pytest.fixture
def count_binds(monkeypatch):
    calls = []
    real = binder_mod.Binder.bind

    def bind(self, *a, **k):
        calls.append(self.name)
        return real(self, *a, **k)

    monkeypatch.setattr(binder_mod.Binder, "bind", bind)
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    return calls


def run_scale(kern, n, factor=2.0, offset=0, block=32, dtype=np.float32):
    base = np.arange(n + offset, dtype=dtype)
    x = base[offset:]
    out = np.zeros(n, dtype)
    kern[(tritium.cdiv(max(n, 1), block),)](x, out, n, factor, BLOCK=block)
    np.testing.assert_allclose(out, x * dtype(factor))
    return x


@pytest.mark.parametrize("kern,binds", [(scale, 7), (scale_dns, 5)])
def test_relaunch_takes_fast_path_and_respecialises(kern, binds, count_binds):
    kern.cache.clear()
    run_scale(kern, 64)
    assert count_binds == [kern.__name__]
    for _ in range(3):
        run_scale(kern, 64)
    assert len(count_binds) == 1, "relaunches with the same descriptors must not run the general binder"
    n_kernels = sum(len(v) for v in kern.cache.values())
    # every change of specialisation goes back to the binder and compiles what it must
    run_scale(kern, 65)          # n no longer divisible by 16
    run_scale(kern, 1)           # n == 1 becomes a constexpr
    run_scale(kern, 64, offset=1)  # a pointer that is not 16-byte aligned
    run_scale(kern, 64, factor=3)  # int instead of float
    run_scale(kern, 64, dtype=np.float64)
    run_scale(kern, 64, block=64)
    assert len(count_binds) == binds  # do_not_specialize: n == 65 and n == 1 are the n == 64 kernel
    for n in (65, 1):
        run_scale(kern, n)
    assert len(count_binds) == binds
    sigs = {tuple(sorted(k[0])) for d in kern.cache.values() for k in d}
    assert sum(len(v) for v in kern.cache.values()) > n_kernels and sigs


def test_fast_path_keys_on_specialisation_not_value(count_binds):
    """Like Triton: n == 32 and n == 48 are both 'divisible by 16', so the second launch reuses the kernel."""
    scale.cache.clear()
    run_scale(scale, 32)
    run_scale(scale, 48)  # also divisible by 16: same kernel, fast path
    assert len(count_binds) == 1
    assert sum(len(v) for v in scale.cache.values()) == 1


def test_fast_path_errors_come_from_the_binder(count_binds):
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="missing constexpr argument 'BLOCK'"):
        scale[(1,)](x, x, 4, 1.0)
    with pytest.raises(TypeError, match="unsupported type"):
        scale[(1,)](x, x, object(), 1.0, BLOCK=4)
    run_scale(scale, 4, block=4)
    with pytest.raises(TypeError, match="without a grid"):
        scale.run(x, x, 4, 2.0, BLOCK=4, grid=None)


def test_cache_clear_drops_fast_entries(count_binds):
    scale.cache.clear()
    run_scale(scale, 16)
    scale.cache.clear()
    run_scale(scale, 16)
    assert len(count_binds) == 2 and scale.cache.fast


def test_callable_grid_on_fast_path(count_binds):
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    for _ in range(2):
        out[:] = 0
        scale[lambda meta: (tritium.cdiv(meta["n"], meta["BLOCK"]),)](x, out, 100, 2.0, BLOCK=32)
        np.testing.assert_allclose(out, 2 * x)
    assert len(count_binds) == 1
