"""The import layering of the core (see the module docstrings and docs/ARCHITECTURE.md):

    the base (errors, _env, target, _constexpr_fn, source, plugins) < dialects < language < frontend < passes
        < lowering < compiler < runtime < tools < the package's top (tritium/__init__, cli, knobs, testing, ...)

and, inside the compiler and the runtime:

    tritium.compiler.backend (< .gpu_driver) < .registry < .cache < .remote_cache < .launch < .compiler
    tritium.runtime: specialization < binder < launch < jit < autotuner; driver; kernel_args: errors only

Checked on the source, every import statement included (those inside functions too): a lower module never
imports a higher one, the core never imports a backend package (backends are plugins: the core reaches them
through hooks), and no modules import each other in a circle, in the core or in the backends, but the language's
own (``core`` <-> ``semantic``, as in Triton; ``functions`` holds what Triton keeps in ``core``)."""
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


def _statements(path: Path, pkg: str):
    """Each import statement of ``path`` (a module of package ``pkg``), those inside functions too, as
    ``(module, None)`` for ``import module`` or ``(absolute base, [names])`` for ``from base import names``."""
    for node in ast.walk(ast.parse(path.read_text() if path.suffix == ".py" else "")):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            yield base, [a.name for a in node.names]


def imported(name: str) -> set:
    """Every module ``tritium.<name>`` imports (absolute names; ``from . import x`` counts as ``pkg.x``)."""
    path = module_path(name)
    pkg = f"tritium.{name}" if path.name == "__init__.py" else f"tritium.{name}".rpartition(".")[0]
    out = set()
    for base, names in _statements(path, pkg):
        out.add(base)
        out.update(f"{base}.{n}" for n in names or ())
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


# ------------------------------------------------------------------------------------- the whole chain
BACKENDS = CORE.parents[1] / "backends"

#: the core's layers, bottom first: a module of one layer imports only modules of its own layer or below
LAYERS = [("errors", "_env", "_version", "_speedups", "target", "_constexpr_fn", "source", "plugins"), ("dialects",),
          ("language",), ("frontend",), ("passes",), ("lowering",), ("compiler",), ("runtime",), ("tools",)]

#: the one circle allowed: the language's own (Triton's ``core`` <-> ``semantic``; ``functions`` is the part of
#: Triton's core.py tritium keeps apart, ``semantic_*`` the parts of its semantic.py)
ALLOWED_CIRCLES = [{"tritium.language.core", "tritium.language.functions", "tritium.language.semantic",
                    "tritium.language.semantic_core", "tritium.language.semantic_memory",
                    "tritium.language.semantic_dot"}]


def _all_modules() -> dict:
    """``{dotted name: path}`` of every module of the core and of the backend packages in this tree."""
    roots = {"tritium": CORE}
    if BACKENDS.is_dir():
        for b in BACKENDS.iterdir():
            for p in b.glob("tritium_*/__init__.py"):
                roots[p.parent.name] = p.parent
    mods = {}
    for top, root in roots.items():
        for f in [*root.rglob("*.py"), *root.rglob("*.c")]:  # .c: a C extension's module, which imports nothing
            parts = [top, *f.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


def _graph(mods: dict) -> dict:
    """``{module: the modules of ``mods`` it imports}`` (``from . import x``: the submodule x, not the package)."""
    graph = {}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out = set()
        for base, names in _statements(path, pkg):
            if names is None:
                out.add(base)
                continue
            subs = [f"{base}.{n}" for n in names]
            out.update(x for x in subs if x in mods)
            if not all(x in mods for x in subs):
                out.add(base)
        resolved = set()
        for m in out:
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and m != name:
                resolved.add(m)
        graph[name] = resolved
    return graph


def _layer(name: str):
    parts = name.split(".")
    if parts[0] != "tritium" or len(parts) == 1:
        return None
    for i, group in enumerate(LAYERS):
        if parts[1] in group:
            return i
    return len(LAYERS)  # the package's top: __init__, cli, knobs, testing, triton_alias, ...


def test_the_layer_chain():
    graph = _graph(_all_modules())
    bad = sorted(f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})" for m, deps in graph.items()
                 for d in deps if _layer(m) is not None and _layer(d) is not None and _layer(d) > _layer(m))
    assert not bad, "imports up the layering:\n" + "\n".join(bad)


def test_the_core_never_imports_a_backend_package():
    graph = _graph(_all_modules())
    bad = sorted(f"{m} imports {d}" for m, deps in graph.items() if m.startswith("tritium.") or m == "tritium"
                 for d in deps if not d.startswith("tritium.") and d != "tritium")
    assert not bad, bad


def test_no_import_circles_but_the_languages_own():
    graph = _graph(_all_modules())
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(comp)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10000))
    try:
        for v in list(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)
    bad = [sorted(c) for c in circles if c not in ALLOWED_CIRCLES]
    assert not bad, f"import circles: {bad}"
