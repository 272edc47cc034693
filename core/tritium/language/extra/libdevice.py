"""``tl.extra.libdevice``: Triton 3.x's backend-neutral import path; the functions of
:mod:`tritium.language.extra.cuda.libdevice` (the interpreter runs their NumPy equivalents)."""
from .cuda.libdevice import *  # noqa: F401,F403
from .cuda.libdevice import VARIANTS, SYMBOLS, __all__  # noqa: F401
