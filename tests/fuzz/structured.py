"""Structured differential campaigns (issue 28.2): the shapes of the wrong results Triton's own test_core.py found on
the GPU, enumerated rather than drawn at random, each kernel against a torch / NumPy model:

* ``scans``: ``cumsum`` / ``cumprod``, forward and reversed, along every axis of 1-, 2- and 3-D tensors, in every
  dtype (int8 .. int64, fp16, bf16, fp32, fp64), with Triton's accumulation types (ints under 32 bits in int32,
  bf16 in fp32);
* ``reductions``: ``sum`` / ``max`` / ``min`` / ``argmax`` / ``xor_sum`` along every axis of the same shapes and
  dtypes (``keep_dims``), with Triton's result types (max / min of 16-bit floats in fp32);
* ``atomics``: ``atomic_add / max / min / xchg / and / or / xor / cas`` whose result is used, at ranks 1, 2 and 3,
  through pointers with broadcast dimensions (``[N, 1]``, ``[1, N, 1]``, ...), the old values broadcast to the full
  shape in a store (so every thread holding a copy of an element must see its value);
* ``loops``: a ``while`` in a ``for`` in a ``while`` loading and storing one address; a ``for`` whose body loads and
  stores the same tensor; an early exit through a flag; a ``while`` on a reduction of a tensor -- trip counts
  loaded per program, so the programs of a launch differ.

``cases(family)`` lists a family's cases; ``run(case, device)`` launches one and returns "" or what differs.  In the
test suite (tests/fuzz/test_structured.py) a sample runs on the interpreter; the whole campaign, on any device::

    python -m tests.fuzz.structured [--device cuda] [--family scans ...] [--every K]

prints, per family, the cases run, passed and failed (with the first failures).  docs/RELIABILITY.md has the counts.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import zlib
from dataclasses import dataclass

import torch

import tritium as triton
import tritium.language as tl

DTYPES = ("int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
SHAPES = ((16,), (128,), (1024,), (8, 16), (32, 8), (64, 64), (2, 128), (4, 8, 16), (2, 16, 8), (8, 4, 4))


@dataclass(frozen=True)
class Case:
    family: str
    op: str
    dtype: str
    shape: tuple
    axis: int = 0
    reverse: bool = False
    num_warps: int = 4
    extra: tuple = ()

    @property
    def id(self) -> str:
        s = "x".join(map(str, self.shape))
        return (f"{self.family}-{self.op}-{self.dtype}-{s}-ax{self.axis}{'-rev' if self.reverse else ''}"
                f"-w{self.num_warps}{''.join('-' + str(e) for e in self.extra)}")


# ---------------------------------------------------------------------------------------------- kernels
@triton.jit
def _apply(x, OP: tl.constexpr, AXIS: tl.constexpr, REV: tl.constexpr):
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REV)
    elif OP == "cumprod":
        y = tl.cumprod(x, axis=AXIS, reverse=REV)
    elif OP == "sum":
        y = tl.sum(x, axis=AXIS, keep_dims=True)
    elif OP == "max":
        y = tl.max(x, axis=AXIS, keep_dims=True)
    elif OP == "min":
        y = tl.min(x, axis=AXIS, keep_dims=True)
    elif OP == "argmax":
        y = tl.argmax(x, axis=AXIS, keep_dims=True)
    else:
        y = tl.xor_sum(x, axis=AXIS, keep_dims=True)
    return y


@triton.jit
def _offsets(D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, RANK: tl.constexpr):
    """Row-major offsets of a [D0], [D0, D1] or [D0, D1, D2] block."""
    if RANK == 1:
        o = tl.arange(0, D0)
    elif RANK == 2:
        o = tl.arange(0, D0)[:, None] * D1 + tl.arange(0, D1)[None, :]
    else:
        o = (tl.arange(0, D0)[:, None, None] * (D1 * D2) + tl.arange(0, D1)[None, :, None] * D2
             + tl.arange(0, D2)[None, None, :])
    return o


@triton.jit
def scan_reduce_kernel(X, Z, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, E0: tl.constexpr,
                       E1: tl.constexpr, E2: tl.constexpr, RANK: tl.constexpr, OP: tl.constexpr, AXIS: tl.constexpr,
                       REV: tl.constexpr):
    x = tl.load(X + _offsets(D0, D1, D2, RANK))
    y = _apply(x, OP, AXIS, REV)
    tl.store(Z + _offsets(E0, E1, E2, RANK), y.to(Z.dtype.element_ty))


@triton.jit
def _atomic(p, v, OP: tl.constexpr):
    if OP == "add":
        old = tl.atomic_add(p, v)
    elif OP == "max":
        old = tl.atomic_max(p, v)
    elif OP == "min":
        old = tl.atomic_min(p, v)
    elif OP == "xchg":
        old = tl.atomic_xchg(p, v)
    elif OP == "and":
        old = tl.atomic_and(p, v)
    elif OP == "or":
        old = tl.atomic_or(p, v)
    elif OP == "xor":
        old = tl.atomic_xor(p, v)
    else:  # cas: swap in v where the slot holds its own index's parity-coded value (half of them)
        old = tl.atomic_cas(p, (v * 0) + 1, v)
    return old


@triton.jit
def atomic_used_kernel(P, V, OUT, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, B0: tl.constexpr,
                       B1: tl.constexpr, B2: tl.constexpr, RANK: tl.constexpr, OP: tl.constexpr):
    # the atomic's pointers span the block [B0, B1, B2] (each B is D or 1: broadcast dimensions); its old values are
    # broadcast to [D0, D1, D2] and stored
    ob = _offsets(B0, B1, B2, RANK)
    old = _atomic(P + ob, tl.load(V + ob), OP)
    full = _offsets(D0, D1, D2, RANK)
    tl.store(OUT + full, old + tl.zeros(full.shape, old.dtype))


@triton.jit
def nested_while_kernel(D, C, W, F, STEP: tl.constexpr):
    # while (outer count loaded per program) { for (count loaded) { c = load; while c > 0 { d += 1; c -= STEP } } }
    pid = tl.program_id(0)
    w = tl.load(W + pid)
    while w > 0:
        for i in range(tl.load(F + pid)):
            c = tl.load(C + pid)
            while c > 0:
                tl.store(D + pid, tl.load(D + pid) + 1.0)
                c -= STEP
        w -= 1


@triton.jit
def for_same_address_kernel(A, K, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    for i in range(tl.load(K + pid)):
        v = tl.load(A + o)
        tl.store(A + o, v * 2 + i)


@triton.jit
def early_exit_kernel(X, OUT, N, T):
    pid = tl.program_id(0)
    done = False
    acc = 0.0
    steps = 0
    for j in range(N):
        if not done:
            v = tl.load(X + pid * N + j)
            if v > T:
                done = True
            else:
                acc += v
                steps += 1
    tl.store(OUT + 2 * pid, acc)
    tl.store(OUT + 2 * pid + 1, steps.to(tl.float32))


@triton.jit
def while_reduction_kernel(X, OUT, CNT, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + o)
    n = 0
    while tl.max(x, axis=0) > 0:
        x = x - 1
        n += 1
    tl.store(OUT + o, x)
    tl.store(CNT + pid, n)


# ---------------------------------------------------------------------------------------------- cases
def _axes(shape):
    return range(len(shape))


def cases(family: str) -> list:
    out = []
    if family == "scans":
        for dt, shape, op, rev in itertools.product(DTYPES, SHAPES, ("cumsum", "cumprod"), (False, True)):
            for ax in _axes(shape):
                out.append(Case("scans", op, dt, shape, ax, rev, 8 if shape == (64, 64) else 4))
    elif family == "reductions":
        for dt, shape, op in itertools.product(DTYPES, SHAPES, ("sum", "max", "min", "argmax", "xor_sum")):
            if op == "xor_sum" and dt.startswith(("float", "bfloat")):
                continue
            for ax in _axes(shape):
                out.append(Case("reductions", op, dt, shape, ax, False, 8 if shape == (64, 64) else 4))
    elif family == "atomics":
        ops = {"int32": ("add", "max", "min", "xchg", "and", "or", "xor", "cas"), "int64": ("add", "max", "xchg"),
               "float32": ("add", "max", "min", "xchg"), "float16": ("add",)}
        for dt, o in ops.items():
            for shape in ((4,), (64,), (256,), (4, 4), (8, 32), (32, 8), (2, 4, 8), (4, 8, 2)):
                for bmask in itertools.product((0, 1), repeat=len(shape)):
                    if not any(bmask):
                        continue  # at least one dimension the atomic's pointers span
                    for op in o:
                        for nw in (1, 4):
                            out.append(Case("atomics", op, dt, shape, 0, False, nw, bmask))
    elif family == "loops":
        for step, nprog in itertools.product((1, 2, 3), (1, 4, 33)):
            out.append(Case("loops", "nested_while", "float32", (nprog,), 0, False, 4, (step,)))
        for block, nprog in itertools.product((16, 128, 1024), (1, 5)):
            out.append(Case("loops", "for_same_address", "float32", (block,), 0, False, 4, (nprog,)))
        for n, nprog in itertools.product((1, 7, 40), (1, 6)):
            out.append(Case("loops", "early_exit", "float32", (n,), 0, False, 4, (nprog,)))
        for block, nprog in itertools.product((16, 256), (1, 3)):
            out.append(Case("loops", "while_reduction", "int32", (block,), 0, False, 4, (nprog,)))
    else:
        raise ValueError(f"unknown family {family!r}")
    return out


FAMILIES = ("scans", "reductions", "atomics", "loops")


# ---------------------------------------------------------------------------------------------- models
TORCH = {"int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
         "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def _is_float(dt: str) -> bool:
    return dt.startswith(("float", "bfloat"))


def result_dtype(case: Case) -> str:
    """Triton 3.6's result type of the op on ``case.dtype``."""
    dt, op = case.dtype, case.op
    if op == "argmax":
        return "int32"
    if dt in ("int8", "int16") and op in ("sum", "cumsum", "cumprod", "max", "min"):
        return "int32"
    if dt == "bfloat16" and op in ("cumsum", "cumprod", "max", "min"):
        return "float32"
    if dt == "float16" and op in ("max", "min"):
        return "float32"
    return dt


