"""Generated multi-program kernels (issue 9.2, second family): typed expressions with Triton's promotions, loops
and branches whose trip counts differ between programs, atomics, scans and transcendental math, each with a
NumPy model.

tests/fuzz/generated.py covers one program over a 2-D block with fp32 / int32 arithmetic; this family launches
``cdiv(n, BLOCK)`` programs over a 1-D region of any length and draws, per case:

* the dtypes of the two loaded inputs ``a`` and ``b`` from int8 / int16 / int32 / int64 / fp16 / bf16 / fp32 /
  fp64, and an int32 ``k``; a gathered ``g = B[(offs + (k & 15)) % n]`` (a pointer computed from loaded data);
  the masked-off lanes get ``other`` values;
* ``e``: an expression tree over ``a b k g``, the program id and Python constants -- ``+ - *``, ``& | ^ << >>``,
  C ``//`` / ``%`` (by a divisor in 1..8), comparisons in ``where``, ``maximum`` / ``minimum``, ``abs``, negation,
  casts (float -> int through a clamp: out-of-range conversions are undefined) -- typed by Triton 3.6's rules
  (a scalar of a lower or equal kind does not take part; fp64 > fp32 > fp16 > bf16; fp16 with bf16 is fp16; int
  widths by rank);
* ``u``: a transcendental of a float expression (``exp exp2 log log2 sqrt sin cos``, ``/``) -- compared within
  the tolerance :data:`ULPS` states, since the GPU's are approximate as Triton's are (``ex2.approx``,
  ``div.full.f32``);
* a loop -- ``for j in range(lo, pid % P + hi, step)`` (no iteration on some programs) or a ``while`` over a trip
  count loaded per program -- accumulating an expression of ``j`` under a branch on ``j``, optionally with a nested
  loop whose trip count is the outer index;
* a branch on the program id or on a reduction of ``k``, choosing between two atomics (``add max min and or xor``
  on int32, ``add`` of small integers / ``max`` / ``min`` on fp32) into an 8-slot table shared by every program;
* a scan (``cumsum`` / ``cumprod``, forward or reversed) of an integer expression.

The model computes every float operation in float64 and rounds once to the operation's type (innocuous double
rounding: 53 >= 2 p + 2 for every narrower type), integers in their width with wrap-around.  Results are
bit-exact but for ``u`` (:data:`ULPS`) and float atomic adds (exact: small integers).

``make_case(draw)`` takes a draw source: :class:`Seeded` (``random.Random``; the GPU's fixed-seed cases) or
:func:`strategy` (hypothesis, which shrinks the choices).
"""
from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field

import numpy as np

INTS = ("i8", "i16", "i32", "i64")
FLOATS = ("f16", "bf16", "f32", "f64")
TL = {"i1": "tl.int1", "i8": "tl.int8", "i16": "tl.int16", "i32": "tl.int32", "i64": "tl.int64",
      "f16": "tl.float16", "bf16": "tl.bfloat16", "f32": "tl.float32", "f64": "tl.float64"}
NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
      "bf16": np.float32, "f32": np.float32, "f64": np.float64}
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
# float formats: (precision in bits, frexp exponent of the smallest normal, largest finite)
FMT = {"f16": (11, -13, 65504.0), "bf16": (8, -125, float.fromhex("0x1.fep127")),
       "f32": (24, -125, float.fromhex("0x1.fffffep127")), "f64": (53, -1021, float.fromhex("0x1.fffffffffffffp1023"))}
# transcendental tolerance, in units in the last place of the result's type (exp: plus |x|, the error of
# rounding x * log2(e) before ex2.approx); fp16 / bf16 are computed in fp32 and rounded (one more ulp)
ULPS = {"exp": 3, "exp2": 3, "log": 3, "log2": 3, "sqrt": 2, "sin": 3, "cos": 3, "div": 3}
CMPS = ("<", ">", "<=", ">=", "==", "!=")


def kind(dt: str) -> int:
    return 0 if dt == "i1" else 2 if dt in INTS else 3


def promote(a: str, a_scalar: bool, b: str, b_scalar: bool, divmod: bool = False) -> str:
    """Triton 3.6's computation type of a binary operation (semantic.computation_type_impl), for these dtypes."""
    if a_scalar != b_scalar:
        s, t = (a, b) if a_scalar else (b, a)
        if kind(s) <= kind(t):
            return "f32" if divmod and t in ("f16", "bf16") else t
    if "f64" in (a, b):
        return "f64"
    if "f32" in (a, b):
        return "f32"
    if "f16" in (a, b):
        return "f32" if divmod else "f16"
    if a == b == "bf16":
        return "f32" if divmod else "bf16"
    if "bf16" in (a, b):
        return "f32"
    a, b = ("i32" if x == "i1" else x for x in (a, b))
    return a if BITS[a] > BITS[b] else b


