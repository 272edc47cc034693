"""The occupancy rules (tritium_amd.occupancy): hard cases worked out by hand from LLVM's AMDGPU rules, the same
rules held against LLVM's own ``; Occupancy:`` comment (LLVM 22's llc through ziglang's clang, the amd extra's
assembler) for kernels that use a chosen number of VGPRs / AGPRs / SGPRs and static LDS, and the compiled kernel's
metadata ``occupancy`` consistent with its registers and its work-group's LDS."""
import re
import subprocess
import sys

import pytest

from tritium_amd.occupancy import occupancy, occupancy_limits, rules_for


@pytest.mark.parametrize("arch,vgprs,sgprs,lds,threads,wave,expected", [
    # CDNA2/3: 512 unified VGPRs (AGPRs included) in blocks of 8, 8 wave slots
    ("gfx942", 10, 20, 0, 256, 64, 8),
    ("gfx942", 64, 20, 0, 256, 64, 8),      # 512 // 64
    ("gfx942", 65, 20, 0, 256, 64, 7),      # 72 allocated: 512 // 72
    ("gfx942", 128, 20, 0, 256, 64, 4),
    ("gfx942", 256, 20, 0, 256, 64, 2),
    ("gfx942", 257, 20, 0, 256, 64, 1),     # 264 allocated
    ("gfx942", 512, 20, 0, 256, 64, 1),     # 256 VGPRs + 256 AGPRs
    ("gfx90a", 168, 20, 0, 256, 64, 3),     # 512 // 168
    ("gfx942", 8, 101, 0, 256, 64, 7),      # GFX9 SGPR steps: > 100 -> 7
    ("gfx942", 8, 100, 0, 256, 64, 8),
    # LDS: 64 KiB per CU on gfx942, 4 SIMDs; a 256-thread group is 4 waves = 1 wave per SIMD per group
    ("gfx942", 8, 20, 32768, 256, 64, 2),   # 2 groups per CU
    ("gfx942", 8, 20, 40000, 256, 64, 1),   # 1 group
    ("gfx942", 8, 20, 65537, 256, 64, 1),   # over the CU: LLVM's worst case, 1
    ("gfx942", 8, 20, 16384, 64, 64, 1),    # 4 one-wave groups over 4 SIMDs
    ("gfx942", 8, 20, 1024, 1024, 64, 8),   # 16 waves per group, 2 groups
    ("gfx942", 8, 20, 0, 128, 64, 8),       # 16 barriers: 16 groups of 2 waves = 8 per SIMD
    ("gfx950", 8, 20, 65536, 256, 64, 2),   # 160 KiB per CU
    ("gfx950", 8, 20, 40000, 256, 64, 4),
    # RDNA3 wave32: 1536 VGPRs in blocks of 24 on gfx1100, 1024 in 16 on gfx1102; 128 KiB per WGP; no SGPR limit
    ("gfx1100", 200, 106, 0, 128, 32, 7),   # 1536 // 216
    ("gfx1102", 200, 106, 0, 128, 32, 4),   # 1024 // 208
    ("gfx1100", 8, 106, 65536, 256, 32, 4),  # 2 groups of 8 waves over 4 SIMDs
    ("gfx1200", 256, 106, 0, 128, 32, 5),   # 1536 // 264
])
def test_hard_cases(arch, vgprs, sgprs, lds, threads, wave, expected):
    assert occupancy(arch, vgprs, sgprs, lds, threads, wave) == expected


def test_limits_name_the_binding_resource():
    lim = occupancy_limits("gfx942", 256, 80, 65536, 256, 64)
    assert lim == {"waves": 8, "vgprs": 2, "sgprs": 8, "lds": 1}
    assert occupancy("gfx1010", 10, 10, 0, 64, 32) is None and rules_for("gfx1010") is None


# ------------------------------------------------------------------------------------------------
# against LLVM's own asm-printer comment
# ------------------------------------------------------------------------------------------------

