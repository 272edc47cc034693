"""Step-through mode (target ``interpreter:eager``): the kernel's Python body runs, program after program, with
every tl operation executed on NumPy as it is called, so ``breakpoint()``, ``pdb``, ``print(x)`` of a tile and
Python tracebacks work inside a kernel.

Nothing is translated ahead of time.  The language (:mod:`tritium.language.semantic`: promotion, broadcasting,
checks) is the one the compiler uses; only where its ops go differs.  :class:`EagerBuilder` is a
:class:`tritium.language.core.Builder` whose ``create`` runs the op at once: it builds the op in a scratch MLIR
function with placeholder operands, has the fast interpreter's code generator (:mod:`.codegen`) write the NumPy code
of that one op, and keeps the compiled code per (op, operand and result types, attributes, source location); the
values are :class:`EagerValue` arrays with a program axis of size 1, exactly what the generated programs hold.  So
each op computes what the fast mode computes, by the same code.  Ops built while another insertion point is set
(the combine function of a reduction) are built, not run, as in a compile.

The kernel function runs as the frontend would see it: a copy compiled from its source where ``a and b`` /
``a or b`` / ``not a`` are tl's logical operations on tensors, ``assert`` on a tensor is ``tl.device_assert``, and
``range`` / ``min`` / ``max`` / ``abs`` / ``len`` are the kernel meanings of those builtins (a loop variable is an
int32 / int64 tensor).  The copy has the source file's name and line numbers, so debuggers and tracebacks show the
kernel's source; module globals and closure variables are read when the launch starts.
"""
from __future__ import annotations

import ast
import builtins as _py
import copy
import os
import sys
import types

import numpy as np

from tritium.errors import CompilationError, KernelRuntimeError
from tritium.language import core as tlc
from tritium.language import semantic as _s
from tritium.language.core import Builder, SemanticError, constexpr, tensor

from . import libdevice as _ld
from . import runtime as rt
from .launcher import Launcher


class EagerValue:
    """A value in step-through mode: ``arr`` as the generated programs hold it (a leading program axis of size 1;
    block pointers and descriptors as runtime objects) and ``tstr``, its MLIR type."""

    __slots__ = ("arr", "tstr")

    def __init__(self, arr, tstr: str):
        self.arr, self.tstr = arr, tstr

    @property
    def concrete(self):
        """The value without the program axis (what ``print(x)`` shows and ``bool(x)`` / ``int(x)`` read)."""
        a = self.arr
        return a[0] if isinstance(a, np.ndarray) else a


class _Executed:
    """What :meth:`EagerBuilder.create` returns for an op it ran: its results, as an MLIR op has them."""

    __slots__ = ("results",)

    def __init__(self, results):
        self.results = results

    @property
    def result(self):
        return self.results[0]


# frames of these directories (the tritium package, this backend) are the compiler's, not the kernel's: an op's
# location is the innermost other frame
_INTERNAL = tuple(os.path.dirname(os.path.dirname(m.__file__)) + os.sep if m is tlc else os.path.dirname(m.__file__)
                  + os.sep for m in (tlc, sys.modules[__name__.rpartition(".")[0]]))


