"""Detour's queries vectorized across many queries (arrays in, arrays out), Y-up frame.

Each function here computes, for every query at once, exactly what the literal single-query
port in `core.nav.query` computes for one (same float32 operations in the same order; ties
resolved the same way: Detour's "first strictly smaller wins" scans become first-minimum
argmins over candidates laid out in Detour's visiting order). The loops that remain run over
polygon edges (<= 6), detail triangles of one polygon, link slots of one polygon, tiles, or ray
steps, never over queries.

All positions are float32 (n, 3) in Detour's Y-up frame; refs are NavMesh refs (-1 = none).

Per-polygon tables are cached on the navmesh and kept slot-major ((k, 6, npolys): a gather for
m queries gives (k, 6, m) rows): NumPy runs row-wise arithmetic and reductions over the first
axis several times faster than on (m, 6) arrays broadcast against (m, 1) columns. Gathers
along the last axis go through `_columns` (np.take), whose result is C-ordered.
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


def gatherable(rows: np.ndarray) -> np.ndarray:
    """``rows``, or one row of zeros when there are none (a navmesh without links): the
    batched searches read ``rows[max(index, 0)]`` and mask the entries whose index is -1,
    which reads row 0 either way."""
    return rows if rows.shape[0] else np.zeros((1, *rows.shape[1:]), dtype=rows.dtype)


def _cached(nav: NavMesh, key: str, source, build):
    """A per-navmesh table built once by `build()`, rebuilt when `source` (an array it derives
    from) is replaced."""
    hit = getattr(nav, key, None)
    if hit is not None and hit[0] is source:
        return hit[1]
    value = build()
    setattr(nav, key, (source, value))
    return value


def _columns(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """table[..., idx] as a C-ordered array (indexing the last axis with `[:, idx]` returns a
    Fortran-ordered one, on which NumPy's row-wise arithmetic is an order of magnitude slower)."""
    return np.take(table, idx, axis=-1)


def _edge_table(nav: NavMesh) -> np.ndarray:
    """Per polygon and edge slot i (vertex i and its predecessor j): float32 (5, 6, npolys)
    rows xi, zi, zj, xj - xi, zj - zi as dtPointInPolygon reads them (query-independent, so
    computed once). Slots i >= nv get zi = zj = +inf: they never cross any z. Slot-major:
    gathered per query as (.., 6, m) arrays, whose row-wise arithmetic NumPy runs much faster
    than (m, 6) arrays broadcast against (m, 1) columns."""

    def build():
        v = nav.poly_pos.astype(F32)
        nv = nav.poly_vert_count.astype(np.int64)
        i = np.arange(6)[None, :]
        j = np.where(i == 0, nv[:, None] - 1, i - 1)
        j = np.clip(j, 0, 5)
        rows = np.arange(v.shape[0])[:, None]
        vi, vj = v[:, :6], v[rows, j]
        valid = i < nv[:, None]
        table = np.zeros((5, 6, v.shape[0]), dtype=F32)
        table[0] = np.where(valid, vi[..., 0], _ZERO).T
        table[1] = np.where(valid, vi[..., 2], np.inf).T
        table[2] = np.where(valid, vj[..., 2], np.inf).T
        table[3] = np.where(valid, vj[..., 0] - vi[..., 0], _ZERO).T
        table[4] = np.where(valid, vj[..., 2] - vi[..., 2], _ONE).T
        return table

    return _cached(nav, "_edge_table_cache", nav.poly_pos, build)


def point_in_polygon(nav: NavMesh, refs: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """dtPointInPolygon of pos[m] in polygon refs[m] (2D, x/z) -> bool (m,)."""
    return _inside_xz(nav, refs, pos[:, 0], pos[:, 2])


def _inside_xz(nav: NavMesh, refs: np.ndarray, px: np.ndarray, pz: np.ndarray) -> np.ndarray:
    """dtPointInPolygon of the points (px, pz) (float32 (m,) each) in polygons refs[m].

    All edges of all queries at once: the crossing count's parity is Detour's toggled flag."""
    xi, zi, zj, dx, dz = _columns(_edge_table(nav), refs)  # (6, m) each
    with np.errstate(divide="ignore", invalid="ignore"):
        x = dx * (pz - zi) / dz + xi
    crosses = (zi > pz) != (zj > pz)
    crosses &= px < x
    return np.logical_xor.reduce(crosses, axis=0)


def _detail_tri_table(nav: NavMesh) -> np.ndarray:
    """Per detail triangle the query-independent terms of dtClosestHeightPointTriangle, float32
    (8, ntris): ax, az, ay, v0x, v0z, v1x, v1z as Detour computes them, then denom; v0y and v1y
    in a second (2, ntris) array. Returned as (terms, ys)."""

    def build():
        t = nav.detail_tri_pos.astype(F32)
        a, b, c = t[:, 0], t[:, 1], t[:, 2]
        v0x, v0y, v0z = c[:, 0] - a[:, 0], c[:, 1] - a[:, 1], c[:, 2] - a[:, 2]
        v1x, v1y, v1z = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1], b[:, 2] - a[:, 2]
        denom = v0x * v1z - v0z * v1x
        terms = np.stack([a[:, 0], a[:, 2], a[:, 1], v0x, v0z, v1x, v1z, denom], axis=0)
        return terms.astype(F32), np.stack([v0y, v1y], axis=0).astype(F32)

    return _cached(nav, "_detail_tri_table_cache", nav.detail_tri_pos, build)


def poly_height(nav: NavMesh, refs: np.ndarray, pos: np.ndarray):
    """dtNavMesh::getPolyHeight for ground polygons -> (ok bool (m,), height float32 (m,))."""
    m = refs.shape[0]
    height = np.zeros(m, dtype=F32)
    if m == 0:
        return np.zeros(0, dtype=bool), height
    px, pz = pos[:, 0], pos[:, 2]
    ok = _inside_xz(nav, refs, px, pz)
    ok &= nav.poly_type[refs] != POLYTYPE_OFFMESH_CONNECTION
    idx = np.flatnonzero(ok)
    if idx.shape[0]:
        height[idx] = _height_inside(nav, refs[idx], px[idx], pz[idx], pos[idx])
    return ok, height


def query_poly_height(nav: NavMesh, refs: np.ndarray, pos: np.ndarray):
    """dtNavMeshQuery::getPolyHeight -> (ok bool (m,), height float32 (m,)): `poly_height`,
    and on an off-mesh link's polygon the height along the link at its point nearest pos."""
    ok, height = poly_height(nav, refs, pos)
    link = np.flatnonzero(nav.poly_type[refs] == POLYTYPE_OFFMESH_CONNECTION)
    if link.shape[0]:
        v0, v1 = nav.poly_pos[refs[link], 0], nav.poly_pos[refs[link], 1]
        _, t = dist_pt_seg_sqr_2d(pos[link], v0, v1)
        height[link] = v0[:, 1] + (v1[:, 1] - v0[:, 1]) * t
        ok[link] = True
    return ok, height


def _height_inside(nav: NavMesh, refs, px, pz, pos, pos_rows=None, tris=None) -> np.ndarray:
    """getPolyHeight's height (float32 (m,)) of points (px, pz) known to be inside their ground
    polygons refs (pos[pos_rows] or pos: the (m, 3) points, read only for the rare detail-edge
    fallback). tris: optional int (m,) detail triangle known to be Detour's first hit (-1:
    unknown, searched).

    The (query, detail triangle) pairs of all queries are tested at once (flat, no padding);
    each query takes its first hit in triangle order, as Detour's loop returns on it."""
    m = refs.shape[0]
    terms, ys = _detail_tri_table(nav)
    if tris is not None:
        height = np.zeros(m, dtype=F32)
        known = tris >= 0
        k = np.flatnonzero(known)
        t = tris[k]
        tt = _columns(terms, t)
        u, v, denom = _tri_uv(tt, px[k], pz[k])
        yy = _columns(ys, t)
        height[k] = tt[2] + (yy[0] * u + yy[1] * v) / denom
        rest = np.flatnonzero(~known)
        if rest.shape[0]:
            rows = rest if pos_rows is None else pos_rows[rest]
            height[rest] = _height_inside(nav, refs[rest], px[rest], pz[rest], pos, rows)
        return height
    height = np.zeros(m, dtype=F32)
    counts = nav.detail_tri_count[refs].astype(np.int64)
    rows = _ranges(nav.detail_tri_base[refs], counts)
    owner = np.repeat(np.arange(m), counts)
    tt = _columns(terms, rows)
    u, v, denom = _tri_uv(tt, px[owner], pz[owner])
    hit = (denom >= _EPS_HEIGHT) & (u >= _ZERO) & (v >= _ZERO) & ((u + v) <= denom)
    hits = np.flatnonzero(hit)
    # First hit per query: assigning in reverse leaves each query's smallest pair index.
    first = np.full(m, -1, dtype=np.int64)
    first[owner[hits[::-1]]] = hits[::-1]
    got = first >= 0
    f = first[got]
    yy = _columns(ys, rows[f])
    height[got] = tt[2, f] + (yy[0] * u[f] + yy[1] * v[f]) / denom[f]
    miss = np.flatnonzero(~got)
    if miss.shape[0]:
        at = pos[miss] if pos_rows is None else pos[pos_rows[miss]]
        height[miss] = closest_on_detail_edges(nav, refs[miss], at, False)[:, 1]
    return height


def _tri_uv(tt, px, pz):
    """dtClosestHeightPointTriangle's (u, v, denom) with denom made positive (float32), for
    `_detail_tri_table` columns tt (8, m) and points (px, pz)."""
    v2x = px - tt[0]
    v2z = pz - tt[1]
    v0x, v0z, v1x, v1z, denom = tt[3], tt[4], tt[5], tt[6], tt[7]
    u = v1z * v2x - v1x * v2z
    v = v0x * v2z - v0z * v2x
    neg = denom < _ZERO
    return np.where(neg, -u, u), np.where(neg, -v, v), np.where(neg, -denom, denom)


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


def _detail_edge_columns(nav: NavMesh, only_boundary: bool) -> np.ndarray:
    """`_detail_edges`' end points as float32 (6, E) rows ax, ay, az, bx, by, bz (cached)."""
    source = nav.detail_tri_pos

    def build():
        _lo, _count, a, b = _detail_edges(nav, only_boundary)
        return np.ascontiguousarray(np.concatenate([a, b], axis=1).T.astype(F32))

    key = "_detail_edge_columns_" + ("b" if only_boundary else "a")
    return _cached(nav, key, source, build)


def closest_on_detail_edges(nav: NavMesh, refs, pos, only_boundary: bool) -> np.ndarray:
    """closestPointOnDetailEdges for each (ref, pos) -> float32 (m, 3).

    dtDistancePtSegSqr2D and dtVlerp on x, y, z columns (the float32 operations of
    `dist_pt_seg_sqr_2d` and `lerp`, without their (m, 3) strided arithmetic)."""
    m = refs.shape[0]
    if m == 0:
        return np.zeros((0, 3), dtype=F32)
    lo, count, _a, _b = _detail_edges(nav, only_boundary)
    counts = count[refs]
    rows = _ranges(lo[refs], counts)
    rep = np.repeat(np.arange(m), counts)
    ax, ay, az, bx, by, bz = _columns(_detail_edge_columns(nav, only_boundary), rows)
    ptx = np.ascontiguousarray(pos[:, 0], dtype=F32)[rep]
    ptz = np.ascontiguousarray(pos[:, 2], dtype=F32)[rep]
    pqx = bx - ax
    pqz = bz - az
    dx = ptx - ax
    dz = ptz - az
    d = pqx * pqx + pqz * pqz
    t = pqx * dx + pqz * dz
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d > _ZERO, t / np.where(d > _ZERO, d, _ONE), t)
    t = np.where(t < _ZERO, _ZERO, np.where(t > _ONE, _ONE, t)).astype(F32)
    dx = ax + t * pqx - ptx
    dz = az + t * pqz - ptz
    best = first_min_per_group(dx * dx + dz * dz, counts)
    out = pos.astype(F32, copy=True)
    ok = np.flatnonzero(best >= 0)
    b = best[ok]
    tb = t[b]
    for k, (a_k, b_k) in enumerate(((ax, bx), (ay, by), (az, bz))):
        out[ok, k] = a_k[b] + (b_k[b] - a_k[b]) * tb
    return out


