"""``tt.print`` and ``tt.assert`` through the target's ``printf`` / ``assert_fail``.

``tt.print``: one line per element a thread owns first (replicas skip), ``pid (x, y, z) idx (i, ...) <prefix>
<value>``, values promoted as C varargs are (floats to f64, narrow integers to i32); without operands, one line
per thread.  ``tt.assert``: if any element of the condition is false, the target's ``assert_fail`` with the
message and the op's source location.
"""
from __future__ import annotations

import re

from mlir import ir

from ...dialects import tt
from ..table import Rules
from ..utils import is_llvm_ptr, unique_regs

RULES = Rules()


def _print_arg(ctx, v, hex_: bool, signed: bool):
    """``v`` promoted for printf, and its conversion spec."""
    ty = v.type
    if isinstance(ty, ir.FloatType):
        f64 = ir.F64Type.get()
        return (ctx.emit("arith.extf", [v], f64) if ty.width < 64 else v), ("%a" if hex_ else "%f")
    if is_llvm_ptr(ty):
        return v, "%p"
    w = ty.width
    if w < 32:
        v = ctx.emit("arith.extsi" if signed and w > 1 else "arith.extui", [v], ctx.i32())
        w = 32
    if w == 32:
        return v, ("0x%x" if hex_ else ("%d" if signed else "%u"))
    return v, ("0x%llx" if hex_ else ("%lld" if signed else "%llu"))


@RULES.register("tt.print")
def _print(ctx, args, *, prefix="", hex=False, isSigned=()):  # noqa: A002  (the attribute's name)
    pids = [ctx.target.program_id(ctx, a) for a in range(3)]
    if not args:
        ctx.target.printf(ctx, f"pid (%u, %u, %u) {prefix}\n", pids)
        return []
    for k, (vals, x) in enumerate(zip(args, ctx.op.operands)):
        signed = bool(isSigned[k] if k < len(isSigned) else 1)
        if tt.is_tensor(x.type):
            idx = ctx.indices(x.type)
            uniq = unique_regs(ctx.linear(x.type))
        else:
            idx, uniq = [()], {0}
        for r, v in enumerate(vals):
            if r not in uniq:
                continue
            pv, spec = _print_arg(ctx, v, hex, signed)
            ix = list(idx[r])
            fmt = "pid (%u, %u, %u) idx (" + ", ".join(["%u"] * len(ix)) + f") {prefix}"
            if len(args) > 1:
                fmt += f"(operand {k}) "
            fmt += spec + "\n"
            ctx.target.printf(ctx, fmt, pids + ix + [pv])
    return []


@RULES.register("tt.assert")
def _assert(ctx, condition, *, message="assertion failed"):
    file, line = "<unknown>", 0
    m = re.search(r'"([^"]*)":(\d+)', str(ctx.op.location))
    if m:
        file, line = m.group(1), int(m.group(2))
    # any false element -> the target's assert_fail
    ok = condition[0]
    for c in condition[1:]:
        ok = ctx.emit("arith.andi", [ok, c], ok.type)
    fail = ctx.emit("arith.xori", [ok, ctx.const(ok.type, 1)], ok.type)
    ifop = ctx.emit_op("scf.if", [fail], [], regions=2)  # no else block
    with ir.InsertionPoint(ir.Block.create_at_start(ifop.regions[0], [])):
        ctx.target.assert_fail(ctx, message, file, line, "kernel")
        ctx.emit_op("scf.yield", [])
    return []
