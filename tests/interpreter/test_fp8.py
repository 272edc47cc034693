"""fp8 element types on the interpreter, fast and step-through modes: torch float8 tensors and reinterpreted byte
buffers (``tritium.reinterpret``) load, store, convert and compute as on the GPU.

Formats (Triton name, torch dtype): fp8e4nv / float8_e4m3fn, fp8e5 / float8_e5m2, fp8e4b8 / float8_e4m3fnuz,
fp8e5b16 / float8_e5m2fnuz.  Conversions to fp8 are the GPU's ``cvt.rn.satfinite``: round to nearest even, magnitudes
beyond the largest finite value (infinities too) saturate, NaN stays NaN -- torch's own conversion where it agrees
(every value up to the largest finite one), the saturated value beyond.  Conversions from fp8 are exact, checked
against torch over all 256 bit patterns; loads and stores move bit patterns (a copy keeps NaN payloads and
infinities)."""
import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import registry

torch = pytest.importorskip("torch")

FORMATS = [  # (tl dtype, torch dtype, largest finite value)
    (tl.float8e4nv, torch.float8_e4m3fn, 448.0),
    (tl.float8e5, torch.float8_e5m2, 57344.0),
    (tl.float8e4b8, torch.float8_e4m3fnuz, 240.0),
    (tl.float8e5b16, torch.float8_e5m2fnuz, 57344.0),
]
IDS = [str(f[0]) for f in FORMATS]
WIDE = {"fp32": (tl.float32, torch.float32), "fp16": (tl.float16, torch.float16), "bf16": (tl.bfloat16, torch.bfloat16),
        "fp64": (tl.float64, torch.float64)}


def all_patterns(tdt):
    """The 256 fp8 values of torch dtype ``tdt``, bit pattern i at index i."""
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(tdt)


def bits(t):
    return t.view(torch.uint8)


def satfinite(x, tdt, largest):
    """The GPU's conversion of float tensor ``x`` to fp8 ``tdt``: torch's (round to nearest even) after clamping to
    the finite range, NaN kept."""
    return x.float().clamp(-largest, largest).to(tdt)


def same_values(a, b):
    """Equal float values, NaN where the other is NaN (payloads aside)."""
    a, b = a.double(), b.double()
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


@tritium.jit
def convert(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m).to(Y.dtype.element_ty), mask=m)


@tritium.jit
def convert_rtz(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m).to(Y.dtype.element_ty, fp_downcast_rounding="rtz"), mask=m)


@tritium.jit
def copy(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m), mask=m)


def run(kernel, x, y, block=64, **kw):
    n = y.numel() if hasattr(y, "numel") else len(y)
    k = kernel[(tritium.cdiv(n, block),)](x, y, n, BLOCK=block, **kw)
    assert ("eager" in k.asm) == (registry.select().arch == "eager")  # the mode the fixture asked for
    return y


# ---------------------------------------------------------------------------------------------------- from fp8
@pytest.mark.parametrize("wide", list(WIDE))
@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_upcast_every_bit_pattern(tdt_, wide, mode):
    _, tdt, _ = tdt_
    x = all_patterns(tdt)
    y = run(convert, x, torch.zeros(256, dtype=WIDE[wide][1]))
    assert same_values(y, x.to(WIDE[wide][1])), (y, x.to(WIDE[wide][1]))
    assert torch.equal(y.isnan(), x.float().isnan()) and torch.equal(y.isinf(), x.float().isinf())


@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_reinterpreted_bytes_upcast_like_the_float8_tensor(tdt_, mode):
    """A torch.int8 / uint8 buffer reinterpreted as the fp8 type reads as torch's float8 view of the same bytes."""
    tldt, tdt, _ = tdt_
    raw = torch.randint(-128, 128, (1000,), dtype=torch.int8)
    for buf in (raw, raw.view(torch.uint8)):
        y = run(convert, tritium.reinterpret(buf, tldt), torch.zeros(1000))
        assert same_values(y, raw.view(tdt).float())


