"""Triton 3.6's ``@triton.constexpr_function``, at the bottom of the layering (only :mod:`tritium.errors` below it):
``tritium.language`` decorates its own helpers with it, the runtime re-exports it under Triton's names, and the
frontend calls these at compile time (codegen's ``call``).  Nothing here imports ``tritium.language``
(``import tritium`` stays lazy): the language, when it is imported, hands over its tensor type and the unwrapping
of ``tl.constexpr`` (:func:`bind_language`); before that no such objects exist to be passed.
"""
from __future__ import annotations

import functools

from .errors import SemanticError

_tensor_types: tuple = ()  # tritium.language.core.tensor, once the language is imported


def _unwrap(v):
    return v


def bind_language(tensor_type: type, unwrap) -> None:
    """Called once by ``tritium.language.core``: what a tensor is, and how a ``tl.constexpr`` is unwrapped."""
    global _tensor_types, _unwrap
    _tensor_types, _unwrap = (tensor_type,), unwrap


class ConstexprFunction:
    """Triton's ``@triton.constexpr_function``: a plain Python function a ``@jit`` function calls at compile time
    with compile-time arguments (unwrapped from ``tl.constexpr``); in a kernel its result is a ``tl.constexpr``,
    from host code a plain value.  A tensor argument is an error naming the function."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj, objclass=None):  # a method of a class: bound to the instance
        return self if obj is None else functools.partial(self.__call__, obj)

    def __call__(self, *args, _semantic=None, **kwargs):
        if _tensor_types and any(isinstance(a, _tensor_types) for a in list(args) + list(kwargs.values())):
            raise SemanticError(f"constexpr_function '{self.__name__}' takes compile-time (tl.constexpr) arguments, "
                                "got a tensor")
        return self.fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})

    def __repr__(self):
        return f"<constexpr_function {self.__qualname__}>"


def constexpr_function(fn):
    """Wrap ``fn`` so that ``@jit`` functions call it at compile time on ``tl.constexpr`` arguments (Triton 3.6's
    ``triton.constexpr_function``)."""
    return ConstexprFunction(fn)
