"""The JIT's launch path: ``fn[grid](*args, **kwargs)`` through a launcher generated per kernel.

On a relaunch the generated launcher binds the arguments with Python's own call machinery, computes each
argument's specialisation descriptor inline (:func:`tritium.runtime.specialization.describe_source`), looks the
descriptor tuple up in the kernel's fast cache (:class:`KernelCache`, ``.fast``) and calls the driver's bound
launch function through :func:`tritium.compiler.launch.launch_with_hooks`.  Anything else -- a first launch, a
new specialisation, a missing argument, a grid that is not ``(int,)`` needing the general form -- goes to
``JITFunction._run`` (the general binder, compile on a miss, :func:`tritium.compiler.launch.launch`), which
records a :class:`FastLaunch` for the next time.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

from ..compiler.backend import BaseDriver
from ..compiler.launch import launch_with_hooks
from ..compiler.registry import launch_context
from .specialization import constexpr_source, describe_namespace, describe_source, descriptor_args


class KernelCache(dict):
    """A JITFunction's compiled kernels: ``device key -> specialisation key -> CompiledKernel``, the device key
    being ``(backend, arch, device)`` and the specialisation key ``Bound.cache_key``; and ``fast``:
    ``(*device key, descriptor tuple) -> FastLaunch`` for the relaunch fast path.  ``clear()`` clears both."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.fast: dict = {}

    def clear(self) -> None:
        super().clear()
        self.fast.clear()


class FastLaunch:
    """What a relaunch with known descriptors needs: the kernel, ``args(values)`` picking its runtime arguments
    out of the parameters' values, the driver's bound ``launch(kernel, grid, args)`` and that driver."""

    __slots__ = ("kernel", "args", "launch", "driver")

    def __init__(self, kernel: Any, args: Callable[[tuple], tuple], launch: Callable, driver: Any):
        self.kernel, self.args, self.launch, self.driver = kernel, args, launch, driver


def arg_getter(pos: tuple, tensordescs: frozenset = frozenset()) -> Callable[[tuple], tuple]:
    """``values -> runtime arguments`` (a tuple) for the positions ``pos``; the values at positions in
    ``tensordescs`` are host-side tensor descriptors, which stand for their kernel arguments (base, shape...,
    strides...)."""
    if tensordescs:
        def get(vals):
            out = []
            for i in pos:
                if i in tensordescs:
                    out.extend(descriptor_args(vals[i]))
                else:
                    out.append(vals[i])
            return tuple(out)

        return get
    if len(pos) >= 2:
        return operator.itemgetter(*pos)
    if len(pos) == 1:
        i = pos[0]
        return lambda vals: (vals[i],)
    return lambda vals: ()


def grid3(fn: Any, grid: Any, values: Sequence, options: dict, limits: Optional[tuple] = None) -> tuple:
    """``grid`` as a 3-tuple of ints: a callable gets the launch's meta-parameters (``{**options, parameter:
    value}``), an int is one dimension; ``TypeError`` / ``ValueError`` name the kernel (a dimension that is not an
    integer, negative, or above the backend's ``limits``: its driver's ``max_grid``, 2^31 - 1 by default)."""
    name = fn.__name__
    if callable(grid):
        grid = grid({**options, **dict(zip(fn.arg_names, values))})
    elif grid is None:
        raise TypeError(f"kernel '{name}' launched without a grid: use {name}[grid](...)")
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        g = tuple(operator.index(x) for x in grid)
    except TypeError:
        raise TypeError(f"kernel '{name}': grid must be a tuple of ints or a callable returning one, "
                        f"got {grid!r}") from None
    if not 1 <= len(g) <= 3:
        raise ValueError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {g}")
    limits = limits or BaseDriver.max_grid
    for axis, (n, most) in enumerate(zip(g, limits)):
        if not 0 <= n <= most:
            raise ValueError(f"kernel '{name}': grid {g} has {n} programs along axis {axis}; the backend takes 0 to "
                             f"{most} there" + (" (program ids are 32-bit)" if most == 2 ** 31 - 1 else ""))
    return g + (1,) * (3 - len(g))


def launch_entry(fn: Any, entry: FastLaunch, grid: Any, values: tuple, options: dict) -> Any:
    """Launch a fast entry over any grid form (what the generated launcher does inline for ``(int,)``)."""
    g = grid3(fn, grid, values, options, getattr(entry.driver, "max_grid", None))
    if g[0] and g[1] and g[2]:
        launch_with_hooks(entry.launch, entry.kernel, g, entry.args(values))
    return entry.kernel


_M = object()  # "not given" in a generated launcher


