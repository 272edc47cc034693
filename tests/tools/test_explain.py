"""``tritium explain`` / ``fn.explain``: the report's facts for vector add (aligned, misaligned), softmax, a loop
with an avoidable layout conversion and a pipelined matmul, compiled for cuda on this CPU machine; the CLI."""
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tritium import cli  # noqa: E402
from tritium.errors import CompilationError  # noqa: E402
from tritium.tools.explain import explain, occupancy  # noqa: E402

from . import explain_kernels as K  # noqa: E402

FILE = Path(K.__file__)
SOURCE = FILE.read_text().splitlines()
D16 = {"tt.divisibility": 16}
ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_cols": "i32"}
SCALE_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "x_stride": "i32", "y_stride": "i32", "n_cols": "i32",
             "scale": "fp32"}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def line_of(text: str) -> int:
    """The 1-based line of explain_kernels.py holding ``text`` (exactly one)."""
    hits = [i + 1 for i, s in enumerate(SOURCE) if text in s]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _has_ptxas() -> bool:
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def aligned(*names):
    return {n: D16 for n in names}


# --------------------------------------------------------------------------------------------- vector add
def test_vector_add_aligned_is_128_bit_and_coalesced():
    ex = explain(K.add_kernel, ADD_SIG, {"BLOCK": 1024}, aligned(*ADD_SIG), target="cuda:90")
    assert ex.target == "cuda:90"
    assert [(a.op, a.pointer, a.line) for a in ex.accesses] == [
        ("load", "x_ptr", line_of("x = tl.load(x_ptr + offs")), ("load", "y_ptr", line_of("y = tl.load(y_ptr")),
        ("store", "out_ptr", line_of("tl.store(out_ptr + offs"))]
    for a in ex.accesses:
        assert (a.vector_width, a.max_vector_width, a.bytes_per_access) == (4, 4, 16)
        assert a.coalesced is True and a.why_narrow == [] and a.why_uncoalesced == []
        assert a.layout == "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>"
        assert a.warp_bytes == 512 and a.segments == 1 and a.sectors == 16
        assert a.source.startswith(("x = tl.load", "y = tl.load", "tl.store"))
    assert ex.conversions == [] and ex.reductions == [] and ex.dots == [] and ex.shared_total == 0
    assert ex.warnings == []
    text = str(ex)
    assert f"line {line_of('x = tl.load(x_ptr + offs')}: x = tl.load(x_ptr + offs, mask=mask)" in text
    assert "vector width 4 (4 x fp32" not in text and "vector width 4 (4 x f32 = 128 bits" in text


def test_vector_add_misaligned_pointer_in_signature():
    ex = explain(K.add_kernel, ADD_SIG, {"BLOCK": 1024}, aligned("y_ptr", "out_ptr", "n"), target="cuda:90")
    x, y, out = ex.accesses
    assert (x.pointer, x.vector_width, x.bytes_per_access) == ("x_ptr", 1, 4)
    assert len(x.why_narrow) == 1 and x.why_narrow[0].startswith("alignment: x_ptr is not known to be 16-byte")
    # the layout keeps 4 elements per thread (the other accesses' choice): one scalar instruction of a warp
    # touches every 4th element, 16 sectors for 128 bytes
    assert x.coalesced is False and (x.warp_bytes, x.sectors) == (128, 16)
    assert (y.vector_width, out.vector_width) == (4, 4)
    line = line_of("x = tl.load(x_ptr + offs")
    assert len(ex.warnings) == 1
    assert ex.warnings[0].startswith(f"line {line}: load of x_ptr is not vectorized (1 x f32 = 4 bytes per thread")
    assert "tl.multiple_of" in ex.warnings[0]


