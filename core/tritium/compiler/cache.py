"""The on-disk kernel cache: compiled kernels survive the process, keyed by everything that shapes them.

Where: ``$TRITIUM_CACHE_DIR``, else ``~/.tritium/cache`` (created with mode 0700).  ``TRITIUM_DISABLE_CACHE=1``
bypasses it (nothing is read or written), as does a plugin's ``tritium_bypass_cache`` hook.

Key (:func:`compile_key`): the sha256 of

* the source's hash: for a ``@jit`` kernel, its source, the source of every ``@jit`` function it calls (found
  by scanning the AST, transitively), the global scalar/constexpr values those functions read, its starting
  line (locations end up in the IR), then the signature, constexprs and attributes (specialisation);
* the target (``backend:arch`` and warp size: compiling for ``cuda:90`` here and launching on an sm_90 device
  there compute the same key), the backend compiler's ``hash()``, the parsed options, the stage names (and
  which plugins amend the stage pipeline);
* a content hash of tritium's own code: every ``.py`` file of the core package and of the backend's package,
  hashed once per process, by relative path.

Nothing machine-specific goes into the key (no absolute paths, Python or MLIR/llvmlite versions): the CPU
machine can fill a cache that a GPU machine with the same tritium tree reads.

Entry layout: ``<dir>/<key>/`` holds one file per stage (``<kernel>.<stage>``, text or bytes) and
``metadata.json`` (format version, key, kernel metadata, and for each stage the file name, kind, size and
sha256).  Writes are atomic: an entry is built in a temporary directory inside the cache dir, then
``os.rename``-d into place, not fsynced (an entry a power loss tore fails its checksums on the next read and is
recompiled; the five fsyncs of an entry cost a fifth of a small kernel's compile on the interpreter); a process that
loses the race discards its copy and uses the winner's.  An entry that fails any check (bad JSON, missing file,
checksum mismatch) is moved aside, deleted and recompiled; it is never loaded.  A writer killed mid-write leaves
only its ``.tmp-*`` directory, which no reader looks at; a store removes such leftovers once they are an hour old.
No pickle: metadata is JSON, artefacts are the stages' text or bytes.

Nothing here imports MLIR, llvmlite, the frontend or ``tritium.language``.  Layering: above
:mod:`tritium.plugins` (``tritium_bypass_cache``) and below ``compile()``, which consults it; the autotuner keeps
its results under the same directory.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from .. import plugins
from .._env import env_flag
from .backend import GPUTarget

FORMAT = 1
META = "metadata.json"
ENV_DIR = "TRITIUM_CACHE_DIR"
ENV_DISABLE = "TRITIUM_DISABLE_CACHE"
STALE_SECONDS = 3600  # a temporary entry directory this old belongs to a writer that died

#: counters for tests and diagnostics: ``hits`` (loaded from disk), ``misses``, ``stores``, ``corrupt``
#: (entries found invalid and removed), ``races`` (another process stored the entry first)
stats = {"hits": 0, "misses": 0, "stores": 0, "corrupt": 0, "races": 0}

_lock = threading.Lock()


# ------------------------------------------------------------------------------------------- where / whether
def cache_dir() -> Path:
    """The cache directory (not created): ``$TRITIUM_CACHE_DIR`` or ``~/.tritium/cache``."""
    d = os.environ.get(ENV_DIR, "").strip()
    return Path(d).expanduser() if d else Path.home() / ".tritium" / "cache"


def disabled_reason() -> Optional[str]:
    """Why the file cache is bypassed now (``TRITIUM_DISABLE_CACHE``, a plugin), or None."""
    if env_flag(ENV_DISABLE):
        return f"{ENV_DISABLE} is set"
    try:
        return plugins.cache_bypass_reason()
    except Exception as e:  # noqa: BLE001 - a broken plugin costs the cache, not the compile; it is said once
        why = f"tritium_bypass_cache failed: {type(e).__name__}: {e}"
        if why not in _warned:
            _warned.add(why)
            import warnings

            warnings.warn(f"tritium: the kernel cache is bypassed: {why}", RuntimeWarning, stacklevel=2)
        return why


_warned: set = set()


def _ensure_dir(d: Path) -> Path:
    """Create ``d`` (and missing parents) with mode 0700."""
    if d.is_dir():
        return d
    missing = []
    p = d
    while not p.exists():
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            continue
        os.chmod(p, 0o700)  # whatever the umask
    return d


# ------------------------------------------------------------------------------------------- code hash
_code_hashes: dict = {}


def package_hash(pkg_dir: Any) -> str:
    """Content hash of every ``.py`` file under ``pkg_dir`` (relative paths, sorted); once per process."""
    pkg_dir = str(pkg_dir)
    h = _code_hashes.get(pkg_dir)
    if h is not None:
        return h
    sha = hashlib.sha256()
    files = []
    for root, dirs, names in os.walk(pkg_dir):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
        rel = os.path.relpath(root, pkg_dir).replace(os.sep, "/")
        files.extend((f"{rel}/{n}", os.path.join(root, n)) for n in names if n.endswith(".py"))
    for rel, path in sorted(files):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        sha.update(f"{rel}\0{len(data)}\0".encode())
        sha.update(data)
    h = sha.hexdigest()
    _code_hashes[pkg_dir] = h
    return h


def _module_dir(modname: str) -> Optional[str]:
    mod = sys.modules.get(modname)
    f = getattr(mod, "__file__", None)
    return os.path.dirname(os.path.abspath(f)) if f else None


def tritium_code_hash(compiler: Any = None) -> str:
    """Hash of the tritium core package and (given a compiler) of the backend package it comes from."""
    parts = [package_hash(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
    if compiler is not None:
        top = type(compiler).__module__.split(".")[0]
        if top != "tritium":
            d = _module_dir(top)
            parts.append(f"{top}:{package_hash(d)}" if d else top)
    return "-".join(parts)


def triton_key() -> str:
    """Triton's ``triton_key()`` (``triton.runtime.cache`` / ``triton.compiler.compiler``): a string that changes
    whenever this compiler could generate other code (the version and a hash of tritium's own sources); what
    torch's Inductor puts in its cache keys.  Inductor computes it before forking its compile workers: it waits for
    the compiler's imports started at ``import triton`` (:func:`tritium.compiler.prewarm.wait`), which the workers
    then inherit."""
    from .._version import __version__
    from . import prewarm

    prewarm.wait()

    return f"tritium-{__version__}-{tritium_code_hash()}"


_backend_hashes: dict = {}


def backend_hash(compiler: Any) -> str:
    """``compiler.hash()``, memoised per compiler object (some backends read files to compute it)."""
    k = id(compiler)
    v = _backend_hashes.get(k)
    if v is None or v[0] is not compiler:
        v = (compiler, str(compiler.hash()))
        _backend_hashes[k] = v
    return v[1]


def compile_key(src_hash: str, target: Any, compiler: Any, options: dict, stages: list,
                stage_plugins: tuple = ()) -> str:
    """The sha256 key of one compilation (see the module docstring)."""
    key = {
        "format": FORMAT,
        "src": src_hash,
        "target": [str(target.backend), str(target.arch), int(getattr(target, "warp_size", 0))],
        "backend": backend_hash(compiler),
        "options": jsonable(options),
        "stages": list(stages),
        "stage_plugins": sorted(stage_plugins),
        "code": tritium_code_hash(compiler),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=repr).encode()).hexdigest()


def jsonable(v: Any) -> Any:
    """``v`` as JSON can hold it (what the cache stores and keys on): containers recursively, a GPUTarget as a
    dict, anything else that is not a JSON scalar as its ``repr``."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, GPUTarget):
        return {"backend": v.backend, "arch": v.arch, "warp_size": v.warp_size}
    return repr(v)


# ------------------------------------------------------------------------------------------- entries
class CorruptEntry(Exception):
    pass


def _is_key(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def _safe(name: str) -> str:
    out = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(name))
    return out[:80] or "kernel"


class FileCache:
    """The kernel cache in one directory.  ``get(key)`` / ``put(key, asm, metadata)``; see the module docstring."""

    def __init__(self, directory: Any = None):
        self.dir = Path(directory) if directory is not None else cache_dir()

    def entry_dir(self, key: str) -> Path:
        return self.dir / key

    # ---------------------------------------------------------------------------------- reading
    def _read(self, path: Path) -> tuple:
        try:
            raw = (path / META).read_bytes()
        except FileNotFoundError:
            raise CorruptEntry("metadata.json is missing") from None
        try:
            meta = json.loads(raw)
        except ValueError as e:
            raise CorruptEntry(f"metadata.json is not valid JSON: {e}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("files"), list) \
                or not isinstance(meta.get("metadata"), dict) or meta.get("key") != path.name:
            raise CorruptEntry("metadata.json does not describe this entry")
        asm = {}
        for f in meta["files"]:
            try:
                stage, fname, kind, digest = f["stage"], f["file"], f["kind"], f["sha256"]
            except (KeyError, TypeError):
                raise CorruptEntry("bad file record in metadata.json") from None
            if not isinstance(fname, str) or "/" in fname or fname.startswith("."):
                raise CorruptEntry(f"bad file name {fname!r}")
            try:
                data = (path / fname).read_bytes()
            except FileNotFoundError:
                raise CorruptEntry(f"{fname} is missing") from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise CorruptEntry(f"{fname}: checksum mismatch")
            if kind == "text":
                try:
                    asm[stage] = data.decode("utf-8")
                except UnicodeDecodeError:
                    raise CorruptEntry(f"{fname} is not UTF-8 text") from None
            elif kind == "bytes":
                asm[stage] = data
            else:
                raise CorruptEntry(f"{fname}: unknown kind {kind!r}")
        return asm, meta

    def get(self, key: str, need: Optional[list] = None) -> Optional[tuple]:
        """``(asm, metadata)`` of a valid entry that has the stages in ``need`` (default: a complete kernel), or
        None.  An invalid entry is removed."""
        path = self.entry_dir(key)
        if not path.is_dir():
            return None
        try:
            asm, meta = self._read(path)
        except (CorruptEntry, OSError) as e:
            self._discard(path, str(e))
            return None
        md = meta["metadata"]
        if need is None:
            if not md.get("complete", False):
                return None
        elif any(s not in asm for s in need):
            return None
        return asm, md

    def _discard(self, path: Path, why: str = "") -> None:
        """Move an entry aside (atomic) and delete it."""
        stats["corrupt"] += 1 if why else 0
        trash = self.dir / f".trash-{path.name[:16]}-{os.getpid()}-{time.monotonic_ns()}"
        try:
            os.rename(path, trash)
        except OSError:
            return  # already gone (another process discarded or replaced it)
        shutil.rmtree(trash, ignore_errors=True)

    # ---------------------------------------------------------------------------------- writing
    def put(self, key: str, asm: dict, metadata: dict) -> bool:
        """Store a kernel's stages and metadata under ``key``; False if some stage is neither text nor bytes.
        Returns True when an entry for ``key`` is there afterwards (ours or another process's)."""
        files = []
        for stage, data in asm.items():
            if isinstance(data, str):
                files.append((stage, data.encode("utf-8"), "text"))
            elif isinstance(data, (bytes, bytearray, memoryview)):
                files.append((stage, bytes(data), "bytes"))
            else:
                return False
        _ensure_dir(self.dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=self.dir))
        try:
            base = _safe(metadata.get("name", "kernel"))
            records = []
            for stage, data, kind in files:
                fname = f"{base}.{_safe(stage)}"
                with open(tmp / fname, "wb") as f:
                    f.write(data)
                records.append({"stage": stage, "file": fname, "kind": kind, "size": len(data),
                                "sha256": hashlib.sha256(data).hexdigest()})
            meta = {"format": FORMAT, "key": key, "name": metadata.get("name", "kernel"),
                    "created": time.time(), "files": records, "metadata": metadata}
            with open(tmp / META, "w", encoding="utf-8") as f:
                json.dump(meta, f, indent=1, sort_keys=True)
            final = self.entry_dir(key)
            for _ in range(3):
                try:
                    os.rename(tmp, final)
                except OSError:
                    # another process got there first: keep theirs if it is valid and at least as complete
                    have = self.get(key, need=list(asm))
                    if have is not None:
                        stats["races"] += 1
                        return True
                    if final.exists():
                        self._discard(final)
                    continue
                stats["stores"] += 1
                self._sweep()
                return True
            return False
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _sweep(self, max_age: float = STALE_SECONDS) -> None:
        """Remove the temporary and trash directories of writers that died (older than ``max_age`` seconds: a live
        writer's are seconds old)."""
        now = time.time()
        try:
            names = [n for n in os.listdir(self.dir) if n.startswith((".tmp-", ".trash-"))]
        except OSError:
            return
        for n in names:
            p = self.dir / n
            try:
                if now - p.stat().st_mtime > max_age:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass

    # ---------------------------------------------------------------------------------- listing
    def entries(self) -> list:
        """One dict per entry: ``key``, ``name``, ``target``, ``stages``, ``complete``, ``size``, ``created``,
        ``valid`` (metadata readable; checksums are not verified here)."""
        out = []
        if not self.dir.is_dir():
            return out
        for p in sorted(self.dir.iterdir()):
            if not p.is_dir() or not _is_key(p.name):  # e.g. the autotuner's ``autotune/``
                continue
            size = sum(f.stat().st_size for f in p.iterdir() if f.is_file())
            row = {"key": p.name, "name": "?", "target": "?", "stages": [], "complete": False, "size": size,
                   "created": p.stat().st_mtime, "valid": False}
            try:
                meta = json.loads((p / META).read_text())
                md = meta["metadata"]
                t = md.get("target") or {}
                row.update(name=meta.get("name", "?"), target=f"{t.get('backend', '?')}:{t.get('arch', '?')}",
                           stages=[f["stage"] for f in meta["files"]], complete=bool(md.get("complete")),
                           created=float(meta.get("created", row["created"])), valid=True)
            except (OSError, ValueError, KeyError, TypeError):
                pass
            out.append(row)
        return out

    def clear(self) -> int:
        """Delete everything in the cache directory (entries, leftovers of interrupted writes, the autotuner's
        results); returns the number of kernel entries removed."""
        n = 0
        if not self.dir.is_dir():
            return 0
        for p in self.dir.iterdir():
            if p.is_dir():
                n += _is_key(p.name)
                shutil.rmtree(p, ignore_errors=True)
            else:
                try:
                    p.unlink()
                except OSError:
                    pass
        return n


def get_file_cache() -> FileCache:
    """The cache for the current ``TRITIUM_CACHE_DIR``."""
    return FileCache(cache_dir())


__all__ = ["FileCache", "get_file_cache", "cache_dir", "disabled_reason", "compile_key", "tritium_code_hash",
           "backend_hash", "package_hash", "jsonable", "stats", "ENV_DIR", "ENV_DISABLE"]
