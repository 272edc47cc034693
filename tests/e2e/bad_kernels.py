"""Deliberately wrong kernels.  Each test in test_errors.py names the line whose text must appear."""
import tritium as triton
import tritium.language as tl

GLOBAL_LIST = [1, 2, 3]


@triton.jit
def ptr_plus_ptr(X, Y):
    z = X + Y  # ERR:ptr_plus_ptr
    tl.store(z, 1.0)


@triton.jit
def no_broadcast(X):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    c = a + b  # ERR:no_broadcast
    tl.store(X + c, c)


@triton.jit
def runtime_arange(X, n):
    offs = tl.arange(0, n)  # ERR:runtime_arange
    tl.store(X + offs, 1.0)


@triton.jit
def unknown_builtin(X):
    x = tl.frobnicate(X)  # ERR:unknown_builtin
    tl.store(X, x)


@triton.jit
def undefined_name(X):
    tl.store(X, undefined_thing)  # ERR:undefined_name


@triton.jit
def oob_load(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)  # ERR:oob_load
    tl.store(Y + offs, x, mask=offs < n)


@triton.jit
def oob_store(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs + n, 1.0)  # ERR:oob_store


@triton.jit(debug=True)  # device asserts are compiled in only with debug, as in Triton
def failing_assert(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.device_assert(x < 5, "x must stay below 5")  # ERR:failing_assert


@triton.jit
def needs_constexpr(X, BLOCK: tl.constexpr):
    tl.store(X + tl.arange(0, BLOCK), 1.0)


@triton.jit
def non_pow2_arange(X):
    offs = tl.arange(0, 100)  # ERR:non_pow2_arange
    tl.store(X + offs, 1.0)


@triton.jit
def float_offset(X):
    p = X + 1.5  # ERR:float_offset
    tl.store(p, 1.0)


@triton.jit
def bitwise_on_float(X):
    x = tl.load(X)
    y = x & 3  # ERR:bitwise_on_float
    tl.store(X, y)


@triton.jit
def loop_type_change(X, n):
    acc = 0
    for i in range(n):
        acc = acc + 1.5  # ERR:loop_type_change
    tl.store(X, acc)


@triton.jit
def unsupported_break(X, n):
    for i in range(n):
        break  # ERR:unsupported_break
    tl.store(X, 1.0)


@triton.jit
def calls_python(X):
    tl.store(X, len(X))  # ERR:calls_python


@triton.jit
def _callee(a, b):
    return a + b


@triton.jit
def wrong_callee_args(X):
    tl.store(X, _callee(1.0))  # ERR:wrong_callee_args


@triton.jit
def load_from_int(X, n):
    x = tl.load(n)  # ERR:load_from_int
    tl.store(X, x)


@triton.jit
def mask_wrong_shape(X):
    offs = tl.arange(0, 16)
    m = tl.arange(0, 32) < 4
    x = tl.load(X + offs, mask=m)  # ERR:mask_wrong_shape
    tl.store(X + offs, x)


@triton.jit
def mutable_global(X):
    tl.store(X, GLOBAL_LIST[0])  # ERR:mutable_global


@triton.jit
def reduce_bad_axis(X):
    x = tl.load(X + tl.arange(0, 16))
    s = tl.sum(x, axis=2)  # ERR:reduce_bad_axis
    tl.store(X, s)


@triton.jit
def store_to_block_arg_wrong_rank(X):
    offs = tl.arange(0, 16)
    tl.store(X + offs, tl.zeros([16, 16], dtype=tl.float32))  # ERR:store_to_block_arg_wrong_rank


@triton.jit
def oob_2d_program(X, stride, BLOCK: tl.constexpr):
    row = tl.program_id(1)
    offs = row * stride + tl.arange(0, BLOCK)
    x = tl.load(X + offs)  # ERR:oob_2d_program
    tl.store(X + offs, x + 1)
