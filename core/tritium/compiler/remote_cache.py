"""A remote kernel cache shared by machines and processes, layered under the file cache (:mod:`.cache`).

``TRITIUM_REMOTE_CACHE`` names the store:

* ``redis://host:port/db`` (or ``rediss://``, ``unix://``): a Redis server, through the ``redis`` client
  (``pip install 'tritium[remote-cache]'``);
* ``file:///shared/dir``: a directory on a shared file system;
* any other scheme: a plugin's ``tritium_remote_cache_store(url)`` hook (:mod:`tritium.plugins`) returns a
  :class:`RemoteStore` for it (an S3-compatible store, ...).

How it is used (:func:`tritium.compiler.compile`): the local file cache first; on a local miss the remote store is
asked, and an entry found there is verified, written into the local cache and loaded; a kernel compiled here is
written to both (write-through).  Only complete kernels travel.

Entries are content-addressed (the file cache's compile key, which holds everything that shapes the kernel) and
self-checking: one blob, ``MAGIC``, the sha256 of the rest, a JSON header (key, metadata, and per stage its kind,
size and sha256), then the stages' bytes.  A blob that fails any check (truncated, bit-flipped, another key's,
another format) is deleted from the store and the kernel compiled: it is never loaded.

Limits and failures: entries above ``TRITIUM_REMOTE_CACHE_MAX_BYTES`` (default 64 MiB) are not stored;
``TRITIUM_REMOTE_CACHE_TTL`` (seconds) lets the store expire them; every call to the store has a bounded timeout
(``TRITIUM_REMOTE_CACHE_TIMEOUT`` seconds, default 1).  A store that is down, slow or refuses a call never fails a
compile or a launch: one ``RuntimeWarning`` per process and store, then the store is left alone for
``RETRY_SECONDS`` and the kernel compiled locally.

Nothing here imports MLIR, llvmlite or the frontend; ``redis`` is imported when a ``redis://`` store is first used.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlparse

from .. import plugins
from .._env import env_flag
from .cache import CorruptEntry

ENV_URL = "TRITIUM_REMOTE_CACHE"
ENV_MAX = "TRITIUM_REMOTE_CACHE_MAX_BYTES"
ENV_TTL = "TRITIUM_REMOTE_CACHE_TTL"
ENV_TIMEOUT = "TRITIUM_REMOTE_CACHE_TIMEOUT"
MAGIC = b"tritium-kernel-v1\n"
DEFAULT_MAX_BYTES = 64 << 20
RETRY_SECONDS = 60.0
KEY_PREFIX = "tritium:kernel:"

#: counters for tests and diagnostics
stats = {"hits": 0, "misses": 0, "stores": 0, "corrupt": 0, "errors": 0, "too_large": 0}


class RemoteCacheError(Exception):
    """The store could not answer (down, slow, refused): the caller compiles locally."""


class RemoteStore:
    """Where remote entries live: ``get(key) -> bytes | None``, ``put(key, blob, ttl)``, ``delete(key)``.
    Implementations raise :class:`RemoteCacheError` when the store cannot answer; ``timeout`` bounds each call."""

    url = ""

    def get(self, key: str) -> Optional[bytes]:  # pragma: no cover - interface
        raise NotImplementedError

    def put(self, key: str, blob: bytes, ttl: Optional[float] = None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def delete(self, key: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class RedisStore(RemoteStore):
    """A Redis server (``redis://host:port/db``); each entry one string value under ``tritium:kernel:<key>``."""

    def __init__(self, url: str, timeout: float):
        try:
            import redis
        except ModuleNotFoundError:
            raise RemoteCacheError(f"{ENV_URL}={url} needs the redis client: pip install 'tritium[remote-cache]'") \
                from None
        self.url = url
        self._redis = redis
        self.client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                           retry_on_timeout=False)

    def _call(self, what: str, *args):
        try:
            return getattr(self.client, what)(*args)
        except self._redis.RedisError as e:
            raise RemoteCacheError(f"{type(e).__name__}: {e}") from None
        except OSError as e:
            raise RemoteCacheError(f"{type(e).__name__}: {e}") from None

    def get(self, key: str) -> Optional[bytes]:
        return self._call("get", KEY_PREFIX + key)

    def put(self, key: str, blob: bytes, ttl: Optional[float] = None) -> None:
        if ttl:
            self._call("set", KEY_PREFIX + key, blob, None, max(1, int(ttl * 1000)))  # px: milliseconds
        else:
            self._call("set", KEY_PREFIX + key, blob)

    def delete(self, key: str) -> None:
        self._call("delete", KEY_PREFIX + key)


