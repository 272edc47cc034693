"""TTIR -> a NumPy program that runs the whole launch grid at once.

Every SSA value becomes a numpy array whose leading axis is the program axis: size P (the programs of the
chunk being run) or 1 when the value is the same for every program.  Scalars are ``(P_or_1,)``, tensors
``(P_or_1, *shape)``.  Control flow whose condition differs between programs runs under an ``_active``
program mask (None = all programs) and merges results with ``np.where``; see runtime.py.

Only this module imports MLIR.  The generated program imports numpy and ``tritium_interpreter.runtime``.
"""
from __future__ import annotations

import math
from functools import lru_cache

from tritium.dialects import tt
from tritium.dialects.tt import source_of
from tritium.dialects.enums import PaddingOption, PropagateNan, RoundingMode
from tritium.errors import CompilationError

# ----------------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------------


class ElemInfo:
    """How values of an MLIR element type live in numpy.

    ``vdt``: numpy dtype of values; ``sdt``: dtype in memory; ``size``: bytes in memory; ``kind``: special
    handling ("bf16", "i1", "ptr", an fp8 type's name (runtime/fp8.py: float32 values, 8-bit patterns in memory),
    "" for plain types)."""

    def __init__(self, vdt, sdt, size, kind="", name=""):
        self.vdt, self.sdt, self.size, self.kind, self.name = vdt, sdt, size, kind, name


_FP8 = ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ")  # runtime/fp8.py's FORMATS

_ELEMS = {
    "i1": ElemInfo("np.bool_", "np.int8", 1, "i1"),
    "i8": ElemInfo("np.int8", "np.int8", 1),
    "i16": ElemInfo("np.int16", "np.int16", 2),
    "i32": ElemInfo("np.int32", "np.int32", 4),
    "i64": ElemInfo("np.int64", "np.int64", 8),
    "index": ElemInfo("np.int64", "np.int64", 8),
    "f16": ElemInfo("np.float16", "np.float16", 2),
    "f32": ElemInfo("np.float32", "np.float32", 4),
    "f64": ElemInfo("np.float64", "np.float64", 8),
    "bf16": ElemInfo("np.float32", "np.int16", 2, "bf16"),
    **{f8: ElemInfo("np.float32", "np.uint8", 1, f8) for f8 in _FP8},
}


@lru_cache(maxsize=None)
def _elem_info_str(s: str):
    if s in _ELEMS:
        e = _ELEMS[s]
        return ElemInfo(e.vdt, e.sdt, e.size, e.kind, s)
    if s.startswith("!tt.ptr<"):
        return ElemInfo("np.int64", "np.int64", 8, "ptr", s)
    return None


def _split_type(ty):
    """(element type string, shape tuple) of an MLIR type."""
    s = str(ty)
    if s.startswith("tensor<"):
        from mlir import ir
        t = ir.RankedTensorType(ty)
        return str(t.element_type), tuple(t.shape)
    return s, ()


def _is_block_ptr(ty) -> bool:
    s = str(ty)
    return s.startswith("!tt.ptr<tensor<")


def _is_tensordesc(ty) -> bool:
    return str(ty).startswith("!tt.tensordesc<")


def _is_object(ty) -> bool:
    """Values the generated program holds as runtime objects, not arrays: block pointers, tensor descriptors."""
    return _is_block_ptr(ty) or _is_tensordesc(ty)


def _pointee_str(s: str) -> str:
    return s[len("!tt.ptr<"):-1]


# ----------------------------------------------------------------------------------------------
# Locations
# ----------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------------------------
# Op tables
# ----------------------------------------------------------------------------------------------

_BIN_INFIX = {"arith.addi": "+", "arith.addf": "+", "arith.subi": "-", "arith.subf": "-", "arith.muli": "*",
              "arith.mulf": "*", "arith.divf": "/", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}
_BIN_FN = {"arith.remf": "np.fmod", "arith.maxsi": "np.maximum", "arith.minsi": "np.minimum",
           "arith.maxnumf": "np.fmax", "arith.minnumf": "np.fmin", "arith.maximumf": "np.maximum",
           "arith.minimumf": "np.minimum", "arith.divsi": "_rt.divsi", "arith.remsi": "_rt.remsi",
           "arith.divui": "_rt.divui", "arith.remui": "_rt.remui", "arith.floordivsi": "np.floor_divide",
           "arith.ceildivsi": "_rt.ceildivsi", "arith.shli": "_rt.shli", "arith.shrsi": "_rt.shrsi",
           "arith.shrui": "_rt.shrui", "math.powf": "np.power", "math.atan2": "np.arctan2",
           "math.copysign": "np.copysign", "tt.precise_divf": "np.true_divide", "tt.mulhiui": "_rt.mulhiui"}
# i1 arithmetic is modulo 2 (and signed i1 has true == -1)
_BOOL_BIN = {"arith.addi": "^", "arith.subi": "^", "arith.muli": "&", "arith.maxsi": "&", "arith.minsi": "|",
             "arith.maxui": "|", "arith.minui": "&", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}
_UNARY = {"math.exp": "np.exp", "math.exp2": "np.exp2", "math.log": "np.log", "math.log2": "np.log2",
          "math.log10": "np.log10", "math.log1p": "np.log1p", "math.expm1": "np.expm1", "math.sqrt": "np.sqrt",
          "math.rsqrt": "_rt.rsqrt", "math.absf": "np.abs", "math.absi": "np.abs", "math.sin": "np.sin",
          "math.cos": "np.cos", "math.tan": "np.tan", "math.tanh": "np.tanh", "math.sinh": "np.sinh",
          "math.cosh": "np.cosh", "math.asin": "np.arcsin", "math.acos": "np.arccos", "math.atan": "np.arctan",
          "math.asinh": "np.arcsinh", "math.acosh": "np.arccosh", "math.atanh": "np.arctanh",
          "math.erf": "_rt.erf", "math.floor": "np.floor", "math.ceil": "np.ceil", "math.trunc": "np.trunc",
          "math.round": "_rt.round_half_away", "math.roundeven": "np.rint", "math.cbrt": "np.cbrt",
          "math.ctpop": "_rt.ctpop", "math.ctlz": "_rt.ctlz", "math.cttz": "_rt.cttz",
          "arith.negf": "np.negative", "tt.precise_sqrt": "np.sqrt",
          "math.isnan": "np.isnan", "math.isinf": "np.isinf", "math.isfinite": "np.isfinite"}
