"""The CUDA driver: device probing and properties, contexts, module loading, and launching (cuda-python).

Importing this module imports nothing CUDA: ``cuda.bindings.driver`` is imported the first time the driver is
asked anything, and a machine without cuda-python, libcuda or a device gets ``is_active() == False`` with the
reason in ``inactive_reason()``.  Every failing driver call raises :class:`CUDAError` with the CUresult's name.

Launch path (per launch, after the first): the current device and stream (torch's, when torch is imported),
one dict lookup for the kernel's :class:`LoadedKernel` on that device (``kernel.loaded[device]``), then
:mod:`tritium_nvidia.launcher` (one ``struct.pack_into`` and ``cuLaunchKernel``).  The JIT's fast path calls the
loaded kernel's generated launch function directly (:meth:`CUDADriver.launcher`).

Parameters: the lowered kernel's (``metadata["arg_types"]``, see :func:`arg_types`), plus null pointers for
scratch parameters the cubin has beyond them.  An sm_90 kernel taking host-side tensor descriptors as TMA tensor
maps has a ``"tensormap"`` parameter (128 bytes by value) before each such descriptor's base, shape and strides,
described by ``metadata["tensormaps"]``: the runtime arguments do not include it, the launcher encodes it from the
descriptor's arguments (``cuTensorMapEncodeTiled``, cached per base/shape/strides; see
:mod:`tritium_nvidia.launcher`).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

from tritium.compiler.backend import Binding, DriverUtils, GPUTarget, no_direct_launch
from tritium.compiler.gpu_driver import TorchGPUDriver, compile_only, kernel_binary, no_device_node
from tritium.errors import BackendUnavailable, CUDAError, KernelRuntimeError, OutOfResources  # noqa: F401

from . import launcher as _launcher
from .arch import PIP

DEFAULT_SHARED_LIMIT = 48 * 1024  # without opting in, a block gets at most 48 KiB of shared memory

_cu = None


def cu():
    """``cuda.bindings.driver`` (imported on first use)."""
    global _cu
    if _cu is None:
        from cuda.bindings import driver

        _cu = driver
    return _cu


def cuda_error(call: str, code: Any) -> CUDAError:
    """The :class:`tritium.errors.CUDAError` for a failed driver call, with the CUresult's name and description."""
    return CUDAError(call, code, error_name(code), error_string(code))


def error_name(code: Any) -> str:
    """``CUDA_ERROR_...`` for a CUresult; while an error is being reported, a failure to name it falls back to
    the enum's name, then the number (it never replaces the error being reported)."""
    try:
        err, name = cu().cuGetErrorName(code)
        if int(err) == 0 and name:
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - naming an error must never raise
        pass
    try:
        return cu().CUresult(int(code)).name
    except Exception:  # noqa: BLE001 - as above: the number names it
        return f"CUresult {int(code)}"


def error_string(code: Any) -> str:
    """The CUresult's description, or "" (see :func:`error_name`)."""
    try:
        err, s = cu().cuGetErrorString(code)
        if int(err) == 0 and s:
            return s.decode() if isinstance(s, bytes) else str(s)
    except Exception:  # noqa: BLE001 - the description is optional in an error message
        pass
    return ""


def check(call: str, result: tuple) -> Any:
    """Unwrap a cuda.bindings result tuple ``(CUresult, *values)``; raise :class:`CUDAError` on failure."""
    err = result[0]
    if int(err) != 0:
        raise cuda_error(call, err)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def _attr(name: str):
    return getattr(cu().CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)


