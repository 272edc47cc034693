"""LLVM IR -> PTX (llvmlite, NVPTX) -> cubin (ptxas).  Failures raise ``CompilationFailed`` with the log."""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional

from tritium.compiler.stages import parse_llir
from tritium.errors import CompilationFailed, PTXASError  # noqa: F401  (defined with every other error)

from .arch import PIP

TRIPLE = "nvptx64-nvidia-cuda"
#: the PTX ISA version we ask LLVM for: accepted by ptxas 12.4+ (CUDA 13.0's ptxas included)
PTX_VERSION = 84


def _nvidia_dirs() -> list:
    out = []
    try:
        import nvidia  # namespace package of the nvidia-* wheels

        for p in getattr(nvidia, "__path__", []):
            out.append(p)
    except ImportError:
        pass
    return out


def _find(env: str, patterns: tuple, fallback) -> Optional[str]:
    """The path the variable ``env`` names; else the last (newest) match of the glob ``patterns`` in an nvidia wheel's
    directory; else ``fallback()``."""
    if os.environ.get(env):
        return os.environ[env]
    for d in _nvidia_dirs():
        hits = sorted(h for pat in patterns for h in glob.glob(os.path.join(d, pat)))
        if hits:
            return hits[-1]
    return fallback()


@functools.lru_cache(maxsize=None)
def libdevice_path() -> Optional[str]:
    """libdevice.10.bc: ``TRITIUM_LIBDEVICE_PATH``, the nvidia wheels', or a CUDA toolkit's in /usr/local/cuda."""
    default = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
    return _find("TRITIUM_LIBDEVICE_PATH", (os.path.join("*", "nvvm", "libdevice", "libdevice*.bc"),
                                            os.path.join("nvvm", "libdevice", "libdevice*.bc")),
                 lambda: default if os.path.exists(default) else None)


@functools.lru_cache(maxsize=None)
def ptxas_path() -> Optional[str]:
    """ptxas: ``TRITIUM_PTXAS_PATH``, the nvidia wheels', or the one on ``PATH``."""
    return _find("TRITIUM_PTXAS_PATH", (os.path.join("*", "bin", "ptxas"), os.path.join("cuda_nvcc", "bin", "ptxas")),
                 lambda: shutil.which("ptxas"))


def sm_name(arch: int) -> str:
    return f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"




def llir_to_ptx(llir: str, kernel: str, arch: int = 90, opt_level: int = 3, reflect_ftz: bool = True) -> str:
    """Parse and verify ``llir``, link libdevice if referenced, internalise non-kernel functions, optimise
    and emit PTX for ``sm_<arch>[a]``.  ``reflect_ftz`` (Triton's ``enable_reflect_ftz``, on by default as there):
    libdevice's ``__nvvm_reflect("__CUDA_FTZ")`` is 1, so its functions flush denormals (the module flag
    ``nvvm-reflect-ftz``); off, they keep them."""
    llvm, mod = parse_llir(llir)
    uses_libdevice = "__nv_" in llir
    if uses_libdevice:
        path = libdevice_path()
        if path is None:
            raise CompilationFailed("the kernel uses libdevice math but libdevice.10.bc was not found: "
                                    f"{PIP} or set TRITIUM_LIBDEVICE_PATH")
        with open(path, "rb") as f:
            lib = llvm.parse_bitcode(f.read())
        lib.triple = TRIPLE
        try:
            mod.link_in(lib)
            if reflect_ftz:
                flag = llvm.parse_assembly(f'target triple = "{TRIPLE}"\n!llvm.module.flags = !{{!0}}\n'
                                           '!0 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n')
                mod.link_in(flag)
        except RuntimeError as e:
            raise CompilationFailed("linking libdevice failed", str(e)) from None
    for fn in mod.functions:
        if not fn.is_declaration and fn.name != kernel:
            fn.linkage = llvm.Linkage.internal
    mod.triple = TRIPLE
    target = llvm.Target.from_triple(TRIPLE)
    tm = target.create_target_machine(cpu=sm_name(arch), features=f"+ptx{PTX_VERSION}", opt=opt_level)
    mod.data_layout = str(tm.target_data)
    try:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        if uses_libdevice:
            # drop the libdevice functions the kernel does not call before O3 optimises every one of them
            dce = llvm.create_new_module_pass_manager()
            dce.add_global_dead_code_eliminate_pass()
            dce.run(mod, pb)
        mpm = pb.getModulePassManager()
        mpm.run(mod, pb)
        mod.verify()
        ptx = tm.emit_assembly(mod)
    except RuntimeError as e:
        raise CompilationFailed("LLVM failed to generate PTX", str(e)) from None
    return hoist_wgmma_waits(ptx) if "wgmma.wait_group" in ptx else ptx


#: PTX opcodes (the part before the first dot) that only read and write registers
_REGISTER_ONLY = frozenset("add sub mul mad mul24 mad24 sad div rem abs neg min max and or xor not cnot shl shr "
                           "lop3 bfe bfi prmt popc clz brev cvt cvta mov setp selp slct fma".split())


