"""NVIDIA lowering rules (backend ``cuda``) and the CUDA ``TargetInfo``.

Memory accesses are predicated PTX (``ld.global`` / ``st.global`` / ``atom.global``) through
``llvm.inline_asm``, vectorised up to 128 bits per thread from the layout's contiguous registers and the axis
analysis (pointer divisibility / contiguity, mask constancy), as Triton does.  Math goes to libdevice
(``__nv_*``; the ``llir`` stage links it when referenced), with Triton's fast paths (``exp`` as ``ex2.approx``
of ``x * log2(e)`` for f32).
"""
from __future__ import annotations

import math

from mlir import ir

from tritium.dialects import tt
from tritium.lowering import LoweringError, register
from tritium.lowering.context import TargetInfo, is_tensor, scalar_type
from tritium.lowering.rules import elementwise, memory_type, operand_values, owner_predicate

B = "cuda"


class CUDATargetInfo(TargetInfo):
    name = "cuda"

    def __init__(self, arch: int = 90):
        self.arch = arch

    def _sreg(self, ctx, name):
        return ctx.op1(f"nvvm.read.ptx.sreg.{name}", [], ctx.i32())

    def thread_id(self, ctx):
        return self._sreg(ctx, "tid.x")

    def program_id(self, ctx, axis):
        return self._sreg(ctx, "ctaid." + "xyz"[axis])

    def num_programs(self, ctx, axis):
        return self._sreg(ctx, "nctaid." + "xyz"[axis])

    def shuffle_xor(self, ctx, value, mask):
        return asm(ctx, f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, 0xffffffff;", "=r,r", [value], [ctx.i32()])[0]

    def shuffle_idx(self, ctx, value, src_lane):
        """``value`` (i32) of lane ``src_lane`` (an i32 value)."""
        return asm(ctx, "shfl.sync.idx.b32 $0, $1, $2, 0x1f, 0xffffffff;", "=r,r,r", [value, src_lane],
                   [ctx.i32()])[0]

    def barrier(self, ctx):
        ctx.op("nvvm.barrier0", [])


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------

def asm(ctx, text: str, constraints: str, operands, result_types, side_effects: bool = False) -> list:
    """``llvm.inline_asm``; returns the result values (a struct is unpacked)."""
    attrs = {"asm_string": ir.StringAttr.get(text), "constraints": ir.StringAttr.get(constraints)}
    if side_effects:
        attrs["has_side_effects"] = ir.UnitAttr.get()
    if not result_types:
        ctx.op("llvm.inline_asm", operands, [], attrs)
        return []
    if len(result_types) == 1:
        return [ctx.op1("llvm.inline_asm", operands, result_types[0], attrs)]
    st = ir.Type.parse("!llvm.struct<(" + ", ".join(str(t) for t in result_types) + ")>")
    s = ctx.op1("llvm.inline_asm", operands, st, attrs)
    return [ctx.op1("llvm.extractvalue", [s], t, {"position": ir.DenseI64ArrayAttr.get([i])})
            for i, t in enumerate(result_types)]


def _bits(ty) -> int:
    if isinstance(ty, ir.IntegerType):
        return ty.width
    if isinstance(ty, ir.FloatType):
        return ty.width
    if str(ty).startswith("!llvm.ptr"):
        return 64
    raise LoweringError(f"no bit width for {ty}")


def _vec_ty(n, ty):
    return ir.VectorType.get([n], ty)


def _to_words(ctx, vals, mty, word_bits):
    """Pack ``vals`` (memory-typed scalars) into integer words of ``word_bits``."""
    n = len(vals)
    bits = _bits(mty)
    wty = ctx.int_ty(word_bits)
    if n == 1 and bits == word_bits:
        v = vals[0]
        if str(mty).startswith("!llvm.ptr"):
            return [ctx.op1("llvm.ptrtoint", [v], wty)]
        return [v if isinstance(mty, ir.IntegerType) else ctx.op1("llvm.bitcast", [v], wty)]
    if n == 1 and bits < word_bits:
        iv = vals[0] if isinstance(mty, ir.IntegerType) else ctx.op1("llvm.bitcast", [vals[0]], ctx.int_ty(bits))
        return [ctx.op1("arith.extui", [iv], wty)]
    vty = _vec_ty(n, mty)
    vec = ctx.op1("llvm.mlir.poison", [], vty)
    for i, v in enumerate(vals):
        vec = ctx.op1("llvm.insertelement", [vec, v, ctx.c32(i)], vty)
    nw = n * bits // word_bits
    wv = ctx.op1("llvm.bitcast", [vec], _vec_ty(nw, wty))
    return [ctx.op1("llvm.extractelement", [wv, ctx.c32(i)], wty) for i in range(nw)]


def _from_words(ctx, words, mty, n, word_bits):
    bits = _bits(mty)
    wty = ctx.int_ty(word_bits)
    if n == 1 and bits == word_bits:
        w = words[0]
        if str(mty).startswith("!llvm.ptr"):
            return [ctx.op1("llvm.inttoptr", [w], mty)]
        return [w if isinstance(mty, ir.IntegerType) else ctx.op1("llvm.bitcast", [w], mty)]
    if n == 1 and bits < word_bits:
        iv = ctx.op1("arith.trunci", [words[0]], ctx.int_ty(bits))
        return [iv if isinstance(mty, ir.IntegerType) else ctx.op1("llvm.bitcast", [iv], mty)]
    nw = len(words)
    wvt = _vec_ty(nw, wty)
    vec = ctx.op1("llvm.mlir.poison", [], wvt)
    for i, w in enumerate(words):
        vec = ctx.op1("llvm.insertelement", [vec, w, ctx.c32(i)], wvt)
    ev = ctx.op1("llvm.bitcast", [vec], _vec_ty(n, mty))
    return [ctx.op1("llvm.extractelement", [ev, ctx.c32(i)], mty) for i in range(n)]


def _word_plan(vec, bits):
    """(word_bits, n_words, constraint letter) for a vector access of ``vec`` elements of ``bits``."""
    total = vec * bits
    if bits == 64:
        return 64, vec, "l"
    if total >= 32:
        return 32, total // 32, "r"
    if total == 16:
        return 16, 1, "h"
    return 16, 1, "h"  # 8-bit: loaded into a 16-bit register


_CACHE = {2: ".ca", 3: ".cg", 5: ".cs", 6: ".wt", 7: ".cv"}
_EVICT = {2: ".L1::evict_first", 3: ".L1::evict_last"}


def _int_attr(op, name, default=0):
    if name not in op.attributes:
        return default
    a = op.attributes[name]
    try:
        return int(ir.IntegerAttr(a).value)
    except ValueError:
        return int(ir.BoolAttr(a).value)


def _groups(op):
    """Operand groups of tt.load / tt.store / tt.atomic_rmw (the table decides whether segment sizes exist)."""
    return tt.operand_groups(op)


def vector_width(ctx, ptr, mask, elem_bits) -> int:
    """Elements per vector access for a tensor of pointers (1 without axis information)."""
    if not is_tensor(ptr.type) or ctx.axis_info is None:
        return 1
    ll = ctx.linear(ptr.type)
    order = list(ctx.layout(ptr.type).order)
    from tritium.dialects.layouts import _contig_regs

    per_thread = _contig_regs(ll, order[0])
    try:
        v = int(ctx.axis_info.vector_width(ptr, mask, per_thread, elem_bits, order))
    except Exception:
        return 1
    v = max(1, min(v, per_thread, max(1, 128 // elem_bits)))
    while v & (v - 1):
        v &= v - 1
    return v


def _and(ctx, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ctx.op1("arith.andi", [a, b], a.type)


def _unique_regs(ll) -> set:
    seen, out = set(), set()
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix not in seen:
            seen.add(ix)
            out.add(r)
    return out


# ------------------------------------------------------------------------------------------------
# memory
# ------------------------------------------------------------------------------------------------

@register("tt.load", backend=B)
def _load(ctx, op):
    g = _groups(op)
    ptr = g["ptr"][0]
    mask = g["mask"][0] if g.get("mask") else None
    other = g["other"][0] if g.get("other") else None
    if tt.is_ptr(ptr.type) and tt.is_tensor(tt.pointee(ptr.type)):
        raise LoweringError("block pointers (tt.make_tensor_ptr) are not supported by the cuda lowering yet")
    res_ty = op.results[0].type
    n = ctx.nregs(res_ty)
    elem = tt.elem_of(res_ty)
    mty = memory_type(elem)
    sty = scalar_type(elem)
    fp8 = isinstance(elem, ir.FloatType) and elem.width == 8  # moved as i8 (LLVM has no fp8 types)
    if fp8:
        mty = ctx.int_ty(8)
    bits = _bits(mty)
    ptrs = ctx.get(ptr) * (n if len(ctx.get(ptr)) == 1 else 1)
    masks = (ctx.get(mask) * (n if len(ctx.get(mask)) == 1 else 1)) if mask is not None else None
    others = (ctx.get(other) * (n if len(ctx.get(other)) == 1 else 1)) if other is not None else None
    if others is not None and fp8:
        others = [ctx.op1("arith.bitcast", [v], mty) for v in others]
    vec = vector_width(ctx, ptr, mask, bits)
    wb, nw, cl = _word_plan(vec, bits)
    wty = ctx.int_ty(wb)
    mods = _CACHE.get(_int_attr(op, "cache", 1), "") + _EVICT.get(_int_attr(op, "evict", 1), "")
    ld_ty = f"b{bits if (vec == 1 and bits == 8) else wb}"
    out = []
    for c in range(0, n, vec):
        operands = [ptrs[c]]
        lines = []
        cons = [f"={cl}"] * nw + ["l"]
        if masks is not None:
            operands.append(masks[c])
            cons.append("b")
        if others is not None:
            ov = [others[c + i] for i in range(vec)]
            if isinstance(elem, ir.IntegerType) and elem.width == 1:
                ov = [ctx.op1("arith.extui", [v], mty) for v in ov]
            words = _to_words(ctx, ov, mty, wb)
            base = len(operands) + nw
            for i, w in enumerate(words):
                lines.append(f"mov.b{wb} ${i}, ${base + i};")
            operands.extend(words)
            cons.extend([cl] * nw)
        elif masks is not None:
            for i in range(nw):
                lines.append(f"mov.b{wb} ${i}, 0;")
        vsuf = f".v{nw}" if nw > 1 else ""
        dst = "{ " + ", ".join(f"${i}" for i in range(nw)) + " }" if nw > 1 else "$0"
        pred = f"@${nw + 1} " if masks is not None else ""
        lines.append(f"{pred}ld.global{mods}{vsuf}.{ld_ty} {dst}, [ ${nw} + 0 ];")
        words = asm(ctx, "\n".join(lines), ",".join(cons), operands, [wty] * nw, side_effects=bool(_int_attr(op, "isVolatile", 0)))
        vals = _from_words(ctx, words, mty, vec, wb)
        if fp8:
            vals = [ctx.op1("arith.bitcast", [v], elem) for v in vals]
        if isinstance(elem, ir.IntegerType) and elem.width == 1:
            vals = [ctx.op1("arith.cmpi", [v, ctx.const(mty, 0)], sty,
                            {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 1)}) for v in vals]
        out.extend(vals)
    return [out]


@register("tt.store", backend=B)
def _store(ctx, op):
    g = _groups(op)
    ptr, val = g["ptr"][0], g["value"][0]
    mask = g["mask"][0] if g.get("mask") else None
    if tt.is_ptr(ptr.type) and tt.is_tensor(tt.pointee(ptr.type)):
        raise LoweringError("block pointers (tt.make_tensor_ptr) are not supported by the cuda lowering yet")
    vty = val.type
    n = ctx.nregs(vty)
    elem = tt.elem_of(vty)
    mty = memory_type(elem)
    bits = _bits(mty)
    ptrs = ctx.get(ptr) * (n if len(ctx.get(ptr)) == 1 else 1)
    vals = ctx.get(val) * (n if len(ctx.get(val)) == 1 else 1)
    masks = (ctx.get(mask) * (n if len(ctx.get(mask)) == 1 else 1)) if mask is not None else None
    if isinstance(elem, ir.IntegerType) and elem.width == 1:
        vals = [ctx.op1("arith.extui", [v], mty) for v in vals]
    if isinstance(elem, ir.FloatType) and elem.width == 8:  # fp8 is stored as i8 (LLVM has no fp8 types)
        mty = ctx.int_ty(8)
        vals = [ctx.op1("arith.bitcast", [v], mty) for v in vals]
    vec = vector_width(ctx, ptr, mask, bits)
    wb, nw, cl = _word_plan(vec, bits)
    mods = _CACHE.get(_int_attr(op, "cache", 1), "") + _EVICT.get(_int_attr(op, "evict", 1), "")
    if is_tensor(ptr.type):
        ll = ctx.linear(ptr.type)
        own = owner_predicate(ctx, ll)
        uniq = _unique_regs(ll)
    else:
        ll = None
        # a scalar store: one thread does it
        own = ctx.op1("arith.cmpi", [ctx.thread_id(), ctx.c32(0)], ir.IntegerType.get_signless(1),
                      {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 0)})
        uniq = {0}
    st_ty = f"b{bits if (vec == 1 and bits == 8) else wb}"
    for c in range(0, n, vec):
        if c not in uniq:
            continue
        pred = _and(ctx, own, masks[c] if masks is not None else None)
        words = _to_words(ctx, vals[c:c + vec], mty, wb)
        operands = [ptrs[c]] + words
        cons = ["l"] + [cl] * nw
        p = ""
        if pred is not None:
            operands.append(pred)
            cons.append("b")
            p = f"@${nw + 1} "
        src = "{ " + ", ".join(f"${i + 1}" for i in range(nw)) + " }" if nw > 1 else "$1"
        vsuf = f".v{nw}" if nw > 1 else ""
        asm(ctx, f"{p}st.global{mods}{vsuf}.{st_ty} [ $0 + 0 ], {src};", ",".join(cons), operands, [],
            side_effects=True)
    return []


_SEM = {1: ".relaxed", 2: ".acquire", 3: ".release", 4: ".acq_rel"}
_SCOPE = {1: ".gpu", 2: ".cta", 3: ".sys"}


def _atom_op(code, elem):
    f = isinstance(elem, ir.FloatType)
    bits = _bits(elem)
    if code == 1:
        return f"and.b{bits}"
    if code == 2:
        return f"or.b{bits}"
    if code == 3:
        return f"xor.b{bits}"
    if code == 4:
        return f"add.u{bits}" if not f else f"add.f{bits}"
    if code == 5:
        return f"add.f{bits}" if not (isinstance(elem, ir.BF16Type)) else "add.noftz.bf16"
    if code == 6:
        return f"max.s{bits}" if not f else f"max.f{bits}"
    if code == 7:
        return f"min.s{bits}" if not f else f"min.f{bits}"
    if code == 8:
        return f"max.u{bits}"
    if code == 9:
        return f"min.u{bits}"
    if code == 10:
        return f"exch.b{bits}"
    raise LoweringError(f"unknown atomic_rmw_op {code}")


def _atomic(ctx, op, cas: bool):
    if cas:
        ptr, cmp, val = op.operands
        mask = None
    else:
        g = _groups(op)
        ptr, val = g["ptr"][0], g["val"][0]
        cmp = None
        mask = g["mask"][0] if g.get("mask") else None
    res_ty = op.results[0].type
    elem = tt.elem_of(res_ty)
    bits = _bits(elem)
    if bits not in (16, 32, 64):
        raise LoweringError(f"atomics on {elem} are not supported")
    n = ctx.nregs(res_ty)
    ptrs = ctx.get(ptr) * (n if len(ctx.get(ptr)) == 1 else 1)
    vals = ctx.get(val) * (n if len(ctx.get(val)) == 1 else 1)
    cmps = (ctx.get(cmp) * (n if len(ctx.get(cmp)) == 1 else 1)) if cmp is not None else None
    masks = (ctx.get(mask) * (n if len(ctx.get(mask)) == 1 else 1)) if mask is not None else None
    sem = _SEM.get(_int_attr(op, "sem", 4), ".acq_rel")
    scope = _SCOPE.get(_int_attr(op, "scope", 1), ".gpu")
    opname = f"cas.b{bits}" if cas else _atom_op(_int_attr(op, "atomic_rmw_op", 4), elem)
    cl = {16: "h", 32: "r", 64: "l"}[bits]
    wty = ctx.int_ty(bits)
    scalar = not is_tensor(ptr.type)
    if scalar:
        own = ctx.op1("arith.cmpi", [ctx.thread_id(), ctx.c32(0)], ir.IntegerType.get_signless(1),
                      {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 0)})
        uniq = {0}
    else:
        ll = ctx.linear(ptr.type)
        own = owner_predicate(ctx, ll)
        uniq = _unique_regs(ll)
    out = []
    results = {}
    for r in range(n):
        if r not in uniq and not scalar:
            ix = ctx.linear(ptr.type).index(r)
            first = next(q for q in range(n) if ctx.linear(ptr.type).index(q) == ix)
            out.append(results[first])
            continue
        pred = _and(ctx, own, masks[r] if masks is not None else None)
        operands = [ptrs[r]]
        cons = [f"={cl}", "l"]
        ins = [vals[r]] if cmps is None else [cmps[r], vals[r]]
        for v in ins:
            operands.append(_to_words(ctx, [v], elem, bits)[0])
            cons.append(cl)
        p = ""
        if pred is not None:
            operands.append(pred)
            cons.append("b")
            p = f"@${len(operands)} "
        args = ", ".join(f"${i + 2}" for i in range(len(ins)))
        text = f"mov.b{bits} $0, 0;\n{p}atom{sem}{scope}.global.{opname} $0, [ $1 + 0 ], {args};"
        w = asm(ctx, text, ",".join(cons), operands, [wty], side_effects=True)[0]
        v = _from_words(ctx, [w], elem, 1, bits)[0]
        results[r] = v
        out.append(v)
    if scalar:
        # broadcast thread 0's result to every thread
        from tritium.lowering.rules import _smem_elem

        sty, to_s, from_s, nbytes = _smem_elem(ctx, res_ty)
        buf = ctx.scratch(op, nbytes)
        p = ctx.smem_ptr(ctx.c32(0), sty, buf.base)
        # a predicated shared store (st.shared) keeps this branch-free
        asm(ctx, f"@$2 st.shared.b{bits} [ $0 + 0 ], $1;", f"r,{cl},b",
            [ctx.op1("llvm.ptrtoint", [p], ctx.i32()), _to_words(ctx, [out[0]], elem, bits)[0], own], [],
            side_effects=True)
        ctx.barrier()
        v = from_s(ctx.op1("llvm.load", [p], sty))
        ctx.release(buf)
        return [[v]]
    return [out]


@register("tt.atomic_rmw", backend=B)
def _atomic_rmw(ctx, op):
    return _atomic(ctx, op, False)


@register("tt.atomic_cas", backend=B)
def _atomic_cas(ctx, op):
    return _atomic(ctx, op, True)


# ------------------------------------------------------------------------------------------------
# math
# ------------------------------------------------------------------------------------------------

LOG2E = 1.4426950408889634

_LIBDEVICE = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
    "math.log1p": "log1p", "math.expm1": "expm1", "math.sin": "sin", "math.cos": "cos", "math.tan": "tan",
    "math.tanh": "tanh", "math.sinh": "sinh", "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos",
    "math.atan": "atan", "math.atan2": "atan2", "math.erf": "erf", "math.rsqrt": "rsqrt", "math.powf": "pow",
    "math.cbrt": "cbrt", "math.asinh": "asinh", "math.acosh": "acosh", "math.atanh": "atanh",
    "math.erfc": "erfc",
}


def declare(ctx, name: str, arg_types, result_type) -> None:
    """A ``func.func private @name`` declaration in the output module (once)."""
    key = ("decl", name)
    if ctx.cache.get(key):
        return
    body = ctx.out_module.body
    for op in body.operations:
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            ctx.cache[key] = True
            return
    with ir.InsertionPoint.at_block_begin(body):
        ir.Operation.create("func.func", attributes={
            "sym_name": ir.StringAttr.get(name), "sym_visibility": ir.StringAttr.get("private"),
            "function_type": ir.TypeAttr.get(ir.FunctionType.get(list(arg_types),
                                                                 [] if result_type is None else [result_type]))},
            regions=1)
    ctx.cache[key] = True


def call(ctx, name, args, result_type):
    declare(ctx, name, [a.type for a in args], result_type)
    return ctx.op1("func.call", args, result_type, {"callee": ir.FlatSymbolRefAttr.get(name)})


def _math_scalar(ctx, opname, args, ty):
    f32 = ir.F32Type.get()
    if isinstance(ty, (ir.F16Type, ir.BF16Type)):
        wide = [ctx.op1("arith.extf", [a], f32) for a in args]
        return ctx.op1("arith.truncf", [_math_scalar(ctx, opname, wide, f32)], ty)
    if isinstance(ty, ir.F32Type) and opname == "math.exp":
        x = ctx.op1("arith.mulf", [args[0], ctx.const(f32, LOG2E)], f32)
        return asm(ctx, "ex2.approx.f32 $0, $1;", "=f,f", [x], [f32])[0]
    if isinstance(ty, ir.F32Type) and opname == "math.exp2":
        return asm(ctx, "ex2.approx.f32 $0, $1;", "=f,f", [args[0]], [f32])[0]
    base = _LIBDEVICE[opname]
    suffix = "f" if isinstance(ty, ir.F32Type) else ""
    if not isinstance(ty, (ir.F32Type, ir.F64Type)):
        raise LoweringError(f"{opname} on {ty} is not supported")
    return call(ctx, f"__nv_{base}{suffix}", list(args), ty)


@register(*_LIBDEVICE, backend=B)
def _math(ctx, op):
    res_ty = op.results[0].type
    n = ctx.nregs(res_ty)
    ops = operand_values(ctx, op, n)
    ty = scalar_type(res_ty)
    return [[_math_scalar(ctx, op.name, [o[i] for o in ops], ty) for i in range(n)]]


@register("tt.extern_elementwise", backend=B)
def _extern(ctx, op):
    sym = ir.StringAttr(op.attributes["symbol"]).value
    res_ty = op.results[0].type
    n = ctx.nregs(res_ty)
    ops = operand_values(ctx, op, n)
    ty = scalar_type(res_ty)
    return [[call(ctx, sym, [o[i] for o in ops], ty) for i in range(n)]]


@register("arith.divf", backend=B)
def _divf(ctx, op):
    # Triton's default f32 division is the full-range approximate one (div.full.f32); precise_divf is exact
    ty = scalar_type(op.results[0].type)
    if not isinstance(ty, ir.F32Type):
        return elementwise(ctx, op)
    n = ctx.nregs(op.results[0].type)
    x, y = operand_values(ctx, op, n)
    return [[asm(ctx, "div.full.f32 $0, $1, $2;", "=f,f,f", [x[i], y[i]], [ty])[0] for i in range(n)]]


# ------------------------------------------------------------------------------------------------
# debugging
# ------------------------------------------------------------------------------------------------

def _global_string(ctx, text: str) -> str:
    """A private constant global holding ``text`` NUL-terminated; returns its symbol."""
    key = ("str", text)
    if key in ctx.cache:
        return ctx.cache[key]
    name = f"printf_fmt_{len([k for k in ctx.cache if isinstance(k, tuple) and k[0] == 'str'])}_{abs(hash(text)) % 100000}"
    data = text.encode() + b"\0"
    aty = ir.Type.parse(f"!llvm.array<{len(data)} x i8>")
    with ir.InsertionPoint.at_block_begin(ctx.out_module.body):
        ir.Operation.create("llvm.mlir.global", attributes={
            "sym_name": ir.StringAttr.get(name), "global_type": ir.TypeAttr.get(aty),
            "linkage": ir.Attribute.parse("#llvm.linkage<internal>"), "constant": ir.UnitAttr.get(),
            "value": ir.StringAttr.get(data.decode("latin-1")),
            "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)}, regions=1)
    ctx.cache[key] = name
    return name


def _addr_of(ctx, name):
    return ctx.op1("llvm.mlir.addressof", [], ir.Type.parse("!llvm.ptr"), {"global_name": ir.FlatSymbolRefAttr.get(name)})


def vprintf(ctx, fmt: str, args: list) -> None:
    ptr = ir.Type.parse("!llvm.ptr")
    fmt_ptr = _addr_of(ctx, _global_string(ctx, fmt))
    if args:
        st = ir.Type.parse("!llvm.struct<(" + ", ".join(str(a.type) for a in args) + ")>")
        one = ctx.const(ctx.int_ty(64), 1)
        buf = ctx.op1("llvm.alloca", [one], ptr, {"elem_type": ir.TypeAttr.get(st),
                                                  "alignment": ir.IntegerAttr.get(ctx.int_ty(64), 8)})
        for i, a in enumerate(args):
            p = ctx.op1("llvm.getelementptr", [buf], ptr, {"rawConstantIndices": ir.DenseI32ArrayAttr.get([0, i]),
                                                           "elem_type": ir.TypeAttr.get(st)})
            ctx.op("llvm.store", [a, p])
    else:
        buf = ctx.op1("llvm.mlir.zero", [], ptr)
    call(ctx, "vprintf", [fmt_ptr, buf], ctx.i32())


def _print_arg(ctx, v, hex_: bool, signed: bool):
    ty = v.type
    if isinstance(ty, ir.FloatType):
        f64 = ir.F64Type.get()
        return (ctx.op1("arith.extf", [v], f64) if ty.width < 64 else v), ("%a" if hex_ else "%f")
    if str(ty).startswith("!llvm.ptr"):
        return v, "%p"
    w = ty.width
    if w < 32:
        v = ctx.op1("arith.extsi" if signed and w > 1 else "arith.extui", [v], ctx.i32())
        w = 32
    if w == 32:
        return v, ("0x%x" if hex_ else ("%d" if signed else "%u"))
    return v, ("0x%llx" if hex_ else ("%lld" if signed else "%llu"))


@register("tt.print", backend=B)
def _print(ctx, op):
    prefix = ir.StringAttr(op.attributes["prefix"]).value if "prefix" in op.attributes else ""
    hex_ = bool(_int_attr(op, "hex", 0))
    signed_attr = list(op.attributes["isSigned"]) if "isSigned" in op.attributes else []
    pids = [ctx.target.program_id(ctx, a) for a in range(3)]
    args = list(op.operands)
    if not args:
        vprintf(ctx, f"pid ({'%u, %u, %u'}) {prefix}\n", pids)
        return []
    for k, a in enumerate(args):
        sa = signed_attr[k] if k < len(signed_attr) else 1
        signed = bool(sa if isinstance(sa, int) else int(ir.IntegerAttr(sa).value))
        vals = ctx.get(a)
        if is_tensor(a.type):
            idx = ctx.indices(a.type)
            uniq = _unique_regs(ctx.linear(a.type))
        else:
            idx, uniq = [()], {0}
        for r, v in enumerate(vals):
            if r not in uniq:
                continue
            pv, spec = _print_arg(ctx, v, hex_, signed)
            ix = list(idx[r])
            fmt = "pid (%u, %u, %u) idx (" + ", ".join(["%u"] * len(ix)) + f") {prefix}"
            if len(args) > 1:
                fmt += f"(operand {k}) "
            fmt += spec + "\n"
            vprintf(ctx, fmt, pids + ix + [pv])
    return []


@register("tt.assert", backend=B)
def _assert(ctx, op):
    msg = ir.StringAttr(op.attributes["message"]).value if "message" in op.attributes else "assertion failed"
    loc = str(op.location)
    file, line = "<unknown>", 0
    import re

    m = re.search(r'"([^"]*)":(\d+)', loc)
    if m:
        file, line = m.group(1), int(m.group(2))
    cond_vals = ctx.get(op.operands[0])
    # any false element -> __assertfail
    ok = cond_vals[0]
    for c in cond_vals[1:]:
        ok = ctx.op1("arith.andi", [ok, c], ok.type)
    fail = ctx.op1("arith.xori", [ok, ctx.const(ok.type, 1)], ok.type)
    ifop = ctx.op("scf.if", [fail], [], regions=2)
    blk = ir.Block.create_at_start(ifop.regions[0], [])
    with ir.InsertionPoint(blk):
        m_ptr = _addr_of(ctx, _global_string(ctx, msg))
        f_ptr = _addr_of(ctx, _global_string(ctx, file))
        fn_ptr = _addr_of(ctx, _global_string(ctx, "kernel"))
        one = ctx.const(ctx.int_ty(64), 1)
        declare(ctx, "__assertfail", [m_ptr.type, f_ptr.type, ctx.i32(), fn_ptr.type, one.type], None)
        ctx.op("func.call", [m_ptr, f_ptr, ctx.c32(line), fn_ptr, one], [],
               {"callee": ir.FlatSymbolRefAttr.get("__assertfail")})
        ctx.op("scf.yield", [])
    return []


from . import rules_extra  # noqa: E402,F401  (fp8 conversions, inline asm)