def test_vector_add_explain_binds_like_a_launch():
    """fn.explain with arrays: x offset by one element is not 16-byte aligned, n = 4096 is divisible by 16."""
    base = np.zeros(4097, np.float32)
    x = base[1:] if base.ctypes.data % 16 == 0 else base[:4096]
    assert x.ctypes.data % 16 != 0
    y, out = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    assert y.ctypes.data % 16 == 0 and out.ctypes.data % 16 == 0
    ex = K.add_kernel.explain(x, y, out, 4096, BLOCK=1024, target="cuda:90")
    assert [a.vector_width for a in ex.accesses] == [1, 4, 4]
    assert "x_ptr" in ex.accesses[0].why_narrow[0] and "alignment" in ex.accesses[0].why_narrow[0]
    assert [w.split(":")[0] for w in ex.warnings] == [f"line {line_of('x = tl.load(x_ptr + offs')}"]
    x_ok = base[:4096] if base.ctypes.data % 16 == 0 else base[1:]
    ex = K.add_kernel.explain(x_ok, y, out, 4096, BLOCK=1024, num_warps=8, target="cuda:80")
    assert ex.target == "cuda:80" and ex.options["num_warps"] == 8
    assert [a.vector_width for a in ex.accesses] == [4, 4, 4] and ex.warnings == []
    assert ex.accesses[0].layout == "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[8], order=[0]>"


def test_mask_not_constant_over_vectors_names_the_bound():
    ex = explain(K.add_kernel, ADD_SIG, {"BLOCK": 1024}, aligned("x_ptr", "y_ptr", "out_ptr"), target="cuda:90")
    assert [a.vector_width for a in ex.accesses] == [1, 1, 1]
    for a in ex.accesses:
        assert a.why_narrow == ["mask: the mask is constant over runs of only 1 element(s) (n is not known to be a "
                                "multiple of 16)"]
    assert len(ex.warnings) == 3


def test_interpreter_target_explains_for_a_gpu():
    ex = explain(K.add_kernel, ADD_SIG, {"BLOCK": 256}, aligned(*ADD_SIG), target="interpreter")
    assert ex.target == "cuda:90"
    assert any("interpreter" in n and "cuda:90" in n for n in ex.notes)
    assert "note: layouts, vector widths and shared memory are decisions of the GPU compiler" in str(ex)


def test_compilation_error_is_raised_with_its_line():
    with pytest.raises(CompilationError) as e:
        explain(K.broken_kernel, {"x_ptr": "*fp32"}, {"BLOCK": 64}, target="cuda:90")
    assert (e.value.lineno, Path(e.value.filename).name) == (line_of("tl.not_a_builtin(offs)"), FILE.name)


# --------------------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("num_warps", [4, 1])
def test_softmax_reductions_cross_lanes_and_warps(num_warps):
    ex = explain(K.softmax_kernel, SOFTMAX_SIG, {"BLOCK": 1024}, aligned(*SOFTMAX_SIG), target="cuda:90",
                 options={"num_warps": num_warps})
    assert [(r.line, r.axis, r.shape) for r in ex.reductions] == [
        (line_of("tl.max(x, axis=0)"), 0, (1024,)), (line_of("tl.sum(num, axis=0)"), 0, (1024,))]
    for r in ex.reductions:
        assert r.lanes == 32
        if num_warps == 4:  # 1024 over 4 warps x 32 lanes x 4: 8 per thread, 5 shuffles, 4 partials in smem
            assert (r.in_thread, r.warps, r.crosses, r.shared_bytes) == (8, 4, "warps", 16)
        else:
            assert (r.in_thread, r.warps, r.crosses, r.shared_bytes) == (32, 1, "lanes", 0)
    assert [a.vector_width for a in ex.accesses] == [4, 4] and ex.conversions == []
    if num_warps == 4:
        assert ex.shared_total == 16
        assert [(b.op, b.size) for b in ex.shared_buffers] == [("tt.reduce", 16), ("tt.reduce", 16)]
        assert "crosses warps: 8 elements in each thread, then 5 shuffle rounds across 32 lanes, then 4 warps " \
               "through 16 bytes of shared memory + a barrier" in str(ex)
    else:
        assert ex.shared_total == 0 and ex.shared_buffers == []
        assert "crosses lanes: 32 elements in each thread, then 5 shuffle rounds across 32 lanes\n" in str(ex)
    r = ex.resources
    assert r.num_warps == num_warps
    if not _has_ptxas():
        pytest.skip("ptxas not installed (pip install 'tritium[nvidia]'): no registers")
    assert r.n_regs > 0 and r.n_spills == 0
    occ = occupancy(90, num_warps, r.n_regs, r.shared)
    assert (r.blocks_per_sm, r.limited_by) == (occ["blocks_per_sm"], occ["limited_by"])
    assert f"resources: {r.n_regs} registers per thread, 0 bytes spilled" in str(ex)