class _Device:
    """One CUDA device: handle, primary context, properties (read once)."""

    def __init__(self, index: int):
        c = cu()
        self.index = index
        self.handle = check("cuDeviceGet", c.cuDeviceGet(index))
        self.context = None
        self._props: Optional[dict] = None
        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        self.capability = major * 10 + minor

    def attribute(self, name: str) -> int:
        return int(check(f"cuDeviceGetAttribute({name})", cu().cuDeviceGetAttribute(_attr(name), self.handle)))

    def attribute_or(self, name: str, default: Any = None) -> Any:
        try:
            return self.attribute(name)
        except (CUDAError, AttributeError):  # attributes removed in newer drivers (clock rates in CUDA 13)
            return default

    def properties(self) -> dict:
        if self._props is None:
            self._props = {
                "name": self.name(),
                "multiprocessor_count": self.attribute("MULTIPROCESSOR_COUNT"),
                "max_shared_mem": self.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                "max_shared_mem_default": self.attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
                "max_num_regs": self.attribute("MAX_REGISTERS_PER_BLOCK"),
                "warpSize": self.attribute("WARP_SIZE"),
                "sm_clock_rate": self.attribute_or("CLOCK_RATE"),  # kHz
                "mem_clock_rate": self.attribute_or("MEMORY_CLOCK_RATE"),  # kHz
                "mem_bus_width": self.attribute_or("GLOBAL_MEMORY_BUS_WIDTH"),  # bits
                "l2_cache_size": self.attribute_or("L2_CACHE_SIZE"),
                "capability": self.capability,
            }
        return self._props

    def name(self) -> str:
        try:
            raw = check("cuDeviceGetName", cu().cuDeviceGetName(256, self.handle))
            return raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
        except CUDAError:  # a name is for people: the index will do
            return f"cuda:{self.index}"

    def make_current(self) -> None:
        """Retain the device's primary context (once) and make it current on this thread."""
        c = cu()
        if self.context is None:
            self.context = check("cuDevicePrimaryCtxRetain", c.cuDevicePrimaryCtxRetain(self.handle))
        check("cuCtxSetCurrent", c.cuCtxSetCurrent(self.context))


LAUNCHER_ENV = "TRITIUM_CUDA_LAUNCHER"


def c_launcher() -> Optional[Any]:
    """The C extension :mod:`tritium_nvidia._cuda_launch` (``cuLaunchKernel`` from C) when it was built with the
    package and finds libcuda, else None (cuda.bindings' ``cuLaunchKernel`` is called).
    ``TRITIUM_CUDA_LAUNCHER=bindings`` chooses cuda.bindings; ``=c`` makes a missing extension an error."""
    choice = os.environ.get(LAUNCHER_ENV, "").strip().lower()
    if choice == "bindings":
        return None
    if choice not in ("", "c"):
        raise KernelRuntimeError(f"{LAUNCHER_ENV}={choice!r}: expected 'c' or 'bindings'")
    try:
        from . import _cuda_launch
    except ImportError as e:
        if choice == "c":
            raise KernelRuntimeError(f"{LAUNCHER_ENV}=c but the C launcher was not built with this installation "
                                     f"({e}); reinstall tritium where a C compiler is present") from None
        return None
    why = _cuda_launch.available()
    if why:
        if choice == "c":
            raise KernelRuntimeError(f"{LAUNCHER_ENV}=c but the C launcher cannot call the driver: {why}")
        return None
    return _cuda_launch


