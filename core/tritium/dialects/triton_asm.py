"""Triton's own text of TTIR / TTGIR (its ops' custom assembly), rewritten into tritium's.

Triton prints and parses its dialects in their custom assembly: ``tt.func``, ``tt.load %p : tensor<..>``,
layouts as ``#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [..], warpsPerCTA = [..], order = [1, 0]}>``,
shared buffers as ``!ttg.memdesc<64x64xf16, #shared, #smem, mutable>``.  tritium's ``tt`` / ``ttg`` are IRDL
dialects (:mod:`tritium.dialects.tt`): they parse MLIR's generic form only, and their attributes take positional
parameters.  :func:`to_tritium` rewrites the first into the second, so that TTIR / TTGIR written for Triton (a
kernel dumped by Triton, the hand-written TTGIR of Triton's tests) compiles with ``tritium.compile(path)``
(:class:`tritium.compiler.ir_source.IRSource`).

How: line by line.  Attribute aliases (``#blocked = #ttg.blocked<{..}>``) are resolved; every layout attribute and
``!ttg.memdesc`` type anywhere in a line is rewritten (:func:`translate_types`); source locations are dropped;
``tt.func`` / ``tt.return`` / ``tt.call`` become ``func`` ops; the ``tt`` / ``ttg`` ops below are rewritten from
their custom form into the generic form, their operand and result types derived as Triton's assembly format
derives them (a ``tt.load`` names only its pointer type).  Upstream dialects (``arith``, ``scf``, ``math``, ...)
and ops already in generic form pass through with their types rewritten.

Ops: ``tt.make_range``, ``splat``, ``broadcast``, ``expand_dims``, ``reshape``, ``trans``, ``bitcast``,
``fp_to_fp``, ``int_to_ptr``, ``ptr_to_int``, ``addptr``, ``load``, ``store``, ``gather``, ``dot``, ``assert``,
``get_program_id``, ``get_num_programs``; ``ttg.convert_layout``, ``local_alloc``, ``local_load``,
``local_store``, ``local_dealloc``, ``memdesc_trans``.  Layouts: ``blocked``, ``slice``, ``nvidia_mma``,
``dot_op``, ``swizzled_shared``, ``nvmma_shared``, ``amd_mfma``, ``amd_wmma``, ``linear`` (one CTA per CGA).
Anything else (atomics, ...) raises :class:`TritonAsmError` naming the line.  ``tt.reduce`` /
``tt.scan`` (which Triton prints in generic form, with their combine region) become tritium's, whose ``combine``
names a private function made of the region (``tt.reduce.return`` its ``func.return``).
"""
from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from ..errors import TritiumError
from . import layouts as L


class TritonAsmError(TritiumError):
    """Triton assembly that tritium cannot read: the message names the line and what is not supported."""


_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def _scan(s: str):
    """Yield ``(index, char, depth)`` over ``s`` outside string literals; ``->`` is not a bracket."""
    depth, i, n = 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            j = i + 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            i = j + 1
            continue
        if c == "-" and i + 1 < n and s[i + 1] == ">":
            yield i, "->", depth
            i += 2
            continue
        if c in _OPEN:
            yield i, c, depth
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            yield i, c, depth
        else:
            yield i, c, depth
        i += 1


def split_top(s: str, sep: str = ",") -> List[str]:
    """``s`` split at ``sep`` (a character or ``"->"``) outside brackets and strings; parts stripped."""
    out, start = [], 0
    for i, c, d in _scan(s):
        if d == 0 and c == sep:
            out.append(s[start:i].strip())
            start = i + len(sep)
    out.append(s[start:].strip())
    return [p for p in out if p != ""] if sep == "," else out


def _find_top(s: str, chars: str, start: int = 0) -> int:
    for i, c, d in _scan(s):
        if i >= start and d == 0 and c in chars:
            return i
    return -1


def matching(s: str, i: int) -> int:
    """The index of the bracket closing the one at ``s[i]``."""
    base = None
    for j, c, d in _scan(s):
        if j == i:
            base = d
        elif base is not None and j > i and c == _OPEN.get(s[i]) and d == base:
            return j
    raise TritonAsmError(f"unbalanced {s[i]!r} in {s!r}")


