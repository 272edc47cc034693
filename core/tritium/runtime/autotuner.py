"""``tritium.autotune`` and ``tritium.heuristics``: Triton's signatures and behaviour.

``@autotune(configs, key)`` wraps a ``@jit`` function (or a ``@heuristics`` wrapper) in an :class:`Autotuner`.
Launching it (``kernel[grid](...)``) looks up the best config for the current *tuning key*: the values of the
``key`` arguments plus the dtype of every tensor argument.  On a miss it

1. prunes the configs (``prune_configs_by``: ``early_config_prune``, then ``perf_model`` + ``top_k``);
2. optionally loads the result from the on-disk autotune cache (``cache_results=True`` or
   ``TRITIUM_CACHE_AUTOTUNING=1``): ``<cache dir>/autotune/<kernel>-<hash>.json`` where the hash covers the
   kernel's source (``cache_key``), the backend/target, the tuning key and the configs;
3. compiles the configs in parallel worker processes (:func:`precompile`), so that the file cache is warm
   when the main process benchmarks; on any failure it falls back to compiling serially while benchmarking;
4. benchmarks every config with the active driver's benchmarker (``tritium.testing.do_bench``), resetting
   (``reset_to_zero``) / restoring (``restore_value``) the named arguments around every run;
5. remembers the fastest config in memory (and on disk), then launches it.

Environment: ``TRITIUM_PRINT_AUTOTUNING=1`` (or ``TRITON_PRINT_AUTOTUNING``) prints the chosen config and the
time spent; ``TRITIUM_CACHE_AUTOTUNING=1`` (or ``TRITON_CACHE_AUTOTUNING``) turns the disk cache on for every
autotuner; ``TRITIUM_AUTOTUNE_PRECOMPILE=0|1`` turns the parallel precompile off / forces it on (default: on for GPU
backends, whose compilations the file cache hands to the main process; off for the interpreter, where starting
a worker costs more than compiling); configs already compiled in this process are never sent to workers;
``TRITIUM_AUTOTUNE_PRECOMPILE_TIMEOUT`` (seconds, default 300) bounds it.
"""
from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

from .config import Config
from .jit import JITFunction, KernelInterface

_TRUE = ("1", "true", "yes", "on")


def _env_flag(*names: str) -> bool:
    return any(os.environ.get(n, "").strip().lower() in _TRUE for n in names)


def _print_autotuning() -> bool:
    return _env_flag("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING")


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
def _is_tensor(x: Any) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, (int, float, bool))


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
        return (tuple(int(s) for s in v.shape), str(v.dtype))
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


# ----------------------------------------------------------------------------------- parallel precompile
class _ArgStub:
    """Stands for a tensor argument in a compile worker: same dtype and address (so the same alignment
    specialisation), no data.  The binder reads ``__array_interface__['data'][0]`` and ``dtype``."""

    def __init__(self, addr: int, dtype: str):
        self.dtype = dtype
        self.__array_interface__ = {"data": (addr, False), "shape": (0,), "typestr": "|u1", "version": 3}

    def __reduce__(self):
        return (_ArgStub, (self.__array_interface__["data"][0], self.dtype))


def _stub_args(args: tuple) -> tuple:
    from .binder import data_pointer

    out = []
    for a in args:
        if isinstance(a, (bool, int, float, str, type(None))):
            out.append(a)
            continue
        ptr = data_pointer(a)
        if ptr is not None:
            addr, dtype = ptr
            name = getattr(dtype, "name", None)
            out.append(_ArgStub(int(addr), name if isinstance(name, str) else str(dtype).rsplit(".", 1)[-1]))
        else:
            out.append(a)  # numpy scalars, constexprs: pickled as they are
    return tuple(out)


