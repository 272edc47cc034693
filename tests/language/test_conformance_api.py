"""Triton 3.6's tensor API and literal semantics that kernels rely on (conformance issue 14): ``tensor.item()``,
``tensor.cast(...)``, ``tl.const`` pointer parameters, ``tl.where`` on pointers, a one-element tensor as the
condition of ``if`` / ``while`` / a ternary, tensor methods of Python literals (``a = 5; a.to(tl.float32)``) and
``tl.str_to_ty(name, c)``.  Results against NumPy on random inputs in both interpreter modes (fast and
step-through), the same kernels compiled for cuda:90, and the errors as CompilationErrors at the kernel's line."""
import inspect

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import ASTSource, compile, registry
from tritium.errors import CompilationError


def rand(rng, shape, dt):
    if np.dtype(dt).kind == "f":
        return (rng.standard_normal(shape) * 10).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)


def line_of(fn, marker="# ERR"):
    """The file line of ``fn``'s source line holding ``marker``."""
    src, start = inspect.getsourcelines(fn.fn)
    for i, text in enumerate(src):
        if marker in text:
            return start + i
    raise AssertionError(marker)


def expect_error(fn, launch, needle):
    with pytest.raises(CompilationError) as ei:
        launch()
    e = ei.value
    assert needle in str(e), str(e)
    assert e.lineno == line_of(fn), (e.lineno, str(e))
    assert e.filename == fn.file


# ------------------------------------------------------------------------------------------------------------
# tensor.item()
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def item_kernel(X, P, Y, TWO_D: tl.constexpr):
    if TWO_D:
        x = tl.load(X + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :])
        p = P + tl.arange(0, 1)[None, :]
    else:
        x = tl.load(X + tl.arange(0, 1))
        p = P + tl.arange(0, 1)
    s = x.item()
    q = p.item()  # a pointer tensor of one element -> a scalar pointer
    tl.static_assert(len(s.shape) == 0 and len(q.shape) == 0)
    tl.static_assert(s.dtype == x.dtype)
    tl.store(Y + tl.program_id(0), s * 3 + tl.load(q + tl.program_id(0)))


@tritium.jit
def item_scalar_kernel(X, Y):
    x = tl.load(X)
    tl.store(Y, x.item() + 1)  # a scalar is its own item


@tritium.jit
def item_too_many(X, Y):
    x = tl.load(X + tl.arange(0, 2))
    tl.store(Y, x.item())  # ERR


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("two_d", [False, True])
def test_item(mode, dt, two_d):
    rng = np.random.default_rng(7)
    x, p = rand(rng, 1, dt), rand(rng, 4, dt)
    y = np.zeros(4, dt)
    item_kernel[(4,)](x, p, y, two_d)
    np.testing.assert_array_equal(y, (x[0] * dt(3) + p).astype(dt))
    y1 = np.zeros(1, dt)
    item_scalar_kernel[(1,)](x, y1)
    np.testing.assert_array_equal(y1, x + dt(1))


def test_item_of_more_than_one_element(mode):
    expect_error(item_too_many, lambda: item_too_many[(1,)](np.ones(2, np.float32), np.zeros(1, np.float32)),
                 "can only unsplat single-element tensors")


