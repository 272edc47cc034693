"""The AMD lowering: :class:`AMDTargetInfo` and :data:`AMD_RULES`, the generic rule table updated with the AMD rules
(global memory and atomics as LLVM memory operations, math through the AMDGPU backend's own intrinsics, float
conversions, tt.dot on v_mfma for an amd_mfma result, else FMA), which win.

Importing this package imports MLIR."""
from tritium.lowering import GENERIC_RULES, merge

from . import conversions, dot, math, memory
from .target_info import AMDTargetInfo

AMD_RULES = {**GENERIC_RULES, **merge(memory.RULES, math.RULES, conversions.RULES, dot.RULES)}

__all__ = ["AMD_RULES", "AMDTargetInfo"]
