"""The ``tt`` dialect: one table of every TTIR op, its operands, results, attributes and properties.

The table is the single definition of an op.  From it we derive

* the IRDL module that registers the dialect with an MLIR context (:func:`irdl_source`),
* the properties the core's own CSE / DCE / LICM read (:func:`op_def`, ``pure``, ``effects``),
* the Python verifiers whose messages say what is wrong (:func:`verify_module`).

Conventions (they follow from what IRDL ops can express, see docs/ARCHITECTURE.md):

* ops print in MLIR generic form; attributes are discardable ones (``{axis = 0 : i32}``);
* an op with more than one optional / variadic operand group carries ``operandSegmentSizes``;
* ``tt.reduce`` / ``tt.scan`` name their combine function with a symbol reference attribute
  ``combine = @fn`` to a private ``func.func`` (IRDL ops cannot hold a region with a terminator of ours);
* pointers are ``!tt.ptr<T>``; a tensor of pointers is ``tensor<128x!tt.ptr<f32>>``; a block pointer is
  ``!tt.ptr<tensor<64x64xf16>>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Optional

# Operand / result group kinds.  VARIADIC values all share one type (IRDL binds a group's constraint variable
# to the first value's type); MIXED is a variadic group whose values may differ in type (reduce over values and
# indices, print of several tensors).  IRDL cannot say that, so a MIXED group is encoded as MIXED_SLOTS optional
# groups of their own; ``segment_attributes`` fills in the segment sizes, and readers see one flat group.
SINGLE, OPTIONAL, VARIADIC, MIXED = "single", "optional", "variadic", "mixed"
MIXED_SLOTS = 8

# Memory effects.
READ, WRITE = "read", "write"


@dataclass(frozen=True)
class OpDef:
    """One tt op.  ``operands``/``results`` are ``(name, kind)`` pairs; ``attrs`` documents the attributes."""

    name: str
    operands: tuple = ()
    results: tuple = (("result", SINGLE),)
    attrs: tuple = ()
    pure: bool = True
    effects: frozenset = frozenset()
    commutative: bool = False
    doc: str = ""
    verify: Optional[Callable] = field(default=None, compare=False, repr=False)

    @property
    def full_name(self) -> str:
        return "tt." + self.name

    @property
    def needs_operand_segments(self) -> bool:
        return len([k for _, k in _irdl_groups(self.operands) if k != SINGLE]) > 1

    @property
    def needs_result_segments(self) -> bool:
        return len([k for _, k in _irdl_groups(self.results) if k != SINGLE]) > 1


def _irdl_groups(groups) -> list:
    """The groups as IRDL sees them: a MIXED group becomes MIXED_SLOTS optional groups."""
    out = []
    for name, kind in groups:
        if kind == MIXED:
            out.extend((f"{name}_{i}", OPTIONAL) for i in range(MIXED_SLOTS))
        else:
            out.append((name, kind))
    return out


def _segment_sizes(groups, sizes: dict) -> list:
    """IRDL segment sizes for ``sizes`` (group name -> number of values) of the table's ``groups``."""
    out = []
    for name, kind in groups:
        n = sizes.get(name, 1 if kind == SINGLE else 0)
        if kind == MIXED:
            if n > MIXED_SLOTS:
                raise VerificationError(f"'{name}' takes at most {MIXED_SLOTS} values, got {n}")
            out.extend([1] * n + [0] * (MIXED_SLOTS - n))
        else:
            out.append(n)
    return out


