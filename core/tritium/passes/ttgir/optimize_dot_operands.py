"""Dot operands through shared memory (Triton's operand path: ``convert_layout`` to a ``#ttg.dot_op`` of an MMA
layout becomes a ``ttg.local_alloc`` into swizzled shared memory and a ``ttg.local_load``).

``%d = ttg.convert_layout %x : #blocked -> #ttg.dot_op<i, #nvidia_mma, k>`` becomes::

    %s = ttg.local_alloc %x : (tensor<..., #blocked>) -> !ttg.memdesc<shape, T, #ttg.nvmma_shared<sw, tr, bits>>
    %d = ttg.local_load %s : (!ttg.memdesc<...>) -> tensor<..., #ttg.dot_op<...>>

so the lowering stores the tile with the widest vector stores its blocked layout allows and reads the MMA
fragments with ``ldmatrix`` (the software pipeliner later turns the ``local_alloc`` of a loaded tile into
asynchronous copies).  A source defined outside the conversion's block (before its loop: attention's ``q``) is
stored and read back there, once (for every conversion of it: attention's two causal loops share it); a conversion every thread can do in its registers (an MMA result in f16 feeding
the next dot as A, attention's ``p``) stays a conversion.  The buffer's layout (:func:`operand_shared_layout`): the contiguous dim is the one the
source layout keeps contiguous per thread (``order[0]``; the second-to-last dim gives ``transposed = 1``), the
swizzle the widest of 128 / 64 / 32 bytes that a row of that dim fills (0 below 32 bytes); an AMD ``v_mfma``
operand is stored K-major when its source writes one element per thread anyway (:func:`mfma_shared_layout`).

A ``tt.dot`` whose result accelerate_matmul put in ``#ttg.nvidia_mma<3>`` (wgmma) becomes a
``ttg.warp_group_dot`` reading both operands from shared memory (A stays in registers when it is a 16-bit
``nvidia_mma<3>`` result converted in registers, attention's ``p``)::

    %sa = ttg.local_alloc %a : (tensor<M x K, #any>) -> !ttg.memdesc<M x K, #ttg.nvmma_shared<..>>
    %sb = ttg.local_alloc %b : ...
    %d = ttg.warp_group_dot %sa, %sb, %c : (..) -> tensor<M x N, #ttg.nvidia_mma<3, ..>>

Each alloc sits right after its operand's definition (a loaded tile's alloc follows its load, where the pipeliner
looks for it; two dots of one value share the alloc; an operand defined before the dot's loop, attention's ``q``,
is stored once before the loop: its buffer is live across the loop, which the attention configs of the tutorial
afford, 192 KiB at most with D = 128 and 4 stages), and stores the operand
in the layout it is computed in (a conversion feeding the dot is skipped: its source is stored).  The buffer (:func:`wgmma_shared_layout`): 16-bit operands keep their contiguous dim (wgmma transposes
16-bit tiles), other types are stored K-major (A ``transposed`` 0, B ``transposed`` 1); the swizzle is the widest
the contiguous dim's bytes fill, so wgmma's descriptors can read it.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.analysis.allocation import elem_bytes, register_only

from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import CONVERT, as_op, create_convert, layout_of, walk


def operand_shared_layout(shape, src_layout, eb: int) -> layouts.NVMMASharedLayout:
    rank = len(shape)
    order = getattr(src_layout, "order", None) or tuple(range(rank - 1, -1, -1))
    fast = order[0] if order[0] in (rank - 1, rank - 2) else rank - 1
    row = shape[fast] * eb
    swizzle = next((s for s in (128, 64, 32) if row >= s), 0)
    return layouts.NVMMASharedLayout(swizzle, int(fast == rank - 2), eb * 8)


def mfma_shared_layout(shape, src_layout, eb: int, op_idx: int) -> layouts.NVMMASharedLayout:
    """The buffer of a ``v_mfma`` operand (0: A ``[M, K]``, 1: B ``[K, N]``): K-major (each lane reads ``kWidth``
    consecutive K elements: one ``ds_read_b64`` / ``b128``) when the source writes one element per thread along its
    contiguous dim anyway, else the source's contiguous dim (:func:`operand_shared_layout`, wide writes)."""
    rank = len(shape)
    order = getattr(src_layout, "order", None)
    spt = getattr(src_layout, "size_per_thread", None)
    if order is None or spt is None or spt[order[0]] == 1:
        k = rank - 1 if op_idx == 0 else rank - 2
        swizzle = next((s for s in (128, 64, 32) if shape[k] * eb >= s), 0)
        return layouts.NVMMASharedLayout(swizzle, int(k == rank - 2), eb * 8)
    return operand_shared_layout(shape, src_layout, eb)


