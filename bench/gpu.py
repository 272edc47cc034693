"""GPU benchmark: tritium, Triton and torch side by side, in one process, on the same card.

    python bench/gpu.py [--json OUT] [--compile-json .gpu/bench_compile.json] [--quick]   # on the GPU machine
    python bench/gpu.py --compile-only [--json .gpu/bench_compile.json]                    # here (no GPU)
    python bench/gpu.py --rows attn                     # only the rows matching a regular expression (no launch table)

The kernels are the tests' tutorial kernels (tests/e2e/kernels.py), one source imported twice: once against
``triton`` and once against ``tritium`` (``BENCH_IMPL``).  Device times are ``triton.testing.do_bench`` medians (CUDA events) for all three,
measured in turns (``--rounds``, 3: tritium, Triton, torch, again and again) and the median round reported;
bandwidths count each input read once and each output written once; TFLOP/s count 2*M*N*K per matmul and, for
attention, 4*Z*H*N_CTX^2*D (half of it causal), as Triton's tutorials do.  Ratios are time(tritium) / time(other):
below 1 is faster.

Tensor-core entries: the matmul tutorial's kernel autotuned over the tutorial's config lists (MATMUL_CONFIGS_FP16
for fp16 / bf16, MATMUL_CONFIGS_FP8 for fp8 e4m3 with B pre-transposed, as the tutorial does) on both tritium and
Triton, against ``torch.matmul`` (fp8: ``torch._scaled_mm`` with unit scales and fast accumulation); the
fused-attention forward (block pointers, fp16, Z=4 H=32 N_CTX=4096 D=64 and Z=4 H=16 D=128, causal and not) autotuned over
ATTN_FWD_CONFIGS, against ``torch.nn.functional.scaled_dot_product_attention``.  tritium's autotuner compiles
nothing on the GPU machine: ``--compile-only`` runs the same autotuned launches with CPU stand-ins, and as
nothing launches there the autotuner "benchmarks" (so compiles) every config into the carried cache.

* ``--compile-only`` (TRITIUM_COMPILE_ONLY=1, TRITIUM_TARGET=cuda:90; scripts/gpu_prepare.sh runs it): compiles
  every tritium kernel the benchmark launches into TRITIUM_CACHE_DIR (CPU tensors stand in: specialisation
  only sees dtypes, alignment and integer values), and measures tritium's cold compile time of vector add here,
  on the CPU machine, where tritium compiles (a fresh cache directory; the first compile of the process
  includes importing MLIR/llvmlite, the second does not).
  Also tritium's cold compile of one matmul config (the tutorial's first fp16 config) and of the attention
  forward (not causal, 128x64 blocks), each with a fresh cache directory in a process that has compiled before.
* on the GPU: Triton's cold compile of vector add is measured with a fresh TRITON_CACHE_DIR (it includes
  building Triton's C launcher), then of the same matmul and attention configs as tritium's above; host launch
  overhead is the wall time of many launches of a cached kernel on a one-program grid, per launch (rows timed in
  turn, the minimum over interleaved rounds), for
  ``kernel[grid](...)`` and for the lower layers.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import json
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KERNELS = ROOT / "tests" / "e2e" / "kernels.py"

VECTOR_SIZES = [1 << 24, 1 << 27]
SOFTMAX_N = [1024, 4096, 16384]
LAYERNORM_N = [1024, 4096, 8192]
ROWS = 4096
MATMUL_SIZES = [4096, 8192]        # square M = N = K, fp16 and bf16
MATMUL_FP8_SIZES = [8192]          # fp8 e4m3
MATMUL_TMA_SIZES = [8192]          # fp16, the persistent-matmul tutorial's matmul_kernel_tma (host descriptors)
ATTN_SHAPE = (4, 32, 4096, 64)     # Z, H, N_CTX, HEAD_DIM (fp16)
ATTN_SHAPES = (ATTN_SHAPE, (4, 16, 4096, 128))  # the attention rows: head dims 64 and 128, the same FLOPs
ATTN_SM_SCALE = 0.5


def load_kernels(impl: str):
    """tests/e2e/kernels.py imported against ``impl`` (``triton`` or ``tritium``) as its own module."""
    old = os.environ.get("BENCH_IMPL")
    os.environ["BENCH_IMPL"] = impl
    try:
        spec = importlib.util.spec_from_file_location(f"tutorial_kernels_{impl}", KERNELS)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        if old is None:
            os.environ.pop("BENCH_IMPL", None)
        else:
            os.environ["BENCH_IMPL"] = old


def in_turns(fns: dict, impls, rounds: int, bench) -> dict:
    """``{impl: [ms per round]}``: the implementations measured in turns, ``rounds`` times (``bench(fn)`` one
    timing): the card's clocks (power-bound tensor-core work runs hot) then weigh on all of them alike, not on
    whichever ran in a slow spell.  Report the median of each one's rounds."""
    times = {impl: [] for impl in impls}
    for _ in range(rounds):
        for impl in times:
            times[impl].append(bench(fns[impl]))
    return times


def cdiv(a, b):
    return (a + b - 1) // b


