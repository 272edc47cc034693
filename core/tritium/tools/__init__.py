"""``triton.tools`` counterparts: :mod:`.tensor_descriptor` (host-side tensor descriptors)."""
from . import tensor_descriptor  # noqa: F401
