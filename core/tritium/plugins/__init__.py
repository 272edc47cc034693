"""tritium's plugin system: pluggy hook specs and the plugin manager.

A plugin is an ordinary Python package that declares an entry point in the group ``tritium``::

    [project.entry-points.tritium]
    mybackend = "tritium_mybackend.plugin"

The module (or object) the entry point names holds functions decorated with :data:`hookimpl`, named like
the specs below.  First-party backends (interpreter, nvidia, amd) register exactly this way.

Entry points are loaded once, lazily, the first time :func:`get_plugin_manager` is called.  A plugin that
fails to import, or implements a hook no spec names (a misspelling), never breaks ``import tritium``: it is
listed by :func:`unavailable_plugins` with its error.  Registering such a plugin programmatically
(:func:`register`) raises :class:`tritium.errors.PluginError`.

Layering: this package imports nothing of tritium but :mod:`tritium.errors`; the layers above it learn of
plugin changes through :func:`on_backends_change` and read :attr:`PluginManager.launch_hooks`.
"""
from __future__ import annotations

import importlib.util
import threading
import traceback
from typing import Any, Callable, Optional

import pluggy

from ..errors import PluginError

PROJECT = "tritium"
ENTRY_POINT_GROUP = "tritium"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


def missing_modules(*modules: str, pip: str) -> Optional[str]:
    """For a backend's ``missing``: None when every module is importable (probed with ``find_spec``, nothing
    is imported), else ``pip``, the command that installs them."""
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                return pip
        except (ImportError, ValueError):  # a parent package is absent, or a half-installed one
            return pip
    return None


class TritiumHookSpecs:
    """The hooks tritium calls.  Every hook is optional for a plugin."""

    @hookspec
    def tritium_backends(self) -> list:
        """Return the :class:`tritium.compiler.backend.Backend` objects this plugin provides.

        Creating a ``Backend`` must be cheap and must not import the backend's heavy dependencies: set
        ``missing`` to the pip command that installs them when they are absent (use
        ``importlib.util.find_spec``), and defer real work to ``make_compiler`` / ``make_driver``.
        """

    @hookspec
    def tritium_add_stages(self, stages: dict, options: Any, backend_name: str) -> None:
        """Amend the compile pipeline after the backend filled it.

        ``stages`` is the ordered dict ``name -> fn(src, metadata)`` built by the backend's
        ``add_stages``; a plugin may insert, wrap, replace or remove entries (in place).
        """

    @hookspec
    def tritium_stage_output(self, kernel_name: str, stage: str, output: Any, metadata: dict) -> None:
        """Observe the output of each compile stage (text ``str`` or ``bytes``), e.g. to dump IR.

        ``metadata`` is the compile's metadata so far (``metadata["hash"]`` is the compile key's hash); it is
        the live dict: read it, don't change it.  Implementations may omit the ``metadata`` parameter.
        """

    @hookspec(firstresult=True)
    def tritium_override_stage(self, kernel_name: str, stage: str, output: Any, metadata: dict) -> Any:
        """Return a substitute for a stage's ``output`` (same kind: ``str`` or ``bytes``), or ``None`` to keep it.

        Called after each stage ran, before ``tritium_stage_output`` and before the next stage sees the output
        (like Triton's ``TRITON_KERNEL_OVERRIDE``).  The first non-``None`` result wins.  ``compile()`` then
        appends the stage's name to ``metadata["overridden"]``: such a kernel no longer matches its compile key,
        so a file cache must not store it.
        """

    @hookspec(firstresult=True)
    def tritium_bypass_cache(self) -> Optional[str]:
        """Return a reason (text) to bypass the on-disk kernel cache for now, or ``None``.

        A file cache asks this before loading or storing: e.g. while stage overrides are active a cached
        kernel would hide them (the ``irdump`` plugin answers while ``TRITIUM_OVERRIDE_DIR`` is set).
        """

    @hookspec
    def tritium_remote_cache_store(self, url: str, timeout: float) -> Any:
        """Return a :class:`tritium.compiler.remote_cache.RemoteStore` for ``url`` (``TRITIUM_REMOTE_CACHE``) when
        this plugin knows its scheme (an S3-compatible store, ...), else ``None``; ``timeout`` bounds each call
        the store makes.  ``redis://`` and ``file://`` are tritium's own."""

    @hookspec
    def tritium_launch_enter(self, kernel: Any, grid: tuple, args: list) -> None:
        """Called right before a compiled kernel is launched (``grid`` is a 3-tuple)."""

    @hookspec
    def tritium_launch_exit(self, kernel: Any) -> None:
        """Called right after a compiled kernel's launch returned."""


