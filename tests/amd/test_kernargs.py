"""The hip launcher's kernarg packing, checked byte by byte against the layout of real compiled code objects (no AMD
GPU: kernels are compiled for gfx942 / gfx1100 here and the packer fills their kernarg segment): explicit arguments
at the metadata's offsets (pointers, i32, i64, fp32, fp16, bf16, i1), the code object v5 hidden arguments the
kernel reads (hidden_block_count_x/y/z from the grid: the AMD lowering's tl.num_programs; hidden_group_size_x/y/z
from num_warps * wavefront), the rest zero."""
import struct

import numpy as np
import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.e2e import kernels as K  # noqa: E402
from tritium.compiler import ASTSource, compile  # noqa: E402
from tritium.errors import KernelRuntimeError  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

from tritium_amd import launcher as L  # noqa: E402

F = "*fp32"


@triton.jit
def grid_kernel(x_ptr, y_ptr, n, big, scale, BLOCK: tl.constexpr):
    # reads the grid size (tl.num_programs: the implicit kernargs' hidden_block_count_*) and every scalar kind
    pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0) + tl.program_id(2) * tl.num_programs(0) * \
        tl.num_programs(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, v * scale + (big % 7).to(tl.float32), mask=offs < n)


@triton.jit
def mixed_kernel(x_ptr, h, b, flag, k64, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs) * h.to(tl.float32) + b.to(tl.float32) + k64.to(tl.float32)
    v = tl.where(flag, v, -v)
    tl.store(y_ptr + offs, v)


def build(fn, sig, arch="gfx942", num_warps=4, **ce):
    return compile(ASTSource(fn, sig, constexprs=ce), target=f"hip:{arch}", options={"num_warps": num_warps})


def packer_of(k, dynamic_lds=0):
    md = k.metadata
    types, _ = L.arg_types(md)
    block = md["num_warps"] * md["wavefront_size"]
    return L.KernargPacker(types, md["kernargs"], L.hidden_kernargs(md), md["kernarg_size"], block, dynamic_lds,
                           md["name"])


def hidden(md, kind):
    (h,) = [a for a in md["hidden_kernargs"] if a["kind"] == kind]
    return h["offset"], h["size"]


def read(buf, off, code):
    return struct.unpack_from("<" + code, buf, off)[0]


def check_hidden(buf, md, grid, block, dynamic_lds=0):
    """hidden_block_count_* = the grid, hidden_group_size_* = (block, 1, 1), grid dims 3, every other byte past
    the explicit arguments zero."""
    covered = set()
    want = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1], "hidden_block_count_z": grid[2],
            "hidden_group_size_x": block, "hidden_group_size_y": 1, "hidden_group_size_z": 1,
            "hidden_grid_dims": 3, "hidden_dynamic_lds_size": dynamic_lds}
    for a in md["hidden_kernargs"]:
        off, size = a["offset"], a["size"]
        value = int.from_bytes(buf[off:off + size], "little")
        assert value == want.get(a["kind"], 0), a
        covered.update(range(off, off + size))
    end = max(x["offset"] + x["size"] for x in md["kernargs"])
    assert all(buf[i] == 0 for i in range(end, len(buf)) if i not in covered)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_vector_add_kernargs(num_warps):
    k = build(K.add_kernel, {"x_ptr": F, "y_ptr": F, "output_ptr": F, "n_elements": "i32"}, num_warps=num_warps,
              BLOCK_SIZE=1024)
    md = k.metadata
    p = packer_of(k)
    assert p.size == md["kernarg_size"]
    rng = np.random.default_rng(1)
    ptrs = [int(x) << 8 for x in rng.integers(1 << 20, 1 << 39, size=3)]
    n = int(rng.integers(1, 2 ** 31 - 1))
    grid = (int(rng.integers(1, 100000)), 1, 1)
    buf = p.pack(ptrs + [n], grid)
    assert len(buf) == md["kernarg_size"]
    offs = [a["offset"] for a in md["kernargs"]]
    assert offs == [0, 8, 16, 24]
    assert [read(buf, o, "Q") for o in offs[:3]] == ptrs and read(buf, offs[3], "i") == n
    assert all(b == 0 for b in buf[28:])  # padding (the kernel reads no hidden argument: it has none)
    check_hidden(buf, md, grid, num_warps * 64)


