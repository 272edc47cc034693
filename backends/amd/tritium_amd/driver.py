"""The HIP driver: device probing and properties, module loading and launching, over hip-python (``from hip import
hip``, pinned in the ``amd`` extra).

Importing this module imports nothing HIP: hip-python is imported the first time the driver is asked anything, and
a machine without hip-python, without the ROCm runtime (hip-python imports without it and raises on its first call:
``failed to dlopen libamdhip64.so``) or without an AMD GPU gets ``is_active() == False`` with the reason in
``inactive_reason()``.  ``TRITIUM_COMPILE_ONLY=1`` (with ``TRITIUM_TARGET=hip:<arch>``) makes the driver "active"
without a device: kernels compile (into the file cache) and nothing launches, as on cuda.

Loading (once per kernel and device, ``kernel.loaded[device]``): ``hipModuleLoadData`` of the hsaco,
``hipModuleGetFunction`` by the kernel's symbol; the kernel's arch checked against the device's ``gcnArchName``;
LDS beyond the device's limit and work-groups (``num_warps * wavefront``) beyond its threads per block (or the
code object's ``max_flat_workgroup_size``) are :class:`~tritium.errors.OutOfResources` naming the kernel; dynamic LDS
beyond the default opted in with ``hipFuncSetAttribute(hipFuncAttributeMaxDynamicSharedMemorySize)``.

Launching: the kernarg segment packed from the code object's layout (:mod:`tritium_amd.launcher`) and
``hipModuleLaunchKernel`` with it in the ``extra`` form, on the current stream: torch's
(``torch.cuda.current_stream()`` is the HIP stream on ROCm builds of torch) when torch is imported, else the null
stream.  ``driver.bind(kernel, device).launch`` is the JIT's relaunch fast path (the loaded kernel's generated launch
on the current stream).  Nothing of this has run on an AMD GPU: the launch path is exercised with a stand-in for
hip-python (:mod:`tritium_amd.stub`, tests only) and the packer against real compiled code objects.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from tritium.compiler.backend import Binding, GPUTarget, no_direct_launch
from tritium.compiler.gpu_driver import TorchGPUDriver, compile_only, kernel_binary, no_device_node
from tritium.errors import KernelRuntimeError, OutOfResources

from . import launcher as _launcher
from .arch import warp_size_of
from .arch import PIP

_hip = None


def hip() -> Any:
    """hip-python's ``hip`` module (imported on first use; tests put a stand-in in ``_hip``)."""
    global _hip
    if _hip is None:
        from hip import hip as _h

        _hip = _h
    return _hip


class HIPError(KernelRuntimeError, RuntimeError):
    """A failed HIP runtime call: the call, the hipError_t's name and number."""

    def __init__(self, call: str, code: Any, name: str = ""):
        self.call, self.code, self.error_name = call, int(code), name
        super().__init__(f"{call} failed: {name or 'hipError_t'} ({int(code)})")


def error_name(code: Any) -> str:
    """``hipError...`` for a hipError_t (its enum name, else ``hipGetErrorName``); never raises."""
    name = getattr(code, "name", None)
    if isinstance(name, str):
        return name
    try:
        n = hip().hipGetErrorName(code)
        n = n[-1] if isinstance(n, tuple) else n
        return n.decode() if isinstance(n, bytes) else str(n)
    except Exception:  # noqa: BLE001 - naming an error must never raise
        return "hipError_t"


def check(call: str, result: Any) -> Any:
    """Unwrap a hip-python result tuple ``(hipError_t, *values)``; raise :class:`HIPError` on failure."""
    if not isinstance(result, tuple):
        result = (result,)
    err = result[0]
    if int(err) != 0:
        raise HIPError(call, err, error_name(err))
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def _text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).split(b"\0", 1)[0].decode(errors="replace")
    return str(v)


