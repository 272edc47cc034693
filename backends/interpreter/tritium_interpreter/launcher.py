"""A compiled kernel's :class:`Launcher`: the generated NumPy program (:class:`Program`, compiled once per source
text) run over the grid, the arguments converted on every launch (:func:`as_flat`).

Launching never imports MLIR. The driver (:mod:`.driver`) keeps one launcher per kernel in ``kernel.loaded``;
step-through mode's :class:`.eager.EagerLauncher` is a launcher too.
"""
from __future__ import annotations

import linecache
import threading

import numpy as np

from tritium.errors import KernelRuntimeError
from tritium.runtime.reinterpret import TensorWrapper

from . import runtime as rt
from .runtime.control import SpinWait
from .runtime.races import RaceTracker, checks_from_env

_SCALARS = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
            "index": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32,
            **{f8: np.float32 for f8 in rt.fp8.FORMATS}}

_cache: dict = {}
_lock = threading.Lock()


class Program:
    """A compiled ``npy`` stage: the kernel function and what the launcher needs to know."""

    def __init__(self, source: str, name: str = "kernel"):
        filename = f"<tritium-npy:{name}>"
        code = compile(source, filename, "exec")
        lines = source.splitlines(True)
        linecache.cache[filename] = (len(source), None, lines, filename)
        ns: dict = {"__name__": f"tritium_npy_{name}"}
        exec(code, ns)
        self.source, self.ns = source, ns
        self.fn = ns["kernel"]
        self.name = ns.get("NAME", name)
        self.arg_types = tuple(ns["ARG_TYPES"])
        self.max_numel = int(ns.get("MAX_NUMEL", 1))
        self.is_ptr = [t.startswith("!tt.ptr<") for t in self.arg_types]
        # a while loop can wait on memory another program changes (a lock): chunks keep a copy of the memory to
        # run again one program at a time (runtime.control.SpinWait)
        self.may_spin = "_rt.while_(" in source


def get_program(kernel) -> Program:
    """The :class:`Program` of a compiled kernel's ``npy`` stage (or of that source text), built once per source."""
    asm = getattr(kernel, "asm", None)
    source = asm["npy"] if isinstance(asm, dict) else kernel
    if not isinstance(source, str):
        raise KernelRuntimeError("the interpreter launches kernels compiled to stage 'npy' (asm['npy'])")
    with _lock:
        prog = _cache.get(source)
        if prog is None:
            name = getattr(kernel, "name", None) or "kernel"
            prog = Program(source, str(name))
            if len(_cache) > 256:
                _cache.clear()
            _cache[source] = prog
    return prog


_TENSOR = None        # torch.Tensor once a torch object was seen (the launcher's fast path compares types)
_TORCH_DIRECT: frozenset = frozenset()  # torch dtypes whose .numpy() the programs read as they are


def _note_torch(torch) -> None:
    global _TENSOR, _TORCH_DIRECT
    if _TENSOR is None:
        _TORCH_DIRECT = frozenset((torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
                                   torch.int32, torch.int64, torch.uint8))
        _TENSOR = torch.Tensor


def as_flat(obj, what: str = "argument"):
    """A flat 1-D view (stride = itemsize, no copy: writes reach the caller) of the memory an array-like
    object spans, in its own dtype (torch bf16 / bool / other dtypes numpy lacks: a same-sized integer view).  A
    :class:`~tritium.runtime.reinterpret.TensorWrapper` (``tritium.reinterpret``) is its base's memory: the
    program reads it in the kernel's element type (``Memory.view``)."""
    if type(obj) is TensorWrapper:
        obj = obj.base
    mod = type(obj).__module__
    if isinstance(obj, np.ndarray):
        a = obj
    elif mod.startswith("torch"):
        import torch
        _note_torch(torch)
        t = obj.detach()
        if t.device.type != "cpu":
            raise KernelRuntimeError(f"{what} is a tensor on device '{t.device}'; the interpreter needs CPU "
                                     f"tensors")
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        elif t.dtype == torch.bool:
            t = t.view(torch.uint8)
        elif t.dtype not in (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
                             torch.int64, torch.uint8):
            t = t.view(torch.uint8)
        a = t.numpy()
    elif hasattr(obj, "__array_interface__"):
        a = np.asarray(obj)
    else:
        raise KernelRuntimeError(f"{what} must be an array or tensor (a pointer argument), "
                                 f"got {type(obj).__name__}")
    return _flat(a, what)


