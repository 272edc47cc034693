"""A machine that runs kernels only from a carried cache (no MLIR, no llvmlite): a kernel missing from the cache
is a clear BackendUnavailable saying what is missing and what to do, not a bare ModuleNotFoundError."""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cache_miss_without_mlir_says_what_to_do(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        sys.modules["mlir"] = None  # as on the GPU machine: the bindings are not installed
        import numpy as np
        import tritium as triton
        import tritium.language as tl
        from tritium.errors import BackendUnavailable

        @triton.jit
        def add(X, Y, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(Y + offs, tl.load(X + offs, mask=offs < n) + 1, mask=offs < n)

        x = np.random.default_rng(0).random(100).astype(np.float32)
        try:
            add[(1,)](x, np.empty_like(x), 100, BLOCK=128)
        except BackendUnavailable as e:
            print("MESSAGE", e)
        """)
    script = tmp_path / "kernel.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                       env={"TRITIUM_CACHE_DIR": str(tmp_path), "TRITIUM_TARGET": "interpreter",
                            "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    msg = r.stdout.split("MESSAGE", 1)[1]
    assert "compiling kernel 'add'" in msg and "MLIR Python bindings" in msg
    assert "pip install tritium" in msg and "TRITIUM_CACHE_DIR" in msg and str(tmp_path) in msg