class DirectoryStore(RemoteStore):
    """A directory shared by machines (``file:///path``): one file per entry, written atomically (a temporary
    file renamed into place); ``ttl`` is honoured on read (an entry older than it is a miss)."""

    def __init__(self, url: str, timeout: float):
        self.url = url
        p = urlparse(url)
        self.dir = Path(unquote(p.netloc + p.path) if p.netloc else unquote(p.path))
        self.ttl = None

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.kernel"

    def get(self, key: str) -> Optional[bytes]:
        path = self._path(key)
        try:
            if self.ttl and time.time() - path.stat().st_mtime > self.ttl:
                return None
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise RemoteCacheError(f"{type(e).__name__}: {e}") from None

    def put(self, key: str, blob: bytes, ttl: Optional[float] = None) -> None:
        self.ttl = ttl
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".tmp-{key[:16]}-", dir=self.dir)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                os.replace(tmp, self._path(key))
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as e:
            raise RemoteCacheError(f"{type(e).__name__}: {e}") from None

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise RemoteCacheError(f"{type(e).__name__}: {e}") from None


# ---------------------------------------------------------------------------------------------- entries
def pack(key: str, asm: dict, metadata: dict) -> Optional[bytes]:
    """One self-checking blob of a kernel's stages and metadata; None if a stage is neither text nor bytes."""
    files, payload = [], []
    for stage, data in asm.items():
        if isinstance(data, str):
            raw, kind = data.encode("utf-8"), "text"
        elif isinstance(data, (bytes, bytearray, memoryview)):
            raw, kind = bytes(data), "bytes"
        else:
            return None
        files.append({"stage": stage, "kind": kind, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()})
        payload.append(raw)
    header = json.dumps({"key": key, "files": files, "metadata": metadata}, sort_keys=True).encode("utf-8")
    body = len(header).to_bytes(8, "little") + header + b"".join(payload)
    return MAGIC + hashlib.sha256(body).hexdigest().encode("ascii") + body


def unpack(blob: bytes, key: str) -> tuple:
    """``(asm, metadata)`` of a blob made by :func:`pack` for ``key``; :class:`CorruptEntry` if it is not one."""
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(MAGIC):
        raise CorruptEntry("not a tritium kernel entry (or another format)")
    digest, body = blob[len(MAGIC):len(MAGIC) + 64], blob[len(MAGIC) + 64:]
    if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
        raise CorruptEntry("checksum mismatch (truncated or altered)")
    n = int.from_bytes(body[:8], "little")
    try:
        header = json.loads(body[8:8 + n])
        files, metadata = header["files"], header["metadata"]
    except (ValueError, KeyError, TypeError):
        raise CorruptEntry("bad header") from None
    if header.get("key") != key or not isinstance(metadata, dict):
        raise CorruptEntry("the entry is another kernel's")
    asm, pos = {}, 8 + n
    for f in files:
        raw = body[pos:pos + f["size"]]
        pos += f["size"]
        if len(raw) != f["size"] or hashlib.sha256(raw).hexdigest() != f["sha256"]:
            raise CorruptEntry(f"stage {f['stage']}: checksum mismatch")
        asm[f["stage"]] = raw.decode("utf-8") if f["kind"] == "text" else bytes(raw)
    if pos != len(body):
        raise CorruptEntry("trailing bytes")
    return asm, metadata


