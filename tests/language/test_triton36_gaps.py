"""What Triton 3.6.0's own test_core.py (the v3.6.0 file itself, first run whole on an H200 on 2026-11-28, seventh
session) found different, checked here without a GPU: the interpreter, the PTX / TTGIR tritium emits for sm_90a,
the errors.

* a compile error's ``__cause__`` is the exception it was raised from, as in Triton (whose tests read
  ``str(e.__cause__)``), shown without tritium's frames;
* ``triton.knobs`` groups are Triton's ``base_knobs`` (``knob_descriptors``, ``copy``, ``reset``, ``scope``),
  which Triton's test fixtures use; ``knobs.runtime.override_arch``;
* a constexpr's ``.type`` is ``constexpr_type(value)``, an assigned number's its dtype; ``tl.constexpr_type``
  is callable in a kernel;
* a callable (a ``tl`` builtin, a Python function) passed as a constexpr, keyed in the cache by its code;
* an assigned value (``a = False``) that chooses between returns does so at run time: ``ub.poison`` where the
  function falls off its end, also for a number returned on the other path;
* ``tl.trans(x)`` of rank > 2 swaps the last two dims; ``tl.dot`` of rank > 3 (several batch dims);
* fp64 dots accumulate in fp64 whatever ``out_dtype`` (Triton's rule), on ``mma.sync m16n8k8 .f64`` on sm_90;
* ``tl.assume`` is ``llvm.intr.assume`` in the TTGIR; ``num_ctas > 1`` before sm_90 is Triton's ValueError;
* f32 ``exp2``'s fast path flushes denormals only under ``enable_reflect_ftz`` (as libdevice's exp2f).
"""
import os
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import knobs
from tritium.compiler import ASTSource, GPUTarget, compile
from tritium.errors import CompilationError

CUDA = GPUTarget("cuda", 90, 32)


def _cuda(fn, signature, constexprs=None, until="ptx", **options):
    pytest.importorskip("llvmlite")
    attrs = {n: {"tt.divisibility": 16} for n, t in signature.items() if t.startswith("*")}
    return compile(ASTSource(fn, signature, constexprs or {}, attrs), target=CUDA, options=options or None,
                   until=until)


# ------------------------------------------------------------------------------------------------ errors
@triton.jit
def bad_axis(dst):
    tl.program_id(20)


@triton.jit
def bad_expand(dst, N: tl.constexpr):
    tl.expand_dims(tl.arange(0, N), -3)


@pytest.mark.parametrize("kernel,args,msg", [
    (bad_axis, (), "program_id axis must be 0, 1, or 2 but got 20"),
    (bad_expand, (32,), "invalid axis -3"),
])
def test_compile_error_cause_is_the_semantic_error(kernel, args, msg):
    with pytest.raises(triton.TritonError) as e:
        kernel[(1,)](np.zeros(4, np.float32), *args)
    assert isinstance(e.value, CompilationError)
    assert msg in str(e.value.__cause__) and msg in str(e.value)
    assert e.value.__cause__.__traceback__ is None  # shown as its message, not tritium's frames
    assert e.value.internal_cause.__traceback__ is not None  # kept whole


def test_num_ctas_before_hopper_is_refused():
    @triton.jit
    def k(src):
        pass

    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        _cuda(k, {"src": "*fp32"}, num_ctas=2, arch="sm80")
    # AMD keeps running num_ctas > 1 as one CTA a program (Triton 3.6 refuses it before gfx1250)
    compile(ASTSource(k, {"src": "*fp32"}), target=GPUTarget("hip", "gfx942", 64), options={"num_ctas": 2},
            until="ttir")


# ------------------------------------------------------------------------------------------------ knobs
def test_knob_groups_are_base_knobs():
    groups = {n: g for n, g in vars(knobs).items() if isinstance(g, knobs.base_knobs)}
    assert {"runtime", "cache", "compilation", "language", "nvidia"} <= set(groups)
    desc = knobs.runtime.knob_descriptors
    assert desc["interpret"].key == "TRITON_INTERPRET" and desc["override_arch"].key == "TRITON_OVERRIDE_ARCH"
    assert knobs.propagate_env is True


