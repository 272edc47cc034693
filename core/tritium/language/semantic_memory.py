"""tl's semantic rules for memory: loads, stores and atomics through pointers, block pointers, tensor descriptors
(built on :mod:`.semantic_core`; gathered by :mod:`.semantic`).
"""
from __future__ import annotations

from . import core as tl
from .core import SemanticError, _unwrap, block_type, dtype, pointer_type, tensor
from .semantic_core import (_b, _enums, _keyword, _result, _scalar_like, _shape_arg, _with_shape,
                            broadcast_impl_shape, cast, constant, splat, to_tensor)


# ----------------------------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------------------------

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
