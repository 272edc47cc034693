"""Launching a loaded CUDA function: argument packing and ``cuLaunchKernel``, built once per kernel.

The launch path is measured against Triton's C launcher, so per launch it does as little Python as possible:

* :class:`Packer` turns the kernel's argument types into one ``struct.Struct`` with an 8-byte slot per
  kernel parameter (little-endian, zero padding), a ctypes buffer it packs into, and a prebuilt ``void*[]``
  array whose i-th entry points at slot i.  A launch is one ``Struct.pack_into`` call plus ``cuLaunchKernel``
  with ``kernelParams`` given as the address of that array (cuda.bindings passes an int straight through as
  ``void**``; a ``(values, types)`` tuple would be converted element by element on every launch).
* The per-kernel launch function is generated Python source (like Triton's generated C launcher): the
  arguments are unpacked by position, torch CUDA tensors go through ``t.data_ptr()`` inline, everything else
  (objects with ``data_ptr()`` or ``__cuda_array_interface__``, ints, None, CPU tensors -> error, numpy
  scalars, out-of-range ints -> error) takes :func:`convert_args`, the slow path with the messages.
  A tensor on another device than the launch's is refused there, naming the argument and both devices.
* The driver call is the C extension :mod:`tritium_nvidia._cuda_launch` (``cuLaunchKernel`` from C with ints:
  cuda.bindings' wrapper costs ~1.2 us a call above the driver's own ~2.6 us on an H100 host) where it was built
  with the package, else cuda.bindings' ``cuLaunchKernel``.
* ``launch.direct(positions, n)`` is the JIT's relaunch fast path: the parameters' values as arguments (tensors
  as the addresses the JIT read), a one-dimensional grid, the current stream.

Tensormap parameters (sm_90 TMA descriptors).  A parameter of type ``"tensormap"`` (``.param .align 64 .b8
p[128]`` in the PTX) is a ``CUtensorMap`` passed by value: its slot is 128 bytes at a 64-byte-aligned address
(the buffer of a kernel with tensormaps is itself 64-byte aligned; the struct format pads with ``x`` and packs
``128s``).  It is not a runtime argument: the parameters right after a tensormap at index p are its tensor
descriptor's base pointer (p+1), shape (p+2 .. p+1+r, i32, outermost first) and strides (p+2+r .. p+1+2r, i64,
in elements, the last 1), and the launcher encodes the tensormap from those (``cuTensorMapEncodeTiled``, with
the element type, box, swizzle and out-of-bounds fill the kernel's ``metadata["tensormaps"]`` gives, see
:class:`TensorMapEncoder`).  So the launch function's ``args`` holds every parameter but the tensormaps, and
argument counts (and ``names``) are counted in those runtime arguments.  The encoded 128 bytes are cached per
tensormap by ``(base, *shape, *strides)``: a relaunch with the same tensors costs a tuple and a dict lookup.
A kernel without tensormaps gets exactly the launch source it had before tensormaps existed.

Parameters the cubin has beyond the kernel's signature (Triton-style global/profile scratch pointers) are
passed as null pointers.  Threads: the thread that made a launch function packs into the kernel's buffer, any
other thread into a buffer of its own, so no lock is taken per launch (the tensormap caches are dicts, whose
single operations the GIL keeps whole).
"""
from __future__ import annotations

import ctypes
import functools
import operator
import struct
import threading
from typing import Any, Callable, Optional, Sequence

from tritium.errors import ArgumentError, KernelRuntimeError
from tritium.runtime import kernel_args as _kernel_args

SLOT = 8  # bytes per kernel parameter slot in the argument buffer
TENSORMAP = "tensormap"  # the type of a CUtensorMap parameter (128 bytes by value, 64-byte aligned)
TENSORMAP_SIZE = 128
TENSORMAP_ALIGN = 64
TENSORMAP_CACHE_LIMIT = 4096  # encoded tensormaps kept per tensormap parameter (the cache is cleared beyond)

#: type string -> struct code (little-endian, no alignment), padded to SLOT bytes
_CODES = {
    "i1": "i", "u1": "i", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f", "fp64": "d",
    "fp8e4nv": "B", "fp8e5": "B", "fp8e4b8": "B", "fp8e5b16": "B",
}


def is_pointer(ty: str) -> bool:
    return ty.startswith("*") or ty.startswith("!tt.ptr")


