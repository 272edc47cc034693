"""tritium.autotune / tritium.heuristics / tritium.Config on the interpreter.

Timing assertions only compare configs whose costs differ by well over 10x (loop trip counts of 16 vs 1024),
never absolute times, so a loaded machine does not make them flake.
"""
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.runtime import driver
from tritium.runtime.autotuner import Autotuner, Heuristics
from tritium.runtime.precompile import PrecompileResult


def _ready():
    try:
        from tritium.frontend import make_ttir  # noqa: F401

        return "interpreter" in driver.backends()
    except ImportError:
        return False


pytestmark = pytest.mark.skipif(not _ready(), reason="frontend or interpreter backend not installed")


@pytest.fixture(autouse=True)
def _interp(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "0")  # the precompile tests turn it on
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "2")  # workers whatever the load (the test of the default unsets it)
    for v in ("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING", "TRITIUM_CACHE_AUTOTUNING",
              "TRITON_CACHE_AUTOTUNING"):
        monkeypatch.delenv(v, raising=False)


# ------------------------------------------------------------------------------------------- kernels
@triton.jit
def loop_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """One program sums x in a loop of cdiv(n, BLOCK) iterations: BLOCK=16 loops 64x more than BLOCK=1024."""
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def scale2(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def desc_scale2(x_desc, y_desc, BLOCK: tl.constexpr):
    """Through host tensor descriptors whose block shape a config's pre_hook sets (Liger-Kernel's pattern)."""
    pid = tl.program_id(0)
    y_desc.store([pid * BLOCK], x_desc.load([pid * BLOCK]) * 2)


@triton.jit
def atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def add_one_inplace(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def even_scale2(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN:  # unmasked: the interpreter raises OutOfBoundsError if EVEN is wrongly true
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
    else:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def needs_big_block(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK too small")
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


def _grid(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


def _cheap_bench(fn, quantiles=None):
    """A do_bench that runs fn once (tests that do not care which config wins stay fast)."""
    fn()
    s = time.perf_counter()
    fn()
    t = (time.perf_counter() - s) * 1e3
    return [t, t, t]


CONFIGS_16_1024 = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 1024})]


# ------------------------------------------------------------------------------------------- Config
def test_config_all_kwargs_and_str():
    c = triton.Config({"BLOCK": 128, "GROUP": 8}, num_warps=8, num_stages=2)
    assert c.all_kwargs() == {"BLOCK": 128, "GROUP": 8, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert str(c) == "BLOCK: 128, GROUP: 8, num_warps: 8, num_ctas: 1, num_stages: 2, maxnreg: None"
    assert triton.Config({"BLOCK": 1}, maxnreg=128).all_kwargs()["maxnreg"] == 128
    assert c == triton.Config({"BLOCK": 128, "GROUP": 8}, num_warps=8, num_stages=2)
    assert len({c, triton.Config({"BLOCK": 128, "GROUP": 8}, num_warps=8, num_stages=2)}) == 1


# ------------------------------------------------------------------------------------------- tuning
def test_autotune_picks_the_faster_config():
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], warmup=1, rep=5)(loop_sum)
    assert isinstance(k, Autotuner) and k.base_fn is loop_sum
    x = np.ones(16384, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    k[(1,)](x, out, x.size)
    assert out[0] == 16384.0
    assert k.best_config.kwargs == {"BLOCK": 1024}
    t = {c.kwargs["BLOCK"]: v for c, v in k.configs_timings.items()}
    assert set(t) == {16, 1024}
    assert len(t[16]) == 3 and t[16][0] > t[1024][0]  # [median, p20, p80]
    assert k.bench_time > 0 and k.bench_count == 1


def test_best_config_remembered_per_key():
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    x = np.arange(1000, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(1000)](x, out, 1000)
    assert k.bench_count == 1
    np.testing.assert_array_equal(out, x * 2)
    k[_grid(1000)](x, out, 1000)  # same key: no benchmark
    assert k.bench_count == 1 and len(k.cache) == 1
    x2 = np.arange(500, dtype=np.float32)
    out2 = np.empty_like(x2)
    k[_grid(500)](x2, out2, 500)  # new key value
    assert k.bench_count == 2 and len(k.cache) == 2
    np.testing.assert_array_equal(out2, x2 * 2)
    k[_grid(500)](x2.astype(np.float64), out2.astype(np.float64), 500)  # same n, new dtype: new key
    assert k.bench_count == 3
    dev = "interpreter::0"  # the device tuned on (backend:arch:index): tuned again on another one
    assert sorted(k.cache) == sorted([(1000, "float32", "float32", dev), (500, "float32", "float32", dev),
                                      (500, "float64", "float64", dev)])


def test_single_config_does_not_benchmark():
    calls = []
    k = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"],
                        do_bench=lambda fn, quantiles=None: calls.append(1) or [1.0] * 3)(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, x * 2)
    assert calls == [] and k.best_config.kwargs == {"BLOCK": 64}


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    cap = capsys.readouterr()
    assert "autotuning for function scale2" in cap.out
    assert f"best config selected: {k.best_config};" in cap.out
    assert "finished after" in cap.out
    assert "2/2 configs" in cap.err  # the progress bar
    k[_grid(100)](x, out, 100)
    assert "autotuning" not in capsys.readouterr().out  # cached: nothing printed


def test_conflicting_meta_parameters():
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        k[_grid(100)](x, out, 100, BLOCK=64)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        k[_grid(100)](x, out, 100, 64)
    k2 = triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=2),
                                  triton.Config({"BLOCK": 32}, num_warps=2)], key=["n"], do_bench=_cheap_bench)(scale2)
    with pytest.raises(ValueError, match="num_warps"):
        k2[_grid(100)](x, out, 100, num_warps=4)


