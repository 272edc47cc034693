"""Runtime benchmark: cold compile, warm start from the file cache, launch overhead, ``import tritium``.

    python bench/runtime.py [--launches N] [--imports N] [--triton-python PATH] [--json OUT]

* cold compile: a fresh process with an empty cache dir compiles vector add / softmax on the interpreter target;
  reported as ``compile()`` wall time and as (first launch - a warm launch);
* warm start: a second fresh process with that cache: its first launch (a file-cache hit: no MLIR import);
* launch overhead: a tiny kernel (1 program, 16 float32) launched N times: per-call µs with the interpreter
  running the program, and tritium's host cost alone (the program's execution stubbed out); Triton's interpreter on
  the same kernel when ``--triton-python`` has triton and torch;
* ``import tritium``: median wall time over fresh processes (and ``import triton`` for comparison).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TINY = '''
@triton.jit
def tiny(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
'''


def _env(impl: str, cache_dir: str = "") -> dict:
    env = dict(os.environ)
    if impl == "triton":
        env["TRITON_INTERPRET"] = "1"
        env.pop("TRITIUM_TARGET", None)
    else:
        env.pop("TRITON_INTERPRET", None)
        env["TRITIUM_TARGET"] = "interpreter"
        env["TRITIUM_CACHE_DIR"] = cache_dir
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "core"), str(ROOT / "backends" / "interpreter"),
                                                          env.get("PYTHONPATH")]))
    return env


def _run(python: str, code: str, env: dict) -> dict:
    r = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    raise RuntimeError((r.stderr or r.stdout).strip()[-2000:])


# ------------------------------------------------------------------------------------------- compile
COMPILE_WORKER = '''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
sys.path.insert(0, {root!r})
from tests.e2e import kernels as K
from tritium.runtime import cache
res = {{}}
n = 1 << 16
x = np.random.rand(n).astype(np.float32); y = np.random.rand(n).astype(np.float32); o = np.empty_like(x)
a = np.random.rand(64, 1024).astype(np.float32); b = np.empty_like(a)
runs = {{
    "vector_add": lambda: K.add_kernel[(n // 1024,)](x, y, o, n, BLOCK_SIZE=1024),
    "softmax": lambda: K.softmax_kernel[(64,)](b, a, 1024, 1024, 1024, BLOCK_SIZE=1024),
}}
for name, fn in runs.items():
    t = time.perf_counter(); fn(); first = time.perf_counter() - t
    warm = []
    for _ in range(3):
        t = time.perf_counter(); fn(); warm.append(time.perf_counter() - t)
    res[name] = {{"first": first, "warm": min(warm)}}
res["stats"] = dict(cache.stats)
res["mlir"] = any(m.split(".")[0] == "mlir" for m in sys.modules)
res["total"] = time.perf_counter() - t0
print("RESULT" + json.dumps(res))
'''

COMPILE_FN_WORKER = '''
import json, sys, time
sys.path.insert(0, {root!r})
from tests.e2e import kernels as K
from tritium.compiler import ASTSource, compile
res = {{}}
srcs = {{
    "vector_add": ASTSource(K.add_kernel, "*fp32,*fp32,*fp32,i32", {{"BLOCK_SIZE": 1024}}),
    "softmax": ASTSource(K.softmax_kernel, "*fp32,*fp32,i32,i32,i32", {{"BLOCK_SIZE": 1024}}),
}}
for name, src in srcs.items():
    t = time.perf_counter(); compile(src, target="interpreter", use_cache=False); res[name] = time.perf_counter() - t
print("RESULT" + json.dumps(res))
'''


def bench_compile() -> dict:
    with tempfile.TemporaryDirectory(prefix="tritium-bench-cache-") as d:
        cold = _run(sys.executable, COMPILE_WORKER.format(root=str(ROOT)), _env("tritium", d))
        warm = _run(sys.executable, COMPILE_WORKER.format(root=str(ROOT)), _env("tritium", d))
    with tempfile.TemporaryDirectory(prefix="tritium-bench-cache-") as d:
        fn = _run(sys.executable, COMPILE_FN_WORKER.format(root=str(ROOT)), _env("tritium", d))
    out = {}
    for name in ("vector_add", "softmax"):
        out[name] = {"compile_fn_s": fn[name],
                     "cold_first_minus_warm_s": cold[name]["first"] - cold[name]["warm"],
                     "cached_first_minus_warm_s": warm[name]["first"] - warm[name]["warm"],
                     "warm_launch_s": warm[name]["warm"]}
    out["cold_process_s"], out["cached_process_s"] = cold["total"], warm["total"]
    out["cached_stats"], out["cached_imported_mlir"] = warm["stats"], warm["mlir"]
    return out


# ------------------------------------------------------------------------------------------- launches
LAUNCH_WORKER = '''
import json, os, sys, time
import numpy as np
impl = {impl!r}
if impl == "triton":
    import torch, triton, triton.language as tl
    wrap = torch.from_numpy
else:
    import tritium as triton, tritium.language as tl
    wrap = lambda a: a
src = {tiny!r}
path = os.path.join({tmp!r}, "tiny_" + impl + ".py")
open(path, "w").write("import " + ("triton" if impl == "triton" else "tritium as triton") +
                      "\\nimport " + ("triton" if impl == "triton" else "tritium") + ".language as tl\\n" + src)
import importlib.util
spec = importlib.util.spec_from_file_location("tiny_" + impl, path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
x = wrap(np.arange(16, dtype=np.float32)); y = wrap(np.zeros(16, np.float32))
k = mod.tiny
ck = k[(1,)](x, y, 16, BLOCK=16)
assert float(y[3]) == 4.0
N = {n}
def per_call():
    t = time.perf_counter()
    for _ in range(N):
        k[(1,)](x, y, 16, BLOCK=16)
    return (time.perf_counter() - t) / N
res = {{"with_program": min(per_call() for _ in range(3))}}
if impl == "tritium":  # the program's execution stubbed: binding, lookups, the driver's argument conversion
    from tritium_interpreter.launcher import get_program
    get_program(ck).fn = lambda *a: None
    res["host_only"] = min(per_call() for _ in range(3))
print("RESULT" + json.dumps(res))
'''


def bench_launch(n: int, triton_python: str) -> dict:
    out = {}
    with tempfile.TemporaryDirectory(prefix="tritium-bench-") as tmp:
        out["tritium"] = _run(sys.executable, LAUNCH_WORKER.format(impl="tritium", tiny=TINY, tmp=tmp, n=n),
                              _env("tritium", os.path.join(tmp, "cache")))
        if triton_python and _has_triton(triton_python):
            try:
                out["triton"] = _run(triton_python, LAUNCH_WORKER.format(impl="triton", tiny=TINY, tmp=tmp,
                                                                         n=max(50, n // 20)), _env("triton"))
            except RuntimeError as e:
                out["triton_error"] = str(e).splitlines()[-1]
    return out


# ------------------------------------------------------------------------------------------- import
IMPORT_CODE = ("import time, json; t = time.perf_counter(); import {mod}; "
               "print('RESULT' + json.dumps(time.perf_counter() - t))")


def bench_import(n: int, triton_python: str) -> dict:
    out = {}
    times = [_run(sys.executable, IMPORT_CODE.format(mod="tritium"), _env("tritium", "")) for _ in range(n)]
    out["tritium_s"] = statistics.median(times)
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tritium"], env=_env("tritium", ""),
                       capture_output=True, text=True)
    out["heavy_imported"] = [ln.split("|")[-1].strip() for ln in r.stderr.splitlines()
                             if ln.split("|")[-1].strip().split(".")[0] in ("mlir", "llvmlite", "numpy")]
    if triton_python and _has_triton(triton_python):
        times = [_run(triton_python, IMPORT_CODE.format(mod="triton"), _env("triton")) for _ in range(n)]
        out["triton_s"] = statistics.median(times)
    return out


def _has_triton(python: str) -> bool:
    return subprocess.run([python, "-c", "import triton, torch"], capture_output=True).returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--imports", type=int, default=7)
    ap.add_argument("--triton-python", default="")
    ap.add_argument("--json", default=str(HERE / "out" / "runtime.json"))
    args = ap.parse_args(argv)

    res = {"compile": bench_compile(), "launch": bench_launch(args.launches, args.triton_python),
           "import": bench_import(args.imports, args.triton_python)}
    c, lau, imp = res["compile"], res["launch"], res["import"]
    print("| measure | tritium | Triton |")
    print("| --- | --- | --- |")
    for name in ("vector_add", "softmax"):
        r = c[name]
        print(f"| {name}: cold compile, `compile()` | {r['compile_fn_s'] * 1e3:.0f} ms | |")
        print(f"| {name}: cold first launch - warm launch (fresh process, empty cache) | "
              f"{r['cold_first_minus_warm_s'] * 1e3:.0f} ms | |")
        print(f"| {name}: cached first launch - warm launch (fresh process, file-cache hit) | "
              f"{r['cached_first_minus_warm_s'] * 1e3:.1f} ms | |")
    print(f"| whole worker process, empty cache / cached (both kernels) | {c['cold_process_s']:.2f} s / "
          f"{c['cached_process_s']:.2f} s | |")
    t = lau["tritium"]
    tr = lau.get("triton", {})
    trs = f"{tr['with_program'] * 1e6:.0f} µs" if tr else lau.get("triton_error", "not run")
    print(f"| relaunch, tiny kernel (1 program, 16 fp32), per call | {t['with_program'] * 1e6:.0f} µs | {trs} |")
    print(f"| relaunch, tritium host cost only (program stubbed) | {t['host_only'] * 1e6:.1f} µs | |")
    its = f"{imp['triton_s'] * 1e3:.0f} ms" if "triton_s" in imp else "not run"
    print(f"| `import tritium` / `import triton` (median of {args.imports} fresh processes) | "
          f"{imp['tritium_s'] * 1e3:.0f} ms | {its} |")
    print(f"cached process: stats {c['cached_stats']}, imported mlir: {c['cached_imported_mlir']}; "
          f"`import tritium` pulls in: {imp['heavy_imported'] or 'no mlir/llvmlite/numpy'}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
