"""The on-disk kernel cache (tritium.compiler.cache): keys, atomic entries, corruption, races, the CLI."""
from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tritium
from tritium.compiler.compiler import ASTSource, compile
from tritium.compiler import cache as fcache

KERNEL_FILE = '''
import tritium
import tritium.language as tl

SCALE = {scale}


@tritium.jit
def helper(x):
    return x {op} 1


@tritium.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, helper(x + y) * SCALE, mask=mask)
'''


def write_kernel(dirpath: Path, scale=2, op="+", name="kmod") -> Path:
    dirpath.mkdir(parents=True, exist_ok=True)
    p = dirpath / f"{name}.py"
    p.write_text(KERNEL_FILE.format(scale=scale, op=op))
    return p


_n = [0]


def load(path: Path):
    _n[0] += 1
    spec = importlib.util.spec_from_file_location(f"_cache_test_mod_{_n[0]}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def expected(x, y, scale=2, op="+"):
    s = x + y
    return ((s + 1) if op == "+" else (s - 1)) * scale


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(d))
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    return d


def src_of(mod, block=32):
    return ASTSource(mod.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                     {"BLOCK": block}, {"x_ptr": {"tt.divisibility": 16}})


def launch(mod, n=100, block=32):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, np.float32)
    out = np.zeros(n, np.float32)
    mod.add_kernel[(tritium.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return x, y, out


def entries(d: Path):
    return [e for e in fcache.FileCache(d).entries()]


# --------------------------------------------------------------------------------------------- basics
def test_compile_stores_then_hits(cdir, tmp_path):
    mod = load(write_kernel(tmp_path / "src"))
    k1 = compile(src_of(mod), target="interpreter")
    assert not k1.from_cache
    (e,) = entries(cdir)
    assert e["valid"] and e["complete"] and e["name"] == "add_kernel" and e["stages"] == ["ttir", "npy"]
    assert e["key"] == k1.metadata["hash"]
    k2 = compile(src_of(mod), target="interpreter")
    assert k2.from_cache and k2.asm == k1.asm and k2.metadata == k1.metadata
    meta = json.loads((cdir / e["key"] / "metadata.json").read_text())
    assert meta["format"] == 1 and {f["stage"] for f in meta["files"]} == {"ttir", "npy"}
    for f in meta["files"]:
        assert len(f["sha256"]) == 64 and (cdir / e["key"] / f["file"]).stat().st_size == f["size"]


def test_cache_dir_created_0700(tmp_path, monkeypatch):
    d = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(d))
    old = os.umask(0o022)
    try:
        mod = load(write_kernel(tmp_path / "src"))
        compile(src_of(mod), target="interpreter")
    finally:
        os.umask(old)
    for p in (d, d.parent, d.parent.parent):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    (e,) = entries(d)
    assert stat.S_IMODE((d / e["key"]).stat().st_mode) == 0o700
    assert not [p for p in d.iterdir() if p.name.startswith(".")], "temporary directories left behind"


def test_default_dir_is_home(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITIUM_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert fcache.cache_dir() == tmp_path / ".tritium" / "cache"


def test_disable_cache(cdir, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_DISABLE_CACHE", "1")
    mod = load(write_kernel(tmp_path / "src"))
    compile(src_of(mod), target="interpreter")
    assert not cdir.exists() or not entries(cdir)
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE")
    compile(src_of(mod), target="interpreter", use_cache=False)
    assert not cdir.exists() or not entries(cdir)


# --------------------------------------------------------------------------------------------- corruption
def _one_entry(cdir):
    (e,) = entries(cdir)
    return cdir / e["key"]


@pytest.mark.parametrize("damage", ["truncate", "alter", "delete", "bad_json", "empty_meta"])
def test_damaged_entry_is_recompiled(cdir, tmp_path, damage):
    mod = load(write_kernel(tmp_path / "src"))
    k1 = compile(src_of(mod), target="interpreter")
    entry = _one_entry(cdir)
    npy = entry / "add_kernel.npy"
    if damage == "truncate":
        data = npy.read_bytes()
        npy.write_bytes(data[: len(data) // 2])
    elif damage == "alter":  # same size, one byte changed: only the checksum can tell
        data = bytearray(npy.read_bytes())
        i = data.index(b"def ")
        data[i:i + 4] = b"dEf "
        npy.write_bytes(bytes(data))
    elif damage == "delete":
        npy.unlink()
    elif damage == "bad_json":
        (entry / "metadata.json").write_text("{not json")
    else:
        (entry / "metadata.json").write_text("")
    before = dict(fcache.stats)
    assert fcache.FileCache(cdir).get(entry.name) is None  # detected, never loaded
    assert fcache.stats["corrupt"] == before["corrupt"] + 1
    assert not entry.exists()  # removed
    k2 = compile(src_of(mod), target="interpreter")
    assert not k2.from_cache and k2.asm == k1.asm
    assert _one_entry(cdir).name == entry.name
    # and a launch through the recompiled entry computes the right thing
    x, y, out = launch(mod)
    np.testing.assert_allclose(out, expected(x, y))


def test_truncated_entry_launch_in_fresh_process(cdir, tmp_path):
    path = write_kernel(tmp_path / "src")
    script = RUN_SCRIPT.format(path=str(path))
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(cdir), "TRITIUM_TARGET": "interpreter"}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    entry = _one_entry(cdir)
    npy = entry / "add_kernel.npy"
    npy.write_bytes(npy.read_bytes()[:40])
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["stats"]["corrupt"] == 1 and res["stats"]["hits"] == 0 and res["stats"]["stores"] == 1
    assert res["ok"]


RUN_SCRIPT = '''
import importlib.util, json, sys
import numpy as np
import tritium
from tritium.runtime import cache
spec = importlib.util.spec_from_file_location("kmod", {path!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
n = 100
x = np.arange(n, dtype=np.float32); y = np.full(n, 0.5, np.float32); out = np.zeros(n, np.float32)
mod.add_kernel[(4,)](x, y, out, n, BLOCK=32)
ok = bool(np.allclose(out, ((x + y) + 1) * 2))
heavy = sorted({{m.split(".")[0] for m in sys.modules if m.split(".")[0] in ("mlir", "llvmlite")}})
print(json.dumps({{"ok": ok, "stats": cache.stats, "heavy": heavy,
                  "frontend": "tritium.frontend" in sys.modules}}))
'''


# --------------------------------------------------------------------------------------------- races
RACE_SCRIPT = '''
import importlib.util, json, os, sys, time
barrier, path, me = sys.argv[1], sys.argv[2], sys.argv[3]
import numpy as np
import tritium
from tritium.compiler.compiler import ASTSource, compile
from tritium.runtime import cache
spec = importlib.util.spec_from_file_location("kmod", path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
src = ASTSource(mod.add_kernel, {{"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}},
                {{"BLOCK": 32}}, {{"x_ptr": {{"tt.divisibility": 16}}}})
open(os.path.join(barrier, me), "w").close()
deadline = time.time() + 120
while len(os.listdir(barrier)) < {n} and time.time() < deadline:
    time.sleep(0.001)
k = compile(src, target="interpreter")
n = 100
x = np.arange(n, dtype=np.float32); y = np.full(n, 0.5, np.float32); out = np.zeros(n, np.float32)
k[(4,)](x, y, out, n)
print(json.dumps({{"ok": bool(np.allclose(out, ((x + y) + 1) * 2)), "stats": cache.stats,
                  "hash": k.metadata["hash"]}}))
'''


def test_racing_processes_leave_one_valid_entry(cdir, tmp_path):
    n = 3
    path = write_kernel(tmp_path / "src")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(cdir), "TRITIUM_TARGET": "interpreter"}
    procs = [subprocess.Popen([sys.executable, "-c", RACE_SCRIPT.format(n=n), str(barrier), str(path), str(i)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results)
    assert len({r["hash"] for r in results}) == 1
    (e,) = entries(cdir)
    assert e["valid"] and e["complete"]
    assert fcache.FileCache(cdir).get(e["key"]) is not None  # checksums hold
    assert not [p for p in cdir.iterdir() if p.name.startswith(".")], "temporary directories left behind"
    # every process compiled (none saw the entry before the barrier), exactly one rename won
    assert sum(r["stats"]["stores"] for r in results) + sum(r["stats"]["races"] for r in results) + \
        sum(r["stats"]["hits"] for r in results) == n


def test_put_loses_race_and_keeps_winner(cdir, tmp_path):
    mod = load(write_kernel(tmp_path / "src"))
    k = compile(src_of(mod), target="interpreter")
    entry = _one_entry(cdir)
    before = (entry / "metadata.json").read_bytes()
    races = fcache.stats["races"]
    assert fcache.FileCache(cdir).put(entry.name, dict(k.asm), dict(k.metadata))
    assert fcache.stats["races"] == races + 1
    assert (entry / "metadata.json").read_bytes() == before


# --------------------------------------------------------------------------------------------- keys
def key_of(path, **kw):
    mod = load(path)
    return compile(src_of(mod), target="interpreter", **kw).metadata["hash"], mod


def test_key_changes_with_called_jit_source(cdir, tmp_path):
    k1, m1 = key_of(write_kernel(tmp_path / "a", op="+"))
    k2, m2 = key_of(write_kernel(tmp_path / "b", op="-"))
    assert m1.add_kernel.src == m2.add_kernel.src  # only the callee differs
    assert k1 != k2
    x, y, out = launch(m2)
    np.testing.assert_allclose(out, expected(x, y, op="-"))


def test_key_changes_with_used_global(cdir, tmp_path):
    k1, _ = key_of(write_kernel(tmp_path / "a", scale=2))
    k2, m2 = key_of(write_kernel(tmp_path / "b", scale=3))
    assert k1 != k2
    x, y, out = launch(m2)
    np.testing.assert_allclose(out, expected(x, y, scale=3))


def test_key_changes_with_options_and_specialisation(cdir, tmp_path):
    mod = load(write_kernel(tmp_path / "a"))
    base = compile(src_of(mod), target="interpreter").metadata["hash"]
    assert compile(src_of(mod), target="interpreter", options={"num_warps": 8}).metadata["hash"] != base
    assert compile(src_of(mod, block=64), target="interpreter").metadata["hash"] != base
    s = src_of(mod)
    s.attrs = {}
    assert compile(s, target="interpreter").metadata["hash"] != base
    assert compile(src_of(mod), target="interpreter").metadata["hash"] == base


def test_key_is_path_independent(cdir, tmp_path):
    """The CPU machine fills a cache that a GPU machine with the tree at another path reads."""
    k1, m1 = key_of(write_kernel(tmp_path / "here" / "tree"))
    k2, m2 = key_of(write_kernel(tmp_path / "elsewhere" / "deeper" / "tree"))
    assert m1.add_kernel.file != m2.add_kernel.file
    assert m1.add_kernel.cache_key == m2.add_kernel.cache_key
    assert k1 == k2


def test_key_for_explicit_gpu_target_needs_no_device(cdir, tmp_path):
    mod = load(write_kernel(tmp_path / "a"))
    k90 = compile(src_of(mod), target="cuda:90", until="ttir")
    k80 = compile(src_of(mod), target="cuda:80", until="ttir")
    assert k90.metadata["hash"] != k80.metadata["hash"]
    assert compile(src_of(mod), target="cuda:sm_90", until="ttir").from_cache  # same target spelled otherwise
    partial = [e for e in entries(cdir) if e["target"] == "cuda:90"]
    assert len(partial) == 1 and not partial[0]["complete"] and partial[0]["stages"] == ["ttir"]


def test_jit_constexpr_argument_source_in_key(cdir, tmp_path):
    p = tmp_path / "c"
    p.mkdir()
    body = '''
import tritium
import tritium.language as tl

@tritium.jit
def f(a, b):
    return a {op} b

@tritium.jit
def k(x_ptr, FN: tl.constexpr):
    tl.store(x_ptr, FN(tl.load(x_ptr), 2.0))
'''
    (p / "m1.py").write_text(body.format(op="+"))
    (p / "m2.py").write_text(body.format(op="*"))
    m1, m2 = load(p / "m1.py"), load(p / "m2.py")
    s1 = ASTSource(m1.k, {"x_ptr": "*fp32"}, {"FN": m1.f})
    s2 = ASTSource(m2.k, {"x_ptr": "*fp32"}, {"FN": m2.f})
    assert s1.hash() != s2.hash()


# --------------------------------------------------------------------------------------------- globals
def test_changed_global_raises(cdir, tmp_path):
    mod = load(write_kernel(tmp_path / "a", scale=2))
    launch(mod)
    assert [u[0] for u in mod.add_kernel.used_global_vals] == ["SCALE"]
    launch(mod)  # unchanged: fine
    mod.SCALE = 5
    with pytest.raises(RuntimeError, match=r"Global variable SCALE has changed.*from 2 to 5"):
        launch(mod)
    with pytest.raises(RuntimeError, match="SCALE"):
        launch(mod, block=64)  # a new specialisation is not compiled with the changed value either
    mod.SCALE = 2
    x, y, out = launch(mod)
    np.testing.assert_allclose(out, expected(x, y))


def test_changed_global_of_callee_raises(cdir, tmp_path):
    p = tmp_path / "g"
    p.mkdir()
    (p / "m.py").write_text('''
import tritium
import tritium.language as tl

OFFSET = tl.constexpr(3)

@tritium.jit
def helper(x):
    return x + OFFSET

@tritium.jit
def k(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))
''')
    m = load(p / "m.py")
    x = np.zeros(1, np.float32)
    m.k[(1,)](x)
    assert x[0] == 3
    m.OFFSET = tritium.language.constexpr(4)
    with pytest.raises(RuntimeError, match="OFFSET"):
        m.k[(1,)](x)


def test_locals_shadowing_globals_are_not_recorded(cdir, tmp_path):
    p = tmp_path / "s"
    p.mkdir()
    (p / "m.py").write_text('''
import tritium
import tritium.language as tl

n = 7
BLOCK = 3

@tritium.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    v = tl.load(x_ptr)
    for i in range(2):
        v = v + 1
    tl.store(x_ptr, v)
''')
    m = load(p / "m.py")
    x = np.zeros(1, np.float32)
    m.k[(1,)](x, 5, BLOCK=4)
    assert m.k.used_global_vals == []
    m.n = 8  # a global that the kernel's parameter shadows: changing it is fine
    m.k[(1,)](x, 5, BLOCK=4)
    assert x[0] == 4


# --------------------------------------------------------------------------------------------- CLI
def test_cli_cache_commands(cdir, tmp_path, capsys):
    from tritium.cli import main

    mod = load(write_kernel(tmp_path / "a"))
    compile(src_of(mod), target="interpreter")
    assert main(["cache", "dir"]) == 0
    assert capsys.readouterr().out.strip() == str(cdir)
    assert main(["cache", "ls"]) == 0
    out = capsys.readouterr().out
    assert "1 entry" in out and "add_kernel" in out and "interpreter:cpu" in out and "ttir,npy" in out
    assert main(["cache", "ls", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["entries"]) == 1 and data["entries"][0]["size"] > 0
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert entries(cdir) == []


def test_cli_compile_then_launch_in_fresh_process_hits(cdir, tmp_path):
    """`tritium compile --target interpreter` fills the cache that a later launch (another process) reads:
    the launch neither compiles nor imports MLIR."""
    path = write_kernel(tmp_path / "src")
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(cdir)}
    env.pop("TRITIUM_TARGET", None)
    r = subprocess.run([sys.executable, "-m", "tritium", "compile", f"{path}:add_kernel",
                        "-s", "*fp32:16,*fp32:16,*fp32:16,i32", "-c", "BLOCK=32", "--target", "interpreter",
                        "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[stored]" in r.stdout
    env["TRITIUM_TARGET"] = "interpreter"
    # n=100 is not divisible by 16, so the CLI's signature gives n no ':16'; numpy buffers are 16-aligned
    r = subprocess.run([sys.executable, "-c", RUN_SCRIPT.format(path=str(path))], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["ok"] and res["stats"]["hits"] == 1 and res["stats"]["misses"] == 0, res
    assert res["heavy"] == [] and not res["frontend"], res
