"""The interpreter's compiler: stages ``ttir`` (the core frontend + TTIR passes; block pointers are kept) and
``npy`` (TTIR -> the source of a NumPy program, :mod:`.codegen`)."""
from __future__ import annotations

from dataclasses import dataclass

from tritium.compiler.backend import BaseCompiler, BaseOptions, GPUTarget
from tritium.compiler.stages import Handoff, make_ttir

TARGET = GPUTarget("interpreter", "cpu", 1)


@dataclass(frozen=True)
class InterpreterOptions(BaseOptions):
    """Triton's options, accepted so that kernels tuned for a GPU run unchanged; the program ignores them except
    ``debug``."""

    backend_name: str = "interpreter"


class InterpreterCompiler(BaseCompiler):
    name = "interpreter"

    def __init__(self, target: GPUTarget = TARGET):
        self.target = target

    def supports_target(self, target: GPUTarget) -> bool:
        return target.backend == "interpreter"

    def parse_options(self, options: dict) -> InterpreterOptions:
        return InterpreterOptions.parse(options, backend=self.name)

    def add_stages(self, stages: dict, options: InterpreterOptions) -> None:
        handoff = Handoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff)
        stages["npy"] = lambda src, metadata: self.make_npy(src, metadata, options, handoff)

    @staticmethod
    def make_ttir(src, metadata: dict, options: InterpreterOptions, handoff: Handoff) -> str:
        return make_ttir(src, metadata, options, handoff)

    @staticmethod
    def make_npy(src, metadata: dict, options: InterpreterOptions, handoff: Handoff) -> str:
        """Stage ``npy``: TTIR -> the source of the NumPy program (see codegen.py)."""
        from .codegen import ttir_to_python

        return ttir_to_python(handoff.module_for(src))

    def hash(self) -> str:
        """Nothing outside tritium's own code (which the cache key hashes) shapes the program."""
        return "interpreter"

