"""``ttg.local_load`` of ``mma.sync`` operands with ``ldmatrix``.

A ``#ttg.dot_op<i, #nvidia_mma<2>, kWidth>`` tensor read from a ``#ttg.nvmma_shared`` buffer: every fragment is
made of 8x8 matrices of 16 bytes per row (:class:`tritium.dialects.layouts.DotOperandLayout`: A = four matrices
(rows 0-7 / 8-15 x the two K halves), B = two (the K halves)), so one ``ldmatrix.sync.aligned.m8n8.x4`` loads an A
fragment or two consecutive B fragments (``.x2`` for a last single one).  Lane ``l`` gives the address of row
``l % 8`` of matrix ``l // 8``.  When the buffer's contiguous dim is K the rows are along M / N; when it is M / N
(a transposed operand, 16-bit types only) ``.trans`` reads rows along K.  Addresses come from
:class:`tritium.lowering.rules.shared.Addresser` (the lane's offset once, a constant XOR / add per fragment).
Everything else is the generic ``local_load``."""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.lowering import Rules
from tritium.lowering.rules.shared import Addresser, _layout_fast_slow, byte_ptr, load_tensor, memdesc_layout
from tritium.lowering.utils import inline_asm, smem_elem

RULES = Rules()


def _warp_vals(ctx, ll):
    """Per dim, the i32 offset of the running warp (its warp bases summed)."""
    out = []
    for d in range(ll.rank):
        terms = ctx._bits_value(ctx.warp_id(), ll.warp, d)
        v = None
        for t in terms:
            v = t if v is None else ctx.emit("arith.ori", [v, t], ctx.i32())
        out.append(v if v is not None else ctx.c32(0))
    return out


def ldmatrix_plan(dlay, slay, shape, eb):
    """``(trans, matrices)`` for reading ``dlay`` (a dot_op of nvidia_mma v2) from ``slay``; None when ldmatrix
    cannot (an 8- or 32-bit operand whose contiguous dim is not K).  ``matrices``: per matrix of an A fragment
    (4) or of a B fragment (2), the ``(other, k)`` offset of its first element."""
    if not (isinstance(dlay, layouts.DotOperandLayout) and isinstance(dlay.parent, layouts.NvidiaMmaLayout)
            and dlay.parent.version == 2 and isinstance(slay, layouts.NVMMASharedLayout)):
        return None
    r = len(shape)
    k_dim = r - 1 if dlay.op_idx == 0 else r - 2
    fast, _ = _layout_fast_slow(slay, r)
    trans = fast != k_dim
    if trans and eb != 2:
        return None
    kblk = 4 * dlay.k_width  # K elements of one matrix (16 bytes)
    if dlay.op_idx == 0:
        mats = [(0, 0), (8, 0), (0, kblk), (8, kblk)]
    else:
        mats = [(0, 0), (0, kblk)]
    return trans, mats


def _lane_index(plan_trans, mats, j, i):
    """The (other, k) element lane ``8 j + i`` gives the address of."""
    o, k = mats[j % len(mats)]
    return (o, k + i) if plan_trans else (o + i, k)


