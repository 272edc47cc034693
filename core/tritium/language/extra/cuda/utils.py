"""``tl.extra.cuda`` utilities (Triton 3.6's ``triton.language.extra.cuda``): special registers read by inline
PTX, the launch's warp count as a constexpr, fp8e4b15 software conversions, grid dependency control.

* ``globaltimer()``: int64 scalar, ``mov.u64 %globaltimer`` (nanoseconds; not pure: never merged or hoisted).
* ``smid()``: int32 scalar, ``mov.u32 %smid``.
* ``num_warps()`` / ``num_threads()``: constexprs from the compile options (``num_warps``, ``num_warps * 32``).
* ``convert_custom_float8_sm80/sm70(arg, dst_ty, fp_downcast_rounding=None)``: fp8e4b15 (Triton's fp8 with 4
  exponent bits, bias 15, no inf/nan, largest 1.875) <-> fp16/fp32 in PTX.  tritium has no fp8e4b15 tensors, so
  the fp8 side is a uint8/int8 tensor of the bits: a uint8/int8 argument is upcast to ``dst_ty`` (fp16 or fp32),
  an fp16/fp32 argument (fp32 first rounded to fp16, toward zero unless ``fp_downcast_rounding`` says otherwise)
  is downcast to uint8 bits, magnitudes clamped to 1.875, rounded to nearest (ties away from zero).  ``sm80``
  clamps with ``min.f16x2``, ``sm70`` with 16-bit integer minima.
* ``gdc_wait()`` / ``gdc_launch_dependents()``: ``griddepcontrol.wait`` / ``.launch_dependents`` (sm_90+; a
  CompilationError on older cuda targets; harmless without programmatic dependent launch).

The interpreter runs ``globaltimer`` (``time.time_ns``, non-decreasing), ``smid`` (0) and the gdc ops (no-ops);
the fp8 conversions are inline assembly it cannot run (a CompilationError at the call).
"""
from __future__ import annotations

from ... import core as _c
from ...core import SemanticError, builtin as _builtin, extern as _extern

GLOBALTIMER_ASM = "mov.u64 $0, %globaltimer;"
SMID_ASM = "mov.u32 $0, %smid;"
# griddepcontrol has no result; the inline asm gets a dummy one (never read) so it stays an ordinary op
GDC_WAIT_ASM = "griddepcontrol.wait; mov.u32 $0, 0;"
GDC_LAUNCH_DEPENDENTS_ASM = "griddepcontrol.launch_dependents; mov.u32 $0, 0;"


def _sem():
    from ... import semantic
    return semantic


@_extern
def globaltimer(_semantic=None, _builder=None):
    """The SM's global nanosecond timer (``%globaltimer``), an int64 scalar."""
    return _sem().inline_asm_elementwise(GLOBALTIMER_ASM, "=l", [], _c.int64, False, 1)


@_extern
def smid(_semantic=None, _builder=None):
    """The id of the SM running this program (``%smid``), an int32 scalar."""
    return _sem().inline_asm_elementwise(SMID_ASM, "=r", [], _c.int32, True, 1)


def _options(what):
    from ...target_info import current_options
    opts = current_options()
    n = getattr(opts, "num_warps", None) if not isinstance(opts, dict) else opts.get("num_warps")
    if n is None:
        raise SemanticError(f"{what}() needs the compile options (num_warps); it is only available while a "
                            "kernel is compiled")
    return int(n)


@_builtin
def num_warps(_semantic=None, _builder=None):
    """The launch's ``num_warps`` (a constexpr)."""
    return _c.constexpr(_options("num_warps"))


@_builtin
def num_threads(_semantic=None, _builder=None):
    """Threads per program: ``num_warps * 32`` (a constexpr)."""
    return _c.constexpr(_options("num_threads") * 32)


# ----- fp8e4b15 <-> fp16 (tritium's own PTX).  Bit layouts: fp8e4b15 s.eeee.mmm, fp16 s.eeeee.mmmmmmmmmm, same
# exponent bias, so a value's fp16 bits are the fp8 sign at bit 15 and its other 7 bits at bits 13..7.

