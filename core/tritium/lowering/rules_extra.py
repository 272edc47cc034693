"""Generic rules for ``tt.histogram``, ``tt.gather`` and non-splat tensor constants.

* ``tt.histogram``: the bins live in the shared scratch buffer: zeroed, then every owning thread adds one for
  each of its in-range (and unmasked) elements with a shared-memory ``atomicrmw add``, then each result
  register reads its bin.  Values outside ``[0, bins)`` are not counted (the interpreter's rule).
* ``tt.gather``: the source goes to the scratch buffer (row major); a result element reads
  ``src[index with index[axis] = indices[element]]``; a negative index counts from the end and indices are
  clamped into the axis (the interpreter's rule).
* a non-splat ``arith.constant dense<[...]>`` tensor becomes an internal constant global array; each register
  loads its element by its linear index.
"""
from __future__ import annotations

from mlir import ir

from ..dialects import tt
from .context import is_tensor, scalar_type
from .registry import LoweringError, register
from .rules import _emit_offset, _smem_elem, owner_predicate
from .rules_scan import claim, cmpi, release, select, smem_ptr


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _first_regs(ll) -> set:
    seen, out = set(), set()
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix not in seen:
            seen.add(ix)
            out.add(r)
    return out


def _if(ctx, cond, body):
    ifop = ctx.op("scf.if", [cond], [], regions=2)
    for i in range(2):
        blk = ir.Block.create_at_start(ifop.regions[i], [])
        with ir.InsertionPoint(blk):
            if i == 0:
                body()
            ctx.op("scf.yield", [])


