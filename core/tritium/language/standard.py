"""``tl.standard``: the library functions Triton 3.6 writes in the tile language itself, as builtins made of
existing ops (reshape, reductions, broadcasts, ``where``), so the interpreter and every GPU backend get them.

* ``flip(x, dim=None)``: reverse ``x`` along ``dim`` (a power-of-two size).  ``dim`` is viewed as a hypercube of
  size-2 axes; on each axis the pair is swapped by XOR-ing with the pair's XOR (a size-2 ``xor`` reduction), on the
  bit pattern (an integer bitcast), so any dtype is moved exactly.
* ``sort(x, dim=None, descending=False)``, ``topk(x, k, dim=None)``, ``bitonic_merge(x, dim=None,
  descending=False)``: a bitonic network along the last dimension (Triton supports only that one).  A compare-and-swap
  on bit ``j`` of the index gets each element's partner by the same XOR swap; both elements of a pair take one
  decision (left > right, flipped for descending blocks), so every step is a permutation (duplicates, -0.0 and NaN
  are never duplicated or lost).  ``topk`` (largest ``k``, sorted descending, ``k`` a power of two) sorts blocks of
  ``k`` in alternating order, then halves the candidates with an element-wise max of neighbouring blocks followed by
  a bitonic merge, until ``k`` remain.
* ``swizzle2d(i, j, size_i, size_j, size_g)``: row-major -> column-major within groups of ``size_g`` rows (scalars or
  tensors; all-constexpr arguments give constexprs).
* ``reduce_or(input, axis, keep_dims=False)``: bitwise-or reduction of integers.
* ``to_tensor(x)``, ``add/sub/mul(x, y, sanitize_overflow=True)`` (the operators as functions; tritium's
  ``sanitize_overflow`` option is off, so the flag changes nothing), ``condition(cond, disable_licm=False)`` (the
  ``while`` condition wrapper; the frontend unwraps it; ``disable_licm`` becomes LLVM loop metadata).
"""
from __future__ import annotations

import builtins as _py

from . import core as _c
from . import semantic as _s
from .core import SemanticError, _tensor_member_fn, _unwrap, builtin, constexpr, constexpr_function, tensor


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _block(x, fn):
    x = _s.to_tensor(x)
    if not x.type.is_block():
        raise SemanticError(f"{fn}() needs a tensor (a block), got a scalar of type {x.type}")
    return x


def _cx(v, fn, what, allow_none=False):
    """A compile-time integer argument (or None)."""
    if isinstance(v, tensor):
        raise SemanticError(f"{fn}(): '{what}' must be a compile-time value (tl.constexpr), got a tensor")
    v = _unwrap(v)
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise SemanticError(f"{fn}(): '{what}' must be a compile-time integer, got {v!r}")
    return v


def _cx_bool(v, fn, what):
    if isinstance(v, tensor):
        raise SemanticError(f"{fn}(): '{what}' must be a compile-time value (tl.constexpr), got a tensor")
    v = _unwrap(v)
    if not isinstance(v, (bool, int)):
        raise SemanticError(f"{fn}(): '{what}' must be a compile-time bool, got {v!r}")
    return bool(v)


@constexpr_function
def _log2(i):
    """Triton's ``tl.standard._log2``: floor(log2(i)) of a compile-time int (0 for i <= 1); Inductor's sort and
    scan helpers call it in their kernels."""
    n, log2 = int(i), 0
    while n > 1:
        n >>= 1
        log2 += 1
    return log2


def _log2_checked(n, fn, what):
    if n < 1 or n & (n - 1):
        raise SemanticError(f"{fn}(): {what} must be a power of two, got {n}")
    return n.bit_length() - 1


def _dim(x, dim, fn, last_only):
    rank = len(x.type.shape)
    d = _cx(dim, fn, "dim", allow_none=True)
    if d is None:
        return rank - 1
    if not -rank <= d < rank:
        raise SemanticError(f"{fn}(): dim {d} is out of range for a tensor of rank {rank}")
    d %= rank
    if last_only and d != rank - 1:
        raise SemanticError(f"{fn}(): only the last dimension (dim={rank - 1} or -1) is supported, got dim={d}")
    return d


_INT_OF_WIDTH = {1: _c.int1, 8: _c.int8, 16: _c.int16, 32: _c.int32, 64: _c.int64}


def _as_bits(x, fn):
    """``x`` as an integer tensor of the same width (its bit pattern), and the dtype to bitcast back to."""
    st = x.type.scalar
    if st.is_int():
        return x, st
    if st.is_ptr() or st.primitive_bitwidth not in _INT_OF_WIDTH:
        raise SemanticError(f"{fn}() does not support tensors of {st}")
    return _s.bitcast(x, _INT_OF_WIDTH[st.primitive_bitwidth]), st


