"""``@jit`` on functions built with ``exec()`` / ``compile()`` from a string (Triton's tests, code generators):
tritium finds the text they were compiled from (source/files.py), or is given it (``jit(fn, source=...)``,
``JITFunction._unsafe_update_src``); errors name the generated source's lines; the file cache serves the same
generated source in another process; a function whose source cannot be found is a clear error."""
import __future__
import ast
import inspect
import json
import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import ASTSource
from tritium.compiler import cache as fcache
from tritium.compiler import registry
from tritium.errors import CompilationError, DeviceAssertionError, OutOfBoundsError, SourceNotFound
from tritium.source import files as sources

MODES = ["interpreter", "interpreter:eager"]


@pytest.fixture(params=MODES)
def mode(request):
    registry.set_active(request.param)
    yield request.param
    registry.set_active(None)


@triton.jit
def _template(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, GENERATE_TEST_HERE, mask=m)  # noqa: F821 - replaced in the generated kernels


def _patch(template, expr):
    """Triton's test_core.patch_kernel (interpreter branch): the template's source, decorator line included,
    edited and exec'd with the template's globals."""
    src = textwrap.dedent(inspect.getsource(template.fn)).replace("GENERATE_TEST_HERE", expr)
    ns = {}
    exec(src, template.fn.__globals__, ns)  # noqa: S102
    return ns[template.fn.__name__]


def _inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype), (rng.random(n) + 0.5).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype), rng.integers(1, 50, n).astype(dtype)


def _launch(kernel, x, y, block=32):
    out = np.zeros_like(x)
    kernel[(triton.cdiv(x.size, block),)](x, y, out, x.size, BLOCK=block)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_templates_same_name_different_bodies(mode, dtype):
    x, y = _inputs(203, dtype, 0)
    cases = [("x + y", x + y), ("x * y", x * y), ("x - 2 * y", x - 2 * y), ("tl.maximum(x, y)", np.maximum(x, y))]
    kernels = [_patch(_template, expr) for expr, _ in cases]
    assert all(isinstance(k, triton.JITFunction) and k.__name__ == "_template" for k in kernels)
    assert len({k.file for k in kernels}) == len(kernels)  # a pseudo file per distinct source
    assert len({k.cache_key for k in kernels}) == len(kernels)
    for k, (expr, ref) in zip(kernels, cases):
        assert k.file.startswith("<string:") and expr in k.src
        assert expr in linecache.getline(k.file, k.starting_line_number + 6)  # the store line, as generated
        np.testing.assert_array_equal(_launch(k, x, y), ref)
        assert k.compile_count == 1


_NESTED = '''
import tritium as triton
import tritium.language as tl

SCALE = 3


def make(offset):
    # the kernel is nested, indented and reads a closure value
    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * SCALE + OFFSET, mask=m)
    OFFSET = offset
    return kernel


def plain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) - SCALE, mask=offs < n)
'''


def test_nested_indented_and_undecorated(mode):
    ns = {}
    exec(compile(_NESTED, "<generated>", "exec"), ns)  # noqa: S102
    x = np.random.default_rng(1).standard_normal(77).astype(np.float32)
    k = ns["make"](5)
    assert k.starting_line_number == 10 and k.src.startswith("@triton.jit\ndef kernel(")
    assert k.file.startswith("<generated:")
    out = np.zeros_like(x)
    k[(3,)](x, out, x.size, BLOCK=32)
    np.testing.assert_allclose(out, x * 3 + 5, rtol=1e-6)
    p = triton.jit(ns["plain"])  # decorated after the exec, not in the source
    assert p.starting_line_number == 19
    p[(3,)](x, out, x.size, BLOCK=32)
    np.testing.assert_allclose(out, x - 3, rtol=1e-6)


