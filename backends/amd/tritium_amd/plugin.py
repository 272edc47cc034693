"""The HIP (AMD) backend as a tritium plugin (entry point ``amd`` in group ``tritium``).

Nothing HIP-specific is imported here: dependencies are probed with ``importlib.util.find_spec`` and the
driver probes ``libamdhip64.so`` with ctypes only when asked whether it is active.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Optional

from tritium.compiler.backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from tritium.compiler.compiler import StageNotImplemented
from tritium.errors import BackendUnavailable
from tritium.plugins import hookimpl, missing_modules

PIP = "pip install 'tritium[amd]'"


def missing() -> Optional[str]:
    """None if hip-python is importable, else the pip command that installs the extra."""
    return missing_modules("hip", pip=PIP)


@dataclass(frozen=True)
class HIPOptions(BaseOptions):
    num_warps: int = 4
    num_stages: int = 2
    waves_per_eu: int = 1
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    arch: Optional[str] = None
    supported_fp8_dtypes: tuple = ("fp8e4b8", "fp8e5b16")
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple = ("ieee",)
    extern_libs: Optional[tuple] = None


def warp_size_of(arch: str) -> int:
    """64 on CDNA / GCN (gfx9xx), 32 on RDNA (gfx10xx and later)."""
    return 32 if arch.startswith(("gfx10", "gfx11", "gfx12")) else 64


class HIPCompiler(BaseCompiler):
    name = "hip"
    warp_size = 64

    def supports_target(self, target: GPUTarget) -> bool:
        return target.backend == "hip"

    def parse_options(self, options: dict) -> HIPOptions:
        return HIPOptions.parse(options, backend=self.name)

    def target_for_arch(self, arch=None) -> GPUTarget:
        arch = str(arch or "gfx942").lower()
        if not arch.startswith("gfx"):
            raise ValueError(f"bad HIP arch {arch!r}: expected e.g. gfx942")
        return GPUTarget("hip", arch, warp_size_of(arch))

    def add_stages(self, stages: dict, options: HIPOptions) -> None:
        from tritium.compiler.stages import make_ttir

        stages["ttir"] = lambda src, metadata: make_ttir(src, metadata, options)
        stages["ttgir"] = self._make_ttgir

    @staticmethod
    def _make_ttgir(src, metadata):
        raise StageNotImplemented("the hip backend cannot lower TTIR to TTGIR yet")

    def hash(self) -> str:
        return "hip-0"


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
        self._reason = "the hip driver cannot query the device arch yet"

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
        raise StageNotImplemented("the hip backend cannot launch kernels yet")


@hookimpl
def tritium_backends():
    return [Backend(name="hip", priority=10, make_compiler=HIPCompiler, make_driver=HIPDriver,
                    missing=missing(), description="AMD GPUs: TTIR -> TTGIR -> LLVM -> AMDGCN -> hsaco")]