class _Device:
    """One HIP device: its properties (read once with hipGetDeviceProperties)."""

    def __init__(self, index: int):
        self.index = index
        p = check("hipGetDeviceProperties", hip().hipGetDeviceProperties(index))
        self.gcn_arch_name = _text(p.gcnArchName)  # e.g. "gfx942:sramecc+:xnack-"
        self.arch = self.gcn_arch_name.split(":", 1)[0]
        self.warp_size = int(p.warpSize)
        self.lds = int(p.sharedMemPerBlock)
        self.lds_optin = max(self.lds, int(getattr(p, "sharedMemPerBlockOptin", 0) or 0))
        self.max_threads = int(p.maxThreadsPerBlock)
        self._props = {
            "name": _text(p.name), "arch": self.arch, "gcnArchName": self.gcn_arch_name,
            "multiprocessor_count": int(p.multiProcessorCount), "max_shared_mem": self.lds_optin,
            "max_shared_mem_default": self.lds, "max_num_regs": int(getattr(p, "regsPerBlock", 0) or 0),
            "warpSize": self.warp_size, "max_threads_per_block": self.max_threads,
            "sm_clock_rate": int(getattr(p, "clockRate", 0) or 0),
            "mem_clock_rate": int(getattr(p, "memoryClockRate", 0) or 0),
            "mem_bus_width": int(getattr(p, "memoryBusWidth", 0) or 0),
        }

    def properties(self) -> dict:
        return self._props

    def make_current(self) -> None:
        check("hipSetDevice", hip().hipSetDevice(self.index))


class LoadedKernel:
    """A CompiledKernel's hsaco loaded on one device: module, function, kernarg packer and launch function."""

    def __init__(self, driver: "HIPDriver", kernel: Any, device: _Device):
        h = hip()
        md = kernel.metadata
        self.name, hsaco = kernel_binary(kernel, "hsaco", "hip", device.index, device.arch, arch_of=str)
        self.device = device
        warp = int(md.get("wavefront_size") or md.get("warp_size") or device.warp_size)
        if warp != device.warp_size:
            raise KernelRuntimeError(f"kernel '{self.name}' was compiled for wave{warp} but device {device.index} "
                                     f"runs wave{device.warp_size}")
        self.num_warps = int(md.get("num_warps", 4) or 4)
        self.block = self.num_warps * warp
        limit = min(device.max_threads, int(md.get("max_flat_workgroup_size") or device.max_threads))
        if self.block > limit:
            raise OutOfResources(self.block, limit, f"threads per block (num_warps * {warp})", self.name,
                                 "A lower num_warps fits.")
        static = int(md.get("lds", 0) or 0)  # the code object's group segment (LDS the kernel declares)
        self.shared = max(static, int(md.get("shared", 0) or 0))
        if self.shared > device.lds_optin:
            raise OutOfResources(self.shared, device.lds_optin, "LDS (bytes)", self.name,
                                 OutOfResources.SHARED_HINT)
        self.dynamic_shared = self.shared - static
        device.make_current()
        self._image = ctypes.create_string_buffer(bytes(hsaco), len(hsaco))  # kept while the module lives
        self.module = check(f"hipModuleLoadData({self.name})", h.hipModuleLoadData(ctypes.addressof(self._image)))
        self.function = check(f"hipModuleGetFunction({self.name})",
                              h.hipModuleGetFunction(self.module, self.name.encode()))
        if self.shared > device.lds:  # beyond the default: opt in (dynamic LDS; the static part counts too)
            check(f"hipFuncSetAttribute({self.name}, hipFuncAttributeMaxDynamicSharedMemorySize)",
                  h.hipFuncSetAttribute(self.function, h.hipFuncAttribute.hipFuncAttributeMaxDynamicSharedMemorySize,
                                        device.lds_optin - static))
        self.n_regs = int(md.get("vgprs") or 0)
        self.n_spills = int(md.get("vgpr_spills") or 0) + int(md.get("sgpr_spills") or 0)
        self.types, self.names = _launcher.arg_types(md)
        self.packer = _launcher.KernargPacker(self.types, md.get("kernargs") or [], _launcher.hidden_kernargs(md),
                                              int(md.get("kernarg_size") or 0), self.block, self.dynamic_shared,
                                              self.name)
        self.launch = _launcher.make_launch(self.function, self.packer, block=self.block, shared=self.dynamic_shared,
                                            hip_launch=h.hipModuleLaunchKernel, names=self.names,
                                            kernel_name=self.name, on_error=self._on_error,
                                            current_stream=driver._stream_getter(device.index))

    def _on_error(self, err) -> None:
        raise HIPError(f"hipModuleLaunchKernel({self.name})", err, error_name(err))


