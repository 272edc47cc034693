"""tritium's version (its own; the Triton release whose API it provides is ``triton_alias.TRITON_VERSION``)."""
__version__ = "0.1.0"
