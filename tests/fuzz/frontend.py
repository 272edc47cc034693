"""Frontend fuzzing (issue 9.3): valid kernels with one thing changed -- a name, a constant, an operator, a tl
function, a dtype, a statement dropped or two swapped, an argument dropped or added -- compiled in a worker
process; only tritium's documented errors (``tritium.errors.TritiumError`` and its subclasses: CompilationError at
the kernel's line, SemanticError, ...) may come out, never another exception type, a hang or a dead process.

``python -m tests.fuzz.frontend --cases N --seed S --target interpreter|cuda:90 [--json out.json]`` runs a
campaign and prints the outcome counts; :func:`campaign` is what tests/fuzz/test_frontend_fuzz.py calls with a
budget CI affords.  A worker compiles the cases one after the other and reports each on a line; a case that kills
the worker or outlives its timeout is reported as such and the next worker goes on after it.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
from typing import Optional

# ------------------------------------------------------------------------------------------------ seed kernels
SEEDS = {
    "add": ('''
def kernel(X, Y, OUT, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    y = tl.load(Y + offs, mask=mask, other=0.0)
    tl.store(OUT + offs, x + y * 2.0, mask=mask)
''', {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32", "n": "i32"}, {"BLOCK": 128}),
    "softmax": ('''
def kernel(OUT, X, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(OUT + row * stride + cols, num / den, mask=cols < n_cols)
''', {"OUT": "*fp32", "X": "*fp32", "stride": "i32", "n_cols": "i32"}, {"BLOCK": 256}),
    "layernorm": ('''
def kernel(X, Y, W, B, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        a = tl.load(X + row * stride + cols, mask=cols < N, other=0.).to(tl.float32)
        acc += a
    mean = tl.sum(acc, axis=0) / N
    var = 0.0
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        a = tl.load(X + row * stride + cols, mask=cols < N, other=0.).to(tl.float32)
        d = tl.where(cols < N, a - mean, 0.)
        var += tl.sum(d * d, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
        tl.store(Y + row * stride + cols, (x - mean) * rstd * w + b, mask=mask)
''', {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "stride": "i32", "N": "i32", "eps": "fp32"},
        {"BLOCK": 512}),
    "matmul": ('''
def kernel(A, B, C, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * sam + rk[None, :]
    b_ptrs = B + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * sbk
    c = acc.to(tl.float16)
    tl.store(C + rm[:, None] * scm + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))
''', {"A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sbk": "i32",
        "scm": "i32"}, {"BM": 64, "BN": 64, "BK": 32}),
    "control": ('''
def kernel(X, OUT, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.load(X + pid)
    steps = 0
    while v != 1 and steps < n:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    offs = tl.arange(0, BLOCK)
    hist = tl.histogram(offs % 8, 8)
    tl.atomic_add(OUT + pid, steps)
    tl.atomic_max(OUT + n + (offs % 8), hist.to(tl.int32))
''', {"X": "*i32", "OUT": "*i32", "n": "i32"}, {"BLOCK": 64}),
    "reduce2d": ('''
def kernel(X, OUT, M, N, sm, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * sm + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0)
    s = tl.sum(x, axis=1)
    m = tl.argmax(x, axis=0)
    c = tl.cumsum(x.to(tl.int64), axis=1)
    tl.store(OUT + rm, s.to(tl.float32) + tl.max(c, axis=1).to(tl.float32), mask=rm < M)
    tl.store(OUT + BM + rn, m.to(tl.float32), mask=rn < N)
''', {"X": "*i32", "OUT": "*fp32", "M": "i32", "N": "i32", "sm": "i32"}, {"BM": 32, "BN": 16}),
}

_TL_FUNCS = ["sum", "max", "min", "exp", "sqrt", "log", "abs", "arange", "zeros", "load", "store", "where", "dot",
             "cdiv", "program_id", "num_programs", "cumsum", "argmax", "reshape", "trans", "broadcast_to",
             "atomic_add", "maximum", "full", "sigmoid", "view", "expand_dims", "histogram", "fma", "umulhi"]
_DTYPES = ["float16", "float32", "bfloat16", "int1", "int8", "int32", "int64", "uint32", "float8e4nv", "float64"]
_CONSTS = [0, 1, -1, 2, 3, 7, 16, 1024, 2 ** 31, -2 ** 31 - 1, 2 ** 63, 0.5, -0.0, 1e300, "'x'", "None", "True",
           "float('nan')", "(1, 2)", "[0]"]
_OPS = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitAnd,
        ast.BitOr, ast.BitXor, ast.MatMult]
_CMPS = [ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.In]


class _Mutator:
    """One random change to a kernel's body (never its signature)."""

    KINDS = ("name", "const", "binop", "cmp", "tlfunc", "dtype", "drop_stmt", "swap_stmts", "drop_arg", "add_arg",
             "keyword", "subscript")

    def __init__(self, rng: random.Random):
        self.rng = rng

    def mutate(self, src: str) -> tuple:
        tree = ast.parse(textwrap.dedent(src))
        fn = tree.body[0]
        kinds = list(self.KINDS)
        self.rng.shuffle(kinds)
        for kind in kinds:
            if getattr(self, "_" + kind)(fn):
                return ast.unparse(tree), kind
        return ast.unparse(tree), "none"

    def _nodes(self, fn, cls):
        return [n for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, cls)]

    def _pick(self, xs):
        return self.rng.choice(xs) if xs else None

    def _name(self, fn):
        names = [n for n in self._nodes(fn, ast.Name) if isinstance(n.ctx, ast.Load) and n.id != "tl"]
        pool = sorted({n.id for n in names} | {a.arg for a in fn.args.args} | {"undefined_name", "range", "tl"})
        n = self._pick(names)
        if n is None:
            return False
        n.id = self.rng.choice(pool)
        return True

    def _const(self, fn):
        c = self._pick(self._nodes(fn, ast.Constant))
        if c is None:
            return False
        new = ast.parse(str(self.rng.choice(_CONSTS)), mode="eval").body
        c.__class__, c.__dict__ = new.__class__, dict(new.__dict__)
        return True

    def _binop(self, fn):
        b = self._pick(self._nodes(fn, ast.BinOp) + self._nodes(fn, ast.AugAssign))
        if b is None:
            return False
        b.op = self.rng.choice(_OPS)()
        return True

    def _cmp(self, fn):
        c = self._pick(self._nodes(fn, ast.Compare))
        if c is None:
            return False
        c.ops = [self.rng.choice(_CMPS)() for _ in c.ops]
        return True

    def _tl_attrs(self, fn):
        return [a for a in self._nodes(fn, ast.Attribute) if isinstance(a.value, ast.Name) and a.value.id == "tl"]

    def _tlfunc(self, fn):
        a = self._pick([a for a in self._tl_attrs(fn) if a.attr in _TL_FUNCS])
        if a is None:
            return False
        a.attr = self.rng.choice(_TL_FUNCS)
        return True

    def _dtype(self, fn):
        a = self._pick([a for a in self._tl_attrs(fn) if a.attr in _DTYPES])
        if a is None:
            return False
        a.attr = self.rng.choice(_DTYPES)
        return True

    def _bodies(self, fn):
        out = [fn.body]
        for n in ast.walk(fn):
            for f in ("body", "orelse"):
                b = getattr(n, f, None)
                if n is not fn and isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                    out.append(b)
        return out

    def _drop_stmt(self, fn):
        body = self._pick([b for b in self._bodies(fn) if len(b) > 1])
        if body is None:
            return False
        body.pop(self.rng.randrange(len(body)))
        return True

    def _swap_stmts(self, fn):
        body = self._pick([b for b in self._bodies(fn) if len(b) > 1])
        if body is None:
            return False
        i, j = self.rng.sample(range(len(body)), 2)
        body[i], body[j] = body[j], body[i]
        return True

    def _calls(self, fn):
        return self._nodes(fn, ast.Call)

    def _drop_arg(self, fn):
        c = self._pick([c for c in self._calls(fn) if c.args])
        if c is None:
            return False
        c.args.pop(self.rng.randrange(len(c.args)))
        return True

    def _add_arg(self, fn):
        c = self._pick(self._calls(fn))
        if c is None:
            return False
        c.args.append(ast.parse(str(self.rng.choice(_CONSTS)), mode="eval").body)
        return True

    def _keyword(self, fn):
        c = self._pick(self._calls(fn))
        if c is None:
            return False
        c.keywords.append(ast.keyword(arg=self.rng.choice(["axis", "mask", "other", "dtype", "bogus", "eviction_policy",
                                                            "cache_modifier", "keep_dims", "sem"]),
                                      value=ast.parse(str(self.rng.choice(_CONSTS)), mode="eval").body))
        return True

    def _subscript(self, fn):
        s = self._pick(self._nodes(fn, ast.Subscript))
        if s is None:
            return False
        s.slice = ast.parse(self.rng.choice(["None", ":, None", "None, :, None", "0", "1:", "::2"]),
                            mode="eval").body if False else ast.parse(
            f"x[{self.rng.choice(['None', ':, None', 'None, :, None', '0', '1:', '::2'])}]", mode="eval").body.slice
        return True


