"""tl's semantic rules, the base of the others: helpers, type promotion, broadcasting and shapes, casts, arithmetic,
creation, reductions and scans, debugging. :mod:`.semantic` gathers these and :mod:`.semantic_memory` /
:mod:`.semantic_dot` (which build on this module) under one name, the one the language imports.

Every function takes tl values (``tensor``, ``constexpr`` or Python numbers) and returns ``tensor``s; the ops
go through :func:`core.current_builder`.  User mistakes raise :class:`core.SemanticError`.
"""
from __future__ import annotations

import builtins as _py
import functools
import numbers
import types
from typing import Optional

from . import core as tl
from .core import SemanticError, _unwrap, block_type, constexpr, current_builder, dtype, pointer_type, tensor


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _b():
    return current_builder()


def _ir():
    from mlir import ir
    return ir


def _enums():
    """:mod:`tritium.dialects.enums`, imported when a kernel is compiled (importing tl, as a warm launch does,
    imports nothing of tritium.dialects)."""
    from ..dialects import enums
    return enums


def _is_scalar_number(x) -> bool:
    x = _unwrap(x)
    return isinstance(x, (bool, numbers.Number)) and not isinstance(x, tensor)


def _with_shape(t: dtype, like) -> dtype:
    """``t`` (a scalar type) with the shape of ``like`` (a tl type)."""
    return block_type(t, like.shape) if like.is_block() else t


def _result(op, ty: dtype) -> tensor:
    return tensor(op.result, ty)


def _op1(name, x: tensor, ty: Optional[dtype] = None, attrs=None) -> tensor:
    ty = ty or x.type
    return _result(_b().create(name, [x], [_b().ty(ty)], attrs), ty)


def _op2(name, x: tensor, y: tensor, ty: Optional[dtype] = None, attrs=None) -> tensor:
    ty = ty or x.type
    return _result(_b().create(name, [x, y], [_b().ty(ty)], attrs), ty)


def range_operands(lb, ub, step):
    """A ``for`` over ``range(lb, ub, step)`` (the frontend's scf.for, step-through mode's Python loop): the bounds
    checked (integer scalars, a non-zero constant step) and cast to the induction variable's type, int64 when a bound
    is 64-bit, else int32: ``(lb, ub, step, type)``."""
    for v, what in ((lb, "start"), (ub, "end"), (step, "step")):
        if isinstance(v, tensor):
            if v.type.is_block() or not v.type.scalar.is_int():
                raise SemanticError(f"range {what} must be an integer scalar, got {v.type}")
        elif not isinstance(_unwrap(v), int):
            raise SemanticError(f"range {what} must be an integer, got {_unwrap(v)!r}")
    if not isinstance(step, tensor) and _unwrap(step) == 0:
        raise SemanticError("range step must not be zero")
    lbt, ubt, stt = (to_tensor(x) for x in (lb, ub, step))
    iv_ty = integer_promote_impl(integer_promote_impl(lbt.type, ubt.type), stt.type)
    iv_ty = tl.int64 if not iv_ty.is_bool() and iv_ty.int_bitwidth == 64 else tl.int32
    return (*(cast(x, iv_ty) for x in (lbt, ubt, stt)), iv_ty)


def builtin_minmax(is_min: bool, args):
    """Python's ``min(a, b, ...)`` / ``max`` in a kernel: elementwise ``minimum`` / ``maximum`` folded left when an
    argument is a tensor, else Python's on the values."""
    if any(isinstance(a, tensor) for a in args):
        acc = args[0]
        for a in args[1:]:
            acc = minimum(acc, a) if is_min else maximum(acc, a)
        return acc if isinstance(acc, tensor) else to_tensor(acc)
    vals = [_unwrap(a) for a in args]
    return _py.min(vals) if is_min else _py.max(vals)


def builtin_len(x):
    """Python's ``len(x)`` in a kernel: a tensor's first dimension (a constexpr), else Python's."""
    if isinstance(x, tensor):
        if not x.type.is_block():
            raise SemanticError("len() of a scalar tensor")
        return constexpr(x.type.shape[0])
    return constexpr(_py.len(_unwrap(x)))


def kernel_assert(cond, msg="") -> None:
    """A kernel's ``assert cond, msg``: ``device_assert`` on a tensor, else checked now (a static assertion)."""
    if isinstance(cond, tensor):
        device_assert(cond, msg)
    elif not _unwrap(cond):
        raise SemanticError(f"Static assertion failed: {msg}")


def kernel_value(v):
    """A Python value reaching a kernel (a call's result, an argument): None, numbers, strings, slices and dtypes
    as ``constexpr``; tensors and other objects as they are."""
    if v is None or isinstance(v, (bool, int, float, str, slice)) or isinstance(v, dtype):
        return constexpr(v)
    return v


def kernel_attribute(obj, name: str):
    """``obj.name`` in a kernel (the frontend's attribute access, step-through mode's for tensor attribute names).
    As Triton: a constexpr's ``value`` is its value, its ``type`` ``constexpr_type(value)``, its other attributes
    are its value's; a Python number (a
    literal assigned in a kernel, a constexpr's value) has, where Python's number has no such attribute, those of
    the scalar tensor Triton makes of an assigned literal (``a = 5; a.to(tl.float32)``, ``a.dtype`` is int32,
    ``a.cast(...)``, ``a.item()``)."""
    if isinstance(obj, tensor):
        return getattr(obj, name)
    if isinstance(obj, constexpr) and name == "value":
        return obj.value
    if isinstance(obj, constexpr) and name == "type":  # constexpr_type(value); an assigned number's dtype
        return obj.type
    v = _unwrap(obj)
    if isinstance(v, types.ModuleType) and not hasattr(v, name):
        raise AttributeError(f"module '{v.__name__}' has no attribute '{name}'")
    if _is_scalar_number(v) and not hasattr(v, name) and tl.is_tensor_attribute(name):
        return getattr(to_tensor(obj), name)
    return getattr(v, name)


def kernel_param_type(param, sig: str):
    """The tl type of a kernel's run-time parameter ``param`` (a ``KernelParam``) of signature type ``sig``: a
    pointer annotated ``tl.const`` points to const data (``*k`` in Triton's signatures)."""
    ty = tl.str_to_ty(sig)
    if isinstance(ty, pointer_type) and not ty.is_const() and tl.is_const_annotation(param.annotation):
        ty = pointer_type(ty.element_ty, ty.address_space, const=True)
    return ty


def bind_callee(fn, args, kwargs, opaque=()) -> dict:
    """The parameters of ``@jit`` function ``fn`` called from a kernel with ``args`` / ``kwargs``, bound as Triton
    binds them: a constexpr-annotated parameter takes a non-tensor value as ``constexpr`` (a tensor passed there,
    as the fused-attention tutorial's ``offs_m``, stays a tensor), the others :func:`kernel_value`; values of the
    ``opaque`` types (the frontend's lambdas) pass as they are."""
    try:
        bound = fn.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise SemanticError(f"wrong arguments to @jit function '{fn.__name__}': {e}") from None
    bound.apply_defaults()
    scope = {}
    for p in fn.params:
        v = bound.arguments[p.name]
        if not isinstance(v, opaque):
            v = constexpr(v) if p.is_constexpr and not isinstance(v, tensor) else kernel_value(v)
        scope[p.name] = v
    return scope


