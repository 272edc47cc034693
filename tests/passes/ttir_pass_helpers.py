"""Helpers for the TTIR pass tests: parse hand-written TTIR, run one pass, check the printed output (FileCheck
directives written in the input as MLIR comments, or counts of ops)."""
from __future__ import annotations

import io
import re

from mlir import ir, passmanager

from tritium.dialects import make_context, tt

PTR = "!tt.ptr<f32>"
T128P = "tensor<128x!tt.ptr<f32>>"


def func(body: str, args: str = "%p: !tt.ptr<f32>, %n: i32", name: str = "k", extra: str = "") -> str:
    """A module holding one public function with ``body`` (which must end with its return)."""
    return f"func.func public @{name}({args}) {{\n{body}\n}}\n{extra}"


def run_pass(entry, src: str, *, via_pm: bool = True) -> str:
    """Parse ``src``, run ``entry`` (a ``*_pass`` callable) on the module, verify, return the printed module."""
    with make_context() as ctx, ir.Location.unknown():
        m = ir.Module.parse(src)
        if via_pm:
            pm = passmanager.PassManager("builtin.module")
            pm.add(entry, name=getattr(entry, "__name__", "p"))
            pm.enable_verifier(True)
            pm.run(m.operation)
        else:
            entry(m.operation)
        tt.verify_module(m)
        text = str(m)
        # the output parses again
        ir.Module.parse(text)
        return text


def filecheck(output: str, checks: str) -> None:
    """Assert that ``output`` passes the FileCheck directives in ``checks`` (``CHECK:``, ``CHECK-NEXT:``,
    ``CHECK-NOT:``, ``CHECK-DAG:``, ``[[NAME:regex]]`` captures and ``[[NAME]]`` uses, ``{{regex}}``)."""
    from filecheck.finput import FInput
    from filecheck.matcher import Matcher
    from filecheck.options import Options
    from filecheck.parser import Parser, pattern_for_opts

    opts = Options(match_filename="<checks>")
    matcher = Matcher(opts, FInput("<output>", FInput.canonicalize_line_ends(output)),
                      Parser(opts, io.StringIO(checks), *pattern_for_opts(opts)))
    matcher.stderr = io.StringIO()
    if matcher.run() != 0:
        raise AssertionError(f"FileCheck failed:\n{matcher.stderr.getvalue()}\n--- output ---\n{output}")


def check_pass(entry, src: str) -> str:
    """Run ``entry`` on ``src`` (:func:`run_pass`) and FileCheck the output against the ``// CHECK`` lines of
    ``src`` (MLIR comments: the parser skips them).  Returns the output."""
    out = run_pass(entry, src)
    filecheck(out, src)
    return out


def count(text: str, name: str) -> int:
    """How many ops called ``name`` (``tt.load``, ``arith.addi``) the printed IR holds."""
    if name.startswith("tt."):
        return len(re.findall(r'"' + re.escape(name) + r'"\(', text))
    return len(re.findall(r"(?:= |^\s*)" + re.escape(name) + r"\b", text, flags=re.M))


def op_lines(text: str, name: str) -> list:
    pat = re.compile(r'"' + re.escape(name) + r'"\(' if name.startswith("tt.") else re.escape(name) + r"\b")
    return [line.strip() for line in text.splitlines() if pat.search(line)]


def effect_sequence(text: str) -> list:
    """The ordered list of side-effecting op lines (loads, stores, atomics, prints, asserts)."""
    names = ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.print", "tt.assert")
    out = []
    for line in text.splitlines():
        for n in names:
            if f'"{n}"(' in line:
                out.append(n)
    return out


def interpreter_kernel(text: str):
    """A kernel object the interpreter driver launches, compiled from TTIR ``text`` through the interpreter's
    stages (so a pass's output runs as it is)."""
    import types

    from tritium_interpreter.compiler import InterpreterCompiler

    comp = InterpreterCompiler()
    stages = {}
    comp.add_stages(stages, comp.parse_options({}), comp.target_for_arch())
    asm, cur = {}, text
    for name, fn in stages.items():
        cur = fn(cur, {})
        asm[name] = cur
    return types.SimpleNamespace(asm=asm, name="k", metadata={}, loaded={})


def interpreter_launch(kernel, grid, *args) -> None:
    """Launch an :func:`interpreter_kernel` on ``grid`` with ``args``."""
    from tritium_interpreter.driver import InterpreterDriver

    InterpreterDriver().launch(kernel, tuple(grid), list(args))