# ----------------------------------------------------------------------------------------------
# Attribute values and layouts
# ----------------------------------------------------------------------------------------------

class _SharedMemory:
    """``#ttg.shared_memory``: the memory space of a memdesc (tritium's memdescs are all shared memory)."""

    def to_str(self) -> str:  # pragma: no cover - never printed
        return ""


SHARED_MEMORY = _SharedMemory()


class _Reader:
    """Recursive descent over one attribute value of Triton's syntax; aliases resolved from ``aliases``."""

    def __init__(self, s: str, aliases: dict):
        self.s, self.pos, self.aliases = s, 0, aliases

    def ws(self):
        while self.pos < len(self.s) and self.s[self.pos] in " \t\n":
            self.pos += 1

    def peek(self, t: str) -> bool:
        self.ws()
        return self.s.startswith(t, self.pos)

    def eat(self, t: str):
        if not self.peek(t):
            raise TritonAsmError(f"expected {t!r} at {self.s[self.pos:self.pos + 40]!r} in {self.s!r}")
        self.pos += len(t)

    def ident(self) -> str:
        self.ws()
        m = re.compile(r"[A-Za-z_][\w.\-]*").match(self.s, self.pos)
        if not m:
            raise TritonAsmError(f"expected a name at {self.s[self.pos:self.pos + 40]!r}")
        self.pos = m.end()
        return m.group()

    def value(self) -> Any:
        self.ws()
        s = self.s
        if self.peek("["):
            self.eat("[")
            return self.items("]")
        if self.peek("array<"):
            self.eat("array<")
            self.ident()
            if not self.peek(":"):
                self.eat(">")
                return []
            self.eat(":")
            return self.items(">")
        if self.peek("#"):
            self.eat("#")
            name = self.ident()
            if self.peek("<") and name.startswith(("ttg.", "triton_gpu.")):
                return self.layout(name.split(".", 1)[1])
            if name in ("ttg.shared_memory", "triton_gpu.shared_memory"):
                return SHARED_MEMORY
            if name not in self.aliases:
                raise TritonAsmError(f"unknown attribute #{name}")
            return self.aliases[name]
        m = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?").match(s, self.pos)
        if m:
            self.pos = m.end()
            v = float(m.group()) if (m.group(1) or m.group(2)) else int(m.group())
            if self.peek(":"):  # a typed integer: 16 : i32
                save = self.pos
                self.eat(":")
                self.ws()
                if re.compile(r"[if]\d+").match(s, self.pos):
                    self.ident()
                else:
                    self.pos = save
            return v
        word = self.ident()
        return {"true": True, "false": False}.get(word, word)

    def items(self, close: str) -> list:
        """Comma-separated values up to and including ``close``."""
        out = []
        while not self.peek(close):
            out.append(self.value())
            if self.peek(","):
                self.eat(",")
        self.eat(close)
        return out

    def dict(self) -> dict:
        self.eat("{")
        out = {}
        while not self.peek("}"):
            key = self.ident()
            if self.peek("="):
                self.eat("=")
                out[key] = self.value()
            else:
                out[key] = True
            if self.peek(","):
                self.eat(",")
        self.eat("}")
        return out

    def layout(self, kind: str):
        self.eat("<")
        if not self.peek("{"):
            raise TritonAsmError(f"#ttg.{kind}<...> is not in Triton's form ({{key = value, ...}})")
        p = self.dict()
        self.eat(">")
        return make_layout(kind, p)


def _one_cta(kind: str, p: dict):
    for key in ("CTAsPerCGA", "CTASplitNum"):
        if key in p and any(int(x) != 1 for x in p[key]):
            raise TritonAsmError(f"#ttg.{kind} with {key} = {p[key]}: tritium runs one CTA per CGA")


