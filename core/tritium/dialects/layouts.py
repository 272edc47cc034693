"""Layouts: how the elements of a tensor are spread over the registers, lanes and warps of a CTA.

Python mirrors of the ``ttg`` encodings (:mod:`tritium.dialects.ttg`) with the math the passes and the
lowering need.  Every distributed layout (blocked, slice) reduces, for a given tensor shape, to a
:class:`LinearLayout` (Triton's linear layouts, restricted to what we need): each bit of the register index,
of the lane id and of the warp id has a *base*, an element index; the element a thread holds in register
``r`` is the XOR of the bases of the bits set in ``r``, ``lane`` and ``warp``.  A zero base means replication
(several threads or registers hold the same element).  Shapes are powers of two, as in Triton.

Register order (the order of the per-thread values in the lowering's value lists):

* blocked: first the ``sizePerThread`` elements (the fastest dim of ``order`` first), then the repetitions
  of the CTA tile (again the fastest dim first);
* slice(dim, parent): the parent's registers for the parent shape (``dim`` of size 1), dropping ``dim`` and
  the registers that became duplicates.

Nothing here imports MLIR except ``to_attr`` / ``from_attr``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence


def _log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"layout sizes must be powers of two, got {n}")
    return n.bit_length() - 1


def _arr(xs) -> str:
    xs = [str(int(x)) for x in xs]
    return "array<i32: " + ", ".join(xs) + ">" if xs else "array<i32>"  # MLIR spells an empty one so


# ----------------------------------------------------------------------------------------------
# Linear layouts
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LinearLayout:
    """``index(reg, lane, warp) = XOR of bases`` over the set bits; bases are element-index tuples."""

    shape: tuple
    reg: tuple  # tuple of index tuples, one per register bit
    lane: tuple
    warp: tuple

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_regs(self) -> int:
        return 1 << len(self.reg)

    @property
    def num_lanes(self) -> int:
        return 1 << len(self.lane)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp)

    @staticmethod
    def _apply(bases, x: int, acc: list) -> None:
        i = 0
        while x:
            if x & 1:
                b = bases[i]
                for d in range(len(acc)):
                    acc[d] ^= b[d]
            x >>= 1
            i += 1

    def index(self, reg: int, lane: int = 0, warp: int = 0) -> tuple:
        acc = [0] * self.rank
        self._apply(self.reg, reg, acc)
        self._apply(self.lane, lane, acc)
        self._apply(self.warp, warp, acc)
        return tuple(acc)

    def reg_indices(self) -> list:
        """Element index of every register of thread (lane 0, warp 0): the register-only part."""
        return [self.index(r) for r in range(self.num_regs)]

    def elements(self, warp: int, lane: int) -> list:
        return [self.index(r, lane, warp) for r in range(self.num_regs)]

    def register_of(self) -> dict:
        """Element index of the register-only part (lane 0, warp 0) -> the first register holding it."""
        return _first_registers(self)

    def owners(self, index: Sequence[int]) -> list:
        """Every (warp, lane, register) that holds ``index``, in (warp, lane, register) order."""
        return list(_inverse(self).get(tuple(index), ()))

    def disjoint(self) -> bool:
        """True when the register, lane and warp bases of each dim use disjoint bits (XOR == +)."""
        for d in range(self.rank):
            seen = 0
            for b in self.reg + self.lane + self.warp:
                if b[d] & seen:
                    return False
                seen |= b[d]
        return True

    def scan_split(self, axis: int) -> tuple:
        """How ``tt.scan`` along ``axis`` splits over this layout (see ``lowering/rules/scan.py``): ``(chunk,
        lane_bits, segment_bits)``: the consecutive elements one thread holds, the lane-id bits of the following
        elements (consecutive), and ``(kind, bit, base)`` of the remaining warp and register bits, in order of their
        base along the axis.  ``ValueError`` (saying why) for a layout the scan cannot take."""
        bits = []
        for kind, bases in (("reg", self.reg), ("lane", self.lane), ("warp", self.warp)):
            for i, b in enumerate(bases):
                if b[axis]:
                    if any(x for d, x in enumerate(b) if d != axis):
                        raise ValueError("its bits mix the scan axis with other dims")
                    bits.append((kind, i, b[axis]))
        bits.sort(key=lambda t: t[2])
        for j, (_, _, b) in enumerate(bits):
            if b != 1 << j:
                raise ValueError("it does not cover the scan axis once")
        j = 0
        while j < len(bits) and bits[j][0] == "reg":
            j += 1
        chunk = 1 << j
        lane_bits = []
        while j < len(bits) and bits[j][0] == "lane":
            lane_bits.append(bits[j][1])
            j += 1
        seg_bits = bits[j:]
        if any(kind == "lane" for kind, _, _ in seg_bits):
            raise ValueError("its lanes along the axis are interleaved with registers or warps")
        if lane_bits and lane_bits != list(range(lane_bits[0], lane_bits[0] + len(lane_bits))):
            raise ValueError("its lanes along the axis are not consecutive lane-id bits")
        return chunk, lane_bits, seg_bits


#: the most scratch one round of a ``ttg.convert_layout`` through shared memory takes (see :func:`convert_rounds`)
CONVERT_ROUND_BYTES = 64 * 1024


def convert_rounds(src: LinearLayout, dst: LinearLayout, elem_bytes: int, limit: int = CONVERT_ROUND_BYTES) -> int:
    """``k``: a conversion from ``src`` to ``dst`` through a scratch buffer larger than ``limit`` bytes goes in
    ``2**k`` rounds, round ``c`` moving the elements whose index along dim 0 has ``c`` in its top ``k`` bits, through
    a buffer of ``1 / 2**k`` of the tensor (as Triton converts in repetitions of a smaller tile).  A top bit
    qualifies when, in both layouts, one register basis is that bit alone and no other basis touches it: a
    register's round is then the same in every thread.  0 when one round fits (or no bit qualifies)."""
    shape = src.shape
    total = elem_bytes
    for n in shape:
        total *= n
    need = 0
    while (total >> need) > limit:
        need += 1
    if not need or not shape:
        return 0
    lg = _log2(shape[0])
    k = 0
    while k < min(need, lg) and all(_register_bit(ll, 0, lg - 1 - k) for ll in (src, dst)):
        k += 1
    return k


def _register_bit(ll: LinearLayout, d: int, bit: int) -> bool:
    unit = tuple((1 << bit) if i == d else 0 for i in range(ll.rank))
    if unit not in ll.reg:
        return False
    return all(b == unit or not (b[d] >> bit) & 1 for b in list(ll.reg) + list(ll.lane) + list(ll.warp))


@lru_cache(maxsize=1024)
def _first_registers(ll: LinearLayout) -> dict:
    out: dict = {}
    for r in range(ll.num_regs):
        out.setdefault(ll.index(r), r)
    return out


