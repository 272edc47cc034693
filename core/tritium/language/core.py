"""tl core: dtypes, ``constexpr``, ``tensor`` and the builder that the semantic rules emit MLIR through.

Values the code generator handles are ``tensor`` (an MLIR value + its tl type), ``constexpr`` (a Python
value known at compile time) or plain Python objects (tuples, dtypes, functions, modules).
"""
from __future__ import annotations

import threading
from typing import Any, List, Optional


from ..errors import SemanticError, UnsupportedError  # noqa: F401  (defined with every other error)
from .._constexpr_fn import ConstexprFunction, constexpr_function  # noqa: F401  (tl.core's names too)
from .._constexpr_fn import bind_language as _bind_constexpr_fn
from ..source.function import set_builder_getter as _set_builder_getter


# ----------------------------------------------------------------------------------------------
# dtypes
# ----------------------------------------------------------------------------------------------

def _unwrap(x):
    c = globals().get("constexpr")
    return x.value if c is not None and isinstance(x, c) else x


_MLIR_NAME = {
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "i8", "uint16": "i16", "uint32": "i32", "uint64": "i64",
    "fp8e4nv": "f8E4M3FN", "fp8e5": "f8E5M2", "fp8e4b8": "f8E4M3FNUZ", "fp8e5b16": "f8E5M2FNUZ",
    "fp8e4b15": "f8E4M3B11FNUZ",  # Triton's stand-in MLIR type too (its bias is 11: only the 8 bits matter)
    "fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64",
}
_FP_MANTISSA = {"fp8e4nv": 3, "fp8e4b8": 3, "fp8e4b15": 3, "fp8e5": 2, "fp8e5b16": 2, "fp16": 10, "bf16": 7,
                "fp32": 23, "fp64": 52}
_FP_EXPONENT = {"fp8e4nv": 4, "fp8e4b8": 4, "fp8e4b15": 4, "fp8e5": 5, "fp8e5b16": 5, "fp16": 5, "bf16": 8,
                "fp32": 8, "fp64": 11}
_FP_BIAS = {"fp8e4nv": 7, "fp8e4b8": 8, "fp8e4b15": 15, "fp8e5": 15, "fp8e5b16": 16, "fp16": 15, "bf16": 127,
            "fp32": 127, "fp64": 1023}


