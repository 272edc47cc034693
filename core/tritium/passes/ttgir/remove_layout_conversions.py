"""Remove layout conversions: move and fold ``ttg.convert_layout`` ops until as few as possible are left
(a simplified version of Triton's ``RemoveLayoutConversions``).

Rewrites, applied to every conversion ``%y = convert_layout %x : A -> B`` until nothing changes:

1. **identity**: ``A == B``: uses of ``%y`` become ``%x``.
2. **chains**: ``%x`` is itself ``convert_layout %w : C -> A``: ``%y = convert_layout %w : C -> B`` (gone when
   ``C == B``): ``A -> B -> A`` pairs disappear.
3. **duplicates**: two conversions of the same value to the same layout are merged.
4. **backward rematerialisation**: when ``%x`` is computed by a slice of cheap ops (``tt.splat``,
   ``tt.make_range``, ``arith.constant``, elementwise arith / math / tt ops, ``tt.addptr``, ``tt.broadcast``,
   ``tt.expand_dims``) whose leaves are scalars, constants or values already available in layout ``B``
   (directly, or as the source of a conversion from ``B``), the slice is cloned in layout ``B`` and the
   conversion disappears.  Outside loops a leaf may also be a value in another tensor-core layout of the same warp
   grid that gives every thread the same elements (a free conversion, a renaming of registers): the epilogue's
   ``acc / l_i[:, None]`` of attention, ``l_i`` in the first dot's layout, the accumulator in the second's, is
   then computed in the accumulator's layout and only the fp16 result is converted for the store, as in Triton
   (before, the fp32 accumulator crossed shared memory twice).  Ops of the slice with other users stay for them
   (DCE removes the rest).  An
   ``scf.if`` result that is only converted to ``B`` is yielded in ``B`` by both branches when their yielded
   values can be obtained in ``B`` that way.
5. **forward sinking**: when every user of ``%y`` can compute in layout ``A`` instead (elementwise ops whose
   other tensor operands are available in ``A`` as in 4, ``tt.broadcast``, ``tt.expand_dims`` of a slice of
   ``A``'s, ``tt.reduce`` (its result becomes ``slice(axis, A)``), ``tt.scan`` where its lowering takes ``A``
   (Inductor's looped cumsum then scans in the layout it loaded in, as Triton), ``ttg.convert_layout``), the users are
   retyped to ``A``'s family and the conversion moves after them, towards the memory ops.  When only some
   users can, the ``tt.reduce`` users among them are still moved (a reduction is best done in the layout its
   operand was loaded in; what it yields is smaller to convert).  Memory ops (their layouts are the coalesced
   ones), ``tt.dot``, ``scf`` ops and unknown ops are never retyped.

   A ``tt.store`` of fewer elements than the CTA has threads is no anchor (Triton's ``isExpensiveLoadOrStore``):
   it takes its value's layout (so a reduction result is stored in its slice layout, replicas written once).
   Nor is a store of an ``amd_mfma`` value (Triton's AMD ``OptimizeEpilogue``): the pointers and the mask are
   rematerialised in the MFMA layout and the result is stored from its registers, without a trip through LDS.
6. **loop-carried values** (Triton's rematerialisation of ``scf.for`` iter_args): an iter_arg in layout ``B``
   whose yielded value can be computed in another layout ``A`` from the iter_arg itself and values available in
   ``A`` (typically ``%acc + convert(%x : A -> B)``, a layer-norm or ragged-sum accumulator) is carried in ``A``:
   the init value is converted (a constant: rematerialised) once before the loop, the yielded chain is
   recomputed in ``A``, uses of the iter_arg that converted it to ``A`` use it directly, and the loop result goes
   back to ``B`` once after the loop (where rule 5 usually sinks it into its ``tt.reduce``).  It applies only when
   the old chain has no other users and at least one conversion inside the loop dies, so nothing is added in
   the loop.

7. **loop-carried webs** (Triton's layout propagation through loops): several iter_args that must change layout
   together, seeded by one carried in a tensor-core layout (an ``nvidia_mma`` accumulator or a slice of one); see
   :class:`_LoopPropagation`.  The fused-attention loop (running max, running sum, accumulator) ends with no
   conversion.  In a loop without a dot, the seed is every iter_arg that could be carried in the layout of a
   converted load at once: Inductor's looped arg-max / arg-min over a strided dimension (value and index
   accumulators, order [0, 1] loads) then ends with no conversion in the loop either, as in Triton.

8. **broadcasts that change layout**: ``convert_to_ttgir`` gives a broadcast's ``[M, 1]`` operand the default
   layout of its own shape, so a ``tt.broadcast`` may change layout too (an implicit conversion, through LDS
   when the threads disagree).  A mask's (i1) operand slice of cheap ops is rematerialised in the result's
   layout, each op next to its original: the tutorial matmul's ``offs_k[:, None] < K - k * BLOCK_K`` no longer
   crosses LDS every iteration.  Offsets are left to the exchange (see :meth:`_Rewriter.broadcast_in_place`).

9. **conversions above broadcasts** (Triton's ``hoistConvertOnTopOfExtOrBroadcast``), once rules 1-8 are done:
   ``convert(broadcast(expand_dims(%v)))`` becomes ``broadcast(expand_dims(convert(%v)))``, the smallest tensor of
   the chain converted (attention's ``acc * alpha[:, None]`` when its two dots have different layouts).

10. **tensor-core results stored to shared memory**: a conversion from an ``nvidia_mma`` layout whose every user
    is a ``ttg.local_alloc`` / ``ttg.local_store`` of it goes; they store the accumulator's registers into their
    shared layout themselves, as Triton allocates from the accumulator's layout.  A TMA store's epilogue computed
    from two accumulators (Liger-Kernel's SwiGLU ``silu(G) * U``, brought back to the accumulators' layout by rule
    4) otherwise crossed shared memory once more, a round trip through a blocked layout.

Rules 4 and 5 never add conversions on the way and stop at block arguments; rules 6 and 7 handle ``scf.for``.
Afterwards dead conversions and dead rematerialised ops are erased.  With coalesced loads and stores, vector
add, softmax (persistent too), layer norm, ragged sums and small 2-D reductions end with no conversion at all;
what remains is where Triton keeps one too: at ``noinline`` call boundaries (signatures keep the default
layout) and between a vectorised load and a store of a different alignment.
"""
from __future__ import annotations