def scalar_type_of_python(x) -> dtype:
    x = _unwrap(x)
    if isinstance(x, bool):
        return tl.int1
    if isinstance(x, int):
        if -2 ** 31 <= x < 2 ** 31:
            return tl.int32
        if 2 ** 31 <= x < 2 ** 32:
            return tl.uint32
        if -2 ** 63 <= x < 2 ** 63:
            return tl.int64
        if 2 ** 63 <= x < 2 ** 64:
            return tl.uint64
        raise SemanticError(f"integer {x} cannot be represented in 64 bits")
    if isinstance(x, float):
        ax = _py.abs(x)
        if x != x or ax == float("inf") or x == 0.0 or 2 ** -126 <= ax <= 3.4028234663852886e38:
            return tl.float32
        return tl.float64
    raise SemanticError(f"cannot convert {x!r} of type {type(x).__name__} to a tensor")


def _int_attr_value(v: int, width: int) -> int:
    if width == 1:
        return -1 if v & 1 else 0
    v &= (1 << width) - 1
    if v >= 1 << (width - 1):
        v -= 1 << width
    return v


def _scalar_attr(value, ty: dtype):
    ir = _ir()
    b = _b()
    t = b.ty(ty)
    if ty.is_floating():
        return ir.FloatAttr.get(t, float(value))
    if ty.is_int():
        return ir.IntegerAttr.get(t, _int_attr_value(int(value), ty.int_bitwidth))
    raise SemanticError(f"cannot make a constant of type {ty}")


def poison(ty: dtype) -> tensor:
    """``ub.poison`` of ``ty``: an undefined value (what a function returns on a path without ``return``)."""
    b = _b()
    return _result(b.create("ub.poison", [], [b.ty(ty)], {}), ty)


def constant(value, ty: dtype) -> tensor:
    """``arith.constant`` of ``ty`` (a scalar or block type; blocks are dense splats)."""
    ir = _ir()
    b = _b()
    value = _unwrap(value)
    sty = ty.scalar
    if isinstance(value, float) and sty.is_int():
        value = int(value)
    attr = _scalar_attr(value, sty)
    if ty.is_block():
        attr = ir.DenseElementsAttr.get_splat(b.ty(ty), attr)
    return _result(b.create("arith.constant", [], [b.ty(ty)], {"value": attr}), ty)


def to_tensor(x, ty: Optional[dtype] = None) -> tensor:
    if isinstance(x, tensor):
        return x
    if ty is None and isinstance(x, tl.typed_constexpr):
        ty = x.dtype
    x = _unwrap(x)
    if isinstance(x, tensor):
        return x
    if not _is_scalar_number(x):
        raise SemanticError(f"cannot use {x!r} (a {type(x).__name__}) as a tensor value")
    return constant(x, ty or scalar_type_of_python(x))


def _check_range(value, ty: dtype):
    if ty.is_int() and not ty.is_bool() and isinstance(value, int) and not isinstance(value, bool):
        if value < 0 and ty.is_int_unsigned():
            raise SemanticError("Cannot perform a binary operation between an unsigned tensor and a negative "
                                "scalar. Perform an explicit cast on one of them.")
        if not (ty.get_int_min_value() <= value <= ty.get_int_max_value()):
            raise SemanticError(f"Scalar {value} is out of range for type {ty}")


def _keyword(enum, value, what: str):
    """The member of ``enum`` (:mod:`tritium.dialects.enums`) for the user's keyword ``value`` (``".cg"``,
    ``"acq_rel"``); a SemanticError naming the accepted keywords otherwise."""
    try:
        return enum.from_keyword(_unwrap(value), what)
    except ValueError as e:
        raise SemanticError(str(e)) from None



# ----------------------------------------------------------------------------------------------
# type promotion
# ----------------------------------------------------------------------------------------------

def integer_promote_impl(a: dtype, b: dtype) -> dtype:
    ar, br = a.int_bitwidth, b.int_bitwidth
    asn, bsn = a.int_signedness, b.int_signedness
    if asn == bsn:
        return a if ar > br else b
    if asn == dtype.SIGNEDNESS.UNSIGNED:
        return a if ar >= br else b
    return b if br >= ar else a


def computation_type_impl(a: dtype, a_is_scalar: bool, b: dtype, b_is_scalar: bool, div_or_mod: bool) -> dtype:
    if a_is_scalar != b_is_scalar:
        scalar_ty, tensor_ty = (a, b) if a_is_scalar else (b, a)
        if scalar_ty.kind() <= tensor_ty.kind():
            if div_or_mod and tensor_ty in (tl.float16, tl.bfloat16):
                return tl.float32
            return tensor_ty
    if a.is_fp64() or b.is_fp64():
        return tl.float64
    if a.is_fp32() or b.is_fp32():
        return tl.float32
    if a.is_fp16() or b.is_fp16():
        return tl.float32 if div_or_mod else tl.float16
    if a.is_bf16() and b.is_bf16():
        return tl.float32 if div_or_mod else tl.bfloat16
    if a.is_bf16() or b.is_bf16():  # with an integer or an fp8 tensor: fp32, as Triton 3.6 (not bf16)
        return tl.float32
    if a.is_fp8() or b.is_fp8():
        if a == b:
            return tl.float32 if div_or_mod else a
        if a.is_fp8() and b.is_fp8():  # two fp8 formats meet in fp16, as Triton 3.6
            return tl.float32 if div_or_mod else tl.float16
        return tl.float32 if div_or_mod else (a if a.is_fp8() else b)
    if not a.is_int() or not b.is_int():
        raise SemanticError(f"unexpected types {a} and {b}")
    if div_or_mod and a.int_signedness != b.int_signedness:
        raise SemanticError(f"Cannot use /, // or % with {a!r} and {b!r} because they have different "
                            "signedness; this is unlikely to give a useful answer. Cast them to the same signedness.")
    return integer_promote_impl(a, b)


def _check_ptr(a: dtype, b: dtype, allow_ptr: bool):
    if a.is_ptr():
        if not allow_ptr:
            raise SemanticError(f"invalid operands of type {a} and {b}: this operation does not take pointers")
        if b.is_ptr():
            raise SemanticError(f"invalid operands of type {a} and {b}: cannot add pointers together")
        if b.is_floating():
            raise SemanticError(f"invalid operands of type {a} and {b}: a floating-point value cannot be used as "
                                "a pointer offset; offsets must be integers")


