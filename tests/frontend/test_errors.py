"""Wrong kernels: each raises CompilationError naming the offending line (marked ``# ERR``) and showing it."""
import pytest

import tritium
import tritium.language as tl
from tritium.dialects import make_context
from tritium.errors import CompilationError
from tritium.frontend import make_ttir

pytest.importorskip("mlir.ir")


def err_line(fn):
    for i, line in enumerate(fn.src.splitlines()):
        if "# ERR" in line:
            return fn.starting_line_number + i, line.split("# ERR")[0].strip()
    raise AssertionError("no # ERR marker")


def compile_error(fn, signature, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        make_ttir(fn, signature, constexprs or {}, {}, make_context())
    return info.value


@tritium.jit
def k_undefined_name(X):
    tl.store(X, undefined_thing)  # ERR


@tritium.jit
def k_unknown_builtin(X):
    x = tl.foo(X)  # ERR


@tritium.jit
def k_builtin_arity(X):
    offs = tl.arange(0, 16)
    x = tl.load()  # ERR


@tritium.jit
def _helper(a, b):
    return a + b


@tritium.jit
def k_jit_arity(X):
    y = _helper(X)  # ERR


@tritium.jit
def k_ptr_plus_ptr(X, Y):
    z = X + Y  # ERR


@tritium.jit
def k_bad_broadcast(X):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    c = a + b  # ERR


@tritium.jit
def k_arange_not_constexpr(X, n):
    offs = tl.arange(0, n)  # ERR


@tritium.jit
def k_arange_not_pow2(X):
    offs = tl.arange(0, 10)  # ERR


@tritium.jit
def k_load_non_pointer(n):
    x = tl.load(n)  # ERR


@tritium.jit
def k_mask_wrong_shape(X):
    offs = tl.arange(0, 16)
    m = tl.arange(0, 32) < 4
    x = tl.load(X + offs, mask=m)  # ERR


@tritium.jit
def k_loop_type_change(X, n):
    acc = 0
    for i in range(n):
        acc += tl.load(X + i)  # ERR
    tl.store(X, acc)


@tritium.jit
def k_break(X, n):
    for i in range(n):
        break  # ERR


@tritium.jit
def k_float_offset(X):
    y = X + 1.5  # ERR


@tritium.jit
def k_float_shift(X):
    x = tl.load(X)
    y = x << 2  # ERR


@tritium.jit
def k_bitwise_float(X):
    x = tl.load(X)
    y = x & x  # ERR


def plain_python(x):
    return x


@tritium.jit
def k_call_python(X):
    y = plain_python(X)  # ERR


MUTABLE_GLOBAL = [1, 2, 3]


@tritium.jit
def k_mutable_global(X):
    n = MUTABLE_GLOBAL  # ERR


@tritium.jit
def k_try(X):
    try:  # ERR
        pass
    except Exception:
        pass


@tritium.jit
def k_with(X):
    with X:  # ERR
        pass


@tritium.jit
def k_lambda(X):
    f = lambda a: a  # ERR # noqa: E731


@tritium.jit
def k_import(X):
    import os  # ERR # noqa: F401


@tritium.jit
def k_print(X):
    print(X, end="")  # ERR


@tritium.jit
def k_continue(X, n):
    for i in range(n):
        continue  # ERR


@tritium.jit
def k_if_type_mismatch(X, c):
    x = 0
    if c > 0:  # ERR
        x = tl.load(X)
    else:
        x = tl.load(X).to(tl.int32)
    tl.store(X, x)


@tritium.jit
def k_return_in_loop(X, n):
    for i in range(n):
        return  # ERR


@tritium.jit
def _inner_bad(p):
    return p + p  # ERR


@tritium.jit
def k_error_in_callee(X, Y):
    _inner_bad(X)


@tritium.jit
def k_static_assert(X, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")  # ERR


@tritium.jit
def k_tensor_condition(X):
    x = tl.load(X + tl.arange(0, 16))
    if x > 0:  # ERR
        pass


@tritium.jit
def k_global_stmt(X):
    global MUTABLE_GLOBAL  # ERR


@tritium.jit
def k_subscript_assign(X):
    x = tl.load(X + tl.arange(0, 16))
    x[0] = 1  # ERR


@tritium.jit
def k_constexpr_missing(X, BLOCK: tl.constexpr):
    tl.store(X, 1.0)


@tritium.jit
def k_unsigned_negative(U):
    u = tl.load(U)
    v = u + -1  # ERR


@tritium.jit
def k_pid_axis(X):
    pid = tl.program_id(3)  # ERR


@tritium.jit
def k_expand_dims_axis(X):
    x = tl.expand_dims(tl.arange(0, 4), 2)  # ERR


@tritium.jit
def k_expand_dims_duplicate(X):
    x = tl.expand_dims(tl.arange(0, 4), (0, -3))  # ERR


@tritium.jit
def k_dot_shape(X):
    a = tl.zeros((16, 32), dtype=tl.float16)
    b = tl.zeros((16, 32), dtype=tl.float16)
    c = tl.dot(a, b)  # ERR


CASES = [
    (k_undefined_name, {"X": "*fp32"}, {}, "not defined"),
    (k_unknown_builtin, {"X": "*fp32"}, {}, "has no attribute 'foo'"),
    (k_builtin_arity, {"X": "*fp32"}, {}, "missing 1 required positional argument"),
    (k_jit_arity, {"X": "*fp32"}, {}, "wrong arguments to @jit function '_helper'"),
    (k_ptr_plus_ptr, {"X": "*fp32", "Y": "*fp32"}, {}, "invalid operands of type pointer<fp32> and pointer<fp32>: "
                                                       "cannot add pointers"),
    (k_bad_broadcast, {"X": "*fp32"}, {}, "incompatible dimensions"),
    (k_arange_not_constexpr, {"X": "*fp32", "n": "i32"}, {}, "constexpr"),
    (k_arange_not_pow2, {"X": "*fp32"}, {}, "power of 2"),
    (k_load_non_pointer, {"n": "i32"}, {}, "Unsupported ptr type"),
    (k_mask_wrong_shape, {"X": "*fp32"}, {}, "mask"),
    (k_break, {"X": "*fp32", "n": "i32"}, {}, "'break' is not supported"),
    (k_float_offset, {"X": "*fp32"}, {}, "pointer offset"),
    (k_float_shift, {"X": "*fp32"}, {}, "integer operands"),
    (k_bitwise_float, {"X": "*fp32"}, {}, "integer operands"),
    # Triton's wording where users and tests grep for it, with tritium's explanation after it
    (k_float_shift, {"X": "*fp32"}, {}, "invalid operands of type"),
    (k_pid_axis, {"X": "*fp32"}, {}, "program_id axis must be 0, 1, or 2 but got 3"),
    (k_expand_dims_axis, {"X": "*fp32"}, {}, "invalid axis 2. Expected -2 <= axis < 2"),
    (k_expand_dims_duplicate, {"X": "*fp32"}, {}, "expand_dims received duplicate axes, normalized axes = [0, 0]"),
    (k_call_python, {"X": "*fp32"}, {}, "not a @jit function"),
    (k_mutable_global, {"X": "*fp32"}, {}, "of type list"),
    (k_try, {"X": "*fp32"}, {}, "'try' is not supported"),
    (k_with, {"X": "*fp32"}, {}, "'with' is not supported"),
    (k_lambda, {"X": "*fp32"}, {}, "lambda"),
    (k_import, {"X": "*fp32"}, {}, "import"),
    (k_print, {"X": "*fp32"}, {}, "print() in a @jit function takes no keywords"),
    (k_continue, {"X": "*fp32", "n": "i32"}, {}, "'continue' is not supported"),
    (k_if_type_mismatch, {"X": "*fp32", "c": "i32"}, {}, "Mismatched type for x"),
    (k_return_in_loop, {"X": "*fp32", "n": "i32"}, {}, "inside `for` or `while` loops"),
    (k_static_assert, {"X": "*fp32"}, {"BLOCK": 48}, "BLOCK must be a multiple of 32"),
    (k_tensor_condition, {"X": "*fp32"}, {}, "must be a scalar"),
    (k_global_stmt, {"X": "*fp32"}, {}, "'global'"),
    (k_subscript_assign, {"X": "*fp32"}, {}, "subscript"),
    (k_unsigned_negative, {"U": "*u32"}, {}, "unsigned"),
    (k_dot_shape, {"X": "*fp32"}, {}, "inner dimensions"),
]


@pytest.mark.parametrize("fn,sig,cx,needle", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_wrong_kernel_names_line_and_source(fn, sig, cx, needle):
    e = compile_error(fn, sig, cx)
    line, text = err_line(fn)
    msg = str(e)
    assert f"test_errors.py:{line}" in msg, msg
    assert text in msg, msg
    assert needle in msg, msg
    assert e.lineno == line
    assert e.filename.endswith("test_errors.py")


def test_error_in_inlined_callee_points_at_callee_line():
    e = compile_error(k_error_in_callee, {"X": "*fp32", "Y": "*fp32"})
    line, text = err_line(_inner_bad)
    assert e.lineno == line and text in str(e) and "cannot add pointers" in str(e)
    assert e.kernel == "_inner_bad"


def test_loop_carried_type_change():
    e = compile_error(k_loop_type_change, {"X": "*fp32", "n": "i32"})
    line, text = err_line(k_loop_type_change)
    assert e.lineno == line
    assert "Loop-carried variable 'acc' has initial type int32 but is re-assigned to fp32" in str(e)
    assert text in str(e)


def test_constexpr_without_value():
    e = compile_error(k_constexpr_missing, {"X": "*fp32"})
    assert "constexpr parameter 'BLOCK' has no value" in str(e)
    assert e.lineno == k_constexpr_missing.starting_line_number + 1  # the def line, after the decorator


def test_internal_exceptions_keep_their_cause():
    e = compile_error(k_bad_broadcast, {"X": "*fp32"})
    assert e.__cause__ is not None


def test_unknown_signature_type():
    e = compile_error(k_undefined_name, {"X": "*fp99"})
    assert "fp99" in str(e)


@tritium.jit
def k_one_branch_name(X, c):
    if c > 0:
        only = tl.load(X)
    tl.store(X, only)  # ERR


def test_name_defined_in_one_branch():
    e = compile_error(k_one_branch_name, {"X": "*fp32", "c": "i32"})
    line, text = err_line(k_one_branch_name)
    assert e.lineno == line and text in str(e)
    assert "defined in only one branch" in str(e)
