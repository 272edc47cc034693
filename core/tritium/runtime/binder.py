"""Binding a launch's arguments to a kernel's parameters, their type strings and Triton's specialisation.

* type strings: arrays/tensors -> ``"*fp32"`` (from the dtype), ``int`` -> ``"i32"`` / ``"i64"`` / ``"u64"``,
  ``float`` -> ``"fp32"``, ``bool`` -> ``"i1"``; ``None`` and ``tl.constexpr`` values are constexprs;
* specialisation (unless ``do_not_specialize``): ints equal to 1 become constexprs, ints divisible by 16 and
  pointers aligned to 16 bytes (unless ``do_not_specialize_on_alignment``) get ``{"tt.divisibility": 16}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_MISSING = object()
DIVISIBILITY = 16

#: dtype name (torch ``torch.<name>``, numpy ``dtype.name``, ml_dtypes) -> Triton type string
DTYPE_NAMES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
    "float64": "fp64", "double": "fp64",
    "int8": "i8", "int16": "i16", "short": "i16", "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1", "bool_": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
}

SCALAR_TYPES = {"i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e5", "fp8e4b8",
                "fp8e5b16", "fp16", "bf16", "fp32", "fp64"}


def is_type_string(s: Any) -> bool:
    """``"*fp32"``, ``"i32"``, ... (as warmup() accepts instead of values)."""
    return isinstance(s, str) and (s.lstrip("*") in SCALAR_TYPES) and s.count("*") <= 1


def _dtype_type_string(dtype: Any) -> str:
    name = str(dtype).rsplit(".", 1)[-1]  # torch.float32 -> float32; numpy dtype('float32') prints float32
    if hasattr(dtype, "name") and isinstance(dtype.name, str):
        name = dtype.name
    try:
        return DTYPE_NAMES[name]
    except KeyError:
        raise TypeError(f"unsupported tensor element type {dtype}") from None


def _is_constexpr_value(v: Any) -> bool:
    cls = type(v)
    return cls.__name__ in ("constexpr", "dtype", "pointer_type", "block_type") and \
        cls.__module__.startswith(("tritium.language", "triton.language"))


def unwrap_constexpr(v: Any) -> Any:
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        return v.value
    return v


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


def int_type_string(v: int) -> str:
    if -(2 ** 31) <= v < 2 ** 31:
        return "i32"
    if -(2 ** 63) <= v < 2 ** 63:
        return "i64"
    if 2 ** 63 <= v < 2 ** 64:
        return "u64"
    raise OverflowError(f"integer argument {v} does not fit in 64 bits")


@dataclass
class Bound:
    """One launch's arguments, bound and specialised."""

    values: dict  # every parameter by name (constexprs included), in parameter order
    options: dict  # keyword arguments that are not parameters (num_warps, ...)
    key: tuple  # specialisation key (types, divisibility, ==1, constexpr values)
    signature: dict = field(default_factory=dict)  # non-constexpr parameter -> type string
    constexprs: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    runtime_args: list = field(default_factory=list)  # in parameter order, non-constexpr only


class Binder:
    """Binds ``(*args, **kwargs)`` for one JITFunction (built once per function)."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.name = fn.__name__
        self.params = fn.params
        self.index = {p.name: i for i, p in enumerate(self.params)}
        self.dns = set(fn.do_not_specialize)
        self.dnsa = set(fn.do_not_specialize_on_alignment)

    # -------------------------------------------------------------------------------------- binding
    def bind_values(self, args: tuple, kwargs: dict) -> tuple:
        params = self.params
        n = len(params)
        if len(args) > n:
            raise TypeError(f"kernel '{self.name}' takes {n} argument{'s' if n != 1 else ''} "
                            f"({', '.join(p.name for p in params)}) but {len(args)} were given")
        vals = list(args) + [_MISSING] * (n - len(args))
        options = {}
        for k, v in kwargs.items():
            i = self.index.get(k)
            if i is None:
                options[k] = v
            elif vals[i] is not _MISSING:
                raise TypeError(f"kernel '{self.name}' got multiple values for argument '{k}'")
            else:
                vals[i] = v
        for i, p in enumerate(params):
            if vals[i] is _MISSING:
                if p.has_default:
                    vals[i] = p.default
                    continue
                import difflib

                typo = difflib.get_close_matches(p.name, list(options), n=1)
                hint = f"; got unexpected keyword argument '{typo[0]}': did you mean '{p.name}'?" if typo else ""
                if p.is_constexpr:
                    raise TypeError(f"kernel '{self.name}' is missing constexpr argument '{p.name}' "
                                    f"(pass it by keyword: {p.name}=...){hint}")
                raise TypeError(f"kernel '{self.name}' is missing argument '{p.name}'{hint}")
        return vals, options

    def bind(self, args: tuple, kwargs: dict, warmup: bool = False) -> Bound:
        vals, options = self.bind_values(args, kwargs)
        values, signature, constexprs, attrs, runtime, key = {}, {}, {}, {}, [], []
        for p, v in zip(self.params, vals):
            name = p.name
            if p.is_constexpr or _is_constexpr_value(v):
                v = unwrap_constexpr(v)
                values[name] = v
                constexprs[name] = v
                key.append(("c", _const_key(v)))
                continue
            values[name] = v
            if v is None:
                constexprs[name] = None
                key.append(("c", "None"))
                continue
            ty, spec = self._specialize(name, v, warmup)
            if spec == "1":
                constexprs[name] = 1
                key.append(("c", _const_key(1)))
                continue
            signature[name] = ty
            if spec == "D":
                attrs[name] = {"tt.divisibility": DIVISIBILITY}
            runtime.append(v)
            key.append((ty, spec))
        return Bound(values, options, tuple(key), signature, constexprs, attrs, runtime)

    # -------------------------------------------------------------------------------------- types
    def _specialize(self, name: str, v: Any, warmup: bool) -> tuple:
        """``(type string, spec)``: spec is ``"1"`` (==1), ``"D"`` (divisible by 16 / aligned) or ``""``."""
        no_spec = name in self.dns
        if isinstance(v, bool):
            return "i1", ""
        if isinstance(v, int):
            ty = int_type_string(v)
            if no_spec:
                return ty, ""
            if v == 1:
                return ty, "1"
            return ty, ("D" if v % DIVISIBILITY == 0 else "")
        if isinstance(v, float):
            return "fp32", ""
        if warmup and is_type_string(v):
            return v, ""
        ptr = data_pointer(v)
        if ptr is not None:
            addr, dtype = ptr
            ty = "*" + _dtype_type_string(dtype)
            aligned = addr % DIVISIBILITY == 0 and not no_spec and name not in self.dnsa
            return ty, ("D" if aligned else "")
        # numpy scalars
        try:
            import numpy as np
        except ImportError:  # pragma: no cover
            np = None
        if np is not None and isinstance(v, np.generic):
            if isinstance(v, np.bool_):
                return "i1", ""
            if isinstance(v, np.integer):
                return self._specialize(name, int(v), warmup)
            if isinstance(v, np.floating):
                return _dtype_type_string(v.dtype), ""
        raise TypeError(f"kernel '{self.name}': unsupported type {type(v).__name__} for argument '{name}' "
                        f"(expected a tensor/array, int, float, bool or None)")


def _const_key(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return (type(v).__name__, repr(v))
