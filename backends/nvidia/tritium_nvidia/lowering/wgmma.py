"""Hopper ``wgmma`` building blocks (sm_90a): what the ``tt.dot`` lowering of an ``#ttg.nvidia_mma<3, ...>`` result
calls, independent of how the shared-memory operands got filled.

* **Matrix descriptors** (PTX ISA 9.7.15.5.1.2, "Matrix Descriptor Format"): a 64-bit value per operand tile,

  ========  ======================================================================
  bits      field
  ========  ======================================================================
  0-13      start address ``(addr & 0x3FFFF) >> 4`` (shared-space byte address)
  16-29     leading dimension byte offset (LBO) ``>> 4``
  32-45     stride dimension byte offset (SBO) ``>> 4``
  49-51     base offset (0: the buffer starts on its swizzle pattern's boundary)
  62-63     swizzle mode: 0 none, 1 128B, 2 64B, 3 32B
  ========  ======================================================================

  :func:`smem_descriptor` / :func:`operand_descriptor` compute them for a buffer in
  :class:`~tritium.dialects.layouts.NVMMASharedLayout`; :func:`emit_descriptor` builds the i64 from an i32 address
  value; :func:`tile_offset` / :func:`k_step_offset` are the per-tile / per-k-step byte advances.

* **A model of the hardware** (:func:`hardware_addresses`): the byte address wgmma reads for each ``(mn, k)``
  element of an operand tile through a descriptor, from the PTX ISA's canonical layouts (9.7.15.5.1.2.1.3): in
  elements, with ``T = 128 / bits`` and ``S`` the swizzle width in bytes (``S/16`` 16-byte chunks per row),

  ========  ========  =============================================
  major     swizzle   canonical layout ``(MN modes),(K modes)``
  ========  ========  =============================================
  K         none      ``((8,m),(T,2k)):((1T,SBO),(1,LBO))``
  K         S         ``((8,m),(T,2k)):((S/16 T,SBO),(1,T))``
  MN        none      ``((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))``
  MN        S         ``((T,S/16,m),(8,k)):((1,T,LBO),(S/16 T,SBO))``
  ========  ========  =============================================

  then the swizzle XORs byte-address bits ``4..`` with bits ``7..`` (``log2(S/16)`` bits: CuTe's
  ``Swizzle<log2(S/16), 4, 3>``) of the absolute shared-memory address.  The tests check it against
  ``NVMMASharedLayout.offset``.

* **Instructions** (inline asm): :func:`wgmma_fence`, :func:`wgmma_commit`, :func:`wgmma_wait` (the accumulators
  pass through the asm, tied, so nothing reads them before the wait), :func:`fence_proxy_async`,
  :func:`wgmma_mma_async`.

Operand conventions.  ``operand`` 0 is A, a ``[M, K]`` buffer; 1 is B, a ``[K, N]`` buffer (shapes as the dot sees
them).  An operand is *K-major* when K is its contiguous dim: A with ``transposed`` 0, B with ``transposed`` 1;
otherwise *MN-major* (``imm-trans-a`` / ``imm-trans-b`` = 1), which the hardware allows for 16-bit types only.
Register order of the accumulator: ``d[i]`` of thread ``(warp, lane)`` of the warpgroup is row
``16 * warp + lane // 4 + 8 * ((i >> 1) & 1)``, column ``8 * (i >> 2) + 2 * (lane % 4) + (i & 1)``
(:func:`acc_element`), which is the first ``n / 2`` registers of ``NvidiaMmaLayout(3, ...)`` (:func:`acc_tiles`).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.lowering import LoweringError
from tritium.lowering.utils import inline_asm, pack_word, unpack_word

# ------------------------------------------------------------------------------------------------
# Types and shapes
# ------------------------------------------------------------------------------------------------

#: PTX operand type -> element bits
OPERAND_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}

#: PTX operand type -> the accumulator types wgmma allows with it
ACC_TYPES = {"f16": ("f32", "f16"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f32", "f16"),
             "e5m2": ("f32", "f16"), "s8": ("s32",), "u8": ("s32",)}

_FAMILY = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "e4m3": "fp8", "e5m2": "fp8", "s8": "int", "u8": "int"}


def ptx_type(elem) -> str:
    """The PTX operand type of an MLIR element type: f16, bf16, f32 (as tf32), i8 (as s8), f8E4M3FN, f8E5M2."""
    s = str(tt.elem_of(elem)) if not isinstance(elem, str) else elem
    names = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
    if s not in names:
        raise LoweringError(f"wgmma: no operand type for {s}")
    return names[s]


def instr_k(a_type: str) -> int:
    """K of one instruction: 32 bytes of K (16 for 16-bit types, 8 for tf32, 32 for 8-bit)."""
    return instr_k_bits(OPERAND_BITS[a_type])


def instr_k_bits(elem_bits: int) -> int:
    """The instruction K for an element size (32 bytes of K)."""
    return 256 // elem_bits


def valid_n(n: int, acc_type: str) -> bool:
    """The instruction N values: multiples of 8 up to 256; with s32 accumulators 8, 16, 24, 32, then multiples of
    16 up to 256."""
    if n < 8 or n > 256 or n % 8:
        return False
    return acc_type != "s32" or n <= 32 or n % 16 == 0


def acc_regs(n: int, acc_type: str) -> int:
    """Accumulator registers of the instruction per thread: n/2 (f32, s32), n/4 packed f16x2 (f16)."""
    return n // 4 if acc_type == "f16" else n // 2


def is_k_major(layout: layouts.NVMMASharedLayout, operand: int) -> bool:
    """K is the contiguous dim: A ``[M, K]`` with ``transposed`` 0, B ``[K, N]`` with ``transposed`` 1."""
    return (layout.transposed == 0) == (operand == 0)


def mn_k_extents(shape, operand: int) -> tuple:
    """``(MN extent, K extent)`` of an operand buffer of ``shape`` (A ``[M, K]``, B ``[K, N]``)."""
    if len(shape) != 2:
        raise ValueError(f"wgmma operands are 2-D buffers, got shape {tuple(shape)}")
    return (shape[0], shape[1]) if operand == 0 else (shape[1], shape[0])


# ------------------------------------------------------------------------------------------------
# Descriptors
# ------------------------------------------------------------------------------------------------

#: swizzle width in bytes -> the descriptor's mode (bits 62-63)
SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}
_SWIZZLE_BYTES = {v: k for k, v in SWIZZLE_MODES.items()}


def _encode(x: int) -> int:
    """PTX's ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``."""
    return (int(x) & 0x3FFFF) >> 4


