"""Triton's specialisation rule, in one place: what a launch argument makes of its kernel parameter.

For a non-constexpr parameter:

* an ``int``: type ``"i32"`` / ``"i64"`` / ``"u64"`` by range (``OverflowError`` beyond 64 bits); unless the
  parameter is in ``do_not_specialize``, 1 becomes the constexpr 1 and a multiple of 16 gets
  ``tt.divisibility = 16``;
* a tensor or array (``data_ptr()``, ``__array_interface__`` or ``__cuda_array_interface__``, with a dtype):
  ``"*"`` + its element type (``"*fp32"``); a data address aligned to 16 bytes gets ``tt.divisibility = 16``
  unless the parameter is in ``do_not_specialize`` or ``do_not_specialize_on_alignment``;
* a ``float`` is ``"fp32"``, a ``bool`` ``"i1"``, numpy scalars go by their dtype;
* a host-side tensor descriptor (:class:`tritium.tools.tensor_descriptor.TensorDescriptor`) is
  ``"tensordesc<fp16[64, 64]>"`` (its base's element type and block shape; ``",nan"`` before the ``>`` with NaN
  padding): the kernel receives it as base, shape and strides (:func:`descriptor_args`); it gets
  ``tt.divisibility = 16`` (unless in ``do_not_specialize``) when the inner dim of its shape spans a multiple of
  16 bytes -- what a TMA store needs (:mod:`tritium.passes.ttir.tma_descriptors`), true of every contiguous tensor
  a ``TensorDescriptor`` accepts (its row stride is such a multiple); the outer dims may be anything;
* ``None`` and ``tl.constexpr`` values become constexprs.

The rule runs in two steps.  A parameter's *describe* function maps the argument to its **descriptor**, a
small hashable value that determines the outcome (the JIT's relaunch cache is keyed by descriptors);
:func:`decode` turns a descriptor into a :class:`Specialization`.  Descriptors:

* a pointer: ``(dtype, aligned)`` -- the dtype object itself, so no type-string lookup happens per launch;
* an int in the i32 range: ``1`` (the value 1), ``2`` (a multiple of 16), ``3`` (another), ``4`` (any value of a
  ``do_not_specialize`` parameter);
* anything else: its :class:`Specialization`; ``None`` for a value no kernel parameter takes.

The descriptors of the common kinds -- tensors with ``data_ptr()``, numpy arrays, ints -- are computed by the
statements :func:`describe_source` writes (and a constexpr parameter's by :func:`constexpr_source`); the JIT's generated binders inline them per parameter, and the
describe functions the general binder calls (:func:`describe_fn`) are generated from the same source, so both
paths compute every descriptor with the same code.  What is rarer goes through :func:`_describe_other`.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Callable, NamedTuple, Optional

from ..source.dependencies import is_constexpr_value  # noqa: F401  (Triton-side name here too)

DIVISIBILITY = 16
_MASK = DIVISIBILITY - 1

#: dtype name (torch ``torch.<name>``, numpy ``dtype.name``, ml_dtypes, a ``tl`` dtype's ``name``: what
#: :func:`tritium.reinterpret` wraps a tensor in) -> Triton type string
DTYPE_NAMES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
    "float64": "fp64", "double": "fp64",
    "int8": "i8", "int16": "i16", "short": "i16", "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1", "bool_": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
    # tl dtypes (their other names -- int8, uint32, ... -- are above)
    "int1": "i1", "fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "fp64": "fp64", "fp8e4nv": "fp8e4nv",
    "fp8e5": "fp8e5", "fp8e4b8": "fp8e4b8", "fp8e5b16": "fp8e5b16", "fp8e4b15": "fp8e4b15",
}

#: Triton's ``triton.runtime.jit.type_canonicalisation_dict``: a dtype's name (torch's, numpy's, ``tl``'s
#: ``float8e4nv`` spellings) or a type string -> the type string
type_canonicalisation_dict = {**DTYPE_NAMES, "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b8": "fp8e4b8",
                              "float8e5b16": "fp8e5b16", "float8e4b15": "fp8e4b15", "uint1": "i1",
                              "void": "void"}
type_canonicalisation_dict.update({v: v for v in list(type_canonicalisation_dict.values())})

SCALAR_TYPES = {"i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e5", "fp8e4b8",
                "fp8e5b16", "fp8e4b15", "fp16", "bf16", "fp32", "fp64"}


class Specialization(NamedTuple):
    """What the rule makes of one argument: a runtime parameter of ``type`` (``divisible``: it gets
    ``tt.divisibility = 16``), or, with ``type`` None, the constexpr ``value``."""

    type: Optional[str]
    divisible: bool = False
    value: Any = None


# ------------------------------------------------------------------------------------------- type strings
def is_type_string(s: Any) -> bool:
    """``"*fp32"``, ``"i32"``, ... (as warmup() accepts instead of values)."""
    return isinstance(s, str) and (s.lstrip("*") in SCALAR_TYPES) and s.count("*") <= 1


def dtype_type_string(dtype: Any) -> str:
    """``"fp32"`` for torch.float32 / numpy float32 / ``"float32"``; ``TypeError`` for an unsupported dtype."""
    name = str(dtype).rsplit(".", 1)[-1]  # torch.float32 -> float32; numpy dtype('float32') prints float32
    if hasattr(dtype, "name") and isinstance(dtype.name, str):
        name = dtype.name
    try:
        return DTYPE_NAMES[name]
    except KeyError:
        raise TypeError(f"unsupported tensor element type {dtype}") from None


_POINTER_TYPES: dict = {}  # dtype object -> "*fp32"


def pointer_type(dtype: Any) -> str:
    """``"*fp32"`` for a float32 dtype (memoised per dtype object)."""
    ty = _POINTER_TYPES.get(dtype)
    if ty is None:
        ty = _POINTER_TYPES[dtype] = "*" + dtype_type_string(dtype)
    return ty


def int_type_string(v: int) -> str:
    if -(2 ** 31) <= v < 2 ** 31:
        return "i32"
    if -(2 ** 63) <= v < 2 ** 63:
        return "i64"
    if 2 ** 63 <= v < 2 ** 64:
        return "u64"
    raise OverflowError(f"integer argument {v} does not fit in 64 bits")


def is_tensordesc_type(s: Any) -> bool:
    """A host-side tensor descriptor's type string (``"tensordesc<fp16[64, 64]>"``)."""
    return isinstance(s, str) and s.startswith("tensordesc<")