def next_pow2(n):
    return 1 << (n - 1).bit_length()


def softmax_cfg(n):
    block = next_pow2(n)
    return block, (4 if block <= 1024 else 8 if block <= 4096 else 16)


def layernorm_cfg(n, elt=2):
    block = min(65536 // elt, next_pow2(n))
    return block, min(max(block // 256, 1), 8)


# ------------------------------------------------------------------------------------------- launch wrappers
def vector_add(K, x, y, out, n):
    K.add_kernel[(cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)


def launch_variants(K):
    """The vector add as an autotuned kernel (two configs, tuned on the first launch) and as a heuristics kernel
    (BLOCK_SIZE computed), for the launch-overhead table: after tuning both take the JIT's relaunch path."""
    tr = K.triton
    tuned = tr.autotune(configs=[tr.Config({"BLOCK_SIZE": 1024}, num_warps=4),
                                 tr.Config({"BLOCK_SIZE": 1024}, num_warps=8)], key=["n_elements"])(K.add_kernel)
    heur = tr.heuristics({"BLOCK_SIZE": lambda args: 1024})(K.add_kernel)
    return tuned, heur


def softmax(K, x, y, n_rows, n_cols):
    block, warps = softmax_cfg(n_cols)
    K.softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=block, num_warps=warps)


def layer_norm(K, x, y, w, b, mean, rstd, n_rows, n_cols):
    block, warps = layernorm_cfg(n_cols, x.element_size())
    K._layer_norm_fwd_fused[(n_rows,)](x, y, w, b, mean, rstd, x.stride(0), n_cols, 1e-5, BLOCK_SIZE=block,
                                       num_warps=warps)


def matmul_tuners(K):
    """``matmul_kernel`` autotuned over the tutorial's configs (one autotuner per list: the key holds M, N, K and
    the tensors' dtypes, so fp16 and bf16 are tuned apart), for the module ``K`` (tritium's or Triton's)."""
    at = K.triton.autotune
    return {"fp16": at(configs=K.MATMUL_CONFIGS_FP16, key=["M", "N", "K"])(K.matmul_kernel),
            "fp8": at(configs=K.MATMUL_CONFIGS_FP8, key=["M", "N", "K"])(K.matmul_kernel)}


def attn_tuner(K):
    return K.triton.autotune(configs=K.ATTN_FWD_CONFIGS, key=["N_CTX", "HEAD_DIM", "STAGE"])(K._attn_fwd)


def matmul_strides(M, N, Kd, b_kmajor=False):
    """Strides of row-major A [M, K], B [K, N] (``b_kmajor``: B = (a row-major [N, K]).T) and C [M, N]."""
    return (Kd, 1), ((1, Kd) if b_kmajor else (N, 1)), (N, 1)


def matmul(kernel, a, b, c, M, N, Kd, b_kmajor=False, **meta):
    sa, sb, sc = matmul_strides(M, N, Kd, b_kmajor)
    grid = lambda META: (cdiv(M, META["BLOCK_SIZE_M"]) * cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
    return kernel[grid](a, b, c, M, N, Kd, *sa, *sb, *sc, **meta)


def attn_strides(Z, H, N_CTX, D):
    return (H * N_CTX * D, N_CTX * D, D, 1)


def attention(kernel, q, k, v, o, m, causal, shape=ATTN_SHAPE, **meta):
    Z, H, N_CTX, D = shape
    st = attn_strides(Z, H, N_CTX, D)
    grid = lambda META: (cdiv(N_CTX, META["BLOCK_M"]), Z * H, 1)  # noqa: E731
    return kernel[grid](q, k, v, ATTN_SM_SCALE, m, o, *st, *st, *st, *st, Z, H, N_CTX, HEAD_DIM=D,
                        STAGE=3 if causal else 1, **meta)


def matmul_flops(n):
    return 2.0 * n * n * n


def attn_flops(causal, shape=ATTN_SHAPE):
    Z, H, N_CTX, D = shape
    f = 4.0 * Z * H * N_CTX * N_CTX * D  # two matmuls of 2*N_CTX^2*D per head
    return f * 0.5 if causal else f


# one config of each, compiled cold (tritium here, Triton on the GPU machine)
MATMUL_COLD = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_stages=3, num_warps=8)
ATTN_COLD = dict(BLOCK_M=128, BLOCK_N=64, num_stages=3, num_warps=8)


# ------------------------------------------------------------------------------------------- compile only
def compile_only(args) -> dict:
    os.environ["TRITIUM_COMPILE_ONLY"] = "1"
    os.environ.setdefault("TRITIUM_TARGET", "cuda:90")
    import torch

    report = {"where": "CPU machine (compile only)", "target": os.environ["TRITIUM_TARGET"], "errors": {}}
    cache = os.environ.get("TRITIUM_CACHE_DIR")
    R = load_kernels("tritium")
    t = lambda *s, dt=torch.float32: torch.empty(16, dtype=dt)  # noqa: E731 - stand-ins: only dtype/alignment

    # cold compile of vector add: fresh cache dir, first compile of the process (MLIR/llvmlite import included)
    with tempfile.TemporaryDirectory() as fresh:
        os.environ["TRITIUM_CACHE_DIR"] = fresh
        try:
            t0 = time.perf_counter()
            R.add_kernel[(1,)](t(), t(), t(), 1 << 24, BLOCK_SIZE=1024)
            t1 = time.perf_counter()
            R.add_kernel[(1,)](t(), t(), t(), 1 << 24, BLOCK_SIZE=512)
            t2 = time.perf_counter()
            report["tritium_cold_compile_s"] = {"first_in_process": t1 - t0, "warm_process": t2 - t1}
        except Exception as e:  # noqa: BLE001
            report["errors"]["cold_compile"] = f"{type(e).__name__}: {e}"
    # cold compiles of one matmul and one attention config: fresh cache dirs, a process that has compiled before
    h = lambda: t(dt=torch.float16)  # noqa: E731
    n = MATMUL_SIZES[0]
    cold = {"matmul_fp16": lambda: matmul(R.matmul_kernel, h(), h(), h(), n, n, n, **MATMUL_COLD),
            "attention_fwd_fp16": lambda: attention(R._attn_fwd, h(), h(), h(), h(), t(), False, **ATTN_COLD)}
    for name, job in cold.items():
        with tempfile.TemporaryDirectory() as fresh:
            os.environ["TRITIUM_CACHE_DIR"] = fresh
            try:
                t0 = time.perf_counter()
                job()
                report.setdefault("tritium_cold_compile_s", {})[name] = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                msg = str(e).splitlines()[0] if str(e) else ""
                report["errors"][f"cold_compile {name}"] = f"{type(e).__name__}: {msg}"
    if cache:
        os.environ["TRITIUM_CACHE_DIR"] = cache
    else:
        os.environ.pop("TRITIUM_CACHE_DIR", None)
    # a second import of the kernels: fresh JITFunctions, so their in-memory caches don't hide the file cache
    R = load_kernels("tritium")

    jobs = [("vector_add", lambda: vector_add(R, t(), t(), t(), VECTOR_SIZES[0])),
            ("vector_add_tiny", lambda: vector_add(R, t(), t(), t(), 1024))]
    for n in SOFTMAX_N:
        jobs.append((f"softmax_{n}", lambda n=n: R.softmax_kernel[(ROWS,)](
            t(), t(), n, n, n, BLOCK_SIZE=softmax_cfg(n)[0], num_warps=softmax_cfg(n)[1])))
    for n in LAYERNORM_N:
        h = lambda: t(dt=torch.float16)  # noqa: E731
        jobs.append((f"layer_norm_{n}", lambda n=n: R._layer_norm_fwd_fused[(ROWS,)](
            h(), h(), h(), h(), t(), t(), n, n, 1e-5, BLOCK_SIZE=layernorm_cfg(n)[0],
            num_warps=layernorm_cfg(n)[1])))
    # the autotuned tensor-core entries, exactly as run_gpu launches them: every config gets compiled
    tuners = matmul_tuners(R)
    for n in MATMUL_SIZES:
        for dt in (torch.float16, torch.bfloat16):
            jobs.append((f"matmul_{str(dt)[6:]}_{n}", lambda n=n, dt=dt: matmul(
                tuners["fp16"], t(dt=dt), t(dt=dt), t(dt=dt), n, n, n)))
    for n in MATMUL_FP8_SIZES:
        f8, f16 = torch.float8_e4m3fn, torch.float16
        jobs.append((f"matmul_fp8e4m3_{n}", lambda n=n: matmul(
            tuners["fp8"], t(dt=f8), t(dt=f8), t(dt=f16), n, n, n, b_kmajor=True)))
    for n in MATMUL_TMA_SIZES:
        jobs.append((f"matmul_tma_fp16_{n}", lambda n=n: R.matmul_tma(
            R, t(dt=torch.float16), t(dt=torch.float16), t(dt=torch.float16), n, n, n)))
        for sms in (132, 114):  # H100 SXM / PCIe (the kernel's NUM_SMS is a constexpr)
            jobs.append((f"matmul_dev_desc_{n}_{sms}", lambda n=n, sms=sms: R.matmul_descriptor_persistent(
                R, t(dt=torch.float16), t(dt=torch.float16), t(dt=torch.float16), n, n, n, sms)))
    attn = attn_tuner(R)
    h = lambda: t(dt=torch.float16)  # noqa: E731
    for causal in (False, True):
        jobs.append((f"attention_fwd_{'causal' if causal else 'full'}", lambda causal=causal: attention(
            attn, h(), h(), h(), h(), t(), causal)))
    for name, job in jobs:
        t0 = time.perf_counter()
        try:
            job()
            print(f"compiled {name:<22} {time.perf_counter() - t0:7.2f} s")
        except Exception as e:  # noqa: BLE001
            report["errors"][name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"FAILED   {name:<22} {report['errors'][name]}")
    c = report.get("tritium_cold_compile_s", {})
    if "first_in_process" in c:
        print(f"tritium cold compile of vector add (here, CPU machine): {c['first_in_process']:.2f} s first in "
              f"process, {c['warm_process']:.2f} s in a warm process")
    for name in ("matmul_fp16", "attention_fwd_fp16"):
        if name in c:
            print(f"tritium cold compile of {name} (here, CPU machine, warm process): {c[name]:.2f} s")
    return report


def compile_launch_kernels(args) -> dict:
    """``--compile-only --launch-only``: compile (into TRITIUM_CACHE_DIR) just the kernels of the launch-overhead
    table: the vector add at 1024 elements, its autotuned configs and its heuristics variant."""
    import torch

    R = load_kernels("tritium")
    t = lambda: torch.randn(1024)  # noqa: E731
    vector_add(R, t(), t(), t(), 1024)
    tuned, heur = launch_variants(R)
    tuned[(1,)](t(), t(), t(), 1024)
    heur[(1,)](t(), t(), t(), 1024)
    print("compiled the launch-overhead kernels")
    return {"compiled": "launch"}


def run_launch_only(args) -> dict:
    """``--launch-only`` on the GPU: the launch-overhead table alone (tritium, Triton, bare driver calls)."""
    import torch
    import triton

    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "tritium_target": None, "rows": [], "launch_us": {}, "errors": {}}
    launch_overhead(report, {"tritium": load_kernels("tritium"), "triton": load_kernels("triton")}, args)
    return report


# ------------------------------------------------------------------------------------------- on the GPU
def run_gpu(args) -> dict:
    triton_cache = tempfile.mkdtemp(prefix="triton-cold-")
    os.environ["TRITON_CACHE_DIR"] = triton_cache  # before importing triton: its compiles here are cold
    import torch

    import triton
    from triton.testing import do_bench

    import tritium
    from tritium.runtime import driver as tdriver

    dev = torch.device("cuda")
    torch.zeros(1, device=dev) + 1  # context
    torch.cuda.synchronize()
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "tritium_target": None, "rows": [], "launch_us": {}, "errors": {}}
    try:
        report["tritium_target"] = str(tdriver.active.get_current_target())
        report["device_properties"] = tdriver.active.utils.get_device_properties(0)
    except Exception as e:  # noqa: BLE001
        report["errors"]["tritium_driver"] = f"{type(e).__name__}: {e}"
    T = load_kernels("triton")
    R = load_kernels("tritium")
    impls = {"tritium": R, "triton": T}
    rep = 30 if args.quick else 100
    rounds = 1 if args.quick else args.rounds

    def bench(fn):
        return do_bench(fn, warmup=10 if args.quick else 25, rep=rep, return_mode="median")

    # Triton's cold compile (fresh TRITON_CACHE_DIR), first thing
    n = 1 << 20
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    t0 = time.perf_counter()
    vector_add(T, x, y, out, n)
    torch.cuda.synchronize()
    report["triton_cold_compile_s"] = time.perf_counter() - t0
    # ... and of one matmul and one attention config (the ones tritium's --compile-only times on the CPU machine)
    nm = MATMUL_SIZES[0]
    zq = ATTN_SHAPE
    cold = {"matmul_fp16": lambda: matmul(T.matmul_kernel, *(torch.randn(nm, nm, device=dev, dtype=torch.float16)
                                                             for _ in range(3)), nm, nm, nm, **MATMUL_COLD),
            "attention_fwd_fp16": lambda: attention(
                T._attn_fwd, *(torch.randn(zq, device=dev, dtype=torch.float16) for _ in range(4)),
                torch.empty(zq[:3], device=dev), False, **ATTN_COLD)}
    for name, job in cold.items():
        try:
            t0 = time.perf_counter()
            job()
            torch.cuda.synchronize()
            report.setdefault("triton_cold_compile_more_s", {})[name] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001
            report["errors"][f"triton cold compile {name}"] = f"{type(e).__name__}: {e}"

    def add_row(workload, size, nbytes, fns, ref, check, flops=None):
        if args.rows and not re.search(args.rows, f"{workload} {size}"):
            return
        row = {"workload": workload, "size": size, "bytes": nbytes}
        if flops:
            row["flops"] = flops
        times = {}
        for impl, fn in fns.items():  # first call (autotuning, compiling) and the result's check
            try:
                fn()
                torch.cuda.synchronize()
                if impl != "torch":  # torch computed the reference (and may not write the checked buffer)
                    check(ref)
                times[impl] = []
            except Exception as e:  # noqa: BLE001
                msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                report["errors"][f"{workload} {size} {impl}"] = msg
                row[impl + "_ms"] = None
        times = in_turns(fns, times, rounds, bench)
        for impl, ts in times.items():
            ms = statistics.median(ts)
            row[impl + "_ms"] = ms
            row[impl + "_GBps"] = nbytes / ms / 1e6
            if flops:
                row[impl + "_TFLOPs"] = flops / ms / 1e9
            if len(ts) > 1:
                row[impl + "_rounds_ms"] = ts
        for other in ("triton", "torch"):
            if row.get("tritium_ms") and row.get(other + "_ms"):
                row[f"tritium/{other}"] = row["tritium_ms"] / row[other + "_ms"]
        report["rows"].append(row)
        print(fmt_row(row), flush=True)

    print(header(), flush=True)
    for n in VECTOR_SIZES:
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty_like(x)
        fns = {k: (lambda K=K: vector_add(K, x, y, out, n)) for k, K in impls.items()}
        fns["torch"] = lambda: torch.add(x, y, out=out)
        ref = x + y

        def check(ref):
            torch.testing.assert_close(out, ref)
            out.fill_(float("nan"))
        add_row("vector_add fp32", f"2^{n.bit_length() - 1}", 3 * n * 4, fns, ref, check)
        del x, y, out, ref
    for ncol in SOFTMAX_N:
        x = torch.randn(ROWS, ncol, device=dev)
        yb = torch.empty_like(x)
        fns = {k: (lambda K=K: softmax(K, x, yb, ROWS, ncol)) for k, K in impls.items()}
        fns["torch"] = lambda: torch.softmax(x, dim=1)
        ref = torch.softmax(x, dim=1)

        def check(ref):
            torch.testing.assert_close(yb, ref, atol=1e-6, rtol=1e-5)
            yb.fill_(float("nan"))
        add_row("softmax fp32", f"{ROWS}x{ncol}", 2 * x.numel() * 4, fns, ref, check)
    for ncol in LAYERNORM_N:
        x = torch.randn(ROWS, ncol, device=dev, dtype=torch.float16)
        w = torch.rand(ncol, device=dev, dtype=torch.float16)
        b = torch.rand(ncol, device=dev, dtype=torch.float16)
        yb = torch.empty_like(x)
        mean = torch.empty(ROWS, device=dev)
        rstd = torch.empty(ROWS, device=dev)
        fns = {k: (lambda K=K: layer_norm(K, x, yb, w, b, mean, rstd, ROWS, ncol)) for k, K in impls.items()}
        fns["torch"] = lambda: torch.nn.functional.layer_norm(x, (ncol,), w, b, 1e-5)
        ref = torch.nn.functional.layer_norm(x.float(), (ncol,), w.float(), b.float(), 1e-5).half()

        def check(ref):
            torch.testing.assert_close(yb, ref, atol=1e-2, rtol=1e-2)
            yb.fill_(float("nan"))
        add_row("layer_norm fwd fp16", f"{ROWS}x{ncol}", 2 * x.numel() * 2 + 2 * ncol * 2, fns, ref, check)
    del x, yb, w, b, mean, rstd, ref

    print(header(flops=True), flush=True)
    tensor_cores(impls, add_row)

    if not args.rows:
        launch_overhead(report, impls, args)
    return report


def _rel_err(out, ref):
    """Relative Frobenius error of ``out`` against ``ref`` (no NaN allowed: unwritten elements are NaN)."""
    import torch

    o, r = out.float(), ref.float()
    assert not bool(torch.isnan(o).any()), "NaN in the output (elements left unwritten?)"
    return ((o - r).norm() / r.norm()).item()


def tensor_cores(impls, add_row):
    """The matmul and fused-attention rows (TFLOP/s): autotuned tritium and Triton, torch."""
    import torch

    dev = torch.device("cuda")
    tuners = {k: matmul_tuners(K) for k, K in impls.items()}

    def check_rel(out, tol):
        def check(ref):
            err = _rel_err(out, ref)
            assert err < tol, f"relative error {err:.2e} >= {tol:.0e}"
            out.fill_(float("nan"))
        return check

    for n in MATMUL_SIZES:
        for dt, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
            a = torch.randn(n, n, device=dev, dtype=dt)
            b = torch.randn(n, n, device=dev, dtype=dt)
            c = torch.full((n, n), float("nan"), device=dev, dtype=dt)
            fns = {k: (lambda k=k: matmul(tuners[k]["fp16"], a, b, c, n, n, n)) for k in impls}
            fns["torch"] = lambda: torch.matmul(a, b)
            ref = torch.matmul(a, b)
            add_row(f"matmul {name}", f"{n}^3", 3 * n * n * dt.itemsize, fns, ref, check_rel(c, 1e-2),
                    flops=matmul_flops(n))
            del a, b, c, ref
    for n in MATMUL_TMA_SIZES:  # the tutorial's host-descriptor kernel: TMA copies on sm_90
        a = torch.randn(n, n, device=dev, dtype=torch.float16)
        b = torch.randn(n, n, device=dev, dtype=torch.float16)  # N x K
        c = torch.full((n, n), float("nan"), device=dev, dtype=torch.float16)
        fns = {k: (lambda K=K: K.matmul_tma(K, a, b, c, n, n, n)) for k, K in impls.items()}
        fns["torch"] = lambda: torch.matmul(a, b.T)
        ref = torch.matmul(a, b.T)
        add_row("matmul fp16 TMA desc", f"{n}^3", 3 * n * n * 2, fns, ref, check_rel(c, 1e-2),
                flops=matmul_flops(n))
        # the device-descriptor persistent kernel: tensor maps made in global scratch (both allocate it through
        # set_allocator, installed on each module)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        for K in impls.values():
            K.triton.set_allocator(lambda size, align, stream: torch.empty(size, device=dev, dtype=torch.int8))
        fns = {k: (lambda K=K: K.matmul_descriptor_persistent(K, a, b, c, n, n, n, sms)) for k, K in impls.items()}
        fns["torch"] = lambda: torch.matmul(a, b.T)
        add_row("matmul fp16 dev desc persist", f"{n}^3", 3 * n * n * 2, fns, ref, check_rel(c, 1e-2),
                flops=matmul_flops(n))
        del a, b, c, ref
    for n in MATMUL_FP8_SIZES:
        f8 = torch.float8_e4m3fn
        a = torch.randn(n, n, device=dev).to(f8)
        b = torch.randn(n, n, device=dev).to(f8).t()  # pre-transposed (K-major), as the tutorial
        c = torch.full((n, n), float("nan"), device=dev, dtype=torch.float16)
        fns = {k: (lambda k=k: matmul(tuners[k]["fp8"], a, b, c, n, n, n, b_kmajor=True)) for k in impls}
        one = torch.ones((), device=dev)
        fns["torch"] = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16,
                                                use_fast_accum=True)
        ref = torch.matmul(a.to(torch.float16), b.to(torch.float16))
        add_row("matmul fp8e4m3", f"{n}^3", 2 * n * n + 2 * n * n, fns, ref, check_rel(c, 5e-2),
                flops=matmul_flops(n))
        del a, b, c, ref
    attn = {k: attn_tuner(K) for k, K in impls.items()}
    for shape in ATTN_SHAPES:
        Z, H, N_CTX, D = shape
        q, k, v = (torch.randn(shape, device=dev, dtype=torch.float16) * 0.5 for _ in range(3))
        o = torch.full(shape, float("nan"), device=dev, dtype=torch.float16)
        m = torch.empty((Z, H, N_CTX), device=dev)
        for causal in (False, True):
            fns = {i: (lambda i=i: attention(attn[i], q, k, v, o, m, causal, shape)) for i in impls}
            fns["torch"] = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                                     scale=ATTN_SM_SCALE)
            ref = fns["torch"]()

            def check(ref):
                torch.testing.assert_close(o, ref, atol=1e-2, rtol=0)
                o.fill_(float("nan"))
            add_row(f"attn fwd fp16{' causal' if causal else ''}", f"{Z}x{H}x{N_CTX}x{D}", 4 * q.numel() * 2, fns,
                    ref, check, flops=attn_flops(causal, shape))


