"""Math on AMD GPUs: LLVM intrinsics the AMDGPU backend lowers itself, and the ROCm device library ocml
(``__ocml_*``, linked by the ``amdgcn`` stage: :mod:`tritium_amd.devicelibs`) for the rest, as Triton does.

Native (no device library; each checked to select for f16 / f32 / f64 on gfx942 in ``tests/amd/test_math.py``):

* f32 ``exp``: ``llvm.exp2(x * log2(e))`` (Triton's fast path; ``v_exp_f32``); ``exp2``, ``log``, ``log2``,
  ``log10``: ``llvm.exp2`` / ``llvm.log`` / ``llvm.log2`` / ``llvm.log10`` (the backend's accurate expansions
  around ``v_exp_f32`` / ``v_log_f32`` with denormal scaling); ``rsqrt``: ``1 / llvm.sqrt(x)``;
* ``sqrt``, ``fabs``, ``fma``, ``floor``, ``ceil``, ``trunc``, ``round``, min / max, ``copysign``: the generic
  elementwise rules (``llvm.sqrt``, ...: ``v_sqrt`` / ``v_floor`` / ``v_fma`` ..., f32 and f64 alike);
* f32 ``sin`` / ``cos`` when the device libraries are not found: ``llvm.sin`` / ``llvm.cos``, i.e. ``v_sin_f32`` /
  ``v_cos_f32`` of ``x * 1/(2 pi)`` -- the hardware's approximation, valid for ``|x| <= 512 pi`` (the ISA's input
  range of 256 revolutions), with no range reduction, so less accurate than Triton's ``__ocml_sin_f32`` (which
  tritium calls whenever ocml is found).

f16 / bf16 are computed in f32.  LLVM has no AMDGPU lowering of f64 ``exp`` / ``log`` / ``sin`` / ``pow``, nor of
``tan``, ``tanh``, ``erf``, ...: it stops with "no libcall available" -- those calls go to ocml (``_OCML``), and
without the device libraries they are a :class:`~tritium.errors.CompilationError` at the call's line naming the
ocml symbol and how to provide the libraries.  ``tt.extern_elementwise`` (``tl.extra.libdevice``, whose symbols are
libdevice's ``__nv_*`` names) calls the ocml function of the same meaning (:func:`ocml_for`); an ``__ocml_*`` /
``__ockl_*`` symbol is called as it is.
"""
from __future__ import annotations

import re

from mlir import ir

from tritium.lowering import Rules
from tritium.lowering.utils import call_function, per_register, scalar_type, source_error

from .. import devicelibs

RULES = Rules()

LOG2E = 1.4426950408889634

#: math ops the AMDGPU backend lowers for f32 (the op itself, converted by convert-math-to-llvm)
_NATIVE_F32 = {"math.exp2", "math.log", "math.log2", "math.log10"}

#: f32 math ops the AMDGPU backend lowers, less accurately than ocml: used only without the device libraries
_NATIVE_APPROX_F32 = {"math.sin", "math.cos"}

#: math ops ocml implements: op -> ocml base name (``__ocml_<base>_f32`` / ``_f64``)
_OCML = {
    "math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.tanh": "tanh", "math.sinh": "sinh",
    "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.atan2": "atan2",
    "math.erf": "erf", "math.erfc": "erfc", "math.powf": "pow", "math.cbrt": "cbrt", "math.asinh": "asinh",
    "math.acosh": "acosh", "math.atanh": "atanh", "math.log1p": "log1p", "math.expm1": "expm1",
    # f64 only: f32 is native
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
}


def _bits(ty) -> str:
    return {16: "f16", 32: "f32", 64: "f64"}.get(getattr(ty, "width", 32), "f32")


def ocml_call(ctx, symbol: str, args, ty, what: str):
    """A call of the ocml / ockl function ``symbol``; without the device libraries, or when they lack it, a
    CompilationError at the op's line (``what`` names the call)."""
    if not devicelibs.defines(symbol):
        d = devicelibs.directory()
        if d is None:
            raise source_error(ctx, f"{what} needs the ROCm device library function {symbol} on hip targets, and "
                                    f"the device libraries were not found: {devicelibs.HOW}")
        raise source_error(ctx, f"{what} needs {symbol} on hip targets, which the ROCm device libraries in {d} "
                                f"do not define")
    return call_function(ctx, symbol, list(args), ty)


