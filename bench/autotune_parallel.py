"""Parallel compilation of autotune configs: the wall time of compiling 16 matmul configs (the tutorial kernel of
tests/e2e/kernels.py, fp16, tile sizes 32-256, 4/8 warps, 2-5 stages) for cuda:90 without a GPU
(``TRITIUM_COMPILE_ONLY=1``), each run in a fresh process with a fresh kernel cache:

* serial: ``TRITIUM_AUTOTUNE_PRECOMPILE=0``, the configs compiled one after another in the process;
* workers: ``Autotuner.warmup`` with ``TRITIUM_AUTOTUNE_PRECOMPILE=1`` and ``TRITIUM_COMPILE_WORKERS`` = 1, 2, ...
  up to the CPU count (spawned worker processes compile, the process loads the kernels from the file cache);
* and, with ``--remote redis://...``, a process against a warm remote cache (the kernels another process compiled
  and wrote through): its time to have every config.

    python bench/autotune_parallel.py [--workers 1,2,4] [--remote redis://127.0.0.1:6379/0]
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
configs = [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
                         num_warps=w, num_stages=s)
           for (m, n, k, w, s) in [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                                   (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 4, 5), (32, 64, 32, 4, 5),
                                   (128, 128, 64, 8, 3), (256, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 64, 64, 4, 3),
                                   (64, 128, 64, 4, 3), (256, 64, 64, 8, 4), (128, 256, 32, 8, 4), (64, 64, 32, 4, 2)]]
k = triton.autotune(configs=configs, key=["M", "N", "K"])(K.matmul_kernel)
t1 = time.perf_counter()
ks = k.warmup("*fp16", "*fp16", "*fp16", 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, ACTIVATION="",
              grid=(1,))
t2 = time.perf_counter()
print("RESULT " + json.dumps({"configs": len(ks), "import_s": t1 - t0, "compile_s": t2 - t1,
                              "mode": getattr(k, "last_precompile", None) and k.last_precompile.mode}))
'''


def run(env_extra: dict, cache: str) -> dict:
    env = dict(os.environ, TRITIUM_COMPILE_ONLY="1", TRITIUM_TARGET="cuda:90", TRITIUM_CACHE_DIR=cache, **env_extra)
    env.pop("TRITIUM_DISABLE_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(p.stdout[-3000:] + p.stderr[-3000:])
    res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    return {**res, "wall_s": wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ncpu = os.cpu_count() or 1
    ap.add_argument("--workers", default=",".join(str(n) for n in sorted({1, 2, ncpu}) if n <= ncpu))
    ap.add_argument("--remote", help="a redis:// (or file://) remote cache for the warm-remote row")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        r = run({"TRITIUM_AUTOTUNE_PRECOMPILE": "0"}, os.path.join(tmp, "serial"))
        rows.append(("serial (in process)", r))
        for n in [int(x) for x in a.workers.split(",") if x]:
            r = run({"TRITIUM_AUTOTUNE_PRECOMPILE": "1", "TRITIUM_COMPILE_WORKERS": str(n)},
                    os.path.join(tmp, f"w{n}"))
            rows.append((f"{n} worker{'s' if n > 1 else ''}", r))
        if a.remote:
            env = {"TRITIUM_AUTOTUNE_PRECOMPILE": "1", "TRITIUM_REMOTE_CACHE": a.remote}
            rows.append(("cold remote (compiles, writes through)", run(env, os.path.join(tmp, "r1"))))
            rows.append(("warm remote (another process compiled)", run(env, os.path.join(tmp, "r2"))))
    print(f"16 matmul configs for cuda:90, compile only, {ncpu} CPUs")
    base = rows[0][1]["compile_s"]
    for label, r in rows:
        print(f"{label:<42} {r['configs']:>3} configs  compile {r['compile_s']:7.2f} s  ({base / r['compile_s']:4.2f}x)"
              f"  process {r['wall_s']:6.2f} s  mode {r['mode']}")
    if a.json:
        Path(a.json).write_text(json.dumps([{"label": lb, **r} for lb, r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
