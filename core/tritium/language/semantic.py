"""tl's semantic rules: type promotion, broadcasting, casts, and the MLIR each operation emits.

Every function takes tl values (``tensor``, ``constexpr`` or Python numbers) and returns ``tensor``s; the ops
go through :func:`core.current_builder`.  User mistakes raise :class:`core.SemanticError`.
"""
from __future__ import annotations

import builtins as _py
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


def _folded(op: str, a, b):
    """``fold`` for the operators below: its value, or the operands as tensors when it gives none."""
    v = fold(op, a, b)
    if v is not None:
        return v, None, None
    return None, _typed_to_tensor(a), _typed_to_tensor(b)


def add(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("add", a, b)
        if v is not None:
            return v
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


def sub(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("sub", a, b)
        if v is not None:
            return v
    a, b = binary_op_type_checking(a, b, True, False)
    at = a.type.scalar
    if at.is_ptr():
        return _op2("tt.addptr", a, minus(b), a.type)
    if at.is_floating():
        return _op2("arith.subf", a, b)
    return _op2("arith.subi", a, b)


def mul(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("mul", a, b)
        if v is not None:
            return v
    a, b = binary_op_type_checking(a, b)
    if a.type.scalar.is_floating():
        return _op2("arith.mulf", a, b)
    return _op2("arith.muli", a, b)


def truediv(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("truediv", a, b)
        if v is not None:
            return v
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


def floordiv(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("floordiv", a, b)
        if v is not None:
            return v
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    at = a.type.scalar
    if at.is_int():
        return _op2("arith.divsi" if at.is_int_signed() else "arith.divui", a, b)
    raise SemanticError(f"floor division (//) needs integer operands, got {at}")


def fdiv(a, b, ieee_rounding=False) -> tensor:
    a, b = to_tensor(a) if not isinstance(a, tensor) else a, b
    if not a.type.scalar.is_floating() or not (isinstance(b, tensor) and b.type.scalar.is_floating()
                                               or isinstance(_unwrap(b), float)):
        raise SemanticError("fdiv needs floating-point operands")
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    return _op2("arith.divf", a, b)


def mod(a, b) -> tensor:
    if _both_python(a, b):
        v, a, b = _folded("mod", a, b)
        if v is not None:
            return v
    a, b = binary_op_type_checking(a, b, False, False, True, True)
    at = a.type.scalar
    if at.is_floating():
        return _op2("arith.remf", a, b)
    if at.is_int_signed():
        return _op2("arith.remsi", a, b)
    return _op2("arith.remui", a, b)


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


def and_(a, b):
    if _both_python(a, b):
        v, a, b = _folded("and", a, b)
        if v is not None:
            return v
    a, b = _bitwise_check(a, b)
    return _op2("arith.andi", a, b)


def or_(a, b):
    if _both_python(a, b):
        v, a, b = _folded("or", a, b)
        if v is not None:
            return v
    a, b = _bitwise_check(a, b)
    return _op2("arith.ori", a, b)


def xor_(a, b):
    if _both_python(a, b):
        v, a, b = _folded("xor", a, b)
        if v is not None:
            return v
    a, b = _bitwise_check(a, b)
    return _op2("arith.xori", a, b)


def shl(a, b):
    if _both_python(a, b):
        v, a, b = _folded("shl", a, b)
        if v is not None:
            return v
    a, b = _bitwise_check(a, b)
    return _op2("arith.shli", a, b)


def shr(a, b):
    """``a >> b``: arithmetic or logical by the signedness of the tensor the operator is called on -- the left
    operand, or the right one when the left is a Python value -- before promotion, as Triton 3.6's
    ``tensor.__rshift__`` / ``__rrshift__``: ``int8 >> uint8`` promotes to uint8 and shifts arithmetically."""
    if _both_python(a, b):
        v, a, b = _folded("shr", a, b)
        if v is not None:
            return v
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
# memory
# ----------------------------------------------------------------------------------------------

def _keyword(enum, value, what: str):
    """The member of ``enum`` (:mod:`tritium.dialects.enums`) for the user's keyword ``value`` (``".cg"``,
    ``"acq_rel"``); a SemanticError naming the accepted keywords otherwise."""
    try:
        return enum.from_keyword(_unwrap(value), what)
    except ValueError as e:
        raise SemanticError(str(e)) from None


def _cache_attrs(cache_modifier, eviction_policy) -> dict:
    """The ``cache`` / ``evict`` attributes of a tt.load / tt.store."""
    b = _b()
    return {"cache": b.i32_attr(_keyword(_enums().CacheModifier, cache_modifier, "cache modifier")),
            "evict": b.i32_attr(_keyword(_enums().EvictionPolicy, eviction_policy, "eviction policy"))}


def _is_block_ptr(p: tensor) -> bool:
    return p.type.is_ptr() and p.type.element_ty.is_block()


def _check_pointer(ptr, what: str) -> None:
    if not isinstance(ptr, tensor) or not ptr.type.scalar.is_ptr():
        got = ptr.type if isinstance(ptr, tensor) else repr(_unwrap(ptr))
        raise SemanticError(f"Unsupported ptr type {got} in `{what}`: the first argument must be a pointer "
                            "or a tensor of pointers")


def _memory_mask(mask, ptr: tensor):
    """The ``mask`` of a tl.load / tl.store (None, a boolean scalar or tensor) checked, and broadcast to the shape
    of ``ptr`` when that is a block of pointers."""
    if mask is None:
        return None
    mask = to_tensor(mask)
    if mask.type.scalar != tl.int1:
        raise SemanticError(f"Mask argument must have boolean (int1) element type, got {mask.type.scalar}")
    if ptr.type.is_block():
        shape = ptr.type.shape
        try:
            mask = broadcast_impl_shape(mask, shape)
        except SemanticError as e:
            raise SemanticError(f"mask of shape {list(mask.type.shape)} does not match the pointer shape "
                                f"{list(shape)}: {e}") from None
    return mask


def _in_memory(ptr: tensor):
    """``(ptr, element type)`` as memory holds them: tl.int1 is stored as int8, through an int8 pointer."""
    elt = ptr.type.scalar.element_ty
    if elt == tl.int1:
        return cast(ptr, pointer_type(tl.int8)), tl.int8
    return ptr, elt


def _boundary_check(bc, rank):
    bc = _unwrap(bc)
    if bc is None:
        return []
    if isinstance(bc, int):
        bc = (bc,)
    out = sorted({int(_unwrap(d)) for d in bc})
    for d in out:
        if not 0 <= d < rank:
            raise SemanticError(f"boundary_check dimension {d} out of range for rank {rank}")
    return out


def load(ptr, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False) -> tensor:
    _check_pointer(ptr, "tl.load")
    b = _b()
    mask = None if _unwrap(mask) is None else mask
    other = None if _unwrap(other) is None else other
    attrs = _cache_attrs(cache_modifier, eviction_policy)
    attrs["isVolatile"] = b.bool_attr(_unwrap(volatile))
    padding_option = _unwrap(padding_option)
    if _is_block_ptr(ptr):
        if mask is not None or other is not None:
            raise SemanticError("`mask` and `other` arguments cannot be specified for loading block pointers")
        bty = ptr.type.element_ty
        bc = _boundary_check(boundary_check, len(bty.shape))
        if bc:
            attrs["boundaryCheck"] = b.i32_array(bc)
        if padding_option not in ("", None):
            attrs["padding"] = b.i32_attr(_keyword(_enums().PaddingOption, padding_option, "padding option"))
        attrs["operandSegmentSizes"] = b.i32_array([1, 0, 0])
        return _result(b.create("tt.load", [ptr], [b.ty(bty)], attrs), bty)
    if padding_option or _boundary_check(boundary_check, 8):
        raise SemanticError("`padding_option` and `boundary_check` are only supported for block pointers "
                            "(tl.make_block_ptr)")
    if mask is None and other is not None:
        raise SemanticError("`other` cannot be provided without `mask`")
    if mask is not None:
        mask = to_tensor(mask)
        if mask.type.is_block() and not ptr.type.is_block():
            ptr = splat(ptr, mask.type.shape)
    mask = _memory_mask(mask, ptr)
    is_bool = ptr.type.scalar.element_ty == tl.int1
    ptr, elt = _in_memory(ptr)
    if other is not None:
        if not isinstance(other, tensor) and ptr.type.is_block():
            other = constant(_unwrap(other), block_type(elt, ptr.type.shape))
        other = cast(other, elt)
        if ptr.type.is_block():
            other = broadcast_impl_shape(other, ptr.type.shape)
    rty = _with_shape(elt, ptr.type)
    ops = [ptr] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
    attrs["operandSegmentSizes"] = b.i32_array([1, int(mask is not None), int(other is not None)])
    ret = _result(b.create("tt.load", ops, [b.ty(rty)], attrs), rty)
    if is_bool:
        ret = cast(ret, tl.int1)
    return ret


def store(ptr, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    _check_pointer(ptr, "tl.store")
    if ptr.type.scalar.is_const():
        raise SemanticError(f"Cannot store to a constant pointer ({ptr.type.scalar}: a parameter annotated "
                            "tl.const points to read-only data)")
    b = _b()
    mask = None if _unwrap(mask) is None else mask
    attrs = _cache_attrs(cache_modifier, eviction_policy)
    if _is_block_ptr(ptr):
        if mask is not None:
            raise SemanticError("`mask` cannot be specified for storing to block pointers")
        bty = ptr.type.element_ty
        value = to_tensor(value)
        value = broadcast_impl_shape(value, bty.shape)
        value = cast(value, bty.scalar)
        bc = _boundary_check(boundary_check, len(bty.shape))
        if bc:
            attrs["boundaryCheck"] = b.i32_array(bc)
        attrs["operandSegmentSizes"] = b.i32_array([1, 1, 0])
        b.create("tt.store", [ptr, value], [], attrs)
        return None
    if _boundary_check(boundary_check, 8):
        raise SemanticError("`boundary_check` is only supported for block pointers")
    value = to_tensor(value, None) if not isinstance(value, tensor) else value
    mask = _memory_mask(mask, ptr)
    if not ptr.type.is_block():
        if value.type.is_block():
            raise SemanticError("Value argument cannot be block type if pointer argument is not a block")
        if mask is not None and mask.type.is_block():
            raise SemanticError("Mask argument cannot be block type if pointer argument is not a block")
    else:
        value = broadcast_impl_shape(value, ptr.type.shape)
    ptr, elt = _in_memory(ptr)
    value = cast(value, elt)
    ops = [ptr, value] + ([mask] if mask is not None else [])
    attrs["operandSegmentSizes"] = b.i32_array([1, 1, int(mask is not None)])
    b.create("tt.store", ops, [], attrs)
    return None


def _atomic_element_check(elt, op_name):
    """The element types Triton 3.6 takes for an atomic (``op_name``: ``atomic_add``, ..., ``atomic_cas``), with its
    wording: compare-and-swap on 16-, 32- and 64-bit elements; the read-modify-write atomics not on int16 / uint16
    or anything narrower (int8, bool, fp8), fp16 / bf16 only for ``atomic_add``."""
    if op_name == "atomic_cas":
        if elt.primitive_bitwidth not in (16, 32, 64):
            raise SemanticError("atomic_cas only supports elements with width {16, 32, 64}"
                                f" (got {elt})")
        return
    if (elt.is_fp16() or elt.is_bf16()) and op_name != "atomic_add":
        raise SemanticError(f"{op_name} does not support {elt}")
    if elt.name in ("int16", "uint16") or elt.primitive_bitwidth < 16:
        raise SemanticError(f"{op_name} does not support {elt}")


def _atom_prep(ptr, val, mask, op_name):
    if not isinstance(ptr, tensor) or not ptr.type.scalar.is_ptr():
        raise SemanticError(f"Pointer argument of {op_name} must be a pointer or a tensor of pointers")
    _atomic_element_check(ptr.type.scalar.element_ty, op_name)
    elt = ptr.type.scalar.element_ty
    if mask is not None and _unwrap(mask) is None:
        mask = None
    shapes = [x.type.shape for x in (ptr, val, mask) if isinstance(x, tensor) and x.type.is_block()]
    val = to_tensor(val) if not isinstance(val, tensor) else val
    if shapes:
        shape = shapes[0]
        ptr = broadcast_impl_shape(ptr, shape)
        val = broadcast_impl_shape(val, shape)
        if mask is not None:
            mask = broadcast_impl_shape(to_tensor(mask), shape)
    val = cast(val, elt)
    if mask is None:
        mask = _scalar_like(True, tl.int1, ptr)
    else:
        mask = cast(to_tensor(mask), tl.int1)
    return ptr, val, mask


def _memory_order_attrs(sem, scope) -> dict:
    """The ``sem`` / ``scope`` attributes of an atomic (defaults: acq_rel, gpu)."""
    b = _b()
    return {"sem": b.i32_attr(_keyword(_enums().MemSemantic, sem, "sem")),
            "scope": b.i32_attr(_keyword(_enums().MemSyncScope, scope, "scope"))}


def atomic_rmw(kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
    ptr, val, mask = _atom_prep(ptr, val, mask, f"atomic_{kind}")
    RMWOp = _enums().RMWOp
    elt = val.type.scalar
    if kind == "add":
        op = RMWOp.FADD if elt.is_floating() else RMWOp.ADD
    elif kind in ("max", "min"):  # floats: fp32 / fp64 (_atomic_element_check refuses the narrower ones)
        op = RMWOp[("U" if elt.is_int_unsigned() else "") + kind.upper()]
    else:
        if elt.is_floating() and kind in ("and", "or", "xor"):
            raise SemanticError(f"atomic_{kind} needs integer values, got {elt}")
        op = RMWOp[kind.upper()]
    b = _b()
    attrs = {"atomic_rmw_op": b.i32_attr(op), **_memory_order_attrs(sem, scope)}
    return _result(b.create("tt.atomic_rmw", [ptr, val, mask], [b.ty(val.type)], attrs), val.type)


def atomic_cas(ptr, cmp, val, sem=None, scope=None) -> tensor:
    ptr, val, _ = _atom_prep(ptr, val, None, "atomic_cas")
    cmp = cast(to_tensor(cmp) if not isinstance(cmp, tensor) else cmp, val.type.scalar)
    if ptr.type.is_block():
        cmp = broadcast_impl_shape(cmp, ptr.type.shape)
    b = _b()
    return _result(b.create("tt.atomic_cas", [ptr, cmp, val], [b.ty(val.type)], _memory_order_attrs(sem, scope)),
                   val.type)


# ----------------------------------------------------------------------------------------------
# block pointers
# ----------------------------------------------------------------------------------------------

def make_block_ptr(base, shape, strides, offsets, block_shape, order) -> tensor:
    if not isinstance(base, tensor) or not base.type.is_ptr() or base.type.element_ty.is_block():
        raise SemanticError("make_block_ptr base must be a scalar pointer")
    shape, strides, offsets = [_unwrap(x) for x in (shape, strides, offsets)]
    block_shape, order = _shape_arg(block_shape), [int(_unwrap(o)) for o in _unwrap(order)]
    if not (len(shape) == len(strides) == len(offsets) == len(block_shape) == len(order)):
        raise SemanticError("make_block_ptr: shape, strides, offsets, block_shape and order must have the same "
                            "length")
    if sorted(order) != list(range(len(order))):
        raise SemanticError(f"make_block_ptr order {order} is not a permutation")
    shape_v = [cast(to_tensor(s), tl.int64) for s in shape]
    strides_v = [cast(to_tensor(s), tl.int64) for s in strides]
    offs_v = [cast(to_tensor(s), tl.int32) for s in offsets]
    for v in shape_v + strides_v + offs_v:
        if v.type.is_block():
            raise SemanticError("make_block_ptr shape/strides/offsets must be scalars")
    rty = pointer_type(block_type(base.type.element_ty, block_shape))
    b = _b()
    attrs = {"order": b.i32_array(order), "operandSegmentSizes": b.i32_array([1, len(shape), len(shape), len(shape)])}
    return _result(b.create("tt.make_tensor_ptr", [base] + shape_v + strides_v + offs_v, [b.ty(rty)], attrs), rty)


def advance(ptr, offsets) -> tensor:
    if not isinstance(ptr, tensor) or not _is_block_ptr(ptr):
        raise SemanticError("advance() needs a block pointer (from tl.make_block_ptr)")
    offs = [cast(to_tensor(o), tl.int32) for o in _unwrap(offsets)]
    if len(offs) != len(ptr.type.element_ty.shape):
        raise SemanticError("advance() needs one offset per dimension")
    b = _b()
    return _result(b.create("tt.advance", [ptr] + offs, [b.ty(ptr.type)]), ptr.type)


# ----------------------------------------------------------------------------------------------
# tensor descriptors (Triton 3.6's tl.make_tensor_descriptor; TMA semantics: out-of-shape elements of a load
# read the padding, those of a store are dropped)
# ----------------------------------------------------------------------------------------------

_MAX_TENSOR_NUMEL = 1048576  # tl.TRITON_MAX_TENSOR_NUMEL


def _sequence(x, what: str) -> list:
    x = _unwrap(x)
    if isinstance(x, (list, tuple)):
        return list(x)
    raise SemanticError(f"{what} must be a list or tuple, got {x!r}")


def _descriptor_scalar(x, ty: dtype, what: str) -> tensor:
    """One entry of a descriptor's shape (int32) or strides (int64): an integer scalar, as ``ty``."""
    x = _unwrap(x)
    if isinstance(x, tensor):
        if x.type.is_block() or not x.type.scalar.is_int():
            raise SemanticError(f"{what} must be integer scalars, got a value of type {x.type}")
        return cast(x, ty)
    if isinstance(x, bool) or not isinstance(x, int):
        raise SemanticError(f"{what} must be integer scalars, got {x!r}")
    return constant(x, ty)


def _descriptor_block_shape(block_shape, ndim: int) -> list:
    """The block shape of a descriptor: ``ndim`` compile-time powers of two (Triton's validate_block_shape)."""
    shape = _sequence(block_shape, "block_shape")
    if len(shape) != ndim:
        raise SemanticError(f"Expected block_shape to have {ndim} dimensions but got {len(shape)}")
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, tensor):
            raise SemanticError(f"block_shape must be known at compile time (tl.constexpr): element {i} is a "
                                "run-time value")
        d = _unwrap(d)
        if isinstance(d, bool) or not isinstance(d, int):
            raise SemanticError(f"Shape element {i} must have type `constexpr[int]`, got "
                                f"`constexpr[{type(d).__name__}]`")
        if d <= 0 or d & (d - 1):
            raise SemanticError(f"Shape element {i} must be a power of 2, got {d}")
        out.append(d)
    numel = 1
    for d in out:
        numel *= d
    if numel > _MAX_TENSOR_NUMEL:
        raise SemanticError(f"numel ({numel}) exceeds triton maximum tensor numel ({_MAX_TENSOR_NUMEL})")
    return out


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero") -> tensor:
    """``tt.make_tensor_descriptor``: the checks of Triton 3.6's ``tl.make_tensor_descriptor``."""
    if not isinstance(base, tensor) or not base.type.is_ptr() or base.type.element_ty.is_block():
        got = base.type if isinstance(base, tensor) else repr(_unwrap(base))
        raise SemanticError(f"make_tensor_descriptor: base must be a pointer to the tensor's elements, got {got}")
    shape, strides = _sequence(shape, "shape"), _sequence(strides, "strides")
    ndim = len(shape)
    if not 1 <= ndim <= 5:
        raise SemanticError(f"Expected 1 <= ndim <= 5 but got {ndim} dimensions")
    if len(strides) != ndim:
        raise SemanticError(f"Expected {ndim} strides but got {len(strides)}")
    block = _descriptor_block_shape(block_shape, ndim)
    elem = base.type.element_ty
    elem_size = elem.primitive_bitwidth // 8
    if block[-1] * elem_size < 16:
        raise SemanticError(f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                            f"{block[-1]} * {elem_size} = {block[-1] * elem_size} bytes")
    last = strides[-1]
    if isinstance(last, tensor):
        raise SemanticError("Tensor descriptor last dim must be 1 but got a run-time stride (it must be the "
                            "compile-time constant 1)")
    if _unwrap(last) != 1:
        raise SemanticError(f"Tensor descriptor last dim must be 1 but got {_unwrap(last)}")
    enums = _enums()
    padding = _keyword(enums.PaddingOption, padding_option, "padding option")
    if padding == enums.PaddingOption.PAD_NAN and not elem.is_floating():
        raise SemanticError("Padding option `nan` is not supported for integer blocks")
    shape_v = [_descriptor_scalar(x, tl.int32, "shape") for x in shape]
    strides_v = [_descriptor_scalar(x, tl.int64, "strides") for x in strides]
    ty = tl.tensor_descriptor_type(block_type(elem, block))
    b = _b()
    attrs = {"padding": b.i32_attr(padding), "operandSegmentSizes": b.i32_array([1, ndim, ndim])}
    op = b.create("tt.make_tensor_descriptor", [base] + shape_v + strides_v, [b.ty(ty)], attrs)
    return tl.tensor_descriptor(op.result, ty, shape_v, strides_v)


def _check_descriptor(desc, what: str):
    if not isinstance(desc, tl.tensor_descriptor):
        got = desc.type if isinstance(desc, tensor) else repr(_unwrap(desc))
        raise SemanticError(f"{what} needs a tensor descriptor (from tl.make_tensor_descriptor), got {got}")


def _descriptor_offsets(desc, offsets) -> list:
    """One int32 scalar per dimension of the descriptor's block (Triton: 32-bit offsets only)."""
    offsets = _sequence(offsets, "offsets")
    ndim = len(desc.block_shape)
    if len(offsets) != ndim:
        raise SemanticError(f"expected {ndim} offsets, but got {len(offsets)}")
    out = []
    for x in offsets:
        x = _unwrap(x)
        if isinstance(x, tensor):
            if x.type.is_block() or not x.type.scalar.is_int():
                raise SemanticError(f"descriptor offsets must be integer scalars, got a value of type {x.type}")
            if x.type.scalar.primitive_bitwidth > 32:
                raise SemanticError("descriptor offsets must be 32-bit integers, got a 64-bit one: add a "
                                    ".to(tl.int32)")
            out.append(cast(x, tl.int32))
        elif isinstance(x, int) and not isinstance(x, bool):
            if not -2 ** 31 <= x < 2 ** 31:
                raise SemanticError(f"descriptor offsets must fit 32 bits, got {x}")
            out.append(constant(x, tl.int32))
        else:
            raise SemanticError(f"descriptor offsets must be integer scalars, got {x!r}")
    return out


def descriptor_load(desc, offsets, cache_modifier="", eviction_policy="") -> tensor:
    """``tt.descriptor_load``: the block at ``offsets``."""
    _check_descriptor(desc, "descriptor load")
    offs = _descriptor_offsets(desc, offsets)
    b = _b()
    bty = desc.block_type
    attrs = _cache_attrs(cache_modifier, eviction_policy)
    return _result(b.create("tt.descriptor_load", [desc] + offs, [b.ty(bty)], attrs), bty)


def descriptor_store(desc, value, offsets):
    """``tt.descriptor_store``: ``value`` (of the block's shape, cast to its dtype) written at ``offsets``."""
    _check_descriptor(desc, "descriptor store")
    value = to_tensor(value) if not isinstance(value, tensor) else value
    want = list(desc.block_shape)
    got = [int(_unwrap(d)) for d in value.shape] if value.type.is_block() else []
    if got != want:
        raise SemanticError(f"descriptor store: the value's shape {got} differs from the descriptor's block shape "
                            f"{want}")
    offs = _descriptor_offsets(desc, offsets)
    value = cast(value, desc.dtype)
    _b().create("tt.descriptor_store", [desc, value] + offs, [])
    return None


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
