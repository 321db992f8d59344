"""Detour's queries vectorized across many queries (arrays in, arrays out), Y-up frame.

Each function here computes, for every query at once, exactly what the literal single-query
port in `core.nav.query` computes for one (same float32 operations in the same order; ties
resolved the same way: Detour's "first strictly smaller wins" scans become first-minimum
argmins over candidates laid out in Detour's visiting order). The loops that remain run over
polygon edges (<= 6), detail triangles of one polygon, link slots of one polygon, tiles, or ray
steps, never over queries.

All positions are float32 (n, 3) in Detour's Y-up frame; refs are NavMesh refs (-1 = none).
"""

from __future__ import annotations

import numpy as np

from .navdata import POLYTYPE_OFFMESH_CONNECTION, _ranges
from .navmesh import SIDE_INTERNAL, NavMesh

F32 = np.float32
_ZERO = F32(0)
_ONE = F32(1)
FLT_MAX = F32(3.4028234663852886e38)
_EPS_HEIGHT = F32(1e-6)
_EPS_SEG = F32(0.000001)
#: Query/candidate pairs handled per chunk (bounds the temporary arrays).
CHUNK = 1 << 21


def _cached(nav: NavMesh, key: str, source, build):
    """A per-navmesh table built once by `build()`, rebuilt when `source` (an array it derives
    from) is replaced."""
    hit = getattr(nav, key, None)
    if hit is not None and hit[0] is source:
        return hit[1]
    value = build()
    setattr(nav, key, (source, value))
    return value


def _edge_table(nav: NavMesh) -> np.ndarray:
    """Per polygon and edge slot i (vertex i and its predecessor j): float32 (npolys, 5, 6)
    rows xi, zi, zj, xj - xi, zj - zi as dtPointInPolygon reads them (query-independent, so
    computed once). Slots i >= nv get zi = zj = +inf: they never cross any z."""

    def build():
        v = nav.poly_pos.astype(F32)
        nv = nav.poly_vert_count.astype(np.int64)
        i = np.arange(6)[None, :]
        j = np.where(i == 0, nv[:, None] - 1, i - 1)
        j = np.clip(j, 0, 5)
        rows = np.arange(v.shape[0])[:, None]
        vi, vj = v[:, :6], v[rows, j]
        valid = i < nv[:, None]
        table = np.zeros((v.shape[0], 5, 6), dtype=F32)
        table[:, 0] = np.where(valid, vi[..., 0], _ZERO)
        table[:, 1] = np.where(valid, vi[..., 2], np.inf)
        table[:, 2] = np.where(valid, vj[..., 2], np.inf)
        table[:, 3] = np.where(valid, vj[..., 0] - vi[..., 0], _ZERO)
        table[:, 4] = np.where(valid, vj[..., 2] - vi[..., 2], _ONE)
        return table

    return _cached(nav, "_edge_table_cache", nav.poly_pos, build)


def point_in_polygon(nav: NavMesh, refs: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """dtPointInPolygon of pos[m] in polygon refs[m] (2D, x/z) -> bool (m,).

    All edges of all queries at once: the crossing count's parity is Detour's toggled flag."""
    e = _edge_table(nav)[refs]  # (m, 5, 6)
    px, pz = pos[:, 0:1], pos[:, 2:3]
    xi, zi, zj, dx, dz = e[:, 0], e[:, 1], e[:, 2], e[:, 3], e[:, 4]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = dx * (pz - zi) / dz + xi
    crosses = (zi > pz) != (zj > pz)
    crosses &= px < x
    return (np.count_nonzero(crosses, axis=1) & 1).astype(bool)


def _detail_tri_table(nav: NavMesh) -> np.ndarray:
    """Per detail triangle the query-independent terms of dtClosestHeightPointTriangle, float32
    (ntris, 8): ax, az, ay, v0x, v0z, v1x, v1z as Detour computes them, then denom; v0y and v1y
    in a second (ntris, 2) array. Returned as (terms, ys)."""

    def build():
        t = nav.detail_tri_pos.astype(F32)
        a, b, c = t[:, 0], t[:, 1], t[:, 2]
        v0x, v0y, v0z = c[:, 0] - a[:, 0], c[:, 1] - a[:, 1], c[:, 2] - a[:, 2]
        v1x, v1y, v1z = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1], b[:, 2] - a[:, 2]
        denom = v0x * v1z - v0z * v1x
        terms = np.stack([a[:, 0], a[:, 2], a[:, 1], v0x, v0z, v1x, v1z, denom], axis=1)
        return terms.astype(F32), np.stack([v0y, v1y], axis=1).astype(F32)

    return _cached(nav, "_detail_tri_table_cache", nav.detail_tri_pos, build)


