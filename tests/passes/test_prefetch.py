"""The prefetch pass: a pipelined mma.sync loop reads the next iteration's operand tiles into registers at the end
of the body (loop-carried), within a register budget; wgmma loops and larger tiles are left alone.

(Results on a GPU: tests/gpu/test_dot_gpu.py runs mma.sync matmuls with num_stages 2..4.)"""
import pytest

pytest.importorskip("mlir.ir")

from tests.passes.test_pipeline_loops import _compile  # noqa: E402


def _body(ttgir):
    body = ttgir[ttgir.index("scf.for"):]
    return body[:body.index("scf.yield")]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_mma_v2_operands_are_loaded_one_iteration_ahead(stages):
    k = _compile(stages)  # 64x64x32 fp16, 4 warps on sm_80: mma.sync, 32 registers of operands
    ttgir = k.asm["ttgir"]
    body = _body(ttgir)
    before = ttgir[:ttgir.index("scf.for")]
    # the first iteration's tiles before the loop, after the wait for stage 0
    assert before.count('"ttg.local_load"') == 2 and before.rindex('"ttg.async_wait"') < before.index('"ttg.local_load"')
    # in the body: the dot takes loop-carried operands; the next tiles are read after the wait at the end
    dot = body[body.index('"tt.dot"('):]
    assert dot.startswith('"tt.dot"(%arg')
    tail = body[body.index('"tt.dot"'):]
    assert tail.index(f'"ttg.async_wait"() {{num = {stages - 2} : i32}}') < tail.index('"ttg.local_load"')
    assert tail.count('"ttg.local_load"') == 2 and body.count('"ttg.local_load"') == 2
    assert body.count('"ttg.async_wait"') == 1  # the one at the top went: nothing else reads the stages there
    assert k.metadata["n_spills"] == 0


def test_tiles_over_the_register_budget_are_not_prefetched():
    from tests.passes.test_pipeline_loops import CX

    k = _compile(3, cx={**CX, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64})  # 128 registers
    body = _body(k.asm["ttgir"])
    assert body.index('"ttg.async_wait"') < body.index('"ttg.local_load"') < body.index('"tt.dot"')


def test_wgmma_loops_are_not_prefetched():
    from tests.passes.test_pipeline_loops import CX

    k = _compile(3, arch=90, cx={**CX, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128})
    body = _body(k.asm["ttgir"])
    assert '"ttg.warp_group_dot"' in body and '"ttg.local_load"' not in k.asm["ttgir"][:k.asm["ttgir"].index("scf.for")]
