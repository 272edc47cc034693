"""Target-independent lowering rules (registered under ``GENERIC``).

Elementwise ``arith`` / ``math`` ops are re-emitted per register on scalars; shape ops move values between
registers using the layouts' linear maps; ``convert_layout``, ``trans``, ``reshape``, ``cat``, ``join`` and
``split`` go through the shared scratch buffer when values must cross threads; ``tt.reduce`` combines in
registers, then across lanes with butterfly shuffles, then across warps through shared memory.
"""
from __future__ import annotations

from mlir import ir

from ..dialects import tt
from . import driver  # noqa: F401  (control-flow rules)
from .context import LoweringContext, is_tensor, scalar_type
from .registry import LoweringError, register

ARITH_MATH_ELEMENTWISE = (
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf", "arith.maximumf",
    "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.addi", "arith.subi", "arith.muli", "arith.divsi",
    "arith.divui", "arith.remsi", "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
    "arith.shrsi", "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.cmpi",
    "arith.cmpf", "arith.select", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
    "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.bitcast", "arith.index_cast",
    "arith.index_castui", "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", "arith.mulhisi",
    "arith.mulhiui", "math.absf", "math.absi", "math.fma", "math.copysign", "math.ctlz", "math.cttz",
    "math.ctpop", "math.floor", "math.ceil", "math.sqrt", "math.round", "math.roundeven", "math.trunc",
)


def _attrs(op) -> dict:
    return {a: op.attributes[a] for a in op.attributes} if op.attributes and isinstance(next(iter(op.attributes)), str) else {a.name: a.attr for a in op.attributes}


def operand_values(ctx: LoweringContext, op, n: int) -> list:
    """Each operand's values, a scalar operand repeated ``n`` times."""
    out = []
    for x in op.operands:
        v = ctx.get(x)
        out.append(v * n if len(v) == 1 and n != 1 else v)
    return out


def elementwise(ctx: LoweringContext, op, name=None, attrs=None) -> list:
    res_ty = op.results[0].type
    n = ctx.nregs(res_ty)
    ops = operand_values(ctx, op, n)
    sty = scalar_type(res_ty)
    a = _attrs(op) if attrs is None else attrs
    return [[ctx.op1(name or op.name, [o[i] for o in ops], sty, a) for i in range(n)]]


_CONTRACTIBLE = frozenset({"arith.addf", "arith.subf", "arith.mulf"})


@register(*ARITH_MATH_ELEMENTWISE)
def _elementwise(ctx, op):
    if op.name in _CONTRACTIBLE and getattr(ctx.options, "enable_fp_fusion", True) and (
            "fastmath" not in op.attributes or str(op.attributes["fastmath"]) == "#arith.fastmath<none>"):
        # Triton's enable_fp_fusion (default on): a * b + c may become one fma
        a = _attrs(op)
        a["fastmath"] = ir.Attribute.parse("#arith.fastmath<contract>")
        return elementwise(ctx, op, None, a)
    return elementwise(ctx, op)


@register("arith.constant")
def _constant(ctx, op):
    ty = op.results[0].type
    attr = op.attributes["value"]
    if not is_tensor(ty):
        return [[ctx.op1("arith.constant", [], scalar_type(ty), {"value": attr})]]
    dense = ir.DenseElementsAttr(attr)
    if not dense.is_splat:
        from .rules_extra import non_splat_constant

        return non_splat_constant(ctx, op)
    v = ctx.op1("arith.constant", [], scalar_type(ty), {"value": dense.get_splat_value()})
    return [[v] * ctx.nregs(ty)]


@register("tt.get_program_id")
def _program_id(ctx, op):
    return [[ctx.target.program_id(ctx, int(op.attributes["axis"].value))]]


@register("tt.get_num_programs")
def _num_programs(ctx, op):
    return [[ctx.target.num_programs(ctx, int(op.attributes["axis"].value))]]


@register("tt.make_range")
def _make_range(ctx, op):
    start = int(op.attributes["start"].value)
    idx = ctx.indices(op.results[0].type)
    out = []
    for (i,) in idx:
        out.append(i if start == 0 else ctx.op1("arith.addi", [i, ctx.c32(start)], ctx.i32()))
    return [out]


