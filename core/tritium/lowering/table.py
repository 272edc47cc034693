"""Rule tables: op name -> lowering rule.

A rule is ``rule(ctx, *operands, **params) -> [values per result]`` (see :mod:`tritium.lowering.walker` for what
the operands and params are).  Each family module fills its own table and exposes it as data::

    RULES = Rules()

    @RULES.register("tt.splat")
    def _splat(ctx, src):
        return [src * ctx.nregs(ctx.op.results[0].type)]

:func:`merge` makes one table of several (the generic table, a backend's own); a backend's table is the
generic one updated with its own rules (``{**GENERIC_RULES, **merge(...)}``), which win.
"""
from __future__ import annotations

from typing import Callable

from ..errors import LoweringError


def _where(fn) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


class Rules(dict):
    """A rule table: op name -> rule.  An op registered twice is a :class:`LoweringError`."""

    def register(self, *names: str) -> Callable:
        """``@RULES.register("tt.load")``: make the decorated function the rule for these op names."""

        def deco(fn):
            for name in names:
                self.add(name, fn)
            return fn

        return deco

    def add(self, name: str, fn: Callable) -> None:
        if name in self:
            raise LoweringError(f"two lowering rules for '{name}': {_where(self[name])} and {_where(fn)}")
        self[name] = fn


def merge(*tables) -> Rules:
    """One table with the rules of every table; an op with a rule in two of them is a :class:`LoweringError`."""
    out = Rules()
    for table in tables:
        for name, fn in table.items():
            out.add(name, fn)
    return out