def binary_op_type_checking(lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic_check=True,
                            div_or_mod=False):
    lhs, rhs = _typed_to_tensor(lhs), _typed_to_tensor(rhs)
    lhs_is_scalar = not isinstance(lhs, tensor)
    rhs_is_scalar = not isinstance(rhs, tensor)
    lval, rval = _unwrap(lhs), _unwrap(rhs)
    lty = lhs.type.scalar if not lhs_is_scalar else scalar_type_of_python(lval)
    rty = rhs.type.scalar if not rhs_is_scalar else scalar_type_of_python(rval)
    _check_ptr(lty, rty, allow_lhs_ptr)
    _check_ptr(rty, lty, allow_rhs_ptr)
    if arithmetic_check and not lty.is_ptr() and not rty.is_ptr():
        ret = computation_type_impl(lty, lhs_is_scalar, rty, rhs_is_scalar, div_or_mod)
        if lhs_is_scalar:
            _check_range(lval, ret)
        if rhs_is_scalar:
            _check_range(rval, ret)
        lhs = cast(lhs, ret) if not lhs_is_scalar else _scalar_like(lval, ret, rhs)
        rhs = cast(rhs, ret) if not rhs_is_scalar else _scalar_like(rval, ret, lhs)
    else:
        if lhs_is_scalar:
            lhs = _scalar_like(lval, lty, rhs)
        if rhs_is_scalar:
            rhs = _scalar_like(rval, rty, lhs)
    return broadcast_impl_value(lhs, rhs)


def _scalar_like(value, ty: dtype, other) -> tensor:
    """A constant of scalar type ``ty``, shaped like ``other`` when that is a block (a dense splat)."""
    if isinstance(other, tensor) and other.type.is_block():
        return constant(value, block_type(ty, other.type.shape))
    return constant(value, ty)


# ----------------------------------------------------------------------------------------------
# shapes
# ----------------------------------------------------------------------------------------------

def splat(x: tensor, shape) -> tensor:
    ty = block_type(x.type.scalar, shape)
    return _op1("tt.splat", x, ty)


def broadcast_impl_shape(x: tensor, shape) -> tensor:
    shape = tuple(int(_unwrap(s)) for s in shape)
    if not x.type.is_block():
        return splat(x, shape)
    src = x.type.shape
    if len(src) != len(shape):
        raise SemanticError(f"Cannot broadcast, rank mismatch: {list(src)}, {list(shape)}")
    if src == shape:
        return x
    for i, (a, b) in enumerate(zip(src, shape)):
        if a != b and a != 1:
            raise SemanticError(f"Cannot broadcast, the expanded size of the tensor ({b}) must match the existing "
                                f"size ({a}) at non-singleton dimension {i}: {list(src)}, {list(shape)}")
    return _op1("tt.broadcast", x, block_type(x.type.scalar, shape))


def broadcast_impl_value(lhs: tensor, rhs: tensor):
    lt, rt = lhs.type, rhs.type
    if lt.is_block() and not rt.is_block():
        rhs = splat(rhs, lt.shape)
    elif rt.is_block() and not lt.is_block():
        lhs = splat(lhs, rt.shape)
    elif lt.is_block() and rt.is_block():
        ls, rs = list(lt.shape), list(rt.shape)
        while len(ls) < len(rs):
            lhs = expand_dims(lhs, 0)
            ls = [1] + ls
        while len(rs) < len(ls):
            rhs = expand_dims(rhs, 0)
            rs = [1] + rs
        out = []
        for i, (a, b) in enumerate(zip(ls, rs)):
            if a == 1:
                out.append(b)
            elif b == 1 or a == b:
                out.append(a)
            else:
                raise SemanticError(f"Cannot make_shape_compatible: incompatible dimensions at index {i}: "
                                    f"{a} and {b} (shapes {list(lt.shape)} and {list(rt.shape)})")
        lhs = broadcast_impl_shape(lhs, out)
        rhs = broadcast_impl_shape(rhs, out)
    return lhs, rhs


def expand_dims(x, axis) -> tensor:
    x = to_tensor(x)
    axis = _unwrap(axis)
    if isinstance(axis, (tuple, list)):
        ndim = len(x.shape) + len(axis)
        axes = [_norm_axis(_unwrap(a), ndim) for a in axis]
        if len(set(axes)) != len(axes):
            raise SemanticError(f"expand_dims received duplicate axes, normalized axes = {axes}")
        axes.sort()
        for a in axes:
            x = expand_dims(x, a)
        return x
    ndim = len(x.shape)
    axis = _norm_axis(axis, ndim + 1)
    if not x.type.is_block():
        return splat(x, [1])
    shape = list(x.type.shape)
    shape.insert(axis, 1)
    return _op1("tt.expand_dims", x, block_type(x.type.scalar, shape), {"axis": _b().i32_attr(axis)})


def _norm_axis(axis, ndim):
    if not isinstance(axis, int):
        raise SemanticError(f"axis must be a compile-time integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise SemanticError(f"invalid axis {axis}. Expected {-ndim} <= axis < {ndim}: axis {axis} is out of range "
                            f"for a tensor of rank {ndim}")
    return axis % ndim


def reshape(x: tensor, shape, can_reorder=False) -> tensor:
    shape = [int(_unwrap(s)) for s in shape]
    numel = 1
    for s in shape:
        numel *= s
    xn = x.type.numel if x.type.is_block() else 1
    if numel != xn:
        raise SemanticError(f"reshape() cannot change the total number of elements ({xn} -> {numel})")
    if not x.type.is_block():
        return splat(x, shape)
    attrs = {"allow_reorder": _b().bool_attr(True)} if can_reorder else None
    return _op1("tt.reshape", x, block_type(x.type.scalar, shape), attrs)


def trans(x: tensor, *dims) -> tensor:
    if not x.type.is_block():
        raise SemanticError("trans() needs a tensor of rank >= 1")
    if len(dims) == 1 and isinstance(_unwrap(dims[0]), (tuple, list)):
        dims = _unwrap(dims[0])
    dims = [int(_unwrap(d)) for d in dims]
    rank = len(x.type.shape)
    if not dims:  # as Triton 3.6: the last two dimensions swapped (a batch of matrices transposed)
        if rank < 2:
            raise SemanticError(f"trans() without dims needs a tensor of rank >= 2, got rank {rank}")
        dims = list(range(rank - 2)) + [rank - 1, rank - 2]
    if sorted(dims) != list(range(rank)):
        raise SemanticError(f"trans()/permute() dims {dims} are not a permutation of range({rank})")
    shape = [x.type.shape[d] for d in dims]
    return _op1("tt.trans", x, block_type(x.type.scalar, shape), {"order": _b().i32_array(dims)})


def cat(a: tensor, b: tensor, can_reorder=False) -> tensor:
    if not a.type.is_block() or a.type != b.type:
        raise SemanticError(f"cat() needs two tensors of the same type, got {a.type} and {b.type}")
    shape = list(a.type.shape)
    shape[0] *= 2
    return _op2("tt.cat", a, b, block_type(a.type.scalar, shape))


