"""The AMD stream pipeliner (tritium_amd/passes/stream_pipeline.py), compiled without an AMD GPU: the TTGIR loops of the
tutorial matmul and the fused-attention forward for gfx942 / gfx90a (the next iteration's loads issued into
registers before this iteration's LDS reads and dot, one local_store per operand at the end of the body, barriers
around the single LDS buffer, a guarded prologue), loops and loads it must leave alone, and the hsaco (no spills).
Results on a GPU: tests/gpu/test_stream_pipeline_gpu.py runs the pass on an NVIDIA target."""
import os
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

os.environ.setdefault("BENCH_IMPL", "tritium")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tests.amd.test_compile import build, check_code_object  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402

D16 = {"tt.divisibility": 16}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
MM_ONES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}  # a launch with contiguous tensors specialises them
MM_ATTRS = {k: D16 for k in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}


def matmul(arch="gfx942", stages=2, attrs=MM_ATTRS, bk=64):
    return build(K.matmul_kernel, MM_SIG, arch, num_warps=4, attrs=attrs, options={"num_stages": stages},
                 BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, **MM_ONES)


class Loop:
    """An ``scf.for`` of the TTGIR text: its header line, the ops directly in its body (``top``: lines one level
    in; ``lines``: all of the body) and the lines before it in the function."""

    def __init__(self, lines, i):
        self.header = lines[i]
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while not (lines[j].strip().startswith("}") and len(lines[j]) - len(lines[j].lstrip()) == indent):
            j += 1
        self.lines = lines[i + 1:j]
        self.top = [ln for ln in self.lines if len(ln) - len(ln.lstrip()) == indent + 2]
        self.before = lines[:i]
        m = re.search(r"scf\.for (%\w+) = (%\w+) to (%\w+) step (%\w+)", self.header)
        self.iv, self.lb, self.ub, self.step = m.groups()

    def index(self, pattern, lines=None, last=False):
        found = [k for k, ln in enumerate(self.top if lines is None else lines) if pattern in ln]
        return (found[-1] if last else found[0]) if found else None


def loops(ttgir):
    lines = [re.sub(r" loc\(#loc\d*\)", "", ln) for ln in ttgir.splitlines()]
    return [Loop(lines, i) for i, ln in enumerate(lines) if "scf.for" in ln]


def check_pipelined(loop, n_loads):
    """Every dot-operand load of ``loop`` issued one iteration ahead, guarded, stored at the end of the body."""
    top = loop.top
    # no load left in the body itself: they are inside the guard (one level deeper)
    assert not any('"tt.load"' in ln for ln in top)
    guard = loop.index("scf.if")
    assert guard is not None
    guard_line = top[guard]
    cond = re.search(r"scf\.if (%\w+)", guard_line).group(1)
    # the guard: iv + step < ub
    nxt = [ln for ln in top if f"arith.addi {loop.iv}, {loop.step}" in ln]
    assert nxt, "the next iteration's index"
    nxt_name = nxt[0].split("=")[0].strip()
    assert any(f"{cond} = arith.cmpi slt, {nxt_name}, {loop.ub}" in ln for ln in top)
    inside = [ln for ln in loop.lines if '"tt.load"' in ln]
    assert len(inside) == n_loads
    # the loads of iteration i + 1 are issued before the dot of iteration i
    first_read, first_dot = loop.index('"ttg.local_load"'), loop.index('"tt.dot"')
    assert guard < first_dot
    # one local_store per operand, after the last dot, under the same guard
    stores = [ln for ln in loop.lines if '"ttg.local_store"' in ln]
    assert len(stores) == n_loads
    last_dot = loop.index('"tt.dot"', last=True)
    store_if = loop.index("scf.if", last=True)
    assert store_if > last_dot and top[store_if].strip() == f"scf.if {cond} {{"
    check_barriers(loop)
    # no local_alloc of a tensor is left in the loop (the buffer is allocated once, before it)
    assert not any(re.search(r'"ttg\.local_alloc"\(%', ln) for ln in loop.lines)


def _events(lines):
    """(kind, buffer) per shared-memory access or barrier of ``lines`` in order: 'r' local_load, 'w' local_store,
    'b' barrier (the guards are uniform: every thread runs the same lines)."""
    out = []
    for ln in lines:
        if '"ttg.barrier"' in ln:
            out.append(("b", None))
        elif '"ttg.local_load"' in ln:
            out.append(("r", re.search(r'"ttg\.local_load"\((%\w+)', ln).group(1)))
        elif '"ttg.local_store"' in ln:
            out.append(("w", re.search(r'"ttg\.local_store"\(%[\w#]+, (%\w+)\)', ln).group(1)))
    return out


