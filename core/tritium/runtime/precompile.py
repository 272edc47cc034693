"""The autotuner's parallel precompile: a kernel's configs compiled in spawned worker processes, so that the
file cache is warm when the main process benchmarks them.

A worker imports the kernel from where it is defined (:class:`KernelLocator`: a module and qualified name, or
a script behind a main guard), checks that its ``cache_key`` is the one being tuned, and compiles each
:class:`CompileJob` with ``JITFunction.warmup`` into the file cache, where the main process finds the kernels.
Tensor arguments travel as stubs with the same dtype and address (hence the same specialisation) and no data.

Precompiling only saves time: whatever goes wrong (a kernel a worker cannot import, a worker failing or timing
out, a pool that cannot start) leaves the main process to compile serially while benchmarking, with the reason
in the :class:`PrecompileResult`.

The pool is the process's own and outlives a tuning: its workers are spawned on demand, pay for their imports
(tritium, the MLIR bindings, the kernel's module and whatever that imports -- torch, a kernel library) once, and
compile every later tuning's configs; it is replaced when the target, ``sys.path`` or a ``TRITIUM_*`` /
``TRITON_*`` variable changes (a worker took them when it started), and killed when a tuning times out or is
stopped.  How many compilations run at once is decided per tuning: a process on an idle machine uses every CPU;
one of a parallel job (pytest-xdist workers, torchrun's ranks) its share of them; one among busy processes (a data
loader) what is free; and it compiles in itself when that is one CPU or none (a worker would only compete with the
others; see :func:`parallelism`).

Environment: ``TRITIUM_AUTOTUNE_PRECOMPILE=0|1`` turns it off / forces it on (default: on for GPU backends with
the file cache on, whose compilations the cache hands to the main process; off for the interpreter, where
starting a worker costs more than compiling); ``TRITIUM_AUTOTUNE_PRECOMPILE_TIMEOUT`` (seconds, default 300)
bounds it; ``TRITIUM_COMPILE_WORKERS`` fixes the number of workers (default: the CPU count, and at most the free
CPUs at once).  Workers run with ``TRITIUM_AUTOTUNE_WORKER=1`` and never precompile themselves.
"""
from __future__ import annotations

import atexit
import importlib
import importlib.util
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

from ..errors import BackendUnavailable
from .jit import JITFunction

_ENV_MODE = "TRITIUM_AUTOTUNE_PRECOMPILE"
_ENV_TIMEOUT = "TRITIUM_AUTOTUNE_PRECOMPILE_TIMEOUT"
_ENV_WORKER = "TRITIUM_AUTOTUNE_WORKER"


class CompileJob(NamedTuple):
    """One compilation: the arguments of ``fn.warmup(*args, **kwargs)`` (a config's meta-parameters included)."""

    args: tuple
    kwargs: dict


class KernelLocator(NamedTuple):
    """Where a worker imports a ``@jit`` function from: ``module`` and ``qualname``; ``path``, the script's file
    when the module is ``__main__`` (else None)."""

    module: str
    qualname: str
    path: Optional[str]


@dataclass(frozen=True)
class PrecompileResult:
    """How an autotuning compiled its configs: ``mode`` ``"parallel"`` (``ok`` / ``failed`` jobs, ``errors``:
    why some failed) or ``"serial"`` (``reason``: why no worker compiled anything)."""

    mode: str
    ok: int = 0
    failed: int = 0
    errors: Tuple[str, ...] = ()
    reason: str = ""

    @classmethod
    def serial(cls, reason: str) -> "PrecompileResult":
        return cls("serial", reason=reason)


def _configured_workers() -> Optional[int]:
    v = os.environ.get("TRITIUM_COMPILE_WORKERS", "").strip()
    if not v:
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"TRITIUM_COMPILE_WORKERS={v!r} is not a number of workers") from None
    if n < 1:
        raise ValueError(f"TRITIUM_COMPILE_WORKERS={v!r}: at least 1")
    return n


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compile_workers() -> int:
    """The compile pool's size: ``TRITIUM_COMPILE_WORKERS``, else the usable CPUs."""
    n = _configured_workers()
    return n if n is not None else usable_cpus()


