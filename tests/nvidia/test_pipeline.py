"""The cuda ttgir stage runs the whole TTGIR pipeline: conversions left per kernel (as few as Triton leaves),
shared memory placed by the allocation analysis and barriers placed by membar, as seen in the TTGIR and the PTX."""
import re

import pytest
from mlir import ir

from tests.e2e import kernels as K
from tritium.compiler import ASTSource, compile
from tritium.dialects import make_context
from tritium.passes.analysis.allocation import Allocation

from .test_compile import CASES

pytest.importorskip("llvmlite")

D16 = {"tt.divisibility": 16}

# convert_layout ops the cuda TTGIR keeps, per e2e kernel.  Everything not listed: 0.
#   nested: the noinline callee keeps the default layout in its signature (function boundaries are layout
#   anchors, as in Triton), so the caller converts into and out of it.
#   layer_norm: its row stride is not known to be a multiple of 16, so the store of Y is not vectorisable
#   while the loads are (Triton's coalesce likewise limits a store to its own alignment): one conversion
#   before the store.  With an aligned stride (the tutorial's case) there is none.
#   atomics: a tensor atomic on gathered addresses is not vectorisable, so coalesce gives it one element per
#   thread (as Triton does for global writes) while the load feeding its addresses keeps four: one conversion.
EXPECTED_CONVERTS = {"nested": 2, "layer_norm": 1, "atomics": 1}


def _ttgir(fn, sig, ce, attrs=None, num_warps=4):
    return compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target="cuda:90",
                   options={"num_warps": num_warps}, until="ttgir")


def _ptx(fn, sig, ce, attrs=None, num_warps=4):
    return compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target="cuda:90",
                   options={"num_warps": num_warps}, until="ptx")


def _loops(text):
    """Source text of every scf.for / scf.while body (nested ones included)."""
    out = []
    for m in re.finditer(r"scf\.(for|while)", text):
        depth, i = 0, text.index("{", m.end())
        start = i
        while True:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append(text[start:i])
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_conversions_left_per_kernel(name):
    fn, sig, ce = CASES[name]
    # pointers aligned to 16 bytes, as the launcher specialises them: loads get vectorised layouts
    attrs = {k: D16 for k, v in sig.items() if v.startswith("*")}
    text = _ttgir(fn, sig, ce, attrs).asm["ttgir"]
    assert text.count('"ttg.convert_layout"') == EXPECTED_CONVERTS.get(name, 0)
    if name not in EXPECTED_CONVERTS:
        for body in _loops(text):
            assert '"ttg.convert_layout"' not in body
    assert "ttg.shared = " in text  # allocation ran


SOFTMAX_SIG = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
               "n_cols": "i32"}
SOFTMAX_ATTRS = {k: D16 for k in ("output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_cols")}
LN_SIG = {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32",
          "stride": "i32", "N": "i32", "eps": "fp32"}
LN_ATTRS = {k: D16 for k in ("X", "Y", "W", "B", "Mean", "Rstd", "stride", "N")}


def test_layer_norm_fp16_accumulates_in_the_loaded_layout():
    # the tutorial's launch for N = 4096 fp16: BLOCK_SIZE 4096, 8 warps; the accumulators are loop-carried
    text = _ttgir(K._layer_norm_fwd_fused, LN_SIG, dict(BLOCK_SIZE=4096), LN_ATTRS, num_warps=8).asm["ttgir"]
    assert '"ttg.convert_layout"' not in text
    for m in re.finditer(r"scf\.for .*iter_args\(.*-> \(tensor<4096xf32, #ttg\.blocked<array<i32: (\d+)>", text):
        assert m.group(1) == "8"  # carried as 8 contiguous elements per thread, like the fp16 loads
    ptx = _ptx(K._layer_norm_fwd_fused, LN_SIG, dict(BLOCK_SIZE=4096), LN_ATTRS, num_warps=8).asm["ptx"]
    # 16 fp16 per thread = two 128-bit accesses per tensor: X twice, then W, B, X; Y stored twice
    assert ptx.count("ld.global.v4.b32") == 10
    assert ptx.count("st.global.v4.b32") == 2
    # two reductions: 5 butterfly steps each, one shared-memory round trip each, a barrier between them
    assert ptx.count("shfl.sync.bfly.b32") == 10
    assert ptx.count("bar.sync") == 3
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.parametrize("num_warps", [8, 16])
def test_softmax_barriers_and_vectors(num_warps):
    ptx = _ptx(K.softmax_kernel, SOFTMAX_SIG, dict(BLOCK_SIZE=4096), SOFTMAX_ATTRS, num_warps=num_warps).asm["ptx"]
    # max and sum: each writes its warps' partials, one barrier, reads them back; membar's barrier between the two
    # (the sum's write would race with the max's reads)
    assert ptx.count("bar.sync") == 3
    assert ptx.count("shfl.sync.bfly.b32") == 10
    assert ptx.count("ld.global.v4.b32") == 4096 // (num_warps * 32 * 4)
    assert ptx.count("st.global.v4.b32") == 4096 // (num_warps * 32 * 4)
    assert "ex2.approx" in ptx
    # the partials of all warps are read back as 128-bit shared loads
    assert ptx.count("ld.shared.v4") == 2 * num_warps // 4


