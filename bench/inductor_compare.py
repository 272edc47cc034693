"""torch.compile (Inductor) with tritium in place of Triton, side by side with Triton itself, in one run.

Each implementation runs in a process of its own (the alias must be in place before torch imports ``triton``),
with fresh Inductor / Triton / tritium caches, so every kernel is compiled cold:

    python bench/inductor_compare.py                     # both, then the table of ratios (GPU: cuda)
    python bench/inductor_compare.py --impl tritium      # one implementation, JSON lines on stdout
    python bench/inductor_compare.py --device cpu --impls tritium   # Inductor's cpu_backend="triton"

For each case (a function and its random inputs): correctness against eager PyTorch (max abs error, within the
case's tolerance), the wall time of the first call (tracing, Inductor's codegen and every kernel's compile: what a
user waits for), and the steady-state time per call: the median of CUDA-event timings around single calls (or of
wall time on the CPU), and the time per call of calls made back to back with one sync at the end (a training loop's).
Cases: pointwise with broadcasting, softmax, layer norm, RMS norm, cumsum, argmax, cross entropy, RoPE, dropout
(statistics: Inductor's random numbers are not eager's), an MLP and a 2-layer transformer block (forward and
backward, one training step), and on the GPU flex_attention (a causal block mask forward; a soft-cap score_mod
with the mask, forward and backward) and a matmul through Inductor's Triton templates under ``max-autotune``.
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


def _cases(torch, device):
    F = torch.nn.functional
    g = torch.Generator(device="cpu").manual_seed(0)

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    cases = []

    def case(name, fn, args, tol=1e-4, check=None, mode=None):
        cases.append(dict(name=name, fn=fn, args=args, tol=tol, check=check, mode=mode))

    case("pointwise_bcast", lambda a, b: torch.sigmoid(a * 2 + b) - torch.tanh(b) * a.abs().sqrt(),
         (rn(1024, 4096), rn(4096)))
    case("softmax", lambda a: torch.softmax(a, dim=-1), (rn(4096, 2048) * 4,))
    case("layer_norm", lambda a, w, b: F.layer_norm(a, (4096,), w, b), (rn(2048, 4096), rn(4096), rn(4096)), 1e-3)
    case("rms_norm", lambda a, w: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
         (rn(2048, 4096), rn(4096)), 1e-3)
    case("cumsum", lambda a: torch.cumsum(a, dim=1), (rn(512, 4096),), 1e-2)
    case("argmax", lambda a: torch.argmax(a, dim=1), (rn(2048, 4096),), 0)
    tgt = torch.randint(0, 32000, (512,), generator=g).to(device)
    case("cross_entropy", lambda x, t: F.cross_entropy(x, t), (rn(512, 32000), tgt), 1e-3)
    seq, heads, dim = 1024, 16, 128
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    ang = torch.arange(seq).float()[:, None] * inv[None, :]
    cos, sin = ang.cos()[None, :, None, :].to(device), ang.sin()[None, :, None, :].to(device)

    def rope(x, cos, sin):
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    case("rope", rope, (rn(4, seq, heads, dim), cos, sin))

    def dropout_check(out, ref, args):
        x = args[0]
        zero = out == 0
        frac = zero.float().mean().item()
        kept_ok = torch.allclose(out[~zero], x[~zero] / 0.7, atol=1e-5, rtol=1e-5)
        return abs(frac - 0.3) < 0.01 and kept_ok, abs(frac - 0.3)

    case("dropout", lambda a: F.dropout(a, p=0.3, training=True), (torch.rand(2048, 4096, generator=g).to(device) + 0.5,),
         check=dropout_check)

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(device)

    def train_step(model):
        def step(x):
            for p in model.parameters():
                p.grad = None
            out = model(x)
            out.float().square().mean().backward()
            return (out,) + tuple(p.grad for p in model.parameters())
        return step

    case("mlp_fwd_bwd", train_step(mlp), (rn(512, 1024),), 2e-2)
    block = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True,
                                                                   norm_first=True) for _ in range(2)]).to(device)
    case("transformer2_fwd_bwd", train_step(block), (rn(8, 256, 512),), 5e-2)
    if device == "cuda":
        _flex_cases(torch, case, rn)
        case("mm_max_autotune", lambda a, b: a @ b, (rn(2048, 2048, dtype=torch.float16),
                                                    rn(2048, 2048, dtype=torch.float16)), 5e-2,
             mode="max-autotune-no-cudagraphs")
    return cases


def _flex_cases(torch, case, rn):
    """flex_attention (Inductor's flex templates): a causal block mask forward, and a tanh soft-cap score_mod with
    the causal mask, forward and backward (the gradients of q, k and v against eager flex_attention)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    B, H, S, D = 2, 8, 1024, 64

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def softcap(score, b, h, q_idx, kv_idx):
        return 20.0 * torch.tanh(score / 20.0)

    mask = create_block_mask(causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device="cuda")
    q, k, v = (rn(B, H, S, D, dtype=torch.float16) for _ in range(3))
    case("flex_attention_causal", lambda q, k, v: flex_attention(q, k, v, block_mask=mask), (q, k, v), 2e-2)

    def fwd_bwd(q, k, v):
        q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
        out = flex_attention(q, k, v, score_mod=softcap, block_mask=mask)
        out.float().square().mean().backward()
        return out, q.grad, k.grad, v.grad

    case("flex_attention_softcap_fwd_bwd", fwd_bwd, (q, k, v), 5e-2)


def _sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def _time_calls(torch, device, fn, args, n):
    times = []
    for _ in range(3):
        fn(*args)
    _sync(torch, device)
    for _ in range(n):
        if device == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn(*args)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        else:
            t = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def _back_to_back(torch, device, fn, args, n):
    """Time per call of ``n`` calls in a row, one sync at the end: what a training loop sees, the host's launch work
    overlapping the GPU's (the per-call median above serialises them and mostly measures the host)."""
    for _ in range(3):
        fn(*args)
    _sync(torch, device)
    t = time.perf_counter()
    for _ in range(n):
        fn(*args)
    _sync(torch, device)
    return (time.perf_counter() - t) * 1e6 / n


def _max_err(torch, out, ref):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    err = 0.0
    for o, r in zip(outs, refs):
        if o is None or r is None:
            continue
        d = (o.double() - r.double()).abs()
        scale = r.double().abs().clamp(min=1.0)  # relative beyond 1, absolute below
        err = max(err, (d / scale).max().item())
    return err


def run_one(impl: str, device: str, only=None, n: int = 20) -> None:
    if impl == "tritium":
        import tritium

        tritium.install_as_triton()
    import torch
    import torch._dynamo
    import torch._inductor.config as cfg

    import triton

    if device == "cpu":
        cfg.cpu_backend = "triton"
    print(json.dumps({"impl": impl, "triton_version": triton.__version__, "is_tritium": hasattr(triton, "__tritium__"),
                      "torch": torch.__version__,
                      "device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}), flush=True)
    for c in _cases(torch, device):
        if only and c["name"] not in only:
            continue
        rec = {"case": c["name"]}
        try:
            torch._dynamo.reset()
            compiled = torch.compile(c["fn"], mode=c["mode"])
            torch.manual_seed(1)
            ref = c["fn"](*c["args"])
            ref = tuple(t.detach().clone() if t is not None else None for t in ref) if isinstance(ref, tuple) \
                else ref.detach().clone()
            _sync(torch, device)
            t = time.perf_counter()
            out = compiled(*c["args"])
            _sync(torch, device)
            rec["first_call_s"] = time.perf_counter() - t
            if c["check"] is not None:
                ok, err = c["check"](out, ref, c["args"])
            else:
                err = _max_err(torch, out, ref)
                ok = err <= c["tol"]
            rec.update(ok=bool(ok), err=float(err))
            rec["eager_us"] = _time_calls(torch, device, c["fn"], c["args"], n)
            rec["compiled_us"] = _time_calls(torch, device, compiled, c["args"], n)
            rec["eager_b2b_us"] = _back_to_back(torch, device, c["fn"], c["args"], 5 * n)
            rec["compiled_b2b_us"] = _back_to_back(torch, device, compiled, c["args"], 5 * n)
        except Exception as e:  # noqa: BLE001 - a failing case is recorded, the others still run
            msg = str(e)
            rec.update(ok=False, error=f"{type(e).__name__}: {msg.splitlines()[0][:300] if msg else ''}",
                       detail=msg[-2500:])
        print(json.dumps(rec), flush=True)


def compare(impls, device, only, n, timeout) -> dict:
    results = {}
    for impl in impls:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{d}/inductor", TRITON_CACHE_DIR=f"{d}/triton",
                       TRITIUM_CACHE_DIR=f"{d}/tritium", TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                       TORCHINDUCTOR_AUTOGRAD_CACHE="0")
            env.pop("TRITIUM_AS_TRITON", None)
            cmd = [sys.executable, __file__, "--impl", impl, "--device", device, "-n", str(n)]
            if only:
                cmd += ["--only", ",".join(only)]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
            wall = time.perf_counter() - t
            lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
            if p.returncode != 0 or not lines:
                print(p.stderr[-3000:], file=sys.stderr)
            results[impl] = {"header": lines[0] if lines else {}, "cases": {r["case"]: r for r in lines[1:]},
                             "process_s": wall}
    return results


def table(results) -> str:
    impls = list(results)
    names = []
    for r in results.values():
        names += [n for n in r["cases"] if n not in names]
    head = "| case | " + " | ".join(f"{i} ok / err | {i} first call s | {i} us/call" for i in impls)
    if len(impls) == 2:
        head += (f" | first call {impls[0]}/{impls[1]} | per call {impls[0]}/{impls[1]}"
                 f" | back-to-back {impls[0]}/{impls[1]}")
    lines = [head + " |", "|" + " --- |" * (head.count("|"))]
    tot = {i: 0.0 for i in impls}
    for n in names:
        row = [n]
        for i in impls:
            r = results[i]["cases"].get(n, {})
            if "error" in r:
                row += [f"error: {r['error'][:80]}", "", ""]
                continue
            tot[i] += r.get("first_call_s", 0)
            row += [f"{'yes' if r.get('ok') else 'NO'} / {r.get('err', float('nan')):.1e}",
                    f"{r.get('first_call_s', float('nan')):.2f}", f"{r.get('compiled_us', float('nan')):.1f}"]
        if len(impls) == 2:
            a, b = (results[i]["cases"].get(n, {}) for i in impls)
            if "first_call_s" in a and "first_call_s" in b and "compiled_us" in a and "compiled_us" in b:
                row += [f"{a['first_call_s'] / b['first_call_s']:.2f}", f"{a['compiled_us'] / b['compiled_us']:.2f}"]
                row += [f"{a['compiled_b2b_us'] / b['compiled_b2b_us']:.2f}" if "compiled_b2b_us" in a and
                        "compiled_b2b_us" in b else ""]
            else:
                row += ["", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("total first-call (compile) wall time: " + ", ".join(f"{i} {tot[i]:.1f} s" for i in impls)
                 + (f" (ratio {tot[impls[0]] / tot[impls[1]]:.2f})" if len(impls) == 2 and tot[impls[1]] else ""))
    for i in impls:
        lines.append(f"{i}: {results[i]['header']}, whole process {results[i]['process_s']:.1f} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=("tritium", "triton"), help="run one implementation here (JSON lines)")
    ap.add_argument("--impls", default="tritium,triton", help="what to compare (default: tritium,triton)")
    ap.add_argument("--device", default=None, help="cuda (default where available) or cpu")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("-n", type=int, default=20, help="timed calls per case")
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    only = [x for x in a.only.split(",") if x]
    device = a.device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if a.impl:
        run_one(a.impl, device, only, a.n)
        return 0
    results = compare([x for x in a.impls.split(",") if x], device, only, a.n, a.timeout)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
