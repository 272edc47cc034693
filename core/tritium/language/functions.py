"""tl builtins with Triton 3.x's signatures.  Each is a thin wrapper over :mod:`semantic`."""
from __future__ import annotations

import builtins as _py
from typing import Optional

from . import core as _c
from . import semantic as _s
from .core import (SemanticError, _tensor_member_fn, _unwrap, block_type, builtin, constexpr, dtype, tensor)


def _t(x):
    return _s.to_tensor(x)


def _axis(axis):
    return _unwrap(axis)


# ----------------------------------------------------------------------------------------------
# creation / program
# ----------------------------------------------------------------------------------------------

@builtin
def program_id(axis):
    return _s.program_id(axis)


@builtin
def num_programs(axis):
    return _s.num_programs(axis)


@builtin
def arange(start, end):
    return _s.arange(start, end)


@builtin
def full(shape, value, dtype):
    return _s.full(shape, value, dtype)


@builtin
def zeros(shape, dtype):
    return _s.full(shape, 0, dtype)


@builtin
def zeros_like(input):
    input = _t(input)
    return _s.full(list(input.type.shape) if input.type.is_block() else [], 0, input.type.scalar)


@builtin
def full_like(input, value, dtype=None):
    input = _t(input)
    return _s.full(list(input.type.shape) if input.type.is_block() else [], value,
                   _unwrap(dtype) or input.type.scalar)


# ----------------------------------------------------------------------------------------------
# shapes
# ----------------------------------------------------------------------------------------------

@_tensor_member_fn
@builtin
def broadcast(input, other):
    return _s.broadcast_impl_value(_t(input), _t(other))


def _shape_args(shape):
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (tuple, list)):
        shape = _unwrap(shape[0])
    return [int(_unwrap(s)) for s in shape]


@_tensor_member_fn
@builtin
def broadcast_to(input, *shape):
    return _s.broadcast_impl_shape(_t(input), _shape_args(shape))


@_tensor_member_fn
@builtin
def expand_dims(input, axis):
    return _s.expand_dims(_t(input), axis)


@_tensor_member_fn
@builtin
def reshape(input, *shape, can_reorder=False):
    return _s.reshape(_t(input), _shape_args(shape), _unwrap(can_reorder))


@_tensor_member_fn
@builtin
def view(input, *shape):
    return _s.reshape(_t(input), _shape_args(shape), True)


@_tensor_member_fn
@builtin
def ravel(input, can_reorder=False):
    input = _t(input)
    return _s.reshape(input, [input.type.numel], True)


@_tensor_member_fn
@builtin
def trans(input, *dims):
    return _s.trans(_t(input), *dims)


@_tensor_member_fn
@builtin
def permute(input, *dims):
    return _s.trans(_t(input), *dims)


@builtin
def cat(input, other, can_reorder=False):
    return _s.cat(_t(input), _t(other), _unwrap(can_reorder))


@builtin
def join(a, b):
    return _s.join(_t(a), _t(b))


@_tensor_member_fn
@builtin
def split(a):
    return _s.split(_t(a))


@builtin
def interleave(a, b):
    c = _s.join(_t(a), _t(b))
    shape = list(c.type.shape)
    return _s.reshape(c, shape[:-2] + [shape[-2] * 2], False) if len(shape) > 1 else c


# ----------------------------------------------------------------------------------------------
# casts and elementwise
# ----------------------------------------------------------------------------------------------

@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    return _s.cast(input, _unwrap(dtype), _unwrap(bitcast), _unwrap(fp_downcast_rounding))


@builtin
def where(condition, x, y):
    return _s.where(condition, x, y)


@_tensor_member_fn
@builtin
def maximum(x, y, propagate_nan=0):
    return _s.maximum(x, y, propagate_nan)


@_tensor_member_fn
@builtin
def minimum(x, y, propagate_nan=0):
    return _s.minimum(x, y, propagate_nan)


@_tensor_member_fn
@builtin
def clamp(x, min, max, propagate_nan=0):
    return _s.clamp(x, min, max, propagate_nan)


def _math1(mlir_name, name):
    def f(x, _n=mlir_name):
        return _s._float_unary(_n, x, name)

    f.__name__ = name
    f.__qualname__ = name
    return _tensor_member_fn(builtin(f))


# the functions of MLIR's math dialect of the same name
exp, exp2, log, log2, sqrt, rsqrt, sin, cos, floor, ceil, erf = (
    _math1("math." + n, n) for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil",
                                     "erf"))
sqrt_rn = _math1("tt.precise_sqrt", "sqrt_rn")


@_tensor_member_fn
@builtin
def abs(x):
    return _s.abs(x)


@_tensor_member_fn
@builtin
def fma(x, y, z):
    return _s.fma(x, y, z)


