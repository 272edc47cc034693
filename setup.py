"""The one compiled part of tritium: ``tritium_nvidia._cuda_launch`` (cuLaunchKernel called from C, see its
source).  Optional: where it cannot be built (no C compiler), the package installs without it and the cuda
launcher calls cuda.bindings instead.  Everything else is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tritium_nvidia._cuda_launch", ["backends/nvidia/tritium_nvidia/_cuda_launch.c"],
                             libraries=["dl"], optional=True)])
