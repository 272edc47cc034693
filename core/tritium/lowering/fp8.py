"""fp8 in the GPU lowerings: the conversions in software (integer operations only, for any target without the
instructions), and the rules every target shares, which convert through the target's own
:meth:`~tritium.lowering.TargetInfo.to_fp8` / :meth:`~tritium.lowering.TargetInfo.from_fp8` (instructions where
the GPU has them, this module's software otherwise).

fp8 values keep their MLIR float type in the lowering; the upstream LLVM type conversion turns them into ``i8``.
The formats (Triton's names, the MLIR types, biases, largest values and special values) are the interpreter's:
see the table in ``tritium_interpreter.runtime.fp8``.

:func:`software_to_fp8` (a float -> fp8; f64 is first rounded to f32, f16 / bf16 widened exactly) rounds to
nearest, ties to even, saturates magnitudes beyond the largest finite value (infinities included) to it with their
sign, and gives NaN the format's canonical NaN (0x7F; 0x80 for the fnuz formats, which have no -0: a negative value
rounding to zero is +0) -- what ``cvt.rn.satfinite`` does on CUDA and the interpreter models. On the f32 bits
``u`` (``a = u & 0x7FFFFFFF``, ``s = 23 - mantissa bits``):

* normal results (``a`` at least the format's smallest normal): ``r = a + (2**(s-1) - 1) + ((a >> s) & 1)``, the
  code ``(r >> s) - ((127 - bias) << mantissa bits)``;
* subnormal results: the significand ``m = (a & 0x7FFFFF) | 0x800000`` shifted right by ``151 - bias - mantissa
  bits - (a >> 23)`` (clamped to [1, 31]), rounded to nearest even on the bits shifted out;
* a code beyond the largest finite one becomes it; the sign bit is or-ed in; NaN last.

:func:`software_from_fp8` is exact: normal codes ``(mag << s) + ((127 - bias) << 23)``, subnormals normalised with
``ctlz``, the specials by code; ``f8E5M2`` to f16 is the byte as the f16's high byte.
"""
from __future__ import annotations

from mlir import ir

from ..dialects import tt
from ..errors import LoweringError
from .utils import per_register, scalar_type, select, source_error

#: MLIR type name -> (exponent bits, mantissa bits, bias, special values: "fn" / "ieee" / "fnuz")
FORMATS = {"f8E4M3FN": (4, 3, 7, "fn"), "f8E5M2": (5, 2, 15, "ieee"), "f8E4M3FNUZ": (4, 3, 8, "fnuz"),
           "f8E5M2FNUZ": (5, 2, 16, "fnuz")}


def fp8_format(t) -> tuple:
    try:
        return FORMATS[str(t)]
    except KeyError:
        raise LoweringError(f"fp8 type {t} is not supported") from None


def max_code(t) -> int:
    """The code of the largest finite value of fp8 type ``t``."""
    ebits, mbits, _, special = fp8_format(t)
    return {"fn": 0x7E, "ieee": (((1 << ebits) - 1) << mbits) - 1, "fnuz": 0x7F}[special]


def nan_code(t) -> int:
    return 0x80 if fp8_format(t)[3] == "fnuz" else 0x7F


def to_f32(ctx, v):
    """A float scalar as f32 (f64 rounded, narrower types widened exactly)."""
    f32 = ir.F32Type.get()
    t = v.type
    if isinstance(t, ir.F32Type):
        return v
    return ctx.emit("arith.truncf" if isinstance(t, ir.F64Type) else "arith.extf", [v], f32)


def from_f32(ctx, v, t):
    """An f32 scalar as float type ``t`` (f64 exactly, narrower types rounded to nearest even)."""
    if isinstance(t, ir.F32Type):
        return v
    return ctx.emit("arith.extf" if isinstance(t, ir.F64Type) else "arith.truncf", [v], t)