def layout(types: Sequence[str], n_extra: int = 0) -> tuple:
    """``(struct format, slot offsets, size)`` of the argument buffer for ``types`` then ``n_extra`` null
    pointers: an SLOT-byte slot per parameter, a TENSORMAP_SIZE-byte slot at a TENSORMAP_ALIGN-aligned offset
    per tensormap."""
    parts = ["<"]
    offsets = []
    off = 0
    for ty in types:
        if ty == TENSORMAP:
            pad = -off % TENSORMAP_ALIGN
            parts.append((f"{pad}x" if pad else "") + f"{TENSORMAP_SIZE}s")
            off += pad
            offsets.append(off)
            off += TENSORMAP_SIZE
            continue
        if is_pointer(ty):
            code = "Q"
        else:
            try:
                code = _CODES[ty]
            except KeyError:
                raise KernelRuntimeError(f"the cuda launcher cannot pass a scalar of type '{ty}'") from None
        pad = SLOT - struct.calcsize("<" + code)
        parts.append(code + (f"{pad}x" if pad else ""))
        offsets.append(off)
        off += SLOT
    parts.append("Q" * n_extra)
    offsets.extend(off + SLOT * i for i in range(n_extra))
    return "".join(parts), offsets, off + SLOT * n_extra


def struct_format(types: Sequence[str], n_extra: int = 0) -> str:
    """The ``struct`` format packing ``types`` (then ``n_extra`` null pointers) into SLOT-byte slots (tensormaps:
    128 bytes at a 64-byte-aligned offset)."""
    return layout(types, n_extra)[0]


def wrong_device(a: Any, what: str, device: Optional[int]) -> Optional[ArgumentError]:
    """The error for a CUDA tensor ``a`` that is not on ``device`` (the launch's), else None."""
    dev = getattr(a, "device", None)
    index = getattr(dev, "index", None)
    if device is None or getattr(dev, "type", None) != "cuda" or index is None or index == device:
        return None
    return ArgumentError(
        f"{what} is a tensor on cuda:{index} but the kernel launches on cuda:{device}, the current device: "
        f"move the tensor (.to('cuda:{device}')) or launch under torch.cuda.device({index})")


def pointer_value(a: Any, what: str, check: Optional[Callable[[int], None]] = None,
                  device: Optional[int] = None) -> int:
    """The device address of a pointer argument: a tensor, anything with ``data_ptr()`` or
    ``__cuda_array_interface__``, an int address, or None (null).  ``device``: the launch's CUDA device (a torch
    tensor on another one is an error)."""
    if a is None:
        return 0
    if isinstance(a, int) and not isinstance(a, bool):
        return a
    err = wrong_device(a, what, device)
    if err is not None:
        raise err
    dev = getattr(a, "device", None)
    if dev is not None and getattr(dev, "type", "cuda") not in ("cuda", "hip") and type(a).__module__.startswith(
            "torch") and not a.is_pinned():  # pinned host memory: the device reaches it at the same address
        raise ArgumentError(f"{what} is a tensor on device '{dev}': the cuda backend needs CUDA tensors "
                            f"(move it with .cuda()) or pinned host memory (.pin_memory())")
    if hasattr(a, "data_ptr"):
        p = int(a.data_ptr())
    else:
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is None:
            if hasattr(a, "__array_interface__"):
                raise ArgumentError(f"{what} is a host array ({type(a).__name__}); the cuda backend needs "
                                    f"device memory (a CUDA tensor or an object with __cuda_array_interface__)")
            raise KernelRuntimeError(f"{what}: expected a tensor, an object with data_ptr() or "
                                     f"__cuda_array_interface__, an int address or None; got {type(a).__name__}")
        p = int(cai["data"][0])
    if check is not None and p:
        check(p)
    return p


def scalar_value(v: Any, ty: str, what: str) -> Any:
    """A Python scalar as the struct code of ``ty`` packs it (:func:`tritium.runtime.kernel_args.scalar_value`)."""
    return _kernel_args.scalar_value(v, ty, what, "cuda")


def convert_args(args: Sequence, types: Sequence[str], names: Sequence[str], kernel_name: str,
                 check: Optional[Callable[[int], None]] = None, tensormaps: Optional[dict] = None,
                 device: Optional[int] = None) -> list:
    """Every argument as ``struct`` packs it (the slow path, with errors that name the argument).

    ``types`` are the kernel's parameter types; with tensormap parameters, ``tensormaps`` maps each one's index
    in ``types`` to its :class:`TensorMapEncoder`, ``args`` (and ``names``) hold the other parameters only, and
    the result has each tensormap's 128 bytes at its index, encoded from the converted arguments after it."""
    rt = [ty for ty in types if ty != TENSORMAP] if tensormaps else types
    if len(args) != len(rt):
        raise KernelRuntimeError(f"kernel '{kernel_name}' takes {len(rt)} runtime arguments, got {len(args)}")
    out = []
    for i, (a, ty) in enumerate(zip(args, rt)):
        what = f"kernel '{kernel_name}' argument '{names[i]}'" if i < len(names) and names[i] else \
            f"kernel '{kernel_name}' argument #{i}"
        if is_pointer(ty):
            out.append(pointer_value(a, what, check, device))
        elif ty == TENSORMAP:
            raise KernelRuntimeError(f"kernel '{kernel_name}': parameter #{i} is a tensormap but the launcher has "
                                     f"no tensormap metadata for it")
        else:
            out.append(scalar_value(a, ty, what))
    if tensormaps:
        for i in sorted(tensormaps):  # the runtime arguments, with a placeholder at each tensormap's index
            out.insert(i, None)
        for i, enc in tensormaps.items():
            key = tuple(out[i + 1:i + 2 + 2 * enc.rank])
            out[i] = enc.cache.get(key) or enc(key)
    return out


