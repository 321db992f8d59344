"""Convex polygon mesh from region contours (Recast's rcBuildPolyMesh).

Input: a `ContourSet` (core.contours). Output: a `PolyMesh` in Recast's integer form:

- ``verts`` uint16 (nverts, 3): x [Units: cells], height [Units: ch], grid row = VoxNav iy
  [Units: cells]; Recast's (x, y, z) column order, so it compares directly with Recast.
- ``polys`` uint16 (npolys, 2 * nvp): the polygon's vertex ids (counter-clockwise seen from
  above in Recast's frame, padded with `MESH_NULL_IDX`), then per edge j (from vertex j to
  vertex j+1) the neighbour polygon across it, `MESH_NULL_IDX` = none (with a border,
  ``0x8000 | side`` marks a tile-border portal edge).
- ``regs`` uint16, ``areas`` uint8, ``flags`` uint16 (all 0; the user's) per polygon.

The rule, as Recast, one contour at a time:

1. Ear-clip the contour: an ear is a vertex whose neighbours see each other through the
   inside of the polygon; the ear with the shortest diagonal (first one on ties) is cut first.
   A stuck triangulation retries with a looser test, then gives up on the rest of the contour.
2. Weld vertices: a contour vertex reuses an existing mesh vertex with the same x and grid row
   and a height within 2 cell heights (the most recently added one).
3. Merge triangles into convex polygons of up to ``nvp`` vertices: repeatedly join the two
   polygons sharing the longest edge whose union stays convex (first pair on ties).
4. Vertices flagged `RC_BORDER_VERTEX` (tile borders) are removed and their hole retriangulated.
5. Neighbour links: two polygons are neighbours across an edge they share.

Ear clipping and greedy merging are sequential and order-sensitive, so they loop in Python
per contour over its vertices and polygons; only pairs that share an edge are scored, from a
heap, and long contours test diagonals against all edges at once with NumPy. Adjacency is
vectorized.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .context import BuildContext
from .contours import RC_BORDER_VERTEX, ContourSet, segment_hits_edges, segments_cross
from .errors import VoxNavError

#: Null vertex / neighbour id in ``polys``. [Recast: RC_MESH_NULL_IDX]
MESH_NULL_IDX = 0xFFFF
#: Region id of a polygon that covers several regions (after vertex removal).
RC_MULTIPLE_REGS = 0

ProgressFn = Callable[[float, str], None]


@dataclass
class PolyMesh:
    """Convex polygons over the walkable area, Recast's rcPolyMesh in cell units."""

    #: uint16 (nverts, 3): x [cells], height [ch], grid row = VoxNav iy [cells].
    verts: np.ndarray
    #: uint16 (npolys, 2*nvp): vertex ids then neighbour poly per edge; 0xFFFF = none.
    polys: np.ndarray
    #: uint16 (npolys,) region id of each polygon (0 = several regions).
    regs: np.ndarray
    #: uint16 (npolys,) user flags (all 0, as Recast leaves them).
    flags: np.ndarray
    #: uint8 (npolys,) area id of each polygon.
    areas: np.ndarray
    #: Most vertices per polygon. [Limit: >= 3]
    nvp: int
    #: float32 (3,) Z-up world bounds (x, y, z). [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    cs: np.float32
    ch: np.float32
    #: [Units: cells]
    border_size: int
    #: The contours' simplification error. [Units: cells]
    max_edge_error: np.float32
    #: Recast's maxpolys: the polygon capacity (sum over contours of nverts - 2).
    max_polys: int = 0

    @property
    def nverts(self) -> int:
        return int(self.verts.shape[0])

    @property
    def npolys(self) -> int:
        return int(self.polys.shape[0])

    def poly_vert_counts(self) -> np.ndarray:
        """int64 (npolys,) number of vertices of each polygon."""
        return (self.polys[:, : self.nvp] != MESH_NULL_IDX).sum(axis=1)

    def world_verts(self) -> np.ndarray:
        """float32 (nverts, 3) Z-up world positions: x = bmin.x + x*cs, y = bmin.y + row*cs,
        z = bmin.z + height*ch (float32 arithmetic, as Recast). [Units: wu]"""
        v = self.verts.astype(np.float32)
        out = np.empty((v.shape[0], 3), dtype=np.float32)
        cs = np.float32(self.cs)
        ch = np.float32(self.ch)
        out[:, 0] = np.float32(self.bmin[0]) + v[:, 0] * cs
        out[:, 1] = np.float32(self.bmin[1]) + v[:, 2] * cs
        out[:, 2] = np.float32(self.bmin[2]) + v[:, 1] * ch
        return out


# ----------------------------------------------------------------------------------------------
# Ear clipping (Recast's triangulate) on 2D integer points (x, grid row)


#: Triangulate every contour at once (`_triangulate_all`); False: one by one (`_triangulate`,
#: the literal port and the tests' oracle).
BATCH_TRIANGULATE = True
#: Merge every contour's triangles together (`_merge_all`); False: contour by contour
#: (`_merge_polys`, the tests' oracle for it).
BATCH_MERGE = True
#: Weld every contour vertex at once (`_weld_all`); False: one by one in the contour loop
#: (Recast's addVertex, the tests' oracle).
BATCH_WELD = True
#: Polygons with more vertices than this test diagonals against all edges with NumPy.
_NUMPY_TRI_MIN = 48
#: `_triangulate_all` hands its contours to the sequential loop once this few are left.
TRIANGULATE_TAIL_CONTOURS = 8