def test_future_annotations_source(mode):
    """Source compiled with ``from __future__ import annotations`` (string annotations) is found with its flags."""
    src = "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOCK)\n" \
          "    tl.store(x_ptr + o, tl.load(x_ptr + o) * 2)\n"
    ns = {"triton": triton, "tl": tl}
    exec(compile(src, "<string>", "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True), ns)  # noqa
    k = ns["k"]
    assert k.params[1].is_constexpr
    x = np.arange(16, dtype=np.float32)
    k[(1,)](x, BLOCK=16)
    np.testing.assert_array_equal(x, np.arange(16) * 2)


# ------------------------------------------------------------------------------------------------ callees
@triton.jit
def _file_helper(a, b):
    return a * 2 + b


_HELPER_NS = {}
exec(compile('''
@triton.jit
def exec_helper(a, b):
    return a * 3 - b
''', "<string>", "exec"), globals(), _HELPER_NS)  # noqa: S102
exec_helper = _HELPER_NS["exec_helper"]


@triton.jit
def _calls_exec_helper(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, exec_helper(tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m)), mask=m)


def test_callees(mode):
    x, y = _inputs(100, np.float32, 2)
    # a file kernel calling an exec-built @jit function
    np.testing.assert_allclose(_launch(_calls_exec_helper, x, y), x * 3 - y, rtol=1e-6)
    assert _calls_exec_helper.source_files[1].startswith("<string:")
    # an exec-built kernel calling a file @jit function and an exec-built one
    k = _patch(_template, "_file_helper(x, y) + exec_helper(y, x)")
    np.testing.assert_allclose(_launch(k, x, y), (x * 2 + y) + (y * 3 - x), rtol=1e-5)


# ------------------------------------------------------------------------------------------ _unsafe_update_src
def test_unsafe_update_src(mode):
    x, y = _inputs(150, np.float32, 3)
    k = triton.JITFunction(_template.fn)  # Triton's test_core.patch_kernel (compiled branch)
    first_file = k.file
    seen = set()
    for expr, ref in [("x + y", x + y), ("x * y - 1", x * y - 1), ("tl.minimum(x, y)", np.minimum(x, y))]:
        k._unsafe_update_src(textwrap.dedent(inspect.getsource(_template.fn)).replace("GENERATE_TEST_HERE", expr))
        assert k.file.startswith("<test_exec_source.py:") and k.file not in seen
        seen.add(k.file)
        assert expr in linecache.getline(k.file, k.starting_line_number + 6)  # same line numbers as the file
        np.testing.assert_allclose(_launch(k, x, y), ref, rtol=1e-6)  # the new source, not the last compile
    assert k.compile_count == 3 and first_file == __file__
    with pytest.raises(ValueError, match=r"has the parameters \(x_ptr, out_ptr\)"):
        k._unsafe_update_src("def _template(x_ptr, out_ptr):\n    pass\n")
    with pytest.raises(ValueError, match="must be one 'def'"):
        k._unsafe_update_src("x = 1\n")


# ------------------------------------------------------------------------------------------------- errors
_BAD = '''
# generated kernel
import tritium as triton
import tritium.language as tl


@triton.jit
def bad(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    BODY
'''


def _exec_bad(body, **jit_kwargs):
    ns = {}
    src = _BAD.replace("BODY", body)
    if jit_kwargs:
        src = src.replace("@triton.jit", f"@triton.jit(**{jit_kwargs!r})")
    exec(src, ns)  # noqa: S102
    return ns["bad"]


def test_compile_error_names_generated_line(mode):
    k = _exec_bad("x = tl.load(x_ptr + offs)\n    tl.store(x_ptr + offs, x + tl.arange(0, 10))")
    with pytest.raises(CompilationError) as e:
        k[(1,)](np.zeros(16, np.float32), 16, BLOCK=16)
    assert e.value.filename == k.file and e.value.filename.startswith("<string:")
    assert e.value.lineno == 11, str(e.value)  # the line within the generated source
    assert "tl.store(x_ptr + offs, x + tl.arange(0, 10))" in str(e.value)
    assert "power of 2" in str(e.value) or "power of two" in str(e.value)


def test_out_of_bounds_names_generated_line(mode):
    k = _exec_bad("tl.store(x_ptr + offs, tl.load(x_ptr + offs + n))")
    with pytest.raises(OutOfBoundsError) as e:
        k[(1,)](np.zeros(16, np.float32), 16, BLOCK=16)
    msg = str(e.value)
    assert f"{k.file}:10" in msg and "tl.store(x_ptr + offs, tl.load(x_ptr + offs + n))" in msg, msg


def test_device_assert_names_generated_line(mode):
    k = _exec_bad("tl.device_assert(tl.load(x_ptr + offs) < 5, 'too big')", debug=True)
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(DeviceAssertionError) as e:
        k[(1,)](x, 16, BLOCK=16)
    msg = str(e.value)
    assert f"{k.file}:10" in msg and "tl.device_assert(tl.load(x_ptr + offs) < 5, 'too big')" in msg, msg


def test_error_excerpt_survives_linecache_clear(mode):
    k = _exec_bad("tl.store(x_ptr + offs, tl.load(x_ptr + offs + n))")
    linecache.clearcache()
    with pytest.raises(OutOfBoundsError) as e:
        k[(1,)](np.zeros(16, np.float32), 16, BLOCK=16)
    assert "tl.load(x_ptr + offs + n)" in str(e.value)


def test_ttir_locations_name_generated_source():
    k = _patch(_template, "x + y")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    c = triton.compile(ASTSource(k, sig, constexprs={"BLOCK": 64}), target="cuda:90", until="ttir", use_cache=False)
    assert f'"{k.file}":{k.starting_line_number + 6}' in c.asm["ttir"]


# ---------------------------------------------------------------------------------------- the file cache
_CACHE_SCRIPT = '''
import json, sys
import numpy as np
import tritium as triton
import tritium.language as tl
from tritium.compiler import cache as fcache

SRC = """
@triton.jit
def gen(x_ptr, out_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out_ptr + o, tl.load(x_ptr + o) * 7 + 1)
"""
ns = {"triton": triton, "tl": tl}
exec(SRC, ns)
k = ns["gen"]
x = np.arange(32, dtype=np.float32)
out = np.zeros_like(x)
k[(1,)](x, out, BLOCK=32)
kernel = next(iter(next(iter(k.cache.values())).values()))
print(json.dumps({"hits": fcache.stats["hits"], "file": k.file, "key": k.cache_key,
                  "ok": bool((out == x * 7 + 1).all()), "from_cache": kernel.from_cache,
                  "files": kernel.metadata["source_files"]}))
'''


@pytest.mark.parametrize("target", MODES)
def test_file_cache_hit_across_processes(tmp_path, target):
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(tmp_path / "cache"), "TRITIUM_TARGET": target}
    env.pop("TRITIUM_DISABLE_CACHE", None)
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    a, b = runs
    assert a["ok"] and b["ok"]
    assert a["file"] == b["file"] and a["file"].startswith("<string:") and a["key"] == b["key"]
    assert not a["from_cache"] and a["hits"] == 0
    assert b["from_cache"] and b["hits"] == 1 and b["files"] == [b["file"]]


