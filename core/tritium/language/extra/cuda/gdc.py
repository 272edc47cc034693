"""``tl.extra.cuda`` grid dependency control (Triton 3.6's ``gdc_wait`` / ``gdc_launch_dependents``):
``griddepcontrol.wait`` / ``griddepcontrol.launch_dependents`` in inline PTX, for programmatic dependent launch
(sm_90+).  Both are safe when the kernel is not launched that way.  On a cuda target older than sm_90 a call is
a CompilationError; the interpreter runs them as no-ops (every earlier launch has finished)."""
from __future__ import annotations

from ... import core as _c
from ...core import SemanticError, extern as _extern
from .utils import GDC_LAUNCH_DEPENDENTS_ASM, GDC_WAIT_ASM


def _gdc(asm, what):
    from ... import semantic
    from ...target_info import current_target
    t = current_target()
    if t is not None and t.backend == "cuda":
        try:
            arch = int(t.arch)
        except (TypeError, ValueError):
            arch = None
        if arch is not None and arch < 90:
            raise SemanticError(f"{what}() emits griddepcontrol, which needs sm_90 or newer; the target is "
                                f"sm_{arch}")
    elif t is not None and t.backend not in ("interpreter",):
        raise SemanticError(f"{what}() is CUDA's griddepcontrol; the target is {t.backend}")
    semantic.inline_asm_elementwise(asm, "=r", [], _c.int32, False, 1)
    return None


@_extern
def gdc_wait(_semantic=None, _builder=None):
    """Wait until the grids this one depends on have completed and their memory is visible
    (``griddepcontrol.wait``)."""
    return _gdc(GDC_WAIT_ASM, "gdc_wait")


@_extern
def gdc_launch_dependents(_semantic=None, _builder=None):
    """Let the dependent grid launch once every program has called this or finished
    (``griddepcontrol.launch_dependents``)."""
    return _gdc(GDC_LAUNCH_DEPENDENTS_ASM, "gdc_launch_dependents")