import logging
from typing import NamedTuple, Optional

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.analysis.allocation import register_only
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import (CONVERT, MEMORY_OPS, as_op, create_convert, defining_op, erase_dead,
                                       is_elementwise, is_tensor, layout_of, module_int, retype_results, users, walk,
                                       with_layout)

log = logging.getLogger(__name__)

_LEAF_OPS = frozenset({tt.SPLAT, tt.MAKE_RANGE, "arith.constant"})
_MAX_SLICE = 64


def _operand_layout(op, operand_index: int, result_layout):
    """The layout operand ``operand_index`` of ``op`` must have for the result to be in ``result_layout``;
    None when the op cannot be recomputed that way."""
    name = op.name
    v = op.operands[operand_index]
    if not is_tensor(v.type):
        return "scalar"
    if is_elementwise(op) or name == "tt.broadcast":
        return result_layout
    if name == "tt.expand_dims":
        axis = int(op.attributes["axis"].value)
        return layouts.SliceLayout(axis, result_layout)
    if name in _VIEWS:
        return _view_layout(op, result_layout, backward=True)
    return None


_VIEWS = ("tt.trans", "tt.reshape")
#: users whose every tensor operand takes the sunk conversion's source layout (rule 5)
_SAME_LAYOUT_OPERANDS = ("tt.reduce", "tt.store", "tt.scan")


def _order(op) -> list:
    return [int(x) for x in ir.DenseI32ArrayAttr(op.attributes["order"])]


def _view_layout(op, lay, backward: bool = False):
    """The layout of a ``tt.trans`` / ``tt.reshape``'s result (``backward``: of its operand) that keeps every
    element in the register of the given layout of the other side: the view is then a register rename."""
    src_shape, dst_shape = tt.shape_of(op.operands[0].type), tt.shape_of(op.results[0].type)
    try:
        if op.name == "tt.trans":
            order = _order(op)
            if backward:  # the inverse permutation
                order = [order.index(d) for d in range(len(order))]
            return layouts.transposed_layout(lay, dst_shape if backward else src_shape, order)
        if backward:
            return layouts.reshaped_layout(lay, dst_shape, src_shape)
        return layouts.reshaped_layout(lay, src_shape, dst_shape)
    except (ValueError, AttributeError):  # a layout without linear bases at this shape
        return None


def _result_layout_from_operand(op, operand_layout, operand_value):
    """The layout ``op``'s results get when operand ``operand_value`` is in ``operand_layout``; None when ``op``
    cannot be retyped (anchors, control flow, unknown ops)."""
    name = op.name
    if is_elementwise(op) or name == "tt.broadcast":
        return operand_layout
    if name == "tt.expand_dims":
        axis = int(op.attributes["axis"].value)
        if isinstance(operand_layout, layouts.SliceLayout) and operand_layout.dim == axis:
            return operand_layout.parent
        return None
    if name == "tt.reduce":
        axis = int(op.attributes["axis"].value)
        return layouts.SliceLayout(axis, operand_layout)
    if name == "tt.scan":  # in the layout of its operands, where the scan's lowering can take it
        try:
            operand_layout.linear(tuple(tt.shape_of(operand_value.type))).scan_split(int(op.attributes["axis"].value))
        except (ValueError, AttributeError):
            return None
        return operand_layout
    if name in _VIEWS:
        return _view_layout(op, operand_layout)
    return None


class _Free(NamedTuple):
    """A plan entry: the value is ``src`` converted without moving data (every thread already holds the same
    elements in both layouts: the conversion is a renaming of registers)."""

    src: object
    name: str = "free convert"