def check_barriers(loop):
    """Around each buffer the loop stores into: a barrier between its reads and the store of the same iteration
    (WAR), between the store and the next iteration's reads (RAW, across the back edge), and between the
    prologue's store and the first iteration's reads."""
    ev = _events(loop.lines)
    stored = {b for k, b in ev if k == "w"}
    assert stored
    for buf in stored:
        seq = [(k, b) for k, b in ev if k == "b" or b == buf]
        n = len(seq)
        for i, (k, _) in enumerate(seq):
            if k == "b":
                continue
            # the next access of the buffer (wrapping around the back edge) of the other kind needs a barrier first
            j, barrier = (i + 1) % n, False
            while seq[j][0] == "b" or seq[j][0] == k:
                barrier |= seq[j][0] == "b"
                if j == i:
                    break
                j = (j + 1) % n
            if seq[j][0] != k and seq[j][0] != "b":
                assert barrier, f"no barrier between {k} and {seq[j][0]} of {buf}"
        pro = _events(loop.before)
        last_w = max(i for i, (k, b) in enumerate(pro) if k == "w" and b == buf)
        first_r = next(i for i, (k, b) in enumerate(ev) if k == "r" and b == buf)
        assert any(k == "b" for k, _ in pro[last_w + 1:] + ev[:first_r]), f"prologue store of {buf} unguarded"


def check_prologue(loop, n_loads):
    """Before the loop: the buffers, iteration lb's loads under a guard, stored into the buffers."""
    before = "\n".join(loop.before[-200:])
    tail = before[before.rindex("scf.if"):]
    assert tail.count('"ttg.local_store"') == n_loads
    assert tail.count('"tt.load"') == n_loads
    cond = re.search(r"scf\.if (%\w+)", tail).group(1)
    # lb < ub (canonicalised to ub > 0 when lb is the constant 0)
    assert re.search(rf"{cond} = arith\.cmpi (slt, {loop.lb}, {loop.ub}|sgt, {loop.ub}, {loop.lb})", before)
    assert before.count('"ttg.local_alloc"()') >= n_loads


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_matmul_loads_are_issued_an_iteration_ahead(arch):
    k = matmul(arch)
    (loop,) = loops(k.asm["ttgir"])
    check_pipelined(loop, 2)
    check_prologue(loop, 2)
    # the K tail keeps its mask, recomputed for the next iteration: the loads ahead are masked
    assert all("array<i32: 1, 1, 1>" in ln for ln in loop.lines if '"tt.load"' in ln)
    check_code_object(k, {**MM_SIG}, arch)
    asm = k.asm["amdgcn"]
    assert re.search(r"^\s*v_mfma_f32_32x32x8_?f16", asm, re.M)
    assert re.search(r"^\s*global_load_dwordx4", asm, re.M)
    # 2 x 16 KiB: one LDS buffer per operand (single-buffered)
    assert k.metadata["shared"] == 2 * 128 * 64 * 2


def test_non_power_of_two_k_tail_is_masked_ahead():
    # BLOCK_K 32 with K only known even: the masks cut the tail, the vector width stays 4 bytes (2 fp16)
    attrs = {**MM_ATTRS, "K": {"tt.divisibility": 2}}
    k = matmul(attrs=attrs, bk=32)
    (loop,) = loops(k.asm["ttgir"])
    check_pipelined(loop, 2)
    check_prologue(loop, 2)
    loads = [ln for ln in loop.lines if '"tt.load"' in ln]
    assert all("array<i32: 1, 1, 1>" in ln for ln in loads)


def test_one_stage_is_not_pipelined():
    (loop,) = loops(matmul(stages=1).asm["ttgir"])
    assert sum('"tt.load"' in ln for ln in loop.top) == 2 and not any("local_store" in ln for ln in loop.lines)


def test_sub_dword_loads_are_not_pipelined():
    # strides not known: each thread loads 2-byte pieces (Triton's AMD pipeliner leaves these too)
    (loop,) = loops(matmul(attrs={}).asm["ttgir"])
    assert sum('"tt.load"' in ln for ln in loop.top) == 2 and not any("local_store" in ln for ln in loop.lines)


