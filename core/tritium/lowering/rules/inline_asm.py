"""``tt.elementwise_inline_asm``: the asm string and constraints go to ``llvm.inline_asm`` unchanged (outputs
first), in the target's own assembly language (PTX on cuda, AMDGCN on hip).  ``packed_element = P``: one asm invocation handles P elements of each operand; operands
narrower than 32 bits are packed ``32 / bits`` to a 32-bit register (as an i32), results likewise unpacked."""
from __future__ import annotations

from mlir import ir

from ...errors import LoweringError
from ..table import Rules
from ..utils import bit_width, inline_asm, per_register, scalar_type

RULES = Rules()


def _pack(ctx, vals, t):
    """Scalars of type ``t`` (narrower than 32 bits) -> one i32, the first in the low bits."""
    i32 = ctx.i32()
    bits = bit_width(t)
    ity = ctx.int_ty(bits)
    word = None
    for j, v in enumerate(vals):
        iv = v if isinstance(t, ir.IntegerType) else ctx.emit("arith.bitcast", [v], ity)
        w = ctx.emit("arith.extui", [iv], i32)
        if j:
            w = ctx.emit("arith.shli", [w, ctx.c32(j * bits)], i32)
        word = w if word is None else ctx.emit("arith.ori", [word, w], i32)
    return word


def _unpack(ctx, word, t, per_reg):
    """Inverse of :func:`_pack`: ``per_reg`` scalars of type ``t`` from an i32."""
    i32 = ctx.i32()
    bits = bit_width(t)
    ity = ctx.int_ty(bits)
    out = []
    for j in range(per_reg):
        w = ctx.emit("arith.shrui", [word, ctx.c32(j * bits)], i32) if j else word
        iv = ctx.emit("arith.trunci", [w], ity)
        out.append(iv if isinstance(t, ir.IntegerType) else ctx.emit("arith.bitcast", [iv], t))
    return out


@RULES.register("tt.elementwise_inline_asm")
def _inline_asm(ctx, args, *, asm_string, constraints, pure=False, packed_element=1):
    P = packed_element
    results = list(ctx.op.results)
    if not results:
        raise LoweringError("tt.elementwise_inline_asm without results is not supported")
    n = ctx.nregs(results[0].type)
    if n % P:
        raise LoweringError(f"tt.elementwise_inline_asm: packed_element={P} does not divide the {n} elements "
                            "each thread holds")
    args = [per_register(a, n) for a in args]
    arg_types = [scalar_type(a.type) for a in ctx.op.operands]
    res_types = [scalar_type(r.type) for r in results]

    def per_reg(t):
        b = bit_width(t)
        return max(1, min(P, 32 // b)) if b < 32 else 1

    outs = [[] for _ in results]
    for c in range(0, n, P):
        operands = []
        for vals, t in zip(args, arg_types):
            k = per_reg(t)
            for j in range(0, P, k):
                chunk = vals[c + j:c + j + k]
                if k == 1:
                    v = chunk[0]
                    if isinstance(t, ir.IntegerType) and t.width == 1:
                        v = ctx.emit("arith.extui", [v], ctx.int_ty(8))  # i1 -> an 8/16-bit register
                    operands.append(v)
                else:
                    operands.append(_pack(ctx, chunk, t))
        rtys = []
        for t in res_types:
            k = per_reg(t)
            for _ in range(0, P, k):
                rtys.append(ctx.i32() if k > 1 else t)
        got = inline_asm(ctx, asm_string, constraints, operands, rtys, side_effects=not pure)
        pos = 0
        for ri, t in enumerate(res_types):
            k = per_reg(t)
            for _ in range(0, P, k):
                w = got[pos]
                pos += 1
                outs[ri].extend(_unpack(ctx, w, t, k) if k > 1 else [w])
    return outs


@RULES.register("tt.map_elementwise")
def _map_elementwise(ctx, srcs, *, combine, pack=1):
    """The scalar function @combine inlined once per ``pack`` registers (its per-element branches stay branches);
    operands of one shape and layout, as for every elementwise op."""
    from ..walker import inline_combine

    results = list(ctx.op.results)
    n = ctx.nregs(results[0].type)
    srcs = [per_register(a, n) for a in srcs]
    outs = [[None] * n for _ in results]
    for c in range(0, n, pack):
        # a thread holding fewer than pack elements (or a last partial group) repeats its last one: the function is
        # elementwise, the extra results are dropped
        idx = [min(c + j, n - 1) for j in range(pack)]
        got = inline_combine(ctx, combine, [vals[i] for vals in srcs for i in idx], [])
        for r in range(len(results)):
            for j in range(pack):
                if c + j < n:
                    outs[r][c + j] = got[r * pack + j]
    return outs
