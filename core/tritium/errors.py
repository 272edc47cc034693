"""Every exception tritium raises on purpose.  Each names where the problem is in the user's source."""
from __future__ import annotations

import linecache
from typing import Optional


class TritiumError(Exception):
    """Base of tritium's own errors."""


def format_source_line(filename: str, lineno: int, col: Optional[int] = None) -> str:
    """``file:line`` followed by the source line and a caret under ``col`` (0-based), when readable."""
    text = linecache.getline(filename, lineno).rstrip("\n") if filename and lineno else ""
    out = f"{filename}:{lineno}"
    if col is not None:
        out += f":{col + 1}"
    if text:
        out += f"\n    {text}"
        if col is not None and 0 <= col <= len(text):
            out += "\n    " + " " * col + "^"
    return out


class CompilationError(TritiumError):
    """A kernel cannot be compiled: the message names the file and line and shows the offending source."""

    def __init__(self, message: str, filename: str = "", lineno: int = 0, col: Optional[int] = None,
                 kernel: str = ""):
        self.message, self.filename, self.lineno, self.col, self.kernel = message, filename, lineno, col, kernel
        where = format_source_line(filename, lineno, col) if filename else "<unknown location>"
        head = f"in kernel '{kernel}' at " if kernel else "at "
        super().__init__(f"{head}{where}\n{message}")


class UnsupportedLanguageConstruct(CompilationError):
    """Valid Python that the tile language does not support."""


class KernelRuntimeError(TritiumError):
    """A kernel failed while running (interpreter): names the source line and the program id."""

    def __init__(self, message: str, location: str = "", pid=None):
        self.message, self.location, self.pid = message, location, pid
        parts = [message]
        if location:
            parts.append(f"at {location}")
        if pid is not None:
            parts.append(f"in program {tuple(pid)}")
        super().__init__("\n".join(parts))


class OutOfBoundsError(KernelRuntimeError, IndexError):
    """A load, store or atomic touched memory outside every buffer passed to the kernel."""


class DeviceAssertionError(KernelRuntimeError, AssertionError):
    """``tl.device_assert`` failed."""


class BackendUnavailable(TritiumError, RuntimeError):
    """A backend cannot be used here: the message says why and how to fix it (a pip command)."""


class OutOfResources(TritiumError):
    """A compiled kernel needs more of a hardware resource than the device has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, required: {required}, hardware limit: {limit}")
