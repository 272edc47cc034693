"""Fused attention (forward), softmax(Q K^T * scale) V without materialising the N x N scores:
``python examples/fused_attention.py``.

Each program owns BLOCK_M query rows of one (batch, head) and streams the keys and values in BLOCK_N blocks,
keeping a running maximum ``m``, a running sum ``l`` and the output accumulator rescaled as the maximum grows (the
online softmax of FlashAttention).  ``CAUSAL`` masks keys after each query.  Both products are ``tl.dot``s on
tensor cores.  Runs on a GPU when tritium drives one, else on the interpreter (see examples/_common.py)."""
import math

import numpy as np

import tritium as triton
import tritium.language as tl
from _common import empty_like, report, to_device


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1)
    base = head * n_ctx * HEAD_DIM
    rm = start_m + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rm[:, None] * HEAD_DIM + rd[None, :], mask=rm[:, None] < n_ctx, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    qk_scale = scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    end = tl.minimum(start_m + BLOCK_M, n_ctx) if CAUSAL else n_ctx
    for start_n in range(0, end, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[None, :] * HEAD_DIM + rd[:, None], mask=rn[None, :] < n_ctx, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        keep = rn[None, :] < n_ctx
        if CAUSAL:
            keep = keep & (rm[:, None] >= rn[None, :])
        qk = tl.where(keep, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + rn[:, None] * HEAD_DIM + rd[None, :], mask=rn[:, None] < n_ctx, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * HEAD_DIM + rd[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rm[:, None] < n_ctx)


def attention(q, k, v, causal, block_m=64, block_n=64):
    """softmax(q k^T / sqrt(d)) v for contiguous fp16 [heads, n_ctx, head_dim] arrays."""
    heads, n_ctx, d = q.shape
    o = empty_like(q)
    grid = (triton.cdiv(n_ctx, block_m), heads)
    attention_fwd[grid](q, k, v, o, n_ctx, 1.0 / math.sqrt(d), HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n,
                        CAUSAL=causal, num_warps=4, num_stages=2)
    return o


def reference(q, k, v, causal):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def main(heads=4, n_ctx=200, head_dim=64):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((heads, n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    for causal in (False, True):
        out = attention(to_device(q), to_device(k), to_device(v), causal)
        report(f"fused attention (causal={causal})", out, reference(q, k, v, causal), atol=1e-2, rtol=0)


if __name__ == "__main__":
    main()