def closest_point_on_poly(nav: NavMesh, refs, pos):
    """dtNavMesh::closestPointOnPoly -> (closest float32 (m, 3), over_poly bool (m,))."""
    ok, h = poly_height(nav, refs, pos)
    closest = pos.astype(F32, copy=True)
    closest[ok, 1] = h[ok]
    link = ~ok & (nav.poly_type[refs] == POLYTYPE_OFFMESH_CONNECTION)
    out = np.nonzero(~ok & ~link)[0]
    if out.shape[0]:
        closest[out] = closest_on_detail_edges(nav, refs[out], pos[out], True)
    link = np.nonzero(link)[0]
    if link.shape[0]:  # an off-mesh link's polygon: the nearest point of its segment
        v0, v1 = nav.poly_pos[refs[link], 0], nav.poly_pos[refs[link], 1]
        _, t = dist_pt_seg_sqr_2d(pos[link], v0, v1)
        closest[link] = lerp(v0, v1, t)
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


# ----------------------------------------------------------------- candidate grid (nearest)
#: Bits per axis in a packed quantized box (3 axes in one int64): 16-bit values plus the
#: carry bit that says whether a per-axis difference went negative.
_PACK = 17
_CARRY = 1 << 16
_OVERLAP = _CARRY | (_CARRY << _PACK) | (_CARRY << (2 * _PACK))
#: Candidate grid cell size as a multiple of the query box's smaller X/Z half extent: smaller
#: cells give fewer surplus candidates and finer inside/outside classes, more entries.
GRID_CELL_FACTOR = 0.125
#: Largest candidate grid, in cells. [Limit: >= 1]
GRID_MAX_CELLS = 1 << 20
#: Most (leaf, cell) entries in a candidate grid (about 450 bytes each while it is built),
#: or 4 per BV leaf when that is more: the cells grow until the entries fit. [Limit: >= 1]
GRID_MAX_ENTRIES = 1 << 21
#: Entry classes of the candidate grid: the whole cell inside the polygon (2D, by a margin),
#: the whole cell outside it (with a lower bound of the squared distance), or neither.
_IN, _MIXED, _OUT = 0, 1, 2


def _pack3(v: np.ndarray) -> np.ndarray:
    """Three non-negative 16-bit values per row (int64 (m, 3)) packed into one int64."""
    return v[:, 0] | (v[:, 1] << _PACK) | (v[:, 2] << (2 * _PACK))


