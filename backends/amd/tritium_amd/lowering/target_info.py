"""The AMD :class:`~tritium.lowering.TargetInfo`: ROCDL work-item / work-group ids, the grid size from the code
object's implicit kernel arguments, cross-lane moves (DPP, ``ds_swizzle``, ``ds_bpermute``), ``s_barrier``.

Cross-lane moves of a 32-bit value (what Triton's AMD backend picks, written here from the ISA's definitions):

* ``lane ^ 1`` / ``lane ^ 2``: DPP ``quad_perm`` ([1, 0, 3, 2] / [2, 3, 0, 1]) -- the move rides on the VALU op;
* ``lane ^ 4`` / ``lane ^ 8``: two DPP row shifts: the banks (groups of 4 lanes of a 16-lane row) whose partner is
  below take ``row_shr:k``, the others ``row_shl:k`` (bank masks ``0b1010`` / ``0b0101`` for 4, ``0b1100`` /
  ``0b0011`` for 8);
* ``lane ^ 16``: ``ds_swizzle`` in bit-mask mode (and 0x1f, or 0, xor 0x10: within 32 lanes);
* anything else (``lane ^ 32`` on wave64, any lane index): ``ds_bpermute`` (the source lane's byte address
  ``lane * 4``), which reads any lane of the wavefront.

``printf``: the OpenCL-style buffered printf LLVM's AMDGPU backend lowers itself (no device library: see
:meth:`AMDTargetInfo.printf`); ``assert_fail``: the message printed, then ``llvm.trap``.
"""
from __future__ import annotations

from mlir import ir

from tritium.lowering import TargetInfo
from tritium.lowering.utils import address_of, constant_global

from ..arch import warp_size_of

#: DPP control words (the ISA's DPP_CTRL encodings)
DPP_QUAD_PERM = 0x000  # + 2-bit lane selects for lanes 0..3 of each quad
DPP_ROW_SHL = 0x100  # + shift 1..15: lane l reads lane l + k of its row
DPP_ROW_SHR = 0x110  # + shift 1..15: lane l reads lane l - k of its row
ALL = 0xF  # every row / every bank

#: (offset of the implicit kernel arguments) hidden_block_count_x / _y / _z in code object v5
BLOCK_COUNT_OFFSET = (0, 4, 8)


def _quad_perm(sel) -> int:
    return DPP_QUAD_PERM | sum(s << (2 * i) for i, s in enumerate(sel))


