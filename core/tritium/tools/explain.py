"""``tritium explain``: what the GPU compiler did with a kernel, as a report a kernel author can act on.

:func:`explain` compiles a kernel for a GPU target (``cuda:90`` unless told otherwise; layouts are a GPU-compiler
concept, so the interpreter is never the target), keeps the TTGIR after the TTGIR pipeline (layouts assigned,
conversions left, shared memory placed) and walks it:

* every global memory access (``tt.load`` / ``tt.store`` / atomics, the pipeliner's ``cp.async`` copies, TMA
  copies) with its source line, layout, the vector width the lowering uses -- computed by the lowering's own
  :func:`tritium_nvidia.lowering.memory.vector_width` on the same module and axis analysis, so the report cannot
  disagree with the PTX -- and whether a warp's accesses are coalesced, and why not;
* every ``ttg.convert_layout`` (registers or shared memory, its bytes, the loop it sits in);
* every ``tt.reduce`` (in-thread, across lanes with shuffles, across warps through shared memory);
* every dot (``mma.sync`` v2, ``wgmma`` v3 or FMA; its instruction; whether its loop was software pipelined);
* shared memory by buffer (the allocation analysis's ``allocation.offset`` / ``allocation.size``);
* registers, spills and shared memory from ptxas, and the occupancy they allow on the target's SM;

and ends with warnings: sentences naming a line and what to change.  The result is an :class:`Explanation`
(``str()`` is the report, ``to_json()`` its data); ``JITFunction.explain`` and ``tritium explain`` build it.
"""
from __future__ import annotations

import json
import linecache
import logging
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

DEFAULT_TARGET = "cuda:90"

# ---------------------------------------------------------------------------------------------- results


@dataclass
class Access:
    """One global-memory access op."""

    op: str  # load, store, atomic_rmw, atomic_cas, async_copy (cp.async), tma_load, tma_store
    line: Optional[int]
    source: str
    pointer: Optional[str]  # the kernel argument the address derives from
    dtype: str
    shape: tuple
    layout: str
    vector_width: int  # elements per thread per instruction
    max_vector_width: int  # what 128-bit accesses would be
    bytes_per_access: int  # per thread per instruction
    coalesced: Optional[bool]  # None: not a per-thread access (TMA)
    warp_bytes: int = 0  # bytes a warp touches per instruction
    segments: int = 0  # contiguous address runs a warp touches per instruction
    sectors: int = 0  # 32-byte sectors those runs touch (each run's start taken as aligned)
    why_narrow: list = field(default_factory=list)  # why vector_width < max_vector_width
    why_uncoalesced: list = field(default_factory=list)
    loop_line: Optional[int] = None
    ops: int = 1  # TTGIR ops of this access (the pipeliner's prologue copies are one entry)


@dataclass
class Conversion:
    line: Optional[int]
    source: str
    dtype: str
    shape: tuple
    src_layout: str
    dst_layout: str
    kind: str  # "shared memory", "registers", "none"
    shared_bytes: int
    loop_line: Optional[int] = None
    feeds: list = field(default_factory=list)  # the ops reading the result, "tt.store at line 12"


@dataclass
class Reduction:
    line: Optional[int]
    source: str
    axis: int
    shape: tuple
    dtype: str
    layout: str
    in_thread: int  # elements a thread combines along axis
    lanes: int  # lanes holding distinct elements along axis (shuffle rounds: log2)
    warps: int  # warps holding distinct elements along axis
    crosses: str  # "thread", "lanes", "warps"
    shared_bytes: int
    loop_line: Optional[int] = None


@dataclass
class Dot:
    line: Optional[int]
    source: str
    engine: str  # "mma v2 (mma.sync)", "wgmma v3", "fma"
    mma_version: Optional[int]
    instruction: str  # mma.sync.m16n8k16, wgmma.m64n128k16, fma
    shape: tuple  # M, N, K of the dot as written (K: all of its slices)
    dtypes: str  # "f16 x f16 -> f32"
    a_layout: str
    b_layout: str
    acc_layout: str
    ops: int  # ops in the TTGIR (prefetch splits a dot along K)
    loop_line: Optional[int] = None
    pipelined: bool = False
    num_stages: int = 1
    buffers: int = 0  # shared-memory stages the loop's copies rotate through
    is_async: bool = False


@dataclass
class SharedBuffer:
    op: str
    line: Optional[int]
    offset: int
    size: int
    what: str


@dataclass
class Resources:
    num_warps: int
    n_regs: Optional[int]
    n_spills: Optional[int]
    shared: int  # bytes (dynamic + static)
    blocks_per_sm: Optional[int] = None
    warps_per_sm: Optional[int] = None
    max_warps_per_sm: Optional[int] = None
    occupancy: Optional[float] = None
    limited_by: list = field(default_factory=list)
    limits: dict = field(default_factory=dict)  # what each resource alone allows (blocks per SM)


@dataclass
class Explanation:
    kernel: str
    target: str
    options: dict
    signature: dict
    constexprs: dict
    accesses: list = field(default_factory=list)
    conversions: list = field(default_factory=list)
    reductions: list = field(default_factory=list)
    dots: list = field(default_factory=list)
    shared_buffers: list = field(default_factory=list)
    shared_total: int = 0
    resources: Optional[Resources] = None
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    pictures: dict = field(default_factory=dict)  # layout -> PNG path
    picture_notes: dict = field(default_factory=dict)  # layout -> how it is drawn, when not as it is
    ttgir: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("ttgir")
        return d

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), default=str, **({"indent": 2} | kw))

    def __str__(self) -> str:
        return render(self)


# ---------------------------------------------------------------------------------------------- entry points