def _triangulate(
    xs: list[int],
    zs: list[int],
    start: tuple[list[int], list[bool]] | None = None,
) -> tuple[list[tuple[int, int, int]], bool]:
    """Recast's triangulate() over points i = 0..n-1. Returns (triangles as index triples,
    ok). When stuck, returns the triangles cut so far and ok = False, as Recast.

    ``start``: Recast's loop state part way, (the points left, in their order, and the ear
    flag of each): the loop goes on from there (`_triangulate_all` hands its last contours
    over) and returns only the triangles cut from then on.

    Ear clipping is sequential (each cut changes the next ears); a diagonal test of a long
    polygon runs over all its edges at once in NumPy, a short one in plain Python."""
    ind = list(range(len(xs))) if start is None else list(start[0])
    n = len(ind)

    def area2(a: int, b: int, c: int) -> int:
        return (xs[b] - xs[a]) * (zs[c] - zs[a]) - (xs[c] - xs[a]) * (zs[b] - zs[a])

    def between(a: int, b: int, c: int) -> bool:
        if area2(a, b, c) != 0:
            return False
        if xs[a] != xs[b]:
            return (xs[a] <= xs[c] <= xs[b]) or (xs[a] >= xs[c] >= xs[b])
        return (zs[a] <= zs[c] <= zs[b]) or (zs[a] >= zs[c] >= zs[b])

    big = n > _NUMPY_TRI_MIN
    if big:
        # The points left, in their order (all of them when starting).
        cx = np.asarray(xs, dtype=np.int64)[ind]
        cz = np.asarray(zs, dtype=np.int64)[ind]
        cx1 = np.roll(cx, -1)
        cz1 = np.roll(cz, -1)
        kk = np.arange(n)

    def diagonalie_np(i: int, j: int, m: int, loose: bool) -> bool:
        # diagonalie over all m edges at once: same tests, any() instead of early return.
        x0, z0 = xs[ind[i]], zs[ind[i]]
        x1, z1 = xs[ind[j]], zs[ind[j]]
        k = kk[:m]
        k1 = np.where(k + 1 < m, k + 1, 0)
        consider = (k != i) & (k1 != i) & (k != j) & (k1 != j)
        return not segment_hits_edges(x0, z0, x1, z1, cx, cz, cx1, cz1, consider, loose)

    def diagonalie(i: int, j: int, m: int, loose: bool) -> bool:
        if big:
            return diagonalie_np(i, j, m, loose)
        d0 = ind[i]
        d1 = ind[j]
        x0, z0, x1, z1 = xs[d0], zs[d0], xs[d1], zs[d1]
        for k in range(m):
            k1 = k + 1 if k + 1 < m else 0
            if k == i or k1 == i or k == j or k1 == j:
                continue
            p0 = ind[k]
            p1 = ind[k1]
            xp0, zp0, xp1, zp1 = xs[p0], zs[p0], xs[p1], zs[p1]
            if (
                (x0 == xp0 and z0 == zp0)
                or (x1 == xp0 and z1 == zp0)
                or (x0 == xp1 and z0 == zp1)
                or (x1 == xp1 and z1 == zp1)
            ):
                continue
            a1 = area2(d0, d1, p0)
            a2 = area2(d0, d1, p1)
            a3 = area2(p0, p1, d0)
            a4 = area2(p0, p1, d1)
            if a1 != 0 and a2 != 0 and a3 != 0 and a4 != 0:
                if ((a1 < 0) != (a2 < 0)) and ((a3 < 0) != (a4 < 0)):
                    return False  # proper intersection
            elif not loose and (
                between(d0, d1, p0)
                or between(d0, d1, p1)
                or between(p0, p1, d0)
                or between(p0, p1, d1)
            ):
                return False
        return True

    def in_cone(i: int, j: int, m: int, loose: bool) -> bool:
        pi = ind[i]
        pj = ind[j]
        pi1 = ind[i + 1 if i + 1 < m else 0]
        pin1 = ind[i - 1 if i >= 1 else m - 1]
        if area2(pin1, pi, pi1) <= 0:
            if loose:
                return area2(pi, pj, pin1) <= 0 and area2(pj, pi, pi1) <= 0
            return area2(pi, pj, pin1) < 0 and area2(pj, pi, pi1) < 0
        return not (area2(pi, pj, pi1) <= 0 and area2(pj, pi, pin1) <= 0)

    def diagonal(i: int, j: int, m: int, loose: bool = False) -> bool:
        return in_cone(i, j, m, loose) and diagonalie(i, j, m, loose)

    if start is None:
        ear = [False] * n
        for i in range(n):
            i1 = i + 1 if i + 1 < n else 0
            i2 = i1 + 1 if i1 + 1 < n else 0
            if diagonal(i, i2, n):
                ear[i1] = True
    else:
        ear = list(start[1])

    tris: list[tuple[int, int, int]] = []
    while n > 3:
        min_len = -1
        mini = -1
        for i in range(n):
            i1 = i + 1 if i + 1 < n else 0
            if ear[i1]:
                p0 = ind[i]
                p2 = ind[i1 + 1 if i1 + 1 < n else 0]
                dx = xs[p2] - xs[p0]
                dz = zs[p2] - zs[p0]
                length = dx * dx + dz * dz
                if min_len < 0 or length < min_len:
                    min_len = length
                    mini = i
        if mini == -1:
            # Overlapping segments: retry with the loose tests. Recast measures this length
            # to the vertex after i2 (kept as is).
            min_len = -1
            for i in range(n):
                i1 = i + 1 if i + 1 < n else 0
                i2 = i1 + 1 if i1 + 1 < n else 0
                if diagonal(i, i2, n, loose=True):
                    p0 = ind[i]
                    p2 = ind[i2 + 1 if i2 + 1 < n else 0]
                    dx = xs[p2] - xs[p0]
                    dz = zs[p2] - zs[p0]
                    length = dx * dx + dz * dz
                    if min_len < 0 or length < min_len:
                        min_len = length
                        mini = i
            if mini == -1:
                return tris, False
        i = mini
        i1 = i + 1 if i + 1 < n else 0
        i2 = i1 + 1 if i1 + 1 < n else 0
        tris.append((ind[i], ind[i1], ind[i2]))
        n -= 1
        del ind[i1]
        del ear[i1]
        if big:
            if n > _NUMPY_TRI_MIN:
                cx = np.delete(cx, i1)
                cz = np.delete(cz, i1)
                cx1 = np.roll(cx, -1)
                cz1 = np.roll(cz, -1)
            else:
                big = False
        if i1 >= n:
            i1 = 0
        i = i1 - 1 if i1 >= 1 else n - 1
        ear[i] = diagonal(i - 1 if i >= 1 else n - 1, i1, n)
        ear[i1] = diagonal(i, i1 + 1 if i1 + 1 < n else 0, n)
    tris.append((ind[0], ind[1], ind[2]))
    return tris, True


def _cross(ax, az, bx, bz, cx, cz):
    """Recast's area2 of points a, b, c given by their coordinates (integer arrays)."""
    return (bx - ax) * (cz - az) - (cx - ax) * (bz - az)


#: Most (query, contour slot) pairs one block of `_diagonals` holds (a dozen arrays of that
#: length, some 400 MB at most): a contour that merged many holes (a floor around 40 x 40
#: pillars) holds tens of thousands of points, and testing all its first ears at once took
#: 14 GB, n^2 pairs.
DIAGONAL_BLOCK_PAIRS = 1 << 22


def _diagonals(x, z, nxt, prv, alive, cstart, owner, qi, qj) -> np.ndarray:
    """Recast's diagonal(i, j) (strict: inCone and diagonalie) for many queries at once: bool
    per query pair (qi, qj) of alive vertices of one contour, tested against every alive edge
    (k, nxt[k]) of that contour. x, z: int64 flat contour points; cstart: contour offsets.
    In blocks of queries of at most `DIAGONAL_BLOCK_PAIRS` pairs (a query's answer depends
    on it alone)."""
    if qi.size == 0:
        return np.zeros(0, dtype=bool)
    if qi.size * x.shape[0] <= DIAGONAL_BLOCK_PAIRS:  # no contour holds more than all points
        return _diagonals_block(x, z, nxt, prv, alive, cstart, owner, qi, qj)
    c = owner[qi]
    pairs = np.cumsum(cstart[c + 1] - cstart[c])
    if int(pairs[-1]) <= DIAGONAL_BLOCK_PAIRS:
        return _diagonals_block(x, z, nxt, prv, alive, cstart, owner, qi, qj)
    marks = np.arange(DIAGONAL_BLOCK_PAIRS, int(pairs[-1]), DIAGONAL_BLOCK_PAIRS)
    bounds = np.unique(np.concatenate([[0], np.searchsorted(pairs, marks), [qi.size]]))
    return np.concatenate([
        _diagonals_block(x, z, nxt, prv, alive, cstart, owner, qi[lo:hi], qj[lo:hi])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    ])  # fmt: skip


def _diagonals_block(x, z, nxt, prv, alive, cstart, owner, qi, qj) -> np.ndarray:
    """`_diagonals` of one block of queries, all pairs at once."""
    # The four points' coordinates gathered once (each area2 of them is then arithmetic).
    pi1, pin1 = nxt[qi], prv[qi]
    xi, zi, xj, zj = x[qi], z[qi], x[qj], z[qj]
    xn, zn, xp, zp = x[pi1], z[pi1], x[pin1], z[pin1]
    convex = _cross(xp, zp, xi, zi, xn, zn) <= 0  # area2(pin1, i, i1)
    cone = np.where(
        convex,
        (_cross(xi, zi, xj, zj, xp, zp) < 0) & (_cross(xj, zj, xi, zi, xn, zn) < 0),
        ~((_cross(xi, zi, xj, zj, xn, zn) <= 0) & (_cross(xj, zj, xi, zi, xp, zp) <= 0)),
    )
    # diagonalie: every slot of the query's contour, alive edges only.
    c = owner[qi]
    size = cstart[c + 1] - cstart[c]
    q = np.arange(qi.size).repeat(size)
    k = cstart[c].repeat(size) + (np.arange(int(size.sum())) - (size.cumsum() - size).repeat(size))
    # Only the pairs that count go through the crossing test: as the contours lose their
    # ears, more and more of their slots are dead.
    alive_k = alive[k]
    k, q = k[alive_k], q[alive_k]
    k1 = nxt[k]
    d0, d1 = qi[q], qj[q]
    consider = ((k != d0) & (k1 != d0) & (k != d1) & (k1 != d1)).nonzero()[0]
    k, k1, q, d0, d1 = k[consider], k1[consider], q[consider], d0[consider], d1[consider]
    x0, z0, x1, z1 = x[d0], z[d0], x[d1], z[d1]
    ax, az, bx, bz = x[k], z[k], x[k1], z[k1]
    hit = segments_cross(x0, z0, x1, z1, ax, az, bx, bz)
    crossed = np.bincount(q, weights=hit, minlength=qi.size) > 0
    return cone & ~crossed


