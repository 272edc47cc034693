"""Language features Triton 3.6's test_core.py found missing or different (2026-11-28 run on an H100), each checked
where it shows: the PTX / LLVM IR tritium emits for sm_90a (no GPU needed), the interpreter, the errors.

* ``tl.multiple_of`` / ``tl.max_contiguous`` / ``tl.max_constancy`` were ignored: they now set Triton's
  ``tt.divisibility`` / ``tt.contiguity`` / ``tt.constancy`` on the op defining the value (also when the call's
  result is not assigned, as in Triton), and the axis analysis vectorises by them;
* ``tl.debug_barrier`` was a no-op (a race between the threads of a program): ``bar.sync 0``;
* ``tl.assume`` was dropped: ``llvm.assume``; the interpreter reports an assumption that does not hold;
* ``maxnreg`` is the kernel's ``.maxnreg`` (ptxas' --maxrregcount capped noinline functions too);
* ``cache_modifier=".wb"`` stores are ``st.global.wb``;
* ``TRITON_DEFAULT_FP_FUSION`` is enable_fp_fusion's default;
* ``num_warps`` not a power of 2 is an AssertionError (as Triton) and a ValueError;
* a pointer and a const pointer are different types: branches that yield one or the other are Triton's errors.
"""
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, GPUTarget, compile
from tritium.errors import CompilationError, DeviceAssertionError, OptionError

CUDA = GPUTarget("cuda", 90, 32)


def _cuda(fn, signature, constexprs=None, **options):
    """Compiled for sm_90a to PTX, pointer parameters 16-byte aligned (what a launch with torch tensors gives)."""
    pytest.importorskip("llvmlite")
    attrs = {n: {"tt.divisibility": 16} for n, t in signature.items() if t.startswith("*")}
    return compile(ASTSource(fn, signature, constexprs or {}, attrs), target=CUDA, options=options or None,
                   until="ptx")


