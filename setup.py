"""tritium's two compiled parts, both optional (where they cannot be built, no C compiler, the package installs
without them and the same work is done in Python): ``tritium._speedups`` (the JIT launcher's per-tensor reads)
and ``tritium_nvidia._cuda_launch`` (cuLaunchKernel called from C); see their sources.  Everything else is in
pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tritium._speedups", ["core/tritium/_speedups.c"], optional=True),
                   Extension("tritium_nvidia._cuda_launch", ["backends/nvidia/tritium_nvidia/_cuda_launch.c"],
                             libraries=["dl"], optional=True)])
