"""The ``tt`` dialect: one table of every TTIR op, its operands, results, attributes and properties.

The table (:data:`OPS`, one :class:`OpDef` per op) is the single definition of an op.  From it we derive

* the IRDL module that registers the dialect with an MLIR context (:func:`irdl_source`), with the type and
  required-attribute constraints IRDL can check (:class:`TypeConstraint`, :func:`required`);
* op name constants: for every op ``tt.<name>`` the module constant ``<NAME>`` (``tt.LOAD == "tt.load"``,
  ``tt.ATOMIC_RMW == "tt.atomic_rmw"``), generated from the table; :mod:`tritium.dialects.ttg` does the same for
  its ops (``ttg.CONVERT_LAYOUT``);
* the properties the core's own CSE / DCE / LICM read (:func:`op_def`: ``pure``, ``effects``, ``commutative``,
  ``elementwise``);
* decoding an op by its table entry: :func:`operand_groups` / :func:`split_operands` (operands by group) and
  :func:`decode_attributes` (attributes as enums / ints / bools / strings / tuples);
* the Python verifiers whose messages say what is wrong (:func:`verify_module`): every op has IRDL constraints,
  a verifier, or both; enumerated attributes must hold a value of their enum (:mod:`tritium.dialects.enums`).

Conventions (they follow from what IRDL ops can express, see docs/ARCHITECTURE.md):

* ops print in MLIR generic form; attributes are discardable ones (``{axis = 0 : i32}``);
* an op with more than one optional / variadic operand group carries ``operandSegmentSizes``;
* ``tt.reduce`` / ``tt.scan`` name their combine function with a symbol reference attribute
  ``combine = @fn`` to a private ``func.func`` (IRDL ops cannot hold a region with a terminator of ours);
* pointers are ``!tt.ptr<T>``; a tensor of pointers is ``tensor<128x!tt.ptr<f32>>``; a block pointer is
  ``!tt.ptr<tensor<64x64xf16>>``; a tensor descriptor is ``!tt.tensordesc<tensor<64x64xf16>>`` (the block it
  loads and stores).

What IRDL (MLIR 22) can check, and so the table declares as constraints: a type equal to one type
(``irdl.is i32``), a type of one kind (``irdl.base "!builtin.tensor"``, ``irdl.base @tt::@ptr``), several groups
of one type (one constraint variable), attributes that must be present (``irdl.attributes``, required only).  It
cannot say "a tensor of i32" (``irdl.parametric`` takes IRDL-defined types only) nor "i64 or a tensor"
(``irdl.any_of`` over an ``irdl.base`` aborts the process while loading), so those rules are verifiers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import Callable, Mapping, Optional

from .enums import (CacheModifier, EvictionPolicy, InputPrecision, MemSemantic, MemSyncScope, PaddingOption,
                    ProgramIDDim, PropagateNan, RMWOp, RoundingMode)
from ..errors import VerificationError  # noqa: F401  (defined with every other error; re-exported here)

# Operand / result group kinds.  VARIADIC values all share one type (IRDL binds a group's constraint variable
# to the first value's type); MIXED is a variadic group whose values may differ in type (reduce over values and
# indices, print of several tensors).  IRDL cannot say that, so a MIXED group is encoded as MIXED_SLOTS optional
# groups of their own; ``segment_attributes`` fills in the segment sizes, and readers see one flat group.
SINGLE, OPTIONAL, VARIADIC, MIXED = "single", "optional", "variadic", "mixed"
MIXED_SLOTS = 8

# Memory effects.
READ, WRITE = "read", "write"


# ----------------------------------------------------------------------------------------------
# Attribute kinds and type constraints
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AttrKind:
    """What an attribute holds in TTIR (``mlir_class``, the Python bindings' attribute class) and as what
    :func:`decode_attributes` returns it (``decode``).  An enum attribute's kind is the enum class itself."""

    name: str
    mlir_class: str
    decode: Callable = field(compare=False)
    irdl_base: str = ""

    def __repr__(self) -> str:
        return self.name


I32 = AttrKind("i32", "IntegerAttr", lambda a: int(a.value), '"#builtin.integer"')
BOOL = AttrKind("bool", "BoolAttr", lambda a: bool(a.value), '"#builtin.integer"')
STR = AttrKind("string", "StringAttr", lambda a: a.value, '"#builtin.string"')
SYMBOL = AttrKind("symbol", "FlatSymbolRefAttr", lambda a: a.value, '"#builtin.symbol_ref"')
I32_ARRAY = AttrKind("i32 array", "DenseI32ArrayAttr", lambda a: tuple(a), '"#builtin.dense_array"')


@dataclass(frozen=True)
class Required:
    """An attribute every op of its kind carries (IRDL checks it is there): ``required(I32)``."""

    kind: object


def required(kind) -> Required:
    return Required(kind)


@dataclass(frozen=True)
class TypeConstraint:
    """The IRDL constraint on the types of one operand / result group.

    ``text`` says what it accepts (docs, messages); ``irdl`` is the IRDL constraint op (``irdl.is i32``);
    groups naming the same ``var`` must all have one type (one IRDL constraint variable)."""

    text: str
    irdl: str = "irdl.any"
    var: str = ""

    def __repr__(self) -> str:
        return f"{self.var}: {self.text}" if self.var else self.text


ANY = TypeConstraint("any")
I32_TYPE = TypeConstraint("i32", "irdl.is i32")
I64_TYPE = TypeConstraint("i64", "irdl.is i64")
I1_TYPE = TypeConstraint("i1", "irdl.is i1")
TENSOR = TypeConstraint("tensor", 'irdl.base "!builtin.tensor"')
PTR = TypeConstraint("!tt.ptr", "irdl.base @tt::@ptr")
DESC = TypeConstraint("!tt.tensordesc", "irdl.base @tt::@tensordesc")


def same(var: str, of: TypeConstraint = ANY) -> TypeConstraint:
    """Every group constrained by ``same(var)`` has one type (which ``of`` constrains)."""
    return TypeConstraint(of.text, of.irdl, var)


# ----------------------------------------------------------------------------------------------
# The op definition
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpDef:
    """One tt op.

    ``operands`` / ``results``: ``(name, kind)`` pairs (SINGLE, OPTIONAL, VARIADIC, MIXED); ``types``: group
    name -> :class:`TypeConstraint` (IRDL; unlisted groups take any type); ``attrs``: attribute name -> kind
    (:data:`I32`, :data:`BOOL`, :data:`STR`, :data:`SYMBOL`, :data:`I32_ARRAY` or an enum of
    :mod:`tritium.dialects.enums`), wrapped in :func:`required` when every op carries it; ``pure`` /
    ``effects`` / ``commutative`` / ``elementwise`` (same-shaped operands and result, computed per element) for
    the passes; ``doc``: one line; ``verify(op, groups) -> message or None`` for what IRDL cannot check."""

    name: str
    operands: tuple = ()
    results: tuple = (("result", SINGLE),)
    attrs: Mapping = field(default_factory=dict, compare=False)
    types: Mapping = field(default_factory=dict, compare=False)
    pure: bool = True
    effects: frozenset = frozenset()
    commutative: bool = False
    elementwise: bool = False
    doc: str = ""
    verify: Optional[Callable] = field(default=None, compare=False, repr=False)

    dialect = "tt"

    @property
    def full_name(self) -> str:
        return f"{self.dialect}.{self.name}"

    @property
    def constant_name(self) -> str:
        """The name of the module constant holding :attr:`full_name` (``LOAD``)."""
        return self.name.upper()

    @property
    def needs_operand_segments(self) -> bool:
        return len([k for _, k in _irdl_groups(self.operands) if k != SINGLE]) > 1

    @property
    def needs_result_segments(self) -> bool:
        return len([k for _, k in _irdl_groups(self.results) if k != SINGLE]) > 1

    def attr_kind(self, name: str):
        """The kind of attribute ``name`` (None when the table does not declare it)."""
        kind = self.attrs.get(name)
        return kind.kind if isinstance(kind, Required) else kind

    @property
    def required_attrs(self) -> tuple:
        return tuple(n for n, k in self.attrs.items() if isinstance(k, Required))


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

    opdef = _lookup(name)
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


def is_tensordesc(ty) -> bool:
    """A tensor descriptor type ``!tt.tensordesc<tensor<64x64xf16>>`` (``tl.make_tensor_descriptor``)."""
    return str(ty).startswith("!tt.tensordesc<")


def desc_block_type(ty):
    """The block type (``tensor<64x64xf16>``) a ``!tt.tensordesc<...>`` loads and stores."""
    from mlir import ir

    return ir.Type.parse(str(ty)[len("!tt.tensordesc<"):-1], ty.context)


def tensordesc_type(block):
    """``!tt.tensordesc<block>`` of a ranked tensor type ``block``."""
    from mlir import ir

    return ir.Type.parse(f"!tt.tensordesc<{block}>", block.context)


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


def is_float(ty) -> bool:
    from mlir import ir

    return isinstance(ty, ir.FloatType)


def is_fp8(ty) -> bool:
    """An 8-bit float element type (f8E4M3FN, f8E5M2, ...)."""
    from mlir import ir

    return isinstance(ty, ir.FloatType) and ty.width == 8


def numel(shape) -> int:
    """The number of elements of a shape (1 for a scalar's empty shape)."""
    n = 1
    for d in shape:
        n *= int(d)
    return n


def loc_str(where) -> str:
    """An op's (or a Location's) source location as text: ``"kernel.py":12:8`` without the ``loc(...)``."""
    loc = str(getattr(where, "location", where))
    return loc[4:-1] if loc.startswith("loc(") else loc


def source_of(loc):
    """``(file, line, col)`` of an MLIR location (the innermost callee of a call site), or None."""
    if loc.is_a_file():
        return loc.filename, loc.start_line, loc.start_col
    if loc.is_a_callsite():
        return source_of(loc.callee) or source_of(loc.caller)
    if loc.is_a_fused():
        for x in loc.locations:
            t = source_of(x)
            if t:
                return t
    if loc.is_a_name():
        return source_of(loc.child_loc)
    return None


# ----------------------------------------------------------------------------------------------
# Decoding an op by its table entry
# ----------------------------------------------------------------------------------------------

#: other dialects' op tables by prefix (``"ttg."`` -> its ``op_def``): ttg registers itself when imported (it
#: imports this module; a module holding ttg ops was made with ttg imported)
_OTHER_TABLES: dict = {}


def register_op_table(prefix: str, op_def: Callable[[str], Optional[OpDef]]) -> None:
    _OTHER_TABLES[prefix] = op_def


def _lookup(name: str) -> Optional[OpDef]:
    """The table entry of a tt or ttg op (full name), or None."""
    opdef = _BY_NAME.get(name)
    if opdef is None:
        other = _OTHER_TABLES.get(name[:name.find(".") + 1])
        if other is not None:
            opdef = other(name)
    return opdef


@lru_cache(maxsize=None)
def _group_layout(opdef: OpDef) -> tuple:
    """``(segmented, [(group name, kind, IRDL slots)])`` of an op's operand groups, computed once per op."""
    if opdef.needs_operand_segments:
        return True, tuple((name, kind, MIXED_SLOTS if kind == MIXED else 1) for name, kind in opdef.operands)
    return False, tuple((name, kind, 1) for name, kind in opdef.operands)


def _split(op, opdef: OpDef) -> list:
    """``[(name, kind, operands of the group)]`` in table order (honours ``operandSegmentSizes``)."""
    operands = list(op.operands)
    segmented, layout = _group_layout(opdef)
    out = []
    pos = 0
    if segmented:
        sizes = list(op.attributes["operandSegmentSizes"])
        slot = 0
        for name, kind, slots in layout:
            n = sum(sizes[slot:slot + slots])
            out.append((name, kind, operands[pos:pos + n]))
            pos += n
            slot += slots
        return out
    n_var = len(operands) - sum(kind == SINGLE for _, kind, _ in layout)
    for name, kind, _ in layout:
        n = 1 if kind == SINGLE else n_var
        out.append((name, kind, operands[pos:pos + n]))
        pos += n
    return out


def operand_groups(op) -> dict:
    """``group name -> list of operands`` of a tt / ttg op, by its table entry (honours operandSegmentSizes)."""
    op = getattr(op, "operation", op)
    return {name: vals for name, _, vals in _split(op, _lookup(op.name))}


def split_operands(op) -> tuple:
    """The operands of a tt / ttg op, one entry per operand group of its table entry, in table order: a SINGLE
    group's value, an OPTIONAL group's value or None, a VARIADIC / MIXED group's list of values.  (The shape in
    which lowering rules take their operands: ``rule(ctx, *split_operands(op), **decode_attributes(op))``.)"""
    op = getattr(op, "operation", op)
    out = []
    for _, kind, vals in _split(op, _lookup(op.name)):
        if kind == SINGLE:
            out.append(vals[0])
        elif kind == OPTIONAL:
            out.append(vals[0] if vals else None)
        else:
            out.append(vals)
    return tuple(out)


def _enum_decoder(cls):
    def decode(a):
        return cls(int(a.value))

    return decode


@lru_cache(maxsize=None)
def _attr_decoders(opdef: OpDef) -> tuple:
    """``[(attribute name, kind, the bindings' attribute class, decode)]`` of an op, computed once per op."""
    from mlir import ir

    out = []
    for name in opdef.attrs:
        kind = opdef.attr_kind(name)
        if isinstance(kind, type) and issubclass(kind, IntEnum):
            out.append((name, kind, ir.IntegerAttr, _enum_decoder(kind)))
        else:
            out.append((name, kind, getattr(ir, kind.mlir_class), kind.decode))
    return tuple(out)


def _kind_name(kind, article: bool = False) -> str:
    name = kind.__name__ if isinstance(kind, type) else kind.name
    return ("an " if name[0] in "aeiouAEIOU" else "a ") + name if article else name


def _decode(op, opdef: OpDef) -> tuple:
    """``(decoded attributes, None)``, or ``(None, what is wrong)`` for an attribute the op's table entry
    declares with another kind, or an enum value its enum does not have."""
    attrs = op.attributes
    out = {}
    for name, kind, cls, decode in _attr_decoders(opdef):
        if name not in attrs:
            continue
        a = attrs[name]
        if not isinstance(a, cls):
            return None, f"attribute {name} = {a} is not {_kind_name(kind, article=True)}"
        try:
            out[name] = decode(a)
        except ValueError:
            members = ", ".join(f"{m.value} {m.name}" for m in kind)
            return None, f"attribute {name} = {a} is not {_kind_name(kind, article=True)} (one of {members})"
    return out, None


def decode_attributes(op) -> dict:
    """The attributes of a tt / ttg op that its table entry declares and the op carries, decoded:
    ``name -> value``, an enum attribute as its :mod:`~tritium.dialects.enums` member (``CacheModifier.CG``),
    ``i32`` as ``int``, ``bool`` as ``bool``, strings and symbol references (without ``@``) as ``str``, i32 arrays
    as a tuple of ints.  Attributes the table does not declare (hints, ``allocation.offset``, segment sizes) are
    left out; so are declared ones the op does not carry (their consumers know the default).  ``{}`` for ops of
    other dialects.

    Raises :class:`VerificationError` naming the op and its location for an attribute of another kind than the
    table's or an enum value the enum does not have."""
    op = getattr(op, "operation", op)
    opdef = _lookup(op.name)
    if opdef is None:
        return {}
    out, error = _decode(op, opdef)
    if error:
        raise VerificationError(f"'{op.name}' at {loc_str(op)}: {error}")
    return out


# ----------------------------------------------------------------------------------------------
# Verifiers.  Each takes the op (an ``ir.Operation``) and its operand groups (name -> list) and returns None or
# an error string.  They run after IRDL's checks (arity, the table's type constraints, required attributes).
# ----------------------------------------------------------------------------------------------

def _attr_int(op, name, default=None):
    if name not in op.attributes:
        return default
    return int(op.attributes[name].value)


def _same_shape(a, b) -> bool:
    return shape_of(a) == shape_of(b)


def _is_i1(ty) -> bool:
    return str(elem_of(ty)) == "i1"


def _v_make_range(op, g):
    start, end = _attr_int(op, "start"), _attr_int(op, "end")
    if end <= start:
        return f"end ({end}) must be greater than start ({start})"
    ty = op.results[0].type
    if shape_of(ty) != (end - start,) or str(elem_of(ty)) != "i32":
        return f"result must be tensor<{end - start}xi32>, got {ty}"


def _v_splat(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if is_tensor(src):
        return f"operand must be a scalar, got {src}"
    if elem_of(res) != src:
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
    if not 0 <= axis <= len(s):
        return f"axis {axis} out of range for rank {len(s)}"
    s.insert(axis, 1)
    if tuple(s) != shape_of(res) or elem_of(src) != elem_of(res):
        return f"result must have shape {tuple(s)} and element type {elem_of(src)}, got {res}"


def _v_reshape(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if numel(shape_of(src)) != numel(shape_of(res)):
        return f"cannot reshape {shape_of(src)} ({numel(shape_of(src))} elements) to {shape_of(res)}"
    if elem_of(src) != elem_of(res):
        return f"element types differ: {src} vs {res}"


def _v_trans(op, g):
    src, res = op.operands[0].type, op.results[0].type
    order = list(op.attributes["order"])
    s = shape_of(src)
    if sorted(order) != list(range(len(s))):
        return f"order {order} is not a permutation of the {len(s)} dimensions"
    if tuple(s[i] for i in order) != shape_of(res):
        return f"result shape must be {tuple(s[i] for i in order)}, got {shape_of(res)}"


def _v_cat(op, g):
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    if shape_of(a) != shape_of(b) or elem_of(a) != elem_of(b):
        return f"operands must have the same type, got {a} and {b}"
    sa = shape_of(a)
    if shape_of(res) != (sa[0] * 2,) + sa[1:]:
        return f"result shape must be {(sa[0] * 2,) + sa[1:]}, got {shape_of(res)}"


def _v_join(op, g):
    a, res = op.operands[0].type, op.results[0].type
    if shape_of(res) != shape_of(a) + (2,) or elem_of(res) != elem_of(a):
        return f"result must have shape {shape_of(a) + (2,)} and element type {elem_of(a)}, got {res}"


def _v_split(op, g):
    src = op.operands[0].type
    s = shape_of(src)
    if s[-1] != 2:
        return f"the last dimension of the operand must be 2, got shape {s}"
    res = op.results[0].type
    if shape_of(res) != s[:-1] or elem_of(res) != elem_of(src):
        return f"results must have shape {s[:-1]} and element type {elem_of(src)}, got {res}"


def _v_gather(op, g):
    src, idx, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    axis = _attr_int(op, "axis")
    if len(shape_of(src)) != len(shape_of(idx)):
        return f"source and indices must have the same rank, got {src} and {idx}"
    if not 0 <= axis < len(shape_of(src)):
        return f"axis {axis} out of range for rank {len(shape_of(src))}"
    if not is_int(elem_of(idx)):
        return f"indices must be integers, got {idx}"
    if shape_of(res) != shape_of(idx) or elem_of(res) != elem_of(src):
        return f"result must have the indices' shape {shape_of(idx)} and element type {elem_of(src)}, got {res}"


def _v_addptr(op, g):
    ptr, off = op.operands[0].type, op.operands[1].type
    if not is_ptr(elem_of(ptr)):
        return f"first operand must be a pointer or a tensor of pointers, got {ptr}"
    if not is_int(elem_of(off)):
        return f"offset must be an integer or a tensor of integers, got {off}"
    if not _same_shape(ptr, off):
        return f"pointer shape {shape_of(ptr)} and offset shape {shape_of(off)} differ"


def _v_mask(g, pty):
    for m in g.get("mask", []):
        if not _is_i1(m.type) or not _same_shape(m.type, pty):
            return f"mask must be i1 with the pointer's shape {shape_of(pty)}, got {m.type}"


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
    for o in g.get("other", []):
        if o.type != res:
            return f"other must have the result type {res}, got {o.type}"
    return _v_mask(g, pty)


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
    return _v_mask(g, pty)


def _v_atomic(op, g):
    ptr = op.operands[0].type
    if not is_ptr(elem_of(ptr)):
        return f"pointer operand must be a pointer or a tensor of pointers, got {ptr}"
    res = op.results[0].type
    if pointee(elem_of(ptr)) != elem_of(res) or not _same_shape(ptr, res):
        return f"result {res} does not match what {ptr} points to"
    return _v_mask(g, ptr)


def _v_make_tensor_ptr(op, g):
    base = op.operands[0].type
    if is_tensor(pointee(base)):
        return f"base must be a scalar pointer, got {base}"
    rank = len(g["shape"])
    if len(g["strides"]) != rank or len(g["offsets"]) != rank:
        return "shape, strides and offsets must have the same length"
    res = op.results[0].type
    if not is_tensor(pointee(res)) or len(shape_of(pointee(res))) != rank:
        return f"result must be a pointer to a rank-{rank} tensor, got {res}"
    if elem_of(pointee(res)) != pointee(base):
        return f"result must point to a tensor of {pointee(base)}, got {res}"


def _v_advance(op, g):
    ptr = op.operands[0].type
    if not is_tensor(pointee(ptr)):
        return f"operand must be a block pointer (!tt.ptr<tensor<...>>), got {ptr}"
    rank = len(shape_of(pointee(ptr)))
    if len(g["offsets"]) != rank:
        return f"needs one offset per dimension ({rank}), got {len(g['offsets'])}"


def _v_make_tensor_descriptor(op, g):
    base, res = op.operands[0].type, op.results[0].type
    if is_tensor(pointee(base)):
        return f"base must be a scalar pointer, got {base}"
    if not is_tensordesc(res):
        return f"result must be a !tt.tensordesc<tensor<...>>, got {res}"
    block = desc_block_type(res)
    if not is_tensor(block):
        return f"a descriptor's block type must be a ranked tensor, got {block}"
    rank = len(shape_of(block))
    if len(g["shape"]) != rank or len(g["strides"]) != rank:
        return f"needs one shape and one stride per dimension of the block ({rank}), got {len(g['shape'])} and " \
               f"{len(g['strides'])}"
    if elem_of(block) != pointee(base):
        return f"the block's element type {elem_of(block)} differs from the base's {pointee(base)}"


def _v_descriptor_access(op, g, block_of_value):
    """The checks descriptor_load and descriptor_store share: one i32 index per dimension of the descriptor's
    block, and the loaded / stored value of the block's type, or of it without leading 1 dims (as in Triton: the
    TMA path loads a ``[1, R, C]`` block as an ``[R, C]`` tile)."""
    (desc,) = g["desc"]
    block = desc_block_type(desc.type)
    rank = len(shape_of(block))
    if len(g["indices"]) != rank:
        return f"needs one index per dimension of the block ({rank}), got {len(g['indices'])}"
    if block_of_value != block and not (elem_of(block_of_value) == elem_of(block) and
                                        squeezed_shape(shape_of(block_of_value)) == squeezed_shape(shape_of(block))):
        return f"the descriptor's block is {block}, not {block_of_value} (nor that block without leading 1 dims)"


def squeezed_shape(shape) -> tuple:
    """``shape`` without its leading 1 dims, down to rank 2 (a TMA tile of a ``[1, R, C]`` block is ``[R, C]``)."""
    shape = tuple(int(d) for d in shape)
    while len(shape) > 2 and shape[0] == 1:
        shape = shape[1:]
    return shape


def _v_descriptor_load(op, g):
    return _v_descriptor_access(op, g, op.results[0].type)


def _v_descriptor_store(op, g):
    return _v_descriptor_access(op, g, g["src"][0].type)


def _v_int_to_ptr(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if str(elem_of(src)) != "i64" or not is_ptr(elem_of(res)) or not _same_shape(src, res):
        return f"converts i64 to a pointer of the same shape, got {src} -> {res}"


def _v_ptr_to_int(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if not is_ptr(elem_of(src)) or str(elem_of(res)) != "i64" or not _same_shape(src, res):
        return f"converts a pointer to i64 of the same shape, got {src} -> {res}"


def _v_dot(op, g):
    a, b, c = (x.type for x in op.operands)
    sa, sb, sc = shape_of(a), shape_of(b), shape_of(c)
    if len(sa) not in (2, 3) or len(sa) != len(sb) or len(sa) != len(sc):
        return f"operands must be 2-D (or 3-D batched) tensors of equal rank, got {sa}, {sb}, {sc}"
    if sa[-1] != sb[-2]:
        return f"inner dimensions differ: a is {sa}, b is {sb}"
    if sc[-2:] != (sa[-2], sb[-1]):
        return f"accumulator shape {sc} must be {(sa[-2], sb[-1])}"


def _v_bitcast(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if not _same_shape(src, res):
        return f"shapes differ: {src} vs {res}"
    es, er = elem_of(src), elem_of(res)
    if is_ptr(es) != is_ptr(er):
        return f"cannot bitcast between a pointer and a non-pointer ({src} -> {res})"


def _v_fp_to_fp(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if not (is_float(elem_of(src)) and is_float(elem_of(res))) or not _same_shape(src, res):
        return f"converts between float types of one shape, got {src} -> {res}"


def _v_float_elementwise(op, g):
    ty = op.results[0].type
    if not is_float(elem_of(ty)):
        return f"operands must be floats, got {ty}"


def _v_int_elementwise(op, g):
    ty = op.results[0].type
    if not is_int(elem_of(ty)):
        return f"operands must be integers, got {ty}"


def _v_histogram(op, g):
    src, res = op.operands[0].type, op.results[0].type
    if len(shape_of(src)) != 1 or not is_int(elem_of(src)):
        return f"operand must be a 1-D integer tensor, got {src}"
    if len(shape_of(res)) != 1 or str(elem_of(res)) != "i32":
        return f"result must be a 1-D tensor of i32, got {res}"
    for m in g.get("mask", []):
        if not _is_i1(m.type) or not _same_shape(m.type, src):
            return f"mask must be i1 with the operand's shape {shape_of(src)}, got {m.type}"


def _v_same_shape_operands_result(op, g):
    ref = op.results[0].type
    for x in op.operands:
        if not _same_shape(x.type, ref):
            return f"operand {x.type} and result {ref} shapes differ"


def _v_inline_asm(op, g):
    shapes = {shape_of(x.type) for x in op.operands} | {shape_of(r.type) for r in op.results}
    if len(shapes) > 1:
        return f"arguments and results must have one shape, got {sorted(shapes)}"


def _v_along_axis(op, result_shape):
    """The checks reduce and scan share: one result per operand, all operands of one shape with ``axis`` in
    range, each result of ``result_shape(operand shape, axis)`` and its operand's element type."""
    axis = _attr_int(op, "axis")
    srcs = list(op.operands)
    if not srcs:
        return "needs at least one operand"
    s = shape_of(srcs[0].type)
    if not 0 <= axis < len(s):
        return f"axis {axis} out of range for shape {s}"
    if len(op.results) != len(srcs):
        return f"{len(srcs)} operands but {len(op.results)} results"
    want = result_shape(s, axis)
    for x, r in zip(srcs, op.results):
        if shape_of(x.type) != s:
            return f"all operands must have shape {s}, got {x.type}"
        if shape_of(r.type) != want or elem_of(r.type) != elem_of(x.type):
            return f"result {r.type} must have shape {want} and element type {elem_of(x.type)}"


def _v_reduce(op, g):
    return _v_along_axis(op, lambda s, axis: s[:axis] + s[axis + 1:])


def _v_scan(op, g):
    return _v_along_axis(op, lambda s, axis: s)


def _v_print(op, g):
    if "isSigned" in op.attributes and len(op.attributes["isSigned"]) != len(op.operands):
        return f"isSigned needs one entry per argument ({len(op.operands)})"


def _v_assert(op, g):
    if not _is_i1(op.operands[0].type):
        return f"condition must be i1 or a tensor of i1, got {op.operands[0].type}"


# ----------------------------------------------------------------------------------------------
# The table.
# ----------------------------------------------------------------------------------------------

_S, _O, _V, _M = SINGLE, OPTIONAL, VARIADIC, MIXED
_NONE = ()
_RW = frozenset({READ, WRITE})
_AXIS = {"axis": required(I32)}

OPS: tuple[OpDef, ...] = (
    # program identity
    OpDef("get_program_id", attrs={"axis": required(ProgramIDDim)}, types={"result": I32_TYPE},
          doc="the id of this program along a grid axis"),
    OpDef("get_num_programs", attrs={"axis": required(ProgramIDDim)}, types={"result": I32_TYPE},
          doc="the number of programs along a grid axis"),
    OpDef("make_range", attrs={"start": required(I32), "end": required(I32)}, types={"result": TENSOR},
          verify=_v_make_range, doc="the 1-D tensor<i32> start, start + 1, ..., end - 1"),
    # shape manipulation
    OpDef("splat", (("src", _S),), types={"result": TENSOR}, verify=_v_splat,
          doc="a tensor filled with one scalar"),
    OpDef("broadcast", (("src", _S),), types={"src": TENSOR, "result": TENSOR}, verify=_v_broadcast,
          doc="a tensor repeated along its size-1 dimensions"),
    OpDef("expand_dims", (("src", _S),), attrs=_AXIS, types={"src": TENSOR, "result": TENSOR},
          verify=_v_expand_dims, doc="a size-1 dimension inserted at axis"),
    OpDef("reshape", (("src", _S),), attrs={"allow_reorder": BOOL, "efficient_layout": BOOL},
          types={"src": TENSOR, "result": TENSOR}, verify=_v_reshape,
          doc="the same elements in another shape (allow_reorder: in any order)"),
    OpDef("trans", (("src", _S),), attrs={"order": required(I32_ARRAY)}, types={"src": TENSOR, "result": TENSOR},
          verify=_v_trans, doc="the dimensions permuted: result dimension i is source dimension order[i]"),
    OpDef("cat", (("lhs", _S), ("rhs", _S)), types={"lhs": TENSOR, "rhs": TENSOR, "result": TENSOR},
          verify=_v_cat, doc="two tensors concatenated along dimension 0"),
    OpDef("join", (("lhs", _S), ("rhs", _S)), types={"lhs": same("T", TENSOR), "rhs": same("T"), "result": TENSOR},
          verify=_v_join, doc="two tensors stacked along a new last dimension of size 2"),
    OpDef("split", (("src", _S),), results=(("out_lhs", _S), ("out_rhs", _S)),
          types={"src": TENSOR, "out_lhs": same("R", TENSOR), "out_rhs": same("R")}, verify=_v_split,
          doc="the two halves of a last dimension of size 2 (join's inverse)"),
    OpDef("gather", (("src", _S), ("indices", _S)), attrs=_AXIS,
          types={"src": TENSOR, "indices": TENSOR, "result": TENSOR}, verify=_v_gather,
          doc="src's elements at indices along axis (result[i] = src[.., indices[i], ..])"),
    # pointers and memory
    OpDef("addptr", (("ptr", _S), ("offset", _S)), types={"ptr": same("P"), "result": same("P")},
          elementwise=True, verify=_v_addptr, doc="pointer(s) advanced by offset elements of the pointee type"),
    OpDef("load", (("ptr", _S), ("mask", _O), ("other", _O)),
          attrs={"cache": CacheModifier, "evict": EvictionPolicy, "isVolatile": BOOL, "boundaryCheck": I32_ARRAY,
                 "padding": PaddingOption},
          pure=False, effects=frozenset({READ}), verify=_v_load,
          doc="read global memory through (a tensor of / a block) pointer(s); masked-off lanes give other"),
    OpDef("store", (("ptr", _S), ("value", _S), ("mask", _O)), results=_NONE,
          attrs={"cache": CacheModifier, "evict": EvictionPolicy, "boundaryCheck": I32_ARRAY},
          pure=False, effects=frozenset({WRITE}), verify=_v_store,
          doc="write global memory through (a tensor of / a block) pointer(s) where mask is set"),
    OpDef("atomic_rmw", (("ptr", _S), ("val", _S), ("mask", _O)),
          attrs={"atomic_rmw_op": RMWOp, "sem": MemSemantic, "scope": MemSyncScope},
          types={"val": same("V"), "result": same("V")}, pure=False, effects=_RW, verify=_v_atomic,
          doc="atomic read-modify-write (atomic_rmw_op) of global memory; returns the old values"),
    OpDef("atomic_cas", (("ptr", _S), ("cmp", _S), ("val", _S)), attrs={"sem": MemSemantic, "scope": MemSyncScope},
          types={"cmp": same("V"), "val": same("V"), "result": same("V")}, pure=False, effects=_RW,
          verify=_v_atomic, doc="atomic compare-and-swap of global memory; returns the old values"),
    OpDef("make_tensor_ptr", (("base", _S), ("shape", _V), ("strides", _V), ("offsets", _V)),
          attrs={"order": I32_ARRAY},
          types={"base": PTR, "shape": I64_TYPE, "strides": I64_TYPE, "offsets": I32_TYPE, "result": PTR},
          verify=_v_make_tensor_ptr, doc="a block pointer: a block of a strided tensor in global memory"),
    OpDef("advance", (("ptr", _S), ("offsets", _V)),
          types={"ptr": same("P", PTR), "offsets": I32_TYPE, "result": same("P")}, verify=_v_advance,
          doc="a block pointer moved by offsets (elements per dimension)"),
    # tensor descriptors (tl.make_tensor_descriptor, Triton's TMA abstraction): out-of-shape elements of a load
    # read the padding (0, or NaN for padding = 2), those of a store are dropped.  The cuda backend rewrites them
    # into block pointers (passes/ttir/rewrite_tensor_descriptor.py) before rewrite_tensor_pointer; a TMA
    # lowering (sm_90 cp.async.bulk.tensor) would take these ops before that rewrite.
    OpDef("make_tensor_descriptor", (("base", _S), ("shape", _V), ("strides", _V)), attrs={"padding": PaddingOption},
          types={"base": PTR, "shape": I32_TYPE, "strides": I64_TYPE, "result": DESC},
          verify=_v_make_tensor_descriptor,
          doc="a tensor descriptor: a strided tensor (shape, strides) in global memory, accessed by blocks"),
    OpDef("descriptor_load", (("desc", _S), ("indices", _V)), attrs={"cache": CacheModifier, "evict": EvictionPolicy},
          types={"desc": DESC, "indices": I32_TYPE, "result": TENSOR}, pure=False, effects=frozenset({READ}),
          verify=_v_descriptor_load,
          doc="the block of a descriptor at element indices; elements outside its shape read the padding"),
    OpDef("descriptor_store", (("desc", _S), ("src", _S), ("indices", _V)), results=_NONE,
          types={"desc": DESC, "src": TENSOR, "indices": I32_TYPE}, pure=False, effects=frozenset({WRITE}),
          verify=_v_descriptor_store,
          doc="write a block through a descriptor at element indices; elements outside its shape are dropped"),
    OpDef("int_to_ptr", (("src", _S),), elementwise=True, verify=_v_int_to_ptr,
          doc="i64 address(es) as pointer(s)"),
    OpDef("ptr_to_int", (("src", _S),), elementwise=True, verify=_v_ptr_to_int,
          doc="pointer(s) as i64 address(es)"),
    # arithmetic
    OpDef("dot", (("a", _S), ("b", _S), ("c", _S)), attrs={"inputPrecision": InputPrecision, "maxNumImpreciseAcc": I32},
          types={"a": TENSOR, "b": TENSOR, "c": same("C", TENSOR), "result": same("C")}, verify=_v_dot,
          doc="matrix product a @ b + c (batched for 3-D operands)"),
    OpDef("bitcast", (("src", _S),), elementwise=True, verify=_v_bitcast,
          doc="the same bits as another type of the same width"),
    OpDef("fp_to_fp", (("src", _S),), attrs={"rounding": RoundingMode}, elementwise=True, verify=_v_fp_to_fp,
          doc="float conversion with an explicit rounding mode (fp8 casts, rtz downcasts)"),
    OpDef("clampf", (("x", _S), ("min", _S), ("max", _S)), attrs={"propagateNan": PropagateNan},
          types={"x": same("T"), "min": same("T"), "max": same("T"), "result": same("T")}, elementwise=True,
          verify=_v_float_elementwise, doc="min(max(x, min), max) on floats; propagateNan: NaN in, NaN out"),
    OpDef("precise_sqrt", (("x", _S),), types={"x": same("T"), "result": same("T")}, elementwise=True,
          verify=_v_float_elementwise, doc="correctly rounded square root"),
    OpDef("precise_divf", (("x", _S), ("y", _S)), types={"x": same("T"), "y": same("T"), "result": same("T")},
          elementwise=True, verify=_v_float_elementwise, doc="correctly rounded division"),
    OpDef("mulhiui", (("x", _S), ("y", _S)), types={"x": same("T"), "y": same("T"), "result": same("T")},
          commutative=True, elementwise=True, verify=_v_int_elementwise,
          doc="the high half of the unsigned product"),
    OpDef("histogram", (("src", _S), ("mask", _O)), types={"src": TENSOR, "mask": TENSOR, "result": TENSOR},
          verify=_v_histogram, doc="int32 counts of the values 0 .. bins-1 of a 1-D integer tensor"),
    OpDef("extern_elementwise", (("srcs", _M),), attrs={"libname": STR, "libpath": STR, "symbol": STR, "pure": BOOL},
          elementwise=True, verify=_v_same_shape_operands_result,
          doc="an external (libdevice) function applied elementwise; pure when its pure attribute says so"),
    OpDef("elementwise_inline_asm", (("args", _M),), results=(("result", _M),),
          attrs={"asm_string": STR, "constraints": STR, "pure": BOOL, "packed_element": I32},
          pure=False, effects=_RW, verify=_v_inline_asm,
          doc="inline assembly applied elementwise, packed_element elements per call"),
    OpDef("map_elementwise", (("srcs", _M),), results=(("result", _M),),
          attrs={"combine": required(SYMBOL), "pack": I32}, pure=False, effects=_RW,
          verify=_v_same_shape_operands_result,
          doc="the scalar function @combine applied per element (pack elements of each operand per call)"),
    # reductions and scans: the combine function is a symbol reference to a private func.func that ends in
    # func.return.  Triton's tt.reduce.return / tt.scan.return have no counterpart: IRDL op names cannot
    # contain '.', and IRDL ops cannot be terminators (see the module docstring).
    OpDef("reduce", (("srcs", _M),), results=(("result", _M),),
          attrs={"axis": required(I32), "combine": required(SYMBOL)}, verify=_v_reduce,
          doc="tensors reduced along axis by the combine function"),
    OpDef("scan", (("srcs", _M),), results=(("result", _M),),
          attrs={"axis": required(I32), "reverse": BOOL, "combine": required(SYMBOL)}, verify=_v_scan,
          doc="inclusive scan along axis by the combine function (reverse: from the end)"),
    # debugging
    OpDef("print", (("args", _M),), results=_NONE, attrs={"prefix": STR, "hex": BOOL, "isSigned": I32_ARRAY},
          pure=False, effects=_RW, verify=_v_print, doc="device-side print of a prefix and values"),
    OpDef("assert", (("condition", _S),), results=_NONE, attrs={"message": STR}, pure=False, effects=_RW,
          verify=_v_assert, doc="device-side assertion: fails with message where condition is false"),
    # synchronisation and facts for the optimizer
    OpDef("barrier", (), results=_NONE, pure=False, effects=_RW,
          doc="tl.debug_barrier: every thread of the program waits here; its memory writes before are seen after"),
    OpDef("assume", (("condition", _S),), results=_NONE, types={"condition": I1_TYPE}, pure=False, effects=_RW,
          doc="tl.assume: the i1 condition holds (llvm.assume; the optimizer may rely on it)"),
)

_BY_NAME = {op.full_name: op for op in OPS}

# the op name constants: LOAD = "tt.load", ...
globals().update({op.constant_name: op.full_name for op in OPS})


def op_def(name: str) -> Optional[OpDef]:
    """The table entry of ``tt.<name>`` (full name), or None for ops of other dialects."""
    return _BY_NAME.get(name)


# ----------------------------------------------------------------------------------------------
# IRDL
# ----------------------------------------------------------------------------------------------

def irdl_parametric_lines(kind: str, name: str, params) -> list:
    """IRDL lines of an attribute or type (``kind``) with unconstrained ``params``."""
    lines = [f"  irdl.{kind} @{name} {{"]
    lines += [f"    %{i} = irdl.any" for i, _ in enumerate(params)]
    lines.append("    irdl.parameters(" + ", ".join(f"{p}: %{i}" for i, p in enumerate(params)) + ")")
    lines.append("  }")
    return lines


def irdl_operation_lines(ops) -> list:
    """IRDL lines of the ops of a table: operand / result groups with their type constraints (MIXED groups
    expanded, unconstrained), required attributes."""
    lines = []
    for op in ops:
        lines.append(f"  irdl.operation @{op.name} {{")
        n = 0
        variables = {}

        def constraint(c: TypeConstraint) -> str:
            nonlocal n
            if c.var and c.var in variables:
                return variables[c.var]
            lines.append(f"    %{n} = {c.irdl}")
            ref = f"%{n}"
            n += 1
            if c.var:
                variables[c.var] = ref
            return ref

        for group, tag in ((_irdl_groups(op.operands), "operands"), (_irdl_groups(op.results), "results")):
            if not group:
                continue
            parts = []
            for gname, kind in group:
                ref = constraint(op.types.get(gname, ANY))
                prefix = "" if kind == SINGLE else kind + " "
                parts.append(f"{gname}: {prefix}{ref}")
            lines.append(f"    irdl.{tag}({', '.join(parts)})")
        if op.required_attrs:
            parts = []
            for name in op.required_attrs:
                kind = op.attr_kind(name)
                base = I32.irdl_base if isinstance(kind, type) else kind.irdl_base
                parts.append(f'"{name}" = ' + constraint(TypeConstraint(name, f"irdl.base {base}")))
            lines.append(f"    irdl.attributes {{{', '.join(parts)}}}")
        lines.append("  }")
    return lines


def irdl_source() -> str:
    """The IRDL module that defines the dialect (generated from the table)."""
    lines = ["irdl.dialect @tt {", *irdl_parametric_lines("type", "ptr", ["pointee"]),
             *irdl_parametric_lines("type", "tensordesc", ["block_type"]), *irdl_operation_lines(OPS), "}"]
    return "\n".join(lines)


def load_dialect(context) -> None:
    """Register the tt dialect (IRDL) with ``context``."""
    from mlir import ir
    from mlir.dialects import irdl

    with context:
        irdl.load_dialects(ir.Module.parse(irdl_source()))


# ----------------------------------------------------------------------------------------------
# Verification
# ----------------------------------------------------------------------------------------------

def verify_op(op) -> Optional[str]:
    """The table's checks IRDL cannot make, on one tt / ttg op (after IRDL's): attribute kinds and enum values,
    then the op's verifier.  Returns an error message or None."""
    op = getattr(op, "operation", op)
    opdef = _lookup(op.name)
    if opdef is None:
        return None
    _, error = _decode(op, opdef)
    if error:
        return error
    if opdef.verify is None:
        return None
    try:
        return opdef.verify(op, operand_groups(op))
    except (IndexError, KeyError, ValueError, TypeError) as e:  # a malformed op must still give a message
        return f"malformed op: {type(e).__name__}: {e}"


def verify_module(module) -> None:
    """Verify every op of ``module``: upstream (IRDL: arity, type constraints, required attributes) first, then
    the table's checks (:func:`verify_op`).

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
            errors.append(f"'{op.name}' at {loc_str(op)}: {msg}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(walk)
    if errors:
        raise VerificationError("\n".join(errors))


def reference() -> str:
    """A Markdown table of the dialect's ops (name, operands, results, attributes, doc), from the table."""
    return op_reference(OPS)


def op_reference(ops) -> str:
    """A Markdown table of the ops of a table."""

    def groups(gs, op):
        out = []
        for name, kind in gs:
            c = op.types.get(name)
            s = name + ("?" if kind == OPTIONAL else "*" if kind in (VARIADIC, MIXED) else "")
            out.append(f"{s}: {c.text}" if c is not None and c.text != "any" else s)
        return ", ".join(out)

    def attrs(op):
        return ", ".join(f"{n}: {_kind_name(op.attr_kind(n))}" + ("" if n in op.required_attrs else "?")
                         for n in op.attrs)

    rows = ["| op | operands | results | attributes | what |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{op.full_name}` | {groups(op.operands, op)} | {groups(op.results, op)} | {attrs(op)} | {op.doc} |"
             for op in ops]
    return "\n".join(rows)

