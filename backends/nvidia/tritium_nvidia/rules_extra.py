"""CUDA rules for fp8 conversions and ``tt.elementwise_inline_asm``.

fp8 (``f8E4M3FN`` = Triton's fp8e4nv, ``f8E5M2`` = fp8e5) values are kept with their MLIR float type in the
lowering; the upstream LLVM type conversion turns them into ``i8``.  Conversions use the sm_89+ PTX
instructions in pairs, as Triton does:

* to fp8 (round to nearest even, saturating to the finite range):
  ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, hi, lo`` from f32 (f16 / bf16 / f64 go through f32);
* from fp8: ``cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a`` to f16, then ``cvt.f32.f16`` (and on) for wider types;
* fp8 -> fp8 goes through f16.

``tt.fp_to_fp`` with ``rounding = 0`` (rtz) from f32 to f16 / bf16 uses ``cvt.rz``.

``tt.elementwise_inline_asm``: the asm string and constraints go to ``llvm.inline_asm`` unchanged (outputs
first).  ``packed_element = P``: one asm invocation handles P elements of each operand; operands narrower than
32 bits are packed ``32 / bits`` to a 32-bit register (as an i32), results likewise unpacked.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.lowering import LoweringError, register
from tritium.lowering.context import is_tensor, scalar_type
from tritium.lowering.rules import elementwise, operand_values

from .rules import asm

B = "cuda"


def _is_fp8(t) -> bool:
    return isinstance(t, ir.FloatType) and t.width == 8


def _fp8_name(t) -> str:
    s = str(t)
    if s == "f8E4M3FN":
        return "e4m3"
    if s == "f8E5M2":
        return "e5m2"
    raise LoweringError(f"fp8 type {s} is not supported on CUDA (f8E4M3FN / fp8e4nv and f8E5M2 / fp8e5 are)")


def _to_f32(ctx, v):
    f32 = ir.F32Type.get()
    t = v.type
    if isinstance(t, ir.F32Type):
        return v
    if isinstance(t, ir.F64Type):
        return ctx.op1("arith.truncf", [v], f32)
    return ctx.op1("arith.extf", [v], f32)


def _from_f32(ctx, v, t):
    if isinstance(t, ir.F32Type):
        return v
    if isinstance(t, ir.F64Type):
        return ctx.op1("arith.extf", [v], t)
    return ctx.op1("arith.truncf", [v], t)


def to_fp8(ctx, vals, dst) -> list:
    """Scalars of any float type -> fp8 ``dst`` (pairs through one cvt)."""
    name = _fp8_name(dst)
    i8, i16 = ctx.int_ty(8), ctx.int_ty(16)
    f32 = ir.F32Type.get()
    out = []
    for i in range(0, len(vals), 2):
        pair = vals[i:i + 2]
        if _is_fp8(pair[0].type):
            pair = [from_fp8(ctx, [v], ir.F16Type.get())[0] for v in pair]
        xs = [_to_f32(ctx, v) for v in pair]
        hi = xs[1] if len(xs) > 1 else ctx.const(f32, 0.0)
        w = asm(ctx, f"cvt.rn.satfinite.{name}x2.f32 $0, $1, $2;", "=h,f,f", [hi, xs[0]], [i16])[0]
        lo8 = ctx.op1("arith.trunci", [w], i8)
        out.append(ctx.op1("arith.bitcast", [lo8], dst))
        if len(xs) > 1:
            hi8 = ctx.op1("arith.trunci", [ctx.op1("arith.shrui", [w, ctx.const(i16, 8)], i16)], i8)
            out.append(ctx.op1("arith.bitcast", [hi8], dst))
    return out


def from_fp8(ctx, vals, dst) -> list:
    """fp8 scalars -> float ``dst`` (pairs through one cvt to f16x2)."""
    i8, i16, i32 = ctx.int_ty(8), ctx.int_ty(16), ctx.i32()
    f16 = ir.F16Type.get()
    out = []
    for i in range(0, len(vals), 2):
        pair = vals[i:i + 2]
        name = _fp8_name(pair[0].type)
        bs = [ctx.op1("arith.extui", [ctx.op1("arith.bitcast", [v], i8)], i16) for v in pair]
        packed = bs[0]
        if len(bs) > 1:
            packed = ctx.op1("arith.ori", [packed, ctx.op1("arith.shli", [bs[1], ctx.const(i16, 8)], i16)], i16)
        w = asm(ctx, f"cvt.rn.f16x2.{name}x2 $0, $1;", "=r,h", [packed], [i32])[0]
        halves = [ctx.op1("arith.trunci", [w], i16)]
        if len(bs) > 1:
            halves.append(ctx.op1("arith.trunci", [ctx.op1("arith.shrui", [w, ctx.c32(16)], i32)], i16))
        for h in halves:
            f = ctx.op1("arith.bitcast", [h], f16)
            if isinstance(dst, ir.F16Type):
                out.append(f)
            elif _is_fp8(dst):
                out.append(to_fp8(ctx, [f], dst)[0])
            else:
                out.append(_from_f32(ctx, ctx.op1("arith.extf", [f], ir.F32Type.get()), dst))
    return out


def _convert(ctx, op, rtz: bool = False):
    src_ty, dst_ty = op.operands[0].type, op.results[0].type
    s, d = scalar_type(src_ty), scalar_type(dst_ty)
    vals = ctx.get(op.operands[0])
    if _is_fp8(s) or _is_fp8(d):
        if _is_fp8(d) and s != d and rtz:
            raise LoweringError(f"conversion {s} -> {d} with rounding rtz is not supported (fp8 casts round to "
                                "nearest even)")
        if s == d:
            return [list(vals)]
        return [from_fp8(ctx, vals, d) if _is_fp8(s) else to_fp8(ctx, vals, d)]
    return None


@register("tt.fp_to_fp", backend=B)
def _fp_to_fp(ctx, op):
    rounding = int(ir.IntegerAttr(op.attributes["rounding"]).value) if "rounding" in op.attributes else 1
    r = _convert(ctx, op, rtz=rounding == 0)
    if r is not None:
        return r
    s, d = scalar_type(op.operands[0].type), scalar_type(op.results[0].type)
    if rounding == 0 and isinstance(s, ir.F32Type) and isinstance(d, (ir.F16Type, ir.BF16Type)):
        name = "f16" if isinstance(d, ir.F16Type) else "bf16"
        i16 = ctx.int_ty(16)
        out = []
        for v in ctx.get(op.operands[0]):
            h = asm(ctx, f"cvt.rz.{name}.f32 $0, $1;", "=h,f", [v], [i16])[0]
            out.append(ctx.op1("arith.bitcast", [h], d))
        return [out]
    sw, dw = s.width, d.width
    if sw == dw:
        raise LoweringError(f"fp_to_fp between {s} and {d} is not supported")
    return elementwise(ctx, op, "arith.extf" if dw > sw else "arith.truncf", {})


@register("arith.extf", "arith.truncf", backend=B)
def _ext_trunc(ctx, op):
    r = _convert(ctx, op)
    if r is not None:
        return r
    return elementwise(ctx, op)


# ------------------------------------------------------------------------------------------------
# inline asm
# ------------------------------------------------------------------------------------------------

def _bits(t) -> int:
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return t.width
    return 64


def _pack(ctx, vals, t, per_reg):
    """``per_reg`` scalars of type ``t`` (narrower than 32 bits) -> one i32."""
    i32 = ctx.i32()
    bits = _bits(t)
    ity = ctx.int_ty(bits)
    word = None
    for j, v in enumerate(vals):
        iv = v if isinstance(t, ir.IntegerType) else ctx.op1("arith.bitcast", [v], ity)
        w = ctx.op1("arith.extui", [iv], i32)
        if j:
            w = ctx.op1("arith.shli", [w, ctx.c32(j * bits)], i32)
        word = w if word is None else ctx.op1("arith.ori", [word, w], i32)
    return word


def _unpack(ctx, word, t, per_reg):
    i32 = ctx.i32()
    bits = _bits(t)
    ity = ctx.int_ty(bits)
    out = []
    for j in range(per_reg):
        w = ctx.op1("arith.shrui", [word, ctx.c32(j * bits)], i32) if j else word
        iv = ctx.op1("arith.trunci", [w], ity)
        out.append(iv if isinstance(t, ir.IntegerType) else ctx.op1("arith.bitcast", [iv], t))
    return out


@register("tt.elementwise_inline_asm", backend=B)
def _inline_asm(ctx, op):
    text = ir.StringAttr(op.attributes["asm_string"]).value
    cons = ir.StringAttr(op.attributes["constraints"]).value
    pure = "pure" in op.attributes and bool(ir.BoolAttr(op.attributes["pure"]).value)
    P = int(ir.IntegerAttr(op.attributes["packed_element"]).value) if "packed_element" in op.attributes else 1
    results = list(op.results)
    if not results:
        raise LoweringError("tt.elementwise_inline_asm without results is not supported")
    n = ctx.nregs(results[0].type)
    if n % P:
        raise LoweringError(f"tt.elementwise_inline_asm: packed_element={P} does not divide the {n} elements "
                            "each thread holds")
    args = operand_values(ctx, op, n)
    arg_types = [scalar_type(a.type) for a in op.operands]
    res_types = [scalar_type(r.type) for r in results]

    def per_reg(t):
        b = _bits(t)
        return max(1, min(P, 32 // b)) if b < 32 else 1

    outs = [[] for _ in results]
    for c in range(0, n, P):
        operands = []
        for vals, t in zip(args, arg_types):
            k = per_reg(t)
            for j in range(0, P, k):
                chunk = vals[c + j:c + j + k]
                if k == 1:
                    v = chunk[0]
                    if isinstance(t, ir.IntegerType) and t.width == 1:
                        v = ctx.op1("arith.extui", [v], ctx.int_ty(8))  # i1 -> an 8/16-bit register
                    operands.append(v)
                else:
                    operands.append(_pack(ctx, chunk, t, k))
        rtys = []
        for t in res_types:
            k = per_reg(t)
            for _ in range(0, P, k):
                rtys.append(ctx.i32() if k > 1 else t)
        got = asm(ctx, text, cons, operands, rtys, side_effects=not pure)
        pos = 0
        for ri, t in enumerate(res_types):
            k = per_reg(t)
            for _ in range(0, P, k):
                w = got[pos]
                pos += 1
                outs[ri].extend(_unpack(ctx, w, t, k) if k > 1 else [w])
    return outs
