"""Host-side tensor descriptors as TMA tensor maps (sm_90+): which descriptors go through TMA, and the kernel
parameters they take.

A kernel parameter of type ``!tt.tensordesc<tensor<R x C x T>>`` (a host ``TensorDescriptor`` argument) is
*TMA-capable* when its block is 2-D, ``T`` is 1, 2 or 4 bytes wide (not ``i1``), a row of the block is at least 16
bytes (``C * bytes(T)``), ``R <= 256`` (a TMA box dimension) and a multiple of 8 (every box starts on its swizzle
pattern), NaN padding only for float types, and the kernel body
loads or stores through the parameter itself (``tt.descriptor_load`` / ``tt.descriptor_store`` whose descriptor is
the block argument).  A parameter stored through must also have an inner dim spanning a multiple of 16 bytes (the
JIT's ``tt.divisibility = 16`` specialisation of a descriptor; the outer dims may be anything: the copy clips a box
at the tensor's bounds): a TMA store writes whole 16-byte chunks of the inner dim, so past an inner
extent whose bytes are not a multiple of 16 it would overwrite the memory that follows (the hardware does; Triton
documents it as a limitation), where the pointer path writes exactly the descriptor's shape.

:func:`tma_descriptor_args` (the cuda backend's first TTIR pass on sm_90+) keeps such a parameter as the kernel's
*tensor map* (marked ``tt.tma = 1`` once expanded; the LLVM lowering passes it as a 128-byte ``.param`` by value, ``__grid_constant__``)
and adds right after it the arguments :mod:`.expand_tensor_descriptor_args` gives every descriptor -- base, shape
(i32 each), strides (i64 each) -- which the launcher encodes the tensor map from and which rebuild a
``tt.make_tensor_descriptor`` for the uses that do not go through TMA (a descriptor carried through a loop, passed
on).  The descriptor loads and stores on the parameter stay: the TTGIR pipeline turns them into TMA copies
(:mod:`tritium_nvidia.passes.tma_lowering`); every other descriptor is rewritten into pointers as on sm_80.

A descriptor made in the kernel (``tl.make_tensor_descriptor``) is a tensor map too (the op marked ``tt.tma``;
its lowering writes the map into the program's slot of the global scratch memory, see
:func:`tritium.passes.analysis.allocation.allocate_global_scratch`) when its block passes the same checks, every use
of it is a load or store directly on it, its base is a parameter the JIT saw 16-byte aligned, its leading strides
are provably multiples of 16 bytes (the axis analysis: constants, parameters the JIT saw divisible by 16), and --
when stored through -- so is its inner extent; otherwise it is rewritten into pointers as before.

The tensor map's shared-memory side (:func:`tma_layout`, :func:`tma_box`): the block is copied into a
``#ttg.nvmma_shared`` buffer, row-major, swizzled by the widest of 128 / 64 / 32 bytes that a row fills (none for a
16-byte row); a row wider than the swizzle is copied as several boxes ``[R, swizzle / bytes(T)]``, one slab of the
buffer each (the layout stores slabs one after the other).  The launcher encodes the map with that box and swizzle
(the compiled kernel's ``tensormaps`` metadata).
"""
from __future__ import annotations

import logging

from mlir import ir

from ...dialects import layouts, tt
from ...dialects.enums import PaddingOption
from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u
from .expand_tensor_descriptor_args import TMA_ATTR, element_bytes, expand_tensor_descriptor_args

log = logging.getLogger(__name__)

MAX_BOX = 256


def tma_layout(block_ty) -> layouts.NVMMASharedLayout:
    """The shared layout a TMA copy of a ``block_ty`` (2-D) block writes."""
    shape, elem = tt.shape_of(block_ty), tt.elem_of(block_ty)
    eb = element_bytes(elem)
    row = shape[-1] * eb
    swizzle = next((s for s in (128, 64, 32) if row >= s), 0)
    return layouts.NVMMASharedLayout(swizzle, 0, eb * 8)


def tma_box(block_ty) -> list:
    """The TMA box (outermost dim first) the block is copied in: ``[R, min(C, row elements of the swizzle)]``."""
    shape = list(tt.shape_of(block_ty))
    lay = tma_layout(block_ty)
    return shape[:-1] + [min(shape[-1], lay.row_elems())]


