"""Rewrite tensor descriptors into block pointers (for backends that access them with ordinary loads and stores).

A tensor descriptor (``tt.make_tensor_descriptor``, ``!tt.tensordesc<tensor<BxT>>``) is a block pointer whose
offsets are given at each access and whose every dimension is boundary-checked (TMA semantics: out-of-shape
elements of a load read the padding, those of a store are dropped).  So this pass, after expanding the kernel's
descriptor parameters (host-side descriptors, :mod:`.expand_tensor_descriptor_args`),

* ``tt.make_tensor_descriptor(base, shape : i32, strides : i64) {padding}`` -> ``tt.make_tensor_ptr(base,
  extsi(shape), strides, offsets = 0)`` (row-major ``order``);
* ``tt.descriptor_load(desc, indices)`` -> ``tt.load(tt.advance(bp, indices)) {boundaryCheck = every dim,
  padding}`` (the padding of the descriptor the value comes from; cache / evict kept);
* ``tt.descriptor_store(desc, src, indices)`` -> ``tt.store(tt.advance(bp, indices), src) {boundaryCheck =
  every dim}``;
* ``arith.select`` of descriptors -> an ``scf.if`` yielding one or the other;
* retypes every other descriptor value (``scf.for`` iter args and results, ``scf.if`` results) to the block
  pointer type, in place,

and :mod:`.rewrite_tensor_pointer`, which runs next, turns the block pointers into tensors of pointers and masks.
Descriptors passed to or returned from calls raise a :class:`RewriteError` naming the op and its location (as
block pointers do there).

:func:`.rewrite_tensor_pointer.rewrite_tensor_pointer` runs this rewrite first, so a backend lists only
``rewrite_tensor_pointer_pass`` (the cuda backend, first in its TTIR pipeline).  The descriptor ops stay in TTIR
until then; on sm_90+ the loads and stores through a kernel parameter kept as a TMA tensor map
(:mod:`.tma_descriptors`, which runs first) are left as they are, for the TTGIR pipeline to make TMA copies of them.
The interpreter runs descriptors natively.
"""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...dialects.enums import PaddingOption
from ...errors import RewriteError
from .. import ir_helpers as u
from .expand_tensor_descriptor_args import expand_tensor_descriptor_args
from .tma_descriptors import TMA_ATTR, is_tma_desc

# ops a descriptor value may flow through: rewrite_tensor_pointer handles them once they carry block pointers
_CARRIERS = frozenset({"scf.for", "scf.if", "scf.yield"})


def _block_ptr_type(desc_ty):
    return tt.ptr_type(tt.desc_block_type(desc_ty))


def _padding(value, seen=None):
    """The ``padding`` of the ``tt.make_tensor_descriptor`` a descriptor value comes from (through ``scf.for``
    iter args / results, ``scf.if`` results and ``arith.select``), or None when it cannot be told."""
    seen = set() if seen is None else seen
    if value in seen:
        return None
    seen.add(value)
    op = u.defining_op(value)
    if op is None:  # a block argument: an scf.for iter arg takes its init operand's descriptor
        arg = ir.BlockArgument(value)
        parent = u.as_op(arg.owner.owner)
        if parent.name == "scf.for" and arg.arg_number >= 1:
            return _padding(parent.operands[2 + arg.arg_number], seen)
        return None
    if op.name == tt.MAKE_TENSOR_DESCRIPTOR:
        return tt.decode_attributes(op).get("padding", PaddingOption.PAD_ZERO)
    index = list(op.results).index(value)
    if op.name == "scf.for":
        return _padding(op.operands[3 + index], seen)
    if op.name == "scf.if":
        found = set()
        for region in op.regions:
            for block in region.blocks:
                term = u.as_op(list(block.operations)[-1])
                found.add(_padding(term.operands[index], seen))
        return found.pop() if len(found) == 1 else None
    if op.name == "arith.select":
        found = {_padding(op.operands[1], seen), _padding(op.operands[2], seen)}
        return found.pop() if len(found) == 1 else None
    return None


def _unsupported(op, why: str) -> RewriteError:
    return RewriteError(f"'{op.name}' at {tt.loc_str(op)}: {why}")


def _advance(op, desc, indices):
    """``tt.advance(desc, indices)`` before ``op`` (``desc`` already retyped to a block pointer)."""
    return u.create_op(tt.ADVANCE, [desc, *indices], [desc.type], loc=op.location, before=op).results[0]