def make_cases(n: int, seed: int) -> list:
    """``n`` mutated kernels: ``(seed kernel, mutation kind, source)``, the same for the same seed."""
    rng = random.Random(seed)
    names = sorted(SEEDS)
    out = []
    while len(out) < n:
        name = rng.choice(names)
        src, kind = _Mutator(rng).mutate(SEEDS[name][0])
        if rng.random() < 0.3:  # now and then a second change
            src, kind2 = _Mutator(rng).mutate(src)
            kind += "+" + kind2
        try:
            compile(src, "<case>", "exec")
        except SyntaxError:
            continue  # Python's own error, not the compiler's
        out.append((name, kind, src))
    return out


# ------------------------------------------------------------------------------------------------ the worker
WORKER = r'''
import importlib.util, json, os, signal, sys, traceback
sys.path.insert(0, {root!r})
from tritium.compiler import ASTSource, compile
from tritium.errors import TritiumError
from tests.fuzz.frontend import SEEDS

class Hang(Exception):
    pass

def on_alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, on_alarm)
cases = json.load(open({cases!r}))
target, start, tmp = {target!r}, {start}, {tmp!r}
for i in range(start, len(cases)):
    name, kind, src = cases[i]
    print(json.dumps({{"i": i, "start": True}}), flush=True)
    path = os.path.join(tmp, f"case_{{i}}.py")
    with open(path, "w") as f:
        f.write("import tritium as triton\nimport tritium.language as tl\n\n@triton.jit\n" + src + "\n")
    outcome = "ok"
    signal.alarm({timeout})
    try:
        spec = importlib.util.spec_from_file_location(f"fuzz_case_{{i}}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sig, ce = SEEDS[name][1], SEEDS[name][2]
        compile(ASTSource(mod.kernel, sig, constexprs=ce), target=target, until={until!r}, use_cache=False)
    except Hang:
        outcome = "hang"
    except TritiumError as e:
        msg = str(e)
        internal = "internal error" in msg
        outcome = ("internal:" if internal else "error:") + type(e).__name__ + ("" if not internal else ": " + msg.splitlines()[0][:300])
        if not internal:
            outcome += "|" + msg.replace("\n", " ")[:300]
    except Exception as e:  # an escape: what the fuzzer looks for
        outcome = "escape:" + type(e).__name__ + ": " + str(e).splitlines()[0][:200] if str(e) else "escape:" + type(e).__name__
        outcome += " @ " + traceback.extract_tb(e.__traceback__)[-1].filename.split("/")[-1] + ":" + str(
            traceback.extract_tb(e.__traceback__)[-1].lineno)
    finally:
        signal.alarm(0)
    print(json.dumps({{"i": i, "outcome": outcome}}), flush=True)
'''


