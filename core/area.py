"""Area stage on the compact heightfield: erosion by the agent radius, median filter, volume marks.

Every function takes a :class:`~core.compact.CompactHeightfield` and returns a NEW ``area``
array, uint8 (n,) (one value per compact span; 0 = null, 63 = walkable, 1..62 user types); the
input is never modified. Assign the result to ``chf.area`` yourself.

Also home of :func:`chamfer_distance`, the two-pass 2/3 chamfer transform in raster order that
Recast uses both for erosion (here) and for the region distance field (core/regions.py).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from .compact import CompactHeightfield, all_of_4
from .context import BuildContext
from .errors import VoxNavError

NULL_AREA = 0
#: Sentinel distance of "no such neighbour"; larger than any real distance (<= 0xFFFF).
_INF = 1 << 30
#: Offset that keeps the per-path running minima apart (see _ChamferPlan).
_SEG = 1 << 32


def _check_chf(chf: CompactHeightfield) -> int:
    n = int(chf.y.shape[0])
    if np.shape(chf.neighbor) != (n, 4) or np.shape(chf.area) != (n,):
        raise VoxNavError(
            f"compact heightfield is inconsistent: {n} spans but neighbor has shape "
            f"{np.shape(chf.neighbor)} and area {np.shape(chf.area)}; build it with "
            "build_compact_heightfield"
        )
    if np.shape(chf.cell_start) != (chf.width * chf.height + 1,):
        raise VoxNavError(
            f"compact heightfield cell_start has shape {np.shape(chf.cell_start)}, expected "
            f"({chf.width * chf.height + 1},)"
        )
    return n


def _neighbors_with_sentinel(chf: CompactHeightfield) -> np.ndarray:
    """int64 (n+1, 4): neighbour span per direction, ``n`` (a sentinel row) when unconnected."""
    n = int(chf.y.shape[0])
    nb = np.asarray(chf.neighbor, dtype=np.int64)
    out = np.full((n + 1, 4), n, dtype=np.int64)
    out[:n] = np.where(nb < 0, n, nb)
    return out


class _ChamferPlan:
    """Index tables for one raster pass of the chamfer transform.

    Pass 1 walks rows bottom-up (y ascending) and each row left to right; a span takes the
    minimum of its own value, its left neighbour + 2 (same row, already final), and three spans
    of the previous row: down + 2, left-then-down + 3, down-then-right + 3 (Recast's L-shaped
    diagonal paths). Pass 2 mirrors it (y descending, right to left; right + 2, up + 2,
    right-then-up + 3, up-then-left + 3).

    The previous-row terms are gathered for the whole row at once. The same-row term is a
    min-plus scan along "left" links, which form a forest (two spans of one column may share a
    left neighbour). Every root-to-leaf path of that forest is laid out as one segment of
    ``seq``; a segmented running minimum of ``value - 2*x`` along each segment is exactly the
    sequential left-to-right recurrence ``d = min(c, d_left + 2)``. Shared path prefixes are
    duplicated, so every copy of a span gets the same value.
    """

    def __init__(self, chf: CompactHeightfield, nbx: np.ndarray, forward: bool):
        n = int(chf.y.shape[0])
        same, first, second, diag_a, diag_b = (0, 3, 2, 3, 2) if forward else (2, 1, 0, 1, 0)
        # Previous-row sources: straight (cost 2) and the two L-shaped diagonals (cost 3).
        # One contiguous array per source: a min over a short middle axis is slow.
        self.prev = (nbx[:n, first], nbx[nbx[:n, same], diag_a], nbx[nbx[:n, first], diag_b])
        x2 = 2 * np.asarray(chf.span_x, dtype=np.int64)
        self.x2 = x2 if forward else -x2
        parent = nbx[:, same].copy()  # sentinel n maps to n
        # Leaves: spans that are nobody's same-row parent.
        is_parent = np.zeros(n + 1, dtype=bool)
        is_parent[parent[:n]] = True
        leaves = np.nonzero(~is_parent[:n])[0]
        # Binary-lifting tables: lift[k][i] = ancestor 2**k steps up (n when there is none).
        lift = [parent]
        while (lift[-1][:n] != n).any():
            lift.append(lift[-1][lift[-1]])
        # Depth by walking the lifting table from the top bit down.
        depth = np.zeros(n + 1, dtype=np.int64)
        cur = np.arange(n + 1, dtype=np.int64)
        for k in range(len(lift) - 1, -1, -1):
            step = lift[k][cur]
            move = step != n
            depth[move] += 1 << k
            cur = np.where(move, step, cur)
        depth = depth[:n]
        # Paths root..leaf for every leaf (leaves in span order keep rows contiguous).
        lengths = depth[leaves] + 1
        total = int(lengths.sum())
        seg = np.repeat(np.arange(leaves.shape[0], dtype=np.int64), lengths)
        starts = np.cumsum(lengths) - lengths
        pos = np.arange(total, dtype=np.int64) - starts[seg]
        up = depth[leaves][seg] - pos  # ancestor distance from the leaf
        node = leaves[seg]
        for k in range(len(lift)):
            bit = (up >> k) & 1
            if bit.any():
                node = np.where(bit == 1, lift[k][node], node)
        self.seq = node
        self.seg_off = seg * _SEG
        # Rows: span range and path range per row.
        span_row = np.asarray(chf.span_y, dtype=np.int64)
        rows = np.arange(chf.height + 1)
        self.row_span = np.searchsorted(span_row, rows)
        self.row_seq = np.searchsorted(span_row[leaves][seg] if total else seg, rows)
        if forward:
            self.row_order = range(chf.height)
        else:
            self.row_order = range(chf.height - 1, -1, -1)
        self.seq_local = self.seq - self.row_span[span_row[self.seq]] if total else self.seq
        self.seq_x2 = self.x2[self.seq]


def _run_pass(plan: _ChamferPlan, d: np.ndarray) -> None:
    (straight, diag_a, diag_b), x2 = plan.prev, plan.x2
    seq, seq_local, seg_off, seq_x2 = plan.seq, plan.seq_local, plan.seg_off, plan.seq_x2
    row_span, row_seq = plan.row_span, plan.row_seq
    for r in plan.row_order:
        a, b = row_span[r], row_span[r + 1]
        if a == b:
            continue
        c = np.minimum(d[diag_a[a:b]], d[diag_b[a:b]])
        c += 3
        np.minimum(c, d[straight[a:b]] + 2, out=c)
        np.minimum(c, d[a:b], out=c)
        c -= x2[a:b]
        p, q = row_seq[r], row_seq[r + 1]
        s = c[seq_local[p:q]] - seg_off[p:q]
        np.minimum.accumulate(s, out=s)
        s += seg_off[p:q]
        s += seq_x2[p:q]
        d[seq[p:q]] = s


def chamfer_distance(chf: CompactHeightfield, init: np.ndarray) -> np.ndarray:
    """Recast's two-pass chamfer transform (2 straight, 3 diagonal) over the span graph.

    ``init``: (n,) integer start values (0 on boundaries, a large value elsewhere; at most
    0xFFFF). Returns int64 (n,), bit-identical to Recast's in-place raster passes (see
    :class:`_ChamferPlan` for why the vectorized form is exact). Rows are a Python loop (the
    recurrence is sequential from row to row); everything inside a row is vectorized.
    """
    n = _check_chf(chf)
    d = np.empty(n + 1, dtype=np.int64)
    d[:n] = np.asarray(init, dtype=np.int64)
    d[n] = _INF
    for plan in _chamfer_plans(chf):
        _run_pass(plan, d)
    return d[:n]


#: Pass plans of recent compact heightfields, keyed by the identity of their link array:
#: erosion and the distance field run on the same links, a tile cache rebuilds the same tiles'
#: distance fields again and again, and building the plans is most of a chamfer's cost. The
#: entries hold weak references (an entry dies with its heightfield's arrays, which no stage
#: modifies) and at most `_PLAN_CACHE_SPANS` spans in all (the newest entry always stays).
_PLAN_CACHE: OrderedDict[int, tuple[tuple, tuple[_ChamferPlan, _ChamferPlan], int]] = OrderedDict()
_PLAN_CACHE_SPANS = 1 << 18


#: Guards the cache (tiles may bake in threads); re-entrant because a weakref callback may run
#: during a garbage collection inside the guarded block.
_PLAN_LOCK = threading.RLock()


def _chamfer_plans(chf: CompactHeightfield) -> tuple[_ChamferPlan, _ChamferPlan]:
    key = id(chf.neighbor)
    with _PLAN_LOCK:
        entry = _PLAN_CACHE.get(key)
        if entry is not None:
            refs, plans, _ = entry
            if refs[0]() is chf.neighbor and refs[1]() is chf.span_x and refs[2]() is chf.span_y:
                _PLAN_CACHE.move_to_end(key)
                return plans
            _PLAN_CACHE.pop(key, None)
    nbx = _neighbors_with_sentinel(chf)
    plans = (_ChamferPlan(chf, nbx, True), _ChamferPlan(chf, nbx, False))
    try:
        refs = tuple(
            weakref.ref(a, _forget_plans(key)) for a in (chf.neighbor, chf.span_x, chf.span_y)
        )
    except TypeError:  # not weakly referenceable (a plain sequence): do not cache
        return plans
    with _PLAN_LOCK:
        _PLAN_CACHE[key] = (refs, plans, int(chf.y.shape[0]))
        total = sum(e[2] for e in _PLAN_CACHE.values())
        while len(_PLAN_CACHE) > 1 and total > _PLAN_CACHE_SPANS:
            total -= _PLAN_CACHE.popitem(last=False)[1][2]
    return plans


def _forget_plans(key: int):
    """A weakref callback dropping the cache entry ``key`` once one of its arrays dies."""

    def forget(ref) -> None:
        with _PLAN_LOCK:
            entry = _PLAN_CACHE.get(key)
            if entry is not None and any(r is ref for r in entry[0]):
                _PLAN_CACHE.pop(key, None)

    return forget


def erode_walkable_area(
    chf: CompactHeightfield, radius: int, *, progress=None, ctx: BuildContext | None = None
) -> np.ndarray:
    """Null every walkable span closer than ``radius`` cells to an unwalkable boundary.

    [Recast: rcErodeWalkableArea]

    Rule: a span is a boundary (distance 0) if its area is null, or one of its 4 directions is
    unconnected or leads to a null-area span; others start at 255. Two chamfer passes in raster
    order (see :func:`chamfer_distance`; straight steps cost 2, diagonal steps 3, capped at 255)
    give the distance; a span whose distance is below ``2 * radius`` becomes null.

    Parameters:
        chf: compact heightfield (not modified).
        radius: erosion radius, normally the agent radius. [Units: cells] [Limit: 0..127]
        progress: optional callable ``progress(fraction: float, message: str)``.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    radius = int(radius)
    if not 0 <= radius <= 127:
        raise VoxNavError(
            f"erosion radius {radius} cells is out of range 0..127; lower agent_radius or "
            "raise cell_size"
        )
    if progress is not None:
        progress(0.2, "erode: boundaries")
    out = erode_by_distance(chf.area, erosion_distance(chf), radius)
    if progress is not None:
        progress(1.0, "erode: done")
    return out


