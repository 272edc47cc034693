"""Vector addition, as in Triton's first tutorial: ``python examples/vector_add.py``.

Runs on the best available backend: a GPU when tritium can drive one, else the NumPy interpreter
(``TRITIUM_TARGET=interpreter`` or ``TRITON_INTERPRET=1`` force it).  With ``TRITIUM_TARGET=cuda:90
TRITIUM_COMPILE_ONLY=1`` it compiles the kernel for that GPU into the file cache and runs nothing, on any machine
(the arrays stay NumPy arrays: no GPU, nor a CUDA build of torch, is needed).
"""
import os

import numpy as np

import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(x_ptr,  # *Pointer* to the first input vector.
               y_ptr,  # *Pointer* to the second input vector.
               output_ptr,  # *Pointer* to the output vector.
               n_elements,  # Size of the vector.
               BLOCK_SIZE: tl.constexpr,  # Number of elements each program should process.
               ):
    pid = tl.program_id(axis=0)  # We use a 1D launch grid so axis is 0.
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # Guard the last, partial block.
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x, y):
    """x + y for NumPy arrays (interpreter) or torch tensors (on the GPU, CUDA tensors)."""
    output = x.new_empty(x.shape) if hasattr(x, "new_empty") else np.empty_like(x)
    n_elements = output.numel() if hasattr(output, "numel") else output.size
    # The grid is a function of the meta-parameters: one program per BLOCK_SIZE elements.
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


def main() -> None:
    from tritium.runtime import driver

    rng = np.random.default_rng(0)
    size = 98432
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    output_numpy = x + y
    target = driver.active.get_current_target()
    compile_only = os.environ.get("TRITIUM_COMPILE_ONLY", "").strip().lower() in ("1", "true", "yes", "on")
    if target.backend in ("cuda", "hip") and not compile_only:
        import torch  # on the GPU the kernel reads and writes GPU tensors (ROCm builds of torch call them cuda)
        output_tritium = add(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()).cpu().numpy()
    else:
        output_tritium = add(x, y)
    if compile_only:
        print(f"compile-only: add_kernel compiled for {target} (into the file cache); nothing ran")
        return
    err = float(np.max(np.abs(output_numpy - output_tritium)))
    print(f"backend: {driver.active.get_current_target()}")
    print(f"The maximum difference between numpy and tritium is {err}")
    assert err == 0.0, err
    print("OK")


if __name__ == "__main__":
    main()
