"""What a lowering rule sees: the :class:`LoweringContext` of the function being lowered, and the
:class:`TargetInfo` of the GPU it is lowered for."""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Mapping

from mlir import ir

from ..dialects import layouts, tt, ttg
from ..errors import LoweringError
from .utils import DYNAMIC_INDEX


class TargetInfo(abc.ABC):
    """Everything the rules need from a GPU target; a backend implements every method (CUDA:
    ``tritium_nvidia.lowering.target_info.CUDATargetInfo``).  Methods emit at ``ctx``'s insertion point and
    return the i32 / i1 values they compute.  Shuffles move i32 values; :func:`tritium.lowering.utils.shuffle_xor`
    / ``shuffle_idx`` move any scalar through them."""

    #: the target's name in messages (``"cuda"``)
    name: str = "generic"
    #: threads per warp
    warp_size: int = 32
    #: LLVM address spaces of shared memory (``@global_smem``) and of global memory (constant globals)
    shared_address_space: int = 3
    global_address_space: int = 1
    #: how a reduction combines the partials its warps left in shared memory: ``"all"`` (every thread loads every
    #: partial of its keys and combines them: no shuffle, one register per partial) or ``"shuffle"`` (lane ``l``
    #: loads partial ``l % warps``, then a butterfly over those lanes: one load and one register per key) or
    #: ``"auto"``: the butterfly where it is the shorter chain, counting the combine's operations (16 warps of an
    #: arg-max or a Welford step: 4 butterfly steps instead of 15 dependent combines; a sum keeps ``"all"``)
    reduce_partials: str = "all"

    def kernel_arg_attrs(self, ty) -> dict:
        """Argument attributes of a kernel parameter of TTGIR type ``ty`` on its ``llvm.func`` (the cuda target
        passes a TMA tensor map by value); none by default."""
        return {}

    def to_fp8(self, ctx: "LoweringContext", vals: list, dst) -> list:
        """Float scalars (fp8 too) -> fp8 type ``dst``, rounded to nearest even and saturated (the contract of
        :mod:`tritium.lowering.fp8`); by default in software."""
        from .fp8 import software_from_fp8, software_to_fp8

        f32 = ir.F32Type.get()
        return [software_to_fp8(ctx, software_from_fp8(ctx, v, f32) if tt.is_fp8(v.type) else v, dst)
                for v in vals]

    def from_fp8(self, ctx: "LoweringContext", vals: list, dst) -> list:
        """fp8 scalars -> float type ``dst`` (fp8 too); by default in software."""
        from .fp8 import software_from_fp8

        return [software_from_fp8(ctx, v, dst) for v in vals]

    @abc.abstractmethod
    def thread_id(self, ctx: "LoweringContext"):
        """The thread's index in the CTA (i32)."""

    @abc.abstractmethod
    def program_id(self, ctx: "LoweringContext", axis: int):
        """The program's (CTA's) index along grid ``axis`` 0, 1 or 2 (i32)."""

    @abc.abstractmethod
    def num_programs(self, ctx: "LoweringContext", axis: int):
        """The grid's size along ``axis`` (i32)."""

    @abc.abstractmethod
    def shuffle_xor(self, ctx: "LoweringContext", value, mask: int):
        """The i32 ``value`` of lane ``lane ^ mask`` (every lane of the warp takes part)."""

    @abc.abstractmethod
    def shuffle_idx(self, ctx: "LoweringContext", value, src_lane):
        """The i32 ``value`` of lane ``src_lane`` (an i32 value; every lane of the warp takes part)."""

    #: ``read_lane(ctx, value, lane: int)``: the i32 ``value`` of the constant ``lane``, uniform across the warp,
    #: where the target reads one lane more cheaply than it shuffles (AMD: ``v_readlane`` into a scalar register,
    #: no address register); ``None`` where it does not (a reduction then shuffles)
    read_lane = None

    @abc.abstractmethod
    def barrier(self, ctx: "LoweringContext") -> None:
        """Every thread of the CTA waits here; shared-memory writes before it are visible after it."""

    @abc.abstractmethod
    def printf(self, ctx: "LoweringContext", fmt: str, args: list) -> None:
        """Print from this thread: C ``printf`` of ``fmt`` with ``args`` (i32 / i64 / f64 / pointer values, as C
        varargs are promoted)."""

    @abc.abstractmethod
    def assert_fail(self, ctx: "LoweringContext", message: str, file: str, line: int, function: str) -> None:
        """Report a failed device assertion at ``file:line`` and stop the kernel."""