def poly_height(nav: NavMesh, refs: np.ndarray, pos: np.ndarray):
    """dtNavMesh::getPolyHeight for ground polygons -> (ok bool (m,), height float32 (m,)).

    The (query, detail triangle) pairs of all queries are tested at once (flat, no padding);
    each query takes its first hit in triangle order, as Detour's loop returns on it."""
    m = refs.shape[0]
    height = np.zeros(m, dtype=F32)
    if m == 0:
        return np.zeros(0, dtype=bool), height
    ok = point_in_polygon(nav, refs, pos)
    ok &= nav.poly_type[refs] != POLYTYPE_OFFMESH_CONNECTION
    idx = np.nonzero(ok)[0]
    if idx.shape[0] == 0:
        return ok, height
    terms, ys = _detail_tri_table(nav)
    r = refs[idx]
    counts = nav.detail_tri_count[r].astype(np.int64)
    rows = _ranges(nav.detail_tri_base[r], counts)
    owner = np.repeat(np.arange(idx.shape[0]), counts)
    tt = terms[rows]
    p = pos[idx[owner]]
    v2x = p[:, 0] - tt[:, 0]
    v2z = p[:, 2] - tt[:, 1]
    v0x, v0z, v1x, v1z, denom = tt[:, 3], tt[:, 4], tt[:, 5], tt[:, 6], tt[:, 7]
    u = v1z * v2x - v1x * v2z
    v = v0x * v2z - v0z * v2x
    neg = denom < _ZERO
    denom = np.where(neg, -denom, denom)
    u = np.where(neg, -u, u)
    v = np.where(neg, -v, v)
    hit = (denom >= _EPS_HEIGHT) & (u >= _ZERO) & (v >= _ZERO) & ((u + v) <= denom)
    hits = np.nonzero(hit)[0]
    # First hit per query: assigning in reverse leaves each query's smallest pair index.
    first = np.full(idx.shape[0], -1, dtype=np.int64)
    first[owner[hits[::-1]]] = hits[::-1]
    got = first >= 0
    f = first[got]
    yy = ys[rows[f]]
    h = tt[f, 2] + (yy[:, 0] * u[f] + yy[:, 1] * v[f]) / denom[f]
    height[idx[got]] = h
    miss = idx[~got]
    if miss.shape[0]:
        height[miss] = closest_on_detail_edges(nav, refs[miss], pos[miss], False)[:, 1]
    return ok, height


def dist_pt_seg_sqr_2d(pt, p, q):
    """dtDistancePtSegSqr2D on arrays (..., 3) -> (d, t)."""
    pqx = q[..., 0] - p[..., 0]
    pqz = q[..., 2] - p[..., 2]
    dx = pt[..., 0] - p[..., 0]
    dz = pt[..., 2] - p[..., 2]
    d = pqx * pqx + pqz * pqz
    t = pqx * dx + pqz * dz
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d > _ZERO, t / np.where(d > _ZERO, d, _ONE), t)
    t = np.where(t < _ZERO, _ZERO, np.where(t > _ONE, _ONE, t)).astype(F32)
    dx = p[..., 0] + t * pqx - pt[..., 0]
    dz = p[..., 2] + t * pqz - pt[..., 2]
    return dx * dx + dz * dz, t


def lerp(a, b, t):
    """dtVlerp on arrays: a + (b - a) * t, t broadcast over the last axis."""
    return a + (b - a) * t[..., None]


def _detail_edges(nav: NavMesh, only_boundary: bool):
    """Per polygon, the detail edges closestPointOnDetailEdges scans, in Detour's order
    (triangle by triangle, edges (2,0), (0,1), (1,2)): (edge_start (npolys+1,), a, b (E, 3)).
    Cached on the navmesh."""
    key = "_detail_edges_cache_" + ("b" if only_boundary else "a")
    cached = getattr(nav, key, None)
    if cached is not None and cached[0] is nav.detail_tri_pos:
        return cached[1]
    nt = nav.detail_tris.shape[0]
    ids = nav.detail_tris.astype(np.int64)
    flags = ids[:, 3]
    keep = []
    for j, k in ((2, 0), (0, 1), (1, 2)):
        boundary = ((flags >> (j * 2)) & 0x3) & 1
        if only_boundary:
            keep.append(boundary != 0)
        else:
            keep.append((boundary != 0) | (ids[:, j] >= ids[:, k]))
    keep_arr = np.stack(keep, axis=1).reshape(-1)  # (nt * 3,) triangle-major
    tri_of = np.repeat(np.arange(nt), 3)[keep_arr]
    jj = np.tile(np.array([2, 0, 1]), nt)[keep_arr]
    kk = np.tile(np.array([0, 1, 2]), nt)[keep_arr]
    a = nav.detail_tri_pos[tri_of, jj]
    b = nav.detail_tri_pos[tri_of, kk]
    # Edges per polygon: the kept edges of its triangle range [tri_base, tri_base + count).
    per_tri = np.zeros(nt + 1, dtype=np.int64)
    np.cumsum(keep_arr.reshape(nt, 3).sum(axis=1), out=per_tri[1:])
    lo = per_tri[nav.detail_tri_base]
    hi = per_tri[nav.detail_tri_base + nav.detail_tri_count]
    result = (lo, hi - lo, a.astype(F32), b.astype(F32))
    setattr(nav, key, (nav.detail_tri_pos, result))
    return result


def first_min_per_group(values: np.ndarray, counts: np.ndarray):
    """For consecutive groups of `counts` values: index (into values) of each group's first
    minimum (Detour's ``if (d < best)`` scan), -1 for an empty group."""
    m = counts.shape[0]
    out = np.full(m, -1, dtype=np.int64)
    nonempty = counts > 0
    if not np.any(nonempty):
        return out
    starts = np.cumsum(counts) - counts
    s = starts[nonempty]
    mins = np.minimum.reduceat(values, s)
    group = np.repeat(np.arange(m), counts)
    full_min = np.full(m, np.inf, dtype=values.dtype)
    full_min[nonempty] = mins
    hits = np.nonzero(values == full_min[group])[0][::-1]
    out[group[hits]] = hits
    return out


def closest_on_detail_edges(nav: NavMesh, refs, pos, only_boundary: bool) -> np.ndarray:
    """closestPointOnDetailEdges for each (ref, pos) -> float32 (m, 3)."""
    m = refs.shape[0]
    if m == 0:
        return np.zeros((0, 3), dtype=F32)
    lo, count, ea, eb = _detail_edges(nav, only_boundary)
    counts = count[refs]
    rows = _ranges(lo[refs], counts)
    rep = np.repeat(np.arange(m), counts)
    d, t = dist_pt_seg_sqr_2d(pos[rep], ea[rows], eb[rows])
    best = first_min_per_group(d, counts)
    out = pos.astype(F32, copy=True)
    ok = best >= 0
    b = best[ok]
    out[ok] = lerp(ea[rows[b]], eb[rows[b]], t[b]).astype(F32)
    return out