# ---------------------------------------------------------------------------------------------- numbers
def round_to(x, dt: str) -> np.ndarray:
    """float64 values rounded to nearest-even in ``dt`` (overflow to inf, gradual underflow), as NP[dt]."""
    x = np.asarray(x, np.float64)
    if dt == "f64":
        return x.copy()
    p, emin, big = FMT[dt]
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)
        q = np.maximum(e, emin) - p
        r = np.ldexp(np.rint(np.ldexp(x, -q)), q)
        r = np.where(np.abs(r) > big, np.copysign(np.inf, x), r)
        r = np.where(np.isfinite(x), r, x)
    return r.astype(NP[dt])


def int_to_float(x, dt: str) -> np.ndarray:
    """Integers converted to ``dt`` with one rounding (exact integers, not through float64 above 2**53)."""
    x = np.asarray(x).astype(np.int64)
    out = x.astype(np.float64)
    p = FMT[dt][0]
    for i in np.flatnonzero(np.abs(out.ravel()) >= 2.0 ** 53):  # python ints: round to p bits, then exact
        v = int(x.ravel()[i])
        s = abs(v).bit_length() - p
        q, r = divmod(abs(v), 1 << s)
        half = 1 << (s - 1)
        q += r > half or (r == half and q & 1)
        out.ravel()[i] = math.copysign(float(q << s), v)
    return round_to(out, dt)


def convert(x, src: str, dst: str) -> np.ndarray:
    """``x`` (values of ``src``) as ``dst``, as a cast in a kernel computes it (ints wrap, floats round once)."""
    x = np.asarray(x)
    if src == dst:
        return x.astype(NP[dst])
    if dst == "i1":
        return x != 0
    if src == "i1":
        x, src = x.astype(np.int64), "i64"
    if dst in INTS:
        if src in FLOATS:  # only of clamped values (the generator clamps): truncation toward zero
            x = np.trunc(x.astype(np.float64))
        return x.astype(np.int64).astype(NP[dst])
    if src in INTS:
        return int_to_float(x, dst)
    return round_to(x.astype(np.float64), dst)


def total_key(x) -> np.ndarray:
    """fp32 bits as a signed key of the total order (-NaN < -inf < .. < -0 < +0 < .. < +inf < +NaN)."""
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, i ^ 0x7FFFFFFF, i)


# ---------------------------------------------------------------------------------------------- expressions
# A node: ("leaf", name) | ("const", value) | ("bin", op, x, y) | ("where", cmp, p, q, x, y) | ("mm", fn, x, y)
#         | ("abs", x) | ("neg", x) | ("cast", x, dt) | ("clampcast", x, dt)
INT_CONSTS = (1, -3, 7, 2, 5)
FLOAT_CONSTS = (0.5, -2.0, 3.0, 0.25, 1.5)


def type_of(node, env: dict) -> tuple:
    """(dtype, is_0d) of ``node``; ``env`` maps leaf names to (dtype, is_0d).

    Only a Python number is a "scalar" of the promotion rules (in operators and ``where``): the program id and a
    loop index are 0-d tensors and promote like any tensor.  ``maximum`` / ``minimum`` make tensors of numbers
    too, and compute bf16 as fp32 (Triton 3.6's core.maximum)."""
    tag = node[0]
    if tag == "leaf":
        return env[node[1]]
    if tag == "const":
        return ("i32" if isinstance(node[1], int) else "f32"), True
    if tag == "bin":
        (a, za), (b, zb) = type_of(node[2], env), type_of(node[3], env)
        return promote(a, _num(node[2]), b, _num(node[3]), node[1] in ("//", "%", "/")), za and zb
    if tag == "where":
        (a, za), (b, zb) = type_of(node[4], env), type_of(node[5], env)
        (_, zp), (_, zq) = type_of(node[2], env), type_of(node[3], env)
        return promote(a, _num(node[4]), b, _num(node[5])), za and zb and zp and zq
    if tag == "mm":
        (a, za), (b, zb) = type_of(node[2], env), type_of(node[3], env)
        return promote(_mm_type(a), False, _mm_type(b), False), za and zb
    if tag in ("abs", "neg"):
        return type_of(node[1], env)
    if tag == "fn":
        return type_of(node[2], env)
    return node[2], type_of(node[1], env)[1]  # cast / clampcast


def _num(node) -> bool:
    return node[0] == "const"


def _mm_type(dt: str) -> str:
    return "f32" if dt == "bf16" else dt


