"""Every kernel the GPU test suite launches compiles to a cubin for sm_90a here, without a GPU.

tests/gpu runs in a subprocess in compile-only mode (``TRITIUM_COMPILE_ONLY=1 TRITIUM_TARGET=cuda:90``, as
scripts/gpu_prepare.sh does before a run on the lent GPU): each test builds its inputs on the CPU, launches,
and the cuda driver compiles the kernel into a fresh cache instead of launching it.  A kernel that does not
compile fails its test.  The cache then holds one entry per compiled kernel, each with an sm_90a cubin."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("cuda.bindings", reason="the nvidia extra is not installed: pip install 'tritium[nvidia]'")

ROOT = Path(__file__).resolve().parents[2]


def _ptxas():
    from tritium_nvidia.ptx import ptxas_path

    return ptxas_path()


@pytest.mark.campaign
def test_every_gpu_test_kernel_compiles_to_sm90a_cubin(tmp_path):
    if _ptxas() is None:
        pytest.skip("ptxas not found (pip install 'tritium[nvidia]')")
    env = dict(os.environ, TRITIUM_COMPILE_ONLY="1", TRITIUM_TARGET="cuda:90", TRITIUM_CACHE_DIR=str(tmp_path))
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/gpu"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=1500)
    tail = r.stdout[-4000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert " failed" not in r.stdout and " error" not in r.stdout, tail
    # the tests that launch kernels stop after compiling ("compile only"), they do not fail or silently pass
    m = re.search(r"(\d+) skipped", r.stdout)
    assert m and int(m.group(1)) >= 100, tail
    entries = [p for p in tmp_path.iterdir() if (p / "metadata.json").exists()]
    assert len(entries) >= 80, f"only {len(entries)} kernels compiled\n{tail}"
    for e in entries:
        cubins = list(e.glob("*.cubin"))
        assert len(cubins) == 1, e
        assert cubins[0].read_bytes()[:4] == b"\x7fELF", e
        ptx = next(e.glob("*.ptx")).read_text()
        assert ".target sm_90a" in ptx, e
        meta = json.loads((e / "metadata.json").read_text())
        assert meta, e