_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
_CMPI_BOOL_SIGNED = {2: ">", 3: ">=", 4: "<", 5: "<="}   # i1 signed: true (-1) < false (0)
_CMPF = {1: "({a} == {b})", 2: "({a} > {b})", 3: "({a} >= {b})", 4: "({a} < {b})", 5: "({a} <= {b})",
         6: "_rt.cmpf_one({a}, {b})", 7: "_rt.cmpf_ord({a}, {b})", 8: "_rt.cmpf_ueq({a}, {b})",
         9: "~({a} <= {b})", 10: "~({a} < {b})", 11: "~({a} >= {b})", 12: "~({a} > {b})", 13: "({a} != {b})",
         14: "_rt.cmpf_uno({a}, {b})"}
# combine functions that are a single op -> numpy ufunc
_REDUCE_UFUNC = {"arith.addf": "np.add", "arith.addi": "np.add", "arith.mulf": "np.multiply",
                 "arith.muli": "np.multiply", "arith.maxnumf": "np.fmax", "arith.maximumf": "np.maximum",
                 "arith.minnumf": "np.fmin", "arith.minimumf": "np.minimum", "arith.maxsi": "np.maximum",
                 "arith.minsi": "np.minimum", "arith.andi": "np.bitwise_and", "arith.ori": "np.bitwise_or",
                 "arith.xori": "np.bitwise_xor", "arith.maxui": "UMAX", "arith.minui": "UMIN"}
_BOOL_REDUCE = {"np.add": "np.bitwise_xor", "np.multiply": "np.bitwise_and", "np.maximum": "np.bitwise_and",
                "np.minimum": "np.bitwise_or", "UMAX": "np.bitwise_or", "UMIN": "np.bitwise_and"}
_COMMUTATIVE_ONLY_SWAP = set(_REDUCE_UFUNC)

def _pyfloat(v: float) -> str:
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(float(v))


def _wrap_int(v: int, bits: int) -> int:
    if bits == 1:
        return 1 if v & 1 else 0
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


# ----------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------


