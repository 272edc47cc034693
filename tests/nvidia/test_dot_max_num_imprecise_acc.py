"""fp8 ``tl.dot(..., max_num_imprecise_acc=L)`` on Hopper (cuda:90): Triton's ``test_dot_max_num_imprecise_acc``
kernel for all 16 of its cuda parameter combinations, compiled here.

Its sm_90 check: the PTX holds exactly ``BLOCK_M * BLOCK_N / (32 * num_warps) * (BLOCK_K / L)`` ``add.f32`` for
``L > 0`` (one fp32 add per thread and accumulator register per L elements of K: the partial accumulators of the
wgmma lowering), so no other ``add.f32`` may appear.  ``L == 0`` (mma.sync on f16 operands, no split) and
``L > BLOCK_K`` (None: the default, all of K in wgmma's accumulator) have none; Triton 3.6's PTX for cuda:90 has
the same count in each of the 16 (checked by hand: 512 / 256 / 128 for 128x256x128 at L = 32 / 64 / 128, 32 / 16 /
0 for 64x64x64, 0 for L = 0).  Further: every add reads waited-for wgmma registers (a ``wgmma.wait_group`` is the
last wgmma instruction before it), without ``enable_fp_fusion`` the adds are ``add.rn.f32`` (as Triton's), and a
warp_group_dot marked asynchronous (as Triton's pipeliner leaves it) lowers to the same split."""
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.nvidia import imprecise_acc_kernels as IA  # noqa: E402
from tritium.compiler import ASTSource, compile  # noqa: E402


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def _compile(case, until="ptx", **options):
    bm, bn, bk, ty, acc = case
    src = ASTSource(IA.matmul_kernel, IA.signature(IA.IN_TYPES[ty]), IA.constexprs(bm, bn, bk, acc))
    return compile(src, target="cuda:90", options=dict(num_warps=IA.NUM_WARPS, num_stages=IA.NUM_STAGES, **options),
                   until=until, use_cache=False)


def _adds_read_waited_registers(ptx: str, add: str = "add.f32") -> None:
    last = None
    for line in ptx.splitlines():
        s = line.strip()
        if s.startswith("wgmma."):
            last = s
        elif s.startswith(add + " "):
            assert last is not None and last.startswith("wgmma.wait_group"), (s, last)


@pytest.mark.parametrize("case", IA.CASES, ids=[IA.case_id(c) for c in IA.CASES])
def test_add_f32_count_is_tritons(case):
    bm, bn, bk, ty, acc = case
    k = _compile(case)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert ptx.count("add.f32") == IA.expected_add_f32(bm, bn, bk, acc)
    if acc == 0:  # Triton's exact fp8 path on Hopper: mma.sync with the operands in f16
        assert "wgmma" not in ptx and "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
        assert '"tt.fp_to_fp"' in ttgir and "warp_group_dot" not in ttgir
        return
    wgmma = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k32\.f32\.(e4m3|e5m2)\.\2", ptx)
    assert wgmma and all(t == {"fp8e5": "e5m2", "fp8e4nv": "e4m3"}[IA.IN_TYPES[ty]] for _, t in wgmma)
    _adds_read_waited_registers(ptx)
    # the split dot stays synchronous (its adds need the waited registers); the loads (1 contiguous byte per
    # thread: stride_ak is not known to be 1) are not pipelined, so no dot here is asynchronous
    assert "isAsync" not in ttgir


@pytest.mark.skipif(not _has_ptxas(), reason="ptxas is not installed")
@pytest.mark.parametrize("case", [(64, 64, 64, "float8e4nv", 32), (128, 256, 128, "float8e5", 64)],
                         ids=IA.case_id)
def test_split_dot_assembles_without_injected_waits(case):
    k = _compile(case, until=None)
    log = k.metadata.get("ptxas_log") or ""
    assert "injected" not in log and "serialized" not in log, log  # Triton's gets ptxas's C7517 here


def test_without_fp_fusion_the_adds_round_to_nearest():
    case = (64, 64, 64, "float8e5", 32)
    ptx = _compile(case, enable_fp_fusion=False).asm["ptx"]
    assert ptx.count("add.f32") == 0 and ptx.count("add.rn.f32") == IA.expected_add_f32(64, 64, 64, 32)
    _adds_read_waited_registers(ptx, "add.rn.f32")


def test_asynchronous_warp_group_dot_is_split_too(tmp_path):
    """A warp_group_dot marked ``isAsync`` with a ``warp_group_dot_wait`` after it (Triton's pipeliner output for
    these kernels): the lowering still adds each partial accumulator after waiting for it."""
    from mlir import ir

    from tritium.dialects import make_context, ttg
    from tritium_nvidia.passes.pipeline_loops import _wait_op

    case = (64, 64, 64, "float8e5", 32)
    text = _compile(case, until="ttgir").asm["ttgir"]
    with make_context() as ctx, ir.Location.unknown(ctx):
        mod = ir.Module.parse(text)
        dots = []

        def find(op):
            if op.name == ttg.WARP_GROUP_DOT:
                dots.append(op)
            return ir.WalkResult.ADVANCE

        mod.operation.walk(find)
        assert len(dots) == 1
        dot = dots[0]
        dot.attributes["isAsync"] = ir.BoolAttr.get(True)
        res = dot.results[0]
        uses = [(u.owner, u.operand_number) for u in res.uses]
        with ir.InsertionPoint(dot), dot.location:
            wait = _wait_op([res], 0)
        wait.operation.move_after(dot)
        for owner, i in uses:
            owner.operands[i] = wait.results[0]
        path = tmp_path / "matmul_kernel.ttgir"
        path.write_text(str(mod))
    k = compile(str(path), target="cuda:90", options=dict(num_warps=IA.NUM_WARPS), until="ptx", use_cache=False)
    assert "isAsync = true" in k.asm["ttgir"] and "warp_group_dot_wait" in k.asm["ttgir"]
    ptx = k.asm["ptx"]
    assert ptx.count("add.f32") == IA.expected_add_f32(64, 64, 64, 32)
    _adds_read_waited_registers(ptx)
