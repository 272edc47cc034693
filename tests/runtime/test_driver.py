"""Backend selection: TRITIUM_TARGET, TRITON_INTERPRET, priorities, unavailable backends; driver.active."""
import importlib.util

import pytest

from tritium.compiler.backend import GPUTarget
from tritium.errors import BackendUnavailable
from tritium.runtime import driver


def has(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except ImportError:
        return False


def test_tritium_target_selects_by_name(fake):
    sel = driver.select()
    assert sel.name == "fake" and sel.why == "TRITIUM_TARGET" and sel.arch is None
    assert driver.active.get_current_target() == GPUTarget("fake", 1, 32)


def test_tritium_target_with_arch(register_fake, monkeypatch):
    register_fake(name="fake")
    monkeypatch.setenv("TRITIUM_TARGET", "fake:77")
    assert driver.active.get_current_target() == GPUTarget("fake", 77, 32)


def test_triton_interpret_is_an_alias(register_fake, monkeypatch):
    # a high-priority stand-in named "interpreter" makes this independent of the real interpreter plugin
    register_fake(name="interpreter", priority=10_000)
    register_fake(name="other", priority=20_000)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert driver.requested_target() == ("interpreter", None, "TRITON_INTERPRET")
    assert driver.select().name == "interpreter"
    monkeypatch.setenv("TRITIUM_TARGET", "other")  # TRITIUM_TARGET wins
    assert driver.select().name == "other"


def test_auto_selection_prefers_priority_among_active(register_fake):
    register_fake(name="big", priority=5000, active=False, reason="no big device")
    register_fake(name="mid", priority=4000)
    register_fake(name="small", priority=3000)
    sel = driver.select()
    assert sel.name == "mid" and sel.why == "auto"


def test_auto_selection_skips_missing_deps(register_fake):
    register_fake(name="needy", priority=5000, missing="pip install needy")
    register_fake(name="plain", priority=4000)
    assert driver.select().name == "plain"


def test_named_backend_with_missing_deps_says_pip(register_fake, monkeypatch):
    register_fake(name="needy", missing="pip install 'tritium[needy]'")
    monkeypatch.setenv("TRITIUM_TARGET", "needy")
    with pytest.raises(BackendUnavailable, match=r"pip install 'tritium\[needy\]'"):
        driver.select()


@pytest.mark.skipif(has("cuda.bindings"), reason="cuda-python is installed here")
def test_cuda_without_extra_says_pip(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "cuda")
    with pytest.raises(BackendUnavailable, match=r"pip install 'tritium\[nvidia\]'"):
        driver.active.get_current_target()


@pytest.mark.skipif(has("hip"), reason="hip-python is installed here")
def test_hip_without_extra_says_pip(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "hip")
    with pytest.raises(BackendUnavailable, match=r"pip install 'tritium\[amd\]'"):
        driver.select()


def test_unknown_backend(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "nosuchbackend")
    with pytest.raises(BackendUnavailable, match=r"unknown tritium backend 'nosuchbackend'.*cuda"):
        driver.select()


def test_cuda_arch_target_needs_no_device(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "cuda:90")
    assert driver.active.get_current_target() == GPUTarget("cuda", 90, 32)
    assert driver.target_from_spec("cuda:sm_80") == GPUTarget("cuda", 80, 32)
    assert driver.target_from_spec("hip:gfx942") == GPUTarget("hip", "gfx942", 64)
    assert driver.target_from_spec("hip:gfx1100").warp_size == 32


def test_gpu_drivers_inactive_here():
    for name in ("cuda", "hip"):
        d = driver.get_driver(name)
        if not d.is_active():
            assert d.inactive_reason()
    cuda = driver.get_driver("cuda")
    if not cuda.is_active():
        reason = cuda.inactive_reason()
        # without the extra: the pip command; with it but no driver/GPU: what is missing
        assert ("pip install 'tritium[nvidia]'" in reason or "libcuda.so.1" in reason or "no device" in reason
                or "/dev/nvidiactl" in reason)


def test_gpu_pipelines():
    c = driver.get_compiler("cuda")
    stages = {}
    c.add_stages(stages, c.parse_options({}), c.target_for_arch())
    assert list(stages) == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    c = driver.get_compiler("hip")
    stages = {}
    c.add_stages(stages, c.parse_options({}), c.target_for_arch())
    assert list(stages) == ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]


