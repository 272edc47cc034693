"""The states the C fast path (``tritium/_speedups.c``) reads, by name: each is a ``NamedTuple`` whose fields are, in
order, the C side's ``enum`` of indices for it (``ST_*``, ``TU_*``, ``PL_*``, ``HE_*``, ``CK_*``), lower-cased
without the prefix; ``tests/runtime/test_launch_states.py`` parses the C source and checks both agree. Being tuples,
the C code reads them with ``PyTuple_GET_ITEM``; Python reads them by field name. The C dispatcher tells the four
launcher states apart by their sizes (a static assertion there keeps the sizes distinct).

Nothing here imports anything: the runtime (``jit``, ``autotuner``) and the compiler's ``launch`` build them.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class JitLaunchState(NamedTuple):
    """``ST_*``: a JIT function's relaunch (``runtime.launch._c_launch_state``)."""

    fn: Any  # the JITFunction
    kc_type: Any  # runtime.launch.KernelCache
    registry: Any  # registry.launch_snapshot().state: forced_backend read inline
    contexts: Any  # launch_snapshot().contexts
    env: Any  # os.environ's data (TRITIUM_TARGET / TRITON_INTERPRET read inline)
    kt: Any  # the key of TRITIUM_TARGET in it
    ki: Any  # the key of TRITON_INTERPRET in it
    plugins: Any  # vars(tritium.plugins): whether launch hooks are implemented
    tensor: Any  # torch.Tensor
    not_handled: Any  # the "not given" marker of the generated launcher
    spec: tuple  # per parameter: 1 constexpr, else 2 specialised | 4 alignment specialised
    defaults: tuple  # per parameter: its default, or the marker
    int_desc: tuple  # the integer descriptors (one, divisible, plain, any)
    names: tuple  # the parameters' names (interned)
    launcher: Any  # the generated launcher: everything C does not handle
    fn_dict: Any  # vars(fn) where no class attribute can intervene, else None
    memo: list  # [selection, key] of the last launch (reused while unchanged)
    descs: dict  # dtype -> (descriptor unaligned, descriptor aligned)


class TunerState(NamedTuple):
    """``TU_*``: an autotuner's relaunch of a tuned key (``Autotuner._c_state``)."""

    tuner: Any
    dict: Any  # vars(tuner): fn, _plans and cache read on every launch
    keypos: tuple  # the key arguments' positions
    nnames: int  # the number of parameters
    dtypes: Any  # the dtype names (runtime.specialization.DTYPE_NAMES)
    devnames: dict  # (context, device) -> "backend:arch:device"
    fallback: Any  # Autotuner._launch
    tensor: Any  # torch.Tensor
    memo: list  # [context, device, device name] of the last launch


class TunedPlan(NamedTuple):
    """``PL_*``: what the relaunch of a tuned key does (``Autotuner._run`` records it)."""

    config: Any  # the best Config
    kwargs: dict  # its keyword arguments
    maxpos: int  # the first keyword's parameter position: more positional arguments conflict
    names: tuple  # the keywords, in order
    values: tuple  # their values
    slots: tuple  # each keyword's parameter index in the wrapped function (-1: an option)
    options: tuple  # (name, value) of the options, as the generated launcher keys them


class HeuristicsState(NamedTuple):
    """``HE_*``: a heuristics wrapper's launch (``Heuristics._subscript``)."""

    obj: Any  # the Heuristics
    names: tuple  # the parameters' names
    defaults: dict  # their defaults
    values: tuple  # (name, heuristic) pairs
    kwnames: tuple  # the heuristics' names (interned)
    inner: Any  # the wrapped function
    fallback: Any  # Heuristics._launch


class CompiledKernelState(NamedTuple):
    """``CK_*``: ``CompiledKernel[grid](...)`` once loaded on a device (``compiler.launch._bind_c``)."""

    kernel: Any
    drivers: Any  # the registry's launch drivers
    backend: str
    driver: Any  # the driver whose direct launches are in ``directs``
    getter: Any  # the driver's current-device getter
    directs: dict  # device -> direct launch fn(gx, *args)
    plugins: Any  # vars(tritium.plugins)
    tensor: Any  # torch.Tensor
    fallback: Any  # CompiledKernel.launch
    nargs: int  # the number of runtime arguments


#: each state and the prefix of its C enum
C_ENUMS = {JitLaunchState: "ST", TunerState: "TU", TunedPlan: "PL", HeuristicsState: "HE", CompiledKernelState: "CK"}

__all__ = ["JitLaunchState", "TunerState", "TunedPlan", "HeuristicsState", "CompiledKernelState", "C_ENUMS"]
