"""Math on hip targets (compile-only: no AMD GPU here): the intrinsics the AMDGPU backend lowers natively select
for f16 / f32 / f64 without a library call; ``tl.sin`` / ``tl.cos`` without the device libraries are ``v_sin`` /
``v_cos`` of ``x * 1/(2 pi)`` (the reduction's error modelled in NumPy); with the ROCm device libraries
(``TRITIUM_ROCM_DEVICE_LIBS``) ocml's functions are linked, inlined and leave no undefined symbol in the hsaco;
without them a CompilationError at the call's line names the ocml symbol and how to provide the libraries."""
import os
import re
import struct

import numpy as np
import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.amd.test_compile import build  # noqa: E402
from tests.nvidia import extra_ops_kernels as XO  # noqa: E402
from tritium.errors import CompilationError  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

from tritium_amd import devicelibs  # noqa: E402

#: the device libraries of this machine (TRITIUM_ROCM_DEVICE_LIBS, a ROCm install or an installed triton package)
LIBS = devicelibs.directory()
needs_libs = pytest.mark.skipif(LIBS is None, reason="no ROCm device libraries (ocml.bc / ockl.bc) on this machine: "
                                                     "no ROCm install, no triton package, TRITIUM_ROCM_DEVICE_LIBS unset")

DT = {"fp16": "*fp16", "fp32": "*fp32", "fp64": "*fp64"}


@pytest.fixture
def no_libs(monkeypatch, tmp_path):
    """The device libraries hidden: TRITIUM_ROCM_DEVICE_LIBS set to an empty directory is not overridden."""
    monkeypatch.setenv(devicelibs.ENV, str(tmp_path))
    assert devicelibs.directory() is None


@pytest.fixture
def with_libs(monkeypatch):
    if LIBS is None:
        pytest.skip("no ROCm device libraries on this machine")
    monkeypatch.setenv(devicelibs.ENV, LIBS)
    assert devicelibs.directory() == LIBS


