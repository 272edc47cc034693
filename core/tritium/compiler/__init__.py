"""The compiler: the backend contracts, the backend registry, the file cache, ``compile()`` over a backend's
stages and ``CompiledKernel`` with its launch.  Nothing here imports :mod:`tritium.runtime`."""
from .backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from .compiler import (ASTSource, AttrDict, CompiledKernel, Pipeline, StageNotImplemented, compile, make_pipeline,
                       options_to_dict, signature_of)

__all__ = ["ASTSource", "CompiledKernel", "compile", "make_pipeline", "Pipeline", "signature_of",
           "StageNotImplemented", "AttrDict", "options_to_dict", "Backend", "BaseCompiler", "BaseDriver",
           "BaseOptions", "GPUTarget"]
