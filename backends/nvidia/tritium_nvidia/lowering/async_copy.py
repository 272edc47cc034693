"""Asynchronous copies global -> shared (sm_80+): ``ttg.async_copy_global_to_local`` as ``cp.async``,
``ttg.async_commit_group`` as ``cp.async.commit_group``, ``ttg.async_wait {num}`` as ``cp.async.wait_group num``
(LLVM's NVVM intrinsics; then, on sm_90, ``fence.proxy.async.shared::cta``, so tensor-core reads through the async
proxy see the data).

Each thread copies the runs of its registers that are contiguous in global memory (the axis-info vector width of
the pointers and the mask) and in the buffer (:class:`tritium.lowering.rules.shared_memory.Addresser`): 16 bytes with
``cp.async.cg`` (L2 only), 4 or 8 bytes with ``cp.async.ca``; a masked-off run copies 0 source bytes, which fills
its destination with zeros.  The destination is addressed by the buffer's shared layout like a ``local_store``."""
from __future__ import annotations

from tritium.dialects import tt
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.shared_memory import chunks, byte_ptr, layout_addresser, memdesc_layout
from tritium.lowering.utils import inline_asm, per_register, select, smem_elem

from .memory import vector_width
from .target_info import CUDATargetInfo

RULES = Rules()


@RULES.register("ttg.async_copy_global_to_local")
def _async_copy(ctx, src, dst, mask, other):
    ptr_v, mem_ty = ctx.op.operands[0], ctx.op.operands[1].type
    mask_v = ctx.op.operands[2] if mask is not None else None
    shape, elem, slay = memdesc_layout(mem_ty)
    _, _, _, eb = smem_elem(ctx, elem)
    ll = ctx.linear(ptr_v.type)
    n = ll.num_regs
    vec = vector_width(ctx, ptr_v, mask_v, eb * 8)
    fast, _ = slay.fast_slow(len(shape))
    addr = layout_addresser(ctx, ll, slay, shape, eb, ptr_v.type)
    ptrs = per_register(src, n)
    masks = per_register(mask, n) if mask is not None else None
    seen = set()
    for r, k in chunks(ll, addr, fast, eb):
        for r0 in range(r, r + k, min(k, vec)):
            run = min(k, vec)
            if ll.index(r0) in seen:
                continue
            seen.add(ll.index(r0))
            nbytes = run * eb
            if nbytes not in (4, 8, 16):
                raise LoweringError(f"cp.async of {nbytes} bytes at {tt.loc_str(ctx.op)}: a thread's contiguous "
                                    "share must be 4, 8 or 16 bytes (the pipeliner checks this)")
            to = byte_ptr(ctx, dst[0], addr.offset(ll.index(r0)))
            size = ctx.c32(nbytes) if masks is None else select(ctx, masks[r0], ctx.c32(nbytes), ctx.c32(0))
            kind = "cg" if nbytes == 16 else "ca"
            inline_asm(ctx, f"cp.async.{kind}.shared.global [$0], [$1], {nbytes}, $2;", "l,l,r",
                       [to, ptrs[r0], size], [], side_effects=True)
    return []


@RULES.register("ttg.async_commit_group")
def _commit(ctx):
    ctx.emit_op("nvvm.cp.async.commit.group", [])  # LLVM's intrinsic (no memory attributes: a barrier to moves)
    return []


@RULES.register("ttg.async_wait")
def _wait(ctx, *, num):
    from mlir import ir

    ctx.emit_op("nvvm.cp.async.wait.group", [], attrs={"n": ir.IntegerAttr.get(ctx.i32(), int(num))})
    target = ctx.target
    if isinstance(target, CUDATargetInfo) and target.arch >= 90:
        inline_asm(ctx, "fence.proxy.async.shared::cta;", "", [], [], side_effects=True)
    return []
