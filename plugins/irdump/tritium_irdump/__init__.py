"""tritium-irdump: write every compile stage to disk, and substitute stages from files (like Triton's
``TRITON_KERNEL_DUMP`` / ``TRITON_KERNEL_OVERRIDE``).

Environment (read at every compile, so setting them in a running process works):

``TRITIUM_DUMP_DIR=DIR``
    every stage of every kernel compiled is written to ``DIR/<kernel>-<hash>/<kernel>.<stage>`` (text stages
    as UTF-8 text, ``bytes`` stages as binary) plus ``<kernel>.json``, the metadata (rewritten after each stage,
    so it is there even when a later stage fails).  ``<hash>`` is the first 16 hex digits of the compile key's
    hash (``metadata["hash"]``).
``TRITIUM_OVERRIDE_DIR=DIR``
    after a stage ran, if ``DIR/<kernel>-<hash>/<kernel>.<stage>`` or ``DIR/<kernel>.<stage>`` exists, its
    content replaces the stage's output before the next stage runs; stderr says so, and the kernel's
    ``metadata["overridden"]`` lists the stages.  Workflow: dump, copy the dump's folder (or single files) into
    the override folder, edit, rerun.

Triton's spellings work too: ``TRITON_KERNEL_DUMP=1`` with ``TRITON_DUMP_DIR``, ``TRITON_KERNEL_OVERRIDE=1``
with ``TRITON_OVERRIDE_DIR``.  While either feature is on, the plugin asks file caches to stand aside
(``tritium_bypass_cache``), so kernels are really compiled (dumped, overridden) and an overridden kernel is
never cached under the unmodified compile key.  With neither set, each hook returns after one environment
lookup.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Optional

__all__ = ["dump_dir", "override_dir", "kernel_dir_name", "stage_file_name"]

HASH_DIGITS = 16


def _env_dir(own: str, triton_flag: str, triton_dir: str) -> Optional[Path]:
    d = os.environ.get(own)
    if d:
        return Path(d)
    if os.environ.get(triton_flag, "0") not in ("", "0", "false", "False") and os.environ.get(triton_dir):
        return Path(os.environ[triton_dir])
    return None


def dump_dir() -> Optional[Path]:
    """The dump folder (``TRITIUM_DUMP_DIR``), or ``None`` when dumping is off."""
    return _env_dir("TRITIUM_DUMP_DIR", "TRITON_KERNEL_DUMP", "TRITON_DUMP_DIR")


def override_dir() -> Optional[Path]:
    """The override folder (``TRITIUM_OVERRIDE_DIR``), or ``None`` when overriding is off."""
    return _env_dir("TRITIUM_OVERRIDE_DIR", "TRITON_KERNEL_OVERRIDE", "TRITON_OVERRIDE_DIR")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name)) or "kernel"


def kernel_dir_name(kernel_name: str, metadata: Optional[dict] = None, output: Any = None) -> str:
    """``<kernel>-<first 16 hex digits of metadata["hash"]>`` (of the output's hash without one)."""
    h = str((metadata or {}).get("hash") or "")
    if not h:
        data = output if isinstance(output, (bytes, bytearray)) else str(output).encode()
        h = hashlib.sha256(data).hexdigest()
    return f"{_safe(kernel_name)}-{h[:HASH_DIGITS]}"


def stage_file_name(kernel_name: str, stage: str) -> str:
    """``<kernel>.<stage>``."""
    return f"{_safe(kernel_name)}.{_safe(stage)}"