def test_bad_key_and_hook_names():
    with pytest.raises(ValueError, match="key 'm' is not a parameter"):
        triton.autotune(configs=CONFIGS_16_1024, key=["m"])(scale2)
    with pytest.raises(ValueError, match="reset_to_zero names 'y'"):
        triton.autotune(configs=CONFIGS_16_1024, key=["n"], reset_to_zero=["y"])(scale2)
    with pytest.raises(ValueError, match="restore_value names 'y'"):
        triton.autotune(configs=CONFIGS_16_1024, key=["n"], restore_value="y")(scale2)


def test_static_assert_failure_means_infinite_time():
    k = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 128})], key=["n"],
                        do_bench=_cheap_bench)(needs_big_block)
    x = np.arange(300, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(300)](x, out, 300)
    assert k.best_config.kwargs == {"BLOCK": 128}
    assert k.configs_timings[triton.Config({"BLOCK": 16})] == [float("inf")] * 3
    np.testing.assert_array_equal(out, x * 2)


def test_warmup_compiles_every_config():
    k = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])(scale2)
    kernels = k.warmup("*fp32", "*fp32", 100, grid=(1,))
    assert len(kernels) == 2 and all(isinstance(c, triton.CompiledKernel) for c in kernels)


# ------------------------------------------------------------------------------------------- pruning
def test_prune_configs_by_early_config_prune():
    seen = {}

    def early(configs, named_args, **kwargs):
        seen["names"] = sorted(named_args)
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]

    configs = [triton.Config({"BLOCK": b}) for b in (16, 32, 256, 512)]
    k = triton.autotune(configs=configs, key=["n"], do_bench=_cheap_bench,
                        prune_configs_by={"early_config_prune": early})(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    assert seen["names"] == ["n", "out_ptr", "x_ptr"]
    assert sorted(c.kwargs["BLOCK"] for c in k.configs_timings) == [16, 32]
    np.testing.assert_array_equal(out, x * 2)


def test_prune_configs_by_perf_model_top_k():
    calls = []

    def perf_model(**kw):
        calls.append(sorted(kw))
        return abs(kw["BLOCK"] - 64)  # estimated: 64 best, then 32, then 16, then 128

    configs = [triton.Config({"BLOCK": b}) for b in (16, 32, 64, 128, 1024)]
    k = triton.autotune(configs=configs, key=["n"], do_bench=_cheap_bench,
                        prune_configs_by={"perf_model": perf_model, "top_k": 2})(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    assert sorted(c.kwargs["BLOCK"] for c in k.configs_timings) == [32, 64]
    assert "BLOCK" in calls[0] and "n" in calls[0] and "num_warps" in calls[0]
    k2 = triton.autotune(configs=configs, key=["n"], do_bench=_cheap_bench,
                         prune_configs_by={"perf_model": perf_model, "top_k": 0.6})(scale2)
    k2[_grid(100)](x, out, 100)
    assert sorted(c.kwargs["BLOCK"] for c in k2.configs_timings) == [16, 32, 64]
    with pytest.raises(ValueError, match="unknown prune_configs_by"):
        triton.autotune(configs=configs, key=["n"], prune_configs_by={"topk": 2})(scale2)


# ------------------------------------------------------------------------------------------- hooks
def _launch_atomic(k, x, out):
    n = int(np.prod(x.shape))
    k[_grid(n)](x, out, n)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_reset_to_zero_keeps_accumulator_correct(lib):
    x = np.ones(1000, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    if lib == "torch":
        torch = pytest.importorskip("torch")
        x, out = torch.from_numpy(x), torch.zeros(1, dtype=torch.float32)
    configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]
    k = triton.autotune(configs=configs, key=["n"], reset_to_zero=["out_ptr"], warmup=1, rep=3)(atomic_sum)
    _launch_atomic(k, x, out)
    assert float(out[0]) == 1000.0  # benchmark runs accumulated, but were zeroed before the real launch
    # the test can fail: without reset_to_zero the benchmark runs leave their sums behind
    k2 = triton.autotune(configs=configs, key=["n"], warmup=1, rep=3)(atomic_sum)
    out2 = out * 0
    _launch_atomic(k2, x, out2)
    assert float(out2[0]) > 1000.0


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_restore_value(lib):
    x = np.arange(300, dtype=np.float32)
    if lib == "torch":
        torch = pytest.importorskip("torch")
        x = torch.arange(300, dtype=torch.float32)
    orig = np.array(np.asarray(x), copy=True)
    configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]
    k = triton.autotune(configs=configs, key=["n"], restore_value=["x_ptr"], warmup=1, rep=3)(add_one_inplace)
    k[_grid(300)](x, 300)
    np.testing.assert_array_equal(np.asarray(x), orig + 1)  # exactly one increment survives
    k[_grid(300)](x, 300)  # cached: a plain launch
    np.testing.assert_array_equal(np.asarray(x), orig + 2)
    y = np.arange(300, dtype=np.float32)
    k2 = triton.autotune(configs=configs, key=["n"], warmup=1, rep=3)(add_one_inplace)
    k2[_grid(300)](y, 300)
    assert (y > orig + 1).all()  # without restore_value the benchmark runs' increments remain


def test_user_pre_and_post_hooks_and_config_pre_hook():
    events = []
    cfg_hook = lambda nargs: events.append(("config", nargs["BLOCK"]))  # noqa: E731
    configs = [triton.Config({"BLOCK": 64}, pre_hook=cfg_hook), triton.Config({"BLOCK": 128})]
    k = triton.autotune(configs=configs, key=["n"], do_bench=_cheap_bench,
                        pre_hook=lambda kw, reset_only=False: events.append(("pre", reset_only)),
                        post_hook=lambda kw, exception: events.append(("post", exception)))(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    assert ("config", 64) in events and ("pre", False) in events and ("post", None) in events
    assert ("pre", True) in events  # reset_only call after tuning, as Triton does


# ------------------------------------------------------------------------------------------- disk cache
def test_disk_cache_in_process(tmp_path):
    def make():
        return triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench,
                               cache_results=True)(scale2)

    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k1 = make()
    k1[_grid(100)](x, out, 100)
    assert k1.bench_count == 1
    files = list((tmp_path / "cache" / "autotune").glob("scale2-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert sorted(data["timings"]) == sorted(str(c) for c in CONFIGS_16_1024)
    assert data["best_config"] == str(k1.best_config)
    k2 = make()  # a fresh autotuner (as in a new process) reads the file
    k2[_grid(100)](x, out, 100)
    assert k2.bench_count == 0 and k2.best_config == k1.best_config
    np.testing.assert_array_equal(out, x * 2)
    files[0].write_text("{not json")  # corrupt: benchmark again, rewrite
    k3 = make()
    k3[_grid(100)](x, out, 100)
    assert k3.bench_count == 1
    assert json.loads(files[0].read_text())["best_config"] == str(k3.best_config)
    k4 = make()
    k4[_grid(50)](x, out, 50)  # another key: another file
    assert k4.bench_count == 1 and len(list((tmp_path / "cache" / "autotune").glob("scale2-*.json"))) == 2


def test_an_added_config_is_measured_alone(tmp_path):
    # the file is keyed by kernel and tuning key, not by the config list: adding a config keeps the others'
    # timings, and only the new one is benchmarked
    measured = []

    def bench(fn, quantiles=None):
        measured.append(1)
        return _cheap_bench(fn, quantiles=quantiles)

    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k1 = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=bench, cache_results=True)(scale2)
    k1[_grid(100)](x, out, 100)
    assert len(measured) == len(CONFIGS_16_1024)
    more = CONFIGS_16_1024 + [triton.Config({"BLOCK": 32})]
    measured.clear()
    k2 = triton.autotune(configs=more, key=["n"], do_bench=bench, cache_results=True)(scale2)
    k2[_grid(100)](x, out, 100)
    assert len(measured) == 1 and k2.bench_count == 1  # only BLOCK=32
    assert set(map(str, k2.configs_timings)) == set(map(str, more))
    np.testing.assert_array_equal(out, x * 2)
    (f,) = (tmp_path / "cache" / "autotune").glob("scale2-*.json")
    assert len(json.loads(f.read_text())["timings"]) == len(more)
    measured.clear()
    k3 = triton.autotune(configs=more, key=["n"], do_bench=bench, cache_results=True)(scale2)
    k3[_grid(100)](x, out, 100)
    assert measured == [] and k3.best_config == k2.best_config


def test_disable_cache_env_skips_the_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_DISABLE_CACHE", "1")
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench, cache_results=True)(scale2)
    x = np.arange(100, dtype=np.float32)
    k[_grid(100)](x, np.empty_like(x), 100)
    assert k.bench_count == 1 and not (tmp_path / "cache" / "autotune").exists()


def test_cache_autotuning_env(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_AUTOTUNING", "1")
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    assert k.cache_results
    x = np.arange(100, dtype=np.float32)
    k[_grid(100)](x, np.empty_like(x), 100)
    assert list((tmp_path / "cache" / "autotune").glob("scale2-*.json"))


_SCRIPT = textwrap.dedent('''
    import numpy as np
    import tritium as triton
    import tritium.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 1024})], key=["n"],
                     warmup=1, rep=5, cache_results=True)
    @triton.jit
    def loop_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    if __name__ == "__main__":
        x = np.ones(16384, dtype=np.float32)
        out = np.zeros(1, dtype=np.float32)
        loop_sum[(1,)](x, out, x.size)
        print("RESULT", out[0], "BENCH_COUNT", loop_sum.bench_count, "BEST", loop_sum.best_config.kwargs["BLOCK"])
''')


def _code_hash(fresh: bool = False) -> str:
    """The file cache's hash of tritium's sources; ``fresh``: re-read them (the hash is kept per process)."""
    from tritium.runtime import cache

    if fresh:
        cache._code_hashes.clear()
    return cache.tritium_code_hash(driver.get_compiler("interpreter"))


def test_disk_cache_reused_by_a_second_process(tmp_path):
    script = tmp_path / "tune.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "TRITIUM_TARGET": "interpreter", "TRITIUM_CACHE_DIR": str(tmp_path / "cache"),
           "TRITIUM_PRINT_AUTOTUNING": "1", "TRITIUM_AUTOTUNE_PRECOMPILE": "0"}

    def run():
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    code_hash = _code_hash(fresh=True)
    first = run()
    assert "finished after" in first and "BENCH_COUNT 1" in first and "RESULT 16384.0" in first
    assert "BEST 1024" in first
    second = run()
    if "finished after" in second and _code_hash(fresh=True) != code_hash:
        pytest.skip("tritium's sources changed between the two processes (another checkout user?)")
    assert "loaded from the autotune cache" in second and "finished after" not in second
    assert "BENCH_COUNT 0" in second and "RESULT 16384.0" in second and "BEST 1024" in second


# ------------------------------------------------------------------------------------------- precompile
# Each precompile test uses configs / specialisations no other test compiles: configs already compiled in this
# process are not sent to workers.
def test_parallel_precompile_in_workers(monkeypatch):
    from tritium.runtime import cache

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    # configs no other test compiles: the main process cannot have them in memory
    k = triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 512})], key=["n"],
                        do_bench=_cheap_bench)(scale2)
    x = np.arange(777, dtype=np.float32)
    out = np.empty_like(x)
    code_hash = _code_hash(fresh=True)  # what this process and the workers will both key compilations with
    hits = cache.stats["hits"]
    k[_grid(777)](x, out, 777)
    assert k.last_precompile.mode == "parallel", k.last_precompile
    assert k.last_precompile.ok == 2 and k.last_precompile.failed == 0
    np.testing.assert_array_equal(out, x * 2)
    # the cache dir is this test's own, empty before: both kernels came from the workers through the file cache
    if cache.stats["hits"] - hits != 2 and _code_hash(fresh=True) != code_hash:
        pytest.skip("tritium's sources changed while the test ran (another checkout user?): keys differ")
    assert cache.stats["hits"] - hits == 2


