"""The HIP driver: probes the HIP runtime (``libamdhip64.so``, with ctypes) and says why it is not active.  The hip
compiler builds hsaco code objects (``compile(src, target="hip:gfx942")``, ``tritium compile --target hip:gfx942``);
the launcher (module load, kernarg packing from the metadata's ``kernargs``) is not written yet, so even with a ROCm
runtime and a device the driver stays inactive and says so."""
from __future__ import annotations

import ctypes

from tritium.compiler.backend import BaseDriver, GPUTarget
from tritium.errors import BackendUnavailable, StageNotImplemented

from .compiler import warp_size_of
from .plugin import PIP, missing


NO_LAUNCHER = ("the hip backend compiles kernels to hsaco but cannot launch them yet (no launcher); compile "
               "for an explicit target instead: tritium compile --target hip:gfx942, or compile(src, "
               "target='hip:gfx942')")


class HIPDriver(BaseDriver):
    def __init__(self):
        self._probed = False
        self._reason = ""
        self._arch = None

    def _probe(self) -> None:
        if self._probed:
            return
        self._probed = True
        try:
            lib = ctypes.CDLL("libamdhip64.so")
        except OSError:
            self._reason = "no device (no HIP runtime: libamdhip64.so not found)"
            return
        n = ctypes.c_int(0)
        if lib.hipGetDeviceCount(ctypes.byref(n)) != 0 or n.value == 0:
            self._reason = "no device"
            return
        if missing():
            self._reason = f"hip-python is not installed: {PIP}"
            return
        self._reason = NO_LAUNCHER

    def is_active(self) -> bool:
        self._probe()
        return not self._reason

    def inactive_reason(self) -> str:
        self._probe()
        return self._reason

    def get_current_target(self) -> GPUTarget:
        if not self.is_active():
            raise BackendUnavailable(f"hip: {self._reason}")
        return GPUTarget("hip", self._arch, warp_size_of(self._arch))

    def launch(self, kernel, grid, args) -> None:
        if not self.is_active():
            raise BackendUnavailable(f"hip: {self._reason}")
        raise StageNotImplemented(f"hip: {NO_LAUNCHER}")
