"""Reductions and scans along a tensor axis (``tt.reduce`` / ``tt.scan``): numpy ufuncs for the combine
functions codegen recognises, a tree reduction / Hillis-Steele scan calling the generated combine function
otherwise; and ``tt.histogram``."""
from __future__ import annotations

import numpy as np

from .arith import round_bf16
from .fp8 import round_fp8
from .shapes import lane_mask, same_lead


def _round(r, rnd):
    """``r`` rounded to the element type ``rnd`` whose values are held as float32: "bf16" (or True), an fp8
    type's name; None: as it is."""
    if not rnd:
        return r
    return round_bf16(r) if rnd is True or rnd == "bf16" else round_fp8(r, rnd)


def reduce_ufunc(uf, x, axis, rnd=None):
    """A reduction by ufunc ``uf`` in the values' numpy type, then rounded to the element type ``rnd`` (see
    :func:`_round`)."""
    return _round(uf.reduce(x, axis=axis + 1, dtype=x.dtype), rnd)


def scan_ufunc(uf, x, axis, reverse, rnd=None):
    ax = axis + 1
    if reverse:
        x = np.flip(x, ax)
    r = uf.accumulate(x, axis=ax, dtype=x.dtype)
    if reverse:
        r = np.flip(r, ax)
    return _round(r, rnd)


def reduce_generic(combine, xs, axis):
    """Tree reduction (adjacent pairs, left operand first) calling the generated combine function."""
    ax = axis + 1
    xs = same_lead(list(xs))
    xs = [np.moveaxis(x, ax, -1) for x in xs]
    n = xs[0].shape[-1]
    while n > 1:
        h = n // 2
        a = [x[..., 0:2 * h:2] for x in xs]
        b = [x[..., 1:2 * h:2] for x in xs]
        r = combine(None, *a, *b)
        if n % 2:
            r = [np.concatenate([ri, x[..., 2 * h:]], axis=-1) for ri, x in zip(r, xs)]
        xs = list(r)
        n = xs[0].shape[-1]
    return tuple(x[..., 0] for x in xs)


def scan_generic(combine, xs, axis, reverse):
    """Hillis-Steele inclusive scan (log steps, left operand first) with the generated combine function."""
    ax = axis + 1
    xs = same_lead(list(xs))
    xs = [np.moveaxis(x, ax, -1) for x in xs]
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    n = xs[0].shape[-1]
    d = 1
    while d < n:
        a = [x[..., :n - d] for x in xs]
        b = [x[..., d:] for x in xs]
        r = combine(None, *a, *b)  # the earlier in scan order first (for reverse: the higher index), as Triton
        xs = [np.concatenate([x[..., :d], ri.astype(x.dtype, copy=False)], axis=-1) for x, ri in zip(xs, r)]
        d *= 2
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    return tuple(np.moveaxis(x, -1, ax) for x in xs)


def histogram(ctx, x, nbins, mask, active, rdt):
    x = x.astype(np.int64)
    P = x.shape[0]
    m = lane_mask(mask, active, x.ndim)
    ok = (x >= 0) & (x < nbins)
    if m is not None:
        ok = ok & m
    P = max(P, ok.shape[0])
    x = np.broadcast_to(x, ok.shape)
    p = np.broadcast_to(np.arange(P).reshape((P,) + (1,) * (x.ndim - 1)), ok.shape)
    flat = (p * nbins + x)[ok]
    return np.bincount(flat, minlength=P * nbins).reshape(P, nbins).astype(rdt)


def map_elementwise(fn, xs, pack, shape, active):
    """``tt.map_elementwise``: the generated scalar function called once on whole arrays, one lane per call (the
    programs' lanes times the calls of each: its loops and branches diverge per element as they do per program),
    ``pack`` consecutive elements of each operand per call; returns the results, each of ``(lanes,) + shape``."""
    xs = same_lead(list(xs))
    lead = xs[0].shape[0]
    full = (lead,) + tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    m = -(-n // pack)  # calls per program; a last partial group repeats the last element (its results are dropped)
    idx = np.minimum(np.arange(m * pack), n - 1).reshape(m, pack)
    flat = [np.broadcast_to(x, full).reshape(lead, n) for x in xs]
    args = [f[:, idx[:, j]].reshape(lead * m) for f in flat for j in range(pack)]
    act = None if active is None else np.repeat(np.broadcast_to(active, (lead,)), m)
    res = fn(act, *args)
    outs = []
    for r in range(len(res) // pack):
        o = None
        for j in range(pack):
            part = np.broadcast_to(res[r * pack + j], (lead * m,)).reshape(lead, m)
            if o is None:
                o = np.empty((lead, m * pack), dtype=part.dtype)
            o[:, j::pack] = part
        outs.append(o[:, :n].reshape(full))
    return tuple(outs)
