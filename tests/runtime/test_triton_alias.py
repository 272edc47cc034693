"""tritium.install_as_triton(): ``import triton`` and the ``triton.*`` modules Triton's tests and kernels import resolve
to tritium (the same module objects), ``triton.__version__`` names the Triton release whose API tritium provides,
``triton.knobs`` reads and sets the environment variables tritium acts on, and uninstall_as_triton() undoes it.
Each check runs in a fresh interpreter (the alias changes ``sys.modules``)."""
import os
import subprocess
import sys
import textwrap

import pytest


def _run(code: str, tmp_path):
    script = tmp_path / "alias_check.py"  # a file, so @jit finds the kernels' source
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, TRITIUM_TARGET="interpreter")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_import_triton_is_tritium_and_runs_a_kernel(tmp_path):
    out = _run("""
        import numpy as np
        import tritium
        tritium.install_as_triton()
        import triton
        import triton.language as tl
        from triton.language.extra import libdevice
        from triton.runtime.errors import InterpreterError
        from triton.runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict
        from triton import knobs
        import tritium.language
        assert tl is tritium.language and triton.jit is tritium.jit
        assert triton.__version__ == "3.6.0", triton.__version__
        assert InterpreterError is tritium.errors.KernelRuntimeError
        assert tl.str_to_ty(type_canonicalisation_dict["float8e4nv"], None) == tl.float8e4nv

        @triton.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

        rng = np.random.default_rng(0)
        x, y = rng.random(1000).astype(np.float32), rng.random(1000).astype(np.float32)
        out = np.zeros_like(x)
        add[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
        np.testing.assert_allclose(out, x + y)
        print("ok")
    """, tmp_path)
    assert "ok" in out


def test_missing_module_is_not_found_and_uninstall_undoes(tmp_path):
    _run("""
        import sys, tritium
        tritium.install_as_triton()
        try:
            import triton.no_such_module
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError("found a module tritium does not have")
        import triton
        tritium.uninstall_as_triton()
        assert not any(n == "triton" or n.startswith("triton.") for n in sys.modules)
        import importlib.util
        spec = importlib.util.find_spec("triton")
        assert spec is None or "tritium" not in str(spec.origin), spec
    """, tmp_path)


def test_knobs_are_the_environment(tmp_path):
    _run("""
        import os, tritium
        tritium.install_as_triton()
        from triton import knobs
        knobs.cache.dir = "/tmp/some-cache"
        assert os.environ["TRITIUM_CACHE_DIR"] == "/tmp/some-cache" and knobs.cache.dir == "/tmp/some-cache"
        knobs.compilation.always_compile = True
        assert os.environ["TRITIUM_DISABLE_CACHE"] == "1" and knobs.compilation.always_compile is True
        knobs.compilation.always_compile = None
        assert "TRITIUM_DISABLE_CACHE" not in os.environ
        os.environ["TRITON_INTERPRET"] = "1"
        assert knobs.runtime.interpret is True
        for bad in ("knobs.runtime.no_such_knob", "knobs.amd"):
            try:
                eval(bad)
            except AttributeError as e:
                assert "tritium" in str(e) or "has no attribute" in str(e), e
            else:
                raise AssertionError(bad)
        try:
            knobs.runtime.no_such_knob = 1
        except AttributeError as e:
            assert "no counterpart in tritium" in str(e)
        else:
            raise AssertionError("set an unknown knob")
    """, tmp_path)


def test_refused_after_the_real_triton(tmp_path):
    pytest.importorskip("triton")  # only where a real Triton is installed
    _run("""
        import triton, tritium
        if getattr(triton, "__tritium__", None) is None:
            try:
                tritium.install_as_triton()
            except ImportError as e:
                assert "already imported" in str(e)
            else:
                raise AssertionError("installed over the real Triton")
    """, tmp_path)
