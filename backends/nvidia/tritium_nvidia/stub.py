"""Stand-ins for running the cuda driver's load and launch path without a GPU: the launch-overhead benchmark
(``bench/launch_overhead.py``) and the tests of the launch path use them.

* :class:`StubCUDA` replaces ``cuda.bindings.driver`` (``tritium_nvidia.driver._cu``): every call succeeds, a
  cubin "loads" as nothing, and ``cuLaunchKernel`` is the function given (default: returns success at once);
* :class:`StubCudaTensor` is what the launch path reads of a torch CUDA tensor;
* :func:`stub_torch_cuda` gives a CPU-only torch the C-level device and stream getters the driver calls.
"""
from __future__ import annotations

import itertools
import types
from typing import Any, Callable, Optional

_OK = (0,)


def no_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
    """The default ``cuLaunchKernel`` stand-in: success, nothing launched."""
    return _OK


class _Names:
    """An enum stand-in: every member is its own name."""

    def __getattr__(self, name: str) -> str:
        return name


class StubCUDA(types.SimpleNamespace):
    """The subset of ``cuda.bindings.driver`` the cuda driver uses to load and launch, all succeeding; device 0..n
    are sm_90 with the H100's limits.  ``launch``: the ``cuLaunchKernel`` stand-in (same arguments)."""

    DEVICE_ATTRIBUTES = {
        "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK": 49152, "CU_DEVICE_ATTRIBUTE_WARP_SIZE": 32,
        "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132, "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK": 65536}
    FUNCTION_ATTRIBUTES = {"CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024}

    def __init__(self, launch: Optional[Callable] = None):
        super().__init__()
        self.CUdevice_attribute = self.CUfunction_attribute = self.CUfunc_cache = self.CUresult = _Names()
        self.CUpointer_attribute = _Names()
        self.cuLaunchKernel = launch or no_launch

    def cuInit(self, flags):
        return _OK

    def cuDeviceGetCount(self):  # two: launches follow torch's current device (one device would always be 0)
        return (0, 2)

    def cuDeviceGet(self, i):
        return (0, i)

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, self.DEVICE_ATTRIBUTES.get(attr, 1))

    def cuDeviceGetName(self, n, dev):
        return (0, b"stub sm_90\0")

    def cuDevicePrimaryCtxRetain(self, dev):
        return (0, 1)

    def cuCtxSetCurrent(self, ctx):
        return _OK

    def cuModuleLoadData(self, image):
        return (0, 1)

    def cuModuleGetFunction(self, mod, name):
        return (0, 1)

    def cuFuncGetAttribute(self, attr, fn):
        return (0, self.FUNCTION_ATTRIBUTES.get(attr, 0))

    def cuFuncSetCacheConfig(self, fn, cfg):
        return _OK

    def cuFuncSetAttribute(self, fn, attr, v):
        return _OK

    def cuPointerGetAttribute(self, attr, ptr):  # every address is device memory
        return (0, ptr)

    def CUstream(self, s):
        return s


class StubCudaTensor:
    """What the launch path reads of a torch CUDA tensor: ``dtype``, ``shape``, ``is_cuda``, ``device``,
    ``get_device()`` and ``data_ptr()`` (C-level callables, as torch's are)."""

    def __init__(self, dtype: Any, addr: int, device: int = 0, shape: tuple = (1024,)):
        import torch

        self.dtype = dtype
        self.shape = shape
        self.is_cuda = True
        self.device = torch.device("cuda", device)
        self.data_ptr = itertools.repeat(addr).__next__
        self.get_device = itertools.repeat(device).__next__


def stub_torch_cuda(torch: Any) -> None:
    """Give a CPU-only torch the getters the driver calls: C builtins returning device 0 / the default stream."""
    if not hasattr(torch._C, "_cuda_getDevice") or not torch.cuda.is_available():
        torch._C._cuda_getDevice = int
        torch._C._cuda_getCurrentRawStream = int
        torch.cuda.current_device = int


__all__ = ["StubCUDA", "StubCudaTensor", "stub_torch_cuda", "no_launch"]
