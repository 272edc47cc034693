"""View ops: splat, broadcast, expand_dims, trans, reshape, cat, join, split.

A result element held by the same thread as its source element is a register move (the layouts' linear maps
say which register); otherwise the values go through the op's scratch buffer (:func:`utils.exchange`), row
major.
"""
from __future__ import annotations

from ...dialects import tt
from ...dialects.layouts import reshape_index, trans_source_index
from ..table import Rules
from ...dialects.layouts import reg_lookup
from ..utils import exchange, linear

RULES = Rules()


@RULES.register("tt.splat")
def _splat(ctx, src):
    return [src * ctx.nregs(ctx.op.results[0].type)]


@RULES.register("tt.broadcast")
def _broadcast(ctx, src):
    src_ty, res_ty = ctx.op.operands[0].type, ctx.op.results[0].type
    sshape = tt.shape_of(src_ty)

    def project(b):
        return tuple(0 if sshape[d] == 1 else x for d, x in enumerate(b))

    m = reg_lookup(ctx.linear(src_ty), ctx.linear(res_ty), project)
    if m is None:
        # the layouts disagree on threads: move the source through shared memory first
        return [exchange(ctx, [(src, src_ty, lambda idx: linear(idx, sshape))], res_ty,
                         lambda idx: linear(tuple(0 if sshape[d] == 1 else x for d, x in enumerate(idx)), sshape))]
    return [[src[i] for i in m]]


@RULES.register("tt.expand_dims")
def _expand_dims(ctx, src, *, axis):
    src_ty, res_ty = ctx.op.operands[0].type, ctx.op.results[0].type

    def project(b):
        return b[:axis] + b[axis + 1:]

    m = reg_lookup(ctx.linear(src_ty), ctx.linear(res_ty), project)
    if m is None:
        sshape = tt.shape_of(src_ty)
        return [exchange(ctx, [(src, src_ty, lambda idx: linear(idx, sshape))], res_ty,
                         lambda idx: linear(idx[:axis] + idx[axis + 1:], sshape))]
    return [[src[i] for i in m]]


@RULES.register("tt.trans")
def _trans(ctx, src, *, order):
    """A register rename when every thread holds the source elements of its result elements (the result in
    :func:`~tritium.dialects.layouts.transposed_layout` of the source's); otherwise through the scratch buffer."""
    src_ty, res_ty = ctx.op.operands[0].type, ctx.op.results[0].type
    shape = tt.shape_of(src_ty)
    order = [int(o) for o in order]
    m = reg_lookup(ctx.linear(src_ty), ctx.linear(res_ty), lambda ix: trans_source_index(ix, order))
    if m is not None:
        return [[src[i] for i in m]]
    return [exchange(ctx, [(src, src_ty, lambda ix: linear(ix, shape))], res_ty,
                     lambda ix: linear(trans_source_index(ix, order), shape))]


@RULES.register("tt.reshape")
def _reshape(ctx, src, **_):
    """Row-major order is kept (``allow_reorder`` / ``efficient_layout`` give no freedom used here).  When every
    thread already holds the source elements of its result elements (the thread-locality pass's views), the
    registers are renamed; otherwise the values go through the scratch buffer."""
    src_ty, res_ty = ctx.op.operands[0].type, ctx.op.results[0].type
    sshape, dshape = tt.shape_of(src_ty), tt.shape_of(res_ty)
    m = reg_lookup(ctx.linear(src_ty), ctx.linear(res_ty), lambda ix: reshape_index(ix, dshape, sshape))
    if m is not None:
        return [[src[i] for i in m]]
    return [exchange(ctx, [(src, src_ty, lambda ix: linear(ix, sshape))], res_ty, lambda ix: linear(ix, dshape))]


@RULES.register("tt.cat")
def _cat(ctx, lhs, rhs):
    a_ty, b_ty = (x.type for x in ctx.op.operands)
    res_ty = ctx.op.results[0].type
    shape, dshape = tt.shape_of(a_ty), tt.shape_of(res_ty)
    n = tt.numel(shape)
    return [exchange(ctx, [(lhs, a_ty, lambda ix: linear(ix, shape)),
                           (rhs, b_ty, lambda ix: ("add", linear(ix, shape), n))], res_ty,
                     lambda ix: linear(ix, dshape))]


@RULES.register("tt.join")
def _join(ctx, lhs, rhs):
    a_ty, b_ty = (x.type for x in ctx.op.operands)
    res_ty = ctx.op.results[0].type
    shape, dshape = tt.shape_of(a_ty), tt.shape_of(res_ty)
    return [exchange(ctx, [(lhs, a_ty, lambda ix: ("mul2", linear(ix, shape), 0)),
                           (rhs, b_ty, lambda ix: ("mul2", linear(ix, shape), 1))], res_ty,
                     lambda ix: linear(ix, dshape))]


@RULES.register("tt.split")
def _split(ctx, src):
    src_ty = ctx.op.operands[0].type
    sshape = tt.shape_of(src_ty)
    dshape = sshape[:-1]
    return [exchange(ctx, [(src, src_ty, lambda ix: linear(ix, sshape))], r.type,
                     lambda ix, k=k: ("mul2", linear(ix, dshape), k))
            for k, r in enumerate(ctx.op.results)]
