"""tt.dot on Hopper wgmma (sm_90): accelerate_matmul's version-3 choice, ttg.warp_group_dot from
optimize_dot_operands, its lowering's addressing (a model: every warpgroup's descriptors read, through the hardware's
addressing, the rows / columns its accumulator tile holds), the 1024-byte alignment of swizzled buffers, membar
before the dot, and PTX of the tutorial matmul / fused attention (wgmma on cuda:90, mma.sync on cuda:80, ptxas
without serialisation warnings)."""
import itertools
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.e2e import kernels as K  # noqa: E402
from tritium.compiler import ASTSource, compile  # noqa: E402
from tritium.dialects import layouts  # noqa: E402
from tritium.dialects.layouts import NvidiaMmaLayout, NVMMASharedLayout  # noqa: E402
from tritium.passes.ttgir.accelerate_matmul import warps_per_tile_v3, wgmma_instr_n  # noqa: E402
from tritium.passes.ttgir.optimize_dot_operands import wgmma_shared_layout  # noqa: E402
from tritium_nvidia.lowering import wgmma as W  # noqa: E402
from tritium_nvidia.lowering.wgmma_dot import promotion_steps, warpgroup_terms  # noqa: E402


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


# ------------------------------------------------------------------------------------------------
# Layout choice (Triton's instrShape and warpsPerTileV3)
# ------------------------------------------------------------------------------------------------

def test_instr_n_and_warps():
    assert wgmma_instr_n((128, 128), 4, False) == 128
    assert wgmma_instr_n((128, 256), 8, False) == 256
    assert wgmma_instr_n((64, 128), 8, False) == 64  # 4 warps along M, 2 left for N
    assert wgmma_instr_n((128, 256), 8, True) == 128  # int8: no 256 (224, 208, ... do not divide 256)
    assert wgmma_instr_n((64, 32), 4, True) == 32
    assert warps_per_tile_v3((128, 256), 8, 256) == (8, 1)
    assert warps_per_tile_v3((64, 128), 8, 64) == (4, 2)
    assert warps_per_tile_v3((128, 128), 4, 128) == (4, 1)
    assert warps_per_tile_v3((256, 128), 16, 128) == (16, 1)
    assert warps_per_tile_v3((64, 64), 8, 64, chained=True) == (8, 1)


def test_wgmma_operand_buffers():
    blocked_k = layouts.BlockedLayout((1, 8), (4, 8), (4, 1), (1, 0))  # last dim contiguous
    blocked_m = layouts.BlockedLayout((8, 1), (8, 4), (1, 4), (0, 1))  # first dim contiguous
    # 16-bit: the source's contiguous dim, widest swizzle it fills
    assert wgmma_shared_layout((128, 64), blocked_k, 2, 0) == NVMMASharedLayout(128, 0, 16)
    assert wgmma_shared_layout((128, 32), blocked_k, 2, 0) == NVMMASharedLayout(64, 0, 16)
    assert wgmma_shared_layout((64, 128), blocked_m, 2, 1) == NVMMASharedLayout(128, 1, 16)
    # 8 / 32-bit: K-major whatever the source (B [K, N] K-major is transposed 1)
    assert wgmma_shared_layout((64, 128), blocked_k, 1, 1) == NVMMASharedLayout(64, 1, 8)
    assert wgmma_shared_layout((128, 64), blocked_m, 1, 0) == NVMMASharedLayout(64, 0, 8)
    assert wgmma_shared_layout((32, 64), blocked_k, 4, 1) == NVMMASharedLayout(128, 1, 32)