# ---------------------------------------------------------------------------------------------- the layer
class RemoteCache:
    """The remote layer for one store: ``get(key)`` / ``put(key, asm, metadata)``, never raising."""

    def __init__(self, store: RemoteStore, max_bytes: int = DEFAULT_MAX_BYTES, ttl: Optional[float] = None):
        self.store, self.max_bytes, self.ttl = store, max_bytes, ttl
        self._down_until = 0.0
        self._warned = False

    def _failed(self, what: str, e: Exception) -> None:
        stats["errors"] += 1
        self._down_until = time.monotonic() + RETRY_SECONDS
        if not self._warned:
            self._warned = True
            warnings.warn(f"tritium: the remote kernel cache {self.store.url} failed ({what}: {e}); compiling "
                          f"locally, and not asking it again for {RETRY_SECONDS:.0f} s", RuntimeWarning, stacklevel=3)

    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def get(self, key: str) -> Optional[tuple]:
        """``(asm, metadata)`` of a verified remote entry, or None (a miss, a corrupt entry -- deleted -- or a store
        that did not answer)."""
        if not self.available():
            return None
        try:
            blob = self.store.get(key)
        except RemoteCacheError as e:
            self._failed("get", e)
            return None
        if blob is None:
            stats["misses"] += 1
            return None
        try:
            asm, md = unpack(blob, key)
        except CorruptEntry:
            stats["corrupt"] += 1
            try:
                self.store.delete(key)
            except RemoteCacheError as e:
                self._failed("delete", e)
            return None
        stats["hits"] += 1
        return asm, md

    def put(self, key: str, asm: dict, metadata: dict) -> bool:
        if not self.available():
            return False
        blob = pack(key, asm, metadata)
        if blob is None:
            return False
        if len(blob) > self.max_bytes:
            stats["too_large"] += 1
            return False
        try:
            self.store.put(key, blob, self.ttl)
        except RemoteCacheError as e:
            self._failed("put", e)
            return False
        stats["stores"] += 1
        return True


def _float_env(name: str, default: Optional[float]) -> Optional[float]:
    v = os.environ.get(name, "").strip()
    if not v:
        return default
    try:
        return float(v)
    except ValueError:
        raise ValueError(f"{name}={v!r} is not a number") from None


def make_store(url: str, timeout: float) -> RemoteStore:
    """The store for ``url``: redis / rediss / unix, file, or a plugin's (``tritium_remote_cache_store``)."""
    scheme = urlparse(url).scheme
    if scheme in ("redis", "rediss", "unix"):
        return RedisStore(url, timeout)
    if scheme == "file":
        return DirectoryStore(url, timeout)
    for store in plugins.get_plugin_manager().hook.tritium_remote_cache_store(url=url, timeout=timeout):
        if store is not None:
            return store
    raise RemoteCacheError(f"{ENV_URL}={url}: no store for the scheme {scheme!r} (redis://, file://, or a plugin's "
                           "tritium_remote_cache_store hook)")


_LOCK = threading.Lock()
_CURRENT: dict = {}  # (url, max, ttl, timeout) -> RemoteCache | None


def get_remote_cache() -> Optional[RemoteCache]:
    """The remote layer ``TRITIUM_REMOTE_CACHE`` names (one per configuration and process), or None when unset
    or when the store cannot be made (one warning)."""
    url = os.environ.get(ENV_URL, "").strip()
    if not url or env_flag("TRITIUM_DISABLE_CACHE"):
        return None
    conf = (url, os.environ.get(ENV_MAX, ""), os.environ.get(ENV_TTL, ""), os.environ.get(ENV_TIMEOUT, ""))
    rc = _CURRENT.get(conf, False)
    if rc is not False:
        return rc
    with _LOCK:
        if conf in _CURRENT:
            return _CURRENT[conf]
        max_bytes = int(_float_env(ENV_MAX, DEFAULT_MAX_BYTES))
        ttl = _float_env(ENV_TTL, None)
        timeout = _float_env(ENV_TIMEOUT, 1.0)
        try:
            rc = RemoteCache(make_store(url, timeout), max_bytes, ttl)
        except RemoteCacheError as e:
            warnings.warn(f"tritium: no remote kernel cache: {e}", RuntimeWarning, stacklevel=2)
            rc = None
        _CURRENT[conf] = rc
        return rc


__all__ = ["RemoteCache", "RemoteStore", "RedisStore", "DirectoryStore", "RemoteCacheError", "get_remote_cache",
           "make_store", "pack", "unpack", "stats", "ENV_URL"]
