"""tl's semantic rules for dots and the rest: ``tl.dot`` (and ``dot_scaled``'s pieces), histogram, gather, inline
assembly, external (libdevice) functions (built on :mod:`.semantic_core`; gathered by :mod:`.semantic`).
"""
from __future__ import annotations

import builtins as _py

from . import core as tl
from .core import SemanticError, _unwrap, block_type, dtype, tensor
from .semantic_core import (_b, _enums, _keyword, _norm_axis, _private_func, _result, binary_op_type_checking,
                            broadcast_impl_shape, broadcast_impl_value, cast, computation_type_impl, constant,
                            reshape, to_tensor)


# ----------------------------------------------------------------------------------------------
# dot
# ----------------------------------------------------------------------------------------------

def _imprecise_acc_default() -> int:
    """``max_num_imprecise_acc`` of an fp8 dot that does not say: the compile options'
    ``max_num_imprecise_acc_default`` when set, else Triton's: unlimited (2**30, all of K in the instruction) on
    sm_90, 0 elsewhere."""
    from . import target_info

    opts = target_info.current_options()
    v = getattr(opts, "max_num_imprecise_acc_default", None)
    if v is not None:
        return int(v)
    t = target_info.current_target()
    return 2 ** 30 if t is not None and t.backend == "cuda" and t.arch == 90 else 0


def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=tl.float32) -> tensor:
    out_dtype = _unwrap(out_dtype)
    input_precision = _unwrap(input_precision)
    allow_tf32 = _unwrap(allow_tf32)
    if not isinstance(a, tensor) or not isinstance(b, tensor) or not a.type.is_block() or not b.type.is_block():
        raise SemanticError("dot() operands must be tensors")
    sa, sb = a.type.shape, b.type.shape
    if len(sa) != len(sb) or len(sa) < 2:
        raise SemanticError(f"dot() operands must both be 2-D or both batched with the same rank, got shapes "
                            f"{list(sa)} and {list(sb)}")
    if len(sa) > 3:  # several batch dimensions: one, the product of them (reshapes are free in registers)
        if list(sa[:-2]) != list(sb[:-2]):
            raise SemanticError(f"dot() batch dimensions must match, got shapes {list(sa)} and {list(sb)}")
        nb = 1
        for d in sa[:-2]:
            nb *= d
        acc3 = acc if acc is None or _unwrap(acc) is None else reshape(to_tensor(acc), [nb, sa[-2], sb[-1]])
        out = dot(reshape(a, [nb] + list(sa[-2:])), reshape(b, [nb] + list(sb[-2:])), acc3, input_precision,
                  allow_tf32, max_num_imprecise_acc, out_dtype)
        return reshape(out, list(sa[:-1]) + [sb[-1]])
    if sa[-1] != sb[-2]:
        raise SemanticError(f"dot() inner dimensions must match: first input shape {list(sa)}, second input "
                            f"shape {list(sb)}")
    at, bt = a.type.scalar, b.type.scalar
    if at.is_int() != bt.is_int():
        raise SemanticError(f"dot() operands must both be integers or both be floats, got {at} and {bt}")
    if at != bt:
        if at.is_fp8() or bt.is_fp8():
            pass
        else:
            ret = computation_type_impl(at, False, bt, False, False)
            a, b = cast(a, ret), cast(b, ret)
    if input_precision is None:
        input_precision = "tf32" if allow_tf32 in (None, True) else "ieee"
    precision = _keyword(_enums().InputPrecision, input_precision, "input_precision")
    # the result type, as Triton: int32 for integers, fp32 for fp32 / bf16 operands, fp64 for fp64, else out_dtype
    if a.type.scalar.is_int():
        ret_scalar = tl.int32
    elif out_dtype == tl.bfloat16:
        raise SemanticError("dot() out_dtype=bfloat16 is unsupported: use out_dtype=tl.float32 (or tl.float16) and "
                            "cast the result with .to(tl.bfloat16)")
    elif a.type.scalar in (tl.float32, tl.bfloat16):
        ret_scalar = tl.float32
    elif a.type.scalar == tl.float64:  # fp64 accumulates in fp64 whatever out_dtype says, as in Triton
        ret_scalar = tl.float64
    else:
        ret_scalar = out_dtype
    out_shape = list(sa[:-1]) + [sb[-1]]
    if acc is None or _unwrap(acc) is None:
        acc_t = constant(0, block_type(ret_scalar, out_shape))
    else:
        acc_t = to_tensor(acc)
        if not acc_t.type.is_block() or list(acc_t.type.shape) != out_shape:
            raise SemanticError(f"dot() accumulator shape must be {out_shape}, got {acc_t.type}")
        if acc_t.type.scalar != ret_scalar:
            raise SemanticError(f"dot() accumulator must be {ret_scalar} for {a.type.scalar} operands with "
                                f"out_dtype={out_dtype}, got {acc_t.type.scalar} (pass out_dtype={acc_t.type.scalar} "
                                "for a 16-bit accumulator)")
    # how many products Hopper's fp8 tensor cores may add in their reduced precision before fp32 (fp8 only)
    imprecise = _unwrap(max_num_imprecise_acc)
    if a.type.scalar.is_fp8() and b.type.scalar.is_fp8():
        if imprecise is None:
            imprecise = _imprecise_acc_default()
        elif imprecise > sa[-1]:
            raise SemanticError(f"max_num_imprecise_acc ({imprecise}) must be <= K ({sa[-1]})")
    bld = _b()
    attrs = {"inputPrecision": bld.i32_attr(precision), "maxNumImpreciseAcc": bld.i32_attr(imprecise or 0)}
    return _result(bld.create("tt.dot", [a, b, acc_t], [bld.ty(acc_t.type)], attrs), acc_t.type)


