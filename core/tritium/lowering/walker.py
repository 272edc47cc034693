"""Walk a TTGIR module and build its LLVM-dialect counterpart, one rule call per op.

``lower_module(module, target_info, rules)`` lowers every function (combine functions of reduce / scan are
inlined where they are applied, not emitted), then runs the upstream conversions to the LLVM dialect.

What a rule gets, for an op: ``rule(ctx, *operands, **params)``

* ``ctx``: the :class:`~tritium.lowering.context.LoweringContext`; ``ctx.op`` is the TTGIR op (result types,
  regions, location, the TTGIR operand values), ``ctx.target`` the :class:`~tritium.lowering.context.TargetInfo`;
* ``operands``, lowered: a tensor value is a list of scalars, one per register of its layout (register order of
  :mod:`tritium.dialects.layouts`), a scalar a list of one.  For tt ops, one entry per operand group of the op
  table (:mod:`tritium.dialects.tt`): SINGLE -> that value's list, OPTIONAL -> the list or None, VARIADIC /
  MIXED -> a list of lists.  For other ops (arith, math, scf, func, ttg), one list per operand;
* ``params``, the op's attributes decoded: for tt ops those the op table declares, for other ops every attribute
  whose name is an identifier.  Enumerated ones (``cache``, ``sem``, ...) become
  :mod:`tritium.dialects.enums` members, integers ``int``, booleans ``bool``, strings ``str``, symbol references
  the name, dense arrays and arrays tuples; others (``fastmath``, dense elements) stay attributes.  Attributes
  such as ``allocation.offset`` are read by ``ctx`` helpers (``ctx.scratch(op, nbytes)``).

A rule returns, for each result of the op, its list of values.  Function signatures, ``scf`` region arguments
and results are flattened (a tensor becomes ``nregs`` scalars); ``scf`` / ``arith`` / ``math`` / ``func`` ops on
scalars are emitted as they are and converted by the upstream passes (:data:`UPSTREAM`).  Scratch shared memory
is one ``@global_smem`` (``!llvm.array<0 x i8>``, address space 3) of dynamic size, claimed by a rule with
``ctx.scratch(op, nbytes)``; the module's need is the maximum of ``offset + bytes`` over its ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from mlir import ir, passmanager

from ..dialects import enums, tt, ttg
from ..errors import LoweringError
from .context import LoweringContext, TargetInfo
from .utils import flat_types, regroup

# ------------------------------------------------------------------------------------------------
# Decoding an op's operands and attributes
# ------------------------------------------------------------------------------------------------

_DECODERS = {
    ir.IntegerAttr: lambda name, a: enums.decode(name, a.value),
    ir.BoolAttr: lambda name, a: bool(a.value),
    ir.FloatAttr: lambda name, a: a.value,
    ir.StringAttr: lambda name, a: a.value,
    ir.FlatSymbolRefAttr: lambda name, a: a.value,
    ir.UnitAttr: lambda name, a: True,
    ir.TypeAttr: lambda name, a: a.value,
    ir.DenseI32ArrayAttr: lambda name, a: tuple(a),
    ir.DenseI64ArrayAttr: lambda name, a: tuple(a),
    ir.DenseBoolArrayAttr: lambda name, a: tuple(a),
    ir.ArrayAttr: lambda name, a: tuple(decode_attribute(name, x) for x in a),
}

_SEGMENT_SIZES = frozenset({"operandSegmentSizes", "resultSegmentSizes"})


def decode_attribute(name: str, attr):
    """An attribute's Python value (see the module docstring); an attribute of another kind is returned as is."""
    decode = _DECODERS.get(type(attr))
    return attr if decode is None else decode(name, attr)


@dataclass(frozen=True)
class _Signature:
    """How to decode an op of one name: ``groups``, the tt op table's operand groups (None: one entry per
    operand); ``params``, the attribute names to decode (None: every identifier)."""

    groups: Optional[tuple]
    params: Optional[frozenset]


_SIGNATURES: dict = {}


def _signature(name: str) -> _Signature:
    sig = _SIGNATURES.get(name)
    if sig is None:
        opdef = tt.op_def(name)
        if opdef is None:
            sig = _Signature(None, None)
        else:
            grouped = any(kind != tt.SINGLE for _, kind in opdef.operands)
            sig = _Signature(opdef.operands if grouped else None, frozenset(opdef.attrs))
        _SIGNATURES[name] = sig
    return sig


def decode_operands(ctx: LoweringContext, op, sig: _Signature) -> list:
    """The lowered operands of ``op``, one entry per operand group (tt ops) or per operand."""
    if sig.groups is None:
        return [ctx.get(x) for x in op.operands]
    by_name = tt.operand_groups(op)
    out = []
    for name, kind in sig.groups:
        vals = by_name.get(name, ())
        if kind == tt.SINGLE:
            out.append(ctx.get(vals[0]))
        elif kind == tt.OPTIONAL:
            out.append(ctx.get(vals[0]) if vals else None)
        else:
            out.append([ctx.get(v) for v in vals])
    return out


def decode_params(op, sig: _Signature) -> dict:
    """The decoded attributes of ``op`` that its rule takes as keyword arguments."""
    attrs = op.attributes
    if sig.params is None:
        return {n: decode_attribute(n, attrs[n]) for n in attrs if n.isidentifier() and n not in _SEGMENT_SIZES}
    return {n: decode_attribute(n, attrs[n]) for n in attrs if n in sig.params}


# ------------------------------------------------------------------------------------------------
# Walking
# ------------------------------------------------------------------------------------------------

