"""What a backend is: a compiler (stages) and a driver (device, launch).  Plugins return ``Backend`` objects.

These are the contracts between tritium's core and its backends.  Layering: this module imports nothing of
tritium but ``tritium._env``, ``tritium.errors`` and ``tritium.target``; the backend registry (:mod:`tritium.compiler.registry`), ``compile()`` and the runtime build on it.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

from .._env import is_true
from ..target import GPUTarget  # noqa: F401  (the backends' contract names it here too)


def bind_stages(compiler: "BaseCompiler", stages: dict, options: Any, target: GPUTarget) -> None:
    """``compiler.add_stages(stages, options, target)``; a plugin compiler written against the older two-argument
    ``add_stages(stages, options)`` is still called that way (its stages then find the target in the metadata)."""
    import inspect

    try:
        params = inspect.signature(compiler.add_stages).parameters.values()
    except (TypeError, ValueError):
        params = ()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params):
        compiler.add_stages(stages, options, target)
    else:
        compiler.add_stages(stages, options)


@dataclass(frozen=True)
class BaseOptions:
    """Options every backend understands (Triton's names).  Backends subclass it (frozen dataclass) to add theirs.

    ``parse(opts)`` builds one from a dict and raises ``TypeError`` for a name it does not know.
    """

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: Optional[Union[int, str]] = None  # registers per thread; "auto": the backend's choice (cuda: occupancy)
    debug: bool = False
    sanitize_overflow: bool = False
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False

    @classmethod
    def parse(cls, opts: Optional[dict] = None, backend: str = ""):
        names = {f.name for f in fields(cls)}
        given = {k: v for k, v in (opts or {}).items() if v is not None}
        if "debug" in names and is_true(os.environ.get("TRITON_DEBUG", "0")):  # Triton's knob: debug on, whatever
            given["debug"] = True                                           # the option or @jit say
        fusion = os.environ.get("TRITON_DEFAULT_FP_FUSION")  # Triton's knob for the default (knobs.language)
        if fusion is not None and "enable_fp_fusion" in names and "enable_fp_fusion" not in given:
            given["enable_fp_fusion"] = is_true(fusion)
        unknown = sorted(set(given) - names)
        if unknown:
            where = f" of the {backend} backend" if backend else ""
            import difflib

            hints = [f"'{u}': did you mean '{m[0]}'?" for u in unknown
                     for m in [difflib.get_close_matches(u, names, n=1)] if m]
            hint = f" ({'; '.join(hints)})" if hints else ""
            raise TypeError(f"unknown option(s){where}: {', '.join(unknown)}{hint} (known: {', '.join(sorted(names))})")
        out = cls(**given)
        if out.num_warps <= 0 or out.num_warps & (out.num_warps - 1):
            from ..errors import OptionError

            raise OptionError(f"num_warps must be a power of 2, got {out.num_warps}")
        m = out.maxnreg
        if m is not None and m != "auto" and (isinstance(m, bool) or not isinstance(m, int) or m <= 0):
            from ..errors import OptionError

            raise OptionError(f"maxnreg must be a number of registers or 'auto', got {m!r}")
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
    #: the options' class: :meth:`parse_options` builds one
    options_class: type = BaseOptions

    def supports_target(self, target: GPUTarget) -> bool:
        """Whether this backend compiles for ``target``; default: the targets that carry its name."""
        return target.backend == self.name

    def check_target(self, target: GPUTarget) -> None:
        """Raise :class:`~tritium.errors.TargetError` (listing what is supported) if this backend cannot compile for
        ``target``'s arch; called before any stage runs.  Default: every arch."""

    def parse_options(self, options: dict) -> Any:
        """A frozen, hashable options object (num_warps, num_stages, debug, ...): an :attr:`options_class`."""
        return self.options_class.parse(options, backend=self.name)

    @abstractmethod
    def add_stages(self, stages: dict, options: Any, target: GPUTarget) -> None:
        """Fill ``stages`` with ``name -> fn(src, metadata)`` for ``target`` (checked by :meth:`check_target`
        already; the stages take their arch from it, never from the metadata); the last stage's output is the
        binary."""

    def load_dialects(self, context) -> None:
        """Register the dialects this backend's stages need with an MLIR context."""

    def target_for_arch(self, arch: Union[int, str, None] = None) -> GPUTarget:
        """The target for ``arch`` (``TRITIUM_TARGET=cuda:90``, ``--target cuda:90``) without needing a device."""
        if isinstance(arch, str) and arch.isdigit():
            arch = int(arch)
        return GPUTarget(self.name, arch if arch is not None else 0, self.warp_size)

    #: stages of this backend's pipeline that are not implemented yet, in order: ``add_stages`` binds the first of
    #: them to a function raising ``StageNotImplemented`` (so a compile stops there with that message); ``tritium
    #: backends`` and ``tritium compile`` report them from here (:meth:`stage_summary`)
    unimplemented_stages: tuple = ()

    def implemented_stages(self) -> list:
        """The stages a compile with default options runs and completes, in order."""
        stages: dict = {}
        bind_stages(self, stages, self.parse_options({}), self.target_for_arch(None))
        return [s for s in stages if s not in self.unimplemented_stages]

    def stage_summary(self) -> str:
        """``ttir -> ttgir -> ...`` of what this backend implements, and what it does not yet."""
        text = " -> ".join(self.implemented_stages())
        if self.unimplemented_stages:
            text += f" (not implemented yet: {' -> '.join(self.unimplemented_stages)})"
        return text

    def tool_path(self, name: str) -> Optional[str]:
        """Where the external tool ``name`` this backend runs lives (``knobs.nvidia.ptxas``: the cuda backend's
        ``"ptxas"``), or None when it is not installed or this backend runs no such tool."""
        return None

    def explain_limits(self, target: GPUTarget) -> Tuple[Optional[str], List[str]]:
        """What ``tritium explain`` can compile for ``target`` on this machine: the last stage it can run (None:
        every stage) and notes saying why it stops there (e.g. cuda without ptxas: no registers or spills)."""
        return None, []

    def options_for_target(self, options: Any, target: GPUTarget) -> Any:
        """The options to compile ``target`` with (what :func:`tritium.compiler.make_pipeline` hands to
        :meth:`add_stages`): ``options`` unless the target implies some (the interpreter's ``interpreter:eager``
        sets its ``interpret_mode``)."""
        return options

    @abstractmethod
    def hash(self) -> str:
        """Changes whenever what this backend generates could change (used in cache keys)."""


class Binding(NamedTuple):
    """A kernel bound to one device of a driver (:meth:`BaseDriver.bind`): what every relaunch path calls."""

    launch: Callable[[Any, tuple, Sequence], None]  # fn(kernel, grid, args), as BaseDriver.launch
    #: fn(positions, n_values) -> the direct launch fn(gx, v0, ..., v{n_values-1}) or None (see BaseDriver.bind)
    direct: Callable[[tuple, int], Optional[Callable[..., None]]]
    loaded: bool  # False: not loaded on the device yet (TRITIUM_COMPILE_ONLY), so not kept; launch is the driver's


def no_direct_launch(positions: tuple, n_values: int) -> None:
    """``Binding.direct`` of a driver without a direct launch: always None."""
    return None


class BaseDriver(ABC):
    """The device side of a backend: is there a device, what is its target, load and launch a compiled kernel.

    A driver must implement :meth:`is_active`, :meth:`get_current_target` and :meth:`launch`; everything else
    has a default that suits a host backend (one device, 0; no streams; nothing to synchronise).  The runtime
    calls only what is declared here.

    Loaded state: what a driver loads for a kernel on a device (a module and function handle, a compiled host
    program, a packed-argument buffer) lives in ``kernel.loaded[device]``, a dict on the
    :class:`~tritium.compiler.compiler.CompiledKernel` whose values only the kernel's driver reads and writes.
    """

    #: the most programs a launch may have along each grid dimension (program ids are 32-bit in every backend)
    max_grid: tuple = (2 ** 31 - 1,) * 3

    @abstractmethod
    def is_active(self) -> bool:
        """Whether kernels can run here now (dependencies importable, a device present)."""

    def inactive_reason(self) -> str:
        """Why :meth:`is_active` is False, for people (``tritium backends``): what is missing, how to fix it."""
        return ""

    @abstractmethod
    def get_current_target(self) -> GPUTarget:
        """The target of the current device (what ``compile()`` generates code for by default)."""

    def get_current_device(self) -> int:
        """The index of the current device."""
        return 0

    def device_getter(self) -> Callable[[], Any]:
        """A zero-argument callable returning the current device, called on every launch of the JIT's fast path
        (:func:`tritium.compiler.registry.launch_context`): a driver may return something cheaper than the
        bound :meth:`get_current_device` (the cuda driver returns torch's C getter)."""
        return self.get_current_device

    def get_current_stream(self, device: Optional[int] = None) -> int:
        """The raw handle of the current stream of ``device`` (0: the default stream)."""
        return 0

    def synchronize(self, device: Optional[int] = None) -> None:
        """Wait until everything launched on ``device`` has finished (host backends finish while launching)."""

    @abstractmethod
    def launch(self, kernel: Any, grid: tuple, args: Sequence) -> None:
        """Run ``kernel`` (a CompiledKernel) over ``grid`` (a 3-tuple of ints) with its runtime ``args`` (the
        non-constexpr parameters in order), on the current device and stream; loads the kernel there first if
        needed."""

    def bind(self, kernel: Any, device: Any) -> Binding:
        """``kernel`` bound to ``device``: the one entry the core's launch paths use after a first launch there
        (:func:`tritium.compiler.launch.binding` keeps one per kernel, driver and device once ``loaded``).

        ``Binding.launch`` has :meth:`launch`'s signature, ``fn(kernel, grid, args)``, for ``kernel`` already
        launched once on ``device``: the JIT's relaunch fast path calls it on every later launch, and it may skip
        what :meth:`launch` does on a first launch (loading, looking the device up).  ``Binding.direct(positions,
        n_values)`` optionally gives the cheapest relaunch, ``fn(gx, v0, ..., v{n_values-1})``, which launches over
        the one-dimensional grid ``(gx, 1, 1)``, ``gx`` > 0, on the current stream, with the runtime arguments
        ``v[i] for i in positions`` (the JIT's fast path passes every parameter's value, constexprs included,
        without building an argument tuple; it calls it only while no plugin implements the launch hooks), or
        None.  Default: :meth:`launch` itself (which loads what it needs), no direct launch, kept."""
        return Binding(self.launch, no_direct_launch, True)

    def fast_path_ok(self, args: Sequence) -> bool:
        """Whether later launches with arguments like ``args`` (this launch's runtime arguments) may take the JIT's
        fast path, which tells arguments apart only by type, dtype, device index and specialisation.  A GPU
        driver says no for host tensors it accepted (pinned memory): a later unpinned host tensor has the same
        key and must be refused by the general path.  Default: yes."""
        return True

    def get_device_properties(self, device: Optional[int] = None) -> dict:
        """Triton's device properties (``multiprocessor_count``, ``max_shared_mem``, ``max_num_regs``,
        ``warpSize``, clock rates, ...).  The default: plausible values for a host backend, so that occupancy
        arithmetic in user code (Triton's tutorials) runs."""
        return {
            "multiprocessor_count": max(1, os.cpu_count() or 1),
            "max_shared_mem": 232448,
            "max_num_regs": 65536,
            "warpSize": self.get_current_target().warp_size,
            "sm_clock_rate": 1_000_000,
            "mem_clock_rate": 1_000_000,
            "mem_bus_width": 256,
        }

    @property
    def utils(self) -> Any:
        """Triton's ``driver.active.utils``: ``get_device_properties(device)``."""
        return DriverUtils(self)

    def get_benchmarker(self) -> Optional[Callable]:
        """A benchmarking function with ``triton.testing.do_bench``'s signature that suits this backend better
        than tritium's (``tritium.testing.do_bench`` then uses it), or None."""
        return None

    def get_active_torch_device(self) -> Any:
        """The ``torch.device`` whose tensors this backend launches kernels on (host backends: the CPU)."""
        import torch

        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        """torch's module for this device kind (``torch.cuda``; host backends: ``torch.cpu``)."""
        import torch

        return torch.cpu


class DriverUtils:
    """``driver.active.utils`` (Triton's name) of a driver without its own: device properties."""

    def __init__(self, driver: BaseDriver):
        self._driver = driver

    def get_device_properties(self, device: Any = None) -> dict:
        return self._driver.get_device_properties(device)


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
