"""Block pointers (``tt.make_tensor_ptr`` / ``tt.advance``): base, shape, strides and offsets per program, and
the addresses and boundary mask a load or store through one touches."""
from __future__ import annotations

import numpy as np


class BlockPtr:
    __slots__ = ("base", "shape", "strides", "offsets", "order", "block", "esize")

    def __init__(self, base, shape, strides, offsets, order, block, esize):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.order, self.block, self.esize = order, block, esize


def make_block_ptr(base, shape, strides, offsets, order, block, esize):
    return BlockPtr(base, [x.astype(np.int64) for x in shape], [x.astype(np.int64) for x in strides],
                    [x.astype(np.int32) for x in offsets], order, block, esize)


def advance(bp, deltas):
    return BlockPtr(bp.base, bp.shape, bp.strides, [o + d.astype(np.int32) for o, d in zip(bp.offsets, deltas)],
                    bp.order, bp.block, bp.esize)


def block_addrs(bp, check):
    """Addresses (L, *block) and the boundary mask (None when no dim is checked)."""
    r = len(bp.block)
    addr = bp.base.astype(np.int64).reshape((-1,) + (1,) * r)
    mask = None
    for d, n in enumerate(bp.block):
        shp = [1] * (r + 1)
        shp[d + 1] = n
        idx = bp.offsets[d].astype(np.int64).reshape((-1,) + (1,) * r) + np.arange(n, dtype=np.int64).reshape(shp)
        addr = addr + idx * bp.strides[d].reshape((-1,) + (1,) * r) * bp.esize
        if d in check:
            m = (idx >= 0) & (idx < bp.shape[d].reshape((-1,) + (1,) * r))
            mask = m if mask is None else (mask & m)
    L = addr.shape[0]
    addr = np.broadcast_to(addr, (L,) + tuple(bp.block))
    if mask is not None:
        mask = np.broadcast_to(mask, (mask.shape[0],) + tuple(bp.block))
    return addr, mask
