"""The tt dialect's enumerated attributes, with Triton's integer encodings.

One definition each, used by the language (to encode), the TTIR verifier, the lowering rules (decoded operands'
parameters arrive as these enums) and the interpreter.  In TTIR they are ``i32`` discardable attributes
(``{cache = 1 : i32}``); :data:`ATTRIBUTE_ENUMS` says which attribute name holds which enum.

Pure Python: importing this module imports no MLIR.
"""
from __future__ import annotations

from enum import IntEnum


class _TTEnum(IntEnum):
    """An IntEnum whose members also know their Triton keyword (``CacheModifier.CG.keyword == ".cg"``)."""

    @property
    def keyword(self) -> str:
        return _KEYWORDS.get((type(self), int(self)), self.name.lower())

    @classmethod
    def from_keyword(cls, word, what: str = ""):
        """The member for a user's keyword (``".cg"``, ``"evict_first"``, ``"acq_rel"``, ``None`` / ``""`` for the
        default).  Raises ``ValueError`` naming the accepted keywords."""
        table = _FROM_KEYWORD.get(cls, {})
        if word in table:
            return cls(table[word])
        accepted = ", ".join(repr(k) for k in table if k not in (None, ""))
        raise ValueError(f"unknown {what or cls.__name__} {word!r} (expected one of {accepted})")


class CacheModifier(_TTEnum):
    NONE, CA, CG, WB, CS, WT, CV = range(1, 8)


class EvictionPolicy(_TTEnum):
    NORMAL, EVICT_FIRST, EVICT_LAST = range(1, 4)


class PaddingOption(_TTEnum):
    PAD_ZERO, PAD_NAN = range(1, 3)


class RMWOp(_TTEnum):
    AND, OR, XOR, ADD, FADD, MAX, MIN, UMAX, UMIN, XCHG = range(1, 11)


class MemSemantic(_TTEnum):
    RELAXED, ACQUIRE, RELEASE, ACQUIRE_RELEASE = range(1, 5)


class MemSyncScope(_TTEnum):
    GPU, CTA, SYSTEM = range(1, 4)


class RoundingMode(_TTEnum):
    RTZ, RTNE = range(0, 2)


class InputPrecision(_TTEnum):
    TF32, TF32x3, IEEE, HF32, BF16x3, BF16x6 = range(0, 6)


class PropagateNan(_TTEnum):
    NONE, ALL = 0, 0xFFFF


class ProgramIDDim(_TTEnum):
    X, Y, Z = range(0, 3)


# user keywords (what tl.load / tl.atomic_* / tl.dot accept) -> values; None and "" mean the default
_FROM_KEYWORD = {
    CacheModifier: {"": 1, None: 1, ".ca": 2, ".cg": 3, ".wb": 4, ".cs": 5, ".wt": 6, ".cv": 7},
    EvictionPolicy: {"": 1, None: 1, "evict_normal": 1, "evict_first": 2, "evict_last": 3},
    PaddingOption: {"zero": 1, "nan": 2},
    MemSemantic: {None: 4, "relaxed": 1, "acquire": 2, "release": 3, "acq_rel": 4},
    MemSyncScope: {None: 1, "gpu": 1, "cta": 2, "sys": 3},
    RoundingMode: {None: 1, "rtne": 1, "rtz": 0},
    InputPrecision: {"tf32": 0, "tf32x3": 1, "ieee": 2, "hf32": 3, "bf16x3": 4, "bf16x6": 5},
}
_KEYWORDS = {(cls, v): k for cls, table in _FROM_KEYWORD.items() for k, v in table.items() if k}
_KEYWORDS.update({(CacheModifier, 1): "", (EvictionPolicy, 1): "evict_normal"})

#: attribute name in TTIR -> the enum it holds
ATTRIBUTE_ENUMS = {
    "cache": CacheModifier,
    "evict": EvictionPolicy,
    "padding": PaddingOption,
    "atomic_rmw_op": RMWOp,
    "sem": MemSemantic,
    "scope": MemSyncScope,
    "rounding": RoundingMode,
    "inputPrecision": InputPrecision,
    "propagateNan": PropagateNan,
}


def decode(attr_name: str, value: int):
    """``value`` of the TTIR attribute ``attr_name`` as its enum (a plain int for attributes without one).
    Raises ``ValueError`` for a value the enum does not have."""
    cls = ATTRIBUTE_ENUMS.get(attr_name)
    return int(value) if cls is None else cls(int(value))


__all__ = ["CacheModifier", "EvictionPolicy", "PaddingOption", "RMWOp", "MemSemantic", "MemSyncScope",
           "RoundingMode", "InputPrecision", "PropagateNan", "ProgramIDDim", "ATTRIBUTE_ENUMS", "decode"]