def wgmma_shared_layout(shape, src_layout, eb: int, op_idx: int) -> layouts.NVMMASharedLayout:
    """The buffer a wgmma operand (0: A ``[M, K]``, 1: B ``[K, N]``) is stored in: 16-bit types keep the source's
    contiguous dim, others are K-major; the widest swizzle (128 / 64 / 32 bytes, else none) that the contiguous dim
    fills."""
    if eb == 2:
        lay = operand_shared_layout(shape, src_layout, eb)
        fast = lay.fast_slow(len(shape))[0]
    else:
        fast = len(shape) - 1 if op_idx == 0 else len(shape) - 2
    row = shape[fast] * eb
    swizzle = next((s for s in (128, 64, 32) if row >= s), 0)
    return layouts.NVMMASharedLayout(swizzle, int(fast == len(shape) - 2), eb * 8)


def _is_v3(layout) -> bool:
    return isinstance(layout, layouts.NvidiaMmaLayout) and layout.version == 3


def _defined_in(value, block) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner == block
    return as_op(owner).operation.block == block


def _alloc_for(value, mem_ty, dot):
    """``ttg.local_alloc`` of ``value`` for ``dot``: right after the value's definition (at the block's start for an
    argument): a loaded tile's alloc follows its load, where the pipeliner looks for it; an operand defined before
    the dot's loop (attention's ``q``) is stored once, before it."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        with dot.location, ir.InsertionPoint.at_block_begin(owner):
            return ir.Operation.create(ttg.LOCAL_ALLOC, results=[mem_ty], operands=[value])
    with dot.location, ir.InsertionPoint(as_op(owner)):
        alloc = ir.Operation.create(ttg.LOCAL_ALLOC, results=[mem_ty], operands=[value])
    alloc.move_after(as_op(owner))
    return alloc


def _a_in_registers(a, result_layout, dot):
    """When ``a`` (a v3 dot's A) is a conversion of a 16-bit ``nvidia_mma`` v3 result that every thread can do in
    its registers into ``#ttg.dot_op<0, result_layout, 2>``: that conversion (made before ``dot``), else None."""
    owner = a.owner
    if isinstance(owner, ir.Block) or as_op(owner).name != CONVERT:
        return None
    src = as_op(owner).operands[0]
    ty = ir.RankedTensorType(a.type)
    if elem_bytes(ty) != 2 or not _is_v3(layout_of(src)):
        return None
    want = layouts.DotOperandLayout(0, result_layout, 2)
    if not register_only(layout_of(src), want, tuple(ty.shape)):
        return None
    return create_convert(src, want, before=dot)


def dots_to_warp_group_dots(root) -> int:
    """Rewrite every ``tt.dot`` with an ``nvidia_mma`` version 3 result under ``root`` into a
    ``ttg.warp_group_dot`` on shared-memory operands; returns how many."""
    n = 0
    shared: dict = {}  # (value, memdesc type) -> its local_alloc
    for op in walk(as_op(root)):
        if op.name != tt.DOT or not _is_v3(layout_of(op.results[0])):
            continue
        mems, skipped = [], []
        for i in (0, 1):
            src = op.operands[i]
            d = src.owner
            in_regs = _a_in_registers(src, layout_of(op.results[0]), op) if i == 0 else None
            if in_regs is not None:  # an MMA result feeding the next dot (attention's p): wgmma reads A from
                mems.append(in_regs)  # the registers it is already in
                if not isinstance(d, ir.Block) and as_op(d).name == CONVERT:
                    skipped.append(as_op(d))
                continue
            if not isinstance(d, ir.Block) and as_op(d).name == CONVERT and layout_of(as_op(d).operands[0]) is not None:
                skipped.append(as_op(d))
                src = as_op(d).operands[0]
            ty = ir.RankedTensorType(src.type)
            shape = tuple(ty.shape)
            lay = wgmma_shared_layout(shape, layout_of(src), elem_bytes(ty), i)
            mem_ty = ttg.memdesc_type(shape, ty.element_type, lay, ty.context)
            key = (src, str(mem_ty))  # one buffer per value and layout: its alloc follows the value's definition
            if key not in shared:
                shared[key] = _alloc_for(src, mem_ty, op)
            mems.append(shared[key].results[0])
        attrs = {k: op.attributes[k] for k in ("inputPrecision", "maxNumImpreciseAcc") if k in op.attributes}
        with op.location, ir.InsertionPoint(op):
            wgd = ir.Operation.create(ttg.WARP_GROUP_DOT, results=[op.results[0].type],
                                      operands=[mems[0], mems[1], op.operands[2]], attributes=attrs)
        op.results[0].replace_all_uses_with(wgd.results[0])
        op.erase()
        for cvt in skipped:  # conversions only the dot used (the pipeliner wants a load used by its alloc only)
            if not list(cvt.results[0].uses):
                cvt.erase()
        n += 1
    return n


def _is_mma_operand(layout) -> bool:
    return isinstance(layout, layouts.DotOperandLayout) and isinstance(layout.parent, (layouts.NvidiaMmaLayout,
                                                                                        *layouts.AMD_MMA))


def dot_operands_through_shared(root) -> int:
    """Rewrite every conversion to an MMA dot operand under ``root``; returns how many."""
    n = 0
    hoisted: dict = {}  # (value, operand type) -> the local_load made once before the loops
    for op in walk(as_op(root)):
        if op.name != CONVERT or not _is_mma_operand(layout_of(op.results[0])):
            continue
        src = op.operands[0]
        key = (src, str(op.results[0].type))
        if key in hoisted:  # attention's q in both causal loops: one buffer, one read
            op.results[0].replace_all_uses_with(hoisted[key].results[0])
            op.erase()
            n += 1
            continue
        if isinstance(layout_of(src), layouts.DotOperandLayout):
            continue
        ty = ir.RankedTensorType(src.type)
        shape = tuple(ty.shape)
        if register_only(layout_of(src), layout_of(op.results[0]), shape):
            continue  # an MMA result feeding the next dot (attention's p): the registers are already right
        want = layout_of(op.results[0])
        if isinstance(want.parent, layouts.AMD_MMA):
            lay = mfma_shared_layout(shape, layout_of(src), elem_bytes(ty), want.op_idx)
        else:
            lay = operand_shared_layout(shape, layout_of(src), elem_bytes(ty))
        mem_ty = ttg.memdesc_type(shape, ty.element_type, lay, ty.context)
        if _defined_in(src, op.operation.block):
            with op.location, ir.InsertionPoint(op):
                alloc = ir.Operation.create(ttg.LOCAL_ALLOC, results=[mem_ty], operands=[src])
        else:  # defined before the loop (attention's q): stored and read into registers once, there
            alloc = _alloc_for(src, mem_ty, op)
        with op.location, ir.InsertionPoint(alloc):
            load = ir.Operation.create(ttg.LOCAL_LOAD, results=[op.results[0].type], operands=[alloc.results[0]])
        load.move_after(alloc)
        if not _defined_in(src, op.operation.block):
            hoisted[key] = load
        op.results[0].replace_all_uses_with(load.results[0])
        op.erase()
        n += 1
    return n


optimize_dot_operands_pass = pass_entry("tritium-optimize-dot-operands", dot_operands_through_shared, dots_to_warp_group_dots)
