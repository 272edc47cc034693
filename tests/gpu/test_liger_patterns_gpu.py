"""Kernel patterns of Liger-Kernel's fused MLP and MoE, across their autotune spaces, against torch.

Liger's own tests (``bench/liger.py --device cuda``) failed 15 of 1,990 cases with tritium on the H200 (2026-11-29):
test_mlp (its TMA SwiGLU forward, autotuned over 32 configs) and test_fused_moe (a gathered grouped GEMM, two dots
sharing one loaded tile, 32 configs), at random-looking cases.  An autotuner picks whichever config is fastest, so a
config that computes a wrong result shows up only where it wins.  These tests take the autotuner out: every config
of the patterns runs by itself, at Liger's test shapes and dtypes (fp32 with tf32 dots included), and each output is
compared with torch.

* ``swiglu_fwd``: Liger's ``_swiglu_kernel_forward`` shape -- a flat grid over M and N tiles regrouped by
  ``GROUP_M`` (its L2 swizzle) with the batch on axis 1, ``[1, BM, BK]`` TMA tiles of x ``[B, S, D]`` into two dots
  with transposed weight tiles, and three ``[1, BM, BN]`` TMA stores into column slices of one ``[B, S, 3H]`` buffer;
* ``gathered_two_dots``: Liger's ``_fused_up_proj_swiglu_kernel`` shape -- rows gathered through an index
  vector, each M tile one expert's, a ``tl.range`` loop with masked loads of x and of two weight tiles, two dots
  sharing x, results stored with masks.
"""
import itertools

import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import OutOfResources
from tritium.tools.tensor_descriptor import TensorDescriptor
from tests.language.test_tensor_descriptor import swiglu_3d_dots

torch = pytest.importorskip("torch")


