"""Tensor descriptors (``tt.make_tensor_descriptor`` / ``tt.descriptor_load`` / ``tt.descriptor_store``): base,
shape and strides per program, and the addresses and in-shape mask of the block a load or store at given
offsets touches.

TMA semantics: elements outside the descriptor's shape (any dimension, negative offsets included) are not
accessed -- a load reads the padding there (zero, or NaN for ``padding_option="nan"``), a store drops them.
Elements inside the shape go through the ordinary bounds-checked load / store (:mod:`.memory`), so a shape
larger than the buffer is an ``OutOfBoundsError`` naming the line.  As Triton's interpreter does, the TMA
alignment rules are checked for every active program: a 16-byte aligned base, leading strides that are
multiples of 16 bytes, and a last-dimension offset that is a multiple of 16 bytes; a violation is a
``KernelRuntimeError`` naming the line and the program.
"""
from __future__ import annotations

import numpy as np

from tritium.errors import KernelRuntimeError

from .block_ptr import BlockPtr, block_addrs
from .context import SHIFT, where_loc


class TensorDesc:
    """``base`` (L,) int64 address, ``shape`` [(L,) int32], ``strides`` [(L,) int64] in elements, ``block`` the block
    shape, ``esize`` the element size in bytes, ``pad`` what out-of-shape elements read (None: zero)."""

    __slots__ = ("base", "shape", "strides", "block", "esize", "pad")

    def __init__(self, base, shape, strides, block, esize, pad):
        self.base, self.shape, self.strides = base, shape, strides
        self.block, self.esize, self.pad = block, esize, pad


def _misaligned(ctx, values, active, loc, what):
    """Raise KernelRuntimeError for the first active program whose ``values`` (shape (L,)) are not multiples of
    16; ``what(value)`` says what is wrong."""
    bad = (values % 16) != 0
    if active is not None:
        bad = bad & active
    if not bad.any():
        return
    p = int(np.argmax(bad))
    raise KernelRuntimeError(what(int(values[p if values.shape[0] > 1 else 0])), where_loc(loc), ctx.pid_tuple(p))


def _buffer_offset(address: int) -> int:
    return address & ((1 << SHIFT) - 1)


def make_tensor_desc(ctx, base, shape, strides, block, esize, pad, active, loc):
    """A :class:`TensorDesc` (``pad``: the padding value, None for zero), its alignment checked (see the module
    doc)."""
    shape = [x.astype(np.int32) for x in shape]
    strides = [x.astype(np.int64) for x in strides]
    _misaligned(ctx, base.astype(np.int64), active, loc,
                lambda v: f"tensor descriptor base must be 16-byte aligned, got byte offset {_buffer_offset(v)} "
                          "into its buffer")
    for d, st in enumerate(strides[:-1]):
        _misaligned(ctx, st * esize, active, loc,
                    lambda v, d=d: f"tensor descriptor stride of dimension {d} must be a multiple of 16 bytes, "
                                   f"got {v // esize} elements ({v} bytes)")
    return TensorDesc(base, shape, strides, tuple(block), esize, pad)


def desc_addrs(ctx, desc, offsets, active, loc):
    """``(addresses (L, *block), in-shape mask, padding value or None)``: what ``runtime.load`` / ``store`` take
    for a block pointer, for the block of ``desc`` at ``offsets``."""
    offsets = [o.astype(np.int32) for o in offsets]
    _misaligned(ctx, offsets[-1].astype(np.int64) * desc.esize, active, loc,
                lambda v: "a tensor descriptor's block offset along the last dimension must be a multiple of 16 "
                          f"bytes, got {v // desc.esize} elements ({v} bytes)")
    bp = BlockPtr(desc.base, desc.shape, desc.strides, offsets, None, desc.block, desc.esize)
    addr, mask = block_addrs(bp, range(len(desc.block)))
    return addr, mask, desc.pad

