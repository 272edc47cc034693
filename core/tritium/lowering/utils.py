"""Helpers shared by the lowering rules (generic and backend ones): types, per-register values, shared memory,
shuffles, inline asm, declarations and constant globals.

Conventions (see :mod:`tritium.lowering.walker`): a tensor value is a list of scalars, one per register of its
layout; a scalar is a list of one.  Helpers emit at the context's insertion point with its location.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

from mlir import ir

from ..dialects import layouts, tt
from ..dialects.tt import source_of
from ..passes.ir_helpers import has_uses as result_used  # noqa: F401  (an atomic's old value used?)
from ..errors import CompilationError, LoweringError

log = logging.getLogger(__name__)

DYNAMIC_INDEX = -2147483648  # a ``rawConstantIndices`` entry that stands for the next dynamic index operand


# ------------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------------

def scalar_type(ty):
    """The LLVM-dialect-compatible scalar type of a TTGIR (element) type: pointers become ``!llvm.ptr<1>``, tensor
    descriptors (TMA tensor maps) ``!llvm.ptr``, ``index`` becomes ``i64``."""
    t = tt.elem_of(ty)
    if tt.is_ptr(t):
        return ir.Type.parse("!llvm.ptr<1>", t.context)
    if tt.is_tensordesc(t):  # a TMA tensor map: the generic address of the parameter holding it
        return ir.Type.parse("!llvm.ptr", t.context)
    if isinstance(t, ir.IndexType):
        return ir.IntegerType.get_signless(64, t.context)
    return t


def memory_type(ty):
    """How an element type is stored in memory: i1 and fp8 as i8 (LLVM has no fp8 types), pointers as pointers,
    the rest as is."""
    if tt.is_ptr(ty):
        return ir.Type.parse("!llvm.ptr<1>", ty.context)
    if isinstance(ty, ir.IntegerType) and ty.width == 1:
        return ir.IntegerType.get_signless(8, ty.context)
    if tt.is_fp8(ty):
        return ir.IntegerType.get_signless(8, ty.context)
    return ty


def is_llvm_ptr(ty) -> bool:
    return str(ty).startswith("!llvm.ptr")


def bit_width(ty) -> int:
    """Bits of a scalar LLVM-dialect type (pointers: 64)."""
    if isinstance(ty, (ir.IntegerType, ir.FloatType)):
        return ty.width
    if is_llvm_ptr(ty):
        return 64
    raise LoweringError(f"no bit width for {ty}")


def flat_types(ctx, types) -> list:
    """The scalar types of ``types`` flattened: a tensor type gives one scalar type per register."""
    out = []
    for t in types:
        out.extend([scalar_type(t)] * ctx.nregs(t))
    return out


def regroup(ctx, types, flat) -> list:
    """Inverse of :func:`flat_types` on values: ``flat`` cut into one list per type of ``types``."""
    out, pos = [], 0
    for t in types:
        n = ctx.nregs(t)
        out.append(list(flat[pos:pos + n]))
        pos += n
    return out


# ------------------------------------------------------------------------------------------------
# Per-register values
# ------------------------------------------------------------------------------------------------

def per_register(vals: list, n: int) -> list:
    """``vals`` for ``n`` registers: a scalar operand (one value) repeated, a tensor's as they are."""
    return vals * n if len(vals) == 1 and n != 1 else vals


def atomic_registers(ctx, ptr, val, cmp, mask):
    """An atomic's operands per register of its result: ``(n, ptrs, vals, cmps, masks)`` (``cmps`` / ``masks`` None
    when the op has none)."""
    n = ctx.nregs(ctx.op.results[0].type)
    return (n, per_register(ptr, n), per_register(val, n), per_register(cmp, n) if cmp is not None else None,
            per_register(mask, n) if mask is not None else None)


def elementwise(ctx, name: str, operands, attrs=None) -> list:
    """``name`` emitted register by register over ``operands`` (per-register value lists, scalars repeated),
    with the type of ``ctx.op``'s result; returns the one result's values (``[values]``)."""
    res_ty = ctx.op.results[0].type
    n = ctx.nregs(res_ty)
    ops = [per_register(o, n) for o in operands]
    sty = scalar_type(res_ty)
    a = attrs or {}
    return [[ctx.emit(name, [o[i] for o in ops], sty, a) for i in range(n)]]