class _Rewriter:
    def __init__(self, root):
        self.root = root
        self.changed = False
        self.assume: dict = {}  # value -> layout it will have (a loop-carried value being retyped)

    # ---- backward rematerialisation --------------------------------------------------------------

    def _available(self, value, lay) -> Optional[object]:
        """A value equal to ``value`` already in layout ``lay`` without computation, or None."""
        if not is_tensor(value.type):
            return value
        if layout_of(value) == lay:
            return value
        if self.assume and self.assume.get(value) == lay:
            return value
        d = defining_op(value)
        if d is not None and d.name == CONVERT and layout_of(d.operands[0]) == lay:
            return d.operands[0]
        return None

    def _free_source(self, value, lay) -> Optional[object]:
        """``value``, or the source of the conversion that made it, when both are tensor-core layouts (or their
        slices) of the same warp grid and converting it to ``lay`` moves no data between threads (attention's
        ``l_i`` in the first dot's layout used with the second dot's accumulator: the same rows in the same
        threads); None otherwise.  A tensor of one element is in every thread in any distributed layout: it is its
        own free source, inside loops too (Inductor's looped scan adds its running total, a ``[XBLOCK, 1]`` carried
        by the loop, to the block's scan)."""
        if not is_tensor(value.type) or lay is None or isinstance(lay, str):
            return None
        if _numel(value) == 1 and layout_of(value) is not None and register_only(layout_of(value), lay, (1,) * len(
                ir.RankedTensorType(value.type).shape)):
            return value
        if not _mma_family(lay):
            return None
        warps = _mma_root(lay).warps_per_cta
        if _in_loop(value):  # inside a loop rule 7 decides the layouts (and a renaming there unsettles it)
            return None
        shape = tuple(ir.RankedTensorType(value.type).shape)
        d = defining_op(value)
        for cand in (value, d.operands[0] if d is not None and d.name == CONVERT else None):
            cur = None if cand is None else layout_of(cand)
            if cur is not None and cur != lay and _mma_family(cur) and _mma_root(cur).warps_per_cta == warps \
                    and register_only(cur, lay, shape):
                return cand
        return None

    def _slice(self, value, lay, plan: dict, depth=0, free_root=False) -> bool:
        """Collect into ``plan`` (value -> layout) the ops to clone so that ``value`` exists in ``lay``.  A leaf
        whose conversion to ``lay`` moves no data is converted (:class:`_Free`); not the slice's root unless
        ``free_root`` (else removing a conversion would make the same one again)."""
        if self._available(value, lay) is not None:
            return True
        key = (value, lay)
        if key in plan:
            return True
        if depth or free_root:
            src = self._free_source(value, lay)
            if src is not None:
                plan[key] = _Free(src)
                return True
        if len(plan) > _MAX_SLICE:
            return False
        d = defining_op(value)
        if d is None or len(d.results) != 1:
            return False
        if d.name in _LEAF_OPS:
            plan[key] = d
            return True
        if not (is_elementwise(d) or d.name in ("tt.broadcast", "tt.expand_dims") + _VIEWS):
            return False
        for i in range(len(d.operands)):
            want = _operand_layout(d, i, lay)
            if want is None:
                return False
            if want == "scalar":
                continue
            if not self._slice(d.operands[i], want, plan, depth + 1):
                return False
        plan[key] = d
        return True

    def _materialise(self, value, lay, plan, made: dict, before, at=None):
        """Clone the planned slice of ``value`` in ``lay``: before ``before``, or each op just before its original
        when ``before`` is None (a value computed outside a loop stays outside it); a free conversion goes right
        before its user's clone (``at``)."""
        avail = self._available(value, lay)
        if avail is not None:
            return avail
        key = (value, lay)
        if key in made:
            return made[key]
        d = plan[key]
        if isinstance(d, _Free):
            made[key] = create_convert(d.src, lay, before=at if at is not None else before)
            return made[key]
        operands = []
        pos = d if before is None else before
        for i, v in enumerate(d.operands):
            want = _operand_layout(d, i, lay) if d.name not in _LEAF_OPS else "scalar"
            operands.append(v if want == "scalar" else self._materialise(v, want, plan, made, before, pos))
        made[key] = _clone_in_layout(d, value, lay, operands, pos)
        return made[key]

    def rematerialise(self, cvt) -> bool:
        src = cvt.operands[0]
        lay = layout_of(cvt.results[0])
        plan: dict = {}
        d = defining_op(src)
        if d is not None and d.name == "scf.if":
            return self._through_if(cvt, d, lay)
        if not self._slice(src, lay, plan):
            return False
        if defining_op(src) is None:
            return False
        new = self._materialise(src, lay, plan, {}, cvt)
        cvt.results[0].replace_all_uses_with(new)
        return True

    def _through_if(self, cvt, if_op, lay) -> bool:
        """An ``scf.if`` result only converted to ``lay``: yield it in ``lay`` from both branches instead."""
        src = cvt.operands[0]
        idx = [i for i, r in enumerate(if_op.results) if r == src][0]
        if any(u.name != CONVERT or layout_of(u.results[0]) != lay for u in users(src)):
            return False
        yields = []
        for region in if_op.regions:
            if not len(region.blocks):
                return False
            term = as_op(list(region.blocks[0].operations)[-1])
            plan: dict = {}
            if term.name != "scf.yield" or not self._slice(term.operands[idx], lay, plan):
                return False
            yields.append((term, plan))
        for term, plan in yields:
            term.operands[idx] = self._materialise(term.operands[idx], lay, plan, {}, term)
        src.set_type(with_layout(src.type, lay))
        for u in users(src):
            u.results[0].replace_all_uses_with(src)
        return True

    def broadcast_in_place(self, op) -> bool:
        """Rule 8: a ``tt.broadcast`` whose operand is in another layout than its result (``convert_to_ttgir``
        gives a ``[M, 1]`` operand the default layout of its own shape) is an implicit conversion, through LDS
        when the layouts' threads disagree (a loop's ``offs_k[:, None] < K - k * BLOCK_K`` mask every iteration).
        A mask's (i1) slice of cheap ops is rematerialised in the result's layout (a size-1 dimension is
        replicated across its threads), each op next to its original (what is computed outside a loop stays
        there), so the broadcast moves registers only."""
        src = op.operands[0]
        lay = layout_of(op.results[0])
        if not is_tensor(src.type) or lay is None or layout_of(src) in (None, lay):
            return False
        elem = ir.RankedTensorType(src.type).element_type
        if not (isinstance(elem, ir.IntegerType) and elem.width == 1):
            # offsets are left alone: made once before a loop (the pointers it advances), one computation per
            # thread and an exchange cost fewer registers than one per register kept live (the matmul: 306
            # VGPRs + 50 AGPRs against 352 + 96 when its B offsets are rematerialised)
            return False
        plan: dict = {}
        if defining_op(src) is None or not self._slice(src, lay, plan):
            return False
        op.operands[0] = self._materialise(src, lay, plan, {}, None)
        return True

    # ---- loop-carried values ------------------------------------------------------------------

    def _loop_candidates(self, body, arg):
        """Layouts a loop-carried value could be carried in instead: the sources of the conversions in the loop
        body that produce its layout, or that take it elsewhere."""
        b = layout_of(arg)
        out = []
        for o in walk_block(body):
            if o.name != CONVERT:
                continue
            src_l, dst_l = layout_of(o.operands[0]), layout_of(o.results[0])
            cand = src_l if dst_l == b else (dst_l if o.operands[0] == arg else None)
            if cand is not None and cand != b and cand not in out:
                out.append(cand)
        return out

    def through_loop(self, for_op) -> bool:
        """Carry a loop-carried tensor in the layout the loop body computes it in (Triton's rematerialisation of
        ``scf.for`` iter_args): ``%acc`` in layout ``B`` updated as ``%acc + convert(%x : A -> B)`` becomes an
        ``%acc`` in ``A`` (``%acc + %x``).  The init value is converted (or rematerialised) once before the loop,
        the result converted back once after it; nothing is added inside the loop, and at least one conversion
        inside it dies."""
        body = for_op.regions[0].blocks[0]
        term = as_op(list(body.operations)[-1])
        if term.name != "scf.yield":
            return False
        n_iv = 1
        for i, arg in enumerate(list(body.arguments)[n_iv:]):
            if not is_tensor(arg.type) or layout_of(arg) is None:
                continue
            for lay in self._loop_candidates(body, arg):
                if self._retype_iter_arg(for_op, body, term, i, arg, lay):
                    return True
        return False

    def _retype_iter_arg(self, for_op, body, term, i, arg, lay) -> bool:
        v = term.operands[i]
        plan: dict = {}
        self.assume = {arg: lay}
        try:
            ok = self._slice(v, lay, plan)
        finally:
            self.assume = {}
        if not ok:
            return False
        old_ops = [d for (val, _), d in plan.items() if not isinstance(d, _Free) and d.name not in _LEAF_OPS]
        old_set = set(old_ops)
        dying = []
        for u in users(arg):
            if u in old_set or u == term:
                continue
            if u.name == CONVERT and layout_of(u.results[0]) == lay:
                dying.append(u)
                continue
            return False
        for o in old_ops:
            for r in o.results:
                for u in users(r):
                    if u in old_set:
                        continue
                    if u == term and [k for k, x in enumerate(term.operands) if x == r] == [i]:
                        continue
                    return False
        for o in walk_block(body):
            if o.name == CONVERT and o not in dying and users(o.results[0]) and \
                    all(u in old_set for u in users(o.results[0])):
                dying.append(o)
        if not dying:
            return False
        # the init value, once, before the loop
        init = for_op.operands[3 + i]
        iplan: dict = {}
        if defining_op(init) is not None and self._slice(init, lay, iplan):
            new_init = self._materialise(init, lay, iplan, {}, for_op)
        else:
            new_init = create_convert(init, lay, before=for_op)
        res = for_op.results[i]
        old_lay = layout_of(res)
        res_uses = list(res.uses)
        arg.set_type(with_layout(arg.type, lay))
        res.set_type(with_layout(res.type, lay))
        for_op.operands[3 + i] = new_init
        for c in dying:
            if c.operands[0] == arg:
                c.results[0].replace_all_uses_with(arg)
        term.operands[i] = self._materialise(v, lay, plan, {}, term)
        if res_uses:
            back = create_convert(res, old_lay, after=for_op)
            for u in res_uses:
                u.owner.operands[u.operand_number] = back
        erase_dead(for_op)
        return True

    # ---- forward sinking -----------------------------------------------------------------------

    def _sink_plan(self, u, y, a):
        """How user ``u`` of ``%y`` would compute in ``a``'s family: (result layout, plan) or None."""
        if u.name == CONVERT:
            return (None, {})
        if u.name == "tt.store" and (_cheap_store(u) or isinstance(a, layouts.AMD_MMA)) and \
                u.block == defining_op(y).block:
            res_lay = a
        elif u.name in MEMORY_OPS or len(u.regions) or u.block != defining_op(y).block:
            return None
        else:
            res_lay = _result_layout_from_operand(u, a, y)
        if res_lay is None:
            return None
        plan: dict = {}
        for i, v in enumerate(u.operands):
            if v == y or not is_tensor(v.type):
                continue
            want = _operand_layout(u, i, res_lay) if u.name not in _SAME_LAYOUT_OPERANDS else a
            if want is None or want == "scalar":
                return None
            if not self._slice(v, want, plan, free_root=True):
                return None
        return (res_lay, plan)

    def sink(self, cvt) -> bool:
        """Move the conversion after its users (all of them, or else only the reductions among them)."""
        src = cvt.operands[0]
        a = layout_of(src)
        y = cvt.results[0]
        uses = []
        for u in users(y):
            if u not in uses:
                uses.append(u)
        if not uses or a is None:
            return False
        plans = [(u, self._sink_plan(u, y, a)) for u in uses]
        ok = [(u, p) for u, p in plans if p is not None]
        if len(ok) < len(plans):
            ok = [(u, p) for u, p in ok if u.name == "tt.reduce"]
        if not ok:
            return False
        for u, (res_lay, plan) in ok:
            if u.name == CONVERT:
                u.operands[0] = src
                continue
            made: dict = {}
            for i, v in enumerate(list(u.operands)):
                if v == y:
                    u.operands[i] = src
                elif is_tensor(v.type):
                    want = _operand_layout(u, i, res_lay) if u.name not in _SAME_LAYOUT_OPERANDS else a
                    u.operands[i] = self._materialise(v, want, plan, made, u)
            retype_results(u, res_lay)
        return True

    # ---- rule 9: a conversion above a broadcast --------------------------------------------------

    def hoist_over_broadcast(self, cvt) -> bool:
        """Rule 9 (Triton's ``hoistConvertOnTopOfExtOrBroadcast``): ``convert(broadcast(expand_dims(%v)))`` becomes
        ``broadcast(expand_dims(convert(%v)))`` in the target layout, so that the smallest tensor of the chain is
        the one converted (attention's rescale ``acc * alpha[:, None]``: a row vector instead of the whole tile,
        and between two tensor-core layouts that give each thread the same rows, no exchange at all)."""
        src = cvt.operands[0]
        lay = layout_of(cvt.results[0])
        if lay is None:
            return False
        chain, v, want = [], src, lay
        while True:
            d = defining_op(v)
            if d is None or d.name not in ("tt.broadcast", "tt.expand_dims") or len(d.results) != 1:
                break
            w = _operand_layout(d, 0, want)
            if w is None or w == "scalar":
                break
            chain.append((d, v, want))
            v, want = d.operands[0], w
        if not chain or _numel(v) >= _numel(src):
            return False
        new = self._available(v, want)
        if new is None:
            new = create_convert(v, want, before=cvt)
        for d, value, l in reversed(chain):
            new = _clone_in_layout(d, value, l, [new], cvt)
        cvt.results[0].replace_all_uses_with(new)
        return True

    def finish(self) -> bool:
        """The last phase, once the rules 1-8 are done (rule 5 would sink the hoisted conversions back): rule 9, then
        the identity conversions it leaves."""
        changed = False
        for cvt in walk(self.root):
            if cvt.name == CONVERT and list(cvt.results[0].uses) and self.hoist_over_broadcast(cvt):
                changed = True
        for cvt in walk(self.root):
            if cvt.name == CONVERT and layout_of(cvt.operands[0]) == layout_of(cvt.results[0]):
                cvt.results[0].replace_all_uses_with(cvt.operands[0])
                changed = True
        if changed:
            erase_dead(self.root)
        return changed

    # ---- driver ----------------------------------------------------------------------------------

    def step(self) -> bool:
        """One sweep over the conversions; True when something changed."""
        changed = False
        seen: dict = {}
        for cvt in walk(self.root):
            if cvt.name != CONVERT:
                continue
            src, y = cvt.operands[0], cvt.results[0]
            if not list(y.uses):
                continue
            a, b = layout_of(src), layout_of(y)
            if a == b or (isinstance(a, layouts.NvidiaMmaLayout) and _only_stored_to_shared(y)):
                y.replace_all_uses_with(src)
                changed = True
                continue
            d = defining_op(src)
            if d is not None and d.name == CONVERT:
                w = d.operands[0]
                if layout_of(w) == b:
                    y.replace_all_uses_with(w)
                else:
                    cvt.operands[0] = w
                changed = True
                continue
            prev = seen.get((src, str(y.type)))
            if prev is not None and prev.block == cvt.block:
                y.replace_all_uses_with(prev.results[0])
                changed = True
                continue
            seen[(src, str(y.type))] = cvt
            if _numel(src) == 1 and self._free_source(src, b) is src:
                continue  # moves no data: rules 4 and 5 would only move it up and down (a free source above)
            if self.rematerialise(cvt):
                changed = True
                continue
            if self.sink(cvt):
                changed = True
                continue
        if not changed:
            for op in walk(self.root):
                if op.name == "tt.broadcast" and self.broadcast_in_place(op):
                    changed = True
        if not changed:
            for op in walk(self.root):
                if op.name == "scf.for" and (self.through_loop(op) or _LoopPropagation(self, op).run()):
                    changed = True
                    break
        if changed:
            erase_dead(self.root)
        return changed