@RULES.register("ttg.local_load")
def _local_load(ctx, src):
    dst_ty, mem_ty = ctx.op.results[0].type, ctx.op.operands[0].type
    shape, _, slay = memdesc_layout(mem_ty)
    dlay = ctx.layout(dst_ty)
    sty, _, from_s, eb = smem_elem(ctx, dst_ty)
    plan = ldmatrix_plan(dlay, slay, shape, eb)
    if plan is None:
        return [load_tensor(ctx, src[0], dst_ty, mem_ty)]
    trans, mats = plan
    r = len(shape)
    k_dim = r - 1 if dlay.op_idx == 0 else r - 2
    other = r - 2 if dlay.op_idx == 0 else r - 1
    ll = ctx.linear(dst_ty)
    frag = dlay.fragment_regs()
    # x4: an A fragment, or two B fragments (the second one k-step later: its matrices follow)
    kstep = 8 * dlay.k_width
    mats4 = mats if len(mats) == 4 else mats + [(o, k + kstep) for o, k in mats]
    tpw = ctx.threads_per_warp

    def elem(o, k):
        idx = [0] * r
        idx[other], idx[k_dim] = o, k
        return tuple(idx)

    def thread_py(t):
        w, l = ll.index(0, 0, t // tpw), t % tpw
        o, k = _lane_index(trans, mats4, l // 8, l % 8)
        return tuple(a + b for a, b in zip(w, elem(o, k)))

    # the running lane's (other, k): matrix j = lane >> 3, row i = lane & 7
    i32 = ctx.i32()
    lane = ctx.lane_id()
    jv = ctx.emit("arith.shrui", [lane, ctx.c32(3)], i32)
    iv = ctx.emit("arith.andi", [lane, ctx.c32(7)], i32)

    def pick(vals):  # vals[j] for the running lane's j (4 constants)
        if len(set(vals)) == 1:
            return ctx.c32(vals[0])
        # vals is affine in the bits of j: vals[j] = vals[0] + b1 * (j & 1) + b2 * (j >> 1)
        b1, b2 = vals[1] - vals[0], vals[2] - vals[0]
        assert vals[3] == vals[0] + b1 + b2
        v = ctx.c32(vals[0])
        if b1:
            v = ctx.emit("arith.addi", [v, ctx.emit("arith.muli", [ctx.emit("arith.andi", [jv, ctx.c32(1)], i32),
                                                                   ctx.c32(b1)], i32)], i32)
        if b2:
            v = ctx.emit("arith.addi", [v, ctx.emit("arith.muli", [ctx.emit("arith.shrui", [jv, ctx.c32(1)], i32),
                                                                   ctx.c32(b2)], i32)], i32)
        return v

    o_v = pick([m[0] for m in mats4])
    k_v = pick([m[1] for m in mats4])
    if trans:
        k_v = ctx.emit("arith.addi", [k_v, iv], i32)
    else:
        o_v = ctx.emit("arith.addi", [o_v, iv], i32)
    warp = _warp_vals(ctx, ll)
    vals = list(warp)
    vals[other] = ctx.emit("arith.addi", [warp[other], o_v], i32)
    vals[k_dim] = ctx.emit("arith.addi", [warp[k_dim], k_v], i32)
    addr = Addresser(ctx, slay, shape, eb, thread_py, ctx.num_warps * tpw, vals, "add")

    rmap = {}
    for reg in range(ll.num_regs):
        rmap.setdefault(ll.index(reg), reg)
    out = [None] * ll.num_regs
    per_word = 4 // eb
    word_ty = sty if eb == 4 else ir.VectorType.get([per_word], sty)
    K = shape[k_dim]
    for r0 in range(0, ll.num_regs, frag):
        if out[r0] is not None:
            continue
        start = ll.index(r0)
        if rmap[start] != r0:  # a replicated fragment
            src0 = rmap[start]
            out[r0:r0 + frag] = out[src0:src0 + frag]
            continue
        pair = None
        if dlay.op_idx == 1 and start[k_dim] + kstep < K:
            nxt = list(start)
            nxt[k_dim] += kstep
            pair = rmap.get(tuple(nxt))
            if pair is not None and (pair % frag or out[pair] is not None):
                pair = None
        n = 4 if (dlay.op_idx == 0 or pair is not None) else 2
        ptr = byte_ptr(ctx, src[0], addr.offset(start))
        regs = ",".join(f"${q}" for q in range(n))
        text = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 {{{regs}}}, [${n}];"
        words = inline_asm(ctx, text, ",".join(["=r"] * n + ["l"]), [ptr], [i32] * n)
        elems = []
        for w in words:
            if eb == 4:
                elems.append(from_s(ctx.emit("llvm.bitcast", [w], sty)))
            else:
                vec = ctx.emit("llvm.bitcast", [w], word_ty)
                elems += [from_s(ctx.emit("llvm.extractelement", [vec, ctx.c32(q)], sty)) for q in range(per_word)]
        out[r0:r0 + frag] = elems[:frag]
        if n == 4 and dlay.op_idx == 1:
            out[pair:pair + frag] = elems[frag:]
    return [out]
