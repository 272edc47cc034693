"""AMD output held against Triton's own: the same kernels compiled for an AMD arch by tritium and by Triton, side by
side, instruction class by instruction class (no AMD GPU is needed, nor lent to us: the proof is the code).

    python bench/amd_static.py [--arch gfx942] [--triton-python PATH] [--save DIR] [--json OUT]

Pointers and strides are specialised as multiples of 16 (``tt.divisibility``), as a launch with ordinary tensors
makes them.  Each implementation compiles in its own worker process (``BENCH_IMPL=triton`` makes tests/e2e/kernels.py import
Triton, as bench/gpu.py does): tritium through ``tritium.compile(ASTSource(...), target="hip:<arch>")``, Triton
through ``triton.compile(ASTSource(...), target=GPUTarget("hip", arch, warp size))``.  ``--triton-python`` runs
Triton's worker under another Python (a venv with triton; torch is not needed to compile).

Per kernel and implementation: the registers and LDS from the code object's metadata note (VGPRs, SGPRs, AGPRs, spills, scratch, LDS bytes) and the asm printer's
``; Kernel info`` comments where the listing has them (occupancy), the number of instructions, and the instructions by
class: global / buffer loads and stores (with the widest load), LDS reads / writes, cross-lane (``ds_bpermute``,
DPP, ``readlane``), ``v_mfma``, barriers, waits, transcendental ops.  ``--save DIR`` writes each amdgcn listing for
a diff.  A kernel tritium cannot compile yet for the arch is reported with the reason (its stages so far).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

F32, F16 = "*fp32", "*fp16"
# name -> (kernel, runtime signature {param: type}, constexprs, options, description)
WORKLOADS = {
    "vector_add": ("add_kernel", {"x_ptr": F32, "y_ptr": F32, "output_ptr": F32, "n_elements": "i32"},
                   {"BLOCK_SIZE": 1024}, {"num_warps": 4}, "vector add, fp32, BLOCK 1024, 4 warps"),
    "softmax": ("softmax_kernel", {"output_ptr": F32, "input_ptr": F32, "input_row_stride": "i32",
                                   "output_row_stride": "i32", "n_cols": "i32"},
                {"BLOCK_SIZE": 1024}, {"num_warps": 8}, "softmax, one fp32 row of up to 1024 per program, 8 warps"),
    "layer_norm": ("_layer_norm_fwd_fused", {"X": F16, "Y": F16, "W": F16, "B": F16, "Mean": F32, "Rstd": F32,
                                             "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 1024}, {"num_warps": 8}, "layer norm forward, fp16, BLOCK 1024, 8 warps"),
    "matmul": ("matmul_kernel", {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32", "K": "i32",
                                 "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                                 "stride_cm": "i32", "stride_cn": "i32"},
               {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "ACTIVATION": ""},
               {"num_warps": 4, "num_stages": 2}, "tutorial matmul, fp16, 128x128x64 tiles, 4 warps, 2 stages"),
    "attention_fwd": ("_attn_fwd", {"Q": F16, "K": F16, "V": F16, "sm_scale": "fp32", "M": F32, "Out": F16,
                                    **{f"stride_{t}{d}": "i32" for t, dims in (("q", "zhmk"), ("k", "zhnk"),
                                                                               ("v", "zhkn"), ("o", "zhmn"))
                                       for d in dims},
                                    "Z": "i32", "H": "i32", "N_CTX": "i32"},
                      {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "STAGE": 3}, {"num_warps": 4, "num_stages": 1},
                      "fused attention forward, fp16, causal, HEAD_DIM 64, 128x64 blocks, 4 warps"),
}
# as a launch with contiguous tensors specialises them (Triton's JIT: an integer argument equal to 1 becomes a
# constant, one divisible by 16 gets tt.divisibility): unit strides constexpr, K a multiple of 16, 2 stages -- the
# loops both pipeliners pipeline (the rows above leave every load 2 bytes wide: neither pipelines them)
WORKLOADS["matmul_contig"] = (
    "matmul_kernel",
    {k: t for k, t in WORKLOADS["matmul"][1].items() if k not in ("stride_ak", "stride_bn", "stride_cn")},
    {**WORKLOADS["matmul"][2], "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}, {"num_warps": 4, "num_stages": 2},
    "tutorial matmul as launched on contiguous tensors (unit strides, K % 16 == 0), 2 stages")
WORKLOADS["attention_fwd_contig"] = (
    "_attn_fwd", {k: t for k, t in WORKLOADS["attention_fwd"][1].items()
                  if k not in ("stride_qk", "stride_kk", "stride_vn", "stride_on")},
    {**WORKLOADS["attention_fwd"][2], "stride_qk": 1, "stride_kk": 1, "stride_vn": 1, "stride_on": 1},
    {"num_warps": 4, "num_stages": 2}, "fused attention forward on contiguous tensors (unit strides), 2 stages")

# instruction classes: (name, regex on the mnemonic or the whole line)
CLASSES = [
    ("global_load", re.compile(r"^(global_load|buffer_load|flat_load)")),
    ("global_store", re.compile(r"^(global_store|buffer_store|flat_store)")),
    ("lds_read", re.compile(r"^ds_(read|load)")),
    ("lds_write", re.compile(r"^ds_(write|store)")),
    ("ds_bpermute", re.compile(r"^ds_(bpermute|permute|swizzle)")),
    ("readlane", re.compile(r"^v_(readlane|readfirstlane|writelane)")),
    ("mfma", re.compile(r"^v_mfma")),
    ("wmma", re.compile(r"^v_wmma")),
    ("barrier", re.compile(r"^s_barrier")),
    ("waitcnt", re.compile(r"^s_waitcnt")),
    ("transcendental", re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_")),
    ("atomic", re.compile(r"^(global|buffer|flat|ds)_atomic")),
]
_DPP = re.compile(r"\b(row_shr|row_shl|row_ror|row_bcast|row_mirror|row_half_mirror|quad_perm|row_share|"
                  r"row_xmask|wave_shr|wave_ror)\b")
# the code object's metadata (the amdhsa.kernels note, in every listing) first, the asm printer's comments else
_INFO = {"vgpr": (r"\.vgpr_count:\s+(\d+)", r"; NumVgprs: (\d+)"),
         "agpr": (r"\.agpr_count:\s+(\d+)", r"; NumAgprs: (\d+)"),
         "sgpr": (r"\.sgpr_count:\s+(\d+)", r"; (?:Total)?NumSgprs: (\d+)"),
         "vgpr_spill": (r"\.vgpr_spill_count:\s+(\d+)",), "sgpr_spill": (r"\.sgpr_spill_count:\s+(\d+)",),
         "scratch": (r"\.private_segment_fixed_size:\s+(\d+)", r"; ScratchSize: (\d+)"),
         "lds": (r"\.group_segment_fixed_size:\s+(\d+)", r"; LDSByteSize: (\d+)"),
         "occupancy": (r"; Occupancy: (\d+)",)}


def analyze(asm: str) -> dict:
    """The ``; Kernel info`` figures and instruction counts of one amdgcn listing (its first kernel)."""
    out = {}
    for key, pats in _INFO.items():
        ms = [m for m in (re.search(p, asm) for p in pats) if m]
        out[key] = int(ms[0].group(1)) if ms else None
    counts = {name: 0 for name, _ in CLASSES}
    counts["dpp"] = 0
    total = 0
    widest = 0
    for line in asm.splitlines():
        s = line.strip()
        if not s or s[0] in ".;" or s.endswith(":") or not line[:1].isspace():
            continue
        mnemonic = s.split(None, 1)[0]
        if not re.match(r"^[a-z][a-z0-9_]*$", mnemonic):
            continue
        total += 1
        for name, rx in CLASSES:
            if rx.match(mnemonic):
                counts[name] += 1
        if _DPP.search(s):
            counts["dpp"] += 1
        m = re.match(r"^(?:global|buffer)_load_(dword|b)(x?)(\d*)", mnemonic)
        if m:
            width = 32 * (int(m.group(3)) if m.group(3) else 1) if m.group(1) == "dword" else int(m.group(3) or 32)
            widest = max(widest, width)
    out["instructions"] = total
    out["widest_global_load_bits"] = widest or None
    out.update(counts)
    return out


def divisible_args(sig: dict) -> list:
    """The arguments a launch with ordinary tensors specialises as multiples of 16: the pointers (16-byte aligned
    allocations), the strides (rows of a multiple of 16 elements) and the vector add's length (2^20 elements)."""
    return [a for a, t in sig.items() if t.startswith("*") or "stride" in a or a == "n_elements"
            or (a == "K" and "stride_ak" not in sig)]  # matmul_contig: K a multiple of 16


