"""Wrong results Triton 3.6's own test_core.py found on the GPU (2026-11-28), each with its root cause; the kernels
run here on the interpreter and, the same kernels, on the GPU in tests/gpu/test_core_regressions_gpu.py.

* bf16 scans: ``tl.cumsum`` / ``tl.cumprod`` of bf16 accumulated in bf16 on the GPU (every partial sum rounded to
  8 bits of mantissa); Triton promotes bf16 to fp32 first, as ``tl.max`` / ``tl.min`` do (the result is fp32).
* an atomic's result used where the layout holds an element in several threads: only the thread doing the
  atomic had the old value; the others read garbage (only the first row and column of a broadcast came right).
* a ``while`` in a ``for`` loading and storing one address: the load's inline PTX had no side effects, so LLVM
  took it for a read of no memory and hoisted it out of both loops (1 where 40 is right).
* a kernel parameter named ``type`` / ``len`` (or any builtin the generated launcher called): the launcher takes
  the kernel's parameter names as its own and called the user's argument.
"""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile

torch = pytest.importorskip("torch")


@triton.jit
def scan2d(X, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
           PROD: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)[:, None]
    rn = tl.arange(0, BLOCK_N)[None, :]
    x = tl.load(X + rm * BLOCK_N + rn)
    if PROD:
        z = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        z = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    tl.store(Z + rm * BLOCK_N + rn, z)


@triton.jit
def atomic_result_broadcast(P, OUT, N: tl.constexpr, CAS: tl.constexpr):
    # old: [N, 1], one atomic per row, then broadcast against [1, N] in a store's address
    rows = tl.arange(0, N)[:, None]
    if CAS:
        old = tl.atomic_cas(P + rows, rows, rows * 0 + 9)  # P[r] == r: every row swaps
    else:
        old = tl.atomic_add(P + rows, 1)
    cols = tl.arange(0, N)[None, :]
    tl.store(OUT + old * N + cols, (old * N + cols).to(OUT.dtype.element_ty))


@triton.jit
def atomic_result_2d(P, OLD, N: tl.constexpr):
    # a [N, N] atomic whose result every thread holding a copy must see (N * N < threads: copies across lanes)
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    old = tl.atomic_add(P + offs, offs)
    tl.store(OLD + offs, old)


@triton.jit
def while_in_for(data, countPtr):
    for i in range(10):
        count = tl.load(countPtr)
        while count > 0:
            tl.store(data, tl.load(data) + 1.0)
            count = count - 2


@triton.jit
def builtin_named_params(type, len, int, id, tuple, Exception, isinstance, _M, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(type + o, tl.load(len + o) + int + id * 2 + tuple * 3 + Exception * 4 + isinstance * 5 + _M * 6)


def scan_reference(x, axis, reverse, prod):
    """The scan in fp32 (as Triton computes a bf16 scan), rounded to the input's dtype."""
    t = x.float()
    if reverse:
        t = t.flip(axis)
    t = torch.cumprod(t, axis) if prod else torch.cumsum(t, axis)
    if reverse:
        t = t.flip(axis)
    return t.to(x.dtype)


def scan_input(shape, prod, gen, device="cpu"):
    """bf16 inputs whose partial sums drift far from bf16's 8 bits (sums) or stay finite and away from 0 (products)."""
    if prod:
        x = 1 + (torch.rand(shape, generator=gen) - 0.5) * 0.2
    else:
        x = torch.randn(shape, generator=gen) * 4
    return x.to(torch.bfloat16).to(device)


@pytest.mark.parametrize("prod", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_bf16_scan_accumulates_in_fp32(prod, axis, reverse):
    gen = torch.Generator().manual_seed(7 + 2 * axis + reverse)
    x = scan_input((32, 16), prod, gen)
    z = torch.empty_like(x)
    scan2d[(1,)](x, z, BLOCK_M=32, BLOCK_N=16, AXIS=axis, REVERSE=reverse, PROD=prod)
    want = scan_reference(x, axis, reverse, prod)
    torch.testing.assert_close(z.float(), want.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod", "max", "min"])
def test_bf16_reductions_and_scans_return_fp32(fn):
    @triton.jit
    def k(X, Z, FN: tl.constexpr):
        x = tl.load(X + tl.arange(0, 16))
        if FN == "cumsum":
            y = tl.cumsum(x, 0)
        elif FN == "cumprod":
            y = tl.cumprod(x, 0)
        elif FN == "max":
            y = tl.max(x, 0)
        else:
            y = tl.min(x, 0)
        tl.static_assert(y.dtype == tl.float32)
        tl.store(Z, tl.sum(y, 0) if FN[:3] == "cum" else y)

    compile(ASTSource(k, {"X": "*bf16", "Z": "*fp32", "FN": "constexpr"}, {"FN": fn}), target="interpreter")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16])
@pytest.mark.parametrize("cas", [False, True])
def test_atomic_result_broadcast(dtype, cas):
    n = 4
    p = torch.arange(n, dtype=torch.int32)
    out = torch.zeros(n * n, dtype=dtype)
    atomic_result_broadcast[(1,)](p, out, N=n, CAS=cas)
    assert torch.equal(out, torch.arange(n * n).to(dtype))  # row r (old == r) writes r * n .. r * n + n - 1
    assert torch.equal(p, torch.full((n,), 9, dtype=torch.int32) if cas else torch.arange(1, n + 1, dtype=torch.int32))


def test_atomic_result_2d():
    n = 8
    gen = torch.Generator().manual_seed(3)
    p = torch.randint(-100, 100, (n * n,), generator=gen, dtype=torch.int32)
    old = torch.zeros_like(p)
    before = p.clone()
    atomic_result_2d[(1,)](p, old, N=n)
    assert torch.equal(old, before)
    assert torch.equal(p, before + torch.arange(n * n, dtype=torch.int32))


def test_while_in_for_loads_and_stores_one_address():
    data = torch.zeros(1)
    while_in_for[(1,)](data, torch.tensor([8], dtype=torch.int32))
    assert data.item() == 40.0


def test_parameters_named_like_builtins():
    x = torch.from_numpy(np.random.default_rng(5).random(16).astype(np.float32))
    want = x + 1 + 2 * 2 + 3 * 3 + 4 * 4 + 5 * 5 + 6 * 6
    for _ in range(3):  # the first launch compiles, the later ones take the generated launcher's fast path
        out = torch.zeros(16)
        builtin_named_params[(1,)](out, x, 1, 2, 3, 4, 5, 6, N=16)
        torch.testing.assert_close(out, want)
        out = torch.zeros(16)
        builtin_named_params[(1,)](type=out, len=x, int=1, id=2, tuple=3, Exception=4, isinstance=5, _M=6, N=16)
        torch.testing.assert_close(out, want)