def explain(fn, signature: dict, constexprs: Optional[dict] = None, attrs: Optional[dict] = None, *,
            target: Any = None, options: Optional[dict] = None, pictures: Any = None) -> Explanation:
    """Compile ``fn`` (a JITFunction) for ``signature`` / ``constexprs`` / ``attrs`` (as :class:`ASTSource` takes
    them) on a GPU ``target`` and explain the result.  ``pictures``: a directory to draw the layouts into."""
    from ..compiler import ASTSource, compile
    from ..compiler.backend import GPUTarget
    from ..compiler.registry import get_compiler

    notes = []
    target = _gpu_target(target, notes)
    compiler = get_compiler(target.backend)
    opts = compiler.parse_options(dict(options or {}))
    until, limits = compiler.explain_limits(target)
    notes.extend(limits)
    src = ASTSource(fn, dict(signature), dict(constexprs or {}), dict(attrs or {}))
    with _PassLog() as passlog:
        kernel = compile(src, target=target, options=opts, until=until, use_cache=False)
    if "ttgir" not in kernel.asm:
        raise ValueError(f"explain: the '{target.backend}' backend has no ttgir stage")
    assert isinstance(target, GPUTarget)
    ex = _explain_ttgir(kernel, target, passlog.records)
    ex.notes[:0] = notes
    if pictures is not None:
        draw_pictures(ex, pictures)
    return ex


def explain_launch(fn, args: tuple, kwargs: dict, *, target: Any = None, pictures: Any = None) -> Explanation:
    """:func:`explain` for the arguments of a launch ``fn[grid](*args, **kwargs)``: bound and specialised by the
    JIT's own :class:`~tritium.runtime.binder.Binder` (pointer alignment from the tensors' addresses, integers
    divisible by 16, integers equal to 1 as constexprs), keyword options (``num_warps=8``) passed on.  Type strings
    (``"*fp32"``) stand for arguments, as in ``warmup``."""
    if fn.debug is not None and "debug" not in kwargs:
        kwargs = {**kwargs, "debug": fn.debug}
    bound = fn.binder.bind(tuple(args), dict(kwargs), warmup=True)
    return explain(fn, bound.signature, bound.constexprs, bound.attrs, target=target, options=bound.options,
                   pictures=pictures)


def _gpu_target(target, notes):
    """The GPUTarget to explain for: ``target`` (a GPUTarget, ``"cuda:80"``, ...), else the active GPU target,
    else cuda:90.  The interpreter has no layouts: a GPU target is used instead, with a note saying so."""
    from ..compiler.backend import GPUTarget
    from ..compiler.registry import get_compiler

    if isinstance(target, str):
        name, _, arch = target.partition(":")
        if name == "interpreter":
            notes.append("layouts, vector widths and shared memory are decisions of the GPU compiler; the "
                         f"interpreter has none, so this explains the kernel for {DEFAULT_TARGET}")
            return _gpu_target(DEFAULT_TARGET, [])
        target = get_compiler(name).target_for_arch(arch or None)
    if target is None:
        try:
            from ..compiler.registry import current_target

            target = current_target()
        except Exception:  # no active backend at all: explain for the default GPU
            target = None
        if target is None or target.backend == "interpreter":
            if target is not None:
                notes.append("the active backend is the interpreter, which has no layouts: explained for "
                             f"{DEFAULT_TARGET} (pass target= / --target to choose)")
            return _gpu_target(DEFAULT_TARGET, [])
    if isinstance(target, GPUTarget) and target.backend == "interpreter":
        return _gpu_target("interpreter", notes)
    return target


class _PassLog(logging.Handler):
    """The passes' DEBUG records during the compile (why a load was not pipelined, ...)."""

    LOGGERS = ("tritium_nvidia.passes.pipeline_loops",)

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list = []
        self._levels: dict = {}

    def emit(self, record):
        self.records.append(record.getMessage())

    def __enter__(self):
        for name in self.LOGGERS:
            lg = logging.getLogger(name)
            self._levels[name] = lg.level
            lg.setLevel(logging.DEBUG)
            lg.addHandler(self)
        return self

    def __exit__(self, *exc):
        for name, level in self._levels.items():
            lg = logging.getLogger(name)
            lg.removeHandler(self)
            lg.setLevel(level)


# ---------------------------------------------------------------------------------------------- the walk


def _explain_ttgir(kernel, target, passlog) -> Explanation:
    from mlir import ir

    from ..dialects import make_context, ttg
    from ..passes.analysis.axis_info import AxisInfoAnalysis

    md = kernel.metadata
    text = kernel.asm["ttgir"]
    context = make_context()
    module = ir.Module.parse(text, context)
    sig = [tuple(x) for x in md.get("signature", [])]
    ex = Explanation(kernel=md.get("name", ""), target=f"{target.backend}:{target.arch}",
                     options={k: md.get(k) for k in ("num_warps", "num_stages") if k in md},
                     signature=dict(sig), constexprs=dict(md.get("constexprs", {})), ttgir=text)
    with context:
        w = _Walker(module, AxisInfoAnalysis(module.operation), [n for n, _ in sig], passlog)
        w.run(ex)
        ex._layouts = w.layouts
        ex.shared_total = ttg.module_int(module, "ttg.shared", 0) or 0
    ex.resources = _resources(md, target, ex)
    _warnings(ex, w)
    return ex


_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')


def _loc(op) -> tuple:
    """``(file, line)`` of an op's source location (the first file location in it), else (None, None)."""
    m = _LOC.search(str(op.location))
    return (m.group(1), int(m.group(2))) if m else (None, None)


def _source(file, line) -> str:
    return linecache.getline(file, line).strip() if file and line else ""