def _triangulate_all(
    x: np.ndarray, z: np.ndarray, cstart: np.ndarray
) -> tuple[list[list[tuple[int, int, int]]], list[bool]]:
    """`_triangulate` of every contour (x, z int64 flat, offsets cstart; every contour has
    >= 3 points) at once: each round clips one ear of every contour, Recast's choice (the
    shortest ear, the first in contour order), and re-tests the two ears next to it, all as
    array operations. A contour where no strict ear is left (Recast's loose retry, or its
    failure) is triangulated alone by `_triangulate` instead; once at most
    `TRIANGULATE_TAIL_CONTOURS` contours are left, `_triangulate` goes on with each from its
    state (dungeon's 15 contours: 3.5 -> 2.4 ms). Returns per contour the triangles (local
    vertex ids, Recast's order) and whether it succeeded."""
    ncont = cstart.shape[0] - 1
    n_c = np.diff(cstart)
    owner = np.repeat(np.arange(ncont), n_c)
    local = np.arange(x.shape[0]) - cstart[owner]
    nxt = cstart[owner] + (local + 1) % n_c[owner]
    prv = cstart[owner] + (local - 1) % n_c[owner]
    alive = np.ones(x.shape[0], dtype=bool)
    ear = np.zeros(x.shape[0], dtype=bool)
    every = np.arange(x.shape[0])
    ear[nxt] = _diagonals(x, z, nxt, prv, alive, cstart, owner, every, nxt[nxt])
    left = n_c.copy()
    fallback = np.zeros(ncont, dtype=bool)
    clipped: list[np.ndarray] = []  # per round: (contour, i, i1, i2) rows
    active = np.flatnonzero(left > 3)
    # Each round's ear per contour, the shortest then the first, is the minimum of one int64
    # key (squared length above the local index) over the contour's run of candidates: flat
    # indices run contour by contour, so no sort is needed. With 16-bit cell coordinates the
    # key takes under 50 bits; should it not fit, a lexsort.
    local_bits = int(n_c.max(initial=1)).bit_length()
    span_x = int(x.max(initial=0)) - int(x.min(initial=0))
    span_z = int(z.max(initial=0)) - int(z.min(initial=0))
    packed = (span_x * span_x + span_z * span_z).bit_length() + local_bits <= 62
    # Contours finished by the sequential loop from their state here (Recast's loop state is
    # the points left, in contour order, with their ear flags): the last rounds hold a few
    # long contours, and a round costs some 60 NumPy calls however few contours it clips.
    handed: dict[int, tuple[list[tuple[int, int, int]], bool]] = {}
    while active.size:
        if active.size <= TRIANGULATE_TAIL_CONTOURS:
            for c in active.tolist():
                lo, hi = int(cstart[c]), int(cstart[c + 1])
                points = np.flatnonzero(alive[lo:hi])
                handed[c] = _triangulate(
                    x[lo:hi].tolist(),
                    z[lo:hi].tolist(),
                    (points.tolist(), ear[lo + points].tolist()),
                )
            break
        act = np.zeros(ncont, dtype=bool)
        act[active] = True
        cand = (alive & act[owner] & ear[nxt]).nonzero()[0]
        i2 = nxt[nxt[cand]]
        dx, dz = x[i2] - x[cand], z[i2] - z[cand]
        length = dx * dx + dz * dz
        cand_owner = owner[cand]
        if packed and cand.size:
            key = length << local_bits
            key |= local[cand]
            starts = np.concatenate([[True], cand_owner[1:] != cand_owner[:-1]]).nonzero()[0]
            best_key = np.minimum.reduceat(key, starts)
            best = cstart[cand_owner[starts]] + (best_key & ((1 << local_bits) - 1))
        else:
            order = np.lexsort((local[cand], length, cand_owner))
            first = np.ones(order.size, dtype=bool)
            first[1:] = cand_owner[order][1:] != cand_owner[order][:-1]
            best = cand[order[first]]
        has = np.zeros(ncont, dtype=bool)
        has[owner[best]] = True
        stuck = active[~has[active]]
        fallback[stuck] = True
        i, i1 = best, nxt[best]
        i2 = nxt[i1]
        clipped.append(np.stack([owner[i], local[i], local[i1], local[i2]], axis=1))
        alive[i1] = False
        nxt[i], prv[i2] = i2, i
        left[owner[i]] -= 1
        qi = np.concatenate([prv[i], i])
        qj = np.concatenate([i2, nxt[i2]])
        result = _diagonals(x, z, nxt, prv, alive, cstart, owner, qi, qj)
        ear[i], ear[i2] = result[: i.size], result[i.size :]
        active = ((left > 3) & ~fallback).nonzero()[0]
    # The last triangle: the three points left, in contour order.
    done_here = fallback.copy()
    done_here[list(handed)] = True
    rest = np.flatnonzero(alive & ~done_here[owner])
    last = local[rest].reshape(-1, 3)
    last_owner = owner[rest][::3]
    rows = (
        np.concatenate([*clipped, np.concatenate([last_owner[:, None], last], axis=1)])
        if clipped
        else np.concatenate([last_owner[:, None], last], axis=1)
    )
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    rows = rows[~fallback[rows[:, 0]]]
    tris: list[list[tuple[int, int, int]]] = [[] for _ in range(ncont)]
    oks = [True] * ncont
    for c, a, b, d in rows.tolist():
        tris[c].append((a, b, d))
    for c, (more, ok) in handed.items():
        tris[c].extend(more)
        oks[c] = ok
    for c in np.flatnonzero(fallback).tolist():
        lo, hi = cstart[c], cstart[c + 1]
        tris[c], oks[c] = _triangulate(x[lo:hi].tolist(), z[lo:hi].tolist())
    return tris, oks


# ----------------------------------------------------------------------------------------------
# Greedy convex merging


def _merge_value(
    pa: tuple[int, ...], pb: tuple[int, ...], vx: list[int], vz: list[int], nvp: int
) -> tuple[int, int, int]:
    """Recast's getPolyMergeValue: (squared length of the shared edge or -1, ea, eb)."""
    na = len(pa)
    nb = len(pb)
    if na + nb - 2 > nvp:
        return -1, -1, -1
    ea = -1
    eb = -1
    for i in range(na):
        va0 = pa[i]
        va1 = pa[(i + 1) % na]
        if va0 > va1:
            va0, va1 = va1, va0
        for j in range(nb):
            vb0 = pb[j]
            vb1 = pb[(j + 1) % nb]
            if vb0 > vb1:
                vb0, vb1 = vb1, vb0
            if va0 == vb0 and va1 == vb1:
                ea = i
                eb = j
                break
    if ea == -1 or eb == -1:
        return -1, -1, -1

    def uleft(a: int, b: int, c: int) -> bool:
        return (vx[b] - vx[a]) * (vz[c] - vz[a]) - (vx[c] - vx[a]) * (vz[b] - vz[a]) < 0

    if not uleft(pa[(ea + na - 1) % na], pa[ea], pb[(eb + 2) % nb]):
        return -1, -1, -1
    if not uleft(pb[(eb + nb - 1) % nb], pb[eb], pa[(ea + 2) % na]):
        return -1, -1, -1
    va = pa[ea]
    vb = pa[(ea + 1) % na]
    dx = vx[va] - vx[vb]
    dz = vz[va] - vz[vb]
    return dx * dx + dz * dz, ea, eb


