"""``tl.extra.cuda``: ``libdevice`` (NVIDIA's libdevice math library, linked by the cuda backend)."""
from . import libdevice  # noqa: F401

__all__ = ["libdevice"]
