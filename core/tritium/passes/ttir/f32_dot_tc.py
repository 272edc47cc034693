"""fp32 dots on bf16 tensor cores: ``input_precision="bf16x3"`` / ``"bf16x6"`` (Triton's ``F32DotTC``).

A ``tt.dot`` of fp32 operands and an fp32 accumulator asking for ``bf16x3`` or ``bf16x6`` becomes several dots of
bf16 operands accumulated in fp32, which the cuda backend runs on tensor cores (``mma.sync`` / ``wgmma`` of
bf16): each operand ``x`` is split into bf16 parts ``hi = bf16(x)``, ``mid = bf16(x - hi)``, ``lo = bf16(x - hi -
mid)``, and the products are summed from the smallest to the largest::

    bf16x3:  acc = lo(a)*hi(b)  + hi(a)*lo(b)  + hi(a)*hi(b) + c                  (about 16 bits of mantissa)
    bf16x6:  acc = lo*hi + hi*lo + mid*mid + mid*hi + hi*mid + hi*hi + c           (about fp32's 24 bits)

(``lo`` is the bf16 of the whole remainder ``x - hi`` for bf16x3, of ``x - hi - mid`` for bf16x6.)  A part of a
non-finite element is 0 below its ``hi`` (``inf - inf`` would be NaN), so infinities and NaNs reach the result
through the ``hi * hi`` product alone, as in an fp32 dot.  Other dots are left alone.  The interpreter computes
these dots in full fp32 (no pass runs there); the hip backend's MFMA computes fp32 dots exactly.
"""
from __future__ import annotations

from mlir import ir

from tritium.dialects import tt
from tritium.dialects.enums import InputPrecision

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

DOT = "tt.dot"
SPLITS = {int(InputPrecision.BF16x3): 2, int(InputPrecision.BF16x6): 3}


def _like(ty, elem):
    """``ty``'s shape (and encoding) with element type ``elem``."""
    t = ir.RankedTensorType(ty)
    return ir.RankedTensorType.get(list(t.shape), elem, t.encoding)


def _op(name, ty, *operands, attrs=None):
    return ir.Operation.create(name, results=[ty], operands=list(operands), attributes=attrs or {}).results[0]


def _parts(x, n: int) -> list:
    """``n`` bf16 tensors whose fp32 sum is ``x`` to bf16's precision times ``n``; largest first."""
    f32_ty = x.type
    bf_ty = _like(f32_ty, ir.BF16Type.get())
    i1_ty = _like(f32_ty, ir.IntegerType.get_signless(1))
    zero = _op("arith.constant", f32_ty, attrs={"value": ir.DenseElementsAttr.get_splat(
        f32_ty, ir.FloatAttr.get(ir.F32Type.get(), 0.0))})
    # finite(x) <=> x - x == 0 (NaN for inf and NaN)
    finite = _op("arith.cmpf", i1_ty, _op("arith.subf", f32_ty, x, x), zero,
                 attrs={"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)})  # oeq
    parts, rest = [], x
    for i in range(n):
        part = _op("arith.truncf", bf_ty, rest)
        parts.append(part)
        if i + 1 < n:
            rest = _op("arith.subf", f32_ty, rest, _op("arith.extf", f32_ty, part))
            rest = _op("arith.select", f32_ty, finite, rest, zero)
    return parts


def _rewrite(op, splits: int) -> None:
    a, b, c = op.operands[0], op.operands[1], op.operands[2]
    attrs = {k: op.attributes[k] for k in op.attributes if k not in ("inputPrecision",)}
    attrs["inputPrecision"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(InputPrecision.IEEE))
    with op.location, ir.InsertionPoint(op):
        pa, pb = _parts(a, splits), _parts(b, splits)
        if splits == 2:
            terms = [(1, 0), (0, 1), (0, 0)]
        else:
            terms = [(2, 0), (0, 2), (1, 1), (1, 0), (0, 1), (0, 0)]
        acc = c
        for i, j in terms:
            acc = _op(DOT, c.type, pa[i], pb[j], acc, attrs=attrs)
    op.results[0].replace_all_uses_with(acc)
    op.erase()


def f32_dot_tc(root) -> int:
    """Rewrite the bf16x3 / bf16x6 fp32 dots under ``root``; returns how many."""
    n = 0
    for op in [o for o in u.walk(root) if o.name == DOT]:
        prec = tt.decode_attributes(op).get("inputPrecision")
        splits = SPLITS.get(int(prec)) if prec is not None else None
        if splits is None:
            continue
        if not all(str(tt.elem_of(v.type)) == "f32" for v in (op.operands[0], op.operands[1], op.results[0])):
            continue
        _rewrite(op, splits)
        n += 1
    return n


f32_dot_tc_pass = pass_entry("tritium-f32-dot-tc", f32_dot_tc)
