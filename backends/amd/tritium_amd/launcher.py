"""Launching a loaded HIP function: the kernarg segment packed from the code object's metadata, and the
``hipModuleLaunchKernel`` call, built once per kernel.

The kernarg segment.  An AMDGPU kernel reads its arguments from one buffer (the kernarg segment) whose layout the
code object's metadata gives (``.args`` of the kernel in the ``amdhsa.kernels`` note: offset, size and value kind of
each argument): first the explicit arguments (pointers ``global_buffer``, scalars ``by_value``, each naturally
aligned), then the hidden arguments of the code object v5 ABI (``hidden_block_count_x/y/z``,
``hidden_group_size_x/y/z``, ``hidden_remainder_x/y/z``, ``hidden_global_offset_x/y/z``, ``hidden_grid_dims``, ...).
The compiler records both lists in the kernel's metadata (``kernargs``, ``hidden_kernargs``) with the segment's
size (``kernarg_size``).  :class:`KernargPacker` turns them into one ``struct.Struct`` over a ctypes buffer of the
segment's size:

* explicit arguments at their offsets (pointers as u64 addresses; i1 / i8 / i16 / i32 / i64 / u*, fp16 / bf16 /
  fp32 / fp64 as their bits), with the lowered kernel's argument types (``metadata["arg_types"]``);
* ``hidden_block_count_*``: the grid (programs along x, y, z) -- the AMD lowering reads ``tl.num_programs`` from
  them; ``hidden_group_size_*``: the work-group (``num_warps * wavefront``, 1, 1); ``hidden_remainder_*``: 0 (the
  grid is counted in whole work-groups); ``hidden_grid_dims``: 3; ``hidden_dynamic_lds_size``: the launch's
  dynamic LDS; every other hidden argument (global offsets, hostcall / printf buffers, heap, queue pointers,
  multigrid sync, completion action, private / shared base) stays zero, as the v5 ABI expects of a kernel that
  does not use them (the compiler rejects printf / device assert on hip, the only users of the hostcall buffer).

The HIP runtime reads the explicit arguments from this buffer at the metadata's offsets and, in the ROCm runtimes
we know of, writes the hidden ones itself from the launch's dimensions (the same values); the packer fills them so
that the buffer is right on its own.

The launch passes the buffer in ``hipModuleLaunchKernel``'s ``extra`` form: a prebuilt ``void*[5]``
``{HIP_LAUNCH_PARAM_BUFFER_POINTER, &buffer, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}`` whose
address is given as ``extra`` (hip-python passes an int straight through as the pointer).  A launch is one
``Struct.pack_into`` and the call; the per-kernel launch function is generated Python source (like the cuda
launcher): torch tensors go through ``t.data_ptr()`` inline, everything else through :func:`convert_args`, the
slow path with the messages.
"""
from __future__ import annotations

import ctypes
import struct
import threading
from typing import Any, Callable, Optional, Sequence

from tritium.errors import KernelRuntimeError
from tritium.runtime import kernel_args as _kernel_args

HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
HIP_LAUNCH_PARAM_END = 3

#: type string -> struct code (little-endian)
_CODES = {
    "i1": "B", "u1": "B", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f", "fp64": "d",
}
_LOWERED = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "half": "fp16", "float": "fp32",
            "double": "fp64"}
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}

#: the code object v5 hidden arguments after the explicit ones (offsets from the 8-aligned end of those), for
#: metadata without ``hidden_kernargs`` (kernels compiled before the compiler recorded them)
V5_HIDDEN = (("hidden_block_count_x", 0, 4), ("hidden_block_count_y", 4, 4), ("hidden_block_count_z", 8, 4),
             ("hidden_group_size_x", 12, 2), ("hidden_group_size_y", 14, 2), ("hidden_group_size_z", 16, 2),
             ("hidden_remainder_x", 18, 2), ("hidden_remainder_y", 20, 2), ("hidden_remainder_z", 22, 2),
             ("hidden_global_offset_x", 40, 8), ("hidden_global_offset_y", 48, 8),
             ("hidden_global_offset_z", 56, 8), ("hidden_grid_dims", 64, 2))
V5_HIDDEN_SIZE = 256  # the hidden part of a v5 kernarg segment


def is_pointer(ty: str) -> bool:
    return ty.startswith("*") or ty.startswith("!tt.ptr")


def launcher_type(t: Any) -> str:
    """A lowered argument type (``ptr``, ``i32``, ``f32``, ...) or a signature type (``*fp32``, ``fp16``) as the
    packer's type string."""
    t = str(t)
    if t == "ptr" or t.startswith("!llvm.ptr") or t.startswith("!tt.ptr") or t.startswith("*"):
        return "*i8"
    return _LOWERED.get(t, t)


