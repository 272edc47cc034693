"""The ROCm device libraries (``ocml.bc``: math, ``ockl.bc``: kernel helpers), found on this machine and linked
into a kernel's LLVM module before code generation.

Where they are looked for, first found wins (a directory holding both ``ocml.bc`` and ``ockl.bc``):

1. ``TRITIUM_ROCM_DEVICE_LIBS`` (a directory; set but without the two files: not found, and the error says so);
2. a ROCm install: ``$ROCM_PATH/amdgcn/bitcode``, then ``/opt/rocm/amdgcn/bitcode``;
3. an installed ``triton`` package's ``backends/amd/lib`` (Triton's wheels, ``pytorch-triton-rocm`` included, ship
   the two files for its own AMD backend; the package is located, not imported).

No pinned package of the ``amd`` extra ships them (``triton`` would, but pinning a second compiler of ~150 MB for
two bitcode files is not worth it; the ROCm SDK wheels are not on the package index CI uses), so without one of
these a kernel that needs them is a :class:`~tritium.errors.CompilationError` at its line (:data:`HOW`).

Linking (:func:`link`, as Triton's AMD backend does): the module gets the ``__oclc_*`` control constants the
libraries read, defined for the arch (:func:`controls`: ISA version, ABI version 500, wavefront size,
finite-only / unsafe-math off, correctly rounded f32 sqrt on, denormals kept), then each library it calls into is
linked in; :func:`tritium_amd.hsaco.llir_to_amdgcn` internalises every function but the kernel, so O3 keeps only
what the kernel uses.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Optional

ENV = "TRITIUM_ROCM_DEVICE_LIBS"
LIBS = ("ocml", "ockl")
HOW = (f"set {ENV} to a directory holding the ROCm device libraries ocml.bc and ockl.bc (a ROCm install's "
       f"amdgcn/bitcode, found by itself under $ROCM_PATH or /opt/rocm; an installed triton package's "
       f"backends/amd/lib is used too)")


def _has_libs(d: str) -> bool:
    return all(os.path.isfile(os.path.join(d, f"{n}.bc")) for n in LIBS)


def candidates() -> list:
    """The directories looked in, in order, with where each comes from: ``[(dir, source)]``."""
    out = []
    env = os.environ.get(ENV)
    if env:
        out.append((env, ENV))
    for root, what in ((os.environ.get("ROCM_PATH"), "$ROCM_PATH"), ("/opt/rocm", "/opt/rocm")):
        if root:
            out.append((os.path.join(root, "amdgcn", "bitcode"), what))
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    for d in (spec.submodule_search_locations or []) if spec is not None else []:
        out.append((os.path.join(d, "backends", "amd", "lib"), "the installed triton package"))
    return out


def directory() -> Optional[str]:
    """The directory of the device libraries, or None.  ``TRITIUM_ROCM_DEVICE_LIBS`` set to a directory without
    them is None too (an explicit choice is not overridden)."""
    for d, source in candidates():
        if _has_libs(d):
            return d
        if source == ENV:
            return None
    return None


def key() -> str:
    """What the compiler's cache key takes from the libraries: their directory and each file's size and mtime."""
    d = directory()
    if d is None:
        return "rocm-device-libs=none"
    st = [os.stat(os.path.join(d, f"{n}.bc")) for n in LIBS]
    return f"rocm-device-libs={d}:" + ":".join(f"{s.st_size}.{int(s.st_mtime)}" for s in st)


@functools.lru_cache(maxsize=8)
def _bitcode(path: str, stamp: tuple) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def bitcode(name: str) -> bytes:
    d = directory()
    if d is None:
        raise FileNotFoundError(f"the ROCm device library {name}.bc was not found: {HOW}")
    path = os.path.join(d, f"{name}.bc")
    st = os.stat(path)
    return _bitcode(path, (st.st_size, st.st_mtime))


@functools.lru_cache(maxsize=8)
def _defined(path: str, stamp: tuple) -> frozenset:
    from tritium.compiler.stages import llvm_binding

    mod = llvm_binding().parse_bitcode(_bitcode(path, stamp))
    return frozenset(f.name for f in mod.functions if not f.is_declaration)


def defines(symbol: str) -> bool:
    """Whether the libraries found define ``symbol`` (False when none are found)."""
    d = directory()
    if d is None:
        return False
    lib = "ockl" if symbol.startswith("__ockl_") else "ocml"
    path = os.path.join(d, f"{lib}.bc")
    st = os.stat(path)
    return symbol in _defined(path, (st.st_size, st.st_mtime))


# ------------------------------------------------------------------------------------------------
# The control constants and the link
# ------------------------------------------------------------------------------------------------

def isa_version(arch: str) -> int:
    """``__oclc_ISA_version``: major * 1000 + minor * 100 + stepping, the last two hex digits of the name
    (gfx942 -> 9402, gfx90a -> 9010, gfx1100 -> 11000)."""
    m = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", arch.lower().split(":")[0])
    if not m:
        raise ValueError(f"not an AMDGPU arch: {arch!r}")
    return int(m.group(1)) * 1000 + int(m.group(2), 16) * 100 + int(m.group(3), 16)


def controls(arch: str, wave64: bool) -> dict:
    """name -> (LLVM type, value) of every ``__oclc_*`` control the libraries may read."""
    return {
        "__oclc_ISA_version": ("i32", isa_version(arch)),
        "__oclc_ABI_version": ("i32", 500),  # code object v5
        "__oclc_wavefrontsize64": ("i8", int(wave64)),
        "__oclc_wavefrontsize_log2": ("i32", 6 if wave64 else 5),
        "__oclc_finite_only_opt": ("i8", 0),  # infinities and NaNs are handled
        "__oclc_unsafe_math_opt": ("i8", 0),
        "__oclc_correctly_rounded_sqrt32": ("i8", 1),
        "__oclc_daz_opt": ("i8", 0),  # f32 denormals kept (the kernels' default "ieee" mode); older libraries
    }


def controls_ir(arch: str, wave64: bool) -> str:
    """The control constants as LLVM IR definitions (``linkonce_odr hidden`` constants in the constant address
    space, resolving the libraries' ``external addrspace(4) constant`` declarations)."""
    lines = [f'target triple = "amdgcn-amd-amdhsa"']
    for name, (ty, value) in controls(arch, wave64).items():
        lines.append(f"@{name} = linkonce_odr hidden local_unnamed_addr addrspace(4) constant {ty} {value}, "
                     f"align {4 if ty == 'i32' else 1}")
    return "\n".join(lines) + "\n"


def needed(mod) -> list:
    """The libraries an llvmlite module calls into (declared ``__ocml_*`` / ``__ockl_*`` / ``__printf_alloc``)."""
    names = [f.name for f in mod.functions if f.is_declaration]
    return [lib for lib in LIBS if any(n.startswith(f"__{lib}_") for n in names)]


def link(mod, arch: str, wave64: bool) -> None:
    """Link the libraries ``mod`` calls into, with the arch's control constants, into ``mod`` (llvmlite).  Raises
    FileNotFoundError without them, RuntimeError where LLVM cannot read or link them, ValueError for a control
    constant this module does not know."""
    from tritium.compiler.stages import llvm_binding

    libs = needed(mod)
    if not libs:
        return
    llvm = llvm_binding()
    parsed = [llvm.parse_bitcode(bitcode(lib)) for lib in libs]
    known = controls(arch, wave64)
    for lib, m in zip(libs, parsed):
        for g in m.global_variables:
            if g.is_declaration and g.name.startswith("__oclc_") and g.name not in known:
                raise ValueError(f"{lib}.bc reads the control constant {g.name}, which tritium does not define")
        m.triple = mod.triple
        m.data_layout = mod.data_layout
    for m in parsed:
        mod.link_in(m)
    ctl = llvm.parse_assembly(controls_ir(arch, wave64))  # after the libraries: linkonce_odr links where referenced
    ctl.data_layout = mod.data_layout
    mod.link_in(ctl)
    for g in mod.global_variables:  # internal: O3 folds their loads into the libraries' code and drops them
        if g.name in known and not g.is_declaration:
            g.linkage = llvm.Linkage.internal