@triton.jit
def unary(X, Y, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if OP == "fma":
        y = tl.fma(x, x, x)
    elif OP == "minimum":
        y = tl.minimum(x, x + 1)
    elif OP == "maximum":
        y = tl.maximum(x, x + 1)
    else:
        y = getattr(tl, OP)(x)
    tl.store(Y + offs, y)


def _unary(op, dtype, arch="gfx942"):
    return build(unary, {"X": DT[dtype], "Y": DT[dtype]}, arch, OP=op, BLOCK=256)


def _no_calls(asm: str) -> None:
    body = asm.split(".amdgpu_metadata")[0]
    assert not re.search(r"s_swappc_b64|s_setpc_b64|@gotpcrel|@rel32", body), "a call in the AMDGCN"


# ------------------------------------------------------------------ native intrinsics
#: op -> {dtype: an instruction of its lowering}; f16 math (exp, log, sin, ...) is computed in f32
NATIVE = {
    "exp": {"fp16": "v_exp_f32", "fp32": "v_exp_f32"},
    "exp2": {"fp16": "v_exp_f32", "fp32": "v_exp_f32"},
    "log": {"fp16": "v_log_f32", "fp32": "v_log_f32"},
    "log2": {"fp16": "v_log_f32", "fp32": "v_log_f32"},
    "sqrt": {"fp16": "v_sqrt_f16", "fp32": "v_sqrt_f32", "fp64": "v_rsq_f64"},
    "rsqrt": {"fp32": "v_sqrt_f32", "fp64": "v_rsq_f64"},
    "floor": {"fp16": "v_floor_f16", "fp32": "v_floor_f32", "fp64": "v_floor_f64"},
    "ceil": {"fp16": "v_ceil_f16", "fp32": "v_ceil_f32", "fp64": "v_ceil_f64"},
    "fma": {"fp16": "v_fma", "fp32": "v_fma", "fp64": "v_fma"},
    "minimum": {"fp16": "v_min_f16", "fp32": "v_min_f32", "fp64": "v_min_f64"},
    "maximum": {"fp16": "v_max_f16", "fp32": "v_max_f32", "fp64": "v_max_f64"},
    "abs": {"fp16": "v_and_b32", "fp32": "v_and_b32", "fp64": "v_and_b32"},
}


@pytest.mark.parametrize("op,dtype", [(o, d) for o, ds in NATIVE.items() for d in ds])
def test_native_math_selects_without_a_call(op, dtype, no_libs):
    k = _unary(op, dtype)
    asm = k.asm["amdgcn"]
    assert NATIVE[op][dtype] in asm
    _no_calls(asm)
    assert "__ocml" not in k.asm["llir"]


@pytest.mark.parametrize("op", ["sin", "cos"])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_sin_cos_without_device_libs_are_v_sin_v_cos(op, dtype, no_libs):
    """``llvm.sin`` / ``llvm.cos``: ``v_{sin,cos}_f32`` of ``x * 1/(2 pi)`` (0.15915494, an inline constant)."""
    asm = _unary(op, dtype).asm["amdgcn"]
    assert re.search(r"v_mul_f32\w*\s+v\d+, (?:\w+, 0\.15915494|0\.15915494, \w+)", asm)
    assert f"v_{op}_f32" in asm
    _no_calls(asm)


def test_native_sin_range_reduction_error_model():
    """The native path's reduction in NumPy, exactly as the code computes it: ``t = fl32(x * fl32(1/(2 pi)))``,
    then the hardware's sin(2 pi t).  The reduction alone (the hardware's own approximation not modelled) costs at
    most 2.3e-7 on [-pi, pi], 7e-6 for |x| <= 100 and 1.2e-4 for |x| <= 512 pi, beyond which ``v_sin_f32``'s input
    (256 revolutions) is out of range: the figures in the math lowering's documentation."""
    c = np.float32(1 / (2 * np.pi))
    assert struct.unpack("<I", struct.pack("<f", c))[0] == 0x3E22F983  # 0.15915494, what the AMDGCN multiplies by
    for bound, tol in ((np.pi, 2.3e-7), (100.0, 7e-6), (512 * np.pi, 1.2e-4)):
        x = np.linspace(-bound, bound, 400001).astype(np.float32)
        t = (x * c).astype(np.float32)
        assert np.abs(t).max() <= 256.0
        for f in (np.sin, np.cos):
            err = np.abs(f(2 * np.pi * t.astype(np.float64)) - f(x.astype(np.float64))).max()
            assert tol / 4 < err <= tol, (bound, f, err)


# ------------------------------------------------------------------ without the device libraries: the clear error
@pytest.mark.parametrize("op,dtype,symbol", [("sin", "fp64", "__ocml_sin_f64"), ("exp", "fp64", "__ocml_exp_f64"),
                                             ("log", "fp64", "__ocml_log_f64"), ("erf", "fp32", "__ocml_erf_f32"),
                                             ("erf", "fp16", "__ocml_erf_f32")])
def test_ocml_math_without_device_libs_is_an_error_at_the_call(op, dtype, symbol, no_libs):
    with pytest.raises(CompilationError) as e:
        _unary(op, dtype)
    msg = str(e.value)
    assert symbol in msg and devicelibs.ENV in msg and "y = getattr(tl, OP)(x)" in msg
    assert e.value.filename.endswith("test_math.py") and "unary" in msg


def test_libdevice_without_device_libs_is_an_error_at_the_call(no_libs):
    with pytest.raises(CompilationError) as e:
        build(XO.ld_unary, {"X": "*fp32", "O": "*fp32", "n": "i32"}, NAME="erfinv", BLOCK=128)
    msg = str(e.value)
    assert "__nv_erfinvf" in msg and "__ocml_erfinv_f32" in msg and devicelibs.ENV in msg
    assert "getattr(libdevice, NAME)(x)" in msg


def test_libdevice_integer_function_has_no_ocml_equivalent():
    from tritium_amd.lowering.math import ocml_for

    assert ocml_for("__nv_popc") is None and ocml_for("__nv_double2float_rn") is None


@pytest.mark.parametrize("name,x,o,instr", [
    ("popc", "*i32", "*i32", "v_bcnt_u32_b32"), ("clz", "*i32", "*i32", "v_ffbh_u32"),
    ("brev", "*i32", "*i32", "v_bfrev_b32"), ("ffs", "*i32", "*i32", "v_ffbl_b32"),
    ("abs", "*i32", "*i32", "v_max_i32"), ("floor", "*fp32", "*fp32", "v_floor_f32"),
    ("floor", "*fp64", "*fp64", "v_floor_f64"), ("rint", "*fp32", "*fp32", "v_rndne_f32"),
    ("sqrt", "*fp64", "*fp64", "v_rsq_f64"), ("isnan", "*fp32", "*i32", "v_cmp_u_f32"),
    ("isinf", "*fp32", "*i32", "v_cmp_class_f32")])
def test_libdevice_exact_and_integer_functions_are_native(name, x, o, instr, no_libs):
    """What ocml has not (integer functions) or needs no library for (exact float functions, predicates): ops the
    AMDGPU backend selects, with the libraries hidden."""
    asm = build(XO.ld_unary, {"X": x, "O": o, "n": "i32"}, NAME=name, BLOCK=128).asm["amdgcn"]
    assert instr in asm
    _no_calls(asm)


@pytest.mark.parametrize("x,instr", [("*i32", r"v_mul_hi_i32|v_mad_i64_i32"), ("*u32", r"v_mul_hi_u32|v_mad_u64_u32")])
def test_libdevice_mulhi_is_native(x, instr, no_libs):
    """The 64-bit product's high half: signed / unsigned by the arguments' type."""
    asm = build(XO.ld_binary, {"X": x, "Y": x, "O": x, "n": "i32"}, NAME="mulhi", BLOCK=128).asm["amdgcn"]
    assert re.search(instr, asm)
    _no_calls(asm)


# ------------------------------------------------------------------ the libdevice -> ocml names
@pytest.mark.parametrize("nv,ocml", [
    ("__nv_sinf", "__ocml_sin_f32"), ("__nv_sin", "__ocml_sin_f64"), ("__nv_erfinvf", "__ocml_erfinv_f32"),
    ("__nv_log2f", "__ocml_log2_f32"), ("__nv_atan2", "__ocml_atan2_f64"), ("__nv_powif", "__ocml_pown_f32"),
    ("__nv_powf", "__ocml_pow_f32"), ("__nv_normcdff", "__ocml_ncdf_f32"), ("__nv_fast_expf", "__ocml_native_exp_f32"),
    ("__nv_fadd_rz", "__ocml_add_rtz_f32"), ("__nv_dsqrt_ru", "__ocml_sqrt_rtp_f64"),
    ("__nv_isnanf", "__ocml_isnan_f32"), ("__ocml_sin_f32", "__ocml_sin_f32")])
def test_ocml_for(nv, ocml):
    from tritium_amd.lowering.math import ocml_for

    assert ocml_for(nv) == ocml


# ------------------------------------------------------------------ with the device libraries
def test_isa_version_and_controls():
    assert devicelibs.isa_version("gfx942") == 9402 and devicelibs.isa_version("gfx90a") == 9010
    assert devicelibs.isa_version("gfx1100") == 11000 and devicelibs.isa_version("gfx950") == 9500
    c = devicelibs.controls("gfx1100", wave64=False)
    assert c["__oclc_wavefrontsize64"] == ("i8", 0) and c["__oclc_ABI_version"] == ("i32", 500)
    assert c["__oclc_correctly_rounded_sqrt32"] == ("i8", 1) and c["__oclc_finite_only_opt"] == ("i8", 0)


def _undefined_symbols(hsaco: bytes) -> list:
    """The undefined symbols of an ELF64 code object (its .dynsym and .symtab)."""
    shoff, = struct.unpack_from("<Q", hsaco, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", hsaco, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", hsaco, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for _name, typ, _f, _a, off, size, link, _i, _al, entsize in secs:
        if typ not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        stroff = secs[link][4]
        for j in range(1, size // entsize):
            st_name, _info, _other, shndx = struct.unpack_from("<IBBH", hsaco, off + j * entsize)
            if shndx == 0:
                end = hsaco.index(b"\0", stroff + st_name)
                out.append(hsaco[stroff + st_name:end].decode())
    return out


@needs_libs
@pytest.mark.parametrize("op,dtype", [("sin", "fp32"), ("cos", "fp32"), ("sin", "fp64"), ("exp", "fp64"),
                                      ("erf", "fp32"), ("erf", "fp16"), ("log2", "fp64")])
def test_ocml_math_links_and_inlines(op, dtype, with_libs):
    k = _unary(op, dtype)
    bits = "f64" if dtype == "fp64" else "f32"
    assert f"__ocml_{op}_{bits}" in k.asm["llir"]  # the call, resolved by linking ocml.bc
    asm = k.asm["amdgcn"]
    _no_calls(asm)
    assert "__ocml" not in asm and "__oclc" not in asm
    if op in ("sin", "cos") and dtype == "fp32":
        assert "v_sin_f32" not in asm and "v_cos_f32" not in asm  # ocml's reduction, not the native path
    if "hsaco" in k.asm:
        assert _undefined_symbols(k.asm["hsaco"]) == []


@needs_libs
@pytest.mark.parametrize("name", ["erfinv", "sin", "exp", "isnan", "fast_expf", "lgamma", "normcdf", "cbrt"])
def test_libdevice_links_ocml(name, with_libs):
    k = build(XO.ld_unary, {"X": "*fp32", "O": "*fp32", "n": "i32"}, NAME=name, BLOCK=128)
    _no_calls(k.asm["amdgcn"])
    if "hsaco" in k.asm:
        assert _undefined_symbols(k.asm["hsaco"]) == []


@needs_libs
def test_ocml_wave32_links(with_libs):
    asm = _unary("sin", "fp32", "gfx1100").asm["amdgcn"]
    _no_calls(asm)
    assert re.search(r"\.wavefront_size:\s+32", asm)


def test_devicelibs_lookup_order(monkeypatch, tmp_path):
    """TRITIUM_ROCM_DEVICE_LIBS first; $ROCM_PATH/amdgcn/bitcode next; set to a directory without them: none."""
    rocm = tmp_path / "rocm" / "amdgcn" / "bitcode"
    rocm.mkdir(parents=True)
    for n in ("ocml", "ockl"):
        (rocm / f"{n}.bc").write_bytes(b"BC")
    monkeypatch.delenv(devicelibs.ENV, raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    assert devicelibs.directory() == str(rocm)
    assert devicelibs.key().startswith(f"rocm-device-libs={rocm}:")
    monkeypatch.setenv(devicelibs.ENV, str(tmp_path))
    assert devicelibs.directory() is None and devicelibs.key() == "rocm-device-libs=none"
