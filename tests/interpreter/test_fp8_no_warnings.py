"""Casting out-of-range, infinite and NaN values to every fp8 format on the interpreter saturates as the GPU's
cvt.rn.satfinite does and says nothing: no NumPy RuntimeWarning (overflow, invalid value) reaches the user."""
import warnings

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def _through_fp8(x_ptr, o_ptr, o16_ptr, DT: tl.constexpr):
    i = tl.arange(0, 16)
    y = tl.load(x_ptr + i).to(DT)
    tl.store(o_ptr + i, y.to(tl.float32))
    tl.store(o16_ptr + i, y.to(tl.float16).to(tl.float32))


_X = np.array([0, 1e10, -1e10, np.inf, -np.inf, np.nan, 1e-30, 448, 500, 57344, 60000, -0.0, 3.3, 1e5, 65504,
               2.0 ** -10], np.float32)
_MAX = {"float8e4nv": 448.0, "float8e5": 57344.0, "float8e4b15": 1.875, "float8e4b8": 240.0, "float8e5b16": 57344.0}


@pytest.mark.parametrize("dt", sorted(_MAX))
def test_fp8_casts_saturate_without_warnings(mode, dt):
    o, o16 = np.zeros(16, np.float32), np.zeros(16, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _through_fp8[(1,)](_X, o, o16, DT=getattr(tl, dt))
    big = _MAX[dt]
    assert o[1] == big and o[2] == -big and o[3] == big and o[4] == -big  # saturated, infinities included
    assert o[0] == 0 and o[6] == 0 and o[11] == 0
    # -0.0 stays negative, but in the FNUZ formats (fp8e4b8, fp8e5b16), whose 0x80 is their NaN
    assert np.signbit(o[11]) == (dt not in ("float8e4b8", "float8e5b16"))
    np.testing.assert_array_equal(o16[np.isfinite(o)], o[np.isfinite(o)])  # fp8 -> fp16 is exact
    assert np.all(np.abs(o[np.isfinite(o)]) <= big)
