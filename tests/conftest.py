"""Test-wide settings: every test gets a fresh, empty on-disk kernel cache (``TRITIUM_CACHE_DIR``), so tests never
touch ``~/.tritium/cache`` nor see each other's kernels.  Tests of the cache itself set their own directory.

The long campaigns (the ``campaign`` marker: every kernel of tests/gpu compiled for sm_90a, gfx942, gfx90a and
gfx1100, the fuzzers' seeded draws, the e2e suite in step-through mode and under the race detector) run only with
``--campaigns`` or ``TRITIUM_TEST_CAMPAIGNS=1`` (``bash .ci/run`` sets it): about 35 minutes of the 2-core machine's
CPU time that the suite a contributor runs does without."""
import os
import shutil
import tempfile

import pytest

CAMPAIGNS_ENV = "TRITIUM_TEST_CAMPAIGNS"


def pytest_addoption(parser):
    parser.addoption("--campaigns", action="store_true", default=False,
                     help=f"also run the long campaigns (tests marked 'campaign'); {CAMPAIGNS_ENV}=1 does the same")


def pytest_configure(config):
    config.addinivalue_line("markers", "campaign: a long campaign, run with --campaigns or "
                                       f"{CAMPAIGNS_ENV}=1 (bash .ci/run does)")


def campaigns_enabled(config) -> bool:
    return config.getoption("--campaigns") or os.environ.get(CAMPAIGNS_ENV, "").strip() not in ("", "0")


def pytest_collection_modifyitems(config, items):
    if campaigns_enabled(config):
        return
    skip = pytest.mark.skip(reason=f"a long campaign: run with --campaigns or {CAMPAIGNS_ENV}=1 (bash .ci/run does)")
    for item in items:
        if "campaign" in item.keywords:
            item.add_marker(skip)


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
