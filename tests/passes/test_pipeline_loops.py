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
    # prologue: stages-1 stages of two copies, a commit group per copy (as Triton: its waits count copies)
    assert pre.count('"ttg.async_copy_global_to_local"') == 2 * (stages - 1)
    assert pre.count('"ttg.async_commit_group"') == 2 * (stages - 1)
    # the loop waits for a group before reading it (the prefetch pass moves the wait to the end of the body, before
    # the next iteration's first K-slice: tests/passes/test_prefetch.py), issues iteration + stages - 1
    assert f'"ttg.async_wait"() {{num = {2 * (stages - 2)} : i32}}' in loop
    assert loop.count('"ttg.async_copy_global_to_local"') == 2 and '"tt.load"' not in loop
    assert loop.rindex('"ttg.async_wait"') < loop.rindex('"ttg.local_load"')
    # drained after the loop
    assert '"ttg.async_wait"() {num = 0 : i32}' in ttgir[ttgir.index("scf.yield"):]
    ptx = k.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and f"cp.async.wait_group \t{2 * (stages - 2)};" in ptx
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


# ------------------------------------------------------------------------------------------------
# Asynchronous wgmma (sm_90): one dot in flight across iterations
# ------------------------------------------------------------------------------------------------

def _ops(text):
    """The op names of a TTGIR region in order (generic form)."""
    return re.findall(r'"((?:tt|ttg|arith|math)\.[a-z_]+)"\(', text)


def test_matmul_dot_is_async_on_sm90():
    cx = dict(CX, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
    k = _compile(3, arch=90, cx=cx)
    ttgir = k.asm["ttgir"]
    loop = _loop(ttgir)
    assert "isAsync = true" in loop
    ops = _ops(loop)
    # the dot, then a wait leaving it in flight, then the copies of a later iteration (into the stage the
    # previous dot read, done by now)
    d = ops.index("ttg.warp_group_dot")
    assert ops[d + 1] == "ttg.warp_group_dot_wait" and "pendings = 1" in loop
    assert ops.index("ttg.async_copy_global_to_local") > d + 1
    # the yield carries the waited-for accumulator; after the loop, wait for everything, buffers alive until then
    # (the loop and that wait inside an scf.if on "the loop runs": the zero-trip path must not reach the wait)
    assert re.search(r"scf.if %\w+ -> \([^\n]*\) \{\n\s*%\S+ = scf.for", ttgir)
    tail = ttgir[ttgir.index("scf.yield"):]
    w0 = re.search(r'"ttg.warp_group_dot_wait"\(([^)]*)\) \{[^}]*pendings = 0', tail)
    assert w0 and w0.group(1).count("%") == 3  # the accumulator and the two stacks
    assert tail.index("pendings = 0") < tail.index('"ttg.async_wait"')
    ptx = k.asm["ptx"]
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    # the wait after the loop is the first instruction of its block (ptxas serialises every wgmma otherwise)
    lines = [ln.strip() for ln in ptx.split("\n") if ln.strip() and not ln.strip().startswith("//")]
    w = max(i for i, ln in enumerate(lines) if ln.startswith("wgmma.wait_group.sync.aligned 0"))
    assert lines[w - 1].endswith(":") or " bra" in lines[w - 1] or lines[w - 1].startswith("bra"), lines[w - 1]
    if "ptxas_log" in k.metadata:
        assert "C7514" not in k.metadata["ptxas_log"] and "serialized" not in k.metadata["ptxas_log"]


def test_attention_dots_are_async_on_sm90():
    from tests.nvidia.test_wgmma_dot import attention

    k = attention(D=64, stage=1, num_warps=4)
    loop = _loop(k.asm["ttgir"])
    ops = _ops(loop)
    dots = [i for i, o in enumerate(ops) if o == "ttg.warp_group_dot"]
    waits = [i for i, o in enumerate(ops) if o == "ttg.warp_group_dot_wait"]
    assert len(dots) == 2 and len(waits) == 1 and loop.count("isAsync = true") == 2
    qk, pv = dots
    # q @ k waited for right before the row max reads it (nothing else in flight); the previous iteration's
    # p @ v (the accumulator's iter_arg) goes through the same wait, before the rescale reads it
    assert waits[0] == qk + 1 and ops[waits[0] + 1] == "tt.reduce"
    w = re.search(r'"ttg.warp_group_dot_wait"\((%\w+), (%arg\d+)\) \{[^}]*pendings = 0', loop)
    assert w, loop
    # every copy after both dots
    assert min(i for i, o in enumerate(ops) if o == "ttg.async_copy_global_to_local") > pv
    if "ptxas_log" in k.metadata:
        assert "C7514" not in k.metadata["ptxas_log"]


@pytest.mark.parametrize("imprecise", [32, 64])  # every 32 of K, and all of K (64) then added in fp32
def test_fp8_partial_sums_stay_synchronous(imprecise):
    sig = dict(SIG, a_ptr="*fp8e4nv", b_ptr="*fp8e4nv")
    cx = dict(CX, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, stride_bk=1)
    del cx["stride_bn"]
    sig.pop("stride_bk")
    sig["stride_bn"] = "i32"

    @tritium.jit
    def mm_fp8_promoted(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                        stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, IMPRECISE: tl.constexpr):
        offs_m = tl.arange(0, BLOCK_SIZE_M)
        offs_n = tl.arange(0, BLOCK_SIZE_N)
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, max_num_imprecise_acc=IMPRECISE)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(tl.float16))

    attrs = {p: {"tt.divisibility": 16} for p in ("a_ptr", "b_ptr", "c_ptr", "stride_am", "stride_bn", "stride_cm")}
    k = tritium.compile(ASTSource(mm_fp8_promoted, sig, dict(cx, IMPRECISE=imprecise), attrs), target="cuda:90",
                        options={"num_stages": 3}, until="ttgir", use_cache=False)
    ttgir = k.asm["ttgir"]
    assert '"ttg.async_copy_global_to_local"' in _loop(ttgir)  # pipelined, but the dot stays synchronous
    assert '"ttg.warp_group_dot"(' in ttgir and "isAsync" not in ttgir and "warp_group_dot_wait" not in ttgir


