"""One rank of tests/gpu/test_distributed_gpu.py, started by ``torchrun --nproc-per-node 2``.

Each rank has its own local kernel cache (``$RANKS_DIR/cache<rank>``, as separate machines would) and the shared
remote cache of ``TRITIUM_REMOTE_CACHE``. Rank 0 launches first (compiles, writes through); after a barrier rank 1
launches the same kernels (finds them remotely, compiles nothing). Each rank computes on its own device (NCCL, one
GPU per rank) or, with one GPU, both on device 0 (gloo: NCCL refuses two ranks on one device); the results are
all-reduced and checked against the same all-reduce of torch's results. Each rank writes what it saw to
``$RANKS_DIR/rank<rank>.json``."""
import json
import os
import sys
from pathlib import Path

rank = int(os.environ["RANK"])
out_dir = Path(os.environ["RANKS_DIR"])
os.environ["TRITIUM_CACHE_DIR"] = str(out_dir / f"cache{rank}")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import tritium  # noqa: E402
from tritium.compiler import remote_cache as rc  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402

world = int(os.environ["WORLD_SIZE"])
ngpu = torch.cuda.device_count()
backend = "nccl" if ngpu >= world else "gloo"
device = torch.device("cuda", rank % ngpu)
torch.cuda.set_device(device)
dist.init_process_group(backend)


def inputs(r: int):
    g = torch.Generator(device="cpu").manual_seed(1234 + r)
    x = torch.randn(5000, generator=g)
    a = torch.randn(200, 136, generator=g).half()
    b = torch.randn(136, 72, generator=g).half()
    return x, a, b


def compute(r: int):
    x, a, b = (t.to(device) for t in inputs(r))
    y = torch.full_like(x, float(r + 1))
    out = torch.full_like(x, float("nan"))
    ck_add = K.add_kernel[(tritium.cdiv(5000, 1024),)](x, y, out, 5000, BLOCK_SIZE=1024)
    c = torch.full((200, 72), float("nan"), device=device, dtype=torch.float16)
    grid = (tritium.cdiv(200, 64) * tritium.cdiv(72, 64),)
    K.matmul_kernel[grid](a, b, c, 200, 72, 136, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1), ACTIVATION="", BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32,
                          GROUP_SIZE_M=8, num_warps=4, num_stages=3)  # K = 136: not a multiple of the block
    torch.cuda.synchronize()
    return out, c, ck_add, x + y, (a.float() @ b.float()).half()


def reduce(t: torch.Tensor) -> torch.Tensor:
    t = t.float()
    if backend == "gloo":  # gloo's all-reduce of host tensors
        h = t.cpu()
        dist.all_reduce(h)
        return h.to(device)
    dist.all_reduce(t)
    return t


seen = {"rank": rank, "backend": backend, "device": str(device), "world": world}
if rank == 1:
    dist.barrier()  # rank 0 has compiled and written through
out, c, ck, ref_add, ref_mm = compute(rank)
seen["remote"] = dict(rc.stats)
seen["add_from_cache"] = bool(ck.from_cache)
if rank == 0:
    dist.barrier()
sum_out, sum_ref = reduce(out), reduce(ref_add)
sum_c, sum_cref = reduce(c), reduce(ref_mm)
seen["add_max_err"] = (sum_out - sum_ref).abs().max().item()
seen["mm_max_err"] = (sum_c - sum_cref).abs().max().item()
seen["add_max_abs"] = sum_ref.abs().max().item()
(out_dir / f"rank{rank}.json").write_text(json.dumps(seen))
dist.barrier()
dist.destroy_process_group()