def _relaxed_capture_mode():
    """Put this thread in relaxed stream-capture mode; returns the function restoring its previous mode (a no-op
    where the bindings lack ``cuThreadExchangeStreamCaptureMode``)."""
    c = cu()
    try:
        err, old = c.cuThreadExchangeStreamCaptureMode(c.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    except (AttributeError, TypeError):
        return lambda: None
    if int(err) != 0:
        return lambda: None
    return lambda: c.cuThreadExchangeStreamCaptureMode(old)


class LoadedKernel:
    """A CompiledKernel's cubin loaded on one device: module, function, registers, and its launch function."""

    def __init__(self, driver: "CUDADriver", kernel: Any, device: _Device):
        c = cu()
        md = kernel.metadata
        self.name, cubin = kernel_binary(kernel, "cubin", "cuda", device.index, device.capability,
                                         arch_of=lambda a: int(str(a).rstrip("a")), spell=lambda a: f"sm_{a}")
        self.device = device
        props = device.properties()
        self.shared = int(md.get("shared", 0) or 0)
        if self.shared > props["max_shared_mem"]:
            raise OutOfResources(self.shared, props["max_shared_mem"], "shared memory (bytes)", self.name,
                                 OutOfResources.SHARED_HINT)
        device.make_current()
        # a first launch inside a CUDA graph capture (torch.cuda.graph's global mode forbids "unsafe" calls such
        # as module loading on any thread): the load is not a stream operation, so it is made in relaxed mode
        relaxed = _relaxed_capture_mode()
        try:
            try:
                res = c.cuModuleLoadData(cubin)
            except TypeError:  # bindings without buffer-protocol support: pass the address
                import ctypes

                buf = ctypes.create_string_buffer(bytes(cubin), len(cubin))
                res = c.cuModuleLoadData(ctypes.addressof(buf))
        finally:
            relaxed()
        self.module = check("cuModuleLoadData", res)
        self.function = check(f"cuModuleGetFunction({self.name})",
                              c.cuModuleGetFunction(self.module, self.name.encode()))
        FA = c.CUfunction_attribute
        fattr = lambda a: int(check("cuFuncGetAttribute", c.cuFuncGetAttribute(a, self.function)))  # noqa: E731
        self.n_regs = fattr(FA.CU_FUNC_ATTRIBUTE_NUM_REGS)
        self.n_spills = fattr(FA.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) // 4
        self.max_threads = fattr(FA.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        self.static_shared = fattr(FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        if self.shared > DEFAULT_SHARED_LIMIT:
            # opt in to the device's larger shared memory (dynamic part only: static shared counts against it)
            check("cuFuncSetCacheConfig",
                  c.cuFuncSetCacheConfig(self.function, c.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED))
            check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                  c.cuFuncSetAttribute(self.function, FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       props["max_shared_mem"] - self.static_shared))
        self.num_warps = int(md.get("num_warps", 4) or 4)
        self.block = self.num_warps * 32
        if self.block > self.max_threads:  # the driver's limit for this function: its registers decide it
            raise OutOfResources(self.block, self.max_threads, "threads per block (num_warps * 32)", self.name,
                                 f"At {self.n_regs} registers per thread the device's registers per block hold "
                                 f"{self.max_threads} threads: a lower num_warps, or a kernel needing fewer "
                                 f"registers, fits.")
        # num_ctas > 1 (Triton: each program a thread-block cluster, its tiles split over the cluster's CTAs) is a
        # performance choice that does not change a kernel's values: here each program runs as one CTA
        if int(md.get("profile_scratch_size", 0) or 0):
            raise KernelRuntimeError(f"kernel '{self.name}' needs profile scratch memory, which the cuda launcher "
                                     f"does not allocate")
        # tensor maps made on the device: per-program global scratch, allocated per launch through
        # triton.set_allocator's allocator and passed as the first parameter past the runtime arguments
        scratch = (int(md.get("global_scratch_size", 0) or 0), int(md.get("global_scratch_align", 1) or 1))
        self.types, self.names = arg_types(kernel)
        n_params = self._param_count()
        n_extra = 0
        if n_params is not None:
            if n_params < len(self.types):
                raise KernelRuntimeError(f"kernel '{self.name}': the cubin has {n_params} parameters but the "
                                         f"metadata lists {len(self.types)} arguments")
            n_extra = n_params - len(self.types)  # scratch pointers: passed as null
        # TMA tensor maps (sm_90 tensor descriptors): encoded by the launcher from the arguments after each
        self.tensormaps = list(md.get("tensormaps") or ())
        if scratch[0]:  # its parameter, even where the driver cannot count the cubin's
            n_extra = max(n_extra, 1)
        self.packer = _launcher.Packer(self.types, n_extra)
        ext = c_launcher()
        # tritium (like Triton) allocates shared memory dynamically: what the metadata counts beyond the
        # cubin's static shared memory is passed as the launch's dynamic shared memory
        dynamic_shared = max(0, self.shared - self.static_shared)
        self.dynamic_shared = dynamic_shared
        cu_launch = c.cuLaunchKernel
        if md.get("launch_cooperative_grid"):
            # launch_cooperative_grid=True: every program resident at once (grid-wide barriers through atomics
            # are then safe); cuLaunchCooperativeKernel, through the bindings (the C launcher has no such call)
            cu_launch, ext = self._cooperative_launch(props, dynamic_shared), None
        self.launch = _launcher.make_launch(self.function, self.packer, block=self.block, shared=dynamic_shared,
                                            cu_launch=cu_launch, names=self.names, kernel_name=self.name,
                                            on_error=self._on_error, check_pointer=driver.check_pointer,
                                            current_stream=driver._stream_getter(device.index),
                                            make_stream=driver._stream, streams=driver._streams,
                                            retry=_RetryLaunch, global_scratch=scratch, tensormaps=self.tensormaps,
                                            device=device.index, c_launch=ext.launch if ext else None,
                                            c_direct=(ext.make_direct, ext.launch_direct) if ext else None)
        self._driver = driver

    def _cooperative_launch(self, props: dict, dynamic_shared: int):
        """``cuLaunchKernel``'s signature over ``cuLaunchCooperativeKernel``, refusing a grid larger than the
        device holds at once (the driver's CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, said with the numbers)."""
        c = cu()
        per_sm = int(check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                           c.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.function, self.block, dynamic_shared)))
        limit = per_sm * int(props["multiprocessor_count"])
        self.cooperative_limit = limit
        name = self.name

        def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            if gx * gy * gz > limit:
                raise KernelRuntimeError(
                    f"kernel '{name}': launch_cooperative_grid=True needs every program resident at once, but the "
                    f"grid has {gx * gy * gz} programs and the device holds {limit} ({per_sm} per multiprocessor x "
                    f"{props['multiprocessor_count']} multiprocessors at {self.block} threads and {dynamic_shared} "
                    f"bytes of dynamic shared memory)")
            return c.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params)
        return launch

    def _param_count(self) -> Optional[int]:
        c = cu()
        if hasattr(c, "cuFuncGetParamCount"):
            try:
                err, n = c.cuFuncGetParamCount(self.function)
                if int(err) == 0:
                    return int(n)
            except (TypeError, RuntimeError):
                # bindings whose cuFuncGetParamCount has another signature (TypeError), or a driver without the
                # entry point (cuda-python raises RuntimeError 'Function "cuFuncGetParamCount" not found', seen
                # with driver 580 on an H100): the count is unknown, the metadata's argument list is used as is
                pass
        return None

    def _on_error(self, err, args) -> None:
        c = cu()
        if int(err) in (int(c.CUresult.CUDA_ERROR_INVALID_CONTEXT), int(c.CUresult.CUDA_ERROR_INVALID_HANDLE)):
            # no (or another) context current on this thread: make ours current and retry once
            cur = c.cuCtxGetCurrent()
            if self.device.context is None or int(cur[1] or 0) != int(self.device.context):
                self.device.make_current()
                raise _RetryLaunch()
        raise cuda_error(f"cuLaunchKernel({self.name})", err)


