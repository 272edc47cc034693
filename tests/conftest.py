"""Test-wide settings: every test gets a fresh, empty on-disk kernel cache (``TRITIUM_CACHE_DIR``), so tests never
touch ``~/.tritium/cache`` nor see each other's kernels.  Tests of the cache itself set their own directory."""
import os
import shutil
import tempfile

import pytest


@pytest.fixture(autouse=True)
def _fresh_kernel_cache(monkeypatch):
    d = tempfile.mkdtemp(prefix="tritium-test-cache-")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["fast", "eager"])
def mode(request):
    """Both interpreter modes for a test: the whole grid from the TTIR's NumPy program (``fast``) and step-through
    (``eager``); the parameter's value is the mode's name."""
    from tritium.compiler import registry

    registry.set_active("interpreter" if request.param == "fast" else "interpreter:eager")
    yield request.param
    registry.set_active(None)
