"""fp8 on the AMD backend, without an AMD GPU.

* The software conversions (:mod:`tritium.lowering.fp8`, what gfx942 runs for the OCP formats and gfx950 for the
  fnuz ones) are executed bit for bit: each is emitted by the real helper into an MLIR function, taken through the
  upstream LLVM conversions and LLVM's own code generation for this CPU (llvmlite's JIT), and run over all 256
  codes and sweeps of f32 / f16 / bf16 inputs (every fp8 value, the ties between neighbours and one ulp either
  side, subnormals, saturation, infinities, NaN, a stride through all f32 bit patterns), against the
  interpreter's model (``tritium_interpreter.runtime.fp8``).
* Kernels compile to hsaco with the instructions of the arch: ``v_cvt_pk_fp8_f32`` / ``v_cvt_pk_f32_fp8`` for the
  fnuz formats on gfx942, ``v_cvt_scalef32_pk_*`` for the OCP ones on gfx950, no fp8 instruction for software
  conversions; fp8 arithmetic; fp8 dots on ``v_mfma`` (OCP on gfx942 upcast to f16 as Triton: the f16 MFMA), and
  f16 accumulators (the f32 MFMA, then a conversion).
"""
import ctypes
import re

import numpy as np
import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.amd.test_compile import build  # noqa: E402
from tritium.errors import CompilationError  # noqa: E402
from tritium_interpreter.runtime import fp8 as model  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402

FORMATS = ["f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ"]
TL = {"f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5", "f8E4M3FNUZ": "fp8e4b8", "f8E5M2FNUZ": "fp8e5b16"}


# ------------------------------------------------------------------------------------ the software conversion, run
def _jit(src_ty: str, dst_ty: str, kind: str):
    """A host function ``dst conv(src)`` whose body is :func:`software_to_fp8` (``kind`` "to": float -> fp8, the
    fp8 returned as its i8) or :func:`software_from_fp8` ("from": fp8 given as i8 -> float), compiled for this
    CPU.  Returns ``(ctypes function, engine)`` (keep the engine alive)."""
    from mlir import ir
    from mlir.dialects import func
    from mlir.dialects import llvm as llvm_d

    from tritium.compiler.stages import llvm_binding
    from tritium.dialects import make_context
    from tritium.lowering import LoweringContext
    from tritium.lowering.fp8 import software_from_fp8, software_to_fp8
    from tritium.lowering.walker import convert_to_llvm
    from tritium_amd.lowering import AMDTargetInfo

    with make_context() as mctx, ir.Location.unknown() as loc:
        module = ir.Module.create()
        i8 = ir.IntegerType.get_signless(8)
        src, dst = ir.Type.parse(src_ty), ir.Type.parse(dst_ty)
        i16 = ir.IntegerType.get_signless(16)
        # 16-bit floats cross the boundary as their bits (ctypes has no half type)
        boundary = {t: (i16 if isinstance(t, (ir.F16Type, ir.BF16Type)) else t) for t in (src, dst)}
        arg_ty, res_ty = (boundary[src], i8) if kind == "to" else (i8, boundary[dst])
        with ir.InsertionPoint(module.body):
            f = func.FuncOp("conv", ([arg_ty], [res_ty]))
            block = f.add_entry_block()
        lc = LoweringContext(target=AMDTargetInfo("gfx942"), rules={}, module=None, out_module=module, num_warps=1,
                             options=None, loc=loc)
        with ir.InsertionPoint(block):
            x = block.arguments[0]
            if kind == "to":
                if x.type != src:
                    x = lc.emit("arith.bitcast", [x], src)
                r = lc.emit("arith.bitcast", [software_to_fp8(lc, x, dst)], i8)
            else:
                r = software_from_fp8(lc, lc.emit("arith.bitcast", [x], src), dst)
                if r.type != res_ty:
                    r = lc.emit("arith.bitcast", [r], res_ty)
            func.ReturnOp([r])
        convert_to_llvm(module)
        text = str(llvm_d.translate_module_to_llvmir(module.operation))
    # an f32 -> bf16 fptrunc is a call of compiler-rt's __truncsfbf2 on hosts without AVX512-BF16, which the JIT
    # cannot resolve (it crashed the process on AMD EPYC): here the f32 holds an fp8 value, exact in bf16, so its
    # top half is the bf16
    text = re.sub(r"(%\w+) = fptrunc float (%\w+) to bfloat",
                  lambda m: (f"%bf.w = bitcast float {m[2]} to i32\n  %bf.h = lshr i32 %bf.w, 16\n"
                             f"  %bf.t = trunc i32 %bf.h to i16\n  {m[1]} = bitcast i16 %bf.t to bfloat"),
                  text) if kind == "from" else text
    llvm = llvm_binding()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    # the host's own features (F16C: f16 conversions as instructions, not compiler-rt calls the JIT lacks)
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=llvm.get_host_cpu_name(),
                                                                 features=llvm.get_host_cpu_features().flatten())
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    c = {"f32": ctypes.c_float, "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16}
    ret, arg = (ctypes.c_uint8, c[str(src)]) if kind == "to" else (c[str(dst)], ctypes.c_uint8)
    fn = ctypes.CFUNCTYPE(ret, arg)(engine.get_function_address("conv"))
    return fn, engine


def _f32_sweep() -> np.ndarray:
    """f32 inputs: every fp8 value of every format, the midpoints between neighbours and one ulp either side of
    both, powers of two over the whole range, infinities, NaNs, zeros, f32 subnormals, and every 4096th bit
    pattern."""
    vals = []
    for name in FORMATS:
        v = model.fmt(name).values.astype(np.float64)
        v = np.unique(v[np.isfinite(v)])
        mids = (v[:-1] + v[1:]) / 2
        vals += [v, mids, v * 1.5, v * 0.75]
    vals.append(2.0 ** np.arange(-30, 30, 0.25))
    x = np.concatenate(vals).astype(np.float32)
    x = np.concatenate([x, -x])
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40, 3e38, -3e38, 464.0, 480.0,
                        61440.0, 57344.0, 240.0, 248.0], np.float32)
    stride = np.arange(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, special, stride])
    bits = x.view(np.uint32)
    marked = (bits & np.uint32(0x7FFFFF00)) == np.uint32(0x7FC0A500)  # the interpreter's own NaN carriers
    return np.unique(bits[~marked]).view(np.float32)