def _numel(value) -> int:
    n = 1
    for d in tt.shape_of(value.type):
        n *= d
    return n


def _in_loop(value) -> bool:
    """Whether ``value`` is defined inside an ``scf.for`` / ``scf.while`` (a loop's results are not)."""
    owner = value.owner
    op = as_op(owner.owner) if isinstance(owner, ir.Block) else as_op(owner).parent
    while op is not None:
        op = as_op(op)
        if op.name in ("scf.for", "scf.while"):
            return True
        if op.name in ("func.func", "tt.func", "builtin.module"):
            return False
        op = op.parent
    return False


def _mma_root(lay):
    while isinstance(lay, layouts.SliceLayout):
        lay = lay.parent
    return lay


def _mma_family(lay) -> bool:
    return isinstance(_mma_root(lay), (layouts.NvidiaMmaLayout, *layouts.AMD_MMA))


def _convert_cost(value) -> int:
    """What converting ``value`` in a loop costs rule 7: 1, or 2 for a dot's result (the conversion reads the
    accumulator in the iteration that computes it, so an asynchronous wgmma has to be waited for there, where
    Triton keeps attention's ``acc`` in its dot's layout and in flight across the back edge)."""
    d = defining_op(value)
    return 2 if d is not None and d.name in ("tt.dot", ttg.WARP_GROUP_DOT) else 1