def test_softmax_kernargs():
    sig = {"output_ptr": F, "input_ptr": F, "input_row_stride": "i32", "output_row_stride": "i32", "n_cols": "i32"}
    k = build(K.softmax_kernel, sig, BLOCK_SIZE=1024)
    md = k.metadata
    p = packer_of(k)
    vals = [0x7F00_1234_5600, 0x7F00_ABCD_EF00, 4096, -8192, 1000]
    buf = p.pack(vals, (1823, 1, 1))
    ka = md["kernargs"]
    assert read(buf, ka[0]["offset"], "Q") == vals[0] and read(buf, ka[1]["offset"], "Q") == vals[1]
    assert [read(buf, a["offset"], "i") for a in ka[2:]] == vals[2:]
    check_hidden(buf, md, (1823, 1, 1), 4 * 64)


@pytest.mark.parametrize("arch,wave", [("gfx942", 64), ("gfx1100", 32)])
def test_num_programs_kernel_reads_the_packed_block_counts(arch, wave):
    sig = {"x_ptr": F, "y_ptr": F, "n": "i32", "big": "i64", "scale": "fp32"}
    k = build(grid_kernel, sig, arch=arch, BLOCK=256)
    md = k.metadata
    asm = k.asm["amdgcn"]
    # the kernel loads the block counts from the implicit kernargs: hidden_block_count_* are in its metadata at
    # the offsets the packer fills
    off_x, size_x = hidden(md, "hidden_block_count_x")
    assert size_x == 4 and hidden(md, "hidden_block_count_y") == (off_x + 4, 4)
    assert hidden(md, "hidden_block_count_z") == (off_x + 8, 4)
    kinds = {a["kind"] for a in md["hidden_kernargs"]}
    assert {"hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z", "hidden_group_size_x"} <= kinds
    assert "s_load_dword" in asm or "s_load_b" in asm
    p = packer_of(k)
    rng = np.random.default_rng(7)
    x, y = (int(v) << 4 for v in rng.integers(1 << 30, 1 << 44, size=2))
    n, big, scale = int(rng.integers(1, 1 << 30)), -int(rng.integers(1 << 40, 1 << 62)), float(rng.standard_normal())
    grid = tuple(int(v) for v in rng.integers(1, 300, size=3))
    buf = p.pack(L.convert_args([x, y, n, big, scale], p.types, [], "grid_kernel"), grid)
    ka = md["kernargs"]
    assert [(a["offset"], a["size"]) for a in ka] == [(0, 8), (8, 8), (16, 4), (24, 8), (32, 4)]
    assert read(buf, 0, "Q") == x and read(buf, 8, "Q") == y and read(buf, 16, "i") == n
    assert read(buf, 24, "q") == big
    assert read(buf, 32, "f") == np.float32(scale)
    assert read(buf, off_x, "I") == grid[0] and read(buf, off_x + 4, "I") == grid[1]
    assert read(buf, off_x + 8, "I") == grid[2]
    check_hidden(buf, md, grid, 4 * wave)


