"""Kernels given as IR files (``tritium.compile("k.ttgir")``), in tritium's text or in Triton's custom assembly
(:mod:`tritium.dialects.triton_asm`, :mod:`tritium.compiler.ir_source`).

On this machine: the translation of Triton's layouts and ops, compiles for sm_90 (to PTX and cubin), TTIR in
Triton's form (as Triton 3.6 dumps it) run on the interpreter against NumPy, and the errors.  The GPU runs of the
same generators (layout conversions through registers and shared memory, checked element by element) are in
tests/gpu/test_ir_source_gpu.py.
"""
import itertools

import numpy as np
import pytest

import tritium
from tritium.dialects import layouts as L
from tritium.dialects.triton_asm import TritonAsmError, to_tritium, translate_types

# --------------------------------------------------------------------------------------------------------------
# Triton's layout syntax (as its printer and its tests write it) and tritium's
# --------------------------------------------------------------------------------------------------------------


def blocked(spt, tpw, wpc, order):
    return (f"#ttg.blocked<{{sizePerThread = {list(spt)}, threadsPerWarp = {list(tpw)}, warpsPerCTA = {list(wpc)}, "
            f"order = {list(order)}, CTAsPerCGA = [1, 1], CTASplitNum = [1, 1], CTAOrder = [1, 0]}}>")


def mma(version, wpc, instr):
    return (f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, warpsPerCTA = {list(wpc)}, "
            f"CTAsPerCGA = [1, 1], CTASplitNum = [1, 1], CTAOrder = [1, 0], instrShape = {list(instr)}}}>")


def dot_op(idx, parent, k_width):
    return f"#ttg.dot_op<{{opIdx = {idx}, parent = {parent}, kWidth = {k_width}}}>"


def sliced(dim, parent):
    return f"#ttg.slice<{{dim = {dim}, parent = {parent}}}>"


def swizzled(vec, per_phase, max_phase, order):
    return (f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = {max_phase}, "
            f"order = {list(order)}}}>")


#: layouts of a 2-D tensor with 4 warps (the shapes below are multiples of their tiles or replicate)
LAYOUTS_2D = {
    "blocked_row": blocked([1, 4], [8, 4], [4, 1], [1, 0]),
    "blocked_col": blocked([4, 1], [4, 8], [1, 4], [0, 1]),
    "blocked_2x2": blocked([2, 2], [4, 8], [2, 2], [1, 0]),
    "mma2": mma(2, [2, 2], [16, 8]),
    "mma2_tall": mma(2, [4, 1], [16, 8]),
    "mma3": mma(3, [4, 1], [16, 32, 16]),
    "mma3_wide": mma(3, [4, 1], [16, 64, 16]),
    "dot_a": dot_op(0, mma(2, [2, 2], [16, 8]), 2),
    "dot_b": dot_op(1, mma(2, [4, 1], [16, 8]), 2),
    "dot_a8": dot_op(0, mma(2, [4, 1], [16, 8]), 8),
    # Triton's test_reduce_layouts' linear layout (a lane basis of zeros: two lanes hold each element)
    "linear": ("#ttg.linear<{register = [[0, 16], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0]], lane = [[0, 0], [0, 1], "
               "[0, 2], [0, 4], [0, 8]], warp = [[32, 0], [0, 32]], block = []}>"),
    # 2-D slices of the operands of batched (3-D) dots: a batch dim in mma v3 (as a layout) and v2
    "slice3_a": sliced(1, dot_op(0, "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1, 1], "
                                    "instrShape = [16, 32, 16]}>", 2)),
    "slice3_b": sliced(1, dot_op(1, "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1, 1], "
                                    "instrShape = [1, 16, 8]}>", 2)),
}
SHARED = {"none": None, "swz_1_1_1": swizzled(1, 1, 1, [1, 0]), "swz_4_2_4": swizzled(4, 2, 4, [1, 0]),
          "swz_col": swizzled(1, 1, 1, [0, 1])}


