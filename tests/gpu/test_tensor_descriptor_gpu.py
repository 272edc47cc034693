"""Tensor descriptors on the GPU (the cuda backend compiles them into masked loads and stores): the kernels of
tests/language/test_tensor_descriptor.py on torch CUDA tensors against torch -- partial blocks, zero / NaN
padding, dropped stores, 3-D, descriptors through control flow, host-side TensorDescriptor arguments and the
tutorial's persistent matmuls.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

from tests.language import test_tensor_descriptor as T
from tritium.tools.tensor_descriptor import TensorDescriptor

torch = pytest.importorskip("torch")

import tritium as triton  # noqa: E402




def _data(gpu, shape, dtype):
    if dtype.is_floating_point:
        return gpu.randn(*shape, dtype=dtype)
    return gpu.randint(-100, 100, shape, dtype=dtype)


@pytest.mark.parametrize("dtype,M,N,BM,BN", [
    (torch.float32, 64, 64, 16, 32), (torch.float32, 37, 52, 16, 16), (torch.float16, 50, 40, 32, 16),
    (torch.float16, 3, 200, 4, 64), (torch.int8, 45, 80, 16, 32), (torch.int32, 20, 12, 8, 4),
])
def test_scale_2d(gpu, dtype, M, N, BM, BN):
    x = _data(gpu, (M, N), dtype)
    y = torch.zeros(M, N, dtype=dtype, device=gpu.device)
    T.scale_2d[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, y, M, N, N, N, BM=BM, BN=BN, ALPHA=3)
    gpu.done()
    want = (x.to(torch.int64) * 3).to(dtype) if not dtype.is_floating_point else x * 3
    assert torch.equal(y, want)


@pytest.mark.parametrize("om,on", [(8, 8), (-4, 0), (0, -8), (24, 28), (-16, -16)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_load_padding(gpu, om, on, pad):
    M, N, BM, BN = 30, 36, 16, 16
    x = gpu.randn(M, N)
    out = gpu.empty(BM * BN)
    T.block_dump[(1,)](x, out, M, N, om, on, BM=BM, BN=BN, PAD=pad)
    gpu.done()
    want = torch.full((BM, BN), 0.0 if pad == "zero" else float("nan"), device=gpu.device)
    rows = slice(max(om, 0), min(om + BM, M))
    cols = slice(max(on, 0), min(on + BN, N))
    want[rows.start - om:rows.stop - om, cols.start - on:cols.stop - on] = x[rows, cols]
    assert torch.equal(out.view(BM, BN).nan_to_num(7.0), want.nan_to_num(7.0))


@pytest.mark.parametrize("om,on", [(20, 24), (-8, -4), (0, 32)])
def test_store_drops_out_of_shape(gpu, om, on):
    M, N, W = 24, 30, 48
    y = torch.zeros(M + 8, W, device=gpu.device)
    T.block_fill[(1,)](y, M, N, W, om, on, 5.0, BM=16, BN=16)
    gpu.done()
    want = torch.zeros_like(y)
    want[max(om, 0):min(om + 16, M), max(on, 0):min(on + 16, N)] = 5.0
    assert torch.equal(y, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8])
def test_copy_3d(gpu, dtype):
    A, B, C = 5, 11, 48
    x = _data(gpu, (A, B, C), dtype)
    y = torch.zeros(A, B, C, dtype=dtype, device=gpu.device)
    T.copy_3d[(triton.cdiv(A, 2), triton.cdiv(B, 4), triton.cdiv(C, 32))](x, y, A, B, C, B * C, C, B * C, C,
                                                                           BA=2, BB=4, BC=32)
    gpu.done()
    assert torch.equal(y, (x.to(torch.int64) + 1).to(dtype) if dtype == torch.int8 else x + 1)


def test_loop_and_control_flow(gpu):
    M, N = 45, 100
    x = gpu.randn(M, N)
    out = torch.zeros(M, 16, device=gpu.device)
    T.row_sums[(triton.cdiv(M, 16),)](x, out, M, N, BM=16, BN=32)
    M2, N2, BM, BN = 32, 48, 8, 16
    x2 = gpu.randn(M2, N2)
    y2 = torch.zeros(M2, N2, device=gpu.device)
    T.carried[(M2 // BM,)](x2, y2, M2, N2, BM=BM, BN=BN)
    gpu.done()
    torch.testing.assert_close(out, x.sum(1, keepdim=True).expand(M, 16), rtol=1e-5, atol=1e-4)
    want = torch.zeros_like(y2)
    want[:, :2 * BN] = x2[:, :2 * BN] + 1.0
    for p in range(M2 // BM):
        r = slice(p * BM, (p + 1) * BM)
        want[r, 2 * BN:] = 0.0 if p % 2 == 1 else x2[r, 2 * BN:] * 2.0
    assert torch.equal(y2, want)


@pytest.mark.parametrize("dtype,M,N,BM,BN", [(torch.float32, 37, 52, 16, 16), (torch.float16, 50, 40, 32, 16),
                                             (torch.bfloat16, 64, 64, 32, 32), (torch.float16, 45, 96, 32, 32),
                                             (torch.float32, 3, 48, 8, 16)])
def test_host_descriptors(gpu, dtype, M, N, BM, BN):
    x = gpu.randn(M, N, dtype=dtype)
    y = torch.zeros(M, N, dtype=dtype, device=gpu.device)
    T.host_scale[(triton.cdiv(M, BM), triton.cdiv(N, BN))](TensorDescriptor.from_tensor(x, [BM, BN]),
                                                           TensorDescriptor.from_tensor(y, [BM, BN]), ALPHA=2.0)
    big = gpu.randn(40, 64)
    sub = TensorDescriptor(big, [30, 36], [64, 1], [16, 16], padding="nan")
    out = torch.zeros(32, 48, device=gpu.device)
    T.host_scale[(2, 3)](sub, TensorDescriptor.from_tensor(out, [16, 16]), ALPHA=1.0)
    gpu.done()
    assert torch.equal(y, x * 2)
    want = torch.full((32, 48), float("nan"), device=gpu.device)
    want[:30, :36] = big[:30, :36]
    assert torch.equal(out.nan_to_num(7.0), want.nan_to_num(7.0))


@pytest.mark.parametrize("M,N,K,subtile", [(256, 256, 128, False), (200, 136, 72, True)])
def test_persistent_matmul_device_descriptors(gpu, M, N, K, subtile):
    a = gpu.randn(M, K, dtype=torch.float16)
    b = gpu.randn(N, K, dtype=torch.float16)
    c = torch.zeros(M, N, dtype=torch.float16, device=gpu.device)
    BM, BN, BK, NUM_SMS = 64, 64, 32, 8
    asked = []

    def alloc(size, alignment, stream):
        asked.append((size, alignment))
        return torch.empty(size, device=gpu.device, dtype=torch.int8)

    triton.set_allocator(alloc)
    grid = (min(NUM_SMS, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    k = T.matmul_kernel_descriptor_persistent[grid](a, b, c, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
                                                GROUP_SIZE_M=8, EPILOGUE_SUBTILE=subtile, NUM_SMS=NUM_SMS,
                                                WARP_SPECIALIZE=False, FLATTEN=True)
    gpu.done()
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), rtol=1e-2, atol=1e-2)
    # sm_90: the descriptors are TMA tensor maps in global scratch from the installed allocator, 128 bytes each per
    # program (K = 72 is not a multiple of 16: A's and B's rows may not be 16-byte multiples, so only C's, and its
    # store only when N is a multiple of 16 too)
    n_maps = 3 if K % 16 == 0 else (1 if N % 16 == 0 else 0)
    assert k.metadata["global_scratch_size"] == 128 * n_maps
    assert asked == ([(128 * n_maps * grid[0], 128)] if n_maps else [])


def test_persistent_matmul_host_descriptors(gpu):
    M, N, K = 192, 128, 96
    a = gpu.randn(M, K, dtype=torch.float16)
    b = gpu.randn(N, K, dtype=torch.float16)
    c = torch.zeros(M, N, dtype=torch.float16, device=gpu.device)
    BM, BN, BK, NUM_SMS = 64, 64, 32, 4
    T.matmul_kernel_tma_persistent[(NUM_SMS,)](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]), M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
        GROUP_SIZE_M=8, EPILOGUE_SUBTILE=False, NUM_SMS=NUM_SMS, WARP_SPECIALIZE=False)
    gpu.done()
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), rtol=1e-2, atol=1e-2)



@pytest.mark.parametrize("dtype,M,N,K,BM,BN,BK,warps", [
    (torch.float16, 512, 384, 256, 128, 128, 64, 8), (torch.float16, 300, 200, 136, 128, 64, 64, 4),
    (torch.bfloat16, 256, 264, 520, 64, 128, 64, 4), (torch.float32, 200, 136, 100, 64, 64, 32, 4),
    (torch.float8_e4m3fn, 384, 256, 512, 128, 128, 128, 8), (torch.float8_e5m2, 130, 72, 256, 64, 64, 128, 4),
])
def test_matmul_kernel_tma(gpu, dtype, M, N, K, BM, BN, BK, warps):
    """Triton 3.6's tutorial matmul_kernel_tma (host descriptors, b.T): TMA loads pipelined on mbarriers, a TMA
    store; sizes that are not multiples of the block (TMA fills and drops at the edges) -- against torch."""
    if dtype.itemsize == 1:
        a = (gpu.randn(M, K) * 0.5).to(dtype)
        b = (gpu.randn(N, K) * 0.5).to(dtype)
        out_t = torch.float16
    else:
        a, b = gpu.randn(M, K, dtype=dtype), gpu.randn(N, K, dtype=dtype)
        out_t = dtype
    c = torch.full((M, N), 7.0, dtype=out_t, device=gpu.device)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    k = T.matmul_kernel_tma[grid](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]), M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
        GROUP_SIZE_M=4, num_warps=warps, num_stages=3)
    gpu.done()
    # the sm_90 path under test: A and B through TMA, C too when a row of it spans a multiple of 16 bytes (a TMA
    # store writes whole 16-byte chunks: else C takes ordinary stores, which write exactly its shape); M is free
    assert len(k.metadata["tensormaps"]) == (3 if N * out_t.itemsize % 16 == 0 else 2)
    want = a.float() @ b.float().T
    tol = dict(rtol=2e-2, atol=2e-2) if dtype != torch.float32 else dict(rtol=1e-2, atol=5e-2)  # tf32
    torch.testing.assert_close(c.float(), want.to(out_t).float(), **tol)


def test_tma_store_and_load_of_a_sub_matrix(gpu):
    """A descriptor over part of a larger tensor: TMA loads read NaN past its shape, stores drop what is past it
    (nothing outside the descriptor's rows and columns changes; the destination's 50 fp32 columns, 200 bytes, are
    not a multiple of 16 bytes: a TMA store would write columns 50 and 51, so it is stored with ordinary stores)."""
    big = gpu.randn(48, 96)
    src = TensorDescriptor(big, [40, 70], [96, 1], [32, 32], padding="nan")
    dst_buf = torch.full((48, 96), -3.0, device=gpu.device)
    dst = TensorDescriptor(dst_buf, [35, 50], [96, 1], [32, 32])
    T.host_scale[(2, 3)](src, dst, ALPHA=2.0)
    gpu.done()
    want = torch.full((48, 96), -3.0, device=gpu.device)
    want[:35, :50] = big[:35, :50] * 2.0
    assert torch.equal(dst_buf, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("B,S,D,H,BM,BN,BK,warps,stages", [
    (2, 256, 256, 256, 128, 128, 64, 4, 3), (3, 200, 192, 384, 64, 128, 64, 8, 3),
    (2, 77, 128, 128, 128, 128, 128, 8, 2), (1, 130, 320, 256, 64, 64, 64, 4, 4),
    (16, 64, 128, 256, 64, 128, 64, 4, 3), (16, 176, 64, 128, 128, 128, 64, 8, 2),
    (3, 37, 96, 264, 64, 128, 64, 4, 2), (6, 42, 128, 432, 128, 128, 64, 8, 3),  # Liger's test_mlp shapes
])
def test_swiglu_3d_descriptors(gpu, dtype, B, S, D, H, BM, BN, BK, warps, stages):
    """Liger-Kernel's fused SwiGLU forward shape: [1, BM, BK] tiles of x [B, S, D] (TMA, three coordinates, rows past
    S zero-filled within each batch) into two dots, [1, BM, BN] results stored by TMA (rows past S dropped, the
    next batch's untouched) or by pointers -- against torch."""
    x = gpu.randn(B, S, D, dtype=dtype)
    wg, wu = gpu.randn(H, D, dtype=dtype) * 0.1, gpu.randn(H, D, dtype=dtype) * 0.1
    a = torch.full((B, S, H), 7.0, dtype=dtype, device=gpu.device)
    g = torch.full((B, S, H), 7.0, dtype=dtype, device=gpu.device)
    k = T.swiglu_3d_desc[(triton.cdiv(S, BM), triton.cdiv(H, BN), B)](
        TensorDescriptor.from_tensor(x, [1, BM, BK]), TensorDescriptor.from_tensor(wg, [BN, BK]),
        TensorDescriptor.from_tensor(wu, [BN, BK]), TensorDescriptor.from_tensor(a, [1, BM, BN]),
        TensorDescriptor.from_tensor(g, [1, BM, BN]), D, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)
    gpu.done()
    ranks = [t["rank"] for t in k.metadata["tensormaps"]]
    # TMA stores: the stored shape's inner dim spans a multiple of 16 bytes (H here), whatever B and S are
    assert ranks == [3, 2, 2, 3, 3]
    gf = x.float() @ wg.float().T
    uf = x.float() @ wu.float().T
    torch.testing.assert_close(g.float(), gf.to(dtype).float(), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(a.float(), (torch.nn.functional.silu(gf) * uf).to(dtype).float(), rtol=3e-2, atol=3e-2)
