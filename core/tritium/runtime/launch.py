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
import sys
from typing import Any, Callable, Optional, Sequence

from .. import plugins as _plugins
from ..compiler.backend import BaseDriver
from ..compiler.launch import launch_with_hooks
from ..compiler.launch_states import JitLaunchState
from ..compiler import registry as _registry
from ..compiler.registry import launch_context
from .specialization import (_ANY, _DIVISIBLE, _ONE, _PLAIN, constexpr_source, describe_namespace, describe_source,
                             descriptor_args)


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

    def same_target(self, dev_key: tuple, spec_key: tuple) -> Any:
        """The kernel compiled for ``spec_key`` on another device of the same backend and arch, or None: one
        compiled kernel serves every device of its target (it is loaded once per device, ``kernel.loaded``)."""
        for k, per_device in self.items():
            if k[:2] == dev_key[:2] and k != dev_key:
                kernel = per_device.get(spec_key)
                if kernel is not None:
                    return kernel
        return None


class FastLaunch:
    """What a relaunch with known descriptors needs: the kernel, ``args(values)`` picking its runtime arguments
    out of the parameters' values, the driver's bound ``launch(kernel, grid, args)`` and that driver; ``direct``:
    the binding's direct launch (:meth:`~tritium.compiler.backend.BaseDriver.bind`; ``fn(gx, *values)``, taken for
    a ``(gx,)`` grid while no plugin implements the launch hooks) or None."""

    __slots__ = ("kernel", "args", "launch", "driver", "direct")

    def __init__(self, kernel: Any, args: Callable[[tuple], tuple], launch: Callable, driver: Any,
                 direct: Optional[Callable] = None):
        self.kernel, self.args, self.launch, self.driver, self.direct = kernel, args, launch, driver, direct


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

    The generated function is named after the kernel and has the kernel's parameters, each defaulting to "not
    given", then ``*extra, **options``: Python binds positional and keyword arguments itself (a parameter given
    twice is Python's own ``TypeError``, "kern() got multiple values for argument 'n'").  Anything else unusual
    -- a missing argument, extra positional arguments, pre-run hooks, a descriptor that cannot be computed, a
    cache miss -- calls ``fn._run`` with the arguments as bound (same errors, same behaviour as ``fn.run``).

    Per launch: each non-constexpr argument's descriptor inline (a tensor's ``data_ptr()`` read once, its
    ``get_device()`` in the key: a tensor on another device misses and the general path explains it), one dict
    lookup of the flat key, then the entry's direct launch (the binding's, from
    :meth:`~tritium.compiler.backend.BaseDriver.bind`, with the tensors' addresses) while no plugin implements the launch hooks, else :func:`tritium.compiler.launch.launch_with_hooks`."""
    params = list(fn.signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return False
    names = [p.name for p in params]
    if any(n.startswith("_tr_") or not n.isidentifier() for n in names) or not fn.__name__.isidentifier() or \
            fn.__name__ in names:
        return False
    fn.cache_key  # records used_global_vals, which the launcher checks
    ns = describe_namespace()
    ndarray = "_tr_nd" in ns
    body, key, values, spec = [], [], [], []  # spec: per parameter, the C relaunch's flags (see _speedups.c)
    for i, p in enumerate(fn.params):
        n = p.name
        if p.has_default:
            ns[f"_tr_d{i}"] = p.default
        if p.is_constexpr:
            key.append(constexpr_source(n))
            values.append(n)
            spec.append(1)
            continue
        specialize = n not in fn.do_not_specialize
        align = specialize and n not in fn.do_not_specialize_on_alignment
        body.append(describe_source(n, f"_tr_k{i}", specialize, align, ndarray, f"_tr_p{i}", f"_tr_q{i}",
                                    "_tr_ti" in ns))
        key += [f"_tr_k{i}", f"_tr_q{i}"]
        values.append(f"_tr_p{i}")
        spec.append((2 if specialize else 0) | (4 if align else 0))
    ns.update({"_tr_M": _M, "_tr_fn": fn, "_tr_KC": KernelCache, "_tr_slow": _replay(fn), "_tr_ctx": launch_context,
               "_tr_launch": launch_with_hooks, "_tr_entry": launch_entry, "_tr_pl": _plugins})
    given = f"({''.join(n + ', ' for n in names)})"
    slow = f"return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, None)"
    positional_only = [p.kind == p.POSITIONAL_ONLY for p in params]
    sig = [f"{n}=_tr_M" for n in names]
    if any(positional_only):
        sig.insert(max(i for i, po in enumerate(positional_only) if po) + 1, "/")
    lines = [f"def {fn.__name__}(_tr_grid, {''.join(a + ', ' for a in sig)}*_tr_extra, **_tr_kw):",
             "    _tr_f = _tr_fn",
             "    if _tr_extra or _tr_f.pre_run_hooks or _tr_type(_tr_f.cache) is not _tr_KC:",
             f"        {slow}",
             "    if _tr_f.debug is not None and 'debug' not in _tr_kw:",
             "        _tr_kw['debug'] = _tr_f.debug"]
    required = [p.name for p in fn.params if not p.has_default]
    if required:
        lines += [f"    if {' or '.join(n + ' is _tr_M' for n in required)}:", f"        {slow}"]
    for i, p in enumerate(fn.params):
        if p.has_default:
            lines += [f"    if {p.name} is _tr_M:", f"        {p.name} = _tr_d{i}"]
    lines += ["    if _tr_f.used_global_vals and not _tr_f._globals_unchanged():",
              "        _tr_f.check_globals()",
              "    try:"]
    lines += ["    " + ln for ln in "".join(body).splitlines()]
    # the key is flat (descriptors, tensors' devices, constexprs, options): one tuple to hash
    snap = _registry.launch_snapshot()
    if snap.environ is not None:  # launch_context() inline: the selection's key, one dict lookup
        ns.update({"_tr_R": _registry, "_tr_lcs": snap.contexts, "_tr_env": snap.environ,
                   "_tr_KT": snap.target_key, "_tr_KI": snap.interpret_key})
        lines += ["        _tr_c = _tr_lcs.get((_tr_R.forced_backend, _tr_env.get(_tr_KT), _tr_env.get(_tr_KI)))",
                  "        _tr_name, _tr_arch, _tr_drv, _tr_dev = _tr_ctx() if _tr_c is None else _tr_c"]
    else:
        lines += ["        _tr_name, _tr_arch, _tr_drv, _tr_dev = _tr_ctx()"]
    lines += [
              f"        _tr_key = (_tr_name, _tr_arch, _tr_dev(), {''.join(k + ', ' for k in key)}"
              f"_tr_tuple(_tr_kw.items()) if _tr_kw else ())",
              "        _tr_e = _tr_f.cache.fast.get(_tr_key)",
              "    except _tr_Exception:  # no descriptor for some argument: the general binder explains it",
              f"        {slow}",
              "    if _tr_e is None or _tr_e.driver is not _tr_drv:",
              f"        return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, _tr_key[3:])",
              "    if _tr_type(_tr_grid) is _tr_tuple and _tr_len(_tr_grid) == 1:",
              "        _tr_g = _tr_grid[0]",
              "        if _tr_type(_tr_g) is _tr_int and 0 <= _tr_g <= 2147483647:  # (else grid3 says what is wrong)",
              "            if _tr_g:",
              "                _tr_pm = _tr_pl._pm",
              "                if _tr_e.direct is not None and _tr_pm is not None and _tr_pm.launch_hooks is None:",
              f"                    _tr_e.direct(_tr_g, {', '.join(values)})",
              "                else:",
              f"                    _tr_launch(_tr_e.launch, _tr_e.kernel, (_tr_g, 1, 1), _tr_e.args({given}))",
              "            return _tr_e.kernel",
              f"    return _tr_entry(_tr_f, _tr_e, _tr_grid, {given}, _tr_kw)",
              ""]
    src = "\n".join(lines)
    exec(compile(src, f"<tritium launcher for {fn.__name__}>", "exec"), ns)  # noqa: S102 - our own code
    launch = ns[fn.__name__]
    launch.source = src
    # fn[grid] as partial(tritium._speedups.launch, state, grid) where the C helper is built: the plain case
    # relaunched in C, everything else handed to this function
    launch.c_state = _c_launch_state(fn, ns, names, tuple(spec), launch)
    # made before torch was imported: no inline tensor descriptors and no C relaunch (the JIT makes it again once
    # torch is there)
    launch.before_torch = "_tr_ti" not in ns and "torch" not in sys.modules
    return launch


def _c_launch_state(fn: Any, ns: dict, names: list, spec: tuple, launcher: Callable) -> Optional["JitLaunchState"]:
    """The state of :func:`tritium._speedups.launch` / ``relaunch`` for ``fn`` (the generated launcher's plain case
    in C: the same key, entry and direct launch; ``launcher`` for everything else), or None where the helper was
    not built, torch is not imported, or the environment cannot be read inline.  ``spec``: per parameter 1 for a
    constexpr, else 2 when it is specialised | 4 when its alignment is."""
    snap = _registry.launch_snapshot()
    if "_tr_ti" not in ns or snap.environ is None or len(names) > 128:
        return None
    from .. import _speedups

    if not hasattr(_speedups, "launch"):
        return None
    defaults = tuple(p.default if p.has_default else _M for p in fn.params)
    # the function's attributes read from its __dict__ where no class attribute of those names could intervene;
    # the two modules' globals from theirs
    plain = not any(hasattr(type(fn), a) for a in ("pre_run_hooks", "debug", "used_global_vals", "cache"))
    return JitLaunchState(fn, KernelCache, snap.state, snap.contexts, snap.environ,
                          snap.target_key, snap.interpret_key, vars(_plugins), ns["_tr_T"], _M, spec, defaults,
                          (_ONE, _DIVISIBLE, _PLAIN, _ANY), tuple(sys.intern(n) for n in names), launcher,
                          vars(fn) if plain else None, [None, None], {})


def _replay(fn: Any) -> Callable:
    """``slow(grid, given, extra, kwargs, key)``: ``fn._run`` with the arguments a generated launcher bound.
    ``given`` holds the parameters' values (``_M``: not given): with ``extra`` positional arguments every
    parameter was given positionally; else the given prefix goes positionally, the other given parameters by
    name (the binder treats both alike), ``kwargs`` are the options.  ``key``: the descriptor part of the fast
    key, when it could be computed (the launch then records a fast entry)."""
    names = tuple(fn.arg_names)

    def slow(grid: Any, given: tuple, extra: tuple, kwargs: dict, key: Optional[tuple]) -> Any:
        if extra:
            return fn._run((*given, *extra), kwargs, grid, key=key)
        k = 0
        while k < len(given) and given[k] is not _M:
            k += 1
        named = {n: v for n, v in zip(names[k:], given[k:]) if v is not _M}
        return fn._run(given[:k], {**named, **kwargs} if named else kwargs, grid, key=key)

    return slow


__all__ = ["KernelCache", "FastLaunch", "make_launcher", "grid3", "arg_getter", "launch_entry"]