def convert2d_ir(m, n, src, dst, shared=None, num_warps=4):
    """A kernel in Triton's TTGIR: load an ``m x n`` fp16 tensor in ``src``, carry it and its offsets (through a
    shared buffer of layout ``shared``, when given) into ``dst``, store it there."""
    via = "" if shared is None else f"""
    %a0 = ttg.local_alloc %off : (tensor<{m}x{n}xi32, #src>) -> !ttg.memdesc<{m}x{n}xi32, #sh, #smem>
    %a1 = ttg.local_load %a0 : !ttg.memdesc<{m}x{n}xi32, #sh, #smem> -> tensor<{m}x{n}xi32, #src>
    %b0 = ttg.local_alloc %val : (tensor<{m}x{n}xf16, #src>) -> !ttg.memdesc<{m}x{n}xf16, #sh, #smem, mutable>
    %b1 = ttg.local_load %b0 : !ttg.memdesc<{m}x{n}xf16, #sh, #smem, mutable> -> tensor<{m}x{n}xf16, #src>"""
    off, val = ("%off", "%val") if shared is None else ("%a1", "%b1")
    return f"""#src = {src}
#dst = {dst}
{'' if shared is None else f'#sh = {shared}'}
#smem = #ttg.shared_memory
module attributes {{"ttg.num-warps" = {num_warps} : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @convert2d(%in: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}, %out: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}) {{
    %stride = arith.constant dense<{n}> : tensor<{m}x1xi32, #src>
    %r = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, #ttg.slice<{{dim = 1, parent = #src}}>>
    %c = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, #ttg.slice<{{dim = 0, parent = #src}}>>
    %r2 = tt.expand_dims %r {{axis = 1 : i32}} : tensor<{m}xi32, #ttg.slice<{{dim = 1, parent = #src}}>> -> tensor<{m}x1xi32, #src>
    %rs = arith.muli %r2, %stride : tensor<{m}x1xi32, #src>
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<{n}xi32, #ttg.slice<{{dim = 0, parent = #src}}>> -> tensor<1x{n}xi32, #src>
    %rb = tt.broadcast %rs : tensor<{m}x1xi32, #src> -> tensor<{m}x{n}xi32, #src>
    %cb = tt.broadcast %c2 : tensor<1x{n}xi32, #src> -> tensor<{m}x{n}xi32, #src>
    %off = arith.addi %rb, %cb : tensor<{m}x{n}xi32, #src>
    %pin = tt.splat %in : !tt.ptr<f16> -> tensor<{m}x{n}x!tt.ptr<f16>, #src>
    %pin2 = tt.addptr %pin, %off : tensor<{m}x{n}x!tt.ptr<f16>, #src>, tensor<{m}x{n}xi32, #src>
    %val = tt.load %pin2 : tensor<{m}x{n}x!tt.ptr<f16>, #src>{via}
    %off2 = ttg.convert_layout {off} : tensor<{m}x{n}xi32, #src> -> tensor<{m}x{n}xi32, #dst>
    %val2 = ttg.convert_layout {val} : tensor<{m}x{n}xf16, #src> -> tensor<{m}x{n}xf16, #dst>
    %pout = tt.splat %out : !tt.ptr<f16> -> tensor<{m}x{n}x!tt.ptr<f16>, #dst>
    %pout2 = tt.addptr %pout, %off2 : tensor<{m}x{n}x!tt.ptr<f16>, #dst>, tensor<{m}x{n}xi32, #dst>
    tt.store %pout2, %val2 : tensor<{m}x{n}x!tt.ptr<f16>, #dst>
    tt.return
  }}
}}
"""


