"""Triton conformance found by running Triton 3.6's own language tests through an alias (issue 14): ``print`` in a
kernel is ``tl.device_print``, ``tl.split`` of a tensor of 2 gives two scalars, ``triton.TritonError`` is the base of
tritium's errors and ``CompilationError.error_message`` the message without its location."""
import numpy as np
import pytest

import tritium
import tritium.language as tl


@tritium.jit
def print_loop(X, n):
    for i in range(n):
        print("step", i, tl.load(X + i))


@tritium.jit
def print_values(X):
    print(tl.load(X + tl.arange(0, 4)))


def test_print_is_device_print(capfd, mode):
    x = (np.arange(3, dtype=np.int32) + 1) * 7
    print_loop[(1,)](x, 3)
    out = capfd.readouterr().out
    # the compiled print is device_print's one line per operand; step-through mode runs Python's print
    assert out.count("step(operand 0)" if mode == "fast" else "step") == 3, out
    for v in ("7", "14", "21"):
        assert v in out
    print_values[(1,)](np.array([5, 6, 8, 9], np.int32))
    out = capfd.readouterr().out
    for v in ("5", "6", "8", "9"):
        assert v in out


@tritium.jit
def split_pair(X, Y):
    a, b = tl.split(tl.load(X + tl.arange(0, 2)))
    tl.store(Y, a * 10.0 + b)
    tl.store(Y + 1, (a - b).to(tl.float32))


@tritium.jit
def split_rows(X, Y, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)[:, None] * 2 + tl.arange(0, 2)[None, :]
    a, b = tl.split(tl.load(X + o))
    tl.store(Y + tl.arange(0, BLOCK), a * b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_split_of_two_elements_gives_scalars(mode, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(2).astype(dtype)
    y = np.zeros(2, np.float32)
    split_pair[(1,)](x, y)
    a, b = x.astype(np.float32)
    np.testing.assert_allclose(y, [np.float32(a * 10 + b), np.float32(dtype(a - b))], rtol=2e-3)
    x2 = rng.standard_normal(32).astype(np.float32)
    y2 = np.zeros(16, np.float32)
    split_rows[(1,)](x2, y2, BLOCK=16)
    np.testing.assert_allclose(y2, x2[0::2] * x2[1::2], rtol=1e-6)


@tritium.jit
def overflow(Y):
    x = tl.full((), 32, tl.int32)
    tl.store(Y, x + 0xFFFFFFFFFFFFFF)


def test_triton_error_is_the_base_and_error_message_has_no_location():
    assert tritium.TritonError is tritium.TritiumError
    with pytest.raises(tritium.TritonError) as info:
        overflow[(1,)](np.zeros(1, np.int64))
    e = info.value
    assert isinstance(e, tritium.CompilationError)
    assert e.error_message and e.error_message in str(e)
    assert "test_conformance_misc.py" in str(e) and "test_conformance_misc.py" not in e.error_message


def test_split_compiles_for_cuda():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tritium.compiler import ASTSource, compile

    k = compile(ASTSource(split_pair, {"X": "*fp32", "Y": "*fp32"}), target="cuda:90", until="ptx", use_cache=False)
    assert ".entry split_pair" in k.asm["ptx"]


def _name_of(spec):
    ty = spec.signature["value"]
    ones = "_".join(k for k, v in spec.constants.items() if v == 1)
    return f"kernel_{ty}_{ones}"


@tritium.jit(repr=_name_of)
def named(value, is_one, X, B: tl.constexpr):
    tl.store(X + tl.arange(0, B), tl.full((B,), value, tl.float32) * is_one)


@pytest.mark.parametrize("value,ty", [(-1, "i32"), (2**31, "i64"), (2**63, "u64")])
def test_jit_repr_names_the_kernel(value, ty):
    """``@jit(repr=f)``: the kernel's symbol is ``f(specialisation)`` (Triton's ``constants`` and ``signature``)."""
    x = np.zeros(4, np.float32)
    h = named.warmup(value, 1, x, 1, grid=(1,))
    assert h.name == f"kernel_{ty}_is_one_B" and h.metadata["name"] == h.name
    named[(1,)](value, 1, x, 4)
    np.testing.assert_array_equal(x, np.full(4, np.float32(value)))


def test_jit_repr_names_the_cuda_entry():
    pytest.importorskip("mlir")
    pytest.importorskip("llvmlite")
    from tritium.compiler import ASTSource, compile

    k = compile(ASTSource(named, {"value": "i32", "X": "*fp32"}, constexprs={"is_one": 1, "B": 4}),
                target="cuda:90", until="ptx", use_cache=False)
    assert k.name == "kernel_i32_is_one" and ".entry kernel_i32_is_one" in k.asm["ptx"]
