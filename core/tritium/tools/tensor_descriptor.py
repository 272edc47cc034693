"""Host-side tensor descriptors (Triton 3.6's ``triton.tools.tensor_descriptor.TensorDescriptor``): a tensor
passed to a kernel together with its shape, strides and the block shape the kernel loads and stores, used in
the kernel as ``desc.load(offsets)`` / ``desc.store(offsets, value)`` like a ``tl.make_tensor_descriptor`` one.

The JIT types such an argument ``tensordesc<fp16[64, 64]>`` (``tensordesc<fp16[64, 64],nan>`` with NaN
padding: the padding is compiled in) and passes it to the kernel as its base pointer, shape (int32 each) and
strides (int64 each); see :mod:`tritium.passes.ttir.expand_tensor_descriptor_args`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

MAX_TENSOR_NUMEL = 1048576  # tl.TRITON_MAX_TENSOR_NUMEL


def _data_ptr(base: Any) -> int:
    if hasattr(base, "data_ptr"):
        return int(base.data_ptr())
    ai = getattr(base, "__array_interface__", None) or getattr(base, "__cuda_array_interface__", None)
    if ai is None:
        raise TypeError(f"a tensor descriptor's base must be a tensor or array, got {type(base).__name__}")
    return int(ai["data"][0])


def _itemsize(base: Any) -> int:
    dt = base.dtype
    size = getattr(dt, "itemsize", None)
    if size is None:  # older torch
        import torch

        size = torch.empty((), dtype=dt).element_size()
    return int(size)


def _strides(tensor: Any) -> List[int]:
    """Element strides: torch's ``stride()``, numpy's byte ``strides`` divided by the item size."""
    stride = getattr(tensor, "stride", None)
    if callable(stride):
        return [int(s) for s in stride()]
    size = _itemsize(tensor)
    if any(s % size for s in tensor.strides):
        raise ValueError(f"strides {tensor.strides} (bytes) are not whole elements of {size} bytes")
    return [int(s) // size for s in tensor.strides]


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"rank mismatch: shape {list(self.shape)}, strides {list(self.strides)}, block_shape "
                             f"{list(self.block_shape)}")
        if not 1 <= rank <= 5:
            raise ValueError(f"a tensor descriptor has 1 to 5 dimensions, got {rank}")
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        if _data_ptr(self.base) % 16:
            raise ValueError("base must be 16-byte aligned")
        numel = 1
        for i, b in enumerate(self.block_shape):
            if b <= 0 or b & (b - 1):
                raise ValueError(f"block_shape element {i} must be a power of 2, got {b}")
            numel *= b
        if numel > MAX_TENSOR_NUMEL:
            raise ValueError(f"block numel ({numel}) exceeds the maximum tensor numel ({MAX_TENSOR_NUMEL})")
        if self.strides[-1] != 1:
            raise ValueError(f"the last dimension must be contiguous (stride 1), got stride {self.strides[-1]}")
        size = _itemsize(self.base)
        for s in self.strides[:-1]:
            if (s * size) % 16:
                raise ValueError(f"strides must be 16-byte aligned: {s} elements of {size} bytes")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of all of ``tensor`` (its shape and strides), loaded and stored by ``block_shape``."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides(tensor), list(block_shape), padding)

    def kernel_args(self) -> tuple:
        """What the kernel receives for this argument: base, shape (int32 each), strides (int64 each)."""
        return (self.base, *self.shape, *self.strides)


__all__ = ["TensorDescriptor"]