# ----------------------------------------------------------------------------------------------
# histogram, gather, inline assembly, external (libdevice) functions
# ----------------------------------------------------------------------------------------------

def _cx_int(v, what, lo=None):
    if isinstance(v, tensor):
        raise SemanticError(f"{what} must be a compile-time integer (tl.constexpr), got a tensor")
    v = _unwrap(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise SemanticError(f"{what} must be a compile-time integer, got {v!r}")
    if lo is not None and v < lo:
        raise SemanticError(f"{what} must be >= {lo}, got {v}")
    return v


def _cx_str(v, what):
    if isinstance(v, tensor):
        raise SemanticError(f"{what} must be a compile-time string (tl.constexpr), got a tensor")
    v = _unwrap(v)
    if not isinstance(v, str):
        raise SemanticError(f"{what} must be a compile-time string, got {v!r} ({type(v).__name__})")
    return v


def histogram(x, num_bins, mask=None) -> tensor:
    """``tt.histogram``: int32 counts of the values 0 .. num_bins-1 of a 1-D 32-bit integer tensor."""
    x = to_tensor(x)
    nb = _cx_int(num_bins, "histogram() num_bins", 1)
    if nb & (nb - 1):
        raise SemanticError(f"histogram() num_bins must be a power of 2, got {nb}")
    if not x.type.is_block() or len(x.type.shape) != 1:
        raise SemanticError(f"histogram() needs a 1-D tensor, got {x.type}")
    st = x.type.scalar
    if not (st.is_int() and not st.is_bool() and st.int_bitwidth == 32):
        raise SemanticError(f"histogram() needs a 32-bit integer tensor (int32 / uint32), got {st}")
    operands = [x]
    mask = _unwrap(mask)
    if mask is not None:
        mask = to_tensor(mask)
        if not mask.type.scalar.is_bool():
            raise SemanticError(f"histogram() mask must be a boolean (int1) tensor, got {mask.type.scalar}")
        operands.append(broadcast_impl_shape(mask, x.type.shape))
    ty = block_type(tl.int32, [nb])
    b = _b()
    return _result(b.create("tt.histogram", operands, [b.ty(ty)]), ty)


def gather(src, index, axis) -> tensor:
    """``tt.gather``: ``out[i][j] = src[i][index[i][j]]`` along ``axis``; the result has index's shape."""
    src, index = to_tensor(src), to_tensor(index)
    axis = _cx_int(axis, "gather() axis")
    if not src.type.is_block() or not index.type.is_block():
        raise SemanticError(f"gather() needs tensors, got src {src.type} and index {index.type}")
    if not index.type.scalar.is_int() or index.type.scalar.is_bool():
        raise SemanticError(f"gather() index must be an integer tensor, got {index.type.scalar}")
    ss, ish = src.type.shape, index.type.shape
    if len(ss) != len(ish):
        raise SemanticError(f"gather() source and index must have the same rank, got shapes {list(ss)} and "
                            f"{list(ish)}")
    axis = _norm_axis(axis, len(ss))
    for d in _py.range(len(ss)):
        if d != axis and ss[d] != ish[d]:
            raise SemanticError(f"gather() index dimension {d} ({ish[d]}) must match the source's ({ss[d]}); "
                                f"only the gather axis {axis} may differ (shapes {list(ss)} and {list(ish)})")
    ty = block_type(src.type.scalar, ish)
    b = _b()
    return _result(b.create("tt.gather", [src, index], [b.ty(ty)], {"axis": b.i32_attr(axis)}), ty)


def _broadcast_all(args):
    """Broadcast tensors to one shape (no type promotion); returns (tensors, the shape or None)."""
    args = list(args)
    if not args:
        return args, None
    head = args[0]
    for i in _py.range(1, len(args)):
        head, args[i] = broadcast_impl_value(head, args[i])
    for i in _py.range(1, len(args)):
        head, args[i] = broadcast_impl_value(head, args[i])
    args[0] = head
    return args, (head.type.shape if head.type.is_block() else None)


def map_elementwise(fn, args, pack=1):
    """``tt.map_elementwise``: ``fn`` (a @jit function of scalars) applied to every element of ``args`` (broadcast
    to one shape), ``pack`` elements of each operand per call; one tensor, or a tuple when ``fn`` returns several.

    ``fn`` becomes a private function like a reduction's combine function, taking for operand i its elements
    ``i*pack .. i*pack+pack-1`` and returning result r's ``pack`` elements at ``r*pack ..``; so its body may branch
    per element (an ``if`` runs one side only), which ``tl.where`` cannot."""
    from mlir import ir
    pack = _cx_int(pack, "map_elementwise() pack", 1)
    if pack < 1:
        raise SemanticError(f"map_elementwise() pack must be at least 1, got {pack}")
    a = list(args)
    if not a:
        raise SemanticError("map_elementwise() needs at least one tensor argument")
    vals, shape = _broadcast_all([to_tensor(x) for x in a])
    b = _b()
    if shape is None:  # scalars only: the function itself
        if pack != 1:
            raise SemanticError("map_elementwise() of scalars takes pack=1")
        return b.codegen.call_function(fn, vals) if b.codegen is not None else fn(*vals)
    elem_types = [v.type.scalar for v in vals]
    in_types = [b.ty(t) for t in elem_types for _ in range(pack)]
    name = b.unique_name("map_" + getattr(fn, "__name__", "fn"))
    saved_ip, saved_loc = b.ip, b.loc
    func, block = _private_func(name, in_types)  # its results are known once the body is built
    b.ip = ir.InsertionPoint(block)
    try:
        sargs = [tensor(block.arguments[i], elem_types[i // pack]) for i in range(len(in_types))]
        res = b.codegen.call_function(fn, sargs) if b.codegen is not None else fn(*sargs)
        single = not isinstance(res, (tuple, list))
        res = [res] if single else list(res)
        outs = []
        for r in res:
            r = _unwrap(r)
            if r is None:
                raise SemanticError("the function given to map_elementwise() must return a value on every path")
            r = to_tensor(r) if not isinstance(r, tensor) else r
            if r.type.is_block():
                raise SemanticError("the function given to map_elementwise() must return scalars")
            outs.append(r)
        if len(outs) % pack:
            raise SemanticError(f"map_elementwise(pack={pack}): the function must return a multiple of {pack} "
                                f"values (pack per result), got {len(outs)}")
        rtypes = [o.type for o in outs[::pack]]
        for k in range(1, pack):
            if [o.type for o in outs[k::pack]] != rtypes:
                raise SemanticError("map_elementwise(): the packed results of one result differ in type")
        b.create("func.return", outs, [])
        func.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(in_types, [b.ty(o.type) for o in outs], b.context))
    finally:
        b.ip, b.loc = saved_ip, saved_loc
    rtys = [block_type(t, shape) for t in rtypes]
    op = b.create("tt.map_elementwise", vals, [b.ty(t) for t in rtys],
                  {"combine": ir.FlatSymbolRefAttr.get(name, b.context), "pack": b.i32_attr(pack)})
    res = tuple(tensor(r, t) for r, t in zip(op.results, rtys))
    return res[0] if single else res  # as Triton: a tuple whenever fn returned one (pack > 1 too)


def inline_asm_elementwise(asm, constraints, args, dt, is_pure, pack):
    """``tt.elementwise_inline_asm``: returns one tensor, or a tuple when ``dt`` is a sequence of dtypes."""
    asm = _cx_str(asm, "inline_asm_elementwise() asm")
    constraints = _cx_str(constraints, "inline_asm_elementwise() constraints")
    pack = _cx_int(pack, "inline_asm_elementwise() pack", 1)
    if isinstance(is_pure, tensor) or not isinstance(_unwrap(is_pure), (bool, int)):
        raise SemanticError(f"inline_asm_elementwise() is_pure must be a compile-time bool, got {is_pure!r}")
    dt = _unwrap(dt)
    multi = isinstance(dt, (tuple, list))
    dts = [_unwrap(d) for d in dt] if multi else [dt]
    if not dts:
        raise SemanticError("inline_asm_elementwise() needs at least one result dtype")
    for d in dts:
        if not isinstance(d, dtype) or d.is_ptr() or d.is_block() or d.is_void():
            raise SemanticError(f"inline_asm_elementwise() dtype must be a scalar tl dtype, got {d!r}")
    a = _unwrap(args)
    if isinstance(a, tensor):
        a = [a]
    if not isinstance(a, (tuple, list)):
        raise SemanticError(f"inline_asm_elementwise() args must be a list of tensors, got {a!r}")
    vals, shape = _broadcast_all([to_tensor(x) for x in a])
    rtys = [block_type(d, shape) if shape is not None else d for d in dts]
    b = _b()
    op = b.create("tt.elementwise_inline_asm", vals, [b.ty(t) for t in rtys],
                  {"asm_string": b.str_attr(asm), "constraints": b.str_attr(constraints),
                   "pure": b.bool_attr(bool(_unwrap(is_pure))), "packed_element": b.i32_attr(pack)})
    res = tuple(tensor(r, t) for r, t in zip(op.results, rtys))
    return res if multi else res[0]


def _dtype_names(types):
    return "(" + ", ".join(str(t) for t in types) + ")"


def extern_elementwise(lib_name, lib_path, args, arg_type_symbol_dict, is_pure, what="extern_elementwise"):
    """``tt.extern_elementwise``: the variant whose argument dtypes match (Triton's dispatch: exact dtypes
    first, then the arguments promoted to a common type as arithmetic would), broadcast to one shape."""
    table = {tuple(_unwrap(t) for t in k): v for k, v in dict(arg_type_symbol_dict).items()}
    if not table:
        raise SemanticError(f"{what}: the table of argument types is empty")
    nargs = len(next(iter(table)))
    a = _unwrap(args)
    a = list(a) if isinstance(a, (tuple, list)) else [a]
    if len(a) != nargs:
        raise SemanticError(f"{what}() takes {nargs} argument(s), got {len(a)}")
    vals = [to_tensor(x) for x in a]
    types = tuple(v.type.scalar for v in vals)
    if types not in table and nargs > 1:
        # the arithmetic promotion of the arguments: (fp64, 2.0) -> (fp64, fp64), (fp32, int32 tensor) -> fp32
        prom = list(a)
        for i in _py.range(1, nargs):
            prom[0], prom[i] = binary_op_type_checking(prom[0], prom[i])
        for i in _py.range(1, nargs):
            prom[0], prom[i] = binary_op_type_checking(prom[0], prom[i])
        if tuple(p.type.scalar for p in prom) in table:
            vals, types = prom, tuple(p.type.scalar for p in prom)
    if types not in table:
        have = ", ".join(_dtype_names(k) for k in table)
        raise SemanticError(f"{what}() has no variant for argument types {_dtype_names(types)}; supported: "
                            f"{have}")
    symbol, ret = table[types]
    symbol, ret = _unwrap(symbol), _unwrap(ret)
    vals, shape = _broadcast_all(vals)
    rty = block_type(ret, shape) if shape is not None else ret
    b = _b()
    op = b.create("tt.extern_elementwise", vals, [b.ty(rty)],
                  {"libname": b.str_attr(_cx_str(lib_name, "lib_name")),
                   "libpath": b.str_attr(_cx_str(lib_path, "lib_path")), "symbol": b.str_attr(symbol),
                   "pure": b.bool_attr(bool(_unwrap(is_pure)))})
    return _result(op, rty)