def _poly_halfplanes(nav: NavMesh):
    """Per polygon the outward unit normals (nx, nz float64 (npolys, 6)) and offsets of its
    edge lines in X/Z, and `safe` bool (npolys,): a convex ground polygon with boundary detail
    edges, for which the largest signed edge distance of a point outside bounds its distance
    to every point closestPointOnPoly can return. Unused slots get a zero normal and offset
    +inf (they never raise a maximum)."""
    v = nav.poly_pos.astype(np.float64)
    nv = nav.poly_vert_count.astype(np.int64)
    npolys = v.shape[0]
    k = np.arange(6)[None, :]
    nxt = np.where(k + 1 < nv[:, None], k + 1, 0)
    rows = np.arange(npolys)[:, None]
    ax, az = v[:, :6, 0], v[:, :6, 2]
    bx, bz = ax[rows, nxt], az[rows, nxt]
    valid = k < nv[:, None]
    ex, ez = np.where(valid, bx - ax, 0.0), np.where(valid, bz - az, 0.0)
    area = np.where(valid, ax * bz - bx * az, 0.0).sum(axis=1)
    length = np.hypot(ex, ez)
    sign = np.where(area > 0, 1.0, -1.0)[:, None]  # outward: right of a CCW edge in (x, z)
    with np.errstate(divide="ignore", invalid="ignore"):
        nx = np.where(length > 0, sign * ez / length, 0.0)
        nz = np.where(length > 0, -sign * ex / length, 0.0)
    off = np.where(valid & (length > 0), nx * ax + nz * az, np.inf)
    # Convex: every vertex on the inner side of every edge line (with rounding slack).
    s = nx[:, :, None] * ax[:, None, :] + nz[:, :, None] * az[:, None, :] - off[:, :, None]
    s = np.where(valid[:, None, :], s, -np.inf)
    scale = 1e-6 * (1.0 + np.abs(np.where(valid, np.abs(ax) + np.abs(az), 0.0)).max(axis=1))
    convex = (nv >= 3) & (np.abs(area) > 0) & (s.max(axis=(1, 2)) <= scale)
    convex &= (length > 0).sum(axis=1) == nv
    lo, count, ea, eb = _detail_edges(nav, True)
    safe = convex & (count > 0) & (nav.poly_type != POLYTYPE_OFFMESH_CONNECTION)
    # The bounds assume every boundary detail edge within 1e-3 of the polygon's outline (as
    # Recast flags them); a polygon whose edges stray further is not safe.
    if ea.shape[0]:
        owner = np.repeat(np.arange(npolys), count)
        stray = np.zeros(npolys)
        for end in (ea, eb):
            px, pz = end[:, 0].astype(np.float64), end[:, 2].astype(np.float64)
            d = (nx[owner] * px[:, None] + nz[owner] * pz[:, None] - off[owner]).max(axis=1)
            np.maximum.at(stray, owner, d)
        safe &= stray <= 2e-3 + 1e-5 * _coord_scale(nav)
    return nx, nz, off, safe


def _halfplane_table(nav: NavMesh):
    """`_poly_halfplanes` as float32 (6, npolys) rows nx, nz, offset (offset +inf on unused
    slots and on polygons that are not `safe`, which so never get a positive bound)."""

    def build():
        nx, nz, off, safe = _poly_halfplanes(nav)
        off = np.where(safe[:, None], off, np.inf)
        return np.stack([nx.T, nz.T, off.T]).astype(F32)

    return _cached(nav, "_halfplane_cache", nav.poly_pos, build)


def _outside_bound(nav: NavMesh, refs, px, pz) -> np.ndarray:
    """float32 (m,): a lower bound of the squared distance from points (px, pz) outside their
    polygons refs to anything closestPointOnPoly returns there (0 when none is known): the
    largest signed distance to the polygon's edge lines, less a margin for the boundary detail
    edges (within 1e-3 of the polygon edges) and rounding."""
    nx, nz, off = _columns(_halfplane_table(nav), refs)
    s = np.maximum.reduce(nx * px + nz * pz - off, axis=0)
    s -= _bound_margin(nav)
    return np.where(s > _ZERO, s * s, _ZERO).astype(F32)


def _bound_margin(nav: NavMesh) -> np.float32:
    """Slack of the X/Z distance bounds [Units: wu]: 1e-2 plus 1e-5 of the coordinates' size
    (boundary detail vertices lie within 1e-3 of their polygon's edges)."""
    return F32(1e-2 + 1e-5 * _coord_scale(nav))


def _coord_scale(nav: NavMesh) -> float:
    """The navmesh's largest absolute coordinate (at least 1) [Units: wu]."""
    return max(1.0, float(np.abs(nav.tile_bmin).max(initial=0.0)),
               float(np.abs(nav.tile_bmax).max(initial=0.0)))  # fmt: skip


def _candidate_grid(nav: NavMesh, hx: float, hz: float):
    """The candidate table of findNearestPoly for query boxes of X/Z half extents up to
    (hx, hz) [Units: wu], or None when a tile has no BV tree.

    A uniform X/Z grid; cell c lists, in Detour's visiting order (tile row, tile column, tile
    lookup order, BV leaf order), every BV leaf whose quantized box the (quantized, clamped)
    query box of some center in the cell may overlap: a superset that `_grid_pairs` trims with
    Detour's exact test. Per entry: the polygon, its packed quantized box, and how the cell
    lies against the polygon in X/Z (class and a lower bound of the squared distance)."""
    cache = getattr(nav, "_candidate_grid_cache", None)
    if cache is None or cache[0] is not nav.poly_pos:
        cache = (nav.poly_pos, {})
        nav._candidate_grid_cache = cache  # type: ignore[attr-defined]
    grids: dict[tuple[float, float], dict | None] = cache[1]
    key = (float(hx), float(hz))
    if key in grids:
        return grids[key]
    grid = _build_candidate_grid(nav, hx, hz)
    if len(grids) >= 8:  # a few box sizes in use at a time
        grids.clear()
    grids[key] = grid
    return grid


