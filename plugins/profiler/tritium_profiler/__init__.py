"""tritium-profiler: per-kernel launch counts and times, a summary table and a Chrome trace.

Enable with ``TRITIUM_PROFILE=1`` (the whole process; the summary is printed to stderr at exit) or
programmatically::

    import tritium_profiler
    tritium_profiler.start(trace="trace.json", sync=False)
    ...                                  # launch kernels
    tritium_profiler.stop()
    tritium_profiler.report()            # table on stderr, trace written; returns the per-kernel stats

What is measured: host time between the ``tritium_launch_enter`` and ``tritium_launch_exit`` hooks of each
launch (``time.perf_counter_ns``).  On the interpreter that is the kernel's run time.  GPU launches are
asynchronous, so there it is the launch overhead, unless ``sync`` is on (``TRITIUM_PROFILE_SYNC=1`` or
``start(sync=True)``): the device is then synchronized before and after each launch (the backend driver's
``synchronize()``), so the time includes the kernel's execution -- at the cost of serialising the program.  Device-side times (events) are not
measured yet.

Environment:

``TRITIUM_PROFILE=1``            profile from the first launch; report at exit
``TRITIUM_PROFILE_TRACE=PATH``   also write a Chrome trace (``chrome://tracing``, https://ui.perfetto.dev) to PATH
``TRITIUM_PROFILE_SYNC=1``       synchronize around each launch (see above)
``TRITIUM_PROFILE_MAX_EVENTS=N`` keep at most N trace events (default 1,000,000); counts stay exact

Not profiling, the launch hooks are not registered: a launch does not call the plugin at all.
"""
from __future__ import annotations

from .plugin import (KernelStats, enabled, events, report, reset, start, stats, stop, summary_table,
                     trace_dict, write_trace)

__all__ = ["start", "stop", "report", "reset", "stats", "events", "enabled", "summary_table", "trace_dict",
           "write_trace", "KernelStats"]
