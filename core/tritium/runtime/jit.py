"""``@tritium.jit``: the JITFunction that holds a kernel's source and launches it."""
from __future__ import annotations

import copy
import functools
import importlib
import sys
from typing import Any, Callable, Optional

from .._env import env_flag
from ..compiler import compiler as _compiler
from ..compiler.compiler import ASTSource, options_to_dict
from ..compiler.launch import bound_launch, launch
from ..compiler.registry import current_target, get_compiler, launch_context
from ..errors import CompilationError
from ..source.function import JITCallable, KernelParam  # noqa: F401  (triton.runtime.jit's names)
from ..source.function import set_jit_class
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

#: ``explain_launch(fn, args, kwargs, target=, pictures=)`` of :mod:`tritium.tools.explain`, which sits above the
#: runtime: the ``tritium`` package wires it in (:func:`set_explainer`), so the runtime does not import the tools
_explainer: Optional[Callable] = None


def set_explainer(fn: Optional[Callable]) -> None:
    global _explainer
    _explainer = fn


class JITFunction(JITCallable, _Subscript, KernelInterface):
    """A function decorated with ``@tritium.jit``: a :class:`~tritium.source.function.JITCallable` (its source,
    parameters, AST, cache key and globals check) that launches.

    Launching (``fn[grid](*args, **kwargs)``, ``fn.run(..., grid=...)``) goes through a launcher generated for
    this kernel (:mod:`tritium.runtime.launch`): a relaunch whose arguments specialise as before maps straight
    to the compiled kernel and the driver's launch function.  Otherwise :meth:`_run` binds the arguments
    (:mod:`tritium.runtime.binder`), looks the specialisation up in the in-memory cache
    (``self.cache[device key][specialisation key]``), compiles on a miss through :func:`tritium.compiler.compile`
    (which consults the file cache), then launches on the active backend's driver.
    """

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 noinline: bool = False, debug: Optional[bool] = None, repr=None, launch_metadata=None,
                 source: Optional[str] = None):
        # Triton's: the kernel's name in launch metadata, ``repr(specialization)`` (the function's name by default)
        self.repr = _NameRepr(fn.__name__) if repr is None else repr
        self.launch_metadata = launch_metadata
        super().__init__(fn, do_not_specialize=do_not_specialize,
                         do_not_specialize_on_alignment=do_not_specialize_on_alignment, noinline=noinline,
                         debug=debug, source=source)
        self.pre_run_hooks: list = []
        self.compile_count = 0  # compilations done by run()/warmup() (tests, diagnostics)

    def _reset(self) -> None:
        """Forget everything derived from the source (:meth:`JITCallable._reset`), and the binder, the generated
        launcher and the compiled kernels."""
        super()._reset()
        self._binder = None
        self._launcher = None  # the generated launcher (runtime.launch.make_launcher), False if none
        self._c_grid_state = None  # its C state: fn[grid] is a tritium._speedups.GridLaunch (see _subscript)
        self.cache: dict = KernelCache()

    # -------------------------------------------------------------------------------------- copy and pickle
    #: what a launch derives and a copy builds anew: the binder, the launchers, the compiled kernels
    _RUNTIME_STATE = ("_binder", "_launcher", "_c_grid_state", "cache", "_globals_check", "_eager_code")

    def __getstate__(self) -> dict:
        """What ``pickle`` and ``copy`` keep: the source, parameters, options and hooks, not the compiled kernels
        and launchers (a copy compiles and builds them on its first launch).  The Python function's globals are
        left out where they are its own ``__globals__`` (they come back with the function; pickle finds it by
        name), and so are the globals read, recomputed from them.  Inductor pickles its kernels' JITFunctions and
        deep-copies them for its static launcher, after clearing ``fn``, ``__globals__`` and ``used_global_vals``
        (``CachingAutotuner.prepare_for_pickle``): those are kept as they are."""
        state = self.__dict__.copy()
        for k in self._RUNTIME_STATE:
            state.pop(k, None)
        fn = state.get("fn")
        if fn is not None and state.get("__globals__") is getattr(fn, "__globals__", None):
            del state["__globals__"]
            state["used_global_vals"] = None
            state["_cache_key"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "__globals__" not in state:
            self.__globals__ = self.fn.__globals__
        self._binder = self._launcher = self._c_grid_state = self._globals_check = self._eager_code = None
        self.cache = KernelCache()

    def __reduce_ex__(self, protocol):
        """A kernel its module names (``@jit def k`` at module level, or under ``@autotune`` / ``@heuristics``)
        pickles by that name, as functions do (:func:`reduce_by_name`); any other (Inductor's, whose ``fn`` it
        cleared) by its state (:meth:`__getstate__`)."""
        return reduce_by_name(self) or super().__reduce_ex__(protocol)

    def __deepcopy__(self, memo: dict) -> "JITFunction":
        """A JITFunction of the same source with its own hooks list and no compiled kernels; the Python function,
        its globals and the parsed source are shared, as ``copy`` shares functions."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = self.__getstate__()
        state["pre_run_hooks"] = list(self.pre_run_hooks)
        new.__setstate__(state)
        return new

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
            drv, b = bound_launch(kernel, dev_key[2])
            if drv is ctx.driver:
                direct = None if descs else b.direct(pos, len(self.arg_names))
                cache.fast[(*dev_key, *key)] = FastLaunch(kernel, arg_getter(pos, descs), b.launch, drv, direct)
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
        if _explainer is None:
            raise RuntimeError("kernel.explain needs tritium.tools.explain (import tritium wires it in)")
        return _explainer(self, args, kwargs, target=target, pictures=pictures)

    def _launch_hint(self) -> str:
        return f", or launch it with {self.__name__}[grid](...)"

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def _named_kernel(module: str, qualname: str, hops: int):
    """What module ``module`` names ``qualname``, ``hops`` ``.fn`` steps down (the JITFunction under an
    ``@autotune``: 1): how :func:`reduce_by_name` pickles a kernel."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    for _ in range(hops):
        obj = obj.fn
    return obj


def reduce_by_name(obj):
    """``obj`` (a JITFunction, or an Autotuner / Heuristics wrapping one) as ``pickle`` takes a module-level function:
    by its module and name, when that name leads to ``obj`` itself or, through ``.fn``, to the wrapper around it;
    None otherwise."""
    jf, depth = obj, 0
    while not isinstance(jf, JITFunction):
        jf, depth = getattr(jf, "fn", None), depth + 1
        if jf is None or depth > 8:
            return None
    if jf.fn is None or "<" in jf.__qualname__:
        return None
    cur = sys.modules.get(jf.__module__)
    for part in jf.__qualname__.split("."):
        cur = getattr(cur, part, None)
    for hops in range(9):
        if cur is obj:
            return _named_kernel, (jf.__module__, jf.__qualname__, hops)
        cur = getattr(cur, "fn", None)
        if cur is None:
            return None
    return None


set_jit_class(JITFunction)  # the language's @jit helpers are JITFunctions, as Triton's (source.function.jit)


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
    :mod:`tritium.source.files`); it must compile to the function's code."""

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