def _poly_edge_keys(p: tuple[int, ...]) -> list[tuple[int, int]]:
    m = len(p)
    out = []
    for k in range(m):
        a = p[k]
        b = p[k + 1 if k + 1 < m else 0]
        out.append((a, b) if a < b else (b, a))
    return out


def _merge_polys(
    polys: list[tuple[int, ...]],
    vx: list[int],
    vz: list[int],
    nvp: int,
    regs: list[int] | None = None,
    areas: list[int] | None = None,
) -> None:
    """Recast's merge loop, in place: join the best pair until none can be joined.

    Recast rescans every pair each round; here only pairs sharing an edge (the only ones that
    can score above 0) are scored, kept in a heap ordered as Recast's scan picks them (largest
    value, then first position j, then first k). An entry is stale once either polygon
    changed or moved (version counters); after a merge only the merged polygon and the one
    moved into the freed slot are rescored. Same result as the full rescan, O(n log n).
    """
    if nvp <= 3 or len(polys) < 2:
        return
    n = len(polys)
    content = list(polys)  # by id
    at = list(range(n))  # position -> id
    pos = list(range(n))  # id -> position
    ver = [0] * n
    alive = [True] * n
    edge_map: dict[tuple[int, int], set[int]] = {}
    for pid, p in enumerate(content):
        for key in _poly_edge_keys(p):
            edge_map.setdefault(key, set()).add(pid)
    heap: list[tuple[int, int, int, int, int, int, int, int, int]] = []

    def push_pair(a: int, b: int) -> None:
        if pos[a] > pos[b]:
            a, b = b, a
        v, ea, eb = _merge_value(content[a], content[b], vx, vz, nvp)
        if v > 0:
            heapq.heappush(heap, (-v, pos[a], pos[b], a, b, ver[a], ver[b], ea, eb))

    def push_all(pid: int) -> None:
        others: set[int] = set()
        for key in _poly_edge_keys(content[pid]):
            others |= edge_map[key]
        others.discard(pid)
        for o in sorted(others):
            push_pair(pid, o)

    seen: set[tuple[int, int]] = set()
    for ids in edge_map.values():
        if len(ids) < 2:
            continue
        lst = sorted(ids)
        for x in range(len(lst)):
            for y in range(x + 1, len(lst)):
                if (lst[x], lst[y]) not in seen:
                    seen.add((lst[x], lst[y]))
                    push_pair(lst[x], lst[y])

    while True:
        while heap:
            _, j, k, a, b, va, vb, ea, eb = heapq.heappop(heap)
            if alive[a] and alive[b] and ver[a] == va and ver[b] == vb:
                break
        else:
            break
        pa = content[a]
        pb = content[b]
        na = len(pa)
        nb = len(pb)
        merged = tuple(pa[(ea + 1 + i) % na] for i in range(na - 1)) + tuple(
            pb[(eb + 1 + i) % nb] for i in range(nb - 1)
        )
        for key in _poly_edge_keys(pa):
            edge_map[key].discard(a)
        for key in _poly_edge_keys(pb):
            edge_map[key].discard(b)
        alive[b] = False
        content[a] = merged
        ver[a] += 1
        for key in _poly_edge_keys(merged):
            edge_map.setdefault(key, set()).add(a)
        if regs is not None and regs[j] != regs[k]:
            regs[j] = RC_MULTIPLE_REGS
        last = len(at) - 1
        moved = at[last]
        at[k] = moved
        pos[moved] = k
        at.pop()
        if regs is not None:
            regs[k] = regs[last]
            regs.pop()
        if areas is not None:
            areas[k] = areas[last]
            areas.pop()
        push_all(a)
        if moved != b:
            ver[moved] += 1
            push_all(moved)
    polys[:] = [content[pid] for pid in at]


#: Contours with at most this many triangles are merged in lockstep (`_merge_all`); larger
#: ones (many rounds for few contours) go through the heap of `_merge_polys`.
_LOCKSTEP_MERGE_MAX = 48
#: `_merge_all` hands its groups to `_merge_polys` once this few are still merging.
MERGE_TAIL_GROUPS = 8


def _weld_all(cv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Recast's addVertex for contour vertices in order (int64 (m, 4) x, y, z, flags; x, y,
    z read as 16 bits): a vertex reuses the latest earlier one of the same x and row whose
    height is within 2, else it is new. Buckets (same x and row) are independent: in most of
    them every vertex is within 2 of the first, so all take the first one; the others run
    the sequential rule alone. Returns (welded id per vertex int64 (m,), the welded vertices
    int64 (k, 3) in creation order, bool (k,) border flag: some vertex of it is a
    RC_BORDER_VERTEX)."""
    m = cv.shape[0]
    x, y, z = cv[:, 0] & 0xFFFF, cv[:, 1] & 0xFFFF, cv[:, 2] & 0xFFFF
    key = (x << 16) | z
    order = np.argsort(key, kind="stable")  # sequence order within a bucket
    sorted_key = key[order]
    start = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]]) if m else order
    size = np.diff(start, append=m)
    bucket = np.repeat(np.arange(start.shape[0]), size)
    first = order[start][bucket]  # per sorted position: its bucket's first vertex
    near_first = np.abs(y[order] - y[first]) <= 2
    simple = np.logical_and.reduceat(near_first, start) if m else near_first
    match = np.empty(m, dtype=np.int64)  # the vertex whose welded vertex each one takes
    in_simple = simple[bucket]
    match[order[in_simple]] = first[in_simple]
    ys = y.tolist()
    for b in np.flatnonzero(~simple).tolist():
        made: list[int] = []  # the bucket's new vertices so far, oldest first
        for i in order[start[b] : start[b] + size[b]].tolist():
            for c in reversed(made):
                if abs(ys[c] - ys[i]) <= 2:
                    match[i] = c
                    break
            else:
                made.append(i)
                match[i] = i
    created = match == np.arange(m)
    new_id = np.cumsum(created) - 1
    ids = new_id[match]
    welded = np.stack([x, y, z], axis=1)[created]
    border = np.zeros(welded.shape[0], dtype=bool)
    border[ids[(cv[:, 3] & RC_BORDER_VERTEX) != 0]] = True
    return ids, welded, border


def _weld_contour(cv, verts, vx, vz, vflags, by_xz) -> list[int]:
    """Recast's addVertex for one contour's vertices (int64 (nv, 4)), one at a time: same x
    and row, height within 2, the latest such vertex first, else a new one (appended to
    verts, vx, vz, vflags and the bucket dict ``by_xz``). Returns the welded ids. The literal
    port, kept as `_weld_all`'s oracle."""
    xs = (cv[:, 0] & 0xFFFF).tolist()
    ys = (cv[:, 1] & 0xFFFF).tolist()
    zs = (cv[:, 2] & 0xFFFF).tolist()
    fl = cv[:, 3].tolist()
    index = []
    for j in range(len(xs)):
        key = (xs[j], zs[j])
        found = -1
        lst = by_xz.get(key)
        if lst is not None:
            for vid in reversed(lst):
                if abs(verts[vid][1] - ys[j]) <= 2:
                    found = vid
                    break
        if found < 0:
            found = len(verts)
            verts.append([xs[j], ys[j], zs[j]])
            vx.append(xs[j])
            vz.append(zs[j])
            vflags.append(0)
            if lst is None:
                by_xz[key] = [found]
            else:
                lst.append(found)
        index.append(found)
        if fl[j] & RC_BORDER_VERTEX:
            vflags[found] = 1
    return index


def _local_offsets(counts: np.ndarray) -> np.ndarray:
    """0 .. counts[i] - 1 for every i, concatenated."""
    firsts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(firsts, counts)


