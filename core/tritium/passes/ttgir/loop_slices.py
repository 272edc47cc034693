"""Target-independent pieces of the software pipeliners (:mod:`.pipeline_loops` for cuda, :mod:`.stream_pipeline`
for hip): the slice of a loop body a load's operands depend on, the iter_args it reads and whether their updates
can be recomputed ahead, cloning a slice for another iteration, and small arith builders."""
from __future__ import annotations

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.ir_helpers import is_pure

from tritium.passes.ir_helpers import as_op, layout_of

LOOP = "scf.for"


def dot_operand_loads(body):
    """``(load, alloc)`` for each ``tt.load`` directly in ``body`` whose only use is a ``ttg.local_alloc`` in
    ``body`` (the dot-operand path of optimize_dot_operands): the loads a pipeliner stages through shared memory."""
    out = []
    for op in body.operations:
        op = as_op(op)
        if op.name != tt.LOAD:
            continue
        uses = list(op.results[0].uses)
        if len(uses) != 1 or as_op(uses[0].owner).name != ttg.LOCAL_ALLOC:
            continue
        alloc = as_op(uses[0].owner)
        if alloc.operation.block == body:
            out.append((op, alloc))
    return out


class PipelinedLoad:
    """A ``tt.load`` a pipeliner turns into a copy into the shared buffer ``alloc``: its pointer, mask and other;
    ``trans``: the ``tt.trans`` between the load and the alloc, when the dot reads the tile transposed (cuda)."""
    tma = False
    trans = None

    def __init__(self, load, alloc):
        self.load, self.alloc = load, alloc
        self.ptr = load.operands[0]
        groups = tt.operand_groups(load)
        self.mask = (groups.get("mask") or [None])[0]
        self.other = (groups.get("other") or [None])[0]

    def operands(self):
        """The values the copy is computed from (its slice's roots): the pointer and the mask (an asynchronous
        copy fills masked-off elements with zeros; a pipeliner that keeps ``other`` adds it)."""
        return [v for v in (self.ptr, self.mask) if v is not None]


def load_vector(info, ptr, mask, elem_bytes: int) -> int:
    """Elements a thread loads per access through the tensor of pointers ``ptr`` (``mask`` or None): the axis
    analysis' vector width (``info``: an ``AxisInfoAnalysis``; it raises when it has no answer), capped at the
    layout's contiguous registers per thread and 16 bytes."""
    lay = layout_of(ptr)
    per_thread = layouts._contig_regs(lay.linear(tt.shape_of(ptr.type)), lay.order[0])
    vec = int(info.vector_width(ptr, mask, per_thread, elem_bytes * 8, list(lay.order)))
    return max(1, min(vec, per_thread, 16 // elem_bytes))


def in_body(value, body) -> bool:
    """Defined by an op directly in ``body`` (not an argument, not outside)."""
    owner = value.owner
    return not isinstance(owner, ir.Block) and as_op(owner).parent is not None and \
        as_op(owner).operation.block == body


def loop_slice(values, body):
    """The ops of ``body`` the ``values`` depend on (program order) and the block arguments they read, or None
    when an op there has side effects or regions."""
    seen, ops, used = set(), [], set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v.owner, ir.Block):
            if v.owner == body:
                used.add(v.arg_number)
            continue
        if not in_body(v, body):
            continue
        op = as_op(v.owner)
        if op in seen:
            continue
        seen.add(op)
        if len(op.regions) or not (is_pure(op) or op.name == ttg.CONVERT_LAYOUT):
            return None
        ops.append(op)
        stack.extend(op.operands)
    order = {as_op(o): i for i, o in enumerate(body.operations)}
    ops.sort(key=lambda o: order[o])
    return ops, used


def iter_arg_updates(body, term, arg_numbers, iv_num):
    """For each iter_arg number: the slice computing its yielded value, or None when that slice reads another
    loop-carried value (or has side effects)."""
    out = {}
    for a in arg_numbers:
        if a == iv_num:
            continue
        y = term.operands[a - 1]
        sl = loop_slice([y], body)
        if sl is None or not sl[1] <= {a, iv_num}:
            return None
        out[a] = (sl[0], y)
    return out


def clone_ops(ops, mapping, ip):
    """Clone ``ops`` at ``ip`` with operands through ``mapping`` (updated with the clones' results)."""
    with ip:
        for op in ops:
            new = op.clone()
            for i, v in enumerate(op.operands):
                if v in mapping:
                    new.operands[i] = mapping[v]
            for r_old, r_new in zip(op.results, new.results):
                mapping[r_old] = r_new


def const(value, ty):
    return ir.Operation.create("arith.constant", results=[ty],
                               attributes={"value": ir.IntegerAttr.get(ty, value)}).results[0]


def arith(name, a, b, ty=None):
    return ir.Operation.create(name, results=[ty or a.type], operands=[a, b]).results[0]


def cmp_lt(a, b):
    i1 = ir.IntegerType.get_signless(1)
    return ir.Operation.create("arith.cmpi", results=[i1], operands=[a, b],
                               attributes={"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)}
                               ).results[0]


def next_op(op):
    """The op after ``op`` in its block."""
    op = as_op(op)
    ops = [as_op(o) for o in op.operation.block.operations]
    return ops[ops.index(op) + 1]


def const_before(loop, value, ty):
    with ir.InsertionPoint(as_op(loop)), as_op(loop).location:
        return const(value, ty)


def loop_stages(loop, default: int) -> int:
    """The stages of ``loop``: its ``tt.num_stages`` attribute (``tl.range(..., num_stages=k)``, which overrides the
    kernel's as in Triton), else ``default`` (the kernel's ``num_stages``)."""
    a = loop.attributes["tt.num_stages"] if "tt.num_stages" in loop.attributes else None
    return ir.IntegerAttr(a).value if a is not None else default
