"""``@tritium.jit``: the JITFunction that holds a kernel's source and launches it."""
from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from typing import Any, Callable, Optional

from .binder import Binder


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


class KernelInterface:
    """``fn[grid](*args, **kwargs)`` launches ``fn.run(*args, grid=grid, warmup=False, **kwargs)``."""

    def run(self, *args, grid, warmup=False, **kwargs):
        raise NotImplementedError

    def __getitem__(self, grid) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def _normalize_grid(name: str, grid: Any, meta: dict) -> tuple:
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        g = tuple(int(x) for x in grid)
    except TypeError:
        raise TypeError(f"kernel '{name}': grid must be a tuple of ints or a callable returning one, "
                        f"got {grid!r}") from None
    if not 1 <= len(g) <= 3:
        raise ValueError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {g}")
    return g + (1,) * (3 - len(g))


class JITFunction(KernelInterface):
    """A function decorated with ``@tritium.jit``.

    Attributes the frontend reads: ``fn``, ``src`` (dedented source), ``file``, ``starting_line_number``
    (line of the ``def`` in ``file``), ``params`` (list of :class:`KernelParam`), ``arg_names``,
    ``noinline``, ``__globals__``, ``parse()`` (the ``ast.Module`` of ``src`` with line numbers of ``file``).

    Launching (``fn[grid](*args, **kwargs)``) binds the arguments (:mod:`tritium.runtime.binder`), looks the
    specialisation up in an in-memory cache (``self.cache[device][key]``), compiles on a miss through
    :func:`tritium.compiler.compile`, then launches on the active backend's driver.

    TODO(runtime): Triton also checks that global values the kernel read at compile time have not changed
    since; that check (and the file cache, ``TRITIUM_CACHE_DIR``) belongs to the runtime issue.
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
        self.repr = repr
        self.launch_metadata = launch_metadata
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize or ())}
        dnsa = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize_on_alignment or ())}
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
        self._cache_key = None
        self._binder = None
        self.cache: dict = {}  # device key -> specialisation key -> CompiledKernel
        self.pre_run_hooks: list = []
        self.compile_count = 0  # compilations done by run()/warmup() (tests, diagnostics)

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
        """Hash of the source and of the ``@jit`` functions it references (by global name)."""
        if self._cache_key is None:
            self._cache_key = self._compute_cache_key(set())
        return self._cache_key

    def _compute_cache_key(self, seen: set) -> str:
        seen.add(id(self))
        h = hashlib.sha256(self.src.encode())
        h.update(repr((self.noinline, self.debug)).encode())
        names = sorted({n.id for n in ast.walk(self.parse()) if isinstance(n, ast.Name)})
        for n in names:
            dep = self.__globals__.get(n)
            if isinstance(dep, JITFunction) and id(dep) not in seen:
                h.update(f"{n}:{dep._compute_cache_key(seen)}".encode())
        return h.hexdigest()

    # -------------------------------------------------------------------------------------- launching
    def add_pre_run_hook(self, hook: Callable) -> None:
        """``hook(*args, **kwargs)`` runs before every launch."""
        self.pre_run_hooks.append(hook)

    @property
    def binder(self) -> Binder:
        if self._binder is None:
            self._binder = Binder(self)
        return self._binder

    def _device_key(self, driver) -> tuple:
        sel = driver.select()
        return (sel.name, sel.arch, driver.active.get_current_device())

    def run(self, *args, grid=None, warmup=False, **kwargs):
        """Bind, specialise, compile on a cache miss, and launch over ``grid`` (unless ``warmup``)."""
        from . import driver

        for hook in self.pre_run_hooks:
            hook(*args, **kwargs)
        if self.debug is not None and "debug" not in kwargs:
            kwargs["debug"] = self.debug
        bound = self.binder.bind(args, kwargs, warmup=warmup)
        opt_key = tuple(sorted((k, _opt_key(v)) for k, v in bound.options.items()))
        dev_key = self._device_key(driver)
        per_device = self.cache.setdefault(dev_key, {})
        key = (bound.key, opt_key)
        kernel = per_device.get(key)
        if kernel is None:
            kernel = self._compile(bound, driver)
            per_device[key] = kernel
        if warmup:
            return kernel
        if grid is None:
            raise TypeError(f"kernel '{self.__name__}' launched without a grid: use {self.__name__}[grid](...)")
        g = _normalize_grid(self.__name__, grid, {**bound.options, **bound.values})
        if g[0] * g[1] * g[2] == 0:
            return kernel
        driver.launch(kernel, g, bound.runtime_args)
        return kernel

    def _compile(self, bound, driver):
        from ..compiler import ASTSource, compile, options_to_dict

        target = driver.active.get_current_target()
        compiler = driver.get_compiler(target.backend)
        try:
            opts = compiler.parse_options(dict(bound.options))
        except TypeError as e:
            raise TypeError(f"kernel '{self.__name__}': {e}") from None
        known = options_to_dict(opts)
        for k in bound.options:
            if k not in known:
                raise TypeError(f"kernel '{self.__name__}' got an unexpected keyword argument '{k}' "
                                f"(not a parameter, nor an option of the '{target.backend}' backend)")
        for name, v in bound.constexprs.items():
            if callable(v) and not isinstance(v, JITFunction):
                raise TypeError(f"kernel '{self.__name__}': callable constexpr '{name}' is not supported")
        src = ASTSource(self, bound.signature, bound.constexprs, bound.attrs)
        self.compile_count += 1
        return compile(src, target=target, options=dict(bound.options))

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments (values, or type strings like ``"*fp32"``) without launching."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"'{self.__name__}' is a @jit function: call it inside another @jit function, "
                           f"or launch it with {self.__name__}[grid](...)")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def _opt_key(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return (type(v).__name__, repr(v))


def jit(fn: Optional[Callable] = None, *, version=None, repr=None, launch_metadata=None,
        do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None, noinline=False):
    """Decorate a kernel (``@jit`` or ``@jit(...)``) exactly as ``triton.jit``."""

    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           noinline=noinline, debug=debug, repr=repr, launch_metadata=launch_metadata)

    return decorator(fn) if fn is not None else decorator
