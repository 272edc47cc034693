"""Analyses over TTIR / TTGIR: axis info (contiguity, divisibility, constancy), shared-memory allocation and
barrier insertion (membar)."""
from .axis_info import AxisInfo, AxisInfoAnalysis, vector_width

__all__ = ["AxisInfo", "AxisInfoAnalysis", "vector_width"]
