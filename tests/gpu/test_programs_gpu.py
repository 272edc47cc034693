"""Generated multi-program kernels on the GPU (tests/fuzz/programs.py's seeded cases; the interpreter matches the
NumPy model on exactly these in tests/fuzz/test_programs.py): typed expressions over int8..int64 / fp16 / bf16 /
fp32 / fp64, loops and branches with per-program trip counts, atomics shared across programs, scans, and
transcendentals within programs.ULPS.  Compiled here into the carried cache, run there, compared with the model:
bit-exact but for the transcendentals.  ``enable_fp_fusion=False``: with it (the default, as in Triton) ``a * b + c``
is one FMA, rounded once, which the interpreter does not do.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import tempfile

import pytest

from tests.fuzz import programs as P
from tritium.errors import CompilationError

torch = pytest.importorskip("torch")

_DIR = tempfile.mkdtemp(prefix="tritium-prog-")
SEEDS = (1, 2, 3)
PER_SEED = 40


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_programs_on_the_gpu(gpu, seed):
    results, failed = [], []
    for case in P.cases(PER_SEED, seed):
        kernel = P.load_kernel(case, _DIR)
        try:
            results.append((case, P.run_case(case, kernel, device=gpu.device, enable_fp_fusion=False)))
        except CompilationError as e:  # the other programs still compile (all of them in the cache, all errors here)
            failed.append(f"{P.source(case)}\n{e}")
    assert not failed, f"{len(failed)} of {PER_SEED} programs do not compile:\n" + "\n".join(failed[:3])
    gpu.done()
    bad = [(c, why) for c, got in results if (why := P.compare(c, got, P.model(c, P.inputs(c))))]
    assert not bad, f"{len(bad)} of {len(results)} differ:\n" + "\n".join(
        f"{why}\n{c.da} {c.db} n={c.n} BLOCK={c.BLOCK}\n{P.source(c)}" for c, why in bad[:3])
