"""The ``tritium`` command (also ``python -m tritium``).

    tritium backends                       every backend: deps installed?, active?, why not, which is selected
    tritium compile FILE.py:KERNEL --signature "*fp32,*fp32,*fp32,i32" --constexpr BLOCK=1024 \\
        --target interpreter --emit ttir,npy --out DIR
    tritium explain FILE.py:KERNEL --signature "*fp32:16,*fp32:16,*fp32:16,i32:16" --constexpr BLOCK=1024 \\
        --target cuda:90 [--option num_warps=8] [--pictures DIR] [--json]   what the GPU compiler did with it
    tritium run-example [NAME]             run examples/NAME.py (default vector_add) of a source checkout
    tritium cache [ls|clear|dir]           the on-disk kernel cache (TRITIUM_CACHE_DIR, ~/.tritium/cache)
    tritium plugins                        every plugin of the entry-point group: loaded?, its hooks
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import hashlib
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any, Optional


# ------------------------------------------------------------------------------------------- backends
def cmd_backends(args: argparse.Namespace) -> int:
    from .compiler import registry
    from .errors import BackendUnavailable
    from .plugins import unavailable_plugins

    bs = registry.backends()
    try:
        sel = registry.select()
        selected, sel_msg = sel.name, f"selected: {sel.name}" + (f" (arch {sel.arch})" if sel.arch else "") + \
            f" [{ {'auto': 'highest-priority active backend'}.get(sel.why, sel.why) }]"
    except BackendUnavailable as e:
        selected, sel_msg = None, f"selected: none\n  {str(e).replace(chr(10), chr(10) + '  ')}"
    rows = []
    for name, b in bs.items():
        active, why = registry.backend_status(name)
        if b.missing:  # installed?, then active?: the two columns say each
            why = b.missing
        try:  # what the backend's compiler implements, from the compiler itself
            comp = registry.get_compiler(name)
            stages, todo = comp.implemented_stages(), list(comp.unimplemented_stages)
        except Exception as e:  # noqa: BLE001 - a broken plugin's compiler: say so, list the others
            stages, todo = [], [f"unknown ({type(e).__name__}: {e})"]
        rows.append({"name": name, "priority": b.priority, "deps_installed": not b.missing, "missing": b.missing,
                     "active": active, "reason": why, "selected": name == selected,
                     "description": b.description, "stages": stages, "unimplemented_stages": todo})
    broken = unavailable_plugins()
    if args.json:
        print(json.dumps({"backends": rows, "selected": selected, "unavailable_plugins": broken}, indent=2))
        return 0
    print("tritium backends (highest priority first):")
    for r in rows:
        mark = "*" if r["selected"] else " "
        print(f"{mark} {r['name']:<12} priority {r['priority']:<4} deps: "
              f"{'installed' if r['deps_installed'] else 'missing'}"
              f"{'' if r['deps_installed'] else ' -> ' + r['missing']}")
        print(f"  {'':<12} active: {'yes' if r['active'] else 'no (' + r['reason'] + ')'}")
        if r["description"]:
            print(f"  {'':<12} {r['description']}")
        print(f"  {'':<12} stages: {' -> '.join(r['stages']) or 'none'}"
              + (f" (not implemented yet: {' -> '.join(r['unimplemented_stages'])})" if r["unimplemented_stages"]
                 else ""))
    for name, err in broken.items():
        print(f"! plugin '{name}' failed to load: {err}")
    print(sel_msg)
    return 0


# ------------------------------------------------------------------------------------------- compile
def _load_kernel(spec: str, cmd: str = "compile") -> Any:
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"tritium {cmd}: expected FILE.py:KERNEL, got {spec!r}")
    p = Path(path)
    if not p.exists():
        raise SystemExit(f"tritium {cmd}: no such file: {path}")
    sys.path.insert(0, str(p.resolve().parent))
    modname = f"_tritium_cli_{p.stem}"
    s = importlib.util.spec_from_file_location(modname, p)
    mod = importlib.util.module_from_spec(s)
    sys.modules[modname] = mod
    s.loader.exec_module(mod)
    fn = getattr(mod, name, None)
    if fn is None:
        raise SystemExit(f"tritium {cmd}: {path} has no kernel named {name!r}")
    from .runtime.jit import JITFunction

    if not isinstance(fn, JITFunction):
        raise SystemExit(f"tritium {cmd}: {path}:{name} is not a @tritium.jit function")
    return fn


def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_signature(fn: Any, text: str, constexprs: dict, cmd: str = "compile") -> tuple:
    """``"*fp32:16,i32"`` positionally over the non-constexpr parameters (``name=type`` also accepted);
    ``:16`` marks divisibility by 16."""
    from .runtime.specialization import is_tensordesc_type, is_type_string

    params = [p.name for p in fn.params if not p.is_constexpr and p.name not in constexprs]
    items = [t.strip() for t in text.split(",") if t.strip()]
    signature, attrs = {}, {}
    named = all("=" in t for t in items) and items
    if not named and len(items) != len(params):
        raise SystemExit(f"tritium {cmd}: kernel '{fn.__name__}' has {len(params)} non-constexpr parameters "
                         f"({', '.join(params)}) but --signature gives {len(items)} types")
    for i, t in enumerate(items):
        if named:
            name, t = (x.strip() for x in t.split("=", 1))
            if name not in params:
                raise SystemExit(f"tritium {cmd}: kernel '{fn.__name__}' has no parameter {name!r}")
        else:
            name = params[i]
        ty, _, div = t.partition(":")
        if div and not div.isdigit():
            raise SystemExit(f"tritium {cmd}: bad divisibility in {t!r} for {name!r}: expected TYPE:16")
        if ty == "constexpr":
            raise SystemExit(f"tritium {cmd}: give constexpr {name!r} a value with --constexpr {name}=VALUE")
        if not (is_type_string(ty) or is_tensordesc_type(ty)):
            raise SystemExit(f"tritium {cmd}: {ty!r} (for {name!r}) is not a type: expected e.g. *fp32, i32, fp16")
        signature[name] = ty
        if div:
            attrs[name] = {"tt.divisibility": int(div)}
    return signature, attrs


def _compile_inputs(args: argparse.Namespace) -> tuple:
    """What ``tritium compile`` and ``tritium explain`` compile: ``(fn, signature, constexprs, attrs, options)``
    from FILE.py:KERNEL, --signature, --constexpr and --option."""
    cmd = args.cmd
    fn = _load_kernel(args.kernel, cmd)
    constexprs = {}
    for c in args.constexpr or []:
        k, sep, v = c.partition("=")
        if not sep:
            raise SystemExit(f"tritium {cmd}: --constexpr expects NAME=VALUE, got {c!r}")
        if k.strip() not in fn.arg_names:
            raise SystemExit(f"tritium {cmd}: kernel '{fn.__name__}' has no parameter {k.strip()!r}")
        constexprs[k.strip()] = _parse_value(v.strip())
    for p in fn.params:
        if p.is_constexpr and p.name not in constexprs:
            if p.has_default:
                constexprs[p.name] = p.default
            else:
                raise SystemExit(f"tritium {cmd}: kernel '{fn.__name__}' needs --constexpr {p.name}=VALUE")
    signature, attrs = _parse_signature(fn, args.signature or "", constexprs, cmd)
    options = {}
    for o in args.option or []:
        k, _, v = o.partition("=")
        options[k.strip()] = _parse_value(v.strip())
    if fn.debug is not None:  # as JITFunction.run does, so that the cache key is the one a launch computes
        options.setdefault("debug", fn.debug)
    return fn, signature, constexprs, attrs, options


def cmd_compile(args: argparse.Namespace) -> int:
    targets = [t.strip() for t in (args.target or "").split(",") if t.strip()]
    if len(targets) <= 1:
        return _compile_one(args)
    return _compile_many(args, targets)


def _compile_many(args: argparse.Namespace, targets: list) -> int:
    """``--target a,b,...``: one compile per target, in parallel worker processes (``TRITIUM_COMPILE_WORKERS``,
    default the CPU count; spawned, never forked), each writing into ``OUT/<target>/``; their output printed in
    the targets' order.  The exit status is the worst one."""
    import concurrent.futures as cf
    import multiprocessing

    from .runtime.precompile import compile_workers

    jobs = []
    for t in targets:
        a = argparse.Namespace(**vars(args))
        a.target, a.out = t, str(Path(args.out or ".") / t.replace(":", "_"))
        del a.func
        jobs.append(a)
    workers = max(1, min(len(jobs), compile_workers()))
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as ex:
        results = list(ex.map(_compile_captured, jobs))
    rc = 0
    for t, (code, out, err) in zip(targets, results):
        print(f"== {t}")
        sys.stdout.write(out)
        sys.stderr.write(err)
        rc = max(rc, code)
    return rc


