"""Buffer loads / stores on CDNA (issue 12: masked accesses without branches, as Triton's AMD backend) and the
matmul's K mask computed in the layout of its load (no layout-changing broadcast in the loop).

No AMD GPU: what is checked is the compiler's output.  A masked load through ``base + offsets`` with i32 offsets
provably in ``[0, 2^31)`` bytes is ``llvm.amdgcn.raw.ptr.buffer.load`` on a resource made from the scalar base;
a masked-off lane's byte offset is 0x80000000 (past the resource's 0x7FFFFFFE bytes: the hardware returns 0 and
drops stores) and ``other`` is selected in under the same mask.  Where that cannot be proved, the access keeps
the branch form (``global_load`` under ``s_cbranch_execz``).
"""
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.amd.test_compile import build  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402
from tritium.compiler import ASTSource, compile  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

F = "*fp32"
H = "*fp16"
D16 = {"tt.divisibility": 16}


@triton.jit
def masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LC: tl.constexpr, SC: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.5, cache_modifier=LC)
    tl.store(y_ptr + offs, x + 1.0, mask=m, cache_modifier=SC)


@triton.jit
def masked_copy_pid(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # pid * BLOCK has no bound: the offsets may pass 2^31 bytes
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0), mask=m)


@triton.jit
def masked_copy_negative(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) - 4  # may be negative
    m = offs >= 0
    tl.store(y_ptr + offs + 4, tl.load(x_ptr + offs, mask=m, other=0.0), mask=m)


@triton.jit
def masked_copy_rows(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # a scalar base (the row) plus bounded offsets: 2-D offsets from make_range, a constant multiplier and % 8
    row = tl.program_id(0)
    r = tl.arange(0, 8)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    offs = (r % 8) * BLOCK + c
    m = c < n
    x = tl.load(x_ptr + row * stride + offs, mask=m)
    tl.store(y_ptr + row * stride + offs, x, mask=m)


@triton.jit
def masked_volatile(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0, volatile=True), mask=m)


@triton.jit
def masked_atomic(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0), mask=m)


@triton.jit
def unmasked_copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


SIG = {"x_ptr": F, "y_ptr": F, "n": "i32"}
PTRS = {"x_ptr": D16, "y_ptr": D16}


def _copy(arch="gfx942", lc="", sc="", n_div=False):
    attrs = {**PTRS, **({"n": D16} if n_div else {})}
    return build(masked_copy, SIG, arch=arch, attrs=attrs, BLOCK=1024, LC=lc, SC=sc)


def _mnemonics(asm: str, prefix: str) -> list:
    return [ln.split()[0] for ln in asm.splitlines() if ln.strip().startswith(prefix)]


def test_masked_load_store_are_buffer_ops_with_out_of_range_offsets():
    ck = _copy()
    asm, ll = ck.asm["amdgcn"], ck.asm["llir"]
    loads, stores = _mnemonics(asm, "buffer_load"), _mnemonics(asm, "buffer_store")
    # 1024 fp32 over 256 threads, mask `offs < n` of unknown alignment: one dword per element
    assert loads == ["buffer_load_dword"] * 4 and stores == ["buffer_store_dword"] * 4
    assert not _mnemonics(asm, "global_load") and not _mnemonics(asm, "global_store")
    assert "s_cbranch_execz" not in asm  # no branch per element
    assert all(" offen" in ln for ln in asm.splitlines() if "buffer_load" in ln or "buffer_store" in ln)
    # the resource: the scalar base, stride 0, 0x7FFFFFFE bytes, CDNA's dword 3
    rsrc = re.findall(r"@llvm\.amdgcn\.make\.buffer\.rsrc\.p8\.p1\(ptr addrspace\(1\) %\w+, i16 0, "
                      r"i64 2147483646, i32 159744\)", ll)
    assert len(rsrc) == 2
    # every load's offset is `select mask, bytes, 0x80000000`, its value `select mask, loaded, other` (1.5)
    sel_off = dict(re.findall(r"(%\w+) = select i1 (%\w+), i32 %\w+, i32 -2147483648", ll))
    calls = re.findall(r"(%\w+) = call i32 @llvm\.amdgcn\.raw\.ptr\.buffer\.load\.i32\(ptr addrspace\(8\) %\w+, "
                       r"i32 (%\w+), i32 0, i32 0\)", ll)
    assert len(calls) == 4
    for res, off in calls:
        mask = sel_off[off]
        cast = re.search(rf"(%\w+) = bitcast i32 {res} to float", ll).group(1)
        assert re.search(rf"= select i1 {mask}, float {cast}, float 1\.500000e\+00", ll)
    stores_ll = re.findall(r"call void @llvm\.amdgcn\.raw\.ptr\.buffer\.store\.i32\(i32 %\w+, ptr addrspace\(8\) "
                           r"%\w+, i32 (%\w+), i32 0, i32 0\)", ll)
    assert len(stores_ll) == 4 and all(o in sel_off for o in stores_ll)


