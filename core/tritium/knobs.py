"""``triton.knobs``: Triton 3.6's settings object, over the environment variables tritium reads.

Each knob stands for one environment variable: reading it reads the variable now (its default where unset),
setting it sets the variable for this process (``None`` unsets it), so a knob and its variable never disagree
and every part of tritium that reads the variable sees the knob.  Only knobs tritium acts on are here; any
other Triton knob is an ``AttributeError`` that says so, never a setting silently ignored.

=============================  ==============================================================
knob                           environment variable (tritium's own, or Triton's it honours)
=============================  ==============================================================
runtime.interpret              TRITON_INTERPRET (the interpreter backend)
runtime.override_arch          TRITON_OVERRIDE_ARCH (compile for that arch: ``sm80``, ``gfx942``)
cache.dir                      TRITIUM_CACHE_DIR
compilation.always_compile     TRITIUM_DISABLE_CACHE (the file cache bypassed)
compilation.dump_ir            TRITON_KERNEL_DUMP (the irdump plugin), with cache.dump_dir
compilation.override           TRITON_KERNEL_OVERRIDE, with cache.override_dir
autotuning.cache / .print      TRITON_CACHE_AUTOTUNING / TRITON_PRINT_AUTOTUNING
language.default_fp_fusion     TRITON_DEFAULT_FP_FUSION (enable_fp_fusion's default)
nvidia.ptxas / .libdevice_path TRITIUM_PTXAS_PATH / TRITIUM_LIBDEVICE_PATH (``ptxas.path``, ``ptxas.version``)
=============================  ==============================================================

Hooks (process settings, no variable): ``runtime.launch_enter_hook`` / ``launch_exit_hook`` (called by
``CompiledKernel.run``, Triton's launcher entry point, with the kernel's ``launch_metadata``; tritium's own
launches call the plugins' ``tritium_launch_enter`` / ``_exit`` hooks instead), ``runtime.jit_post_compile_hook``
and ``runtime.jit_cache_hook`` (kept for code that saves and restores them; tritium does not call them).
"""
from __future__ import annotations

import os
import re
import subprocess
import contextlib
from typing import Any, Dict, Optional

from ._env import is_true

#: Triton's switch for "a knob set in Python also sets its environment variable"; tritium's knobs are their
#: variables, so it is always so (kept for code, e.g. Triton's test fixtures, that saves and restores it)
propagate_env = True


#: variable -> its value (None: unset) before a knob first set it in this process: what ``reset()`` restores
_SET_FROM: dict = {}


def _put_env(var: str, value: Optional[str]) -> None:
    """Set ``var`` to ``value``; None unsets it."""
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value


class _Env:
    """A knob: environment variable ``var``, parsed by ``kind`` ("bool", "str"), ``default`` where unset."""

    def __init__(self, var: str, kind: str = "bool", default: Any = None):
        self.var, self.kind, self.default = var, kind, default

    @property
    def key(self) -> str:
        """The environment variable (Triton's ``env_base.key``)."""
        return self.var

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        v = os.environ.get(self.var)
        if v is None:
            return self.default() if callable(self.default) else self.default
        if self.kind == "bool":
            return is_true(v)
        return v

    def __set__(self, obj, value):
        _SET_FROM.setdefault(self.var, os.environ.get(self.var))  # what reset() puts back
        if value is None:
            os.environ.pop(self.var, None)
        elif self.kind == "bool":
            os.environ[self.var] = "1" if value else "0"
        else:
            os.environ[self.var] = str(value)


