"""Config sweep on the GPU: every matmul and attention config of a grid, tritium beside Triton 3.6, one config at a
time (no autotuner), measured in turns, each result checked against torch.

    python bench/sweep.py [--what matmul,attn] [--rounds 3] [--json OUT]       # on the GPU machine
    python bench/sweep.py --what attn --match "D=128.*num_warps=8" --extra maxnreg=128   # a launch option added
    python bench/sweep.py --what attn --tritium-extra maxnreg=auto   # an option for tritium only (Triton lacks it)

* matmul: the tutorial kernel (tests/e2e/kernels.py ``matmul_kernel``), fp16, 4096^3: tiles 64x64 to 256x128,
  BLOCK_K 32 / 64, 4 / 8 warps, 2-4 stages; and the tutorial's fp16 configs again with B transposed (K-major) and
  with ragged sizes (M = N = K = 4000: every load masked);
* attention: the tutorial's forward (``_attn_fwd``), fp16, (Z, H, N_CTX, D) = (4, 32, 4096, 64) and
  (4, 16, 4096, 128), causal and not, BLOCK_M 64 / 128, BLOCK_N 32 to 128 (<= D), (stages, warps) (3, 4), (4, 4),
  (3, 8), (4, 8).

Each row: both implementations' median time over ``--rounds`` rounds taken in turns (``triton.testing.do_bench``,
CUDA events), TFLOP/s, the ratio tritium / Triton of TFLOP/s (above 1: tritium faster), the registers and spills
of both compiled kernels (where the table's worst rows are explained from), and an error when a config does not
compile or run on one of them. Printed sorted by ratio, the worst ten first.
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu as G  # noqa: E402  (bench/gpu.py: the kernels' loaders, launch wrappers and FLOP counts)


def matmul_configs():
    out = []
    for (bm, bn), bk, w, s in itertools.product([(64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128)],
                                                [32, 64], [4, 8], [2, 3, 4]):
        out.append(("matmul fp16 4096", 4096, False, dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                                          GROUP_SIZE_M=8, num_warps=w, num_stages=s)))
    return out


def tutorial_matmul_configs(K):
    out = []
    for cfg in K.MATMUL_CONFIGS_FP16:
        meta = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        out.append(("matmul fp16 4096 B^T", 4096, True, meta))
        out.append(("matmul fp16 4000 masked", 4000, False, meta))
    return out


def attn_configs():
    out = []
    for shape in G.ATTN_SHAPES:
        d = shape[3]
        for causal, bm, bn, (s, w) in itertools.product([False, True], [64, 128], [32, 64, 128],
                                                        [(3, 4), (4, 4), (3, 8), (4, 8)]):
            if bn > d or bn > bm:  # the kernel's static_assert; and its causal stages step BLOCK_M by BLOCK_N
                continue
            out.append((f"attn D={d}{' causal' if causal else ''}", shape, causal,
                        dict(BLOCK_M=bm, BLOCK_N=bn, num_stages=s, num_warps=w)))
    return out


def regs(ck):
    """(registers, spills) of a compiled kernel, tritium's or Triton's."""
    md = getattr(ck, "metadata", None)
    n_regs = getattr(ck, "n_regs", None)
    n_spills = getattr(ck, "n_spills", None)
    if n_regs is None and isinstance(md, dict):
        n_regs, n_spills = md.get("n_regs"), md.get("n_spills")
    return n_regs, n_spills


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--what", default="matmul,attn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--limit", type=int, default=0, help="only the first N configs of each kind (a quick check)")
    ap.add_argument("--match", help="only the configs whose 'workload config' text matches this regular expression")
    ap.add_argument("--extra", action="append", default=[], metavar="KEY=INT",
                    help="a launch option added to every config, for both implementations (e.g. maxnreg=128)")
    ap.add_argument("--tritium-extra", action="append", default=[], metavar="KEY=VALUE",
                    help="a launch option for tritium only (e.g. maxnreg=auto: a register cap for one more CTA per SM "
                         "where one fits without spilling)")
    a = ap.parse_args(argv)

    def options(pairs):
        out = {}
        for kv in pairs:
            k, _, v = kv.partition("=")
            out[k] = int(v) if v.lstrip("-").isdigit() else v
        return out
    extra, only = options(a.extra), {"tritium": options(a.tritium_extra), "triton": {}}

    import torch
    from triton.testing import do_bench

    dev = torch.device("cuda")
    T, R = G.load_kernels("triton"), G.load_kernels("tritium")
    impls = {"tritium": R, "triton": T}
    rows = []

    def bench(fn):
        return do_bench(fn, warmup=10, rep=40, return_mode="median")

    def measure(label, cfg_text, flops, fns, check):
        if a.match and not re.search(a.match, f"{label} {cfg_text}"):
            return
        row = {"workload": label, "config": cfg_text, "errors": {}}
        times = {}
        for impl, fn in fns.items():
            try:
                ck = fn()
                torch.cuda.synchronize()
                err = check()
                row[impl + "_err"] = err
                row[impl + "_regs"], row[impl + "_spills"] = regs(ck)
                times[impl] = []
            except Exception as e:  # noqa: BLE001 - a config one implementation cannot compile or run
                row["errors"][impl] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        times = G.in_turns(fns, times, a.rounds, bench)
        for impl, ts in times.items():
            ms = statistics.median(ts)
            row[impl + "_ms"] = ms
            row[impl + "_TFLOPs"] = flops / ms / 1e9
        if "tritium_ms" in row and "triton_ms" in row:
            row["ratio"] = row["triton_ms"] / row["tritium_ms"]
        rows.append(row)
        if a.json:  # after every row: a sweep cut short still leaves what it measured
            Path(a.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
        r = row.get("ratio")
        print(f"{label:<26} {cfg_text:<44} " + (f"{row['tritium_TFLOPs']:7.1f} {row['triton_TFLOPs']:7.1f} {r:5.2f}"
                                                  if r else f"errors {row['errors']}"), flush=True)

    kinds = a.what.split(",")
    if "matmul" in kinds:
        cfgs = matmul_configs() + tutorial_matmul_configs(R)
        if a.limit:
            cfgs = cfgs[:a.limit]
        data = {}
        for label, n, bt, meta in cfgs:
            if (n, bt) not in data:
                g = torch.Generator(device=dev).manual_seed(n)
                A = torch.randn((n, n), device=dev, dtype=torch.float16, generator=g)
                B = torch.randn((n, n), device=dev, dtype=torch.float16, generator=g)
                Bm = B.t().contiguous().t() if bt else B  # B^T: the same matrix stored K-major
                ref = (A.float() @ B.float())
                data[(n, bt)] = (A, Bm, ref, torch.empty((n, n), device=dev, dtype=torch.float16))
            A, Bm, ref, C = data[(n, bt)]
            scale = ref.abs().max().item()
            meta = {**meta, **extra}
            fns = {k: (lambda K=K, meta={**meta, **only[k]}: G.matmul(K.matmul_kernel, A, Bm, C, n, n, n,
                                                                        b_kmajor=bt, **meta))
                   for k, K in impls.items()}

            def check(C=C, ref=ref, scale=scale):
                e = (C.float() - ref).abs().max().item() / scale
                if not e < 1e-2:
                    raise AssertionError(f"wrong result: max error {e:.3g} of the output's scale")
                return e
            text = " ".join(f"{k.replace('BLOCK_SIZE_', '')}={v}" for k, v in meta.items() if k != "GROUP_SIZE_M")
            measure(label, text, G.matmul_flops(n), fns, check)
            C.fill_(float("nan"))
    if "attn" in kinds:
        cfgs = attn_configs()
        if a.limit:
            cfgs = cfgs[:a.limit]
        data = {}
        for label, shape, causal, meta in cfgs:
            if shape not in data:
                g = torch.Generator(device=dev).manual_seed(shape[3])
                q, k, v = (torch.randn(shape, device=dev, dtype=torch.float16, generator=g) for _ in range(3))
                refs = {c: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c,
                                                                            scale=G.ATTN_SM_SCALE) for c in (False, True)}
                data[shape] = (q, k, v, refs, torch.empty_like(q), torch.empty(shape[:3], device=dev))
            q, k, v, refs, o, m = data[shape]
            ref = refs[bool(causal)]
            meta = {**meta, **extra}
            fns = {kk: (lambda K=K, meta={**meta, **only[kk]}: G.attention(K._attn_fwd, q, k, v, o, m, causal,
                                                                             shape=shape, **meta))
                   for kk, K in impls.items()}

            def check(o=o, ref=ref):
                e = (o.float() - ref.float()).abs().max().item()
                if not e < 2e-2:
                    raise AssertionError(f"wrong result: max error {e:.3g}")
                return e
            text = " ".join(f"{kk}={vv}" for kk, vv in meta.items())
            measure(label, text, G.attn_flops(causal, shape), fns, check)
            o.fill_(float("nan"))

    done = [r for r in rows if "ratio" in r]
    done.sort(key=lambda r: r["ratio"])
    print(f"\n{len(done)} configs measured on both, {len(rows) - len(done)} with an error on one side")
    if done:
        ratios = [r["ratio"] for r in done]
        print(f"tritium / Triton TFLOP/s: median {statistics.median(ratios):.3f}, min {ratios[0]:.3f}, "
              f"max {ratios[-1]:.3f}; >= 1.0 in {sum(x >= 1.0 for x in ratios)} of {len(ratios)}")
        print("worst ten:")
        for r in done[:10]:
            print(f"  {r['ratio']:.3f} {r['workload']:<26} {r['config']:<44} regs {r['tritium_regs']}/"
                  f"{r['triton_regs']} spills {r['tritium_spills']}/{r['triton_spills']}")
    for r in rows:
        if r["errors"]:
            print(f"  error {r['workload']} {r['config']}: {r['errors']}")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
