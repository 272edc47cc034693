"""Hopper wgmma building blocks (``tritium_nvidia.lowering.wgmma``): descriptors for NVMMASharedLayout buffers,
checked through a model of the addresses the hardware reads against ``NVMMASharedLayout.offset``; the accumulator
and A-fragment register orders against the nvidia_mma v3 / dot_op layouts; the instruction strings assembled by
ptxas for sm_90a."""
import itertools
import os
import subprocess
import tempfile

import pytest

pytest.importorskip("mlir")

from tritium.dialects import layouts  # noqa: E402
from tritium.dialects.layouts import DotOperandLayout, NvidiaMmaLayout, NVMMASharedLayout  # noqa: E402
from tritium.lowering import LoweringError  # noqa: E402
from tritium_nvidia.lowering import wgmma as W  # noqa: E402

BASE = 3 * 1024  # a buffer start aligned to every swizzle pattern (1024 bytes for 128B)


# ------------------------------------------------------------------------------------------------
# Descriptor bits
# ------------------------------------------------------------------------------------------------

def test_descriptor_bit_fields():
    d = W.Descriptor(start=0x1230, lbo=0x40, sbo=0x400, swizzle=128)
    v = d.encode()
    assert v & 0x3FFF == 0x123 and (v >> 14) & 3 == 0
    assert (v >> 16) & 0x3FFF == 0x4 and (v >> 32) & 0x3FFF == 0x40
    assert (v >> 49) & 7 == 0 and (v >> 62) == 1
    assert W.Descriptor.decode(v) == d
    for sw, mode in ((0, 0), (128, 1), (64, 2), (32, 3)):
        assert W.Descriptor(0, 16, 16, sw).encode() >> 62 == mode
    assert W.Descriptor(0, 16, 16, 64, base_offset=5).encode() >> 49 & 7 == 5
    assert d.fields() == v & ~0x3FFF
    assert d.advanced(32).encode() == v + 2
    with pytest.raises(ValueError):
        W.Descriptor(start=8, lbo=16, sbo=16, swizzle=0)  # not 16-byte aligned


def _cute_addr(mn, k, strides_mn, shape_mn, strides_k, shape_k, elem_bytes, swizzle):
    """A CuTe layout ``(shape_mn, shape_k):(strides_mn, strides_k)`` in elements, in bytes, swizzled."""
    off = 0
    for x, shapes, strides in ((mn, shape_mn, strides_mn), (k, shape_k, strides_k)):
        for s, st in zip(shapes, strides):
            off += (x % s) * st
            x //= s
    return W.swizzle_address(off * elem_bytes, swizzle)