class AMDTargetInfo(TargetInfo):
    name = "hip"
    shared_address_space = 3  # LDS
    global_address_space = 1
    # a reduction's warp partials: one LDS load per key and DPP steps (as many VGPRs as keys, where loading every
    # partial held 8 for an 8-warp softmax row: 17 VGPRs against Triton's 10)
    reduce_partials = "shuffle"

    def __init__(self, arch: str = "gfx942"):
        self.arch = str(arch)
        self.warp_size = warp_size_of(self.arch)

    def kernel_arg_attrs(self, ty) -> dict:
        """On gfx94x / gfx950 the kernel's arguments are ``inreg``: the hardware preloads the first kernarg dwords
        into SGPRs (``.amdhsa_user_sgpr_kernarg_preload_length``), saving the ``s_load`` of the arguments, as
        Triton does on CDNA3 / CDNA4."""
        if self.arch.startswith(("gfx94", "gfx95")):
            return {"llvm.inreg": ir.UnitAttr.get()}
        return {}

    def to_fp8(self, ctx, vals, dst):
        """``v_cvt_pk_*`` / ``v_cvt_scalef32_pk_*`` where the arch has them for ``dst``, else software
        (:func:`.conversions.to_fp8`)."""
        from .conversions import to_fp8

        return to_fp8(ctx, vals, dst)

    def from_fp8(self, ctx, vals, dst):
        from .conversions import from_fp8

        return from_fp8(ctx, vals, dst)

    # ------------------------------------------------------------------ ids and sizes
    def thread_id(self, ctx):
        return ctx.emit("rocdl.workitem.id.x", [], ctx.i32())

    def program_id(self, ctx, axis):
        return ctx.emit(f"rocdl.workgroup.id.{'xyz'[axis]}", [], ctx.i32())

    def num_programs(self, ctx, axis):
        """The grid's size in work-groups along ``axis``: ``hidden_block_count_{x,y,z}``, the first implicit kernel
        arguments of code object v5 (``llvm.amdgcn.implicitarg.ptr``).  ``rocdl.grid.dim`` would call ockl's
        ``__ockl_get_num_groups``, which is not available here."""
        ptr4 = ir.Type.parse("!llvm.ptr<4>")
        base = ctx.emit("llvm.call_intrinsic", [], ptr4, {
            "intrin": ir.StringAttr.get("llvm.amdgcn.implicitarg.ptr"),
            "fastmathFlags": ir.Attribute.parse("#llvm.fastmath<none>"),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])})
        off = BLOCK_COUNT_OFFSET[axis]
        p = base if not off else ctx.emit("llvm.getelementptr", [base], ptr4, {
            "rawConstantIndices": ir.DenseI32ArrayAttr.get([off]), "elem_type": ir.TypeAttr.get(ctx.int_ty(8))})
        return ctx.emit("llvm.load", [p], ctx.i32(), {"invariant": ir.UnitAttr.get(),
                                                       "alignment": ir.IntegerAttr.get(ctx.int_ty(64), 4)})

    # ------------------------------------------------------------------ cross-lane moves
    def _dpp(self, ctx, old, src, ctrl, bank_mask=ALL):
        i32 = ctx.i32()
        return ctx.emit("rocdl.update.dpp", [old, src], i32, {
            "dppCtrl": ir.IntegerAttr.get(i32, ctrl), "rowMask": ir.IntegerAttr.get(i32, ALL),
            "bankMask": ir.IntegerAttr.get(i32, bank_mask), "boundCtrl": ir.BoolAttr.get(False)})

    def shuffle_xor(self, ctx, value, mask):
        if mask == 1:
            return self._dpp(ctx, value, value, _quad_perm((1, 0, 3, 2)))
        if mask == 2:
            return self._dpp(ctx, value, value, _quad_perm((2, 3, 0, 1)))
        if mask in (4, 8):
            # banks whose partner lane is below read row_shr:mask, the others row_shl:mask
            below = 0b1010 if mask == 4 else 0b1100
            low = self._dpp(ctx, value, value, DPP_ROW_SHR + mask, below)
            return self._dpp(ctx, low, value, DPP_ROW_SHL + mask, ALL & ~below)
        if mask == 16:
            offset = ctx.emit("llvm.mlir.constant", [], ctx.i32(),
                              {"value": ir.IntegerAttr.get(ctx.i32(), (0x10 << 10) | 0x1F)})
            return ctx.emit("rocdl.ds_swizzle", [value, offset], ctx.i32())
        lane = ctx.emit("arith.xori", [ctx.lane_id(), ctx.c32(mask)], ctx.i32())
        return self._bpermute(ctx, value, lane)

    def shuffle_idx(self, ctx, value, src_lane):
        return self._bpermute(ctx, value, src_lane)

    def read_lane(self, ctx, value, lane):
        return ctx.emit("rocdl.readlane", [value, ctx.c32(lane)], ctx.i32())

    def _bpermute(self, ctx, value, lane):
        addr = ctx.emit("arith.shli", [lane, ctx.c32(2)], ctx.i32())
        return ctx.emit("rocdl.ds_bpermute", [addr, value], ctx.i32())

    # ------------------------------------------------------------------ synchronisation
    def barrier(self, ctx):
        """``s_barrier`` between workgroup-scope release / acquire fences: LDS writes before it are visible after
        it (``rocdl.barrier``), then a scheduling barrier: LLVM's machine scheduler does not end a region at
        ``s_barrier``, so a kernel without branches is one region in which it interleaves independent chains
        across the barriers for latency (the softmax's two divisions side by side: 15 VGPRs where one region
        per barrier interval gives 11, Triton 10)."""
        ctx.emit_op("rocdl.barrier", [])
        ctx.emit_op("rocdl.sched.barrier", [], attrs={"mask": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)})

    # ------------------------------------------------------------------ debugging
    def printf(self, ctx, fmt, args):
        """A call of C ``printf(fmt, args...)`` (``fmt`` a constant string in the constant address space), which
        LLVM's AMDGPU printf lowering (AMDGPUPrintfRuntimeBinding, the OpenCL scheme, in llvmlite's pipeline)
        turns into a record in the runtime's printf buffer: ``__printf_alloc(size)`` (defined by the ``amdgcn``
        stage: :data:`tritium_amd.hsaco.PRINTF_ALLOC`), the format's id and the arguments stored, the format
        in the code object's ``amdhsa.printf`` metadata and the ``hidden_printf_buffer`` kernel argument.  No
        device library is needed; the ROCm runtime fills the buffer argument and prints the records after the
        kernel."""
        fmt_ptr = address_of(ctx, _string(ctx, fmt), ir.Type.parse("!llvm.ptr<4>"))
        _declare_printf(ctx)
        ctx.emit("llvm.call", [fmt_ptr, *args], ctx.i32(), {
            "callee": ir.FlatSymbolRefAttr.get("printf"), "var_callee_type": ir.TypeAttr.get(_printf_type()),
            "CConv": ir.Attribute.parse("#llvm.cconv<ccc>"),
            "TailCallKind": ir.Attribute.parse("#llvm.tailcallkind<none>"),
            "fastmathFlags": ir.Attribute.parse("#llvm.fastmath<none>"),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1 + len(args), 0])})

    def assert_fail(self, ctx, message, file, line, function):
        """As Triton's AMD backend: the message printed (here with the program id, through :meth:`printf`), then
        ``llvm.trap`` (``s_trap 2``: the wave stops and the runtime reports the kernel as aborted)."""
        pids = [self.program_id(ctx, a) for a in range(3)]
        text = f"device assertion failed: '{message}', in {function} at {file}:{line}".replace("%", "%%")
        self.printf(ctx, "pid (%u, %u, %u) " + text + "\n", pids)
        ctx.emit_op("llvm.intr.trap", [])


def _printf_type():
    return ir.Type.parse("!llvm.func<i32 (ptr<4>, ...)>")


def _declare_printf(ctx) -> None:
    """``llvm.func @printf(!llvm.ptr<4>, ...) -> i32``, once per module."""
    key = ("decl", "printf")
    if key in ctx.symbols:
        return
    with ir.InsertionPoint.at_block_begin(ctx.out_module.body):
        ir.Operation.create("llvm.func", attributes={
            "sym_name": ir.StringAttr.get("printf"), "function_type": ir.TypeAttr.get(_printf_type()),
            "linkage": ir.Attribute.parse("#llvm.linkage<external>"),
            "CConv": ir.Attribute.parse("#llvm.cconv<ccc>")}, regions=1)
    ctx.symbols[key] = "printf"


def _string(ctx, text: str) -> str:
    """A constant global in the constant address space (4) holding ``text`` NUL-terminated; returns its symbol."""
    data = text.encode() + b"\0"
    return constant_global(ctx, "printf_fmt", ir.Type.parse(f"!llvm.array<{len(data)} x i8>"),
                           ir.StringAttr.get(data.decode("latin-1")), 4)