def join(a: tensor, b: tensor) -> tensor:
    a, b = broadcast_impl_value(a, b)
    if a.type != b.type:
        raise SemanticError(f"join() needs two tensors of the same type, got {a.type} and {b.type}")
    if not a.type.is_block():
        a, b = splat(a, [1]), splat(b, [1])
        r = join(a, b)
        return reshape(r, [2])
    return _op2("tt.join", a, b, block_type(a.type.scalar, list(a.type.shape) + [2]))


def split(a: tensor):
    if not a.type.is_block() or a.type.shape[-1] != 2:
        raise SemanticError(f"split() needs a tensor whose last dimension is 2, got shape {list(a.shape)}")
    shape = list(a.type.shape[:-1])
    if not shape:  # a tensor of 2: split as [1, 2] into two one-element tensors, then their scalars (as Triton)
        lo, hi = split(reshape(a, [1, 2]))
        return item(lo), item(hi)
    b = _b()
    ty = block_type(a.type.scalar, shape)
    op = b.create("tt.split", [a], [b.ty(ty), b.ty(ty)])
    return tensor(op.results[0], ty), tensor(op.results[1], ty)


def item(x) -> tensor:
    """A one-element tensor as a scalar (Triton's ``tensor.item()``, its ``tt.unsplat``): the reduction of its one
    element (the combine function, which keeps the first, never runs).  A scalar is itself."""
    x = to_tensor(x)
    if not x.type.is_block():
        return x
    if x.type.numel != 1:
        raise SemanticError(f"item() takes a tensor of one element, got shape {list(x.type.shape)}: can only "
                            "unsplat single-element tensors")
    axis = 0 if len(x.type.shape) == 1 else None  # None: reshaped to [1] first
    return reduction([x], axis, lambda a, _b: a, hint="item", key=("item",))[0]


def check_condition(cond: tensor, what: str) -> None:
    """A tensor used as the condition of ``what`` (an ``if``, ``while`` or ternary) is, as in Triton, a scalar or
    a tensor of one element (Triton warns and unsplats it); more elements are ambiguous, a pointer is refused."""
    if cond.type.is_block() and cond.type.numel != 1:
        raise SemanticError(f"the condition of {what} must be a scalar or a one-element tensor, got a tensor of "
                            f"shape {list(cond.type.shape)}: Boolean value of Tensor with more than one value is "
                            "ambiguous (use tl.where for elementwise selection)")
    if cond.type.scalar.is_ptr():
        raise SemanticError(f"the condition of {what} cannot be a pointer")


def scalar_condition(cond: tensor, what: str) -> tensor:
    """The int1 scalar a tensor condition of ``what`` is tested as (see :func:`check_condition`)."""
    check_condition(cond, what)
    return cast(item(cond), tl.int1)


def getitem(x: tensor, slices) -> tensor:
    if not isinstance(slices, (tuple, list)):
        slices = (slices,)
    ret = x
    pos = 0
    for s in slices:
        s = _unwrap(s)
        if s is None:
            ret = expand_dims(ret, pos)
            pos += 1
        elif isinstance(s, slice) and s.start is None and s.stop is None and s.step is None:
            pos += 1
        else:
            raise SemanticError(f"unsupported tensor index: {s!r}; only None and ':' are supported")
    return ret


# ----------------------------------------------------------------------------------------------
# casts
# ----------------------------------------------------------------------------------------------

def bitcast(x: tensor, dst: dtype) -> tensor:
    x = to_tensor(x)
    src = x.type.scalar
    if src == dst:
        return x
    if src.is_ptr() and dst.is_ptr():
        return _op1("tt.bitcast", x, _with_shape(dst, x.type))
    if src.is_ptr() or dst.is_ptr():
        return cast(x, dst)
    if src.primitive_bitwidth != dst.primitive_bitwidth:
        raise SemanticError(f"Cannot bitcast data-type of size {src.primitive_bitwidth} to data-type of size "
                            f"{dst.primitive_bitwidth}")
    if src.mlir_str() == dst.mlir_str():
        return tensor(x.handle, _with_shape(dst, x.type))
    return _op1("arith.bitcast", x, _with_shape(dst, x.type))


def cast(x, dst, bitcast_=False, fp_downcast_rounding=None, bitcast=None) -> tensor:
    if bitcast is not None:
        bitcast_ = bitcast
    dst = _unwrap(dst)
    if not isinstance(dst, dtype):
        raise SemanticError(f"cast target must be a tl dtype, got {dst!r}")
    if isinstance(dst, block_type):
        dst = dst.scalar
    if not isinstance(x, tensor):
        v = _unwrap(x)
        if _is_scalar_number(v) and not dst.is_ptr():
            return constant(v, dst)
        x = to_tensor(v)
    if bitcast_:
        return globals()["bitcast"](x, dst)
    src = x.type.scalar
    if src == dst:
        return x
    dty = _with_shape(dst, x.type)
    # same signless MLIR type: a relabel (int32 <-> uint32)
    if src.is_int() and dst.is_int() and src.int_bitwidth == dst.int_bitwidth and not dst.is_bool() \
            and not src.is_bool():
        return tensor(x.handle, dty)
    if (src.is_int() and dst.is_fp8()) or (src.is_fp8() and dst.is_int()):  # through fp32 (no int <-> fp8 op)
        return cast(cast(x, tl.float32), dst)
    if (src.is_fp8() and dst.is_floating()) or (src.is_floating() and dst.is_fp8()):
        attrs = None
        if src.primitive_bitwidth > dst.primitive_bitwidth:
            mode = _keyword(_enums().RoundingMode, fp_downcast_rounding, "fp_downcast_rounding")
            attrs = {"rounding": _b().i32_attr(mode)}
        return _op1("tt.fp_to_fp", x, dty, attrs)
    if fp_downcast_rounding is not None and not (src.is_floating() and dst.is_floating()
                                                 and src.primitive_bitwidth > dst.primitive_bitwidth):
        raise SemanticError("fp_downcast_rounding is only for float downcasts")
    if src.is_floating() and dst.is_floating():
        if (src.is_bf16() and not dst.is_fp32()) or (dst.is_bf16() and not src.is_fp32()):
            return cast(cast(x, tl.float32), dst)
        if src.primitive_bitwidth < dst.primitive_bitwidth:
            return _op1("arith.extf", x, dty)
        rounding = _enums().RoundingMode
        if _keyword(rounding, fp_downcast_rounding, "fp_downcast_rounding") == rounding.RTZ:
            return _op1("tt.fp_to_fp", x, dty, {"rounding": _b().i32_attr(rounding.RTZ)})
        return _op1("arith.truncf", x, dty)
    if src.is_int() and dst.is_int():
        if dst.is_bool():
            return not_equal(x, 0)
        if src.int_bitwidth > dst.int_bitwidth:
            return _op1("arith.trunci", x, dty)
        if src.is_int_signed() and not src.is_bool():
            return _op1("arith.extsi", x, dty)
        return _op1("arith.extui", x, dty)
    if src.is_floating() and dst.is_int():
        if dst.is_bool():
            return not_equal(x, 0.0)
        return _op1("arith.fptosi" if dst.is_int_signed() else "arith.fptoui", x, dty)
    if src.is_int() and dst.is_floating():
        if src.is_bool() or not src.is_int_signed():
            return _op1("arith.uitofp", x, dty)
        return _op1("arith.sitofp", x, dty)
    if src.is_ptr() and dst.is_int():
        if dst.int_bitwidth == 64:
            return _op1("tt.ptr_to_int", x, dty)
        if dst.is_bool():
            i = _op1("tt.ptr_to_int", x, _with_shape(tl.int64, x.type))
            return not_equal(i, 0)
        raise SemanticError(f"cannot cast pointer to {dst}: only int64 and int1")
    if src.is_int() and dst.is_ptr():
        if src.int_bitwidth != 64:
            x = cast(x, tl.int64)
        return _op1("tt.int_to_ptr", x, dty)
    if src.is_ptr() and dst.is_ptr():
        return _op1("tt.bitcast", x, dty)
    raise SemanticError(f"cannot cast {x.type} to {dst}")