def erosion_distance(chf: CompactHeightfield) -> np.ndarray:
    """The radius-independent part of `erode_walkable_area`: each span's chamfer distance to
    the nearest boundary (straight step 2, diagonal 3, capped at 255). [Units: half cells]

    Returns an integer array (n,); `erode_by_distance` thresholds it for a radius, so agents
    that share a compact heightfield and differ in radius compute it once.
    """
    n = _check_chf(chf)
    area = np.asarray(chf.area, dtype=np.uint8)
    nbx = _neighbors_with_sentinel(chf)
    area_x = np.append(area, np.uint8(NULL_AREA))  # the sentinel counts as null
    inner = (area != NULL_AREA) & all_of_4(area_x[nbx[:n]] != NULL_AREA)
    init = np.where(inner, 255, 0)
    return chamfer_distance(chf, init)


def erode_by_distance(area: np.ndarray, dist: np.ndarray, radius: int) -> np.ndarray:
    """``area`` (uint8 (n,)) with every span whose `erosion_distance` is below ``2 * radius``
    nulled. ``radius`` [Units: cells] [Limit: 0..127]. Returns a new uint8 array."""
    if not 0 <= int(radius) <= 127:
        raise VoxNavError(
            f"erosion radius {int(radius)} cells is out of range 0..127; lower agent_radius or "
            "raise cell_size"
        )
    out = np.asarray(area, dtype=np.uint8).copy()
    out[np.asarray(dist) < 2 * int(radius)] = NULL_AREA
    return out


