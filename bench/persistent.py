"""Persistent matmuls on the GPU: tritium, Triton and torch side by side, ``tl.range(..., flatten=True)`` on and off.

    python bench/persistent.py [--sizes 4096 8192] [--rounds 3] [--json OUT]     # on the GPU machine

Kernels (tests/e2e/kernels.py, imported once against ``tritium`` and once against ``triton``, as bench/gpu.py
does): the persistent-matmul tutorial's pointer kernel ``matmul_kernel_persistent`` (one program per SM walking
the tiles, 128x256x64, 3 stages, 8 warps, fp16) with ``FLATTEN`` False (a K loop per tile) and True (the tile
loop fused with the K loop: passes/ttir/fuse_nested_loops.py), and the device-descriptor kernel
``matmul_kernel_descriptor_persistent`` (TMA, flatten=True); ``torch.matmul`` as the reference.  Times are
``triton.testing.do_bench`` medians (CUDA events), each row's implementations measured in turns ``--rounds``
times and the median round reported; TFLOP/s count 2*M*N*K.  Ratios: TFLOP/s(tritium) / TFLOP/s(other).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpu import load_kernels  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import torch
    import triton as real_triton

    dev = torch.device("cuda")
    impls = {"tritium": load_kernels("tritium"), "triton": load_kernels("triton")}
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for K in impls.values():
        K.triton.set_allocator(lambda size, align, stream: torch.empty(size, device=dev, dtype=torch.int8))
    rows = []
    print(f"{torch.cuda.get_device_name()}, {sms} SMs; TFLOP/s (median of {args.rounds} rounds)")
    print(f"{'kernel':34} {'size':>6} {'tritium':>8} {'triton':>8} {'torch':>8} {'tri/Tri':>8} {'tri/torch':>9}")
    for n in args.sizes:
        a = torch.randn(n, n, device=dev, dtype=torch.float16)
        b = torch.randn(n, n, device=dev, dtype=torch.float16)
        bt = b.T.contiguous()  # N x K for the descriptor kernel
        ref = torch.matmul(a, b)
        c = torch.empty(n, n, device=dev, dtype=torch.float16)
        cases = {
            "persistent ptr, flatten=False": lambda K: K.matmul_persistent(K, a, b, c, n, n, n, sms, flatten=False),
            "persistent ptr, flatten=True": lambda K: K.matmul_persistent(K, a, b, c, n, n, n, sms, flatten=True),
            "persistent dev desc, flatten=True": lambda K: K.matmul_descriptor_persistent(K, a, bt, c, n, n, n, sms),
        }
        for name, run in cases.items():
            fns = {k: (lambda K=K: run(K)) for k, K in impls.items()}
            fns["torch"] = lambda: torch.matmul(a, b)
            for k in impls:  # correctness first (also compiles)
                c.fill_(float("nan"))
                fns[k]()
                torch.cuda.synchronize()
                err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
                assert err < 1e-2, f"{name} {k}: relative error {err:.2e}"
            times = {k: [] for k in fns}
            for _ in range(args.rounds):
                for k, f in fns.items():
                    times[k].append(real_triton.testing.do_bench(f, warmup=25, rep=100))
            tf = {k: 2 * n ** 3 / (statistics.median(v) * 1e-3) / 1e12 for k, v in times.items()}
            row = dict(kernel=name, size=n, tflops=tf, ratio_triton=tf["tritium"] / tf["triton"],
                       ratio_torch=tf["tritium"] / tf["torch"])
            rows.append(row)
            print(f"{name:34} {n:>6} {tf['tritium']:8.0f} {tf['triton']:8.0f} {tf['torch']:8.0f} "
                  f"{row['ratio_triton']:8.2f} {row['ratio_torch']:9.2f}", flush=True)
        del a, b, bt, c, ref
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
