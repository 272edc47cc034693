"""The rule registry: one lowering rule per op name per backend.

A rule is ``fn(ctx: LoweringContext, op) -> list | None``: it emits LLVM-dialect (and nvvm / arith / scf on
scalars) ops at ``ctx``'s insertion point and returns, for each result of ``op``, the list of per-thread
values (one per register of the result's layout; a scalar is a list of one).  Target-independent rules are
registered under ``GENERIC`` by :mod:`tritium.lowering.rules`; a backend registers its own under its name
(``"cuda"``), and they take precedence.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import LoweringError  # noqa: F401  (defined with every other error)

GENERIC = "*"

_RULES: dict = {}


def register(*names: str, backend: str = GENERIC, override: bool = False) -> Callable:
    """``@register("tt.load", backend="cuda")``: make the decorated function the rule for these op names."""

    def deco(fn):
        table = _RULES.setdefault(backend, {})
        for name in names:
            if name in table and not override and table[name] is not fn:
                raise ValueError(f"a lowering rule for '{name}' is already registered for backend '{backend}' "
                                 f"({table[name].__module__}.{table[name].__name__})")
            table[name] = fn
        return fn

    return deco


def get_rule(name: str, backend: str) -> Optional[Callable]:
    """The backend's rule for ``name``, else the generic one, else None."""
    rule = _RULES.get(backend, {}).get(name)
    if rule is None:
        rule = _RULES.get(GENERIC, {}).get(name)
    return rule


def registered(backend: str = GENERIC) -> list:
    """Op names with a rule for ``backend`` (generic ones included)."""
    names = set(_RULES.get(GENERIC, {}))
    names |= set(_RULES.get(backend, {}))
    return sorted(names)