class _Gen:
    def __init__(self, module):
        self.module = module
        self.consts = []        # module-level lines
        self.const_cache = {}
        self.names = {}
        self.n = 0
        self.max_numel = 1
        self.funcs = {}
        self.out = []
        self.kernel_name = ""
        # values left unmaterialised: arrays of the value's rank whose dims are the full size or 1 (a splat is
        # (L, 1, ..., 1)), which numpy broadcasting expands; only ever consumed by _ELEMENTWISE ops
        self.lazy = set()

    # names -------------------------------------------------------------------------------------
    def fresh(self, prefix="v"):
        self.n += 1
        return f"{prefix}{self.n}"

    def define(self, value, prefix="v"):
        name = self.fresh(prefix)
        self.names[value] = name
        _, shape = _split_type(value.type)
        if shape:
            self.max_numel = max(self.max_numel, tt.numel(shape))
        return name

    def get(self, value):
        try:
            return self.names[value]
        except KeyError:
            raise CompilationError("internal error: value used before it is defined") from None

    def const(self, text, prefix="_K"):
        name = self.const_cache.get(text)
        if name is None:
            name = f"{prefix}{len(self.const_cache)}"
            self.const_cache[text] = name
            self.consts.append(f"{name} = {text}")
        return name

    def loc(self, op):
        t = source_of(op.location)
        if t is None:
            return "None"
        return self.const(repr(t), "_L")

    def err(self, op, message):
        t = source_of(op.location) or ("", 0, 0)
        raise CompilationError(message, t[0], t[1], t[2] if t[0] else None, kernel=self.kernel_name)

    def elem(self, op, type_str):
        e = _elem_info_str(type_str)
        if e is None:
            self.err(op, f"the interpreter does not support the element type {type_str}")
        return e

    # module --------------------------------------------------------------------------------------
    def run(self):
        from mlir import ir
        kernels = []
        for op in self.module.body.operations:
            o = op.operation
            if o.name != "func.func":
                continue
            name = ir.StringAttr(o.attributes["sym_name"]).value
            self.funcs[name] = o
            vis = ir.StringAttr(o.attributes["sym_visibility"]).value if "sym_visibility" in o.attributes else "public"
            if vis != "private":
                kernels.append(o)
        if not kernels:
            raise CompilationError("the TTIR module has no public kernel function")
        kernel = kernels[0]
        self.kernel_name = ir.StringAttr(kernel.attributes["sym_name"]).value
        body = []
        for name, f in self.funcs.items():
            if f is kernel:
                continue
            if not f.regions[0].blocks:
                continue
            self.emit_func(f, f"_f_{name}", body, private=True)
            body.append("")
        self.emit_func(kernel, "kernel", body, private=False)
        arg_types = [str(a.type) for a in kernel.regions[0].blocks[0].arguments]
        head = [
            f"# NumPy program generated by tritium_interpreter from TTIR kernel '{self.kernel_name}'.",
            "# Values: arrays with a leading program axis (size P, or 1 when uniform across programs).",
            "import numpy as np",
            "from tritium_interpreter import runtime as _rt",
            "from tritium_interpreter import libdevice as _ld",
            "",
            f"NAME = {self.kernel_name!r}",
            f"ARG_TYPES = {tuple(arg_types)!r}",
            f"MAX_NUMEL = {self.max_numel}",
            "",
        ]
        return "\n".join(head + self.consts + ["", ""] + body) + "\n"

    def emit_func(self, f, pyname, out, private):
        block = f.regions[0].blocks[0]
        args = [self.define(a, "a") for a in block.arguments]
        if private:
            out.append(f"def {pyname}(_ctx, _active, {', '.join(args)}):")
        else:
            out.append(f"def {pyname}(_ctx, {', '.join(args)}):")
            out.append("    _active = None")
        self.emit_block(block, out, 1, term="func")

    def emit_block(self, block, out, ind, term):
        pad = "    " * ind
        n0 = len(out)
        for op in block.operations:
            self.emit_op(op.operation, out, pad, term)
        if len(out) == n0:
            out.append(pad + "pass")

    # regions -------------------------------------------------------------------------------------
    def region_fn(self, region, out, pad, extra_args, term):
        """Emit ``def _rN(_active, args...)`` for a single-block region; returns its name."""
        name = self.fresh("_r")
        block = region.blocks[0]
        args = [self.define(a) for a in block.arguments]
        params = ", ".join(["_active"] + args)
        out.append(f"{pad}def {name}({params}):")
        self.emit_block(block, out, len(pad) // 4 + 1, term)
        return name

    # ops -----------------------------------------------------------------------------------------
    def emit_op(self, op, out, pad, term):
        name = op.name
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, op, out, pad)
            if name in _ELEMENTWISE:
                self.after_elementwise(op, out, pad)
            return
        if name in ("func.return", "scf.yield"):
            vals = [self.get(v) for v in op.operands]
            if term == "func" and not vals and name == "func.return":
                out.append(f"{pad}return ()")
            else:
                out.append(f"{pad}return ({''.join(v + ', ' for v in vals)})")
            return
        if name == "scf.condition":
            vals = [self.get(v) for v in op.operands]
            out.append(f"{pad}return {vals[0]}, ({''.join(v + ', ' for v in vals[1:])})")
            return
        if name in _BIN_INFIX or name in _BIN_FN or name in ("arith.maxui", "arith.minui"):
            self.binary(op, out, pad)
            self.after_elementwise(op, out, pad)
            return
        if name in _UNARY:
            a = self.get(op.operands[0])
            r = op.results[0]
            et, _ = _split_type(r.type)
            expr = f"{_UNARY[name]}({a})"
            if name in ("math.ctpop", "math.ctlz", "math.cttz", "math.isnan", "math.isinf", "math.isfinite"):
                pass
            out.append(f"{pad}{self.define(r)} = {self.round(expr, et)}")
            self.after_elementwise(op, out, pad)
            return
        self.err(op, f"the interpreter does not support op '{name}'")

    def after_elementwise(self, op, out, pad):
        """An elementwise op's result is lazy (see ``self.lazy``) when every tensor operand is; it stays so when
        only elementwise ops use it, else it is materialised (broadcast to its full shape) where it is defined."""
        if len(op.results) != 1:
            return
        r = op.results[0]
        _, shape = _split_type(r.type)
        if not shape:
            return
        ts = [v for v in op.operands if _split_type(v.type)[1]]
        if not ts or not all(v in self.lazy for v in ts):
            return
        if _only_elementwise_uses(r):
            self.lazy.add(r)
        else:
            name = self.get(r)
            out.append(f"{pad}{name} = _rt.bcast({name}, {shape!r})")

    def round(self, expr, et):
        """``expr`` (float values) rounded to element type ``et`` where its values are held in a wider numpy
        type: bf16 and the fp8 types (float32)."""
        if et == "bf16":
            return f"_rt.round_bf16({expr})"
        if et in _FP8:
            return f"_rt.round_fp8({expr}, {et!r})"
        return expr

    def binary(self, op, out, pad):
        name = op.name
        a, b = (self.get(v) for v in op.operands)
        r = op.results[0]
        et, _ = _split_type(r.type)
        if et == "i1" and name in _BOOL_BIN:
            expr = f"({a} {_BOOL_BIN[name]} {b})"
        elif name in _BIN_INFIX:
            expr = f"({a} {_BIN_INFIX[name]} {b})"
        elif name == "arith.maxui":
            expr = f"_rt.s(np.maximum(_rt.u({a}), _rt.u({b})), {a}.dtype)"
        elif name == "arith.minui":
            expr = f"_rt.s(np.minimum(_rt.u({a}), _rt.u({b})), {a}.dtype)"
        else:
            expr = f"{_BIN_FN[name]}({a}, {b})"
        out.append(f"{pad}{self.define(r)} = {self.round(expr, et)}")


# handlers: fn(gen, op, out, pad) ---------------------------------------------------------------

def _predicate(op) -> int:
    """The ``predicate`` of an ``arith.cmpi`` / ``arith.cmpf`` (an integer attribute)."""
    return int(op.attributes["predicate"].value)


def _h_constant(g, op, out, pad):
    from mlir import ir
    r = op.results[0]
    et, shape = _split_type(r.type)
    e = g.elem(op, et)
    attr = op.attributes["value"]
    if not shape:
        if et == "i1" or isinstance(attr, ir.BoolAttr):
            v = bool(attr.value) if isinstance(attr, ir.BoolAttr) else bool(int(attr.value) & 1)
            text = f"np.array([{v}], np.bool_)"
        elif et.startswith("i") or et == "index":
            bits = 64 if et == "index" else int(et[1:])
            text = f"np.array([{_wrap_int(int(attr.value), bits)}], {e.vdt})"
        else:
            v = float(ir.FloatAttr(attr).value)
            text = g.round(f"np.array([{_pyfloat(v)}], {e.vdt})", et)
    else:
        splat = getattr(attr, "is_splat", False)
        if splat:
            sv = attr.get_splat_value()
            if et == "i1":
                v = repr(bool(sv.value) if isinstance(sv, ir.BoolAttr) else bool(int(sv.value) & 1))
            elif et.startswith("i") or et == "index":
                v = repr(_wrap_int(int(sv.value), 64 if et == "index" else int(et[1:])))
            else:
                v = _pyfloat(float(ir.FloatAttr(sv).value))
            scalar = g.round(f"np.array({v}, {e.vdt})", et)
            text = f"np.broadcast_to({scalar}, {(1,) + shape!r})"
        else:
            import numpy as np
            if et == "bf16" or et in _FP8:  # no numpy dtype: element by element
                vals = [attr[i].value for i in range(len(attr))]
            else:
                vals = np.array(attr).reshape(-1).tolist()
            if et.startswith("f") or et == "bf16":
                lst = "[" + ", ".join(_pyfloat(float(x)) for x in vals) + "]"
            elif et == "i1":
                lst = repr([bool(x) for x in vals])
            else:
                lst = repr([int(x) for x in vals])
            text = g.round(f"np.array({lst}, {e.vdt}).reshape({(1,) + shape!r})", et)
    out.append(f"{pad}{g.define(r)} = {g.const(text)}")


