"""The states Python builds for the C fast path (tritium/compiler/launch_states.py) have, field for field, the order
of the C side's enums of indices in tritium/_speedups.c: a field added on one side only fails here, not as a wrong
object read at a launch."""
import re
from pathlib import Path

import pytest

import tritium
from tritium.compiler.launch_states import C_ENUMS

SPEEDUPS = Path(tritium.__file__).parent / "_speedups.c"


def _enums() -> dict:
    """``{prefix: [names in order]}`` of the ``enum { PREFIX_A, PREFIX_B, ..., PREFIX_N }`` blocks."""
    text = re.sub(r"/\*.*?\*/", "", SPEEDUPS.read_text(), flags=re.S)
    out = {}
    for body in re.findall(r"enum\s*\{([^}]*)\}", text):
        names = [n.strip() for n in body.split(",") if n.strip()]
        prefix = names[0].split("_", 1)[0]
        out.setdefault(prefix, names)
    return out


@pytest.mark.parametrize("cls", list(C_ENUMS), ids=lambda c: c.__name__)
def test_fields_follow_the_c_enum(cls):
    prefix = C_ENUMS[cls]
    enums = _enums()
    assert prefix in enums, f"no enum {prefix}_* in {SPEEDUPS.name}"
    assert [f"{prefix}_{f.upper()}" for f in cls._fields] + [f"{prefix}_N"] == enums[prefix]


def test_the_launcher_states_differ_in_size():
    """The C dispatcher tells a JIT, autotuner, heuristics and CompiledKernel state apart by its size."""
    from tritium.compiler.launch_states import CompiledKernelState, HeuristicsState, JitLaunchState, TunerState

    sizes = [len(c._fields) for c in (JitLaunchState, TunerState, HeuristicsState, CompiledKernelState)]
    assert len(set(sizes)) == len(sizes), sizes
