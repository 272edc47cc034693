"""Generated kernels (issue 9.2): random elementwise expressions over 2-D blocks, with a NumPy model of the same
expression.

A case is a kernel that loads two fp32 inputs and two int32 inputs over an ``M x N`` region (any sizes, masked to
power-of-two blocks, ``other`` values on the masked-off part), computes an expression tree -- ``+ - *``, ``where``
on comparisons, ``maximum`` / ``minimum``, ``abs``, casts, integer ``//`` and ``%`` (C semantics: truncation toward
zero, the remainder takes the dividend's sign) by a divisor kept away from zero, shifts by small amounts -- stores
the float and the integer result, and optionally reduces the float one along an axis (``sum`` / ``max`` / ``min``) or
scans the integer one (``cumsum``).
:func:`model` computes the same thing in NumPy; the float parts are bit-exact except for sums (their order differs:
a relative tolerance).

:func:`source` renders a case as a kernel module; :func:`run_case` writes, imports and launches it on the current
backend (the interpreter in tests/fuzz/test_generated.py; the GPU against the interpreter in
tests/gpu/test_generated_gpu.py, with the same cases from the same seed).
"""
from __future__ import annotations

import importlib.util
import os
import random
import tempfile
from dataclasses import dataclass

import numpy as np

FLOAT_LEAVES = ("x0", "x1")
INT_LEAVES = ("i0", "i1")


@dataclass
class Case:
    M: int
    N: int
    BM: int
    BN: int
    fexpr: str
    iexpr: str
    reduce: str  # "", "sum0", "max1", ..., "cums0" / "cums1" (a cumsum of the integer result along the axis)
    seed: int


