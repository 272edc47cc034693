"""Compile-only tests (no GPU) of tl.histogram, tl.gather, tl.inline_asm_elementwise and tl.extra.cuda.libdevice:
each kernel of tests/nvidia/extra_ops_kernels.py goes to PTX and a cubin for cuda:90; the inline asm text appears
in the PTX; libdevice calls are linked (no unresolved __nv_ symbol remains)."""
import re

import pytest

from tests.nvidia import extra_ops_kernels as K
from tritium.compiler import ASTSource, compile
from tritium.language.extra.cuda.libdevice import VARIANTS

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")


def _has_ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path() is not None


def build(fn, sig, num_warps=4, **ce):
    k = compile(ASTSource(fn, sig, constexprs=ce), target="cuda:90", options={"num_warps": num_warps},
                until=None if _has_ptxas() else "ptx")
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx and f".entry {k.metadata['name']}" in ptx
    assert not re.search(r"__nv_\w+", ptx), re.findall(r"__nv_\w+", ptx)[:5]  # libdevice resolved
    if _has_ptxas():
        assert k.asm["cubin"][:4] == b"\x7fELF"
    return k


@pytest.mark.parametrize("block,bins,masked,num_warps,xt", [(128, 16, True, 4, "*i32"), (1024, 256, True, 4, "*u32"),
                                                            (256, 64, False, 8, "*i32"), (64, 512, True, 1, "*i32")])
def test_histogram(block, bins, masked, num_warps, xt):
    k = build(K.histogram_k, {"X": xt, "O": "*i32", "n": "i32"}, num_warps, BLOCK=block, BINS=bins, MASKED=masked)
    assert "atom.shared.add" in k.asm["ptx"] or "red.shared.add" in k.asm["ptx"]


@pytest.mark.parametrize("n,kk,st,it", [(16, 16, "*fp32", "*i32"), (64, 8, "*fp16", "*i64"), (8, 128, "*i32", "*i32")])
def test_gather_1d(n, kk, st, it):
    build(K.gather_1d, {"S": st, "I": it, "O": st}, N=n, K=kk)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("m,n,other", [(8, 16, 4), (32, 8, 64)])
def test_gather_2d(m, n, other, axis):
    ishape = (other, n) if axis % 2 == 0 else (m, other)
    build(K.gather_2d, {"S": "*fp32", "I": "*i32", "O": "*fp32"}, M=m, N=n, IM=ishape[0], IN=ishape[1], AXIS=axis)


def test_inline_asm_in_ptx():
    k = build(K.asm_shift, {"X": "*i32", "O": "*i32", "n": "i32"}, BLOCK=256)
    assert "shl.b32" in k.asm["ptx"]
    k = build(K.asm_two_results, {"X": "*i32", "Y": "*i32", "O1": "*i32", "O2": "*fp32", "M": "i32", "N": "i32"},
              BM=16, BN=32)
    ptx = k.asm["ptx"]
    assert "add.s32" in ptx and "cvt.rn.f32.s32" in ptx and "0f3F000000" in ptx
    k = build(K.asm_packed_u8, {"X": "*u8", "O": "*i32", "n": "i32"}, BLOCK=512)
    assert "cvt.u32.u8" in k.asm["ptx"]


_NP_ARGS = {"fp32": "*fp32", "fp64": "*fp64", "int32": "*i32", "uint32": "*u32", "int64": "*i64", "uint64": "*u64"}
# every variant of every function, grouped by signature: one kernel per (argument dtypes, result dtype)
_GROUPS = {}
for _name, _vs in VARIANTS.items():
    for _args, (_sym, _ret) in _vs.items():
        _GROUPS.setdefault((_args, _ret), []).append((_name, _sym))
_SIGS = sorted(_GROUPS)


@pytest.mark.parametrize("args,ret", _SIGS, ids=[f"{'_'.join(a)}-{r}" for a, r in _SIGS])
def test_libdevice_resolves(args, ret):
    """Every libdevice variant compiles and links: no __nv_ symbol left unresolved in the PTX."""
    names = tuple(n for n, _ in _GROUPS[(args, ret)])
    pad = list(args) + [args[0]] * (4 - len(args))
    sig = {p: _NP_ARGS[a] for p, a in zip(("X", "Y", "Z", "W"), pad)}
    sig.update({"O": _NP_ARGS[ret], "n": "i32"})
    k = build(K.ld_many, sig, NAMES=names, NARGS=len(args), BLOCK=128)
    for _n, sym in _GROUPS[(args, ret)]:
        assert f'symbol = "{sym}"' in k.asm["ttir"]


def test_libdevice_broadcast_both_paths():
    k = build(K.ld_outer, {"X": "*fp32", "Y": "*fp32", "O": "*fp32", "M": "i32", "N": "i32"}, BM=32, BN=64)
    for sym in ("__nv_atan2f", "__nv_expf"):
        assert sym in k.asm["ttir"]