@triton.jit
def hinted_copy(dst, src, off, BLOCK: tl.constexpr, HINT: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + tl.load(off)
    if HINT:
        tl.max_contiguous(tl.multiple_of(offsets, 1024), 1024)  # not assigned: a hint on offsets itself
    tl.store(dst + offsets, tl.load(src + offsets))


@pytest.mark.parametrize("hint", [False, True])
def test_hints_vectorise(hint):
    k = _cuda(hinted_copy, {"dst": "*fp32", "src": "*fp32", "off": "*i32"}, {"BLOCK": 1024, "HINT": hint})
    assert ("tt.divisibility = array<i32: 1024>" in k.asm["ttir"]) == hint
    assert ("ld.global.v4.b32" in k.asm["ptx"]) == hint
    assert ("st.global.v4.b32" in k.asm["ptx"]) == hint


def test_hinted_kernel_runs_on_the_interpreter():
    src = np.random.default_rng(1).random(2048).astype(np.float32)
    dst = np.zeros_like(src)
    hinted_copy[(2,)](dst, src, np.zeros(1, np.int32), BLOCK=1024, HINT=True)
    np.testing.assert_array_equal(dst, src)


@triton.jit
def assume_kernel(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    current_size = N - tl.program_id(0) * BLOCK_N
    tl.assume(current_size >= BLOCK_N)
    if current_size >= 128:
        tl.store(out_ptr + tl.program_id(0), current_size)
    else:
        tl.store(out_ptr + tl.program_id(0), current_size + 101024)


def test_assume_is_llvm_assume():
    k = _cuda(assume_kernel, {"out_ptr": "*fp32"}, {"N": 1024, "BLOCK_N": 128})
    assert "llvm.assume" in k.asm["llir"]
    assert "101024" not in k.asm["ptx"]  # the branch the assumption rules out is gone


def test_assume_checked_on_the_interpreter():
    out = np.zeros(8, np.float32)
    assume_kernel[(8,)](out, N=1024, BLOCK_N=128)
    np.testing.assert_array_equal(out, 1024 - 128 * np.arange(8))
    with pytest.raises(DeviceAssertionError, match=r"(?s)assumed condition does not hold.*tl.assume.*program \(8"):
        assume_kernel[(9,)](np.zeros(9, np.float32), N=1024, BLOCK_N=128)


@triton.jit
def barrier_kernel(X, Y, BLOCK: tl.constexpr):
    # every thread writes its elements, then reads its neighbours' (written by other threads): needs the barrier
    o = tl.arange(0, BLOCK)
    tl.store(Y + o, tl.load(X + o) * 2)
    tl.debug_barrier()
    tl.store(Y + BLOCK + o, tl.load(Y + (o + 1) % BLOCK))


def test_debug_barrier_is_a_cta_barrier():
    k = _cuda(barrier_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 256})
    assert re.search(r"bar\.sync\s+0", k.asm["ptx"])
    x = np.random.default_rng(2).random(256).astype(np.float32)
    y = np.zeros(512, np.float32)
    barrier_kernel[(1,)](x, y, BLOCK=256)
    np.testing.assert_array_equal(y[256:], np.roll(x * 2, -1))


@triton.jit
def two_calls(X):
    tl.store(X, 0)


def test_maxnreg_on_the_entry():
    k = _cuda(two_calls, {"X": "*i32"}, maxnreg=42)
    assert re.search(r"\.entry [^{;]*\.maxnreg 42", k.asm["ptx"])


@triton.jit
def store_cache(dst, src, CACHE: tl.constexpr):
    o = tl.arange(0, 128)
    tl.store(dst + o, tl.load(src + o), cache_modifier=CACHE)


@pytest.mark.parametrize("cache", ["", ".wb", ".cg", ".cs", ".wt"])
def test_store_cache_modifiers(cache):
    k = _cuda(store_cache, {"dst": "*fp32", "src": "*fp32"}, {"CACHE": cache})
    stores = re.findall(r"st\.global[.\w]*", k.asm["ptx"])
    assert stores and all(s.startswith(f"st.global{cache}.") or (not cache and s.count(".") == 2) for s in stores), \
        stores


@triton.jit
def mul_add(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.load(ptrs) * 1.5 + 1.0)


@pytest.mark.parametrize("env,option,fused", [(None, None, True), ("0", None, False), ("1", None, True),
                                              ("0", True, True), ("1", False, False)])
def test_fp_fusion_default_from_the_environment(monkeypatch, env, option, fused):
    if env is None:
        monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    else:
        monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", env)
    opts = {} if option is None else {"enable_fp_fusion": option}
    k = _cuda(mul_add, {"data": "*fp32"}, **opts)
    assert (re.search(r"(mad|fma)\.r[nzmp]\.(ftz\.)?f32", k.asm["ptx"]) is not None) == fused


def test_num_warps_not_a_power_of_two():
    @triton.jit
    def k(dst):
        pass

    for exc in (AssertionError, ValueError, OptionError):
        with pytest.raises(exc, match="must be a power of 2"):
            k[(1,)](np.zeros(1, np.float32), num_warps=3)
    k[(1,)](np.zeros(1, np.float32), num_warps=2)


@triton.jit
def pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@triton.jit
def const_call(out, c_out: tl.const, choose):
    tl.store(pick(out, c_out, choose), 1.0)


@triton.jit
def const_ternary(out, c_out: tl.const, choose):
    tl.store(c_out if choose else out, 1.0)


@triton.jit
def const_if(out, c_out: tl.const, choose):
    if choose:
        final_out = c_out
    else:
        final_out = out
    tl.store(final_out, 1.0)


@pytest.mark.parametrize("kernel,message", [
    (const_call, "Inconsistent return types"),
    (const_ternary, "Ternary expression with dynamic condition has inconsistent type"),
    (const_if, "Mismatched type for final_out"),
])
def test_pointer_and_const_pointer_do_not_merge(kernel, message):
    with pytest.raises(CompilationError, match=message):
        compile(ASTSource(kernel, {"out": "*fp32", "c_out": "*kfp32", "choose": "i1"}), target="interpreter")


@triton.jit
def unrolled_atomics(dst, UF: tl.constexpr):
    pid = tl.program_id(axis=0)
    for i in tl.range(0, 10, loop_unroll_factor=UF):
        tl.atomic_add(dst + pid, i + pid)


@triton.jit
def unrolled_branchy(dst, src, n, UF: tl.constexpr):
    acc = 0.0
    for i in tl.range(1, n, 3, loop_unroll_factor=UF):
        x = tl.load(src + i)
        if x > 0:
            acc += x * i
        else:
            acc -= 1.0
    tl.store(dst, acc)


@pytest.mark.parametrize("uf", [1, 2, 4, 5, 8])
def test_loop_unroll_factor(uf):
    """``tl.range(loop_unroll_factor=k)``: k copies of the body per trip of the main loop, then a remainder loop of
    the trips left (Triton's TTIR LoopUnroll; it used to be dropped)."""
    d = np.zeros(1, np.float32)
    h = unrolled_atomics[(1,)](d, uf)
    assert h.asm["ttir"].count("tt.atomic_rmw") == uf + (uf > 1 and 10 % uf != 0)
    assert d[0] == 45
    for n in (0, 1, 2, 5, 13, 31):  # trip counts 0 .. 10, a run-time bound
        src = np.random.default_rng(n).standard_normal(40).astype(np.float32)
        out = np.zeros(1, np.float32)
        unrolled_branchy[(1,)](out, src, n, UF=uf)
        ref = 0.0
        for i in range(1, n, 3):
            ref = ref + float(src[i]) * i if src[i] > 0 else ref - 1.0
        assert abs(float(out[0]) - ref) < 1e-4, (n, out, ref)
    _cuda(unrolled_branchy, {"dst": "*fp32", "src": "*fp32", "n": "i32"}, {"UF": uf})


@pytest.mark.parametrize("how", ["option", "env"])
@pytest.mark.parametrize("arch", ["sm80", "sm_90a", 89])
def test_arch_option_retargets(monkeypatch, how, arch):
    """``arch=`` (a CUDA option) or ``TRITON_OVERRIDE_ARCH`` generates the kernel for that arch, as in Triton: its
    TTGIR says ``cuda:<arch>`` (and the dots are that arch's), while the PTX and the cubin stay the target's (the
    device's), so the kernel runs there."""
    pytest.importorskip("llvmlite")
    sig = {"data": "*fp32"}
    attrs = {"data": {"tt.divisibility": 16}}
    if how == "env":
        monkeypatch.setenv("TRITON_OVERRIDE_ARCH", str(arch))
        opts = None
    else:
        opts = {"arch": str(arch)}
    k = compile(ASTSource(mul_add, sig, {}, attrs), target=CUDA, options=opts, until="ptx")
    n = int(str(arch).lower().removeprefix("sm_").removeprefix("sm").removesuffix("a"))
    assert re.search(rf"cuda:{n}\b", k.asm["ttgir"])
    assert ".target sm_90a" in k.asm["ptx"]
    assert k.metadata["target"]["arch"] == 90


@triton.jit
def licm_loops(dst, src, n, NO_LICM: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, disable_licm=NO_LICM):
        acc += tl.load(src + o) * i
    j = 0
    while tl.condition(j < n, disable_licm=NO_LICM):
        acc += 1.0
        j += 1
    tl.store(dst + o, acc)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
@pytest.mark.parametrize("no_licm", [False, True])
def test_disable_licm_reaches_llvm(target, no_licm):
    """``tl.range(disable_licm=True)`` / ``tl.condition(c, disable_licm=True)``: LLVM loop metadata
    ``llvm.licm.disable`` on both loops' back edges (Triton's ``llvm.loop_annotation``), none without it; the values
    are the same either way."""
    pytest.importorskip("llvmlite")
    k = compile(ASTSource(licm_loops, {"dst": "*fp32", "src": "*fp32", "n": "i32"}, {"NO_LICM": no_licm, "BLOCK": 64}),
                target=target, until="llir")
    llir = k.asm["llir"]
    assert llir.count(", !llvm.loop !") == (2 if no_licm else 0)
    assert ('!{!"llvm.licm.disable"}' in llir) == no_licm
    src, dst = np.random.randn(64).astype(np.float32), np.empty(64, np.float32)
    licm_loops[(1,)](dst, src, 5, NO_LICM=no_licm, BLOCK=64)
    np.testing.assert_allclose(dst, src * 10 + 5, rtol=1e-5, atol=1e-5)


@triton.jit
def e4b15_roundtrip(bits_in, f32_out, f32_in, bits_out, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(f32_out + o, tl.load(bits_in + o).to(tl.float32))  # e4b15 -> f32
    tl.store(bits_out + o, tl.load(f32_in + o).to(tl.float8e4b15))  # f32 -> e4b15


def test_float8e4b15_on_the_interpreter():
    """``tl.float8e4b15`` (Triton's pre-Hopper fp8: the top byte of an fp16 whose exponent is below 16, so every
    pattern is a number in [-1.875, 1.875]): each of the 256 patterns converts to the fp16 it stands for, and fp32
    values round to the nearest pattern (ties to even), saturating beyond 1.875 (infinities too)."""
    from tritium.runtime.jit import reinterpret

    bits = np.arange(256, dtype=np.uint8)
    as_f16 = (((bits.astype(np.uint16) & 0x80) << 8) | ((bits.astype(np.uint16) & 0x7F) << 7)).view(np.float16)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-2.5, 2.5, 200), rng.uniform(-0.01, 0.01, 50), [np.inf, -np.inf, 1.875, -1.9,
                                                                                   0.0, -0.0]]).astype(np.float32)
    x = np.resize(x, 256)
    f32_out, bits_out = np.empty(256, np.float32), np.empty(256, np.uint8)
    e4b15_roundtrip[(1,)](reinterpret(bits, tl.float8e4b15), f32_out, x, reinterpret(bits_out, tl.float8e4b15), N=256)
    np.testing.assert_array_equal(f32_out, as_f16.astype(np.float32))
    grid = as_f16[:128].astype(np.float64)  # the non-negative values, in order
    a = np.minimum(np.abs(x).astype(np.float64), 1.875)
    d = np.abs(grid[None, :] - a[:, None])
    best = d.min(1, keepdims=True)
    cands = [np.flatnonzero(row == m) for row, m in zip(d, best[:, 0])]
    ref = np.array([c[0] if len(c) == 1 else c[c % 2 == 0][0] for c in cands], np.uint8)  # ties to the even code
    ref |= np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    np.testing.assert_array_equal(bits_out, ref)


