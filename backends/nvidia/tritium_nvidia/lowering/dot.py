"""``tt.dot`` on NVIDIA tensor cores.

Result layout ``#ttg.nvidia_mma<2, ...>``: one ``mma.sync.aligned.m16n8kK.row.col`` per 16x8 accumulator tile and
K step, operands in ``#ttg.dot_op`` registers (:class:`tritium.dialects.layouts.DotOperandLayout`: the first
registers of each repetition are exactly one instruction fragment, in PTX's a0, a1, ... order):

=================  ====  ==========================================  ======================
operands           K     instruction                                 accumulator
=================  ====  ==========================================  ======================
f16 x f16          16    ``m16n8k16 .f32.f16.f16.f32``               f32 (or f16: ``.f16``)
bf16 x bf16        16    ``m16n8k16 .f32.bf16.bf16.f32``             f32
f32 (tf32)         8     ``m16n8k8 .f32.tf32.tf32.f32``              f32
int8 x int8        32    ``m16n8k32 .satfinite.s32.s8.s8.s32``       i32, saturating (Triton's)
fp8 (e4m3 / e5m2)  32    ``m16n8k32 .f32.e4m3.e5m2.f32`` (sm_89+)    f32
f64 x f64          8     ``m16n8k8 .f64.f64.f64.f64`` (sm_90+)       f64
=================  ====  ==========================================  ======================

Operands are packed to 32-bit registers (2 x 16-bit, 4 x 8-bit; fp32 rounded to tf32 with ``cvt.rna.tf32.f32``;
f64 one a register, at tf32's places: ``k_width`` 1) once per fragment; ``input_precision = "tf32x3"`` splits
each fp32 operand into a tf32 ``big`` part and the tf32 of the remainder, and accumulates ``small*big + big*small + big*big``.  Any other result layout is the FMA
lowering (:func:`tritium.lowering.rules.dot.fma_dot`).  An int8 accumulator that would leave the int32 range
saturates here, as in Triton's mma.sync; wgmma and the interpreter wrap, as Triton's do.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.dialects.enums import InputPrecision
from tritium.lowering import LoweringError, Rules
from tritium.lowering.rules.dot import fma_dot
from tritium.lowering.utils import inline_asm, pack_word, scalar_type, unpack_word

RULES = Rules()


def _ptx_type(ty) -> str:
    s = str(tt.elem_of(ty))
    names = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2",
             "f64": "f64"}
    if s not in names:
        raise LoweringError(f"tt.dot: no mma.sync for {s} operands")
    return names[s]


def _bits(ty) -> int:
    return 8 if tt.is_fp8(tt.elem_of(ty)) else scalar_type(ty).width


def _tf32(ctx, v):
    return inline_asm(ctx, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [v], [ctx.i32()])[0]


class _Operand:
    """The packed 32-bit registers of one operand's fragments, made once per fragment."""

    def __init__(self, ctx, vals, ty, frag: int, precision):
        self.ctx, self.vals, self.frag = ctx, vals, frag
        self.ll = ctx.linear(ty)
        self.map = self.ll.register_of()
        self.bits = _bits(ty)
        self.split = precision == InputPrecision.TF32x3
        self.cache = {}

    def fragment(self, index, part: str = "big") -> list:
        """The i32 registers of the fragment whose first element (lane 0, warp 0) is ``index``."""
        r0 = self.map.get(tuple(index))
        if r0 is None or r0 % self.frag:
            raise LoweringError(f"tt.dot: no operand fragment at {tuple(index)} in {self.ll}")
        key = (r0, part)
        if key not in self.cache:
            ctx, vals = self.ctx, self.vals[r0:r0 + self.frag]
            if self.bits == 64:  # f64 registers as they are
                words = list(vals)
            elif self.bits == 32:
                if part == "big":
                    words = [_tf32(ctx, v) for v in vals]
                else:  # the tf32 of what the big part leaves out
                    f32 = ir.F32Type.get()
                    words = []
                    for v, big in zip(vals, self.fragment(index, "big")):
                        rest = ctx.emit("arith.subf", [v, ctx.emit("arith.bitcast", [big], f32)], f32)
                        words.append(_tf32(ctx, rest))
            else:
                per = 32 // self.bits
                words = [pack_word(ctx, vals[i:i + per]) for i in range(0, len(vals), per)]
            self.cache[key] = words
        return self.cache[key]