class base_knobs:
    """A group of knobs (``knobs.runtime``, ...): unknown names are refused by name.  As Triton's ``base_knobs``:
    ``knob_descriptors`` (the knobs backed by a variable), ``copy()``, ``reset()`` and ``scope()`` (what is set
    inside is undone on leaving), which Triton's own test fixtures use."""

    _group = ""

    @property
    def knob_descriptors(self) -> Dict[str, _Env]:
        return {name: d for klass in reversed(type(self).__mro__) for name, d in vars(klass).items()
                if isinstance(d, _Env)}

    def copy(self) -> "base_knobs":
        """A group of the same knobs: the variables are the process's, the hooks are copied."""
        new = type(self)()
        new.__dict__.update(self.__dict__)
        return new

    def reset(self) -> "base_knobs":
        """Every knob as if never set in Python (Triton's: back to the environment's value or the default): the
        variables a knob set get their earlier values back, the hooks are None."""
        for d in self.knob_descriptors.values():
            if d.var in _SET_FROM:
                _put_env(d.var, _SET_FROM.pop(d.var))
        self.__dict__.clear()
        return self

    @contextlib.contextmanager
    def scope(self):
        env = {d.var: os.environ.get(d.var) for d in self.knob_descriptors.values()}
        hooks = dict(self.__dict__)
        try:
            yield self
        finally:
            for var, v in env.items():
                _put_env(var, v)
            self.__dict__.clear()
            self.__dict__.update(hooks)

    def __getattr__(self, name):
        raise AttributeError(f"triton.knobs.{self._group}.{name} has no counterpart in tritium")

    def __setattr__(self, name, value):
        knob = getattr(type(self), name, None)
        if not isinstance(knob, (_Env, _Hook)) and not (isinstance(knob, property) and knob.fset is not None):
            raise AttributeError(f"triton.knobs.{self._group}.{name} has no counterpart in tritium")
        super().__setattr__(name, value)


class _Hook:
    """A knob holding a Python callable (or None) for this process."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else obj.__dict__.get(self.name)

    def __set__(self, obj, value):
        if value is not None and not callable(value):
            raise TypeError(f"triton.knobs.{obj._group}.{self.name} must be callable or None, got {value!r}")
        obj.__dict__[self.name] = value


class NvidiaTool:
    """``knobs.nvidia.ptxas``: the tool's path and its version string (as ``ptxas --version`` says it)."""

    def __init__(self, path: Optional[str]):
        self.path = path

    @property
    def version(self) -> str:
        if not self.path:
            raise RuntimeError("ptxas not found: pip install 'tritium[nvidia]' or set TRITIUM_PTXAS_PATH")
        out = subprocess.run([self.path, "--version"], capture_output=True, text=True, check=True).stdout
        m = re.search(r"release (\d+\.\d+)", out)
        return m.group(1) if m else out.strip()


def _ptxas():
    """The cuda backend's ptxas (None without the nvidia extra: ``.path`` is None, ``.version`` says how to get it)."""
    from .compiler.registry import get_compiler
    from .errors import BackendUnavailable

    try:
        return NvidiaTool(get_compiler("cuda").tool_path("ptxas"))
    except BackendUnavailable:
        return NvidiaTool(None)


class runtime_knobs(base_knobs):
    _group = "runtime"
    interpret = _Env("TRITON_INTERPRET")
    override_arch = _Env("TRITON_OVERRIDE_ARCH", "str")
    launch_enter_hook = _Hook()
    launch_exit_hook = _Hook()
    jit_post_compile_hook = _Hook()
    jit_cache_hook = _Hook()


class cache_knobs(base_knobs):
    _group = "cache"
    dir = _Env("TRITIUM_CACHE_DIR", "str", lambda: os.path.expanduser("~/.tritium/cache"))
    dump_dir = _Env("TRITON_DUMP_DIR", "str")
    override_dir = _Env("TRITON_OVERRIDE_DIR", "str")


class compilation_knobs(base_knobs):
    _group = "compilation"
    always_compile = _Env("TRITIUM_DISABLE_CACHE")
    dump_ir = _Env("TRITON_KERNEL_DUMP")
    override = _Env("TRITON_KERNEL_OVERRIDE")


class autotuning_knobs(base_knobs):
    _group = "autotuning"
    cache = _Env("TRITON_CACHE_AUTOTUNING")
    print = _Env("TRITON_PRINT_AUTOTUNING")


class language_knobs(base_knobs):
    _group = "language"
    default_fp_fusion = _Env("TRITON_DEFAULT_FP_FUSION", "bool", True)


class nvidia_knobs(base_knobs):
    _group = "nvidia"
    libdevice_path = _Env("TRITIUM_LIBDEVICE_PATH", "str")

    @property
    def ptxas(self) -> NvidiaTool:
        p = os.environ.get("TRITIUM_PTXAS_PATH")
        return NvidiaTool(p) if p else _ptxas()

    @ptxas.setter
    def ptxas(self, path):
        os.environ["TRITIUM_PTXAS_PATH"] = getattr(path, "path", path)


runtime = runtime_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
