"""``tt.scan``, as Triton lowers ScanOp.

The elements along the scan axis are split by the layout's bits (sorted by their base along the axis):

1. the *chunk*: the leading register bits (consecutive elements one thread holds): a sequential scan in
   registers;
2. the *lanes*: the following lane bits (consecutive lane-id bits): a Hillis-Steele scan of the chunk totals
   with index shuffles, then each chunk combines the exclusive prefix of the lanes before it;
3. the *segments*: the remaining warp and register bits.  Without warps along the axis the segment totals
   are broadcast from the last lane with shuffles and combined in registers; with warps along the axis the
   totals go through the shared scratch buffer (``[rows, segments]`` per operand, barriers around it) and
   every element combines the totals of the segments before its own.

``combine`` is applied with the accumulated prefix first, in scan order: for ``reverse`` the higher index comes
first, so a reverse scan is a forward scan of the flipped tensor, flipped back (Triton's semantics, which
non-commutative combines such as linear recurrences see; the interpreter does the same).  Layouts whose axis bits do not have this shape raise a ``LoweringError``.
"""
from __future__ import annotations

from ...dialects import tt
from ...errors import LoweringError
from ..table import Rules
from ..utils import cmpi, emit_offset, if_then, linear, select, shuffle_idx, smem_elem
from ..walker import inline_combine

RULES = Rules()