@dataclass(frozen=True)
class Scratch:
    """Shared memory a rule claimed: ``base`` bytes into ``@global_smem``; ``bracketed``: not placed by the
    allocation analysis, so the rule's use is bracketed by barriers."""

    base: int
    bracketed: bool


@dataclass
class LoweringContext:
    """The state of lowering one function of a TTGIR module: what the rules read (``op``, the target, the
    layouts, the axis information, the options) and the helpers they emit through.

    ``values`` maps each lowered TTGIR value to its list of per-thread scalar values (one per register).
    ``symbols`` is shared by every function of the module (declarations, constant globals)."""

    target: TargetInfo
    rules: Mapping  # op name -> rule
    module: Any  # the TTGIR module (read only)
    out_module: Any  # the LLVM-dialect module being built
    num_warps: int
    options: Any  # the backend's options (tritium.compiler.backend.BaseOptions fields), or None
    enable_fp_fusion: bool = True  # the option: a * b + c may become an fma
    threads_per_warp: int = 32
    axis_info: Any = None  # an AxisInfoAnalysis of ``module``, or None
    funcs: dict = field(default_factory=dict)  # the module's func.func ops by name (combine functions included)
    kernel: bool = True  # a public function (its ops' allocation offsets are absolute)
    symbols: dict = field(default_factory=dict)
    op: Any = None  # the TTGIR op being lowered
    loc: Any = None  # its location: what emitted ops carry
    entry_block: Any = None
    global_scratch: Any = None  # the kernel's global scratch parameter (!llvm.ptr<1>), when the module needs one
    values: dict = field(default_factory=dict)
    shared_bytes: int = 0  # scratch shared memory the function needs (max over ops)
    smem_symbol: str = "global_smem"
    cache: dict = field(default_factory=dict)  # per-function values computed once (thread id, lane id, ...)
    inlining: bool = False  # lowering an inlined combine function (its func.return gives the results)
    bracket_base: int = 0  # where bracketed scratch goes: past every buffer the allocation analysis placed

    # ------------------------------------------------------------------ value map
    def get(self, value) -> list:
        try:
            return self.values[value]
        except KeyError:
            raise LoweringError(f"internal: value {value.get_name()} was not lowered") from None

    def set(self, value, vals: list) -> None:
        self.values[value] = list(vals)

    # ------------------------------------------------------------------ layouts
    def layout(self, ty):
        enc = ttg.encoding_of(ty)
        if enc is None:
            raise LoweringError(f"tensor type {ty} has no layout: run the TTIR -> TTGIR conversion first")
        return enc

    def linear(self, ty) -> layouts.LinearLayout:
        t = ir.RankedTensorType(ty)
        return self.layout(t).linear(tuple(t.shape))

    def nregs(self, ty) -> int:
        """Registers a value of type ``ty`` takes per thread (1 for a scalar)."""
        return self.linear(ty).num_regs if tt.is_tensor(ty) else 1

    # ------------------------------------------------------------------ emitting
    def emit_op(self, name: str, operands=(), results=(), attrs=None, regions: int = 0):
        """Create op ``name`` at the insertion point, at the current location; returns the operation."""
        return ir.Operation.create(name, results=list(results), operands=list(operands),
                                   attributes=dict(attrs or {}), regions=regions, loc=self.loc)

    def emit(self, name: str, operands, result_type, attrs=None):
        """Create op ``name`` with one result of ``result_type``; returns that value."""
        return self.emit_op(name, operands, [result_type], attrs).results[0]

    def i32(self) -> ir.Type:
        return ir.IntegerType.get_signless(32)

    def int_ty(self, bits: int) -> ir.Type:
        return ir.IntegerType.get_signless(bits)

    def const(self, ty, value):
        if isinstance(ty, ir.IntegerType):
            attr = ir.IntegerAttr.get(ty, int(value))
        elif isinstance(ty, ir.FloatType):
            attr = ir.FloatAttr.get(ty, float(value))
        else:
            raise LoweringError(f"cannot make a constant of type {ty}")
        return self.emit("arith.constant", [], ty, {"value": attr})

    def c32(self, value: int):
        return self.const(self.i32(), value)

    def entry_value(self, key, make):
        """A value computed once at the function entry (thread id, lane, warp, smem base)."""
        if key not in self.cache:
            marker = self.cache.get("_entry_marker")
            if marker is None:
                with ir.InsertionPoint.at_block_begin(self.entry_block), ir.Location.unknown():
                    marker = self.cache["_entry_marker"] = ir.Operation.create(
                        "arith.constant", results=[self.i32()],
                        attributes={"value": ir.IntegerAttr.get(self.i32(), 0)})
            with ir.InsertionPoint(marker):
                self.cache[key] = make()
        return self.cache[key]

    def thread_id(self):
        return self.entry_value("tid", lambda: self.target.thread_id(self))

    def lane_id(self):
        def make():
            tid = self.thread_id()
            return self.emit("arith.andi", [tid, self.const(self.i32(), self.threads_per_warp - 1)], self.i32())
        return self.entry_value("lane", make)

    def warp_id(self):
        def make():
            tid = self.thread_id()
            sh = self.threads_per_warp.bit_length() - 1
            return self.emit("arith.shrui", [tid, self.const(self.i32(), sh)], self.i32())
        return self.entry_value("warp", make)

    # ------------------------------------------------------------------ element indices
    def _bits_value(self, src, bases, d):
        """XOR/OR over the bits of ``src`` (lane or warp id) of their bases' component ``d``, as shifts/masks."""
        terms = []
        i = 0
        n = len(bases)
        while i < n:
            b = bases[i][d]
            if b == 0 or b & (b - 1):
                if b:
                    bit = self.emit("arith.andi", [self.emit("arith.shrui", [src, self.c32(i)], self.i32()),
                                                   self.c32(1)], self.i32())
                    terms.append(self.emit("arith.muli", [bit, self.c32(b)], self.i32()))
                i += 1
                continue
            j = i + 1
            while j < n and bases[j][d] == b << (j - i):
                j += 1
            # bits i..j-1 map to b, 2b, ...: ((src >> i) & (2^(j-i)-1)) << log2(b)
            v = src
            if i:
                v = self.emit("arith.shrui", [v, self.c32(i)], self.i32())
            v = self.emit("arith.andi", [v, self.c32((1 << (j - i)) - 1)], self.i32())
            if b > 1:
                v = self.emit("arith.shli", [v, self.c32(b.bit_length() - 1)], self.i32())
            terms.append(v)
            i = j
        return terms

    def warp_offsets(self, ll) -> list:
        """Per dim, the i32 offset the running warp's bases give in linear layout ``ll`` (no lane, no register)."""
        out = []
        for d in range(ll.rank):
            v = None
            for t in self._bits_value(self.warp_id(), ll.warp, d):
                v = t if v is None else self.emit("arith.ori", [v, t], self.i32())
            out.append(v if v is not None else self.c32(0))
        return out

    def indices(self, ty) -> list:
        """Per register of a tensor type: the element index as a tuple of i32 values (one per dim)."""
        ll = self.linear(ty)
        key = ("indices", ll)
        if key in self.cache:
            return self.cache[key]
        combine = "arith.ori" if ll.disjoint() else "arith.xori"

        def make():
            base = []
            for d in range(ll.rank):
                terms = self._bits_value(self.lane_id(), ll.lane, d) + self._bits_value(self.warp_id(), ll.warp, d)
                v = None
                for t in terms:
                    v = t if v is None else self.emit(combine, [v, t], self.i32())
                base.append(v)
            out = []
            for r in range(ll.num_regs):
                ri = ll.index(r)
                idx = []
                for d in range(ll.rank):
                    if base[d] is None:
                        idx.append(self.c32(ri[d]))
                    elif ri[d] == 0:
                        idx.append(base[d])
                    else:
                        idx.append(self.emit(combine, [base[d], self.c32(ri[d])], self.i32()))
                out.append(tuple(idx))
            return out

        self.cache[key] = self.entry_value(key, make)
        return self.cache[key]

    # ------------------------------------------------------------------ shared memory
    def smem_base(self):
        def make():
            ptr3 = ir.Type.parse(f"!llvm.ptr<{self.target.shared_address_space}>")
            return self.emit("llvm.mlir.addressof", [], ptr3,
                             {"global_name": ir.FlatSymbolRefAttr.get(self.smem_symbol)})
        return self.entry_value("smem", make)

    def need_shared(self, nbytes: int) -> None:
        self.shared_bytes = max(self.shared_bytes, int(nbytes))

    def smem_ptr(self, offset, elem_ty, base: int = 0):
        """Pointer to element ``offset`` (an i32 value, in elements of ``elem_ty``) of the scratch buffer,
        ``base`` bytes into ``@global_smem`` (a :class:`Scratch`'s ``base``)."""
        ptr3 = ir.Type.parse(f"!llvm.ptr<{self.target.shared_address_space}>")
        ptr = self.smem_base()
        if base:
            ptr = self.emit("llvm.getelementptr", [ptr], ptr3,
                            {"rawConstantIndices": ir.DenseI32ArrayAttr.get([int(base)]),
                             "elem_type": ir.TypeAttr.get(self.int_ty(8))})
        return self.emit("llvm.getelementptr", [ptr, offset], ptr3,
                         {"rawConstantIndices": ir.DenseI32ArrayAttr.get([DYNAMIC_INDEX]),
                          "elem_type": ir.TypeAttr.get(elem_ty)})

    def scratch(self, op, nbytes: int) -> Scratch:
        """Claim ``nbytes`` of shared memory for ``op``'s own use (write, ``ctx.barrier()``, read).

        In a kernel whose TTGIR went through the allocation analysis, ``op`` carries ``allocation.offset`` /
        ``allocation.size``: the rule uses those bytes and membar's ``ttg.barrier`` ops order it against the other
        ops, so the rule's only barrier is the one between its own write and read.  Otherwise (no allocation ran,
        a non-kernel function, an op the analysis gives no buffer, a buffer smaller than the rule needs) the rule
        uses the bytes past every buffer the analysis placed (``bracket_base``: the module's ``ttg.shared``, so
        explicit ``ttg.local_alloc`` buffers live across the op stay intact), bracketed by barriers: safe, since
        no other bracketed buffer is live while an op runs.
        Call :meth:`release` after the last read."""
        nbytes = int(nbytes)
        if self.kernel and "allocation.offset" in op.attributes:
            off = int(op.attributes["allocation.offset"].value)
            size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
            if nbytes <= size:
                self.need_shared(off + nbytes)
                return Scratch(off, False)
        self.barrier()
        self.need_shared(self.bracket_base + nbytes)
        return Scratch(self.bracket_base, True)

    def release(self, s: Scratch) -> None:
        """End a rule's use of its scratch buffer (the closing barrier of a bracketed one)."""
        if s.bracketed:
            self.barrier()

    def barrier(self) -> None:
        self.target.barrier(self)