def busy_cpus() -> float:
    """How many CPUs other processes keep busy: the larger of the one-minute load average and the threads
    runnable right now (Linux's ``/proc/loadavg``, which sees a burst the average has not yet), less this one.
    In a container both are usually the host's: a busy host makes tunings compile in the process, as Triton's
    always do (``TRITIUM_COMPILE_WORKERS`` sets the workers whatever the load)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            load = max(load, float(f.read().split()[3].split("/")[0]))
    except (OSError, ValueError, IndexError):
        pass
    return max(0.0, load - 1.0)


def peer_processes() -> int:
    """How many processes of one parallel job share the machine's CPUs with this one: pytest-xdist's workers
    (``PYTEST_XDIST_WORKER_COUNT``), the ranks torchrun starts on this node (``LOCAL_WORLD_SIZE``); else 1.

    The load average cannot stand in for them: such processes start their tunings together, before the load
    rises, and each pool's workers import torch and the kernel library (Liger-Kernel's test_mlp under 11
    pytest-xdist workers on a 16-CPU GPU host: none of 11 cases finished in 240 s with a pool per worker, all
    passed in 204 s without)."""
    n = 1
    for var in ("PYTEST_XDIST_WORKER_COUNT", "LOCAL_WORLD_SIZE"):
        try:
            n = max(n, int(os.environ.get(var, "")))
        except ValueError:
            pass
    return n


def parallelism(n_jobs: int, cpus: Optional[int] = None, busy: Optional[float] = None,
                peers: Optional[int] = None) -> int:
    """How many of ``n_jobs`` compilations to run at once in workers; 0: compile in this process instead.

    ``TRITIUM_COMPILE_WORKERS`` when set (the user's number, whatever the load); else this process's share of the
    CPUs (``cpus`` / ``peers``, default :func:`usable_cpus` and :func:`peer_processes`), at most the CPUs that
    others leave free (``cpus`` - ``busy``, default :func:`busy_cpus`); 0 when that is one CPU or none: one
    worker beside a busy machine only adds its start-up to the compile."""
    configured = _configured_workers()
    if configured is not None:
        return max(1, min(n_jobs, configured))
    cpus = usable_cpus() if cpus is None else cpus
    busy = busy_cpus() if busy is None else busy
    peers = peer_processes() if peers is None else max(1, peers)
    free = min(cpus // peers, math.floor(cpus - busy + 0.5))
    return min(n_jobs, free) if free >= 2 else 0

def enabled() -> bool:
    """Whether to precompile in workers now (see the module docstring)."""
    if os.environ.get(_ENV_WORKER) == "1":
        return False
    v = os.environ.get(_ENV_MODE, "").strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    # default: where compiling is slow (GPU backends) and its result can be shared (the file cache is on)
    from . import cache, driver

    try:
        backend = driver.select().name
    except BackendUnavailable:
        return False  # nothing can run: the launch says why
    return backend != "interpreter" and cache.disabled_reason() is None


def compiled_in_memory(fn: JITFunction, job: CompileJob) -> bool:
    """Whether ``fn`` already holds ``job``'s specialisation in its in-memory cache (False when unsure)."""
    try:
        from . import driver

        kwargs = dict(job.kwargs)
        if fn.debug is not None and "debug" not in kwargs:
            kwargs["debug"] = fn.debug
        bound = fn.binder.bind(job.args, kwargs)
        sel = driver.select()
        drv = driver.get_driver(sel.name)
        dev_key = (sel.name, sel.arch, drv.get_current_device() if drv.is_active() else 0)
        return bound.cache_key in fn.cache.get(dev_key, {})
    except Exception:  # noqa: BLE001 - arguments the binder rejects: the launch reports them; a wrong False
        return False  # only sends a job to a worker that compiles it again


# ----------------------------------------------------------------------------------------------- main process
def precompile(fn: JITFunction, jobs: List[CompileJob], timeout: Optional[float] = None,
               on_ready: Optional[Callable[[int], None]] = None) -> PrecompileResult:
    """Compile ``jobs`` for ``fn`` in worker processes; never waits past ``timeout`` seconds.

    ``on_ready(i)`` is called in this process as soon as ``jobs[i]`` is compiled (in completion order, while the
    workers go on with the others): the autotuner benchmarks a config there. Nothing else raises; an exception
    of ``on_ready`` stops the pool and propagates. Mode ``serial`` when no worker compiled anything (the caller
    then compiles while benchmarking).
    """
    import concurrent.futures as cf

    from . import driver

    locator = _kernel_locator(fn) if _main_is_spawn_safe() else None
    if locator is None:
        return PrecompileResult.serial(f"kernel '{fn.__name__}' cannot be imported by a worker "
                                       f"(defined in a function, or a script without a main guard)")
    if timeout is None:
        timeout = float(os.environ.get(_ENV_TIMEOUT, "300"))
    try:
        sel = driver.select()
        target = f"{sel.name}:{sel.arch}" if sel.arch else sel.name
        stub_jobs = [CompileJob(_stub_args(j.args), dict(j.kwargs)) for j in jobs]
    except Exception as e:  # noqa: BLE001 - no backend, arguments we cannot stub: the main process's
        return PrecompileResult.serial(f"{type(e).__name__}: {e}")  # launch reports them when it compiles
    at_once = parallelism(len(jobs))
    if not at_once:
        peers = peer_processes()
        return PrecompileResult.serial(f"no CPU free for a compile worker ({usable_cpus()} CPUs, "
                                       f"{busy_cpus():.1f} busy" + (f", {peers} processes of one job" if peers > 1
                                                                    else "") + ")")
    ok, errors = 0, []
    done = 0
    finished = False
    caller_error: Optional[BaseException] = None
    with _POOL_LOCK:  # one tuning at a time uses the pool (another thread's tuning waits for it)
        try:
            ex = _pool(target)
            queue = list(enumerate(stub_jobs))
            queue.reverse()
            pending = {}
            deadline = time.monotonic() + timeout
            while queue or pending:
                while queue and len(pending) < at_once:  # at most at_once in flight: workers spawn as needed
                    i, job = queue.pop()
                    pending[ex.submit(_worker_compile, locator, fn.cache_key, job)] = i
                left = deadline - time.monotonic()
                ready, _ = cf.wait(pending, timeout=max(left, 0), return_when=cf.FIRST_COMPLETED)
                if not ready:
                    break  # timed out
                for f in ready:
                    i = pending.pop(f)
                    done += 1
                    try:
                        f.result()
                    except Exception as e:  # noqa: BLE001 - a worker's failure only makes precompile less useful
                        errors.append(f"{type(e).__name__}: {e}")
                        continue
                    ok += 1
                    if on_ready is not None:
                        try:
                            on_ready(i)
                        except BaseException as e:  # noqa: BLE001 - the caller's: raised once the pool is stopped
                            caller_error = e
                            break
                if caller_error is not None:
                    break
            not_done = len(jobs) - done
            finished = not not_done
            if not_done and caller_error is None:
                errors.append(f"{not_done} compilation(s) timed out after {timeout:.0f}s")
            failed = done - ok + not_done
        except Exception as e:  # noqa: BLE001 - pickling, spawning, a broken pool: compile serially instead
            _drop_pool()
            if ok:  # some configs were handed to on_ready already
                return PrecompileResult("parallel", ok=ok, failed=len(jobs) - ok,
                                        errors=(f"{type(e).__name__}: {e}",))
            return PrecompileResult.serial(f"{type(e).__name__}: {e}")
        if not finished or getattr(ex, "_broken", False):
            _drop_pool()  # workers still compiling what nobody waits for, or dead ones: a fresh pool next time
    if caller_error is not None:
        raise caller_error
    if ok == 0:
        return PrecompileResult.serial("; ".join(errors) or "no worker compiled")
    return PrecompileResult("parallel", ok=ok, failed=failed, errors=tuple(errors))


# ----------------------------------------------------------------------------------------------- the pool
_POOL_LOCK = threading.RLock()
_POOL: Optional[tuple] = None  # (key, executor): the process's compile pool


def _pool_key(target: str) -> tuple:
    """What the workers took when they started: a pool is reused only while all of it is unchanged."""
    env = tuple(sorted((k, v) for k, v in os.environ.items()
                       if k.startswith(("TRITIUM_", "TRITON_")) and k != _ENV_WORKER))
    return os.getpid(), target, tuple(sys.path), env, compile_workers()


def _pool(target: str):
    """The process's compile pool for ``target`` (made, or remade when its key changed)."""
    import concurrent.futures as cf
    import multiprocessing

    global _POOL
    key = _pool_key(target)
    if _POOL is not None and _POOL[0] == key:
        return _POOL[1]
    _drop_pool()
    ex = cf.ProcessPoolExecutor(max_workers=key[-1], mp_context=multiprocessing.get_context("spawn"),
                                initializer=_worker_init, initargs=(list(sys.path), target))
    _POOL = (key, ex)
    return ex


def _drop_pool() -> None:
    """Stop the compile pool, killing its workers (a forked child only forgets its parent's)."""
    global _POOL
    pool, _POOL = _POOL, None
    if pool is not None and pool[0][0] == os.getpid():
        _shutdown(pool[1], False)


def pool_pids() -> List[int]:
    """The process ids of the compile pool's live workers (none before the first parallel tuning)."""
    pool = _POOL
    if pool is None or pool[0][0] != os.getpid():
        return []
    return sorted(p.pid for p in (getattr(pool[1], "_processes", None) or {}).values() if p.is_alive())


def _forget_pool_in_child() -> None:
    """A forked child (a data loader's worker, say) starts without the pool: its workers are the parent's, and the
    lock may have been held by a parent thread that does not exist here."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.RLock()


atexit.register(_drop_pool)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _shutdown(ex, finished: bool) -> None:
    """Stop a ProcessPoolExecutor; when work is unfinished, kill its workers instead of waiting for them.

    Stopping is best effort and never raises: precompile's result does not depend on it."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    try:
        ex.shutdown(wait=finished, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a pool broken by a dead worker may fail to shut down cleanly
        pass
    if finished:
        return
    for p in procs:
        try:
            if p.is_alive():
                p.terminate()
        except (OSError, ValueError):  # already gone, or closed
            pass
    for p in procs:
        try:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        except (OSError, ValueError):
            pass


class _ArgStub:
    """Stands for a tensor argument in a compile worker: same dtype and address (so the same alignment
    specialisation), no data.  The binder reads ``__array_interface__['data'][0]`` and ``dtype``."""

    def __init__(self, addr: int, dtype: str):
        self.dtype = dtype
        self.__array_interface__ = {"data": (addr, False), "shape": (0,), "typestr": "|u1", "version": 3}

    def __reduce__(self):
        return (_ArgStub, (self.__array_interface__["data"][0], self.dtype))


def _descriptor_stub(d):
    """A host-side tensor descriptor with its base stubbed (built without ``__post_init__``, which would read
    the data): it specialises as ``d`` does."""
    stub = object.__new__(type(d))
    stub.__dict__.update(base=_stub_args((d.base,))[0], shape=list(d.shape), strides=list(d.strides),
                         block_shape=list(d.block_shape), padding=getattr(d, "padding", "zero"))
    return stub


def _stub_args(args: tuple) -> tuple:
    from .specialization import data_pointer, is_tensor_descriptor

    out = []
    for a in args:
        if isinstance(a, (bool, int, float, str, type(None))):
            out.append(a)
            continue
        if is_tensor_descriptor(a):
            out.append(_descriptor_stub(a))
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


def _kernel_locator(fn: JITFunction) -> Optional[KernelLocator]:
    """Where a worker can import ``fn`` from, or None (a kernel defined in a function, a script without a main
    guard)."""
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
        return KernelLocator("__main__", qual, os.path.abspath(path))
    return KernelLocator(mod_name, qual, None)


# ----------------------------------------------------------------------------------------------- workers
def _worker_init(path: list, target: str) -> None:
    os.environ[_ENV_WORKER] = "1"
    sys.path[:] = list(path)
    from . import driver

    driver.set_active(target)


def _worker_find_kernel(locator: KernelLocator) -> JITFunction:
    mod = None
    if locator.module == "__main__":  # multiprocessing already re-imported the script as __mp_main__
        for cand in ("__mp_main__", "__main__"):
            m = sys.modules.get(cand)
            if m is not None and os.path.abspath(getattr(m, "__file__", "") or "") == locator.path:
                mod = m
                break
        if mod is None:
            spec = importlib.util.spec_from_file_location("__tritium_autotune_main__", locator.path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["__tritium_autotune_main__"] = mod
            spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(locator.module)
    obj: Any = mod
    for part in locator.qualname.split("."):
        obj = getattr(obj, part)
    # the module attribute is the outermost Autotuner / Heuristics wrapper; the qualname is the @jit function's
    fn = getattr(obj, "base_fn", obj)
    if not isinstance(fn, JITFunction):
        raise TypeError(f"{locator.module}.{locator.qualname} is not a @jit function")
    return fn


def _worker_compile(locator: KernelLocator, cache_key: str, job: CompileJob) -> None:
    fn = _worker_find_kernel(locator)
    if fn.cache_key != cache_key:
        raise RuntimeError(f"kernel '{fn.__name__}' in the worker differs from the one being tuned")
    fn.warmup(*job.args, **job.kwargs)


__all__ = ["CompileJob", "KernelLocator", "PrecompileResult", "busy_cpus", "compile_workers", "compiled_in_memory",
           "enabled", "parallelism", "pool_pids", "precompile", "usable_cpus"]
