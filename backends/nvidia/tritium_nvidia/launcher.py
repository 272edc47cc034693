"""Launching a loaded CUDA function: argument packing and ``cuLaunchKernel``, built once per kernel.

The launch path is measured against Triton's C launcher, so per launch it does as little Python as possible:

* :func:`make_packer` turns the kernel's argument types into one ``struct.Struct`` with an 8-byte slot per
  kernel parameter (little-endian, zero padding), a ctypes buffer it packs into, and a prebuilt ``void*[]``
  array whose i-th entry points at slot i.  A launch is one ``Struct.pack_into`` call plus ``cuLaunchKernel``
  with ``kernelParams`` given as the address of that array (cuda.bindings passes an int straight through as
  ``void**``; a ``(values, types)`` tuple would be converted element by element on every launch).
* The per-kernel launch function is generated Python source (like Triton's generated C launcher): the
  arguments are unpacked by position, torch CUDA tensors go through ``t.data_ptr()`` inline, everything else
  (objects with ``data_ptr()`` or ``__cuda_array_interface__``, ints, None, CPU tensors -> error, numpy
  scalars, out-of-range ints -> error) takes :func:`convert_args`, the slow path with the messages.

Parameters the cubin has beyond the kernel's signature (Triton-style global/profile scratch pointers) are
passed as null pointers.  A launcher is not re-entrant across threads: a lock guards pack + launch.
"""
from __future__ import annotations

import ctypes
import math
import struct
import threading
from typing import Any, Callable, Optional, Sequence

from tritium.errors import KernelRuntimeError

SLOT = 8  # bytes per kernel parameter slot in the argument buffer