def make_layout(kind: str, p: dict):
    """tritium's layout (:mod:`tritium.dialects.layouts`) for Triton's ``#ttg.<kind><{p}>``."""
    _one_cta(kind, p)
    try:
        if kind == "blocked":
            return L.BlockedLayout(tuple(p["sizePerThread"]), tuple(p["threadsPerWarp"]), tuple(p["warpsPerCTA"]),
                                   tuple(p["order"]))
        if kind == "slice":
            return L.SliceLayout(int(p["dim"]), p["parent"])
        if kind == "nvidia_mma":
            return L.NvidiaMmaLayout(int(p["versionMajor"]), tuple(p["warpsPerCTA"]), tuple(p["instrShape"]))
        if kind == "dot_op":
            return L.DotOperandLayout(int(p["opIdx"]), p["parent"], int(p.get("kWidth", 0)))
        if kind in ("swizzled_shared", "shared"):
            return L.SharedLayout(int(p.get("vec", 1)), int(p.get("perPhase", 1)), int(p.get("maxPhase", 1)),
                                  tuple(p["order"]))
        if kind == "nvmma_shared":
            return L.NVMMASharedLayout(int(p["swizzlingByteWidth"]), int(bool(p.get("transposed", False))),
                                       int(p["elementBitWidth"]))
        if kind == "amd_mfma":
            return L.AmdMfmaLayout(int(p["versionMajor"]), tuple(p["warpsPerCTA"]), tuple(p["instrShape"]),
                                   int(bool(p.get("isTransposed", False))))
        if kind == "linear":
            if p.get("block"):
                raise TritonAsmError(f"#ttg.linear with block bases {p['block']}: tritium runs one CTA per CGA")
            return L.LinearEncoding(tuple(map(tuple, p.get("register", []))), tuple(map(tuple, p.get("lane", []))),
                                    tuple(map(tuple, p.get("warp", []))))
        if kind == "amd_wmma":
            return L.AmdWmmaLayout(int(p["version"]), tuple(p["warpsPerCTA"]),
                                   int(bool(p.get("isTransposed", False))))
    except KeyError as e:
        raise TritonAsmError(f"#ttg.{kind}: missing parameter {e}") from None
    except (ValueError, TypeError) as e:
        raise TritonAsmError(f"#ttg.{kind}<{p}>: {e}") from None
    raise TritonAsmError(f"the layout #ttg.{kind} is not supported by tritium")


def _attr_text(v: Any) -> str:
    if hasattr(v, "to_str"):
        return v.to_str()
    raise TritonAsmError(f"{v!r} is not an attribute tritium can print")


# ----------------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------------

def _memdesc(body: str, aliases: dict) -> str:
    parts = split_top(body)
    dims = parts[0].split("x")
    shape, elem = [], None
    for i, d in enumerate(dims):
        if d.isdigit():
            shape.append(int(d))
        else:
            elem = "x".join(dims[i:])
            break
    encs = [_Reader(p, aliases).value() for p in parts[1:] if p.startswith("#")]
    enc = [e for e in encs if e is not SHARED_MEMORY]
    if elem is None or not enc:
        raise TritonAsmError(f"!ttg.memdesc<{body}>: expected <shape x element, #encoding, ...>")
    return f"!ttg.memdesc<array<i64: {', '.join(map(str, shape))}>, {translate_types(elem, aliases)}, " \
           f"{_attr_text(enc[0])}>"


