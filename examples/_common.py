"""What the examples share: where they run (a GPU when tritium drives one, else the NumPy interpreter) and moving
arrays there and back.  ``TRITIUM_TARGET=interpreter`` forces the interpreter; ``TRITIUM_TARGET=cuda:90
TRITIUM_COMPILE_ONLY=1`` compiles the kernels for that GPU and runs nothing (the arrays stay NumPy arrays)."""
import os

import numpy as np

from tritium.runtime import driver


def compile_only() -> bool:
    return os.environ.get("TRITIUM_COMPILE_ONLY", "").strip().lower() in ("1", "true", "yes", "on")


def on_gpu() -> bool:
    return driver.active.get_current_target().backend in ("cuda", "hip") and not compile_only()


def to_device(a: np.ndarray):
    """``a`` where the kernels run: a CUDA tensor on a GPU (ROCm builds of torch call theirs cuda too), else itself."""
    if on_gpu():
        import torch

        return torch.from_numpy(a).cuda()
    return a


def to_numpy(t) -> np.ndarray:
    return t.cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def empty_like(t, shape=None, dtype=None):
    """An uninitialised array like ``t`` (same kind, device), of ``shape`` / ``dtype`` when given (NumPy dtypes)."""
    shape = t.shape if shape is None else shape
    if hasattr(t, "new_empty"):
        import torch

        tdt = t.dtype if dtype is None else getattr(torch, np.dtype(dtype).name)
        return t.new_empty(shape, dtype=tdt)
    return np.empty(shape, t.dtype if dtype is None else dtype)


def report(name: str, got, want, atol: float, rtol: float = 0.0) -> None:
    """Print where it ran and the largest error against the NumPy reference; fail beyond the tolerance."""
    if compile_only():
        print(f"compile-only: {name} compiled for {driver.active.get_current_target()} (into the file cache); "
              "nothing ran")
        return
    got = to_numpy(got).astype(np.float64)
    want = np.asarray(want, np.float64)
    err = float(np.max(np.abs(got - want)))
    print(f"backend: {driver.active.get_current_target()}")
    print(f"{name}: the maximum difference from NumPy is {err:.3g}")
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
    print("OK")