@register("tt.splat")
def _splat(ctx, op):
    return [ctx.get(op.operands[0]) * ctx.nregs(op.results[0].type)]


def _reg_lookup(src_ll, dst_ll, project) -> list:
    """For each dst register, the src register holding ``project(dst element)`` in the same thread, or raise."""
    def proj_bases(bases):
        return [project(b) for b in bases]

    if proj_bases(dst_ll.lane) != list(src_ll.lane) or proj_bases(dst_ll.warp) != list(src_ll.warp):
        return None
    where = {}
    for r in range(src_ll.num_regs):
        where.setdefault(src_ll.index(r), r)
    out = []
    for r in range(dst_ll.num_regs):
        key = project(dst_ll.index(r))
        if key not in where:
            return None
        out.append(where[key])
    return out


@register("tt.broadcast")
def _broadcast(ctx, op):
    src, res = op.operands[0], op.results[0]
    sshape = tuple(ir.RankedTensorType(src.type).shape)
    src_ll, dst_ll = ctx.linear(src.type), ctx.linear(res.type)
    vals = ctx.get(src)

    def project(b):
        return tuple(0 if sshape[d] == 1 else x for d, x in enumerate(b))

    m = _reg_lookup(src_ll, dst_ll, project)
    if m is None:
        # the layouts disagree on threads: move the source through shared memory first
        return [_exchange(ctx, op, [(vals, src.type, lambda idx: _linear(idx, sshape))], res.type,
                          lambda idx: _linear(tuple(0 if sshape[d] == 1 else x for d, x in enumerate(idx)), sshape))]
    return [[vals[i] for i in m]]


@register("tt.expand_dims")
def _expand_dims(ctx, op):
    src, res = op.operands[0], op.results[0]
    axis = int(op.attributes["axis"].value)
    src_ll, dst_ll = ctx.linear(src.type), ctx.linear(res.type)
    vals = ctx.get(src)

    def project(b):
        return b[:axis] + b[axis + 1:]

    m = _reg_lookup(src_ll, dst_ll, project)
    if m is None:
        sshape = tuple(ir.RankedTensorType(src.type).shape)
        return [_exchange(ctx, op, [(vals, src.type, lambda idx: _linear(idx, sshape))], res.type,
                          lambda idx: _linear(idx[:axis] + idx[axis + 1:], sshape))]
    return [[vals[i] for i in m]]


@register("tt.addptr")
def _addptr(ctx, op):
    res_ty = op.results[0].type
    n = ctx.nregs(res_ty)
    ptrs, offs = operand_values(ctx, op, n)
    elem = memory_type(tt.pointee(tt.elem_of(op.operands[0].type)))
    pty = scalar_type(res_ty)
    return [[ctx.op1("llvm.getelementptr", [p, o], pty,
                     {"rawConstantIndices": ir.DenseI32ArrayAttr.get([-2147483648]),
                      "elem_type": ir.TypeAttr.get(elem)}) for p, o in zip(ptrs, offs)]]


def memory_type(ty):
    """How an element type is stored in memory: i1 as i8, pointers as pointers, the rest as is."""
    if tt.is_ptr(ty):
        return ir.Type.parse("!llvm.ptr<1>", ty.context)
    if isinstance(ty, ir.IntegerType) and ty.width == 1:
        return ir.IntegerType.get_signless(8, ty.context)
    if isinstance(ty, ir.FloatType) and ty.width == 8:  # fp8: LLVM has no fp8 types
        return ir.IntegerType.get_signless(8, ty.context)
    return ty


@register("tt.bitcast")
def _bitcast(ctx, op):
    s, d = tt.elem_of(op.operands[0].type), tt.elem_of(op.results[0].type)
    if tt.is_ptr(s) and tt.is_ptr(d):
        return [ctx.get(op.operands[0])]
    return elementwise(ctx, op, "llvm.bitcast", {})


@register("tt.int_to_ptr")
def _int_to_ptr(ctx, op):
    return elementwise(ctx, op, "llvm.inttoptr", {})


@register("tt.ptr_to_int")
def _ptr_to_int(ctx, op):
    return elementwise(ctx, op, "llvm.ptrtoint", {})


@register("tt.precise_sqrt")
def _precise_sqrt(ctx, op):
    return elementwise(ctx, op, "math.sqrt", {})


