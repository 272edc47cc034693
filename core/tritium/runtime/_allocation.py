"""``triton.set_allocator`` (Triton 3.6's ``triton.runtime._allocation``): the function kernels would allocate
their global scratch memory with, ``allocator(size: int, alignment: int, stream: Optional[int]) -> buffer``.

The cuda launcher calls it (through :func:`scratch_allocator`) before each launch of a kernel that needs global
scratch: on sm_90, kernels whose ``tl.make_tensor_descriptor`` descriptors are TMA tensor maps written there, one
128-byte slot per descriptor and program.  It is kept per context, as Triton does, in a ``ContextVar``.  Where
Triton fails such a launch without one, tritium falls back to torch's caching allocator on the current device
(stream-ordered, so concurrent launches never share a buffer), and raises Triton's error only without torch.
"""
from __future__ import annotations

import functools
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
    doc)."""
    if not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, got {allocator!r}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator :func:`set_allocator` installed in this context (a :class:`NullAllocator` by default)."""
    return _allocator.get()


def _torch_allocator(size: int, alignment: int, stream: Optional[int]) -> Buffer:
    import torch

    # the caching allocator aligns to 512 bytes at least; the current stream orders its reuse
    return torch.empty(size, dtype=torch.int8, device=torch.device("cuda", torch.cuda.current_device()))


def scratch_allocator() -> Allocator:
    """The allocator for a launch's global scratch: the installed one, else torch's when torch is there."""
    a = _allocator.get()
    if isinstance(a, NullAllocator):
        return _torch_allocator if _have_torch() else a
    return a


@functools.lru_cache(maxsize=None)
def _have_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None