class dtype:
    """A scalar element type (Triton's ``tl.dtype``).  Names follow Triton: ``fp32``, ``int32``, ``uint8``."""

    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    class SIGNEDNESS:
        SIGNED = 0
        UNSIGNED = 1

    class KIND:
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    def __init__(self, name):
        name = _unwrap(name)
        self.name = name
        if name in self.SINT_TYPES:
            self.int_signedness = dtype.SIGNEDNESS.SIGNED
            self.int_bitwidth = int(name.split("int")[-1])
            self.primitive_bitwidth = self.int_bitwidth
        elif name in self.UINT_TYPES:
            self.int_signedness = dtype.SIGNEDNESS.UNSIGNED
            self.int_bitwidth = int(name.split("int")[-1])
            self.primitive_bitwidth = self.int_bitwidth
        elif name in self.FP_TYPES:
            self.fp_mantissa_width = _FP_MANTISSA[name]
            self.exponent_bias = _FP_BIAS[name]
            self.primitive_bitwidth = 1 + _FP_MANTISSA[name] + _FP_EXPONENT[name]
        elif name == "void":
            self.primitive_bitwidth = 0
        elif not name.startswith("pointer<") and not name.startswith("<"):
            raise SemanticError(f"unknown dtype {name!r}")

    # predicates
    def is_fp8(self): return self.name.startswith("fp8")
    def is_fp8e4nv(self): return self.name == "fp8e4nv"
    def is_fp8e4b8(self): return self.name == "fp8e4b8"
    def is_fp8e4b15(self): return self.name == "fp8e4b15"
    def is_fp8e5(self): return self.name == "fp8e5"
    def is_fp8e5b16(self): return self.name == "fp8e5b16"
    def is_fp16(self): return self.name == "fp16"
    def is_bf16(self): return self.name == "bf16"
    def is_fp32(self): return self.name == "fp32"
    def is_fp64(self): return self.name == "fp64"
    def is_int1(self): return self.name == "int1"
    def is_int8(self): return self.name == "int8"
    def is_int16(self): return self.name == "int16"
    def is_int32(self): return self.name == "int32"
    def is_int64(self): return self.name == "int64"
    def is_uint8(self): return self.name == "uint8"
    def is_uint16(self): return self.name == "uint16"
    def is_uint32(self): return self.name == "uint32"
    def is_uint64(self): return self.name == "uint64"
    def is_floating(self): return self.name in self.FP_TYPES
    def is_standard_floating(self): return self.name in self.STANDARD_FP_TYPES
    def is_int_signed(self): return self.name in self.SINT_TYPES
    def is_int_unsigned(self): return self.name in self.UINT_TYPES
    def is_int(self): return self.name in self.SINT_TYPES + self.UINT_TYPES
    def is_bool(self): return self.is_int1()
    def is_void(self): return self.name == "void"
    def is_ptr(self): return False
    def is_block(self): return False
    def is_const(self): return False

    def kind(self):
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():
            return dtype.KIND.INTEGRAL
        return dtype.KIND.FLOATING

    def get_int_max_value(self):
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        return 2 ** self.int_bitwidth - 1

    def get_int_min_value(self):
        if self.is_int_signed():
            return -2 ** (self.int_bitwidth - 1)
        return 0

    @property
    def scalar(self):
        return self

    @property
    def cache_key_part(self) -> str:
        return self.name

    def to_ir(self, builder=None):
        from mlir import ir
        if self.name not in _MLIR_NAME:
            raise SemanticError(f"dtype {self.name} has no MLIR type in tritium")
        return ir.Type.parse(_MLIR_NAME[self.name])

    def mlir_str(self) -> str:
        if self.name not in _MLIR_NAME:
            raise SemanticError(f"dtype {self.name} has no MLIR type in tritium")
        return _MLIR_NAME[self.name]

    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, dtype) and self.name == other.name

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((self.name,))

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{_PY_NAME.get(self.name, self.name)}"

    def with_element_ty(self, ty):
        return ty


_PY_NAME = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "fp8e4nv": "float8e4nv",
            "fp8e5": "float8e5", "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16", "fp8e4b15": "float8e4b15"}


class pointer_type(dtype):
    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        element_ty = _unwrap(element_ty)
        if not isinstance(element_ty, dtype):
            raise SemanticError(f"pointer_type element type must be a dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{element_ty}>" if not const else f"const_pointer<{element_ty}>"
        self.primitive_bitwidth = 64

    def is_ptr(self): return True
    def is_const(self): return self.const

    def to_ir(self, builder=None):
        from mlir import ir
        return ir.Type.parse(self.mlir_str())

    def mlir_str(self):
        return f"!tt.ptr<{self.element_ty.mlir_str()}>"

    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, pointer_type) and self.element_ty == other.element_ty and \
            self.address_space == other.address_space and self.const == other.const

    def __hash__(self):
        return hash(("ptr", self.element_ty, self.const))

    def __repr__(self):
        return self.name

    __str__ = __repr__

    @property
    def scalar(self):
        return self


_MAX_TENSOR_NUMEL = 1048576  # tl.TRITON_MAX_TENSOR_NUMEL


class block_type(dtype):
    def __init__(self, element_ty: dtype, shape: List):
        self.element_ty = element_ty
        self.shape = tuple(int(_unwrap(s)) for s in shape)
        if not self.shape:
            raise SemanticError("0d block_type is forbidden")
        self.numel = 1
        for s in self.shape:
            self.numel *= s
        if any(s < 0 for s in self.shape) or self.numel > _MAX_TENSOR_NUMEL:
            raise SemanticError(f"a tensor holds 0 to {_MAX_TENSOR_NUMEL} elements (TRITON_MAX_TENSOR_NUMEL) in "
                                f"dimensions of at least 0, got shape {list(self.shape)}")
        self.name = f"<{self.shape}, {self.element_ty}>"

    def is_block(self): return True
    def get_block_shapes(self): return self.shape
    def is_ptr(self): return False

    @property
    def scalar(self):
        return self.element_ty

    @property
    def nbytes(self):
        return self.numel * (self.element_ty.primitive_bitwidth // 8)

    def mlir_str(self):
        return "tensor<" + "x".join(str(s) for s in self.shape) + "x" + self.element_ty.mlir_str() + ">"

    def to_ir(self, builder=None):
        from mlir import ir
        return ir.Type.parse(self.mlir_str())

    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, block_type) and self.element_ty == other.element_ty and self.shape == other.shape

    def __hash__(self):
        return hash(("block", self.element_ty, self.shape))

    def __repr__(self):
        return self.name

    __str__ = __repr__