def lower_block(ctx: LoweringContext, block) -> Optional[list]:
    """Lower every op of a TTGIR ``block`` at the current insertion point.  When lowering an inlined combine
    function (``ctx.inlining``), returns the values its ``func.return`` returns."""
    outer = ctx.op, ctx.loc
    try:
        for op in block.operations:
            op = op.operation
            ctx.op, ctx.loc = op, op.location
            if ctx.inlining and op.name == "func.return":
                return [v for x in op.operands for v in ctx.get(x)]
            _lower_op(ctx, op)
    finally:
        ctx.op, ctx.loc = outer
    return None


def _lower_op(ctx: LoweringContext, op) -> None:
    rule = ctx.rules.get(op.name)
    if rule is None:
        raise LoweringError(f"no lowering rule for '{op.name}' (target '{ctx.target.name}') at {tt.loc_str(op)}")
    sig = _signature(op.name)
    with ctx.loc:
        try:
            res = rule(ctx, *decode_operands(ctx, op, sig), **decode_params(op, sig))
        except LoweringError:
            raise
        except Exception as e:
            raise LoweringError(f"lowering '{op.name}' at {tt.loc_str(op)} failed: {type(e).__name__}: {e}") from e
    if len(op.results):
        if res is None or len(res) != len(op.results):
            raise LoweringError(f"internal: the rule for '{op.name}' returned {res!r} for {len(op.results)} results")
        for r, vals in zip(op.results, res):
            want = ctx.nregs(r.type)
            if len(vals) != want:
                raise LoweringError(f"internal: the rule for '{op.name}' gave {len(vals)} values for {r.type} "
                                    f"({want} registers)")
            ctx.set(r, vals)


def inline_combine(ctx: LoweringContext, symbol: str, left: list, right: list) -> list:
    """Inline the combine function ``@symbol`` of a reduce / scan on scalars: ``left`` (the accumulated values)
    then ``right`` (the new ones); returns its results."""
    f = ctx.funcs.get(symbol)
    if f is None:
        raise LoweringError(f"combine function @{symbol} not found")
    block = f.regions[0].blocks[0]
    for a, v in zip(block.arguments, list(left) + list(right)):
        ctx.set(a, [v])
    was_inlining = ctx.inlining
    ctx.inlining = True
    try:
        return lower_block(ctx, block)
    finally:
        ctx.inlining = was_inlining


def _sym_name(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


def _combine_symbols(module) -> set:
    out = set()

    def visit(op):
        op = op.operation
        if "combine" in op.attributes:
            out.add(ir.FlatSymbolRefAttr(op.attributes["combine"]).value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return out


@dataclass
class LoweredModule:
    """The result of :func:`lower_module`: the LLVM-dialect module, the kernel's symbol, the shared memory the
    lowering needs (bytes) and the kernel's LLVM parameter types."""

    module: Any
    kernel: str
    shared: int
    arg_types: list = field(default_factory=list)


def lower_module(module, target_info: TargetInfo, rules: Mapping, *, kernel_attrs=None, options=None,
                 axis_info=None, conversions: bool = True) -> LoweredModule:
    """Lower the TTGIR ``module`` (in its context) to the LLVM dialect with the rule table ``rules``.

    ``kernel_attrs(ctx, func_name) -> dict``: the attributes of public functions (kernels) on their ``llvm.func``;
    ``options``: the backend's options (:class:`~tritium.compiler.backend.BaseOptions` fields), or None;
    ``axis_info``: an :class:`~tritium.passes.analysis.axis_info.AxisInfoAnalysis` of the module, for vectorised
    accesses; ``conversions``: run the upstream conversions to the LLVM dialect (else the module keeps scf / arith /
    func ops).
    """
    context = module.operation.context
    num_warps = ttg.module_int(module, ttg.NUM_WARPS, 4)
    tpw = ttg.module_int(module, ttg.THREADS_PER_WARP, 32)
    fp_fusion = options is None or options.enable_fp_fusion
    with context, ir.Location.unknown():
        out = ir.Module.create()
        funcs = {}
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func":
                funcs[_sym_name(op)] = op
        combines = _combine_symbols(module)
        symbols: dict = {}
        shared = 0
        kernel = None
        arg_types = []
        post_attrs = {}
        for name, f in funcs.items():
            if name in combines:
                continue
            public = "sym_visibility" not in f.attributes or \
                ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
            ctx = LoweringContext(target=target_info, rules=rules, module=module, out_module=out,
                                  num_warps=num_warps, options=options, enable_fp_fusion=fp_fusion,
                                  threads_per_warp=tpw, axis_info=axis_info, funcs=funcs, kernel=public,
                                  symbols=symbols)
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
                lower_block(ctx, old_block)
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
                    "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                     target_info.shared_address_space),
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
                op = op.operation
                if op.name == "llvm.func" and _sym_name(op) in post_attrs:
                    for k, v in post_attrs[_sym_name(op)].items():
                        op.attributes[k] = v
    return LoweredModule(out, kernel or "", shared, arg_types)


UPSTREAM = ("convert-scf-to-cf", "convert-math-to-llvm", "convert-arith-to-llvm", "convert-index-to-llvm",
            "convert-cf-to-llvm", "convert-func-to-llvm", "convert-nvvm-to-llvm", "reconcile-unrealized-casts")


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
        op = op.operation
        if op.name.split(".")[0] not in ("llvm", "nvvm", "rocdl", "builtin"):
            bad.append(f"'{op.name}' at {tt.loc_str(op)}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if bad:
        raise LoweringError("ops left after the conversion to the LLVM dialect: " + ", ".join(sorted(set(bad))[:10]))
