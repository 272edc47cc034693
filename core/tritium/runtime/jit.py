"""``@tritium.jit``: the JITFunction that holds a kernel's source and launches it."""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import sys
import textwrap
from typing import Any, Callable, Optional

from .._env import env_flag
from ..compiler import compiler as _compiler
from ..compiler.compiler import ASTSource, options_to_dict
from ..compiler.launch import bound_launch, launch
from ..compiler.registry import current_target, get_compiler, launch_context
from ..errors import CompilationError
from . import dependencies, sources
from .constexpr_fn import ConstexprFunction, constexpr_function  # noqa: F401  (triton.runtime.jit's names)
from .binder import Binder, Bound
from .launch import FastLaunch, KernelCache, arg_getter, grid3, make_launcher
from .reinterpret import TensorWrapper, reinterpret  # noqa: F401  (triton.runtime.jit's names)
from .specialization import is_tensordesc_type, type_canonicalisation_dict  # noqa: F401

from ..compiler.launch import Subscript as _Subscript

try:  # the plain relaunch in C (optional, built with the package)
    from .._speedups import launch as _c_launch
except ImportError:  # pragma: no cover - without a C compiler at install time
    _c_launch = None


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



def _bare(exc: Optional[BaseException]) -> Optional[BaseException]:
    """A copy of ``exc`` without its traceback and chain (its type and message only), or ``exc`` if it cannot be
    copied."""
    if exc is None:
        return None
    try:
        shown = copy.copy(exc)
    except Exception:  # noqa: BLE001 - an exception type that does not copy is shown as it is
        return exc
    shown.__traceback__, shown.__cause__, shown.__context__, shown.__suppress_context__ = None, None, None, True
    return shown