@dataclass(frozen=True)
class Descriptor:
    """The fields of a wgmma matrix descriptor, in bytes: ``start`` (shared-space address of the tile's first
    element), ``lbo`` / ``sbo`` (leading / stride dimension byte offsets), ``swizzle`` (0, 32, 64, 128) and
    ``base_offset`` (the 3-bit field; 0 for buffers aligned to their swizzle pattern: 8 * swizzle bytes)."""

    start: int
    lbo: int
    sbo: int
    swizzle: int
    base_offset: int = 0

    def __post_init__(self):
        for name in ("start", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16 or v < 0 or v >= 1 << 18:
                raise ValueError(f"descriptor {name} = {v}: must be a multiple of 16 below 256 KiB")
        if self.swizzle not in SWIZZLE_MODES:
            raise ValueError(f"swizzle must be 0, 32, 64 or 128 bytes, got {self.swizzle}")
        if not 0 <= self.base_offset < 8:
            raise ValueError(f"base offset {self.base_offset} does not fit 3 bits")

    def fields(self) -> int:
        """The descriptor without its start address: the constant :func:`emit_descriptor` ORs in."""
        return (_encode(self.lbo) << 16) | (_encode(self.sbo) << 32) | (self.base_offset << 49) | \
            (SWIZZLE_MODES[self.swizzle] << 62)

    def encode(self) -> int:
        """The 64-bit descriptor."""
        return _encode(self.start) | self.fields()

    @classmethod
    def decode(cls, value: int) -> "Descriptor":
        value = int(value)
        return cls(start=(value & 0x3FFF) << 4, lbo=((value >> 16) & 0x3FFF) << 4, sbo=((value >> 32) & 0x3FFF) << 4,
                   swizzle=_SWIZZLE_BYTES[(value >> 62) & 3], base_offset=(value >> 49) & 7)

    def advanced(self, nbytes: int) -> "Descriptor":
        """The same descriptor ``nbytes`` further on (a tile / k-step advance)."""
        return Descriptor(self.start + nbytes, self.lbo, self.sbo, self.swizzle, self.base_offset)


def _geometry(mn_extent: int, k_extent: int, elem_bits: int, swizzle: int, k_major: bool) -> tuple:
    """``(slab width in elements, slab row bytes, slab stride bytes)`` of an NVMMASharedLayout buffer: the
    contiguous dim cut into slabs ``swizzle`` bytes wide (16 unswizzled), each slab all rows of the other dim."""
    if swizzle not in SWIZZLE_MODES:
        raise ValueError(f"swizzle must be 0, 32, 64 or 128 bytes, got {swizzle}")
    if elem_bits not in (8, 16, 32):
        raise ValueError(f"wgmma operands have 8, 16 or 32-bit elements, got {elem_bits}")
    row_bytes = swizzle or 16
    fast, slow = (k_extent, mn_extent) if k_major else (mn_extent, k_extent)
    if fast * elem_bits // 8 < row_bytes:
        raise ValueError(
            f"the contiguous dim ({fast} x {elem_bits}-bit = {fast * elem_bits // 8} bytes) is narrower than a "
            f"{'%d-byte swizzle' % swizzle if swizzle else 'core matrix'} row ({row_bytes} bytes): the hardware "
            f"reads rows of {row_bytes} bytes; use a swizzle of at most {fast * elem_bits // 8} bytes")
    if slow % 8:
        raise ValueError(f"the non-contiguous dim ({slow}) must be a multiple of 8 rows")
    w = row_bytes * 8 // elem_bits
    return w, row_bytes, slow * row_bytes


def smem_descriptor(*, mn_extent: int, k_extent: int, elem_bits: int, swizzle: int, k_major: bool,
                    start: int = 0) -> Descriptor:
    """The descriptor of a buffer in NVMMASharedLayout whose tile starts at byte address ``start``.

    The buffer is ``mn_extent`` x ``k_extent`` elements of ``elem_bits``; ``k_major``: K is its contiguous dim;
    ``swizzle``: the layout's swizzle bytes.  With ``S`` the slab row (``swizzle`` bytes, 16 unswizzled) and a
    slab holding every row of the non-contiguous dim:

    * K-major, swizzled: SBO = 8 rows = ``8 S``; LBO unused (1 by the PTX ISA: 16 bytes);
    * K-major, unswizzled: SBO = 128 (the next 8 MN rows' core matrix), LBO = the slab stride ``mn_extent * 16``
      (the next 8 K elements' core matrix);
    * MN-major, swizzled: SBO = ``8 S`` (the next 8 K rows), LBO = the slab stride ``k_extent * S`` (the next
      ``S`` bytes of MN);
    * MN-major, unswizzled: LBO = 128 (the next 8 K rows), SBO = the slab stride ``k_extent * 16`` (the next 16
      bytes of MN).

    MN-major reads need a 16-bit type (wgmma transposes only f16 / bf16)."""
    if not k_major and elem_bits != 16:
        raise ValueError(f"wgmma reads MN-major operands only for 16-bit types (imm-trans), not {elem_bits}-bit: "
                         f"store the operand K-major")
    _, row, slab = _geometry(mn_extent, k_extent, elem_bits, swizzle, k_major)
    if k_major:
        lbo, sbo = (16, 8 * row) if swizzle else (slab, 128)
    else:
        lbo, sbo = (slab, 8 * row) if swizzle else (128, slab)
    return Descriptor(start=start, lbo=lbo, sbo=sbo, swizzle=swizzle)


def _tile_offset(mn_extent, k_extent, elem_bits, swizzle, k_major, mn: int, k: int, mn_size=None) -> int:
    w, row, slab = _geometry(mn_extent, k_extent, elem_bits, swizzle, k_major)
    eb = elem_bits // 8
    if k_major:
        if mn % 8:
            raise ValueError(f"a K-major tile starts on a multiple of 8 rows, not {mn}")
        if k % instr_k_bits(elem_bits):
            raise ValueError(f"a tile starts on a multiple of the instruction's K ({instr_k_bits(elem_bits)}), not {k}")
        return (k // w) * slab + mn * row + (k % w) * eb
    if k % 8:
        raise ValueError(f"an MN-major tile starts on a multiple of 8 K rows, not {k}")
    if (mn % w) * eb % 16:
        raise ValueError(f"an MN-major tile starts on a 16-byte boundary, not at element {mn}")
    if mn % w and mn_size is not None and mn % w + mn_size > w:
        raise ValueError(f"an MN-major tile of {mn_size} starting at {mn}, inside a {w}-element slab, crosses it")
    return (mn // w) * slab + k * row + (mn % w) * eb


def _layout_args(layout: layouts.NVMMASharedLayout, shape, operand: int, elem_bits):
    mn_extent, k_extent = mn_k_extents(shape, operand)
    return mn_extent, k_extent, elem_bits or layout.element_bits, layout.swizzle_bytes, is_k_major(layout, operand)


def tile_offset(layout: layouts.NVMMASharedLayout, shape, operand: int, mn: int = 0, k: int = 0, *,
                elem_bits: int = None, mn_size: int = None) -> int:
    """Bytes from the buffer's start to the tile whose first element is ``(mn, k)`` (A: row ``mn``, column ``k``;
    B: row ``k``, column ``mn``): the start address to put in the descriptor.  ``mn`` is a multiple of 8 (K-major)
    / of 16 bytes (MN-major), ``k`` of the instruction's K.  For a swizzled layout this is the unswizzled address
    (the hardware swizzles what it computes), which is also where ``layout.offset`` puts that element.
    ``mn_size``: the tile's MN extent (64 for A, N for B), to refuse MN-major tiles that start inside a slab row
    and cross it."""
    return _tile_offset(*_layout_args(layout, shape, operand, elem_bits), mn, k, mn_size)


def k_step_offset(layout: layouts.NVMMASharedLayout, shape, operand: int, j: int, *, elem_bits: int = None) -> int:
    """Bytes from the tile of k-step 0 to that of k-step ``j`` (K = ``j`` instruction Ks): within a swizzled slab
    ``32 j`` bytes (K-major) or ``j * K * S`` (MN-major: K rows of ``S`` bytes), plus a slab stride each time K
    crosses a slab (K-major)."""
    args = _layout_args(layout, shape, operand, elem_bits)
    return _tile_offset(*args, 0, j * instr_k_bits(args[2]))


def operand_descriptor(layout: layouts.NVMMASharedLayout, shape, operand: int, *, base: int = 0, mn: int = 0,
                       k: int = 0, elem_bits: int = None, mn_size: int = None) -> Descriptor:
    """The descriptor of operand ``operand`` (0: A ``[M, K]``, 1: B ``[K, N]``) for the tile at ``(mn, k)`` of a
    buffer of ``shape`` in ``layout`` whose first byte is at shared address ``base`` (aligned to 8 * swizzle
    bytes, 1024 for 128B, so the base offset is 0)."""
    mn_extent, k_extent, bits, swizzle, k_major = _layout_args(layout, shape, operand, elem_bits)
    if swizzle and base % (8 * swizzle):
        raise ValueError(f"a {swizzle}B-swizzled buffer starts on a {8 * swizzle}-byte boundary, not at {base}")
    d = smem_descriptor(mn_extent=mn_extent, k_extent=k_extent, elem_bits=bits, swizzle=swizzle, k_major=k_major)
    return d.advanced(base + _tile_offset(mn_extent, k_extent, bits, swizzle, k_major, mn, k, mn_size))


# ------------------------------------------------------------------------------------------------
# The hardware model
# ------------------------------------------------------------------------------------------------

def swizzle_address(addr: int, swizzle: int) -> int:
    """The hardware's swizzle of an absolute shared-memory byte address: bits ``4..`` XOR bits ``7..``
    (3 bits for 128B, 2 for 64B, 1 for 32B)."""
    if not swizzle:
        return addr
    mask = swizzle // 16 - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def hardware_address(desc, mn: int, k: int, *, elem_bits: int, k_major: bool) -> int:
    """The byte address wgmma reads for element ``(mn, k)`` of an operand tile through descriptor ``desc`` (a
    :class:`Descriptor` or its 64-bit value), ``elem_bits`` elements, K-major or MN-major: the PTX ISA's canonical
    layout in bytes, then the swizzle on the address.  Models buffers aligned to their swizzle pattern (base
    offset 0)."""
    d = desc if isinstance(desc, Descriptor) else Descriptor.decode(desc)
    if d.base_offset:
        raise NotImplementedError("the model covers base offset 0 (pattern-aligned buffers) only")
    eb = elem_bits // 8
    t = 16 // eb  # elements per 16 bytes
    if k_major:
        if d.swizzle:  # ((8,m),(T,2k)):((S/16 T,SBO),(1,T))
            off = (mn % 8) * d.swizzle + (mn // 8) * d.sbo + k * eb
        else:  # ((8,m),(T,2k)):((1T,SBO),(1,LBO))
            off = (mn % 8) * 16 + (mn // 8) * d.sbo + (k % t) * eb + (k // t) * d.lbo
    elif d.swizzle:  # ((T,S/16,m),(8,k)):((1,T,LBO),(S/16 T,SBO))
        chunks = d.swizzle // 16
        off = (mn % t) * eb + ((mn // t) % chunks) * 16 + (mn // (t * chunks)) * d.lbo + \
            (k % 8) * d.swizzle + (k // 8) * d.sbo
    else:  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
        off = (mn % t) * eb + (mn // t) * d.sbo + (k % 8) * 16 + (k // 8) * d.lbo
    return swizzle_address(d.start + off, d.swizzle)


def hardware_addresses(desc, *, mn_size: int, k_size: int, elem_bits: int, k_major: bool) -> dict:
    """``{(mn, k): byte address}`` that wgmma reads through ``desc`` for an operand tile of ``mn_size`` (64 for A,
    N for B) x ``k_size`` (the instruction's K) elements: :func:`hardware_address` of each."""
    d = desc if isinstance(desc, Descriptor) else Descriptor.decode(desc)
    return {(mn, k): hardware_address(d, mn, k, elem_bits=elem_bits, k_major=k_major)
            for mn in range(mn_size) for k in range(k_size)}


def acc_element(i: int, lane: int, warp: int = 0) -> tuple:
    """``(row, column)`` of accumulator register ``d[i]`` of thread ``lane`` of warp ``warp`` (0-3) of the
    warpgroup: the PTX ISA's wgmma D fragment (CuTe's ``CLayout_64xN``)."""
    return (16 * warp + lane // 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1))


def a_fragment_element(i: int, lane: int, warp: int, elem_bits: int) -> tuple:
    """``(row, k)`` of element ``i`` of the A-from-registers fragment (in register order, four 32-bit registers
    of ``32 / elem_bits`` elements each) of thread ``lane`` of warp ``warp``: per warp the ``mma.sync`` A
    fragment, 16 rows per warp (CuTe's ``ALayout_64x8 / 64x16 / 64x32``)."""
    kw = 32 // elem_bits
    j, r = i % kw, i // kw  # element within the register, register
    return (16 * warp + lane // 4 + 8 * (r & 1), kw * (lane % 4) + j + 4 * kw * (r >> 1))


def acc_tiles(layout: layouts.NvidiaMmaLayout, shape) -> list:
    """The accumulator of ``layout`` (version 3) for ``shape`` as one register block per wgmma instruction:
    ``[(first register, (row, column) of the block's first element for warp 0, lane 0))]`` in register order;
    each block is ``instr_n / 2`` registers in the instruction's ``d`` order.  A warp's own block origin adds its
    warp bases (rows ``16 * (warp % 4)`` within the warpgroup, warpgroups along M then N)."""
    if layout.version != 3:
        raise ValueError(f"acc_tiles needs an nvidia_mma version 3 layout, got {layout}")
    if layout.rank != 2 or layout.warps_per_cta[0] % 4:
        raise ValueError(f"a wgmma accumulator is 2-D with whole warpgroups (multiples of 4 warps) along M, "
                         f"got {layout}")
    ll = layout.linear(tuple(shape))
    per = layout.instr_n // 2
    return [(r0, ll.index(r0)) for r0 in range(0, ll.num_regs, per)]


# ------------------------------------------------------------------------------------------------
# Emitters
# ------------------------------------------------------------------------------------------------

def _i64(ctx):
    return ctx.int_ty(64)


def shared_address(ctx, byte_offset=0):
    """The i32 shared-space address of ``@global_smem`` + ``byte_offset`` (an int or an i32 value)."""
    base = ctx.emit("llvm.ptrtoint", [ctx.smem_base()], ctx.i32())
    if isinstance(byte_offset, int):
        return ctx.emit("arith.addi", [base, ctx.c32(byte_offset)], ctx.i32()) if byte_offset else base
    return ctx.emit("arith.addi", [base, byte_offset], ctx.i32())


def emit_descriptor(ctx, address, fields):
    """The i64 descriptor of the tile at ``address`` (an i32 shared-space byte address value):
    ``((address & 0x3FFFF) >> 4) | fields``; ``fields`` is a :class:`Descriptor` (its start is ignored) or the
    int of :meth:`Descriptor.fields`."""
    if isinstance(fields, Descriptor):
        fields = fields.fields()
    i32, i64 = ctx.i32(), _i64(ctx)
    a = ctx.emit("arith.andi", [address, ctx.c32(0x3FFFF)], i32)
    a = ctx.emit("arith.shrui", [a, ctx.c32(4)], i32)
    a = ctx.emit("arith.extui", [a], i64)
    return ctx.emit("arith.ori", [a, ctx.const(i64, _signed64(fields))], i64)


def advance_descriptor(ctx, desc, nbytes):
    """``desc`` (an i64 value) moved ``nbytes`` on (an int multiple of 16, or an i32 value): adds ``nbytes >> 4``
    to the start field (shared addresses stay below 256 KiB, so it does not carry into the next field)."""
    i64 = _i64(ctx)
    if isinstance(nbytes, int):
        if nbytes % 16:
            raise ValueError(f"descriptor advances are multiples of 16 bytes, not {nbytes}")
        if not nbytes:
            return desc
        return ctx.emit("arith.addi", [desc, ctx.const(i64, nbytes >> 4)], i64)
    step = ctx.emit("arith.extui", [ctx.emit("arith.shrui", [nbytes, ctx.c32(4)], ctx.i32())], i64)
    return ctx.emit("arith.addi", [desc, step], i64)


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def wgmma_fence(ctx) -> None:
    """``wgmma.fence.sync.aligned``: orders this warpgroup's register (accumulator, A-fragment) and shared memory
    accesses before the following ``wgmma.mma_async``.  Emit it after the last write of those registers, right
    before the instructions (ptxas injects its own ``warpgroup.arrive`` when registers are written in between)."""
    inline_asm(ctx, "wgmma.fence.sync.aligned;", "", [], [], side_effects=True)


def wgmma_commit(ctx) -> None:
    """``wgmma.commit_group.sync.aligned``: the ``wgmma.mma_async`` issued since the last commit form a group."""
    inline_asm(ctx, "wgmma.commit_group.sync.aligned;", "", [], [], side_effects=True)


def fence_proxy_async(ctx) -> None:
    """``fence.proxy.async.shared::cta``: generic-proxy writes to shared memory (st.shared) before it become
    visible to the async proxy (wgmma's descriptor reads, TMA) after it.  Put it after the writes, before the
    barrier that publishes them."""
    inline_asm(ctx, "fence.proxy.async.shared::cta;", "", [], [], side_effects=True)


_WAIT_CONSTRAINT = {"f32": "f", "f64": "d", "i32": "r", "i64": "l", "i16": "h"}


def wgmma_wait(ctx, pending: int, values=()) -> list:
    """``wgmma.wait_group.sync.aligned pending``: wait until at most ``pending`` groups are in flight.  ``values``
    (the accumulators of the groups waited for; f32 / i32 / f16 / bf16 / i64 / f64 scalars) go through the asm as
    tied operands; use the returned values, which LLVM cannot read before the wait."""
    if pending < 0 or pending > 7:
        raise ValueError(f"wgmma.wait_group takes 0..7 pending groups, not {pending}")
    text = f"wgmma.wait_group.sync.aligned {int(pending)};"
    vals = list(values)
    if not vals:
        inline_asm(ctx, text, "", [], [], side_effects=True)
        return []
    ins, cons, types = [], [], []
    for v in vals:
        s = str(v.type)
        if s in ("f16", "bf16"):
            v = ctx.emit("arith.bitcast", [v], ctx.int_ty(16))
            s = "i16"
        if s not in _WAIT_CONSTRAINT:
            raise LoweringError(f"wgmma_wait: cannot pass a {v.type} value through the asm")
        ins.append(v)
        cons.append("=" + _WAIT_CONSTRAINT[s])
        types.append(v.type)
    n = len(ins)
    text = "// wait for regs: " + ",".join(f"${i}" for i in range(n)) + "\n\t" + text
    outs = inline_asm(ctx, text, ",".join(cons + [str(i) for i in range(n)]), ins, types, side_effects=True)
    return [o if o.type == v.type else ctx.emit("arith.bitcast", [o], v.type) for o, v in zip(outs, vals)]


def pack_f16(ctx, vals) -> list:
    """f16 accumulator scalars (layout register order) -> the instruction's f16x2 registers (i32; register ``j``
    holds ``d[2j]`` in its low half, ``d[2j + 1]`` in its high half)."""
    if len(vals) % 2:
        raise LoweringError(f"wgmma: an odd number ({len(vals)}) of f16 accumulator values")
    return [pack_word(ctx, vals[j:j + 2]) for j in range(0, len(vals), 2)]


def unpack_f16(ctx, words) -> list:
    """The inverse of :func:`pack_f16`: f16x2 registers -> f16 scalars.  Unpack after :func:`wgmma_wait` (reading
    an accumulator register before the wait reads a register the asynchronous wgmma may still write)."""
    return [v for w in words for v in unpack_word(ctx, w, ir.F16Type.get(), 2)]


def mma_async_text(*, n: int, k: int, a_type: str, b_type: str, acc_type: str, a_from_registers: bool,
                   trans_a: int = 0, trans_b: int = 0, m: int = 64) -> tuple:
    """``(asm text, number of accumulator registers)`` of one ``wgmma.mma_async``: operands ``$0..`` the
    accumulators, then A (a descriptor, or four 32-bit registers), the B descriptor, the scale-d value (i32:
    0 ignores the accumulator's input)."""
    _check(n=n, k=k, a_type=a_type, b_type=b_type, acc_type=acc_type, a_from_registers=a_from_registers,
           trans_a=trans_a, trans_b=trans_b, m=m)
    nd = acc_regs(n, acc_type)
    regs = lambda lo, cnt: ", ".join(f"${i}" for i in range(lo, lo + cnt))
    pos = nd
    if a_from_registers:
        a_txt = "{" + regs(pos, 4) + "}"
        pos += 4
    else:
        a_txt = f"${pos}"
        pos += 1
    b_txt, scale = f"${pos}", f"${pos + 1}"
    tail = "p"
    family = _FAMILY[a_type]
    if family != "int":
        tail += ", 1, 1"  # imm-scale-a, imm-scale-b
    if family in ("f16", "bf16"):
        tail += f", {int(trans_b)}" if a_from_registers else f", {int(trans_a)}, {int(trans_b)}"
    inst = (f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.{acc_type}.{a_type}.{b_type} "
            f"{{{regs(0, nd)}}}, {a_txt}, {b_txt}, {tail};")
    text = "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, " + scale + ", 0;\n\t" + inst + "\n\t}"
    return text, nd


def _check(*, n, k, a_type, b_type, acc_type, a_from_registers, trans_a, trans_b, m):
    if m != 64:
        raise LoweringError(f"wgmma: M is 64, not {m}")
    if a_type not in OPERAND_BITS or b_type not in OPERAND_BITS:
        raise LoweringError(f"wgmma: no operand types {a_type} x {b_type}")
    if _FAMILY[a_type] != _FAMILY[b_type] or (_FAMILY[a_type] in ("f16", "bf16", "tf32") and a_type != b_type):
        raise LoweringError(f"wgmma: operand types {a_type} and {b_type} do not go together")
    if acc_type not in ACC_TYPES[a_type]:
        raise LoweringError(f"wgmma: no {acc_type} accumulator for {a_type} operands (allowed: {ACC_TYPES[a_type]})")
    if k != instr_k(a_type):
        raise LoweringError(f"wgmma: K of {a_type} operands is {instr_k(a_type)}, not {k}")
    if not valid_n(n, acc_type):
        raise LoweringError(f"wgmma: no N = {n} with {acc_type} accumulators")
    if (trans_a or trans_b) and OPERAND_BITS[a_type] != 16:
        raise LoweringError(f"wgmma: {a_type} operands must be K-major (imm-trans is for 16-bit types)")
    if trans_a and a_from_registers:
        raise LoweringError("wgmma: A from registers has no transpose")


def wgmma_mma_async(ctx, a, b_desc, acc, *, n: int, a_type: str, b_type: str, acc_type: str, m: int = 64,
                    k: int = None, a_from_registers: bool = False, scale_d=True, trans_a: int = 0,
                    trans_b: int = 0) -> list:
    """One ``wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc_type}.{a_type}.{b_type}``; returns the new accumulator.

    ``a``: the A descriptor (i64 value), or with ``a_from_registers`` its four i32 fragment registers
    (:func:`a_fragment_element` order); ``b_desc``: the B descriptor (i64).  ``acc``: ``n / 2`` scalars in the
    layout's register order (:func:`acc_element`), f32 (``acc_type`` f32) or i32 (s32), and so is the result; f16
    accumulators are the ``n / 4`` f16x2 registers (i32) of :func:`pack_f16` (or the ``n / 2`` f16 scalars, packed
    here) and the result stays packed: :func:`unpack_f16` it after :func:`wgmma_wait`.  ``scale_d``: True
    (D = A B + D), False (D = A B: ``acc`` is not read and may be None) or an i1 / i32 value deciding at run
    time.  ``a_type`` / ``b_type``: PTX operand types (f16, bf16,
    tf32, e4m3, e5m2, s8, u8); ``k`` defaults to the type's.  ``trans_a`` / ``trans_b``: 1 for an MN-major operand
    (16-bit types only).  The instruction is asynchronous: fence before (:func:`wgmma_fence`), commit after
    (:func:`wgmma_commit`), and read the result only through :func:`wgmma_wait`."""
    k = instr_k(a_type) if k is None else k
    text, nd = mma_async_text(n=n, k=k, a_type=a_type, b_type=b_type, acc_type=acc_type,
                              a_from_registers=a_from_registers, trans_a=trans_a, trans_b=trans_b, m=m)
    a_ops = list(a) if a_from_registers else [a]
    if len(a_ops) != (4 if a_from_registers else 1):
        raise LoweringError(f"wgmma: A from registers is four i32 registers, got {len(a_ops)}")
    use_acc = scale_d is not False
    if isinstance(scale_d, bool):
        scale = ctx.c32(int(scale_d))
    else:
        scale = scale_d
        if isinstance(scale.type, ir.IntegerType) and ir.IntegerType(scale.type).width == 1:
            scale = ctx.emit("arith.extui", [scale], ctx.i32())
    c, rty = ("f", ir.F32Type.get()) if acc_type == "f32" else ("r", ctx.i32())  # s32, or f16x2 words
    ins = a_ops + [b_desc, scale]
    cons = [f"={c}"] * nd + (["r"] * 4 if a_from_registers else ["l"]) + ["l", "r"]
    if use_acc:
        words = list(acc or ())
        if acc_type == "f16" and len(words) == n // 2 and str(words[0].type) == "f16":
            words = pack_f16(ctx, words)
        if len(words) != nd:
            raise LoweringError(f"wgmma: the {acc_type} accumulator of N = {n} is {nd} registers, got {len(words)}")
        ins += words
        cons += [str(i) for i in range(nd)]
    return inline_asm(ctx, text, ",".join(cons), ins, [rty] * nd, side_effects=True)


__all__ = ["OPERAND_BITS", "ACC_TYPES", "SWIZZLE_MODES", "Descriptor", "ptx_type", "instr_k", "instr_k_bits", "valid_n", "acc_regs",
           "is_k_major", "mn_k_extents", "smem_descriptor", "operand_descriptor", "tile_offset", "k_step_offset",
           "swizzle_address", "hardware_address", "hardware_addresses", "acc_element", "a_fragment_element",
           "acc_tiles", "shared_address", "emit_descriptor", "advance_descriptor", "wgmma_fence", "wgmma_commit",
           "fence_proxy_async", "wgmma_wait", "pack_f16", "unpack_f16", "mma_async_text", "wgmma_mma_async"]
