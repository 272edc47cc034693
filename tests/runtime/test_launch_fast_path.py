"""The relaunch fast path (``fn[grid]`` -> generated grid launcher -> the kernel's bound launch function): same
behaviour and errors as ``JITFunction.run``, launch hooks only while some plugin implements them, the cuda
driver's direct launcher (stubbed ``cuLaunchKernel``)."""
from __future__ import annotations  # annotations stay strings: "tl.constexpr" needs no tritium.language here

import numpy as np
import pytest

import tritium
import tritium.plugins as plugins
from tritium.errors import KernelRuntimeError
from tritium.runtime import driver


@tritium.jit
def kern(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, FLAG: tl.constexpr = 3):  # noqa: F821
    pass


@pytest.fixture(autouse=True)
def _fresh_caches():
    kern.cache.clear()


def arr(n=64):
    a = np.zeros(n + 8, dtype=np.float32)
    start = (-a.ctypes.data % 16) // a.itemsize
    return a[start:start + n]


CALLS = [
    ("missing argument 'scale'", lambda x: ((x, x, 4), {"BLOCK": 4})),
    ("missing constexpr argument 'BLOCK'", lambda x: ((x, x, 4, 1.0), {})),
    ("takes 6 arguments", lambda x: ((x, x, 4, 1.0, 4, 3, 9), {})),
    ("multiple values for argument 'n'", lambda x: ((x, x, 3, 1.0), {"n": 3, "BLOCK": 4})),
    ("multiple values for argument 'x_ptr'", lambda x: ((x,), {"x_ptr": x, "y_ptr": x, "n": 4, "scale": 1.0,
                                                               "BLOCK": 4})),
    ("unknown option.*BLOK", lambda x: ((x, x, 4, 1.0), {"BLOCK": 4, "BLOK": 4})),
]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("msg,call", CALLS, ids=[c[0] for c in CALLS])
def test_errors_identical_to_run(fake, warm, msg, call):
    x = arr()
    if warm:  # a fast entry exists for the well-formed launch
        kern[(1,)](x, x, 4, 1.0, BLOCK=4)
        kern[(1,)](x, x, 4, 1.0, BLOCK=4)
    args, kwargs = call(x)
    with pytest.raises(TypeError, match=msg) as via_grid:
        kern[(1,)](*args, **kwargs)
    with pytest.raises(TypeError) as via_run:
        kern.run(*args, grid=(1,), **kwargs)
    assert str(via_grid.value) == str(via_run.value)


def test_keywords_defaults_and_positions(fake):
    x, y = arr(), arr()
    k1 = kern[(2,)](x, y, 32, 1.5, BLOCK=16)
    k2 = kern[(2,)](y_ptr=y, x_ptr=x, n=32, scale=1.5, BLOCK=16)
    k3 = kern[(2,)](x, y, 32, 1.5, 16, 3)
    assert k1 is k2 is k3 and len(fake.compiles) == 1
    for _, grid, args in fake.launches:
        assert grid == (2, 1, 1) and args[0] is x and args[1] is y and args[2:] == [32, 1.5]
    assert kern[(2,)](x, y, 32, 1.5, BLOCK=16, FLAG=4) is not k1
    assert kern[(2,)](x, y, 32, 1.5, BLOCK=16, num_warps=2) is not k1  # options are part of the key
    assert len(fake.compiles) == 3


