"""Python AST -> TTIR.  One :class:`CodeGenerator` per function being generated (the kernel, each inlined
``@jit`` callee, each ``noinline`` callee); they share one :class:`tritium.language.core.Builder`.

Values on the generator's scope are ``tl.tensor``, ``tl.constexpr`` or plain Python objects (tuples, dtypes,
modules, JITFunctions).  Every user mistake becomes a :class:`tritium.errors.CompilationError` naming the
source line of the innermost AST node that was being visited.
"""
from __future__ import annotations

import ast
import builtins as _py
import inspect
import math as _math
import types
from typing import Any, Dict, List

from .. import language as tl
from ..errors import CompilationError, UnsupportedLanguageConstruct
from ..language import core as _c
from ..language import semantic as _s
from ..language.core import SemanticError, UnsupportedError, _unwrap, constexpr, tensor
from ..source.function import JITCallable as JITFunction  # (any @jit function: a user's or the language's)

_MAX_INLINE_DEPTH = 64

#: ``tl.range(..., disable_licm=True)`` / ``while tl.condition(c, disable_licm=True)``: LLVM loop metadata
#: (``llvm.licm.disable``) on the loop's back edge, which upstream scf-to-cf and cf-to-llvm carry to the LLVM IR, so
#: LLVM's own LICM leaves the loop alone (as in Triton; the TTIR passes still hoist what they may)
LOOP_ANNOTATION = "llvm.loop_annotation"


def _no_licm_annotation(context):
    from mlir import ir

    return ir.Attribute.parse("#llvm.loop_annotation<licm = <disable = true>>", context)


class _Unsupported(UnsupportedError):
    pass


def _is_py_scalar(v) -> bool:
    return isinstance(v, (bool, int, float)) and not isinstance(v, tensor)


_wrap = _s.kernel_value  # Python values coming out of calls / attributes become constexpr


# names of Python builtins a kernel may use
_PY_BUILTINS = {"min", "max", "len", "int", "float", "bool", "isinstance", "abs", "getattr", "hasattr", "range",
                "print", "tuple", "str", "type", "list", "zip", "enumerate", "repr"}
_CONST_FN_MODULES = {"math", "tritium", "builtins"}


def _contains_return(stmts) -> bool:
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Return):
                return True
    return False


