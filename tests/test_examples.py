"""The examples (examples/*.py): each runs on the interpreter and checks itself against NumPy (it prints OK), and
compiles for sm_90a in compile-only mode (what a GPU run launches)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.stem.startswith("_"))


def _run(name, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET", "TRITIUM_COMPILE_ONLY")}
    e.update(env)
    return subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")], capture_output=True, text=True,
                          env=e, timeout=600)


def test_the_tutorials_are_there():
    assert {"vector_add", "softmax", "layer_norm", "matmul", "fused_attention"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_on_the_interpreter(name):
    r = _run(name, TRITIUM_TARGET="interpreter")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout and "interpreter" in r.stdout, r.stdout


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_compiles_for_sm90(name, tmp_path):
    pytest.importorskip("llvmlite")
    r = _run(name, TRITIUM_TARGET="cuda:90", TRITIUM_COMPILE_ONLY="1", TRITIUM_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compile-only" in r.stdout and "cuda:90" in r.stdout, r.stdout
