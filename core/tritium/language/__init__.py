"""``tritium.language`` (tl): Triton 3.x's tile language.  ``import tritium.language as tl``."""
from .core import (SemanticError, block_type, builtin, const, constexpr, constexpr_type, dtype,  # noqa: F401
                   function_type, is_builtin, pointer_type, tensor, str_to_ty, void, int1, int8, int16, int32, int64,
                   uint8, uint16, uint32, uint64, float8e5, float8e5b16, float8e4nv, float8e4b8, float8e4b15, float16,
                   bfloat16, float32, float64, pi32_t, tensor_descriptor, tensor_descriptor_type)
from .functions import *  # noqa: F401,F403
from .functions import (abs, advance, arange, argmax, argmin, associative_scan, assume,  # noqa: F401
                        atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg,
                        atomic_xor, broadcast, broadcast_to, cast, cat, cdiv, ceil, clamp, cos, cumprod, cumsum,
                        debug_barrier, device_assert, device_print, div_rn, dot, erf, exp, exp2, expand_dims, fdiv,
                        floor, fma, full, full_like, gather, histogram, inline_asm_elementwise, interleave, join,
                        load, load_tensor_descriptor, log, log2, make_block_ptr, map_elementwise, make_tensor_descriptor, max,
                        max_constancy, max_contiguous, maximum, min, minimum, multiple_of, num_programs, permute,
                        program_id, range, ravel, reduce, reshape, rsqrt, sigmoid, sin, softmax, split, sqrt,
                        sqrt_rn, static_assert, static_print, static_range, store, store_tensor_descriptor, sum,
                        trans, umulhi, view, where, xor_sum, zeros, zeros_like)
from . import extra  # noqa: F401
from . import math  # noqa: F401
from . import mx  # noqa: F401
from . import random  # noqa: F401
from . import standard  # noqa: F401
from . import target_info  # noqa: F401
from .standard import (add, bitonic_merge, condition, flip, mul, reduce_or, sort, sub, swizzle2d,  # noqa: F401
                       to_tensor, topk)
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint,  # noqa: F401
                     randint4x, randn, randn4x, uint_to_uniform_float)

from .mx import dot_scaled  # noqa: F401

float8e4 = float8e4nv
TRITON_MAX_TENSOR_NUMEL = 1048576

__all__ = [n for n in dir() if not n.startswith("_")] + ["PropagateNan"]


def __getattr__(name):
    # tl.PropagateNan (clamp / minimum / maximum's propagate_nan) is the dialect's enum, imported on first use:
    # importing tl, as a warm launch from the file cache does, imports nothing of tritium.dialects
    if name == "PropagateNan":
        from ..dialects.enums import PropagateNan

        return PropagateNan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