# ------------------------------------------------------------------------------------------------------ to fp8
def downcast_inputs(tdt, largest, wdt):
    """fp8 values, the midpoints between neighbours (ties: to even), just off them, beyond the largest value,
    zeros, infinities, NaN and random values over the range, as ``wdt`` (inputs ``wdt`` cannot hold are its
    nearest value: the reference converts what the kernel reads)."""
    v = all_patterns(tdt).double()
    v = v[v.isfinite()].unique()
    mid = (v[1:] + v[:-1]) / 2
    f32 = mid.float()
    near = torch.cat([torch.nextafter(f32, torch.tensor(-np.inf)), torch.nextafter(f32, torch.tensor(np.inf))])
    g = torch.Generator().manual_seed(0)
    rnd = (torch.rand(2000, generator=g, dtype=torch.float64) * 2 - 1) * largest * 1.2
    tiny = (torch.rand(500, generator=g, dtype=torch.float64) * 2 - 1) * v[v > 0].min().item() * 4
    special = torch.tensor([0.0, -0.0, np.inf, -np.inf, np.nan, largest * 1.01, -largest * 3, 1e30, -1e30])
    return torch.cat([v, mid, near.double(), rnd, tiny, special.double()]).to(wdt)


@pytest.mark.parametrize("wide", list(WIDE))
@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_downcast_rounds_to_nearest_even_and_saturates(tdt_, wide, mode):
    tldt, tdt, largest = tdt_
    x = downcast_inputs(tdt, largest, WIDE[wide][1])
    if wide == "fp64":  # the GPU converts fp64 through fp32
        ref = satfinite(x.float(), tdt, largest)
    else:
        ref = satfinite(x, tdt, largest)
    y = run(convert, x, torch.zeros(x.numel(), dtype=tdt), block=256)
    finite = ~x.isnan()
    assert torch.equal(bits(y)[finite], bits(ref)[finite]), \
        [(a.item(), b.item(), c.item()) for a, b, c in zip(x[finite], bits(y)[finite], bits(ref)[finite]) if b != c][:8]
    assert y.float()[x.isnan()].isnan().all()
    # into a reinterpreted byte buffer: the same bits
    out = torch.zeros(x.numel(), dtype=torch.int8)
    run(convert, x, tritium.reinterpret(out, tldt), block=256)
    assert torch.equal(out.view(torch.uint8)[finite], bits(ref)[finite])


@pytest.mark.parametrize("src_", FORMATS, ids=IDS)
@pytest.mark.parametrize("dst_", FORMATS, ids=IDS)
def test_fp8_to_fp8_every_bit_pattern(src_, dst_, mode):
    """Between formats: the exact value rounded once (the GPU goes through fp16, which holds every fp8 value)."""
    x = all_patterns(src_[1])
    y = run(convert, x, torch.zeros(256, dtype=dst_[1]))
    ref = satfinite(x, dst_[1], dst_[2])
    if src_[1] == dst_[1]:
        ref = x
    ok = ~x.float().isnan()
    assert torch.equal(bits(y)[ok], bits(ref)[ok])
    assert y.float()[~ok].isnan().all()


def rtz_reference(x, values):
    """Round toward zero onto the finite non-negative ``values`` (sorted), saturating; NaN kept."""
    a = np.abs(x.astype(np.float64))
    i = np.clip(np.searchsorted(values, a, side="right") - 1, 0, len(values) - 1)
    return np.where(np.isnan(x), np.nan, np.copysign(values[i], x))


@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_downcast_toward_zero(tdt_, mode):
    tldt, tdt, largest = tdt_
    x = downcast_inputs(tdt, largest, torch.float32)
    y = run(convert_rtz, x, torch.zeros(x.numel(), dtype=tdt), block=256)
    v = all_patterns(tdt).double()
    v = np.unique(v[v.isfinite() & (v >= 0)].numpy())
    ref = rtz_reference(x.numpy(), v)
    got = y.double().numpy()
    nz = ref != 0  # a zero's sign: fnuz formats have no -0
    np.testing.assert_array_equal(got[nz], ref[nz])
    assert (got[~nz & ~np.isnan(ref)] == 0).all()