def unique_regs(ll) -> set:
    """The registers of layout ``ll`` holding an element for the first time (replicated ones left out)."""
    seen, out = set(), set()
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix not in seen:
            seen.add(ix)
            out.add(r)
    return out


def owner_predicate(ctx, ll):
    """i1: this thread is the first holder of its elements (replicated lanes / warps skip), or None."""
    conds = []
    lane_bits = sum(1 << i for i, b in enumerate(ll.lane) if not any(b))
    warp_bits = sum(1 << i for i, b in enumerate(ll.warp) if not any(b))
    # lanes beyond the layout's lanes (fewer lanes than the warp) do not occur: the layout covers the warp
    for val, bits in ((ctx.lane_id(), lane_bits), (ctx.warp_id(), warp_bits)):
        if bits:
            m = ctx.emit("arith.andi", [val, ctx.c32(bits)], ctx.i32())
            conds.append(cmpi(ctx, "eq", m, ctx.c32(0)))
    if not conds:
        return None
    c = conds[0]
    for x in conds[1:]:
        c = ctx.emit("arith.andi", [c, x], c.type)
    return c


def vector_width(ctx, ptr, mask, elem_bits) -> int:
    """Elements per vector access (up to 128 bits) for ``ptr``, a TTGIR tensor of pointers, and its ``mask`` (a
    TTGIR value or None), from the layout's contiguous registers and the axis analysis: 1 without axis
    information.  Every element of a vector shares its mask, and the vector's address is aligned to its size."""
    if not tt.is_tensor(ptr.type) or ctx.axis_info is None:
        return 1
    ll = ctx.linear(ptr.type)
    order = list(ctx.layout(ptr.type).order)
    per_thread = layouts._contig_regs(ll, order[0])  # consecutive registers along the fastest dim
    try:
        v = int(ctx.axis_info.vector_width(ptr, mask, per_thread, elem_bits, order))
    except Exception as e:  # the analysis has no answer for this value: scalar accesses are still correct
        log.debug("vector width 1 for the access at %s: %s: %s", tt.loc_str(ctx.op), type(e).__name__, e)
        return 1
    v = max(1, min(v, per_thread, max(1, 128 // elem_bits)))
    while v & (v - 1):
        v &= v - 1
    return v


# ------------------------------------------------------------------------------------------------
# Errors at the kernel's source line
# ------------------------------------------------------------------------------------------------

def source_error(ctx, message: str) -> CompilationError:
    """A :class:`~tritium.errors.CompilationError` at the source line of the op being lowered (``ctx.op``): what a
    rule raises for a kernel the target cannot compile (an operation it does not support)."""
    where = source_of(ctx.op.location) if ctx.op is not None else None
    kernel, op = "", ctx.op
    while op is not None and op.name != "func.func":
        op = op.parent
    if op is not None:
        kernel = ir.StringAttr(op.attributes["sym_name"]).value
    if where is None:
        return CompilationError(message, kernel=kernel)
    return CompilationError(message, where[0], where[1], where[2], kernel=kernel)


# ------------------------------------------------------------------------------------------------
# Scalar ops
# ------------------------------------------------------------------------------------------------

_CMPI = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5, "ult": 6, "ule": 7, "ugt": 8, "uge": 9}


def cmpi(ctx, pred: str, a, b):
    """``arith.cmpi`` with the predicate by name (``"eq"``, ``"ult"``, ...)."""
    return ctx.emit("arith.cmpi", [a, b], ir.IntegerType.get_signless(1),
                    {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), _CMPI[pred])})


def and_masks(ctx, a, b):
    """``a & b`` of two i1 masks, either of which may be None (no mask)."""
    if a is None:
        return b
    if b is None:
        return a
    return ctx.emit("arith.andi", [a, b], a.type)


def thread_zero(ctx):
    """i1: this is thread 0 (who does a scalar store or atomic)."""
    return cmpi(ctx, "eq", ctx.thread_id(), ctx.c32(0))


