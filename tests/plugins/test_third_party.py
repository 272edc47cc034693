"""A third-party backend, built as its own distribution and installed with pip, is discovered through the
``tritium`` entry-point group, listed by ``tritium backends``, selected by ``TRITIUM_TARGET`` and compiles
and launches through its own stages.  A plugin that fails to import is reported, never fatal."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

TOY_PLUGIN = '''
"""tritium-toy: a backend that 'compiles' a kernel to a description and 'runs' it by printing."""
import json
from dataclasses import dataclass

from tritium.compiler.backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from tritium.plugins import hookimpl


@dataclass(frozen=True)
class ToyOptions(BaseOptions):
    shout: bool = False


class ToyCompiler(BaseCompiler):
    name = "toy"

    def supports_target(self, target):
        return target.backend == "toy"

    def parse_options(self, options):
        return ToyOptions.parse(options, backend="toy")

    def add_stages(self, stages, options):
        def toyir(src, metadata):
            metadata["toy_stage_ran"] = True
            return "toyir " + json.dumps({"name": src.name, "signature": src.signature,
                                          "constexprs": {k: repr(v) for k, v in src.constexprs.items()}},
                                         sort_keys=True)

        stages["toyir"] = toyir
        stages["toybin"] = lambda text, metadata: (text.upper() if options.shout else text).encode()

    def hash(self):
        return "toy-1"


class ToyDriver(BaseDriver):
    def is_active(self):
        return True

    def get_current_target(self):
        return GPUTarget("toy", 7, 16)

    def launch(self, kernel, grid, args):
        print("TOY LAUNCH", kernel.name, list(grid), [repr(a) for a in args], kernel.asm["toybin"].decode())


@hookimpl
def tritium_backends():
    return [Backend("toy", priority=-100, make_compiler=ToyCompiler, make_driver=ToyDriver,
                    description="toy third-party backend")]
'''

BROKEN_PLUGIN = 'raise ImportError("tritium-broken needs libfrobnicate")\n'

KERNEL = '''
import tritium


@tritium.jit
def scale(x_ptr, n, alpha, BLOCK: "tl.constexpr"):
    pass


if __name__ == "__main__":
    import sys
    from tritium.runtime import driver
    print("SELECTED", driver.select().name, driver.active.get_current_target())
    k = scale[lambda meta: (tritium.cdiv(meta["n"], meta["BLOCK"]),)](7, 100, 0.5, BLOCK=32, shout=True)
    print("ASM", sorted(k.asm), k.metadata["toy_stage_ran"], k.metadata["target"])
'''


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(out_dir: Path, dist: str, module: str, files: dict, entry_points: dict) -> Path:
    """A minimal, valid wheel (PEP 427) for a pure-Python plugin distribution."""
    version = "0.1.0"
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    contents = {f"{module}/{name}": text.encode() for name, text in files.items()}
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" \
        f"Requires-Dist: tritium\n".encode()
    contents[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tritium-tests\nRoot-Is-Purelib: true\n" \
        b"Tag: py3-none-any\n"
    eps = "[tritium]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    contents[f"{info}/entry_points.txt"] = eps.encode()
    record = [_record_line(p, d) for p, d in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    whl = out_dir / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for p, d in contents.items():
            z.writestr(p, d)
    return whl


def write_project(root: Path, dist: str, module: str, files: dict, entry_points: dict) -> Path:
    """The same distribution as a source project (pyproject.toml) — what a plugin author writes."""
    proj = root / dist
    (proj / module).mkdir(parents=True)
    for name, text in files.items():
        (proj / module / name).write_text(text)
    eps = "".join(f'{k} = "{v}"\n' for k, v in entry_points.items())
    (proj / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=61", "wheel"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "0.1.0"
        dependencies = ["tritium"]

        [project.entry-points.tritium]
        """) + eps + f'\n[tool.setuptools]\npackages = ["{module}"]\n')
    return proj