def render(node) -> str:
    tag = node[0]
    if tag == "leaf":
        return node[1]
    if tag == "const":
        return repr(node[1])
    if tag == "bin":
        return f"({render(node[2])} {node[1]} {render(node[3])})"
    if tag == "fn":
        return f"tl.{node[1]}({render(node[2])})"
    if tag == "where":
        return f"tl.where({render(node[2])} {node[1]} {render(node[3])}, {render(node[4])}, {render(node[5])})"
    if tag == "mm":
        return f"tl.{node[1]}({render(node[2])}, {render(node[3])})"
    if tag == "abs":
        return f"tl.abs({render(node[1])})"
    if tag == "neg":
        return f"(-{render(node[1])})"
    if tag == "cast":
        return f"{render(node[1])}.to({TL[node[2]]})"
    return f"tl.minimum(tl.maximum({render(node[1])}, -100.0), 100.0).to({TL[node[2]]})"


def evaluate(node, env: dict, values: dict) -> np.ndarray:
    """The model of ``node``: NumPy values of its type (bf16 as float32 values)."""
    tag = node[0]
    if tag == "leaf":
        return values[node[1]]
    if tag == "const":
        return np.asarray(node[1], NP[type_of(node, env)[0]])
    if tag in ("bin", "mm"):
        op = node[1]
        (a, _), (b, _) = type_of(node[2], env), type_of(node[3], env)
        ct = type_of(node, env)[0]
        x = convert(evaluate(node[2], env, values), a, ct)
        y = convert(evaluate(node[3], env, values), b, ct)
        return _binary(op, x, y, ct)
    if tag == "where":
        _, p, q, x, y = node[1:]
        tp, tq = type_of(p, env)[0], type_of(q, env)[0]
        cmp_t = promote(tp, _num(p), tq, _num(q))
        pv = convert(evaluate(p, env, values), tp, cmp_t).astype(np.float64 if cmp_t in FLOATS else np.int64)
        qv = convert(evaluate(q, env, values), tq, cmp_t).astype(np.float64 if cmp_t in FLOATS else np.int64)
        with np.errstate(all="ignore"):
            c = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal, "==": np.equal,
                 "!=": np.not_equal}[node[1]](pv, qv)
        ct = type_of(node, env)[0]
        xv = convert(evaluate(x, env, values), type_of(x, env)[0], ct)
        yv = convert(evaluate(y, env, values), type_of(y, env)[0], ct)
        return np.where(c, xv, yv).astype(NP[ct])
    if tag == "abs":
        v = evaluate(node[1], env, values)
        with np.errstate(all="ignore"):
            return np.abs(v).astype(v.dtype)
    if tag == "neg":
        v = evaluate(node[1], env, values)
        with np.errstate(all="ignore"):
            return np.negative(v).astype(v.dtype)
    if tag == "fn":  # in float64, rounded once (the kernel's are within ULPS of this)
        dt = type_of(node, env)[0]
        with np.errstate(all="ignore"):
            return round_to(getattr(np, node[1])(evaluate(node[2], env, values).astype(np.float64)), dt)
    src = type_of(node[1], env)[0]
    v = evaluate(node[1], env, values)
    if tag == "clampcast":  # maxnum / minnum (NaN -> the bound), then the cast
        v = np.fmin(np.fmax(v.astype(np.float64), round_to(-100.0, src)), round_to(100.0, src))
        src = "f64"
    return convert(v, src, node[2])


def _binary(op: str, x, y, ct: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if ct in FLOATS:
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            if op in ("maximum", "minimum"):
                return (np.fmax if op == "maximum" else np.fmin)(x, y).astype(NP[ct])
            r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](x64, y64)
            return round_to(r, ct)
        if op == "maximum":
            return np.maximum(x, y)
        if op == "minimum":
            return np.minimum(x, y)
        x64, y64 = x.astype(np.int64), y.astype(np.int64)
        if op in ("//", "%"):
            q = np.trunc(x64.astype(np.float64) / y64)  # |values| < 2**53 where these appear: exact
            q = np.where(np.abs(x64) < 2 ** 52, q, x64 // y64 + ((x64 % y64 != 0) & ((x64 < 0) != (y64 < 0))))
            q = q.astype(np.int64)
            r = q if op == "//" else x64 - q * y64
        elif op in ("<<", ">>"):
            r = (x64 << y64) if op == "<<" else (x64 >> y64)
        else:
            r = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and, "|": np.bitwise_or,
                 "^": np.bitwise_xor}[op](x64, y64)
        return r.astype(NP[ct])


