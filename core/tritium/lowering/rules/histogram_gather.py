"""``tt.histogram`` and ``tt.gather``, through the op's scratch buffer.

* ``tt.histogram``: the bins are zeroed, then every owning thread adds one for each of its in-range (and
  unmasked) elements with a shared-memory ``atomicrmw add``, then each result register reads its bin.  Values
  outside ``[0, bins)`` are not counted (the interpreter's rule).
* ``tt.gather``: the source goes to the buffer (row major); a result element reads
  ``src[index with index[axis] = indices[element]]``; a negative index counts from the end and indices are
  clamped into the axis (the interpreter's rule).
"""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...errors import LoweringError
from ..table import Rules
from ..utils import (cmpi, emit_offset, if_then, linear, owner_predicate, per_register, scalar_type, select,
                     smem_elem, unique_regs)

RULES = Rules()


@RULES.register("tt.histogram")
def _histogram(ctx, src, mask):
    op = ctx.op
    src_ty, res_ty = op.operands[0].type, op.results[0].type
    nbins = tt.shape_of(res_ty)[0]
    rty = scalar_type(res_ty)
    if not isinstance(rty, ir.IntegerType) or rty.width not in (32, 64):
        raise LoweringError(f"tt.histogram with result element type {rty} is not supported (i32 / i64)")
    ety = ctx.int_ty(rty.width)
    masks = per_register(mask, len(src)) if mask is not None else None
    ll = ctx.linear(src_ty)
    buf = ctx.scratch(op, nbins * rty.width // 8)
    nthreads = ctx.num_warps * ctx.threads_per_warp
    tid = ctx.thread_id()
    # zero the bins: thread t clears bins t, t + nthreads, ...
    zero = ctx.const(ety, 0)
    for b0 in range(0, nbins, nthreads):
        idx = ctx.emit("arith.addi", [tid, ctx.c32(b0)], ctx.i32()) if b0 else tid
        if b0 + nthreads <= nbins:
            ctx.emit_op("llvm.store", [zero, ctx.smem_ptr(idx, ety, buf.base)])
        else:
            if_then(ctx, cmpi(ctx, "ult", idx, ctx.c32(nbins)),
                    lambda idx=idx: ctx.emit_op("llvm.store", [zero, ctx.smem_ptr(idx, ety, buf.base)]))
    ctx.barrier()
    own = owner_predicate(ctx, ll)
    one = ctx.const(ety, 1)
    sty = scalar_type(src_ty)
    for r in sorted(unique_regs(ll)):
        v = src[r]
        if sty.width > 32:
            v32 = ctx.emit("arith.trunci", [v], ctx.i32())
            hi_ok = cmpi(ctx, "ult", v, ctx.const(sty, nbins))
        else:
            v32 = v if sty.width == 32 else ctx.emit("arith.extsi", [v], ctx.i32())
            hi_ok = None
        ok = cmpi(ctx, "ult", v32, ctx.c32(nbins))  # unsigned: negative values fall out too
        if hi_ok is not None:
            ok = ctx.emit("arith.andi", [ok, hi_ok], ok.type)
        if masks is not None:
            ok = ctx.emit("arith.andi", [ok, masks[r]], ok.type)
        if own is not None:
            ok = ctx.emit("arith.andi", [ok, own], ok.type)

        def add(v32=v32):
            p = ctx.smem_ptr(v32, ety, buf.base)
            ctx.emit_op("llvm.atomicrmw", [p, one], [ety],
                        {"bin_op": ir.IntegerAttr.get(ctx.int_ty(64), 1),  # add
                         "ordering": ir.IntegerAttr.get(ctx.int_ty(64), 2)})  # monotonic
        if_then(ctx, ok, add)
    ctx.barrier()
    out = []
    for (i,) in ctx.indices(res_ty):
        out.append(ctx.emit("llvm.load", [ctx.smem_ptr(i, ety, buf.base)], ety))
    ctx.release(buf)
    return [out]


@RULES.register("tt.gather")
def _gather(ctx, src, indices, *, axis):
    op = ctx.op
    src_ty, idx_ty = (x.type for x in op.operands)
    sshape = tt.shape_of(src_ty)
    n = sshape[axis]
    sty, to_s, from_s, nbytes = smem_elem(ctx, src_ty)
    buf = ctx.scratch(op, tt.numel(sshape) * nbytes)
    i32 = ctx.i32()
    for v, ix in zip(src, ctx.indices(src_ty)):
        o = emit_offset(ctx, linear(ix, sshape))
        ctx.emit_op("llvm.store", [to_s(v), ctx.smem_ptr(o, sty, buf.base)])
    ctx.barrier()
    ity = scalar_type(idx_ty)
    out = []
    for g, ix in zip(indices, ctx.indices(op.results[0].type)):
        if ity.width > 32:
            g = ctx.emit("arith.trunci", [g], i32)
        elif ity.width < 32:
            g = ctx.emit("arith.extsi", [g], i32)
        neg = cmpi(ctx, "slt", g, ctx.c32(0))
        g = select(ctx, neg, ctx.emit("arith.addi", [g, ctx.c32(n)], i32), g)
        g = ctx.emit("arith.maxsi", [g, ctx.c32(0)], i32)
        g = ctx.emit("arith.minsi", [g, ctx.c32(n - 1)], i32)
        o = emit_offset(ctx, linear(ix[:axis] + (g,) + ix[axis + 1:], sshape))
        out.append(from_s(ctx.emit("llvm.load", [ctx.smem_ptr(o, sty, buf.base)], sty)))
    ctx.release(buf)
    return [out]
