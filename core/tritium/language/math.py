"""``tl.math``: the elementwise math functions (aliases of the tl builtins)."""
from .functions import (abs, ceil, cdiv, clamp, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,  # noqa: F401
                        maximum, minimum, rsqrt, sigmoid, sin, softmax, sqrt, sqrt_rn, umulhi)

__all__ = ["abs", "ceil", "cdiv", "clamp", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
           "log2", "maximum", "minimum", "rsqrt", "sigmoid", "sin", "softmax", "sqrt", "sqrt_rn", "umulhi"]