class Gen:
    """Random typed expressions; every operation has a tensor operand (two constants would be folded by Python
    with Python's semantics, not the kernel's)."""

    def __init__(self, draw, env: dict, leaves: tuple):
        self.d, self.env, self.leaves = draw, env, leaves

    def leaf(self):
        return ("leaf", self.d.choice(self.leaves))

    def const(self, want_float: bool):
        return ("const", self.d.choice(FLOAT_CONSTS if want_float else INT_CONSTS))

    def expr(self, depth: int):
        if depth <= 0 or self.d.randint(0, 3) == 0:
            return self.leaf()
        k = self.d.randint(0, 9)
        x = self.expr(depth - 1)
        tx = type_of(x, self.env)[0]
        y = self.const(tx in FLOATS) if self.d.randint(0, 2) == 0 else self.expr(depth - 1)
        ty = type_of(y, self.env)[0]
        ints = tx in INTS and ty in INTS
        if k <= 2:
            return ("bin", "+-*"[k], x, y)
        if k == 3 and ints:
            op = self.d.choice(["&", "|", "^", "<<", ">>", "//", "%"])
            if op in ("<<", ">>"):
                return ("bin", op, x, ("const", self.d.randint(0, 4)))
            if op in ("//", "%"):  # a divisor in 1..8 of y's own type
                return ("bin", op, x, ("bin", "+", ("bin", "&", y if y[0] != "const" else self.leaf_int(), ("const", 7)),
                                       ("const", 1)))
            return ("bin", op, x, y)
        if k <= 4:
            return ("where", self.d.choice(CMPS), x, y, self.expr(depth - 1), self.expr(depth - 1))
        if k == 5:
            return ("mm", self.d.choice(["maximum", "minimum"]), x, y)
        if k == 6:
            return ("abs", x) if x[0] != "const" else x
        if k == 7:
            return ("neg", x)
        dst = self.d.choice(INTS + FLOATS)
        if tx in FLOATS and dst in INTS:
            return ("clampcast", x, dst)
        return ("cast", x, dst)

    def leaf_int(self):
        names = [n for n in self.leaves if self.env[n][0] in INTS]
        return ("leaf", self.d.choice(names))