def test_buffer_ops_take_the_widest_vector():
    # n divisible by 16: the mask is constant over 4 consecutive fp32 (8 fp16) -> 128-bit buffer accesses
    asm = _copy(n_div=True).asm["amdgcn"]
    assert _mnemonics(asm, "buffer_load") == ["buffer_load_dwordx4"] and \
        _mnemonics(asm, "buffer_store") == ["buffer_store_dwordx4"]
    asm16 = build(masked_copy, {"x_ptr": H, "y_ptr": H, "n": "i32"}, attrs={**PTRS, "n": D16}, BLOCK=2048, LC="",
                  SC="").asm["amdgcn"]
    assert set(_mnemonics(asm16, "buffer_load")) == {"buffer_load_dwordx4"}


@pytest.mark.parametrize("lc,sc,load_aux,store_aux,load_bits,store_bits", [
    (".cg", ".cs", 3, 3, "sc0 nt", "sc0 nt"),
    (".cv", ".wt", 17, 17, "sc0 sc1", "sc0 sc1"),
    (".ca", ".wb", 0, 0, "", ""),
])
def test_cache_modifiers_are_aux_bits(lc, sc, load_aux, store_aux, load_bits, store_bits):
    # Triton 3.6's values on gfx942 (sc0 = 1, nt = 2, sc1 = 16)
    ck = _copy(lc=lc, sc=sc)
    ll, asm = ck.asm["llir"], ck.asm["amdgcn"]
    assert set(re.findall(r"buffer\.load\.i32\(.*, i32 0, i32 (\d+)\)", ll)) == {str(load_aux)}
    assert set(re.findall(r"buffer\.store\.i32\(.*, i32 0, i32 (\d+)\)", ll)) == {str(store_aux)}
    ld = [ln.split("offen")[1].strip() for ln in asm.splitlines() if "buffer_load_dword" in ln]
    st = [ln.split("offen")[1].strip() for ln in asm.splitlines() if "buffer_store_dword" in ln]
    assert set(ld) == {load_bits} and set(st) == {store_bits}


def test_gfx90a_and_gfx950_buffer_ops():
    assert _mnemonics(_copy(arch="gfx950").asm["amdgcn"], "buffer_load")
    asm = _copy(arch="gfx90a").asm["amdgcn"]
    assert _mnemonics(asm, "buffer_load") and _mnemonics(asm, "buffer_store")
    # gfx90a's cache bits are not the gfx94x ones: a modifier keeps the global (branch) form there
    asm = _copy(arch="gfx90a", lc=".cg").asm["amdgcn"]
    assert _mnemonics(asm, "global_load") and not _mnemonics(asm, "buffer_load")


def test_rdna_keeps_global_accesses():
    asm = _copy(arch="gfx1100").asm["amdgcn"]
    assert not _mnemonics(asm, "buffer_") and _mnemonics(asm, "global_load")


def test_bounded_2d_offsets_on_a_scalar_row_base():
    sig = {"x_ptr": F, "y_ptr": F, "n": "i32", "stride": "i32"}
    asm = build(masked_copy_rows, sig, attrs=PTRS, BLOCK=128).asm["amdgcn"]
    assert _mnemonics(asm, "buffer_load") and _mnemonics(asm, "buffer_store")
    assert not _mnemonics(asm, "global_load")


@pytest.mark.parametrize("kernel,store", [(masked_copy_pid, "global_store"), (masked_copy_negative, "buffer_store"),
                                          (masked_volatile, "buffer_store")])
def test_branch_form_where_buffer_ops_are_not_provable(kernel, store):
    # the loads' offsets are unbounded / may be negative, or the load is volatile; the stores of the last two
    # are at offsets in [0, BLOCK) and not volatile: buffer stores
    asm = build(kernel, SIG, attrs=PTRS, BLOCK=1024).asm["amdgcn"]
    assert not _mnemonics(asm, "buffer_load")
    assert _mnemonics(asm, "global_load") and _mnemonics(asm, store)
    assert "s_cbranch_execz" in asm


