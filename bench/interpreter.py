"""Interpreter benchmark: the same tutorial kernels on tritium's interpreter and on Triton's (TRITON_INTERPRET=1).

    python bench/interpreter.py [--repeat N] [--triton-python PATH] [--json OUT]
    python bench/interpreter.py --cold       # each small kernel's first launch (cache empty), in a warm process
    python bench/interpreter.py --races      # tritium alone, without and with TRITIUM_INTERPRET_CHECKS=races

Each implementation runs in its own worker process (Triton reads TRITON_INTERPRET at import), on the same
inputs, in one invocation of this script.  Triton's side needs ``triton`` and ``torch``; without them it is
skipped with a message.  ``--triton-python`` runs Triton's worker under another Python (a venv with triton and
torch).  Times are the median of ``--repeat`` launches after one warm-up launch (which compiles).

``--cold``: the cold start of a kernel, what a kernel library's unit tests pay for every kernel they launch once
(bench/small_kernels.py): each worker first launches one throwaway kernel (the process's one-time costs: imports,
plugins), then times the first launch of each small kernel, tritium with an empty kernel cache; ``--repeat``
fresh processes, the median of each.
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

WORKLOADS = {
    "vector_add": "vector add, 2^20 float32, BLOCK 1024",
    "softmax": "softmax 1024x1024 float32, one row per program",
    "layer_norm": "layer norm fwd 512x1000 float32, BLOCK 256",
}


def _wrapper(impl: str):
    """What a NumPy array becomes for ``impl``'s kernels: a torch tensor on it for Triton, itself for tritium."""
    if impl == "triton":
        import torch

        return torch.from_numpy
    return lambda a: a