# ----------------------------------------------------------------------------------------------
# arithmetic
# ----------------------------------------------------------------------------------------------

def _both_python(a, b):
    return not isinstance(a, tensor) and not isinstance(b, tensor)


def _typed_to_tensor(x):
    """A :class:`core.typed_constexpr` as the scalar tensor Triton has for it; anything else as it is."""
    return constant(x.value, x.dtype) if isinstance(x, tl.typed_constexpr) else x


def _c_int_op(op: str, a: int, b: int):
    """``a op b`` of two integers as the GPU computes it before wrapping: ``//`` and ``%`` truncate toward zero
    (``arith.divsi`` / ``remsi``); None where the result is undefined there (division by zero, a shift by a
    negative amount or by the width or more)."""
    if op in ("floordiv", "mod"):
        if b == 0:
            return None
        q = _py.abs(a) // _py.abs(b)
        q = -q if (a < 0) != (b < 0) else q
        return q if op == "floordiv" else a - q * b
    if op in ("shl", "shr") and b < 0:
        return None
    return _FOLD_OPS[op](a, b)


def _wrap_int(v: int, ty: dtype) -> int:
    """``v`` in ``ty``'s bits, read back with its signedness (what the GPU holds after an overflow)."""
    w = ty.int_bitwidth
    if ty.is_bool():
        return bool(v & 1)
    v &= (1 << w) - 1
    return v - (1 << w) if ty.is_int_signed() and v >= 1 << (w - 1) else v


def _round_f32(v: float) -> float:
    import struct
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:  # beyond fp32's range: what a rounding to nearest gives
        return v * float("inf")


_FOLD_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "truediv": lambda a, b: a / b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
             "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b}


