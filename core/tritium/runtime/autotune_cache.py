"""The autotuner's results on disk, for later processes: ``<cache dir>/autotune/<kernel>-<hash>.json``.

An autotuner writes one file per tuning key when ``autotune(cache_results=True)`` or
``TRITIUM_CACHE_AUTOTUNING=1`` (or ``TRITON_CACHE_AUTOTUNING``), unless ``TRITIUM_DISABLE_CACHE`` is set.  The
hash in the name covers tritium's and the backend's code, the kernel's source (``cache_key``), the backend, its
current target and ``compiler.hash()`` and the tuning key -- not the configs: the file holds a timing per config
(by its text), so a config added to the list is benchmarked alone and the others' timings are kept
(:func:`load` returns what is known, the autotuner measures the rest and :func:`save` merges).  With
``TRITIUM_REMOTE_CACHE`` set the same results are shared through the remote store (verified like a kernel,
merged the same way).  Writes are atomic; a missing, corrupt or mismatched file is a miss (the autotuner
benchmarks again) and a failed write only costs the next process a benchmark.
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


def result_path(kernel_name: str, kernel_key: str, tuning_key: tuple, configs: List[Config] = ()) -> Optional[str]:
    """The file for this kernel (``kernel_key``: its ``cache_key``) and tuning key, or None when no backend is
    active (the launch then says why).  ``configs`` is accepted for compatibility and not part of the name."""
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
                 repr(tuning_key)):
        h.update(part.encode())
        h.update(b"\0")
    return os.path.join(autotune_cache_dir(), f"{kernel_name[:100]}-{h.hexdigest()[:40]}.json")


def _read_timings(path: str) -> Dict[str, Any]:
    """``{config text: timing}`` stored at ``path`` (locally, else in the remote store), {} when none."""
    known: Dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        known = {str(k): _timing_from_json(v) for k, v in data["timings"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        known = {}  # missing or corrupt (or the old one-list format): measure again
    remote = _remote_get(path)
    return {**remote, **known}


def load(path: str, configs: List[Config]) -> Optional[TuningResult]:
    """What is known for ``configs`` at ``path``: a TuningResult whose ``timings`` hold the configs measured
    before (all of them: ``best`` is the fastest; some: ``best`` is None and the autotuner measures the rest),
    or None when none of them was."""
    known = _read_timings(path)
    timings = {c: known[str(c)] for c in configs if str(c) in known}
    if not timings:
        return None
    if len(timings) < len(configs):
        return TuningResult(None, timings)
    return TuningResult(min(configs, key=lambda c: _sort_key(timings[c])), timings)


def save(path: str, kernel_name: str, tuning_key: tuple, configs: List[Config], result: TuningResult) -> None:
    """Merge ``result``'s timings into those stored at ``path`` (atomically; a read-only cache directory is not
    an error) and share them through the remote store when there is one."""
    merged = {**_read_timings(path), **{str(c): t for c, t in result.timings.items()}}
    data = {"kernel": kernel_name, "key": repr(tuning_key),
            "timings": {k: _timing_to_json(v) for k, v in merged.items()}, "best_config": str(result.best)}
    try:
        _atomic_write_json(path, data)
    except OSError:
        pass  # a read-only cache only costs the next process a benchmark
    _remote_put(path, data)


def _sort_key(t: Any) -> Any:
    if isinstance(t, (list, tuple)):
        return tuple(float(x) for x in t)
    return (float(t),)


def _remote_key(path: str) -> str:
    return "autotune-" + os.path.basename(path)[:-5].rsplit("-", 1)[-1]


def _remote_get(path: str) -> Dict[str, Any]:
    from ..compiler import remote_cache

    rc = remote_cache.get_remote_cache()
    hit = rc.get(_remote_key(path)) if rc is not None else None
    if hit is None:
        return {}
    try:
        data = json.loads(hit[0]["autotune"])
        return {str(k): _timing_from_json(v) for k, v in data["timings"].items()}
    except (KeyError, ValueError, TypeError, AttributeError):
        return {}


def _remote_put(path: str, data: dict) -> None:
    from ..compiler import remote_cache

    rc = remote_cache.get_remote_cache()
    if rc is not None:
        rc.put(_remote_key(path), {"autotune": json.dumps(data, sort_keys=True)}, {"complete": True})


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