def tma_capable(desc_ty, padding=PaddingOption.PAD_ZERO) -> str:
    """Why a descriptor of type ``desc_ty`` cannot be a TMA tensor map ("" when it can)."""
    block = tt.desc_block_type(desc_ty)
    full, elem = tt.shape_of(block), tt.elem_of(block)
    shape = tt.squeezed_shape(full)
    if len(shape) != 2 or len(full) > 5:
        return f"a {len(full)}-D block {list(full)} (TMA copies here are 2-D tiles: a block of rank 3 to 5 only " \
               f"with leading dims of 1)"
    if not (tt.is_int(elem) or isinstance(elem, ir.FloatType)) or (tt.is_int(elem) and
                                                                    ir.IntegerType(elem).width == 1):
        return f"elements of type {elem}"
    eb = element_bytes(elem)
    if eb not in (1, 2, 4):
        return f"{eb}-byte elements"
    if shape[-1] * eb < 16:
        return f"rows of {shape[-1] * eb} bytes (TMA needs 16 at least)"
    if shape[0] > MAX_BOX:
        return f"{shape[0]} rows (a TMA box has at most {MAX_BOX})"
    if shape[0] % 8:  # each box (slab) then starts on its swizzle pattern: 8 rows of the swizzle width
        return f"{shape[0]} rows (TMA copies here take multiples of 8)"
    if padding == PaddingOption.PAD_NAN and not isinstance(elem, ir.FloatType):
        return "NaN padding of an integer type"
    return ""


def _direct_uses(arg, name) -> int:
    return sum(1 for use in arg.uses if u.as_op(use.owner).name == name and use.operand_number == 0)


def _mark(func) -> int:
    block = func.regions[0].blocks[0]
    attrs = u.arg_attrs(func)
    n = 0
    for a, at in zip(block.arguments, attrs):
        if not tt.is_tensordesc(a.type) or TMA_ATTR in at:
            continue
        pad = PaddingOption(u.attr_int(at["tt.padding"])) if "tt.padding" in at else PaddingOption.PAD_ZERO
        loads, stores = _direct_uses(a, tt.DESCRIPTOR_LOAD), _direct_uses(a, tt.DESCRIPTOR_STORE)
        if tma_capable(a.type, pad) or not loads + stores:
            continue
        # TMA stores write whole 16-byte chunks: past an inner dim whose bytes are not a multiple of 16, they would
        # overwrite what follows it; only an inner dim the JIT saw span a multiple of 16 bytes is sure not to be one
        if stores and u.attr_int(at.get("tt.divisibility")) != 16:
            continue
        at[TMA_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)  # expanded next (then 1)
        n += 1
    if n:
        func.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in attrs])
    return n


