"""A kernel given as IR text in a file: ``tritium.compile("kernel.ttgir")`` (Triton's ``IRSource``).

The file's suffix names the stage it holds (``.ttir``, ``.ttgir``, ``.llir``, ``.ptx``, ...); ``compile()`` keeps
the text as that stage's output and runs only the stages after it.  TTIR / TTGIR may be tritium's own text (what
``kernel.asm["ttgir"]`` holds) or Triton's (its ops' custom assembly, as Triton dumps it and as Triton's tests
write it by hand): the latter is rewritten by :mod:`tritium.dialects.triton_asm` first.

From the module: the kernel (the public function), its parameters' types (the launch signature: ``!tt.ptr<f16>``
is ``*fp16``), and for TTGIR the options the module fixes (``ttg.num-warps``, ``ttg.num-ctas``).  TTGIR that has not
been through tritium's shared-memory allocation (hand-written, or Triton's) gets the allocation and the barriers
(membar) here, the analyses tritium's own TTGIR stage ends with.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Any, Optional

from ..errors import TritiumError

#: MLIR element types -> the signature's type names
_SIG = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "fp16", "bf16": "bf16",
        "f32": "fp32", "f64": "fp64", "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5", "ui8": "u8", "ui16": "u16",
        "ui32": "u32", "ui64": "u64"}


def sig_type(mlir_type: str) -> str:
    """The launch signature's name of a parameter's MLIR type (``!tt.ptr<f32>`` -> ``*fp32``)."""
    t = mlir_type.strip()
    m = re.fullmatch(r"!tt\.ptr<(.*?)(,\s*\d+)?>", t)
    if m:
        return "*" + sig_type(m.group(1))
    if t not in _SIG:
        raise TritiumError(f"a kernel parameter of type {t} is not supported in an IR source")
    return _SIG[t]


class IRSource:
    """IR text read from ``path``; ``ext`` is the stage it holds (the file's suffix)."""

    def __init__(self, path: Any, text: Optional[str] = None):
        self.path = os.fspath(path)
        self.ext = os.path.splitext(self.path)[1].lstrip(".")
        if not self.ext:
            raise TritiumError(f"{self.path}: an IR file's suffix names its stage (.ttir, .ttgir, .llir, .ptx)")
        if text is None:
            with open(self.path, "rb" if self.ext == "cubin" else "r") as f:
                text = f.read()
        self.src = text
        self.fn = None
        self.constexprs: dict = {}
        self.attrs: dict = {}
        self.module_attrs: dict = {}
        if self.ext in ("ttir", "ttgir"):
            from ..dialects.triton_asm import is_triton_form, to_tritium

            if is_triton_form(text):
                text = to_tritium(text)
            self.text = text
            self.name, self.signature, self.arg_names = self._mlir_signature(text)
            for key in ("ttg.num-warps", "ttg.num-ctas", "ttg.threads-per-warp"):
                m = re.search(r'"?%s"?\s*=\s*(\d+)' % re.escape(key), text)
                if m:
                    self.module_attrs[key] = int(m.group(1))
        else:
            self.text = text
            self.name, self.signature, self.arg_names = self._other_signature(text)

    @staticmethod
    def _mlir_signature(text: str):
        m = re.search(r"func\.func\s+public\s+@([\w$.]+)\s*\(", text) or re.search(r"func\.func\s+@([\w$.]+)\s*\(",
                                                                                    text)
        if not m:
            raise TritiumError("the IR source has no public function (the kernel)")
        from ..dialects.triton_asm import matching, split_top

        start = m.end() - 1
        sig, names = {}, []
        for arg in split_top(text[start + 1:matching(text, start)]):
            am = re.match(r"%([\w$.]+)\s*:\s*(.*)", arg, re.S)
            if not am:
                continue
            ty = am.group(2)
            brace = ty.find("{")
            ty = re.sub(r"\s+loc\(.*$", "", (ty[:brace] if brace >= 0 else ty)).strip()
            names.append(am.group(1))
            sig[am.group(1)] = sig_type(ty)
        return m.group(1), sig, names

    @staticmethod
    def _other_signature(text: Any):
        if isinstance(text, str):
            m = re.search(r"\.entry\s+([\w$]+)", text) or re.search(r"define\s+[^@]*@([\w$.]+)\s*\(", text)
            if m:
                return m.group(1), {}, []
        return "kernel", {}, []

    def parse_options(self) -> dict:
        """The options the module fixes (Triton's ``IRSource.parse_options``)."""
        out = {}
        if "ttg.num-warps" in self.module_attrs:
            out["num_warps"] = self.module_attrs["ttg.num-warps"]
        if "ttg.num-ctas" in self.module_attrs:
            out["num_ctas"] = self.module_attrs["ttg.num-ctas"]
        return out

    def hash(self) -> str:
        t = self.src if isinstance(self.src, bytes) else self.src.encode()
        return hashlib.sha256(self.ext.encode() + b"\0" + t).hexdigest()

    def stage_text(self, target: Any) -> Any:
        """The text the stage after :attr:`ext` takes: TTGIR with the module attributes tritium's lowering reads
        (``ttg.target``) and, where missing, the shared-memory allocation and barriers."""
        if self.ext != "ttgir":
            return self.text
        from ..dialects import make_context, ttg
        from ..passes.analysis.allocation import allocation_pass
        from ..passes.analysis.membar import membar_pass
        from ..passes.pass_manager import run_passes
        from .stages import asm

        from mlir import ir

        ctx = make_context()
        try:
            module = ir.Module.parse(self.text, ctx)
        except Exception as e:  # noqa: BLE001 - MLIR's parse errors are plain exceptions
            why = "; ".join(f"{d.location}: {d.message}" for d in getattr(e, "error_diagnostics", ()) or ())
            raise TritiumError(f"{self.path}: the TTGIR does not parse: {e}" + (f" ({why})" if why else "")) from None
        with ctx, ir.Location.unknown():
            attrs = module.operation.attributes
            if ttg.TARGET not in attrs:
                attrs[ttg.TARGET] = ir.StringAttr.get(f"{target.backend}:{target.arch}")
            if "ttg.shared" not in attrs:
                run_passes(module.operation, (("tritium-allocation", allocation_pass),
                                              ("tritium-membar", membar_pass)))
            return asm(module)

    def __repr__(self) -> str:
        return f"IRSource({self.path!r}, ext={self.ext!r})"


def is_ir_path(src: Any) -> bool:
    """Whether ``src`` (what ``compile()`` was given) names an IR file."""
    if isinstance(src, os.PathLike):
        return True
    return isinstance(src, str) and "\n" not in src and len(src) < 4096 and os.path.isfile(src)


__all__ = ["IRSource", "is_ir_path", "sig_type"]
