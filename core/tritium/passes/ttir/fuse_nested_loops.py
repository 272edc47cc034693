"""Fuse a loop nest into one loop: ``tl.range(..., flatten=True)`` (the ``tt.flatten`` attribute), as Triton's
FuseNestedLoops does before software pipelining.

An outer ``scf.for`` marked ``tt.flatten`` whose body holds exactly one ``scf.for`` at its top level, with that
inner loop's bounds and step defined outside the outer loop::

    for i in range(lbi, ubi, si):            # carries O
        P(i, O)                              # the prologue: ops before the inner loop
        R = for j in range(lbj, ubj, sj):    # carries I, initialised from P
            B(i, j, P, I)
        E(i, O, P, R)                        # the epilogue; the outer loop yields Y(O, P, R, E)

becomes one loop of ``len_i * len_j`` trips that carries O, the inner loop's values I and the prologue values
that later ops read and that must run under a branch (Pv)::

    for t in range(0, len_i * len_j):
        i, jj = lbi + (t // len_j) * si, t % len_j
        P_pure(i, O)                          # pure prologue ops, on every trip
        Pv = P_rest(i, O) if jj == 0 else Pv  # the others (stores, loads, ...) once per outer trip
        I = select(jj == 0, inits, I)         # (from the branch when an initial value comes from P_rest)
        I = B(i, lbj + jj * sj, P, I)
        O = Y(O, P, I, E(i, O, P, I)) if jj == len_j - 1 else O

The body B is then at the fused loop's top level, so the pipeliner can prefetch the next outer iteration's first
loads during the current one's last (a persistent kernel's tile loop over a K loop).  An empty inner loop
(``len_j == 0``) would skip the prologue and epilogue, so unless ``len_j`` is a compile-time constant above 0 the
nest is versioned when its inner body loads: ``if len_j > 0`` the fused loop, else the original nest (Triton's
speculation, which keeps the loads at the top level); an inner loop without loads instead runs ``max(len_j, 1)``
trips per outer one with its body under ``if jj < len_j``.  Inner bounds computed in the outer loop (``for j in
range(i)``) by pure ops from the outer index and outside values: a loop of their own first adds up each outer
trip's ``max(len_j, 1)``, as Triton's; the fused loop then carries ``i`` and ``jj`` (no division) and guards the
body.  Nests of another shape (no inner loop or several, bounds read from memory or from carried values) are left
as they are, logged with ``TRITIUM_LOG``, and so are nests
whose inner loop has a dot: fused, a persistent matmul measured slower than its nest on an H200 (its tile
coordinates are recomputed on every K step; bench/RESULTS.md).  The fused loop keeps the outer
loop's attributes but ``tt.flatten`` (and takes the inner loop's where the outer has none).  Runs on TTIR (the
interpreter, before its NumPy program) and on TTGIR (before the pipeliner): every type it makes is one already in
the nest.
"""
from __future__ import annotations

import logging

from mlir import ir

from tritium.passes.pass_manager import pass_entry
from .. import ir_helpers as u

log = logging.getLogger(__name__)

ATTR = "tt.flatten"


def _defined_inside(op) -> set:
    """Every value defined within ``op``'s regions (results of nested ops, block arguments)."""
    vals = set()
    for region in op.regions:
        for block in region.blocks:
            vals.update(block.arguments)
            for o in block.operations:
                for n in [u.as_op(o)] + u.walk(o):
                    vals.update(n.results)
                    for r in n.regions:
                        for b in r.blocks:
                            vals.update(b.arguments)
    return vals


def _used_values(ops) -> set:
    """The operands of ``ops`` and of every op nested in them."""
    used = set()
    for op in ops:
        for n in [u.as_op(op)] + u.walk(op):
            used.update(n.operands)
    return used


def _create(name, operands, result_types, attrs=None, regions=0):
    return ir.Operation.create(name, results=list(result_types), operands=list(operands), attributes=attrs or {},
                               regions=regions)


def _arith(name, a, b, attrs=None):
    return _create(name, [a, b], [a.type], attrs).results[0]


