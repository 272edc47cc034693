"""The relaunch fast path (``fn[grid]`` -> generated grid launcher -> the kernel's bound launch function): same
behaviour and errors as ``JITFunction.run``, launch hooks only while some plugin implements them, the cuda
driver's direct launcher (stubbed ``cuLaunchKernel``)."""
from __future__ import annotations  # annotations stay strings: "tl.constexpr" needs no tritium.language here

import contextlib

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
        # one compiled kernel serves both devices of the same arch (loaded on each: kernel.loaded), not compiled again
        assert add.compile_count == 1
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
        # CompiledKernel[grid]: after its first launch on a device, the loaded kernel's launch function directly
        ck = next(iter(add.cache[("cuda", "90", 1)].values()))
        n = len(launches)
        ck[(5,)](x1, y1, out1, 100)
        state["dev"] = 0
        ck[(6,)](x, y, out, 100)
        with pytest.raises(KernelRuntimeError, match="argument 'x_ptr' is a tensor on cuda:1"):
            ck[(6,)](x1, y1, out1, 100)
        assert [(g, s) for g, _, s, _ in launches[n:]] == [((5, 1, 1), 109), ((6, 1, 1), 9)]
        # one binding per driver and device, shared by every launch path
        assert set(ck.bindings) == {(d, 0), (d, 1)} and ck.bindings[(d, 1)].launch is ck.loaded[1].launch.grid
    finally:
        driver.reset()


# ----------------------------------------------------------------------------------- the plain case in C
@tritium.jit(do_not_specialize=["m"], do_not_specialize_on_alignment=["y_ptr"])
def kern_c(x_ptr, y_ptr, n, m, BLOCK: tl.constexpr, FLAG: tl.constexpr = 3):  # noqa: F821
    pass


@pytest.fixture
def direct_fake(register_fake, monkeypatch):
    """The fake backend, its driver offering a direct launch that records ``(gx, values)``."""
    from tests.runtime.fakebackend import FakeDriver

    p = register_fake()
    p.direct = []

    class DirectDriver(FakeDriver):
        def bind(self, kernel, device):
            from tritium.compiler.backend import Binding

            return Binding(self.launch, lambda positions, n_values: lambda gx, *vals: p.direct.append((gx, vals)),
                           True)

    monkeypatch.setattr("tests.runtime.fakebackend.FakeDriver", DirectDriver)
    monkeypatch.setenv("TRITIUM_TARGET", "fake")
    kern_c.cache.clear()
    return p


def test_c_relaunch_computes_the_generated_key(direct_fake):
    torch = pytest.importorskip("torch")
    speedups = pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    from tritium.runtime.launch import _M

    x = torch.zeros(64)
    y = torch.zeros(65)[1:]  # misaligned, but its alignment is not specialised
    k1 = kern_c[(2,)](x, y, 32, 7, BLOCK=16)  # first launch: the general path records the fast entry
    S = kern_c._launcher.c_state
    f = kern_c[(2,)]
    assert type(f) is speedups.GridLaunch and f.state is S and f.grid == (2,)
    assert speedups.relaunch(S, (5,), x, y, 32, 7, 16, _M) is k1  # FLAG's default filled in
    assert direct_fake.direct == [(5, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 3))]
    assert speedups.relaunch(S, (5,), x, y, 32, 8, 16, 3) is k1  # m is not specialised: same entry
    assert speedups.relaunch(S, (0,), x, y, 32, 7, 16, 3) is k1 and len(direct_fake.direct) == 2  # empty grid
    not_plain = [((5, 1), (x, y, 32, 7, 16, 3)), ([5], (x, y, 32, 7, 16, 3)), ((5,), (x, y, 32.0, 7, 16, 3)),
                 ((5,), (x, y, 1, 7, 16, 3)),  # n == 1: another specialisation, no entry yet
                 ((5,), (x, y, 2 ** 40, 7, 16, 3)), ((5,), (x[1:], y, 32, 7, 16, 3)),  # wide int, misaligned x
                 ((5,), (x.double(), y, 32, 7, 16, 3)), ((5,), (x, y, 32, 7, True, 3)),
                 ((5,), (x, y, 32, 7, 16)), ((5,), (x, y, 32, 7, _M, 3))]  # a value missing, a required one
    for grid, vals in not_plain:
        assert speedups.relaunch(S, grid, *vals) is _M, (grid, vals)
    assert len(direct_fake.direct) == 2
    kern_c[(3,)](x, y, 32, 7, BLOCK=16)  # fn[grid]: bound by name in C, relaunched in C
    assert direct_fake.direct[-1] == (3, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 3))
    kern_c[(3,)](x, y_ptr=y, m=7, n=32, BLOCK=16, FLAG=3)
    assert direct_fake.direct[-1] == (3, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 3))
    with pytest.raises(TypeError, match="multiple values for argument 'x_ptr'"):
        kern_c[(3,)](x, y, 32, 7, x_ptr=x, BLOCK=16)  # given twice: the generated launcher's (Python's) error
    n_direct = len(direct_fake.direct)
    kern_c[(3,)](x, y, 32, 7, BLOCK=16, num_warps=4)  # an option: a new specialisation (the general path)
    assert len(direct_fake.direct) == n_direct and len(direct_fake.launches) == 2
    kern_c[(6,)](x, y, 32, 7, BLOCK=16, num_warps=4)  # options keyed in C as the generated launcher keys them
    assert direct_fake.direct[-1] == (6, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 3))
    kern_c[(6,)](x, y, 32, 7, BLOCK=16, num_warps=4, num_stages=2)  # another option set: a miss, general path
    assert len(direct_fake.launches) == 3
    kern_c.pre_run_hooks.append(lambda *a, **k: None)  # pre-run hooks: the general path, every time
    try:
        assert speedups.relaunch(S, (5,), x, y, 32, 7, 16, 3) is _M
    finally:
        kern_c.pre_run_hooks.clear()