def translate_types(s: str, aliases: dict) -> str:
    """``s`` with every ``#ttg.*<{..}>`` layout, alias reference and ``!ttg.memdesc<..>`` in tritium's text."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == '"':
            j = i + 1
            while j < len(s) and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            out.append(s[i:j + 1])
            i = j + 1
            continue
        if s.startswith("!ttg.memdesc<", i):
            k = i + len("!ttg.memdesc")
            end = matching(s, k)
            out.append(_memdesc(s[k + 1:end], aliases))
            i = end + 1
            continue
        if c == "#":
            m = re.compile(r"#([A-Za-z_][\w.]*)").match(s, i)
            name = m.group(1) if m else ""
            if name.startswith(("ttg.", "triton_gpu.")) and s.startswith("<", m.end()):
                r = _Reader(s, aliases)
                r.pos = i
                out.append(_attr_text(r.value()))
                i = r.pos
                continue
            if name in aliases:
                v = aliases[name]
                out.append(_attr_text(v) if v is not SHARED_MEMORY else "")
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _strip_locs(line: str) -> str:
    out, i = [], 0
    while True:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_#.")):
            if j < 0:
                out.append(line[i:])
                break
            out.append(line[i:j + 4])
            i = j + 4
            continue
        out.append(line[i:j].rstrip(" \t"))
        i = matching(line, j + 3) + 1
    return re.sub(r"[ \t]+$", "", "".join(out))


# ----------------------------------------------------------------------------------------------
# Ops
# ----------------------------------------------------------------------------------------------

def _tensor_parts(t: str) -> Tuple[Optional[str], str, Optional[str]]:
    """``tensor<64x32xf32, #enc>`` -> ``("64x32", "f32", "#enc")``; a scalar type -> ``(None, t, None)``."""
    t = t.strip()
    if not t.startswith("tensor<"):
        return None, t, None
    parts = split_top(t[len("tensor<"):-1])
    dims = parts[0].split("x")
    k = next(i for i, d in enumerate(dims) if not d.isdigit())
    return "x".join(dims[:k]), "x".join(dims[k:]), (parts[1] if len(parts) > 1 else None)


def _with_elem(t: str, elem: str) -> str:
    shape, _, enc = _tensor_parts(t)
    if shape is None:
        return elem
    return f"tensor<{shape}x{elem}" + (f", {enc}" if enc else "") + ">"


def _pointee(t: str) -> str:
    _, elem, _ = _tensor_parts(t)
    m = re.fullmatch(r"!tt\.ptr<(.*?)(,\s*\d+)?>", elem.strip())
    if not m:
        raise TritonAsmError(f"expected a pointer (tensor) type, got {t}")
    return _with_elem(t, m.group(1))


_CACHE = {"none": 1, "ca": 2, "cg": 3, "wb": 4, "cs": 5, "wt": 6, "cv": 7}
_EVICT = {"evict_normal": 1, "evict_first": 2, "evict_last": 3}
_PRECISION = {"tf32": 0, "tf32x3": 1, "ieee": 2, "bf16x3": 3, "bf16x6": 4}
_AXES = {"x": 0, "y": 1, "z": 2}
UNARY = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.bitcast", "tt.fp_to_fp",
         "tt.int_to_ptr", "tt.ptr_to_int", "ttg.convert_layout", "ttg.local_load", "ttg.memdesc_trans"}
SUPPORTED = UNARY | {"tt.assert", "tt.make_range", "tt.addptr", "tt.load", "tt.store", "tt.gather", "tt.dot", "tt.get_program_id",
                     "tt.get_num_programs", "ttg.local_alloc", "ttg.local_store", "ttg.local_dealloc"}


def _split_op(rest: str) -> Tuple[List[str], dict, str, List[str]]:
    """The parts of a custom op after its name: ``(operand / keyword tokens, attr-dict text, lhs types text,
    result types)``."""
    colon = _find_top(rest, ":")
    head, types = (rest, "") if colon < 0 else (rest[:colon], rest[colon + 1:])
    attr = ""
    brace = _find_top(head, "{")
    if brace >= 0:
        end = matching(head, brace)
        attr, head = head[brace:end + 1], head[:brace] + head[end + 1:]
    tokens = [t for t in re.split(r"[\s,]+", head.strip()) if t]
    arrow = split_top(types, "->") if types else [""]
    return tokens, attr, arrow[0].strip(), split_top(arrow[1]) if len(arrow) > 1 else []


def _types(text: str) -> List[str]:
    text = text.strip()
    if text.startswith("(") and matching(text, 0) == len(text) - 1:
        text = text[1:-1]
    return split_top(text)