@lru_cache(maxsize=256)
def _inverse(ll: LinearLayout) -> dict:
    out: dict = {}
    for w in range(ll.num_warps):
        for ln in range(ll.num_lanes):
            for r in range(ll.num_regs):
                out.setdefault(ll.index(r, ln, w), []).append((w, ln, r))
    return out


def _unit(rank: int, d: int, v: int) -> tuple:
    out = [0] * rank
    out[d] = v
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# Encodings
# ----------------------------------------------------------------------------------------------

class _Distributed:
    """Shared API of distributed layouts: everything derives from :meth:`linear`."""

    def linear(self, shape) -> LinearLayout:  # pragma: no cover - abstract
        raise NotImplementedError

    def regs_per_thread(self, shape) -> int:
        return self.linear(tuple(shape)).num_regs

    def elements(self, shape, warp: int, lane: int) -> list:
        """Element indices thread (warp, lane) holds, in register order."""
        return self.linear(tuple(shape)).elements(warp, lane)

    def owners(self, shape, index) -> list:
        return self.linear(tuple(shape)).owners(index)

    def owner(self, shape, index) -> tuple:
        """The first (warp, lane, register) holding ``index``."""
        o = self.owners(shape, index)
        if not o:
            raise ValueError(f"no thread holds {tuple(index)} of shape {tuple(shape)} in {self}")
        return o[0]

    def to_attr(self, context=None):
        from mlir import ir

        return ir.Attribute.parse(self.to_str(), context)


@dataclass(frozen=True)
class BlockedLayout(_Distributed):
    size_per_thread: tuple
    threads_per_warp: tuple
    warps_per_cta: tuple
    order: tuple

    def __post_init__(self):
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
            object.__setattr__(self, name, tuple(int(x) for x in getattr(self, name)))
        r = len(self.order)
        if not (len(self.size_per_thread) == len(self.threads_per_warp) == len(self.warps_per_cta) == r):
            raise ValueError(f"blocked layout parameters of different ranks: {self}")
        if sorted(self.order) != list(range(r)):
            raise ValueError(f"order {self.order} is not a permutation")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        n = 1
        for w in self.warps_per_cta:
            n *= w
        return n

    @property
    def threads_per_warp_total(self) -> int:
        n = 1
        for t in self.threads_per_warp:
            n *= t
        return n

    def shape_per_cta_tile(self) -> tuple:
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def linear(self, shape) -> LinearLayout:
        return _blocked_linear(self, tuple(shape))

    def to_str(self) -> str:
        return (f"#ttg.blocked<{_arr(self.size_per_thread)}, {_arr(self.threads_per_warp)}, "
                f"{_arr(self.warps_per_cta)}, {_arr(self.order)}>")

    def contig_per_thread(self, shape) -> int:
        """Elements of consecutive registers that are consecutive along the fastest dim."""
        d = self.order[0]
        return min(self.size_per_thread[d], shape[d])


@lru_cache(maxsize=4096)
def _blocked_linear(lay: BlockedLayout, shape: tuple) -> LinearLayout:
    rank = len(shape)
    if len(shape) != lay.rank:
        raise ValueError(f"layout of rank {lay.rank} for a tensor of shape {shape}")
    spt_b, lane_b, warp_b, rep_b = {}, {}, {}, {}
    for d in range(rank):
        lg = _log2(shape[d])
        pos = 0

        def take(n):
            nonlocal pos
            out = []
            for _ in range(n):
                out.append(_unit(rank, d, 1 << pos) if pos < lg else _unit(rank, d, 0))
                pos += 1
            return out

        spt_b[d] = take(_log2(lay.size_per_thread[d]))
        lane_b[d] = take(_log2(lay.threads_per_warp[d]))
        warp_b[d] = take(_log2(lay.warps_per_cta[d]))
        rep_b[d] = take(max(0, lg - pos))
    reg = [b for d in lay.order for b in spt_b[d]] + [b for d in lay.order for b in rep_b[d]]
    lane = [b for d in lay.order for b in lane_b[d]]
    warp = [b for d in lay.order for b in warp_b[d]]
    return LinearLayout(shape, tuple(reg), tuple(lane), tuple(warp))


@dataclass(frozen=True)
class SliceLayout(_Distributed):
    dim: int
    parent: object

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    def parent_shape(self, shape) -> tuple:
        s = list(shape)
        s.insert(self.dim, 1)
        return tuple(s)

    def linear(self, shape) -> LinearLayout:
        return _slice_linear(self, tuple(shape))

    def to_str(self) -> str:
        return f"#ttg.slice<{self.dim} : i32, {self.parent.to_str()}>"

    @property
    def order(self) -> tuple:
        return tuple(o - (o > self.dim) for o in self.parent.order if o != self.dim)

    def contig_per_thread(self, shape) -> int:
        ll = self.linear(tuple(shape))
        return _contig_regs(ll, self.order[0]) if shape else 1


@lru_cache(maxsize=4096)
def _slice_linear(lay: SliceLayout, shape: tuple) -> LinearLayout:
    p = lay.parent.linear(lay.parent_shape(shape))

    def drop(b):
        return b[:lay.dim] + b[lay.dim + 1:]

    reg = tuple(drop(b) for b in p.reg if any(drop(b)))
    return LinearLayout(shape, reg, tuple(drop(b) for b in p.lane), tuple(drop(b) for b in p.warp))


def _contig_regs(ll: LinearLayout, d: int) -> int:
    """How many leading registers are consecutive elements along dim ``d`` (a power of two)."""
    n = 1
    for i, b in enumerate(ll.reg):
        if b == _unit(ll.rank, d, 1 << i):
            n <<= 1
        else:
            break
    return n


def _dim_bases(rank: int, d: int, size: int, counts) -> list:
    """Bases along dim ``d`` (of extent ``size``) for consecutive levels of ``counts`` bits each: level ``i``'s
    bases are the next powers of two along ``d``; bits beyond the extent are zero bases (replication)."""
    lg = _log2(size)
    pos, out = 0, []
    for n in counts:
        lv = []
        for _ in range(n):
            lv.append(_unit(rank, d, 1 << pos) if pos < lg else _unit(rank, d, 0))
            pos += 1
        out.append(lv)
    out.append([_unit(rank, d, 1 << p) for p in range(pos, lg)])  # the rest: repetitions
    return out


def _zero(rank: int) -> tuple:
    return (0,) * rank


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


class _MmaWarps(_Distributed):
    """What the tensor-core result layouts (nvidia_mma, amd_mfma, amd_wmma) share: a rank-2 (or batched rank-3)
    grid of warps ``warps_per_cta``, rows-major order, warp bases along N first (nvidia_mma v3: M first)."""

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)

    @property
    def num_warps(self) -> int:
        return _prod(self.warps_per_cta)

    @property
    def order(self) -> tuple:
        return tuple(range(self.rank - 1, -1, -1))

    def warp_bases(self, shape, dims_bits) -> list:
        """The warp bases in this layout's bit order (N, M, batch) from ``dims_bits`` (dim -> bases)."""
        r = self.rank
        return [b for d in ((r - 1, r - 2) + ((0,) if r == 3 else ())) for b in dims_bits[d]]


