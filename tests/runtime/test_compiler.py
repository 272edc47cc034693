"""tritium.compiler: ASTSource, compile() over a backend's stages, plugin hooks on the pipeline, make_ttir."""
from __future__ import annotations

import json

import pytest

import tritium
import tritium.plugins as plugins
from tritium.compiler import ASTSource, CompiledKernel, StageNotImplemented, compile
from tritium.compiler.backend import GPUTarget


@tritium.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: F821
    pass


def src(**kw):
    return ASTSource(add, kw.pop("sig", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}),
                     kw.pop("constexprs", {"BLOCK": 64}), kw.pop("attrs", {"n": {"tt.divisibility": 16}}))


def test_astsource_hash_is_stable_and_specific():
    assert src().hash() == src().hash()
    assert src().hash() != src(constexprs={"BLOCK": 128}).hash()
    assert src().hash() != src(attrs={}).hash()
    assert src(constexprs={"BLOCK": 1}).hash() != src(constexprs={"BLOCK": True}).hash()


def test_astsource_positional_signature():
    s = ASTSource(add, "*fp32, *fp32, *fp16, i64", {"BLOCK": 4})
    assert s.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp16", "n": "i64"}
    with pytest.raises(TypeError, match="3 types for 4"):
        ASTSource(add, "*fp32,*fp32,i32", {"BLOCK": 4})


def test_compile_runs_every_stage(fake):
    k = compile(src(), target="fake")
    assert isinstance(k, CompiledKernel)
    assert list(k.asm) == ["sig", "bin"]
    desc = json.loads(k.asm["sig"])
    assert desc["signature"]["out_ptr"] == "*fp32" and desc["attrs"] == {"n": {"tt.divisibility": 16}}
    assert k.asm["bin"] == k.asm["sig"].upper().encode() and k.binary == k.asm["bin"]
    md = json.loads(json.dumps(k.metadata))
    assert md["name"] == "add" and md["backend"] == "fake"
    assert md["target"] == {"backend": "fake", "arch": 1, "warp_size": 32}
    assert md["options"]["num_warps"] == 4 and md["constexprs"] == {"BLOCK": "64"}
    assert md["signature"] == [["x_ptr", "*fp32"], ["y_ptr", "*fp32"], ["out_ptr", "*fp32"], ["n", "i32"]]
    assert k.signature == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32")]
    assert md["described"] is True and md["complete"] is True
    assert k.metadata.num_warps == 4 and k.target == GPUTarget("fake", 1, 32)


def test_compile_defaults_to_active_target(fake):
    assert compile(src()).metadata["backend"] == "fake"


def test_compile_until(fake):
    k = compile(src(), target="fake", until="sig")
    assert list(k.asm) == ["sig"] and not k.complete
    with pytest.raises(StageNotImplemented, match="no stage 'ptx'.*sig, bin"):
        compile(src(), target="fake", until="ptx")


def test_hooks_amend_and_observe_stages(fake):
    seen = []

    class Dumper:
        @plugins.hookimpl
        def tritium_add_stages(self, stages, options, backend_name):
            assert backend_name == "fake" and options.num_warps == 2
            stages["extra"] = lambda prev, metadata: prev + b"!"

        @plugins.hookimpl
        def tritium_stage_output(self, kernel_name, stage, output):
            seen.append((kernel_name, stage, type(output).__name__))

    d = Dumper()
    plugins.register(d)
    try:
        k = compile(src(), target="fake", options={"num_warps": 2})
    finally:
        plugins.unregister(d)
    assert list(k.asm) == ["sig", "bin", "extra"] and k.asm["extra"].endswith(b"!")
    assert seen == [("add", "sig", "str"), ("add", "bin", "bytes"), ("add", "extra", "bytes")]


def test_launch_hooks(fake):
    events = []

    class Prof:
        @plugins.hookimpl
        def tritium_launch_enter(self, kernel, grid, args):
            events.append(("enter", kernel.name, grid, len(args)))

        @plugins.hookimpl
        def tritium_launch_exit(self, kernel):
            events.append(("exit", kernel.name))

    p = Prof()
    plugins.register(p)
    try:
        import numpy as np

        a = np.zeros(16, np.float32)
        add[(2,)](a, a, a, 16, BLOCK=16)
    finally:
        plugins.unregister(p)
    assert events == [("enter", "add", (2, 1, 1), 4), ("exit", "add")]


def test_compiled_kernel_launch(fake):
    k = compile(src(), target="fake")
    k[(3,)](1, 2, 3, 4)
    assert fake.launches[-1][1:] == ((3, 1, 1), [1, 2, 3, 4])
    k[(3,)](1, 2, 3, 4, 64)  # every parameter, constexprs included (Triton's tutorials do this)
    assert fake.launches[-1][1:] == ((3, 1, 1), [1, 2, 3, 4])


def _frontend_ready():
    try:
        from tritium.frontend import make_ttir  # noqa: F401
        import tritium.language as tl

        return hasattr(tl, "program_id")
    except ImportError:
        return False


@pytest.mark.skipif(not _frontend_ready(), reason="the frontend (tritium.frontend.make_ttir) is not there yet")
def test_make_ttir_for_cuda_without_gpu(tmp_path):
    from tests.runtime import ttir_kernels as K

    s = ASTSource(K.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                  {"BLOCK": 128}, {"x_ptr": {"tt.divisibility": 16}})
    k = compile(s, target="cuda:90", until="ttir")
    text = k.asm["ttir"]
    assert "func.func" in text and "add_kernel" in text and "tt.divisibility" in text
    assert "ttir_kernels.py" in text  # locations survive
    assert k.metadata["name"] == "add_kernel" and k.metadata["target"]["arch"] == 90
    ptx = compile(s, target="cuda:90", until="ptx").asm["ptx"]  # no GPU needed for the whole pipeline
    assert ".target sm_90a" in ptx and ".entry add_kernel" in ptx
    amdgcn = compile(s, target="hip:gfx942", until="amdgcn").asm["amdgcn"]  # nor for the hip one
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942' in amdgcn and "add_kernel:" in amdgcn


def test_signature_keeps_parameter_order_through_the_file_cache(fake):
    # names whose sorted order differs from the parameters' (n < out_ptr < x_ptr < y_ptr)
    s = src()
    first = compile(s, target="fake")
    again = compile(s, target="fake")
    assert not first.from_cache and again.from_cache
    order = [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32")]
    assert first.signature == again.signature == order
    assert again.metadata["signature"] == [list(p) for p in order]
    assert again.runtime_args([1, 2, 3, 4, 64]) == [1, 2, 3, 4]


def test_options_are_parsed_once_per_compile(fake, monkeypatch):
    from tests.runtime.fakebackend import FakeCompiler

    calls = []
    real = FakeCompiler.parse_options
    monkeypatch.setattr(FakeCompiler, "parse_options", lambda self, o: calls.append(dict(o)) or real(self, o))
    import numpy as np

    a = np.zeros(16, np.float32)
    add[(1,)](a, a, a, 16, BLOCK=16, num_warps=2)  # the jit parses (and checks) them, compile() takes the object
    assert calls == [{"num_warps": 2}]
    opts = real(FakeCompiler(fake, "fake"), {"num_warps": 8})
    assert compile(src(), target="fake", options=opts).metadata["num_warps"] == 8
    assert calls == [{"num_warps": 2}]
