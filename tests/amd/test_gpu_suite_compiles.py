"""Every kernel the GPU test suite launches compiles to an hsaco for gfx942 and gfx90a (the non-dot tests for
gfx1100 too), without a GPU -- the AMD counterpart of tests/nvidia/test_gpu_suite_compiles.py.

tests/gpu runs in a subprocess per arch in compile-only mode (``TRITIUM_COMPILE_ONLY=1 TRITIUM_TARGET=hip:<arch>``):
each test builds its inputs on the CPU, launches, and the hip driver compiles the kernel into a fresh cache instead
of launching it.  Then:

* every test either compiled its kernels (skipped "compile only"), is CUDA-only (the ``cuda_only`` marker of
  tests/gpu/conftest.py: skipped "CUDA-only: ..."), needs a device or two (hand-written PTX / two-GPU tests, skipped
  as on cuda), passed without a kernel (host-side unit tests), or is in KNOWN_GAPS below and fails with the error
  written there; any other outcome fails this test, and so does a listed gap that no longer fails;
* every cache entry of the hip target is an AMDGPU code object (ELF for the arch, read by tests/amd/hsaco_elf.py
  independently of the compiler) whose symbols and NT_AMDGPU_METADATA note name the kernel, whose explicit
  kernargs are the ones the cache's metadata.json records (from the assembly's .amdgpu_metadata) and match the
  kernel's signature (non-constexpr parameters: their count, sizes and kinds, a tensor descriptor as its base
  pointer, i32 shape and i64 strides); on gfx942 / gfx90a every kernel with a tt.dot contains v_mfma (but the
  dots listed in NO_MFMA);
* no @jit kernel of the suite was compiled for another backend (a test that hard-codes cuda).

gfx1100 runs only the tests without tl.dot: the dots RDNA3's v_wmma does not take (fp32, fp8, ...) are FMA loops
over the suite's large matmul tiles, slow to compile for wave32 (the dot tests took over 400 s on 2 cores for
gfx1100 against ~1 minute for the whole suite on gfx942); the WMMA dots have their own tests in tests/amd."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("llvmlite")

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tests.amd.hsaco_elf import (ELFABIVERSION_AMDGPU_HSA_V5, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, MACH,  # noqa: E402
                                 Hsaco)

ROOT = Path(__file__).resolve().parents[2]

# What keeps a test of tests/gpu from compiling for hip today, and the error it fails with meanwhile: regexes of
# test ids -> (what it waits on, a regex its failure must match).  Every test an entry matches must fail with that
# error: one that compiles, or fails otherwise, fails this test (shrink the list as the work lands).
MATH = ("issue 12, the ROCm device libraries: ocml.bc / ockl.bc, which no pinned package ships "
        "(tritium_amd.devicelibs finds a ROCm install or TRITIUM_ROCM_DEVICE_LIBS; then these compile)")
_OCML = r"needs the ROCm device library function __ocml_\w+ on hip targets, and the device libraries were not found"
KNOWN_GAPS = {
    # libdevice functions ocml implements (floor, round, fmax, the integer ones lower natively)
    r"tests/gpu/test_extra_ops_gpu\.py::test_libdevice_unary\[(asin|cbrt|erf|exp|expm1|log|log1p|rsqrt|sin|tanh)"
    r"-float(32|64)\]": (MATH, _OCML),
    r"tests/gpu/test_extra_ops_gpu\.py::test_libdevice_unary\[fast_expf-float32\]": (MATH, _OCML),
    r"tests/gpu/test_extra_ops_gpu\.py::test_libdevice_binary\[(atan2|pow|fmod|hypot)-\w+\]": (MATH, _OCML),
    r"tests/gpu/test_extra_ops_gpu\.py::test_libdevice_broadcast\[.*\]": (MATH, _OCML),  # atan2
    # the generated programs' f64 exp / log and tl.math functions ocml implements
    r"tests/gpu/test_programs_gpu\.py::test_generated_programs_on_the_gpu\[[123]\]": (MATH, _OCML),
}


def known_gaps() -> dict:
    """KNOWN_GAPS as they apply here: with the device libraries found, none of them (those tests must compile)."""
    from tritium_amd import devicelibs

    return {} if devicelibs.directory() is not None else KNOWN_GAPS


# Kernels with a tt.dot that keep FMA on an arch, as Triton 3.6 does for the same dot: (arch, kernel, a regex on
# the TTIR's tt.dot operand types) -> why.  A listed dot that gets v_mfma fails this test (remove the entry).
NO_MFMA = {
    ("gfx942", "dot3d_kernel", r"tensor<\d+x\d+x16xi8>"):
        "CDNA3 has no int8 v_mfma with K = 16 (16x16x32 / 32x32x16 only); Triton 3.6 uses FMA too",
}
# and two gaps to Triton 3.6 (which does these on v_mfma): fp64 dots (v_mfma_f64_16x16x4) and dots below one
# 16x16 tile (its 4x4 instructions), kept on FMA by tritium on CDNA
for _arch in ("gfx942", "gfx90a"):
    NO_MFMA[(_arch, "small_dot_kernel", r"tensor<\d+x32x")] = "a dot below one 16x16 tile: FMA in tritium (a gap)"
    NO_MFMA[(_arch, "matmul_f64_kernel", r"xf64>")] = "fp64: FMA in tritium (a gap: v_mfma_f64)"
    NO_MFMA[(_arch, "dot3d_kernel", r"xf64>")] = "fp64: FMA in tritium (a gap: v_mfma_f64)"

# Skips that do not hide a kernel from the hip run (each reason's start).
ALLOWED_SKIPS = ("compile only: kernels compiled for the GPU, not launched", "CUDA-only: ",
                 "needs a CUDA device (compile-only mode)", "needs two CUDA devices")

# arch -> the pytest selection (gfx1100: the tests without tl.dot, see the module docstring), wavefront size, and
# the least number of tests that compiled and of kernels in the cache (402 / 584 on gfx942 and gfx90a, 242 / 417 on
# gfx1100; the cuda:90 run: 448 / 684, the difference the CUDA-only tests, the known gaps and option variants)
RUNS = {"gfx942": ([], 64, 380, 540), "gfx90a": ([], 64, 380, 540),
        "gfx1100": (["--ignore=tests/gpu/test_dot_gpu.py", "-k", "not matmul"], 32, 220, 380)}

# kernarg bytes of a scalar signature type
_SCALAR = {"i1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
           "fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8}


def expected_kernargs(signature) -> list:
    """(size, value kind) of each explicit kernarg the signature's non-constexpr parameters become."""
    out = []
    for name, ty in signature:
        if ty == "constexpr":  # a signature given to compile() names them; the JIT's leaves them out
            continue
        if ty.startswith("*"):
            out.append((8, "global_buffer"))
        elif ty.startswith("tensordesc<"):
            rank = len(re.search(r"\[([^\]]*)\]", ty).group(1).split(","))
            out += [(8, "global_buffer")] + [(4, "by_value")] * rank + [(8, "by_value")] * rank
        else:
            assert ty in _SCALAR, f"parameter {name}: signature type {ty} has no kernarg size here"
            out.append((_SCALAR[ty], "by_value"))
    return out


