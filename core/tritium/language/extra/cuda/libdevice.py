"""``tl.extra.cuda.libdevice``: NVIDIA's libdevice functions as tl builtins, with Triton 3.x's names and dispatch.

``VARIANTS`` is the one table: function name -> {argument dtype names: (libdevice symbol, result dtype name)}.
A call picks the variant of its arguments' dtypes (``exp`` of fp32 -> ``__nv_expf``, of fp64 -> ``__nv_exp``;
``pow(fp32, int32)`` -> ``__nv_powif``), after Python scalars become tensors (int -> int32, float -> fp32); when
no variant matches exactly, the arguments promoted to a common type (as arithmetic would) are tried; otherwise
it is a CompilationError at the call naming the supported dtypes.  The call is a ``tt.extern_elementwise``
(``libname = "libdevice"``) over the broadcast arguments; the cuda backend links libdevice.10.bc, the
interpreter runs a NumPy equivalent of each symbol (``SYMBOLS``: symbol -> (name, argument dtypes, result)).
"""
from __future__ import annotations

import re
from typing import Dict, Tuple

from ... import core as _c
from ...core import builtin as _builtin

VARIANTS: Dict[str, Dict[Tuple[str, ...], Tuple[str, str]]] = {}

_MODES = ("rn", "rz", "rd", "ru")


def _add(name, args, symbol, ret):
    VARIANTS.setdefault(name, {})[tuple(args)] = ("__nv_" + symbol, ret)


def _float(names, n=1, f="{}f", d="{}", ret_f="fp32", ret_d="fp64"):
    """fp32 arguments -> symbol ``f``, fp64 -> ``d`` (``{}`` is the function's name)."""
    for name in names.split():
        _add(name, ("fp32",) * n, f.format(name), ret_f)
        _add(name, ("fp64",) * n, d.format(name), ret_d)


def _table(text):
    """One function a line (a line starting with ``|`` continues the one above): ``name  argument dtypes: symbol ->
    result``, its variants separated by ``|``."""
    for line in re.sub(r"\n\s*\|", " |", text.strip()).splitlines():
        name, _, rest = line.strip().partition(" ")
        for variant in rest.split("|"):
            args, _, sym_ret = variant.partition(":")
            symbol, _, ret = sym_ret.partition("->")
            _add(name, args.split(), symbol.strip(), ret.strip())


# --- floating-point math: fp32 -> __nv_<name>f, fp64 -> __nv_<name>
_float("floor ceil trunc round rint nearbyint fabs sqrt rsqrt cbrt rcbrt exp exp2 exp10 expm1 log log2 log10 "
       "log1p logb sin cos tan sinpi cospi asin acos atan sinh cosh tanh asinh acosh atanh erf erfc erfinv "
       "erfcinv erfcx normcdf normcdfinv lgamma tgamma j0 j1 y0 y1 cyl_bessel_i0 cyl_bessel_i1")
_float("atan2 hypot rhypot fmod remainder copysign nextafter fdim fmin fmax pow", 2)
_float("fma norm3d rnorm3d", 3)
_float("norm4d rnorm4d", 4)
_float("isnan isinf signbit", d="{}d", ret_f="int32", ret_d="int32")
_float("ilogb", ret_f="int32", ret_d="int32")
_float("llrint llround", ret_f="int64", ret_d="int64")
_table("""
    finitef     fp32: finitef -> int32
    isfinited   fp64: isfinited -> int32
    pow         fp32 int32: powif -> fp32 | fp64 int32: powi -> fp64
    ldexp       fp32 int32: ldexpf -> fp32 | fp64 int32: ldexp -> fp64
    scalbn      fp32 int32: scalbnf -> fp32 | fp64 int32: scalbn -> fp64
    jn          int32 fp32: jnf -> fp32 | int32 fp64: jn -> fp64
    yn          int32 fp32: ynf -> fp32 | int32 fp64: yn -> fp64
    saturatef   fp32: saturatef -> fp32
    rcp64h      fp64: rcp64h -> fp64
    rsqrt_rn    fp32: frsqrt_rn -> fp32
""")

# --- fast (approximate) fp32 functions
for _n in ("sinf", "cosf", "tanf", "expf", "exp10f", "logf", "log2f", "log10f"):
    _add("fast_" + _n, ("fp32",), "fast_" + _n, "fp32")
_table("""
    fast_powf     fp32 fp32: fast_powf -> fp32
    fast_dividef  fp32 fp32: fast_fdividef -> fp32
""")