def convert1d_ir(m, src, src_dim, dst, dst_dim, elem="i32"):
    """A 1-D kernel in Triton's TTGIR: ``m`` values (``elem``: i32, or i1 read as i8 and written as i32) loaded in a
    slice of ``src``, converted to a slice of ``dst``, stored."""
    s = f"#ttg.slice<{{dim = {src_dim}, parent = #src}}>"
    d = f"#ttg.slice<{{dim = {dst_dim}, parent = #dst}}>"
    load_t = "i8" if elem == "i1" else "i32"
    body = f"""
    %p = tt.splat %in : !tt.ptr<{load_t}> -> tensor<{m}x!tt.ptr<{load_t}>, {s}>
    %r = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, {s}>
    %p2 = tt.addptr %p, %r : tensor<{m}x!tt.ptr<{load_t}>, {s}>, tensor<{m}xi32, {s}>
    %v = tt.load %p2 : tensor<{m}x!tt.ptr<{load_t}>, {s}>"""
    if elem == "i1":
        body += f"""
    %zero = arith.constant dense<0> : tensor<{m}xi8, {s}>
    %b = arith.cmpi ne, %v, %zero : tensor<{m}xi8, {s}>
    %b2 = ttg.convert_layout %b : tensor<{m}xi1, {s}> -> tensor<{m}xi1, {d}>
    %v2 = arith.extui %b2 : tensor<{m}xi1, {d}> to tensor<{m}xi32, {d}>"""
    else:
        body += f"""
    %v2 = ttg.convert_layout %v : tensor<{m}xi32, {s}> -> tensor<{m}xi32, {d}>"""
    return f"""#src = {src}
#dst = {dst}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @convert1d(%in: !tt.ptr<{load_t}> {{tt.divisibility = 16 : i32}}, %out: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}) {{{body}
    %q = tt.splat %out : !tt.ptr<i32> -> tensor<{m}x!tt.ptr<i32>, {d}>
    %r2 = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, {d}>
    %q2 = tt.addptr %q, %r2 : tensor<{m}x!tt.ptr<i32>, {d}>, tensor<{m}xi32, {d}>
    tt.store %q2, %v2 : tensor<{m}x!tt.ptr<i32>, {d}>
    tt.return
  }}
}}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# --------------------------------------------------------------------------------------------------------------
# translation
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("triton_text, expected", [
    (blocked([1, 4], [8, 4], [4, 1], [1, 0]), L.BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))),
    (sliced(1, blocked([2, 1], [4, 8], [2, 2], [0, 1])),
     L.SliceLayout(1, L.BlockedLayout((2, 1), (4, 8), (2, 2), (0, 1)))),
    (mma(2, [2, 2], [16, 8]), L.NvidiaMmaLayout(2, (2, 2), (16, 8))),
    (mma(3, [4, 2], [16, 64, 16]), L.NvidiaMmaLayout(3, (4, 2), (16, 64, 16))),
    (dot_op(1, mma(2, [4, 1], [16, 8]), 4), L.DotOperandLayout(1, L.NvidiaMmaLayout(2, (4, 1), (16, 8)), 4)),
    (swizzled(8, 1, 8, [1, 0]), L.SharedLayout(8, 1, 8, (1, 0))),
    ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
     L.NVMMASharedLayout(128, 0, 16)),
    ("#ttg.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [32, 32], "
     "isTransposed = true}>", L.AmdMfmaLayout(3, (2, 2), (32, 32), 1)),
])
def test_layouts(triton_text, expected):
    assert translate_types(triton_text, {}) == expected.to_str()
    # a tensor type with the layout by alias, as Triton prints it
    assert translate_types("tensor<64x64xf16, #a>", {"a": expected}) == f"tensor<64x64xf16, {expected.to_str()}>"


def test_linear_layout_fitted_to_the_tensor():
    lay = L.parse_layout(translate_types(LAYOUTS_2D["linear"], {}))
    assert isinstance(lay, L.LinearEncoding) and lay.span() == (64, 64) and lay.num_warps == 4
    assert L.parse_layout(lay.to_str()) == lay
    for shape in [(64, 64), (128, 16), (16, 128), (32, 32)]:
        ll = lay.linear(shape)
        owners = {}
        for w in range(4):
            for ln in range(32):
                for e in ll.elements(w, ln):
                    assert all(0 <= x < n for x, n in zip(e, shape))
                    owners[e] = owners.get(e, 0) + 1
        assert len(owners) == shape[0] * shape[1]  # every element held, by as many threads each
        assert len(set(owners.values())) == 1


def test_memdesc_and_locations():
    aliases = {"sh": L.SharedLayout(4, 2, 4, (1, 0))}
    from tritium.dialects.triton_asm import _Reader

    aliases["smem"] = _Reader("#ttg.shared_memory", {}).value()
    assert translate_types("!ttg.memdesc<2x32x64xbf16, #sh, #smem, mutable>", aliases) == \
        "!ttg.memdesc<array<i64: 2, 32, 64>, bf16, #ttg.shared<4 : i32, 2 : i32, 4 : i32, array<i32: 1, 0>>>"
    text = to_tritium('#loc = loc("k.py":1:0)\nmodule {\n  tt.func public @k(%a: i32 loc("a"(#loc))) {\n'
                      '    tt.return loc(#loc1)\n  } loc(#loc)\n} loc(#loc)\n#loc1 = loc("k.py":2:4)\n')
    assert "loc" not in text and "func.func public @k(%a: i32)" in text and "func.return" in text


def test_ops_generic_form():
    text = to_tritium("""module {
  tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id y : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %s = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %a = tt.addptr %s, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %m = tt.splat %n : i32 -> tensor<64xi32>
    %c = arith.cmpi slt, %r, %m : tensor<64xi32>
    %z = arith.constant dense<0.0> : tensor<64xf32>
    %v = tt.load %a, %c, %z cacheModifier = cg evictionPolicy = evict_last {isVolatile = true} : tensor<64x!tt.ptr<f32>>
    tt.store %a, %v, %c cacheModifier = cs : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}""")
    assert '"tt.get_program_id"() {axis = 1 : i32} : () -> i32' in text
    assert ('"tt.load"(%a, %c, %z) {cache = 3 : i32, evict = 3 : i32, isVolatile = true, '
            'operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<64x!tt.ptr<f32>>, tensor<64xi1>, tensor<64xf32>) '
            '-> tensor<64xf32>') in text
    assert ('"tt.store"(%a, %v, %c) {cache = 5 : i32, evict = 1 : i32}'
            ' : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> ()') in text
    from mlir import ir

    from tritium.dialects import make_context

    ir.Module.parse(text, make_context()).operation.verify()


def test_unsupported_names_the_line(tmp_path):
    text = convert1d_ir(64, blocked([1, 4], [8, 4], [4, 1], [1, 0]), 0, blocked([1, 4], [8, 4], [4, 1], [1, 0]), 1)
    text = text.replace("#src = #ttg.blocked", "#src = #ttg.amd_wmma<{version = 1}>\n#unused = #ttg.blocked", 1)
    with pytest.raises(TritonAsmError, match=r"line 1: #ttg.amd_wmma: missing parameter 'warpsPerCTA'"):
        tritium.compile(write(tmp_path, "k.ttgir", text), target="cuda:90")
    text = text.replace("#ttg.amd_wmma<{version = 1}>", "#ttg.linear<{register = [[1]], lane = [], warp = [], "
                                                       "block = [[2]]}>")
    with pytest.raises(TritonAsmError, match=r"line 1: #ttg.linear with block bases"):
        tritium.compile(write(tmp_path, "k.ttgir", text), target="cuda:90")
    bad = "module {\n  tt.func public @k(%p: !tt.ptr<f32>) {\n    %x = tt.histogram %p : !tt.ptr<f32> -> i32\n" \
          "    tt.return\n  }\n}\n"
    with pytest.raises(TritonAsmError, match=r"line 3: the op tt.histogram .* not supported"):
        tritium.compile(write(tmp_path, "k2.ttir", bad), target="cuda:90")
    with pytest.raises(tritium.errors.TritiumError, match="multiples of 4 warps|CTAsPerCGA"):
        to_tritium(f"#a = {blocked([1], [32], [4], [0]).replace('CTAsPerCGA = [1, 1]', 'CTAsPerCGA = [2, 1]')}\n")


def test_interpreter_has_no_ttgir_stage(tmp_path):
    path = write(tmp_path, "k.ttgir", convert2d_ir(16, 16, LAYOUTS_2D["blocked_row"], LAYOUTS_2D["mma2"]))
    with pytest.raises(tritium.errors.StageNotImplemented, match="no stage 'ttgir'"):
        tritium.compile(path, target="cpu")


# --------------------------------------------------------------------------------------------------------------
# compiles for sm_90 (values: tests/gpu/test_ir_source_gpu.py)
# --------------------------------------------------------------------------------------------------------------

PAIRS_2D = [(s, d) for s, d in itertools.permutations(LAYOUTS_2D, 2) if not (s.startswith("dot") and d.startswith("dot"))]


@pytest.mark.parametrize("src,dst", PAIRS_2D[::7])
@pytest.mark.parametrize("shape", [(64, 64), (128, 32)])
def test_convert2d_compiles_sm90(tmp_path, src, dst, shape):
    k = tritium.compile(write(tmp_path, "c.ttgir", convert2d_ir(*shape, LAYOUTS_2D[src], LAYOUTS_2D[dst])),
                        target="cuda:90")
    assert list(k.asm) == ["ttgir", "llir", "ptx", "cubin"]
    assert k.signature == [("in", "*fp16"), ("out", "*fp16")] and k.metadata["num_warps"] == 4
    assert k.name == "convert2d" and ".entry convert2d" in k.asm["ptx"]


def test_shared_round_trip_compiles_sm90(tmp_path):
    k = tritium.compile(write(tmp_path, "c.ttgir", convert2d_ir(64, 64, LAYOUTS_2D["blocked_row"], LAYOUTS_2D["mma2"],
                                                                SHARED["swz_4_2_4"])), target="cuda:90")
    assert k.metadata["shared"] >= 64 * 64 * 4  # the i32 buffer at least; allocation ran on the hand-written TTGIR
    assert "bar.sync" in k.asm["ptx"] and "st.shared" in k.asm["ptx"]


#: pairs of mma layouts whose conversion moves data between warps, with their warp counts
MMA_PAIRS = [(mma(2, [1, 4], [16, 8]), mma(2, [4, 1], [16, 8]), 4), (mma(2, [2, 8], [16, 8]), mma(2, [8, 2], [16, 8]), 16),
             (mma(3, [1, 4], [16, 32, 32]), mma(3, [4, 1], [16, 64, 32]), 4),
             (mma(3, [2, 8], [16, 64, 32]), mma(3, [8, 2], [16, 32, 32]), 16)]


@pytest.mark.parametrize("pair", range(len(MMA_PAIRS)))
def test_large_conversion_in_rounds_sm90(tmp_path, pair):
    """A 256x256 conversion (256 KiB of i32 offsets through scratch in one round, more than an SM has) goes in
    rounds of rows through at most 64 KiB."""
    src, dst, warps = MMA_PAIRS[pair]
    k = tritium.compile(write(tmp_path, "c.ttgir", convert2d_ir(256, 256, src, dst, num_warps=warps)),
                        target="cuda:90")
    from tritium.dialects.layouts import convert_rounds

    lay = [L.parse_layout(translate_types(t, {})) for t in (src, dst)]
    k32 = convert_rounds(*(x.linear((256, 256)) for x in lay), 4)
    # [8, 2] warps cover 128 rows: only the top row bit is a register's, two rounds of 128 KiB
    assert k32 == (1 if pair in (1, 3) else 2)
    assert k.metadata["shared"] <= (256 * 256 * 4) >> k32
    assert k.asm["ptx"].count("bar.sync") >= 2 * (1 << k32)  # a barrier between writes and reads of every round
    assert convert_rounds(*(x.linear((64, 64)) for x in lay), 4) == 0  # 16 KiB: one round


def test_own_ttgir_round_trip(tmp_path):
    """A kernel's own TTGIR text (``asm["ttgir"]``) compiled from a file gives the same PTX."""
    import tritium.language as tl

    @tritium.jit
    def scale(x, y, n, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + o, tl.load(x + o, mask=o < n) * 3.0, mask=o < n)

    k = tritium.compile(tritium.ASTSource(scale, {"x": "*fp32", "y": "*fp32", "n": "i32"}, {"B": 256}),
                        target="cuda:90")
    k2 = tritium.compile(write(tmp_path, "scale.ttgir", k.asm["ttgir"]), target="cuda:90")
    assert k2.asm["ptx"] == k.asm["ptx"]
    assert k2.signature == [("arg0", "*fp32"), ("arg1", "*fp32"), ("arg2", "i32")]