def arg_types(metadata: dict) -> tuple:
    """``(types, names)`` of a compiled kernel's runtime arguments: the lowered kernel's ``arg_types``, named by the
    signature where both have the same length (else unnamed: flattened aggregates)."""
    sig = metadata.get("signature") or []
    names = [n for n, _ in sig]
    lowered = metadata.get("arg_types")
    if not lowered:
        return [launcher_type(t) for _, t in sig], names
    types = [launcher_type(t) for t in lowered]
    if len(types) != len(sig):
        return types, []
    # the signature's scalar type where it has the lowered one's size (u32 vs i32: the range check)
    def size(t):
        return 8 if is_pointer(t) else struct.calcsize("<" + _CODES[t]) if t in _CODES else None

    out = []
    for (_, st), lt in zip(sig, types):
        st = launcher_type(st)
        out.append(st if not is_pointer(lt) and not is_pointer(st) and size(st) == size(lt) else lt)
    return out, names


def hidden_kernargs(metadata: dict) -> list:
    """The hidden arguments ``[{"offset", "size", "kind"}]``: the metadata's, else the v5 layout after the
    explicit arguments, as far as the segment (``kernarg_size``) reaches."""
    hidden = metadata.get("hidden_kernargs")
    if hidden is not None:
        return list(hidden)
    explicit = metadata.get("kernargs") or []
    end = max((int(a["offset"]) + int(a["size"]) for a in explicit), default=0)
    base = (end + 7) // 8 * 8
    size = int(metadata.get("kernarg_size") or 0)  # the segment holds only the hidden arguments the kernel uses
    return [{"offset": base + off, "size": n, "kind": kind} for kind, off, n in V5_HIDDEN if base + off + n <= size]


class KernargPacker:
    """The kernarg segment of one kernel: ``struct`` (fields in offset order, ``x`` padding between them), a
    ctypes ``buffer`` of ``size`` bytes, the ``extra`` array pointing at it, and ``fields``: ``(offset, code,
    source)`` with source ``("arg", i)``, ``("grid", d)`` or ``("const", value)``.

    ``types``: the explicit arguments' packer types; ``kernargs``: their metadata entries (offset, size); ``hidden``:
    the hidden ones; ``block``: threads per work-group; ``dynamic_lds``: bytes of dynamic LDS per launch."""

    def __init__(self, types: Sequence[str], kernargs: Sequence[dict], hidden: Sequence[dict], size: int,
                 block: int, dynamic_lds: int = 0, kernel_name: str = "kernel"):
        self.types = list(types)
        self.kernargs, self.hidden, self.block, self.dynamic_lds = list(kernargs), list(hidden), block, dynamic_lds
        if len(kernargs) != len(self.types):
            raise KernelRuntimeError(f"kernel '{kernel_name}': the code object has {len(kernargs)} explicit kernel "
                                     f"arguments but the compiled kernel lists {len(self.types)} "
                                     f"({', '.join(self.types)})")
        fields = []
        for i, (ty, ka) in enumerate(zip(self.types, kernargs)):
            code = "Q" if is_pointer(ty) else _CODES.get(ty)
            if code is None:
                raise KernelRuntimeError(f"the hip launcher cannot pass a scalar of type '{ty}'")
            nbytes = struct.calcsize("<" + code)
            if int(ka["size"]) != nbytes:
                raise KernelRuntimeError(f"kernel '{kernel_name}': argument #{i} ({ty}) is {nbytes} bytes but the "
                                         f"code object's kernarg #{i} is {ka['size']} bytes")
            fields.append((int(ka["offset"]), code, ("arg", i)))
        consts = {"hidden_group_size_x": block, "hidden_group_size_y": 1, "hidden_group_size_z": 1,
                  "hidden_grid_dims": 3, "hidden_dynamic_lds_size": dynamic_lds}
        for h in hidden:
            kind, off, n = str(h["kind"]), int(h["offset"]), int(h["size"])
            if kind.startswith("hidden_block_count_"):
                src = ("grid", "xyz".index(kind[-1]))
            elif kind in consts:
                src = ("const", consts[kind])
            else:
                continue  # zero: the buffer starts zeroed and the struct pads over it
            if n not in _UINT:
                raise KernelRuntimeError(f"kernel '{kernel_name}': hidden argument {kind} of {n} bytes")
            fields.append((off, _UINT[n], src))
        fields.sort(key=lambda f: f[0])
        fmt, pos = ["<"], 0
        for off, code, _ in fields:
            if off < pos:
                raise KernelRuntimeError(f"kernel '{kernel_name}': kernel arguments overlap at offset {off}")
            if off > pos:
                fmt.append(f"{off - pos}x")
            fmt.append(code)
            pos = off + struct.calcsize("<" + code)
        self.size = max(int(size or 0), pos)
        self.fields = fields
        self.struct = struct.Struct("".join(fmt))
        # 16-byte aligned (the segment's alignment is at most 16), zeroed: what no field covers stays 0
        self._raw = (ctypes.c_uint8 * (self.size + 16))()
        self.address = (ctypes.addressof(self._raw) + 15) // 16 * 16
        self.buffer = (ctypes.c_uint8 * self.size).from_address(self.address)
        self._size = ctypes.c_size_t(self.size)
        self.extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, self.address,
                                            HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(self._size),
                                            HIP_LAUNCH_PARAM_END)
        self.extra_address = ctypes.addressof(self.extra)

    def order(self) -> list:
        """The value expressions of the struct's fields, in order: ``a{i}`` / ``gx`` ``gy`` ``gz`` / constants."""
        out = []
        for _, _, (kind, v) in self.fields:
            out.append(f"a{v}" if kind == "arg" else ("gx", "gy", "gz")[v] if kind == "grid" else repr(int(v)))
        return out

    def pack(self, values: Sequence, grid: tuple) -> bytes:
        """Pack converted argument ``values`` for ``grid`` into the buffer; its bytes (tests, tools)."""
        env = {f"a{i}": v for i, v in enumerate(values)}
        env.update(gx=grid[0], gy=grid[1], gz=grid[2])
        self.struct.pack_into(self.buffer, 0, *[eval(e, {}, env) for e in self.order()])  # noqa: S307 - own names
        return bytes(self.buffer)


