"""tritium's errors cross processes -- an autotuner's compile workers send a config's error back, Inductor compiles in
subprocesses -- so each must pickle whole: the same type, message and attributes, whatever its ``__init__`` takes.
(``OutOfResources(required, limit, name)`` did not: the compile pool that received one broke for every config.)"""
import inspect
import pickle

import pytest

import tritium.errors as E

SAMPLES = {
    "CompilationError": ("an operand of tl.dot must be 2-D", "/k.py", 3, 4, "kern"),
    "UnsupportedLanguageConstruct": ("while-else", "/k.py", 7, 0, "kern"),
    "KernelRuntimeError": ("division by zero", "k.py:3", (1, 0, 0)),
    "ArgumentError": ("a host tensor", "", None),
    "OutOfBoundsError": ("out of bounds", "k.py:1", (0, 2, 0)),
    "DeviceAssertionError": ("x > 0", "k.py:9", (3,)),
    "OutOfResources": (300000, 232448, "shared memory (bytes)", "kern", "Smaller blocks need less."),
    "CompilationFailed": ("ptxas failed (exit 255)", "ptxas fatal: ..."),
    "PTXASError": ("ptxas failed (exit 255)", "ptxas fatal: ..."),
    "CUDAError": ("cuLaunchKernel", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access"),
}
CLASSES = sorted((n, c) for n, c in vars(E).items() if inspect.isclass(c) and issubclass(c, E.TritiumError))


@pytest.mark.parametrize("name,cls", CLASSES, ids=[n for n, _ in CLASSES])
def test_every_error_pickles_whole(name, cls):
    e = cls(*SAMPLES.get(name, (f"a {name}",)))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls and str(back) == str(e) and back.args == e.args
    assert back.__dict__ == e.__dict__


def test_out_of_resources_keeps_its_fields():
    e = pickle.loads(pickle.dumps(E.OutOfResources(300000, 232448, "shared memory (bytes)", "kern")))
    assert (e.required, e.limit, e.name, e.kernel) == (300000, 232448, "shared memory (bytes)", "kern")
    assert "kernel 'kern': out of resource: shared memory (bytes), required: 300000, hardware limit: 232448" in str(e)
