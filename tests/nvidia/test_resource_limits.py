"""A compile's hardware limits on CUDA: shared memory beyond the arch's per-block limit refused before LLVM, and
``maxnreg="auto"``: after ptxas, a register cap that lets one more CTA on each SM, kept when ptxas fits the kernel
under it without spilling (``tritium_nvidia.ptx.occupancy_cap`` / ``with_maxnreg``, ``CUDACompiler.make_cubin``).

Head-dim-128 attention at 8 warps is the case that asked for it: tritium's 128x32 tiles take 169 registers (one
256-thread CTA per SM) where Triton's take 126 (two), and its causal 64x64 kernel ran at 1.15x Triton's with 128
registers and lost that at 138 (bench/RESULTS.md, 2026-11-28 / 29)."""
import pytest

from tests.e2e import kernels as K
from tritium.compiler import ASTSource, compile
from tritium.errors import OptionError

pytest.importorskip("llvmlite")
from tritium_nvidia.ptx import occupancy_cap, ptxas_path, with_maxnreg  # noqa: E402

D16 = {"tt.divisibility": 16}


def _attention(BM, BN, stages, causal, **options):
    ptr = "*fp16"
    sig = {"Q": ptr, "K": ptr, "V": ptr, "sm_scale": "fp32", "M": "*fp32", "Out": ptr}
    for p, dims in (("q", "zhm"), ("k", "zhn"), ("v", "zhk"), ("o", "zhm")):
        for d in dims:
            sig[f"stride_{p}{d}"] = "i32"
    sig.update(Z="i32", H="i32", N_CTX="i32")
    ce = dict(HEAD_DIM=128, BLOCK_M=BM, BLOCK_N=BN, STAGE=3 if causal else 1, stride_qk=1, stride_kk=1,
              stride_vn=1, stride_on=1)
    attrs = {k: D16 for k, v in sig.items() if v != "fp32"}
    return compile(ASTSource(K._attn_fwd, sig, constexprs=ce, attrs=attrs), target="cuda:90",
                   options={"num_warps": 8, "num_stages": stages, **options})


def test_occupancy_cap_rules():
    # 8 warps at 169 registers: one CTA (registers), shared memory for two: capped at 128 (two CTAs)
    assert occupancy_cap(90, 8, 169, 81920) == 128
    assert occupancy_cap(90, 8, 138, 114688) == 128
    # too deep a cut (128 < 0.7 * 185): left alone
    assert occupancy_cap(90, 8, 185, 131072) is None
    # shared memory allows one CTA only: registers are not the limit
    assert occupancy_cap(90, 8, 249, 229376) is None
    # already at the cap, or below it
    assert occupancy_cap(90, 8, 128, 81920) is None and occupancy_cap(90, 8, 100, 81920) is None
    # 4 warps at 100 registers: four CTAs by registers; the fifth needs <= 96 (65536 / 5 / 128, in units of 8)
    assert occupancy_cap(90, 4, 100, 16384) == 96
    # sm_80 has less shared memory per SM: two CTAs of 90 KiB do not fit there, they do on sm_90
    assert occupancy_cap(80, 8, 150, 90 * 1024) is None and occupancy_cap(90, 8, 150, 90 * 1024) == 128
    assert occupancy_cap(90, 8, 0, 0) is None


def test_with_maxnreg_caps_each_entry_only():
    ptx = (".visible .entry k(\n\t.param .u64 k_param_0\n)\n.maxntid 256, 1, 1\n{\n\tret;\n}\n"
           ".func (.reg .b32 r) f()\n{\n\tret;\n}\n")
    out = with_maxnreg(ptx, 128)
    assert ".maxntid 256, 1, 1\n.maxnreg 128\n{" in out and out.count(".maxnreg") == 1
    assert with_maxnreg(out, 96).count(".maxnreg 96") == 1 and ".maxnreg 128" not in with_maxnreg(out, 96)


@pytest.mark.parametrize("bad", ["fast", 0, -8, 1.5, True])
def test_maxnreg_option_is_checked(bad):
    with pytest.raises(OptionError, match="maxnreg must be a number of registers or 'auto'"):
        _attention(64, 32, 3, False, maxnreg=bad)


needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas not installed (pip install tritium[nvidia])")


@needs_ptxas
@pytest.mark.parametrize("BM,BN,stages,causal", [(128, 32, 3, False), (64, 64, 3, True)])
def test_auto_cap_gives_a_second_cta(BM, BN, stages, causal):
    free = _attention(BM, BN, stages, causal)
    auto = _attention(BM, BN, stages, causal, maxnreg="auto")
    assert free.metadata["n_regs"] > 128 and free.metadata["n_spills"] == 0  # one CTA per SM without the cap
    assert auto.metadata["maxnreg"] == 128
    assert auto.metadata["n_regs"] <= 128 and auto.metadata["n_spills"] == 0
    assert auto.asm["cubin"] != free.asm["cubin"]
    assert auto.asm["ptx"] == free.asm["ptx"]  # the cap is ptxas's: the PTX stage's text is the same