def _device_capable(make, info) -> str:
    """Why a ``tt.make_tensor_descriptor`` cannot be a TMA tensor map made on the device ("" when it can): the
    checks of :func:`tma_capable`, every use a load / store directly on it, a base and leading strides provably
    16-byte aligned (TMA's requirement: the pointer path has none), and for a store an inner extent of a multiple of
    16 bytes -- provably: by ``info`` (an AxisInfoAnalysis: the JIT's divisibility of pointers and integers)."""
    res = make.results[0]
    pad = tt.decode_attributes(make).get("padding", PaddingOption.PAD_ZERO)
    why = tma_capable(res.type, pad)
    if why:
        return why
    rank = len(tt.shape_of(tt.desc_block_type(res.type)))
    if rank != 2:
        return f"a {rank}-D block made on the device (tensor maps written on the device here are 2-D)"
    uses = [(u.as_op(x.owner).name, x.operand_number) for x in res.uses]
    if not uses or any(n not in (tt.DESCRIPTOR_LOAD, tt.DESCRIPTOR_STORE) or i != 0 for n, i in uses):
        return "a use other than a load or store on it (a loop-carried or selected descriptor)"
    base, shape, strides = tt.split_operands(make)
    elems = max(1, 16 // element_bytes(tt.elem_of(tt.desc_block_type(res.type))))  # 16 bytes, in elements

    def divisible(v, k):
        return info.divisibility(v, 0) % k == 0

    if not divisible(base, 16):
        return "a base not known to be 16-byte aligned"
    if not all(divisible(s, elems) for s in strides[:-1]):
        return "leading strides not known to be multiples of 16 bytes"
    if any(n == tt.DESCRIPTOR_STORE for n, _ in uses) and not divisible(shape[-1], elems):
        return "stores through an inner extent not known to be a multiple of 16 bytes (TMA writes 16-byte chunks)"
    return ""


def _squeeze(func) -> int:
    """The loads and stores on the marked parameters whose block has leading 1 dims (``[1, R, C]``) move ``[R, C]``
    tiles: ``reshape(descriptor_load) `` / ``descriptor_store(reshape(v))``, so that the kernel's own reshape to 2-D
    (Liger's ``tl.reshape(desc.load([b, m, k]), [BM, BK])``) folds away (combine) and the tile reaches a dot or a
    store from the TMA buffer as a 2-D one does.  Returns how many were rewritten."""
    block = func.regions[0].blocks[0]
    n = 0
    for a, at in zip(block.arguments, u.arg_attrs(func)):
        if TMA_ATTR not in at or len(tt.shape_of(tt.desc_block_type(a.type))) == 2:
            continue
        for use in list(a.uses):
            op = u.as_op(use.owner)
            if use.operand_number != 0 or op.name not in (tt.DESCRIPTOR_LOAD, tt.DESCRIPTOR_STORE):
                continue
            if op.name == tt.DESCRIPTOR_LOAD:
                full = op.results[0].type
                tile = ir.RankedTensorType.get(tt.squeezed_shape(tt.shape_of(full)), tt.elem_of(full),
                                               loc=op.location)
                if tile == full:
                    continue
                new = u.create_op(op.name, list(op.operands), [tile], u.copy_attributes(op), loc=op.location,
                                  before=op)
                back = u.create_op(tt.RESHAPE, [new.results[0]], [full], loc=op.location, before=op)
                u.replace_op(op, [back.results[0]])
            else:
                src = op.operands[1]
                tile = ir.RankedTensorType.get(tt.squeezed_shape(tt.shape_of(src.type)), tt.elem_of(src.type),
                                               loc=op.location)
                if tile == src.type:
                    continue
                op.operands[1] = u.create_op(tt.RESHAPE, [src], [tile], loc=op.location, before=op).results[0]
            n += 1
    return n


def _mark_device(func) -> int:
    makes = [op for op in u.walk(func) if op.name == tt.MAKE_TENSOR_DESCRIPTOR and TMA_ATTR not in op.attributes]
    if not makes:
        return 0
    from ..analysis.axis_info import AxisInfoAnalysis

    info = AxisInfoAnalysis(func)
    n = 0
    for op in makes:
        why = _device_capable(op, info)
        if why:
            log.debug("descriptor at %s not a TMA tensor map: %s", tt.loc_str(op), why)
            continue
        op.attributes[TMA_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
        n += 1
    return n


def is_tma_desc(value) -> bool:
    """A TMA tensor map: a kernel parameter kept as one (a block argument of a function entry marked ``tt.tma``) or
    a ``tt.make_tensor_descriptor`` marked ``tt.tma`` (made on the device, in global scratch)."""
    if not isinstance(value.owner, ir.Block):
        op = u.as_op(value.owner)
        return op.name == tt.MAKE_TENSOR_DESCRIPTOR and TMA_ATTR in op.attributes
    arg = ir.BlockArgument(value)
    parent = u.as_op(arg.owner.owner)
    if parent.name != "func.func":
        return False
    attrs = u.arg_attrs(parent)
    return arg.arg_number < len(attrs) and TMA_ATTR in attrs[arg.arg_number]


@u.in_context
def tma_descriptor_args(root) -> int:
    """Mark the TMA-capable descriptor parameters of every public function under ``root`` and expand all of them
    (the marked ones keep their parameter, see the module doc); returns how many were marked."""
    funcs = list(u.public_functions(root))
    n = sum(_mark(op) for op in funcs)
    for op in funcs:
        _squeeze(op)
    expand_tensor_descriptor_args(root)
    for op in u.walk(root):
        if op.name == "func.func" and op.regions[0].blocks:
            n += _mark_device(op)
    return n


tma_descriptor_args_pass = pass_entry("tritium-tma-descriptor-args", tma_descriptor_args)
