"""The source half of a ``@jit`` function: :class:`JITCallable` (Triton 3.5's name for it) holds the Python function,
its parameters, its source and AST, the cache key over what its code depends on, and the check of the globals it
was compiled with. The frontend compiles calls to any ``JITCallable``; the language's own ``@jit`` helpers
(``tl.randint``, the mx helpers) are ``JITCallable`` (they are called from kernels, never launched); a user's
``@tritium.jit`` function is a :class:`tritium.runtime.jit.JITFunction`, which adds launching.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, Callable, Optional

from . import dependencies, files

#: ``() -> the builder generating code now, or None`` (``tritium.language.core`` installs it when it is imported):
#: a ``@jit`` function called from a kernel's Python body in step-through mode runs through that builder
_current_builder: Optional[Callable[[], Any]] = None


def set_builder_getter(getter: Callable[[], Any]) -> None:
    global _current_builder
    _current_builder = getter


class KernelParam:
    """One parameter of a jit function."""

    def __init__(self, num: int, param: inspect.Parameter, do_not_specialize: bool):
        self.num = num
        self._param = param
        self.do_not_specialize = do_not_specialize

    @property
    def name(self) -> str:
        return self._param.name

    @property
    def annotation(self) -> Any:
        return self._param.annotation

    @property
    def is_constexpr(self) -> bool:
        ann = self._param.annotation
        if ann is inspect.Parameter.empty:
            return False
        if isinstance(ann, str):
            return ann.split(".")[-1] == "constexpr"
        return getattr(ann, "__name__", None) == "constexpr" or ann.__class__.__name__ == "constexpr"

    @property
    def has_default(self) -> bool:
        return self._param.default is not inspect.Parameter.empty

    @property
    def default(self) -> Any:
        return self._param.default


class JITCallable:
    """A ``@jit`` function's source side.

    Attributes the frontend reads: ``fn``, ``src`` (dedented source), ``file``, ``starting_line_number``
    (line of the ``def`` in ``file``), ``params`` (list of :class:`KernelParam`), ``arg_names``,
    ``noinline``, ``__globals__``, ``parse()`` (the ``ast.Module`` of ``src`` with line numbers of ``file``).

    ``cache_key`` hashes the source, the ``@jit`` functions it calls (transitively) and the global scalar /
    constexpr values they read (:mod:`tritium.source.dependencies`).  Like Triton, those globals are recorded
    (``used_global_vals``) and every launch checks they still hold the compile-time value: a changed one raises
    ``RuntimeError``.
    """

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 noinline: bool = False, debug: Optional[bool] = None, source: Optional[str] = None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.noinline = noinline
        self.debug = debug  # @jit(debug=...): part of the cache key (device asserts on or off)
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize or ())}
        dnsa = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize_on_alignment or ())}
        self.do_not_specialize = dns
        self.do_not_specialize_on_alignment = dnsa
        self.params = [KernelParam(i, p, p.name in dns) for i, p in enumerate(self.signature.parameters.values())]
        # the source from its decorators on, dedented; for a function built by exec() / compile() from a string,
        # the string it was compiled from (or ``source``), registered under a pseudo file name (source.files)
        self.src, self.file, self.starting_line_number = files.find(fn, source)
        self._reset()

    def _reset(self) -> None:
        """Forget everything derived from the source: the AST, the cache key and the globals it read, the files
        (:class:`~tritium.runtime.jit.JITFunction` also forgets its launchers and compiled kernels)."""
        self._ast = None
        self._eager_code = None  # step-through mode's rewritten code (interpreter backend)
        self._cache_key = None
        self._source_files = None
        #: the globals this function and its callees read (:class:`tritium.source.dependencies.UsedGlobal`)
        self.used_global_vals: Optional[list] = None
        self._globals_check = None  # (used_global_vals, generated check)

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the source (Triton's name): the next launch compiles ``new_src`` -- a ``def`` with the same
        parameters, e.g. ``k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", "x + y"))``.  Its lines are
        registered under a pseudo file name of their own (``<kernels.py:1a2b3c4d5e6f>``), numbered from the
        function's line, so errors show the new text.  As in Triton, ``@jit`` functions that call this one and were
        compiled already keep their compiled kernels and cache keys."""
        src = textwrap.dedent(new_src)
        try:
            tree = ast.parse(src)
        except SyntaxError as e:
            raise ValueError(f"_unsafe_update_src: the new source of '{self.__name__}' is not valid Python: {e}") \
                from None
        fdef = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(fdef, ast.FunctionDef):
            raise ValueError(f"_unsafe_update_src: the new source of '{self.__name__}' must be one 'def'")
        a = fdef.args
        names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        if names != [p.name for p in self.params]:
            raise ValueError(f"_unsafe_update_src: the new source of '{self.__name__}' has the parameters "
                             f"({', '.join(names)}), the function ({', '.join(p.name for p in self.params)})")
        self.src = src
        self.file = files.register(src, self.starting_line_number, self.file)
        self._reset()

    @property
    def constexpr_names(self) -> list:
        return [p.name for p in self.params if p.is_constexpr]

    @property
    def non_constexpr_names(self) -> list:
        return [p.name for p in self.params if not p.is_constexpr]

    def parse(self) -> ast.Module:
        """The kernel's AST, line numbers matching ``self.file``."""
        if self._ast is None:
            tree = ast.parse(self.src)
            ast.increment_lineno(tree, self.starting_line_number - 1)
            self._ast = tree
        return self._ast

    @property
    def cache_key(self) -> str:
        """Hash of the source, of the ``@jit`` functions it calls (transitively) and of the global values they
        read; stable across machines (no absolute paths)."""
        if self._cache_key is None:
            self._cache_key, self.used_global_vals, files = dependencies.cache_key(self)
            if self._source_files is None:
                self._source_files = files
        return self._cache_key

    @property
    def source_files(self) -> list:
        """This kernel's file and those of the ``@jit`` functions it calls, transitively, in a fixed order: where a
        compiled kernel's source locations point (``compile()`` moves a cached kernel's locations to these files)."""
        if self._source_files is None:  # with cache_key, computed once
            self.cache_key
        return self._source_files

    def check_globals(self) -> None:
        """Raise ``RuntimeError`` if a global value this kernel (or a callee) was compiled with has changed."""
        if self.used_global_vals is None:
            self.cache_key
        dependencies.check_globals(self.__name__, self.used_global_vals)

    def _globals_unchanged(self) -> bool:
        """True when every recorded global is still the very object the kernel was compiled with."""
        chk = self._globals_check
        if chk is None or chk[0] is not self.used_global_vals:
            chk = self._globals_check = (self.used_global_vals,
                                         dependencies.globals_check(self.__name__, self.used_global_vals))
        return chk[1]()

    def __call__(self, *args, **kwargs):
        b = _current_builder() if _current_builder is not None else None
        if getattr(b, "eager", False):  # step-through mode: a kernel's Python body calls this function
            return b.call_jit(self, args, kwargs)
        raise RuntimeError(f"'{self.__name__}' is a @jit function: call it inside another @jit function"
                           + self._launch_hint())

    def _launch_hint(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"JITCallable({self.__module__}:{self.__qualname__})"


dependencies.jit_types = (JITCallable,)  # what a kernel's dependencies count as @jit functions


#: the class the language's own ``@jit`` helpers are made of: :class:`JITCallable` until the runtime is imported
#: (``import tritium`` imports it before any of the language), then ``tritium.runtime.jit.JITFunction``, so that
#: ``isinstance(tl.randint, triton.JITFunction)`` holds, as in Triton
_jit_class: type = JITCallable


def set_jit_class(cls: type) -> None:
    global _jit_class
    _jit_class = cls


def jit(fn: Optional[Callable] = None, *, noinline: bool = False):
    """The language's own ``@jit`` (``tl.randint`` and friends): functions called from kernels."""

    def decorator(f):
        return _jit_class(f, noinline=noinline)

    return decorator(fn) if fn is not None else decorator


__all__ = ["JITCallable", "KernelParam", "jit", "set_builder_getter", "set_jit_class"]