@RULES.register("tt.scan")
def _scan(ctx, srcs, *, axis, combine, reverse=False):
    op = ctx.op
    src_types = [x.type for x in op.operands]
    k = len(src_types)
    ty = src_types[0]
    if not tt.is_tensor(ty):
        raise LoweringError("tt.scan of a scalar")
    shape = tt.shape_of(ty)
    n = shape[axis]
    vals = [list(v) for v in srcs]
    if n == 1:
        return vals
    ll = ctx.linear(ty)
    try:  # 1. chunk bits, 2. lane bits, 3. the rest
        chunk, lane_bits, seg_bits = ll.scan_split(axis)
    except ValueError as e:
        raise LoweringError(f"tt.scan over this layout is not supported: {e}") from None
    L = 1 << len(lane_bits)
    p0 = lane_bits[0] if lane_bits else 0
    seg_len = chunk * L
    S = n // seg_len
    warp_along = any(kind == "warp" for kind, _, _ in seg_bits)

    def ordered(earlier, later):
        """combine(x, y) with x the earlier in scan order (the higher index for ``reverse``), as Triton."""
        return inline_combine(ctx, combine, earlier, later)

    # unique registers and their register-only index
    first_of = {}
    dup = {}
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix in first_of:
            dup[r] = first_of[ix]
        else:
            first_of[ix] = r
    regs = sorted(first_of.values())
    ridx = {r: ll.index(r) for r in regs}

    def scan_pos(a):  # position along the axis in scan order
        return n - 1 - a if reverse else a

    # chunks: registers with equal (row, axis // chunk); sorted by scan order inside
    chunks: dict = {}
    for r in regs:
        ix = ridx[r]
        key = ix[:axis] + (ix[axis] // chunk,) + ix[axis + 1:]
        chunks.setdefault(key, []).append(r)
    for key in chunks:
        chunks[key].sort(key=lambda r: scan_pos(ridx[r][axis]))
    cur = {r: [vals[q][r] for q in range(k)] for r in regs}
    # 1. sequential scan inside each chunk
    for key, rs in chunks.items():
        for a, b in zip(rs, rs[1:]):
            cur[b] = ordered(cur[a], cur[b])
    # 2. across lanes
    if L > 1:
        i32 = ctx.i32()
        lane = ctx.lane_id()
        pos = ctx.emit("arith.andi", [ctx.emit("arith.shrui", [lane, ctx.c32(p0)], i32), ctx.c32(L - 1)], i32)
        if reverse:
            pos = ctx.emit("arith.subi", [ctx.c32(L - 1), pos], i32)  # lane position in scan order

        def src_lane(d):
            # the lane d positions earlier in scan order (clamped into the warp; the result is unused there)
            delta = ctx.c32(d << p0)
            s = ctx.emit("arith.addi" if reverse else "arith.subi", [lane, delta], i32)
            return ctx.emit("arith.andi", [s, ctx.c32(ctx.threads_per_warp - 1)], i32)

        for key, rs in chunks.items():
            last = rs[-1]
            tot = list(cur[last])
            d = 1
            while d < L:
                sl = src_lane(d)
                other = [shuffle_idx(ctx, v, sl) for v in tot]
                ok = cmpi(ctx, "uge", pos, ctx.c32(d))
                comb = ordered(other, tot)
                tot = [select(ctx, ok, c, t) for c, t in zip(comb, tot)]
                d *= 2
            # exclusive prefix: the inclusive total of the previous lane
            sl = src_lane(1)
            excl = [shuffle_idx(ctx, v, sl) for v in tot]
            ok = cmpi(ctx, "uge", pos, ctx.c32(1))
            for r in rs:
                if r == last:
                    cur[r] = tot
                    continue
                comb = ordered(excl, cur[r])
                cur[r] = [select(ctx, ok, c, t) for c, t in zip(comb, cur[r])]
    # 3. across segments
    if S > 1:
        if not warp_along:
            _segments_in_warp(ctx, chunks, cur, ridx, axis, chunk, seg_len, L, p0, reverse, ordered, scan_pos)
        else:
            _segments_smem(ctx, op, src_types, chunks, cur, ridx, axis, shape, chunk, seg_len, S, L, reverse, ordered)
    out = [[None] * ll.num_regs for _ in range(k)]
    for r in range(ll.num_regs):
        src = dup.get(r, r)
        for q in range(k):
            out[q][r] = cur[src][q]
    return out


def _segments_in_warp(ctx, chunks, cur, ridx, axis, chunk, seg_len, L, p0, reverse, ordered, scan_pos):
    """Segments = register repetitions of one warp: totals from the last lane by shuffles."""
    i32 = ctx.i32()
    lane = ctx.lane_id()
    if L > 1:
        last_pos = 0 if reverse else L - 1
        base = ctx.emit("arith.andi", [lane, ctx.c32(~((L - 1) << p0) & (ctx.threads_per_warp - 1))], i32)
        src = ctx.emit("arith.ori", [base, ctx.c32(last_pos << p0)], i32) if last_pos else base
    rows: dict = {}
    for key, rs in chunks.items():
        row = key[:axis] + key[axis + 1:]
        rows.setdefault(row, []).append(rs)
    for row, segs in rows.items():
        segs.sort(key=lambda rs: scan_pos(ridx[rs[0]][axis]))
        prefix = None
        for rs in segs:
            last = rs[-1]
            tot = [shuffle_idx(ctx, v, src) for v in cur[last]] if L > 1 else list(cur[last])
            if prefix is not None:
                for r in rs:
                    cur[r] = ordered(prefix, cur[r])
                tot = ordered(prefix, tot)
            prefix = tot


def _segments_smem(ctx, op, src_types, chunks, cur, ridx, axis, shape, chunk, seg_len, S, L, reverse, ordered):
    """Segments span warps: write each segment's total to shared memory, combine the earlier ones."""
    i32 = ctx.i32()
    k = len(src_types)
    sh = seg_len.bit_length() - 1
    tshape = shape[:axis] + (S,) + shape[axis + 1:]
    nslots = tt.numel(tshape)
    plans = []
    off_bytes = 0
    for q in range(k):
        sty, to_s, from_s, nbytes = smem_elem(ctx, src_types[q])
        off_bytes = (off_bytes + 7) // 8 * 8
        plans.append((off_bytes // nbytes, sty, to_s, from_s))
        off_bytes += nslots * nbytes
    buf = ctx.scratch(op, off_bytes)
    idx_of = ctx.indices(src_types[0])

    def seg_of(ix):
        s = ctx.emit("arith.shrui", [ix[axis], ctx.c32(sh)], i32)
        return ctx.emit("arith.subi", [ctx.c32(S - 1), s], i32) if reverse else s

    def slot(ix, s):
        return emit_offset(ctx, linear(ix[:axis] + (s,) + ix[axis + 1:], tshape))

    # the last element of each segment (scan order) writes the segment's inclusive total
    for key, rs in chunks.items():
        last = rs[-1]
        ix = idx_of[last]
        in_seg = ctx.emit("arith.andi", [ix[axis], ctx.c32(seg_len - 1)], i32)
        want = 0 if reverse else seg_len - 1
        is_last = cmpi(ctx, "eq", in_seg, ctx.c32(want))
        s = seg_of(ix)

        def write_total(ix=ix, s=s, last=last):
            o = slot(ix, s)
            for q in range(k):
                base, sty, to_s, from_s = plans[q]
                oq = ctx.emit("arith.addi", [o, ctx.c32(base)], i32) if base else o
                ctx.emit_op("llvm.store", [to_s(cur[last][q]), ctx.smem_ptr(oq, sty, buf.base)])

        if_then(ctx, is_last, write_total)
    ctx.barrier()
    for key, rs in chunks.items():
        ix = idx_of[rs[0]]
        s = seg_of(ix)
        prefix = None
        P = None
        for kk in range(S - 1):
            o = slot(ix, ctx.c32(kk))
            t = []
            for q in range(k):
                base, sty, to_s, from_s = plans[q]
                oq = ctx.emit("arith.addi", [o, ctx.c32(base)], i32) if base else o
                t.append(from_s(ctx.emit("llvm.load", [ctx.smem_ptr(oq, sty, buf.base)], sty)))
            P = t if P is None else ordered(P, t)
            if prefix is None:
                prefix = P
            else:
                is_k = cmpi(ctx, "eq", s, ctx.c32(kk + 1))
                prefix = [select(ctx, is_k, a, b) for a, b in zip(P, prefix)]
        has = cmpi(ctx, "ugt", s, ctx.c32(0))
        for r in rs:
            comb = ordered(prefix, cur[r])
            cur[r] = [select(ctx, has, c, v) for c, v in zip(comb, cur[r])]
    ctx.release(buf)