def _make(op) -> None:
    base, shape, strides = tt.split_operands(op)
    r = len(shape)
    loc = op.location
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    shape64 = [u.create_op("arith.extsi", [s], [i64], loc=loc, before=op).results[0] for s in shape]
    zero = u.constant(ir.IntegerAttr.get(i32, 0), i32, loc=loc, before=op)
    attrs = {"order": ir.DenseI32ArrayAttr.get(list(range(r - 1, -1, -1))),
             "operandSegmentSizes": u.segment_sizes(1, r, r, r)}
    new = u.create_op(tt.MAKE_TENSOR_PTR, [base, *shape64, *strides, *[zero] * r],
                      [_block_ptr_type(op.results[0].type)], attrs, loc=loc, before=op)
    u.replace_op(op, new.results)


def _load(op, padding) -> None:
    desc, indices = tt.split_operands(op)
    r = len(indices)
    ptr = _advance(op, desc, indices)
    attrs = {k: op.attributes[k] for k in ("cache", "evict") if k in op.attributes}
    attrs.update({"boundaryCheck": ir.DenseI32ArrayAttr.get(list(range(r))),
                  "padding": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(padding)),
                  "operandSegmentSizes": u.segment_sizes(1, 0, 0)})
    new = u.create_op(tt.LOAD, [ptr], [op.results[0].type], attrs, loc=op.location, before=op)
    u.replace_op(op, new.results)


def _select(op) -> None:
    """``arith.select %c, %a, %b`` of (retyped) descriptors -> ``scf.if %c { yield %a } else { yield %b }``, which
    rewrite_tensor_pointer expands (it has no rule for a select of block pointers)."""
    c, a, b = op.operands
    if tt.is_tensor(c.type):
        raise _unsupported(op, "selects tensor descriptors elementwise")
    ty = _block_ptr_type(op.results[0].type)
    with ir.InsertionPoint(op):
        new = ir.Operation.create("scf.if", results=[ty], operands=[c], regions=2, loc=op.location)
    for region, value in zip(new.regions, (a, b)):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            ir.Operation.create("scf.yield", operands=[value], loc=op.location)
    u.replace_op(op, new.results)


def _store(op) -> None:
    desc, src, indices = tt.split_operands(op)
    ptr = _advance(op, desc, indices)
    attrs = {"boundaryCheck": ir.DenseI32ArrayAttr.get(list(range(len(indices)))),
             "operandSegmentSizes": u.segment_sizes(1, 1, 0)}
    u.create_op(tt.STORE, [ptr, src], [], attrs, loc=op.location, before=op)
    op.erase()


@u.in_context
def rewrite_tensor_descriptor(root) -> int:
    """Rewrite every tensor descriptor under ``root`` (a module or function) into block pointers; returns the
    number of descriptor loads / stores rewritten."""
    expand_tensor_descriptor_args(root)
    ops = u.walk(root)
    # the paddings first: they are read from the make ops this pass replaces
    paddings = {}
    for i, op in enumerate(ops):
        if op.name == tt.DESCRIPTOR_LOAD and not is_tma_desc(op.operands[0]):
            pad = _padding(op.operands[0])
            if pad is None:
                raise _unsupported(op, "a tensor descriptor whose origin is unknown (a function argument or an "
                                       "unsupported op): the rewrite into block pointers needs its padding")
            paddings[i] = pad
    count = 0
    with ir.Location.unknown():
        for i, op in enumerate(ops):
            name = op.name
            if name in (tt.DESCRIPTOR_LOAD, tt.DESCRIPTOR_STORE) and is_tma_desc(op.operands[0]):
                continue  # through a TMA tensor map: the TTGIR pipeline makes it a TMA copy
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.arguments:
                        if tt.is_tensordesc(arg.type) and not is_tma_desc(arg):
                            if name != "scf.for":
                                raise _unsupported(op, "takes a tensor descriptor as a block argument, which the "
                                                       "rewrite into block pointers does not support")
                            arg.set_type(_block_ptr_type(arg.type))
            if name == tt.MAKE_TENSOR_DESCRIPTOR:
                if TMA_ATTR not in op.attributes:  # (a tensor map made on the device: stays)
                    _make(op)
            elif name == tt.DESCRIPTOR_LOAD:
                _load(op, paddings[i])
                count += 1
            elif name == tt.DESCRIPTOR_STORE:
                _store(op)
                count += 1
            elif name == "arith.select" and tt.is_tensordesc(op.results[0].type):
                _select(op)
            else:
                touches = any(tt.is_tensordesc(x.type) for x in op.operands) or \
                    any(tt.is_tensordesc(x.type) for x in op.results)
                if touches and name not in _CARRIERS:
                    raise _unsupported(op, "uses a tensor descriptor, which the rewrite of tensor descriptors "
                                           "into block pointers does not support")
                for res in op.results:
                    if tt.is_tensordesc(res.type):
                        res.set_type(_block_ptr_type(res.type))
    return count


def rewrite_tensor_descriptor_pass(op, pass_=None) -> None:
    """``PassManager.add`` entry point (``rewrite_tensor_pointer_pass`` includes this rewrite)."""
    rewrite_tensor_descriptor(op)