def test_each_config_is_benchmarked_as_soon_as_a_worker_compiled_it(monkeypatch):
    """Benchmarking overlaps compiling: with one worker and three configs, the first config is benchmarked while
    the worker still has the others to compile (precompile's loop is on the stack), and every config once."""
    import inspect

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "1")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    calls = []

    def bench(fn, quantiles=None):
        calls.append(any(f.function == "precompile" for f in inspect.stack()))
        return _cheap_bench(fn, quantiles)

    cfgs = [triton.Config({"BLOCK": b}) for b in (32768, 65536, 131072)]  # no other test compiles these
    k = triton.autotune(configs=cfgs, key=["n"], do_bench=bench)(scale2)
    x = np.random.default_rng(7).standard_normal(1111).astype(np.float32)
    out = np.empty_like(x)
    k[_grid(1111)](x, out, 1111)
    np.testing.assert_array_equal(out, x * 2)
    assert k.last_precompile.mode == "parallel" and k.last_precompile.ok == 3, k.last_precompile
    assert len(calls) == 3 and calls[0], calls  # benchmarked during the precompile, not after it


def test_an_error_while_benchmarking_stops_the_compile_pool(monkeypatch):
    """A do_bench that raises (not a config's OutOfResources: the user's own error) stops the workers and
    reaches the caller, as it does without precompiling; the next tuning works."""
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "1")

    def broken(fn, quantiles=None):
        raise RuntimeError("the benchmark broke")

    cfgs = [triton.Config({"BLOCK": b}) for b in (8192, 4096, 16384)]
    k = triton.autotune(configs=cfgs, key=["n"], do_bench=broken)(scale2)
    x = np.arange(300, dtype=np.float32)
    out = np.empty_like(x)
    t = time.perf_counter()
    with pytest.raises(RuntimeError, match="the benchmark broke"):
        k[_grid(300)](x, out, 300)
    assert time.perf_counter() - t < 120
    k2 = triton.autotune(configs=cfgs, key=["n"], do_bench=_cheap_bench)(scale2)
    k2[_grid(300)](x, out, 300)
    np.testing.assert_array_equal(out, x * 2)