@pytest.mark.parametrize("name,k_major,bits,swizzle,lbo,sbo,shape_mn,strides_mn,shape_k,strides_k", [
    # the PTX ISA's worked examples (9.7.15.5.1.2.1.3, "Canonical Layouts"): exact layout and LBO / SBO in bytes
    ("K, none, tf32", True, 32, 0, 64 * 4, 32 * 4, (8, 2), (4, 32), (4, 2), (1, 64)),
    ("K, 32B, tf32", True, 32, 32, 16, 64 * 4, (8, 2), (8, 64), (8,), (1,)),
    ("MN, none, bf16", False, 16, 0, 128 * 2, 64 * 2, (8, 1, 2), (1, 8, 64), (8, 2), (8, 128)),
    ("MN, 32B, bf16", False, 16, 32, 128 * 2, 256 * 2, (8, 2, 2), (1, 8, 128), (8, 2), (16, 256)),
    ("MN, 64B, bf16", False, 16, 64, 256 * 2, 512 * 2, (8, 4, 2), (1, 8, 256), (8, 2), (32, 512)),
])
def test_model_reproduces_the_ptx_isa_examples(name, k_major, bits, swizzle, lbo, sbo, shape_mn, strides_mn,
                                               shape_k, strides_k):
    mn_size = 1
    for s in shape_mn:
        mn_size *= s
    k_size = W.instr_k_bits(bits)  # one instruction's K (the examples' K-major tf32 ones show two k-steps)
    d = W.Descriptor(start=0, lbo=lbo, sbo=sbo, swizzle=swizzle)
    got = W.hardware_addresses(d, mn_size=mn_size, k_size=k_size, elem_bits=bits, k_major=k_major)
    for (mn, k), a in got.items():
        assert a == _cute_addr(mn, k, strides_mn, shape_mn, strides_k, shape_k, bits // 8, swizzle), (name, mn, k)


# ------------------------------------------------------------------------------------------------
# Descriptors of NVMMASharedLayout buffers == what the layout stores, element by element
# ------------------------------------------------------------------------------------------------

def _check_operand(layout, shape, operand, mn_size):
    """Every element of every (MN tile, k-step) the hardware reads through ``operand_descriptor`` is where
    ``layout.offset`` put it."""
    bits = layout.element_bits
    eb = bits // 8
    mn_extent, k_extent = W.mn_k_extents(shape, operand)
    k_major = W.is_k_major(layout, operand)
    kk = W.instr_k_bits(bits)
    n = 0
    for mn0 in range(0, mn_extent, mn_size):
        for k0 in range(0, k_extent, kk):
            d = W.operand_descriptor(layout, shape, operand, base=BASE, mn=mn0, k=k0, mn_size=mn_size)
            assert d.start == BASE + W.tile_offset(layout, shape, operand, mn0, k0)
            if mn0 == 0:
                assert d.start == BASE + W.k_step_offset(layout, shape, operand, k0 // kk)
            got = W.hardware_addresses(d.encode(), mn_size=mn_size, k_size=kk, elem_bits=bits, k_major=k_major)
            for (i, j), addr in got.items():
                idx = (mn0 + i, k0 + j) if operand == 0 else (k0 + j, mn0 + i)
                assert addr == BASE + layout.offset(idx, shape) * eb, (layout, shape, operand, mn0, k0, i, j)
                n += 1
    assert n == mn_extent * k_extent
    return n


# (bits, shapes): fp16/bf16 with k16, fp8/int8 with k32, tf32 with k8
SHAPES = {16: [(128, 64), (64, 64), (256, 32), (64, 128), (128, 256)],
          8: [(128, 128), (64, 64), (256, 32), (64, 256)],
          32: [(128, 32), (64, 64), (256, 16), (64, 8)]}
CASES = [(bits, shape, sw, op, tr) for bits, shapes in SHAPES.items() for shape in shapes
         for sw in (128, 64, 32, 0) for op in (0, 1) for tr in (0, 1)]


def _supported(bits, shape, sw, op, tr):
    lay = NVMMASharedLayout(sw, tr, bits)
    mn_extent, k_extent = W.mn_k_extents(shape, op)
    fast = k_extent if W.is_k_major(lay, op) else mn_extent
    return (bits == 16 or W.is_k_major(lay, op)) and fast * bits // 8 >= (sw or 16)


@pytest.mark.parametrize("bits", sorted(SHAPES))
def test_descriptors_read_what_the_layout_stores(bits):
    covered = set()
    for b, shape, sw, op, tr in CASES:
        if b != bits or not _supported(b, shape, sw, op, tr):
            continue
        lay = NVMMASharedLayout(sw, tr, bits)
        mn_extent, _ = W.mn_k_extents(shape, op)
        # A: one warpgroup's 64 rows per tile; B: instruction N of 64, and of the whole N up to 256
        for mn_size in ((64,) if op == 0 else sorted({min(64, mn_extent), min(256, mn_extent)})):
            _check_operand(lay, shape, op, mn_size)
        covered.add((sw, W.is_k_major(lay, op)))
    # every swizzle mode, K-major, and MN-major where the hardware has it (16-bit types)
    assert covered == {(sw, km) for sw in (0, 32, 64, 128) for km in ((True, False) if bits == 16 else (True,))}


def test_mn_major_needs_16_bit_types():
    for bits in (8, 32):
        with pytest.raises(ValueError, match="only for 16-bit"):
            W.operand_descriptor(NVMMASharedLayout(64, 1, bits), (64, 64), 0)  # A with M contiguous
        with pytest.raises(ValueError, match="only for 16-bit"):
            W.operand_descriptor(NVMMASharedLayout(64, 0, bits), (64, 64), 1)  # B with N contiguous
        W.operand_descriptor(NVMMASharedLayout(64, 1, bits), (64, 64), 1)  # B with K contiguous: fine


def _readable(target, bits, k_major):
    """Some descriptor (any mode, LBO / SBO up to 4 KiB) reads ``target`` ({(mn, k): byte})."""
    elems = sorted(target, key=lambda e: (e[0] // 8, e))
    for sw in (0, 32, 64, 128):
        lbos = range(16, 4097, 16) if not sw or not k_major else (16,)
        for lbo, sbo in itertools.product(lbos, range(16, 4097, 16)):
            d = W.Descriptor(start=target[(0, 0)], lbo=lbo, sbo=sbo, swizzle=sw)
            if all(W.hardware_address(d, *e, elem_bits=bits, k_major=k_major) == target[e] for e in elems):
                return True
    return False


def test_swizzle_wider_than_the_contiguous_dim_is_unreadable():
    """``NVMMASharedLayout.offset`` with rows narrower than the swizzle (fp16 K = 32: 64-byte rows, 128B swizzle)
    XORs 128B-pattern bits into 64-byte rows: no descriptor reads that (so the descriptor functions refuse it;
    optimize_dot_operands never picks such a swizzle)."""
    lay, shape = NVMMASharedLayout(128, 0, 16), (64, 32)
    with pytest.raises(ValueError, match="narrower than"):
        W.operand_descriptor(lay, shape, 0)
    target = {(m, k): lay.offset((m, k), shape) * 2 for m in range(16) for k in range(16)}
    assert not _readable(target, 16, True)
    # the same buffer with the 64B swizzle its rows fill is readable
    lay64 = NVMMASharedLayout(64, 0, 16)
    assert _readable({(m, k): lay64.offset((m, k), shape) * 2 for m in range(16) for k in range(16)}, 16, True)


def test_k_step_and_tile_offsets():
    a128 = NVMMASharedLayout(128, 0, 16)
    # K-major fp16, one 128B slab: k-steps 32 bytes apart; warpgroup tiles 64 rows x 128 bytes apart
    assert [W.k_step_offset(a128, (128, 64), 0, j) for j in range(4)] == [0, 32, 64, 96]
    assert W.tile_offset(a128, (128, 64), 0, 64, 0) == 8192
    # K = 128: two slabs of 128 rows x 128 bytes; k-step 4 starts the second
    assert W.k_step_offset(a128, (128, 128), 0, 4) == 128 * 128
    assert W.k_step_offset(a128, (128, 128), 0, 5) == 128 * 128 + 32
    # 32B swizzle: every k-step is a slab
    assert W.k_step_offset(NVMMASharedLayout(32, 0, 16), (64, 64), 0, 1) == 64 * 32
    # unswizzled K-major: 8 K elements per 16-byte slab, two slabs per k-step
    assert W.k_step_offset(NVMMASharedLayout(0, 0, 16), (64, 64), 0, 1) == 2 * 64 * 16
    # MN-major B [K, N] fp16 128B: k-step = 16 K rows of 128 bytes; N tiles of 64 are slabs of K x 128 bytes
    b = NVMMASharedLayout(128, 0, 16)
    assert W.k_step_offset(b, (64, 128), 1, 1) == 16 * 128
    assert W.tile_offset(b, (64, 128), 1, 64, 16) == 64 * 128 + 16 * 128
    # tf32 K-major: k8 = 32 bytes; fp8 K-major: k32 = 32 bytes
    assert W.k_step_offset(NVMMASharedLayout(128, 0, 32), (64, 32), 0, 1) == 32
    assert W.k_step_offset(NVMMASharedLayout(128, 1, 8), (128, 64), 1, 1) == 32
    d = W.operand_descriptor(a128, (128, 64), 0, base=1024)
    assert (d.start, d.lbo, d.sbo, d.swizzle) == (1024, 16, 1024, 128)
    with pytest.raises(ValueError, match="boundary"):
        W.operand_descriptor(a128, (128, 64), 0, base=512)
    with pytest.raises(ValueError, match="crosses"):  # an N tile of 96 starting mid-slab
        W.tile_offset(b, (64, 256), 1, 96, 0, mn_size=96)


# ------------------------------------------------------------------------------------------------
# Register orders: the accumulator (nvidia_mma v3) and A from registers (dot_op of it)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [8, 16, 32, 64, 128, 256])
def test_accumulator_register_order_is_the_layouts(n):
    ll = NvidiaMmaLayout(3, (4, 1), (16, n, 16)).linear((64, n))
    assert ll.num_regs == n // 2
    for w, lane, i in itertools.product(range(4), range(32), range(n // 2)):
        assert ll.index(i, lane, w) == W.acc_element(i, lane, w)
    # two warpgroups along M, then along N
    ll = NvidiaMmaLayout(3, (8, 1), (16, n, 16)).linear((128, n))
    for w, lane, i in itertools.product(range(8), range(32), range(n // 2)):
        r, c = W.acc_element(i, lane, w % 4)
        assert ll.index(i, lane, w) == (64 * (w // 4) + r, c)
    ll = NvidiaMmaLayout(3, (4, 2), (16, n, 16)).linear((64, 2 * n))
    for w, lane, i in itertools.product(range(8), range(32), range(n // 2)):
        r, c = W.acc_element(i, lane, w % 4)
        assert ll.index(i, lane, w) == (r, n * (w // 4) + c)


def test_acc_tiles():
    lay = NvidiaMmaLayout(3, (4, 1), (16, 64, 16))
    tiles = W.acc_tiles(lay, (128, 128))
    assert tiles == [(0, (0, 0)), (32, (0, 64)), (64, (64, 0)), (96, (64, 64))]
    ll = lay.linear((128, 128))
    for r0, (m0, n0) in tiles:
        for w, lane, i in itertools.product(range(4), range(32), range(32)):
            r, c = W.acc_element(i, lane, w)
            assert ll.index(r0 + i, lane, w) == (m0 + r, n0 + c)


@pytest.mark.parametrize("bits,kw", [(16, 2), (32, 1), (8, 4)])
def test_a_fragment_register_order_is_the_dot_operand_layouts(bits, kw):
    k = W.instr_k_bits(bits)
    ll = DotOperandLayout(0, NvidiaMmaLayout(3, (4, 1), (16, 64, 16)), kw).linear((64, k))
    assert ll.num_regs == 4 * 32 // bits
    for w, lane, i in itertools.product(range(4), range(32), range(ll.num_regs)):
        assert ll.index(i, lane, w) == W.a_fragment_element(i, lane, w, bits)


# ------------------------------------------------------------------------------------------------
# Instruction text
# ------------------------------------------------------------------------------------------------

def test_mma_async_text():
    t, nd = W.mma_async_text(n=64, k=16, a_type="f16", b_type="f16", acc_type="f32", a_from_registers=False)
    assert nd == 32
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, $1," in t
    assert "$31}, $32, $33, p, 1, 1, 0, 0;" in t and "setp.ne.b32 p, $34, 0;" in t
    t, nd = W.mma_async_text(n=256, k=16, a_type="bf16", b_type="bf16", acc_type="f32", a_from_registers=True,
                             trans_b=1)
    assert nd == 128 and "{$128, $129, $130, $131}, $132, p, 1, 1, 1;" in t
    t, nd = W.mma_async_text(n=128, k=16, a_type="f16", b_type="f16", acc_type="f16", a_from_registers=False,
                             trans_a=1, trans_b=1)
    assert nd == 32 and ".m64n128k16.f16.f16.f16" in t and "p, 1, 1, 1, 1;" in t
    t, _ = W.mma_async_text(n=8, k=8, a_type="tf32", b_type="tf32", acc_type="f32", a_from_registers=False)
    assert ".m64n8k8.f32.tf32.tf32 {$0, $1, $2, $3}, $4, $5, p, 1, 1;" in t
    t, _ = W.mma_async_text(n=24, k=32, a_type="e4m3", b_type="e5m2", acc_type="f16", a_from_registers=False)
    assert ".m64n24k32.f16.e4m3.e5m2 {$0, $1, $2, $3, $4, $5}, $6, $7, p, 1, 1;" in t
    t, _ = W.mma_async_text(n=48, k=32, a_type="s8", b_type="u8", acc_type="s32", a_from_registers=False)
    assert ".m64n48k32.s32.s8.u8 {" in t and "$24, $25, p;" in t


@pytest.mark.parametrize("kw", [
    dict(n=64, k=16, a_type="bf16", b_type="bf16", acc_type="f16"),  # bf16 accumulates in f32 only
    dict(n=64, k=8, a_type="tf32", b_type="tf32", acc_type="f32", trans_b=1),  # tf32 has no transpose
    dict(n=64, k=32, a_type="e4m3", b_type="e4m3", acc_type="f32", trans_a=1),
    dict(n=40, k=32, a_type="s8", b_type="s8", acc_type="s32"),  # int N: 8..32, then multiples of 16
    dict(n=264, k=16, a_type="f16", b_type="f16", acc_type="f32"),
    dict(n=12, k=16, a_type="f16", b_type="f16", acc_type="f32"),
    dict(n=64, k=32, a_type="f16", b_type="f16", acc_type="f32"),  # wrong K
    dict(n=64, k=16, a_type="f16", b_type="bf16", acc_type="f32"),
    dict(n=64, k=32, a_type="s8", b_type="e4m3", acc_type="s32"),
    dict(n=64, k=16, a_type="f16", b_type="f16", acc_type="f32", trans_a=1, a_from_registers=True),
])
def test_mma_async_refuses(kw):
    kw.setdefault("a_from_registers", False)
    with pytest.raises(LoweringError):
        W.mma_async_text(**kw)


def test_valid_n():
    assert [n for n in range(0, 300) if W.valid_n(n, "f32")] == list(range(8, 257, 8))
    assert [n for n in range(0, 300) if W.valid_n(n, "s32")] == [8, 16, 24, 32] + list(range(48, 257, 16))


# ------------------------------------------------------------------------------------------------
# ptxas: the emitted instructions are valid PTX for sm_90a
# ------------------------------------------------------------------------------------------------

def _ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path()


def _build(name, body, fast=False):
    """A kernel ``name(ptr<1> out)`` whose body ``body(ctx, out)`` emits through a LoweringContext, to LLVM IR and
    PTX with the backend's pipeline; returns ``(PTX, ptxas info)`` (no ptxas: info None).  ``fast``: assemble with
    ``ptxas -O0`` (the same syntax and operand checks, without the optimiser's seconds per wgmma kernel)."""
    from mlir import ir
    from mlir.dialects import llvm as llvm_d

    from tritium.dialects import make_context
    from tritium.lowering.context import LoweringContext
    from tritium.lowering.walker import convert_to_llvm
    from tritium_nvidia.compiler import kernel_attrs
    from tritium_nvidia.lowering import CUDATargetInfo
    from tritium_nvidia.ptx import llir_to_ptx, ptx_to_cubin

    with make_context(), ir.Location.unknown():
        out = ir.Module.create()
        ptr1 = ir.Type.parse("!llvm.ptr<1>")
        with ir.InsertionPoint(out.body):
            ir.Operation.create("llvm.mlir.global", attributes={
                "sym_name": ir.StringAttr.get("global_smem"),
                "global_type": ir.TypeAttr.get(ir.Type.parse("!llvm.array<0 x i8>")),
                "linkage": ir.Attribute.parse("#llvm.linkage<external>"),
                "addr_space": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 3),
                "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1024)}, regions=1)
            f = ir.Operation.create("func.func", attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(ir.FunctionType.get([ptr1], []))}, regions=1)
        block = ir.Block.create_at_start(f.regions[0], [ptr1])
        ctx = LoweringContext(target=CUDATargetInfo(90), rules={}, module=None, out_module=out, num_warps=4,
                              options=None, entry_block=block)
        with ir.InsertionPoint(block):
            body(ctx, block.arguments[0])
            ir.Operation.create("func.return")
        out.operation.verify()
        convert_to_llvm(out)
        for op in out.body.operations:
            if op.operation.name == "llvm.func":
                for k, v in kernel_attrs(4)(ctx, name).items():
                    op.operation.attributes[k] = v
        llir = str(llvm_d.translate_module_to_llvmir(out.operation))
    ptx = llir_to_ptx(llir, name, 90)
    if not _ptxas():
        return ptx, None
    if not fast:
        return ptx, ptx_to_cubin(ptx, 90)[1]
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([_ptxas(), "-O0", "-arch=sm_90a", "-o", os.path.join(d, "k.cubin"), src],
                           capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return ptx, {"ptxas_log": p.stdout + p.stderr}


def _store(ctx, ptr, vals, start=0):
    from mlir import ir

    for i, v in enumerate(vals):
        p = ctx.emit("llvm.getelementptr", [ptr], ptr.type, {
            "rawConstantIndices": ir.DenseI32ArrayAttr.get([start + i]), "elem_type": ir.TypeAttr.get(v.type)})
        ctx.emit_op("llvm.store", [v, p])


def _zero(ctx, acc_type):
    from mlir import ir

    ty = {"f32": ir.F32Type.get(), "f16": ir.F16Type.get(), "s32": ctx.i32()}[acc_type]
    return ctx.const(ty, 0)


@pytest.mark.parametrize("acc_type,a_regs", [("f32", False), ("f16", False), ("f32", True)])
def test_m64n64k16_f16_kernel(acc_type, a_regs):
    """fence, four wgmma m64n64k16 (one per k-step of a 64x64 fp16 tile; the first with scale-d 0) with descriptors
    of constant and computed addresses (A optionally from registers), commit, wait, through the backend's whole
    pipeline (LLVM O3, ptxas): the descriptor built in IR is the one :meth:`Descriptor.encode` gives, and ptxas
    neither serialises the wgmmas nor injects waits (accumulators stay in the asm's registers)."""
    lay, shape = NVMMASharedLayout(128, 0, 16), (64, 64)
    da = W.operand_descriptor(lay, shape, 0, base=1024)
    db = W.operand_descriptor(NVMMASharedLayout(128, 1, 16), shape, 1, base=9216)

    def body(ctx, out):
        W.fence_proxy_async(ctx)
        ctx.barrier()
        a = W.emit_descriptor(ctx, ctx.c32(1024), da)  # folds to da.encode()
        b = W.emit_descriptor(ctx, W.shared_address(ctx, 9216), db)
        tid = ctx.thread_id()
        regs = [ctx.emit("arith.addi", [tid, ctx.c32(i)], ctx.i32()) for i in range(16)]
        acc = [_zero(ctx, acc_type)] * 32
        if acc_type == "f16":
            acc = W.pack_f16(ctx, acc)
        W.wgmma_fence(ctx)
        for j in range(4):
            a_j = regs[4 * j:4 * j + 4] if a_regs else \
                W.advance_descriptor(ctx, a, W.k_step_offset(lay, shape, 0, j))
            acc = W.wgmma_mma_async(ctx, a_j, W.advance_descriptor(ctx, b, 32 * j), acc, n=64, a_type="f16",
                                    b_type="f16", acc_type=acc_type, scale_d=j > 0, a_from_registers=a_regs)
        W.wgmma_commit(ctx)
        acc = W.wgmma_wait(ctx, 0, acc)
        _store(ctx, out, W.unpack_f16(ctx, acc) if acc_type == "f16" else acc)

    ptx, info = _build("wgmma_f16", body)
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n64k16.{acc_type}.f16.f16") == 4
    assert "wgmma.fence.sync.aligned;" in ptx and "wgmma.commit_group.sync.aligned;" in ptx
    assert "wgmma.wait_group.sync.aligned 0;" in ptx and "fence.proxy.async.shared::cta;" in ptx
    if not a_regs:
        assert str(da.encode()) in ptx
    if info is None:
        pytest.skip("ptxas not installed: PTX only")
    log = info["ptxas_log"]
    assert "serialized" not in log and "injected" not in log, log


COMBOS = [("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"), ("tf32", "tf32", "f32"),
          ("e4m3", "e4m3", "f32"), ("e5m2", "e4m3", "f16"), ("s8", "s8", "s32"), ("u8", "s8", "s32")]


@pytest.mark.parametrize("a_type,b_type,acc_type", COMBOS)
def test_every_n_assembles(a_type, b_type, acc_type):
    """Every instruction N (and A from registers, the transposes where allowed, a run-time scale-d) of a type
    combination assembles with ptxas for sm_90a."""
    from tritium.lowering.utils import cmpi

    if not _ptxas():
        pytest.skip("ptxas not installed")
    ns = [n for n in range(8, 257, 8) if W.valid_n(n, acc_type)]
    sixteen = W.OPERAND_BITS[a_type] == 16

    def body(ctx, out):
        tid = ctx.thread_id()
        desc = W.emit_descriptor(ctx, W.shared_address(ctx, 0), W.Descriptor(0, 16, 1024, 128))
        regs = [ctx.emit("arith.addi", [tid, ctx.c32(i)], ctx.i32()) for i in range(4)]
        pred = cmpi(ctx, "ugt", tid, ctx.c32(7))
        W.wgmma_fence(ctx)
        pos = 0
        for i, n in enumerate(ns):
            variant = i % 4
            kw = dict(n=n, a_type=a_type, b_type=b_type, acc_type=acc_type)
            if variant == 0:  # D = A B (no accumulator read)
                acc = W.wgmma_mma_async(ctx, desc, desc, None, scale_d=False, **kw)
            elif variant == 1:  # A from registers, scale-d decided at run time
                acc = W.wgmma_mma_async(ctx, regs, desc, [_zero(ctx, acc_type)] * (n // 2), a_from_registers=True,
                                        scale_d=pred, trans_b=int(sixteen), **kw)
            else:  # descriptors, transposed where the type allows
                acc = W.wgmma_mma_async(ctx, desc, desc, [_zero(ctx, acc_type)] * (n // 2),
                                        trans_a=int(sixteen and variant == 2), trans_b=int(sixteen), **kw)
            W.wgmma_commit(ctx)
            acc = W.wgmma_wait(ctx, 0, acc)
            if acc_type == "f16":
                acc = W.unpack_f16(ctx, acc)
            _store(ctx, out, [acc[0], acc[-1]], pos)  # every output is a register of the asm anyway
            pos += 2

    ptx, _ = _build("wgmma_all_n", body, fast=True)
    for n in ns:
        assert f".m64n{n}k{W.instr_k(a_type)}.{acc_type}.{a_type}.{b_type} " in ptx, n
