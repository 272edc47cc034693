"""The interpreter's relaunch path: the per-kernel ``Launcher`` (argument conversion every launch, immutable
per-kernel state kept), reached from ``fn[grid]`` through the jit fast path (``tritium.compiler.launch.bound_launch`` ->
``InterpreterDriver.launcher`` -> ``Launcher.launch``) and from ``driver.launch``.  Every test relaunches many times with fresh random
inputs and checks the results, the errors and the caller's memory."""
from __future__ import annotations

import gc
import re
import warnings

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import DeviceAssertionError, KernelRuntimeError, OutOfBoundsError
from tritium.runtime import driver

torch = pytest.importorskip("torch")


@tritium.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


@tritium.jit
def add_unmasked(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # LINE:oob
    tl.store(out_ptr + offs, x + 1)


@tritium.jit
def axpy_strided(x_ptr, sx, out_ptr, so, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m)
    tl.store(out_ptr + offs * so, a * x + tl.load(out_ptr + offs * so, mask=m), mask=m)


@tritium.jit
def grid2d(out_ptr, W, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    j = tl.program_id(1)
    k = tl.arange(0, BLOCK)
    v = i * 1000 + j * 10 + tl.num_programs(0) * 0 + k * 0 + tl.num_programs(1)
    tl.store(out_ptr + (j * W + i) * BLOCK + k, v)


@tritium.jit(debug=True)  # device asserts are compiled in only with debug, as in Triton
def checked(x_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x < limit, "x below limit")  # LINE:assert


@tritium.jit
def printer(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("v=", x)


@tritium.jit
def divide(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) / tl.load(y_ptr + offs))


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    for k in (add, add_unmasked, axpy_strided, grid2d, checked, printer, divide):
        k.cache.clear()


def line_of(tag):
    for i, line in enumerate(open(__file__).read().splitlines(), start=1):
        if line.rstrip().endswith(f"# LINE:{tag}"):
            return i, line.split("#")[0].strip()
    raise AssertionError(tag)


def fast_entries(fn):
    return list(fn.cache.fast.values())


def test_fast_path_reaches_the_launcher_and_results_are_right():
    from tritium_interpreter.driver import get_launcher

    rng = np.random.default_rng(1)
    for it in range(60):
        n = int(rng.integers(1, 3000))
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = np.full(n, np.nan, np.float32)
        ck = add[(triton_cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        np.testing.assert_array_equal(out, x + y)
    # every fast entry launches through the kernel's one Launcher
    for e in fast_entries(add):
        assert e.launch.__self__ is get_launcher(e.kernel)
    assert get_launcher(ck) is get_launcher(ck)
    assert add.compile_count <= 4  # n % 16 and n == 1 specialisations, alignment of the arrays


def triton_cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_dtypes_shapes_and_containers_change_between_launches(kind):
    rng = np.random.default_rng(2)
    dts = [np.float32, np.float64, np.int32, np.float16, np.int64, np.int8]
    for it in range(48):
        dt = dts[it % len(dts)]
        shape = [(int(rng.integers(1, 700)),), (int(rng.integers(1, 30)), int(rng.integers(1, 30)))][it % 2]
        x = (rng.standard_normal(shape) * 20).astype(dt)
        y = (rng.standard_normal(shape) * 20).astype(dt)
        out = np.zeros(shape, dt)
        n = x.size
        if kind == "torch":
            tx, ty, to = torch.from_numpy(x.copy()), torch.from_numpy(y.copy()), torch.from_numpy(out.copy())
            add[(triton_cdiv(n, 128),)](tx, ty, to, n, BLOCK=128)
            got = to.numpy()
        else:
            add[(triton_cdiv(n, 128),)](x, y, out, n, BLOCK=128)
            got = out
        np.testing.assert_array_equal(got, (x + y).astype(dt))


def test_torch_bf16_bool_requires_grad_and_writes_reach_the_tensor():
    rng = np.random.default_rng(3)
    for it in range(10):
        n = int(rng.integers(1, 500))
        x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(torch.bfloat16)
        y = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(torch.bfloat16)
        out = torch.zeros(n, dtype=torch.bfloat16)
        add[(triton_cdiv(n, 64),)](x, y, out, n, BLOCK=64)
        assert torch.equal(out, x + y)
        xg = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).requires_grad_(True)
        yf = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
        of = torch.zeros(n)
        add[(triton_cdiv(n, 64),)](xg, yf, of, n, BLOCK=64)
        assert torch.equal(of, xg.detach() + yf)


def test_aliasing_between_launches():
    rng = np.random.default_rng(4)
    for it in range(30):
        n = int(rng.integers(1, 1000))
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        x0 = x.copy()
        if it % 3 == 0:  # out is x: in place
            add[(triton_cdiv(n, 128),)](x, y, x, n, BLOCK=128)
            np.testing.assert_array_equal(x, x0 + y)
        elif it % 3 == 1:  # both inputs the same buffer
            out = np.empty_like(x)
            add[(triton_cdiv(n, 128),)](x, x, out, n, BLOCK=128)
            np.testing.assert_array_equal(out, x0 + x0)
        else:  # overlapping views of one buffer: out = x shifted by one element
            buf = rng.standard_normal(n + 1).astype(np.float32)
            b0 = buf.copy()
            add[(1,)](buf[1:], np.zeros(n, np.float32), buf[:n], n, BLOCK=1024)
            # each program loads every element before it stores: out[i] = old[i + 1]
            np.testing.assert_array_equal(buf[:n], b0[1:])


def test_fresh_buffers_every_launch_freed_and_reallocated():
    """Arrays / tensors freed and new ones allocated (addresses and ids get reused): nothing stale is used."""
    rng = np.random.default_rng(5)
    sizes = [int(s) for s in rng.integers(1, 2000, 40)]
    for it, n in enumerate(sizes):
        if it % 2:
            x, y, out = (torch.from_numpy(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
            ref = (x + y).numpy()
        else:
            x, y, out = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
            ref = x + y
        add[(triton_cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        np.testing.assert_array_equal(np.asarray(out), ref)
        del x, y, out
        gc.collect(1)  # the young generations: a full collection (torch is loaded) cost 0.6 s a launch


def test_strided_arguments_numpy_and_torch():
    rng = np.random.default_rng(6)
    for it in range(24):
        n = int(rng.integers(1, 300))
        sx, so = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        a = float(rng.standard_normal())
        xb = rng.standard_normal(n * sx + 3).astype(np.float32)
        ob = rng.standard_normal(n * so + 3).astype(np.float32)
        x, o = xb[1::sx][:n], ob[2::so][:n]
        expect_o = (np.float32(a) * x + o).astype(np.float32)
        untouched = np.delete(ob, np.arange(2, 2 + n * so, so))
        # a strided view is its memory from the first element on; the kernel steps by the strides it is given
        if it % 2:
            tx, to = torch.from_numpy(xb)[1::sx][:n], torch.from_numpy(ob)[2::so][:n]
            assert not to.is_contiguous() or so == 1 or n == 1
            axpy_strided[(triton_cdiv(n, 64),)](tx, tx.stride(0), to, to.stride(0), a, n, BLOCK=64)
        else:
            axpy_strided[(triton_cdiv(n, 64),)](x, x.strides[0] // 4, o, o.strides[0] // 4, a, n, BLOCK=64)
        np.testing.assert_allclose(ob[2::so][:n], expect_o, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.delete(ob, np.arange(2, 2 + n * so, so)), untouched)
        # the kernel's own strides over a contiguous buffer
        xc = rng.standard_normal(n * sx).astype(np.float32)
        oc = rng.standard_normal(n * so).astype(np.float32)
        o0 = oc.copy()
        axpy_strided[(triton_cdiv(n, 64),)](xc, sx, oc, so, a, n, BLOCK=64)
        np.testing.assert_allclose(oc[::so], np.float32(a) * xc[::sx] + o0[::so], rtol=1e-6, atol=1e-6)


def test_scalars_int_float_negative_and_wide():
    rng = np.random.default_rng(7)
    for it in range(40):
        n = int(rng.integers(1, 200))
        x = rng.standard_normal(n).astype(np.float64)
        o = rng.standard_normal(n).astype(np.float64)
        o0 = o.copy()
        a = [int(rng.integers(-5, 5)), float(rng.standard_normal()), np.float32(rng.standard_normal()),
             True, -3][it % 5]
        axpy_strided[(triton_cdiv(n, 32),)](x, 1, o, 1, a, n, BLOCK=32)
        # floats are passed as fp32, ints as i32, True as i1; the product is computed in fp64
        np.testing.assert_allclose(o, float(np.float32(a)) * x + o0, rtol=1e-12)


def test_program_ids_and_num_programs_over_many_grids():
    rng = np.random.default_rng(8)
    for it in range(20):
        W, H = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        out = np.full((H, W, 4), -1, np.int32)
        grid2d[(W, H)](out, W, BLOCK=4)
        i = np.arange(W)[None, :, None]
        j = np.arange(H)[:, None, None]
        np.testing.assert_array_equal(out, np.broadcast_to(i * 1000 + j * 10 + H, (H, W, 4)))


def test_program_ids_across_chunks(monkeypatch):
    """More programs than one chunk holds: each chunk gets its own program ids, also on relaunches."""
    from tritium_interpreter import runtime as rt

    monkeypatch.setattr(rt, "BUDGET", 64)  # BLOCK 4 -> 16 programs a chunk
    for W, H in [(5, 7), (13, 3), (5, 7), (40, 2), (13, 3)]:
        grid2d.cache.clear()  # a new Launcher reads the patched budget
        out = np.full((H, W, 4), -1, np.int32)
        for _ in range(3):
            grid2d[(W, H)](out, W, BLOCK=4)
            i = np.arange(W)[None, :, None]
            j = np.arange(H)[:, None, None]
            np.testing.assert_array_equal(out, np.broadcast_to(i * 1000 + j * 10 + H, (H, W, 4)))


def test_oob_detected_after_many_fast_launches():
    line, text = line_of("oob")
    rng = np.random.default_rng(9)
    for it in range(200):
        x = rng.standard_normal(256).astype(np.float32)
        out = np.zeros(256, np.float32)
        add_unmasked[(4,)](x, out, BLOCK=64)
        np.testing.assert_array_equal(out, x + 1)
    short = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(256, np.float32)
    ck = add_unmasked[(4,)](x, out, BLOCK=64)
    with pytest.raises(OutOfBoundsError) as ei:
        add_unmasked[(4,)](short, out, BLOCK=64)
    msg = str(ei.value)
    assert f"test_launch_cache.py:{line}" in msg and text in msg, msg
    assert "'x_ptr'" in msg and "holds 200 f32 elements" in msg, msg
    assert tuple(ei.value.pid) == (3, 0, 0)
    # the same message through the general driver path
    with pytest.raises(OutOfBoundsError) as e2:
        driver.launch(ck, (4, 1, 1), [short, out])
    assert str(e2.value) == msg
    # and later launches with good buffers are fine again
    x = rng.standard_normal(256).astype(np.float32)
    add_unmasked[(4,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, x + 1)
    # a torch tensor too short, after many torch launches
    for it in range(20):
        tx = torch.from_numpy(rng.standard_normal(256).astype(np.float32))
        to = torch.zeros(256)
        add_unmasked[(4,)](tx, to, BLOCK=64)
        assert torch.equal(to, tx + 1)
    with pytest.raises(OutOfBoundsError, match=r"holds 255 f32 elements") as e3:
        add_unmasked[(4,)](torch.zeros(255), to, BLOCK=64)
    assert f"test_launch_cache.py:{line}" in str(e3.value)


def test_device_assert_and_print_on_the_fast_path(capfd):
    line, text = line_of("assert")
    rng = np.random.default_rng(10)
    for it in range(30):
        x = rng.uniform(0, 1, 64).astype(np.float32)
        checked[(4,)](x, 2.0, BLOCK=16)
    x = rng.uniform(0, 1, 64).astype(np.float32)
    x[37] = 5.0
    with pytest.raises(DeviceAssertionError) as ei:
        checked[(4,)](x, 2.0, BLOCK=16)
    msg = str(ei.value)
    assert "x below limit" in msg and f"test_launch_cache.py:{line}" in msg and text in msg, msg
    assert tuple(ei.value.pid) == (2, 0, 0) and "(tensor index (5,))" in msg
    v = rng.integers(0, 100, 4).astype(np.int32)
    for _ in range(3):
        printer[(1,)](v, BLOCK=4)
    out = capfd.readouterr().out.splitlines()
    assert len(out) == 12
    for k in range(4):
        assert f"pid (0, 0, 0) idx ({k:>3}) v={v[k]}" in out


def test_errors_identical_to_the_general_path():
    from tritium_interpreter.driver import InterpreterDriver

    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    ck = add[(1,)](x, x, out, 64, BLOCK=64)
    add[(1,)](x, x, out, 64, BLOCK=64)
    cases = [
        [x[::-1], x, out, 64],                     # negative stride
        [x, np.zeros((8, 16), np.float32)[:, ::3], out, 64],  # fine: strided 2-D (no error)
        [x, x, out, "nope"],                      # bad scalar
        [x, x, out],                              # arity
        [x, [1.0, 2.0], out, 64],                 # not an array
    ]
    for args in cases:
        results = []
        for how in ("launch", "driver", "launcher"):
            try:
                if how == "launch":
                    driver.launch(ck, (1, 1, 1), list(args))
                elif how == "driver":
                    InterpreterDriver().launch(ck, (1,), list(args))
                else:
                    InterpreterDriver().bind(ck, 0).launch(ck, (1, 1, 1), tuple(args))
                results.append(None)
            except KernelRuntimeError as e:
                results.append((type(e), str(e)))
        assert results[0] == results[1] == results[2], results
    with pytest.raises(KernelRuntimeError, match="negative or non element-aligned strides"):
        add[(1,)](x[::-1], x, out, 64, BLOCK=64)


def test_fp_error_state_restored_and_no_warnings():
    before = np.geterr()
    x = np.array([1, -1, 0, 2], np.float32)
    y = np.zeros(4, np.float32)
    out = np.zeros(4, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="raise", invalid="raise"):
            for _ in range(3):
                divide[(1,)](x, y, out, BLOCK=4)
            assert np.geterr()["divide"] == "raise"
    assert np.geterr() == before
    assert np.isposinf(out[0]) and np.isneginf(out[1]) and np.isnan(out[2])


def test_cached_state_is_read_only():
    from tritium_interpreter.driver import get_launcher

    x = np.ones(16, np.float32)
    out = np.zeros(16, np.float32)
    ck = add[(2,)](x, x, out, 16, BLOCK=8)
    add[(2,)](x, x, out, 16, BLOCK=8)
    ln = get_launcher(ck)
    assert ln.ids and all(not a.flags.writeable for ids in ln.ids.values() for t in ids for a in t)
    assert all(not a.flags.writeable for c in ln.scalars for a in c.values())
    assert all(not a.flags.writeable for a in ln.bases)
    # user arrays stay writable and are not retained by the launcher
    import weakref

    y = np.ones(16, np.float32)
    r = weakref.ref(y)
    add[(2,)](x, y, out, 16, BLOCK=8)
    del y
    gc.collect()
    assert r() is None
    assert re.search("Launcher", type(ln).__name__)