class tensor_descriptor_type(dtype):
    """The type of a tensor descriptor (``tl.make_tensor_descriptor``): the block it loads and stores
    (``block_type``); in TTIR ``!tt.tensordesc<tensor<64x64xf16>>``."""

    def __init__(self, block_type: "block_type"):
        block_type = _unwrap(block_type)
        if not isinstance(block_type, globals()["block_type"]):
            raise SemanticError(f"a tensor descriptor's block type must be a block_type, got {block_type!r}")
        self.block_type = block_type
        self.name = f"tensordesc<{block_type}>"
        self.primitive_bitwidth = 64

    def is_ptr(self): return False
    def is_block(self): return False

    def mlir_str(self):
        return f"!tt.tensordesc<{self.block_type.mlir_str()}>"

    def to_ir(self, builder=None):
        from mlir import ir
        return ir.Type.parse(self.mlir_str())

    def __eq__(self, other):
        other = _unwrap(other)
        return isinstance(other, tensor_descriptor_type) and self.block_type == other.block_type

    def __hash__(self):
        return hash(("tensordesc", self.block_type))

    def __repr__(self):
        return self.name

    __str__ = __repr__


class function_type(dtype):
    def __init__(self, ret_types, param_types):
        self.ret_types, self.param_types = ret_types, param_types
        self.name = f"fn ({param_types}) -> {ret_types}"


void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")


def get_int_dtype(bitwidth: int, signed: bool) -> "dtype":
    """Triton's ``tl.core.get_int_dtype``: the integer dtype of ``bitwidth`` bits (1, 8, 16, 32, 64)."""
    bitwidth = int(_unwrap(bitwidth))
    if bitwidth == 1:
        return int1
    if bitwidth not in (8, 16, 32, 64):
        raise ValueError(f"no integer dtype of {bitwidth} bits")
    return dtype(f"{'int' if _unwrap(signed) else 'uint'}{bitwidth}")
float8e5 = dtype("fp8e5")
float8e5b16 = dtype("fp8e5b16")
float8e4nv = dtype("fp8e4nv")
float8e4b8 = dtype("fp8e4b8")
float8e4b15 = dtype("fp8e4b15")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
pi32_t = pointer_type(int32)

_BY_NAME = {d.name: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float8e5,
                                float8e5b16, float8e4nv, float8e4b8, float8e4b15, float16, bfloat16, float32,
                                float64, void)}
_TYPE_STR = {"i1": "int1", "u1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
             "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "fp16": "fp16", "f16": "fp16",
             "bf16": "bf16", "fp32": "fp32", "f32": "fp32", "fp64": "fp64", "f64": "fp64", "fp8e4nv": "fp8e4nv",
             "fp8e5": "fp8e5", "fp8e4b8": "fp8e4b8", "fp8e5b16": "fp8e5b16", "fp8e4b15": "fp8e4b15",
             "void": "void", "B": "int1"}


def _tensordesc_from_str(s: str) -> "tensor_descriptor_type":
    """``tensordesc<fp16[64, 64]>`` (a host-side tensor descriptor; ``,nan`` may follow the block shape: the
    padding reaches the kernel as the parameter's ``tt.padding`` attribute) as a tensor_descriptor_type."""
    import re

    m = re.fullmatch(r"tensordesc<\s*([A-Za-z0-9_]+)\s*\[([0-9,\s]*)\]\s*(,\s*(zero|nan)\s*)?>", s)
    if m is None:
        raise SemanticError(f"malformed tensor descriptor type {s!r} in the signature (expected like "
                            "'tensordesc<fp16[64, 64]>')")
    elem = str_to_ty(m.group(1))
    shape = [int(x) for x in m.group(2).split(",") if x.strip()]
    if elem.is_ptr() or not shape:
        raise SemanticError(f"malformed tensor descriptor type {s!r} in the signature")
    return tensor_descriptor_type(block_type(elem, shape))


