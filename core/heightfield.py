"""Solid heightfield in CSR layout, and the bit-packed dense voxel grid.

A heightfield covers ``width x height`` columns on the X/Y plane (Z-up). Column index is
``ix + iy * width``. The spans of column c are ``col_start[c]:col_start[c+1]``, sorted
bottom-up, never touching (a gap of at least one cell height between them). Heights are integers
in cell-height units above ``bmin[2]``: a span covers [smin, smax).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Heightfield:
    """Solid spans of one grid. Arrays are never shared with the caller's inputs."""

    #: Columns along X. [Units: cells]
    width: int
    #: Columns along Y. [Units: cells]
    height: int
    #: World corners of the grid, float32 (3,), Z-up. [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    #: Cell size and cell height, float32. [Units: wu]
    cs: np.float32
    ch: np.float32
    #: int64 (width*height+1,): spans of column c are col_start[c]:col_start[c+1].
    col_start: np.ndarray
    #: uint16 (n,): span bottom and top. [Units: ch] [Limit: 0..8191]
    smin: np.ndarray
    smax: np.ndarray
    #: uint8 (n,): area id, 0 = blocked, 63 = walkable.
    area: np.ndarray

    @property
    def span_count(self) -> int:
        return int(self.smin.shape[0])

    def span_columns(self) -> np.ndarray:
        """int64 (n,): the column index of every span."""
        counts = np.diff(self.col_start)
        return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)

    def span_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """int32 (n,) ix and iy of every span."""
        col = self.span_columns()
        return (col % self.width).astype(np.int32), (col // self.width).astype(np.int32)

    def copy(self, area: np.ndarray | None = None) -> Heightfield:
        """A copy sharing nothing; with ``area``, that area array instead of a copy of ours."""
        return Heightfield(
            self.width,
            self.height,
            self.bmin.copy(),
            self.bmax.copy(),
            self.cs,
            self.ch,
            self.col_start.copy(),
            self.smin.copy(),
            self.smax.copy(),
            self.area.copy() if area is None else np.asarray(area, dtype=np.uint8),
        )