def test_cuda_keeps_its_pipeliner():
    k = tritium.compile(tritium.compiler.ASTSource(K.matmul_kernel, MM_SIG, {
        "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, **MM_ONES}, MM_ATTRS),
        target="cuda:80", options={"num_stages": 2}, use_cache=False, until="ttgir")
    ttgir = k.asm["ttgir"]
    assert "async_copy_global_to_local" in ttgir and '"ttg.local_store"' not in ttgir


@tritium.jit
def _dot_loop(A, B, C, I, K, MODE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = A + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + offs_k[:, None] * BN + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    inc = BK
    for k in range(0, K, BK):
        if MODE == 1:  # the A block's column comes from a loaded index
            j = tl.load(I + k // BK)
            a = tl.load(A + offs_m[:, None] * K + (j + offs_k)[None, :])
        else:
            a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        if MODE == 2:  # a store the next iteration's load could read
            tl.store(C + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))
        a_ptrs += inc
        if MODE == 3:  # the pointer's step is itself loop-carried
            inc = tl.maximum(inc, k)
        b_ptrs += BK * BN
    tl.store(C + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


DL_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "I": "*i32", "K": "i32"}
DL_ATTRS = {k: D16 for k in ("A", "B", "C", "I", "K")}


def dot_loop(mode):
    k = build(_dot_loop, DL_SIG, "gfx942", attrs=DL_ATTRS, options={"num_stages": 2}, MODE=mode, BM=64, BN=64,
              BK=32)
    (loop,) = loops(k.asm["ttgir"])
    return k, loop


def test_plain_dot_loop_is_pipelined():
    _, loop = dot_loop(0)
    check_pipelined(loop, 2)
    check_prologue(loop, 2)


@pytest.mark.parametrize("mode", [1, 3])
def test_load_depending_on_the_previous_iteration_stays(mode):
    # 1: A's address depends on a load; 3: on an iter_arg updated from another loop-carried value. B still goes ahead.
    k, loop = dot_loop(mode)
    top_loads = [ln for ln in loop.top if '"tt.load"' in ln]
    assert len(top_loads) == (2 if mode == 1 else 1)  # the index load (mode 1) and A stay in the body
    # ... and are issued before B's load ahead (waiting for them must not wait for it: the counter is in order)
    guard = loop.index("scf.if")
    assert all(k < guard for k, ln in enumerate(loop.top) if '"tt.load"' in ln)
    assert sum('"ttg.local_store"' in ln for ln in loop.lines) == 1
    assert any(re.search(r'"ttg\.local_alloc"\(%', ln) for ln in loop.top)  # A's tile stored where loaded
    check_code_object(k, DL_SIG, "gfx942")


def test_loop_that_stores_is_left_alone():
    _, loop = dot_loop(2)
    assert sum('"tt.load"' in ln for ln in loop.top) == 2
    assert not any('"ttg.local_store"' in ln for ln in loop.lines)


ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16",
            **{f"stride_{t}{d}": "i32" for t, dims in (("q", "zhm"), ("k", "zhn"), ("v", "zhk"), ("o", "zhm"))
               for d in dims},
            "Z": "i32", "H": "i32", "N_CTX": "i32"}
ATTN_ONES = {"stride_qk": 1, "stride_kk": 1, "stride_vn": 1, "stride_on": 1}


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_attention_loops_are_pipelined(arch):
    attrs = {k: D16 for k, t in ATTN_SIG.items() if t.startswith("*") or "stride" in k}
    k = build(K._attn_fwd, ATTN_SIG, arch, attrs=attrs, options={"num_stages": 2}, HEAD_DIM=64, BLOCK_M=128,
              BLOCK_N=64, STAGE=3, **ATTN_ONES)
    ls = loops(k.asm["ttgir"])
    assert len(ls) == 2  # causal: the blocks left of the diagonal, then the diagonal block
    for loop in ls:
        check_pipelined(loop, 2)  # K and V
        check_prologue(loop, 2)
    check_code_object(k, ATTN_SIG, arch)
    assert len(re.findall(r"^\s*v_mfma", k.asm["amdgcn"], re.M)) == 64


@pytest.mark.parametrize("kernel_stages,loop_stages,pipelined", [(1, 2, True), (2, 1, False), (2, 3, True)])
def test_a_loops_num_stages_decides(kernel_stages, loop_stages, pipelined):
    # tl.range(num_stages=k) on the loop overrides the kernel's num_stages (as on cuda; Triton's rule)
    from tests.passes.test_pipeline_loops import _loop_stages_kernel

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    attrs = {k: D16 for k in ("a_ptr", "b_ptr", "c_ptr", "K")}
    ttgir = build(_loop_stages_kernel, sig, "gfx942", attrs=attrs, options={"num_stages": kernel_stages},
                  LOOP_STAGES=loop_stages).asm["ttgir"]
    (loop,) = loops(ttgir)
    assert (not any('"tt.load"' in ln for ln in loop.top)) == pipelined