class JITFunction(_Subscript, KernelInterface):
    """A function decorated with ``@tritium.jit``.

    Attributes the frontend reads: ``fn``, ``src`` (dedented source), ``file``, ``starting_line_number``
    (line of the ``def`` in ``file``), ``params`` (list of :class:`KernelParam`), ``arg_names``,
    ``noinline``, ``__globals__``, ``parse()`` (the ``ast.Module`` of ``src`` with line numbers of ``file``).

    Launching (``fn[grid](*args, **kwargs)``, ``fn.run(..., grid=...)``) goes through a launcher generated for
    this kernel (:mod:`tritium.runtime.launch`): a relaunch whose arguments specialise as before maps straight
    to the compiled kernel and the driver's launch function.  Otherwise :meth:`_run` binds the arguments
    (:mod:`tritium.runtime.binder`), looks the specialisation up in the in-memory cache
    (``self.cache[device key][specialisation key]``), compiles on a miss through :func:`tritium.compiler.compile`
    (which consults the file cache), then launches on the active backend's driver.

    ``cache_key`` hashes the source, the ``@jit`` functions it calls (transitively) and the global scalar /
    constexpr values they read (:mod:`tritium.runtime.dependencies`).  Like Triton, those globals are recorded
    (``used_global_vals``) and every launch checks they still hold the compile-time value: a changed one raises
    ``RuntimeError``.
    """

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 noinline: bool = False, debug: Optional[bool] = None, repr=None, launch_metadata=None,
                 source: Optional[str] = None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.noinline = noinline
        self.debug = debug
        # Triton's: the kernel's name in launch metadata, ``repr(specialization)`` (the function's name by default)
        self.repr = _NameRepr(fn.__name__) if repr is None else repr
        self.launch_metadata = launch_metadata
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize or ())}
        dnsa = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize_on_alignment or ())}
        self.do_not_specialize = dns
        self.do_not_specialize_on_alignment = dnsa
        self.params = [KernelParam(i, p, p.name in dns) for i, p in enumerate(self.signature.parameters.values())]
        # the source from its decorators on, dedented; for a function built by exec() / compile() from a string,
        # the string it was compiled from (or ``source``), registered under a pseudo file name (runtime.sources)
        self.src, self.file, self.starting_line_number = sources.find(fn, source)
        self._reset()
        self.pre_run_hooks: list = []
        self.compile_count = 0  # compilations done by run()/warmup() (tests, diagnostics)

    def _reset(self) -> None:
        """Forget everything derived from the source: the AST, the cache key and the globals it read, the files,
        the binder, the generated launcher and the compiled kernels."""
        self._ast = None
        self._eager_code = None  # step-through mode's rewritten code (interpreter backend)
        self._cache_key = None
        self._source_files = None
        self._binder = None
        self._launcher = None  # the generated launcher (runtime.launch.make_launcher), False if none
        self._c_grid_state = None  # its C state: fn[grid] is a tritium._speedups.GridLaunch (see _subscript)
        #: the globals this kernel and its callees read (:class:`tritium.runtime.dependencies.UsedGlobal`)
        self.used_global_vals: Optional[list] = None
        self._globals_check = None  # (used_global_vals, generated check)
        self.cache: dict = KernelCache()

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
        self.file = sources.register(src, self.starting_line_number, self.file)
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

    # -------------------------------------------------------------------------------------- launching
    def add_pre_run_hook(self, hook: Callable) -> None:
        """``hook(*args, **kwargs)`` runs before every launch."""
        self.pre_run_hooks.append(hook)

    @property
    def binder(self) -> Binder:
        if self._binder is None:
            self._binder = Binder(self)
        return self._binder

    def _subscript(self, grid) -> Callable:
        """``fn[grid]``: ``partial(launcher, grid)`` of the generated launcher, or -- where the C helper is built --
        ``partial(tritium._speedups.launch, state, grid)`` (the plain relaunch in C, the launcher otherwise); once
        ``_c_grid_state`` is set, ``fn[grid]`` is the same in C without this frame (a ``_speedups.GridLaunch``)."""
        launcher = self._launcher
        if launcher is None or (launcher is not False and launcher.c_state is None and launcher.before_torch
                                and "torch" in sys.modules):  # torch imported since: its tensors' fast paths
            launcher = self._launcher = make_launcher(self)
        if launcher is False:
            return lambda *args, **kwargs: self._run(args, kwargs, grid)
        state = launcher.c_state
        if state is not None:
            self._c_grid_state = state
            return functools.partial(_c_launch, state, grid)
        return functools.partial(launcher, grid)

    def run(self, *args, grid=None, warmup=False, **kwargs):
        """Bind, specialise, compile on a cache miss, and launch over ``grid`` (unless ``warmup``)."""
        if warmup:
            return self._run(args, kwargs, grid, warmup=True)
        return self[grid](*args, **kwargs)

    def _run(self, args: tuple, kwargs: dict, grid: Any, warmup: bool = False, key: Optional[tuple] = None):
        """The general launch: bind, look up or compile, launch through the checked driver; then, given the
        arguments' descriptor tuple ``key``, record the :class:`~tritium.runtime.launch.FastLaunch` the generated
        launcher uses next time."""
        for hook in self.pre_run_hooks:
            hook(*args, **kwargs)
        used = self.used_global_vals
        if used is None:
            self.cache_key
        elif used and not self._globals_unchanged():
            self.check_globals()
        if self.debug is not None and "debug" not in kwargs:
            kwargs = {**kwargs, "debug": self.debug}
        cache = self.cache
        if type(cache) is not KernelCache:  # someone assigned a plain dict
            self.cache = cache = KernelCache(cache)
        ctx = launch_context()
        dev_key = (ctx.backend, ctx.arch, ctx.device())
        bound = self.binder.bind(args, kwargs, warmup=warmup)
        per_device = cache.setdefault(dev_key, {})
        spec_key = bound.cache_key
        kernel = per_device.get(spec_key)
        if kernel is None:
            kernel = cache.same_target(dev_key, spec_key) or self._compile(bound)
            per_device[spec_key] = kernel
        if warmup:
            return kernel
        g = grid3(self, grid, tuple(bound.values.values()), bound.options, getattr(ctx.driver, "max_grid", None))
        if g[0] and g[1] and g[2]:
            launch(kernel, g, bound.runtime_args)  # checks the backend's deps and device
        if key is not None and ctx.driver.fast_path_ok(bound.runtime_args):  # launched once: later launches with
            # these descriptors take the fast path
            pos = tuple(i for i, n in enumerate(self.arg_names) if n in bound.signature)
            descs = frozenset(i for i in pos if is_tensordesc_type(bound.signature[self.arg_names[i]]))
            drv, fn = bound_launch(kernel, dev_key[2])
            if drv is ctx.driver:
                direct = None if descs else drv.direct_launcher(kernel, dev_key[2], pos, len(self.arg_names))
                cache.fast[(*dev_key, *key)] = FastLaunch(kernel, arg_getter(pos, descs), fn, drv, direct)
        return kernel

    def _compile(self, bound: Bound):
        """Compile ``bound``'s specialisation for the selected target; the options are parsed (and checked)
        once, here, and handed to ``compile()`` as the backend's options object."""
        target = current_target()
        compiler = get_compiler(target.backend)
        try:
            opts = compiler.parse_options(dict(bound.options))
        except TypeError as e:
            raise TypeError(f"kernel '{self.__name__}' (parameters: {', '.join(self.arg_names)}): {e}") from None
        known = options_to_dict(opts)
        for k in bound.options:
            if k not in known:
                raise TypeError(f"kernel '{self.__name__}' got an unexpected keyword argument '{k}' "
                                f"(not a parameter, nor an option of the '{target.backend}' backend)")
        src = ASTSource(self, bound.signature, bound.constexprs, bound.attrs)
        self.compile_count += 1
        try:
            return _compiler.compile(src, target=target, options=opts)
        except CompilationError as e:
            if env_flag("TRITIUM_FULL_TRACEBACK"):
                raise
            # the user's line is in the message: leave out tritium's own frames.  The exception it was raised from
            # stays its ``__cause__`` as in Triton (whose tests and users read ``str(e.__cause__)``), shown without
            # tritium's frames; ``e.internal_cause`` keeps it whole (TRITIUM_FULL_TRACEBACK=1 shows both)
            e.internal_cause = e.__cause__
            raise e.with_traceback(None) from _bare(e.__cause__)

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments without launching: values, type strings like ``"*fp32"``, or a
        ``torch.dtype`` / :class:`MockTensor` for a (16-byte aligned) pointer to that type, as in Triton."""
        return self.run(*map(MockTensor.wrap_dtype, args), grid=grid, warmup=True, **kwargs)

    def explain(self, *args, target=None, pictures=None, **kwargs):
        """What the GPU compiler does with this kernel for these launch arguments (bound and specialised as
        ``fn[grid](*args, **kwargs)`` would): a :class:`tritium.tools.explain.Explanation`, printed as a report.
        ``target``: ``"cuda:80"``, ... (default: the active GPU, else cuda:90); ``pictures``: a directory for the
        layouts as PNGs."""
        from ..tools.explain import explain_launch

        return explain_launch(self, args, kwargs, target=target, pictures=pictures)

    def __call__(self, *args, **kwargs):
        from ..language.core import current_builder_or_none

        b = current_builder_or_none()
        if getattr(b, "eager", False):  # step-through mode: a kernel's Python body calls this function
            return b.call_jit(self, args, kwargs)
        raise RuntimeError(f"'{self.__name__}' is a @jit function: call it inside another @jit function, "
                           f"or launch it with {self.__name__}[grid](...)")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


class _NameRepr:
    """A JITFunction's default ``repr``: its name whatever the specialization (picklable, unlike a lambda)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, _specialization=None) -> str:
        return self.name


