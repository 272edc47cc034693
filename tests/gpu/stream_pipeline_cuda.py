"""The AMD stream pipeliner's transform run on an NVIDIA GPU (no AMD GPU is lent): the tutorial matmul and the
fused-attention forward compiled here for cuda with ``stream_pipeline`` in place of the cp.async pipeliner, then
launched on the GPU machine against NumPy references at trip counts 0, 1 and more and masked / odd K tails.

    python tests/gpu/stream_pipeline_cuda.py prepare DIR     # here: compiles, checks the TTGIR is pipelined
    python tests/gpu/stream_pipeline_cuda.py run DIR         # there (cuda-bindings + numpy): launches, compares

``prepare`` writes, per kernel and arch, the PTX (cuda:80: the mma.sync path, ``local_load`` into registers, JIT-
compiled by the driver for the GPU at hand) and the cubin (cuda:90: wgmma reading the buffer) with a JSON of the
launch parameters.  The substitution is this script's own: it runs the TTGIR pipeline with ``tritium-pipeline``
replaced by ``stream_pipeline(force=True)``; nothing else changes.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
MM_CX = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "stride_ak": 1,
         "stride_bn": 1, "stride_cn": 1}
# K's divisibility: 16 (vector loads; K in 0, 16, 32, ...) or 2 (2-element pieces; odd tails like 34)
MM_CASES = {"k16": ({"K": 16}, [0, 16, 32, 64, 96, 1024]), "k2": ({"K": 2}, [2, 34, 66, 98, 1002])}
ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16",
            **{f"stride_{t}{d}": "i32" for t, dims in (("q", "zhm"), ("k", "zhn"), ("v", "zhk"), ("o", "zhm"))
               for d in dims},
            "Z": "i32", "H": "i32", "N_CTX": "i32"}
ATTN_CX = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64, "STAGE": 3, "stride_qk": 1, "stride_kk": 1,
           "stride_vn": 1, "stride_on": 1}


def prepare(out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("BENCH_IMPL", "tritium")
    import tritium
    import tritium_nvidia.passes as NP
    from tritium.compiler import ASTSource
    from tritium.passes.ir_helpers import as_op
    from tritium_amd.passes.stream_pipeline import stream_pipeline
    from tests.e2e import kernels as K

    def forced(op, pass_=None):
        with as_op(op).context:
            assert stream_pipeline(op, force=True) > 0, "nothing pipelined"

    cuda_passes = NP.ttgir_passes()  # the cuda backend's own TTGIR passes, its cp.async pipeliner replaced
    NP.ttgir_passes = lambda: tuple((n, forced) if n == "tritium-pipeline" else (n, f) for n, f in cuda_passes)
    out.mkdir(parents=True, exist_ok=True)
    d16 = {"tt.divisibility": 16}
    jobs = [(f"matmul_{name}", K.matmul_kernel, MM_SIG, MM_CX,
             {**{k: d16 for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "stride_bk", "stride_cm")},
              "K": {"tt.divisibility": kd["K"]}, "stride_am": {"tt.divisibility": kd["K"]}}, {"Ks": ks})
            for name, (kd, ks) in MM_CASES.items()]  # A's rows are K long
    jobs.append(("attention", K._attn_fwd, ATTN_SIG, ATTN_CX,
                 {k: d16 for k, t in ATTN_SIG.items() if t.startswith("*") or "stride" in k}, {}))
    for name, fn, sig, cx, attrs, extra in jobs:
        for arch in (80, 90):
            k = tritium.compile(ASTSource(fn, sig, cx, attrs), target=f"cuda:{arch}",
                                options={"num_stages": 2, "num_warps": 4}, use_cache=False)
            ttgir = k.asm["ttgir"]
            assert '"ttg.local_store"' in ttgir and "async_copy" not in ttgir, name
            stem = f"{name}.sm{arch}"
            if arch == 80:
                (out / f"{stem}.ptx").write_text(k.asm["ptx"])
            else:
                (out / f"{stem}.cubin").write_bytes(k.asm["cubin"])
            meta = {"name": k.metadata["name"], "shared": k.metadata["shared"], "num_warps": 4,
                    "sig": list(sig), "types": list(sig.values()), "cx": cx, **extra}
            (out / f"{stem}.json").write_text(json.dumps(meta))
            print("prepared", stem, "shared", meta["shared"])


class _Cuda:
    def __init__(self):
        from cuda.bindings import driver as cu

        self.cu = cu
        self._ok(cu.cuInit(0))
        dev = self._ok(cu.cuDeviceGet(0))
        self.ctx = self._ok(cu.cuDevicePrimaryCtxRetain(dev))
        self._ok(cu.cuCtxSetCurrent(self.ctx))

    def _ok(self, r):
        err, *rest = r if isinstance(r, tuple) else (r,)
        if int(err) != 0:
            raise RuntimeError(f"CUDA error {err}")
        return rest[0] if len(rest) == 1 else (rest or None)

    def load(self, path: Path, name: str):
        data = path.read_bytes()
        if path.suffix == ".ptx":
            data += b"\0"
        mod = self._ok(self.cu.cuModuleLoadData(data))
        return self._ok(self.cu.cuModuleGetFunction(mod, name.encode()))

    def alloc(self, arr):
        import numpy as np

        arr = np.ascontiguousarray(arr)
        ptr = self._ok(self.cu.cuMemAlloc(max(arr.nbytes, 1)))
        if arr.nbytes:
            self._ok(self.cu.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes))
        return ptr

    def fetch(self, ptr, like):
        import numpy as np

        out = np.empty_like(like)
        self._ok(self.cu.cuMemcpyDtoH(out.ctypes.data, ptr, out.nbytes))
        return out

    def launch(self, fn, grid, warps, shared, args, types):
        import ctypes

        import numpy as np

        if shared > 48 * 1024:
            self._ok(self.cu.cuFuncSetAttribute(
                fn, self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared))
        vals = []
        for a, t in zip(args, types):
            if t.startswith("*"):
                vals.append(ctypes.c_uint64(int(a)))
            elif t == "fp32":
                vals.append(ctypes.c_float(float(a)))
            else:
                vals.append(ctypes.c_int32(int(a)))
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
        self._ok(self.cu.cuLaunchKernel(fn, grid[0], grid[1], 1, 32 * warps, 1, 1, shared, 0,
                                        ctypes.addressof(ptrs), 0))
        self._ok(self.cu.cuCtxSynchronize())
        del np


def run(src: Path) -> int:
    import numpy as np

    cuda = _Cuda()
    rng = np.random.default_rng(0)
    failures = 0
    for meta_path in sorted(src.glob("*.json")):
        meta = json.loads(meta_path.read_text())
        stem = meta_path.stem
        code = src / (stem + (".ptx" if stem.endswith("sm80") else ".cubin"))
        fn = cuda.load(code, meta["name"])
        if stem.startswith("matmul"):
            M, N = 96, 160  # partial blocks in M and N too
            for K in meta["Ks"]:
                a = rng.standard_normal((M, K)).astype(np.float16)
                b = rng.standard_normal((K, N)).astype(np.float16)
                c = np.full((M, N), 7, np.float16)
                pa, pb, pc = cuda.alloc(a), cuda.alloc(b), cuda.alloc(c)
                grid = (((M + 63) // 64) * ((N + 63) // 64), 1)
                cuda.launch(fn, grid, meta["num_warps"], meta["shared"], [pa, pb, pc, M, N, K, K, N, N],
                            meta["types"])
                got = cuda.fetch(pc, c).astype(np.float32)
                ref = a.astype(np.float32) @ b.astype(np.float32)
                err = float(np.abs(got - ref).max())
                ok = err <= 1e-2 * max(1.0, float(np.abs(ref).max()))
                failures += not ok
                print(f"{stem} K={K} (trip count {-(-K // 32)}): max error {err:.4g} {'ok' if ok else 'FAIL'}")
        else:
            Z, H, D, BM = 1, 2, 64, 64
            for n_ctx in (64, 128, 256):  # causal: the first program's off-diagonal loop runs 0 times, 64: once
                q, k, v = (rng.standard_normal((Z, H, n_ctx, D)).astype(np.float16) for _ in range(3))
                o = np.zeros_like(q)
                m = np.zeros((Z * H * n_ctx,), np.float32)
                pq, pk, pv, po, pm = (cuda.alloc(x) for x in (q, k, v, o, m))
                st = [H * n_ctx * D, n_ctx * D, D]  # z, h, row strides (the last dim's is 1)
                args = [pq, pk, pv, 0.5, pm, po, *st, *st, *st, *st, Z, H, n_ctx]
                cuda.launch(fn, (n_ctx // BM, Z * H), meta["num_warps"], meta["shared"], args, meta["types"])
                got = cuda.fetch(po, o).astype(np.float32)
                s = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float32), k.astype(np.float32)) * 0.5
                s = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), s, -np.inf)
                p = np.exp(s - s.max(-1, keepdims=True))
                ref = np.einsum("zhmn,zhnd->zhmd", p / p.sum(-1, keepdims=True), v.astype(np.float32))
                err = float(np.abs(got - ref).max())
                ok = err <= 2e-2
                failures += not ok
                print(f"{stem} N_CTX={n_ctx}: max error {err:.4g} {'ok' if ok else 'FAIL'}")
    print("failures:", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    what, where = sys.argv[1], Path(sys.argv[2])
    sys.exit(prepare(where) or 0 if what == "prepare" else run(where))
