"""Kernels written the way kernel libraries (Liger-Kernel, unsloth) write them: ``import triton`` (not tritium),
the Triton version probed to pick ``tanh``, ``triton.next_power_of_2`` / ``cdiv``, ``tl.constexpr`` block sizes,
an ``autograd.Function`` around forward and backward kernels, gradients written in place.  Imported only in a
process where ``TRITIUM_AS_TRITON=1`` makes ``triton`` tritium (tests/inductor/test_library_style.py)."""
import operator

import torch
import triton
import triton.language as tl

if tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 0):
    from triton.language.extra.libdevice import rsqrt, tanh
else:  # Triton 2
    from triton.language.math import rsqrt, tanh

MAX_FUSED_SIZE = 65536


def calculate_settings(n):
    block = triton.next_power_of_2(n)
    if block > MAX_FUSED_SIZE:
        raise RuntimeError(f"{n} exceeds the fused size {MAX_FUSED_SIZE}")
    return block, 4 if block < 2048 else 8


@triton.jit
def _geglu_fwd(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    k = 0.7978845608028654  # sqrt(2 / pi)
    gelu = 0.5 * a * (1 + tanh(k * (a + 0.044715 * a * a * a)))
    tl.store(c_ptr + row * stride + offs, gelu.to(b.dtype) * b, mask=mask)


@triton.jit
def _geglu_bwd(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    dc = tl.load(dc_ptr + row * stride + offs, mask=mask, other=0)
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    k = 0.7978845608028654
    t = tanh(k * (a + 0.044715 * a * a * a))
    gelu = 0.5 * a * (1 + t)
    db = dc * gelu.to(dc.dtype)
    dgelu = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * k * (1 + 3 * 0.044715 * a * a)
    da = dc.to(tl.float32) * b.to(tl.float32) * dgelu
    tl.store(a_ptr + row * stride + offs, da.to(dc.dtype), mask=mask)  # gradients in place, as Liger does
    tl.store(b_ptr + row * stride + offs, db, mask=mask)


class GEGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        shape = a.shape
        a, b = a.reshape(-1, shape[-1]).contiguous(), b.reshape(-1, shape[-1]).contiguous()
        c = torch.empty_like(a)
        block, warps = calculate_settings(shape[-1])
        _geglu_fwd[(a.shape[0],)](a, b, c, c.stride(0), n_cols=shape[-1], BLOCK_SIZE=block, num_warps=warps)
        ctx.save_for_backward(a, b)
        ctx.shape = shape
        return c.view(*shape)

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        a, b = a.clone(), b.clone()
        dc = dc.reshape(-1, ctx.shape[-1]).contiguous()
        block, warps = calculate_settings(ctx.shape[-1])
        _geglu_bwd[(dc.shape[0],)](dc, a, b, dc.stride(0), n_cols=ctx.shape[-1], BLOCK_SIZE=block, num_warps=warps)
        return a.view(*ctx.shape), b.view(*ctx.shape)


@triton.jit
def _rms_norm_fwd(y_ptr, x_ptr, w_ptr, rstd_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0)
    rstd = rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride + offs, (x * rstd).to(w.dtype) * w, mask=mask)


def rms_norm(x, w, eps=1e-6):
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    y = torch.empty_like(x2)
    rstd = torch.empty(x2.shape[0], dtype=torch.float32, device=x.device)
    block, warps = calculate_settings(shape[-1])
    _rms_norm_fwd[(x2.shape[0],)](y, x2, w, rstd, x2.stride(0), shape[-1], eps, BLOCK_SIZE=block, num_warps=warps)
    return y.view(*shape), rstd


@triton.jit
def _cross_entropy_fwd_bwd(x_ptr, x_stride, y_ptr, loss_ptr, n_cols, n_non_ignore, ignore_index,
                           BLOCK_SIZE: tl.constexpr):
    """Liger's online-softmax cross entropy: the loss of a row, and the logits overwritten by their gradient."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_stride
    y = tl.load(y_ptr + row)
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            offs = i + tl.arange(0, BLOCK_SIZE)
            tl.store(x_ptr + offs, 0.0, mask=offs < n_cols)
        return
    m = float("-inf")
    d = 0.0
    ori_x_y = tl.load(x_ptr + y).cast(tl.float32)
    for i in range(0, n_cols, BLOCK_SIZE):
        offs = i + tl.arange(0, BLOCK_SIZE)
        xb = tl.load(x_ptr + offs, mask=offs < n_cols, other=float("-inf")).cast(tl.float32)
        block_max = tl.max(xb)
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(xb - m_new))
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK_SIZE):
        offs = i + tl.arange(0, BLOCK_SIZE)
        xb = tl.load(x_ptr + offs, mask=offs < n_cols, other=float("-inf")).cast(tl.float32)
        grad = tl.exp(xb - m) / d
        grad = tl.where(offs == y, grad - 1.0, grad) / n_non_ignore
        tl.store(x_ptr + offs, grad, mask=offs < n_cols)
    tl.store(loss_ptr + row, (lse - ori_x_y) / n_non_ignore)


def cross_entropy(logits, target, ignore_index=-100):
    x = logits.clone().contiguous()
    loss = torch.zeros(x.shape[0], dtype=torch.float32, device=x.device)
    n_non_ignore = int((target != ignore_index).sum().item())
    block = min(MAX_FUSED_SIZE, triton.next_power_of_2(x.shape[1]) // 4)
    _cross_entropy_fwd_bwd[(x.shape[0],)](x, x.stride(0), target, loss, x.shape[1], n_non_ignore, ignore_index,
                                          BLOCK_SIZE=block, num_warps=8)
    return loss.sum(), x  # the loss, and the gradient of its sum with respect to the logits


def swiglu_reference(a, b):
    return torch.nn.functional.silu(a) * b


__all__ = ["GEGLU", "rms_norm", "cross_entropy", "operator"]
