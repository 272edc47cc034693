#!/usr/bin/env python3
"""Run Triton's own test files against tritium (or against Triton, for the side-by-side count) and compare.

Triton's tests are never copied into this project: they are read from a Triton source tree, given with
``--triton-src`` or fetched at run time (``--fetch``: a shallow, sparse git clone of the tag, kept in
``~/.cache/tritium/triton-<tag>``).

    # tritium standing in for triton (tritium.install_as_triton(), scripts/conformance/tritium_as_triton.py)
    python scripts/triton_conformance.py run --triton-src ~/triton --impl tritium --junit out/tritium.xml -n 8
    # Triton itself, same files, same machine
    python scripts/triton_conformance.py run --triton-src ~/triton --impl triton --junit out/triton.xml -n 8
    # on the interpreter (TRITON_INTERPRET=1, --device cpu)
    python scripts/triton_conformance.py run --triton-src ~/triton --impl tritium --interpreter --junit out/i.xml
    # what Triton passes and tritium does not, by test function, with the first line of each failure
    python scripts/triton_conformance.py compare out/tritium.xml out/triton.xml [--markdown FILE]

``--log FILE`` appends each test's outcome as it finishes (a run stopped by a time limit keeps what it did);
``--shard i/n`` runs every n-th test (long files over several runs, logs appended to one file).
``run`` passes anything after ``--`` to pytest (``-- -k test_scan2d -x``).  ``--files`` picks the test files
(default: ``language/test_core.py``), relative to ``python/test/unit``.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TAG = "v3.6.0"
UNIT = Path("python/test/unit")


def fetch(tag: str) -> Path:
    """A sparse, shallow clone of Triton at ``tag`` holding its unit tests and ``_internal_testing.py``."""
    dest = Path(os.path.expanduser(f"~/.cache/tritium/triton-{tag}"))
    if (dest / UNIT).is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = os.environ.get("TRITIUM_TRITON_GIT", "https://github.com/triton-lang/triton")
    subprocess.run(["git", "clone", "--depth", "1", "--branch", tag, "--filter=blob:none", "--sparse", url,
                    str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "sparse-checkout", "set", "--no-cone", f"/{UNIT}/", "/python/test/conftest.py",
                    "/python/triton/_internal_testing.py"], check=True)
    return dest


def internal_testing(src: Path, impl: str) -> str:
    """Triton's ``_internal_testing.py``: the source tree's, else the installed Triton's (found without importing
    it, so the alias is not preempted)."""
    p = src / "python/triton/_internal_testing.py"
    if p.is_file():
        return str(p)
    from importlib.util import find_spec

    spec = find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no _internal_testing.py: neither in the Triton source tree nor an installed triton")
    return str(Path(list(spec.submodule_search_locations)[0]) / "_internal_testing.py")


def run(args, extra) -> int:
    src = Path(args.triton_src).expanduser().resolve() if args.triton_src else fetch(args.tag)
    unit = src / UNIT
    if not unit.is_dir():
        raise SystemExit(f"{unit} is not a directory: --triton-src is the root of a Triton source tree")
    env = dict(os.environ)
    # Triton 3.6 keeps its fixtures (``device``, ``fresh_knobs``, ...) in python/test/conftest.py, older trees in
    # python/test/unit/conftest.py: the root is the highest of the two that has one
    root = unit.parent if (unit.parent / "conftest.py").is_file() else unit
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root),
           "-o", "addopts=", "-o", "python_files=test_*.py", "-rN", "-p", "conformance_log"]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE / "conformance"), env.get("PYTHONPATH")]))
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        env["TRITIUM_CONFORMANCE_LOG"] = str(Path(args.log).resolve())
    if args.shard:
        env["TRITIUM_CONFORMANCE_SHARD"] = args.shard
    if args.select:
        env["TRITIUM_CONFORMANCE_SELECT"] = str(Path(args.select).resolve())
    if args.impl == "tritium":
        env["TRITIUM_TRITON_INTERNAL_TESTING"] = internal_testing(src, args.impl)
        cmd += ["-p", "tritium_as_triton"]
    if args.interpreter:
        env["TRITON_INTERPRET"] = "1"
        cmd += ["--device", "cpu"]
    else:
        env.pop("TRITON_INTERPRET", None)
    if args.workers:
        cmd += ["-n", str(args.workers)]
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        cmd += ["--junitxml", str(Path(args.junit).resolve())]
    if args.timeout:
        cmd += ["--timeout", str(args.timeout)]  # pytest-timeout, installed
    cmd += [str(unit / f) for f in args.files] + list(extra)
    print("+", " ".join(cmd), flush=True)
    # not in Triton's tree: python/test/unit/cuda (a directory of tests) would shadow the `cuda` package (cuda-python)
    # for `python -m pytest`, whose working directory is on sys.path
    with tempfile.TemporaryDirectory(prefix="tritium-conformance-") as cwd:
        r = subprocess.run(cmd, cwd=cwd, env=env)
    for f in (args.junit, args.log):
        if f and Path(f).exists():
            print(f"{f}: {summary_line(read_results(f))}")
    return r.returncode


def read_results(path) -> dict:
    """``{case id: (outcome, first line of the message)}`` from a JUnit XML file or a ``--log`` file (outcome:
    passed, failed, skipped, error, xfailed, xpassed).  Case ids are ``file::test[params]``."""
    if not str(path).endswith(".xml"):
        out = {}
        for line in Path(path).read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 2:
                path, _, case = parts[1].partition("::")
                out[f"{path.split('/')[-1]}::{case}"] = (parts[0], parts[2] if len(parts) > 2 else "")
        return out
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        cid = f"{tc.get('classname', '').split('.')[-1]}.py::{tc.get('name', '')}"
        outcome, msg = "passed", ""
        for kind in ("failure", "error", "skipped"):
            e = tc.find(kind)
            if e is not None:
                outcome = {"failure": "failed"}.get(kind, kind)
                text = (e.get("message") or e.text or "").strip()
                msg = text.splitlines()[0][:200] if text else ""
                break
        out[cid] = (outcome, msg)
    return out


def summary_line(cases: dict) -> str:
    c = collections.Counter(o for o, _ in cases.values())
    return (f"{len(cases)} cases: {c['passed']} passed, {c['failed']} failed, {c['error']} errors, "
            f"{c['skipped']} skipped")


def compare(args) -> int:
    ours, theirs = read_results(args.ours), read_results(args.theirs)
    lines = [f"ours ({args.ours}): {summary_line(ours)}", f"theirs ({args.theirs}): {summary_line(theirs)}", ""]
    lost = {k: v for k, v in ours.items() if v[0] in ("failed", "error") and theirs.get(k, ("?",))[0] == "passed"}
    won = [k for k, v in ours.items() if v[0] == "passed" and theirs.get(k, ("?",))[0] in ("failed", "error")]
    by_fn = collections.defaultdict(list)
    for k, (o, msg) in lost.items():
        by_fn[re.sub(r"\[.*$", "", k.split("::")[-1])].append((k, msg))
    lines.append(f"{len(lost)} cases theirs passes and ours fails, in {len(by_fn)} test functions; "
                 f"{len(won)} the other way")
    lines.append("")
    lines.append("| test function | cases | a reason (first line) |")
    lines.append("| --- | --- | --- |")
    for fn, items in sorted(by_fn.items(), key=lambda kv: -len(kv[1])):
        reasons = collections.Counter(m for _, m in items)
        top = reasons.most_common(1)[0][0].replace("|", "\\|")
        lines.append(f"| {fn} | {len(items)} | {top} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.list:
        Path(args.list).write_text("".join(f"{k}\t{m}\n" for k, (_, m) in sorted(lost.items())))
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run Triton's test files")
    r.add_argument("--triton-src", help="root of a Triton source tree (else --fetch)")
    r.add_argument("--fetch", action="store_true", help="clone Triton at --tag into ~/.cache/tritium")
    r.add_argument("--tag", default=DEFAULT_TAG)
    r.add_argument("--impl", choices=["tritium", "triton"], default="tritium")
    r.add_argument("--interpreter", action="store_true", help="TRITON_INTERPRET=1, --device cpu")
    r.add_argument("--files", nargs="+", default=["language/test_core.py"])
    r.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers")
    r.add_argument("--timeout", type=int, default=0, help="per-test timeout (pytest-timeout)")
    r.add_argument("--junit", help="JUnit XML output (for compare)")
    r.add_argument("--log", help="append each test's outcome to this file as it finishes (for compare; "
                                 "survives a run cut short)")
    r.add_argument("--shard", help="i/n: only every n-th collected test, from the i-th")
    r.add_argument("--select", help="a file of test ids (or a --log file): run only those")
    c = sub.add_parser("compare", help="what theirs passes and ours fails")
    c.add_argument("ours")
    c.add_argument("theirs")
    c.add_argument("--markdown", help="write the table here")
    c.add_argument("--list", help="write every such case and its reason here")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        if not args.triton_src and not args.fetch:
            ap.error("run needs --triton-src DIR or --fetch")
        return run(args, extra)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