def test_gpu_options():
    c = driver.get_compiler("cuda")
    o = c.parse_options({"num_warps": 8, "num_stages": 4, "debug": None})
    assert (o.num_warps, o.num_stages, o.debug) == (8, 4, False)
    with pytest.raises(TypeError, match="unknown option"):
        c.parse_options({"bogus": 1})


def test_launch_on_inactive_backend_explains(register_fake, monkeypatch):
    register_fake(name="sleepy", active=False, reason="no sleepy device")
    monkeypatch.setenv("TRITIUM_TARGET", "sleepy:1")
    import tritium

    @tritium.jit
    def k(x):
        pass

    with pytest.raises(BackendUnavailable, match="no sleepy device"):
        k[(1,)](3)


def test_no_backend_active_message(monkeypatch):
    from tritium.compiler import registry

    # no backend at all: fake an empty discovery
    monkeypatch.setattr(registry, "backends", lambda: {})
    registry._selection_cache.clear()
    monkeypatch.delenv("TRITIUM_TARGET", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(BackendUnavailable, match="TRITIUM_TARGET=interpreter"):
        driver.select()
    registry._selection_cache.clear()


def test_active_properties(fake):
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    for key in ("multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize"):
        assert isinstance(props[key], int) and props[key] > 0
    assert driver.active.get_current_stream() == 0
    assert "fake" in repr(driver.active)


def test_set_active(register_fake, monkeypatch):
    register_fake(name="alpha")
    register_fake(name="beta", priority=2000)
    monkeypatch.setenv("TRITIUM_TARGET", "alpha")
    driver.set_active("beta")
    try:
        assert driver.select().name == "beta"
    finally:
        driver.set_active(None)
    assert driver.select().name == "alpha"


def test_base_driver_defaults():
    """What the runtime may call on any driver is declared on BaseDriver, with defaults for a host backend."""
    from tritium.compiler.backend import BaseDriver

    class Minimal(BaseDriver):
        def is_active(self):
            return True

        def get_current_target(self):
            return GPUTarget("minimal", 0, 32)

        def launch(self, kernel, grid, args):
            pass

    d = Minimal()
    b = d.bind(object(), 0)  # the fast path's launch function: launch itself, no direct launch, kept
    assert b.launch == d.launch and b.direct((0,), 1) is None and b.loaded
    getter = d.device_getter()
    assert getter() == d.get_current_device() == 0
    assert d.get_current_stream() == 0 and d.inactive_reason() == ""
    assert d.synchronize() is None and d.get_benchmarker() is None
    props = d.utils.get_device_properties(0)
    assert props["warpSize"] == 32 and props["multiprocessor_count"] >= 1
    torch = pytest.importorskip("torch")
    assert d.get_active_torch_device() == torch.device("cpu") and d.get_device_interface() is torch.cpu


def test_active_driver_forwards_to_the_contract(fake):
    from tritium.testing import do_bench

    assert driver.active.get_benchmarker() is do_bench  # the fake driver offers none
    assert driver.active.device_getter()() == 0
    assert driver.active.bind(None, 0).launch == driver.get_driver("fake").launch


def test_gpu_less_machine_does_not_import_the_gpu_runtimes_to_find_out(tmp_path):
    """Without the NVIDIA driver's /dev/nvidiactl (or ROCm's /dev/kfd) there is no GPU to find: the probe says so
    without importing cuda-python / hip-python (70-80 ms, up to 0.5 s under load, in every GPU-less process)."""
    import os
    import subprocess
    import sys

    if os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd") or sys.platform != "linux":
        pytest.skip("a GPU driver is present here")
    code = ("import sys, tritium\n"
            "from tritium.compiler import registry\n"
            "print(registry.select().name)\n"
            "print([m for m in ('cuda.bindings', 'cuda.bindings.driver', 'hip') if m in sys.modules])\n"
            "print(registry.get_driver('cuda').inactive_reason())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET", "TRITIUM_COMPILE_ONLY")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    out = r.stdout.splitlines()
    assert r.returncode == 0 and out[0] == "interpreter" and out[1] == "[]", r.stdout + r.stderr
    assert "/dev/nvidiactl" in out[2]