def _compile_captured(args: argparse.Namespace) -> tuple:
    """In a worker: ``_compile_one(args)`` with its output captured: ``(exit status, stdout, stderr)``."""
    import contextlib
    import io
    import traceback

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = _compile_one(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - reported as the single-target compile would report it
            code = 1
            print(f"tritium compile: {type(e).__name__}: {e}", file=sys.stderr)
            if os.environ.get("TRITIUM_FULL_TRACEBACK"):
                traceback.print_exc()
    return code, out.getvalue(), err.getvalue()


def _compile_one(args: argparse.Namespace) -> int:
    from .compiler import ASTSource, compile, make_pipeline

    fn, signature, constexprs, attrs, options = _compile_inputs(args)
    target, comp, parsed, stages = make_pipeline(args.target, options)  # the options are parsed once, here
    todo = list(comp.unimplemented_stages)
    done = [s for s in stages if s not in todo]
    emit = [e.strip() for e in (args.emit or "").split(",") if e.strip()] or done[-1:] or [list(stages)[-1]]
    missing = [e for e in emit if e in todo]
    if missing:
        print(f"tritium compile: the '{target.backend}' backend does not implement stage "
              f"{', '.join(map(repr, missing))} yet: it implements {' -> '.join(done) or 'no stage'}; "
              f"{' -> '.join(todo)} are not implemented yet", file=sys.stderr)
        return 2
    unknown = [e for e in emit if e not in stages]
    if unknown:
        print(f"tritium compile: the '{target.backend}' backend has no stage {', '.join(map(repr, unknown))} "
              f"(its stages: {', '.join(stages)})", file=sys.stderr)
        return 2
    last = max(emit, key=list(stages).index)
    src = ASTSource(fn, signature, constexprs, attrs)
    kernel = compile(src, target=target, options=parsed, until=last, use_cache=not args.no_cache)
    if not args.no_cache:
        from .compiler import cache as fcache

        why = fcache.disabled_reason()
        state = f"not used ({why})" if why else ("hit" if kernel.from_cache else "stored")
        print(f"cache: {fcache.cache_dir() / kernel.metadata['hash']} [{state}]")
    out = Path(args.out or ".")
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale_outputs(out, kernel.name, emit)
    written = {}
    for e in emit:
        data = kernel.asm[e]
        path = out / f"{kernel.name}.{e}"
        raw = bytes(data) if isinstance(data, (bytes, bytearray)) else (data if isinstance(data, str)
                                                                           else str(data)).encode()
        path.write_bytes(raw)
        written[path.name] = hashlib.sha256(raw).hexdigest()
        print(f"wrote {path}")
    meta = out / f"{kernel.name}.json"
    # what this compile wrote (name -> sha256): the next compile into ``out`` removes only those, unchanged
    meta.write_text(json.dumps({**kernel.metadata, _WRITTEN: written}, indent=2, sort_keys=True) + "\n")
    print(f"wrote {meta}")
    return 0


_WRITTEN = "tritium_compile_wrote"


def _remove_stale_outputs(out: Path, name: str, emit: list) -> None:
    """Remove the files an earlier ``tritium compile`` of kernel ``name`` wrote into ``out`` and this one does not
    write again, so that what is left of the kernel's outputs is this compile's.  Only files that compile listed
    in ``NAME.json`` as written by it, and whose bytes are still what it wrote, are removed: a file of the same
    name that the user made or edited stays."""
    meta = out / f"{name}.json"
    try:
        old = json.loads(meta.read_text())
    except (OSError, ValueError):
        return
    wrote = old.get(_WRITTEN) if isinstance(old, dict) else None
    if not isinstance(wrote, dict):
        return
    keep = {f"{name}.{e}" for e in emit}
    for fname, digest in wrote.items():
        if not isinstance(fname, str) or "/" in fname or "\\" in fname or fname in keep:
            continue
        p = out / fname
        try:
            if not p.is_file() or hashlib.sha256(p.read_bytes()).hexdigest() != digest:
                continue
            p.unlink()
        except OSError:
            continue
        print(f"removed {p} (written by the previous compile, for {old.get('target', {}).get('backend', '?')})")


# ------------------------------------------------------------------------------------------- explain
def cmd_explain(args: argparse.Namespace) -> int:
    from .tools.explain import explain

    fn, signature, constexprs, attrs, options = _compile_inputs(args)
    try:
        ex = explain(fn, signature, constexprs, attrs, target=args.target, options=options, pictures=args.pictures)
    except (TypeError, ValueError, ImportError) as e:  # unknown options, bad targets, no matplotlib
        print(f"tritium explain: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(ex.to_json())
    else:
        print(ex, end="")
    return 0


# ------------------------------------------------------------------------------------------- cache
def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def cmd_cache(args: argparse.Namespace) -> int:
    import time

    from .compiler import cache as fcache

    fc = fcache.get_file_cache()
    if args.action == "dir":
        print(fc.dir)
        return 0
    if args.action == "clear":
        n = fc.clear()
        print(f"removed {n} entr{'y' if n == 1 else 'ies'} from {fc.dir}")
        return 0
    rows = fc.entries()
    if args.json:
        print(json.dumps({"dir": str(fc.dir), "entries": rows}, indent=2))
        return 0
    print(f"{fc.dir}: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'}, "
          f"{_size(sum(r['size'] for r in rows))}")
    lines = []
    for r in sorted(rows, key=lambda r: r["created"]):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"]))
        stages = ",".join(r["stages"]) + ("" if r["complete"] else " (partial)")
        lines.append((r["key"][:16], str(r["name"]), str(r["target"]), stages, _size(r["size"]), when,
                      "" if r["valid"] else "  [unreadable]"))
    if lines:  # columns as wide as their longest entry
        head = ("key", "kernel", "target", "stages", "size", "created", "")
        w = [max(len(x[i]) for x in lines + [head]) for i in range(5)]
        for x in [head] + lines:
            print(f"  {x[0]:<{w[0]}}  {x[1]:<{w[1]}}  {x[2]:<{w[2]}}  {x[3]:<{w[3]}}  {x[4]:>{w[4]}}  {x[5]}{x[6]}")
    return 0


# ------------------------------------------------------------------------------------------- examples
def _examples_dir() -> Optional[Path]:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "examples").is_dir() and (parent / "pyproject.toml").exists():
            return parent / "examples"
    return None


def cmd_run_example(args: argparse.Namespace) -> int:
    d = _examples_dir()
    if d is None:
        print("tritium run-example: examples/ is part of the source checkout; run from a clone of tritium",
              file=sys.stderr)
        return 2
    if args.list or not args.name:
        names = sorted(p.stem for p in d.glob("*.py") if not p.stem.startswith("_"))
        if args.list:
            print("\n".join(names))
            return 0
    name = args.name or "vector_add"
    path = d / (name if name.endswith(".py") else f"{name}.py")
    if not path.exists():
        print(f"tritium run-example: no example {name!r} (have: "
              f"{', '.join(sorted(p.stem for p in d.glob('*.py') if not p.stem.startswith('_')))})", file=sys.stderr)
        return 2
    if args.target:
        os.environ["TRITIUM_TARGET"] = args.target
    sys.argv = [str(path)]
    runpy.run_path(str(path), run_name="__main__")
    return 0


# -------------------------------------------------------------------------------------------- plugins
def cmd_plugins(args: argparse.Namespace) -> int:
    from .plugins import _entry_points, get_plugin_manager, unavailable_plugins

    pm = get_plugin_manager()
    broken = unavailable_plugins()
    rows = []
    for ep in _entry_points():
        plugin = pm.get_plugin(ep.name)
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or [])) if plugin is not None else []
        dist = getattr(getattr(ep, "dist", None), "name", None)
        rows.append({"name": ep.name, "module": ep.value, "distribution": dist, "loaded": plugin is not None,
                     "error": broken.get(ep.name), "hooks": hooks})
    others = [n for n, _ in pm.list_name_plugin() if n not in {r["name"] for r in rows}]
    if args.json:
        print(json.dumps({"plugins": rows, "registered_programmatically": others}, indent=2))
        return 0
    print("tritium plugins (entry-point group 'tritium'):")
    for r in rows:
        state = "loaded" if r["loaded"] else f"FAILED: {r['error']}"
        print(f"  {r['name']:<12} {r['module']:<28} {state}")
        print(f"  {'':<12} hooks: {', '.join(r['hooks']) or 'none registered now'}")
    for n in others:
        print(f"  {n:<12} (registered programmatically)")
    return 0


