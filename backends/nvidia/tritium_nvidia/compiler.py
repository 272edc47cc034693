"""The CUDA backend's compiler: its options and its stages ttir -> ttgir -> llir -> ptx -> cubin, as methods of
:class:`CUDACompiler` (the shape of Triton's ``third_party/nvidia/backend/compiler.py``).

Each stage returns its text (or the cubin's bytes) and hands its MLIR module to the next stage of the same compile
(:class:`tritium.compiler.stages.Handoff`), so ttgir and llir do not parse what the stage before just printed.

Metadata the launcher reads (JSON, set by these stages): ``name`` (the kernel symbol), ``num_warps``,
``num_ctas``, ``shared`` (bytes of dynamic shared memory to launch with: our scratch buffer is the extern
``global_smem``), ``arg_types`` (the kernel's LLVM parameter types in order: ``"ptr"``, ``"i32"``, ``"i64"``,
``"f32"``, ...), ``target``, and after ptxas ``n_regs``, ``n_spills``.

Importing this module imports neither MLIR nor llvmlite: the stages do, when they run.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

from tritium.compiler.backend import BaseCompiler, BaseOptions, GPUTarget
from tritium.compiler.stages import Handoff, asm
from tritium.compiler.stages import make_ttir as _make_ttir
from tritium.compiler.versions import MLIR_DISTS, versions_key
from tritium.errors import TargetError

from .arch import CODEGEN_ARCHS, CUDA_ARCHS, PIP  # noqa: F401  (CUDA_ARCHS: the compiler's names too)


@dataclass(frozen=True)
class CUDAOptions(BaseOptions):
    num_warps: int = 4
    num_stages: int = 3
    maxnreg: Optional[object] = None  # an int, or "auto" (make_cubin: a cap for one more CTA per SM)
    cluster_dims: tuple = (1, 1, 1)
    ptx_version: Optional[int] = None
    arch: Optional[str] = None
    supported_fp8_dtypes: tuple = ("fp8e5", "fp8e4nv")
    allow_fp8e4nv: bool = True
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: Optional[int] = None  # fp8 dots: None = Triton's (2**30 on sm_90, else 0)
    extern_libs: Optional[tuple] = None
    enable_reflect_ftz: bool = True  # libdevice flushes denormals (nvvm-reflect-ftz), as Triton's default
    # programmatic dependent launch (Triton's launch_pdl, which torch's Inductor passes): tritium launches kernels
    # without it, which is always correct (a kernel then starts after the previous one ends, as without PDL)
    launch_pdl: bool = False


def _ttir_passes(arch: int = 80) -> tuple:
    """The backend's own TTIR passes, run first in the TTIR pipeline (the interpreter keeps block pointers and
    tensor descriptors): tensor descriptors and block pointers become tensors of pointers -- on sm_90+ except the
    loads and stores through host-side descriptors that can be TMA tensor maps (``tritium-tma-descriptor-args``);
    from sm_80, fp32 dots asking for ``bf16x3`` / ``bf16x6`` become bf16 tensor-core dots (``tritium-f32-dot-tc``)."""
    from tritium.passes.ttir.f32_dot_tc import f32_dot_tc_pass
    from tritium.passes.ttir.rewrite_tensor_pointer import rewrite_tensor_pointer_pass
    from tritium.passes.ttir.tma_descriptors import tma_descriptor_args_pass

    tma = (("tritium-tma-descriptor-args", tma_descriptor_args_pass),) if arch >= 90 else ()
    tc = (("tritium-f32-dot-tc", f32_dot_tc_pass),) if arch >= 80 else ()
    return tma + (("tritium-rewrite-tensor-pointer", rewrite_tensor_pointer_pass),) + tc


class CUDACompiler(BaseCompiler):
    name = "cuda"
    warp_size = 32
    options_class = CUDAOptions

    def target_for_arch(self, arch=None) -> GPUTarget:
        target = GPUTarget("cuda", 90 if arch is None else _parse_arch(arch), 32)
        self.check_target(target)
        return target

    def check_target(self, target: GPUTarget) -> None:
        if target.arch not in CUDA_ARCHS:
            raise TargetError(f"cuda:{target.arch} is not a CUDA arch tritium compiles for: {_arch_list(CUDA_ARCHS)} "
                              "(kernels run on sm_80 and later)")

    def options_for_target(self, options: CUDAOptions, target: GPUTarget) -> CUDAOptions:
        """``TRITON_OVERRIDE_ARCH`` is the ``arch`` option's default (so it is part of the options' cache key)."""
        env = os.environ.get("TRITON_OVERRIDE_ARCH")
        if options.arch is None and env:
            options = dataclasses.replace(options, arch=env)
        if options.arch is not None:
            if _parse_arch(options.arch) not in CODEGEN_ARCHS:  # a bad value is an error here, before any stage
                raise TargetError(f"arch={options.arch!r}: tritium generates code for {_arch_list(CODEGEN_ARCHS)}")
        arch = _parse_arch(options.arch) if options.arch is not None else target.arch
        if options.num_ctas > 1 and arch < 90:  # clusters are Hopper's (Triton's message; a ValueError)
            raise TargetError(f"num_ctas > 1 requires NVIDIA SM90+ (Hopper), got num_ctas={options.num_ctas} "
                             f"for sm_{arch}")
        return options

    def add_stages(self, stages: dict, options: CUDAOptions, target: GPUTarget) -> None:
        """The stages for ``target`` (its arch read here, once): TTIR, TTGIR and LLVM IR are generated for the
        ``arch`` option's arch where it is set (``TRITON_OVERRIDE_ARCH``), the PTX and cubin for the target's."""
        arch = int(target.arch)
        codegen = _parse_arch(options.arch) if options.arch is not None else arch
        handoff = Handoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff, target, codegen)
        stages["ttgir"] = lambda src, metadata: self.make_ttgir(src, metadata, options, handoff, codegen)
        stages["llir"] = lambda src, metadata: self.make_llir(src, metadata, options, handoff, codegen)
        stages["ptx"] = lambda src, metadata: self.make_ptx(src, metadata, options, arch)
        stages["cubin"] = lambda src, metadata: self.make_cubin(src, metadata, options, arch)

    def tool_path(self, name: str) -> Optional[str]:
        if name == "ptxas":
            from .ptx import ptxas_path

            return ptxas_path()
        return None

    def explain_limits(self, target: GPUTarget) -> Tuple[Optional[str], List[str]]:
        if self.tool_path("ptxas") is None:
            return "ptx", [f"ptxas is not installed ({PIP}): no registers, spills or occupancy"]
        return None, []

    def hash(self) -> str:
        """The versions of what shapes the output besides tritium's own code (which the cache key hashes): the MLIR
        bindings, llvmlite (LLVM's NVPTX backend), ptxas (nvidia-cuda-nvcc) and libdevice (nvidia-nvvm); a ptxas or
        libdevice given by path (``TRITIUM_PTXAS_PATH`` / ``TRITIUM_LIBDEVICE_PATH``) too."""
        key = versions_key(*MLIR_DISTS, "llvmlite", "nvidia-cuda-nvcc", "nvidia-nvvm")
        for var in ("TRITIUM_PTXAS_PATH", "TRITIUM_LIBDEVICE_PATH"):
            if os.environ.get(var):
                key += f",{var}={os.environ[var]}"
        return key

    # ------------------------------------------------------------------------------------------ stages
    @staticmethod
    def make_ttir(src, metadata: dict, options: CUDAOptions, handoff: Handoff, target: GPUTarget, arch: int) -> str:
        """Python AST -> TTIR; block pointers are rewritten into tensors of pointers first (Triton's make_ttir on
        GPUs), inside the one TTIR pipeline (with the cuda TTIR passes for ``arch``)."""
        return _make_ttir(src, metadata, options, handoff, backend_passes=_ttir_passes(arch), target=target)

    @staticmethod
    def make_ttgir(src, metadata: dict, options: CUDAOptions, handoff: Handoff, arch: int) -> str:
        """TTIR -> TTGIR: layouts (convert_to_ttgir), then the TTGIR pipeline (coalesce, remove layout conversions,
        cleanups, reorder, shared-memory allocation, membar): the lowering reads the allocation's
        ``allocation.offset`` attributes and membar's ``ttg.barrier`` ops, the launch the module's ``ttg.shared``."""
        from tritium.passes.ttgir.convert_to_ttgir import convert_to_ttgir
        from tritium.passes.ttgir.pipeline import run_ttgir_pipeline

        from .passes import ttgir_passes

        module = handoff.module_for(src)
        with module.context:
            convert_to_ttgir(module, num_warps=options.num_warps, threads_per_warp=32,
                             num_ctas=options.num_ctas, target=f"cuda:{arch}",
                             num_stages=options.num_stages)
            run_ttgir_pipeline(module, options, backend_passes=ttgir_passes())
            module.operation.verify()
            return handoff.put(asm(module), module)

    @staticmethod
    def make_llir(src, metadata: dict, options: CUDAOptions, handoff: Handoff, arch: int) -> str:
        """TTGIR -> LLVM IR: the LLVM dialect through the lowering rules (``lower_module(module, CUDATargetInfo,
        CUDA_RULES)``), then ``translate_module_to_llvmir``; the launch metadata (kernel symbol, shared memory,
        warps, parameter types) into ``metadata``."""
        from mlir.dialects import llvm as llvm_d

        from tritium.dialects import ttg
        from tritium.lowering import lower_module
        from tritium.passes.analysis.axis_info import AxisInfoAnalysis

        from .lowering import CUDA_RULES, CUDATargetInfo

        module = handoff.module_for(src)
        with module.context:
            info = AxisInfoAnalysis(module.operation)
            num_warps = ttg.module_int(module, ttg.NUM_WARPS, options.num_warps)
            shared = ttg.module_int(module, "ttg.shared", 0)
            _check_shared(shared, arch, num_warps, metadata.get("name"))
            target = CUDATargetInfo(arch, getattr(options, "enable_reflect_ftz", True))
            lowered = lower_module(module, target, CUDA_RULES,
                                   kernel_attrs=kernel_attrs(num_warps, options.maxnreg), options=options,
                                   axis_info=info)
            llir = str(llvm_d.translate_module_to_llvmir(lowered.module.operation))
            tensormaps = _tensormaps(module, lowered.kernel)
            scratch = ttg.module_int(module, ttg.GLOBAL_SCRATCH_SIZE, 0) or 0
            scratch_align = ttg.module_int(module, ttg.GLOBAL_SCRATCH_ALIGN, 1) or 1
        metadata["name"] = lowered.kernel or metadata.get("name")
        # the allocation's total; the lowering's need is larger only for ops placed without it (offset 0, bracketed)
        metadata["shared"] = max(shared, lowered.shared)
        metadata["shared_dynamic"] = metadata["shared"]
        metadata["num_warps"] = num_warps
        metadata["arg_types"] = [_short(t) for t in lowered.arg_types]
        for tm in tensormaps:
            metadata["arg_types"][tm["index"]] = "tensormap"
        metadata["tensormaps"] = tensormaps
        # tensor maps made on the device: bytes per program of global scratch (the launcher allocates them)
        metadata["global_scratch_size"] = scratch
        metadata["global_scratch_align"] = scratch_align
        return llir

    @staticmethod
    def make_ptx(src: str, metadata: dict, options: CUDAOptions, arch: int) -> str:
        """LLVM IR -> PTX (llvmlite: libdevice linked, O3, NVPTX)."""
        from .ptx import llir_to_ptx

        return llir_to_ptx(src, metadata["name"], arch, reflect_ftz=options.enable_reflect_ftz)

    @staticmethod
    def make_cubin(src: str, metadata: dict, options: CUDAOptions, arch: int) -> bytes:
        """PTX -> cubin (ptxas); registers, spills and static shared memory into the metadata.

        ``maxnreg="auto"``: when registers alone keep a second (third, ...) CTA off each SM and a cap not far below
        would let it on (:func:`~.ptx.occupancy_cap`), ptxas runs again with that cap, whose cubin is kept if it
        spills nothing; ``metadata["maxnreg"]`` is then the cap (the ``ptx`` asm is the uncapped text: the cubin's
        is it with ``.maxnreg`` added, :func:`~.ptx.with_maxnreg`)."""
        from .ptx import occupancy_cap, ptx_to_cubin, with_maxnreg

        cubin, info = ptx_to_cubin(src, arch)
        if options.maxnreg == "auto" and not info["n_spills"]:
            cap = occupancy_cap(arch, int(metadata.get("num_warps", options.num_warps)), info["n_regs"],
                                metadata.get("shared", 0) + info["shared_static"])
            if cap is not None:
                capped, capped_info = ptx_to_cubin(with_maxnreg(src, cap), arch)
                if not capped_info["n_spills"] and not capped_info["n_spill_loads"]:
                    cubin, info = capped, capped_info
                    metadata["maxnreg"] = cap
        metadata["n_regs"] = info["n_regs"]
        metadata["n_spills"] = info["n_spills"]
        metadata["shared"] = metadata.get("shared", 0) + info["shared_static"]
        metadata["ptxas_log"] = info["ptxas_log"]
        return cubin




def _arch_list(archs) -> str:
    return ", ".join(f"sm_{a}" for a in archs)


def _parse_arch(arch) -> int:
    """``"sm80"``, ``"sm_90a"``, ``80``, ``"90"`` -> the compute capability as an int."""
    s = str(arch).strip().lower().removeprefix("sm_").removeprefix("sm").removesuffix("a")
    if not s.isdigit():
        raise TargetError(f"bad CUDA arch {arch!r}: expected a compute capability such as 90, sm90 or sm_90a "
                          f"(supported: {_arch_list(CUDA_ARCHS)})")
    return int(s)


# MLIR element types -> the launcher's type strings (integers: their width is what a copy needs)
_TMA_DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5",
               "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64"}


def _tensormaps(module, kernel: str) -> list:
    """The TMA tensor maps the kernel takes (parameters marked ``tt.tma``), as the launcher encodes them: position,
    element type, rank, box, swizzle, NaN fill."""
    from mlir import ir

    from tritium.dialects import tt
    from tritium.passes.ir_helpers import arg_attrs, attr_int
    from tritium.passes.ttir.tma_descriptors import TMA_ATTR, tma_box, tma_layout

    out = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or ir.StringAttr(op.attributes["sym_name"]).value != kernel:
            continue
        args = op.regions[0].blocks[0].arguments
        for i, (a, at) in enumerate(zip(args, arg_attrs(op))):
            if TMA_ATTR not in at:
                continue
            block = tt.desc_block_type(a.type)
            fill_nan = attr_int(at["tt.padding"]) == 2 if "tt.padding" in at else False
            elem = str(tt.elem_of(block))
            out.append({"index": i, "dtype": _TMA_DTYPES.get(elem, elem), "rank": len(tt.shape_of(block)),
                        "box": [int(b) for b in tma_box(block)], "swizzle": tma_layout(block).swizzle_bytes,
                        "fill_nan": bool(fill_nan)})
    return out


def _check_shared(shared: int, arch: int, num_warps: int, name) -> None:
    """Shared memory beyond what a block of ``arch`` may have is an :class:`~tritium.errors.OutOfResources` here,
    before LLVM and ptxas (the load would refuse it anyway: an autotuner's config that cannot fit costs its TTGIR
    only, not a whole compile)."""
    from tritium.errors import OutOfResources
    from tritium.tools.explain import occupancy

    limit = occupancy(arch, num_warps, None, shared)["max_shared_per_block"]
    if shared > limit:
        raise OutOfResources(shared, limit, "shared memory (bytes)", name,
                             OutOfResources.SHARED_HINT)


def kernel_attrs(num_warps: int, maxnreg=None):
    """The kernel's ``llvm.func`` attributes: ``.maxntid`` from num_warps, ``.maxnreg`` from the option (on the
    kernel's ``.entry`` only, as Triton; ptxas' ``--maxrregcount`` would cap noinline functions too)."""
    from mlir import ir

    def attrs(ctx, name):
        out = {"nvvm.kernel": ir.UnitAttr.get(),
               "nvvm.maxntid": ir.DenseI32ArrayAttr.get([num_warps * 32, 1, 1])}
        if isinstance(maxnreg, int) and maxnreg:  # ("auto" is decided after ptxas: make_cubin)
            out["nvvm.maxnreg"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(maxnreg))
        return out

    return attrs


def _short(t: str) -> str:
    if t.startswith("!llvm.ptr"):
        return "ptr"
    return {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}.get(t, t)