SWEEP = None


@pytest.mark.parametrize("name", FORMATS)
def test_software_f32_to_fp8_is_bit_exact(name):
    global SWEEP
    if SWEEP is None:
        SWEEP = _f32_sweep()
    fn, _engine = _jit("f32", name, "to")
    got = np.fromiter((fn(float(v)) for v in SWEEP), np.uint8, len(SWEEP))
    want = model.f32_to_fp8_bits(SWEEP, name)
    bad = np.flatnonzero(got != want)
    assert len(SWEEP) > 1_000_000
    assert not len(bad), [(float(SWEEP[i]), hex(SWEEP[i:i + 1].view(np.uint32)[0]), hex(got[i]), hex(want[i]))
                          for i in bad[:8]]
    # what the sweep covers: saturation, ties to even, the canonical NaN
    top = model.fmt(name).grid[-1]
    assert fn(float("inf")) == fn(float(top)) and fn(float("-inf")) == fn(-float(top)) | 0x80 or name.endswith("UZ")
    assert fn(float("nan")) == (0x80 if name.endswith("FNUZ") else 0x7F)


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("dst", ["f32", "f16", "bf16"])
def test_software_fp8_to_float_is_exact(name, dst):
    fn, _engine = _jit(name, dst, "from")
    got = np.array([fn(c) for c in range(256)])
    ref = model.fmt(name).values
    if dst == "f32":
        got = got.astype(np.float32)
    elif dst == "f16":
        got = got.astype(np.uint16).view(np.float16).astype(np.float32)
    else:
        got = (got.astype(np.uint32) << 16).view(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), ref[~nan].view(np.uint32))  # -0 and infinities included


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("src", ["f16", "bf16"])
def test_software_16bit_to_fp8_is_bit_exact(name, src):
    fn, _engine = _jit(src, name, "to")
    bits = np.arange(2 ** 16, dtype=np.uint32)
    x = bits.astype(np.uint16).view(np.float16).astype(np.float32) if src == "f16" else (bits << 16).view(np.float32)
    got = np.array([fn(int(b)) for b in bits], np.uint8)
    want = model.f32_to_fp8_bits(x, name)
    bad = np.flatnonzero(got != want)
    assert not len(bad), [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


# ------------------------------------------------------------------------------------------- kernels, compiled
DT = {"fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp8e4b8": tl.float8e4b8, "fp8e5b16": tl.float8e5b16,
      "fp32": tl.float32, "fp16": tl.float16, "bf16": tl.bfloat16, "fp64": tl.float64, "i32": tl.int32}


@triton.jit
def cast_k(x_ptr, y_ptr, DST: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(DST))


@triton.jit
def rtz_k(x_ptr, y_ptr):
    offs = tl.arange(0, 64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv, fp_downcast_rounding="rtz"))