def _error_name(err: Any) -> str:
    """``CUDA_ERROR_...`` (code) for a CUresult (an enum, or an int from a stand-in)."""
    try:
        code = int(err)
    except (TypeError, ValueError):
        return str(err)
    name = getattr(err, "name", None)
    if not isinstance(name, str):
        try:
            from cuda.bindings import driver

            name = driver.CUresult(code).name
        except Exception:  # noqa: BLE001 - naming an error must never raise
            name = "CUresult"
    return f"{name} ({code})"


#: tritium element type -> (CUtensorMapDataType name, bytes per element)
_TM_DTYPES = {
    "fp16": ("FLOAT16", 2), "bf16": ("BFLOAT16", 2), "fp32": ("FLOAT32", 4), "fp64": ("FLOAT64", 8),
    "i32": ("INT32", 4), "u32": ("UINT32", 4), "i64": ("INT64", 8), "u64": ("UINT64", 8),
    "i16": ("UINT16", 2), "u16": ("UINT16", 2), "i8": ("UINT8", 1), "u8": ("UINT8", 1), "i1": ("UINT8", 1),
    "u1": ("UINT8", 1),
}
_TM_DATA_TYPE = {"UINT8": 0, "UINT16": 1, "UINT32": 2, "INT32": 3, "UINT64": 4, "INT64": 5, "FLOAT16": 6,
                 "FLOAT32": 7, "FLOAT64": 8, "BFLOAT16": 9}  # the CUtensorMapDataType values (no cuda.bindings)
_TM_SWIZZLE = {0: ("NONE", 0), 32: ("32B", 1), 64: ("64B", 2), 128: ("128B", 3)}


def _tm_dtype(dtype: str) -> tuple:
    if dtype in _TM_DTYPES:
        return _TM_DTYPES[dtype]
    if dtype.startswith("fp8"):
        return "UINT8", 1
    raise KeyError(dtype)


def _tm_enums(data_type: str, swizzle: int, fill_nan: bool) -> tuple:
    """``(data type, interleave, swizzle, l2 promotion, oob fill)`` as cuda.bindings' enums (plain ints with the
    same values where cuda.bindings is not importable: injected encoders in tests)."""
    try:
        from cuda.bindings import driver as d
    except ImportError:
        return _TM_DATA_TYPE[data_type], 0, _TM_SWIZZLE[swizzle][1], 2, 1 if fill_nan else 0
    return (getattr(d.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + data_type),
            d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(d.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + _TM_SWIZZLE[swizzle][0]),
            d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if fill_nan else
            d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)


def cuda_encode_tiled(data_type, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                      l2_promotion, oob_fill) -> tuple:
    """``cuda.bindings.driver.cuTensorMapEncodeTiled`` taking plain ints in its lists (it wants ``cuuint64_t`` /
    ``cuuint32_t`` elements): the default encoder of :class:`TensorMapEncoder`.  Returns ``(CUresult,
    CUtensorMap)``."""
    from cuda.bindings import driver as d

    u64, u32 = d.cuuint64_t, d.cuuint32_t
    return d.cuTensorMapEncodeTiled(data_type, rank, address, [u64(x) for x in dims], [u64(x) for x in strides],
                                    [u32(x) for x in box], [u32(x) for x in element_strides], interleave, swizzle,
                                    l2_promotion, oob_fill)


def _tensormap_bytes(m: Any) -> bytes:
    """The 128 bytes of an encoded tensormap: a ``CUtensorMap`` (read at ``getPtr()``), or bytes (stand-ins)."""
    if isinstance(m, (bytes, bytearray, memoryview)):
        b = bytes(m)
    elif hasattr(m, "getPtr"):
        b = ctypes.string_at(m.getPtr(), TENSORMAP_SIZE)
    else:  # ``opaque``: 16 uint64
        b = struct.pack("<16Q", *(int(x) for x in m.opaque))
    if len(b) != TENSORMAP_SIZE:
        raise KernelRuntimeError(f"an encoded tensormap has {len(b)} bytes, expected {TENSORMAP_SIZE}")
    return b


