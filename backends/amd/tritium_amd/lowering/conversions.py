"""Float conversions on AMD GPUs.

* ``tt.fp_to_fp`` with ``rounding = rtz`` (f32 -> f16 / bf16, f64 -> f32, ...): the round-to-nearest-even result
  ``h``, stepped one unit toward zero when it lies farther from zero than the source (``|ext(h)| > |x|``: its bits
  minus one, which also turns an overflow to infinity into the largest finite value); NaN stays NaN.
* fp8 conversions (the shared rules of :mod:`tritium.lowering.fp8`, through :class:`AMDTargetInfo`'s ``to_fp8`` /
  ``from_fp8`` = :func:`to_fp8` / :func:`from_fp8` here), as Triton's AMD backend converts:

  - the fnuz formats (``fp8e4b8`` / ``fp8e5b16``) on CDNA3 (gfx94x): the instructions, two values each:
    ``v_cvt_pk_{fp8,bf8}_f32`` (``llvm.amdgcn.cvt.pk.{fp8,bf8}.f32``, round to nearest even; f16 / bf16 / f64
    through f32) and ``v_cvt_pk_f32_{fp8,bf8}`` (``llvm.amdgcn.cvt.pk.f32.{fp8,bf8}``, exact);
  - the OCP formats (``fp8e4nv`` / ``fp8e5``) on CDNA4 (gfx950): ``v_cvt_scalef32_pk_{fp8,bf8}_f32`` /
    ``v_cvt_scalef32_pk_f32_{fp8,bf8}`` with scale 1.0 (``llvm.amdgcn.cvt.scalef32.pk.*``);
  - everything else (OCP on gfx942 -- its fp8 instructions are the fnuz formats' --, fnuz on gfx950, other archs):
    the core's software conversion (integer operations: round to nearest even, saturating, NaN to the canonical
    NaN; e5m2 -> f16 is the byte as the high byte), as Triton's gfx942 code computes it.

  fp8 -> fp8 goes through f32; casts between fp8 and integers through f32.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import RoundingMode
from tritium.lowering import Rules, TargetInfo
from tritium.lowering.fp8 import fp8_convert, from_f32, to_f32
from tritium.lowering.utils import elementwise, scalar_type, select, source_error

from .dot import call_intrinsic

RULES = Rules()


def _fnuz(t) -> bool:
    return str(t) in ("f8E4M3FNUZ", "f8E5M2FNUZ")


def _native(ctx, t) -> str:
    """The instruction family that converts fp8 type ``t`` on the target: "pk" (CDNA3 fnuz), "scalef32" (CDNA4
    OCP), "" (software)."""
    arch = str(getattr(ctx.target, "arch", ""))
    if arch.startswith("gfx94") and _fnuz(t):
        return "pk"
    if arch.startswith("gfx95") and str(t) in ("f8E4M3FN", "f8E5M2"):
        return "scalef32"
    return ""


def _kind(t) -> str:
    return "fp8" if "E4M3" in str(t) else "bf8"


def _i1(ctx, v: bool):
    i1 = ctx.int_ty(1)
    return ctx.emit("llvm.mlir.constant", [], i1, {"value": ir.IntegerAttr.get(i1, int(v))})


def to_fp8(ctx, vals, dst) -> list:
    """Float scalars (fp8 too) -> fp8 ``dst``: the instructions in pairs where the target has them, else the
    core's software conversion."""
    family = _native(ctx, dst)
    if not family:
        return TargetInfo.to_fp8(ctx.target, ctx, vals, dst)
    f32, i8, i32 = ir.F32Type.get(), ctx.int_ty(8), ctx.i32()
    xs = [from_fp8(ctx, [v], f32)[0] if tt.is_fp8(v.type) else to_f32(ctx, v) for v in vals]
    out = []
    for i in range(0, len(xs), 2):
        pair = xs[i:i + 2]
        hi = pair[1] if len(pair) > 1 else ctx.const(f32, 0.0)
        if family == "pk":
            w = call_intrinsic(ctx, f"llvm.amdgcn.cvt.pk.{_kind(dst)}.f32", [pair[0], hi, ctx.c32(0), _i1(ctx, False)],
                               i32)
        else:
            v2i16 = ir.VectorType.get([2], ctx.int_ty(16))
            old = ctx.emit("llvm.mlir.zero", [], v2i16)
            w = call_intrinsic(ctx, f"llvm.amdgcn.cvt.scalef32.pk.{_kind(dst)}.f32",
                               [old, pair[0], hi, ctx.const(f32, 1.0), _i1(ctx, False)], v2i16)
            w = ctx.emit("llvm.bitcast", [w], i32)
        for j in range(len(pair)):
            byte = ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [w, ctx.c32(8 * j)], i32) if j else w], i8)
            out.append(ctx.emit("arith.bitcast", [byte], dst))
    return out


