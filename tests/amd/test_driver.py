"""The hip driver without an AMD GPU: why it is inactive (no hip-python, no ROCm runtime, no device), compile-only
runs, and the load / launch call sequence through a stand-in for hip-python (:class:`tritium_amd.stub.StubHIP`, a
test stand-in: it answers the calls and records them with a copy of the kernarg segment each launch hands over;
nothing runs a kernel) with real kernels compiled for gfx942."""
import os
import struct
import subprocess
import sys

import pytest

import tritium
from tritium.errors import BackendUnavailable, KernelRuntimeError, OutOfResources
from tritium.runtime import driver

import tritium_amd.driver as hd
from tritium_amd.driver import HIPDriver, HIPError
from tritium_amd.stub import StubGPUTensor, StubHIP

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F = "*fp32"


@pytest.fixture
def stub(monkeypatch):
    """A StubHIP as hip-python, and no compile-only mode."""
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)

    def install(**kw):
        h = StubHIP(**kw)
        monkeypatch.setattr(hd, "_hip", h)
        return h
    return install


# ----------------------------------------------------------------------------------------------- reasons
def test_reason_without_hip_python(monkeypatch):
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)
    monkeypatch.setattr(hd, "_hip", None)
    monkeypatch.setitem(sys.modules, "hip", None)  # import hip -> ImportError
    d = HIPDriver()
    assert not d.is_active()
    assert d.inactive_reason().startswith("hip-python is not installed")
    assert "pip install 'tritium[amd]'" in d.inactive_reason()
    with pytest.raises(BackendUnavailable, match="hip: hip-python is not installed"):
        d.get_current_target()


def test_reason_without_the_rocm_runtime(monkeypatch):
    """hip-python (the amd extra's pin) imports without ROCm; its first call cannot dlopen libamdhip64.so."""
    pytest.importorskip("hip")
    if any(os.path.exists(os.path.join(p, "libamdhip64.so")) for p in ("/opt/rocm/lib", "/usr/lib")):
        pytest.skip("a ROCm runtime is installed here")
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)
    monkeypatch.setattr(hd, "_hip", None)
    d = HIPDriver()
    assert not d.is_active()
    assert d.inactive_reason() == "no HIP runtime (libamdhip64.so not found: install ROCm)"


def test_reason_without_a_device(stub):
    stub(devices=0)
    d = HIPDriver()
    assert not d.is_active()
    assert d.inactive_reason() == "no AMD GPU (hipGetDeviceCount: hipErrorNoDevice)"


def test_tritium_backends_shows_the_hip_reason():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_COMPILE_ONLY", "TRITIUM_TARGET")}
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "backends"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    hip_lines = r.stdout[r.stdout.index("hip"):].splitlines()[:3]
    # the reason a fresh process finds (this one may have hip-python imported, which changes how it asks)
    q = subprocess.run([sys.executable, "-c", "from tritium_amd.driver import HIPDriver; d = HIPDriver(); "
                        "print(d.is_active(), d.inactive_reason())"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    active, _, reason = q.stdout.strip().partition(" ")
    assert active == "False", q.stdout + q.stderr
    assert any(f"active: no ({reason})" in ln for ln in hip_lines), r.stdout


# ----------------------------------------------------------------------------------------------- compile only
def test_compile_only_example_launches_nothing(tmp_path):
    env = dict(os.environ, TRITIUM_TARGET="hip:gfx942", TRITIUM_COMPILE_ONLY="1", TRITIUM_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "vector_add.py")], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "compile-only: add_kernel compiled for hip:gfx942" in r.stdout
    cached = [f for _, _, fs in os.walk(tmp_path) for f in fs]
    assert any(f.endswith(".hsaco") for f in cached), cached


def test_compile_only_in_process(monkeypatch, tmp_path):
    pytest.importorskip("mlir")
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRITIUM_TARGET", "hip:gfx90a")
    monkeypatch.setenv("TRITIUM_COMPILE_ONLY", "1")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hd, "_hip", StubHIP(devices=0))  # compile-only needs no runtime
    driver.reset()
    try:
        import tritium.language as tl

        @tritium.jit
        def scale(x_ptr, n, s, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)

        d = driver.get_driver("hip")
        assert d.is_active() and d.inactive_reason() == ""
        assert d.get_current_target() == tritium.compiler.GPUTarget("hip", "gfx90a", 64)
        x = StubGPUTensor(torch.float32, 0x1000)
        scale[(4,)](x, 100, 2.0, BLOCK=64)
        scale[(8,)](x, 100, 2.0, BLOCK=64)
        assert d.skipped_launches == 2 and scale.compile_count == 1
        assert any(f.endswith(".hsaco") for _, _, fs in os.walk(tmp_path) for f in fs)
        assert hd._hip.calls == []  # no runtime call at all
    finally:
        driver.reset()