@dataclass(frozen=True)
class NvidiaMmaLayout(_MmaWarps):
    """The accumulator layout of NVIDIA tensor-core instructions (Triton's ``#ttg.nvidia_mma``).

    ``version`` 2: ``mma.sync`` (Ampere+), ``instr_shape`` ``(16, 8)`` (m, n; a leading 1 for a batched dot);
    each warp owns 16x8 tiles, lane ``l`` holds row ``l // 4`` (and ``+ 8``) and columns ``2 * (l % 4)`` (and
    ``+ 1``).  Warp ids run along N first, then M, then the batch dim.

    ``version`` 3: Hopper ``wgmma.mma_async``, ``instr_shape`` ``(16, n, 16)``: four consecutive warps (a
    warpgroup) own 64 rows, 16 each, of an ``m64nNk16`` tile; within a warp the 16-row block is the version-2
    fragment repeated along N every 8 columns.  Warp ids run along M first (the warpgroup), then N.

    Register order: the instruction fragment (column +1, row +8, then column +8, +16, ... for version 3), then
    tile repetitions along N, then M, then the batch dim.
    """

    version: int
    warps_per_cta: tuple
    instr_shape: tuple

    def __post_init__(self):
        object.__setattr__(self, "warps_per_cta", tuple(int(x) for x in self.warps_per_cta))
        object.__setattr__(self, "instr_shape", tuple(int(x) for x in self.instr_shape))
        if self.version not in (2, 3):
            raise ValueError(f"nvidia_mma version must be 2 or 3, got {self.version}")
        if len(self.warps_per_cta) not in (2, 3):
            raise ValueError(f"nvidia_mma of rank {len(self.warps_per_cta)}: only 2-D and batched 3-D dots")
        # (a wgmma accumulator also needs 2-D and whole warpgroups along M: checked where one is made, acc_tiles;
        # as a layout of any tensor, e.g. in hand-written TTGIR, a batch dim or fewer warps along M are fine)


    @property
    def instr_n(self) -> int:
        return self.instr_shape[-2] if self.version == 3 else self.instr_shape[-1]

    def shape_per_cta_tile(self) -> tuple:
        wm, wn = self.warps_per_cta[-2:]
        if self.version == 2:
            tile = (16 * wm, 8 * wn)
        else:
            tile = (16 * wm, self.instr_n * wn)
        return ((self.warps_per_cta[0],) if self.rank == 3 else ()) + tile

    def warp_bases(self, shape, dims_bits) -> list:
        """The warp bases: ``dims_bits`` maps a dim to its list of warp bases; the bit order is this layout's
        (version 2: N, M, batch; version 3: M, N, batch)."""
        r = self.rank
        seq = ((r - 1, r - 2) if self.version == 2 else (r - 2, r - 1)) + ((0,) if r == 3 else ())
        return [b for d in seq for b in dims_bits[d]]

    def linear(self, shape) -> LinearLayout:
        return _mma_linear(self, tuple(shape))

    def to_str(self) -> str:
        return f"#ttg.nvidia_mma<{self.version} : i32, {_arr(self.warps_per_cta)}, {_arr(self.instr_shape)}>"


def _warp_counts(lay) -> dict:
    return {d: _log2(w) for d, w in enumerate(lay.warps_per_cta)}


def _mma_dims(lay, shape: tuple) -> tuple:
    """``(rank, m, n, log2 warps per dim)`` of an MMA-kind layout ``lay`` for ``shape`` (the rank checked)."""
    r = len(shape)
    if r != lay.rank:
        raise ValueError(f"layout of rank {lay.rank} for a tensor of shape {shape}")
    return r, r - 2, r - 1, _warp_counts(lay)


@lru_cache(maxsize=4096)
def _mma_linear(lay: NvidiaMmaLayout, shape: tuple) -> LinearLayout:
    r, m, n, wc = _mma_dims(lay, shape)
    # dim M: lanes (3 bits: row l // 4), register (row + 8), warps, repetitions
    m_lane, m_reg, m_warp, m_rep = _dim_bases(r, m, shape[m], (3, 1, wc[m]))
    if lay.version == 2:
        # dim N: register (col + 1), lanes (2 bits: 2 * (l % 4)), warps, repetitions
        n_reg, n_lane, n_warp, n_rep = _dim_bases(r, n, shape[n], (1, 2, wc[n]))
        n_hi = []
    else:
        # dim N: register (col + 1), lanes, register (col + 8, +16, ... up to the instruction's N), warps, reps
        n_reg, n_lane, n_hi, n_warp, n_rep = _dim_bases(r, n, shape[n], (1, 2, _log2(lay.instr_n) - 3, wc[n]))
    warp = {m: m_warp, n: n_warp}
    b_rep = []
    if r == 3:
        b_warp, b_rep = _dim_bases(r, 0, shape[0], (wc[0],))
        warp[0] = b_warp
    reg = n_reg + m_reg + n_hi + n_rep + m_rep + b_rep
    lane = n_lane + m_lane
    return LinearLayout(shape, tuple(reg), tuple(lane), tuple(lay.warp_bases(shape, warp)))


@dataclass(frozen=True)
class AmdMfmaLayout(_MmaWarps):
    """The accumulator layout of AMD CDNA matrix instructions, ``v_mfma`` (Triton's ``#ttg.amd_mfma``), wave64.

    ``version``: the CDNA generation (2: gfx90a, 3: gfx942, 4: gfx950); ``instr_shape``: ``(32, 32)`` or
    ``(16, 16)`` (M, N of one instruction; a leading 1 for a batched dot); ``is_transposed``: the result's roles of
    M and N swapped (the instruction computes ``B^T A^T``).  Within one ``mDim x nDim`` tile (the ISA's layout of
    the D matrix, not transposed): lane ``l`` holds column ``l % nDim``; its registers are rows in groups of four:
    for 32x32, register ``r`` is row ``8 * (r // 4) + 4 * (l // 32) + r % 4`` (16 registers); for 16x16, row
    ``4 * (l // 16) + r`` (4 registers).  Transposed: the same with rows and columns exchanged.  Warp ids run
    along N first, then M, then the batch dim.  Register order: the instruction's D vector, then tile repetitions
    along N, then M, then the batch dim.
    """

    version: int
    warps_per_cta: tuple
    instr_shape: tuple
    is_transposed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "warps_per_cta", tuple(int(x) for x in self.warps_per_cta))
        object.__setattr__(self, "instr_shape", tuple(int(x) for x in self.instr_shape))
        object.__setattr__(self, "is_transposed", int(bool(self.is_transposed)))
        if self.version not in (2, 3, 4):
            raise ValueError(f"amd_mfma version must be 2, 3 or 4 (CDNA2 / 3 / 4), got {self.version}")
        if len(self.warps_per_cta) not in (2, 3) or len(self.instr_shape) != len(self.warps_per_cta):
            raise ValueError(f"amd_mfma: warpsPerCTA {self.warps_per_cta} and instrShape {self.instr_shape} of "
                             f"rank 2 (or 3 for a batched dot)")
        if self.instr_shape[-2:] not in ((32, 32), (16, 16)):
            raise ValueError(f"amd_mfma instrShape must be [32, 32] or [16, 16], got {list(self.instr_shape)}")


    @property
    def m_dim(self) -> int:
        return self.instr_shape[-2]

    @property
    def tile_regs(self) -> int:
        """Accumulator registers of one instruction tile: 16 (32x32) or 4 (16x16)."""
        return self.m_dim * self.instr_shape[-1] // 64

    def shape_per_cta_tile(self) -> tuple:
        wm, wn = self.warps_per_cta[-2:]
        return ((self.warps_per_cta[0],) if self.rank == 3 else ()) + (self.m_dim * wm, self.instr_shape[-1] * wn)

    def linear(self, shape) -> LinearLayout:
        return _mfma_linear(self, tuple(shape))

    def to_str(self) -> str:
        return (f"#ttg.amd_mfma<{self.version} : i32, {_arr(self.warps_per_cta)}, {_arr(self.instr_shape)}, "
                f"{self.is_transposed} : i32>")