def test_precompile_runs_each_configs_pre_hook_first(monkeypatch):
    """Liger-Kernel makes its tensor descriptors with a dummy block shape and lets each config's pre_hook set the
    real one: the compile workers must get the descriptors as each config launches them (before, every config was
    compiled for the dummy [1] block, and benchmarking compiled each again: nothing came from the workers)."""
    from tritium.runtime import cache
    from tritium.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)

    def set_block(nargs):
        for name in ("x_desc", "y_desc"):
            nargs[name].block_shape = [nargs["BLOCK"]]

    cfgs = [triton.Config({"BLOCK": b}, pre_hook=set_block) for b in (64, 128)]
    k = triton.autotune(configs=cfgs, key=[], do_bench=_cheap_bench)(desc_scale2)
    x = np.random.default_rng(3).standard_normal(1024).astype(np.float32)
    y = np.full_like(x, np.nan)
    xd, yd = TensorDescriptor.from_tensor(x, [1]), TensorDescriptor.from_tensor(y, [1])
    code_hash = _code_hash(fresh=True)
    hits = cache.stats["hits"]
    k[lambda meta: (1024 // meta["BLOCK"],)](xd, yd)
    np.testing.assert_array_equal(y, x * 2)
    assert k.last_precompile.mode == "parallel" and k.last_precompile.ok == 2, k.last_precompile
    assert xd.block_shape == [k.best_config.kwargs["BLOCK"]]  # the launch's config's hook ran last
    if cache.stats["hits"] - hits != 2 and _code_hash(fresh=True) != code_hash:
        pytest.skip("tritium's sources changed while the test ran (another checkout user?): keys differ")
    assert cache.stats["hits"] - hits == 2  # both configs' kernels, as benchmarked, came from the workers


def test_descriptor_dtypes_are_part_of_the_tuning_key():
    """A config tuned for bf16 / fp16 descriptors is not taken for fp32 ones of the same key values: its tiles can
    be twice too large for shared memory there (Liger-Kernel's fp32 SwiGLU after a 16-bit test in the same
    process failed with OutOfResources). Triton's key holds only tensors' dtypes; tritium's the descriptors' too."""
    from tritium.tools.tensor_descriptor import TensorDescriptor

    def set_block(nargs):
        for name in ("x_desc", "y_desc"):
            nargs[name].block_shape = [nargs["BLOCK"]]

    cfgs = [triton.Config({"BLOCK": b}, pre_hook=set_block) for b in (64, 128)]
    k = triton.autotune(configs=cfgs, key=[], do_bench=_cheap_bench)(desc_scale2)
    rng = np.random.default_rng(4)
    for i, dt in enumerate((np.float16, np.float32, np.float16)):
        x = rng.standard_normal(1024).astype(dt)
        y = np.full_like(x, np.nan)
        xd, yd = TensorDescriptor.from_tensor(x, [1]), TensorDescriptor.from_tensor(y, [1])
        k[lambda meta: (1024 // meta["BLOCK"],)](xd, yd)
        np.testing.assert_array_equal(y, x * 2)
        assert k.bench_count == min(i + 1, 2), dt  # fp16, then fp32 tuned anew; fp16 again: the first tuning
    assert sorted(key[0] for key in k.cache) == ["float16", "float32"]


def test_precompile_default_and_already_compiled(monkeypatch):
    monkeypatch.delenv("TRITIUM_AUTOTUNE_PRECOMPILE")
    k = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                        do_bench=_cheap_bench)(scale2)
    x = np.arange(160, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(160)](x, out, 160)
    assert k.last_precompile == PrecompileResult("serial", reason="parallel precompile is off")  # interpreter default
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    k[_grid(96)](x, out, 96)  # new key, same specialisation (n % 16 == 0): nothing left for workers
    assert k.bench_count == 2
    assert k.last_precompile.reason == "fewer than 2 configs left to compile"


def test_precompile_falls_back_to_serial_for_local_kernels(monkeypatch):
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")

    @triton.jit
    def local_scale3(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3, mask=m)

    k = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                        do_bench=_cheap_bench)(local_scale3)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    assert k.last_precompile.mode == "serial" and "cannot be imported" in k.last_precompile.reason
    np.testing.assert_array_equal(out, x * 3)


def test_precompile_worker_failure_is_not_fatal(monkeypatch):
    from tritium.runtime import precompile

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    # a kernel whose module cannot be imported in a worker: every job fails, tuning still works serially
    monkeypatch.setattr(precompile, "_kernel_locator",
                        lambda fn: precompile.KernelLocator("no_such_module_xyz", fn.__qualname__, None))
    k = triton.autotune(configs=[triton.Config({"BLOCK": 2}), triton.Config({"BLOCK": 4})], key=["n"],
                        do_bench=_cheap_bench)(scale2)
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(100)](x, out, 100)
    assert k.last_precompile.mode == "serial" and "no_such_module_xyz" in k.last_precompile.reason
    np.testing.assert_array_equal(out, x * 2)


# ------------------------------------------------------------------------------------------- heuristics
HEUR_CALLS = []


def _even(args):
    HEUR_CALLS.append((args["n"], args["BLOCK"]))
    return args["n"] % args["BLOCK"] == 0


def test_heuristics_computes_a_constexpr():
    k = triton.heuristics({"EVEN": _even})(even_scale2)
    assert isinstance(k, Heuristics)
    for n in (256, 300):
        HEUR_CALLS.clear()
        x = np.arange(n, dtype=np.float32)
        out = np.empty_like(x)
        k[_grid(n)](x, out, n, BLOCK=64)
        assert HEUR_CALLS == [(n, 64)]
        np.testing.assert_array_equal(out, x * 2)
    # both specialisations were compiled (EVEN True for 256, False for 300)
    keys = [key for per_dev in even_scale2.cache.values() for key in per_dev]
    assert len(keys) >= 2


def test_heuristics_positional_args_and_defaults():
    k = triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"]) // 4,
                           "EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(even_scale2)
    x = np.arange(200, dtype=np.float32)
    out = np.empty_like(x)
    k[lambda meta: (triton.cdiv(200, meta["BLOCK"]),)](x, out, 200)  # BLOCK = 64, EVEN = False
    np.testing.assert_array_equal(out, x * 2)


def test_heuristics_stacked_under_autotune():
    k = triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
                        do_bench=_cheap_bench)(triton.heuristics({"EVEN": _even})(even_scale2))
    HEUR_CALLS.clear()
    x = np.arange(320, dtype=np.float32)  # EVEN for BLOCK=64, not for BLOCK=128
    out = np.empty_like(x)
    k[_grid(320)](x, out, 320)
    assert (320, 64) in HEUR_CALLS and (320, 128) in HEUR_CALLS  # EVEN computed per config
    np.testing.assert_array_equal(out, x * 2)
    assert k.base_fn is even_scale2


