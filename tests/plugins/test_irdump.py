"""The irdump plugin (entry point ``irdump``): TRITIUM_DUMP_DIR writes every stage and the metadata;
TRITIUM_OVERRIDE_DIR substitutes a stage's output before the next stage runs, and the launch computes what
the substitute says."""
from __future__ import annotations

import json
import re
import shutil
from importlib.metadata import entry_points

import numpy as np
import pytest

import tritium
import tritium.language as tl
import tritium.plugins as plugins
from tritium.compiler.compiler import ASTSource, compile
from tritium.plugins import hookimpl

irdump = pytest.importorskip("tritium_irdump")
irdump_plugin = pytest.importorskip("tritium_irdump.plugin")


@tritium.jit
def vadd(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tritium.jit
def vadd_jit(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


N = 100


def src(block=64):
    return ASTSource(vadd, "*fp32,*fp32,*fp32,i32", {"BLOCK": block})


def inputs():
    x = np.arange(N, dtype=np.float32) + 1
    y = np.full(N, 3.0, np.float32) - np.arange(N, dtype=np.float32) % 7
    return x, y, np.zeros(N, np.float32)


def run(kernel):
    x, y, out = inputs()
    kernel[(2,)](x, y, out, N)
    return x, y, out


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No dump/override variable leaks in or out; a private file cache; irdump registered (entry point)."""
    for v in ("TRITIUM_DUMP_DIR", "TRITIUM_OVERRIDE_DIR", "TRITON_KERNEL_DUMP", "TRITON_DUMP_DIR",
              "TRITON_KERNEL_OVERRIDE", "TRITON_OVERRIDE_DIR"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    assert plugins.get_plugin_manager().has_plugin("irdump"), "irdump is not registered through its entry point"
    return monkeypatch


def test_entry_point_and_registration():
    eps = {ep.name: ep.value for ep in entry_points(group="tritium")}
    assert eps.get("irdump") == "tritium_irdump.plugin"
    assert "irdump" not in plugins.unavailable_plugins()
    assert plugins.get_plugin_manager().get_plugin("irdump") is irdump_plugin


def test_inactive_without_env(env, tmp_path):
    assert irdump.dump_dir() is None and irdump.override_dir() is None
    assert irdump_plugin.tritium_override_stage(kernel_name="k", stage="ttir", output="x", metadata={}) is None
    assert irdump_plugin.tritium_bypass_cache() is None
    work = tmp_path / "work"
    work.mkdir()
    env.chdir(work)
    k = compile(src(), target="interpreter")
    assert "overridden" not in k.metadata
    assert list(work.iterdir()) == []  # no dump in the working directory
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".ttir", ".npy") and "cache" not in p.parts]


def test_dump_writes_every_stage_and_metadata(env, tmp_path):
    dump = tmp_path / "dump"
    env.setenv("TRITIUM_DUMP_DIR", str(dump))
    assert irdump_plugin.tritium_bypass_cache()  # a file cache would hide the compile
    k = compile(src(), target="interpreter")
    folders = list(dump.iterdir())
    assert [f.name for f in folders] == [f"vadd-{k.metadata['hash'][:16]}"]
    files = sorted(p.name for p in folders[0].iterdir())
    assert files == ["vadd.json", "vadd.npy", "vadd.ttir"]
    ttir = (folders[0] / "vadd.ttir").read_text()
    assert ttir == k.asm["ttir"] and "tt.load" in ttir and "arith.addf" in ttir
    npy = (folders[0] / "vadd.npy").read_text()
    assert npy == k.asm["npy"] and "def kernel(" in npy
    md = json.loads((folders[0] / "vadd.json").read_text())
    assert md["name"] == "vadd" and md["hash"] == k.metadata["hash"] and md["stages"] == ["ttir", "npy"]
    # another specialisation gets its own folder
    compile(src(block=32), target="interpreter")
    assert len(list(dump.iterdir())) == 2


def test_triton_spelling_of_the_dump_variables(env, tmp_path):
    env.setenv("TRITON_KERNEL_DUMP", "1")
    env.setenv("TRITON_DUMP_DIR", str(tmp_path / "tdump"))
    compile(src(), target="interpreter")
    assert list((tmp_path / "tdump").glob("vadd-*/vadd.ttir"))


def test_override_ttir_changes_the_result(env, tmp_path, capfd):
    dump, over = tmp_path / "dump", tmp_path / "override"
    env.setenv("TRITIUM_DUMP_DIR", str(dump))
    k0 = compile(src(), target="interpreter")
    x, y, out = run(k0)
    np.testing.assert_allclose(out, x + y)
    # the workflow: copy the dump's folder, edit the TTIR, point TRITIUM_OVERRIDE_DIR at it
    folder = next(dump.iterdir())
    shutil.copytree(folder, over / folder.name)
    (over / folder.name / "vadd.npy").unlink()
    ttir = (over / folder.name / "vadd.ttir").read_text()
    assert ttir.count("arith.addf") == 1
    (over / folder.name / "vadd.ttir").write_text(ttir.replace("arith.addf", "arith.mulf"))
    env.delenv("TRITIUM_DUMP_DIR")
    env.setenv("TRITIUM_OVERRIDE_DIR", str(over))
    assert "TRITIUM_OVERRIDE_DIR" in irdump_plugin.tritium_bypass_cache()
    capfd.readouterr()
    k = compile(src(), target="interpreter")
    err = capfd.readouterr().err
    assert "stage 'ttir' of kernel 'vadd' overridden" in err
    assert k.metadata["overridden"] == ["ttir"]
    assert "arith.mulf" in k.asm["ttir"] and k.asm["npy"] != k0.asm["npy"]  # the next stage saw the override
    x, y, out = run(k)
    np.testing.assert_allclose(out, x * y)
    assert not np.allclose(out, x + y)
    # the overridden kernel was not cached under the compile key: without the override, x + y again
    env.delenv("TRITIUM_OVERRIDE_DIR")
    k2 = compile(src(), target="interpreter")
    assert "overridden" not in k2.metadata and "arith.addf" in k2.asm["ttir"]
    x, y, out = run(k2)
    np.testing.assert_allclose(out, x + y)


def _edit_npy_add_to_mul(npy: str) -> str:
    """In the NumPy program, the add of the two loaded values becomes a multiplication."""
    loads = set(re.findall(r"^\s*(v\d+) = _rt\.load\(", npy, re.M))
    assert len(loads) == 2, npy
    pat = re.compile(r"^(\s*v\d+ = \()(v\d+) \+ (v\d+)(\))$", re.M)
    hits = [m for m in pat.finditer(npy) if {m.group(2), m.group(3)} == loads]
    assert len(hits) == 1, npy
    m = hits[0]
    return npy[:m.start()] + f"{m.group(1)}{m.group(2)} * {m.group(3)}{m.group(4)}" + npy[m.end():]


def test_override_npy_flat_file_changes_the_result(env, tmp_path, capfd):
    over = tmp_path / "override"
    over.mkdir()
    k0 = compile(src(), target="interpreter")
    (over / "vadd.npy").write_text(_edit_npy_add_to_mul(k0.asm["npy"]))  # not in a hash folder: any vadd
    env.setenv("TRITIUM_OVERRIDE_DIR", str(over))
    k = compile(src(), target="interpreter")
    assert "stage 'npy' of kernel 'vadd' overridden" in capfd.readouterr().err
    assert k.metadata["overridden"] == ["npy"] and k.asm["ttir"] == k0.asm["ttir"]
    x, y, out = run(k)
    np.testing.assert_allclose(out, x * y)
    # without the override, the same source computes x + y again
    env.delenv("TRITIUM_OVERRIDE_DIR")
    x, y, out = run(compile(src(), target="interpreter"))
    np.testing.assert_allclose(out, x + y)


def test_override_through_jit_launch(env, tmp_path):
    over = tmp_path / "override"
    over.mkdir()
    ttir = compile(ASTSource(vadd_jit, "*fp32,*fp32,*fp32,i32", {"BLOCK": 64}), target="interpreter").asm["ttir"]
    (over / "vadd_jit.ttir").write_text(ttir.replace("arith.addf", "arith.subf"))
    env.setenv("TRITIUM_OVERRIDE_DIR", str(over))
    env.setenv("TRITIUM_TARGET", "interpreter")
    from tritium.runtime import driver

    driver.reset_active()
    try:
        x, y, out = inputs()
        vadd_jit[(2,)](x, y, out, N, BLOCK=64)
        np.testing.assert_allclose(out, x - y)
    finally:
        vadd_jit.cache.clear()
        env.delenv("TRITIUM_TARGET")
        driver.reset_active()


class BytesStage:
    """Adds a ``bin`` stage whose output is bytes, to check binary dumps and overrides."""

    @hookimpl
    def tritium_add_stages(self, stages, options, backend_name):
        stages["bin"] = lambda npy, metadata: b"\x00\xffBIN" + npy[:8].encode()


def test_bytes_stage_is_dumped_and_overridden_as_bytes(env, tmp_path):
    plugin = BytesStage()
    plugins.get_plugin_manager().register(plugin, name="test-bytes-stage")
    try:
        env.setenv("TRITIUM_DUMP_DIR", str(tmp_path / "dump"))
        k = compile(src(), target="interpreter")
        assert k.asm["bin"][:2] == b"\x00\xff"
        (dumped,) = (tmp_path / "dump").glob("vadd-*/vadd.bin")
        assert dumped.read_bytes() == k.asm["bin"]
        over = tmp_path / "override"
        over.mkdir()
        (over / "vadd.bin").write_bytes(b"\x01\x02\xfe")
        env.setenv("TRITIUM_OVERRIDE_DIR", str(over))
        k2 = compile(src(), target="interpreter")
        assert k2.asm["bin"] == b"\x01\x02\xfe" and isinstance(k2.asm["bin"], bytes)
        assert k2.metadata["overridden"] == ["bin"]
        assert dumped.read_bytes() == b"\x01\x02\xfe"  # the dump shows what the kernel really holds
    finally:
        plugins.get_plugin_manager().unregister(plugin)


def test_cli_plugins_lists_irdump_and_profiler():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tritium", "plugins", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {p["name"]: p for p in json.loads(r.stdout)["plugins"]}
    assert rows["irdump"]["loaded"] and rows["irdump"]["module"] == "tritium_irdump.plugin"
    assert {"tritium_stage_output", "tritium_override_stage"} <= set(rows["irdump"]["hooks"])
    # the profiler registers its launch hooks only while profiling (start() / stop(), or TRITIUM_PROFILE=1)
    assert rows["profiler"]["loaded"] and not {"tritium_launch_enter", "tritium_launch_exit"} & set(
        rows["profiler"]["hooks"])
