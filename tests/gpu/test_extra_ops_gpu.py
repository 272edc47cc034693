"""tl.histogram, tl.gather, tl.inline_asm_elementwise and tl.extra.cuda.libdevice on the GPU, against torch / NumPy on
random inputs.  Kernels: tests/nvidia/extra_ops_kernels.py.  Skipped without a CUDA device; compile-only under
TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import math

import numpy as np
import pytest

import tritium as triton
from tests.nvidia import extra_ops_kernels as K

torch = pytest.importorskip("torch")


def _np(t):
    return t.cpu().numpy()


@pytest.mark.parametrize("n,block,bins,num_warps", [(100, 128, 16, 4), (1000, 1024, 256, 4), (777, 1024, 64, 8),
                                                    (37, 64, 512, 1)])
def test_histogram(gpu, n, block, bins, num_warps):
    x = gpu.randint(-5, bins + 5, (n,))
    o = gpu.empty(bins, dtype=torch.int32)
    K.histogram_k[(1,)](x, o, n, BLOCK=block, BINS=bins, MASKED=True, num_warps=num_warps)
    gpu.done()
    v = _np(x).astype(np.int64)[np.arange(n) % 3 != 1]
    ref = np.bincount(v[(v >= 0) & (v < bins)], minlength=bins)
    np.testing.assert_array_equal(_np(o), ref)


def test_histogram_unmasked(gpu):
    x = gpu.randint(0, 64, (256,))
    o = gpu.empty(64, dtype=torch.int32)
    K.histogram_k[(1,)](x, o, 256, BLOCK=256, BINS=64, MASKED=False)
    gpu.done()
    np.testing.assert_array_equal(_np(o), np.bincount(_np(x), minlength=64))


@pytest.mark.parametrize("n,k,dtype", [(16, 16, "float32"), (64, 8, "float16"), (8, 128, "int32")])
def test_gather_1d(gpu, n, k, dtype):
    dt = getattr(torch, dtype)
    s = (gpu.randn(n) * 100).to(dt)
    i = gpu.randint(0, n, (k,))
    o = gpu.empty(k, dtype=dt)
    K.gather_1d[(1,)](s, i, o, N=n, K=k)
    gpu.done()
    torch.testing.assert_close(o, s[i.long()], rtol=0, atol=0)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("m,n,other", [(8, 16, 4), (32, 8, 64), (64, 64, 32)])
def test_gather_2d(gpu, m, n, other, axis):
    s = gpu.randn(m, n)
    ax = axis % 2
    ishape = (other, n) if ax == 0 else (m, other)
    i = gpu.randint(0, (m, n)[ax], ishape)
    o = gpu.empty(*ishape)
    K.gather_2d[(1,)](s, i, o, M=m, N=n, IM=ishape[0], IN=ishape[1], AXIS=axis)
    gpu.done()
    torch.testing.assert_close(o, torch.gather(s, ax, i.long()), rtol=0, atol=0)


@pytest.mark.cuda_only("inline PTX in tl.inline_asm_elementwise")
def test_inline_asm_shift(gpu):
    n = 1000
    x = gpu.randint(-2 ** 20, 2 ** 20, (n,))
    o = gpu.empty(n, dtype=torch.int32)
    K.asm_shift[(triton.cdiv(n, 256),)](x, o, n, BLOCK=256)
    gpu.done()
    torch.testing.assert_close(o, x * 8)


@pytest.mark.cuda_only("inline PTX in tl.inline_asm_elementwise")
@pytest.mark.parametrize("m,n,bm,bn", [(13, 29, 16, 32), (64, 64, 64, 64)])
def test_inline_asm_two_results(gpu, m, n, bm, bn):
    x = gpu.randint(-1000, 1000, (m,))
    y = gpu.randint(-1000, 1000, (n,))
    o1 = gpu.empty(m, n, dtype=torch.int32)
    o2 = gpu.empty(m, n)
    K.asm_two_results[(1,)](x, y, o1, o2, m, n, BM=bm, BN=bn)
    gpu.done()
    torch.testing.assert_close(o1, x[:, None] + y[None, :])
    torch.testing.assert_close(o2, (x.float() * 0.5)[:, None].expand(m, n))


@pytest.mark.cuda_only("inline PTX in tl.inline_asm_elementwise")
def test_inline_asm_packed_u8(gpu):
    n = 1000
    x = gpu.randint(0, 256, (n,), dtype=torch.uint8)
    o = gpu.empty(n, dtype=torch.int32)
    K.asm_packed_u8[(triton.cdiv(n, 512),)](x, o, n, BLOCK=512)
    gpu.done()
    torch.testing.assert_close(o, x.to(torch.int32) + 7)


_UNARY = {"exp": (np.exp, (-10, 10)), "log": (np.log, (0.01, 100)), "sin": (np.sin, (-10, 10)),
          "tanh": (np.tanh, (-5, 5)), "erf": (np.frompyfunc(math.erf, 1, 1), (-3, 3)),
          "floor": (np.floor, (-100, 100)), "round": (None, (-100, 100)), "rsqrt": (lambda v: 1 / np.sqrt(v), (0.1, 9)),
          "log1p": (np.log1p, (-0.5, 10)), "expm1": (np.expm1, (-2, 2)), "asin": (np.arcsin, (-1, 1)),
          "cbrt": (np.cbrt, (-50, 50)), "fast_expf": (np.exp, (-5, 5))}


@pytest.mark.parametrize("name,dtype", [(nm, dt) for nm in sorted(_UNARY) for dt in ("float32", "float64")
                                        if dt == "float32" or not nm.startswith("fast_")])  # fast_*f: fp32 only
def test_libdevice_unary(gpu, name, dtype):
    ref_fn, (lo, hi) = _UNARY[name]
    n = 1000
    x = (gpu.rand(n) * (hi - lo) + lo).to(getattr(torch, dtype))
    o = gpu.empty(n, dtype=x.dtype)
    K.ld_unary[(triton.cdiv(n, 256),)](x, o, n, NAME=name, BLOCK=256)
    gpu.done()
    x64 = _np(x).astype(np.float64)
    if name == "round":
        t = np.trunc(x64)
        ref = np.where(np.abs(x64 - t) >= 0.5, t + np.sign(x64), t)
    else:
        ref = np.asarray(ref_fn(x64), dtype=np.float64)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    if name == "fast_expf":
        tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(o).astype(np.float64), ref, **tol)


@pytest.mark.parametrize("name,ref", [("atan2", np.arctan2), ("pow", np.power), ("fmod", np.fmod),
                                      ("hypot", np.hypot), ("fmax", np.fmax)])
def test_libdevice_binary(gpu, name, ref):
    n = 777
    x = gpu.rand(n) * 4 + 0.1
    y = gpu.randn(n) * 3
    o = gpu.empty(n)
    K.ld_binary[(triton.cdiv(n, 128),)](x, y, o, n, NAME=name, BLOCK=128)
    gpu.done()
    np.testing.assert_allclose(_np(o), ref(_np(x).astype(np.float64), _np(y).astype(np.float64)), rtol=3e-6,
                               atol=1e-6)


def test_libdevice_integers_and_predicates(gpu):
    n = 512
    x = gpu.randint(-2 ** 31, 2 ** 31 - 1, (n,))
    y = gpu.randint(-2 ** 31, 2 ** 31 - 1, (n,))
    outs = {name: gpu.empty(n, dtype=torch.int32) for name in ("popc", "clz", "brev", "mulhi", "ffs")}
    for name in ("popc", "clz", "brev", "ffs"):
        K.ld_unary[(1,)](x, outs[name], n, NAME=name, BLOCK=n)
    K.ld_binary[(1,)](x, y, outs["mulhi"], n, NAME="mulhi", BLOCK=n)
    f = gpu.randn(n)
    f[::5] = float("nan")
    isnan = gpu.empty(n, dtype=torch.int32)
    K.ld_unary[(1,)](f, isnan, n, NAME="isnan", BLOCK=n)
    gpu.done()
    xs, ys = [int(v) for v in _np(x)], [int(v) for v in _np(y)]
    u = [v & 0xFFFFFFFF for v in xs]
    np.testing.assert_array_equal(_np(outs["popc"]), [bin(v).count("1") for v in u])
    np.testing.assert_array_equal(_np(outs["clz"]), [32 - v.bit_length() for v in u])
    np.testing.assert_array_equal(_np(outs["ffs"]), [(v & -v).bit_length() for v in u])
    np.testing.assert_array_equal(_np(outs["brev"]).view(np.uint32), [int(f"{v:032b}"[::-1], 2) for v in u])
    np.testing.assert_array_equal(_np(outs["mulhi"]), [(a * b) >> 32 for a, b in zip(xs, ys)])
    np.testing.assert_array_equal(_np(isnan) != 0, np.isnan(_np(f)))


@pytest.mark.parametrize("m,n,bm,bn", [(5, 7, 8, 8), (30, 60, 32, 64)])
def test_libdevice_broadcast(gpu, m, n, bm, bn):
    x = gpu.randn(m)
    y = gpu.randn(n)
    o = gpu.empty(m, n)
    K.ld_outer[(1,)](x, y, o, m, n, BM=bm, BN=bn)
    gpu.done()
    x64, y64 = _np(x).astype(np.float64)[:, None], _np(y).astype(np.float64)[None, :]
    np.testing.assert_allclose(_np(o), np.arctan2(x64, y64) + x64 ** 2 + np.exp(y64), rtol=1e-5, atol=1e-5)