def _per_launch_us(rows, n, rounds=21):
    """Host time per launch of each ``(label, fn)``: the minimum over ``rounds`` rounds, each timing ``n`` launches
    (then a synchronize) of every row in turn, so that a slow spell of the host hits every row alike (many short
    rounds: on a shared host a row's figure varies by a microsecond from one round to the next)."""
    import torch

    best = {label: None for label, _ in rows}
    for _ in range(rounds):
        for label, fn in rows:
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / n * 1e6
            best[label] = dt if best[label] is None else min(best[label], dt)
    return best


def launch_overhead(report, impls, args):
    """Host time per launch of a cached kernel on a one-program grid (minimum over 21 interleaved rounds of N
    launches per row)."""
    import torch

    from cuda.bindings import driver as cu

    N = 1000 if args.quick else 3000
    n = 1024
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    res = report["launch_us"]
    pending = []

    def measure(label, fn):
        try:
            fn()  # a row that fails is reported, not timed
            pending.append((label, fn))
        except Exception as e:  # noqa: BLE001
            report["errors"]["launch " + label] = f"{type(e).__name__}: {e}"
            print(f"launch overhead {label:<58} FAILED: {type(e).__name__}: {e}", flush=True)

    def run_pending():
        times = _per_launch_us(pending, N)
        for label, _ in pending:
            res[label] = times[label]
            print(f"launch overhead {label:<58} {res[label]:7.2f} us", flush=True)
        pending.clear()

    T, R = impls["triton"], impls["tritium"]
    measure("triton  kernel[grid](...)", lambda: T.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024))
    measure("tritium kernel[grid](...)", lambda: R.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024))
    for label, K in (("triton ", T), ("tritium", R)):
        try:
            tuned, heur = launch_variants(K)
            tuned[(1,)](x, y, out, n)  # tunes (benchmarks both configs) once
            measure(f"{label} autotuned kernel[grid](...), after tuning",
                    lambda tuned=tuned: tuned[(1,)](x, y, out, n))
            measure(f"{label} heuristics kernel[grid](...)", lambda heur=heur: heur[(1,)](x, y, out, n))
        except Exception as e:  # noqa: BLE001
            report["errors"][f"launch {label.strip()} autotuned/heuristics"] = f"{type(e).__name__}: {e}"
    try:  # the driver call from C (tritium's extension), the floor any Python launcher sits on
        from tritium_nvidia import _cuda_launch, driver as nd

        rk = R.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)
        lk = rk.loaded[torch.cuda.current_device()]
        report["tritium_c_launcher"] = nd.c_launcher() is not None
        report["tritium_c_direct"] = "launch_direct" in repr(R.add_kernel.cache.fast and next(iter(
            R.add_kernel.cache.fast.values())).direct)
        if not _cuda_launch.available():
            lk.packer.pack([x.data_ptr(), y.data_ptr(), out.data_ptr(), n])
            fi, pi, si = int(lk.function), lk.packer.params, torch.cuda.current_stream().cuda_stream
            measure("bare cuLaunchKernel from C (tritium_nvidia._cuda_launch)",
                    lambda: _cuda_launch.launch(fi, 1, 1, 1, lk.block, lk.dynamic_shared, si, pi))
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch C"] = f"{type(e).__name__}: {e}"
    try:  # where tritium's kernel[grid] time goes, piece by piece (each row includes the pieces below it)
        launch_pieces(report, R.add_kernel, x, y, out, n, measure)
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch pieces"] = f"{type(e).__name__}: {e}"
    try:
        tk = T.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)
        measure("triton  CompiledKernel[grid](...)", lambda: tk[(1, 1, 1)](x, y, out, n, 1024))
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch triton compiled"] = repr(e)
    try:
        rk = R.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)
        from tritium.runtime import driver as tdriver

        d = tdriver.get_driver("cuda")
        measure("tritium CompiledKernel[grid](...)", lambda: rk[(1,)](x, y, out, n))
        measure("tritium driver.launch(kernel, grid, args)", lambda: d.launch(rk, (1, 1, 1), [x, y, out, n]))
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch tritium compiled"] = f"{type(e).__name__}: {e}"
    # the launcher alone, on the hand-written PTX vector add (independent of tritium's compiler)
    try:
        ck = ptx_kernel()
        if ck is not None:
            from tritium.runtime import driver as tdriver

            d = tdriver.get_driver("cuda")
            measure("ptx add: CompiledKernel[grid](...)", lambda: ck[(1,)](x, y, out, n))
            measure("ptx add: tritium.runtime.driver.launch (core)",
                    lambda: tdriver.launch(ck, (1, 1, 1), [x, y, out, n]))
            measure("ptx add: CUDADriver.launch(kernel, grid, args)", lambda: d.launch(ck, (1, 1, 1), [x, y, out, n]))
            lk = d.load(ck)
            s = d._stream(torch.cuda.current_stream().cuda_stream)
            args_ = [x, y, out, n]
            measure("ptx add: launcher only (pack + cuLaunchKernel)", lambda: lk.launch(1, 1, 1, s, args_))
            p = lk.packer
            p.pack([x.data_ptr(), y.data_ptr(), out.data_ptr(), n])
            f, params = lk.function, p.params
            measure("ptx add: bare cuda.bindings cuLaunchKernel",
                    lambda: cu.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, 0))
            import ctypes
            tup = ((x.data_ptr(), y.data_ptr(), out.data_ptr(), n),
                   (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
            measure("ptx add: cuLaunchKernel, (values, types) tuple",
                    lambda: cu.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, tup, 0))
            torch.cuda.synchronize()
            torch.testing.assert_close(out, x + y)
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch ptx"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    run_pending()
    # the same without plugins that implement the launch hooks (none of the first-party ones while idle)
    try:
        from tritium.plugins import get_plugin_manager, unregister

        pm = get_plugin_manager()
        hooked = [pm.get_name(i.plugin) for i in pm.hook.tritium_launch_enter.get_hookimpls()
                  + pm.hook.tritium_launch_exit.get_hookimpls()]
        for name in sorted(set(hooked)):
            unregister(name=name)
        report["launch_hook_plugins_removed"] = sorted(set(hooked))
        measure("tritium kernel[grid](...), no launch-hook plugins",
                lambda: R.add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024))
        ck = ptx_kernel()
        if ck is not None:
            from tritium.runtime import driver as tdriver

            measure("ptx add: core driver.launch, no launch-hook plugins",
                    lambda: tdriver.launch(ck, (1, 1, 1), [x, y, out, n]))
        run_pending()
    except Exception as e:  # noqa: BLE001
        report["errors"]["launch no hooks"] = f"{type(e).__name__}: {e}"