def str_to_ty(name: str, c=None):
    """A Triton signature type string as a tl type (Triton 3.6's ``tl.str_to_ty(name, c)``): ``fp32``, ``i32``,
    ``u64``, ``*fp32`` (a pointer), ``*kfp16`` (a pointer to const data), ``tensordesc<fp16[64, 64]>``, and
    ``constexpr``: ``constexpr_type(c)``, the type of the compile-time value ``c`` (unused otherwise)."""
    if isinstance(name, tuple):
        raise SemanticError(f"tuple type {name!r} in the signature: tritium has no tuple arguments")
    s = name.strip()
    if s.startswith("tensordesc<") and s.endswith(">"):
        return _tensordesc_from_str(s)
    if s.startswith("*"):
        rest = s[1:]
        const = False
        if rest.startswith("k"):
            rest, const = rest[1:], True
        return pointer_type(str_to_ty(rest), const=const)
    if s == "constexpr":
        return constexpr_type(c)
    if s in _TYPE_STR:
        return _BY_NAME[_TYPE_STR[s]]
    if s in _BY_NAME:
        return _BY_NAME[s]
    raise SemanticError(f"unknown type string {s!r} in the signature")


# ----------------------------------------------------------------------------------------------
# constexpr
# ----------------------------------------------------------------------------------------------

_unwrap_if_constexpr = _unwrap


class const:
    """The annotation ``X: tl.const`` of a kernel parameter: a pointer to constant data.  The parameter is a
    run-time argument (not a constexpr) whose pointer type is const (``pointer_type(..., const=True)``, ``*k`` in
    a signature): ``tl.load`` reads through it, ``tl.store`` through it is an error.  Constness follows the pointer
    through pointer arithmetic, splats and broadcasts; in TTIR it is the plain ``!tt.ptr``."""


def is_const_annotation(ann) -> bool:
    """Whether ``ann`` (a parameter's annotation: the class, or its text under ``from __future__ import
    annotations``) is ``tl.const``."""
    if isinstance(ann, str):
        return ann.strip().split(".")[-1] == "const"
    return ann is const


class constexpr_type:
    """The type of a compile-time value (Triton's ``tl.constexpr_type``; ``str_to_ty("constexpr", c)``)."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self):
        return hash(self.value) if not isinstance(self.value, list) else id(self)

    def __repr__(self):
        return f"constexpr_type[{self.value}]"

    __str__ = __repr__

    def mangle(self) -> str:
        return repr(self)

    def is_ptr(self): return False
    def is_block(self): return False
    def is_const(self): return False


class constexpr:
    """A value known at compile time.  Also used as the annotation ``x: tl.constexpr``."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value}]"

    def __index__(self):
        return self.value

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __hash__(self):
        return hash(self.value) if not isinstance(self.value, list) else id(self)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    @property
    def type(self) -> "constexpr_type":
        """Its type, ``constexpr_type(value)`` (Triton's ``constexpr.type``); a typed value's is its dtype."""
        return constexpr_type(self.value)

    # Triton's constexpr methods (Python code calls them; in a kernel a constexpr's attributes are its value's):
    # Python's `and` / `or` / `not` of compile-time values, tl's with a tensor
    def logical_and(self, other):
        return _sem().logical_and(self, other)

    def logical_or(self, other):
        return _sem().logical_or(self, other)

    def __not__(self):
        return constexpr(not self.value)

    def __getattr__(self, name):
        if name == "value":
            raise AttributeError(name)
        return getattr(self.value, name)