def _build_candidate_grid(nav: NavMesh, hx: float, hz: float):
    p = nav.params
    parts = []
    for tile in range(nav.tile_count):
        data = nav.tiles[tile]
        if data.npolys == 0:
            continue
        if data.bv_i.shape[0] == 0:
            return None
        tx, ty, _ = (int(v) for v in nav.tile_xy[tile])
        rank = nav.tiles_at(tx, ty).index(tile)
        leaf = np.flatnonzero(data.bv_i >= 0)
        parts.append((tile, ty, tx, rank, leaf, int(nav.tile_poly_base[tile]) + data.bv_i[leaf]))
    if not parts:
        return None
    tile_of = np.concatenate([np.full(t[4].shape[0], t[0]) for t in parts])
    key = np.concatenate(
        [np.stack([np.full(t[4].shape[0], t[1]), np.full(t[4].shape[0], t[2]),
                   np.full(t[4].shape[0], t[3]), t[4]], axis=1) for t in parts]
    )  # fmt: skip
    lmin = np.concatenate([nav.tiles[t[0]].bv_bmin[t[4]] for t in parts]).astype(np.int64)
    lmax = np.concatenate([nav.tiles[t[0]].bv_bmax[t[4]] for t in parts]).astype(np.int64)
    poly = np.concatenate([t[5] for t in parts]).astype(np.int64)
    order = np.lexsort((key[:, 3], key[:, 2], key[:, 1], key[:, 0]))
    tile_of, lmin, lmax, poly = tile_of[order], lmin[order], lmax[order], poly[order]
    nleaf = poly.shape[0]
    # Conservative X/Z intervals of the centers whose query box may overlap each leaf:
    # bmin >= qfac * (qmin - tbmin) - 2 and bmax <= qfac * (qmax - tbmin) + 2 (truncation
    # and the low-bit rounding), one more unit for float32 rounding. A query box wholly
    # beyond the tile's bounds is clamped onto its edge, so leaves touching an edge are
    # candidates all the way out on that side.
    tbmin = nav.tile_bmin[tile_of].astype(np.float64)
    qfac = np.array([nav.tiles[t].bv_quant_factor for t in tile_of], dtype=np.float64)
    qf32 = qfac.astype(F32)
    top = ((qf32[:, None] * (nav.tile_bmax[tile_of] - nav.tile_bmin[tile_of])).astype(np.int64)
           & 0xFFFE)  # fmt: skip
    half = np.array([hx, 0.0, hz])
    eps = 1e-3 + 1e-5 * (_coord_scale(nav) + max(hx, hz))
    lo = tbmin + (lmin - 3) / qfac[:, None] - half - eps
    hi = tbmin + (lmax + 3) / qfac[:, None] + half + eps
    lo = np.where(lmin <= 3, -np.inf, lo)
    hi = np.where(lmax >= top - 3, np.inf, hi)
    # Detour visits a tile only when the query box reaches the tile's grid cell: this bounds
    # every leaf's interval (the open ones above included) and the grid.
    tw, th = float(p.tile_width), float(p.tile_height)
    lxy = nav.tile_xy[tile_of].astype(np.float64)
    reach_lo = np.stack([p.orig[0] + lxy[:, 0] * tw, p.orig[2] + lxy[:, 1] * th], axis=1)
    reach_hi = reach_lo + np.array([tw, th])
    hxz = np.array([hx, hz])
    lo[:, [0, 2]] = np.maximum(lo[:, [0, 2]], reach_lo - hxz - 2 * eps)
    hi[:, [0, 2]] = np.minimum(hi[:, [0, 2]], reach_hi + hxz + 2 * eps)
    txy = nav.tile_xy[np.unique(tile_of)]
    gx0 = float(p.orig[0]) + txy[:, 0].min() * tw - hx - 2 * eps
    gz0 = float(p.orig[2]) + txy[:, 1].min() * th - hz - 2 * eps
    gx1 = float(p.orig[0]) + (txy[:, 0].max() + 1) * tw + hx + 2 * eps
    gz1 = float(p.orig[2]) + (txy[:, 1].max() + 1) * th + hz + 2 * eps
    size = GRID_CELL_FACTOR * min(hx, hz)
    size = max(size, (gx1 - gx0) / 4096, (gz1 - gz0) / 4096, 1e-3)
    while ((gx1 - gx0) / size + 1) * ((gz1 - gz0) / size + 1) > GRID_MAX_CELLS:
        size *= 2.0
    # Cells sized from the smaller half extent are tiny against the larger one (a box of
    # half extents (500, _, 0.05)): every leaf would be entered in millions of cells. Coarser
    # cells only add candidates that the exact test drops, so the answers do not change. Once
    # the grid is at most 2 x 2 cells a leaf is in at most 4 of them, so the loop ends.
    max_entries = max(GRID_MAX_ENTRIES, 4 * nleaf)
    while True:
        inv = 1.0 / size
        gw = int((gx1 - gx0) * inv) + 1
        gh = int((gz1 - gz0) * inv) + 1
        with np.errstate(invalid="ignore"):
            ix0 = np.clip(np.floor((lo[:, 0] - gx0) * inv), 0, gw - 1).astype(np.int64)
            ix1 = np.clip(np.floor((hi[:, 0] - gx0) * inv), 0, gw - 1).astype(np.int64)
            iz0 = np.clip(np.floor((lo[:, 2] - gz0) * inv), 0, gh - 1).astype(np.int64)
            iz1 = np.clip(np.floor((hi[:, 2] - gz0) * inv), 0, gh - 1).astype(np.int64)
        nx = ix1 - ix0 + 1
        per = nx * (iz1 - iz0 + 1)
        if int(per.sum()) <= max_entries:
            break
        size *= 2.0
    owner = np.repeat(np.arange(nleaf), per)
    local = np.arange(owner.shape[0]) - np.repeat(np.cumsum(per) - per, per)
    row, col = np.divmod(local, nx[owner])
    cx, cz = ix0[owner] + col, iz0[owner] + row
    cell = cz * gw + cx
    sort = np.argsort(cell * max(1, nleaf) + owner, kind="stable")
    owner, cell, cx, cz = owner[sort], cell[sort], cx[sort], cz[sort]
    e_poly = poly[owner]
    # How each cell lies against its polygon: by the signed distances of the cell's center
    # to the edge lines, +- the cell's reach along each normal.
    nxn, nzn, off, safe = _poly_halfplanes(nav)
    mx = gx0 + (cx + 0.5) * size
    mz = gz0 + (cz + 0.5) * size
    # Slot-major (6, entries) arrays: row-wise arithmetic and reductions are fast.
    en, ez, eoff = (_columns(np.ascontiguousarray(a.T), e_poly) for a in (nxn, nzn, off))
    sc = en * mx + ez * mz - eoff
    reach = (np.abs(en) + np.abs(ez)) * (0.5 * size)
    margin = float(_bound_margin(nav))
    with np.errstate(invalid="ignore"):
        far = np.maximum.reduce(sc - reach, axis=0)
        inner = np.maximum.reduce(sc + reach, axis=0)
    ok = safe[e_poly]
    kind = np.full(e_poly.shape[0], _MIXED, dtype=np.int8)
    kind[ok & (inner < -margin)] = _IN
    out = ok & (far > margin)
    kind[out] = _OUT
    lb = np.zeros(e_poly.shape[0], dtype=F32)
    lb[out] = ((far[out] - margin) ** 2).astype(F32)
    tri = _known_triangles(nav, e_poly, mx, mz, 0.5 * size, margin, kind == _IN)
    # Two tables: entries over or near their polygon (always tested), and entries whose cell
    # is outside (sorted by bound within the cell: a query reads them only when its best
    # over-polygon distance reaches the cell's smallest bound).
    near = kind != _OUT
    cells = gw * gh

    def table(sel, by_bound):
        c = cell[sel]
        rows = np.flatnonzero(sel)
        if by_bound:
            o = np.lexsort((owner[rows], lb[rows], c))
            rows, c = rows[o], c[o]
        # One more (empty) cell: the cell of centers off the grid.
        start = np.zeros(cells + 2, dtype=np.int64)
        np.cumsum(np.bincount(c, minlength=cells + 1), out=start[1:])
        o = owner[rows]
        return {
            "start": start, "poly": poly[o], "rank": o, "tile": tile_of[o], "kind": kind[rows],
            "lb": lb[rows], "lo": _pack3(lmin[o]), "hi": _pack3(lmax[o] + _CARRY),
            "tri": tri[rows],
        }  # fmt: skip

    out_table = table(~near, True)
    first_lb = np.full(cells + 1, np.inf, dtype=F32)
    st = out_table["start"]
    has = st[1:] > st[:-1]
    first_lb[has] = out_table["lb"][st[:-1][has]]
    return {
        "x0": gx0, "z0": gz0, "inv": inv, "gw": gw, "gh": gh,
        "near": table(near, False), "out": out_table, "out_min_lb": first_lb,
    }  # fmt: skip


