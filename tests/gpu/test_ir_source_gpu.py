"""Kernels compiled from IR files in Triton's assembly (``tritium.compile("k.ttgir")``) on the GPU: layout
conversions between blocked, mma (v2, v3), dot-operand and slice layouts, directly and through swizzled shared
memory, checked element by element; Triton 3.6's TTIR of a masked add.  The generators are in
tests/dialects/test_triton_asm.py (which also compiles them for sm_90 on the CPU machine).

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import itertools

import pytest

import tritium
from tests.dialects import test_triton_asm as T

torch = pytest.importorskip("torch")
#: the TTGIR here carries NVIDIA layouts (nvidia_mma, its dot operands): CUDA only; the TTIR kernels run anywhere
NV_TTGIR = pytest.mark.cuda_only("TTGIR with NVIDIA layouts")


def cases(params: list, every: int = 8) -> list:
    """All of ``params`` on a GPU; every ``every``-th in a compile-only run (the CPU machine's check that the GPU
    tests' kernels compile, which must stay short; tests/dialects/test_triton_asm.py compiles a sample too)."""
    from tritium_nvidia.driver import compile_only

    return params[::every] if compile_only() else params


PAIRS = [(s, d) for s, d in itertools.permutations(T.LAYOUTS_2D, 2)]
CONVERT2D = [(s, d, (64, 64)) for s, d in PAIRS] + [(s, d, shape) for shape in ((128, 32), (16, 128))
                                                     for s, d in PAIRS[::4]]


@NV_TTGIR
@pytest.mark.parametrize("src,dst,shape", cases(CONVERT2D))
def test_convert2d(gpu, tmp_path, src, dst, shape):
    k = tritium.compile(T.write(tmp_path, "c.ttgir", T.convert2d_ir(*shape, T.LAYOUTS_2D[src], T.LAYOUTS_2D[dst])))
    x = torch.randn(shape, device=gpu.device).half()
    z = torch.zeros_like(x)
    k[(1, 1, 1)](x, z)
    gpu.done()
    assert torch.equal(z, x)


THROUGH_SHARED = list(itertools.product(
    [s for s in T.SHARED if s != "none"],
    [("blocked_row", "mma2"), ("mma3", "blocked_col"), ("blocked_2x2", "blocked_row"), ("mma2_tall", "mma3_wide")],
    [(64, 64), (128, 128), (64, 1), (1, 64)]))


@NV_TTGIR
@pytest.mark.parametrize("shared,pair,shape", cases(THROUGH_SHARED))
def test_convert2d_through_shared(gpu, tmp_path, shared, pair, shape):
    src, dst = pair
    k = tritium.compile(T.write(tmp_path, "c.ttgir", T.convert2d_ir(*shape, T.LAYOUTS_2D[src], T.LAYOUTS_2D[dst],
                                                                    T.SHARED[shared])))
    x = torch.randn(shape, device=gpu.device).half()
    z = torch.zeros_like(x)
    k[(1, 1, 1)](x.data_ptr(), z.data_ptr())  # raw addresses, as Triton's tests pass them
    gpu.done()
    assert torch.equal(z, x)


@NV_TTGIR
@pytest.mark.parametrize("pair", range(len(T.MMA_PAIRS)))
@pytest.mark.parametrize("shape", [(256, 256), (256, 128), (128, 256), (16, 16)])
def test_convert_mma_to_mma(gpu, tmp_path, pair, shape):
    """Both ways between mma layouts; 256 x 256 goes in rounds through scratch (more than 64 KiB in one)."""
    a, b, warps = T.MMA_PAIRS[pair]
    for src, dst in ((a, b), (b, a)):
        k = tritium.compile(T.write(tmp_path, "c.ttgir", T.convert2d_ir(*shape, src, dst, num_warps=warps)))
        x = torch.randn(shape, device=gpu.device).half()
        z = torch.zeros_like(x)
        k[(1, 1, 1)](x, z)
        gpu.done()
        assert torch.equal(z, x)


PARENTS = ["blocked_row", "blocked_col", "mma2", "mma3", "dot_a", "dot_b"]


CONVERT1D = [(src, dst, sd, dd, elem, m) for src, dst in list(itertools.product(PARENTS, repeat=2))[::3]
             for sd, dd in ((0, 1), (1, 0), (1, 1)) for elem in ("i32", "i1") for m in (64, 256)]


@NV_TTGIR
@pytest.mark.parametrize("src,dst,src_dim,dst_dim,elem,m", cases(CONVERT1D))
def test_convert1d(gpu, tmp_path, src, dst, src_dim, dst_dim, elem, m):
    k = tritium.compile(T.write(tmp_path, "c.ttgir", T.convert1d_ir(m, T.LAYOUTS_2D[src], src_dim, T.LAYOUTS_2D[dst],
                                                                    dst_dim, elem)))
    g = torch.Generator().manual_seed(m + src_dim)
    if elem == "i1":
        x = torch.randint(0, 3, (m,), generator=g, dtype=torch.int8).to(gpu.device)
        want = (x != 0).int()
    else:
        x = torch.randint(-1000, 1000, (m,), generator=g, dtype=torch.int32).to(gpu.device)
        want = x
    z = torch.full((m,), -7, dtype=torch.int32, device=gpu.device)
    k[(1, 1, 1)](x, z)
    gpu.done()
    assert torch.equal(z, want)


@pytest.mark.parametrize("n", [1000, 4096, 77])
def test_triton_ttir_add(gpu, tmp_path, n):
    k = tritium.compile(T.write(tmp_path, "add.ttir", T.ADD_TTIR))
    x, y = torch.randn(n, device=gpu.device), torch.randn(n, device=gpu.device)
    out = torch.full((n,), 7.0, device=gpu.device)
    k[((n + 127) // 128, 1, 1)](x, y, out, n)
    gpu.done()
    torch.testing.assert_close(out, 2 * x + y)


@pytest.mark.parametrize("m,n", [(50, 13), (64, 16)])
def test_triton_ttir_transpose(gpu, tmp_path, m, n):
    k = tritium.compile(T.write(tmp_path, "t2d.ttir", T.T2D_TTIR))
    x = torch.randn(m, n, device=gpu.device)
    out = torch.full((n, m), -1.0, dtype=torch.float16, device=gpu.device)
    k[((m + 31) // 32, 1, 1)](x, out, m, n, n)
    gpu.done()
    assert torch.equal(out, x.t().half())


@pytest.mark.parametrize("name", ["red.ttir", pytest.param("red.ttgir", marks=NV_TTGIR)])
def test_triton_reduce_scan_argmax(gpu, tmp_path, name):
    """Triton 3.6's TTIR / TTGIR (its layouts) of a row sum, row cumsum and column argmax."""
    k = tritium.compile(T.write(tmp_path, name, T.RED_TTIR if name.endswith("ttir") else T.RED_TTGIR))
    out = T.run_red(k, torch, gpu.device)
    gpu.done()
    T.check_red(torch, *out)


@NV_TTGIR
def test_scan_with_assert_in_its_region(gpu, tmp_path):
    k = tritium.compile(T.write(tmp_path, "scan.ttgir", T.SCAN_ASSERT_TTGIR))
    x = torch.randint(-1000, 1000, (32, 16), dtype=torch.int32, device=gpu.device)
    z = torch.zeros_like(x)
    k[(1, 1, 1)](x, z)
    gpu.done()
    assert torch.equal(z, x.cumsum(1).int())
