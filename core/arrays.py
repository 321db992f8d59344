"""Array helpers for the stages' hot loops (NumPy only).

`select` is ``np.where(cond, a, b)`` without branches: NumPy's where copies element by
element behind a branch on the condition, which costs 1-3.5 ns an element here (3.5 where the
condition is random, as a triangle's edge directions are), against about 0.3 ns for each of
the three passes of an arithmetic select on the values' bits.
"""

from __future__ import annotations

import numpy as np

#: Elements from which `select` selects by arithmetic; below, np.where's one call costs less
#: than three.
SELECT_ARITHMETIC_FROM = 2048

#: The unsigned integer type of each item size: the bits `select` computes with.
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def select(cond, a, b) -> np.ndarray:
    """``np.where(cond, a, b)``, the same array bit for bit (NaN payloads and signed zeros
    included), for numeric or bool ``a`` and ``b`` (arrays or scalars, broadcast with the
    bool ``cond``; the result's type is NumPy's for the pair, as np.where's).

    From `SELECT_ARITHMETIC_FROM` elements it computes b + (a - b) * cond on the values' bits
    as unsigned integers (wrapping: exact for any bits), three branch-free passes."""
    if not (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.dtype == b.dtype
        and a.shape == b.shape
        and type(cond) is np.ndarray
        and cond.shape == a.shape
        and cond.dtype == np.bool_
    ):
        dtype = np.result_type(a, b)
        a = np.asarray(a, dtype=dtype)
        b = np.asarray(b, dtype=dtype)
        cond = np.asarray(cond, dtype=bool)
        shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    else:
        dtype, shape = a.dtype, a.shape
    bits = _BITS.get(dtype.itemsize) if dtype.kind in "biuf" else None
    if bits is None or (a.size if shape == a.shape else int(np.prod(shape))) < (
        SELECT_ARITHMETIC_FROM
    ):
        return np.where(cond, a, b)
    b_bits = b.view(bits)
    out = np.subtract(a.view(bits), b_bits, out=np.empty(shape, dtype=bits))  # wraps
    out *= cond
    out += b_bits
    return out.view(dtype)


def lowest_labels(count: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """int64 (count,): each of ``count`` elements' lowest index among the elements the pairs
    (``a[i]``, ``b[i]``) join it to, directly or through others (connected components, each
    named by its lowest member). Rounds of taking the lower label across every pair and
    pointer jumping, until nothing changes: as many as the longest chain needs."""
    label = np.arange(count, dtype=np.int64)
    if not np.size(a):
        return label
    while True:
        before = label.copy()
        np.minimum.at(label, a, label[b])
        np.minimum.at(label, b, label[a])
        label = label[label]
        if np.array_equal(label, before):
            return label