@register("tt.histogram")
def _histogram(ctx, op):
    src = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    res_ty = op.results[0].type
    nbins = ir.RankedTensorType(res_ty).shape[0]
    rty = scalar_type(res_ty)
    if not isinstance(rty, ir.IntegerType) or rty.width not in (32, 64):
        raise LoweringError(f"tt.histogram with result element type {rty} is not supported (i32 / i64)")
    ety = ctx.int_ty(rty.width)
    vals = ctx.get(src)
    masks = ctx.get(mask) if mask is not None else None
    if masks is not None and len(masks) == 1 and len(vals) != 1:
        masks = masks * len(vals)
    ll = ctx.linear(src.type)
    buf = claim(ctx, op, nbins * rty.width // 8)
    nthreads = ctx.num_warps * ctx.threads_per_warp
    tid = ctx.thread_id()
    # zero the bins: thread t clears bins t, t + nthreads, ...
    zero = ctx.const(ety, 0)
    for b0 in range(0, nbins, nthreads):
        idx = ctx.op1("arith.addi", [tid, ctx.c32(b0)], ctx.i32()) if b0 else tid
        if b0 + nthreads <= nbins:
            ctx.op("llvm.store", [zero, smem_ptr(ctx, buf, idx, ety)])
        else:
            _if(ctx, cmpi(ctx, "ult", idx, ctx.c32(nbins)),
                lambda idx=idx: ctx.op("llvm.store", [zero, smem_ptr(ctx, buf, idx, ety)]))
    ctx.barrier()
    own = owner_predicate(ctx, ll)
    one = ctx.const(ety, 1)
    sty = scalar_type(src.type)
    for r in sorted(_first_regs(ll)):
        v = vals[r]
        if sty.width > 32:
            v32 = ctx.op1("arith.trunci", [v], ctx.i32())
            hi_ok = cmpi(ctx, "ult", v, ctx.const(sty, nbins))
        else:
            v32 = v if sty.width == 32 else ctx.op1("arith.extsi", [v], ctx.i32())
            hi_ok = None
        ok = cmpi(ctx, "ult", v32, ctx.c32(nbins))  # unsigned: negative values fall out too
        if hi_ok is not None:
            ok = ctx.op1("arith.andi", [ok, hi_ok], ok.type)
        if masks is not None:
            ok = ctx.op1("arith.andi", [ok, masks[r]], ok.type)
        if own is not None:
            ok = ctx.op1("arith.andi", [ok, own], ok.type)

        def add(v32=v32):
            p = smem_ptr(ctx, buf, v32, ety)
            ctx.op("llvm.atomicrmw", [p, one], [ety],
                   {"bin_op": ir.IntegerAttr.get(ctx.int_ty(64), 1),  # add
                    "ordering": ir.IntegerAttr.get(ctx.int_ty(64), 2)})  # monotonic
        _if(ctx, ok, add)
    ctx.barrier()
    out = []
    for (i,) in ctx.indices(res_ty):
        out.append(ctx.op1("llvm.load", [smem_ptr(ctx, buf, i, ety)], ety))
    release(ctx, buf)
    return [out]


@register("tt.gather")
def _gather(ctx, op):
    src, idx = op.operands
    res = op.results[0]
    axis = int(op.attributes["axis"].value)
    sshape = tuple(ir.RankedTensorType(src.type).shape)
    n = sshape[axis]
    sty, to_s, from_s, nbytes = _smem_elem(ctx, src.type)
    buf = claim(ctx, op, _numel(sshape) * nbytes)
    i32 = ctx.i32()
    for v, ix in zip(ctx.get(src), ctx.indices(src.type)):
        o = _emit_offset(ctx, ("lin", ix, sshape))
        ctx.op("llvm.store", [to_s(v), smem_ptr(ctx, buf, o, sty)])
    ctx.barrier()
    ity = scalar_type(idx.type)
    out = []
    for g, ix in zip(ctx.get(idx), ctx.indices(res.type)):
        if ity.width > 32:
            g = ctx.op1("arith.trunci", [g], i32)
        elif ity.width < 32:
            g = ctx.op1("arith.extsi", [g], i32)
        neg = cmpi(ctx, "slt", g, ctx.c32(0))
        g = select(ctx, neg, ctx.op1("arith.addi", [g, ctx.c32(n)], i32), g)
        g = ctx.op1("arith.maxsi", [g, ctx.c32(0)], i32)
        g = ctx.op1("arith.minsi", [g, ctx.c32(n - 1)], i32)
        o = _emit_offset(ctx, ("lin", ix[:axis] + (g,) + ix[axis + 1:], sshape))
        out.append(from_s(ctx.op1("llvm.load", [smem_ptr(ctx, buf, o, sty)], sty)))
    release(ctx, buf)
    return [out]


def _is_fp8(t) -> bool:
    return isinstance(t, ir.FloatType) and t.width == 8


def non_splat_constant(ctx, op):
    """A non-splat dense tensor constant: an internal constant global, one load per register."""
    ty = op.results[0].type
    attr = ir.DenseElementsAttr(op.attributes["value"])
    elem = tt.elem_of(ty)
    shape = tuple(ir.RankedTensorType(ty).shape)
    gty = elem
    if isinstance(elem, ir.IntegerType) and elem.width == 1:
        gty = ctx.int_ty(8)
    elif _is_fp8(elem) or isinstance(elem, ir.IndexType):
        raise LoweringError(f"non-splat tensor constants of {elem} are not supported by the GPU lowering")
    flat_ty = ir.RankedTensorType.get([_numel(shape)], gty)
    # the same elements, flattened (the text form is exact for every element type)
    text = str(attr)
    body = text[text.index("dense<") + 6:text.rindex("> : ")]
    if gty != elem:  # i1 -> i8
        body = body.replace("true", "1").replace("false", "0")
    flat = body.replace("[", "").replace("]", "")
    if not flat.strip().startswith('"'):
        body = "[" + flat + "]"
    value = ir.Attribute.parse(f"dense<{body}> : {flat_ty}")
    key = ("const_global", str(attr), str(gty))
    name = ctx.cache.get(key)
    if name is None:
        name = f"tritium_const_{len([k for k in ctx.cache if isinstance(k, tuple) and k[0] == 'const_global'])}_" \
               f"{abs(hash(str(attr))) % 1000000}"
        aty = ir.Type.parse(f"!llvm.array<{_numel(shape)} x {gty}>")
        with ir.InsertionPoint.at_block_begin(ctx.out_module.body):
            ir.Operation.create("llvm.mlir.global", attributes={
                "sym_name": ir.StringAttr.get(name), "global_type": ir.TypeAttr.get(aty),
                "linkage": ir.Attribute.parse("#llvm.linkage<internal>"), "constant": ir.UnitAttr.get(),
                "value": value,
                "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), ctx.target.global_address_space),
                "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 16)}, regions=1)
        ctx.cache[key] = name
    ptr = ir.Type.parse(f"!llvm.ptr<{ctx.target.global_address_space}>")
    base = ctx.op1("llvm.mlir.addressof", [], ptr, {"global_name": ir.FlatSymbolRefAttr.get(name)})
    out = []
    for ix in ctx.indices(ty):
        o = _emit_offset(ctx, ("lin", ix, shape))
        p = ctx.op1("llvm.getelementptr", [base, o], ptr,
                    {"rawConstantIndices": ir.DenseI32ArrayAttr.get([-2147483648]),
                     "elem_type": ir.TypeAttr.get(gty)})
        v = ctx.op1("llvm.load", [p], gty)
        if gty != elem:
            v = ctx.op1("arith.trunci", [v], elem)
        out.append(v)
    return [out]