def segment_attributes(name: str, n_operands: int, n_results: int, attributes: dict, context=None) -> dict:
    """Add the ``operandSegmentSizes`` / ``resultSegmentSizes`` an op with a MIXED group needs.

    Only ops whose one non-single group is MIXED are filled in (their flat operand list says it all); ops with
    several optional groups (load, store, ...) must pass their segment sizes themselves.
    """
    from mlir import ir

    opdef = _BY_NAME.get(name)
    if opdef is None:
        return attributes
    attributes = dict(attributes)
    for groups, n, key in ((opdef.operands, n_operands, "operandSegmentSizes"),
                           (opdef.results, n_results, "resultSegmentSizes")):
        mixed = [g for g, k in groups if k == MIXED]
        if not mixed or key in attributes:
            continue
        n_single = sum(k == SINGLE for _, k in groups)
        sizes = _segment_sizes(groups, {mixed[0]: n - n_single})
        attributes[key] = ir.DenseI32ArrayAttr.get(sizes, context)
    return attributes


def create_op(name: str, operands=(), results=(), attributes=None, **kwargs):
    """``ir.Operation.create`` for tt ops, filling in the segment sizes MIXED groups need."""
    from mlir import ir

    attrs = segment_attributes(name, len(operands), len(results), attributes or {})
    return ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attrs, **kwargs)


from ..errors import VerificationError  # noqa: E402,F401  (defined with every other error)


# ----------------------------------------------------------------------------------------------
# Type helpers.  They work on ``mlir.ir.Type`` objects and are imported lazily by callers.
# ----------------------------------------------------------------------------------------------

def is_ptr(ty) -> bool:
    return str(ty).startswith("!tt.ptr<")


@lru_cache(maxsize=None)
def _pointee_str(s: str) -> str:
    return s[len("!tt.ptr<"):-1]


def pointee(ty):
    """The element type a ``!tt.ptr<T>`` points to."""
    from mlir import ir

    return ir.Type.parse(_pointee_str(str(ty)), ty.context)


def ptr_type(elem):
    from mlir import ir

    return ir.Type.parse(f"!tt.ptr<{elem}>", elem.context)


def is_tensor(ty) -> bool:
    from mlir import ir

    return isinstance(ty, ir.RankedTensorType)


def as_tensor(ty):
    from mlir import ir

    return ty if isinstance(ty, ir.RankedTensorType) else ir.RankedTensorType(ty)


def shape_of(ty) -> tuple:
    """Shape of a tensor type, ``()`` for a scalar."""
    return tuple(as_tensor(ty).shape) if is_tensor(ty) else ()


def elem_of(ty):
    """Element type of a tensor type, the type itself for a scalar."""
    return as_tensor(ty).element_type if is_tensor(ty) else ty


def is_int(ty) -> bool:
    from mlir import ir

    return isinstance(ty, ir.IntegerType)


def is_index(ty) -> bool:
    from mlir import ir

    return isinstance(ty, ir.IndexType)


def int_width(ty) -> int:
    from mlir import ir

    return ir.IntegerType(ty).width


def is_float(ty) -> bool:
    from mlir import ir

    return isinstance(ty, ir.FloatType)


def is_fp8(ty) -> bool:
    """An 8-bit float element type (f8E4M3FN, f8E5M2, ...)."""
    from mlir import ir

    return isinstance(ty, ir.FloatType) and ty.width == 8


# ----------------------------------------------------------------------------------------------
# Verifiers.  Each takes the op (an ``ir.OpView``/``ir.Operation``) and returns None or an error string.
# ----------------------------------------------------------------------------------------------

def _attr_int(op, name, default=None):
    if name not in op.attributes:
        return default
    return int(op.attributes[name].value)


def operand_groups(op) -> dict:
    """``group name -> list of operands`` of a tt op, by its table entry (honours operandSegmentSizes)."""
    return _operand_groups(op, _BY_NAME[op.name])


def _operand_groups(op, opdef: OpDef) -> dict:
    """Split an op's operands by its declared groups (honours operandSegmentSizes)."""
    operands = list(op.operands)
    groups = {}
    if opdef.needs_operand_segments:
        sizes = list(op.attributes["operandSegmentSizes"])
        pos = 0
        for (name, _), n in zip(_irdl_groups(opdef.operands), sizes):
            name = name.rsplit("_", 1)[0] if name not in dict(opdef.operands) else name
            groups.setdefault(name, []).extend(operands[pos:pos + n])
            pos += n
        return groups
    n_var = len(operands) - sum(kind == SINGLE for _, kind in opdef.operands)
    pos = 0
    for name, kind in opdef.operands:
        n = 1 if kind == SINGLE else n_var
        groups[name] = operands[pos:pos + n]
        pos += n
    return groups


