"""The profiler plugin (entry point ``profiler``): per-kernel launch counts and host times from the launch
hooks, a summary table, a Chrome trace; TRITIUM_PROFILE=1 reports at exit."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

import tritium
import tritium.language as tl
import tritium.plugins as plugins
from tritium.compiler.compiler import ASTSource, compile

prof = pytest.importorskip("tritium_profiler")
prof_plugin = pytest.importorskip("tritium_profiler.plugin")

ROOT = Path(__file__).resolve().parents[2]


@tritium.jit
def padd(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tritium.jit
def pscale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


SIG = "*fp32,*fp32,*fp32,i32"


@pytest.fixture(scope="module")
def kernels():
    return (compile(ASTSource(padd, SIG, {"BLOCK": 32}), target="interpreter"),
            compile(ASTSource(pscale, "*fp32,*fp32,i32", {"BLOCK": 32}), target="interpreter"))


@pytest.fixture
def profiler():
    """A clean, stopped profiler before and after; the previous settings come back."""
    was = prof.enabled()
    saved = (prof_plugin._S.sync, prof_plugin._S.trace_path, prof_plugin._S.max_events)
    prof.stop()
    prof.reset()
    yield prof
    prof.stop()
    prof.reset()
    prof_plugin._S.sync, prof_plugin._S.trace_path, prof_plugin._S.max_events = saved
    if was:
        prof_plugin._S.enabled = True


def launch_both(kernels, n_add, n_scale, n=100):
    add, scale = kernels
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    for _ in range(n_add):
        add[(4,)](x, y, out, n)
    if n_add:
        np.testing.assert_allclose(out, x + y)
    for _ in range(n_scale):
        scale[(4, 1)](x, out, n)
    if n_scale:
        np.testing.assert_allclose(out, 2 * x)


def test_entry_point_and_registration():
    eps = {ep.name: ep.value for ep in entry_points(group="tritium")}
    assert eps.get("profiler") == "tritium_profiler.plugin"
    assert "profiler" not in plugins.unavailable_plugins()
    assert plugins.get_plugin_manager().get_plugin("profiler") is prof_plugin


def test_disabled_records_nothing(profiler, kernels):
    launch_both(kernels, 2, 1)
    assert profiler.stats() == {} and profiler.events() == []


def test_counts_two_kernels_and_writes_a_chrome_trace(profiler, kernels, tmp_path):
    trace = tmp_path / "sub" / "trace.json"
    profiler.start(trace=str(trace))
    launch_both(kernels, 3, 2)
    profiler.stop()
    launch_both(kernels, 1, 1)  # after stop: not counted
    st = profiler.stats()
    assert sorted(st) == ["padd", "pscale"]
    assert st["padd"].calls == 3 and st["pscale"].calls == 2
    for s in st.values():
        assert 0 < s.min_ns <= s.mean_ns <= s.max_ns and s.total_ns >= s.max_ns
    buf = io.StringIO()
    profiler.report(file=buf)
    table = buf.getvalue()
    assert "kernel" in table and "calls" in table and "total ms" in table and "mean us" in table
    rows = {ln.split()[0]: ln.split() for ln in table.splitlines() if ln.split()[:1] in (["padd"], ["pscale"])}
    assert rows["padd"][1] == "3" and rows["pscale"][1] == "2"
    assert f"trace written to {trace}" in table

    data = json.loads(trace.read_text())
    xs = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    assert len(xs) == 5
    assert [e["name"] for e in xs] == ["padd"] * 3 + ["pscale"] * 2
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and e["dur"] > 0
        assert e["pid"] == os.getpid() and isinstance(e["tid"], int)
        assert e["args"]["kernel"] == e["name"] and e["args"]["backend"] == "interpreter"
    assert [e["args"]["grid"] for e in xs] == [[4, 1, 1]] * 5
    assert all(b["ts"] >= a["ts"] + a["dur"] for a, b in zip(xs, xs[1:]))  # sequential launches don't overlap


def test_start_keeps_counting_until_reset(profiler, kernels):
    profiler.start()
    launch_both(kernels, 1, 0)
    profiler.stop()
    profiler.start()
    launch_both(kernels, 1, 0)
    assert profiler.stats()["padd"].calls == 2
    profiler.reset()
    assert profiler.stats() == {}


def test_max_events_caps_the_trace_not_the_counts(profiler, kernels):
    profiler.start(max_events=2)
    launch_both(kernels, 3, 0)
    assert profiler.stats()["padd"].calls == 3
    d = profiler.trace_dict()
    assert len([e for e in d["traceEvents"] if e["ph"] == "X"]) == 2 and d["otherData"]["dropped_events"] == 1


def test_sync_calls_the_driver_synchronize(profiler, kernels, monkeypatch):
    from tritium.runtime import driver

    calls = []
    monkeypatch.setattr(driver.get_driver("interpreter"), "synchronize", lambda: calls.append(1), raising=False)
    profiler.start(sync=True)
    launch_both(kernels, 2, 0)
    assert len(calls) == 4  # before and after each launch
    profiler.stop()
    profiler.start(sync=False)
    launch_both(kernels, 2, 0)
    assert len(calls) == 4


SCRIPT = textwrap.dedent('''
    import numpy as np
    import tritium
    import tritium.language as tl


    @tritium.jit
    def k_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


    @tritium.jit
    def k_neg(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=m), mask=m)


    x = np.arange(64, dtype=np.float32)
    out = np.empty_like(x)
    for _ in range(4):
        k_add[(2,)](x, x, out, 64, BLOCK=32)
    for _ in range(7):
        k_neg[(1,)](x, out, 64, BLOCK=64)
    assert (out == -x).all()
    print("SCRIPT DONE")
''')


def test_env_enables_and_reports_at_exit(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "trace.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITIUM_", "TRITON_"))}
    env.update(TRITIUM_PROFILE="1", TRITIUM_PROFILE_TRACE=str(trace), TRITIUM_TARGET="interpreter",
               TRITIUM_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "SCRIPT DONE" in r.stdout and "tritium profiler" not in r.stdout  # the table goes to stderr
    rows = {ln.split()[0]: ln.split() for ln in r.stderr.splitlines() if ln.split()[:1] in (["k_add"], ["k_neg"])}
    assert rows["k_add"][1] == "4" and rows["k_neg"][1] == "7", r.stderr
    data = json.loads(trace.read_text())
    names = [e["name"] for e in data["traceEvents"] if e["ph"] == "X"]
    assert names.count("k_add") == 4 and names.count("k_neg") == 7
    assert {tuple(e["args"]["grid"]) for e in data["traceEvents"] if e["ph"] == "X"} == {(2, 1, 1), (1, 1, 1)}

    # without TRITIUM_PROFILE nothing is printed or written
    env.pop("TRITIUM_PROFILE")
    trace.unlink()
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tritium profiler" not in r.stderr and not trace.exists()