def _mma_v2(ctx, a, b, c, precision):
    a_ty, b_ty, c_ty = (ctx.op.operands[i].type for i in range(3))
    a_lay, b_lay = ctx.layout(a_ty), ctx.layout(b_ty)
    bits = _bits(a_ty)
    ik = {64: 8, 32: 8, 16: 16, 8: 32}[bits]
    acc_s = str(scalar_type(c_ty))
    ta, tb = _ptx_type(a_ty), _ptx_type(b_ty)
    if acc_s == "f32":
        dtype, acc_c, n_acc = "f32", "f", 4
    elif acc_s == "i32":
        dtype, acc_c, n_acc = "s32", "r", 4
    elif acc_s == "f16" and ta == "f16":
        dtype, acc_c, n_acc = "f16", "r", 2
    elif acc_s == "f64" and ta == "f64":
        dtype, acc_c, n_acc = "f64", "d", 4
    else:
        raise LoweringError(f"tt.dot: no mma.sync with {ta} operands and a {acc_s} accumulator")
    A = _Operand(ctx, a, a_ty, a_lay.fragment_regs(), precision)
    B = _Operand(ctx, b, b_ty, b_lay.fragment_regs(), precision)
    c_ll = ctx.linear(c_ty)
    K = tt.shape_of(a_ty)[-1]
    na, nb = A.frag * min(bits, 32) // 32, B.frag * min(bits, 32) // 32  # registers per fragment (i32; f64)
    op_c = "d" if bits == 64 else "r"
    regs = lambda lo, n: ",".join(f"${i}" for i in range(lo, lo + n))
    sat = ".satfinite" if dtype == "s32" else ""  # int8: the accumulator saturates, as Triton's
    text = (f"mma.sync.aligned.m16n8k{ik}.row.col{sat}.{dtype}.{ta}.{tb}.{dtype} {{{regs(0, n_acc)}}}, "
            f"{{{regs(n_acc, na)}}}, {{{regs(n_acc + na, nb)}}}, {{{regs(n_acc + na + nb, n_acc)}}};")
    cons = ",".join([f"={acc_c}"] * n_acc + [op_c] * (na + nb) + [str(i) for i in range(n_acc)])
    out = list(c)
    seen = {}
    for r0 in range(0, c_ll.num_regs, 4):
        *lead, m, n = c_ll.index(r0)
        if c_ll.index(r0) in seen:  # a replicated tile (zero bases): the same values
            src = seen[c_ll.index(r0)]
            out[r0:r0 + 4] = out[src:src + 4]
            continue
        seen[c_ll.index(r0)] = r0
        acc = out[r0:r0 + 4]
        if dtype == "f16":
            acc = [pack_word(ctx, acc[0:2]), pack_word(ctx, acc[2:4])]
        acc_t = [scalar_type(c_ty)] * n_acc if dtype != "f16" else [ctx.i32()] * 2
        steps = [("big", "big")]
        if A.split:
            steps = [("small", "big"), ("big", "small"), ("big", "big")]
        for k0 in range(0, K, ik):
            for pa, pb in steps:
                fa = A.fragment((*lead, m, k0), pa)
                fb = B.fragment((*lead, k0, n), pb)
                acc = inline_asm(ctx, text, cons, fa + fb + acc, acc_t)
        if dtype == "f16":
            acc = unpack_word(ctx, acc[0], ir.F16Type.get(), 2) + unpack_word(ctx, acc[1], ir.F16Type.get(), 2)
        out[r0:r0 + 4] = acc
    return out


@RULES.register("tt.dot")
def _dot(ctx, a, b, c, *, inputPrecision=InputPrecision.IEEE, maxNumImpreciseAcc=0):
    lay = ctx.layout(ctx.op.results[0].type)
    if isinstance(lay, layouts.NvidiaMmaLayout):
        if lay.version != 2:
            raise LoweringError(f"tt.dot at {tt.loc_str(ctx.op)}: nvidia_mma version {lay.version} has no lowering")
        return [_mma_v2(ctx, a, b, c, inputPrecision)]
    return [fma_dot(ctx, a, b, c)]
