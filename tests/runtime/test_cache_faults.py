"""Fault injection on the file cache (issue 9): a writer killed at every step of a write, a full disk, a read-only
cache directory, a cache directory that cannot be one, an entry that claims another key, many writers at once.  Each time the kernel still
runs and computes the right thing (recompiling where needed) and nothing corrupt is ever loaded."""
from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tritium.compiler import cache as fcache
from tritium.compiler.compiler import compile
from tests.runtime.test_cache import (RACE_SCRIPT, RUN_SCRIPT, cdir, entries, expected, launch, load,  # noqa: F401
                                      src_of, write_kernel)

# in the child: die (as SIGKILL would: no cleanup) at the STEP-th step of a cache write -- each file of the entry (a
# stage file, metadata.json) just opened (empty) and just closed (whole), and just before and after the rename that
# publishes the entry
KILL_PRELUDE = '''
import builtins, os, sys
_step, _n = int(os.environ["KILL_AT"]), [0]
def _tick():
    _n[0] += 1
    if _n[0] == _step:
        os._exit(9)
_open, _rename = builtins.open, os.rename
class _Ticking:
    def __init__(self, f):
        self.f = f
    def __enter__(self):
        return self.f.__enter__()
    def __exit__(self, *a):
        r = self.f.__exit__(*a)
        _tick()
        return r
    def __getattr__(self, name):
        return getattr(self.f, name)
def open_(path, mode="r", *k, **kw):
    f = _open(path, mode, *k, **kw)
    if "w" in mode and ".tmp-" in str(path):
        _tick()
        return _Ticking(f)
    return f
def rename(a, b, *k, **kw):
    if ".tmp-" in str(a):
        _tick()
    _rename(a, b, *k, **kw)
    if ".tmp-" in str(a):
        _tick()
builtins.open, os.rename = open_, rename
'''


def _run(script, env, extra=None):
    r = subprocess.run([sys.executable, "-c", script], env={**env, **(extra or {})}, capture_output=True, text=True,
                       timeout=300)
    return r


@pytest.mark.parametrize("step", range(1, 10))
def test_writer_killed_at_every_step(cdir, tmp_path, step):  # noqa: F811
    path = write_kernel(tmp_path / "src")
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(cdir), "TRITIUM_TARGET": "interpreter"}
    script = RUN_SCRIPT.format(path=str(path))
    r = _run(KILL_PRELUDE + script, env, {"KILL_AT": str(step)})
    assert r.returncode in (9, 0), r.stderr  # 0: the write has fewer steps than this one
    killed = r.returncode == 9
    # whatever the dead writer left, the next process runs the kernel right and loads nothing corrupt
    r = _run(script, env)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["ok"] and res["stats"]["corrupt"] == 0
    (e,) = entries(cdir)
    assert e["valid"] and e["complete"] and fcache.FileCache(cdir).get(e["key"]) is not None
    published = res["stats"]["hits"] == 1  # the dead writer's rename had happened
    assert published == (not killed or step >= _steps_before_publish(cdir, env, script))
    leftovers = [p for p in cdir.iterdir() if p.name.startswith(".tmp-")]
    assert len(leftovers) == (0 if published else 1)
    if leftovers:  # an hour later, the next store sweeps the dead writer's directory away
        os.utime(leftovers[0], (leftovers[0].stat().st_atime, leftovers[0].stat().st_mtime - 7200))
        fcache.FileCache(cdir).put("0" * 64, {"ttir": "x"}, {"name": "k"})
        assert not leftovers[0].exists()


def _steps_before_publish(cdir, env, script) -> int:
    """The step just after the rename (a kill there leaves a published entry), counted in a clean write."""
    probe = cdir.parent / "probe-cache"
    shutil.rmtree(probe, ignore_errors=True)
    counter = KILL_PRELUDE.replace("os._exit(9)", "pass").replace(
        "builtins.open, os.rename = open_, rename",
        "builtins.open, os.rename = open_, rename\n"
        "_r = rename\n"
        "def rename(a, b, *k, **kw):\n"
        "    _r(a, b, *k, **kw)\n"
        "    if '.tmp-' in str(a): print('PUBLISHED_AT', _n[0])\n"
        "os.rename = rename\n")
    r = _run(counter + script, {**env, "TRITIUM_CACHE_DIR": str(probe)}, {"KILL_AT": "0"})
    line = next(x for x in r.stdout.splitlines() if x.startswith("PUBLISHED_AT"))
    return int(line.split()[1])


class _FullDisk(io.RawIOBase):
    def writable(self):
        return True

    def write(self, b):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_runs_the_kernel_and_stores_nothing(cdir, tmp_path, monkeypatch):  # noqa: F811
    mod = load(write_kernel(tmp_path / "src"))
    real_open = open

    def full(path, mode="r", *a, **k):
        if "w" in mode and str(path).startswith(str(cdir)):
            return io.BufferedWriter(_FullDisk()) if "b" in mode else io.TextIOWrapper(io.BufferedWriter(_FullDisk()))
        return real_open(path, mode, *a, **k)

    with monkeypatch.context() as m:  # (only this patch: undo() would also drop the cache dir's variable)
        m.setattr(fcache, "open", full, raising=False)
        x, y, out = launch(mod)
        np.testing.assert_allclose(out, expected(x, y))
        assert entries(cdir) == [] and not [p for p in cdir.iterdir()], "a partial entry or temporary left behind"
    k = compile(src_of(mod), target="interpreter")  # space again: stored, then hit
    assert not k.from_cache and compile(src_of(mod), target="interpreter").from_cache