def launch_pieces(report, k, x, y, out, n, measure):
    """Rows for the pieces of a cached ``k[(1,)](x, y, out, n, BLOCK_SIZE=1024)``: the subscript alone, the C
    relaunch called directly (binding, key, lookup, direct launch), the entry's direct launch with the addresses
    (stream, packing, cuLaunchKernel), torch's accessors of the three tensors, torch's current-stream getter; and
    ``report["launch_python_calls"]``: the Python-level calls one launch makes (0 on the C path)."""
    import sys

    import torch

    g = (1,)
    for _ in range(3):
        k[g](x, y, out, n, BLOCK_SIZE=1024)
    calls = []

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)
    sys.setprofile(profile)
    try:
        k[g](x, y, out, n, BLOCK_SIZE=1024)
    finally:
        sys.setprofile(None)
    report["launch_python_calls"] = calls
    measure("tritium pieces: kernel[grid] subscript alone", lambda: k[g])
    state = k._launcher.c_state if k._launcher else None
    if state is not None:
        from tritium._speedups import launch as c_launch

        measure("tritium pieces: _speedups.launch(state, grid, ...)",
                lambda: c_launch(state, g, x, y, out, n, BLOCK_SIZE=1024))
    entry = next(iter(k.cache.fast.values()))
    if entry.direct is not None:
        d, px, py, po = entry.direct, x.data_ptr(), y.data_ptr(), out.data_ptr()
        measure("tritium pieces: entry.direct(gx, addresses, n)", lambda: d(1, px, py, po, n, 1024))
    measure("tritium pieces: torch data_ptr/get_device/dtype x3",
            lambda: (x.data_ptr(), x.get_device(), x.dtype, y.data_ptr(), y.get_device(), y.dtype,
                     out.data_ptr(), out.get_device(), out.dtype))
    raw = torch._C._cuda_getCurrentRawStream
    measure("tritium pieces: torch _cuda_getCurrentRawStream(0)", lambda: raw(0))