def _generic(name: str, results: str, operands: List[str], attrs: dict, in_types: List[str],
             out_types: List[str]) -> str:
    from . import tt, ttg

    d = tt.op_def(name) or ttg.op_def(name)
    if d is not None and d.needs_operand_segments:
        sizes, left = [], len(operands)
        singles = sum(1 for _, k in d.operands if k == tt.SINGLE)
        spare = left - singles
        for _, k in d.operands:
            if k == tt.SINGLE:
                sizes.append(1)
            else:
                n = 1 if spare > 0 else 0
                spare -= n
                sizes.append(n)
        attrs = {**attrs, "operandSegmentSizes": f"array<i32: {', '.join(map(str, sizes))}>"}
    a = (" {" + ", ".join(k if v is None else f"{k} = {v}" for k, v in sorted(attrs.items())) + "}") if attrs else ""
    lhs = f"{results} = " if results else ""
    return f'{lhs}"{name}"({", ".join(operands)}){a} : ({", ".join(in_types)}) -> ' + \
           (out_types[0] if len(out_types) == 1 else f"({', '.join(out_types)})")


def _attr_entries(attr: str, aliases: dict) -> dict:
    """The entries of a custom op's attr-dict as ``{name: text or None (unit)}``, values' types rewritten."""
    if not attr:
        return {}
    out = {}
    for part in split_top(attr[1:-1]):
        if "=" in part and _find_top(part, "=") >= 0:
            k, v = part.split("=", 1)
            out[k.strip()] = translate_types(v.strip(), aliases)
        else:
            out[part.strip()] = None
    return out


def translate_op(results: str, name: str, rest: str, aliases: dict) -> str:
    """One ``tt`` / ``ttg`` op in custom form (``name`` and the text after it) as tritium's generic form."""
    if name not in SUPPORTED:
        raise TritonAsmError(f"the op {name} in Triton's custom form is not supported by tritium's reader")
    if name == "tt.assert":
        m = re.fullmatch(r'\s*(%[\w#.]+)\s*,\s*("(?:[^"\\]|\\.)*")\s*:\s*(.*?)\s*', rest)
        if not m:
            raise TritonAsmError(f'tt.assert: expected %condition, "message" : type, got {rest.strip()!r}')
        return _generic(name, results, [m.group(1)], {"message": m.group(2)}, [translate_types(m.group(3), aliases)],
                        [])
    tokens, attr, lhs, res = _split_op(rest)
    attrs = _attr_entries(attr, aliases)
    lhs_t = [translate_types(t, aliases) for t in _types(lhs)] if lhs else []
    res_t = [translate_types(t, aliases) for t in res]
    ops = [t for t in tokens if t.startswith("%")]
    if name in UNARY:
        if name == "tt.reshape":
            for w in ("allow_reorder", "efficient_layout"):
                if w in tokens:
                    attrs[w] = None
        return _generic(name, results, ops, _unit_to_bool(attrs), lhs_t, res_t)
    if name == "tt.make_range":
        return _generic(name, results, [], attrs, [], lhs_t)
    if name == "tt.addptr":
        return _generic(name, results, ops, attrs, lhs_t, lhs_t[:1])
    if name in ("tt.get_program_id", "tt.get_num_programs"):
        axis = next((t for t in tokens if t in _AXES), None)
        return _generic(name, results, [], {"axis": f"{_AXES[axis]} : i32"}, [], lhs_t)
    if name in ("tt.load", "tt.store"):
        ptr = lhs_t[0]
        val = _pointee(ptr)
        for i, t in enumerate(tokens):
            if t == "cacheModifier":
                attrs["cache"] = f"{_CACHE[tokens[i + 2] if tokens[i + 1] == '=' else tokens[i + 1]]} : i32"
            if t == "evictionPolicy":
                attrs["evict"] = f"{_EVICT[tokens[i + 2] if tokens[i + 1] == '=' else tokens[i + 1]]} : i32"
        attrs.setdefault("cache", "1 : i32")
        attrs.setdefault("evict", "1 : i32")
        mask = _with_elem(ptr, "i1")
        if name == "tt.load":
            attrs.setdefault("isVolatile", "false")
            types = [ptr, mask, val][:len(ops)]
            return _generic(name, results, ops, attrs, types, [val])
        return _generic(name, results, ops, attrs, [ptr, val, mask][:len(ops)], [])
    if name == "tt.gather":
        m = re.fullmatch(r"(%[\w.#]+)\[(%[\w.#]+)\]", "".join(t for t in tokens))
        if not m:
            raise TritonAsmError(f"tt.gather: expected %src[%indices], got {' '.join(tokens)}")
        attrs.pop("efficient_layout", None)
        return _generic(name, results, [m.group(1), m.group(2)], attrs, lhs_t, res_t)
    if name == "tt.dot":
        for i, t in enumerate(tokens):
            if t == "inputPrecision":
                attrs["inputPrecision"] = f"{_PRECISION[tokens[i + 2]]} : i32"
            if t == "maxNumImpreciseAcc":
                attrs["maxNumImpreciseAcc"] = f"{tokens[i + 2]} : i32"
        ab = [translate_types(t, aliases) for t in split_top(lhs, "*")] if "*" in lhs else lhs_t
        return _generic(name, results, ops, attrs, ab + res_t, res_t)
    if name == "ttg.local_alloc":
        return _generic(name, results, ops, attrs, lhs_t, res_t)
    if name == "ttg.local_store":
        return _generic(name, results, ops, attrs, lhs_t + res_t, [])
    if name == "ttg.local_dealloc":
        return _generic(name, results, ops, attrs, lhs_t, [])
    raise AssertionError(name)  # pragma: no cover - SUPPORTED lists what is handled


