"""Height sampling on the source triangles: the highest surface under many (x, y) points.

This answers "how high is the ground here" on the scene's own triangles (not the navmesh), the
seed articles' query, fast: a `HeightIndex` is built once over a triangle soup and then
answers batches of points with array operations only.

The spatial index is a **uniform grid over X/Y** holding, per cell, the triangles whose X/Y
bounding box overlaps it (CSR arrays). A uniform grid rather than a BVH because the query is a
vertical line: a point touches exactly one cell, so a batch is one gather of candidate
triangles per point, with no tree walk and no per-level Python loop; level geometry is spread
fairly evenly over X/Y, where a grid's cells stay short. Cells are sized from the triangles'
median X/Y extent (and never so small that the grid outgrows a few cells per triangle). Each
cell entry also holds the triangle's box clipped to the cell in 1/128 cell steps (four bytes):
one integer add and mask per candidate drops most candidates before the float64 barycentric
test.

Data forms: vertices float32 (n, 3) Z-up world [Units: wu], triangles int (m, 3). Triangles with
no X/Y area (vertical walls, degenerate ones) are not surfaces from above and are skipped.
A point lies on a triangle when its barycentric coordinates are all >= -`EDGE_TOLERANCE`, so
a point on an edge shared by two triangles is never missed between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VoxNavError
from ..limits import whole_indices

#: Barycentric slack that counts a point on an edge (or just outside by rounding) as inside.
EDGE_TOLERANCE = 1e-9
#: Largest grid the index builds, in cells (whatever the scene). [Limit: >= 1]
MAX_GRID_CELLS = 1 << 24
#: Most (cell, triangle) entries the index holds (a triangle is listed in every cell its box
#: covers; about 40 bytes each while it is built) [Limit: >= 1]: past it the cells double in
#: size (the answers do not depend on it). A given cell size of 0.05 wu under a 100 x 100 m
#: building's 16 triangles made 64M entries, over 3 GiB.
MAX_GRID_ENTRIES = 1 << 23
#: Grid cell size as a multiple of the triangles' median X/Y extent: fewer cell entries per
#: triangle against more candidates per point; 1.0-2.0 measured about equal.
CELL_SIZE_FACTOR = 1.0
#: Points processed per block of a batch: keeps temporaries in cache. [Units: points]
QUERY_BLOCK = 1 << 17
#: (point, candidate triangle) pairs tested at once within a block (`HeightIndex._block`;
#: about 60 bytes each in flight).
PAIRS_PER_BLOCK = 1 << 22


@dataclass
class HeightHits:
    """Answers of a batch: ``height`` float64 (n,) Z of the highest surface (NaN: none);
    ``triangle`` int64 (n,) index of that triangle in the input soup (-1: none)."""

    height: np.ndarray
    triangle: np.ndarray


#: Columns of the per-triangle plane table, float64: corner a, edges b - a and c - a in X/Y,
#: their rises in Z, and 1 / (the X/Y cross product of the edges).
_X0, _Y0, _Z0, _E1X, _E1Y, _E2X, _E2Y, _DZ1, _DZ2, _INV = range(10)


def _surfaces(verts, tris) -> tuple[np.ndarray, np.ndarray]:
    """(ids int64 (k,) of the triangles with X/Y area, plane table float64 (10, k)).

    One row per quantity, so that a query gathers each as one contiguous 1-D take.
    """
    try:
        with np.errstate(over="ignore"):  # beyond float32: named below
            v = np.asarray(verts, dtype=np.float32)
    except (TypeError, ValueError):
        raise VoxNavError("verts must be numbers, an (n, 3) array") from None
    t = whole_indices(tris)
    if v.ndim != 2 or v.shape[1] != 3:
        raise VoxNavError(f"verts must have shape (n, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3:
        raise VoxNavError(f"tris must have shape (m, 3), got {t.shape}")
    # Bounds in the given dtype: a cast to int64 first would wrap 1e20 or 2**63 (uint64).
    if t.size and (t.min() < 0 or t.max() >= v.shape[0]):
        raise VoxNavError(
            f"tris refer to vertices outside 0..{v.shape[0] - 1}: check the triangle indices"
        )
    t = t.astype(np.int64, copy=False)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(v).all(axis=1)
    if t.size and bad.any():
        used = np.zeros(v.shape[0], dtype=bool)
        used[t.ravel()] = True
        bad &= used
        if bad.any():  # a dropped triangle read "no surface" there, without a word
            first = int(np.flatnonzero(bad)[0])
            given = np.asarray(verts, dtype=np.float64)[first].tolist()
            raise VoxNavError(
                f"vertex {first} of verts is not a finite number in float32 (NaN, infinite or "
                f"beyond 3.4e38): {given}; fix the mesh"
            )
    # Component by component (1-D gathers and arithmetic; no (m, 3, 3) temporaries).
    comp = [np.ascontiguousarray(v[:, c], dtype=np.float64) for c in range(3)]
    ia, ib, ic = (np.ascontiguousarray(t[:, j]) for j in range(3))
    a = [c.take(ia) for c in comp]
    e1 = [c.take(ib) - a0 for c, a0 in zip(comp, a, strict=True)]
    e2 = [c.take(ic) - a0 for c, a0 in zip(comp, a, strict=True)]
    det: np.ndarray = e1[0] * e2[1] - e1[1] * e2[0]
    finite_vert = np.isfinite(comp[0]) & np.isfinite(comp[1]) & np.isfinite(comp[2])
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(det) & (det != 0)
    keep &= finite_vert.take(ia) & finite_vert.take(ib) & finite_vert.take(ic)
    ids = np.flatnonzero(keep)
    plane = np.empty((10, ids.shape[0]))
    for row, values in ((_X0, a[0]), (_Y0, a[1]), (_Z0, a[2]), (_E1X, e1[0]), (_E1Y, e1[1]),
                        (_E2X, e2[0]), (_E2Y, e2[1]), (_DZ1, e1[2]), (_DZ2, e2[2])):  # fmt: skip
        values.take(ids, out=plane[row])
    plane[_INV] = 1.0 / det.take(ids)
    return ids, plane


def _surface_heights(rows, px, py):
    """(inside bool (p,), z float64 (p,)) of points (px, py) on plane rows (10 of (p,))."""
    inside, u, w = _inside(rows, px, py)
    z = rows[_Z0] + u * rows[_DZ1] + w * rows[_DZ2]
    return inside, z


def _inside(rows, px, py):
    """(inside, u, w): the barycentric test of `_surface_heights`, which reads only the rows
    up to _E2Y and _INV (so a batch can gather the rise rows for the inside pairs alone)."""
    dx = px - rows[_X0]
    dy = py - rows[_Y0]
    inv = rows[_INV]
    u = (dx * rows[_E2Y] - dy * rows[_E2X]) * inv
    w = (dy * rows[_E1X] - dx * rows[_E1Y]) * inv
    inside = (u >= -EDGE_TOLERANCE) & (w >= -EDGE_TOLERANCE) & (u + w <= 1.0 + EDGE_TOLERANCE)
    return inside, u, w


#: Resolution of the per-entry box pre-test: 1/128 of a grid cell per step. The packed test
#: holds four 8-bit fields, hi_x - qx, hi_y - qy, qx - lo_x, qy - lo_y, each offset by 128:
#: bit 7 of a field is set exactly when its difference is >= 0 (no field borrows from the next).
_BOX_STEPS = 128
_BOX_MASK = np.uint32(0x80808080)


def _stable_argsort(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") for non-negative integer keys; below 2**32 as two
    16-bit radix passes (NumPy's stable sort is a radix sort for 16-bit keys: about twice as
    fast as its merge sort on millions of keys)."""
    if keys.shape[0] == 0 or int(keys.max()) >= 1 << 32 or int(keys.min()) < 0:
        return np.argsort(keys, kind="stable")
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")
    return low[high]


