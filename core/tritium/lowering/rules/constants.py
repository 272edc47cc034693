"""``arith.constant``: scalars and splat tensors in registers; other dense tensors as an internal constant
global, each register loading its element."""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...errors import LoweringError
from ..table import Rules
from ..utils import DYNAMIC_INDEX, address_of, constant_global, emit_offset, linear, scalar_type

RULES = Rules()


@RULES.register("arith.constant")
def _constant(ctx, **params):
    ty = ctx.op.results[0].type
    attr = ctx.op.attributes["value"]
    if not tt.is_tensor(ty):
        return [[ctx.emit("arith.constant", [], scalar_type(ty), {"value": attr})]]
    dense = ir.DenseElementsAttr(attr)
    if not dense.is_splat:
        return _global_constant(ctx, dense)
    v = ctx.emit("arith.constant", [], scalar_type(ty), {"value": dense.get_splat_value()})
    return [[v] * ctx.nregs(ty)]


@RULES.register("ub.poison")
def _poison(ctx, **params):
    """An undefined value (a function's result on a path that returns nothing): LLVM's poison in every register."""
    ty = ctx.op.results[0].type
    v = ctx.emit("llvm.mlir.poison", [], scalar_type(ty))
    return [[v] * (ctx.nregs(ty) if tt.is_tensor(ty) else 1)]


def _global_constant(ctx, attr):
    """A non-splat dense tensor constant: an internal constant global, one load per register."""
    ty = ctx.op.results[0].type
    elem = tt.elem_of(ty)
    shape = tt.shape_of(ty)
    gty = elem
    if isinstance(elem, ir.IntegerType) and elem.width == 1:
        gty = ctx.int_ty(8)
    elif tt.is_fp8(elem) or isinstance(elem, ir.IndexType):
        raise LoweringError(f"non-splat tensor constants of {elem} are not supported by the GPU lowering")
    flat_ty = ir.RankedTensorType.get([tt.numel(shape)], gty)
    # the same elements, flattened (the text form is exact for every element type)
    text = str(attr)
    body = text[text.index("dense<") + 6:text.rindex("> : ")]
    if gty != elem:  # i1 -> i8
        body = body.replace("true", "1").replace("false", "0")
    flat = body.replace("[", "").replace("]", "")
    if not flat.strip().startswith('"'):
        body = "[" + flat + "]"
    value = ir.Attribute.parse(f"dense<{body}> : {flat_ty}")
    aty = ir.Type.parse(f"!llvm.array<{tt.numel(shape)} x {gty}>")
    space = ctx.target.global_address_space
    name = constant_global(ctx, "tritium_const", aty, value, space, alignment=16)
    ptr = ir.Type.parse(f"!llvm.ptr<{space}>")
    base = address_of(ctx, name, ptr)
    out = []
    for ix in ctx.indices(ty):
        o = emit_offset(ctx, linear(ix, shape))
        p = ctx.emit("llvm.getelementptr", [base, o], ptr,
                     {"rawConstantIndices": ir.DenseI32ArrayAttr.get([DYNAMIC_INDEX]),
                      "elem_type": ir.TypeAttr.get(gty)})
        v = ctx.emit("llvm.load", [p], gty)
        if gty != elem:
            v = ctx.emit("arith.trunci", [v], elem)
        out.append(v)
    return [out]