def median_filter_walkable_area(chf: CompactHeightfield, *, progress=None) -> np.ndarray:
    """Median of each walkable span's area over its 3x3 neighbourhood.

    [Recast: rcMedianFilterWalkableArea]

    Rule: null spans stay null. For a walkable span, nine samples start as its own area; for
    each connected direction d, sample 2d becomes the neighbour's area and sample 2d+1 the area
    of that neighbour's neighbour in direction (d+1) % 4 (Recast's L-shaped diagonal), each only
    if that area is not null. The result is the 5th smallest sample.

    Returns:
        uint8 (n,): the new area array.
    """
    n = _check_chf(chf)
    area = np.asarray(chf.area, dtype=np.uint8)
    nbx = _neighbors_with_sentinel(chf)
    area_x = np.append(area, np.uint8(NULL_AREA))
    samples = np.repeat(area[:, None], 9, axis=1)
    for d in range(4):
        a = nbx[:n, d]
        va = area_x[a]
        samples[:, 2 * d] = np.where(va != NULL_AREA, va, samples[:, 2 * d])
        b = nbx[a, (d + 1) & 3]  # sentinel row of nbx points to the sentinel
        vb = area_x[b]
        samples[:, 2 * d + 1] = np.where(vb != NULL_AREA, vb, samples[:, 2 * d + 1])
    med = np.partition(samples, 4, axis=1)[:, 4]
    out = np.where(area == NULL_AREA, area, med).astype(np.uint8)
    if progress is not None:
        progress(1.0, "median filter: done")
    return out


