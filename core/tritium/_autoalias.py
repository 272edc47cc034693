"""Run at every Python start-up by the ``tritium-as-triton.pth`` file the package installs: when
``TRITIUM_AS_TRITON`` is set to a true value (``1``, ``true``, ``yes``, ``on``), ``import triton`` resolves to tritium
(:func:`tritium.install_as_triton`) in that process, with no change to the program: a ``python`` or ``pytest`` run,
and the worker processes a program starts (torch's Inductor compiles in subprocesses), which inherit the variable.

Unset (the default), this costs one environment lookup and imports nothing.  It never raises: a start-up hook
that failed would break every Python program of the environment; a failure is reported on stderr instead.
"""
import os


def _maybe_install() -> None:
    v = os.environ.get("TRITIUM_AS_TRITON", "")
    if v.strip().lower() not in ("1", "true", "yes", "on"):
        return
    try:
        from tritium.triton_alias import install_as_triton

        install_as_triton()
    except Exception as e:  # noqa: BLE001 - see the module doc
        import sys

        print(f"tritium: TRITIUM_AS_TRITON is set but tritium could not stand in for triton: "
              f"{type(e).__name__}: {e}", file=sys.stderr)


_maybe_install()
