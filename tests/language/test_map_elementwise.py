"""``tl.map_elementwise`` (Triton 3.6): a @jit function of scalars applied per element of broadcast tensors, with
per-element branches (only the taken side runs), several results, ``pack`` elements per call (also where a thread
holds fewer than ``pack`` elements), against NumPy on random inputs across dtypes and shapes.  The same kernels run
on the GPU in tests/gpu/test_map_elementwise_gpu.py."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile
from tritium.errors import CompilationError


@triton.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return (alpha * (tl.exp(x.to(tl.float32)) - 1)).to(x.dtype)


@triton.jit
def selu_kernel(X, Z, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(Z + o, tl.map_elementwise(selu_scalar, tl.load(X + o, mask=m), 1.5), mask=m)


@triton.jit
def collatz_steps(x):
    """A data-dependent loop per element: the number of Collatz steps to reach 1."""
    n = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        n += 1
    return n


@triton.jit
def collatz_kernel(X, Z, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(Z + o, tl.map_elementwise(collatz_steps, tl.load(X + o)))


@triton.jit
def divmod_pack2(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def divmod_kernel(A, B, Q, R, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    a = tl.load(A + r * N + c)
    b = tl.load(B + c)  # broadcast along rows
    q, rem = tl.map_elementwise(divmod_pack2, a, b, pack=2)
    tl.store(Q + r * N + c, q)
    tl.store(R + r * N + c, rem)


def _selu(x, alpha=1.5):
    return np.where(x > 0, x, (alpha * (np.exp(x.astype(np.float32)) - 1)).astype(x.dtype))


def collatz_ref(x):
    out = []
    for v in x.tolist():
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        out.append(n)
    return np.array(out, np.int32)


def run_selu(xp, dtype, n, device=None):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    if device is None:
        z = np.empty_like(x)
        selu_kernel[(triton.cdiv(n, 128),)](x, z, n, BLOCK=128)
        return x, z
    tx = xp.tensor(x, device=device)
    tz = xp.empty_like(tx)
    selu_kernel[(triton.cdiv(n, 128),)](tx, tz, n, BLOCK=128)
    return x, tz.cpu().numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("n", [1, 100, 1000])
def test_branch_per_element(dtype, n):
    x, z = run_selu(None, dtype, n)
    tol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(z, _selu(x), rtol=tol, atol=tol)


def test_data_dependent_loop_per_element():
    x = np.random.default_rng(1).integers(1, 10000, 256).astype(np.int32)
    z = np.empty_like(x)
    collatz_kernel[(1,)](x, z, BLOCK=256)
    np.testing.assert_array_equal(z, collatz_ref(x))


@pytest.mark.parametrize("M,N", [(4, 32), (16, 64), (1, 2)])
def test_pack_two_results_broadcast(M, N):
    rng = np.random.default_rng(M * N)
    a = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    b = rng.integers(1, 17, N).astype(np.int32)
    q, r = np.empty_like(a), np.empty_like(a)
    divmod_kernel[(1,)](a, b, q, r, M=M, N=N)
    qt = np.trunc(a / b).astype(np.int32)  # C division, as tl's // on integers
    np.testing.assert_array_equal(q, qt)
    np.testing.assert_array_equal(r, a - qt * b)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_compiles_for_gpus_with_a_branch(target):
    pytest.importorskip("llvmlite")
    k = compile(ASTSource(selu_kernel, {"X": "*fp32", "Z": "*fp32", "n": "i32"}, {"BLOCK": 128}), target=target,
                until="llir")
    assert "tt.map_elementwise" in k.asm["ttir"]
    k = compile(ASTSource(divmod_kernel, {"A": "*i32", "B": "*i32", "Q": "*i32", "R": "*i32"}, {"M": 4, "N": 32}),
                target=target, until="llir")
    assert "sdiv" in k.asm["llir"] or "srem" in k.asm["llir"]


@triton.jit
def _two_of_three(a, b, c):
    return a, b


@triton.jit
def bad_kernel(X, Z, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(Z + o, tl.map_elementwise(_two_of_three, tl.load(X + o), pack=3))


def test_bad_pack_is_a_compile_error_at_the_line():
    with pytest.raises(CompilationError, match="multiple of 3") as e:
        compile(ASTSource(bad_kernel, {"X": "*fp32", "Z": "*fp32"}, {"BLOCK": 16}), target="interpreter")
    assert "tl.map_elementwise(_two_of_three" in str(e.value)
