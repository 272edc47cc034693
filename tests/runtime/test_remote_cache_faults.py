"""The remote kernel cache when Redis goes away mid-run, and when several processes write one key at once (a real
redis-server on 127.0.0.1, as in test_remote_cache.py)."""
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import remote_cache as rc

from .. import redis_server
from .test_remote_cache import COMPILE, ROOT

redis = pytest.importorskip("redis", reason="the remote-cache extra is not installed: pip install 'tritium[dev]'")


def _start_server(tmp_path):
    try:
        return redis_server.start(str(tmp_path))
    except RuntimeError as e:
        if redis_server.binary() is None:
            pytest.skip(str(e))
        raise


@tritium.jit
def axpy(x, y, o, n, A: tl.constexpr, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(o + i, tl.load(x + i, mask=i < n) * A + tl.load(y + i, mask=i < n), mask=i < n)


def test_redis_stopped_mid_run(tmp_path, monkeypatch):
    proc, url = _start_server(tmp_path)
    try:
        monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "local"))
        monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
        monkeypatch.setenv(rc.ENV_URL, url)
        monkeypatch.setenv(rc.ENV_TIMEOUT, "0.5")
        monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
        before = dict(rc.stats)
        x, y = np.arange(200, dtype=np.float32), np.ones(200, dtype=np.float32)
        o = np.zeros_like(x)
        axpy[(2,)](x, y, o, 200, A=3, B=128)
        assert np.array_equal(o, x * 3 + 1)
        assert rc.stats["stores"] - before["stores"] == 1  # written through while the server ran
        proc.terminate()
        proc.wait(10)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = time.perf_counter()
            for a in (4, 5):  # two more kernels: the first failure warns, the second does not even ask
                axpy[(2,)](x, y, o, 200, A=a, B=128)
                assert np.array_equal(o, x * a + 1)
            elapsed = time.perf_counter() - t
        msgs = [str(m.message) for m in w if "remote kernel cache" in str(m.message)]
        assert len(msgs) == 1 and "compiling locally" in msgs[0]
        assert rc.stats["errors"] - before["errors"] == 1
        assert elapsed < 30  # one bounded timeout at most, not one per kernel
    finally:
        proc.kill()
        proc.wait(10)


def test_concurrent_writers_of_one_key(tmp_path):
    proc, url = _start_server(tmp_path)
    try:
        script = tmp_path / "compile_add.py"
        script.write_text(COMPILE)
        procs = []
        for i in range(4):  # four "machines" compile the same kernel at once, each with its own local cache
            e = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / f"local{i}"), TRITIUM_REMOTE_CACHE=url,
                     TRITIUM_TARGET="interpreter")
            e.pop("TRITIUM_DISABLE_CACHE", None)
            e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
            procs.append(subprocess.Popen([sys.executable, str(script), "interpreter", "2.0"], env=e,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, out[-2000:] + err[-2000:]
            results.append(json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][7:]))
        assert all(r["ok"] for r in results) and len({r["key"] for r in results}) == 1
        r = redis.Redis.from_url(url)
        (k,) = r.keys("tritium:kernel:*")
        asm, md = rc.unpack(r.get(k), results[0]["key"])  # whoever wrote last, the entry is whole and valid
        assert md["hash"] == results[0]["key"] and md["complete"]
        # and a fifth process loads it
        e = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / "local5"), TRITIUM_REMOTE_CACHE=url,
                 TRITIUM_TARGET="interpreter")
        e.pop("TRITIUM_DISABLE_CACHE", None)
        e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
        p = subprocess.run([sys.executable, str(script), "interpreter", "2.0"], env=e, capture_output=True,
                           text=True, timeout=300)
        last = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
        assert last["from_cache"] and last["remote"]["hits"] == 1 and last["ok"]
    finally:
        proc.kill()
        proc.wait(10)
