"""The prefetch pass (sm_80 - sm_89, as Triton): a pipelined mma.sync loop reads the first K-slice of the next
iteration's operands at the end of the body (after the stage's wait and a barrier) and splits each dot along K;
sm_90 and wgmma loops are left alone.

(Results on a GPU: the pass forced on an H100's mma.sync path gave the same results bit for bit over
tests/gpu/test_dot_gpu.py and four 4096^3 configurations; bench/RESULTS.md.)"""
import pytest

pytest.importorskip("mlir.ir")

from tests.passes.test_pipeline_loops import CX, _compile  # noqa: E402


def _loop(ttgir):
    body = ttgir[ttgir.index("scf.for"):]
    return body[:body.index("scf.yield")]


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("bk", [32, 64])
def test_first_k_slice_of_the_next_iteration_is_read_at_the_end(stages, bk):
    k = _compile(stages, cx={**CX, "BLOCK_SIZE_K": bk})  # 64x64 fp16 tiles, 4 warps, sm_80: mma.sync
    ttgir = k.asm["ttgir"]
    pre, loop = ttgir[:ttgir.index("scf.for")], _loop(ttgir)
    slices = bk // 16
    # before the loop: the wait for stage 0 (a commit group per copy: two a stage), then its first 16-wide
    # K-slices of A (64x16) and B (16x64)
    assert pre.rindex(f'"ttg.async_wait"() {{num = {2 * (stages - 2)} : i32}}') < pre.index('"ttg.local_load"')
    assert "-> tensor<64x16xf16" in pre and "-> tensor<16x64xf16" in pre
    # the body: one dot per slice (the first on the loop-carried operands), the other slices read in place
    assert loop.count('"tt.dot"') == slices and loop.index('"tt.dot"(%arg') < loop.index('"ttg.local_load"')
    assert loop.count('"ttg.local_load"') == 2 * (slices - 1) + 2
    for s in range(1, slices):
        assert f"offsets = array<i32: 0, {16 * s}>" in loop and f"offsets = array<i32: {16 * s}, 0>" in loop
    # one wait, at the end: then a barrier (other threads' copies) and the next iteration's first slices
    tail = loop[loop.index('"ttg.async_wait"'):]
    assert loop.count('"ttg.async_wait"') == 1 and tail.index('"ttg.barrier"') < tail.index('"ttg.local_load"')
    assert tail.count("offsets = array<i32: 0, 0>") == 2
    assert k.metadata["n_spills"] == 0 and "mma.sync.aligned.m16n8k16" in k.asm["ptx"]


def test_a_single_k_slice_is_not_split():
    ttgir = _compile(3, cx={**CX, "BLOCK_SIZE_K": 16}).asm["ttgir"]
    assert "offsets" not in ttgir and _loop(ttgir).count('"tt.dot"') == 1


def test_sm_90_is_left_alone():
    # as in Triton: on an H100's mma.sync path the pass measured 1-3% slower
    for cx in ({**CX}, {**CX, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128}):
        assert "offsets" not in _compile(3, arch=90, cx=cx).asm["ttgir"]