def _terminates(stmts) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _rewrite_returns(stmts: list, cont: list) -> list:
    """Move the statements after an ``if`` that returns into the branches that do not, so that every
    ``return`` ends its block.  ``cont`` is what runs after ``stmts``.  Never mutates the input nodes."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            out.append(s)
            return out
        if isinstance(s, ast.If) and _contains_return([s]):
            rest = list(stmts[i + 1:]) + list(cont)
            new = ast.If(test=s.test, body=_rewrite_returns(s.body, rest), orelse=_rewrite_returns(s.orelse, rest))
            ast.copy_location(new, s)
            new.end_lineno, new.end_col_offset = getattr(s, "end_lineno", None), getattr(s, "end_col_offset", None)
            out.append(new)
            return out
        out.append(s)
    return out + (_rewrite_returns(list(cont), []) if cont else [])


def _assigned_names(stmts) -> List[str]:
    """Names (re)bound anywhere in ``stmts`` (in order of first appearance)."""
    names: List[str] = []

    def add(t):
        if isinstance(t, ast.Name):
            if t.id not in names:
                names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add(e)
        elif isinstance(t, ast.Starred):
            add(t.value)

    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    add(t)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                add(n.target)
            elif isinstance(n, ast.For):
                add(n.target)
            elif isinstance(n, ast.NamedExpr):
                add(n.target)
    return names


class _Lambda:
    """A ``lambda`` passed as a combine function: called with tensors, evaluates its body in the caller's scope."""

    def __init__(self, node: ast.Lambda, gen: "CodeGenerator"):
        self.node, self.gen = node, gen
        self.__name__ = "lambda"

    def __call__(self, *args):
        params = [a.arg for a in self.node.args.args]
        if len(params) != len(args):
            raise SemanticError(f"the lambda takes {len(params)} arguments but the combine function is called "
                                f"with {len(args)}")
        saved = self.gen.lscope
        self.gen.lscope = dict(saved)
        self.gen.lscope.update(zip(params, args))
        try:
            return self.gen.visit(self.node.body)
        finally:
            self.gen.lscope = saved


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, fn: JITFunction, builder, lscope: Dict[str, Any], depth: int = 0, is_kernel=False):
        self.fn = fn
        self.builder = builder
        self.lscope = lscope
        self.depth = depth
        self.is_kernel = is_kernel
        self.file = fn.file
        self.name = fn.__name__
        self.returned = False
        self.ret = None
        self.loop_depth = 0
        self.last_assign: Dict[str, ast.AST] = {}
        self.one_branch: Dict[str, int] = {}
        self._stmt = None
        self.gscope = dict(fn.__globals__)
        code = getattr(fn.fn, "__code__", None)
        closure = getattr(fn.fn, "__closure__", None)
        if code is not None and closure:
            for name, cell in zip(code.co_freevars, closure):
                try:
                    self.gscope[name] = cell.cell_contents
                except ValueError:
                    pass

    # ------------------------------------------------------------------------------------------
    # errors and locations
    # ------------------------------------------------------------------------------------------

    def _error(self, node, exc_or_msg, unsupported=False) -> CompilationError:
        if isinstance(exc_or_msg, BaseException):
            e = exc_or_msg
            if isinstance(e, (SemanticError, TypeError, ValueError, NameError, AttributeError, IndexError,
                              KeyError, ZeroDivisionError, AssertionError)):
                msg = str(e) if isinstance(e, SemanticError) else f"{type(e).__name__}: {e}"
            else:
                msg = f"internal error while generating code ({type(e).__name__}): {e}"
            unsupported = unsupported or isinstance(e, UnsupportedError)
        else:
            msg = exc_or_msg
        cls = UnsupportedLanguageConstruct if unsupported else CompilationError
        return cls(msg, self.file, getattr(node, "lineno", 0), getattr(node, "col_offset", None), self.name)

    def _loc(self, node):
        from mlir import ir
        return ir.Location.file(self.file, node.lineno, node.col_offset, context=self.builder.context)

    def visit(self, node):
        if node is None:
            return None
        has_loc = hasattr(node, "lineno")
        prev = self.builder.loc
        if has_loc:
            self.builder.loc = self._loc(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except Exception as e:
            raise self._error(node, e) from e
        finally:
            self.builder.loc = prev

    def generic_visit(self, node):
        raise _Unsupported(f"unsupported language construct: {type(node).__name__}")

    # ------------------------------------------------------------------------------------------
    # functions
    # ------------------------------------------------------------------------------------------

    def fn_def(self) -> ast.FunctionDef:
        tree = self.fn.parse()
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise CompilationError("a @jit function must be a plain 'def'", self.file, self.fn.starting_line_number,
                                   0, self.name)
        return fdef

    def body_stmts(self):
        fdef = self.fn_def()
        body = list(fdef.body)
        if not _terminates(body) and _contains_return(body):
            ret = ast.Return(value=None)
            last = body[-1]
            ast.copy_location(ret, last)
            body.append(ret)
        return _rewrite_returns(body, [])

    def generate_body(self):
        self.visit_block(self.body_stmts())
        return self.ret

    def visit_block(self, stmts):
        for s in stmts:
            if self.returned:
                break
            prev, self._stmt = self._stmt, s
            try:
                self.visit(s)
            finally:
                self._stmt = prev

    def visit_Return(self, node):
        if self.loop_depth:
            raise _Unsupported("Cannot have `return` statements inside `for` or `while` loops")
        val = self.visit(node.value) if node.value is not None else None
        if self.is_kernel and val is not None and _unwrap(val) is not None:
            raise SemanticError("a kernel cannot return a value")
        self.ret = val
        self.returned = True

    def visit_FunctionDef(self, node):
        raise _Unsupported("nested function definitions are not supported in @jit functions; define a separate "
                           "@jit function at module level")

    # ------------------------------------------------------------------------------------------
    # names
    # ------------------------------------------------------------------------------------------

    def lookup(self, name: str):
        if name in self.lscope:
            return self.lscope[name]
        if name in self.gscope:
            return self._check_global(name, self.gscope[name])
        if name in _PY_BUILTINS:
            return getattr(_py, name)
        if name in self.one_branch:
            raise NameError(f"'{name}' is defined in only one branch of the if statement at line "
                            f"{self.one_branch[name]}, so it cannot be used after it")
        if name == "breakpoint":
            raise NameError("breakpoint() needs the kernel's Python body to run: use the interpreter's step-through "
                            "mode (TRITIUM_TARGET=interpreter:eager, or TRITIUM_INTERPRET_MODE=eager); compiled "
                            "kernels cannot stop in a debugger")
        raise NameError(f"name '{name}' is not defined")

    def _check_global(self, name, v):
        if isinstance(v, (JITFunction, constexpr, types.ModuleType, _c.dtype, type)) or v is None:
            return v
        if isinstance(v, (bool, int, float, str)):
            return constexpr(v)
        if isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str, constexpr, _c.dtype)) or x is None
                                        for x in v):
            return tuple(_wrap(x) for x in v)
        if callable(v):
            return v
        raise SemanticError(f"Cannot access global variable '{name}' of type {type(v).__name__} from within a @jit "
                            "function: only tl.constexpr values, @jit functions, modules and read-only scalars "
                            "(int, float, bool, str) are allowed. Pass it as an argument or mark it tl.constexpr.")

    def visit_Name(self, node):
        return self.lookup(node.id)

    def visit_Constant(self, node):
        return constexpr(node.value)

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                x = self.visit(v.value)
                if isinstance(x, tensor):
                    raise SemanticError("f-strings can only format compile-time values")
                x = _unwrap(x)
                spec = ""
                if v.format_spec is not None:
                    spec = _unwrap(self.visit(v.format_spec))
                parts.append(format(x, spec))
        return constexpr("".join(parts))

    def visit_Tuple(self, node):
        out = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                out.extend(self._as_sequence(self.visit(e.value)))
            else:
                out.append(self.visit(e))
        return tuple(out)

    visit_List = visit_Tuple

    def _as_sequence(self, v):
        v = _unwrap(v)
        if isinstance(v, (tuple, list)):
            return list(v)
        raise SemanticError(f"cannot unpack {v!r}")

    # ------------------------------------------------------------------------------------------
    # assignment
    # ------------------------------------------------------------------------------------------

    def _assign(self, target, value, typed=True):
        """``target = value``.  As in Triton, a number assigned to a name (``typed``: not under a ``tl.constexpr``
        annotation) has the type of the scalar tensor Triton makes of it: a :class:`core.typed_constexpr`."""
        if isinstance(target, ast.Name):
            if self._stmt is not None:
                self.last_assign[target.id] = self._stmt
            if isinstance(value, _Lambda):
                raise _Unsupported("lambda is only supported as a combine function argument (tl.reduce / "
                                   "tl.associative_scan)")
            value = _wrap(value)
            if typed and isinstance(value, constexpr) and not isinstance(value, _c.typed_constexpr) and \
                    _is_py_scalar(value.value):
                value = _c.typed_constexpr(value.value)
            self.lscope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = self._as_sequence(value)
            if len(vals) != len(target.elts):
                raise ValueError(f"cannot unpack {len(vals)} values into {len(target.elts)} targets")
            for t, v in zip(target.elts, vals):
                self._assign(t, v, typed)
        elif isinstance(target, ast.Subscript):
            raise _Unsupported("assignment to a subscript (x[i] = ...) is not supported: tensors are immutable; "
                               "use tl.where or tl.store")
        elif isinstance(target, ast.Attribute):
            raise _Unsupported("assignment to an attribute is not supported")
        else:
            raise _Unsupported(f"unsupported assignment target {type(target).__name__}")

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for t in node.targets:
            self._assign(t, value)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        value = self.visit(node.value)
        ann = node.annotation
        ann_txt = ast.unparse(ann)
        if ann_txt.split(".")[-1] == "constexpr":
            if isinstance(value, tensor):
                raise SemanticError(f"'{ast.unparse(node.target)}' is annotated tl.constexpr but its value is a "
                                    "tensor (not known at compile time)")
            value = constexpr(value)
            self._assign(node.target, value, typed=False)
            return
        self._assign(node.target, value)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise _Unsupported("augmented assignment is only supported on names")
        lhs = self.lookup(node.target.id)
        rhs = self.visit(node.value)
        self._assign(node.target, self._binop(node.op, lhs, rhs))

    def visit_NamedExpr(self, node):
        v = self.visit(node.value)
        self._assign(node.target, v)
        return v

    # ------------------------------------------------------------------------------------------
    # expressions
    # ------------------------------------------------------------------------------------------

    _BINOPS = {ast.Add: (_s.add, "__add__"), ast.Sub: (_s.sub, "__sub__"), ast.Mult: (_s.mul, "__mul__"),
               ast.Div: (_s.truediv, "__truediv__"), ast.FloorDiv: (_s.floordiv, "__floordiv__"),
               ast.Mod: (_s.mod, "__mod__"), ast.Pow: (_s.pow, "__pow__"), ast.BitAnd: (_s.and_, "__and__"),
               ast.BitOr: (_s.or_, "__or__"), ast.BitXor: (_s.xor_, "__xor__"),
               ast.LShift: (_s.shl, "__lshift__"), ast.RShift: (_s.shr, "__rshift__")}

    def _binop(self, op, lhs, rhs):
        if type(op) not in self._BINOPS:
            raise _Unsupported(f"unsupported binary operator {type(op).__name__}")
        fn, pyname = self._BINOPS[type(op)]
        if isinstance(lhs, (tensor, _c.typed_constexpr)) or isinstance(rhs, (tensor, _c.typed_constexpr)):
            return fn(lhs, rhs)
        import operator
        pyfn = getattr(operator, pyname)
        return _wrap(pyfn(_unwrap(lhs), _unwrap(rhs)))

    def visit_BinOp(self, node):
        lhs = self.visit(node.left)
        rhs = self.visit(node.right)
        return self._binop(node.op, lhs, rhs)

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(v, _c.typed_constexpr) and isinstance(node.op, (ast.USub, ast.Invert)):
            return _s.minus(v) if isinstance(node.op, ast.USub) else _s.invert(v)
        if isinstance(v, tensor):
            if isinstance(node.op, ast.USub):
                return _s.minus(v)
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return _s.invert(v)
            if isinstance(node.op, ast.Not):
                return _s.logical_not(v)
        u = _unwrap(v)
        if isinstance(node.op, ast.USub):
            return _wrap(-u)
        if isinstance(node.op, ast.UAdd):
            return _wrap(+u)
        if isinstance(node.op, ast.Invert):
            return _wrap(~u)
        if isinstance(node.op, ast.Not):
            return constexpr(not u)
        raise _Unsupported(f"unsupported unary operator {type(node.op).__name__}")

    _CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}

    def _compare(self, op, lhs, rhs):
        if isinstance(op, (ast.Is, ast.IsNot)):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                l, r = lhs, rhs
            else:
                l, r = _unwrap(lhs), _unwrap(rhs)
            res = l is r
            return constexpr(res if isinstance(op, ast.Is) else not res)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                raise _Unsupported("'in' is not supported on tensors")
            res = _unwrap(lhs) in [_unwrap(x) for x in self._as_sequence(rhs)]
            return constexpr(res if isinstance(op, ast.In) else not res)
        pred = self._CMP[type(op)]
        if isinstance(lhs, tensor) or isinstance(rhs, tensor):
            return _s.compare(lhs, rhs, pred)
        import operator
        return constexpr(getattr(operator, pred)(_unwrap(lhs), _unwrap(rhs)))

    def visit_Compare(self, node):
        lhs = self.visit(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            rhs = self.visit(comp)
            r = self._compare(op, lhs, rhs)
            result = r if result is None else self._logical(result, r, "and")
            lhs = rhs
        return result

    def _logical(self, a, b, kind):
        if isinstance(a, tensor) or isinstance(b, tensor):
            return _s.logical_and(a, b) if kind == "and" else _s.logical_or(a, b)
        return constexpr(_unwrap(a) and _unwrap(b)) if kind == "and" else constexpr(_unwrap(a) or _unwrap(b))

    def visit_BoolOp(self, node):
        kind = "and" if isinstance(node.op, ast.And) else "or"
        result = self.visit(node.values[0])
        for v in node.values[1:]:
            if not isinstance(result, tensor):
                u = _unwrap(result)
                if (kind == "and" and not u) or (kind == "or" and u):
                    return result  # short circuit at compile time
                result = self.visit(v)
                continue
            result = self._logical(result, self.visit(v), kind)
        return result

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body) if _unwrap(cond) else self.visit(node.orelse)
        cond = _s.scalar_condition(cond, "a ternary expression")
        return self._emit_if_values(cond, lambda: self.visit(node.body), lambda: self.visit(node.orelse), node)

    def visit_Subscript(self, node):
        v = self.visit(node.value)
        idx = self.visit(node.slice)
        if isinstance(v, tensor):
            return v.__getitem__(idx if not isinstance(idx, constexpr) else _unwrap(idx))
        if isinstance(idx, tensor):
            raise SemanticError("a tuple can only be indexed with a compile-time integer")
        u = _unwrap(v)
        i = _unwrap(idx)
        if isinstance(i, tuple):
            i = tuple(_unwrap(x) for x in i)
        return _wrap(u[i])

    def visit_Slice(self, node):
        parts = [None if p is None else _unwrap(self.visit(p)) for p in (node.lower, node.upper, node.step)]
        for p in parts:
            if isinstance(p, tensor):
                raise SemanticError("slice bounds must be compile-time values")
        return slice(*parts)

    def visit_Attribute(self, node):
        return _wrap(_s.kernel_attribute(self.visit(node.value), node.attr))

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant):  # docstrings
            return None
        self.visit(node.value)

    def visit_Pass(self, node):
        return None

    def visit_Lambda(self, node):
        raise _Unsupported("lambda is only supported as a combine function argument (tl.reduce / "
                           "tl.associative_scan)")

    # ------------------------------------------------------------------------------------------
    # calls
    # ------------------------------------------------------------------------------------------

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self._as_sequence(self.visit(a.value)))
            elif isinstance(a, ast.Lambda):
                args.append(_Lambda(a, self))
            else:
                args.append(self.visit(a))
        kws = {}
        for k in node.keywords:
            if k.arg is None:
                v = _unwrap(self.visit(k.value))
                if not isinstance(v, dict):
                    raise _Unsupported("** arguments must be compile-time dicts")
                kws.update(v)
            elif isinstance(k.value, ast.Lambda):
                kws[k.arg] = _Lambda(k.value, self)
            else:
                kws[k.arg] = self.visit(k.value)
        return self.call(fn, args, kws, node)

    def call(self, fn, args, kws, node=None):
        fn = _unwrap(fn)
        if isinstance(fn, JITFunction):
            return self.call_jit(fn, args, kws)
        if isinstance(fn, _Lambda):
            return fn(*args)
        if isinstance(fn, _c.ConstexprFunction):
            return _wrap(fn(*args, **kws))
        if fn is _py.print:  # as in Triton: tl.device_print, a leading string the prefix
            if kws:
                raise _Unsupported(f"print() in a @jit function takes no keywords (got {sorted(kws)}): it is "
                                   "tl.device_print(prefix, *values)")
            lead = _unwrap(args[0]) if args else ""
            if isinstance(lead, str):
                return tl.device_print(lead, *args[1:])
            return tl.device_print("", *args)
        if fn is _py.range:
            return tl.range(*args, **kws)
        if fn is tl.range or fn is tl.static_range:
            return fn(*args, **kws)
        if _c.is_builtin(fn) or (inspect.ismethod(fn) and isinstance(fn.__self__, tensor)) or \
                (getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, tensor)):
            return _wrap(fn(*args, **kws))
        if fn is constexpr:
            return constexpr(*[_unwrap(a) for a in args])
        if isinstance(fn, type) and issubclass(fn, (_c.dtype, _c.constexpr_type)):  # tl's types, built in a kernel
            return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kws.items()})
        if fn is _py.min or fn is _py.max:
            return self._minmax(fn, args, kws)
        if fn is _py.abs and args and isinstance(args[0], tensor):
            return _s.abs(args[0])
        if fn is _py.len:
            (x,) = args
            return _s.builtin_len(x)
        if fn is _py.isinstance:
            return constexpr(isinstance(args[0] if isinstance(args[0], tensor) else _unwrap(args[0]),
                                        _unwrap(args[1])))
        if fn in (_py.getattr, _py.hasattr, _py.int, _py.float, _py.bool, _py.str, _py.tuple, _py.type,
                  _py.repr, _py.list, _py.zip, _py.enumerate):
            for a in args:
                if isinstance(a, tensor) and fn not in (_py.getattr, _py.hasattr, _py.type):
                    raise SemanticError(f"{fn.__name__}() of a tensor is not supported; use .to(dtype)")
            ua = [a if isinstance(a, tensor) else _unwrap(a) for a in args]
            res = fn(*ua, **{k: _unwrap(v) for k, v in kws.items()})
            if fn in (_py.zip, _py.enumerate):
                res = tuple(res)
            return _wrap(res)
        mod = getattr(fn, "__module__", None) or ""
        if callable(fn) and mod.split(".")[0] in _CONST_FN_MODULES and not isinstance(fn, type):
            if any(isinstance(a, tensor) for a in list(args) + list(kws.values())):
                raise SemanticError(f"'{getattr(fn, '__name__', fn)}' is a Python function: it can only be called "
                                    "with compile-time (tl.constexpr) arguments in a @jit function")
            return _wrap(fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kws.items()}))
        if isinstance(fn, _math.__class__):
            pass
        name = getattr(fn, "__name__", repr(fn))
        raise SemanticError(f"cannot call '{name}': it is not a @jit function or a tritium.language builtin "
                            "(decorate it with @tritium.jit)")

    def _minmax(self, fn, args, kws):
        if kws:
            raise SemanticError(f"{fn.__name__}() keyword arguments are not supported in @jit functions")
        if len(args) == 1:
            args = self._as_sequence(args[0])
        return _wrap(_s.builtin_minmax(fn is _py.min, args))

    def call_function(self, fn, args):
        """Call a combine function (JITFunction, lambda, or Python callable on tensors)."""
        f = _unwrap(fn)
        if isinstance(f, (JITFunction, _Lambda)):
            return self.call(f, list(args), {})
        return f(*args)

    def call_jit(self, fn: JITFunction, args, kws):
        if self.depth >= _MAX_INLINE_DEPTH:
            raise SemanticError(f"@jit calls nested deeper than {_MAX_INLINE_DEPTH} (recursion is not supported)")
        scope = _s.bind_callee(fn, args, kws, opaque=_Lambda)
        if fn.noinline:
            return self._call_noinline(fn, scope)
        gen = CodeGenerator(fn, self.builder, scope, self.depth + 1)
        return gen.generate_body()

    def _call_noinline(self, fn: JITFunction, scope):
        from mlir import ir
        b = self.builder
        targs = [(k, v) for k, v in scope.items() if isinstance(v, tensor)]
        cx = [(k, repr(_unwrap(v))) for k, v in scope.items() if not isinstance(v, tensor)]
        key = (id(fn), tuple((k, str(v.type)) for k, v in targs), tuple(cx))
        cache = b.__dict__.setdefault("_noinline", {})
        if key not in cache:
            sig = "_".join(v.type.mlir_str() for _, v in targs)
            cxs = "_".join(f"{k}{v}" for k, v in cx)
            name = b.unique_name(f"{fn.__name__}__{sig}__{cxs}".rstrip("_"))
            in_types = [b.ty(v.type) for _, v in targs]
            saved_ip, saved_loc = b.ip, b.loc
            b.ip = ir.InsertionPoint(b.module.body)
            ftype = ir.FunctionType.get(in_types, [], b.context)
            func = b.create("func.func", [], [], {"sym_name": b.str_attr(name),
                                                  "function_type": ir.TypeAttr.get(ftype),
                                                  "sym_visibility": b.str_attr("private")}, regions=1)
            block = func.regions[0].blocks.append(*in_types, arg_locs=[b.loc] * len(in_types))
            b.ip = ir.InsertionPoint(block)
            try:
                inner = dict(scope)
                for i, (k, v) in enumerate(targs):
                    inner[k] = tensor(block.arguments[i], v.type)
                gen = CodeGenerator(fn, b, inner, self.depth + 1)
                ret = gen.generate_body()
                leaves = _flatten(ret)
                outs = []
                for leaf in leaves:
                    if isinstance(leaf, tensor):
                        outs.append(leaf)
                b.create("func.return", outs, [])
                ftype = ir.FunctionType.get(in_types, [o.handle.type for o in outs], b.context)
                func.attributes["function_type"] = ir.TypeAttr.get(ftype)
            finally:
                b.ip, b.loc = saved_ip, saved_loc
            cache[key] = (name, ret, [o.type for o in outs])
        name, ret_template, out_types = cache[key]
        call = b.create("func.call", [v for _, v in targs], [b.ty(t) for t in out_types],
                        {"callee": ir.FlatSymbolRefAttr.get(name, b.context)})
        results = iter([tensor(r, t) for r, t in zip(call.results, out_types)])
        return _unflatten(ret_template, lambda leaf: next(results) if isinstance(leaf, tensor) else leaf)

    # ------------------------------------------------------------------------------------------
    # control flow
    # ------------------------------------------------------------------------------------------

    def _unify(self, name, a, b, where):
        """Make two branch values of ``name`` one type: returns (type, conv_a, conv_b) where conv_* build the
        yielded tensor inside their branch; None if both are the same compile-time value."""
        if a is b:
            return None
        ta, tb = isinstance(a, tensor), isinstance(b, tensor)
        if not ta and not tb:
            ua, ub = _unwrap(a), _unwrap(b)
            if type(ua) is type(ub) and ua == ub:
                return None
            num = ua if ub is None else ub
            if name.startswith("<ret") and (ua is None) != (ub is None) and _is_py_scalar(num):
                # a number returned on one path, nothing on the other: the scalar's tensor type, ub.poison there
                t = _s.scalar_type_of_python(num)
                val = lambda: _s.constant(num, t)  # noqa: E731
                poison = lambda: _s.poison(t)  # noqa: E731
                return (t, val, poison) if ub is None else (t, poison, val)
            if not (_is_py_scalar(ua) and _is_py_scalar(ub)):
                raise SemanticError(f"'{name}' has different compile-time values in the two branches of {where} "
                                    f"({ua!r} and {ub!r}) and they cannot be selected at run time")
            t1, t2 = _s.scalar_type_of_python(ua), _s.scalar_type_of_python(ub)
            ty = t1 if t1 == t2 else _s.computation_type_impl(t1, False, t2, False, False)
            return ty, (lambda: _s.constant(ua, ty)), (lambda: _s.constant(ub, ty))
        if ta and tb:
            if a.type != b.type:  # Triton's words for each case (tools and Triton's tests match them)
                if name == "<value>":
                    raise SemanticError(f"Ternary expression with dynamic condition has inconsistent types "
                                        f"{a.type} and {b.type}")
                if name.startswith("<ret"):
                    raise SemanticError(f"Inconsistent return types: {a.type} and {b.type} (the two branches of "
                                        f"{where} return different types)")
                raise SemanticError(f"Mismatched type for {name} between the then block ({a.type}) and the else "
                                    f"block ({b.type}) of {where}")
            return a.type, (lambda: a), (lambda: b)
        t = a.type if ta else b.type
        other = b if ta else a
        if name.startswith("<ret") and _unwrap(other) is None:
            # a function that returns a value on some paths and falls off its end on others: there, the value is
            # undefined (Triton's ub.poison; a caller must not use it)
            poison = lambda: _s.poison(t)  # noqa: E731
            return (t, (lambda: a), poison) if ta else (t, poison, (lambda: b))
        if not _is_py_scalar(_unwrap(other)):
            raise SemanticError(f"'{name}' is a tensor in one branch of {where} and {_unwrap(other)!r} in the other")
        conv = lambda: _s.cast(_unwrap(other), t)  # noqa: E731
        return (t, (lambda: a), conv) if ta else (t, conv, (lambda: b))

    def _emit_if(self, cond: tensor, then_fn, else_fn, node, where):
        """Generate an scf.if; ``then_fn``/``else_fn`` fill their block and return a dict name -> value of what
        they yield.  Returns dict name -> result for the unified values."""
        from mlir import ir
        b = self.builder
        saved_ip = b.ip
        tmp = b.create("scf.if", [cond], [], regions=2)
        then_block = tmp.regions[0].blocks.append()
        else_block = tmp.regions[1].blocks.append()
        b.ip = ir.InsertionPoint(then_block)
        then_vals = then_fn()
        b.ip = ir.InsertionPoint(else_block)
        else_vals = else_fn()
        names = [n for n in then_vals if n in else_vals]
        plan = []
        for n in names:
            u = self._unify(n, then_vals[n], else_vals[n], where)
            if u is not None:
                plan.append((n, u))
        then_out, else_out = [], []
        b.ip = ir.InsertionPoint(then_block)
        for n, (ty, ca, cb) in plan:
            then_out.append(ca())
        b.create("scf.yield", then_out, [])
        b.ip = ir.InsertionPoint(else_block)
        for n, (ty, ca, cb) in plan:
            else_out.append(cb())
        b.create("scf.yield", else_out, [])
        b.ip = saved_ip
        if not plan:
            return {}
        op = b.create("scf.if", [cond], [b.ty(ty) for _, (ty, _a, _b) in plan], regions=2)
        then_block.append_to(op.regions[0])
        else_block.append_to(op.regions[1])
        tmp.erase()
        return {n: tensor(r, ty) for (n, (ty, _a, _b)), r in zip(plan, op.results)}

    def _emit_if_values(self, cond, then_expr, else_expr, node):
        seen = {}

        def run(key, f):
            seen[key] = f()
            return {"<value>": seen[key]}

        res = self._emit_if(cond, lambda: run("t", then_expr), lambda: run("e", else_expr), node,
                            "a ternary expression")
        return res.get("<value>", seen.get("t"))

    def visit_If(self, node):
        cond = self.visit(node.test)
        if isinstance(cond, _c.typed_constexpr) and _contains_return([node]):
            # an assigned value (a scalar tensor in Triton) chooses between returns at run time, as in Triton: a
            # path that falls off the function's end then returns ub.poison where deciding it now would return None
            cond = _s.to_tensor(cond)
        if not isinstance(cond, tensor):
            self.visit_block(node.body if _unwrap(cond) else node.orelse)
            return
        cond = _s.scalar_condition(cond, "an if statement")
        pre = dict(self.lscope)
        state = {}

        def branch(stmts, key):
            def run():
                self.lscope = dict(pre)
                self.returned, self.ret = False, None
                self.visit_block(stmts)
                state[key] = (self.returned, self.ret, self.lscope)
                if self.returned:
                    return {f"<ret{i}>": v for i, v in enumerate(_flatten(self.ret))}
                return dict(self.lscope)
            return run

        then_run, else_run = branch(node.body, "then"), branch(node.orelse, "else")

        # names that are unchanged in both branches are not yielded (_unify returns None for identical values)
        results = self._emit_if(cond, then_run, else_run, node, "an if statement")
        t_ret, t_val, _ = state["then"]
        e_ret, e_val, _ = state["else"]
        self.lscope = dict(pre)
        if t_ret and e_ret:
            lt, le = _flatten(t_val), _flatten(e_val)
            if len(lt) != len(le) or _structure(t_val) != _structure(e_val):
                raise SemanticError("the branches of this if statement return different kinds of values "
                                    f"({t_val!r} and {e_val!r})")
            leaves = [results.get(f"<ret{i}>", lt[i]) for i in range(len(lt))]
            it = iter(leaves)
            self.ret = _unflatten(t_val, lambda _leaf: next(it))
            self.returned = True
            return
        if t_ret or e_ret:
            raise SemanticError("only one branch of this if statement returns (internal: returns were not "
                                "normalised)")
        self.returned, self.ret = False, None
        for n, v in results.items():
            self.lscope[n] = v
        for st in (state["then"][2], state["else"][2]):
            for n in st:
                if n not in self.lscope:
                    self.one_branch[n] = node.lineno

    def _carried(self, body_stmts, exclude=()):
        names = []
        for n in _assigned_names(body_stmts):
            if n in exclude or n not in self.lscope:
                continue
            v = self.lscope[n]
            if isinstance(v, tensor) or _is_py_scalar(_unwrap(v)):
                names.append(n)
        return names

    def _check_uncarried(self, body_stmts, carried, before, after, exclude=()):
        for n in _assigned_names(body_stmts):
            if n in exclude or n in carried or n not in before:
                continue
            if n in after and after[n] is not before[n]:
                a, bv = after[n], before[n]
                if not isinstance(a, tensor) and not isinstance(bv, tensor) and \
                        type(_unwrap(a)) is type(_unwrap(bv)) and _unwrap(a) == _unwrap(bv):
                    continue
                raise SemanticError(f"'{n}' is {_unwrap(bv)!r} before the loop and is re-assigned inside it; only "
                                    "tensors and numbers can be loop-carried")

    def _yield_values(self, carried, init_types, where):
        outs = []
        for n, t in zip(carried, init_types):
            try:
                outs.append(self._yield_value(n, t, where))
            except SemanticError as e:
                node = self.last_assign.get(n)
                if node is None:
                    raise
                raise self._error(node, e) from e
        return outs

    def _yield_value(self, n, t, where):
        if True:
            v = self.lscope.get(n)
            if v is None:
                raise SemanticError(f"loop-carried variable '{n}' is not defined at the end of the {where} body")
            if isinstance(v, tensor):
                if v.type != t:
                    raise SemanticError(f"Loop-carried variable '{n}' has initial type {t} but is re-assigned to "
                                        f"{v.type} in the {where}. Please make sure that the type stays consistent "
                                        "(e.g. initialise it with tl.zeros(..., dtype=...) or cast with .to()).")
                return v
            else:
                u = _unwrap(v)
                if not _is_py_scalar(u) or t.is_block():
                    raise SemanticError(f"Loop-carried variable '{n}' has initial type {t} but is re-assigned to "
                                        f"{u!r} in the {where}")
            return _s.constant(u, t)

    def visit_For(self, node):
        from mlir import ir
        it = node.iter
        if not isinstance(it, ast.Call):
            raise _Unsupported("for loops must iterate over range(...), tl.range(...) or tl.static_range(...)")
        iterator = self.visit(it)
        if node.orelse:
            raise _Unsupported("for ... else is not supported")
        if not isinstance(node.target, ast.Name):
            raise _Unsupported("the loop variable must be a single name")
        if isinstance(iterator, tl.static_range):
            self.loop_depth += 1
            try:
                for i in _py.range(iterator.start, iterator.end, iterator.step):
                    self.lscope[node.target.id] = constexpr(i)
                    self.visit_block(node.body)
            finally:
                self.loop_depth -= 1
            return
        if isinstance(iterator, _py.range):
            iterator = tl.range(iterator.start, iterator.stop, iterator.step)
        if not isinstance(iterator, tl.range):
            raise _Unsupported("for loops must iterate over range(...), tl.range(...) or tl.static_range(...)")
        b = self.builder
        step = iterator.step
        negative = not isinstance(step, tensor) and _unwrap(step) < 0
        lbt, ubt, stt, iv_ty = _s.range_operands(iterator.start, iterator.end, step)
        user_lb, user_step = lbt, stt
        if negative:
            # iterate j over [0, cdiv(lb - ub, -step)) and compute lb + j * step in the body
            nstep = -_unwrap(step)
            trips = _s.floordiv(_s.add(_s.sub(lbt, ubt), nstep - 1), nstep)
            lbt, ubt, stt = _s.constant(0, iv_ty), trips, _s.constant(1, iv_ty)
        target = node.target.id
        carried = self._carried(node.body, exclude=(target,))
        inits = [_s.to_tensor(self.lscope[n]) for n in carried]
        init_types = [v.type for v in inits]
        attrs = {}
        if iterator.num_stages is not None:
            attrs["tt.num_stages"] = b.i32_attr(iterator.num_stages)
        if iterator.loop_unroll_factor is not None:
            attrs["tt.loop_unroll_factor"] = b.i32_attr(iterator.loop_unroll_factor)
        if iterator.disallow_acc_multi_buffer:
            attrs["tt.disallow_acc_multi_buffer"] = ir.UnitAttr.get(b.context)
        if iterator.flatten:
            attrs["tt.flatten"] = ir.UnitAttr.get(b.context)
        if iterator.warp_specialize:
            attrs["tt.warp_specialize"] = ir.UnitAttr.get(b.context)
        if iterator.disable_licm:
            attrs[LOOP_ANNOTATION] = _no_licm_annotation(b.context)
        op = b.create("scf.for", [lbt, ubt, stt] + inits, [b.ty(t) for t in init_types], attrs, regions=1)
        block = op.regions[0].blocks.append(b.ty(iv_ty), *[b.ty(t) for t in init_types],
                                            arg_locs=[b.loc] * (1 + len(inits)))
        saved_ip, pre = b.ip, dict(self.lscope)
        b.ip = ir.InsertionPoint(block)
        try:
            self.lscope = dict(pre)
            iv = tensor(block.arguments[0], iv_ty)
            if negative:
                iv = _s.add(user_lb, _s.mul(iv, user_step))
            self.lscope[target] = iv
            for i, n in enumerate(carried):
                self.lscope[n] = tensor(block.arguments[i + 1], init_types[i])
            self.loop_depth += 1
            try:
                self.visit_block(node.body)
            finally:
                self.loop_depth -= 1
            outs = self._yield_values(carried, init_types, "loop")
            b.create("scf.yield", outs, [])
            after = self.lscope
        finally:
            b.ip = saved_ip
            self.lscope = pre
        self._check_uncarried(node.body, carried, pre, after, exclude=(target,))
        for i, n in enumerate(carried):
            self.lscope[n] = tensor(op.results[i], init_types[i])

    def visit_While(self, node):
        from mlir import ir
        if node.orelse:
            raise _Unsupported("while ... else is not supported")
        b = self.builder
        carried = self._carried(node.body)
        inits = [_s.to_tensor(self.lscope[n]) for n in carried]
        init_types = [v.type for v in inits]
        tys = [b.ty(t) for t in init_types]
        op = b.create("scf.while", inits, tys, regions=2)
        before = op.regions[0].blocks.append(*tys, arg_locs=[b.loc] * len(tys))
        after_b = op.regions[1].blocks.append(*tys, arg_locs=[b.loc] * len(tys))
        saved_ip, pre = b.ip, dict(self.lscope)
        try:
            b.ip = ir.InsertionPoint(before)
            self.lscope = dict(pre)
            for i, n in enumerate(carried):
                self.lscope[n] = tensor(before.arguments[i], init_types[i])
            cond = self.visit(node.test)
            if isinstance(cond, tl.condition):  # while tl.condition(c, disable_licm=...)
                if cond.disable_licm:
                    op.attributes[LOOP_ANNOTATION] = _no_licm_annotation(b.context)
                cond = cond.condition
            if not isinstance(cond, tensor):
                if _unwrap(cond):
                    raise _Unsupported("a while loop with a compile-time true condition never ends (break is not "
                                       "supported)")
                cond = _s.constant(False, tl.int1)
            cond = _s.scalar_condition(cond, "a while loop")
            b.create("scf.condition", [cond] + [before.arguments[i] for i in _py.range(len(tys))], [])
            b.ip = ir.InsertionPoint(after_b)
            self.lscope = dict(pre)
            for i, n in enumerate(carried):
                self.lscope[n] = tensor(after_b.arguments[i], init_types[i])
            self.loop_depth += 1
            try:
                self.visit_block(node.body)
            finally:
                self.loop_depth -= 1
            outs = self._yield_values(carried, init_types, "while loop")
            b.create("scf.yield", outs, [])
            after = self.lscope
        finally:
            b.ip = saved_ip
            self.lscope = pre
        self._check_uncarried(node.body, carried, pre, after)
        for i, n in enumerate(carried):
            self.lscope[n] = tensor(op.results[i], init_types[i])

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
        _s.kernel_assert(cond, msg)

    # unsupported statements with clear messages
    def _unsup(self, what):
        def f(node):
            raise _Unsupported(f"{what} is not supported in @jit functions")
        return f

    def visit_Break(self, node):
        raise _Unsupported("'break' is not supported in @jit functions; use a while loop with a condition")

    def visit_Continue(self, node):
        raise _Unsupported("'continue' is not supported in @jit functions; use an if around the rest of the body")

    def visit_Try(self, node):
        raise _Unsupported("'try' is not supported in @jit functions")

    visit_TryStar = visit_Try

    def visit_With(self, node):
        raise _Unsupported("'with' is not supported in @jit functions")

    def visit_ClassDef(self, node):
        raise _Unsupported("class definitions are not supported in @jit functions")

    def visit_Import(self, node):
        raise _Unsupported("import statements are not supported in @jit functions; import at module level")

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        raise _Unsupported("'global' statements are not supported in @jit functions")

    def visit_Nonlocal(self, node):
        raise _Unsupported("'nonlocal' statements are not supported in @jit functions")

    def visit_Yield(self, node):
        raise _Unsupported("'yield' is not supported in @jit functions")

    visit_YieldFrom = visit_Yield

    def visit_Delete(self, node):
        raise _Unsupported("'del' is not supported in @jit functions")

    def visit_Raise(self, node):
        raise _Unsupported("'raise' is not supported in @jit functions; use tl.static_assert or tl.device_assert")

    def visit_ListComp(self, node):
        raise _Unsupported("comprehensions are not supported in @jit functions")

    visit_GeneratorExp = visit_SetComp = visit_DictComp = visit_ListComp

    def visit_AsyncFunctionDef(self, node):
        raise _Unsupported("async functions are not supported")

    visit_AsyncFor = visit_AsyncWith = visit_Await = visit_AsyncFunctionDef

    def visit_Dict(self, node):
        keys = [_unwrap(self.visit(k)) for k in node.keys]
        vals = [self.visit(v) for v in node.values]
        return dict(zip(keys, vals))


# ----------------------------------------------------------------------------------------------
# value trees (return values)
# ----------------------------------------------------------------------------------------------

def _flatten(v) -> list:
    if isinstance(v, (tuple, list)):
        out = []
        for x in v:
            out.extend(_flatten(x))
        return out
    return [v]


def _structure(v):
    if isinstance(v, (tuple, list)):
        return tuple(_structure(x) for x in v)
    return "*"


def _unflatten(template, f):
    if isinstance(template, (tuple, list)):
        return tuple(_unflatten(x, f) for x in template)
    return f(template)
