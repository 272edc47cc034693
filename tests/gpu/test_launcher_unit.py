"""The cuda launcher's argument packing and the driver's no-device behaviour (run everywhere, no GPU needed)."""
import ctypes
import struct

import pytest

from tritium.errors import KernelRuntimeError
from tritium_nvidia import launcher as L


class FakeCudaTensor:
    def __init__(self, ptr):
        self.ptr = ptr
        self.is_cuda = True

    def data_ptr(self):
        return self.ptr


class CAIArray:
    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4", "version": 3}


class FakeCPUTensor:
    is_cuda = False

    def data_ptr(self):
        return 0x1000


def _slots(packer):
    """Each slot's bytes read through the void*[] array, as cuLaunchKernel reads them."""
    arr = (ctypes.c_void_p * packer.n).from_address(packer.params)
    return [ctypes.string_at(arr[i], L.SLOT) for i in range(packer.n)]


def make(types, n_extra=0):
    calls = []

    def fake_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        packer_bytes = [ctypes.string_at(p, L.SLOT) for p in (ctypes.c_void_p * packer.n).from_address(params)]
        calls.append(((gx, gy, gz), (bx, by, bz), shared, stream, packer_bytes))
        return (0,)

    packer = L.Packer(types, n_extra)
    fn = L.make_launch("F", packer, block=128, shared=4096, cu_launch=fake_launch, names=[f"p{i}" for i in
                       range(len(types))], kernel_name="k")
    return fn, packer, calls


def test_pack_every_scalar_type():
    types = ["*fp32", "i32", "i64", "u64", "fp32", "fp64", "i1", "i8", "i16", "fp16", "bf16", "u32"]
    fn, packer, calls = make(types)
    args = [FakeCudaTensor(0xABCDEF00), -7, 2 ** 40, 2 ** 63 + 5, 1.5, -2.25, True, -3, 300, 0.5, 1.0, 2 ** 32 - 1]
    fn(3, 2, 1, "S", args)
    (grid, block, shared, stream, b), = calls
    assert grid == (3, 2, 1) and block == (128, 1, 1) and shared == 4096 and stream == "S"
    assert struct.unpack("<Q", b[0])[0] == 0xABCDEF00
    assert struct.unpack("<i", b[1][:4])[0] == -7 and b[1][4:] == b"\0" * 4
    assert struct.unpack("<q", b[2])[0] == 2 ** 40
    assert struct.unpack("<Q", b[3])[0] == 2 ** 63 + 5
    assert struct.unpack("<f", b[4][:4])[0] == 1.5
    assert struct.unpack("<d", b[5])[0] == -2.25
    assert b[6][:4] == b"\x01\0\0\0"
    assert struct.unpack("<b", b[7][:1])[0] == -3
    assert struct.unpack("<h", b[8][:2])[0] == 300
    assert struct.unpack("<e", b[9][:2])[0] == 0.5
    assert struct.unpack("<H", b[10][:2])[0] == 0x3F80  # bf16 1.0
    assert struct.unpack("<I", b[11][:4])[0] == 2 ** 32 - 1


def test_pointer_kinds_and_extra_params():
    fn, packer, calls = make(["*fp32", "*fp16", "*i32", "*fp32"], n_extra=2)
    fn(1, 1, 1, 0, [FakeCudaTensor(16), CAIArray(32), None, 48])
    b = calls[-1][-1]
    assert [struct.unpack("<Q", x)[0] for x in b] == [16, 32, 0, 48, 0, 0]


def test_errors_name_the_argument():
    fn, _, _ = make(["*fp32", "i32"])
    with pytest.raises(KernelRuntimeError, match="argument 'p1'.*does not fit in i32"):
        fn(1, 1, 1, 0, [FakeCudaTensor(16), 2 ** 31])
    with pytest.raises(KernelRuntimeError, match="takes 2 runtime arguments, got 1"):
        fn(1, 1, 1, 0, [FakeCudaTensor(16)])
    with pytest.raises(KernelRuntimeError, match="argument 'p0'.*got str"):
        fn(1, 1, 1, 0, ["x", 1])
    np = pytest.importorskip("numpy")
    with pytest.raises(KernelRuntimeError, match="host array"):
        fn(1, 1, 1, 0, [np.zeros(4, np.float32), 1])


