"""Math on AMD GPUs through LLVM intrinsics the AMDGPU backend lowers itself (no device library):

* f32 ``exp``: ``llvm.exp2(x * log2(e))`` (Triton's fast path; ``v_exp_f32``); ``exp2``, ``log``, ``log2``,
  ``log10``: ``llvm.exp2`` / ``llvm.log`` / ``llvm.log2`` / ``llvm.log10`` (the backend's own accurate expansions
  around ``v_exp_f32`` / ``v_log_f32``); ``rsqrt``: ``1 / llvm.sqrt(x)``; f16 / bf16 computed in f32;
* ``sqrt``, ``fabs``, ``fma``, ``floor``, ``ceil``, ``trunc``, ``round``, min / max, ...: the generic elementwise
  rules (``llvm.sqrt``, ``llvm.fabs``, ...), f32 and f64 alike.

Everything else (``sin``, ``cos``, ``tan``, ``tanh``, ``erf``, ``pow``, ``atan2``, ``log1p``, ``expm1``, ...; f64
``exp`` / ``log``; ``tt.extern_elementwise``, i.e. ``tl.extra.libdevice``) needs the ROCm device libraries (ocml),
which no pinned package provides: a :class:`~tritium.errors.CompilationError` at the call's line naming the
function and the ocml symbol it would take.
"""
from __future__ import annotations

from mlir import ir

from tritium.lowering import Rules
from tritium.lowering.utils import per_register, scalar_type, source_error

RULES = Rules()

LOG2E = 1.4426950408889634

#: math ops the AMDGPU backend lowers for f32 (the op itself, converted by convert-math-to-llvm)
_NATIVE_F32 = {"math.exp2", "math.log", "math.log2", "math.log10"}

#: math ops only ocml implements: op -> (tl name, ocml base name)
_OCML = {
    "math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.tanh": "tanh", "math.sinh": "sinh",
    "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.atan2": "atan2",
    "math.erf": "erf", "math.erfc": "erfc", "math.powf": "pow", "math.cbrt": "cbrt", "math.asinh": "asinh",
    "math.acosh": "acosh", "math.atanh": "atanh", "math.log1p": "log1p", "math.expm1": "expm1",
}


def _ocml_error(ctx, base: str, ty):
    bits = {16: "f16", 32: "f32", 64: "f64"}.get(getattr(ty, "width", 32), "f32")
    return source_error(ctx, f"{base} ({ctx.op.name} on {ty}) is not supported on hip targets: it needs the ROCm "
                             f"device library ocml (__ocml_{base}_{bits}), which no pinned package provides")


def _scalar(ctx, opname, args, ty):
    f32 = ir.F32Type.get()
    if isinstance(ty, (ir.F16Type, ir.BF16Type)):
        wide = [ctx.emit("arith.extf", [a], f32) for a in args]
        return ctx.emit("arith.truncf", [_scalar(ctx, opname, wide, f32)], ty)
    base = opname.split(".", 1)[1]
    if opname in _OCML or not isinstance(ty, (ir.F32Type, ir.F64Type)):
        raise _ocml_error(ctx, _OCML.get(opname, base), ty)
    if opname == "math.rsqrt":
        root = ctx.emit("math.sqrt", [args[0]], ty)
        return ctx.emit("arith.divf", [ctx.const(ty, 1.0), root], ty)
    if isinstance(ty, ir.F64Type):  # no native f64 exp / log on AMDGPU: ocml's job
        raise _ocml_error(ctx, base, ty)
    if opname == "math.exp":
        x = ctx.emit("arith.mulf", [args[0], ctx.const(f32, LOG2E)], f32)
        return ctx.emit("math.exp2", [x], f32)
    assert opname in _NATIVE_F32, opname
    return ctx.emit(opname, list(args), ty)


@RULES.register("math.exp", "math.rsqrt", *_NATIVE_F32, *_OCML)
def _math(ctx, *operands, **params):
    ty = scalar_type(ctx.op.results[0].type)
    n = ctx.nregs(ctx.op.results[0].type)
    ops = [per_register(o, n) for o in operands]
    return [[_scalar(ctx, ctx.op.name, [o[i] for o in ops], ty) for i in range(n)]]


@RULES.register("tt.extern_elementwise")
def _extern(ctx, srcs, *, symbol, libname="", **_):
    raise source_error(ctx, f"external function {symbol} ({libname or 'extern_elementwise'}) is not supported on hip "
                            f"targets: libdevice is CUDA's, and the ROCm device libraries (ocml) are not provided by "
                            f"any pinned package")