def test_occupancy_rules():
    # 206 registers: 7 x 256 per warp -> 36 warps of registers -> 2 blocks of 4 warps; 98304 + 1024 bytes of
    # shared memory -> 2 blocks in 228 KiB
    occ = occupancy(90, 4, 206, 98304)
    assert occ["blocks_per_sm"] == 2 and occ["limited_by"] == ["registers", "shared memory"]
    assert occupancy(80, 4, 206, 98304)["limited_by"] == ["shared memory"]  # 164 KiB: one block
    occ = occupancy(90, 4, 32, 0)
    assert occ["blocks_per_sm"] == 16 and occ["occupancy"] == 1.0 and "warps" in occ["limited_by"]
    assert occupancy(86, 4, 32, 200 * 1024)["limits"]["shared memory"] == 0  # more than a block may have


# --------------------------------------------------------------------------------------------- conversions
def test_avoidable_conversion_in_loop():
    ex = explain(K.scale_rows, SCALE_SIG, {"BLOCK": 1024}, aligned("x_ptr", "y_ptr", "x_stride", "n_cols"),
                 target="cuda:90")
    store_line, loop_line = line_of("tl.store(y_ptr + row * y_stride"), line_of("for start in range")
    [c] = ex.conversions
    assert (c.line, c.loop_line, c.kind, c.shared_bytes, c.shape) == (store_line, loop_line, "shared memory",
                                                                     4096, (1024,))
    assert c.src_layout.startswith("#blocked<sizePerThread=[4]") and c.dst_layout.startswith("#blocked<sizePerThread=[1]")
    assert c.feeds == [f"tt.store at line {store_line}"]
    load, store = ex.accesses
    assert (load.vector_width, load.loop_line) == (4, loop_line)
    assert store.vector_width == 1 and "y_stride is not known to be a multiple of 16" in store.why_narrow[0]
    assert store.coalesced is True  # scalar, but lanes are adjacent: 128 bytes in 4 sectors
    [conv_warning] = [w for w in ex.warnings if "layout conversion" in w]
    assert conv_warning.startswith(f"line {store_line}: layout conversion inside the loop at line {loop_line} costs "
                                   "4096 bytes of shared memory")
    assert "y_stride" in conv_warning
    assert [(b.op, b.offset, b.size) for b in ex.shared_buffers] == [("ttg.convert_layout", 0, 4096)]
    # avoidable: with y_stride aligned the store is 128 bits too and the conversion is gone
    ex = explain(K.scale_rows, SCALE_SIG, {"BLOCK": 1024},
                 aligned("x_ptr", "y_ptr", "x_stride", "y_stride", "n_cols"), target="cuda:90")
    assert ex.conversions == [] and [a.vector_width for a in ex.accesses] == [4, 4] and ex.warnings == []


# --------------------------------------------------------------------------------------------- dots
@pytest.mark.parametrize("arch,version,instr", [(90, 3, "wgmma.m64n128k16"), (80, 2, "mma.sync.m16n8k16")])
def test_matmul_dot_and_pipelining(arch, version, instr):
    ex = explain(K.matmul_kernel, MM_SIG, {"BM": 128, "BN": 128, "BK": 64}, aligned(*MM_SIG),
                 target=f"cuda:{arch}", options={"num_stages": 3})
    [d] = ex.dots
    loop = line_of("for k in range(0, K, BK)")
    assert (d.line, d.loop_line, d.mma_version, d.instruction) == (line_of("acc += tl.dot(a, b)"), loop, version,
                                                                   instr)
    assert d.shape == (128, 128, 64) and d.dtypes == "f16 x f16 -> f32"
    assert (d.pipelined, d.num_stages, d.buffers) == (True, 3, 3)
    if version == 2:  # prefetch splits the dot into K-slices of the instruction's K
        assert d.ops == 4 and d.a_layout.startswith("#dot_op<opIdx=0, parent=#mma<v2")
    else:
        assert d.ops == 1 and d.is_async and d.a_layout.startswith("#nvmma_shared<swizzle=128B")
    # the pipelined loads are cp.async copies at the loads' lines: 2 prologue copies each, one in the loop
    copies = [(a.line, a.pointer, a.ops, a.loop_line, a.vector_width) for a in ex.accesses
              if a.op.startswith("async_copy")]
    la, lb = line_of("a = tl.load(a_ptrs)"), line_of("b = tl.load(b_ptrs)")
    assert sorted(copies) == sorted([(la, "a_ptr", 2, None, 8), (lb, "b_ptr", 2, None, 8), (la, "a_ptr", 1, loop, 8),
                                     (lb, "b_ptr", 1, loop, 8)])
    stacks = [b for b in ex.shared_buffers if b.op == "ttg.local_alloc"]
    assert [(b.line, b.size) for b in stacks] == [(la, 3 * 128 * 64 * 2), (lb, 3 * 64 * 128 * 2)]
    assert "pipelined: yes, 3 shared-memory stages (num_stages=3)" in str(ex)