def _worker(impl: str, arch: str, names: list, save: str | None) -> dict:
    sys.path.insert(0, str(ROOT))
    from tests.e2e import kernels as K

    warp = 32 if arch.startswith(("gfx10", "gfx11", "gfx12")) else 64
    results = {}
    for name in names:
        kname, sig, ce, opts, _ = WORKLOADS[name]
        fn = getattr(K, kname)
        aligned = divisible_args(sig)
        try:
            if impl == "triton":
                import triton
                from triton.backends.compiler import GPUTarget
                from triton.compiler import ASTSource

                full = {**sig, **{k: "constexpr" for k in ce}}
                params = list(fn.arg_names)
                attrs = {(params.index(a),): [["tt.divisibility", 16]] for a in aligned}
                ck = triton.compile(ASTSource(fn=fn, signature=full, constexprs=ce, attrs=attrs),
                                    target=GPUTarget("hip", arch, warp), options=opts)
            else:
                from tritium.compiler import ASTSource, compile

                attrs = {a: {"tt.divisibility": 16} for a in aligned}
                ck = compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target=f"hip:{arch}", options=opts,
                             use_cache=False)
        except Exception as e:  # noqa: BLE001 - reported per kernel: what the implementation cannot compile yet
            results[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
            continue
        asm = ck.asm.get("amdgcn")
        if not isinstance(asm, str):
            results[name] = {"error": f"no amdgcn stage (stages: {list(ck.asm)})"}
            continue
        r = analyze(asm)
        r["hsaco_bytes"] = len(ck.asm["hsaco"]) if isinstance(ck.asm.get("hsaco"), (bytes, bytearray)) else None
        results[name] = r
        if save:
            d = Path(save) / impl
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name}.{arch}.amdgcn").write_text(asm)
    return results


