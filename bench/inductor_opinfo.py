"""PyTorch's own operator test corpus through torch.compile (Inductor), with tritium in place of Triton and with
Triton itself, outcome by outcome.

PyTorch's OpInfo database (``torch.testing._internal.common_methods_invocations``, shipped in every torch wheel) is
what Inductor's own ``test/inductor/test_torchinductor_opinfo.py`` sweeps: each operator with its sample inputs.
Here each sample of each operator of the chosen families is compiled by Inductor (``torch.compile``, fresh caches)
and its result compared with eager PyTorch (``torch.testing.assert_close``, NaNs equal), in one process per
implementation and shard (the alias must be in place before torch imports ``triton``):

    python bench/inductor_opinfo.py --device cuda --jobs 8          # both implementations, then the comparison
    python bench/inductor_opinfo.py --impl tritium --device cpu     # Inductor's cpu_backend="triton": the interpreter
    python bench/inductor_opinfo.py --compare a.json b.json

Families: ``pointwise`` (the unary and binary ufuncs), ``reduction`` (the reductions), ``other`` (everything else
that Inductor lowers, slow).  Each case's outcome: ``pass``, ``mismatch`` (a wrong result, with the first line of
assert_close's message), ``error`` (the exception's type and first line) or ``timeout``; and how many kernels
Inductor generated for it (0: the op fell back to eager or needed no kernel, so the case says nothing about the
compiler).  The comparison lists every case whose outcome differs between the two implementations.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("pointwise", "reduction", "other")


def _ops(family: str, device: str, dtype) -> list:
    from torch.testing._internal import common_methods_invocations as cmi

    if family == "pointwise":
        ops = list(cmi.unary_ufuncs) + list(cmi.binary_ufuncs)
    elif family == "reduction":
        ops = list(cmi.reduction_ops)
    else:
        seen = {id(o) for o in list(cmi.unary_ufuncs) + list(cmi.binary_ufuncs) + list(cmi.reduction_ops)}
        ops = [o for o in cmi.op_db if id(o) not in seen]
    return [o for o in ops if dtype in o.supported_dtypes(device)]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else "")[:200]


def worker(impl: str, device: str, dtype_name: str, families: list, shard: tuple, samples: int,
           timeout: int, save=None) -> list:
    """Run this shard's cases in this process; one dict per case (``save(cases)`` after each operator, so a shard
    stopped at the deadline leaves what it ran)."""
    if impl == "tritium":  # before torch imports triton (run_impl also sets TRITIUM_AS_TRITON=1)
        import tritium

        tritium.install_as_triton()
    import torch
    import torch._inductor.config as icfg
    from torch._inductor import metrics

    if device == "cpu":
        icfg.cpu_backend = "triton"
    torch._dynamo.config.cache_size_limit = 1 << 20
    dtype = getattr(torch, dtype_name)
    signal.signal(signal.SIGALRM, _alarm)
    index, count = shard
    out = []
    n = 0
    for family in families:
        for op in _ops(family, device, dtype):
            n += 1
            if n % count != index:
                continue
            try:
                cases = list(op.sample_inputs(device, dtype, requires_grad=False))[:samples]
            except Exception as e:  # noqa: BLE001 - the corpus itself failed; not a case
                out.append(dict(op=op.full_name, family=family, sample=-1, outcome="no-samples", why=_first_line(e)))
                continue
            for i, s in enumerate(cases):
                rec = dict(op=op.full_name, family=family, sample=i)

                def fn(x, *args, _op=op.op, **kwargs):
                    return _op(x, *args, **kwargs)

                try:
                    expected = op.op(s.input, *s.args, **s.kwargs)
                except Exception as e:  # noqa: BLE001 - eager fails too: not a compiler case
                    rec.update(outcome="eager-error", why=_first_line(e))
                    out.append(rec)
                    continue
                torch._dynamo.reset()
                metrics.reset()
                t0 = time.perf_counter()
                signal.alarm(timeout)
                try:
                    got = torch.compile(fn, dynamic=False)(s.input, *s.args, **s.kwargs)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    signal.alarm(0)
                    rec["kernels"] = metrics.generated_kernel_count
                    torch.testing.assert_close(got, expected, equal_nan=True, check_dtype=True)
                    rec["outcome"] = "pass"
                except _Timeout:
                    rec.update(outcome="timeout", why=f"over {timeout} s")
                except AssertionError as e:
                    rec.update(outcome="mismatch", why=_first_line(e))
                except Exception as e:  # noqa: BLE001 - recorded as the case's outcome
                    signal.alarm(0)
                    rec.update(outcome="error", why=f"{type(e).__name__}: {_first_line(e)}")
                finally:
                    signal.alarm(0)
                rec["seconds"] = round(time.perf_counter() - t0, 3)
                rec.setdefault("kernels", metrics.generated_kernel_count)
                out.append(rec)
            if save is not None:
                save(out)
    return out


def run_impl(impl: str, args) -> list:
    """All shards of one implementation, ``args.jobs`` processes at once, each with fresh caches."""
    procs = []
    tmp = tempfile.mkdtemp(prefix=f"opinfo-{impl}-")
    for j in range(args.jobs):
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor{j}", TRITON_CACHE_DIR=f"{tmp}/triton{j}",
                   TRITIUM_CACHE_DIR=f"{tmp}/tritium{j}", TORCHINDUCTOR_COMPILE_THREADS="1")
        env.pop("TRITON_INTERPRET", None)
        if impl == "tritium":
            env["TRITIUM_AS_TRITON"] = "1"
        else:
            env.pop("TRITIUM_AS_TRITON", None)
        cmd = [sys.executable, str(Path(__file__)), "--impl", impl, "--device", args.device, "--dtype", args.dtype,
               "--families", *args.families, "--samples", str(args.samples), "--timeout", str(args.timeout),
               "--shard", f"{j}/{args.jobs}", "--json", f"{tmp}/shard{j}.json"]
        procs.append((j, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    rows = []
    deadline = time.time() + args.deadline if args.deadline else None
    for j, p in procs:
        try:
            log, _ = p.communicate(timeout=max(1.0, deadline - time.time()) if deadline else None)
        except subprocess.TimeoutExpired:
            p.kill()
            log, _ = p.communicate()
            print(f"{impl} shard {j} stopped at the deadline ({args.deadline} s): its cases so far count")
        f = Path(f"{tmp}/shard{j}.json")
        if f.exists():
            rows += json.loads(f.read_text())["cases"]
        else:
            print(f"{impl} shard {j} wrote nothing (rc {p.returncode}):\n{log[-3000:]}")
    return rows


def summary(rows: list) -> dict:
    out = {}
    for r in rows:
        out[r["outcome"]] = out.get(r["outcome"], 0) + 1
    return out


def compare(a: dict, b: dict) -> int:
    """Print both implementations' counts and every case whose outcome differs."""
    ka = {(r["op"], r["sample"]): r for r in a["cases"]}
    kb = {(r["op"], r["sample"]): r for r in b["cases"]}
    common = sorted(set(ka) & set(kb))
    na, nb = a["impl"], b["impl"]
    print(f"{'':<28} {na:>10} {nb:>10}")
    for outcome in ("pass", "mismatch", "error", "timeout", "eager-error", "no-samples"):
        ca = sum(1 for k in common if ka[k]["outcome"] == outcome)
        cb = sum(1 for k in common if kb[k]["outcome"] == outcome)
        print(f"{outcome:<28} {ca:>10} {cb:>10}")
    with_kernels = [k for k in common if ka[k].get("kernels", 0) or kb[k].get("kernels", 0)]
    print(f"{len(common)} cases both ran, {len(with_kernels)} of them with kernels")
    differ = [k for k in common if ka[k]["outcome"] != kb[k]["outcome"]]
    print(f"\n{len(differ)} cases differ:")
    for k in differ:
        print(f"  {k[0]} #{k[1]}: {na} {ka[k]['outcome']} ({ka[k].get('why', '')}) | "
              f"{nb} {kb[k]['outcome']} ({kb[k].get('why', '')})")
    only = (set(ka) ^ set(kb))
    if only:
        print(f"{len(only)} cases ran under one implementation only")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", choices=["tritium", "triton"], help="one implementation in this process")
    ap.add_argument("--impls", nargs="+", default=["tritium", "triton"])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--families", nargs="+", default=["pointwise", "reduction"], choices=FAMILIES)
    ap.add_argument("--samples", type=int, default=3, help="sample inputs per operator")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per case")
    ap.add_argument("--jobs", type=int, default=1, help="processes per implementation")
    ap.add_argument("--deadline", type=int, default=0, help="seconds per implementation, then the shards stop")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--json", default=str(HERE / "out" / "inductor_opinfo.json"))
    ap.add_argument("--compare", nargs=2, metavar="JSON")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        return compare(a, b)
    if args.impl:  # a worker
        i, n = (int(x) for x in args.shard.split("/"))
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)

        def save(rows):
            part = Path(args.json + ".part")
            part.write_text(json.dumps({"impl": args.impl, "cases": rows}))
            os.replace(part, args.json)

        rows = worker(args.impl, args.device, args.dtype, args.families, (i, n), args.samples, args.timeout, save)
        save(rows)
        print(args.impl, summary(rows))
        return 0
    results = {}
    for impl in args.impls:
        t0 = time.time()
        rows = run_impl(impl, args)
        results[impl] = {"impl": impl, "device": args.device, "dtype": args.dtype, "families": args.families,
                         "date": time.strftime("%Y-%m-%d"), "wall_s": round(time.time() - t0, 1), "cases": rows}
        print(f"{impl}: {summary(rows)} in {results[impl]['wall_s']} s")
        out = Path(args.json).with_name(f"{Path(args.json).stem}_{impl}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results[impl]))
    if len(results) == 2:
        compare(*results.values())
    return 0


if __name__ == "__main__":
    sys.exit(main())
