"""The AMD reduction paths of the generic ``tt.reduce`` lowering run on an NVIDIA GPU (no AMD GPU is lent): small
reduction kernels compiled here for cuda:80 with ``CUDATargetInfo.reduce_partials = "shuffle"`` (lane ``l`` loads
the warps' partial ``l % nw_axis`` and a xor butterfly combines them) and ``CUDATargetInfo.read_lane`` (the last
lane step of a whole-warp reduction combines lane 0's and lane 16's values, read here with ``shfl.sync.idx`` from a
constant lane), then launched on the GPU machine against NumPy, beside the same kernels compiled unpatched.

    python tests/gpu/amd_reduce_cuda.py prepare DIR     # here: compiles both ways, checks the PTX differs
    python tests/gpu/amd_reduce_cuda.py run DIR         # there (cuda-bindings + numpy): launches, compares

``prepare`` writes per case ``CASE.patched.ptx.gz`` and ``CASE.plain.ptx.gz`` (JIT-compiled by the driver for the GPU at
hand) and ``CASE.json`` (launch parameters, dtypes, which of the two paths the patched PTX shows).  Cases: tl.sum /
max / min / argmax / argmin / a ``tl.reduce`` with a user combine (max of abs) over 1-D rows with 1 to 16 warps
(rows wide enough that every warp holds its own part: nw_axis = num_warps, and narrower ones where warps are
replicas), 2-D tiles reduced along either axis with warps on both, int32 / int64 / fp16 / fp32, masked rows of
non-power-of-two lengths (masked elements filled with the row's first element, or 0 for sums).  ``run`` compares
bit-exactly where the result is exact (ints, max / min, arg*, abs-max), within 1e-5 of sum(|x|) for float sums.
"""
from __future__ import annotations

import gzip
import json
import re
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OPS = {"sum": 0, "max": 1, "min": 2, "argmax": 3, "argmin": 4, "absmax": 5}
PTR = {"fp16": "*fp16", "fp32": "*fp32", "int32": "*i32", "int64": "*i64"}