# ----------------------------------------------------------------------------------------------- launching
def _kernel(num_warps=4, arch="gfx942", **opts):
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tests.amd.test_kernargs import grid_kernel
    from tritium.compiler import ASTSource, compile

    sig = {"x_ptr": F, "y_ptr": F, "n": "i32", "big": "i64", "scale": "fp32"}
    return compile(ASTSource(grid_kernel, sig, constexprs={"BLOCK": 256}), target=f"hip:{arch}",
                   options={"num_warps": num_warps, **opts})


def _hidden_offset(k, kind):
    return next(a["offset"] for a in k.metadata["hidden_kernargs"] if a["kind"] == kind)


def test_active_driver_reads_the_device(stub):
    h = stub(devices=2)
    d = HIPDriver()
    assert d.is_active() and d.inactive_reason() == ""
    t = d.get_current_target()
    assert (t.backend, t.arch, t.warp_size) == ("hip", "gfx942", 64)
    props = d.get_device_properties(1)
    assert props["gcnArchName"] == "gfx942:sramecc+:xnack-" and props["multiprocessor_count"] == 304
    assert props["max_shared_mem"] == 65536 and props["warpSize"] == 64
    assert ("hipGetDeviceProperties", 1) in h.calls


def test_launch_call_sequence(stub):
    h = stub()
    k = _kernel()
    d = HIPDriver()
    args = [0x7F0000001000, 0x7F0000200000, 1000, -(2 ** 40) - 5, 1.5]
    d.launch(k, (3, 2, 5), args)
    names = [c[0] for c in h.calls]
    assert names == ["hipGetDeviceCount", "hipGetDeviceProperties", "hipSetDevice", "hipModuleLoadData",
                     "hipModuleGetFunction", "hipModuleLaunchKernel"]
    assert h.calls[3][1] == b"\x7fELF"  # the hsaco's bytes
    assert h.calls[4][2] == b"grid_kernel"
    (launch,) = h.launches
    assert launch["grid"] == (3, 2, 5) and launch["block"] == (256, 1, 1) and launch["shared"] == 0
    assert launch["kernelParams"] is None and launch["extra_keys"] == (1, 2, 3)
    kb = launch["kernargs"]
    assert len(kb) == k.metadata["kernarg_size"]
    assert struct.unpack_from("<QQiqf", kb, 0)[:3] == tuple(args[:3])
    assert struct.unpack_from("<q", kb, 24)[0] == args[3] and struct.unpack_from("<f", kb, 32)[0] == 1.5
    off = _hidden_offset(k, "hidden_block_count_x")
    assert struct.unpack_from("<III", kb, off) == (3, 2, 5)
    assert struct.unpack_from("<HHH", kb, _hidden_offset(k, "hidden_group_size_x")) == (256, 1, 1)
    # the relaunch fast path: the loaded kernel's launch, no second load
    fast = d.bind(k, 0).launch
    assert fast == k.loaded[0].launch.grid
    fast(k, (7, 1, 1), [0x10, 0x20, 3, 4, -2.0])
    assert [c[0] for c in h.calls].count("hipModuleLoadData") == 1
    kb = h.launches[-1]["kernargs"]
    assert h.launches[-1]["grid"] == (7, 1, 1) and struct.unpack_from("<III", kb, off) == (7, 1, 1)
    assert struct.unpack_from("<QQi", kb, 0) == (0x10, 0x20, 3) and struct.unpack_from("<f", kb, 32)[0] == -2.0