_lock = threading.RLock()
_pm: Optional["PluginManager"] = None
_unavailable: dict = {}
_unavailable_tb: dict = {}
_backend_listeners: list = []


class PluginManager(pluggy.PluginManager):
    """pluggy's plugin manager, checking every registration and keeping what the launch path reads.

    * :meth:`register` runs ``check_pending()``: a hook implementation whose name matches no spec (a
      misspelled ``tritium_lanch_enter``) unregisters the plugin again and raises :class:`PluginError`
      naming the plugin and the hook;
    * ``launch_hooks``: ``(enter, exit)`` hook callers while some plugin implements ``tritium_launch_enter`` or
      ``tritium_launch_exit``, else None -- recomputed on every (un)registration, so a launch reads one
      attribute (:func:`tritium.compiler.launch.launch_with_hooks`);
    * a change of the plugins implementing ``tritium_backends`` calls the :func:`on_backends_change` listeners.
    """

    def __init__(self):
        super().__init__(PROJECT)
        self.add_hookspecs(TritiumHookSpecs)
        self.launch_hooks: Optional[tuple] = None

    def register(self, plugin: Any, name: Optional[str] = None) -> Optional[str]:
        n_backends = len(self.hook.tritium_backends.get_hookimpls())
        out = super().register(plugin, name=name)
        try:
            self.check_pending()
        except pluggy.PluginValidationError:
            shown = name or self.get_name(plugin) or repr(plugin)
            unknown = self._unknown_hooks(plugin)
            self.unregister(plugin)
            raise PluginError(f"plugin '{shown}' implements {_describe_unknown(unknown)}") from None
        self._changed(n_backends)
        return out

    def unregister(self, plugin: Any = None, name: Optional[str] = None) -> Any:
        n_backends = len(self.hook.tritium_backends.get_hookimpls())
        out = super().unregister(plugin=plugin, name=name)
        self._changed(n_backends)
        return out

    def _unknown_hooks(self, plugin: Any) -> list:
        """The names of ``plugin``'s hook implementations that match no hook spec."""
        return sorted(n for n, caller in vars(self.hook).items() if not n.startswith("_") and not caller.has_spec()
                      and any(impl.plugin is plugin for impl in caller.get_hookimpls()))

    def _changed(self, n_backends: int) -> None:
        enter, leave = self.hook.tritium_launch_enter, self.hook.tritium_launch_exit
        self.launch_hooks = (enter, leave) if enter.get_hookimpls() or leave.get_hookimpls() else None
        # a manager still loading its entry points (not published yet) has no one to tell
        if self is _pm and len(self.hook.tritium_backends.get_hookimpls()) != n_backends:
            _notify_backend_listeners()


def _describe_unknown(names: list) -> str:
    """``unknown hook 'tritium_lanch_enter' (did you mean 'tritium_launch_enter'?)``, for each name."""
    import difflib

    specs = [n for n in vars(TritiumHookSpecs) if n.startswith("tritium_")]
    parts = []
    for n in names:
        close = difflib.get_close_matches(n, specs, n=1)
        parts.append(f"unknown hook '{n}'" + (f" (did you mean '{close[0]}'?)" if close else
                                               f" (the tritium hooks: {', '.join(specs)})"))
    return ", ".join(parts) or "a hook that matches no tritium hook spec"