@register("tt.precise_divf")
def _precise_divf(ctx, op):
    return elementwise(ctx, op, "arith.divf", {})


@register("tt.clampf")
def _clampf(ctx, op):
    n = ctx.nregs(op.results[0].type)
    x, lo, hi = operand_values(ctx, op, n)
    prop = "propagateNan" in op.attributes and int(ir.IntegerAttr(op.attributes["propagateNan"]).value) != 0
    mx, mn = ("arith.maximumf", "arith.minimumf") if prop else ("arith.maxnumf", "arith.minnumf")
    sty = scalar_type(op.results[0].type)
    return [[ctx.op1(mn, [ctx.op1(mx, [x[i], lo[i]], sty), hi[i]], sty) for i in range(n)]]


@register("tt.mulhiui")
def _mulhiui(ctx, op):
    n = ctx.nregs(op.results[0].type)
    x, y = operand_values(ctx, op, n)
    sty = scalar_type(op.results[0].type)
    w = ir.IntegerType(sty).width
    wide = ctx.int_ty(2 * w)
    out = []
    for i in range(n):
        p = ctx.op1("arith.muli", [ctx.op1("arith.extui", [x[i]], wide), ctx.op1("arith.extui", [y[i]], wide)], wide)
        out.append(ctx.op1("arith.trunci", [ctx.op1("arith.shrui", [p, ctx.const(wide, w)], wide)], sty))
    return [out]


@register("tt.fp_to_fp")
def _fp_to_fp(ctx, op):
    s, d = tt.elem_of(op.operands[0].type), tt.elem_of(op.results[0].type)
    sw, dw = ir.FloatType(s).width, ir.FloatType(d).width
    if sw == dw:
        raise LoweringError(f"fp_to_fp between {s} and {d} is not supported")
    return elementwise(ctx, op, "arith.extf" if dw > sw else "arith.truncf", {})


# ------------------------------------------------------------------------------------------------
# Moving values between threads through shared memory
# ------------------------------------------------------------------------------------------------

def owner_predicate(ctx, ll):
    """i1: this thread is the first holder of its elements (replicated lanes / warps skip), or None."""
    conds = []
    lane_bits = sum(1 << i for i, b in enumerate(ll.lane) if not any(b))
    warp_bits = sum(1 << i for i, b in enumerate(ll.warp) if not any(b))
    # lanes beyond the layout's lanes (fewer lanes than the warp) do not occur: the layout covers the warp
    for val, bits in ((ctx.lane_id(), lane_bits), (ctx.warp_id(), warp_bits)):
        if bits:
            m = ctx.op1("arith.andi", [val, ctx.c32(bits)], ctx.i32())
            conds.append(ctx.op1("arith.cmpi", [m, ctx.c32(0)], ir.IntegerType.get_signless(1),
                                 {"predicate": ir.IntegerAttr.get(ctx.int_ty(64), 0)}))
    if not conds:
        return None
    c = conds[0]
    for x in conds[1:]:
        c = ctx.op1("arith.andi", [c, x], c.type)
    return c


def _linear(idx, shape):
    """Row-major linear offset of an index given as i32 values or ints (constant-folded when ints)."""
    return ("lin", tuple(idx), tuple(shape))


def _emit_offset(ctx, spec):
    if isinstance(spec, tuple) and spec and spec[0] == "lin":
        _, idx, shape = spec
        off = None
        stride = 1
        for d in range(len(shape) - 1, -1, -1):
            i = idx[d]
            if isinstance(i, int):
                term = ctx.c32(i * stride) if i else None
            else:
                term = i if stride == 1 else ctx.op1("arith.muli", [i, ctx.c32(stride)], ctx.i32())
            if term is not None:
                off = term if off is None else ctx.op1("arith.addi", [off, term], ctx.i32())
            stride *= shape[d]
        return off if off is not None else ctx.c32(0)
    if isinstance(spec, tuple) and spec and spec[0] == "add":
        base = _emit_offset(ctx, spec[1])
        return ctx.op1("arith.addi", [base, ctx.c32(spec[2])], ctx.i32()) if spec[2] else base
    if isinstance(spec, tuple) and spec and spec[0] == "mul2":
        base = _emit_offset(ctx, spec[1])
        v = ctx.op1("arith.shli", [base, ctx.c32(1)], ctx.i32())
        return ctx.op1("arith.addi", [v, ctx.c32(spec[2])], ctx.i32()) if spec[2] else v
    return spec


