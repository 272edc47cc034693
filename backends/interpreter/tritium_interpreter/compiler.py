"""The interpreter's compiler: stages ``ttir`` (the core frontend + TTIR passes) and ``npy`` (TTIR -> NumPy)."""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from tritium.compiler.backend import BaseCompiler, GPUTarget

TARGET = GPUTarget("interpreter", "cpu", 1)


@dataclass(frozen=True)
class InterpreterOptions:
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    debug: bool = False
    backend_name: str = "interpreter"


def make_npy(src, metadata: dict) -> str:
    """Stage ``npy``: TTIR text -> the source of the NumPy program (see codegen.py)."""
    from mlir import ir

    from tritium.dialects import make_context

    from .codegen import ttir_to_python

    ctx = make_context()
    with ctx:
        module = ir.Module.parse(src if isinstance(src, str) else str(src))
        text = ttir_to_python(module)
    return text


class InterpreterCompiler(BaseCompiler):
    name = "interpreter"

    def __init__(self, target: GPUTarget = TARGET):
        self.target = target

    def supports_target(self, target: GPUTarget) -> bool:
        return target.backend == "interpreter"

    def parse_options(self, options: dict) -> InterpreterOptions:
        fields = {f.name for f in dataclasses.fields(InterpreterOptions)}
        unknown = sorted(k for k in (options or {}) if k not in fields)
        if unknown:
            raise TypeError(f"unknown option(s) for the interpreter backend: {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(fields))})")
        opts = InterpreterOptions(**{k: v for k, v in (options or {}).items()})
        if opts.num_warps <= 0 or opts.num_warps & (opts.num_warps - 1):
            raise ValueError(f"num_warps must be a power of 2, got {opts.num_warps}")
        return opts

    def add_stages(self, stages: dict, options) -> None:
        def ttir(src, metadata):
            if isinstance(src, str):  # already TTIR text
                return src
            from tritium.compiler.stages import make_ttir
            return make_ttir(src, metadata, options)

        stages["ttir"] = ttir
        stages["npy"] = make_npy

    def hash(self) -> str:
        import pathlib
        h = hashlib.sha256()
        here = pathlib.Path(__file__).parent
        for name in ("codegen.py", "runtime.py", "compiler.py"):
            try:
                h.update((here / name).read_bytes())
            except OSError:  # pragma: no cover
                pass
        return h.hexdigest()[:16]
