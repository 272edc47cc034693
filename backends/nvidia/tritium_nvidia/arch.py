"""What the cuda backend's modules share about its targets, with no imports of its own (so that the compiler, the
driver, the PTX stage and the plugin all take it from here and none imports another for it): the compute
capabilities it compiles for, and the pip command of its dependencies."""
from __future__ import annotations

#: the compute capabilities a CUDA compile may target (the PTX ``.target``: what ptxas of CUDA 13 accepts) and, for
#: the ``arch`` option, generate code for (Volta's too: its dots are FMA loops)
CUDA_ARCHS = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)
CODEGEN_ARCHS = (70, 72) + CUDA_ARCHS

#: how the cuda backend's Python dependencies are installed (named in every "not installed" message)
PIP = "pip install 'tritium[nvidia]'"

__all__ = ["CUDA_ARCHS", "CODEGEN_ARCHS", "PIP"]