@pytest.mark.parametrize("dst", ["fp16", "bf16"])
def test_downcast_toward_zero_16_bit(dst, mode):
    """fp32 -> fp16 / bf16 with rounding rtz: the float of the type nearest to x with |result| <= |x| (finite
    values stay finite)."""
    g = torch.Generator().manual_seed(1)
    x = torch.cat([torch.randn(3000, generator=g) * 1000, torch.randn(1000, generator=g) * 1e-6,
                   torch.tensor([7e4, -1e5, 3.4e38, np.inf, -np.inf, np.nan, 0.0])])
    tdt = WIDE[dst][1]
    y = run(convert_rtz, x, torch.zeros(x.numel(), dtype=tdt), block=256).double()
    xd = x.double()
    fin = x.isfinite()
    assert (y[fin].abs() <= xd[fin].abs()).all() and y[fin].isfinite().all()
    up = torch.nextafter(y[fin].to(tdt), torch.tensor(np.inf, dtype=tdt)).double()
    dn = torch.nextafter(y[fin].to(tdt), torch.tensor(-np.inf, dtype=tdt)).double()
    nxt = torch.where(xd[fin] >= 0, up, dn)  # the next value away from zero is beyond x
    assert (nxt.abs() > xd[fin].abs()).all()
    assert torch.equal(y[~fin & ~x.isnan()], xd[~fin & ~x.isnan()]) and y[x.isnan()].isnan().all()


# ------------------------------------------------------------------------------------------------- memory, bits
@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_copy_keeps_every_bit_pattern(tdt_, mode):
    tldt, tdt, _ = tdt_
    x = all_patterns(tdt)
    y = run(copy, x, torch.zeros(256, dtype=tdt))
    assert torch.equal(bits(y), bits(x))
    raw = torch.zeros(256, dtype=torch.int8)
    run(copy, x, tritium.reinterpret(raw, tldt))
    assert torch.equal(raw.view(torch.uint8), bits(x))


