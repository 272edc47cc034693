"""Compile-only tests of the hip backend (no AMD GPU: what is verified here is the compiler's output): the e2e
kernels go TTIR -> TTGIR -> LLVM IR -> AMDGCN -> hsaco for gfx942 and gfx90a (wave64) and gfx1100 (wave32); each
hsaco is an AMDGPU ELF code object whose metadata names the kernel with a kernarg segment matching the signature;
the AMDGCN holds the expected instructions (128-bit global accesses where the axis info allows, DPP / ds_swizzle /
ds_bpermute in reductions, s_barrier around LDS, global atomics).  Math with and without the ROCm device libraries:
test_math.py; printing and assertions: test_printf.py."""
import json
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.e2e import kernels as K  # noqa: E402
from tests.nvidia import extra_kernels as X  # noqa: E402
from tests.nvidia import extra_ops_kernels as XO  # noqa: E402
from tests.nvidia.test_compile import CASES  # noqa: E402  (the e2e kernels with their signatures)
from tritium.compiler import ASTSource, compile  # noqa: E402
from tritium.errors import CompilationError, CompilationFailed  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

ARCHS = {"gfx942": 64, "gfx90a": 64, "gfx1100": 32}
F = "*fp32"
D16 = {"tt.divisibility": 16}


def _lld_available():
    from tritium_amd.hsaco import lld_command

    return lld_command() is not None


def build(fn, sig, arch="gfx942", num_warps=4, attrs=None, options=None, **ce):
    until = None if _lld_available() else "amdgcn"
    opts = {"num_warps": num_warps, **(options or {})}
    return compile(ASTSource(fn, sig, constexprs=ce, attrs=attrs), target=f"hip:{arch}", options=opts, until=until)


#: sizes of the kernel arguments by signature type, as the AMDGPU ABI lays them out
_ARG_SIZE = {"i1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "fp16": 2, "bf16": 2, "i32": 4, "u32": 4, "fp32": 4,
             "i64": 8, "u64": 8, "fp64": 8}


def expected_kernargs(sig: dict) -> list:
    """``[(offset, size)]`` of the explicit kernel arguments of a signature: each naturally aligned, in order."""
    out, off = [], 0
    for t in sig.values():
        size = 8 if t.startswith("*") else _ARG_SIZE[t]
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out


def check_code_object(k, sig, arch):
    md = k.metadata
    asm = k.asm["amdgcn"]
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{arch}' in asm
    assert md["wavefront_size"] == ARCHS[arch] == md["warp_size"]
    assert [(a["offset"], a["size"]) for a in md["kernargs"]] == expected_kernargs(sig)
    assert [a["kind"] for a in md["kernargs"]] == ["global_buffer" if t.startswith("*") else "by_value"
                                                    for t in sig.values()]
    assert md["kernarg_size"] >= sum(expected_kernargs(sig)[-1])
    assert md["vgprs"] > 0 and md["sgprs"] > 0 and md["vgpr_spills"] == 0 and md["sgpr_spills"] == 0
    assert md["max_flat_workgroup_size"] == md["num_warps"] * ARCHS[arch]
    assert len(md["arg_types"]) == len(sig)
    if "hsaco" in k.asm:
        elf = k.asm["hsaco"]
        assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 224  # EM_AMDGPU
        assert f"{md['name']}.kd".encode() in elf  # the kernel descriptor's symbol
    json.dumps(md)  # the metadata stays JSON


