"""``tt.dot`` on AMD matrix cores (CDNA ``v_mfma``, RDNA3 ``v_wmma``).

Result layout ``#ttg.amd_mfma<version, warpsPerCTA, [d, d], transposed>`` (d = 32 or 16): one
``llvm.amdgcn.mfma.*`` per ``d x d`` accumulator tile and K step, the accumulator an LLVM vector of the tile's 16
(32x32) or 4 (16x16) registers in the D-vector order of the ISA (which is the layout's register order, see
:class:`tritium.dialects.layouts.AmdMfmaLayout`); operands in ``#ttg.dot_op<i, #mfma, kWidth>`` registers, whose
``kWidth`` consecutive K elements are one lane's A / B source of one instruction:

=================  ==========================  ===============================================  ===========
operands           CDNA                        intrinsic (32x32 / 16x16)                        per lane
=================  ==========================  ===============================================  ===========
f16                2, 3 / 4                    ``f32.32x32x8f16`` / ``f32.32x32x16.f16``         4 / 8 half
bf16               2, 3 / 4                    ``f32.32x32x8bf16.1k`` / ``f32.32x32x16.bf16``    4 / 8
f32 (ieee)         all                         ``f32.32x32x2f32`` / ``f32.16x16x4f32``           1 float
int8               2 / 3, 4                    ``i32.32x32x8i8`` / ``i32.32x32x16.i8``           4 / 8 (i32 / i64)
fp8 / bf8          3 (fnuz), 4 (OCP)           ``f32.32x32x16.fp8.bf8`` ...                     8 (i64)
=================  ==========================  ===============================================  ===========

The three trailing immediates (``cbsz``, ``abid``, ``blgp``: broadcast controls) are 0.  A transposed layout calls
the instruction with B and A exchanged (``D^T = B^T A^T``).  AGPR allocation is LLVM's.

On RDNA3 (gfx11, wave32) a result ``#ttg.amd_wmma<1, warpsPerCTA, transposed>`` takes ``v_wmma`` (:func:`wmma_dot`):
``llvm.amdgcn.wmma.f32.16x16x16.f16`` / ``.bf16`` (``i32.16x16x16.iu8`` for int8) per 16x16 tile and K step of
16, each lane giving its 16 K elements of one row (A) / column (B) (both half-waves the same) and holding 8
32-bit results.

Any other result layout takes the FMA lowering (:func:`tritium.lowering.rules.dot.fma_dot`)."""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.dot import fma_dot
from tritium.lowering.utils import scalar_type, vector_of

RULES = Rules()

_FP8 = {"f8E4M3FNUZ": "fp8", "f8E5M2FNUZ": "bf8", "f8E4M3FN": "fp8", "f8E5M2": "bf8"}


def intrinsic(a_elem: str, b_elem: str, d: int, version: int) -> str:
    """The ``llvm.amdgcn.mfma.*`` name for operand element types ``a_elem`` / ``b_elem`` (MLIR spellings), a
    ``d x d`` tile, on CDNA ``version``."""
    k = {32: 1, 16: 2}[d]  # the K of a 16x16 instruction is twice the 32x32's
    if a_elem in ("f16", "bf16") and b_elem == a_elem:
        if version >= 4:
            return f"llvm.amdgcn.mfma.f32.{d}x{d}x{16 * k}.{a_elem}"
        return f"llvm.amdgcn.mfma.f32.{d}x{d}x{8 * k}{a_elem}" + (".1k" if a_elem == "bf16" else "")
    if a_elem == b_elem == "f32":
        return f"llvm.amdgcn.mfma.f32.{d}x{d}x{2 * k}f32"
    if a_elem == b_elem == "i8":
        if version >= 3:
            return f"llvm.amdgcn.mfma.i32.{d}x{d}x{16 * k}.i8"
        return f"llvm.amdgcn.mfma.i32.{d}x{d}x{8 * k}i8"
    if a_elem in _FP8 and b_elem in _FP8 and version >= 3:
        return f"llvm.amdgcn.mfma.f32.{d}x{d}x{16 * k}.{_FP8[a_elem]}.{_FP8[b_elem]}"
    raise LoweringError(f"tt.dot: no v_mfma for {a_elem} x {b_elem} on CDNA{version}")