def _merge_all(
    groups: list[list[tuple[int, ...]]], vx, vz, nvp: int, offsets: list[int] | None = None
) -> None:
    """`_merge_polys` of every group (one contour's triangles), in place, with the groups of
    up to `_LOCKSTEP_MERGE_MAX` polygons merged all at once: each round rescans every pair of
    polygons sharing an edge in every group still merging (Recast's full rescan: largest
    value, then first position j, then k), merges each group's best pair and moves its last
    polygon into the freed slot. A group where an edge is shared by more than two of its
    polygons, or two polygons share more than one edge, goes through `_merge_polys` instead;
    once at most `MERGE_TAIL_GROUPS` groups still merge, `_merge_polys` goes on with each
    from its polygons as they stand (dungeon 2.2 -> 1.9 ms, undulating 3.2 -> 2.5).
    vx, vz: welded vertex x and row coordinates (int, indexable by vertex id). ``offsets``:
    per group, where its vertex ids start in vx and vz (several meshes' groups at once, each
    with its mesh's own ids; default 0)."""
    if nvp <= 3:
        return
    if offsets is None:
        offsets = [0] * len(groups)

    def merge_one(g: int) -> None:
        # `_merge_polys` on the group's polygons, their ids moved to vx/vz's and back.
        polys, offset = groups[g], offsets[g]
        if offset:
            polys[:] = [tuple(v + offset for v in poly) for poly in polys]
        _merge_polys(polys, vx, vz, nvp)
        if offset:
            polys[:] = [tuple(v - offset for v in poly) for poly in polys]

    small = [g for g, polys in enumerate(groups) if 2 <= len(polys) <= _LOCKSTEP_MERGE_MAX]
    small_set = set(small)
    for g, polys in enumerate(groups):
        if len(polys) >= 2 and g not in small_set:
            merge_one(g)
    if not small:
        return
    x = np.asarray(vx, dtype=np.int64)
    z = np.asarray(vz, dtype=np.int64)
    sizes = np.array([len(groups[g]) for g in small], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(sizes)])
    total = int(base[-1])
    rows = np.full((total, nvp), -1, dtype=np.int64)
    flat = [p for g in small for p in groups[g]]
    count = np.fromiter((len(p) for p in flat), np.int64, total)
    # Triangles (and a few larger polygons after welding) scattered into their rows at once.
    values = np.fromiter(itertools.chain.from_iterable(flat), np.int64, int(count.sum()))
    # Each slot's vertex ids moved to vx/vz's (taken back off before the groups are written).
    slot_offset = np.repeat(np.array([offsets[g] for g in small], dtype=np.int64), sizes)
    values += np.repeat(slot_offset, count)
    rows_flat = rows.reshape(-1)  # a view: the rounds below write rows, and read it
    rows_flat[np.repeat(np.arange(total) * nvp, count) + _local_offsets(count)] = values
    left = sizes.copy()  # polygons alive per group: slots base[g] .. base[g] + left[g] - 1
    n_groups = len(small)
    group_of = np.repeat(np.arange(n_groups), sizes)
    active = np.ones(n_groups, dtype=bool)
    fallback = np.zeros(n_groups, dtype=bool)
    slot_in_group = np.arange(total) - base[group_of]
    vbits = max(int(rows.max(initial=0)), 1).bit_length()
    # Slots below 2**6 (`_LOCKSTEP_MERGE_MAX`), edges below 2**3 (nvp <= 8).
    key_fits = (
        _LOCKSTEP_MERGE_MAX <= 64
        and nvp <= 8
        and max(n_groups, 1).bit_length() + 2 * vbits + 6 + 3 <= 62
    )
    # Groups finished by `_merge_polys` from their polygons here (Recast's loop state is the
    # polygon list in slot order): the last rounds hold a few groups, and a round costs some
    # 50 NumPy calls however few pairs it merges.
    handed = np.zeros(n_groups, dtype=bool)
    while True:
        if 0 < np.count_nonzero(active) <= MERGE_TAIL_GROUPS:
            handed = active.copy()
            break
        alive = active[group_of] & (slot_in_group < left[group_of])
        slots = alive.nonzero()[0]
        if slots.size == 0:
            break
        # Every edge of every alive polygon, keyed by its vertex pair.
        n_edges = count[slots]
        owner = slots.repeat(n_edges)
        edge = np.arange(int(n_edges.sum())) - (n_edges.cumsum() - n_edges).repeat(n_edges)
        # (slot, place) read as slot * nvp + place: 1-D takes, not 2-D fancy indexing.
        at_owner = owner * nvp
        va = rows_flat.take(at_owner + edge)
        vb = rows_flat.take(at_owner + (edge + 1) % count[owner])
        lo, hi = np.minimum(va, vb), np.maximum(va, vb)
        # Sorted by (group, lo, hi, slot, edge), packed in one int64 key when it fits (one
        # argsort instead of a five-key lexsort; the keys are unique, so the order is too).
        if key_fits:
            key = group_of[owner] << (2 * vbits + 6 + 3)
            key |= lo << (vbits + 6 + 3)
            key |= hi << (6 + 3)
            key |= slot_in_group[owner] << 3
            key |= edge
            order = np.argsort(key)
        else:
            order = np.lexsort((edge, slot_in_group[owner], hi, lo, group_of[owner]))
        same = (
            (group_of[owner[order]][1:] == group_of[owner[order]][:-1])
            & (lo[order][1:] == lo[order][:-1])
            & (hi[order][1:] == hi[order][:-1])
        )
        first, second = order[:-1][same], order[1:][same]
        # Malformed sharing (an edge of three polygons, two polygons sharing two edges): the
        # heap handles those groups.
        triple = same[1:] & same[:-1]
        bad_groups = group_of[owner[order[1:-1][triple]]]
        pair_key = slot_in_group[owner[first]] * total + slot_in_group[owner[second]]
        pair_group = group_of[owner[first]]
        dup = np.zeros(first.size, dtype=bool)
        if first.size > 1:
            if key_fits:  # slots below 2**6: (group, slot a, slot b) in one int64
                packed = pair_group << 12
                packed |= slot_in_group[owner[first]] << 6
                packed |= slot_in_group[owner[second]]
                o = np.argsort(packed, kind="stable")
            else:
                o = np.lexsort((pair_key, pair_group))
            d = (pair_group[o][1:] == pair_group[o][:-1]) & (pair_key[o][1:] == pair_key[o][:-1])
            dup[o[1:][d]] = True
        bad = np.unique(np.concatenate([bad_groups, pair_group[dup]]))
        if bad.size:
            fallback[bad] = True
            active[bad] = False
            ok = ~fallback[pair_group]
            first, second = first[ok], second[ok]
        # The pair as Recast scans it: pa at the lower position j, pb at k.
        a, b = owner[first], owner[second]  # a's slot is below b's (sorted above)
        ea, eb = edge[first], edge[second]
        na, nb = count[a], count[b]

        at_a, at_b = a * nvp, b * nvp
        p0 = rows_flat.take(at_a + ea)
        p1 = rows_flat.take(at_a + (ea + 1) % na)
        left_turn_a = _uleft(
            x, z, rows_flat.take(at_a + (ea + na - 1) % na), p0,
            rows_flat.take(at_b + (eb + 2) % nb),
        )  # fmt: skip
        left_turn_b = _uleft(
            x, z, rows_flat.take(at_b + (eb + nb - 1) % nb), rows_flat.take(at_b + eb),
            rows_flat.take(at_a + (ea + 2) % na),
        )  # fmt: skip
        value = (x[p0] - x[p1]) ** 2 + (z[p0] - z[p1]) ** 2
        valid = (na + nb - 2 <= nvp) & left_turn_a & left_turn_b & (value > 0)
        grp = group_of[a]
        merging = np.zeros(n_groups, dtype=bool)
        if valid.any():
            v_ids = valid.nonzero()[0]
            if key_fits and max(n_groups, 1).bit_length() + 34 + 12 <= 62:
                # (group, largest value, slot a, slot b) in one int64: values are squared
                # lengths of 16-bit coordinates (below 2**33); the keys are unique.
                packed = grp[v_ids] << (34 + 12)
                packed |= ((1 << 34) - 1 - value[v_ids]) << 12
                packed |= slot_in_group[a[v_ids]] << 6
                packed |= slot_in_group[b[v_ids]]
                o = np.argsort(packed)
            else:
                o = np.lexsort((slot_in_group[b[v_ids]], slot_in_group[a[v_ids]], -value[v_ids],
                                grp[v_ids]))  # fmt: skip
            firsts = np.ones(o.size, dtype=bool)
            firsts[1:] = grp[v_ids[o]][1:] != grp[v_ids[o]][:-1]
            best = v_ids[o[firsts]]
            merging[grp[best]] = True
            ba, bb, bea, beb = a[best], b[best], ea[best], eb[best]
            bna, bnb = count[ba], count[bb]
            width = int((bna + bnb - 2).max())
            place = np.arange(width)[None, :]
            from_a = place < (bna - 1)[:, None]
            ia = (bea[:, None] + 1 + place) % bna[:, None]
            ib = (beb[:, None] + 1 + (place - (bna - 1)[:, None])) % bnb[:, None]
            merged = np.where(from_a, rows[ba[:, None], ia], rows[bb[:, None], ib])
            merged = np.where(place < (bna + bnb - 2)[:, None], merged, -1)
            rows[ba] = -1
            rows[ba, :width] = merged
            count[ba] = bna + bnb - 2
            last = base[grp[best]] + left[grp[best]] - 1
            rows[bb] = rows[last]
            count[bb] = count[last]
            left[grp[best]] -= 1
        active &= merging
    # A polygon moves only within its group: its slot's offset is its own.
    np.subtract(rows, slot_offset[:, None], out=rows, where=rows >= 0)
    rows_l, count_l = rows.tolist(), count.tolist()  # Python lists: cheap per-polygon slices
    for i, g in enumerate(small):
        if fallback[i]:
            merge_one(g)
            continue
        lo_s, n_left = int(base[i]), int(left[i])
        groups[g][:] = [tuple(rows_l[s][: count_l[s]]) for s in range(lo_s, lo_s + n_left)]
        if handed[i]:
            merge_one(g)