class typed_constexpr(constexpr):
    """A Python number assigned to a name in a kernel (``x = 1``, ``eps = 1e-5``, ``n = BLOCK``).  Triton makes
    such a value a scalar tensor of ``to_tensor``'s type (int32 / uint32 / int64 / uint64, fp32 / fp64, int1), so
    ``int8_tensor + x`` is int32 and ``fp16_tensor * eps`` fp32; tritium gives it that type wherever it meets a
    tensor or another typed value (``semantic.binary_op_type_checking``, ``semantic.fold``) and keeps its value
    known at compile time, so it may still size a range or choose a branch.  ``dtype`` is that type."""

    def __init__(self, value, dtype=None):
        super().__init__(value)
        if dtype is None:
            dtype = value.dtype if isinstance(value, typed_constexpr) else _sem().scalar_type_of_python(self.value)
        self.__dict__["dtype"] = dtype

    def __repr__(self):
        return f"constexpr[{self.value}: {self.dtype}]"

    @property
    def type(self):
        return self.dtype


def _typed_binop(name):
    def f(self, other):
        return getattr(_sem(), name)(self, other)

    def r(self, other):
        return getattr(_sem(), name)(other, self)

    return f, r


# Python's operators on a typed value (step-through mode runs kernels as Python; tl's own Python code): Triton's
# tensor arithmetic, folded where exact (semantic.fold); comparisons stay constexpr's (a compile-time bool)
for _name, _sname in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"),
                      ("floordiv", "floordiv"), ("mod", "mod"), ("pow", "pow"), ("and", "and_"), ("or", "or_"),
                      ("xor", "xor_"), ("lshift", "shl"), ("rshift", "shr")]:
    _f, _r = _typed_binop(_sname)
    setattr(typed_constexpr, f"__{_name}__", _f)
    setattr(typed_constexpr, f"__r{_name}__", _r)
typed_constexpr.__neg__ = lambda self: _sem().minus(self)
typed_constexpr.__invert__ = lambda self: _sem().invert(self)
typed_constexpr.__pos__ = lambda self: self


def _cx_binop(op):
    def f(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(op(self.value, _unwrap(other)))

    def r(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        return constexpr(op(_unwrap(other), self.value))

    return f, r


import operator as _op  # noqa: E402

for _name, _fn in [("add", _op.add), ("sub", _op.sub), ("mul", _op.mul), ("truediv", _op.truediv),
                   ("floordiv", _op.floordiv), ("mod", _op.mod), ("pow", _op.pow), ("and", _op.and_),
                   ("or", _op.or_), ("xor", _op.xor), ("lshift", _op.lshift), ("rshift", _op.rshift)]:
    _f, _r = _cx_binop(_fn)
    setattr(constexpr, f"__{_name}__", _f)
    setattr(constexpr, f"__r{_name}__", _r)
for _name, _fn in [("eq", _op.eq), ("ne", _op.ne), ("lt", _op.lt), ("le", _op.le), ("gt", _op.gt),
                   ("ge", _op.ge)]:
    setattr(constexpr, f"__{_name}__", _cx_binop(_fn)[0])
constexpr.__neg__ = lambda self: constexpr(-self.value)
constexpr.__pos__ = lambda self: constexpr(+self.value)
constexpr.__invert__ = lambda self: constexpr(~self.value)
constexpr.__abs__ = lambda self: constexpr(abs(self.value))


# ----------------------------------------------------------------------------------------------
# The builder: where ops go and with which location.  The frontend installs one while generating code.
# ----------------------------------------------------------------------------------------------

_state = threading.local()


class Builder:
    """Creates MLIR operations at an insertion point with the current source location."""

    def __init__(self, context, module, codegen=None):
        from mlir import ir
        self.context = context
        self.module = module
        self.codegen = codegen
        self.ip: Optional[ir.InsertionPoint] = None
        self.loc = ir.Location.unknown(context)
        self._combine_cache = {}
        self._names = set()

    def create(self, name, operands=(), results=(), attrs=None, regions=0):
        from mlir import ir
        ops = [x.handle if isinstance(x, tensor) else x for x in operands]
        if name.startswith("tt."):  # MIXED operand groups need segment sizes (see dialects/tt.py)
            from ..dialects.tt import segment_attributes
            attrs = segment_attributes(name, len(ops), len(results), attrs or {}, self.context)
        return ir.Operation.create(name, results=list(results), operands=ops, attributes=attrs or {},
                                   regions=regions, loc=self.loc, ip=self.ip)

    # attributes
    def i32_attr(self, v):
        from mlir import ir
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(32, self.context), int(v))

    def i64_attr(self, v):
        from mlir import ir
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64, self.context), int(v))

    def bool_attr(self, v):
        from mlir import ir
        return ir.BoolAttr.get(bool(v), self.context)

    def str_attr(self, s):
        from mlir import ir
        return ir.StringAttr.get(s, self.context)

    def i32_array(self, vals):
        from mlir import ir
        return ir.DenseI32ArrayAttr.get([int(v) for v in vals], self.context)

    def ty(self, t: dtype):
        from mlir import ir
        return ir.Type.parse(t.mlir_str(), self.context)

    def unique_name(self, hint: str) -> str:
        import re
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint)
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name