def test_matmul_without_pipelining():
    ex = explain(K.matmul_kernel, MM_SIG, {"BM": 64, "BN": 64, "BK": 32}, aligned(*MM_SIG), target="cuda:80",
                 options={"num_stages": 1})
    [d] = ex.dots
    assert (d.mma_version, d.pipelined, d.num_stages, d.buffers) == (2, False, 1, 0)
    assert not any(a.op.startswith("async_copy") for a in ex.accesses)
    assert "pipelined: no (num_stages=1)" in str(ex)


# --------------------------------------------------------------------------------------------- CLI
ADD_ARGS = ["--signature", "*fp32:16,*fp32:16,*fp32:16,i32:16", "--constexpr", "BLOCK=1024", "--target", "cuda:90"]


def test_cli_explain_text_json_and_pictures(tmp_path, capsys):
    assert cli.main(["explain", f"{FILE}:add_kernel", *ADD_ARGS]) == 0
    text = capsys.readouterr().out
    assert text.startswith("kernel add_kernel on cuda:90 (num_warps=4, num_stages=3)")
    assert text.count("vector width 4 (4 x f32 = 128 bits per thread per instruction; the maximum)") == 3
    assert "warnings (0): none" in text

    assert cli.main(["explain", f"{FILE}:add_kernel", "--signature", "*fp32,*fp32:16,*fp32:16,i32:16",
                     "--constexpr", "BLOCK=1024", "--option", "num_warps=8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"] == "cuda:90" and data["options"]["num_warps"] == 8
    assert [a["vector_width"] for a in data["accesses"]] == [1, 4, 4]
    assert data["accesses"][0]["line"] == line_of("x = tl.load(x_ptr + offs") and len(data["warnings"]) == 1
    assert "ttgir" not in data

    pics = tmp_path / "pics"
    assert cli.main(["explain", f"{FILE}:scale_rows", "--signature", "*fp32:16,*fp32:16,i32:16,i32,i32:16,fp32",
                     "--constexpr", "BLOCK=1024", "--pictures", str(pics)]) == 0
    text = capsys.readouterr().out
    files = sorted(pics.glob("*.png"))
    assert len(files) == 2  # the load's (and the conversion's source) layout, the store's
    for f in files:
        assert f.stat().st_size > 1000 and f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(f) in text
    assert "layout conversion inside the loop" in text


def test_cli_explain_bad_signature(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["explain", f"{FILE}:add_kernel", "--signature", "*fp32,*fp32", "--constexpr", "BLOCK=64"])
    assert "kernel 'add_kernel' has 4 non-constexpr parameters (x_ptr, y_ptr, out_ptr, n) but --signature gives 2" \
        in str(e.value) and str(e.value).startswith("tritium explain:")
    with pytest.raises(SystemExit) as e:
        cli.main(["explain", f"{FILE}:add_kernel", "--signature", "*fp33,*fp32,*fp32,i32", "--constexpr",
                  "BLOCK=64"])
    assert "'*fp33' (for 'x_ptr') is not a type" in str(e.value)


def test_cli_explain_compilation_error(capsys):
    assert cli.main(["explain", f"{FILE}:broken_kernel", "--signature", "*fp32", "--constexpr", "BLOCK=64"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tritium explain: CompilationError") and str(line_of("tl.not_a_builtin(offs)")) in err


def test_cli_subprocess_json():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tritium", "explain", f"{FILE}:softmax_kernel", "--signature",
                        "*fp32:16,*fp32:16,i32:16,i32:16,i32:16", "--constexpr", "BLOCK=1024", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [x["crosses"] for x in data["reductions"]] == ["warps", "warps"]
