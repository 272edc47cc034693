"""Compiler passes: ``ttir/`` (TTIR rewrites), ``ttgir/`` (TTIR -> TTGIR and the layout passes), ``analysis/``
(axis info, shared-memory allocation, barriers); one pass a file.

Debug output goes through the standard :mod:`logging` module, one logger per module under ``tritium.passes``
(``tritium.passes.ttgir.coalesce``: the layout each memory access gets and what limited its vector width;
``tritium.passes.analysis.axis_info``: why a vector width is 1, hints that were ignored, ops without a transfer
rule; ``tritium.passes.analysis.allocation``: conversions sized conservatively).  Turn it on with the environment
variable ``TRITIUM_LOG``: a comma-separated list of logger names whose DEBUG records go to stderr
(``TRITIUM_LOG=tritium.passes.ttgir.coalesce``; ``TRITIUM_LOG=1`` for everything under ``tritium``; backends log
under their own packages: ``TRITIUM_LOG=tritium,tritium_nvidia``), or configure those loggers with
:mod:`logging` as usual.  It is read when the passes are first imported, i.e. at the first compile.
"""
from __future__ import annotations

import logging
import os

LOG_ENV = "TRITIUM_LOG"


def log_from_env(value: str | None = None) -> list:
    """Send the DEBUG records of the loggers named in ``value`` (default: ``$TRITIUM_LOG``) to stderr; returns
    the loggers configured.  A logger gets one stderr handler however often this runs."""
    value = os.environ.get(LOG_ENV, "") if value is None else value
    names = [n.strip() for n in value.split(",") if n.strip() and n.strip() != "0"]
    loggers = [logging.getLogger("tritium" if n == "1" else n) for n in names]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        if not any(getattr(h, "_tritium_log", False) for h in logger.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            handler._tritium_log = True
            logger.addHandler(handler)
    return loggers


log_from_env()
