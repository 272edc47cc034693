"""Float conversions on CUDA: fp8 casts and round-toward-zero ``tt.fp_to_fp``.

fp8 (``f8E4M3FN`` = Triton's fp8e4nv, ``f8E5M2`` = fp8e5) values keep their MLIR float type in the lowering; the
upstream LLVM type conversion turns them into ``i8``.  Conversions use the sm_89+ PTX instructions in pairs, as
Triton does:

* to fp8 (round to nearest even, saturating to the finite range):
  ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, hi, lo`` from f32 (f16 / bf16 / f64 go through f32);
* from fp8: ``cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a`` to f16, then ``cvt.f32.f16`` (and on) for wider types;
* fp8 -> fp8 goes through f16.

``tt.fp_to_fp`` with ``rounding = rtz`` from f32 to f16 / bf16 uses ``cvt.rz``.  :class:`CUDATargetInfo`'s
``to_fp8`` / ``from_fp8`` are these, which the shared fp8 rules (:mod:`tritium.lowering.fp8`: casts, fp8 arithmetic
in f32) convert through.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import RoundingMode
from tritium.lowering import LoweringError, Rules
from tritium.lowering.fp8 import fp8_convert
from tritium.lowering.utils import elementwise, inline_asm, scalar_type, source_error

RULES = Rules()


def _need_sm89(ctx, t) -> None:
    arch = getattr(ctx.target, "arch", 90)
    if arch < 89:
        raise LoweringError(f"{t} values at {tt.loc_str(ctx.op)} need sm_89 or newer (the fp8 conversions are "
                            f"sm_89 instructions); this kernel is compiled for sm_{arch}")


def _fp8_name(t, ctx=None) -> str:
    """The PTX name of fp8 type ``t``; an unsupported one is an error at the source line of ``ctx``'s op."""
    s = str(t)
    if s == "f8E4M3FN":
        return "e4m3"
    if s == "f8E5M2":
        return "e5m2"
    if s == "f8E4M3B11FNUZ":
        msg = ("tl.float8e4b15 is not supported on CUDA by tritium (Triton has it before sm_90 only); use "
               "tl.float8e4nv or tl.float8e5")
    else:
        msg = f"fp8 type {s} is not supported on CUDA (f8E4M3FN / fp8e4nv and f8E5M2 / fp8e5 are)"
    if ctx is not None and ctx.op is not None:
        raise source_error(ctx, msg)
    raise LoweringError(msg)


def _to_f32(ctx, v):
    f32 = ir.F32Type.get()
    t = v.type
    if isinstance(t, ir.F32Type):
        return v
    if isinstance(t, ir.F64Type):
        return ctx.emit("arith.truncf", [v], f32)
    return ctx.emit("arith.extf", [v], f32)


def _from_f32(ctx, v, t):
    if isinstance(t, ir.F32Type):
        return v
    if isinstance(t, ir.F64Type):
        return ctx.emit("arith.extf", [v], t)
    return ctx.emit("arith.truncf", [v], t)


def to_fp8(ctx, vals, dst) -> list:
    """Scalars of any float type -> fp8 ``dst`` (pairs through one cvt)."""
    name = _fp8_name(dst, ctx)
    _need_sm89(ctx, dst)
    i8, i16 = ctx.int_ty(8), ctx.int_ty(16)
    f32 = ir.F32Type.get()
    out = []
    for i in range(0, len(vals), 2):
        pair = vals[i:i + 2]
        if tt.is_fp8(pair[0].type):
            pair = [from_fp8(ctx, [v], ir.F16Type.get())[0] for v in pair]
        xs = [_to_f32(ctx, v) for v in pair]
        hi = xs[1] if len(xs) > 1 else ctx.const(f32, 0.0)
        w = inline_asm(ctx, f"cvt.rn.satfinite.{name}x2.f32 $0, $1, $2;", "=h,f,f", [hi, xs[0]], [i16])[0]
        lo8 = ctx.emit("arith.trunci", [w], i8)
        out.append(ctx.emit("arith.bitcast", [lo8], dst))
        if len(xs) > 1:
            hi8 = ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [w, ctx.const(i16, 8)], i16)], i8)
            out.append(ctx.emit("arith.bitcast", [hi8], dst))
    return out


def from_fp8(ctx, vals, dst) -> list:
    """fp8 scalars -> float ``dst`` (pairs through one cvt to f16x2)."""
    _need_sm89(ctx, vals[0].type if vals else dst)
    i8, i16, i32 = ctx.int_ty(8), ctx.int_ty(16), ctx.i32()
    f16 = ir.F16Type.get()
    out = []
    for i in range(0, len(vals), 2):
        pair = vals[i:i + 2]
        name = _fp8_name(pair[0].type, ctx)
        bs = [ctx.emit("arith.extui", [ctx.emit("arith.bitcast", [v], i8)], i16) for v in pair]
        packed = bs[0]
        if len(bs) > 1:
            packed = ctx.emit("arith.ori", [packed, ctx.emit("arith.shli", [bs[1], ctx.const(i16, 8)], i16)], i16)
        w = inline_asm(ctx, f"cvt.rn.f16x2.{name}x2 $0, $1;", "=r,h", [packed], [i32])[0]
        halves = [ctx.emit("arith.trunci", [w], i16)]
        if len(bs) > 1:
            halves.append(ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [w, ctx.c32(16)], i32)], i16))
        for h in halves:
            f = ctx.emit("arith.bitcast", [h], f16)
            if isinstance(dst, ir.F16Type):
                out.append(f)
            elif tt.is_fp8(dst):
                out.append(to_fp8(ctx, [f], dst)[0])
            else:
                out.append(_from_f32(ctx, ctx.emit("arith.extf", [f], ir.F32Type.get()), dst))
    return out


@RULES.register("tt.fp_to_fp")
def _fp_to_fp(ctx, src, *, rounding=RoundingMode.RTNE):
    rtz = rounding == RoundingMode.RTZ
    r = fp8_convert(ctx, src, rtz=rtz)
    if r is not None:
        return r
    s, d = scalar_type(ctx.op.operands[0].type), scalar_type(ctx.op.results[0].type)
    if rtz and isinstance(s, ir.F32Type) and isinstance(d, (ir.F16Type, ir.BF16Type)):
        name = "f16" if isinstance(d, ir.F16Type) else "bf16"
        i16 = ctx.int_ty(16)
        out = []
        for v in src:
            h = inline_asm(ctx, f"cvt.rz.{name}.f32 $0, $1;", "=h,f", [v], [i16])[0]
            out.append(ctx.emit("arith.bitcast", [h], d))
        return [out]
    sw, dw = s.width, d.width
    if sw == dw:
        raise LoweringError(f"fp_to_fp between {s} and {d} is not supported")
    return elementwise(ctx, "arith.extf" if dw > sw else "arith.truncf", [src])


@RULES.register("arith.extf", "arith.truncf")
def _ext_trunc(ctx, src, **params):
    r = fp8_convert(ctx, src)
    if r is not None:
        return r
    return elementwise(ctx, ctx.op.name, [src], {n: ctx.op.attributes[n] for n in ctx.op.attributes})