def scan_reduce_input(case: Case, gen) -> torch.Tensor:
    n = 1
    for d in case.shape:
        n *= d
    dt = case.dtype
    if case.op == "cumprod":
        if _is_float(dt):
            x = 1 + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 0.1
        else:
            x = torch.randint(-2, 3, (n,), generator=gen, dtype=torch.int64)
    elif _is_float(dt):
        x = torch.randn(n, generator=gen, dtype=torch.float64) * 4
    else:
        hi = 100 if dt == "int8" else 3000
        x = torch.randint(-hi, hi + 1, (n,), generator=gen, dtype=torch.int64)
    return x.to(TORCH[dt]).reshape(case.shape)


def _wrap(x: torch.Tensor, dt: str) -> torch.Tensor:
    """int64 values wrapped to ``dt``'s width (two's complement)."""
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[dt]
    if bits == 64:
        return x
    m = 1 << bits
    return ((x + (m >> 1)) % m) - (m >> 1)


def scan_reduce_model(case: Case, x: torch.Tensor):
    """(expected values as float64 / int64, tolerance) of the op on ``x``; the tolerance bounds the reordering of
    float sums and products (0 for exact ops)."""
    ax, op, rdt = case.axis, case.op, result_dtype(case)
    if _is_float(case.dtype):
        v = x.double()
        acc_eps = EPS[rdt if op in ("cumsum", "cumprod", "sum") else case.dtype]
        if op in ("cumsum", "cumprod"):
            t = v.flip(ax) if case.reverse else v
            t = torch.cumsum(t, ax) if op == "cumsum" else torch.cumprod(t, ax)
            t = t.flip(ax) if case.reverse else t
            mag = torch.cumsum((v.flip(ax) if case.reverse else v).abs(), ax)
            mag = mag.flip(ax) if case.reverse else mag
            if op == "cumprod":
                mag = t.abs()
            tol = mag * acc_eps * (2 * case.shape[ax]) + EPS[rdt] * t.abs()
            return t, tol
        if op == "sum":
            t = v.sum(ax, keepdim=True)
            return t, v.abs().sum(ax, keepdim=True) * acc_eps * 2 * case.shape[ax] ** 0.5 + EPS[rdt] * t.abs()
        if op in ("max", "min"):
            t = v.amax(ax, keepdim=True) if op == "max" else v.amin(ax, keepdim=True)
            return t, torch.zeros_like(t)
        return v.argmax(ax, keepdim=True).double(), torch.zeros(1)
    v = x.long()
    if op in ("cumsum", "cumprod"):
        t = v.flip(ax) if case.reverse else v
        if op == "cumsum":
            t = torch.cumsum(t, ax)
        else:  # wrap as we go: the products overflow int64
            parts = list(t.unbind(ax))
            acc = parts[0]
            out = [acc]
            for p in parts[1:]:
                acc = _wrap(acc * p, rdt if rdt != "int64" else "int64")
                out.append(acc)
            t = torch.stack(out, ax)
        t = t.flip(ax) if case.reverse else t
        return _wrap(t, rdt), torch.zeros(1)
    if op == "sum":
        return _wrap(v.sum(ax, keepdim=True), rdt), torch.zeros(1)
    if op in ("max", "min"):
        return (v.amax(ax, keepdim=True) if op == "max" else v.amin(ax, keepdim=True)), torch.zeros(1)
    if op == "argmax":
        return v.argmax(ax, keepdim=True), torch.zeros(1)
    parts = v.unbind(ax)  # xor_sum
    acc = parts[0]
    for p in parts[1:]:
        acc = acc ^ p
    return acc.unsqueeze(ax), torch.zeros(1)