class TensorMapEncoder:
    """One tensormap parameter of a kernel: ``enc(key)`` encodes (and caches) the 128 bytes for ``key = (base
    address, *shape, *strides)`` (the runtime arguments after the tensormap; shape and strides outermost first,
    strides in elements); ``enc.cache`` maps keys to encoded bytes (looked up inline by the launch function).

    ``spec`` is the kernel metadata's entry: ``{"index", "dtype", "rank", "box", "swizzle", "fill_nan"}``.
    ``encode`` has ``cuTensorMapEncodeTiled``'s signature with plain-int lists (default
    :func:`cuda_encode_tiled`) and returns ``(CUresult, tensormap)``; the tensormap is a ``CUtensorMap`` or 128
    bytes.  Encoding failures raise :class:`KernelRuntimeError` naming the kernel and the descriptor."""

    def __init__(self, spec: dict, number: int, types: Sequence[str], kernel_name: str = "kernel",
                 names: Sequence[str] = (), encode: Optional[Callable] = None):
        self.number = number
        self.kernel_name = kernel_name
        self.index = index = int(spec["index"])
        self.dtype = str(spec["dtype"])
        self.rank = rank = int(spec["rank"])
        self.box = [int(b) for b in spec["box"]]
        self.swizzle = int(spec.get("swizzle", 0) or 0)
        self.fill_nan = bool(spec.get("fill_nan", False))
        where = f"kernel '{kernel_name}': tensormap #{number} (parameter {index})"
        if not 0 <= index < len(types) or types[index] != TENSORMAP:
            raise KernelRuntimeError(f"{where}: the kernel's parameter {index} is not a tensormap "
                                     f"(parameter types: {list(types)})")
        if not 1 <= rank <= 5 or len(self.box) != rank:
            raise KernelRuntimeError(f"{where}: rank {rank} with box {self.box} (TMA takes ranks 1 to 5, one box "
                                     f"dimension each)")
        if index + 1 + 2 * rank >= len(types) or not is_pointer(types[index + 1]) or \
                TENSORMAP in types[index + 2:index + 2 + 2 * rank]:
            raise KernelRuntimeError(f"{where}: a tensormap must be followed by its descriptor's base pointer, "
                                     f"{rank} shape and {rank} stride parameters (parameter types: {list(types)})")
        try:
            data_type, self.element_size = _tm_dtype(self.dtype)
        except KeyError:
            raise KernelRuntimeError(f"{where}: TMA cannot copy elements of type '{self.dtype}'") from None
        if self.swizzle not in _TM_SWIZZLE:
            raise KernelRuntimeError(f"{where}: swizzle must be 0, 32, 64 or 128 bytes, got {self.swizzle}")
        self.data_type, self.interleave, self.swizzle_mode, self.l2_promotion, self.oob_fill = \
            _tm_enums(data_type, self.swizzle, self.fill_nan)
        self.box_dim = self.box[::-1]  # innermost first, as the driver takes dimensions
        self.element_strides = [1] * rank
        self.encode = encode or cuda_encode_tiled
        # the descriptor's base pointer is runtime argument index - number (the tensormaps before it and itself
        # are not runtime arguments)
        base = index - number
        name = names[base] if base < len(names) and names[base] else ""
        self.what = f"tensor descriptor #{number} (parameter {index}" + (f", base argument '{name}'" if name else
                                                                         "") + ")"
        self.cache: dict = {}

    def _fail(self, why: str, address: int, shape: Sequence[int], strides: Sequence[int]) -> KernelRuntimeError:
        hints = []
        if address % 16:
            hints.append("the base address must be 16-byte aligned")
        if any(s * self.element_size % 16 for s in strides[:-1]):
            hints.append("every stride but the innermost must be a multiple of 16 bytes")
        if any(d <= 0 for d in shape):
            hints.append("every dimension must be positive")
        return KernelRuntimeError(
            f"kernel '{self.kernel_name}': {self.what}: cuTensorMapEncodeTiled failed: {why}; base 0x{address:x}, "
            f"shape {tuple(shape)}, strides {tuple(strides)} (elements), box {tuple(self.box)}, {self.dtype}, "
            f"swizzle {self.swizzle}" + (f" ({'; '.join(hints)})" if hints else ""))

    def __call__(self, key: tuple) -> bytes:
        """Encode the tensormap for ``key`` (a cache miss), cache and return its 128 bytes."""
        r = self.rank
        key = tuple(operator.index(v) for v in key)  # TypeError (floats...): the slow path's messages
        address, shape, strides = key[0], key[1:1 + r], key[1 + r:]
        if len(strides) != r:
            raise KernelRuntimeError(f"kernel '{self.kernel_name}': {self.what} takes a base, {r} dimensions "
                                     f"and {r} strides, got {len(key)} values")
        if strides[-1] != 1:
            raise KernelRuntimeError(f"kernel '{self.kernel_name}': {self.what}: the innermost stride must be 1 "
                                     f"for TMA, got strides {strides}")
        es = self.element_size
        try:
            res = self.encode(self.data_type, r, address, list(shape[::-1]), [s * es for s in strides[-2::-1]],
                              self.box_dim, self.element_strides, self.interleave, self.swizzle_mode,
                              self.l2_promotion, self.oob_fill)
        except (OverflowError, ValueError) as e:  # negative values do not convert to cuuint64_t
            raise self._fail(f"{type(e).__name__}: {e}", address, shape, strides) from None
        err = res[0]
        if int(err):
            raise self._fail(_error_name(err), address, shape, strides)
        b = _tensormap_bytes(res[1])
        cache = self.cache
        if len(cache) >= TENSORMAP_CACHE_LIMIT:
            cache.clear()
        cache[key] = b
        return b