@contextlib.contextmanager
def _enter_hook():
    """A plugin implementing ``tritium_launch_enter`` while the block runs; yields the grids it saw."""
    seen = []

    class Hooks:
        @plugins.hookimpl
        def tritium_launch_enter(self, kernel, grid, args):
            seen.append(grid)

    h = Hooks()
    plugins.register(h, name="test-launch-enter-hook")
    try:
        yield seen
    finally:
        plugins.unregister(h)


def test_c_relaunch_stands_aside_for_launch_hooks(direct_fake):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    x = torch.zeros(64)
    kern_c[(2,)](x, x, 32, 7, BLOCK=16)
    with _enter_hook() as seen:
        kern_c[(4,)](x, x, 32, 7, BLOCK=16)
    assert seen == [(4, 1, 1)]  # the hooked launch went through launch_with_hooks, not the direct launch
    assert all(gx != 4 for gx, _ in direct_fake.direct)


def test_the_current_device_is_not_asked_on_a_one_device_machine(monkeypatch):
    pytest.importorskip("cuda.bindings")
    torch = pytest.importorskip("torch")
    import tritium_nvidia.driver as nd
    from tritium_nvidia.stub import StubCUDA

    class OneDevice(StubCUDA):
        def cuDeviceGetCount(self):
            return (0, 1)

    getter = lambda: 0  # noqa: E731 - torch's _cuda_getDevice stand-in
    monkeypatch.setattr(torch._C, "_cuda_getDevice", getter, raising=False)
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)
    for cu, expected in ((OneDevice(), int), (StubCUDA(), getter)):  # one device: always 0; two: torch's
        monkeypatch.setattr(nd, "_cu", cu)
        d = nd.CUDADriver()
        d._probed, d._reason = True, ""
        assert d.device_getter() is expected


def _python_frames(fn) -> list:
    """The Python functions one call of ``fn`` enters, by file (what the C paths must not enter)."""
    import sys

    seen = []

    def prof(frame, event, arg):
        if event == "call":
            seen.append((frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_code.co_name))

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen[1:]  # the lambda itself


def test_c_compiled_kernel_launch(direct_fake, monkeypatch):
    """``CompiledKernel[grid](...)`` after its first launch on a device: from C, the driver's direct launch with
    the tensors' addresses -- no Python frame; a grid that is not one-dimensional, keywords, launch hooks, a
    changed driver: CompiledKernel.launch (Python), as before."""
    torch = pytest.importorskip("torch")
    speedups = pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    import functools

    from tests.runtime import fakebackend
    from tritium.compiler import registry

    # the fake device is the CPU tensors' (-1), its getter a C callable (as torch's current-device getter is)
    monkeypatch.setattr(fakebackend.FakeDriver, "device_getter", lambda self: functools.partial(int, -1))
    x, y = torch.zeros(64), torch.zeros(65)[1:]
    ck = kern_c[(2,)](x, y, 32, 7, BLOCK=16)
    assert ck._c_grid_state is not None  # launched once on the device (by the JIT): bound
    f = ck[(5,)]
    assert type(f) is speedups.GridLaunch and f.state is ck._c_grid_state
    direct_fake.direct.clear()
    assert _python_frames(lambda: ck[(5,)](x, y, 32, 7)) == [("test_launch_fast_path.py", "<lambda>")]  # the fake's
    for grid in ((6, 1), (7, 1, 1)):
        ck[grid](x, y, 33, 8)
    want = [(g, (x.data_ptr(), y.data_ptr(), n_, m)) for g, n_, m in ((5, 32, 7), (6, 33, 8), (7, 33, 8))]
    assert direct_fake.direct == want
    # not the C path's: the Python launch (the fake driver's launch records them)
    before = len(direct_fake.launches)
    ck[(2, 2)](x, y, 32, 7)  # a 2-D grid
    ck[(0,)](x, y, 32, 7)  # no program
    ck[(3,)](x, y, 32, 7, 16, 3)  # every parameter, constexprs too (filtered in Python, as Triton's launcher)
    assert len(direct_fake.direct) == 3 and len(direct_fake.launches) == before + 3
    registry._launch_drivers.clear()  # the backend's launch driver is looked up again: Python, then bound again
    ck[(8,)](x, y, 32, 7)
    assert len(direct_fake.direct) == 3 and len(direct_fake.launches) == before + 4
    ck[(9,)](x, y, 32, 7)
    assert direct_fake.direct[-1] == (9, (x.data_ptr(), y.data_ptr(), 32, 7))
    with _enter_hook() as seen:
        ck[(10,)](x, y, 32, 7)
    assert seen == [(10, 1, 1)] and direct_fake.direct[-1][0] == 9


