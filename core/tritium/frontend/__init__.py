"""Python AST -> TTIR.  The compiler stage calls :func:`make_ttir`."""
from __future__ import annotations

import collections
from typing import Any, Dict, Optional

from ..errors import CompilationError


def _lookup_constexpr(constexprs, p):
    for key in (p.name, p.num, (p.num,)):
        if key in constexprs:
            return True, constexprs[key]
    return False, None


def _lookup_sig(signature, p):
    for key in (p.name, p.num, (p.num,)):
        if key in signature:
            return signature[key]
    return None


def _symbol(fn, signature, constexprs, err) -> str:
    """The kernel's symbol: its name, or what ``@jit(repr=f)`` makes of the specialisation -- ``f(spec)`` with
    ``spec.constants`` ({parameter: value} of the constexprs, specialised values included) and ``spec.signature``
    ({parameter: type string}, ``"constexpr"`` for those), as Triton calls it."""
    rep = getattr(fn, "repr", None)
    if rep is None:
        return fn.__name__
    consts, sig = {}, {}
    for p in fn.params:
        has, v = _lookup_constexpr(constexprs, p)
        if has:
            consts[p.name], sig[p.name] = v, "constexpr"
        elif _lookup_sig(signature, p) is not None:
            sig[p.name] = _lookup_sig(signature, p)
    name = rep(_Specialization(consts, sig))
    if not isinstance(name, str) or not name.isidentifier():
        raise err(f"@jit(repr=...) must return the kernel's name, an identifier; it returned {name!r}")
    return name


_Specialization = collections.namedtuple("SpecializationProxy", ["constants", "signature"])


def make_ttir(fn, signature: Dict[str, str], constexprs: Optional[Dict[str, Any]] = None,
              attrs: Optional[Dict[str, dict]] = None, context=None):
    """Generate the TTIR module of ``fn`` (a JITFunction).

    ``signature`` maps non-constexpr parameter names to Triton type strings (``*fp32``, ``i32``, ...);
    ``constexprs`` maps names to Python values; ``attrs`` maps names to argument attributes
    (``{"tt.divisibility": 16}``).  Every user mistake raises :class:`tritium.errors.CompilationError`.
    """
    from mlir import ir

    from ..dialects import make_context
    from ..dialects.tt import VerificationError, verify_module
    from ..language import core as _c
    from ..language import semantic as _s
    from .codegen import CodeGenerator

    constexprs = dict(constexprs or {})
    attrs = dict(attrs or {})
    signature = dict(signature or {})
    context = context or make_context()
    name = fn.__name__
    def_line = fn.starting_line_number
    # the line of the ``def`` (decorators come first in the source)
    try:
        fdef = fn.parse().body[0]
        def_line, def_col = fdef.lineno, fdef.col_offset
    except SyntaxError as e:
        raise CompilationError(f"syntax error: {e}", fn.file, def_line, 0, name) from e

    def err(msg):
        return CompilationError(msg, fn.file, def_line, def_col, name)

    symbol = _symbol(fn, signature, constexprs, err)
    with context, ir.Location.file(fn.file, def_line, def_col, context=context):
        module = ir.Module.create()
        builder = _c.Builder(context, module)
        builder._names.add(symbol)
        scope = {}
        arg_types, arg_attrs, arg_params = [], [], []
        for p in fn.params:
            has_cx, cx = _lookup_constexpr(constexprs, p)
            sig = _lookup_sig(signature, p)
            if has_cx:
                scope[p.name] = _c.constexpr(cx)
            elif sig is not None and sig != "constexpr":
                if p.is_constexpr:
                    raise err(f"parameter '{p.name}' is annotated tl.constexpr but has a run-time type '{sig}' in "
                              "the signature and no value")
                try:
                    ty = _s.kernel_param_type(p, sig)
                except _c.SemanticError as e:
                    raise err(f"parameter '{p.name}': {e}") from None
                arg_types.append(ty)
                arg_params.append(p.name)
                a = {}
                for k, v in (attrs.get(p.name) or attrs.get((p.num,)) or attrs.get(p.num) or {}).items():
                    if isinstance(v, bool):
                        a[k] = ir.BoolAttr.get(v)
                    elif isinstance(v, int):
                        a[k] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)
                    elif isinstance(v, str):
                        a[k] = ir.StringAttr.get(v)
                arg_attrs.append(ir.DictAttr.get(a))
            elif p.has_default:
                scope[p.name] = _c.constexpr(p.default)
            elif p.is_constexpr:
                raise err(f"constexpr parameter '{p.name}' has no value (pass it in constexprs)")
            else:
                raise err(f"parameter '{p.name}' is missing from the signature")
        unknown = [k for k in signature if isinstance(k, str) and k not in fn.arg_names]
        if unknown:
            raise err(f"signature names unknown parameters: {unknown}")
        in_types = [builder.ty(t) for t in arg_types]
        ftype = ir.FunctionType.get(in_types, [])
        fattrs = {"sym_name": ir.StringAttr.get(symbol), "function_type": ir.TypeAttr.get(ftype),
                  "sym_visibility": ir.StringAttr.get("public")}
        if any(len(a) for a in arg_attrs):
            fattrs["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        builder.ip = ir.InsertionPoint(module.body)
        builder.loc = ir.Location.file(fn.file, def_line, def_col, context=context)
        func = builder.create("func.func", [], [], fattrs, regions=1)
        builder.loc = ir.Location.file(fn.file, def_line, def_col, context=context)
        entry = func.regions[0].blocks.append(*in_types, arg_locs=[builder.loc] * len(in_types))
        for i, (pname, ty) in enumerate(zip(arg_params, arg_types)):
            scope[pname] = _c.tensor(entry.arguments[i], ty)
        builder.ip = ir.InsertionPoint(entry)
        gen = CodeGenerator(fn, builder, scope, is_kernel=True)
        builder.codegen = gen
        with _c.use_builder(builder):
            try:
                gen.generate_body()
            except CompilationError:
                raise
            except RecursionError as e:
                raise err("the kernel is too deeply nested (recursion)") from e
            except Exception as e:  # pragma: no cover - visit() wraps everything it can
                raise err(f"internal error while generating code ({type(e).__name__}): {e}") from e
        builder.loc = ir.Location.file(fn.file, def_line, def_col, context=context)
        builder.create("func.return", [], [])
        try:
            verify_module(module)
        except VerificationError as e:
            raise err(f"the generated TTIR is invalid:\n{e}") from e
    return module


__all__ = ["make_ttir", "CompilationError"]
