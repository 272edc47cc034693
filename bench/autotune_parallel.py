"""Parallel compilation of autotune configs: the wall time of compiling 16 matmul configs (the tutorial kernel of
tests/e2e/kernels.py, fp16, tile sizes 32-256, 4/8 warps, 2-5 stages) for cuda:90 without a GPU
(``TRITIUM_COMPILE_ONLY=1``), each run in a fresh process with a fresh kernel cache:

* serial: ``TRITIUM_AUTOTUNE_PRECOMPILE=0``, the configs compiled one after another in the process;
* workers: ``Autotuner.warmup`` with ``TRITIUM_AUTOTUNE_PRECOMPILE=1`` and ``TRITIUM_COMPILE_WORKERS`` = 1, 2, ...
  up to the CPU count (spawned worker processes compile, the process loads the kernels from the file cache);
* and, with ``--remote redis://...``, a process against a warm remote cache (the kernels another process compiled
  and wrote through): its time to have every config.

    python bench/autotune_parallel.py [--workers 1,2,4] [--remote redis://127.0.0.1:6379/0] [--tunings 2]
    python bench/autotune_parallel.py --concurrent 4    # 4 such processes at once: a busy machine

``--tunings N`` tunes the configs for N dtypes one after another in each process (the later tunings find the
compile pool's workers started and their imports done); ``--concurrent P`` starts P processes at once, each
tuning, and times the last one's end: compiling serially, with the default number of workers (the CPUs the others
leave free) and with as many workers each as there are CPUs.

``--gpu`` (on a GPU machine, torch and Triton 3.6 installed): the same 16 configs autotuned for real on a 4096^3
fp16 matmul, compile + benchmark, time to the first launch's result: tritium compiling serially, in N workers
(each config benchmarked as soon as a worker has compiled it), against a cold and a warm remote cache; and Triton
3.6's ``triton.autotune`` of the same configs on the same kernel text (``BENCH_IMPL=triton``), each in a fresh
process with fresh caches. ``TRITIUM_CACHE_AUTOTUNING=1`` in the remote rows: the warm process loads the tuned
config too, as a fleet's second node would.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import time, json, sys
t0 = time.perf_counter()
import tritium as triton
from tests.e2e import kernels as K
from bench.autotune_parallel import CONFIGS
configs = [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
                         num_warps=w, num_stages=s) for (m, n, k, w, s) in CONFIGS]
import os
k = triton.autotune(configs=configs, key=["M", "N", "K"])(K.matmul_kernel)
t1 = time.perf_counter()
each = []
for dt in os.environ.get("BENCH_DTYPES", "fp16").split(","):  # one tuning per dtype, one after another
    t = time.perf_counter()
    ks = k.warmup(f"*{dt}", f"*{dt}", f"*{dt}", 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, ACTIVATION="",
                  grid=(1,))
    each.append(time.perf_counter() - t)
t2 = time.perf_counter()
print("RESULT " + json.dumps({"configs": len(ks), "import_s": t1 - t0, "compile_s": t2 - t1, "each_s": each,
                              "mode": getattr(k, "last_precompile", None) and k.last_precompile.mode}))
'''


GPU_CHILD = r'''
import time, json, os, sys
t0 = time.perf_counter()
import importlib
triton = importlib.import_module(os.environ.get("BENCH_IMPL", "tritium"))
import torch
from tests.e2e import kernels as K
from bench.autotune_parallel import CONFIGS
configs = [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
                         num_warps=w, num_stages=s) for (m, n, k, w, s) in CONFIGS]
k = triton.autotune(configs=configs, key=["M", "N", "K"])(K.matmul_kernel)
M = N = Kd = 4096
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn((M, Kd), device="cuda", dtype=torch.float16, generator=g)
b = torch.randn((Kd, N), device="cuda", dtype=torch.float16, generator=g)
c = torch.empty((M, N), device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t1 = time.perf_counter()
grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
k[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        ACTIVATION="")
torch.cuda.synchronize()
t2 = time.perf_counter()
err = (c.float() - (a.float() @ b.float())).abs().max().item()
pc = getattr(k, "last_precompile", None)
print("RESULT " + json.dumps({"configs": len(configs), "import_s": t1 - t0, "compile_s": t2 - t1,
                              "first_launch_s": t2 - t0, "max_err": err, "best": str(k.best_config),
                              "mode": pc.mode if pc else None}))
'''

CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
           (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 4, 5), (32, 64, 32, 4, 5),
           (128, 128, 64, 8, 3), (256, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 64, 64, 4, 3),
           (64, 128, 64, 4, 3), (256, 64, 64, 8, 4), (128, 256, 32, 8, 4), (64, 64, 32, 4, 2)]


def run(env_extra: dict, cache: str, gpu: bool = False) -> dict:
    return finish(start(env_extra, cache, gpu))


def start(env_extra: dict, cache: str, gpu: bool = False):
    """One child process, started (its result: :func:`finish`)."""
    if gpu:
        env = dict(os.environ, TRITIUM_CACHE_DIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton"), **env_extra)
        env.pop("TRITIUM_TARGET", None)
    else:
        env = dict(os.environ, TRITIUM_COMPILE_ONLY="1", TRITIUM_TARGET="cuda:90", TRITIUM_CACHE_DIR=cache,
                   **env_extra)
    env.pop("TRITIUM_DISABLE_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    p = subprocess.Popen([sys.executable, "-c", GPU_CHILD if gpu else CHILD], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
    return p, time.perf_counter()


def finish(started) -> dict:
    p, t = started
    out, err = p.communicate(timeout=1800)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(out[-3000:] + err[-3000:])
    res = json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][7:])
    return {**res, "wall_s": wall}


def concurrent(n: int, env_extra: dict, tmp: str, tag: str) -> dict:
    """``n`` processes started at once, each tuning on its own cache: the wall time until the last is done."""
    t = time.perf_counter()
    procs = [start(env_extra, os.path.join(tmp, f"{tag}{i}")) for i in range(n)]
    rows = [finish(p) for p in procs]
    return {"configs": sum(r["configs"] for r in rows), "compile_s": time.perf_counter() - t,
            "wall_s": time.perf_counter() - t, "mode": ",".join(sorted({str(r["mode"]) for r in rows})),
            "each_s": [round(r["compile_s"], 2) for r in rows]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ncpu = os.cpu_count() or 1
    ap.add_argument("--workers", default=",".join(str(n) for n in sorted({1, 2, ncpu}) if n <= ncpu))
    ap.add_argument("--remote", help="a redis:// (or file://) remote cache for the warm-remote row")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--gpu", action="store_true", help="autotune for real on the GPU, beside Triton 3.6")
    ap.add_argument("--tunings", type=int, default=1,
                    help="tunings one after another in each process (fp16, bf16, fp32): the later ones find the "
                         "compile pool started")
    ap.add_argument("--concurrent", type=int, default=0,
                    help="instead: this many processes at once, each tuning (a busy machine: pytest-xdist workers), "
                         "serial, with the default worker count, and with TRITIUM_COMPILE_WORKERS = the CPU count")
    a = ap.parse_args(argv)
    gpu = a.gpu
    rows = []
    os.environ["BENCH_DTYPES"] = ",".join(["fp16", "bf16", "fp32"][:max(1, a.tunings)])
    if a.concurrent:
        with tempfile.TemporaryDirectory() as tmp:
            for label, env in (("serial (in process)", {"TRITIUM_AUTOTUNE_PRECOMPILE": "0"}),
                               ("default workers (free CPUs)", {"TRITIUM_AUTOTUNE_PRECOMPILE": "1"}),
                               (f"{ncpu} workers each", {"TRITIUM_AUTOTUNE_PRECOMPILE": "1",
                                                         "TRITIUM_COMPILE_WORKERS": str(ncpu)})):
                env = {**env, "TRITIUM_COMPILE_WORKERS": env.get("TRITIUM_COMPILE_WORKERS", "")}
                rows.append((f"{a.concurrent} processes, {label}", concurrent(a.concurrent, env, tmp, label[:3])))
        print(f"{a.concurrent} processes at once, each tuning 16 matmul configs x {a.tunings} for cuda:90 "
              f"(compile only), {ncpu} CPUs")
        for label, r in rows:
            print(f"{label:<50} all done in {r['wall_s']:7.2f} s  per process {r['each_s']}  mode {r['mode']}")
        if a.json:
            Path(a.json).write_text(json.dumps([{"label": lb, **r} for lb, r in rows], indent=1))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        r = run({"TRITIUM_AUTOTUNE_PRECOMPILE": "0"}, os.path.join(tmp, "serial"), gpu)
        rows.append(("tritium serial (in process)", r))
        for n in [int(x) for x in a.workers.split(",") if x]:
            r = run({"TRITIUM_AUTOTUNE_PRECOMPILE": "1", "TRITIUM_COMPILE_WORKERS": str(n)},
                    os.path.join(tmp, f"w{n}"), gpu)
            rows.append((f"tritium {n} worker{'s' if n > 1 else ''}", r))
        if gpu:
            rows.append(("Triton 3.6 (triton.autotune)", run({"BENCH_IMPL": "triton"}, os.path.join(tmp, "t"), gpu)))
        if a.remote:
            env = {"TRITIUM_AUTOTUNE_PRECOMPILE": "1", "TRITIUM_REMOTE_CACHE": a.remote}
            if gpu:
                env["TRITIUM_CACHE_AUTOTUNING"] = "1"
            rows.append(("tritium, cold remote (compiles, writes through)", run(env, os.path.join(tmp, "r1"), gpu)))
            rows.append(("tritium, warm remote (another process compiled)", run(env, os.path.join(tmp, "r2"), gpu)))
    what = "autotuned on the GPU (compile + benchmark), 4096^3 fp16" if gpu else "for cuda:90, compile only"
    print(f"16 matmul configs {what}, {ncpu} CPUs")
    base = rows[0][1]["compile_s"]
    for label, r in rows:
        extra = f"  first launch {r['first_launch_s']:6.2f} s  err {r['max_err']:.3g}  best {r['best']}" if gpu else ""
        print(f"{label:<50} {r['configs']:>3} configs  {'tune' if gpu else 'compile'} {r['compile_s']:7.2f} s "
              f"({base / r['compile_s']:4.2f}x)  process {r['wall_s']:6.2f} s  mode {r['mode']}{extra}"
              + (f"  each tuning {[round(t, 2) for t in r['each_s']]}" if len(r.get("each_s", ())) > 1 else ""))
    if a.json:
        Path(a.json).write_text(json.dumps([{"label": lb, **r} for lb, r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
