"""The compiler driver: sources, the stage pipeline, ``compile()`` and ``CompiledKernel``; backend interfaces."""
from .backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from .compiler import ASTSource, AttrDict, CompiledKernel, StageNotImplemented, compile, options_to_dict

__all__ = ["ASTSource", "CompiledKernel", "compile", "StageNotImplemented", "AttrDict", "options_to_dict",
           "Backend", "BaseCompiler", "BaseDriver", "BaseOptions", "GPUTarget"]