def owners(ctx, ty) -> tuple:
    """``(own, regs)`` for a value of type ``ty`` that one thread per element must act on (a store, an atomic):
    ``own`` (i1) is true in the thread holding the first copy of its elements (thread 0 for a scalar), ``regs`` the
    register numbers that are first copies (``{0}`` for a scalar)."""
    if not tt.is_tensor(ty):
        return thread_zero(ctx), {0}
    ll = ctx.linear(ty)
    return owner_predicate(ctx, ll), unique_regs(ll)


def select(ctx, c, a, b):
    return ctx.emit("arith.select", [c, a, b], a.type)


def if_then(ctx, cond, body: Callable[[], None]) -> None:
    """``scf.if cond { body() }`` without results (an empty else region)."""
    ifop = ctx.emit_op("scf.if", [cond], [], regions=2)
    for i in range(2):
        with ir.InsertionPoint(ir.Block.create_at_start(ifop.regions[i], [])):
            if i == 0:
                body()
            ctx.emit_op("scf.yield", [])


def if_else(ctx, cond, result_types, then: Callable[[], list], otherwise: Callable[[], list]) -> list:
    """``scf.if cond -> (result_types) { then() } else { otherwise() }``: each callable emits its branch and returns
    the values it yields; returns the results."""
    ifop = ctx.emit_op("scf.if", [cond], list(result_types), regions=2)
    for i, body in enumerate((then, otherwise)):
        with ir.InsertionPoint(ir.Block.create_at_start(ifop.regions[i], [])):
            ctx.emit_op("scf.yield", list(body()))
    return list(ifop.results)


# ------------------------------------------------------------------------------------------------
# Shuffles: TargetInfo shuffles move i32 values; these move any int / float scalar up to 64 bits
# ------------------------------------------------------------------------------------------------

def shuffle(ctx, v, lane_op: Callable):
    """Shuffle a scalar of any int / float type up to 64 bits with ``lane_op(i32 value) -> i32 value``:
    narrower values are extended to 32 bits, 64-bit values moved as two 32-bit halves."""
    ty = v.type
    if not isinstance(ty, (ir.IntegerType, ir.FloatType)):
        raise LoweringError(f"cannot shuffle a value of type {ty}")
    i32 = ctx.i32()
    bits = ty.width
    isint = isinstance(ty, ir.IntegerType)
    if bits == 32:
        r = lane_op(v if isint else ctx.emit("arith.bitcast", [v], i32))
        return r if isint else ctx.emit("arith.bitcast", [r], ty)
    if bits < 32:
        ity = ctx.int_ty(bits)
        as_i = v if isint else ctx.emit("arith.bitcast", [v], ity)
        r = ctx.emit("arith.trunci", [lane_op(ctx.emit("arith.extui", [as_i], i32))], ity)
        return r if isint else ctx.emit("arith.bitcast", [r], ty)
    if bits == 64:
        i64 = ctx.int_ty(64)
        as_i = v if isint else ctx.emit("arith.bitcast", [v], i64)
        lo = ctx.emit("arith.trunci", [as_i], i32)
        hi = ctx.emit("arith.trunci", [ctx.emit("arith.shrui", [as_i, ctx.const(i64, 32)], i64)], i32)
        lo, hi = lane_op(lo), lane_op(hi)
        r = ctx.emit("arith.ori", [ctx.emit("arith.extui", [lo], i64),
                                   ctx.emit("arith.shli", [ctx.emit("arith.extui", [hi], i64), ctx.const(i64, 32)],
                                            i64)], i64)
        return r if isint else ctx.emit("arith.bitcast", [r], ty)
    raise LoweringError(f"cannot shuffle a value of type {ty}")


def shuffle_xor(ctx, v, mask: int):
    """``v`` (any scalar) of lane ``lane ^ mask`` (butterfly)."""
    return shuffle(ctx, v, lambda w: ctx.target.shuffle_xor(ctx, w, mask))


def shuffle_idx(ctx, v, src_lane):
    """``v`` (any scalar) of lane ``src_lane`` (an i32 value)."""
    return shuffle(ctx, v, lambda w: ctx.target.shuffle_idx(ctx, w, src_lane))


