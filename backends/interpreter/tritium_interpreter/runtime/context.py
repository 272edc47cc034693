"""The launch context of the generated program: which programs one call of the kernel function runs
(:class:`Ctx`, :func:`program_ids`, the chunk :data:`BUDGET`), and :func:`where_loc`, how run-time errors name
the kernel's source line."""
from __future__ import annotations

import numpy as np

from tritium.errors import format_source_line

#: the address layout (runtime/memory.py): the i-th pointer argument's buffer starts at ``(i + 1) << SHIFT``
SHIFT = 40

#: elements per chunk: P * (largest tensor numel) stays below this.  The driver reads it as ``runtime.BUDGET``
#: when it builds a launcher (tests lower it there to force several chunks).
BUDGET = 1 << 24


def program_ids(grid, start, count):
    """``(pid, nprog)`` of the programs [start, start + count) of ``grid``: the values ``tl.program_id`` and
    ``tl.num_programs`` read (arrays of shape (count,) or (1,), read-only so that a launcher may reuse them)."""
    gx, gy, gz = grid
    if count == 1:
        f = start
        pid = (np.array([f % gx], np.int32), np.array([(f // gx) % gy], np.int32),
               np.array([f // (gx * gy)], np.int32))
    else:
        flat = np.arange(start, start + count, dtype=np.int64)
        x = (flat % gx).astype(np.int32) if gx > 1 else np.zeros(1, np.int32)
        y = ((flat // gx) % gy).astype(np.int32) if gy > 1 else np.zeros(1, np.int32)
        z = (flat // (gx * gy)).astype(np.int32) if gz > 1 else np.zeros(1, np.int32)
        pid = (x, y, z)
    nprog = (np.array([gx], np.int32), np.array([gy], np.int32), np.array([gz], np.int32))
    for a in pid + nprog:
        a.flags.writeable = False
    return pid, nprog


class Ctx:
    """One chunk of programs: flat program ids [start, start + P) of a grid (gx, gy, gz).  ``ids``: their
    :func:`program_ids` when the caller has them already."""

    #: the launcher can run this chunk again one program at a time (it kept the memory as the chunk found it):
    #: a spin-wait between its programs raises :class:`.control.SpinWait` instead of waiting forever
    restartable = False

    def __init__(self, mem, grid, start, count, ids=None):
        self.mem, self.grid, self.start, self.P = mem, grid, start, count
        self.pid, self.nprog = ids if ids is not None else program_ids(grid, start, count)

    def pid_tuple(self, p):
        """The program id of this chunk's ``p``-th program."""
        return grid_pid(self.grid, self.start + int(p))


def grid_pid(grid, flat):
    """The program id (x, y, z) of the ``flat``-th program of ``grid``."""
    gx, gy, _ = grid
    return (flat % gx, (flat // gx) % gy, flat // (gx * gy))


def tile_lanes(bad) -> str:
    """How an error shows the lanes of one program's tile that fail (``bad``: a bool array of the tile's shape):
    `` (tensor index (4, 2))`` for one, `` (tensor indices (4, 2), (4, 3), (5, 0), ...: 14 of 32 lanes)`` for
    several, the first (in row-major order) described by the message; "" for a scalar."""
    if bad.ndim == 0:
        return ""
    hits = np.argwhere(bad)
    if len(hits) <= 1:
        ix = tuple(int(i) for i in hits[0]) if len(hits) else ()
        return f" (tensor index {ix})" if ix else ""
    shown = ", ".join(str(tuple(int(i) for i in h)) for h in hits[:4])
    more = ", ..." if len(hits) > 4 else ""
    return f" (tensor indices {shown}{more}: {len(hits)} of {bad.size} lanes)"


def where_loc(loc):
    if not loc:
        return ""
    # columns are 0-based, as the frontend writes them (ast col_offset)
    return format_source_line(loc[0], loc[1], loc[2] if len(loc) > 2 else None)
