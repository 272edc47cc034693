"""Wrong kernels and wrong launches: each raises a clear exception naming the offending source line.

The suite also runs in step-through mode (``TRITIUM_INTERPRET_MODE=eager``, tests/interpreter/test_eager.py): there
the frontend's compile-time checks of Python constructs do not apply (Python runs them) and programs run one after
the other."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.errors import CompilationError, DeviceAssertionError, OutOfBoundsError

from . import bad_kernels as B

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITIUM_TARGET", "interpreter")


def marked_line(tag):
    """(line number, stripped text) of the line of bad_kernels.py marked ``# ERR:tag``."""
    for i, line in enumerate(open(B.__file__).read().splitlines(), start=1):
        if line.rstrip().endswith(f"# ERR:{tag}"):
            return i, line.split("#")[0].strip()
    raise AssertionError(tag)


def check_names_line(exc, tag):
    lineno, text = marked_line(tag)
    msg = str(exc)
    assert f"bad_kernels.py:{lineno}" in msg, msg
    assert text in msg, msg


f32 = lambda n=64: np.zeros(n, np.float32) + 1

EAGER = os.environ.get("TRITIUM_INTERPRET_MODE", "").strip().lower() == "eager"
# checks the frontend makes of the kernel's Python before it runs; step-through mode runs that Python (an unknown
# name is Python's NameError / AttributeError at the line, a loop may change a variable's type, break works)
FRONTEND_ONLY = {"unknown_builtin", "undefined_name", "loop_type_change", "unsupported_break", "mutable_global"}


COMPILE_ERRORS = [
    ("ptr_plus_ptr", lambda: B.ptr_plus_ptr[(1,)](f32(), f32())),
    ("no_broadcast", lambda: B.no_broadcast[(1,)](np.zeros(64, np.int32))),
    ("runtime_arange", lambda: B.runtime_arange[(1,)](f32(), 16)),
    ("unknown_builtin", lambda: B.unknown_builtin[(1,)](f32())),
    ("undefined_name", lambda: B.undefined_name[(1,)](f32())),
    ("non_pow2_arange", lambda: B.non_pow2_arange[(1,)](f32(128))),
    ("float_offset", lambda: B.float_offset[(1,)](f32())),
    ("bitwise_on_float", lambda: B.bitwise_on_float[(1,)](f32())),
    ("loop_type_change", lambda: B.loop_type_change[(1,)](f32(), 3)),
    ("unsupported_break", lambda: B.unsupported_break[(1,)](f32(), 3)),
    ("calls_python", lambda: B.calls_python[(1,)](f32())),
    ("wrong_callee_args", lambda: B.wrong_callee_args[(1,)](f32())),
    ("load_from_int", lambda: B.load_from_int[(1,)](f32(), 3)),
    ("mask_wrong_shape", lambda: B.mask_wrong_shape[(1,)](f32())),
    ("mutable_global", lambda: B.mutable_global[(1,)](f32())),
    ("reduce_bad_axis", lambda: B.reduce_bad_axis[(1,)](f32())),
    ("store_to_block_arg_wrong_rank", lambda: B.store_to_block_arg_wrong_rank[(1,)](f32(256))),
]


@pytest.mark.parametrize("tag,launch", COMPILE_ERRORS, ids=[t for t, _ in COMPILE_ERRORS])
def test_compile_error_names_line(tag, launch):
    if EAGER and tag in FRONTEND_ONLY:
        pytest.skip("a compile-time check of the frontend; step-through mode runs the kernel's Python")
    with pytest.raises(CompilationError) as ei:
        launch()
    check_names_line(ei.value, tag)


def test_out_of_bounds_load_names_line_and_program():
    x = f32(100)
    y = np.zeros(100, np.float32)
    with pytest.raises(OutOfBoundsError) as ei:
        B.oob_load[(4,)](x, y, 100, BLOCK=32)  # program 3 reads elements 96..127 of 100
    check_names_line(ei.value, "oob_load")
    assert "(3, 0, 0)" in str(ei.value)
    if EAGER:  # programs run one after the other: 0, 1 and 2 stored before 3 faulted
        assert y[:96].all() and not y[96:].any()
    else:
        assert not y.any(), "nothing may be stored by a launch that faulted before its stores"


def test_out_of_bounds_store_names_line():
    x = f32(16)
    with pytest.raises(OutOfBoundsError) as ei:
        B.oob_store[(1,)](x, 8, BLOCK=16)
    check_names_line(ei.value, "oob_store")


