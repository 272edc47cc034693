"""What the hip backend's modules share about its targets, with no imports of its own (so that the compiler, the
driver, the hsaco stage, the lowering and the plugin all take it from here and none imports another for it):
the archs it compiles for, their wavefront size, and the pip command of its dependencies."""
from __future__ import annotations

#: the archs the hip backend compiles for (``TRITIUM_TARGET=hip:<arch>``): CDNA 2 / 3 / 4 (MFMA), RDNA 3 / 3.5 / 4 (WMMA)
HIP_ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102", "gfx1151", "gfx1200", "gfx1201")

#: how the hip backend's Python dependencies are installed (named in every "not installed" message)
PIP = "pip install 'tritium[amd]'"


def warp_size_of(arch: str) -> int:
    """64 on CDNA / GCN (gfx9xx), 32 on RDNA (gfx10xx and later)."""
    return 32 if str(arch).startswith(("gfx10", "gfx11", "gfx12")) else 64