def _register_only(line: str) -> bool:
    s = line.strip()
    if not s or s.startswith(".loc") or (s.startswith("//") and "inline asm" not in s):
        return True
    return s.split(None, 1)[0].split(".", 1)[0] in _REGISTER_ONLY


def hoist_wgmma_waits(ptx: str) -> str:
    """Move each ``wgmma.wait_group`` up its basic block over the register-only instructions before it.

    LLVM's O3 sinks address arithmetic computed before a loop into the loop's exit block, in front of the
    ``wgmma.wait_group 0`` that ends an asynchronous dot's pipeline there; with enough of it (register pressure),
    ptxas then serialises every wgmma of the kernel (C7514, "non wgmma instructions reading accumulator registers
    ... between start and end of the pipeline stage").  A wait earlier in its block is always correct: it names
    no registers (its tied accumulators are an LLVM-level fence) and waiting sooner only orders more; it is not
    moved over labels, memory / barrier / control instructions or other inline asm (a wgmma commit or fence)."""
    lines = ptx.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith("wgmma.wait_group"):
            i += 1
            continue
        start = i
        while start > 0 and lines[start].strip() != "// begin inline asm":
            start -= 1
        end = i
        while end < len(lines) - 1 and lines[end].strip() != "// end inline asm":
            end += 1
        top = start
        while top > 0 and _register_only(lines[top - 1]):
            top -= 1
        moved = lines[top:start]
        if any(ln.strip() and not ln.strip().startswith((".loc", "//")) for ln in moved):
            lines[top:end + 1] = lines[start:end + 1] + moved
        i = end + 1
    return "\n".join(lines)


def ptx_to_cubin(ptx: str, arch: int = 90) -> tuple:
    """ptxas; returns ``(cubin bytes, info dict with n_regs / n_spills / shared_static / log)``.  A register cap
    (the ``maxnreg`` option) is the kernel's ``.maxnreg`` directive in the PTX."""
    ptxas = ptxas_path()
    if ptxas is None:
        raise CompilationFailed(f"ptxas not found: {PIP} or set TRITIUM_PTXAS_PATH")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [ptxas, "-v", f"-arch={sm_name(arch)}", "-o", out, src]
        p = subprocess.run(cmd, capture_output=True, text=True)
        log = p.stdout + p.stderr
        if p.returncode != 0:
            raise PTXASError(f"ptxas failed (exit {p.returncode})", log)
        with open(out, "rb") as f:
            cubin = f.read()
    return cubin, parse_ptxas_log(log)


def parse_ptxas_log(log: str) -> dict:
    info = {"n_regs": 0, "n_spills": 0, "n_spill_loads": 0, "shared_static": 0, "ptxas_log": log}
    m = re.search(r"Used (\d+) registers", log)
    if m:
        info["n_regs"] = int(m.group(1))
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if m:
        info["n_spills"], info["n_spill_loads"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"(\d+) bytes smem", log)
    if m:
        info["shared_static"] = int(m.group(1))
    return info


# ---------------------------------------------------------------------------------------------- maxnreg="auto"
#: how far below the registers ptxas chose an automatic cap may go: a deeper cut spills or serialises more than a
#: second CTA per SM wins back
AUTO_CAP_MIN_FRACTION = 0.7


def occupancy_cap(arch: int, num_warps: int, n_regs: int, shared: int) -> Optional[int]:
    """The register cap that fits one more CTA on an SM (``maxnreg="auto"``), or None: when registers are what
    limits the CTAs per SM (the occupancy calculator's rules, :func:`tritium.tools.explain.occupancy`), every
    other limit (shared memory, warps, blocks) allows one more, and the cap -- the most registers, in the 8 per
    thread they are allocated by, that the calculator gives one more CTA -- keeps at least
    :data:`AUTO_CAP_MIN_FRACTION` of them: ``__launch_bounds__(threads, blocks + 1)`` in CUDA terms."""
    from tritium.tools.explain import occupancy

    if n_regs <= 0:
        return None
    occ = occupancy(arch, num_warps, n_regs, shared)
    if "registers" not in occ["limited_by"]:
        return None
    want = occ["blocks_per_sm"] + 1
    if any(v < want for k, v in occ["limits"].items() if k != "registers"):
        return None
    floor = max(24, AUTO_CAP_MIN_FRACTION * n_regs)
    return next((cap for cap in range(min(255, n_regs - 1) // 8 * 8, 0, -8)
                 if cap >= floor and occupancy(arch, num_warps, cap, shared)["limits"]["registers"] >= want), None)


def with_maxnreg(ptx: str, cap: int) -> str:
    """``ptx`` with a ``.maxnreg cap`` directive on each ``.entry`` (after its ``.maxntid``; replacing one it has):
    what the ``maxnreg`` option's ``nvvm.maxnreg`` attribute emits, so only kernels are capped, not callees."""
    ptx = re.sub(r"^\.maxnreg \d+\n", "", ptx, flags=re.M)
    out, n = re.subn(r"^(\.maxntid [^\n]*\n)", lambda m: f"{m.group(1)}.maxnreg {cap}\n", ptx, flags=re.M)
    if not n:
        raise CompilationFailed("maxnreg='auto': no .maxntid directive in the PTX to put the cap beside")
    return out
