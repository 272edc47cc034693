"""``tl.device_print`` / ``print`` and ``tl.device_assert`` on hip targets (compile-only: no AMD GPU here).

The form: C ``printf`` lowered by LLVM's AMDGPU printf pass (the OpenCL buffered scheme) with tritium's
``__printf_alloc``: each call reserves a record in the runtime's printf buffer (``hidden_printf_buffer``) by a
compare-and-swap, stores the format's id and the arguments; the formats are in the code object's ``amdhsa.printf``
metadata.  No device library.  An assertion prints its message with the program id and traps (``s_trap 2``)."""
import re

import pytest

pytest.importorskip("mlir")
pytest.importorskip("llvmlite")

from tests.amd.test_compile import build  # noqa: E402
from tests.e2e import kernels as K  # noqa: E402
from tritium_amd import devicelibs  # noqa: E402
from tritium_amd.hsaco import PRINTF_BUFFER_OFFSET, PRINTF_HEADER  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402


@pytest.fixture(autouse=True)
def no_libs(monkeypatch, tmp_path):
    """Printing needs no device library: they are hidden for every test here."""
    monkeypatch.setenv(devicelibs.ENV, str(tmp_path))


def _formats(k):
    """``[(id, [argument bytes], format)]`` from the metadata's ``amdhsa.printf``."""
    out = []
    for s in k.metadata["printf"]:
        ident, count, rest = s.split(":", 2)
        parts = rest.split(":", int(count))
        out.append((int(ident), [int(p) for p in parts[:-1]], parts[-1]))
    return out


def _buffer_kernarg(k):
    hidden = {a["kind"]: a for a in k.metadata["hidden_kernargs"]}
    assert "hidden_hostcall_buffer" not in hidden  # no hostcall: nothing calls out of the kernel
    return hidden["hidden_printf_buffer"]


def test_device_print_records_and_metadata():
    k = build(K.device_print_kernel, {"X": "*fp32", "n": "i32"}, BLOCK=32)
    (ident, sizes, fmt), = _formats(k)
    # pid x, y, z, the element's index, the value (f32: printf's double argument stored as float, OpenCL's rule)
    assert ident == 1 and sizes == [4, 4, 4, 4, 4]
    assert fmt == "pid (%u, %u, %u) idx (%u) x=%f\\n"
    if "hsaco" in k.asm:  # the code object's metadata note (msgpack) holds the format and the buffer argument
        assert b"1:5:4:4:4:4:4:pid (%u, %u, %u) idx (%u) x=%f\\n" in k.asm["hsaco"]
        assert b"amdhsa.printf" in k.asm["hsaco"] and b"hidden_printf_buffer" in k.asm["hsaco"]
    arg = _buffer_kernarg(k)
    assert arg["size"] == 8 and arg["offset"] - k.metadata["hidden_kernargs"][0]["offset"] == PRINTF_BUFFER_OFFSET
    asm = k.asm["amdgcn"].split(".amdgpu_metadata")[0]
    assert not re.search(r"s_swappc_b64|@gotpcrel|__printf_alloc", asm)  # __printf_alloc inlined
    # the buffer's address read from its kernel argument, the record's 24 bytes (the id and five 4-byte
    # arguments) reserved by a compare-and-swap on the buffer's count, the record past the 8-byte header
    assert re.search(rf"s_load_dwordx2 s\[\d+:\d+\], s\[\d+:\d+\], {arg['offset']:#x}\b", asm)
    assert re.search(r"v_add_u32_e32 v\d+, 24, v\d+\s+global_atomic_cmpswap", asm)
    assert re.search(rf"v_add_u32_e32 v\d+, {PRINTF_HEADER}, v\d+", asm)
    assert re.search(r"v_mov_b32_e32 v(\d+), 1\n(?:.*\n){0,4}?\s*global_store_dwordx4 v\[\d+:\d+\], v\[\1:", asm)


def test_print_of_int64_and_pointer_arguments():
    @triton.jit
    def wide(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs)
        tl.device_print("v", x)
        tl.device_print("p", Y + offs, hex=True)

    k = build(wide, {"X": "*i64", "Y": "*fp32"}, BLOCK=64)
    fmts = sorted(_formats(k))
    assert [f[1] for f in fmts] == [[4, 4, 4, 4, 8], [4, 4, 4, 4, 8]]
    assert {f[2].rsplit(" ", 1)[1] for f in fmts} == {"v%lld\\n", "p%p\\n"}


def test_print_without_operands():
    @triton.jit
    def hello(X):
        tl.device_print("hello")

    k = build(hello, {"X": "*fp32"})
    assert _formats(k) == [(1, [4, 4, 4], "pid (%u, %u, %u) hello\\n")]
    _buffer_kernarg(k)


def test_device_assert_prints_and_traps():
    @triton.jit
    def checked(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.device_assert(x > 0, "x must be 100% positive")
        tl.store(X + tl.arange(0, BLOCK), x)

    k = build(checked, {"X": "*fp32"}, BLOCK=64, options={"debug": True})
    (ident, sizes, fmt), = _formats(k)
    assert sizes == [4, 4, 4]
    # ':' is written \72 in the metadata (the runtime splits on ':'), a quote doubled by YAML; '%' escaped as '%%'
    text = fmt.replace("\\72", ":").replace("''", "'")
    m = re.fullmatch(r"pid \(%u, %u, %u\) device assertion failed: 'x must be 100%% positive', in kernel at "
                     r"(.*test_printf\.py):(\d+)\\n", text)
    assert m, text
    assert "tl.device_assert" in open(m.group(1)).read().splitlines()[int(m.group(2)) - 1]
    asm = k.asm["amdgcn"]
    assert "s_trap 2" in asm and "global_atomic_cmpswap" in asm
    _buffer_kernarg(k)


def test_print_and_assert_need_no_device_libraries_where_math_does():
    """A kernel printing and using libdevice-free math compiles with the libraries hidden (the fixture)."""
    assert devicelibs.directory() is None
    k = build(K.device_print_kernel, {"X": "*fp32", "n": "i32"}, "gfx1100", BLOCK=32)
    assert _formats(k) and re.search(r"\.wavefront_size:\s+32", k.asm["amdgcn"])
