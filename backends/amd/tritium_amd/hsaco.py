"""LLVM IR -> AMDGCN (llvmlite, LLVM's AMDGPU target) -> object -> hsaco (``ld.lld -shared``), and the kernel's
code-object metadata read back from the assembly.  Failures raise ``CompilationFailed`` with the log.

The linker: ``TRITIUM_LLD_PATH`` when set, else ziglang's (``zig ld.lld``, the ``amd`` extra pins ``ziglang``), else
an ``ld.lld`` on ``PATH``.  Assembling a substituted ``amdgcn`` text needs ziglang's clang (``zig clang -cc1as``).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional

from tritium.compiler.stages import llvm_binding, parse_llir
from tritium.errors import CompilationFailed

TRIPLE = "amdgcn-amd-amdhsa"
PIP = "pip install 'tritium[amd]'"



# ------------------------------------------------------------------------------------------------
# LLVM IR -> AMDGCN and the object file
# ------------------------------------------------------------------------------------------------

def target_machine(arch: str, opt_level: int = 3):
    llvm = llvm_binding()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features="", opt=opt_level, reloc="pic",
                                                                 codemodel="default")


#: an inline-asm call in LLVM IR
_INLINE_ASM = re.compile(r'\basm (?:sideeffect |alignstack |inteldialect |unwind )*"')


def llir_to_amdgcn(llir: str, kernel: str, arch: str = "gfx942", opt_level: int = 3) -> tuple:
    """Parse and verify ``llir``, link the ROCm device libraries it calls into (``__ocml_*`` / ``__ockl_*``, with
    the arch's ``__oclc_*`` controls: :mod:`tritium_amd.devicelibs`), internalise non-kernel functions, optimise
    (O3) for ``arch`` (a call left to a function defined nowhere is an error) and emit the AMDGCN assembly and the
    object file: ``(asm text, object bytes)``.  A module with inline assembly gets no
    object (None): llvmlite's LLVM has no AMDGPU assembly parser (the object streamer would abort the process on
    it), so the ``hsaco`` stage assembles the text with ziglang's clang, which reports bad asm as an error."""
    llvm, mod = parse_llir(llir)
    mod.triple = TRIPLE
    tm = target_machine(arch, opt_level)
    mod.data_layout = str(tm.target_data)
    _link_device_libs(mod, arch)
    for fn in mod.functions:
        if not fn.is_declaration and fn.name != kernel:
            fn.linkage = llvm.Linkage.internal
    try:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.slp_vectorization = True  # packed math (v_pk_add_f32, v_pk_fma_f32) from the per-register ops
        pb = llvm.create_pass_builder(tm, pto)
        # drop the device-library functions the kernel does not call before O3 optimises every one of them
        dce = llvm.create_new_module_pass_manager()
        dce.add_global_dead_code_eliminate_pass()
        dce.run(mod, pb)
        pb.getModulePassManager().run(mod, pb)
        if _link_printf_alloc(mod):  # the pipeline lowered printf into calls of __printf_alloc: inline it
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        mod.verify()
        _no_external_calls(mod)
        # code generation rewrites the module it runs on (control-flow annotation): each output from its own copy
        if _INLINE_ASM.search(llir):
            return tm.emit_assembly(mod), None
        text = tm.emit_assembly(mod.clone())
        obj = tm.emit_object(mod)
    except RuntimeError as e:
        raise CompilationFailed(f"LLVM failed to generate AMDGCN for {arch}", str(e)) from None
    return text, bytes(obj)


def _no_external_calls(mod) -> None:
    """An AMDGPU code object cannot use a function or variable defined elsewhere (ld.lld would leave it an undefined
    symbol of the hsaco, which fails only when the runtime loads it): any left after linking and optimising is an
    error."""
    missing = sorted([f.name for f in mod.functions if f.is_declaration and not f.name.startswith("llvm.")] +
                     [g.name for g in mod.global_variables  # an external LDS array is the kernel's dynamic LDS
                      if g.is_declaration and "addrspace(3)" not in str(g).split("=", 1)[1].split(" global ")[0]])
    if missing:
        raise CompilationFailed(f"the kernel uses symbols no library linked here defines: {', '.join(missing)}")


#: code object v5: the byte offset of ``hidden_printf_buffer`` in the implicit kernel arguments
PRINTF_BUFFER_OFFSET = 72
#: the printf buffer's header (u32 bytes used, u32 capacity); records follow it
PRINTF_HEADER = 8