def _operand_word(ctx, vals):
    """One lane's source of one instruction: the ``kWidth`` scalars as the intrinsic takes them (f16 / f32
    vectors, bf16 as i16 lanes (CDNA2 / 3), 8-bit types packed into an i32 / i64)."""
    t = vals[0].type
    s = str(t)
    if len(vals) == 1:
        return vals[0]
    if tt.is_fp8(t) or s == "i8":
        if tt.is_fp8(t):
            vals = [ctx.emit("arith.bitcast", [v], ctx.int_ty(8)) for v in vals]
        vec = vector_of(ctx, vals, ctx.int_ty(8))
        return ctx.emit("llvm.bitcast", [vec], ctx.int_ty(8 * len(vals)))
    vec = vector_of(ctx, vals, t)
    if s == "bf16" and len(vals) == 4:  # the .1k intrinsics take <4 x i16>
        return ctx.emit("llvm.bitcast", [vec], ir.VectorType.get([4], ctx.int_ty(16)))
    return vec


def call_intrinsic(ctx, name: str, args, result_type):
    """A call of the LLVM intrinsic ``name`` (immediate operands as ``llvm.mlir.constant`` values)."""
    return ctx.emit("llvm.call_intrinsic", list(args), result_type, {
        "intrin": ir.StringAttr.get(name),
        "fastmathFlags": ir.Attribute.parse("#llvm.fastmath<none>"),
        "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(args), 0])})


def _imm(ctx, v: int):
    return ctx.emit("llvm.mlir.constant", [], ctx.i32(), {"value": ir.IntegerAttr.get(ctx.i32(), v)})


def mfma_schedule(c_ll, a_ll, b_ll, d: int, kw: int, K: int) -> list:
    """The instructions of one lane's share of a ``v_mfma`` dot, from the layouts alone (no MLIR): a list of
    ``(acc_r0, steps)`` per accumulator tile, ``acc_r0`` the tile's first result register (its ``d * d / 64``
    registers follow), ``steps`` the ``(a_r0, b_r0)`` first operand registers (``kw`` each) of each K step in order;
    a replicated tile is ``(acc_r0, src_r0)`` with an int ``src_r0`` (the same values)."""
    return mma_schedule(c_ll, a_ll, b_ll, d * d // 64, kw * 64 // d, kw, K)


def wmma_schedule(c_ll, a_ll, b_ll, K: int) -> list:
    """:func:`mfma_schedule` of a ``v_wmma_*_16x16x16_*`` dot (wave32): 8 accumulator registers per tile, 16 K
    elements per lane and instruction."""
    return mma_schedule(c_ll, a_ll, b_ll, 8, 16, 16, K)


def mma_schedule(c_ll, a_ll, b_ll, n_acc: int, ik: int, kw: int, K: int) -> list:
    """The schedule of :func:`mfma_schedule` for an instruction of ``n_acc`` accumulator registers per lane, K
    ``ik`` and ``kw`` operand registers per lane."""
    a_map, b_map = a_ll.register_of(), b_ll.register_of()
    out, seen = [], {}
    for r0 in range(0, c_ll.num_regs, n_acc):
        idx = c_ll.index(r0)
        if idx in seen:
            out.append((r0, seen[idx]))
            continue
        seen[idx] = r0
        *lead, m, n = idx
        steps = []
        for k0 in range(0, K, ik):
            ra, rb = a_map.get((*lead, m, k0)), b_map.get((*lead, k0, n))
            if ra is None or rb is None or ra % kw or rb % kw:
                raise LoweringError(f"tt.dot: no matrix-core operand registers for the tile at {idx}, K {k0}")
            steps.append((ra, rb))
        out.append((r0, steps))
    return out


def mfma_dot(ctx, a, b, c) -> list:
    """The ``v_mfma`` lowering of ``ctx.op`` (a ``tt.dot`` with an ``amd_mfma`` result): per-register values."""
    a_ty, b_ty, c_ty = (ctx.op.operands[i].type for i in range(3))
    lay = ctx.layout(c_ty)
    a_lay = ctx.layout(a_ty)
    d = lay.m_dim
    kw = a_lay.k_width
    name = intrinsic(str(tt.elem_of(a_ty)), str(tt.elem_of(b_ty)), d, lay.version)
    acc_ty = scalar_type(c_ty)
    n_acc = lay.tile_regs
    vec_ty = ir.VectorType.get([n_acc], acc_ty)
    c_ll = ctx.linear(c_ty)
    schedule = mfma_schedule(c_ll, ctx.linear(a_ty), ctx.linear(b_ty), d, kw, tt.shape_of(a_ty)[-1])
    zero = [_imm(ctx, 0)] * 3
    words = {}

    def word(vals, r):
        key = (id(vals), r)
        if key not in words:
            words[key] = _operand_word(ctx, vals[r:r + kw])
        return words[key]

    out = list(c)
    for r0, steps in schedule:
        if isinstance(steps, int):  # a replicated tile
            out[r0:r0 + n_acc] = out[steps:steps + n_acc]
            continue
        acc = vector_of(ctx, out[r0:r0 + n_acc], acc_ty)
        for ra, rb in steps:
            x, y = word(a, ra), word(b, rb)
            if lay.is_transposed:
                x, y = y, x
            acc = call_intrinsic(ctx, name, [x, y, acc] + zero, vec_ty)
        out[r0:r0 + n_acc] = [ctx.emit("llvm.extractelement", [acc, ctx.c32(i)], acc_ty) for i in range(n_acc)]
    return out


def wmma_intrinsic(a_elem: str, b_elem: str) -> str:
    """The ``llvm.amdgcn.wmma.*`` name (RDNA3) for operand element types ``a_elem`` / ``b_elem``."""
    if a_elem in ("f16", "bf16") and b_elem == a_elem:
        return f"llvm.amdgcn.wmma.f32.16x16x16.{a_elem}"
    if a_elem == b_elem == "i8":
        return "llvm.amdgcn.wmma.i32.16x16x16.iu8"
    raise LoweringError(f"tt.dot: no v_wmma for {a_elem} x {b_elem}")


def wmma_dot(ctx, a, b, c) -> list:
    """The ``v_wmma`` lowering of ``ctx.op`` (a ``tt.dot`` with an ``amd_wmma`` result, wave32): one
    ``llvm.amdgcn.wmma.f32.16x16x16.{f16,bf16}(<16 x A>, <16 x B>, <8 x float>)`` per 16x16 tile and K step (bf16
    sources as ``<16 x i16>``, as LLVM's gfx11 intrinsic takes them; int8: ``wmma.i32.16x16x16.iu8`` on ``<4 x i32>``
    sources, signed), operands exchanged for a transposed layout."""
    a_ty, b_ty, c_ty = (ctx.op.operands[i].type for i in range(3))
    lay = ctx.layout(c_ty)
    a_elem, b_elem = str(tt.elem_of(a_ty)), str(tt.elem_of(b_ty))
    name = wmma_intrinsic(a_elem, b_elem)
    acc_ty = scalar_type(c_ty)
    vec_ty = ir.VectorType.get([8], acc_ty)
    schedule = wmma_schedule(ctx.linear(c_ty), ctx.linear(a_ty), ctx.linear(b_ty), tt.shape_of(a_ty)[-1])
    iu8 = a_elem == "i8"
    if iu8:
        i1 = ctx.int_ty(1)
        true, false = (ctx.emit("llvm.mlir.constant", [], i1, {"value": ir.IntegerAttr.get(i1, v)}) for v in (1, 0))
    words = {}

    def word(vals, r):
        key = (id(vals), r)
        if key not in words:
            vec = vector_of(ctx, vals[r:r + 16], vals[r].type)
            if str(vals[r].type) == "bf16":
                vec = ctx.emit("llvm.bitcast", [vec], ir.VectorType.get([16], ctx.int_ty(16)))
            elif str(vals[r].type) == "i8":
                vec = ctx.emit("llvm.bitcast", [vec], ir.VectorType.get([4], ctx.i32()))
            words[key] = vec
        return words[key]

    out = list(c)
    for r0, steps in schedule:
        if isinstance(steps, int):  # a replicated tile
            out[r0:r0 + 8] = out[steps:steps + 8]
            continue
        acc = vector_of(ctx, out[r0:r0 + 8], acc_ty)
        for ra, rb in steps:
            x, y = word(a, ra), word(b, rb)
            if lay.is_transposed:
                x, y = y, x
            # iu8: (signed A, A, signed B, B, C, clamp): tl.int8 is signed, no saturation (wraps as Triton's)
            args = [true, x, true, y, acc, false] if iu8 else [x, y, acc]
            acc = call_intrinsic(ctx, name, args, vec_ty)
        out[r0:r0 + 8] = [ctx.emit("llvm.extractelement", [acc, ctx.c32(i)], acc_ty) for i in range(8)]
    return out


@RULES.register("tt.dot")
def _dot(ctx, a, b, c, *, inputPrecision=None, maxNumImpreciseAcc=0):
    if isinstance(ctx.layout(ctx.op.results[0].type), layouts.AmdMfmaLayout):
        return [mfma_dot(ctx, a, b, c)]
    if isinstance(ctx.layout(ctx.op.results[0].type), layouts.AmdWmmaLayout):
        return [wmma_dot(ctx, a, b, c)]
    return [fma_dot(ctx, a, b, c)]
