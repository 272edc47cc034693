"""Generated multi-program kernels on the interpreter against their NumPy model (tests/fuzz/programs.py): typed
expressions over int8..int64 / fp16 / bf16 / fp32 / fp64 with Triton 3.6's promotions, loops and branches whose trip
counts differ between programs, atomics shared by every program, scans, transcendental math within stated ulps.
A fixed budget here; the GPU runs the same seeded cases in tests/gpu/test_programs_gpu.py; the longer runs and their
numbers are in docs/RELIABILITY.md.  The named tests below are the mismatches the generator found, fixed."""
import tempfile

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tests.fuzz import programs as P  # noqa: E402

_DIR = tempfile.mkdtemp(prefix="tritium-prog-")


def _check(case):
    got = P.run_case(case, P.load_kernel(case, _DIR))
    why = P.compare(case, got, P.model(case, P.inputs(case)))
    assert not why, f"{why}\n{case.da} {case.db} n={case.n} BLOCK={case.BLOCK}\n{P.source(case)}"


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=P.strategy())
def test_generated_programs_match_numpy(case):
    _check(case)


@pytest.mark.campaign
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_programs_match_numpy(seed):
    """The very cases the GPU test runs (tests/gpu/test_programs_gpu.py: same generator, seeds and count)."""
    for case in P.cases(40, seed):
        _check(case)


def test_the_comparison_catches_a_wrong_bit_a_wrong_slot_and_a_bad_transcendental():
    case = P.cases(1, 1)[0]
    want = P.model(case, P.inputs(case))
    got = P.run_case(case, P.load_kernel(case, _DIR))
    assert P.compare(case, got, want) == ""
    bad = {**got, "h": got["h"].copy()}
    bad["h"][3] += 1
    assert P.compare(case, bad, want).startswith("h differs")
    bad = {**got, "u": got["u"].astype(np.float64) * (1 + 2 ** -6)}
    assert P.compare(case, bad, want).startswith("u (")


def test_the_model_rounds_once():
    # 2**24 + 1 is a tie in fp32: to even; 0x1.0101p0 in bf16 rounds up past the tie; an int64 above 2**53
    assert P.round_to(2.0 ** 24 + 1, "f32") == np.float32(2 ** 24)
    assert P.round_to(float.fromhex("0x1.0101p0"), "bf16") == np.float32(float.fromhex("0x1.02p0"))
    assert P.int_to_float(np.array([2 ** 62 + 2 ** 38 + 1]), "f32")[0] == np.float32(2.0 ** 62 + 2 ** 39)
    assert P.round_to(65520.0, "f16") == np.float16(np.inf) and P.round_to(65519.0, "f16") == np.float16(65504)


# ------------------------------------------------------------------------------ regressions the generator found
@tritium.jit
def _mixed(A, I8, E0, E1, E2, E3, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs)            # bf16
    i = tl.load(I8 + offs)           # int8
    pid = tl.program_id(0) + 1
    tl.store(E0 + offs, a - pid)     # bf16 with an int32 tensor: fp32 (tritium computed bf16)
    tl.store(E1 + offs, (i << 4).to(tl.int32))       # a Python int takes int8's type: 8-bit shift (was 32)
    tl.store(E2 + offs, tl.maximum(i, 7) * 100)      # maximum makes 7 a tensor: int32, no 8-bit wrap (was int8)
    tl.store(E3 + offs, tl.maximum(a, a) + i)        # maximum of bf16 is fp32, and so the sum (was bf16)


def test_regression_promotions_of_bf16_shifts_and_maximum_as_triton():
    a = torch.tensor([-1.8671875, 3.0, 250.0, -0.5078125], dtype=torch.bfloat16)
    i = torch.tensor([13, 7, -9, 100], dtype=torch.int8)
    outs = [torch.zeros(4, dtype=dt) for dt in (torch.float32, torch.int32, torch.int32, torch.float32)]
    k = _mixed[(1,)](a, i, *outs, BLOCK=4)
    assert outs[0].tolist() == (a.float() - 1).tolist()               # -2.8671875: bf16 would round it to -2.875
    assert outs[1].tolist() == [-48, 112, 112, 64]                     # int8 13 << 4 == -48
    assert outs[2].tolist() == (torch.maximum(i.int(), torch.tensor(7)) * 100).tolist()
    assert outs[3].tolist() == (a.float() + i.float()).tolist()        # 250 + 100 = 350 exact in fp32, 352 in bf16
    assert "tensor<4xf32>" in k.asm["ttir"].split("arith.subf")[1].split("\n")[0]