def _run_worker(impl: str, python: str, arch: str, names: list, save: str | None) -> dict:
    env = dict(os.environ)
    if impl == "triton":
        env["BENCH_IMPL"] = "triton"
    else:
        env.pop("BENCH_IMPL", None)
    cmd = [python, str(Path(__file__).resolve()), "--worker", impl, "--arch", arch, "--names", ",".join(names)]
    if save:
        cmd += ["--save", save]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return {"_skipped": f"{impl} worker failed: {tail[0][:300]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _fmt(v) -> str:
    return "-" if v is None else str(v)


ROWS = ["instructions", "vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill", "scratch", "lds", "occupancy", "widest_global_load_bits",
        "global_load", "global_store", "lds_read", "lds_write", "ds_bpermute", "dpp", "readlane", "mfma", "wmma",
        "barrier", "waitcnt", "transcendental", "atomic"]


def report(arch: str, res: dict) -> str:
    lines = [f"AMD static comparison for {arch}: tritium vs Triton (same kernels, same options)"]
    for impl in ("tritium", "triton"):
        if "_skipped" in res[impl]:
            lines.append(f"  {impl}: {res[impl]['_skipped']}")
    for name in WORKLOADS:
        if name not in res["tritium"] and name not in res["triton"]:
            continue
        a, b = res["tritium"].get(name, {}), res["triton"].get(name, {})
        lines.append("")
        lines.append(f"{name}: {WORKLOADS[name][4]}")
        for impl, r in (("tritium", a), ("triton", b)):
            if "error" in r:
                lines.append(f"  {impl}: not compiled: {r['error']}")
        if "error" in a or "error" in b or not a or not b:
            continue
        lines.append(f"  {'':28s} {'tritium':>9s} {'triton':>9s} {'ratio':>7s}")
        for row in ROWS:
            x, y = a.get(row), b.get(row)
            if not x and not y:
                continue
            ratio = f"{x / y:.2f}" if isinstance(x, int) and isinstance(y, int) and y else ""
            lines.append(f"  {row:28s} {_fmt(x):>9s} {_fmt(y):>9s} {ratio:>7s}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="gfx942")
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    ap.add_argument("--save", default=None, help="directory for the amdgcn listings")
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--names", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.arch, args.names.split(","), args.save)))
        return 0
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workloads {unknown}: expected some of {list(WORKLOADS)}")
    res = {"tritium": _run_worker("tritium", sys.executable, args.arch, names, args.save),
           "triton": _run_worker("triton", args.triton_python, args.arch, names, args.save)}
    print(report(args.arch, res))
    if args.json:
        Path(args.json).write_text(json.dumps({"arch": args.arch, "results": res}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