def _fexpr(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        leaf = rng.choice(FLOAT_LEAVES + ("c",))
        return f"{rng.choice([0.5, -2.0, 3.0, 0.25])}" if leaf == "c" else leaf
    k = rng.randrange(9)
    a, b = _fexpr(rng, depth - 1), _fexpr(rng, depth - 1)
    if k < 3:
        return f"({a} {'+-*'[k]} {b})"
    if k == 3:
        cmp = rng.choice(["<", ">", "<=", ">=", "==", "!="])
        return f"tl.where({a} {cmp} {b}, {a}, {b})"
    if k == 4:
        return f"tl.maximum({a}, {b})"
    if k == 5:
        return f"tl.minimum({a}, {b})"
    if k == 6:
        return f"tl.abs({a})"
    if k == 7:  # (a tensor even when the integer expression is a constant: constants have no .to)
        return f"(i0 * 0 + {_iexpr(rng, depth - 1)}).to(tl.float32)"
    return f"tl.where({_iexpr(rng, depth - 1)} > 0, {a}, -{b})"


def _iexpr(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        leaf = rng.choice(INT_LEAVES + ("c",))
        return str(rng.choice([1, -3, 7, 2])) if leaf == "c" else leaf
    k = rng.randrange(9)
    a, b = _iexpr(rng, depth - 1), _iexpr(rng, depth - 1)
    if k < 3:
        return f"({a} {'+-*'[k]} {b})"
    if k == 3:
        return f"({a} // _nz({b}))"
    if k == 4:
        return f"({a} % _nz({b}))"
    if k == 5:
        return f"tl.where({a} < {b}, {a}, {b})"
    if k == 6:
        return f"({a} >> {rng.randrange(0, 5)})"
    if k == 7:
        return f"({a} & {b})"
    return f"tl.maximum({a}, {b})"


def make_case(rng: random.Random, seed: int) -> Case:
    M, N = rng.randint(1, 70), rng.randint(1, 70)
    BM = 1 << max(0, (M - 1).bit_length())
    BN = 1 << max(0, (N - 1).bit_length())
    BM, BN = max(BM, 2), max(BN, 2)
    red = rng.choice(["", "", "sum0", "sum1", "max0", "max1", "min0", "min1", "cums0", "cums1"])
    return Case(M, N, BM, BN, _fexpr(rng, 3), _iexpr(rng, 3), red, seed)


def cases(n: int, seed: int) -> list:
    rng = random.Random(seed)
    return [make_case(rng, seed * 100000 + i) for i in range(n)]


_TEMPLATE = '''import tritium as triton
import tritium.language as tl


@triton.jit
def _nz(d):
    return tl.where(d == 0, 1, d)


@triton.jit
def kernel(X0, X1, I0, I1, FOUT, IOUT, ROUT, SOUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    m = (rm < M) & (rn < N)
    offs = rm * N + rn
    x0 = tl.load(X0 + offs, mask=m, other=1.5)
    x1 = tl.load(X1 + offs, mask=m, other=-0.5)
    i0 = tl.load(I0 + offs, mask=m, other=3)
    i1 = tl.load(I1 + offs, mask=m, other=-2)
    f = ({fexpr}) + tl.zeros([BM, BN], dtype=tl.float32)
    i = ({iexpr}) + tl.zeros([BM, BN], dtype=tl.int32)
    tl.store(FOUT + offs, f, mask=m)
    tl.store(IOUT + offs, i, mask=m)
{reduce}'''

_REDUCE = {
    "0": '''    r = tl.{op}(tl.where(m, f, {neutral}), axis=0)
    tl.store(ROUT + tl.arange(0, BN), r, mask=tl.arange(0, BN) < N)
''',
    "1": '''    r = tl.{op}(tl.where(m, f, {neutral}), axis=1)
    tl.store(ROUT + tl.arange(0, BM), r, mask=tl.arange(0, BM) < M)
''',
}
_NEUTRAL = {"sum": "0.0", "max": "-float('inf')", "min": "float('inf')"}
# an int32 cumsum along the axis (wrap-around is associative: exact); the masked-off rows / columns come after
_SCAN = '''    s = tl.cumsum(i, axis={axis})
    tl.store(SOUT + offs, s, mask=m)
'''


def source(case: Case) -> str:
    red = ""
    if case.reduce.startswith("cums"):
        red = _SCAN.format(axis=case.reduce[-1])
    elif case.reduce:
        op, axis = case.reduce[:-1], case.reduce[-1]
        red = _REDUCE[axis].format(op=op, neutral=_NEUTRAL[op])
    return _TEMPLATE.format(fexpr=case.fexpr, iexpr=case.iexpr, reduce=red)


def inputs(case: Case) -> dict:
    rng = np.random.default_rng(case.seed)
    shape = (case.M, case.N)
    x0 = rng.standard_normal(shape).astype(np.float32) * 4
    x1 = rng.standard_normal(shape).astype(np.float32) * 4
    x1[rng.random(shape) < 0.2] = 0.0  # zeros (and ties in comparisons)
    return {"x0": x0, "x1": x1, "i0": rng.integers(-50, 50, shape).astype(np.int32),
            "i1": rng.integers(-9, 10, shape).astype(np.int32)}


# ---------------------------------------------------------------------------------------------- the model
def _nz(d):
    return np.where(d == 0, np.int32(1), d).astype(np.int32)


def _cdiv(a, b):
    a, b = np.asarray(a, np.int32), np.asarray(b, np.int32)
    q = np.trunc(a.astype(np.float64) / b.astype(np.float64))
    return q.astype(np.int64).astype(np.int32)


def _cmod(a, b):
    a, b = np.asarray(a, np.int32), np.asarray(b, np.int32)
    return (a.astype(np.int64) - _cdiv(a, b).astype(np.int64) * b.astype(np.int64)).astype(np.int32)


def _weak(x):
    """A scalar result as a Python number, which NumPy combines like the kernel combines a constant with a tensor
    (keeping the tensor's type); arrays as they are."""
    return x.item() if np.ndim(x) == 0 and not isinstance(x, (int, float)) else x


class _TL:
    float32 = np.float32

    @staticmethod
    def where(c, a, b):
        return _weak(np.where(c, a, b))

    @staticmethod
    def maximum(a, b):
        return _weak(np.maximum(a, b))

    @staticmethod
    def minimum(a, b):
        return _weak(np.minimum(a, b))

    @staticmethod
    def abs(a):
        return _weak(np.abs(a))


class _ToNumPy(__import__("ast").NodeTransformer):
    """The kernel expression as NumPy: C division / remainder, int literals as int32, casts, tl -> _TL."""

    def visit_BinOp(self, node):
        import ast

        self.generic_visit(node)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            fn = "_cdiv" if isinstance(node.op, ast.FloorDiv) else "_cmod"
            return ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], [])
        return node

    def visit_Constant(self, node):
        import ast

        if type(node.value) is int:
            return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "int32", ast.Load()), [node], [])
        return node

    def visit_Call(self, node):
        import ast

        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "to":  # (e).to(tl.float32)
            return ast.Call(ast.Name("_tof", ast.Load()), [f.value], [])
        return node

    def visit_Attribute(self, node):
        import ast

        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "tl":
            return ast.Attribute(ast.Name("_TL", ast.Load()), node.attr, ast.Load())
        return node


