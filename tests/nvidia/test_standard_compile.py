"""Compile-only tests (no GPU) of tl.standard (flip, sort, topk, bitonic_merge, swizzle2d, reduce_or, to_tensor,
add/sub/mul, condition) for the cuda backend: the interpreter kernels of tests/language/test_standard.py go
TTIR -> TTGIR -> LLVM -> PTX for sm_90a, and to a cubin when ptxas exists, for several dtypes, shapes and warp
counts (the size-2 hypercube axes land in registers, lanes and warps)."""
import pytest

from tests.language import test_standard as S
from tritium.compiler import ASTSource, compile

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def build(fn, sig, num_warps=4, **ce):
    until = None if _has_ptxas() else "ptx"
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", options={"num_warps": num_warps}, until=until)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx and f".entry {k.metadata['name']}" in ptx
    assert len(k.metadata["arg_types"]) == len(sig)
    if _has_ptxas():
        assert k.asm["cubin"][:4] == b"\x7fELF" and k.metadata["n_regs"] > 0
    return k


def io(dt):
    return {"X": "*" + dt, "O": "*" + dt}


@pytest.mark.parametrize("dt,m,n,desc,num_warps", [("fp32", 1, 2, False, 1), ("fp16", 4, 16, True, 4),
                                                   ("i32", 8, 64, False, 4), ("fp32", 1, 1024, True, 8),
                                                   ("i8", 32, 32, False, 8), ("i64", 4, 128, True, 4),
                                                   ("u32", 2, 256, False, 2)])
def test_sort(dt, m, n, desc, num_warps):
    build(S.sort_rows, io(dt), num_warps, M=m, N=n, DESC=desc)


def test_sort_1d_and_3d():
    build(S.sort_1d, io("fp32"), 4, N=256, DESC=True)
    build(S.sort_3d, io("fp16"), 4, A=2, B=4, C=32, DESC=False)


@pytest.mark.parametrize("dt,m,n,k,num_warps", [("fp32", 4, 16, 4, 4), ("fp16", 4, 64, 1, 4), ("i32", 8, 128, 16, 8),
                                                 ("u8", 2, 32, 32, 2)])
def test_topk(dt, m, n, k, num_warps):
    build(S.topk_rows, io(dt), num_warps, M=m, N=n, K=k)


@pytest.mark.parametrize("dt,n,desc", [("fp32", 128, False), ("i32", 16, True), ("fp16", 2, False)])
def test_bitonic_merge(dt, n, desc):
    build(S.bitonic_merge_rows, io(dt), 4, M=8, N=n, DESC=desc)


@pytest.mark.parametrize("dt,n,num_warps", [("fp32", 1, 1), ("fp16", 16, 1), ("i32", 128, 4), ("i8", 2048, 8),
                                             ("u16", 64, 2), ("fp64", 256, 4)])
def test_flip_1d(dt, n, num_warps):
    build(S.flip_1d, io(dt), num_warps, N=n)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("m,n", [(4, 8), (64, 32)])
def test_flip_2d_and_3d(dim, m, n):
    build(S.flip_2d, io("fp32"), 4, M=m, N=n, DIM=dim)
    build(S.flip_3d, io("fp16"), 4, A=2, B=8, C=4, DIM=dim)


def test_swizzle2d():
    build(S.swizzle_tensor, {"OI": "*i32", "OJ": "*i32", "size_i": "i32", "size_j": "i32", "size_g": "i32"}, 4,
          SI=16, SJ=16, BI=16, BJ=16)
    build(S.swizzle_pids, {"OI": "*i32", "OJ": "*i32", "size_j": "i32"}, 1, GROUP=4)
    build(S.swizzle_constexpr, {"O": "*i32"}, 1, I=3, J=4, SI=5, SJ=7, G=2)


@pytest.mark.parametrize("dt,m,n", [("i32", 4, 8), ("i8", 64, 32), ("u16", 16, 16), ("i64", 8, 64)])
def test_reduce_or(dt, m, n):
    p = "*" + dt
    build(S.reduce_or_2d, {"X": p, "O0": p, "O1": p, "OA": p, "OK": p}, 4, M=m, N=n)


def test_small_core_functions():
    k = build(S.small_core, {"X": "*fp32", "Y": "*fp32", "O": "*fp32", "OI": "*i32", "n": "i32"}, 4,
              C=21, BIG=2 ** 40)
    assert "scf.while" in k.asm["ttir"] or "scf.while" in k.asm["ttgir"]
