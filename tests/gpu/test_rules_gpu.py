"""Scans, block pointers, fp8 casts, histogram, gather, non-splat constants and inline asm on the GPU, against
torch.  Kernels: tests/nvidia/extra_kernels.py and the hand-written TTIR of tests/nvidia/test_rules_extra.py
(compiled with ``compile(text, target="cuda:90")``).  Skipped without a CUDA device; compile-only under
TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

import tritium as triton
import tritium.language as tl
from tests.nvidia import extra_kernels as K

torch = pytest.importorskip("torch")


def close(a, b, **kw):
    torch.testing.assert_close(a, b, **kw)


def _ref_cumsum(x, dim, reverse):
    if reverse:
        return torch.flip(torch.cumsum(torch.flip(x, (dim,)), dim), (dim,))
    return torch.cumsum(x, dim)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("block,num_warps,n", [(16, 4, 13), (256, 4, 256), (1024, 4, 1000), (2048, 8, 2048),
                                               (1024, 1, 777)])
def test_cumsum_1d(gpu, block, num_warps, n, reverse):
    x = gpu.randint(-5, 6, (n,))
    y = gpu.empty(n, dtype=torch.int32)
    K.cumsum_1d[(1,)](x, y, n, BLOCK=block, REVERSE=reverse, num_warps=num_warps)
    gpu.done()
    close(y, _ref_cumsum(x, 0, reverse).to(torch.int32))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("bm,bn", [(32, 64), (64, 16), (8, 256), (128, 128)])
def test_cumsum_2d(gpu, axis, reverse, bm, bn):
    x = gpu.randn(bm, bn)
    y = gpu.empty(bm, bn)
    K.cumsum_2d[(1,)](x, y, bn, BM=bm, BN=bn, AXIS=axis, REVERSE=reverse)
    gpu.done()
    close(y, _ref_cumsum(x, axis, reverse), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("reverse", [False, True])
def test_affine_scan_noncommutative(gpu, reverse):
    n = 512
    a = gpu.rand(n) * 0.5 + 0.75
    b = gpu.randn(n)
    oa, ob = gpu.empty(n), gpu.empty(n)
    K.affine_scan[(1,)](a, b, oa, ob, BLOCK=n, REVERSE=reverse)
    gpu.done()
    a64, b64 = a.double().cpu(), b.double().cpu()
    ra, rb = torch.empty(n, dtype=torch.float64), torch.empty(n, dtype=torch.float64)
    order = range(n - 1, -1, -1) if reverse else range(n)
    ca, cb = None, None
    for i in order:  # combine(acc, x_i) in scan order, reverse too (Triton: flip, scan, flip back)
        if ca is None:
            ca, cb = a64[i], b64[i]
        else:
            ca, cb = ca * a64[i], cb * a64[i] + b64[i]
        ra[i], rb[i] = ca, cb
    close(oa.double().cpu(), ra, rtol=1e-3, atol=1e-3)
    close(ob.double().cpu(), rb, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("axis", [0, 1])
def test_cummax_2d(gpu, axis):
    x = gpu.randint(-1000, 1000, (64, 32))
    y = gpu.empty(64, 32, dtype=torch.int32)
    K.cummax_2d[(1,)](x, y, 32, BM=64, BN=32, AXIS=axis)
    gpu.done()
    close(y, torch.cummax(x, axis).values)


@pytest.mark.parametrize("M,N", [(64, 128), (50, 77)])
def test_block_ptr_copy(gpu, M, N):
    src = gpu.randn(N, M).t()
    dst = gpu.empty(M, 2 * N)[:, ::2]
    K.block_ptr_copy[(triton.cdiv(M, 32),)](src, dst, M, N, src.stride(0), src.stride(1), dst.stride(0),
                                            dst.stride(1), BM=32, BN=64, SCALE=2.0)
    gpu.done()
    close(dst, src * 2)


def test_block_ptr_rowsum(gpu):
    M, N = 40, 256
    x = gpu.randn(M, N)
    out = gpu.empty(M)
    K.block_ptr_rowsum[(triton.cdiv(M, 16),)](x, out, M, N, x.stride(0), BM=16, BN=64)
    gpu.done()
    close(out, x.sum(1), atol=1e-4, rtol=1e-4)


def test_block_ptr_nan_padding(gpu):
    n = 150
    x = gpu.randn(n)
    y = gpu.empty(192)
    K.block_ptr_1d_nan[(3,)](x, y, n, BLOCK=64)
    gpu.done()
    close(y[:n], x)
    assert torch.isnan(y[n:]).all()


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fp8", ["float8e4nv", "float8e5"])
def test_fp8_roundtrip(gpu, src, fp8):
    tdt = getattr(torch, src)
    t8 = {"float8e4nv": torch.float8_e4m3fn, "float8e5": torch.float8_e5m2}[fp8]
    n = 1000
    x = (gpu.randn(n) * 8).to(tdt)
    y8 = torch.empty(n, dtype=t8, device=gpu.device)
    y = gpu.empty(n, dtype=tdt)
    K.fp8_roundtrip[(triton.cdiv(n, 256),)](x, y8, y, n, FP8=getattr(tl, fp8), BLOCK=256)
    gpu.done()
    ref8 = x.float().to(t8)  # round to nearest even; in range, so saturation does not matter
    close(y8.view(torch.uint8), ref8.view(torch.uint8), atol=0, rtol=0) if src == "float32" else None
    close(y.float(), y8.float().to(tdt).float())


@pytest.mark.parametrize("fp8", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_load(gpu, fp8):
    n = 3000
    x8 = (gpu.randn(n) * 4).to(getattr(torch, fp8))
    y = gpu.empty(n)
    K.fp8_load[(triton.cdiv(n, 1024),)](x8, y, n, BLOCK=1024)
    gpu.done()
    close(y, x8.float() * 2)


# ------------------------------------------------------------------ hand-written TTIR
def _ttir_kernel(text):
    from tritium.compiler import compile

    return compile(text, target="cuda:90", options={"num_warps": 4})


def _launch(kernel, grid, *args):
    from tritium.runtime import driver

    driver.launch(kernel, grid, list(args))


def test_histogram(gpu):
    from tests.nvidia.extra_kernels import HIST

    x = gpu.randint(-3, 70, (512,))
    o = gpu.empty(64, dtype=torch.int32)
    _launch(_ttir_kernel(HIST), (1, 1, 1), x, o)
    gpu.done()
    ref = torch.bincount(x[(x >= 0) & (x < 64)].long(), minlength=64).to(torch.int32)
    close(o, ref)


def test_gather(gpu):
    from tests.nvidia.extra_kernels import GATHER

    x = gpu.randn(128)
    idx = gpu.randint(0, 128, (128,))
    o = gpu.empty(128)
    _launch(_ttir_kernel(GATHER), (1, 1, 1), x, idx, o)
    gpu.done()
    close(o, x[idx.long()])


def test_non_splat_constant(gpu):
    from tests.nvidia.extra_kernels import CONST

    o = gpu.empty(8)
    _launch(_ttir_kernel(CONST), (1, 1, 1), o)
    gpu.done()
    vals = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    keep = [True, False, True, True, False, True, True, False]
    for i in range(8):
        if keep[i]:
            assert o[i].item() == vals[i]
        else:
            assert torch.isnan(o[i])


def test_inline_asm_packed(gpu):
    from tests.nvidia.extra_kernels import ASM

    x = gpu.randint(-128, 128, (512,), dtype=torch.int8)
    o = torch.empty(512, dtype=torch.int8, device=gpu.device)
    _launch(_ttir_kernel(ASM), (1, 1, 1), x, o)
    gpu.done()
    close(o, x ^ 1)


def test_inline_asm_two_results(gpu):
    from tests.nvidia.extra_kernels import ASM2

    x = gpu.randn(256)
    o = gpu.empty(256)
    _launch(_ttir_kernel(ASM2), (1, 1, 1), x, o)
    gpu.done()
    close(o, x * 2 + torch.arange(1, 257, device=x.device, dtype=torch.float32))


@pytest.mark.parametrize("op", ["linear_recurrence", "first"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_noncommutative_scan_2d(gpu, op, axis, reverse):
    """The GPU's scan order is the interpreter's and Triton's: prefix first in scan order, reverse too."""
    from tests.language.test_scan_order import reference, scan2d

    M, N = 32, 64
    a = gpu.rand(M, N) * 0.5 + 0.75
    b = gpu.randn(M, N)
    out = gpu.empty(M, N)
    scan2d[(1,)](a, b, out, M, N, axis, reverse, op)
    gpu.done()
    ref = reference(a.cpu().numpy(), b.cpu().numpy(), axis, reverse, op)
    close(out.cpu().double(), torch.from_numpy(ref.copy()), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("xblock,rblock,num_warps", [(32, 128, 8), (64, 64, 8), (8, 512, 4), (64, 8, 4)])
@pytest.mark.parametrize("shape", [(1028, 1028), (300, 77)])
def test_strided_argmax_argmin_with_nans(gpu, shape, xblock, rblock, num_warps):
    # Inductor's looped reduction over dim 0 (its four accumulators carried in the load's layout: rule 7 of
    # remove_layout_conversions, tests/passes/test_remove_layout_conversions.py); ties and NaN columns included
    from tests.passes.test_remove_layout_conversions import strided_argmax_argmin_kernel
    r, c = shape
    x = gpu.randint(-3, 4, shape).float()  # ties: torch.argmax takes the first index
    x[r // 3, : c // 2] = float("nan")
    x = x.contiguous()
    amax, amin = gpu.empty(c, dtype=torch.int64), gpu.empty(c, dtype=torch.int64)
    strided_argmax_argmin_kernel[(triton.cdiv(c, xblock),)](x, amax, amin, c, r, XBLOCK=xblock, RBLOCK=rblock,
                                                             num_warps=num_warps)
    gpu.done()
    assert torch.equal(amax.cpu(), torch.argmax(x.cpu(), 0))
    assert torch.equal(amin.cpu(), torch.argmin(x.cpu(), 0))