def _cmp(pred: int, a, b):
    i1 = ir.IntegerType.get_signless(1)
    return _create("arith.cmpi", [a, b], [i1], {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                                 pred)}).results[0]


def _const(ty, value):
    return _create("arith.constant", [], [ty], {"value": ir.IntegerAttr.get(ty, value)}).results[0]


def _cast_int(v, ty):
    w_from, w_to = ir.IntegerType(v.type).width, ir.IntegerType(ty).width
    if w_from == w_to:
        return v
    return _create("arith.extsi" if w_to > w_from else "arith.trunci", [v], [ty]).results[0]


def _trips(lb, ub, step, ty):
    """``max(0, ceil((ub - lb) / step))`` in ``ty`` (the step of an scf.for is positive)."""
    lb, ub, step = _cast_int(lb, ty), _cast_int(ub, ty), _cast_int(step, ty)
    span = _arith("arith.subi", ub, lb)
    n = _arith("arith.divsi", _arith("arith.subi", _arith("arith.addi", span, step), _const(ty, 1)), step)
    return _arith("arith.maxsi", n, _const(ty, 0))


def _const_int(v):
    a = u.constant_scalar(v)
    return u.attr_int(a) if a is not None else None


def _yield(block, values, loc):
    with ir.InsertionPoint(block), loc:
        _create("scf.yield", values, [])


def _dead_copy(value, fresh, jj):
    """What the last inner trip hands on for an inner value the next trip resets to ``fresh``.  For a float
    accumulator reset to zeros: zeros made at the end of the branch from a value no folding sees through
    (``sitofp(jj) - sitofp(jj)``, which LLVM folds to 0 only after the MLIR passes), splat -- a constant would be
    hoisted and the branch turned into a select after it, which reads the accumulator once the epilogue is done and
    so keeps its registers live through the epilogue; this way they are free once the epilogue has read them.
    Anything else: ``fresh``."""
    ty = value.type
    if not (isinstance(ty, ir.RankedTensorType) and isinstance(ty.element_type, (ir.F32Type, ir.F16Type,
                                                                                 ir.BF16Type)) and
            u.is_zero(fresh, any_sign=True)):
        return fresh
    f = _create("arith.sitofp", [jj], [ty.element_type]).results[0]
    z = _create("arith.subf", [f, f], [ty.element_type]).results[0]
    return _create("tt.splat", [z], [ty]).results[0]


def _poison(ty):
    return _create("ub.poison", [], [ty]).results[0]


_EQ, _SLT, _SGT = 0, 2, 4
_DOTS = frozenset({"tt.dot", "tt.dot_scaled", "ttg.warp_group_dot"})
_LOADS = frozenset({"tt.load", "tt.descriptor_load", "tt.descriptor_gather", "ttg.async_copy_global_to_local"})


def _bound_slice(prologue, bounds, body, inside):
    """The prologue ops that compute ``bounds`` (inner-loop bounds defined in the outer loop), in order, when they
    are pure and read only the outer index, values from outside and each other (not the outer loop's carried
    values: the trip count is added up before the loop); else None."""
    needed, picked = set(bounds), []
    for op in reversed(prologue):
        if not any(r in needed for r in op.results):
            continue
        if not u.is_pure(op):
            return None
        picked.append(op)
        needed.update(op.operands)
    carried = set(list(body.arguments)[1:])
    ours = {r for op in picked for r in op.results} | {body.arguments[0]}
    for v in needed:
        if v in carried or (v in inside and v not in ours):
            return None
    return picked[::-1]


def _count_trips(outer, body, bound_ops, bounds, wide, loc):
    """``sum(max(1, trips of the inner loop)) over the outer loop``: an ``scf.for`` of its own before the nest."""
    lbi, ubi, si = outer.operands[0], outer.operands[1], outer.operands[2]
    cnt = _create("scf.for", [lbi, ubi, si, _const(wide, 0)], [wide], regions=1)
    cb = cnt.regions[0].blocks.append(lbi.type, wide)
    mc = {body.arguments[0]: cb.arguments[0]}
    u.clone_ops(bound_ops, mc, ir.InsertionPoint(cb))
    with ir.InsertionPoint(cb), loc:
        lbj, ubj, sj = (mc.get(v, v) for v in bounds)
        n = _arith("arith.maxsi", _trips(lbj, ubj, sj, wide), _const(wide, 1))
        _create("scf.yield", [_arith("arith.addi", cb.arguments[1], n)], [])
    return cnt.results[0]


