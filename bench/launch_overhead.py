"""Host launch overhead of a cached kernel, CPU only: the whole ``kernel[grid](...)`` path with the device call
stubbed out.

    python bench/launch_overhead.py [--backend cuda|interpreter|both] [-n 20000] [--rounds 5] [--json OUT]

* ``cuda``: vector add compiled for ``cuda:90`` here (file cache as usual), launched through tritium's real
  cuda driver and generated launcher, with ``cuda.bindings.driver`` replaced by a stand-in whose calls return
  success at once: loading the "cubin" does nothing and ``cuLaunchKernel`` -- the launcher's bound function --
  is a no-op.  torch's CUDA device / raw-stream getters are stubbed (C builtins returning 0: a CPU torch has
  none) and the tensors are stand-ins with torch dtypes, ``is_cuda`` and a C-level ``data_ptr()``.  So the
  figure is tritium's host cost per launch *above* the bare ``cuLaunchKernel`` call (add the real call's ~4-6
  µs on a GPU machine); the stub's own call cost is printed separately and subtracted in "above the stub".
* ``interpreter``: the same kernel on the interpreter (1024 fp32, one program), first for real (the NumPy
  program runs; numpy arrays, then torch CPU tensors when torch is installed), then with the program's execution
  stubbed (its ``fn`` is a no-op): binding, cache lookups, the interpreter driver's argument conversion.

Rows: the whole path, then the lower layers (core ``runtime.driver.launch``, ``CUDADriver.launch``, the
launcher function), each the minimum over rounds of the mean over ``n`` launches, in µs.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "core"))

KERNELS = os.path.join(os.path.dirname(HERE), "tests", "e2e", "kernels.py")


def _load_kernel_module():
    """The tests' tutorial kernels (``tests/e2e/kernels.py``: the vector add is ``add_kernel``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("launch_bench_kernels", KERNELS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def per_call_us(fn, n: int, rounds: int) -> float:
    for _ in range(min(n, 200)):
        fn()
    best = None
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            dt = (time.perf_counter() - t0) / n * 1e6
            best = dt if best is None else min(best, dt)
    finally:
        if gc_was:
            gc.enable()
    return best


# ----------------------------------------------------------------------------------------------- cuda stub
def setup_cuda():
    """cuda:90 with tritium_nvidia.stub's stand-in for cuda.bindings.driver and torch's CUDA getters."""
    os.environ["TRITIUM_TARGET"] = "cuda:90"
    import torch
    import tritium_nvidia.driver as nd
    from tritium_nvidia.stub import StubCUDA, stub_torch_cuda

    stub_torch_cuda(torch)
    nd._cu = StubCUDA()
    from tritium.runtime import driver

    driver.reset()
    d = driver.get_driver("cuda")
    d._probed, d._reason = True, ""
    return torch, d


def bench_cuda(n: int, rounds: int) -> dict:
    torch, d = setup_cuda()
    from tritium.runtime import driver
    from tritium_nvidia.stub import StubCudaTensor, no_launch

    mod = _load_kernel_module()
    k = mod.add_kernel
    N = 1024
    x, y, out = (StubCudaTensor(torch.float32, 0x7F0000000000 + i * 0x10000) for i in range(3))
    ck = k[(1,)](x, y, out, N, BLOCK_SIZE=1024)  # compiles (or loads from the file cache) and "loads the cubin"
    lk = ck.loaded[0]
    assert lk.launch.__globals__["cuLaunchKernel"] is no_launch
    res = {}
    args = [x, y, out, N]
    s = d._stream(0)
    res["tritium kernel[grid](...)"] = per_call_us(lambda: k[(1,)](x, y, out, N, BLOCK_SIZE=1024), n, rounds)
    grid_fn = lambda meta: (1,)  # noqa: E731
    res["tritium kernel[lambda meta: ...](...)"] = per_call_us(lambda: k[grid_fn](x, y, out, N, BLOCK_SIZE=1024),
                                                               n, rounds)
    import tritium as tr

    assert k.compile_count <= 1
    tuned = tr.autotune(configs=[tr.Config({"BLOCK_SIZE": 1024}, num_warps=4),
                                 tr.Config({"BLOCK_SIZE": 1024}, num_warps=8)], key=["n_elements"])(k)
    heur = tr.heuristics({"BLOCK_SIZE": lambda args: 1024})(k)
    tuned[(1,)](x, y, out, N)  # tunes (the stub "runs" both configs)
    res["tritium autotuned kernel[grid](...), after tuning"] = per_call_us(lambda: tuned[(1,)](x, y, out, N), n,
                                                                           rounds)
    res["tritium heuristics kernel[grid](...)"] = per_call_us(lambda: heur[(1,)](x, y, out, N), n, rounds)
    res["tritium CompiledKernel[grid](...)"] = per_call_us(lambda: ck[(1,)](x, y, out, N), n, rounds)
    res["tritium core runtime.driver.launch"] = per_call_us(lambda: driver.launch(ck, (1, 1, 1), args), n, rounds)
    res["CUDADriver.launch"] = per_call_us(lambda: d.launch(ck, (1, 1, 1), args), n, rounds)
    res["launcher only (pack + stub cuLaunchKernel)"] = per_call_us(lambda: lk.launch(1, 1, 1, s, args), n, rounds)
    res["stub cuLaunchKernel call alone"] = per_call_us(lambda: no_launch(1, 1, 1, 1, 128, 1, 1, 0, s, 0, 0), n,
                                                        rounds)
    res["tritium kernel[grid](...) above the stub"] = (res["tritium kernel[grid](...)"]
                                                       - res["stub cuLaunchKernel call alone"])
    print(k.compile_count, file=sys.stderr)
    return res