#: ``__printf_alloc(bytes)``, what LLVM's AMDGPU printf lowering calls for each record: ``bytes`` reserved in the
#: runtime's printf buffer (``hidden_printf_buffer``: a u32 count of bytes used, a u32 capacity, the records from
#: byte 8) by a compare-and-swap on the count, the record's address returned; null when the buffer is missing (a
#: launch that supplied none) or full, and then nothing is written.  The scheme of the OpenCL runtime's and the
#: device libraries' function, written here so that printing needs no device library.
PRINTF_ALLOC = f"""
define linkonce_odr hidden ptr addrspace(1) @__printf_alloc(i32 %bytes) alwaysinline {{
entry:
  %args = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %slot = getelementptr i8, ptr addrspace(4) %args, i64 {PRINTF_BUFFER_OFFSET}
  %buf = load ptr addrspace(1), ptr addrspace(4) %slot, align 8
  %none = icmp eq ptr addrspace(1) %buf, null
  br i1 %none, label %full, label %open
open:
  %capp = getelementptr i8, ptr addrspace(1) %buf, i64 4
  %cap = load i32, ptr addrspace(1) %capp, align 4
  %used0 = load atomic i32, ptr addrspace(1) %buf syncscope("agent") monotonic, align 4
  br label %try
try:
  %used = phi i32 [ %used0, %open ], [ %seen, %retry ]
  %next = add i32 %used, %bytes
  %end = add i32 %next, {PRINTF_HEADER}
  %over = icmp ugt i32 %end, %cap
  br i1 %over, label %full, label %swap
swap:
  %pair = cmpxchg ptr addrspace(1) %buf, i32 %used, i32 %next syncscope("agent") monotonic monotonic, align 4
  %seen = extractvalue {{ i32, i1 }} %pair, 0
  %ok = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %ok, label %done, label %retry
retry:
  br label %try
done:
  %at = add i32 %used, {PRINTF_HEADER}
  %at64 = zext i32 %at to i64
  %rec = getelementptr i8, ptr addrspace(1) %buf, i64 %at64
  ret ptr addrspace(1) %rec
full:
  ret ptr addrspace(1) null
}}
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
"""


def _link_printf_alloc(mod) -> bool:
    """After the pipeline, whose AMDGPU printf lowering turned each ``printf`` call into a ``__printf_alloc``
    call and the stores of a record: :data:`PRINTF_ALLOC` linked in (True), to be inlined by a second run."""
    llvm = llvm_binding()
    if not any(f.name == "__printf_alloc" and f.is_declaration for f in mod.functions):
        return False
    lib = llvm.parse_assembly(f'target triple = "{TRIPLE}"\n' + PRINTF_ALLOC)
    lib.data_layout = mod.data_layout
    mod.link_in(lib)
    mod.get_function("__printf_alloc").linkage = llvm.Linkage.internal
    return True


def _link_device_libs(mod, arch: str) -> None:
    """The ROCm device libraries the module calls into (``__ocml_*`` / ``__ockl_*``), linked with the arch's
    control constants (:mod:`tritium_amd.devicelibs`)."""
    from . import devicelibs
    from .arch import warp_size_of

    if not devicelibs.needed(mod):
        return
    try:
        devicelibs.link(mod, arch, warp_size_of(arch) == 64)
    except FileNotFoundError as e:
        raise CompilationFailed(str(e)) from None
    except (RuntimeError, ValueError) as e:
        raise CompilationFailed(f"linking the ROCm device libraries from {devicelibs.directory()} failed "
                                f"(bitcode from a newer LLVM than llvmlite's?)", str(e)) from None


# ------------------------------------------------------------------------------------------------
# Tools: the linker and the assembler
# ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _zig() -> Optional[str]:
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        exe = os.path.join(d, "zig")
        if os.access(exe, os.X_OK):
            return exe
    return None


def lld_command() -> Optional[list]:
    """The command that runs ``ld.lld``: ``TRITIUM_LLD_PATH``, ziglang's ``zig ld.lld``, or ``ld.lld`` on PATH."""
    env = os.environ.get("TRITIUM_LLD_PATH")
    if env:
        return [env]
    zig = _zig()
    if zig:
        return [zig, "ld.lld"]
    found = shutil.which("ld.lld")
    return [found] if found else None


def _run(cmd: list, what: str) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise CompilationFailed(f"{what}: cannot run {cmd[0]}: {e}") from None
    if r.returncode != 0:
        raise CompilationFailed(f"{what} failed ({' '.join(cmd[:2])}, exit {r.returncode})", r.stdout + r.stderr)


