"""The runtime on the GPU: CUDA graphs, streams and events, several devices (issue 10).

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py): every kernel these
tests launch is launched once before ``gpu.done()``, so the compile-only run puts it in the carried cache.
The two-device tests need two CUDA devices (the ``nvidia-h200-x2`` machine) and are skipped with one."""
import os
import subprocess
import sys
import textwrap

import pytest

import tritium as triton
import tritium.language as tl
from tests.e2e import kernels as K
from tritium.errors import KernelRuntimeError

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 98432
GRID = (triton.cdiv(N, 1024),)


def close(a, b, **kw):
    torch.testing.assert_close(a, b, **kw)


def n_devices() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


two_gpus = pytest.mark.skipif(n_devices() < 2, reason="needs two CUDA devices (nvidia-h200-x2)")


@triton.jit
def first_in_graph_kernel(X, Y, n, BLOCK: tl.constexpr):
    """Launched by one test only: its cubin is first loaded while a stream is being captured."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 2.0 + 1.0, mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def scale_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 3.0, mask=m)


def scale(x, y):
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)


def captured(step):
    """``step`` run once on a side stream (what torch asks before a capture), then captured in a CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g


# ------------------------------------------------------------------------------------------ CUDA graphs
def test_graph_replay_vector_add(gpu):
    x, y, out = gpu.randn(N), gpu.randn(N), gpu.empty(N)

    def step():
        K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024)

    step()
    gpu.done()
    g = captured(step)
    for _ in range(3):  # new inputs copied into the captured buffers: the replay reads them
        x.copy_(torch.randn(N, device="cuda"))
        y.copy_(torch.randn(N, device="cuda"))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        close(out, x + y)


def test_graph_replay_softmax(gpu):
    M, C = 333, 781
    x, y = gpu.randn(M, C), gpu.empty(M, C)

    def step():
        K.softmax_kernel[(M,)](y, x, x.stride(0), y.stride(0), C, BLOCK_SIZE=triton.next_power_of_2(C))

    step()
    gpu.done()
    g = captured(step)
    for i in range(3):
        x.copy_(torch.randn(M, C, device="cuda") * (i + 1))
        y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-5)


def test_graph_capture_of_a_kernels_first_launch(gpu):
    """The cubin is loaded during the capture (no warm-up): the load is not a stream operation and is made in
    relaxed capture mode; the replay computes with the buffers' new contents."""
    x, y = gpu.randn(N), gpu.empty(N)
    if gpu.compile_only:
        first_in_graph_kernel[GRID](x, y, N, BLOCK=1024)
    gpu.done()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        first_in_graph_kernel[GRID](x, y, N, BLOCK=1024)
    x.copy_(torch.randn(N, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    close(y, x * 2.0 + 1.0)


def test_do_bench_cudagraph_and_use_cuda_graph(gpu):
    x, y, out = gpu.randn(N), gpu.randn(N), gpu.empty(N)
    K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024)
    gpu.done()
    from tritium.testing import do_bench, do_bench_cudagraph

    out.fill_(float("nan"))
    t = do_bench_cudagraph(lambda: K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024), rep=5)
    t2 = do_bench(lambda: K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024), rep=5, use_cuda_graph=True)
    qs = do_bench_cudagraph(lambda: K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024), rep=5, quantiles=[0.2, 0.8])
    torch.cuda.synchronize()
    assert 0 < t < 1 and 0 < t2 < 1 and qs[0] <= qs[1]  # ms: a 400 KB add takes microseconds
    close(out, x + y)


def test_do_bench_runs_fit_rep_with_the_l2_flush(gpu):
    """do_bench flushes L2 (256 MB written) before each timed run: the count of runs must come from what a run
    costs with its flush, or a microsecond kernel is timed tens of thousands of times (Liger's autotuned DyT
    tests: minutes instead of seconds). The runs' flushes alone must fit in about ``rep``."""
    x, y, out = gpu.randn(N), gpu.randn(N), gpu.empty(N)
    K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024)
    gpu.done()
    from tritium.runtime.bench import _timer_for
    from tritium.testing import do_bench

    times = do_bench(lambda: K.add_kernel[GRID](x, y, out, N, BLOCK_SIZE=1024), warmup=5, rep=20, return_mode="all")
    timer = _timer_for("cuda")  # one flush, nothing else; after do_bench (clocks up), the fastest of three
    flush = min(timer.iteration_ms(lambda: None, 100.0) for _ in range(3))
    assert flush > 0.01, flush  # 256 MB on any GPU: tens of microseconds at least
    # a kernel of microseconds: counted from the kernel alone, ~25x rep; from kernel + flush, about rep
    assert 1 <= len(times) and len(times) * flush <= 3 * 20, (len(times), flush)
    close(out, x + y)


