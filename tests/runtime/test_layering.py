"""The import layering of the core (see the module docstrings):

    tritium.errors < tritium.plugins < tritium.compiler.backend (< .gpu_driver) < .registry < .cache < .remote_cache
        < .launch < .compiler
        < tritium.runtime (specialization < binder, dependencies < launch < jit < autotuner; driver; kernel_args: errors only)

Checked on the source, every import statement included (those inside functions too): a lower module never
imports a higher one, so the compiler does not depend on the runtime and the plugins on neither."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import tritium

CORE = Path(tritium.__file__).parent

#: module -> the tritium modules (or packages) it must not import, directly or inside a function
FORBIDDEN = {
    "errors": ("tritium",),
    "plugins": ("tritium.compiler", "tritium.runtime", "tritium.language", "tritium.frontend"),
    "compiler.backend": ("tritium.compiler.registry", "tritium.compiler.cache", "tritium.compiler.launch",
                         "tritium.compiler.compiler", "tritium.runtime", "tritium.plugins"),
    "compiler.registry": ("tritium.compiler.cache", "tritium.compiler.launch", "tritium.compiler.compiler",
                          "tritium.runtime"),
    "compiler.cache": ("tritium.compiler.registry", "tritium.compiler.launch", "tritium.compiler.compiler",
                       "tritium.runtime"),
    "compiler.remote_cache": ("tritium.compiler.registry", "tritium.compiler.launch", "tritium.compiler.compiler",
                              "tritium.runtime"),
    "compiler.gpu_driver": ("tritium.compiler.registry", "tritium.compiler.cache", "tritium.compiler.launch",
                            "tritium.compiler.compiler", "tritium.runtime", "tritium.plugins"),
    "runtime.kernel_args": ("tritium.compiler", "tritium.runtime.binder", "tritium.runtime.launch",
                            "tritium.runtime.jit", "tritium.runtime.autotuner", "tritium.runtime.driver"),
    "compiler.launch": ("tritium.compiler.cache", "tritium.compiler.compiler", "tritium.runtime"),
    "compiler.compiler": ("tritium.runtime",),
    "compiler": ("tritium.runtime",),  # the package's __init__
    "runtime.specialization": ("tritium.runtime.binder", "tritium.runtime.launch", "tritium.runtime.jit",
                               "tritium.runtime.autotuner", "tritium.runtime.driver"),
    "runtime.binder": ("tritium.runtime.launch", "tritium.runtime.jit", "tritium.runtime.autotuner"),
    "runtime.launch": ("tritium.runtime.jit", "tritium.runtime.autotuner"),
}


def module_path(name: str) -> Path:
    p = CORE.joinpath(*name.split("."))
    return p / "__init__.py" if p.is_dir() else p.with_suffix(".py")


def imported(name: str) -> set:
    """Every module ``tritium.<name>`` imports (absolute names; ``from . import x`` counts as ``pkg.x``)."""
    path = module_path(name)
    pkg = f"tritium.{name}" if path.name == "__init__.py" else f"tritium.{name}".rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_no_upward_imports(name):
    bad = sorted(m for m in imported(name) for f in FORBIDDEN[name]
                 if (m == f or m.startswith(f + ".")) and not m.startswith(f"tritium.{name}"))
    assert not bad, f"tritium.{name} imports {bad}, above it in the layering"


def test_compiler_layer_imports_without_the_runtime():
    """Importing the compiler's modules by themselves (the package ``tritium`` stubbed to an empty namespace, so
    that its ``__init__`` -- which exports ``jit`` -- does not run) loads nothing of ``tritium.runtime``."""
    code = f"""
import sys, types
pkg = types.ModuleType("tritium"); pkg.__path__ = [{str(CORE)!r}]
sys.modules["tritium"] = pkg
import tritium.compiler.compiler, tritium.compiler.registry, tritium.compiler.launch, tritium.plugins
tritium.compiler.registry.backends()
bad = sorted(m for m in sys.modules if m.startswith("tritium.runtime"))
assert not bad, bad
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