def _cases():
    """``(name, kind, dtype, op, num_warps, shape, lengths, vec)``: ``kind`` "rows" (a [BLOCK] row per program, rows
    of ``lengths`` elements) or "tile" (one [BM, BN] program over an ``lengths`` = (M, N) matrix, ``axis``).  Rows
    are ``BLOCK`` / ``BN`` elements apart in memory; ``vec``: the pointers and that stride are declared 16-divisible
    (vector loads: several elements per lane along the row), else one element per lane."""
    out = []
    # 1-D rows: BLOCK = 128 * num_warps gives every warp its own 4-element-per-lane part (nw_axis = num_warps);
    # lengths: full, and masked non-powers of two
    row_ops = [("sum", "fp32"), ("sum", "int32"), ("sum", "int64"), ("max", "fp16"), ("max", "fp32"),
               ("min", "fp32"), ("min", "int32"), ("argmax", "fp32"), ("argmin", "fp32"), ("argmax", "int32"),
               ("argmin", "fp16"), ("absmax", "fp32")]
    for w in (1, 2, 4, 8, 16):
        block = 128 * w
        for op, dt in row_ops:
            out.append((f"rows_{op}_{dt}_w{w}", "rows", dt, op, w, (block,), (block, block - 37, block // 2 + 3),
                        True))
    # scalar (unaligned) rows: one element per lane and a wider row per warp
    for w in (2, 16):
        for op, dt in (("sum", "fp32"), ("argmin", "int32")):
            out.append((f"rows_{op}_{dt}_w{w}_scalar", "rows", dt, op, w, (64 * w,), (64 * w, 64 * w - 5), False))
    # narrow rows: the layout repeats over warps (replicas along the warp bits)
    for op, dt in (("sum", "fp32"), ("argmax", "int32"), ("max", "fp16")):
        out.append((f"rows_{op}_{dt}_w8_narrow", "rows", dt, op, 8, (64,), (64, 45), True))
        out.append((f"rows_{op}_{dt}_w4_b256", "rows", dt, op, 4, (256,), (256, 201), True))
    # 2-D tiles along either axis
    tiles = [((64, 128), 8, (64, 128)), ((64, 128), 8, (53, 117)), ((16, 256), 8, (13, 250)),
             ((256, 16), 8, (250, 13)), ((32, 1024), 16, (29, 1000)), ((128, 64), 4, (100, 60)),
             # tall: lanes along axis 0 too (axis 0's partials butterfly over those lane bits, not the low ones)
             ((512, 8), 16, (509, 7)), ((256, 32), 4, (255, 30))]
    tile_ops = [("sum", "fp32"), ("max", "fp16"), ("argmax", "int32"), ("argmin", "fp32"), ("sum", "int64"),
                ("absmax", "fp32")]
    for (bm, bn), w, mn in tiles:
        for vec in (True, False):
            for axis in (0, 1):
                for op, dt in tile_ops:
                    out.append((f"tile{bm}x{bn}_{mn[0]}x{mn[1]}_ax{axis}_{op}_{dt}_w{w}{'' if vec else '_scalar'}",
                                "tile", dt, op, w, (bm, bn, axis), mn, vec))
    return out


def _kernels():
    import tritium
    import tritium.language as tl

    @tritium.jit
    def _absmax(a, b):
        return tl.maximum(tl.abs(a), tl.abs(b))

    @tritium.jit
    def reduce_rows(X, OUT, N, stride, BLOCK: tl.constexpr, OP: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < N
        x = tl.load(X + row * stride + offs, mask=mask)
        first = tl.load(X + row * stride)
        if OP == 0:
            r = tl.sum(tl.where(mask, x, 0), axis=0)
        else:
            x = tl.where(mask, x, first)  # neutral for max / min / abs-max, and for arg*: ties take index 0
            if OP == 1:
                r = tl.max(x, axis=0)
            elif OP == 2:
                r = tl.min(x, axis=0)
            elif OP == 3:
                r = tl.argmax(x, axis=0)
            elif OP == 4:
                r = tl.argmin(x, axis=0)
            else:
                r = tl.reduce(x, 0, _absmax)
        tl.store(OUT + row, r)

    @tritium.jit
    def reduce_tile(X, OUT, M, N, stride, BM: tl.constexpr, BN: tl.constexpr, AXIS: tl.constexpr,
                    OP: tl.constexpr):
        rm = tl.arange(0, BM)[:, None]
        rn = tl.arange(0, BN)[None, :]
        mask = (rm < M) & (rn < N)
        x = tl.load(X + rm * stride + rn, mask=mask)
        if AXIS == 0:
            first = tl.load(X + rn, mask=rn < N)  # row 0: the first element of each column
        else:
            first = tl.load(X + rm * stride, mask=rm < M)  # column 0
        if OP == 0:
            r = tl.sum(tl.where(mask, x, 0), axis=AXIS)
        else:
            x = tl.where(mask, x, first)
            if OP == 1:
                r = tl.max(x, axis=AXIS)
            elif OP == 2:
                r = tl.min(x, axis=AXIS)
            elif OP == 3:
                r = tl.argmax(x, axis=AXIS)
            elif OP == 4:
                r = tl.argmin(x, axis=AXIS)
            else:
                r = tl.reduce(x, AXIS, _absmax)
        if AXIS == 0:
            o = tl.arange(0, BN)
            tl.store(OUT + o, r, mask=o < N)
        else:
            o = tl.arange(0, BM)
            tl.store(OUT + o, r, mask=o < M)

    return reduce_rows, reduce_tile


def _out_dtype(op, dt):
    return "int32" if op in ("argmax", "argmin") else dt


def _markers(ptx: str) -> dict:
    """Elements loaded from shared memory (``ld.shared.v4`` counts 4), lane reads and butterfly shuffles."""
    loads = sum(int(v or 1) for v in re.findall(r"\bld\.shared(?:\.v(\d))?\.", ptx))
    return {"ld_shared": loads, "shfl_idx": ptx.count("shfl.sync.idx"), "shfl_bfly": ptx.count("shfl.sync.bfly")}


def prepare(out: Path) -> None:
    import tritium
    from tritium.compiler import ASTSource
    from tritium_nvidia.lowering.target_info import CUDATargetInfo

    assert CUDATargetInfo.reduce_partials == "all" and CUDATargetInfo.read_lane is None, "CUDA's defaults changed"
    out.mkdir(parents=True, exist_ok=True)
    for old in list(out.glob("*.ptx.gz")) + list(out.glob("*.json")):
        old.unlink()
    reduce_rows, reduce_tile = _kernels()

    def read_lane(self, ctx, v, lane):
        return self.shuffle_idx(ctx, v, ctx.c32(lane))

    def build(fn, sig, cx, attrs, w, patched):
        if patched:
            CUDATargetInfo.reduce_partials, CUDATargetInfo.read_lane = "shuffle", read_lane
        try:
            return tritium.compile(ASTSource(fn, sig, cx, attrs), target="cuda:80", options={"num_warps": w},
                                   use_cache=False)
        finally:
            CUDATargetInfo.reduce_partials, CUDATargetInfo.read_lane = "all", None

    seen = {"partials": 0, "read_lane": 0}
    total = 0
    for name, kind, dt, op, w, shape, lengths, vec in _cases():
        odt = _out_dtype(op, dt)
        if kind == "rows":
            fn, sig, cx = reduce_rows, {"X": PTR[dt], "OUT": PTR[odt], "N": "i32", "stride": "i32"}, \
                {"BLOCK": shape[0], "OP": OPS[op]}
        else:
            fn, sig = reduce_tile, {"X": PTR[dt], "OUT": PTR[odt], "M": "i32", "N": "i32", "stride": "i32"}
            cx = {"BM": shape[0], "BN": shape[1], "AXIS": shape[2], "OP": OPS[op]}
        attrs = {k: {"tt.divisibility": 16} for k in ("X", "OUT", "stride")} if vec else {}
        plain = build(fn, sig, cx, attrs, w, False)
        patched = build(fn, sig, cx, attrs, w, True)
        pp, pq = plain.asm["ptx"], patched.asm["ptx"]
        mp, mq = _markers(pp), _markers(pq)
        # which path the patched compile took, read off its PTX against the plain one's
        partials = mq["ld_shared"] < mp["ld_shared"] and mq["shfl_bfly"] > mp["shfl_bfly"]
        lane = mq["shfl_idx"] > mp["shfl_idx"]
        layout = re.search(r'"tt\.reduce".*?: \(tensor<[^,]*, #ttg\.blocked<(.*?)>>', plain.asm["ttgir"]).group(1)
        layout = re.sub(r"array<i32: ([^>]*)>?", r"[\1]", layout)  # sizePerThread, threadsPerWarp, warps, order
        if not (partials or lane):  # within a thread, or lanes over both dimensions and no warps along the axis
            assert pp == pq, f"{name}: the PTX differs but shows neither path ({mp} vs {mq})"
            print(f"skipped {name} (layout {layout}): neither path applies")
            continue
        assert mp["shfl_idx"] == 0, f"{name}: the plain compile reads lanes"
        seen["partials"] += partials
        seen["read_lane"] += lane
        for tag, ptx in (("plain", pp), ("patched", pq)):
            data = gzip.compress(ptx.encode(), mtime=0)
            (out / f"{name}.{tag}.ptx.gz").write_bytes(data)
            total += len(data)
        meta = {"kind": kind, "dtype": dt, "out_dtype": odt, "op": op, "num_warps": w, "shape": list(shape),
                "lengths": list(lengths), "types": list(sig.values()),
                "name": {"plain": plain.metadata["name"], "patched": patched.metadata["name"]},
                "shared": {"plain": plain.metadata["shared"], "patched": patched.metadata["shared"]},
                "layout": layout, "paths": {"partials": partials, "read_lane": lane}, "plain_ptx": mp,
                "patched_ptx": mq}
        (out / f"{name}.json").write_text(json.dumps(meta))
        print(f"prepared {name} (layout {layout}): {'partials-shuffle ' if partials else ''}"
              f"{'read-lane ' if lane else ''}ld.shared {mp['ld_shared']} -> {mq['ld_shared']}, "
              f"shfl.idx {mp['shfl_idx']} -> {mq['shfl_idx']}, "
              f"shfl.bfly {mp['shfl_bfly']} -> {mq['shfl_bfly']}")
    assert seen["partials"] and seen["read_lane"], seen
    print(f"cases with the partials butterfly: {seen['partials']}, with the lane read: {seen['read_lane']}; "
          f"PTX {total / 1e6:.2f} MB gzipped")


def _inputs(rng, dt, shape, op):
    import numpy as np

    if dt == "int32":
        hi = 9 if op in ("argmax", "argmin") else 1000  # arg*: a small range, so ties are frequent
        x = rng.integers(1, hi, size=shape, dtype=np.int32)
    elif dt == "int64":
        x = rng.integers(1, 1 << 40, size=shape, dtype=np.int64)  # the high halves matter (64-bit shuffles)
    elif op in ("argmax", "argmin"):
        x = (rng.integers(1, 17, size=shape) * 0.25).astype(dt.replace("fp", "float"))  # ties again
    else:
        x = rng.uniform(0.5, 2.0, size=shape).astype(dt.replace("fp", "float"))
    x = x * np.where(rng.random(shape) < 0.5, -1, 1).astype(x.dtype)  # signs (never zero)
    return np.ascontiguousarray(x)


def _reference(x, op, axis):
    import numpy as np

    if op == "sum":
        return x.astype(np.float64).sum(axis) if x.dtype.kind == "f" else x.sum(axis, dtype=x.dtype)
    if op == "max":
        return x.max(axis)
    if op == "min":
        return x.min(axis)
    if op == "argmax":
        return x.argmax(axis).astype(np.int32)  # NumPy: the first of equal maxima, as Triton
    if op == "argmin":
        return x.argmin(axis).astype(np.int32)
    return np.abs(x).max(axis)


def _compare(got, ref, x, op, axis):
    import numpy as np

    if op == "sum" and x.dtype.kind == "f":
        bound = 1e-5 * np.abs(x.astype(np.float64)).sum(axis)
        err = np.abs(got.astype(np.float64) - ref)
        return bool((err <= bound).all()), float((err / bound).max())
    bad = int((got != ref).sum())
    return bad == 0, bad


def run(src: Path) -> int:
    import numpy as np

    from tests.gpu.stream_pipeline_cuda import _Cuda

    cuda = _Cuda()
    failures = {"plain": 0, "patched": 0}
    failed = []  # repeated at the end, where a log's tail shows them
    count = 0
    for meta_path in sorted(src.glob("*.json")):
        meta = json.loads(meta_path.read_text())
        stem = meta_path.stem
        rng = np.random.default_rng(zlib.crc32(stem.encode()))  # fixed per case
        op, dt, odt, w = meta["op"], meta["dtype"], meta["out_dtype"], meta["num_warps"]
        fns = {}
        for tag in ("plain", "patched"):
            with tempfile.TemporaryDirectory() as tmp:  # the launch helper loads a .ptx file
                ptx = Path(tmp) / "k.ptx"
                ptx.write_bytes(gzip.decompress((src / f"{stem}.{tag}.ptx.gz").read_bytes()))
                fns[tag] = cuda.load(ptx, meta["name"][tag])
        odtype = np.dtype(odt.replace("fp", "float"))
        # the buffers are BLOCK / BN elements per row (random throughout), the kernels see the first N of each
        if meta["kind"] == "rows":
            (block,) = meta["shape"]
            jobs = []
            for n in meta["lengths"]:
                rows = 3
                buf = _inputs(rng, dt, (rows, block), op)
                jobs.append((f"N={n}", buf, buf[:, :n], (rows, 1), lambda px, po, n=n: [px, po, n, block],
                             np.full(rows, 7, odtype), 1))
        else:
            bm, bn, axis = meta["shape"]
            m, n = meta["lengths"]
            buf = _inputs(rng, dt, (bm, bn), op)
            jobs = [(f"{m}x{n}", buf, buf[:m, :n], (1, 1), lambda px, po: [px, po, m, n, bn],
                     np.full(bn if axis == 0 else bm, 7, odtype), axis)]
        for label, buf, x, grid, args, init, axis in jobs:
            ref = _reference(x, op, axis)
            for tag, fn in fns.items():
                px, po = cuda.alloc(buf), cuda.alloc(init)
                cuda.launch(fn, grid, w, meta["shared"][tag], args(px, po), meta["types"])
                got = cuda.fetch(po, init)[:ref.shape[0]]
                ok, what = _compare(got, ref, x, op, axis)
                failures[tag] += not ok
                count += 1
                detail = f"max err/bound {what:.3g}" if op == "sum" and x.dtype.kind == "f" else f"{what} wrong"
                paths = "+".join(k for k, v in meta["paths"].items() if v) if tag == "patched" else "-"
                print(f"{stem} {label} [{tag}] paths={paths}: {detail} {'ok' if ok else 'FAIL'}")
                if not ok:
                    failed.append(f"{tag} {stem} {label} layout {meta['layout']} paths={paths}: {detail}")
                for p in (px, po):
                    cuda.cu.cuMemFree(p)
    print("\n".join(["failed:"] + failed) if failed else "failed: none")
    print(f"launches: {count}; failures: plain (control) {failures['plain']}, patched {failures['patched']}")
    return 1 if failures["plain"] or failures["patched"] else 0


if __name__ == "__main__":
    what, where = sys.argv[1], Path(sys.argv[2])
    sys.exit(prepare(where) or 0 if what == "prepare" else run(where))
