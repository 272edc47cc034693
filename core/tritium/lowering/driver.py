"""Walk a TTGIR module and build its LLVM-dialect counterpart, rule by rule.

Conventions:

* a tensor value becomes a Python list of scalar values, one per register of its layout (register order of
  :mod:`tritium.dialects.layouts`); a scalar a list of one;
* function signatures, ``scf`` region arguments and results are *flattened*: a tensor argument becomes
  ``nregs`` scalar arguments.  ``scf``/``arith``/``math``/``func`` ops on scalars are emitted as they are and
  converted by the upstream passes (``convert-scf-to-cf``, ``convert-arith-to-llvm``, ``convert-cf-to-llvm``,
  ``convert-func-to-llvm``; a function with several results returns an LLVM struct there);
* ``tt.reduce`` / ``tt.scan`` combine functions are inlined at every application; they are not emitted.
* scratch shared memory is one ``@global_smem`` (``!llvm.array<0 x i8>``, address space 3) of dynamic size: a
  rule claims its bytes with ``ctx.scratch(op, nbytes)`` (the allocation analysis's offset in kernels, else offset 0
  bracketed by barriers) and the module's need is the maximum of ``offset + bytes`` over the ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mlir import ir, passmanager

from ..dialects import tt, ttg
from .context import LoweringContext, TargetInfo, is_tensor, scalar_type
from .registry import LoweringError, get_rule, register


def _loc_str(loc) -> str:
    s = str(loc)
    return s[4:-1] if s.startswith("loc(") else s


def _attrs(op) -> dict:
    return {a: op.attributes[a] for a in op.attributes} if op.attributes and isinstance(next(iter(op.attributes)), str) else {a.name: a.attr for a in op.attributes}


def flat_types(ctx: LoweringContext, types) -> list:
    out = []
    for t in types:
        out.extend([scalar_type(t)] * ctx.nregs(t))
    return out


def regroup(ctx: LoweringContext, types, flat) -> list:
    out, pos = [], 0
    for t in types:
        n = ctx.nregs(t)
        out.append(list(flat[pos:pos + n]))
        pos += n
    return out


def lower_ops(ctx: LoweringContext, block) -> Optional[list]:
    """Lower every op of a TTGIR ``block`` at the current insertion point.  Returns the values of a
    ``func.return`` when lowering an inlined combine function (``ctx.cache['inline_return']``)."""
    for op in block.operations:
        op = op.operation if hasattr(op, "operation") else op
        ctx.loc = op.location
        if op.name == "func.return" and ctx.cache.get("_inlining"):
            return [v for x in op.operands for v in ctx.get(x)]
        rule = get_rule(op.name, ctx.backend)
        if rule is None:
            raise LoweringError(f"no lowering rule for '{op.name}' (backend '{ctx.backend}') at "
                                f"{_loc_str(op.location)}")
        with ctx.loc:
            try:
                res = rule(ctx, op)
            except LoweringError:
                raise
            except Exception as e:
                raise LoweringError(f"lowering '{op.name}' at {_loc_str(op.location)} failed: "
                                    f"{type(e).__name__}: {e}") from e
        if len(op.results):
            if res is None or len(res) != len(op.results):
                raise LoweringError(f"internal: the rule for '{op.name}' returned {res!r} for "
                                    f"{len(op.results)} results")
            for r, vals in zip(op.results, res):
                want = ctx.nregs(r.type)
                if len(vals) != want:
                    raise LoweringError(f"internal: the rule for '{op.name}' gave {len(vals)} values for {r.type} "
                                        f"({want} registers)")
                ctx.set(r, vals)
    return None


def apply_combine(ctx: LoweringContext, symbol: str, args: list) -> list:
    """Inline the combine function ``@symbol`` on scalar ``args``; returns its results."""
    f = ctx.funcs.get(symbol)
    if f is None:
        raise LoweringError(f"combine function @{symbol} not found")
    block = f.regions[0].blocks[0]
    for a, v in zip(block.arguments, args):
        ctx.set(a, [v])
    saved_loc = ctx.loc
    old = ctx.cache.get("_inlining")
    ctx.cache["_inlining"] = True
    try:
        out = lower_ops(ctx, block)
    finally:
        ctx.cache["_inlining"] = old
        ctx.loc = saved_loc
    return out


def _sym_name(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


def _combine_symbols(module) -> set:
    out = set()

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if "combine" in op.attributes:
            out.add(ir.FlatSymbolRefAttr(op.attributes["combine"]).value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return out


@dataclass
class LoweredModule:
    module: Any  # the llvm-dialect module
    kernel: str
    shared: int
    arg_types: list = field(default_factory=list)


def lower_module(module, target: TargetInfo, backend: str, *, kernel_attrs=None, options=None,
                 axis_info=None, conversions: bool = True) -> LoweredModule:
    """Lower the TTGIR ``module`` (in its context) to the LLVM dialect.

    ``kernel_attrs(ctx, func_name) -> dict`` gives the attributes of public functions (kernels).
    """
    mop = module.operation
    context = mop.context
    num_warps = ttg.module_int(module, ttg.NUM_WARPS, 4)
    tpw = ttg.module_int(module, ttg.THREADS_PER_WARP, 32)
    with context, ir.Location.unknown():
        out = ir.Module.create()
        funcs = {}
        for op in module.body.operations:
            op = op.operation if hasattr(op, "operation") else op
            if op.name == "func.func":
                funcs[_sym_name(op)] = op
        combines = _combine_symbols(module)
        shared = 0
        kernel = None
        arg_types = []
        post_attrs = {}
        for name, f in funcs.items():
            if name in combines:
                continue
            public = "sym_visibility" not in f.attributes or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
            ctx = LoweringContext(target=target, backend=backend, module=module, out_module=out,
                                  num_warps=num_warps, threads_per_warp=tpw, axis_info=axis_info, options=options,
                                  funcs=funcs, kernel=public)
            fty = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
            ins, outs = flat_types(ctx, fty.inputs), flat_types(ctx, fty.results)
            attrs = {"sym_name": ir.StringAttr.get(name),
                     "function_type": ir.TypeAttr.get(ir.FunctionType.get(ins, outs))}
            if not public:
                attrs["sym_visibility"] = ir.StringAttr.get("private")
            elif kernel_attrs is not None:
                post_attrs[name] = kernel_attrs(ctx, name)
            with ir.InsertionPoint(out.body), f.location:
                nf = ir.Operation.create("func.func", attributes=attrs, regions=1)
            block = ir.Block.create_at_start(nf.regions[0], ins)
            ctx.entry_block = block
            old_block = f.regions[0].blocks[0]
            for a, vals in zip(old_block.arguments, regroup(ctx, list(fty.inputs), list(block.arguments))):
                ctx.set(a, vals)
            with ir.InsertionPoint(block):
                lower_ops(ctx, old_block)
            shared = max(shared, ctx.shared_bytes)
            if public:
                kernel = kernel or name
                if kernel == name:
                    arg_types = [str(t) for t in ins]
        if shared:
            with ir.InsertionPoint.at_block_begin(out.body):
                ir.Operation.create("llvm.mlir.global", attributes={
                    "sym_name": ir.StringAttr.get("global_smem"),
                    "global_type": ir.TypeAttr.get(ir.Type.parse("!llvm.array<0 x i8>")),
                    "linkage": ir.Attribute.parse("#llvm.linkage<external>"),
                    "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), target.shared_address_space),
                    "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 16),
                }, regions=1)
        try:
            out.operation.verify()
        except ir.MLIRError as e:
            raise LoweringError(f"the lowered module does not verify: {e}") from None
        if conversions:
            convert_to_llvm(out)
            # attributes only llvm.func may carry (nvvm.kernel, nvvm.maxntid, ...)
            for op in out.body.operations:
                op = op.operation if hasattr(op, "operation") else op
                if op.name == "llvm.func" and _sym_name(op) in post_attrs:
                    for k, v in post_attrs[_sym_name(op)].items():
                        op.attributes[k] = v
    return LoweredModule(out, kernel or "", shared, arg_types)


UPSTREAM = ("convert-scf-to-cf", "convert-math-to-llvm", "convert-arith-to-llvm", "convert-index-to-llvm", "convert-cf-to-llvm",
            "convert-func-to-llvm", "convert-nvvm-to-llvm", "reconcile-unrealized-casts")


def convert_to_llvm(module) -> None:
    """The upstream conversions of scalar scf/arith/cf/func ops to the LLVM dialect, in place."""
    pm = passmanager.PassManager.parse("builtin.module(" + ",".join(UPSTREAM) + ")", module.context)
    try:
        pm.run(module.operation)
    except ir.MLIRError as e:
        raise LoweringError(f"the conversion to the LLVM dialect failed: {e}") from None
    # translate_module_to_llvmir may abort on ops it cannot translate: refuse them here
    bad = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name.split(".")[0] not in ("llvm", "nvvm", "rocdl", "builtin"):
            bad.append(f"'{op.name}' at {_loc_str(op.location)}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if bad:
        raise LoweringError("ops left after the conversion to the LLVM dialect: " + ", ".join(sorted(set(bad))[:10]))


# ------------------------------------------------------------------------------------------------
# Control flow and functions (target independent)
# ------------------------------------------------------------------------------------------------

def _flat(ctx, values) -> list:
    return [v for x in values for v in ctx.get(x)]


@register("scf.for")
def _scf_for(ctx, op):
    lb, ub, step = (ctx.get(op.operands[i])[0] for i in range(3))
    inits = list(op.operands)[3:]
    types = [r.type for r in op.results]
    ftys = flat_types(ctx, types)
    new = ctx.op("scf.for", [lb, ub, step] + _flat(ctx, inits), ftys, regions=1)
    old = op.regions[0].blocks[0]
    iv = old.arguments[0]
    blk = ir.Block.create_at_start(new.regions[0], [scalar_type(iv.type)] + ftys)
    ctx.set(iv, [blk.arguments[0]])
    for a, vals in zip(list(old.arguments)[1:], regroup(ctx, types, list(blk.arguments)[1:])):
        ctx.set(a, vals)
    with ir.InsertionPoint(blk):
        lower_ops(ctx, old)
    return regroup(ctx, types, list(new.results))


@register("scf.yield")
def _scf_yield(ctx, op):
    ctx.op("scf.yield", _flat(ctx, op.operands))
    return []


@register("scf.if")
def _scf_if(ctx, op):
    cond = ctx.get(op.operands[0])[0]
    types = [r.type for r in op.results]
    new = ctx.op("scf.if", [cond], flat_types(ctx, types), regions=2)
    for i in range(2):
        blocks = list(op.regions[i].blocks)
        if not blocks:
            continue
        blk = ir.Block.create_at_start(new.regions[i], [])
        with ir.InsertionPoint(blk):
            lower_ops(ctx, blocks[0])
    return regroup(ctx, types, list(new.results))


@register("scf.while")
def _scf_while(ctx, op):
    inits = list(op.operands)
    before = op.regions[0].blocks[0]
    after = op.regions[1].blocks[0]
    btypes = [a.type for a in before.arguments]
    atypes = [a.type for a in after.arguments]
    rtypes = [r.type for r in op.results]
    new = ctx.op("scf.while", _flat(ctx, inits), flat_types(ctx, rtypes), regions=2)
    b = ir.Block.create_at_start(new.regions[0], flat_types(ctx, btypes))
    for a, vals in zip(before.arguments, regroup(ctx, btypes, list(b.arguments))):
        ctx.set(a, vals)
    with ir.InsertionPoint(b):
        lower_ops(ctx, before)
    a_ = ir.Block.create_at_start(new.regions[1], flat_types(ctx, atypes))
    for a, vals in zip(after.arguments, regroup(ctx, atypes, list(a_.arguments))):
        ctx.set(a, vals)
    with ir.InsertionPoint(a_):
        lower_ops(ctx, after)
    return regroup(ctx, rtypes, list(new.results))


@register("scf.condition")
def _scf_condition(ctx, op):
    ctx.op("scf.condition", _flat(ctx, op.operands))
    return []


@register("func.return")
def _func_return(ctx, op):
    ctx.op("func.return", _flat(ctx, op.operands))
    return []


@register("func.call")
def _func_call(ctx, op):
    types = [r.type for r in op.results]
    new = ctx.op("func.call", _flat(ctx, op.operands), flat_types(ctx, types), {"callee": op.attributes["callee"]})
    return regroup(ctx, types, list(new.results))