# ------------------------------------------------------------------------------------------ streams
def test_launches_follow_the_current_stream_and_events(gpu):
    n = 1 << 20
    grid = (triton.cdiv(n, 1024),)
    x, y, out = gpu.randn(n), gpu.randn(n), gpu.empty(n)
    K.add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    gpu.done()
    torch.cuda.synchronize()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    x_new = torch.randn(n, device="cuda")
    out2 = torch.empty_like(out)
    done1 = torch.cuda.Event()
    with torch.cuda.stream(s1):
        torch.cuda._sleep(20_000_000)  # keeps s1 busy: a launch on another stream would run before the copy
        x.copy_(x_new)
        K.add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)  # after the copy only if it is on s1
        done1.record(s1)
    assert not s1.query()  # the sleep is still running: everything above was queued, not run
    with torch.cuda.stream(s2):
        s2.wait_event(done1)
        K.add_kernel[grid](out, y, out2, n, BLOCK_SIZE=1024)  # reads s1's result after the event
    torch.cuda.synchronize()
    close(out, x_new + y)
    close(out2, x_new + y + y)


# ------------------------------------------------------------------------------------------ cooperative grid
@triton.jit
def grid_barrier_kernel(X, OUT, ARRIVED, BLOCK: tl.constexpr):
    """Each program writes its block, waits at a grid-wide barrier (an atomic counter), then reads the block of the
    program opposite it: right only when every program is resident at once (launch_cooperative_grid)."""
    pid = tl.program_id(0)
    n = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + pid * BLOCK + offs, tl.load(X + pid * BLOCK + offs) * 2.0)
    tl.atomic_add(ARRIVED, 1, sem="release")
    while tl.atomic_add(ARRIVED, 0, sem="acquire") < n:
        pass
    other = n - 1 - pid
    v = tl.load(OUT + other * BLOCK + offs, cache_modifier=".cg")
    tl.store(OUT + (n + pid) * BLOCK + offs, v + 1.0)