def _as_points(points, z_max):
    try:
        p = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise VoxNavError(f"points must be numbers, (n, 2) or (n, 3), got {points!r}") from None
    if p.size == 0:  # no points (``[]`` too): no answers
        p = p.reshape(0, 2)
    if p.ndim == 1:
        p = p.reshape(1, -1)
    if p.ndim != 2 or p.shape[1] not in (2, 3):
        raise VoxNavError(f"points must have shape (n, 2) or (n, 3), got {p.shape}")
    if z_max is None:
        zm = None
    else:
        try:
            zm = np.broadcast_to(np.asarray(z_max, dtype=np.float64), (p.shape[0],))
        except (TypeError, ValueError):
            raise VoxNavError(
                f"z_max must be one number or one per point ({p.shape[0]}), got "
                f"{np.shape(z_max) or z_max!r}"
            ) from None
        if np.isnan(zm).any():  # every point's answer read NaN ("no surface"), without a word
            raise VoxNavError(
                "z_max must be numbers (an infinite one is no limit), not NaN: leave it out "
                "for no limit"
            )
    return p[:, 0], p[:, 1], zm


def brute_force_heights(verts, tris, points, z_max=None) -> HeightHits:
    """The slow reference: every point against every triangle (O(points x triangles)).

    Same surfaces and inside rule as `HeightIndex`; kept for tests and tiny inputs. Among
    equally high surfaces the lowest triangle index wins, as in the index.
    """
    ids, plane = _surfaces(verts, tris)
    px, py, zm = _as_points(points, z_max)
    n = px.shape[0]
    height = np.full(n, np.nan)
    tri = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        inside, z = _surface_heights(plane, px[i], py[i])
        if zm is not None:
            inside &= z <= zm[i]
        if inside.any():
            best = np.nonzero(inside)[0][np.argmax(z[inside])]
            height[i] = z[best]
            tri[i] = ids[best]
    return HeightHits(height, tri)


