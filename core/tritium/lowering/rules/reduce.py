"""``tt.reduce``: combine in registers, then across lanes with butterfly shuffles, then across warps through
shared memory.  The combine function is inlined at every application."""
from __future__ import annotations

from ...dialects import tt
from ...errors import LoweringError
from ..table import Rules
from ..utils import emit_offset, linear, shuffle, shuffle_xor, smem_elem
from ..walker import combine_cost, inline_combine

RULES = Rules()

#: a shuffle's latency in dependent ALU operations, when ``reduce_partials`` is ``"auto"``: a butterfly step waits
#: for its shuffles (one per operand, issued together) then combines; the sequential chain combines once per further
#: partial, its loads overlapped.  Sums and maxima keep the chain; Inductor's arg-max and Welford combines (14
#: operations) take the butterfly from 8 warps along the axis, its NaN-propagating maximum (4) from 16
_SHUFFLE_LATENCY = 5


@RULES.register("tt.reduce")
def _reduce(ctx, srcs, *, axis, combine):
    op = ctx.op
    k = len(srcs)
    src_types = [x.type for x in op.operands]
    ll = ctx.linear(src_types[0])

    def drop(ix):
        return ix[:axis] + ix[axis + 1:]

    # 1. within the thread
    groups: dict = {}
    seen = set()
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix in seen:
            continue
        seen.add(ix)
        groups.setdefault(drop(ix), []).append(r)
    acc = {}
    for key, regs in groups.items():
        a = [srcs[j][regs[0]] for j in range(k)]
        for r in regs[1:]:
            a = inline_combine(ctx, combine, a, [srcs[j][r] for j in range(k)])
        acc[key] = a
    # 2. across lanes: a butterfly; its last step, where every lower lane bit is reduced (or a replica) so each
    #    half of the warp holds one value, combines the two halves' values read from one lane each where the
    #    target reads a lane cheaply (the result uniform, no shuffle address)
    for i, b in enumerate(ll.lane):
        if b[axis] == 0:
            continue
        if any(x for d, x in enumerate(b) if d != axis):
            raise LoweringError("reduce over a layout whose lanes mix dimensions is not supported")
        halves = (2 << i) == ctx.threads_per_warp and all(c[axis] or not any(c) for c in ll.lane[:i])
        for key in acc:
            if halves and ctx.target.read_lane is not None:
                lo = [shuffle(ctx, v, lambda w: ctx.target.read_lane(ctx, w, 0)) for v in acc[key]]
                hi = [shuffle(ctx, v, lambda w: ctx.target.read_lane(ctx, w, 1 << i)) for v in acc[key]]
                acc[key] = inline_combine(ctx, combine, lo, hi)
                continue
            other = [shuffle_xor(ctx, v, 1 << i) for v in acc[key]]
            acc[key] = inline_combine(ctx, combine, acc[key], other)
    # 3. across warps, through shared memory laid out as the allocation analysis sizes it: the operand's shape
    #    with shape[axis] = the warps along axis (row-major; operands one after the other, widest first).  Each
    #    warp writes its partial at its position along axis, then every thread combines the partials of its keys
    #    (all of them, or one per lane and a butterfly: the target's ``reduce_partials``).
    wbits = [i for i, b in enumerate(ll.warp) if b[axis] != 0]
    if wbits:
        keys = list(acc)
        nw_axis = 1 << len(wbits)
        sshape = list(tt.shape_of(src_types[0]))
        sshape[axis] = nw_axis
        numel = tt.numel(sshape)
        elems = [smem_elem(ctx, t) for t in src_types]
        slots = [None] * k
        off = 0
        for j in sorted(range(k), key=lambda j: -elems[j][3]):
            slots[j] = off
            off += numel * elems[j][3]
        buf = ctx.scratch(op, off)

        def gather_bits(v, bits):
            """the i32 whose bit t is bit ``bits[t]`` of ``v``"""
            if bits == list(range(len(bits))):
                return ctx.emit("arith.andi", [v, ctx.c32((1 << len(bits)) - 1)], ctx.i32())
            out = None
            for t, i in enumerate(bits):
                bit = ctx.emit("arith.andi", [ctx.emit("arith.shrui", [v, ctx.c32(i)], ctx.i32()) if i else v,
                                              ctx.c32(1)], ctx.i32())
                if t:
                    bit = ctx.emit("arith.shli", [bit, ctx.c32(t)], ctx.i32())
                out = bit if out is None else ctx.emit("arith.ori", [out, bit], ctx.i32())
            return out

        def slot(key, c):
            ix = list(where[key])
            ix[axis] = c
            return emit_offset(ctx, linear(ix, sshape))

        def load_partial(key, c):
            o = slot(key, c)
            return [from_s(ctx.emit("llvm.load", [ctx.smem_ptr(o, sty, buf.base + slots[j])], sty))
                    for j, (sty, to_s, from_s, nbytes) in enumerate(elems)]

        wpos = gather_bits(ctx.warp_id(), wbits)  # this warp's position along axis
        idx = ctx.indices(src_types[0])
        where = {key: idx[regs[0]] for key, regs in groups.items()}
        for key in keys:
            o = slot(key, wpos)
            for j in range(k):
                sty, to_s, from_s, nbytes = elems[j]
                ctx.emit_op("llvm.store", [to_s(acc[key][j]), ctx.smem_ptr(o, sty, buf.base + slots[j])])
        ctx.barrier()
        # lanes that hold the same key after step 2: those whose bit is reduced along axis, and replicas
        free = [i for i, b in enumerate(ll.lane) if b[axis] or not any(b)][:len(wbits)]
        how = ctx.target.reduce_partials
        if how == "auto":  # the butterfly where the sequential chain of combines would be the longer one
            ops = combine_cost(ctx, combine)
            how = "shuffle" if (nw_axis - 1) * ops > len(wbits) * (ops + _SHUFFLE_LATENCY + k) else "all"
        if how == "shuffle" and len(free) == len(wbits):
            # lane l takes the partial its free lane bits number, a butterfly over those bits combines them in
            # every lane (never over a lane bit along another dimension: that lane holds another key)
            c = gather_bits(ctx.lane_id(), free)
            for key in keys:
                a = load_partial(key, c)
                for i in free:
                    a = inline_combine(ctx, combine, a, [shuffle_xor(ctx, v, 1 << i) for v in a])
                acc[key] = a
        else:
            for key in keys:
                a = load_partial(key, 0)
                for c in range(1, nw_axis):
                    a = inline_combine(ctx, combine, a, load_partial(key, c))
                acc[key] = a
        ctx.release(buf)
    # 4. results in the slice layout's register order
    res_ty = op.results[0].type
    if not tt.is_tensor(res_ty):
        (only,) = acc.values()
        return [[only[j]] for j in range(k)]
    rll = ctx.linear(res_ty)
    out = [[] for _ in range(k)]
    for r in range(rll.num_regs):
        key = rll.index(r)
        if key not in acc:
            raise LoweringError(f"internal: reduce result register {r} ({key}) has no partial result")
        for j in range(k):
            out[j].append(acc[key][j])
    return out