def _grid_range(chf, lo: float, hi: float, axis: int):
    """Recast's ``(int)((v - bmin) / cs)`` in float32 for both ends along X (0) or Y (1)."""
    cs = np.float32(chf.cs)
    b = np.float32(chf.bmin[axis])
    i0 = int((np.float32(lo) - b) / cs)
    i1 = int((np.float32(hi) - b) / cs)
    return i0, i1


def _height_range(chf, lo: float, hi: float):
    ch = np.float32(chf.ch)
    b = np.float32(chf.bmin[2])
    return int((np.float32(lo) - b) / ch), int((np.float32(hi) - b) / ch)


def _spans_in_rect(chf, x0: int, x1: int, y0: int, y1: int):
    """Span indices of the columns x0..x1, y0..y1 (inclusive, clamped), or None if outside."""
    if x1 < 0 or x0 >= chf.width or y1 < 0 or y0 >= chf.height:
        return None
    x0, x1 = max(x0, 0), min(x1, chf.width - 1)
    y0, y1 = max(y0, 0), min(y1, chf.height - 1)
    xs = np.asarray(chf.span_x)
    ys = np.asarray(chf.span_y)
    start = np.asarray(chf.cell_start)
    lo, hi = int(start[y0 * chf.width]), int(start[(y1 + 1) * chf.width])
    idx = np.arange(lo, hi, dtype=np.int64)
    keep = (xs[lo:hi] >= x0) & (xs[lo:hi] <= x1) & (ys[lo:hi] >= y0) & (ys[lo:hi] <= y1)
    return idx[keep]


def _check_area_id(area_id: int) -> int:
    area_id = int(area_id)
    if not 0 <= area_id <= 63:
        raise VoxNavError(f"area id {area_id} is out of range 0..63 (0 = null, 63 = walkable)")
    return area_id


