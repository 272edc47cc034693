"""``tt.dot`` on FMA units: the result in a blocked layout, A and B in ``#ttg.dot_op<0|1, #blocked, 0>`` (every
thread holds the whole K extent of its rows of A and its columns of B; see
:class:`tritium.dialects.layouts.DotOperandLayout`).  For each accumulator register ``(.., m, n)``:
``acc = fma(a[.., m, k], b[.., k, n], acc)`` for ``k = 0 .. K-1`` in order, after converting the operands to the
accumulator's type once per register (floats: ``extf``; integers: sign extension; fp8 operands were converted to
fp32 by accelerate_matmul).  Backends with tensor cores override the rule and fall back to :func:`fma_dot`."""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...errors import LoweringError
from ..table import Rules
from ..utils import scalar_type

RULES = Rules()


def _to_acc(ctx, vals, src_ty, acc_ty):
    """Operand scalars converted to the accumulator's scalar type."""
    if src_ty == acc_ty:
        return list(vals)
    if isinstance(acc_ty, ir.IntegerType):
        if not isinstance(src_ty, ir.IntegerType):
            raise LoweringError(f"tt.dot: {src_ty} operands with an integer accumulator {acc_ty}")
        op = "arith.extsi" if src_ty.width < acc_ty.width else "arith.trunci"
        return [ctx.emit(op, [v], acc_ty) for v in vals]
    if isinstance(src_ty, ir.IntegerType):
        raise LoweringError(f"tt.dot: integer operands with a float accumulator {acc_ty}")
    op = "arith.extf" if ir.FloatType(src_ty).width < ir.FloatType(acc_ty).width else "arith.truncf"
    return [ctx.emit(op, [v], acc_ty) for v in vals]


def fma_dot(ctx, a, b, c) -> list:
    """The FMA lowering of ``ctx.op`` (a ``tt.dot``): the result's per-register values."""
    a_ty, b_ty, c_ty = (ctx.op.operands[i].type for i in range(3))
    a_ll, b_ll, c_ll = ctx.linear(a_ty), ctx.linear(b_ty), ctx.linear(c_ty)
    acc_ty = scalar_type(c_ty)
    av = _to_acc(ctx, a, scalar_type(a_ty), acc_ty)
    bv = _to_acc(ctx, b, scalar_type(b_ty), acc_ty)
    a_map, b_map = a_ll.register_of(), b_ll.register_of()
    K = tt.shape_of(a_ty)[-1]
    is_int = isinstance(acc_ty, ir.IntegerType)
    out = []
    for r in range(c_ll.num_regs):
        *lead, m, n = c_ll.index(r)
        acc = c[r]
        for k in range(K):
            try:
                x, y = av[a_map[(*lead, m, k)]], bv[b_map[(*lead, k, n)]]
            except KeyError:
                raise LoweringError(f"tt.dot at {tt.loc_str(ctx.op)}: operand layouts do not match the result "
                                    f"layout (A {a_ty}, B {b_ty}, result {c_ty})") from None
            if is_int:
                acc = ctx.emit("arith.addi", [acc, ctx.emit("arith.muli", [x, y], acc_ty)], acc_ty)
            else:
                acc = ctx.emit("math.fma", [x, y, acc], acc_ty)
        out.append(acc)
    return out


@RULES.register("tt.dot")
def _dot(ctx, a, b, c, *, inputPrecision=None, maxNumImpreciseAcc=0):
    return [fma_dot(ctx, a, b, c)]
