"""``tritium.autotune`` and ``tritium.heuristics``: Triton's signatures and behaviour.

``@autotune(configs, key)`` wraps a ``@jit`` function (or a ``@heuristics`` wrapper) in an :class:`Autotuner`.
Launching it (``kernel[grid](...)``) looks up the best config for the current *tuning key*: the values of the
``key`` arguments plus the dtype of every tensor argument.  On a miss it

1. prunes the configs (``prune_configs_by``: ``early_config_prune``, then ``perf_model`` + ``top_k``);
2. optionally loads the result from disk (``cache_results=True`` or ``TRITIUM_CACHE_AUTOTUNING=1``;
   :mod:`.autotune_cache`);
3. compiles the configs in parallel worker processes (:mod:`.precompile`: on by default for GPU backends), so
   that the file cache is warm when the main process benchmarks; configs already compiled in this process are
   never sent to workers; on any failure it falls back to compiling serially while benchmarking;
4. benchmarks every config with the active driver's benchmarker (``tritium.testing.do_bench``), resetting
   (``reset_to_zero``) / restoring (``restore_value``) the named arguments around every run;
5. remembers the fastest config in memory (and on disk), then launches it.

``TRITIUM_PRINT_AUTOTUNING=1`` (or ``TRITON_PRINT_AUTOTUNING``) prints the chosen config and the time spent.
"""
from __future__ import annotations

import builtins
import copy
import functools
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from .._env import env_flag
from ..compiler.launch_states import HeuristicsState, TunedPlan, TunerState
from ..errors import OutOfResources, PTXASError  # noqa: F401  (Triton's names here: triton.runtime.autotuner)
from ..compiler.registry import launch_context
from . import autotune_cache
from .autotune_cache import TuningResult, autotune_cache_dir
from .config import Config
from .jit import JITFunction, KernelInterface, _c_launch, _Subscript, reduce_by_name
from .precompile import CompileJob, PrecompileResult, compiled_in_memory, precompile
from .precompile import enabled as precompile_enabled
from .specialization import is_tensor_descriptor


def _print_autotuning() -> bool:
    return env_flag("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING")


def _base_jit(fn: Any) -> JITFunction:
    """The JITFunction under a chain of Autotuner / Heuristics wrappers."""
    seen = 0
    while not isinstance(fn, JITFunction):
        fn = getattr(fn, "fn", None)
        seen += 1
        if fn is None or seen > 64:
            raise TypeError("autotune/heuristics must wrap a @jit function (or another autotune/heuristics)")
    return fn


# ----------------------------------------------------------------------------------- tensor helpers
_tensorless = object()  # a parameter not given (no dtype to add to a tuning key)
_TENSOR_TYPES: dict = {}  # type -> whether its instances are tensors (a dtype and a shape), decided once per type
_DESCRIPTOR_TYPES: dict = {}  # type -> whether its instances are host tensor descriptors
_DTYPE_NAMES: dict = {}  # dtype -> str(dtype)


def _is_tensor(x: Any) -> bool:
    t = type(x)
    r = _TENSOR_TYPES.get(t)
    if r is None:
        r = _TENSOR_TYPES[t] = hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, (int, float, bool))
    return r


def _is_descriptor(x: Any) -> bool:
    """A host-side tensor descriptor (``TensorDescriptor``: a tensor ``base`` and a ``block_shape``)."""
    t = type(x)
    r = _DESCRIPTOR_TYPES.get(t)
    if r is None:
        r = _DESCRIPTOR_TYPES[t] = hasattr(x, "block_shape") and _is_tensor(getattr(x, "base", None))
    return r


def _dtype_name(dt: Any) -> str:
    try:
        name = _DTYPE_NAMES.get(dt)
    except TypeError:  # unhashable dtype stand-in
        return str(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt)
    return name


def _zero_(x: Any) -> None:
    if hasattr(x, "zero_"):  # torch
        x.zero_()
    elif hasattr(x, "fill"):  # numpy
        x.fill(0)
    else:
        raise TypeError(f"reset_to_zero: cannot zero a {type(x).__name__} (expected a tensor or array)")


def _clone(x: Any) -> Any:
    if hasattr(x, "clone"):  # torch
        return x.clone()
    if hasattr(x, "copy"):  # numpy
        return x.copy()
    raise TypeError(f"restore_value: cannot copy a {type(x).__name__} (expected a tensor or array)")