# ------------------------------------------------------------------------------------------------------------
# tensor.cast(dtype, fp_downcast_rounding, bitcast)
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def cast_kernel(X, I, H, HZ, B, Z, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(I + o, x.cast(tl.int32))
    tl.store(H + o, x.cast(tl.float16))
    tl.store(HZ + o, x.cast(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(B + o, x.cast(tl.int32, bitcast=True))
    # the method is tl.cast: the same values
    tl.store(Z + o, (x.cast(tl.float16, fp_downcast_rounding="rtz") == tl.cast(x, tl.float16, "rtz")).to(tl.int8))


@pytest.mark.parametrize("n", [16, 128])
def test_cast_method(mode, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 1000).astype(np.float32)
    i, h, hz, b, z = (np.zeros(n, t) for t in (np.int32, np.float16, np.float16, np.int32, np.int8))
    cast_kernel[(1,)](x, i, h, hz, b, z, n)
    np.testing.assert_array_equal(i, x.astype(np.int32))  # toward zero, as C
    np.testing.assert_array_equal(h, x.astype(np.float16))  # round to nearest even
    np.testing.assert_array_equal(b, x.view(np.int32))
    assert z.all()  # x.cast(..., fp_downcast_rounding=) is tl.cast(x, ..., fp_downcast_rounding)
    # rtz: the nearest-even result, or its neighbour toward zero where that one is larger in magnitude than x
    h32 = h.astype(np.float32)
    rtz = np.where(np.abs(h32) > np.abs(x), np.nextafter(h, np.float16(0)), h)
    np.testing.assert_array_equal(hz, rtz)
    assert (hz != h).any()


# ------------------------------------------------------------------------------------------------------------
# tl.const pointer parameters
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def const_copy(X: tl.const, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.static_assert(X.dtype.is_const() and (X + o).dtype.is_const() and not Y.dtype.is_const())
    x = tl.load(X + o)
    tl.store(Y + o, x * 2)


@tritium.jit
def const_copy_str(X: "tl.const", Y, N: tl.constexpr):  # noqa: F821 (the annotation's text, as with __future__)
    o = tl.arange(0, N)
    tl.static_assert(X.dtype.is_const())
    tl.store(Y + o, tl.load(X + o) + 1)


@tritium.jit
def const_store_block(X: tl.const, N: tl.constexpr):
    tl.store(X + tl.arange(0, N), 1.0)  # ERR


@tritium.jit
def const_store_scalar(X: tl.const):
    tl.store(X, 1.0)  # ERR


@pytest.mark.parametrize("dt", [np.float32, np.int32])
@pytest.mark.parametrize("n", [8, 64])
def test_const_pointer_loads(mode, dt, n):
    rng = np.random.default_rng(n)
    x = rand(rng, n, dt)
    y = np.zeros(n, dt)
    const_copy[(1,)](x, y, n)
    np.testing.assert_array_equal(y, x * dt(2))
    const_copy_str[(1,)](x, y, n)
    np.testing.assert_array_equal(y, x + dt(1))


def test_const_is_an_annotation_not_a_constexpr():
    assert tl.const is not tl.constexpr
    p = {p.name: p for p in const_copy.params}
    assert not p["X"].is_constexpr and p["N"].is_constexpr


def test_store_through_const_pointer(mode):
    x = np.arange(8, dtype=np.float32)
    expect_error(const_store_block, lambda: const_store_block[(1,)](x, 8), "Cannot store to a constant pointer")
    expect_error(const_store_scalar, lambda: const_store_scalar[(1,)](x), "Cannot store to a constant pointer")
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))


# ------------------------------------------------------------------------------------------------------------
# tl.where on pointers
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def where_ptr_kernel(A, B: tl.const, C, Z, c, N: tl.constexpr):
    o = tl.arange(0, N)
    p = tl.where(c > 0, A, B)  # scalar pointers, a run-time scalar condition
    tl.static_assert(p.dtype.is_const())  # one of them points to const data
    q = tl.where(o % 3 == 0, A + o, C + o)  # tensors of pointers
    r = tl.where(o < N // 2, A, C + o)  # a scalar pointer and a tensor of pointers
    tl.store(Z + o, tl.load(p + o) + tl.load(q) * 2 + tl.load(r) * 3)


@tritium.jit
def where_ptr_types(A, B):
    p = tl.where(tl.program_id(0) > 0, A, B)  # ERR
    tl.store(A, tl.load(p))


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("n", [4, 32])
def test_where_pointers(mode, dt, n):
    rng = np.random.default_rng(n)
    a, b, c = (rand(rng, n, dt) for _ in range(3))
    o = np.arange(n)
    for flag in (1, 0):
        z = np.zeros(n, dt)
        where_ptr_kernel[(1,)](a, b, c, z, flag, n)
        q = np.where(o % 3 == 0, a, c)
        r = np.where(o < n // 2, a[0], c)
        ref = ((a if flag else b) + q * dt(2) + r * dt(3)).astype(dt)
        np.testing.assert_allclose(z.astype(np.float64), ref.astype(np.float64), rtol=2e-3 if dt == np.float16
                                   else 0)


def test_where_pointers_of_different_types(mode):
    expect_error(where_ptr_types, lambda: where_ptr_types[(1,)](np.zeros(1, np.float32), np.zeros(1, np.float16)),
                 "invalid operands of type pointer<fp32> and pointer<fp16>")


# ------------------------------------------------------------------------------------------------------------
# a one-element tensor as a condition
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def cond_kernel(X, Y, TWO_D: tl.constexpr):
    pid = tl.program_id(0)
    if TWO_D:
        x = tl.load(X + pid + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :])
    else:
        x = tl.load(X + pid + tl.arange(0, 1))
    if x > 0:
        a = 1.0
    else:
        a = -1.0
    b = 10.0 if x > 2 else 20.0
    n = 0
    while x > 0:
        x = x - 1
        n += 1
    if x:  # a one-element tensor tested for non-zero
        a += 100.0
    tl.store(Y + pid, a + b + n)


@tritium.jit
def cond_too_many(X, Y):
    x = tl.load(X + tl.arange(0, 2))
    if x > 0:  # ERR
        tl.store(Y, 1.0)


@tritium.jit
def ternary_too_many(X, Y):
    x = tl.load(X + tl.arange(0, 4)[:, None] + tl.arange(0, 4)[None, :])
    tl.store(Y, 1.0 if x > 0 else 2.0)  # ERR


@tritium.jit
def while_too_many(X, Y):
    x = tl.load(X + tl.arange(0, 2))
    while x > 0:  # ERR
        x = x - 1
    tl.store(Y, 1.0)


@pytest.mark.parametrize("two_d", [False, True])
@pytest.mark.parametrize("dt", [np.int32, np.float32])
def test_one_element_condition(mode, two_d, dt):
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 6, 16).astype(dt)
    x[:2] = (0, 3)
    y = np.zeros(16, np.float32)
    cond_kernel[(16,)](x, y, two_d)
    n = np.maximum(x, 0)
    left = x - n  # the value after the loop
    ref = np.where(x > 0, 1.0, -1.0) + np.where(x > 2, 10.0, 20.0) + n + np.where(left != 0, 100.0, 0.0)
    np.testing.assert_array_equal(y, ref.astype(np.float32))


@pytest.mark.parametrize("fn", [cond_too_many, ternary_too_many, while_too_many], ids=lambda f: f.__name__)
def test_condition_of_more_than_one_element(mode, fn):
    expect_error(fn, lambda: fn[(1,)](np.ones(16, np.float32), np.zeros(1, np.float32)),
                 "Boolean value of Tensor with more than one value is ambiguous")


# ------------------------------------------------------------------------------------------------------------
# Python literals in a kernel have the tensor methods of the scalar tensor Triton makes of them
# ------------------------------------------------------------------------------------------------------------

@tritium.jit
def literal_kernel(X, Y, N: tl.constexpr):
    a = 5
    f = 2.5
    big = 2 ** 40
    t = True
    tl.static_assert(a.dtype == tl.int32 and f.dtype == tl.float32 and big.dtype == tl.int64)
    tl.static_assert(t.dtype == tl.int1 and len(a.shape) == 0)
    b = a.to(tl.float32)
    c = f.to(tl.int32)  # 2
    d = (big + 1).cast(tl.float64)
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(Y + o, x * b + c + (d - big).to(x.dtype) + a.to(x.dtype, bitcast=False))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [4, 64])
def test_literal_methods(mode, dt, n):
    rng = np.random.default_rng(n)
    x = rand(rng, n, dt)
    y = np.zeros(n, dt)
    literal_kernel[(1,)](x, y, n)
    np.testing.assert_allclose(y, x * 5 + 2 + 1 + 5, rtol=1e-6)


@tritium.jit
def constexpr_value_kernel(X, Y, K: tl.constexpr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(Y + o, tl.load(X + o) * K.value)  # a constexpr's .value, as Triton's compiler keeps for compatibility


def test_constexpr_value_and_methods(mode):
    x = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    y = np.zeros(16, np.float32)
    constexpr_value_kernel[(1,)](x, y, 3, 16)
    np.testing.assert_allclose(y, x * 3, rtol=1e-6)
    c = tl.constexpr(3)  # Triton's constexpr methods, as Python code calls them
    assert c.logical_and(0).value == 0 and c.logical_or(0).value == 3 and c.__not__().value is False


@tritium.jit
def rewritten_kernel(X, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    a = 3
    ok = not (N < 2) and N > 0
    tl.store(Y + o, x * a.to(tl.float32) + ok)


def test_step_through_leaves_the_kernel_tree_alone():
    """Step-through mode rewrites a copy of the kernel's AST (``not`` / ``and`` / ``a.to``): compiling the kernel
    after it has run step by step sees the kernel's own source."""
    x = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    registry.set_active("interpreter:eager")
    try:
        y = np.zeros(8, np.float32)
        rewritten_kernel[(1,)](x, y, 8)
        np.testing.assert_allclose(y, x * 3 + 1, rtol=1e-6)
    finally:
        registry.set_active(None)
    y = np.zeros(8, np.float32)
    rewritten_kernel[(1,)](x, y, 8)
    np.testing.assert_allclose(y, x * 3 + 1, rtol=1e-6)
    assert "_tr_" not in compile(ASTSource(rewritten_kernel, {"X": "*fp32", "Y": "*fp32"}, {"N": 8}),
                                 target="interpreter", use_cache=False).asm["ttir"]


# ------------------------------------------------------------------------------------------------------------
# tl.str_to_ty(name, c)
# ------------------------------------------------------------------------------------------------------------

def test_str_to_ty():
    assert tl.str_to_ty("fp32", None) == tl.float32 and tl.str_to_ty("i1", None) == tl.int1
    assert tl.str_to_ty("u64", None) == tl.uint64 and tl.str_to_ty("bf16", None) == tl.bfloat16
    assert tl.str_to_ty("fp8e4nv", None) == tl.float8e4nv and tl.str_to_ty("B", None) == tl.int1
    p = tl.str_to_ty("*fp16", None)
    assert isinstance(p, tl.pointer_type) and p.element_ty == tl.float16 and not p.is_const()
    k = tl.str_to_ty("*kfp16", None)
    assert k.is_const() and k.element_ty == tl.float16 and k.name == "const_pointer<fp16>"
    assert tl.str_to_ty("*ki32", None).element_ty == tl.int32
    c = tl.str_to_ty("constexpr", 16)
    assert isinstance(c, tl.constexpr_type) and c.value == 16 and c == tl.constexpr_type(16)
    assert repr(c) == "constexpr_type[16]"
    d = tl.str_to_ty("tensordesc<fp16[64, 32]>", None)
    assert isinstance(d, tl.tensor_descriptor_type) and d.block_type.shape == (64, 32)
    assert tl.str_to_ty("i32") == tl.int32  # the one-argument form tritium's callers use
    with pytest.raises(tl.SemanticError, match="unknown type string"):
        tl.str_to_ty("fp33", None)


@tritium.jit
def _plain_copy(X, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.static_assert(X.dtype.is_const())
    tl.store(Y + o, tl.load(X + o))


@tritium.jit
def _plain_store(X):
    tl.store(X, 1.0)


def test_const_signature_string():
    """``*k`` in an explicit signature makes a const pointer too (the same ``!tt.ptr`` in TTIR): loads compile, a
    store is refused."""
    k = compile(ASTSource(_plain_copy, {"X": "*kfp32", "Y": "*fp32"}, {"N": 8}), target="interpreter",
                use_cache=False)
    assert "(%arg0: !tt.ptr<f32>" in k.asm["ttir"].replace("\n", " ")
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer"):
        compile(ASTSource(_plain_store, {"X": "*kfp32"}, {}), target="interpreter", use_cache=False)


# ------------------------------------------------------------------------------------------------------------
# the same kernels compiled for cuda:90 (no GPU needed)
# ------------------------------------------------------------------------------------------------------------

def _build(fn, sig, **ce):
    pytest.importorskip("llvmlite")
    from tritium_nvidia.ptx import ptxas_path

    until = None if ptxas_path() is not None else "ptx"
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", until=until, use_cache=False)
    assert ".target sm_90a" in k.asm["ptx"] and f".entry {k.metadata['name']}" in k.asm["ptx"]
    if until is None:
        assert k.asm["cubin"][:4] == b"\x7fELF"
    return k


@pytest.mark.parametrize("two_d", [False, True])
def test_cuda_compile_item_and_conditions(two_d):
    k = _build(item_kernel, {"X": "*fp32", "P": "*fp32", "Y": "*fp32"}, TWO_D=two_d)
    assert '"tt.reduce"' in k.asm["ttir"]  # the unsplat
    k = _build(cond_kernel, {"X": "*i32", "Y": "*fp32"}, TWO_D=two_d)
    assert "scf.while" in k.asm["ttir"] and "scf.if" in k.asm["ttir"]


def test_cuda_compile_const_where_cast_literals():
    k = _build(where_ptr_kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp16", "Z": "*fp16", "c": "i32"}, N=128)
    assert "arith.select" in k.asm["ttir"] and "!tt.ptr<f16>" in k.asm["ttir"]
    k = _build(const_copy, {"X": "*fp32", "Y": "*fp32"}, N=256)
    assert "ld.global" in k.asm["ptx"] and "st.global" in k.asm["ptx"]
    _build(cast_kernel, {"X": "*fp32", "I": "*i32", "H": "*fp16", "HZ": "*fp16", "B": "*i32", "Z": "*i8"}, N=128)
    _build(literal_kernel, {"X": "*fp32", "Y": "*fp32"}, N=128)
