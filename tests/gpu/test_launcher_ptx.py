"""The cuda driver and launcher on a device, with hand-written PTX kernels (tests/gpu/ptx/launcher_kernels.ptx)
assembled by ptxas: independent of tritium's compiler.  Skipped without a CUDA device and in compile-only mode.

The cubin is ``.gpu/ptx/launcher_kernels.cubin`` when scripts/gpu_prepare.sh built it, else ptxas (``$PTXAS``,
the PATH, or the nvidia-cuda-nvcc / Triton packages) assembles it into a temporary directory."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tritium.compiler.compiler import CompiledKernel
from tritium.errors import KernelRuntimeError, OutOfResources

from .conftest import COMPILE_ONLY, DEVICE_REASON

pytestmark = [pytest.mark.cuda_only("hand-written PTX launched through the cuda driver"),
              pytest.mark.skipif(COMPILE_ONLY or DEVICE_REASON is not None,
                                 reason=f"needs a CUDA device ({'compile-only mode' if COMPILE_ONLY else DEVICE_REASON})")]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PTX = HERE / "ptx" / "launcher_kernels.ptx"
PREBUILT = ROOT / ".gpu" / "ptx" / "launcher_kernels.cubin"


def find_ptxas():
    cands = [os.environ.get("PTXAS"), shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"]
    try:
        import nvidia.cu13  # noqa: F401 - nvidia-cuda-nvcc wheel

        cands.append(str(Path(nvidia.cu13.__path__[0]) / "bin" / "ptxas"))
    except Exception:  # noqa: BLE001
        pass
    try:
        import triton

        cands.append(str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"))
    except Exception:  # noqa: BLE001
        pass
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def build_cubin(out: Path, arch: int = 90) -> Path:
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas to assemble the test PTX")
    subprocess.run([ptxas, f"-arch=sm_{arch}", str(PTX), "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def cubin():
    if PREBUILT.exists() and PREBUILT.stat().st_mtime >= PTX.stat().st_mtime:
        return PREBUILT.read_bytes()
    d = tempfile.mkdtemp()
    try:
        return build_cubin(Path(d) / "k.cubin").read_bytes()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def kernel(cubin, name, signature, num_warps=4, shared=0):
    md = {"name": name, "num_warps": num_warps, "num_ctas": 1, "shared": shared,
          "signature": [[n, t] for n, t in signature.items()],
          "backend": "cuda", "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}
    return CompiledKernel({"cubin": cubin}, md)


ADD_SIG = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


def test_device_properties_and_target():
    from tritium.runtime import driver

    assert str(driver.active.get_current_target()) == "cuda:90"
    p = driver.active.utils.get_device_properties(0)
    assert p["multiprocessor_count"] >= 100 and p["warpSize"] == 32
    assert p["max_shared_mem"] >= 227 * 1024
    print("device properties:", p)


def test_vector_add(cubin):
    import torch

    k = kernel(cubin, "add_kernel", ADD_SIG)
    n = 1_000_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    k[((n + 127) // 128,)](x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    assert k.n_regs > 0 and k.function is not None


def test_every_scalar_kind_and_2d_grid(cubin):
    import torch

    k = kernel(cubin, "axpy_kernel", {"out": "*fp64", "x": "*fp32", "a": "fp32", "n": "i64", "b": "fp64",
                                      "c": "i8", "flag": "i1"}, num_warps=2)
    n = 300_001
    x = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda", dtype=torch.float64)
    k[(7, 3)](out, x, 2.5, n, 0.125, -3, True)
    torch.cuda.synchronize()
    ref = (2.5 * x).double() + 0.125 - 3 + 1000
    torch.testing.assert_close(out, ref)
    k[(1, 1)](out, x, 1.0, n, 0.0, 0, False)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.double())


def test_large_dynamic_shared_memory(cubin):
    import torch

    n = 40_000  # 160 000 bytes of shared memory: over the 48 KiB default, under the 227 KiB opt-in
    k = kernel(cubin, "smem_reverse_kernel", {"x": "*fp32", "out": "*fp32", "n": "i32"}, num_warps=8,
               shared=n * 4)
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    k[(1,)](x, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x.flip(0))


def test_too_much_shared_memory_is_out_of_resources(cubin):
    import torch

    k = kernel(cubin, "smem_reverse_kernel", {"x": "*fp32", "out": "*fp32", "n": "i32"}, shared=1 << 20)
    x = torch.zeros(4, device="cuda")
    with pytest.raises(OutOfResources, match="shared memory"):
        k[(1,)](x, x, 4)


def test_driver_errors_carry_the_curesult_name(cubin):
    import torch

    from tritium_nvidia.driver import CUDAError

    k = kernel(cubin, "add_kernel", ADD_SIG)
    x = torch.zeros(4, device="cuda")
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        k[(1, 70000, 1)](x, x, x, 4)  # gridDim.y > 65535
    bad = kernel(cubin, "no_such_kernel", ADD_SIG)
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_FOUND"):
        bad[(1,)](x, x, x, 4)


def test_cpu_tensor_and_wrong_arguments_are_refused(cubin):
    import torch

    k = kernel(cubin, "add_kernel", ADD_SIG)
    x = torch.zeros(4, device="cuda")
    with pytest.raises(KernelRuntimeError, match="device 'cpu'"):
        k[(1,)](x, torch.zeros(4), x, 4)
    with pytest.raises(KernelRuntimeError, match="argument 'n'"):
        k[(1,)](x, x, x, 2 ** 40)


def test_launches_on_the_current_torch_stream(cubin):
    import torch

    k = kernel(cubin, "add_kernel", ADD_SIG)
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        k[(n // 128,)](x, y, out, n)
    s.synchronize()
    torch.testing.assert_close(out, x + y)


def test_cuda_array_interface_and_raw_pointers(cubin):
    import torch

    class CAI:
        def __init__(self, t):
            self.t = t
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    k = kernel(cubin, "add_kernel", ADD_SIG)
    n = 1000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    k[(8,)](CAI(x), y.data_ptr(), out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
