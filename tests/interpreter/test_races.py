"""The interpreter's race detector (``TRITIUM_INTERPRET_CHECKS=races``): races between programs of one launch (and
between lanes of one store) are reported with both source lines, program ids, tile indices and the element;
race-free kernels -- atomics, programs owning their elements, a program reading back its own stores -- run as
without the check and compute the same results."""
import inspect

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import DataRaceError, KernelRuntimeError


@pytest.fixture(autouse=True)
def _races(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")
    monkeypatch.setenv("TRITIUM_INTERPRET_CHECKS", "races")


def heads(msg):
    """The report's two access lines (each followed by its source line and caret)."""
    return [ln for ln in msg.splitlines() if ln.startswith("  a ")]


def line_of(fn, text):
    """The file line of the first source line of ``fn`` containing ``text``."""
    src, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, s in enumerate(src) if text in s)


@triton.jit
def hist_racy(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = tl.load(x_ptr + offs, mask=m, other=0)
    h = tl.load(hist_ptr + b, mask=m)  # LOAD
    tl.store(hist_ptr + b, h + 1, mask=m)  # STORE


@triton.jit
def hist_atomic(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(hist_ptr + b, 1, mask=m)


@triton.jit
def neighbour_read(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each program stores its block, then reads the next program's block: a read-after-write between programs."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))  # OWN
    nxt = (offs + BLOCK) % n
    y = tl.load(out_ptr + nxt)  # NEXT
    tl.store(x_ptr + offs, y)


@triton.jit
def own_read_back(x_ptr, out_ptr, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    """Each program stores, reads back and updates only its own block, in a loop: no race."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    for _ in range(ITERS):
        tl.store(out_ptr + offs, tl.load(out_ptr + offs) * 2)


@triton.jit
def flag_all(flag_ptr, x_ptr, BLOCK: tl.constexpr):
    """Every program stores 1 into flag[0] (same value: benign only when the user says so)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
    tl.store(flag_ptr, 1)  # FLAG


@triton.jit
def halves(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Two lanes of one store on each element (offs // 2)."""
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs // 2, tl.load(x_ptr + offs))  # HALVES


@triton.jit
def first_program_only(out_ptr, x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 3)
    if pid == 0:
        tl.store(out_ptr, 7.0)


@triton.jit
def neighbour_read_2d(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """As neighbour_read, the read as a (2, BLOCK // 2) tile: each access's tile index in its own tile's shape."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    r = tl.arange(0, 2)[:, None] * (BLOCK // 2) + tl.arange(0, BLOCK // 2)[None, :]
    y = tl.load(out_ptr + (pid * BLOCK + r + BLOCK) % n)
    tl.store(x_ptr + pid * BLOCK + r, y)


def test_racy_histogram_is_reported_with_both_lines_and_programs():
    rng = np.random.default_rng(1)
    x = np.tile(rng.permutation(16).astype(np.int32), 4)  # each program's 16 bins distinct; programs share bins
    hist = np.zeros(16, np.int32)
    with pytest.raises(DataRaceError) as ei:
        hist_racy[(4,)](x, hist, x.size, BLOCK=16)
    msg = str(ei.value)
    store = line_of(hist_racy, "# STORE")
    # the four programs store their bins together (one statement): two of them on the same bin
    first, second = heads(msg)
    assert first.startswith("  a store by program (") and f":{store}:" in first, msg
    assert second.startswith("  a store (the same statement) by program (") and f":{store}:" in second, msg
    p1 = int(first.split("program (")[1].split(",")[0])
    p2 = int(second.split("program (")[1].split(",")[0])
    assert p1 != p2 and {p1, p2} <= {0, 1, 2, 3}, msg
    e = int(msg.split("hist_ptr[")[1].split("]")[0])
    assert 0 <= e < 16 and msg.count(f"tile index ({list(x[:16]).index(e)},)") == 2, msg
    assert ei.value.pid == (p1, 0, 0) and f":{store}:" in ei.value.location


def test_two_lanes_of_one_program_on_one_bin():
    x = np.array([3, 5, 3, 1], np.int32)  # bin 3 twice in one program
    hist = np.zeros(8, np.int32)
    with pytest.raises(DataRaceError) as ei:
        hist_racy[(1,)](x, hist, 4, BLOCK=4)
    msg = str(ei.value)
    assert "hist_ptr[3]" in msg and "tile index (0,)" in msg and "tile index (2,)" in msg, msg
    assert msg.count("program (0, 0, 0)") == 2, msg


def test_atomic_histogram_is_race_free_and_right():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 16, 1000).astype(np.int32)
    hist = np.zeros(16, np.int32)
    hist_atomic[(triton.cdiv(x.size, 64),)](x, hist, x.size, BLOCK=64)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=16))


def test_read_after_write_between_programs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    with pytest.raises(DataRaceError) as ei:
        neighbour_read[(4,)](x, out, 64, BLOCK=16)
    msg = str(ei.value)
    own, nxt = line_of(neighbour_read, "# OWN"), line_of(neighbour_read, "# NEXT")
    assert f":{own}" in msg and f":{nxt}" in msg and "out_ptr[" in msg, msg
    # program p reads out[16 (p + 1) ...], which program p + 1 stores
    first, second = heads(msg)
    assert first.startswith("  a load by program (") and f":{nxt}:" in first, msg
    assert second.startswith("  a store by program (") and f":{own}:" in second, msg
    p1 = int(first.split("program (")[1].split(",")[0])
    p2 = int(second.split("program (")[1].split(",")[0])
    assert p2 == (p1 + 1) % 4, msg


def test_tile_indices_in_each_statements_own_shape():
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(DataRaceError) as ei:
        neighbour_read_2d[(4,)](x, np.zeros_like(x), 64, BLOCK=16)
    first, second = heads(str(ei.value))
    # program p's load of out[16 (p + 1) + 9] (tile index (1, 1) of its 2x8 tile) is program p + 1's lane 9
    e = int(str(ei.value).split("out_ptr[")[1].split("]")[0])
    assert first.startswith("  a load") and f"tile index ({(e % 16) // 8}, {e % 8})" in first, first
    assert second.startswith("  a store") and f"tile index ({e % 16},)" in second, second


def test_a_program_reading_back_its_own_stores_is_not_a_race():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(128).astype(np.float32)
    out = np.zeros_like(x)
    own_read_back[(8,)](x, out, BLOCK=16, ITERS=3)
    np.testing.assert_array_equal(out, x * 8)


def test_same_value_stores_are_races_unless_the_user_opts_in(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(np.float32)
    flag = np.zeros(2, np.int32)
    with pytest.raises(DataRaceError, match=r"flag_ptr\[0\]"):
        flag_all[(4,)](flag, x.copy(), BLOCK=16)
    monkeypatch.setenv("TRITIUM_INTERPRET_CHECKS", "races,same-value-stores")
    y = x.copy()
    flag_all[(4,)](flag, y, BLOCK=16)
    assert flag[0] == 1 and flag[1] == 0
    np.testing.assert_array_equal(y, x + 1)
    out = np.zeros(4, np.float32)
    with pytest.raises(DataRaceError, match=r"out_ptr\[0\]"):  # different values: still a race
        halves[(1,)](np.arange(8, dtype=np.float32), out, BLOCK=8)


def test_two_lanes_of_one_store_report_their_tile_indices():
    out = np.zeros(4, np.float32)
    with pytest.raises(DataRaceError) as ei:
        halves[(1,)](np.arange(8, dtype=np.float32), out, BLOCK=8)
    msg = str(ei.value)
    assert "out_ptr[0]" in msg and "tile index (1,)" in msg and "tile index (0,)" in msg, msg
    assert f":{line_of(halves, '# HALVES')}" in msg


def test_programs_that_do_not_run_a_branch_do_not_access(monkeypatch):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(1, np.float32)
    first_program_only[(4,)](out, x, BLOCK=16)
    assert out[0] == 7.0
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32) * 3)


def test_race_free_results_equal_unchecked(monkeypatch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(256).astype(np.float32)
    outs = []
    for checks in ("races", ""):
        monkeypatch.setenv("TRITIUM_INTERPRET_CHECKS", checks)
        out = np.zeros_like(x)
        own_read_back[(16,)](x, out, BLOCK=16, ITERS=2)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], x * 4)


def test_unknown_check_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TRITIUM_INTERPRET_CHECKS", "races,raecs")
    with pytest.raises(ValueError, match="unknown check.*raecs"):
        own_read_back[(1,)](np.zeros(16, np.float32), np.zeros(16, np.float32), BLOCK=16, ITERS=1)


def test_data_race_error_is_a_kernel_runtime_error():
    assert issubclass(DataRaceError, KernelRuntimeError)


@pytest.mark.campaign
def test_every_e2e_kernel_is_race_free_under_the_detector():
    """No false reports: the e2e suite (tutorial kernels, reductions, loops, atomics, dots) passes with the check."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TRITIUM_INTERPRET_CHECKS="races", TRITIUM_TARGET="interpreter")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/e2e"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout
