"""A Python model of the dot-operand path through shared memory: every thread stores its registers of a blocked
tile where the lowering's :class:`Addresser` puts them (``local_alloc``), then ``ldmatrix`` (emulated from the PTX
ISA's description: lane ``8 j + i`` addresses row ``i`` of matrix ``j``; lane ``l`` receives row ``l // 4``, word
``l % 4``, or the transposed matrix's) reads every fragment of the ``#ttg.dot_op`` layout.  Each register must
receive exactly the element the dot-operand layout says it holds, for layouts and swizzles the passes produce."""
import itertools

import pytest

pytest.importorskip("mlir.ir")

from tritium.dialects import layouts  # noqa: E402
from tritium.lowering.rules.shared_memory import Addresser, chunks, thread_part  # noqa: E402
from tritium.passes.ttgir.accelerate_matmul import warps_per_tile  # noqa: E402
from tritium.passes.ttgir.optimize_dot_operands import operand_shared_layout  # noqa: E402
from tritium_nvidia.lowering.shared_memory import LdmatrixPlan  # noqa: E402


def _store(src_layout, shape, slay, eb, num_warps):
    """byte address -> element index, as the local_alloc lowering writes the tile."""
    ll = src_layout.linear(shape)
    fast, _ = slay.fast_slow(len(shape))
    addr = Addresser(None, slay, shape, eb, lambda t: thread_part(ll, t, 32), num_warps * 32, (), "xor")
    mem = {}
    for t in range(num_warps * 32):
        w, lane = divmod(t, 32)
        for r, n in chunks(ll, addr, fast, eb):
            xy = addr.split(ll.index(r))
            if xy is None:
                a0 = slay.offset(tuple(x ^ y for x, y in zip(ll.index(r), addr.threads[t])), shape) * eb
            else:
                a0 = (addr.base_py[t] ^ xy[0]) + xy[1]
            for i in range(n):
                e = ll.index(r + i, lane, w)
                assert slay.offset(e, shape) * eb == a0 + i * eb, (e, r, i)
                mem[a0 + i * eb] = e
    assert len(mem) == len({ix for ix in itertools.product(*[range(s) for s in shape])})
    return mem


def _ldmatrix(plan, addr, mem, eb, num_warps):
    """What every thread's registers receive: (warp, lane) -> {register: element}."""
    got = {}
    per_word = 4 // eb
    for w in range(num_warps):
        lane_addr = {}
        for r0, n, pair in plan.loads:
            xy = addr.split(plan.ll.index(r0))
            for lane in range(32):
                t = w * 32 + lane
                if xy is None:
                    a = plan_offset(plan, addr, t, r0)
                else:
                    a = (addr.base_py[t] ^ xy[0]) + xy[1]
                lane_addr[lane] = a
            for lane in range(32):
                g, tq = divmod(lane, 4)
                elems = []
                for j in range(n):
                    if not plan.trans:
                        base = lane_addr[8 * j + g]
                        elems += [mem[base + 4 * tq + q * eb] for q in range(per_word)]
                    else:  # 16-bit only: rows 2t, 2t+1 of the matrix, column g
                        elems += [mem[lane_addr[8 * j + 2 * tq + q] + 2 * g] for q in range(2)]
                regs = list(range(r0, r0 + plan.frag)) + (list(range(pair, pair + plan.frag)) if pair is not None
                                                           else [])
                for reg, e in zip(regs, elems):
                    got.setdefault((w, lane), {})[reg] = e
    return got


def _assert_every_register(plan, addr, mem, eb, num_warps, ll):
    """ldmatrix through ``plan`` from ``mem`` gives each register of each thread the element ``ll`` puts there."""
    got = _ldmatrix(plan, addr, mem, eb, num_warps)
    for w in range(num_warps):
        for lane in range(32):
            regs = got[(w, lane)]
            for r0, src0 in plan.copies:
                for i in range(plan.frag):
                    regs[r0 + i] = regs[src0 + i]
            assert sorted(regs) == list(range(ll.num_regs))
            for reg in range(ll.num_regs):
                assert regs[reg] == ll.index(reg, lane, w), (w, lane, reg)