def _has_main_guard(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return False
    return "__name__ == \"__main__\"" in text or "__name__ == '__main__'" in text


def _main_is_spawn_safe() -> bool:
    """Spawned workers re-import the parent's ``__main__`` script (multiprocessing does): only safe behind a
    ``if __name__ == "__main__"`` guard."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return True  # interactive
    spec = getattr(main, "__spec__", None)
    if spec is not None and (spec.name == "__main__" or spec.name.endswith(".__main__")):
        return True  # python -m pkg: multiprocessing does not re-run it
    return _has_main_guard(path)


def _kernel_locator(fn: JITFunction) -> Optional[tuple]:
    """``(module, qualname, sys.path entry or file)`` a worker can import the kernel from, or None."""
    mod_name = fn.__module__
    qual = fn.__qualname__
    if "<locals>" in qual or "<lambda>" in qual:
        return None
    mod = sys.modules.get(mod_name)
    if mod is None:
        return None
    if mod_name == "__main__":
        path = getattr(mod, "__file__", None)
        if not path or not os.path.exists(path) or not _has_main_guard(path):
            return None
        return ("__main__", qual, os.path.abspath(path))
    return (mod_name, qual, None)


def _worker_init(path: list, target: str) -> None:
    os.environ["TRITIUM_AUTOTUNE_WORKER"] = "1"
    sys.path[:] = list(path)
    from . import driver

    driver.set_active(target)


def _worker_find_kernel(locator: tuple) -> JITFunction:
    mod_name, qual, path = locator
    mod = None
    if mod_name == "__main__":  # multiprocessing already re-imported the script as __mp_main__
        for cand in ("__mp_main__", "__main__"):
            m = sys.modules.get(cand)
            if m is not None and os.path.abspath(getattr(m, "__file__", "") or "") == path:
                mod = m
                break
    if mod is not None:
        pass
    elif mod_name == "__main__":
        spec = importlib.util.spec_from_file_location("__tritium_autotune_main__", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["__tritium_autotune_main__"] = mod
        spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(mod_name)
    obj: Any = mod
    for part in qual.split("."):
        obj = getattr(obj, part)
    # the module attribute is the outermost wrapper; the qualname belongs to the @jit function
    return _base_jit(obj)


def _worker_compile(locator: tuple, cache_key: str, args: tuple, kwargs: dict) -> bool:
    fn = _worker_find_kernel(locator)
    if fn.cache_key != cache_key:
        raise RuntimeError(f"kernel '{fn.__name__}' in the worker differs from the one being tuned")
    fn.warmup(*args, **kwargs)
    return True


def _precompile_mode() -> Optional[bool]:
    v = os.environ.get("TRITIUM_AUTOTUNE_PRECOMPILE", "").strip().lower()
    if v in _TRUE:
        return True
    if v in ("0", "false", "no", "off"):
        return False
    return None


def _active_backend_name() -> Optional[str]:
    try:
        from . import driver

        return driver.select().name
    except Exception:  # noqa: BLE001
        return None


def _compiled_in_memory(fn: JITFunction, args: tuple, kwargs: dict) -> bool:
    """Whether ``fn`` already holds this specialisation in its in-memory cache (False when unsure)."""
    try:
        from . import driver
        from .jit import _opt_key

        kwargs = dict(kwargs)
        if fn.debug is not None and "debug" not in kwargs:
            kwargs["debug"] = fn.debug
        bound = fn.binder.bind(args, kwargs)
        opt_key = tuple(sorted((k, _opt_key(v)) for k, v in bound.options.items()))
        sel = driver.select()
        drv = driver.get_driver(sel.name)
        dev_key = (sel.name, sel.arch, drv.get_current_device() if drv.is_active() else 0)
        return (bound.key, opt_key) in fn.cache.get(dev_key, {})
    except Exception:  # noqa: BLE001
        return False


def _file_cache_available() -> bool:
    return importlib.util.find_spec(f"{__package__}.cache") is not None


def precompile(fn: JITFunction, jobs: List[tuple], timeout: Optional[float] = None) -> dict:
    """Compile ``jobs`` (``(args, kwargs)`` for ``fn.warmup``) in worker processes.

    Returns ``{"mode": "parallel", "ok": n, "failed": m}`` or ``{"mode": "serial", "reason": ...}`` when no
    worker ran (the caller then compiles while benchmarking).  Never raises; never waits past ``timeout``.
    """
    import concurrent.futures as cf
    import multiprocessing

    from . import driver

    locator = _kernel_locator(fn) if _main_is_spawn_safe() else None
    if locator is None:
        return {"mode": "serial", "reason": f"kernel '{fn.__name__}' cannot be imported by a worker "
                                            f"(defined in a function, or a script without a main guard)"}
    if timeout is None:
        timeout = float(os.environ.get("TRITIUM_AUTOTUNE_PRECOMPILE_TIMEOUT", "300"))
    try:
        sel = driver.select()
        target = f"{sel.name}:{sel.arch}" if sel.arch else sel.name
        stub_jobs = [(_stub_args(a), dict(k)) for a, k in jobs]
    except Exception as e:  # noqa: BLE001
        return {"mode": "serial", "reason": f"{type(e).__name__}: {e}"}
    n_workers = max(1, min(len(jobs), os.cpu_count() or 1))
    stats = {"mode": "parallel", "ok": 0, "failed": 0, "errors": []}
    ex = None
    finished = False
    try:
        ex = cf.ProcessPoolExecutor(max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_worker_init, initargs=(list(sys.path), target))
        futs = [ex.submit(_worker_compile, locator, fn.cache_key, a, k) for a, k in stub_jobs]
        done, not_done = cf.wait(futs, timeout=timeout)
        finished = not not_done
        for f in done:
            try:
                f.result()
                stats["ok"] += 1
            except Exception as e:  # noqa: BLE001 - a worker's failure only makes precompile less useful
                stats["failed"] += 1
                stats["errors"].append(f"{type(e).__name__}: {e}")
        if not_done:
            stats["failed"] += len(not_done)
            stats["errors"].append(f"{len(not_done)} compilation(s) timed out after {timeout:.0f}s")
    except Exception as e:  # noqa: BLE001 - pickling, spawning, a broken pool
        return {"mode": "serial", "reason": f"{type(e).__name__}: {e}"}
    finally:
        if ex is not None:
            _shutdown(ex, finished)
    if stats["ok"] == 0:
        return {"mode": "serial", "reason": "; ".join(stats["errors"]) or "no worker compiled"}
    return stats


def _shutdown(ex, finished: bool) -> None:
    """Stop a ProcessPoolExecutor; when work is unfinished, kill its workers instead of waiting for them."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    try:
        ex.shutdown(wait=finished, cancel_futures=True)
    except Exception:  # noqa: BLE001
        pass
    if finished:
        return
    for p in procs:
        try:
            if p.is_alive():
                p.terminate()
        except Exception:  # noqa: BLE001
            pass
    for p in procs:
        try:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        except Exception:  # noqa: BLE001
            pass


# ----------------------------------------------------------------------------------- disk cache
def autotune_cache_dir() -> str:
    """``<kernel cache dir>/autotune``: ``$TRITIUM_CACHE_DIR/autotune`` (default ``~/.tritium/cache/autotune``)."""
    try:
        from .cache import cache_dir

        base = str(cache_dir())
    except ImportError:  # pragma: no cover - the file cache module is part of the runtime
        base = os.environ.get("TRITIUM_CACHE_DIR", "").strip() or os.path.join(os.path.expanduser("~"),
                                                                                ".tritium", "cache")
    return os.path.join(base, "autotune")


def _disk_cache_disabled() -> bool:
    return _env_flag("TRITIUM_DISABLE_CACHE")


def _atomic_write_json(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _timing_to_json(t: Any) -> Any:
    if isinstance(t, (list, tuple)):
        return [_timing_to_json(x) for x in t]
    t = float(t)
    return t if t != float("inf") else "inf"


def _timing_from_json(t: Any) -> Any:
    if isinstance(t, list):
        return [_timing_from_json(x) for x in t]
    return float(t)


# ----------------------------------------------------------------------------------- Autotuner
class Autotuner(KernelInterface):
    """What ``@autotune(...)`` returns; launch it as ``kernel[grid](...)``.

    Attributes: ``fn`` (the wrapped kernel), ``base_fn`` (the ``@jit`` function), ``configs``, ``keys``,
    ``cache`` (tuning key -> best Config), ``best_config`` (of the last launch), ``configs_timings``
    (Config -> timing of the last tuning; timings are ``[median, p20, p80]`` in ms), ``bench_time`` (s),
    ``last_precompile`` (how the last tuning compiled its configs), ``bench_count`` (tunings that ran
    benchmarks).
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
        self.cache_results = cache_results or _env_flag("TRITIUM_CACHE_AUTOTUNING", "TRITON_CACHE_AUTOTUNING")

        self.cache: Dict[tuple, Config] = {}
        self.best_config: Optional[Config] = None
        self.configs_timings: Optional[dict] = None
        self.bench_time = 0.0
        self.bench_count = 0
        self.last_precompile: Optional[dict] = None
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

    def _tuning_key(self, all_args: dict) -> tuple:
        key = [_key_part(all_args[k]) for k in self.keys if k in all_args]
        for name in self.arg_names:
            if name in all_args and _is_tensor(all_args[name]):
                key.append(str(all_args[name].dtype))
        return tuple(key)

    def _resolved_kwargs(self, args: tuple, kwargs: dict) -> dict:
        """The keyword arguments the base @jit function will get (heuristics under us applied)."""
        fn, kw = self.fn, dict(kwargs)
        while not isinstance(fn, JITFunction):
            if isinstance(fn, Heuristics):
                kw = fn.apply(args, kw)
            fn = fn.fn
        return kw

    def _precompile(self, args: tuple, kwargs: dict, configs: List[Config], grid) -> None:
        mode = _precompile_mode()
        if os.environ.get("TRITIUM_AUTOTUNE_WORKER") == "1":
            mode = False
        if mode is None:
            # default: on where compiling is slow (GPU backends) and its result can be shared (the file cache);
            # starting a worker costs more than compiling a kernel for the interpreter
            mode = _file_cache_available() and _active_backend_name() not in (None, "interpreter")
        if not mode:
            self.last_precompile = {"mode": "serial", "reason": "parallel precompile is off"}
            return
        try:
            jobs = [(args, self._resolved_kwargs(args, {**kwargs, **c.all_kwargs()})) for c in configs]
        except Exception as e:  # noqa: BLE001 - a heuristic failing here fails again, clearly, when run
            self.last_precompile = {"mode": "serial", "reason": f"{type(e).__name__}: {e}"}
            return
        jobs = [j for j in jobs if not _compiled_in_memory(self.base_fn, *j)]
        if len(jobs) < 2:
            self.last_precompile = {"mode": "serial", "reason": "fewer than 2 configs left to compile"}
            return
        self.last_precompile = precompile(self.base_fn, jobs)

    def _disk_cache_path(self, tuning_key: tuple, configs: List[Config]) -> Optional[str]:
        from . import driver

        try:
            sel = driver.select()
            target = repr(driver.active.get_current_target())
            compiler = driver.get_compiler(sel.name)
            try:
                backend_hash = str(compiler.hash())
            except Exception:  # noqa: BLE001
                backend_hash = ""
            try:
                from .cache import tritium_code_hash

                code_hash = tritium_code_hash(compiler)
            except Exception:  # noqa: BLE001
                from .. import __version__ as code_hash
        except Exception:  # noqa: BLE001
            return None

        h = hashlib.sha256()
        for part in (code_hash, self.base_fn.cache_key, sel.name, target, backend_hash, repr(tuning_key),
                     *(str(c) for c in configs)):
            h.update(part.encode())
            h.update(b"\0")
        return os.path.join(autotune_cache_dir(), f"{self.__name__[:100]}-{h.hexdigest()[:40]}.json")

    def _load_disk(self, path: str, configs: List[Config]) -> Optional[tuple]:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("configs") != [str(c) for c in configs]:
                return None
            timings = {c: _timing_from_json(t) for c, t in zip(configs, data["timings"])}
            best = configs[int(data["best"])]
            return best, timings
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None  # missing or corrupt: benchmark again

    def _save_disk(self, path: str, tuning_key: tuple, configs: List[Config], timings: dict, best: Config) -> None:
        data = {"kernel": self.__name__, "key": repr(tuning_key), "configs": [str(c) for c in configs],
                "timings": [_timing_to_json(timings[c]) for c in configs], "best": configs.index(best),
                "best_config": str(best)}
        try:
            _atomic_write_json(path, data)
        except OSError:
            pass  # a read-only cache only costs the next process a benchmark

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        self.nargs = dict(zip(self.arg_names, args))
        used_cached_result = True
        from_disk = None
        try:
            if len(self.configs) > 1:
                all_args = {**self.nargs, **kwargs}
                key = self._tuning_key(all_args)
                if key not in self.cache:
                    used_cached_result = False
                    pruned = self.prune_configs(kwargs)
                    for c in pruned:
                        self._check_conflicts(c, kwargs)
                    path = self._disk_cache_path(key, pruned) \
                        if self.cache_results and not _disk_cache_disabled() else None
                    loaded = self._load_disk(path, pruned) if path else None
                    if loaded is not None:
                        best, timings = loaded
                        self.bench_time = 0.0
                        from_disk = path
                    else:
                        best, timings = self._tune(args, kwargs, pruned, grid)
                        if path:
                            self._save_disk(path, key, pruned, timings, best)
                    self.cache[key] = best
                    self.configs_timings = timings
                    full = {**self.nargs, **kwargs, **best.all_kwargs()}
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
            return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
        finally:
            self.nargs = None

    def _tune(self, args: tuple, kwargs: dict, configs: List[Config], grid) -> tuple:
        start = time.time()
        self._precompile(args, kwargs, configs, grid)
        progress = _Progress(self.__name__, len(configs))
        timings = {}
        try:
            for c in configs:
                timings[c] = self._bench(*args, config=c, grid=grid, **kwargs)
                progress.step()
        finally:
            progress.close()
        self.bench_time = time.time() - start
        self.bench_count += 1
        best = builtins.min(timings, key=lambda c: _sort_key(timings[c]))
        return best, timings

    def warmup(self, *args, grid=None, **kwargs):
        """Compile every (pruned) config for these arguments without launching; returns the kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            out = []
            for c in self.prune_configs(kwargs):
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
    * ``use_cuda_graph``: accepted; tritium benchmarks with the regular benchmarker.
    """

    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator


# ----------------------------------------------------------------------------------- heuristics
class Heuristics(KernelInterface):
    """What ``@heuristics(values)`` returns: computes meta-parameters from the arguments at every launch."""

    def __init__(self, fn, arg_names, values: dict):
        self.fn = fn
        self.base_fn = _base_jit(fn)
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__
        self.arg_names = list(arg_names)
        self.values = dict(values)

    def apply(self, args: tuple, kwargs: dict) -> dict:
        """``kwargs`` with every heuristic's value added (each sees the arguments and earlier values)."""
        kwargs = dict(kwargs)
        for name, heur in self.values.items():
            kwargs[name] = heur({**self._defaults(), **dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def _defaults(self) -> dict:
        return {p.name: p.default for p in self.base_fn.params
                if p.has_default and p.name in self.arg_names}

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