@lru_cache(maxsize=4096)
def _mfma_linear(lay: AmdMfmaLayout, shape: tuple) -> LinearLayout:
    r, m, n, wc = _mma_dims(lay, shape)
    mdim = lay.m_dim
    # the dim along the lanes ("col", N unless transposed) and the one along the registers ("row")
    col, row = (m, n) if lay.is_transposed else (n, m)
    c_lane, c_warp, c_rep = _dim_bases(r, col, shape[col], (_log2(mdim), wc[col]))
    if mdim == 32:
        # row: registers +1, +2, one lane bit (+4), registers +8, +16
        r_reg, r_lane, r_hi, r_warp, r_rep = _dim_bases(r, row, shape[row], (2, 1, 2, wc[row]))
        r_reg = r_reg + r_hi
    else:
        # row: registers +1, +2, two lane bits (+4, +8)
        r_reg, r_lane, r_warp, r_rep = _dim_bases(r, row, shape[row], (2, 2, wc[row]))
    return _amd_mma_tail(lay, shape, wc, (col, c_warp, c_rep), (row, r_warp, r_rep), r_reg, c_lane + r_lane)


def _amd_mma_tail(lay, shape: tuple, wc, col: tuple, row: tuple, reg: list, lane: list) -> LinearLayout:
    """An AMD accumulator layout from its tile's register and lane bases: the warps along the column and row dims
    (``(dim, warp bases, repetition bases)`` each) and the batch dim of a 3-D tile, the repetitions after the
    tile's registers (N's, then M's, then the batch's)."""
    r = len(shape)
    (cd, c_warp, c_rep), (rd, r_warp, r_rep) = col, row
    warp = {cd: c_warp, rd: r_warp}
    b_rep = []
    if r == 3:
        b_warp, b_rep = _dim_bases(r, 0, shape[0], (wc[0],))
        warp[0] = b_warp
    reps = {cd: c_rep, rd: r_rep}
    reg = reg + reps[r - 1] + reps[r - 2] + b_rep
    return LinearLayout(shape, tuple(reg), tuple(lane), tuple(lay.warp_bases(shape, warp)))


@dataclass(frozen=True)
class AmdWmmaLayout(_MmaWarps):
    """The accumulator layout of AMD RDNA3 matrix instructions, ``v_wmma_*_16x16x16_*`` (Triton's
    ``#ttg.amd_wmma``), wave32.

    ``version``: 1 (RDNA3, gfx11); ``is_transposed``: the result's roles of M and N swapped (the instruction
    computes ``B^T A^T``).  Within one 16x16 tile (the ISA's D matrix of a 32-bit result, not transposed): lane
    ``l`` holds column ``l % 16`` and its 8 registers rows ``2 * r + l // 16`` (lanes 0-15 the even rows, 16-31
    the odd ones).  Transposed: the same with rows and columns exchanged.  Warp ids run along N first, then M,
    then the batch dim.  Register order: the instruction's D vector, then tile repetitions along N, then M, then
    the batch dim.
    """

    version: int
    warps_per_cta: tuple
    is_transposed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "warps_per_cta", tuple(int(x) for x in self.warps_per_cta))
        object.__setattr__(self, "is_transposed", int(bool(self.is_transposed)))
        if self.version != 1:
            raise ValueError(f"amd_wmma version must be 1 (RDNA3), got {self.version}")
        if len(self.warps_per_cta) not in (2, 3):
            raise ValueError(f"amd_wmma: warpsPerCTA {self.warps_per_cta} of rank 2 (or 3 for a batched dot)")

    #: M = N = K of one instruction; 32-bit accumulator registers per lane of one tile
    m_dim = 16
    tile_regs = 8


    def shape_per_cta_tile(self) -> tuple:
        wm, wn = self.warps_per_cta[-2:]
        return ((self.warps_per_cta[0],) if self.rank == 3 else ()) + (16 * wm, 16 * wn)

    def linear(self, shape) -> LinearLayout:
        return _wmma_linear(self, tuple(shape))

    def to_str(self) -> str:
        return f"#ttg.amd_wmma<{self.version} : i32, {_arr(self.warps_per_cta)}, {self.is_transposed} : i32>"


#: the AMD matrix-core accumulator layouts (``v_mfma``, ``v_wmma``)
AMD_MMA = (AmdMfmaLayout, AmdWmmaLayout)


@lru_cache(maxsize=4096)
def _wmma_linear(lay: AmdWmmaLayout, shape: tuple) -> LinearLayout:
    r, m, n, wc = _mma_dims(lay, shape)
    col, row = (m, n) if lay.is_transposed else (n, m)
    # col: four lane bits (l % 16); row: one lane bit (l // 16: +1), registers +2, +4, +8
    c_lane, c_warp, c_rep = _dim_bases(r, col, shape[col], (4, wc[col]))
    r_lane, r_reg, r_warp, r_rep = _dim_bases(r, row, shape[row], (1, 3, wc[row]))
    return _amd_mma_tail(lay, shape, wc, (col, c_warp, c_rep), (row, r_warp, r_rep), r_reg, c_lane + r_lane)


#: K elements one lane holds per ``v_mfma`` operand (kBase) by (instruction M, operand bits, CDNA version);
#: the instruction's K is kBase * 64 / M
def mfma_k_base(m_dim: int, bits: int, version: int) -> int:
    if bits == 32:
        return 1
    if bits == 16:
        return 8 if version >= 4 else 4
    return 8 if version >= 3 else 4  # 8-bit: i8 (gfx942: 32x32x16 / 16x16x32), fp8