def closest_point_on_poly(nav: NavMesh, refs, pos):
    """dtNavMesh::closestPointOnPoly -> (closest float32 (m, 3), over_poly bool (m,))."""
    ok, h = poly_height(nav, refs, pos)
    closest = pos.astype(F32, copy=True)
    closest[ok, 1] = h[ok]
    out = np.nonzero(~ok)[0]
    if out.shape[0]:
        closest[out] = closest_on_detail_edges(nav, refs[out], pos[out], True)
    return closest, ok


def _quantized_box(nav: NavMesh, tile: int, qmin, qmax):
    data = nav.tiles[tile]
    tbmin, tbmax = nav.tile_bmin[tile], nav.tile_bmax[tile]
    qfac = F32(data.bv_quant_factor)
    lo = np.minimum(np.maximum(qmin, tbmin), tbmax) - tbmin
    hi = np.minimum(np.maximum(qmax, tbmin), tbmax) - tbmin
    # (unsigned short)(float): truncation; the clamp keeps values in [0, 65535].
    bmin = (qfac * lo).astype(np.int64) & 0xFFFE
    bmax = ((qfac * hi + _ONE).astype(np.int64) | 1) & 0xFFFF
    return bmin, bmax


def query_polygon_pairs(nav: NavMesh, centers, halves, pass_flags):
    """queryPolygons for many boxes -> (query ids, refs) in Detour's visiting order per query.

    centers, halves: float32 (n, 3); pass_flags: bool (npolys,) the filter's verdict.
    """
    qmin = (centers - halves).astype(F32)
    qmax = (centers + halves).astype(F32)
    p = nav.params
    with np.errstate(invalid="ignore"):
        tminx = np.floor((qmin[:, 0] - p.orig[0]) / F32(p.tile_width))
        tminy = np.floor((qmin[:, 2] - p.orig[2]) / F32(p.tile_height))
        tmaxx = np.floor((qmax[:, 0] - p.orig[0]) / F32(p.tile_width))
        tmaxy = np.floor((qmax[:, 2] - p.orig[2]) / F32(p.tile_height))
    q_out = []
    r_out = []
    key_out = []
    for tile in range(nav.tile_count):
        tx, ty, _ = (int(v) for v in nav.tile_xy[tile])
        rank = nav.tiles_at(tx, ty).index(tile)
        hit = np.nonzero((tminx <= tx) & (tx <= tmaxx) & (tminy <= ty) & (ty <= tmaxy))[0]
        if hit.shape[0] == 0:
            continue
        data = nav.tiles[tile]
        base = int(nav.tile_poly_base[tile])
        if data.bv_i.shape[0]:
            leaf = np.nonzero(data.bv_i >= 0)[0]
            leaf_ref = base + data.bv_i[leaf].astype(np.int64)
            lmin = data.bv_bmin[leaf].astype(np.int64)
            lmax = data.bv_bmax[leaf].astype(np.int64)
            bmin, bmax = _quantized_box(nav, tile, qmin[hit], qmax[hit])
            use_float = False
        else:
            leaf_ref = base + np.arange(data.npolys, dtype=np.int64)
            pv = nav.poly_pos[leaf_ref]
            lmin, lmax = pv.min(axis=1), pv.max(axis=1)
            bmin, bmax = qmin[hit], qmax[hit]
            use_float = True
        keep = pass_flags[leaf_ref]
        if use_float:
            keep &= nav.poly_type[leaf_ref] != POLYTYPE_OFFMESH_CONNECTION
        leaf_ref, lmin, lmax = leaf_ref[keep], lmin[keep], lmax[keep]
        order = np.arange(leaf_ref.shape[0])
        step = max(1, CHUNK // max(1, leaf_ref.shape[0]))
        dt = F32 if use_float else np.int32
        lmin_t, lmax_t = lmin.astype(dt).T.copy(), lmax.astype(dt).T.copy()
        bmin_t, bmax_t = bmin.astype(dt), bmax.astype(dt)
        for s in range(0, hit.shape[0], step):
            a = slice(s, s + step)
            overlap = np.ones((bmin_t[a].shape[0], leaf_ref.shape[0]), dtype=bool)
            for axis in range(3):
                overlap &= bmin_t[a, axis, None] <= lmax_t[axis][None, :]
                overlap &= bmax_t[a, axis, None] >= lmin_t[axis][None, :]
            # flatnonzero + divmod: about twice as fast as a 2-D nonzero.
            flat = np.flatnonzero(overlap)
            qi = flat // leaf_ref.shape[0]
            li = flat - qi * leaf_ref.shape[0]
            q_out.append(hit[a][qi])
            r_out.append(leaf_ref[li])
            if nav.tile_count > 1:
                key_out.append(np.stack([np.full(qi.shape, ty), np.full(qi.shape, tx),
                                         np.full(qi.shape, rank), order[li]], axis=1))  # fmt: skip
    if not q_out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    q = np.concatenate(q_out)
    r = np.concatenate(r_out)
    if nav.tile_count == 1:  # one tile: nonzero() already lists pairs query by query in order
        return q, r
    key = np.concatenate(key_out)
    sort = np.lexsort((key[:, 3], key[:, 2], key[:, 1], key[:, 0], q))
    return q[sort], r[sort]


def _poly_boxes(nav: NavMesh) -> np.ndarray:
    """float64 (npolys, 2, 3): a box holding every point closestPointOnPoly can return for the
    polygon (its vertices and detail triangles), widened by a margin far above float32
    rounding (1e-3 wu plus 1e-5 of the coordinates' size)."""

    def build():
        n = nav.poly_count
        lo = nav.poly_pos.astype(np.float64).copy()
        nv = nav.poly_vert_count.astype(np.int64)
        pad = np.arange(lo.shape[1])[None, :] >= nv[:, None]
        hi = lo.copy()
        lo[pad] = np.inf
        hi[pad] = -np.inf
        bmin, bmax = lo.min(axis=1), hi.max(axis=1)
        tri = nav.detail_tri_pos.astype(np.float64)
        counts = nav.detail_tri_count.astype(np.int64)
        if tri.shape[0]:
            owner = np.repeat(np.arange(n), counts)
            rows = _ranges(nav.detail_tri_base, counts)
            np.minimum.at(bmin, owner, tri[rows].min(axis=1))
            np.maximum.at(bmax, owner, tri[rows].max(axis=1))
        size = np.maximum(np.abs(bmin), np.abs(bmax)).max(axis=1, keepdims=True)
        margin = 1e-3 + 1e-5 * np.where(np.isfinite(size), size, 0.0)
        return np.stack([bmin - margin, bmax + margin], axis=1)

    return _cached(nav, "_poly_box_cache", nav.detail_tri_pos, build)


def _nearest_distance(nav: NavMesh, r, c):
    """findNearestPoly's per-candidate distance (float32) and closest point / over flag."""
    closest, is_over = closest_point_on_poly(nav, r, c)
    climb = nav.tile_walkable_climb[nav.poly_tile[r]]
    dy = np.abs(c[:, 1] - closest[:, 1]) - climb
    d_over = np.where(dy > _ZERO, dy * dy, _ZERO)
    diff = c - closest
    d_out = diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1] + diff[:, 2] * diff[:, 2]
    return np.where(is_over, d_over, d_out).astype(F32), closest, is_over


