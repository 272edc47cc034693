"""Run-time support of the NumPy programs the interpreter generates: ``_rt.<name>`` in a generated program (see
codegen.py) and the driver's ``rt.Memory`` / ``rt.Ctx`` / ``rt.program_ids`` are the names imported here.

Conventions: every value is a numpy array whose leading axis is the program axis, of size P (the programs of
the current chunk) or 1 when the value is the same for every program.  ``active`` is None (every program of the
chunk runs this code) or a bool array of shape (P,).

One module per concept:

* :mod:`.context`: the launch context (``Ctx``: memory, grid, the chunk's program ids; ``BUDGET``) and
  ``where_loc`` (the source line errors name);
* :mod:`.memory`: the memory model (``Memory``, virtual addresses, bounds-checked ``load`` / ``store`` /
  ``atomic``);
* :mod:`.shapes`: shapes and masks along the program axis (``select``, ``splat``, ``addptr``, ...);
* :mod:`.control`: divergent control flow (``for_loop``, ``if_``, ``while_``);
* :mod:`.reduce`: reductions, scans and ``histogram``;
* :mod:`.arith`: integer, float and bf16 helpers;
* :mod:`.fp8`: the fp8 types (float32 values, 8-bit patterns in memory; exact conversions, rtz rounding);
* :mod:`.block_ptr`: block pointers;
* :mod:`.tensor_desc`: tensor descriptors (TMA semantics, alignment checks);
* :mod:`.debug`: ``device_print`` / ``device_assert``.

The names are imported into this module's namespace (no wrappers), so ``_rt.load`` costs one attribute lookup
as before.  This package imports numpy only (never MLIR): it is all a launch needs.
"""
from __future__ import annotations

from .arith import (bf16_bits_to_f32, bitcast, ceildivsi, clampf, cmpf_one, cmpf_ord, cmpf_ueq, cmpf_uno,
                    ctlz, ctpop, cttz, divsi, divui, erf, extsi, extui, f32_to_bf16_bits, fma, fptosi, fptoui,
                    mulhiui, mulsi_ext, mului_ext, remsi, remui, round_bf16, round_half_away, rsqrt, s, shli,
                    shrsi, shrui, sitofp, trunci, u, uitofp)
from .fp8 import f32_to_fp8_bits, fp8_bits, fp8_bits_to_f32, round_bf16_rtz, round_fp8, round_rtz
from .block_ptr import BlockPtr, advance, block_addrs, make_block_ptr
from .context import BUDGET, Ctx, program_ids, where_loc
from .control import for_loop, if_, while_
from .debug import device_assert, device_print
from .memory import SHIFT, Memory, atomic, load, store
from .reduce import histogram, map_elementwise, reduce_generic, reduce_ufunc, scan_generic, scan_ufunc
from .shapes import addptr, bcast, bmask, cat, gather, join, lane_mask, reshape, same_lead, select, splat
from .tensor_desc import TensorDesc, desc_addrs, make_tensor_desc

__all__ = [
    # context and memory
    "BUDGET", "Ctx", "program_ids", "where_loc", "SHIFT", "Memory", "load", "store", "atomic",
    # shapes and masks
    "addptr", "bcast", "bmask", "cat", "gather", "join", "lane_mask", "reshape", "same_lead", "select", "splat",
    # control flow, reductions
    "for_loop", "if_", "while_", "histogram", "map_elementwise", "reduce_generic", "reduce_ufunc", "scan_generic",
    "scan_ufunc",
    # arithmetic
    "bf16_bits_to_f32", "bitcast", "ceildivsi", "clampf", "cmpf_one", "cmpf_ord", "cmpf_ueq", "cmpf_uno", "ctlz",
    "ctpop", "cttz", "divsi", "divui", "erf", "extsi", "extui", "f32_to_bf16_bits", "fma", "fptosi", "fptoui",
    "mulhiui", "mulsi_ext", "mului_ext", "remsi", "remui", "round_bf16", "round_half_away", "rsqrt", "s", "shli",
    "shrsi", "shrui", "sitofp", "trunci", "u", "uitofp",
    # fp8, rounding toward zero
    "f32_to_fp8_bits", "fp8_bits", "fp8_bits_to_f32", "round_bf16_rtz", "round_fp8", "round_rtz",
    # block pointers, tensor descriptors, debugging
    "BlockPtr", "advance", "block_addrs", "make_block_ptr", "TensorDesc", "desc_addrs", "make_tensor_desc",
    "device_assert", "device_print",
]