def current_builder() -> Builder:
    b = getattr(_state, "builder", None)
    if b is None:
        raise SemanticError("tritium.language functions can only be called inside a @jit function")
    return b


def current_builder_or_none() -> Optional[Builder]:
    return getattr(_state, "builder", None)


class use_builder:
    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.prev = getattr(_state, "builder", None)
        _state.builder = self.builder
        return self.builder

    def __exit__(self, *exc):
        _state.builder = self.prev


# ----------------------------------------------------------------------------------------------
# tensor
# ----------------------------------------------------------------------------------------------

def _sem():
    from . import semantic
    return semantic


def _concrete_repr(t, v) -> str:
    """How step-through mode shows a value: ``tensor([..], dtype=fp32)`` / ``tensor(3, dtype=int32)`` (pointers as
    their virtual byte addresses, block pointers and descriptors as what the interpreter holds)."""
    import numpy as np

    if isinstance(v, np.ndarray) or np.isscalar(v):
        body = np.array2string(np.asarray(v), separator=", ", threshold=256, edgeitems=4,
                               prefix="tensor(") if getattr(v, "ndim", 0) else repr(v.item() if hasattr(v, "item")
                                                                                     else v)
    else:
        body = repr(v)
    return f"tensor({body}, dtype={t.type.scalar if not t.type.is_block() else t.dtype})"


