"""``tl.range(..., flatten=True)``: a loop nest fused into one loop (passes/ttir/fuse_nested_loops.py), as Triton's
FuseNestedLoops.  The interpreter runs the fused loop too (its ``npy`` stage fuses before writing the NumPy
program), so these kernels check the rewrite's values against NumPy: prologues and epilogues with side effects,
values carried by the outer loop, by the inner loop and from the prologue to the epilogue, empty inner loops (the
guarded form and the versioned one), inner loops whose bounds are known at compile time, strided outer loops.
The cuda checks: one loop left where the inner body has no loads (Triton's test_tl_range_fuse); a persistent
matmul's nest kept (its inner loop has a dot) and, with that gate lifted, its fused loop pipelined with the dot
asynchronous (on the GPU: tests/gpu/test_flatten_gpu.py)."""
import re

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource, compile


@triton.jit
def nest_sums(X, OUT, TOT, M, N, lo, step, BLOCK: tl.constexpr, FLATTEN: tl.constexpr):
    # row sums of X[i, lo:N] for i in range(0, M, step): a prologue (pointer, accumulator), a loading inner body,
    # an epilogue storing, and a total carried by the outer loop
    total = tl.zeros([BLOCK], tl.float32)
    count = 0
    for i in tl.range(0, M, step, flatten=FLATTEN):
        row = X + i * N * BLOCK
        acc = tl.zeros([BLOCK], tl.float32) + i
        for j in tl.range(lo, N):
            acc += tl.load(row + j * BLOCK + tl.arange(0, BLOCK))
        tl.store(OUT + i * BLOCK + tl.arange(0, BLOCK), acc)
        total += acc
        count += 1
    tl.store(TOT + tl.arange(0, BLOCK), total)
    tl.store(TOT + BLOCK, count)


def _nest_sums_ref(x, m, n, lo, step):
    out = np.zeros((m, x.shape[2]), np.float32)
    rows = list(range(0, m, step))
    for i in rows:
        out[i] = i + x[i, lo:n].sum(0) if n > lo else i
    total = sum((out[i] for i in rows), np.zeros(x.shape[2], np.float32))
    return out, total, len(rows)


@pytest.mark.parametrize("m,n,lo,step", [(5, 3, 0, 1), (6, 4, 1, 2), (4, 0, 0, 1), (3, 2, 2, 1), (1, 5, 0, 3),
                                          (0, 3, 0, 1)])
@pytest.mark.parametrize("flatten", [False, True])
def test_nest_with_prologue_epilogue_and_carried_values(m, n, lo, step, flatten):
    B = 16
    x = np.random.default_rng(m * 7 + n).standard_normal((max(m, 1), max(n, 1), B)).astype(np.float32)
    out = np.zeros((max(m, 1), B), np.float32)
    tot = np.zeros(B + 1, np.float32)
    nest_sums[(1,)](x, out, tot, m, max(n, 1) if n else 0, lo, step, BLOCK=B, FLATTEN=flatten)
    want, total, count = _nest_sums_ref(x, m, n, lo, step)
    np.testing.assert_allclose(out[:m], want[:m], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tot[:B], total, rtol=1e-5, atol=1e-5)
    assert tot[B] == count


@triton.jit
def nest_counts(OUT, M, N, K_CONST: tl.constexpr):
    # no loads in the inner body: the guarded form (max(len_j, 1) trips per outer one); a constant inner loop
    for i in tl.range(0, M, flatten=True):
        tl.store(OUT + i, -1)
        for j in tl.range(0, N):
            tl.atomic_add(OUT + i, j + 1)
        for_k = 0
        tl.atomic_add(OUT + M + i, i + for_k)
    for i in tl.range(0, M, flatten=True):
        s = 0
        for j in range(K_CONST):
            s += j * i
        tl.store(OUT + 2 * M + i, s)


@pytest.mark.parametrize("m,n", [(4, 3), (3, 0), (1, 1), (0, 2)])
def test_nest_without_loads(m, n):
    out = np.zeros(3 * max(m, 1), np.int32)
    nest_counts[(1,)](out, m, n, K_CONST=5)
    want = np.zeros_like(out)
    for i in range(m):
        want[i] = -1 + n * (n + 1) // 2
        want[m + i] = i
        want[2 * m + i] = 10 * i
    np.testing.assert_array_equal(out, want)


@triton.jit
def range_fuse(ub):
    for i in tl.range(0, ub, flatten=True):
        for j in tl.range(0, ub):
            tl.device_print("i", i)


def test_one_loop_left_without_loads():
    # Triton's test_tl_range_fuse: the TTIR keeps the mark, the TTGIR has one loop
    k = compile(ASTSource(range_fuse, signature={"ub": "i32"}, constexprs={}), target="cuda:90")
    assert "tt.flatten" in k.asm["ttir"]
    assert k.asm["ttgir"].count("scf.for") == 1


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
                      FLATTEN: tl.constexpr):
    start = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    for tile_id in tl.range(start, num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :],
                        mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :],
                        mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@pytest.mark.parametrize("mnk", [(64, 64, 64), (200, 136, 100), (33, 17, 5)])
@pytest.mark.parametrize("programs", [1, 3])
def test_persistent_matmul_values(mnk, programs):
    M, N, K = mnk
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    persistent_matmul[(programs,)](a, b, c, M, N, K, K, N, N, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                                   NUM_PROGRAMS=programs, FLATTEN=True)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=5e-2)