def _uleft(x, z, a, b, c) -> np.ndarray:
    """Recast's uleft: c strictly left of a -> b (integer cross product < 0)."""
    return (x[b] - x[a]) * (z[c] - z[a]) - (x[c] - x[a]) * (z[b] - z[a]) < 0


# ----------------------------------------------------------------------------------------------
# Edge (tile border) vertex removal


def _can_remove_vertex(polys: list[tuple[int, ...]], rem: int) -> bool:
    """Recast's canRemoveVertex. Only the polygons holding ``rem`` add to its counts, so they
    are picked first (a containment test per polygon, in C) and walked in their order."""
    touching = [p for p in polys if rem in p]
    num_remaining_edges = 0
    for p in touching:
        num_remaining_edges += len(p) - (p.count(rem) + 1)
    if num_remaining_edges <= 2:
        return False
    share: dict[int, int] = {}
    order: list[int] = []
    for p in touching:
        nv = len(p)
        k = nv - 1
        for j in range(nv):
            if p[j] == rem or p[k] == rem:
                a, b = p[j], p[k]
                if b == rem:
                    a, b = b, a
                if b in share:
                    share[b] += 1
                else:
                    share[b] = 1
                    order.append(b)
            k = j
    open_edges = sum(1 for b in order if share[b] < 2)
    return open_edges <= 2


def _remove_vertex(
    polys: list[tuple[int, ...]],
    regs: list[int],
    areas: list[int],
    verts: list[list[int]],
    rem: int,
    nvp: int,
    max_tris: int,
) -> None:
    """Recast's removeVertex, in place: drop the polygons around ``rem``, delete the vertex,
    and retriangulate and re-merge the hole they leave."""
    edges: list[list[int]] = []
    i = 0
    while i < len(polys):
        p = polys[i]
        if rem in p:
            nv = len(p)
            k = nv - 1
            for j in range(nv):
                if p[j] != rem and p[k] != rem:
                    edges.append([p[k], p[j], regs[i], areas[i]])
                k = j
            last = len(polys) - 1
            polys[i] = polys[last]
            regs[i] = regs[last]
            areas[i] = areas[last]
            polys.pop()
            regs.pop()
            areas.pop()
        else:
            i += 1
    del verts[rem]
    for i, p in enumerate(polys):
        if max(p) > rem:
            polys[i] = tuple(v - 1 if v > rem else v for v in p)
    for e in edges:
        if e[0] > rem:
            e[0] -= 1
        if e[1] > rem:
            e[1] -= 1
    if not edges:
        return
    hole = [edges[0][0]]
    hreg = [edges[0][2]]
    harea = [edges[0][3]]
    while edges:
        match = False
        i = 0
        while i < len(edges):
            ea, eb, r, a = edges[i]
            add = False
            if hole[0] == eb:
                hole.insert(0, ea)
                hreg.insert(0, r)
                harea.insert(0, a)
                add = True
            elif hole[-1] == ea:
                hole.append(eb)
                hreg.append(r)
                harea.append(a)
                add = True
            if add:
                edges[i] = edges[-1]
                edges.pop()
                match = True
            else:
                i += 1
        if not match:
            break
    tris, _ = _triangulate([verts[h][0] for h in hole], [verts[h][2] for h in hole])
    npolys: list[tuple[int, ...]] = []
    pregs: list[int] = []
    pareas: list[int] = []
    for t in tris:
        if t[0] != t[1] and t[0] != t[2] and t[1] != t[2]:
            npolys.append((hole[t[0]], hole[t[1]], hole[t[2]]))
            if hreg[t[0]] != hreg[t[1]] or hreg[t[1]] != hreg[t[2]]:
                pregs.append(RC_MULTIPLE_REGS)
            else:
                pregs.append(hreg[t[0]])
            pareas.append(harea[t[0]])
    if not npolys:
        return
    _merge_polys(npolys, [v[0] for v in verts], [v[2] for v in verts], nvp, pregs, pareas)
    for p, r, a in zip(npolys, pregs, pareas, strict=True):
        if len(polys) >= max_tris:
            break
        polys.append(p)
        regs.append(r)
        areas.append(a)


# ----------------------------------------------------------------------------------------------
# Adjacency (vectorized)


def build_adjacency(polys: np.ndarray, nverts: int, nvp: int) -> None:
    """Fill the neighbour half of ``polys`` (uint16 (npolys, 2*nvp)) in place.

    Recast's buildMeshAdjacency: an edge stored as (v0 < v1) by one polygon pairs with the
    same edge stored reversed by another. The one-to-one case (almost every edge) is matched
    vectorized; edges shared by more than two polygons, or by a degenerate polygon with itself,
    follow Recast's linked-list order exactly (per key group, in Python).
    """
    npolys = polys.shape[0]
    if npolys == 0:
        return
    vids = polys[:, :nvp].astype(np.int64)
    valid = vids != MESH_NULL_IDX
    nv = valid.sum(axis=1)
    jj = np.arange(nvp)
    nxt = np.where(jj[None, :] + 1 < nv[:, None], jj[None, :] + 1, 0)
    v0 = vids
    v1 = np.take_along_axis(vids, nxt, axis=1)
    pi, pj = np.nonzero(valid)  # polygon, then edge order
    a = v0[pi, pj]
    b = v1[pi, pj]
    fwd = a < b
    rev = a > b
    big = np.int64(max(nverts, 1) + 1)
    fkey = a[fwd] * big + b[fwd]
    rkey = b[rev] * big + a[rev]
    fidx = np.nonzero(fwd)[0]
    ridx = np.nonzero(rev)[0]
    # Forward edges by key, latest first; reversed edges by key, earliest first.
    forder = np.lexsort((-fidx, fkey))
    rorder = np.lexsort((ridx, rkey))
    fk = fkey[forder]
    rk = rkey[rorder]
    lo = np.searchsorted(fk, rk, side="left")
    hi = np.searchsorted(fk, rk, side="right")
    rlo = np.searchsorted(rk, rk, side="left")
    rhi = np.searchsorted(rk, rk, side="right")
    # The usual case: one forward and one reversed edge of two different polygons.
    fe1 = fidx[forder[np.minimum(lo, max(fk.shape[0] - 1, 0))]] if fk.shape[0] else lo
    re1 = ridx[rorder]
    simple = (hi - lo == 1) & (rhi - rlo == 1)
    if fk.shape[0]:
        simple &= pi[fe1] != pi[re1]
    fe = fe1[simple]
    re = re1[simple]
    polys[pi[fe], nvp + pj[fe]] = pi[re]
    polys[pi[re], nvp + pj[re]] = pi[fe]
    # Shared or degenerate edges: Recast's linked-list walk, one key group at a time. A
    # reversed edge takes the latest forward edge not yet taken by another polygon (a
    # polygon's own reversed edge leaves it free for the next one).
    odd = np.nonzero(~simple & (hi > lo))[0]
    if odd.size:
        for g in np.unique(rk[odd]).tolist():
            f_lo = int(np.searchsorted(fk, g, side="left"))
            f_hi = int(np.searchsorted(fk, g, side="right"))
            r_lo = int(np.searchsorted(rk, g, side="left"))
            r_hi = int(np.searchsorted(rk, g, side="right"))
            cand = [[int(pi[e]), int(pj[e]), int(pi[e]), 0] for e in fidx[forder[f_lo:f_hi]]]
            for e in ridx[rorder[r_lo:r_hi]].tolist():
                for f in cand:
                    if f[2] == f[0]:
                        f[2] = int(pi[e])
                        f[3] = int(pj[e])
                        break
            for p0, e0, p1, e1 in cand:
                if p0 != p1:
                    polys[p0, nvp + e0] = p1
                    polys[p1, nvp + e1] = p0