# ------------------------------------------------------------------------------------------------
# Shared memory: element types, offsets, moving tensors between threads
# ------------------------------------------------------------------------------------------------

def smem_elem(ctx, ty):
    """``(type, to, from, bytes)``: the type a value of element type ``ty`` takes in shared memory, converters
    to / from it, and its size."""
    e = tt.elem_of(ty)
    if tt.is_ptr(e):
        i64 = ctx.int_ty(64)
        return (i64, lambda v: ctx.emit("llvm.ptrtoint", [v], i64),
                lambda v: ctx.emit("llvm.inttoptr", [v], scalar_type(e)), 8)
    if isinstance(e, ir.IntegerType) and e.width == 1:
        i8 = ctx.int_ty(8)
        return (i8, lambda v: ctx.emit("arith.extui", [v], i8),
                lambda v: ctx.emit("arith.trunci", [v], e), 1)
    if tt.is_fp8(e):  # moved as i8 (LLVM has no fp8 types)
        i8 = ctx.int_ty(8)
        return (i8, lambda v: ctx.emit("arith.bitcast", [v], i8),
                lambda v: ctx.emit("arith.bitcast", [v], e), 1)
    bits = ir.IntegerType(e).width if isinstance(e, ir.IntegerType) else ir.FloatType(e).width
    return e, (lambda v: v), (lambda v: v), max(1, bits // 8)


def broadcast_from_owner(ctx, value, ty, own, store: Optional[Callable] = None):
    """``value`` (of element type ``ty``), held by the one thread where ``own`` is true, to every thread of the
    program: that thread stores it into a scratch slot of shared memory, a barrier, every thread loads it.
    ``store(ptr, value, own)`` emits the owner's store (default: a branch around an ``llvm.store``; cuda passes a
    predicated ``st.shared``, which keeps the code branch-free)."""
    sty, to_s, from_s, nbytes = smem_elem(ctx, ty)
    buf = ctx.scratch(ctx.op, nbytes)
    p = ctx.smem_ptr(ctx.c32(0), sty, buf.base)
    if store is None:
        if_then(ctx, own, lambda: ctx.emit_op("llvm.store", [to_s(value), p]))
    else:
        store(p, value, own)
    ctx.barrier()
    v = from_s(ctx.emit("llvm.load", [p], sty))
    ctx.release(buf)
    return v




def share_from_owners(ctx, vals, ty, own, store: Optional[Callable] = None) -> list:
    """Per register ``vals`` of tensor type ``ty``, right only in the thread holding each element's first copy
    (``own``: an atomic's results), to every copy: the owners store their elements into a scratch buffer of the
    tensor's shape (row-major), a barrier, every thread loads its registers' elements.  ``store`` as in
    :func:`broadcast_from_owner`."""
    ll = ctx.linear(ty)
    shape = tt.shape_of(ty)
    sty, to_s, from_s, nbytes = smem_elem(ctx, ty)
    buf = ctx.scratch(ctx.op, tt.numel(shape) * nbytes)
    idx = ctx.indices(ty)
    ptrs = [ctx.smem_ptr(emit_offset(ctx, linear(idx[r], shape)), sty, buf.base) for r in range(ll.num_regs)]
    for r in sorted(unique_regs(ll)):
        if store is None:
            if_then(ctx, own, lambda p=ptrs[r], v=vals[r]: ctx.emit_op("llvm.store", [to_s(v), p]))
        else:
            store(ptrs[r], vals[r], own)
    ctx.barrier()
    out = [from_s(ctx.emit("llvm.load", [p], sty)) for p in ptrs]
    ctx.release(buf)
    return out


def linear(idx, shape) -> tuple:
    """The offset spec of the row-major linear offset of an index (i32 values or ints; ints fold into
    constants), for :func:`emit_offset`.  Other specs: ``("add", spec, k)`` = spec + k, ``("mul2", spec, k)`` =
    2 * spec + k."""
    return ("lin", tuple(idx), tuple(shape))


def pack_word(ctx, vals):
    """Scalars narrower than 32 bits (together 32 bits; fp8 moved as i8) -> one i32, the first in the low bits,
    through an LLVM vector (what tensor-core instructions take as a register)."""
    t = vals[0].type
    if tt.is_fp8(t):
        vals = [ctx.emit("arith.bitcast", [v], ctx.int_ty(8)) for v in vals]
        t = ctx.int_ty(8)
    return ctx.emit("llvm.bitcast", [vector_of(ctx, vals, t)], ctx.i32())


def vector_of(ctx, vals, elem_ty):
    """An LLVM vector of the scalars ``vals`` (of ``elem_ty``)."""
    vec_ty = ir.VectorType.get([len(vals)], elem_ty)
    vec = ctx.emit("llvm.mlir.undef", [], vec_ty)
    for i, v in enumerate(vals):
        vec = ctx.emit("llvm.insertelement", [vec, v, ctx.c32(i)], vec_ty)
    return vec


def unpack_word(ctx, word, elem_ty, n: int) -> list:
    """The inverse of :func:`pack_word`: ``n`` scalars of ``elem_ty`` from an i32."""
    vec = ctx.emit("llvm.bitcast", [word], ir.VectorType.get([n], elem_ty))
    return [ctx.emit("llvm.extractelement", [vec, ctx.c32(i)], elem_ty) for i in range(n)]


def emit_offset(ctx, spec):
    """The i32 value of an offset spec (see :func:`linear`); an i32 value is returned as it is."""
    if isinstance(spec, tuple) and spec and spec[0] == "lin":
        _, idx, shape = spec
        off = None
        stride = 1
        for d in range(len(shape) - 1, -1, -1):
            i = idx[d]
            if isinstance(i, int):
                term = ctx.c32(i * stride) if i else None
            else:
                term = i if stride == 1 else ctx.emit("arith.muli", [i, ctx.c32(stride)], ctx.i32())
            if term is not None:
                off = term if off is None else ctx.emit("arith.addi", [off, term], ctx.i32())
            stride *= shape[d]
        return off if off is not None else ctx.c32(0)
    if isinstance(spec, tuple) and spec and spec[0] == "add":
        base = emit_offset(ctx, spec[1])
        return ctx.emit("arith.addi", [base, ctx.c32(spec[2])], ctx.i32()) if spec[2] else base
    if isinstance(spec, tuple) and spec and spec[0] == "mul2":
        base = emit_offset(ctx, spec[1])
        v = ctx.emit("arith.shli", [base, ctx.c32(1)], ctx.i32())
        return ctx.emit("arith.addi", [v, ctx.c32(spec[2])], ctx.i32()) if spec[2] else v
    return spec




def register_runs(ll, fast: int, max_elems: int) -> list:
    """Register runs ``(first, n)``: ``n`` (a power of two <= ``max_elems``) consecutive registers holding
    consecutive elements along ``fast``."""
    out, r = [], 0
    while r < ll.num_regs:
        n = 1
        while n < max_elems and r % (2 * n) == 0 and r + 2 * n <= ll.num_regs and all(
                ll.index(r + i)[fast] == ll.index(r)[fast] + i and
                all(ll.index(r + i)[d] == ll.index(r)[d] for d in range(ll.rank) if d != fast)
                for i in range(2 * n)):
            n *= 2
        out.append((r, n))
        r += n
    return out


def row_vectors(ll, shape, max_elems: int) -> list:
    """Register runs ``(first, n)`` (:func:`register_runs` along the last dim) that are, in every thread, one
    aligned vector of ``n`` elements of a row-major buffer of ``shape``: the run's first column and every lane /
    warp basis' column are multiples of ``n``, and so is the row length."""
    last = len(shape) - 1
    thread_cols = [b[last] for b in list(ll.lane) + list(ll.warp)]
    out = []

    def place(r, n):
        if n == 1 or (not ll.index(r)[last] % n and not shape[last] % n and not any(c % n for c in thread_cols)):
            out.append((r, n))
        else:
            place(r, n // 2)
            place(r + n // 2, n // 2)

    for r, n in register_runs(ll, last, max_elems):
        place(r, n)
    return out


def _vector_store(ctx, vals, ptr, sty, nbytes):
    if len(vals) == 1:
        ctx.emit_op("llvm.store", [vals[0], ptr])
        return
    ctx.emit_op("llvm.store", [vector_of(ctx, vals, sty), ptr], attrs={"alignment": ir.IntegerAttr.get(ctx.int_ty(64),
                                                                                    len(vals) * nbytes)})


def _vector_load(ctx, ptr, sty, n, nbytes) -> list:
    if n == 1:
        return [ctx.emit("llvm.load", [ptr], sty)]
    vec_ty = ir.VectorType.get([n], sty)
    vec = ctx.emit("llvm.load", [ptr], vec_ty, {"alignment": ir.IntegerAttr.get(ctx.int_ty(64), n * nbytes)})
    return [ctx.emit("llvm.extractelement", [vec, ctx.c32(i)], sty) for i in range(n)]


def exchange(ctx, sources, dst_ty, dst_offset, row_major=None) -> list:
    """Move tensors between threads through ``ctx.op``'s scratch buffer: write every source ``(values, type,
    index -> offset spec)``, one barrier, then read the registers of ``dst_ty`` at ``dst_offset(index)``.
    ``row_major``: the shape of a buffer both sides address row-major (``linear``): runs of registers that are one
    aligned vector there (:func:`row_vectors`) are stored / loaded as one (up to 16 bytes)."""
    sty, to_s, from_s, nbytes = smem_elem(ctx, dst_ty)
    size = sum(tt.numel(ir.RankedTensorType(ty).shape) for _, ty, _ in sources)
    buf = ctx.scratch(ctx.op, size * nbytes)
    width = max(1, 16 // nbytes) if row_major is not None else 1

    def runs(ll):
        return row_vectors(ll, row_major, width) if width > 1 else [(r, 1) for r in range(ll.num_regs)]

    for vals, ty, off in sources:
        idx = ctx.indices(ty)
        seen = set()
        ll = ctx.linear(ty)
        for r, n in runs(ll):
            if ll.index(r) in seen:  # registers holding elements again (replication) store them once
                continue
            seen.add(ll.index(r))
            o = emit_offset(ctx, off(idx[r]))
            _vector_store(ctx, [to_s(v) for v in vals[r:r + n]], ctx.smem_ptr(o, sty, buf.base), sty, nbytes)
    ctx.barrier()
    idx = ctx.indices(dst_ty)
    out = [None] * len(idx)
    for r, n in runs(ctx.linear(dst_ty)):
        o = emit_offset(ctx, dst_offset(idx[r]))
        out[r:r + n] = [from_s(v) for v in _vector_load(ctx, ctx.smem_ptr(o, sty, buf.base), sty, n, nbytes)]
    ctx.release(buf)
    return out


def exchange_rounds(ctx, vals, src_ty, dst_ty, shape, k: int) -> list:
    """:func:`exchange` of one tensor in ``2**k`` rounds through a buffer of ``1 / 2**k`` of it: round ``c`` moves
    the rows (dim 0) whose top ``k`` index bits are ``c``, which only registers select, the same in every thread
    (:func:`tritium.dialects.layouts.convert_rounds` chose ``k`` so).  A barrier separates a round's writes from its
    reads and its reads from the next round's writes."""
    sty, to_s, from_s, nbytes = smem_elem(ctx, dst_ty)
    rows = shape[0] >> k
    chunk = tt.numel(shape) >> k  # elements of one round, row major
    buf = ctx.scratch(ctx.op, chunk * nbytes)
    width = max(1, 16 // nbytes) if len(shape) > 1 else 1
    src_ll, dst_ll = ctx.linear(src_ty), ctx.linear(dst_ty)
    sidx, didx = ctx.indices(src_ty), ctx.indices(dst_ty)

    def runs(ll):
        return row_vectors(ll, shape, width) if width > 1 else [(r, 1) for r in range(ll.num_regs)]

    out = [None] * dst_ll.num_regs
    for c in range(1 << k):
        if c:
            ctx.barrier()
        seen = set()
        for r, n in runs(src_ll):
            e = src_ll.index(r)
            if e[0] // rows != c or e in seen:
                continue
            seen.add(e)
            o = emit_offset(ctx, ("add", linear(sidx[r], shape), -c * chunk))
            _vector_store(ctx, [to_s(v) for v in vals[r:r + n]], ctx.smem_ptr(o, sty, buf.base), sty, nbytes)
        ctx.barrier()
        for r, n in runs(dst_ll):
            if dst_ll.index(r)[0] // rows != c:
                continue
            o = emit_offset(ctx, ("add", linear(didx[r], shape), -c * chunk))
            out[r:r + n] = [from_s(v) for v in _vector_load(ctx, ctx.smem_ptr(o, sty, buf.base), sty, n, nbytes)]
    ctx.release(buf)
    return out


# ------------------------------------------------------------------------------------------------
# Inline asm, external functions, constant globals
# ------------------------------------------------------------------------------------------------

def inline_asm(ctx, text: str, constraints: str, operands, result_types, side_effects: bool = False) -> list:
    """``llvm.inline_asm``; returns the result values (several results come back as a struct, unpacked)."""
    attrs = {"asm_string": ir.StringAttr.get(text), "constraints": ir.StringAttr.get(constraints)}
    if side_effects:
        attrs["has_side_effects"] = ir.UnitAttr.get()
    if not result_types:
        ctx.emit_op("llvm.inline_asm", operands, [], attrs)
        return []
    if len(result_types) == 1:
        return [ctx.emit("llvm.inline_asm", operands, result_types[0], attrs)]
    st = ir.Type.parse("!llvm.struct<(" + ", ".join(str(t) for t in result_types) + ")>")
    s = ctx.emit("llvm.inline_asm", operands, st, attrs)
    return [ctx.emit("llvm.extractvalue", [s], t, {"position": ir.DenseI64ArrayAttr.get([i])})
            for i, t in enumerate(result_types)]


def declare_function(ctx, name: str, arg_types, result_type) -> None:
    """A ``func.func private @name`` declaration in the output module (once per module)."""
    key = ("decl", name)
    if key in ctx.symbols:
        return
    body = ctx.out_module.body
    for op in body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            ctx.symbols[key] = name
            return
    with ir.InsertionPoint.at_block_begin(body):
        ir.Operation.create("func.func", attributes={
            "sym_name": ir.StringAttr.get(name), "sym_visibility": ir.StringAttr.get("private"),
            "function_type": ir.TypeAttr.get(ir.FunctionType.get(list(arg_types),
                                                                 [] if result_type is None else [result_type]))},
            regions=1)
    ctx.symbols[key] = name


def call_function(ctx, name: str, args, result_type):
    """A call of the external function ``@name`` (declared on first use); returns its result."""
    declare_function(ctx, name, [a.type for a in args], result_type)
    return ctx.emit("func.call", args, result_type, {"callee": ir.FlatSymbolRefAttr.get(name)})


def constant_global(ctx, prefix: str, global_type, value, addr_space: int, alignment=None) -> str:
    """An internal constant ``llvm.mlir.global`` holding ``value``, once per module for equal contents; returns
    its symbol, ``<prefix>_<n>``."""
    key = (prefix, str(global_type), str(value))
    name = ctx.symbols.get(key)
    if name is not None:
        return name
    name = f"{prefix}_{sum(1 for k in ctx.symbols if k[0] == prefix)}"
    attrs = {"sym_name": ir.StringAttr.get(name), "global_type": ir.TypeAttr.get(global_type),
             "linkage": ir.Attribute.parse("#llvm.linkage<internal>"), "constant": ir.UnitAttr.get(),
             "value": value, "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), addr_space)}
    if alignment is not None:
        attrs["alignment"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), alignment)
    with ir.InsertionPoint.at_block_begin(ctx.out_module.body):
        ir.Operation.create("llvm.mlir.global", attributes=attrs, regions=1)
    ctx.symbols[key] = name
    return name


def address_of(ctx, symbol: str, ptr_type):
    return ctx.emit("llvm.mlir.addressof", [], ptr_type, {"global_name": ir.FlatSymbolRefAttr.get(symbol)})
