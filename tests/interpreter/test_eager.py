"""Step-through mode (``TRITIUM_TARGET=interpreter:eager``, or ``TRITON_INTERPRET=1`` with
``TRITIUM_INTERPRET_MODE=eager``): the kernel's Python body runs program by program, so print / breakpoint / pdb and
Python tracebacks work in a kernel, with the fast mode's results (the same op code, the same memory checks)."""
import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import registry
from tritium.errors import CompilationError, DataRaceError, OutOfBoundsError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def eager():
    registry.set_active("interpreter:eager")
    yield
    registry.set_active(None)


@tritium.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tritium.jit
def _printing(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    if pid == 1:
        print("tile of program", pid, x * 2)


@tritium.jit
def _row_sums(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):  # a loop variable: an int32 tensor, as the compiled loop's
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@tritium.jit
def _oob(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))  # reads past the end
    tl.store(x_ptr + tl.arange(0, BLOCK), x)


@tritium.jit
def _shape_error(x_ptr, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK)
    tl.store(x_ptr + a, a + b)


@tritium.jit
def _racy_histogram(x_ptr, bins_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    h = tl.histogram(x, 4)
    old = tl.load(bins_ptr + tl.arange(0, 4))
    tl.store(bins_ptr + tl.arange(0, 4), old + h)  # not atomic: programs race


def test_vector_add_matches_numpy(eager):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    k = _add[(8,)](x, y, out, 1000, BLOCK=128)
    assert list(k.asm) == ["eager"]
    np.testing.assert_array_equal(out, x + y)


def test_eager_equals_fast_bit_for_bit():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 300)).astype(np.float32)
    res = {}
    for mode in ("interpreter", "interpreter:eager"):
        registry.set_active(mode)
        try:
            out = np.zeros(7, np.float32)
            k = _row_sums[(7,)](x, out, 300, BLOCK=64)
            res[mode] = (out, list(k.asm))
        finally:
            registry.set_active(None)
    assert res["interpreter"][1] == ["ttir", "npy"] and res["interpreter:eager"][1] == ["eager"]
    assert res["interpreter"][0].tobytes() == res["interpreter:eager"][0].tobytes()
    np.testing.assert_allclose(res["interpreter"][0], x.sum(axis=1), rtol=1e-5)


def test_print_of_a_tile_shows_its_values(eager, capsys):
    x = np.arange(16, dtype=np.float32)
    _printing[(2,)](x, BLOCK=8)
    out = capsys.readouterr().out
    assert out.count("tile of program") == 1
    assert "tensor(1, dtype=int32)" in out
    assert "tensor([16., 18., 20., 22., 24., 26., 28., 30.], dtype=fp32)" in out


def test_out_of_bounds_is_raised_through_the_kernel_frame(eager):
    x = np.zeros(10, np.float32)
    with pytest.raises(OutOfBoundsError) as ei:
        _oob[(1,)](x, BLOCK=16)
    msg = str(ei.value)
    assert "test_eager.py" in msg and "reads past the end" in msg and "(0, 0, 0)" in msg
    frames = traceback.extract_tb(ei.value.__traceback__)
    line = _oob.starting_line_number + 2
    assert any(f.filename == __file__ and f.lineno == line and f.name == "_oob" for f in frames), frames


def test_semantic_errors_name_the_kernel_line(eager):
    with pytest.raises(CompilationError) as ei:
        _shape_error[(1,)](np.zeros(64, np.int32), BLOCK=16)
    msg = str(ei.value)
    assert f"test_eager.py:{_shape_error.starting_line_number + 4}" in msg, msg
    assert "tl.store(x_ptr + a, a + b)" in msg


def test_race_detector_in_step_through_mode(eager, monkeypatch):
    monkeypatch.setenv("TRITIUM_INTERPRET_CHECKS", "races")
    x = np.arange(64, dtype=np.int32) % 4
    bins = np.zeros(4, np.int32)
    with pytest.raises(DataRaceError) as ei:
        _racy_histogram[(4,)](x, bins, BLOCK=16)
    assert "bins_ptr" in str(ei.value)


def test_default_mode_is_the_compiled_interpreter():
    registry.set_active(None)
    x = np.ones(16, np.float32)
    k = _add[(1,)](x, x, np.zeros(16, np.float32), 16, BLOCK=16)
    if registry.select().name == "interpreter":
        assert "npy" in k.asm


def _run(script: str, stdin: str = "", **env):
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="tritium-eager-"), "step_kernel.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(script))
    e = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET",
                                                         "TRITIUM_INTERPRET_MODE", "PYTHONBREAKPOINT")}
    e.update(env)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, path], input=stdin, capture_output=True,
                          text=True, timeout=300, env=e, cwd=ROOT)