def _smem_elem(ctx, ty):
    """The type a value of element type ``ty`` takes in the scratch buffer, and converters to / from it."""
    e = tt.elem_of(ty)
    if tt.is_ptr(e):
        i64 = ctx.int_ty(64)
        return (i64, lambda v: ctx.op1("llvm.ptrtoint", [v], i64),
                lambda v: ctx.op1("llvm.inttoptr", [v], scalar_type(e)), 8)
    if isinstance(e, ir.IntegerType) and e.width == 1:
        i8 = ctx.int_ty(8)
        return (i8, lambda v: ctx.op1("arith.extui", [v], i8),
                lambda v: ctx.op1("arith.trunci", [v], e), 1)
    if isinstance(e, ir.FloatType) and e.width == 8:  # fp8: moved as i8 (LLVM has no fp8 types)
        i8 = ctx.int_ty(8)
        return (i8, lambda v: ctx.op1("arith.bitcast", [v], i8),
                lambda v: ctx.op1("arith.bitcast", [v], e), 1)
    bits = ir.IntegerType(e).width if isinstance(e, ir.IntegerType) else ir.FloatType(e).width
    return e, (lambda v: v), (lambda v: v), max(1, bits // 8)


def _exchange(ctx, op, sources, dst_ty, dst_offset) -> list:
    """Write every source tensor (values, type, index -> offset spec) to ``op``'s scratch buffer, then read the
    destination's registers at ``dst_offset(index)`` (one barrier between; see ``ctx.scratch``)."""
    sty, to_s, from_s, nbytes = _smem_elem(ctx, dst_ty)
    size = 0
    for vals, ty, off in sources:
        n = 1
        for s in ir.RankedTensorType(ty).shape:
            n *= s
        size += n
    buf = ctx.scratch(op, size * nbytes)
    for vals, ty, off in sources:
        idx = ctx.indices(ty)
        seen = set()
        ll = ctx.linear(ty)
        for r, (v, ix) in enumerate(zip(vals, idx)):
            if ll.index(r) in seen:  # a register holding an element again (replication) stores it once
                continue
            seen.add(ll.index(r))
            o = _emit_offset(ctx, off(ix))
            ctx.op("llvm.store", [to_s(v), ctx.smem_ptr(o, sty, buf.base)])
    ctx.barrier()
    out = []
    for ix in ctx.indices(dst_ty):
        o = _emit_offset(ctx, dst_offset(ix))
        out.append(from_s(ctx.op1("llvm.load", [ctx.smem_ptr(o, sty, buf.base)], sty)))
    ctx.release(buf)
    return out


@register("ttg.barrier")
def _barrier(ctx, op):
    """membar's barrier: every thread of the CTA waits (``bar.sync 0`` on CUDA)."""
    ctx.barrier()
    return []


@register("ttg.convert_layout")
def _convert_layout(ctx, op):
    src, res = op.operands[0], op.results[0]
    vals = ctx.get(src)
    src_ll, dst_ll = ctx.linear(src.type), ctx.linear(res.type)
    if src_ll == dst_ll:
        return [vals]
    m = _reg_lookup(src_ll, dst_ll, lambda b: b)
    if m is not None:
        return [[vals[i] for i in m]]
    shape = tuple(ir.RankedTensorType(src.type).shape)
    return [_exchange(ctx, op, [(vals, src.type, lambda ix: _linear(ix, shape))], res.type,
                      lambda ix: _linear(ix, shape))]


@register("tt.trans")
def _trans(ctx, op):
    src, res = op.operands[0], op.results[0]
    order = [int(x) for x in op.attributes["order"]]
    shape = tuple(ir.RankedTensorType(src.type).shape)
    # result index j corresponds to source index i with i[order[k]] = j[k]
    def src_of(ix):
        s = [None] * len(ix)
        for k, o in enumerate(order):
            s[o] = ix[k]
        return tuple(s)
    return [_exchange(ctx, op, [(ctx.get(src), src.type, lambda ix: _linear(ix, shape))], res.type,
                      lambda ix: _linear(src_of(ix), shape))]


@register("tt.reshape")
def _reshape(ctx, op):
    src, res = op.operands[0], op.results[0]
    sshape = tuple(ir.RankedTensorType(src.type).shape)
    dshape = tuple(ir.RankedTensorType(res.type).shape)
    src_ll, dst_ll = ctx.linear(src.type), ctx.linear(res.type)
    return [_exchange(ctx, op, [(ctx.get(src), src.type, lambda ix: _linear(ix, sshape))], res.type,
                      lambda ix: _linear(ix, dshape))]


@register("tt.cat")
def _cat(ctx, op):
    a, b = op.operands
    res = op.results[0]
    shape = tuple(ir.RankedTensorType(a.type).shape)
    n = 1
    for s in shape:
        n *= s
    dshape = tuple(ir.RankedTensorType(res.type).shape)
    return [_exchange(ctx, op, [(ctx.get(a), a.type, lambda ix: _linear(ix, shape)),
                            (ctx.get(b), b.type, lambda ix: ("add", _linear(ix, shape), n))], res.type,
                      lambda ix: _linear(ix, dshape))]


@register("tt.join")
def _join(ctx, op):
    a, b = op.operands
    res = op.results[0]
    shape = tuple(ir.RankedTensorType(a.type).shape)
    dshape = tuple(ir.RankedTensorType(res.type).shape)
    return [_exchange(ctx, op, [(ctx.get(a), a.type, lambda ix: ("mul2", _linear(ix, shape), 0)),
                            (ctx.get(b), b.type, lambda ix: ("mul2", _linear(ix, shape), 1))], res.type,
                      lambda ix: _linear(ix, dshape))]


@register("tt.split")
def _split(ctx, op):
    src = op.operands[0]
    sshape = tuple(ir.RankedTensorType(src.type).shape)
    dshape = sshape[:-1]
    outs = []
    for k, r in enumerate(op.results):
        outs.append(_exchange(ctx, op, [(ctx.get(src), src.type, lambda ix: _linear(ix, sshape))], r.type,
                              lambda ix, k=k: ("mul2", _linear(ix, dshape), k)))
    return outs


# ------------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------------

def _combine(ctx, sym, acc, new):
    from .driver import apply_combine

    return apply_combine(ctx, sym, list(acc) + list(new))


def shuffle_xor(ctx, v, mask):
    """Butterfly shuffle of any scalar (split / extended to 32-bit pieces as needed)."""
    ty = v.type
    i32 = ctx.i32()
    if isinstance(ty, ir.IntegerType) or isinstance(ty, ir.FloatType):
        bits = ty.width
    else:
        raise LoweringError(f"cannot shuffle a value of type {ty}")
    if bits == 32:
        as_i = v if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [v], i32)
        r = ctx.target.shuffle_xor(ctx, as_i, mask)
        return r if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [r], ty)
    if bits < 32:
        ity = ctx.int_ty(bits)
        as_i = v if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [v], ity)
        r = ctx.target.shuffle_xor(ctx, ctx.op1("arith.extui", [as_i], i32), mask)
        r = ctx.op1("arith.trunci", [r], ity)
        return r if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [r], ty)
    if bits == 64:
        i64 = ctx.int_ty(64)
        as_i = v if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [v], i64)
        lo = ctx.op1("arith.trunci", [as_i], i32)
        hi = ctx.op1("arith.trunci", [ctx.op1("arith.shrui", [as_i, ctx.const(i64, 32)], i64)], i32)
        lo, hi = ctx.target.shuffle_xor(ctx, lo, mask), ctx.target.shuffle_xor(ctx, hi, mask)
        r = ctx.op1("arith.ori", [ctx.op1("arith.extui", [lo], i64),
                                  ctx.op1("arith.shli", [ctx.op1("arith.extui", [hi], i64), ctx.const(i64, 32)], i64)],
                    i64)
        return r if isinstance(ty, ir.IntegerType) else ctx.op1("arith.bitcast", [r], ty)
    raise LoweringError(f"cannot shuffle a value of type {ty}")