@tritium.jit
def _loop_stages_kernel(a_ptr, b_ptr, c_ptr, K, LOOP_STAGES: tl.constexpr):
    # tl.range(num_stages=...) on the loop itself (Triton's test_tl_range_num_stages)
    offs = tl.arange(0, 64)
    offs_k = tl.arange(0, 32)
    a_ptrs = a_ptr + offs[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * 64 + offs[None, :]
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k in tl.range(0, K // 32, num_stages=LOOP_STAGES):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += 32
        b_ptrs += 32 * 64
    tl.store(c_ptr + offs[:, None] * 64 + offs[None, :], acc)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("kernel_stages,loop_stages", [(3, 5), (1, 4), (3, 1), (4, 2)])
def test_a_loops_num_stages_overrides_the_kernels(arch, kernel_stages, loop_stages):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32", "LOOP_STAGES": "constexpr"}
    attrs = {k: {"tt.divisibility": 16} for k in ("a_ptr", "b_ptr", "c_ptr", "K")}
    k = tritium.compile(ASTSource(_loop_stages_kernel, sig, {"LOOP_STAGES": loop_stages}, attrs),
                        target=f"cuda:{arch}", options={"num_stages": kernel_stages}, use_cache=False)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    if loop_stages < 2:  # the loop asked for none
        assert '"ttg.async_copy_global_to_local"' not in ttgir
        return
    # stacks of the loop's stages, a commit group per copy: the loop waits for 2 * (stages - 2) groups
    assert len(re.findall(rf"!ttg.memdesc<array<i64: {loop_stages}, (64, 32|32, 64)>", ttgir)) >= 2
    assert f"cp.async.wait_group \t{2 * (loop_stages - 2)};" in ptx


@pytest.mark.parametrize("BN,stage", [(32, 1), (64, 1), (64, 3)])
def test_attention_epilogue_converts_only_the_fp16_result(BN, stage):
    """``acc / l_i[:, None]`` after the loop: ``l_i`` in the first dot's layout, ``acc`` in the second's (the same
    rows in the same threads: a free conversion), so the division stays in the accumulator's layout and only the
    fp16 result crosses shared memory for the store, as in Triton (before: the fp32 accumulator, 64 KiB, then the
    fp16 result again)."""
    from tests.nvidia.test_wgmma_dot import attention

    ttgir = attention(BM=128, BN=BN, D=128, num_warps=8, stage=stage).asm["ttgir"]
    tail = ttgir[ttgir.rindex("scf.for"):]
    tail = tail[tail.index("\n    }"):]  # after the last loop
    moved = [m for m in re.findall(r'"ttg.convert_layout"\(%[\w#]+\)[^\n]*?: \(tensor<(\d+x\d+)x(\w+)', tail)]
    assert ("128x128", "f32") not in moved and moved.count(("128x128", "f16")) == 1, moved


@tritium.jit
def _two_dots_shared_tile_kernel(x_ptr, w_ptr, gate_ptr, up_ptr, n_rows, H: tl.constexpr, I: tl.constexpr,
                                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, W_OTHER: tl.constexpr):
    # Liger-Kernel's MoE up-projection: x is pipelined, the masked weight tiles are loaded into registers, each
    # copied to shared memory for its dot -- the two copies may share one shared-memory offset
    rows = tl.arange(0, BM)
    n = tl.arange(0, BN)
    acc_g = tl.zeros((BM, BN), dtype=tl.float32)
    acc_u = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, H, BK):
        kk = k + tl.arange(0, BK)
        x = tl.load(x_ptr + rows[:, None] * H + kk[None, :], mask=(rows[:, None] < n_rows) & (kk[None, :] < H),
                    other=0.0)
        w_mask = (n[:, None] < I) & (kk[None, :] < H)
        wg = tl.load(w_ptr + n[:, None] * H + kk[None, :], mask=w_mask, other=W_OTHER)
        acc_g = tl.dot(x, tl.trans(wg), acc=acc_g)
        wu = tl.load(w_ptr + (n[:, None] + I) * H + kk[None, :], mask=w_mask, other=W_OTHER)
        acc_u = tl.dot(x, tl.trans(wu), acc=acc_u)
    out = rows[:, None] * I + n[None, :]
    tl.store(gate_ptr + out, acc_g, mask=(rows[:, None] < n_rows) & (n[None, :] < I))
    tl.store(up_ptr + out, acc_u, mask=(rows[:, None] < n_rows) & (n[None, :] < I))


def _two_dots_loop(dtype, w_other):
    sig = {"x_ptr": f"*{dtype}", "w_ptr": f"*{dtype}", "gate_ptr": "*fp32", "up_ptr": "*fp32", "n_rows": "i32"}
    cx = {"H": 128, "I": 48, "BM": 64, "BN": 64, "BK": 32, "W_OTHER": w_other}
    attrs = {p: {"tt.divisibility": 16} for p in ("x_ptr", "w_ptr", "gate_ptr", "up_ptr")}
    k = tritium.compile(ASTSource(_two_dots_shared_tile_kernel, sig, cx, attrs), target="cuda:90",
                        options={"num_stages": 3, "num_warps": 4}, use_cache=False)
    return _loop(k.asm["ttgir"]), k.asm["ptx"]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_dots_reading_a_tile_copied_in_the_loop_stay_synchronous(dtype):
    """A wgmma reading a shared-memory tile the loop body writes from registers (not a pipeline stage: here the
    weight tiles, whose masked-off elements read 1.0, which cp.async cannot fill) must finish before that memory is
    written again: by the next dot's tile, which the allocator may place at the same offset, or by the next
    iteration.  Asynchronous, the first dot read the second's weights now and then on the H200 (Liger-Kernel's
    test_fused_moe, before its weight tiles were pipelined); such a loop's dots stay synchronous, as in Triton."""
    loop, _ = _two_dots_loop(dtype, 1.0)
    copied = re.findall(r'(%\d+) = "ttg.local_alloc"\(%\d+\)', loop)  # register tiles copied in the loop
    dots = re.findall(r'"ttg.warp_group_dot"\((%\d+), (%\d+), .*', loop)
    assert len(dots) == 2 and all(b in copied for _, b in dots), (copied, dots)
    assert '"ttg.async_copy_global_to_local"' in loop  # x is still pipelined
    assert "isAsync = true" not in loop and "warp_group_dot_wait" not in loop


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_transposed_pointer_tiles_are_pipelined(dtype):
    """``tl.dot(x, tl.trans(w))`` with ``w`` loaded through pointers (zero-filled masks): ``w`` is copied by cp.async
    as loaded, into the pipeline's stages, and the dot reads the stage's transposed view (``ttg.memdesc_trans``, as
    the TMA path does) -- no transpose in registers, no copy into shared memory in the loop, and the dots are
    asynchronous again."""
    loop, ptx = _two_dots_loop(dtype, 0.0)
    assert loop.count('"ttg.async_copy_global_to_local"') == 3  # x and both weight tiles, stages ahead
    assert loop.count('"ttg.memdesc_trans"') == 2 and '"tt.trans"' not in loop
    assert not re.findall(r'"ttg.local_alloc"\(%\d+\)', loop)
    assert loop.count("isAsync = true") == 2
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx
