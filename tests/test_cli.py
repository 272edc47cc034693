"""The ``tritium`` command: backends, compile, run-example."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritium import cli
from tests.runtime.fakebackend import fake, register_fake  # noqa: F401  (fixtures)

KERNEL = '''
import tritium


@tritium.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
    pass


not_a_kernel = 3
'''

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def kfile(tmp_path):
    p = tmp_path / "k.py"
    p.write_text(KERNEL)
    return p


def test_backends_lists_everything(capsys, monkeypatch):
    monkeypatch.delenv("TRITIUM_TARGET", raising=False)
    assert cli.main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "cuda" in out and "hip" in out and "selected:" in out
    from tritium_nvidia.plugin import missing

    if missing():
        assert "pip install 'tritium[nvidia]'" in out


def test_backends_marks_selection(fake, capsys):
    assert cli.main(["backends", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["selected"] == "fake"
    row = [b for b in data["backends"] if b["name"] == "fake"][0]
    assert row["selected"] and row["active"] and row["deps_installed"]


def test_backends_explains_inactive(register_fake, capsys):
    register_fake(name="sleepy", active=False, reason="no sleepy device")
    assert cli.main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "active: no (no sleepy device)" in out


def test_compile_writes_requested_stages(fake, kfile, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["compile", f"{kfile}:add", "--signature", "*fp32:16,*fp32,*fp32,i32", "--constexpr",
                   "BLOCK=1024", "--target", "fake", "--emit", "sig,bin", "--out", str(out), "-O", "num_warps=2"])
    assert rc == 0
    desc = json.loads((out / "add.sig").read_text())
    assert desc["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert desc["constexprs"] == {"BLOCK": "1024"} and desc["attrs"] == {"x_ptr": {"tt.divisibility": 16}}
    assert (out / "add.bin").read_bytes() == (out / "add.sig").read_text().upper().encode()
    meta = json.loads((out / "add.json").read_text())
    assert meta["num_warps"] == 2 and meta["backend"] == "fake"
    assert meta["signature"] == [["x_ptr", "*fp32"], ["y_ptr", "*fp32"], ["out_ptr", "*fp32"], ["n", "i32"]]


def test_compile_only_runs_needed_stages(fake, kfile, tmp_path):
    assert cli.main(["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "-t", "fake",
                     "--emit", "sig", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "add.sig").exists() and not (tmp_path / "add.bin").exists()


def test_compile_unknown_stage(fake, kfile, tmp_path, capsys):
    rc = cli.main(["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "-t", "fake",
                   "--emit", "ptx", "--out", str(tmp_path)])
    assert rc == 2
    assert "the 'fake' backend has no stage 'ptx' (its stages: sig, bin)" in capsys.readouterr().err


def test_compile_bad_inputs(fake, kfile, tmp_path):
    with pytest.raises(SystemExit, match="needs --constexpr BLOCK=VALUE"):
        cli.main(["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-t", "fake"])
    with pytest.raises(SystemExit, match="4 non-constexpr parameters"):
        cli.main(["compile", f"{kfile}:add", "-s", "*fp32,i32", "-c", "BLOCK=4", "-t", "fake"])
    with pytest.raises(SystemExit, match="no kernel named 'nope'"):
        cli.main(["compile", f"{kfile}:nope", "-t", "fake"])
    with pytest.raises(SystemExit, match="not a @tritium.jit function"):
        cli.main(["compile", f"{kfile}:not_a_kernel", "-t", "fake"])


def test_compile_unavailable_backend(kfile, tmp_path, capsys):
    rc = cli.main(["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "-t", "nosuch"])
    assert rc == 1 and "unknown tritium backend 'nosuch'" in capsys.readouterr().err


def test_cuda_ttgir(kfile, tmp_path, capsys):
    # compiling for an explicit cuda target needs no GPU: the ttgir stage writes TTGIR with layouts
    try:
        rc = cli.main(["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4",
                       "-t", "cuda:90", "--emit", "ttgir", "--out", str(tmp_path)])
    except Exception as e:  # noqa: BLE001 - the frontend may reject the empty kernel body
        pytest.skip(f"frontend not ready: {e}")
    assert rc == 0
    text = "".join(p.read_text() for p in tmp_path.glob("*.ttgir"))
    assert "ttg.num-warps" in text


def test_python_dash_m_and_version():
    r = subprocess.run([sys.executable, "-m", "tritium", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("tritium ")


def test_run_example_list(capsys):
    assert cli.main(["run-example", "--list"]) == 0
    assert "vector_add" in capsys.readouterr().out.split()


def test_run_example_unknown(capsys):
    assert cli.main(["run-example", "nope"]) == 2
    assert "no example 'nope'" in capsys.readouterr().err


def _interpreter_ready():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET")}
    r = subprocess.run([sys.executable, "-c", "import tritium_interpreter.plugin, tritium.frontend as f; f.make_ttir"],
                       capture_output=True, timeout=120, env=env)
    return r.returncode == 0


@pytest.mark.skipif(not _interpreter_ready(), reason="the interpreter backend / frontend are not there yet")
def test_readme_example_runs_on_the_interpreter():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET")}
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "vector_add.py")], capture_output=True, text=True,
                       timeout=300, env=env, cwd=str(ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("OK")


def test_readme_compile_only_command(tmp_path):
    """The README's ``TRITIUM_TARGET=cuda:90 TRITIUM_COMPILE_ONLY=1 python examples/vector_add.py``, run as written
    on a machine without a GPU (and with a CPU-only torch here): it compiles add_kernel to a cubin in the cache."""
    pytest.importorskip("tritium_nvidia")
    from tritium.compiler.registry import get_backend

    try:
        get_backend("cuda", require_deps=True)
    except Exception as e:  # noqa: BLE001 - the nvidia extra is not installed
        pytest.skip(f"the cuda backend's compiler dependencies are missing: {e}")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("TRITIUM_TARGET", "TRITON_INTERPRET",
                                                            "TRITIUM_DISABLE_CACHE")}
    env.update(TRITIUM_TARGET="cuda:90", TRITIUM_COMPILE_ONLY="1", TRITIUM_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "vector_add.py")], capture_output=True, text=True,
                       timeout=600, env=env, cwd=str(ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compile-only: add_kernel compiled for cuda:90" in r.stdout
    cubins = list(cache.glob("*/add_kernel.cubin"))
    assert len(cubins) == 1 and cubins[0].stat().st_size > 0, list(cache.rglob("*"))


def test_backends_tell_the_truth_about_stages(capsys):
    """What each backend implements comes from its compiler."""
    assert cli.main(["backends", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["backends"]}
    assert rows["hip"]["stages"] == ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    assert rows["hip"]["unimplemented_stages"] == []
    assert rows["interpreter"]["stages"] == ["ttir", "npy"] and rows["interpreter"]["unimplemented_stages"] == []
    if "cuda" in rows:
        assert rows["cuda"]["stages"] == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    assert cli.main(["backends"]) == 0
    assert "stages: ttir -> ttgir -> llir -> amdgcn -> hsaco\n" in capsys.readouterr().out


def test_compile_for_hip_writes_every_stage(tmp_path, capsys):
    ex = str(ROOT / "examples" / "vector_add.py") + ":add_kernel"
    args = ["compile", ex, "-s", "*fp32:16,*fp32:16,*fp32:16,i32:16", "-c", "BLOCK_SIZE=1024", "-t", "hip:gfx942",
            "--out", str(tmp_path), "--no-cache"]
    assert cli.main(args) == 0  # the default: the last stage
    assert (tmp_path / "add_kernel.hsaco").read_bytes()[:4] == b"\x7fELF"
    assert cli.main(args + ["--emit", "ttir,ttgir,llir,amdgcn,hsaco"]) == 0
    assert "tt.load" in (tmp_path / "add_kernel.ttir").read_text()
    assert '"ttg.threads-per-warp" = 64' in (tmp_path / "add_kernel.ttgir").read_text()
    assert "define amdgpu_kernel void @add_kernel" in (tmp_path / "add_kernel.llir").read_text()
    assert "global_load_dwordx4" in (tmp_path / "add_kernel.amdgcn").read_text()
    assert (tmp_path / "add_kernel.hsaco").read_bytes()[:4] == b"\x7fELF"
    meta = json.loads((tmp_path / "add_kernel.json").read_text())
    assert meta["warp_size"] == 64 and meta["kernarg_size"] == 28


def test_compile_out_removes_the_previous_compiles_files(fake, kfile, tmp_path, capsys):
    base = ["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "-t", "fake", "--out",
            str(tmp_path)]
    assert cli.main(base + ["--emit", "sig,bin"]) == 0
    assert (tmp_path / "add.bin").exists()
    assert cli.main(base + ["--emit", "sig"]) == 0
    assert (tmp_path / "add.sig").exists() and not (tmp_path / "add.bin").exists()
    assert "removed" in capsys.readouterr().out


def test_compile_out_never_removes_what_it_did_not_write(fake, kfile, tmp_path, capsys):
    """A user's own ``add.bin`` next to an earlier compile's outputs, and an output the user edited, stay."""
    base = ["compile", f"{kfile}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "-t", "fake", "--out",
            str(tmp_path)]
    assert cli.main(base + ["--emit", "sig"]) == 0  # the compile's metadata lists every stage, bin too
    (tmp_path / "add.bin").write_text("the user's own file")
    assert cli.main(base + ["--emit", "sig"]) == 0
    assert (tmp_path / "add.bin").read_text() == "the user's own file"
    assert cli.main(base + ["--emit", "bin"]) == 0  # now written by tritium: add.sig is its earlier output
    assert not (tmp_path / "add.sig").exists()
    assert cli.main(base + ["--emit", "sig"]) == 0
    (tmp_path / "add.sig").write_text("edited")
    assert cli.main(base + ["--emit", "bin"]) == 0
    assert (tmp_path / "add.sig").read_text() == "edited"
    assert "removed" not in capsys.readouterr().out.split("wrote")[-1]


def test_cache_ls_columns_align(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    ex = str(ROOT / "examples" / "vector_add.py") + ":add_kernel"
    targets = ["interpreter"]
    try:
        from tritium.compiler.registry import get_backend

        get_backend("cuda", require_deps=True)
        targets.append("cuda:90")  # a long stage list
    except Exception:  # noqa: BLE001 - no nvidia extra: the interpreter's entry alone
        pass
    for t in targets:
        assert cli.main(["compile", ex, "-s", "*fp32:16,*fp32:16,*fp32:16,i32", "-c", "BLOCK_SIZE=1024", "-t", t,
                         "--out", str(tmp_path / t.replace(":", "-"))]) == 0
    capsys.readouterr()
    assert cli.main(["cache", "ls"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert len(lines) == 1 + len(targets)
    # every column starts where the header's does (the date column's start too)
    for col in ("kernel", "target", "stages", "created"):
        starts = {ln.index(col) if col in ln.split() else None for ln in lines[:1]}
        pos = starts.pop()
        for ln in lines[1:]:
            assert ln[pos - 1] == " " and ln[pos] != " ", (col, lines)


def test_plugins_text_shows_the_json_hooks(capsys):
    assert cli.main(["plugins", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli.main(["plugins"]) == 0
    text = capsys.readouterr().out
    for p in data["plugins"]:
        if p["loaded"]:
            want = ", ".join(p["hooks"]) or "none registered now"
            assert f"hooks: {want}" in text, (p, text)


@pytest.mark.parametrize("target,says", [
    ("hip:gfx000", "hip:gfx000 is not an AMD arch tritium compiles for: gfx90a, gfx942"),
    ("hip:gfx906", "hip:gfx906 is not an AMD arch"),
    ("cuda:abc", "bad CUDA arch 'abc'"),
    ("cuda:999", "cuda:999 is not a CUDA arch tritium compiles for: sm_75, sm_80"),
    ("", "empty target"),
    ("nope:1", "unknown tritium backend 'nope'"),
])
def test_compile_bad_target_is_a_one_line_error(target, says, tmp_path, capsys):
    """No LLVM abort (hip:gfx000 was 'LLVM ERROR: Cannot select', rc 134), no traceback: one line naming the
    target and what is supported, exit status 1."""
    ex = str(ROOT / "examples" / "vector_add.py") + ":add_kernel"
    rc = cli.main(["compile", ex, "-s", "*fp32:16,*fp32:16,*fp32:16,i32:16", "-c", "BLOCK_SIZE=64", "-t", target,
                   "--out", str(tmp_path), "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and says in err and "\n" not in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())


def test_bad_targets_in_the_api():
    from tritium.compiler import ASTSource, GPUTarget, compile
    from tritium.errors import TargetError

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from vector_add import add_kernel
    finally:
        sys.path.pop(0)
    src = ASTSource(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                    {"BLOCK_SIZE": 64})
    for t in (GPUTarget("cuda", 999, 32), GPUTarget("hip", "gfx000", 64), "cuda:sm_1"):
        with pytest.raises(TargetError):
            compile(src, target=t, until="ttir")
    with pytest.raises(TargetError, match="arch='sm_1'"):
        compile(src, target="cuda:90", options={"arch": "sm_1"}, until="ttir")


REAL_KERNEL = '''
import tritium
import tritium.language as tl


@tritium.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(o + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)
'''


def test_compile_several_targets_in_parallel(tmp_path, monkeypatch, capsys):
    # --target a,b,c: one compile per target in spawned workers, each into OUT/<target>; the worst status
    k = tmp_path / "real.py"
    k.write_text(REAL_KERNEL)
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITIUM_COMPILE_WORKERS", "2")
    out = tmp_path / "out"
    rc = cli.main(["compile", f"{k}:add", "-s", "*fp32:16,*fp32:16,*fp32:16,i32", "-c", "B=256",
                   "-t", "cuda:90,cuda:80,hip:gfx942", "-e", "ttgir", "-o", str(out)])
    text = capsys.readouterr()
    assert rc == 0, text
    assert [ln for ln in text.out.splitlines() if ln.startswith("== ")] == ["== cuda:90", "== cuda:80",
                                                                             "== hip:gfx942"]
    for d, arch in (("cuda_90", 'ttg.target = "cuda:90"'), ("cuda_80", 'ttg.target = "cuda:80"'),
                    ("hip_gfx942", 'ttg.target = "hip:gfx942"')):
        assert arch in (out / d / "add.ttgir").read_text()
    # a target that fails (no such stage for hip) fails the command, the others still written
    rc = cli.main(["compile", f"{k}:add", "-s", "*fp32:16,*fp32:16,*fp32:16,i32", "-c", "B=256",
                   "-t", "cuda:90,hip:gfx942", "-e", "ptx", "-o", str(tmp_path / "out2")])
    text = capsys.readouterr()
    assert rc == 2 and "no stage 'ptx'" in text.err
