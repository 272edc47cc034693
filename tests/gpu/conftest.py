"""GPU tests: run on a CUDA device, skipped without one.

Two ways to run them:

* on a machine with a CUDA device (tritium compiles there, or reads kernels from the carried cache):
  ``pytest tests/gpu`` -- kernels launch and results are compared with torch on the GPU;
* ``TRITIUM_COMPILE_ONLY=1 TRITIUM_TARGET=cuda:90 TRITIUM_CACHE_DIR=.gpu/cache pytest tests/gpu`` on the CPU
  machine (scripts/gpu_prepare.sh does this): the same tests run with CPU tensors, every kernel is compiled
  for sm_90 into the cache and nothing is launched (the tests end in ``pytest.skip`` after the launches).

The same runs compile for AMD with ``TRITIUM_TARGET=hip:<arch>`` (tests/amd/test_gpu_suite_compiles.py).  A test
of a CUDA-only feature (``tl.extra.cuda``, inline PTX, hand-written PTX) carries ``@pytest.mark.cuda_only("what")``
and is skipped, with ``CUDA-only: what`` as the reason, whenever the selected backend is not cuda: this is the one
place a GPU test is left out of a hip run.

The test-wide fresh-cache fixture of tests/conftest.py is overridden here: when ``TRITIUM_CACHE_DIR`` is set
for the session, the GPU tests use it (that is the carried cache); otherwise they get a fresh one too.
"""
import os
import shutil
import tempfile

import pytest

_SESSION_CACHE = os.environ.get("TRITIUM_CACHE_DIR")


def _compile_only() -> bool:
    from tritium_nvidia.driver import compile_only

    return compile_only()


def _device_reason():
    """None if kernels can run on a CUDA device here, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    from tritium.runtime import driver

    ok, why = driver.backend_status("cuda")
    return None if ok else f"tritium's cuda backend is not usable: {why}"


def _backend():
    """The name of the backend the GPU tests compile for (``cuda``, ``hip``, ...), None where none is selected."""
    from tritium.compiler import registry
    from tritium.errors import BackendUnavailable

    try:
        return registry.select().name
    except BackendUnavailable:
        return None


COMPILE_ONLY = _compile_only()
DEVICE_REASON = None if COMPILE_ONLY else _device_reason()
BACKEND = _backend()


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda_only(what): the test needs a CUDA-only feature (what: which one); "
                                       "skipped with 'CUDA-only: <what>' when the GPU tests compile for another "
                                       "backend (TRITIUM_TARGET=hip:<arch>)")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """Where the GPU tests can run (or compile), a GPU test module that skips itself at import (an
    ``importorskip`` of something the GPU machine lacks, in it or in a module it imports) is a failure: it
    would otherwise hide its tests from the GPU run."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and DEVICE_REASON is None and isinstance(collector, pytest.Module):
        report.outcome = "failed"
        report.longrepr = f"GPU test module {collector.nodeid} skipped itself at import: {report.longrepr}"


def pytest_collection_modifyitems(config, items):
    if DEVICE_REASON is None and BACKEND != "cuda":
        for item in items:
            for m in item.iter_markers("cuda_only"):
                if not m.args:
                    raise pytest.UsageError(f"{item.nodeid}: cuda_only(what) names the CUDA-only feature")
                what = m.args[0]
                item.add_marker(pytest.mark.skip(reason=f"CUDA-only: {what} (the tests compile for {BACKEND})"))
    if DEVICE_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {DEVICE_REASON}")
    for item in items:
        if "gpu" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Without a device (or a second one) GPU tests skip for a few reasons: report a skip at its module (no line),
    so the summary has one line per module and reason, not one per test."""
    outcome = yield
    report = outcome.get_result()
    lr = report.longrepr
    if report.skipped and isinstance(lr, tuple) and len(lr) == 3 and str(lr[2]).startswith("Skipped:"):
        report.longrepr = (lr[0], None, lr[2])


@pytest.fixture(autouse=True)
def _fresh_kernel_cache(monkeypatch):
    if _SESSION_CACHE:
        monkeypatch.setenv("TRITIUM_CACHE_DIR", _SESSION_CACHE)
        yield _SESSION_CACHE
        return
    d = tempfile.mkdtemp(prefix="tritium-test-cache-")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class GPU:
    """What a GPU test needs: the torch device to allocate on, and ``done()`` after the launches (skips the
    checks in compile-only mode)."""

    compile_only = COMPILE_ONLY

    def __init__(self):
        import torch

        self.torch = torch
        self.device = "cpu" if COMPILE_ONLY else "cuda"
        self.gen = torch.Generator(device="cpu").manual_seed(1234)

    def randn(self, *shape, dtype=None):
        t = self.torch.randn(*shape, generator=self.gen, dtype=self.torch.float32)
        return t.to(device=self.device, dtype=dtype or self.torch.float32)

    def rand(self, *shape, dtype=None):
        t = self.torch.rand(*shape, generator=self.gen, dtype=self.torch.float32)
        return t.to(device=self.device, dtype=dtype or self.torch.float32)

    def randint(self, lo, hi, shape, dtype=None):
        t = self.torch.randint(lo, hi, shape, generator=self.gen)
        return t.to(device=self.device, dtype=dtype or self.torch.int32)

    def empty(self, *shape, dtype=None, poison=True):
        """An output buffer, filled with NaN (floats) or a sentinel (ints) so unwritten elements show."""
        dtype = dtype or self.torch.float32
        t = self.torch.empty(*shape, dtype=dtype, device=self.device)
        t.fill_(float("nan") if dtype.is_floating_point else -99 if dtype != self.torch.bool else 0)
        return t

    def done(self):
        """Call after the launches: in compile-only mode, stop here (the kernels are in the cache)."""
        if COMPILE_ONLY:
            pytest.skip("compile only: kernels compiled for the GPU, not launched")
        self.torch.cuda.synchronize()


@pytest.fixture
def gpu():
    return GPU()
