"""Axis information: what is known about the integer / pointer values of each SSA value, per dimension.

The lattice is Triton's ``AxisInfo``.  For a value of rank ``r`` (a scalar counts as rank 1) it holds, per
dimension ``d``:

* ``contiguity[d]``: the length of the shortest run of consecutive integers (``x, x+1, x+2, ...``) along ``d``;
  the tensor splits along ``d`` into groups of that many contiguous elements;
* ``divisibility[d]``: the largest power of two dividing the *first* element of every such group (for a
  pointer: the address in bytes);
* ``constancy[d]``: the length of the shortest run of equal values along ``d``;
* ``constant``: the value, when every element is one known integer.

All three are powers of two (or, for contiguity / constancy, the dimension's size).  Joining two facts (a value
that may come from either) takes the gcd of each entry; a loop-carried value is the join of its initial value
and what the body yields, computed to a fixpoint.  Unknown values are *pessimistic*: ``1, 1, 1``.

How each op transfers the facts follows Triton 3.x (``lib/Analysis/AxisInfo.cpp``), written down here:

==================  =========================================================================================
op                  rule
==================  =========================================================================================
constant            splat integer ``v``: contiguity 1, divisibility = largest power of 2 dividing ``v``
                    (``2**62`` for 0), constancy = shape, constant = v.  Non-splat integer constants: computed
                    exactly from the values.  Floats: pessimistic.
make_range          contiguity = n, divisibility = pow2 dividing start (``2**30`` for 0), constancy 1
splat               contiguity 1, divisibility of the scalar, constancy = shape, constant of the scalar
func argument       ``tt.divisibility`` / ``tt.contiguity`` / ``tt.constancy`` argument attributes, else 1
addi / addptr       contiguity = max(gcd(cont_l, const_r), gcd(const_l, cont_r)); divisibility = gcd(div_l,
                    div_r) (addptr: ``div_r`` times the pointee size in bytes); constancy = gcd
subi                as addi, but only ``gcd(cont_l, const_r)`` (a contiguous rhs makes a decreasing result)
muli                contiguity: the other operand's if one is the constant 1, else 1; divisibility = div_l * div_r
                    where an operand with contiguity > 1 counts as divisibility 1; constancy = gcd
divsi / divui       contiguity of lhs if rhs is 1; constancy = gcd, or for a fully contiguous lhs over a constant
                    rhs max(that, gcd(cont_l, div_l, div_r)); divisibility = div_l if lhs is 0 or rhs is 1, else 1
remsi / remui       contiguity = gcd(cont_l, div_l, div_r) for a fully contiguous lhs over a constant rhs;
                    divisibility = gcd(div_l, div_r); constancy = shape if rhs is 1, else gcd
andi / ori / xori   contiguity 1, divisibility 1, constancy = gcd (constants fold)
shli                contiguity of lhs if the shift is 0; divisibility = div_l * 2**shift (lhs counts as 1 when
                    contiguous and shifted); constancy = gcd
shrsi / shrui       contiguity of lhs if the shift is 0; divisibility = max(div_l / 2**shift, 1), 1 if the
                    shift is unknown; constancy = gcd
max / min           contiguity = gcd, divisibility = gcd, constancy = gcd (constants fold)
cmpi                contiguity 1, divisibility 1; constancy = gcd, or for ``lt``/``ge`` with a fully contiguous
                    lhs and constant rhs (``gt``/``le`` with the operands swapped) max(that,
                    gcd(cont_c, div_c, div_k)): a mask ``offsets < n`` is constant over runs of
                    ``gcd(contiguity, divisibility(offsets), divisibility(n))``
select              a known condition picks its operand; else contiguity = min over operands of gcd(cont_x,
                    const_cond), divisibility = gcd (an operand whose groups do not align counts as 1),
                    constancy = gcd of all three
ext / trunc / casts the operand's facts (``extsi``, ``extui``, ``trunci``, ``index_cast``, ``tt.bitcast``,
                    ``tt.int_to_ptr``, ``tt.ptr_to_int``, ``ttg.convert_layout``)
expand_dims         inserts contiguity 1, constancy 1 and divisibility = gcd over dims of (div if cont == 1 else 1)
broadcast           a broadcast dimension (size 1 -> n) gets contiguity 1 and constancy n
trans               permutes the dimensions
reshape             only dims of size 1 added / removed are understood; otherwise pessimistic (constants kept)
load                contiguity 1, divisibility 1, constancy = gcd(const_ptr, const_mask)
scf.for             induction variable: contiguity 1, divisibility gcd(div_lb, div_step), constancy 1;
                    iter args / results: fixpoint of join(init, yielded)
scf.if / scf.while  results join what the branches (the condition) yield; while loops to a fixpoint
anything else       pessimistic (with debugging on, a line naming the op); the op's own ``tt.divisibility`` / ``tt.contiguity`` / ``tt.constancy``
                    attributes (Triton's ``multiple_of`` / ``max_contiguous`` / ``max_constancy`` hints)
                    override the result
==================  =========================================================================================

Query API (what the lowering uses to vectorise memory accesses)::

    info = AxisInfoAnalysis(module)          # once per module, after the TTGIR passes
    info.get(value)                          # -> AxisInfo (also info[value]); AxisInfo.of(value) analyses
                                             #    the enclosing module on the fly
    info.ptr_alignment(ptr, order)           # elements: min(divisibility_bytes / elem_bytes, contiguity)
    info.ptr_contiguity(ptr, order, per_thread)   # min(alignment, unique contiguous elements per thread)
    info.mask_alignment(mask, order)         # constancy of the mask along order[0]
    info.vector_width(ptr, mask, per_thread, elem_bits, order)  # elements per vector access, <= 128 bits

``order`` is a layout order (fastest dimension first); when omitted it is taken from the value's layout
encoding if one is attached and understood, else the last dimension is the fastest.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from mlir import ir

from tritium.dialects import layouts, tt
from tritium.passes.ir_helpers import as_op as _as_op, walk as _walk

MAX_DIVISOR = 1 << 62          # divisibility of 0 (Triton's highestPowOf2Divisor<int64_t>(0))
MAKE_RANGE_ZERO_DIVISOR = 1 << 30   # make_range's start is an i32: highestPowOf2Divisor<int32_t>(0)
MAX_VECTOR_BITS = 128

log = logging.getLogger(__name__)


def highest_pow2_divisor(n: int, zero: int = MAX_DIVISOR) -> int:
    """The largest power of two dividing ``n`` (``zero`` for 0)."""
    n = int(n)
    if n == 0:
        return zero
    return min(n & -n, MAX_DIVISOR)


def _gcd(*xs: int) -> int:
    out = 0
    for x in xs:
        out = math.gcd(out, int(x))
    return out


def _mul_div(a: int, b: int) -> int:
    """Product of two divisors, saturating at MAX_DIVISOR (Triton's multiplyDivisor)."""
    if a > MAX_DIVISOR // max(b, 1):
        return MAX_DIVISOR
    return a * b


@dataclass(frozen=True)
class AxisInfo:
    """Contiguity, divisibility and constancy per dimension, plus the constant value when known."""

    contiguity: tuple
    divisibility: tuple
    constancy: tuple
    constant: Optional[int] = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @staticmethod
    def pessimistic(rank: int) -> "AxisInfo":
        one = (1,) * max(rank, 1)
        return AxisInfo(one, one, one, None)

    @staticmethod
    def of(value, analysis: Optional["AxisInfoAnalysis"] = None) -> "AxisInfo":
        """The facts of ``value``; analyses the enclosing module unless ``analysis`` is given."""
        if analysis is None:
            analysis = AxisInfoAnalysis(_enclosing_module(value))
        return analysis.get(value)

    def join(self, other: "AxisInfo") -> "AxisInfo":
        """What is known of a value that is either ``self`` or ``other`` (gcd of every entry)."""
        if self.rank != other.rank:
            return AxisInfo.pessimistic(max(self.rank, other.rank))
        return AxisInfo(
            tuple(math.gcd(a, b) for a, b in zip(self.contiguity, other.contiguity)),
            tuple(math.gcd(a, b) for a, b in zip(self.divisibility, other.divisibility)),
            tuple(math.gcd(a, b) for a, b in zip(self.constancy, other.constancy)),
            self.constant if self.constant == other.constant else None,
        )

    def __str__(self) -> str:
        c = "<none>" if self.constant is None else str(self.constant)
        return (f"contiguity = {list(self.contiguity)}, divisibility = {list(self.divisibility)}, "
                f"constancy = {list(self.constancy)}, constant_value = {c}")


def _join_yielded(state: list, ys: list) -> list:
    """A loop's carried infos after one more trip: each joined with what the body yields (pessimistic when the
    counts differ)."""
    if len(ys) != len(state):
        return [AxisInfo.pessimistic(s.rank) for s in state]
    return [s.join(y) for s, y in zip(state, ys)]


def _enclosing_module(value):
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    op = op.operation if hasattr(op, "operation") else op
    while op.parent is not None:
        op = op.parent
        op = op.operation if hasattr(op, "operation") else op
    return op


# ----------------------------------------------------------------------------------------------
# type helpers
# ----------------------------------------------------------------------------------------------


def _shape(ty) -> Optional[tuple]:
    """Shape of a ranked tensor type; None for scalars."""
    return tuple(ir.RankedTensorType(ty).shape) if isinstance(ty, ir.RankedTensorType) else None


def _rank(ty) -> int:
    s = _shape(ty)
    return len(s) if s else 1


def bit_width(ty) -> int:
    """Bits of a scalar type (pointers: 64)."""
    if isinstance(ty, ir.IntegerType):
        return ir.IntegerType(ty).width
    if isinstance(ty, ir.IndexType):
        return 64
    if isinstance(ty, ir.FloatType):
        return ir.FloatType(ty).width
    if tt.is_ptr(ty):
        return 64
    s = str(ty)
    for prefix, bits in (("f8", 8), ("bf16", 16), ("f16", 16), ("f32", 32), ("f64", 64)):
        if s.startswith(prefix):
            return bits
    return 32


def pointee_bits(ptr_ty) -> int:
    """Bits of the element a pointer (or a tensor of pointers) points to."""
    elem = tt.elem_of(ptr_ty)
    if not tt.is_ptr(elem):
        return 8
    p = tt.pointee(elem)
    if tt.is_tensor(p):
        p = tt.elem_of(p)
    return bit_width(p)


def _pointee_bytes(ptr_ty) -> int:
    return max(1, pointee_bits(ptr_ty) // 8)


def _is_intlike(ty) -> bool:
    e = tt.elem_of(ty)
    return isinstance(e, (ir.IntegerType, ir.IndexType)) or tt.is_ptr(e) and not tt.is_tensor(tt.pointee(e))


def _int_attr_value(attr, width: Optional[int] = None) -> Optional[int]:
    """An integer or boolean attribute's value (None for attributes of other kinds); ``width == 1`` keeps the low
    bit (an ``i1`` constant)."""
    if isinstance(attr, ir.BoolAttr):
        return int(bool(attr.value))
    if not isinstance(attr, ir.IntegerAttr):
        return None
    v = int(attr.value)
    return v & 1 if width == 1 else v


def _dim_list(attr, rank: int) -> Optional[tuple]:
    """A hint attribute (an integer, dense integer elements, an integer array) as one entry per dimension; None
    when it is none of those or has neither one nor ``rank`` entries."""
    v = _int_attr_value(attr)
    if v is not None:
        return (v,) * rank
    if isinstance(attr, (ir.DenseIntElementsAttr, ir.DenseI32ArrayAttr, ir.DenseI64ArrayAttr)):
        vals = [int(x) for x in attr]
    elif isinstance(attr, ir.ArrayAttr) and all(isinstance(x, ir.IntegerAttr) for x in attr):
        vals = [int(x.value) for x in attr]
    else:
        return None
    if len(vals) == 1:
        return tuple(vals) * rank
    return tuple(vals) if len(vals) == rank else None


def _from_values(values, shape: tuple) -> AxisInfo:
    """Exact facts of a (small) integer tensor given all its values (numpy)."""
    import numpy as np

    a = np.asarray(values, dtype=np.int64).reshape(shape)
    cont, div, const = [], [], []
    for d, n in enumerate(shape):
        moved = np.moveaxis(a, d, -1)
        best_c, best_k = 1, 1
        size = 1
        while size <= n:
            if n % size == 0:
                groups = moved.reshape(moved.shape[:-1] + (n // size, size))
                diffs = np.diff(groups, axis=-1)
                if size == 1 or np.all(diffs == 1):
                    best_c = size
                if size == 1 or np.all(diffs == 0):
                    best_k = size
            size *= 2
        if n and np.all(np.diff(moved, axis=-1) == 1):
            best_c = n
        if n and np.all(np.diff(moved, axis=-1) == 0):
            best_k = n
        starts = moved.reshape(moved.shape[:-1] + (n // best_c, best_c))[..., 0].ravel()
        dv = MAX_DIVISOR
        for s in starts.tolist():
            dv = min(dv, highest_pow2_divisor(s))
        cont.append(best_c)
        div.append(dv)
        const.append(best_k)
    flat = a.ravel()
    cval = int(flat[0]) if flat.size and np.all(flat == flat[0]) else None
    return AxisInfo(tuple(cont), tuple(div), tuple(const), cval)


# ----------------------------------------------------------------------------------------------
# The analysis
# ----------------------------------------------------------------------------------------------

_CAST_OPS = frozenset({
    "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
    "tt.bitcast", "tt.int_to_ptr", "tt.ptr_to_int", "ttg.convert_layout", "builtin.unrealized_conversion_cast",
})
_HINTS = (("tt.contiguity", 0), ("tt.divisibility", 1), ("tt.constancy", 2))


def _cmp_predicate(op) -> Optional[str]:
    names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
    v = _int_attr_value(op.attributes["predicate"]) if "predicate" in op.attributes else None
    return names[v] if v is not None and 0 <= v < len(names) else None


class AxisInfoAnalysis:
    """Axis info of every SSA value under ``root`` (a module or a function), computed on construction."""

    def __init__(self, root, *, max_iterations: int = 64):
        self._info: dict = {}
        self._max_iterations = max_iterations
        root = _as_op(root)
        self.root = root
        with root.context:
            self._run(root)

    # ---- queries -------------------------------------------------------------------------------

    def get(self, value) -> AxisInfo:
        """The facts of ``value`` (pessimistic for values the analysis did not reach)."""
        info = self._info.get(value)
        if info is None:
            return AxisInfo.pessimistic(_rank(value.type))
        return info

    __getitem__ = get

    def __contains__(self, value) -> bool:
        return value in self._info

    def contiguity(self, value, dim: int) -> int:
        return self.get(value).contiguity[dim]

    def divisibility(self, value, dim: int) -> int:
        return self.get(value).divisibility[dim]

    def constancy(self, value, dim: int) -> int:
        return self.get(value).constancy[dim]

    def ptr_alignment(self, ptr, order: Optional[Sequence[int]] = None) -> int:
        """Elements along the fastest dimension that one aligned vector access may cover:
        ``min(divisibility_bytes / elem_bytes, contiguity)`` along ``order[0]`` (Triton's getPtrAlignment)."""
        if not tt.is_tensor(ptr.type):
            return 1
        d = _fastest(ptr, order)
        info = self.get(ptr)
        elem_bytes = _pointee_bytes(ptr.type)
        max_multiple = max(info.divisibility[d] // elem_bytes, 1)
        return max(1, min(max_multiple, info.contiguity[d]))

    def ptr_contiguity(self, ptr, order: Optional[Sequence[int]] = None,
                       per_thread: Optional[int] = None) -> int:
        """Contiguous, aligned elements a thread can access at once: the alignment, capped by ``per_thread``
        (the layout's unique contiguous elements per thread along ``order[0]``; Triton's getPtrContiguity)."""
        a = self.ptr_alignment(ptr, order)
        return a if per_thread is None else max(1, min(a, int(per_thread)))

    def mask_alignment(self, mask, order: Optional[Sequence[int]] = None) -> int:
        """How many consecutive elements along ``order[0]`` share one mask value (Triton's getMaskAlignment)."""
        if mask is None:
            return 1 << 30
        if not tt.is_tensor(mask.type):
            return 1 << 30  # a scalar mask is uniform
        return max(1, self.get(mask).constancy[_fastest(mask, order)])

    def vector_width(self, ptr, mask=None, per_thread: Optional[int] = None, elem_bits: Optional[int] = None,
                     order: Optional[Sequence[int]] = None) -> int:
        """Elements per vectorised load/store of ``ptr`` (a tensor of pointers): a power of two, at most
        ``128 / elem_bits``, the pointer contiguity/alignment (capped by ``per_thread``) and the mask's
        constancy."""
        if not tt.is_tensor(ptr.type):
            return 1
        bits = elem_bits or pointee_bits(ptr.type)
        by_bits = max(MAX_VECTOR_BITS // max(bits, 1), 1)
        contiguity = self.ptr_contiguity(ptr, order, per_thread)
        by_mask = self.mask_alignment(mask, order) if mask is not None else by_bits
        vec = min(by_bits, contiguity, by_mask)
        vec = 1 << (max(vec, 1).bit_length() - 1)  # round down to a power of two
        if vec == 1 and by_bits > 1 and log.isEnabledFor(logging.DEBUG):
            d = _fastest(ptr, order)
            info = self.get(ptr)
            why = [f"the pointer's contiguity is {info.contiguity[d]} and divisibility {info.divisibility[d]} bytes "
                   f"along dim {d}"] if self.ptr_alignment(ptr, order) == 1 else []
            if per_thread is not None and int(per_thread) <= 1:
                why.append(f"the layout gives a thread {per_thread} contiguous element(s)")
            if by_mask == 1:
                why.append(f"the mask's constancy along dim {d} is 1")
            log.debug("an access through the pointer from %s: vector width 1: %s", _where(ptr), "; ".join(why))
        return vec

    # ---- the dataflow --------------------------------------------------------------------------

    def _set(self, value, info: AxisInfo) -> None:
        self._info[value] = info

    def _run(self, root) -> None:
        funcs = [o for o in _walk_funcs(root)]
        if root.name == "func.func":
            funcs = [root]
        callers: dict = {}
        for f in funcs:
            for op in _walk(f):
                if op.name == "func.call":
                    callee = str(op.attributes["callee"]).lstrip("@")
                    callers.setdefault(callee, []).append(op)
        by_name = {_sym_name(f): f for f in funcs}
        done: set = set()
        pending = list(funcs)
        # callers before callees: a private function called from analysed functions joins its call sites
        progress = True
        while pending and progress:
            progress = False
            for f in list(pending):
                name = _sym_name(f)
                sites = callers.get(name, [])
                if sites and not all(_sym_name(_parent_func(s)) in done for s in sites if _parent_func(s)):
                    continue
                self._run_func(f, sites)
                done.add(name)
                pending.remove(f)
                progress = True
        for f in pending:  # recursion: pessimistic arguments
            self._run_func(f, [])
        del by_name

    def _run_func(self, f, sites) -> None:
        if not len(f.regions) or not len(f.regions[0].blocks):
            return
        block = f.regions[0].blocks[0]
        arg_attrs = f.attributes["arg_attrs"] if "arg_attrs" in f.attributes else None
        for i, arg in enumerate(block.arguments):
            rank = _rank(arg.type)
            info = AxisInfo.pessimistic(rank)
            if sites and not _is_public(f):
                joined = None
                for s in sites:
                    a = self.get(s.operands[i])
                    joined = a if joined is None else joined.join(a)
                info = joined
            if arg_attrs is not None and i < len(arg_attrs):
                info = _apply_hints(info, arg_attrs[i], rank, lambda: f"argument {i} of @{_sym_name(f)}")
            self._set(arg, info)
        self._visit_region(f.regions[0])

    def _visit_region(self, region) -> None:
        for block in region.blocks:
            for op in block.operations:
                self._visit(_as_op(op))

    def _visit(self, op) -> None:
        name = op.name
        if name == "scf.for":
            return self._visit_for(op)
        if name == "scf.if":
            return self._visit_if(op)
        if name == "scf.while":
            return self._visit_while(op)
        if len(op.regions):
            for r in op.regions:
                self._visit_region(r)
            for res in op.results:
                self._set(res, AxisInfo.pessimistic(_rank(res.type)))
            return
        if not len(op.results):
            return
        infos = self._transfer(op)
        for res, info in zip(op.results, infos):
            rank = _rank(res.type)
            if info is None or info.rank != rank:
                if _is_intlike(res.type) and log.isEnabledFor(logging.DEBUG):
                    log.debug("'%s' at %s: no rule for this op here, its result is pessimistic (contiguity, "
                              "divisibility, constancy 1)", name, tt.loc_str(op))
                info = AxisInfo.pessimistic(rank)
            info = _apply_op_hints(info, op, rank)
            self._set(res, info)

    def _yielded(self, region) -> list:
        block = region.blocks[0]
        ops = list(block.operations)
        term = _as_op(ops[-1]) if ops else None
        if term is None or term.name not in ("scf.yield", "scf.condition"):
            return []
        operands = list(term.operands)
        if term.name == "scf.condition":
            operands = operands[1:]
        return [self.get(v) for v in operands]

    def _visit_for(self, op) -> None:
        lb, ub, step = op.operands[0], op.operands[1], op.operands[2]
        inits = list(op.operands)[3:]
        body = op.regions[0].blocks[0]
        iv = body.arguments[0]
        lbi, sti = self.get(lb), self.get(step)
        self._set(iv, AxisInfo((1,), (math.gcd(lbi.divisibility[0], sti.divisibility[0]),), (1,)))
        state = [self.get(v) for v in inits]
        for _ in range(self._max_iterations):
            for arg, info in zip(list(body.arguments)[1:], state):
                self._set(arg, info)
            self._visit_region(op.regions[0])
            ys = self._yielded(op.regions[0])
            new = _join_yielded(state, ys)
            if new == state:
                break
            state = new
        else:  # pragma: no cover - gcd lattices converge long before
            state = [AxisInfo.pessimistic(s.rank) for s in state]
            for arg, info in zip(list(body.arguments)[1:], state):
                self._set(arg, info)
            self._visit_region(op.regions[0])
        for res, info in zip(op.results, state):
            self._set(res, info)

    def _visit_if(self, op) -> None:
        outs = []
        for r in op.regions:
            if len(r.blocks):
                self._visit_region(r)
                outs.append(self._yielded(r))
        for i, res in enumerate(op.results):
            info = None
            for ys in outs:
                if i < len(ys):
                    info = ys[i] if info is None else info.join(ys[i])
            self._set(res, info or AxisInfo.pessimistic(_rank(res.type)))

    def _visit_while(self, op) -> None:
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        state = [self.get(v) for v in op.operands]
        cond: list = []
        for _ in range(self._max_iterations):
            for arg, info in zip(before.arguments, state):
                self._set(arg, info)
            self._visit_region(op.regions[0])
            cond = self._yielded(op.regions[0])
            for arg, info in zip(after.arguments, cond):
                self._set(arg, info)
            self._visit_region(op.regions[1])
            ys = self._yielded(op.regions[1])
            new = _join_yielded(state, ys)
            if new == state:
                break
            state = new
        for i, res in enumerate(op.results):
            self._set(res, cond[i] if i < len(cond) else AxisInfo.pessimistic(_rank(res.type)))

    # ---- transfer functions for ops without regions -----------------------------------------------

    def _transfer(self, op) -> list:
        name = op.name
        res = op.results[0]
        rty = res.type
        shape = _shape(rty)
        rank = len(shape) if shape else 1
        ops = [self.get(v) for v in op.operands]

        if name == "arith.constant":
            return [_constant_info(op.attributes["value"], rty)]
        if name in (tt.GET_PROGRAM_ID, tt.GET_NUM_PROGRAMS):  # run-time values: nothing known
            return [AxisInfo.pessimistic(rank)]
        if name == "tt.make_range":
            start = _int_attr_value(op.attributes["start"])
            end = _int_attr_value(op.attributes["end"])
            return [AxisInfo((end - start,), (highest_pow2_divisor(start, MAKE_RANGE_ZERO_DIVISOR),), (1,))]
        if name == "tt.splat":
            s = ops[0]
            return [AxisInfo((1,) * rank, (s.divisibility[0],) * rank, tuple(shape or (1,)), s.constant)]
        if name in _CAST_OPS:
            return [ops[0]] if ops and ops[0].rank == rank else [None]
        if name == "tt.expand_dims":
            return [_expand_dims(ops[0], _int_attr_value(op.attributes["axis"]))]
        if name == "tt.broadcast":
            return [_broadcast(ops[0], _shape(op.operands[0].type) or (1,) * rank, shape or (1,))]
        if name == "tt.trans":
            order = [int(x) for x in op.attributes["order"]] if "order" in op.attributes else None
            s = ops[0]
            if order is None or len(order) != s.rank:
                return [None]
            return [AxisInfo(tuple(s.contiguity[i] for i in order), tuple(s.divisibility[i] for i in order),
                             tuple(s.constancy[i] for i in order), s.constant)]
        if name == "tt.reshape":
            return [_reshape(ops[0], _shape(op.operands[0].type) or (1,), shape or (1,))]
        if name == "tt.load":
            groups = tt.operand_groups(op)
            ptr_i = self.get(groups["ptr"][0])
            k = list(ptr_i.constancy)
            for m in groups.get("mask", []):
                mi = self.get(m)
                if mi.rank == len(k):
                    k = [math.gcd(a, b) for a, b in zip(k, mi.constancy)]
            if ptr_i.rank != rank or not tt.is_tensor(groups["ptr"][0].type):
                return [None]
            return [AxisInfo((1,) * rank, (1,) * rank, tuple(k))]
        if not _is_intlike(rty):
            if name == "arith.select" and ops and ops[0].constant is not None:
                return [ops[1] if ops[0].constant else ops[2]]  # a known condition forwards its operand
            return [None]
        rule = _BINARY.get(name)
        if rule is not None and len(ops) == 2:
            l, r = ops
            if l.rank != rank or r.rank != rank:
                return [None]
            return [rule(op, l, r, shape)]
        if name == "arith.select":
            return [_select(ops, shape, rank)]
        return [None]


def _where(value) -> str:
    """The op defining ``value`` and its location (or the block argument), for debug output."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return f"block argument {value.arg_number}"
    op = _as_op(owner)
    return f"'{op.name}' at {tt.loc_str(op)}"


def _walk_funcs(root) -> list:
    return [o for o in _walk(root) if o.name == "func.func"]


def _sym_name(f) -> str:
    return str(f.attributes["sym_name"]).strip('"') if "sym_name" in f.attributes else ""


def _is_public(f) -> bool:
    if "sym_visibility" not in f.attributes:
        return True
    return str(f.attributes["sym_visibility"]).strip('"') == "public"


def _parent_func(op):
    p = op.parent
    while p is not None:
        p = _as_op(p)
        if p.name == "func.func":
            return p
        p = p.parent
    return None


def _fastest(value, order) -> int:
    if order is not None:
        return int(order[0])
    enc_order = _layout_order(value.type)
    if enc_order is not None:
        return enc_order[0]
    return len(tt.shape_of(value.type)) - 1 if tt.is_tensor(value.type) else 0


def _layout_order(ty) -> Optional[list]:
    """The order of the layout encoding of ``ty``, when a ttg layout is attached and understood."""
    if not isinstance(ty, ir.RankedTensorType) or ty.encoding is None:
        return None
    try:
        return list(layouts.from_attr(ty.encoding).order)
    except ValueError as e:
        log.debug("layout %s not understood (%s): its last dimension counts as the fastest", ty.encoding, e)
        return None


def _apply_hints(info: AxisInfo, attrs, rank: int, where) -> AxisInfo:
    """``info`` with the ``tt.contiguity`` / ``tt.divisibility`` / ``tt.constancy`` hints of ``attrs`` (an op's
    attributes or a function argument's DictAttr) applied; ``where()`` names the value for debug output."""
    parts = [list(info.contiguity), list(info.divisibility), list(info.constancy)]
    changed = False
    for key, idx in _HINTS:
        if key not in attrs:
            continue
        vals = _dim_list(attrs[key], rank)
        if vals is None:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s: hint %s = %s ignored: not an integer or one integer per dimension (%d)", where(),
                          key, attrs[key], rank)
            continue
        parts[idx] = list(vals)
        changed = True
    if not changed:
        return info
    return AxisInfo(tuple(parts[0]), tuple(parts[1]), tuple(parts[2]), info.constant)


def _apply_op_hints(info: AxisInfo, op, rank: int) -> AxisInfo:
    attrs = op.attributes
    if not any(k in attrs for k, _ in _HINTS):
        return info
    return _apply_hints(info, attrs, rank, lambda: f"'{op.name}' at {tt.loc_str(op)}")


def _constant_info(attr, ty) -> Optional[AxisInfo]:
    shape = _shape(ty)
    elem = tt.elem_of(ty)
    if not isinstance(elem, (ir.IntegerType, ir.IndexType)):
        return None
    width = ir.IntegerType(elem).width if isinstance(elem, ir.IntegerType) else 64
    if shape is None:
        v = _int_attr_value(attr, width)
        if v is None:
            return None
        return AxisInfo((1,), (highest_pow2_divisor(v),), (1,), v)
    dense = ir.DenseElementsAttr(attr) if isinstance(attr, ir.DenseElementsAttr) else None
    if dense is None:
        return None
    if dense.is_splat:
        v = _int_attr_value(dense.get_splat_value(), width)
        if v is None:
            return None
        return AxisInfo((1,) * len(shape), (highest_pow2_divisor(v),) * len(shape), tuple(shape), v)
    if tt.numel(shape) > (1 << 16):
        return None
    vals = [int(x) for x in attr]
    if width == 1:
        vals = [v & 1 for v in vals]
    return _from_values(vals, tuple(shape))


def _expand_dims(s: AxisInfo, axis: int) -> AxisInfo:
    if s.constant is not None:
        d = highest_pow2_divisor(s.constant)
    else:
        d = 0
        for c, v in zip(s.contiguity, s.divisibility):
            d = math.gcd(d, 1 if c > 1 else v)
        d = d or 1
    cont, div, const = list(s.contiguity), list(s.divisibility), list(s.constancy)
    cont.insert(axis, 1)
    div.insert(axis, d)
    const.insert(axis, 1)
    return AxisInfo(tuple(cont), tuple(div), tuple(const), s.constant)


def _broadcast(s: AxisInfo, src_shape, dst_shape) -> Optional[AxisInfo]:
    if s.rank != len(dst_shape):
        return None
    cont, div, const = [], [], []
    for d, (a, b) in enumerate(zip(src_shape, dst_shape)):
        cont.append(1 if a == 1 else s.contiguity[d])
        div.append(s.divisibility[d])
        const.append(b if a == 1 else s.constancy[d])
    return AxisInfo(tuple(cont), tuple(div), tuple(const), s.constant)


def _reshape(s: AxisInfo, src_shape, dst_shape) -> Optional[AxisInfo]:
    if all(k == n for k, n in zip(s.constancy, src_shape)):  # all equal: stays all equal
        d = min(s.divisibility) if s.constant is None else highest_pow2_divisor(s.constant)
        return AxisInfo((1,) * len(dst_shape), (d,) * len(dst_shape), tuple(dst_shape), s.constant)
    src_nz = [i for i, n in enumerate(src_shape) if n != 1]
    dst_nz = [i for i, n in enumerate(dst_shape) if n != 1]
    if [src_shape[i] for i in src_nz] != [dst_shape[i] for i in dst_nz]:
        return None  # a real reshape: unknown
    cont, div, const = [1] * len(dst_shape), [1] * len(dst_shape), [1] * len(dst_shape)
    for i, j in zip(src_nz, dst_nz):
        cont[j], div[j], const[j] = s.contiguity[i], s.divisibility[i], s.constancy[i]
    for j, n in enumerate(dst_shape):
        if n == 1:
            d = 0
            for c, v in zip(s.contiguity, s.divisibility):
                d = math.gcd(d, 1 if c > 1 else v)
            div[j] = d or 1
    return AxisInfo(tuple(cont), tuple(div), tuple(const), s.constant)


# ---- binary rules ----------------------------------------------------------------------------------

def _full(x: AxisInfo, shape, d, what: str) -> bool:
    if shape is None:
        return False
    return getattr(x, what)[d] == shape[d]


def _binary(op, l: AxisInfo, r: AxisInfo, shape, cont, div, const, value) -> AxisInfo:
    rank = l.rank
    c = tuple(max(1, cont(d)) for d in range(rank))
    v = value()
    if v is not None:
        # a known result: every element equal
        k = tuple(shape) if shape else (1,)
        return AxisInfo((1,) * rank, (highest_pow2_divisor(v),) * rank, k, v)
    return AxisInfo(c, tuple(max(1, div(d)) for d in range(rank)), tuple(max(1, const(d)) for d in range(rank)),
                    None)


def _both(l, r, f):
    if l.constant is None or r.constant is None:
        return lambda: None

    def g():
        try:
            return f(l.constant, r.constant)
        except (ZeroDivisionError, ValueError):
            return None

    return g


def _add_sub(op, l, r, shape):
    name = op.name
    is_ptr = name == "tt.addptr"
    scale = _pointee_bytes(op.operands[0].type) if is_ptr else 1

    def cont(d):
        a = math.gcd(l.contiguity[d], r.constancy[d])
        if name == "arith.subi":
            return a
        return max(a, math.gcd(l.constancy[d], r.contiguity[d]))

    def div(d):
        return math.gcd(l.divisibility[d], _mul_div(r.divisibility[d], scale))

    def const(d):
        return math.gcd(l.constancy[d], r.constancy[d])

    if is_ptr:
        value = lambda: None  # noqa: E731  (pointer values are never folded)
    elif name == "arith.subi":
        value = _both(l, r, lambda a, b: a - b)
    else:
        value = _both(l, r, lambda a, b: a + b)
    info = _binary(op, l, r, shape, cont, div, const, value)
    return info


def _mul(op, l, r, shape):
    def cont(d):
        a = l.contiguity[d] if r.constant == 1 else 1
        b = r.contiguity[d] if l.constant == 1 else 1
        return max(a, b)

    def div(d):
        ld = 1 if l.contiguity[d] > 1 and r.constant != 1 else l.divisibility[d]
        rd = 1 if r.contiguity[d] > 1 and l.constant != 1 else r.divisibility[d]
        return _mul_div(ld, rd)

    return _binary(op, l, r, shape, cont, div, lambda d: math.gcd(l.constancy[d], r.constancy[d]),
                   _both(l, r, lambda a, b: a * b))


def _div(op, l, r, shape):
    def cont(d):
        return l.contiguity[d] if r.constant == 1 else 1

    def const(d):
        k = math.gcd(l.constancy[d], r.constancy[d])
        if _full(l, shape, d, "contiguity") and _full(r, shape, d, "constancy"):
            k = max(k, _gcd(l.contiguity[d], l.divisibility[d], r.divisibility[d]))
        return k

    def div(d):
        if l.constant == 0 or r.constant == 1:
            return l.divisibility[d]
        return 1

    def fold(a, b):
        if b == 0:
            raise ZeroDivisionError
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    return _binary(op, l, r, shape, cont, div, const, _both(l, r, fold))


def _rem(op, l, r, shape):
    def cont(d):
        if _full(l, shape, d, "contiguity") and _full(r, shape, d, "constancy"):
            return _gcd(l.contiguity[d], l.divisibility[d], r.divisibility[d])
        return 1

    def div(d):
        return math.gcd(l.divisibility[d], r.divisibility[d])

    def const(d):
        if r.constant == 1:
            return shape[d] if shape else 1
        return math.gcd(l.constancy[d], r.constancy[d])

    def fold(a, b):
        if b == 0:
            raise ZeroDivisionError
        m = abs(a) % abs(b)
        return m if a >= 0 else -m

    value = _both(l, r, fold)
    if r.constant == 1:
        value = lambda: 0  # noqa: E731
    return _binary(op, l, r, shape, cont, div, const, value)


def _logic(op, l, r, shape):
    f = {"arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b,
         "arith.xori": lambda a, b: a ^ b}[op.name]
    return _binary(op, l, r, shape, lambda d: 1, lambda d: 1, lambda d: math.gcd(l.constancy[d], r.constancy[d]),
                   _both(l, r, f))


def _shl(op, l, r, shape):
    shift = r.constant

    def cont(d):
        return l.contiguity[d] if shift == 0 else 1

    def div(d):
        ld = l.divisibility[d]
        if l.contiguity[d] > 1 and shift != 0:
            ld = 1
        if shift is None or shift < 0 or shift > 62:
            return ld if shift is None and l.contiguity[d] == 1 else 1
        return _mul_div(ld, 1 << shift)

    return _binary(op, l, r, shape, cont, div, lambda d: math.gcd(l.constancy[d], r.constancy[d]),
                   _both(l, r, lambda a, b: a << b if 0 <= b < 64 else None))


def _shr(op, l, r, shape):
    shift = r.constant

    def cont(d):
        return l.contiguity[d] if shift == 0 else 1

    def div(d):
        if shift is None or shift < 0 or shift > 62:
            return 1
        ld = l.divisibility[d]
        if l.contiguity[d] > 1 and shift:
            ld = 1
        return max(1, ld >> shift)

    return _binary(op, l, r, shape, cont, div, lambda d: math.gcd(l.constancy[d], r.constancy[d]),
                   _both(l, r, lambda a, b: a >> b if 0 <= b < 64 else None))


def _max_min(op, l, r, shape):
    f = max if "max" in op.name else min
    return _binary(op, l, r, shape, lambda d: math.gcd(l.contiguity[d], r.contiguity[d]),
                   lambda d: math.gcd(l.divisibility[d], r.divisibility[d]),
                   lambda d: math.gcd(l.constancy[d], r.constancy[d]), _both(l, r, f))


_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def _cmp(op, l, r, shape):
    pred = _cmp_predicate(op)

    def const(d):
        k = math.gcd(l.constancy[d], r.constancy[d])
        if shape is None or pred is None:
            return k
        # x < c and x >= c flip at most once per run of gcd(contiguity, divisibility(x), divisibility(c))
        # elements of a contiguous x when c is a multiple of that run; with the operands swapped, > and <=.
        if pred[-2:] in ("lt", "ge") and _full(l, shape, d, "contiguity") and _full(r, shape, d, "constancy"):
            k = max(k, _gcd(l.contiguity[d], l.divisibility[d], r.divisibility[d]))
        elif pred[-2:] in ("gt", "le") and _full(r, shape, d, "contiguity") and _full(l, shape, d, "constancy"):
            k = max(k, _gcd(r.contiguity[d], r.divisibility[d], l.divisibility[d]))
        return k

    f = _CMP.get(pred)
    value = _both(l, r, lambda a, b: int(f(a, b))) if f else (lambda: None)
    rank = l.rank
    v = value()
    k = tuple(max(1, const(d)) for d in range(rank))
    if v is not None:
        k = tuple(shape) if shape else (1,)
    return AxisInfo((1,) * rank, (1,) * rank, k, v)


def _select(ops, shape, rank) -> Optional[AxisInfo]:
    if len(ops) != 3:
        return None
    c, l, r = ops
    if c.constant is not None:
        return l if c.constant else r
    if l.rank != rank or r.rank != rank:
        return None
    ck = c.constancy if c.rank == rank and shape is not None else (tuple(shape) if shape else (1,) * rank)
    if shape is not None and c.rank != rank:  # a scalar condition is uniform over the tensor
        ck = tuple(shape)
    cont, div, const = [], [], []
    for d in range(rank):
        cd = min(math.gcd(l.contiguity[d], ck[d]), math.gcd(r.contiguity[d], ck[d]))
        ld = l.divisibility[d] if cd % l.contiguity[d] == 0 else 1
        rd = r.divisibility[d] if cd % r.contiguity[d] == 0 else 1
        cont.append(max(1, cd))
        div.append(max(1, math.gcd(ld, rd)))
        const.append(max(1, _gcd(l.constancy[d], r.constancy[d], ck[d])))
    v = l.constant if l.constant is not None and l.constant == r.constant else None
    return AxisInfo(tuple(cont), tuple(div), tuple(const), v)


_BINARY = {
    "arith.addi": _add_sub, "arith.subi": _add_sub, "tt.addptr": _add_sub,
    "arith.muli": _mul,
    "arith.divsi": _div, "arith.divui": _div,
    "arith.remsi": _rem, "arith.remui": _rem,
    "arith.andi": _logic, "arith.ori": _logic, "arith.xori": _logic,
    "arith.shli": _shl, "arith.shrsi": _shr, "arith.shrui": _shr,
    "arith.maxsi": _max_min, "arith.maxui": _max_min, "arith.minsi": _max_min, "arith.minui": _max_min,
    "arith.cmpi": _cmp,
}


def vector_width(ptr, mask=None, per_thread: Optional[int] = None, elem_bits: Optional[int] = None,
                 order: Optional[Sequence[int]] = None, analysis: Optional[AxisInfoAnalysis] = None) -> int:
    """Module-level shortcut for :meth:`AxisInfoAnalysis.vector_width` (analyses the module if needed)."""
    if analysis is None:
        analysis = AxisInfoAnalysis(_enclosing_module(ptr))
    return analysis.vector_width(ptr, mask, per_thread, elem_bits, order)


def annotate(root, analysis: Optional[AxisInfoAnalysis] = None) -> list:
    """``(op name, result index, AxisInfo)`` for every op result under ``root``, in program order (debugging,
    tests)."""
    analysis = analysis or AxisInfoAnalysis(root)
    out = []
    for op in _walk(root):
        for i, r in enumerate(op.results):
            out.append((op.name, i, analysis.get(r)))
    return out
