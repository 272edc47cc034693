"""``tl.extra``: Triton 3.x's ``triton.language.extra``.  ``extra.libdevice`` and ``extra.cuda.libdevice`` are
the same module: NVIDIA's libdevice (``__nv_*``) as elementwise builtins (``tt.extern_elementwise``)."""
from . import cuda  # noqa: F401
from . import libdevice  # noqa: F401

__all__ = ["cuda", "libdevice"]
