"""Float atomics: max / min of fp32 / fp64 in the total order of their bits (-NaN < -inf < .. < -0.0 < +0.0 < .. <
+inf < +NaN, how the GPU computes them through the integer orderings), fp16 / bf16 / fp32 / fp64 atomic add; 16-bit
float max / min refused at the kernel's line (as in Triton).  Run on the interpreter here; the same kernels compile
for cuda:80 / cuda:90 (ptxas accepts them) and run on the GPU in tests/gpu/test_float_atomics_gpu.py."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile
from tritium.errors import CompilationError


@triton.jit
def atomic_extreme(OUT, X, N, NOUT: tl.constexpr, BLOCK: tl.constexpr, MAX: tl.constexpr):
    # every program folds its block of X into OUT[i % NOUT]: many programs race on each slot
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    if MAX:
        tl.atomic_max(OUT + offs % NOUT, x, mask=m)
    else:
        tl.atomic_min(OUT + offs % NOUT, x, mask=m)


@triton.jit
def atomic_sum(OUT, X, N, NOUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.atomic_add(OUT + offs % NOUT, tl.load(X + offs, mask=m), mask=m)


@triton.jit
def atomic_scalar_max(OUT, X, N, BLOCK: tl.constexpr):
    # one atomic per program on a scalar pointer (thread 0's), its result used
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.max(tl.load(X + offs, mask=offs < N, other=float("-inf")), axis=0)
    old = tl.atomic_max(OUT, v)
    tl.store(OUT + 1 + tl.program_id(0), old)


def order_key(a):
    """The total order of IEEE floats by their bits, as unsigned keys (written apart from the interpreter's)."""
    a = np.ascontiguousarray(a)
    ut = {4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    bits = a.view(ut)
    top = ut(1) << ut(8 * a.dtype.itemsize - 1)
    return np.where(bits & top, ~bits, bits | top)


def specials(n, dtype, rng):
    """Random values with every kind of special: +-0.0, +-inf, NaN of both signs, denormals."""
    x = rng.standard_normal(n).astype(dtype) * dtype(1000)
    kinds = rng.integers(0, 10, n)
    neg_nan = (np.array([np.nan], dtype) * -1).view({4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize])
    neg_nan |= neg_nan.dtype.type(1) << neg_nan.dtype.type(8 * np.dtype(dtype).itemsize - 1)
    table = {0: dtype(0.0), 1: dtype(-0.0), 2: dtype(np.inf), 3: dtype(-np.inf), 4: dtype(np.nan),
             5: neg_nan.view(dtype)[0], 6: np.finfo(dtype).tiny / dtype(4)}
    for k, v in table.items():
        x[kinds == k] = v
    return x


def reference_extreme(x, init, nout, is_max):
    out = init.copy()
    for i in range(nout):
        vals = np.concatenate([init[i:i + 1], x[i::nout]])
        keys = order_key(vals)
        out[i] = vals[np.argmax(keys) if is_max else np.argmin(keys)]
    return out


def bits(a):
    return np.ascontiguousarray(a).view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("n,nout,block", [(1000, 7, 64), (256, 1, 32), (77, 16, 16)])
def test_max_min_in_the_total_order_on_the_interpreter(dtype, is_max, n, nout, block):
    rng = np.random.default_rng(n * nout + is_max)
    x = specials(n, dtype, rng)
    init = specials(nout, dtype, rng)
    out = init.copy()
    atomic_extreme[(triton.cdiv(n, block),)](out, x, n, NOUT=nout, BLOCK=block, MAX=is_max)
    assert np.array_equal(bits(out), bits(reference_extreme(x, init, nout, is_max)))


def test_scalar_max_returns_the_old_value():
    rng = np.random.default_rng(3)
    n, block = 500, 64
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(1 + triton.cdiv(n, block), -np.inf, np.float32)
    atomic_scalar_max[(triton.cdiv(n, block),)](out, x, n, BLOCK=block)
    assert out[0] == x.max()
    olds = out[1:]  # each program saw some earlier maximum: never above the final one, one of them -inf
    assert np.all(olds <= x.max()) and np.isneginf(olds).any()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "bfloat16"])
