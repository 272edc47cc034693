"""Triton 3.6 semantics where tritium computed something else (conformance issue 14), on the interpreter's fast and
step-through modes and in the TTIR the GPU compiles:

* shifts of mixed signedness: ``a >> b`` is arithmetic or logical by the signedness of the tensor the operator is
  called on (the left operand; the right one when the left is a Python value) before the operands are promoted,
  then the promoted values shift (``int8 >> uint8``: uint8 values, arithmetic shift);
* atomics on the element types Triton refuses (read-modify-write atomics on int16 / uint16 and narrower, fp16 /
  bf16 other than ``atomic_add``; compare-and-swap on widths other than 16 / 32 / 64 bits) are CompilationErrors at
  the call's line, with Triton's wording; what Triton accepts (16-bit compare-and-swap, fp16 / bf16 add) runs.

References are NumPy on random inputs."""
import inspect

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import ASTSource, compile
from tritium.errors import CompilationError

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
SIGNED = {np.dtype(np.uint8): np.int8, np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32,
          np.dtype(np.uint64): np.int64}
UNSIGNED = {np.dtype(v): k.type for k, v in SIGNED.items()}


def promote(a, b):
    """Triton's integer promotion (``integer_promote_impl``, C's usual arithmetic conversions) of numpy dtypes."""
    a, b = np.dtype(a), np.dtype(b)
    if (a.kind == "i") == (b.kind == "i"):
        return a if a.itemsize > b.itemsize else b
    if a.kind == "u":
        return a if a.itemsize >= b.itemsize else b
    return b if b.itemsize >= a.itemsize else a


def signed_of(dt):
    dt = np.dtype(dt)
    return np.dtype(SIGNED.get(dt, dt))


def unsigned_of(dt):
    dt = np.dtype(dt)
    return dt if dt.kind == "u" else np.dtype(UNSIGNED[dt])


def shift_ref(x, y, op, arithmetic):
    """``x op y`` in the promoted type; ``>>`` arithmetic (on the signed view) or logical (on the unsigned one)."""
    p = promote(x.dtype, y.dtype)
    xp, yp = x.astype(p), y.astype(p)
    if op == "<<":
        u = unsigned_of(p)
        return (xp.view(u) << yp.astype(u)).view(p)
    view = signed_of(p) if arithmetic else unsigned_of(p)
    return (xp.view(view) >> yp.astype(view)).view(p)