# 4 fp8 bytes in $2 -> fp16 pairs $0 (elements 0, 1) and $1 (elements 2, 3)
_FP8_TO_F16 = """{
.reg .b32 q0, q1, s0, s1;
prmt.b32 q0, $2, 0, 0x4140;
prmt.b32 q1, $2, 0, 0x4342;
and.b32 s0, q0, 0x00800080;
and.b32 s1, q1, 0x00800080;
and.b32 q0, q0, 0x007f007f;
and.b32 q1, q1, 0x007f007f;
shl.b32 s0, s0, 8;
shl.b32 s1, s1, 8;
shl.b32 q0, q0, 7;
shl.b32 q1, q1, 7;
or.b32 $0, s0, q0;
or.b32 $1, s1, q1;
}"""

# fp16 pairs $1 (elements 0, 1), $2 (elements 2, 3) -> 4 fp8 bytes in $0
_CLAMP_MINX2 = """.reg .b32 lim;
mov.b32 lim, 0x3F803F80;
min.f16x2 a0, a0, lim;
min.f16x2 a1, a1, lim;
"""
_CLAMP_U16 = """.reg .b16 h<4>;
mov.b32 {h0, h1}, a0;
mov.b32 {h2, h3}, a1;
min.u16 h0, h0, 0x3F80;
min.u16 h1, h1, 0x3F80;
min.u16 h2, h2, 0x3F80;
min.u16 h3, h3, 0x3F80;
mov.b32 a0, {h0, h1};
mov.b32 a1, {h2, h3};
"""


def _f16_to_fp8_asm(has_minx2):
    return ("{\n.reg .b32 a0, a1, s0, s1;\n"
            "and.b32 a0, $1, 0x7fff7fff;\nand.b32 a1, $2, 0x7fff7fff;\n"
            + (_CLAMP_MINX2 if has_minx2 else _CLAMP_U16) +
            "shl.b32 a0, a0, 1;\nshl.b32 a1, a1, 1;\n"
            "add.u32 a0, a0, 0x00800080;\nadd.u32 a1, a1, 0x00800080;\n"
            "and.b32 s0, $1, 0x80008000;\nand.b32 s1, $2, 0x80008000;\n"
            "or.b32 a0, a0, s0;\nor.b32 a1, a1, s1;\n"
            "prmt.b32 $0, a0, a1, 0x7531;\n}")


def _convert_custom_float8(arg, dst_ty, fp_downcast_rounding, has_minx2, what):
    s = _sem()
    x = s.to_tensor(arg)
    sc = x.type.scalar
    dst = _c._unwrap(dst_ty)
    if sc.is_int() and sc.primitive_bitwidth == 8:
        if not isinstance(dst, _c.dtype) or not (dst.is_fp16() or dst.is_fp32()):
            raise SemanticError(f"{what}(): an fp8e4b15 (uint8 bits) argument converts to fp16 or fp32, "
                                f"not {dst!r}")
        up = s.inline_asm_elementwise(_FP8_TO_F16, "=r,=r,r", [x], _c.float16, True, 4)
        return s.cast(up, _c.float32) if dst.is_fp32() else up
    if not (sc.is_fp16() or sc.is_fp32()):
        raise SemanticError(f"{what}(): the argument must be fp16/fp32 (downcast) or uint8/int8 fp8e4b15 bits "
                            f"(upcast), got {sc}")
    if sc.is_fp32():
        rnd = _c._unwrap(fp_downcast_rounding)
        x = s.cast(x, _c.float16, fp_downcast_rounding=rnd if rnd is not None else "rtz")
    return s.inline_asm_elementwise(_f16_to_fp8_asm(has_minx2), "=r,r,r", [x], _c.uint8, True, 4)


@_builtin
def convert_custom_float8_sm80(arg, dst_ty, fp_downcast_rounding=None, _semantic=None, _builder=None):
    """fp8e4b15 bits (uint8/int8) <-> fp16/fp32 (see the module docstring); clamps with ``min.f16x2`` (sm_80+)."""
    return _convert_custom_float8(arg, dst_ty, fp_downcast_rounding, True, "convert_custom_float8_sm80")


@_builtin
def convert_custom_float8_sm70(arg, dst_ty, fp_downcast_rounding=None, _semantic=None, _builder=None):
    """fp8e4b15 bits (uint8/int8) <-> fp16/fp32 (see the module docstring); any target."""
    return _convert_custom_float8(arg, dst_ty, fp_downcast_rounding, False, "convert_custom_float8_sm70")
