"""Math on CUDA: ``math`` ops through libdevice (``__nv_*``; the ``llir`` stage links it when referenced) with
Triton's fast paths (f32 ``exp`` as ``ex2.approx`` of ``x * log2(e)``, f32 ``exp2`` as ``ex2.approx.ftz``: results
below 2**-126 flush to zero, as Triton's; ``ex2.approx`` without ``enable_reflect_ftz``; f16 / bf16 computed in f32), ``tt.extern_elementwise`` as calls of its symbol, and f32 ``arith.divf`` as ``div.full.f32``."""
from __future__ import annotations

from mlir import ir

from tritium.lowering import LoweringError, Rules
from tritium.lowering.utils import call_function, elementwise, inline_asm, per_register, scalar_type

RULES = Rules()

LOG2E = 1.4426950408889634

_LIBDEVICE = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
    "math.log1p": "log1p", "math.expm1": "expm1", "math.sin": "sin", "math.cos": "cos", "math.tan": "tan",
    "math.tanh": "tanh", "math.sinh": "sinh", "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos",
    "math.atan": "atan", "math.atan2": "atan2", "math.erf": "erf", "math.rsqrt": "rsqrt", "math.powf": "pow",
    "math.cbrt": "cbrt", "math.asinh": "asinh", "math.acosh": "acosh", "math.atanh": "atanh",
    "math.erfc": "erfc",
}


def _math_scalar(ctx, opname, args, ty):
    f32 = ir.F32Type.get()
    if isinstance(ty, (ir.F16Type, ir.BF16Type)):
        wide = [ctx.emit("arith.extf", [a], f32) for a in args]
        return ctx.emit("arith.truncf", [_math_scalar(ctx, opname, wide, f32)], ty)
    if isinstance(ty, ir.F32Type) and opname == "math.exp":
        x = ctx.emit("arith.mulf", [args[0], ctx.const(f32, LOG2E)], f32)
        return inline_asm(ctx, "ex2.approx.f32 $0, $1;", "=f,f", [x], [f32])[0]
    if isinstance(ty, ir.F32Type) and opname == "math.exp2":
        ftz = ".ftz" if getattr(ctx.target, "ftz", True) else ""  # as libdevice's exp2f under enable_reflect_ftz
        return inline_asm(ctx, f"ex2.approx{ftz}.f32 $0, $1;", "=f,f", [args[0]], [f32])[0]
    base = _LIBDEVICE[opname]
    suffix = "f" if isinstance(ty, ir.F32Type) else ""
    if not isinstance(ty, (ir.F32Type, ir.F64Type)):
        raise LoweringError(f"{opname} on {ty} is not supported")
    return call_function(ctx, f"__nv_{base}{suffix}", list(args), ty)


def _per_register_call(ctx, operands, scalar):
    """``scalar(args) -> value`` on each register of ``ctx.op``'s result."""
    n = ctx.nregs(ctx.op.results[0].type)
    ops = [per_register(o, n) for o in operands]
    return [[scalar([o[i] for o in ops]) for i in range(n)]]


@RULES.register(*_LIBDEVICE)
def _math(ctx, *operands, **params):
    ty = scalar_type(ctx.op.results[0].type)
    return _per_register_call(ctx, operands, lambda args: _math_scalar(ctx, ctx.op.name, args, ty))


@RULES.register("tt.extern_elementwise")
def _extern(ctx, srcs, *, symbol, **_):
    ty = scalar_type(ctx.op.results[0].type)
    return _per_register_call(ctx, srcs, lambda args: call_function(ctx, symbol, args, ty))


@RULES.register("arith.divf")
def _divf(ctx, x, y, **params):
    """Triton's default f32 division is the full-range approximate one (``div.full.f32``); ``precise_divf`` is
    the exact one.  fp8 operands: divided in f32 (IEEE) and rounded back."""
    from tritium.lowering.fp8 import fp8_arith

    r = fp8_arith(ctx, [x, y])
    if r is not None:
        return r
    ty = scalar_type(ctx.op.results[0].type)
    if not isinstance(ty, ir.F32Type):
        return elementwise(ctx, "arith.divf", [x, y], {n: ctx.op.attributes[n] for n in ctx.op.attributes})
    return _per_register_call(ctx, [x, y], lambda args: inline_asm(ctx, "div.full.f32 $0, $1, $2;", "=f,f,f", args,
                                                                   [ty])[0])