def _notify_backend_listeners() -> None:
    for fn in list(_backend_listeners):
        fn()


def on_backends_change(callback: Callable[[], None]) -> None:
    """Call ``callback()`` whenever the backends plugins provide may have changed: a plugin implementing
    ``tritium_backends`` is (un)registered, or the plugin manager is reset.  The backend registry
    (:mod:`tritium.compiler.registry`) forgets its discovered backends this way; this module imports nothing
    of tritium but its errors."""
    _backend_listeners.append(callback)


def _entry_points():
    try:
        from importlib.metadata import entry_points
    except ImportError:  # pragma: no cover
        from importlib_metadata import entry_points  # type: ignore
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:  # pragma: no cover - very old importlib.metadata
        eps = entry_points().get(ENTRY_POINT_GROUP, [])
    # one entry per name: a distribution installed twice (editable + --target) must not register twice
    seen, out = set(), []
    for ep in eps:
        if ep.name in seen:
            continue
        seen.add(ep.name)
        out.append(ep)
    return out


def _load_entry_points(pm: PluginManager) -> None:
    """Register every entry point of the group; one that fails to import or to register (a misspelled hook:
    :class:`PluginError`) is listed by :func:`unavailable_plugins` with its error instead."""
    for ep in _entry_points():
        try:
            plugin = ep.load()
        except Exception as e:  # noqa: BLE001 - any failure makes the plugin unavailable, never fatal
            _unavailable[ep.name] = f"{type(e).__name__}: {e}"
            _unavailable_tb[ep.name] = traceback.format_exc()
            continue
        if pm.is_registered(plugin) or pm.has_plugin(ep.name):
            continue
        try:
            pm.register(plugin, name=ep.name)
        except (PluginError, pluggy.PluginValidationError, ValueError) as e:
            _unavailable[ep.name] = f"{type(e).__name__}: {e}"


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager; entry points of group ``tritium`` are loaded on first call."""
    global _pm
    if _pm is not None:
        return _pm
    with _lock:
        if _pm is None:
            pm = PluginManager()
            _load_entry_points(pm)
            _pm = pm
    return _pm


def register(plugin: Any, name: Optional[str] = None) -> Optional[str]:
    """Register a plugin object (module or instance with hookimpls) programmatically; :class:`PluginError` if
    one of its hook implementations matches no hook spec."""
    return get_plugin_manager().register(plugin, name=name)


def unregister(plugin: Any = None, name: Optional[str] = None) -> Any:
    """Undo :func:`register`."""
    return get_plugin_manager().unregister(plugin=plugin, name=name)


def unavailable_plugins() -> dict:
    """``{entry point name: error}`` for the plugins that failed to load."""
    get_plugin_manager()
    return dict(_unavailable)


def reset() -> None:
    """Forget the plugin manager (tests): the next call reloads entry points."""
    global _pm
    with _lock:
        _pm = None
        _unavailable.clear()
        _unavailable_tb.clear()
    _notify_backend_listeners()


def hook():
    """Shortcut for ``get_plugin_manager().hook``."""
    return get_plugin_manager().hook


def launch_hooks() -> Optional[tuple]:
    """``(enter, exit)`` hook callers when some plugin implements ``tritium_launch_enter`` / ``_exit``, else
    None (see :class:`PluginManager`)."""
    return get_plugin_manager().launch_hooks


def cache_bypass_reason() -> Optional[str]:
    """Why the on-disk kernel cache must be bypassed now (a plugin's ``tritium_bypass_cache``), or ``None``."""
    return get_plugin_manager().hook.tritium_bypass_cache()


__all__ = ["hookspec", "hookimpl", "TritiumHookSpecs", "PluginManager", "get_plugin_manager", "register",
           "unregister", "unavailable_plugins", "reset", "hook", "launch_hooks", "on_backends_change",
           "cache_bypass_reason", "missing_modules", "PROJECT", "ENTRY_POINT_GROUP"]
