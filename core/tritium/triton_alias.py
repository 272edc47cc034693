"""``import triton`` resolving to tritium, the way ``pymysql.install_as_MySQLdb()`` stands in for MySQLdb.

:func:`install_as_triton` puts a finder first on ``sys.meta_path``: ``triton`` becomes a module that forwards every
attribute to :mod:`tritium` and reports the Triton release whose API tritium provides (:data:`TRITON_VERSION`, for
code that checks ``triton.__version__``); ``triton.X.Y`` is tritium's own module ``tritium.X.Y`` (the same object,
so ``triton.language.float32 is tritium.language.float32``), or the module :data:`RENAMED` names where tritium keeps
it elsewhere.  A ``triton.*`` module tritium has no counterpart for is not found (``ModuleNotFoundError``), as for
any missing module; the real Triton is never imported while the alias is installed.

:func:`uninstall_as_triton` removes the finder and forgets the ``triton`` modules it gave out.

Processes the program starts (torch's Inductor compiles kernels in worker processes) inherit the alias:
:func:`install_as_triton` sets ``TRITIUM_AS_TRITON=1`` in the environment, and the ``tritium-as-triton.pth``
start-up hook the package installs (:mod:`tritium._autoalias`) installs the alias in any Python process that starts
with it set -- which is also how an unchanged program or ``pytest`` run gets it: ``TRITIUM_AS_TRITON=1 python
prog.py``.  :func:`uninstall_as_triton` removes the variable again.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

#: the Triton release whose language and API tritium provides (what ``triton.__version__`` says under the alias)
TRITON_VERSION = "3.6.0"

#: the environment variable that makes every Python process of the environment stand tritium in for triton
ENV = "TRITIUM_AS_TRITON"

#: Triton module names whose content tritium keeps in another module
RENAMED = {
    "triton.runtime.errors": "tritium.errors",
    "triton.compiler.errors": "tritium.errors",
}


def _tritium_name(name: str) -> str:
    return RENAMED.get(name) or "tritium" + name[len("triton"):]


def _tritium() -> types.ModuleType:
    """The ``tritium`` package (imported already: this module is one of its submodules)."""
    return sys.modules[__package__]


class _TritonModule(types.ModuleType):
    """``triton`` itself: tritium's attributes, Triton's version."""

    def __getattr__(self, attr):
        tritium = _tritium()
        try:
            return getattr(tritium, attr)
        except AttributeError:
            if attr.startswith("__"):
                raise
        try:  # a submodule not imported yet (Triton's __init__ imports triton.backends, which code then uses)
            return importlib.import_module(f"triton.{attr}")
        except ImportError:
            raise AttributeError(f"module 'triton' has no attribute {attr!r}: tritium, standing in for Triton "
                                 f"{TRITON_VERSION}, does not provide triton.{attr}") from None

    def __dir__(self):
        tritium = _tritium()
        return sorted(set(dir(tritium)) | set(self.__dict__))


class TritonAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``triton`` and ``triton.*`` as tritium's modules."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton" and not name.startswith("triton."):
            return None
        if name == "triton":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        real = _tritium_name(name)
        try:
            found = importlib.util.find_spec(real)
        except (ImportError, ValueError):
            found = None
        if found is None:  # an ImportError, as for any missing module (code probes optional parts so)
            raise ModuleNotFoundError(f"No module named '{name}': tritium, standing in for Triton {TRITON_VERSION}, "
                                      f"does not provide it", name=name)
        spec = importlib.machinery.ModuleSpec(name, self, is_package=found.submodule_search_locations is not None)
        spec.loader_state = real
        return spec

    def create_module(self, spec):
        if spec.name == "triton":
            from .compiler import prewarm

            tritium = _tritium()

            prewarm.start()  # code that imports triton compiles later: the compiler's imports start now

            mod = _TritonModule("triton", tritium.__doc__)
            mod.__version__ = TRITON_VERSION
            mod.__path__ = []
            mod.__tritium__ = tritium
            return mod
        mod = importlib.import_module(spec.loader_state)
        spec.tritium_spec = mod.__spec__  # the import system replaces it with this spec: see exec_module
        return mod

    def exec_module(self, module):
        # the import system has set the tritium module's __spec__ to this ``triton.*`` spec: give it its own back,
        # or every relative import in it that runs later (inside functions) warns "ImportWarning: __package__ !=
        # __spec__.parent" (its __package__ stays tritium's) -- thousands of warnings in a test suite
        own = getattr(module.__spec__, "tritium_spec", None)
        if own is not None:
            module.__spec__ = own


_FINDER: TritonAliasFinder | None = None


def install_as_triton() -> None:
    """Make ``import triton`` (and every ``triton.*`` module tritium has) resolve to tritium, for this process.

    Call it before anything imports ``triton``; a real Triton already imported is an error (its kernels and
    tritium's would mix).  Idempotent."""
    global _FINDER
    cur = sys.modules.get("triton")
    if cur is not None and getattr(cur, "__tritium__", None) is None:
        raise ImportError(f"tritium.install_as_triton(): the real Triton is already imported "
                          f"({getattr(cur, '__file__', cur)}); call it before anything imports triton")
    if _FINDER is None:
        _FINDER = TritonAliasFinder()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    os.environ[ENV] = "1"  # worker processes (Inductor's compile workers) stand in too: tritium/_autoalias.py


def uninstall_as_triton() -> None:
    """Undo :func:`install_as_triton`: ``import triton`` finds the real Triton again (if installed)."""
    global _FINDER
    if _FINDER is not None and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    os.environ.pop(ENV, None)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        mod = sys.modules[name]
        if isinstance(mod, _TritonModule) or getattr(mod, "__name__", "").startswith("tritium"):
            del sys.modules[name]


def installed() -> bool:
    """Whether ``import triton`` resolves to tritium in this process."""
    return _FINDER is not None and _FINDER in sys.meta_path
