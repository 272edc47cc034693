"""``import tritium`` is cheap: no MLIR, no llvmlite, no plugin discovery needed."""
import subprocess
import sys

HEAVY = ("mlir", "llvmlite")

CHECK = """
import sys
{setup}
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})
print(heavy)
sys.exit(1 if heavy else 0)
"""


def run(setup):
    r = subprocess.run([sys.executable, "-c", CHECK.format(setup=setup, heavy=HEAVY)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"heavy modules imported by {setup!r}: {r.stdout}{r.stderr}"


def test_import_tritium_is_light():
    run("import tritium; import tritium.compiler; import tritium.runtime.driver; import tritium.plugins")


def test_backend_discovery_is_light():
    run("import tritium.runtime.driver as d; d.backends(); [d.backend_status(n) for n in d.backends()]")


def test_cli_backends_is_light():
    run("import tritium.cli, contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()): "
        "tritium.cli.main(['backends'])")


def test_lazy_language_attribute():
    r = subprocess.run([sys.executable, "-c", "import tritium, sys; assert 'tritium.language' not in sys.modules; "
                        "tritium.language; assert 'tritium.language' in sys.modules; "
                        "assert tritium.testing.do_bench(lambda: None, warmup=1, rep=1) >= 0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
