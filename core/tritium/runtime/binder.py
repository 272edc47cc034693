"""Binding a launch's arguments to a kernel's parameters, and specialising them (:mod:`.specialization`)."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .specialization import (DIVISIBILITY, Specialization, decode, describe_fn, descriptor_args, hashable_key,
                             is_tensordesc_type, is_type_string, unwrap_constexpr)

_MISSING = object()


@dataclass
class Bound:
    """One launch's arguments, bound and specialised."""

    values: dict  # every parameter by name (constexprs included), in parameter order
    options: dict  # keyword arguments that are not parameters (num_warps, ...)
    key: tuple  # specialisation key (types, divisibility, constexpr values)
    signature: dict = field(default_factory=dict)  # non-constexpr parameter -> type string, in parameter order
    constexprs: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    runtime_args: list = field(default_factory=list)  # in parameter order, non-constexpr only; a host-side
    # tensor descriptor contributes its kernel arguments (base, shape..., strides...)

    @property
    def cache_key(self) -> tuple:
        """The key of this specialisation in a JITFunction's in-memory cache: ``(key, sorted options)``."""
        return (self.key, tuple(sorted((k, hashable_key(v)) for k, v in self.options.items())))


class Binder:
    """Binds ``(*args, **kwargs)`` for one JITFunction (built once per function).

    Each non-constexpr parameter gets the describe function of its specialisation flags
    (:func:`~tritium.runtime.specialization.describe_fn`): the same code the JIT's generated binders inline."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.name = fn.__name__
        self.params = fn.params
        self.index = {p.name: i for i, p in enumerate(self.params)}
        self.describe = [None if p.is_constexpr else
                         describe_fn(p.name not in fn.do_not_specialize,
                                     p.name not in fn.do_not_specialize
                                     and p.name not in fn.do_not_specialize_on_alignment)
                         for p in self.params]

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
                typo = difflib.get_close_matches(p.name, list(options), n=1)
                hint = f"; got unexpected keyword argument '{typo[0]}': did you mean '{p.name}'?" if typo else ""
                if p.is_constexpr:
                    raise TypeError(f"kernel '{self.name}' is missing constexpr argument '{p.name}' "
                                    f"(pass it by keyword: {p.name}=...){hint}")
                raise TypeError(f"kernel '{self.name}' is missing argument '{p.name}'{hint}")
        return vals, options

    def bind(self, args: tuple, kwargs: dict, warmup: bool = False) -> Bound:
        """Bind and specialise; with ``warmup``, type strings (``"*fp32"``, ``"tensordesc<fp16[64, 64]>"``) stand
        for arguments of that type."""
        vals, options = self.bind_values(args, kwargs)
        values, signature, constexprs, attrs, runtime, key = {}, {}, {}, {}, [], []
        for p, v, describe in zip(self.params, vals, self.describe):
            name = p.name
            if describe is None:
                spec = Specialization(None, False, unwrap_constexpr(v))
            elif warmup and (is_type_string(v) or is_tensordesc_type(v)):
                spec = Specialization(v)
            else:
                d = describe(v)
                if d is None:
                    raise TypeError(f"kernel '{self.name}': unsupported type {type(v).__name__} for argument "
                                    f"'{name}' (expected a tensor/array, int, float, bool or None)")
                spec = decode(d)
            if spec.type is None:
                values[name] = constexprs[name] = spec.value
                key.append(("c", hashable_key(spec.value)))
                continue
            values[name] = v
            signature[name] = spec.type
            if spec.divisible:
                attrs[name] = {"tt.divisibility": DIVISIBILITY}
            if is_tensordesc_type(spec.type):
                if spec.type.endswith(",nan>"):  # PaddingOption.PAD_NAN, read by the kernel's descriptor
                    attrs[name] = {**attrs.get(name, {}), "tt.padding": 2}
                runtime.extend(descriptor_args(v) if not isinstance(v, str) else ())
            else:
                runtime.append(v)
            key.append((spec.type, spec.divisible))
        return Bound(values, options, tuple(key), signature, constexprs, attrs, runtime)


__all__ = ["Binder", "Bound"]