def run_suite(arch: str, cache: Path, junit: Path) -> subprocess.CompletedProcess:
    select = RUNS[arch][0]
    env = dict(os.environ, TRITIUM_COMPILE_ONLY="1", TRITIUM_TARGET=f"hip:{arch}", TRITIUM_CACHE_DIR=str(cache))
    env.pop("TRITON_INTERPRET", None)
    workers = ["-n", "2"] if importlib.util.find_spec("xdist") else []
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, f"--junitxml={junit}",
           "tests/gpu", *select]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)


def outcomes(junit: Path) -> dict:
    """test id -> (outcome, message) from the JUnit XML of the run."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("file") or case.get("classname").replace(".", "/") + ".py"
        if not path.endswith(".py"):
            path += ".py"
        tid = f"{path}::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            out[tid] = ("failed", (bad.get("message") or "") + "\n" + (bad.text or ""))
        elif skip is not None:
            out[tid] = ("skipped", skip.get("message") or "")
        else:
            out[tid] = ("passed", "")
    return out


def check_outcomes(arch: str, results: dict) -> list:
    problems = []
    gaps = known_gaps()
    matched = {p: [] for p in gaps}
    for tid, (outcome, msg) in sorted(results.items()):
        gap = next((p for p in gaps if re.fullmatch(p, tid)), None)
        if gap is not None:
            matched[gap].append(tid)
            why, pattern = gaps[gap]
            if outcome != "failed":
                problems.append(f"{tid}: listed in KNOWN_GAPS ({why}) but {outcome} now: remove it from the list")
            elif not re.search(pattern, msg):
                problems.append(f"{tid}: a known gap ({why}) failing with another error:\n{msg[-1500:]}")
        elif outcome == "failed":
            problems.append(f"{tid}: does not compile for {arch}:\n{msg[-1500:]}")
        elif outcome == "skipped" and not msg.lstrip().removeprefix("Skipped: ").startswith(ALLOWED_SKIPS):
            problems.append(f"{tid}: skipped for a reason that hides its kernel from the hip run: {msg}")
    if arch == "gfx942":  # the whole suite: every entry names tests that exist
        problems += [f"KNOWN_GAPS entry {p!r} matches no test of tests/gpu" for p, ids in matched.items() if not ids]
    return problems


def check_entry(arch: str, wave: int, entry: Path) -> list:
    """What is wrong with one cache entry of the hip run (empty if nothing)."""
    md = json.loads((entry / "metadata.json").read_text())["metadata"]
    name = md["name"]
    where = f"{entry.name[:12]} ({name}, {md.get('source_files')})"
    if md["target"] != {"backend": "hip", "arch": arch, "warp_size": wave}:
        return [f"{where}: compiled for {md['target']}"]
    hsacos = list(entry.glob("*.hsaco"))
    if [p.name for p in hsacos] != [f"{name}.hsaco"]:
        return [f"{where}: hsaco files {[p.name for p in hsacos]}"]
    h = Hsaco(hsacos[0].read_bytes())
    bad = []
    if (h.machine, h.osabi, h.abiversion, h.mach) != (EM_AMDGPU, ELFOSABI_AMDGPU_HSA, ELFABIVERSION_AMDGPU_HSA_V5,
                                                      MACH[arch]):
        bad.append(f"{where}: ELF machine {h.machine}, OS ABI {h.osabi}, ABI version {h.abiversion}, "
                   f"mach 0x{h.mach:x}, not an AMDGPU HSA code object v5 for {arch}")
    if h.metadata.get("amdhsa.target") != f"amdgcn-amd-amdhsa--{arch}":
        bad.append(f"{where}: amdhsa.target {h.metadata.get('amdhsa.target')}")
    if h.symbols.get(name, (None,))[0] != 2 or h.symbols.get(f"{name}.kd") != (1, 64):
        bad.append(f"{where}: symbols {name} (function) / {name}.kd (64-byte descriptor) missing: "
                   f"{sorted(h.symbols)[:8]}")
    try:
        k = h.kernel(name)
    except KeyError as e:
        return bad + [f"{where}: {e}"]
    explicit = [a for a in k[".args"] if not a[".value_kind"].startswith("hidden_")]
    got = [(a[".offset"], a[".size"], a[".value_kind"]) for a in explicit]
    if got != [(a["offset"], a["size"], a["kind"]) for a in md["kernargs"]]:
        bad.append(f"{where}: the hsaco's kernargs {got} are not the metadata's {md['kernargs']}")
    if k[".kernarg_segment_size"] != md["kernarg_size"] or k[".wavefront_size"] != wave:
        bad.append(f"{where}: kernarg segment {k['.kernarg_segment_size']} (metadata {md['kernarg_size']}), "
                   f"wavefront {k['.wavefront_size']}")
    want = expected_kernargs(md["signature"])
    if [(s, kind) for _, s, kind in got] != want:
        bad.append(f"{where}: kernargs {got} do not match the signature {md['signature']} ({want})")
    end = 0
    for off, size, _ in got:
        if off < end or off % size:
            bad.append(f"{where}: kernarg at {off} (size {size}) overlaps or is misaligned: {got}")
        end = off + size
    if end > k[".kernarg_segment_size"]:
        bad.append(f"{where}: kernargs end at {end}, past the segment ({k['.kernarg_segment_size']})")
    asm = (entry / f"{name}.amdgcn").read_text()
    # a kernel compiled from a .ttgir file (tests/gpu/test_ir_source_gpu.py) has no .ttir
    ir = next(p for p in (entry / f"{name}.ttir", entry / f"{name}.ttgir") if p.exists())
    dots = re.findall(r'"tt\.dot"\(.*', ir.read_text())
    mfma = "v_mfma" in asm
    if not arch.startswith("gfx9"):
        if mfma:
            bad.append(f"{where}: v_mfma on {arch}")
    elif dots:
        exempt = [why for (a, kern, pat), why in NO_MFMA.items()
                  if a == arch and kern == name and all(re.search(pat, d) for d in dots)]
        if exempt and mfma:
            bad.append(f"{where}: listed in NO_MFMA ({exempt[0]}) but has v_mfma now: remove the entry")
        elif not exempt and not mfma:
            bad.append(f"{where}: a tt.dot without v_mfma on {arch}: {dots[0][:200]}")
    return bad


@pytest.mark.campaign
@pytest.mark.parametrize("arch", list(RUNS))
def test_every_gpu_test_kernel_compiles_to_hsaco(arch, tmp_path):
    from tritium_amd.hsaco import lld_command

    if lld_command() is None:
        pytest.skip("no ld.lld to link hsaco (pip install 'tritium[amd]')")
    cache, junit = tmp_path / "cache", tmp_path / "junit.xml"
    r = run_suite(arch, cache, junit)
    tail = r.stdout[-3000:] + r.stderr[-2000:]
    assert junit.exists(), tail
    results = outcomes(junit)
    problems = check_outcomes(arch, results)
    compiled = sum(1 for o, m in results.values() if o == "skipped" and "compile only" in m)
    _, wave, least_tests, least_kernels = RUNS[arch]
    assert compiled >= least_tests, f"only {compiled} tests compiled\n{tail}"
    entries = [p for p in cache.iterdir() if (p / "metadata.json").exists()]
    hip = []
    for e in entries:
        md = json.loads((e / "metadata.json").read_text())["metadata"]
        if md["backend"] == "hip":
            hip.append(e)
        elif md.get("source_files"):  # the launcher unit tests build kernels without a source file for cuda
            problems.append(f"{md['name']} from {md['source_files']} compiled for {md['target']} in the hip run")
    for e in hip:
        problems += check_entry(arch, wave, e)
    assert len(hip) >= least_kernels, f"only {len(hip)} kernels compiled\n{tail}"
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


# The checks themselves, on one kernel compiled here and on made-up outcomes: each kind of fault is reported.

@triton.jit
def _dot_kernel(X, Y, Z, n, scale, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(X + r[:, None] * BLOCK + r[None, :])
    y = tl.load(Y + r[:, None] * BLOCK + r[None, :])
    z = tl.dot(x, y) * scale.to(tl.float32)
    tl.store(Z + r[:, None] * BLOCK + r[None, :], z, mask=r[:, None] < n)


def test_check_entry_reports_each_fault(tmp_path, _fresh_kernel_cache):
    import shutil

    from tritium.compiler import ASTSource, compile

    sig = {"X": "*fp16", "Y": "*fp16", "Z": "*fp32", "n": "i32", "scale": "fp16", "BLOCK": "constexpr"}
    compile(ASTSource(_dot_kernel, sig, constexprs={"BLOCK": 32}), target="hip:gfx942")
    (entry,) = [p for p in Path(_fresh_kernel_cache).iterdir() if (p / "metadata.json").exists()]
    assert check_entry("gfx942", 64, entry) == []
    assert check_entry("gfx90a", 64, entry)  # compiled for another arch

    def broken(edit):
        e = tmp_path / f"e{len(list(tmp_path.iterdir()))}"
        shutil.copytree(entry, e)
        edit(e)
        return "\n".join(check_entry("gfx942", 64, e))

    def meta(e, change):
        m = json.loads((e / "metadata.json").read_text())
        change(m["metadata"])
        (e / "metadata.json").write_text(json.dumps(m))

    def mach(e):
        b = bytearray((e / "_dot_kernel.hsaco").read_bytes())
        b[48] = MACH["gfx1100"]  # e_flags' low byte
        (e / "_dot_kernel.hsaco").write_bytes(bytes(b))

    assert "do not match the signature" in broken(lambda e: meta(e, lambda m: m["signature"].pop(4)))
    assert "are not the metadata's" in broken(lambda e: meta(e, lambda m: m["kernargs"][3].update(size=8)))
    assert "names no kernel" in broken(lambda e: meta(e, lambda m: m.update(name="_dot_kernel2")) or
                                       (e / "_dot_kernel.hsaco").rename(e / "_dot_kernel2.hsaco") or
                                       (e / "_dot_kernel.amdgcn").rename(e / "_dot_kernel2.amdgcn") or
                                       (e / "_dot_kernel.ttir").rename(e / "_dot_kernel2.ttir"))
    assert "not an AMDGPU HSA code object v5 for gfx942" in broken(mach)
    no_mfma = broken(lambda e: (e / "_dot_kernel.amdgcn").write_text(
        (e / "_dot_kernel.amdgcn").read_text().replace("v_mfma", "v_fma")))
    assert "a tt.dot without v_mfma on gfx942" in no_mfma


def test_check_outcomes_reports_each_fault():
    gap = next(iter(KNOWN_GAPS))
    listed = "tests/gpu/test_extra_ops_gpu.py::test_libdevice_unary[sin-float32]"
    assert re.fullmatch(gap, listed)
    ok = {"tests/gpu/test_a.py::test_x": ("skipped", "compile only: kernels compiled for the GPU, not launched"),
          "tests/gpu/test_a.py::test_y": ("skipped", "CUDA-only: inline PTX (the tests compile for hip)"),
          listed: ("failed", "CompilationError: ... " + "needs the ROCm device library function __ocml_sin_f32 on hip "
                   "targets, and the device libraries were not found: set ...")}
    assert check_outcomes("gfx90a", ok) == [] or known_gaps() == {}
    for tid, outcome, want in [
            ("tests/gpu/test_a.py::test_z", ("failed", "LoweringError: ops left"), "does not compile for gfx90a"),
            ("tests/gpu/test_a.py::test_z", ("skipped", "no CUDA device"), "hides its kernel"),
            (listed, ("skipped", "compile only: kernels compiled"), "remove it from the list"),
            (listed, ("failed", "LoweringError: ops left"), "failing with another error")]:
        if tid == listed and known_gaps() == {}:
            continue
        got = "\n".join(check_outcomes("gfx90a", {**ok, tid: outcome}))
        assert want in got, (tid, outcome, got)