class HIPDriver(TorchGPUDriver):
    """tritium's HIP driver (``driver.active`` when the hip backend is selected)."""

    name = "hip"
    device_env = "TRITIUM_HIP_DEVICE"
    device_class = _Device
    max_grid = (2 ** 31 - 1, 65535, 65535)

    # ------------------------------------------------------------------------------------------ probing
    @staticmethod
    def _find_reason() -> str:
        if _hip is None and no_device_node(("/dev/kfd",), "hip"):  # ROCm's kernel driver device
            return "no AMD GPU (no ROCm kernel driver here: /dev/kfd does not exist)"
        try:
            h = hip()
        except ImportError as e:
            return f"hip-python is not installed ({e}): {PIP}"
        except Exception as e:  # noqa: BLE001 - a hip-python whose import itself needs the runtime
            return f"no HIP runtime (importing hip-python failed: {e})"
        try:
            res = h.hipGetDeviceCount()
        except Exception as e:  # noqa: BLE001 - hip-python raises RuntimeError when libamdhip64.so is absent
            msg = _text(e)
            if "dlopen" in msg or "libamdhip64" in msg:
                return "no HIP runtime (libamdhip64.so not found: install ROCm)"
            return f"no HIP runtime (hipGetDeviceCount: {type(e).__name__}: {msg})"
        err, n = res[0], res[1]
        if int(err) != 0:
            return f"no AMD GPU (hipGetDeviceCount: {error_name(err)})"
        if int(n) == 0:
            return "no AMD GPU (hipGetDeviceCount: 0 devices)"
        return ""

    # ------------------------------------------------------------------------------------------ devices
    def get_current_target(self) -> GPUTarget:
        if compile_only():
            from tritium.compiler.registry import requested_target

            req = requested_target()
            arch = str(req[1]) if req and req[0] == "hip" and req[1] else "gfx942"
            return GPUTarget("hip", arch, warp_size_of(arch))
        self._require()
        d = self.device()
        return GPUTarget("hip", d.arch, d.warp_size)

    def synchronize(self, device: Optional[int] = None) -> None:
        self.device(device).make_current()
        check("hipDeviceSynchronize", hip().hipDeviceSynchronize())

    # ------------------------------------------------------------------------------------------ loading
    def load(self, kernel: Any, device: Optional[int] = None) -> LoadedKernel:
        """Load ``kernel``'s hsaco on ``device`` (once: ``kernel.loaded[device]``); fills in ``kernel.module``,
        ``function``, ``n_regs``, ``n_spills``."""
        if device is None:
            device = self.get_current_device()
        lk = kernel.loaded.get(device)
        if lk is None:
            with self._lock:
                lk = kernel.loaded.get(device)
                if lk is None:
                    lk = kernel.loaded[device] = LoadedKernel(self, kernel, self.device(device))
                    kernel.module, kernel.function = lk.module, lk.function
                    kernel.n_regs, kernel.n_spills = lk.n_regs, lk.n_spills
        return lk

    def bind(self, kernel: Any, device: int) -> Binding:
        """``kernel`` loaded on ``device``: its launch on the current stream (the JIT's relaunch fast path; no
        direct launch); the driver's :meth:`launch` where it is not loaded there (TRITIUM_COMPILE_ONLY)."""
        lk = kernel.loaded.get(device)
        if lk is None or compile_only():
            return Binding(self.launch, no_direct_launch, False)
        return Binding(lk.launch.grid, no_direct_launch, True)

    # ------------------------------------------------------------------------------------------ launching
    def launch(self, kernel: Any, grid: tuple, args: list, stream: Optional[int] = None) -> None:
        """Launch ``kernel`` over ``grid`` (3-tuple) on the current device and stream (torch's when torch is
        imported; ``stream`` overrides); loads the hsaco on first use on a device."""
        if not kernel.loaded:
            if compile_only():
                self.skipped_launches += 1
                return
            self._require()
        dev = self.get_current_device()
        lk = kernel.loaded.get(dev) or self.load(kernel, dev)
        if stream is None:
            stream = self.get_current_stream(dev)
        gx, gy, gz = grid
        lk.launch(gx, gy, gz, stream, args)


__all__ = ["HIPDriver", "HIPError", "LoadedKernel", "check", "error_name", "hip"]