def test_launch_with_gpu_tensors_on_the_current_stream(stub, monkeypatch):
    torch = pytest.importorskip("torch")
    h = stub()
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    state = {"stream": 0xABC0}
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda dev: state["stream"] + dev, raising=False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    k = _kernel()
    d = HIPDriver()
    x, y = StubGPUTensor(torch.float32, 0x5000_0000), StubGPUTensor(torch.float32, 0x6000_0000)
    d.launch(k, (2, 1, 1), [x, y, 10, 11, 0.25])
    d.bind(k, 0).launch(k, (4, 1, 1), [x, y, 10, 11, 0.25])
    state["stream"] = 0xDEF0  # the current stream is read on every launch
    d.bind(k, 0).launch(k, (4, 1, 1), [x, y, 10, 11, 0.25])
    d.launch(k, (4, 1, 1), [x, y, 10, 11, 0.25], stream=0x1234)
    assert [la["stream"] for la in h.launches] == [0xABC0, 0xABC0, 0xDEF0, 0x1234]
    assert struct.unpack_from("<QQ", h.launches[1]["kernargs"], 0) == (0x5000_0000, 0x6000_0000)
    with pytest.raises(KernelRuntimeError, match="'x_ptr' is a tensor on device 'cpu'.*hip backend needs GPU"):
        d.launch(k, (2, 1, 1), [torch.zeros(4), y, 10, 11, 0.25])
    with pytest.raises(KernelRuntimeError, match="grid_kernel' argument 'n': 4294967296 does not fit in i32"):
        d.launch(k, (2, 1, 1), [x, y, 2 ** 32, 11, 0.25])
    with pytest.raises(KernelRuntimeError, match="takes 5 runtime arguments, got 4"):
        d.launch(k, (2, 1, 1), [x, y, 10, 11])


def test_launch_errors_name_the_kernel(stub):
    stub(launch_error=1)
    k = _kernel()
    with pytest.raises(HIPError, match=r"hipModuleLaunchKernel\(grid_kernel\) failed: hipErrorInvalidValue \(1\)"):
        HIPDriver().launch(k, (1, 1, 1), [1, 2, 3, 4, 5.0])


def test_wrong_arch_and_wavefront(stub):
    stub(arch="gfx90a")
    with pytest.raises(KernelRuntimeError, match="'grid_kernel' was compiled for gfx942 but device 0 is gfx90a: "
                                                 "compile it for hip:gfx90a"):
        HIPDriver().launch(_kernel(), (1, 1, 1), [1, 2, 3, 4, 5.0])


def test_threads_per_block_beyond_the_device(stub):
    stub(max_threads=256)
    with pytest.raises(OutOfResources) as e:
        HIPDriver().launch(_kernel(num_warps=8), (1, 1, 1), [1, 2, 3, 4, 5.0])
    msg = str(e.value)
    assert "grid_kernel" in msg and "512" in msg and "256" in msg and "num_warps * 64" in msg


def test_lds_beyond_the_device_and_opt_in(stub):
    pytest.importorskip("mlir")
    from tests.e2e import kernels as K
    from tritium.compiler import ASTSource, compile

    sig = {"output_ptr": F, "input_ptr": F, "input_row_stride": "i32", "output_row_stride": "i32", "n_cols": "i32"}
    k = compile(ASTSource(K.softmax_kernel, sig, constexprs={"BLOCK_SIZE": 1024}), target="hip:gfx942",
                options={"num_warps": 8})
    need = max(k.metadata["shared"], k.metadata["lds"])
    assert need > 0  # the cross-warp reduction goes through LDS
    stub(lds=need - 1)
    with pytest.raises(OutOfResources) as e:
        HIPDriver().launch(k, (1, 1, 1), [1, 2, 3, 4, 5])
    assert "softmax_kernel" in str(e.value) and "LDS" in str(e.value) and str(need) in str(e.value)
    # the device's default below the kernel's need, its opt-in limit above: opted in, then launched
    h = stub(lds=need - 1, lds_optin=4 * need)
    k.loaded.clear()
    HIPDriver().launch(k, (1, 1, 1), [1, 2, 3, 4, 5])
    (attr,) = [c for c in h.calls if c[0] == "hipFuncSetAttribute"]
    assert attr[2] == 8 and attr[3] == 4 * need - k.metadata["lds"]
    assert h.launches[0]["shared"] == max(0, k.metadata["shared"] - k.metadata["lds"])