# ------------------------------------------------------------------------------------- source not found
def test_ast_built_function_is_a_clear_error():
    tree = ast.parse("def k(x_ptr):\n    pass\n")
    tree.body[0].args.args[0].arg = "y_ptr"  # no text compiles to this function
    ns = {}
    exec(compile(tree, "<ast-built>", "exec"), ns)  # noqa: S102
    with pytest.raises(SourceNotFound) as e:
        triton.jit(ns["k"])
    assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)  # inspect's / Triton's kinds
    msg = str(e.value)
    assert "'k'" in msg and "<ast-built>" in msg and "source=" in msg and "import tritium" in msg
    # the explicit path checks the text it is given
    with pytest.raises(SourceNotFound, match="does not compile to its code"):
        triton.jit(ns["k"], source="def k(x_ptr):\n    pass\n")
    assert triton.jit(ns["k"], source="def k(y_ptr):\n    pass\n").src == "def k(y_ptr):\n    pass\n"


def test_wrong_linecache_text_is_not_used():
    """A stale text in linecache under the function's file name does not compile to it: the text the function
    was compiled from (remembered by the audit hook) is used instead."""
    name = "<wrong-linecache>"
    real = "def k(x_ptr, BLOCK: tl.constexpr):\n    o = tl.arange(0, BLOCK)\n    tl.store(x_ptr + o, o)\n"
    stale = real.replace("tl.store(x_ptr + o, o)", "tl.store(x_ptr + o, o + 100)")
    ns = {"tl": tl}
    exec(compile(real, name, "exec"), ns)  # noqa: S102
    linecache.cache[name] = (len(stale), None, stale.splitlines(True), name)
    try:
        k = triton.jit(ns["k"])
    finally:
        linecache.cache.pop(name, None)
    assert k.src == real
    x = np.full(8, -1, np.int32)
    k[(1,)](x, BLOCK=8)
    np.testing.assert_array_equal(x, np.arange(8))


def test_memo_is_bounded():
    for i in range(sources.MEMO_SIZE + 10):
        compile(f"def f{i}(): pass\n", "<bounded>", "exec")
    assert len(sources._memo) <= sources.MEMO_SIZE
    assert ("<bounded>", f"def f{sources.MEMO_SIZE + 9}(): pass\n".encode()) in sources._memo


_BEFORE_IMPORT = '''
import linecache, json
A = "def ka(x_ptr, BLOCK: 'tl.constexpr'):\\n    o = tl.arange(0, BLOCK)\\n    tl.store(x_ptr + o, o * 2)\\n"
B = "def kb(x_ptr):\\n    pass\\n"
ns = {}
linecache.cache["<gen-a>"] = (len(A), None, A.splitlines(True), "<gen-a>")  # IPython-style registered source
exec(compile(A, "<gen-a>", "exec"), ns)
exec(compile(B, "<gen-b>", "exec"), ns)  # compiled before tritium is imported: nothing remembers it

import numpy as np
import tritium as triton
import tritium.language as tl
from tritium.errors import SourceNotFound
ns["tl"] = tl
out = {}
ka = triton.jit(ns["ka"])  # found in linecache
x = np.zeros(8, np.int32)
ka[(1,)](x, BLOCK=8)
out["a_ok"] = x.tolist() == [2 * i for i in range(8)]
try:
    triton.jit(ns["kb"])
except SourceNotFound as e:
    out["b"] = str(e)
out["b_given"] = triton.jit(ns["kb"], source=B).src == B
del linecache.cache["<gen-a>"]
try:
    triton.jit(ns["ka"])
except SourceNotFound as e:
    out["a_deleted"] = str(e)
print(json.dumps(out))
'''


def test_source_compiled_before_import_or_deleted_from_linecache(tmp_path):
    env = {**os.environ, "TRITIUM_CACHE_DIR": str(tmp_path / "cache"), "TRITIUM_TARGET": "interpreter"}
    r = subprocess.run([sys.executable, "-c", _BEFORE_IMPORT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["a_ok"] and out["b_given"]
    assert "cannot find the source of @jit function 'kb'" in out["b"] and "'<gen-b>'" in out["b"]
    assert "cannot find the source of @jit function 'ka'" in out["a_deleted"]
