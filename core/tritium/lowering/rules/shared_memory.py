"""Explicit shared-memory buffers: ``ttg.local_alloc`` / ``local_store`` / ``local_load`` / ``local_dealloc``.

A ``!ttg.memdesc`` lowers to one value: the ``!llvm.ptr<3>`` of its first byte (``@global_smem`` + the
allocation analysis's ``allocation.offset`` of the ``ttg.local_alloc``).  Elements sit where the memdesc's shared
layout puts them (:meth:`tritium.dialects.layouts.NVMMASharedLayout.offset`, :meth:`SharedLayout.offset`).

Addresses (:class:`Addresser`): a thread's element in register ``r`` is ``reg(r) (+) thread(lane, warp)``.  The
byte offset of the thread's own part is computed once (``base``); for each register (run) the rule checks, over
every thread of the CTA in Python, that ``offset(reg (+) thread) == (base(thread) ^ X) + Y`` for constants X (the
swizzle bits of ``offset(reg)``) and Y, and emits just that; where no such pair exists it emits the whole offset
computation for that register.  Stores and loads move the widest run of registers that is contiguous in the
buffer and in the layout (up to 16 bytes), as vector ``llvm.store`` / ``llvm.load``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from mlir import ir

from ...dialects import layouts, tt, ttg
from ...errors import LoweringError
from ..table import Rules
from ..utils import register_runs, smem_elem

memdesc_layout = ttg.memdesc_layout  # the rules that read buffers import it from here

RULES = Rules()


# ------------------------------------------------------------------------------------------------
# Offsets as emitted arithmetic
# ------------------------------------------------------------------------------------------------

def emit_byte_offset(ctx, lay, shape, idx, eb: int):
    """The i32 byte offset of element ``idx`` (i32 values / ints) in a buffer of ``shape`` with shared layout
    ``lay`` (element bytes ``eb``)."""
    i32 = ctx.i32()

    def c(v):
        return v if not isinstance(v, int) else ctx.c32(v)

    def mul(v, k):
        if k == 1:
            return v
        if k & (k - 1) == 0:
            return ctx.emit("arith.shli", [c(v), ctx.c32(k.bit_length() - 1)], i32)
        return ctx.emit("arith.muli", [c(v), ctx.c32(k)], i32)

    def add(a, b):
        if a is None:
            return b
        return ctx.emit("arith.addi", [c(a), c(b)], i32)

    rank = len(shape)
    fast, slow = lay.fast_slow(rank)
    if isinstance(lay, layouts.NVMMASharedLayout):
        w = min(lay.row_elems(), shape[fast])
        lw = w.bit_length() - 1
        col = c(idx[fast])
        slab = ctx.emit("arith.shrui", [col, ctx.c32(lw)], i32)
        within = ctx.emit("arith.andi", [col, ctx.c32(w - 1)], i32)
        off = add(add(mul(slab, shape[slow] * w), mul(idx[slow], w)), within)
        byte = mul(off, eb)
        if lay.swizzle_bytes:
            span = lay.swizzle_bytes // 16
            phase = ctx.emit("arith.andi", [ctx.emit("arith.shrui", [byte, ctx.c32(7)], i32), ctx.c32(span - 1)], i32)
            byte = ctx.emit("arith.xori", [byte, ctx.emit("arith.shli", [phase, ctx.c32(4)], i32)], i32)
        stride = shape[fast] * shape[slow]
        for d in range(rank - 3, -1, -1):
            byte = add(byte, mul(idx[d], stride * eb))
            stride *= shape[d]
        return byte
    if isinstance(lay, layouts.SharedLayout):
        strides = [0] * rank
        s = 1
        for d in lay.order:
            strides[d] = s
            s *= shape[d]
        col = c(idx[fast])
        max_phase = lay.phases(shape)
        if rank >= 2 and max_phase > 1:
            row = c(idx[slow])
            phase = ctx.emit("arith.andi", [ctx.emit("arith.divui", [row, ctx.c32(lay.per_phase)], i32),
                                            ctx.c32(max_phase - 1)], i32)
            vec = ctx.emit("arith.divui", [col, ctx.c32(lay.vec)], i32)
            col = add(mul(ctx.emit("arith.xori", [vec, phase], i32), lay.vec),
                      ctx.emit("arith.remui", [col, ctx.c32(lay.vec)], i32))
        off = col
        for d in range(rank):
            if d != fast:
                off = add(off, mul(idx[d], strides[d]))
        return mul(off, eb)
    raise LoweringError(f"no shared-memory addressing for layout {lay}")


def py_byte_offset(lay, shape, idx, eb: int) -> int:
    return lay.offset(tuple(idx), tuple(shape)) * eb


def _swizzle_mask(lay, eb: int) -> int:
    if isinstance(lay, layouts.NVMMASharedLayout) and lay.swizzle_bytes:
        return ((lay.swizzle_bytes // 16) - 1) << 4
    if isinstance(lay, layouts.SharedLayout) and lay.max_phase > 1:
        return ((lay.max_phase - 1) * lay.vec * eb)  # conservative: the vec-group bits
    return 0


#: per (layout, shape, element bytes, combine, thread indices): the threads' base offsets and the answers of
#: :meth:`Addresser.split` / :meth:`Addresser.contiguous` (pure functions of those)
_MEMO: dict = {}


class Addresser:
    """Byte offsets into one buffer for elements ``thread(t) (+) const``: ``thread_py(t)`` gives, for each thread
    ``t`` of the CTA, its index tuple; ``thread_vals`` the same index as i32 values for the running thread;
    ``combine`` how a constant index joins it (``"xor"`` for layout registers, ``"add"`` for explicit offsets)."""

    def __init__(self, ctx, lay, shape, eb: int, thread_py: Callable, nthreads: int, thread_vals: Sequence,
                 combine: str = "xor"):
        self.ctx, self.lay, self.shape, self.eb = ctx, lay, tuple(shape), eb
        self.threads = tuple(tuple(thread_py(t)) for t in range(nthreads))
        self.thread_vals = tuple(thread_vals)
        self.combine = combine
        key = (lay, self.shape, eb, combine, self.threads)
        if key not in _MEMO:  # the same copy / store pattern recurs (a pipeliner's prologue and loop)
            if len(_MEMO) > 64:
                _MEMO.clear()
            # every thread at once: one int64 column per dim (the layouts' offset() is plain integer arithmetic,
            # which numpy computes elementwise with Python's results for these non-negative indices)
            cols = tuple(np.array([ix[d] for ix in self.threads], dtype=np.int64) for d in range(len(self.shape)))
            _MEMO[key] = (cols, self._offsets(cols), {}, {})
        self.cols, self.base_py, self._splits, self._contiguous = _MEMO[key]
        self._base = None
        self.mask = _swizzle_mask(lay, eb)

    def _offsets(self, cols):
        """The byte offsets (int64 array, one per thread) of the indices ``cols`` (one array per dim)."""
        return np.asarray(self.lay.offset(cols, self.shape), dtype=np.int64) * self.eb

    def _joined(self, const):
        """``cols`` combined with the constant index ``const`` (xor for layout registers, add for offsets)."""
        if self.combine == "xor":
            return tuple(c ^ k if k else c for c, k in zip(self.cols, const))
        return tuple(c + k if k else c for c, k in zip(self.cols, const))

    def base(self):
        if self._base is None:
            self._base = emit_byte_offset(self.ctx, self.lay, self.shape, self.thread_vals, self.eb)
        return self._base

    def split(self, const) -> tuple:
        """``(X, Y)`` with ``offset(thread (+) const) == (base ^ X) + Y`` for every thread, or None."""
        const = tuple(const)
        if const not in self._splits:
            self._splits[const] = self._split(const)
        return self._splits[const]

    def _split(self, const) -> tuple:
        offs, base = self._offsets(self._joined(const)), self.base_py
        for x in ((int(offs[0]) ^ int(base[0])) & self.mask, 0):
            y = int(offs[0]) - (int(base[0]) ^ x)
            if np.array_equal(offs, (base ^ x) + y):
                return x, y
        return None

    def offset(self, const):
        """The i32 byte offset of ``thread (+) const`` for the running thread."""
        ctx = self.ctx
        xy = self.split(const)
        if xy is None:
            vals = []
            for v, k in zip(self.thread_vals, const):
                if not k:
                    vals.append(v)
                else:
                    vals.append(ctx.emit("arith.xori" if self.combine == "xor" else "arith.addi", [v, ctx.c32(k)],
                                         ctx.i32()))
            return emit_byte_offset(ctx, self.lay, self.shape, vals, self.eb)
        x, y = xy
        v = self.base()
        if x:
            v = ctx.emit("arith.xori", [v, ctx.c32(x)], ctx.i32())
        if y:
            v = ctx.emit("arith.addi", [v, ctx.c32(y)], ctx.i32())
        return v

    def contiguous(self, const, fast: int, n: int) -> bool:
        """Elements ``const .. const + n - 1`` along ``fast`` are consecutive in the buffer for every thread."""
        key = (tuple(const), fast, n)
        if key not in self._contiguous:
            self._contiguous[key] = self._is_contiguous(key[0], fast, n)
        return self._contiguous[key]

    def _is_contiguous(self, const, fast: int, n: int) -> bool:
        first = self._offsets(self._joined(const))
        if (first % (n * self.eb)).any():
            return False
        for i in range(1, n):
            c = list(const)
            c[fast] += i
            if c[fast] >= self.shape[fast]:
                return False
            if not np.array_equal(self._offsets(self._joined(c)), first + i * self.eb):
                return False
        return True


def thread_part(ll, t: int, threads_per_warp: int) -> tuple:
    return ll.index(0, t % threads_per_warp, t // threads_per_warp)


def layout_addresser(ctx, ll, lay, shape, eb, ty, offsets=None) -> Addresser:
    """An :class:`Addresser` for the registers of a distributed tensor of type ``ty`` (linear layout ``ll``) in a
    buffer of ``shape``; with ``offsets``, the tensor is the block at those element offsets (multiples of the
    tensor's shape, so a register's index bits never carry into them)."""
    tpw = ctx.threads_per_warp
    vals = ctx.indices(ty)[0]
    if not offsets or not any(offsets):
        return Addresser(ctx, lay, shape, eb, lambda t: thread_part(ll, t, tpw), ctx.num_warps * tpw, vals, "xor")
    vals = [v if not o else ctx.emit("arith.addi", [v, ctx.c32(o)], ctx.i32()) for v, o in zip(vals, offsets)]
    return Addresser(ctx, lay, shape, eb, lambda t: tuple(a + o for a, o in zip(thread_part(ll, t, tpw), offsets)),
                     ctx.num_warps * tpw, vals, "xor")


def memdesc_ptr(ctx, op):
    """The ``!llvm.ptr<3>`` of the buffer ``op`` (a ``ttg.local_alloc``) allocates."""
    if "allocation.offset" not in op.attributes:
        raise LoweringError(f"ttg.local_alloc at {tt.loc_str(op)} has no allocation.offset: run the allocation "
                            "analysis (tritium-allocation) first")
    off = int(op.attributes["allocation.offset"].value)
    size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
    ctx.need_shared(off + size)
    base = ctx.smem_base()
    if not off:
        return base
    return ctx.emit("llvm.getelementptr", [base], base.type,
                    {"rawConstantIndices": ir.DenseI32ArrayAttr.get([off]),
                     "elem_type": ir.TypeAttr.get(ctx.int_ty(8))})


def byte_ptr(ctx, base, off):
    return ctx.emit("llvm.getelementptr", [base, off], base.type,
                    {"rawConstantIndices": ir.DenseI32ArrayAttr.get([-2147483648]),
                     "elem_type": ir.TypeAttr.get(ctx.int_ty(8))})


def _vec_type(sty, n):
    return sty if n == 1 else ir.VectorType.get([n], sty)


def chunks(ll, addr, fast: int, eb: int):
    """``(register, n)``: runs of registers split until each is contiguous (and aligned) in the buffer."""
    def split(r, n):
        if n == 1 or addr.contiguous(ll.index(r), fast, n):
            yield r, n
        else:
            yield from split(r, n // 2)
            yield from split(r + n // 2, n // 2)

    for r, n in register_runs(ll, fast, max(1, 16 // eb)):
        yield from split(r, n)


def store_tensor(ctx, base, vals, ty, mem_ty) -> None:
    """Store the registers of a distributed tensor (``vals`` of type ``ty``) into the buffer at ``base``."""
    shape, _, lay = memdesc_layout(mem_ty)
    sty, to_s, _, eb = smem_elem(ctx, ty)
    ll = ctx.linear(ty)
    fast, _ = lay.fast_slow(len(shape))
    addr = layout_addresser(ctx, ll, lay, shape, eb, ty)
    seen = set()
    for r, n in chunks(ll, addr, fast, eb):
        if ll.index(r) in seen:  # replicated registers: stored once
            continue
        seen.update(ll.index(r + i) for i in range(n))
        ptr = byte_ptr(ctx, base, addr.offset(ll.index(r)))
        if n == 1:
            v = to_s(vals[r])
        else:
            vt = _vec_type(sty, n)
            v = ctx.emit("llvm.mlir.undef", [], vt)
            for i in range(n):
                v = ctx.emit("llvm.insertelement", [v, to_s(vals[r + i]), ctx.c32(i)], vt)
        ctx.emit_op("llvm.store", [v, ptr], [], {"alignment": ir.IntegerAttr.get(ctx.int_ty(64), n * eb)})


def load_tensor(ctx, base, ty, mem_ty, offsets=None) -> list:
    """The registers of a distributed tensor of type ``ty`` read from the buffer at ``base`` (the block at
    ``offsets`` of it, see :func:`layout_addresser`)."""
    shape, _, lay = memdesc_layout(mem_ty)
    sty, _, from_s, eb = smem_elem(ctx, ty)
    ll = ctx.linear(ty)
    fast, _ = lay.fast_slow(len(shape))
    addr = layout_addresser(ctx, ll, lay, shape, eb, ty, offsets)
    out = [None] * ll.num_regs
    first = {}  # element -> the register that loaded it
    for r, n in chunks(ll, addr, fast, eb):
        if ll.index(r) in first:
            for i in range(n):
                out[r + i] = out[first[ll.index(r + i)]]
            continue
        ptr = byte_ptr(ctx, base, addr.offset(ll.index(r)))
        v = ctx.emit("llvm.load", [ptr], _vec_type(sty, n), {"alignment": ir.IntegerAttr.get(ctx.int_ty(64), n * eb)})
        for i in range(n):
            out[r + i] = from_s(v if n == 1 else ctx.emit("llvm.extractelement", [v, ctx.c32(i)], sty))
            first.setdefault(ll.index(r + i), r + i)
    return out


# ------------------------------------------------------------------------------------------------
# Rules
# ------------------------------------------------------------------------------------------------

@RULES.register("ttg.local_alloc")
def _local_alloc(ctx, src):
    base = memdesc_ptr(ctx, ctx.op)
    if src is not None:
        store_tensor(ctx, base, src, ctx.op.operands[0].type, ctx.op.results[0].type)
    return [[base]]


@RULES.register("ttg.local_store")
def _local_store(ctx, src, dst):
    store_tensor(ctx, dst[0], src, ctx.op.operands[0].type, ctx.op.operands[1].type)
    return []


@RULES.register("ttg.local_load")
def _local_load(ctx, src, offsets=None):
    return [load_tensor(ctx, src[0], ctx.op.results[0].type, ctx.op.operands[0].type, offsets)]


@RULES.register("ttg.local_dealloc")
def _local_dealloc(ctx, src):
    return []


@RULES.register("ttg.memdesc_subview")
def _memdesc_subview(ctx, src, index):
    """Buffer ``index`` of a stack: the stack's pointer + index * (bytes of one buffer)."""
    shape, elem, _ = memdesc_layout(ctx.op.operands[0].type)
    _, _, _, eb = smem_elem(ctx, elem)
    stage = tt.numel(shape[1:]) * eb
    off = ctx.emit("arith.muli", [index[0], ctx.c32(stage)], ctx.i32())
    return [[byte_ptr(ctx, src[0], off)]]