def _np_expr(expr: str) -> str:
    import ast

    tree = _ToNumPy().visit(ast.parse(expr, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def _tof(x):
    return np.asarray(x, dtype=np.int32).astype(np.float32)


def model(case: Case, ins: dict) -> dict:
    env = {k: v for k, v in ins.items()}
    env.update({"np": np, "_TL": _TL, "_nz": _nz, "_cdiv": _cdiv, "_cmod": _cmod, "_tof": _tof})
    with np.errstate(all="ignore"):
        f = np.asarray(eval(_np_expr(case.fexpr), env), dtype=np.float64)  # noqa: S307 - our own expression
        i = np.asarray(eval(_np_expr(case.iexpr), env))
    f = (np.broadcast_to(f, (case.M, case.N)).astype(np.float32))
    i = (np.broadcast_to(i, (case.M, case.N)).astype(np.int64).astype(np.int32))
    out = {"f": f, "i": i}
    if case.reduce.startswith("cums"):
        out["s"] = np.cumsum(i.astype(np.int64), axis=int(case.reduce[-1])).astype(np.int32)
    elif case.reduce:
        op, axis = case.reduce[:-1], int(case.reduce[-1])
        out["r"] = {"sum": np.sum, "max": np.max, "min": np.min}[op](f.astype(np.float64) if op == "sum" else f,
                                                                     axis=axis).astype(np.float32)
    return out


def load_source(text: str, name: str, tmpdir: str):
    """The ``kernel`` of the module ``text``, written to ``tmpdir/name.py`` and imported (the JIT reads sources
    from files)."""
    path = os.path.join(tmpdir, f"{name}.py")
    with open(path, "w") as fh:
        fh.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel


def load_kernel(case: Case, tmpdir: str):
    return load_source(source(case), f"gen_{case.seed}", tmpdir)


def run_case(case: Case, kernel, to_device=lambda a: a, from_device=lambda a: a, zeros=np.zeros, **options) -> dict:
    ins = inputs(case)
    args = [to_device(ins[k]) for k in ("x0", "x1", "i0", "i1")]
    fout = zeros((case.M, case.N), np.float32)
    iout = zeros((case.M, case.N), np.int32)
    rout = zeros((max(case.BM, case.BN),), np.float32)
    sout = zeros((case.M, case.N), np.int32)
    kernel[(1,)](*args, fout, iout, rout, sout, case.M, case.N, BM=case.BM, BN=case.BN, **options)
    out = {"f": from_device(fout), "i": from_device(iout)}
    if case.reduce.startswith("cums"):
        out["s"] = from_device(sout)
    elif case.reduce:
        n = case.N if case.reduce.endswith("0") else case.M
        out["r"] = from_device(rout)[:n]
    return out


def compare(case: Case, got: dict, want: dict) -> str:
    """'' when ``got`` matches ``want`` (bit-exact but for sums: rtol 1e-5 of the sum of magnitudes)."""
    if not np.array_equal(got["i"], want["i"]):
        return f"int result differs at {np.argwhere(got['i'] != want['i'])[:3].tolist()}"
    if not np.array_equal(got["f"].view(np.uint32), want["f"].view(np.uint32)) and not np.array_equal(
            got["f"], want["f"], equal_nan=True):
        return f"float result differs at {np.argwhere(~np.isclose(got['f'], want['f'], 0, 0, True))[:3].tolist()}"
    if case.reduce.startswith("cums"):
        if not np.array_equal(got["s"], want["s"]):
            return f"{case.reduce} differs at {np.argwhere(got['s'] != want['s'])[:3].tolist()}"
    elif case.reduce:
        if case.reduce.startswith("sum"):
            scale = np.abs(want["f"]).sum(axis=int(case.reduce[-1])).astype(np.float32) + 1
            if not np.all(np.abs(got["r"] - want["r"]) <= 1e-5 * scale) and not np.array_equal(
                    got["r"], want["r"], equal_nan=True):
                return "sum differs"
        elif not np.array_equal(got["r"], want["r"], equal_nan=True):
            return f"{case.reduce} differs"
    return ""


def tmpdir() -> str:
    return tempfile.mkdtemp(prefix="tritium-gen-")


# ---------------------------------------------------------------------------------------------- hypothesis
def strategies():
    """Hypothesis strategies for the same cases (expression trees shrink node by node): ``cases_st``."""
    from hypothesis import strategies as st

    ileaf = st.sampled_from(["i0", "i1", "1", "-3", "7", "2"])

    def iext(c):
        return st.one_of(
            st.tuples(c, st.sampled_from("+-*&"), c).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(c, st.sampled_from(["//", "%"]), c).map(lambda t: f"({t[0]} {t[1]} _nz({t[2]}))"),
            st.tuples(c, st.integers(0, 4)).map(lambda t: f"({t[0]} >> {t[1]})"),
            st.tuples(c, c).map(lambda t: f"tl.where({t[0]} < {t[1]}, {t[0]}, {t[1]})"),
            st.tuples(c, c).map(lambda t: f"tl.maximum({t[0]}, {t[1]})"))

    iexprs = st.recursive(ileaf, iext, max_leaves=8)
    fleaf = st.sampled_from(["x0", "x1", "0.5", "-2.0", "3.0", "0.25"])

    def fext(c):
        return st.one_of(
            st.tuples(c, st.sampled_from("+-*"), c).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(c, st.sampled_from(["<", ">", "<=", ">=", "==", "!="]), c).map(
                lambda t: f"tl.where({t[0]} {t[1]} {t[2]}, {t[0]}, {t[2]})"),
            st.tuples(c, c).map(lambda t: f"tl.maximum({t[0]}, {t[1]})"),
            st.tuples(c, c).map(lambda t: f"tl.minimum({t[0]}, {t[1]})"),
            c.map(lambda a: f"tl.abs({a})"),
            iexprs.map(lambda a: f"(i0 * 0 + {a}).to(tl.float32)"),
            st.tuples(iexprs, c, c).map(lambda t: f"tl.where({t[0]} > 0, {t[1]}, -{t[2]})"))

    fexprs = st.recursive(fleaf, fext, max_leaves=8)

    def build(M, N, f, i, red, seed):
        BM = max(2, 1 << max(0, (M - 1).bit_length()))
        BN = max(2, 1 << max(0, (N - 1).bit_length()))
        return Case(M, N, BM, BN, f, i, red, seed)

    return st.builds(build, st.integers(1, 70), st.integers(1, 70), fexprs, iexprs,
                     st.sampled_from(["", "sum0", "sum1", "max0", "max1", "min0", "min1", "cums0", "cums1"]),
                     st.integers(0, 2 ** 31 - 1))