class HeightIndex:
    """A uniform X/Y grid over a triangle soup answering "highest surface under (x, y)".

    Build: O(triangles + cell entries) with one sort of the entries by cell. Memory: 80 bytes
    per triangle for the plane table, 8 per cell entry (triangle id and packed box), 8 per grid
    cell. Queries run in blocks of `QUERY_BLOCK` points, vectorized over (point, candidate
    triangle) pairs.
    """

    def __init__(self, verts, tris, cell_size: float | None = None):
        """verts float (n, 3) Z-up world [Units: wu]; tris int (m, 3); cell_size of the grid
        [Units: wu] [Limit: > 0] (default: `CELL_SIZE_FACTOR` times the triangles' median X/Y
        extent, never so small that the grid has more than 4 cells per triangle)."""
        if cell_size is not None:
            try:
                cell_size = float(cell_size)
            except (TypeError, ValueError):
                raise VoxNavError(
                    f"cell_size must be a positive number of world units, got {cell_size!r}"
                ) from None
            if not np.isfinite(cell_size) or cell_size <= 0:
                raise VoxNavError(
                    f"cell_size must be a positive number of world units, got {cell_size}"
                )
        self._ids, self._plane = _surfaces(verts, tris)
        plane = self._plane
        k = self._ids.shape[0]
        if k == 0:
            self.origin = np.zeros(2)
            self.cell_size = 1.0
            self.shape = (1, 1)
            self.cell_start = np.zeros(2, dtype=np.int64)
            self.entries = np.zeros(0, dtype=np.int32)
            return
        x0, y0 = plane[_X0], plane[_Y0]
        ex = (np.zeros(k), plane[_E1X], plane[_E2X])
        ey = (np.zeros(k), plane[_E1Y], plane[_E2Y])
        lo_x = x0 + np.minimum(np.minimum(ex[0], ex[1]), ex[2])
        hi_x = x0 + np.maximum(np.maximum(ex[0], ex[1]), ex[2])
        lo_y = y0 + np.minimum(np.minimum(ey[0], ey[1]), ey[2])
        hi_y = y0 + np.maximum(np.maximum(ey[0], ey[1]), ey[2])
        origin = np.array([lo_x.min(), lo_y.min()])
        extent = np.array([hi_x.max(), hi_y.max()]) - origin
        if cell_size is None:
            size = CELL_SIZE_FACTOR * float(np.median(np.maximum(hi_x - lo_x, hi_y - lo_y)))
            floor = float(np.sqrt(max(extent[0] * extent[1], 1e-12) / (4.0 * k)))
            cell_size = max(size, floor, 1e-6)
        while True:
            while (extent[0] / cell_size + 1) * (extent[1] / cell_size + 1) > MAX_GRID_CELLS:
                cell_size *= 2.0
            inv = 1.0 / cell_size
            # The columns by the queries' own formula, floor((p - origin) * inv): a point on
            # the far edge lands in the last column (``extent // cell_size`` can be one less:
            # 1.0 // 0.1 is 9.0, while 1.0 * (1 / 0.1) is 10.0, and such points got no height).
            gw = int(np.floor(extent[0] * inv)) + 1
            gh = int(np.floor(extent[1] * inv)) + 1
            # floor() is monotone: a point inside a triangle falls in a cell of its box's range.
            ix0 = ((lo_x - origin[0]) * inv).astype(np.int32)
            ix1 = ((hi_x - origin[0]) * inv).astype(np.int32)
            iy0 = ((lo_y - origin[1]) * inv).astype(np.int32)
            iy1 = ((hi_y - origin[1]) * inv).astype(np.int32)
            np.minimum(ix1, gw - 1, out=ix1)
            np.minimum(iy1, gh - 1, out=iy1)
            spans = (ix1 - ix0 + 1).astype(np.int64) * (iy1 - iy0 + 1)
            if int(spans.sum()) <= MAX_GRID_ENTRIES:
                break
            cell_size *= 2.0
        first = iy0 * gw + ix0
        # Renumber the surfaces in grid order of their boxes' first cell, so that a cell's
        # candidates sit close together in the plane table: the query's gathers then touch a
        # few cache lines per point instead of one per candidate (3x faster on 1M triangles).
        spatial = np.argsort(first, kind="stable")
        self._ids, self._plane = self._ids[spatial], np.take(plane, spatial, axis=1)
        ix0, ix1, iy0, iy1, first = (a[spatial] for a in (ix0, ix1, iy0, iy1, first))
        nx = ix1 - ix0 + 1
        per = nx * (iy1 - iy0 + 1)
        owner = np.repeat(np.arange(k, dtype=np.int32), per)
        local = np.arange(owner.shape[0], dtype=np.int32)
        local -= np.repeat((np.cumsum(per) - per).astype(np.int32), per)
        nxo = np.repeat(nx, per)  # nx[owner]: owner is arange(k) repeated per
        row, col = np.divmod(local, nxo)
        cell = np.repeat(first, per) + row * gw + col
        order = np.argsort(cell, kind="stable")  # nearly sorted already: merge sort is quick
        self.origin = origin
        self.cell_size = cell_size
        self._inv = inv
        self.shape = (gh, gw)
        self.entries = owner[order]
        # Per entry the triangle's box inside the cell, in 1/128 cell steps, packed for
        # `_box_pretest` (box widened by a margin far above EDGE_TOLERANCE's reach).
        scale = 1.0 + float(max(np.abs(origin).max(), np.abs(origin + extent).max()))
        tol = 1e-6 * scale
        steps = []
        for axis, (lo, hi, i0) in enumerate(((lo_x, hi_x, ix0), (lo_y, hi_y, iy0))):
            lo, hi = lo[spatial], hi[spatial]
            a = np.floor((((lo - tol) - origin[axis]) * inv - i0) * _BOX_STEPS)
            b = np.floor((((hi + tol) - origin[axis]) * inv - i0) * _BOX_STEPS)
            steps.append((a.astype(np.int32), b.astype(np.int32)))
        (qlx, qhx), (qly, qhy) = steps
        # A box starts in the entry's cell or before it and ends in it or after it: one clamp
        # each side suffices.
        # (np.repeat over the triangles' entry counts is qlx[owner], cheaper than a gather.)
        lox = np.maximum(np.repeat(qlx, per) - col * _BOX_STEPS, 0).astype(np.uint32)
        loy = np.maximum(np.repeat(qly, per) - row * _BOX_STEPS, 0).astype(np.uint32)
        hix = np.minimum(np.repeat(qhx, per) - col * _BOX_STEPS, _BOX_STEPS - 1)
        hiy = np.minimum(np.repeat(qhy, per) - row * _BOX_STEPS, _BOX_STEPS - 1)
        hix, hiy = hix.astype(np.uint32), hiy.astype(np.uint32)
        packed = (hix + _BOX_STEPS) | ((hiy + _BOX_STEPS) << 8)
        packed |= ((_BOX_STEPS - lox) << 16) | ((_BOX_STEPS - loy) << 24)
        self._entry_box = packed[order]
        self.cell_start = np.zeros(gw * gh + 1, dtype=np.int64)
        np.cumsum(np.bincount(cell, minlength=gw * gh), out=self.cell_start[1:])

    @property
    def triangle_count(self) -> int:
        """Surfaces indexed (triangles with X/Y area)."""
        return int(self._ids.shape[0])

    def heights(self, points, z_max=None) -> HeightHits:
        """The highest surface under each point.

        points float (n, 2) or (n, 3) Z-up world (a third column is ignored) [Units: wu];
        z_max: None, a scalar or float (n,): only surfaces with z <= z_max count (the ground
        under someone standing at that height). Points off the geometry, NaN points and points
        with no surface below z_max get NaN and triangle -1.
        """
        px, py, zm = _as_points(points, z_max)
        n = px.shape[0]
        height = np.full(n, np.nan)
        tri = np.full(n, -1, dtype=np.int64)
        for lo in range(0, n, QUERY_BLOCK):
            hi = min(n, lo + QUERY_BLOCK)
            block_zm = None if zm is None else zm[lo:hi]
            self._block(px[lo:hi], py[lo:hi], block_zm, height[lo:hi], tri[lo:hi])
        return HeightHits(height, tri)

    def height_at(self, x: float, y: float, z_max: float | None = None) -> float | None:
        """The single-point form: Z of the highest surface under (x, y), or None."""
        try:
            point = np.array([[x, y]], dtype=np.float64)
        except (TypeError, ValueError):
            raise VoxNavError(f"x and y must be numbers, got {x!r} and {y!r}") from None
        h = self.heights(point, z_max).height[0]
        return None if np.isnan(h) else float(h)

    def _block(self, px, py, zm, height, tri) -> None:
        """Fill height/tri (views of the batch's outputs) for one block of points."""
        if self._ids.shape[0] == 0:
            return
        gh, gw = self.shape
        with np.errstate(invalid="ignore"):
            gx = (px - self.origin[0]) * self._inv
            gy = (py - self.origin[1]) * self._inv
            fx = np.floor(gx)
            fy = np.floor(gy)
            on = (fx >= 0) & (fx < gw) & (fy >= 0) & (fy < gh)
        pts = np.nonzero(on)[0]
        cell = fy[pts].astype(np.int64) * gw + fx[pts].astype(np.int64)
        # Points in cell order: their candidates' plane rows are then read in ascending
        # order (spatially sorted surfaces), not at random (about 1.5x on 1M triangles).
        order = _stable_argsort(cell)
        pts, cell = pts[order], cell[order]
        start = self.cell_start[cell]
        count = self.cell_start[cell + 1] - start
        some = count > 0
        pts, start, count = pts[some], start[some], count[some]
        if pts.shape[0] == 0:
            return
        # Points in runs of at most PAIRS_PER_BLOCK (point, candidate) pairs (a point with more
        # candidates alone): 2,000 stacked floors paired 131,072 points with 4,000 triangles
        # each, 5e8 pairs, a MemoryError.
        ends = np.cumsum(count)
        lo = 0
        while lo < pts.shape[0]:
            base = int(ends[lo - 1]) if lo else 0
            hi = max(lo + 1, int(np.searchsorted(ends, base + PAIRS_PER_BLOCK, side="right")))
            self._pairs(px, py, gx, gy, fx, fy, zm, height, tri, pts[lo:hi], start[lo:hi],
                        count[lo:hi])  # fmt: skip
            lo = hi

    def _pairs(self, px, py, gx, gy, fx, fy, zm, height, tri, pts, start, count) -> None:
        """`_block`'s work for some of its points: pts (in cell order) with their candidates'
        first entry ``start`` and ``count``."""
        first = np.cumsum(count) - count
        pair_pt = np.repeat(pts, count)
        pair_entry = np.repeat(start - first, count) + np.arange(pair_pt.shape[0])
        # The box pre-test: the point's position in its cell against each candidate's box.
        qx = np.floor((gx[pts] - fx[pts]) * _BOX_STEPS).astype(np.int64)
        qy = np.floor((gy[pts] - fy[pts]) * _BOX_STEPS).astype(np.int64)
        point_box = (((qx << 16) + (qy << 24) - qx - (qy << 8)) & 0xFFFFFFFF).astype(np.uint32)
        fields = self._entry_box[pair_entry] + np.repeat(point_box, count)
        passed = np.flatnonzero((fields & _BOX_MASK) == _BOX_MASK)
        pair_entry, pair_pt = pair_entry[passed], pair_pt[passed]
        k = self.entries[pair_entry].astype(np.int64)  # take() is slower with int32 indices
        # The barycentric test first (7 of the 10 plane rows); the heights of inside pairs only.
        rows = [None] * 10
        for r in (_X0, _Y0, _E1X, _E1Y, _E2X, _E2Y, _INV):
            rows[r] = self._plane[r].take(k)
        inside, u, w = _inside(rows, px[pair_pt], py[pair_pt])
        on = np.flatnonzero(inside)
        ko = k[on]
        z_on = self._plane[_Z0].take(ko) + u[on] * self._plane[_DZ1].take(ko)
        z_on += w[on] * self._plane[_DZ2].take(ko)
        po = pair_pt[on]
        if zm is not None:
            keep = z_on <= zm[po]
            po, ko, z_on = po[keep], ko[keep], z_on[keep]
        if po.shape[0] == 0:
            return
        # Pairs are grouped point by point: the highest surface of each point's inside pairs,
        # and among equally high ones the lowest input triangle index.
        starts = np.flatnonzero(np.r_[True, po[1:] != po[:-1]])
        sizes = np.diff(np.r_[starts, po.shape[0]])
        best = np.maximum.reduceat(z_on, starts)
        reaches = z_on == np.repeat(best, sizes)
        tri_ids = np.where(reaches, self._ids[ko], np.iinfo(np.int64).max)
        lowest = np.minimum.reduceat(tri_ids, starts)
        pts = po[starts]
        height[pts] = best
        tri[pts] = lowest