@_tensor_member_fn
@builtin
def fdiv(x, y, ieee_rounding=False):
    return _s.fdiv(x, y, ieee_rounding)


@_tensor_member_fn
@builtin
def div_rn(x, y):
    x, y = _s.binary_op_type_checking(x, y)
    if not x.type.scalar.is_floating():
        raise SemanticError("div_rn() needs floating-point operands")
    return _s._op2("tt.precise_divf", x, y)


@_tensor_member_fn
@builtin
def umulhi(x, y):
    return _s.umulhi(x, y)


@_tensor_member_fn
@builtin
def sigmoid(x):
    x = _t(x)
    return 1 / (1 + exp(-x))


@_tensor_member_fn
@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    x = _t(x)
    d = 0 if _unwrap(dim) is None else _unwrap(dim)
    z = x - max(x, d, keep_dims=True)
    num = exp(z)
    den = sum(num, d, keep_dims=True)
    return fdiv(num, den, ieee_rounding)


@_tensor_member_fn
@builtin
def cdiv(x, div):
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return constexpr((_unwrap(x) + _unwrap(div) - 1) // _unwrap(div))
    return (x + div - 1) // div


# ----------------------------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------------------------

@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    return _s.load(pointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, volatile)


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    return _s.store(pointer, value, mask, boundary_check, cache_modifier, eviction_policy)


def _atomic(kind):
    def f(pointer, val, mask=None, sem=None, scope=None):
        return _s.atomic_rmw(kind, pointer, val, mask, sem, scope)

    f.__name__ = f"atomic_{kind}"
    return _tensor_member_fn(builtin(f))


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@_tensor_member_fn
@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    return _s.atomic_cas(pointer, cmp, val, sem, scope)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    return _s.make_block_ptr(base, shape, strides, offsets, block_shape, order)


@_tensor_member_fn
@builtin
def advance(base, offsets):
    return _s.advance(base, offsets)


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A :class:`tensor_descriptor` of the tensor at ``base`` with ``shape`` and ``strides`` (the last one the
    constant 1), loaded and stored by blocks of the compile-time ``block_shape`` (powers of two, at least 16
    bytes along the last dimension).  Elements outside ``shape`` read ``padding_option`` ("zero" or "nan") and
    are not written."""
    return _s.make_tensor_descriptor(base, shape, strides, block_shape, padding_option)


@builtin
def load_tensor_descriptor(desc, offsets):
    """``desc.load(offsets)``."""
    return _s.descriptor_load(desc, offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """``desc.store(offsets, value)``."""
    return _s.descriptor_store(desc, value, offsets)


# ----------------------------------------------------------------------------------------------
# dot
# ----------------------------------------------------------------------------------------------

@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=_c.float32):
    return _s.dot(input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype)


# ----------------------------------------------------------------------------------------------
# reductions and scans
# ----------------------------------------------------------------------------------------------

@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    multi = isinstance(input, (tuple, list))
    ins = list(input) if multi else [input]
    res = _s.reduction(ins, axis, combine_fn, keep_dims, hint=_fn_hint(combine_fn, "reduce"))
    return tuple(res) if multi else res[0]


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    multi = isinstance(input, (tuple, list))
    ins = list(input) if multi else [input]
    res = _s.scan(ins, axis, combine_fn, reverse, hint=_fn_hint(combine_fn, "scan"))
    return tuple(res) if multi else res[0]


def _fn_hint(fn, default):
    name = getattr(fn, "__name__", default)
    return default if name == "<lambda>" else name


def _sum_combine(a, b):
    return a + b


def _prod_combine(a, b):
    return a * b


def _max_combine(a, b):
    return _s.maximum(a, b)


def _min_combine(a, b):
    return _s.minimum(a, b)


def _xor_combine(a, b):
    return a ^ b


def _promote_bf16(input):
    """bf16 -> fp32 before a max / min / cumsum / cumprod, as Triton does: the result is fp32, and a scan accumulates
    in fp32 rather than rounding every partial sum or product to bf16."""
    return _s.cast(input, _c.float32) if input.type.scalar.is_bf16() else input


def _widen_to_32(input):
    """A max / min of a narrower type runs on 32 bits, as in Triton: floats as fp32, integers as int32."""
    sc = input.type.scalar
    if sc.primitive_bitwidth < 32 and (sc.is_floating() or sc.is_int()):
        return _s.cast(input, _c.float32 if sc.is_floating() else _c.int32)
    return input


def _pick_sum_dtype(in_dtype, dt):
    dt = _unwrap(dt)
    if dt is not None:
        return dt
    if in_dtype.is_int() and in_dtype.int_bitwidth < 32:
        return _c.int32 if in_dtype.is_int_signed() or in_dtype.is_bool() else _c.uint32
    return None


@_tensor_member_fn
@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    input = _t(input)
    out = _pick_sum_dtype(input.type.scalar, dtype)
    if out is not None and out != input.type.scalar:
        input = _s.cast(input, out)
    return _s.reduction([input], axis, _sum_combine, keep_dims, hint="sum", key=("sum",))[0]


@_tensor_member_fn
@builtin
def xor_sum(input, axis=None, keep_dims=False):
    input = _t(input)
    if not input.type.scalar.is_int():
        raise SemanticError("xor_sum only supported for integers")
    return _s.reduction([input], axis, _xor_combine, keep_dims, hint="xor_sum", key=("xor",))[0]


def _argminmax_combine(is_max, tie_break_left):
    def combine(v1, i1, v2, i2):
        gt = (v1 > v2) if is_max else (v1 < v2)
        if v1.type.scalar.is_floating():
            # NaN wins, as in Triton
            gt = gt | (v1 != v1)
        if tie_break_left:
            gt = gt | ((v1 == v2) & (i1 < i2))
        return _s.where(gt, v1, v2), _s.where(gt, i1, i2)

    return combine


def _arg_reduce(input, axis, is_max, tie_break_left, keep_dims):
    input = _t(input)
    axis = _unwrap(axis)
    if not input.type.is_block():
        raise SemanticError("cannot reduce a scalar: the input must be a tensor")
    if axis is None:
        input = _s.reshape(input, [input.type.numel], True)
        axis = 0
    shape = input.type.shape
    axis = _s._norm_axis(axis, len(shape))
    n = shape[axis]
    idx = arange(0, n)
    if len(shape) > 1:
        bshape = [1] * len(shape)
        bshape[axis] = n
        idx = _s.reshape(idx, bshape)
        idx = _s.broadcast_impl_shape(idx, shape)
    tbl = bool(_unwrap(tie_break_left))
    name = ("argmax" if is_max else "argmin") + ("" if tbl else "_fast")
    return _s.reduction([input, idx], axis, _argminmax_combine(is_max, tbl), keep_dims, hint=name,
                        key=(name,))


def _extremum(is_max: bool):
    """``tl.max`` / ``tl.min``: the reduction, or with ``return_indices`` the arg-reduction's (value, index)."""
    name, combine = ("max", _max_combine) if is_max else ("min", _min_combine)

    def f(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
        input = _promote_bf16(_t(input))
        if _unwrap(return_indices):
            return _arg_reduce(input, axis, is_max, return_indices_tie_break_left, keep_dims)
        input = _widen_to_32(input)
        return _s.reduction([input], axis, combine, keep_dims, hint=name, key=(name,))[0]

    f.__name__ = name
    f.__qualname__ = name
    return _tensor_member_fn(builtin(f))


max = _extremum(True)
min = _extremum(False)


@_tensor_member_fn
@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _arg_reduce(input, axis, True, tie_break_left, keep_dims)[1]


@_tensor_member_fn
@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _arg_reduce(input, axis, False, tie_break_left, keep_dims)[1]


@_tensor_member_fn
@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    input = _promote_bf16(_t(input))
    out = _pick_sum_dtype(input.type.scalar, dtype)
    if out is not None and out != input.type.scalar:
        input = _s.cast(input, out)
    return _s.scan([input], axis, _sum_combine, reverse, hint="cumsum", key=("cumsum",))[0]


@_tensor_member_fn
@builtin
def cumprod(input, axis=0, reverse=False):
    input = _promote_bf16(_t(input))
    out = _pick_sum_dtype(input.type.scalar, None)
    if out is not None:
        input = _s.cast(input, out)
    return _s.scan([input], axis, _prod_combine, reverse, hint="cumprod", key=("cumprod",))[0]


# ----------------------------------------------------------------------------------------------
# histogram, gather, inline assembly, external functions
# ----------------------------------------------------------------------------------------------

@_tensor_member_fn
@builtin
def histogram(input, num_bins, mask=None):
    """int32 counts of ``input``'s values in bins 0 .. num_bins-1 (width 1); ``mask`` false excludes an element,
    values outside the bins are not counted."""
    return _s.histogram(input, num_bins, mask)


@_tensor_member_fn
@builtin
def gather(src, index, axis):
    """``out[..., j, ...] = src[..., index[..., j, ...], ...]`` along ``axis``; the result has index's shape."""
    return _s.gather(src, index, axis)


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Inline assembly applied elementwise to the broadcast ``args``, ``pack`` elements per instance; one tensor,
    or a tuple when ``dtype`` is a tuple of dtypes."""
    return _s.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack)


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """``scalar_fn`` (a @jit function of scalars) applied to each element of the broadcast ``args``, ``pack``
    elements of each per call; per-element control flow in it runs only the branch each element takes."""
    return _s.map_elementwise(scalar_fn, args, pack)


# ----------------------------------------------------------------------------------------------
# hints and debugging
# ----------------------------------------------------------------------------------------------

_HINT_ATTRS = {"multiple_of": "tt.divisibility", "max_contiguous": "tt.contiguity", "max_constancy": "tt.constancy"}


def _hint(name):
    def f(input, values):
        v = _unwrap(values)
        vals = v if isinstance(v, (list, tuple)) else [v]
        for x in vals:
            if not isinstance(_unwrap(x), int):
                raise SemanticError(f"{name}() values must be compile-time integers, got {x!r}")
        # as Triton: the hint is an attribute of the op that defines the value (so it holds for every use of that
        # value, the call's result assigned or not); the axis analysis reads it (passes/analysis/axis_info.py)
        # (none for a block argument, nor in step-through mode, whose values have no defining op)
        owner = getattr(getattr(input, "handle", None), "owner", None)
        if owner is not None:
            from mlir import ir

            if not isinstance(owner, ir.Block):
                owner.operation.attributes[_HINT_ATTRS[name]] = ir.DenseI32ArrayAttr.get([int(_unwrap(x))
                                                                                           for x in vals])
        return input

    f.__name__ = name
    return builtin(f)


multiple_of = _hint("multiple_of")
max_contiguous = _hint("max_contiguous")
max_constancy = _hint("max_constancy")


@builtin
def assume(cond):
    """The condition holds (a scalar); the compiler may rely on it (``llvm.assume``).  A compile-time true condition
    says nothing; a compile-time false one is an error."""
    if not isinstance(cond, tensor):
        if not _unwrap(cond):
            raise SemanticError("tl.assume of a false compile-time condition")
        return None
    _s.assume(cond)
    return None


@builtin
def debug_barrier():
    """Every thread of the program waits here; memory writes before the barrier are visible to the program's
    threads after it (a CTA barrier on the GPU)."""
    _s.debug_barrier()
    return None


@builtin
def static_assert(cond, msg=""):
    if isinstance(cond, tensor):
        raise SemanticError("static_assert needs a compile-time condition (tl.constexpr), got a tensor")
    if not _unwrap(cond):
        raise SemanticError(f"Static assertion failed: {_unwrap(msg)}")
    return None


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    print(*[_unwrap(v) for v in values], sep=sep, end=end, file=file, flush=flush)
    return None


@builtin
def device_print(prefix, *args, hex=False):
    _s.device_print(str(_unwrap(prefix)), list(args), bool(_unwrap(hex)))
    return None


@builtin
def device_assert(cond, msg="", mask=None):
    """Checked at run time when the kernel is compiled with ``debug`` (else compiled out, as in Triton); a
    compile-time false condition then fails at every launch."""
    _s.device_assert(cond if isinstance(cond, tensor) else bool(_unwrap(cond)), _unwrap(msg))
    return None


# ----------------------------------------------------------------------------------------------
# iterators (handled by the code generator's ``for``)
# ----------------------------------------------------------------------------------------------

class static_range:
    """``for i in tl.static_range(...)``: unrolled at compile time; bounds must be constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        def cx(v, what):
            v = _unwrap(v)
            if not isinstance(v, int):
                raise SemanticError(f"static_range {what} must be a compile-time integer, got {v!r}")
            return v

        if arg2 is None:
            self.start, self.end = 0, cx(arg1, "end")
        else:
            self.start, self.end = cx(arg1, "start"), cx(arg2, "end")
        self.step = 1 if step is None else cx(step, "step")
        if self.step == 0:
            raise SemanticError("static_range step must not be zero")

    def __iter__(self):
        if getattr(_c.current_builder_or_none(), "eager", False):  # step-through mode: Python runs the loop
            return iter([constexpr(i) for i in _py.range(self.start, self.end, self.step)])
        raise SemanticError("static_range can only be used in a for loop of a @jit function")


class range:
    """``for i in tl.range(...)``: an scf.for; ``num_stages`` etc. are hints for the pipeliner."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = constexpr(1) if step is None else step
        self.num_stages = _unwrap(num_stages)
        self.loop_unroll_factor = _unwrap(loop_unroll_factor)
        self.disallow_acc_multi_buffer = _unwrap(disallow_acc_multi_buffer)
        self.flatten = _unwrap(flatten)
        self.warp_specialize = _unwrap(warp_specialize)
        self.disable_licm = bool(_unwrap(disable_licm))

    def __iter__(self):
        b = _c.current_builder_or_none()
        if getattr(b, "eager", False):  # step-through mode: Python runs the loop
            return b.iterate(self)
        raise SemanticError("tl.range can only be used in a for loop of a @jit function")


static_range.__tritium_builtin__ = True
range.__tritium_builtin__ = True