def campaign(n: int, seed: int, target: str = "interpreter", timeout: int = 60, until: Optional[str] = None) -> list:
    """Run ``n`` cases; returns ``[(seed kernel, kind, outcome, source)]``.  Outcomes: ``ok``, ``error:<Type>``
    (a documented error), ``escape:<Type>: message @ file:line``, ``hang``, ``crash:<returncode>``."""
    cases = make_cases(n, seed)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cases.json")
        with open(path, "w") as f:
            json.dump(cases, f)
        start = 0
        while start < len(cases):
            code = WORKER.format(root=root, cases=path, target=target, start=start, tmp=tmp, timeout=timeout,
                                 until=until or ("npy" if target == "interpreter" else "cubin"))
            p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env={**os.environ, "TRITIUM_DISABLE_CACHE": "1"})
            current = None
            try:
                out, err = p.communicate(timeout=timeout * (len(cases) - start) + 120)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            for line in out.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("start"):
                    current = rec["i"]
                elif "outcome" in rec:
                    results[rec["i"]] = rec["outcome"]
                    current = None
            if current is not None and current not in results:  # the worker died (or hung) inside this case
                results[current] = f"crash:{p.returncode}" if p.returncode not in (None, -9) else "hang"
                start = current + 1
            elif len(results) < len(cases) - 0 and max(results, default=-1) + 1 < len(cases):
                start = max(results, default=-1) + 1
                if p.returncode not in (0, None):  # died between cases: should not happen
                    results[start] = f"crash:{p.returncode}"
                    start += 1
            else:
                break
    return [(c[0], c[1], results.get(i, "missing"), c[2]) for i, c in enumerate(cases)]


def summary(results: list) -> dict:
    out = {}
    for _, _, outcome, _ in results:
        k = outcome.split("|")[0] if outcome.startswith("error:") else outcome.split(":")[0]
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", default="interpreter")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    res = campaign(args.cases, args.seed, args.target)
    print(json.dumps(summary(res), indent=1))
    for name, kind, outcome, src in res:
        if not (outcome == "ok" or outcome.startswith("error:")):  # escapes, internal errors, hangs, crashes
            print(f"--- {name} [{kind}] -> {outcome}\n{src}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