def test_atomic_add_of_floats(dtype):
    """Small integers: every order of the additions gives the same exact sum."""
    rng = np.random.default_rng(1)
    n, nout, block = 3000, 5, 128
    if dtype == "bfloat16":
        pytest.importorskip("torch")
        import torch

        x = torch.randint(-4, 5, (n,)).to(torch.bfloat16)
        out = torch.zeros(nout, dtype=torch.bfloat16)
        atomic_sum[(triton.cdiv(n, block),)](out, x, n, NOUT=nout, BLOCK=block)
        want = np.array([x[i::nout].float().sum().item() for i in range(nout)])
        assert np.array_equal(out.float().numpy(), want)
        return
    x = rng.integers(-4, 5, n).astype(dtype)
    out = np.zeros(nout, dtype)
    atomic_sum[(triton.cdiv(n, block),)](out, x, n, NOUT=nout, BLOCK=block)
    assert np.array_equal(out, np.array([x[i::nout].sum() for i in range(nout)], dtype))


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("is_max", [True, False])
def test_16_bit_float_max_min_are_refused_at_the_line(dt, is_max):
    with pytest.raises(CompilationError, match=f"atomic_{'max' if is_max else 'min'} does not support") as e:
        compile(ASTSource(atomic_extreme, {"OUT": f"*{dt}", "X": f"*{dt}", "N": "i32"},
                          constexprs={"NOUT": 4, "BLOCK": 32, "MAX": is_max}), target="interpreter")
    assert "test_float_atomics.py" in str(e.value)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("dt", ["fp32", "fp64"])
def test_float_max_min_compile_through_ptxas(arch, dt):
    """No atom.max.f32 exists (ptxas rejects it): the sign of the value picks the signed max / unsigned min of the
    bits (min: signed min / unsigned max)."""
    pytest.importorskip("llvmlite")
    w = dt[2:]
    for is_max, ops in ((True, (f"max.s{w}", f"min.u{w}")), (False, (f"min.s{w}", f"max.u{w}"))):
        k = compile(ASTSource(atomic_extreme, {"OUT": f"*{dt}", "X": f"*{dt}", "N": "i32"},
                              constexprs={"NOUT": 4, "BLOCK": 128, "MAX": is_max}),
                    target=f"cuda:{arch}", until="cubin")
        ptx = k.asm["ptx"]
        # Triton's spelling: atom.global.<scope>.<sem>.<op>
        assert all(f"atom.global.gpu.acq_rel.{op}" in ptx for op in ops) and f".f{w} " not in ptx.split("atom")[1][:40]


@pytest.mark.parametrize("arch,dt,instr", [(90, "fp16", "add.noftz.f16"), (80, "fp16", "add.noftz.f16"),
                                           (90, "bf16", "add.noftz.bf16"), (80, "bf16", "cas.b32"),
                                           (80, "fp32", "add.f32"), (90, "fp64", "add.f64")])
def test_float_add_compiles_through_ptxas(arch, dt, instr):
    """fp16 / bf16 adds: ``atom.add.noftz`` (bf16 before sm_90: a compare-and-swap loop on the 32-bit word)."""
    pytest.importorskip("llvmlite")
    k = compile(ASTSource(atomic_sum, {"OUT": f"*{dt}", "X": f"*{dt}", "N": "i32"},
                          constexprs={"NOUT": 4, "BLOCK": 128}), target=f"cuda:{arch}", until="cubin")
    sem = "acq_rel.gpu" if instr.startswith("cas") else "gpu.acq_rel"  # Triton's order for each
    assert f"atom.global.{sem}.{instr}" in k.asm["ptx"]
