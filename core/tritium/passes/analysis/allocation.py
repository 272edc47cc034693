"""Shared-memory allocation (Triton's ``Allocation`` analysis).

Every op that needs shared memory gets a buffer; buffers whose lifetimes overlap get disjoint byte ranges.

Buffers and their sizes (bytes; ``bytes(T)`` is the element size, pointers 8, ``i1`` 1):

* **convert_layout** between distributed layouts (scratch, live during the op only).  None when the two layouts
  give every thread the same elements (an in-register permutation: equal lane and warp bases, the same register
  bases).  Otherwise the whole tensor, row-major (the lowering moves it in one round)::

      size          = prod(shape) * bytes(T)

  (Triton moves big tensors in several rounds of ``prod(rep)`` elements, ``rep[d] = max(min(shape[d],
  tile(src)[d]), min(shape[d], tile(dst)[d]))``, padded against bank conflicts: less memory, more barriers.)

* **reduce** (scratch): none when all data along ``axis`` is within one warp (shuffles only); otherwise::

      warps(axis)   = warps that hold distinct data along axis (2 ** number of warp bases along axis)
      size          = prod(shape with shape[axis] = warps(axis)) * sum(bytes(T_i) over the operands)

* **scan** (scratch): none when ``axis`` lies within one warp; otherwise::

      size = num_warps * (distinct non-axis elements a warp holds) * (tile repetitions along axis)
             * sum(bytes(T_i))

* **view ops that move data between threads** (scratch, :func:`view_scratch_size`): ``trans``, ``cat``, ``join``,
  and ``reshape`` / ``broadcast`` / ``expand_dims`` whose two layouts put an element in different threads:
  ``sum(prod(operand shape)) * bytes(T)`` (``split`` keeps its rule's own bracketed buffer);
* **atomic_rmw / atomic_cas** whose result is used (scratch): ``bytes(T)`` on a scalar pointer (one thread does
  the atomic and shares the result through shared memory), ``prod(shape) * bytes(T)`` on a tensor whose layout
  holds an element in several threads (the first holder does it and shares it the same way);
* **local_alloc** (explicit buffer): ``prod(memdesc shape) * bytes(T)``, live from the alloc to its last use
  (a use inside a loop that does not hold the alloc keeps it live to the end of that loop);
* **tt.make_tensor_descriptor** marked ``tt.tma`` (a TMA tensor map made on the device; scratch): 128 bytes aligned
  to 128, where it is built before being copied to its slot of global scratch (:func:`allocate_global_scratch`);
* **func.call** of a function that uses shared memory: scratch of the callee's total; the callee's offsets are
  relative to the call's offset.

Liveness is measured in program order (a pre-order numbering of the function's ops); a scratch buffer lives
``[i, i+1)`` of its op, an op holding regions lives to its last nested op.  Offsets: buffers sorted by size
(largest first, then program order), each placed at the lowest offset, aligned to ``ALIGNMENT`` bytes, that
overlaps no already placed buffer whose lifetime overlaps its own (first fit).  A ``local_alloc`` in
``#ttg.nvmma_shared`` with a swizzle is aligned to ``8 * swizzleBytes`` (1024 bytes for 128B) instead: wgmma's
matrix descriptors (and TMA) read it assuming the buffer starts on its swizzle pattern (descriptor base offset 0).

Results are written as attributes the lowering reads:

* on each op with a buffer: ``allocation.offset = N : i32`` and ``allocation.size = N : i32`` (bytes);
* on the module: ``ttg.shared = N : i32``, the largest total of any public function (bytes of dynamic shared
  memory to launch with); on each function with buffers: ``ttg.shared`` too.

Query API: ``alloc = allocate_shared_memory(module)`` (computes and writes the attributes) or
``Allocation(module)`` (computes only); ``alloc.offset(op)``, ``alloc.size(op)``, ``alloc.total``,
``alloc.buffers``; ``scratch_size(op)`` for one op; ``offset_of(op)`` / ``shared_size(module)`` read the
attributes back.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

from mlir import ir

from tritium.dialects import layouts, tt, ttg
from tritium.passes.pass_manager import pass_entry
from tritium.passes.ir_helpers import ancestor_in_block, as_op as _as_op, walk as _walk

ALIGNMENT = 16
TMA_ATTR = "tt.tma"  # a tensor map made on the device (passes/ttir/tma_descriptors.py)
TENSORMAP_BYTES = 128
GLOBAL_SCRATCH_OFFSET, GLOBAL_SCRATCH_SIZE, GLOBAL_SCRATCH_ALIGN = (ttg.GLOBAL_SCRATCH_OFFSET, ttg.GLOBAL_SCRATCH_SIZE,
                                                                   ttg.GLOBAL_SCRATCH_ALIGN)
OFFSET_ATTR = "allocation.offset"
SIZE_ATTR = "allocation.size"
SHARED_ATTR = "ttg.shared"

log = logging.getLogger(__name__)


def elem_bytes(ty) -> int:
    """Bytes one element of ``ty`` (a tensor or scalar type) takes in shared memory."""
    e = tt.elem_of(ty)
    if tt.is_ptr(e):
        return 8
    if isinstance(e, ir.IntegerType):
        return max(1, ir.IntegerType(e).width // 8)
    if isinstance(e, ir.IndexType):
        return 8
    if isinstance(e, ir.FloatType):
        return max(1, ir.FloatType(e).width // 8)
    return 4


def _tile(layout, rank: int) -> Optional[tuple]:
    if isinstance(layout, layouts.BlockedLayout):
        return layout.shape_per_cta_tile()
    if isinstance(layout, layouts.SliceLayout):
        p = _tile(layout.parent, rank + 1)
        return None if p is None else p[:layout.dim] + p[layout.dim + 1:]
    return None


def register_only(src, dst, shape) -> bool:
    """True when every thread holds the same elements in both layouts (no data moves between threads)."""
    if src == dst:
        return True
    try:
        a, b = src.linear(tuple(shape)), dst.linear(tuple(shape))
    except ValueError as e:  # a shape the linear layouts do not cover: assume the data moves
        log.debug("conversion %s -> %s of shape %s counted as moving data between threads: %s", src, dst,
                  tuple(shape), e)
        return False
    zero = (0,) * len(shape)
    return (a.lane == b.lane and a.warp == b.warp
            and {x for x in a.reg if x != zero} == {x for x in b.reg if x != zero})


def convert_scratch_size(src_ty, dst_ty) -> int:
    """Bytes of scratch a ``ttg.convert_layout`` from ``src_ty`` to ``dst_ty`` needs (0: none)."""
    src, dst = ttg.encoding_of(src_ty), ttg.encoding_of(dst_ty)
    if src is None or dst is None:
        return 0
    shape = tuple(ir.RankedTensorType(src_ty).shape)
    if register_only(src, dst, shape):
        return 0
    eb = elem_bytes(src_ty)
    rounds = layouts.convert_rounds(src.linear(shape), dst.linear(shape), eb)
    return (tt.numel(shape) * eb) >> rounds


def _warp_bits_along(layout, shape, axis) -> int:
    ll = layout.linear(tuple(shape))
    return sum(1 for b in ll.warp if b[axis] != 0)


def _along_axis(op):
    """``(layout, shape, axis, bytes of one element of every operand)`` of a reduce / scan whose operands have a
    layout, else None."""
    op = _as_op(op)
    srcs = list(op.operands)
    lay = ttg.encoding_of(srcs[0].type)
    if lay is None:
        return None
    return lay, tt.shape_of(srcs[0].type), int(op.attributes["axis"].value), sum(elem_bytes(v.type) for v in srcs)


def reduce_scratch_size(op) -> int:
    """Bytes a ``tt.reduce`` across warps exchanges its partials through: the operands' shape with ``shape[axis]``
    the number of warps along ``axis`` (0 when one warp holds the whole axis)."""
    found = _along_axis(op)
    if found is None:
        return 0
    lay, shape, axis, nbytes = found
    warps = 1 << _warp_bits_along(lay, shape, axis)
    if warps == 1:
        return 0
    return tt.numel(shape[:axis] + (warps,) + shape[axis + 1:]) * nbytes


def scan_scratch_size(op, num_warps: int) -> int:
    """Bytes a ``tt.scan`` across warps exchanges its segment totals through (0 within one warp)."""
    found = _along_axis(op)
    if found is None:
        return 0
    lay, shape, axis, nbytes = found
    if _warp_bits_along(lay, shape, axis) == 0:
        return 0
    ll = lay.linear(shape)
    non_axis = set()
    for ln in range(ll.num_lanes):
        for idx in ll.elements(0, ln):
            non_axis.add(idx[:axis] + idx[axis + 1:])
    tile = _tile(lay, len(shape))
    reps = max(1, shape[axis] // tile[axis]) if tile else 1
    return num_warps * len(non_axis) * reps * nbytes


def _same_threads(src_ty, dst_ty, project) -> bool:
    """True when every thread of ``dst_ty``'s layout holds, for each of its elements, the source element
    ``project(index)`` in a register of its own (a broadcast / expand_dims within registers: the lowering's
    :func:`tritium.dialects.layouts.reg_lookup` finds them)."""
    from tritium.dialects.layouts import reg_lookup

    src, dst = ttg.encoding_of(src_ty), ttg.encoding_of(dst_ty)
    if src is None or dst is None:
        return True
    try:
        a, b = src.linear(tt.shape_of(src_ty)), dst.linear(tt.shape_of(dst_ty))
    except ValueError:
        return False
    return reg_lookup(a, b, project) is not None


def view_scratch_size(op) -> int:
    """Bytes a view op moves between threads through (the source tensors written once, then read in the result's
    layout: :func:`tritium.lowering.utils.exchange`): ``tt.cat`` / ``tt.join`` always,
    ``tt.trans`` / ``tt.reshape`` / ``tt.broadcast`` / ``tt.expand_dims`` when the two layouts place an element in different threads
    (``tt.split``, two exchanges in one op, keeps the rule's own bracketed scratch)."""
    op = _as_op(op)
    name = op.name
    src_ty, dst_ty = op.operands[0].type, op.results[0].type
    if not isinstance(src_ty, ir.RankedTensorType):
        return 0
    if name == "tt.broadcast":
        sshape = tt.shape_of(src_ty)
        if _same_threads(src_ty, dst_ty, lambda b: tuple(0 if sshape[d] == 1 else x for d, x in enumerate(b))):
            return 0
    elif name == "tt.expand_dims":
        axis = int(op.attributes["axis"].value)
        if _same_threads(src_ty, dst_ty, lambda b: b[:axis] + b[axis + 1:]):
            return 0
    elif name == "tt.reshape":
        sshape, dshape = tt.shape_of(src_ty), tt.shape_of(dst_ty)
        if _same_threads(src_ty, dst_ty, lambda ix: layouts.reshape_index(ix, dshape, sshape)):
            return 0
    elif name == "tt.trans":
        order = [int(x) for x in ir.DenseI32ArrayAttr(op.attributes["order"])]
        if _same_threads(src_ty, dst_ty, lambda ix: layouts.trans_source_index(ix, order)):
            return 0
    elif name not in ("tt.cat", "tt.join"):
        return 0
    return sum(tt.numel(tt.shape_of(v.type)) for v in op.operands) * elem_bytes(dst_ty)


def atomic_scratch_size(op) -> int:
    """Bytes an atomic whose result is used shares that result through: its element for a scalar (thread 0 does
    it), the whole tensor when a layout holds an element in several threads (its first holder does it); else 0."""
    from tritium.dialects.layouts import replicated_across_threads
    from tritium.passes.ir_helpers import has_uses as result_used

    op = _as_op(op)
    res_ty = op.results[0].type
    if not result_used(op.results[0]):
        return 0
    if not isinstance(res_ty, ir.RankedTensorType):
        return elem_bytes(res_ty)

    lay = ttg.encoding_of(res_ty)
    if lay is None or not replicated_across_threads(lay.linear(tt.shape_of(res_ty))):
        return 0
    return tt.numel(tt.shape_of(res_ty)) * elem_bytes(res_ty)


def scratch_size(op, num_warps: int = 4, callee_totals: Optional[dict] = None) -> int:
    """Bytes of scratch shared memory ``op`` needs while it runs (0 for none)."""
    op = _as_op(op)
    name = op.name
    if name == "ttg.convert_layout":
        return convert_scratch_size(op.operands[0].type, op.results[0].type)
    if name in ("tt.broadcast", "tt.expand_dims", "tt.trans", "tt.reshape", "tt.cat", "tt.join"):
        return view_scratch_size(op)
    if name == "tt.reduce":
        return reduce_scratch_size(op)
    if name == "tt.scan":
        return scan_scratch_size(op, num_warps)
    if name in ("tt.atomic_rmw", "tt.atomic_cas"):
        return atomic_scratch_size(op)
    if name == "func.call" and callee_totals:
        return callee_totals.get(str(op.attributes["callee"]).lstrip("@"), 0)
    if name == "tt.make_tensor_descriptor" and TMA_ATTR in op.attributes:
        return TENSORMAP_BYTES  # the tensor map is built here, then copied to global scratch
    return 0


def buffer_alignment(op, default: int = ALIGNMENT) -> int:
    """Byte alignment of ``op``'s buffer: ``8 * swizzleBytes`` for a swizzled ``#ttg.nvmma_shared`` local_alloc
    (its swizzle pattern's period), else ``default``."""
    op = _as_op(op)
    if op.name == "tt.make_tensor_descriptor":
        return max(default, TENSORMAP_BYTES)
    if op.name != "ttg.local_alloc":
        return default
    s = str(op.results[0].type)
    enc = s[s.index("#ttg."):-1] if "#ttg." in s else ""
    if not enc.startswith("#ttg.nvmma_shared"):
        return default
    lay = layouts.parse_layout(enc)
    return max(default, 8 * lay.swizzle_bytes)


def explicit_size(op) -> int:
    op = _as_op(op)
    if op.name != "ttg.local_alloc":
        return 0
    shape, elem = ttg.memdesc_shape_and_element(op.results[0].type)
    return tt.numel(shape) * elem_bytes(elem)


@dataclass
class Buffer:
    op: object
    kind: str  # "scratch" | "explicit"
    size: int
    start: int
    end: int  # exclusive
    offset: int = 0
    align: int = ALIGNMENT

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.start < other.end and other.start < self.end


def _number(func) -> tuple:
    """Pre-order index of every op of ``func`` and the index one past its last nested op."""
    index, end = {}, {}
    counter = [0]

    def visit(op):
        index[op] = counter[0]
        counter[0] += 1
        for r in op.regions:
            for b in r.blocks:
                for c in b.operations:
                    visit(_as_op(c))
        end[op] = counter[0]

    for r in func.regions:
        for b in r.blocks:
            for c in b.operations:
                visit(_as_op(c))
    return index, end


class Allocation:
    """Buffers, liveness and offsets of every function under ``module`` (see the module docstring)."""

    def __init__(self, module, alignment: int = ALIGNMENT):
        self.module = _as_op(module)
        self.alignment = alignment
        self.buffers: list = []
        self.function_totals: dict = {}
        self._by_op: dict = {}
        with self.module.context:
            self._run()

    @property
    def total(self) -> int:
        """Bytes of shared memory a kernel launch needs: the largest total of the public functions."""
        pub = [t for (name, public), t in self._func_info.items() if public]
        return max(pub or list(self.function_totals.values()) or [0])

    def offset(self, op) -> Optional[int]:
        b = self.buffer(op)
        return None if b is None else b.offset

    def size(self, op) -> int:
        b = self.buffer(op)
        return 0 if b is None else b.size

    def buffer(self, op) -> Optional[Buffer]:
        # Operation wrappers hash by content in these bindings (adding an attribute changes the hash), so the
        # dict is only a fast path: fall back to comparing every buffer's op.
        op = _as_op(op)
        b = self._by_op.get(op)
        if b is not None:
            return b
        for b in self.buffers:
            if b.op == op:
                return b
        return None

    def _run(self) -> None:
        funcs = []
        for op in self.module.regions[0].blocks[0].operations:
            op = _as_op(op)
            if op.name == "func.func":
                funcs.append(op)
        num_warps = ttg.module_int(self.module, ttg.NUM_WARPS, 4)
        self._func_info = {}
        done: dict = {}
        # callees first (their totals are scratch of the calls)
        order, pending = [], list(funcs)
        names = {_sym(f) for f in funcs}
        for _ in range(len(funcs) + 1):
            for f in list(pending):
                calls = [_callee(c) for c in _walk(f) if c.name == "func.call"]
                if all(c in done or c not in names for c in calls):
                    order.append(f)
                    done[_sym(f)] = True
                    pending.remove(f)
        order.extend(pending)
        for f in order:
            total = self._allocate_function(f, num_warps)
            self.function_totals[_sym(f)] = total
            self._func_info[(_sym(f), _is_public(f))] = total

    def _allocate_function(self, func, num_warps) -> int:
        index, end = _number(func)
        bufs = []
        for op in _walk(func):
            s = scratch_size(op, num_warps, self.function_totals)
            if s:
                bufs.append(Buffer(op, "scratch", s, index[op], index[op] + 1, align=self.alignment))
                continue
            s = explicit_size(op)
            if s:
                last = index[op] + 1
                for u in op.results[0].uses:
                    a = ancestor_in_block(_as_op(u.owner), op.block)
                    if a is not None:
                        last = max(last, end[a])
                bufs.append(Buffer(op, "explicit", s, index[op], last, align=buffer_alignment(op, self.alignment)))
        placed: list = []
        for b in sorted(bufs, key=lambda b: (-b.size, b.start)):
            b.offset = self._first_fit(b, placed)
            placed.append(b)
        for b in bufs:
            self._by_op[b.op] = b
        self.buffers.extend(bufs)
        return max([b.offset + b.size for b in bufs] or [0])

    def _first_fit(self, b: Buffer, placed: list) -> int:
        live = sorted((p for p in placed if p.overlaps_in_time(b)), key=lambda p: p.offset)
        candidates = sorted({0} | {_align(p.offset + p.size, b.align) for p in live})
        for c in candidates:
            if all(c + b.size <= p.offset or p.offset + p.size <= c for p in live):
                return c
        return _align(max((p.offset + p.size for p in live), default=0), b.align)  # pragma: no cover

    def apply(self) -> "Allocation":
        """Write ``allocation.offset`` / ``allocation.size`` on the ops and ``ttg.shared`` on the module."""
        with self.module.context:
            i32 = ir.IntegerType.get_signless(32)
            for b in self.buffers:
                b.op.attributes[OFFSET_ATTR] = ir.IntegerAttr.get(i32, b.offset)
                b.op.attributes[SIZE_ATTR] = ir.IntegerAttr.get(i32, b.size)
            for op in self.module.regions[0].blocks[0].operations:
                op = _as_op(op)
                if op.name == "func.func" and self.function_totals.get(_sym(op)):
                    op.attributes[SHARED_ATTR] = ir.IntegerAttr.get(i32, self.function_totals[_sym(op)])
            self.module.attributes[SHARED_ATTR] = ir.IntegerAttr.get(i32, self.total)
        self._by_op = {b.op: b for b in self.buffers}
        return self


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _sym(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


def _callee(call) -> str:
    return str(call.attributes["callee"]).lstrip("@")


def _is_public(f) -> bool:
    return "sym_visibility" not in f.attributes or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"


def allocate_shared_memory(module) -> Allocation:
    """Compute the allocation of ``module`` and write its attributes; returns it."""
    return Allocation(module).apply()


def offset_of(op) -> Optional[int]:
    """The ``allocation.offset`` attribute of ``op`` (None when it has no buffer)."""
    op = _as_op(op)
    return int(op.attributes[OFFSET_ATTR].value) if OFFSET_ATTR in op.attributes else None


def size_of(op) -> int:
    op = _as_op(op)
    return int(op.attributes[SIZE_ATTR].value) if SIZE_ATTR in op.attributes else 0


def shared_size(module) -> int:
    """The module's ``ttg.shared`` (bytes of shared memory to launch with)."""
    op = _as_op(module)
    return int(op.attributes[SHARED_ATTR].value) if SHARED_ATTR in op.attributes else 0


def allocate_global_scratch(module) -> int:
    """Global scratch memory (Triton's ``GlobalScratchAllocation``): each tensor map made on the device
    (``tt.make_tensor_descriptor`` marked ``tt.tma``) gets a 128-byte slot of its program's scratch,
    ``ttg.global_scratch_memory_offset`` on the op; the module's ``ttg.global_scratch_memory_size`` is the bytes per
    program (the launcher allocates that times the grid, through ``triton.set_allocator``'s allocator, aligned to
    ``ttg.global_scratch_memory_alignment``).  Returns the size."""
    module = _as_op(module)
    offset = 0
    with module.context:
        i32 = ir.IntegerType.get_signless(32)
        for op in _walk(module):
            if op.name == "tt.make_tensor_descriptor" and TMA_ATTR in op.attributes:
                op.attributes[GLOBAL_SCRATCH_OFFSET] = ir.IntegerAttr.get(i32, offset)
                offset += TENSORMAP_BYTES
        if offset:
            module.attributes[GLOBAL_SCRATCH_SIZE] = ir.IntegerAttr.get(i32, offset)
            module.attributes[GLOBAL_SCRATCH_ALIGN] = ir.IntegerAttr.get(i32, TENSORMAP_BYTES)
    return offset


#: shared memory, then global scratch
allocation_pass = pass_entry("tritium-allocation", allocate_shared_memory, allocate_global_scratch)
