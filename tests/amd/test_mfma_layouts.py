"""AMD MFMA layouts (``#ttg.amd_mfma`` and its ``#ttg.dot_op`` operands), checked without an AMD GPU: the
element-to-lane maps against the CDNA ISA's description of ``v_mfma`` (wave64; the D matrix of a 32x32 tile: lane
``l`` holds column ``l % 32`` and rows ``8 * (r // 4) + 4 * (l // 32) + r % 4``; of a 16x16 tile column ``l % 16``
and rows ``4 * (l // 16) + r``; A / B sources: lane ``l`` gives row / column ``l % d`` and ``kBase`` consecutive K
from ``kBase * (l // d)``), coverage, attributes, and the lowering's instruction schedule run on a NumPy model of
the instruction (each ``v_mfma`` as the ISA defines it, on the registers the layouts say each lane holds) against
``A @ B``."""
import itertools

import numpy as np
import pytest

from tritium.dialects import layouts
from tritium.dialects.layouts import AmdMfmaLayout, BlockedLayout, DotOperandLayout

from tests.nvidia.test_layouts import _check_bijection


def isa_d(d: int, lane: int, r: int) -> tuple:
    """(row, column) of register ``r`` of ``lane`` in the D matrix of a ``d x d`` v_mfma (CDNA3 ISA, 7.1)."""
    if d == 32:
        return 8 * (r // 4) + 4 * (lane // 32) + r % 4, lane % 32
    return 4 * (lane // 16) + r, lane % 16


@pytest.mark.parametrize("d", [32, 16])
@pytest.mark.parametrize("transposed", [0, 1])
def test_accumulator_is_isa_d_layout(d, transposed):
    lay = AmdMfmaLayout(3, (1, 1), (d, d), transposed)
    ll = lay.linear((d, d))
    assert ll.num_regs == lay.tile_regs == d * d // 64 and ll.num_lanes == 64
    for lane in range(64):
        want = [isa_d(d, lane, r) for r in range(lay.tile_regs)]
        if transposed:
            want = [(c, r) for r, c in want]
        assert ll.elements(0, lane) == want


@pytest.mark.parametrize("d, kw", [(32, 4), (16, 4), (32, 1), (16, 1), (32, 8), (16, 8)])
def test_operands_are_isa_sources(d, kw):
    parent = AmdMfmaLayout(3, (1, 1), (d, d))
    ik = kw * 64 // d  # the instruction's K: 32x32x8 f16 (kBase 4), 16x16x16, 32x32x2 f32, 32x32x16 i8 / fp8, ...
    a = DotOperandLayout(0, parent, kw).linear((d, ik))
    b = DotOperandLayout(1, parent, kw).linear((ik, d))
    for lane in range(64):
        ks = [kw * (lane // d) + i for i in range(kw)]
        assert a.elements(0, lane) == [(lane % d, k) for k in ks]
        assert b.elements(0, lane) == [(k, lane % d) for k in ks]


def test_warps_run_along_n_then_m_and_tiles_repeat():
    lay = AmdMfmaLayout(3, (2, 2), (32, 32))
    ll = lay.linear((128, 128))
    # warp 1 is the next tile along N, warp 2 along M; registers past the first tile: N repetitions, then M
    assert ll.index(0, 0, 1) == (0, 32) and ll.index(0, 0, 2) == (32, 0)
    assert ll.index(16) == (0, 64) and ll.index(32) == (64, 0)
    assert ll.num_regs == 64


@pytest.mark.parametrize("lay, shape", [
    (AmdMfmaLayout(3, (2, 2), (32, 32)), (64, 64)),
    (AmdMfmaLayout(3, (4, 1), (32, 32)), (128, 64)),
    (AmdMfmaLayout(2, (2, 2), (16, 16)), (64, 32)),
    (AmdMfmaLayout(3, (1, 2, 2), (1, 16, 16)), (4, 32, 32)),
    (AmdMfmaLayout(4, (2, 2), (32, 32), 1), (64, 128)),
    (DotOperandLayout(0, AmdMfmaLayout(3, (2, 2), (32, 32)), 4), (64, 32)),
    (DotOperandLayout(1, AmdMfmaLayout(3, (2, 2), (16, 16)), 8), (64, 32)),
])
def test_coverage_and_uniform_replication(lay, shape):
    _check_bijection(lay, shape)


def test_attribute_round_trip_and_checks():
    lay = AmdMfmaLayout(3, (2, 2), (32, 32), 0)
    assert lay.to_str() == "#ttg.amd_mfma<3 : i32, array<i32: 2, 2>, array<i32: 32, 32>, 0 : i32>"
    assert layouts.parse_layout(lay.to_str()) == lay
    op = DotOperandLayout(1, lay, 4)
    assert layouts.parse_layout(op.to_str()) == op
    from mlir import ir

    from tritium.dialects import ttg

    with ir.Context() as ctx:
        ttg.load_dialect(ctx)
        assert layouts.from_attr(op.to_attr(ctx)) == op
    with pytest.raises(ValueError, match="32, 32"):
        AmdMfmaLayout(3, (2, 2), (8, 8))
    with pytest.raises(ValueError, match="version"):
        AmdMfmaLayout(1, (2, 2), (32, 32))


def test_picture(tmp_path):
    pytest.importorskip("matplotlib")
    path = layouts.picture(AmdMfmaLayout(3, (2, 1), (16, 16)), (32, 16), tmp_path / "mfma.png")
    assert open(path, "rb").read(4) == b"\x89PNG"


# ------------------------------------------------------------------------------------------ the lowering's schedule

def _simulate(c_lay, kw, shape_a, shape_b, seed=0):
    """Run the lowering's ``mfma_schedule`` on a NumPy model of ``v_mfma``: every lane's registers from the
    layouts, each instruction's A / B matrices assembled from what the lanes give (the ISA's source layout), D
    scattered back to the lanes' registers (the ISA's D layout); returns (result by the layout, A @ B)."""
    pytest.importorskip("mlir")
    from tritium_amd.lowering.dot import mfma_schedule

    rng = np.random.default_rng(seed)
    A = rng.integers(-8, 8, size=shape_a)
    B = rng.integers(-8, 8, size=shape_b)
    C = rng.integers(-8, 8, size=shape_a[:-1] + shape_b[-1:])
    a_ll = DotOperandLayout(0, c_lay, kw).linear(tuple(shape_a))
    b_ll = DotOperandLayout(1, c_lay, kw).linear(tuple(shape_b))
    c_ll = c_lay.linear(tuple(C.shape))
    d = c_lay.m_dim
    n_acc = d * d // 64
    sched = mfma_schedule(c_ll, a_ll, b_ll, d, kw, shape_a[-1])
    got = np.zeros_like(C)
    for w in range(c_ll.num_warps):
        regs = {name: [[M[i] for i in ll.elements(w, ln)] for ln in range(64)]
                for name, M, ll in (("a", A, a_ll), ("b", B, b_ll), ("c", C, c_ll))}
        out = [list(r) for r in regs["c"]]
        for r0, steps in sched:
            if isinstance(steps, int):
                for ln in range(64):
                    out[ln][r0:r0 + n_acc] = out[ln][steps:steps + n_acc]
                continue
            D = np.zeros((d, d), dtype=np.int64)
            for ln in range(64):
                for r in range(n_acc):
                    D[isa_d(d, ln, r)] = out[ln][r0 + r]
            for ra, rb in steps:
                x, y = ("a", ra), ("b", rb)
                if c_lay.is_transposed:
                    x, y = y, x
                ik = kw * 64 // d
                IA = np.array([[regs[x[0]][i + d * (k // kw)][x[1] + k % kw] for k in range(ik)] for i in range(d)])
                IB = np.array([[regs[y[0]][j + d * (k // kw)][y[1] + k % kw] for j in range(d)] for k in range(ik)])
                D = IA @ IB + D
            for ln in range(64):
                for r in range(n_acc):
                    out[ln][r0 + r] = D[isa_d(d, ln, r)]
        for ln in range(64):
            for r, v in enumerate(out[ln]):
                got[c_ll.index(r, ln, w)] = v
    return got, A @ B + C


@pytest.mark.parametrize("lay, kw, sa, sb", [
    (AmdMfmaLayout(3, (2, 2), (32, 32)), 4, (128, 32), (32, 64)),  # f16 32x32x8, two K steps... four
    (AmdMfmaLayout(3, (4, 1), (16, 16)), 4, (64, 32), (32, 32)),  # f16 16x16x16
    (AmdMfmaLayout(2, (1, 4), (32, 32)), 1, (32, 4), (4, 128)),  # f32 32x32x2
    (AmdMfmaLayout(3, (2, 2), (32, 32)), 8, (64, 32), (32, 64)),  # i8 / fp8 32x32x16
    (AmdMfmaLayout(4, (2, 2), (16, 16)), 8, (32, 64), (64, 64)),  # gfx950 f16 16x16x32
    (AmdMfmaLayout(3, (2, 1, 2), (1, 16, 16)), 4, (4, 16, 32), (4, 32, 32)),  # batched (3-D)
    (AmdMfmaLayout(3, (2, 2), (32, 32), 1), 4, (64, 16), (16, 64)),  # transposed: B and A exchanged
])
def test_schedule_on_isa_model_computes_the_product(lay, kw, sa, sb):
    got, want = _simulate(lay, kw, sa, sb)
    np.testing.assert_array_equal(got, want)


def test_fma_parent_is_unchanged():
    blocked = BlockedLayout((1, 1), (8, 8), (4, 1), (1, 0))
    _check_bijection(DotOperandLayout(0, blocked, 0), (32, 16))
    assert list(itertools.islice(iter(DotOperandLayout(0, blocked, 0).linear((32, 16)).reg), 1)) == [(0, 1)]