def pointer_value(a: Any, what: str) -> int:
    """The device address of a pointer argument: a GPU tensor, anything with ``data_ptr()`` or
    ``__cuda_array_interface__``, an int address, or None (null)."""
    if a is None:
        return 0
    if isinstance(a, int) and not isinstance(a, bool):
        return a
    dev = getattr(a, "device", None)
    if dev is not None and type(a).__module__.startswith("torch") and getattr(dev, "type", "cuda") != "cuda":
        raise KernelRuntimeError(f"{what} is a tensor on device '{dev}': the hip backend needs GPU tensors (on "
                                 f"ROCm builds of torch, device 'cuda': move it with .cuda())")
    if hasattr(a, "data_ptr"):
        return int(a.data_ptr())
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    if hasattr(a, "__array_interface__"):
        raise KernelRuntimeError(f"{what} is a host array ({type(a).__name__}); the hip backend needs device "
                                 f"memory (a GPU tensor)")
    raise KernelRuntimeError(f"{what}: expected a tensor, an object with data_ptr(), an int address or None; got "
                             f"{type(a).__name__}")


def scalar_value(v: Any, ty: str, what: str) -> Any:
    """A Python scalar as the struct code of ``ty`` packs it (:func:`tritium.runtime.kernel_args.scalar_value`)."""
    return _kernel_args.scalar_value(v, ty, what, "hip")


def convert_args(args: Sequence, types: Sequence[str], names: Sequence[str], kernel_name: str) -> list:
    """Every argument as the packer's struct takes it (the slow path, with errors that name the argument)."""
    if len(args) != len(types):
        raise KernelRuntimeError(f"kernel '{kernel_name}' takes {len(types)} runtime arguments, got {len(args)}")
    out = []
    for i, (a, ty) in enumerate(zip(args, types)):
        what = f"kernel '{kernel_name}' argument " + (f"'{names[i]}'" if i < len(names) and names[i] else f"#{i}")
        out.append(pointer_value(a, what) if is_pointer(ty) else scalar_value(a, ty, what))
    return out


_TEMPLATE = '''
def launch(gx, gy, gz, stream, args):
    {unpack}
    try:
        pack(buf, 0, {fast})
    except (AttributeError, TypeError, struct_error, OverflowError):
        {conv}
        pack(buf, 0, {fast_conv})
    err = hipModuleLaunchKernel(func, gx, gy, gz, block, 1, 1, shared, stream, None, extra)[0]
    if err:
        on_error(err)

def launch_grid(kernel, grid, args):
    gx, gy, gz = grid
    launch(gx, gy, gz, current_stream(), args)
'''