def _known_triangles(nav: NavMesh, polys, mx, mz, half: float, margin: float, which):
    """Per grid entry (polygon, square cell of center (mx, mz) and half size `half`) the
    detail triangle getPolyHeight picks for every point of the cell, or -1: for the entries
    `which`, when the cell is inside a triangle by `margin` and every earlier triangle of the
    polygon is outside by `margin` or never hit (|denom| below Detour's epsilon)."""
    tri = np.full(polys.shape[0], -1, dtype=np.int64)
    e = np.flatnonzero(which)
    if e.shape[0] == 0 or nav.detail_tri_pos.shape[0] == 0:
        return tri
    terms, _ys = _detail_tri_table(nav)
    t = nav.detail_tri_pos.astype(np.float64)
    ax, az = t[:, :, 0], t[:, :, 2]
    bx, bz = np.roll(ax, -1, axis=1), np.roll(az, -1, axis=1)
    area = (ax * bz - bx * az).sum(axis=1)
    ex, ez = bx - ax, bz - az
    length = np.hypot(ex, ez)
    sign = np.where(area > 0, 1.0, -1.0)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        nx = sign * ez / length
        nz = -sign * ex / length
    off = nx * ax + nz * az
    never = np.abs(terms[7]) < _EPS_HEIGHT
    scale = 1e-9 * (1.0 + np.abs(ax).max(axis=1) + np.abs(az).max(axis=1)) ** 2
    sound = (np.abs(area) > scale) & (length > 0).all(axis=1)
    counts = nav.detail_tri_count[polys[e]].astype(np.int64)
    rows = _ranges(nav.detail_tri_base[polys[e]], counts)
    owner = np.repeat(np.arange(e.shape[0]), counts)
    px, pz = mx[e][owner], mz[e][owner]
    tnx, tnz, toff = (_columns(np.ascontiguousarray(a.T), rows) for a in (nx, nz, off))
    sc = tnx * px + tnz * pz - toff  # (3, pairs)
    reach = (np.abs(tnx) + np.abs(tnz)) * half
    with np.errstate(invalid="ignore"):
        inside = np.maximum.reduce(sc + reach, axis=0) < -margin
        inside &= sound[rows] & ~never[rows]
        outside = np.maximum.reduce(sc - reach, axis=0) > margin
        outside = never[rows] | (sound[rows] & outside)
    # The first triangle not surely missed decides: known when the cell is surely inside it.
    live = np.flatnonzero(~outside)
    first = np.full(e.shape[0], -1, dtype=np.int64)
    first[owner[live[::-1]]] = live[::-1]
    ok = first >= 0
    ok[ok] = inside[first[ok]]
    tri[e[ok]] = rows[first[ok]]
    return tri


def _query_cells(grid, cx, cz):
    """Grid cell of each center (the extra cell gw * gh, with no entries, off the grid)."""
    with np.errstate(invalid="ignore"):
        fx = np.floor((cx.astype(np.float64) - grid["x0"]) * grid["inv"])
        fz = np.floor((cz.astype(np.float64) - grid["z0"]) * grid["inv"])
        on = (fx >= 0) & (fx < grid["gw"]) & (fz >= 0) & (fz < grid["gh"])
    return np.where(on, fz * grid["gw"] + fx, grid["gw"] * grid["gh"]).astype(np.int64)


def _packed_query_box(nav: NavMesh, qmin, qmax):
    """`_quantized_box` of tile 0, packed: (bmin, bmax + carry) as int64 (n,) each. Column by
    column (NumPy is slow at broadcasting a (3,) row over (n, 3)); same float32 operations."""
    tbmin, tbmax = nav.tile_bmin[0], nav.tile_bmax[0]
    qfac = F32(nav.tiles[0].bv_quant_factor)
    qa = np.zeros(qmin.shape[0], dtype=np.int64)
    qb = np.zeros(qmin.shape[0], dtype=np.int64)
    for k in range(3):
        lo = np.minimum(np.maximum(qmin[:, k], tbmin[k]), tbmax[k]) - tbmin[k]
        hi = np.minimum(np.maximum(qmax[:, k], tbmin[k]), tbmax[k]) - tbmin[k]
        qa |= ((qfac * lo).astype(np.int64) & 0xFFFE) << (_PACK * k)
        qb |= ((((qfac * hi + _ONE).astype(np.int64) | 1) & 0xFFFF) + _CARRY) << (_PACK * k)
    return qa, qb


class _BoxTest:
    """Detour's per-tile test of many query boxes against grid entries: the tile in the
    query's tile range, then the quantized (clamped) query box overlapping the leaf's box."""

    def __init__(self, nav: NavMesh, qmin, qmax):
        p = nav.params
        self.nav, self.qmin, self.qmax = nav, qmin, qmax
        with np.errstate(invalid="ignore"):
            self.tminx = np.floor((qmin[:, 0] - p.orig[0]) / F32(p.tile_width))
            self.tminy = np.floor((qmin[:, 2] - p.orig[2]) / F32(p.tile_height))
            self.tmaxx = np.floor((qmax[:, 0] - p.orig[0]) / F32(p.tile_width))
            self.tmaxy = np.floor((qmax[:, 2] - p.orig[2]) / F32(p.tile_height))
        self.single = nav.tile_count == 1
        if self.single:
            tx, ty, _ = (int(v) for v in nav.tile_xy[0])
            self.in_range = (self.tminx <= tx) & (tx <= self.tmaxx)
            self.in_range &= (self.tminy <= ty) & (ty <= self.tmaxy)
            self.qa, self.qb = _packed_query_box(nav, qmin, qmax)

    def pairs(self, table, queries, cells, pass_flags):
        """(query ids, table rows) of the entries of cells[i] that query queries[i] visits, in
        table order per query."""
        start = table["start"][cells]
        count = table["start"][cells + 1] - start
        if self.single:
            count[~self.in_range[queries]] = 0
        rows = _ranges(start, count)
        q = np.repeat(queries, count)
        if self.single:
            qa, qb = self.qa[q], self.qb[q]
            hit = ((table["hi"][rows] - qa) & (qb - table["lo"][rows]) & _OVERLAP) == _OVERLAP
        else:
            nav = self.nav
            t = table["tile"][rows]
            txy = nav.tile_xy[t]
            hit = (self.tminx[q] <= txy[:, 0]) & (txy[:, 0] <= self.tmaxx[q])
            hit &= (self.tminy[q] <= txy[:, 1]) & (txy[:, 1] <= self.tmaxy[q])
            tbmin, tbmax = nav.tile_bmin[t], nav.tile_bmax[t]
            qfac = np.array([d.bv_quant_factor for d in nav.tiles], dtype=F32)[t][:, None]
            lo = np.minimum(np.maximum(self.qmin[q], tbmin), tbmax) - tbmin
            hi = np.minimum(np.maximum(self.qmax[q], tbmin), tbmax) - tbmin
            bmin = (qfac * lo).astype(np.int64) & 0xFFFE
            bmax = ((qfac * hi + _ONE).astype(np.int64) | 1) & 0xFFFF
            qa, qb = _pack3(bmin), _pack3(bmax + _CARRY)
            hit &= ((table["hi"][rows] - qa) & (qb - table["lo"][rows]) & _OVERLAP) == _OVERLAP
        if not pass_flags.all():
            hit &= pass_flags[table["poly"][rows]]
        sel = np.flatnonzero(hit)
        return q[sel], rows[sel]


