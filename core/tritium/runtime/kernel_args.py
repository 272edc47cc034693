"""Scalar kernel arguments as a GPU launcher packs them, one set of rules for every backend's launcher: integer
ranges by type, bool-likes as 0 / 1, fp16 overflow refused (rather than packed as inf), bf16 as its bit pattern;
each error names the argument."""
from __future__ import annotations

import math
import struct
from typing import Any

from tritium.errors import KernelRuntimeError

#: the inclusive range of each integer parameter type
INT_RANGE = {
    "i1": (0, 1), "u1": (0, 1), "i8": (-2 ** 7, 2 ** 7 - 1), "u8": (0, 2 ** 8 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
    "u16": (0, 2 ** 16 - 1), "i32": (-2 ** 31, 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1),
    "i64": (-2 ** 63, 2 ** 63 - 1), "u64": (0, 2 ** 64 - 1),
}
FP16_OVERFLOW = 65520.0  # the smallest magnitude that rounds to inf in fp16


def bf16_bits(v: float) -> int:
    """The bfloat16 bit pattern of ``v`` (round to nearest even), as a kernel reads a bf16 scalar."""
    if math.isnan(v):
        return 0x7FC0
    (u,) = struct.unpack("<I", struct.pack("<f", float(v)))
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def scalar_value(v: Any, ty: str, what: str, backend: str) -> Any:
    """``v`` (a Python, NumPy or 0-d torch scalar) as the struct code of ``ty`` packs it; ``what`` names the argument
    and ``backend`` the launcher in errors."""
    if hasattr(v, "item") and not isinstance(v, (int, float)):  # numpy / 0-d torch scalars
        v = v.item()
    if ty in INT_RANGE:
        if isinstance(v, float) and not v.is_integer():
            raise KernelRuntimeError(f"{what}: cannot pass {v!r} as {ty}")
        try:
            iv = int(v)
        except (TypeError, ValueError):
            raise KernelRuntimeError(f"{what}: cannot pass {type(v).__name__} {v!r} as {ty}") from None
        if ty in ("i1", "u1"):
            return 1 if iv else 0
        lo, hi = INT_RANGE[ty]
        if not lo <= iv <= hi:
            raise KernelRuntimeError(f"{what}: {iv} does not fit in {ty} (range {lo}..{hi}); the kernel was "
                                     f"compiled for {ty}")
        return iv
    if ty.startswith("fp8"):
        raise KernelRuntimeError(f"{what}: fp8 scalar arguments are not supported by the {backend} launcher")
    try:
        fv = float(v)
    except (TypeError, ValueError):
        raise KernelRuntimeError(f"{what}: cannot pass {type(v).__name__} {v!r} as {ty}") from None
    if ty == "fp16" and math.isfinite(fv) and abs(fv) >= FP16_OVERFLOW:  # refused, as an int overflow is
        raise KernelRuntimeError(f"{what}: {fv!r} does not fit in fp16 (largest finite 65504)")
    return bf16_bits(fv) if ty == "bf16" else fv