def plan_offset(plan, addr, t, r0):
    ix = tuple(a + b for a, b in zip(addr.threads[t], plan.ll.index(r0)))
    return addr.lay.offset(ix, addr.shape) * addr.eb


CASES = [
    # (M, N, K, element bytes, num_warps, A's blocked layout args, B's, transposed A, transposed B)
    (128, 128, 32, 2, 4, ((1, 8), (8, 4), (4, 1), (1, 0)), ((1, 8), (2, 16), (4, 1), (1, 0))),
    (64, 64, 32, 2, 4, ((1, 1), (1, 32), (4, 1), (1, 0)), ((1, 1), (1, 32), (2, 2), (1, 0))),
    (16, 16, 16, 2, 4, ((1, 1), (2, 16), (2, 2), (1, 0)), ((1, 1), (2, 16), (2, 2), (1, 0))),
    (128, 128, 64, 2, 8, ((1, 8), (4, 8), (8, 1), (1, 0)), ((1, 8), (4, 8), (8, 1), (1, 0))),
    (64, 128, 32, 2, 4, ((8, 1), (16, 2), (1, 4), (0, 1)), ((1, 8), (2, 16), (4, 1), (1, 0))),  # A M-major
    (64, 64, 32, 2, 4, ((1, 8), (8, 4), (4, 1), (1, 0)), ((8, 1), (4, 8), (1, 4), (0, 1))),  # B K-major
    (64, 64, 64, 1, 4, ((1, 16), (16, 2), (4, 1), (1, 0)), ((16, 1), (4, 8), (1, 4), (0, 1))),  # int8, B K-major
    (64, 64, 32, 4, 4, ((1, 4), (4, 8), (4, 1), (1, 0)), ((4, 1), (8, 4), (1, 4), (0, 1))),  # tf32, B K-major
    (32, 32, 16, 2, 1, ((1, 2), (4, 8), (1, 1), (1, 0)), ((1, 2), (4, 8), (1, 1), (1, 0))),
    # Liger-Kernel's SwiGLU at BLOCK_M = 32 on sm_90 (mma.sync): x from a [1, 32, 64] TMA tile, w^T stored back
    (32, 128, 64, 2, 4, ((1, 8), (8, 4), (4, 1), (1, 0)), ((1, 1), (1, 32), (1, 4), (1, 0))),
    (32, 128, 128, 2, 8, ((1, 8), (8, 4), (8, 1), (1, 0)), ((1, 1), (1, 32), (1, 8), (1, 0))),
    (32, 128, 64, 4, 4, ((1, 4), (4, 8), (4, 1), (1, 0)), ((1, 1), (1, 32), (1, 4), (1, 0))),  # fp32 (tf32)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}_b{c[3]}_w{c[4]}_{c[5][3]}{c[6][3]}")
@pytest.mark.parametrize("op_idx", [0, 1])
def test_store_then_ldmatrix_gives_the_dot_operand_layout(case, op_idx):
    M, N, K, eb, nw, a_args, b_args = case
    mma = layouts.NvidiaMmaLayout(2, warps_per_tile((M, N), nw), (16, 8))
    kw = 4 // eb
    shape = (M, K) if op_idx == 0 else (K, N)
    src = layouts.BlockedLayout(*(a_args if op_idx == 0 else b_args))
    slay = operand_shared_layout(shape, src, eb)
    dlay = layouts.DotOperandLayout(op_idx, mma, kw)
    ll = dlay.linear(shape)
    plan = LdmatrixPlan(dlay, slay, shape, eb, ll)
    if not plan.ok:
        assert eb != 2, "16-bit operands always take ldmatrix"
        pytest.skip("not an ldmatrix case (8/32-bit operand whose contiguous dim is not K)")
    mem = _store(src, shape, slay, eb, nw)
    addr = Addresser(None, slay, shape, eb, plan.thread_index, nw * 32, (), "add")
    _assert_every_register(plan, addr, mem, eb, nw, ll)


TMA_TRANS_CASES = [
    # (N, K, element bytes, num_warps, M): a [N, K] weight tile as TMA writes it, read as the B operand [K, N] of an
    # mma.sync through its transposed view (Liger-Kernel's SwiGLU at BLOCK_M = 32: ``tl.dot(x, w.T)``)
    (128, 64, 2, 4, 32), (128, 128, 2, 8, 32), (128, 64, 4, 4, 32), (64, 32, 2, 4, 16), (128, 32, 4, 8, 32),
]


@pytest.mark.parametrize("case", TMA_TRANS_CASES, ids=lambda c: f"{c[0]}x{c[1]}_b{c[2]}_w{c[3]}")
def test_tma_tile_read_through_its_transposed_view(case):
    """The TMA buffer's bytes (element (n, k) where the tensor map's layout puts it) are what its ``memdesc_trans``
    view says (element (k, n)), and ldmatrix (or, where the plan declines, nothing: the generic loads read any
    layout) through the view gives every register of the B operand its element."""
    N, K, eb, nw, M = case
    base = layouts.NVMMASharedLayout(next(s for s in (128, 64, 32) if K * eb >= s), 0, eb * 8)
    view = layouts.NVMMASharedLayout(base.swizzle_bytes, 1, base.element_bits)
    mem = {}
    for n in range(N):
        for k in range(K):
            a = base.offset((n, k), (N, K)) * eb
            assert view.offset((k, n), (K, N)) * eb == a, (n, k)
            mem[a] = (k, n)
    assert len(mem) == N * K
    mma = layouts.NvidiaMmaLayout(2, warps_per_tile((M, N), nw), (16, 8))
    dlay = layouts.DotOperandLayout(1, mma, 4 // eb)
    ll = dlay.linear((K, N))
    plan = LdmatrixPlan(dlay, view, (K, N), eb, ll)
    assert plan.ok and not plan.trans  # K is the view's contiguous dim: plain ldmatrix, any element size
    addr = Addresser(None, view, (K, N), eb, plan.thread_index, nw * 32, (), "add")
    _assert_every_register(plan, addr, mem, eb, nw, ll)


ACC_STORE_CASES = [
    # (version, warps per CTA, instruction shape, tile [M, N], element bytes): an accumulator stored from its own
    # registers into the NVMMA layout a TMA store reads (remove_layout_conversions' rule 10: no round trip through
    # a blocked layout first) -- Liger-Kernel's SwiGLU epilogue at BLOCK_M 64 / 128 and 32 (mma.sync)
    (3, (4, 1), (16, 128, 8), (64, 128), 4), (3, (4, 1), (16, 128, 16), (64, 128), 2),
    (3, (8, 1), (16, 128, 16), (128, 128), 2), (3, (4, 2), (16, 64, 8), (128, 128), 4),
    (2, (1, 4), (16, 8), (32, 128), 4), (2, (2, 4), (16, 8), (32, 128), 2),
]


@pytest.mark.parametrize("case", ACC_STORE_CASES, ids=lambda c: f"v{c[0]}_{c[3][0]}x{c[3][1]}_b{c[4]}_w{c[1]}")
def test_accumulator_stored_into_the_tma_layout(case):
    """Every element of a tensor-core accumulator lands, once, where the TMA store's shared layout puts it."""
    version, warps, instr, shape, eb = case
    acc = layouts.NvidiaMmaLayout(version, warps, instr)
    slay = layouts.NVMMASharedLayout(next(s for s in (128, 64, 32) if shape[1] * eb >= s), 0, eb * 8)
    nw = warps[0] * warps[1]
    mem = _store(acc, shape, slay, eb, nw)  # asserts each element's address is the layout's offset for it
    assert sorted(mem.values()) == sorted(itertools.product(range(shape[0]), range(shape[1])))
