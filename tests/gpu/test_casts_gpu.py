"""Integer <-> fp8 casts on the GPU (through fp32, since the frontend fuzzer found the direct lowering invalid):
int32 values to e4m3 / e5m2 and back, against torch's conversions of the same values.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

from tests.fuzz.test_frontend_fuzz import _int_fp8_roundtrip

torch = pytest.importorskip("torch")

import tritium.language as tl  # noqa: E402


@pytest.mark.parametrize("tdt,dt", [(torch.float8_e4m3fn, "float8e4nv"), (torch.float8_e5m2, "float8e5")])
def test_int_fp8_roundtrip(gpu, tdt, dt):
    x = torch.arange(-300, 300, 600 // 64, dtype=torch.int32)[:64].to(gpu.device)
    y = torch.zeros(64, dtype=tdt, device=gpu.device)
    z = torch.zeros(64, dtype=torch.int32, device=gpu.device)
    _int_fp8_roundtrip[(1,)](x, y, z, BLOCK=64, F8=getattr(tl, dt))
    gpu.done()
    want = x.float().to(tdt)
    assert torch.equal(y.view(torch.uint8), want.view(torch.uint8))
    assert torch.equal(z, want.float().to(torch.int32))
