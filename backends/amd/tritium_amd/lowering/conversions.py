"""Float conversions on AMD GPUs.

* ``tt.fp_to_fp`` with ``rounding = rtz`` (f32 -> f16 / bf16, f64 -> f32, ...): the round-to-nearest-even result
  ``h``, stepped one unit toward zero when it lies farther from zero than the source (``|ext(h)| > |x|``: its bits
  minus one, which also turns an overflow to infinity into the largest finite value); NaN stays NaN.
* fp8 conversions (``fp8e4b8`` / ``fp8e5b16`` on CDNA3, ``fp8e4nv`` / ``fp8e5`` on CDNA4) are not implemented yet: a
  :class:`~tritium.errors.CompilationError` at the cast's line (also for ``arith`` casts between fp8 and integers).
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import RoundingMode
from tritium.lowering import Rules
from tritium.lowering.utils import elementwise, scalar_type, select, source_error

RULES = Rules()


def _reject_fp8(ctx) -> None:
    s, d = scalar_type(ctx.op.operands[0].type), scalar_type(ctx.op.results[0].type)
    if tt.is_fp8(s) or tt.is_fp8(d):
        raise source_error(ctx, f"conversions between {s} and {d} are not supported on hip targets yet (fp8 casts "
                                "are not implemented by the AMD lowering)")


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
    _reject_fp8(ctx)
    s, d = scalar_type(ctx.op.operands[0].type), scalar_type(ctx.op.results[0].type)
    if s.width == d.width:
        raise source_error(ctx, f"fp_to_fp between {s} and {d} is not supported")
    if rounding == RoundingMode.RTZ and d.width < s.width:
        return [[_rtz(ctx, v, d) for v in src]]
    return elementwise(ctx, "arith.extf" if d.width > s.width else "arith.truncf", [src])


@RULES.register("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")
def _casts(ctx, src, **params):
    _reject_fp8(ctx)
    return elementwise(ctx, ctx.op.name, [src], {n: ctx.op.attributes[n] for n in ctx.op.attributes})