# --------------------------------------------------------------------------------------------------------------
# TTIR as Triton 3.6 writes it, on the interpreter
# --------------------------------------------------------------------------------------------------------------

#: Triton 3.6's TTIR of a masked ``out = 2 * x + y`` (its printer's output, locations included, shortened)
ADD_TTIR = """#loc = loc("/tmp/gen.py":5:0)
#loc16 = loc("x_ptr"(#loc))
module {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %y_ptr: !tt.ptr<f32> loc("y_ptr"(#loc)), %out_ptr: !tt.ptr<f32> loc("out_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %cst = arith.constant dense<2.000000e+00> : tensor<128xf32> loc(#loc1)
    %x = arith.constant dense<0.000000e+00> : tensor<128xf32> loc(#loc20)
    %c128_i32 = arith.constant 128 : i32 loc(#loc3)
    %pid = tt.get_program_id x : i32 loc(#loc21)
    %offs = arith.muli %pid, %c128_i32 : i32 loc(#loc22)
    %offs_0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32> loc(#loc23)
    %offs_1 = tt.splat %offs : i32 -> tensor<128xi32> loc(#loc24)
    %offs_2 = arith.addi %offs_1, %offs_0 : tensor<128xi32> loc(#loc24)
    %m = tt.splat %n : i32 -> tensor<128xi32> loc(#loc25)
    %m_3 = arith.cmpi slt, %offs_2, %m : tensor<128xi32> loc(#loc25)
    %x_4 = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc26)
    %x_5 = tt.addptr %x_4, %offs_2 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc26)
    %x_6 = tt.load %x_5, %m_3, %x : tensor<128x!tt.ptr<f32>> loc(#loc20)
    %y = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc27)
    %y_7 = tt.addptr %y, %offs_2 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc27)
    %y_8 = tt.load %y_7, %m_3 : tensor<128x!tt.ptr<f32>> loc(#loc28)
    %0 = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc12)
    %1 = tt.addptr %0, %offs_2 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc12)
    %2 = arith.mulf %x_6, %cst : tensor<128xf32> loc(#loc1)
    %3 = arith.addf %2, %y_8 : tensor<128xf32> loc(#loc13)
    tt.store %1, %3, %m_3 : tensor<128x!tt.ptr<f32>> loc(#loc14)
    tt.return loc(#loc15)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/tmp/gen.py":11:33)
#loc20 = loc("x"(#loc2))
"""