def _mark_portal_edges(polys: np.ndarray, verts: np.ndarray, nvp: int, w: int, h: int) -> None:
    """With a border: open edges lying on the tile's sides get 0x8000 | side, in place."""
    vids = polys[:, :nvp].astype(np.int64)
    valid = vids != MESH_NULL_IDX
    nv = valid.sum(axis=1)
    jj = np.arange(nvp)
    nxt = np.where(jj[None, :] + 1 < nv[:, None], jj[None, :] + 1, 0)
    vb = np.take_along_axis(vids, nxt, axis=1)
    open_ = valid & (polys[:, nvp:] == MESH_NULL_IDX)
    va = np.where(valid, vids, 0)
    vb = np.where(valid, vb, 0)
    vv = verts.astype(np.int64)
    ax, az = vv[va, 0], vv[va, 2]
    bx, bz = vv[vb, 0], vv[vb, 2]
    side = np.full(vids.shape, -1, dtype=np.int64)
    side = np.where((az == 0) & (bz == 0), 3, side)
    side = np.where((ax == w) & (bx == w), 2, side)
    side = np.where((az == h) & (bz == h), 1, side)
    side = np.where((ax == 0) & (bx == 0), 0, side)
    sel = open_ & (side >= 0)
    nb = polys[:, nvp:]
    nb[sel] = (0x8000 | side[sel]).astype(np.uint16)


# ----------------------------------------------------------------------------------------------


def build_poly_mesh(
    cset: ContourSet,
    nvp: int,
    *,
    progress: ProgressFn | None = None,
    ctx: BuildContext | None = None,
) -> PolyMesh:
    """Triangulate every contour and merge the triangles into convex polygons (rcBuildPolyMesh).

    Parameters
    ----------
    cset:
        Contours from `core.contours.build_contours` (not modified).
    nvp:
        Most vertices per polygon. [Limit: >= 3] (Detour accepts at most 6.)
    progress:
        Optional ``progress(fraction in [0, 1], message)`` callback.

    Returns
    -------
    PolyMesh (see the module docstring for the layout). Contours that fail to triangulate
    keep the triangles found before the failure, as Recast.
    """
    return build_poly_meshes([cset], nvp, progress=progress)[0]


def build_poly_meshes(
    csets: list[ContourSet], nvp: int, *, progress: ProgressFn | None = None
) -> list[PolyMesh]:
    """`build_poly_mesh` of each of ``csets`` (several agents' contours, say), their contours
    ear-clipped together: a round of `_triangulate_all` clips an ear of every contour of every
    set, and the rounds are what make the stage's time on small levels, so k sets cost about
    what the one with the longest contour costs alone. Returns one PolyMesh per set, each as
    `build_poly_mesh` gives it.
    """
    if isinstance(nvp, bool) or int(nvp) != nvp or nvp < 3:
        raise VoxNavError(f"nvp (verts per polygon) must be a whole number >= 3, got {nvp!r}")
    nvp = int(nvp)
    prepared = [_prepare_contours(cset) for cset in csets]
    tri_of: list[dict[int, list[tuple[int, int, int]]]] = [{} for _ in csets]
    if BATCH_TRIANGULATE and prepared:
        # Every contour with >= 3 vertices of every set at once (each depends on its own only).
        x = np.concatenate([prep.cverts[prep.rows, 0] for prep in prepared])
        z = np.concatenate([prep.cverts[prep.rows, 2] for prep in prepared])
        sizes = np.concatenate([np.diff(prep.cstart) for prep in prepared])
        all_tris, _oks = _triangulate_all(x, z, np.concatenate([[0], np.cumsum(sizes)]))
        first = 0
        for prep, tris in zip(prepared, tri_of, strict=True):
            count = prep.tri_contours.shape[0]
            tris.update(
                zip(prep.tri_contours.tolist(), all_tris[first : first + count], strict=True)
            )
            first += count
    states = [
        _contour_polygons(cset, prep, tris, nvp, progress)
        for cset, prep, tris in zip(csets, prepared, tri_of, strict=True)
    ]
    _merge_pending(states, nvp)
    meshes = [
        _finish_poly_mesh(cset, state, nvp, progress)
        for cset, state in zip(csets, states, strict=True)
    ]
    for mesh in meshes:
        _check_polygon_count(mesh.npolys)
    return meshes


#: Most polygons one mesh (a solo bake, or a tile) may hold: a neighbour id is 16 bits, and
#: from 0x8000 on it reads as a tile-border portal (Recast's ``0x8000 | side``, Detour's
#: external link), so Recast and Detour would link such polygons wrongly without a word.
MAX_POLYGONS = 0x7FFF


def _check_polygon_count(npolys: int) -> None:
    if npolys > MAX_POLYGONS:
        raise VoxNavError(
            f"the polygon mesh has {npolys:,} polygons, more than the {MAX_POLYGONS:,} whose "
            "links Recast's and Detour's 16-bit neighbour ids can tell from tile-border portals "
            "(from 0x8000 on they would read as portals and the paths between them break): "
            "bake in tiles (tile_size), or raise cell_size or verts_per_poly"
        )


@dataclass
class _PreparedContours:
    """A checked contour set's vertices (int64 (N, 4)) and offsets, the contours with >= 3
    vertices (``tri_contours``), their vertex rows in order, their offsets among those rows
    (``cstart``) and the triangle bound ``max_tris``."""

    cverts: np.ndarray
    starts: np.ndarray
    tri_contours: np.ndarray
    rows: np.ndarray
    cstart: np.ndarray
    max_tris: int


def _prepare_contours(cset: ContourSet) -> _PreparedContours:
    """`_PreparedContours` of ``cset``; `VoxNavError` for a malformed set or one with too many
    vertices for a polygon mesh."""
    cv_shape = np.shape(cset.verts)
    if len(cv_shape) != 2 or cv_shape[1] != 4:
        raise VoxNavError(f"cset.verts must be (N, 4) contour vertices, got shape {cv_shape}")
    if np.shape(cset.verts_start) != (cset.nconts + 1,) or int(cset.verts_start[-1]) != cv_shape[0]:
        raise VoxNavError(
            "cset.verts_start must hold nconts + 1 offsets ending at len(cset.verts); "
            "build the ContourSet with core.contours.build_contours"
        )
    nverts_c = cset.nverts
    big = nverts_c >= 3
    max_vertices = int(nverts_c[big].sum())
    if max_vertices >= 0xFFFE:
        raise VoxNavError(
            f"the contours have {max_vertices} vertices, more than a polygon mesh can index "
            "(65534); split the level into tiles or raise cell_size"
        )
    starts = np.asarray(cset.verts_start)
    tri_contours = np.flatnonzero(big)
    n_big = nverts_c[tri_contours].astype(np.int64)
    rows = np.repeat(starts[tri_contours] - np.concatenate([[0], np.cumsum(n_big)[:-1]]), n_big)
    rows += np.arange(rows.shape[0])  # every vertex of the contours with >= 3, in order
    return _PreparedContours(
        cverts=np.asarray(cset.verts).astype(np.int64),
        starts=starts,
        tri_contours=tri_contours,
        rows=rows,
        cstart=np.concatenate([[0], np.cumsum(n_big)]),
        max_tris=int((nverts_c[big] - 2).sum()),
    )