def test_knob_scope_and_reset_restore(monkeypatch):
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    with knobs.language.scope():
        knobs.language.default_fp_fusion = True
        assert os.environ["TRITON_DEFAULT_FP_FUSION"] == "1"
    assert os.environ["TRITON_DEFAULT_FP_FUSION"] == "0" and knobs.language.default_fp_fusion is False
    knobs.language.default_fp_fusion = True  # reset(): back to what the environment said before
    fresh = knobs.language.copy().reset()
    assert os.environ["TRITON_DEFAULT_FP_FUSION"] == "0" and fresh.default_fp_fusion is False
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION")
    knobs.language.default_fp_fusion = False
    assert knobs.language.copy().reset().default_fp_fusion is True and "TRITON_DEFAULT_FP_FUSION" not in os.environ

    def hook(*a):
        pass

    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook = hook
        assert knobs.runtime.launch_enter_hook is hook
    assert knobs.runtime.launch_enter_hook is None


def test_override_arch_knob(monkeypatch):
    monkeypatch.delenv("TRITON_OVERRIDE_ARCH", raising=False)
    knobs.runtime.override_arch = "sm80"
    try:
        assert os.environ["TRITON_OVERRIDE_ARCH"] == "sm80"

        @triton.jit
        def k(x):
            tl.store(x, tl.load(x) * 1.5 + 1.0)

        ttgir = _cuda(k, {"x": "*fp32"}, until="ttgir").asm["ttgir"]
        assert re.search(r"cuda:(\d+)", ttgir).group(1) == "80"
    finally:
        knobs.runtime.override_arch = None
    assert "TRITON_OVERRIDE_ARCH" not in os.environ


# ------------------------------------------------------------------------------------------------ constexprs
@triton.jit
def typed_values(out, LIT: tl.constexpr, TY: tl.constexpr):
    named: tl.constexpr = LIT
    tl.static_assert(named.type == tl.constexpr_type(LIT))
    tl.static_assert(LIT.type == tl.constexpr_type(LIT))
    if TY is not None:
        assigned = LIT  # a scalar tensor in Triton: its type is a dtype
        tl.static_assert(assigned.type == TY)
    tl.store(out, 1)


@pytest.mark.parametrize("lit,ty", [(10, tl.int32), (32.1, tl.float32), (2**40, tl.int64), ((5, 6, 7), None)])
def test_constexpr_type(lit, ty):
    out = np.zeros(1, np.int32)
    typed_values[(1,)](out, lit, ty)
    assert out[0] == 1
    _cuda(typed_values, {"out": "*i32"}, {"LIT": lit, "TY": ty}, until="ttir")