def _flat(a, what):
    if a.size == 0:
        return np.zeros(0, np.uint8)
    if a.flags.c_contiguous:
        return a.reshape(-1)
    isz = a.itemsize
    if any(st < 0 or st % isz for st in a.strides):
        raise KernelRuntimeError(f"{what}: arrays with negative or non element-aligned strides are not "
                                 f"supported by the interpreter")
    extent = sum((n - 1) * st for n, st in zip(a.shape, a.strides)) // isz + 1
    return np.lib.stride_tricks.as_strided(a, shape=(extent,), strides=(isz,))


def _scalar(v, ty: str, what: str):
    dt = _SCALARS.get(ty)
    if dt is None:
        raise KernelRuntimeError(f"{what}: the interpreter does not support scalar arguments of type {ty}")
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.reshape(-1)[0]
    try:
        if dt is np.bool_:
            return np.array([bool(v)], np.bool_)
        if np.issubdtype(dt, np.integer):
            bits = np.dtype(dt).itemsize * 8
            iv = int(v) & ((1 << bits) - 1)
            if iv >= 1 << (bits - 1):
                iv -= 1 << bits
            return np.array([iv], dt)
        arr = np.array([float(v)], dt)
        if ty == "bf16":
            return rt.round_bf16(arr)
        return rt.round_fp8(arr, ty) if ty in rt.fp8.FORMATS else arr
    except (TypeError, ValueError) as e:
        raise KernelRuntimeError(f"{what}: cannot pass {v!r} as {ty}: {e}") from None


_malloc_tuned = False


def _tune_malloc():
    """Keep freed large blocks in the heap (glibc): the generated programs allocate and free many
    same-sized multi-MB temporaries, and returning them to the OS makes every allocation page-fault.
    Set TRITIUM_INTERPRETER_MALLOPT=0 to leave malloc alone."""
    global _malloc_tuned
    if _malloc_tuned:
        return
    _malloc_tuned = True
    import os
    import sys
    if os.environ.get("TRITIUM_INTERPRETER_MALLOPT", "1") == "0" or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)    # M_MMAP_THRESHOLD
        libc.mallopt(-1, 512 << 20)   # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


try:  # numpy >= 2: enter "ignore all floating-point errors" without building an np.errstate per launch
    from numpy._core.umath import _extobj_contextvar as _fp_var, _make_extobj as _fp_make
except ImportError:  # pragma: no cover - older numpy
    _fp_var = _fp_make = None
_fp_ignore = (None, None)  # (the context's error state, the same with every error ignored)

_IDS_MAX_PROGRAMS = 4096   # program-id arrays of chunks up to this many programs are kept by the launcher
_CACHE_MAX = 64            # entries per launcher cache (program ids per grid chunk, scalar values per argument)


