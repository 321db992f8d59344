"""Solid heightfield in CSR layout, and the bit-packed dense voxel grid.

A heightfield covers ``width x height`` columns on the X/Y plane (Z-up). Column index is
``ix + iy * width``. The spans of column c are ``col_start[c]:col_start[c+1]``, sorted
bottom-up, never touching (a gap of at least one cell height between them). Heights are integers
in cell-height units above ``bmin[2]``: a span covers [smin, smax).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import limits
from .errors import VoxNavError
from .limits import xyz_rows


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

    def with_area(self, area: np.ndarray) -> Heightfield:
        """These spans with ``area`` (uint8 (n,)) as their area ids, sharing every other
        array with this heightfield: what a filter makes of it. No stage writes a
        heightfield's bounds or span layout (a filter returns a new area array), and copying
        the layout costs the filters of a large grid more than their tests (the 10x10
        tiling's column starts alone are 67 MB)."""
        area = np.asarray(area, dtype=np.uint8)
        if area.shape != self.smin.shape:
            raise ValueError(f"an area per span ({self.smin.shape[0]}) expected, got {area.shape}")
        return Heightfield(
            self.width, self.height, self.bmin, self.bmax, self.cs, self.ch,
            self.col_start, self.smin, self.smax, area,
        )  # fmt: skip

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


WORD_BITS = 32


@dataclass
class VoxelGrid:
    """Dense occupancy, one bit per voxel, packed along Z in uint32 words.

    ``bits`` is uint32 (height, width, words): bit b of word w in column (ix, iy) is voxel
    iz = 32 * w + b, i.e. the cell [bmin.z + iz * ch, bmin.z + (iz + 1) * ch). Memory is
    width * height * ceil(depth / 32) * 4 bytes, whatever the scene, where the span layout costs
    about 5 bytes per span plus 8 per column.
    """

    width: int
    height: int
    #: Voxels along Z. [Units: ch]
    depth: int
    bmin: np.ndarray
    cs: np.float32
    ch: np.float32
    bits: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)

    @classmethod
    def from_heightfield(cls, hf: Heightfield, walkable_only: bool = False) -> VoxelGrid:
        """Set the bits of every span's voxels [smin, smax); with walkable_only, only spans of
        non-null area."""
        keep = hf.area != 0 if walkable_only else np.ones(hf.span_count, dtype=bool)
        smin = hf.smin[keep].astype(np.int64)
        smax = hf.smax[keep].astype(np.int64)
        col = hf.span_columns()[keep]
        depth = int(hf.smax.max()) if hf.span_count else 0
        words = max(1, -(-depth // WORD_BITS))
        first = smin // WORD_BITS
        last = (smax - 1) // WORD_BITS
        per_span = last - first + 1
        owner = np.repeat(np.arange(smin.shape[0]), per_span)
        word = first[owner] + (
            np.arange(owner.shape[0]) - np.repeat(np.cumsum(per_span) - per_span, per_span)
        )
        lo = np.clip(smin[owner] - word * WORD_BITS, 0, WORD_BITS)
        hi = np.clip(smax[owner] - word * WORD_BITS, 0, WORD_BITS)
        one = np.uint64(1)
        mask = ((one << hi.astype(np.uint64)) - one) & ~((one << lo.astype(np.uint64)) - one)
        # Spans never share a bit, so summing the masks of one word equals OR-ing them.
        flat = col[owner] * words + word
        total = np.bincount(
            flat, weights=mask.astype(np.float64), minlength=hf.width * hf.height * words
        )
        bits = total.astype(np.uint32).reshape(hf.height, hf.width, words)
        return cls(hf.width, hf.height, depth, hf.bmin.copy(), hf.cs, hf.ch, bits)

    @classmethod
    def from_dense(cls, occupied, bmin, cs: float, ch: float) -> VoxelGrid:
        """Pack a dense bool occupancy (height, width, depth) indexed [iy, ix, iz]; bmin
        float (3,) Z-up grid corner [Units: wu], cs/ch cell size and height [Units: wu]."""
        occ = np.asarray(occupied, dtype=bool)
        if occ.ndim != 3:
            raise VoxNavError(f"occupied must be (height, width, depth), got shape {occ.shape}")
        corner = limits.xyz_rows(bmin, "bmin")
        if corner.shape[0] != 1:
            raise VoxNavError(f"bmin must be one (x, y, z) corner, got {corner.shape[0]}")
        limits.check_shape_values(corner[0], "bmin")
        for name, size in (("cs", cs), ("ch", ch)):
            try:
                ok = bool(np.isfinite(np.float32(size)) and np.float32(size) > 0)
            except (TypeError, ValueError):
                ok = False
            if not ok or isinstance(size, bool):
                raise VoxNavError(f"{name} must be a positive finite number (wu), got {size!r}")
        h, w, depth = occ.shape
        words = max(1, -(-depth // WORD_BITS))
        padded = np.zeros((h, w, words * WORD_BITS), dtype=bool)
        padded[:, :, :depth] = occ
        packed = np.packbits(padded, axis=2, bitorder="little")
        bits = np.ascontiguousarray(packed).view(np.uint32).reshape(h, w, words)
        return cls(w, h, depth, corner[0].astype(np.float32), np.float32(cs), np.float32(ch), bits)

    def voxel_count(self) -> int:
        return int(np.unpackbits(self.bits.view(np.uint8)).sum())

    def to_heightfield(self, area: int = 0) -> Heightfield:
        """Runs of set bits in each column as spans, all with the given area id. [Limit: depth
        <= 65535: span heights are uint16 (a deeper run wrapped, its bottom above its top)]"""
        if self.depth > np.iinfo(np.uint16).max:
            raise VoxNavError(
                f"a voxel grid {self.depth} voxels deep has no heightfield: span heights stop "
                f"at {np.iinfo(np.uint16).max} cell heights"
            )
        if isinstance(area, bool) or not isinstance(area, int | np.integer) or not 0 <= area <= 63:
            raise VoxNavError(f"area must be a whole area id 0..63, got {area!r}")
        n_cols = self.width * self.height
        as_bytes = self.bits.reshape(n_cols, self.bits.shape[2] if n_cols else 0).view(np.uint8)
        column_bits = np.unpackbits(as_bytes, axis=1, bitorder="little")
        padded = np.zeros((n_cols, column_bits.shape[1] + 2), dtype=np.int8)
        padded[:, 1:-1] = column_bits
        edges = np.diff(padded, axis=1)
        start_col, start_z = np.nonzero(edges == 1)
        _, end_z = np.nonzero(edges == -1)
        col_start = np.zeros(n_cols + 1, dtype=np.int64)
        np.cumsum(np.bincount(start_col, minlength=n_cols), out=col_start[1:])
        bmax = self.bmin + np.array(
            [self.width * self.cs, self.height * self.cs, self.depth * self.ch], dtype=np.float32
        )
        return Heightfield(
            self.width,
            self.height,
            self.bmin.copy(),
            bmax.astype(np.float32),
            self.cs,
            self.ch,
            col_start,
            start_z.astype(np.uint16),
            end_z.astype(np.uint16),
            np.full(start_z.shape[0], area, dtype=np.uint8),
        )

    def occupied(self, points) -> np.ndarray:
        """bool (n,): is each world point (float (n, 3), Z-up) inside a set voxel? Points off the
        grid are not."""
        p = xyz_rows(points, "points")  # (n, 2) was quietly read as other points
        rel = (p - self.bmin.astype(np.float64)) / np.array(
            [self.cs, self.cs, self.ch], dtype=np.float64
        )
        idx = np.floor(rel)
        inside = (
            np.isfinite(idx).all(axis=1)
            & (idx >= 0).all(axis=1)
            & (idx[:, 0] < self.width)
            & (idx[:, 1] < self.height)
            & (idx[:, 2] < self.depth)
        )
        out = np.zeros(p.shape[0], dtype=bool)
        ix, iy, iz = idx[inside].astype(np.int64).T
        word = self.bits[iy, ix, iz // WORD_BITS]
        out[inside] = ((word >> (iz % WORD_BITS).astype(np.uint32)) & 1).astype(bool)
        return out
