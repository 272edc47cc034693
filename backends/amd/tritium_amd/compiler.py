"""The HIP backend's compiler: its options and stages as methods of :class:`HIPCompiler` (ttir today; ttgir and
beyond stop with :class:`~tritium.errors.StageNotImplemented` until the AMD lowering lands)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tritium.compiler.backend import BaseCompiler, BaseOptions, GPUTarget
from tritium.compiler.stages import Handoff
from tritium.compiler.stages import make_ttir as _make_ttir
from tritium.compiler.versions import MLIR_DISTS, versions_key
from tritium.errors import StageNotImplemented


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
    unimplemented_stages = ("ttgir", "llir", "amdgcn", "hsaco")

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
        handoff = Handoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff)
        stages["ttgir"] = lambda src, metadata: self.make_ttgir(src, metadata, options, handoff)

    def hash(self) -> str:
        """The versions of what shapes the output besides tritium's own code: the MLIR bindings, llvmlite."""
        return versions_key(*MLIR_DISTS, "llvmlite")

    @staticmethod
    def make_ttir(src, metadata: dict, options: HIPOptions, handoff: Handoff) -> str:
        return _make_ttir(src, metadata, options, handoff)

    @staticmethod
    def make_ttgir(src, metadata: dict, options: HIPOptions, handoff: Handoff) -> str:
        raise StageNotImplemented("the hip backend implements the ttir stage only: ttgir -> llir -> amdgcn -> hsaco "
                                  "are not implemented yet (compile for cuda or the interpreter, or stop at "
                                  "ttir: tritium compile --target hip:gfx942 --emit ttir)")
