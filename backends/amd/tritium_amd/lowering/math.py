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

Triton 3.6 on gfx942 (its LLIR): f32 ``exp`` / ``log`` the same; f32 ``exp2`` / ``sqrt`` / ``rsqrt`` the raw
``llvm.amdgcn.exp2`` / ``.sqrt`` / ``.rsq`` (one approximate instruction each, where tritium's ``llvm.exp2`` scales
denormals and ``llvm.sqrt`` is correctly rounded); ``sin`` / ``cos`` / ``erf`` and all f64 transcendentals ocml's,
as tritium's with the device libraries.

f16 / bf16 are computed in f32.  LLVM has no AMDGPU lowering of f64 ``exp`` / ``log`` / ``sin`` / ``pow``, nor of
``tan``, ``tanh``, ``erf``, ...: it stops with "no libcall available" -- those calls go to ocml (``_OCML``), and
without the device libraries they are a :class:`~tritium.errors.CompilationError` at the call's line naming the
ocml symbol and how to provide the libraries.  ``tt.extern_elementwise`` (``tl.extra.libdevice``, whose symbols are
libdevice's ``__nv_*`` names) calls the ocml function of the same meaning (:func:`ocml_for`); an ``__ocml_*`` /
``__ockl_*`` symbol is called as it is; libdevice's exact functions (``floor``, ``ceil``, ``trunc``, ``rint``,
``round``, ``fabs``, ``sqrt``, ``fmin`` / ``fmax``, ``copysign``, ``fma``, ``isnan``, ``isinf``, ``isfinite``) and
its integer functions (``popc``,
``clz``, ``brev``, ``ffs``, ``mulhi``, ``abs``, ``min`` / ``max``), which ocml has not, are ops the backend selects
itself (``v_floor``, ``v_bcnt``, ``v_ffbh``, ``v_bfrev``, ``v_mul_hi``, ...), with or without the libraries.
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


def _fit(ctx, v, ty):
    """An integer ``v`` truncated or zero-extended to ``ty``."""
    w, tw = ir.IntegerType(v.type).width, ir.IntegerType(ty).width
    return v if w == tw else ctx.emit("arith.trunci" if w > tw else "arith.extui", [v], ty)


def _mulhi(ctx, a, b, ty, signed):
    w = ir.IntegerType(a.type).width
    wide = ctx.int_ty(2 * w)
    ext = "arith.extsi" if signed else "arith.extui"
    p = ctx.emit("arith.muli", [ctx.emit(ext, [a], wide), ctx.emit(ext, [b], wide)], wide)
    return ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [p, ctx.const(wide, w)], wide)], ty)


def _ffs(ctx, a, ty):
    """1 + the index of the lowest set bit, 0 for 0."""
    t = ctx.emit("math.cttz", [a], a.type)
    one = ctx.emit("arith.addi", [t, ctx.const(a.type, 1)], a.type)
    zero = ctx.emit("arith.cmpi", [a, ctx.const(a.type, 0)], ctx.int_ty(1),
                    {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 0)})  # eq
    return _fit(ctx, ctx.emit("arith.select", [zero, ctx.const(a.type, 0), one], a.type), ty)


#: libdevice's float predicates -> the arith.cmpf predicate on (|x| or x, the comparand): 0/1 as i32
_CLASS = {"isnan": ("uno", None), "isinf": ("oeq", "inf"), "finitef": ("olt", "inf"), "isfinited": ("olt", "inf")}
_CMPF = {"oeq": 1, "olt": 4, "uno": 14}


def _classify(ctx, x, ty, name):
    pred, other = _CLASS[name]
    lhs = x if other is None else ctx.emit("math.absf", [x], x.type)
    rhs = x if other is None else ctx.const(x.type, float(other))
    b = ctx.emit("arith.cmpf", [lhs, rhs], ctx.int_ty(1), {"predicate": ir.IntegerAttr.get(ctx.int_ty(64),
                                                                                         _CMPF[pred])})
    return ctx.emit("arith.extui", [b], ty)


#: libdevice's integer functions (not in ocml) as integer ops LLVM's AMDGPU backend selects itself:
#: function name -> (args, result type) -> value
_INTEGER = {
    "popc": lambda ctx, a, ty: _fit(ctx, ctx.emit("math.ctpop", [a[0]], a[0].type), ty),
    "clz": lambda ctx, a, ty: _fit(ctx, ctx.emit("math.ctlz", [a[0]], a[0].type), ty),
    "brev": lambda ctx, a, ty: ctx.emit("llvm.intr.bitreverse", [a[0]], ty),
    "ffs": lambda ctx, a, ty: _ffs(ctx, a[0], ty),
    "abs": lambda ctx, a, ty: ctx.emit("math.absi", [a[0]], ty),
}


#: libdevice's exact float functions: the op LLVM's AMDGPU backend selects itself (v_floor, v_rndne, v_fma, ...;
#: f32 sqrt correctly rounded, as libdevice's)
_EXACT = {"floor": "math.floor", "ceil": "math.ceil", "trunc": "math.trunc", "rint": "math.roundeven",
          "nearbyint": "math.roundeven", "round": "math.round", "fabs": "math.absf", "sqrt": "math.sqrt",
          "fmin": "arith.minnumf", "fmax": "arith.maxnumf", "copysign": "math.copysign", "fma": "math.fma"}


def _native(symbol: str):
    """The native lowering of libdevice's function ``symbol`` where it is exact (``floor``, ``fmax``, ...) or an
    integer function ocml has not (``__nv_popc``, ``__nv_umulhi``, ...), or None."""
    from tritium.language.extra.cuda.libdevice import SYMBOLS

    if symbol not in SYMBOLS:
        return None
    name, args, ret = SYMBOLS[symbol]
    if any(a.startswith("fp") for a in args):
        if name in _EXACT and all(a == ret for a in args):
            return lambda ctx, a, ty: ctx.emit(_EXACT[name], list(a), ty)
        if name in _CLASS:
            return lambda ctx, a, ty: _classify(ctx, a[0], ty, name)
        return None
    unsigned = args[0].startswith("uint")
    if name in _INTEGER:
        return _INTEGER[name]
    if name == "mulhi":
        return lambda ctx, a, ty: _mulhi(ctx, a[0], a[1], ty, not unsigned)
    if name in ("min", "max"):
        op = f"arith.{name}{'ui' if unsigned else 'si'}"
        return lambda ctx, a, ty: ctx.emit(op, list(a), ty)
    return None


@RULES.register("tt.extern_elementwise")
def _extern(ctx, srcs, *, symbol, libname="", **_):
    ty = scalar_type(ctx.op.results[0].type)
    n = ctx.nregs(ctx.op.results[0].type)
    ops = [per_register(s, n) for s in srcs]
    native = _native(symbol)
    if native is not None:
        return [[native(ctx, [o[i] for o in ops], ty) for i in range(n)]]
    ocml = ocml_for(symbol)
    what = f"the external function {symbol} ({libname or 'extern_elementwise'})"
    if ocml is None:
        raise source_error(ctx, f"{what} has no ROCm device-library equivalent on hip targets (libdevice is "
                                f"CUDA's; of its integer functions popc, clz, brev, ffs, mulhi, abs, min and max "
                                f"are lowered natively, conversions are not supported)")
    return [[ocml_call(ctx, ocml, [o[i] for o in ops], ty, what) for i in range(n)]]
