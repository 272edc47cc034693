"""``scf.for`` / ``if`` / ``while`` / ``yield`` / ``condition``, ``func.call`` / ``return``: re-emitted on the
flattened values (a tensor is ``nregs`` scalars), their regions lowered in place by the walker."""
from __future__ import annotations

from mlir import ir

from ..table import Rules
from ..utils import flat_types, regroup, scalar_type
from ..walker import lower_block

RULES = Rules()


def _flat(values) -> list:
    return [v for vals in values for v in vals]


def _llvm_attrs(op) -> dict:
    """A loop's ``llvm.*`` attributes (``llvm.loop_annotation``: ``disable_licm``), which upstream scf-to-cf puts
    on the back edge's branch and the translation turns into ``!llvm.loop`` metadata."""
    return {k: op.attributes[k] for k in op.attributes if k.startswith("llvm.")}


def _region_block(ctx, region, ttgir_block, types):
    """A block in ``region`` whose arguments stand for ``ttgir_block``'s (of ``types``), the block lowered into it."""
    blk = ir.Block.create_at_start(region, flat_types(ctx, types))
    for a, vals in zip(ttgir_block.arguments, regroup(ctx, types, list(blk.arguments))):
        ctx.set(a, vals)
    with ir.InsertionPoint(blk):
        lower_block(ctx, ttgir_block)


@RULES.register("scf.for")
def _scf_for(ctx, lb, ub, step, *inits, **_):
    op = ctx.op
    types = [r.type for r in op.results]
    ftys = flat_types(ctx, types)
    new = ctx.emit_op("scf.for", [lb[0], ub[0], step[0]] + _flat(inits), ftys, _llvm_attrs(op), regions=1)
    old = op.regions[0].blocks[0]
    iv = old.arguments[0]
    blk = ir.Block.create_at_start(new.regions[0], [scalar_type(iv.type)] + ftys)
    ctx.set(iv, [blk.arguments[0]])
    for a, vals in zip(list(old.arguments)[1:], regroup(ctx, types, list(blk.arguments)[1:])):
        ctx.set(a, vals)
    with ir.InsertionPoint(blk):
        lower_block(ctx, old)
    return regroup(ctx, types, list(new.results))


@RULES.register("scf.if")
def _scf_if(ctx, cond, **_):
    op = ctx.op
    types = [r.type for r in op.results]
    new = ctx.emit_op("scf.if", [cond[0]], flat_types(ctx, types), regions=2)
    for i in range(2):
        blocks = list(op.regions[i].blocks)
        if blocks:
            _region_block(ctx, new.regions[i], blocks[0], [])
    return regroup(ctx, types, list(new.results))


@RULES.register("scf.while")
def _scf_while(ctx, *inits, **_):
    op = ctx.op
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    rtypes = [r.type for r in op.results]
    new = ctx.emit_op("scf.while", _flat(inits), flat_types(ctx, rtypes), _llvm_attrs(op), regions=2)
    _region_block(ctx, new.regions[0], before, [a.type for a in before.arguments])
    _region_block(ctx, new.regions[1], after, [a.type for a in after.arguments])
    return regroup(ctx, rtypes, list(new.results))


@RULES.register("scf.yield", "scf.condition", "func.return")
def _terminator(ctx, *values):
    """A region's terminator, its values' lowered parts flattened."""
    ctx.emit_op(ctx.op.name, _flat(values))
    return []


@RULES.register("func.call")
def _func_call(ctx, *args, callee, **_):
    types = [r.type for r in ctx.op.results]
    new = ctx.emit_op("func.call", _flat(args), flat_types(ctx, types), {"callee": ir.FlatSymbolRefAttr.get(callee)})
    return regroup(ctx, types, list(new.results))