def test_fp8_promotion():
    # Triton's partial accumulator: added every ceil(m / 32) k-steps (at least one) while m <= K
    assert promotion_steps("e4m3", "f32", 0, 128, 32) == 1  # (a tt.dot with 0 stays on mma.sync)
    assert promotion_steps("e5m2", "f32", 32, 128, 32) == 1
    assert promotion_steps("e5m2", "f32", 64, 128, 32) == 2
    assert promotion_steps("e5m2", "f32", 48, 128, 32) == 2
    assert promotion_steps("e4m3", "f32", 128, 128, 32) == 4  # m == K: once per dot
    assert promotion_steps("e4m3", "f32", 129, 128, 32) is None  # all of K in the instruction
    assert promotion_steps("e4m3", "f32", 1 << 30, 128, 32) is None
    assert promotion_steps("e4m3", "f16", 0, 128, 32) is None
    assert promotion_steps("f16", "f32", 0, 64, 16) is None


# ------------------------------------------------------------------------------------------------
# The lowering's addressing, in Python: descriptors per warpgroup / tile / k-step
# ------------------------------------------------------------------------------------------------

BASE = 5 * 1024


def _model(lay, shape, K_, a_lay, b_lay, bits):
    """Every element every warpgroup's wgmma reads (hardware model) is the element its accumulator needs."""
    M, N = shape
    a_shape, b_shape = (M, K_), (K_, N)
    eb = bits // 8
    kk = W.instr_k_bits(bits)
    n = lay.instr_n
    ll = lay.linear(shape)
    assert ll.warp[:2] == ((16, 0), (32, 0))
    ta = warpgroup_terms(ll.warp[2:], a_lay, a_shape, 0, bits)
    tb = warpgroup_terms(ll.warp[2:], b_lay, b_shape, 1, bits)
    fa = W.operand_descriptor(a_lay, a_shape, 0, elem_bits=bits)
    fb = W.operand_descriptor(b_lay, b_shape, 1, elem_bits=bits)
    checked = 0
    for g in range(lay.num_warps // 4):
        w = 4 * g
        a_start = BASE + sum(off for j, off in ta if (w >> j) & 1)
        b_start = BASE + sum(off for j, off in tb if (w >> j) & 1)
        for r0, (m0, n0) in W.acc_tiles(lay, shape):
            origin = ll.index(r0, 0, w)  # the group's tile: rows of A, columns of B
            for wi, lane, i in itertools.product(range(4), (0, 5, 31), range(0, n // 2, 7)):
                r, c = W.acc_element(i, lane, wi)
                assert ll.index(r0 + i, lane, w + wi) == (origin[0] + r, origin[1] + c)
            for j in range(K_ // kk):
                da = fa.advanced(a_start + W.tile_offset(a_lay, a_shape, 0, m0, j * kk, elem_bits=bits, mn_size=64))
                db = fb.advanced(b_start + W.tile_offset(b_lay, b_shape, 1, n0, j * kk, elem_bits=bits, mn_size=n))
                for (mm, kx), addr in W.hardware_addresses(da, mn_size=64, k_size=kk, elem_bits=bits,
                                                           k_major=W.is_k_major(a_lay, 0)).items():
                    assert addr == BASE + a_lay.offset((origin[0] + mm, j * kk + kx), a_shape) * eb
                for (nn, kx), addr in W.hardware_addresses(db, mn_size=n, k_size=kk, elem_bits=bits,
                                                           k_major=W.is_k_major(b_lay, 1)).items():
                    assert addr == BASE + b_lay.offset((j * kk + kx, origin[1] + nn), b_shape) * eb
                checked += 1
    return checked


@pytest.mark.parametrize("warps,shape,n,K_,bits,a_tr,b_tr", [
    ((4, 1), (128, 128), 128, 64, 16, 0, 0),   # 128x128x64 w4, A K-major, B N-major (row-major)
    ((8, 1), (128, 256), 256, 64, 16, 0, 1),   # 128x256x64 w8, B K-major
    ((4, 2), (64, 128), 64, 32, 16, 1, 0),     # warpgroups along N, A M-major
    ((8, 1), (64, 64), 32, 64, 16, 0, 0),      # a chained dot's M = 64 on 8 warps: both groups, same tile
    ((8, 2), (128, 256), 128, 128, 8, 0, 1),   # fp8 (K-major), 16 warps
    ((4, 1), (64, 64), 64, 32, 32, 0, 1),      # tf32
])
def test_warpgroup_descriptors_read_their_tiles(warps, shape, n, K_, bits, a_tr, b_tr):
    lay = NvidiaMmaLayout(3, warps, (16, n, 256 // bits))
    M, N = shape
    fast_a = M if a_tr else K_
    fast_b = K_ if b_tr else N
    sw = lambda elems: next((s for s in (128, 64, 32) if elems * bits // 8 >= s), 0)  # noqa: E731
    a_lay = NVMMASharedLayout(sw(fast_a), a_tr, bits)
    b_lay = NVMMASharedLayout(sw(fast_b), b_tr, bits)
    assert _model(lay, shape, K_, a_lay, b_lay, bits) > 0


# ------------------------------------------------------------------------------------------------
# TTGIR and PTX of the tutorial kernels
# ------------------------------------------------------------------------------------------------

MM_SIG = {"a_ptr": None, "b_ptr": None, "c_ptr": None, "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
          "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32"}
D16 = {"tt.divisibility": 16}
DTYPES = {"fp16": ("*fp16", "*fp16", "f16"), "bf16": ("*bf16", "*bf16", "bf16"),
          "fp8e4nv": ("*fp8e4nv", "*fp16", "e4m3"), "fp8e5": ("*fp8e5", "*fp16", "e5m2"),
          "int8": ("*i8", "*i32", "s8"), "fp32": ("*fp32", "*fp32", "tf32")}


def matmul(dtype, target="cuda:90", blocks=(128, 128, 64), num_warps=4, num_stages=3, b_kmajor=None,
           until=None, precision=None):
    ptr, out, _ = DTYPES[dtype]
    sig = dict(MM_SIG, a_ptr=ptr, b_ptr=ptr, c_ptr=out)
    ce = dict(BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1], BLOCK_SIZE_K=blocks[2], GROUP_SIZE_M=8,
              stride_ak=1, stride_cn=1)
    if b_kmajor is None:
        b_kmajor = dtype.startswith("fp8")  # the tutorial pre-transposes B for fp8
    ce["stride_bk" if b_kmajor else "stride_bn"] = 1
    del sig["stride_bk" if b_kmajor else "stride_bn"]
    if precision:
        ce["INPUT_PRECISION"] = precision
    attrs = {k: D16 for k in sig}  # what a launch at 4096^3 specialises (every size and stride divisible by 16)
    if until is None and not _has_ptxas():
        until = "ptx"
    return compile(ASTSource(K.matmul_kernel, sig, constexprs=ce, attrs=attrs), target=target,
                   options={"num_warps": num_warps, "num_stages": num_stages}, until=until)


def attention(dtype="fp16", target="cuda:90", BM=128, BN=64, D=64, num_warps=8, num_stages=3, stage=1):
    ptr = "*" + dtype
    sig = {"Q": ptr, "K": ptr, "V": ptr, "sm_scale": "fp32", "M": "*fp32", "Out": ptr}
    for p, dims in (("q", "zhm"), ("k", "zhn"), ("v", "zhk"), ("o", "zhm")):
        for d in dims:
            sig[f"stride_{p}{d}"] = "i32"
    sig.update(Z="i32", H="i32", N_CTX="i32")
    ce = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, STAGE=stage, stride_qk=1, stride_kk=1, stride_vn=1, stride_on=1)
    attrs = {k: D16 for k, v in sig.items() if v != "fp32"}
    return compile(ASTSource(K._attn_fwd, sig, constexprs=ce, attrs=attrs), target=target,
                   options={"num_warps": num_warps, "num_stages": num_stages},
                   until=None if _has_ptxas() else "ptx")


def _no_serialisation(k):
    log = k.metadata.get("ptxas_log") or ""
    assert "serialized" not in log and "injected" not in log and "Performance" not in log, log


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_matmul_uses_wgmma_on_sm90(dtype):
    k = matmul(dtype)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttg.warp_group_dot" in ttgir and "#ttg.nvidia_mma<3" in ttgir and '"tt.dot"' not in ttgir
    assert "ttg.local_load" not in ttgir  # wgmma reads the buffers itself
    ptx_type = DTYPES[dtype][2]
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n(128|64)k\d+\.\w+\.{ptx_type}\.{ptx_type}", ptx), dtype
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert "wgmma.fence.sync.aligned" in ptx and "wgmma.commit_group" in ptx and "wgmma.wait_group" in ptx
    assert "fence.proxy.async.shared::cta" in ptx
    assert re.search(r"\.extern \.shared \.align 1024 \.b8 global_smem", ptx)
    for off in re.findall(r"allocation.offset = (\d+) : i32, allocation.size = \d+ : i32\} : [^\n]*nvmma_shared<128",
                          ttgir):
        assert int(off) % 1024 == 0
    if _has_ptxas():
        _no_serialisation(k)


def test_matmul_128x256_w8():
    k = matmul("fp16", blocks=(128, 256, 64), num_warps=8)
    assert "nvidia_mma<3 : i32, array<i32: 8, 1>, array<i32: 16, 256, 16>>" in k.asm["ttgir"]
    assert k.asm["ptx"].count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    if _has_ptxas():
        _no_serialisation(k)
        assert k.metadata["n_spills"] == 0


@pytest.mark.parametrize("dtype,target", [("fp16", "cuda:80"), ("int8", "cuda:80"), ("fp8e4nv", "cuda:89")])
def test_matmul_stays_on_mma_sync_before_sm90(dtype, target):
    ptx = matmul(dtype, target=target).asm["ptx"]
    assert "mma.sync.aligned" in ptx and "wgmma" not in ptx


@pytest.mark.parametrize("case", ["tf32x3", "ieee", "small_m", "num_warps_2"])
def test_what_stays_on_mma_sync_on_sm90(case):
    if case in ("tf32x3", "ieee"):
        k = matmul("fp32", precision=case, until="ttgir")
    elif case == "small_m":
        k = matmul("fp16", blocks=(32, 64, 32), until="ttgir")
    else:
        k = matmul("fp16", blocks=(64, 64, 32), num_warps=2, until="ttgir")
    ttgir = k.asm["ttgir"]
    assert "warp_group_dot" not in ttgir and "nvidia_mma<3" not in ttgir
    assert ("nvidia_mma<2" in ttgir) == (case != "ieee")


def test_batched_dot_stays_on_mma_sync():
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "BATCH": "i32", "M": "i32", "N": "i32", "K": "i32"}
    for p in "abc":
        for d in "zmk" if p == "a" else ("zkn" if p == "b" else "zmn"):
            sig[f"stride_{p}{d}"] = "i32"
    k = compile(ASTSource(K.dot3d_kernel, sig, constexprs=dict(BLOCK_B=2, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)),
                target="cuda:90", options={"num_warps": 4}, until="ttgir")
    assert "nvidia_mma<2" in k.asm["ttgir"] and "warp_group_dot" not in k.asm["ttgir"]


@pytest.mark.parametrize("dtype,D,stage", [("fp16", 64, 1), ("bf16", 128, 3)])
def test_attention_uses_wgmma(dtype, D, stage):
    k = attention(dtype, D=D, stage=stage)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count('"ttg.warp_group_dot"(') == (2 if stage == 1 else 4)  # q @ k and p @ v per loop
    # q @ k feeds p @ v: all 8 warps along M (Triton's chained-dot rule)
    assert "nvidia_mma<3 : i32, array<i32: 8, 1>, array<i32: 16, 64, 16>>" in ttgir
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32" in ptx and "mma.sync" not in ptx
    # p @ v takes p from the registers the first dot left it in (a register-only conversion, A from registers)
    assert re.search(r"\(tensor<128x64x\w+, #ttg.dot_op<0 : i32, #ttg.nvidia_mma<3", ttgir)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.\w+\.\w+ \{[^}]*\}, \{%r", ptx)
    for body in ttgir.split("scf.for")[1:]:
        body = body[:body.index("scf.yield")]
        assert body.count('"ttg.local_alloc"') <= 1  # only q's (p is not stored), no conversion through memory
        assert all("allocation.offset" not in ln for ln in body.splitlines() if '"ttg.convert_layout"' in ln)
    if _has_ptxas():
        _no_serialisation(k)
        assert k.metadata["shared"] <= 232448  # fits the H100's 227 KiB


@pytest.mark.parametrize("D,BN", [(128, 64), (64, 32)])
def test_attention_carries_acc_in_its_dots_layout(D, BN):
    # p @ v has a wider N than q @ k (D > BLOCK_N): acc is carried in p @ v's own layout (alpha's broadcast comes to
    # it, a register rename), so the dot stays in flight across the back edge: one wgmma.wait_group in the loop,
    # as Triton's (a conversion of its result to q @ k's layout had forced a second wait every iteration)
    k = attention("fp16", D=D, BN=BN, stage=1)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    body = ttgir.split("scf.for")[1]
    body = body[:body.index("scf.yield")]
    pv = [ln for ln in body.splitlines() if '"ttg.warp_group_dot"(' in ln][-1]
    acc_layout = f"tensor<128x{D}xf32, #ttg.nvidia_mma<3 : i32, array<i32: 8, 1>, array<i32: 16, {D}, 16>>>"
    assert re.sub(r" loc\(.*\)$", "", pv.rstrip()).endswith(acc_layout), pv
    assert not any(f"({acc_layout}) -> " in ln for ln in body.splitlines() if '"ttg.convert_layout"' in ln)
    loops = _ptx_loops(ptx)
    assert loops and all(body.count("wgmma.mma_async") for body in loops)
    assert [body.count("wgmma.wait_group") for body in loops] == [1] * len(loops)


@pytest.mark.parametrize("D,BN,stage", [(64, 32, 1), (128, 64, 1), (64, 64, 3)])
def test_attention_with_two_warp_layouts_exchanges_nothing_in_its_loop(D, BN, stage):
    # BLOCK_M=64 with 8 warps: q @ k gets warps (8, 1), p @ v (4, 2), as in Triton. The rescale acc * alpha[:, None]
    # then changes layout: converted as the row vector alpha (both layouts give a thread the same rows: a register
    # rename), not as the broadcast 64xD tile through shared memory (rule 9 of remove_layout_conversions; the tile
    # was 16 st.shared + 8 ld.shared and a barrier every iteration, a quarter of Triton's speed on an H200)
    k = attention("fp16", BM=64, D=D, BN=BN, num_warps=8, stage=stage)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "array<i32: 8, 1>" in ttgir and "array<i32: 4, 2>" in ttgir  # the two dots' warps, as Triton's
    body = ttgir.split("scf.for")[1]
    body = body[:body.index("scf.yield")]
    tiles = [ln for ln in body.splitlines() if '"ttg.convert_layout"' in ln and f"tensor<64x{D}xf32" in ln]
    assert not tiles, tiles  # no 64xD accumulator-sized conversion in the loop
    loops = _ptx_loops(ptx)
    assert loops and all(b.count("wgmma.mma_async") for b in loops)
    assert all("st.shared" not in b and "ld.shared" not in b for b in loops)


def _ptx_loops(ptx):
    """The text of each loop of ``ptx``: from a label to a branch back to it."""
    out = []
    for m in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ptx):
        start = ptx.find(m.group(1) + ":")
        if 0 <= start < m.start():
            out.append(ptx[start:m.end()])
    return out


# ------------------------------------------------------------------------------------------------
# The op, allocation, membar
# ------------------------------------------------------------------------------------------------

V3 = "#ttg.nvidia_mma<3 : i32, array<i32: 4, 1>, array<i32: 16, 64, 16>>"
BL = "#ttg.blocked<array<i32: 1, 8>, array<i32: 4, 8>, array<i32: 4, 1>, array<i32: 1, 0>>"
MA = "!ttg.memdesc<array<i64: 64, 64>, f16, #ttg.nvmma_shared<128 : i32, 0 : i32, 16 : i32>>"
MB = "!ttg.memdesc<array<i64: 64, 64>, f16, #ttg.nvmma_shared<128 : i32, 0 : i32, 16 : i32>>"
MS = "!ttg.memdesc<array<i64: 8, 8>, f16, #ttg.shared<1 : i32, 1 : i32, 1 : i32, array<i32: 1, 0>>>"
T = f"tensor<64x64xf16, {BL}>"
ACC = f"tensor<64x64xf32, {V3}>"


def _module(body):
    from mlir import ir

    from tritium.dialects import make_context

    src = ('module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {\n'
           f"func.func public @k(%a: {T}, %b: {T}, %c: {ACC}, %s: tensor<8x8xf16, {BL}>) {{\n{body}\n  return\n}}\n}}")
    ctx = make_context()
    with ctx, ir.Location.unknown():
        return ctx, ir.Module.parse(src)


def test_allocation_aligns_swizzled_buffers_and_membar_orders_the_dot():
    from tritium.dialects import tt
    from tritium.passes.analysis.allocation import allocate_shared_memory
    from tritium.passes.analysis.membar import insert_barriers

    ctx, m = _module(f"""
  %s0 = "ttg.local_alloc"(%s) : (tensor<8x8xf16, {BL}>) -> {MS}
  %sa = "ttg.local_alloc"(%a) : ({T}) -> {MA}
  %sb = "ttg.local_alloc"(%b) : ({T}) -> {MB}
  %x = "ttg.local_load"(%s0) : ({MS}) -> tensor<8x8xf16, {BL}>
  %d = "ttg.warp_group_dot"(%sa, %sb, %c) {{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}} : ({MA}, {MB}, {ACC}) -> {ACC}
  %d2 = "ttg.warp_group_dot"(%sa, %sb, %d) {{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}} : ({MA}, {MB}, {ACC}) -> {ACC}""")  # noqa: E501
    with ctx:
        tt.verify_module(m)
        allocate_shared_memory(m.operation)
        offs = [int(o.attributes["allocation.offset"].value) for o in m.body.operations[0].regions[0].blocks[0]
                .operations if o.name == "ttg.local_alloc"]
        assert offs[1] % 1024 == 0 and offs[2] % 1024 == 0 and offs[1] != offs[2]
        assert insert_barriers(m.operation) == 1  # one barrier after the stores, before the reads; dot after dot: none
        names = [o.name for o in m.body.operations[0].regions[0].blocks[0].operations]
        assert names.index("ttg.barrier") < names.index("ttg.warp_group_dot")
        assert names.index("ttg.barrier") > max(i for i, n in enumerate(names) if n == "ttg.local_alloc")


def test_warp_group_dot_verifier():
    from tritium.dialects import tt
    from tritium.dialects.tt import VerificationError

    bad = "!ttg.memdesc<array<i64: 32, 64>, f16, #ttg.nvmma_shared<128 : i32, 0 : i32, 16 : i32>>"
    ctx, m = _module(f"""
  %sa = "ttg.local_alloc"(%a) : ({T}) -> {MA}
  %sb = "ttg.local_alloc"(%b) : ({T}) -> {MB}
  %bb = "ttg.local_alloc"() : () -> {bad}
  %d = "ttg.warp_group_dot"(%sa, %bb, %c) {{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}} : ({MA}, {bad}, {ACC}) -> {ACC}""")  # noqa: E501
    with ctx, pytest.raises(VerificationError, match="do not multiply"):
        tt.verify_module(m)