def short_layout(layout) -> str:
    """A layout in the report's short form: ``#blocked<sizePerThread=[4], threadsPerWarp=[32], ...>``."""
    from ..dialects import layouts as L

    def arr(xs):
        return "[" + ", ".join(str(int(x)) for x in xs) + "]"

    if layout is None:
        return "(none)"
    if isinstance(layout, L.BlockedLayout):
        return (f"#blocked<sizePerThread={arr(layout.size_per_thread)}, threadsPerWarp={arr(layout.threads_per_warp)}"
                f", warpsPerCTA={arr(layout.warps_per_cta)}, order={arr(layout.order)}>")
    if isinstance(layout, L.SliceLayout):
        return f"#slice<dim={layout.dim}, parent={short_layout(layout.parent)}>"
    if isinstance(layout, L.NvidiaMmaLayout):
        return f"#mma<v{layout.version}, warpsPerCTA={arr(layout.warps_per_cta)}, instrShape={arr(layout.instr_shape)}>"
    if isinstance(layout, L.DotOperandLayout):
        return f"#dot_op<opIdx={layout.op_idx}, parent={short_layout(layout.parent)}, kWidth={layout.k_width}>"
    if isinstance(layout, L.NVMMASharedLayout):
        return (f"#nvmma_shared<swizzle={layout.swizzle_bytes}B, transposed={layout.transposed}, "
                f"elementBits={layout.element_bits}>")
    if isinstance(layout, L.SharedLayout):
        return (f"#shared<vec={layout.vec}, perPhase={layout.per_phase}, maxPhase={layout.max_phase}, "
                f"order={arr(layout.order)}>")
    return layout.to_str() if hasattr(layout, "to_str") else str(layout)


class _Probe:
    """The part of a lowering context :func:`tritium_nvidia.lowering.memory.vector_width` reads (its own
    ``layout`` / ``linear`` methods), so the report's widths are the lowering's."""

    def __init__(self, axis_info, op):
        from ..lowering.context import LoweringContext

        self.axis_info = axis_info
        self.op = op
        self._ctx = LoweringContext

    def layout(self, ty):
        return self._ctx.layout(self, ty)

    def linear(self, ty):
        return self._ctx.linear(self, ty)


_ACCESS_OPS = {"tt.load": "load", "tt.store": "store", "tt.atomic_rmw": "atomic_rmw", "tt.atomic_cas": "atomic_cas",
               "ttg.async_copy_global_to_local": "async_copy (cp.async)",
               "ttg.async_tma_copy_global_to_local": "tma_load", "ttg.async_tma_copy_local_to_global": "tma_store",
               "tt.descriptor_load": "descriptor_load", "tt.descriptor_store": "descriptor_store"}
_LOOPS = ("scf.for", "scf.while")
# ops a pointer / an offset passes through unchanged on its way from a kernel argument
_THROUGH = ("tt.splat", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape", "arith.extsi",
            "arith.extui", "arith.trunci", "arith.index_cast", "tt.bitcast")