def _unit_to_bool(attrs: dict) -> dict:
    return {k: ("true" if v is None else v) for k, v in attrs.items()}


_REGION_OP = re.compile(r'^(\s*)(%[\w#]+(?::\d+)?)\s*=\s*"tt\.(reduce|scan)"\((.*?)\)\s*(<\{.*\}>)?\s*\(\{\s*$')
_REGION_END = re.compile(r"^\s*\}\)\s*(\{.*\})?\s*:\s*(.*)$")


def _combine_region(kind: str, header, body: List[str], end, aliases: dict, name: str) -> Tuple[str, List[str]]:
    """A ``tt.reduce`` / ``tt.scan`` with its combine region (Triton's generic form) as tritium's op, whose
    ``combine`` names a private function: ``(the op's line, the function's lines)``."""
    from . import tt

    indent, results, operands, props = header
    m = re.match(r"\s*\^\w+\((.*)\)\s*:\s*$", body[0])
    if not m:
        raise TritonAsmError(f"tt.{kind}: expected the combine region's block arguments, got {body[0].strip()!r}")
    args = [translate_types(a, aliases) for a in split_top(m.group(1))]
    n = len(args) // 2
    elem_types = [a.split(":", 1)[1].strip() for a in args[:n]]
    lines = [f"  func.func private @{name}({', '.join(args)}) -> ({', '.join(elem_types)}) {{"]
    for b in body[1:]:
        rm = re.match(r"^(\s*)tt\.(?:reduce|scan)\.return\b(.*)$", b)
        lines.append(f"{rm.group(1)}func.return{rm.group(2)}" if rm else _line(b, aliases))
    lines.append("  }")
    attrs = {}
    for text in (props[1:-1] if props else "", end.group(1) or ""):
        attrs.update(_attr_entries(text, aliases))
    attrs["combine"] = f"@{name}"
    ops = split_top(operands)
    seg = lambda k: f"array<i32: {', '.join(['1'] * k + ['0'] * (tt.MIXED_SLOTS - k))}>"  # noqa: E731
    attrs["operandSegmentSizes"], attrs["resultSegmentSizes"] = seg(len(ops)), seg(n)
    arrow = split_top(end.group(2), "->")
    ins = [translate_types(t, aliases) for t in _types(arrow[0])]
    outs = [translate_types(t, aliases) for t in _types(arrow[1])]
    res = results.split(":")[0]
    a = ", ".join(f"{k} = {v}" if v is not None else k for k, v in sorted(attrs.items()))
    out = f"{indent}{results if n == 1 else res + ':' + str(n)} = \"tt.{kind}\"({', '.join(ops)}) {{{a}}} : " \
          f"({', '.join(ins)}) -> " + (outs[0] if len(outs) == 1 else f"({', '.join(outs)})")
    return out, lines


