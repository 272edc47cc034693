"""``tritium.runtime.cache``: the on-disk kernel cache under its former name.

The cache lives in :mod:`tritium.compiler.cache` (``compile()`` consults it, and the compiler does not import the
runtime); this module is that module, so that ``from tritium.runtime import cache`` and monkeypatching its
attributes keep working.
"""
import sys

from ..compiler import cache as _cache

sys.modules[__name__] = _cache
