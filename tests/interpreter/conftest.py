import numpy as np
import pytest


def compile_ttir(text: str, name: str = "k"):
    """A CompiledKernel from hand-written TTIR (stages ttir -> npy of the interpreter)."""
    from tritium.compiler import CompiledKernel
    from tritium_interpreter.compiler import InterpreterCompiler

    comp = InterpreterCompiler()
    stages = {}
    comp.add_stages(stages, comp.parse_options({}), comp.target_for_arch())
    asm, cur = {}, text
    for sname, fn in stages.items():
        cur = fn(cur, {})
        asm[sname] = cur
    return CompiledKernel(asm, {"name": name})


def launch(kernel, grid, *args):
    from tritium_interpreter.driver import InterpreterDriver

    InterpreterDriver().launch(kernel, tuple(grid), list(args))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