def mark_box_area(chf: CompactHeightfield, bmin, bmax, area_id: int) -> np.ndarray:
    """Area ids after marking the walkable spans whose floor lies inside an axis-aligned box.

    [Recast: rcMarkBoxArea]

    ``bmin``/``bmax``: float (3,) world corners, Z-up (x, y, z). [Units: wu] Cells are
    ``(int)((v - chf.bmin) / cs)`` per axis in float32 (truncation toward zero), floors
    ``(int)((z - chf.bmin.z) / ch)``, both ends inclusive; null spans stay null.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    bmin = np.asarray(bmin, dtype=np.float32).reshape(3)
    bmax = np.asarray(bmax, dtype=np.float32).reshape(3)
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, bmin[0], bmax[0], 0)
    y0, y1 = _grid_range(chf, bmin[1], bmax[1], 1)
    z0, z1 = _height_range(chf, bmin[2], bmax[2])
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    fy = np.asarray(chf.y, dtype=np.int64)[idx]
    hit = idx[(fy >= z0) & (fy <= z1) & (out[idx] != NULL_AREA)]
    out[hit] = area_id
    return out


def mark_convex_poly_area(
    chf: CompactHeightfield, verts_xy, zmin: float, zmax: float, area_id: int
) -> np.ndarray:
    """Area ids after marking walkable spans inside a vertical prism over a convex polygon.

    [Recast: rcMarkConvexPolyArea]

    ``verts_xy``: float (m, 2) or (m, 3) polygon in world X/Y (Z-up; a third column is
    ignored). [Units: wu] ``zmin``/``zmax``: world heights of the prism. [Units: wu] A span is
    marked if its area is not null, its floor is within the prism's height cells (inclusive)
    and its cell centre is inside the polygon by Recast's crossing test in float32.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    v = np.asarray(verts_xy, dtype=np.float32)
    if v.ndim != 2 or v.shape[1] not in (2, 3) or v.shape[0] < 3:
        raise VoxNavError(
            f"verts_xy has shape {v.shape}; expected (m, 2) polygon corners with m >= 3"
        )
    vx, vy = v[:, 0], v[:, 1]
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, vx.min(), vx.max(), 0)
    y0, y1 = _grid_range(chf, vy.min(), vy.max(), 1)
    z0, z1 = _height_range(chf, zmin, zmax)
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    fy = np.asarray(chf.y, dtype=np.int64)[idx]
    idx = idx[(out[idx] != NULL_AREA) & (fy >= z0) & (fy <= z1)]
    cs = np.float32(chf.cs)
    px = np.float32(chf.bmin[0]) + (np.asarray(chf.span_x)[idx].astype(np.float32) + 0.5) * cs
    py = np.float32(chf.bmin[1]) + (np.asarray(chf.span_y)[idx].astype(np.float32) + 0.5) * cs
    px = px.astype(np.float32)[:, None]
    py = py.astype(np.float32)[:, None]
    j = np.roll(np.arange(v.shape[0]), 1)
    xi, yi, xj, yj = vx[None, :], vy[None, :], vx[j][None, :], vy[j][None, :]
    straddle = (yi > py) != (yj > py)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross_x = (xj - xi) * (py - yi) / (yj - yi) + xi
    flip = straddle & ~(px >= cross_x)
    inside = (flip.sum(axis=1) & 1) == 1
    out[idx[inside]] = area_id
    return out


def mark_cylinder_area(
    chf: CompactHeightfield, center, radius: float, height: float, area_id: int
) -> np.ndarray:
    """Area ids after marking walkable spans inside an upright cylinder.

    [Recast: rcMarkCylinderArea]

    ``center``: float (3,) world position of the bottom centre, Z-up. [Units: wu]
    ``radius``, ``height``: [Units: wu] [Limit: >= 0]. A column is inside if its cell centre is
    strictly closer than ``radius`` (float32); its non-null spans whose floor cell is within
    ``(int)((center.z - bmin.z)/ch) .. (int)((center.z + height - bmin.z)/ch)`` are marked.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    c = np.asarray(center, dtype=np.float32).reshape(3)
    r = np.float32(radius)
    if not r >= 0 or not np.float32(height) >= 0:
        raise VoxNavError(f"cylinder radius {radius} and height {height} must be >= 0")
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, c[0] - r, c[0] + r, 0)
    y0, y1 = _grid_range(chf, c[1] - r, c[1] + r, 1)
    z0, z1 = _height_range(chf, c[2], c[2] + np.float32(height))
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    cs = np.float32(chf.cs)
    cx = (np.float32(chf.bmin[0]) + (chf.span_x[idx].astype(np.float32) + 0.5) * cs).astype(
        np.float32
    )
    cy = (np.float32(chf.bmin[1]) + (chf.span_y[idx].astype(np.float32) + 0.5) * cs).astype(
        np.float32
    )
    dx = (cx - c[0]).astype(np.float32)
    dy = (cy - c[1]).astype(np.float32)
    near = (dx * dx + dy * dy) < r * r
    fy = np.asarray(chf.y, dtype=np.int64)[idx]
    hit = idx[near & (out[idx] != NULL_AREA) & (fy >= z0) & (fy <= z1)]
    out[hit] = area_id
    return out
