"""``ttg.convert_layout``: nothing to do for equal layouts, register moves when every thread keeps its
elements, else one round through the op's scratch buffer (the whole tensor, row major; the allocation analysis
sizes it so), in vectors of up to 16 bytes where a thread's registers are consecutive there; a tensor larger than
``layouts.CONVERT_ROUND_BYTES`` goes in rounds of rows (:func:`tritium.dialects.layouts.convert_rounds`)."""
from __future__ import annotations

from ...dialects import layouts, tt
from ..table import Rules
from ...dialects.layouts import reg_lookup
from ..utils import exchange, exchange_rounds, linear, smem_elem

RULES = Rules()


@RULES.register("ttg.convert_layout")
def _convert_layout(ctx, src):
    src_ty, res_ty = ctx.op.operands[0].type, ctx.op.results[0].type
    src_ll, dst_ll = ctx.linear(src_ty), ctx.linear(res_ty)
    if src_ll == dst_ll:
        return [src]
    m = reg_lookup(src_ll, dst_ll, lambda b: b)
    if m is not None:
        return [[src[i] for i in m]]
    shape = tt.shape_of(src_ty)
    _, _, _, nbytes = smem_elem(ctx, res_ty)
    k = layouts.convert_rounds(src_ll, dst_ll, nbytes)
    if k:
        return [exchange_rounds(ctx, src, src_ty, res_ty, shape, k)]
    return [exchange(ctx, [(src, src_ty, lambda ix: linear(ix, shape))], res_ty, lambda ix: linear(ix, shape),
                     row_major=shape)]