def pip_install(target: Path, proj: Path, wheel_dir: Path, dist: str, module: str, files: dict, eps: dict):
    """Install with pip into ``target``: from the source project when the venv can build wheels without
    isolation (setuptools + wheel installed), else from a wheel built here."""
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401

        what = [str(proj), "--no-build-isolation"]
    except ImportError:
        what = [str(build_wheel(wheel_dir, dist, module, files, eps))]
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                        "--disable-pip-version-check", "--target", str(target), *what],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugins")
    target, wheels = root / "site", root / "wheels"
    wheels.mkdir()
    for dist, module, files, eps in [
        ("tritium-toy", "tritium_toy", {"__init__.py": "", "plugin.py": TOY_PLUGIN}, {"toy": "tritium_toy.plugin"}),
        ("tritium-broken", "tritium_broken", {"__init__.py": "", "plugin.py": BROKEN_PLUGIN},
         {"broken": "tritium_broken.plugin"}),
    ]:
        proj = write_project(root / "src", dist, module, files, eps)
        pip_install(target, proj, wheels, dist, module, files, eps)
    assert (target / "tritium_toy" / "plugin.py").exists()
    assert any(p.name.startswith("tritium_toy-") and p.suffix == ".dist-info" for p in target.iterdir())
    (root / "kernel.py").write_text(KERNEL)
    return root


def run(site, *args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET")}
    e["PYTHONPATH"] = os.pathsep.join([str(site / "site"), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=e,
                          cwd=str(site))


def test_discovered_by_tritium_backends(site):
    r = run(site, "-m", "tritium", "backends")
    assert r.returncode == 0, r.stderr
    assert "toy" in r.stdout and "toy third-party backend" in r.stdout
    assert "plugin 'broken' failed to load" in r.stdout and "libfrobnicate" in r.stdout
    r = run(site, "-m", "tritium", "backends", "--json")
    data = json.loads(r.stdout)
    toy = [b for b in data["backends"] if b["name"] == "toy"][0]
    assert toy["active"] and toy["deps_installed"]
    assert "broken" in data["unavailable_plugins"]


def test_not_installed_means_not_discovered(site):
    r = subprocess.run([sys.executable, "-m", "tritium", "backends", "--json"], capture_output=True, text=True,
                       timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert "toy" not in [b["name"] for b in json.loads(r.stdout)["backends"]]


def test_selected_and_launched(site):
    r = run(site, "kernel.py", env={"TRITIUM_TARGET": "toy"})
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "SELECTED toy toy:7" in out
    assert "TOY LAUNCH scale [4, 1, 1] ['7', '100', '0.5']" in out
    assert 'TOYIR {"CONSTEXPRS": {"BLOCK": "32"}' in out  # its stages ran, with the option (shout)
    assert "ASM ['toybin', 'toyir'] True {'backend': 'toy', 'arch': 7, 'warp_size': 16}" in out


def test_cli_compiles_with_its_stages(site):
    r = run(site, "-m", "tritium", "compile", "kernel.py:scale", "--signature", "*fp32,i32,fp32",
            "--constexpr", "BLOCK=64", "--target", "toy", "--emit", "toyir,toybin", "--out", "out")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "out" / "scale.toyir").read_text().startswith("toyir ")
    assert (site / "out" / "scale.toybin").read_bytes().startswith(b"toyir ")
    meta = json.loads((site / "out" / "scale.json").read_text())
    assert meta["backend"] == "toy" and meta["signature"] == [["x_ptr", "*fp32"], ["n", "i32"], ["alpha", "fp32"]]


def test_broken_plugin_does_not_break_import(site):
    r = run(site, "-c", "import tritium; from tritium.plugins import unavailable_plugins; "
            "print(unavailable_plugins()['broken'])")
    assert r.returncode == 0, r.stderr
    assert "ImportError: tritium-broken needs libfrobnicate" in r.stdout
