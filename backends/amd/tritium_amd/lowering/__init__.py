"""The AMD lowering: :class:`AMDTargetInfo` and :data:`AMD_RULES`, the generic rule table updated with the AMD rules
(global memory and atomics as LLVM memory operations, math through the AMDGPU backend's own intrinsics, float
conversions), which win.  tt.dot takes the generic FMA rule (no MFMA / WMMA yet).

Importing this package imports MLIR."""
from tritium.lowering import GENERIC_RULES, merge

from . import conversions, math, memory
from .target_info import AMDTargetInfo

AMD_RULES = {**GENERIC_RULES, **merge(memory.RULES, math.RULES, conversions.RULES)}

__all__ = ["AMD_RULES", "AMDTargetInfo"]
