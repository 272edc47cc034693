"""``tritium.reinterpret(tensor, dtype)`` (Triton's ``triton.reinterpret``): the kernel sees the tensor's memory as
the ``tl`` dtype given -- unsigned integers, fp8 -- through the specialisation (``*u8``, ``*fp8e4nv``), the binder,
the generated launcher's fast path and the launchers (interpreter fast and step-through modes; the cuda compile).
Results are checked against NumPy / torch views of the same bytes."""
import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.compiler import registry
from tritium.runtime.binder import Binder
from tritium.runtime.reinterpret import TensorWrapper
from tritium.runtime.specialization import DATA_PTR_TYPES

torch = pytest.importorskip("torch")


@tritium.jit
def int_ops(X, SHR, DIV, WIDE, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    x = tl.load(X + o, mask=m)
    tl.store(SHR + o, x >> 2, mask=m)
    tl.store(DIV + o, x // 3, mask=m)
    tl.store(WIDE + o, x.to(tl.int32), mask=m)


@tritium.jit
def to_f32(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m).to(tl.float32), mask=m)


def test_wrapper_is_the_base_seen_as_dtype():
    x = torch.arange(-6, 6, dtype=torch.int8).reshape(3, 4)[:, 1:]
    w = tritium.reinterpret(x, tl.uint8)
    assert isinstance(w, TensorWrapper) and tritium.TensorWrapper is TensorWrapper
    assert w.dtype == tl.uint8 and w.base is x and w.data_ptr() == x.data_ptr() and w.device == x.device
    assert w.shape == x.shape and w.stride() == x.stride() and w.stride(0) == 4 and w.element_size() == 1
    assert w.numel() == 9 and w.dim() == 2 and w.get_device() == -1 and not w.is_cuda
    assert "TensorWrapper[uint8]" in str(w)
    c = w.clone()
    assert c.dtype == tl.uint8 and c.base is not x and torch.equal(c.base, x)
    assert w.cpu().base is x and w.to("cpu").dtype == tl.uint8
    e = w.new_empty((5,))
    assert e.dtype == tl.uint8 and e.base.shape == (5,) and e.base.dtype == torch.int8
    # another dtype rewraps the base; the base's own dtype gives the base back
    w2 = tritium.reinterpret(w, tl.float8e4nv)
    assert w2.base is x and w2.dtype == tl.float8e4nv
    assert tritium.reinterpret(w, torch.int8) is x


def test_numpy_arrays_are_wrapped_too():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    w = tritium.reinterpret(a, tl.uint16)
    assert w.data_ptr() == a.ctypes.data and w.stride() == (4, 1) and w.element_size() == 2 and w.numel() == 12
    c = w.clone()
    c.zero_()
    assert (c.base == 0).all() and (a != 0).any()
    c.copy_(w)
    assert (c.base == a).all()


def test_bad_arguments_are_type_errors():
    with pytest.raises(TypeError, match="Cannot reinterpret"):
        tritium.reinterpret([1, 2, 3], tl.uint8)
    with pytest.raises(TypeError, match="unsupported element type"):
        tritium.reinterpret(torch.zeros(3), "not a dtype")
    with pytest.raises(TypeError, match="not an element type"):
        tritium.reinterpret(torch.zeros(3), tl.pointer_type(tl.float32))


def test_binder_specialises_on_the_wrapped_dtype():
    x = torch.zeros(64, dtype=torch.int8)
    b = Binder(to_f32)
    sigs = {}
    for dt in (tl.uint8, tl.float8e4nv, tl.float8e5, tl.float8e4b8, tl.float8e5b16, tl.int8):
        bound = b.bind((tritium.reinterpret(x, dt), torch.zeros(64), 64), {"BLOCK": 64})
        sigs[str(dt)] = bound.signature["X"]
        assert bound.attrs.get("X") == {"tt.divisibility": 16}
    assert sigs == {"uint8": "*u8", "fp8e4nv": "*fp8e4nv", "fp8e5": "*fp8e5", "fp8e4b8": "*fp8e4b8",
                    "fp8e5b16": "*fp8e5b16", "int8": "*i8"}
    keys = {b.bind((tritium.reinterpret(x, dt), torch.zeros(64), 64), {"BLOCK": 64}).key
            for dt in (tl.uint8, tl.int8, tl.float8e5)}
    assert len(keys) == 3


@pytest.mark.parametrize("base", ["torch", "numpy"])
def test_int8_buffer_as_uint8(base, mode):
    """The same int8 bytes launched as themselves and reinterpreted as uint8: signed and unsigned results, every
    launch (the fast path's key tells the two apart)."""
    rng = np.random.default_rng(0)
    raw = rng.integers(-128, 128, 1000).astype(np.int8)
    x = torch.from_numpy(raw.copy()) if base == "torch" else raw.copy()
    for _ in range(2):  # the second round relaunches through the generated launcher's fast path
        for as_uint in (True, False):
            arg = tritium.reinterpret(x, tl.uint8) if as_uint else x
            ref = raw.view(np.uint8) if as_uint else raw
            shr, div, wide = np.zeros(1000, ref.dtype), np.zeros(1000, ref.dtype), np.zeros(1000, np.int32)
            int_ops[(4,)](arg, shr, div, wide, 1000, BLOCK=256)
            np.testing.assert_array_equal(shr, ref >> 2)
            np.testing.assert_array_equal(div, np.fix(ref / 3).astype(ref.dtype))  # C division: toward 0
            np.testing.assert_array_equal(wide, ref.astype(np.int32))
    assert TensorWrapper in DATA_PTR_TYPES  # wrappers' descriptors are computed inline from the first launch on


def test_stores_reach_the_base(mode):
    src = torch.randn(300)
    out = torch.zeros(300, dtype=torch.uint8)
    to_fp8 = tritium.reinterpret(out, tl.float8e5)
    convert_store[(3,)](src, to_fp8, 300, BLOCK=128)
    assert torch.equal(out, src.to(torch.float8_e5m2).view(torch.uint8))


@tritium.jit
def convert_store(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m), mask=m)


