"""What a backend is: a compiler (stages) and a driver (device, launch).  Plugins return ``Backend`` objects."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional, Union


@dataclass(frozen=True)
class GPUTarget:
    """What code is generated for: ``backend`` is ``cuda``, ``hip``, ``interpreter`` or a plugin's name."""

    backend: str
    arch: Union[int, str]
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


@dataclass(frozen=True)
class BaseOptions:
    """Options every backend understands (Triton's names).  Backends subclass it (frozen dataclass) to add theirs.

    ``parse(opts)`` builds one from a dict and raises ``TypeError`` for a name it does not know.
    """

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: Optional[int] = None
    debug: bool = False
    sanitize_overflow: bool = False
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False

    @classmethod
    def parse(cls, opts: Optional[dict] = None, backend: str = ""):
        names = {f.name for f in fields(cls)}
        given = {k: v for k, v in (opts or {}).items() if v is not None}
        unknown = sorted(set(given) - names)
        if unknown:
            where = f" of the {backend} backend" if backend else ""
            raise TypeError(f"unknown option(s){where}: {', '.join(unknown)} (known: {', '.join(sorted(names))})")
        out = cls(**given)
        if out.num_warps <= 0 or out.num_warps & (out.num_warps - 1):
            raise ValueError(f"num_warps must be a power of 2, got {out.num_warps}")
        return out

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def hash(self) -> str:
        import hashlib

        return hashlib.sha256(repr(sorted(self.to_dict().items())).encode()).hexdigest()


class BaseCompiler(ABC):
    """Turns a source into a binary through an ordered dict of stages."""

    name: str = ""
    #: threads per warp of this backend's targets, used by :meth:`target_for_arch`
    warp_size: int = 32

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

    def target_for_arch(self, arch: Union[int, str, None] = None) -> GPUTarget:
        """The target for ``arch`` (``TRITIUM_TARGET=cuda:90``, ``--target cuda:90``) without needing a device."""
        if isinstance(arch, str) and arch.isdigit():
            arch = int(arch)
        return GPUTarget(self.name, arch if arch is not None else 0, self.warp_size)

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