def is_tensor_descriptor(v: Any) -> bool:
    """A host-side tensor descriptor (tritium's or Triton's ``TensorDescriptor``: base, shape, strides,
    block_shape)."""
    return type(v).__name__ == "TensorDescriptor" and hasattr(v, "block_shape") and hasattr(v, "base")


def tensordesc_type_string(v: Any) -> str:
    """``"tensordesc<fp16[64, 64]>"`` of a host-side tensor descriptor (``",nan"`` added for NaN padding)."""
    elem = dtype_type_string(v.base.dtype)
    nan = ",nan" if getattr(v, "padding", "zero") == "nan" else ""
    return f"tensordesc<{elem}{[int(b) for b in v.block_shape]}{nan}>"


def element_size(dtype: Any) -> int:
    """Bytes per element of a dtype (torch's, numpy's, or a name): from its type string's width (``fp8e4nv``: 1)."""
    size = _ELEMENT_SIZES.get(dtype)
    if size is None:
        size = _ELEMENT_SIZES[dtype] = max(1, int(re.match(r"[a-z]+(\d+)", dtype_type_string(dtype)).group(1)) // 8)
    return size


_ELEMENT_SIZES: dict = {}  # dtype -> bytes


def descriptor_args(v: Any) -> tuple:
    """The kernel arguments a host-side tensor descriptor stands for: base, shape..., strides..."""
    return (v.base, *(int(s) for s in v.shape), *(int(s) for s in v.strides))


def unwrap_constexpr(v: Any) -> Any:
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        return v.value
    return v


def hashable_key(v: Any) -> tuple:
    """``(type name, v)`` for hashable ``v``, else ``(type name, repr(v))``: an in-memory cache key part for a
    constexpr value or an option (type-tagged, so 1, 1.0 and True differ)."""
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return (type(v).__name__, repr(v))


def data_pointer(v: Any) -> Any:
    """``(address, dtype)`` of an array-like argument, or None if ``v`` is not one."""
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):  # torch tensors (and look-alikes)
        return v.data_ptr(), v.dtype
    ai = getattr(v, "__array_interface__", None)
    if ai is not None and hasattr(v, "dtype"):  # numpy arrays, not numpy scalars
        import numpy as np

        if isinstance(v, np.generic):
            return None
        return ai["data"][0], v.dtype
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np

        return cai["data"][0], np.dtype(cai["typestr"])
    return None


# ------------------------------------------------------------------------------------------- descriptors
_ONE, _DIVISIBLE, _PLAIN, _ANY = 1, 2, 3, 4  # descriptors of ints

_INT_SPECS = {_ONE: Specialization(None, False, 1), _DIVISIBLE: Specialization("i32", True),
              _PLAIN: Specialization("i32"), _ANY: Specialization("i32")}


def decode(d: Any) -> Specialization:
    """The :class:`Specialization` a descriptor stands for (``TypeError`` for an unsupported element type)."""
    t = type(d)
    if t is int:
        return _INT_SPECS[d]
    if t is tuple:
        return Specialization(pointer_type(d[0]), d[1])
    return d