def test_launch_cooperative_grid(gpu):
    """launch_cooperative_grid=True launches through cuLaunchCooperativeKernel: a grid barrier over one program per
    multiprocessor completes; a grid the device cannot hold at once is refused with the numbers."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count if not gpu.compile_only else 132
    B = 256
    x = gpu.randn(sms * B)
    out = gpu.empty(2 * sms * B)
    arrived = torch.zeros(1, dtype=torch.int32, device=gpu.device)
    grid_barrier_kernel[(sms,)](x, out, arrived, BLOCK=B, launch_cooperative_grid=True)
    gpu.done()
    torch.cuda.synchronize()
    assert int(arrived.item()) == sms
    first = (x * 2.0).view(sms, B)
    close(out[:sms * B].view(sms, B), first)
    close(out[sms * B:].view(sms, B), first.flip(0) + 1.0)
    arrived.zero_()
    with pytest.raises(KernelRuntimeError, match="launch_cooperative_grid=True needs every program resident"):
        grid_barrier_kernel[(sms * 1000,)](x, out, arrived, BLOCK=B, launch_cooperative_grid=True)


# ------------------------------------------------------------------------------------------ devices
def test_autotune_on_the_current_device(gpu):
    x, y = gpu.randn(5000), gpu.empty(5000)
    scale(x, y)
    gpu.done()
    close(y, x * 3.0)
    assert any(k[-1].endswith(f":{torch.cuda.current_device()}") for k in scale_kernel.cache)


@two_gpus
def test_kernels_on_device_1(gpu):
    n = 4096
    with torch.cuda.device(1):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        ck = K.add_kernel[(4,)](x, y, out, n, BLOCK_SIZE=1024)
        out.fill_(float("nan"))
        K.add_kernel[(4,)](x, y, out, n, BLOCK_SIZE=1024)  # the relaunch fast path, on device 1
        torch.cuda.synchronize()
    assert out.device == torch.device("cuda", 1) and 1 in ck.loaded
    close(out, x + y)
    torch.cuda.set_device(1)
    try:
        x1 = torch.randn(n, device="cuda")
        out1 = torch.full_like(x1, float("nan"))
        K.add_kernel[(4,)](x1, y, out1, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
        close(out1, x1 + y)
    finally:
        torch.cuda.set_device(0)
    x0, y0 = torch.randn(n, device="cuda:0"), torch.randn(n, device="cuda:0")
    out0 = torch.full_like(x0, float("nan"))
    K.add_kernel[(4,)](x0, y0, out0, n, BLOCK_SIZE=1024)  # device 0 again: its own module
    torch.cuda.synchronize()
    close(out0, x0 + y0)
    assert {0, 1} <= set(ck.loaded) and ck.loaded[0].module != ck.loaded[1].module


@two_gpus
def test_tensor_on_another_device_is_a_clear_error(gpu):
    n = 4096
    x0, y0, out0 = (torch.randn(n, device="cuda:0") for _ in range(3))
    x1, y1, out1 = (torch.randn(n, device="cuda:1") for _ in range(3))
    with torch.cuda.device(1):
        for _ in range(2):  # the first launch, then with a fast entry for device 1 in place
            with pytest.raises(KernelRuntimeError, match="argument 'x_ptr' is a tensor on cuda:0 but the kernel "
                                                         "launches on cuda:1"):
                K.add_kernel[(4,)](x0, y0, out0, n, BLOCK_SIZE=1024)
            K.add_kernel[(4,)](x1, y1, out1, n, BLOCK_SIZE=1024)
        with pytest.raises(KernelRuntimeError, match="argument 'output_ptr' is a tensor on cuda:0"):
            K.add_kernel[(4,)](x1, y1, out0, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
    close(out1, x1 + y1)


@two_gpus
def test_autotune_per_device(gpu):
    for d in (0, 1):
        with torch.cuda.device(d):
            x = torch.randn(5000, device="cuda")
            y = torch.full_like(x, float("nan"))
            scale(x, y)
            torch.cuda.synchronize()
            close(y, x * 3.0)
    tuned_on = {k[-1].rsplit(":", 1)[1] for k in scale_kernel.cache if k[0] == 5000}
    assert {"0", "1"} <= tuned_on  # tuned on each device: a best config of one GPU is not taken for the other


@two_gpus
def test_tritium_cuda_device_selects_the_device_without_torch(gpu, tmp_path):
    """No torch in the process: TRITIUM_CUDA_DEVICE picks the device; memory from cuda.bindings, passed through
    __cuda_array_interface__."""
    script = tmp_path / "no_torch.py"
    script.write_text(textwrap.dedent('''
        import sys
        import numpy as np
        from cuda.bindings import driver as cu
        sys.path.insert(0, sys.argv[1])
        from tests.e2e import kernels as K
        from tritium.runtime import driver

        def ok(r):
            assert int(r[0]) == 0, r
            return r[1] if len(r) > 1 else None

        ok(cu.cuInit(0))
        ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(1))))
        ok(cu.cuCtxSetCurrent(ctx))
        n = 4096
        host = [np.random.default_rng(i).standard_normal(n).astype(np.float32) for i in range(2)]

        class Buf:
            def __init__(self, ptr):
                self.__cuda_array_interface__ = {"data": (int(ptr), False), "shape": (n,), "typestr": "<f4",
                                                 "version": 3}

        ptrs = [ok(cu.cuMemAlloc(4 * n)) for _ in range(3)]
        for p, h in zip(ptrs, host):
            ok(cu.cuMemcpyHtoD(p, h.ctypes.data, 4 * n))
        K.add_kernel[(4,)](*(Buf(p) for p in ptrs), n, BLOCK_SIZE=1024)
        K.add_kernel[(4,)](*(Buf(p) for p in ptrs), n, BLOCK_SIZE=1024)
        ok(cu.cuCtxSynchronize())
        got = np.empty(n, dtype=np.float32)
        ok(cu.cuMemcpyDtoH(got.ctypes.data, ptrs[2], 4 * n))
        assert "torch" not in sys.modules
        assert driver.active.get_current_device() == 1
        assert np.array_equal(got, host[0] + host[1]), "wrong sum"
        (ck,) = [k for per in K.add_kernel.cache.values() for k in per.values()]
        print("OK", sorted(ck.loaded))
    '''))
    env = dict(os.environ, TRITIUM_CUDA_DEVICE="1")
    r = subprocess.run([sys.executable, str(script), ROOT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK [1]" in r.stdout
