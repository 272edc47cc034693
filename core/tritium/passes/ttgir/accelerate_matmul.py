"""Accelerate matmul: give every ``tt.dot`` the layouts of the instruction that will compute it (Triton's
``AccelerateMatmul``).

For each ``tt.dot %a, %b, %c`` (result ``[.., M, N]`` in a blocked layout), :func:`choose` decides:

* **MMA** (tensor cores) on CUDA targets from sm_80, when the element types have an ``mma.sync`` shape (see
  :data:`MMA_K`): fp16 / bf16 (fp32 or, for fp16, fp16 accumulators), fp32 with ``input_precision`` tf32 or
  tf32x3, int8 (int32 accumulator), fp8 e4m3 / e5m2 from sm_89 (fp32 accumulator; on sm_90, off wgmma, as f16
  operands: :func:`exact_fp8_on_hopper`), fp64 from sm_90 (fp64 accumulator, ``m16n8k8 .f64``, Triton's choice
  there too); and K a multiple of the instruction's K.  M below 16 or N below 8 (a "small dot", e.g. 2x4) is one
  instruction tile whose extra rows and columns the layout replicates, as in Triton (their operands are read from
  shared memory without ``ldmatrix``, whose lanes address whole 8x8 matrices).  The result becomes
  ``#ttg.nvidia_mma<2, warpsPerCTA, [16, 8]>``, A and B
  ``#ttg.dot_op<0|1, #mma, kWidth>`` (``kWidth`` = elements per 32 bits), the accumulator is converted to the
  MMA layout and the result back to the old layout (remove_layout_conversions then carries loop accumulators in
  the MMA layout and moves the conversion to the epilogue).
* **FMA** otherwise (fp32 ``ieee``, fp64 before sm_90, tiny shapes, integer or fp8 dots the target cannot do on tensor
  cores): A and B become ``#ttg.dot_op<0|1, #blocked, 0>`` of the result's blocked layout; fp8 operands are
  first converted to fp32 (``tt.fp_to_fp``), so the FMA lowering multiplies ordinary floats.

* **wgmma** (``#ttg.nvidia_mma<3, warpsPerCTA, [16, n, k]>``) on cuda sm_90 when the dot also qualifies for
  Hopper's warpgroup instructions (:func:`wgmma_reason`, Triton's ``supportMMA(op, 3)``): a 2-D dot, ``num_warps``
  a multiple of 4, M a multiple of 64, N of 8, K at least the instruction's K (32 bytes); fp16 / bf16, tf32 (not
  tf32x3), int8, fp8 (e4m3 / e5m2; with an fp32 accumulator ``maxNumImpreciseAcc`` at least 32, as Triton: the
  lowering adds every ``maxNumImpreciseAcc`` elements of K in fp32 when it is at most K; the language's default is
  2**30 on sm_90; below 32 (0 included) the dot stays on ``mma.sync`` with its fp8 operands converted to f16 in
  their ``dot_op`` registers, Triton's exact fp8 path on Hopper: :func:`_f16_operands`); operands of
  non-16-bit types must
  fit a K-major buffer.  Only the result (and the accumulator) get the layout here: the operands keep
  theirs, and optimize_dot_operands stores them into shared memory and turns the ``tt.dot`` into a
  ``ttg.warp_group_dot``.  The instruction N (:func:`wgmma_instr_n`) is the largest wgmma N dividing N and at most
  N over the warps left after 16 rows per warp along M; warps (:func:`warps_per_tile_v3`): a warpgroup (4, 1),
  doubled along M while M has more rows than 16 per warp, else along N; all of them along M when the result feeds
  another dot (the attention's ``p @ v``), as in Triton.  Everything else keeps version 2 on sm_90.

Warps per tile (:func:`warps_per_tile`, version 2): doubled along M while the per-warp tile is at least as tall (in
16-row units) as it is wide (in 16-column units) and M has room, else along N; what neither dim can take goes to
the batch dim of a 3-D dot (or stays replicated).

* **MFMA** on hip CDNA targets (gfx90a: version 2, gfx942: 3, gfx950: 4; :func:`choose_amd`): fp16 / bf16 (fp32
  accumulator), fp32 (at full precision whatever the input precision asks: ``ieee`` is hip's default; no xf32), int8 (int32), fp8 (fp32; the fnuz formats on gfx942, OCP e4m3 / e5m2 on
  gfx950; other fp8 operands are upcast to f16 for the f16 instruction, and an f16 accumulator of f16 operands is
  computed in f32 and rounded after the dot, as Triton: :func:`amd_compute_types`); M and N multiples of the instruction's 32 (else 16; the hip option ``matrix_instr_nonkdim``, as the
  module attribute :data:`MFMA_NONKDIM`, forces one) and K of its K.  The result becomes
  ``#ttg.amd_mfma<version, warpsPerCTA, [32, 32] | [16, 16], 1>`` (transposed, as Triton: each lane holds a row's
  consecutive columns, so row reductions (attention's softmax) stay in registers and the epilogue writes vectors), A and B ``#ttg.dot_op<0|1, #mfma, kWidth>``
  (``kWidth``: K elements per lane per instruction, :func:`tritium.dialects.layouts.mfma_k_base`); warps by
  :func:`warps_per_tile_mfma`.
* **WMMA** on hip RDNA3 (gfx11, wave32; :func:`choose_amd`): fp16 / bf16 operands with an fp32 accumulator (an
  fp16 one of fp16 operands computed in fp32 and rounded after, as for MFMA), int8 with int32, M, N and K multiples
  of 16: ``#ttg.amd_wmma<1, warpsPerCTA, 1>`` (transposed, as Triton's gfx1100 output), A and B
  ``#ttg.dot_op<0|1, #wmma, 16>`` (one lane's 16 K elements of ``v_wmma_f32_16x16x16_*``); warps as for MFMA.
  Everything else (fp64, tiny shapes, other RDNA dtypes, gfx10 / gfx12) keeps FMA.

``tritium-accelerate-matmul`` reads the target from the module's ``ttg.target`` (``"cuda:80"``, ``"hip:gfx942"``);
other targets keep the FMA path.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.dialects.enums import InputPrecision

from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import as_op, create_convert, layout_of, module_int, retype_results, walk, with_layout

log = logging.getLogger(__name__)

#: instruction K of ``mma.sync`` by operand element bits (f64, tf32: 8, 16-bit: 16, 8-bit: 32)
MMA_K = {64: 8, 32: 8, 16: 16, 8: 32}


def _bits(ty) -> int:
    e = tt.elem_of(ty)
    if tt.is_fp8(e):
        return 8
    if isinstance(e, ir.IntegerType):
        return ir.IntegerType(e).width
    return ir.FloatType(e).width


def _kind(ty) -> str:
    """``f16``, ``bf16``, ``f32``, ``f64``, ``i8``, ``fp8`` or another element name."""
    e = tt.elem_of(ty)
    if tt.is_fp8(e):
        return "fp8"
    s = str(e)
    return {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i8": "i8"}.get(s, s)


def target_arch(module) -> tuple:
    """``(backend, arch)`` of the module's target (``("cuda", 90)``, ``("hip", "gfx942")``); ``(None, None)`` without
    one."""
    t = ttg.module_target(module)
    return (None, None) if t is None else (t.backend, t.arch)


def mma_version(backend: str, arch, a_ty, b_ty, c_ty, precision) -> int:
    """0 (FMA), or the MMA version that computes this dot on ``backend:arch``."""
    if backend != "cuda" or arch is None or arch < 80:
        return 0
    ka, kb, kc = _kind(a_ty), _kind(b_ty), _kind(c_ty)
    if ka in ("f16", "bf16") and kb == ka and (kc == "f32" or (kc == "f16" and ka == "f16")):
        return 2
    if ka == kb == "f32" and kc == "f32" and precision in (InputPrecision.TF32, InputPrecision.TF32x3):
        return 2
    if ka == kb == "i8" and kc == "i32":
        return 2
    if ka == kb == "fp8" and kc == "f32" and arch >= 89:
        return 2
    if ka == kb == kc == "f64" and arch >= 90:  # m16n8k8 .f64 (sm_90; Ampere's only f64 shape is m8n8k4)
        return 2
    return 0


#: wgmma instruction N, largest first (Triton's choice): f16 / bf16 / tf32 / fp8 every multiple of 8 up to 256;
#: int8 (s32 accumulators) 224 and down in steps of 16, then 32, 24, 16, 8
WGMMA_N = tuple(range(256, 7, -8))
WGMMA_N_INT8 = tuple(range(224, 47, -16)) + (32, 24, 16, 8)


def _storable(mn: int, k: int, bits: int, k_major: bool) -> bool:
    """A [mn, k] operand tile fits an NVMMASharedLayout buffer wgmma reads: the contiguous dim at least 16 bytes
    (a core-matrix row), the other a multiple of 8 rows."""
    fast, slow = (k, mn) if k_major else (mn, k)
    return fast * bits // 8 >= 16 and slow % 8 == 0


def wgmma_reason(backend: str, arch, a_ty, b_ty, c_ty, precision, max_imprecise: int, num_warps: int) -> str:
    """Why this dot cannot use wgmma on ``backend:arch`` ("" when it can)."""
    if backend != "cuda" or arch is None or not 90 <= arch < 100:
        return "not sm_90"
    shape, sa = tt.shape_of(c_ty), tt.shape_of(a_ty)
    if len(shape) != 2:
        return "a batched (3-D) dot"
    if num_warps % 4:
        return f"num_warps {num_warps} is not a multiple of 4 (a warpgroup)"
    m, n, k = shape[0], shape[1], sa[-1]
    if m % 64 or n % 8:
        return f"M = {m} is not a multiple of 64 or N = {n} of 8"
    ka, kb, kc = _kind(a_ty), _kind(b_ty), _kind(c_ty)
    bits = _bits(a_ty)
    if ka in ("f16", "bf16") and kb == ka and (kc == "f32" or (kc == "f16" and ka == "f16")):
        pass
    elif ka == kb == "f32" and kc == "f32" and precision == InputPrecision.TF32:
        pass
    elif ka == kb == "i8" and kc == "i32":
        pass
    elif ka == kb == "fp8" and kc in ("f32", "f16"):
        if kc == "f32" and max_imprecise < 32:
            return f"maxNumImpreciseAcc {max_imprecise} < 32 with an fp32 accumulator"
    else:
        return f"no wgmma for {ka} x {kb} -> {kc} (input precision {precision.name})"
    ik = 256 // bits
    if k < ik or k % ik:
        return f"K = {k} is not a multiple of the instruction's {ik}"
    if bits != 16 and not (_storable(m, k, bits, True) and _storable(n, k, bits, True)):
        return f"{bits}-bit operands must be stored K-major, which a [{m}, {k}] / [{k}, {n}] tile cannot"
    return ""


def _feeds_dot(op) -> bool:
    """The result of ``op`` reaches another ``tt.dot`` through its users (Triton's forward slice)."""
    seen, stack = set(), [r for r in op.results]
    while stack:
        v = stack.pop()
        for u in v.uses:
            user = as_op(u.owner)
            if user in seen:
                continue
            seen.add(user)
            if user.name == tt.DOT and user != op:
                return True
            stack.extend(user.results)
            if len(seen) > 4096:
                return False
    return False


def wgmma_instr_n(shape, num_warps: int, int8: bool) -> int:
    """The wgmma N for a result of ``shape`` (Triton's ``mmaVersionToInstrShape`` for version 3): the largest
    instruction N that divides N and is at most N / (warps left after 16 rows per warp along M)."""
    m, n = shape
    m_warps = max(m // 16, 1)
    n_warps = max(num_warps // m_warps, 1)
    max_n = max(n // n_warps, 8)
    for cand in (WGMMA_N_INT8 if int8 else WGMMA_N):
        if n % cand == 0 and cand <= max_n:
            return cand
    raise ValueError(f"no wgmma N for a result of shape {tuple(shape)}")


def warps_per_tile_v3(shape, num_warps: int, instr_n: int, chained: bool = False) -> tuple:
    """warpsPerCTA of a wgmma tile: all warps along M when the result feeds another dot, else a warpgroup
    ``(4, 1)`` doubled along M while M has more than 16 rows per warp, then along N (Triton's
    ``warpsPerTileV3``)."""
    if chained:
        return (num_warps, 1)
    wm, wn = 4, 1
    while wm * wn < num_warps:
        if shape[0] > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return (wm, wn)


def warps_per_tile(shape, num_warps: int) -> tuple:
    """warpsPerCTA of an ``mma.sync`` tile (16x8 per warp) for a dot result of ``shape`` (2-D or 3-D)."""
    return _spread_warps(shape, num_warps, 1, 16, 8, 16)


def choose(op, backend: str, arch, num_warps: int):
    """``(result layout, A layout, B layout)`` for ``tt.dot`` ``op``; A / B None for a wgmma (version 3) result:
    the operands keep their layouts (optimize_dot_operands puts them in shared memory)."""
    a, b, c = op.operands[0], op.operands[1], op.operands[2]
    shape = tt.shape_of(c.type)
    attrs = tt.decode_attributes(op)
    precision = attrs.get("inputPrecision", InputPrecision.IEEE)
    max_imprecise = int(attrs.get("maxNumImpreciseAcc", 0) or 0)
    why = wgmma_reason(backend, arch, a.type, b.type, c.type, precision, max_imprecise, num_warps)
    if not why:
        bits = _bits(a.type)
        n = wgmma_instr_n(shape, num_warps, _kind(a.type) == "i8")
        warps = warps_per_tile_v3(shape, num_warps, n, _feeds_dot(op))
        return layouts.NvidiaMmaLayout(3, warps, (16, n, 256 // bits)), None, None
    version = mma_version(backend, arch, a.type, b.type, c.type, precision)
    if version and arch >= 90:
        log.debug("tt.dot at %s stays on mma.sync: %s", tt.loc_str(op), why)
    k = tt.shape_of(a.type)[-1]
    if version:
        ik = MMA_K[_bits(a.type)]
        if k % ik:
            log.debug("tt.dot at %s of shape %s, K %d: too small for mma (16x8x%d): FMA", tt.loc_str(op), shape, k,
                      ik)
            version = 0
    if not version:
        parent = layout_of(c.type)
        return parent, layouts.DotOperandLayout(0, parent, 0), layouts.DotOperandLayout(1, parent, 0)
    warps = warps_per_tile(shape, num_warps)
    instr = ((1,) if len(shape) == 3 else ()) + (16, 8)
    mma = layouts.NvidiaMmaLayout(2, warps, instr)
    kw = max(1, 32 // _bits(a.type))  # f64: one element a register, at tf32's places
    return mma, layouts.DotOperandLayout(0, mma, kw), layouts.DotOperandLayout(1, mma, kw)


# ------------------------------------------------------------------------------------------ AMD (v_mfma)

#: CDNA generation (the ``amd_mfma`` version) of an AMD arch; 0: no MFMA this pass uses (gfx908, RDNA)
MFMA_VERSION = {"gfx90a": 2, "gfx940": 3, "gfx941": 3, "gfx942": 3, "gfx950": 4}


def mfma_version(arch) -> int:
    return MFMA_VERSION.get(str(arch or "").lower(), 0)


def _fp8_name(ty) -> str:
    return str(tt.elem_of(ty))


def mfma_reason(version: int, a_ty, b_ty, c_ty, precision) -> str:
    """Why this dot cannot use ``v_mfma`` on a CDNA ``version`` target ("" when it can)."""
    if not version:
        return "no MFMA on this arch"
    ka, kb, kc = _kind(a_ty), _kind(b_ty), _kind(c_ty)
    if ka in ("f16", "bf16") and kb == ka and kc == "f32":
        return ""
    if ka == kb == "f32" and kc == "f32":
        # hip computes fp32 dots at full precision (Triton's hip default is ieee; the language's default tf32,
        # tf32x3, bf16x3 and bf16x6 get the exact v_mfma_f32_*_f32, xf32 is not used)
        if precision not in (InputPrecision.IEEE, InputPrecision.TF32, InputPrecision.TF32x3, InputPrecision.BF16x3,
                             InputPrecision.BF16x6):
            return f"input precision {precision.name}"
        return ""
    if ka == kb == "i8" and kc == "i32":
        return ""
    if ka == kb == "fp8" and kc == "f32":
        fnuz = ("f8E4M3FNUZ", "f8E5M2FNUZ")
        ocp = ("f8E4M3FN", "f8E5M2")
        want = fnuz if version == 3 else ocp if version == 4 else ()
        if _fp8_name(a_ty) in want and _fp8_name(b_ty) in want:
            return ""
        return f"fp8 {_fp8_name(a_ty)} x {_fp8_name(b_ty)} has no v_mfma on CDNA{version}"
    return f"no v_mfma for {ka} x {kb} -> {kc}"


#: module attribute: the hip option ``matrix_instr_nonkdim`` (16 or 32 forces that instruction shape; 0: by shape)
MFMA_NONKDIM = "ttg.amd.matrix-instr-nonkdim"


def mfma_instr_m(shape, k: int, k_base_of, nonkdim: int = 0) -> int:
    """The instruction's M (= N): 32 when M and N are multiples of 32, else 16 when of 16 (Triton's choice by the
    smaller of M and N), or only ``nonkdim`` when given; 0 when none fits (or K is not a multiple of the
    instruction's K)."""
    m, n = shape[-2], shape[-1]
    for d in ((nonkdim,) if nonkdim in (16, 32) else (32, 16)):
        if m % d == 0 and n % d == 0 and k % (k_base_of(d) * 64 // d) == 0:
            return d
    return 0


def warps_per_tile_mfma(shape, num_warps: int, mdim: int, chained: bool = False) -> tuple:
    """warpsPerCTA of an ``amd_mfma`` tile: all along M when the result feeds another dot (attention), else
    doubled along M while the per-warp tile is taller (in instruction tiles) than wide and M has room, else along
    N (Triton's ``warpsPerTile`` with an mDim x nDim tile per warp); what neither can take goes to the batch dim."""
    wm = 1
    if chained:
        while wm < num_warps and shape[-2] // (mdim * wm) > 1:
            wm *= 2
    return _spread_warps(shape, num_warps, wm, mdim, mdim, mdim)


def _spread_warps(shape, num_warps: int, wm: int, tm: int, tn: int, cmp: int) -> tuple:
    """warpsPerCTA from ``wm`` warps along M: doubled along M while M has room for another ``tm``-row tile per
    warp and the per-warp tile (in ``cmp``-sized tiles) is taller than wide, else along N (``tn``-column tiles);
    the warps neither can take go to the batch dim of a 3-D dot, else to M."""
    m, n = shape[-2], shape[-1]
    wn = 1
    while wm * wn < num_warps:
        room_m, room_n = m // (tm * wm) > 1, n // (tn * wn) > 1
        if not room_m and not room_n:
            break
        if room_m and (m // cmp // wm >= n // cmp // wn or not room_n):
            wm *= 2
        else:
            wn *= 2
    rest = num_warps // (wm * wn)
    if len(shape) == 3:
        wb = 1
        while wb < rest and wb * 2 <= shape[0]:
            wb *= 2
        wm *= rest // wb
        return (wb, wm, wn)
    return (wm * rest, wn)


def amd_compute_types(version: int, a_ty, b_ty, c_ty, precision, wmma: int = 0) -> tuple:
    """The element types ``(A, B, accumulator)`` a hip dot computes in on CDNA ``version`` (Triton's AMD
    AccelerateMatmul): fp8 operands without a ``v_mfma`` of their own (the OCP formats on gfx942, the fnuz ones on
    gfx950, any on gfx90a) are upcast to f16 (exact) for the f16 instruction; an f16 accumulator with f16 operands
    becomes f32 (the instructions accumulate in f32; the result is rounded back after the dot), on RDNA3 (``wmma``
    version 1) too."""
    a, b, c = tt.elem_of(a_ty), tt.elem_of(b_ty), tt.elem_of(c_ty)
    f16, f32 = ir.F16Type.get(), ir.F32Type.get()
    if version and tt.is_fp8(a) and tt.is_fp8(b) and _kind(c_ty) in ("f32", "f16") and \
            mfma_reason(version, a, b, f32, precision):
        a = b = f16
    if (version or wmma) and _kind(c_ty) == "f16" and isinstance(a, ir.F16Type) and isinstance(b, ir.F16Type):
        c = f32
    return a, b, c


#: RDNA generation (the ``amd_wmma`` version) of an AMD arch; 0: no WMMA this pass uses
def wmma_version(arch) -> int:
    return 1 if str(arch or "").lower().startswith("gfx11") else 0


def wmma_reason(a_ty, b_ty, c_ty, shape, k: int) -> str:
    """Why this dot cannot use ``v_wmma`` on RDNA3 ("" when it can)."""
    ka, kb, kc = _kind(a_ty), _kind(b_ty), _kind(c_ty)
    if not (ka in ("f16", "bf16") and kb == ka and kc == "f32" or ka == kb == "i8" and kc == "i32"):
        return f"no v_wmma for {ka} x {kb} -> {kc}"
    if shape[-2] % 16 or shape[-1] % 16 or k % 16:
        return f"shape {tuple(shape)}, K {k}: not a multiple of the 16x16x16 v_wmma tile"
    return ""


def _choose_wmma(op, num_warps: int, a_ty, b_ty, c_ty):
    shape = tt.shape_of(op.operands[2].type)
    why = wmma_reason(a_ty, b_ty, c_ty, shape, tt.shape_of(op.operands[0].type)[-1])
    if why:
        log.debug("tt.dot at %s: FMA (%s)", tt.loc_str(op), why)
        return None
    wmma = layouts.AmdWmmaLayout(1, warps_per_tile_mfma(shape, num_warps, 16, _feeds_dot(op)), 1)
    return wmma, layouts.DotOperandLayout(0, wmma, 16), layouts.DotOperandLayout(1, wmma, 16)


def choose_amd(op, arch, num_warps: int, types=None):
    """``(result layout, A layout, B layout)`` for ``tt.dot`` ``op`` on an AMD ``arch``: ``amd_mfma`` with
    ``dot_op`` operands of ``k_width`` = the instruction's K elements per lane, or the FMA path; ``types``: the
    element types the dot computes in (:func:`amd_compute_types`), by default its own."""
    a, b, c = op.operands[0], op.operands[1], op.operands[2]
    shape = tt.shape_of(c.type)
    precision = tt.decode_attributes(op).get("inputPrecision", InputPrecision.IEEE)
    version = mfma_version(arch)
    a_ty, b_ty, c_ty = types or (a.type, b.type, c.type)
    if wmma_version(arch):
        got = _choose_wmma(op, num_warps, a_ty, b_ty, c_ty)
        if got:
            return got
    why = mfma_reason(version, a_ty, b_ty, c_ty, precision)
    k = tt.shape_of(a.type)[-1]
    bits = _bits(a_ty)
    mdim = 0
    if not why:
        mdim = mfma_instr_m(shape, k, lambda d: layouts.mfma_k_base(d, bits, version),
                            module_int(op, MFMA_NONKDIM, 0) or 0)
        if not mdim:
            why = f"shape {tuple(shape)}, K {k}: not a multiple of a 32x32 or 16x16 v_mfma tile"
    if why:
        log.debug("tt.dot at %s: FMA (%s)", tt.loc_str(op), why)
        parent = layout_of(c.type)
        return parent, layouts.DotOperandLayout(0, parent, 0), layouts.DotOperandLayout(1, parent, 0)
    warps = warps_per_tile_mfma(shape, num_warps, mdim, _feeds_dot(op))
    instr = ((1,) if len(shape) == 3 else ()) + (mdim, mdim)
    mfma = layouts.AmdMfmaLayout(version, warps, instr, 1)
    kw = layouts.mfma_k_base(mdim, bits, version)
    return mfma, layouts.DotOperandLayout(0, mfma, kw), layouts.DotOperandLayout(1, mfma, kw)


def _fp8_to_f32(value, op):
    """``tt.fp_to_fp`` of an fp8 tensor to fp32 (for the FMA path), before ``op``."""
    ty = ir.RankedTensorType(value.type)
    f32 = ir.RankedTensorType.get(list(ty.shape), ir.F32Type.get(), ty.encoding, loc=op.location)
    with op.location, ir.InsertionPoint(op):
        return ir.Operation.create(tt.FP_TO_FP, results=[f32], operands=[value]).results[0]


def _with_elem(ty, elem):
    t = ir.RankedTensorType(ty)
    return ir.RankedTensorType.get(list(t.shape), elem, t.encoding)


def _retype_elem(value, elem, op, name):
    """``name`` (``tt.fp_to_fp`` / ``arith.extf`` / ``arith.truncf``) of tensor ``value`` to element type ``elem``,
    same layout, before ``op``."""
    with op.location, ir.InsertionPoint(op):
        return ir.Operation.create(name, results=[_with_elem(value.type, elem)], operands=[value]).results[0]


def _amd_dot(op, arch, num_warps: int):
    """Rewrite hip ``tt.dot`` ``op`` for the types it computes in (:func:`amd_compute_types`) and its layouts;
    returns whether it got ``v_mfma``.  Upcast fp8 operands are converted to their ``dot_op`` layout first and to
    f16 there, as Triton's (remove_layout_conversions then moves the ``tt.fp_to_fp`` ahead of the layout change, so
    the LDS holds f16 where Triton's keeps the fp8 bytes); an f16 accumulator is extended before and the result
    rounded back after (``arith.truncf``, where the users take it)."""
    a, b, c = op.operands[0], op.operands[1], op.operands[2]
    precision = tt.decode_attributes(op).get("inputPrecision", InputPrecision.IEEE)
    types = amd_compute_types(mfma_version(arch), a.type, b.type, c.type, precision, wmma_version(arch))
    res_layout, a_layout, b_layout = choose_amd(op, arch, num_warps, types)
    mfma = isinstance(res_layout, layouts.AMD_MMA)
    if not mfma:
        if tt.is_fp8(tt.elem_of(a.type)):
            a, b = _fp8_to_f32(a, op), _fp8_to_f32(b, op)
        types = (tt.elem_of(a.type), tt.elem_of(b.type), tt.elem_of(c.type))
    with op.location:
        for i, (v, lay) in enumerate(((a, a_layout), (b, b_layout))):
            v = create_convert(v, lay, before=op)
            if tt.elem_of(v.type) != types[i]:
                v = _retype_elem(v, types[i], op, tt.FP_TO_FP)
            op.operands[i] = v
        old = layout_of(c.type)
        acc16 = tt.elem_of(c.type) != types[2]
        if acc16:
            c = _retype_elem(c, types[2], op, "arith.extf")
        if res_layout != old:
            c = create_convert(c, res_layout, before=op)
        op.operands[2] = c
        if not acc16:
            if res_layout != old:
                retype_results(op, res_layout)
            return mfma
        r = op.results[0]
        uses = list(r.uses)
        r.set_type(with_layout(_with_elem(r.type, types[2]), res_layout))
        with ir.InsertionPoint(op):
            trunc = ir.Operation.create("arith.truncf", results=[_with_elem(r.type, ir.F16Type.get())],
                                        operands=[r], loc=op.location)
        trunc.move_after(op)
        back = trunc.results[0]
        if res_layout != old:
            back = create_convert(back, old, after=trunc)
        for u in uses:
            u.owner.operands[u.operand_number] = back
    return mfma


def exact_fp8_on_hopper(op, arch) -> bool:
    """Whether cuda ``tt.dot`` ``op`` is an fp8 dot into fp32 on sm_90+ (one that stays off wgmma: its
    ``maxNumImpreciseAcc`` below 32, or a shape wgmma does not take): it then runs on ``mma.sync`` with f16
    operands, as Triton's sm_90 fp8 dots off wgmma all do (exact products, summed in fp32)."""
    a, c = op.operands[0], op.operands[2]
    return arch is not None and arch >= 90 and _kind(a.type) == "fp8" and _kind(c.type) == "f32"


def _f16_operands(op, mma):
    """A and B of ``op`` converted to ``#ttg.dot_op<i, mma, 2>`` and there (``tt.fp_to_fp``) from fp8 to f16, so the
    ``mma.sync`` is the f16 one: fp8 values are exact in f16 and the products are summed in fp32."""
    f16 = ir.F16Type.get()
    for i in (0, 1):
        v = create_convert(op.operands[i], layouts.DotOperandLayout(i, mma, 2), before=op)
        op.operands[i] = _retype_elem(v, f16, op, tt.FP_TO_FP)


def accelerate_matmul(root) -> int:
    """Rewrite every ``tt.dot`` under ``root`` (a module); returns how many got tensor-core layouts."""
    mod = as_op(root)
    num_warps = module_int(mod, ttg.NUM_WARPS, 4)
    backend, arch = target_arch(mod)
    count = 0
    for op in walk(mod):
        if op.name != tt.DOT:
            continue
        a, b, c = op.operands[0], op.operands[1], op.operands[2]
        old = layout_of(c.type)
        if backend == "hip":
            count += _amd_dot(op, arch, num_warps)
            continue
        res_layout, a_layout, b_layout = choose(op, backend, arch, num_warps)
        if isinstance(res_layout, (layouts.NvidiaMmaLayout, layouts.AmdMfmaLayout)):
            count += 1
        elif tt.is_fp8(tt.elem_of(a.type)):
            a, b = _fp8_to_f32(a, op), _fp8_to_f32(b, op)
        upcast = isinstance(res_layout, layouts.NvidiaMmaLayout) and res_layout.version == 2 and \
            backend == "cuda" and exact_fp8_on_hopper(op, arch)
        with op.location:
            if upcast:
                _f16_operands(op, res_layout)
            elif a_layout is not None:
                op.operands[0] = create_convert(a, a_layout, before=op)
                op.operands[1] = create_convert(b, b_layout, before=op)
            if res_layout != old:
                op.operands[2] = create_convert(c, res_layout, before=op)
                retype_results(op, res_layout)
    return count


accelerate_matmul_pass = pass_entry("tritium-accelerate-matmul", accelerate_matmul)