def _copy_into(dst: Any, src: Any) -> None:
    if hasattr(dst, "copy_"):  # torch
        dst.copy_(src)
    else:
        import numpy as np

        np.copyto(dst, src)


def _key_part(v: Any) -> Any:
    """A hashable, printable stand-in for one tuning-key value (arrays: shape and dtype)."""
    if _is_tensor(v):
        return (tuple(int(s) for s in v.shape), _dtype_name(v.dtype))
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


# ----------------------------------------------------------------------------------- progress bar
class _Progress:
    """A one-line stderr bar, drawn only when stderr is a TTY or TRITIUM_PRINT_AUTOTUNING is set."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done = name, total, 0
        try:
            tty = sys.stderr.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.enabled = total > 1 and (tty or _print_autotuning())
        self._draw()

    def _draw(self, end: str = "") -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        sys.stderr.write(f"\rautotuning {self.name} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{self.done}/{self.total} configs{end}")
        sys.stderr.flush()

    def step(self) -> None:
        self.done += 1
        self._draw()

    def close(self) -> None:
        self._draw(end="\n")


# ----------------------------------------------------------------------------------- Autotuner
class _KernelWrapper:
    """What ``@autotune`` and ``@heuristics`` wrappers share: pickled by their module-level name, as the kernel they
    wrap (:func:`~tritium.runtime.jit.reduce_by_name`); a deep copy has its own state (the wrapped kernel copied as
    :meth:`JITFunction.__deepcopy__` does)."""

    def __reduce_ex__(self, protocol):
        return reduce_by_name(self) or super().__reduce_ex__(protocol)

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new


class Autotuner(_KernelWrapper, _Subscript, KernelInterface):
    """What ``@autotune(...)`` returns; launch it as ``kernel[grid](...)``.

    Attributes: ``fn`` (the wrapped kernel), ``base_fn`` (the ``@jit`` function), ``configs``, ``keys``,
    ``cache`` (tuning key -> best Config), ``best_config`` (of the last launch), ``configs_timings``
    (Config -> timing of the last tuning; timings are ``[median, p20, p80]`` in ms), ``bench_time`` (s),
    ``last_precompile`` (a :class:`~.precompile.PrecompileResult`: how the last tuning compiled its configs),
    ``bench_count`` (tunings that ran benchmarks).
    """

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by: Optional[dict] = None, warmup=None, rep=None,
                 use_cuda_graph=False, do_bench=None, cache_results=False):
        self.fn = fn
        self.base_fn = _base_jit(fn)
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({})]
        for c in self.configs:
            if not isinstance(c, Config):
                raise TypeError(f"autotune of '{self.__name__}': configs must be tritium.Config objects, "
                                f"got {c!r}")
        if isinstance(key, str):
            key = [key]
        self.keys = list(key or [])
        self._positions = {name: i for i, name in enumerate(self.arg_names)}
        self._plans: dict = {}  # tuning key -> TunedPlan (compiler.launch_states): what its relaunch does
        self._device_names: dict = {}  # (launch context, device) -> its part of the tuning key
        self._c_grid_state = None  # fn[grid] in C (see _subscript)
        for k in self.keys:
            if k not in self.arg_names:
                raise ValueError(f"autotune of '{self.__name__}': key '{k}' is not a parameter of the kernel "
                                 f"({', '.join(self.arg_names)})")
        self.reset_to_zero = self._names(reset_to_zero, "reset_to_zero")
        self.restore_value = self._names(restore_value, "restore_value")
        self.restore_copies: dict = {}
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook = pre_hook if pre_hook is not None else self._default_pre_hook
        self.post_hook = post_hook if post_hook is not None else self._default_post_hook

        prune_configs_by = dict(prune_configs_by or {})
        unknown = set(prune_configs_by) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise ValueError(f"autotune of '{self.__name__}': unknown prune_configs_by keys {sorted(unknown)} "
                             f"(expected perf_model, top_k, early_config_prune)")
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")

        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self._user_do_bench = do_bench
        self.cache_results = cache_results or autotune_cache.requested_by_env()

        self.cache: Dict[tuple, Config] = {}
        self.best_config: Optional[Config] = None
        self.configs_timings: Optional[dict] = None
        self.bench_time = 0.0
        self.bench_count = 0
        self.last_precompile: Optional[PrecompileResult] = None
        self.nargs: Optional[dict] = None

    def _names(self, names, what: str) -> list:
        if names is None:
            return []
        if isinstance(names, str):
            names = [names]
        names = list(names)
        for n in names:
            if n not in self.arg_names:
                raise ValueError(f"autotune of '{self.__name__}': {what} names '{n}', which is not a parameter "
                                 f"of the kernel ({', '.join(self.arg_names)})")
        return names

    # ------------------------------------------------------------------------------ hooks
    def _default_pre_hook(self, kwargs: dict, reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            _zero_(kwargs[name])
        if not reset_only:
            self.restore_copies = {name: _clone(kwargs[name]) for name in self.restore_value}

    def _default_post_hook(self, kwargs: dict, exception=None) -> None:
        for name in self.restore_value:
            if name in self.restore_copies:
                _copy_into(kwargs[name], self.restore_copies[name])
        self.restore_copies = {}

    # ------------------------------------------------------------------------------ benchmarking
    @property
    def do_bench(self) -> Callable:
        """``do_bench(fn, quantiles)``: the user's, or the active driver's benchmarker (warmup/rep if given)."""
        if self._user_do_bench is not None:
            return self._user_do_bench
        if self.use_cuda_graph:  # replays of a CUDA graph (host timing where there is none: the interpreter)
            from .bench import do_bench_cudagraph

            rep = self.num_reps if self.num_reps is not None else 20
            return lambda fn, quantiles=None: do_bench_cudagraph(fn, rep=rep, quantiles=quantiles)
        from . import driver

        bench = driver.active.get_benchmarker()
        if self.num_warmups is None and self.num_reps is None:
            return bench
        extra = {}
        if self.num_warmups is not None:
            extra["warmup"] = self.num_warmups
        if self.num_reps is not None:
            extra["rep"] = self.num_reps
        return lambda fn, quantiles=None: bench(fn, quantiles=quantiles, **extra)

    def _check_conflicts(self, config: Config, kwargs: dict) -> None:
        conflicts = (set(kwargs) | set(self.nargs or ())) & set(config.all_kwargs())
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}. Make sure that you "
                             f"don't re-define auto-tuned symbols (kernel '{self.__name__}' got them at launch "
                             f"and from its autotune config {config}).")

    def _bench(self, *args, config: Config, **meta):
        from ..errors import CompilationError, OutOfResources

        self._check_conflicts(config, meta)
        current = dict(meta, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        except OutOfResources:
            return [float("inf")] * 3
        except CompilationError as e:
            if "Static assertion failed" in str(e):
                return [float("inf")] * 3
            raise

    def prune_configs(self, kwargs: dict, nargs: Optional[dict] = None) -> List[Config]:
        nargs = self.nargs if nargs is None else nargs
        pruned = self.configs
        if self.early_config_prune:
            pruned = list(self.early_config_prune(self.configs, nargs, **kwargs))
            if not pruned:
                raise ValueError(f"autotune of '{self.__name__}': early_config_prune left no config")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError("prune_configs_by['top_k'] must be an int, or a float <= 1.0 (a fraction)")
            if len(pruned) > top_k:
                est = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in pruned}
                pruned = sorted(est, key=est.get)[:top_k]
        return pruned

    def _tuning_key(self, args: tuple, kwargs: dict) -> tuple:
        """The values of ``key``'s arguments, the dtypes of the tensors and of the host tensor descriptors' tensors
        (arguments by position, then by name), and the device the kernel runs on (backend, arch, device index): a
        configuration tuned on one GPU is not taken for another, nor one tuned for bf16 descriptors for fp32 ones
        (where its tiles may not fit in shared memory)."""
        n = len(args)
        names = self.arg_names
        key = []
        for k in self.keys:
            i = self._positions[k]
            if i < n:
                key.append(_key_part(args[i]))
            elif k in kwargs:
                key.append(_key_part(kwargs[k]))
        for i, name in enumerate(names):
            v = args[i] if i < n else kwargs.get(name, _tensorless)
            if _is_tensor(v):
                key.append(_dtype_name(v.dtype))
            elif _is_descriptor(v):  # a host TMA descriptor: its tensor's dtype (Triton's key leaves it out)
                key.append(_dtype_name(v.base.dtype))
        ctx = launch_context()
        dev = ctx.device()
        name = self._device_names.get((ctx, dev))
        if name is None:
            name = self._device_names[(ctx, dev)] = f"{ctx.backend}:{ctx.arch or ''}:{dev}"
        key.append(name)
        return tuple(key)

    def _resolved_kwargs(self, args: tuple, kwargs: dict) -> dict:
        """The keyword arguments the base @jit function will get (heuristics under us applied)."""
        fn, kw = self.fn, dict(kwargs)
        while not isinstance(fn, JITFunction):
            if isinstance(fn, Heuristics):
                kw = fn.apply(args, kw)
            fn = fn.fn
        return kw

    def _hooked_arguments(self, args: tuple, kwargs: dict, config: Config) -> tuple:
        """``(args, kwargs)`` as ``config`` launches them: its ``pre_hook`` run first (Liger-Kernel's set the host
        tensor descriptors' block shapes to the config's tiles), each tensor descriptor then copied, so that the next
        config's hook does not change what this config compiles for."""
        if config.pre_hook is None:
            return args, kwargs
        config.pre_hook({**dict(zip(self.arg_names, args)), **kwargs, **config.all_kwargs()})

        def snapshot(v):
            if not is_tensor_descriptor(v):
                return v
            v = copy.copy(v)
            v.block_shape = list(v.block_shape)
            return v
        return tuple(snapshot(v) for v in args), {k: snapshot(v) for k, v in kwargs.items()}

    def _precompile(self, args: tuple, kwargs: dict, configs: List[Config],
                    on_ready: Optional[Callable[[Config], None]] = None) -> PrecompileResult:
        """Compile ``configs`` in worker processes when that is on and worth it (see :mod:`.precompile`);
        ``on_ready(config)`` as soon as a config's kernel is in the file cache (not for a config already compiled
        in this process, nor for any in serial mode: the caller takes those)."""
        if not precompile_enabled():
            return PrecompileResult.serial("parallel precompile is off")
        try:
            jobs = []
            for c in configs:
                a, kw = self._hooked_arguments(args, kwargs, c)
                jobs.append((c, CompileJob(a, self._resolved_kwargs(a, {**kw, **c.all_kwargs()}))))
        except Exception as e:  # noqa: BLE001 - a user's heuristic: it fails again, clearly, when benchmarked
            return PrecompileResult.serial(f"{type(e).__name__}: {e}")
        jobs = [(c, j) for c, j in jobs if not compiled_in_memory(self.base_fn, j)]
        if len(jobs) < 2:
            return PrecompileResult.serial("fewer than 2 configs left to compile")
        ready = None if on_ready is None else (lambda i: on_ready(jobs[i][0]))
        return precompile(self.base_fn, [j for _, j in jobs], on_ready=ready)

    def _subscript(self, grid) -> Callable:
        """``fn[grid]``: the launch below without the keyword plumbing of :meth:`run`.  Where the C helper is
        built, ``fn[grid]`` is then a ``tritium._speedups.GridLaunch`` of ``_c_grid_state``: a tuned key launched
        with positional arguments goes from C to the wrapped kernel's C relaunch (the same key and plan as
        :meth:`_relaunch`), anything else to :meth:`_launch`."""
        if self._c_grid_state is None and len(self.configs) > 1:
            self._c_grid_state = self._c_state()
        return functools.partial(self._launch, grid)

    def _c_state(self) -> Optional[TunerState]:
        """The state of the C relaunch (``TU_*`` in tritium/_speedups.c), or None without the helper or torch."""
        torch = sys.modules.get("torch")
        if _c_launch is None or torch is None:
            return None
        return TunerState(self, vars(self), tuple(self._positions[k] for k in self.keys), len(self.arg_names),
                          _DTYPE_NAMES, self._device_names, self._launch, torch.Tensor, [None, None, None])

    def _launch(self, grid, *args, **kwargs):
        return self._relaunch(grid, args, kwargs)

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        return self._relaunch(grid, args, kwargs)

    def _relaunch(self, grid, args: tuple, kwargs: dict):
        if len(self.configs) > 1:  # tuned before for this key: straight to the kernel's launcher
            key = self._tuning_key(args, kwargs)
            plan = self._plans.get(key)
            if plan is not None and plan.config is self.cache.get(key) and len(args) <= plan.maxpos and \
                    (not kwargs or kwargs.keys().isdisjoint(plan.kwargs)):
                self.best_config = plan.config
                return self.fn[grid](*args, **kwargs, **plan.kwargs)
        else:
            key = None
        return self._run(args, kwargs, grid, key)

    def _run(self, args: tuple, kwargs: dict, grid: Any, key: Optional[tuple]):
        """The launch in full: tune on a new key, check conflicts, run hooks, record the key's plan."""
        self.nargs = dict(zip(self.arg_names, args))
        used_cached_result = True
        from_disk = None
        try:
            if len(self.configs) > 1:
                if key not in self.cache:
                    used_cached_result = False
                    pruned = self.prune_configs(kwargs)
                    for c in pruned:
                        self._check_conflicts(c, kwargs)
                    path = None
                    if self.cache_results and not autotune_cache.disabled():
                        path = autotune_cache.result_path(self.__name__, self.base_fn.cache_key, key, pruned)
                    result = autotune_cache.load(path, pruned) if path else None
                    if result is not None and result.best is not None:
                        self.bench_time = 0.0
                        from_disk = path
                    else:  # measure what is not known (every config, or those added since)
                        known = result.timings if result is not None else {}
                        fresh = self._tune(args, kwargs, [c for c in pruned if c not in known], grid)
                        timings = {**known, **fresh.timings}
                        result = TuningResult(builtins.min(pruned, key=lambda c: _sort_key(timings[c])),
                                              {c: timings[c] for c in pruned})
                        if path:
                            autotune_cache.save(path, self.__name__, key, pruned, result)
                    self.cache[key] = result.best
                    self.configs_timings = result.timings
                    full = {**self.nargs, **kwargs, **result.best.all_kwargs()}
                    self.pre_hook(full, reset_only=True)
                config = self.cache[key]
            else:
                key = None
                config = self.configs[0]
            self.best_config = config
            if _print_autotuning() and not used_cached_result:
                if from_disk:
                    print(f"Tritium autotuning for function {self.__name__},\nwith key as {key},\n"
                          f"loaded from the autotune cache {from_disk},\nbest config selected: {config};",
                          flush=True)
                else:
                    print(f"Tritium autotuning for function {self.__name__},\nwith key as {key},\n"
                          f"finished after {self.bench_time:.2f}s,\nbest config selected: {config};", flush=True)
            self._check_conflicts(config, kwargs)
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            elif key is not None:  # the next launch with this key skips all of the above
                cfg = config.all_kwargs()
                # for the C relaunch (_speedups.c, tuned_fast): each keyword's parameter index in the wrapped
                # function (-1: an option), and the options as the generated launcher keys them, in call order
                params = {n: i for i, n in enumerate(getattr(self.fn, "arg_names", ()))}
                maxpos = min([self._positions.get(k, len(self.arg_names)) for k in cfg], default=len(self.arg_names))
                self._plans[key] = TunedPlan(config, cfg, maxpos, tuple(cfg), tuple(cfg.values()),
                                             tuple(params.get(k, -1) for k in cfg),
                                             tuple((k, v) for k, v in cfg.items() if k not in params))
            return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
        finally:
            self.nargs = None

    def _tune(self, args: tuple, kwargs: dict, configs: List[Config], grid) -> TuningResult:
        start = time.time()
        progress = _Progress(self.__name__, len(configs))
        timings = {}

        def bench(c: Config) -> None:
            timings[c] = self._bench(*args, config=c, grid=grid, **kwargs)
            progress.step()

        try:
            # each config benchmarked as soon as a worker has compiled it, while the others compile; then the
            # rest (already compiled here, failed in a worker, or all of them when compiling serially)
            self.last_precompile = self._precompile(args, kwargs, configs, on_ready=bench)
            for c in configs:
                if c not in timings:
                    bench(c)
        finally:
            progress.close()
        timings = {c: timings[c] for c in configs}  # the configs' order: ties go to the first, as serially
        self.bench_time = time.time() - start
        self.bench_count += 1
        best = builtins.min(timings, key=lambda c: _sort_key(timings[c]))
        return TuningResult(best, timings)

    def warmup(self, *args, grid=None, **kwargs):
        """Compile every (pruned) config for these arguments without launching; returns the kernels.  The configs
        compile in parallel worker processes when precompiling is on (as for tuning: :mod:`.precompile`,
        ``TRITIUM_COMPILE_WORKERS``), the kernels then loaded from the file cache; ``last_precompile`` says how."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            out = []
            pruned = self.prune_configs(kwargs)
            self.last_precompile = self._precompile(args, kwargs, pruned)
            for c in pruned:
                self._check_conflicts(c, kwargs)
                out.append(self.fn.warmup(*args, grid=grid, **kwargs, **c.all_kwargs()))
            return out
        finally:
            self.nargs = None

    @property
    def cache_key(self) -> str:
        return self.base_fn.cache_key

    def __repr__(self) -> str:
        return f"Autotuner({self.base_fn!r}, {len(self.configs)} configs, key={self.keys})"


def _sort_key(t: Any) -> Any:
    if isinstance(t, (list, tuple)):
        return tuple(float(x) for x in t)
    return (float(t),)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
    """Decorator: tune ``configs`` (a list of :class:`tritium.Config`) per value of the ``key`` arguments.

    Same signature and behaviour as ``triton.autotune``:

    * ``prune_configs_by``: ``{"perf_model": f(**args, **meta) -> estimated time, "top_k": int or fraction,
      "early_config_prune": f(configs, named_args, **kwargs) -> configs}``;
    * ``reset_to_zero`` / ``restore_value``: argument names zeroed before / restored after every benchmark
      run (so accumulating kernels stay correct); ``pre_hook(kwargs, reset_only=False)`` /
      ``post_hook(kwargs, exception)`` replace that default behaviour;
    * ``warmup`` / ``rep``: ms given to the benchmarker; ``do_bench(fn, quantiles)`` replaces it;
    * ``cache_results``: keep the result on disk (``$TRITIUM_CACHE_DIR/autotune``) for later processes;
    * ``use_cuda_graph``: benchmark each config with :func:`tritium.testing.do_bench_cudagraph` (``rep`` ms).
    """

    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator


# ----------------------------------------------------------------------------------- heuristics
class Heuristics(_KernelWrapper, _Subscript, KernelInterface):
    """What ``@heuristics(values)`` returns: computes meta-parameters from the arguments at every launch."""

    def __init__(self, fn, arg_names, values: dict):
        self.fn = fn
        self.base_fn = _base_jit(fn)
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__
        self.arg_names = list(arg_names)
        self.values = dict(values)
        self._c_grid_state = None  # fn[grid] in C (see _subscript)

    def apply(self, args: tuple, kwargs: dict) -> dict:
        """``kwargs`` with every heuristic's value added (each sees the arguments and earlier values)."""
        seen = {**self._defaults(), **dict(zip(self.arg_names, args)), **kwargs}
        kwargs = dict(kwargs)
        for name, heur in self.values.items():
            kwargs[name] = seen[name] = heur(dict(seen))
        return kwargs

    def _defaults(self) -> dict:
        d = self.__dict__.get("_default_values")
        if d is None:
            d = self._default_values = {p.name: p.default for p in self.base_fn.params
                                        if p.has_default and p.name in self.arg_names}
        return d

    def _subscript(self, grid) -> Callable:
        """``fn[grid]``: the heuristics' values added, then the wrapped kernel's ``[grid]``.  Where the C helper is
        built, ``fn[grid]`` is then a ``tritium._speedups.GridLaunch`` of ``_c_grid_state`` (``HE_*`` in
        tritium/_speedups.c): the same dict of arguments, each heuristic called on a copy of it, then the wrapped
        kernel's launch from C with the values as keywords; a keyword at the call that a heuristic sets, or more
        positional arguments than parameters, goes to :meth:`_launch`."""
        if self._c_grid_state is None and _c_launch is not None:
            self._c_grid_state = HeuristicsState(self, tuple(self.arg_names), self._defaults(),
                                                 tuple(self.values.items()), tuple(sys.intern(n) for n in self.values),
                                                 self.fn, self._launch)
        return functools.partial(self._launch, grid)

    def _launch(self, grid, *args, **kwargs):
        return self.fn[grid](*args, **self.apply(args, kwargs))

    def run(self, *args, **kwargs):
        return self.fn.run(*args, **self.apply(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self.apply(args, kwargs))

    @property
    def cache_key(self) -> str:
        return self.base_fn.cache_key

    def __repr__(self) -> str:
        return f"Heuristics({self.fn!r}, {sorted(self.values)})"


def heuristics(values: dict):
    """Decorator: ``values`` maps meta-parameter names to ``fn(args: dict) -> value`` (``triton.heuristics``).

    ``args`` holds the launch's arguments by name (positional, keyword, defaults) and, stacked under
    ``@autotune``, the config's meta-parameters.
    """

    def decorator(fn):
        return Heuristics(fn, fn.arg_names, values)

    return decorator


__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics", "precompile", "autotune_cache_dir"]