# ---------------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    n: int
    BLOCK: int
    da: str
    db: str
    e: tuple
    math: tuple          # (fn, node)
    loop: dict
    branch: dict
    scan: dict
    seed: int
    other: dict = field(default_factory=dict)

    @property
    def grid(self) -> int:
        return -(-self.n // self.BLOCK)


BASE_ENV = {"a": None, "b": None, "k": ("i32", False), "g": None, "pid": ("i32", True)}


def env_of(case_or_types) -> dict:
    da, db = case_or_types
    return {**BASE_ENV, "a": (da, False), "b": (db, False), "g": (db, False)}


class Seeded:
    """The draw source of the fixed-seed cases."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def choice(self, seq):
        return self.r.choice(list(seq))

    def randint(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)


def make_case(d, seed: int) -> Case:
    da, db = d.choice(INTS + FLOATS), d.choice(INTS + FLOATS)
    BLOCK = d.choice([16, 32, 64, 128])
    n = d.randint(1, 5 * BLOCK)
    env = env_of((da, db))
    g = Gen(d, env, ("a", "b", "k", "g", "pid"))
    e = g.expr(3)
    fl = [n_ for n_ in ("a", "b", "g") if env[n_][0] in FLOATS]
    arg = g.expr(2)
    if type_of(arg, env)[0] not in FLOATS:
        arg = ("cast", arg, d.choice(FLOATS))
    fn = d.choice(list(ULPS))
    den = ("leaf", d.choice(fl)) if fl else ("cast", ("leaf", "k"), "f32")
    math_ = (fn, math_node(fn, arg, den, type_of(arg, env)[0]))
    # the loop: its body sees j (int32 scalar) too
    lenv = {**env, "j": ("i32", True)}
    lg = Gen(d, lenv, ("a", "b", "k", "j", "pid"))
    acc = d.choice(["i32", "i64", "f32", "f16"])
    loop = {"kind": d.choice(["for", "for", "while"]), "lo": d.randint(-2, 2), "hi": d.randint(-1, 4),
            "P": d.randint(1, 4), "step": d.choice([1, 1, 2, 3]), "acc": acc, "then": lg.expr(2),
            "else": lg.expr(2), "jmod": d.randint(2, 3), "nested": d.randint(0, 2) == 0}
    if acc == "f16":  # sums of fp16 grow past 65504 quickly: keep the terms small
        loop["then"] = ("clampcast", loop["then"], "i8") if type_of(loop["then"], lenv)[0] in FLOATS else loop["then"]
    ops = ["add", "max", "min", "and", "or", "xor", "fadd", "fmax", "fmin"]
    branch = {"cond": d.choice(["pid", "max", "sum"]), "c": d.randint(-3, 3), "ops": (d.choice(ops), d.choice(ops)),
              "val": as_int(g.expr(2), env), "fval": g.expr(2), "extra": d.randint(0, 2) == 0}
    scan = {"op": d.choice(["cumsum", "cumsum", "cumprod"]), "reverse": d.randint(0, 1) == 1,
            "dt": d.choice(["i32", "i64", "f32"]), "x": as_int(g.expr(2), env)}
    other = {"a": d.choice([0, 3, -1]), "b": d.choice([0, 2, -5]), "k": d.choice([0, 1, -7])}
    return Case(n, BLOCK, da, db, e, math_, loop, branch, scan, seed, other)


def math_node(fn: str, x, den, dt: str):
    """The transcendental ``fn`` of ``x`` where it is defined and finite: exp / exp2 of ``x`` clamped to +-30 (+-10
    for fp16; the clamp is fp32 for fp16 / bf16 -- ``maximum`` makes it so), log of ``|x| + 0.5``, sqrt of
    ``|x|``, ``x / (|den| + 1)``."""
    if fn in ("exp", "exp2"):
        lim = 10.0 if dt == "f16" else 30.0
        return ("fn", fn, ("mm", "minimum", ("mm", "maximum", x, ("const", -lim)), ("const", lim)))
    if fn in ("log", "log2"):
        return ("fn", fn, ("bin", "+", ("abs", x), ("const", 0.5)))
    if fn == "sqrt":
        return ("fn", fn, ("abs", x))
    if fn == "div":
        return ("bin", "/", x, ("bin", "+", ("abs", den), ("const", 1.0)))
    return ("fn", fn, x)


def as_int(node, env):
    """``node``, converted (through the clamp) when it is a float: an integer-valued expression."""
    return ("clampcast", node, "i32") if type_of(node, env)[0] in FLOATS else node


def cases(count: int, seed: int) -> list:
    return [make_case(Seeded(seed * 100003 + i), seed * 100003 + i) for i in range(count)]


# ---------------------------------------------------------------------------------------------- the kernel
_TEMPLATE = '''import tritium as triton
import tritium.language as tl


@triton.jit
def kernel(A, B, K, T, E, U, L, H, FH, S, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other={oa})
    b = tl.load(B + offs, mask=m, other={ob})
    k = tl.load(K + offs, mask=m, other={ok})
    g = tl.load(B + (offs + (k & 15)) % n, mask=m, other={ob})
    e = {e}
    tl.store(E + offs, e, mask=m)
    u = {u}
    tl.store(U + offs, u, mask=m)
    acc = tl.zeros([BLOCK], dtype={acc})
{loop}
    tl.store(L + offs, acc, mask=m)
    if {cond}:
{atomic0}
    else:
{atomic1}
    s = tl.{scan}({sx}, axis=0, reverse={reverse})
    tl.store(S + offs, s, mask=m)
'''

def _bcast(node, env) -> str:
    """``node`` rendered as a [BLOCK] tensor (a scalar expression broadcast)."""
    dt, scalar = type_of(node, env)
    return f"tl.broadcast_to({render(node)}, [BLOCK])" if scalar else render(node)




_ATOMIC = {"add": "atomic_add", "max": "atomic_max", "min": "atomic_min", "and": "atomic_and", "or": "atomic_or",
           "xor": "atomic_xor", "fadd": "atomic_add", "fmax": "atomic_max", "fmin": "atomic_min"}


def _render_atomic(case: Case, half: int) -> str:
    """The atomic of the branch's ``half``: slots ``8 * half + (k & 7)`` (one operation per slot: order-free)."""
    op = case.branch["ops"][half]
    br = case.branch
    env = env_of((case.da, case.db))
    mask = "m & (k > 0)" if br["extra"] else "m"
    if op.startswith("f"):
        if op == "fadd":  # small integers: exact in any order
            val = f"(({_bcast(br['val'], env)}).to(tl.int32) & 15).to(tl.float32)"
        else:
            val = f"({_bcast(br['fval'], env)}).to(tl.float32)"
            val = f"tl.where({val} == {val}, {val}, 0.0)"
        return f"        tl.{_ATOMIC[op]}(FH + {8 * half} + (k & 7), {val}, mask={mask})"
    return f"        tl.{_ATOMIC[op]}(H + {8 * half} + (k & 7), ({_bcast(br['val'], env)}).to(tl.int32), mask={mask})"


def _render_loop(case: Case) -> str:
    lp = case.loop
    lenv = {**env_of((case.da, case.db)), "j": ("i32", True)}
    acc = TL[lp["acc"]]
    body_then = f"acc = acc + ({_bcast(lp['then'], lenv)}).to({acc})"
    body_else = f"acc = acc - ({_bcast(lp['else'], lenv)}).to({acc})"
    inner = [f"if j % {lp['jmod']} == 0:", f"    {body_then}", "else:", f"    {body_else}"]
    if lp["nested"]:
        inner += ["for j2 in range(0, j % 3):", "    acc = acc + (j2 + 1).to(" + acc + ")"]
    if lp["kind"] == "for":
        head = [f"for j in range({lp['lo']}, pid % {lp['P']} + {lp['hi']}, {lp['step']}):"]
        body = ["    " + s for s in inner]
    else:
        head = [f"j = {lp['lo']}", "while j < tl.load(T + pid):"]
        body = ["    " + s for s in inner] + [f"    j += {lp['step']}"]
    return "\n".join("    " + s for s in head + body)


def _cond(case: Case) -> str:
    br = case.branch
    return {"pid": f"pid % 2 == {abs(br['c']) % 2}", "max": f"tl.max(k) > {br['c']}",
            "sum": f"tl.sum(k) > {br['c'] * 4}"}[br["cond"]]


def source(case: Case) -> str:
    env = env_of((case.da, case.db))
    sc = case.scan
    return _TEMPLATE.format(
        oa=case.other["a"], ob=case.other["b"], ok=case.other["k"], e=_bcast(case.e, env), u=_bcast(case.math[1], env),
        acc=TL[case.loop["acc"]], loop=_render_loop(case), cond=_cond(case),
        atomic0=_render_atomic(case, 0), atomic1=_render_atomic(case, 1),
        scan=sc["op"], sx=_scan_input(sc, env), reverse=sc["reverse"])


def _scan_input(sc: dict, env: dict) -> str:
    """Integers scan as they are (wrap-around is associative); fp32 scans small integers (sums below 2**24) or
    powers of two (products exact up to overflow): exact in any order."""
    x = _bcast(sc["x"], env)
    if sc["dt"] != "f32":
        return f"({x}).to({TL[sc['dt']]})"
    if sc["op"] == "cumsum":
        return f"(({x}).to(tl.int32) & 255).to(tl.float32)"
    return f"((({x}).to(tl.int32) & 1) + 1).to(tl.float32)"


# ---------------------------------------------------------------------------------------------- data and model
def inputs(case: Case) -> dict:
    rng = np.random.default_rng(case.seed)
    n = case.n

    def draw(dt):
        if dt in INTS:
            return rng.integers(-40, 40, n).astype(NP[dt])
        v = rng.standard_normal(n) * 3
        whole = rng.random(n) < 0.2  # integers (ties in comparisons, exact casts) and zeros
        v[whole] = np.round(v[whole])
        v[rng.random(n) < 0.1] = 0.0
        return round_to(v, dt)

    trips = rng.integers(-1, 5, case.grid).astype(np.int32)
    return {"a": draw(case.da), "b": draw(case.db), "k": rng.integers(-20, 20, n).astype(np.int32), "t": trips}


def _reduce_cond(case: Case, k: np.ndarray, pid: int) -> bool:
    br = case.branch
    if br["cond"] == "pid":
        return pid % 2 == abs(br["c"]) % 2
    if br["cond"] == "max":
        return int(k.max()) > br["c"]
    return int(k.astype(np.int64).sum()) > br["c"] * 4  # int32 sum of |k| < 2**31: no wrap


def model(case: Case, ins: dict) -> dict:
    env = env_of((case.da, case.db))
    lenv = {**env, "j": ("i32", True)}
    B, n = case.BLOCK, case.n
    out = {"e": [], "u": [], "l": [], "s": []}
    hist = {i: [] for i in range(16)}   # atomic contributions per slot: (op, value)
    fhist = {i: [] for i in range(16)}
    for pid in range(case.grid):
        offs = pid * B + np.arange(B)
        m = offs < n
        idx = np.minimum(offs, n - 1)
        a = np.where(m, ins["a"][idx], convert(case.other["a"], "i32", case.da)).astype(NP[case.da])
        b = np.where(m, ins["b"][idx], convert(case.other["b"], "i32", case.db)).astype(NP[case.db])
        k = np.where(m, ins["k"][idx], np.int32(case.other["k"])).astype(np.int32)
        gi = (offs + (k & 15)) % n
        g = np.where(m, ins["b"][gi], convert(case.other["b"], "i32", case.db)).astype(NP[case.db])
        vals = {"a": a, "b": b, "k": k, "g": g, "pid": np.asarray(pid, np.int32)}
        bc = lambda v: np.broadcast_to(v, (B,)).copy()  # noqa: E731
        out["e"].append(bc(evaluate(case.e, env, vals))[m])
        out["u"].append(bc(evaluate(case.math[1], env, vals))[m])
        out["l"].append(_model_loop(case, lenv, vals, ins["t"][pid], bc)[m])
        half = 0 if _reduce_cond(case, k, pid) else 1
        op = case.branch["ops"][half]
        am = m & (k > 0) if case.branch["extra"] else m
        slot = (k & 7) + 8 * half
        if op.startswith("f"):
            if op == "fadd":
                v = convert(bc(evaluate(case.branch["val"], env, vals)), type_of(case.branch["val"], env)[0], "i32")
                v = (v & 15).astype(np.float32)
            else:  # NaN as 0: the sign of a NaN the hardware makes differs between CPUs and GPUs, and orders it
                v = convert(bc(evaluate(case.branch["fval"], env, vals)), type_of(case.branch["fval"], env)[0], "f32")
                v = np.where(np.isnan(v), np.float32(0), v)
            for s, x in zip(slot[am], v[am]):
                fhist[int(s)].append((op, x))
        else:
            v = convert(bc(evaluate(case.branch["val"], env, vals)), type_of(case.branch["val"], env)[0], "i32")
            for s, x in zip(slot[am], v[am]):
                hist[int(s)].append((op, int(x)))
        sc = case.scan
        x = bc(evaluate(sc["x"], env, vals))
        if sc["dt"] == "f32":
            x = convert(x, type_of(sc["x"], env)[0], "i32")
            x = ((x & 255) if sc["op"] == "cumsum" else ((x & 1) + 1)).astype(np.float32)
        else:
            x = convert(x, type_of(sc["x"], env)[0], sc["dt"])
        out["s"].append(_scan(x, sc["op"], sc["reverse"], sc["dt"])[m])
    result = {name: np.concatenate(parts) for name, parts in out.items()}
    result["h"] = np.array([_fold_int(hist[i]) for i in range(16)], np.int32)
    result["fh"] = np.array([_fold_float(fhist[i]) for i in range(16)], np.float32)
    return result


H0, FH0 = 1000, 0.25


def _fold_int(contribs) -> int:
    v = H0
    for op, x in contribs:
        v = {"add": lambda p, q: p + q, "max": max, "min": min, "and": lambda p, q: p & q,
             "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q}[op](v, x)
        v = (v + 2 ** 31) % 2 ** 32 - 2 ** 31
    return v


def _fold_float(contribs) -> float:
    """Order-free folds only: adds of small integers to FH0 (exact), max / min in the total order of the bits."""
    v = np.float32(FH0)
    for op, x in contribs:
        if op == "fadd":
            v = np.float32(v + x)
        elif op == "fmax":
            v = x if total_key(x) > total_key(v) else v
        else:
            v = x if total_key(x) < total_key(v) else v
    return v


def _scan(x, op, reverse, dt):
    x = x[::-1] if reverse else x
    with np.errstate(all="ignore"):
        if dt in FLOATS:  # exact (see _scan_input)
            r = (np.cumsum if op == "cumsum" else np.cumprod)(x.astype(np.float64)).astype(np.float32)
        else:
            r = (np.cumsum if op == "cumsum" else np.cumprod)(x.astype(np.int64)).astype(NP[dt])
    return r[::-1] if reverse else r


def math_type(case: Case) -> str:
    return type_of(case.math[1], env_of((case.da, case.db)))[0]


def _model_loop(case, lenv, vals, trips, bc):
    lp = case.loop
    acc = np.zeros(case.BLOCK, NP[lp["acc"]])
    if lp["kind"] == "for":
        js = range(lp["lo"], int(vals["pid"]) % lp["P"] + lp["hi"], lp["step"])
    else:
        js = range(lp["lo"], max(lp["lo"], int(trips)), lp["step"])
    for j in js:
        v = {**vals, "j": np.asarray(j, np.int32)}
        if j % lp["jmod"] == 0:  # (C remainder of a small int: j >= -2, jmod 2 or 3 -> compare with 0 only)
            term = convert(bc(evaluate(lp["then"], lenv, v)), type_of(lp["then"], lenv)[0], lp["acc"])
            acc = _binary("+", acc, term, lp["acc"])
        else:
            term = convert(bc(evaluate(lp["else"], lenv, v)), type_of(lp["else"], lenv)[0], lp["acc"])
            acc = _binary("-", acc, term, lp["acc"])
        if lp["nested"]:
            for j2 in range(0, int(math.fmod(j, 3))):
                acc = _binary("+", acc, convert(np.full(case.BLOCK, j2 + 1), "i32", lp["acc"]), lp["acc"])
    return acc


# ---------------------------------------------------------------------------------------------- running
def load_kernel(case: Case, tmpdir: str):
    from tests.fuzz.generated import load_source

    return load_source(source(case), f"prog_{case.seed}", tmpdir)


def out_types(case: Case) -> dict:
    env = env_of((case.da, case.db))
    return {"e": type_of(case.e, env)[0], "u": math_type(case), "l": case.loop["acc"], "s": case.scan["dt"],
            "h": "i32", "fh": "f32"}


def run_case(case: Case, kernel, device: str = "cpu", **options) -> dict:
    """Launch ``kernel`` on torch tensors on ``device`` (the interpreter takes CPU tensors); the outputs as
    NumPy (bf16 as float32 values)."""
    import torch

    tdt = {"i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
           "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}

    def put(arr, dt):
        return torch.from_numpy(np.ascontiguousarray(arr)).to(device=device, dtype=tdt[dt])

    ins = inputs(case)
    types = out_types(case)
    outs = {name: torch.zeros(case.n, dtype=tdt[types[name]], device=device) for name in ("e", "u", "l", "s")}
    outs["h"] = torch.full((16,), H0, dtype=torch.int32, device=device)
    outs["fh"] = torch.full((16,), FH0, dtype=torch.float32, device=device)
    kernel[(case.grid,)](put(ins["a"], case.da), put(ins["b"], case.db), put(ins["k"], "i32"), put(ins["t"], "i32"),
                         outs["e"], outs["u"], outs["l"], outs["h"], outs["fh"], outs["s"], case.n, BLOCK=case.BLOCK,
                         **options)
    return {name: (t.float() if t.dtype == torch.bfloat16 else t).cpu().numpy() for name, t in outs.items()}


def ulp(v, dt: str) -> np.ndarray:
    p, emin, _ = FMT[dt]
    _, e = np.frexp(np.asarray(v, np.float64))
    return np.ldexp(1.0, np.maximum(e, emin) - p)


def _same(got, want) -> np.ndarray:
    """Equal values (+0 == -0), NaN with NaN (whatever its sign and payload)."""
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.kind == "f" or w.dtype.kind == "f":
        g, w = g.astype(np.float64), w.astype(np.float64)
        return (g == w) | (np.isnan(g) & np.isnan(w))
    return g == w


def compare(case: Case, got: dict, want: dict) -> str:
    """'' when ``got`` matches ``want``: exact but for ``u`` (ULPS of its type; exp: plus |x|)."""
    for name in ("e", "l", "s", "h", "fh"):
        bad = ~_same(got[name], want[name])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return f"{name} differs at {i}: got {got[name][i]!r}, want {want[name][i]!r} ({int(bad.sum())} elements)"
    fn = case.math[0]
    dt = math_type(case)
    g, w = got["u"].astype(np.float64), want["u"].astype(np.float64)
    tol = ULPS[fn] + (dt in ("f16", "bf16"))
    if fn in ("exp", "exp2"):
        with np.errstate(all="ignore"):
            arg = np.log(np.abs(w)) if fn == "exp" else np.log2(np.abs(w))
        tol = tol + np.nan_to_num(np.abs(arg), nan=0.0, posinf=0.0, neginf=0.0)
    with np.errstate(all="ignore"):
        ok = _same(g, w) | (np.abs(g - w) <= tol * ulp(w, dt))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        return f"u ({fn}, {dt}) differs at {i}: got {g[i]!r}, want {w[i]!r} ({int((~ok).sum())} elements)"
    return ""


# ---------------------------------------------------------------------------------------------- hypothesis
class _Drawn:
    """The draw source over hypothesis' ``data``: every choice is a draw it can shrink (toward the first)."""

    def __init__(self, data):
        self.data = data

    def choice(self, seq):
        from hypothesis import strategies as st

        return self.data.draw(st.sampled_from(list(seq)))

    def randint(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st

        return self.data.draw(st.integers(lo, hi))


def strategy():
    """Hypothesis strategy of cases."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        data = draw(st.data())
        return make_case(_Drawn(data), draw(st.integers(0, 2 ** 31 - 1)))

    return build()


# ---------------------------------------------------------------------------------------------- campaigns
def main(argv=None) -> int:
    """``python -m tests.fuzz.programs --cases N --seed S [--device cuda] [--json out.json]``: run N seeded cases
    against the model on the current backend (``--device cuda``: the GPU; ``enable_fp_fusion=False``), print each
    mismatch with its kernel and the totals.  Under TRITIUM_COMPILE_ONLY=1 the kernels are only compiled (into
    the cache a GPU run then reads)."""
    import argparse
    import json
    import tempfile
    import time

    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.programs")
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    compile_only = os.environ.get("TRITIUM_COMPILE_ONLY") == "1"
    options = {"enable_fp_fusion": False} if args.device != "cpu" or compile_only else {}
    d = tempfile.mkdtemp(prefix="tritium-prog-")
    t0, bad, errors = time.time(), [], []
    for case in cases(args.cases, args.seed):
        try:
            got = run_case(case, load_kernel(case, d), device=args.device, **options)
        except Exception as e:  # a compile or launch error is a finding too
            errors.append((case.seed, f"{type(e).__name__}: {str(e)[:400]}"))
            print(f"=== case {case.seed}: {errors[-1][1]}\n{source(case)}", flush=True)
            continue
        if compile_only:
            continue
        why = compare(case, got, model(case, inputs(case)))
        if why:
            bad.append((case.seed, why))
            print(f"=== case {case.seed}: {why}\n{case.da} {case.db} n={case.n} BLOCK={case.BLOCK}\n{source(case)}",
                  flush=True)
    summary = {"cases": args.cases, "seed": args.seed, "device": args.device, "compile_only": compile_only,
               "mismatches": len(bad), "errors": len(errors), "seconds": round(time.time() - t0, 1),
               "details": bad + errors}
    print(json.dumps({k: v for k, v in summary.items() if k != "details"}))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1)
    return 1 if bad or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