def test_c_heuristics_launch(direct_fake, monkeypatch):
    """``heuristics(...)(fn)[grid](...)``: the arguments' dict (defaults, positional, keywords), each heuristic
    called on a copy, the values passed as keywords to the wrapped kernel's C relaunch -- no Python frame but
    the heuristics'; a keyword a heuristic sets goes to Python (the heuristic wins, as there); errors propagate."""
    torch = pytest.importorskip("torch")
    speedups = pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    import functools

    from tests.runtime import fakebackend

    monkeypatch.setattr(fakebackend.FakeDriver, "device_getter", lambda self: functools.partial(int, -1))
    x, y = torch.zeros(64), torch.zeros(64)
    args_seen = []

    def block(a):
        args_seen.append(dict(a))
        a["n"] = -1  # a heuristic's own copy: the next one and the launch do not see this
        return 16 if a["m"] > 4 else 8

    h = tritium.heuristics({"BLOCK": block, "FLAG": lambda a: a["BLOCK"] // 4 + a["n"]})(kern_c)
    h[(2,)](x, y, 32, 7)  # first launch: the state is made, the launch is Python's
    assert type(h[(2,)]) is speedups.GridLaunch
    direct_fake.direct.clear()
    args_seen.clear()
    frames = _python_frames(lambda: h[(3,)](x, y, 32, 7))  # the two heuristics and the fake's direct launch
    assert sorted(frames) == [("test_launch_fast_path.py", n) for n in ("<lambda>", "<lambda>", "block")], frames
    assert direct_fake.direct == [(3, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 36))]
    assert args_seen == [{"x_ptr": x, "y_ptr": y, "n": 32, "m": 7, "FLAG": 3}]  # FLAG: the default
    for _ in range(2):  # a keyword at the call (BLOCK 8: compiled on the first, the general path)
        h[(4,)](x, y, 32, m=3)
    assert direct_fake.direct[-1] == (4, (x.data_ptr(), y.data_ptr(), 32, 3, 8, 34))
    assert args_seen[-1] == {"x_ptr": x, "y_ptr": y, "n": 32, "m": 3, "FLAG": 3}
    h[(5,)](x, y, 32, 7, BLOCK=64)  # a heuristic's name at the call: Python's apply, the heuristic's value
    assert direct_fake.direct[-1] == (5, (x.data_ptr(), y.data_ptr(), 32, 7, 16, 36))

    def bad(a):
        raise ZeroDivisionError("heuristic says no")

    hb = tritium.heuristics({"BLOCK": bad})(kern_c)
    for _ in range(2):  # Python's path, then C's: the same error
        with pytest.raises(ZeroDivisionError, match="heuristic says no"):
            hb[(2,)](x, y, 32, 7)
    # stacked: heuristics over heuristics (the outer one's value reaches the inner one's as a keyword)
    h2 = tritium.heuristics({"BLOCK": lambda a: 32})(tritium.heuristics({"FLAG": lambda a: a["BLOCK"] + 1})(kern_c))
    h2[(2,)](x, y, 32, 7)
    h2[(6,)](x, y, 32, 7)
    assert direct_fake.direct[-1] == (6, (x.data_ptr(), y.data_ptr(), 32, 7, 32, 33))


def test_c_compiled_kernel_not_bound_where_the_driver_refuses_a_direct_launch(direct_fake, monkeypatch):
    """A kernel whose driver cannot make the direct launch for its signature (hand-written TTIR compiled without
    one: the cuda driver raises) is launched by CompiledKernel.launch, as before -- never an error."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    from tests.runtime import fakebackend

    jit_bind = fakebackend.FakeDriver.bind

    def refusing_bind(self, kernel, device):
        b = jit_bind(self, kernel, device)

        def direct(positions, n_values):
            if n_values == len(positions):  # CompiledKernel's request (the JIT's has its constexprs among the values)
                raise KernelRuntimeError("no direct launch for runtime argument positions ()")
            return b.direct(positions, n_values)
        return b._replace(direct=direct)

    monkeypatch.setattr(fakebackend.FakeDriver, "bind", refusing_bind)
    x = torch.zeros(64)
    ck = kern_c[(2,)](x, x, 32, 7, BLOCK=16)
    n = len(direct_fake.launches)
    ck[(3,)](x, x, 32, 7)
    ck[(3,)](x, x, 32, 7)
    assert ck._c_grid_state is None and len(direct_fake.launches) == n + 2