def _dims(shape):
    d = list(shape) + [1] * (3 - len(shape))
    return d[0], d[1], d[2]


def run_scan_reduce(case: Case, device: str) -> str:
    gen = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))
    x = scan_reduce_input(case, gen)
    out_shape = list(case.shape)
    if case.family == "reductions":
        out_shape[case.axis] = 1
    z = torch.zeros(out_shape, dtype=TORCH[result_dtype(case)])
    xd, zd = x.to(device), z.to(device)
    D0, D1, D2 = _dims(case.shape)
    E0, E1, E2 = _dims(out_shape)
    scan_reduce_kernel[(1,)](xd, zd, D0=D0, D1=D1, D2=D2, E0=E0, E1=E1, E2=E2, RANK=len(case.shape), OP=case.op,
                             AXIS=case.axis, REV=case.reverse, num_warps=case.num_warps)
    got = zd.cpu()
    want, tol = scan_reduce_model(case, x)
    if _is_float(result_dtype(case)):
        g = got.double()
        bad = ~((g - want).abs() <= tol + 1e-300) & ~(g.isnan() & want.isnan())
    else:
        bad = got.long() != want.long()
    if bad.any():
        i = bad.nonzero()[0].tolist()
        return (f"{int(bad.sum())} of {bad.numel()} elements differ, e.g. at {i}: got {got[tuple(i)].item()}, "
                f"want {want[tuple(i)].item()}")
    return ""