def test_heuristics_stacked_over_autotune():
    inner = triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
                            do_bench=_cheap_bench)(even_scale2)
    k = triton.heuristics({"EVEN": lambda a: False})(inner)
    x = np.arange(300, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(300)](x, out, 300)
    np.testing.assert_array_equal(out, x * 2)
    assert inner.best_config is not None


def test_heuristics_with_parallel_precompile(monkeypatch):
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    k = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 256})], key=["n"],
                        do_bench=_cheap_bench)(triton.heuristics({"EVEN": _even})(even_scale2))
    x = np.arange(1600, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(1600)](x, out, 1600)
    assert k.last_precompile.mode == "parallel" and k.last_precompile.ok == 2, k.last_precompile
    np.testing.assert_array_equal(out, x * 2)


def test_relaunch_after_tuning_takes_the_plan_and_still_checks_conflicts(monkeypatch):
    """After tuning, a launch with the same key goes straight to the kernel's launcher with the best config's
    meta-parameters (no tuning-path work); a conflicting meta-parameter still gets the full path's error."""
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    x = np.arange(1000, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(1000)](x, out, 1000)
    full = []
    monkeypatch.setattr(k, "_run", lambda *a: full.append(a) or pytest.fail("the full path was taken"))
    for _ in range(3):
        out.fill(0)
        k[_grid(1000)](x, out, 1000)
        np.testing.assert_array_equal(out, x * 2)
    assert not full and k.bench_count == 1
    monkeypatch.undo()
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        k[_grid(1000)](x, out, 1000, BLOCK=16)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        k[_grid(1000)](x, out, 1000, 16)


