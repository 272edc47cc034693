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


def test_scalar_rules_shared_with_the_hip_launcher():
    # one set of scalar rules (tritium.runtime.kernel_args): fp16 overflow is refused, not packed as inf
    fn, _, calls = make(["fp16", "bf16", "i1"])
    with pytest.raises(KernelRuntimeError, match="argument 'p0'.*70000.0 does not fit in fp16"):
        fn(1, 1, 1, 0, [7e4, 1.0, 1])
    fn(1, 1, 1, 0, [65504.0, 1.5, 5])
    b = calls[-1][-1]
    assert struct.unpack("<e", b[0][:2])[0] == 65504.0
    assert struct.unpack("<H", b[1][:2])[0] == 0x3FC0  # bf16 1.5
    assert struct.unpack("<i", b[2][:4])[0] == 1


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


# ---------------------------------------------------------------------------------------------- tensormaps (TMA)
def _tm_bytes(tag):
    """128 recognisable bytes."""
    return bytes((tag + i) % 256 for i in range(128))


class FakeEncoder:
    """A cuTensorMapEncodeTiled stand-in (plain-int lists): records its arguments, returns 128 tagged bytes."""

    def __init__(self, err=0):
        self.calls = []
        self.err = err

    def __call__(self, *args):
        self.calls.append(args)
        return (self.err, _tm_bytes(len(self.calls)))


# a kernel (A_desc fp16 rank 3, x_ptr, B_desc bf16 rank 2 with NaN fill, n): tensormap parameters at 0 and 9
TM_TYPES = ["tensormap", "*i8", "i32", "i32", "i32", "i64", "i64", "i64", "*fp32",
            "tensormap", "*i8", "i32", "i32", "i64", "i64", "i32"]
TM_SPECS = [{"index": 0, "dtype": "fp16", "rank": 3, "box": [1, 64, 32], "swizzle": 128, "fill_nan": False},
            {"index": 9, "dtype": "bf16", "rank": 2, "box": [16, 8], "swizzle": 0, "fill_nan": True}]


def make_tm(types=TM_TYPES, specs=TM_SPECS, n_extra=0, names=(), encoder="fake", **kw):
    """A launcher for ``types`` (tensormaps described by ``specs``) with a FakeEncoder (``encoder=None``: the
    default, cuda.bindings' through :func:`cuda_encode_tiled`) and a cuLaunchKernel stand-in that records each
    slot's address and bytes."""
    calls = []
    encoder = FakeEncoder() if encoder == "fake" else encoder

    def fake_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        arr = (ctypes.c_void_p * packer.n).from_address(params)
        size = [128 if i < len(types) and types[i] == "tensormap" else L.SLOT for i in range(packer.n)]
        calls.append([(arr[i], ctypes.string_at(arr[i], size[i])) for i in range(packer.n)])
        return (0,)

    packer = L.Packer(types, n_extra)
    fn = L.make_launch("F", packer, block=128, shared=0, cu_launch=fake_launch, names=names, kernel_name="k",
                       tensormaps=specs, encode_tensormap=encoder, **kw)
    return fn, packer, calls, encoder


def tm_args(a_base=0x10000, b_base=0x20000):
    # A: shape (2, 100, 48), strides (4800, 48, 1); B: shape (40, 24), strides (32, 1)
    return [FakeCudaTensor(a_base), 2, 100, 48, 4800, 48, 1, FakeCudaTensor(0xF00), FakeCudaTensor(b_base), 40, 24,
            32, 1, 7]


def test_tensormap_struct_layout():
    fmt, offsets, size = L.layout(["i32", "tensormap", "*i8", "tensormap"], 1)
    assert offsets == [0, 64, 192, 256, 384] and size == 392
    assert fmt == "<i4x56x128sQ56x128sQ" == L.struct_format(["i32", "tensormap", "*i8", "tensormap"], 1)
    assert struct.calcsize(fmt) == size