def run_atomic(case: Case, device: str) -> str:
    gen = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))
    D0, D1, D2 = _dims(case.shape)
    bshape = [d if m else 1 for d, m in zip(case.shape, case.extra)]
    B0, B1, B2 = _dims(bshape)
    n = B0 * B1 * B2
    dt = TORCH[case.dtype]
    if case.op == "cas":
        p0 = torch.randint(0, 2, (n,), generator=gen, dtype=torch.int64).to(dt)
        v = torch.randint(5, 50, (n,), generator=gen, dtype=torch.int64).to(dt)
    elif _is_float(case.dtype):
        p0 = torch.randint(-8, 8, (n,), generator=gen, dtype=torch.int64).to(dt)  # exact in fp16 sums
        v = torch.randint(-8, 8, (n,), generator=gen, dtype=torch.int64).to(dt)
    else:
        p0 = torch.randint(-1000, 1000, (n,), generator=gen, dtype=torch.int64).to(dt)
        v = torch.randint(-1000, 1000, (n,), generator=gen, dtype=torch.int64).to(dt)
    p, out = p0.clone().to(device), torch.zeros(D0 * D1 * D2, dtype=dt, device=device)
    atomic_used_kernel[(1,)](p, v.to(device), out, D0=D0, D1=D1, D2=D2, B0=B0, B1=B1, B2=B2, RANK=len(case.shape),
                             OP=case.op, num_warps=case.num_warps)
    want_old = p0.reshape(bshape).expand(case.shape).reshape(-1)
    a, b = p0, v
    want_p = {"add": lambda: a + b, "max": lambda: torch.maximum(a, b), "min": lambda: torch.minimum(a, b),
              "xchg": lambda: b, "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
              "cas": lambda: torch.where(a == 1, b, a)}[case.op]()
    got_old, got_p = out.cpu(), p.cpu()
    if not torch.equal(got_old, want_old):
        bad = (got_old != want_old).nonzero().flatten()
        return f"old values: {len(bad)} of {want_old.numel()} differ, first at {bad[0].item()}"
    if not torch.equal(got_p, want_p):
        return f"memory after the atomic: {(got_p != want_p).sum().item()} of {n} slots differ"
    return ""


