"""core.arrays.select against np.where, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from core import arrays
from core.arrays import select

DTYPES = [np.float32, np.float64, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.bool_]


def _values(rng, dtype, n):
    if dtype is np.bool_:
        return rng.random(n) < 0.5
    if np.dtype(dtype).kind == "f":
        values = rng.standard_normal(n).astype(dtype)
        values[::5] = np.nan
        values[1::7] = -0.0
        values[2::11] = np.inf
        values[3::13] = np.frombuffer(b"\x01\x00\xc0\x7f" * 8, dtype=np.float32)[0]  # payload
        return values
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, arrays.SELECT_ARITHMETIC_FROM + 3])
def test_select_is_np_where_bit_for_bit(dtype, n):
    """Arrays, scalars on either side (NumPy's type for the pair), a condition of another
    integer type, and a broadcast 2-D case: the same bits as np.where, below and above the
    size where the arithmetic starts."""
    rng = np.random.default_rng(n + len(np.dtype(dtype).name))
    a, b = _values(rng, dtype, n), _values(rng, dtype, n)
    cond = rng.random(n) < 0.5
    for x, y in ((a, b), (a, b[0]), (a[0], b), (a, 0), (1, b), (a[:1], b)):
        _same_bits(select(cond, x, y), np.where(cond, x, y))
    as_int = cond.astype(np.int8) * 3
    _same_bits(select(as_int, a, b), np.where(as_int, a, b))
    rows = np.resize(a, (4, n))
    grid = rng.random((4, n)) < 0.5
    _same_bits(select(grid, rows, b), np.where(grid, rows, b))


def test_select_falls_back_for_other_types():
    """Object and complex arrays take np.where itself."""
    cond = np.arange(4000) % 3 == 0
    values = np.arange(4000).astype(np.complex64)
    _same_bits(select(cond, values, values * 2), np.where(cond, values, values * 2))
    objects = np.array([object()] * 4000)
    assert (select(cond, objects, None) == np.where(cond, objects, None)).all()