class _Ops:
    """Integer helpers at ``ctx``'s insertion point (i32 unless given)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.i32 = ctx.i32()

    def c(self, v, ty=None):
        return self.ctx.const(ty or self.i32, v)

    def op(self, name, a, b):
        ty = a.type
        if isinstance(b, int):
            b = self.c(b, ty)
        return self.ctx.emit(name, [a, b], ty)

    def cmp(self, pred: str, a, b):
        if isinstance(b, int):
            b = self.c(b, a.type)
        preds = {"eq": 0, "ne": 1, "slt": 2, "ult": 6, "ugt": 8}
        return self.ctx.emit("arith.cmpi", [a, b], ir.IntegerType.get_signless(1),
                             {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), preds[pred])})

    def sel(self, cond, a, b):
        ty = a.type if not isinstance(a, int) else b.type if not isinstance(b, int) else self.i32
        a = self.c(a, ty) if isinstance(a, int) else a
        b = self.c(b, ty) if isinstance(b, int) else b
        return select(self.ctx, cond, a, b)


def software_to_fp8(ctx, x, dst):
    """A float scalar ``x`` -> fp8 type ``dst``, in integer operations (see the module doc)."""
    ebits, mbits, bias, special = fp8_format(dst)
    o = _Ops(ctx)
    u = ctx.emit("arith.bitcast", [to_f32(ctx, x)], o.i32)
    a = o.op("arith.andi", u, 0x7FFFFFFF)
    s = 23 - mbits
    # normal results: round to nearest even on the s bits dropped, rebias the exponent
    lsb = o.op("arith.andi", o.op("arith.shrui", a, s), 1)
    r = o.op("arith.addi", o.op("arith.addi", a, (1 << (s - 1)) - 1), lsb)
    normal = o.op("arith.subi", o.op("arith.shrui", r, s), (127 - bias) << mbits)
    # subnormal results: the significand shifted into the format's fixed point, rounded to nearest even
    sig = o.op("arith.ori", o.op("arith.andi", a, 0x7FFFFF), 0x800000)
    sh = o.op("arith.subi", o.c(151 - bias - mbits), o.op("arith.shrui", a, 23))
    sh = o.op("arith.minsi", o.op("arith.maxsi", sh, 1), 31)
    q = o.op("arith.shrui", sig, sh)
    rem = o.op("arith.andi", sig, o.op("arith.subi", o.op("arith.shli", o.c(1), sh), 1))
    half = o.op("arith.shli", o.c(1), o.op("arith.subi", sh, 1))
    odd = o.cmp("ne", o.op("arith.andi", q, 1), 0)
    up = ctx.emit("arith.ori", [o.cmp("ugt", rem, half),
                                ctx.emit("arith.andi", [o.cmp("eq", rem, half), odd], odd.type)], odd.type)
    sub = o.op("arith.addi", q, ctx.emit("arith.extui", [up], o.i32))
    mag = o.sel(o.cmp("ult", a, (128 - bias) << 23), sub, normal)
    top = max_code(dst)
    mag = o.sel(o.cmp("ugt", mag, top), top, mag)  # saturate (infinities too)
    neg = o.cmp("slt", u, 0)
    if special == "fnuz":  # no -0
        neg = ctx.emit("arith.andi", [neg, o.cmp("ne", mag, 0)], neg.type)
    code = o.op("arith.ori", mag, o.sel(neg, 0x80, 0))
    code = o.sel(o.cmp("ugt", a, 0x7F800000), nan_code(dst), code)
    i8 = ctx.int_ty(8)
    return ctx.emit("arith.bitcast", [ctx.emit("arith.trunci", [code], i8)], dst)


def software_from_fp8(ctx, v, dst):
    """An fp8 scalar ``v`` -> float type ``dst`` (exact; see the module doc)."""
    ebits, mbits, bias, special = fp8_format(v.type)
    o = _Ops(ctx)
    byte = ctx.emit("arith.bitcast", [v], ctx.int_ty(8))
    if special == "ieee" and ebits == 5 and not tt.is_fp8(dst):  # e5m2: the high byte of an f16
        i16 = ctx.int_ty(16)
        h = ctx.emit("arith.shli", [ctx.emit("arith.extui", [byte], i16), ctx.const(i16, 8)], i16)
        f16 = ctx.emit("arith.bitcast", [h], ir.F16Type.get())
        return f16 if isinstance(dst, ir.F16Type) else from_f32(ctx, ctx.emit("arith.extf", [f16], ir.F32Type.get()),
                                                                  dst)
    c = ctx.emit("arith.extui", [byte], o.i32)
    mag = o.op("arith.andi", c, 0x7F)
    sign = o.op("arith.shli", o.op("arith.andi", c, 0x80), 24)
    s = 23 - mbits
    normal = o.op("arith.addi", o.op("arith.shli", mag, s), (127 - bias) << 23)
    # subnormal (exponent field 0): m * 2**(1 - bias - mbits), normalised (p = the leading bit of m)
    m = o.op("arith.andi", c, (1 << mbits) - 1)
    p = o.op("arith.subi", o.c(31), ctx.emit("math.ctlz", [m], o.i32))
    frac = o.op("arith.andi", o.op("arith.shli", m, o.op("arith.subi", o.c(23), p)), 0x7FFFFF)
    subnormal = o.op("arith.ori", o.op("arith.shli", o.op("arith.addi", p, 127 + 1 - bias - mbits), 23), frac)
    subnormal = o.sel(o.cmp("eq", m, 0), 0, subnormal)
    bits = o.sel(o.cmp("ult", mag, 1 << mbits), subnormal, normal)
    if special == "fn":
        bits = o.sel(o.cmp("eq", mag, 0x7F), 0x7FC00000, bits)
    elif special == "ieee":
        top = ((1 << ebits) - 1) << mbits
        bits = o.sel(o.cmp("eq", mag, top), 0x7F800000, o.sel(o.cmp("ugt", mag, top), 0x7FC00000, bits))
    bits = o.op("arith.ori", bits, sign)
    if special == "fnuz":  # 0x80 is the NaN
        bits = o.sel(o.cmp("eq", c, 0x80), 0x7FC00000, bits)
    f = ctx.emit("arith.bitcast", [bits], ir.F32Type.get())
    if tt.is_fp8(dst):
        return ctx.target.to_fp8(ctx, [f], dst)[0]
    return from_f32(ctx, f, dst)


# ------------------------------------------------------------------------------------------------- shared rules
def fp8_convert(ctx, vals, rtz: bool = False):
    """``ctx.op``'s conversion (``tt.fp_to_fp``, ``arith.extf`` / ``truncf``, int <-> float casts) when either
    side is fp8 (``[values]``, through the target's conversions), else None."""
    s, d = scalar_type(ctx.op.operands[0].type), scalar_type(ctx.op.results[0].type)
    if not (tt.is_fp8(s) or tt.is_fp8(d)):
        return None
    if tt.is_fp8(d) and s != d and rtz:
        raise source_error(ctx, f"conversion {s} -> {d} with rounding rtz is not supported (fp8 casts round to "
                                "nearest even)")
    if s == d:
        return [list(vals)]
    f32 = ir.F32Type.get()
    name = ctx.op.name
    if name in ("arith.sitofp", "arith.uitofp"):  # integers -> f32 -> fp8
        wide = [ctx.emit(name, [v], f32) for v in vals]
        return [ctx.target.to_fp8(ctx, wide, d)]
    if name in ("arith.fptosi", "arith.fptoui"):  # fp8 -> f32 -> integers
        wide = ctx.target.from_fp8(ctx, list(vals), f32)
        return [[ctx.emit(name, [w], d) for w in wide]]
    if tt.is_fp8(s):
        return [ctx.target.from_fp8(ctx, list(vals), d)]
    return [ctx.target.to_fp8(ctx, list(vals), d)]


#: float ops computed in f32 when their operands are fp8 (no GPU has fp8 arithmetic): the op on the converted
#: operands, its result rounded back, as the interpreter computes it
FP8_ARITH = frozenset({
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf", "arith.maximumf",
    "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf", "math.absf", "math.fma", "math.copysign",
    "math.floor", "math.ceil", "math.sqrt", "math.round", "math.roundeven", "math.trunc"})


def fp8_arith(ctx, operands):
    """``ctx.op`` (a float op of :data:`FP8_ARITH`) computed in f32 when its operands are fp8 (``[values]``),
    else None."""
    op = ctx.op
    if op.name not in FP8_ARITH or not op.operands:
        return None
    elem = tt.elem_of(op.operands[0].type)
    if not tt.is_fp8(elem):
        return None
    f32 = ir.F32Type.get()
    n = ctx.nregs(op.results[0].type)
    wide = [ctx.target.from_fp8(ctx, per_register(list(v), n), f32) for v in operands]
    attrs = {name: op.attributes[name] for name in op.attributes}
    is_cmp = op.name == "arith.cmpf"
    out = [ctx.emit(op.name, [w[i] for w in wide], ctx.int_ty(1) if is_cmp else f32, attrs) for i in range(n)]
    return [out if is_cmp else ctx.target.to_fp8(ctx, out, elem)]