def find_nearest_poly(nav: NavMesh, centers, halves, pass_flags):
    """findNearestPoly for many points -> (ref int64 (n,), point (n, 3) NaN none, over bool).

    Detour computes closestPointOnPoly for every candidate. Here a lower bound of each
    candidate's distance (from a box around everything closestPointOnPoly can return) prunes
    first: per query the candidate with the smallest bound is evaluated exactly, then only the
    candidates whose bound does not exceed that distance. A pruned candidate's distance is
    strictly above the minimum, so the first strict minimum (Detour's answer) is unchanged.
    Non-finite points are the caller's business (Detour's INVALID_PARAM)."""
    n = centers.shape[0]
    ref = np.full(n, -1, dtype=np.int64)
    point = np.full((n, 3), np.nan, dtype=F32)
    over = np.zeros(n, dtype=bool)
    q, r = query_polygon_pairs(nav, centers, halves, pass_flags)
    if q.shape[0] == 0:
        return ref, point, over
    npairs = q.shape[0]
    starts = np.nonzero(np.r_[True, q[1:] != q[:-1]])[0]
    sizes = np.diff(np.r_[starts, npairs])
    group = np.repeat(np.arange(starts.shape[0]), sizes)
    # Lower bound (float64) of each candidate's distance.
    box = _poly_boxes(nav)[r]
    c64 = centers[q].astype(np.float64)
    gap = np.maximum(np.maximum(box[:, 0] - c64, c64 - box[:, 1]), 0.0)
    climb = nav.tile_walkable_climb[nav.poly_tile[r]].astype(np.float64)
    flat_in = (gap[:, 0] == 0.0) & (gap[:, 2] == 0.0)
    over_lb = np.maximum(gap[:, 1] - climb, 0.0) ** 2
    lb = np.where(flat_in, over_lb, (gap * gap).sum(axis=1))
    # Stage 1: the smallest-bound candidate of each query (first of equal bounds).
    lb_min = np.minimum.reduceat(lb, starts)
    cand = np.nonzero(lb == lb_min[group])[0][::-1]
    pick = np.empty(starts.shape[0], dtype=np.int64)
    pick[group[cand]] = cand
    d1, cl1, ov1 = _nearest_distance(nav, r[pick], centers[q[pick]])
    # Stage 2: candidates whose bound does not exceed that distance (with slack for float32).
    upper = d1.astype(np.float64) * (1.0 + 1e-5)
    rest = lb <= upper[group]
    rest[pick] = False
    idx2 = np.nonzero(rest)[0]
    d2, cl2, ov2 = _nearest_distance(nav, r[idx2], centers[q[idx2]])
    rows_all = np.concatenate([pick, idx2])
    order = np.argsort(rows_all, kind="stable")
    rows_all = rows_all[order]
    d = np.concatenate([d1, d2])[order]
    closest = np.concatenate([cl1, cl2])[order]
    is_over = np.concatenate([ov1, ov2])[order]
    qq = q[rows_all]
    # First strictly smallest per query (Detour keeps the earliest of equal distances), and
    # only below FLT_MAX.
    starts = np.nonzero(np.r_[True, qq[1:] != qq[:-1]])[0]
    dmin = np.minimum.reduceat(d, starts)
    group = np.repeat(np.arange(starts.shape[0]), np.diff(np.r_[starts, qq.shape[0]]))
    is_min = (d == dmin[group]) & (d < FLT_MAX)
    first = np.full(starts.shape[0], -1, dtype=np.int64)
    hits = np.nonzero(is_min)[0]
    # Keep the first hit per group: reversed assignment leaves the smallest index.
    first[group[hits[::-1]]] = hits[::-1]
    found = first >= 0
    qs = qq[starts][found]
    rows = first[found]
    ref[qs] = r[rows_all[rows]]
    point[qs] = closest[rows]
    over[qs] = is_over[rows]
    return ref, point, over