@pytest.mark.parametrize("arch", sorted(ARCHS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_e2e_kernel_compiles_to_hsaco(name, arch):
    fn, sig, ce = CASES[name]
    k = build(fn, sig, arch, **ce)
    assert k.metadata["name"] == fn.__name__
    check_code_object(k, sig, arch)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_ttgir_is_sized_to_the_wavefront(arch):
    fn, sig, ce = CASES["softmax"]
    text = compile(ASTSource(fn, sig, constexprs=ce), target=f"hip:{arch}", until="ttgir").asm["ttgir"]
    assert f'"ttg.threads-per-warp" = {ARCHS[arch]}' in text and f'ttg.target = "hip:{arch}"' in text
    for lanes in re.findall(r"#ttg\.blocked<array<i32: [\d, ]+>, array<i32: ([\d, ]+)>", text):
        n = 1
        for x in lanes.split(","):
            n *= int(x)
        assert n == ARCHS[arch]


def test_llir_is_an_amdgpu_kernel():
    fn, sig, ce = CASES["softmax"]
    k = compile(ASTSource(fn, sig, constexprs=ce), target="hip:gfx942", options={"num_warps": 8, "waves_per_eu": 2},
                until="llir")
    llir = k.asm["llir"]
    assert 'target triple = "amdgcn-amd-amdhsa"' in llir
    assert "define amdgpu_kernel void @softmax_kernel(" in llir
    assert '"amdgpu-flat-work-group-size"="1,512"' in llir and '"amdgpu-waves-per-eu"="2"' in llir
    assert '!{i32 1, !"amdhsa_code_object_version", i32 500}' in llir
    assert "@global_smem = external addrspace(3) global [0 x i8]" in llir  # LDS, sized at launch (metadata shared)
    assert "llvm.amdgcn.workitem.id.x" in llir and "llvm.amdgcn.workgroup.id.x" in llir


@pytest.mark.parametrize("arch,preload", [("gfx942", True), ("gfx90a", False)])
def test_kernel_arguments_are_preloaded_on_cdna3(arch, preload):
    fn, sig, ce = CASES["add"]
    k = build(fn, sig, arch, **ce)
    assert ("define amdgpu_kernel void @add_kernel(ptr addrspace(1) inreg" in k.asm["llir"]) == preload
    m = re.search(r"\.amdhsa_user_sgpr_kernarg_preload_length (\d+)", k.asm["amdgcn"])
    assert (m is not None and int(m.group(1)) > 0) == preload


# ------------------------------------------------------------------ memory
@pytest.mark.parametrize("arch,load,store", [("gfx942", "global_load_dwordx4", "global_store_dwordx4"),
                                             ("gfx90a", "global_load_dwordx4", "global_store_dwordx4"),
                                             ("gfx1100", "global_load_b128", "global_store_b128")])
def test_vector_add_uses_128_bit_accesses(arch, load, store):
    fn, sig, ce = CASES["add"]
    k = build(fn, sig, arch, attrs={n: D16 for n in sig}, **ce)
    asm = k.asm["amdgcn"]
    reps = 1024 // (4 * 4 * ARCHS[arch])  # 4 warps of 4 elements per lane: 1 vector per lane on wave64, 2 on wave32
    assert asm.count(load) == 2 * reps and asm.count(store) == reps, re.findall(r"global_\w+", asm)
    if reps == 1:  # a mask is one branch around whole vector accesses (exec-masked): the lane's three share it
        assert len(re.findall(r"s_and_saveexec_b(?:64|32)", asm)) == 1


def test_unaligned_accesses_stay_scalar():
    fn, sig, ce = CASES["add"]
    asm = build(fn, sig, **ce).asm["amdgcn"]  # no divisibility: the mask may change every element
    assert "global_load_dwordx4" not in asm and asm.count("global_load_dword ") == 8


def test_masked_load_other_and_cache_modifiers():
    @triton.jit
    def k(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=-1.0, cache_modifier=".cv")
        tl.store(Y + offs, x, mask=offs < n, cache_modifier=".cs")

    k = build(k, {"X": F, "Y": F, "n": "i32"}, attrs={"X": D16, "Y": D16, "n": D16}, BLOCK=1024)
    llir = k.asm["llir"]
    assert "load volatile <4 x float>" in llir and "!nontemporal" in llir
    assert "float -1.000000e+00" in llir  # the masked-off value
    asm = k.asm["amdgcn"]
    assert "global_load_dwordx4" in asm and "sc0 sc1" in asm and " nt" in asm


def test_atomics():
    fn, sig, ce = CASES["atomics"]
    k = build(fn, sig, **ce)
    asm = k.asm["amdgcn"]
    assert "global_atomic_add " in asm and "global_atomic_smax " in asm
    assert 'syncscope("agent")' in k.asm["llir"] and " acq_rel" in k.asm["llir"]


def test_atomic_scopes_orders_cas_and_float_max():
    @triton.jit
    def k(P, Q, R, V, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        v = tl.load(V + offs)
        tl.atomic_add(P + offs, v, sem="relaxed", scope="cta")
        tl.atomic_max(Q + offs, v, sem="release")
        old = tl.atomic_cas(R + offs, v, v + 1.0, sem="acquire")
        tl.atomic_xchg(V + offs, old, scope="sys")

    k = build(k, {"P": F, "Q": F, "R": F, "V": F}, BLOCK=256)
    llir = k.asm["llir"]
    assert re.search(r'atomicrmw fadd ptr addrspace\(1\) %\w+, float %\w+ syncscope\("workgroup"\) monotonic', llir)
    # float max through the integer orderings: signed max for a clear sign bit, unsigned min for a set one
    assert re.search(r'atomicrmw max ptr addrspace\(1\) %\w+, i32 %\w+ syncscope\("agent"\) release', llir)
    assert re.search(r'atomicrmw umin ptr addrspace\(1\) %\w+, i32 %\w+ syncscope\("agent"\) release', llir)
    assert re.search(r'cmpxchg ptr addrspace\(1\) %\w+, i32 %\w+, i32 %\w+ syncscope\("agent"\) acquire acquire',
                     llir)
    assert re.search(r"atomicrmw xchg ptr addrspace\(1\) %\w+, float %\w+ acq_rel", llir)  # sys: no syncscope
    asm = k.asm["amdgcn"]
    assert "global_atomic_cmpswap" in asm and "global_atomic_smax" in asm and "global_atomic_umin" in asm
    assert "global_atomic_add_f32" in asm  # gfx942's float add at agent / workgroup scope


# ------------------------------------------------------------------ cross-lane: reductions, scans, LDS
def test_reductions_use_dpp_swizzle_readlane_and_lds():
    fn, sig, ce = CASES["softmax"]
    asm = build(fn, sig, **ce).asm["amdgcn"]
    assert "quad_perm:[1,0,3,2]" in asm and "quad_perm:[2,3,0,1]" in asm  # lane ^ 1, lane ^ 2
    assert "row_shr:4" in asm and "row_shl:4" in asm and "row_shr:8" in asm and "row_shl:8" in asm
    assert "ds_swizzle_b32" in asm and "swizzle(SWAP,16)" in asm  # lane ^ 16
    # the last step of a whole-wave reduction (wave64: lane ^ 32) combines lane 0's and lane 32's values
    assert re.search(r"v_readlane_b32 s\d+, v\d+, 0\b", asm) and re.search(r"v_readlane_b32 s\d+, v\d+, 32\b", asm)
    assert "ds_bpermute_b32" not in asm
    # the warps' partials in LDS: one read per lane (partial lane % 4), a butterfly over 4 lanes
    assert "s_barrier" in asm and "ds_write_b32" in asm and "ds_read_b32" in asm and "ds_read_b128" not in asm
    assert "v_exp_f32" in asm


def test_row_reductions_within_the_vgpr_bar():
    """Issue 12's bar on bench/amd_static.py's rows: VGPRs at most 1.25x Triton 3.6's for the same kernel and
    options (Triton: softmax 10, layer norm 14 on gfx942, measured with bench/amd_static.py)."""
    from tests.e2e import kernels as K

    d16 = {"tt.divisibility": 16}
    sig = {"output_ptr": F, "input_ptr": F, "input_row_stride": "i32", "output_row_stride": "i32", "n_cols": "i32"}
    k = build(K.softmax_kernel, sig, num_warps=8, attrs={a: d16 for a in list(sig)[:4]}, BLOCK_SIZE=1024)
    assert k.metadata["vgprs"] <= 12 and k.metadata["vgpr_spills"] == 0, k.metadata["vgprs"]
    sig = {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": F, "Rstd": F, "stride": "i32",
           "N": "i32", "eps": "fp32"}
    k = build(K._layer_norm_fwd_fused, sig, num_warps=8, attrs={a: d16 for a in list(sig)[:7]}, BLOCK_SIZE=1024)
    assert k.metadata["vgprs"] <= 17 and k.metadata["vgpr_spills"] == 0, k.metadata["vgprs"]
    # a masked load's conversion stays after its branch: no wait for a load inside the branch that issues it
    assert not re.search(r"global_load_ushort (v\d+)[^\n]*\n\s*s_waitcnt vmcnt\(0\)\n\s*v_cvt_f32_f16",
                         k.asm["amdgcn"])


def test_wave32_reductions_need_no_bpermute():
    fn, sig, ce = CASES["softmax"]
    k = build(fn, sig, "gfx1100", **ce)
    asm = k.asm["amdgcn"]
    assert "row_shr:8" in asm and "ds_bpermute_b32" not in asm
    assert re.search(r"v_readlane_b32 s\d+, v\d+, 16\b", asm)  # wave32's last step: lanes 0 and 16
    assert k.metadata["shared"] == 4 * 4  # one f32 partial per warp


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans(arch, reverse):
    k = build(X.cumsum_1d, {"X": F, "Y": F, "n": "i32"}, arch, BLOCK=1024, REVERSE=reverse)
    check_code_object(k, {"X": F, "Y": F, "n": "i32"}, arch)
    assert "ds_bpermute_b32" in k.asm["amdgcn"]  # the lanes' Hillis-Steele steps read lane - k
    sig = {"X": F, "Y": F, "stride": "i32"}
    check_code_object(build(X.cumsum_2d, sig, arch, BM=32, BN=64, AXIS=0, REVERSE=reverse), sig, arch)
    check_code_object(build(X.cummax_2d, sig, arch, BM=64, BN=16, AXIS=1), sig, arch)
    sig = {"A": F, "B": F, "OA": F, "OB": F}
    check_code_object(build(X.affine_scan, sig, arch, BLOCK=256, REVERSE=reverse), sig, arch)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_histogram_gather_and_block_pointers(arch):
    sig = {"X": "*i32", "O": "*i32", "n": "i32"}
    k = build(XO.histogram_k, sig, arch, BLOCK=1024, BINS=256, MASKED=True)
    check_code_object(k, sig, arch)
    assert "ds_add_u32" in k.asm["amdgcn"]
    sig = {"S": F, "I": "*i32", "O": F}
    check_code_object(build(XO.gather_2d, sig, arch, M=32, N=8, IM=32, IN=64, AXIS=1), sig, arch)
    sig = {"X": F, "Y": F, "M": "i32", "N": "i32", "sxm": "i32", "sxn": "i32", "sym": "i32", "syn": "i32"}
    check_code_object(build(X.block_ptr_copy, sig, arch, BM=32, BN=64, SCALE=2.0), sig, arch)


def test_num_programs_reads_the_implicit_kernel_arguments():
    fn, sig, ce = CASES["softmax_persistent"]
    k = build(fn, sig, **ce)
    assert "llvm.amdgcn.implicitarg.ptr" in k.asm["llir"] and "__ockl" not in k.asm["llir"]
    # the hidden arguments (block counts first) follow the explicit ones
    assert k.metadata["kernarg_size"] > sum(expected_kernargs(sig)[-1])


def test_dot_takes_the_fma_path_on_rdna():
    # fp32 operands: RDNA3 has no v_wmma for them (CDNA dots on v_mfma: tests/amd/test_mfma_compile.py; RDNA3
    # fp16 / bf16 dots on v_wmma: tests/amd/test_wmma.py)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
           "stride_cn": "i32"}
    k = build(K.matmul_kernel, sig, "gfx1100", BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8)
    asm = k.asm["amdgcn"]
    assert "v_mfma" not in asm and "v_wmma" not in asm and ("v_pk_fma_f32" in asm or "v_fma" in asm)
    assert k.metadata["kernargs"][-1] == {"offset": 56, "size": 4, "kind": "by_value"}


# ------------------------------------------------------------------ math and conversions
def test_native_math():
    fn, sig, ce = CASES["math_exp"]
    assert "v_exp_f32" in build(fn, sig, **ce).asm["amdgcn"]
    fn, sig, ce = CASES["math_log"]
    assert "v_log_f32" in build(fn, sig, **ce).asm["amdgcn"]
    fn, sig, ce = CASES["math_sqrt"]
    assert "v_sqrt_f32" in build(fn, sig, **ce).asm["amdgcn"]


def test_rtz_and_fp8_casts():
    @triton.jit
    def rtz(X, Y, Z, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs)
        tl.store(Y + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
        tl.store(Z + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))

    k = build(rtz, {"X": F, "Y": "*fp16", "Z": "*bf16"}, BLOCK=256)
    assert k.asm["llir"].count("fptrunc float") >= 2
    sig = {"X": F, "Y8": "*fp8e4b8", "Y": F, "n": "i32"}  # fnuz fp8 on gfx942: the instructions (tests/amd/test_fp8.py)
    asm = build(X.fp8_roundtrip, sig, FP8=tl.float8e4b8, BLOCK=256).asm["amdgcn"]
    assert "v_cvt_pk_fp8_f32" in asm and "v_cvt_pk_f32_fp8" in asm


# ------------------------------------------------------------------ inline asm
def test_amdgcn_inline_asm():
    @triton.jit
    def shift(X, O, n, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + r, mask=r < n)
        y = tl.inline_asm_elementwise("v_lshlrev_b32 $0, 3, $1", "=v,v", [x], dtype=tl.int32, is_pure=True,
                                      pack=1)
        tl.store(O + r, y, mask=r < n)

    sig = {"X": "*i32", "O": "*i32", "n": "i32"}
    k = build(shift, sig, BLOCK=512)
    assert k.asm["amdgcn"].count("v_lshlrev_b32 v") >= 2
    check_code_object(k, sig, "gfx942")


def test_foreign_inline_asm_is_an_assembler_error():
    if not _lld_available():
        pytest.skip("no ld.lld / ziglang: pip install 'tritium[amd]'")
    with pytest.raises(CompilationFailed, match="invalid instruction"):
        build(XO.asm_shift, {"X": "*i32", "O": "*i32", "n": "i32"}, BLOCK=256)  # PTX text
