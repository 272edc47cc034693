"""``triton.set_allocator`` (Triton 3.6's ``triton.runtime._allocation``): the function kernels would allocate
their global scratch memory with, ``allocator(size: int, alignment: int, stream: Optional[int]) -> buffer``.

Triton calls it before a launch whose kernel needs global scratch, above all device-side tensor descriptors
(``tl.make_tensor_descriptor``), whose TMA tensormaps live there.  tritium accepts and keeps it (per context,
as Triton does, in a ``ContextVar``) but calls it nowhere: its tensor descriptors need no scratch (the
interpreter runs them natively; the cuda backend rewrites them into ordinary masked loads and stores).  A TMA
lowering that needs tensormaps in global memory would call :func:`get_allocator` at launch.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Optional, Protocol


class Buffer(Protocol):
    def data_ptr(self) -> int: ...


class Allocator(Protocol):
    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer: ...


class NullAllocator:
    """The default: a kernel that needs global scratch memory fails to launch, saying how to fix it."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        raise RuntimeError("Kernels that require workspace memory must provide an allocator. "
                           "This is usually done with `triton.set_allocator`.")


_allocator: ContextVar = ContextVar("_allocator", default=NullAllocator())


def set_allocator(allocator: Allocator) -> None:
    """Use ``allocator(size, alignment, stream) -> buffer`` for kernels' global scratch memory (see the module
    doc: accepted and kept; tritium's kernels do not need it today)."""
    if not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, got {allocator!r}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator :func:`set_allocator` installed in this context (a :class:`NullAllocator` by default)."""
    return _allocator.get()
