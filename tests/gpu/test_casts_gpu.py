"""Integer <-> fp8 casts on the GPU (through fp32, since the frontend fuzzer found the direct lowering invalid):
int32 values to e4m3 / e5m2 and back, against torch's conversions of the same values; fp8 arithmetic (computed in
f32, rounded back with cvt.rn.satfinite) against the interpreter's model of it (tests/interpreter/test_fp8.py).

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


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "fma", "scalar", "where"])
@pytest.mark.parametrize("fmt", [0, 1], ids=["fp8e4nv", "fp8e5"])
def test_fp8_arithmetic(gpu, fmt, op):
    """The same kernel and reference as the interpreter's test: fp8 op fp8 in f32, rounded to the fp8 type."""
    from tests.interpreter.test_fp8 import FORMATS, arith, bits, fp8_rand, satfinite

    _, tdt, largest = FORMATS[fmt]
    g = torch.Generator().manual_seed(hash(op) % 1000)
    n = 1000
    x, y = fp8_rand(tdt, n, 8, g), fp8_rand(tdt, n, 8, g)
    y = torch.where(y.float() == 0, torch.ones(n).to(tdt), y)
    xf, yf = x.float(), y.float()
    ref = {"add": lambda: xf + yf, "sub": lambda: xf - yf, "mul": lambda: xf * yf, "div": lambda: xf / yf,
           "max": lambda: torch.maximum(xf, yf), "fma": lambda: satfinite(xf * yf, tdt, largest).float() + xf,
           "scalar": lambda: satfinite(xf * 0.5, tdt, largest).float() + torch.tensor(0.1).to(tdt).float(),
           "where": lambda: torch.where(xf < yf, -xf, yf)}[op]()
    z = torch.zeros(n, dtype=torch.float32 if op == "div" else tdt, device=gpu.device)
    arith[(4,)](x.to(gpu.device), y.to(gpu.device), z, n, OP=op, BLOCK=256)
    gpu.done()
    if op == "div":  # Triton promotes / to fp32
        torch.testing.assert_close(z.cpu(), ref, rtol=1e-6, atol=0)
    else:
        assert torch.equal(bits(z.cpu()), bits(satfinite(ref, tdt, largest)))


def test_reinterpreted_buffers(gpu):
    """tritium.reinterpret on CUDA tensors: int8 bytes seen as uint8 (logical shifts, unsigned division) and as
    fp8e4nv, through the launcher's fast path (three launches), against torch's views of the same bytes."""
    import tritium
    from tests.runtime.test_reinterpret import int_ops, to_f32

    n = 1000
    raw = torch.randint(-128, 128, (n,), generator=torch.Generator().manual_seed(7), dtype=torch.int8)
    x = raw.to(gpu.device)
    shr, div = torch.zeros(n, dtype=torch.int8, device=gpu.device), torch.zeros(n, dtype=torch.int8, device=gpu.device)
    wide = torch.zeros(n, dtype=torch.int32, device=gpu.device)
    f = torch.zeros(n, device=gpu.device)
    for _ in range(3):
        int_ops[(4,)](tritium.reinterpret(x, tl.uint8), shr, div, wide, n, BLOCK=256)
        to_f32[(4,)](tritium.reinterpret(x, tl.float8e4nv), f, n, BLOCK=256)
    gpu.done()
    u = raw.view(torch.uint8).to(torch.int32)
    assert torch.equal(shr.cpu().view(torch.uint8).to(torch.int32), u >> 2)
    assert torch.equal(div.cpu().view(torch.uint8).to(torch.int32), u // 3)
    assert torch.equal(wide.cpu(), u)
    want = raw.view(torch.float8_e4m3fn).float()
    assert bool(((f.cpu() == want) | (f.cpu().isnan() & want.isnan())).all())
