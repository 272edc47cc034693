"""tl's semantic rules: type promotion, broadcasting, casts, and the MLIR each operation emits -- one name for the
language and the frontend to import (``from . import semantic as _s``), gathering its parts, each a module of its
own along the old file's sections:

* :mod:`.semantic_core`: helpers, type promotion, shapes, casts, arithmetic, creation, reductions and scans,
  debugging (the base: the others build on it);
* :mod:`.semantic_memory`: loads, stores, atomics, block pointers, tensor descriptors;
* :mod:`.semantic_dot`: dots, histogram, gather, inline assembly, external (libdevice) functions.

Every function takes tl values (``tensor``, ``constexpr`` or Python numbers) and returns ``tensor``s; the ops
go through :func:`core.current_builder`.  User mistakes raise :class:`core.SemanticError`.
"""
from .semantic_core import *  # noqa: F401,F403
from .semantic_core import _float_unary, _norm_axis, _op2  # noqa: F401  (the frontend and the language use them)
from .semantic_dot import *  # noqa: F401,F403
from .semantic_memory import *  # noqa: F401,F403