def test_use_cuda_graph_benchmarks_through_do_bench_cudagraph(monkeypatch):
    import tritium.runtime.bench as bench  # (tritium.testing re-exports it)

    seen = []
    real = bench.do_bench_cudagraph

    def spy(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
        seen.append(rep)
        return real(fn, rep=rep, quantiles=quantiles, return_mode=return_mode)

    monkeypatch.setattr(bench, "do_bench_cudagraph", spy)
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], use_cuda_graph=True, rep=5)(scale2)
    x = np.arange(300, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(300)](x, out, 300)
    np.testing.assert_array_equal(out, x * 2)
    assert seen == [5, 5]  # each config timed by the graph benchmarker (host timing on the interpreter)


def test_c_relaunch_of_a_tuned_key_with_torch_tensors(monkeypatch):
    """Where the C helper is built, ``k[grid]`` of a tuned key with positional arguments is computed in C (the
    same tuning key and plan as Autotuner._relaunch): the Python relaunch is not called, best_config is set, and
    anything the C path does not handle -- keywords, a new key, a cache the user replaced -- goes to Python."""
    torch = pytest.importorskip("torch")
    speedups = pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    k = triton.autotune(configs=CONFIGS_16_1024, key=["n"], do_bench=_cheap_bench)(scale2)
    x = torch.arange(1000, dtype=torch.float32)
    out = torch.empty_like(x)
    k[_grid(1000)](x, out, 1000)
    assert type(k[_grid(1000)]) is speedups.GridLaunch
    best = k.best_config
    python = []
    real = k._relaunch
    monkeypatch.setattr(k, "_relaunch", lambda *a: python.append(a) or real(*a))
    k.best_config = None
    for _ in range(3):
        out.zero_()
        k[_grid(1000)](x, out, 1000)
        assert torch.equal(out, x * 2)
    assert python == [] and k.best_config is best and k.bench_count == 1
    out.zero_()
    k[_grid(1000)](x, out, n=1000)  # a keyword: the Python relaunch, same plan
    assert len(python) == 1 and torch.equal(out, x * 2) and k.bench_count == 1
    y = torch.arange(700, dtype=torch.float64)
    out2 = torch.empty_like(y)
    k[_grid(700)](y, out2, 700)  # a new key (n, dtypes): tuned in Python
    assert len(python) == 2 and k.bench_count == 2 and torch.equal(out2, y * 2)
    assert k._tuning_key((y, out2, 700), {}) in k._plans
    k[_grid(700)](y, out2, 700)
    assert len(python) == 2
    k.cache = {}  # the user drops the tuning results: tuned again
    k[_grid(700)](y, out2, 700)
    assert len(python) == 3 and k.bench_count == 3 and torch.equal(out2, y * 2)