class Launcher:
    """Launches one compiled kernel: what does not depend on the arguments, built once per kernel
    (:func:`get_launcher`).

    Every launch converts the arguments again (:meth:`launch`): pointer arguments become flat views of
    the caller's memory in a new :class:`runtime.Memory` (exact ``numpy.ndarray`` / CPU ``torch.Tensor``
    inline, anything else and every error through :func:`as_flat`), so nothing of a buffer outlives the launch.
    Kept across launches, all immutable (read-only arrays): the pointer arguments' base addresses, the
    program-id arrays of each (grid, chunk) up to ``_IDS_MAX_PROGRAMS`` programs, and the 1-element arrays of
    ``int`` scalar arguments by value."""

    def __init__(self, kernel, prog=None):
        prog = prog if prog is not None else get_program(kernel)
        self.prog = prog
        n = len(prog.arg_types)
        self.nargs = n
        names = _arg_names(kernel, n)
        self.whats = tuple(f"argument {names[i]!s}" if names[i] else f"argument #{i}" for i in range(n))
        self.bnames = [repr(names[i]) if names[i] else f"#{i}" for i in range(n) if prog.is_ptr[i]]
        self.kinds = tuple(None if prog.is_ptr[i] else prog.arg_types[i] for i in range(n))
        bases = []
        for j in range(len(self.bnames)):
            b = np.array([(j + 1) << rt.SHIFT], np.int64)
            b.flags.writeable = False
            bases.append(b)
        self.bases = tuple(bases)
        self.chunk = max(1, rt.BUDGET // max(1, prog.max_numel))
        self.ids: dict = {}
        self.scalars = tuple({} for _ in range(n))

    def launch(self, kernel, grid, args) -> None:
        """Run the program over ``grid`` (a 3-tuple of ints) with ``args``, the runtime arguments in order
        (``InterpreterDriver.launch``'s signature: this is the driver's bound ``launcher``)."""
        if len(args) != self.nargs:
            raise KernelRuntimeError(f"kernel '{self.prog.name}' takes {self.nargs} runtime arguments, "
                                     f"got {len(args)}")
        arrays, sizes, vals = [], [], []
        nd, tt = np.ndarray, _TENSOR
        i = 0
        for a, ty in zip(args, self.kinds):
            if ty is None:  # pointer
                t = type(a)
                if t is nd and a.ndim == 1 and a.flags.c_contiguous:
                    f = a
                elif t is tt and a.is_cpu and not a.requires_grad and a.dtype in _TORCH_DIRECT:
                    try:
                        f = a.numpy()
                    except (RuntimeError, TypeError):  # as_flat raises what it raises, with the argument's name
                        f = as_flat(a, self.whats[i])
                    else:
                        if f.ndim != 1 or not f.flags.c_contiguous:
                            f = _flat(f, self.whats[i])
                else:
                    f = as_flat(a, self.whats[i])
                vals.append(self.bases[len(arrays)])
                arrays.append(f)
                sizes.append(f.nbytes)
            elif type(a) is int:
                c = self.scalars[i]
                v = c.get(a)
                if v is None:
                    v = _scalar(a, ty, self.whats[i])
                    v.flags.writeable = False
                    if len(c) >= _CACHE_MAX:
                        c.clear()
                    c[a] = v
                vals.append(v)
            else:
                vals.append(_scalar(a, ty, self.whats[i]))
            i += 1
        P = grid[0] * grid[1] * grid[2]
        if P <= 0:
            return
        _tune_malloc()
        mem = rt.Memory(arrays, self.bnames, sizes)
        checks = checks_from_env()
        if "races" in checks:
            mem.races = RaceTracker(mem, "same-value-stores" in checks)
        if _fp_var is None:  # pragma: no cover - older numpy
            with np.errstate(all="ignore"):
                self._run(mem, grid, P, vals)
            return
        global _fp_ignore
        cur = _fp_var.get()
        ign = _fp_ignore
        if ign[0] is not cur:
            ign = _fp_ignore = (cur, _fp_make(all="ignore"))
        token = _fp_var.set(ign[1])
        try:
            self._run(mem, grid, P, vals)
        finally:
            _fp_var.reset(token)

    def _run(self, mem, grid, P, vals) -> None:
        fn, chunk, cache = self.prog.fn, self.chunk, self.ids
        for start in range(0, P, chunk):
            count = min(chunk, P - start)
            key = (grid, start, count)
            ids = cache.get(key)
            if ids is None:
                ids = rt.program_ids(grid, start, count)
                if count <= _IDS_MAX_PROGRAMS:
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    cache[key] = ids
            ctx = rt.Ctx(mem, grid, start, count, ids)
            if not (self.prog.may_spin and count > 1):
                fn(ctx, *vals)
                continue
            saved = [a.copy() if a.flags.writeable else None for a in mem.arrays]
            ctx.restartable = True
            try:
                fn(ctx, *vals)
            except SpinWait:  # programs wait on others in lockstep: memory as it was, then one program at a time
                for a, b in zip(mem.arrays, saved):
                    if b is not None:
                        np.copyto(a, b)
                del saved
                for p in range(start, start + count):
                    fn(rt.Ctx(mem, grid, p, 1), *vals)




def _arg_names(kernel, n):
    names = [name for name, _ in getattr(kernel, "signature", ())]
    return names if len(names) == n else [None] * n
