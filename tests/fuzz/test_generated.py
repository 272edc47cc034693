"""Generated kernels on the interpreter against a NumPy model of the same expression (tests/fuzz/generated.py):
hypothesis strategies over elementwise float / int expressions, casts, C integer division and remainder, where,
reductions along each axis, on regions of any size masked to power-of-two blocks -- bit-exact except for sums
(order: relative 1e-5).  A fixed budget here (derandomized); the GPU runs the same generator's cases against the
model in tests/gpu/test_generated_gpu.py; longer runs and their numbers: docs/RELIABILITY.md."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.fuzz import generated as G  # noqa: E402

_DIR = G.tmpdir()


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=G.strategies())
def test_generated_kernels_match_numpy(case):
    got = G.run_case(case, G.load_kernel(case, _DIR))
    why = G.compare(case, got, G.model(case, G.inputs(case)))
    assert not why, f"{why}\n{G.source(case)}"


@pytest.mark.campaign
@pytest.mark.parametrize("seed", [1, 2])
def test_seeded_cases_match_numpy(seed):
    """The seeded generator the GPU test uses: the interpreter agrees with the model on the very same cases."""
    for case in G.cases(40, seed):
        got = G.run_case(case, G.load_kernel(case, _DIR))
        why = G.compare(case, got, G.model(case, G.inputs(case)))
        assert not why, f"{why}\n{G.source(case)}"


def test_the_comparison_catches_one_ulp_and_one_integer():
    case = G.Case(5, 7, 8, 8, "(x0 + x1)", "(i0 - i1)", "sum1", 3)
    want = G.model(case, G.inputs(case))
    got = G.run_case(case, G.load_kernel(case, _DIR))
    assert G.compare(case, got, want) == ""
    bad = {**got, "f": got["f"].copy()}
    bad["f"][2, 3] = np.nextafter(bad["f"][2, 3], np.float32(np.inf))
    assert "float result differs" in G.compare(case, bad, want)
    bad = {**got, "i": got["i"] + (np.arange(got["i"].size).reshape(got["i"].shape) == 4)}
    assert "int result differs" in G.compare(case, bad, want)
    bad = {**got, "r": got["r"] * 1.001 + 1}
    assert G.compare(case, bad, want) == "sum differs"