def test_out_of_bounds_in_2d_grid_names_program():
    x = f32(4 * 16)
    with pytest.raises(OutOfBoundsError) as ei:
        B.oob_2d_program[(1, 5)](x, 16, BLOCK=16)  # row 4 is past the end
    check_names_line(ei.value, "oob_2d_program")
    assert "(0, 4, 0)" in str(ei.value)


def test_failing_device_assert():
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(DeviceAssertionError) as ei:
        B.failing_assert[(1,)](x, BLOCK=8)
    check_names_line(ei.value, "failing_assert")
    assert "x must stay below 5" in str(ei.value)
    B.failing_assert[(1,)](np.zeros(8, np.float32), BLOCK=8)  # holds: no error


def test_missing_constexpr():
    with pytest.raises(TypeError, match="BLOCK"):
        B.needs_constexpr[(1,)](f32())


def test_too_many_arguments():
    with pytest.raises(TypeError, match="needs_constexpr"):
        B.needs_constexpr[(1,)](f32(), 16, 3)


def test_unknown_keyword_argument():
    with pytest.raises(TypeError, match="BLOK"):
        B.needs_constexpr[(1,)](f32(), BLOK=16)


def test_unsupported_argument_type():
    with pytest.raises(TypeError, match="list"):
        B.needs_constexpr[(1,)]([1.0, 2.0], BLOCK=16)


def test_calling_jit_function_directly():
    with pytest.raises(RuntimeError, match="jit"):
        B.needs_constexpr(f32(), 16)


def test_errors_never_kill_the_process():
    # every compile error above raised inside this process; a fresh process checks the same for LLVM/MLIR
    # aborts: compile a broken kernel and make sure the interpreter survives to print a message.
    code = (
        "import numpy as np, tritium\n"
        "from tests.e2e import bad_kernels as B\n"
        "try:\n"
        "    B.no_broadcast[(1,)](np.zeros(64, np.int32))\n"
        "except tritium.CompilationError as e:\n"
        "    print('caught', type(e).__name__)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"TRITIUM_TARGET": "interpreter", "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "caught CompilationError" in r.stdout


@tritium.jit
def _tile_checks(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK * 4 + tl.arange(0, BLOCK)[:, None] * 4 + tl.arange(0, 4)[None, :]
    x = tl.load(x_ptr + offs)
    tl.device_assert(x < 50, "x too big")


def test_errors_show_the_tile_indices_involved():
    """Which lanes of the program's tile fail: the first one (the one the message describes), a few more, how many."""
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(DeviceAssertionError) as ei:
        _tile_checks[(2,)](x, BLOCK=8, debug=True)
    msg = str(ei.value)
    assert "(tensor indices (4, 2), (4, 3), (5, 0), (5, 1), ...: 14 of 32 lanes)" in msg, msg
    assert "in program (1, 0, 0)" in msg and 'tl.device_assert(x < 50, "x too big")' in msg
    with pytest.raises(OutOfBoundsError) as ei:
        _tile_checks[(3,)](np.arange(60, dtype=np.float32) - 100, BLOCK=8, debug=True)
    msg = str(ei.value)
    assert "element offset 60" in msg and "in program (1, 0, 0)" in msg, msg
    assert "(tensor indices (7, 0), (7, 1), (7, 2), (7, 3): 4 of 32 lanes)" in msg, msg


_BAD_SHAPES = '''
import numpy as np
import tritium as triton
import tritium.language as tl


@triton.jit
def k(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), x + tl.zeros((BLOCK, 2), tl.float32))


k[(1,)](np.zeros(16, np.float32), BLOCK=16)
'''


@pytest.mark.parametrize("full", [False, True])
def test_a_compile_error_at_launch_is_short(tmp_path, full):
    """The traceback of a compile error at a launch ends at the user's line and the message naming it, without
    tritium's own 60-odd frames; the exception it was raised from is its cause, as in Triton, shown as its one-line
    message (TRITIUM_FULL_TRACEBACK=1 keeps its frames)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "bad_shapes.py"
    script.write_text(_BAD_SHAPES)
    # the default (fast) mode: step-through mode runs the kernel's Python body and keeps its whole traceback
    env = {**os.environ, "TRITIUM_TARGET": "interpreter", "TRITIUM_INTERPRET_MODE": "fast",
           "TRITIUM_FULL_TRACEBACK": "1" if full else "0"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1
    err = r.stderr
    assert f"CompilationError: in kernel 'k' at {script}:10:" in err and "incompatible dimensions" in err
    cause, _, rest = err.partition("The above exception was the direct cause")
    assert rest and "incompatible dimensions" in cause
    assert ("Traceback" in cause) == full  # the cause's own frames only with TRITIUM_FULL_TRACEBACK=1
    if not full:
        assert len(cause.strip().splitlines()) == 1 and len(err.splitlines()) < 25, err
