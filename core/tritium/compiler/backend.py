"""What a backend is: a compiler (stages) and a driver (device, launch).  Plugins return ``Backend`` objects."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union


@dataclass(frozen=True)
class GPUTarget:
    """What code is generated for: ``backend`` is ``cuda``, ``hip``, ``interpreter`` or a plugin's name."""

    backend: str
    arch: Union[int, str]
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


class BaseCompiler(ABC):
    """Turns a source into a binary through an ordered dict of stages."""

    name: str = ""

    @abstractmethod
    def supports_target(self, target: GPUTarget) -> bool: ...

    @abstractmethod
    def parse_options(self, options: dict) -> Any:
        """A frozen, hashable options object (num_warps, num_stages, debug, ...)."""

    @abstractmethod
    def add_stages(self, stages: dict, options: Any) -> None:
        """Fill ``stages`` with ``name -> fn(src, metadata)``; the last stage's output is the binary."""

    def load_dialects(self, context) -> None:
        """Register the dialects this backend's stages need with an MLIR context."""

    @abstractmethod
    def hash(self) -> str:
        """Changes whenever what this backend generates could change (used in cache keys)."""


class BaseDriver(ABC):
    """The device side: is there a device, what is its target, launch a compiled kernel."""

    @abstractmethod
    def is_active(self) -> bool: ...

    def inactive_reason(self) -> str:
        return ""

    @abstractmethod
    def get_current_target(self) -> GPUTarget: ...

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: Optional[int] = None) -> int:
        return 0

    @abstractmethod
    def launch(self, kernel: Any, grid: tuple, args: list) -> None:
        """Run ``kernel`` (a CompiledKernel) over ``grid`` (3-tuple) with runtime ``args``."""


@dataclass
class Backend:
    """A backend as plugins register it.

    ``missing`` is None when the backend's dependencies are importable, else the pip command that installs
    them.  ``make_compiler`` / ``make_driver`` are called lazily (only when the backend is used), so a backend
    with missing extras never breaks ``import tritium``.
    """

    name: str
    priority: int
    make_compiler: Callable[[], BaseCompiler]
    make_driver: Callable[[], BaseDriver]
    missing: Optional[str] = None
    description: str = ""