# ------------------------------------------------------------------------------------------- main
def _kernel_arguments(parser: argparse.ArgumentParser, signature_example: str, target_help: str) -> None:
    """The arguments naming a kernel and its specialisation (``_compile_inputs`` reads them): compile, explain."""
    parser.add_argument("kernel", metavar="FILE.py:KERNEL")
    parser.add_argument("--signature", "-s", default="",
                        help=f"types of the non-constexpr parameters in order, {signature_example}")
    parser.add_argument("--constexpr", "-c", action="append", metavar="NAME=VALUE",
                        help="a constexpr value (repeat)")
    parser.add_argument("--option", "-O", action="append", metavar="NAME=VALUE",
                        help="a compile option, e.g. num_warps=8")
    parser.add_argument("--target", "-t", default=None, help=target_help)


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tritium", description="tritium: a Triton-compatible GPU kernel compiler")
    ap.add_argument("--version", action="store_true", help="print the version")
    sub = ap.add_subparsers(dest="cmd")
    b = sub.add_parser("backends", help="list backends: installed, active, why not, which is selected")
    b.add_argument("--json", action="store_true", help="machine-readable output")
    b.set_defaults(func=cmd_backends)
    p = sub.add_parser("plugins", help="list plugins (entry-point group 'tritium'): loaded?, hooks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)
    c = sub.add_parser("compile", help="compile a @jit kernel and write its stages")
    _kernel_arguments(c, 'e.g. "*fp32,*fp32,*fp32,i32" (append :16 for divisibility by 16)',
                      "interpreter, cuda:90, hip:gfx942, ... (default: the active backend); several, "
                      "comma-separated, compile in parallel worker processes (TRITIUM_COMPILE_WORKERS)")
    c.add_argument("--emit", "-e", default="", help="comma-separated stages to write (default: the last one the backend implements)")
    c.add_argument("--out", "-o", default=".", help="output directory (several targets: a directory per target "
                                                     "in it, e.g. OUT/cuda_90)")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the kernel cache")
    c.set_defaults(func=cmd_compile)
    e = sub.add_parser("explain", help="what the GPU compiler did with a kernel: accesses, layouts, conversions, "
                       "reductions, dots, shared memory, registers, occupancy, warnings")
    _kernel_arguments(e, 'e.g. "*fp32:16,*fp32:16,*fp32:16,i32:16" (:16: divisible by 16, as the JIT specialises)',
                      "cuda:90, cuda:80, ... (default: the active GPU, else cuda:90; the interpreter has no layouts)")
    e.add_argument("--pictures", metavar="DIR", default=None, help="draw each layout as a PNG into DIR")
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.set_defaults(func=cmd_explain)
    k = sub.add_parser("cache", help="the on-disk kernel cache: ls, clear, dir")
    k.add_argument("action", choices=["ls", "clear", "dir"], nargs="?", default="ls")
    k.add_argument("--json", action="store_true", help="machine-readable output (ls)")
    k.set_defaults(func=cmd_cache)
    r = sub.add_parser("run-example", help="run an example kernel from examples/ (default vector_add)")
    r.add_argument("name", nargs="?", default=None)
    r.add_argument("--target", default=None, help="TRITIUM_TARGET for the run (default: interpreter if no GPU)")
    r.add_argument("--list", action="store_true", help="list the examples")
    r.set_defaults(func=cmd_run_example)
    return ap


def main(argv: Optional[list] = None) -> int:
    from .errors import TritiumError

    ap = make_parser()
    args = ap.parse_args(argv)
    if args.version:
        from ._version import __version__

        print(f"tritium {__version__}")
        return 0
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except TritiumError as e:
        print(f"tritium {args.cmd}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