def _compile_persistent(flatten):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    cc = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_PROGRAMS=132)
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(9)}
    src = ASTSource(persistent_matmul, signature={**sig, **{k: "constexpr" for k in cc}, "FLATTEN": "constexpr"},
                    constexprs={**cc, "FLATTEN": flatten}, attrs=attrs)
    return compile(src, target="cuda:90", options={"num_warps": 8, "num_stages": 3}, use_cache=False)


def test_persistent_matmul_nest_is_kept():
    # a nest whose inner loop has a dot stays a nest (fused, it measured slower: see fuse_nested_loops.py)
    for flatten in (False, True):
        k = _compile_persistent(flatten)
        assert k.asm["ttgir"].count("scf.for") == 2
        assert k.asm["ptx"].count("cp.async.cg.shared.global") > 0  # its K loop pipelined


def test_fused_persistent_matmul_is_pipelined(monkeypatch):
    # with the dot gate lifted: the fused loop pipelines its loads and keeps the dot asynchronous
    from tritium.passes.ttir import fuse_nested_loops as FN

    monkeypatch.setattr(FN, "_DOTS", frozenset())
    counts = {}
    for flatten in (False, True):
        k = _compile_persistent(flatten)
        ttgir = k.asm["ttgir"]
        counts[flatten] = (ttgir.count("scf.for"), k.asm["ptx"].count("cp.async.cg.shared.global"))
        if flatten:
            # the tile's accumulator reset (select(first, zeros, acc)) became the dot's use_c flag
            # (ttgir/optimize_accumulator_init.py), so the dot stays asynchronous across fused iterations: one
            # wait of depth 1 per loop, the full wait only under the epilogue's branch
            assert re.search(r'"ttg\.warp_group_dot"\(%[\w#]+, %[\w#]+, %[\w#]+, %[\w#]+\)', ttgir)
            assert ttgir.count("pendings = 1 : i32") == 2
            # the last K step hands on zeros made in the epilogue's branch (sitofp(jj) - itself, splat), not the
            # accumulator, so its registers are free during the epilogue
            assert re.search(r"arith\.subf (%\w+), \1 : f32", ttgir)
            assert k.metadata["n_spills"] == 0
    assert counts[False][0] == 2  # the nest
    assert counts[True][0] == 3  # the fused loop, and the nest kept for an empty K loop (Triton's speculation)
    assert counts[False][1] > 0 and counts[True][1] > counts[False][1]


@triton.jit
def dependent_nest(X, OUT_I, OUT_J, OUT_S, TOT, M, N, KIND: tl.constexpr, FLATTEN: tl.constexpr):
    # inner bounds that change with the outer index (Triton's test_tl_range_fuse_dependent and kin): a record of
    # every (i, j) visited in order, a loading inner body, an epilogue storing, a total carried by the outer loop
    k = 0
    total = 0.0
    for i in tl.range(0, M, flatten=FLATTEN):
        if KIND == "triangle":  # j < i: the first trip's inner loop is empty
            lo = 0
            hi = i
        elif KIND == "shifted":  # [2i, 3i + 1), Triton's case
            lo = i * 2
            hi = lo + i + 1
        else:  # "mod": some inner loops empty, others up to N
            lo = i
            hi = i + (i * 7) % N
        s = 0.0
        for j in tl.range(lo, hi):
            tl.store(OUT_I + k, i)
            tl.store(OUT_J + k, j)
            s += tl.load(X + j)
            k += 1
        tl.store(OUT_S + i, s)
        total += s
    tl.store(TOT, total)
    tl.store(TOT + 1, k)


def _dependent_ref(x, m, n, kind):
    vis, sums = [], np.zeros(max(m, 1), np.float32)
    for i in range(m):
        lo, hi = {"triangle": (0, i), "shifted": (2 * i, 3 * i + 1), "mod": (i, i + (i * 7) % n)}[kind]
        for j in range(lo, hi):
            vis.append((i, j))
            sums[i] += x[j]
    return vis, sums


@pytest.mark.parametrize("kind", ["triangle", "shifted", "mod"])
@pytest.mark.parametrize("m", [0, 1, 6, 11])
@pytest.mark.parametrize("flatten", [False, True])
def test_inner_bounds_that_change_with_the_outer_index(kind, m, flatten):
    n = 5
    x = np.random.default_rng(m).standard_normal(64).astype(np.float32)
    oi, oj = np.full(256, -1, np.int32), np.full(256, -1, np.int32)
    os_, tot = np.zeros(max(m, 1), np.float32), np.zeros(2, np.float32)
    dependent_nest[(1,)](x, oi, oj, os_, tot, m, n, KIND=kind, FLATTEN=flatten)
    vis, sums = _dependent_ref(x, m, n, kind)
    assert list(zip(oi[:len(vis)], oj[:len(vis)])) == vis and oi[len(vis)] == -1
    np.testing.assert_allclose(os_[:m], sums[:m], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tot[0], sums[:m].sum(), rtol=1e-5, atol=1e-5)
    assert tot[1] == len(vis)


def test_dependent_bounds_fuse_into_one_loop_after_a_trip_count():
    pytest.importorskip("llvmlite")
    sig = {"X": "*fp32", "OUT_I": "*i32", "OUT_J": "*i32", "OUT_S": "*fp32", "TOT": "*fp32", "M": "i32", "N": "i32"}
    k = compile(ASTSource(dependent_nest, sig, {"KIND": "shifted", "FLATTEN": True}), target="cuda:90", until="ttgir")
    ttgir = k.asm["ttgir"]
    starts = [mt.start() for mt in re.finditer(r"scf\.for", ttgir)]
    # two loops one after the other: the trip count (closed by its yield before the next starts), then the fused
    # loop; nested, the second would start before the first's yield
    assert len(starts) == 2 and "scf.yield" in ttgir[starts[0]:starts[1]]
