"""``triton.runtime.jit``'s ``constexpr_function`` names: defined in :mod:`tritium._constexpr_fn` (below the
language, which uses them)."""
from .._constexpr_fn import ConstexprFunction, constexpr_function  # noqa: F401

__all__ = ["ConstexprFunction", "constexpr_function"]
