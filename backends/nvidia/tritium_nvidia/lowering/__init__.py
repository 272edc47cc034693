"""The CUDA lowering: :class:`CUDATargetInfo` and :data:`CUDA_RULES`, the generic rule table updated with the
CUDA rules (memory accesses as predicated PTX, libdevice math, float conversions, tt.dot on
mma.sync, ldmatrix, ttg.warp_group_dot on wgmma, TMA copies and mbarriers), which win.

Importing this package imports MLIR."""
from tritium.lowering import GENERIC_RULES, merge

from . import async_copy, conversions, dot, math, memory, shared_memory, tma, wgmma_dot
from .target_info import CUDATargetInfo

CUDA_RULES = {**GENERIC_RULES, **merge(async_copy.RULES, memory.RULES, math.RULES, conversions.RULES, dot.RULES,
                                    shared_memory.RULES, wgmma_dot.RULES, tma.RULES)}

__all__ = ["CUDA_RULES", "CUDATargetInfo"]
