"""Where a thread is and waiting for the others: program ids, the grid's size, ``tt.make_range`` (each
register's element index), ``ttg.barrier`` (membar's barriers) and ``tt.barrier`` (``tl.debug_barrier``), and
``tt.assume`` (``llvm.intr.assume``)."""
from __future__ import annotations

from ..table import Rules

RULES = Rules()


@RULES.register("tt.get_program_id")
def _program_id(ctx, *, axis):
    return [[ctx.target.program_id(ctx, axis)]]


@RULES.register("tt.get_num_programs")
def _num_programs(ctx, *, axis):
    return [[ctx.target.num_programs(ctx, axis)]]


@RULES.register("tt.make_range")
def _make_range(ctx, *, start, end):
    out = []
    for (i,) in ctx.indices(ctx.op.results[0].type):
        out.append(i if start == 0 else ctx.emit("arith.addi", [i, ctx.c32(start)], ctx.i32()))
    return [out]


@RULES.register("ttg.barrier", "tt.barrier")
def _barrier(ctx):
    """Every thread of the CTA waits (``bar.sync 0`` on CUDA)."""
    ctx.barrier()
    return []


@RULES.register("tt.assume", "llvm.intr.assume")  # the second: what convert_to_ttgir makes of the first
def _assume(ctx, condition, **_bundles):
    from mlir import ir

    # no operand bundles; the generic form needs their (empty) sizes and the operand segments
    ctx.emit_op("llvm.intr.assume", [condition[0]],
                attrs={"op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
                       "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0])})
    return []
