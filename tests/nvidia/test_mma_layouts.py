"""Tensor-core layouts: nvidia_mma (v2 mma.sync, v3 wgmma), dot_op and nvmma_shared: the element-to-thread maps
against the PTX ISA's fragment tables, coverage and replication, attributes, pictures and the swizzle."""
import itertools

import pytest

from tritium.dialects import layouts
from tritium.dialects.layouts import BlockedLayout, DotOperandLayout, NvidiaMmaLayout, NVMMASharedLayout

from .test_layouts import _check_bijection

V2 = NvidiaMmaLayout(2, (2, 2), (16, 8))
V3 = NvidiaMmaLayout(3, (4, 1), (16, 128, 16))


def test_mma_v2_accumulator_is_ptx_m16n8_fragment():
    # PTX ISA, mma.m16n8k16 D fragment: lane l, register i: row l//4 + 8*(i//2), column 2*(l%4) + i%2
    ll = V2.linear((16, 8 * 2))  # one tile per warp along N (2 warps on N), 2 on M -> rows 0..15 for warp 0
    for lane in range(32):
        els = ll.elements(0, lane)
        assert els[:4] == [(lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2) for i in range(4)]


@pytest.mark.parametrize("kw, frag", [
    (2, [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]),  # f16: a0..a7
    (1, [(0, 0), (8, 0), (0, 4), (8, 4)]),  # tf32 m16n8k8
    (4, [(0, 0), (0, 1), (0, 2), (0, 3), (8, 0), (8, 1), (8, 2), (8, 3),
         (0, 16), (0, 17), (0, 18), (0, 19), (8, 16), (8, 17), (8, 18), (8, 19)]),  # int8 / fp8 m16n8k32
])
def test_dot_operand_a_fragment_is_ptx_order(kw, frag):
    a = DotOperandLayout(0, NvidiaMmaLayout(2, (1, 1), (16, 8)), kw)
    ll = a.linear((16, 8 * kw))
    assert a.fragment_regs() == len(frag)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        want = [(r + g, c + kw * t) for r, c in frag]  # lane: row + l//4, K + kWidth * (l%4)
        assert ll.elements(0, lane)[:len(frag)] == want


def test_dot_operand_b_fragment_is_ptx_order():
    b = DotOperandLayout(1, NvidiaMmaLayout(2, (1, 1), (16, 8)), 2)
    ll = b.linear((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4  # b0, b1: k = 2t, 2t+1; b2, b3: k + 8; column g
        assert ll.elements(0, lane) == [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]


def test_mma_v3_accumulator_is_wgmma_fragment():
    # wgmma D fragment: warp w of the warpgroup owns rows 16w..16w+15; register i: row l//4 + 8*((i>>1)&1),
    # column 8*(i>>2) + 2*(l%4) + (i&1)
    ll = V3.linear((64, 128))
    for w in range(4):
        for lane in range(32):
            els = ll.elements(w, lane)
            assert len(els) == 64
            assert els == [(16 * w + lane // 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1))
                           for i in range(64)]


@pytest.mark.parametrize("lay, shape", [
    (V2, (64, 32)), (V2, (128, 128)), (V2, (16, 8)), (V2, (32, 64)),
    (NvidiaMmaLayout(2, (1, 2, 2), (1, 16, 8)), (4, 32, 16)),
    (V3, (128, 128)), (V3, (64, 256)), (NvidiaMmaLayout(3, (8, 1), (16, 64, 16)), (128, 64)),
    (DotOperandLayout(0, V2, 2), (64, 32)), (DotOperandLayout(1, V2, 2), (32, 64)),
    (DotOperandLayout(0, V2, 4), (64, 64)), (DotOperandLayout(1, V2, 1), (16, 32)),
    (DotOperandLayout(0, V3, 2), (128, 64)),
    (DotOperandLayout(0, BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)), 0), (64, 32)),
    (DotOperandLayout(1, BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)), 0), (32, 64)),
])
def test_every_element_held_replication_uniform(lay, shape):
    n = _check_bijection(lay, shape)
    if isinstance(lay, DotOperandLayout) and isinstance(lay.parent, NvidiaMmaLayout):
        # warps along the other operand's dim hold copies
        wn = lay.parent.warps_per_cta[-1 if lay.op_idx == 0 else -2]
        assert n == wn


def test_attributes_round_trip():
    from tritium.dialects import make_context

    ctx = make_context()
    for lay in (V2, V3, NvidiaMmaLayout(2, (1, 2, 2), (1, 16, 8)), DotOperandLayout(0, V2, 2),
                DotOperandLayout(1, V3, 2), DotOperandLayout(0, BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)), 0),
                NVMMASharedLayout(128, 0, 16), NVMMASharedLayout(64, 1, 8), NVMMASharedLayout(0, 0, 32)):
        attr = lay.to_attr(ctx)
        assert layouts.from_attr(attr) == lay and str(attr) == lay.to_str()


@pytest.mark.parametrize("sw, tr, bits, shape", [(128, 0, 16, (64, 64)), (128, 0, 16, (32, 128)),
                                                  (64, 1, 16, (32, 64)), (32, 0, 8, (16, 32)),
                                                  (0, 0, 16, (16, 8)), (128, 1, 32, (32, 64))])
def test_nvmma_shared_is_a_permutation_with_16_byte_chunks(sw, tr, bits, shape):
    lay = NVMMASharedLayout(sw, tr, bits)
    fast = 0 if tr else 1
    offs = {}
    for ix in itertools.product(*[range(s) for s in shape]):
        offs[ix] = lay.offset(ix, shape)
    assert sorted(offs.values()) == list(range(shape[0] * shape[1]))
    per_chunk = 128 // bits  # elements of a 16-byte chunk stay consecutive
    for ix, o in offs.items():
        if ix[fast] % per_chunk:
            prev = list(ix)
            prev[fast] -= 1
            assert offs[tuple(prev)] == o - 1
    if sw:  # within a swizzle row the chunk index is XORed with the row's phase
        row_bytes = sw
        rows = shape[1 - fast]
        for r in range(min(rows, 8)):
            ix = [0, 0]
            ix[1 - fast] = r
            byte = offs[tuple(ix)] * bits // 8
            assert (byte // 16) % (sw // 16) == (r * row_bytes // 128) % (sw // 16)


@pytest.mark.parametrize("lay, shape", [(V2, (32, 32)), (DotOperandLayout(0, V2, 2), (32, 32)),
                                        (V3, (64, 16))])
def test_pictures(tmp_path, lay, shape):
    pytest.importorskip("matplotlib")
    p = layouts.picture(lay, shape, tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 0 and p.endswith("m.png")