def from_fp8(ctx, vals, dst) -> list:
    """fp8 scalars -> float ``dst`` (fp8 too): the instructions in pairs where the target has them, else the
    core's software conversion."""
    if not vals:
        return []
    src = vals[0].type
    family = _native(ctx, src)
    if not family:
        return TargetInfo.from_fp8(ctx.target, ctx, vals, dst)
    f32, i32 = ir.F32Type.get(), ctx.i32()
    v2f32 = ir.VectorType.get([2], f32)
    out = []
    for i in range(0, len(vals), 2):
        pair = vals[i:i + 2]
        bs = [ctx.emit("arith.extui", [ctx.emit("arith.bitcast", [v], ctx.int_ty(8))], i32) for v in pair]
        packed = bs[0]
        if len(bs) > 1:
            packed = ctx.emit("arith.ori", [packed, ctx.emit("arith.shli", [bs[1], ctx.c32(8)], i32)], i32)
        if family == "pk":
            w = call_intrinsic(ctx, f"llvm.amdgcn.cvt.pk.f32.{_kind(src)}", [packed, _i1(ctx, False)], v2f32)
        else:
            w = call_intrinsic(ctx, f"llvm.amdgcn.cvt.scalef32.pk.f32.{_kind(src)}",
                               [packed, ctx.const(f32, 1.0), _i1(ctx, False)], v2f32)
        for j in range(len(pair)):
            f = ctx.emit("llvm.extractelement", [w, ctx.c32(j)], f32)
            out.append(to_fp8(ctx, [f], dst)[0] if tt.is_fp8(dst) else from_f32(ctx, f, dst))
    return out


def _rtz(ctx, x, d):
    """``x`` (float) -> the narrower float type ``d``, rounded toward zero."""
    s = x.type
    h = ctx.emit("arith.truncf", [x], d)
    back = ctx.emit("arith.extf", [h], s)
    ax = ctx.emit("math.absf", [x], s)
    aback = ctx.emit("math.absf", [back], s)
    farther = ctx.emit("arith.cmpf", [aback, ax], ir.IntegerType.get_signless(1),
                       {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 2)})  # ogt: false for NaN
    ity = ctx.int_ty(d.width)
    bits = ctx.emit("arith.bitcast", [h], ity)
    less = ctx.emit("arith.subi", [bits, ctx.const(ity, 1)], ity)
    return ctx.emit("arith.bitcast", [select(ctx, farther, less, bits)], d)


@RULES.register("tt.fp_to_fp")
def _fp_to_fp(ctx, src, *, rounding=RoundingMode.RTNE):
    r = fp8_convert(ctx, src, rtz=rounding == RoundingMode.RTZ)
    if r is not None:
        return r
    s, d = scalar_type(ctx.op.operands[0].type), scalar_type(ctx.op.results[0].type)
    if s.width == d.width:
        raise source_error(ctx, f"fp_to_fp between {s} and {d} is not supported")
    if rounding == RoundingMode.RTZ and d.width < s.width:
        return [[_rtz(ctx, v, d) for v in src]]
    return elementwise(ctx, "arith.extf" if d.width > s.width else "arith.truncf", [src])


@RULES.register("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")
def _casts(ctx, src, **params):
    r = fp8_convert(ctx, src)
    if r is not None:
        return r
    return elementwise(ctx, ctx.op.name, [src], {n: ctx.op.attributes[n] for n in ctx.op.attributes})

