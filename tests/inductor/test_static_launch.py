"""Inductor's static CUDA launcher with tritium's kernels (TRITIUM_INDUCTOR_STATIC_LAUNCH=1), checked without a GPU.

Inductor launches a compiled Triton kernel from C++ (``StaticallyLaunchedCudaKernel``) when it finds the kernel's
cubin where Triton's cache keeps it and the kernel needs nothing the C++ launcher does not do.  With the switch on,
tritium puts the cubin there; the C++ launcher then packs the parameters from the kernel's signature, Triton's way.
Here, in a fresh process with tritium installed as ``triton`` and kernels compiled for cuda:90: Inductor's own code
finds the cubin, builds its launcher, and the parameter types it would pass match the PTX entry's, one for one.
(Loading and launching need a GPU: tests/gpu.)"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(r'''
    import json, os, re, sys
    import tritium
    tritium.install_as_triton()
    import triton
    import triton.language as tl
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    from torch._inductor.runtime.runtime_utils import triton_hash_to_path_key
    from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel

    @triton.jit
    def scaled_add(out_ptr, x_ptr, n, flag, big, a, b, c, d, e, f, g, h, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + o, mask=o < n, other=0.0)
        if flag:
            v = v * 2.0
        v += (a.to(tl.float32) + b.to(tl.float32) + c.to(tl.float32) + d.to(tl.float32) + e.to(tl.float32)
              + f.to(tl.float32) + g.to(tl.float32) + h.to(tl.float32))
        tl.store(out_ptr + o + big, v, mask=o < n)

    names = ["out_ptr", "x_ptr", "n", "flag", "big", "a", "b", "c", "d", "e", "f", "g", "h"]
    tys = ["*fp32", "*fp16", "i32", "i1", "i64", "i8", "i16", "u8", "u16", "u32", "u64", "fp32", "fp64"]
    sig = dict(zip(names, tys), BLOCK="constexpr")
    out = {}
    for nw in (1, 4):
        k = triton.compile(ASTSource(scaled_add, sig, {"BLOCK": 256}, {}), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": nw})
        path = os.path.join(triton_cache_dir(0), triton_hash_to_path_key(k.hash), f"{k.src.fn.__name__}.cubin")
        found = os.path.exists(path)
        same = found and open(path, "rb").read() == k.asm["cubin"]
        k._cubin_path = path
        s = StaticallyLaunchedCudaKernel(k)
        params = re.search(r"\.entry\s+(\w+)\((.*?)\)", k.asm["ptx"], re.S)
        ptx = [p.split()[1] if p.split()[1] != ".align" else ".b" + p.split()[2] for p in
               (q.strip() for q in params.group(2).split(","))]
        out[nw] = dict(found=found, same=same, entry=params.group(1), name=s.name, arg_tys=s.arg_tys, ptx=ptx,
                       num_warps=s.num_warps, shared=s.shared, scratch=s.has_global_scratch)
    print("RESULT " + json.dumps(out))
''')

#: what the C++ launcher writes for each type character (its width and kind), against the PTX parameter types a
#: kernel may declare for it: the value must be read back unchanged (i1 is written as an int, read as its low byte)
COMPATIBLE = {"O": {".u64"}, "l": {".u64"}, "K": {".u64"}, "i": {".u32", ".u8"}, "I": {".u32"}, "h": {".u16"},
              "H": {".u16"}, "b": {".u8"}, "B": {".u8"}, "f": {".f32"}, "d": {".f64"}}


def _run(tmp_path, switch: str):
    env = dict(os.environ, TRITIUM_INDUCTOR_STATIC_LAUNCH=switch, TRITON_CACHE_DIR=str(tmp_path / "triton"),
               TRITIUM_CACHE_DIR=str(tmp_path / "tritium"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITIUM_TARGET="cuda:90", TRITIUM_COMPILE_ONLY="1")
    for var in ("TRITIUM_DISABLE_CACHE", "TRITIUM_AS_TRITON"):
        env.pop(var, None)
    script = tmp_path / "static_launch.py"  # a file: @jit reads its kernels' source
    script.write_text(SCRIPT)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_inductor_finds_the_cubin_and_its_launcher_matches_the_ptx_entry(tmp_path):
    pytest.importorskip("mlir")
    for nw, r in _run(tmp_path, "1").items():
        assert r["found"] and r["same"], r  # at Inductor's own path, byte for byte the kernel's
        assert r["entry"] == r["name"] == "scaled_add"  # cuModuleGetFunction finds it by the Python name
        assert r["num_warps"] == int(nw)
        assert len(r["arg_tys"]) == len(r["ptx"]) == 13, r  # BLOCK (constexpr) in neither
        for ch, ty in zip(r["arg_tys"], r["ptx"]):
            assert ty in COMPATIBLE[ch], (ch, ty, r)
        # Triton's kernels end with two scratch pointers, tritium's do not: the launcher's extra null pointer is
        # a parameter cuLaunchKernel never reads (the entry's own list decides)
        assert r["scratch"] is True


def test_without_the_switch_inductor_keeps_compiledkernel_run(tmp_path):
    pytest.importorskip("mlir")
    r = _run(tmp_path, "0")
    assert not any(v["found"] for v in r.values())
    assert not (tmp_path / "triton").exists() or not any((tmp_path / "triton").iterdir())