@tritium.autotune(configs=[tritium.Config({"BLOCK": 64}), tritium.Config({"BLOCK": 128})], key=["N"],
                  restore_value=["Y"])
@tritium.jit
def tuned_add_one(X, Y, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    tl.store(Y + o, tl.load(Y + o, mask=m) + tl.load(X + o, mask=m), mask=m)


def test_autotuner_restores_a_wrapped_buffer():
    """The autotuner's restore_value copies and restores the wrapper's base (clone / copy_)."""
    x = torch.randint(0, 200, (500,), dtype=torch.uint8)
    y0 = torch.randint(0, 50, (500,), dtype=torch.uint8)
    y = y0.clone().view(torch.int8)
    tuned_add_one[lambda m: (tritium.cdiv(500, m["BLOCK"]),)](tritium.reinterpret(x.view(torch.int8), tl.uint8),
                                                             tritium.reinterpret(y, tl.uint8), 500)
    assert torch.equal(y.view(torch.uint8), y0 + x)


def test_compiles_for_cuda_with_the_wrapped_types(monkeypatch, tmp_path):
    """Compile-only cuda:90 (no GPU): the launch compiles the kernel with the reinterpreted parameter types, as a
    launch on the GPU would: unsigned shifts and divisions of the uint8 view, fp8 conversions in the PTX."""
    pytest.importorskip("tritium_nvidia")
    pytest.importorskip("llvmlite")
    monkeypatch.setenv("TRITIUM_COMPILE_ONLY", "1")
    monkeypatch.setenv("TRITIUM_TARGET", "cuda:90")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    registry.set_active(None)
    try:
        raw = np.zeros(256, np.int8)
        k = int_ops[(1,)](tritium.reinterpret(raw, tl.uint8), np.zeros(256, np.uint8), np.zeros(256, np.uint8),
                          np.zeros(256, np.int32), 256, BLOCK=256)
        ttir = k.asm["ttir"]
        assert "!tt.ptr<i8>" in ttir and "arith.shrui" in ttir and "arith.divui" in ttir and "arith.extui" in ttir
        assert "arith.shrsi" not in ttir
        k = to_f32[(1,)](tritium.reinterpret(raw, tl.float8e4nv), np.zeros(256, np.float32), 256, BLOCK=256)
        assert "!tt.ptr<f8E4M3FN>" in k.asm["ttir"] and "cvt.rn.f16x2.e4m3x2" in k.asm["ptx"]
    finally:
        registry.set_active(None)