@needs_ptxas
def test_auto_cap_left_out_where_it_would_cut_deep():
    free = _attention(128, 64, 3, False)
    auto = _attention(128, 64, 3, False, maxnreg="auto")
    assert free.metadata["n_regs"] > 128 / 0.7  # two CTAs would need a cut below 70 % of the registers
    assert auto.metadata["maxnreg"] == "auto" and auto.metadata["n_regs"] == free.metadata["n_regs"]
    assert auto.asm["cubin"] == free.asm["cubin"]


@needs_ptxas
def test_int_maxnreg_is_still_the_entrys_directive():
    k = _attention(128, 32, 3, False, maxnreg=128)
    assert ".maxnreg 128" in k.asm["ptx"] and k.metadata["n_regs"] <= 128


@needs_ptxas
def test_a_cap_that_spills_is_not_kept():
    """Causal 128x32, 4 stages: a cap of 128 is in range (175 registers), and the capped cubin is kept only if
    ptxas fit it without spilling -- whichever way this ptxas goes."""
    from tritium_nvidia.ptx import ptx_to_cubin

    free = _attention(128, 32, 4, True)
    auto = _attention(128, 32, 4, True, maxnreg="auto")
    assert occupancy_cap(90, 8, free.metadata["n_regs"], free.metadata["shared"]) == 128
    _, capped = ptx_to_cubin(with_maxnreg(free.asm["ptx"], 128), 90)
    if capped["n_spills"] or capped["n_spill_loads"]:
        assert auto.metadata["maxnreg"] == "auto" and auto.asm["cubin"] == free.asm["cubin"]
    else:
        assert auto.metadata["maxnreg"] == 128 and auto.metadata["n_regs"] <= 128


def test_shared_memory_beyond_the_arch_is_refused_before_llvm():
    """A config whose pipeline stages need more shared memory than a block may have is an OutOfResources from the
    compile itself, naming the kernel, the bytes and the arch's limit, before LLVM and ptxas run (an autotuner
    skips it for the price of its TTGIR); the same kernel at fewer stages compiles, and 200 KiB fits sm_90's
    227 KiB but not sm_80's 163 KiB."""
    import time

    from tritium.errors import OutOfResources
    from tests.nvidia.test_wgmma_dot import matmul

    t = time.perf_counter()
    with pytest.raises(OutOfResources, match=r"kernel 'matmul_kernel': out of resource: shared memory \(bytes\), "
                                             r"required: \d+, hardware limit: 232448\. .*num_stages"):
        matmul("fp16", blocks=(256, 256, 64), num_warps=8, num_stages=4, until="llir")
    assert time.perf_counter() - t < 30
    ok = matmul("fp16", blocks=(256, 256, 64), num_warps=8, num_stages=2, until="llir")
    assert 0 < ok.metadata["shared"] <= 232448
    big = matmul("fp16", blocks=(256, 128, 64), num_warps=8, num_stages=4, until="llir")  # 4 x 48 KiB + barriers
    assert 166912 < big.metadata["shared"] <= 232448
    with pytest.raises(OutOfResources, match="hardware limit: 166912"):
        matmul("fp16", target="cuda:80", blocks=(256, 128, 64), num_warps=8, num_stages=4, until="llir")


def test_a_config_refused_in_a_compile_worker_leaves_the_pool_whole(monkeypatch, tmp_path):
    """The autotuner's compile workers send a config's OutOfResources back to the tuning process (tritium's errors
    pickle whole; this one did not, and a result the pool cannot unpickle breaks it for every config): the other
    config still comes from the workers, the error is reported, and the workers stay for the next tuning."""
    import tritium as triton
    from tritium.errors import OutOfResources
    from tritium.runtime import precompile

    pytest.importorskip("torch")
    if ptxas_path() is None:
        pytest.skip("ptxas not installed (pip install tritium[nvidia])")
    monkeypatch.setenv("TRITIUM_TARGET", "cuda:90")
    monkeypatch.setenv("TRITIUM_COMPILE_ONLY", "1")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITIUM_AUTOTUNE_PRECOMPILE", "1")
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "2")
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    cfg = [triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                         num_warps=4, num_stages=2),
           triton.Config({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 8},
                         num_warps=8, num_stages=2)]  # 256 KiB of operand tiles: beyond sm_90
    k = triton.autotune(configs=cfg, key=["M", "N", "K"])(K.matmul_kernel)
    args = ("*fp16", "*fp16", "*fp16", 2048, 2048, 2048, 2048, 1, 2048, 1, 2048, 1)
    with pytest.raises(OutOfResources, match="hardware limit: 232448"):
        k.warmup(*args, ACTIVATION="", grid=(1,))
    pc = k.last_precompile
    assert pc.mode == "parallel" and pc.ok == 1 and pc.failed == 1, pc
    assert any("OutOfResources" in e and "232448" in e for e in pc.errors), pc.errors
    pids = precompile.pool_pids()
    assert pids
    k2 = triton.autotune(configs=cfg[:1] + [triton.Config(dict(cfg[0].kwargs, BLOCK_SIZE_K=64), num_warps=4,
                                                          num_stages=2)], key=["M", "N", "K"])(K.matmul_kernel)
    k2.warmup("*bf16", "*bf16", "*bf16", *args[3:], ACTIVATION="", grid=(1,))
    assert k2.last_precompile.mode == "parallel" and k2.last_precompile.ok == 2, k2.last_precompile
    assert set(precompile.pool_pids()) & set(pids)
