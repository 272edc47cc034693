"""What a ``@jit`` kernel's code depends on besides its arguments: its source, the ``@jit`` functions it calls
(transitively) and the global scalar / constexpr values they read.

:func:`cache_key` hashes them (``JITFunction.cache_key``); like Triton, the globals read are recorded as
:class:`UsedGlobal` entries and every launch checks that they still hold their compile-time values
(:func:`globals_check`, :func:`check_globals`).  Names are resolved as the frontend resolves them: closure
cells, then module globals.
"""
from __future__ import annotations

import ast
import hashlib
import types
from typing import Any, Callable, NamedTuple


MISSING = object()  # what a getter returns for a global that no longer exists

#: modules whose attributes are the language / libraries, not user constants
_LIB_MODULES = ("tritium", "triton", "math", "numpy", "builtins", "torch")


class UsedGlobal(NamedTuple):
    """A global value a kernel (or a callee) read at compile time."""

    label: str  # as written in the source: ``LIMIT``, ``cfg.BLOCK``
    value: Any  # the value the kernel was compiled with
    get: Callable[[], Any]  # its current value (``MISSING`` once deleted)


def is_constexpr_value(v: Any) -> bool:
    """A ``tl.constexpr`` (or a tl dtype / pointer / block type) passed as an argument or read as a global: a
    constexpr (told by its class's name and module, so nothing here imports the language)."""
    cls = type(v)
    return cls.__name__ in ("constexpr", "dtype", "pointer_type", "block_type") and \
        cls.__module__.startswith(("tritium.language", "triton.language"))


#: the ``@jit`` function classes (:class:`tritium.source.function.JITCallable`, which registers itself when it is
#: defined: that module imports this one)
jit_types: tuple = ()


def _is_jit(v: Any) -> bool:
    return isinstance(v, jit_types)


def cache_key(fn: Any) -> tuple:
    """``(key, used, files)``: the sha256 hex key of ``fn``'s code (source, flags, file name -- no absolute paths
    --, the ``@jit`` functions it calls and the globals they read), the :class:`UsedGlobal` list, and the
    source files: those of ``fn`` and of the ``@jit`` functions it calls or references, transitively, each once,
    ``fn``'s first, then depth first by label (the files a compiled kernel's source locations name), found on the
    same walk so that each function's AST is scanned once."""
    used: list = []
    files: list = []
    return _key(fn, {}, used, files), used, files


def _key(fn: Any, seen: dict, used: list, files: list) -> str:
    if id(fn) in seen:  # recursion: the key of a function being hashed is its name
        return f"<recursive {fn.__qualname__}>"
    seen[id(fn)] = fn
    if fn.file not in files:
        files.append(fn.file)
    deps, own = scan(fn)
    h = hashlib.sha256(fn.src.encode())
    h.update(repr((fn.noinline, fn.debug, fn.starting_line_number,
                   fn.file.replace("\\", "/").rsplit("/", 1)[-1])).encode())
    for g in own:
        h.update(f"\0{g.label}={type(g.value).__name__}:{g.value!r}".encode())
    used.extend(own)
    for label, dep in deps:
        h.update(f"\0{label}:{_key(dep, seen, used, files)}".encode())
    return h.hexdigest()


def same_value(a: Any, b: Any) -> bool:
    """Whether a global's current value ``a`` equals its compile-time value ``b`` (same type, ``==``)."""
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a value that cannot be compared counts as changed (the launch says so)
        return False


def check_globals(name: str, used: list) -> None:
    """Raise ``RuntimeError`` if one of the globals ``used`` by kernel ``name`` has changed."""
    for g in used:
        new = g.get()
        if new is not g.value and not same_value(new, g.value):
            shown = "<deleted>" if new is MISSING else repr(new)
            raise RuntimeError(f"Global variable {g.label} has changed since kernel '{name}' was "
                               f"compiled, from {g.value!r} to {shown}: make it a tl.constexpr argument, or do "
                               f"not modify it after the first launch")


def globals_check(name: str, used: list) -> Callable[[], bool]:
    """A generated ``() -> bool``: True when every global in ``used`` is still the very object the kernel was
    compiled with (one expression per launch); anything else goes through :func:`check_globals`."""
    ns = {f"_g{i}": g.get for i, g in enumerate(used)}
    ns.update({f"_v{i}": g.value for i, g in enumerate(used)})
    expr = " and ".join(f"_g{i}() is _v{i}" for i in range(len(used))) or "True"
    return eval(compile(f"lambda: {expr}", f"<tritium globals check for {name}>", "eval"), ns)  # noqa: S307


def _is_simple_global(v: Any) -> bool:
    """A value the frontend reads from a global as a compile-time constant (``_check_global`` in codegen)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, tuple):
        return all(_is_simple_global(x) for x in v)
    return is_constexpr_value(v)


def _local_names(fdef: ast.AST) -> set:
    names = set()
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
        names.add(arg.arg)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
    return names


def scan(fn: Any) -> tuple:
    """``(deps, used)`` of ``fn``: ``deps`` = ``[(label, JITFunction)]`` it calls or references, ``used`` = the
    :class:`UsedGlobal` scalar / constexpr globals it reads, both sorted by label."""
    tree = fn.parse()
    fdef = tree.body[0] if tree.body else tree
    local = _local_names(fdef)
    code = getattr(fn.fn, "__code__", None)
    cells = dict(zip(code.co_freevars, fn.fn.__closure__ or ())) if code is not None else {}
    g = fn.__globals__
    deps, used, seen = {}, {}, set()

    def resolve(name):
        cell = cells.get(name)
        if cell is not None:
            try:
                v = cell.cell_contents
            except ValueError:
                return MISSING, None

            def get(cell=cell):
                try:
                    return cell.cell_contents
                except ValueError:
                    return MISSING
            return v, get
        if name in g:
            return g[name], (lambda name=name: g.get(name, MISSING))
        return MISSING, None

    for node in ast.walk(fdef):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = []
            cur = node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if not isinstance(cur, ast.Name) or cur.id in local or id(node) in seen:
                continue
            for sub in ast.walk(node):
                seen.add(id(sub))
            v, get = resolve(cur.id)
            if v is MISSING or not isinstance(v, types.ModuleType):
                continue
            root = v.__name__.split(".")[0]
            label = cur.id
            for attr in reversed(chain):
                if not isinstance(v, types.ModuleType):
                    break
                v = getattr(v, attr, MISSING)
                label = f"{label}.{attr}"
                if v is MISSING:
                    break
                if _is_jit(v):
                    deps[label] = v
                    break
                if root not in _LIB_MODULES and _is_simple_global(v):
                    path = label.split(".")

                    def get_attr(get=get, path=path):
                        o = get()
                        for a in path[1:]:
                            o = getattr(o, a, MISSING)
                            if o is MISSING:
                                break
                        return o
                    used[label] = UsedGlobal(label, v, get_attr)
                    break
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in seen:
            if node.id in local:
                continue
            v, get = resolve(node.id)
            if v is MISSING:
                continue
            if _is_jit(v):
                deps[node.id] = v
            elif _is_simple_global(v):
                used[node.id] = UsedGlobal(node.id, v, get)
    return sorted(deps.items()), [used[k] for k in sorted(used)]


__all__ = ["cache_key", "scan", "check_globals", "globals_check", "same_value", "UsedGlobal", "MISSING"]