def test_grid_forms_on_the_fast_path(fake):
    x = arr()
    for _ in range(2):
        kern[(3, 2)](x, x, 4, 1.0, BLOCK=4)
        kern[lambda meta: (meta["n"] // meta["BLOCK"],)](x, x, 64, 1.0, BLOCK=4)
        kern[5](x, x, 4, 1.0, BLOCK=4)
        kern[(0,)](x, x, 4, 1.0, BLOCK=4)  # empty grid: nothing launched
    assert [g for _, g, _ in fake.launches] == [(3, 2, 1), (16, 1, 1), (5, 1, 1)] * 2
    with pytest.raises(TypeError, match="without a grid"):
        kern[None](x, x, 4, 1.0, BLOCK=4)


def test_launch_hooks_follow_registration(fake):
    x = arr()
    kern[(1,)](x, x, 4, 1.0, BLOCK=4)
    kern[(1,)](x, x, 4, 1.0, BLOCK=4)  # fast entry in place
    assert driver.launch_hooks() is None  # nothing implements them (the profiler is not profiling)
    seen = []

    class Hooks:
        @plugins.hookimpl
        def tritium_launch_enter(self, kernel, grid, args):
            seen.append(("enter", grid, type(args), len(args)))

        @plugins.hookimpl
        def tritium_launch_exit(self, kernel):
            seen.append(("exit",))

    h = Hooks()
    plugins.get_plugin_manager().register(h)  # straight through pluggy: still seen at the next launch
    try:
        kern[(2,)](x, x, 4, 1.0, BLOCK=4)
        kern[(3, 1)](x, x, 4, 1.0, BLOCK=4)
    finally:
        plugins.get_plugin_manager().unregister(h)
    kern[(1,)](x, x, 4, 1.0, BLOCK=4)
    assert seen == [("enter", (2, 1, 1), list, 4), ("exit",), ("enter", (3, 1, 1), list, 4), ("exit",)]
    assert driver.launch_hooks() is None


def test_profiler_registers_launch_hooks_only_while_profiling(fake):
    prof = pytest.importorskip("tritium_profiler")
    plugin = pytest.importorskip("tritium_profiler.plugin")
    if plugin._MODULE_HOOKS:
        pytest.skip("TRITIUM_PROFILE=1: the module carries the hooks")
    pm = plugins.get_plugin_manager()
    was = prof.enabled()
    prof.stop()
    try:
        assert driver.launch_hooks() is None and not pm.is_registered(plugin._HOOKS)
        prof.reset()
        prof.start()
        assert pm.is_registered(plugin._HOOKS) and driver.launch_hooks() is not None
        x = arr()
        for _ in range(3):
            kern[(1,)](x, x, 4, 1.0, BLOCK=4)
        prof.stop()
        kern[(1,)](x, x, 4, 1.0, BLOCK=4)
        assert prof.stats()["kern"].calls == 3
        assert driver.launch_hooks() is None and not pm.is_registered(plugin._HOOKS)
    finally:
        prof.reset()
        if was:
            prof.start()


def test_changed_global_is_caught_on_the_fast_path(fake):
    import types

    mod = types.ModuleType("fastpath_globals_mod")
    src = ("import tritium\nLIMIT = 4\n\n@tritium.jit\ndef g(x_ptr, n):\n    m = n < LIMIT\n")
    import linecache
    import sys

    fname = "<fastpath_globals_mod>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(src, fname, "exec"), mod.__dict__)
    except OSError:
        pytest.skip("no source for exec'd code")
    finally:
        sys.modules.pop(mod.__name__, None)
    x = arr()
    mod.g[(1,)](x, 4)
    mod.g[(1,)](x, 4)
    assert [u[0] for u in mod.g.used_global_vals] == ["LIMIT"]
    mod.LIMIT = 5
    with pytest.raises(RuntimeError, match="Global variable LIMIT has changed"):
        mod.g[(1,)](x, 4)


# ----------------------------------------------------------------------------------- cuda, stubbed driver
def test_cuda_direct_launcher_with_stubbed_driver(monkeypatch, tmp_path):
    pytest.importorskip("cuda.bindings")
    torch = pytest.importorskip("torch")
    import struct

    import ctypes

    import tritium_nvidia.driver as nd
    from tritium_nvidia.stub import StubCUDA, StubCudaTensor

    launches = []

    def record(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        slots = [ctypes.string_at(p, 8) for p in (ctypes.c_void_p * 4).from_address(params)]
        launches.append(((gx, gy, gz), bx, stream, slots))
        return (0,)

    monkeypatch.setenv("TRITIUM_TARGET", "cuda:90")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)
    monkeypatch.setattr(nd, "_cu", StubCUDA(record))
    state = {"dev": 0, "stream": 7}
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: state["dev"], raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda d: state["stream"] + 100 * d, raising=False)
    driver.reset()
    try:
        d = driver.get_driver("cuda")
        monkeypatch.setattr(d, "_probed", True)
        monkeypatch.setattr(d, "_reason", "")
        import tritium.language as tl

        @tritium.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        x, y, out = (StubCudaTensor(torch.float32, 0x10000 * (i + 1)) for i in range(3))
        try:
            add[(1,)](x, y, out, 100, BLOCK=64)
        except Exception as e:  # noqa: BLE001 - no MLIR/llvmlite here: nothing to test
            pytest.skip(f"cannot compile for cuda:90 here: {e}")
        add[(3,)](x, y, out, 100, BLOCK=64)
        state["stream"] = 9
        add[(2, 2)](x, y, out, 100, BLOCK=64)
        state["dev"] = 1  # another device: loaded there on its first launch, its own fast entry
        with pytest.raises(KernelRuntimeError, match="argument 'x_ptr' is a tensor on cuda:0 but the kernel "
                                                     "launches on cuda:1"):
            add[(4,)](x, y, out, 100, BLOCK=64)  # the tensors are on device 0
        x1, y1, out1 = (StubCudaTensor(torch.float32, 0x10000 * (i + 1), device=1) for i in range(3))
        add[(4,)](x1, y1, out1, 100, BLOCK=64)
        add[(4,)](x1, y1, out1, 100, BLOCK=64)
        with pytest.raises(KernelRuntimeError, match="argument 'y_ptr' is a tensor on cuda:0"):
            add[(4,)](x1, y, out1, 100, BLOCK=64)  # one tensor elsewhere: not the fast entry's launch
        assert add.compile_count == 2  # the in-memory cache is per device (device 1: from the file cache)
        grids = [(g, s) for g, _, s, _ in launches]
        assert grids == [((1, 1, 1), 7), ((3, 1, 1), 7), ((2, 2, 1), 9), ((4, 1, 1), 109), ((4, 1, 1), 109)]
        for _, block, _, slots in launches:
            assert block == 128
            assert [struct.unpack("<Q", s)[0] for s in slots[:3]] == [0x10000, 0x20000, 0x30000]
            assert struct.unpack("<i", slots[3][:4])[0] == 100
        # device 0 twice: the first launch met the stand-in tensor type before it was inlined (its key has no
        # devices: such arguments reach the launcher as objects, whose conversion checks the device)
        assert len(add.cache.fast) == 3
        assert all(e.direct is not None for e in add.cache.fast.values())
    finally:
        driver.reset()
