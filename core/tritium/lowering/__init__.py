"""The generic TTGIR -> LLVM lowering framework.

* :mod:`.walker`: ``lower_module(module, target_info, rules)`` walks a TTGIR module, calls one rule per op with
  its operands and attributes decoded, builds the LLVM-dialect module and runs the upstream conversions;
* :mod:`.context`: ``LoweringContext`` (the op being lowered, insertion point, value map, layouts, shared
  memory), ``TargetInfo`` (what a rule may ask of the GPU target);
* :mod:`.table`: ``Rules`` (op name -> rule) and ``merge``;
* :mod:`.utils`: the helpers rules share;
* :mod:`.rules`: the target-independent rules, one module per op family; ``GENERIC_RULES``.

Importing this package imports MLIR.
"""
from ..errors import LoweringError
from .context import LoweringContext, TargetInfo
from .rules import GENERIC_RULES
from .table import Rules, merge
from .walker import LoweredModule, lower_module

__all__ = ["GENERIC_RULES", "LoweredModule", "LoweringContext", "LoweringError", "Rules", "TargetInfo",
           "lower_module", "merge"]
