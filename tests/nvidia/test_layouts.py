"""Layout math: blocked / slice / shared layouts, their attributes and the element-to-thread maps."""
import itertools

import pytest

from tritium.dialects import layouts
from tritium.dialects.layouts import BlockedLayout, SharedLayout, SliceLayout, default_blocked

SEED_003 = BlockedLayout((2, 2), (8, 4), (1, 2), (1, 0))


def _check_bijection(layout, shape):
    """Every element is held, and every thread holds the same number of distinct elements."""
    ll = layout.linear(shape)
    held = {}
    for w in range(ll.num_warps):
        for ln in range(ll.num_lanes):
            els = ll.elements(w, ln)
            assert len(els) == layout.regs_per_thread(shape)
            for r, idx in enumerate(els):
                assert all(0 <= i < s for i, s in zip(idx, shape))
                held.setdefault(idx, []).append((w, ln, r))
    all_idx = set(itertools.product(*[range(s) for s in shape]))
    assert set(held) == all_idx
    # replication is uniform: each element is held the same number of times
    counts = {len(v) for v in held.values()}
    assert len(counts) == 1
    n = counts.pop()
    assert n * len(all_idx) == ll.num_warps * ll.num_lanes * ll.num_regs
    for idx, owners in held.items():
        assert layout.owner(shape, idx) == owners[0]
    return n


def test_seed_003_picture():
    # 16x16 over 2 warps: thread t of row block r holds a 2x2 block (seed 003's picture)
    grid = layouts.ownership_grid(SEED_003, (16, 16))
    assert [c[0] for c in grid[0]] == [0, 0, 1, 1, 2, 2, 3, 3, 32, 32, 33, 33, 34, 34, 35, 35]
    assert [c[0] for c in grid[1]] == [0, 0, 1, 1, 2, 2, 3, 3, 32, 32, 33, 33, 34, 34, 35, 35]
    assert [c[0] for c in grid[2]] == [4, 4, 5, 5, 6, 6, 7, 7, 36, 36, 37, 37, 38, 38, 39, 39]
    assert [c[0] for c in grid[15]] == [28, 28, 29, 29, 30, 30, 31, 31, 60, 60, 61, 61, 62, 62, 63, 63]
    assert _check_bijection(SEED_003, (16, 16)) == 1
    # register order: sizePerThread along the fastest dim first
    assert SEED_003.elements((16, 16), 0, 0) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert SEED_003.elements((16, 16), 1, 5) == [(2, 10), (2, 11), (3, 10), (3, 11)]
    assert SEED_003.owner((16, 16), (3, 11)) == (1, 5, 3)


def test_blocked_repetition_and_replication():
    lay = BlockedLayout((1,), (32,), (4,), (0,))
    # 1024 elements: 8 registers, strided by 128
    assert lay.regs_per_thread((1024,)) == 8
    assert lay.elements((1024,), 0, 1) == [(1 + 128 * i,) for i in range(8)]
    assert _check_bijection(lay, (1024,)) == 1
    # 32 elements over 128 threads: each element held by 4 threads
    assert lay.regs_per_thread((32,)) == 1
    assert _check_bijection(lay, (32,)) == 4
    v4 = BlockedLayout((4,), (32,), (4,), (0,))
    assert v4.elements((1024,), 0, 1)[:4] == [(4,), (5,), (6,), (7,)]
    assert v4.contig_per_thread((1024,)) == 4


@pytest.mark.parametrize("shape,warps", [((1024,), 4), ((16, 16), 4), ((64, 32), 8), ((4, 128), 4), ((2, 8, 16), 2),
                                         ((1, 1), 4), ((256,), 1)])
def test_default_blocked(shape, warps):
    lay = default_blocked(shape, warps)
    assert lay.order == tuple(range(len(shape) - 1, -1, -1))
    assert lay.size_per_thread == (1,) * len(shape)
    assert lay.threads_per_warp_total == 32 and lay.num_warps == warps
    _check_bijection(lay, shape)


def test_default_blocked_values():
    assert default_blocked((1024,), 4) == BlockedLayout((1,), (32,), (4,), (0,))
    assert default_blocked((16, 16), 4) == BlockedLayout((1, 1), (2, 16), (4, 1), (1, 0))
    assert default_blocked((64, 128), 8) == BlockedLayout((1, 1), (1, 32), (2, 4), (1, 0))


@pytest.mark.parametrize("dim", [0, 1])
def test_slice(dim):
    parent = SEED_003
    lay = SliceLayout(dim, parent)
    shape = (16,)
    n = _check_bijection(lay, shape)
    assert n == (8 if dim == 0 else 4) * 1 or n > 1
    # the slice along dim holds, for each thread, the parent's elements with dim dropped
    pshape = (16, 16)
    for w in range(2):
        for ln in range(32):
            mine = set(lay.elements(shape, w, ln))
            parent_els = {e[:dim] + e[dim + 1:] for e in parent.elements(pshape, w, ln)}
            assert mine == parent_els


def test_attr_round_trip():
    from tritium.dialects import make_context

    ctx = make_context()
    for lay in (SEED_003, SliceLayout(1, SEED_003), SliceLayout(0, SliceLayout(1, BlockedLayout((1, 1, 4), (2, 4, 4), (1, 2, 2), (2, 1, 0)))),
                SharedLayout(8, 1, 8, (1, 0))):
        attr = lay.to_attr(ctx)
        assert layouts.from_attr(attr) == lay
        assert str(attr) == lay.to_str()


def test_tensor_type_with_encoding_round_trips():
    from mlir import ir

    from tritium.dialects import make_context, ttg

    ctx = make_context()
    with ctx, ir.Location.unknown():
        t = ir.RankedTensorType.get([16, 16], ir.F32Type.get())
        t2 = ttg.with_encoding(t, SEED_003)
        assert ttg.encoding_of(t2) == SEED_003
        assert ir.Type.parse(str(t2)) == t2
        md = ttg.memdesc_type([16, 16], ir.F16Type.get(), SharedLayout(8, 1, 8, (1, 0)))
        assert str(md).startswith("!ttg.memdesc<")


def test_shared_swizzle_is_a_permutation():
    sh = SharedLayout(vec=4, per_phase=1, max_phase=8, order=(1, 0))
    shape = (16, 32)
    offs = {sh.offset((i, j), shape) for i in range(16) for j in range(32)}
    assert offs == set(range(16 * 32))
    # vec elements stay together; row 1 is XOR-swizzled by phase 1
    assert [sh.offset((1, j), shape) for j in range(8)] == [36, 37, 38, 39, 32, 33, 34, 35]
    assert SharedLayout(1, 1, 1, (1, 0)).offset((2, 3), shape) == 67


def test_picture(tmp_path):
    pytest.importorskip("matplotlib")
    p = layouts.picture(SEED_003, (16, 16), tmp_path / "l.png")
    assert (tmp_path / "l.png").stat().st_size > 0 and p.endswith("l.png")


def test_picture_of_a_wide_tile_is_capped_and_titled_readably(tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    lay = layouts.BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    p = layouts.picture(lay, (16, 256), tmp_path / "wide.png")
    w, h = Image.open(p).size
    assert w < 2500 and h < 1000, (w, h)  # was 5380 px wide
