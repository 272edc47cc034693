"""Where a ``@jit`` function's source text comes from when ``inspect`` cannot find it: functions built with
``exec()`` / ``compile()`` from a string (code generators, Triton's own tests), whose file name (``"<string>"``)
is no file.

:func:`install` (called when tritium is imported) adds an audit hook (:func:`sys.addaudithook`) that remembers the
last :data:`MEMO_SIZE` source strings compiled under a name that is no file and that contain ``def`` (the
``compile`` audit event gives the source and the file name); every other audit event costs one string comparison.
:func:`find` looks for the text a function was compiled from: the text ``linecache`` holds under the function's
file name (IPython / doctest-style registered sources), then the remembered strings, newest first.  A candidate is
taken only if compiling it again gives the function's very code object (``==`` on code objects compares the
bytecode, constants, names, first line and the line / column table), so nothing is guessed: a text that does not
compile to the function is never used.  The function's block (decorators and ``def`` from ``co_firstlineno``)
is then its source, as ``inspect.getsourcelines`` would give it.

The found source is registered in ``linecache`` (:func:`tritium.errors.register_source`) under a pseudo file name
of its own, ``<string:1a2b3c4d5e6f>`` (the original name and a hash of the text), so error messages and
step-through mode show the kernel's lines: ``"<string>"`` is shared by every ``exec`` call, the hash makes the name
unique per source and the same in every process (the file cache key names a kernel's file by this name).
"""
from __future__ import annotations

import __future__
import hashlib
import inspect
import linecache
import os
import re
import sys
import textwrap
from importlib.util import decode_source
from typing import Any, NamedTuple, Optional

from ..errors import SourceNotFound, register_source

#: how many compiled source strings the audit hook remembers
MEMO_SIZE = 256

#: (file name, source) -> None, oldest first: the strings compiled under names that are no file
_memo: dict = {}
#: names whose compiles are not remembered: ``ast.parse``'s (tritium parses every kernel's source)
_SKIP = frozenset({"<unknown>"})
_installed = False

#: the __future__ flags a code object carries and a compile of its source must be given again
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def _hook(event: str, args: tuple) -> None:
    if event != "compile":
        return
    try:  # an audit hook must never raise: the audited operation would fail
        source, filename = args
        if type(filename) is not str or filename.startswith("<tritium") or filename in _SKIP:
            return
        if type(source) is bytes:
            if b"def" not in source or source.startswith(b"def __create_fn__("):  # dataclasses' methods
                return
        elif type(source) is not str or "def" not in source:  # an AST: no text to remember
            return
        if not filename.startswith("<") and os.path.isfile(filename):
            return  # a real file: inspect reads it
        key = (filename, source)
        memo = _memo
        memo.pop(key, None)
        memo[key] = None
        while len(memo) > MEMO_SIZE:
            del memo[next(iter(memo))]
    except Exception:  # noqa: BLE001 - e.g. another thread resized the memo meanwhile: forget this one
        pass


def install() -> None:
    """Add the audit hook (once per process; audit hooks cannot be removed)."""
    global _installed
    if not _installed:
        _installed = True
        sys.addaudithook(_hook)


def _text(source: Any) -> Optional[str]:
    if isinstance(source, str):
        return source
    try:
        return decode_source(source)  # the encoding cookie, universal newlines
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _code_objects(code):
    for c in code.co_consts:
        if inspect.iscode(c):
            yield c
            yield from _code_objects(c)


def defines(text: str, code) -> bool:
    """Whether compiling ``text`` (as a module, with ``code``'s ``__future__`` flags) makes a code object equal to
    ``code``: ``text`` is what the function was compiled from (lines included)."""
    try:
        # under a name the audit hook skips (code objects compare equal whatever their file name)
        module = compile(text, "<tritium source check>", "exec", flags=code.co_flags & _FUTURE_FLAGS,
                         dont_inherit=True)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return False
    return any(c.co_name == code.co_name and c.co_firstlineno == code.co_firstlineno and c == code
               for c in _code_objects(module))


class Found(NamedTuple):
    """A function's source: ``src`` (dedented, decorators and ``def`` on), ``file`` (where the lines are: the file,
    or the pseudo file name registered in linecache), ``start`` (the line of ``src``'s first line in ``file``)."""

    src: str
    file: str
    start: int


def register(src: str, start: int, origin: str) -> str:
    """Register ``src`` (a function's dedented source, its first line at line ``start``) in linecache under a pseudo
    file name and return the name: ``origin``'s base name (the name it was compiled under, or the kernel's file)
    and a hash of the text -- unique per text, the same in every process, without directories (the file cache key
    names a file by its base name).  The lines before ``start`` are blank."""
    base = re.sub(r":[0-9a-f]{12}$", "", origin.replace("\\", "/").rsplit("/", 1)[-1].strip("<>")) or "source"
    text = "\n" * (start - 1) + src
    name = f"<{base}:{hashlib.sha256(text.encode()).hexdigest()[:12]}>"
    register_source(name, text)
    return name


def block(text: str, code) -> Found:
    """``code``'s function in ``text`` (the text it was compiled from), registered under its pseudo file name: the
    lines before it blank, so the line numbers are those of ``text``, and dedented, so columns match the kernel's
    AST."""
    first = code.co_firstlineno
    lines = inspect.getblock(text.splitlines(True)[first - 1:])
    src = textwrap.dedent("".join(lines))
    return Found(src, register(src, first, code.co_filename), first)


def _candidates(fn, code):
    """Texts ``code`` may have been compiled from: linecache's under its file name, then the strings remembered
    under that name, newest first."""
    filename = code.co_filename
    lines = linecache.getlines(filename, getattr(fn, "__globals__", None))
    if lines:
        yield "".join(lines)
    for name, source in reversed(list(_memo)):
        if name == filename:
            text = _text(source)
            if text is not None and code.co_name in text:
                yield text


def find(fn, source: Optional[str] = None) -> Found:
    """``fn``'s source (see the module doc).  ``source``: the text ``fn`` was compiled from, given explicitly (it
    must compile to ``fn``'s code).  Raises :class:`~tritium.errors.SourceNotFound` when nothing is found."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    if code is None:
        raise SourceNotFound(f"@jit needs a Python function, got {fn!r}")
    if source is not None:
        if not defines(source, code):
            raise SourceNotFound(
                f"the source given for @jit function '{name}' does not compile to its code (defined at "
                f"{code.co_filename}:{code.co_firstlineno}): give the whole text the function was compiled from "
                f"(the string passed to exec() / compile(), so its line numbers match)")
        return block(source, code)
    if os.path.isfile(code.co_filename):  # a real file: as Python reads it
        try:
            lines, start = inspect.getsourcelines(fn)
            return Found(textwrap.dedent("".join(lines)), inspect.getsourcefile(fn) or code.co_filename, start)
        except OSError:
            pass
    for text in _candidates(fn, code):
        if defines(text, code):
            return block(text, code)
    raise SourceNotFound(
        f"cannot find the source of @jit function '{name}' (compiled from {code.co_filename!r}, line "
        f"{code.co_firstlineno}): tritium finds the source of functions built with exec() / compile() from a string "
        f"compiled after 'import tritium' (or registered in linecache); import tritium first, or give the source: "
        f"tritium.jit(fn, source=text), text being the string the function was compiled from")


__all__ = ["install", "find", "defines", "block", "register", "Found", "MEMO_SIZE"]