@triton.jit
def apply_fn(X, Y, N: tl.constexpr, fn: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(Y + tl.arange(0, N), fn(x, x * 0.5))


@triton.jit
def jit_fn(a, b):
    return a * b + 1.0


@pytest.mark.parametrize("fn,ref", [(tl.maximum, np.maximum), (tl.minimum, np.minimum),
                                    (jit_fn, lambda a, b: a * b + 1.0)])
def test_callable_constexpr(fn, ref):
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    y = np.empty_like(x)
    apply_fn[(1,)](x, y, 64, fn)
    np.testing.assert_allclose(y, ref(x, x * 0.5), rtol=1e-6)


def test_callable_constexpr_globaltimer_ptx():
    @triton.jit
    def k(Out, func: tl.constexpr):
        start = func()
        tl.store(Out, start)
        tl.store(Out + 1, func())

    ptx = _cuda(k, {"Out": "*i64"}, {"func": tl.extra.cuda.globaltimer}).asm["ptx"]
    assert ptx.count("%globaltimer") == 2


def test_function_constexpr_cache_key_is_its_code():
    from tritium.compiler.compiler import _value_key

    def make(c):
        def f(a):
            return a + c
        return f

    k1, k2, k3 = _value_key(make(1)), _value_key(make(1)), _value_key(make(2))
    assert k1 == k2 != k3 and "0x" not in k1  # by code and closure, never by address
    assert _value_key(tl.maximum).startswith("function:tritium.")


# ------------------------------------------------------------------------------------------------ poison
@triton.jit
def return_poison(x):
    a = False
    if a:
        return x


def test_poison_return_of_a_number():
    @triton.jit
    def k(Out):
        tl.store(Out, return_poison(0))

    h = _cuda(k, {"Out": "*i32"})
    assert "ub.poison" in h.asm["ttir"] and "poison" in h.asm["llir"]
    k[(1,)](np.zeros(1, np.int32))  # the interpreter runs it (the stored value is undefined)


# ------------------------------------------------------------------------------------------------ dots
@triton.jit
def multidim_dot(X, Y, Z, RANK: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr):
    x = tl.load(X + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    y = tl.load(Y + tl.arange(0, 256 << RANK)).reshape([2] * (RANK - 2) + [32, 32])
    if TRANS_A:
        x = tl.trans(x)
    if TRANS_B:
        y = tl.trans(y)
    z = tl.dot(x, y, input_precision="ieee")
    tl.store(Z + tl.arange(0, 256 << RANK), z.reshape([256 << RANK]))


@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_of_rank_above_3_and_trans_of_batches(rank, ta, tb):
    shape = (2,) * (rank - 2) + (32, 32)
    rng = np.random.default_rng(rank)
    a = rng.integers(-4, 5, shape).astype(np.float32)
    b = rng.integers(-4, 5, shape).astype(np.float32)
    c = np.empty(shape, np.float32)
    multidim_dot[(1,)](a, b, c, rank, ta, tb)
    ra = np.swapaxes(a, -1, -2) if ta else a
    rb = np.swapaxes(b, -1, -2) if tb else b
    np.testing.assert_array_equal(c, ra @ rb)


def test_dot_of_rank_above_3_compiles_for_cuda():
    h = _cuda(multidim_dot, {"X": "*bf16", "Y": "*bf16", "Z": "*fp32"}, {"RANK": 5, "TRANS_A": True, "TRANS_B": False})
    assert "mma.sync" in h.asm["ptx"]


@triton.jit
def dot3d_f64(Q, K, O, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    q = tl.load(Q + b * M * D + tl.arange(0, M)[None, :, None] * D + tl.arange(0, D)[None, None, :])
    k = tl.load(K + b * D * N + tl.arange(0, D)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    o = tl.dot(q, k)  # out_dtype's default is fp32: an fp64 dot is fp64 all the same
    tl.static_assert(o.dtype == tl.float64)
    tl.store(O + b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], o)


def test_fp64_dot_accumulates_in_fp64():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 16, 32)), rng.standard_normal((2, 32, 16))
    q[0, 0, 0] = 1e8  # an fp32 accumulator would lose the small products next to it
    o = np.empty((2, 16, 16))
    dot3d_f64[(1,)](q, k, o, 2, 16, 16, 32)
    np.testing.assert_allclose(o, q @ k, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("warps", [1, 4])
def test_fp64_dot_on_hopper_tensor_cores(warps):
    h = _cuda(dot3d_f64, {"Q": "*fp64", "K": "*fp64", "O": "*fp64"}, {"B": 4, "M": 32, "N": 32, "D": 64},
              num_warps=warps)
    ptx = h.asm["ptx"]
    # 4 x (32/16) x (32/8) x (64/8) instructions shared among the warps, FMA none
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64") == 4 * 2 * 4 * 8 // warps
    assert "fma.rn.f64" not in ptx
    sm80 = compile(ASTSource(dot3d_f64, {"Q": "*fp64", "K": "*fp64", "O": "*fp64"},
                             {"B": 1, "M": 16, "N": 16, "D": 16}), target=GPUTarget("cuda", 80, 32),
                   until="ptx").asm["ptx"]
    assert "mma.sync" not in sm80 and "fma.rn.f64" in sm80  # Ampere has m8n8k4 only: FMA there


# ------------------------------------------------------------------------------------------------ assume
def test_assume_is_llvm_assume_in_the_ttgir():
    @triton.jit
    def k(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
        size = N - tl.program_id(0) * BLOCK_N
        tl.assume(size >= BLOCK_N)
        tl.store(out_ptr + tl.program_id(0), size)

    h = _cuda(k, {"out_ptr": "*i32"}, {"N": 1024, "BLOCK_N": 128}, until="llir")
    assert "tt.assume" in h.asm["ttir"] and "llvm.intr.assume" in h.asm["ttgir"] and "llvm.assume" in h.asm["llir"]


@pytest.mark.parametrize("ftz", [False, True])
def test_exp2_follows_enable_reflect_ftz(ftz):
    @triton.jit
    def exp2(data):
        ptrs = data + tl.arange(0, 128)
        tl.store(ptrs, tl.math.exp2(tl.load(ptrs)))

    ptx = _cuda(exp2, {"data": "*fp32"}, enable_reflect_ftz=ftz).asm["ptx"]
    assert ("ex2.approx.ftz.f32" in ptx) == ftz and "ex2.approx" in ptx