@tritium.jit
def bitcasts(X, B, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    x = tl.load(X + o, mask=m)
    b = x.to(tl.uint8, bitcast=True)
    tl.store(B + o, b, mask=m)
    tl.store(Y + o, b.to(X.dtype.element_ty, bitcast=True).to(tl.float32) * 2, mask=m)


@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_bitcast_to_and_from_bytes(tdt_, mode):
    tldt, tdt, _ = tdt_
    x = all_patterns(tdt)
    b, y = torch.zeros(256, dtype=torch.uint8), torch.zeros(256)
    bitcasts[(4,)](x, b, y, 256, BLOCK=64)
    assert torch.equal(b, bits(x))
    assert same_values(y, x.float() * 2)


@tritium.jit
def masked_other(X, Y, N, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(X + o, mask=o < N, other=OTHER)
    z = tl.zeros([BLOCK], X.dtype.element_ty) + tl.full([BLOCK], 1.5, X.dtype.element_ty)
    tl.store(Y + o, tl.where(o % 3 == 0, x, z).to(tl.float32))


@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_masked_load_other_and_constants(tdt_, mode):
    tldt, tdt, _ = tdt_
    x = torch.randn(40).to(tdt)
    y = torch.zeros(64)
    masked_other[(1,)](x, y, 40, OTHER=-2.0, BLOCK=64)
    xs = torch.cat([x.float(), torch.full((24,), -2.0)])
    o = torch.arange(64)
    assert torch.equal(y, torch.where(o % 3 == 0, xs, torch.full((64,), 1.5)))


# --------------------------------------------------------------------------------------------------- arithmetic
@tritium.jit
def arith(X, Y, Z, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    x = tl.load(X + o, mask=m)
    y = tl.load(Y + o, mask=m)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "fma":
        r = x * y + x
    elif OP == "scalar":
        r = x * 0.5 + 0.1
    else:
        r = tl.where(x < y, -x, y)
    tl.store(Z + o, r, mask=m)


def fp8_rand(tdt, n, scale, g):
    return (torch.randn(n, generator=g) * scale).to(tdt)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "fma", "scalar", "where"])
@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_same_format_arithmetic(tdt_, op, mode):
    """fp8 op fp8 computes in fp32 and rounds the result to the fp8 type as the cast does (division is fp32, as
    Triton promotes / and %); Python float scalars are fp8 constants."""
    tldt, tdt, largest = tdt_
    g = torch.Generator().manual_seed(hash(op) % 1000)
    n = 1000
    x, y = fp8_rand(tdt, n, 8, g), fp8_rand(tdt, n, 8, g)
    y = torch.where(y.float() == 0, torch.ones(n).to(tdt), y)
    xf, yf = x.float(), y.float()
    ref = {"add": lambda: xf + yf, "sub": lambda: xf - yf, "mul": lambda: xf * yf, "div": lambda: xf / yf,
           "max": lambda: torch.maximum(xf, yf), "fma": lambda: satfinite(xf * yf, tdt, largest).float() + xf,
           "scalar": lambda: satfinite(xf * 0.5, tdt, largest).float() + torch.tensor(0.1).to(tdt).float(),
           "where": lambda: torch.where(xf < yf, -xf, yf)}[op]()
    if op == "div":
        z = torch.zeros(n)
        arith[(4,)](x, y, z, n, OP=op, BLOCK=256)
        torch.testing.assert_close(z, ref, rtol=0, atol=0)
        return
    z = torch.zeros(n, dtype=tdt)
    arith[(4,)](x, y, z, n, OP=op, BLOCK=256)
    assert torch.equal(bits(z), bits(satfinite(ref, tdt, largest))), (z.float()[:8], ref[:8])


@pytest.mark.parametrize("other", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("tdt_", FORMATS[:2], ids=IDS[:2])
def test_mixed_arithmetic_upcasts(tdt_, other, mode):
    """fp8 with fp16 / fp32 computes in the wider type; with bf16 in fp32 (Triton's promotion)."""
    tldt, tdt, _ = tdt_
    g = torch.Generator().manual_seed(3)
    wt = WIDE[other][1]
    x, y = fp8_rand(tdt, 500, 4, g), (torch.randn(500, generator=g) * 4).to(wt)
    res = torch.float32 if other in ("bf16", "fp32") else torch.float16
    z = torch.zeros(500, dtype=res)
    arith[(2,)](x, y, z, 500, OP="mul", BLOCK=256)
    assert torch.equal(z, x.to(res) * y.to(res))


@pytest.mark.parametrize("tdt_", [FORMATS[0], FORMATS[2]], ids=[IDS[0], IDS[2]])
def test_formats_meet_in_fp16(tdt_, mode):
    """Two different fp8 formats compute in fp16 (Triton 3.6)."""
    x = fp8_rand(tdt_[1], 300, 4, torch.Generator().manual_seed(4))
    y = fp8_rand(torch.float8_e5m2, 300, 4, torch.Generator().manual_seed(5))
    z = torch.zeros(300, dtype=torch.float16)
    arith[(2,)](x, y, z, 300, OP="add", BLOCK=256)
    assert torch.equal(z, x.half() + y.half())


@tritium.jit
def row_max(X, Y, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    x = tl.load(X + r * BLOCK + tl.arange(0, BLOCK))
    tl.store(Y + r, tl.max(x, axis=0).to(tl.float32))


@pytest.mark.parametrize("tdt_", FORMATS, ids=IDS)
def test_reduction(tdt_, mode):
    x = fp8_rand(tdt_[1], 8 * 64, 10, torch.Generator().manual_seed(6))
    y = torch.zeros(8)
    row_max[(8,)](x, y, BLOCK=64)
    assert torch.equal(y, x.float().view(8, 64).amax(dim=1))


def test_npy_program_names_the_fp8_conversions():
    """The fast mode's program holds fp8 values as float32 and rounds with the format's table."""
    from tritium.compiler import ASTSource, compile

    k = compile(ASTSource(arith, {"X": "*fp8e4nv", "Y": "*fp8e4nv", "Z": "*fp8e4nv", "N": "i32"},
                          constexprs={"OP": "add", "BLOCK": 64}), target="interpreter")
    assert "_rt.round_fp8(" in k.asm["npy"] and "'f8E4M3FN'" in k.asm["npy"]
