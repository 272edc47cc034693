"""Expand a kernel's tensor descriptor parameters (host-side ``TensorDescriptor`` arguments) into what the
launch passes for them.

The frontend gives a parameter of type ``tensordesc<fp16[64, 64]>`` one ``!tt.tensordesc<tensor<64x64xf16>>``
argument.  The runtime passes such an argument as its base pointer, shape (i32 each) and strides (i64 each)
(:func:`tritium.runtime.specialization.descriptor_args`), so this pass replaces the argument of the public
kernel function by those 1 + 2r arguments and rebuilds the descriptor at the entry with
``tt.make_tensor_descriptor`` (padding: the parameter's ``tt.padding`` attribute, zero without one).  What
``TensorDescriptor`` guarantees becomes hints: the base is 16-byte aligned (``tt.divisibility = 16``), the
leading strides are multiples of 16 bytes (``tt.divisibility = 16 / element size``), the last stride is 1 (the
descriptor uses the constant; its argument stays in the ABI, unused).  A parameter with ``tt.divisibility = 16``
(the JIT's specialisation: the inner dim of its shape spans a multiple of 16 bytes) gives the inner shape argument
``tt.divisibility = 16 / element size``.

A parameter marked ``tt.tma`` (:mod:`.tma_descriptors`, sm_90+) stays, right before those arguments, as the
kernel's TMA tensor map: the descriptor loads and stores on it keep it, its other uses take the rebuilt descriptor.

Backends that accept host-side descriptors run it before anything else sees the kernel's arguments: the
interpreter's ``npy`` stage, and the cuda backend through :mod:`.rewrite_tensor_descriptor`, which calls it
first.  Private (``noinline``) functions keep descriptor arguments.
"""
from __future__ import annotations

from mlir import ir

from ...dialects import tt
from ...dialects.enums import PaddingOption
from .. import ir_helpers as u

_DIVISIBILITY = 16
TMA_ATTR = "tt.tma"  # a parameter kept as a TMA tensor map (passes/ttir/tma_descriptors.py): 0 to expand, 1 done
_TMA_OPS = (tt.DESCRIPTOR_LOAD, tt.DESCRIPTOR_STORE)


def _i32_attr(v: int):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)


def element_bytes(elem) -> int:
    """Bytes of one element of ``elem`` (an int or float type; i1: 1)."""
    return max(1, (ir.IntegerType(elem).width if tt.is_int(elem) else ir.FloatType(elem).width) // 8)


def _expand(func) -> int:
    block = func.regions[0].blocks[0]
    old_args = list(block.arguments)
    if not any(tt.is_tensordesc(a.type) for a in old_args):
        return 0
    attrs = u.arg_attrs(func)
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    new_attrs = []
    plan = []  # per old argument: (new args, padding or None, the kept tensor map or None)
    for a, at in zip(old_args, attrs):
        if not tt.is_tensordesc(a.type) or u.attr_int(at.get(TMA_ATTR)) == 1:  # (a tensor map, expanded)
            plan.append(([block.add_argument(a.type, a.location)], None, None))
            new_attrs.append(at)
            continue
        blk = tt.desc_block_type(a.type)
        elem, r = tt.elem_of(blk), len(tt.shape_of(blk))
        pad = PaddingOption(u.attr_int(at["tt.padding"])) if "tt.padding" in at else PaddingOption.PAD_ZERO
        esize = element_bytes(elem)
        tma = TMA_ATTR in at
        if tma:  # the tensor map: its direct loads / stores keep it (a TMA parameter), the rest take the rebuilt one
            keep = block.add_argument(a.type, a.location)
            new_attrs.append({TMA_ATTR: _i32_attr(1), **({"tt.padding": at["tt.padding"]} if "tt.padding" in at
                                                         else {})})
        vals = [block.add_argument(tt.ptr_type(elem), a.location)]
        new_attrs.append({"tt.divisibility": _i32_attr(_DIVISIBILITY)})
        vals += [block.add_argument(i32, a.location) for _ in range(r)]
        shape_div = u.attr_int(at["tt.divisibility"]) if "tt.divisibility" in at else None
        inner = {"tt.divisibility": _i32_attr(max(1, shape_div // esize))} if shape_div else {}
        new_attrs += [{} for _ in range(r - 1)] + [inner]
        vals += [block.add_argument(i64, a.location) for _ in range(r)]
        new_attrs += [{"tt.divisibility": _i32_attr(max(1, _DIVISIBILITY // esize))} for _ in range(r - 1)] + [{}]
        plan.append((vals, pad, keep if tma else None))
    first = list(block.operations)[0] if list(block.operations) else None
    for a, (vals, pad, keep) in zip(old_args, plan):
        if keep is not None:
            for use in list(a.uses):
                if u.as_op(use.owner).name in _TMA_OPS and use.operand_number == 0:
                    u.as_op(use.owner).operands[0] = keep
        if pad is None:
            a.replace_all_uses_with(vals[0])
            continue
        r = (len(vals) - 1) // 2
        with ir.InsertionPoint.at_block_begin(block) if first is None else ir.InsertionPoint(first):
            one = ir.Operation.create("arith.constant", results=[i64],
                                      attributes={"value": ir.IntegerAttr.get(i64, 1)}, loc=a.location).results[0]
            # the last stride is the constant 1 (TensorDescriptor checks it): its argument stays unused
            operands = [vals[0], *vals[1:1 + r], *vals[1 + r:2 * r], one]
            make = ir.Operation.create(
                tt.MAKE_TENSOR_DESCRIPTOR, results=[a.type], operands=operands,
                attributes={"padding": _i32_attr(int(pad)), "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, r, r])},
                loc=a.location)
        a.replace_all_uses_with(make.results[0])
    for _ in old_args:
        block.erase_argument(0)
    types = [a.type for a in block.arguments]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(types, list(ftype.results)))
    func.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in new_attrs])
    return sum(1 for _, pad, _ in plan if pad is not None)


@u.in_context
def expand_tensor_descriptor_args(root) -> int:
    """Expand the tensor descriptor arguments of every public function under ``root`` (a module); returns how
    many were expanded."""
    return sum(_expand(op) for op in u.public_functions(root))


def expand_tensor_descriptor_args_pass(op, pass_=None) -> None:
    """``PassManager.add`` entry point."""
    expand_tensor_descriptor_args(op)
