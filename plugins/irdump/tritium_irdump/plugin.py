"""The irdump plugin's hook implementations (entry point ``irdump`` in group ``tritium``)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from tritium.plugins import hookimpl

from . import dump_dir, kernel_dir_name, override_dir, stage_file_name

_warned: set = set()


def _warn_once(key: str, msg: str) -> None:
    if key not in _warned:
        _warned.add(key)
        print(f"tritium irdump: {msg}", file=sys.stderr)


def _write(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, (bytes, bytearray, memoryview)):
        tmp.write_bytes(bytes(data))
    else:
        tmp.write_text(data if isinstance(data, str) else str(data), encoding="utf-8")
    os.replace(tmp, path)  # readers never see half a file


@hookimpl
def tritium_stage_output(kernel_name: str, stage: str, output: Any, metadata: dict) -> None:
    root = dump_dir()
    if root is None:
        return
    folder = root / kernel_dir_name(kernel_name, metadata, output)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / stage_file_name(kernel_name, stage), output)
        _write(folder / stage_file_name(kernel_name, "json"),
               json.dumps(metadata, sort_keys=True, indent=2, default=repr))
    except OSError as e:  # a dump must never break a compile
        _warn_once(str(folder), f"cannot write the dump of '{kernel_name}' to {folder}: {e}")


def find_override(kernel_name: str, stage: str, metadata: Optional[dict], output: Any = None) -> Optional[Path]:
    """The override file for this stage: ``DIR/<kernel>-<hash>/<kernel>.<stage>``, else ``DIR/<kernel>.<stage>``."""
    root = override_dir()
    if root is None:
        return None
    fname = stage_file_name(kernel_name, stage)
    for cand in (root / kernel_dir_name(kernel_name, metadata, output) / fname, root / fname):
        if cand.is_file():
            return cand
    return None


@hookimpl
def tritium_override_stage(kernel_name: str, stage: str, output: Any, metadata: dict) -> Any:
    if override_dir() is None:
        return None
    path = find_override(kernel_name, stage, metadata, output)
    if path is None:
        return None
    if isinstance(output, (bytes, bytearray, memoryview)):
        new: Any = path.read_bytes()
    else:
        new = path.read_text(encoding="utf-8")
    print(f"tritium irdump: stage '{stage}' of kernel '{kernel_name}' overridden by {path}", file=sys.stderr)
    return new


@hookimpl
def tritium_bypass_cache() -> Optional[str]:
    if override_dir() is not None:
        return "irdump: TRITIUM_OVERRIDE_DIR is set (stage overrides are active)"
    if dump_dir() is not None:
        return "irdump: TRITIUM_DUMP_DIR is set (kernels are compiled so that their stages are dumped)"
    return None
