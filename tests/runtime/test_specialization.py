"""Triton's specialisation rule (tritium.runtime.specialization): one source for the general binder and the
generated launchers."""
from __future__ import annotations

import numpy as np
import pytest

import tritium
from tritium.runtime.specialization import (Specialization, decode, describe_fn, describe_namespace,
                                            describe_source, ndarray_reader)


def aligned(n=32, dtype=np.float32, offset=0):
    a = np.zeros(n + 16, dtype=dtype)
    start = (-a.ctypes.data % 16) // a.itemsize
    return a[start + offset:start + offset + n]


class LookAlike:
    """A tensor look-alike: dtype and data_ptr(), as torch tensors have."""

    def __init__(self, addr):
        self.dtype, self._addr = np.dtype(np.float16), addr

    def data_ptr(self):
        return self._addr


VALUES = [  # (value, specialise, align) -> expected Specialization
    (7, True, True, Specialization("i32")),
    (1, True, True, Specialization(None, False, 1)),
    (32, True, True, Specialization("i32", True)),
    (32, False, False, Specialization("i32")),
    (1, False, False, Specialization("i32")),
    (2 ** 40, True, True, Specialization("i64", True)),
    (2 ** 40 + 1, True, True, Specialization("i64")),
    (2 ** 63, True, True, Specialization("u64", True)),
    (np.int64(48), True, True, Specialization("i32", True)),
    (True, True, True, Specialization("i1")),
    (np.bool_(True), True, True, Specialization("i1")),
    (0.5, True, True, Specialization("fp32")),
    (np.float64(0.5), True, True, Specialization("fp32")),
    (np.float16(0.5), True, True, Specialization("fp16")),
    (None, True, True, Specialization(None, False, None)),
    (aligned(), True, True, Specialization("*fp32", True)),
    (aligned(offset=1), True, True, Specialization("*fp32")),
    (aligned(), True, False, Specialization("*fp32")),
    (aligned(dtype=np.int8), True, True, Specialization("*i8", True)),
    (LookAlike(0x1000), True, True, Specialization("*fp16", True)),
    (LookAlike(0x1002), True, True, Specialization("*fp16")),
]


@pytest.mark.parametrize("value,specialize,align,expected", VALUES)
def test_rule(value, specialize, align, expected):
    assert decode(describe_fn(specialize, align)(value)) == expected


def test_unsupported_and_too_wide():
    assert describe_fn(True, True)("text") is None
    assert describe_fn(True, True)(object()) is None
    with pytest.raises(OverflowError):
        describe_fn(True, True)(2 ** 64)


def test_common_kinds_are_inline_and_their_descriptors_cheap():
    d = describe_fn(True, True)
    assert d(aligned()) == (np.dtype(np.float32), True)  # the dtype object itself: no type string per launch
    assert (d(1), d(32), d(7)) == (1, 2, 3)
    assert describe_fn(False, False)(32) == 4


@tritium.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["y_ptr"])
def kern(x_ptr, y_ptr, n, m, BLOCK: tl.constexpr):  # noqa: F821
    pass


def test_launcher_and_binder_share_the_rule():
    """The generated launcher inlines, per parameter, exactly the statements the binder's describe functions
    are generated from."""
    from tritium.runtime.launch import make_launcher

    src = make_launcher(kern).source
    nd = bool(ndarray_reader())
    for i, (name, spec, align) in enumerate([("x_ptr", True, True), ("y_ptr", True, False), ("n", False, False),
                                             ("m", True, True)]):
        stmts = describe_source(name, f"_tr_k{i}", spec, align, nd, f"_tr_p{i}", f"_tr_q{i}",
                                "_tr_ti" in describe_namespace())
        assert "".join("    " + ln + "\n" for ln in stmts.splitlines()) in src, name
    binder = kern.binder
    assert binder.describe[:4] == [describe_fn(True, True), describe_fn(True, False), describe_fn(False, False),
                                   describe_fn(True, True)]
    assert binder.describe[4] is None  # constexpr


def test_fast_keys_are_the_binders_descriptors(fake):
    x, y = aligned(), aligned(offset=1)
    kern[(1,)](x, y, 32, 1, BLOCK=4)
    kern[(1,)](x, y, 32, 1, BLOCK=4)
    (key,) = kern.cache.fast
    descs = key[3:11:2]  # (backend, arch, device, descriptor, tensor device, ..., constexprs, options)
    assert key[4:11:2] == (None,) * 4  # numpy arrays and ints: no tensor device
    assert descs == tuple(f(v) for f, v in zip(kern.binder.describe, (x, y, 32, 1)))
    assert [decode(d) for d in descs] == [Specialization("*fp32", True), Specialization("*fp32"),
                                          Specialization("i32"), Specialization(None, False, 1)]


def test_the_c_tensor_reads_follow_the_python_rule():
    """tritium._speedups.tensor_info (built with the package) gives a torch tensor's address, device and
    descriptor exactly as the Python statements do, aligned or not, with and without alignment specialisation."""
    torch = pytest.importorskip("torch")
    speedups = pytest.importorskip("tritium._speedups", reason="the C helper was not built here")
    x = torch.arange(64, dtype=torch.float16)
    for t in (x, x[1:], x[8:]):
        for align in (True, False):
            ptr, dev, desc = speedups.tensor_info(t, align)
            assert ptr == t.data_ptr() and dev == t.get_device() == -1
            assert desc == describe_fn(True, align)(t) == (t.dtype, align and t.data_ptr() % 16 == 0)
    with pytest.raises(AttributeError):
        speedups.tensor_info(3, True)
    with pytest.raises(TypeError):
        speedups.tensor_info(x)
    assert "_tr_ti(x_ptr, True)" in __import__("tritium.runtime.launch", fromlist=["x"]).make_launcher(kern).source
