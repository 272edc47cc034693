"""The CUDA stages: ttir -> ttgir -> llir -> ptx -> cubin.

Metadata the launcher reads (JSON, set by these stages): ``name`` (the kernel symbol), ``num_warps``,
``num_ctas``, ``shared`` (bytes of dynamic shared memory to launch with: our scratch buffer is the extern
``global_smem``), ``arg_types`` (the kernel's LLVM parameter types in order: ``"ptr"``, ``"i32"``, ``"i64"``,
``"f32"``, ...), ``target``, and after ptxas ``n_regs``, ``n_spills``.
"""
from __future__ import annotations

import re


def _arch(metadata) -> int:
    t = metadata.get("target") or {}
    a = t.get("arch", 90) if isinstance(t, dict) else 90
    try:
        return int(str(a).lower().removeprefix("sm_").removesuffix("a"))
    except ValueError:
        return 90


def make_ttgir(src: str, metadata: dict, options) -> str:
    """TTIR text -> TTGIR text: layouts (convert_to_ttgir), then the TTGIR pipeline (coalesce, remove layout
    conversions, cleanups, reorder, shared-memory allocation, membar): the lowering reads the allocation's
    ``allocation.offset`` attributes and membar's ``ttg.barrier`` ops, the launch the module's ``ttg.shared``."""
    from mlir import ir

    from tritium.dialects import make_context
    from tritium.passes.ttgir.convert_to_ttgir import convert_to_ttgir
    from tritium.passes.ttgir.pipeline import run_ttgir_pipeline

    ctx = make_context()
    with ctx:
        module = ir.Module.parse(src)
        convert_to_ttgir(module, num_warps=options.num_warps, threads_per_warp=32,
                         num_ctas=options.num_ctas, target=f"cuda:{_arch(metadata)}")
        run_ttgir_pipeline(module, options)
        module.operation.verify()
        return module.operation.get_asm(enable_debug_info=True)


def kernel_attrs(num_warps: int):
    from mlir import ir

    def attrs(ctx, name):
        return {"nvvm.kernel": ir.UnitAttr.get(),
                "nvvm.maxntid": ir.DenseI32ArrayAttr.get([num_warps * 32, 1, 1])}

    return attrs


def make_llir(src: str, metadata: dict, options) -> str:
    """TTGIR text -> LLVM IR text (LLVM dialect via the lowering rules, then translate_module_to_llvmir)."""
    from mlir import ir
    from mlir.dialects import llvm as llvm_d

    from tritium.dialects import make_context, ttg
    from tritium.lowering.driver import lower_module
    import tritium.lowering.rules  # noqa: F401  (generic rules)

    from . import rules

    ctx = make_context()
    with ctx:
        module = ir.Module.parse(src)
        try:
            from tritium.passes.analysis.axis_info import AxisInfoAnalysis

            info = AxisInfoAnalysis(module.operation)
        except ImportError:
            info = None
        num_warps = ttg.module_int(module, ttg.NUM_WARPS, options.num_warps)
        shared = ttg.module_int(module, "ttg.shared", 0)
        lowered = lower_module(module, rules.CUDATargetInfo(_arch(metadata)), "cuda",
                               kernel_attrs=kernel_attrs(num_warps), options=options, axis_info=info)
        llir = str(llvm_d.translate_module_to_llvmir(lowered.module.operation))
    metadata["name"] = lowered.kernel or metadata.get("name")
    # the allocation's total; the lowering's need is larger only for ops placed without it (offset 0, bracketed)
    metadata["shared"] = max(shared, lowered.shared)
    metadata["shared_dynamic"] = metadata["shared"]
    metadata["num_warps"] = num_warps
    metadata["arg_types"] = [_short(t) for t in lowered.arg_types]
    return llir


def _short(t: str) -> str:
    if t.startswith("!llvm.ptr"):
        return "ptr"
    return {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}.get(t, t)


def make_ptx(src: str, metadata: dict, options) -> str:
    from .ptx import llir_to_ptx

    return llir_to_ptx(src, metadata["name"], _arch(metadata))


def make_cubin(src: str, metadata: dict, options) -> bytes:
    from .ptx import ptx_to_cubin

    cubin, info = ptx_to_cubin(src, _arch(metadata), getattr(options, "maxnreg", None))
    metadata["n_regs"] = info["n_regs"]
    metadata["n_spills"] = info["n_spills"]
    metadata["shared"] = metadata.get("shared", 0) + info["shared_static"]
    metadata["ptxas_log"] = info["ptxas_log"]
    return cubin


def ptxas_available() -> bool:
    from .ptx import ptxas_path

    return ptxas_path() is not None