def run_loop(case: Case, device: str) -> str:
    gen = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))
    if case.op == "nested_while":
        step, nprog = case.extra[0], case.shape[0]
        w = torch.randint(0, 4, (nprog,), generator=gen, dtype=torch.int32)
        f = torch.randint(0, 5, (nprog,), generator=gen, dtype=torch.int32)
        c = torch.randint(-1, 9, (nprog,), generator=gen, dtype=torch.int32)
        d = torch.zeros(nprog)
        dd = d.to(device)
        nested_while_kernel[(nprog,)](dd, c.to(device), w.to(device), f.to(device), STEP=step)
        per = torch.clamp((c + step - 1) // step, min=0)
        want = (w.clamp(min=0) * f.clamp(min=0) * per).float()
        got = dd.cpu()
    elif case.op == "for_same_address":
        block, nprog = case.shape[0], case.extra[0]
        k = torch.randint(0, 6, (nprog,), generator=gen, dtype=torch.int32)
        a0 = torch.randint(-5, 5, (nprog * block,), generator=gen).float()
        ad = a0.clone().to(device)
        for_same_address_kernel[(nprog,)](ad, k.to(device), BLOCK=block)
        want = a0.clone().reshape(nprog, block)
        for p in range(nprog):
            for i in range(int(k[p])):
                want[p] = want[p] * 2 + i
        want, got = want.reshape(-1), ad.cpu()
    elif case.op == "early_exit":
        n, nprog = case.shape[0], case.extra[0]
        x = torch.randint(-5, 6, (nprog * n,), generator=gen).float()
        out = torch.zeros(2 * nprog, device=device)
        early_exit_kernel[(nprog,)](x.to(device), out, n, 3.0)
        want = torch.zeros(2 * nprog)
        for p in range(nprog):
            acc = steps = 0
            for j in range(n):
                v = float(x[p * n + j])
                if v > 3.0:
                    break
                acc, steps = acc + v, steps + 1
            want[2 * p], want[2 * p + 1] = acc, steps
        got = out.cpu()
    else:  # while_reduction
        block, nprog = case.shape[0], case.extra[0]
        x = torch.randint(-3, 12, (nprog * block,), generator=gen, dtype=torch.int32)
        out = torch.zeros_like(x).to(device)
        cnt = torch.zeros(nprog, dtype=torch.int32, device=device)
        while_reduction_kernel[(nprog,)](x.to(device), out, cnt, BLOCK=block)
        m = x.reshape(nprog, block).amax(1).clamp(min=0)
        want = torch.cat([(x.reshape(nprog, block) - m[:, None]).reshape(-1), m])
        got = torch.cat([out.cpu(), cnt.cpu()])
    if not torch.equal(got, want):
        bad = (got != want).nonzero().flatten()
        return f"{len(bad)} of {want.numel()} values differ, first at {bad[0].item()}: {got[bad[0]]} vs {want[bad[0]]}"
    return ""


def run(case: Case, device: str = "cpu") -> str:
    """Launch ``case`` on ``device`` ("cpu": the interpreter; "cuda"); "" when it matches its model."""
    if case.family in ("scans", "reductions"):
        return run_scan_reduce(case, device)
    if case.family == "atomics":
        return run_atomic(case, device)
    return run_loop(case, device)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu (the interpreter) or cuda")
    ap.add_argument("--family", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--every", type=int, default=1, help="run every k-th case")
    args = ap.parse_args(argv)
    if args.device == "cpu":
        from tritium.compiler import registry

        registry.set_active("interpreter")
    failed_any = False
    for fam in args.family:
        cs = cases(fam)[::args.every]
        fails = []
        for c in cs:
            try:
                why = run(c, args.device)
            except Exception as e:  # a crash of one case is a failure of that case
                why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if why:
                fails.append((c.id, why))
        print(f"{fam}: {len(cs)} cases, {len(cs) - len(fails)} passed, {len(fails)} failed", flush=True)
        for cid, why in fails[:10]:
            print(f"  {cid}: {why}")
        failed_any |= bool(fails)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