def _fuse(outer) -> bool:
    body = outer.regions[0].blocks[0]
    ops = [u.as_op(o) for o in body.operations]
    inner_at = [k for k, o in enumerate(ops) if o.name == "scf.for"]
    if len(inner_at) != 1:
        log.debug("loop at %s: tt.flatten ignored, its body has %d loops at its top level (one is fused)",
                  outer.location, len(inner_at))
        return False
    k = inner_at[0]
    inner = ops[k]
    prologue, epilogue, outer_yield = ops[:k], ops[k + 1:-1], ops[-1]
    inside = _defined_inside(outer)
    bound_ops = None  # the prologue ops computing inner bounds that change with the outer loop (None: none do)
    if any(v in inside for v in list(inner.operands)[:3]):
        bound_ops = _bound_slice(prologue, [v for v in list(inner.operands)[:3] if v in inside], body, inside)
        if bound_ops is None:
            log.debug("loop at %s: tt.flatten ignored, the inner loop's bounds are not computed from the outer "
                      "index alone by pure ops", outer.location)
            return False
    if any(o.name in _DOTS for o in u.walk(inner)):
        # measured on an H200 (bench/persistent.py, 2026-11-28): the fused tile x K loop of a persistent matmul
        # ran at 0.63-0.65x Triton's fused one and below tritium's own nest (0.84-0.96x), with the accumulator's
        # registers free in the epilogue (186 registers, as the nest's 184) and the dot asynchronous; left: the
        # tile coordinates (integer divisions) recomputed on every K step, for this step and the one S-1 ahead
        log.debug("loop at %s: tt.flatten not applied, its inner loop has a dot (the nest is faster here)",
                  outer.location)
        return False
    ibody = inner.regions[0].blocks[0]
    iops = [u.as_op(o) for o in ibody.operations]
    ity, jty = outer.operands[0].type, inner.operands[0].type
    wide = ir.IntegerType.get_signless(64 if 64 in (ir.IntegerType(ity).width, ir.IntegerType(jty).width) else 32)
    o_types = [r.type for r in outer.results]
    i_types = [r.type for r in inner.results]
    # prologue values the inner loop, the epilogue or the outer yield read
    later = _used_values([inner] + epilogue + [outer_yield])
    pv = [r for op in prologue for r in op.results if r in later]
    attrs = {n: outer.attributes[n] for n in outer.attributes if n != ATTR}
    for n in inner.attributes:
        if n not in attrs:
            attrs[n] = inner.attributes[n]
    loc = outer.location
    with ir.InsertionPoint(outer), loc:
        lbi, ubi, si = outer.operands[0], outer.operands[1], outer.operands[2]
        lbj, ubj, sj = inner.operands[0], inner.operands[1], inner.operands[2]
        if bound_ops is None:
            cl = [_const_int(v) for v in (lbj, ubj, sj)]
            known = None if None in cl else max(0, -(-(cl[1] - cl[0]) // cl[2]))
            len_j = _trips(lbj, ubj, sj, wide)
            # an inner loop that may be empty: versioned when its body loads (the pipeliner wants the loads at the
            # fused loop's top level), else its body guarded by `jj < len_j` and each outer trip at least one
            guard = not known and not any(o.name in _LOADS for o in u.walk(inner))
            inner_len = _arith("arith.maxsi", len_j, _const(wide, 1)) if guard else len_j
            total = _arith("arith.muli", _trips(lbi, ubi, si, wide), inner_len)
        else:
            # bounds that change with the outer index: a loop adds up the trips (at least one an outer trip), as
            # Triton's; the fused loop then carries i and jj instead of dividing its index, body guarded
            known, guard = None, True
            total = _count_trips(outer, body, bound_ops, (lbj, ubj, sj), wide, loc)
        spec = None
        if not known and not guard:
            spec = _create("scf.if", [_cmp(_SGT, len_j, _const(wide, 0))], o_types, regions=2)
            then_b = spec.regions[0].blocks.append()
            else_b = spec.regions[1].blocks.append()
            with ir.InsertionPoint(else_b):
                kept = outer.clone()
                del kept.attributes[ATTR]
                _create("scf.yield", kept.results, [])
            where = ir.InsertionPoint(then_b)
        else:
            where = ir.InsertionPoint(outer)
    # prologue ops that may run on every fused trip (pure, no regions, fed only by such ops or by values from
    # outside): computed from the current outer position at the fused loop's top level, so the loads they address
    # depend on the induction variable alone (what the pipeliner can issue ahead); the rest run under `jj == 0`.
    # A division among them is as safe as in the nest: every fused trip belongs to an outer trip that ran it with
    # the same operands.
    hoisted, kept_ops = [], []
    cond_defined = set()
    for op in prologue:
        nested = _defined_inside(op) if len(op.regions) else set()
        if u.is_pure(op) and not (_used_values([op]) - nested) & cond_defined:
            hoisted.append(op)
        else:
            kept_ops.append(op)
            cond_defined.update(op.results)
    later_kept = [r for r in pv if r in cond_defined]
    with where, loc:
        inits = list(outer.operands[3:]) + [_poison(v.type) for v in later_kept] + [_poison(t) for t in i_types]
        if bound_ops is not None:  # the outer index and the inner trip, carried
            inits += [lbi, _const(wide, 0)]
        fused = _create("scf.for", [_const(wide, 0), total, _const(wide, 1)] + inits, [v.type for v in inits],
                        attrs, regions=1)
        fb = fused.regions[0].blocks.append(wide, *[v.type for v in inits])
        args = list(fb.arguments)
        no, nk = len(o_types), len(later_kept)
        o_cur, pv_cur, in_cur = args[1:1 + no], args[1 + no:1 + no + nk], args[1 + no + nk:1 + no + nk + len(i_types)]
        if spec is not None:
            _create("scf.yield", fused.results[:no], [])
    fip = ir.InsertionPoint(fb)
    with fip, loc:
        if bound_ops is None:
            t = args[0]
            q = _arith("arith.divsi", t, inner_len if not known else _const(wide, known))
            jj = _arith("arith.subi", t, _arith("arith.muli", q, inner_len if not known else _const(wide, known)))
            i_cur = _arith("arith.addi", lbi, _arith("arith.muli", _cast_int(q, ity), si))
        else:
            i_cur, jj = args[-2], args[-1]
    m = {body.arguments[0]: i_cur}
    m.update(zip(list(body.arguments)[1:], o_cur))
    u.clone_ops(hoisted, m, fip)
    if bound_ops is not None:  # this outer trip's inner bounds, from the hoisted ops
        with fip, loc:
            lbj, ubj, sj = m.get(lbj, lbj), m.get(ubj, ubj), m.get(sj, sj)
            len_j = _trips(lbj, ubj, sj, wide)
            inner_len = _arith("arith.maxsi", len_j, _const(wide, 1))
    # the inner loop's initial values: those known before `jj == 0`'s branch (hoisted, or from outside) by a
    # select -- an accumulator's `select(first, zeros, acc)` is what a dot turns into its use-accumulator flag
    # (ttgir/optimize_accumulator_init.py) -- the others from that branch
    inner_inits = list(inner.operands)[3:]
    by_select = [not (v in cond_defined) for v in inner_inits]
    from_if = [v for v, sel in zip(inner_inits, by_select) if not sel]
    in_if_cur = [c for c, sel in zip(in_cur, by_select) if not sel]
    with fip, loc:
        first = _cmp(_EQ, jj, _const(wide, 0))
        if_first = _create("scf.if", [first], [v.type for v in later_kept] + [v.type for v in from_if], regions=2)
        fthen = if_first.regions[0].blocks.append()
        felse = if_first.regions[1].blocks.append()
    mf = dict(m)
    u.clone_ops(kept_ops, mf, ir.InsertionPoint(fthen))
    _yield(fthen, [mf.get(v, v) for v in later_kept] + [mf.get(v, v) for v in from_if], loc)
    _yield(felse, list(pv_cur) + in_if_cur, loc)
    m.update(zip(later_kept, if_first.results[:nk]))
    from_branch = iter(if_first.results[nk:])
    fresh = []  # each inner value as a new outer trip starts it (what the last inner trip hands on)
    carried_in = []
    with fip, loc:
        for v, sel, cur in zip(inner_inits, by_select, in_cur):
            fresh.append(m.get(v, v) if sel else next(from_branch))
            carried_in.append(_create("arith.select", [first, fresh[-1], cur], [cur.type]).results[0] if sel
                              else fresh[-1])
    with fip, loc:
        j = _arith("arith.addi", lbj, _arith("arith.muli", _cast_int(jj, jty), sj))
    m[ibody.arguments[0]] = j
    m.update(zip(list(ibody.arguments)[1:], carried_in))
    if guard:
        with fip, loc:
            if_body = _create("scf.if", [_cmp(_SLT, jj, len_j)], i_types, regions=2)
            bthen = if_body.regions[0].blocks.append()
            belse = if_body.regions[1].blocks.append()
        u.clone_ops(iops[:-1], m, ir.InsertionPoint(bthen))
        _yield(bthen, [m.get(v, v) for v in iops[-1].operands], loc)
        _yield(belse, carried_in, loc)
        in_next = list(if_body.results)
    else:
        u.clone_ops(iops[:-1], m, fip)
        in_next = [m.get(v, v) for v in iops[-1].operands]
    with fip, loc:
        last = _cmp(_EQ, jj, _arith("arith.subi", inner_len, _const(wide, 1)) if not known
                    else _const(wide, known - 1))
        # after the last inner trip the inner values leave as their initial values (the next trip replaces them
        # anyway): a matmul's accumulator is then dead during the epilogue, its registers free for it
        if_last = _create("scf.if", [last], o_types + i_types, regions=2)
        lthen = if_last.regions[0].blocks.append()
        lelse = if_last.regions[1].blocks.append()
    m.update(zip(inner.results, in_next))
    u.clone_ops(epilogue, m, ir.InsertionPoint(lthen))
    with ir.InsertionPoint(lthen), loc:
        handed = [_dead_copy(r, f, jj) for r, f in zip(in_next, fresh)]
    _yield(lthen, [m.get(v, v) for v in outer_yield.operands] + handed, loc)
    _yield(lelse, list(o_cur) + in_next, loc)
    with fip, loc:
        state = []
        if bound_ops is not None:  # after the last inner trip: the next outer index, jj from 0
            zero = _const(wide, 0)
            state = [_create("arith.select", [last, _arith("arith.addi", i_cur, si), i_cur], [i_cur.type]).results[0],
                     _create("arith.select", [last, zero, _arith("arith.addi", jj, _const(wide, 1))],
                             [wide]).results[0]]
        _create("scf.yield", list(if_last.results[:len(o_types)]) + list(if_first.results[:nk])
                + list(if_last.results[len(o_types):]) + state, [])
    results = spec.results if spec is not None else fused.results[:len(o_types)]
    for old, new in zip(outer.results, results):
        old.replace_all_uses_with(new)
    outer.erase()
    return True


def fuse_nested_loops(module) -> int:
    """Fuse every ``scf.for`` of ``module`` marked ``tt.flatten`` with its inner loop; returns how many were."""
    n = 0
    while True:  # one nest at a time, outermost first: fusing erases the nest (and the wrappers of its ops)
        op = next((o for o in u.walk(u.as_op(module)) if o.name == "scf.for" and ATTR in o.attributes), None)
        if op is None:
            return n
        if _fuse(op):
            n += 1
        else:
            del op.attributes[ATTR]


fuse_nested_loops_pass = pass_entry("tritium-fuse-nested-loops", fuse_nested_loops)