class _Restart(Exception):
    """The hypothesis grew (another iter_arg must change layout too): propagate again."""


class _Infeasible(Exception):
    pass


_ANY_LAYOUT_USERS = frozenset({"ttg.local_alloc", "ttg.local_store"})  # they take a tensor in any layout


def _only_stored_to_shared(value) -> bool:
    """Whether every use of ``value`` is the stored tensor of a ``ttg.local_alloc`` / ``ttg.local_store`` (rule 10)."""
    uses = list(value.uses)
    return bool(uses) and all(as_op(u.owner).name in _ANY_LAYOUT_USERS and u.operand_number == 0 for u in uses)


class _LoopPropagation:
    """Rule 7, several loop-carried values at once (Triton's layout propagation through ``scf.for``): starting
    from an iter_arg carried in the layout of a tensor-core result (an ``nvidia_mma`` or a slice of it: a dot's
    accumulator, a row max / row sum of its result), the new layouts are propagated forward through the body
    (elementwise ops, broadcast, expand_dims, reductions); an iter_arg another operand of such an op needs in a
    new layout joins the hypothesis (the online softmax's ``m_i``, ``l_i`` and ``acc`` move together).  Other
    operands come from values already in the layout, from outside the loop (converted once before it), as the
    source of an existing conversion, or rematerialised (rule 4); anything else, and every use of a changed value
    by an op that cannot change (a dot operand, a store), costs a conversion in the loop.  Applied when the loop
    then holds fewer conversions than before; init values are converted before the loop, results after it."""

    def __init__(self, rw: "_Rewriter", loop):
        self.rw, self.loop = rw, loop
        self.body = loop.regions[0].blocks[0]
        self.term = as_op(list(self.body.operations)[-1])
        self.args = list(self.body.arguments)[1:]

    def seeds(self):
        """Hypotheses to try, tensor-core ones first: each iter_arg with a candidate layout in the mma family on
        its own; then, in a loop without a dot, for every other candidate layout (a load's coalesced layout), every
        iter_arg that has it at once (an arg-max's value and index, and the arg-min beside it, all fed by one
        converted load: Inductor's looped reductions over a strided dimension)."""
        mma, other = [], {}
        for j, arg in enumerate(self.args):
            if not is_tensor(arg.type) or layout_of(arg) is None:
                continue
            for lay in self.rw._loop_candidates(self.body, arg):
                if _mma_family(lay):
                    mma.append({j: lay})
                else:
                    other.setdefault(lay, {})[j] = lay
        return mma, list(other.values())

    def run(self) -> bool:
        if self.term.name != "scf.yield" or any(len(as_op(o).regions) for o in self.body.operations):
            return False
        mma, other = self.seeds()
        if self._try(mma):
            return True
        # a loop with a dot is governed by its tensor-core layouts (above); a reduction loop by its loads' layouts
        has_dot = any(as_op(o).name in ("tt.dot", ttg.WARP_GROUP_DOT) for o in self.body.operations)
        return not has_dot and self._try(other)

    def _try(self, seeds) -> bool:
        best = None  # the cheapest hypothesis, not the first that saves something
        for hyp in seeds:
            hyp = dict(hyp)
            for _ in range(len(self.args) + 1):
                try:
                    cost = self.propagate(hyp, apply=False)
                except _Restart:
                    continue
                except _Infeasible as e:
                    log.debug("rule 7 at %s: %s", tt.loc_str(self.loop), e)
                    cost = None
                break
            else:
                cost = None
            if cost is not None and cost < 0 and (best is None or cost < best[0]):
                best = (cost, hyp)
        if best is not None:
            self.propagate(best[1], apply=True)
            return True
        return False

    def _pinned(self, op, changed, hyp):
        """The layout of an unchanged operand of elementwise ``op`` that is an iter_arg outside the hypothesis
        carried in a tensor-core layout other than the changed operands' (None if there is none)."""
        for i, v in enumerate(op.operands):
            if i in changed or not is_tensor(v.type) or not isinstance(v.owner, ir.Block) or v.owner != self.body:
                continue
            j = v.arg_number - 1
            lay = layout_of(v)
            if j >= 0 and j not in hyp and isinstance(lay, (layouts.NvidiaMmaLayout, *layouts.AMD_MMA)):
                return lay
        return None

    def _remat(self, u, want, new: dict, grow: dict, apply: bool, before, memo: dict, depth: int = 0):
        """``u`` computed in ``want`` from what the body has (values already there, changed values, the sources
        of conversions, constants, splats, elementwise / broadcast / expand_dims chains), cloning the chain when
        ``apply``; iter_args it needs in ``want`` go to ``grow``.  None when that is not possible."""
        lay = new.get(u, layout_of(u))
        if lay == want:
            return self.alias.get(u, u)
        key = (u, want)
        if key in memo:
            return memo[key]
        if depth > 48 or u in new:
            return None
        if isinstance(u.owner, ir.Block):
            if u.owner != self.body or u.arg_number == 0:
                return None
            j = u.arg_number - 1
            if grow.get(j, want) != want:
                return None
            grow[j] = want
            return u
        d = defining_op(u)
        if d is None or as_op(d).operation.block != self.body:  # from outside the loop: converted once before it
            out = create_convert(u, want, before=self.loop) if apply else u
            memo[key] = out
            return out
        if d.name == CONVERT:
            return self._remat(d.operands[0], want, new, grow, apply, before, memo, depth + 1)
        leaf = d.name in _LEAF_OPS
        if len(d.results) != 1 or not (leaf or is_elementwise(d) or d.name in ("tt.broadcast", "tt.expand_dims")):
            return None
        operands = []
        for i, v in enumerate(d.operands):
            w = "scalar" if leaf else _operand_layout(d, i, want)
            if w is None:
                return None
            if w == "scalar" or not is_tensor(v.type):
                operands.append(v)
                continue
            r = self._remat(v, w, new, grow, apply, before, memo, depth + 1)
            if r is None:
                return None
            operands.append(r)
        out = _clone_in_layout(d, u, want, operands, before) if apply else u
        memo[key] = out
        return out

    # ---- one pass over the body: plan (apply=False) or rewrite (apply=True) ----
    def propagate(self, hyp: dict, apply: bool) -> int:
        new, old = {}, {}  # value -> its new / old layout (values that change)
        # the result of a conversion the new layout flows through -> the value it stands for (its source)
        self.alias = alias = {}
        for j, lay in hyp.items():
            new[self.args[j]], old[self.args[j]] = lay, layout_of(self.args[j])
        cost = 0
        loop = self.loop
        if apply:
            for j, lay in hyp.items():
                arg, res, init = self.args[j], loop.results[j], loop.operands[3 + j]
                old_lay = layout_of(arg)
                res_uses = list(res.uses)
                arg.set_type(with_layout(arg.type, lay))
                res.set_type(with_layout(res.type, lay))
                loop.operands[3 + j] = create_convert(init, lay, before=loop)
                if res_uses:
                    back = create_convert(res, old_lay, after=loop)
                    for u in res_uses:
                        u.owner.operands[u.operand_number] = back

        memo: dict = {}
        via: set = set()  # conversions in the body some changed op reads from their source

        def lay_of(v):
            return new.get(v, layout_of(v))

        def obtain(u, want, before):
            """``u`` in layout ``want`` for an op of the body (a conversion in the loop when nothing else works)."""
            nonlocal cost
            if lay_of(u) == want:
                return alias.get(u, u)
            if isinstance(u.owner, ir.Block) and u.owner == self.body:
                j = u.arg_number - 1
                if j >= 0 and j not in hyp:
                    hyp[j] = want
                    raise _Restart()
                raise _Infeasible(f"iter_arg {j} needed in two layouts")
            d = defining_op(u)
            if d is not None and d.name == CONVERT and d.operation.block == self.body and \
                    lay_of(d.operands[0]) == want:
                via.add(d)  # read from its source instead: the conversion may die
            grow: dict = {}
            got = self._remat(u, want, new, grow, apply, before, memo)
            if got is not None:
                extra = {j: w for j, w in grow.items() if j not in hyp}
                if any(hyp[j] != w for j, w in grow.items() if j in hyp):
                    raise _Infeasible("an iter_arg needed in two layouts")
                if extra:
                    hyp.update(extra)  # iter_args that, carried in the new layouts, make u computable there
                    raise _Restart()
                return got
            cost += _convert_cost(u)
            log.debug("rule 7: %s needed in %s costs a conversion", u.get_name(), want)
            return create_convert(u, want, before=before) if apply else u

        for op in list(self.body.operations):
            op = as_op(op)
            changed = [i for i, v in enumerate(op.operands) if v in new]
            if op == self.term:
                for j, v in enumerate(list(op.operands)):
                    if j in hyp:
                        d = defining_op(v)
                        if d is not None and d.name == CONVERT and d.operation.block == self.body and \
                                v not in new and lay_of(d.operands[0]) == hyp[j] and \
                                all(as_op(x.owner) == op for x in v.uses):
                            cost -= _convert_cost(d.operands[0])  # a conversion only yielded dies
                        got = obtain(v, hyp[j], op)
                        if apply and got is not v:
                            op.operands[j] = got
                    elif v in new:
                        if is_tensor(v.type):
                            hyp[j] = new[v]
                            raise _Restart()
                continue
            if not changed:
                continue
            if op.name == CONVERT:  # the new layout flows through: the conversion goes (DCE)
                src, r = op.operands[0], op.results[0]
                cost -= 1
                new[r], old[r] = new[src], layout_of(r)
                alias[r] = alias.get(src, src)
                continue
            if op.name in _ANY_LAYOUT_USERS:
                if apply:
                    for i in changed:
                        op.operands[i] = alias.get(op.operands[i], op.operands[i])
                continue
            res_lay = None
            if (is_elementwise(op) or op.name in ("tt.broadcast", "tt.expand_dims", "tt.reduce")) and \
                    len(op.results) >= 1 and all(is_tensor(r.type) for r in op.results):
                first = op.operands[changed[0]]
                res_lay = _result_layout_from_operand(op, new[first], first)
                pinned = self._pinned(op, changed, hyp) if is_elementwise(op) else None
                if pinned is not None:
                    # another operand is an accumulator carried in its dot's layout (attention's acc * alpha):
                    # the op stays in that layout and the changed operand comes to it, as in Triton
                    res_lay = pinned
            if res_lay is None:  # an op that keeps its layout: the changed operands go back
                for i in changed:
                    v = op.operands[i]
                    val = alias.get(v, v)
                    if new[v] == old[v]:
                        if apply:
                            op.operands[i] = val
                        continue
                    cost += 1
                    log.debug("rule 7: %s keeps its layout: operand %d goes back", op.name, i)
                    if apply:
                        op.operands[i] = create_convert(val, old[v], before=op)
                continue
            for i, v in enumerate(list(op.operands)):
                if not is_tensor(v.type):
                    continue
                want = _operand_layout(op, i, res_lay) if op.name != "tt.reduce" else new[op.operands[changed[0]]]
                if want in (None, "scalar"):
                    raise _Infeasible(f"{op.name} cannot take its operand {i} in {want}")
                got = obtain(v, want, op)
                if apply and got is not v:
                    op.operands[i] = got
            for r in op.results:
                lay = res_lay if op.name != "tt.reduce" else layouts.SliceLayout(
                    int(op.attributes["axis"].value), new[op.operands[changed[0]]])
                new[r], old[r] = lay, layout_of(r)
                if apply:
                    r.set_type(with_layout(r.type, lay))
        def dies(v, depth=0) -> bool:
            """Every use of ``v`` is by a retyped op (it reads the new layout now), by the terminator where it
            yields a changed iter_arg, or by a cheap op whose results die too (rematerialised for the others)."""
            for x in v.uses:
                o = as_op(x.owner)
                if o == self.term:
                    if x.operand_number not in hyp:
                        return False
                elif not any(r in new for r in o.results):
                    if depth > 8 or not (is_elementwise(o) or o.name in ("tt.broadcast", "tt.expand_dims")) or \
                            not all(dies(r, depth + 1) for r in o.results):
                        return False
            return True

        for d in via:  # a conversion all of whose users now read its source dies (DCE)
            if dies(d.results[0]):
                cost -= _convert_cost(d.operands[0])
        return cost


