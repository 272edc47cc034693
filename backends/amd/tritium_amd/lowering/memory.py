"""Loads, stores and atomics on global memory for AMD GPUs, as plain LLVM memory operations the AMDGPU backend
selects (``global_load_dwordx4``, ``global_store_dword``, ``global_atomic_*``): no inline assembly.

* A load or store moves ``vec`` consecutive registers as one LLVM vector (up to 128 bits), its alignment the
  vector's size: the width the layout's contiguous registers and the axis analysis allow
  (:func:`tritium.lowering.utils.vector_width`: every element of a vector shares its mask).
* A mask is a branch (``scf.if``): a masked-off load yields ``other`` (zero without one), a masked-off store does
  nothing.  Replicated elements are stored once (by their first register, in their first thread); a scalar store or
  atomic is done by thread 0, and a scalar atomic's result reaches the other threads through LDS.
* Cache modifiers: a ``.cv`` load and a ``.wt`` store are volatile (they bypass the caches), ``.cg`` / ``.cs``
  loads and ``.cs`` stores non-temporal; eviction policies have no AMD counterpart and are ignored.
* Atomics: ``atomicrmw`` / ``cmpxchg`` with the op's ordering (relaxed -> monotonic, acquire, release, acq_rel) and
  scope (``gpu`` -> ``syncscope("agent")``, ``cta`` -> ``"workgroup"``, ``sys`` -> the system scope).  Float max /
  min take the integer orderings of the bits (a value with its sign bit clear: signed max / min; set: unsigned min /
  max), the total order ``-NaN < -inf < .. < -0 < +0 < .. < +inf < +NaN`` the interpreter and the cuda backend
  follow.  Masked-off lanes return 0.

* Buffer loads / stores (CDNA: gfx90a / gfx942 / gfx950, as Triton's AMD ``ConvertToBufferOps``): a masked access
  through ``tt.addptr(tt.splat(base), offsets)`` whose i32 ``offsets`` are provably in ``[0, 2^31)`` bytes
  (:func:`offset_range`, an interval evaluation of their definition: ``make_range``, constants, ``+ - * / %``,
  shifts, ``and``, min / max, views) becomes ``llvm.amdgcn.raw.ptr.buffer.load`` / ``.store`` on a buffer resource
  made from the scalar base (``llvm.amdgcn.make.buffer.rsrc``: stride 0, ``num_records`` 0x7FFFFFFE) and the
  lane's byte offset: no branch.  A masked-off lane gets the offset 0x80000000, past ``num_records``, so the
  hardware returns 0 (``other`` is then selected in) or drops the store.  The vector width is the global path's
  (``buffer_load_dwordx4`` for 128 bits).  Cache modifiers become the instruction's aux bits as Triton sets them
  on gfx942 / gfx950 (loads ``.cg`` sc0 nt, ``.cv`` sc0 sc1; stores ``.cs`` sc0 nt, ``.wt`` sc0 sc1, ``.cg`` /
  ``.wb`` none); a volatile access, another modifier (or any on gfx90a), pointers, or offsets that may be
  negative or too large keep the branch form.

i1 values are moved as i8, fp8 values as i8 (LLVM has no fp8 types).
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import CacheModifier, EvictionPolicy, MemSemantic, MemSyncScope, RMWOp
from tritium.lowering import Rules
from tritium.lowering.utils import (and_masks, atomic_registers, bit_width, broadcast_from_owner, cmpi, if_else,
                                    if_then, is_llvm_ptr, memory_type, owners, per_register, result_used, scalar_type,
                                    share_from_owners, source_error, vector_of, vector_width)

RULES = Rules()

#: LLVM's AtomicOrdering / AtomicBinOp encodings (MLIR's llvm dialect enums)
_ORDERING = {MemSemantic.RELAXED: 2, MemSemantic.ACQUIRE: 4, MemSemantic.RELEASE: 5,
             MemSemantic.ACQUIRE_RELEASE: 6}
_FAILURE_ORDERING = {2: 2, 4: 4, 5: 2, 6: 4}  # a cmpxchg's failure ordering: no release part
_BIN_OP = {"xchg": 0, "add": 1, "and": 3, "or": 5, "xor": 6, "max": 7, "min": 8, "umax": 9, "umin": 10,
           "fadd": 11}
_SCOPE = {MemSyncScope.GPU: "agent", MemSyncScope.CTA: "workgroup", MemSyncScope.SYSTEM: None}

_VOLATILE_LOAD = {CacheModifier.CV}
_NONTEMPORAL_LOAD = {CacheModifier.CG, CacheModifier.CS}
_VOLATILE_STORE = {CacheModifier.WT}
_NONTEMPORAL_STORE = {CacheModifier.CS}


def _i64(ctx, v):
    return ir.IntegerAttr.get(ctx.int_ty(64), v)


def _elem(ctx, ty):
    """``(element type, memory type, to memory, from memory)`` of a TTGIR value type: i1 and fp8 move as i8."""
    elem = scalar_type(ty)
    if isinstance(elem, ir.IntegerType) and elem.width == 1:
        i8 = ctx.int_ty(8)
        return (elem, i8, lambda v: ctx.emit("arith.extui", [v], i8),
                lambda v: cmpi(ctx, "ne", v, ctx.const(i8, 0)))
    if tt.is_fp8(elem):
        i8 = ctx.int_ty(8)
        return (elem, i8, lambda v: ctx.emit("arith.bitcast", [v], i8),
                lambda v: ctx.emit("arith.bitcast", [v], elem))
    mty = memory_type(elem) if not is_llvm_ptr(elem) else elem
    return elem, mty, (lambda v: v), (lambda v: v)


def _zero(ctx, ty):
    if is_llvm_ptr(ty):
        return ctx.emit("llvm.mlir.zero", [], ty)
    return ctx.const(ty, 0)


def _mem_attrs(ctx, nbytes, volatile=False, nontemporal=False) -> dict:
    attrs = {"alignment": _i64(ctx, nbytes)}
    if volatile:
        attrs["volatile_"] = ir.UnitAttr.get()
    elif nontemporal:
        attrs["nontemporal"] = ir.UnitAttr.get()
    return attrs


def _width(ctx, ptr_v, mask_v, mty) -> int:
    if is_llvm_ptr(mty):  # pointers one at a time
        return 1
    return vector_width(ctx, ptr_v, mask_v, bit_width(mty))


def _reject_block_pointer(ctx, ptr_ty) -> None:
    if tt.is_ptr(ptr_ty) and tt.is_tensor(tt.pointee(ptr_ty)):
        raise source_error(ctx, "block pointers (tt.make_tensor_ptr) reached the hip lowering: the TTIR pipeline's "
                                "block-pointer rewrite should have removed them")


# ------------------------------------------------------------------------------------------------
# Loads and stores
# ------------------------------------------------------------------------------------------------

# ------------------------------------------------------------------------------------------------
# Buffer loads and stores
# ------------------------------------------------------------------------------------------------

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_NUM_RECORDS = 0x7FFFFFFE  # the resource's size in bytes: every offset below 2^31 - 1 is in range
_OFF_LANE = -(1 << 31)  # 0x80000000: past num_records, the hardware reads 0 and drops stores
_RSRC_FLAGS = {"gfx90a": 0x27000, "gfx942": 0x27000, "gfx950": 0x27000}  # dword 3 (DST_SEL_XYZW, 32-bit format)
# cache modifier -> aux bits (sc0 = 1, nt = 2, sc1 = 16 on gfx94x / gfx950), as Triton's AMD backend sets them
_LOAD_AUX = {CacheModifier.NONE: 0, CacheModifier.CA: 0, CacheModifier.CG: 3, CacheModifier.CV: 17}
_STORE_AUX = {CacheModifier.NONE: 0, CacheModifier.WB: 0, CacheModifier.CG: 0, CacheModifier.CS: 3,
              CacheModifier.WT: 17}
_VIEWS = frozenset({"tt.splat", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape"})


def _int_const_range(attr):
    if isinstance(attr, ir.IntegerAttr):
        return attr.value, attr.value
    try:
        dense = ir.DenseIntElementsAttr(attr)
    except (ValueError, TypeError):
        return None
    vals = [dense[0]] if dense.is_splat else list(dense)
    return (min(vals), max(vals)) if vals else None


def offset_range(value, _depth: int = 0):
    """``(lo, hi)`` bounds every element of the i32 ``value`` provably lies in (computed exactly, no step of the
    computation leaving the i32 range, so nothing wraps), or None when unknown (arguments, loads, loop-carried
    values, ops this evaluation does not know)."""
    if _depth > 32:
        return None
    owner = value.owner
    if not isinstance(owner, ir.Operation) and not isinstance(owner, ir.OpView):
        return None  # a block argument
    op = owner.operation if hasattr(owner, "operation") else owner
    name = op.name

    def rng(i):
        return offset_range(op.operands[i], _depth + 1)

    if name == "arith.constant":
        out = _int_const_range(op.attributes["value"])
    elif name == "tt.make_range":
        out = (int(op.attributes["start"].value), int(op.attributes["end"].value) - 1)
    elif name in _VIEWS:
        out = rng(0)
    elif name in ("arith.addi", "arith.subi", "arith.muli", "arith.minsi", "arith.maxsi"):
        a, b = rng(0), rng(1)
        if a is None or b is None:
            return None
        if name == "arith.addi":
            out = (a[0] + b[0], a[1] + b[1])
        elif name == "arith.subi":
            out = (a[0] - b[1], a[1] - b[0])
        elif name == "arith.muli":
            corners = [x * y for x in a for y in b]
            out = (min(corners), max(corners))
        elif name == "arith.minsi":
            out = (min(a[0], b[0]), min(a[1], b[1]))
        else:
            out = (max(a[0], b[0]), max(a[1], b[1]))
    elif name in ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.shli", "arith.shrsi",
                  "arith.shrui", "arith.andi"):
        a, b = rng(0), rng(1)
        if a is None or b is None or a[0] < 0 or b[0] < 0:
            return None  # non-negative operands only
        if name == "arith.andi":
            out = (0, min(a[1], b[1]))
        elif name in ("arith.shli", "arith.shrsi", "arith.shrui"):
            if b[1] > 31:
                return None
            out = (a[0] << b[0], a[1] << b[1]) if name == "arith.shli" else (a[0] >> b[1], a[1] >> b[0])
        elif b[0] == 0:
            return None  # a divisor that may be 0
        elif name in ("arith.divsi", "arith.divui"):
            out = (a[0] // b[1], a[1] // b[0])
        else:
            out = (0, min(a[1], b[1] - 1))
    else:
        return None
    if out is None or out[0] < _I32_MIN or out[1] > _I32_MAX:
        return None
    return out


def _buffer_base(ctx, ptr_v, mty, vec: int):
    """``(scalar base, offsets)`` (TTGIR values) when an access through the tensor of pointers ``ptr_v`` of
    ``vec``-element vectors of ``mty`` can be a buffer access (see the module's docstring), else None."""
    arch = getattr(ctx.target, "arch", "")
    if arch not in _RSRC_FLAGS or not tt.is_tensor(ptr_v.type) or is_llvm_ptr(mty):
        return None
    d = ptr_v.owner
    if not isinstance(d, (ir.Operation, ir.OpView)) or d.name != "tt.addptr":
        return None
    base, offs = d.operands[0], d.operands[1]
    b = base.owner
    if not isinstance(b, (ir.Operation, ir.OpView)) or b.name != "tt.splat":
        return None
    if not isinstance(scalar_type(offs.type), ir.IntegerType) or scalar_type(offs.type).width != 32 or \
            ctx.layout(offs.type) != ctx.layout(ptr_v.type):
        return None
    r = offset_range(offs)
    nbytes = max(1, bit_width(mty) // 8)
    if r is None or r[0] < 0 or r[1] * nbytes + vec * nbytes > _NUM_RECORDS:
        return None
    return b.operands[0], offs


def _buffer_type(ctx, nbits: int):
    """The type a buffer intrinsic moves ``nbits`` as: i8 / i16 / i32, <2 x i32>, <4 x i32>."""
    return ctx.int_ty(nbits) if nbits <= 32 else ir.VectorType.get([nbits // 32], ctx.int_ty(32))


def _intrinsic(ctx, name: str, args, result_type=None):
    """``llvm.call_intrinsic`` of ``name`` (overloads resolved from the types); None for a void one."""
    attrs = {"intrin": ir.StringAttr.get(name), "fastmathFlags": ir.Attribute.parse("#llvm.fastmath<none>"),
             "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
             "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(args), 0])}
    if result_type is None:
        ctx.emit_op("llvm.call_intrinsic", list(args), attrs=attrs)
        return None
    return ctx.emit("llvm.call_intrinsic", list(args), result_type, attrs)


def _buffer_rsrc(ctx, base):
    p8 = ir.Type.parse("!llvm.ptr<8>")
    stride = ctx.emit("llvm.mlir.constant", [], ctx.int_ty(16), {"value": ir.IntegerAttr.get(ctx.int_ty(16), 0)})
    size = ctx.emit("llvm.mlir.constant", [], ctx.int_ty(64),
                    {"value": ir.IntegerAttr.get(ctx.int_ty(64), _NUM_RECORDS)})
    flags = ctx.emit("llvm.mlir.constant", [], ctx.i32(),
                     {"value": ir.IntegerAttr.get(ctx.i32(), _RSRC_FLAGS[ctx.target.arch])})
    return _intrinsic(ctx, "llvm.amdgcn.make.buffer.rsrc", [base, stride, size, flags], p8)


def _lane_offsets(ctx, offs, nbytes: int, preds: list, step: int):
    """Per vector (every ``step`` registers): the byte offset, 0x80000000 where the lane's predicate is off."""
    off_lane = ctx.c32(_OFF_LANE)
    out = []
    for c in range(0, len(offs), step):
        o = offs[c] if nbytes == 1 else ctx.emit("arith.muli", [offs[c], ctx.c32(nbytes)], ctx.i32())
        out.append(o if preds[c] is None else ctx.emit("arith.select", [preds[c], o, off_lane], ctx.i32()))
    return out


def _buffer_load(ctx, base_v, offs_v, masks, others, n, vec, mty, vty, aux):
    nbytes = max(1, bit_width(mty) // 8)
    rsrc = _buffer_rsrc(ctx, ctx.get(base_v)[0])
    offs = _lane_offsets(ctx, per_register(ctx.get(offs_v), n), nbytes, masks, vec)
    bty = _buffer_type(ctx, vec * nbytes * 8)
    zero, aux_c = ctx.c32(0), ctx.c32(aux)
    out = []
    for k, c in enumerate(range(0, n, vec)):
        raw = _intrinsic(ctx, "llvm.amdgcn.raw.ptr.buffer.load", [rsrc, offs[k], zero, aux_c], bty)
        v = raw if bty == vty else ctx.emit("llvm.bitcast", [raw], vty)
        if others is not None:
            alt = others[c] if vec == 1 else vector_of(ctx, others[c:c + vec], mty)
            v = ctx.emit("arith.select", [masks[c], v, alt], vty)
        out.append(v)
    return out


@RULES.register("tt.load")
def _load(ctx, ptr, mask, other, *, cache=CacheModifier.NONE, evict=EvictionPolicy.NORMAL, isVolatile=False,
          **_):
    ptr_v = ctx.op.operands[0]
    mask_v = ctx.op.operands[1] if mask is not None else None
    _reject_block_pointer(ctx, ptr_v.type)
    res_ty = ctx.op.results[0].type
    n = ctx.nregs(res_ty)
    elem, mty, to_m, from_m = _elem(ctx, res_ty)
    nbytes = max(1, bit_width(mty) // 8)
    ptrs = per_register(ptr, n)
    masks = per_register(mask, n) if mask is not None else None
    others = [to_m(v) for v in per_register(other, n)] if other is not None else None
    vec = _width(ctx, ptr_v, mask_v, mty)
    vty = ir.VectorType.get([vec], mty) if vec > 1 else mty
    buf = _buffer_base(ctx, ptr_v, mty, vec) if masks is not None and not isVolatile else None
    aux = _LOAD_AUX.get(cache) if ctx.target.arch != "gfx90a" or cache in (CacheModifier.NONE, CacheModifier.CA) \
        else None
    if buf is not None and aux is not None:
        loaded = _buffer_load(ctx, *buf, masks, others, n, vec, mty, vty, aux)
        out = []
        for v in loaded:
            if vec == 1:
                out.append(from_m(v))
            else:
                out.extend(from_m(ctx.emit("llvm.extractelement", [v, ctx.c32(i)], mty)) for i in range(vec))
        return [out]
    attrs = _mem_attrs(ctx, vec * nbytes, volatile=isVolatile or cache in _VOLATILE_LOAD,
                       nontemporal=cache in _NONTEMPORAL_LOAD)
    out = []
    # a masked load branches around a vector load (<1 x T> too): LLVM folds a conversion of a scalar phi into
    # the branch, where the load's use then waits for it (s_waitcnt vmcnt(0) in every branch: no overlap and
    # the converted values held apart, layer norm 18 VGPRs against Triton's 14); a vector phi keeps it after
    bty = ir.VectorType.get([vec], mty) if masks is not None else vty
    for c in range(0, n, vec):
        def load(c=c):
            return [ctx.emit("llvm.load", [ptrs[c]], bty, attrs)]

        if masks is None:
            v = load()[0]
        else:
            alt = vector_of(ctx, others[c:c + vec] if others is not None else [_zero(ctx, mty)] * vec, mty)
            v = if_else(ctx, masks[c], [bty], load, lambda alt=alt: [alt])[0]
            if vec == 1:
                v = ctx.emit("llvm.extractelement", [v, ctx.c32(0)], mty)
        if vec == 1:
            out.append(from_m(v))
        else:
            out.extend(from_m(ctx.emit("llvm.extractelement", [v, ctx.c32(i)], mty)) for i in range(vec))
    return [out]


@RULES.register("tt.store")
def _store(ctx, ptr, value, mask, *, cache=CacheModifier.NONE, evict=EvictionPolicy.NORMAL, **_):
    ptr_v, val_v = ctx.op.operands[0], ctx.op.operands[1]
    mask_v = ctx.op.operands[2] if mask is not None else None
    _reject_block_pointer(ctx, ptr_v.type)
    n = ctx.nregs(val_v.type)
    elem, mty, to_m, from_m = _elem(ctx, val_v.type)
    nbytes = max(1, bit_width(mty) // 8)
    ptrs = per_register(ptr, n)
    vals = [to_m(v) for v in per_register(value, n)]
    masks = per_register(mask, n) if mask is not None else None
    vec = _width(ctx, ptr_v, mask_v, mty)
    attrs = _mem_attrs(ctx, vec * nbytes, volatile=cache in _VOLATILE_STORE, nontemporal=cache in _NONTEMPORAL_STORE)
    own, uniq = owners(ctx, ptr_v.type)
    buf = _buffer_base(ctx, ptr_v, mty, vec) if masks is not None else None
    aux = _STORE_AUX.get(cache) if ctx.target.arch != "gfx90a" or cache in (CacheModifier.NONE, CacheModifier.WB) \
        else None
    if buf is not None and aux is not None:
        preds = [and_masks(ctx, own, masks[c]) if c in uniq and c % vec == 0 else None for c in range(n)]
        rsrc = _buffer_rsrc(ctx, ctx.get(buf[0])[0])
        offs = _lane_offsets(ctx, per_register(ctx.get(buf[1]), n), nbytes, preds, vec)
        bty = _buffer_type(ctx, vec * nbytes * 8)
        zero, aux_c = ctx.c32(0), ctx.c32(aux)
        for k, c in enumerate(range(0, n, vec)):
            if c not in uniq:
                continue
            v = vals[c] if vec == 1 else vector_of(ctx, vals[c:c + vec], mty)
            v = v if v.type == bty else ctx.emit("llvm.bitcast", [v], bty)
            _intrinsic(ctx, "llvm.amdgcn.raw.ptr.buffer.store", [v, rsrc, offs[k], zero, aux_c])
        return []
    for c in range(0, n, vec):
        if c not in uniq:
            continue

        def store(c=c):
            v = vals[c] if vec == 1 else vector_of(ctx, vals[c:c + vec], mty)
            ctx.emit_op("llvm.store", [v, ptrs[c]], attrs=attrs)

        pred = and_masks(ctx, own, masks[c] if masks is not None else None)
        if pred is None:
            store()
        else:
            if_then(ctx, pred, store)
    return []


# ------------------------------------------------------------------------------------------------
# Atomics
# ------------------------------------------------------------------------------------------------

def _rmw(ctx, kind: str, p, v, ordering: int, scope):
    attrs = {"bin_op": _i64(ctx, _BIN_OP[kind]), "ordering": _i64(ctx, ordering)}
    if scope:
        attrs["syncscope"] = ir.StringAttr.get(scope)
    return ctx.emit("llvm.atomicrmw", [p, v], v.type, attrs)


def _as_int(ctx, v):
    t = v.type
    return v if isinstance(t, ir.IntegerType) else ctx.emit("arith.bitcast", [v], ctx.int_ty(bit_width(t)))


def _from_int(ctx, w, t):
    return w if isinstance(t, ir.IntegerType) else ctx.emit("arith.bitcast", [w], t)


def _rmw_kind(ctx, rmw: RMWOp, elem) -> str:
    f = isinstance(elem, ir.FloatType)
    if rmw in (RMWOp.FADD, RMWOp.ADD) and f:
        return "fadd"
    if rmw in (RMWOp.MAX, RMWOp.MIN) and f:
        return "f" + ("max" if rmw == RMWOp.MAX else "min")
    if f and rmw != RMWOp.XCHG:
        raise source_error(ctx, f"atomic {rmw.name.lower()} on {elem} is not supported")
    return {RMWOp.AND: "and", RMWOp.OR: "or", RMWOp.XOR: "xor", RMWOp.ADD: "add", RMWOp.MAX: "max",
            RMWOp.MIN: "min", RMWOp.UMAX: "umax", RMWOp.UMIN: "umin", RMWOp.XCHG: "xchg"}[rmw]


def _one_atomic(ctx, kind, p, v, cmp, ordering, scope):
    """One atomic on scalar ``v`` at ``p``; returns the old value."""
    t = v.type
    if kind == "cas":
        i = ctx.int_ty(bit_width(t))
        st = ir.Type.parse(f"!llvm.struct<({i}, i1)>")
        attrs = {"success_ordering": _i64(ctx, ordering), "failure_ordering": _i64(ctx, _FAILURE_ORDERING[ordering])}
        if scope:
            attrs["syncscope"] = ir.StringAttr.get(scope)
        pair = ctx.emit("llvm.cmpxchg", [p, _as_int(ctx, cmp), _as_int(ctx, v)], st, attrs)
        old = ctx.emit("llvm.extractvalue", [pair], i, {"position": ir.DenseI64ArrayAttr.get([0])})
        return _from_int(ctx, old, t)
    if kind in ("fmax", "fmin"):
        # the integer orderings of the bits: sign clear -> signed max (min), sign set -> unsigned min (max)
        w = _as_int(ctx, v)
        neg = cmpi(ctx, "slt", w, ctx.const(w.type, 0))
        pos_op, neg_op = ("max", "umin") if kind == "fmax" else ("min", "umax")
        old = if_else(ctx, neg, [w.type], lambda: [_rmw(ctx, neg_op, p, w, ordering, scope)],
                      lambda: [_rmw(ctx, pos_op, p, w, ordering, scope)])[0]
        return _from_int(ctx, old, t)
    return _rmw(ctx, kind, p, v, ordering, scope)


def _atomic(ctx, ptr, val, cmp, mask, sem, scope, kind):
    ptr_v = ctx.op.operands[0]
    res_ty = ctx.op.results[0].type
    elem = scalar_type(res_ty)
    bits = bit_width(elem)
    if bits not in (16, 32, 64):
        raise source_error(ctx, f"atomics on {elem} are not supported on hip targets (16-, 32- and 64-bit types are)")
    n, ptrs, vals, cmps, masks = atomic_registers(ctx, ptr, val, cmp, mask)
    ordering = _ORDERING[sem]
    sc = _SCOPE[scope]
    scalar = not tt.is_tensor(ptr_v.type)
    own, uniq = owners(ctx, ptr_v.type)
    ll = None if scalar else ctx.linear(ptr_v.type)
    out, results = [], {}
    for r in range(n):
        if r not in uniq:  # a replica: the first holder's result
            ix = ll.index(r)
            out.append(results[next(q for q in range(n) if ll.index(q) == ix)])
            continue
        pred = and_masks(ctx, own, masks[r] if masks is not None else None)

        def do(r=r):
            return [_one_atomic(ctx, kind, ptrs[r], vals[r], cmps[r] if cmps is not None else None, ordering, sc)]

        v = do()[0] if pred is None else if_else(ctx, pred, [elem], do, lambda: [_zero(ctx, elem)])[0]
        results[r] = v
        out.append(v)
    if scalar and not result_used(ctx.op.results[0]):
        return [[out[0]]]
    if scalar:  # thread 0's result to every thread, through LDS
        return [[broadcast_from_owner(ctx, out[0], res_ty, own)]]
    if own is not None and result_used(ctx.op.results[0]):  # each first holder's results to the other copies
        return [share_from_owners(ctx, out, res_ty, own)]
    return [out]


@RULES.register("tt.atomic_rmw")
def _atomic_rmw(ctx, ptr, val, mask, *, atomic_rmw_op=RMWOp.ADD, sem=MemSemantic.ACQUIRE_RELEASE,
                scope=MemSyncScope.GPU):
    elem = scalar_type(ctx.op.results[0].type)
    return _atomic(ctx, ptr, val, None, mask, sem, scope, _rmw_kind(ctx, atomic_rmw_op, elem))


@RULES.register("tt.atomic_cas")
def _atomic_cas(ctx, ptr, cmp, val, *, sem=MemSemantic.ACQUIRE_RELEASE, scope=MemSyncScope.GPU):
    return _atomic(ctx, ptr, val, cmp, None, sem, scope, "cas")