def link_hsaco(obj: bytes) -> bytes:
    """An AMDGPU object file -> the hsaco code object (``ld.lld -shared``)."""
    lld = lld_command()
    if lld is None:
        raise CompilationFailed(f"no ld.lld to link the hsaco: {PIP} (ziglang ships one), install LLVM's lld, or set "
                                "TRITIUM_LLD_PATH")
    with tempfile.TemporaryDirectory(prefix="tritium-hsaco-") as d:
        src, out = os.path.join(d, "kernel.o"), os.path.join(d, "kernel.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        _run(lld + ["-shared", src, "-o", out], "ld.lld")
        with open(out, "rb") as f:
            return f.read()


def assemble(text: str, arch: str) -> bytes:
    """AMDGCN assembly text -> an object file (ziglang's clang as the assembler: ``zig clang -cc1as``)."""
    zig = _zig()
    if zig is None:
        raise CompilationFailed(f"assembling a substituted amdgcn text needs ziglang's clang: {PIP}")
    with tempfile.TemporaryDirectory(prefix="tritium-amdgcn-") as d:
        src, out = os.path.join(d, "kernel.s"), os.path.join(d, "kernel.o")
        with open(src, "w") as f:
            f.write(text)
        _run([zig, "clang", "-cc1as", "-triple", TRIPLE, "-target-cpu", arch, "-filetype", "obj", "-o", out, src],
             "assembling the amdgcn")
        with open(out, "rb") as f:
            return f.read()


# ------------------------------------------------------------------------------------------------
# The kernel's code-object metadata (the assembly's .amdgpu_metadata block, YAML)
# ------------------------------------------------------------------------------------------------

def _scalar(text: str):
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        return [_scalar(x) for x in t[1:-1].split(",") if x.strip()]
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if t in ("true", "false"):
        return t == "true"
    return t


def _parse_yaml(lines: list):
    """The block-style YAML subset LLVM writes for code-object metadata (mappings, ``- `` sequences, scalars and
    one-line flow lists) -> Python values."""
    rows = []
    for ln in lines:
        if not ln.strip() or ln.strip() in ("---", "...") or ln.lstrip().startswith("#"):
            continue
        rows.append(ln.rstrip())
    pos = 0

    def indent(s):
        return len(s) - len(s.lstrip(" "))

    def block(level):
        nonlocal pos
        if pos < len(rows) and rows[pos].lstrip(" ").startswith("- ") and indent(rows[pos]) == level:
            out = []
            while pos < len(rows) and indent(rows[pos]) == level and rows[pos].lstrip(" ").startswith("- "):
                rest = rows[pos][level + 2:]
                if ":" in rest and not rest.strip().startswith(("'", '"')):
                    rows[pos] = " " * (level + 2) + rest  # "- key: v": a mapping whose first key is on this line
                    out.append(block(level + 2))
                else:
                    out.append(_scalar(rest))
                    pos += 1
            return out
        out = {}
        while pos < len(rows) and indent(rows[pos]) == level and not rows[pos].lstrip(" ").startswith("- "):
            key, _, val = rows[pos].strip().partition(":")
            pos += 1
            if val.strip():
                out[key.strip()] = _scalar(val)
            elif pos < len(rows) and indent(rows[pos]) >= level and (
                    indent(rows[pos]) > level or rows[pos].lstrip(" ").startswith("- ")):
                out[key.strip()] = block(indent(rows[pos]))
            else:
                out[key.strip()] = None
        return out

    return block(indent(rows[0])) if rows else {}


def code_object_metadata(text: str) -> dict:
    """The ``.amdgpu_metadata`` block of an AMDGCN assembly text, parsed."""
    m = re.search(r"\.amdgpu_metadata\s*\n(.*?)\n\s*\.end_amdgpu_metadata", text, re.S)
    if not m:
        raise CompilationFailed("the amdgcn assembly has no .amdgpu_metadata block")
    return _parse_yaml(m.group(1).splitlines())


def kernel_metadata(text: str, name: Optional[str] = None) -> dict:
    """What the compiled kernel's metadata records from its code object: kernarg size and layout (``kernargs``: the
    explicit arguments; ``hidden_kernargs``: the code object v5 hidden ones the kernel uses, which the launcher
    fills), LDS bytes, VGPR / SGPR / AGPR counts, spills, scratch, wavefront size, the largest work-group, the
    printf formats (``amdhsa.printf``: ``"<id>:<argument count>:<argument bytes>...:<format>"`` each, the format
    with ``:`` written ``\\72``)."""
    md = code_object_metadata(text)
    kernels = md.get("amdhsa.kernels") or []
    k = next((x for x in kernels if x.get(".name") == name), kernels[0] if kernels else None)
    if k is None:
        raise CompilationFailed(f"the amdgcn metadata names no kernel{f' {name}' if name else ''}")
    every = [{"offset": a.get(".offset"), "size": a.get(".size"), "kind": a.get(".value_kind")}
             for a in k.get(".args") or []]
    args = [a for a in every if not str(a["kind"]).startswith("hidden_")]
    hidden = [a for a in every if str(a["kind"]).startswith("hidden_")]
    return {
        "kernarg_size": k.get(".kernarg_segment_size"), "kernarg_align": k.get(".kernarg_segment_align"),
        "kernargs": args, "hidden_kernargs": hidden, "lds": k.get(".group_segment_fixed_size", 0),
        "vgprs": k.get(".vgpr_count"), "sgprs": k.get(".sgpr_count"), "agprs": k.get(".agpr_count", 0),
        "vgpr_spills": k.get(".vgpr_spill_count", 0), "sgpr_spills": k.get(".sgpr_spill_count", 0),
        "private_segment": k.get(".private_segment_fixed_size", 0), "wavefront_size": k.get(".wavefront_size"),
        "max_flat_workgroup_size": k.get(".max_flat_workgroup_size"), "amdhsa_target": md.get("amdhsa.target"),
        "printf": list(md.get("amdhsa.printf") or []),
    }