@triton.jit
def swiglu_fwd(x_desc, wg_desc, wu_desc, a_desc, g_desc, u_desc, S, D, H, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    b = tl.program_id(1)
    tiles_m = tl.cdiv(S, BM)
    tiles_n = tl.cdiv(H, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    m0 = (first_m + (pid % per_group) % group_m) * BM
    n0 = ((pid % per_group) // group_m) * BN
    acc_g, acc_u = swiglu_3d_dots(x_desc, wg_desc, wu_desc, b, m0, n0, D, BM, BN, BK)
    a = acc_g * tl.sigmoid(acc_g) * acc_u
    dt = x_desc.dtype
    a_desc.store([b, m0, n0], tl.reshape(a, [1, BM, BN]).to(dt))
    g_desc.store([b, m0, n0], tl.reshape(acc_g, [1, BM, BN]).to(dt))
    u_desc.store([b, m0, n0], tl.reshape(acc_u, [1, BM, BN]).to(dt))


#: Liger's forward (BM 64 / 128) and inference (BM 32 / 64) autotune spaces, covered pairwise: every BM, BK,
#: GROUP_M, warps and stages value, and each BM with each (warps, stages)
SWIGLU_CONFIGS = [
    (32, 64, 1, 4, 2), (32, 128, 4, 8, 3), (32, 64, 4, 8, 2), (32, 128, 1, 4, 3),
    (64, 64, 8, 4, 3), (64, 128, 1, 8, 2), (64, 64, 1, 8, 3), (64, 128, 4, 4, 2),
    (128, 64, 1, 4, 2), (128, 128, 8, 8, 2), (128, 64, 8, 8, 3), (128, 64, 1, 4, 3),
]


def _close(got, want, dtype, k=1):
    """Liger's measure (1 - the cosine-like similarity of the two, in float64) and an elementwise bound: for fp32
    (tf32 dots: operands keep 10 of 23 mantissa bits) a sum of ``k`` products of unit normals is off by about
    ``1e-3 * sqrt(k)``, so the absolute bound grows with ``k``."""
    g, w = got.double(), want.double()
    diff = 1 - 2 * (g * w).sum() / (g * g + w * w).sum()
    assert torch.isfinite(g).all(), "non-finite values in the output"
    assert diff < 1e-5, f"1 - similarity = {diff:.3g}"
    tol = dict(rtol=2e-2, atol=6e-3 * k ** 0.5) if dtype == torch.float32 else dict(rtol=3e-2, atol=1e-1)
    torch.testing.assert_close(g.float(), w.float(), **tol)


def _fits(dtype, BM, BK, stages, BN=128) -> bool:
    """Whether the config's pipeline stages fit in an H100's shared memory (the autotuner drops those that do not)."""
    return stages * (BM * BK + 2 * BN * BK) * torch.tensor([], dtype=dtype).element_size() <= 220 * 1024


@pytest.mark.parametrize("dtype,BM,BK,GROUP_M,warps,stages", [
    pytest.param(dt, *cfg, id=f"{str(dt)[6:]}-{'-'.join(map(str, cfg))}")
    for dt in (torch.float32, torch.bfloat16, torch.float16) for cfg in SWIGLU_CONFIGS
    if _fits(dt, cfg[0], cfg[1], cfg[4])])
@pytest.mark.parametrize("B,S,D,H", [(2, 256, 256, 512), (6, 42, 128, 432), (3, 37, 96, 264)])
def test_swiglu_fwd_every_config(gpu, dtype, B, S, D, H, BM, BK, GROUP_M, warps, stages):
    BN = 128
    x = gpu.randn(B, S, D, dtype=dtype)
    wg, wu = gpu.randn(H, D, dtype=dtype), gpu.randn(H, D, dtype=dtype)
    agu = gpu.empty(B, S, 3 * H, dtype=dtype)  # A, G, U side by side, as Liger stores them (NaN: unwritten)
    outs = [agu[..., i * H:(i + 1) * H] for i in range(3)]
    descs = [TensorDescriptor.from_tensor(x, [1, BM, BK]), TensorDescriptor.from_tensor(wg, [BN, BK]),
             TensorDescriptor.from_tensor(wu, [BN, BK])] + [TensorDescriptor.from_tensor(o, [1, BM, BN]) for o in outs]
    grid = (triton.cdiv(S, BM) * triton.cdiv(H, BN), B)
    try:
        swiglu_fwd[grid](*descs, S, D, H, BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M, num_warps=warps, num_stages=stages)
    except OutOfResources as e:  # what an autotuner skips
        pytest.skip(str(e))
    gpu.done()
    g = x.float() @ wg.float().T
    u = x.float() @ wu.float().T
    # G and U against torch; A (silu(G) * U, elementwise in fp32) against the kernel's own G and U where the dots
    # are tf32 (an error of 0.01 in G times a U of 16 is beyond any fixed bound), against torch's otherwise
    g_a, u_a = (outs[1].float(), outs[2].float()) if dtype == torch.float32 else (g, u)
    for name, got, want, k in zip("GUA", (outs[1], outs[2], outs[0]), (g, u, torch.nn.functional.silu(g_a) * u_a),
                                  (D, D, 1)):
        try:
            _close(got, want.to(dtype), dtype, k)
        except AssertionError as e:
            raise AssertionError(f"output {name}: {e}") from None


@triton.jit
def gathered_two_dots(x_ptr, w_ptr, gather_ptr, tile_start_ptr, tile_expert_ptr, expert_end_ptr, pre_ptr, post_ptr,
                      H: tl.constexpr, I: tl.constexpr, stride_x, stride_we, stride_wn, stride_pre, stride_post,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    row_start = tl.load(tile_start_ptr + pid_m)
    expert = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    row_end = tl.load(expert_end_ptr + expert)
    rows = (row_start + tl.arange(0, BM)).to(tl.int64)
    row_mask = rows < row_end
    n_idx = pid_n * BN + tl.arange(0, BN)
    n_mask = n_idx < I
    token = tl.load(gather_ptr + rows, mask=row_mask, other=0).to(tl.int64)
    acc_g = tl.zeros((BM, BN), dtype=tl.float32)
    acc_u = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, H, BK):
        k_idx = k + tl.arange(0, BK)
        k_mask = k_idx < H
        x = tl.load(x_ptr + token[:, None] * stride_x + k_idx[None, :], mask=row_mask[:, None] & k_mask[None, :],
                    other=0.0, eviction_policy="evict_first")
        w_mask = n_mask[:, None] & k_mask[None, :]
        wg_ptrs = w_ptr + expert * stride_we + n_idx[:, None] * stride_wn + k_idx[None, :]
        acc_g = tl.dot(x, tl.trans(tl.load(wg_ptrs, mask=w_mask, other=0.0)), acc=acc_g)
        acc_u = tl.dot(x, tl.trans(tl.load(wg_ptrs + I * stride_wn, mask=w_mask, other=0.0)), acc=acc_u)
    out_mask = row_mask[:, None] & n_mask[None, :]
    pre = pre_ptr + rows[:, None] * stride_pre + n_idx[None, :]
    tl.store(pre, acc_g.to(pre_ptr.dtype.element_ty), mask=out_mask)
    tl.store(pre + I, acc_u.to(pre_ptr.dtype.element_ty), mask=out_mask)
    post = post_ptr + rows[:, None] * stride_post + n_idx[None, :]
    tl.store(post, (acc_g * tl.sigmoid(acc_g) * acc_u).to(post_ptr.dtype.element_ty), mask=out_mask)


def _moe_layout(gpu, T, E, K, BM):
    """Liger's routing, simply: each token's K experts, the (token, expert) entries sorted by expert, M tiles of
    BM rows that never straddle two experts."""
    choice = torch.stack([torch.randperm(E, generator=gpu.gen)[:K] for _ in range(T)])  # [T, K]
    order = torch.argsort(choice.flatten(), stable=True)
    gather = (order // K).to(torch.int32)  # the token of each sorted entry
    counts = torch.bincount(choice.flatten(), minlength=E)
    ends = torch.cumsum(counts, 0).to(torch.int32)
    starts, experts = [], []
    for e in range(E):
        lo = int(ends[e] - counts[e])
        for s in range(lo, int(ends[e]), BM):
            starts.append(s)
            experts.append(e)
    dev = gpu.device
    return (gather.to(dev), torch.tensor(starts, dtype=torch.int32, device=dev),
            torch.tensor(experts, dtype=torch.int32, device=dev), ends.to(dev), choice)


MOE_CONFIGS = [(bn, bk, w, s) for (bn, bk), (w, s) in itertools.product([(64, 32), (128, 64), (64, 64), (128, 32)],
                                                                          [(4, 2), (8, 3), (4, 4), (8, 5)])]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("T,E,H,I,K", [(7, 4, 64, 32, 2), (512, 7, 128, 64, 3), (128, 8, 256, 64, 8),
                                       (512, 8, 97, 47, 2)])
@pytest.mark.parametrize("BN,BK,warps,stages", MOE_CONFIGS[::3] + [MOE_CONFIGS[5], MOE_CONFIGS[10]])
def test_gathered_two_dots_every_config(gpu, dtype, T, E, H, I, K, BN, BK, warps, stages):
    BM = 64
    x = gpu.randn(T, H, dtype=dtype)
    w = gpu.randn(E, 2 * I, H, dtype=dtype) * 0.1
    gather, starts, experts, ends, choice = _moe_layout(gpu, T, E, K, BM)
    TK = T * K
    pre, post = gpu.empty(TK, 2 * I, dtype=dtype), gpu.empty(TK, I, dtype=dtype)
    try:
        gathered_two_dots[(len(starts), triton.cdiv(I, BN))](
            x, w, gather, starts, experts, ends, pre, post, H, I, x.stride(0), w.stride(0), w.stride(1), pre.stride(0),
            post.stride(0), BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)
    except OutOfResources as e:  # what an autotuner skips
        pytest.skip(str(e))
    gpu.done()
    expert_of_row = torch.repeat_interleave(torch.arange(E), torch.bincount(choice.flatten(), minlength=E))
    xs = x.float()[gather.long()]  # [TK, H]
    ws = w.float()[expert_of_row.to(x.device)]  # [TK, 2I, H]
    gu = torch.einsum("th,tnh->tn", xs, ws)
    g, u = gu[:, :I], gu[:, I:]
    _close(pre, gu.to(dtype), dtype)
    _close(post, (torch.nn.functional.silu(g) * u).to(dtype), dtype)
