"""LoweringContext (what a rule sees) and TargetInfo (what differs between GPUs)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mlir import ir

from ..dialects import layouts, tt, ttg
from .registry import LoweringError


class TargetInfo:
    """What the generic rules need from a GPU target.  Backends subclass it."""

    name = "generic"
    warp_size = 32
    shared_address_space = 3
    global_address_space = 1

    def thread_id(self, ctx: "LoweringContext"):
        raise NotImplementedError

    def program_id(self, ctx: "LoweringContext", axis: int):
        raise NotImplementedError

    def num_programs(self, ctx: "LoweringContext", axis: int):
        raise NotImplementedError

    def shuffle_xor(self, ctx: "LoweringContext", value, mask: int):
        """``value`` of the lane ``lane ^ mask`` (an i32 / f32 scalar)."""
        raise NotImplementedError

    def barrier(self, ctx: "LoweringContext") -> None:
        raise NotImplementedError


def scalar_type(ty):
    """The LLVM-dialect-compatible scalar type of a TTGIR element type."""
    t = tt.elem_of(ty)
    if tt.is_ptr(t):
        return ir.Type.parse("!llvm.ptr<1>", t.context)
    if isinstance(t, ir.IndexType):
        return ir.IntegerType.get_signless(64, t.context)
    return t


def is_tensor(ty) -> bool:
    return isinstance(ty, ir.RankedTensorType)


@dataclass(frozen=True)
class Scratch:
    """Shared memory a rule claimed: ``base`` bytes into ``@global_smem``; ``bracketed``: not placed by the
    allocation analysis, so the rule's use is bracketed by barriers."""

    base: int
    bracketed: bool


@dataclass
class LoweringContext:
    """State of lowering one function.  ``values`` maps TTGIR values to lists of per-thread scalar values."""

    target: TargetInfo
    backend: str
    module: Any  # the TTGIR module (read only)
    out_module: Any  # the module being built
    num_warps: int
    threads_per_warp: int = 32
    values: dict = field(default_factory=dict)
    loc: Any = None
    shared_bytes: int = 0  # scratch shared memory the function needs (max over ops)
    smem_symbol: str = "global_smem"
    cache: dict = field(default_factory=dict)  # per-function cached values (thread id, lane id, ...)
    axis_info: Any = None
    options: Any = None
    entry_block: Any = None
    funcs: dict = field(default_factory=dict)
    kernel: bool = True  # a public function (its ops' allocation offsets are absolute)

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
        return self.linear(ty).num_regs if is_tensor(ty) else 1

    # ------------------------------------------------------------------ emitting
    def op(self, name: str, operands=(), results=(), attrs=None, regions: int = 0):
        return ir.Operation.create(name, results=list(results), operands=list(operands),
                                   attributes=dict(attrs or {}), regions=regions, loc=self.loc)

    def op1(self, name, operands, result, attrs=None):
        return self.op(name, operands, [result], attrs).results[0]

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
        return self.op1("arith.constant", [], ty, {"value": attr})

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
            return self.op1("arith.andi", [tid, self.const(self.i32(), self.threads_per_warp - 1)], self.i32())
        return self.entry_value("lane", make)

    def warp_id(self):
        def make():
            tid = self.thread_id()
            sh = self.threads_per_warp.bit_length() - 1
            return self.op1("arith.shrui", [tid, self.const(self.i32(), sh)], self.i32())
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
                    bit = self.op1("arith.andi", [self.op1("arith.shrui", [src, self.c32(i)], self.i32()),
                                                   self.c32(1)], self.i32())
                    terms.append(self.op1("arith.muli", [bit, self.c32(b)], self.i32()))
                i += 1
                continue
            j = i + 1
            while j < n and bases[j][d] == b << (j - i):
                j += 1
            # bits i..j-1 map to b, 2b, ...: ((src >> i) & (2^(j-i)-1)) << log2(b)
            v = src
            if i:
                v = self.op1("arith.shrui", [v, self.c32(i)], self.i32())
            v = self.op1("arith.andi", [v, self.c32((1 << (j - i)) - 1)], self.i32())
            if b > 1:
                v = self.op1("arith.shli", [v, self.c32(b.bit_length() - 1)], self.i32())
            terms.append(v)
            i = j
        return terms

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
                    v = t if v is None else self.op1(combine, [v, t], self.i32())
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
                        idx.append(self.op1(combine, [base[d], self.c32(ri[d])], self.i32()))
                out.append(tuple(idx))
            return out

        self.cache[key] = self.entry_value(key, make)
        return self.cache[key]

    # ------------------------------------------------------------------ shared memory
    def smem_base(self):
        def make():
            ptr3 = ir.Type.parse(f"!llvm.ptr<{self.target.shared_address_space}>")
            return self.op1("llvm.mlir.addressof", [], ptr3,
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
            ptr = self.op1("llvm.getelementptr", [ptr], ptr3,
                           {"rawConstantIndices": ir.DenseI32ArrayAttr.get([int(base)]),
                            "elem_type": ir.TypeAttr.get(self.int_ty(8))})
        return self.op1("llvm.getelementptr", [ptr, offset], ptr3,
                        {"rawConstantIndices": ir.DenseI32ArrayAttr.get([-2147483648]),
                         "elem_type": ir.TypeAttr.get(elem_ty)})

    def scratch(self, op, nbytes: int) -> "Scratch":
        """Claim ``nbytes`` of shared memory for ``op``'s own use (write, ``ctx.barrier()``, read).

        In a kernel whose TTGIR went through the allocation analysis, ``op`` carries ``allocation.offset`` /
        ``allocation.size``: the rule uses those bytes and membar's ``ttg.barrier`` ops order it against the other
        ops, so the rule's only barrier is the one between its own write and read.  Otherwise (no allocation ran,
        a non-kernel function, an op the analysis gives no buffer, a buffer smaller than the rule needs) the rule
        uses offset 0 bracketed by barriers: safe, since no other scratch buffer is live while an op runs.
        Call :meth:`release` after the last read."""
        nbytes = int(nbytes)
        if self.kernel and "allocation.offset" in op.attributes:
            off = int(op.attributes["allocation.offset"].value)
            size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
            if nbytes <= size:
                self.need_shared(off + nbytes)
                return Scratch(off, False)
        self.barrier()
        self.need_shared(nbytes)
        return Scratch(0, True)

    def release(self, s: "Scratch") -> None:
        if s.bracketed:
            self.barrier()

    def barrier(self) -> None:
        self.target.barrier(self)
