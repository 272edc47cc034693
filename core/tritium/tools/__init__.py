"""``triton.tools`` counterparts: :mod:`.tensor_descriptor` (host-side tensor descriptors)."""