def _first_nearest(q, d, n):
    """Per query the first strictly smallest distance below FLT_MAX among candidates listed
    query by query (q ascending) in Detour's visiting order -> (index into the candidates or
    -1 (n,), distance float32 (n,) +inf when none)."""
    best = np.full(n, -1, dtype=np.int64)
    dist = np.full(n, np.inf, dtype=F32)
    ok = np.flatnonzero(d < FLT_MAX)
    if ok.shape[0] == 0:
        return best, dist
    q, d = q[ok], d[ok]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    dmin = np.minimum.reduceat(d, starts)
    hits = np.flatnonzero(d == np.repeat(dmin, np.diff(np.r_[starts, q.shape[0]])))
    gq = q[hits]
    hits = hits[np.r_[True, gq[1:] != gq[:-1]]]
    best[q[hits]] = ok[hits]
    dist[q[hits]] = d[hits]
    return best, dist


def find_nearest_poly(nav: NavMesh, centers, halves, pass_flags):
    """findNearestPoly for many points -> (ref int64 (n,), point (n, 3) NaN none, over bool).

    Detour computes closestPointOnPoly for every candidate and keeps the first strictly
    nearest. Here the candidates come from the candidate grid (`_candidate_grid`), whose
    entries say whether the query's cell lies inside its polygon (2D) or outside it with a
    lower bound of the distance. Candidates over their polygon (inside, or found inside by
    dtPointInPolygon) are evaluated exactly first; that bounds each query's answer, and the
    candidates outside are evaluated only when their lower bound does not exceed it. A skipped
    candidate's distance is strictly above the minimum, so the first strict minimum in
    Detour's visiting order (the BV rank) is unchanged. Non-finite points are the caller's
    business (INVALID_PARAM)."""
    n = centers.shape[0]
    hx = float(halves[:, 0].max()) if n else 0.0
    hz = float(halves[:, 2].max()) if n else 0.0
    grid = _candidate_grid(nav, hx, hz) if n and hx >= 0 and hz >= 0 else None
    if grid is None:
        return _find_nearest_poly_pruned(nav, centers, halves, pass_flags)
    ref = np.full(n, -1, dtype=np.int64)
    point = np.full((n, 3), np.nan, dtype=F32)
    over = np.zeros(n, dtype=bool)
    cx, cy, cz = (np.ascontiguousarray(centers[:, k]) for k in range(3))
    box = _BoxTest(nav, (centers - halves).astype(F32), (centers + halves).astype(F32))
    cells = _query_cells(grid, cx, cz)
    near = grid["near"]
    q, rows = box.pairs(near, np.arange(n), cells, pass_flags)
    poly = near["poly"][rows]
    kind = near["kind"][rows]
    # Over-polygon candidates: the cell inside, or dtPointInPolygon on a mixed cell.
    inside = kind == _IN
    mixed = np.flatnonzero(~inside)
    qm, pm = q[mixed], poly[mixed]
    on = _inside_xz(nav, pm, cx[qm], cz[qm])
    on &= nav.poly_type[pm] != POLYTYPE_OFFMESH_CONNECTION
    inside[mixed[on]] = True
    j = np.flatnonzero(inside)
    qj, pj = q[j], poly[j]
    hj = _height_inside(nav, pj, cx[qj], cz[qj], centers, qj, near["tri"][rows[j]])
    dy = np.abs(cy[qj] - hj) - nav.tile_walkable_climb[nav.poly_tile[pj]]
    dj = np.where(dy > _ZERO, dy * dy, _ZERO).astype(F32)
    best_j, dist_j = _first_nearest(qj, dj, n)
    # Each query's best over-polygon distance bounds its answer (slack for float32 rounding).
    upper = dist_j.astype(np.float64) * (1.0 + 1e-5)
    # Outside candidates within the bound: mixed cells by the point's own distance to the
    # polygon's edge lines, then the outside entries of the queries whose cell's smallest
    # bound does not exceed theirs.
    mo = mixed[~on]
    lb = _outside_bound(nav, poly[mo], cx[q[mo]], cz[q[mo]])
    mo = mo[lb <= upper[q[mo]]]
    kq, kp, kr = [q[mo]], [poly[mo]], [near["rank"][rows[mo]]]
    far = np.flatnonzero(grid["out_min_lb"][cells] <= upper)
    if far.shape[0]:
        out = grid["out"]
        fq, frows = box.pairs(out, far, cells[far], pass_flags)
        keep = out["lb"][frows] <= upper[fq]
        kq.append(fq[keep])
        kp.append(out["poly"][frows[keep]])
        kr.append(out["rank"][frows[keep]])
    qk, pk, rk = np.concatenate(kq), np.concatenate(kp), np.concatenate(kr)
    order = np.lexsort((rk, qk))
    qk, pk, rk = qk[order], pk[order], rk[order]
    ck = closest_on_detail_edges(nav, pk, centers[qk], True)
    diff = centers[qk] - ck
    dk = (diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1] + diff[:, 2] * diff[:, 2]).astype(F32)
    best_k, dist_k = _first_nearest(qk, dk, n)
    # The over-polygon winner unless an outside one is nearer, or as near and visited first.
    rank_j = np.zeros(n, dtype=np.int64)
    rank_k = np.zeros(n, dtype=np.int64)
    got_j, got_k = best_j >= 0, best_k >= 0
    rank_j[got_j] = near["rank"][rows[j[best_j[got_j]]]]
    rank_k[got_k] = rk[best_k[got_k]]
    take_k = (best_k >= 0) & (
        (best_j < 0) | (dist_k < dist_j) | ((dist_k == dist_j) & (rank_k < rank_j))
    )
    take_j = (best_j >= 0) & ~take_k
    a, b = np.flatnonzero(take_j), best_j[take_j]
    ref[a], over[a] = pj[b], True
    point[a, 0], point[a, 1], point[a, 2] = cx[a], hj[b], cz[a]
    a, b = np.flatnonzero(take_k), best_k[take_k]
    ref[a], point[a] = pk[b], ck[b]
    return ref, point, over


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