def make_launcher(fn: Any) -> Any:
    """Generate ``launch(grid, *args, **kwargs)`` for ``fn[grid](*args, **kwargs)`` (``fn[grid]`` is
    ``partial(launch, grid)``, ``fn.run`` calls it too); ``False`` when the signature does not allow it
    (``*args`` / ``**kwargs`` / keyword-only parameters, names starting with ``_tr_``).

    The parameters are positional-only with a "not given" default, so binding never fails in Python: keyword
    arguments are matched by name in the generated code, and anything unusual -- a missing or doubly given
    argument, extra positional arguments, pre-run hooks, a descriptor that cannot be computed, a cache miss --
    calls ``fn._run(args, kwargs, grid)`` with the arguments exactly as given (same errors, same behaviour)."""
    params = list(fn.signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return False
    names = [p.name for p in params]
    if any(n.startswith("_tr_") or not n.isidentifier() for n in names):
        return False
    fn.cache_key  # records used_global_vals, which the launcher checks
    ns = describe_namespace()
    ndarray = "_tr_nd" in ns
    body, descs = [], []
    for i, p in enumerate(fn.params):
        n = p.name
        if p.has_default:
            ns[f"_tr_d{i}"] = p.default
        if p.is_constexpr:
            descs.append(constexpr_source(n))
            continue
        specialize = n not in fn.do_not_specialize
        body.append(describe_source(n, f"_tr_k{i}", specialize,
                                    specialize and n not in fn.do_not_specialize_on_alignment, ndarray))
        descs.append(f"_tr_k{i}")
    ns.update({"_M": _M, "_tr_fn": fn, "_tr_KC": KernelCache, "_tr_slow": _replay(fn), "_tr_ctx": launch_context,
               "_tr_launch": launch_with_hooks, "_tr_entry": launch_entry})
    given = f"({''.join(n + ', ' for n in names)})"
    slow = f"return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, False, None)"
    raw = f"return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, True, None)"
    lines = [f"def _tr_launch_{fn.__name__}(_tr_grid, {', '.join(n + '=_M' for n in names)}"
             f"{', ' if names else ''}/, *_tr_extra, **_tr_kw):",
             "    _tr_f = _tr_fn",
             "    if _tr_extra or _tr_f.pre_run_hooks or type(_tr_f.cache) is not _tr_KC:",
             f"        {raw}",
             "    if _tr_f.debug is not None and 'debug' not in _tr_kw:",
             "        _tr_kw['debug'] = _tr_f.debug",
             "    if _tr_kw:",
             "        _tr_o = _tr_kw.copy()"]
    for n in names:
        lines += [f"        _tr_v = _tr_o.pop({n!r}, _M)",
                  "        if _tr_v is not _M:",
                  f"            if {n} is not _M:",
                  f"                {raw}",
                  f"            {n} = _tr_v"]
    lines += ["    else:", "        _tr_o = _tr_kw"]
    required = [p.name for p in fn.params if not p.has_default]
    if required:
        lines += [f"    if {' or '.join(n + ' is _M' for n in required)}:", f"        {slow}"]
    for i, p in enumerate(fn.params):
        if p.has_default:
            lines += [f"    if {p.name} is _M:", f"        {p.name} = _tr_d{i}"]
    lines += ["    if _tr_f.used_global_vals and not _tr_f._globals_unchanged():",
              "        _tr_f.check_globals()",
              "    try:"]
    lines += ["    " + ln for ln in "".join(body).splitlines()]
    lines += [f"        _tr_key = ({''.join(d + ', ' for d in descs)}tuple(_tr_o.items()) if _tr_o else ())",
              "        _tr_name, _tr_arch, _tr_drv, _tr_dev = _tr_ctx()",
              "        _tr_e = _tr_f.cache.fast.get((_tr_name, _tr_arch, _tr_dev(), _tr_key))",
              "    except Exception:  # no descriptor for some argument: the general binder explains it",
              f"        {slow}",
              "    if _tr_e is None or _tr_e.driver is not _tr_drv:",
              f"        return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, False, _tr_key)",
              "    if type(_tr_grid) is tuple and len(_tr_grid) == 1 and type(_tr_grid[0]) is int and "
              "0 <= _tr_grid[0] <= 2147483647:  # (else grid3 says what is wrong)",
              "        if _tr_grid[0]:",
              f"            _tr_launch(_tr_e.launch, _tr_e.kernel, (_tr_grid[0], 1, 1), _tr_e.args({given}))",
              "        return _tr_e.kernel",
              f"    return _tr_entry(_tr_f, _tr_e, _tr_grid, {given}, _tr_o)",
              ""]
    src = "\n".join(lines)
    exec(compile(src, f"<tritium launcher for {fn.__name__}>", "exec"), ns)  # noqa: S102 - our own code
    launch = ns[f"_tr_launch_{fn.__name__}"]
    launch.source = src
    return launch


def _replay(fn: Any) -> Callable:
    """``slow(grid, given, extra, kwargs, raw, key)``: ``fn._run`` with the arguments of a generated launcher as
    they were given.  ``given`` holds the parameters' current values (``_M``: not given): the positional
    arguments are the prefix of them not named in ``kwargs`` (a parameter filled from ``kwargs`` or its default
    may follow; passing a default positionally binds the same); ``raw``: no parameter was filled yet, the
    positional arguments are the given prefix (a parameter given both ways is then reported by the binder).
    ``key``: the descriptor tuple, when it could be computed (the launch then records a fast entry)."""
    names = tuple(fn.arg_names)

    def slow(grid: Any, given: tuple, extra: tuple, kwargs: dict, raw: bool, key: Optional[tuple]) -> Any:
        if extra:
            return fn._run((*given, *extra), kwargs, grid, key=key)
        k = 0
        for name, v in zip(names, given):
            if v is _M or (not raw and name in kwargs):
                break
            k += 1
        return fn._run(given[:k], kwargs, grid, key=key)

    return slow


__all__ = ["KernelCache", "FastLaunch", "make_launcher", "grid3", "arg_getter", "launch_entry"]
