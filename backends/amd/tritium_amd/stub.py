"""A test stand-in for hip-python's ``hip`` module, to exercise the hip driver's load and launch call sequence
without an AMD GPU (none is available to the project).  Nothing here runs a kernel: :class:`StubHIP` answers the
calls the driver makes (``hipGetDeviceCount``, ``hipGetDeviceProperties``, ``hipSetDevice``, ``hipModuleLoadData``,
``hipModuleGetFunction``, ``hipFuncSetAttribute``, ``hipModuleLaunchKernel``, ``hipDeviceSynchronize``) with
hip-python's return shapes (``(hipError_t, *values)`` tuples), records each call in ``calls``, and for every launch
keeps a copy of the kernarg segment the ``extra`` array points at (``launches``), so tests check what the driver
would hand the HIP runtime.  Install it with ``tritium_amd.driver._hip = StubHIP()`` (tests only).
"""
from __future__ import annotations

import ctypes
import types
from typing import Any, Optional


class _Err(int):
    """A hipError_t stand-in: an int with a ``name``."""

    NAMES = {0: "hipSuccess", 1: "hipErrorInvalidValue", 100: "hipErrorNoDevice", 500: "hipErrorNotFound"}

    @property
    def name(self) -> str:
        return self.NAMES.get(int(self), "hipError_t")


class StubHIP(types.SimpleNamespace):
    """hip-python's ``hip`` as far as the driver uses it; devices are MI300X-like (gfx942, wave64, 64 KiB LDS, 1024
    threads per block, 304 CUs) unless ``arch`` / ``warp_size`` / ``lds`` say otherwise.  ``devices=0`` answers
    like a machine whose runtime sees no GPU; ``launch_error`` makes every launch fail with that hipError_t."""

    HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END = 1, 2, 3

    def __init__(self, devices: int = 1, arch: str = "gfx942", warp_size: int = 64, lds: int = 65536,
                 lds_optin: Optional[int] = None, launch_error: int = 0, max_threads: int = 1024):
        super().__init__()
        self.devices, self.arch, self.warp_size = devices, arch, warp_size
        self.lds, self.lds_optin, self.launch_error = lds, lds_optin if lds_optin is not None else lds, launch_error
        self.max_threads = max_threads
        self.calls: list = []
        self.launches: list = []
        self.images: dict = {}
        self.hipFuncAttribute = types.SimpleNamespace(hipFuncAttributeMaxDynamicSharedMemorySize=8)

    def _ok(self, *values) -> tuple:
        return (_Err(0), *values)

    def hipGetDeviceCount(self):
        self.calls.append(("hipGetDeviceCount",))
        return (_Err(100), 0) if self.devices == 0 else self._ok(self.devices)

    def hipGetErrorName(self, err):
        return _Err(int(err)).name.encode()

    def hipGetDeviceProperties(self, index: int):
        self.calls.append(("hipGetDeviceProperties", index))
        if index >= self.devices:
            return (_Err(101), None)
        return self._ok(types.SimpleNamespace(
            name=b"stub AMD GPU\0", gcnArchName=f"{self.arch}:sramecc+:xnack-".encode(), warpSize=self.warp_size,
            sharedMemPerBlock=self.lds, sharedMemPerBlockOptin=self.lds_optin, maxThreadsPerBlock=self.max_threads,
            multiProcessorCount=304, regsPerBlock=0, clockRate=2100000, memoryClockRate=2600000,
            memoryBusWidth=8192))

    def hipSetDevice(self, index: int):
        self.calls.append(("hipSetDevice", index))
        return self._ok()

    def hipModuleLoadData(self, image: int):
        # the image is an address: read the ELF header to check it is the code object the driver was given
        head = ctypes.string_at(image, 4)
        self.calls.append(("hipModuleLoadData", head))
        module = len(self.images) + 1
        self.images[module] = head
        return self._ok(("module", module))

    def hipModuleGetFunction(self, module, name: bytes):
        self.calls.append(("hipModuleGetFunction", module, name))
        return self._ok(("function", module[1], name.decode()))

    def hipFuncSetAttribute(self, function, attr, value: int):
        self.calls.append(("hipFuncSetAttribute", function, attr, value))
        return self._ok()

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, kernelParams, extra):
        # extra: the address of {BUFFER_POINTER, &kernargs, BUFFER_SIZE, &size, END}
        arr = (ctypes.c_void_p * 5).from_address(extra)
        keys = (arr[0], arr[2], arr[4])
        size = ctypes.c_size_t.from_address(arr[3]).value
        kernargs = ctypes.string_at(arr[1], size)
        self.calls.append(("hipModuleLaunchKernel", f))
        self.launches.append({"function": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared,
                              "stream": stream, "kernelParams": kernelParams, "extra_keys": keys,
                              "kernargs": kernargs})
        return (_Err(self.launch_error),)

    def hipDeviceSynchronize(self):
        self.calls.append(("hipDeviceSynchronize",))
        return self._ok()


class StubGPUTensor:
    """What the launch path reads of a torch GPU tensor (on ROCm torch, device type ``cuda``): ``dtype``,
    ``is_cuda``, ``device``, ``get_device()``, ``data_ptr()``."""

    def __init__(self, dtype: Any, addr: int, device: int = 0):
        import torch

        self.dtype = dtype
        self.is_cuda = True
        self.device = torch.device("cuda", device)
        self._addr, self._device = addr, device

    def data_ptr(self) -> int:
        return self._addr

    def get_device(self) -> int:
        return self._device


__all__ = ["StubHIP", "StubGPUTensor"]