def test_float8e4b15_on_cuda_names_the_line():
    with pytest.raises(CompilationError, match=r"float8e4b15 is not supported on CUDA") as e:
        _cuda(e4b15_roundtrip, {"bits_in": "*fp8e4b15", "f32_out": "*fp32", "f32_in": "*fp32", "bits_out": "*fp8e4b15"},
              {"N": 64})
    assert e.value.lineno is not None


@triton.jit
def _plus_one_if(x, flag):
    if flag:
        return x + 1


@triton.jit
def returns_on_one_path(X, Z, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(Z + o, _plus_one_if(x, tl.load(X) > -1e30))


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_falling_off_a_function_is_poison(target):
    """A function that returns a value on one path and falls off its end on another: the other path's value is
    ``ub.poison`` (Triton's), LLVM's ``poison`` in the LLVM IR; the path taken gives its value."""
    pytest.importorskip("llvmlite")
    k = compile(ASTSource(returns_on_one_path, {"X": "*fp32", "Z": "*fp32"}, {"N": 64}), target=target, until="llir")
    assert '"ub.poison"' in k.asm["ttir"] or "ub.poison" in k.asm["ttir"]
    assert "poison" in k.asm["llir"]
    x, z = np.random.randn(64).astype(np.float32), np.empty(64, np.float32)
    returns_on_one_path[(1,)](x, z, N=64)
    np.testing.assert_allclose(z, x + 1, rtol=1e-6)


@triton.jit
def mul_broadcast_matmul(Z, X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                         BN: tl.constexpr, BK: tl.constexpr):
    """A matrix product written as a broadcast multiply and a sum over K (Triton's test_dot_mulbroadcasted)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(X + rm[:, None] * K + rk[None, :])
        y = tl.load(Y + rk[:, None] * N + rn[None, :])
        acc += tl.sum(x[:, :, None] * y[None, :, :], axis=1)
    tl.store(Z + rm[:, None] * N + rn[None, :], acc)


MUL_BROADCAST_SIG = {"Z": "*fp32", "X": "*fp32", "Y": "*fp32"}


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80", "hip:gfx942"])
@pytest.mark.parametrize("bk,is_dot", [(32, True), (16, True), (8, False)])
def test_broadcast_multiply_sum_is_a_dot(target, bk, is_dot):
    """``tl.sum(a[:, :, None] * b[None, :, :], 1)`` of fp32 [M, K] x [K, N] tiles with M, N, K >= 16 is a ``tt.dot``
    (tf32, Triton's default for fp32 dots, as Triton's combine pass does it); with K = 8 it stays a reduction."""
    k = compile(ASTSource(mul_broadcast_matmul, MUL_BROADCAST_SIG, dict(M=64, N=64, K=64, BM=32, BN=32, BK=bk)),
                target=target, until="ttir")
    ttir = k.asm["ttir"]
    assert ('"tt.dot"' in ttir) == is_dot and ('"tt.reduce"' in ttir) == (not is_dot)


def test_broadcast_multiply_sum_values_on_the_interpreter():
    rng = np.random.default_rng(3)
    m, n, kk = 64, 48, 96
    x = rng.standard_normal((m, kk)).astype(np.float32)
    y = rng.standard_normal((kk, n)).astype(np.float32)
    z = np.empty((m, n), np.float32)
    mul_broadcast_matmul[(m // 32, n // 16)](z, x, y, M=m, N=n, K=kk, BM=32, BN=16, BK=32)
    np.testing.assert_allclose(z, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


@triton.jit
def asserting(X, LIMIT: tl.constexpr, STATIC_OK: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.device_assert(x < LIMIT, "x must stay below LIMIT")
    tl.device_assert(STATIC_OK, "the static condition")


@pytest.mark.parametrize("how", ["none", "option", "option_off", "jit", "env", "env_and_option_off"])
def test_device_assert_is_checked_only_with_debug(monkeypatch, how):
    """``tl.device_assert`` as in Triton 3.6: compiled in only with ``debug`` (the launch option, ``@jit(debug=True)``
    or ``TRITON_DEBUG=1``, which wins over ``debug=False``); a compile-time false condition then fails at launch.
    It used to fire on the interpreter by default and leave ``__assertfail`` in every PTX."""
    monkeypatch.setenv("TRITON_DEBUG", "1" if how.startswith("env") else "0")
    # a JITFunction of its own per case (as Triton's test_device_assert): TRITON_DEBUG is read when a kernel compiles
    fn = triton.jit(asserting.fn, debug=True if how == "jit" else None)
    kw = {"option": dict(debug=True), "option_off": dict(debug=False), "env_and_option_off": dict(debug=False)}.get(
        how, {})
    on = how in ("option", "jit", "env", "env_and_option_off")
    x = np.arange(16, dtype=np.float32)
    fn[(1,)](x, LIMIT=100.0, STATIC_OK=True, N=16, **kw)  # holds: no error either way
    for limit, static_ok in ((5.0, True), (100.0, False)):
        if on:
            with pytest.raises(DeviceAssertionError, match="x must stay below LIMIT|the static condition"):
                fn[(1,)](x, LIMIT=limit, STATIC_OK=static_ok, N=16, **kw)
        else:
            fn[(1,)](x, LIMIT=limit, STATIC_OK=static_ok, N=16, **kw)


@pytest.mark.parametrize("debug", [False, True])
def test_device_assert_in_the_ptx_only_with_debug(debug):
    k = _cuda(asserting, {"X": "*fp32"}, {"LIMIT": 5.0, "STATIC_OK": True, "N": 64}, debug=debug)
    assert ("__assertfail" in k.asm["ptx"]) == debug
