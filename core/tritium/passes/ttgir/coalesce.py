"""Coalesce: give every global memory access a blocked layout that makes it coalesced and vectorised
(Triton's ``Coalesce`` pass).

For each ``tt.load`` / ``tt.store`` / ``tt.atomic_rmw`` / ``tt.atomic_cas`` on a tensor of pointers:

* ``order``: the dimensions sorted by the pointer's contiguity (axis info), most contiguous first; ties keep
  the last dimension fastest (Triton's ``getOrderFromContiguity``);
* ``perThread`` (elements per thread along ``order[0]``)::

      per_op(op)  = min(128 / elem_bits, min(divisibility_bytes / elem_bytes, contiguity, shape)[order[0]])
      perThread   = max(per_op over the memory ops of the same shape and order connected to op by def-use
                        chains)                      -- they will share the layout, so take the widest
      perThread   = min(perThread, max(numel / (num_warps * 32), 1))   -- no more than a thread's share
      stores / atomics: perThread = min(perThread, per_op(op))         -- never more than one 128-bit access

* the layout: ``sizePerThread[order[0]] = perThread`` (1 elsewhere), lanes then warps handed out from the fastest
  dimension while the shape has room (Triton's ``BlockedEncodingAttr::get``).

The op is rewritten to that layout: its tensor operands go through ``ttg.convert_layout`` into it and its
results come back through ``ttg.convert_layout`` to what their users had.  ``remove_layout_conversions``
then removes what it can.

Helpers shared by the TTGIR passes of this package live here too (walking, retyping, conversions, DCE).
"""
from __future__ import annotations

import logging
from typing import Optional

from mlir import ir

from tritium.dialects import tt, ttg
from tritium.dialects.layouts import blocked_layout
from tritium.passes.analysis.axis_info import AxisInfoAnalysis, pointee_bits
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import (MEMORY_OPS, as_op, create_convert, defining_op, is_tensor, layout_of, module_int,
                                       retype_results, users, walk)


log = logging.getLogger(__name__)


def order_from_contiguity(contiguity) -> list:
    """Dims by decreasing contiguity; ties keep the later dimension first (row-major default)."""
    idx = list(range(len(contiguity)))[::-1]
    return sorted(idx, key=lambda d: -contiguity[d])  # sorted is stable


def memory_ptr(op):
    return as_op(op).operands[0]


def _elems_per_thread(op, order, info: AxisInfoAnalysis) -> int:
    ptr = memory_ptr(op)
    shape = tuple(ir.RankedTensorType(ptr.type).shape)
    ai = info.get(ptr)
    bits = pointee_bits(ptr.type)
    elem_bytes = max(bits // 8, 1)
    d = order[0]
    max_multiple = max(ai.divisibility[d] // elem_bytes, 1)
    max_contig = min(ai.contiguity[d], shape[d])
    alignment = min(max_multiple, max_contig)
    return max(1, min(alignment, max(128 // max(bits, 1), 1)))


def _connected_ops(op, func_ops) -> list:
    """Ops connected to ``op`` through def-use chains (both directions): Triton's multiRootGetSlice."""
    seen = {op}
    stack = [op]
    while stack:
        o = stack.pop()
        nbrs = []
        for v in o.operands:
            d = defining_op(v)
            if d is not None:
                nbrs.append(d)
        for r in o.results:
            nbrs.extend(users(r))
        for n in nbrs:
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return [o for o in func_ops if o in seen]


def coalesced_layout(op, info: AxisInfoAnalysis, num_warps: int, threads_per_warp: int = 32,
                     func_ops: Optional[list] = None):
    """The blocked layout Coalesce gives memory op ``op`` (see the module docstring)."""
    op = as_op(op)
    ptr = memory_ptr(op)
    ty = ir.RankedTensorType(ptr.type)
    shape = tuple(ty.shape)
    contiguity = info.get(ptr).contiguity
    order = order_from_contiguity(contiguity)
    per_thread = _elems_per_thread(op, order, info)
    if func_ops is not None and defining_op(ptr) is not None:
        for other in _connected_ops(op, func_ops):
            if other is op or other.name not in MEMORY_OPS or not _coalescable(other):
                continue
            optr = memory_ptr(other)
            if tuple(ir.RankedTensorType(optr.type).shape) != shape:
                continue
            if order_from_contiguity(info.get(optr).contiguity) != order:
                continue
            per_thread = max(per_thread, _elems_per_thread(other, order, info))
    own = _elems_per_thread(op, order, info)
    share = max(tt.numel(shape) // (num_warps * threads_per_warp), 1)
    per_thread = min(per_thread, share)
    if op.name != tt.LOAD:
        per_thread = min(per_thread, own)
    per_thread = min(per_thread, shape[order[0]])
    if log.isEnabledFor(logging.DEBUG):
        ai = info.get(ptr)
        d = order[0]
        log.debug("'%s' at %s: order %s, %d element(s) per thread (its own alignment %d: contiguity %d, "
                  "divisibility %d bytes along dim %d, %d-bit elements; a thread's share %d)", op.name,
                  tt.loc_str(op), order, per_thread, own, ai.contiguity[d], ai.divisibility[d], d,
                  pointee_bits(ptr.type), share)
    spt = [1] * len(shape)
    spt[order[0]] = per_thread
    return blocked_layout(shape, spt, order, num_warps, threads_per_warp)


def _coalescable(op) -> bool:
    ptr = memory_ptr(op)
    return is_tensor(ptr.type) and tt.is_ptr(tt.elem_of(ptr.type)) and not tt.is_tensor(
        tt.pointee(tt.elem_of(ptr.type)))


# ----------------------------------------------------------------------------------------------
# the pass
# ----------------------------------------------------------------------------------------------

def coalesce(root) -> int:
    """Rewrite every memory op under ``root`` to its coalesced layout; returns how many changed layout."""
    root = as_op(root)
    with root.context:
        num_warps = module_int(root, ttg.NUM_WARPS, 4)
        tpw = module_int(root, ttg.THREADS_PER_WARP, 32)
        info = AxisInfoAnalysis(root)
        all_ops = walk(root)
        plan = []
        for op in all_ops:
            if op.name in MEMORY_OPS and _coalescable(op):
                plan.append((op, coalesced_layout(op, info, num_warps, tpw, all_ops)))
        changed = 0
        for op, lay in plan:
            if _rewrite(op, lay):
                changed += 1
        return changed


def _rewrite(op, lay) -> bool:
    if all(layout_of(v) == lay for v in op.operands if is_tensor(v.type)) and \
            all(layout_of(r) == lay for r in op.results if is_tensor(r.type)):
        return False
    for i, v in enumerate(list(op.operands)):
        if is_tensor(v.type) and layout_of(v) != lay:
            op.operands[i] = create_convert(v, lay, before=op)
    retype_results(op, lay)
    return True


coalesce_pass = pass_entry("tritium-coalesce", coalesce)
