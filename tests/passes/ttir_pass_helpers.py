"""Helpers for the TTIR pass tests: parse hand-written TTIR, run one pass, inspect the printed output."""
from __future__ import annotations

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