#: Triton 3.6's TTIR of a transposing copy (2-D masks, expand_dims, broadcast, trans, a cast)
T2D_TTIR = """module {
  tt.func public @t2d(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f16>, %M: i32, %N: i32, %stride: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %c32_i32 = arith.constant 32 : i32
    %rm = tt.get_program_id x : i32
    %rm_0 = arith.muli %rm, %c32_i32 : i32
    %rm_1 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %rm_2 = tt.splat %rm_0 : i32 -> tensor<32xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<32xi32>
    %rn = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %mask = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %mask_4 = tt.splat %M : i32 -> tensor<32x1xi32>
    %mask_5 = arith.cmpi slt, %mask, %mask_4 : tensor<32x1xi32>
    %mask_6 = tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %mask_7 = tt.splat %N : i32 -> tensor<1x16xi32>
    %mask_8 = arith.cmpi slt, %mask_6, %mask_7 : tensor<1x16xi32>
    %mask_9 = tt.broadcast %mask_5 : tensor<32x1xi1> -> tensor<32x16xi1>
    %mask_10 = tt.broadcast %mask_8 : tensor<1x16xi1> -> tensor<32x16xi1>
    %mask_11 = arith.andi %mask_9, %mask_10 : tensor<32x16xi1>
    %x = tt.splat %stride : i32 -> tensor<32x1xi32>
    %x_12 = arith.muli %mask, %x : tensor<32x1xi32>
    %x_13 = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>>
    %x_14 = tt.addptr %x_13, %x_12 : tensor<32x1x!tt.ptr<f32>>, tensor<32x1xi32>
    %x_15 = tt.broadcast %x_14 : tensor<32x1x!tt.ptr<f32>> -> tensor<32x16x!tt.ptr<f32>>
    %x_16 = tt.broadcast %mask_6 : tensor<1x16xi32> -> tensor<32x16xi32>
    %x_17 = tt.addptr %x_15, %x_16 : tensor<32x16x!tt.ptr<f32>>, tensor<32x16xi32>
    %x_18 = tt.load %x_17, %mask_11, %cst : tensor<32x16x!tt.ptr<f32>>
    %y = tt.trans %x_18 {order = array<i32: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
    %0 = tt.expand_dims %rn {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %1 = tt.splat %M : i32 -> tensor<16x1xi32>
    %2 = arith.muli %0, %1 : tensor<16x1xi32>
    %3 = tt.splat %out_ptr : !tt.ptr<f16> -> tensor<16x1x!tt.ptr<f16>>
    %4 = tt.addptr %3, %2 : tensor<16x1x!tt.ptr<f16>>, tensor<16x1xi32>
    %5 = tt.expand_dims %rm_3 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %6 = tt.broadcast %4 : tensor<16x1x!tt.ptr<f16>> -> tensor<16x32x!tt.ptr<f16>>
    %7 = tt.broadcast %5 : tensor<1x32xi32> -> tensor<16x32xi32>
    %8 = tt.addptr %6, %7 : tensor<16x32x!tt.ptr<f16>>, tensor<16x32xi32>
    %9 = arith.truncf %y : tensor<16x32xf32> to tensor<16x32xf16>
    %10 = tt.trans %mask_11 {order = array<i32: 1, 0>} : tensor<32x16xi1> -> tensor<16x32xi1>
    tt.store %8, %9, %10 : tensor<16x32x!tt.ptr<f16>>
    tt.return
  }
}
"""


