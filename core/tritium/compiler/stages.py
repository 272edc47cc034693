"""What every backend's stages share: the ``ttir`` stage (Python AST -> TTIR, the TTIR pipeline with the backend's
own TTIR passes) and :class:`Handoff`, which passes a stage's MLIR module to the next stage of the same compile.

A backend's compiler holds its stages as methods and binds them in ``add_stages`` (Triton's
``backends/<name>/compiler.py`` shape)::

    def add_stages(self, stages, options, target):
        handoff = Handoff()
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options, handoff, target)
        stages["ttgir"] = lambda src, metadata: self.make_ttgir(src, metadata, options, handoff, target)

Every stage still returns its text (``CompiledKernel.asm``, the file cache and the dump plugin read it), but the
next stage takes the module itself from the handoff instead of parsing that text again.  Only when the text it gets
is not the one handed on (a plugin substituted a stage's output, or the compile started from TTIR text) does a
stage parse.

MLIR is imported only when a stage runs.
"""
from __future__ import annotations

from typing import Any, Optional


class Handoff:
    """The module the previous stage of one compile printed, kept for the next stage.

    ``put(text, module)`` records it and returns ``text``; ``module_for(src)`` returns that module when ``src`` is
    that very text object (so nothing replaced the output in between) and forgets it, else parses ``src`` in a new
    context with tritium's dialects.  A module taken is owned by the taker: stages transform it in place."""

    __slots__ = ("_text", "_module")

    def __init__(self):
        self._text: Optional[str] = None
        self._module: Any = None

    def put(self, text: str, module: Any) -> str:
        self._text, self._module = text, module
        return text

    def module_for(self, src: Any) -> Any:
        module, text = self._module, self._text
        self._text = self._module = None
        if module is not None and src is text:
            return module
        return parse(src)


def parse(text: Any) -> Any:
    """A stage's text parsed into a module, in a new context with tritium's dialects."""
    from mlir import ir

    from ..dialects import make_context

    return ir.Module.parse(text if isinstance(text, str) else str(text), make_context())


def asm(module: Any) -> str:
    """A stage's text: the module in generic form with locations (what parses back into the same module)."""
    return module.operation.get_asm(enable_debug_info=True)


_LLVM_INIT = False


def llvm_binding():
    """``llvmlite.binding`` with every target and asm printer initialised (once per process): what the GPU
    backends' code generation stages use."""
    global _LLVM_INIT
    import llvmlite.binding as llvm

    if not _LLVM_INIT:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _LLVM_INIT = True
    return llvm


def parse_llir(llir: str) -> Any:
    """``llir`` parsed and verified by llvmlite (``(llvm_binding, module)``); LLVM's complaint is a
    ``CompilationFailed`` with its log."""
    from ..errors import CompilationFailed

    llvm = llvm_binding()
    try:
        mod = llvm.parse_assembly(llir)
        mod.verify()
    except RuntimeError as e:
        raise CompilationFailed("LLVM rejected the generated IR", str(e)) from None
    return llvm, mod


def _kernel_symbol(module) -> Optional[str]:
    """The name of the module's public function (the kernel)."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and "sym_visibility" in op.attributes and \
                str(op.attributes["sym_visibility"]).strip('"') == "public":
            return str(op.attributes["sym_name"]).strip('"')
    return None


def make_ttir(src: Any, metadata: dict, options: Any, handoff: Optional[Handoff] = None,
              backend_passes: tuple = (), target: Any = None) -> str:
    """Stage ``ttir``: generate TTIR for ``src`` (an ASTSource), run ``backend_passes`` (``(name, entry)`` pairs:
    the backend's own TTIR passes) and the TTIR pipeline in one PassManager, return the module's text with
    locations, and set ``metadata["name"]``. ``target`` (the compile's :class:`~tritium.target.GPUTarget`) is what
    ``tl.target_info`` answers for while the kernel's code is generated.

    ``src`` may also be TTIR text (a compile that starts from TTIR): it is returned as it is when the backend has no
    TTIR passes of its own, else parsed and run through them and the pipeline."""
    from ..passes.ttir import run_ttir_pipeline

    if isinstance(src, str):
        if not backend_passes:
            return src
        module = parse(src)
        with module.context:
            run_ttir_pipeline(module, backend_passes=backend_passes)
            return handoff.put(asm(module), module) if handoff else asm(module)

    from ..dialects import make_context
    from ..frontend import make_ttir as frontend_make_ttir
    from ..language.target_info import compiling_for

    context = make_context()
    with context, compiling_for(target, options):  # tl.target_info answers for the target compiled for
        module = frontend_make_ttir(src.fn, src.signature, src.constexprs, src.attrs, context)
        run_ttir_pipeline(module, backend_passes=backend_passes)
        text = asm(module)
        metadata["name"] = _kernel_symbol(module) or src.name  # @jit(repr=...) names the symbol
    return handoff.put(text, module) if handoff else text


__all__ = ["Handoff", "asm", "llvm_binding", "make_ttir", "parse"]
