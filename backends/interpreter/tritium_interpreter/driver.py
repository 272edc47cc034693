"""The interpreter's driver: always active; launches the generated NumPy program over the grid.

Launching never imports MLIR: it only compiles (once, cached on the kernel) the Python source of stage
``npy`` and runs it with numpy and :mod:`tritium_interpreter.runtime`.
"""
from __future__ import annotations

import linecache
import threading

import numpy as np

from tritium.compiler.backend import BaseDriver, GPUTarget
from tritium.errors import KernelRuntimeError

from . import runtime as rt

TARGET = GPUTarget("interpreter", "cpu", 1)

_SCALARS = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
            "index": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}

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


def get_program(kernel) -> Program:
    prog = getattr(kernel, "_npy_program", None)
    if prog is not None:
        return prog
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
    try:
        kernel._npy_program = prog
    except Exception:  # pragma: no cover - objects without __dict__
        pass
    return prog


def as_bytes(obj, what: str = "argument"):
    """A flat uint8 view of the memory an array-like object spans (no copy: writes reach the caller)."""
    mod = type(obj).__module__
    if isinstance(obj, np.ndarray):
        a = obj
    elif mod.startswith("torch"):
        import torch
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
    if a.size == 0:
        return np.zeros(0, np.uint8)
    if a.flags.c_contiguous:
        return a.reshape(-1).view(np.uint8)
    isz = a.itemsize
    if any(st < 0 or st % isz for st in a.strides):
        raise KernelRuntimeError(f"{what}: arrays with negative or non element-aligned strides are not "
                                 f"supported by the interpreter")
    extent = sum((n - 1) * st for n, st in zip(a.shape, a.strides)) // isz + 1
    flat = np.lib.stride_tricks.as_strided(a, shape=(extent,), strides=(isz,))
    return flat.view(np.uint8)


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
        return rt.round_bf16(arr) if ty == "bf16" else arr
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
    except Exception:  # pragma: no cover - not glibc
        pass


class InterpreterDriver(BaseDriver):
    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> GPUTarget:
        return TARGET

    def launch(self, kernel, grid, args) -> None:
        prog = get_program(kernel)
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(tuple(grid)))
        if len(args) != len(prog.arg_types):
            raise KernelRuntimeError(f"kernel '{prog.name}' takes {len(prog.arg_types)} runtime arguments, "
                                     f"got {len(args)}")
        names = _arg_names(kernel, len(args))
        bufs, bnames, vals = [], [], []
        for i, (a, ty) in enumerate(zip(args, prog.arg_types)):
            what = f"argument {names[i]!s}" if names[i] else f"argument #{i}"
            if prog.is_ptr[i]:
                bufs.append(as_bytes(a, what))
                bnames.append(repr(names[i]) if names[i] else f"#{i}")
                vals.append(np.array([len(bufs) << rt.SHIFT], np.int64))
            else:
                vals.append(_scalar(a, ty, what))
        P = grid[0] * grid[1] * grid[2]
        if P <= 0:
            return
        _tune_malloc()
        mem = rt.Memory(bufs, bnames)
        chunk = max(1, rt.BUDGET // max(1, prog.max_numel))
        with np.errstate(all="ignore"):
            for start in range(0, P, chunk):
                ctx = rt.Ctx(mem, grid, start, min(chunk, P - start))
                prog.fn(ctx, *vals)


def _arg_names(kernel, n):
    md = getattr(kernel, "metadata", None)
    sig = None
    try:
        sig = md.get("signature") if md is not None else None
    except Exception:  # pragma: no cover
        sig = None
    if isinstance(sig, dict) and len(sig) == n:
        return list(sig)
    return [None] * n