def _ray_edge_table(nav: NavMesh) -> np.ndarray:
    """Per polygon and edge slot i (from vertex j = i - 1 to vertex i): float32 (npolys, 4, 6)
    rows xj, zj, ex = xi - xj, ez = zi - zj as dtIntersectSegmentPoly2D computes them. Slots
    i >= nv get a zero edge: parallel to every ray with n = 0, so they neither fail nor clip."""

    def build():
        v = nav.poly_pos.astype(F32)
        nv = nav.poly_vert_count.astype(np.int64)
        i = np.arange(6)[None, :]
        j = np.clip(np.where(i == 0, nv[:, None] - 1, i - 1), 0, 5)
        rows = np.arange(v.shape[0])[:, None]
        vi, vj = v[:, :6], v[rows, j]
        valid = i < nv[:, None]
        ex = np.where(valid, vi[..., 0] - vj[..., 0], _ZERO)
        ez = np.where(valid, vi[..., 2] - vj[..., 2], _ZERO)
        return np.stack([vj[..., 0], vj[..., 2], ex, ez], axis=1).astype(F32)

    return _cached(nav, "_ray_edge_table_cache", nav.poly_pos, build)


_INF32 = F32(np.inf)


def intersect_segment_poly_2d(p0x, p0z, dirx, dirz, nav: NavMesh, refs):
    """dtIntersectSegmentPoly2D of the segments p0 + s * dir (s in [0, 1]; x and z parts as
    float32 (m,) arrays, dir = p1 - p0) with polygons refs[m] ->
    (hit, tmin, tmax, seg_min, seg_max).

    Detour's loop keeps a running max of entering t (from 0) and min of leaving t (from 1),
    each updated only on a strictly better value, and fails when they cross or a parallel edge
    has the segment outside. Both running values are monotone, so this equals: the first
    maximum / first minimum over all edges at once, failing when the final ones cross."""
    e = _ray_edge_table(nav)[refs]  # (m, 4, 6)
    xj, zj, ex, ez = e[:, 0], e[:, 1], e[:, 2], e[:, 3]
    dx = p0x[:, None] - xj
    dz = p0z[:, None] - zj
    n = ez * dx - ex * dz
    d = dirz[:, None] * ex - dirx[:, None] * ez
    par = np.abs(d) < _EPS_SEG
    fail = np.any(par & (n < _ZERO), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = n / d
    enter = np.where(par | (d >= _ZERO), -_INF32, t)
    leave = np.where(par | (d < _ZERO), _INF32, t)
    rows = np.arange(refs.shape[0])
    k_min = np.argmax(enter, axis=1)
    k_max = np.argmin(leave, axis=1)
    t_enter = enter[rows, k_min]
    t_leave = leave[rows, k_max]
    # The edge index Detour reports is j, the edge's first vertex (slot i's predecessor).
    nv = nav.poly_vert_count[refs].astype(np.int64)
    moved_min = t_enter > _ZERO
    moved_max = t_leave < _ONE
    tmin = np.where(moved_min, t_enter, _ZERO)
    tmax = np.where(moved_max, t_leave, _ONE)
    seg_min = np.where(moved_min, np.where(k_min == 0, nv - 1, k_min - 1), -1)
    seg_max = np.where(moved_max, np.where(k_max == 0, nv - 1, k_max - 1), -1)
    hit = ~fail & ~(tmin > tmax)
    return hit, tmin, tmax, seg_min, seg_max


def _ray_links(nav: NavMesh, pass_flags):
    """Per (polygon, edge) the links raycast may follow across that edge, in Detour's link
    order, with their query-independent crossing interval: (rows (npolys * 6, K) link index
    or -1, full bool (L,), axis (L,), lmin, lmax float32 (L,), sided bool (L,))."""
    key = "_ray_link_cache"
    hit = getattr(nav, key, None)
    if hit is not None and hit[0] is nav.link_start and np.array_equal(hit[1], pass_flags):
        return hit[2]
    nl = nav.link_ref.shape[0]
    lref = nav.link_ref
    usable = (nav.poly_type[lref] != POLYTYPE_OFFMESH_CONNECTION) & pass_flags[lref]
    usable &= (nav.link_edge >= 0) & (nav.link_edge < 6)
    idx = np.nonzero(usable)[0]
    slot_key = nav.link_owner[idx] * 6 + nav.link_edge[idx]
    order = np.lexsort((idx, slot_key))
    idx, slot_key = idx[order], slot_key[order]
    first = np.r_[True, slot_key[1:] != slot_key[:-1]] if idx.shape[0] else np.zeros(0, bool)
    start = np.nonzero(first)[0]
    run = np.diff(np.r_[start, idx.shape[0]])
    rank: np.ndarray = np.arange(idx.shape[0]) - np.repeat(start, run)
    width = int(rank.max()) + 1 if idx.shape[0] else 1
    rows = np.full((nav.poly_count * 6, width), -1, dtype=np.int64)
    rows[slot_key, rank] = idx
    side = nav.link_side
    lo, hi = nav.link_bmin, nav.link_bmax
    full = (side == SIDE_INTERNAL) | ((lo == 0) & (hi == 255))
    owner = nav.link_owner
    e = np.clip(nav.link_edge, 0, 5)
    nvs = np.maximum(nav.poly_vert_count[owner].astype(np.int64), 1)
    left = nav.poly_pos[owner, e]
    right = nav.poly_pos[owner, (e + 1) % nvs]
    axis = np.where((side == 0) | (side == 4), 2, 0)
    sc = F32(1.0) / F32(255.0)
    r_ = np.arange(nl)
    la, ra = left[r_, axis], right[r_, axis]
    lmin = la + (ra - la) * (lo.astype(F32) * sc)
    lmax = la + (ra - la) * (hi.astype(F32) * sc)
    lmin, lmax = np.minimum(lmin, lmax), np.maximum(lmin, lmax)
    sided = (side == 0) | (side == 4) | (side == 2) | (side == 6)
    value = (rows, full, axis, lmin.astype(F32), lmax.astype(F32), sided)
    setattr(nav, key, (nav.link_start, pass_flags.copy(), value))
    return value


def _wall_normals(nav: NavMesh) -> np.ndarray:
    """float32 (npolys, 6, 3): raycast's hit normal for each polygon edge j (j -> j + 1)."""

    def build():
        v = nav.poly_pos.astype(F32)
        nv = np.maximum(nav.poly_vert_count.astype(np.int64), 1)
        j = np.arange(6)[None, :]
        k = np.where(j + 1 < nv[:, None], j + 1, 0)
        rows = np.arange(v.shape[0])[:, None]
        va, vb = v[:, :6], v[rows, k]
        dx = vb[..., 0] - va[..., 0]
        dz = vb[..., 2] - va[..., 2]
        vec = np.stack([dz, np.zeros_like(dz), -dx], axis=-1).astype(F32)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = _ONE / np.sqrt(
                vec[..., 0] * vec[..., 0] + vec[..., 1] * vec[..., 1] + vec[..., 2] * vec[..., 2]
            )
            return (vec * inv[..., None]).astype(F32)

    return _cached(nav, "_wall_normal_cache", nav.poly_pos, build)


def raycast(nav: NavMesh, start_refs, starts, ends, pass_flags, max_path: int):
    """raycast for many rays (valid refs and finite points assumed) ->
    (status-bits partial/buffer int64 (n,), t float32, normal (n, 3), query ids, refs).

    One polygon step of every live ray per round; the link crossing each exit edge comes from
    a per-(polygon, edge) table of usable links with precomputed crossing intervals."""
    n = start_refs.shape[0]
    t_hit = np.zeros(n, dtype=F32)
    normal = np.zeros((n, 3), dtype=F32)
    extra = np.zeros(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    cur = start_refs.astype(np.int64).copy()
    active = np.nonzero(cur >= 0)[0]
    link_rows, full, axis, lmin, lmax, sided = _ray_links(nav, pass_flags)
    normals = _wall_normals(nav)
    rec_q, rec_r = [], []
    sx, sz = starts[:, 0].copy(), starts[:, 2].copy()
    dirx, dirz = ends[:, 0] - starts[:, 0], ends[:, 2] - starts[:, 2]
    while active.shape[0]:
        c = cur[active]
        ok, _tmin, tmax, _smin, smax = intersect_segment_poly_2d(
            sx[active], sz[active], dirx[active], dirz[active], nav, c
        )
        # Rays that miss the polygon stop here (t as it is).
        a = active[ok]
        tmax_g = tmax[ok]
        t_hit[a] = np.where(tmax_g > t_hit[a], tmax_g, t_hit[a])
        room = count[a] < max_path
        rec_q.append(a[room])
        rec_r.append(c[ok][room])
        count[a[room]] += 1
        extra[a[~room]] |= 0x10
        smax_g = smax[ok]
        reached = smax_g == -1
        t_hit[a[reached]] = FLT_MAX
        a = a[~reached]
        seg = smax_g[~reached]
        tm = tmax_g[~reached]
        cr = c[ok][~reached]
        slots = link_rows[cr * 6 + seg]  # (m, K)
        nxt = np.full(a.shape[0], -1, dtype=np.int64)
        todo = np.ones(a.shape[0], dtype=bool)
        rows = np.arange(a.shape[0])
        for kk in range(slots.shape[1]):
            k = slots[:, kk]
            has = todo & (k >= 0)
            if not has.any():
                break
            ks = np.where(has, k, 0)
            ax = axis[ks]
            sa = starts[a, ax]
            x = sa + (ends[a, ax] - sa) * tm
            take = has & (full[ks] | ((x >= lmin[ks]) & (x <= lmax[ks]) & sided[ks]))
            nxt = np.where(take, nav.link_ref[ks], nxt)
            todo &= ~take
        del rows
        wall = nxt < 0
        if wall.any():
            w = np.nonzero(wall)[0]
            normal[a[w]] = normals[cr[w], seg[w]]
        cont = a[~wall]
        cur[cont] = nxt[~wall]
        full_buf = (extra[cont] & 0x10) != 0
        extra[cont[full_buf]] |= 0x40
        active = cont[~full_buf]
    q = np.concatenate(rec_q) if rec_q else np.zeros(0, np.int64)
    r = np.concatenate(rec_r) if rec_r else np.zeros(0, np.int64)
    # Rounds visit each ray's polygons in order: a stable sort by ray keeps that order.
    order = np.argsort(q, kind="stable")
    return extra, t_hit, normal, q[order], r[order]


def _boundary_edge_table(nav: NavMesh) -> np.ndarray:
    """Per polygon and edge j (vertex j -> j + 1, wrapping): float32 (npolys, 6, 2, 3) end
    points (slots j >= nv are filler; callers mask them)."""

    def build():
        v = nav.poly_pos.astype(F32)
        nv = np.maximum(nav.poly_vert_count.astype(np.int64), 1)
        j = np.arange(6)[None, :]
        k = np.where(j + 1 < nv[:, None], j + 1, 0)
        rows = np.arange(v.shape[0])[:, None]
        return np.stack([v[:, :6], v[rows, k]], axis=2).astype(F32)

    return _cached(nav, "_boundary_edge_cache", nav.poly_pos, build)


def boundary_point(nav: NavMesh, refs: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """closestPointOnPolyBoundary for each (ref, pos): pos when inside (2D), else the nearest
    point of the polygon's edges (first nearest edge, as Detour's scan) -> float32 (m, 3).
    All edges of all queries at once; the first minimum per query is Detour's pick."""
    m = refs.shape[0]
    if m == 0:
        return np.zeros((0, 3), dtype=F32)
    inside = point_in_polygon(nav, refs, pos)
    edges = _boundary_edge_table(nav)[refs]  # (m, 6, 2, 3)
    nv = nav.poly_vert_count[refs].astype(np.int64)
    a, b = edges[:, :, 0], edges[:, :, 1]
    d, t = dist_pt_seg_sqr_2d(pos[:, None, :], a, b)
    d = np.where(np.arange(6)[None, :] < nv[:, None], d, np.inf)
    best = np.argmin(d, axis=1)
    rows = np.arange(m)
    out = lerp(a[rows, best], b[rows, best], t[rows, best]).astype(F32)
    out[inside] = pos[inside]
    return out


def _portal_lookup(nav: NavMesh):
    """Sorted (owner * npolys + target) keys and the first link row of each (cached)."""
    cached = getattr(nav, "_portal_lookup_cache", None)
    if cached is not None and cached[0] is nav.link_start:
        return cached[1]
    key = nav.link_owner * max(1, nav.poly_count) + nav.link_ref
    order = np.lexsort((np.arange(key.shape[0]), key))
    sk = key[order]
    first = np.r_[True, sk[1:] != sk[:-1]] if sk.shape[0] else np.zeros(0, bool)
    result = (sk[first], order[first])
    nav._portal_lookup_cache = (nav.link_start, result)  # type: ignore[attr-defined]
    return result


def portal_links(nav: NavMesh, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Link row getPortalPoints uses for each (from, to) pair, -1 when they are not linked."""
    keys, rows = _portal_lookup(nav)
    k = frm.astype(np.int64) * max(1, nav.poly_count) + to.astype(np.int64)
    if keys.shape[0] == 0:
        return np.full(k.shape, -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, k), keys.shape[0] - 1)
    return np.where(keys[pos] == k, rows[pos], -1)


_EQUAL_THR = F32(1.0 / 16384.0) * F32(1.0 / 16384.0)
_PORTAL_EPS = F32(0.001) * F32(0.001)


def _vequal(a, b):
    d = b - a
    return (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) < _EQUAL_THR


def _tri_area(a, b, c):
    abx = b[:, 0] - a[:, 0]
    abz = b[:, 2] - a[:, 2]
    acx = c[:, 0] - a[:, 0]
    acz = c[:, 2] - a[:, 2]
    return acx * abz - abx * acz


def straight_paths(nav: NavMesh, count, start, polys, starts, ends, max_straight: int):
    """findStraightPath (options 0) for corridors whose every consecutive pair is linked and
    max_straight >= 2, string-pulled in lockstep (one portal step of every query at a time).

    count, start, polys: the corridors (ragged, count >= 1); starts, ends: float32 (n, 3).
    Returns (status, out_count, points (n, W, 3), flags (n, W), refs (n, W)).
    """
    n = count.shape[0]
    count = count.astype(np.int64)
    start = start.astype(np.int64)
    first = polys[start]
    last = polys[start + count - 1]
    start_c = boundary_point(nav, first, starts)
    end_c = boundary_point(nav, last, ends)
    width = int(min(max_straight, int(count.max()) + 2)) if n else 1
    pts = np.zeros((n, width, 3), dtype=F32)
    flags = np.zeros((n, width), dtype=np.uint8)
    refs = np.full((n, width), -1, dtype=np.int64)
    out_n = np.ones(n, dtype=np.int64)
    status = np.full(n, SUCCESS_BITS, dtype=np.int64)
    pts[:, 0] = start_c
    flags[:, 0] = 1
    refs[:, 0] = first
    # Portals of every corridor step (flat index start + i); the last step is the end point.
    total = int(count.sum())
    flat_q = np.repeat(np.arange(n), count)
    flat_i = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    flat_pos = start[flat_q] + flat_i
    has_next = flat_i + 1 < count[flat_q]
    nxt = np.where(has_next, polys[np.where(has_next, flat_pos + 1, flat_pos)], -1)
    link = portal_links(nav, polys[flat_pos], np.maximum(nxt, 0))
    p_left = np.where(has_next[:, None], nav.link_left[np.maximum(link, 0)], end_c[flat_q])
    p_right = np.where(has_next[:, None], nav.link_right[np.maximum(link, 0)], end_c[flat_q])
    cstart = np.cumsum(count) - count  # row of query q's step 0 in the flat arrays

    # Positions as separate x, y, z arrays: 1-D gathers are much cheaper than (n, 3) row gathers.
    plx, ply, plz = (np.ascontiguousarray(p_left[:, k]) for k in range(3))
    prx, pry, prz = (np.ascontiguousarray(p_right[:, k]) for k in range(3))
    apex = [start_c[:, k].copy() for k in range(3)]
    left = [start_c[:, k].copy() for k in range(3)]
    right = [start_c[:, k].copy() for k in range(3)]
    apex_i = np.zeros(n, dtype=np.int64)
    left_i = np.zeros(n, dtype=np.int64)
    right_i = np.zeros(n, dtype=np.int64)
    left_ref = first.astype(np.int64).copy()
    right_ref = first.astype(np.int64).copy()
    i = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    finished_loop = count <= 1
    active = np.nonzero(~finished_loop)[0]

    # Output points as flat x, y, z arrays (query q's slot k at q * width + k).
    out_x, out_y, out_z = (np.ascontiguousarray(pts[:, :, k]).reshape(-1) for k in range(3))
    flags_f = flags.reshape(-1)
    refs_f = refs.reshape(-1)

    def append(q, px, py, pz, flag, ref):
        """appendVertex for queries q; returns the queries that must stop now."""
        last = q * width + out_n[q] - 1
        same = equal(out_x[last], out_y[last], out_z[last], px, py, pz)
        ls = last[same]
        flags_f[ls] = flag[same]
        refs_f[ls] = ref[same]
        new = ~same
        qn = q[new]
        slot = qn * width + out_n[qn]
        out_x[slot], out_y[slot], out_z[slot] = px[new], py[new], pz[new]
        flags_f[slot] = flag[new]
        refs_f[slot] = ref[new]
        out_n[qn] += 1
        full = out_n[qn] >= max_straight
        status[qn[full]] |= 0x10
        stop = qn[full | (flag[new] == 2)]
        return stop

    def area(ax, az, bx, bz, cx, cz):
        """dtTriArea2D on x/z arrays."""
        return (cx - ax) * (bz - az) - (bx - ax) * (cz - az)

    def equal(ax, ay, az, bx, by, bz):
        """dtVequal on component arrays."""
        dx, dy, dz = bx - ax, by - ay, bz - az
        return (dx * dx + dy * dy + dz * dz) < _EQUAL_THR

    def jump_to(qj, side, side_i, side_ref):
        """Move the apex of queries qj to the given side's point, append it, restart there."""
        for k in range(3):
            apex[k][qj] = side[k][qj]
        apex_i[qj] = side_i[qj]
        ref = side_ref[qj]
        # DT_STRAIGHTPATH_END at the end, DT_STRAIGHTPATH_OFFMESH_CONNECTION entering a link.
        offmesh = nav.poly_type[np.maximum(ref, 0)] == POLYTYPE_OFFMESH_CONNECTION
        fl = np.where(ref < 0, 2, np.where(offmesh, 4, 0)).astype(np.uint8)
        stop = append(qj, apex[0][qj], apex[1][qj], apex[2][qj], fl, side_ref[qj])
        done[stop] = True
        for k in range(3):
            left[k][qj] = apex[k][qj]
            right[k][qj] = apex[k][qj]
        left_i[qj] = apex_i[qj]
        right_i[qj] = apex_i[qj]
        i[qj] = apex_i[qj]

    while active.shape[0]:
        q = active
        iq = i[q]
        row = cstart[q] + iq
        lx, ly, lz = plx[row], ply[row], plz[row]
        rx, ry, rz = prx[row], pry[row], prz[row]
        nref = nxt[row]
        ax, ay, az = apex[0][q], apex[1][q], apex[2][q]
        # First portal right at the start point: skip it.
        skip = (iq == 0) & has_next[row]
        if np.any(skip):
            w = np.nonzero(skip)[0]
            d, _t = dist_pt_seg_sqr_2d(
                np.stack([ax[w], ay[w], az[w]], axis=1),
                np.stack([lx[w], ly[w], lz[w]], axis=1),
                np.stack([rx[w], ry[w], rz[w]], axis=1),
            )
            skip[w] = d < _PORTAL_EPS
        # Right side.
        qrx, qry, qrz = right[0][q], right[1][q], right[2][q]
        qlx, qlz = left[0][q], left[2][q]
        r_test = ~skip & (area(ax, az, qrx, qrz, rx, rz) <= _ZERO)
        tighten = r_test & (
            equal(ax, ay, az, qrx, qry, qrz) | (area(ax, az, qlx, qlz, rx, rz) > _ZERO)
        )
        t = q[tighten]
        right[0][t], right[1][t], right[2][t] = rx[tighten], ry[tighten], rz[tighten]
        right_ref[t] = nref[tighten]
        right_i[t] = iq[tighten]
        jump = r_test & ~tighten
        restart = jump
        if np.any(jump):
            jump_to(q[jump], left, left_i, left_ref)
            ax, ay, az = apex[0][q], apex[1][q], apex[2][q]
        # Left side (queries that did not restart).
        qlx, qly, qlz = left[0][q], left[1][q], left[2][q]
        qrx, qrz = right[0][q], right[2][q]
        l_test = ~skip & ~restart & (area(ax, az, qlx, qlz, lx, lz) >= _ZERO)
        tighten = l_test & (
            equal(ax, ay, az, qlx, qly, qlz) | (area(ax, az, qrx, qrz, lx, lz) < _ZERO)
        )
        t = q[tighten]
        left[0][t], left[1][t], left[2][t] = lx[tighten], ly[tighten], lz[tighten]
        left_ref[t] = nref[tighten]
        left_i[t] = iq[tighten]
        jump = l_test & ~tighten
        if np.any(jump):
            jump_to(q[jump], right, right_i, right_ref)
        i[q] += 1
        iq = i[q]
        alive = ~done[q] & (iq < count[q])
        finished_loop[q] = iq >= count[q]
        active = q[alive]
    # The end point for every query that ran through its corridor.
    fin = np.nonzero(~done)[0]
    if fin.shape[0]:
        e = end_c[fin]
        append(fin, e[:, 0], e[:, 1], e[:, 2], np.full(fin.shape[0], 2, np.uint8),
               np.full(fin.shape[0], -1))  # fmt: skip
        full = out_n[fin] >= max_straight
        status[fin[full]] |= 0x10
    pts = np.stack([out_x, out_y, out_z], axis=1).reshape(n, width, 3)
    return status, out_n, pts, flags, refs


SUCCESS_BITS = 0x40000000