_ALIAS = re.compile(r"^\s*#([\w.]+)\s*=\s*(.*)$")
_OP = re.compile(r"^(\s*)((?:%[\w#]+(?::\d+)?\s*,\s*)*%[\w#]+(?::\d+)?\s*=\s*)?((?:tt|ttg|triton_gpu)\.[\w.]+)\b(.*)$")


def _line(line: str, aliases: dict) -> str:
    """One line (locations stripped) that is no alias and opens no region, in tritium's form."""
    stripped = line.strip()
    if stripped.startswith("tt.func"):
        return translate_types(line.replace("tt.func", "func.func", 1), aliases)
    if stripped.startswith("tt.return"):
        return translate_types(line.replace("tt.return", "func.return", 1), aliases)
    if re.match(r"(%[\w#]+\s*=\s*)?tt\.call\b", stripped):
        return translate_types(line.replace("tt.call", "func.call", 1), aliases)
    m = _OP.match(line)
    if m:
        indent, res, name, rest = m.groups()
        res = (res or "").strip().rstrip("=").strip()
        return indent + translate_op(res, name.replace("triton_gpu.", "ttg."), rest, aliases)
    return translate_types(line, aliases)


def to_tritium(text: str) -> str:
    """Triton's TTIR / TTGIR text (custom assembly) as tritium's (see the module docstring).  Text that is already
    tritium's (generic ``tt`` / ``ttg`` ops, positional layouts) comes back unchanged but for locations."""
    aliases: dict = {}
    out: List[str] = []
    funcs: List[str] = []  # the combine functions of reduce / scan regions, put first in the module
    region = None  # (kind, header, body lines, first line number) while inside a combine region
    for lineno, raw in enumerate(text.splitlines(), 1):
        try:
            line = _strip_locs(raw)
            if region is not None:
                end = _REGION_END.match(line)
                if not end:
                    region[2].append(line)
                    continue
                kind, header, body, _ = region
                op, lines = _combine_region(kind, header, body, end, aliases, f"__triton_{kind}_combine_{len(funcs)}")
                funcs.append("\n".join(lines))
                out.append(op)
                region = None
                continue
            rm = _REGION_OP.match(line)
            if rm:
                region = (rm.group(3), (rm.group(1), rm.group(2), rm.group(4), rm.group(5)), [], lineno)
                continue
            m = _ALIAS.match(line)
            if m:
                name, value = m.group(1), m.group(2).strip()
                if value.startswith("loc(") or name.startswith("loc"):
                    continue
                aliases[name] = _Reader(value, aliases).value()
                continue
            out.append(_line(line, aliases))
        except TritonAsmError as e:
            raise TritonAsmError(f"line {lineno}: {e}\n    {raw.strip()}") from None
    if region is not None:
        raise TritonAsmError(f"line {region[3]}: the tt.{region[0]} region is not closed")
    if funcs:
        at = next((i for i, ln in enumerate(out) if re.match(r"\s*module\b.*\{\s*$", ln)), None)
        if at is None:
            raise TritonAsmError("a tt.reduce / tt.scan region outside a module")
        out[at + 1:at + 1] = funcs
    return "\n".join(out) + "\n"


def is_triton_form(text: str) -> bool:
    """Whether ``text`` looks like Triton's custom assembly rather than tritium's generic form."""
    return bool(re.search(r"^\s*(tt\.func|#[\w.]+\s*=\s*#ttg\.\w+<\{)|#ttg\.\w+<\{|^\s*(%\S+\s*=\s*)?tt\.\w+ ",
                          text, re.M))


__all__ = ["TritonAsmError", "to_tritium", "translate_types", "make_layout", "is_triton_form", "split_top", "matching"]
