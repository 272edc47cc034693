"""The ``ttg`` dialect (TTGIR): layout encodings, a shared-memory buffer type and the ops that move data
between layouts and memories.

Like ``tt`` it is generated from one table and registered through IRDL.  Encodings are IRDL attributes that
sit on tensor types; their Python mirror (the math) is :mod:`tritium.dialects.layouts`::

    #ttg.blocked<array<i32: sizePerThread..>, array<i32: threadsPerWarp..>, array<i32: warpsPerCTA..>,
                 array<i32: order..>>
    #ttg.slice<dim : i32, #parent>
    #ttg.shared<vec : i32, perPhase : i32, maxPhase : i32, array<i32: order..>>      (swizzled)
    !ttg.memdesc<array<i64: shape..>, elementType, #ttg.shared<...>>

IRDL parameter names must be lower case, so the printed form is positional (as above).

Module attributes (set by :mod:`tritium.passes.ttgir.convert_to_ttgir`): ``ttg.num-warps``,
``ttg.threads-per-warp`` (32), ``ttg.num-ctas`` (1), ``ttg.target`` (``"cuda:90"``).
"""
from __future__ import annotations

from dataclasses import dataclass

from .tt import OPTIONAL, READ, SINGLE, WRITE, OpDef, irdl_operation_lines, irdl_parametric_lines

NUM_WARPS = "ttg.num-warps"
THREADS_PER_WARP = "ttg.threads-per-warp"
NUM_CTAS = "ttg.num-ctas"
TARGET = "ttg.target"


@dataclass(frozen=True)
class TTGOpDef(OpDef):
    @property
    def full_name(self) -> str:
        return "ttg." + self.name


_S, _O = SINGLE, OPTIONAL
_RW = frozenset({READ, WRITE})

#: attributes: (name, parameter names)
ATTRIBUTES = (
    ("blocked", ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")),
    ("slice", ("dim", "parent")),
    ("shared", ("vec", "per_phase", "max_phase", "order")),
)
TYPES = (
    ("memdesc", ("shape", "element", "encoding")),
)

OPS: tuple = (
    TTGOpDef("convert_layout", (("src", _S),), doc="the same tensor in another layout"),
    TTGOpDef("local_alloc", (("src", _O),), pure=False, effects=_RW,
             doc="allocate a shared-memory buffer (!ttg.memdesc), optionally initialised from a tensor"),
    TTGOpDef("local_load", (("src", _S),), pure=False, effects=frozenset({READ}),
             doc="read a memdesc into a distributed tensor"),
    TTGOpDef("local_store", (("src", _S), ("dst", _S)), results=(), pure=False, effects=frozenset({WRITE}),
             doc="write a distributed tensor into a memdesc"),
    TTGOpDef("local_dealloc", (("src", _S),), results=(), pure=False, effects=_RW),
    TTGOpDef("barrier", results=(), pure=False, effects=_RW, doc="CTA-wide barrier (bar.sync 0)"),
)

_BY_NAME = {op.full_name: op for op in OPS}


def op_def(name: str):
    return _BY_NAME.get(name)


def irdl_source() -> str:
    lines = ["irdl.dialect @ttg {"]
    for kind, defs in (("attribute", ATTRIBUTES), ("type", TYPES)):
        for name, params in defs:
            lines += irdl_parametric_lines(kind, name, params)
    lines += irdl_operation_lines(OPS)
    lines.append("}")
    return "\n".join(lines)


def load_dialect(context) -> None:
    """Register the ttg dialect (IRDL) with ``context``."""
    from mlir import ir
    from mlir.dialects import irdl

    with context:
        irdl.load_dialects(ir.Module.parse(irdl_source()))


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------

def encoding_of(ty):
    """The layout (a :mod:`layouts` dataclass) of a tensor type, or None (scalar / no encoding)."""
    from mlir import ir

    from . import layouts

    if not isinstance(ty, ir.RankedTensorType):
        return None
    enc = ty.encoding
    return None if enc is None else layouts.from_attr(enc)


def with_encoding(ty, layout):
    """``ty`` (a ranked tensor type) with ``layout`` (dataclass or attribute) as its encoding."""
    from mlir import ir

    ty = ir.RankedTensorType(ty)
    attr = layout if isinstance(layout, ir.Attribute) else layout.to_attr(ty.context)
    return ir.RankedTensorType.get(list(ty.shape), ty.element_type, attr, loc=ir.Location.unknown(ty.context))


def memdesc_type(shape, element, shared_layout, context=None):
    from mlir import ir

    ctx = context or element.context
    shp = ", ".join(str(int(s)) for s in shape)
    return ir.Type.parse(f"!ttg.memdesc<array<i64: {shp}>, {element}, {shared_layout.to_str()}>", ctx)


def module_int(module, name: str, default=None):
    op = module.operation if hasattr(module, "operation") else module
    if name not in op.attributes:
        return default
    return int(op.attributes[name].value)


def module_str(module, name: str, default=None):
    from mlir import ir

    op = module.operation if hasattr(module, "operation") else module
    if name not in op.attributes:
        return default
    return ir.StringAttr(op.attributes[name]).value
