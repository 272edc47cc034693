"""Loads, stores and atomics on global memory as predicated PTX (``ld.global`` / ``st.global`` /
``atom.global``) through ``llvm.inline_asm``, vectorised up to 128 bits per thread from the layout's contiguous
registers and the axis analysis (pointer divisibility / contiguity, mask constancy), as Triton does.

Replicated elements are stored once (by their first register, in their first thread); a scalar store or atomic
is done by thread 0, and an atomic's result reaches the other threads holding its element (all of them for a
scalar) through shared memory.  fp8 and i1 values are moved as i8.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import CacheModifier, EvictionPolicy, MemSemantic, MemSyncScope, RMWOp
from tritium.lowering import LoweringError, Rules
from tritium.lowering.utils import (and_masks, atomic_registers, bit_width, broadcast_from_owner, cmpi, inline_asm,
                                    is_llvm_ptr, memory_type, owners, per_register, result_used, share_from_owners,
                                    vector_width)

RULES = Rules()

# ------------------------------------------------------------------------------------------------
# Moving values as words of PTX registers
# ------------------------------------------------------------------------------------------------


def _vec_ty(n, ty):
    return ir.VectorType.get([n], ty)


def _to_words(ctx, vals, mty, word_bits):
    """Pack ``vals`` (memory-typed scalars) into integer words of ``word_bits``."""
    n = len(vals)
    bits = bit_width(mty)
    wty = ctx.int_ty(word_bits)
    if n == 1 and bits == word_bits:
        v = vals[0]
        if is_llvm_ptr(mty):
            return [ctx.emit("llvm.ptrtoint", [v], wty)]
        return [v if isinstance(mty, ir.IntegerType) else ctx.emit("llvm.bitcast", [v], wty)]
    if n == 1 and bits < word_bits:
        iv = vals[0] if isinstance(mty, ir.IntegerType) else ctx.emit("llvm.bitcast", [vals[0]], ctx.int_ty(bits))
        return [ctx.emit("arith.extui", [iv], wty)]
    vty = _vec_ty(n, mty)
    vec = ctx.emit("llvm.mlir.poison", [], vty)
    for i, v in enumerate(vals):
        vec = ctx.emit("llvm.insertelement", [vec, v, ctx.c32(i)], vty)
    nw = n * bits // word_bits
    wv = ctx.emit("llvm.bitcast", [vec], _vec_ty(nw, wty))
    return [ctx.emit("llvm.extractelement", [wv, ctx.c32(i)], wty) for i in range(nw)]


def _from_words(ctx, words, mty, n, word_bits):
    """Inverse of :func:`_to_words`: ``n`` memory-typed scalars from integer words."""
    bits = bit_width(mty)
    wty = ctx.int_ty(word_bits)
    if n == 1 and bits == word_bits:
        w = words[0]
        if is_llvm_ptr(mty):
            return [ctx.emit("llvm.inttoptr", [w], mty)]
        return [w if isinstance(mty, ir.IntegerType) else ctx.emit("llvm.bitcast", [w], mty)]
    if n == 1 and bits < word_bits:
        iv = ctx.emit("arith.trunci", [words[0]], ctx.int_ty(bits))
        return [iv if isinstance(mty, ir.IntegerType) else ctx.emit("llvm.bitcast", [iv], mty)]
    nw = len(words)
    wvt = _vec_ty(nw, wty)
    vec = ctx.emit("llvm.mlir.poison", [], wvt)
    for i, w in enumerate(words):
        vec = ctx.emit("llvm.insertelement", [vec, w, ctx.c32(i)], wvt)
    ev = ctx.emit("llvm.bitcast", [vec], _vec_ty(n, mty))
    return [ctx.emit("llvm.extractelement", [ev, ctx.c32(i)], mty) for i in range(n)]


def _word_plan(vec, bits):
    """(word_bits, n_words, constraint letter) for a vector access of ``vec`` elements of ``bits``."""
    total = vec * bits
    if bits == 64:
        return 64, vec, "l"
    if total >= 32:
        return 32, total // 32, "r"
    return 16, 1, "h"  # 16 bits, or one 8-bit element loaded into a 16-bit register


_CACHE = {CacheModifier.CA: ".ca", CacheModifier.CG: ".cg", CacheModifier.CS: ".cs", CacheModifier.WT: ".wt",
          CacheModifier.CV: ".cv", CacheModifier.WB: ".wb"}
_EVICT = {EvictionPolicy.EVICT_FIRST: ".L1::evict_first", EvictionPolicy.EVICT_LAST: ".L1::evict_last"}


def _modifiers(cache, evict) -> str:
    return _CACHE.get(cache, "") + _EVICT.get(evict, "")


def _reject_block_pointer(ptr_ty) -> None:
    if tt.is_ptr(ptr_ty) and tt.is_tensor(tt.pointee(ptr_ty)):
        raise LoweringError("block pointers (tt.make_tensor_ptr) are not supported by the cuda lowering yet")


# ------------------------------------------------------------------------------------------------
# Rules
# ------------------------------------------------------------------------------------------------

@RULES.register("tt.load")
def _load(ctx, ptr, mask, other, *, cache=CacheModifier.NONE, evict=EvictionPolicy.NORMAL, isVolatile=False,
          **_):
    ptr_v = ctx.op.operands[0]
    mask_v = ctx.op.operands[1] if mask is not None else None
    _reject_block_pointer(ptr_v.type)
    res_ty = ctx.op.results[0].type
    n = ctx.nregs(res_ty)
    elem = tt.elem_of(res_ty)
    mty = memory_type(elem)
    fp8 = tt.is_fp8(elem)  # moved as i8 (LLVM has no fp8 types)
    if fp8:
        mty = ctx.int_ty(8)
    bits = bit_width(mty)
    ptrs = per_register(ptr, n)
    masks = per_register(mask, n) if mask is not None else None
    others = per_register(other, n) if other is not None else None
    if others is not None and fp8:
        others = [ctx.emit("arith.bitcast", [v], mty) for v in others]
    vec = vector_width(ctx, ptr_v, mask_v, bits)
    wb, nw, cl = _word_plan(vec, bits)
    wty = ctx.int_ty(wb)
    mods = "" if isVolatile else _modifiers(cache, evict)  # ld.volatile takes no cache operator
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
                ov = [ctx.emit("arith.extui", [v], mty) for v in ov]
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
        lines.append(f"{pred}ld{'.volatile' if isVolatile else ''}.global{mods}{vsuf}.{ld_ty} {dst}, [ ${nw} + 0 ];")
        # with side effects, as Triton's: LLVM takes an inline asm without them for one that reads no memory, and
        # would hoist the load out of a loop or merge it across a store to the same address
        words = inline_asm(ctx, "\n".join(lines), ",".join(cons), operands, [wty] * nw, side_effects=True)
        vals = _from_words(ctx, words, mty, vec, wb)
        if fp8:
            vals = [ctx.emit("arith.bitcast", [v], elem) for v in vals]
        if isinstance(elem, ir.IntegerType) and elem.width == 1:
            vals = [cmpi(ctx, "ne", v, ctx.const(mty, 0)) for v in vals]
        out.extend(vals)
    return [out]


@RULES.register("tt.store")
def _store(ctx, ptr, value, mask, *, cache=CacheModifier.NONE, evict=EvictionPolicy.NORMAL, **_):
    ptr_v, val_v = ctx.op.operands[0], ctx.op.operands[1]
    mask_v = ctx.op.operands[2] if mask is not None else None
    _reject_block_pointer(ptr_v.type)
    vty = val_v.type
    n = ctx.nregs(vty)
    elem = tt.elem_of(vty)
    mty = memory_type(elem)
    bits = bit_width(mty)
    ptrs = per_register(ptr, n)
    vals = per_register(value, n)
    masks = per_register(mask, n) if mask is not None else None
    if isinstance(elem, ir.IntegerType) and elem.width == 1:
        vals = [ctx.emit("arith.extui", [v], mty) for v in vals]
    if tt.is_fp8(elem):  # fp8 is stored as i8 (LLVM has no fp8 types)
        mty = ctx.int_ty(8)
        vals = [ctx.emit("arith.bitcast", [v], mty) for v in vals]
    vec = vector_width(ctx, ptr_v, mask_v, bits)
    wb, nw, cl = _word_plan(vec, bits)
    mods = _modifiers(cache, evict)
    own, uniq = owners(ctx, ptr_v.type)
    st_ty = f"b{bits if (vec == 1 and bits == 8) else wb}"
    for c in range(0, n, vec):
        if c not in uniq:
            continue
        pred = and_masks(ctx, own, masks[c] if masks is not None else None)
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
        inline_asm(ctx, f"{p}st.global{mods}{vsuf}.{st_ty} [ $0 + 0 ], {src};", ",".join(cons), operands, [],
                   side_effects=True)
    return []


_SEM = {MemSemantic.RELAXED: ".relaxed", MemSemantic.ACQUIRE: ".acquire", MemSemantic.RELEASE: ".release",
        MemSemantic.ACQUIRE_RELEASE: ".acq_rel"}
_SCOPE = {MemSyncScope.GPU: ".gpu", MemSyncScope.CTA: ".cta", MemSyncScope.SYSTEM: ".sys"}


# float max / min (fp32, fp64) as Triton lowers them: a value with its sign bit clear takes the signed integer max
# (min) of the bits, one with it set the unsigned min (max) -- the total order -NaN < -inf < .. < -0 < +0 < .. <
# +inf < +NaN, which the interpreter follows too
_FLOAT_ORDER = {"fmax32": ("max.s", "min.u"), "fmax64": ("max.s", "min.u"),
                "fmin32": ("min.s", "max.u"), "fmin64": ("min.s", "max.u")}


# bf16 atomic add before sm_90 (as Triton): compare-and-swap the 32-bit word holding the element, its half replaced
# by bf16(f32(old half) + f32(value)) (round to nearest even), until no other thread changed the word; $0 the old
# element, $1 its address, $2 the value, $3 the mask
_BF16_ADD_CAS = """{
.reg .pred %q;
.reg .b64 %wa;
.reg .b32 %old, %new, %prev, %sh, %h, %m, %fb;
.reg .f32 %fo, %fv;
.reg .b16 %hb;
mov.b16 $0, 0;
@!$3 bra bf16_add_done;
and.b64 %wa, $1, -4;
cvt.u32.u64 %sh, $1;
and.b32 %sh, %sh, 2;
shl.b32 %sh, %sh, 3;
cvt.u32.u16 %fb, $2;
shl.b32 %fb, %fb, 16;
mov.b32 %fv, %fb;
mov.b32 %m, 65535;
shl.b32 %m, %m, %sh;
not.b32 %m, %m;
ld.global.b32 %old, [%wa];
bf16_add_loop:
shr.u32 %h, %old, %sh;
shl.b32 %h, %h, 16;
mov.b32 %fo, %h;
add.rn.f32 %fo, %fo, %fv;
cvt.rn.bf16.f32 %hb, %fo;
cvt.u32.u16 %h, %hb;
shl.b32 %h, %h, %sh;
and.b32 %new, %old, %m;
or.b32 %new, %new, %h;
atom.global{sem}{scope}.cas.b32 %prev, [%wa], %old, %new;
setp.ne.b32 %q, %prev, %old;
mov.b32 %old, %prev;
@%q bra bf16_add_loop;
shr.u32 %h, %old, %sh;
cvt.u16.u32 $0, %h;
bf16_add_done:
}"""


def _native_bf16_add(ctx) -> bool:
    """``atom.add.noftz.bf16`` exists (sm_90+)."""
    return ctx.target.arch >= 90


def _atom_op(rmw: RMWOp, elem) -> str:
    """The PTX ``atom`` operation (with its type) for ``rmw`` on ``elem``."""
    f = isinstance(elem, ir.FloatType)
    bits = bit_width(elem)
    if rmw == RMWOp.AND:
        return f"and.b{bits}"
    if rmw == RMWOp.OR:
        return f"or.b{bits}"
    if rmw == RMWOp.XOR:
        return f"xor.b{bits}"
    if rmw == RMWOp.ADD:
        return f"add.u{bits}"
    if rmw == RMWOp.FADD or (rmw == RMWOp.ADD and f):
        if isinstance(elem, ir.BF16Type):
            return "add.noftz.bf16"
        return "add.noftz.f16" if bits == 16 else f"add.f{bits}"
    if rmw == RMWOp.MAX:
        return f"max.s{bits}" if not f else f"fmax{bits}"
    if rmw == RMWOp.MIN:
        return f"min.s{bits}" if not f else f"fmin{bits}"
    if rmw == RMWOp.UMAX:
        return f"max.u{bits}"
    if rmw == RMWOp.UMIN:
        return f"min.u{bits}"
    return f"exch.b{bits}"  # XCHG


def _atomic(ctx, ptr, val, cmp, mask, sem, scope, opname):
    """An ``atom`` per unique register (``cmp``: the compared values of a CAS, else None)."""
    ptr_v = ctx.op.operands[0]
    res_ty = ctx.op.results[0].type
    elem = tt.elem_of(res_ty)
    bits = bit_width(elem)
    if bits not in (16, 32, 64):
        raise LoweringError(f"atomics on {elem} are not supported")
    n, ptrs, vals, cmps, masks = atomic_registers(ctx, ptr, val, cmp, mask)
    sem = _SEM[sem]
    scope = _SCOPE[scope]
    # Triton's spelling, which tools and Triton's tests look for: atom.global.gpu.acq_rel.add, but
    # atom.global.acquire.gpu.cas (PTX takes either order)
    order = sem + scope if opname.startswith("cas.") else scope + sem
    cl = {16: "h", 32: "r", 64: "l"}[bits]
    wty = ctx.int_ty(bits)
    scalar = not tt.is_tensor(ptr_v.type)
    own, uniq = owners(ctx, ptr_v.type)
    ll = None if scalar else ctx.linear(ptr_v.type)
    out = []
    results = {}
    for r in range(n):
        if r not in uniq and not scalar:
            ix = ll.index(r)
            first = next(q for q in range(n) if ll.index(q) == ix)
            out.append(results[first])
            continue
        pred = and_masks(ctx, own, masks[r] if masks is not None else None)
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
        if opname == "add.noftz.bf16" and not _native_bf16_add(ctx):  # sm_80: a CAS loop on the 32-bit word
            text = _BF16_ADD_CAS.replace("{sem}", sem).replace("{scope}", scope)
            if pred is None:
                operands.append(ctx.const(ctx.int_ty(1), 1))
                cons.append("b")
        elif opname in _FLOAT_ORDER:  # float max / min: no such atom; the integer orderings of the bits do it
            pos_op, neg_op = _FLOAT_ORDER[opname]
            m = f"${len(operands)}" if pred is not None else None  # the mask's operand
            guard = (f"and.pred %neg, %neg, {m};\nnot.pred %pos, %neg;\nand.pred %pos, %pos, {m};\n" if m else
                     "not.pred %pos, %neg;\n")
            text = (f"{{\n.reg .pred %neg, %pos;\nsetp.lt.s{bits} %neg, $2, 0;\n{guard}mov.b{bits} $0, 0;\n"
                    f"@%pos atom.global{order}.{pos_op}{bits} $0, [ $1 + 0 ], $2;\n"
                    f"@%neg atom.global{order}.{neg_op}{bits} $0, [ $1 + 0 ], $2;\n}}")
        else:
            text = f"mov.b{bits} $0, 0;\n{p}atom.global{order}.{opname} $0, [ $1 + 0 ], {args};"
        w = inline_asm(ctx, text, ",".join(cons), operands, [wty], side_effects=True)[0]
        v = _from_words(ctx, [w], elem, 1, bits)[0]
        results[r] = v
        out.append(v)
    def store(p, v, own):  # the owner's result into shared memory, by a predicated st.shared
        inline_asm(ctx, f"@$2 st.shared.b{bits} [ $0 + 0 ], $1;", f"r,{cl},b",
                   [ctx.emit("llvm.ptrtoint", [p], ctx.i32()), _to_words(ctx, [v], elem, bits)[0], own], [],
                   side_effects=True)

    if scalar:  # thread 0's result to every thread
        return [[broadcast_from_owner(ctx, out[0], res_ty, own, store)]]
    if own is not None and result_used(ctx.op.results[0]):  # each first holder's results to the other copies
        return [share_from_owners(ctx, out, res_ty, own, store)]
    return [out]


@RULES.register("tt.atomic_rmw")
def _atomic_rmw(ctx, ptr, val, mask, *, atomic_rmw_op=RMWOp.ADD, sem=MemSemantic.ACQUIRE_RELEASE,
                scope=MemSyncScope.GPU):
    elem = tt.elem_of(ctx.op.results[0].type)
    return _atomic(ctx, ptr, val, None, mask, sem, scope, _atom_op(atomic_rmw_op, elem))


@RULES.register("tt.atomic_cas")
def _atomic_cas(ctx, ptr, cmp, val, *, sem=MemSemantic.ACQUIRE_RELEASE, scope=MemSyncScope.GPU):
    bits = bit_width(tt.elem_of(ctx.op.results[0].type))
    return _atomic(ctx, ptr, val, cmp, None, sem, scope, f"cas.b{bits}")