class tensor:
    """A value in a kernel: an MLIR value and its tl type (a scalar dtype, pointer_type or block_type).

    ``tensor(handle, tensor_descriptor_type)`` makes a :class:`tensor_descriptor`, so values the frontend
    rebuilds from their type (loop-carried values, ``if`` results, call results) keep their methods."""

    def __new__(cls, handle=None, type=None, *args, **kwargs):
        if cls is tensor and isinstance(type, tensor_descriptor_type):
            cls = tensor_descriptor
        return object.__new__(cls)

    def __init__(self, handle, type: dtype):
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        self.shape = tuple(constexpr(s) for s in type.shape) if type.is_block() else ()
        self.numel = constexpr(type.numel if type.is_block() else 1)

    def __str__(self):
        v = getattr(self.handle, "concrete", None)
        if v is not None:  # step-through mode: the value
            return _concrete_repr(self, v)
        return str(self.dtype) + "[" + ", ".join(str(_unwrap(s)) for s in self.shape) + "]"

    __repr__ = __str__

    __hash__ = object.__hash__

    def __bool__(self):
        v = getattr(self.handle, "concrete", None)
        if v is not None:  # step-through mode: the value of a scalar or of a one-element tensor, as `if x:` takes it
            if self.type.is_block():
                _sem().check_condition(self, "an if, while or ternary expression")
                return bool(v.reshape(-1)[0])
            return bool(v)
        raise SemanticError("a tensor cannot be used as a Python bool here (its value is only known at run time)")

    def __iter__(self):
        raise SemanticError("a tensor is not iterable")

    def __index__(self):
        v = getattr(self.handle, "concrete", None)
        if v is not None and not self.type.is_block() and self.dtype.is_int():  # step-through mode
            return int(v)
        raise SemanticError("a tensor cannot be used where a compile-time integer is required; use tl.constexpr")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        v = getattr(self.handle, "concrete", None)
        if v is not None and not self.type.is_block() and not self.dtype.is_ptr():  # step-through mode
            return float(v)
        raise SemanticError("a tensor's value is only known at run time; use .to(dtype) to convert it")

    # arithmetic
    def __add__(self, o): return _sem().add(self, o)
    def __radd__(self, o): return _sem().add(o, self)
    def __sub__(self, o): return _sem().sub(self, o)
    def __rsub__(self, o): return _sem().sub(o, self)
    def __mul__(self, o): return _sem().mul(self, o)
    def __rmul__(self, o): return _sem().mul(o, self)
    def __truediv__(self, o): return _sem().truediv(self, o)
    def __rtruediv__(self, o): return _sem().truediv(o, self)
    def __floordiv__(self, o): return _sem().floordiv(self, o)
    def __rfloordiv__(self, o): return _sem().floordiv(o, self)
    def __mod__(self, o): return _sem().mod(self, o)
    def __rmod__(self, o): return _sem().mod(o, self)
    def __pow__(self, o): return _sem().pow(self, o)
    def __rpow__(self, o): return _sem().pow(o, self)
    def __neg__(self): return _sem().minus(self)
    def __pos__(self): return self
    def __invert__(self): return _sem().invert(self)
    def __and__(self, o): return _sem().and_(self, o)
    def __rand__(self, o): return _sem().and_(o, self)
    def __or__(self, o): return _sem().or_(self, o)
    def __ror__(self, o): return _sem().or_(o, self)
    def __xor__(self, o): return _sem().xor_(self, o)
    def __rxor__(self, o): return _sem().xor_(o, self)
    def __lshift__(self, o): return _sem().shl(self, o)
    def __rlshift__(self, o): return _sem().shl(o, self)
    def __rshift__(self, o): return _sem().shr(self, o)
    def __rrshift__(self, o): return _sem().shr(o, self)
    def __gt__(self, o): return _sem().compare(self, o, "gt")
    def __ge__(self, o): return _sem().compare(self, o, "ge")
    def __lt__(self, o): return _sem().compare(self, o, "lt")
    def __le__(self, o): return _sem().compare(self, o, "le")
    def __eq__(self, o): return _sem().compare(self, o, "eq")
    def __ne__(self, o): return _sem().compare(self, o, "ne")
    def __abs__(self): return _sem().abs(self)

    def logical_and(self, o): return _sem().logical_and(self, o)
    def logical_or(self, o): return _sem().logical_or(self, o)
    def __not__(self): return _sem().logical_not(self)
    logical_not = __not__

    def __getitem__(self, slices):
        return _sem().getitem(self, slices)

    @property
    def T(self):
        return _sem().trans(self)

    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return _sem().cast(self, _unwrap(dtype), bitcast=_unwrap(bitcast),
                           fp_downcast_rounding=_unwrap(fp_downcast_rounding))

    cast = to  # Triton's tensor.cast (tl.cast as a method)

    def item(self):
        """This one-element tensor (shape [1], [1, 1], ...) as a scalar; a scalar is itself."""
        return _sem().item(self)


_TENSOR_FIELDS = ("dtype", "type", "shape", "numel")


def is_tensor_attribute(name: str) -> bool:
    """Whether a tensor has the public attribute ``name`` (a method, ``T``, ``dtype``, ``shape``, ...)."""
    return name in _TENSOR_FIELDS or (not name.startswith("_") and hasattr(tensor, name))