@dataclass(frozen=True)
class DotOperandLayout(_Distributed):
    """The layout of a ``tt.dot`` operand (Triton's ``#ttg.dot_op``): operand ``op_idx`` (0: A, ``[.., M, K]``;
    1: B, ``[.., K, N]``) of a dot whose result has layout ``parent``.

    * parent ``nvidia_mma``: the ``mma.sync`` fragments; ``k_width`` consecutive K elements per register group
      (32 bits: 2 for 16-bit types, 4 for 8-bit, 1 for tf32).  A: lane ``l`` holds row ``l // 4`` (+ 8) and K
      ``k_width * (l % 4)`` (+ ``4 * k_width``); B: K likewise, column ``l // 4``.  Warps along the other
      operand's dim hold copies.  Register order: the fragment (``k_width`` K elements, row + 8 (A only), K +
      ``4 k_width``), then repetitions along K, then along M (A) / N (B), then the batch dim.
    * parent ``blocked`` (the FMA path): each thread holds the whole K extent for the rows (A) / columns (B) the
      parent gives it; lanes and warps along the other dim hold copies.  Registers: K fastest.
    """

    op_idx: int
    parent: object
    k_width: int = 0

    @property
    def rank(self) -> int:
        return self.parent.rank

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def order(self) -> tuple:
        r = self.rank
        # K fastest: A is [.., M, K], B is [.., K, N]
        return tuple(range(r - 1, -1, -1)) if self.op_idx == 0 else \
            (r - 2, r - 1) + tuple(range(r - 3, -1, -1))

    def linear(self, shape) -> LinearLayout:
        return _dot_operand_linear(self, tuple(shape))

    def to_str(self) -> str:
        return f"#ttg.dot_op<{self.op_idx} : i32, {self.parent.to_str()}, {self.k_width} : i32>"

    def fragment_regs(self) -> int:
        """Registers of one ``mma.sync`` fragment (parent nvidia_mma v2): A ``4 * k_width``, B ``2 * k_width``."""
        return (4 if self.op_idx == 0 else 2) * self.k_width


@lru_cache(maxsize=4096)
def _dot_operand_linear(lay: DotOperandLayout, shape: tuple) -> LinearLayout:
    r = len(shape)
    p = lay.parent
    if r != p.rank:
        raise ValueError(f"layout of rank {p.rank} for a tensor of shape {shape}")
    k = r - 1 if lay.op_idx == 0 else r - 2
    other = r - 2 if lay.op_idx == 0 else r - 1  # M for A, N for B
    if isinstance(p, BlockedLayout):
        pl = p.linear(tuple(shape[d] if d != k else 1 for d in range(r)))
        # the parent's bases along the non-K dims, at the operand's shape (K of extent 1 gives zero bases)
        k_bases = [_unit(r, k, 1 << i) for i in range(_log2(shape[k]))]
        zero = _zero(r)
        reg = k_bases + [b for b in pl.reg if b != zero]
        return LinearLayout(shape, tuple(reg), pl.lane, pl.warp)
    if isinstance(p, AmdMfmaLayout):
        return _mfma_operand_linear(lay, shape, k, other)
    if isinstance(p, AmdWmmaLayout):
        return _wmma_operand_linear(lay, shape, k, other)
    if not isinstance(p, NvidiaMmaLayout):
        raise ValueError(f"dot_op of a {type(p).__name__} parent is not supported")
    kw = lay.k_width
    if kw <= 0:
        raise ValueError(f"dot_op of an nvidia_mma parent needs k_width > 0, got {kw}")
    wc = _warp_counts(p)
    if p.version == 3 and lay.op_idx == 1:
        raise ValueError("wgmma reads B from shared memory: no dot_op<1> layout of an nvidia_mma v3 parent")
    # K: k_width registers, 2 lane bits, 1 register bit (+ 4 k_width), repetitions
    k_reg, k_lane, k_hi, k_rep = _dim_bases(r, k, shape[k], (_log2(kw), 2, 1))
    if lay.op_idx == 0:
        o_lane, o_reg, o_warp, o_rep = _dim_bases(r, other, shape[other], (3, 1, wc[other]))
        reg_frag = k_reg + o_reg + k_hi
    else:
        o_lane, o_warp, o_rep = _dim_bases(r, other, shape[other], (3, wc[other]))
        reg_frag = k_reg + k_hi
    warp, b_rep = _operand_warps(lay, shape, other, o_warp, wc)
    lane = k_lane + o_lane  # lane = 4 * (row or column) + K group
    reg = reg_frag + k_rep + o_rep + b_rep
    return LinearLayout(shape, tuple(reg), tuple(lane), tuple(p.warp_bases(shape, warp)))


def _operand_warps(lay: DotOperandLayout, shape: tuple, other: int, o_warp: list, wc: dict) -> tuple:
    """``(warp bases by dim, batch repetition bases)`` of a dot operand of an MMA-kind parent: the warps along the
    other operand's dim hold copies (zero bases), ``o_warp`` are those along this operand's non-K dim, and a batch
    dim (rank 3) has its own warps and repetitions."""
    r = len(shape)
    bcast = r - 1 if lay.op_idx == 0 else r - 2
    warp = {other: o_warp, bcast: [_zero(r)] * wc[bcast]}
    b_rep = []
    if r == 3:
        b_warp, b_rep = _dim_bases(r, 0, shape[0], (wc[0],))
        warp[0] = b_warp
    return warp, b_rep


