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
        except ModuleNotFoundError as e:
            assert "triton.no_such_module" in str(e) and "does not provide it" in str(e), e
        else:
            raise AssertionError("found a module tritium does not have")
        import triton
        try:
            triton.no_such_api
        except AttributeError as e:
            assert "does not provide triton.no_such_api" in str(e), e
        else:
            raise AssertionError("an attribute tritium does not have")
        import os
        assert os.environ["TRITIUM_AS_TRITON"] == "1"  # worker processes inherit the alias
        tritium.uninstall_as_triton()
        assert "TRITIUM_AS_TRITON" not in os.environ
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


def test_environment_variable_stands_in_at_start_up(tmp_path):
    """``TRITIUM_AS_TRITON=1``: an unchanged program's ``import triton`` is tritium (the tritium-as-triton.pth hook
    the package installs), in that process and the processes it starts; unset, ``triton`` is not tritium."""
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent("""
        import subprocess, sys
        import triton
        print(triton.__version__, getattr(triton, "__tritium__", None) is not None)
        child = subprocess.run([sys.executable, "-c", "import triton; print(hasattr(triton, '__tritium__'))"],
                               capture_output=True, text=True)
        print(child.stdout.strip())
    """))
    env = dict(os.environ, TRITIUM_TARGET="interpreter", TRITIUM_AS_TRITON="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3.6.0", "True", "True"], r.stdout + r.stderr
    env.pop("TRITIUM_AS_TRITON")
    r = subprocess.run([sys.executable, "-c", "import triton; print(hasattr(triton, '__tritium__'))"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert "True" not in r.stdout


def test_triton_backends_and_inductor_entry_points(tmp_path):
    """What torch's Inductor reads before it compiles anything: ``triton.backends.backends`` under Triton's names
    (the interpreter as ``cpu``), driver classes whose ``is_active()`` asks tritium and of which
    ``driver.active`` is an instance, ``driver.set_active(backend.driver())``, ``make_backend(target)`` with
    ``parse_options`` / ``hash``, ``triton_key()``, ``GPUTarget("cpu", ...)`` compiling for the interpreter, and a
    ``CompiledKernel.run`` taking Triton's launcher arguments (a signature naming its constexprs)."""
    out = _run("""
        import numpy as np
        import tritium
        tritium.install_as_triton()
        import triton, triton.language as tl
        assert triton.backends.compiler.GPUTarget is tritium.compiler.GPUTarget  # no import of them needed
        import triton.backends, triton.backends.compiler
        from triton.backends.compiler import GPUTarget, BaseBackend
        from triton.compiler.compiler import ASTSource, make_backend, triton_key
        from triton.runtime.driver import driver
        from triton.runtime.autotuner import OutOfResources, PTXASError
        assert not hasattr(triton.backends.compiler, "AttrsDescriptor")
        bs = triton.backends.backends
        assert "cpu" in bs and "nvidia" in bs and "amd" in bs, dict(bs)
        cpu = bs["cpu"]
        assert cpu.driver.is_active()
        driver.set_active(cpu.driver())
        assert isinstance(driver.active, cpu.driver) and not isinstance(driver.active, bs["nvidia"].driver)
        target = GPUTarget("cpu", 0, 0)
        backend = make_backend(target)
        opts = backend.parse_options({})
        assert opts.__dict__["num_warps"] == 4 and isinstance(backend.hash(), str) and triton_key()
        assert isinstance(backend, BaseBackend)
        from triton.runtime.cache import triton_key as key2
        from triton.testing import get_dram_gbps, get_max_simd_tflops, get_max_tensorcore_tflops
        assert key2() == triton_key()
        assert get_dram_gbps() > 0 and get_max_tensorcore_tflops("float16", 1e6) == 2 * get_max_tensorcore_tflops(
            "float32", 1e6) > get_max_simd_tflops("float32", 1e6) > 0

        @triton.jit
        def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + o, tl.load(x_ptr + o, mask=o < n) * 3, mask=o < n)

        k = triton.compile(ASTSource(scale, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                     {"BLOCK": 32}), target=target, options={"num_warps": 2})
        x = np.random.rand(100).astype(np.float32)
        out = np.zeros_like(x)
        seen = []
        k._init_handles()
        k.run(4, 1, 1, 0, k.function, k.packed_metadata, k.launch_metadata((4, 1, 1), 0, x, out, 100, 32),
              seen.append, seen.append, x, out, 100, 32)
        np.testing.assert_allclose(out, 3 * x, rtol=1e-6)
        assert len(seen) == 2 and seen[0]["name"] == "scale"
        print("ok")
    """, tmp_path)
    assert out.strip().endswith("ok")


def test_prewarm_imports_the_compiler_in_the_background(tmp_path):
    """The first ``import triton`` under install_as_triton() starts importing MLIR, llvmlite and the passes in a
    thread (torch.compile traces for seconds before its first kernel); once per process, waited for at exit (a
    short script must not abort in a C++ import at finalisation), and TRITIUM_PREWARM=0 turns it off."""
    out = _run("""
        import os, sys, threading, time
        os.environ.pop("TRITIUM_TARGET", None)
        import tritium
        from tritium.compiler import prewarm
        tritium.install_as_triton()
        import triton
        assert prewarm.start() is False  # already started
        names = [t.name for t in threading.enumerate()]
        for _ in range(600):
            if "mlir.ir" in sys.modules and "llvmlite.binding" in sys.modules and "tritium.lowering" in sys.modules:
                break
            time.sleep(0.1)
        assert "mlir.ir" in sys.modules and "tritium.passes.ttir.pipeline" in sys.modules
        print("ok")
    """, tmp_path)
    assert out.strip().endswith("ok")
    script = tmp_path / "off.py"
    script.write_text("import sys, time, tritium\nfrom tritium.compiler import prewarm\n"
                      "tritium.install_as_triton()\nimport triton\ntime.sleep(1)\n"
                      "print(prewarm.start(), 'mlir.ir' in sys.modules)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TRITIUM_PREWARM="0", TRITIUM_TARGET="interpreter"))
    assert r.stdout.split() == ["False", "False"], r.stdout + r.stderr


def test_aliased_modules_keep_their_own_spec(tmp_path):
    # the import system gives a module it loads the spec it was found under (triton.backends); tritium's modules keep
    # their own, or each relative import run later inside them warns "__package__ != __spec__.parent" (Inductor's
    # test suite saw thousands)
    out = _run("""
        import warnings
        warnings.simplefilter("error", ImportWarning)
        import tritium
        tritium.install_as_triton()
        import triton.backends, triton.compiler.compiler, tritium.backends
        assert triton.backends is tritium.backends
        assert tritium.backends.__spec__.name == "tritium.backends", tritium.backends.__spec__
        assert "nvidia" in triton.backends.backends  # its functions' relative imports run here: no ImportWarning
        isinstance(object(), triton.backends.backends["nvidia"].driver)
        print("ok")
    """, tmp_path)
    assert out.strip().endswith("ok")


def test_triton_key_waits_for_the_imports_a_fork_inherits(tmp_path):
    """Inductor's compile-worker process calls ``triton_key()`` before it forks its workers: the key waits for the
    background imports, so no fork happens mid-import and a forked worker compiles with the compiler imported."""
    out = _run("""
        import os, sys, threading
        os.environ.pop("TRITIUM_TARGET", None)
        os.environ["TRITIUM_TARGET"] = "cuda:90"
        import tritium
        tritium.install_as_triton()
        import triton
        from triton.compiler.compiler import triton_key
        key = triton_key()
        assert key.startswith("tritium-")
        assert not any(t.name == "tritium-prewarm" for t in threading.enumerate())  # done, not abandoned
        for m in ("mlir.ir", "tritium.lowering.rules", "tritium.compiler.stages", "llvmlite.binding",
                  "tritium_nvidia.compiler", "tritium_nvidia.ptx"):
            assert m in sys.modules, m
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: the compiler is there without importing anything
            before = set(sys.modules)
            import tritium_nvidia.compiler, tritium.lowering.rules  # noqa: F401
            os.write(w, str(len(set(sys.modules) - before)).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        print("new modules in the child:", os.read(r, 16).decode())
        print("ok")
    """, tmp_path)
    assert "new modules in the child: 0" in out and out.strip().endswith("ok")
