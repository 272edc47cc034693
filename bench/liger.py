"""Liger-Kernel's own tests with tritium in place of Triton (or with Triton itself), unchanged and unpatched.

Liger-Kernel (github.com/linkedin/Liger-Kernel) is a kernel library that ``import triton``s: its tests run here
through ``TRITIUM_AS_TRITON=1`` alone (the start-up hook the package installs), from a checkout of its sources that
this script never copies into the project:

    python bench/liger.py --liger-src ~/Liger-Kernel                    # tritium, on the interpreter (CPU tensors)
    python bench/liger.py --fetch --ref main                             # git clone into a temporary directory
    python bench/liger.py --liger-src ~/Liger-Kernel --impl triton       # the same tests with Triton
    python bench/liger.py --liger-src ~/Liger-Kernel --device cuda       # on the GPU
    python bench/liger.py --liger-src ~/Liger-Kernel -- -k rms_norm -x   # after --: pytest's own arguments
    python bench/liger.py --src ~/attorch --device cuda -- tests --subset   # another library: its tests after --
    python bench/liger.py --liger-src L --device cuda --shard 1/3 --json t1.json   # a third of the files (one call)
    python bench/liger.py --compare t1.json t2.json t3.json r1.json r2.json r3.json  # per case, tritium vs Triton

The tests need ``transformers`` (``pip install transformers``); ``liger_kernel`` itself is put on ``PYTHONPATH``
from the checkout's ``src`` (installing it would pull a real Triton in). The default selection is
``test/transformers`` without the files for other DSLs (CuTe DSL, cuTile) and the model-patching tests, which test
Hugging Face model surgery rather than kernels. On the CPU, Liger's tests pick ``device = "cpu"`` when torch sees no
GPU, and tritium's interpreter runs the kernels (``TRITON_INTERPRET=1`` for Triton's interpreter). Prints pytest's
summary and, with ``--json``, the counts and every case's outcome (read from pytest's verbose lines as they come,
so a run cut short by ``--timeout`` still reports the cases it finished). ``--shard K/N`` runs the K-th of N
groups of the selected files (a suite longer than one session on a machine split over several); ``--compare``
merges such JSON files per implementation and compares the outcomes case by case.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP_FILES = ("cute", "cutile", "cutedsl", "monkey_patch", "auto_model")


def _select(src: str) -> list:
    files = sorted(glob.glob(os.path.join(src, "test", "transformers", "test_*.py")))
    return [f for f in files if not any(s in os.path.basename(f) for s in SKIP_FILES)]


_OUTCOME = r"(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)"


def case_outcomes(out: str) -> dict:
    """Each case's outcome from pytest's verbose lines (``path::test[id] PASSED`` or, under xdist,
    ``[gw0] [ 1%] PASSED path::test[id]``); the last one wins (an error in teardown after a pass)."""
    cases = {}
    for m in re.finditer(rf"^(?:\[gw\d+\] \[ *\d+%\] {_OUTCOME} (\S+::\S+)|(\S+::\S+) {_OUTCOME}\b)", out, re.M):
        if m.group(1):
            cases[m.group(2)] = m.group(1)
        else:
            cases[m.group(3)] = m.group(4)
    return cases


def shard(files: list, spec: str) -> list:
    """The K-th (1-based) of N interleaved groups of ``files`` for ``spec`` = ``"K/N"``."""
    k, n = (int(x) for x in spec.split("/"))
    if not 1 <= k <= n:
        raise ValueError(f"--shard {spec}: K must be between 1 and N")
    return files[k - 1::n]


def run(src: str, impl: str, device: str, pytest_args: list, timeout: int, log: str | None = None,
        shard_spec: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(src, "src"), src] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if impl == "tritium":
        env["TRITIUM_AS_TRITON"] = "1"
    else:
        env.pop("TRITIUM_AS_TRITON", None)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    files = [a for a in pytest_args if a.endswith(".py") or "::" in a] or _select(src)
    rest = [a for a in pytest_args if a not in files]
    if shard_spec:
        files = shard(files, shard_spec)
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-o", "addopts=", *files, *rest]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:  # keep what finished (pytest -rA lines, the progress so far)
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        out, rc = text(e.stdout) + text(e.stderr) + f"\n(timed out after {timeout} s)\n", None
    wall = time.perf_counter() - t
    if log:
        with open(log, "w") as f:
            f.write(out)
    last = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    summary = last[-1] if last else out[-2000:]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", summary)}
    cases = case_outcomes(out)
    if not last:  # stopped before pytest's summary (a timeout): count the cases -v reported finished
        counts = {}
        for o in cases.values():
            key = {"ERROR": "errors"}.get(o, o.lower())
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{v} {k}" for k, v in counts.items()) + " (before the timeout)"
    return {"impl": impl, "device": device, "summary": summary.strip("= "), "counts": counts, "wall_s": wall,
            "returncode": rc, "files": files, "cases": cases,
            "failures": [ln for ln in out.splitlines() if ln.startswith(("FAILED", "ERROR"))]}


def compare(paths: list) -> str:
    """The outcomes of the JSON files of runs (``--json``), merged per implementation, compared case by case."""
    per: dict = {}
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        per.setdefault(r["impl"], {}).update(r.get("cases", {}))
    lines = []
    for impl, cases in per.items():
        c: dict = {}
        for o in cases.values():
            c[o] = c.get(o, 0) + 1
        lines.append(f"{impl}: {len(cases)} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
    if len(per) == 2:
        (a, ca), (b, cb) = per.items()
        both = sorted(set(ca) & set(cb))
        diff = [k for k in both if ca[k] != cb[k]]
        lines.append(f"both ran {len(both)} cases; the same outcome on {len(both) - len(diff)}, different on "
                     f"{len(diff)}; only {a}: {len(set(ca) - set(cb))}, only {b}: {len(set(cb) - set(ca))}")
        lines += [f"  {k}: {a} {ca[k]}, {b} {cb[k]}" for k in diff]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--liger-src", "--src", dest="liger_src",
                    help="a Liger-Kernel checkout (or another library's, with its test paths after --)")
    ap.add_argument("--fetch", action="store_true", help="git clone Liger-Kernel into a temporary directory")
    ap.add_argument("--ref", default="main", help="the branch or tag --fetch checks out")
    ap.add_argument("--impl", choices=("tritium", "triton"), default="tritium")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--log", help="write pytest's whole output here")
    ap.add_argument("--shard", help="K/N: only the K-th of N groups of the selected test files")
    ap.add_argument("--compare", nargs="+", metavar="JSON", help="compare the per-case outcomes of --json files "
                    "(merged per implementation) and exit")
    a = ap.parse_args(argv)
    if a.compare:
        print(compare(a.compare))
        return 0
    tmp = None
    src = a.liger_src
    if a.fetch:
        tmp = tempfile.mkdtemp(prefix="liger-")
        subprocess.run(["git", "clone", "--depth", "1", "--branch", a.ref,
                        "https://github.com/linkedin/Liger-Kernel", tmp], check=True)
        src = tmp
    if not src:
        ap.error("give --liger-src DIR or --fetch")
    res = run(os.path.abspath(os.path.expanduser(src)), a.impl, a.device, extra, a.timeout, a.log, a.shard)
    print(f"{res['impl']} on {res['device']}: {res['summary']} ({res['wall_s']:.0f} s)")
    for f in res["failures"]:
        print("  " + f)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
