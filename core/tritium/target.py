"""What code is generated for: :class:`GPUTarget`, at the bottom of the layering (nothing of tritium imported), so
that every layer -- the language's ``tl.target_info``, the passes, the compilers, the runtime -- shares one typed
target instead of re-reading a dict or a string.

A compile gets its target once (``compile(src, target=...)``); the backend's ``add_stages(stages, options,
target)`` binds it into its stages. TTGIR modules carry it as ``ttg.target = "cuda:90"`` (Triton's attribute) with
``ttg.threads-per-warp``; :func:`tritium.dialects.ttg.module_target` turns that back into a :class:`GPUTarget`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union


@dataclass(frozen=True)
class GPUTarget:
    """``backend`` is ``cuda``, ``hip``, ``interpreter`` or a plugin's name; ``arch`` the compute capability as an
    int (``90``) for cuda, the gfx name (``"gfx942"``) for hip; ``warp_size`` the threads of a warp."""

    backend: str
    arch: Union[int, str]
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"

    @classmethod
    def parse(cls, text: str, warp_size: int = 32) -> "GPUTarget":
        """``"cuda:90"`` / ``"hip:gfx942"`` (what ``str()`` and ``ttg.target`` spell) back into a target; a
        numeric arch becomes an int. ``ValueError`` for text without a backend."""
        backend, _, arch = str(text).partition(":")
        if not backend:
            raise ValueError(f"not a target: {text!r} (expected backend:arch, e.g. cuda:90)")
        return cls(backend, int(arch) if arch.isdigit() else arch, warp_size)

    @classmethod
    def of(cls, value: Any) -> Optional["GPUTarget"]:
        """A target from what compile metadata holds (the dict of its fields) or a target itself; None for None."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, dict) and "backend" in value:
            return cls(value["backend"], value.get("arch"), value.get("warp_size", 32))
        raise TypeError(f"not a target: {value!r}")

    @property
    def cuda_arch(self) -> Optional[int]:
        """The compute capability when this is a cuda target (``90``), else None."""
        return self.arch if self.backend == "cuda" and isinstance(self.arch, int) else None


#: who answers "what is the current target" outside a compile (the runtime's active driver: it sets this when it
#: is imported, so that the language's ``tl.target_info`` asks it without importing the runtime)
_current_provider = None


def set_current_target_provider(provider) -> None:
    """``provider()`` -> the current :class:`GPUTarget` or None (``tritium.runtime.driver`` installs it)."""
    global _current_provider
    _current_provider = provider


def current_target() -> Optional[GPUTarget]:
    """The active driver's current target, None when there is no usable backend (or no runtime imported)."""
    return _current_provider() if _current_provider is not None else None


__all__ = ["GPUTarget", "current_target", "set_current_target_provider"]
