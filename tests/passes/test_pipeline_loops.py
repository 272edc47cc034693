"""The software pipeliner: which loops and loads it pipelines, the TTGIR it leaves, and cp.async in the PTX.

(Results on a GPU: tests/gpu/test_dot_gpu.py runs the tutorial matmul with num_stages 1..4.)"""
import os
import re

import pytest

pytest.importorskip("mlir.ir")

os.environ.setdefault("BENCH_IMPL", "tritium")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.compiler import ASTSource  # noqa: E402
from tests.e2e.kernels import matmul_kernel  # noqa: E402

SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
       "stride_cn": "i32"}
CX = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "stride_ak": 1,
      "stride_bn": 1, "stride_cn": 1}
ALIGNED = {k: {"tt.divisibility": 16} for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                                "stride_bk", "stride_cm")}


def _compile(stages, attrs=ALIGNED, arch=80, fn=matmul_kernel, sig=SIG, cx=CX):
    return tritium.compile(ASTSource(fn, sig, cx, attrs), target=f"cuda:{arch}",
                           options={"num_stages": stages}, use_cache=False)


def _loop(ttgir):
    body = ttgir[ttgir.index("scf.for"):]
    return body[:body.index("scf.yield")]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_matmul_operands_are_copied_stages_ahead(stages):
    k = _compile(stages)
    ttgir = k.asm["ttgir"]
    # one stack of `stages` buffers per operand
    assert len(re.findall(rf"!ttg.memdesc<array<i64: {stages}, (64, 32|32, 64)>", ttgir)) >= 2
    pre, loop = ttgir[:ttgir.index("scf.for")], _loop(ttgir)
    # prologue: stages-1 groups of two copies
    assert pre.count('"ttg.async_copy_global_to_local"') == 2 * (stages - 1)
    assert pre.count('"ttg.async_commit_group"') == stages - 1
    # the loop waits for this iteration's group, reads it, issues iteration + stages - 1
    assert f'"ttg.async_wait"() {{num = {stages - 2} : i32}}' in loop
    assert loop.count('"ttg.async_copy_global_to_local"') == 2 and '"tt.load"' not in loop
    assert loop.index('"ttg.async_wait"') < loop.index('"ttg.local_load"')
    # drained after the loop
    assert '"ttg.async_wait"() {num = 0 : i32}' in ttgir[ttgir.index("scf.yield"):]
    ptx = k.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and f"cp.async.wait_group {stages - 2}" in ptx
    assert "mma.sync.aligned.m16n8k16" in ptx
    # the stacks fit the launch's shared memory: stages * (64*32 + 32*64) * 2 bytes
    assert k.metadata["shared"] >= stages * 2 * 64 * 32 * 2


def test_one_stage_is_not_pipelined():
    ttgir = _compile(1).asm["ttgir"]
    assert "async_copy" not in ttgir and '"tt.load"' in _loop(ttgir)


def test_sm_70_and_below_is_not_pipelined():
    # no mma.sync and no cp.async there: FMA dots, ordinary loads
    k = _compile(3, arch=75)
    assert "async_copy" not in k.asm["ttgir"] and "cp.async" not in k.asm["ptx"]


def test_unaligned_operands_are_not_pipelined_below_4_bytes():
    # strides not known to be multiples of 16 elements: each thread holds 2-byte pieces, too small for cp.async
    k = _compile(3, attrs={})
    assert "async_copy" not in k.asm["ttgir"]


@tritium.jit
def _nonzero_other_kernel(A, B, C, K, BM: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BM), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + offs_m[:, None] * K + (k + offs_k)[None, :], mask=(k + offs_k)[None, :] < K, other=1.0)
        b = tl.load(B + (k + offs_k)[:, None] * BM + offs_m[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + offs_m[:, None] * BM + offs_m[None, :], acc)


def test_a_load_with_nonzero_other_stays_synchronous():
    k = _compile(3, fn=_nonzero_other_kernel, sig={"A": "*fp16", "B": "*fp16", "C": "*fp32", "K": "i32"},
                 cx={"BM": 64, "BK": 32}, attrs={"A": {"tt.divisibility": 16}, "B": {"tt.divisibility": 16},
                                                 "K": {"tt.divisibility": 16}})
    loop = _loop(k.asm["ttgir"])
    # B is pipelined, A (other = 1.0: cp.async fills zeros) is loaded in the loop as before
    assert loop.count('"ttg.async_copy_global_to_local"') == 1 and loop.count('"tt.load"') == 1
