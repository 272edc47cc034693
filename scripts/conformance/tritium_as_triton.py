"""pytest plugin (``-p tritium_as_triton``): Triton's own test files run against tritium.

Loaded before the test files are collected: ``tritium.install_as_triton()`` makes ``import triton`` resolve to
tritium, and ``triton._internal_testing`` (Triton's test helpers, which are not part of tritium) is loaded from
``TRITIUM_TRITON_INTERNAL_TESTING`` (the file in a Triton checkout, or the installed Triton's) and executed with
``triton`` being tritium, as the test files see it.
"""
import importlib.util
import os
import sys

import tritium

tritium.install_as_triton()

_path = os.environ.get("TRITIUM_TRITON_INTERNAL_TESTING")
if _path:
    _spec = importlib.util.spec_from_file_location("triton._internal_testing", _path)
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["triton._internal_testing"] = _mod
    _spec.loader.exec_module(_mod)


def pytest_report_header(config):
    import triton

    return (f"triton -> tritium ({os.path.dirname(tritium.__file__)}), triton.__version__ {triton.__version__}; "
            f"triton._internal_testing from {_path or '(none)'}")
