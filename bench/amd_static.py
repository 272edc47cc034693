"""AMD output held against Triton's own: the same kernels compiled for an AMD arch by tritium and by Triton, side by
side, instruction class by instruction class (no AMD GPU is needed, nor lent to us: the proof is the code).

    python bench/amd_static.py [--arch gfx942] [--triton-python PATH] [--save DIR] [--json OUT]

Pointers and strides are specialised as multiples of 16 (``tt.divisibility``), as a launch with ordinary tensors
makes them.  Each implementation compiles in its own worker process (``BENCH_IMPL=triton`` makes tests/e2e/kernels.py import
Triton, as bench/gpu.py does): tritium through ``tritium.compile(ASTSource(...), target="hip:<arch>")``, Triton
through ``triton.compile(ASTSource(...), target=GPUTarget("hip", arch, warp size))``.  ``--triton-python`` runs
Triton's worker under another Python (a venv with triton; torch is not needed to compile).

Per kernel and implementation: the registers from the code object's metadata note (VGPRs -- on gfx90a / gfx942 /
gfx950 the unified count, AGPRs included --, SGPRs, AGPRs, spills, scratch); ``lds``: the work-group's LDS bytes, the
static ``.group_segment_fixed_size`` plus the compiled kernel's metadata ``shared`` (both compilers allocate LDS
dynamically, passed at launch); ``occupancy``: waves per SIMD at launch, registers and that LDS counted (tritium: its
compiled kernel's metadata; Triton's metadata has none: the same rules, ``tritium_amd.occupancy``, over its figures);
``occupancy_asm``: what LLVM's ``; Occupancy:`` comment counts, registers and static LDS only (Triton: the comment;
tritium, whose llvmlite listing has no comment: the rules) -- a line says so where the rules disagree with the
comment; the number of instructions and the instructions by class: global / buffer / flat loads and stores (in all
and by bits per lane: ``global_load_b16``, ``global_store_b128``, ...; the widest load), LDS reads / writes,
cross-lane (``ds_bpermute``, DPP, ``readlane``), ``v_mfma``, barriers, waits, transcendental ops; the loops
(``loops``: natural loops of the listing's control-flow graph, a line says so where LLVM's own loop comments in
Triton's listing name other headers) and the main loop's instructions and ``v_mfma`` (``main_loop_instructions``,
``main_loop_mfma``): the loop with the most ``v_mfma`` / ``v_wmma`` (the first of equals), else the largest --
:func:`main_loop` says which loop that is for each kernel.  ``--save DIR`` writes each amdgcn listing for a diff.
A kernel tritium cannot compile yet for the arch is reported with the reason (its stages so far).
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
         "occupancy_asm": (r"; Occupancy: (\d+)",)}


def analyze(asm: str) -> dict:
    """The ``; Kernel info`` figures and instruction counts of one amdgcn listing (its first kernel)."""
    out = {}
    for key, pats in _INFO.items():
        ms = [m for m in (re.search(p, asm) for p in pats) if m]
        out[key] = int(ms[0].group(1)) if ms else None
    counts = {name: 0 for name, _ in CLASSES}
    counts["dpp"] = 0
    widths = {}
    total = 0
    widest = 0
    for line in asm.splitlines():
        if not _is_instruction(line):
            continue
        s = line.strip()
        mnemonic = s.split(None, 1)[0]
        total += 1
        for name, rx in CLASSES:
            if rx.match(mnemonic):
                counts[name] += 1
        if _DPP.search(s):
            counts["dpp"] += 1
        m = _ACCESS.match(mnemonic)
        if m:
            bits = access_bits(m.group(2))
            key = f"global_{m.group(1)}_b{bits if bits else '?'}"
            widths[key] = widths.get(key, 0) + 1
            if m.group(1) == "load" and bits:
                widest = max(widest, bits)
    out["instructions"] = total
    out["widest_global_load_bits"] = widest or None
    out.update(counts)
    out.update(widths)
    found = loops(asm)
    out["loops"] = len(found)
    heads = llvm_loop_headers(asm)
    if heads is not None and heads != [lp["header"] for lp in found]:
        out["loop_check"] = f"loops found at {[lp['header'] for lp in found]}, LLVM's comments name {heads}"
    main = main_loop(found)
    out["main_loop_instructions"] = main["instructions"] if main else None
    out["main_loop_mfma"] = main["mfma"] if main else None
    return out


#: a global / buffer / flat load or store: (load|store, the rest of the mnemonic)
_ACCESS = re.compile(r"^(?:global|buffer|flat)_(load|store)_(\w+)$")
_BITS = {"dword": 32, "short": 16, "ushort": 16, "sshort": 16, "byte": 8, "ubyte": 8, "sbyte": 8,
         "u16": 16, "i16": 16, "u8": 8, "i8": 8}


def access_bits(suffix: str):
    """Bits per lane of a load / store from its mnemonic's suffix: ``dwordx4`` / ``b128`` -> 128, ``ushort`` /
    ``short_d16_hi`` / ``d16_b16`` -> 16, ``ubyte`` / ``u8`` -> 8, ``lds_dwordx4`` -> 128 (None: a format access)."""
    for tok in suffix.split("_"):
        m = re.fullmatch(r"dwordx(\d)", tok) or re.fullmatch(r"b(\d+)", tok)
        if m:
            return int(m.group(1)) * (32 if tok.startswith("dword") else 1)
        if tok in _BITS:
            return _BITS[tok]
    return None


_LABEL = re.compile(r"^([.\w$]+):")
_BRANCH = re.compile(r"^s_(?:cbranch_\w+|branch)$")
_ENDS = ("s_branch", "s_endpgm", "s_setpc_b64")  # no fall-through after these


def _is_instruction(line: str) -> bool:
    s = line.strip()
    if not s or s[0] in ".;" or s.endswith(":") or not line[:1].isspace():
        return False
    return bool(re.match(r"^[a-z][a-z0-9_]*$", s.split(None, 1)[0]))


def blocks(asm: str) -> list:
    """The listing's basic blocks in layout order: a block starts at a label or after a branch; each is
    ``{"labels", "insts" (mnemonics), "succ" (block indices: branch targets, and the next block unless it ends in
    s_branch / s_endpgm)}``."""
    out = [{"labels": [], "insts": [], "targets": []}]
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m:
            if out[-1]["insts"] or out[-1]["labels"]:
                out.append({"labels": [], "insts": [], "targets": []})
            out[-1]["labels"].append(m.group(1))
            continue
        if not _is_instruction(line):
            continue
        parts = line.split()
        out[-1]["insts"].append(parts[0])
        if _BRANCH.match(parts[0]) or parts[0] in _ENDS:
            if _BRANCH.match(parts[0]) and len(parts) > 1:
                out[-1]["targets"].append(parts[1])
            out.append({"labels": [], "insts": [], "targets": []})
    where = {lab: i for i, b in enumerate(out) for lab in b["labels"]}
    for i, b in enumerate(out):
        b["succ"] = sorted({where[t] for t in b.pop("targets") if t in where} |
                           ({i + 1} if i + 1 < len(out) and not (b["insts"] and b["insts"][-1] in _ENDS) else set()))
    return out


def loops(asm: str) -> list:
    """The natural loops of a listing: an edge to a block that dominates its source is a back-edge (a branch up to a
    label is not always one: LLVM lays out the cold side of a masked access below and branches back to the join),
    the loop is its header and every block that reaches a back-edge without passing the header (back-edges to one
    header: one loop).  Each: ``{"header"`` (label), ``"instructions"``, ``"mfma"`` (v_mfma / v_wmma)}``; for a loop
    laid out in one piece, the instructions from its header label to its back-edge branch."""
    bs = blocks(asm)
    n = len(bs)
    pred = [[] for _ in range(n)]
    for i, b in enumerate(bs):
        for j in b["succ"]:
            pred[j].append(i)
    # dominators (iterative; the listing's first block is the entry)
    reach, stack = {0}, [0]
    while stack:
        for j in bs[stack.pop()]["succ"]:
            if j not in reach:
                reach.add(j)
                stack.append(j)
    dom = {i: set(reach) for i in reach}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for i in sorted(reach - {0}):
            new = set.intersection(*(dom[p] for p in pred[i] if p in reach)) | {i}
            if new != dom[i]:
                dom[i], changed = new, True
    bodies = {}
    for i in sorted(reach):
        for h in bs[i]["succ"]:
            if h in dom[i]:  # i -> h is a back-edge
                body, stack = bodies.setdefault(h, {h}), [i]
                while stack:
                    x = stack.pop()
                    if x not in body:
                        body.add(x)
                        stack.extend(pred[x])
    out = []
    for h, body in sorted(bodies.items()):
        insts = [m for x in body for m in bs[x]["insts"]]
        out.append({"header": (bs[h]["labels"] or ["?"])[0], "instructions": len(insts),
                    "mfma": sum(1 for m in insts if m.startswith(("v_mfma", "v_wmma")))})
    return out


def llvm_loop_headers(asm: str):
    """The loop headers LLVM's asm printer names in its comments (``; =>This Inner Loop Header``, on the header's
    label line or the next), in order; None when the listing has no such comments (llvmlite's)."""
    heads, label = [], None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m:
            label = m.group(1)
        if "Loop Header:" in line and label and label not in heads:
            heads.append(label)
    return heads if "; %bb." in asm or heads else None  # "; %bb.N:": a listing with LLVM's block comments


def main_loop(found: list):
    """The kernel's main loop: the loop with the most v_mfma / v_wmma, the first in the listing of those with as
    many, else (no matrix instruction in any loop) the loop of the most instructions; None without a loop.  Read
    off the listings: the K loop of a matmul; of causal attention's two KV loops (as many MFMAs each), the first,
    over the blocks left of the diagonal, which runs the most iterations (the diagonal one, with its masking, runs
    BLOCK_M / BLOCK_N times: Triton's pipeliner unrolls it entirely when it pipelines, leaving one loop); the
    largest of layer norm's three loops (mean, variance, then normalise and store: the last)."""
    most = max((lp["mfma"] for lp in found), default=0)
    if most:
        return next(lp for lp in found if lp["mfma"] == most)
    return max(found, key=lambda lp: lp["instructions"], default=None)


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
        md = ck.metadata
        meta = (lambda k: md.get(k)) if isinstance(md, dict) else (lambda k: getattr(md, k, None))
        # the work-group's dynamic LDS (passed at launch), its size, and the occupancy the metadata holds (tritium)
        r["shared"] = meta("shared") or 0
        r["num_warps"] = meta("num_warps") or opts["num_warps"]
        r["warp_size"] = meta("warp_size") or warp
        r["occupancy_meta"] = meta("occupancy")
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


def finish(arch: str, r: dict) -> dict:
    """One implementation's figures completed in this process (tritium's, which has the occupancy rules):
    ``lds`` = the work-group's LDS (static ``.group_segment_fixed_size`` + the dynamic ``shared`` of the compiled
    kernel's metadata, which both compilers pass at launch); ``occupancy`` = waves per SIMD at launch (tritium: its
    metadata; Triton, whose metadata has none: the same rules over its registers and LDS); ``occupancy_asm`` = what
    LLVM's ``; Occupancy:`` comment counts (registers and static LDS only: Triton's comment; tritium's listing has no
    comment: the rules over its figures); ``occupancy_check`` names a disagreement of the rules with LLVM's comment."""
    if "error" in r:
        return r
    from tritium_amd.occupancy import occupancy

    static = r["lds"] or 0
    r["lds_static"], r["lds"] = static, static + r["shared"]
    regs = (r["vgpr"] or 0, r["sgpr"] or 0)
    size = r["num_warps"] * r["warp_size"]
    rules_asm = occupancy(arch, *regs, static, size, r["warp_size"])
    if r.get("occupancy_asm") is None:
        r["occupancy_asm"] = rules_asm
    elif rules_asm != r["occupancy_asm"]:
        r["occupancy_check"] = f"rules give {rules_asm}, LLVM's comment {r['occupancy_asm']}"
    r["occupancy"] = r["occupancy_meta"] if r.get("occupancy_meta") is not None else \
        occupancy(arch, *regs, r["lds"], size, r["warp_size"])
    return r


def _fmt(v) -> str:
    return "-" if v is None else str(v)


ROWS = ["instructions", "vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill", "scratch", "lds", "occupancy",
        "occupancy_asm", "widest_global_load_bits", "global_load", "global_load_b*", "global_store", "global_store_b*",
        "lds_read", "lds_write", "ds_bpermute", "dpp", "readlane", "mfma", "wmma", "barrier", "waitcnt",
        "transcendental", "atomic", "loops", "main_loop_instructions", "main_loop_mfma"]


def _rows(a: dict, b: dict) -> list:
    """ROWS with each ``<class>_b*`` expanded into that class's widths present in either listing, narrowest first."""
    out = []
    for row in ROWS:
        if row.endswith("_b*"):
            keys = {k for k in (*a, *b) if k.startswith(row[:-1]) and k[len(row) - 1:].isdigit()}
            out += sorted(keys, key=lambda k: int(k[len(row) - 1:])) + sorted(
                k for k in (*a, *b) if k == row[:-1] + "?")
        else:
            out.append(row)
    return out


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
        for impl, r in (("tritium", a), ("triton", b)):
            for check in ("occupancy_check", "loop_check"):
                if check in r:
                    lines.append(f"  {impl}: disagrees with LLVM: {r[check]}")
        lines.append(f"  {'':28s} {'tritium':>9s} {'triton':>9s} {'ratio':>7s}")
        for row in _rows(a, b):
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
    for impl in res.values():
        for name, r in impl.items():
            if not name.startswith("_"):
                finish(args.arch, r)
    print(report(args.arch, res))
    if args.json:
        Path(args.json).write_text(json.dumps({"arch": args.arch, "results": res}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