def test_mixed_scalar_kernargs():
    sig = {"x_ptr": F, "h": "fp16", "b": "bf16", "flag": "i1", "k64": "i64", "y_ptr": F}
    k = build(mixed_kernel, sig, BLOCK=128)
    md = k.metadata
    p = packer_of(k)
    rng = np.random.default_rng(3)
    h, b = float(rng.standard_normal()), float(rng.standard_normal())
    vals = L.convert_args([0x1000, h, b, True, 2 ** 40 + 3, 0x2000], p.types, list(sig), "mixed_kernel")
    buf = p.pack(vals, (5, 1, 1))
    ka = md["kernargs"]
    assert [a["size"] for a in ka] == [8, 2, 2, 1, 8, 8]
    assert read(buf, ka[0]["offset"], "Q") == 0x1000 and read(buf, ka[5]["offset"], "Q") == 0x2000
    assert read(buf, ka[1]["offset"], "e") == np.float16(h)
    bits = read(buf, ka[2]["offset"], "H")
    assert abs(struct.unpack("<f", struct.pack("<I", bits << 16))[0] - b) <= abs(b) * 2 ** -8
    assert buf[ka[3]["offset"]] == 1
    assert read(buf, ka[4]["offset"], "q") == 2 ** 40 + 3
    check_hidden(buf, md, (5, 1, 1), 256)


def test_dynamic_lds_and_v5_fallback_layout():
    sig = {"x_ptr": F, "y_ptr": F, "n": "i32", "big": "i64", "scale": "fp32"}
    k = build(grid_kernel, sig, BLOCK=64)
    md = dict(k.metadata)
    buf = packer_of(k, dynamic_lds=4096).pack([1, 2, 3, 4, 0.5], (9, 8, 7))
    check_hidden(buf, md, (9, 8, 7), 256, dynamic_lds=4096 if any(
        a["kind"] == "hidden_dynamic_lds_size" for a in md["hidden_kernargs"]) else 0)
    # metadata from before hidden_kernargs were recorded: the v5 layout after the explicit arguments is the same
    fallback = L.hidden_kernargs({k2: v for k2, v in md.items() if k2 != "hidden_kernargs"})
    real = {a["kind"]: (a["offset"], a["size"]) for a in md["hidden_kernargs"]}
    for a in fallback:
        assert real[a["kind"]] == (a["offset"], a["size"])
    assert {a["kind"] for a in fallback} >= {"hidden_block_count_x", "hidden_group_size_x", "hidden_grid_dims"}
    # a kernel that reads no hidden argument has none in its segment: the fallback adds none either
    add = build(K.add_kernel, {"x_ptr": F, "y_ptr": F, "output_ptr": F, "n_elements": "i32"}, BLOCK_SIZE=256)
    assert add.metadata["hidden_kernargs"] == []
    assert L.hidden_kernargs({k2: v for k2, v in add.metadata.items() if k2 != "hidden_kernargs"}) == []


def test_packer_errors_name_the_kernel():
    k = build(K.add_kernel, {"x_ptr": F, "y_ptr": F, "output_ptr": F, "n_elements": "i32"}, BLOCK_SIZE=256)
    md = k.metadata
    with pytest.raises(KernelRuntimeError, match="add_kernel.*4 explicit kernel arguments.*3"):
        L.KernargPacker(["*i8", "*i8", "*i8"], md["kernargs"], md["hidden_kernargs"], md["kernarg_size"], 256,
                        kernel_name="add_kernel")
    with pytest.raises(KernelRuntimeError, match="argument #3 .i64. is 8 bytes.*4 bytes"):
        L.KernargPacker(["*i8", "*i8", "*i8", "i64"], md["kernargs"], md["hidden_kernargs"], md["kernarg_size"],
                        256, kernel_name="add_kernel")
    with pytest.raises(KernelRuntimeError, match="'n_elements': 4294967296 does not fit in i32"):
        L.convert_args([1, 2, 3, 2 ** 32], ["*i8"] * 3 + ["i32"], ["x_ptr", "y_ptr", "output_ptr", "n_elements"],
                       "add_kernel")
    with pytest.raises(KernelRuntimeError, match="'h': 70000.0 does not fit in fp16"):
        L.convert_args([1, 7e4], ["*i8", "fp16"], ["x", "h"], "k")
    with pytest.raises(KernelRuntimeError, match="'x_ptr' is a host array"):
        L.convert_args([np.zeros(3), 2, 3, 4], ["*i8"] * 3 + ["i32"], ["x_ptr", "y_ptr", "output_ptr", "n"], "k")