@pytest.mark.parametrize("n", [1000, 128, 77])
def test_triton_ttir_on_the_interpreter(tmp_path, n):
    torch = pytest.importorskip("torch")
    k = tritium.compile(write(tmp_path, "add.ttir", ADD_TTIR), target="cpu")
    assert k.signature == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32")]
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    out = torch.full((n,), 7.0)
    k[((n + 127) // 128, 1, 1)](x, y, out, n)
    np.testing.assert_allclose(out.numpy(), (2 * x + y).numpy(), rtol=1e-6)


@pytest.mark.parametrize("m,n", [(50, 13), (64, 16), (7, 3)])
def test_triton_ttir_transpose_on_the_interpreter(tmp_path, m, n):
    torch = pytest.importorskip("torch")
    k = tritium.compile(write(tmp_path, "t2d.ttir", T2D_TTIR), target="cpu")
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(m))
    out = torch.full((n, m), -1.0, dtype=torch.float16)
    k[((m + 31) // 32, 1, 1)](x, out, m, n, n)
    np.testing.assert_array_equal(out.numpy(), x.t().half().numpy())


def test_triton_ttir_compiles_sm90(tmp_path):
    k = tritium.compile(write(tmp_path, "t2d.ttir", T2D_TTIR), target="cuda:90")
    assert list(k.asm) == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    assert ".entry t2d" in k.asm["ptx"]


#: Triton 3.6's TTIR (locations dropped but for one block's) of a row sum, a row cumsum and a column argmax: the
#: combine regions of ``tt.reduce`` / ``tt.scan`` in Triton's generic form, one with two operands and results
RED_TTIR = """module {
  tt.func public @red(%x_ptr: !tt.ptr<f32>, %s_ptr: !tt.ptr<f32>, %c_ptr: !tt.ptr<f32>, %a_ptr: !tt.ptr<i32>) attributes {noinline = false} {
    %r = arith.constant dense<32> : tensor<16x1xi32>
    %r_0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r_1 = tt.expand_dims %r_0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_2 = arith.muli %r_1, %r : tensor<16x1xi32>
    %r_3 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %r_4 = tt.expand_dims %r_3 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %r_5 = tt.broadcast %r_2 : tensor<16x1xi32> -> tensor<16x32xi32>
    %r_6 = tt.broadcast %r_4 : tensor<1x32xi32> -> tensor<16x32xi32>
    %r_7 = arith.addi %r_5, %r_6 : tensor<16x32xi32>
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
    %x_8 = tt.addptr %x, %r_7 : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
    %x_9 = tt.load %x_8 : tensor<16x32x!tt.ptr<f32>>
    %0 = tt.splat %s_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %1 = tt.addptr %0, %r_0 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %2 = "tt.reduce"(%x_9) <{axis = 1 : i32}> ({
    ^bb0(%arg4: f32 loc(callsite(#loc12 at #loc11)), %arg5: f32 loc(callsite(#loc12 at #loc11))):
      %10 = arith.addf %arg4, %arg5 : f32
      tt.reduce.return %10 : f32
    }) : (tensor<16x32xf32>) -> tensor<16xf32>
    tt.store %1, %2 : tensor<16x!tt.ptr<f32>>
    %3 = tt.splat %c_ptr : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %r_7 : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
    %5 = "tt.scan"(%x_9) <{axis = 1 : i32, reverse = false}> ({
    ^bb0(%arg4: f32, %arg5: f32):
      %10 = arith.addf %arg4, %arg5 : f32
      tt.scan.return %10 : f32
    }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    tt.store %4, %5 : tensor<16x32x!tt.ptr<f32>>
    %6 = tt.splat %a_ptr : !tt.ptr<i32> -> tensor<32x!tt.ptr<i32>>
    %7 = tt.addptr %6, %r_3 : tensor<32x!tt.ptr<i32>>, tensor<32xi32>
    %8 = tt.broadcast %r_1 : tensor<16x1xi32> -> tensor<16x32xi32>
    %9:2 = "tt.reduce"(%x_9, %8) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32 loc(callsite(#loc12 at #loc49)), %arg5: i32 loc(callsite(#loc12 at #loc49)), %arg6: f32 loc(callsite(#loc12 at #loc49)), %arg7: i32 loc(callsite(#loc12 at #loc49))):
      %tie = arith.cmpf oeq, %arg4, %arg6 : f32
      %tie_10 = arith.cmpi slt, %arg5, %arg7 : i32
      %tie_11 = arith.andi %tie, %tie_10 : i1
      %gt = arith.cmpf ogt, %arg4, %arg6 : f32
      %gt_12 = arith.ori %gt, %tie_11 : i1
      %v_ret = arith.select %gt_12, %arg4, %arg6 : f32
      %i_ret = arith.select %gt_12, %arg5, %arg7 : i32
      tt.reduce.return %v_ret, %i_ret : f32, i32
    }) : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<32xf32>, tensor<32xi32>)
    tt.store %7, %9#1 : tensor<32x!tt.ptr<i32>>
    tt.return
  }
}
"""

#: the same kernel's TTGIR as Triton 3.6 writes it (its layouts, a convert_layout of the reduction's result)
RED_TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @red(%x_ptr: !tt.ptr<f32>, %s_ptr: !tt.ptr<f32>, %c_ptr: !tt.ptr<f32>, %a_ptr: !tt.ptr<i32>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<16x1xi32, #blocked>
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #blocked1>
    %r_0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %r_1 = tt.expand_dims %r_0 {axis = 1 : i32} : tensor<16xi32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<16x1xi32, #blocked>
    %r_2 = arith.muli %r_1, %cst : tensor<16x1xi32, #blocked>
    %r_3 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked1>
    %r_4 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 0, parent = #blocked}>>
    %r_5 = tt.expand_dims %r_4 {axis = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 0, parent = #blocked}>> -> tensor<1x32xi32, #blocked>
    %r_6 = tt.broadcast %r_2 : tensor<16x1xi32, #blocked> -> tensor<16x32xi32, #blocked>
    %r_7 = tt.broadcast %r_5 : tensor<1x32xi32, #blocked> -> tensor<16x32xi32, #blocked>
    %r_8 = arith.addi %r_6, %r_7 : tensor<16x32xi32, #blocked>
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>, #blocked>
    %x_9 = tt.addptr %x, %r_8 : tensor<16x32x!tt.ptr<f32>, #blocked>, tensor<16x32xi32, #blocked>
    %x_10 = tt.load %x_9 : tensor<16x32x!tt.ptr<f32>, #blocked>
    %0 = tt.splat %s_ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>, #blocked1>
    %1 = tt.addptr %0, %r : tensor<16x!tt.ptr<f32>, #blocked1>, tensor<16xi32, #blocked1>
    %2 = "tt.reduce"(%x_10) <{axis = 1 : i32}> ({
    ^bb0(%arg4: f32 loc(callsite(#loc1 at #loc12)), %arg5: f32 loc(callsite(#loc1 at #loc12))):
      %12 = arith.addf %arg4, %arg5 : f32
      tt.reduce.return %12 : f32
    }) : (tensor<16x32xf32, #blocked>) -> tensor<16xf32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %3 = ttg.convert_layout %2 : tensor<16xf32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<16xf32, #blocked1>
    tt.store %1, %3 : tensor<16x!tt.ptr<f32>, #blocked1>
    %4 = tt.splat %c_ptr : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>, #blocked>
    %5 = tt.addptr %4, %r_8 : tensor<16x32x!tt.ptr<f32>, #blocked>, tensor<16x32xi32, #blocked>
    %6 = "tt.scan"(%x_10) <{axis = 1 : i32, reverse = false}> ({
    ^bb0(%arg4: f32, %arg5: f32):
      %12 = arith.addf %arg4, %arg5 : f32
      tt.scan.return %12 : f32
    }) : (tensor<16x32xf32, #blocked>) -> tensor<16x32xf32, #blocked>
    tt.store %5, %6 : tensor<16x32x!tt.ptr<f32>, #blocked>
    %7 = tt.splat %a_ptr : !tt.ptr<i32> -> tensor<32x!tt.ptr<i32>, #blocked1>
    %8 = tt.addptr %7, %r_3 : tensor<32x!tt.ptr<i32>, #blocked1>, tensor<32xi32, #blocked1>
    %9 = tt.broadcast %r_1 : tensor<16x1xi32, #blocked> -> tensor<16x32xi32, #blocked>
    %10:2 = "tt.reduce"(%x_10, %9) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32 loc(callsite(#loc1 at #loc49)), %arg5: i32 loc(callsite(#loc1 at #loc49)), %arg6: f32 loc(callsite(#loc1 at #loc49)), %arg7: i32 loc(callsite(#loc1 at #loc49))):
      %tie = arith.cmpf oeq, %arg4, %arg6 : f32
      %tie_11 = arith.cmpi slt, %arg5, %arg7 : i32
      %tie_12 = arith.andi %tie, %tie_11 : i1
      %gt = arith.cmpf ogt, %arg4, %arg6 : f32
      %gt_13 = arith.ori %gt, %tie_12 : i1
      %v_ret = arith.select %gt_13, %arg4, %arg6 : f32
      %i_ret = arith.select %gt_13, %arg5, %arg7 : i32
      tt.reduce.return %v_ret, %i_ret : f32, i32
    }) : (tensor<16x32xf32, #blocked>, tensor<16x32xi32, #blocked>) -> (tensor<32xf32, #ttg.slice<{dim = 0, parent = #blocked}>>, tensor<32xi32, #ttg.slice<{dim = 0, parent = #blocked}>>)
    %11 = ttg.convert_layout %10#1 : tensor<32xi32, #ttg.slice<{dim = 0, parent = #blocked}>> -> tensor<32xi32, #blocked1>
    tt.store %8, %11 : tensor<32x!tt.ptr<i32>, #blocked1>
    tt.return
  }
}
"""


def run_red(k, torch, device="cpu"):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 32, generator=g).to(device)
    s, c = torch.empty(16, device=device), torch.empty(16, 32, device=device)
    a = torch.empty(32, dtype=torch.int32, device=device)
    k[(1, 1, 1)](x, s, c, a)
    return x, s, c, a


def check_red(torch, x, s, c, a):
    torch.testing.assert_close(s, x.sum(1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(c, x.cumsum(1), atol=1e-5, rtol=1e-5)
    assert torch.equal(a, x.argmax(0).int())


def test_triton_reduce_scan_regions_on_the_interpreter(tmp_path):
    torch = pytest.importorskip("torch")
    text = to_tritium(RED_TTIR)
    assert text.count("func.func private @__triton_") == 3 and "tt.reduce.return" not in text
    k = tritium.compile(write(tmp_path, "red.ttir", RED_TTIR), target="cpu")
    check_red(torch, *run_red(k, torch))


@pytest.mark.parametrize("name", ["red.ttir", "red.ttgir"])
def test_triton_reduce_scan_regions_compile_sm90(tmp_path, name):
    k = tritium.compile(write(tmp_path, name, RED_TTIR if name.endswith("ttir") else RED_TTGIR), target="cuda:90")
    assert ".entry red" in k.asm["ptx"] and "shfl.sync" in k.asm["ptx"]


#: a scan whose combine region checks for overflow with tt.assert (the form of Triton's test_scan_layouts)
SCAN_ASSERT_TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [0, 1]}>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @scan(%in: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #blocked}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<32x1xi32, #blocked>
    %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #blocked}>>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32, #ttg.slice<{dim = 0, parent = #blocked}>> -> tensor<1x16xi32, #blocked>
    %n = arith.constant dense<16> : tensor<32x1xi32, #blocked>
    %rs = arith.muli %r2, %n : tensor<32x1xi32, #blocked>
    %rb = tt.broadcast %rs : tensor<32x1xi32, #blocked> -> tensor<32x16xi32, #blocked>
    %cb = tt.broadcast %c2 : tensor<1x16xi32, #blocked> -> tensor<32x16xi32, #blocked>
    %off = arith.addi %rb, %cb : tensor<32x16xi32, #blocked>
    %p = tt.splat %in : !tt.ptr<i32> -> tensor<32x16x!tt.ptr<i32>, #blocked>
    %p2 = tt.addptr %p, %off : tensor<32x16x!tt.ptr<i32>, #blocked>, tensor<32x16xi32, #blocked>
    %x = tt.load %p2 : tensor<32x16x!tt.ptr<i32>, #blocked>
    %s = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
    ^bb0(%a: i32, %b: i32):
      %sum = arith.addi %a, %b : i32
      %a64 = arith.extsi %a : i32 to i64
      %b64 = arith.extsi %b : i32 to i64
      %s64 = arith.addi %a64, %b64 : i64
      %i32.max = arith.constant 2147483647: i64
      %ok = arith.cmpi sle, %s64, %i32.max : i64
      tt.assert %ok, "overflow detected" : i1
      tt.scan.return %sum : i32
    }) : (tensor<32x16xi32, #blocked>) -> tensor<32x16xi32, #blocked>
    %q = tt.splat %out : !tt.ptr<i32> -> tensor<32x16x!tt.ptr<i32>, #blocked>
    %q2 = tt.addptr %q, %off : tensor<32x16x!tt.ptr<i32>, #blocked>, tensor<32x16xi32, #blocked>
    tt.store %q2, %s : tensor<32x16x!tt.ptr<i32>, #blocked>
    tt.return
  }
}
"""


def test_assert_in_a_combine_region_sm90(tmp_path):
    text = to_tritium(SCAN_ASSERT_TTGIR)
    assert '"tt.assert"(%ok) {message = "overflow detected"} : (i1) -> ()' in text
    k = tritium.compile(write(tmp_path, "scan.ttgir", SCAN_ASSERT_TTGIR), target="cuda:90")
    assert ".entry scan" in k.asm["ptx"] and "__assertfail" in k.asm["ptx"]