class Packer:
    """The argument buffer of one kernel: ``pack(args)`` fills it; ``params`` is the ``void**`` address.

    ``types`` are the kernel's parameter types (``"tensormap"`` for a 128-byte, 64-byte-aligned CUtensorMap
    slot), then ``n_extra`` null pointers.  ``offsets[i]`` is slot i's offset in ``buffer``."""

    def __init__(self, types: Sequence[str], n_extra: int = 0):
        self.types = tuple(types)
        self.n_extra = n_extra
        self.n = len(self.types) + n_extra
        fmt, self.offsets, size = layout(self.types, n_extra)
        self.struct = struct.Struct(fmt)
        self.tensormaps = tuple(i for i, ty in enumerate(self.types) if ty == TENSORMAP)
        if self.tensormaps:  # a TENSORMAP_ALIGN-aligned buffer: a view into a larger one
            self._raw = ctypes.create_string_buffer(size + TENSORMAP_ALIGN)
            pad = -ctypes.addressof(self._raw) % TENSORMAP_ALIGN
            self.buffer = (ctypes.c_char * size).from_buffer(self._raw, pad)
        else:
            self.buffer = ctypes.create_string_buffer(max(SLOT, SLOT * self.n))
        base = ctypes.addressof(self.buffer)
        self.array = (ctypes.c_void_p * max(1, self.n))(*[base + off for off in self.offsets or [0]])
        self.params = ctypes.addressof(self.array) if self.n else 0
        self.extra = (0,) * n_extra

    def pack(self, values: Sequence) -> None:
        self.struct.pack_into(self.buffer, 0, *values, *self.extra)

    def read(self) -> tuple:
        """The packed values (tests)."""
        return self.struct.unpack_from(self.buffer, 0)


_BODY = '''
    {unpack}
    if ident() == owner:
        b, p = buf, params
    else:
        b, p = thread_buffer()
    try:
        pack(b, 0, {fast}{extra})
    except (AttributeError, TypeError, struct_error, OverflowError, KernelRuntimeError):
        pack(b, 0, *convert(args){extra})
    {call}
'''
# the driver call: cuda.bindings' cuLaunchKernel (a CUstream object), or the C extension's (ints)
_CALL_BINDINGS = "err, = cuLaunchKernel(func, gx, gy, gz, block, 1, 1, shared, {stream}, p, 0)"
_CALL_C = "err = claunch(func, gx, gy, gz, block, shared, {stream}, p)"

_TEMPLATE = '''
def launch(gx, gy, gz, stream, args):{body}    if err:
        on_error(err, args)
'''

# the current stream: its CUstream object (cached in ``streams``, made by ``make_stream(raw handle)``) for
# cuda.bindings, the raw handle itself for the C call
_STREAM_BINDINGS = '''
    s = current_stream()
    cs = streams.get(s)
    if cs is None:
        cs = make_stream(s)'''
_STREAM_C = '''
    cs = current_stream()'''

# the same launch for the current stream, with ``CUDADriver.launch``'s signature (``kernel`` is the one this
# function was made for); ``on_error`` raising ``retry`` relaunches once through ``launch``
_GRID_TEMPLATE = '''
def launch_grid(kernel, grid, args):{stream}
    gx, gy, gz = grid{body}    if err:
        try:
            on_error(err, args)
        except retry:
            launch(gx, gy, gz, cs, args)
'''