@triton.jit
def arith_k(x_ptr, y_ptr, z_ptr, m_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    r = tl.where(x < y, x * y + x - y, tl.maximum(x, -y) / y)
    r = tl.minimum(tl.fma(r, x, y), r)
    tl.store(z_ptr + offs, r)
    tl.store(m_ptr + offs, x >= y)


@triton.jit
def dot_k(a_ptr, b_ptr, c_ptr, OUT: tl.constexpr):
    r = tl.arange(0, 64)
    a = tl.load(a_ptr + r[:, None] * 64 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 64 + r[None, :])
    tl.store(c_ptr + r[:, None] * 64 + r[None, :], tl.dot(a, b, out_dtype=OUT))


def _cvts(asm: str) -> set:
    return set(re.findall(r"^\s*(v_cvt\w*(?:fp8|bf8)\w*)", asm, re.M))


def _mfmas(asm: str) -> list:
    return re.findall(r"^\s*(v_mfma\w+)", asm, re.M)


#: (source, destination, arch, the fp8 conversion instructions expected: none for the software conversion)
CASTS = [
    ("fp32", "fp8e4b8", "gfx942", {"v_cvt_pk_fp8_f32"}), ("fp32", "fp8e5b16", "gfx942", {"v_cvt_pk_bf8_f32"}),
    ("fp16", "fp8e4b8", "gfx942", {"v_cvt_pk_fp8_f32"}), ("fp8e4b8", "fp32", "gfx942", {"v_cvt_pk_f32_fp8_e32"}),
    ("fp8e5b16", "bf16", "gfx942", {"v_cvt_pk_f32_bf8_e32"}),
    ("fp32", "fp8e4nv", "gfx942", set()), ("fp8e4nv", "fp32", "gfx942", set()), ("fp16", "fp8e5", "gfx942", set()),
    ("fp8e5", "fp16", "gfx942", set()), ("bf16", "fp8e4nv", "gfx942", set()), ("fp8e4nv", "fp8e5", "gfx942", set()),
    ("fp64", "fp8e4nv", "gfx942", set()), ("i32", "fp8e5", "gfx942", set()), ("fp8e4nv", "i32", "gfx942", set()),
    ("fp32", "fp8e4nv", "gfx950", {"v_cvt_scalef32_pk_fp8_f32"}), ("fp8e5", "fp32", "gfx950",
                                                                    {"v_cvt_scalef32_pk_f32_bf8"}),
    ("fp32", "fp8e4b8", "gfx950", set()), ("fp32", "fp8e4nv", "gfx90a", set()),
]


@pytest.mark.parametrize("src, dst, arch, want", CASTS)
def test_cast_compiles_with_the_arch_instructions(src, dst, arch, want):
    k = build(cast_k, {"x_ptr": f"*{src}", "y_ptr": f"*{dst}", "DST": "constexpr"}, arch, num_warps=1,
              DST=DT[dst])
    asm = k.asm["amdgcn"]
    assert _cvts(asm) == want
    if not want:  # the software conversion: integer operations, no fp8 intrinsic
        assert "llvm.amdgcn.cvt" not in k.asm["llir"]
        assert re.search(r"^\s*v_(lshrrev|lshlrev|and|or|bfe|cndmask|perm)_b(16|32)", asm, re.M)


def test_rtz_to_fp8_is_a_compilation_error():
    with pytest.raises(CompilationError) as e:
        build(rtz_k, {"x_ptr": "*fp32", "y_ptr": "*fp8e4nv"}, "gfx942", num_warps=1)
    assert "rtz" in str(e.value) and "test_fp8.py" in str(e.value)


@pytest.mark.parametrize("dt", ["fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16"])
def test_fp8_arithmetic_runs_in_f32(dt):
    k = build(arith_k, {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}", "z_ptr": f"*{dt}", "m_ptr": "*i1"}, "gfx942",
              num_warps=1)
    llir = k.asm["llir"]
    for op in ("fadd float", "fmul float", "fdiv float", "fcmp olt float", "fcmp oge float"):
        assert op in llir, op
    assert re.search(r"call float @llvm\.(fma|fmuladd)\.f32", llir)
    assert re.search(r"call float @llvm\.(maximum|maxnum)\.f32", llir)
    assert re.search(r"call float @llvm\.(minimum|minnum)\.f32", llir)
    fnuz = dt.endswith(("b8", "b16"))
    assert ("v_cvt_pk_fp8_f32" in k.asm["amdgcn"] or "v_cvt_pk_bf8_f32" in k.asm["amdgcn"]) == fnuz


#: (A, B, out, arch, the v_mfma, how many)
DOTS = [
    ("fp8e4nv", "fp8e4nv", "fp32", "gfx942", "v_mfma_f32_32x32x8_f16", 8),  # OCP on gfx942: upcast to f16
    ("fp8e5", "fp8e5", "fp32", "gfx942", "v_mfma_f32_32x32x8_f16", 8),
    ("fp8e4nv", "fp8e5", "fp32", "gfx942", "v_mfma_f32_32x32x8_f16", 8),
    ("fp8e5", "fp8e5", "fp16", "gfx942", "v_mfma_f32_32x32x8_f16", 8),
    ("fp8e4b8", "fp8e4b8", "fp32", "gfx942", "v_mfma_f32_32x32x16_fp8_fp8", 4),
    ("fp8e4b8", "fp8e5b16", "fp32", "gfx942", "v_mfma_f32_32x32x16_fp8_bf8", 4),
    ("fp8e4nv", "fp8e4nv", "fp32", "gfx950", "v_mfma_f32_32x32x16_fp8_fp8", 4),
    ("fp8e4nv", "fp8e5", "fp32", "gfx950", "v_mfma_f32_32x32x16_fp8_bf8", 4),
    ("fp16", "fp16", "fp16", "gfx942", "v_mfma_f32_32x32x8_f16", 8),  # f16 accumulator: f32 MFMA, rounded after
    ("fp16", "fp16", "fp16", "gfx90a", "v_mfma_f32_32x32x8f16", 8),
]


@pytest.mark.parametrize("a, b, out, arch, instr, n", DOTS)
def test_dot_on_mfma(a, b, out, arch, instr, n):
    k = build(dot_k, {"a_ptr": f"*{a}", "b_ptr": f"*{b}", "c_ptr": f"*{out}", "OUT": "constexpr"}, arch,
              num_warps=4, OUT=DT[out])
    got = _mfmas(k.asm["amdgcn"])
    # 64x64 on 4 waves (2 x 2): one 32x32 tile per wave, K 64 / the instruction's K steps
    assert set(got) == {instr} and len(got) == n
    ttgir = k.asm["ttgir"]
    assert re.search(r'"tt\.dot"[^\n]*-> tensor<64x64xf32, #ttg\.amd_mfma', ttgir)
    if out == "fp16":  # the accumulator rounded to f16 after the f32 instruction
        assert re.search(r"arith\.truncf %\w+ : tensor<64x64xf32, #ttg\.amd_mfma[^\n]* to tensor<64x64xf16", ttgir)
    if "_f16" in instr and a.startswith("fp8"):
        assert len(re.findall(r'"tt\.fp_to_fp"\(%\w+\) : \(tensor<64x64xf8\w+[^\n]*-> tensor<64x64xf16', ttgir)) == 2
