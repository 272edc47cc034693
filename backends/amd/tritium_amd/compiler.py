"""The HIP backend's compiler: its options and its stages ttir -> ttgir -> llir -> amdgcn -> hsaco, as methods of
:class:`HIPCompiler` (the shape of Triton's ``third_party/amd/backend/compiler.py``).

* ``ttgir``: the core's TTIR -> TTGIR conversion and TTGIR pipeline with ``threads_per_warp`` = the wavefront
  (64 on CDNA / GCN, 32 on RDNA) and ``ttg.target = "hip:<arch>"``; tt.dot gets ``#ttg.amd_mfma`` on CDNA,
  ``#ttg.amd_wmma`` on RDNA3 (accelerate_matmul), the cp.async pipeliner leaves a hip module alone;
* ``llir``: ``lower_module(module, AMDTargetInfo(arch), AMD_RULES)``, translated to LLVM IR with the
  ``amdgpu_kernel`` calling convention, ``amdgpu-flat-work-group-size`` / ``amdgpu-waves-per-eu``, the
  ``amdgcn-amd-amdhsa`` triple and code object v5 (module flag ``amdhsa_code_object_version`` = 500);
* ``amdgcn``: llvmlite (LLVM's AMDGPU target): the data layout of ``gfx<arch>``, O3, the assembly;
* ``hsaco``: the object file (llvmlite, from the module the ``amdgcn`` stage compiled; assembled from the text by
  ziglang's clang when a plugin substituted it) linked by ``ld.lld -shared`` into the code object.

Metadata (JSON, set by these stages): ``name``, ``num_warps``, ``warp_size``, ``shared`` (LDS bytes: the
allocation's ``ttg.shared``), ``arg_types``; after ``amdgcn``, from the kernel's code-object metadata: ``kernarg_size``,
``kernarg_align``, ``kernargs`` (the explicit arguments: ``offset``, ``size``, ``kind``), ``lds`` (group segment
bytes), ``vgprs``, ``sgprs``, ``agprs``, ``vgpr_spills``, ``sgpr_spills``, ``private_segment`` (scratch bytes per
lane), ``wavefront_size``, ``max_flat_workgroup_size``, ``printf`` (the ``amdhsa.printf`` formats of the kernel's
printf records), ``occupancy`` (waves per SIMD at launch: registers and the work-group's LDS, ``lds`` + ``shared``,
by LLVM's rules for the arch, :mod:`tritium_amd.occupancy`; None for an arch without rules) and
``occupancy_limits`` (the waves each of ``waves`` / ``vgprs`` / ``sgprs`` / ``lds`` allows).

Importing this module imports neither MLIR nor llvmlite: the stages do, when they run.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from tritium.compiler.backend import BaseCompiler, BaseOptions, GPUTarget
from tritium.compiler.stages import Handoff, asm
from tritium.compiler.stages import make_ttir as _make_ttir
from tritium.compiler.versions import MLIR_DISTS, versions_key
from tritium.errors import TargetError

from .arch import HIP_ARCHS, warp_size_of


@dataclass(frozen=True)
class HIPOptions(BaseOptions):
    num_warps: int = 4
    num_stages: int = 2
    waves_per_eu: int = 0  # 0: LLVM's choice; n: amdgpu-waves-per-eu = "n" (a minimum occupancy hint)
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    arch: Optional[str] = None
    supported_fp8_dtypes: tuple = ("fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")  # as Triton 3.6 (software or native)
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple = ("ieee",)
    extern_libs: Optional[tuple] = None


def _ttir_passes() -> tuple:
    """The backend's own TTIR passes, run first in the TTIR pipeline: tensor descriptors and block pointers become
    tensors of pointers (the AMD lowering has no block-pointer or TMA path)."""
    from tritium.passes.ttir.rewrite_tensor_pointer import rewrite_tensor_pointer_pass

    return (("tritium-rewrite-tensor-pointer", rewrite_tensor_pointer_pass),)


class HIPCompiler(BaseCompiler):
    name = "hip"
    warp_size = 64
    options_class = HIPOptions

    def target_for_arch(self, arch=None) -> GPUTarget:
        arch = str(arch or "gfx942").strip().lower()
        target = GPUTarget("hip", arch, warp_size_of(arch))
        self.check_target(target)
        return target

    def check_target(self, target: GPUTarget) -> None:
        if str(target.arch).lower() not in HIP_ARCHS:
            raise TargetError(f"hip:{target.arch} is not an AMD arch tritium compiles for: {', '.join(HIP_ARCHS)}")

    def add_stages(self, stages: dict, options: HIPOptions, target: GPUTarget) -> None:
        """The stages for ``target``: its gfx arch read here, once, and bound into each stage."""
        arch = str(target.arch).lower()
        handoff = Handoff()
        objects = ObjectHandoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff, target)
        stages["ttgir"] = lambda src, metadata: self.make_ttgir(src, metadata, options, handoff, arch)
        stages["llir"] = lambda src, metadata: self.make_llir(src, metadata, options, handoff, arch)
        stages["amdgcn"] = lambda src, metadata: self.make_amdgcn(src, metadata, options, objects, arch)
        stages["hsaco"] = lambda src, metadata: self.make_hsaco(src, metadata, options, objects, arch)

    def hash(self) -> str:
        """The versions of what shapes the output besides tritium's own code: the MLIR bindings, llvmlite (LLVM's
        AMDGPU target), the linker (ziglang's ld.lld); a linker given by path (``TRITIUM_LLD_PATH``) too; the ROCm
        device libraries found (their directory, sizes and times: :func:`tritium_amd.devicelibs.key`)."""
        from . import devicelibs

        key = versions_key(*MLIR_DISTS, "llvmlite", "ziglang") + "," + devicelibs.key()
        if os.environ.get("TRITIUM_LLD_PATH"):
            key += f",TRITIUM_LLD_PATH={os.environ['TRITIUM_LLD_PATH']}"
        return key

    # ------------------------------------------------------------------------------------------ stages
    @staticmethod
    def make_ttir(src, metadata: dict, options: HIPOptions, handoff: Handoff, target: GPUTarget) -> str:
        """Python AST -> TTIR; block pointers and tensor descriptors are rewritten into tensors of pointers first."""
        return _make_ttir(src, metadata, options, handoff, backend_passes=_ttir_passes(), target=target)

    @staticmethod
    def make_ttgir(src, metadata: dict, options: HIPOptions, handoff: Handoff, arch: str) -> str:
        """TTIR -> TTGIR: layouts sized to the wavefront (``threads_per_warp`` = 64 or 32), then the TTGIR pipeline
        (coalesce, remove layout conversions, cleanups, reorder, LDS allocation, membar)."""
        from mlir import ir

        from tritium.passes.ttgir.accelerate_matmul import MFMA_NONKDIM
        from tritium.passes.ttgir.convert_to_ttgir import convert_to_ttgir
        from tritium.passes.ttgir.pipeline import run_ttgir_pipeline

        from .passes import ttgir_passes

        module = handoff.module_for(src)
        with module.context:
            convert_to_ttgir(module, num_warps=options.num_warps, threads_per_warp=warp_size_of(arch),
                             num_ctas=options.num_ctas, target=f"hip:{arch}", num_stages=options.num_stages)
            if options.matrix_instr_nonkdim:
                if options.matrix_instr_nonkdim not in (16, 32):
                    raise ValueError(f"matrix_instr_nonkdim must be 0, 16 or 32, got {options.matrix_instr_nonkdim}")
                module.operation.attributes[MFMA_NONKDIM] = ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(32), options.matrix_instr_nonkdim)
            run_ttgir_pipeline(module, options, backend_passes=ttgir_passes())
            module.operation.verify()
            return handoff.put(asm(module), module)

    @staticmethod
    def make_llir(src, metadata: dict, options: HIPOptions, handoff: Handoff, arch: str) -> str:
        """TTGIR -> LLVM IR: the LLVM dialect through the lowering rules (``lower_module(module, AMDTargetInfo,
        AMD_RULES)``), ``translate_module_to_llvmir``, then the triple and the code object version; the launch
        metadata (kernel symbol, LDS, warps, parameter types) into ``metadata``."""
        from mlir.dialects import llvm as llvm_d

        from tritium.dialects import ttg
        from tritium.lowering import lower_module
        from tritium.passes.analysis.axis_info import AxisInfoAnalysis

        from .lowering import AMD_RULES, AMDTargetInfo

        module = handoff.module_for(src)
        with module.context:
            info = AxisInfoAnalysis(module.operation)
            num_warps = ttg.module_int(module, ttg.NUM_WARPS, options.num_warps)
            warp_size = ttg.module_int(module, ttg.THREADS_PER_WARP, warp_size_of(arch))
            shared = ttg.module_int(module, "ttg.shared", 0) or 0
            lowered = lower_module(module, AMDTargetInfo(arch), AMD_RULES,
                                   kernel_attrs=kernel_attrs(num_warps * warp_size, options.waves_per_eu),
                                   options=options, axis_info=info)
            llir = str(llvm_d.translate_module_to_llvmir(lowered.module.operation))
        metadata["name"] = lowered.kernel or metadata.get("name")
        metadata["shared"] = max(shared, lowered.shared)
        metadata["num_warps"] = num_warps
        metadata["warp_size"] = warp_size
        metadata["arg_types"] = [_short(t) for t in lowered.arg_types]
        return finish_llir(llir)

    @staticmethod
    def make_amdgcn(src: str, metadata: dict, options: HIPOptions, objects: "ObjectHandoff", arch: str) -> str:
        """LLVM IR -> AMDGCN assembly (llvmlite: O3, the AMDGPU target for the arch); the kernel's code-object
        metadata (registers, spills, LDS, kernarg layout) into ``metadata``, and its occupancy at launch (waves per
        SIMD for its registers and its work-group's LDS, static + dynamic: :mod:`tritium_amd.occupancy`)."""
        from .hsaco import kernel_metadata, llir_to_amdgcn
        from .occupancy import occupancy_limits

        text, obj = llir_to_amdgcn(src, metadata["name"], arch)
        objects.put(text, obj)
        metadata.update(kernel_metadata(text, metadata.get("name")))
        warp = metadata.get("warp_size") or warp_size_of(arch)
        limits = occupancy_limits(arch, metadata["vgprs"] or 0, metadata["sgprs"] or 0,
                                  (metadata.get("lds") or 0) + (metadata.get("shared") or 0),
                                  (metadata.get("num_warps") or options.num_warps) * warp, warp)
        metadata["occupancy_limits"] = limits
        metadata["occupancy"] = min(limits.values()) if limits else None
        return text

    @staticmethod
    def make_hsaco(src: str, metadata: dict, options: HIPOptions, objects: "ObjectHandoff", arch: str) -> bytes:
        """AMDGCN -> hsaco: the object file (the one llvmlite emitted beside the assembly, or the assembly assembled
        again when it was substituted) linked by ``ld.lld -shared``."""
        from .hsaco import assemble, link_hsaco

        obj = objects.take(src)
        if obj is None:
            obj = assemble(src, arch)
        return link_hsaco(obj)


class ObjectHandoff:
    """The object file the ``amdgcn`` stage emitted beside its assembly, for the ``hsaco`` stage of the same compile
    (taken only when the text it gets is that very text: a substituted assembly is assembled again)."""

    __slots__ = ("_text", "_obj")

    def __init__(self):
        self._text = self._obj = None

    def put(self, text: str, obj: bytes) -> None:
        self._text, self._obj = text, obj

    def take(self, src) -> Optional[bytes]:
        text, obj = self._text, self._obj
        self._text = self._obj = None
        return obj if src is text else None


def kernel_attrs(block_size: int, waves_per_eu: int = 0):
    """The kernel's ``llvm.func`` attributes: ``rocdl.kernel`` (the ``amdgpu_kernel`` calling convention),
    ``amdgpu-flat-work-group-size`` = "1,<threads>" and, when asked for, ``amdgpu-waves-per-eu``."""
    from mlir import ir

    def attrs(ctx, name):
        out = {"rocdl.kernel": ir.UnitAttr.get(),
               "rocdl.flat_work_group_size": ir.StringAttr.get(f"1,{block_size}")}
        if waves_per_eu:
            out["rocdl.waves_per_eu"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(waves_per_eu))
        return out

    return attrs


TRIPLE = "amdgcn-amd-amdhsa"


def finish_llir(llir: str) -> str:
    """The translated module with the AMDGPU triple and the code object version (v5) module flag."""
    out = llir.replace('source_filename = "LLVMDialectModule"',
                       f'source_filename = "LLVMDialectModule"\ntarget triple = "{TRIPLE}"', 1)
    flag = '!{i32 1, !"amdhsa_code_object_version", i32 500}'
    if "!llvm.module.flags = !{" in out:
        ids = [int(x) for x in re.findall(r"^!(\d+) = ", out, flags=re.M)]
        new = max(ids, default=-1) + 1
        out = out.replace("!llvm.module.flags = !{", f"!llvm.module.flags = !{{!{new}, ", 1)
        out = out.rstrip("\n") + f"\n!{new} = {flag}\n"
    else:
        out = out.rstrip("\n") + f"\n!llvm.module.flags = !{{!900}}\n!900 = {flag}\n"
    return out


def _short(t: str) -> str:
    if t.startswith("!llvm.ptr"):
        return "ptr"
    return t
