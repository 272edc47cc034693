"""``tritium.reinterpret(tensor, dtype)``: a tensor's memory seen by a kernel as another element type (Triton's
``triton.reinterpret`` / ``TensorWrapper``), for types torch or NumPy lack or that a kernel should see differently:
unsigned integers, fp8 formats, raw bits.

A :class:`TensorWrapper` holds the tensor (``base``) and the element type the kernel sees (``dtype``: a ``tl``
dtype such as ``tl.uint8`` or ``tl.float8e4nv``, or a torch / NumPy dtype).  The specialisation reads ``dtype`` as
for any tensor (:func:`tritium.runtime.specialization.dtype_type_string`: ``*u8``, ``*fp8e4nv``, ...) and
``data_ptr()`` / ``get_device()`` from the base; launchers take the base's memory (the interpreter views its bytes
in the kernel's element type).  Nothing is copied: stores through the kernel reach ``base``.
"""
from __future__ import annotations

from typing import Any


def _is_numpy(a: Any) -> bool:
    return type(a).__module__ == "numpy" and hasattr(a, "__array_interface__")


class TensorWrapper:
    """A tensor (``base``) that kernels see with element type ``dtype`` (Triton's ``TensorWrapper``).  Shape,
    strides, device and element size are the base's; ``data_ptr()`` is its address."""

    def __init__(self, base: Any, dtype: Any):
        self.dtype = dtype
        self.base = base
        self.data = getattr(base, "data", None)
        self.device = getattr(base, "device", "cpu")
        self.shape = base.shape

    # what launchers and the specialisation read -------------------------------------------------------
    def data_ptr(self) -> int:
        if _is_numpy(self.base):
            return self.base.__array_interface__["data"][0]
        return self.base.data_ptr()

    def get_device(self) -> int:
        """The base's device index (-1 on the host), as torch's ``get_device()``."""
        get = getattr(self.base, "get_device", None)
        return get() if get is not None else -1

    @property
    def is_cuda(self) -> bool:
        return bool(getattr(self.base, "is_cuda", False))

    # tensor-like queries ---------------------------------------------------------------------------
    def stride(self, *args):
        if _is_numpy(self.base):
            st = tuple(s // self.base.itemsize for s in self.base.strides)
            return st[args[0]] if args else st
        return self.base.stride(*args)

    def element_size(self) -> int:
        if _is_numpy(self.base):
            return self.base.itemsize
        return self.base.element_size()

    def numel(self) -> int:
        if _is_numpy(self.base):
            return int(self.base.size)
        return self.base.numel()

    def dim(self) -> int:
        return len(self.shape)

    # copies, moves (wrapped again in the same dtype) ---------------------------------------------------
    def cpu(self) -> "TensorWrapper":
        return TensorWrapper(self.base if _is_numpy(self.base) else self.base.cpu(), self.dtype)

    def to(self, device) -> "TensorWrapper":
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> "TensorWrapper":
        return TensorWrapper(self.base.copy() if _is_numpy(self.base) else self.base.clone(), self.dtype)

    def new_empty(self, sizes) -> "TensorWrapper":
        if _is_numpy(self.base):
            import numpy as np

            return TensorWrapper(np.empty(sizes, self.base.dtype), self.dtype)
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def copy_(self, other: Any) -> "TensorWrapper":
        src = other.base if isinstance(other, TensorWrapper) else other
        if _is_numpy(self.base):
            import numpy as np

            np.copyto(self.base, src)
        else:
            self.base.copy_(src)
        return self

    def zero_(self) -> "TensorWrapper":
        if _is_numpy(self.base):
            self.base.fill(0)
        else:
            self.base.zero_()
        return self

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    __repr__ = __str__


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """``tensor``'s memory as element type ``dtype`` for kernels: a :class:`TensorWrapper` (reinterpreting a wrapper
    again rewraps its base; back to the base's own dtype gives the base itself).  ``tensor``: a torch tensor, a
    NumPy array, or anything with ``data_ptr()``; ``dtype``: a ``tl`` dtype (``tl.uint8``, ``tl.float8e4nv``, ...)
    or a torch / NumPy dtype tritium knows.  ``TypeError`` for anything else."""
    from .specialization import dtype_type_string

    if getattr(dtype, "is_ptr", None) is not None and (dtype.is_ptr() or dtype.is_block()):
        raise TypeError(f"reinterpret: {dtype!r} is not an element type")
    try:
        dtype_type_string(dtype)
    except TypeError:
        raise TypeError(f"reinterpret: unsupported element type {dtype!r} (a tl dtype such as tl.uint8 or "
                        f"tl.float8e4nv, or a torch / NumPy dtype)") from None
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr") or _is_numpy(tensor):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor)}.")


__all__ = ["TensorWrapper", "reinterpret"]