def _xor_combine(a, b):
    return a ^ b


def _xor_pair(bits, axis):
    """The XOR of each size-2 pair along ``axis``, broadcast back (``bits ^ result`` swaps the pair)."""
    return _s.reduction([bits], axis, _xor_combine, True, hint="xor_sum", key=("xor",))[0]


def _indicator(rank, axis):
    """An int1 tensor of shape [1, .., 2, .., 1] (2 at ``axis``): False for the first element of a pair, True for the
    second."""
    shape = [1] * rank
    shape[axis] = 2
    return _s.compare(_s.reshape(_s.arange(0, 2), shape), 0, "ne")


def _partner(x, axis):
    """Each element's partner along the size-2 ``axis`` (the pair swapped), exactly (by bit pattern)."""
    bits, st = _as_bits(x, "sort")
    return _s.bitcast(bits ^ _xor_pair(bits, axis), st)


# ----------------------------------------------------------------------------------------------
# flip
# ----------------------------------------------------------------------------------------------

@_tensor_member_fn
@builtin
def flip(x, dim=None):
    """Reverse ``x`` along ``dim`` (default: the last dimension), whose size must be a power of two."""
    x = _block(x, "flip")
    d = _dim(x, dim, "flip", last_only=False)
    shape = list(x.type.shape)
    steps = _log2_checked(shape[d], "flip", f"the size of dim {d}")
    if steps == 0:
        return x
    bits, st = _as_bits(x, "flip")
    h = _s.reshape(bits, shape[:d] + [2] * steps + shape[d + 1:])
    for i in _py.range(steps):
        h = h ^ _xor_pair(h, d + i)
    return _s.bitcast(_s.reshape(h, shape), st)


# ----------------------------------------------------------------------------------------------
# bitonic sort / merge / top-k along the last dimension
# ----------------------------------------------------------------------------------------------

def _compare_swap(h, lead, nbits, j, desc):
    """One compare-and-swap between elements whose last-dim index differs in bit ``j``.  ``h`` has shape
    lead + [2] * nbits (bit j is axis lead + nbits - 1 - j); ``desc`` is a Python bool or an int1 tensor
    broadcastable to ``h`` (per element: sort its pair in descending order)."""
    rank = lead + nbits
    axis = lead + nbits - 1 - j
    y = _partner(h, axis)
    right = _indicator(rank, axis)
    # the pair's decision, seen the same from both sides: swap when left > right (ascending)
    left_gt_right = _s.where(right, _s.compare(y, h, "gt"), _s.compare(h, y, "gt"))
    if isinstance(desc, tensor):
        swap = _s.xor_(left_gt_right, desc)
    elif desc:
        swap = _s.where(right, _s.compare(h, y, "gt"), _s.compare(y, h, "gt"))
    else:
        swap = left_gt_right
    return _s.where(swap, y, h)


def _merge(h, lead, nbits, stage, order):
    """Bitonic merge of blocks of 2**stage (bits stage-1 .. 0).  ``order``: False ascending, True descending,
    None alternating by bit ``stage`` of the index (ascending where it is 0)."""
    if order is None:
        desc = _indicator(lead + nbits, lead + nbits - 1 - stage)
    else:
        desc = bool(order)
    for j in _py.range(stage - 1, -1, -1):
        h = _compare_swap(h, lead, nbits, j, desc)
    return h


def _max_pick(a, b):
    return _s.where(_s.compare(b, a, "gt"), b, a)


def _min_pick(a, b):
    return _s.where(_s.compare(b, a, "lt"), b, a)


def _sort_impl(x, k, dim, descending, fn):
    x = _block(x, fn)
    _dim(x, dim, fn, last_only=True)
    desc = _cx_bool(descending, fn, "descending")
    shape = list(x.type.shape)
    n = shape[-1]
    log_n = _log2_checked(n, fn, "the size of the sorted (last) dimension")
    if k is None:
        log_k = log_n
    else:
        k = _cx(k, fn, "k")
        log_k = _log2_checked(k, fn, "k")
        if k > n:
            raise SemanticError(f"{fn}(): k={k} is larger than the size of the last dimension ({n})")
    if log_n == 0:
        return x
    lead = len(shape) - 1
    h = _s.reshape(x, shape[:-1] + [2] * log_n)
    nbits = log_n
    # sort blocks of 2**log_k, alternating directions so that neighbouring blocks form bitonic sequences
    for stage in _py.range(1, log_k + 1):
        h = _merge(h, lead, nbits, stage, None if stage < log_n else desc)
    # top-k: keep the larger (smaller) of each element pair of neighbouring blocks, then re-merge the halved blocks
    pick = _max_pick if desc else _min_pick
    while nbits > log_k:
        axis = lead + nbits - 1 - log_k
        h = _s.reduction([h], axis, pick, False, hint="topk_max" if desc else "topk_min",
                         key=("topk_max" if desc else "topk_min",))[0]
        nbits -= 1
        h = _merge(h, lead, nbits, log_k, None if nbits > log_k else desc)
    return _s.reshape(h, shape[:-1] + [2 ** log_k])