def _mfma_operand_linear(lay: DotOperandLayout, shape: tuple, k: int, other: int) -> LinearLayout:
    """A ``v_mfma`` operand: lane ``l`` holds row (A) / column (B) ``l % mDim`` of the instruction tile and
    ``k_width`` consecutive K elements from ``k_width * (l // mDim)``; the instruction's K is ``k_width * 64 /
    mDim``.  Registers: the ``k_width`` elements, then repetitions along K, then along M (A) / N (B), then the
    batch dim.  Warps along the other operand's dim hold copies."""
    p, r = lay.parent, len(shape)
    kw = lay.k_width
    if kw <= 0:
        raise ValueError(f"dot_op of an amd_mfma parent needs k_width > 0, got {kw}")
    mdim = p.m_dim
    wc = _warp_counts(p)
    k_reg, k_lane, k_rep = _dim_bases(r, k, shape[k], (_log2(kw), _log2(64 // mdim)))
    o_lane, o_warp, o_rep = _dim_bases(r, other, shape[other], (_log2(mdim), wc[other]))
    warp, b_rep = _operand_warps(lay, shape, other, o_warp, wc)
    reg = k_reg + k_rep + o_rep + b_rep
    return LinearLayout(shape, tuple(reg), tuple(o_lane + k_lane), tuple(p.warp_bases(shape, warp)))


def _wmma_operand_linear(lay: DotOperandLayout, shape: tuple, k: int, other: int) -> LinearLayout:
    """A ``v_wmma`` operand (wave32): lane ``l`` holds row (A) / column (B) ``l % 16`` of the instruction tile and
    all 16 K elements of one instruction (``k_width`` 16); lanes 16-31 hold the same as lanes 0-15 (the RDNA3
    ISA wants both half-waves to give the sources).  Registers: the 16 K elements, then repetitions along K, then
    along M (A) / N (B), then the batch dim.  Warps along the other operand's dim hold copies."""
    p, r = lay.parent, len(shape)
    if lay.k_width != 16:
        raise ValueError(f"dot_op of an amd_wmma parent needs k_width 16, got {lay.k_width}")
    wc = _warp_counts(p)
    k_reg, k_rep = _dim_bases(r, k, shape[k], (4,))
    o_lane, o_warp, o_rep = _dim_bases(r, other, shape[other], (4, wc[other]))
    warp, b_rep = _operand_warps(lay, shape, other, o_warp, wc)
    reg = k_reg + k_rep + o_rep + b_rep
    return LinearLayout(shape, tuple(reg), tuple(o_lane + [_zero(r)]), tuple(p.warp_bases(shape, warp)))


@dataclass(frozen=True)
class LinearEncoding(_Distributed):
    """A layout given by its linear-layout bases (Triton's ``#ttg.linear``): ``reg`` / ``lane`` / ``warp`` are
    tuples of element-index tuples, one per bit, spanning :meth:`span` (each dim: the next power of two above its
    largest index).  A tensor of another shape gets it fitted as Triton does: along a smaller dim the bases are
    taken modulo its size (what falls outside becomes replication), a larger dim is repeated in registers."""

    reg: tuple
    lane: tuple
    warp: tuple

    def __post_init__(self):
        for name in ("reg", "lane", "warp"):
            object.__setattr__(self, name, tuple(tuple(int(x) for x in b) for b in getattr(self, name)))
        ranks = {len(b) for b in self.reg + self.lane + self.warp}
        if len(ranks) != 1:
            raise ValueError(f"linear layout bases of one rank expected, got {ranks or 'none'}")

    @property
    def rank(self) -> int:
        return len((self.reg + self.lane + self.warp)[0])

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp)

    @property
    def order(self) -> tuple:
        """Dims fastest first: in the order the register, then lane, then warp bases first move along them (the
        rest last to first)."""
        out = []
        for b in self.reg + self.lane + self.warp:
            for d, x in enumerate(b):
                if x and d not in out:
                    out.append(d)
        return tuple(out + [d for d in range(self.rank - 1, -1, -1) if d not in out])

    def span(self) -> tuple:
        out = []
        for d in range(self.rank):
            m = 0
            for b in self.reg + self.lane + self.warp:
                m |= b[d]
            out.append(1 << m.bit_length())
        return tuple(out)

    def linear(self, shape) -> LinearLayout:
        return _linear_encoding(self, tuple(shape))

    def to_str(self) -> str:
        flat = [[x for b in bases for x in b] for bases in (self.reg, self.lane, self.warp)]
        return f"#ttg.linear<{self.rank} : i32, " + ", ".join(_arr(f) for f in flat) + ">"


@lru_cache(maxsize=1024)
def _linear_encoding(lay: LinearEncoding, shape: tuple) -> LinearLayout:
    if len(shape) != lay.rank:
        raise ValueError(f"#ttg.linear of rank {lay.rank} for a tensor of shape {shape}")
    for n in shape:
        _log2(n)

    def fit(bases):
        return tuple(tuple(x & (n - 1) for x, n in zip(b, shape)) for b in bases)

    reg = list(fit(lay.reg))
    span = lay.span()
    for d, n in enumerate(shape):
        s = span[d]
        while s < n:
            reg.append(_unit(lay.rank, d, s))
            s *= 2
    return LinearLayout(shape, tuple(reg), fit(lay.lane), fit(lay.warp))


@dataclass(frozen=True)
class NVMMASharedLayout:
    """Shared memory laid out for tensor-core reads (Triton's ``#ttg.nvmma_shared``): the contiguous dim is cut
    into slabs ``swizzle_bytes`` wide (16 bytes when unswizzled), stored one after the other, each slab row
    major; within a slab the 16-byte chunks of a row are XORed with the row's phase (byte address bits 4.. ^=
    bits 7..), as the hardware's 32/64/128-byte swizzle modes (TMA, ``wgmma`` descriptors) expect and as
    ``ldmatrix`` reads without bank conflicts.

    ``transposed`` 0: the last dim is contiguous (row major); 1: the second to last.  ``element_bits``: the
    element size the swizzle was chosen for."""

    swizzle_bytes: int = 128
    transposed: int = 0
    element_bits: int = 16

    def __post_init__(self):
        if self.swizzle_bytes not in (0, 32, 64, 128):
            raise ValueError(f"swizzle must be 0, 32, 64 or 128 bytes, got {self.swizzle_bytes}")

    @property
    def order(self) -> tuple:
        return (0, 1) if self.transposed else (1, 0)

    def to_str(self) -> str:
        return f"#ttg.nvmma_shared<{self.swizzle_bytes} : i32, {self.transposed} : i32, {self.element_bits} : i32>"

    def to_attr(self, context=None):
        from mlir import ir

        return ir.Attribute.parse(self.to_str(), context)

    def fast_slow(self, rank: int) -> tuple:
        """``(contiguous dim, the dim of rows)`` of a buffer of ``rank`` dims (leading dims are stacked)."""
        return (rank - 2, rank - 1) if self.transposed else (rank - 1, rank - 2)

    def row_elems(self) -> int:
        """Elements of the contiguous dim in one swizzle row (one slab's width)."""
        return max(1, (self.swizzle_bytes or 16) * 8 // self.element_bits)

    def offset(self, index, shape) -> int:
        """Element offset of ``index`` in a buffer of ``shape`` (2-D, or with leading batch dims stacked)."""
        r = len(shape)
        fast, slow = self.fast_slow(r)
        w = min(self.row_elems(), shape[fast])
        rows = shape[slow]
        c, row = index[fast], index[slow]
        off = (c // w) * rows * w + row * w + (c % w)
        if self.swizzle_bytes:
            byte = off * self.element_bits // 8
            span = self.swizzle_bytes // 16  # chunks per swizzle row: 2, 4 or 8
            chunk = (byte >> 4) & (span - 1)
            phase = (byte >> 7) & (span - 1)
            byte = (byte & ~((span - 1) << 4)) | ((chunk ^ phase) << 4)
            off = byte * 8 // self.element_bits
        lead = 0
        stride = shape[fast] * shape[slow]
        for d in range(r - 3, -1, -1):
            lead += index[d] * stride
            stride *= shape[d]
        return lead + off


@dataclass(frozen=True)
class SharedLayout:
    """Swizzled shared memory (Triton's ``#shared``): ``vec`` elements stay together, rows are XOR-swizzled
    in groups of ``per_phase`` rows over ``max_phase`` phases.  ``order`` is fastest dim first."""

    vec: int = 1
    per_phase: int = 1
    max_phase: int = 1
    order: tuple = (0,)

    def __post_init__(self):
        object.__setattr__(self, "order", tuple(int(x) for x in self.order))

    def to_str(self) -> str:
        return f"#ttg.shared<{self.vec} : i32, {self.per_phase} : i32, {self.max_phase} : i32, {_arr(self.order)}>"

    def to_attr(self, context=None):
        from mlir import ir

        return ir.Attribute.parse(self.to_str(), context)

    def fast_slow(self, rank: int) -> tuple:
        """``(contiguous dim, the dim of rows or None)``."""
        return self.order[0], (self.order[1] if rank >= 2 else None)

    def phases(self, shape) -> int:
        """The phases a buffer of ``shape`` really has: a row narrower than ``vec * max_phase`` elements keeps its
        XORed vector index inside the row (as Triton's linear layout of it: each phase bit's column offset is
        taken modulo the row), so fewer phases (one when the row is at most ``vec`` wide)."""
        if len(shape) < 2:
            return 1
        return max(1, min(self.max_phase, shape[self.order[0]] // self.vec))

    def offset(self, index, shape) -> int:
        """Element offset of ``index`` in a buffer of ``shape`` (swizzled along the two fastest dims)."""
        rank = len(shape)
        fast = self.order[0]
        # row-major along ``order`` reversed: fastest dim has stride 1
        strides = [0] * rank
        s = 1
        for d in self.order:
            strides[d] = s
            s *= shape[d]
        col = index[fast]
        if rank >= 2:
            row = index[self.order[1]]
            phase = (row // self.per_phase) % self.phases(shape)
            col = ((col // self.vec) ^ phase) * self.vec + col % self.vec
        return sum(index[d] * strides[d] for d in range(rank) if d != fast) + col


# ----------------------------------------------------------------------------------------------
# Construction, attributes
# ----------------------------------------------------------------------------------------------

def blocked_layout(shape, size_per_thread, order, num_warps: int, threads_per_warp: int = 32) -> BlockedLayout:
    """Triton's ``BlockedEncodingAttr::get(shape, sizePerThread, order, numWarps, threadsPerWarp)``: lanes, then
    warps, handed out from the fastest dimension (``order[0]``) while the shape has room; the slowest dimension
    takes what is left."""
    rank = len(shape)
    spt = [int(x) for x in size_per_thread]
    tpw, wpc = [1] * rank, [1] * rank
    rem_lanes, rem_warps, rem_threads = threads_per_warp, num_warps, threads_per_warp * num_warps
    prev_lanes = prev_warps = 1
    for i in list(order)[:-1]:
        threads = max(1, min(rem_threads, max(shape[i] // spt[i], 1)))
        tpw[i] = max(1, min(threads, rem_lanes))
        wpc[i] = max(1, min(threads // tpw[i], rem_warps))
        rem_warps //= wpc[i]
        rem_lanes //= tpw[i]
        rem_threads //= threads
        prev_lanes *= tpw[i]
        prev_warps *= wpc[i]
    last = order[-1]
    tpw[last] = threads_per_warp // prev_lanes
    wpc[last] = num_warps // prev_warps
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


def reshape_index(idx, from_shape, to_shape) -> tuple:
    """The index in ``to_shape`` of element ``idx`` of ``from_shape`` under a row-major reshape (the same linear
    offset).  Shapes are powers of two, so this is linear over the XOR of layout bases."""
    off = 0
    for i, n in zip(idx, from_shape):
        off = off * n + i
    out = []
    for n in reversed(tuple(to_shape)):
        out.append(off % n)
        off //= n
    return tuple(reversed(out))


def trans_source_index(idx, order) -> tuple:
    """The source index of element ``idx`` of ``tt.trans(x, order)`` (source dim ``order[k]`` is result dim k)."""
    s = [0] * len(idx)
    for k, o in enumerate(order):
        s[o] = idx[k]
    return tuple(s)


def _from_linear(ll: LinearLayout, project) -> "LinearEncoding":
    f = lambda bases: tuple(project(b) for b in bases)  # noqa: E731
    return LinearEncoding(f(ll.reg), f(ll.lane), f(ll.warp))


def transposed_layout(lay, shape, order):
    """The layout of ``tt.trans(x, order)`` for ``x`` of ``shape`` in ``lay`` in which every element stays in the
    register that holds it (Triton's ``inferTransOpEncoding``): a blocked layout's parameters permuted, any other
    layout's linear bases (a ``#ttg.linear``)."""
    order = tuple(int(o) for o in order)
    if isinstance(lay, BlockedLayout):
        inv = {o: k for k, o in enumerate(order)}
        return BlockedLayout(tuple(lay.size_per_thread[o] for o in order),
                             tuple(lay.threads_per_warp[o] for o in order),
                             tuple(lay.warps_per_cta[o] for o in order), tuple(inv[d] for d in lay.order))
    return _from_linear(lay.linear(tuple(shape)), lambda b: tuple(b[o] for o in order))


def reshaped_layout(lay, from_shape, to_shape):
    """The layout of a row-major ``tt.reshape`` of a ``from_shape`` tensor in ``lay`` to ``to_shape`` that keeps
    every element in its register (a ``#ttg.linear``; a blocked layout when the reshape only drops or adds dims
    of size 1 is left to the caller)."""
    return _from_linear(lay.linear(tuple(from_shape)), lambda b: reshape_index(b, from_shape, to_shape))


def default_blocked(shape, num_warps: int, threads_per_warp: int = 32, size_per_thread=None) -> BlockedLayout:
    """Triton's ``getDefaultBlockedEncoding``: order = dims from the last (fastest) to the first, sizePerThread
    1 (or ``size_per_thread``), then :func:`blocked_layout`."""
    rank = len(shape)
    spt = list(size_per_thread) if size_per_thread is not None else [1] * rank
    return blocked_layout(shape, spt, tuple(range(rank - 1, -1, -1)), num_warps, threads_per_warp)


def _parse(s: str):
    pos = 0

    def skip():
        nonlocal pos
        while pos < len(s) and s[pos] in " \n\t":
            pos += 1

    def expect(t):
        nonlocal pos
        skip()
        if not s.startswith(t, pos):
            raise ValueError(f"bad layout attribute {s!r} at {pos}: expected {t!r}")
        pos += len(t)

    def number():
        nonlocal pos
        skip()
        m = re.compile(r"-?\d+").match(s, pos)
        if not m:
            raise ValueError(f"bad layout attribute {s!r} at {pos}")
        pos = m.end()
        skip()
        if s.startswith(":", pos):
            pos += 1
            skip()
            m2 = re.compile(r"i\d+").match(s, pos)
            pos = m2.end()
        return int(m.group())

    def array():
        nonlocal pos
        expect("array<i32")
        skip()
        if s.startswith(">", pos):
            pos += 1
            return ()
        expect(":")
        out = [number()]
        skip()
        while s.startswith(",", pos):
            pos += 1
            out.append(number())
            skip()
        expect(">")
        return tuple(out)

    def value():
        nonlocal pos
        skip()
        m = re.compile(r"#ttg\.(\w+)<").match(s, pos)
        if not m:
            raise ValueError(f"bad layout attribute {s!r} at {pos}")
        pos = m.end()
        kind = m.group(1)
        if kind == "blocked":
            a = array(); expect(","); b = array(); expect(","); c = array(); expect(","); d = array()
            out = BlockedLayout(a, b, c, d)
        elif kind == "slice":
            dim = number(); expect(","); parent = value()
            out = SliceLayout(dim, parent)
        elif kind == "shared":
            v = number(); expect(","); pp = number(); expect(","); mp = number(); expect(","); o = array()
            out = SharedLayout(v, pp, mp, o)
        elif kind == "nvidia_mma":
            v = number(); expect(","); w = array(); expect(","); ins = array()
            out = NvidiaMmaLayout(v, w, ins)
        elif kind == "amd_mfma":
            v = number(); expect(","); w = array(); expect(","); ins = array(); expect(","); tr = number()
            out = AmdMfmaLayout(v, w, ins, tr)
        elif kind == "amd_wmma":
            v = number(); expect(","); w = array(); expect(","); tr = number()
            out = AmdWmmaLayout(v, w, tr)
        elif kind == "dot_op":
            i = number(); expect(","); parent = value(); expect(","); kw = number()
            out = DotOperandLayout(i, parent, kw)
        elif kind == "nvmma_shared":
            sw = number(); expect(","); tr = number(); expect(","); eb = number()
            out = NVMMASharedLayout(sw, tr, eb)
        elif kind == "linear":
            rank = number()
            flat = []
            for _ in range(3):
                expect(","); flat.append(array())
            reg, lane, warp = (tuple(tuple(f[i:i + rank]) for i in range(0, len(f), rank)) for f in flat)
            out = LinearEncoding(reg, lane, warp)
        else:
            raise ValueError(f"unknown ttg layout #{kind} in {s!r}")
        expect(">")
        return out

    return value()


@lru_cache(maxsize=4096)
def parse_layout(text: str):
    """The layout dataclass of a printed ``#ttg.*<...>`` attribute."""
    return _parse(text)


def from_attr(attr):
    """The layout dataclass of an ``mlir.ir.Attribute`` (or its text)."""
    return parse_layout(str(attr))


# ----------------------------------------------------------------------------------------------
# Pictures
# ----------------------------------------------------------------------------------------------

def ownership_grid(layout, shape) -> list:
    """For a 1-D or 2-D ``shape``: a grid (list of rows) of sorted lists of the thread ids holding each element
    (thread id = warp * lanes + lane)."""
    ll = layout.linear(tuple(shape))
    shape2 = tuple(shape) if len(shape) == 2 else (1, shape[0])
    grid = [[[] for _ in range(shape2[1])] for _ in range(shape2[0])]
    for w in range(ll.num_warps):
        for ln in range(ll.num_lanes):
            t = w * ll.num_lanes + ln
            for idx in ll.elements(w, ln):
                i, j = (idx if len(shape) == 2 else (0, idx[0]))
                if t not in grid[i][j]:
                    grid[i][j].append(t)
    for row in grid:
        for c in row:
            c.sort()
    return grid


#: the most rows / columns :func:`picture` draws (a 256-wide tile would be a 5000-pixel-wide picture)
PICTURE_CELLS = 64


def picture(layout, shape, path) -> str:
    """Write a PNG of which thread owns each element of a 1-D/2-D tensor of ``shape`` (colour = warp, label =
    lowest thread id holding it, ``+`` when replicated), titled with the layout's fields; at most ``PICTURE_CELLS``
    rows and columns are drawn (the title says when the tensor is larger).  Needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("layouts.picture needs matplotlib: pip install matplotlib") from None
    if len(shape) not in (1, 2):
        raise ValueError(f"picture draws 1-D or 2-D tensors, got shape {tuple(shape)}")
    import textwrap

    grid = ownership_grid(layout, shape)
    ll = layout.linear(tuple(shape))
    full = (len(grid), len(grid[0]))
    grid = [row[:PICTURE_CELLS] for row in grid[:PICTURE_CELLS]]
    rows, cols = len(grid), len(grid[0])
    fig, ax = plt.subplots(figsize=(max(4, cols * 0.3), max(2, rows * 0.3)))
    cmap = plt.get_cmap("tab20")
    for i in range(rows):
        for j in range(cols):
            t = grid[i][j][0]
            w = t // ll.num_lanes
            ax.add_patch(plt.Rectangle((j, rows - 1 - i), 1, 1, color=cmap(w % 20), alpha=0.25 + 0.75 * ((t % 2) == 0)))
            label = f"{t}" + ("+" if len(grid[i][j]) > 1 else "")
            ax.text(j + 0.5, rows - 0.5 - i, label, ha="center", va="center", fontsize=5)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_xticks([])
    ax.set_yticks([])
    title = f"{layout!r}, tensor {tuple(shape)}"
    if (rows, cols) != full:
        title += f" (the first {rows} x {cols} of {full[0]} x {full[1]} elements)"
    ax.set_title("\n".join(textwrap.wrap(title, 110)), fontsize=7)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return str(path)



# ------------------------------------------------------------------------------------------- registers
def replicated_across_threads(ll) -> bool:
    """Some element of layout ``ll`` is held by more than one thread (a lane or warp basis is zero)."""
    return any(not any(b) for b in list(ll.lane) + list(ll.warp))


def reg_lookup(src_ll, dst_ll, project):
    """For each register of ``dst_ll``, the register of ``src_ll`` holding ``project(its element)`` in the same
    thread; None when the layouts place them in different threads."""
    if [project(b) for b in dst_ll.lane] != list(src_ll.lane) or \
            [project(b) for b in dst_ll.warp] != list(src_ll.warp):
        return None
    where = src_ll.register_of()
    out = []
    for r in range(dst_ll.num_regs):
        key = project(dst_ll.index(r))
        if key not in where:
            return None
        out.append(where[key])
    return out


__all__ = ["LinearLayout", "BlockedLayout", "SliceLayout", "SharedLayout", "NvidiaMmaLayout", "AmdMfmaLayout",
           "AmdWmmaLayout", "DotOperandLayout", "mfma_k_base",
           "NVMMASharedLayout", "default_blocked", "from_attr", "reshape_index", "trans_source_index",
           "transposed_layout", "reshaped_layout",
           "parse_layout", "picture", "ownership_grid", "reg_lookup", "replicated_across_threads"]