def test_atomics_and_unmasked_loads_stay_global():
    asm = build(masked_atomic, SIG, attrs=PTRS, BLOCK=1024).asm["amdgcn"]
    assert _mnemonics(asm, "global_atomic") and not _mnemonics(asm, "buffer_atomic")
    assert _mnemonics(asm, "buffer_load")  # the masked load beside it
    asm = build(unmasked_copy, {"x_ptr": F, "y_ptr": F}, attrs=PTRS, BLOCK=1024).asm["amdgcn"]
    assert _mnemonics(asm, "global_load") == ["global_load_dwordx4"] and not _mnemonics(asm, "buffer_")


def _loads_offsets(fn, sig, **ce):
    """The TTGIR module of ``fn`` for gfx942 and the offsets of each load's ``tt.addptr``."""
    from mlir import ir

    from tritium.dialects import make_context
    ck = compile(ASTSource(fn, sig, constexprs=ce, attrs=PTRS), target="hip:gfx942", options={"num_warps": 4},
                 until="ttgir")
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(ck.asm["ttgir"])
    loads = []

    def visit(op):
        if op.operation.name == "tt.load":
            loads.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return ctx, module, [ld.operands[0].owner.operands[1] for ld in loads]


@pytest.mark.parametrize("fn,sig,expect", [
    (masked_copy_rows, {**SIG, "stride": "i32"}, (0, 8 * 128 - 1)),
    (masked_copy, SIG, (0, 1023)),
    (masked_copy_negative, SIG, (-4, 1019)),
    (masked_copy_pid, SIG, None),
])
def test_offset_range(fn, sig, expect):
    """The interval evaluation on the TTGIR offsets: what it proves and where it gives up (pid * BLOCK)."""
    from tritium_amd.lowering.memory import offset_range

    ce = {"BLOCK": 128 if fn is masked_copy_rows else 1024}
    if fn is masked_copy:
        ce.update(LC="", SC="")
    ctx, module, offs = _loads_offsets(fn, sig, **ce)
    with ctx:
        assert offset_range(offs[0]) == expect


def test_matmul_k_mask_is_computed_in_its_load_layout():
    """The tutorial matmul (fp16, 128x128x64, 4 warps): the K masks in the loop are computed in the layout of the
    loads they guard (``convert_to_ttgir`` left ``offs_k[:, None] < K - k * BLOCK_K`` in the layout of a
    ``[64, 1]`` tensor, broadcast into the load's through LDS every iteration)."""
    sig = {"a_ptr": H, "b_ptr": H, "c_ptr": H, "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}
    attrs = {a: D16 for a in sig if a.endswith("_ptr") or "stride" in a}
    ce = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "ACTIVATION": ""}
    for target in ("hip:gfx942", "cuda:80"):
        ck = compile(ASTSource(K.matmul_kernel, sig, constexprs=ce, attrs=attrs), target=target,
                     options={"num_warps": 4, "num_stages": 2}, until="ttgir")
        ttgir = ck.asm["ttgir"]
        body = ttgir[ttgir.index("scf.for"):ttgir.index("scf.yield")]
        bcasts = [ln for ln in body.splitlines() if '"tt.broadcast"' in ln]
        assert len(bcasts) >= 2, target
        for ln in bcasts:
            src, res = re.search(r"\(tensor<\w+, (.*)>\) -> tensor<\w+, (.*)> loc", ln).groups()
            assert src == res, (target, ln)
        assert "ttg.convert_layout" not in body, target


@pytest.mark.parametrize("kernel,ce", [(masked_copy, {"LC": ".cg", "SC": ".cs"}), (masked_copy_pid, {}),
                                       (masked_copy_negative, {}), (masked_copy_rows, {})])
def test_the_same_kernels_on_cuda_keep_predicated_global_accesses(kernel, ce):
    sig = {**SIG, "stride": "i32"} if kernel is masked_copy_rows else SIG
    ck = compile(ASTSource(kernel, sig, constexprs={"BLOCK": 128 if kernel is masked_copy_rows else 1024, **ce},
                           attrs=PTRS), target="cuda:80", options={"num_warps": 4})
    ptx = ck.asm["ptx"]
    assert re.search(r"@%p\d+ ld\.global", ptx) and re.search(r"@%p\d+ st\.global", ptx)