#: type string -> struct code (little-endian, no alignment), padded to SLOT bytes
_CODES = {
    "i1": "i", "u1": "i", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f", "fp64": "d",
    "fp8e4nv": "B", "fp8e5": "B", "fp8e4b8": "B", "fp8e5b16": "B",
}
_INT_RANGE = {
    "i1": (0, 1), "u1": (0, 1), "i8": (-2 ** 7, 2 ** 7 - 1), "u8": (0, 2 ** 8 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
    "u16": (0, 2 ** 16 - 1), "i32": (-2 ** 31, 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1),
    "i64": (-2 ** 63, 2 ** 63 - 1), "u64": (0, 2 ** 64 - 1),
}


def is_pointer(ty: str) -> bool:
    return ty.startswith("*") or ty.startswith("!tt.ptr")


def struct_format(types: Sequence[str], n_extra: int = 0) -> str:
    """The ``struct`` format packing ``types`` (then ``n_extra`` null pointers) into SLOT-byte slots."""
    parts = ["<"]
    for ty in types:
        if is_pointer(ty):
            code = "Q"
        else:
            try:
                code = _CODES[ty]
            except KeyError:
                raise KernelRuntimeError(f"the cuda launcher cannot pass a scalar of type '{ty}'") from None
        pad = SLOT - struct.calcsize("<" + code)
        parts.append(code + (f"{pad}x" if pad else ""))
    parts.append("Q" * n_extra)
    return "".join(parts)


def _bf16_bits(v: float) -> int:
    """The bfloat16 bit pattern of ``v`` (round to nearest even), as the kernel reads a bf16 scalar."""
    (u,) = struct.unpack("<I", struct.pack("<f", float(v)))
    if math.isnan(v):
        return 0x7FC0
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def pointer_value(a: Any, what: str, check: Optional[Callable[[int], None]] = None) -> int:
    """The device address of a pointer argument: a tensor, anything with ``data_ptr()`` or
    ``__cuda_array_interface__``, an int address, or None (null)."""
    if a is None:
        return 0
    if isinstance(a, int) and not isinstance(a, bool):
        return a
    dev = getattr(a, "device", None)
    if dev is not None and getattr(dev, "type", "cuda") not in ("cuda", "hip") and type(a).__module__.startswith(
            "torch"):
        raise KernelRuntimeError(f"{what} is a tensor on device '{dev}': the cuda backend needs CUDA tensors "
                                 f"(move it with .cuda())")
    if hasattr(a, "data_ptr"):
        p = int(a.data_ptr())
    else:
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is None:
            if hasattr(a, "__array_interface__"):
                raise KernelRuntimeError(f"{what} is a host array ({type(a).__name__}); the cuda backend needs "
                                         f"device memory (a CUDA tensor or an object with "
                                         f"__cuda_array_interface__)")
            raise KernelRuntimeError(f"{what}: expected a tensor, an object with data_ptr() or "
                                     f"__cuda_array_interface__, an int address or None; got {type(a).__name__}")
        p = int(cai["data"][0])
    if check is not None and p:
        check(p)
    return p


def scalar_value(v: Any, ty: str, what: str) -> Any:
    """A Python scalar as the struct code of ``ty`` packs it; range errors name the argument."""
    if hasattr(v, "item") and not isinstance(v, (int, float)):  # numpy / 0-d torch scalars
        v = v.item()
    if ty in _INT_RANGE:
        if isinstance(v, float) and not v.is_integer():
            raise KernelRuntimeError(f"{what}: cannot pass {v!r} as {ty}")
        try:
            iv = int(v)
        except (TypeError, ValueError):
            raise KernelRuntimeError(f"{what}: cannot pass {type(v).__name__} {v!r} as {ty}") from None
        lo, hi = _INT_RANGE[ty]
        if ty in ("i1", "u1"):
            return 1 if iv else 0
        if not lo <= iv <= hi:
            raise KernelRuntimeError(f"{what}: {iv} does not fit in {ty} (range {lo}..{hi}); the kernel was "
                                     f"compiled for {ty}")
        return iv
    try:
        fv = float(v)
    except (TypeError, ValueError):
        raise KernelRuntimeError(f"{what}: cannot pass {type(v).__name__} {v!r} as {ty}") from None
    if ty == "bf16":
        return _bf16_bits(fv)
    if ty.startswith("fp8"):
        raise KernelRuntimeError(f"{what}: fp8 scalar arguments are not supported by the cuda launcher")
    return fv


def convert_args(args: Sequence, types: Sequence[str], names: Sequence[str], kernel_name: str,
                 check: Optional[Callable[[int], None]] = None) -> list:
    """Every argument as ``struct`` packs it (the slow path, with errors that name the argument)."""
    if len(args) != len(types):
        raise KernelRuntimeError(f"kernel '{kernel_name}' takes {len(types)} runtime arguments, got {len(args)}")
    out = []
    for i, (a, ty) in enumerate(zip(args, types)):
        what = f"kernel '{kernel_name}' argument '{names[i]}'" if i < len(names) and names[i] else \
            f"kernel '{kernel_name}' argument #{i}"
        if is_pointer(ty):
            out.append(pointer_value(a, what, check))
        else:
            out.append(scalar_value(a, ty, what))
    return out


class Packer:
    """The argument buffer of one kernel: ``pack(args)`` fills it; ``params`` is the ``void**`` address."""

    def __init__(self, types: Sequence[str], n_extra: int = 0):
        self.types = tuple(types)
        self.n_extra = n_extra
        self.n = len(self.types) + n_extra
        self.struct = struct.Struct(struct_format(self.types, n_extra))
        self.buffer = ctypes.create_string_buffer(max(SLOT, SLOT * self.n))
        base = ctypes.addressof(self.buffer)
        self.array = (ctypes.c_void_p * max(1, self.n))(*[base + SLOT * i for i in range(max(1, self.n))])
        self.params = ctypes.addressof(self.array) if self.n else 0
        self.extra = (0,) * n_extra

    def pack(self, values: Sequence) -> None:
        self.struct.pack_into(self.buffer, 0, *values, *self.extra)

    def read(self) -> tuple:
        """The packed values (tests)."""
        return self.struct.unpack_from(self.buffer, 0)


_BODY = '''
    {unpack}
    with lock:
        try:
            pack(buf, 0, {fast}{extra})
        except (AttributeError, TypeError, struct_error, KernelRuntimeError):
            pack(buf, 0, *convert(args){extra})
        err, = cuLaunchKernel(func, gx, gy, gz, block, 1, 1, shared, {stream}, params, 0)
'''

_TEMPLATE = '''
def launch(gx, gy, gz, stream, args):{body}    if err:
        on_error(err, args)
'''

# the same launch for the current stream, with ``CUDADriver.launch``'s signature (``kernel`` is the one this
# function was made for): ``current_stream()`` gives the stream's raw handle, ``streams`` caches the CUstream
# objects; ``on_error`` raising ``retry`` relaunches once through ``launch``
_GRID_TEMPLATE = '''
def launch_grid(kernel, grid, args):
    s = current_stream()
    cs = streams.get(s)
    if cs is None:
        cs = make_stream(s)
    gx, gy, gz = grid{body}    if err:
        try:
            on_error(err, args)
        except retry:
            launch(gx, gy, gz, cs, args)
'''


def make_launch(func: Any, packer: Packer, *, block: int, shared: int, cu_launch: Callable,
                names: Sequence[str] = (), kernel_name: str = "kernel", on_error: Optional[Callable] = None,
                check_pointer: Optional[Callable[[int], None]] = None,
                current_stream: Optional[Callable[[], Any]] = None, make_stream: Optional[Callable] = None,
                streams: Optional[dict] = None, retry: type = ()) -> Callable:
    """A ``launch(gx, gy, gz, stream, args)`` function for one loaded kernel.

    ``cu_launch`` is ``cuda.bindings.driver.cuLaunchKernel`` (or a stand-in with its signature: tests).
    ``stream`` is whatever ``cu_launch`` accepts for a stream (a ``CUstream`` or an int).  ``on_error(err, args)``
    is called with a non-zero CUresult and raises.

    With ``current_stream`` (a callable returning the current raw stream handle), the returned function also has
    ``launch.grid(kernel, grid, args)``: the launch on the current stream, ``grid`` a 3-tuple, the stream's
    CUstream object from ``streams`` (filled by ``make_stream(handle)``); ``on_error`` raising ``retry`` relaunches
    once.  It has the driver's ``launch`` signature (``kernel`` is not read): the JIT's launch fast path calls it
    (``CUDADriver.launcher``).
    """
    types = packer.types
    n = len(types)
    argv = [f"a{i}" for i in range(n)]
    if n == 0:
        unpack = (f"if args: raise KernelRuntimeError({('kernel ' + repr(kernel_name) + ' takes no runtime arguments, got ')!r}"
                  f" + str(len(args)))")
    elif n == 1:
        unpack = f"{argv[0]}, = args"
    else:
        unpack = ", ".join(argv) + " = args"
    # torch CUDA tensors inline (is_cuda guards against CPU tensors); anything else raises AttributeError and
    # goes through the slow path
    fast = []
    for a, ty in zip(argv, types):
        if is_pointer(ty):
            fast.append(f"({a}.data_ptr() if {a}.is_cuda else cpu({a}))")
        else:
            fast.append(a)
    extra = (", " if fast else "") + ", ".join("0" for _ in range(packer.n_extra)) if packer.n_extra else ""
    if n:  # wrong argument counts: a clear message instead of "not enough values to unpack"
        unpack = f"if len(args) != {n}:\n        convert(args)\n    {unpack}"
    body = _BODY.replace("{unpack}", unpack).replace("{fast}", ", ".join(fast)).replace("{extra}", extra)
    src = _TEMPLATE.replace("{body}", body.replace("{stream}", "stream"))
    if current_stream is not None:
        src += _GRID_TEMPLATE.replace("{body}", body.replace("{stream}", "cs"))

    def convert(args):
        return convert_args(args, types, names, kernel_name, check_pointer)

    def cpu(a):
        raise KernelRuntimeError(f"kernel '{kernel_name}': a pointer argument is a tensor on device "
                                 f"'{getattr(a, 'device', '?')}'; the cuda backend needs CUDA tensors")

    def default_error(err, args):
        raise KernelRuntimeError(f"cuLaunchKernel of '{kernel_name}' failed: {err}")

    ns = {"lock": threading.Lock(), "pack": packer.struct.pack_into, "buf": packer.buffer,
          "struct_error": struct.error, "KernelRuntimeError": KernelRuntimeError, "convert": convert, "cpu": cpu,
          "cuLaunchKernel": cu_launch, "func": func, "block": int(block), "shared": int(shared),
          "params": packer.params, "on_error": on_error or default_error, "current_stream": current_stream,
          "streams": streams if streams is not None else {}, "make_stream": make_stream, "retry": retry}
    exec(compile(src, f"<tritium-cuda-launcher:{kernel_name}>", "exec"), ns)
    fn = ns["launch"]
    fn.source = src
    fn.grid = ns.get("launch_grid")
    return fn


__all__ = ["Packer", "make_launch", "convert_args", "pointer_value", "scalar_value", "struct_format",
           "is_pointer", "SLOT"]
