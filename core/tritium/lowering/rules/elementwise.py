"""Elementwise ops: ``arith`` / ``math`` re-emitted register by register on scalars (the upstream conversions
lower them), tt's elementwise ops (casts, pointer arithmetic, clamp, mulhi, precise sqrt / div)."""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...dialects.enums import PropagateNan
from ...errors import LoweringError
from ..table import Rules
from ..fp8 import fp8_arith, fp8_convert
from ..utils import DYNAMIC_INDEX, elementwise, memory_type, per_register, scalar_type

RULES = Rules()

ARITH_MATH_ELEMENTWISE = (
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf", "arith.maximumf",
    "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.addi", "arith.subi", "arith.muli", "arith.divsi",
    "arith.divui", "arith.remsi", "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
    "arith.shrsi", "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.cmpi",
    "arith.cmpf", "arith.select", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
    "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.bitcast", "arith.index_cast",
    "arith.index_castui", "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", "arith.mulhisi",
    "arith.mulhiui", "math.absf", "math.absi", "math.fma", "math.copysign", "math.ctlz", "math.cttz",
    "math.ctpop", "math.floor", "math.ceil", "math.sqrt", "math.round", "math.roundeven", "math.trunc",
)

_CASTS = frozenset({"arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui"})
_CONTRACTIBLE = frozenset({"arith.addf", "arith.subf", "arith.mulf"})
_NO_FASTMATH = "#arith.fastmath<none>"


@RULES.register(*ARITH_MATH_ELEMENTWISE)
def _arith_math(ctx, *operands, **params):
    """The op itself on each register, with its attributes.  With ``enable_fp_fusion`` (Triton's default) an
    add / sub / mul without fast-math flags gets ``contract``, so ``a * b + c`` may become one fma.  Float ops on
    fp8 operands are computed in f32 and rounded back (:func:`tritium.lowering.fp8.fp8_arith`)."""
    r = fp8_convert(ctx, operands[0]) if ctx.op.name in _CASTS else fp8_arith(ctx, operands)
    if r is not None:
        return r
    op = ctx.op
    attrs = {name: op.attributes[name] for name in op.attributes}
    if op.name in _CONTRACTIBLE and ctx.enable_fp_fusion and str(attrs.get("fastmath", _NO_FASTMATH)) == _NO_FASTMATH:
        attrs["fastmath"] = ir.Attribute.parse("#arith.fastmath<contract>")
    return elementwise(ctx, op.name, operands, attrs)


@RULES.register("tt.addptr")
def _addptr(ctx, ptr, offset):
    res_ty = ctx.op.results[0].type
    n = ctx.nregs(res_ty)
    elem = memory_type(tt.pointee(tt.elem_of(ctx.op.operands[0].type)))
    pty = scalar_type(res_ty)
    return [[ctx.emit("llvm.getelementptr", [p, o], pty,
                      {"rawConstantIndices": ir.DenseI32ArrayAttr.get([DYNAMIC_INDEX]),
                       "elem_type": ir.TypeAttr.get(elem)})
             for p, o in zip(per_register(ptr, n), per_register(offset, n))]]


@RULES.register("tt.bitcast")
def _bitcast(ctx, src):
    s, d = tt.elem_of(ctx.op.operands[0].type), tt.elem_of(ctx.op.results[0].type)
    if tt.is_ptr(s) and tt.is_ptr(d):
        return [src]
    return elementwise(ctx, "llvm.bitcast", [src])


@RULES.register("tt.int_to_ptr")
def _int_to_ptr(ctx, src):
    return elementwise(ctx, "llvm.inttoptr", [src])


@RULES.register("tt.ptr_to_int")
def _ptr_to_int(ctx, src):
    return elementwise(ctx, "llvm.ptrtoint", [src])


@RULES.register("tt.precise_sqrt")
def _precise_sqrt(ctx, x):
    return elementwise(ctx, "math.sqrt", [x])


@RULES.register("tt.precise_divf")
def _precise_divf(ctx, x, y):
    return elementwise(ctx, "arith.divf", [x, y])


@RULES.register("tt.clampf")
def _clampf(ctx, x, lo, hi, *, propagateNan=PropagateNan.NONE):
    n = ctx.nregs(ctx.op.results[0].type)
    x, lo, hi = (per_register(v, n) for v in (x, lo, hi))
    mx, mn = ("arith.maxnumf", "arith.minnumf") if propagateNan == PropagateNan.NONE else \
        ("arith.maximumf", "arith.minimumf")
    sty = scalar_type(ctx.op.results[0].type)
    return [[ctx.emit(mn, [ctx.emit(mx, [x[i], lo[i]], sty), hi[i]], sty) for i in range(n)]]


@RULES.register("tt.mulhiui")
def _mulhiui(ctx, x, y):
    n = ctx.nregs(ctx.op.results[0].type)
    x, y = per_register(x, n), per_register(y, n)
    sty = scalar_type(ctx.op.results[0].type)
    w = ir.IntegerType(sty).width
    wide = ctx.int_ty(2 * w)
    out = []
    for i in range(n):
        p = ctx.emit("arith.muli", [ctx.emit("arith.extui", [x[i]], wide), ctx.emit("arith.extui", [y[i]], wide)],
                     wide)
        out.append(ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [p, ctx.const(wide, w)], wide)], sty))
    return [out]


@RULES.register("tt.fp_to_fp")
def _fp_to_fp(ctx, src, **_):
    """Between float types of different widths (the rounding mode is the backend's business); fp8 through the
    target's conversions."""
    r = fp8_convert(ctx, src)
    if r is not None:
        return r
    s, d = tt.elem_of(ctx.op.operands[0].type), tt.elem_of(ctx.op.results[0].type)
    sw, dw = ir.FloatType(s).width, ir.FloatType(d).width
    if sw == dw:
        raise LoweringError(f"fp_to_fp between {s} and {d} is not supported")
    return elementwise(ctx, "arith.extf" if dw > sw else "arith.truncf", [src])
