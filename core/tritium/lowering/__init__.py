"""The generic TTGIR -> LLVM lowering framework.

* :mod:`.registry`: ``register(op_name, backend=...)``, one rule per op per backend;
* :mod:`.context`: ``LoweringContext`` (insertion point, value map, layouts, shared memory), ``TargetInfo``;
* :mod:`.driver`: ``lower_module`` walks a TTGIR module and builds the LLVM-dialect module, then runs the
  upstream conversions (scf/arith/math/cf/func -> llvm);
* :mod:`.rules`: the target-independent rules (shape ops, elementwise, control flow, reduce, convert_layout).

Importing this package imports MLIR.
"""
from .registry import GENERIC, LoweringError, get_rule, register, registered  # noqa: F401