@_tensor_member_fn
@builtin
def sort(x, dim=None, descending=False):
    """Sort ``x`` along its last dimension (a power-of-two size); ``dim`` may only name the last dimension."""
    return _sort_impl(x, None, dim, descending, "sort")


@builtin
def topk(x, k, dim=None):
    """The ``k`` largest elements along the last dimension, sorted descending (``k`` a power of two)."""
    if isinstance(k, tensor) or _unwrap(k) is None:
        raise SemanticError("topk(): 'k' must be a compile-time integer (tl.constexpr)")
    return _sort_impl(x, k, dim, True, "topk")


@builtin
def sort_impl(x, k=None, dim=None, descending=False):
    """Triton's ``tl.standard.sort_impl``: sort, or the top ``k`` in ``descending`` (else bottom ``k`` ascending)."""
    return _sort_impl(x, k, dim, descending, "sort_impl")


@builtin
def bitonic_merge(x, dim=None, descending=False):
    """Merge bitonic sequences along the last dimension into sorted ones (ascending unless ``descending``)."""
    x = _block(x, "bitonic_merge")
    _dim(x, dim, "bitonic_merge", last_only=True)
    desc = _cx_bool(descending, "bitonic_merge", "descending")
    shape = list(x.type.shape)
    log_n = _log2_checked(shape[-1], "bitonic_merge", "the size of the last dimension")
    if log_n == 0:
        return x
    h = _s.reshape(x, shape[:-1] + [2] * log_n)
    h = _merge(h, len(shape) - 1, log_n, log_n, desc)
    return _s.reshape(h, shape)


# ----------------------------------------------------------------------------------------------
# swizzle2d, reduce_or
# ----------------------------------------------------------------------------------------------

def _minimum(a, b):
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        return constexpr(_py.min(_unwrap(a), _unwrap(b)))
    return _s.minimum(a, b)


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map (i, j) of a row-major ``size_i`` x ``size_j`` grid to the column-major order within each group of
    ``size_g`` rows (the last group may have fewer); returns (new_i, new_j)."""
    for name, v in (("i", i), ("j", j), ("size_i", size_i), ("size_j", size_j), ("size_g", size_g)):
        t = v.type.scalar if isinstance(v, tensor) else type(_unwrap(v))
        if not (isinstance(v, tensor) and t.is_int()) and not (not isinstance(v, tensor) and t is int):
            raise SemanticError(f"swizzle2d(): '{name}' must be an integer (scalar or tensor), got {t}")
    ij = i * size_j + j
    size_gj = size_g * size_j
    group = ij // size_gj
    off_i = group * size_g
    rows = _minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % rows, ij // rows


def _or_combine(a, b):
    return a | b


@_tensor_member_fn
@builtin
def reduce_or(input, axis, keep_dims=False):
    """Bitwise-or reduction of an integer tensor along ``axis`` (None: all elements)."""
    input = _block(input, "reduce_or")
    if not input.type.scalar.is_int():
        raise SemanticError(f"reduce_or only supported for integers, got {input.type.scalar}")
    return _s.reduction([input], axis, _or_combine, keep_dims, hint="reduce_or", key=("or",))[0]


# ----------------------------------------------------------------------------------------------
# small core functions
# ----------------------------------------------------------------------------------------------

@builtin
def to_tensor(x):
    """``x`` (a Python number, constexpr or tensor) as a tensor."""
    return _s.to_tensor(x)


def _binary(name, op):
    def f(x, y, sanitize_overflow=True):
        if not isinstance(x, tensor) and not isinstance(y, tensor):
            x = _s.to_tensor(x)
        return op(x, y)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``x {dict(add='+', sub='-', mul='*')[name]} y`` as a function (Triton's ``tl.{name}``)."
    return builtin(f)


add = _binary("add", _s.add)
sub = _binary("sub", _s.sub)
mul = _binary("mul", _s.mul)


class condition:
    """``while tl.condition(cond, disable_licm=False):`` -- the loop condition with loop hints."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = bool(_unwrap(disable_licm))


condition.__tritium_builtin__ = True

__all__ = ["add", "bitonic_merge", "condition", "flip", "mul", "reduce_or", "sort", "sub", "swizzle2d", "to_tensor",
           "topk"]