def _column(code, lasti: int, line: int):
    """The 0-based column of the instruction at ``lasti`` of ``code`` when it is on ``line``, else None."""
    p = _POSITIONS.get(code)
    if p is None:
        p = _POSITIONS[code] = list(code.co_positions())
    try:
        pos = p[lasti // 2]
    except (IndexError, TypeError):
        return None
    return pos[2] if pos[0] == line else None


_POSITIONS: dict = {}  # code object -> its instructions' positions


def _user_loc():
    """(file, line, column) of the kernel source line running now: the innermost frame outside tritium's language
    and this backend (columns 0-based, as the frontend writes them)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_INTERNAL):
        f = f.f_back
    if f is None:
        return None
    line = f.f_lineno
    return (f.f_code.co_filename, line, _column(f.f_code, f.f_lasti, line) or 0)


class EagerBuilder(Builder):
    """A Builder that runs each op as it is created (see the module doc).  ``ctx``: the runtime context of the
    program running now (:class:`runtime.Ctx` of one program)."""

    eager = True

    def __init__(self, kernel_name: str = "kernel"):
        from mlir import ir

        from tritium.dialects import make_context

        context = make_context()
        with context, ir.Location.unknown(context):
            module = ir.Module.create()
            super().__init__(context, module)
            self.ip = ir.InsertionPoint(module.body)
            func = super().create("func.func", [], [], {
                "sym_name": ir.StringAttr.get("_eager"), "sym_visibility": ir.StringAttr.get("private"),
                "function_type": ir.TypeAttr.get(ir.FunctionType.get([], []))}, regions=1)
            self.block = func.regions[0].blocks.append()
        self.exec_ip = self.ip = ir.InsertionPoint(self.block)
        self._names.add("_eager")
        self.kernel_name = kernel_name
        self.ctx = None
        self._ops: dict = {}        # (op, operand types, result types, attributes, location) -> (fn, result types)
        self._types: dict = {}      # type string -> ir.Type
        self._tnames: dict = {}     # id(ir.Type) -> its string
        self._placeholders: dict = {}  # (type string, operand position) -> a block argument of that type
        self.functions: dict = {}   # JITFunction -> its eager Python function (for this launch)

    # types ---------------------------------------------------------------------------------------
    def ty(self, t):
        s = t.mlir_str()
        r = self._types.get(s)
        if r is None:
            from mlir import ir

            r = self._types[s] = ir.Type.parse(s, self.context)
            self._tnames[id(r)] = s
        return r

    # ops -----------------------------------------------------------------------------------------
    def create(self, name, operands=(), results=(), attrs=None, regions=0):
        if self.ip is not self.exec_ip:  # building a function body (a combine function): IR, as in a compile
            return super().create(name, operands, results, attrs, regions)
        vals = []
        for x in operands:
            h = x.handle if isinstance(x, tensor) else x
            if not isinstance(h, EagerValue):
                raise SemanticError(f"step-through mode: operand of '{name}' has no value ({h!r})")
            vals.append(h)
        loc = _user_loc()
        tn = self._tnames
        key = (name, tuple(v.tstr for v in vals), tuple(tn.get(id(r)) or str(r) for r in results),
               tuple((k, str(v)) for k, v in attrs.items()) if attrs else (), loc)
        entry = self._ops.get(key)
        if entry is None:
            entry = self._ops[key] = self._generate(name, vals, results, attrs, regions, loc)
        fn, rtypes = entry
        outs = fn(self.ctx, None, *[v.arr for v in vals])
        return _Executed([EagerValue(o, t) for o, t in zip(outs, rtypes)])

    def _generate(self, name, vals, results, attrs, regions, loc):
        """The NumPy code of one op, by the fast interpreter's code generator: ``(fn(ctx, active, *operands) ->
        results, result type strings)``."""
        from mlir import ir

        from . import codegen as cg

        operands = []
        for i, v in enumerate(vals):
            ph = self._placeholders.get((v.tstr, i))
            if ph is None:
                t = self._types.get(v.tstr) or ir.Type.parse(v.tstr, self.context)
                ph = self._placeholders[(v.tstr, i)] = self.block.add_argument(t, ir.Location.unknown(self.context))
            operands.append(ph)
        with self.context:
            self.loc = (ir.Location.file(loc[0], loc[1], loc[2], context=self.context) if loc
                        else ir.Location.unknown(self.context))
            op = super().create(name, operands, results, attrs, regions)
            try:
                g = cg._Gen(self.module)
                g.kernel_name = self.kernel_name
                for f in self.module.body.operations:
                    f = f.operation
                    if f.name == "func.func":
                        g.funcs[ir.StringAttr(f.attributes["sym_name"]).value] = f
                args = [f"x{i}" for i in range(len(operands))]
                for ph, a in zip(operands, args):
                    g.names[ph] = a
                pre, body = [], []
                if "combine" in op.attributes:  # a reduction's / scan's combine function, as a Python function
                    cname = ir.FlatSymbolRefAttr(op.attributes["combine"]).value
                    g.emit_func(g.funcs[cname], f"_f_{cname}", pre, private=True)
                g.emit_op(op, body, "    ", "func")
                res = [g.get(r) for r in op.results]
                rtypes = tuple(str(r.type) for r in op.results)
            finally:
                op.erase()
        src = "\n".join(g.consts + pre + [f"def _op(_ctx, _active{''.join(', ' + a for a in args)}):"] + body +
                        [f"    return ({''.join(r + ', ' for r in res)})", ""])
        ns = {"np": np, "_rt": rt, "_ld": _ld, "__name__": "tritium_eager"}
        exec(compile(src, f"<tritium-eager:{name}>", "exec"), ns)  # noqa: S102 - our own code
        return ns["_op"], rtypes

    # loops and calls -------------------------------------------------------------------------------
    def iterate(self, r):
        """``for i in range(...)`` / ``tl.range(...)``: the loop variable takes the values of the frontend's scf.for
        induction variable (int32, or int64 for 64-bit bounds)."""
        lb, ub, step, ty = _s.range_operands(r.start, r.end, r.step)
        lo, hi, st = (int(x.handle.concrete) for x in (lb, ub, step))
        dt = np.int64 if ty.int_bitwidth == 64 else np.int32
        tstr = ty.mlir_str()
        for i in _py.range(lo, hi, st):
            yield tensor(EagerValue(np.array([i], dt), tstr), ty)

    def call_jit(self, fn, args, kwargs):
        """A ``@jit`` function called from a kernel: its eager function, parameters bound as the frontend binds
        them (constexpr-annotated ones and Python values as ``tl.constexpr``)."""
        return self.function(fn)(**_s.bind_callee(fn, args, kwargs))

    def function(self, fn):
        """``fn``'s eager Python function for this launch."""
        f = self.functions.get(fn)
        if f is None:
            f = self.functions[fn] = eager_function(fn)
        return f