def test_tensormap_encode_arguments_and_slots():
    from cuda.bindings import driver as D

    fn, packer, calls, enc = make_tm(n_extra=1)
    fn(1, 1, 1, 0, tm_args())
    assert len(enc.calls) == 2
    a, b = enc.calls
    assert a == (D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, 0x10000, [48, 100, 2], [96, 9600],
                 [32, 64, 1], [1, 1, 1], D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
                 D.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
                 D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                 D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert b == (D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 0x20000, [24, 40], [64], [8, 16],
                 [1, 1], D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
                 D.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
                 D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                 D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    (slots,) = calls
    assert len(slots) == len(TM_TYPES) + 1
    (pa, ta), (pb, tb) = slots[0], slots[9]
    assert pa % 64 == 0 and pb % 64 == 0
    assert ta == _tm_bytes(1) and tb == _tm_bytes(2)
    vals = [struct.unpack("<Q" if TM_TYPES[i] in ("*i8", "*fp32") else ("<q" if TM_TYPES[i] == "i64" else "<i4x"),
                          slots[i][1])[0] for i in range(len(TM_TYPES)) if TM_TYPES[i] != "tensormap"]
    assert vals == [0x10000, 2, 100, 48, 4800, 48, 1, 0xF00, 0x20000, 40, 24, 32, 1, 7]
    assert struct.unpack("<Q", slots[-1][1])[0] == 0  # the extra (scratch) parameter
    # the slots are where the packer says, and no slot overlaps the next
    addrs = [p for p, _ in slots]
    assert addrs == [ctypes.addressof(packer.buffer) + off for off in packer.offsets]
    assert all(addrs[i] + len(slots[i][1]) <= addrs[i + 1] for i in range(len(addrs) - 1))
    assert "tmc0(" in fn.source and "tm1(" in fn.source


def test_tensormap_cache():
    fn, packer, calls, enc = make_tm()
    fn(1, 1, 1, 0, tm_args())
    fn(1, 1, 1, 0, tm_args())
    assert len(enc.calls) == 2  # the second launch: cache hits
    assert calls[1][0][1] == calls[0][0][1] == _tm_bytes(1)
    fn(1, 1, 1, 0, tm_args(a_base=0x30000))  # A's base moved: A re-encoded, B still cached
    assert len(enc.calls) == 3 and enc.calls[-1][2] == 0x30000
    assert calls[-1][0][1] == _tm_bytes(3) and calls[-1][9][1] == _tm_bytes(2)
    args = tm_args()
    args[2] = 99  # A's shape changed
    fn(1, 1, 1, 0, args)
    assert len(enc.calls) == 4 and enc.calls[-1][3] == [48, 99, 2]
    fn(1, 1, 1, 0, tm_args(a_base=0x30000))
    assert len(enc.calls) == 4
    # through launch.grid as well (the same caches)
    fn2, _, calls2, enc2 = make_tm(current_stream=lambda: 0, make_stream=lambda s: s)
    fn2.grid(None, (1, 1, 1), tm_args())
    fn2.grid(None, (1, 1, 1), tm_args())
    assert len(enc2.calls) == 2 and len(calls2) == 2


def test_tensormap_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(L, "TENSORMAP_CACHE_LIMIT", 3)
    fn, packer, calls, enc = make_tm()
    for i in range(10):
        fn(1, 1, 1, 0, tm_args(a_base=0x10000 + 256 * i))
    tm0 = fn.tensormaps[0]
    assert 1 <= len(tm0.cache) <= 3 and len(fn.tensormaps[1].cache) == 1


def test_tensormap_slow_path():
    np = pytest.importorskip("numpy")
    fn, packer, calls, enc = make_tm()
    args = tm_args()
    args[0] = CAIArray(0x40000)  # not a torch tensor: convert_args
    args[2] = np.int64(100)
    args[-1] = np.int32(7)
    fn(1, 1, 1, 0, args)
    assert enc.calls[0][2] == 0x40000 and enc.calls[0][3] == [48, 100, 2]
    slots = calls[-1]
    assert slots[0][1] == _tm_bytes(1) and slots[9][1] == _tm_bytes(2)
    assert struct.unpack("<Q", slots[1][1])[0] == 0x40000
    # an int address and a float shape that is integral: still the slow path, and the cache is shared
    args = tm_args()
    args[0] = 0x40000
    args[2] = 100.0
    fn(1, 1, 1, 0, args)
    assert len(enc.calls) == 2 and calls[-1][0][1] == _tm_bytes(1)
    v = L.convert_args(tm_args(), TM_TYPES, (), "k", None, {e.index: e for e in fn.tensormaps})
    assert len(v) == len(TM_TYPES) and v[0] == _tm_bytes(3) and v[1] == 0x10000 and v[9] == _tm_bytes(2)


def test_tensormap_argument_errors():
    fn, packer, calls, enc = make_tm(names=["A_base", "A_s0", "A_s1", "A_s2", "A_t0", "A_t1", "A_t2", "x"])
    with pytest.raises(KernelRuntimeError, match="takes 14 runtime arguments, got 13"):
        fn(1, 1, 1, 0, tm_args()[:-1])
    args = tm_args()
    args[7] = "x"
    with pytest.raises(KernelRuntimeError, match="argument 'x'.*got str"):
        fn(1, 1, 1, 0, args)
    args = tm_args()
    args[6] = 2  # innermost stride
    with pytest.raises(KernelRuntimeError, match=r"tensor descriptor #0 \(parameter 0, base argument 'A_base'\).*"
                                                 r"innermost stride must be 1"):
        fn(1, 1, 1, 0, args)
    args = tm_args()
    args[2] = 2.5
    with pytest.raises(KernelRuntimeError, match="cannot pass 2.5 as i32"):
        fn(1, 1, 1, 0, args)
    assert not calls


def test_tensormap_encode_error():
    from cuda.bindings import driver as D

    enc = FakeEncoder(err=D.CUresult.CUDA_ERROR_INVALID_VALUE)
    fn, packer, calls, _ = make_tm(encoder=enc)
    with pytest.raises(KernelRuntimeError) as ei:
        fn(1, 1, 1, 0, tm_args(a_base=0x10008))
    msg = str(ei.value)
    assert "kernel 'k'" in msg and "tensor descriptor #0 (parameter 0)" in msg
    assert "CUDA_ERROR_INVALID_VALUE (1)" in msg
    assert "base 0x10008" in msg and "shape (2, 100, 48)" in msg and "strides (4800, 48, 1)" in msg
    assert "box (1, 64, 32)" in msg and "16-byte aligned" in msg
    assert not calls
    # an int error code (a stand-in) is named too; the second descriptor is named by its number
    enc2 = FakeEncoder()
    fn2, _, _, _ = make_tm(encoder=lambda *a: (1, b"") if a[2] == 0x20000 else enc2(*a))
    with pytest.raises(KernelRuntimeError, match=r"tensor descriptor #1 \(parameter 9\).*"
                                                 r"CUDA_ERROR_INVALID_VALUE \(1\).*box \(16, 8\)"):
        fn2(1, 1, 1, 0, tm_args())


def test_tensormap_metadata_must_match_the_parameters():
    with pytest.raises(KernelRuntimeError, match="does not describe"):
        make_tm(specs=TM_SPECS[:1])
    with pytest.raises(KernelRuntimeError, match="not a tensormap"):
        make_tm(specs=[TM_SPECS[0], dict(TM_SPECS[1], index=8)])
    with pytest.raises(KernelRuntimeError, match="followed by its descriptor's base"):
        make_tm(types=["tensormap", "*i8", "i32", "i64"], specs=[dict(TM_SPECS[0])])
    with pytest.raises(KernelRuntimeError, match="cannot copy elements of type 'fp4'"):
        make_tm(types=["tensormap", "*i8", "i32", "i64"], specs=[dict(TM_SPECS[0], rank=1, box=[8], dtype="fp4")])
    with pytest.raises(KernelRuntimeError, match="swizzle must be"):
        make_tm(types=["tensormap", "*i8", "i32", "i64"], specs=[dict(TM_SPECS[0], rank=1, box=[8], swizzle=16)])
    with pytest.raises(KernelRuntimeError, match="no tensormap metadata"):
        L.convert_args([None, 1], ["tensormap", "i32"], (), "k")


def test_no_tensormap_launch_source_is_unchanged():
    fn, packer, calls = make(["*fp32", "i32", "fp16"], n_extra=1)
    assert "tm" not in fn.source and "d0" not in fn.source and fn.tensormaps == []
    assert "pack(b, 0, (a0.data_ptr() if a0.is_cuda else elsewhere(a0, 0)), a1, a2, 0)" in fn.source
    assert packer.offsets == [0, 8, 16, 24] and len(packer.buffer) == 32
    fn0 = L.make_launch("F", L.Packer([], 2), block=32, shared=0, cu_launch=lambda *a: (0,))
    fn0(1, 1, 1, 0, [])  # no runtime arguments, scratch parameters only


def test_tensormap_bytes_of_a_cutensormap():
    from cuda.bindings import driver as D

    t = D.CUtensorMap()
    t.opaque = list(range(100, 116))
    assert L._tensormap_bytes(t) == struct.pack("<16Q", *range(100, 116))


def test_default_encoder_wraps_plain_ints(monkeypatch):
    from cuda.bindings import driver as D

    seen = []

    def fake(*args):
        seen.append(args)
        return (D.CUresult.CUDA_SUCCESS, D.CUtensorMap())

    try:
        monkeypatch.setattr(D, "cuTensorMapEncodeTiled", fake)
    except (AttributeError, TypeError):
        pytest.skip("cuda.bindings.driver's functions cannot be replaced")
    fn, packer, calls, _ = make_tm(encoder=None)
    assert fn.tensormaps[0].encode is L.cuda_encode_tiled
    fn(1, 1, 1, 0, tm_args())
    a = seen[0]
    assert [int(x) for x in a[3]] == [48, 100, 2] and all(isinstance(x, D.cuuint64_t) for x in a[3] + a[4])
    assert [int(x) for x in a[4]] == [96, 9600]
    assert all(isinstance(x, D.cuuint32_t) for x in a[5] + a[6]) and [int(x) for x in a[5]] == [32, 64, 1]
    assert calls[0][0][1] == b"\0" * 128


def test_arg_types_keep_tensormaps():
    from tritium.compiler.compiler import CompiledKernel
    from tritium_nvidia.driver import arg_types

    md = {"signature": [["a_desc", "tensordesc<fp16[64, 64]>"], ["n", "i32"]],
          "arg_types": ["tensormap", "ptr", "i32", "i32", "i64", "i64", "i32"]}
    assert arg_types(CompiledKernel({}, md)) == (["tensormap", "*i8", "i32", "i32", "i64", "i64", "i32"], [])


def test_loaded_kernel_passes_tensormaps(monkeypatch):
    """LoadedKernel with a fake cuda.bindings: the cubin's parameter count counts a tensormap as one parameter,
    and the launch encodes it from the runtime arguments after it."""
    import types as T

    from cuda.bindings import driver as D

    from tritium.compiler.compiler import CompiledKernel
    from tritium_nvidia import driver as drv

    launched = []

    def fake_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        arr = (ctypes.c_void_p * 6).from_address(params)
        launched.append((arr[0], ctypes.string_at(arr[0], 128), [ctypes.string_at(arr[i], 8) for i in range(1, 6)]))
        return (0,)

    fa = T.SimpleNamespace(**{k: k for k in ("CU_FUNC_ATTRIBUTE_NUM_REGS", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
                                             "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
                                             "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")})
    attrs = {"CU_FUNC_ATTRIBUTE_NUM_REGS": 32, "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES": 0,
             "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": 0}
    fake_cu = T.SimpleNamespace(
        cuModuleLoadData=lambda cubin: (0, "M"), cuModuleGetFunction=lambda m, n: (0, "F"),
        CUfunction_attribute=fa, cuFuncGetAttribute=lambda a, f: (0, attrs[a]),
        cuFuncGetParamCount=lambda f: (0, 6), cuLaunchKernel=fake_launch)
    monkeypatch.setattr(drv, "cu", lambda: fake_cu)
    encoded = []

    def fake_encode(*a):
        encoded.append(a)
        return (0, _tm_bytes(9))

    monkeypatch.setattr(L, "cuda_encode_tiled", fake_encode)
    md = {"name": "k", "shared": 0, "num_warps": 4, "target": {"arch": 90},
          "signature": [["a_desc", "tensordesc<fp16[64, 64]>"]],
          "arg_types": ["tensormap", "ptr", "i32", "i64"],
          "tensormaps": [{"index": 0, "dtype": "fp32", "rank": 1, "box": [64], "swizzle": 0, "fill_nan": False}]}
    kernel = CompiledKernel({"cubin": b"\0"}, md)
    device = T.SimpleNamespace(index=0, capability=90, make_current=lambda: None,
                               properties=lambda: {"max_shared_mem": 232448})
    driver = T.SimpleNamespace(check_pointer=None, _stream_getter=lambda i: (lambda: 0), _stream=lambda s: s,
                               _streams={})
    lk = drv.LoadedKernel(driver, kernel, device)
    assert lk.types == ["tensormap", "*i8", "i32", "i64"] and lk.packer.n_extra == 2
    lk.launch(1, 1, 1, 0, [FakeCudaTensor(0x5000), 1000, 1])
    lk.launch.grid(kernel, (1, 1, 1), [FakeCudaTensor(0x5000), 1000, 1])
    assert len(encoded) == 1 and encoded[0][1:5] == (1, 0x5000, [1000], [])
    assert encoded[0][0] == D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    p0, tm, rest = launched[-1]
    assert p0 % 64 == 0 and tm == _tm_bytes(9)
    assert [struct.unpack("<q", x)[0] for x in rest] == [0x5000, 1000, 1, 0, 0]


def test_global_scratch_is_allocated_per_launch_for_the_whole_grid():
    """A kernel with tensor maps made on the device: its first extra parameter is a buffer of the per-program
    scratch times the grid, from the allocator (kept alive until the next launch), on both packing paths."""
    calls, allocs = [], []

    def fake_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        calls.append([ctypes.string_at(p, L.SLOT) for p in (ctypes.c_void_p * packer.n).from_address(params)])
        return (0,)

    def allocator(size, align, stream):
        allocs.append((size, align))
        return FakeCudaTensor(0x7000_0000 + 0x1000 * len(allocs))

    packer = L.Packer(["*fp16", "i32"], 1)
    fn = L.make_launch("F", packer, block=128, shared=0, cu_launch=fake_launch, names=["x", "n"], kernel_name="k",
                       global_scratch=(256, 128), allocator=allocator)
    fn(4, 3, 2, "S", [FakeCudaTensor(0xA000), 7])
    fn(1, 1, 1, "S", [CAIArray(0xB000), 9])  # the slow path (no .is_cuda)
    assert allocs == [(256 * 24, 128), (256, 128)]
    assert struct.unpack("<Q", calls[0][2])[0] == 0x7000_1000 and struct.unpack("<Q", calls[1][2])[0] == 0x7000_2000
    assert struct.unpack("<Q", calls[1][0])[0] == 0xB000


def test_global_scratch_without_an_allocator_or_torch_says_how_to_fix_it(monkeypatch):
    from tritium.runtime import _allocation

    monkeypatch.setattr(_allocation, "_have_torch", lambda: False)  # no torch installed
    token = _allocation._allocator.set(_allocation.NullAllocator())  # (another test may have installed one)
    try:
        _run_without_allocator(_allocation)
    finally:
        _allocation._allocator.reset(token)


def _run_without_allocator(_allocation):
    assert isinstance(_allocation.scratch_allocator(), _allocation.NullAllocator)
    packer = L.Packer(["i32"], 1)
    fn = L.make_launch("F", packer, block=128, shared=0, cu_launch=lambda *a: (0,), kernel_name="k",
                       global_scratch=(128, 128))
    with pytest.raises(RuntimeError, match="set_allocator"):
        fn(1, 1, 1, "S", [1])


def _loaded(monkeypatch, attrs, md):
    """LoadedKernel over a fake cuda.bindings whose function attributes are ``attrs``."""
    import types as T

    from tritium.compiler.compiler import CompiledKernel
    from tritium_nvidia import driver as drv

    names = ("CU_FUNC_ATTRIBUTE_NUM_REGS", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
             "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
    fake_cu = T.SimpleNamespace(
        cuModuleLoadData=lambda cubin: (0, "M"), cuModuleGetFunction=lambda m, n: (0, "F"),
        CUfunction_attribute=T.SimpleNamespace(**{k: k for k in names}), cuFuncGetAttribute=lambda a, f: (0, attrs[a]),
        cuFuncGetParamCount=lambda f: (0, 2), cuLaunchKernel=lambda *a: (0,))
    monkeypatch.setattr(drv, "cu", lambda: fake_cu)
    device = T.SimpleNamespace(index=0, capability=90, make_current=lambda: None,
                               properties=lambda: {"max_shared_mem": 232448})
    driver = T.SimpleNamespace(check_pointer=None, _stream_getter=lambda i: (lambda: 0), _stream=lambda s: s,
                               _streams={})
    md = {"name": "heavy_kernel", "shared": 0, "num_warps": 4, "target": {"arch": 90}, "arg_types": ["ptr"], **md}
    return drv.LoadedKernel(driver, CompiledKernel({"cubin": b"\0"}, md), device)


def test_registers_beyond_the_device_name_the_kernel_and_the_limit(monkeypatch):
    """Limits before launch: a function whose registers per thread leave the device room for fewer threads than
    num_warps * 32 is refused at load (the launch would fail with LAUNCH_OUT_OF_RESOURCES), naming the kernel, the
    registers and the limit; so is shared memory beyond the device."""
    from tritium.errors import OutOfResources

    attrs = {"CU_FUNC_ATTRIBUTE_NUM_REGS": 168, "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES": 0,
             "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 384, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": 0}
    with pytest.raises(OutOfResources) as e:
        _loaded(monkeypatch, attrs, {"num_warps": 16})
    msg = str(e.value)
    assert "kernel 'heavy_kernel'" in msg and "required: 512, hardware limit: 384" in msg and "168 registers" in msg
    assert _loaded(monkeypatch, attrs, {"num_warps": 8}).block == 256
    with pytest.raises(OutOfResources, match=r"kernel 'heavy_kernel': out of resource: shared memory .*"
                                             r"required: 300000, hardware limit: 232448. .*num_stages"):
        _loaded(monkeypatch, attrs, {"shared": 300000})


# ----------------------------------------------------------------------------------- the C call, threads, direct
def make_c(types, device=0):
    """A launcher in C-call mode with a stand-in for the extension's ``launch`` (ints only)."""
    calls = []

    def fake_c(f, gx, gy, gz, block, shared, stream, params):
        assert all(type(v) is int for v in (f, gx, gy, gz, block, shared, stream, params))
        arr = (ctypes.c_void_p * packer.n).from_address(params)
        calls.append(((gx, gy, gz), block, shared, stream, f, [ctypes.string_at(arr[i], L.SLOT)
                                                              for i in range(packer.n)]))
        return 0

    packer = L.Packer(types)
    fn = L.make_launch(0xF00, packer, block=128, shared=0, cu_launch=None, names=[f"p{i}" for i in
                       range(len(types))], kernel_name="k", current_stream=lambda: 0x57, device=device,
                       c_launch=fake_c)
    return fn, packer, calls


class FakeTorchTensor(FakeCudaTensor):
    def __init__(self, ptr, device=0):
        import torch

        super().__init__(ptr)
        self.device = torch.device("cuda", device)
        self._device = device

    def get_device(self):
        return self._device


def test_c_mode_passes_ints_and_the_raw_stream():
    fn, packer, calls = make_c(["*fp32", "i32"])
    fn(2, 1, 1, 0x99, [FakeTorchTensor(0x1000), 7])  # launch(): the stream as given (int(stream))
    fn.grid(None, (3, 1, 1), [FakeTorchTensor(0x2000), 8])  # the current stream, raw
    fn.direct((0, 2), 3)(4, FakeTorchTensor(0x3000), "constexpr ignored", 9)  # a tensor still converts
    fn.direct((0, 2), 3)(5, 0x4000, None, 10)  # the JIT passes addresses
    got = [(g, s, f, struct.unpack("<Q", b[0])[0], struct.unpack("<i", b[1][:4])[0]) for g, _, _, s, f, b in calls]
    assert got == [((2, 1, 1), 0x99, 0xF00, 0x1000, 7), ((3, 1, 1), 0x57, 0xF00, 0x2000, 8),
                   ((4, 1, 1), 0x57, 0xF00, 0x3000, 9), ((5, 1, 1), 0x57, 0xF00, 0x4000, 10)]
    assert fn.direct((0, 2), 3) is fn.direct((0, 2), 3)  # generated once per positions
    with pytest.raises(KernelRuntimeError, match="no direct launch"):
        fn.direct((0,), 3)


def test_tensor_on_another_device_is_refused_with_both_devices():
    fn, packer, calls = make_c(["*fp32", "*fp32"], device=1)
    with pytest.raises(KernelRuntimeError, match=r"argument 'p1' is a tensor on cuda:0 but the kernel launches on "
                                                 r"cuda:1.*torch.cuda.device\(0\)"):
        fn(1, 1, 1, 0, [FakeTorchTensor(0x1000, 1), FakeTorchTensor(0x2000, 0)])
    with pytest.raises(KernelRuntimeError, match="argument 'p0' is a tensor on cuda:0"):
        fn.direct((0, 1), 2)(1, FakeTorchTensor(0x1000, 0), 0x2000)
    assert calls == []
    fn(1, 1, 1, 0, [FakeTorchTensor(0x1000, 1), FakeTorchTensor(0x2000, 1)])
    assert len(calls) == 1


def test_other_threads_pack_into_their_own_buffer():
    import threading

    fn, packer, calls = make_c(["*fp32", "i32"])
    seen = []

    def worker(i):
        fn(1, 1, 1, 0, [FakeTorchTensor(0x1000 * (i + 1)), i])
        seen.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fn(1, 1, 1, 0, [FakeTorchTensor(0xAB00), 99])  # this (the making) thread: the kernel's own buffer
    assert sorted(seen) == [0, 1, 2, 3]
    packed = sorted((struct.unpack("<Q", b[0])[0], struct.unpack("<i", b[1][:4])[0]) for *_, b in calls)
    assert packed == sorted([(0x1000 * (i + 1), i) for i in range(4)] + [(0xAB00, 99)])
    assert packer.read()[:2] == (0xAB00, 99)  # the other threads did not write the kernel's buffer


def test_c_extension_without_libcuda_says_why():
    ext = pytest.importorskip("tritium_nvidia._cuda_launch", reason="the C launcher was not built here")
    why = ext.available()
    if not why:
        pytest.skip("libcuda is present: tests/gpu runs the C launcher for real")
    assert "libcuda" in why
    with pytest.raises(RuntimeError, match="libcuda"):
        ext.launch(1, 1, 1, 1, 128, 0, 0, 0)
    with pytest.raises(TypeError):
        ext.launch(1, 2, 3)
    with pytest.raises(OverflowError):
        ext.launch(1, 2 ** 40, 1, 1, 128, 0, 0, 0)


def test_launcher_choice(monkeypatch):
    from tritium_nvidia import driver as D

    monkeypatch.setenv("TRITIUM_CUDA_LAUNCHER", "bindings")
    assert D.c_launcher() is None
    monkeypatch.setenv("TRITIUM_CUDA_LAUNCHER", "fast")
    with pytest.raises(KernelRuntimeError, match="expected 'c' or 'bindings'"):
        D.c_launcher()
    monkeypatch.setenv("TRITIUM_CUDA_LAUNCHER", "c")
    try:
        from tritium_nvidia import _cuda_launch
    except ImportError:
        with pytest.raises(KernelRuntimeError, match="not built"):
            D.c_launcher()
        return
    if _cuda_launch.available():
        with pytest.raises(KernelRuntimeError, match="cannot call the driver"):
            D.c_launcher()
    else:
        assert D.c_launcher() is _cuda_launch


class _Calls(list):
    status = 0  # what the stand-in returns (a CUresult)


@pytest.fixture
def c_stand_in():
    """tritium_nvidia._cuda_launch calling a ctypes stand-in with cuLaunchKernel's C signature (no libcuda
    needed); yields the recorded launches (grid, block, shared, stream, function, params address)."""
    ext = pytest.importorskip("tritium_nvidia._cuda_launch", reason="the C launcher was not built here")
    calls = _Calls()
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p)

    def record(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        calls.append(((gx, gy, gz), bx, shared, stream or 0, f, params))
        return calls.status

    fp = proto(record)
    ext.set_launch_function(ctypes.cast(fp, ctypes.c_void_p).value)
    try:
        yield ext, calls
    finally:
        ext.set_launch_function(0)


def test_c_direct_launch_packs_and_falls_back(c_stand_in):
    import functools
    import threading

    ext, calls = c_stand_in
    packer = L.Packer(["*fp32", "i32"])
    streams = {}
    fn = L.make_launch(0xF00, packer, block=128, shared=64, cu_launch=None, names=["x", "n"], kernel_name="k",
                       current_stream=functools.partial(lambda d: 0x50 + d, 3), device=3, c_launch=ext.launch,
                       c_direct=(ext.make_direct, ext.launch_direct), streams=streams)
    d = fn.direct((0, 2), 3)
    assert isinstance(d, functools.partial) and d.func is ext.launch_direct
    d(7, 0xAB00, "constexpr", 5)  # the C path: one call, the kernel's buffer
    assert calls[-1][:5] == ((7, 1, 1), 128, 64, 0x53, 0xF00) and calls[-1][5] == packer.params
    assert packer.read()[:2] == (0xAB00, 5)
    d(2, FakeTorchTensor(0xCD00, 3), None, 6)  # not an int address: the Python fallback converts it
    assert calls[-1][0] == (2, 1, 1) and packer.read()[:2] == (0xCD00, 6)
    with pytest.raises(KernelRuntimeError, match="does not fit in i32"):
        d(1, 0xAB00, None, 2 ** 40)  # the fallback's message
    with pytest.raises(KernelRuntimeError, match="argument 'x' is a tensor on cuda:0"):
        d(1, FakeTorchTensor(0xCD00, 0), None, 6)
    before = packer.read()
    t = threading.Thread(target=d, args=(4, 0xEE00, None, 9))  # another thread: its own buffer (fallback)
    t.start()
    t.join()
    assert calls[-1][0] == (4, 1, 1) and calls[-1][5] != packer.params and packer.read() == before
    n = len(calls)
    calls.status = 700  # a failing launch: the fallback relaunches and reports it
    with pytest.raises(KernelRuntimeError, match="cuLaunchKernel of 'k' failed: 700"):
        d(1, 0xAB00, None, 5)
    assert len(calls) == n + 2


def test_c_direct_launch_packs_every_slot_kind(c_stand_in):
    """Pointers and 32/64-bit integers are written by the C launch itself (zeroed buffer first), a kernel with a
    float parameter goes through struct.pack_into; both give the bytes the Python launcher packs."""
    import functools

    ext, calls = c_stand_in
    for types, vals in ((["*fp32", "i32", "i64", "u32", "u64"], (0xAB00, -7, -(2 ** 40), 2 ** 32 - 1, 2 ** 64 - 1)),
                        (["*fp32", "fp32", "i32"], (0xCD00, 1.5, 3))):
        packer = L.Packer(types)
        fn = L.make_launch(0xF00, packer, block=32, shared=0, cu_launch=None, names=[f"p{i}" for i in
                           range(len(types))], kernel_name="k", current_stream=functools.partial(lambda d: d, 0),
                           device=0, c_launch=ext.launch, c_direct=(ext.make_direct, ext.launch_direct))
        direct = fn.direct(tuple(range(len(types))), len(types))
        packer.struct.pack_into(packer.buffer, 0, *([0x5A] * len(types)))  # stale bytes: must be overwritten
        direct(3, *vals)
        assert calls[-1][0] == (3, 1, 1) and calls[-1][5] == packer.params
        assert packer.read() == vals
        want = struct.pack(packer.struct.format, *vals)
        assert bytes(packer.buffer)[:len(want)] == want
        with pytest.raises(KernelRuntimeError, match="does not fit"):
            direct(3, *vals[:-1], 2 ** 70)  # out of range: the Python path's message
