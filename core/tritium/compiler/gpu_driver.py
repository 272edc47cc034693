"""What the GPU drivers (cuda, hip) share: probing once for a runtime and a device, compile-only mode, and the current
device and stream taken from torch when torch is imported.

torch exposes the current device and stream of both vendors under the same names (a ROCm build of torch answers
``torch.cuda`` with HIP devices and streams), so one class serves both.  A subclass names itself (``name``), its
device variable (``device_env``: the device without torch), its device class (``device_class(index)``) and how it
finds out why it cannot run (:meth:`_find_reason`); everything vendor-specific (loading, launching, targets) stays
in the subclass.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any, Callable, Optional, Tuple

from tritium._env import env_flag
from tritium.errors import BackendUnavailable, KernelRuntimeError

from .backend import BaseDriver

COMPILE_ONLY_ENV = "TRITIUM_COMPILE_ONLY"

_env_data = getattr(os.environ, "_data", None)  # os.environ's raw mapping: unset is one dict miss (launch path)
if _env_data is not None and hasattr(os.environ, "encodekey"):  # CPython's os.environ
    _COMPILE_ONLY_KEY = os.environ.encodekey(COMPILE_ONLY_ENV)
else:  # pragma: no cover
    _env_data = None


def compile_only() -> bool:
    """``TRITIUM_COMPILE_ONLY=1``: a GPU driver is "active" without a device and launches nothing, so running
    kernels (tests, benchmarks) with ``TRITIUM_TARGET=cuda:90`` (or ``hip:gfx942``) only compiles them, through the
    file cache.  This is how the GPU workflow fills the cache it carries to the device (scripts/gpu_prepare.sh)."""
    if _env_data is not None and _COMPILE_ONLY_KEY not in _env_data:
        return False
    return env_flag(COMPILE_ONLY_ENV)


def _torch_c(name: str) -> Optional[Callable]:
    """``torch._C.<name>`` when torch is imported (never imports it), else None."""
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "_C", None), name, None) if torch is not None else None


def no_device_node(paths: tuple, runtime_module: str) -> bool:
    """On Linux, none of a GPU driver's device files ``paths`` exists and its Python runtime ``runtime_module`` is not
    imported: there is no GPU to find, and importing the runtime to ask would cost a GPU-less process tens of
    milliseconds.  (A runtime already imported, or given by a test, is asked as usual.)"""
    return sys.platform == "linux" and runtime_module not in sys.modules and not any(os.path.exists(p) for p in paths)


def kernel_binary(kernel, stage: str, backend: str, device: int, device_arch, *, arch_of=lambda a: a,
                  spell=str) -> Tuple[str, bytes]:
    """``kernel``'s name and the bytes of its ``stage`` (``"cubin"``, ``"hsaco"``) for a driver loading it on device
    number ``device``, of arch ``device_arch``.  A kernel compiled without that stage, or for another arch
    (``arch_of``: the compiled arch as the device spells it; ``spell``: an arch in the message, ``sm_90``), is a
    KernelRuntimeError saying for which target to compile it."""
    md = kernel.metadata
    name = md.get("name") or getattr(kernel, "name", "kernel")
    asm = getattr(kernel, "asm", {}) or {}
    binary = asm.get(stage)
    if binary is None:
        raise KernelRuntimeError(f"kernel '{name}' has no {stage} (stages: {list(asm)}); compile it for a {backend} "
                                 f"target to launch it on {'an AMD' if backend == 'hip' else 'the'} GPU")
    arch = (md.get("target") or {}).get("arch")
    if arch not in (None, 0, "") and arch_of(arch) != device_arch:
        raise KernelRuntimeError(f"kernel '{name}' was compiled for {spell(arch)} but device {device} is "
                                 f"{spell(device_arch)}: compile it for {backend}:{device_arch}")
    return name, binary.encode("latin-1") if isinstance(binary, str) else binary


class TorchGPUDriver(BaseDriver):
    """A GPU driver whose current device and stream are torch's when torch is imported (see the module docstring)."""

    #: the backend's name, in errors ("cuda: no CUDA device")
    name: str = ""
    #: the environment variable naming the device when torch does not
    device_env: str = ""
    #: ``device_class(index)``: the driver's per-device state (created once per index, under the lock)
    device_class: Callable[[int], Any]

    def __init__(self):
        self._probed = False
        self._reason = ""
        self._devices: dict = {}
        self._lock = threading.RLock()
        self.skipped_launches = 0  # launches skipped under TRITIUM_COMPILE_ONLY

    # ------------------------------------------------------------------------------------------ probing
    @staticmethod
    def _find_reason() -> str:
        """Why kernels cannot run here ("" when they can): the missing package (with the pip command), runtime
        library or device.  Called once, by :meth:`_probe`."""
        raise NotImplementedError

    def _probe(self) -> None:
        if self._probed:
            return
        with self._lock:
            if not self._probed:
                self._reason = self._find_reason()
                self._probed = True

    def is_active(self) -> bool:
        if self._probed and not self._reason:  # a device: the per-launch check stays cheap
            return True
        if compile_only():
            return True
        self._probe()
        return not self._reason

    def inactive_reason(self) -> str:
        if compile_only():
            return ""
        self._probe()
        return self._reason

    def _require(self) -> None:
        if not self.is_active():
            raise BackendUnavailable(f"{self.name}: {self._reason}")

    # ------------------------------------------------------------------------------------------ devices
    def device(self, index: Optional[int] = None) -> Any:
        """The state of device ``index`` (default: the current device); BackendUnavailable without one, also
        in compile-only mode."""
        if index is None:
            index = self.get_current_device()
        d = self._devices.get(index)
        if d is None:
            self._probe()
            if self._reason:
                raise BackendUnavailable(f"{self.name}: {self._reason}")
            with self._lock:
                d = self._devices.get(index)
                if d is None:
                    d = self._devices[index] = self.device_class(index)
        return d

    @staticmethod
    def _torch_device_getter() -> Optional[Callable[[], int]]:
        """torch's ``_cuda_getDevice`` (``torch.cuda.current_device()`` without the Python layer; it initialises the
        GPU lazily itself) when torch is imported and it works, else None."""
        get = _torch_c("_cuda_getDevice")
        if get is None:
            return None
        try:
            get()
        except RuntimeError:  # torch without a usable GPU
            return None
        return get

    def get_current_device(self) -> int:
        """torch's current device when torch is imported with a GPU, else ``device_env`` (0)."""
        if compile_only():
            return 0
        get = _torch_c("_cuda_getDevice")
        if get is not None:
            try:
                return int(get())
            except RuntimeError:  # torch without a usable GPU
                pass
        return int(os.environ.get(self.device_env, "0") or 0)

    def set_current_device(self, index: int) -> None:
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.cuda.set_device(index)
        self.device(index).make_current()

    def get_current_stream(self, device: Optional[int] = None) -> int:
        """The raw handle of torch's current stream on ``device`` when torch is imported with a GPU, else 0 (the
        null stream)."""
        torch = sys.modules.get("torch")
        if torch is not None and not compile_only():
            try:
                if device is None:
                    device = torch.cuda.current_device()
                raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
                if raw is not None:
                    return int(raw(device))
                return int(torch.cuda.current_stream(device).cuda_stream)
            except (RuntimeError, AssertionError, AttributeError):  # torch without a usable GPU
                pass
        return 0

    def _stream_getter(self, device: int) -> Callable[[], int]:
        """A callable returning the current raw stream of ``device``: torch's ``_cuda_getCurrentRawStream`` bound to
        it when torch is imported with a GPU (one C call per launch), else :meth:`get_current_stream` (which looks
        for torch again: it may be imported later)."""
        raw = _torch_c("_cuda_getCurrentRawStream")
        if raw is not None:
            try:
                raw(device)
            except (RuntimeError, AssertionError):  # torch without a usable GPU
                raw = None
        if raw is not None:
            return functools.partial(raw, device)
        return functools.partial(self.get_current_stream, device)

    def get_device_properties(self, device: Optional[int] = None) -> dict:
        return dict(self.device(device).properties())

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        import torch

        return torch.cuda

    def fast_path_ok(self, args) -> bool:
        """No fast path after a launch with a host tensor (pinned memory): the fast path's key (device index -1)
        would let an unpinned host tensor through."""
        for a in args:
            dev = getattr(a, "device", None)
            if dev is not None and getattr(dev, "type", None) == "cpu":
                return False
        return True