@dataclass
class _MeshState:
    """A polygon mesh in the making: the welded vertices (``verts`` with their x, z and border
    flags), the polygons with their regions and areas, and the contours' polygon groups still
    to merge (``pending``: polygons, region, area)."""

    verts: list[list[int]]
    vx: list[int]
    vz: list[int]
    vflags: list[int]
    polys: list[tuple[int, ...]]
    regs: list[int]
    areas: list[int]
    pending: list[tuple[list[tuple[int, ...]], int, int]]
    max_tris: int


def _contour_polygons(
    cset: ContourSet,
    prep: _PreparedContours,
    tri_of: dict[int, list[tuple[int, int, int]]],
    nvp: int,
    progress: ProgressFn | None,
) -> _MeshState:
    """`build_poly_mesh` of ``cset`` past its checks up to the merging: its vertices welded and
    its contours' triangles ``tri_of`` (contour -> `_triangulate`'s triangles; with
    `BATCH_TRIANGULATE` off, found here) as polygons, left in ``pending`` to merge (with
    `BATCH_MERGE` off, merged here)."""
    cverts, starts, tri_contours, rows, cstart = (
        prep.cverts, prep.starts, prep.tri_contours, prep.rows, prep.cstart
    )  # fmt: skip
    max_tris = prep.max_tris
    nverts_c = cset.nverts
    reg_l = np.asarray(cset.reg).tolist()
    area_l = np.asarray(cset.area).tolist()

    verts: list[list[int]] = []
    # x and z of every welded vertex, grown with `verts` (rebuilding them per contour was
    # quadratic in the vertex count).
    vx: list[int] = []
    vz: list[int] = []
    by_xz: dict[tuple[int, int], list[int]] = {}
    vflags: list[int] = []
    polys: list[tuple[int, ...]] = []
    regs: list[int] = []
    areas: list[int] = []
    nconts = cset.nconts
    pending: list[tuple[list[tuple[int, ...]], int, int]] = []
    index_of: dict[int, list[int]] = {}
    if BATCH_WELD:
        ids, welded, border = _weld_all(cverts[rows])
        verts = welded.tolist()
        vx, vz = welded[:, 0].tolist(), welded[:, 2].tolist()
        vflags = border.astype(np.int64).tolist()
        id_list = ids.tolist()
        cstart_l = cstart.tolist()
        index_of = {
            c: id_list[cstart_l[k] : cstart_l[k + 1]] for k, c in enumerate(tri_contours.tolist())
        }
    for c in range(nconts):
        nv = int(nverts_c[c])
        if nv < 3:
            continue
        cv = cverts[starts[c] : starts[c] + nv]
        if BATCH_TRIANGULATE:
            tris = tri_of[c]
        else:
            tris, _ok = _triangulate(cv[:, 0].tolist(), cv[:, 2].tolist())
        if BATCH_WELD:
            index = index_of[c]
        else:
            index = _weld_contour(cv, verts, vx, vz, vflags, by_xz)
        cpolys: list[tuple[int, ...]] = [
            (index[t[0]], index[t[1]], index[t[2]])
            for t in tris
            if t[0] != t[1] and t[0] != t[2] and t[1] != t[2]
        ]
        if not cpolys:
            continue
        if BATCH_MERGE:
            pending.append((cpolys, reg_l[c], area_l[c]))
            continue
        _merge_polys(cpolys, vx, vz, nvp)
        polys.extend(cpolys)
        regs.extend([reg_l[c]] * len(cpolys))
        areas.extend([area_l[c]] * len(cpolys))
        if progress and (c & 15) == 15:
            progress(0.9 * c / max(nconts, 1), "polymesh: triangulating contours")
    return _MeshState(verts, vx, vz, vflags, polys, regs, areas, pending, max_tris)


def _merge_pending(states: list[_MeshState], nvp: int) -> None:
    """`_merge_all` of every state's pending groups at once (each group merges on its own
    polygons and vertices, so several meshes' groups go through its rounds together, each
    with its mesh's offset in the joined vertex lists), then the merged groups appended to the
    states' polygons. Welding only appends vertices, so every contour merges on the final
    coordinates."""
    groups: list[list[tuple[int, ...]]] = []
    offsets: list[int] = []
    vx: list[int] = []
    vz: list[int] = []
    for state in states:
        groups.extend(group for group, _reg, _area in state.pending)
        offsets.extend([len(vx)] * len(state.pending))
        vx.extend(state.vx)
        vz.extend(state.vz)
    if groups:
        _merge_all(groups, vx, vz, nvp, offsets)
    for state in states:
        for group, reg_c, area_c in state.pending:
            state.polys.extend(group)
            state.regs.extend([reg_c] * len(group))
            state.areas.extend([area_c] * len(group))
        state.pending = []


def _finish_poly_mesh(
    cset: ContourSet, state: _MeshState, nvp: int, progress: ProgressFn | None
) -> PolyMesh:
    """The polygon mesh of ``cset`` from its merged ``state``: tile-border vertices removed,
    polygons and adjacency laid out."""
    verts, vflags, polys, regs, areas = (
        state.verts, state.vflags, state.polys, state.regs, state.areas
    )  # fmt: skip
    max_tris = state.max_tris

    # Remove tile-border vertices.
    i = 0
    while i < len(verts):
        if vflags[i] and _can_remove_vertex(polys, i):
            _remove_vertex(polys, regs, areas, verts, i, nvp, max_tris)
            del vflags[i]
            continue
        i += 1

    npolys = len(polys)
    out = np.full((npolys, 2 * nvp), MESH_NULL_IDX, dtype=np.uint16)
    sizes = np.fromiter(map(len, polys), np.int64, npolys)
    flat_ids = np.fromiter(itertools.chain.from_iterable(polys), np.int64, int(sizes.sum()))
    out.reshape(-1)[np.repeat(np.arange(npolys) * (2 * nvp), sizes) + _local_offsets(sizes)] = (
        flat_ids
    )
    vert_arr = np.asarray(verts, dtype=np.uint16).reshape(-1, 3)
    build_adjacency(out, vert_arr.shape[0], nvp)
    if cset.border_size > 0:
        _mark_portal_edges(out, vert_arr, nvp, cset.width, cset.height)
    if progress:
        progress(1.0, f"polymesh: {npolys} polygons")
    return PolyMesh(
        verts=vert_arr,
        polys=out,
        regs=np.asarray(regs, dtype=np.uint16),
        flags=np.zeros(npolys, dtype=np.uint16),
        areas=np.asarray(areas, dtype=np.uint8),
        nvp=nvp,
        bmin=np.asarray(cset.bmin, dtype=np.float32).copy(),
        bmax=np.asarray(cset.bmax, dtype=np.float32).copy(),
        cs=np.float32(cset.cs),
        ch=np.float32(cset.ch),
        border_size=int(cset.border_size),
        max_edge_error=np.float32(cset.max_error),
        max_polys=max_tris,
    )


__all__ = [
    "MESH_NULL_IDX",
    "RC_MULTIPLE_REGS",
    "PolyMesh",
    "build_adjacency",
    "build_poly_mesh",
    "build_poly_meshes",
]