def jit(fn: Optional[Callable] = None, *, version=None, repr=None, launch_metadata=None,
        do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None, noinline=False, source=None):
    """Decorate a kernel (``@jit`` or ``@jit(...)``) exactly as ``triton.jit``.  ``source`` (tritium's): the text the
    function was compiled from, for code generators whose functions' source tritium cannot find itself (see
    :mod:`tritium.runtime.sources`); it must compile to the function's code."""

    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           noinline=noinline, debug=debug, repr=repr, launch_metadata=launch_metadata,
                           source=source)

    return decorator(fn) if fn is not None else decorator


class MockTensor:
    """Stands for a tensor in :meth:`JITFunction.warmup`: its dtype, a shape, and an address of 0 (so the
    pointer is specialised as 16-byte aligned), Triton's ``triton.runtime.jit.MockTensor``."""

    def __init__(self, dtype, shape=None):
        self.dtype = dtype
        self.shape = [1] if shape is None else list(shape)

    @staticmethod
    def wrap_dtype(arg):
        """A ``torch.dtype`` as a MockTensor of it; any other argument unchanged."""
        if type(arg).__name__ == "dtype" and type(arg).__module__ == "torch":
            return MockTensor(arg)
        return arg

    @staticmethod
    def data_ptr():
        return 0

    def stride(self):
        strides, n = [], 1
        for d in reversed(self.shape):
            strides.append(n)
            n *= d
        return tuple(reversed(strides))