@tritium.jit
def shift_pair(X, Y, Z, OP: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(X + o)
    y = tl.load(Y + o)
    if OP == ">>":
        tl.store(Z + o, x >> y)
    else:
        tl.store(Z + o, x << y)


def random_ints(rng, dt, n):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


@pytest.mark.parametrize("op", [">>", "<<"])
@pytest.mark.parametrize("xt", INTS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("yt", INTS, ids=lambda t: np.dtype(t).name)
def test_mixed_signedness_shifts(xt, yt, op, mode):
    rng = np.random.default_rng(abs(hash((np.dtype(xt).name, np.dtype(yt).name, op))) % 2 ** 32)
    n = 128
    p = promote(xt, yt)
    x = random_ints(rng, xt, n)
    y = rng.integers(0, p.itemsize * 8, n).astype(yt)  # shift amounts valid in the promoted type
    z = np.zeros(n, p)
    shift_pair[(1,)](x, y, z, OP=op, BLOCK=n)
    np.testing.assert_array_equal(z, shift_ref(x, y, op, arithmetic=np.dtype(xt).kind == "i"))


def test_int8_shift_uint8_as_triton():
    """The issue's example: Triton 3.6 gives [-1, -64, 16, 2] (int8 >> uint8 -> uint8, arithmetic)."""
    x = np.array([-1, -128, 64, 5], np.int8)
    y = np.array([6, 1, 2, 1], np.uint8)
    z = np.zeros(4, np.uint8)
    shift_pair[(1,)](x, y, z, OP=">>", BLOCK=4)
    np.testing.assert_array_equal(z.view(np.int8), [-1, -64, 16, 2])
    w = np.zeros(4, np.uint8)
    shift_pair[(1,)](x.view(np.uint8), y.view(np.int8), w, OP=">>", BLOCK=4)  # uint8 >> int8: logical
    np.testing.assert_array_equal(w, [3, 64, 16, 2])


@tritium.jit
def shift_scalars(X, Z, n, NEG: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(X + o)
    tl.store(Z + o, x >> 3)                      # a constexpr: the tensor's type
    tl.store(Z + BLOCK + o, x >> n)              # a run-time int32 scalar: promoted, x's signedness
    tl.store(Z + 2 * BLOCK + o, NEG >> (x & 7))  # a Python int on the left: the right tensor's signedness
    tl.store(Z + 3 * BLOCK + o, x << 2)


@pytest.mark.parametrize("xt", INTS, ids=lambda t: np.dtype(t).name)
def test_scalar_shift_operands(xt, mode):
    rng = np.random.default_rng(np.dtype(xt).itemsize)
    n = 64
    x = random_ints(rng, xt, n)
    z = np.zeros(4 * n, np.int64)
    signed = np.dtype(xt).kind == "i"
    neg = -100 if signed else 100
    shift_scalars[(1,)](x, z, 5, NEG=neg, BLOCK=n)
    i32 = np.full(n, 5, np.int32)
    expect = [shift_ref(x, np.full(n, 3, xt), ">>", signed),
              shift_ref(x, i32, ">>", signed),
              shift_ref(np.full(n, neg, xt), x & np.array(7, xt), ">>", signed),
              shift_ref(x, np.full(n, 2, xt), "<<", signed)]
    for k, e in enumerate(expect):
        np.testing.assert_array_equal(z[k * n:(k + 1) * n], e.astype(np.int64), err_msg=f"output {k}")


@pytest.mark.parametrize("xt,yt,op", [("i8", "u8", "arith.shrsi"), ("u8", "i8", "arith.shrui"),
                                      ("i32", "u64", "arith.shrsi"), ("u16", "i64", "arith.shrui")])
def test_the_ttir_shifts_as_the_interpreter(xt, yt, op):
    """The frontend's TTIR (what the GPU compiles) picks the same shift: the interpreter runs that TTIR too."""
    k = compile(ASTSource(shift_pair, {"X": f"*{xt}", "Y": f"*{yt}", "Z": f"*{promote_ts(xt, yt)}"},
                          constexprs={"OP": ">>", "BLOCK": 64}), target="cuda:90", until="ttir")
    ttir = k.asm["ttir"]
    other = "arith.shrui" if op == "arith.shrsi" else "arith.shrsi"
    assert op in ttir and other not in ttir


def promote_ts(a, b):
    dt = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
          "i64": np.int64, "u64": np.uint64}
    p = promote(dt[a], dt[b])
    return ("u" if p.kind == "u" else "i") + str(p.itemsize * 8)


# ----------------------------------------------------------------------------------------------------- atomics
@tritium.jit
def atomic_op(P, V, C, OUT, OP: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(V + o)
    if OP == "add":
        old = tl.atomic_add(P + o, v)
    elif OP == "xchg":
        old = tl.atomic_xchg(P + o, v)
    elif OP == "max":
        old = tl.atomic_max(P + o, v)
    elif OP == "min":
        old = tl.atomic_min(P + o, v)
    elif OP == "and":
        old = tl.atomic_and(P + o, v)
    elif OP == "or":
        old = tl.atomic_or(P + o, v)
    elif OP == "xor":
        old = tl.atomic_xor(P + o, v)
    else:
        old = tl.atomic_cas(P + o, tl.load(C + o), v)
    tl.store(OUT + o, old)


def _call_line(op):
    """The source line of ``atomic_op``'s call for ``op``."""
    lines, start = inspect.getsourcelines(atomic_op.fn)
    name = f"tl.atomic_{op}("
    return start + next(i for i, ln in enumerate(lines) if name in ln)


RMW = ["add", "xchg", "max", "min", "and", "or", "xor"]
TL = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int1": "i1", "fp8e4nv": "fp8e4nv",
      "fp8e5": "fp8e5", "fp16": "fp16", "bf16": "bf16"}


def compile_atomic(op, ty):
    sig = {"P": f"*{ty}", "V": f"*{ty}", "C": f"*{ty}", "OUT": f"*{ty}"}
    return compile(ASTSource(atomic_op, sig, constexprs={"OP": op, "BLOCK": 16}), target="interpreter")


@pytest.mark.parametrize("op", RMW)
@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int1", "fp8e4nv", "fp8e5"])
def test_narrow_rmw_atomics_are_refused_at_the_line(op, dt):
    with pytest.raises(CompilationError, match=f"atomic_{op} does not support {dt}") as e:
        compile_atomic(op, TL[dt])
    assert e.value.filename.endswith("test_conformance_semantics.py") and e.value.lineno == _call_line(op)


@pytest.mark.parametrize("op", ["xchg", "max", "min", "and", "or", "xor"])
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_16_bit_float_atomics_other_than_add_are_refused(op, dt):
    with pytest.raises(CompilationError, match=f"atomic_{op} does not support {dt}") as e:
        compile_atomic(op, TL[dt])
    assert e.value.lineno == _call_line(op)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int1", "fp8e4nv"])
def test_cas_on_8_bit_and_bool_is_refused(dt):
    with pytest.raises(CompilationError, match=r"atomic_cas only supports elements with width \{16, 32, 64\}") as e:
        compile_atomic("cas", TL[dt])
    assert e.value.lineno == _call_line("cas")


def test_refused_in_step_through_mode_at_the_line(mode):
    """Launching runs the same checks: a CompilationError at the call's line in both modes."""
    a = np.zeros(16, np.int16)
    with pytest.raises(CompilationError, match="atomic_add does not support int16") as e:
        atomic_op[(1,)](a, a.copy(), a.copy(), a.copy(), OP="add", BLOCK=16)
    assert e.value.lineno == _call_line("add")


@pytest.mark.parametrize("dt", [np.int16, np.uint16, np.float16, "bf16"])
def test_16_bit_compare_and_swap_runs(dt, mode):
    """What Triton accepts keeps working: atomic_cas on 16-bit elements (half the lanes match their comparand)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    n = 64
    if dt == "bf16":
        mk = lambda a: torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)  # noqa: E731
        p0, v, other = (rng.integers(-50, 50, n).astype(np.float32) for _ in range(3))
    else:
        mk = lambda a: torch.from_numpy(a.astype(dt))  # noqa: E731
        info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
        gen = (lambda: random_ints(rng, dt, n)) if info else (lambda: (rng.standard_normal(n) * 100).astype(dt))
        p0, v, other = gen(), gen(), gen()
    match = rng.random(n) < 0.5
    cmp = np.where(match, p0, other)
    match = cmp == p0
    p, out = mk(p0), mk(np.zeros(n, p0.dtype))
    atomic_op[(1,)](p, mk(v), mk(cmp), out, OP="cas", BLOCK=n)
    got = p.float().numpy() if dt == "bf16" else p.numpy()
    ref = np.where(match, v, p0)
    np.testing.assert_array_equal(got, mk(ref).float().numpy() if dt == "bf16" else ref)
    np.testing.assert_array_equal(out.float().numpy() if dt == "bf16" else out.numpy(),
                                  mk(p0).float().numpy() if dt == "bf16" else p0)


@tritium.jit
def add_into(P, V, N, NOUT: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.atomic_add(P + o % NOUT, tl.load(V + o, mask=m), mask=m)


@pytest.mark.parametrize("dt", ["fp16", "bf16", "int32", "uint32", "int64", "fp32"])
def test_atomic_add_triton_accepts_still_runs(dt, mode):
    torch = pytest.importorskip("torch")
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16, "int32": torch.int32, "uint32": torch.int32,
           "int64": torch.int64, "fp32": torch.float32}[dt]
    g = torch.Generator().manual_seed(8)
    n, nout = 512, 512  # one add per slot: exact in every type
    if tdt.is_floating_point:
        p0, v = (torch.randn(nout, generator=g) * 10).to(tdt), (torch.randn(n, generator=g) * 10).to(tdt)
    else:
        p0, v = torch.randint(-1000, 1000, (nout,), generator=g, dtype=tdt), \
            torch.randint(-1000, 1000, (n,), generator=g, dtype=tdt)
    p = p0.clone()
    pa = tritium.reinterpret(p, tl.uint32) if dt == "uint32" else p
    va = tritium.reinterpret(v, tl.uint32) if dt == "uint32" else v
    add_into[(4,)](pa, va, n, NOUT=nout, BLOCK=128)
    assert torch.equal(p, (p0.float() + v.float()).to(tdt) if tdt.is_floating_point else p0 + v)


def test_16_bit_cas_compiles_for_cuda():
    pytest.importorskip("llvmlite")
    pytest.importorskip("tritium_nvidia")
    k = compile(ASTSource(atomic_op, {"P": "*i16", "V": "*i16", "C": "*i16", "OUT": "*i16"},
                          constexprs={"OP": "cas", "BLOCK": 128}), target="cuda:90", until="ptx")
    assert "cas.b16" in k.asm["ptx"]
