"""torch.compile (Inductor) with tritium standing in for Triton, on the CPU: Inductor's ``cpu_backend = "triton"``
generates Triton kernels for CPU tensors, which tritium's interpreter runs (``triton.backends.backends["cpu"]``).

The alias must be installed before torch imports ``triton`` (skipped when this process already imported a real
Triton); it is removed again after this package's tests.  Inductor's caches go to a temporary directory."""
import os

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="package")
def inductor_cpu_triton(tmp_path_factory):
    import sys

    real = sys.modules.get("triton")
    if real is not None and getattr(real, "__tritium__", None) is None:
        pytest.skip("a real Triton is already imported in this process")
    import tritium

    tritium.install_as_triton()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("inductor_cache")))
    import torch._dynamo
    import torch._inductor.config as cfg

    saved = cfg.cpu_backend
    cfg.cpu_backend = "triton"
    torch._dynamo.reset()
    yield cfg
    cfg.cpu_backend = saved
    torch._dynamo.reset()
    if real is None:  # the tests after these run without the alias (and without TRITIUM_AS_TRITON), as before
        tritium.uninstall_as_triton()