class _Walker:
    def __init__(self, module, info, arg_names, passlog):
        from ..passes.ir_helpers import public_functions, walk

        self.module = module
        self.info = info
        self.arg_names = arg_names
        self.passlog = passlog
        self.ops = walk(module.operation)
        self.kernel_args: dict = {}  # block argument -> (name, divisible)
        for f in public_functions(module.operation):
            self._kernel_args(f)
        self.layouts: dict = {}  # short form -> (layout object, shape) for pictures

    def _kernel_args(self, f):
        from ..passes.ir_helpers import arg_attrs, attr_int

        args = list(f.regions[0].blocks[0].arguments)
        names = self.arg_names if len(self.arg_names) == len(args) else [f"arg{i}" for i in range(len(args))]
        for a, name, at in zip(args, names, arg_attrs(f)):
            self.kernel_args[a] = (name, attr_int(at.get("tt.divisibility")) or 1)

    # ------------------------------------------------------------------------ helpers
    def where(self, op):
        file, line = _loc(op)
        return line, _source(file, line)

    def loop_of(self, op) -> Optional[int]:
        p = op.parent
        while p is not None:
            p = p.operation if hasattr(p, "operation") else p
            if p.name in _LOOPS:
                return _loc(p)[1]
            if p.name == "func.func":
                return None
            p = p.parent
        return None

    def arg_of(self, value, seen=None):
        """``(name, divisibility)`` of the kernel argument a pointer derives from (through addptr's base,
        splats, broadcasts, loop-carried values), else None."""
        from mlir import ir

        seen = seen if seen is not None else set()
        for _ in range(64):
            if value in self.kernel_args:
                return self.kernel_args[value]
            owner = value.owner
            if isinstance(owner, ir.Block):
                loop = owner.owner.operation if owner.owner is not None else None
                if loop is not None and loop.name == "scf.for" and value.arg_number > 0:
                    value = loop.operands[3 + value.arg_number - 1]  # the iter_arg's initial value
                    continue
                return None
            op = owner.operation if hasattr(owner, "operation") else owner
            if op.name == "tt.addptr" or op.name in _THROUGH:
                value = op.operands[0]
                continue
            return None
        return None

    def int_args_in(self, value, depth=0) -> list:
        """Kernel integer arguments (name, divisibility) that feed ``value`` through arithmetic."""
        from mlir import ir

        if depth > 24:
            return []
        if value in self.kernel_args:
            return [self.kernel_args[value]]
        owner = value.owner
        if isinstance(owner, ir.Block):
            return []
        op = owner.operation if hasattr(owner, "operation") else owner
        if op.name == "tt.load":
            return []
        out = []
        for v in op.operands:
            for a in self.int_args_in(v, depth + 1):
                if a not in out:
                    out.append(a)
        return out

    def offsets_of(self, ptr) -> list:
        """The integer kernel arguments in the offsets added to a pointer (``x_ptr + row * stride + cols``)."""
        from mlir import ir

        out = []
        v = ptr
        for _ in range(64):
            owner = v.owner
            if isinstance(owner, ir.Block) or v in self.kernel_args:
                break
            op = owner.operation if hasattr(owner, "operation") else owner
            if op.name == "tt.addptr":
                for a in self.int_args_in(op.operands[1]):
                    if a not in out:
                        out.append(a)
                v = op.operands[0]
            elif op.name in _THROUGH:
                v = op.operands[0]
            else:
                break
        return out

    def note_layout(self, layout, shape):
        if layout is not None and len(shape) in (1, 2):
            self.layouts.setdefault(short_layout(layout), (layout, tuple(shape)))

    # ------------------------------------------------------------------------ the walk
    def run(self, ex: Explanation):
        for op in self.ops:
            name = op.name
            if name in _ACCESS_OPS:
                a = self.access(op)
                if a is None:
                    continue
                same = next((b for b in ex.accesses if asdict(b) | {"ops": 0} == asdict(a) | {"ops": 0}), None)
                if same is not None:
                    same.ops += 1
                else:
                    ex.accesses.append(a)
            elif name == "ttg.convert_layout":
                ex.conversions.append(self.conversion(op))
            elif name == "tt.reduce":
                r = self.reduction(op)
                if r is not None:
                    ex.reductions.append(r)
            if "allocation.offset" in op.attributes:
                ex.shared_buffers.append(self.buffer(op))
        ex.dots = self.dots()

    def access(self, op) -> Optional[Access]:
        from ..dialects import tt, ttg
        from ..lowering.utils import bit_width, memory_type

        kind = _ACCESS_OPS[op.name]
        line, text = self.where(op)
        loop = self.loop_of(op)
        if kind in ("tma_load", "tma_store", "descriptor_load", "descriptor_store"):
            dst = op.operands[2] if kind == "tma_load" else op.operands[-1]
            shape, elem = (ttg.memdesc_shape_and_element(dst.type) if kind.startswith("tma")
                           else (tt.shape_of(op.results[0].type if op.results else op.operands[1].type),
                                 tt.elem_of(op.results[0].type if op.results else op.operands[1].type)))
            name = self.arg_of(op.operands[0])
            return Access(kind, line, text, name[0] if name else None, str(elem), tuple(shape), "(TMA box)",
                          0, 0, 0, None, loop_line=loop)
        ptr = op.operands[0]
        mask = None
        if op.name == "tt.load" or op.name == "ttg.async_copy_global_to_local":
            seg = list(op.attributes["operandSegmentSizes"]) if "operandSegmentSizes" in op.attributes else []
            if op.name == "tt.load" and len(seg) >= 2 and seg[1]:
                mask = op.operands[1]
            if op.name != "tt.load" and len(seg) >= 3 and seg[2]:
                mask = op.operands[2]
        elif op.name == "tt.store":
            if len(op.operands) > 2:
                mask = op.operands[2]
        elif op.name == "tt.atomic_rmw" and len(op.operands) > 2:
            mask = op.operands[2]
        val_ty = op.results[0].type if op.results else (op.operands[1].type if op.name == "tt.store" else None)
        if op.name == "ttg.async_copy_global_to_local":
            elem = tt.pointee(tt.elem_of(ptr.type))
        else:
            elem = tt.elem_of(val_ty)
        bits = 8 if tt.is_fp8(elem) else bit_width(memory_type(elem))
        arg = self.arg_of(ptr)
        pname = arg[0] if arg else None
        if not tt.is_tensor(ptr.type):
            return Access(kind, line, text, pname, str(elem), (), "(scalar)", 1, 1, max(bits // 8, 1), None,
                          why_narrow=["a scalar access: one thread loads / stores one element"], loop_line=loop)
        from ..lowering.utils import vector_width

        shape = tuple(tt.shape_of(ptr.type))
        layout = ttg.encoding_of(ptr.type)
        self.note_layout(layout, shape)
        probe = _Probe(self.info, op)
        ll = probe.linear(ptr.type)
        order = list(layout.order)
        d = order[0]
        max_vec = max(1, 128 // bits)
        atomic = kind.startswith("atomic")
        vec = 1 if atomic else vector_width(probe, ptr, mask, bits)
        a = Access(kind, line, text, pname, str(elem), shape, short_layout(layout), vec, max_vec,
                   vec * bits // 8, None, loop_line=loop)
        # why not 128 bits
        from ..dialects import layouts as L

        per_thread = L._contig_regs(ll, d)
        pinfo = self.info.get(ptr)
        cont, div = pinfo.contiguity[d], pinfo.divisibility[d]
        ebytes = max(bits // 8, 1)
        if atomic:
            a.why_narrow.append("atomics are issued one element per instruction")
        elif vec < max_vec:
            a.why_narrow.extend(self._why_narrow(ptr, mask, arg, cont, div, ebytes, max_vec, per_thread, shape,
                                                 order, pinfo, ll.num_lanes * ll.num_warps))
        # coalescing: the addresses one warp touches in one instruction (the first vector of warp 0)
        a.warp_bytes, a.segments, a.sectors, a.coalesced, a.why_uncoalesced = self._coalescing(
            ll, d, vec, per_thread, cont, ebytes, pinfo, order, shape)
        return a

    def _why_narrow(self, ptr, mask, arg, cont, div, ebytes, max_vec, per_thread, shape, order, pinfo,
                    threads) -> list:
        d = order[0]
        why = []
        if div // ebytes < max_vec:
            if arg is not None and arg[1] < 16:
                why.append(f"alignment: {arg[0]} is not known to be 16-byte aligned (the JIT marks a pointer "
                           f"argument aligned when its data_ptr() % 16 == 0; a signature says so with :16); pass an "
                           f"aligned pointer or assert it with tl.multiple_of")
            else:
                odd = [n for n, dv in self.offsets_of(ptr) if dv < 16]
                who = (", ".join(odd) + (" is" if len(odd) == 1 else " are") + " not known to be a multiple of 16") \
                    if odd else "an offset added to it is not known to be a multiple of 16 elements"
                why.append(f"alignment: the address of {arg[0] if arg else 'the pointer'} is only known to be a "
                           f"multiple of {div} bytes ({who}); make it a multiple of 16 or add tl.multiple_of")
        if cont < max_vec and cont < shape[d]:
            why.append(f"contiguity: the addresses are consecutive in runs of only {cont} element(s) along dim {d}")
        other = [e for e in range(len(shape)) if e != d and pinfo.contiguity[e] > max(cont, 1)]
        if other:
            e = other[0]
            why.append(f"order: the layout walks dim {d} fastest (order={list(order)}) but the addresses are "
                       f"contiguous along dim {e} ({pinfo.contiguity[e]} elements)")
        if mask is not None and self.info.mask_alignment(mask, order) < max_vec:
            const = self.info.mask_alignment(mask, order)
            odd = [n for n, dv in self.int_args_in(mask) if dv < 16]
            who = f" ({', '.join(odd)} {'is' if len(odd) == 1 else 'are'} not known to be a multiple of 16)" \
                if odd else ""
            why.append(f"mask: the mask is constant over runs of only {const} element(s){who}")
        if per_thread < max_vec and not why:
            why.append(f"layout: a thread holds {per_thread} consecutive element(s) along dim {d}: the "
                       f"{'x'.join(map(str, shape))} tensor is spread over {threads} threads")
        return why

    def _coalescing(self, ll, d, vec, per_thread, cont, ebytes, pinfo, order, shape):
        """What one warp touches in one instruction (the first vector of every lane of warp 0): bytes, contiguous
        runs, 32-byte sectors (a run's sectors counted from its contiguity group's start, taken as aligned), and
        whether every sector it touches is fully used (coalesced), else why not."""
        rows: dict = {}
        for lane in range(ll.num_lanes):
            for r in range(vec):
                ix = ll.index(r, lane, 0)
                rows.setdefault(ix[:d] + ix[d + 1:], set()).add(ix[d])
        group = max(cont, 1)
        segments = sectors = total = 0
        for cols in rows.values():
            cs = sorted(cols)
            total += len(cs)
            prev = None
            for c in cs:
                if prev is None or c != prev + 1 or c % group == 0:
                    segments += 1
                prev = c
            sectors += len({(c // group, (c % group) * ebytes // 32) for c in cs})
        warp_bytes = total * ebytes
        coalesced = warp_bytes >= sectors * 32 or (sectors == 1 and len(rows) == 1 and group >= total)
        why = []
        if not coalesced:
            other = [e for e in range(len(shape)) if e != d and pinfo.contiguity[e] > group]
            if group == 1 and shape[d] > 1:
                why.append(f"the addresses along dim {d} are not known to be consecutive (contiguity 1): each lane's "
                           f"{ebytes}-byte element may sit in its own 32-byte sector")
            elif vec < per_thread:
                why.append(f"each thread holds {per_thread} consecutive elements but accesses them {vec} at a time, so "
                           f"one instruction touches every {per_thread // vec}th piece: {sectors} sectors of 32 bytes "
                           f"for {warp_bytes} bytes")
            elif other:
                why.append(f"the layout's order {list(order)} walks dim {d} fastest but the addresses are "
                           f"contiguous along dim {other[0]}")
            else:
                why.append(f"a warp covers {len(rows)} rows of {warp_bytes // max(len(rows), 1)} bytes along dim "
                           f"{d}: {sectors} sectors of 32 bytes for {warp_bytes} bytes")
        return warp_bytes, segments, sectors, coalesced, why

    def conversion(self, op) -> Conversion:
        from ..dialects import tt, ttg

        line, text = self.where(op)
        src_t, dst_t = op.operands[0].type, op.results[0].type
        src, dst = ttg.encoding_of(src_t), ttg.encoding_of(dst_t)
        shape = tuple(tt.shape_of(src_t))
        self.note_layout(src, shape)
        self.note_layout(dst, shape)
        size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
        if src == dst:
            kind = "none"
        elif size:
            kind = "shared memory"
        else:
            kind = "registers"
        feeds = []
        for use in op.results[0].uses:
            user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            feeds.append(f"{user.name} at line {_loc(user)[1]}")
        return Conversion(line, text, str(tt.elem_of(src_t)), shape, short_layout(src), short_layout(dst), kind,
                          size, self.loop_of(op), feeds)

    def reduction(self, op) -> Optional[Reduction]:
        from ..dialects import tt, ttg

        src_t = op.operands[0].type
        lay = ttg.encoding_of(src_t)
        if lay is None:
            return None
        shape = tuple(tt.shape_of(src_t))
        axis = int(op.attributes["axis"].value)
        ll = lay.linear(shape)
        self.note_layout(lay, shape)
        in_thread = 1 << sum(1 for b in ll.reg if b[axis] != 0)
        lanes = 1 << sum(1 for b in ll.lane if b[axis] != 0)
        warps = 1 << sum(1 for b in ll.warp if b[axis] != 0)
        crosses = "warps" if warps > 1 else "lanes" if lanes > 1 else "thread"
        size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
        line, text = self.where(op)
        return Reduction(line, text, axis, shape, str(tt.elem_of(src_t)), short_layout(lay), in_thread, lanes,
                         warps, crosses, size, self.loop_of(op))

    def buffer(self, op) -> SharedBuffer:
        from ..dialects import ttg

        line, _ = self.where(op)
        off = int(op.attributes["allocation.offset"].value)
        size = int(op.attributes["allocation.size"].value) if "allocation.size" in op.attributes else 0
        what = {"ttg.convert_layout": "layout conversion scratch", "tt.reduce": "cross-warp reduction scratch",
                "tt.scan": "cross-warp scan scratch", "tt.atomic_rmw": "scalar atomic result",
                "tt.atomic_cas": "scalar atomic result", "func.call": "callee's shared memory",
                "tt.make_tensor_descriptor": "TMA tensor map built on the device",
                "tt.histogram": "histogram bins", "tt.gather": "gather source"}.get(op.name, op.name)
        if op.name == "ttg.local_alloc" and op.results:
            shape, elem, lay = ttg.memdesc_layout(op.results[0].type)
            users = {(u.owner.operation if hasattr(u.owner, "operation") else u.owner).name
                     for u in op.results[0].uses}
            role = "pipeline stages" if "ttg.memdesc_subview" in users else \
                "dot operand" if users & {"ttg.warp_group_dot", "ttg.local_load"} else "buffer"
            what = f"{role}: {'x'.join(map(str, shape))} {elem} {short_layout(lay)}"
        elif op.name == "ttg.convert_layout":
            what += f" ({'x'.join(map(str, op.results[0].type.shape))} {op.results[0].type.element_type})"
        return SharedBuffer(op.name, line, off, size, what)

    def dots(self) -> list:
        from ..dialects import layouts as L, tt, ttg

        groups: dict = {}
        for op in self.ops:
            if op.name not in ("tt.dot", "ttg.warp_group_dot"):
                continue
            groups.setdefault((_loc(op), op.name), []).append(op)
        out = []
        for ((file, line), name), ops in groups.items():
            op = ops[0]
            a, b, c = op.operands[0], op.operands[1], op.operands[2]
            res = ttg.encoding_of(op.results[0].type)

            def shape_elem(v):
                if tt.is_tensor(v.type):
                    return tuple(tt.shape_of(v.type)), tt.elem_of(v.type), ttg.encoding_of(v.type)
                s, e, lay = ttg.memdesc_layout(v.type)
                return tuple(s), e, lay

            (sa, ea, la), (_, eb, lb) = shape_elem(a), shape_elem(b)
            M, N = tt.shape_of(op.results[0].type)[-2:]
            K = sum(shape_elem(o.operands[0])[0][-1] for o in ops) if len(ops) > 1 else sa[-1]
            ebits = {"f16": 16, "bf16": 16, "f32": 32, "i8": 8}.get(str(ea), 8)
            if isinstance(res, L.NvidiaMmaLayout) and res.version == 3:
                engine, ver = "wgmma v3 (warpgroup, asynchronous)", 3
                instr = f"wgmma.m64n{res.instr_shape[1]}k{256 // ebits}"
            elif isinstance(res, L.NvidiaMmaLayout):
                engine, ver = "mma v2 (mma.sync)", 2
                instr = f"mma.sync.m16n8k{256 // ebits}"
            else:
                engine, ver, instr = "fma (no tensor cores)", None, "fma"
            self.note_layout(res, (M, N))
            loop_line = self.loop_of(op)
            loop = self._loop_op(op)
            stages = ttg.module_int(self.module, ttg.NUM_STAGES, 1) or 1
            bufs = 0
            pipelined = False
            if loop is not None:
                from ..passes.ir_helpers import walk

                for inner in walk(loop):
                    if inner.name in ("ttg.async_copy_global_to_local", "ttg.async_tma_copy_global_to_local"):
                        pipelined = True
                        dst = inner.operands[1] if inner.name == "ttg.async_copy_global_to_local" \
                            else inner.operands[-3 if len(inner.operands) > 4 else -2]
                        d_op = dst.owner.operation if hasattr(dst.owner, "operation") else dst.owner
                        if getattr(d_op, "name", "") == "ttg.memdesc_subview":
                            stack = ttg.memdesc_shape_and_element(d_op.operands[0].type)[0]
                            bufs = max(bufs, int(stack[0]))
            is_async = any("isAsync" in o.attributes and str(o.attributes["isAsync"]) == "true" for o in ops)
            out.append(Dot(line, _source(file, line), engine, ver, instr, (int(M), int(N), int(K)),
                           f"{ea} x {eb} -> {tt.elem_of(c.type)}", short_layout(la), short_layout(lb),
                           short_layout(res), len(ops), loop_line, pipelined, stages, bufs, is_async))
        return out

    def _loop_op(self, op):
        p = op.parent
        while p is not None:
            p = p.operation if hasattr(p, "operation") else p
            if p.name in _LOOPS:
                return p
            if p.name == "func.func":
                return None
            p = p.parent
        return None


# ---------------------------------------------------------------------------------------------- resources

# per compute capability: max threads, max blocks, shared memory per SM, max shared per block (bytes)
_SM = {
    80: (2048, 32, 167936, 166912), 86: (1536, 16, 102400, 101376), 87: (1536, 16, 167936, 166912),
    89: (1536, 24, 102400, 101376), 90: (2048, 32, 233472, 232448), 100: (2048, 32, 233472, 232448),
    120: (1536, 24, 102400, 101376),
}
_REGS_PER_SM = 65536
_REG_UNIT = 256  # registers are allocated per warp in units of 256
_SMEM_UNIT = 128
_SMEM_RESERVED = 1024  # per block, sm_80+


def occupancy(arch: int, num_warps: int, n_regs: Optional[int], shared: int) -> dict:
    """Blocks per SM for a kernel of ``num_warps`` warps, ``n_regs`` registers per thread and ``shared`` bytes
    of shared memory, on compute capability ``arch`` (the CUDA occupancy calculator's rules): what each resource
    alone allows, the result, and which resources limit it."""
    key = max((a for a in _SM if a <= arch), default=80)
    max_threads, max_blocks, smem_sm, smem_block = _SM[key]
    max_warps = max_threads // 32
    limits = {"warps": max_warps // num_warps, "blocks": max_blocks}
    if n_regs:
        per_warp = -(-n_regs * 32 // _REG_UNIT) * _REG_UNIT
        limits["registers"] = (_REGS_PER_SM // per_warp) // num_warps
    if shared:
        per_block = -(-(shared + _SMEM_RESERVED) // _SMEM_UNIT) * _SMEM_UNIT
        limits["shared memory"] = smem_sm // per_block if shared <= smem_block else 0
    blocks = min(limits.values())
    limited = [k for k, v in limits.items() if v == blocks and k != "blocks"] or ["blocks"]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * num_warps, "max_warps_per_sm": max_warps,
            "occupancy": blocks * num_warps / max_warps, "limited_by": limited, "limits": limits,
            "max_shared_per_block": smem_block}


def _resources(md, target, ex) -> Resources:
    nw = int(md.get("num_warps", 4))
    r = Resources(nw, md.get("n_regs"), md.get("n_spills"), int(md.get("shared", 0) or 0))
    if target.backend == "cuda":
        occ = occupancy(int(target.arch), nw, r.n_regs, r.shared)
        r.blocks_per_sm, r.warps_per_sm = occ["blocks_per_sm"], occ["warps_per_sm"]
        r.max_warps_per_sm, r.occupancy = occ["max_warps_per_sm"], occ["occupancy"]
        r.limited_by, r.limits = occ["limited_by"], occ["limits"]
    return r


# ---------------------------------------------------------------------------------------------- warnings


def _warnings(ex: Explanation, walker) -> None:
    W = ex.warnings
    for a in ex.accesses:
        at = f"line {a.line}" if a.line else "an access"
        what = f"{a.op.split(' ')[0]} of {a.pointer}" if a.pointer else a.op
        narrow = bool(a.why_narrow) and not a.op.startswith("atomic") and a.layout != "(scalar)"
        follows = a.coalesced is False and narrow and a.vector_width < a.max_vector_width and \
            a.why_uncoalesced[0].startswith("each thread holds")
        if narrow:
            W.append(f"{at}: {what} is {'not vectorized' if a.vector_width == 1 else 'only partly vectorized'} "
                     f"({a.vector_width} x {a.dtype} = {a.bytes_per_access} bytes per thread, 16 possible): "
                     + "; ".join(a.why_narrow)
                     + (f" (and so not coalesced: one instruction of a warp touches {a.sectors} sectors for "
                        f"{a.warp_bytes} bytes)" if follows else ""))
        if a.coalesced is False and not follows:
            W.append(f"{at}: {what} is not coalesced: " + "; ".join(a.why_uncoalesced))
    for c in ex.conversions:
        if c.kind == "shared memory" and c.loop_line:
            hint = ""
            for a in ex.accesses:
                if a.op == "store" and f"tt.store at line {a.line}" in c.feeds and a.why_narrow:
                    hint = (f"; it feeds the store at line {a.line}, which is narrower than the load feeding it ("
                            + a.why_narrow[0].split(";")[0] + "): fix that and the conversion goes")
            W.append(f"line {c.line}: layout conversion inside the loop at line {c.loop_line} costs {c.shared_bytes} "
                     f"bytes of shared memory (a write, a barrier and a read) per iteration{hint}")
    for d in ex.dots:
        if d.mma_version is None:
            W.append(f"line {d.line}: tt.dot runs on FMA units, not tensor cores ({d.dtypes}, {d.shape[0]}x"
                     f"{d.shape[1]}x{d.shape[2]}): use fp16/bf16/tf32 operands and tiles of at least 16x16x16")
        if d.loop_line and not d.pipelined and d.num_stages > 1:
            why = [m for m in walker.passlog if "not pipelined" in m]
            W.append(f"line {d.line}: the loop at line {d.loop_line} around this dot was not software-pipelined"
                     + (": " + "; ".join(why) if why else ""))
    r = ex.resources
    if r is not None:
        if r.n_spills:
            W.append(f"ptxas spills {r.n_spills} bytes of registers to local memory: use smaller tiles, fewer "
                     "live values or more warps")
        if r.limits.get("shared memory") == 0:
            W.append(f"the kernel needs {r.shared} bytes of shared memory, more than one block may have on "
                     f"{ex.target}: the launch will fail (use smaller tiles or num_stages)")
        elif r.occupancy is not None and r.occupancy <= 0.25 and set(r.limited_by) & {"registers", "shared memory"}:
            W.append(f"occupancy {r.occupancy:.0%} ({r.warps_per_sm} of {r.max_warps_per_sm} warps per SM) is limited "
                     f"by {' and '.join(r.limited_by)}"
                     + ": " + ", ".join(([f"{r.n_regs} registers per thread"] if "registers" in r.limited_by else [])
                                        + ([f"{r.shared} bytes of shared memory per block"]
                                           if "shared memory" in r.limited_by else [])))


# ---------------------------------------------------------------------------------------------- pictures


def _picture_shape(layout, shape) -> tuple:
    """``(layout, shape, how)`` to draw: a blocked layout over at most one CTA tile (a smaller shape would show
    replication the tensor does not have); a long 1-D blocked layout folded into rows of one warp's elements (the
    same owners: lanes along the row, warps down); other layouts over at most 64 elements per dim."""
    from ..dialects.layouts import BlockedLayout

    if isinstance(layout, BlockedLayout):
        if len(shape) == 1:
            (s,), (t,), (w,) = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta
            width = s * t
            if shape[0] > 64 and shape[0] % width == 0:
                rows = min(shape[0] // width, w)
                return (BlockedLayout((1, s), (1, t), (w, 1), (1, 0)), (rows, width),
                        f"the first {rows * width} elements as rows of {width}")
        tile = layout.shape_per_cta_tile()
        return layout, tuple(min(int(a), int(b)) for a, b in zip(shape, tile)), ""
    return layout, tuple(min(int(a), 64) for a in shape), ""


def draw_pictures(ex: Explanation, directory) -> dict:
    """One PNG per distinct layout of the report's accesses, conversions, reductions and dots (1-D / 2-D), drawn by
    :func:`tritium.dialects.layouts.picture` (colour: warp, label: thread) over one CTA tile at most."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("explain --pictures needs matplotlib: pip install matplotlib")
    from ..dialects.layouts import picture

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for i, (name, (layout, shape)) in enumerate(getattr(ex, "_layouts", {}).items()):
        lay, pshape, how = _picture_shape(layout, shape)
        path = d / f"{ex.kernel}-layout{i}.png"
        picture(lay, pshape, str(path))
        ex.pictures[name] = str(path)
        if how:
            ex.picture_notes[name] = how
    return ex.pictures


# ---------------------------------------------------------------------------------------------- the text


def _fmt_line(item) -> str:
    """An item's heading: its line and source text, and the loop it is in."""
    head = f"line {item.line}: {item.source}" if item.line else "(no location)"
    return head + (f"   [in loop at line {item.loop_line}]" if item.loop_line else "")


def _section(p, title: str, items):
    """A blank line, ``title (count)``, then each item's heading (:func:`_fmt_line`) before the item is yielded
    for its details."""
    p("")
    p(f"{title} ({len(items)})")
    for item in items:
        p(f"  {_fmt_line(item)}")
        yield item


def render(ex: Explanation) -> str:
    out = []
    p = out.append
    opts = ", ".join(f"{k}={v}" for k, v in ex.options.items())
    p(f"kernel {ex.kernel} on {ex.target} ({opts})")
    if ex.signature:
        p("  signature: " + ", ".join(f"{k}: {v}" for k, v in ex.signature.items()))
    if ex.constexprs:
        p("  constexprs: " + ", ".join(f"{k}={v}" for k, v in ex.constexprs.items()))
    for n in ex.notes:
        p(f"  note: {n}")
    for a in _section(p, "memory accesses", ex.accesses):
        ptr = f" of {a.pointer}" if a.pointer else ""
        n = f" ({a.ops} ops{', before the loop' if not a.loop_line else ''})" if a.ops > 1 else ""
        p(f"    {a.op}{ptr}{n}: {'x'.join(map(str, a.shape)) or 'scalar'} {a.dtype}, layout {a.layout}")
        if a.layout == "(TMA box)":
            p("    one thread issues a TMA bulk copy of the whole box (no per-thread vectors)")
            continue
        best = "the maximum" if a.vector_width >= a.max_vector_width else \
            f"128 bits would be {a.max_vector_width} elements"
        p(f"    vector width {a.vector_width} ({a.vector_width} x {a.dtype} = {a.bytes_per_access * 8} bits per thread "
          f"per instruction; {best})")
        for w in a.why_narrow:
            p(f"      - {w}")
        if a.coalesced is not None:
            p(f"    coalesced: {'yes' if a.coalesced else 'NO'} (per instruction a warp touches {a.warp_bytes} bytes in "
              f"{a.segments} contiguous run{'s' if a.segments != 1 else ''}, {a.sectors} sector"
              f"{'s' if a.sectors != 1 else ''} of 32 bytes)")
            for w in a.why_uncoalesced:
                p(f"      - {w}")
    for c in _section(p, "layout conversions", ex.conversions):
        p(f"    {'x'.join(map(str, c.shape))} {c.dtype}: {c.src_layout}")
        p(f"      -> {c.dst_layout}")
        cost = f"through shared memory, {c.shared_bytes} bytes + a barrier" if c.kind == "shared memory" else \
            "register moves only" if c.kind == "registers" else "no-op"
        p(f"    {cost}" + (f"; feeds {', '.join(c.feeds)}" if c.feeds else ""))
    for r in _section(p, "reductions", ex.reductions):
        p(f"    axis {r.axis} of {'x'.join(map(str, r.shape))} {r.dtype}, layout {r.layout}")
        steps = [f"{r.in_thread} elements in each thread"]
        if r.lanes > 1:
            steps.append(f"{r.lanes.bit_length() - 1} shuffle rounds across {r.lanes} lanes")
        if r.warps > 1:
            steps.append(f"{r.warps} warps through {r.shared_bytes} bytes of shared memory + a barrier")
        p(f"    crosses {r.crosses}: " + ", then ".join(steps))
    for d in _section(p, "dots", ex.dots):
        p(f"    {d.shape[0]}x{d.shape[1]}x{d.shape[2]} {d.dtypes} on {d.engine}: {d.instruction}"
          + (f", split into {d.ops} K-slices" if d.ops > 1 else "") + (", async" if d.is_async else ""))
        p(f"    A {d.a_layout}")
        p(f"    B {d.b_layout}")
        p(f"    C {d.acc_layout}")
        if d.loop_line:
            p("    pipelined: " + (f"yes, {d.buffers} shared-memory stages (num_stages={d.num_stages})"
                                    if d.pipelined else f"no (num_stages={d.num_stages})"))
    p("")
    p(f"shared memory: {ex.shared_total} bytes allocated")
    for b in ex.shared_buffers:
        p(f"  [{b.offset:>6}, {b.offset + b.size:>6})  {b.size:>6} B  line {b.line}: {b.op}: {b.what}")
    r = ex.resources
    if r is not None:
        p("")
        regs = "unknown (no ptxas)" if r.n_regs is None else str(r.n_regs)
        p(f"resources: {regs} registers per thread, {r.n_spills if r.n_spills is not None else '?'} bytes spilled, "
          f"{r.shared} bytes of shared memory, {r.num_warps} warps")
        if r.blocks_per_sm is not None:
            lim = ", ".join(f"{k} {v}" for k, v in r.limits.items())
            p(f"  occupancy: {r.blocks_per_sm} blocks ({r.warps_per_sm} of {r.max_warps_per_sm} warps) per SM = "
              f"{r.occupancy:.0%}, limited by {' and '.join(r.limited_by)} (blocks per SM allowed by: {lim})")
    if ex.pictures:
        p("")
        p("pictures:")
        for lay, path in ex.pictures.items():
            how = f" ({ex.picture_notes[lay]})" if lay in ex.picture_notes else ""
            p(f"  {path}: {lay}{how}")
    p("")
    p(f"warnings ({len(ex.warnings)})" + (":" if ex.warnings else ": none"))
    for w in ex.warnings:
        p(f"  - {w}")
    return "\n".join(out) + "\n"


__all__ = ["Access", "Conversion", "Dot", "Explanation", "Reduction", "Resources", "SharedBuffer", "explain",
           "explain_launch", "occupancy", "render", "short_layout", "draw_pictures"]