def test_cache_dir_that_cannot_be_one(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(blocker))
    mod = load(write_kernel(tmp_path / "src"))
    x, y, out = launch(mod)
    np.testing.assert_allclose(out, expected(x, y))
    assert blocker.read_text().startswith("a file")


def test_entry_claiming_another_key_is_not_loaded(cdir, tmp_path):  # noqa: F811
    m1 = load(write_kernel(tmp_path / "a", op="+"))
    m2 = load(write_kernel(tmp_path / "b", op="-", name="kmod2"))
    k1, k2 = compile(src_of(m1), target="interpreter"), compile(src_of(m2), target="interpreter")
    e1, e2 = cdir / k1.metadata["hash"], cdir / k2.metadata["hash"]
    shutil.rmtree(e2)
    shutil.copytree(e1, e2)  # the '+' kernel's valid files under the '-' kernel's key
    corrupt = fcache.stats["corrupt"]
    k = compile(src_of(m2), target="interpreter")
    assert not k.from_cache and fcache.stats["corrupt"] == corrupt + 1
    x, y, out = launch(m2)
    np.testing.assert_allclose(out, expected(x, y, op="-"))


def test_eight_concurrent_writers(cdir, tmp_path):  # noqa: F811
    n = 8
    path = write_kernel(tmp_path / "src")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(cdir), "TRITIUM_TARGET": "interpreter"}
    procs = [subprocess.Popen([sys.executable, "-c", RACE_SCRIPT.format(n=n), str(barrier), str(path), str(i)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results) and len({r["hash"] for r in results}) == 1
    assert all(r["stats"]["corrupt"] == 0 for r in results)
    (e,) = entries(cdir)
    assert e["valid"] and e["complete"]
    assert not [p for p in cdir.iterdir() if p.name.startswith(".")], "temporary directories left behind"


@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS])
def test_read_only_cache_directory(cdir, tmp_path, monkeypatch, err):  # noqa: F811
    """A cache directory that refuses every write (a read-only mount, or one without write permission: the tests
    run as root, which ignores permissions, so the refusal is injected where the cache writes -- mkdtemp, mkdir,
    rename, open for writing): entries already there are hits, a new kernel compiles and runs without storing, and
    a corrupt entry that cannot be moved aside is recompiled, never loaded."""
    import tempfile

    a = load(write_kernel(tmp_path / "a"))
    assert not compile(src_of(a), target="interpreter").from_cache  # stored while the directory was writable
    root = str(cdir)
    real_open, real_mkdtemp, real_mkdir, real_rename = open, tempfile.mkdtemp, os.mkdir, os.rename

    def refuse(path):
        raise OSError(err, os.strerror(err), str(path))

    def ro_open(path, mode="r", *args, **kw):
        if any(c in mode for c in "wax+") and str(path).startswith(root):
            refuse(path)
        return real_open(path, mode, *args, **kw)

    def ro_mkdtemp(*args, dir=None, **kw):
        return refuse(dir) if str(dir).startswith(root) else real_mkdtemp(*args, dir=dir, **kw)

    def ro_mkdir(path, *args, **kw):
        return refuse(path) if str(path).startswith(root) else real_mkdir(path, *args, **kw)

    def ro_rename(src, dst, *args, **kw):
        return refuse(src) if str(src).startswith(root) else real_rename(src, dst, *args, **kw)

    before = sorted(str(p) for p in cdir.rglob("*"))
    with monkeypatch.context() as m:
        m.setattr(fcache, "open", ro_open, raising=False)
        m.setattr(tempfile, "mkdtemp", ro_mkdtemp)
        m.setattr(os, "mkdir", ro_mkdir)
        m.setattr(os, "rename", ro_rename)
        assert compile(src_of(a), target="interpreter").from_cache
        b = load(write_kernel(tmp_path / "b", op="-", name="kmod2"))
        with pytest.warns(RuntimeWarning, match="could not write the kernel cache .*(Permission denied|Read-only)"):
            assert not compile(src_of(b), target="interpreter").from_cache
        x, y, out = launch(b)
        np.testing.assert_allclose(out, expected(x, y, op="-"))
        assert sorted(str(p) for p in cdir.rglob("*")) == before, "something was written to a read-only cache"
        for f in cdir.rglob("*"):  # now damage a's entry (as the disk would, not through the cache)
            if f.is_file() and not f.name.endswith(".json"):
                data = f.read_bytes()
                with real_open(f, "wb") as fh:
                    fh.write(data[: len(data) // 2])
        k = compile(src_of(a), target="interpreter")
        assert not k.from_cache, "a truncated entry was loaded"
        x, y, out = launch(load(write_kernel(tmp_path / "a3", name="kmod3")))
        np.testing.assert_allclose(out, expected(x, y))