def _scalar(ctx, opname, args, ty):
    f32 = ir.F32Type.get()
    if isinstance(ty, (ir.F16Type, ir.BF16Type)):
        wide = [ctx.emit("arith.extf", [a], f32) for a in args]
        return ctx.emit("arith.truncf", [_scalar(ctx, opname, wide, f32)], ty)
    base = _OCML.get(opname, opname.split(".", 1)[1])
    what = f"{base} ({opname} on {ty})"
    if not isinstance(ty, (ir.F32Type, ir.F64Type)):
        raise source_error(ctx, f"{what} is not supported on hip targets")
    if opname == "math.rsqrt":
        root = ctx.emit("math.sqrt", [args[0]], ty)
        return ctx.emit("arith.divf", [ctx.const(ty, 1.0), root], ty)
    f64 = isinstance(ty, ir.F64Type)
    if not f64 and opname == "math.exp":
        x = ctx.emit("arith.mulf", [args[0], ctx.const(f32, LOG2E)], f32)
        return ctx.emit("math.exp2", [x], f32)
    if not f64 and opname in _NATIVE_F32:
        return ctx.emit(opname, list(args), ty)
    symbol = f"__ocml_{base}_{_bits(ty)}"
    if not f64 and opname in _NATIVE_APPROX_F32 and not devicelibs.defines(symbol):
        return ctx.emit(opname, list(args), ty)
    return ocml_call(ctx, symbol, args, ty, what)


@RULES.register("math.rsqrt", *_OCML)
def _math(ctx, *operands, **params):
    ty = scalar_type(ctx.op.results[0].type)
    n = ctx.nregs(ctx.op.results[0].type)
    ops = [per_register(o, n) for o in operands]
    return [[_scalar(ctx, ctx.op.name, [o[i] for o in ops], ty) for i in range(n)]]


# ------------------------------------------------------------------------------------------------
# tt.extern_elementwise: libdevice names -> ocml
# ------------------------------------------------------------------------------------------------

#: libdevice function name -> ocml base name, where they differ
_OCML_NAME = {
    "normcdf": "ncdf", "normcdfinv": "ncdfinv", "cyl_bessel_i0": "i0", "cyl_bessel_i1": "i1", "norm3d": "len3",
    "rnorm3d": "rlen3", "norm4d": "len4", "rnorm4d": "rlen4", "finitef": "isfinite", "isfinited": "isfinite",
    "abs": "fabs", "rsqrt_rn": "rsqrt",
}
#: libdevice's rounding-mode suffix -> ocml's
_ROUNDING = {"rn": "rte", "rz": "rtz", "rd": "rtn", "ru": "rtp"}


def ocml_for(symbol: str):
    """The ocml function of the same meaning as the libdevice function ``symbol`` (``__nv_sinf`` ->
    ``__ocml_sin_f32``, ``__nv_powi`` -> ``__ocml_pown_f64``, ``__nv_fast_expf`` -> ``__ocml_native_exp_f32``,
    ``__nv_fadd_rz`` -> ``__ocml_add_rtz_f32``), or None where libdevice's has no float argument (integer
    functions, which ocml does not have) or is a conversion."""
    from tritium.language.extra.cuda.libdevice import SYMBOLS

    if symbol.startswith(("__ocml_", "__ockl_")):
        return symbol
    if symbol not in SYMBOLS:
        return None
    name, args, _ret = SYMBOLS[symbol]
    floats = [a for a in args if a.startswith("fp")]
    if not floats or re.match(r"(u?int|u?ll|float|double)2", name):  # integer functions; conversions
        return None
    bits = "f" + floats[0][2:]
    if name.startswith("fast_"):
        name = "native_" + name[len("fast_"):].removesuffix("f")
    elif name == "pow" and len(floats) == 1:
        name = "pown"
    m = re.fullmatch(r"(\w+)_(rn|rz|rd|ru)", name)
    if m and name != "rsqrt_rn":
        name = f"{m.group(1)}_{_ROUNDING[m.group(2)]}"
    return f"__ocml_{_OCML_NAME.get(name, name)}_{bits}"


@RULES.register("tt.extern_elementwise")
def _extern(ctx, srcs, *, symbol, libname="", **_):
    ty = scalar_type(ctx.op.results[0].type)
    ocml = ocml_for(symbol)
    what = f"the external function {symbol} ({libname or 'extern_elementwise'})"
    if ocml is None:
        raise source_error(ctx, f"{what} has no ROCm device-library equivalent on hip targets (libdevice is "
                                f"CUDA's; its integer functions and conversions are not in ocml)")
    n = ctx.nregs(ctx.op.results[0].type)
    ops = [per_register(s, n) for s in srcs]
    return [[ocml_call(ctx, ocml, [o[i] for o in ops], ty, what) for i in range(n)]]