def ptx_kernel():
    """The hand-written PTX vector add (tests/gpu/ptx) as a CompiledKernel, or None without a cubin."""
    from tritium.compiler.compiler import CompiledKernel

    p = ROOT / ".gpu" / "ptx" / "launcher_kernels.cubin"
    if not p.exists():
        return None
    md = {"name": "add_kernel", "num_warps": 4, "shared": 0, "backend": "cuda",
          "signature": {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"},
          "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}
    return CompiledKernel({"cubin": p.read_bytes()}, md)


# ------------------------------------------------------------------------------------------- output
def header(flops=False):
    u = "TFLOP/s" if flops else "GB/s"
    return (f"{'workload':<20} {'size':<14} {'tritium ms':>10} {'triton ms':>10} {'torch ms':>9} "
            f"{'tritium ' + u:>16} {'triton ' + u:>15} {'torch ' + u:>14} {'/triton':>8} {'/torch':>7}")


def fmt_row(r):
    def f(v, w, p=3):
        return f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) and v is not None else f"{'-':>{w}}"
    u, p = ("TFLOPs", 1) if r.get("flops") else ("GBps", 0)
    return (f"{r['workload']:<20} {r['size']:<14} {f(r.get('tritium_ms'), 10)} {f(r.get('triton_ms'), 10)} "
            f"{f(r.get('torch_ms'), 9)} {f(r.get('tritium_' + u), 16, p)} {f(r.get('triton_' + u), 15, p)} "
            f"{f(r.get('torch_' + u), 14, p)} {f(r.get('tritium/triton'), 8, 2)} {f(r.get('tritium/torch'), 7, 2)}")


def summary(report):
    lines = [f"device: {report.get('device')}  torch {report.get('torch')}  triton {report.get('triton')}  "
             f"tritium target {report.get('tritium_target')}", header()]
    rows = report.get("rows", [])
    lines += [fmt_row(r) for r in rows if not r.get("flops")]
    if any(r.get("flops") for r in rows):
        lines += [header(flops=True)] + [fmt_row(r) for r in rows if r.get("flops")]
    launch = report.get("launch_us", {})
    bare = launch.get("ptx add: bare cuda.bindings cuLaunchKernel")
    for k, v in launch.items():
        lines.append(f"launch overhead {k:<58} {v:7.2f} us" + (f"  {v / bare:5.2f}x bare" if bare else ""))
    if "triton_cold_compile_s" in report:
        lines.append(f"triton cold compile of vector add (on the GPU machine, fresh TRITON_CACHE_DIR): "
                     f"{report['triton_cold_compile_s']:.2f} s")
    for k, v in report.get("triton_cold_compile_more_s", {}).items():
        lines.append(f"triton cold compile of {k} (on the GPU machine, fresh TRITON_CACHE_DIR): {v:.2f} s")
    cc = (report.get("compile_here") or {}).get("tritium_cold_compile_s")
    if cc and "first_in_process" in cc:
        lines.append(f"tritium cold compile of vector add (measured on the CPU machine, where tritium compiles): "
                     f"{cc['first_in_process']:.2f} s first in process, {cc['warm_process']:.2f} s warm process")
    for k in ("matmul_fp16", "attention_fwd_fp16"):
        if cc and k in cc:
            lines.append(f"tritium cold compile of {k} (measured on the CPU machine, warm process, fresh cache "
                         f"dir): {cc[k]:.2f} s")
    for k, v in report.get("errors", {}).items():
        lines.append(f"error: {k}: {v}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--compile-json", help="the --compile-only report (tritium's cold compile time) to include")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--rounds", type=int, default=3,
                    help="each row's implementations measured in turns this many times, the median reported")
    ap.add_argument("--rows", help="only the rows whose 'workload size' matches this regular expression "
                                   "(e.g. 'attn' or 'matmul fp16 4096')")
    ap.add_argument("--launch-only", action="store_true",
                    help="only the host launch-overhead table (with --compile-only: only its kernels)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.compile_only:
        report = compile_launch_kernels(args) if args.launch_only else compile_only(args)
    elif args.launch_only:
        report = run_launch_only(args)
    else:
        report = run_gpu(args)
        if args.compile_json and os.path.exists(args.compile_json):
            report["compile_here"] = json.loads(Path(args.compile_json).read_text())
        print()
        print(summary(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