def bench_interpreter(n: int, rounds: int, real_n: int = 2000) -> dict:
    os.environ["TRITIUM_TARGET"] = "interpreter"
    import numpy as np

    from tritium.runtime import driver
    from tritium_interpreter.launcher import get_program

    driver.reset()
    mod = _load_kernel_module()
    k = mod.add_kernel
    N = 1024
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    out = np.empty_like(x)
    ck = k[(1,)](x, y, out, N, BLOCK_SIZE=1024)
    assert (out == x + y).all()
    res = {}
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is optional here
        torch = None
    if torch is not None:
        tx, ty, to = torch.from_numpy(x), torch.from_numpy(y), torch.empty(N)
        k[(1,)](tx, ty, to, N, BLOCK_SIZE=1024)
        assert torch.equal(to, tx + ty)
    # real relaunches (the NumPy program runs): vector add of 1024 fp32, one program
    res["interpreter kernel[grid](...), vector add 1024, real"] = per_call_us(
        lambda: k[(1,)](x, y, out, N, BLOCK_SIZE=1024), real_n, rounds)
    if torch is not None:
        res["interpreter kernel[grid](...), torch CPU tensors, real"] = per_call_us(
            lambda: k[(1,)](tx, ty, to, N, BLOCK_SIZE=1024), real_n, rounds)
    get_program(ck).fn = lambda *a: None  # program execution stubbed from here on
    res["interpreter kernel[grid](...), program stubbed"] = per_call_us(
        lambda: k[(1,)](x, y, out, N, BLOCK_SIZE=1024), n, rounds)
    if torch is not None:
        res["interpreter kernel[grid](...), torch CPU tensors, stubbed"] = per_call_us(
            lambda: k[(1,)](tx, ty, to, N, BLOCK_SIZE=1024), n, rounds)
    args = [x, y, out, N]
    res["interpreter core runtime.driver.launch"] = per_call_us(lambda: driver.launch(ck, (1, 1, 1), args), n,
                                                                rounds)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["cuda", "interpreter", "both"], default="both")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--real-n", type=int, default=2000, help="launches per round of the unstubbed interpreter rows")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    res = {}
    # each backend in its own process: the cuda stubs must not leak into the interpreter's run
    if a.backend == "both":
        import subprocess

        for b in ("cuda", "interpreter"):
            out = subprocess.run([sys.executable, __file__, "--backend", b, "-n", str(a.n), "--rounds",
                                  str(a.rounds), "--real-n", str(a.real_n), "--json", "-"], capture_output=True,
                                 text=True)
            if out.returncode:
                sys.stderr.write(out.stderr)
                return out.returncode
            res.update(json.loads(out.stdout.strip().splitlines()[-1]))
    elif a.backend == "cuda":
        res = bench_cuda(a.n, a.rounds)
    else:
        res = bench_interpreter(a.n, a.rounds, a.real_n)
    if a.json == "-":
        print(json.dumps(res))
        return 0
    for k, v in res.items():
        print(f"{k:<52} {v:7.2f} us")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