def _cheap_store(op) -> bool:
    """A store of fewer elements than the CTA has threads is no layout anchor (Triton's
    ``isExpensiveLoadOrStore``): it can take whatever layout its value comes in (replicated elements are
    written once, by their first holder)."""
    ptr = op.operands[0]
    if not is_tensor(ptr.type):
        return False
    threads = module_int(op, ttg.NUM_WARPS, 4) * module_int(op, ttg.THREADS_PER_WARP, 32)
    return tt.numel(tt.shape_of(ptr.type)) < threads


def walk_block(block) -> list:
    """Every op in ``block`` and nested in it, in program order."""
    out = []
    for o in block.operations:
        o = as_op(o)
        out.append(o)
        if len(o.regions):
            out.extend(walk(o))
    return out


def _clone_in_layout(d, value, lay, operands, before):
    """A copy of ``d`` (the one-result op defining ``value``) with ``operands``, its result in ``lay``, before
    ``before``."""
    new_ty = with_layout(value.type, lay)
    attrs = {k: d.attributes[k] for k in d.attributes}
    if d.name == "arith.constant":
        attrs["value"] = _retyped_constant(d.attributes["value"], new_ty)
    with ir.InsertionPoint(as_op(before)):
        return ir.Operation.create(d.name, results=[new_ty], operands=operands, attributes=attrs,
                                   loc=d.location).results[0]


def _retyped_constant(attr, new_ty):
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        return ir.DenseElementsAttr.get_splat(new_ty, dense.get_splat_value())
    text = str(attr)
    return ir.Attribute.parse(text[: text.rindex(":")] + ": " + str(new_ty))


def remove_layout_conversions(root, max_sweeps: int = 50) -> int:
    """Run the rewrites to a fixpoint; returns the number of ``ttg.convert_layout`` ops left."""
    root = as_op(root)
    with root.context:
        rw = _Rewriter(root)
        for _ in range(max_sweeps):
            if not rw.step():
                break
        rw.finish()
        erase_dead(root)
        return sum(1 for o in walk(root) if o.name == CONVERT)


remove_layout_conversions_pass = pass_entry("tritium-remove-layout-conversions", remove_layout_conversions)

__all__ = ["remove_layout_conversions", "remove_layout_conversions_pass"]