# --- explicitly rounded arithmetic: fp32 -> __nv_f<op>_<mode>, fp64 -> __nv_d<op>_<mode>
for _m in _MODES:
    _float(f"fma_{_m}", 3, f=f"fmaf_{_m}", d=f"fma_{_m}")
    for _op, _k in (("add", 2), ("sub", 2), ("mul", 2), ("div", 2), ("rcp", 1), ("sqrt", 1)):
        _float(f"{_op}_{_m}", _k, f=f"f{_op}_{_m}", d=f"d{_op}_{_m}")

# --- conversions with a rounding mode: <from>2<to>_<mode>
_CONV = {"double2float": ("fp64", "fp32"), "double2int": ("fp64", "int32"), "double2uint": ("fp64", "int32"),
         "float2int": ("fp32", "int32"), "float2uint": ("fp32", "int32"), "int2float": ("int32", "fp32"),
         "uint2float": ("uint32", "fp32"), "float2ll": ("fp32", "int64"), "float2ull": ("fp32", "int64"),
         "double2ll": ("fp64", "int64"), "double2ull": ("fp64", "int64"), "ll2float": ("int64", "fp32"),
         "ull2float": ("uint64", "fp32"), "ll2double": ("int64", "fp64"), "ull2double": ("uint64", "fp64")}
for _n, (_a, _r) in _CONV.items():
    for _m in _MODES:
        _add(f"{_n}_{_m}", (_a,), f"{_n}_{_m}", _r)

# --- conversions without a mode, reinterpretations, integers, abs / min / max
_table("""
    int2double_rn       int32: int2double_rn -> fp64
    uint2double_rn      uint32: uint2double_rn -> fp64
    int_as_float        int32: int_as_float -> fp32
    uint_as_float       uint32: uint_as_float -> fp32
    float_as_int        fp32: float_as_int -> int32
    float_as_uint       fp32: float_as_uint -> int32
    longlong_as_double  int64: longlong_as_double -> fp64
    double_as_longlong  fp64: double_as_longlong -> int64
    hiloint2double      int32 int32: hiloint2double -> fp64
    double2loint        fp64: double2loint -> int32
    double2hiint        fp64: double2hiint -> int32
    clz         int32: clz -> int32 | int64: clzll -> int32
    popc        int32: popc -> int32 | int64: popcll -> int32
    ffs         int32: ffs -> int32 | int64: ffsll -> int32
    brev        int32: brev -> int32 | int64: brevll -> int64
    mulhi       int32 int32: mulhi -> int32 | uint32 uint32: umulhi -> uint32 | int64 int64: mul64hi -> int64
                | uint64 uint64: umul64hi -> uint64
    mul24       int32 int32: mul24 -> int32 | uint32 uint32: umul24 -> uint32
    hadd        int32 int32: hadd -> int32 | uint32 uint32: uhadd -> uint32
    rhadd       int32 int32: rhadd -> int32 | uint32 uint32: urhadd -> uint32
    sad         int32 int32 uint32: sad -> int32 | uint32 uint32 uint32: usad -> uint32
    byte_perm   int32 int32 int32: byte_perm -> int32
    abs         int32: abs -> int32 | int64: llabs -> int64 | fp32: fabsf -> fp32 | fp64: fabs -> fp64
""")
for _n in ("min", "max"):
    _table(f"""{_n}  int32 int32: {_n} -> int32 | uint32 uint32: u{_n} -> uint32 | int64 int64: ll{_n} -> int64
                | uint64 uint64: ull{_n} -> uint64 | fp32 fp32: f{_n}f -> fp32 | fp64 fp64: f{_n} -> fp64""")

# symbol -> (function name, argument dtype names, result dtype name); the first function naming a symbol wins
SYMBOLS: Dict[str, Tuple[str, Tuple[str, ...], str]] = {}
for _n, _vs in VARIANTS.items():
    for _args, (_sym, _r) in _vs.items():
        SYMBOLS.setdefault(_sym, (_n, _args, _r))

_DISPATCH = {n: {tuple(_c.dtype(a) for a in args): (sym, _c.dtype(r)) for args, (sym, r) in vs.items()}
             for n, vs in VARIANTS.items()}


def _make(name):
    def fn(*args, _semantic=None, _builder=None):
        from ... import semantic
        return semantic.extern_elementwise("libdevice", "", list(args), _DISPATCH[name], True,
                                           what=f"libdevice.{name}")

    arity = len(next(iter(VARIANTS[name])))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"libdevice {name} ({arity} argument(s)): " + ", ".join(
        f"({', '.join(a)}) -> {s}" for a, (s, _r) in VARIANTS[name].items())
    return _builtin(fn)


for _n in VARIANTS:
    globals()[_n] = _make(_n)

__all__ = sorted(VARIANTS)
del _n, _vs, _args, _sym, _r, _m, _op, _k, _a