def _pointer_expr(dtype: str, addr: str, align: bool) -> str:
    """The rule for pointers: the descriptor of an argument of ``dtype`` at address ``addr``."""
    return f"({dtype}, not {addr} & {_MASK})" if align else f"({dtype}, False)"


def _int_expr(x: str, specialize: bool) -> str:
    """The rule for ints: the descriptor code of int ``x``."""
    if not specialize:
        return str(_ANY)
    return f"({_ONE} if {x} == 1 else {_DIVISIBLE} if not {x} & {_MASK} else {_PLAIN})"


def describe_source(x: str, out: str, specialize: bool, align: bool, ndarray: bool,
                    value: Optional[str] = None, device: Optional[str] = None, fast_tensor: bool = False) -> str:
    """Statements (indented by 4) setting ``out`` to the descriptor of the argument in variable ``x``, for a
    parameter with these flags; ``ndarray``: inline numpy arrays too (:func:`ndarray_reader` is available).
    Their names come from :func:`describe_namespace`; ``_tr_t`` is a scratch variable.

    With ``value`` and ``device`` (variable names; the JIT's launcher): also ``value`` = a tensor's
    ``data_ptr()`` (read once), else ``x`` itself, and ``device`` = a tensor's ``get_device()`` (-1 on the
    host), else None; ``fast_tensor``: a ``torch.Tensor`` (exactly) gets all three from the C helper
    ``_tr_ti`` (:mod:`tritium._speedups`, in the namespace when built)."""
    if value:
        tensor = [f"    {value} = {x}.data_ptr()", f"    {device} = {x}.get_device()",
                  f"    {out} = {_pointer_expr(f'{x}.dtype', value, align)}"]
        other = [f"    {value} = {x}", f"    {device} = None"]
    else:
        tensor, other = [f"    {out} = {_pointer_expr(f'{x}.dtype', f'{x}.data_ptr()', align)}"], []
    lines = [f"_tr_t = _tr_type({x})"]
    if value and fast_tensor:
        lines += ["if _tr_t is _tr_T:", f"    {value}, {device}, {out} = _tr_ti({x}, {align})", "elif _tr_t in _tr_P:"]
    else:
        lines += ["if _tr_t in _tr_P:"]
    lines += [*tensor,
             "elif _tr_t is _tr_int:", *other,
             f"    {out} = {_int_expr(x, specialize)}",
             f"    if not -0x80000000 <= {x} <= 0x7FFFFFFF:",
             f"        {out} = _tr_wide({x}, {out})"]
    if ndarray:
        lines += ["elif _tr_t is _tr_nd:", *other,
                  f"    {out} = {_pointer_expr(f'{x}.dtype', f'_tr_rd(_tr_id({x}) + _tr_off).value', align)}"]
    lines += ["else:", *other, f"    {out} = _tr_other({x}, {specialize}, {align})"]
    return "".join(f"    {ln}\n" for ln in lines)


def constexpr_source(x: str) -> str:
    """An expression for the descriptor of the value ``x`` of a constexpr parameter: an ``int`` itself, anything
    else ``(type, unwrapped value)`` (``TypeError`` if unhashable: the general binder then keys it by repr)."""
    return f"({x} if _tr_type({x}) is _tr_int else _tr_const({x}))"


def _describe_constexpr(v: Any) -> tuple:
    u = unwrap_constexpr(v)
    hash(u)
    return (type(u), u)


#: types with ``dtype``, ``data_ptr()`` and ``get_device()`` (torch.Tensor, its subclasses, look-alikes) seen so
#: far: descriptors of their instances are computed inline
DATA_PTR_TYPES: set = set()


#: the builtins generated code calls, under names no kernel parameter can take (a parameter may be named ``type``
#: or ``len``: the generated functions take the kernel's parameter names as their own)
GENERATED_BUILTINS = {"_tr_type": type, "_tr_int": int, "_tr_id": id, "_tr_len": len, "_tr_tuple": tuple,
                      "_tr_Exception": Exception}


