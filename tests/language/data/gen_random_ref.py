"""Regenerate the Philox reference arrays with Triton's own interpreter (run once; the .npy files are committed).

    TRITON_INTERPRET=1 <a venv with triton and torch>/bin/python tests/language/data/gen_random_ref.py

The kernels are tests/language/random_kernels.py's (test_random.py runs the same ones on tritium's interpreter),
imported here with ``tritium`` aliased to Triton."""
import os
import sys

import numpy as np
import torch
import triton
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.modules["tritium"], sys.modules["tritium.language"] = triton, tl  # the kernels' module is written for tritium
sys.path.insert(0, os.path.dirname(HERE))
from random_kernels import (BLOCK, CASES, N, TENSOR_OFFS, TENSOR_SEEDS, rng_philox, rng_rows,  # noqa: E402
                            rng_tensor_seed)


def main():
    grid = (triton.cdiv(N, BLOCK),)
    rows = []
    for seed, base, nr in CASES:
        out = torch.zeros(15 * N, dtype=torch.int32)
        rng_rows[grid](out, seed, base, N, BLOCK=BLOCK, N_ROUNDS=nr)
        rows.append(out.numpy().reshape(15, N))
    np.save(os.path.join(HERE, "philox_rows.npy"), np.stack(rows))
    out = torch.zeros(3 * N, dtype=torch.int32)
    rng_tensor_seed[grid](out, torch.from_numpy(TENSOR_SEEDS), torch.from_numpy(TENSOR_OFFS), N, BLOCK=BLOCK)
    t = out.numpy().reshape(3, N)
    out = torch.zeros(8 * N, dtype=torch.int32)
    rng_philox[grid](out, 20260101, N, BLOCK=BLOCK)
    np.save(os.path.join(HERE, "philox_misc.npy"), np.concatenate([t, out.numpy().reshape(8, N)]))


if __name__ == "__main__":
    main()