class _RetryLaunch(Exception):
    pass


_LLVM_TYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "half": "fp16", "float": "fp32",
               "double": "fp64"}


def _from_lowered(t: str) -> str:
    """A lowered (LLVM-level) argument type as a launcher type string: ``ptr`` -> a pointer; ``"tensormap"`` (a
    TMA tensor map passed by value) stays itself."""
    t = str(t)
    if t == _launcher.TENSORMAP:
        return t
    if t == "ptr" or t.startswith("!llvm.ptr") or t.startswith("!tt.ptr") or t.startswith("*"):
        return "*i8"
    return _LLVM_TYPES.get(t, t)


def arg_types(kernel: Any) -> tuple:
    """``(types, names)`` of a compiled kernel's runtime arguments, in the kernel's parameter order.

    The compile signature (``kernel.signature``: ``[(name, "*fp32" | "i32" | ...)]`` in order) gives each
    argument's type; the lowering's ``arg_types`` (``["ptr", "ptr", "i32"]``, the kernel function's actual
    parameters) wins where they disagree on pointer-ness, and is used alone, without names, when its length
    differs or it has a ``"tensormap"`` (flattened aggregates, tensor descriptors: the launcher's messages then
    name a descriptor by its number and parameter index).  The types include the ``"tensormap"`` parameters,
    which are not runtime arguments (see :mod:`tritium_nvidia.launcher`)."""
    names = [n for n, _ in kernel.signature]
    sig_types = [t for _, t in kernel.signature]
    lowered = kernel.metadata.get("arg_types")
    if not lowered:
        return sig_types, names
    low = [_from_lowered(t) for t in lowered]
    if len(low) != len(sig_types) or _launcher.TENSORMAP in low:  # (names are of runtime arguments)
        return low, []
    types = [s if _launcher.is_pointer(s) == _launcher.is_pointer(lt) else lt for s, lt in zip(sig_types, low)]
    return types, names