def fold(op: str, a, b):
    """``a op b`` of two compile-time values.  Two Python numbers (or constexprs) give a ``constexpr`` as Python
    computes it.  Where a :class:`core.typed_constexpr` (an assigned number: a scalar tensor in Triton) takes part,
    the value is what Triton's tensor arithmetic gives -- the promoted type, integers wrapped to it, ``//`` and
    ``%`` truncating, fp32 rounded -- as a ``typed_constexpr`` of that type; None where that cannot be computed
    here exactly (the caller then emits the ops)."""
    ua, ub = _unwrap(a), _unwrap(b)
    ta, tb = isinstance(a, tl.typed_constexpr), isinstance(b, tl.typed_constexpr)
    if not ta and not tb:
        if op == "mod" or op == "floordiv":
            return constexpr(ua % ub if op == "mod" else ua // ub)
        return constexpr(_FOLD_OPS[op](ua, ub))
    if not (_is_scalar_number(ua) and _is_scalar_number(ub)):
        return None
    lty = a.dtype if ta else scalar_type_of_python(ua)
    rty = b.dtype if tb else scalar_type_of_python(ub)
    if op == "truediv":
        ret = (tl.float32 if lty.is_int() and rty.is_int() else
               computation_type_impl(lty, not ta, rty, not tb, True) if lty.is_floating() and rty.is_floating()
               else (lty if lty.is_floating() else rty))
    else:
        ret = computation_type_impl(lty, not ta, rty, not tb, op in ("floordiv", "mod"))
    if ret.is_int():
        if op == "truediv" or isinstance(ua, float) or isinstance(ub, float):
            return None
        va, vb = _wrap_int(int(ua), ret), _wrap_int(int(ub), ret)
        if op == "shr" and ret.is_int_unsigned():
            va &= (1 << ret.int_bitwidth) - 1
        if op in ("shl", "shr") and vb >= ret.int_bitwidth:
            return None
        v = _c_int_op(op, va, vb)
        return None if v is None else tl.typed_constexpr(_wrap_int(v, ret), ret)
    if not (ret.is_fp32() or ret.is_fp64()) or op not in ("add", "sub", "mul", "truediv", "mod"):
        return None
    fa, fb = float(ua), float(ub)
    if _py.max(_py.abs(fa) if fa == fa else 0, _py.abs(fb) if fb == fb else 0) >= 2.0 ** 53 and \
            (isinstance(ua, int) or isinstance(ub, int)):
        return None  # an integer that does not convert exactly
    if ret.is_fp32():
        fa, fb = _round_f32(fa), _round_f32(fb)
    try:
        import math
        v = math.fmod(fa, fb) if op == "mod" else _FOLD_OPS[op](fa, fb)
    except (ZeroDivisionError, ValueError, OverflowError):
        return None  # inf / NaN results: left to the device's arithmetic
    return tl.typed_constexpr(_round_f32(v) if ret.is_fp32() else v, ret)


def _folds(op: str):
    """The binary operators below: on two Python values (constexprs), ``fold(op, a, b)`` when it gives a value; else
    the operator runs on the operands as tensors."""
    def wrap(fn):
        @functools.wraps(fn)
        def operator(a, b):
            if _both_python(a, b):
                v = fold(op, a, b)
                if v is not None:
                    return v
                a, b = _typed_to_tensor(a), _typed_to_tensor(b)
            return fn(a, b)
        return operator
    return wrap


@_folds("add")
def add(a, b) -> tensor:
    a, b = binary_op_type_checking(a, b, True, True)
    at, bt = a.type.scalar, b.type.scalar
    if bt.is_ptr() and not at.is_ptr():
        a, b = b, a
        at, bt = bt, at
    if at.is_ptr():
        return _op2("tt.addptr", a, b, a.type)
    if at.is_floating():
        return _op2("arith.addf", a, b)
    return _op2("arith.addi", a, b)


@_folds("sub")
def sub(a, b) -> tensor:
    a, b = binary_op_type_checking(a, b, True, False)
    at = a.type.scalar
    if at.is_ptr():
        return _op2("tt.addptr", a, minus(b), a.type)
    if at.is_floating():
        return _op2("arith.subf", a, b)
    return _op2("arith.subi", a, b)


@_folds("mul")
def mul(a, b) -> tensor:
    a, b = binary_op_type_checking(a, b)
    if a.type.scalar.is_floating():
        return _op2("arith.mulf", a, b)
    return _op2("arith.muli", a, b)


@_folds("truediv")
def truediv(a, b) -> tensor:
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    at, bt = a.type.scalar, b.type.scalar
    if at.is_floating() and bt.is_int():
        b = cast(b, at)
    elif at.is_int() and bt.is_floating():
        a = cast(a, bt)
    elif at.is_int() and bt.is_int():
        a, b = cast(a, tl.float32), cast(b, tl.float32)
    elif at.is_floating() and bt.is_floating():
        if at.fp_mantissa_width > bt.fp_mantissa_width:
            b = cast(b, at)
        else:
            a = cast(a, bt)
    return _op2("arith.divf", a, b)


def _int_or_float_op(a, b, signed: str, unsigned: str, floating: str = None, what: str = "") -> tensor:
    """``a op b`` by the operands' common type: ``signed`` / ``unsigned`` for integers, ``floating`` for floats
    (None: an error naming ``what``)."""
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    at = a.type.scalar
    if at.is_int():
        return _op2(signed if at.is_int_signed() else unsigned, a, b)
    if floating is None:
        raise SemanticError(f"{what} needs integer operands, got {at}")
    return _op2(floating, a, b)


@_folds("floordiv")
def floordiv(a, b) -> tensor:
    return _int_or_float_op(a, b, "arith.divsi", "arith.divui", what="floor division (//)")


def fdiv(a, b, ieee_rounding=False) -> tensor:
    a, b = to_tensor(a) if not isinstance(a, tensor) else a, b
    if not a.type.scalar.is_floating() or not (isinstance(b, tensor) and b.type.scalar.is_floating()
                                               or isinstance(_unwrap(b), float)):
        raise SemanticError("fdiv needs floating-point operands")
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    return _op2("arith.divf", a, b)


@_folds("mod")
def mod(a, b) -> tensor:
    return _int_or_float_op(a, b, "arith.remsi", "arith.remui", "arith.remf")


def pow(a, b) -> tensor:
    if _both_python(a, b):
        if not isinstance(a, tl.typed_constexpr) and not isinstance(b, tl.typed_constexpr):
            return constexpr(_unwrap(a) ** _unwrap(b))
        a, b = _typed_to_tensor(a), _typed_to_tensor(b)
    a, b = binary_op_type_checking(a, b)
    if not a.type.scalar.is_floating():
        raise SemanticError(f"** needs floating-point operands, got {a.type.scalar}")
    return _op2("math.powf", a, b)


def minus(x) -> tensor:
    if isinstance(x, tl.typed_constexpr) and _is_scalar_number(x.value):
        if x.dtype.is_floating():
            return tl.typed_constexpr(-x.value, x.dtype)
        return fold("sub", 0, x)
    if not isinstance(x, tensor):
        return constexpr(-_unwrap(x))
    if x.type.scalar.is_ptr():
        raise SemanticError(f"wrong type argument to unary minus ({x.type})")
    if x.type.scalar.is_floating():
        return _op1("arith.negf", x)
    return sub(0, x) if not x.type.scalar.is_int_unsigned() else sub(_scalar_like(0, x.type.scalar, x), x)


def invert(x) -> tensor:
    if isinstance(x, tl.typed_constexpr):
        x = _typed_to_tensor(x)
    if not isinstance(x, tensor):
        return constexpr(~_unwrap(x))
    st = x.type.scalar
    if st.is_ptr() or st.is_floating():
        raise SemanticError(f"wrong type argument to unary invert ({x.type})")
    return xor_(x, _scalar_like(-1 if not st.is_int_unsigned() else st.get_int_max_value(), st, x))


def _bitwise_check(a, b):
    """Operands of ``& | ^ << >>``: integers, promoted as arithmetic is -- two integer tensors to the wider
    (computation_type_impl's integer promotion), a Python int to the tensor's type (``x_i8 << 4`` shifts in 8
    bits, as in Triton 3.6)."""
    at, bt = (v.type.scalar if isinstance(v, tensor) else scalar_type_of_python(v) for v in (a, b))
    if not at.is_int() or not bt.is_int():
        raise SemanticError(f"invalid operands of type {at} and {bt}: bitwise operations need integer operands")
    return binary_op_type_checking(a, b)


def _bitwise(op: str, name: str):
    """A bitwise operator: integer operands (promoted), then ``name`` (an arith op)."""
    @_folds(op)
    def operator(a, b):
        a, b = _bitwise_check(a, b)
        return _op2(name, a, b)
    return operator


and_ = _bitwise("and", "arith.andi")
or_ = _bitwise("or", "arith.ori")
xor_ = _bitwise("xor", "arith.xori")
shl = _bitwise("shl", "arith.shli")


@_folds("shr")
def shr(a, b):
    """``a >> b``: arithmetic or logical by the signedness of the tensor the operator is called on -- the left
    operand, or the right one when the left is a Python value -- before promotion, as Triton 3.6's
    ``tensor.__rshift__`` / ``__rrshift__``: ``int8 >> uint8`` promotes to uint8 and shifts arithmetically."""
    signed = (a if isinstance(a, tensor) else b).type.scalar.is_int_signed()
    a, b = _bitwise_check(a, b)
    return _op2("arith.shrsi" if signed else "arith.shrui", a, b)


def logical_and(a, b):
    if _both_python(a, b):
        return constexpr(_unwrap(a) and _unwrap(b))
    a, b = cast(to_tensor(a), tl.int1), cast(to_tensor(b), tl.int1)
    return and_(a, b)


def logical_or(a, b):
    if _both_python(a, b):
        return constexpr(_unwrap(a) or _unwrap(b))
    a, b = cast(to_tensor(a), tl.int1), cast(to_tensor(b), tl.int1)
    return or_(a, b)


def logical_not(x):
    if not isinstance(x, tensor):
        return constexpr(not _unwrap(x))
    x = cast(x, tl.int1)
    return xor_(x, _scalar_like(True, tl.int1, x))


_CMPF = {"gt": 2, "ge": 3, "lt": 4, "le": 5, "eq": 1, "ne": 13}  # ogt oge olt ole oeq une
_CMPI_S = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
_CMPI_U = {"eq": 0, "ne": 1, "lt": 6, "le": 7, "gt": 8, "ge": 9}


def compare(a, b, pred: str) -> tensor:
    if _both_python(a, b):
        import operator
        return constexpr(getattr(operator, pred)(_unwrap(a), _unwrap(b)))
    a, b = binary_op_type_checking(a, b)
    st = a.type.scalar
    b_ = _b()
    rty = _with_shape(tl.int1, a.type)
    if st.is_floating():
        op = b_.create("arith.cmpf", [a, b], [b_.ty(rty)], {"predicate": b_.i64_attr(_CMPF[pred])})
    elif st.is_int():
        table = _CMPI_S if st.is_int_signed() else _CMPI_U
        op = b_.create("arith.cmpi", [a, b], [b_.ty(rty)], {"predicate": b_.i64_attr(table[pred])})
    else:
        raise SemanticError(f"cannot compare values of type {st}")
    return _result(op, rty)


def not_equal(a, b):
    return compare(a, b, "ne")


def equal(a, b):
    return compare(a, b, "eq")


def where(cond, x, y) -> tensor:
    cond = cast(to_tensor(cond), tl.int1)
    if not isinstance(x, tensor) and not isinstance(y, tensor):
        x = to_tensor(x)
    if _is_ptr_val(x) and _is_ptr_val(y):  # a choice of pointers (of one element type; const if either is)
        px, py = x.type.scalar, y.type.scalar
        if px.element_ty != py.element_ty or px.address_space != py.address_space:
            raise SemanticError(f"invalid operands of type {px} and {py}: where() chooses between pointers of one "
                                "element type")
        if px.is_const() != py.is_const():
            const_ty = pointer_type(px.element_ty, px.address_space, const=True)
            x, y = (tensor(t.handle, _with_shape(const_ty, t.type)) for t in (x, y))
        x, y = broadcast_impl_value(x, y)
    else:
        x, y = binary_op_type_checking(x, y, True, True, not (_is_ptr_val(x) or _is_ptr_val(y)))
    if cond.type.is_block():
        cond, x = broadcast_impl_value(cond, x)
        x, y = broadcast_impl_value(x, y)
        cond, x = broadcast_impl_value(cond, x)
    else:
        cond, x = broadcast_impl_value(cond, x)
    if x.type != y.type:
        raise SemanticError(f"where(): incompatible types {x.type} and {y.type}")
    b = _b()
    return _result(b.create("arith.select", [cond, x, y], [b.ty(x.type)]), x.type)


def _is_ptr_val(x):
    return isinstance(x, tensor) and x.type.scalar.is_ptr()


def _extremum(kind: str, a, b, propagate_nan):
    """The elementwise ``kind`` ("max" / "min") of ``a`` and ``b``: floats by ``arith.<kind>imumf`` (a NaN operand
    gives NaN) when ``propagate_nan``, else ``arith.<kind>numf``; integers by their signedness.  As in Triton 3.6,
    a Python number is a tensor here (``maximum(x_i8, 7)`` is int32, ``maximum(x_f16, 0.5)`` fp32), and bf16
    operands are fp32."""
    a, b = (cast(t, tl.float32) if t.type.scalar.is_bf16() else t for t in (to_tensor(a), to_tensor(b)))
    a, b = binary_op_type_checking(a, b)
    st = a.type.scalar
    if st.is_floating():
        return _op2(f"arith.{kind}imumf" if _unwrap(propagate_nan) else f"arith.{kind}numf", a, b)
    return _op2(f"arith.{kind}{'si' if st.is_int_signed() else 'ui'}", a, b)


def maximum(a, b, propagate_nan=0):
    return _extremum("max", a, b, propagate_nan)


def minimum(a, b, propagate_nan=0):
    return _extremum("min", a, b, propagate_nan)


def clamp(x, lo, hi, propagate_nan=0):
    x = to_tensor(x)
    if not x.type.scalar.is_floating():
        raise SemanticError(f"clamp() needs a floating-point tensor, got {x.type.scalar}")
    lo = cast(lo, x.type.scalar)
    hi = cast(hi, x.type.scalar)
    x, lo = broadcast_impl_value(x, lo)
    x, hi = broadcast_impl_value(x, hi)
    x, lo = broadcast_impl_value(x, lo)
    b = _b()
    nan = _enums().PropagateNan
    pn = nan.ALL if _unwrap(propagate_nan) else nan.NONE
    return _result(b.create("tt.clampf", [x, lo, hi], [b.ty(x.type)], {"propagateNan": b.i32_attr(pn)}), x.type)


def _float_unary(name, x, what):
    x = to_tensor(x)
    if not x.type.scalar.is_floating():
        raise SemanticError(f"{what}() needs a floating-point tensor, got {x.type.scalar}")
    return _op1(name, x)


def abs(x):
    x = to_tensor(x)
    st = x.type.scalar
    if st.is_floating():
        return _op1("math.absf", x)
    if st.is_int_signed():
        return _op1("math.absi", x)
    if st.is_int():
        return x
    raise SemanticError(f"abs() of {st}")


def fma(x, y, z):
    x, y = binary_op_type_checking(x, y)
    z, x = binary_op_type_checking(z, x)
    x, y = broadcast_impl_value(x, y)
    if not x.type.scalar.is_floating():
        raise SemanticError("fma() needs floating-point operands")
    b = _b()
    return _result(b.create("math.fma", [x, y, z], [b.ty(x.type)]), x.type)


def umulhi(x, y):
    x, y = binary_op_type_checking(x, y)
    if not x.type.scalar.is_int():
        raise SemanticError("umulhi() needs integer operands")
    return _op2("tt.mulhiui", x, y)


# ----------------------------------------------------------------------------------------------
# creation
# ----------------------------------------------------------------------------------------------

def _grid_query(name: str, axis, what: str) -> tensor:
    """``tt.get_program_id`` / ``tt.get_num_programs`` (``name``) along the grid axis ``axis``."""
    axis = _unwrap(axis)
    try:
        dim = _enums().ProgramIDDim(axis)
    except ValueError:
        raise SemanticError(f"{what} axis must be 0, 1, or 2 but got {axis!r}") from None
    b = _b()
    return _result(b.create(name, [], [b.ty(tl.int32)], {"axis": b.i32_attr(dim)}), tl.int32)


def program_id(axis) -> tensor:
    return _grid_query("tt.get_program_id", axis, "program_id")


def num_programs(axis) -> tensor:
    return _grid_query("tt.get_num_programs", axis, "num_programs")


def arange(start, end) -> tensor:
    if isinstance(start, tensor) or isinstance(end, tensor):
        raise SemanticError("arange's arguments must be of type tl.constexpr (known at compile time)")
    start, end = _unwrap(start), _unwrap(end)
    if not isinstance(start, int) or not isinstance(end, int):
        raise SemanticError(f"arange's arguments must be integers, got {start!r} and {end!r}")
    if start < 0 or end >= 2 ** 31 or end > 2 ** 31:
        raise SemanticError("arange's arguments must fit in int32")
    if end <= start:
        raise SemanticError(f"arange's end argument ({end}) must be greater than its start argument ({start})")
    n = end - start
    if n & (n - 1):
        raise SemanticError(f"arange's range must be a power of 2, got {n}")
    b = _b()
    ty = block_type(tl.int32, [n])
    return _result(b.create("tt.make_range", [], [b.ty(ty)], {"start": b.i32_attr(start), "end": b.i32_attr(end)}),
                   ty)


def _shape_arg(shape):
    shape = _unwrap(shape)
    if isinstance(shape, int):
        shape = [shape]
    if isinstance(shape, tensor):
        raise SemanticError("shape must be known at compile time (tl.constexpr)")
    out = []
    for s in shape:
        if isinstance(s, tensor):
            raise SemanticError("shape must be known at compile time (tl.constexpr)")
        s = _unwrap(s)
        if not isinstance(s, int):
            raise SemanticError(f"shape entries must be integers, got {s!r}")
        out.append(s)
    return out


def full(shape, value, dt) -> tensor:
    shape = _shape_arg(shape)
    dt = _unwrap(dt)
    if not isinstance(dt, dtype):
        raise SemanticError(f"dtype must be a tl dtype, got {dt!r}")
    if isinstance(value, tensor):
        if value.type.is_block():
            raise SemanticError("full() value must be a scalar")
        v = cast(value, dt)
        return splat(v, shape) if shape else v
    ty = block_type(dt, shape) if shape else dt
    return constant(_unwrap(value), ty)


# ----------------------------------------------------------------------------------------------
# reductions and scans
# ----------------------------------------------------------------------------------------------

def _private_func(name: str, in_types, out_types=()):
    """A private ``func.func @name`` at the top of the module and its entry block (what combine functions and
    map_elementwise's scalar functions are); the caller fills the block with the builder pointed at it."""
    from mlir import ir
    b = _b()
    ftype = ir.FunctionType.get(list(in_types), list(out_types), b.context)
    saved, b.ip = b.ip, ir.InsertionPoint.at_block_begin(b.module.body)
    try:
        func = b.create("func.func", [], [], {"sym_name": b.str_attr(name), "function_type": ir.TypeAttr.get(ftype),
                                              "sym_visibility": b.str_attr("private")}, regions=1)
    finally:
        b.ip = saved
    return func, func.regions[0].blocks.append(*in_types, arg_locs=[b.loc] * len(in_types))


def _combine_fn(hint: str, elem_types, fn, key=None):
    """A private func.func taking 2*k scalars of ``elem_types`` and returning k: the combine function."""
    from mlir import ir
    b = _b()
    if key is not None:  # one function per element types: sum of f32 and of i32 (or max of i32 / u32) differ
        key = (key, tuple(t.name for t in elem_types))
    if key is not None and key in b._combine_cache:
        return b._combine_cache[key]
    k = len(elem_types)
    name = b.unique_name(hint + "_" + "_".join(t.mlir_str() for t in elem_types))
    in_types = [b.ty(t) for t in elem_types] * 2
    saved_ip, saved_loc = b.ip, b.loc
    _, block = _private_func(name, in_types, [b.ty(t) for t in elem_types])
    b.ip = ir.InsertionPoint(block)
    try:
        args = [tensor(block.arguments[i], elem_types[i % k]) for i in range(2 * k)]
        if b.codegen is not None:
            res = b.codegen.call_function(fn, args)
        else:
            res = fn(*args)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        res = [_unwrap(r) for r in res]
        if len(res) != k:
            raise SemanticError(f"the combine function must return {k} value(s), got {len(res)}")
        outs = []
        for r, t in zip(res, elem_types):
            r = to_tensor(r, t) if not isinstance(r, tensor) else r
            if r.type.is_block():
                raise SemanticError("the combine function must return scalars")
            if r.type != t:
                r = cast(r, t)
            outs.append(r)
        b.create("func.return", outs, [])
    finally:
        b.ip, b.loc = saved_ip, saved_loc
    ref = ir.FlatSymbolRefAttr.get(name, b.context)
    if key is not None:
        b._combine_cache[key] = ref
    return ref


def reduction(inputs, axis, combine, keep_dims=False, hint="reduce", key=None):
    inputs = [to_tensor(x) for x in inputs]
    axis = _unwrap(axis)
    keep_dims = _unwrap(keep_dims)
    if axis is None:
        orig_rank = len(inputs[0].type.shape) if inputs[0].type.is_block() else 0
        inputs = [reshape(x, [x.type.numel], can_reorder=True) if x.type.is_block() else splat(x, [1])
                  for x in inputs]
        res = reduction(inputs, 0, combine, False, hint, key)
        if keep_dims:
            res = tuple(reshape(splat(r, [1]), [1] * _py.max(orig_rank, 1)) for r in res)
        return res
    for x in inputs:
        if not x.type.is_block():
            raise SemanticError("cannot reduce a scalar: the input must be a tensor")
    shape = inputs[0].type.shape
    for x in inputs:
        if x.type.shape != shape:
            raise SemanticError(f"all reduction inputs must have the same shape, got {list(shape)} and "
                                f"{list(x.type.shape)}")
    axis = _norm_axis(axis, len(shape))
    ref = _combine_fn(hint, [x.type.scalar for x in inputs], combine, key)
    out_shape = list(shape[:axis]) + list(shape[axis + 1:])
    rtys = [block_type(x.type.scalar, out_shape) if out_shape else x.type.scalar for x in inputs]
    b = _b()
    op = b.create("tt.reduce", inputs, [b.ty(t) for t in rtys], {"axis": b.i32_attr(axis), "combine": ref})
    res = tuple(tensor(r, t) for r, t in zip(op.results, rtys))
    if keep_dims:
        res = tuple(expand_dims(r, axis) for r in res)
    return res


def scan(inputs, axis, combine, reverse=False, hint="scan", key=None):
    inputs = [to_tensor(x) for x in inputs]
    axis = _unwrap(axis)
    for x in inputs:
        if not x.type.is_block():
            raise SemanticError("cannot scan a scalar: the input must be a tensor")
    shape = inputs[0].type.shape
    axis = _norm_axis(axis, len(shape))
    ref = _combine_fn(hint, [x.type.scalar for x in inputs], combine, key)
    b = _b()
    op = b.create("tt.scan", inputs, [b.ty(x.type) for x in inputs],
                  {"axis": b.i32_attr(axis), "reverse": b.bool_attr(_unwrap(reverse)), "combine": ref})
    return tuple(tensor(r, x.type) for r, x in zip(op.results, inputs))


# ----------------------------------------------------------------------------------------------
# debugging
# ----------------------------------------------------------------------------------------------

def device_print(prefix, args, hex=False):
    b = _b()
    vals = [to_tensor(a) for a in args]
    signed = [1 if v.type.scalar.is_int_signed() else 0 for v in vals]
    b.create("tt.print", vals, [], {"prefix": b.str_attr(prefix), "hex": b.bool_attr(hex),
                                    "isSigned": b.i32_array(signed)})


def device_assert(cond, msg=""):
    """``tt.assert`` of ``cond`` when the kernel is compiled with ``debug`` (the option, ``@jit(debug=True)`` or
    ``TRITON_DEBUG=1``), else nothing, as in Triton: a release kernel pays nothing for its assertions."""
    from .target_info import current_options

    if not getattr(current_options(), "debug", False):
        return
    b = _b()
    cond = cast(to_tensor(cond), tl.int1)
    b.create("tt.assert", [cond], [], {"message": b.str_attr(str(msg))})


def debug_barrier():
    _b().create("tt.barrier", [], [], {})


def assume(cond):
    c = to_tensor(cond)
    if c.type.is_block():
        raise SemanticError("tl.assume needs a scalar condition, got a tensor of shape "
                            f"{list(c.type.shape)}")
    _b().create("tt.assume", [cast(c, tl.int1)], [], {})
