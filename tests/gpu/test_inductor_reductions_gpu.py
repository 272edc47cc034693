"""Reductions and scans in the shape Inductor generates them, on the GPU against torch: a looped ``cumsum`` that
adds the running total of the blocks before (its scan is done in the layout it loaded in, the total carried as a
``[XBLOCK, 1]``), a looped arg-max with Inductor's NaN and tie rules and a Welford layer norm -- at 4 to 16 warps,
where the warps' partials are combined by a butterfly when the combine is costly (``reduce_partials = "auto"``).
Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

import tritium as triton
import tritium.language as tl

torch = pytest.importorskip("torch")


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _select_last(x, mask, dim: tl.constexpr):
    ix = x.to(tl.uint32, bitcast=True)
    return tl.sum(ix * mask, dim, keep_dims=True).to(tl.float32, bitcast=True)


@triton.jit
def looped_cumsum(in_ptr, out_ptr, xnumel, rnumel: tl.constexpr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    total = tl.full([XBLOCK, 1], float("nan"), tl.float32)
    for roffset in tl.range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        x = tl.load(in_ptr + (rindex + rnumel * xindex), rmask & xmask, eviction_policy="evict_first", other=0.0)
        x = tl.broadcast_to(x, [XBLOCK, RBLOCK])
        s, = tl.associative_scan((x,), 1, _add)
        last = _select_last(s, (rbase == RBLOCK - 1).to(tl.uint32), 1)
        out = tl.where(roffset > 0, total + s, s)
        total = tl.where(roffset > 0, total + last, last)
        tl.store(out_ptr + (rindex + rnumel * xindex), out, rmask & xmask)


@triton.jit
def _maximum_with_index(a_value, a_index, b_value, b_index):
    mask = a_value > b_value
    equal = a_value == b_value
    a_isnan = a_value != a_value
    b_isnan = b_value != b_value
    mask |= a_isnan & (not b_isnan)
    equal |= a_isnan & b_isnan
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _max_with_index(value, index, dim: tl.constexpr):
    return tl.reduce((value, index), dim, _maximum_with_index)


@triton.jit
def looped_argmax(in_ptr, out_ptr, xnumel, rnumel: tl.constexpr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    acc = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    acc_index = tl.full([XBLOCK, RBLOCK], 2147483647, tl.int32)
    for roffset in tl.range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        x = tl.load(in_ptr + (rindex + rnumel * xindex), rmask & xmask, eviction_policy="evict_first", other=0.0)
        x = tl.broadcast_to(x, [XBLOCK, RBLOCK])
        nv, ni = _maximum_with_index(acc, acc_index, x, rindex)
        acc = tl.where(rmask & xmask, nv, acc)
        acc_index = tl.where(rmask & xmask, ni, acc_index)
    _, idx = _max_with_index(acc, acc_index, 1)
    tl.store(out_ptr + xindex, idx[:, None], xmask)


@triton.jit
def _welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = mean_2 - mean_1
    new_weight = weight_1 + weight_2
    w2_over_w = tl.where(new_weight == 0.0, 0.0, weight_2 / new_weight)
    return mean_1 + delta * w2_over_w, m2_1 + m2_2 + delta * delta * weight_1 * w2_over_w, new_weight


@triton.jit
def welford_layer_norm(in_ptr, w_ptr, b_ptr, out_ptr, xnumel, rnumel: tl.constexpr, XBLOCK: tl.constexpr,
                       RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    mean = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    weight = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in tl.range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        x = tl.load(in_ptr + (rindex + rnumel * xindex), rmask & xmask, other=0.0)
        x = tl.broadcast_to(x, [XBLOCK, RBLOCK])
        first = weight == 0.0
        weight_next = weight + 1.0
        delta = x - mean
        mean_next = mean + delta / weight_next
        m2_next = m2 + delta * (x - mean_next)
        keep = rmask & xmask
        mean = tl.where(keep, tl.where(first, x, mean_next), mean)
        m2 = tl.where(keep, tl.where(first, 0.0, m2_next), m2)
        weight = tl.where(keep, weight_next, weight)
    mu, var, _ = tl.reduce((mean, m2, weight), 1, _welford_combine)
    mu, var = mu[:, None], var[:, None] / rnumel
    rstd = 1.0 / tl.sqrt(var + 1e-5)
    for roffset in tl.range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        x = tl.load(in_ptr + (rindex + rnumel * xindex), rmask & xmask, other=0.0)
        w = tl.load(w_ptr + rindex, rmask, other=0.0)
        b = tl.load(b_ptr + rindex, rmask, other=0.0)
        tl.store(out_ptr + (rindex + rnumel * xindex), (x - mu) * rstd * w + b, rmask & xmask)


SHAPES = [(37, 4096, 1, 2048, 16), (64, 1000, 2, 256, 4), (16, 3000, 1, 1024, 8), (9, 512, 4, 128, 4)]


@pytest.mark.parametrize("xn,rn,xb,rb,nw", SHAPES)
def test_looped_cumsum(gpu, xn, rn, xb, rb, nw):
    x = gpu.randn(xn, rn)
    y = gpu.empty(xn, rn)
    looped_cumsum[(triton.cdiv(xn, xb),)](x, y, xn, rn, XBLOCK=xb, RBLOCK=rb, num_warps=nw)
    gpu.done()
    torch.testing.assert_close(y, torch.cumsum(x.double(), 1).float(), atol=2e-3, rtol=1e-4)


@pytest.mark.parametrize("xn,rn,xb,rb,nw", SHAPES)
def test_looped_argmax_nan_and_ties(gpu, xn, rn, xb, rb, nw):
    x = gpu.randint(-40, 40, (xn, rn)).float()  # many ties: the lowest index wins
    x[3, 7] = float("nan")  # a NaN wins its row (the first NaN)
    x[3, rn - 2] = float("nan")
    x[5 % xn, rn // 2] = 1000.0
    y = gpu.empty(xn, 1, dtype=torch.int32)
    looped_argmax[(triton.cdiv(xn, xb),)](x, y, xn, rn, XBLOCK=xb, RBLOCK=rb, num_warps=nw)
    gpu.done()
    ref = torch.argmax(x, 1, keepdim=True).to(torch.int32)  # torch: NaN is the max, the first maximum wins
    assert torch.equal(y, ref), (y.flatten()[:12], ref.flatten()[:12])


@pytest.mark.parametrize("xn,rn,xb,rb,nw", SHAPES)
def test_welford_layer_norm(gpu, xn, rn, xb, rb, nw):
    x = gpu.randn(xn, rn) * 3 + 1
    w, b = gpu.randn(rn), gpu.randn(rn)
    y = gpu.empty(xn, rn)
    welford_layer_norm[(triton.cdiv(xn, xb),)](x, w, b, y, xn, rn, XBLOCK=xb, RBLOCK=rb, num_warps=nw)
    gpu.done()
    ref = torch.nn.functional.layer_norm(x, (rn,), w, b, eps=1e-5)
    torch.testing.assert_close(y, ref, atol=2e-4, rtol=1e-4)
