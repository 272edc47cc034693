"""TTIR -> TTGIR: give every tensor a layout (Triton's ConvertTritonToTritonGPU).

* every tensor value (op results, block arguments, function signatures) gets the default blocked layout of its
  shape for ``num_warps`` (:func:`tritium.dialects.layouts.default_blocked`);
* ``tt.reduce`` results get ``#ttg.slice<axis, operand layout>``;
* where an operand's layout is not the one its user expects, a ``ttg.convert_layout`` is inserted right after
  the operand's definition (one per value and layout):
  ``tt.expand_dims`` expects ``#ttg.slice<axis, result layout>``; ``tt.reduce`` takes what it gets;
  everything else (elementwise ops, broadcast, loads/stores, ``scf.yield``, ``func.return``/``func.call``)
  expects the default layout of the operand's shape, so operands and results of elementwise ops agree and
  region arguments / results stay consistent;
* the module gets ``ttg.num-warps``, ``ttg.threads-per-warp``, ``ttg.num-ctas``, ``ttg.target`` (and
  ``ttg.num-stages`` when given).

Later TTGIR passes (coalesce, remove_layout_conversions) improve on these choices.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, ttg


def _tensor(ty):
    return ty if isinstance(ty, ir.RankedTensorType) else None


def _default(ty, num_warps, tpw):
    return layouts.default_blocked(tuple(ty.shape), num_warps, tpw)


def _all_ops(op):
    out = []

    def visit(o):
        out.append(o.operation if hasattr(o, "operation") else o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def _retype_constant(op, new_ty):
    attr = op.attributes["value"]
    try:
        dense = ir.DenseElementsAttr(attr)
        if dense.is_splat:
            new = ir.DenseElementsAttr.get_splat(new_ty, dense.get_splat_value())
        else:
            raise ValueError
    except ValueError:
        text = str(attr)
        new = ir.Attribute.parse(text[: text.rindex(":")] + ": " + str(new_ty))
    op.attributes["value"] = new


def convert_to_ttgir(module, num_warps: int = 4, threads_per_warp: int = 32, num_ctas: int = 1,
                     target: str = "cuda:90", num_stages=None):
    """Rewrite the TTIR ``module`` into TTGIR in place; returns it.  ``num_stages`` (the software pipeliner's
    depth) becomes the module attribute ``ttg.num-stages`` when given."""
    mop = module.operation if hasattr(module, "operation") else module
    ctx = mop.context
    with ctx:
        i32 = ir.IntegerType.get_signless(32)
        mop.attributes[ttg.NUM_WARPS] = ir.IntegerAttr.get(i32, num_warps)
        mop.attributes[ttg.THREADS_PER_WARP] = ir.IntegerAttr.get(i32, threads_per_warp)
        mop.attributes[ttg.NUM_CTAS] = ir.IntegerAttr.get(i32, num_ctas)
        mop.attributes[ttg.TARGET] = ir.StringAttr.get(target)
        if num_stages is not None:
            mop.attributes[ttg.NUM_STAGES] = ir.IntegerAttr.get(i32, int(num_stages))

        def enc(ty, layout=None):
            t = _tensor(ty)
            if t is None:
                return ty
            return ttg.with_encoding(t, layout or _default(t, num_warps, threads_per_warp))

        ops = _all_ops(mop)
        # 1. types: block arguments and results
        for op in ops:
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.arguments:
                        if _tensor(arg.type) is not None and arg.type.encoding is None:
                            arg.set_type(enc(arg.type))
            if op.name == "func.func":
                fty = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                new = ir.FunctionType.get([enc(t) for t in fty.inputs], [enc(t) for t in fty.results])
                op.attributes["function_type"] = ir.TypeAttr.get(new)
            for i, res in enumerate(op.results):
                t = _tensor(res.type)
                if t is None or t.encoding is not None:
                    continue
                if op.name == "tt.reduce":
                    axis = int(op.attributes["axis"].value)
                    src_layout = ttg.encoding_of(op.operands[i].type)
                    res.set_type(enc(t, layouts.SliceLayout(axis, src_layout)))
                else:
                    res.set_type(enc(t))
                if op.name == "arith.constant":
                    _retype_constant(op, res.type)

        # 2. operands that need another layout
        cache = {}

        def converted(value, layout, loc):
            """``value`` converted to ``layout`` right after its definition (at the start of its block for a block
            argument), once per (value, layout)."""
            key = (value, layout)
            if key not in cache:
                new_ty = ttg.with_encoding(value.type, layout)
                owner = value.owner
                if isinstance(owner, ir.Block):
                    with loc, ir.InsertionPoint.at_block_begin(owner):
                        conv = ir.Operation.create(ttg.CONVERT_LAYOUT, results=[new_ty], operands=[value])
                else:
                    owner = owner.operation if hasattr(owner, "operation") else owner
                    with loc, ir.InsertionPoint(owner):
                        conv = ir.Operation.create(ttg.CONVERT_LAYOUT, results=[new_ty], operands=[value])
                    conv.move_after(owner)
                cache[key] = conv.results[0]
            return cache[key]

        for op in ops:
            if op.name in ("tt.reduce", "func.func", "ttg.convert_layout"):
                continue
            for i, v in enumerate(list(op.operands)):
                t = _tensor(v.type)
                if t is None:
                    continue
                have = ttg.encoding_of(t)
                if op.name == "tt.expand_dims":
                    want = layouts.SliceLayout(int(op.attributes["axis"].value), ttg.encoding_of(op.results[0].type))
                else:
                    want = _default(t, num_warps, threads_per_warp)
                if have == want:
                    continue
                op.operands[i] = converted(v, want, op.location)

        # 3. tl.assume: TTIR's tt.assume (which the interpreter checks) is LLVM's assume from here on, as in
        # Triton's TTGIR (its AxisInfo and LLVM read it; the lowering passes it through)
        for op in ops:
            if op.name == "tt.assume":
                with op.location, ir.InsertionPoint(op):
                    ir.Operation.create("llvm.intr.assume", operands=list(op.operands), attributes={
                        "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0])})
                op.erase()
    return module