def test_jit_launches_through_the_driver(stub, monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("mlir")
    h = stub()
    monkeypatch.setenv("TRITIUM_TARGET", "hip:gfx942")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda dev: 77, raising=False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    driver.reset()
    try:
        import tritium.language as tl

        @tritium.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        x, y, out = (StubGPUTensor(torch.float32, 0x10000 * (i + 1)) for i in range(3))
        add[(1,)](x, y, out, 100, BLOCK=64)
        add[(3,)](x, y, out, 100, BLOCK=64)
        add[(2, 2)](x, y, out, 100, BLOCK=64)
        assert add.compile_count == 1
        assert [c[0] for c in h.calls].count("hipModuleLoadData") == 1
        assert [(la["grid"], la["stream"], la["block"]) for la in h.launches] == [
            ((1, 1, 1), 77, (256, 1, 1)), ((3, 1, 1), 77, (256, 1, 1)), ((2, 2, 1), 77, (256, 1, 1))]
        for la in h.launches:
            assert struct.unpack_from("<QQQi", la["kernargs"], 0) == (0x10000, 0x20000, 0x30000, 100)
    finally:
        driver.reset()


def test_real_hip_python_accepts_the_launch_arguments():
    """hip-python converts a call's arguments before it loads libamdhip64.so: the calls the driver makes, with the
    argument forms it uses (the hsaco's address, the function name as bytes, the attribute enum, ints for stream
    and the ``extra`` array, None for kernelParams), get past the conversion (a bad form is a TypeError) and stop
    at the missing runtime here."""
    h = pytest.importorskip("hip").hip
    if any(os.path.exists(os.path.join(p, "libamdhip64.so")) for p in ("/opt/rocm/lib", "/usr/lib")):
        pytest.skip("a ROCm runtime is installed here")
    import ctypes

    from tritium_amd import launcher as L

    k = _kernel()
    md = k.metadata
    types, names = L.arg_types(md)
    p = L.KernargPacker(types, md["kernargs"], L.hidden_kernargs(md), md["kernarg_size"], 256)
    launch = L.make_launch(0, p, block=256, shared=0, hip_launch=h.hipModuleLaunchKernel, names=names,
                           kernel_name="grid_kernel")
    image = ctypes.create_string_buffer(k.asm["hsaco"], len(k.asm["hsaco"]))
    calls = [lambda: launch(3, 1, 1, 0, [1, 2, 3, 4, 5.0]),
             lambda: h.hipModuleLoadData(ctypes.addressof(image)),
             lambda: h.hipModuleGetFunction(0, b"grid_kernel"),
             lambda: h.hipFuncSetAttribute(0, h.hipFuncAttribute.hipFuncAttributeMaxDynamicSharedMemorySize, 1024),
             lambda: h.hipGetDeviceProperties(0), lambda: h.hipSetDevice(0)]
    for call in calls:
        with pytest.raises(RuntimeError, match="libamdhip64"):
            call()
    with pytest.raises(TypeError):  # (the conversion does check)
        h.hipModuleLaunchKernel(0, 1, 1, 1, 256, 1, 1, 0, 0, None, object())


def test_i1_arguments_are_packed_as_0_or_1(stub):
    pytest.importorskip("mlir")
    from tests.amd.test_kernargs import mixed_kernel
    from tritium.compiler import ASTSource, compile

    h = stub()
    sig = {"x_ptr": F, "h": "fp16", "b": "bf16", "flag": "i1", "k64": "i64", "y_ptr": F}
    k = compile(ASTSource(mixed_kernel, sig, constexprs={"BLOCK": 128}), target="hip:gfx942")
    off = k.metadata["kernargs"][3]["offset"]
    d = HIPDriver()
    for flag, want in ((5, 1), (0, 0), (True, 1)):
        d.launch(k, (1, 1, 1), [0x10, 1.5, 2.5, flag, 7, 0x20])
        assert h.launches[-1]["kernargs"][off] == want
    with pytest.raises(KernelRuntimeError, match="'mixed_kernel' argument 'h': 1e\\+30 does not fit in fp16"):
        d.launch(k, (1, 1, 1), [0x10, 1e30, 2.5, 1, 7, 0x20])


def test_launch_from_another_thread_packs_its_own_buffer(stub):
    import threading

    h = stub()
    k = _kernel()
    d = HIPDriver()
    d.launch(k, (2, 1, 1), [0x100, 0x200, 5, 6, 1.0])
    lk = k.loaded[0]
    owner = bytes(lk.packer.buffer)
    done = []

    def other():
        d.bind(k, 0).launch(k, (9, 8, 7), [0x300, 0x400, 50, 60, 2.0])
        done.append(True)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert done and bytes(lk.packer.buffer) == owner  # the kernel's own buffer is untouched
    kb = h.launches[-1]["kernargs"]
    assert struct.unpack_from("<QQi", kb, 0) == (0x300, 0x400, 50) and struct.unpack_from("<q", kb, 24)[0] == 60
    assert struct.unpack_from("<III", kb, _hidden_offset(k, "hidden_block_count_x")) == (9, 8, 7)