_SCRIPT = """
    import numpy as np
    import tritium
    import tritium.language as tl

    @tritium.jit
    def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
        y = x * 3
        if pid == 1:
            breakpoint()
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), y)

    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k = scale[(2,)](x, out, BLOCK=4)
    print("stages", list(k.asm), "out", out.tolist())
"""


def test_pdb_stops_at_breakpoint_in_a_kernel_and_prints_a_tile():
    r = _run(_SCRIPT, stdin="p y\np pid\np x.dtype\nc\n", TRITON_INTERPRET="1", TRITIUM_INTERPRET_MODE="eager")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "(Pdb)" in out
    assert "-> tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), y)" in out  # stopped in the kernel's source
    assert "tensor([12., 15., 18., 21.], dtype=fp32)" in out  # program 1's tile
    assert "tensor(1, dtype=int32)" in out
    assert "fp32" in out
    assert "stages ['eager'] out [0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0]" in out


def test_target_environment_variable_selects_eager():
    r = _run(_SCRIPT.replace("breakpoint()", "pass"), TRITIUM_TARGET="interpreter:eager")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stages ['eager']" in r.stdout
    r = _run(_SCRIPT.replace("breakpoint()", "pass"), TRITON_INTERPRET="1")
    assert "stages ['ttir', 'npy']" in r.stdout, r.stdout + r.stderr  # the fast mode stays the default
    r = _run(_SCRIPT, TRITON_INTERPRET="1", TRITIUM_INTERPRET_MODE="slow")
    assert r.returncode != 0 and "TRITIUM_INTERPRET_MODE='slow'" in r.stderr


def test_generated_programs_equal_in_both_modes():
    """The seeded generated kernels (tests/fuzz/programs.py: promotions, loops and branches differing between
    programs, atomics, scans, math) give bit-identical outputs in both modes."""
    pytest.importorskip("torch")
    import tempfile

    from tests.fuzz import programs as P

    d = tempfile.mkdtemp(prefix="tritium-eager-")
    for case in P.cases(12, 7):
        kernel = P.load_kernel(case, d)
        got = {}
        for mode in ("interpreter", "interpreter:eager"):
            registry.set_active(mode)
            try:
                got[mode] = P.run_case(case, kernel)
            finally:
                registry.set_active(None)
        for name, fast in got["interpreter"].items():
            slow = got["interpreter:eager"][name]
            assert fast.tobytes() == slow.tobytes(), (name, P.source(case))


@pytest.mark.campaign
def test_e2e_suite_in_step_through_mode():
    """Every e2e kernel (tests/e2e) run in step-through mode against the same references as the fast mode."""
    env = dict(os.environ, TRITIUM_INTERPRET_MODE="eager")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/e2e"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


def _both_modes(launch, arrays):
    """Run ``launch(*copies)`` in the fast mode and in step-through mode on copies of ``arrays``; the arrays after
    each, and the compiled kernels' stages."""
    out = {}
    for mode in ("interpreter", "interpreter:eager"):
        registry.set_active(mode)
        try:
            copies = [a.copy() for a in arrays]
            launch(*copies)
            out[mode] = copies
        finally:
            registry.set_active(None)
    return out["interpreter"], out["interpreter:eager"]