def test_shared_memory_of_two_live_buffers_does_not_overlap():
    T16 = "tensor<1024xf16, #A>"
    MD = "!ttg.memdesc<array<i64: 1024>, f16, #ttg.shared<1 : i32, 1 : i32, 1 : i32, array<i32: 0>>>"
    src = f"""
#A = #ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>
#C = #ttg.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
func.func public @k(%t: tensor<1024xf32, #A>, %a: {T16}) {{
  %m1 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %cv = "ttg.convert_layout"(%t) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  %x = "ttg.local_load"(%m1) : ({MD}) -> {T16}
  "tt.print"(%x, %cv) {{prefix = "", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>}} : ({T16}, tensor<1024xf32, #C>) -> ()
  return
}}
}}
"""
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        alloc = Allocation(m.operation)
        (a, b) = sorted(alloc.buffers, key=lambda x: x.offset)
        assert a.overlaps_in_time(b)
        assert a.offset + a.size <= b.offset
        assert alloc.total == a.size + b.size


@pytest.mark.parametrize("name", ["softmax_persistent", "layer_norm", "reduce_argmax_0", "tuple_minmax"])
def test_buffers_live_together_are_disjoint(name):
    fn, sig, ce = CASES[name]
    text = _ttgir(fn, sig, ce).asm["ttgir"]
    with make_context():
        m = ir.Module.parse(text)
        alloc = Allocation(m.operation)
        bufs = list(alloc.buffers)
        for i, x in enumerate(bufs):
            for y in bufs[i + 1:]:
                if x.overlaps_in_time(y):
                    assert x.offset + x.size <= y.offset or y.offset + y.size <= x.offset


def test_the_lowering_uses_allocation_offsets():
    # a conversion placed at byte 256 by the allocation is lowered at global_smem + 256, with one barrier
    # (between its write and its read); the module's ttg.shared is launched with
    A = "#ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
    C = "#ttg.blocked<array<i32: 1>, array<i32: 1>, array<i32: 4>, array<i32: 0>>"
    T = "tensor<128x!tt.ptr<f32>, #A>"
    src = f"""
#A = {A}
#C = {C}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.shared = 768 : i32}} {{
func.func public @k(%p: !tt.ptr<f32>) {{
  %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32, #A>
  %f = arith.sitofp %r : tensor<128xi32, #A> to tensor<128xf32, #A>
  %cv = "ttg.convert_layout"(%f) {{allocation.offset = 256 : i32, allocation.size = 512 : i32}} : (tensor<128xf32, #A>) -> tensor<128xf32, #C>
  %back = "ttg.convert_layout"(%cv) : (tensor<128xf32, #C>) -> tensor<128xf32, #A>
  %s = "tt.splat"(%p) : (!tt.ptr<f32>) -> {T}
  %ps = "tt.addptr"(%s, %r) : ({T}, tensor<128xi32, #A>) -> {T}
  "tt.store"(%ps, %back) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xf32, #A>) -> ()
  return
}}
}}
"""
    from tritium.compiler.stages import Handoff
    from tritium_nvidia.compiler import CUDACompiler

    class Opt:
        num_warps = 4
        num_ctas = 1
        enable_fp_fusion = True
        maxnreg = None
        arch = None

    md = {"target": {"backend": "cuda", "arch": 90}}
    with make_context():
        text = ir.Module.parse(src).operation.get_asm()
    llir = CUDACompiler.make_llir(text, md, Opt(), Handoff(), 90)
    assert "getelementptr i8, ptr addrspace(3) @global_smem, i32 256" in llir \
        or "getelementptr inbounds i8, ptr addrspace(3) @global_smem, i32 256" in llir \
        or "i64 256" in llir, llir
    # the second conversion has no allocation: bracketed, past the 768 allocated bytes (512 more)
    assert md["shared"] == 768 + 512
    # the placed conversion has one barrier; the unplaced one is bracketed (before, between, after)
    assert len(re.findall(r"call void @llvm\.nvvm\.barrier", llir)) == 4