def _kernel_ir(vgprs, agprs, sgprs, lds, threads):
    clobbers = [f"~{{{r}{n - 1}}}" for r, n in (("v", vgprs), ("a", agprs), ("s", sgprs)) if n]
    glob = f"@lds = internal addrspace(3) global [{lds} x i8] undef, align 4\n" if lds else ""
    use = "  store volatile i8 1, ptr addrspace(3) @lds\n" if lds else ""
    return (f'target triple = "amdgcn-amd-amdhsa"\n{glob}define amdgpu_kernel void @k() #0 {{\n{use}'
            f'  call void asm sideeffect "; regs", "{",".join(clobbers)}"()\n  ret void\n}}\n'
            f'attributes #0 = {{ "amdgpu-flat-work-group-size"="1,{threads}" }}\n')


def _llvm_occupancy(arch, text, tmp_path):
    src = tmp_path / "k.ll"
    src.write_text(text)
    r = subprocess.run([sys.executable, "-m", "ziglang", "clang", "-cc1", "-triple", "amdgcn-amd-amdhsa",
                        "-target-cpu", arch, "-S", "-O2", "-o", "-", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    get = lambda pat: int(re.search(pat, r.stdout).group(1))  # noqa: E731
    return (get(r"; Occupancy: (\d+)"), get(r"\.vgpr_count:\s+(\d+)"), get(r"\.sgpr_count:\s+(\d+)"),
            get(r"\.group_segment_fixed_size:\s+(\d+)"))


_LLVM_CASES = (
    [(a, v, ag, 0, 0, 256) for a in ("gfx942", "gfx90a", "gfx950")
     for v, ag in ((10, 0), (65, 0), (129, 0), (168, 0), (256, 0), (200, 64), (256, 256), (100, 30))]
    + [("gfx942", 8, 0, s, 0, 256) for s in (81, 89, 101)]
    + [(a, 8, 0, 0, lds, t) for a, top in (("gfx942", 65536), ("gfx950", 100000)) for lds in (16384, 40000, top)
       for t in (64, 256, 1024)]
    + [(a, v, 0, 0, 0, 128) for a in ("gfx1100", "gfx1200", "gfx1102") for v in (64, 97, 200, 256)]
    + [(a, 8, 0, 0, lds, t) for a in ("gfx1100", "gfx1102") for lds in (16384, 40000) for t in (32, 256, 1024)])


@pytest.mark.parametrize("arch,vgprs,agprs,sgprs,lds,threads", _LLVM_CASES)
def test_rules_reproduce_llvms_occupancy(arch, vgprs, agprs, sgprs, lds, threads, tmp_path):
    pytest.importorskip("ziglang")
    llvm, vgpr_count, sgpr_count, lds_bytes = _llvm_occupancy(arch, _kernel_ir(vgprs, agprs, sgprs, lds, threads),
                                                              tmp_path)
    assert lds_bytes == lds and vgpr_count >= vgprs + agprs
    wave = 32 if arch.startswith("gfx1") else 64
    assert occupancy(arch, vgpr_count, sgpr_count, lds_bytes, threads, wave) == llvm


# ------------------------------------------------------------------------------------------------
# the compiled kernel's metadata
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["gfx942", "gfx90a", "gfx1100"])
def test_compiled_kernel_metadata_holds_its_occupancy(arch):
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_compile import build
    from tests.e2e import kernels as K

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
           "stride_cn": "i32"}
    k = build(K.matmul_kernel, sig, arch=arch, num_warps=4, options={"num_stages": 2}, BLOCK_SIZE_M=64,
              BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")
    md = k.metadata
    wave = 32 if arch == "gfx1100" else 64
    lds = md["lds"] + md["shared"]
    assert md["shared"] > 0
    assert md["occupancy"] == occupancy(arch, md["vgprs"], md["sgprs"], lds, 4 * wave, wave)
    assert md["occupancy"] == min(md["occupancy_limits"].values()) >= 1
    if arch != "gfx1100":  # unified file: VGPRs then AGPRs, in blocks of 8
        assert md["vgprs"] >= md["agprs"]
        assert md["occupancy_limits"]["vgprs"] == min(8, max(1, 512 // (-(-md["vgprs"] // 8) * 8)))
    # the work-group's LDS is the dynamic LDS the launch passes (``shared``) over the static
    assert md["occupancy_limits"]["lds"] == occupancy(arch, 1, 1, lds, 4 * wave, wave)
