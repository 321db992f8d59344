"""The detail stage's literal delaunayHull (Recast's RecastMeshDetail.cpp, one scalar float32
operation at a time, linear edge search): the oracle the fast `core.detail._delaunay_hull` must
equal triangle for triangle (tests/core/test_detail_fast.py)."""

from __future__ import annotations

import numpy as np

from core.detail import (
    _EV_HULL,
    _EV_UNDEF,
    _circle_class,
    _find_edge,
    _overlap_edges,
    _update_left_face,
    faces_from_edges,
)

F32 = np.float32


def delaunay_hull_literal(vx, vz, hull, cache=None):
    """Recast delaunayHull on float32 points (x/z arrays): list of [a, b, c] triangles.

    ``cache``: dict shared by the calls of one polygon (points are only ever appended, so
    circumcircles and point-circle tests of existing points stay valid).
    """
    if cache is None:
        cache = {}
    npts = vx.shape[0]
    max_edges = npts * 10
    pts = list(zip(vx.tolist(), vz.tolist(), strict=True))
    # Orientation test of every ordered triple, float32 in Recast's order (vcross2 > EPS).
    ux = vx[None, :, None] - vx[:, None, None]
    uz = vz[None, :, None] - vz[:, None, None]
    wx = vx[None, None, :] - vx[:, None, None]
    wz = vz[None, None, :] - vz[:, None, None]
    left_of = (ux * wz - uz * wx) > F32(1e-5)
    edges: list[list[int]] = []

    def add_edge(s, t, lf, rf):
        if len(edges) >= max_edges:
            return _EV_UNDEF
        if _find_edge(edges, s, t) == _EV_UNDEF:
            edges.append([s, t, lf, rf])
            return len(edges) - 1
        return _EV_UNDEF

    nh = len(hull)
    for i in range(nh):
        add_edge(hull[i - 1], hull[i], _EV_HULL, _EV_UNDEF)
    nfaces = 0
    cur = 0
    while cur < len(edges):
        for side in (2, 3):
            edge = edges[cur]
            if edge[side] != _EV_UNDEF:
                continue
            # completeFacet
            if edge[2] == _EV_UNDEF:
                s, t = edge[0], edge[1]
            elif edge[3] == _EV_UNDEF:
                s, t = edge[1], edge[0]
            else:
                continue
            pt = npts
            for u in np.flatnonzero(left_of[s, t]).tolist():
                if u == s or u == t:
                    continue
                if pt == npts:  # first candidate: its circumcircle is the current one
                    pt = u
                    continue
                key = (s, t, pt, u)
                where = cache.get(key)
                if where is None:
                    where = cache[key] = _circle_class(pts, cache, s, t, pt, u)
                if where == 0:
                    continue
                if where == 2 and (
                    _overlap_edges(pts, edges, s, u) or _overlap_edges(pts, edges, t, u)
                ):
                    continue
                pt = u
            if pt < npts:
                _update_left_face(edges[cur], s, t, nfaces)
                e = _find_edge(edges, pt, s)
                if e == _EV_UNDEF:
                    add_edge(pt, s, nfaces, _EV_UNDEF)
                else:
                    _update_left_face(edges[e], pt, s, nfaces)
                e = _find_edge(edges, t, pt)
                if e == _EV_UNDEF:
                    add_edge(t, pt, nfaces, _EV_UNDEF)
                else:
                    _update_left_face(edges[e], t, pt, nfaces)
                nfaces += 1
            else:
                _update_left_face(edges[cur], s, t, _EV_HULL)
        cur += 1
    return faces_from_edges(edges, nfaces)


def _dist_pt_seg2d_sq_literal(px, pz, ax, az, bx, bz):
    """Recast distancePtSeg2d, one float32 operation at a time."""
    pqx, pqz = bx - ax, bz - az
    dx, dz = px - ax, pz - az
    d = pqx * pqx + pqz * pqz
    t = pqx * dx + pqz * dz
    if d > 0:
        t = t / d
    t = min(max(t, F32(0)), F32(1))
    dx = ax + t * pqx - px
    dz = az + t * pqz - pz
    return dx * dx + dz * dz


def poly_min_extent_literal(xs, zs):
    """Recast polyMinExtent of one polygon (float32 x/z of its vertices in order)."""
    n = len(xs)
    min_dist = F32(np.finfo(F32).max)
    for i in range(n):
        ni = (i + 1) % n
        max_edge = F32(0)
        for j in range(n):
            if j in (i, ni):
                continue
            d = _dist_pt_seg2d_sq_literal(xs[j], zs[j], xs[i], zs[i], xs[ni], zs[ni])
            max_edge = max(max_edge, d)
        min_dist = min(min_dist, max_edge)
    return np.sqrt(min_dist)


def height_gap_literal(px, py, pz, a, b, c):
    """Recast distToTriMesh's point-over-triangle test as written there, one float32
    operation at a time: |height of the triangle under the point - py| where the point lies
    over it (barycentric, 1e-4 slack), else FLT_MAX (a, b, c float32 (..., 3) corners)."""
    v0x, v0y, v0z = c[..., 0] - a[..., 0], c[..., 1] - a[..., 1], c[..., 2] - a[..., 2]
    v1x, v1y, v1z = b[..., 0] - a[..., 0], b[..., 1] - a[..., 1], b[..., 2] - a[..., 2]
    v2x = px - a[..., 0]
    v2z = pz - a[..., 2]
    dot00 = v0x * v0x + v0z * v0z
    dot01 = v0x * v1x + v0z * v1z
    dot02 = v0x * v2x + v0z * v2z
    dot11 = v1x * v1x + v1z * v1z
    dot12 = v1x * v2x + v1z * v2z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = F32(1) / (dot00 * dot11 - dot01 * dot01)
        u = (dot11 * dot02 - dot01 * dot12) * inv
        v = (dot00 * dot12 - dot01 * dot02) * inv
        eps = F32(1e-4)
        inside = (u >= -eps) & (v >= -eps) & ((u + v) <= F32(1) + eps)
        y = a[..., 1] + v0y * u + v1y * v
        return np.where(inside, np.abs(y - py), F32(np.finfo(np.float32).max))
