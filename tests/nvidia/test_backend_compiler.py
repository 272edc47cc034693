"""The cuda backend owns its pipeline: stages are methods of CUDACompiler, backend TTIR passes run inside the one
TTIR PassManager, each stage hands its module to the next (no re-parse), hash() names the tools' versions."""
import pytest

from tests.e2e import kernels as K
from tests.nvidia import extra_kernels as X
from tritium.compiler import ASTSource, compile
from tritium.compiler import versions
from tritium.compiler.stages import Handoff

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from mlir import ir  # noqa: E402
from tritium_nvidia.compiler import CUDACompiler  # noqa: E402

ADD = (K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
       dict(BLOCK_SIZE=1024))
COPY = (X.block_ptr_copy, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "sxm": "i32", "sxn": "i32",
                           "sym": "i32", "syn": "i32"}, dict(BM=16, BN=32, SCALE=3.0))


def test_stages_are_methods_in_order():
    c = CUDACompiler()
    stages = {}
    c.add_stages(stages, c.parse_options({}), c.target_for_arch())
    assert list(stages) == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    for name in stages:
        assert callable(getattr(CUDACompiler, f"make_{name}"))


def test_handoff_gives_the_module_only_for_its_own_text():
    from tritium.dialects import make_context

    with make_context():
        m = ir.Module.parse("module {}")
    h = Handoff()
    text = h.put(str(m), m)
    assert h.module_for(text) is m
    # taken once: the next request parses
    assert h.module_for(text) is not m
    h.put(text, m)
    substitute = "module {}\n"  # e.g. a plugin's override: other text, so it is parsed
    assert h.module_for(substitute) is not m


def _count_parses(monkeypatch):
    calls = []
    real = ir.Module.parse

    def parse(text, *a, **k):
        if "func.func" in str(text):  # a kernel's IR, not the IRDL of a dialect being loaded
            calls.append(1)
        return real(text, *a, **k)

    monkeypatch.setattr(ir.Module, "parse", parse)
    return calls


def test_ttgir_does_not_parse_what_ttir_printed(monkeypatch):
    calls = _count_parses(monkeypatch)
    fn, sig, ce = ADD
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", until="ttgir", use_cache=False)
    assert "ttg.blocked" in k.asm["ttgir"]
    assert calls == []


def test_a_substituted_stage_output_is_parsed(monkeypatch):
    """A plugin overriding the ttir output: the ttgir stage must compile the substitute, not the handed-on module."""
    fn, sig, ce = ADD
    c = CUDACompiler()
    opts = c.parse_options({})
    stages = {}
    c.add_stages(stages, opts, c.target_for_arch())
    md = {"target": {"backend": "cuda", "arch": 90, "warp_size": 32}}
    ttir = stages["ttir"](ASTSource(fn, sig, constexprs=ce), md)
    substitute = "".join(list(ttir))  # equal text, another object: what an override plugin returns
    assert substitute == ttir and substitute is not ttir
    calls = _count_parses(monkeypatch)
    ttgir = stages["ttgir"](substitute, md)
    assert calls and "ttg.blocked" in ttgir


def test_block_pointers_rewritten_inside_the_one_ttir_pipeline(monkeypatch):
    import tritium.passes.ttir.pipeline as P

    runs = []
    real = P.run_passes

    def counting(module, pipeline, **kw):
        runs.append([name for name, _ in pipeline])
        return real(module, pipeline, **kw)

    monkeypatch.setattr(P, "run_passes", counting)
    fn, sig, ce = COPY
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", until="ttir", use_cache=False)
    assert "tt.make_tensor_ptr" not in k.asm["ttir"] and "tt.advance" not in k.asm["ttir"]
    # sm_90: host descriptors that can be TMA tensor maps are marked first
    assert len(runs) == 1 and runs[0][:2] == ["tritium-tma-descriptor-args", "tritium-rewrite-tensor-pointer"]
    # the interpreter keeps block pointers
    ki = compile(ASTSource(fn, sig, constexprs=ce), target="interpreter", until="ttir", use_cache=False)
    assert "tt.make_tensor_ptr" in ki.asm["ttir"]


def test_hash_names_the_tools(monkeypatch):
    h = CUDACompiler().hash()
    for dist in ("tritium=", "llvmlite=0.50.0", "nvidia-cuda-nvcc=", "nvidia-nvvm=", "xtc-mlir-python-bindings="):
        assert dist in h
    monkeypatch.setenv("TRITIUM_PTXAS_PATH", "/opt/other/ptxas")
    assert CUDACompiler().hash() != h


def test_tool_version_falls_back_to_the_pin(monkeypatch):
    from importlib import metadata

    real = metadata.version

    def version(dist):
        if dist == "llvmlite":
            raise metadata.PackageNotFoundError(dist)
        return real(dist)

    versions.tool_version.cache_clear()
    monkeypatch.setattr(metadata, "version", version)
    try:
        assert versions.tool_version("llvmlite") == "0.50.0"  # constraints.txt
        assert versions.tool_version("no-such-dist") == "unknown"
    finally:
        versions.tool_version.cache_clear()
