"""The interpreter's compiler: stages ``ttir`` (the core frontend + TTIR passes; block pointers are kept) and
``npy`` (TTIR -> the source of a NumPy program, :mod:`.codegen`); in step-through mode (target
``interpreter:eager``, option ``interpret_mode="eager"``) the one stage ``eager``: the kernel's Python body runs at
launch (:mod:`.eager`), nothing is compiled."""
from __future__ import annotations

from dataclasses import dataclass, replace

from tritium.compiler.backend import BaseCompiler, BaseOptions, GPUTarget
from tritium.compiler.stages import Handoff, make_ttir

TARGET = GPUTarget("interpreter", "cpu", 1)
EAGER_TARGET = GPUTarget("interpreter", "eager", 1)


@dataclass(frozen=True)
class InterpreterOptions(BaseOptions):
    """Triton's options, accepted so that kernels tuned for a GPU run unchanged; the program ignores them except
    ``debug``."""

    backend_name: str = "interpreter"
    #: "fast" (the whole grid at once, from TTIR) or "eager" (step-through: the Python body, program by program)
    interpret_mode: str = "fast"

    @classmethod
    def parse(cls, opts=None, backend: str = ""):
        out = super().parse(opts, backend)
        if out.interpret_mode not in ("fast", "eager"):
            raise ValueError(f"interpret_mode must be 'fast' or 'eager', got {out.interpret_mode!r}")
        return out


class InterpreterCompiler(BaseCompiler):
    name = "interpreter"
    options_class = InterpreterOptions

    def __init__(self, target: GPUTarget = TARGET):
        self.target = target

    def supports_target(self, target: GPUTarget) -> bool:
        return target.backend == "interpreter" and target.arch in ("cpu", "eager")

    def target_for_arch(self, arch=None) -> GPUTarget:
        if arch in (None, "", "cpu", "fast"):
            return TARGET
        if arch == "eager":
            return EAGER_TARGET
        raise ValueError(f"bad interpreter arch {arch!r}: expected 'cpu' (fast, the default) or 'eager' "
                         "(step-through)")

    def options_for_target(self, options: InterpreterOptions, target: GPUTarget) -> InterpreterOptions:
        if target.arch == "eager" and options.interpret_mode != "eager":
            return replace(options, interpret_mode="eager")
        return options

    def add_stages(self, stages: dict, options: InterpreterOptions, target: GPUTarget) -> None:
        if options.interpret_mode == "eager":
            stages["eager"] = self.make_eager
            return
        handoff = Handoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff, target)
        stages["npy"] = lambda src, metadata: self.make_npy(src, metadata, options, handoff)

    @staticmethod
    def make_ttir(src, metadata: dict, options: InterpreterOptions, handoff: Handoff, target: GPUTarget = None) -> str:
        return make_ttir(src, metadata, options, handoff, target=target)

    @staticmethod
    def make_npy(src, metadata: dict, options: InterpreterOptions, handoff: Handoff) -> str:
        """Stage ``npy``: TTIR -> the source of the NumPy program (see codegen.py); loop nests marked
        ``tl.range(..., flatten=True)`` fused first, as the GPU backends fuse them (so the interpreter runs what
        they run)."""
        from tritium.passes.ttir.fuse_nested_loops import fuse_nested_loops

        from .codegen import ttir_to_python

        module = handoff.module_for(src)
        with module.context:
            fuse_nested_loops(module)
        return ttir_to_python(module)

    @staticmethod
    def make_eager(src, metadata: dict) -> str:
        """Stage ``eager``: nothing to compile; the text says so.  The launch runs ``src.fn``'s Python body (the
        kernel keeps its ``src``), see :mod:`.eager`."""
        params = ", ".join(f"{n}: {t}" for n, t in metadata["signature"])
        return (f"# tritium step-through mode: kernel '{metadata['name']}' ({params}) runs its Python body program by "
                f"program, tl operations on NumPy\n")

    def hash(self) -> str:
        """Nothing outside tritium's own code (which the cache key hashes) shapes the program."""
        return "interpreter"