class CUDADriver(TorchGPUDriver):
    """tritium's CUDA driver (``driver.active`` when the cuda backend is selected)."""

    name = "cuda"
    device_env = "TRITIUM_CUDA_DEVICE"
    device_class = _Device
    max_grid = (2 ** 31 - 1, 65535, 65535)  # gridDim limits of every CUDA device since sm_30

    def __init__(self):
        super().__init__()
        self._streams: dict = {}
        self._utils = _Utils(self)

    @property
    def utils(self) -> "_Utils":
        return self._utils

    # ------------------------------------------------------------------------------------------ probing
    @staticmethod
    def _find_reason() -> str:
        if _cu is None and no_device_node(("/dev/nvidiactl", "/dev/dxg"), "cuda.bindings.driver"):  # (WSL: dxg)
            return "no CUDA device (no NVIDIA driver here: /dev/nvidiactl does not exist)"
        try:
            c = cu()
        except ImportError:
            return f"cuda-python is not installed: {PIP}"
        try:
            err, = c.cuInit(0)
        except Exception as e:  # noqa: BLE001 - cuda.pathfinder raises when libcuda.so is absent
            return f"no CUDA driver (libcuda.so.1 not found: {type(e).__name__})"
        if int(err) != 0:
            return f"no usable CUDA device (cuInit: {error_name(err)})"
        err, n = c.cuDeviceGetCount()
        if int(err) != 0 or n == 0:
            return "no CUDA device" + (f" (cuDeviceGetCount: {error_name(err)})" if int(err) else "")
        return ""

    # ------------------------------------------------------------------------------------------ devices
    def device_getter(self) -> Any:
        """torch's ``_cuda_getDevice`` itself when it works (what :meth:`get_current_device` calls), else
        :meth:`get_current_device`; on a machine with one device, ``int`` (0: the only current device there is,
        without a call into torch on every launch)."""
        get = None if compile_only() else self._torch_device_getter()
        if get is not None and self.device_count() == 1:
            return int
        return get if get is not None else self.get_current_device

    def device_count(self) -> int:
        """The number of CUDA devices (0 without a driver)."""
        n = getattr(self, "_count", None)
        if n is None:
            if not self.is_active() or compile_only():
                return 0
            err, n = cu().cuDeviceGetCount()
            n = self._count = int(n) if int(err) == 0 else 0
        return n

    def get_current_target(self) -> GPUTarget:
        if compile_only():
            from tritium.compiler.registry import requested_target

            req = requested_target()
            arch = req[1] if req and req[0] == "cuda" and req[1] else 90
            return GPUTarget("cuda", int(str(arch).lower().removeprefix("sm_").rstrip("a")), 32)
        self._require()
        return GPUTarget("cuda", self.device().capability, 32)

    def synchronize(self, device: Optional[int] = None) -> None:
        self.device(device).make_current()
        check("cuCtxSynchronize", cu().cuCtxSynchronize())

    def check_pointer(self, ptr: int) -> None:
        """Raise if ``ptr`` is not memory the device can read (host memory passed as a pointer argument)."""
        c = cu()
        A = c.CUpointer_attribute
        err, _ = c.cuPointerGetAttribute(A.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr)
        if int(err) != 0:
            raise KernelRuntimeError(f"pointer 0x{ptr:x} is not device-accessible memory "
                                     f"({error_name(err)}): pass CUDA tensors")

    # ------------------------------------------------------------------------------------------ loading
    def load(self, kernel: Any, device: Optional[int] = None) -> LoadedKernel:
        """Load ``kernel``'s cubin on ``device`` (once: ``kernel.loaded[device]``) and fill in ``kernel.n_regs``,
        ``n_spills``, ``module``, ``function`` like Triton's ``_init_handles``."""
        if device is None:
            device = self.get_current_device()
        loaded = kernel.loaded
        lk = loaded.get(device)
        if lk is None:
            with self._lock:
                lk = loaded.get(device)
                if lk is None:
                    lk = LoadedKernel(self, kernel, self.device(device))
                    loaded[device] = lk
                    kernel.module, kernel.function = lk.module, lk.function
                    kernel.n_regs, kernel.n_spills = lk.n_regs, lk.n_spills
                    kernel.n_max_threads = lk.max_threads
        return lk

    def bind(self, kernel: Any, device: int) -> Binding:
        """``kernel`` loaded on ``device``: its generated launch on the current stream, and its launch over
        ``(gx, 1, 1)`` taking the JIT's parameter values (:meth:`BaseDriver.bind`); the driver's :meth:`launch`
        and no direct launch where it is not loaded there (TRITIUM_COMPILE_ONLY)."""
        lk = kernel.loaded.get(device)
        if lk is None or compile_only():
            return Binding(self.launch, no_direct_launch, False)
        return Binding(lk.launch.grid, lk.launch.direct or no_direct_launch, True)

    def _stream(self, s: int) -> Any:
        cs = self._streams.get(s)
        if cs is None:
            cs = self._streams[s] = cu().CUstream(s)
        return cs

    # ------------------------------------------------------------------------------------------ launching
    def launch(self, kernel: Any, grid: tuple, args: list, stream: Optional[int] = None) -> None:
        """Launch ``kernel`` over ``grid`` (3-tuple) on the current device and stream (torch's when torch is
        imported; ``stream`` overrides); loads the cubin on first use on a device."""
        loaded = kernel.loaded
        if not loaded:  # first launch of this kernel (or TRITIUM_COMPILE_ONLY)
            if compile_only():
                self.skipped_launches += 1
                return
            self._require()
        torch = sys.modules.get("torch")
        if torch is not None:
            dev = torch._C._cuda_getDevice()
            if stream is None:
                stream = torch._C._cuda_getCurrentRawStream(dev)
        else:
            dev = self.get_current_device()
        lk = loaded.get(dev)
        if lk is None:
            lk = self.load(kernel, dev)
        s = self._streams.get(stream or 0)
        if s is None:
            s = self._stream(stream or 0)
        gx, gy, gz = grid
        try:
            lk.launch(gx, gy, gz, s, args)
        except _RetryLaunch:
            lk.launch(gx, gy, gz, s, args)


class _Utils(DriverUtils):
    """``driver.active.utils`` (Triton's names)."""

    def get_device_properties(self, device: Any = None) -> dict:
        return self._driver.get_device_properties(device if device is None else int(device))

    def load_binary(self, name: str, cubin: bytes, shared: int, device: int) -> tuple:
        """Triton's ``load_binary``: ``(module, function, n_regs, n_spills, n_max_threads)``."""
        from tritium.compiler.compiler import CompiledKernel

        k = CompiledKernel({"cubin": cubin}, {"name": name, "shared": shared, "signature": []})
        lk = self._driver.load(k, device)
        return lk.module, lk.function, lk.n_regs, lk.n_spills, lk.max_threads


__all__ = ["CUDADriver", "CUDAError", "LoadedKernel", "check", "arg_types", "error_name"]
