"""Rewrite block pointers into tensors of pointers and masks (Triton's RewriteTensorPointer).

A block pointer (``tt.make_tensor_ptr``, ``!tt.ptr<tensor<BxT>>``) is the tuple (base, shape[r] : i64,
strides[r] : i64, offsets[r] : i64).  This pass tracks that tuple per SSA value and

* ``tt.make_tensor_ptr`` -> its operands, the i32 offsets sign-extended to i64 (erased once unused);
* ``tt.advance`` -> ``offsets[d] + extsi(delta[d])`` (``arith.addi`` in i64: a loop then carries i64 offsets, as
  Triton's rewrite does, and the address of a load in the loop is ``base + (offset + range) * stride`` in i64
  throughout, which LLVM strength-reduces to one add per iteration; an i32 offset sign-extended in the loop is not);
* ``tt.load`` / ``tt.store`` through a block pointer -> the tensor of pointers
  ``base + sum_d (offsets[d] + range(B_d)) * strides[d]`` (i64 offsets, expanded and broadcast to the block)
  and, for the dims named by ``boundaryCheck``, the mask ``0 <= offsets[d] + range(B_d) < shape[d]``; a
  masked load's ``other`` is zero, or NaN for ``padding = 2`` (``padding_option="nan"``); a block whose leading
  dims are 1 (``[1, R, C]``, a batch of matrices' tile) is accessed as its 2-D tile: the leading offsets move the
  base, their bounds are one scalar condition in the mask, the value is reshaped to the block's shape (combine
  folds that into the kernel's own ``tl.reshape`` to 2-D, so a dot or an epilogue sees a 2-D tile);
* ``scf.for`` iter args / results, ``scf.if`` results and ``scf.yield`` operands that are block pointers are
  expanded into the tuple's 1 + 3r values.

Other ops taking a block pointer (``scf.while``, calls, ...) raise a :class:`RewriteError` naming the op and
its location.  Tensor descriptors (``tt.make_tensor_descriptor``) are rewritten into block pointers first
(:mod:`.rewrite_tensor_descriptor`), so they end as tensors of pointers too.  Only the GPU backends run this
pass (the interpreter handles block pointers and descriptors natively).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ...dialects import tt
from ...errors import RewriteError  # noqa: F401
from .. import ir_helpers as u
from .rewrite_tensor_descriptor import rewrite_tensor_descriptor


@dataclass
class BP:
    base: object
    shape: list
    strides: list
    offsets: list

    def flat(self) -> list:
        return [self.base, *self.shape, *self.strides, *self.offsets]

    @staticmethod
    def from_flat(vals, r):
        vals = list(vals)
        return BP(vals[0], vals[1:1 + r], vals[1 + r:1 + 2 * r], vals[1 + 2 * r:1 + 3 * r])


def is_block_ptr(ty) -> bool:
    return tt.is_ptr(ty) and tt.is_tensor(tt.pointee(ty))


def _block_of(ty):
    """(block shape, element type) of ``!tt.ptr<tensor<...>>``."""
    t = ir.RankedTensorType(tt.pointee(ty))
    return tuple(t.shape), t.element_type


def _flat_types(ty) -> list:
    shape, elem = _block_of(ty)
    r = len(shape)
    i64 = ir.IntegerType.get_signless(64)
    return [tt.ptr_type(elem)] + [i64] * r + [i64] * r + [i64] * r


def _i64(rw, v, op, loc):
    """``v`` (an i32 offset, or already i64) as i64."""
    i64 = ir.IntegerType.get_signless(64)
    return v if v.type == i64 else rw.v("arith.extsi", [v], i64, op, loc)


class _Rewriter:
    def __init__(self):
        self.bp: dict = {}
        self.dead: list = []
        self.dead_regions: list = []
        self.count = 0

    def get(self, v, op) -> BP:
        try:
            return self.bp[v]
        except KeyError:
            raise RewriteError(f"'{op.name}' at {tt.loc_str(op)}: a block pointer whose origin is unknown "
                               "(a function argument or an unsupported op)") from None

    # ------------------------------------------------------------------ emitting helpers
    def mk(self, name, operands, result_types, attrs=None, before=None, loc=None):
        if name in ("scf.for", "scf.if"):
            with ir.InsertionPoint(u.as_op(before)):
                return u.as_op(ir.Operation.create(name, results=list(result_types), operands=list(operands),
                                                   attributes=dict(attrs or {}), loc=loc,
                                                   regions=1 if name == "scf.for" else 2))
        return u.create_op(name, operands, result_types, attrs, before=before, loc=loc)

    def v(self, name, operands, ty, before, loc, attrs=None):
        return self.mk(name, operands, [ty], attrs, before, loc).results[0]

    def addresses(self, op, bp: BP, shape, elem, check):
        """(tensor of pointers, mask or None) for a load/store of a ``shape`` block of ``elem`` through ``bp``."""
        r = len(shape)
        loc = op.location
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        i1 = ir.IntegerType.get_signless(1)
        full_i64 = ir.RankedTensorType.get(list(shape), i64)
        full_i1 = ir.RankedTensorType.get(list(shape), i1)
        total = None
        mask = None

        def expand(v, d, elem_ty):
            cur = [shape[d]]
            for j in range(r):
                if j == d:
                    continue
                cur = cur[:j] + [1] + cur[j:]
                v = self.v("tt.expand_dims", [v], ir.RankedTensorType.get(cur, elem_ty), op, loc,
                           {"axis": ir.IntegerAttr.get(i32, j)})
            if tuple(cur) != shape:
                v = self.v("tt.broadcast", [v], ir.RankedTensorType.get(list(shape), elem_ty), op, loc)
            return v

        for d in range(r):
            n = shape[d]
            t32 = ir.RankedTensorType.get([n], i32)
            t64 = ir.RankedTensorType.get([n], i64)
            rng = self.v("tt.make_range", [], t32, op, loc,
                         {"start": ir.IntegerAttr.get(i32, 0), "end": ir.IntegerAttr.get(i32, n)})
            off = self.v("tt.splat", [bp.offsets[d]], t64, op, loc)
            idx64 = self.v("arith.addi", [off, self.v("arith.extsi", [rng], t64, op, loc)], t64, op, loc)
            stride = self.v("tt.splat", [bp.strides[d]], t64, op, loc)
            term = self.v("arith.muli", [idx64, stride], t64, op, loc)
            term = expand(term, d, i64)
            total = term if total is None else self.v("arith.addi", [total, term], full_i64, op, loc)
            if d in check:
                t1 = ir.RankedTensorType.get([n], i1)
                zero = u.constant(ir.IntegerAttr.get(i64, 0), t64, loc=loc, before=op)
                lim = self.v("tt.splat", [bp.shape[d]], t64, op, loc)
                ge = self.v("arith.cmpi", [idx64, zero], t1, op, loc,
                            {"predicate": ir.IntegerAttr.get(i64, 5)})  # sge
                lt = self.v("arith.cmpi", [idx64, lim], t1, op, loc,
                            {"predicate": ir.IntegerAttr.get(i64, 2)})  # slt
                m = expand(self.v("arith.andi", [ge, lt], t1, op, loc), d, i1)
                mask = m if mask is None else self.v("arith.andi", [mask, m], full_i1, op, loc)
        pty = ir.RankedTensorType.get(list(shape), tt.ptr_type(elem))
        base = self.v("tt.splat", [bp.base], pty, op, loc)
        ptrs = self.v("tt.addptr", [base, total], pty, op, loc)
        return ptrs, mask

    # ------------------------------------------------------------------ ops
    def block(self, block) -> None:
        for op in list(block.operations):
            self.op(u.as_op(op))

    def op(self, op) -> None:
        name = op.name
        if name == "tt.make_tensor_ptr":
            g = u.operand_groups(op)
            offs = [_i64(self, o, op, op.location) for o in g["offsets"]]
            self.bp[op.results[0]] = BP(g["base"][0], list(g["shape"]), list(g["strides"]), offs)
            self.dead.append(op)
        elif name == "tt.advance":
            src = self.get(op.operands[0], op)
            offs = []
            for o, dlt in zip(src.offsets, list(op.operands)[1:]):
                offs.append(self.v("arith.addi", [o, _i64(self, dlt, op, op.location)], o.type, op, op.location))
            self.bp[op.results[0]] = BP(src.base, src.shape, src.strides, offs)
            self.dead.append(op)
        elif name in ("tt.load", "tt.store") and is_block_ptr(op.operands[0].type):
            self.load_store(op)
        elif name == "scf.for" and self._touches(op):
            self.scf_for(op)
        elif name == "scf.if" and any(is_block_ptr(r.type) for r in op.results):
            self.scf_if(op)
        elif name == "scf.yield" and any(is_block_ptr(x.type) for x in op.operands):
            vals = []
            for x in op.operands:
                vals.extend(self.get(x, op).flat() if is_block_ptr(x.type) else [x])
            self.mk("scf.yield", vals, [], before=op, loc=op.location)
            op.erase()
        else:
            if any(is_block_ptr(x.type) for x in op.operands) or any(is_block_ptr(x.type) for x in op.results):
                raise RewriteError(f"'{name}' at {tt.loc_str(op)} uses a block pointer, which the rewrite of block "
                                   "pointers (tt.make_tensor_ptr) into tensors of pointers does not support")
            for reg in op.regions:
                for blk in reg.blocks:
                    self.block(blk)

    def _touches(self, op) -> bool:
        return any(is_block_ptr(x.type) for x in op.operands) or any(is_block_ptr(x.type) for x in op.results)

    def leading_units(self, op, bp: BP, shape, check):
        """A block whose leading dims are 1 (``[1, R, C]``: a 3-D descriptor's tile) is accessed as its 2-D tile: the
        leading dims' offsets times their strides move the base (scalars), their bounds checks become one scalar
        condition.  Returns (the tile's BP, its shape, its checked dims, the condition or None); the block itself
        when it has no such dims."""
        lead = len(shape) - len(tt.squeezed_shape(shape))
        if not lead:
            return bp, shape, check, None
        loc = op.location
        i64 = ir.IntegerType.get_signless(64)
        i1 = ir.IntegerType.get_signless(1)
        base, ok = bp.base, None
        for d in range(lead):
            off = bp.offsets[d]
            base = self.v("tt.addptr", [base, self.v("arith.muli", [off, bp.strides[d]], i64, op, loc)], base.type,
                          op, loc)
            if d in check:
                zero = u.constant(ir.IntegerAttr.get(i64, 0), i64, loc=loc, before=op)
                ge = self.v("arith.cmpi", [off, zero], i1, op, loc, {"predicate": ir.IntegerAttr.get(i64, 5)})
                lt = self.v("arith.cmpi", [off, bp.shape[d]], i1, op, loc, {"predicate": ir.IntegerAttr.get(i64, 2)})
                c = self.v("arith.andi", [ge, lt], i1, op, loc)
                ok = c if ok is None else self.v("arith.andi", [ok, c], i1, op, loc)
        tile = BP(base, bp.shape[lead:], bp.strides[lead:], bp.offsets[lead:])
        return tile, shape[lead:], {d - lead for d in check if d >= lead}, ok

    def load_store(self, op):
        self.count += 1
        ptr = op.operands[0]
        bp = self.get(ptr, op)
        check = set(u.attr_int(x) if not isinstance(x, int) else x for x in op.attributes["boundaryCheck"]) \
            if "boundaryCheck" in op.attributes else set()
        shape, elem = _block_of(ptr.type)
        bp, tile, check, ok = self.leading_units(op, bp, shape, check)
        ptrs, mask = self.addresses(op, bp, tile, elem, check)
        loc = op.location
        if ok is not None:  # the leading dims' bounds: the whole tile or nothing
            ok = self.v("tt.splat", [ok], ir.RankedTensorType.get(list(tile), ir.IntegerType.get_signless(1)), op,
                        loc)
            mask = ok if mask is None else self.v("arith.andi", [mask, ok], ok.type, op, loc)
        tile_ty = ir.RankedTensorType.get(list(tile), elem)
        attrs = {k: op.attributes[k] for k in ("cache", "evict", "isVolatile") if k in op.attributes}
        if op.name == "tt.load":
            full_ty = op.results[0].type
            res_ty = tile_ty
            operands = [ptrs]
            other = None
            if mask is not None:
                operands.append(mask)
                elem = ir.RankedTensorType(res_ty).element_type
                pad = u.attr_int(op.attributes["padding"]) if "padding" in op.attributes else 1
                if isinstance(elem, ir.FloatType):
                    val = float("nan") if pad == 2 else 0.0
                    other = u.constant(ir.FloatAttr.get(elem, val), res_ty, loc=loc, before=op)
                else:
                    other = u.constant(ir.IntegerAttr.get(elem, 0), res_ty, loc=loc, before=op)
                operands.append(other)
            attrs["operandSegmentSizes"] = u.segment_sizes(1, int(mask is not None), int(other is not None))
            value = self.mk("tt.load", operands, [res_ty], attrs, op, loc).results[0]
            if res_ty != full_ty:
                value = self.v("tt.reshape", [value], full_ty, op, loc)
            op.results[0].replace_all_uses_with(value)
        else:
            val = op.operands[1]
            if val.type != tile_ty:
                val = self.v("tt.reshape", [val], tile_ty, op, loc)
            operands = [ptrs, val] + ([mask] if mask is not None else [])
            attrs["operandSegmentSizes"] = u.segment_sizes(1, 1, int(mask is not None))
            self.mk("tt.store", operands, [], attrs, op, loc)
        op.erase()

    def _expand_values(self, values, op):
        out = []
        for x in values:
            out.extend(self.get(x, op).flat() if is_block_ptr(x.type) else [x])
        return out

    def _expand_types(self, types):
        out = []
        for t in types:
            out.extend(_flat_types(t) if is_block_ptr(t) else [t])
        return out

    def _map_results(self, old_values, new_values):
        pos = 0
        new_values = list(new_values)
        for v in old_values:
            if is_block_ptr(v.type):
                n = len(_flat_types(v.type))
                self.bp[v] = BP.from_flat(new_values[pos:pos + n], len(_block_of(v.type)[0]))
                pos += n
            else:
                v.replace_all_uses_with(new_values[pos])
                pos += 1

    def scf_for(self, op):
        operands = list(op.operands)
        lb, ub, step, inits = operands[0], operands[1], operands[2], operands[3:]
        new_inits = self._expand_values(inits, op)
        res_types = self._expand_types([r.type for r in op.results])
        new = self.mk("scf.for", [lb, ub, step] + new_inits, res_types, u.copy_attributes(op), op, op.location)
        old_blk = op.regions[0].blocks[0]
        arg_types = [old_blk.arguments[0].type] + res_types
        new_blk = ir.Block.create_at_start(new.regions[0], arg_types,
                                           [old_blk.arguments[0].location] * len(arg_types))
        old_blk.arguments[0].replace_all_uses_with(new_blk.arguments[0])
        self._map_results(list(old_blk.arguments)[1:], list(new_blk.arguments)[1:])
        for inner in list(old_blk.operations):
            inner = u.as_op(inner)
            inner.detach_from_parent()
            ir.InsertionPoint(new_blk).insert(inner)
        self._map_results(list(op.results), list(new.results))
        self.block(new_blk)
        self.dead_regions.append(op)

    def scf_if(self, op):
        res_types = self._expand_types([r.type for r in op.results])
        new = self.mk("scf.if", [op.operands[0]], res_types, u.copy_attributes(op), op, op.location)
        for i in range(2):
            blocks = list(op.regions[i].blocks)
            if not blocks:
                continue
            nb = ir.Block.create_at_start(new.regions[i], [])
            for inner in list(blocks[0].operations):
                inner = u.as_op(inner)
                inner.detach_from_parent()
                ir.InsertionPoint(nb).insert(inner)
            self.block(nb)
        self._map_results(list(op.results), list(new.results))
        self.dead_regions.append(op)


@u.in_context
def rewrite_tensor_pointer(root) -> int:
    """Rewrite every tensor descriptor and block pointer under ``root`` (a module or function); returns the
    number of block-pointer loads / stores rewritten (descriptor ones included)."""
    rewrite_tensor_descriptor(root)
    rw = _Rewriter()
    top = u.as_op(root)
    with ir.Location.unknown():
        for reg in top.regions:
            for blk in reg.blocks:
                rw.block(blk)
    # erase the replaced ops once unused (the old loops' block arguments may be used by dead advances)
    pending = list(reversed(rw.dead_regions)) + list(reversed(rw.dead))
    while pending:
        left = []
        for op in pending:
            used = any(u.has_uses(r) for r in op.results)
            for reg in op.regions:
                for blk in reg.blocks:
                    used = used or any(u.has_uses(a) for a in blk.arguments)
            if used:
                left.append(op)
            else:
                op.erase()
        if len(left) == len(pending):
            op = left[0]
            raise RewriteError(f"'{op.name}' at {tt.loc_str(op)}: a block pointer is still used after the rewrite")
        pending = left
    return rw.count


def rewrite_tensor_pointer_pass(op, pass_=None) -> None:
    """``PassManager.add`` entry point: a backend's TTIR pass, first in its TTIR pipeline (the cuda backend)."""
    rewrite_tensor_pointer(op)
