"""tl.extra.cuda's globaltimer, smid, num_warps / num_threads, gdc_wait / gdc_launch_dependents and
convert_custom_float8_sm70/sm80 on the GPU.  Kernels: tests/nvidia/cuda_utils_kernels.py.  Skipped without a CUDA
device; compile-only under TRITIUM_COMPILE_ONLY=1 (see conftest.py)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tests.nvidia import cuda_utils_kernels as K

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.cuda_only("tl.extra.cuda (%smid, %globaltimer, griddepcontrol, the fp8e4b15 converters' "
                                   "inline PTX)")


def _np(t):
    return t.cpu().numpy()


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_info(gpu, num_warps):
    o = gpu.empty(4 * 64, dtype=torch.int32)
    K.info_k[(64,)](o, num_warps=num_warps)
    gpu.done()
    o = _np(o).reshape(64, 4)
    assert (o[:, 0] == num_warps).all() and (o[:, 1] == num_warps * 32).all()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert ((o[:, 2] >= 0) & (o[:, 2] < sms)).all()
    np.testing.assert_array_equal(o[:, 3], num_warps * 1000 + o[:, 2])


def test_globaltimer(gpu):
    steps, grid = 6, 16
    x = gpu.rand(1000)
    t = gpu.empty(grid * (steps + 1), dtype=torch.int64)
    K.timer_k[(grid,)](x, t, 1000, BLOCK=1024, STEPS=steps)
    o = gpu.empty(8, dtype=torch.int64)
    K.timer_elapsed_k[(8,)](o, SPIN=32)
    gpu.done()
    t = _np(t).reshape(grid, steps + 1)
    assert (np.diff(t, axis=1) >= 0).all()
    assert (t > 0).all()
    assert (_np(o) >= 0).all()


@pytest.mark.parametrize("n,block", [(1000, 256), (4096, 1024)])
def test_gdc(gpu, n, block):
    x = gpu.randn(n)
    y = gpu.empty(n)
    K.gdc_k[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
    z = gpu.empty(1, dtype=torch.int32)
    K.gdc_launch_k[(1,)](z)
    gpu.done()
    torch.testing.assert_close(y, x * 2 + 1)
    assert int(z.item()) == 1


def _fp8_to_f16_bits(b):
    b = b.astype(np.uint16)
    return ((b & 0x80) << 8) | ((b & 0x7F) << 7)


def _f16_bits_to_fp8(h):
    h = h.astype(np.uint32)
    a = np.minimum(h & 0x7FFF, 0x3F80)
    return ((((a << 1) + 0x80) >> 8) & 0x7F | ((h >> 8) & 0x80)).astype(np.uint8)


@pytest.mark.parametrize("sm80", [True, False])
@pytest.mark.parametrize("dst", ["float16", "float32"])
def test_fp8_upcast_all_codes(gpu, sm80, dst):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).repeat(4).to(gpu.device)
    o = gpu.empty(1024, dtype=getattr(torch, dst))
    K.fp8_up_k[(1,)](codes, o, 1024, BLOCK=1024, DST=getattr(tl, dst), SM80=sm80)
    gpu.done()
    ref = _fp8_to_f16_bits(np.tile(np.arange(256), 4)).view(np.float16)
    np.testing.assert_array_equal(_np(o), ref.astype(np.float32 if dst == "float32" else np.float16))


@pytest.mark.parametrize("sm80", [True, False])
def test_fp8_downcast(gpu, sm80):
    # every fp8e4b15 value round-trips; random fp16 bits (incl. large, inf, nan) clamp and round to nearest
    exact = _fp8_to_f16_bits(np.arange(256)).view(np.float16)
    rnd = np.random.default_rng(5).integers(0, 1 << 16, 3840).astype(np.uint16).view(np.float16)
    h = np.concatenate([exact, rnd])
    x = torch.from_numpy(h).to(gpu.device)
    o = gpu.empty(h.size, dtype=torch.uint8)
    K.fp8_down_k[(h.size // 1024,)](x, o, h.size, BLOCK=1024, SM80=sm80)
    # fp32 input: fp16-representable values give the same bits
    o32 = gpu.empty(h.size, dtype=torch.uint8)
    fin = np.where(np.isfinite(h), h, np.float16(0)).astype(np.float32)
    K.fp8_down_k[(h.size // 1024,)](torch.from_numpy(fin).to(gpu.device), o32, h.size, BLOCK=1024, SM80=sm80)
    gpu.done()
    got = _np(o)
    np.testing.assert_array_equal(got[:256], np.arange(256, dtype=np.uint8))
    np.testing.assert_array_equal(got, _f16_bits_to_fp8(h.view(np.uint16)))
    np.testing.assert_array_equal(_np(o32), _f16_bits_to_fp8(fin.astype(np.float16).view(np.uint16)))