def test_cpu_torch_tensor_is_refused():
    torch = pytest.importorskip("torch")
    fn, _, calls = make(["*fp32"])
    with pytest.raises(KernelRuntimeError, match="tensor on device 'cpu'"):
        fn(1, 1, 1, 0, [torch.zeros(4)])
    assert not calls


def test_launch_error_is_reported():
    def failing(*a):
        return (700,)

    packer = L.Packer(["i32"])
    seen = []
    fn = L.make_launch("F", packer, block=32, shared=0, cu_launch=failing, kernel_name="k",
                       on_error=lambda err, args: seen.append(err))
    fn(1, 1, 1, 0, [5])
    assert seen == [700]


def test_driver_without_device_is_inactive_with_reason(monkeypatch):
    monkeypatch.delenv("TRITIUM_COMPILE_ONLY", raising=False)
    from tritium_nvidia.driver import CUDADriver

    d = CUDADriver()
    if d.is_active():
        pytest.skip("a CUDA device is present")
    assert d.inactive_reason()
    from tritium.errors import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="cuda"):
        d.get_current_target()


def test_compile_only_mode(monkeypatch):
    monkeypatch.setenv("TRITIUM_COMPILE_ONLY", "1")
    monkeypatch.setenv("TRITIUM_TARGET", "cuda:90")
    from tritium.compiler.compiler import CompiledKernel
    from tritium_nvidia.driver import CUDADriver

    d = CUDADriver()
    assert d.is_active() and str(d.get_current_target()) == "cuda:90"
    d.launch(CompiledKernel({}, {"name": "k"}), (1, 1, 1), [])
    assert d.skipped_launches == 1


def test_arg_types_from_cached_metadata():
    from tritium.compiler.compiler import CompiledKernel
    from tritium_nvidia.driver import arg_types

    # as compile() writes it and the file cache returns it: [name, type] pairs in parameter order, the
    # lowering's LLVM-level arg_types
    md = {"signature": [["x_ptr", "*fp32"], ["y_ptr", "*fp32"], ["output_ptr", "*fp32"], ["n_elements", "i32"]],
          "arg_names": ["x_ptr", "y_ptr", "output_ptr", "n_elements", "BLOCK_SIZE"],
          "arg_types": ["ptr", "ptr", "ptr", "i32"]}
    assert arg_types(CompiledKernel({}, md)) == (["*fp32", "*fp32", "*fp32", "i32"],
                                                  ["x_ptr", "y_ptr", "output_ptr", "n_elements"])
    # metadata written by hand as Triton spells it: a dict in parameter order
    md1 = {"signature": {"n": "i32", "x": "*fp16"}, "arg_types": ["i32", "ptr"]}
    assert arg_types(CompiledKernel({}, md1)) == (["i32", "*fp16"], ["n", "x"])
    md2 = {"signature": [], "arg_types": ["ptr", "f32", "i64"]}
    assert arg_types(CompiledKernel({}, md2)) == (["*i8", "fp32", "i64"], [])


def test_param_count_unknown_when_the_driver_lacks_the_entry_point(monkeypatch):
    """cuda-python raises RuntimeError for an entry point the installed driver does not export (seen on an H100
    with driver 580): the launcher then trusts the metadata's argument list instead of failing every launch."""
    import types

    from tritium_nvidia import driver as D

    class NoEntry:
        def cuFuncGetParamCount(self, f):
            raise RuntimeError('Function "cuFuncGetParamCount" not found')

    monkeypatch.setattr(D, "cu", lambda: NoEntry())
    assert D.LoadedKernel._param_count(types.SimpleNamespace(function=object())) is None