@register("tt.reduce")
def _reduce(ctx, op):
    axis = int(op.attributes["axis"].value)
    sym = ir.FlatSymbolRefAttr(op.attributes["combine"]).value
    srcs = list(op.operands)
    k = len(srcs)
    ll = ctx.linear(srcs[0].type)
    vals = [ctx.get(s) for s in srcs]

    def drop(ix):
        return ix[:axis] + ix[axis + 1:]

    # 1. within the thread
    groups: dict = {}
    seen = set()
    for r in range(ll.num_regs):
        ix = ll.index(r)
        if ix in seen:
            continue
        seen.add(ix)
        groups.setdefault(drop(ix), []).append(r)
    acc = {}
    for key, regs in groups.items():
        a = [vals[j][regs[0]] for j in range(k)]
        for r in regs[1:]:
            a = _combine(ctx, sym, a, [vals[j][r] for j in range(k)])
        acc[key] = a
    # 2. across lanes
    for i, b in enumerate(ll.lane):
        if b[axis] == 0:
            continue
        if any(x for d, x in enumerate(b) if d != axis):
            raise LoweringError("reduce over a layout whose lanes mix dimensions is not supported")
        for key in acc:
            other = [shuffle_xor(ctx, v, 1 << i) for v in acc[key]]
            acc[key] = _combine(ctx, sym, acc[key], other)
    # 3. across warps, through shared memory laid out as the allocation analysis sizes it: the operand's shape
    #    with shape[axis] = the warps along axis (row-major; operands one after the other, widest first).  Each
    #    warp writes its partial at its position along axis, then every thread combines the partials of its keys.
    wbits = [i for i, b in enumerate(ll.warp) if b[axis] != 0]
    if wbits:
        keys = list(acc)
        nw_axis = 1 << len(wbits)
        sshape = list(ir.RankedTensorType(srcs[0].type).shape)
        sshape[axis] = nw_axis
        numel = 1
        for x in sshape:
            numel *= x
        elems = [_smem_elem(ctx, s.type) for s in srcs]
        slots = [None] * k
        off = 0
        for j in sorted(range(k), key=lambda j: -elems[j][3]):
            slots[j] = off
            off += numel * elems[j][3]
        buf = ctx.scratch(op, off)
        warp = ctx.warp_id()
        wpos = None  # this warp's position along axis
        for t, i in enumerate(wbits):
            bit = ctx.op1("arith.andi", [ctx.op1("arith.shrui", [warp, ctx.c32(i)], ctx.i32()) if i else warp,
                                         ctx.c32(1)], ctx.i32())
            if t:
                bit = ctx.op1("arith.shli", [bit, ctx.c32(t)], ctx.i32())
            wpos = bit if wpos is None else ctx.op1("arith.ori", [wpos, bit], ctx.i32())
        idx = ctx.indices(srcs[0].type)
        where = {}
        for key, regs in groups.items():
            where[key] = idx[regs[0]]
        for key in keys:
            ix = list(where[key])
            ix[axis] = wpos
            o = _emit_offset(ctx, _linear(tuple(ix), tuple(sshape)))
            for j in range(k):
                sty, to_s, from_s, nbytes = elems[j]
                ctx.op("llvm.store", [to_s(acc[key][j]), ctx.smem_ptr(o, sty, buf.base + slots[j])])
        ctx.barrier()
        for key in keys:
            a = None
            for c in range(nw_axis):
                ix = list(where[key])
                ix[axis] = c
                o = _emit_offset(ctx, _linear(tuple(ix), tuple(sshape)))
                got = []
                for j in range(k):
                    sty, to_s, from_s, nbytes = elems[j]
                    got.append(from_s(ctx.op1("llvm.load", [ctx.smem_ptr(o, sty, buf.base + slots[j])], sty)))
                a = got if a is None else _combine(ctx, sym, a, got)
            acc[key] = a
        ctx.release(buf)
    # 4. results in the slice layout's register order
    res_ty = op.results[0].type
    if not is_tensor(res_ty):
        (only,) = acc.values()
        return [[only[j]] for j in range(k)]
    rll = ctx.linear(res_ty)
    out = [[] for _ in range(k)]
    for r in range(rll.num_regs):
        key = rll.index(r)
        if key not in acc:
            raise LoweringError(f"internal: reduce result register {r} ({key}) has no partial result")
        for j in range(k):
            out[j].append(acc[key][j])
    return out


# more generic rules, one family a file (registered on import)
from . import rules_extra, rules_scan  # noqa: E402,F401
