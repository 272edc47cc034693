"""The CUDA :class:`~tritium.lowering.TargetInfo`: PTX special registers, ``shfl.sync``, ``bar.sync``,
``vprintf`` and ``__assertfail``."""
from __future__ import annotations

from mlir import ir

from tritium.lowering import TargetInfo
from tritium.lowering.utils import address_of, call_function, constant_global, declare_function, inline_asm


class CUDATargetInfo(TargetInfo):
    name = "cuda"
    # a reduction's warp partials: a butterfly where the combine is costly (Inductor's arg-max over 16 warps)
    reduce_partials = "auto"

    def __init__(self, arch: int = 90, ftz: bool = True):
        self.arch = arch
        self.ftz = ftz  # the enable_reflect_ftz option: f32 fast paths flush denormals as libdevice's then do

    def kernel_arg_attrs(self, ty) -> dict:
        """A TMA tensor map (``!tt.tensordesc`` parameter): 128 bytes by value, 64-byte aligned, ``__grid_constant__``
        (the kernel reads it in place through its generic address)."""
        from tritium.dialects import tt

        if not tt.is_tensordesc(ty):
            return {}
        from mlir import ir

        return {"llvm.byval": ir.TypeAttr.get(ir.Type.parse("!llvm.array<128 x i8>")),
                "llvm.align": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 64),
                "nvvm.grid_constant": ir.UnitAttr.get()}

    def to_fp8(self, ctx, vals, dst):
        """sm_89's ``cvt.rn.satfinite`` in pairs (:func:`.conversions.to_fp8`)."""
        from .conversions import to_fp8

        return to_fp8(ctx, vals, dst)

    def from_fp8(self, ctx, vals, dst):
        """sm_89's ``cvt.rn.f16x2`` in pairs (:func:`.conversions.from_fp8`)."""
        from .conversions import from_fp8

        return from_fp8(ctx, vals, dst)

    def _sreg(self, ctx, name):
        return ctx.emit(f"nvvm.read.ptx.sreg.{name}", [], ctx.i32())

    def thread_id(self, ctx):
        return self._sreg(ctx, "tid.x")

    def program_id(self, ctx, axis):
        return self._sreg(ctx, "ctaid." + "xyz"[axis])

    def num_programs(self, ctx, axis):
        return self._sreg(ctx, "nctaid." + "xyz"[axis])

    def shuffle_xor(self, ctx, value, mask):
        return inline_asm(ctx, f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, 0xffffffff;", "=r,r", [value],
                          [ctx.i32()])[0]

    def shuffle_idx(self, ctx, value, src_lane):
        return inline_asm(ctx, "shfl.sync.idx.b32 $0, $1, $2, 0x1f, 0xffffffff;", "=r,r,r", [value, src_lane],
                          [ctx.i32()])[0]

    def barrier(self, ctx):
        ctx.emit_op("nvvm.barrier0", [])

    def printf(self, ctx, fmt, args):
        """``vprintf(fmt, buffer)``: the arguments stored in a stack struct."""
        ptr = ir.Type.parse("!llvm.ptr")
        fmt_ptr = address_of(ctx, _string(ctx, fmt), ptr)
        if args:
            st = ir.Type.parse("!llvm.struct<(" + ", ".join(str(a.type) for a in args) + ")>")
            one = ctx.const(ctx.int_ty(64), 1)
            buf = ctx.emit("llvm.alloca", [one], ptr, {"elem_type": ir.TypeAttr.get(st),
                                                       "alignment": ir.IntegerAttr.get(ctx.int_ty(64), 8)})
            for i, a in enumerate(args):
                p = ctx.emit("llvm.getelementptr", [buf], ptr, {"rawConstantIndices": ir.DenseI32ArrayAttr.get([0, i]),
                                                                "elem_type": ir.TypeAttr.get(st)})
                ctx.emit_op("llvm.store", [a, p])
        else:
            buf = ctx.emit("llvm.mlir.zero", [], ptr)
        call_function(ctx, "vprintf", [fmt_ptr, buf], ctx.i32())

    def assert_fail(self, ctx, message, file, line, function):
        """``__assertfail(message, file, line, function, 1)``: the CUDA runtime reports it and traps."""
        ptr = ir.Type.parse("!llvm.ptr")
        m_ptr = address_of(ctx, _string(ctx, message), ptr)
        f_ptr = address_of(ctx, _string(ctx, file), ptr)
        fn_ptr = address_of(ctx, _string(ctx, function), ptr)
        char_size = ctx.const(ctx.int_ty(64), 1)
        declare_function(ctx, "__assertfail", [ptr, ptr, ctx.i32(), ptr, char_size.type], None)
        ctx.emit_op("func.call", [m_ptr, f_ptr, ctx.c32(line), fn_ptr, char_size], [],
                    {"callee": ir.FlatSymbolRefAttr.get("__assertfail")})


def _string(ctx, text: str) -> str:
    """A constant global holding ``text`` NUL-terminated (generic address space); returns its symbol."""
    data = text.encode() + b"\0"
    return constant_global(ctx, "printf_fmt", ir.Type.parse(f"!llvm.array<{len(data)} x i8>"),
                           ir.StringAttr.get(data.decode("latin-1")), 0)
