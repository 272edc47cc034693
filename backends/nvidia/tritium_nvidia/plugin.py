"""The CUDA backend as a tritium plugin (entry point ``nvidia`` in group ``tritium``).

Nothing CUDA-specific is imported here: dependencies are probed with ``importlib.util.find_spec`` and the
driver probes ``libcuda.so.1`` with ctypes only when asked whether it is active.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Optional

from tritium.compiler.backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from tritium.compiler.compiler import StageNotImplemented
from tritium.errors import BackendUnavailable
from tritium.plugins import hookimpl, missing_modules

PIP = "pip install 'tritium[nvidia]'"


def missing() -> Optional[str]:
    """None if cuda-python is importable, else the pip command that installs the extra."""
    return missing_modules("cuda.bindings", pip=PIP)


@dataclass(frozen=True)
class CUDAOptions(BaseOptions):
    num_warps: int = 4
    num_stages: int = 3
    maxnreg: Optional[int] = None
    cluster_dims: tuple = (1, 1, 1)
    ptx_version: Optional[int] = None
    arch: Optional[str] = None
    supported_fp8_dtypes: tuple = ("fp8e5", "fp8e4nv")
    allow_fp8e4nv: bool = True
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple = ("tf32", "tf32x3", "ieee")
    max_num_imprecise_acc_default: int = 0
    extern_libs: Optional[tuple] = None


class CUDACompiler(BaseCompiler):
    name = "cuda"
    warp_size = 32

    def supports_target(self, target: GPUTarget) -> bool:
        return target.backend == "cuda"

    def parse_options(self, options: dict) -> CUDAOptions:
        return CUDAOptions.parse(options, backend=self.name)

    def target_for_arch(self, arch=None) -> GPUTarget:
        if arch is None:
            arch = 90
        s = str(arch).lower().removeprefix("sm_").removesuffix("a")
        if not s.isdigit():
            raise ValueError(f"bad CUDA arch {arch!r}: expected a compute capability like 90 or sm_90")
        return GPUTarget("cuda", int(s), 32)

    def add_stages(self, stages: dict, options: CUDAOptions) -> None:
        from tritium.compiler.stages import make_ttir

        from . import compiler as c

        def ttir(src, metadata):
            # Triton's make_ttir on GPUs rewrites block pointers into tensors of pointers (the interpreter keeps
            # them); imported here: add_stages runs before a cache hit, where MLIR may be absent
            from tritium.passes.ttir.rewrite_tensor_pointer import rewrite_ttir_text

            return rewrite_ttir_text(src if isinstance(src, str) else make_ttir(src, metadata, options))  # str: TTIR

        stages["ttir"] = ttir
        stages["ttgir"] = lambda src, metadata: c.make_ttgir(src, metadata, options)
        stages["llir"] = lambda src, metadata: c.make_llir(src, metadata, options)
        stages["ptx"] = lambda src, metadata: c.make_ptx(src, metadata, options)
        stages["cubin"] = lambda src, metadata: c.make_cubin(src, metadata, options)

    def hash(self) -> str:
        return "cuda-1"


def CUDADriver():
    """The cuda driver (:mod:`tritium_nvidia.driver`), imported when first asked for: it imports cuda-python
    lazily too, so the plugin loads on a machine without it."""
    from .driver import CUDADriver as _Driver

    return _Driver()


@hookimpl
def tritium_backends():
    return [Backend(name="cuda", priority=20, make_compiler=CUDACompiler, make_driver=CUDADriver,
                    missing=missing(), description="NVIDIA GPUs: TTIR -> TTGIR -> LLVM -> PTX -> cubin")]
