"""``tl.device_print`` and ``tl.device_assert`` on the interpreter: printed per program in program order; a
failed assertion raises :class:`~tritium.errors.DeviceAssertionError` naming the source line and program."""
from __future__ import annotations

import sys

import numpy as np

from tritium.errors import DeviceAssertionError

from .context import tile_lanes, where_loc
from .shapes import bmask


def device_print(ctx, prefix, args, active, hex_, signed):
    P = ctx.P
    progs = range(P) if active is None else np.flatnonzero(active)
    out = []
    nargs = len(args)
    for p in progs:
        pid = ctx.pid_tuple(p)
        if not args:
            out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) {prefix}")
            continue
        for k, a in enumerate(args):
            x = a[p if a.shape[0] > 1 else 0]
            opnd = f"(operand {k}) " if nargs > 1 else ""
            if x.ndim == 0:
                out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) idx () {prefix}{opnd}{_fmt(x, hex_)}")
                continue
            for ix in np.ndindex(x.shape):
                idx = ", ".join(f"{i:>3}" for i in ix)
                out.append(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) idx ({idx}) {prefix}{opnd}{_fmt(x[ix], hex_)}")
    if out:
        sys.stdout.write("\n".join(out) + "\n")


def _fmt(v, hex_):
    """One element as ``tl.device_print`` shows it (``hex_``: its bits in hexadecimal)."""
    if hex_:
        if isinstance(v, np.bool_):
            return hex(int(v))
        if isinstance(v, np.floating):
            v = v.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[v.dtype.itemsize])
        return hex(int(v) & ((1 << (8 * np.dtype(type(v)).itemsize)) - 1))
    if isinstance(v, np.bool_):
        return str(int(v))
    return str(v)


def device_assert(ctx, cond, message, active, loc):
    c = cond if cond.dtype == np.bool_ else cond != 0
    bad = ~c
    if active is not None:
        bad = bad & bmask(active, c.ndim)
    if not bad.any():
        return
    shape = bad.shape
    if shape[0] == 1 and ctx.P > 1 and active is None:
        bad = np.broadcast_to(bad, (ctx.P,) + shape[1:])
    flat = int(np.argmax(bad.reshape(-1)))
    idx = np.unravel_index(flat, bad.shape)
    pid = ctx.pid_tuple(idx[0])
    raise DeviceAssertionError(f"Device assertion failed: {message}{tile_lanes(bad[idx[0]])}", where_loc(loc), pid)
