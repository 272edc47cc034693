"""The autotuner's results on disk, for later processes: ``<cache dir>/autotune/<kernel>-<hash>.json``.

An autotuner writes one file per tuning when ``autotune(cache_results=True)`` or ``TRITIUM_CACHE_AUTOTUNING=1``
(or ``TRITON_CACHE_AUTOTUNING``), unless ``TRITIUM_DISABLE_CACHE`` is set.  The hash in the name covers
tritium's and the backend's code, the kernel's source (``cache_key``), the backend, its current target and
``compiler.hash()``, the tuning key and the configs; the file holds the configs (checked again on load), their
timings and the index of the best.  Writes are atomic; a missing, corrupt or mismatched file is a miss (the
autotuner benchmarks again) and a failed write only costs the next process a benchmark.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional

from .._env import env_flag
from ..errors import BackendUnavailable
from .config import Config

class TuningResult(NamedTuple):
    """The outcome of tuning one key: the fastest config and every config's timing (what the benchmarker
    returned: ``[median, p20, p80]`` in ms by default)."""

    best: Config
    timings: Dict[Config, Any]


def autotune_cache_dir() -> str:
    """``<kernel cache dir>/autotune``: ``$TRITIUM_CACHE_DIR/autotune`` (default ``~/.tritium/cache/autotune``)."""
    from .cache import cache_dir

    return os.path.join(str(cache_dir()), "autotune")


def requested_by_env() -> bool:
    """``TRITIUM_CACHE_AUTOTUNING=1`` (or ``TRITON_CACHE_AUTOTUNING``): every autotuner caches its results."""
    return env_flag("TRITIUM_CACHE_AUTOTUNING", "TRITON_CACHE_AUTOTUNING")


def disabled() -> bool:
    """``TRITIUM_DISABLE_CACHE=1`` turns the results on disk off, as it does the kernel cache."""
    from .cache import ENV_DISABLE

    return env_flag(ENV_DISABLE)


def result_path(kernel_name: str, kernel_key: str, tuning_key: tuple, configs: List[Config]) -> Optional[str]:
    """The file for this kernel (``kernel_key``: its ``cache_key``), tuning key and configs, or None when no
    backend is active (the launch then says why)."""
    from . import driver
    from .cache import backend_hash, tritium_code_hash

    try:
        sel = driver.select()
        target = repr(driver.active.get_current_target())
        compiler = driver.get_compiler(sel.name)
    except BackendUnavailable:
        return None
    h = hashlib.sha256()
    for part in (tritium_code_hash(compiler), kernel_key, sel.name, target, backend_hash(compiler),
                 repr(tuning_key), *(str(c) for c in configs)):
        h.update(part.encode())
        h.update(b"\0")
    return os.path.join(autotune_cache_dir(), f"{kernel_name[:100]}-{h.hexdigest()[:40]}.json")


def load(path: str, configs: List[Config]) -> Optional[TuningResult]:
    """The result stored at ``path`` for exactly these ``configs``, or None (missing, corrupt, other configs)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("configs") != [str(c) for c in configs]:
            return None
        timings = {c: _timing_from_json(t) for c, t in zip(configs, data["timings"])}
        return TuningResult(configs[int(data["best"])], timings)
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None  # missing or corrupt: benchmark again


def save(path: str, kernel_name: str, tuning_key: tuple, configs: List[Config], result: TuningResult) -> None:
    """Store ``result`` at ``path`` (atomically; a read-only cache directory is not an error)."""
    data = {"kernel": kernel_name, "key": repr(tuning_key), "configs": [str(c) for c in configs],
            "timings": [_timing_to_json(result.timings[c]) for c in configs], "best": configs.index(result.best),
            "best_config": str(result.best)}
    try:
        _atomic_write_json(path, data)
    except OSError:
        pass  # a read-only cache only costs the next process a benchmark


def _atomic_write_json(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _timing_to_json(t: Any) -> Any:
    if isinstance(t, (list, tuple)):
        return [_timing_to_json(x) for x in t]
    t = float(t)
    return t if t != float("inf") else "inf"


def _timing_from_json(t: Any) -> Any:
    if isinstance(t, list):
        return [_timing_from_json(x) for x in t]
    return float(t)


__all__ = ["TuningResult", "autotune_cache_dir", "disabled", "load", "requested_by_env", "result_path", "save"]