def _same_shape(a, b) -> bool:
    return shape_of(a) == shape_of(b)


def _v_program_id(op, g):
    axis = _attr_int(op, "axis")
    if axis not in (0, 1, 2):
        return f"axis must be 0, 1 or 2, got {axis}"
    if str(op.results[0].type) != "i32":
        return f"result must be i32, got {op.results[0].type}"


def _v_make_range(op, g):
    start, end = _attr_int(op, "start"), _attr_int(op, "end")
    if start is None or end is None:
        return "needs integer attributes start and end"
    if end <= start:
        return f"end ({end}) must be greater than start ({start})"
    ty = op.results[0].type
    if not is_tensor(ty) or shape_of(ty) != (end - start,) or str(elem_of(ty)) != "i32":
        return f"result must be tensor<{end - start}xi32>, got {ty}"


def _v_splat(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if is_tensor(src):
        return f"operand must be a scalar, got {src}"
    if not is_tensor(res) or elem_of(res) != src:
        return f"result must be a tensor of {src}, got {res}"


def _v_broadcast(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if elem_of(src) != elem_of(res):
        return f"element types differ: {src} vs {res}"
    s, r = shape_of(src), shape_of(res)
    if len(s) != len(r):
        return f"source rank {len(s)} differs from result rank {len(r)}"
    for i, (a, b) in enumerate(zip(s, r)):
        if a != b and a != 1:
            return f"dimension {i} of size {a} cannot be broadcast to {b}"


def _v_expand_dims(op, g):
    src, res = op.operands[0].type, op.results[0].type
    axis = _attr_int(op, "axis")
    s = list(shape_of(src))
    if axis is None or not 0 <= axis <= len(s):
        return f"axis {axis} out of range for rank {len(s)}"
    s.insert(axis, 1)
    if tuple(s) != shape_of(res) or elem_of(src) != elem_of(res):
        return f"result must have shape {tuple(s)} and element type {elem_of(src)}, got {res}"


def numel(shape) -> int:
    """The number of elements of a shape (1 for a scalar's empty shape)."""
    n = 1
    for d in shape:
        n *= int(d)
    return n


_numel = numel


def _v_reshape(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if _numel(shape_of(src)) != _numel(shape_of(res)):
        return f"cannot reshape {shape_of(src)} ({_numel(shape_of(src))} elements) to {shape_of(res)}"
    if elem_of(src) != elem_of(res):
        return f"element types differ: {src} vs {res}"


def _v_trans(op, g):
    src, res = op.operands[0].type, op.results[0].type
    order = list(op.attributes["order"]) if "order" in op.attributes else None
    s = shape_of(src)
    if order is None or sorted(order) != list(range(len(s))):
        return f"order {order} is not a permutation of the {len(s)} dimensions"
    if tuple(s[i] for i in order) != shape_of(res):
        return f"result shape must be {tuple(s[i] for i in order)}, got {shape_of(res)}"


def _v_cat(op, g):
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    if shape_of(a) != shape_of(b) or elem_of(a) != elem_of(b):
        return f"operands must have the same type, got {a} and {b}"
    sa = shape_of(a)
    if not sa or shape_of(res) != (sa[0] * 2,) + sa[1:]:
        return f"result shape must be {(sa[0] * 2,) + sa[1:] if sa else '?'}, got {shape_of(res)}"


def _v_join(op, g):
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    if a != b:
        return f"operands must have the same type, got {a} and {b}"
    if shape_of(res) != shape_of(a) + (2,):
        return f"result shape must be {shape_of(a) + (2,)}, got {shape_of(res)}"


def _v_split(op, g):
    src = op.operands[0].type
    s = shape_of(src)
    if not s or s[-1] != 2:
        return f"the last dimension of the operand must be 2, got shape {s}"
    for r in op.results:
        if shape_of(r.type) != s[:-1] or elem_of(r.type) != elem_of(src):
            return f"results must have shape {s[:-1]}, got {r.type}"


def _v_addptr(op, g):
    ptr, off, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    if not is_ptr(elem_of(ptr)):
        return f"first operand must be a pointer or a tensor of pointers, got {ptr}"
    if not is_int(elem_of(off)):
        return f"offset must be an integer or a tensor of integers, got {off}"
    if not _same_shape(ptr, off):
        return f"pointer shape {shape_of(ptr)} and offset shape {shape_of(off)} differ"
    if res != ptr:
        return f"result type {res} must equal the pointer type {ptr}"


def _v_load(op, g):
    (ptr,), res = g["ptr"], op.results[0].type
    pty = ptr.type
    if is_ptr(pty) and is_tensor(pointee(pty)):  # block pointer
        if pointee(pty) != res:
            return f"a block pointer to {pointee(pty)} loads that type, not {res}"
        return None
    if not is_ptr(elem_of(pty)):
        return f"pointer operand must be a pointer or a tensor of pointers, got {pty}"
    if pointee(elem_of(pty)) != elem_of(res) or not _same_shape(pty, res):
        return f"result {res} does not match what {pty} points to"
    for m in g.get("mask", []):
        if str(elem_of(m.type)) != "i1" or not _same_shape(m.type, pty):
            return f"mask must be i1 with the pointer's shape {shape_of(pty)}, got {m.type}"
    for o in g.get("other", []):
        if o.type != res:
            return f"other must have the result type {res}, got {o.type}"


def _v_store(op, g):
    (ptr,), (val,) = g["ptr"], g["value"]
    pty = ptr.type
    if is_ptr(pty) and is_tensor(pointee(pty)):
        if pointee(pty) != val.type:
            return f"a block pointer to {pointee(pty)} stores that type, not {val.type}"
        return None
    if not is_ptr(elem_of(pty)):
        return f"pointer operand must be a pointer or a tensor of pointers, got {pty}"
    if pointee(elem_of(pty)) != elem_of(val.type) or not _same_shape(pty, val.type):
        return f"value {val.type} does not match what {pty} points to"
    for m in g.get("mask", []):
        if str(elem_of(m.type)) != "i1" or not _same_shape(m.type, pty):
            return f"mask must be i1 with the pointer's shape {shape_of(pty)}, got {m.type}"


def _v_atomic(op, g):
    ptr = op.operands[0].type
    if not is_ptr(elem_of(ptr)):
        return f"pointer operand must be a pointer or a tensor of pointers, got {ptr}"
    res = op.results[0].type
    if pointee(elem_of(ptr)) != elem_of(res) or not _same_shape(ptr, res):
        return f"result {res} does not match what {ptr} points to"


def _v_dot(op, g):
    a, b, c = (x.type for x in op.operands)
    sa, sb, sc = shape_of(a), shape_of(b), shape_of(c)
    if len(sa) not in (2, 3) or len(sa) != len(sb) or len(sa) != len(sc):
        return f"operands must be 2-D (or 3-D batched) tensors of equal rank, got {sa}, {sb}, {sc}"
    if sa[-1] != sb[-2]:
        return f"inner dimensions differ: a is {sa}, b is {sb}"
    if sc[-2:] != (sa[-2], sb[-1]):
        return f"accumulator shape {sc} must be {(sa[-2], sb[-1])}"
    if op.results[0].type != c:
        return f"result type {op.results[0].type} must equal the accumulator type {c}"


def _v_reduce(op, g):
    axis = _attr_int(op, "axis")
    if "combine" not in op.attributes:
        return "needs a combine = @fn symbol reference"
    srcs = list(op.operands)
    if not srcs:
        return "needs at least one operand"
    s = shape_of(srcs[0].type)
    if axis is None or not 0 <= axis < len(s):
        return f"axis {axis} out of range for shape {s}"
    want = s[:axis] + s[axis + 1:]
    if len(op.results) != len(srcs):
        return f"{len(srcs)} operands but {len(op.results)} results"
    for x, r in zip(srcs, op.results):
        if shape_of(x.type) != s:
            return f"all operands must have shape {s}, got {x.type}"
        if shape_of(r.type) != want or elem_of(r.type) != elem_of(x.type):
            return f"result {r.type} must have shape {want} and element type {elem_of(x.type)}"


def _v_scan(op, g):
    axis = _attr_int(op, "axis")
    if "combine" not in op.attributes:
        return "needs a combine = @fn symbol reference"
    srcs = list(op.operands)
    s = shape_of(srcs[0].type) if srcs else ()
    if axis is None or not 0 <= axis < len(s):
        return f"axis {axis} out of range for shape {s}"
    for x, r in zip(srcs, op.results):
        if x.type != r.type:
            return f"result {r.type} must equal operand type {x.type}"


def _v_same_shape_operands_result(op, g):
    ref = op.results[0].type if len(op.results) else op.operands[0].type
    for x in op.operands:
        if not _same_shape(x.type, ref):
            return f"operand {x.type} and result {ref} shapes differ"


def _v_bitcast(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if not _same_shape(src, res):
        return f"shapes differ: {src} vs {res}"
    es, er = elem_of(src), elem_of(res)
    if is_ptr(es) != is_ptr(er):
        return f"cannot bitcast between a pointer and a non-pointer ({src} -> {res})"


def _v_int_to_ptr(op, g):
    if str(elem_of(op.operands[0].type)) != "i64" or not is_ptr(elem_of(op.results[0].type)):
        return f"converts i64 to a pointer, got {op.operands[0].type} -> {op.results[0].type}"


def _v_ptr_to_int(op, g):
    if not is_ptr(elem_of(op.operands[0].type)) or str(elem_of(op.results[0].type)) != "i64":
        return f"converts a pointer to i64, got {op.operands[0].type} -> {op.results[0].type}"


def _v_fp_to_fp(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if not (is_float(elem_of(src)) and is_float(elem_of(res))) or not _same_shape(src, res):
        return f"converts between float types of one shape, got {src} -> {res}"


def _v_make_tensor_ptr(op, g):
    base = op.operands[0].type
    if not is_ptr(base) or is_tensor(pointee(base)):
        return f"base must be a scalar pointer, got {base}"
    rank = len(g["shape"])
    if len(g["strides"]) != rank or len(g["offsets"]) != rank:
        return "shape, strides and offsets must have the same length"
    res = op.results[0].type
    if not is_ptr(res) or not is_tensor(pointee(res)) or len(shape_of(pointee(res))) != rank:
        return f"result must be a pointer to a rank-{rank} tensor, got {res}"


def _v_histogram(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if len(shape_of(src)) != 1 or len(shape_of(res)) != 1 or not is_int(elem_of(src)):
        return f"takes a 1-D integer tensor to a 1-D tensor, got {src} -> {res}"


# ----------------------------------------------------------------------------------------------
# The table.
# ----------------------------------------------------------------------------------------------

_S, _O, _V, _M = SINGLE, OPTIONAL, VARIADIC, MIXED
_NONE = ()
_RW = frozenset({READ, WRITE})

OPS: tuple[OpDef, ...] = (
    # program identity
    OpDef("get_program_id", attrs=("axis",), verify=_v_program_id, doc="id of this program along axis"),
    OpDef("get_num_programs", attrs=("axis",), verify=_v_program_id, doc="grid size along axis"),
    OpDef("make_range", attrs=("start", "end"), verify=_v_make_range, doc="[start, end) as tensor<i32>"),
    # shape manipulation
    OpDef("splat", (("src", _S),), verify=_v_splat),
    OpDef("broadcast", (("src", _S),), verify=_v_broadcast),
    OpDef("expand_dims", (("src", _S),), attrs=("axis",), verify=_v_expand_dims),
    OpDef("reshape", (("src", _S),), attrs=("allow_reorder", "efficient_layout"), verify=_v_reshape),
    OpDef("trans", (("src", _S),), attrs=("order",), verify=_v_trans),
    OpDef("cat", (("lhs", _S), ("rhs", _S)), verify=_v_cat),
    OpDef("join", (("lhs", _S), ("rhs", _S)), verify=_v_join),
    OpDef("split", (("src", _S),), results=(("out_lhs", _S), ("out_rhs", _S)), verify=_v_split),
    OpDef("gather", (("src", _S), ("indices", _S)), attrs=("axis",)),
    # pointers and memory
    OpDef("addptr", (("ptr", _S), ("offset", _S)), verify=_v_addptr),
    OpDef("load", (("ptr", _S), ("mask", _O), ("other", _O)),
          attrs=("cache", "evict", "isVolatile", "boundaryCheck", "padding"),
          pure=False, effects=frozenset({READ}), verify=_v_load),
    OpDef("store", (("ptr", _S), ("value", _S), ("mask", _O)), results=_NONE,
          attrs=("cache", "evict", "boundaryCheck"), pure=False, effects=frozenset({WRITE}), verify=_v_store),
    OpDef("atomic_rmw", (("ptr", _S), ("val", _S), ("mask", _O)), attrs=("atomic_rmw_op", "sem", "scope"),
          pure=False, effects=_RW, verify=_v_atomic),
    OpDef("atomic_cas", (("ptr", _S), ("cmp", _S), ("val", _S)), attrs=("sem", "scope"),
          pure=False, effects=_RW, verify=_v_atomic),
    OpDef("make_tensor_ptr", (("base", _S), ("shape", _V), ("strides", _V), ("offsets", _V)), attrs=("order",),
          verify=_v_make_tensor_ptr),
    OpDef("advance", (("ptr", _S), ("offsets", _V))),
    OpDef("int_to_ptr", (("src", _S),), verify=_v_int_to_ptr),
    OpDef("ptr_to_int", (("src", _S),), verify=_v_ptr_to_int),
    # arithmetic
    OpDef("dot", (("a", _S), ("b", _S), ("c", _S)), attrs=("inputPrecision", "maxNumImpreciseAcc"), verify=_v_dot),
    OpDef("bitcast", (("src", _S),), verify=_v_bitcast),
    OpDef("fp_to_fp", (("src", _S),), attrs=("rounding",), verify=_v_fp_to_fp),
    OpDef("clampf", (("x", _S), ("min", _S), ("max", _S)), attrs=("propagateNan",),
          verify=_v_same_shape_operands_result),
    OpDef("precise_sqrt", (("x", _S),), verify=_v_same_shape_operands_result),
    OpDef("precise_divf", (("x", _S), ("y", _S)), verify=_v_same_shape_operands_result),
    OpDef("mulhiui", (("x", _S), ("y", _S)), commutative=True, verify=_v_same_shape_operands_result),
    OpDef("histogram", (("src", _S), ("mask", _O)), verify=_v_histogram),
    OpDef("extern_elementwise", (("srcs", _M),), attrs=("libname", "libpath", "symbol", "pure"),
          verify=_v_same_shape_operands_result),
    OpDef("elementwise_inline_asm", (("args", _M),), results=(("result", _M),),
          attrs=("asm_string", "constraints", "pure", "packed_element"), pure=False, effects=_RW),
    # reductions and scans: the combine function is a symbol reference to a private func.func that ends in
    # func.return.  Triton's tt.reduce.return / tt.scan.return have no counterpart: IRDL op names cannot
    # contain '.', and IRDL ops cannot be terminators (see the module docstring).
    OpDef("reduce", (("srcs", _M),), results=(("result", _M),), attrs=("axis", "combine"), verify=_v_reduce),
    OpDef("scan", (("srcs", _M),), results=(("result", _M),), attrs=("axis", "reverse", "combine"),
          verify=_v_scan),
    # debugging
    OpDef("print", (("args", _M),), results=_NONE, attrs=("prefix", "hex", "isSigned"),
          pure=False, effects=_RW),
    OpDef("assert", (("condition", _S),), results=_NONE, attrs=("message",), pure=False, effects=_RW),
)

_BY_NAME = {op.full_name: op for op in OPS}


def op_def(name: str) -> Optional[OpDef]:
    """The table entry of ``tt.<name>`` (full name), or None for ops of other dialects."""
    return _BY_NAME.get(name)



def irdl_parametric_lines(kind: str, name: str, params) -> list:
    """IRDL lines of an attribute or type (``kind``) with unconstrained ``params``."""
    lines = [f"  irdl.{kind} @{name} {{"]
    lines += [f"    %{i} = irdl.any" for i, _ in enumerate(params)]
    lines.append("    irdl.parameters(" + ", ".join(f"{p}: %{i}" for i, p in enumerate(params)) + ")")
    lines.append("  }")
    return lines


def irdl_operation_lines(ops) -> list:
    """IRDL lines of the ops of a table (every operand/result unconstrained; MIXED groups expanded)."""
    lines = []
    for op in ops:
        lines.append(f"  irdl.operation @{op.name} {{")
        n = 0
        for group, tag in ((_irdl_groups(op.operands), "operands"), (_irdl_groups(op.results), "results")):
            if not group:
                continue
            parts = []
            for gname, kind in group:
                lines.append(f"    %{n} = irdl.any")
                prefix = "" if kind == SINGLE else kind + " "
                parts.append(f"{gname}: {prefix}%{n}")
                n += 1
            lines.append(f"    irdl.{tag}({', '.join(parts)})")
        lines.append("  }")
    return lines


def irdl_source() -> str:
    """The IRDL module that defines the dialect (generated from the table)."""
    lines = ["irdl.dialect @tt {", *irdl_parametric_lines("type", "ptr", ["pointee"]), *irdl_operation_lines(OPS), "}"]
    return "\n".join(lines)


def load_dialect(context) -> None:
    """Register the tt dialect (IRDL) with ``context``.  Idempotent per context."""
    from mlir import ir
    from mlir.dialects import irdl

    if getattr(context, "_tritium_tt_loaded", False):  # pragma: no cover - nanobind objects reject attrs
        return
    with context:
        irdl.load_dialects(ir.Module.parse(irdl_source()))


def loc_str(where) -> str:
    """An op's (or a Location's) source location as text: ``"kernel.py":12:8`` without the ``loc(...)``."""
    loc = str(getattr(where, "location", where))
    return loc[4:-1] if loc.startswith("loc(") else loc


_loc_str = loc_str


def verify_op(op) -> Optional[str]:
    """Run the table's verifier on one op; returns an error message or None."""
    opdef = _BY_NAME.get(op.name)
    if opdef is None or opdef.verify is None:
        return None
    try:
        groups = _operand_groups(op, opdef)
        return opdef.verify(op, groups)
    except Exception as e:  # a malformed op must still give a message, never a crash
        return f"malformed op: {e}"


def verify_module(module) -> None:
    """Verify every op of ``module``: upstream (IRDL arity) first, then the table's verifiers.

    Raises :class:`VerificationError` naming the op, its location and what is wrong.
    """
    from mlir import ir

    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise VerificationError(str(e)) from None
    errors = []

    def walk(op):
        op = op.operation if hasattr(op, "operation") else op
        msg = verify_op(op)
        if msg:
            errors.append(f"'{op.name}' at {_loc_str(op)}: {msg}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(walk)
    if errors:
        raise VerificationError("\n".join(errors))