def _h_poison(g, op, out, pad):
    r = op.results[0]
    et, shape = _split_type(r.type)
    e = g.elem(op, et)
    out.append(f"{pad}{g.define(r)} = {g.const(f'np.zeros({(1,) + shape!r}, {e.vdt})')}")


def _h_cmpi(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    pred = _predicate(op)
    et, _ = _split_type(op.operands[0].type)
    if et == "i1" and pred in _CMPI_BOOL_SIGNED:
        expr = f"({a} {_CMPI_BOOL_SIGNED[pred]} {b})"
    elif pred >= 6 and et != "i1":
        expr = f"(_rt.u({a}) {_CMPI[pred]} _rt.u({b}))"
    else:
        expr = f"({a} {_CMPI[pred]} {b})"
    out.append(f"{pad}{g.define(op.results[0])} = {expr}")


def _h_cmpf(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    pred = _predicate(op)
    r = op.results[0]
    if pred == 0:
        expr = f"np.zeros(np.broadcast_shapes({a}.shape, {b}.shape), np.bool_)"
    elif pred == 15:
        expr = f"np.ones(np.broadcast_shapes({a}.shape, {b}.shape), np.bool_)"
    else:
        expr = _CMPF[pred].format(a=a, b=b)
    out.append(f"{pad}{g.define(r)} = {expr}")


def _h_select(g, op, out, pad):
    c, a, b = (g.get(v) for v in op.operands)
    r = op.results[0]
    if _is_object(r.type):
        out.append(f"{pad}{g.define(r)} = _rt.select({c}, {a}, {b})")
        return
    _, cs = _split_type(op.operands[0].type)
    _, rs = _split_type(r.type)
    if len(cs) != len(rs):
        out.append(f"{pad}{g.define(r)} = np.where(_rt.bmask({c}, {len(rs) + 1}), {a}, {b})")
    else:
        out.append(f"{pad}{g.define(r)} = np.where({c}, {a}, {b})")


def _cast(kind):
    def h(g, op, out, pad):
        a = g.get(op.operands[0])
        r = op.results[0]
        st, _ = _split_type(op.operands[0].type)
        rt, _ = _split_type(r.type)
        es, er = g.elem(op, st), g.elem(op, rt)
        if kind == "extsi":
            expr = f"_rt.extsi({a}, {er.vdt})"
        elif kind in ("extui", "index_castui"):
            if kind == "index_castui" and er.size < es.size:
                expr = f"_rt.trunci({a}, {er.vdt})"
            else:
                expr = f"_rt.extui({a}, {er.vdt})"
        elif kind == "trunci":
            expr = f"_rt.trunci({a}, {er.vdt})"
        elif kind == "index_cast":
            expr = f"_rt.extsi({a}, {er.vdt})" if er.size >= es.size else f"_rt.trunci({a}, {er.vdt})"
        elif kind == "sitofp":
            expr = g.round(f"_rt.sitofp({a}, {er.vdt})", rt)
        elif kind == "uitofp":
            expr = g.round(f"_rt.uitofp({a}, {er.vdt})", rt)
        elif kind == "fptosi":
            expr = f"_rt.fptosi({a}, {er.vdt})"
        elif kind == "fptoui":
            expr = f"_rt.fptoui({a}, {er.vdt})"
        elif kind in ("extf", "truncf", "fp_to_fp"):
            # tt.fp_to_fp's rounding: rtz on a downcast (to fp8, bf16, f16, f32), else to nearest even
            rtz = kind == "fp_to_fp" and es.size > er.size and \
                tt.decode_attributes(op).get("rounding") == RoundingMode.RTZ
            if st == rt:
                expr = a
            elif rt in _FP8:
                expr = f"_rt.round_fp8({a}, {rt!r}{', True' if rtz else ''})"
            elif rt == "bf16":
                expr = f"_rt.round_bf16_rtz({a})" if rtz else f"_rt.round_bf16({a})"
            elif rtz:
                expr = f"_rt.round_rtz({a}, {er.vdt})"
            else:
                expr = f"{a}.astype({er.vdt})"
        elif kind == "bitcast":
            if es.kind == "ptr" or er.kind == "ptr" or st == rt:
                expr = a
            else:
                sk, dk = (x.kind if x.kind not in ("i1", "ptr") else "" for x in (es, er))
                expr = f"_rt.bitcast({a}, {er.sdt if er.kind != 'i1' else er.vdt}, {sk!r}, {dk!r})"
        else:  # pragma: no cover
            g.err(op, f"unknown cast {kind}")
        out.append(f"{pad}{g.define(r)} = {expr}")
    return h


def _h_ext_mul(signed):
    def h(g, op, out, pad):
        a, b = (g.get(v) for v in op.operands)
        lo, hi = (g.define(r) for r in op.results)
        out.append(f"{pad}{lo}, {hi} = _rt.{'mulsi_ext' if signed else 'mului_ext'}({a}, {b})")
    return h


def _h_fma(g, op, out, pad):
    a, b, c = (g.get(v) for v in op.operands)
    r = op.results[0]
    et, _ = _split_type(r.type)
    out.append(f"{pad}{g.define(r)} = {g.round(f'_rt.fma({a}, {b}, {c})', et)}")


def _h_fpowi(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    r = op.results[0]
    et, _ = _split_type(r.type)
    out.append(f"{pad}{g.define(r)} = {g.round(f'np.power({a}, {b}.astype({a}.dtype))', et)}")


def _h_ipowi(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    out.append(f"{pad}{g.define(op.results[0])} = np.power({a}, np.maximum({b}, 0))")


# scf ---------------------------------------------------------------------------------------------

def _unpack(names):
    if not names:
        return ""
    return ", ".join(names) + (", = " if len(names) == 1 else " = ")


def _h_for(g, op, out, pad):
    lb, ub, step, *inits = (g.get(v) for v in op.operands)
    body = g.region_fn(op.regions[0], out, pad, None, "scf")
    res = [g.define(r) for r in op.results]
    tup = "(" + "".join(x + ", " for x in inits) + ")"
    out.append(f"{pad}{_unpack(res)}_rt.for_loop({body}, {lb}, {ub}, {step}, {tup}, _active)")


def _h_if(g, op, out, pad):
    c = g.get(op.operands[0])
    then = g.region_fn(op.regions[0], out, pad, None, "scf")
    els = "None"
    if len(op.regions) > 1 and op.regions[1].blocks:
        els = g.region_fn(op.regions[1], out, pad, None, "scf")
    res = [g.define(r) for r in op.results]
    out.append(f"{pad}{_unpack(res)}_rt.if_({c}, {then}, {els}, _active)")


def _h_while(g, op, out, pad):
    inits = [g.get(v) for v in op.operands]
    before = g.region_fn(op.regions[0], out, pad, None, "scf")
    after = g.region_fn(op.regions[1], out, pad, None, "scf")
    res = [g.define(r) for r in op.results]
    tup = "(" + "".join(x + ", " for x in inits) + ")"
    out.append(f"{pad}{_unpack(res)}_rt.while_({before}, {after}, {tup}, _active, _ctx, {g.loc(op)})")


def _h_call(g, op, out, pad):
    callee = op.attributes["callee"].value
    if callee not in g.funcs:
        g.err(op, f"call to unknown function @{callee}")
    args = [g.get(v) for v in op.operands]
    res = [g.define(r) for r in op.results]
    out.append(f"{pad}{_unpack(res) if res else ''}_f_{callee}(_ctx, _active{''.join(', ' + a for a in args)})")


# tt ----------------------------------------------------------------------------------------------

def _h_pid(g, op, out, pad):
    out.append(f"{pad}{g.define(op.results[0])} = _ctx.pid[{int(tt.decode_attributes(op)['axis'])}]")


def _h_nprog(g, op, out, pad):
    out.append(f"{pad}{g.define(op.results[0])} = _ctx.nprog[{int(tt.decode_attributes(op)['axis'])}]")


def _h_make_range(g, op, out, pad):
    attrs = tt.decode_attributes(op)
    s, e = attrs["start"], attrs["end"]
    out.append(f"{pad}{g.define(op.results[0])} = {g.const(f'np.arange({s}, {e}, dtype=np.int32)[None]')}")


def _lazy_or(view, runtime_fn):
    """The handler of ``tt.splat`` / ``tt.broadcast``: a result only elementwise ops use stays lazy, ``view(a,
    shape)`` (numpy broadcasting in those ops expands it); else ``_rt.<runtime_fn>(a, shape)`` materialises it."""
    def h(g, op, out, pad):
        a = g.get(op.operands[0])
        r = op.results[0]
        _, shape = _split_type(r.type)
        if _only_elementwise_uses(r):
            out.append(f"{pad}{g.define(r)} = {view(a, shape)}")
            g.lazy.add(r)
            return
        out.append(f"{pad}{g.define(r)} = _rt.{runtime_fn}({a}, {shape!r})")
    return h


_h_splat = _lazy_or(lambda a, shape: f"{a}[:{', None' * len(shape)}]", "splat")  # (L,) -> (L, 1, ..., 1)
_h_broadcast = _lazy_or(lambda a, shape: a, "bcast")  # size-1 dims broadcast in the ops that use it


def _h_expand_dims(g, op, out, pad):
    a = g.get(op.operands[0])
    out.append(f"{pad}{g.define(op.results[0])} = np.expand_dims({a}, {tt.decode_attributes(op)['axis'] + 1})")


def _h_reshape(g, op, out, pad):
    a = g.get(op.operands[0])
    r = op.results[0]
    _, shape = _split_type(r.type)
    out.append(f"{pad}{g.define(r)} = _rt.reshape({a}, {shape!r})")


def _h_trans(g, op, out, pad):
    a = g.get(op.operands[0])
    perm = (0,) + tuple(o + 1 for o in tt.decode_attributes(op)["order"])
    out.append(f"{pad}{g.define(op.results[0])} = {a}.transpose({perm!r})")


def _h_cat(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.cat({a}, {b})")


def _h_join(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.join({a}, {b})")


def _h_split(g, op, out, pad):
    a = g.get(op.operands[0])
    x, y = (g.define(r) for r in op.results)
    out.append(f"{pad}{x}, {y} = {a}[..., 0], {a}[..., 1]")


def _h_gather(g, op, out, pad):
    a, b = (g.get(v) for v in op.operands)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.gather({a}, {b}, {tt.decode_attributes(op)['axis']})")


def _ptr_elem(g, op, ptr_type):
    """ElemInfo of what a (tensor of) pointer points to."""
    et, _ = _split_type(ptr_type)
    return g.elem(op, _pointee_str(et))


def _h_addptr(g, op, out, pad):
    p, o = (g.get(v) for v in op.operands)
    e = _ptr_elem(g, op, op.operands[0].type)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.addptr({p}, {o}, {e.size})")


def _mem_args(g, op, ptr, out, pad):
    """(address expression, ElemInfo) for a load/store; handles block pointers."""
    pty = ptr.type
    p = g.get(ptr)
    if _is_block_ptr(pty):
        et, shape = _split_type_str(_pointee_str(str(pty)))
        e = g.elem(op, et)
        attrs = tt.decode_attributes(op)
        check = attrs.get("boundaryCheck", ())
        nan = attrs.get("padding") == PaddingOption.PAD_NAN
        padexpr = f"np.array(float('nan'), {e.vdt})" if nan else "None"
        t = g.fresh("_bp")
        out.append(f"{pad}{t} = _rt.block_addrs({p}, {check!r}) + ({padexpr},)")
        return t, e
    return p, _ptr_elem(g, op, pty)


def _split_type_str(s):
    # "tensor<64x32xf16>" -> ("f16", (64, 32))
    inner = s[len("tensor<"):-1]
    parts = inner.split("x")
    dims, rest = [], []
    for i, x in enumerate(parts):
        if x.isdigit():
            dims.append(int(x))
        else:
            rest = parts[i:]
            break
    return "x".join(rest), tuple(dims)


def _h_load(g, op, out, pad):
    ptr, mask, other = tt.split_operands(op)
    addr, e = _mem_args(g, op, ptr, out, pad)
    m = g.get(mask) if mask is not None else "None"
    o = g.get(other) if other is not None else "None"
    out.append(f"{pad}{g.define(op.results[0])} = _rt.load(_ctx, {addr}, {m}, {o}, _active, {e.sdt}, {e.size}, "
               f"{e.kind!r}, {g.loc(op)}, {e.name!r})")


def _h_store(g, op, out, pad):
    ptr, val, mask = tt.split_operands(op)
    addr, e = _mem_args(g, op, ptr, out, pad)
    m = g.get(mask) if mask is not None else "None"
    out.append(f"{pad}_rt.store(_ctx, {addr}, {g.get(val)}, {m}, _active, {e.sdt}, {e.size}, {e.kind!r}, "
               f"{g.loc(op)}, {e.name!r})")


def _h_atomic_rmw(g, op, out, pad):
    ptr, val, mask = tt.split_operands(op)
    e = _ptr_elem(g, op, ptr.type)
    kind = tt.decode_attributes(op)["atomic_rmw_op"]  # an RMWOp; the runtime takes its value
    m = g.get(mask) if mask is not None else "None"
    out.append(f"{pad}{g.define(op.results[0])} = _rt.atomic(_ctx, {int(kind)}, {g.get(ptr)}, {g.get(val)}, None, {m}, "
               f"_active, {e.sdt}, {e.size}, {e.kind!r}, {g.loc(op)}, {e.name!r})")


def _h_atomic_cas(g, op, out, pad):
    ptr, cmp, val = op.operands
    e = _ptr_elem(g, op, ptr.type)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.atomic(_ctx, 0, {g.get(ptr)}, {g.get(val)}, {g.get(cmp)}, "
               f"None, _active, {e.sdt}, {e.size}, {e.kind!r}, {g.loc(op)}, {e.name!r})")


def _h_make_tensor_ptr(g, op, out, pad):
    base, *groups = tt.split_operands(op)
    base = g.get(base)
    shape, strides, offsets = ([g.get(v) for v in grp] for grp in groups)
    r = op.results[0]
    et, block = _split_type_str(_pointee_str(str(r.type)))
    e = g.elem(op, et)
    order = tt.decode_attributes(op).get("order", ())
    out.append(f"{pad}{g.define(r)} = _rt.make_block_ptr({base}, [{', '.join(shape)}], [{', '.join(strides)}], "
               f"[{', '.join(offsets)}], {order!r}, {block!r}, {e.size})")


def _h_advance(g, op, out, pad):
    p, *offs = (g.get(v) for v in op.operands)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.advance({p}, [{', '.join(offs)}])")


def _h_make_tensor_descriptor(g, op, out, pad):
    base, shape, strides = tt.split_operands(op)
    r = op.results[0]
    et, block = _split_type_str(str(r.type)[len("!tt.tensordesc<"):-1])
    e = g.elem(op, et)
    nan = tt.decode_attributes(op).get("padding") == PaddingOption.PAD_NAN
    padexpr = g.const(f"np.array(float('nan'), {e.vdt})") if nan else "None"
    out.append(f"{pad}{g.define(r)} = _rt.make_tensor_desc(_ctx, {g.get(base)}, [{', '.join(map(g.get, shape))}], "
               f"[{', '.join(map(g.get, strides))}], {block!r}, {e.size}, {padexpr}, _active, {g.loc(op)})")


def _desc_addrs(g, op, desc, indices, out, pad):
    """(name of the (addresses, mask, padding) tuple, ElemInfo) of a descriptor load / store."""
    et, _ = _split_type_str(str(desc.type)[len("!tt.tensordesc<"):-1])
    t = g.fresh("_td")
    out.append(f"{pad}{t} = _rt.desc_addrs(_ctx, {g.get(desc)}, [{', '.join(map(g.get, indices))}], _active, "
               f"{g.loc(op)})")
    return t, g.elem(op, et)


def _h_descriptor_load(g, op, out, pad):
    desc, indices = tt.split_operands(op)
    addr, e = _desc_addrs(g, op, desc, indices, out, pad)
    out.append(f"{pad}{g.define(op.results[0])} = _rt.load(_ctx, {addr}, None, None, _active, {e.sdt}, {e.size}, "
               f"{e.kind!r}, {g.loc(op)}, {e.name!r})")


def _h_descriptor_store(g, op, out, pad):
    desc, src, indices = tt.split_operands(op)
    addr, e = _desc_addrs(g, op, desc, indices, out, pad)
    out.append(f"{pad}_rt.store(_ctx, {addr}, {g.get(src)}, None, _active, {e.sdt}, {e.size}, {e.kind!r}, "
               f"{g.loc(op)}, {e.name!r})")


def _h_identity_i64(g, op, out, pad):
    out.append(f"{pad}{g.define(op.results[0])} = {g.get(op.operands[0])}.astype(np.int64)")


def _h_dot(g, op, out, pad):
    a, b, c = (g.get(v) for v in op.operands)
    r = op.results[0]
    et, _ = _split_type(r.type)
    e = g.elem(op, et)
    if et in ("f16", "bf16") or et in _FP8:
        expr = f"(np.matmul({a}.astype(np.float32), {b}.astype(np.float32)) + {c}).astype({e.vdt})"
        expr = g.round(expr, et)
    else:
        expr = f"(np.matmul({a}.astype({e.vdt}), {b}.astype({e.vdt})) + {c})"
    out.append(f"{pad}{g.define(r)} = {expr}")


def _h_clampf(g, op, out, pad):
    x, lo, hi = (g.get(v) for v in op.operands)
    prop = tt.decode_attributes(op).get("propagateNan", PropagateNan.NONE) == PropagateNan.ALL
    out.append(f"{pad}{g.define(op.results[0])} = _rt.clampf({x}, {lo}, {hi}, {prop})")


def _h_histogram(g, op, out, pad):
    src, mask = tt.split_operands(op)
    src = g.get(src)
    m = g.get(mask) if mask is not None else "None"
    r = op.results[0]
    et, shape = _split_type(r.type)
    e = g.elem(op, et)
    out.append(f"{pad}{g.define(r)} = _rt.histogram(_ctx, {src}, {shape[0]}, {m}, _active, {e.vdt})")


def _h_extern(g, op, out, pad):
    from . import libdevice
    sym = tt.decode_attributes(op)["symbol"]
    if libdevice.lookup(sym) is None:
        g.err(op, libdevice.missing(sym))
    args = ", ".join(g.get(v) for v in op.operands)
    r = op.results[0]
    et, _ = _split_type(r.type)
    e = g.elem(op, et)
    fname = g.const(f"_ld.lookup({sym!r})", "_X")
    expr = f"np.asarray({fname}({args})).astype({e.vdt}, copy=False)"
    out.append(f"{pad}{g.define(r)} = {g.round(expr, et)}")


def _h_inline_asm(g, op, out, pad):
    from . import inline_asm
    asm = tt.decode_attributes(op)["asm_string"]
    fn = inline_asm.lookup(asm, len(op.operands)) if len(op.results) == 1 else None
    if fn is None:
        g.err(op, "tt.elementwise_inline_asm (inline assembly) is not supported on the interpreter")
    r = op.results[0]
    et, shape = _split_type(r.type)
    e = g.elem(op, et)
    f = g.const(f"__import__('tritium_interpreter.inline_asm').inline_asm.{fn}", "_X")
    out.append(f"{pad}{g.define(r)} = {f}({tuple(shape or ())!r}, {e.vdt})")


def _combine_info(g, op):
    """(function name, ufunc or None) of a reduce/scan's combine function."""
    name = tt.decode_attributes(op)["combine"]
    f = g.funcs.get(name)
    if f is None:
        g.err(op, f"combine function @{name} not found")
    block = f.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    args = list(block.arguments)
    uf = None
    if len(args) == 2 and len(ops) == 2 and ops[0].name in _REDUCE_UFUNC and ops[1].name == "func.return":
        b = ops[0]
        opnds = list(b.operands)
        if len(opnds) == 2 and (opnds == args or opnds == args[::-1]) and \
                len(list(ops[1].operands)) == 1 and ops[1].operands[0] == b.results[0]:
            uf = _REDUCE_UFUNC[b.name]
            et, _ = _split_type(args[0].type)
            if et == "i1":
                uf = _BOOL_REDUCE.get(uf, uf)
    return name, uf


def _along_axis(kind):
    """The handler of ``tt.reduce`` / ``tt.scan`` (``kind``): ``_rt.<kind>_ufunc`` when the combine function is one
    op numpy has a ufunc for, else ``_rt.<kind>_generic`` calling the combine function (a scan also passes
    ``reverse``)."""
    def h(g, op, out, pad):
        name, uf = _combine_info(g, op)
        attrs = tt.decode_attributes(op)
        axis = attrs["axis"]
        extra = f", {attrs.get('reverse', False)}" if kind == "scan" else ""
        srcs = [g.get(v) for v in op.operands]
        res = [g.define(r) for r in op.results]
        et = _split_type(op.operands[0].type)[0]
        rnd = et if et == "bf16" or et in _FP8 else None  # values held wider: rounded after the ufunc
        if uf in ("UMAX", "UMIN"):
            fn = "np.maximum" if uf == "UMAX" else "np.minimum"
            out.append(f"{pad}{res[0]} = _rt.s(_rt.{kind}_ufunc({fn}, _rt.u({srcs[0]}), {axis}{extra}), "
                       f"{srcs[0]}.dtype)")
        elif uf is not None:
            out.append(f"{pad}{res[0]} = _rt.{kind}_ufunc({uf}, {srcs[0]}, {axis}{extra}, {rnd!r})")
        else:
            out.append(f"{pad}{_unpack(res)}_rt.{kind}_generic(lambda _a, *_x: _f_{name}(_ctx, _a, *_x), "
                       f"({''.join(s + ', ' for s in srcs)}), {axis}{extra})")
    return h


def _h_map_elementwise(g, op, out, pad):
    attrs = tt.decode_attributes(op)
    name, pack = attrs["combine"], int(attrs.get("pack", 1) or 1)
    if name not in g.funcs:
        g.err(op, f"map_elementwise function @{name} not found")
    srcs = [g.get(v) for v in op.operands]
    res = [g.define(r) for r in op.results]
    _, shape = _split_type(op.results[0].type)
    out.append(f"{pad}{_unpack(res)}_rt.map_elementwise(lambda _a, *_x: _f_{name}(_ctx, _a, *_x), "
               f"({''.join(s + ', ' for s in srcs)}), {pack}, {tuple(shape)!r}, _active)")


def _h_print(g, op, out, pad):
    attrs = tt.decode_attributes(op)
    prefix, hex_ = attrs.get("prefix", ""), attrs.get("hex", False)
    args = [g.get(v) for v in op.operands]
    out.append(f"{pad}_rt.device_print(_ctx, {prefix!r}, ({''.join(a + ', ' for a in args)}), _active, {hex_}, "
               f"None)")


def _h_assert(g, op, out, pad):
    c = g.get(op.operands[0])
    msg = tt.decode_attributes(op).get("message", "")
    out.append(f"{pad}_rt.device_assert(_ctx, {c}, {msg!r}, _active, {g.loc(op)})")


def _h_barrier(g, op, out, pad):
    pass  # a program's threads run as one: every write is seen at once


def _h_assume(g, op, out, pad):
    c = g.get(op.operands[0])  # an assumption that does not hold is undefined behaviour on the GPU: an error here
    out.append(f"{pad}_rt.device_assert(_ctx, {c}, 'tl.assume: the assumed condition does not hold', _active, "
               f"{g.loc(op)})")


_HANDLERS = {
    "arith.constant": _h_constant,
    "ub.poison": _h_poison,
    "arith.cmpi": _h_cmpi,
    "arith.cmpf": _h_cmpf,
    "arith.select": _h_select,
    "arith.extsi": _cast("extsi"), "arith.extui": _cast("extui"), "arith.trunci": _cast("trunci"),
    "arith.sitofp": _cast("sitofp"), "arith.uitofp": _cast("uitofp"), "arith.fptosi": _cast("fptosi"),
    "arith.fptoui": _cast("fptoui"), "arith.extf": _cast("extf"), "arith.truncf": _cast("truncf"),
    "arith.bitcast": _cast("bitcast"), "arith.index_cast": _cast("index_cast"),
    "arith.index_castui": _cast("index_castui"),
    "arith.mulsi_extended": _h_ext_mul(True), "arith.mului_extended": _h_ext_mul(False),
    "math.fma": _h_fma, "math.fpowi": _h_fpowi, "math.ipowi": _h_ipowi,
    "scf.for": _h_for, "scf.if": _h_if, "scf.while": _h_while, "func.call": _h_call,
    "tt.get_program_id": _h_pid, "tt.get_num_programs": _h_nprog, "tt.make_range": _h_make_range,
    "tt.splat": _h_splat, "tt.broadcast": _h_broadcast, "tt.expand_dims": _h_expand_dims,
    "tt.reshape": _h_reshape, "tt.trans": _h_trans, "tt.cat": _h_cat, "tt.join": _h_join, "tt.split": _h_split,
    "tt.gather": _h_gather, "tt.addptr": _h_addptr, "tt.load": _h_load, "tt.store": _h_store,
    "tt.atomic_rmw": _h_atomic_rmw, "tt.atomic_cas": _h_atomic_cas, "tt.make_tensor_ptr": _h_make_tensor_ptr,
    "tt.advance": _h_advance, "tt.make_tensor_descriptor": _h_make_tensor_descriptor,
    "tt.descriptor_load": _h_descriptor_load, "tt.descriptor_store": _h_descriptor_store,
    "tt.int_to_ptr": _h_identity_i64, "tt.ptr_to_int": _h_identity_i64,
    "tt.dot": _h_dot, "tt.bitcast": _cast("bitcast"), "tt.fp_to_fp": _cast("fp_to_fp"), "tt.clampf": _h_clampf,
    "tt.histogram": _h_histogram, "tt.extern_elementwise": _h_extern,
    "tt.elementwise_inline_asm": _h_inline_asm, "tt.reduce": _along_axis("reduce"), "tt.map_elementwise": _h_map_elementwise, "tt.scan": _along_axis("scan"),
    "tt.print": _h_print, "tt.assert": _h_assert, "tt.barrier": _h_barrier, "tt.assume": _h_assume,
}

# ops that broadcast their tensor operands against each other elementwise (numpy broadcasting) and nothing else:
# they may take lazy values (``_Gen.lazy``: splats and broadcasts left unmaterialised)
_ELEMENTWISE = frozenset(set(_BIN_INFIX) | set(_BIN_FN) | set(_UNARY) | {
    "arith.maxui", "arith.minui", "arith.cmpi", "arith.cmpf", "arith.select", "tt.addptr",
    "arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
    "arith.extf", "arith.truncf", "arith.bitcast", "arith.index_cast", "arith.index_castui", "tt.bitcast",
    "tt.fp_to_fp"})


def _only_elementwise_uses(value) -> bool:
    """True when every use of ``value`` is an _ELEMENTWISE op producing a tensor (False when unused or unknown)."""
    uses = list(value.uses)
    if not uses:
        return False
    for u in uses:
        o = u.owner
        o = getattr(o, "operation", o)
        if o.name not in _ELEMENTWISE or len(o.results) != 1:
            return False
        if _is_object(o.results[0].type) or not _split_type(o.results[0].type)[1]:
            return False
    return True


def ttir_to_python(module) -> str:
    """Translate a parsed TTIR ``mlir.ir.Module`` into the source of a NumPy program (see module doc).  A kernel's
    tensor descriptor parameters (host-side descriptors) are expanded first into the base, shape and strides
    the launch passes (:mod:`tritium.passes.ttir.expand_tensor_descriptor_args`; the module is changed)."""
    with module.context:
        if _has_descriptor_params(module):
            from tritium.passes.ttir.expand_tensor_descriptor_args import expand_tensor_descriptor_args

            expand_tensor_descriptor_args(module.operation)
        return _Gen(module).run()


def _has_descriptor_params(module) -> bool:
    for op in module.body.operations:
        o = op.operation
        if o.name == "func.func" and "!tt.tensordesc" in str(o.attributes["function_type"]):
            return True
    return False
