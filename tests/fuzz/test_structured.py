"""The structured differential campaigns (tests/fuzz/structured.py) as tests: every ``TRITIUM_FUZZ_EVERY``-th case
(default 9) of each family on the interpreter; with ``TRITIUM_FUZZ_DEVICE=cuda`` on the GPU instead (pytest-xdist
spreads the compiles: ``TRITIUM_FUZZ_DEVICE=cuda TRITIUM_FUZZ_EVERY=1 pytest -n 14 tests/fuzz/test_structured.py``,
the run docs/RELIABILITY.md reports).  A case that differs from its model fails with what differs."""
import os

import pytest

torch = pytest.importorskip("torch")

from tests.fuzz import structured as S  # noqa: E402

DEVICE = os.environ.get("TRITIUM_FUZZ_DEVICE", "cpu")
EVERY = int(os.environ.get("TRITIUM_FUZZ_EVERY", "9"))
CASES = [c for fam in S.FAMILIES for c in (S.cases(fam)[::EVERY] if fam != "loops" else S.cases(fam))]


@pytest.fixture(autouse=True, scope="module")
def _target():
    if DEVICE != "cpu":
        yield
        return
    from tritium.compiler import registry

    registry.set_active("interpreter")
    yield
    registry.set_active(None)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_structured_case_matches_its_model(case):
    why = S.run(case, DEVICE)
    assert not why, f"{case.id}: {why}"


def test_the_models_catch_what_test_core_found():
    """The models are not vacuous: the wrong results of 2026-11-28, applied to the expected values, are caught."""
    # a bf16 cumsum rounded to bf16 at every step (the old GPU code) misses the fp32-accumulated model
    case = S.Case("scans", "cumsum", "bfloat16", (1024,), 0)
    x = S.scan_reduce_input(case, torch.Generator().manual_seed(0))
    want, tol = S.scan_reduce_model(case, x)
    acc, stepwise = torch.tensor(0.0, dtype=torch.bfloat16), []
    for v in x:
        acc = (acc + v).to(torch.bfloat16)
        stepwise.append(acc.double())
    assert ((torch.stack(stepwise) - want).abs() > tol).any()