def _find_nearest_poly_pruned(nav: NavMesh, centers, halves, pass_flags):
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
    """Per polygon and edge slot i (from vertex j = i - 1 to vertex i): float32 (4, 6, npolys)
    rows xj, zj, ex = xi - xj, ez = zi - zj as dtIntersectSegmentPoly2D computes them. Slots
    i >= nv get a zero edge: parallel to every ray with n = 0, so they neither fail nor clip.
    Slot-major (see `_edge_table`)."""

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
        table = np.stack([vj[..., 0], vj[..., 2], ex, ez], axis=0).astype(F32)
        return np.ascontiguousarray(table.transpose(0, 2, 1))

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
    xj, zj, ex, ez = _columns(_ray_edge_table(nav), refs)  # (6, m) each
    n = ez * (p0x - xj) - ex * (p0z - zj)
    d = dirz * ex - dirx * ez
    par = np.abs(d) < _EPS_SEG
    fail = np.logical_or.reduce(par & (n < _ZERO), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = n / d
    enter = np.where(par | (d >= _ZERO), -_INF32, t)
    leave = np.where(par | (d < _ZERO), _INF32, t)
    # First maximum / minimum over the slots (strictly better replaces, as Detour's scan).
    t_enter, t_leave = enter[0], leave[0]
    k_min = np.zeros(refs.shape[0], dtype=np.int64)
    k_max = np.zeros(refs.shape[0], dtype=np.int64)
    for k in range(1, 6):
        better = enter[k] > t_enter
        t_enter = np.where(better, enter[k], t_enter)
        k_min[better] = k
        better = leave[k] < t_leave
        t_leave = np.where(better, leave[k], t_leave)
        k_max[better] = k
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
    or -1, full bool (L,), axis (L,), lmin, lmax float32 (L,), sided bool (L,), direct
    (npolys * 6,) the next polygon when the slot's first link spans the edge, -1 none, -2 test
    the links)."""
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
    # The common case needs no interval test: the slot's first usable link crosses the whole
    # edge, so raycast takes it (-1: no usable link, a wall; -2: test the links in order).
    first_link = rows[:, 0]
    direct = np.where(first_link < 0, -1, -2)
    whole = first_link >= 0
    whole[whole] = full[first_link[whole]]
    direct[whole] = nav.link_ref[first_link[whole]]
    value = (rows, full, axis, lmin.astype(F32), lmax.astype(F32), sided, direct)
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


def _ray_exit(p0x, p0z, dirx, dirz, nav: NavMesh, refs):
    """The part of `intersect_segment_poly_2d` raycast reads -> (hit, tmax, seg_max): the
    same values, without the entering edge's index."""
    xj, zj, ex, ez = _columns(_ray_edge_table(nav), refs)  # (6, m) each
    n = ez * (p0x - xj) - ex * (p0z - zj)
    d = dirz * ex - dirx * ez
    par = np.abs(d) < _EPS_SEG
    fail = np.logical_or.reduce(par & (n < _ZERO), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = n / d
    neg = d < _ZERO
    # fmax / fmin skip NaN as Detour's comparisons do.
    t_enter = np.fmax.reduce(np.where(par | ~neg, -_INF32, t), axis=0)
    leave = np.where(par | neg, _INF32, t)
    t_leave = np.fmin.reduce(leave, axis=0)
    # First slot holding the minimum (Detour's scan replaces only on a strictly smaller t).
    k_max = np.zeros(refs.shape[0], dtype=np.int64)
    for k in range(5, -1, -1):
        k_max[leave[k] == t_leave] = k
    moved_min = t_enter > _ZERO
    moved_max = t_leave < _ONE
    tmin = np.where(moved_min, t_enter, _ZERO)
    tmax = np.where(moved_max, t_leave, _ONE)
    nv = nav.poly_vert_count[refs].astype(np.int64)
    seg_max = np.where(moved_max, np.where(k_max == 0, nv - 1, k_max - 1), -1)
    return ~fail & ~(tmin > tmax), tmax, seg_max


def raycast(nav: NavMesh, start_refs, starts, ends, pass_flags, max_path: int):
    """raycast for many rays (valid refs and finite points assumed) ->
    (status-bits partial/buffer int64 (n,), t float32, normal (n, 3), query ids, refs).

    One polygon step of every live ray per round; the link crossing each exit edge comes from
    a per-(polygon, edge) table of usable links with precomputed crossing intervals."""
    n = start_refs.shape[0]
    t_hit = np.zeros(n, dtype=F32)
    normal = np.zeros((n, 3), dtype=F32)
    extra = np.zeros(n, dtype=np.int64)
    link_rows, full, axis, lmin, lmax, sided, direct = _ray_links(nav, pass_flags)
    normals = _wall_normals(nav)
    rec_q, rec_r = [], []
    # The live rays' state, compacted every round: ray id, polygon, origin, direction, count.
    ray = np.flatnonzero(start_refs >= 0)
    cur = start_refs[ray].astype(np.int64)
    sx, sz = starts[ray, 0], starts[ray, 2]
    dirx, dirz = ends[ray, 0] - sx, ends[ray, 2] - sz
    count = np.zeros(ray.shape[0], dtype=np.int64)
    while ray.shape[0]:
        ok, tmax, smax = _ray_exit(sx, sz, dirx, dirz, nav, cur)
        # Rays that miss the polygon stop here (t as it is).
        if not ok.all():
            keep = np.flatnonzero(ok)
            ray, cur, sx, sz, dirx, dirz, count, tmax, smax = (
                v[keep] for v in (ray, cur, sx, sz, dirx, dirz, count, tmax, smax)
            )
        t_hit[ray] = np.maximum(t_hit[ray], tmax)
        room = count < max_path
        if room.all():
            rec_q.append(ray)
            rec_r.append(cur)
            count += 1
        else:
            rec_q.append(ray[room])
            rec_r.append(cur[room])
            count[room] += 1
            extra[ray[~room]] |= 0x10
        reached = smax == -1
        t_hit[ray[reached]] = FLT_MAX
        slot = cur * 6 + smax
        nxt = direct[np.where(reached, 0, slot)]
        nxt[reached] = -3
        test = np.flatnonzero(nxt == -2)
        if test.shape[0]:
            nxt[test] = _follow_links(
                link_rows[slot[test]], full, axis, lmin, lmax, sided, nav.link_ref,
                starts[ray[test]], ends[ray[test]], tmax[test],
            )  # fmt: skip
        wall = np.flatnonzero(nxt == -1)
        if wall.shape[0]:
            normal[ray[wall]] = normals[cur[wall], smax[wall]]
        go = nxt >= 0
        # A ray that found its buffer full stops after the step that did not fit.
        full_buf = ~room
        extra[ray[go & full_buf]] |= 0x40
        go &= ~full_buf
        keep = np.flatnonzero(go)
        ray, sx, sz, dirx, dirz, count = (v[keep] for v in (ray, sx, sz, dirx, dirz, count))
        cur = nxt[keep]
    q = np.concatenate(rec_q) if rec_q else np.zeros(0, np.int64)
    r = np.concatenate(rec_r) if rec_r else np.zeros(0, np.int64)
    # Rounds visit each ray's polygons in order: a stable sort by ray keeps that order.
    order = np.argsort(q, kind="stable")
    return extra, t_hit, normal, q[order], r[order]


def _follow_links(slots, full, axis, lmin, lmax, sided, link_ref, starts, ends, tm):
    """The polygon raycast enters through the first of each ray's edge links (slots (m, K),
    -1 padded, in Detour's order) that spans the edge or whose crossing interval holds the
    ray's exit point at t = tm; -1 where none does (a wall)."""
    m = slots.shape[0]
    nxt = np.full(m, -1, dtype=np.int64)
    todo = np.ones(m, dtype=bool)
    rows = np.arange(m)
    for kk in range(slots.shape[1]):
        k = slots[:, kk]
        has = todo & (k >= 0)
        if not has.any():
            break
        ks = np.where(has, k, 0)
        ax = axis[ks]
        sa = starts[rows, ax]
        x = sa + (ends[rows, ax] - sa) * tm
        take = has & (full[ks] | ((x >= lmin[ks]) & (x <= lmax[ks]) & sided[ks]))
        nxt = np.where(take, link_ref[ks], nxt)
        todo &= ~take
    return nxt


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


#: Navmeshes with at most this many (from, to) polygon pairs get a dense portal-link table.
PORTAL_TABLE_MAX = 1 << 22


def _portal_table(nav: NavMesh):
    """int64 (npolys * npolys): first link row from -> to (-1: none), or None when the mesh
    has too many polygons for a dense table (cached)."""
    n = nav.poly_count
    if n * n > PORTAL_TABLE_MAX:
        return None

    def build():
        keys, rows = _portal_lookup(nav)
        table = np.full(n * n, -1, dtype=np.int64)
        table[keys] = rows
        return table

    return _cached(nav, "_portal_table_cache", nav.link_start, build)


def portal_links(nav: NavMesh, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Link row getPortalPoints uses for each (from, to) pair, -1 when they are not linked."""
    n = max(1, nav.poly_count)
    frm = frm.astype(np.int64)
    to = to.astype(np.int64)
    table = _portal_table(nav)
    if table is not None:
        inside = (frm >= 0) & (frm < n) & (to >= 0) & (to < n)
        if inside.all():
            return table[frm * n + to]
        return np.where(inside, table[np.where(inside, frm * n + to, 0)], -1)
    keys, rows = _portal_lookup(nav)
    k = frm * n + to
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
    # Portals of every corridor step, query by query (query q's step 0 at row cstart[q]); the
    # last step's portal is the end point. Positions as separate x, y, z arrays: 1-D gathers
    # are much cheaper than (n, 3) row gathers.
    total = int(count.sum())
    cstart = np.cumsum(count) - count
    if polys.shape[0] == total and np.array_equal(start, cstart):
        flat_polys = polys.astype(np.int64)
    else:
        flat_polys = polys[_ranges(start, count)].astype(np.int64)
    last_rows = cstart + count - 1
    nxt = np.empty(total, dtype=np.int64)
    nxt[:-1] = flat_polys[1:]
    nxt[last_rows] = -1
    has_next = nxt >= 0
    link = np.maximum(portal_links(nav, flat_polys, np.maximum(nxt, 0)), 0)
    plx, ply, plz = (gatherable(nav.link_left)[:, k][link] for k in range(3))
    prx, pry, prz = (gatherable(nav.link_right)[:, k][link] for k in range(3))
    for k, (pl, pr) in enumerate(((plx, prx), (ply, pry), (plz, prz))):
        pl[last_rows] = end_c[:, k]
        pr[last_rows] = end_c[:, k]
    done = np.zeros(n, dtype=bool)

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

    # Step 0 with a portal right at the start point is skipped (Detour's "starting really
    # close the portal"); later steps never have index 0 (a restart resumes after the apex).
    d0, _t = dist_pt_seg_sqr_2d(
        start_c,
        np.stack([plx[cstart], ply[cstart], plz[cstart]], axis=1),
        np.stack([prx[cstart], pry[cstart], prz[cstart]], axis=1),
    )
    skip0 = has_next[cstart] & (d0 < _PORTAL_EPS)
    # Funnel state of the queries being string-pulled, compact: entry k is query act[k]
    # (entries of finished queries linger, masked by `alive`, until the next compaction).
    act = np.flatnonzero(count > 1)
    st = [start_c[act, k].copy() for k in range(3)]
    ax, ay, az = st[0], st[1], st[2]
    lx, ly, lz = st[0].copy(), st[1].copy(), st[2].copy()
    rx, ry, rz = st[0].copy(), st[1].copy(), st[2].copy()
    ai = np.zeros(act.shape[0], dtype=np.int64)
    li, ri = ai.copy(), ai.copy()
    lref = first[act].astype(np.int64)
    rref = lref.copy()
    i = skip0[act].astype(np.int64)
    cst = cstart[act]
    cnt = count[act]
    alive = np.ones(act.shape[0], dtype=bool)

    def restart(w, to_left):
        """Move the apex of entries w to the funnel's left point (where to_left, else its
        right point), append it and restart the scan there (queries whose output is complete
        are marked done)."""

        def side(a, b):
            return np.where(to_left, a[w], b[w])

        px, py, pz, pi_ = side(lx, rx), side(ly, ry), side(lz, rz), side(li, ri)
        ref = side(lref, rref)
        # DT_STRAIGHTPATH_END at the end, DT_STRAIGHTPATH_OFFMESH_CONNECTION entering a link.
        offmesh = nav.poly_type[np.maximum(ref, 0)] == POLYTYPE_OFFMESH_CONNECTION
        fl = np.where(ref < 0, 2, np.where(offmesh, 4, 0)).astype(np.uint8)
        stop = append(act[w], px, py, pz, fl, ref)
        done[stop] = True
        for arr, v in ((ax, px), (ay, py), (az, pz), (lx, px), (ly, py), (lz, pz)):
            arr[w] = v
        for arr, v in ((rx, px), (ry, py), (rz, pz), (ai, pi_), (li, pi_), (ri, pi_)):
            arr[w] = v
        i[w] = pi_

    while act.shape[0]:
        row = cst + np.minimum(i, cnt - 1)
        qlx, qly, qlz = plx[row], ply[row], plz[row]
        qrx, qry, qrz = prx[row], pry[row], prz[row]
        nref = nxt[row]
        # Right side.
        r_test = alive & (area(ax, az, rx, rz, qrx, qrz) <= _ZERO)
        tight = r_test & (equal(ax, ay, az, rx, ry, rz) | (area(ax, az, lx, lz, qrx, qrz) > _ZERO))
        if tight.any():
            rx, ry, rz = (
                np.where(tight, qrx, rx),
                np.where(tight, qry, ry),
                np.where(tight, qrz, rz),
            )
            rref = np.where(tight, nref, rref)
            ri = np.where(tight, i, ri)
        # A restart on the right skips the left side; restarts run after both sides (they
        # only touch their own entries).
        jump_r = r_test & ~tight
        restarted = bool(jump_r.any())
        l_test = ~jump_r & alive if restarted else alive
        # Left side (entries that did not restart).
        l_test = l_test & (area(ax, az, lx, lz, qlx, qlz) >= _ZERO)
        tight = l_test & (equal(ax, ay, az, lx, ly, lz) | (area(ax, az, rx, rz, qlx, qlz) < _ZERO))
        if tight.any():
            lx, ly, lz = (
                np.where(tight, qlx, lx),
                np.where(tight, qly, ly),
                np.where(tight, qlz, lz),
            )
            lref = np.where(tight, nref, lref)
            li = np.where(tight, i, li)
        jump = l_test & ~tight
        if restarted or jump.any():
            restarted = True
            w = np.flatnonzero(jump_r | jump)
            restart(w, jump_r[w])
        i += 1
        alive &= i < cnt
        if restarted:
            alive &= ~done[act]
        n_alive = int(np.count_nonzero(alive))
        if n_alive < act.shape[0] - (act.shape[0] >> 2):
            kept = np.flatnonzero(alive)
            act, cst, cnt, i, ai, li, ri = (
                act[kept], cst[kept], cnt[kept], i[kept], ai[kept], li[kept], ri[kept]
            )  # fmt: skip
            lref, rref = lref[kept], rref[kept]
            ax, ay, az = ax[kept], ay[kept], az[kept]
            lx, ly, lz = lx[kept], ly[kept], lz[kept]
            rx, ry, rz = rx[kept], ry[kept], rz[kept]
            alive = np.ones(kept.shape[0], dtype=bool)
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
