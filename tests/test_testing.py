"""tritium.testing: do_bench, assert_close, Benchmark / perf_report (no timing assert tighter than 100x)."""
import csv
import time

import numpy as np
import pytest

import tritium as triton
from tritium.testing import Benchmark, Table, assert_close, do_bench, do_bench_cudagraph, perf_report


@pytest.fixture(autouse=True)
def _interp(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def _sleep_1ms():
    time.sleep(0.001)


# ------------------------------------------------------------------------------------------- do_bench
def test_do_bench_returns_milliseconds():
    t = do_bench(_sleep_1ms, warmup=2, rep=10)
    assert isinstance(t, float)
    assert 0.9 <= t < 1000  # sleep(1 ms) takes at least ~1 ms; the upper bound only catches seconds-vs-ms bugs


def test_do_bench_counts_runs_from_the_estimate():
    calls = []
    do_bench(lambda: (calls.append(1), time.sleep(0.002)), warmup=10, rep=20)
    # 1 untimed + 1..5 estimate + <=5 warmup + <=10 timed runs (a seconds-for-ms bug would run thousands)
    assert 4 <= len(calls) <= 40


def test_do_bench_quantiles_and_return_modes():
    qs = do_bench(_sleep_1ms, warmup=1, rep=10, quantiles=[0.2, 0.5, 0.8])
    assert isinstance(qs, list) and len(qs) == 3 and qs[0] <= qs[1] <= qs[2]
    one = do_bench(_sleep_1ms, warmup=1, rep=5, quantiles=[0.5])
    assert isinstance(one, float)
    allt = do_bench(_sleep_1ms, warmup=1, rep=10, return_mode="all")
    assert isinstance(allt, list) and len(allt) >= 1 and all(t > 0 for t in allt)
    for mode in ("min", "max", "mean", "median"):
        assert do_bench(_sleep_1ms, warmup=1, rep=5, return_mode=mode) > 0
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(_sleep_1ms, return_mode="avg")


def test_cudagraph_bench_off_the_gpu_times_on_the_host():
    """No CUDA graph where kernels run on the interpreter: do_bench_cudagraph and do_bench(use_cuda_graph=True)
    time on the host (tests/gpu/test_runtime_gpu.py times real graph replays)."""
    t = do_bench_cudagraph(_sleep_1ms, rep=10)
    assert 0.9 <= t < 1000
    assert 0.9 <= do_bench(_sleep_1ms, rep=10, use_cuda_graph=True) < 1000
    assert len(do_bench_cudagraph(_sleep_1ms, rep=5, quantiles=[0.2, 0.8])) == 2
    with pytest.raises(ValueError, match="return_mode"):
        do_bench_cudagraph(_sleep_1ms, return_mode="avg")


def test_do_bench_slow_function_runs_few_times():
    calls = []
    t = do_bench(lambda: (calls.append(1), time.sleep(0.05)), warmup=1, rep=10)
    assert t >= 45 and len(calls) <= 4  # 1 untimed, 1 estimate, 1 warmup, 1 timed


def test_do_bench_grad_to_none():
    class P:
        grad = 1

    p = P()
    seen = []
    do_bench(lambda: seen.append(p.grad), warmup=1, rep=1, grad_to_none=[p])
    assert seen[-1] is None


def test_do_bench_a_kernel_on_the_interpreter():
    pytest.importorskip("tritium.frontend")
    from tests.runtime.test_autotune import scale2

    x = np.arange(1000, dtype=np.float32)
    out = np.empty_like(x)
    t = do_bench(lambda: scale2[(8,)](x, out, 1000, BLOCK=128), warmup=1, rep=5)
    assert t > 0
    np.testing.assert_array_equal(out, x * 2)


def test_active_driver_benchmarker_is_do_bench():
    from tritium.runtime import driver

    assert driver.active.get_benchmarker() is do_bench


# ------------------------------------------------------------------------------------------- assert_close
def test_assert_close_arrays_scalars_and_messages():
    assert_close(np.ones(4), np.ones(4) + 0.005)
    with pytest.raises(AssertionError):
        assert_close(np.ones(4), np.ones(4) + 0.5)
    assert_close(1.0, 1.001)
    with pytest.raises(AssertionError, match="hello .*is not close to"):
        assert_close(1.0, 2.0, err_msg="hello")
    assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert_close(np.array([100.0]), np.array([101.0]), atol=0, rtol=0.02)
    with pytest.raises(AssertionError):
        assert_close(np.array([100.0, 1.0]), np.array([101.0, 1.0]), atol=0, rtol=0.001)
    assert_close(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        assert_close(np.array([True, False]), np.array([True, True]))


def test_assert_close_callable_tolerances_and_torch():
    assert_close(np.float32(1.0), np.float32(1.05), atol=lambda dt: 0.1)
    with pytest.raises(AssertionError):
        assert_close(np.float32(1.0), np.float32(1.05), atol=lambda dt: 0.01)
    torch = pytest.importorskip("torch")
    a = torch.ones(8, dtype=torch.bfloat16)
    assert_close(a, np.ones(8, dtype=np.float32))
    with pytest.raises(AssertionError):
        assert_close(torch.zeros(8), torch.ones(8))


# ------------------------------------------------------------------------------------------- perf_report
def _bench(N, provider, scale):
    base = {"a": 1.0, "b": 2.0}[provider] * N * scale
    return base, base - 1, base + 1


def test_perf_report_writes_csv_png_and_table(tmp_path, capsys):
    bench = Benchmark(x_names=["N"], x_vals=[128, 256, 512], line_arg="provider", line_vals=["a", "b"],
                      line_names=["Alpha", "Beta"], plot_name="my-bench", args={"scale": 2}, xlabel="N",
                      ylabel="ms", x_log=True, styles=[("blue", "-"), ("green", "--")])
    mark = perf_report(bench)(_bench)
    df = mark.run(print_data=True, save_path=str(tmp_path / "out"), return_df=True)
    assert isinstance(df, Table)
    assert df.columns == ["N", "Alpha", "Beta"]
    assert df.rows == [[128, 256.0, 512.0], [256, 512.0, 1024.0], [512, 1024.0, 2048.0]]
    assert df["Beta"] == [512.0, 1024.0, 2048.0] and df.shape == (3, 3)
    assert df.min["Alpha"] == [255.0, 511.0, 1023.0]
    csv_path = tmp_path / "out" / "my-bench.csv"
    png_path = tmp_path / "out" / "my-bench.png"
    assert csv_path.exists() and png_path.exists()
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png_path.stat().st_size > 1000
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["N", "Alpha", "Beta"]
    assert [[float(v) for v in r] for r in rows[1:]] == [[128, 256, 512], [256, 512, 1024], [512, 1024, 2048]]
    assert (tmp_path / "out" / "results.html").read_text().count("my-bench.png") == 1
    out = capsys.readouterr().out
    assert out.startswith("my-bench:") and "Alpha" in out and "2048.000000" in out


def test_perf_report_multiple_x_names_scalars_and_lists(tmp_path):
    def f(M, N, provider):
        return float(M * N + (provider == "y"))

    benches = [Benchmark(["M", "N"], [(1, 2), (3, 4)], "provider", ["x", "y"], ["X", "Y"], "b1", {}),
               Benchmark(["M", "N"], [5], "provider", ["x"], ["X"], "b2", {})]
    tables = perf_report(benches)(f).run(save_path=str(tmp_path), return_df=True)
    assert [t.columns for t in tables] == [["M", "N", "X", "Y"], ["M", "N", "X"]]
    assert tables[0].to_dicts() == [{"M": 1, "N": 2, "X": 2.0, "Y": 3.0}, {"M": 3, "N": 4, "X": 12.0, "Y": 13.0}]
    assert tables[1].rows == [[5, 5, 25.0]]  # a scalar x value sets every x name
    assert {p.name for p in tmp_path.iterdir()} >= {"b1.csv", "b1.png", "b2.csv", "b2.png", "results.html"}
    assert perf_report(benches)(f).run() is None  # nothing written, nothing returned


def test_perf_report_errors():
    with pytest.raises(ValueError, match="line_names"):
        Benchmark(["N"], [1], "p", ["a", "b"], ["A"], "x", {})
    bad = Benchmark(["M", "N"], [(1, 2, 3)], "p", ["a"], ["A"], "bad", {})
    with pytest.raises(ValueError, match="3 entries for 2 x_names"):
        perf_report(bad)(lambda M, N, p: 1.0).run()


def test_exports():
    assert triton.testing.do_bench is do_bench and triton.testing.perf_report is perf_report
    assert triton.testing.Benchmark is Benchmark and triton.testing.assert_close is assert_close