def test_compile_workers_env(monkeypatch):
    from tritium.runtime.precompile import compile_workers

    monkeypatch.delenv("TRITIUM_COMPILE_WORKERS", raising=False)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert compile_workers() == cpus
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "3")
    assert compile_workers() == 3
    for bad in ("0", "many"):
        monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", bad)
        with pytest.raises(ValueError, match="TRITIUM_COMPILE_WORKERS"):
            compile_workers()


def test_warmup_compiles_the_configs_in_parallel(monkeypatch):
    # kernel.warmup over an autotuner's configs: the workers compile, the main process loads from the file cache
    from tritium.runtime import cache

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "2")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    configs = [triton.Config({"BLOCK": b}) for b in (4, 2048)]  # configs no other test compiles
    k = triton.autotune(configs=configs, key=["n"], do_bench=_cheap_bench)(scale2)
    hits = cache.stats["hits"]
    kernels = k.warmup("*fp32", "*fp32", 999, grid=(1,))
    assert len(kernels) == 2 and k.last_precompile.mode == "parallel", k.last_precompile
    assert k.last_precompile.ok == 2 and cache.stats["hits"] - hits == 2
    x = np.arange(999, dtype=np.float32)
    out = np.empty_like(x)
    k[_grid(999)](x, out, 999)
    np.testing.assert_array_equal(out, x * 2)


def test_parallelism_takes_the_cpus_others_leave_free(monkeypatch):
    """Compilations at once: the free CPUs (a process among busy ones takes what is left, and compiles in itself,
    0, when one CPU or none is free); TRITIUM_COMPILE_WORKERS whatever the load."""
    from tritium.runtime.precompile import busy_cpus, parallelism

    monkeypatch.delenv("TRITIUM_COMPILE_WORKERS", raising=False)
    assert parallelism(32, cpus=16, busy=0.0, peers=1) == 16
    assert parallelism(5, cpus=16, busy=0.3, peers=1) == 5
    assert parallelism(32, cpus=16, busy=11.2, peers=1) == 5  # eleven busy processes on a 16-CPU machine
    assert parallelism(32, cpus=16, busy=14.6, peers=1) == 0
    assert parallelism(32, cpus=2, busy=0.2, peers=1) == 2
    assert parallelism(32, cpus=2, busy=1.0, peers=1) == 0
    assert busy_cpus() >= 0.0
    # one of a parallel job: its share of the CPUs, though the load has not risen yet (they start together)
    assert parallelism(32, cpus=32, busy=0.0, peers=8) == 4
    assert parallelism(32, cpus=32, busy=30.0, peers=8) == 2
    assert parallelism(32, cpus=16, busy=0.0, peers=15) == 0
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "3")
    assert parallelism(32, cpus=16, busy=15.0) == 3 and parallelism(2, cpus=16, busy=15.0) == 2


