"""The target-independent lowering rules, one module per op family, each exposing its table ``RULES``;
:data:`GENERIC_RULES` is their merge.  A backend's table is ``{**GENERIC_RULES, **its own}``."""
from ..table import merge
from . import (constants, control_flow, convert_layout, debug, dot, elementwise, histogram_gather, inline_asm, reduce,
               scan, shared_memory, spmd, view)

GENERIC_RULES = merge(elementwise.RULES, constants.RULES, spmd.RULES, view.RULES, convert_layout.RULES,
                      reduce.RULES, scan.RULES, histogram_gather.RULES, control_flow.RULES, debug.RULES, dot.RULES,
                      shared_memory.RULES, inline_asm.RULES)
