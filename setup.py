"""tritium's two compiled parts, both optional (where they cannot be built, no C compiler, the package installs
without them and the same work is done in Python): ``tritium._speedups`` (the JIT launcher's per-tensor reads)
and ``tritium_nvidia._cuda_launch`` (cuLaunchKernel called from C); see their sources.  And the start-up hook
``tritium-as-triton.pth``, installed next to the packages (site-packages), which makes ``TRITIUM_AS_TRITON=1``
stand tritium in for ``import triton`` (``tritium/_autoalias.py``).  Everything else is in pyproject.toml."""
import os

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

PTH = "tritium-as-triton.pth"
# one line, run at every start-up: nothing of tritium is imported unless the variable is set
PTH_LINE = "import os; os.environ.get('TRITIUM_AS_TRITON') and __import__('tritium._autoalias')\n"


class build_py_with_pth(build_py):
    """build_py, plus the .pth start-up hook at the top of the build (a wheel's root: site-packages)."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, PTH)
        os.makedirs(self.build_lib, exist_ok=True)
        with open(target, "w") as f:
            f.write(PTH_LINE)

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]


try:  # editable installs (pip install -e .) build no build_py tree: the hook is added to the editable wheel
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # pragma: no cover - old setuptools
    editable_wheel = None

cmdclass = {"build_py": build_py_with_pth}
if editable_wheel is not None and hasattr(editable_wheel, "_select_strategy"):
    class editable_wheel_with_pth(editable_wheel):
        def _select_strategy(self, *args, **kwargs):
            strategy = super()._select_strategy(*args, **kwargs)

            class WithPth:
                def __call__(self, wheel, files, mapping):
                    strategy(wheel, files, mapping)
                    wheel.writestr(PTH, PTH_LINE.encode())

                def __enter__(self):
                    strategy.__enter__()
                    return self

                def __exit__(self, *exc):
                    return strategy.__exit__(*exc)

            return WithPth()

    cmdclass["editable_wheel"] = editable_wheel_with_pth

setup(cmdclass=cmdclass,
      ext_modules=[Extension("tritium._speedups", ["core/tritium/_speedups.c"], optional=True),
                   Extension("tritium_nvidia._cuda_launch", ["backends/nvidia/tritium_nvidia/_cuda_launch.c"],
                             libraries=["dl"], optional=True)])
