"""``tl.extra.cuda`` (Triton 3.6's ``triton.language.extra.cuda``): ``libdevice`` (NVIDIA's libdevice math
library, linked by the cuda backend), ``globaltimer``, ``smid``, ``num_threads``, ``num_warps``,
``convert_custom_float8_sm70/sm80``, ``gdc_wait``, ``gdc_launch_dependents`` (see :mod:`.utils`, :mod:`.gdc`)."""
from . import libdevice  # noqa: F401
from .gdc import gdc_launch_dependents, gdc_wait  # noqa: F401
from .utils import (convert_custom_float8_sm70, convert_custom_float8_sm80, globaltimer, num_threads,  # noqa: F401
                    num_warps, smid)

__all__ = ["libdevice", "globaltimer", "num_threads", "num_warps", "smid", "convert_custom_float8_sm70",
           "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait"]