def _worker(impl: str, repeat: int, names: list) -> dict:
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from tests.e2e import kernels as K  # the tests' tutorial kernels, against BENCH_IMPL

    wrap = _wrapper(impl)
    rng = np.random.default_rng(0)
    results = {}

    def timeit(fn, check):
        fn()  # warm-up: compiles
        check()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    if "vector_add" in names:
        n = 1 << 20
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        out = np.empty_like(x)
        tx, ty, to = wrap(x), wrap(y), wrap(out)

        def check():
            np.testing.assert_array_equal(out, x + y)

        results["vector_add"] = timeit(lambda: K.add_kernel[(n // 1024,)](tx, ty, to, n, BLOCK_SIZE=1024), check)

    if "softmax" in names:
        x = rng.standard_normal((1024, 1024), dtype=np.float32)
        out = np.empty_like(x)
        tx, to = wrap(x), wrap(out)

        def check():
            e = np.exp(x - x.max(1, keepdims=True))
            np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)

        results["softmax"] = timeit(lambda: K.softmax_kernel[(1024,)](to, tx, 1024, 1024, 1024, BLOCK_SIZE=1024),
                                    check)

    if "layer_norm" in names:
        M, N = 512, 1000
        x = rng.standard_normal((M, N), dtype=np.float32)
        w, b = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
        y = np.empty_like(x)
        mean, rstd = np.empty(M, np.float32), np.empty(M, np.float32)
        t = [wrap(a) for a in (x, y, w, b, mean, rstd)]

        def check():
            mu = x.mean(1, keepdims=True)
            rs = 1 / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5)
            np.testing.assert_allclose(y, (x - mu) * rs * w + b, rtol=1e-4, atol=1e-4)

        results["layer_norm"] = timeit(
            lambda: K._layer_norm_fwd_fused[(M,)](*t, N, N, 1e-5, BLOCK_SIZE=256), check)
    return results


COLD = {
    "scale": "y = a * x, 1000 float32, 4 programs",
    "relu_sq": "relu(x)^2 with tl.where, 1000 float32",
    "row_sum": "row sums of 16x100, one row per program",
    "rms": "RMS norm of 16x100, one row per program",
    "silu_mul": "silu(a) * b, 1000 float32",
}


def _cold_worker(impl: str, names: list) -> dict:
    """First-launch seconds of each small kernel in ``names``, after one throwaway launch (see ``--cold``)."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    import small_kernels as S

    wrap = _wrapper(impl)
    rng = np.random.default_rng(0)

    def arr(*shape):
        return wrap(rng.standard_normal(shape, dtype=np.float32))

    S.warm[(1,)](arr(64), BLOCK=64)
    x, y, X, W, Y = arr(1000), arr(1000), arr(16, 100), arr(100), arr(16, 100)
    launches = {
        "scale": lambda: S.scale[(4,)](x, y, 1000, 2.0, BLOCK=256),
        "relu_sq": lambda: S.relu_sq[(4,)](x, y, 1000, BLOCK=256),
        "row_sum": lambda: S.row_sum[(16,)](X, y, N=100, BLOCK=128),
        "rms": lambda: S.rms[(16,)](X, W, Y, N=100, eps=1e-6, BLOCK=128),
        "silu_mul": lambda: S.silu_mul[(4,)](x, x, y, 1000, BLOCK=256),
    }
    out = {}
    for name in names:
        t0 = time.perf_counter()
        launches[name]()
        out[name] = time.perf_counter() - t0
    return out


def _run_worker(python: str, impl: str, repeat: int, names: list, cold: bool = False):
    env = dict(os.environ, BENCH_IMPL=impl)
    env.pop("TRITIUM_INTERPRET_CHECKS", None)
    if impl == "tritium-races":  # the race detector's cost: the same worker with the check on
        impl = env["BENCH_IMPL"] = "tritium"
        env["TRITIUM_INTERPRET_CHECKS"] = "races"
    if impl == "triton":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
        env["TRITIUM_TARGET"] = "interpreter"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "core"), str(ROOT / "backends" / "interpreter"),
                                                          env.get("PYTHONPATH")]))
    call = f"b._cold_worker({impl!r}, {names!r})" if cold else f"b._worker({impl!r}, {repeat}, {names!r})"
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import interpreter as b; "
            f"print('RESULT' + json.dumps({call}))")
    with tempfile.TemporaryDirectory(prefix="bench-interp-cache-") as cache:
        env["TRITIUM_CACHE_DIR"] = cache  # every worker starts with an empty kernel cache
        r = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:]), None
    return None, (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]


def _has_triton(python: str) -> bool:
    try:
        r = subprocess.run([python, "-c", "import triton, torch"], capture_output=True)
    except OSError:  # no such interpreter
        return False
    return r.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--triton-repeat", type=int, default=3)
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--only", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--json", default=str(HERE / "out" / "interpreter.json"))
    ap.add_argument("--races", action="store_true", help="the race detector's cost (tritium only)")
    ap.add_argument("--cold", action="store_true", help="each small kernel's first launch, cache empty")
    args = ap.parse_args(argv)
    if args.races:
        return races_cost(args)
    if args.cold:
        return cold_start(args)

    ours, err = _run_worker(sys.executable, "tritium", args.repeat, args.only)
    if ours is None:
        print("tritium worker failed:", *err, sep="\n  ")
        return 1
    theirs = None
    if _has_triton(args.triton_python):
        theirs, err = _run_worker(args.triton_python, "triton", args.triton_repeat, args.only)
        if theirs is None:
            print("Triton's interpreter failed:", *err, sep="\n  ")
    else:
        print(f"Triton's interpreter skipped: `import triton, torch` fails under {args.triton_python} "
              "(pip install triton torch, or pass --triton-python)")

    print(f"\n{'workload':<52} {'tritium s':>10} {'triton s':>10} {'speedup':>8}")
    rows = []
    for name in args.only:
        t_ours = ours[name]
        t_theirs = theirs.get(name) if theirs else None
        speed = t_theirs / t_ours if t_theirs else None
        rows.append({"workload": name, "description": WORKLOADS[name], "tritium_s": t_ours,
                     "triton_s": t_theirs, "speedup": speed})
        print(f"{WORKLOADS[name]:<52} {t_ours:>10.4f} "
              f"{(f'{t_theirs:.4f}' if t_theirs else '-'):>10} {(f'{speed:.1f}x' if speed else '-'):>8}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=2))
    return 0


def cold_start(args) -> int:
    """``--cold``: each small kernel's first launch on both interpreters, the median over ``--repeat`` processes."""
    names = list(COLD)
    runs = {"tritium": [], "triton": []}
    has_triton = _has_triton(args.triton_python)
    for _ in range(args.repeat):
        for impl, python in (("tritium", sys.executable), ("triton", args.triton_python)):
            if impl == "triton" and not has_triton:
                continue
            res, err = _run_worker(python, impl, 1, names, cold=True)
            if res is None:
                print(f"{impl} worker failed:", *err, sep="\n  ")
                return 1
            runs[impl].append(res)
    if not has_triton:
        print(f"Triton's interpreter skipped: `import triton, torch` fails under {args.triton_python}")
    print(f"\n{'first launch, cache empty':<52} {'tritium ms':>10} {'triton ms':>10} {'ratio':>8}")
    rows = []
    for name in names:
        ours = statistics.median(r[name] for r in runs["tritium"])
        theirs = statistics.median(r[name] for r in runs["triton"]) if runs["triton"] else None
        ratio = ours / theirs if theirs else None
        rows.append({"workload": name, "description": COLD[name], "tritium_s": ours, "triton_s": theirs,
                     "tritium_over_triton": ratio})
        print(f"{COLD[name]:<52} {ours * 1e3:>10.1f} {(f'{theirs * 1e3:.1f}' if theirs else '-'):>10} "
              f"{(f'{ratio:.2f}x' if ratio else '-'):>8}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "cold": rows}, indent=2))
    return 0


def races_cost(args) -> int:
    """``--races``: each workload on tritium's interpreter without and with TRITIUM_INTERPRET_CHECKS=races."""
    plain, err = _run_worker(sys.executable, "tritium", args.repeat, args.only)
    checked, err2 = _run_worker(sys.executable, "tritium-races", args.repeat, args.only)
    if plain is None or checked is None:
        print("tritium worker failed:", *(err or err2), sep="\n  ")
        return 1
    print(f"\n{'workload':<52} {'plain s':>10} {'races s':>10} {'cost':>8}")
    rows = []
    for name in args.only:
        ratio = checked[name] / plain[name]
        rows.append({"workload": name, "plain_s": plain[name], "races_s": checked[name], "ratio": ratio})
        print(f"{WORKLOADS[name]:<52} {plain[name]:>10.4f} {checked[name]:>10.4f} {ratio:>7.1f}x")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "races": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
