"""Generated kernels on the GPU (tests/fuzz/generated.py's seeded cases: the interpreter matches the NumPy model on
exactly these in tests/fuzz/test_generated.py): each compiled here into the carried cache, run there, compared with
the model -- bit-exact except for sums (relative 1e-5).  ``enable_fp_fusion=False``: with it (the default, as in
Triton) ``a * b - c`` becomes one FMA, rounded once, which the interpreter does not do.

Skipped without a CUDA device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import pytest

from tests.fuzz import generated as G

torch = pytest.importorskip("torch")

_DIR = G.tmpdir()


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_kernels_on_the_gpu(gpu, seed):
    import numpy as np

    dev = gpu.device
    results = []
    for case in G.cases(40, seed):
        kernel = G.load_kernel(case, _DIR)
        results.append((case, G.run_case(case, kernel, to_device=lambda a: torch.from_numpy(a).to(dev),
                                         from_device=lambda t: t.cpu().numpy(),
                                         zeros=lambda s, dt: torch.zeros(s, dtype={np.float32: torch.float32,
                                                                                   np.int32: torch.int32}[dt],
                                                                         device=dev),
                                         enable_fp_fusion=False)))
    gpu.done()
    bad = [(c, why) for c, got in results if (why := G.compare(c, got, G.model(c, G.inputs(c))))]
    assert not bad, "\n".join(f"{why}\n{G.source(c)}" for c, why in bad[:3])
