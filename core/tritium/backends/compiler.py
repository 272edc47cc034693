"""``triton.backends.compiler`` under :func:`tritium.install_as_triton`: the target and the backend base class.

``GPUTarget`` is tritium's own (``backend``, ``arch``, ``warp_size``; Triton's ``cpu`` backend name means the
interpreter).  ``BaseBackend`` is tritium's :class:`~tritium.compiler.backend.BaseCompiler`, the class a backend's
compiler derives from.  Triton 3.2's ``AttrsDescriptor`` is deliberately absent: code that probes for it (torch's
Inductor) then passes specialization attributes as a dict, Triton 3.3+'s form, which tritium takes.
"""
from ..compiler.backend import BaseCompiler as BaseBackend
from ..compiler.backend import GPUTarget

__all__ = ["GPUTarget", "BaseBackend"]
