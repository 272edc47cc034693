"""Tensor shapes and masks in the program-axis convention: a value's leading axis has size P or 1, trailing
axes are the tensor's.  Masks (``active``, lane masks) broadcast over the trailing axes; ``select`` merges the
results of programs that took different paths."""
from __future__ import annotations

import numpy as np

from .block_ptr import BlockPtr
from .tensor_desc import TensorDesc


def bmask(m, ndim):
    """A mask of shape (L,) (or any leading shape) with axes appended to broadcast against rank ``ndim``."""
    if m.ndim >= ndim:
        return m
    return m.reshape(m.shape + (1,) * (ndim - m.ndim))


def select(c, a, b):
    """np.where with a condition of leading shape broadcast over trailing tensor axes; handles block pointers and
    tensor descriptors (per-program choice of each field)."""
    if isinstance(a, BlockPtr):
        return BlockPtr(select(c, a.base, b.base), [select(c, x, y) for x, y in zip(a.shape, b.shape)],
                        [select(c, x, y) for x, y in zip(a.strides, b.strides)],
                        [select(c, x, y) for x, y in zip(a.offsets, b.offsets)], a.order, a.block, a.esize)
    if isinstance(a, TensorDesc):
        return TensorDesc(select(c, a.base, b.base), [select(c, x, y) for x, y in zip(a.shape, b.shape)],
                          [select(c, x, y) for x, y in zip(a.strides, b.strides)], a.block, a.esize, a.pad)
    nd = max(a.ndim, b.ndim)
    return np.where(bmask(c, nd), a, b)


def lane_mask(mask, active, ndim):
    """Combine a lane mask (None or bool array) with the program mask; None means everything."""
    if active is None:
        return mask
    am = bmask(active, ndim)
    return am if mask is None else (mask & am)


def splat(x, shape):
    return np.broadcast_to(x.reshape(x.shape + (1,) * len(shape)), x.shape + tuple(shape))


def bcast(x, shape):
    return np.broadcast_to(x, x.shape[:1] + tuple(shape))


def same_lead(xs):
    n = max(x.shape[0] for x in xs)
    return [x if x.shape[0] == n else np.broadcast_to(x, (n,) + x.shape[1:]) for x in xs]


def cat(a, b):
    a, b = same_lead([a, b])
    return np.concatenate([a, b], axis=1)


def join(a, b):
    a, b = same_lead([a, b])
    return np.stack([a, b], axis=-1)


def gather(src, idx, axis):
    src, idx = same_lead([src, idx])
    idx = idx.astype(np.int64)
    n = src.shape[axis + 1]
    idx = np.where(idx < 0, idx + n, idx)
    return np.take_along_axis(src, np.clip(idx, 0, n - 1), axis + 1)


def addptr(p, o, size):
    r = o.astype(np.int64)
    if size != 1:
        r *= size
    rs, ps = r.shape, p.shape
    if rs == ps or (len(ps) == len(rs) and (p.size == 1 or all(b == 1 or b == a for a, b in zip(rs, ps)))):
        r += p            # p broadcasts to r's shape: add in place
        return r
    return r + p


def reshape(x, shape):
    return x.reshape(x.shape[:1] + tuple(shape))
