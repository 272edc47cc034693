"""Every exception tritium raises on purpose, all :class:`TritiumError`.  Each names where the problem is in the
user's source (a kernel's line, the op and its location, the backend and what to install).

Where they come from: the language's semantic rules (:class:`SemanticError`, turned into a
:class:`CompilationError` at the kernel's line by the frontend), the tt verifier (:class:`VerificationError`),
TTIR passes (:class:`RewriteError`), the lowering (:class:`LoweringError`), the compiler's stages
(:class:`StageNotImplemented`, :class:`CompilationFailed` with LLVM's / ptxas' log), the runtime
(:class:`BackendUnavailable`, :class:`OutOfResources`, :class:`SourceNotFound`) and running kernels
(:class:`KernelRuntimeError` and its kinds, :class:`CUDAError`).  Modules that raise them re-export them under their
old names.
"""
from __future__ import annotations

import linecache
from typing import Optional


def _rebuild_error(cls, args, state):
    """Unpickle a :class:`TritiumError`: the same message and attributes, without calling ``__init__``."""
    e = cls.__new__(cls, *args)
    e.args = args
    e.__dict__.update(state)
    return e


class TritiumError(Exception):
    """Base of tritium's own errors.  They pickle whole (message and attributes) whatever their ``__init__`` takes:
    they cross processes (an autotuner's compile worker, Inductor's compile subprocesses)."""

    def __reduce__(self):
        return _rebuild_error, (type(self), self.args, dict(self.__dict__))


#: pseudo file name -> lines: the sources tritium registered in linecache (exec()-built kernels,
#: ``tritium.source.files``), registered again should something clear linecache
_SOURCES: dict = {}


def register_source(filename: str, text: str) -> None:
    """Make ``text`` the lines of ``filename`` (a pseudo file name, ``<string:1a2b3c4d5e6f>``) for linecache, so
    tracebacks and :func:`format_source_line` show them."""
    lines = text.splitlines(True)
    _SOURCES[filename] = lines
    linecache.cache[filename] = (len(text), None, lines, filename)  # mtime None: checkcache keeps it


def source_line(filename: str, lineno: int) -> str:
    """Line ``lineno`` of ``filename`` (a file, or a source registered in linecache or by :func:`register_source`)."""
    line = linecache.getline(filename, lineno)
    if not line and filename in _SOURCES:
        lines = _SOURCES[filename]
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    return line


def format_source_line(filename: str, lineno: int, col: Optional[int] = None) -> str:
    """``file:line`` followed by the source line and a caret under ``col`` (0-based), when readable."""
    text = source_line(filename, lineno).rstrip("\n") if filename and lineno else ""
    out = f"{filename}:{lineno}"
    if col is not None:
        out += f":{col + 1}"
    if text:
        out += f"\n    {text}"
        if col is not None and 0 <= col <= len(text):
            out += "\n    " + " " * col + "^"
    return out


#: Triton's name for the base of its errors (``triton.TritonError``): ``except triton.TritonError`` catches tritium's
TritonError = TritiumError


class CompilationError(TritiumError):
    """A kernel cannot be compiled: the message names the file and line and shows the offending source."""

    def __init__(self, message: str, filename: str = "", lineno: int = 0, col: Optional[int] = None,
                 kernel: str = ""):
        self.message, self.filename, self.lineno, self.col, self.kernel = message, filename, lineno, col, kernel
        where = format_source_line(filename, lineno, col) if filename else "<unknown location>"
        head = f"in kernel '{kernel}' at " if kernel else "at "
        super().__init__(f"{head}{where}\n{message}")

    @property
    def error_message(self) -> str:
        """The message without the location (Triton's name for it)."""
        return self.message


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


#: Triton's name for an error raised while its interpreter runs a kernel (``triton.runtime.errors.InterpreterError``)
InterpreterError = KernelRuntimeError


class ArgumentError(KernelRuntimeError, ValueError):
    """A launch argument the backend cannot take (a host tensor where device memory is needed, a tensor on another
    device); a ``ValueError``, as Triton raises for these."""


class OutOfBoundsError(KernelRuntimeError, IndexError):
    """A load, store or atomic touched memory outside every buffer passed to the kernel."""


class DeviceAssertionError(KernelRuntimeError, AssertionError):
    """``tl.device_assert`` failed."""


class DataRaceError(KernelRuntimeError):
    """Two programs of one launch (or two lanes of one store) access an element, at least one storing, in an
    order the GPU does not define (the interpreter's race detector, ``TRITIUM_INTERPRET_CHECKS=races``)."""


class SourceNotFound(TritiumError, OSError, ValueError):
    """The source of a ``@jit`` function cannot be found (``inspect``'s ``OSError``, Triton's ``ValueError``): the
    message says how to give it."""


class BackendUnavailable(TritiumError, RuntimeError):
    """A backend cannot be used here: the message says why and how to fix it (a pip command)."""


class TargetError(TritiumError, ValueError):
    """A target string or arch no backend compiles for (``cuda:abc``, ``hip:gfx000``, ``""``): raised before any
    stage runs, with the supported archs listed (LLVM would abort the process on an arch it cannot select)."""


class OptionError(TritiumError, ValueError, AssertionError):
    """A compile option out of its range (``num_warps`` not a power of 2, ...): a ``ValueError``, and an
    ``AssertionError`` as Triton's own check raises."""


class PluginError(TritiumError):
    """A plugin breaks the hook contract (e.g. a misspelled hook implementation); names the plugin and the hook."""


class OutOfResources(TritiumError):
    """A compiled kernel needs more of a hardware resource than the device has."""

    #: the hint for shared memory (LDS) beyond the device
    SHARED_HINT = "Smaller blocks or a lower num_stages need less."

    def __init__(self, required, limit, name, kernel=None, hint=None):
        self.required, self.limit, self.name, self.kernel = required, limit, name, kernel
        where = f"kernel '{kernel}': " if kernel else ""
        super().__init__(f"{where}out of resource: {name}, required: {required}, hardware limit: {limit}"
                         + (f". {hint}" if hint else ""))


class SemanticError(TritiumError):
    """A user mistake detected by tl's semantic rules (the frontend turns it into a CompilationError)."""


class UnsupportedError(SemanticError):
    """Valid Python the tile language does not support."""


class VerificationError(TritiumError):
    """A tt / ttg op breaks a rule of the dialect.  The message names the op and its location."""


class RewriteError(TritiumError):
    """A TTIR rewrite (block pointers -> tensors of pointers) met a use it cannot rewrite."""


class LoweringError(TritiumError):
    """An op cannot be lowered (no rule, or a case its rule does not handle).  Names the op and location."""


class StageNotImplemented(TritiumError, NotImplementedError):
    """A backend has a stage in its pipeline that cannot run yet (or here)."""


class CompilationFailed(TritiumError):
    """LLVM, ptxas or a linker rejected the kernel; ``log`` holds their output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message + (f"\n{log}" if log else ""))
        self.log = log


class PTXASError(CompilationFailed):
    """ptxas rejected the PTX (Triton's ``triton.runtime.errors.PTXASError``)."""


class CUDAError(KernelRuntimeError, RuntimeError):
    """A CUDA driver call failed; ``code`` is the CUresult value, ``name`` its name (``CUDA_ERROR_...``)."""

    def __init__(self, call: str, code, name: str = "", description: str = ""):
        self.call = call
        self.code = int(code)
        self.name = name or f"CUresult {self.code}"
        super().__init__(f"{call} failed: {self.name}" + (f" ({description})" if description else ""))
