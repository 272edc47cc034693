"""The ``ttg`` dialect (TTGIR): layout encodings, a shared-memory buffer type and the ops that move data
between layouts and memories.

Like ``tt`` it is generated from one table and registered through IRDL.  Encodings are IRDL attributes that
sit on tensor types; their Python mirror (the math) is :mod:`tritium.dialects.layouts`::

    #ttg.blocked<array<i32: sizePerThread..>, array<i32: threadsPerWarp..>, array<i32: warpsPerCTA..>,
                 array<i32: order..>>
    #ttg.slice<dim : i32, #parent>
    #ttg.shared<vec : i32, perPhase : i32, maxPhase : i32, array<i32: order..>>      (swizzled)
    #ttg.nvidia_mma<version : i32, array<i32: warpsPerCTA..>, array<i32: instrShape..>>   (tensor-core results)
    #ttg.amd_mfma<version : i32, array<i32: warpsPerCTA..>, array<i32: instrShape..>, isTransposed : i32>
                                                                                     (AMD v_mfma results)
    #ttg.amd_wmma<version : i32, array<i32: warpsPerCTA..>, isTransposed : i32>      (AMD RDNA3 v_wmma results)
    #ttg.dot_op<opIdx : i32, #parent, kWidth : i32>                                  (tt.dot operands)
    #ttg.nvmma_shared<swizzleBytes : i32, transposed : i32, elementBits : i32>       (tensor-core shared memory)
    #ttg.linear<rank : i32, array<i32: register bases..>, array<i32: lane bases..>, array<i32: warp bases..>>
                                                  (a linear layout given by its bases, each ``rank`` numbers)
    !ttg.memdesc<array<i64: shape..>, elementType, #ttg.shared<...>>

IRDL parameter names must be lower case, so the printed form is positional (as above).

Module attributes (set by :mod:`tritium.passes.ttgir.convert_to_ttgir`): ``ttg.num-warps``,
``ttg.threads-per-warp`` (32), ``ttg.num-ctas`` (1), ``ttg.target`` (``"cuda:90"``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import tt
from .tt import MIXED, OPTIONAL, READ, SINGLE, TENSOR, VARIADIC, WRITE, OpDef, TypeConstraint, \
    irdl_operation_lines, irdl_parametric_lines

NUM_WARPS = "ttg.num-warps"
THREADS_PER_WARP = "ttg.threads-per-warp"
NUM_CTAS = "ttg.num-ctas"
TARGET = "ttg.target"
NUM_STAGES = "ttg.num-stages"
# global scratch memory (passes/analysis/allocation.py): bytes per program and alignment on the module, an op's
# offset in its program's scratch
GLOBAL_SCRATCH_SIZE = "ttg.global_scratch_memory_size"
GLOBAL_SCRATCH_ALIGN = "ttg.global_scratch_memory_alignment"
GLOBAL_SCRATCH_OFFSET = "ttg.global_scratch_memory_offset"


@dataclass(frozen=True)
class TTGOpDef(OpDef):
    """One ttg op (see :class:`tritium.dialects.tt.OpDef`)."""

    dialect = "ttg"


_S, _O, _V = SINGLE, OPTIONAL, VARIADIC
_RW = frozenset({READ, WRITE})
MEMDESC = TypeConstraint("!ttg.memdesc", "irdl.base @ttg::@memdesc")
I1_TYPE = TypeConstraint("i1", "irdl.is i1")
DESC = TypeConstraint("!tt.tensordesc", "irdl.any")  # tt's types are not visible to ttg's IRDL: checked in Python

#: attributes: (name, parameter names)
ATTRIBUTES = (
    ("blocked", ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")),
    ("slice", ("dim", "parent")),
    ("shared", ("vec", "per_phase", "max_phase", "order")),
    ("nvidia_mma", ("version", "warps_per_cta", "instr_shape")),
    ("amd_mfma", ("version", "warps_per_cta", "instr_shape", "is_transposed")),
    ("amd_wmma", ("version", "warps_per_cta", "is_transposed")),
    ("dot_op", ("op_idx", "parent", "k_width")),
    ("nvmma_shared", ("swizzle_bytes", "transposed", "element_bits")),
    ("linear", ("rank", "register", "lane", "warp")),
)
TYPES = (
    ("memdesc", ("shape", "element", "encoding")),
)


def _v_tensor_matches_memdesc(tensor_ty, memdesc_ty) -> str:
    shape, elem = memdesc_shape_and_element(memdesc_ty)
    if tt.shape_of(tensor_ty) != shape or tt.elem_of(tensor_ty) != elem:
        return f"tensor {tensor_ty} does not match the buffer {memdesc_ty}"
    return ""


def _v_convert_layout(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if tt.shape_of(src) != tt.shape_of(res) or tt.elem_of(src) != tt.elem_of(res):
        return f"converts a tensor to the same shape and element type in another layout, got {src} -> {res}"


def _v_local_alloc(op, g):
    for src in g["src"]:
        return _v_tensor_matches_memdesc(src.type, op.results[0].type) or None


def _v_local_load(op, g):
    if "offsets" not in op.attributes:
        return _v_tensor_matches_memdesc(op.results[0].type, op.operands[0].type) or None
    shape, elem = memdesc_shape_and_element(op.operands[0].type)
    rshape, offs = tt.shape_of(op.results[0].type), tuple(op.attributes["offsets"])
    if tt.elem_of(op.results[0].type) != elem or len(offs) != len(shape) or len(rshape) != len(shape) or any(
            o < 0 or o % r or o + r > s for o, r, s in zip(offs, rshape, shape)):
        return f"reads a block of the buffer {op.operands[0].type} at offsets {offs} (multiples of the block's " \
               f"shape, inside the buffer), got {op.results[0].type}"


def _v_local_store(op, g):
    return _v_tensor_matches_memdesc(op.operands[0].type, op.operands[1].type) or None


def _v_memdesc_subview(op, g):
    (shape, elem), (rshape, relem) = (memdesc_shape_and_element(op.operands[0].type),
                                      memdesc_shape_and_element(op.results[0].type))
    if tuple(shape[1:]) != tuple(rshape) or elem != relem:
        return f"a subview of {op.operands[0].type} is one of its {shape[0] if shape else 0} buffers, got " \
               f"{op.results[0].type}"


def _v_async_copy(op, g):
    src, dst = op.operands[0].type, op.operands[1].type
    shape, elem = memdesc_shape_and_element(dst)
    if not tt.is_ptr(tt.elem_of(src)) or tt.shape_of(src) != tuple(shape) or \
            tt.pointee(tt.elem_of(src)) != elem:
        return f"copies a tensor of pointers to {elem} of the buffer's shape {tuple(shape)}, got {src}"


def _v_warp_group_dot(op, g):
    a, b, c = (x.type for x in list(op.operands)[:3])
    shape_a = tt.shape_of(a) if tt.is_tensor(a) else memdesc_shape_and_element(a)[0] if str(a).startswith(
        "!ttg.memdesc") else None
    if shape_a is None:
        return f"a is a !ttg.memdesc or a tensor in registers, got {a}"
    shape_b = tuple(memdesc_shape_and_element(b)[0])
    shape_a, shape_c = tuple(shape_a), tuple(tt.shape_of(c))
    if len(shape_a) != 2 or len(shape_b) != 2 or len(shape_c) != 2:
        return f"a warpgroup dot is 2-D, got a {shape_a}, b {shape_b}, c {shape_c}"
    if shape_a[1] != shape_b[0] or shape_c != (shape_a[0], shape_b[1]):
        return f"shapes do not multiply: a {shape_a} @ b {shape_b} + c {shape_c}"


def _v_tma_copy(op, g):
    desc, buf = g["desc"][0].type, (g["dst"] if "dst" in g else g["src"])[0].type
    if not tt.is_tensordesc(desc):
        return f"copies through a !tt.tensordesc, got {desc}"
    block = tt.desc_block_type(desc)
    shape, elem = memdesc_shape_and_element(buf)
    if tt.squeezed_shape(shape) != tt.squeezed_shape(tt.shape_of(block)) or elem != tt.elem_of(block):
        return f"copies a block of {block} into a buffer of its shape (or without leading 1 dims) and element " \
               f"type, got {buf}"
    rank = len(tt.shape_of(block))
    if len(g["indices"]) != rank:
        return f"takes one index per dimension of the block ({rank}), got {len(g['indices'])}"


def _v_memdesc_trans(op, g):
    (shape, elem), (rshape, relem) = (memdesc_shape_and_element(op.operands[0].type),
                                      memdesc_shape_and_element(op.results[0].type))
    if len(shape) != 2 or tuple(rshape) != (shape[1], shape[0]) or elem != relem:
        return f"transposes a 2-D buffer, got {op.operands[0].type} -> {op.results[0].type}"


def _v_warp_group_dot_wait(op, g):
    if [str(v.type) for v in op.operands] != [str(r.type) for r in op.results]:
        return "its results are its inputs, one for one, of the same types"


OPS: tuple = (
    TTGOpDef("convert_layout", (("src", _S),), types={"src": TENSOR, "result": TENSOR}, verify=_v_convert_layout,
             doc="the same tensor in another layout"),
    TTGOpDef("local_alloc", (("src", _O),), types={"src": TENSOR, "result": MEMDESC}, pure=False, effects=_RW,
             verify=_v_local_alloc,
             doc="allocate a shared-memory buffer (!ttg.memdesc), optionally initialised from a tensor"),
    TTGOpDef("local_load", (("src", _S),), attrs={"offsets": tt.I32_ARRAY}, types={"src": MEMDESC, "result": TENSOR},
             pure=False, effects=frozenset({READ}), verify=_v_local_load,
             doc="read a memdesc into a distributed tensor; with offsets, the block of the result's shape at those "
                 "element offsets (multiples of that shape: a K-slice of a dot operand)"),
    TTGOpDef("local_store", (("src", _S), ("dst", _S)), results=(), types={"src": TENSOR, "dst": MEMDESC},
             pure=False, effects=frozenset({WRITE}), verify=_v_local_store,
             doc="write a distributed tensor into a memdesc"),
    TTGOpDef("local_dealloc", (("src", _S),), results=(), types={"src": MEMDESC}, pure=False, effects=_RW,
             doc="release a shared-memory buffer"),
    TTGOpDef("barrier", results=(), pure=False, effects=_RW, doc="CTA-wide barrier (bar.sync 0)"),
    TTGOpDef("memdesc_subview", (("src", _S), ("index", _S)), types={"src": MEMDESC, "index": tt.I32_TYPE,
                                                                     "result": MEMDESC},
             verify=_v_memdesc_subview,
             doc="buffer index of a stack of buffers (a memdesc whose first dim is the stack)"),
    TTGOpDef("async_copy_global_to_local", (("src", _S), ("dst", _S), ("mask", _O), ("other", _O)), results=(),
             types={"src": TENSOR, "dst": MEMDESC}, pure=False, effects=frozenset({READ, WRITE}),
             verify=_v_async_copy,
             doc="start copying a tensor of global pointers' elements into a buffer (cp.async); masked-off "
                 "elements are zero"),
    TTGOpDef("async_commit_group", results=(), pure=False, effects=_RW,
             doc="close the group of the asynchronous copies started since the last commit"),
    TTGOpDef("async_wait", results=(), attrs={"num": tt.required(tt.I32)}, pure=False, effects=_RW,
             doc="wait until at most num committed groups of asynchronous copies are still in flight"),
    TTGOpDef("memdesc_trans", (("src", _S),), types={"src": MEMDESC, "result": MEMDESC}, verify=_v_memdesc_trans,
             doc="the same 2-D buffer viewed transposed (its layout says how: the bytes do not move)"),
    TTGOpDef("init_barrier", (("barrier", _S),), results=(), attrs={"count": tt.required(tt.I32)},
             types={"barrier": MEMDESC}, pure=False, effects=frozenset({WRITE}),
             doc="initialise an mbarrier (an i64 in shared memory) expecting count arrivals per phase"),
    TTGOpDef("wait_barrier", (("barrier", _S), ("phase", _S)), results=(),
             types={"barrier": MEMDESC, "phase": tt.I32_TYPE}, pure=False, effects=frozenset({READ}),
             doc="every thread waits until the mbarrier has completed the phase of the given parity (0 / 1)"),
    TTGOpDef("async_tma_copy_global_to_local", (("desc", _S), ("indices", _V), ("dst", _S), ("barrier", _S),
                                                ("pred", _O)), results=(),
             types={"desc": DESC, "indices": tt.I32_TYPE, "dst": MEMDESC, "barrier": MEMDESC, "pred": I1_TYPE},
             pure=False, effects=_RW, verify=_v_tma_copy,
             doc="one thread starts a TMA copy of the descriptor's block at indices into dst (cp.async.bulk.tensor; "
                 "out-of-shape elements read the descriptor's fill) and arrives on the barrier expecting its bytes; "
                 "with pred false nothing happens"),
    TTGOpDef("async_tma_copy_local_to_global", (("desc", _S), ("indices", _V), ("src", _S)), results=(),
             types={"desc": DESC, "indices": tt.I32_TYPE, "src": MEMDESC}, pure=False, effects=_RW,
             verify=_v_tma_copy,
             doc="store a buffer through the descriptor at indices with TMA (out-of-shape elements dropped): "
                 "every thread's writes of src are made visible to the copy first, and the op returns once src "
                 "has been read"),
    TTGOpDef("warp_group_dot", (("a", _S), ("b", _S), ("c", _S), ("use_c", _O)),
             attrs={"inputPrecision": tt.InputPrecision, "maxNumImpreciseAcc": tt.I32, "isAsync": tt.BOOL},
             types={"b": MEMDESC, "c": tt.same("C", TENSOR), "use_c": I1_TYPE, "result": tt.same("C")}, pure=False,
             effects=frozenset({READ}), verify=_v_warp_group_dot,
             doc="a @ b + c on Hopper tensor cores (wgmma): a a memdesc (or a dot_op tensor), b a memdesc, c and the "
                 "result in #ttg.nvidia_mma<3>; reads shared memory; isAsync: the result is only ready after a "
                 "warp_group_dot_wait; use_c (i1, optional): false computes a @ b, c unread (wgmma's scale-d)"),
    TTGOpDef("warp_group_dot_wait", (("inputs", MIXED),), results=(("outputs", MIXED),),
             attrs={"pendings": tt.required(tt.I32)}, pure=False, effects=frozenset({READ}),
             verify=_v_warp_group_dot_wait,
             doc="wait until at most pendings groups of asynchronous warp_group_dots are in flight; outputs: the "
                 "inputs (their accumulators, memdescs they read), ready"),
)

_BY_NAME = {op.full_name: op for op in OPS}

# the op name constants: CONVERT_LAYOUT = "ttg.convert_layout", ...
globals().update({op.constant_name: op.full_name for op in OPS})


def op_def(name: str):
    """The table entry of ``ttg.<name>`` (full name), or None for ops of other dialects."""
    return _BY_NAME.get(name)


tt.register_op_table("ttg.", op_def)  # tt's generic decoding of ops finds ttg's table


def irdl_source() -> str:
    """The IRDL module that defines the dialect (generated from the table)."""
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


def memdesc_shape_and_element(ty) -> tuple:
    """``(shape, element type)`` of a ``!ttg.memdesc<array<i64: ...>, T, #layout>``."""
    from mlir import ir

    s = str(ty)
    inner = s[len("!ttg.memdesc<"):-1]
    arr_end = inner.index(">")
    arr = inner[len("array<i64"):arr_end].lstrip(":").strip()
    shape = tuple(int(x) for x in arr.split(",") if x.strip()) if arr else ()
    rest = inner[arr_end + 1:].lstrip(", ")
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            return shape, ir.Type.parse(rest[:i].strip(), ty.context)
    return shape, ir.Type.parse(rest.strip(), ty.context)


def memdesc_layout(ty) -> tuple:
    """``(shape, element type, shared layout dataclass)`` of a ``!ttg.memdesc`` type."""
    from . import layouts

    shape, elem = memdesc_shape_and_element(ty)
    s = str(ty)
    return shape, elem, layouts.parse_layout(s[s.index("#ttg."):-1])


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


def module_target(module):
    """The module's ``ttg.target`` (with ``ttg.threads-per-warp``) as a :class:`tritium.target.GPUTarget`, None when
    the module has none: what the TTGIR passes read instead of the string."""
    from ..target import GPUTarget

    text = module_str(module, TARGET)
    return None if not text else GPUTarget.parse(text, module_int(module, THREADS_PER_WARP, 32))