# ------------------------------------------------------------------------------------------------------------
# The kernel function as step-through mode runs it
# ------------------------------------------------------------------------------------------------------------

class _Rewrite(ast.NodeTransformer):
    """``a and b`` -> ``_tr_and(a, lambda: b)`` (likewise ``or``), ``not a`` -> ``_tr_not(a)``, ``assert c, m`` ->
    ``_tr_assert(c, m)``, ``a.to`` (an attribute a tensor has) -> ``_tr_attr(a, "to")``: what the frontend makes of
    them, decided at run time on the values."""

    @staticmethod
    def _call(name, args, like):
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), args, []), like)

    @staticmethod
    def _thunk(e):
        no = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[])
        return ast.copy_location(ast.Lambda(no, e), e)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "_tr_and" if isinstance(node.op, ast.And) else "_tr_or"
        return self._call(fn, [node.values[0]] + [self._thunk(v) for v in node.values[1:]], node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self._call("_tr_not", [node.operand], node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and tlc.is_tensor_attribute(node.attr):  # `a = 5; a.to(...)`
            return self._call("_tr_attr", [node.value, ast.copy_location(ast.Constant(node.attr), node)], node)
        return node

    def visit_Assign(self, node):  # `x = 1`: a typed value, as the frontend's assignment (core.typed_constexpr)
        self.generic_visit(node)
        unpack = _py.any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets)
        node.value = self._call("_tr_assign", [node.value, ast.copy_location(ast.Constant(unpack), node)],
                                node.value)
        return node

    def visit_AnnAssign(self, node):  # `x: tl.int32 = 1` typed too; `x: tl.constexpr = 1` stays a number
        self.generic_visit(node)
        if node.value is not None and ast.unparse(node.annotation).split(".")[-1] != "constexpr":
            node.value = self._call("_tr_assign", [node.value, ast.copy_location(ast.Constant(False), node)],
                                    node.value)
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else ast.copy_location(ast.Constant(""), node)
        return ast.copy_location(ast.Expr(self._call("_tr_assert", [node.test, msg], node)), node)

    def visit_FunctionDef(self, node):
        if getattr(self, "_seen", False):  # a nested def: left as Python
            return node
        self._seen = True
        node.decorator_list = []
        self.generic_visit(node)
        return node


def _tr_assign(v, unpack=False):
    """The value of ``x = v`` in a kernel: a number (or a constexpr of one) as a ``typed_constexpr``, as the
    frontend's assignment; unpacked into names (``a, b = 1, 2``), each number likewise; anything else as it is."""
    if unpack and isinstance(v, (tuple, list)):
        return type(v)(_tr_assign(x, True) for x in v)
    if isinstance(v, tlc.typed_constexpr) or isinstance(v, tensor):
        return v
    u = tlc._unwrap(v)
    if isinstance(u, (bool, int, float)):
        return tlc.typed_constexpr(u)
    return v


def _tr_and(a, *rest):
    for thunk in rest:
        if not isinstance(a, tensor):
            if not tlc._unwrap(a):
                return a
            a = thunk()
            continue
        a = _s.logical_and(a, thunk())
    return a


def _tr_or(a, *rest):
    for thunk in rest:
        if not isinstance(a, tensor):
            if tlc._unwrap(a):
                return a
            a = thunk()
            continue
        a = _s.logical_or(a, thunk())
    return a


def _tr_not(a):
    return _s.logical_not(a) if isinstance(a, tensor) else not tlc._unwrap(a)


def _tr_assert(cond, msg=""):
    _s.kernel_assert(cond, tlc._unwrap(msg))


def _builtin_range(*args, **kwargs):
    from tritium.language.functions import range as tl_range

    return tl_range(*args, **kwargs)


def _builtin_min(*args):
    return _s.builtin_minmax(True, list(args[0]) if len(args) == 1 else list(args))


def _builtin_max(*args):
    return _s.builtin_minmax(False, list(args[0]) if len(args) == 1 else list(args))


def _builtin_abs(x):
    return _s.abs(x) if isinstance(x, tensor) else _py.abs(tlc._unwrap(x))


_EAGER_NAMES = {"_tr_assign": _tr_assign, "_tr_and": _tr_and, "_tr_or": _tr_or, "_tr_not": _tr_not, "_tr_assert": _tr_assert,
                "_tr_attr": _s.kernel_attribute,
                "range": _builtin_range, "min": _builtin_min, "max": _builtin_max, "abs": _builtin_abs,
                "len": _s.builtin_len}


def _eager_code(fn):
    """The code object of ``fn``'s rewritten source (module level: ``def <name>(...)``), kept on the JITFunction."""
    code = getattr(fn, "_eager_code", None)
    if code is None:
        # a copy: the JITFunction's tree is the one the frontend compiles
        tree = _Rewrite().visit(ast.Module([copy.deepcopy(fn.parse().body[0])], []))
        ast.fix_missing_locations(tree)
        code = fn._eager_code = compile(tree, fn.file, "exec")
    return code


def eager_function(fn):
    """``fn`` (a JITFunction) as step-through mode calls it: its rewritten source run with its module globals, its
    closure variables (their values now) and the kernel builtins (see the module doc)."""
    py = fn.fn
    ns = dict(py.__globals__)
    for name, cell in zip(py.__code__.co_freevars, py.__closure__ or ()):
        try:
            ns[name] = cell.cell_contents
        except ValueError:  # an empty cell: a name assigned later in the enclosing function
            pass
    ns.update(_EAGER_NAMES)
    exec(_eager_code(fn), ns)  # noqa: S102 - the kernel's own source
    f = ns[py.__name__]
    if not isinstance(f, types.FunctionType):  # pragma: no cover - the def always binds its name
        raise KernelRuntimeError(f"step-through mode could not rebuild '{fn.__name__}'")
    return f


# ------------------------------------------------------------------------------------------------------------
# Launching
# ------------------------------------------------------------------------------------------------------------

class _Signature:
    """What :class:`launcher.Launcher` reads of a program, for a kernel run in step-through mode: the runtime
    arguments' MLIR types (a host-side tensor descriptor stands for its base, shape and strides)."""

    def __init__(self, kernel, params):
        self.name = kernel.name if isinstance(getattr(kernel, "name", None), str) else "kernel"
        types_ = []
        for p, ty in params:
            if ty is None:
                continue
            if isinstance(ty, tlc.tensor_descriptor_type):
                r = len(ty.block_type.shape)
                types_ += [tlc.pointer_type(ty.block_type.element_ty).mlir_str()] + ["i32"] * r + ["i64"] * r
            else:
                types_.append(ty.mlir_str())
        self.arg_types = tuple(types_)
        self.is_ptr = [t.startswith("!tt.ptr<") for t in self.arg_types]
        self.max_numel = 1
        self.fn = None


class EagerLauncher(Launcher):
    """Launches a kernel compiled to stage ``eager``: the arguments converted as for the fast mode (the same
    memory, bounds checks and race tracking), then the kernel function called once per program, in the order of
    the flat program id."""

    def __init__(self, kernel):
        src = getattr(kernel, "src", None)
        fn = getattr(src, "fn", None)
        if fn is None or not hasattr(fn, "parse"):
            raise KernelRuntimeError(f"kernel '{getattr(kernel, 'name', 'kernel')}' was compiled for step-through "
                                     "mode without its @jit function; launch it through the function "
                                     "(kernel[grid](...)) or compile it with tritium.compile(ASTSource(fn, ...))")
        from tritium.frontend import _lookup_constexpr, _lookup_sig

        self.fn = fn
        self.params = []  # (param, tl type or None, constexpr value, a descriptor's padding)
        for p in fn.params:
            has, cx = _lookup_constexpr(src.constexprs or {}, p)
            sig = _lookup_sig(src.signature or {}, p)
            if has:
                self.params.append((p, None, constexpr(cx), None))
            elif sig is not None and sig != "constexpr":
                pad = "nan" if sig.replace(" ", "").endswith(",nan>") else "zero"
                self.params.append((p, _s.kernel_param_type(p, sig), None, pad))
            elif p.has_default:
                self.params.append((p, None, constexpr(p.default), None))
            else:
                raise KernelRuntimeError(f"kernel '{fn.__name__}': parameter '{p.name}' has no value")
        super().__init__(kernel, _Signature(kernel, [(p, ty) for p, ty, _, _ in self.params]))
        md = getattr(kernel, "metadata", {}) or {}
        self.target = md.get("target")
        self.options = types.SimpleNamespace(**(md.get("options") or {}))
        self.builder = None

    def _run(self, mem, grid, P, vals) -> None:
        from tritium.language.target_info import compiling_for

        b = self.builder
        if b is None:
            b = self.builder = EagerBuilder(self.fn.__name__)
        b.functions = {}
        f = b.function(self.fn)
        from mlir import ir

        with b.context, ir.Location.unknown(b.context), compiling_for(self.target, self.options), \
                tlc.use_builder(b):
            args = self._arguments(b, vals)
            for flat in _py.range(P):
                b.ctx = rt.Ctx(mem, grid, flat, 1)
                try:
                    f(**args)
                except SemanticError as e:
                    raise _compilation_error(e, self.fn) from e

    def _arguments(self, b, vals):
        """The kernel function's arguments: tensors holding the launch's values, constexprs."""
        args, i = {}, 0
        b.ctx = None
        for p, ty, cx, pad in self.params:
            if ty is None:
                args[p.name] = cx
            elif isinstance(ty, tlc.tensor_descriptor_type):
                r = len(ty.block_type.shape)
                base = tensor(EagerValue(vals[i], self.prog.arg_types[i]), tlc.pointer_type(ty.block_type.element_ty))
                shape = [tensor(EagerValue(v, "i32"), tlc.int32) for v in vals[i + 1:i + 1 + r]]
                strides = [tensor(EagerValue(v, "i64"), tlc.int64) for v in vals[i + 1 + r:i + 2 * r]]
                args[p.name] = _s.make_tensor_descriptor(base, shape, strides + [constexpr(1)],
                                                         list(ty.block_type.shape), pad)
                i += 1 + 2 * r
            else:
                args[p.name] = tensor(EagerValue(vals[i], self.prog.arg_types[i]), ty)
                i += 1
        return args


def _compilation_error(e: SemanticError, fn) -> CompilationError:
    """A SemanticError raised while a kernel ran in step-through mode, at the innermost kernel source line of its
    traceback (as the compiler names it)."""
    file, line, col = fn.file, fn.starting_line_number, None
    tb = e.__traceback__
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if not fname.startswith(_INTERNAL) and not fname.startswith("<tritium-eager"):
            file, line = fname, tb.tb_lineno
            col = _column(tb.tb_frame.f_code, tb.tb_lasti, line)
        tb = tb.tb_next
    return CompilationError(str(e), file, line, col, fn.__name__)