def describe_namespace() -> dict:
    """The names :func:`describe_source`'s statements use: ``{name: value}`` to put in the generated code's
    globals.  Decides whether numpy arrays are inlined (``"_tr_nd" in ns``)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(getattr(torch, "Tensor", None), type):
        DATA_PTR_TYPES.add(torch.Tensor)
    ns = {"_tr_P": DATA_PTR_TYPES, "_tr_other": _describe_other, "_tr_wide": _describe_wide_int,
          "_tr_const": _describe_constexpr, **GENERATED_BUILTINS}
    if torch is not None and isinstance(getattr(torch, "Tensor", None), type):
        try:
            from .. import _speedups
        except ImportError:  # not built: the Python statements
            pass
        else:
            ns["_tr_T"], ns["_tr_ti"] = torch.Tensor, _speedups.tensor_info
    nd = ndarray_reader()
    if nd:
        ns["_tr_nd"], ns["_tr_rd"], ns["_tr_off"] = nd
    return ns


_DESCRIBE: dict = {}  # (specialize, align, numpy inlined) -> generated describe function
_POINTER = {align: eval(f"lambda dtype, addr: {_pointer_expr('dtype', 'addr', align)}")  # noqa: S307
            for align in (False, True)}


def describe_fn(specialize: bool, align: bool) -> Callable[[Any], Any]:
    """``describe(arg) -> descriptor`` for a parameter with these flags (generated from
    :func:`describe_source`, memoised)."""
    ns = describe_namespace()
    key = (specialize, align, "_tr_nd" in ns)
    fn = _DESCRIBE.get(key)
    if fn is None:
        src = "def describe(x):\n" + describe_source("x", "d", specialize, align, key[2]) + "    return d\n"
        exec(compile(src, f"<tritium describe {key}>", "exec"), ns)  # noqa: S102 - our own generated code
        fn = _DESCRIBE[key] = ns["describe"]
    return fn


def _describe_wide_int(v: int, code: int) -> Specialization:
    """An int outside the i32 range, with the descriptor code the rule gave it."""
    return Specialization(int_type_string(v), _INT_SPECS[code].divisible)


_I1, _FP32 = Specialization("i1"), Specialization("fp32")


def _describe_other(v: Any, specialize: bool, align: bool) -> Any:
    """The descriptor of an argument of a kind :func:`describe_source` does not inline (None: unsupported)."""
    if v is None:
        return Specialization(None, False, None)
    if is_constexpr_value(v):
        return Specialization(None, False, unwrap_constexpr(v))
    if isinstance(v, bool):
        return _I1
    if isinstance(v, int):  # int subclasses (IntEnum, ...): exact ints are inline
        return describe_fn(specialize, align)(int(v))
    if isinstance(v, float):  # numpy float64 scalars included, as in Triton
        return _FP32
    if is_tensor_descriptor(v):  # divisible: its inner dim spans a multiple of 16 bytes (unless do_not_specialize)
        return Specialization(tensordesc_type_string(v),
                              specialize and not (int(v.shape[-1]) * element_size(v.base.dtype)) & _MASK)
    if hasattr(v, "dtype") and hasattr(v, "data_ptr"):
        if hasattr(v, "get_device"):
            DATA_PTR_TYPES.add(type(v))  # a tensor type: inline from now on
        return _POINTER[align](v.dtype, v.data_ptr())
    ptr = data_pointer(v)  # numpy arrays (when not inline), __cuda_array_interface__ objects
    if ptr is not None:
        return _POINTER[align](ptr[1], ptr[0])
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic):
        if isinstance(v, np.bool_):
            return _I1
        if isinstance(v, np.integer):
            return describe_fn(specialize, align)(int(v))
        if isinstance(v, np.floating):
            return Specialization(dtype_type_string(v.dtype))
    return None


_NDARRAY_READER: Any = None  # (numpy.ndarray, c_void_p.from_address, data field offset), or False


def ndarray_reader() -> Any:
    """``(ndarray, read, off)`` such that ``read(id(a) + off).value`` is the data address of an exact
    ``numpy.ndarray`` ``a`` (PyArrayObject's ``data`` field right after the object header, which
    ``PyArray_DATA`` reads): ~0.3 µs where ``__array_interface__`` takes ~2 µs.  Checked against
    ``__array_interface__`` on sample arrays once; ``False`` (numpy arrays then take ``__array_interface__``)
    when numpy is not imported, on another implementation than CPython, or if the check fails."""
    global _NDARRAY_READER
    if _NDARRAY_READER is not None:
        return _NDARRAY_READER
    np = sys.modules.get("numpy")
    if np is None:
        return False  # not cached: numpy may be imported later
    res: Any = False
    if sys.implementation.name == "cpython":
        import ctypes

        read, off = ctypes.c_void_p.from_address, object.__basicsize__
        base = np.arange(64, dtype=np.int16)
        samples = [base, base[3:], base[1::2], np.zeros((3, 5))[:, 1], np.empty(0, np.float32)]
        if all(read(id(a) + off).value == a.__array_interface__["data"][0] for a in samples):
            res = (np.ndarray, read, off)
    _NDARRAY_READER = res
    return res


__all__ = ["DIVISIBILITY", "Specialization", "decode", "describe_fn", "describe_source", "describe_namespace",
           "constexpr_source",
           "dtype_type_string", "pointer_type", "int_type_string", "is_type_string", "is_constexpr_value",
           "unwrap_constexpr", "hashable_key", "data_pointer", "ndarray_reader", "DTYPE_NAMES", "SCALAR_TYPES",
           "is_tensordesc_type", "is_tensor_descriptor", "tensordesc_type_string", "descriptor_args"]
