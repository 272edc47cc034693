"""Kernels for the thread-locality pass (core/tritium/passes/ttgir/optimize_thread_locality.py): a reduction in a
loop folded into a loop-carried accumulator (Triton's ``test_optimize_thread_locality``) and variants the pass
must leave alone.  Compiled by tests/nvidia/test_optimize_thread_locality.py (no GPU), run by
tests/gpu/test_thread_locality_gpu.py."""
import tritium as triton
import tritium.language as tl


@triton.jit
def accumulate_reduce(X, Y, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr,
                      INIT: tl.constexpr):
    """Triton's kernel: program (m, n) reduces rows m of the column blocks n, n + num_pid_n, ... of X [M, N]
    with OP ("sum", "max", "min"), starting from INIT; Y [M, num_pid_n]."""
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_pid_n = tl.num_programs(1)
    local = tl.full([BLOCK_M], INIT, dtype=X.dtype.element_ty)
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), num_pid_n):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(X + off_m[:, None] * N + off_n[None, :])
        if OP == "sum":
            local = local + tl.sum(x, axis=1)
        elif OP == "max":
            local = tl.maximum(local, tl.max(x, axis=1))
        else:
            local = tl.minimum(local, tl.min(x, axis=1))
    tl.store(Y + off_m * num_pid_n + pid_n, local)


@triton.jit
def accumulate_reduce_masked(X, Y, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr,
                             INIT: tl.constexpr, NEUTRAL: tl.constexpr):
    """``accumulate_reduce`` for any N: the last column block is masked (NEUTRAL where masked off)."""
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_pid_n = tl.num_programs(1)
    local = tl.full([BLOCK_M], INIT, dtype=X.dtype.element_ty)
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), num_pid_n):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(X + off_m[:, None] * N + off_n[None, :], mask=off_n[None, :] < N, other=NEUTRAL)
        if OP == "sum":
            local = local + tl.sum(x, axis=1)
        elif OP == "max":
            local = tl.maximum(local, tl.max(x, axis=1))
        else:
            local = tl.minimum(local, tl.min(x, axis=1))
    tl.store(Y + off_m * num_pid_n + pid_n, local)


@triton.jit
def accumulate_reduce_other(X, Y, Z, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CASE: tl.constexpr):
    """Loops the pass leaves alone (CASE): "seen" (the running sum is read in the loop too, by a sum of the
    prefix sums: it must be the whole sum there), "mixed" (a max added to the accumulator), "computed" (the
    reduced tensor is not a load), "loaded_init" (the accumulator starts from memory, not a constant); any other
    CASE is the plain loop, which it rewrites."""
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_pid_n = tl.num_programs(1)
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if CASE == "loaded_init":
        local = tl.load(Z + off_m)
    else:
        local = tl.zeros([BLOCK_M], dtype=tl.float32)
    prefix = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), num_pid_n):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(X + off_m[:, None] * N + off_n[None, :])
        if CASE == "seen":
            prefix = prefix + local
            local = local + tl.sum(x, axis=1)
        elif CASE == "mixed":
            local = local + tl.max(x, axis=1)
        elif CASE == "computed":
            local = local + tl.sum(x * 2.0, axis=1)
        else:
            local = local + tl.sum(x, axis=1)
    tl.store(Y + off_m * num_pid_n + pid_n, local)
    if CASE == "seen":
        tl.store(Z + off_m * num_pid_n + pid_n, prefix)
