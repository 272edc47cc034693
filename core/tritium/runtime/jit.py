"""``@tritium.jit``: the JITFunction that holds a kernel's source and launches it."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, Callable, Optional


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


class JITFunction:
    """A function decorated with ``@tritium.jit``.

    Attributes the frontend reads: ``fn``, ``src`` (dedented source), ``file``, ``starting_line_number``
    (line of the ``def`` in ``file``), ``params`` (list of :class:`KernelParam`), ``arg_names``,
    ``noinline``, ``__globals__``, ``parse()`` (the ``ast.Module`` of ``src`` with line numbers of ``file``).
    """

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 noinline: bool = False, debug: Optional[bool] = None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.noinline = noinline
        self.debug = debug
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = {self.arg_names[i] if isinstance(i, int) else i for i in do_not_specialize}
        dnsa = {self.arg_names[i] if isinstance(i, int) else i for i in do_not_specialize_on_alignment}
        self.do_not_specialize = dns
        self.do_not_specialize_on_alignment = dnsa
        self.params = [KernelParam(i, p, p.name in dns) for i, p in enumerate(self.signature.parameters.values())]
        lines, start = inspect.getsourcelines(fn)
        # drop decorators: the source starts at the ``def`` line
        src = textwrap.dedent("".join(lines))
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.starting_line_number = start
        self.src = src
        self._ast = None

    @property
    def constexpr_names(self) -> list:
        return [p.name for p in self.params if p.is_constexpr]

    def parse(self) -> ast.Module:
        """The kernel's AST, line numbers matching ``self.file``."""
        if self._ast is None:
            tree = ast.parse(self.src)
            ast.increment_lineno(tree, self.starting_line_number - 1)
            self._ast = tree
        return self._ast

    def __getitem__(self, grid) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def run(self, *args, grid, **kwargs):  # filled in by the runtime (binder, cache, launch)
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"'{self.__name__}' is a @jit function: call it inside another @jit function, "
                           f"or launch it with {self.__name__}[grid](...)")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn: Optional[Callable] = None, *, version=None, repr=None, launch_metadata=None,
        do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None, noinline=False):
    """Decorate a kernel (``@jit`` or ``@jit(...)``) exactly as ``triton.jit``."""

    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           noinline=noinline, debug=debug, repr=repr, launch_metadata=launch_metadata)

    return decorator(fn) if fn is not None else decorator