def make_launch(func: Any, packer: KernargPacker, *, block: int, shared: int, hip_launch: Callable,
                names: Sequence[str] = (), kernel_name: str = "kernel", on_error: Optional[Callable] = None,
                current_stream: Optional[Callable[[], Any]] = None) -> Callable:
    """A ``launch(gx, gy, gz, stream, args)`` function for one loaded kernel; ``launch.grid(kernel, grid, args)``
    launches on ``current_stream()`` (the driver's ``launch`` signature: the JIT's fast path).

    ``hip_launch`` is hip-python's ``hipModuleLaunchKernel`` (or a stand-in with its signature: tests); it gets
    ``kernelParams=None`` and ``extra`` the address of the packer's ``HIP_LAUNCH_PARAM_*`` array.  ``on_error(err)``
    is called with a non-zero hipError_t and raises.  Threads: the thread that made the function packs into the
    packer's buffer; other threads get a packer of their own (the buffer is read by the launch call only)."""
    types = packer.types
    n = len(types)
    order = packer.order()
    # torch GPU tensors inline (``is_cuda``: also true of ROCm torch's tensors); a host tensor goes to ``ptr`` (an
    # error naming the argument), anything without ``is_cuda`` (ints, None, other objects) to the slow path
    def fast_value(i: int, ty: str) -> str:
        if is_pointer(ty):
            return f"(a{i}.data_ptr() if a{i}.is_cuda else ptr(a{i}, {i}))"
        return f"(1 if a{i} else 0)" if ty in ("i1", "u1") else f"a{i}"

    arg_fast = {f"a{i}": fast_value(i, ty) for i, ty in enumerate(types)}
    fast = ", ".join(arg_fast.get(e, e) for e in order)
    if n == 0:
        unpack = "if args: convert(args)"
    else:
        unpack = f"if len(args) != {n}: convert(args)\n    " + ", ".join(f"a{i}" for i in range(n)) + ", = args"
    src = (_TEMPLATE.replace("{unpack}", unpack).replace("{fast}", fast)
           .replace("{conv}", (", ".join(f"a{i}" for i in range(n)) + ", = convert(args)") if n else "pass")
           .replace("{fast_conv}", ", ".join(order)))
    owner = threading.get_ident()
    per_thread: dict = {}  # thread id -> (its packer, its launch function)

    def convert(args):
        return convert_args(args, types, names, kernel_name)

    def ptr(a, i):
        what = f"kernel '{kernel_name}' argument " + (f"'{names[i]}'" if i < len(names) and names[i] else f"#{i}")
        return pointer_value(a, what)

    def default_error(err):
        raise KernelRuntimeError(f"hipModuleLaunchKernel of '{kernel_name}' failed: {err}")

    ns = {"pack": packer.struct.pack_into, "buf": packer.buffer, "extra": packer.extra_address,
          "struct_error": struct.error, "convert": convert, "ptr": ptr, "hipModuleLaunchKernel": hip_launch,
          "func": func, "block": int(block), "shared": int(shared), "on_error": on_error or default_error,
          "current_stream": current_stream or (lambda: 0)}
    exec(compile(src, f"<tritium-hip-launcher:{kernel_name}>", "exec"), ns)
    launch_owner, grid_owner = ns["launch"], ns["launch_grid"]

    def thread_launch() -> Callable:
        """The launch function of the calling thread (not the one that made this function): its own buffer."""
        tid = threading.get_ident()
        entry = per_thread.get(tid)
        if entry is None:
            p = KernargPacker(packer.types, packer.kernargs, packer.hidden, packer.size, packer.block,
                              packer.dynamic_lds, kernel_name)
            tns = dict(ns, buf=p.buffer, extra=p.extra_address)
            exec(compile(src, f"<tritium-hip-launcher:{kernel_name}>", "exec"), tns)
            entry = per_thread[tid] = (p, tns["launch"])
        return entry[1]

    def launch(gx, gy, gz, stream, args):
        if threading.get_ident() == owner:
            return launch_owner(gx, gy, gz, stream, args)
        return thread_launch()(gx, gy, gz, stream, args)

    def launch_grid(kernel, grid, args):
        if threading.get_ident() == owner:
            return grid_owner(kernel, grid, args)
        gx, gy, gz = grid
        return thread_launch()(gx, gy, gz, ns["current_stream"](), args)

    launch.source = src
    launch.grid = launch_grid
    launch.packer = packer
    return launch


__all__ = ["KernargPacker", "make_launch", "convert_args", "pointer_value", "scalar_value", "arg_types",
           "hidden_kernargs", "launcher_type", "is_pointer", "HIP_LAUNCH_PARAM_BUFFER_POINTER",
           "HIP_LAUNCH_PARAM_BUFFER_SIZE", "HIP_LAUNCH_PARAM_END"]