def _e2e_cases():
    from tests.e2e import kernels as K

    rng = np.random.default_rng(3)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    M, N, Kd = 40, 48, 72
    a16, b16 = rng.standard_normal((M, Kd)).astype(np.float16), rng.standard_normal((Kd, N)).astype(np.float16)

    def strides(x):
        return [s // x.itemsize for s in x.strides]

    return {
        "vector add": (lambda x, y, o: K.add_kernel[(4,)](x, y, o, 1000, BLOCK_SIZE=256),
                       [f32(1000), f32(1000), np.zeros(1000, np.float32)]),
        "softmax": (lambda o, x: K.softmax_kernel[(17,)](o, x, 100, 100, 100, BLOCK_SIZE=128),
                    [np.zeros((17, 100), np.float32), f32(17, 100)]),
        "layer norm": (lambda x, y, w, b, mu, rs: K._layer_norm_fwd_fused[(9,)](x, y, w, b, mu, rs, 300, 300, 1e-5,
                                                                              BLOCK_SIZE=128),
                       [f32(9, 300), np.zeros((9, 300), np.float32), f32(300), f32(300), np.zeros(9, np.float32),
                        np.zeros(9, np.float32)]),
        "matmul fp16 (leaky relu)": (
            lambda a, b, c: K.matmul_kernel[(2 * 2,)](a, b, c, M, N, Kd, *strides(a), *strides(b), *strides(c),
                                                       BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
                                                       GROUP_SIZE_M=2, ACTIVATION="leaky_relu"),
            [a16, b16, np.zeros((M, N), np.float16)]),
        "atomics": (lambda x, h, s, m: K.atomic_kernel[(4,)](x, h, s, m, 1000, NBINS=16, BLOCK=256),
                    [rng.integers(0, 1000, 1000).astype(np.int32), np.zeros(16, np.int32), np.zeros(1, np.int32),
                     np.full(1, -1, np.int32)]),
        "while loops (collatz)": (lambda n, o: K.collatz_kernel[(40,)](n, o),
                                  [rng.integers(1, 500, 40).astype(np.int32), np.zeros(40, np.int32)]),
    }


@pytest.mark.parametrize("name", list(_e2e_cases()))
def test_e2e_kernels_bit_identical_in_both_modes(name):
    launch, arrays = _e2e_cases()[name]
    fast, slow = _both_modes(launch, arrays)
    for i, (f, s) in enumerate(zip(fast, slow)):
        assert f.tobytes() == s.tobytes(), f"{name}: array {i} differs"
    assert any(not np.array_equal(f, a) for f, a in zip(fast, arrays)), "the kernel wrote nothing"


@tritium.jit
def _serialized_add(data, Lock, BLOCK: tl.constexpr):
    ptrs = data + tl.arange(0, BLOCK)
    while tl.atomic_cas(Lock, 0, 1) == 1:  # a lock between programs
        pass
    tl.store(ptrs, tl.load(ptrs) + 1.0)
    tl.atomic_xchg(Lock, 0)


def test_spin_lock_between_programs(monkeypatch):
    """A lock taken with atomic_cas: step-through mode runs programs one after another, so it works there (as on
    Triton's interpreter); the fast mode runs them in lockstep, where the waiting programs would spin forever: it
    notices the wait (the programs left in the loop carry nothing that changes), puts the chunk's memory back and
    runs its programs one at a time.  Where it cannot (restarts off), it stops with an error naming the loop, the
    programs and the way out, instead of hanging."""
    from tritium_interpreter.runtime import control

    data, lock = np.zeros(32, np.float32), np.zeros(1, np.int32)
    registry.set_active("interpreter:eager")
    try:
        _serialized_add[(6,)](data, lock, BLOCK=32)
    finally:
        registry.set_active(None)
    np.testing.assert_array_equal(data, np.full(32, 6.0, np.float32))
    assert lock[0] == 0
    base = np.random.default_rng(0).random(32).astype(np.float32)
    data, lock = base.copy(), np.zeros(1, np.int32)
    _serialized_add[(300,)](data, lock, BLOCK=32)  # the fast mode: restarted one program at a time
    np.testing.assert_allclose(data, base + 300, rtol=1e-6)
    assert lock[0] == 0
    monkeypatch.setattr(control, "SPIN_LIMIT", 500)
    monkeypatch.setattr(control, "SPIN_RESTART", 10 ** 9)
    monkeypatch.setattr(control, "SPIN_RESTART_ANY", 10 ** 9)
    with pytest.raises(tritium.errors.KernelRuntimeError, match=r"(?s)while loop has run 500 iterations with "
                       r"programs \[\(1, 0, 0\).*TRITIUM_INTERPRET_MODE=eager.*while tl.atomic_cas"):
        _serialized_add[(3,)](np.zeros(32, np.float32), np.zeros(1, np.int32), BLOCK=32)

@tritium.jit
def _counted_lock(data, Lock, Tries, BLOCK: tl.constexpr):
    ptrs = data + tl.arange(0, BLOCK)
    n = 0
    while tl.atomic_cas(Lock, 0, 1) == 1:  # the loop carries a count that changes every try
        n += 1
    tl.store(ptrs, tl.load(ptrs) + 1.0)
    tl.store(Tries + tl.program_id(0), n)
    tl.atomic_xchg(Lock, 0)


def test_spin_lock_counting_its_tries():
    """A wait whose loop-carried values change (it counts its tries) is restarted too, after more iterations."""
    data, lock, tries = np.zeros(16, np.float32), np.zeros(1, np.int32), np.full(20, -1, np.int32)
    _counted_lock[(20,)](data, lock, tries, BLOCK=16)
    np.testing.assert_array_equal(data, np.full(16, 20.0, np.float32))
    assert lock[0] == 0 and (tries == 0).all()  # one program at a time: nobody waited


def test_breakpoint_outside_step_through_mode_says_how(monkeypatch):
    """``breakpoint()`` in a kernel compiled as usual (the fast interpreter, a GPU target) is an error naming the line
    and the mode that runs it: it was a bare NameError."""
    import numpy as np

    from tritium.errors import CompilationError

    @tritium.jit
    def stops(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        breakpoint()
        tl.store(X + tl.arange(0, BLOCK), x + 1)

    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    with pytest.raises(CompilationError, match=r"interpreter:eager") as e:
        stops[(1,)](np.zeros(16, np.float32), BLOCK=16)
    assert "breakpoint()" in str(e.value)