class tensor_descriptor(tensor):
    """A descriptor of a strided tensor in global memory, read and written by blocks (Triton 3.6's
    ``tl.tensor_descriptor``, from :func:`tritium.language.make_tensor_descriptor`).  Not made by user code.

    ``block_type`` / ``block_shape`` / ``dtype``: the block ``load`` returns and ``store`` takes; ``shape`` /
    ``strides``: the tensor's run-time shape (int32 scalars) and strides (int64 scalars)."""

    def __init__(self, handle, type: tensor_descriptor_type, shape=None, strides=None):
        self.handle = handle
        self.type = type
        self.dtype = type.block_type.element_ty
        self._shape = None if shape is None else tuple(shape)
        self._strides = None if strides is None else tuple(strides)

    @property
    def block_type(self):
        return self.type.block_type

    @property
    def block_shape(self):
        return tuple(self.type.block_type.shape)

    def _operands(self, group: str, ty: dtype) -> tuple:
        """The ``shape`` / ``strides`` operands of the ``tt.make_tensor_descriptor`` this value comes from."""
        from ..dialects import tt

        owner = getattr(self.handle, "owner", None)
        op = getattr(owner, "operation", owner)
        if getattr(op, "name", None) != tt.MAKE_TENSOR_DESCRIPTOR:
            raise SemanticError(f"the {group} of this tensor descriptor is not known here (it was passed through "
                                "control flow or a call); read it where the descriptor is made")
        return tuple(tensor(v, ty) for v in tt.operand_groups(op)[group])

    @property
    def shape(self):
        if self._shape is None:
            self._shape = self._operands("shape", int32)
        return self._shape

    @property
    def strides(self):
        if self._strides is None:
            self._strides = self._operands("strides", int64)
        return self._strides

    def __str__(self):
        return f"tensor_descriptor<{self.type.block_type}>"

    __repr__ = __str__

    def load(self, offsets):
        """The block at element ``offsets`` (one per dimension); elements outside the tensor read the padding
        (zero, or NaN for ``padding_option="nan"``)."""
        return _sem().descriptor_load(self, offsets)

    def store(self, offsets, value):
        """Write ``value`` (a tensor of the block's shape, cast to the descriptor's dtype) at element ``offsets``;
        elements outside the tensor are dropped."""
        return _sem().descriptor_store(self, value, offsets)


def _descriptor_unsupported(name: str, instead: str):
    def method(self, *args, **kwargs):
        raise SemanticError(f"tensor_descriptor.{name} is not supported by tritium yet; {instead}")

    method.__name__ = name
    return method


for _name in ("atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor"):
    setattr(tensor_descriptor, _name, _descriptor_unsupported(_name, f"use tl.{_name} on a tensor of pointers"))
tensor_descriptor.gather = _descriptor_unsupported("gather", "use desc.load per row, or tl.load with pointers")
tensor_descriptor.scatter = _descriptor_unsupported("scatter", "use desc.store per row, or tl.store with pointers")


def _tensor_member_fn(fn):
    """Make a tl builtin also available as a tensor method (``x.sum(axis=0)``)."""
    setattr(tensor, fn.__name__, lambda self, *a, **k: fn(self, *a, **k))
    return fn


def builtin(fn):
    fn.__tritium_builtin__ = True
    return fn


def is_builtin(fn) -> bool:
    """A function the frontend calls at compile time with the kernel's values (``@tl.core.builtin``; Triton's
    marker ``__triton_builtin__`` too, which torch's Inductor puts on its helpers)."""
    return getattr(fn, "__tritium_builtin__", False) or getattr(fn, "__triton_builtin__", False)


def extern(fn):
    """Triton's ``tl.core.extern``: a function wrapping :func:`extern_elementwise` is a builtin."""
    return builtin(fn)


@builtin
def extern_elementwise(lib_name, lib_path, args, arg_type_symbol_dict, is_pure, _semantic=None, _builder=None):
    """Triton's ``tl.core.extern_elementwise``: the external elementwise function whose entry of
    ``arg_type_symbol_dict`` ({argument dtypes: (symbol, result dtype)}) matches the arguments' dtypes."""
    return _sem().extern_elementwise(lib_name, lib_path, args, arg_type_symbol_dict, is_pure)


_bind_constexpr_fn(tensor, _unwrap)  # constexpr functions reject tensors and unwrap tl.constexpr
_set_builder_getter(current_builder_or_none)  # a @jit function called in step-through mode finds the builder


def __getattr__(name):
    """Triton's ``triton.language.core`` also holds every builtin (``tl.core.view``, ``tl.core.dot``, ...): names
    this module does not define are looked up in :mod:`tritium.language.functions` (loaded on first use)."""
    if name.startswith("__"):
        raise AttributeError(name)
    from . import functions

    try:
        return getattr(functions, name)
    except AttributeError:
        raise AttributeError(f"module 'tritium.language.core' (triton.language.core) has no attribute {name!r}: "
                             f"tritium does not provide it") from None