# the launch over (gx, 1, 1) on the current stream with the arguments as parameters (the JIT's fast path, see
# ``launch.direct``): no argument tuple, no grid tuple
_DIRECT_TEMPLATE = '''
def launch_direct(gx{params}):{stream}
    gy = gz = 1{body}    if err:
        args = {args}
        try:
            on_error(err, args)
        except retry:
            launch(gx, 1, 1, cs, args)
'''


def make_launch(func: Any, packer: Packer, *, block: int, shared: int, cu_launch: Callable,
                names: Sequence[str] = (), kernel_name: str = "kernel", on_error: Optional[Callable] = None,
                check_pointer: Optional[Callable[[int], None]] = None,
                current_stream: Optional[Callable[[], Any]] = None, make_stream: Optional[Callable] = None,
                streams: Optional[dict] = None, retry: type = (), tensormaps: Optional[Sequence[dict]] = None,
                encode_tensormap: Optional[Callable] = None, global_scratch: Optional[tuple] = None,
                allocator: Optional[Callable] = None, device: Optional[int] = None,
                c_launch: Optional[Callable] = None, c_direct: Optional[tuple] = None) -> Callable:
    """A ``launch(gx, gy, gz, stream, args)`` function for one loaded kernel.

    ``cu_launch`` is ``cuda.bindings.driver.cuLaunchKernel`` (or a stand-in with its signature: tests).
    ``c_launch``: :mod:`tritium_nvidia._cuda_launch`'s ``launch`` (or a stand-in with its signature), called
    instead with ints (``func`` as an int, streams as raw handles) where the extension is built.  ``c_direct``:
    the extension's ``(make_direct, launch_direct)``, which make the JIT's direct launch a C call (the generated
    Python function stays its fallback) when ``current_stream`` is ``functools.partial(getter, device)``.

    Threads: the thread that made the function packs into ``packer``'s buffer without a lock; any other thread
    into a buffer of its own (made on its first launch).
    ``stream`` is whatever ``cu_launch`` accepts for a stream (a ``CUstream`` or an int).  ``on_error(err, args)``
    is called with a non-zero CUresult and raises.

    With ``current_stream`` (a callable returning the current raw stream handle), the returned function also has
    ``launch.grid(kernel, grid, args)``: the launch on the current stream, ``grid`` a 3-tuple, the stream's
    CUstream object from ``streams`` (filled by ``make_stream(handle)``); ``on_error`` raising ``retry`` relaunches
    once.  It has the driver's ``launch`` signature (``kernel`` is not read): the JIT's launch fast path calls it
    (``CUDADriver.launcher``).

    ``tensormaps`` is the kernel metadata's list (one dict per ``"tensormap"`` parameter of ``packer.types``, see
    :class:`TensorMapEncoder`); ``args`` then holds the other parameters only (``names`` names those), and each
    tensormap is encoded from the arguments after it with ``encode_tensormap`` (``cuTensorMapEncodeTiled``'s
    signature with plain-int lists; default :func:`cuda_encode_tiled`), cached per (base, shape, strides).
    ``launch.tensormaps`` are the :class:`TensorMapEncoder` objects.

    ``device``: the CUDA device index the function launches on; a tensor argument on another device (or on the
    host) is then an error naming the argument and both devices (without it, only host tensors are refused).
    ``launch.direct(positions, n_values)`` makes the JIT fast path's launch function (see there).
    """
    if c_launch is not None:
        try:
            int(func)
        except (TypeError, ValueError):  # a handle that is not an address (stand-ins): cuda.bindings' call
            c_launch = None
    types = packer.types
    specs = list(tensormaps or ())
    encoders = [TensorMapEncoder(spec, k, types, kernel_name, names, encode_tensormap) for k, spec in
                enumerate(sorted(specs, key=lambda sp: int(sp["index"])))]
    by_index = {e.index: e for e in encoders}
    if len(by_index) != len(encoders) or set(by_index) != set(packer.tensormaps):
        raise KernelRuntimeError(f"kernel '{kernel_name}': the tensormap metadata (parameters "
                                 f"{sorted(int(sp['index']) for sp in specs)}) does not describe the kernel's "
                                 f"tensormap parameters {list(packer.tensormaps)}")
    n = len(types) - len(encoders)  # runtime arguments
    argv = [f"a{i}" for i in range(n)]
    if n == 0:
        unpack = (f"if args: raise KernelRuntimeError({('kernel ' + repr(kernel_name) + ' takes no runtime arguments, got ')!r}"
                  f" + str(len(args)))")
    elif n == 1:
        unpack = f"{argv[0]}, = args"
    else:
        unpack = ", ".join(argv) + " = args"
    # torch CUDA tensors inline (``get_device()`` / ``is_cuda`` guard against tensors elsewhere); anything else
    # raises AttributeError and goes through the slow path
    def on_device(a: str) -> str:  # the inline test that tensor ``a`` lives on the launch's device
        return f"{a}.is_cuda" if device is None else f"{a}.get_device() == {int(device)}"

    fast = []
    pre = []  # tensormaps: statements before the pack (a descriptor's base address, used twice)
    j = 0  # runtime argument of parameter i
    for i, ty in enumerate(types):
        if ty == TENSORMAP:
            e = by_index[i]
            a = argv[j]  # the descriptor's base: the next runtime argument
            pre.append(f"d{j} = {a}.data_ptr() if {on_device(a)} else elsewhere({a}, {j})")
            key = "(" + ", ".join([f"d{j}"] + argv[j + 1:j + 1 + 2 * e.rank]) + ")"
            fast.append(f"tmc{e.number}({key}) or tm{e.number}({key})")
            continue
        a = argv[j]
        if i - 1 in by_index:
            fast.append(f"d{j}")
        elif is_pointer(ty):
            fast.append(f"({a}.data_ptr() if {on_device(a)} else elsewhere({a}, {j}))")
        else:
            fast.append(a)
        j += 1
    extra_vals = ["0"] * packer.n_extra
    scratch_size, scratch_align = (global_scratch or (0, 1))
    if scratch_size:  # the first extra parameter: this launch's global scratch (tensor maps made on the device)
        if not extra_vals:
            raise KernelRuntimeError(f"kernel '{kernel_name}' needs global scratch memory but has no parameter for it")
        extra_vals[0] = "gs"
    extra = (", " if fast else "") + ", ".join(extra_vals) if packer.n_extra else ""
    if n:  # wrong argument counts: a clear message instead of "not enough values to unpack"
        unpack = f"if len(args) != {n}:\n        convert(args)\n    {unpack}"
    unpack_line = unpack
    if scratch_size:
        unpack += "\n    gs = scratch(gx * gy * gz)"
    slow_extra = "".join(f", {v}" for v in extra_vals)  # (extra, unless there are no arguments)
    call = _CALL_C if c_launch is not None else _CALL_BINDINGS
    body = _BODY.replace("{unpack}", unpack).replace("*convert(args){extra}", "*convert(args)" + slow_extra)
    body = body.replace("{call}", call)
    # the direct launch gets device addresses (ints) where the JIT had tensors: packed as they are
    direct_fast = ", ".join(argv)
    direct_body = None if encoders else body.replace("{fast}", direct_fast).replace("{extra}", extra)
    body = body.replace("{fast}", ", ".join(fast)).replace("{extra}", extra)
    if pre:
        body = body.replace("    try:\n", "    try:\n" + "".join(f"        {st}\n" for st in pre), 1)
    src = _TEMPLATE.replace("{body}", body.replace("{stream}", "int(stream)" if c_launch else "stream"))
    stream_prelude = _STREAM_C if c_launch is not None else _STREAM_BINDINGS
    if current_stream is not None:
        src += _GRID_TEMPLATE.replace("{body}", body.replace("{stream}", "cs")).replace("{stream}", stream_prelude)

    tm_args = by_index or None

    def convert(args):
        return convert_args(args, types, names, kernel_name, check_pointer, tm_args, device)

    def elsewhere(a, j):
        """The address of a tensor not on the launch's device: pinned host memory's own, else an error."""
        what = f"kernel '{kernel_name}' argument " + (f"'{names[j]}'" if j < len(names) and names[j] else f"#{j}")
        return pointer_value(a, what, device=device)

    def default_error(err, args):
        raise KernelRuntimeError(f"cuLaunchKernel of '{kernel_name}' failed: {err}")

    held = [None]

    if scratch_size and allocator is None:
        from tritium.runtime._allocation import scratch_allocator as allocator_now
    else:
        allocator_now = lambda: allocator  # noqa: E731

    def scratch(programs):
        """``scratch_size`` bytes per program from the allocator ``triton.set_allocator`` installed (else torch's;
        kept until the next launch); its device address."""
        buf = allocator_now()(scratch_size * programs, scratch_align, None)
        held[0] = buf
        return pointer_value(buf, f"kernel '{kernel_name}' global scratch")

    thread_buffers: dict = {}
    buffers_lock = threading.Lock()

    def thread_buffer() -> tuple:
        """``(buffer, params)`` of the calling thread (not the one that made this function)."""
        tid = threading.get_ident()
        pb = thread_buffers.get(tid)
        if pb is None:
            with buffers_lock:
                pb = thread_buffers[tid] = Packer(types, packer.n_extra)
        return pb.buffer, pb.params

    ns = {"ident": threading.get_ident, "owner": threading.get_ident(), "thread_buffer": thread_buffer,
          "pack": packer.struct.pack_into, "buf": packer.buffer,
          "struct_error": struct.error, "KernelRuntimeError": KernelRuntimeError, "convert": convert,
          "elsewhere": elsewhere, "cuLaunchKernel": cu_launch, "claunch": c_launch,
          "func": int(func) if c_launch is not None else func, "block": int(block), "shared": int(shared),
          "params": packer.params, "on_error": on_error or default_error, "current_stream": current_stream,
          "streams": streams if streams is not None else {}, "make_stream": make_stream, "retry": retry,
          "scratch": scratch}
    for e in encoders:
        ns[f"tmc{e.number}"] = e.cache.get
        ns[f"tm{e.number}"] = e
    exec(compile(src, f"<tritium-cuda-launcher:{kernel_name}>", "exec"), ns)
    fn = ns["launch"]
    fn.source = src
    fn.grid = ns.get("launch_grid")
    fn.tensormaps = encoders
    directs: dict = {}

    def direct(positions: Sequence[int], n_values: int) -> Callable:
        """``launch_direct(gx, v0, ..., v{n_values-1})``: the launch over the one-dimensional grid ``(gx, 1, 1)``
        on the current stream, the runtime arguments being ``v[i] for i in positions`` (the JIT passes every
        parameter's value, constexprs included, and ignores the others), a pointer argument given as its device
        address (the JIT read ``data_ptr()`` and checked the tensor's device already) or as anything
        :func:`pointer_value` takes (the slow path's conversion then).  Generated once per ``(positions,
        n_values)``; needs ``current_stream``, and no tensormap parameters."""
        key = (tuple(positions), n_values)
        f = directs.get(key)
        if f is None:
            if direct_body is None or current_stream is None or len(key[0]) != n or len(set(key[0])) != n or \
                    not all(0 <= i < n_values for i in key[0]):
                raise KernelRuntimeError(f"kernel '{kernel_name}': no direct launch for runtime argument positions "
                                         f"{key[0]} of {n_values} values ({n} runtime arguments)")
            slot = {i: j for j, i in enumerate(key[0])}
            params = ", ".join(f"a{slot[i]}" if i in slot else f"_v{i}" for i in range(n_values))
            args_tuple = "(" + "".join(f"a{j}, " for j in range(n)) + ")"
            dbody = direct_body.replace("{stream}", "cs").replace("*convert(args)", f"*convert({args_tuple})")
            dsrc = _DIRECT_TEMPLATE.replace("{params}", (", " + params) if params else "").replace(
                "{args}", args_tuple).replace("{body}", dbody).replace("{stream}", stream_prelude)
            dns = dict(ns)
            exec(compile(dsrc, f"<tritium-cuda-launcher:{kernel_name}:direct>", "exec"), dns)
            f = dns["launch_direct"]
            f.source = dsrc
            c = c_direct_of(f, key[0], n_values)
            directs[key] = f = c if c is not None else f
        return f

    def c_direct_of(fallback: Callable, positions: tuple, n_values: int) -> Optional[Callable]:
        """The direct launch as one C call (``c_direct``), with ``fallback`` for everything but the plain case."""
        getter = current_stream
        if c_direct is None or c_launch is None or scratch_size or not isinstance(getter, functools.partial) or \
                len(getter.args) != 1 or getter.keywords:
            return None
        make, launch_c = c_direct
        # the runtime arguments' struct codes: packed in C when all are pointers or integers of 32/64 bits
        codes = "".join("Q" if is_pointer(ty) else _CODES.get(ty, "?") for ty in types)
        cap = make(fallback, int(func), int(block), int(shared), getter.func, getter.args[0],
                   packer.struct.pack_into, packer.buffer, packer.params, tuple(positions), ns["owner"],
                   packer.n_extra, n_values, codes if set(codes) <= set("QqiI") else "",
                   tuple(packer.offsets[:len(types)]), ctypes.addressof(packer.buffer), ctypes.sizeof(packer.buffer))
        f = functools.partial(launch_c, cap)
        f.source, f.fallback = fallback.source, fallback
        return f

    # without the argument-count check and unpacking (the direct function's parameters are the names)
    if direct_body is not None:
        direct_body = direct_body.replace(unpack_line, "", 1)
    fn.direct = direct if current_stream is not None and direct_body is not None else None
    return fn


__all__ = ["Packer", "make_launch", "convert_args", "pointer_value", "wrong_device", "scalar_value", "struct_format",
           "layout", "is_pointer", "SLOT", "TENSORMAP", "TensorMapEncoder", "cuda_encode_tiled"]
