"""Walk a TTGIR module and build its LLVM-dialect counterpart, one rule call per op.

``lower_module(module, target_info, rules)`` lowers every function (combine functions of reduce / scan are
inlined where they are applied, not emitted), then runs the upstream conversions to the LLVM dialect.

What a rule gets, for an op: ``rule(ctx, *operands, **params)``

* ``ctx``: the :class:`~tritium.lowering.context.LoweringContext`; ``ctx.op`` is the TTGIR op (result types,
  regions, location, the TTGIR operand values), ``ctx.target`` the :class:`~tritium.lowering.context.TargetInfo`;
* ``operands``, lowered: a tensor value is a list of scalars, one per register of its layout (register order of
  :mod:`tritium.dialects.layouts`), a scalar a list of one.  For tt / ttg ops, one entry per operand group of the
  op table (``tt.split_operands``): SINGLE -> that value's list, OPTIONAL -> the list or None, VARIADIC / MIXED ->
  a list of lists.  For other ops (arith, math, scf, func), one list per operand;
* ``params``, the op's attributes decoded: for tt / ttg ops those the op table declares, by their declared kinds
  (``tt.decode_attributes``: enums as :mod:`tritium.dialects.enums` members, ``int``, ``bool``, ``str``, symbol
  names, tuples); for other ops every attribute whose name is an identifier, integers as ``int``, strings and
  symbol references as ``str``, arrays as tuples, others (``fastmath``, dense elements) as the attribute.
  Attributes such as ``allocation.offset`` are read by ``ctx`` helpers (``ctx.scratch(op, nbytes)``).

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

from ..dialects import tt, ttg
from ..errors import CompilationError, LoweringError
from .context import LoweringContext, TargetInfo
from .utils import flat_types, regroup

#: alignment of ``@global_smem`` (bytes): the largest any buffer needs (8 x a 128-byte swizzle)
SMEM_ALIGNMENT = 1024

# ------------------------------------------------------------------------------------------------
# Decoding an op's operands and attributes
# ------------------------------------------------------------------------------------------------

_DECODERS = {
    ir.IntegerAttr: lambda a: int(a.value),
    ir.BoolAttr: lambda a: bool(a.value),
    ir.FloatAttr: lambda a: a.value,
    ir.StringAttr: lambda a: a.value,
    ir.FlatSymbolRefAttr: lambda a: a.value,
    ir.UnitAttr: lambda a: True,
    ir.TypeAttr: lambda a: a.value,
    ir.DenseI32ArrayAttr: tuple,
    ir.DenseI64ArrayAttr: tuple,
    ir.DenseBoolArrayAttr: tuple,
    ir.ArrayAttr: lambda a: tuple(decode_attribute(x) for x in a),
}
_SEGMENT_SIZES = frozenset({"operandSegmentSizes", "resultSegmentSizes"})


def decode_attribute(attr):
    """The Python value of an attribute of an op outside the op tables (see the module docstring); an attribute
    of another kind is returned as it is."""
    decode = _DECODERS.get(type(attr))
    return attr if decode is None else decode(attr)


_IN_TABLE: dict = {}  # op name -> whether the tt / ttg op tables define it


def _in_table(name: str) -> bool:
    known = _IN_TABLE.get(name)
    if known is None:
        known = _IN_TABLE[name] = tt.op_def(name) is not None or ttg.op_def(name) is not None
    return known


def decode_operands(ctx: LoweringContext, op, in_table: bool) -> list:
    """The lowered operands of ``op``: one entry per operand group of its table entry (``in_table``), else one
    per operand."""
    if not in_table:
        return [ctx.get(x) for x in op.operands]
    out = []
    for group in tt.split_operands(op):
        if group is None:
            out.append(None)
        elif isinstance(group, list):
            out.append([ctx.get(v) for v in group])
        else:
            out.append(ctx.get(group))
    return out


def decode_params(op, in_table: bool) -> dict:
    """The decoded attributes of ``op`` its rule takes as keyword arguments: those its table entry declares
    (``in_table``), else every attribute whose name is an identifier."""
    if in_table:
        return tt.decode_attributes(op)
    attrs = op.attributes
    return {n: decode_attribute(attrs[n]) for n in attrs if n.isidentifier() and n not in _SEGMENT_SIZES}



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
    in_table = _in_table(op.name)
    operands, params = decode_operands(ctx, op, in_table), decode_params(op, in_table)
    with ctx.loc:
        try:
            res = rule(ctx, *operands, **params)
        except (LoweringError, CompilationError):  # a CompilationError: the kernel's fault, at its source line
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


_FREE_OPS = ("arith.constant", "func.return", "tt.return", "scf.yield")


def combine_cost(ctx: LoweringContext, symbol: str) -> int:
    """The operations one application of the combine function ``@symbol`` emits (constants and returns left out,
    callees counted in): what a reduction weighs when it chooses how to combine its warps' partials."""
    f = ctx.funcs.get(symbol)
    if f is None:
        return 1
    n = 0

    def visit(op):
        nonlocal n
        op = op.operation
        if op.name in ("func.call", "tt.call") and "callee" in op.attributes:
            n += combine_cost(ctx, ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        elif op.name not in _FREE_OPS and op.name != "func.func":
            n += 1
        return ir.WalkResult.ADVANCE

    f.operation.walk(visit)
    return max(n, 1)


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
        # bracketed scratch goes past every buffer the allocation analysis placed (ttg.shared is the end of the
        # last one, whatever its alignment)
        allocated = ttg.module_int(module, "ttg.shared", 0) or 0
        bracket_base = (allocated + 15) // 16 * 16
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
                                  symbols=symbols, bracket_base=bracket_base)
            fty = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
            ins, outs = flat_types(ctx, fty.inputs), flat_types(ctx, fty.results)
            n_ins = len(ins)
            # a kernel whose module needs global scratch (tensor maps made on the device) takes its base last,
            # after the runtime arguments (the launcher allocates it: metadata global_scratch_size)
            if public and ttg.module_int(module, ttg.GLOBAL_SCRATCH_SIZE, 0):
                ins = ins + [ir.Type.parse("!llvm.ptr<1>")]
            attrs = {"sym_name": ir.StringAttr.get(name),
                     "function_type": ir.TypeAttr.get(ir.FunctionType.get(ins, outs))}
            if not public:
                attrs["sym_visibility"] = ir.StringAttr.get("private")
            else:
                post_attrs[name] = dict(kernel_attrs(ctx, name)) if kernel_attrs is not None else {}
                arg_attrs = [target_info.kernel_arg_attrs(t) for t in fty.inputs]
                if any(arg_attrs) and n_ins == len(arg_attrs):  # on the llvm.func, a kernel by then
                    arg_attrs += [{}] * (len(ins) - n_ins)
                    post_attrs[name]["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in arg_attrs])
            with ir.InsertionPoint(out.body), f.location:
                nf = ir.Operation.create("func.func", attributes=attrs, regions=1)
            block = ir.Block.create_at_start(nf.regions[0], ins)
            ctx.entry_block = block
            if len(ins) > n_ins:
                ctx.global_scratch = block.arguments[n_ins]
            old_block = f.regions[0].blocks[0]
            for a, vals in zip(old_block.arguments, regroup(ctx, list(fty.inputs), list(block.arguments)[:n_ins])):
                ctx.set(a, vals)
            with ir.InsertionPoint(block):
                lower_block(ctx, old_block)
            shared = max(shared, ctx.shared_bytes)
            if public:
                kernel = kernel or name
                if kernel == name:
                    arg_types = [str(t) for t in ins[:n_ins]]
        if shared:
            with ir.InsertionPoint.at_block_begin(out.body):
                ir.Operation.create("llvm.mlir.global", attributes={
                    "sym_name": ir.StringAttr.get("global_smem"),
                    "global_type": ir.TypeAttr.get(ir.Type.parse("!llvm.array<0 x i8>")),
                    "linkage": ir.Attribute.parse("#llvm.linkage<external>"),
                    "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                     target_info.shared_address_space),
                    # 1024: a 128B-swizzled buffer (allocation aligns it to 1024 bytes into @global_smem) starts on
                    # its swizzle pattern, as wgmma descriptors / TMA expect
                    "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), SMEM_ALIGNMENT),
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
        if "llvm.loop_annotation" in op.attributes:  # scf-to-cf's copy of a loop's annotation: the branch's own
            op.attributes["loop_annotation"] = op.attributes["llvm.loop_annotation"]
            del op.attributes["llvm.loop_annotation"]
        if op.name.split(".")[0] not in ("llvm", "nvvm", "rocdl", "builtin"):
            bad.append(f"'{op.name}' at {tt.loc_str(op)}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if bad:
        raise LoweringError("ops left after the conversion to the LLVM dialect: " + ", ".join(sorted(set(bad))[:10]))