def test_peer_processes_of_one_job(monkeypatch):
    """pytest-xdist's workers and torchrun's ranks on a node say how many processes share the CPUs."""
    from tritium.runtime.precompile import peer_processes

    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert peer_processes() == 1
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "15")
    assert peer_processes() == 15
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "not a number")
    assert peer_processes() == 8


def test_compile_pool_outlives_a_tuning(monkeypatch):
    """The workers of one tuning compile the next one's configs (their imports paid once); a changed
    environment (here the cache directory, which the workers write to) gets a fresh pool."""
    from tritium.runtime import precompile

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "1")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    rng = np.random.default_rng(11)
    pids = []
    # configs and dtypes no other test compiles (a specialisation in this process's memory is not sent to workers)
    for dtype in (np.float32, np.float64, np.int32):
        if dtype == np.int32:  # a changed environment: here the cache directory, which the workers write to
            monkeypatch.setenv("TRITIUM_CACHE_DIR", os.environ["TRITIUM_CACHE_DIR"] + "_2")
        x = (rng.standard_normal(1234) * 100).astype(dtype)
        out = np.empty_like(x)
        k = triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (262144, 524288)], key=["n"],
                            do_bench=_cheap_bench)(scale2)
        k[_grid(1234)](x, out, 1234)
        np.testing.assert_array_equal(out, x * 2)
        assert k.last_precompile.mode == "parallel" and k.last_precompile.ok == 2, k.last_precompile
        pids.append(precompile.pool_pids())
    assert len(pids[0]) == 1 and pids[0] == pids[1], pids  # the second tuning: the first one's worker
    assert pids[2] and not set(pids[2]) & set(pids[0]), pids  # a fresh pool


def _child_sees_no_pool(q):
    from tritium.runtime import precompile

    q.put((precompile._POOL is None, precompile.pool_pids(), precompile._POOL_LOCK.acquire(timeout=5)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # 3.12+: fork of a process with threads
def test_a_forked_child_starts_without_the_pool(monkeypatch):
    """After a parallel tuning, a forked child (a data loader worker) has no pool of its own and a free lock: the
    parent's workers are not its own, and the lock may have been held by a parent thread."""
    import multiprocessing
    import threading

    from tritium.runtime import precompile

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "1")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    x = np.random.default_rng(13).standard_normal(1234).astype(np.float16)  # a specialisation of its own
    out = np.empty_like(x)
    k = triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (262144, 524288)], key=["n"],
                        do_bench=_cheap_bench)(scale2)
    k[_grid(1234)](x, out, 1234)
    assert k.last_precompile.mode == "parallel" and precompile.pool_pids(), k.last_precompile
    held = threading.Event()
    release = threading.Event()

    def hold():
        with precompile._POOL_LOCK:
            held.set()
            release.wait(30)
    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child_sees_no_pool, args=(q,))
        p.start()
        no_pool, pids, got_lock = q.get(timeout=60)
        p.join(30)
    finally:
        release.set()
        t.join()
    assert no_pool and pids == [] and got_lock


def test_precompile_compiles_in_the_process_when_no_cpu_is_free(monkeypatch):
    """A machine whose CPUs are all busy (here: as many spinning processes as CPUs): the tuning compiles in
    itself, saying why, rather than start workers that would only compete."""
    import subprocess
    import sys

    from tritium.runtime.precompile import usable_cpus

    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.delenv("TRITIUM_COMPILE_WORKERS", raising=False)
    spin = [subprocess.Popen([sys.executable, "-c", "import time\nt = time.time() + 60\nwhile time.time() < t: pass"])
            for _ in range(usable_cpus())]
    try:
        time.sleep(0.5)
        k = triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (8, 2048)], key=["n"],
                            do_bench=_cheap_bench)(scale2)
        x = (np.random.default_rng(5).standard_normal(555) * 1000).astype(np.int64)  # a specialisation of its own
        out = np.empty_like(x)
        k[_grid(555)](x, out, 555)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    np.testing.assert_array_equal(out, x * 2)
    assert k.last_precompile.mode == "serial" and "no CPU free" in k.last_precompile.reason, k.last_precompile
