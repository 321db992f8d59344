"""Detour's navmesh queries (``dtNavMeshQuery``, recastnavigation 9f4ce644) in NumPy.

`NavMeshQuery` answers questions on a `core.nav.navmesh.NavMesh` with Detour's semantics and
statuses. Every float is float32 in Detour's operation order (float32 +, -, *, / and sqrt are
correctly rounded in NumPy as in C), so answers equal the C++ bit for bit.

Two forms per query:

- the single-query form (``find_path(start_ref, end_ref, start, end)``): Python scalars or a
  3-vector in, a small typed result out; a literal port of Detour's function (float32 NumPy
  scalars), used for interactive tools and as the oracle of the batch forms;
- the batch form (``find_path_batch(...)``): arrays of queries in, arrays out, vectorized
  across queries: nearest poly, poly height, closest point, raycast and random points with array
  operations (`core.nav.batch`); find_path and find_distance_to_wall run Detour's searches in
  lockstep, one heap pop of every query per step (`core.nav.lockstep`); find_straight_path
  string-pulls in lockstep. Left as per-query loops: move_along_surface_batch, and straight
  paths with the crossings options or corridors with unlinked steps.

**Frame**: public positions are VoxNav's Z-up world (x, y, z) [Units: wu]; Detour's Y-up frame is
used inside (a column swap, exact). **Refs**: polygon refs are `NavMesh` refs (int, -1 = none);
`NavMesh.tile_poly` turns them into (tile x, tile y, index in tile).

Statuses are Detour's raw ``dtStatus`` bits (`SUCCESS`, `FAILURE`, `PARTIAL_RESULT`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import VoxNavError
from ..limits import within_reach
from .navdata import EXT_LINK, POLYTYPE_GROUND, POLYTYPE_OFFMESH_CONNECTION
from .navmesh import NO_POLY, SIDE_INTERNAL, NavMesh, as_ref, as_ref_array, whole_number

F32 = np.float32

# dtStatus bits.
FAILURE = 0x80000000
SUCCESS = 0x40000000
IN_PROGRESS = 0x20000000
WRONG_MAGIC = 0x01
WRONG_VERSION = 0x02
OUT_OF_MEMORY = 0x04
INVALID_PARAM = 0x08
BUFFER_TOO_SMALL = 0x10
OUT_OF_NODES = 0x20
PARTIAL_RESULT = 0x40

# dtStraightPathFlags and options.
STRAIGHTPATH_START = 0x01
STRAIGHTPATH_END = 0x02
STRAIGHTPATH_OFFMESH_CONNECTION = 0x04
STRAIGHTPATH_AREA_CROSSINGS = 0x01
STRAIGHTPATH_ALL_CROSSINGS = 0x02

#: Detour's FLT_MAX (ray t when the ray reaches its end without a wall).
FLT_MAX = F32(3.4028234663852886e38)
#: A* heuristic scale (Detour's H_SCALE).
H_SCALE = F32(0.999)
#: Maximum number of areas (DT_MAX_AREAS).
MAX_AREAS = 64
#: Largest area cost: path totals stay finite in float32 (at most 65535 steps, each at most
#: some 3.5e9 wu long with coordinates within +-`limits.MAX_COORDINATE`: totals below 1e35).
#: A total that overflows to inf ties with every other, and the searches no longer agree.
MAX_AREA_COST = 1e20

_NODE_OPEN = 1
_NODE_CLOSED = 2
_ZERO = F32(0)
_ONE = F32(1)
_HALF = F32(0.5)


def status_failed(status: int) -> bool:
    return (int(status) & FAILURE) != 0


def status_succeeded(status: int) -> bool:
    return (int(status) & SUCCESS) != 0


def _yup(pos, what: str = "position") -> np.ndarray:
    """Z-up (x, y, z) -> Detour Y-up (x, z, y), float32 (3,). `VoxNavError` naming ``what``
    unless ``pos`` is 3 numbers (NaN and infinity pass: the queries answer them with Detour's
    INVALID_PARAM status)."""
    try:
        p = np.asarray(pos, dtype=F32)
    except (TypeError, ValueError):
        p = None
    if p is None or p.size != 3 or pos is None:
        got = "None" if pos is None else f"{p.size} values" if p is not None else repr(pos)[:60]
        raise VoxNavError(f"{what} must be 3 numbers (x, y, z) [Units: wu], got {got}")
    return p.reshape(3)[[0, 2, 1]].copy()


def _radius(value) -> np.float32:
    """A search radius as float32 [Units: wu]; `VoxNavError` unless it is a number (NaN and
    negative radii pass: the queries answer them with Detour's INVALID_PARAM status)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise VoxNavError(f"max_radius must be a number [Units: wu], got {value!r}")
    return F32(value)


def _zup(pos) -> np.ndarray:
    return np.asarray(pos, dtype=F32)[..., [0, 2, 1]].copy()


# A query takes coordinates and box half sizes within +-`limits.MAX_COORDINATE`
# (`limits.within_reach`); beyond it (as for NaN or infinity) it answers Detour's FAILURE |
# INVALID_PARAM: a point at 3e38 came back "found" at a made-up place (float32 overflow).
_within = within_reach


def _finite(p) -> bool:
    """Every value of ``p`` usable by a query (`limits.within_reach`)."""
    return bool(np.all(_within(p)))


def _finite_rows(p: np.ndarray) -> np.ndarray:
    """bool (n,): every coordinate of row i of p (n, 3) usable (`limits.within_reach`; column
    by column: NumPy's reductions over a short last axis are slow)."""
    return _within(p[:, 0]) & _within(p[:, 1]) & _within(p[:, 2])


#: Area costs multiply distances in A*: a negative one makes it improve nodes forever, an
#: infinite (or overflowing) one makes every total through the area equal (inf).
_AREA_COST_RULE = (
    f"area costs must be 0..{MAX_AREA_COST:g} (a multiplier of the distance walked in the area; "
    ">= 1 keeps paths shortest); to keep an area out of paths, give its polygons a flag and set "
    "exclude_flags"
)


def _area_costs_ok(cost) -> np.ndarray:
    """bool per cost (float32 scalar or array): within 0..MAX_AREA_COST (NaN: False)."""
    return (cost >= _ZERO) & (cost <= F32(MAX_AREA_COST))


def _check_area_costs(cost: np.ndarray) -> None:
    """`VoxNavError` naming the first area whose cost (float32) is not 0..MAX_AREA_COST."""
    bad = ~_area_costs_ok(cost)
    if bad.any():
        area = int(np.flatnonzero(bad)[0])
        raise VoxNavError(f"area_cost[{area}] is {float(cost[area])}: {_AREA_COST_RULE}")


def _poly_flags(value, name: str) -> int:
    """Filter flags as an int: a whole number 0..0xFFFF (Detour's unsigned short)."""
    flags = whole_number(value, name, "a whole number 0..0xFFFF (polygon flag bits)")
    if not 0 <= flags <= 0xFFFF:
        raise VoxNavError(
            f"{name} must be 0..0xFFFF (polygon flag bits; 0xFFFF for all), got {value!r}"
        )
    return flags


@dataclass
class QueryFilter:
    """``dtQueryFilter``: which polygons a query may visit and what walking them costs.

    area_cost: float32 (64,) cost multiplier per area id, copied. [Limit: 0..`MAX_AREA_COST`;
    >= 1 for admissible A*]
    include_flags: a polygon passes if (flags & include_flags) != 0 ... [Limit: 0..0xFFFF]
    exclude_flags: ... and (flags & exclude_flags) == 0. [Limit: 0..0xFFFF]

    Every assignment is checked (`VoxNavError`); every query checks area_cost again, so an
    in-place write (``flt.area_cost[5] = -1``) is refused there.
    """

    area_cost: np.ndarray = field(default_factory=lambda: np.ones(MAX_AREAS, dtype=F32))
    include_flags: int = 0xFFFF
    exclude_flags: int = 0

    def __setattr__(self, name: str, value) -> None:
        if name == "area_cost":
            try:
                # A copy: set_area_cost must not write into the caller's array (or into the
                # other filters made from it).
                value = np.array(value, dtype=F32).reshape(-1)
            except (TypeError, ValueError):
                raise VoxNavError(
                    f"area_cost must be {MAX_AREAS} numbers, got {repr(value)[:60]}"
                ) from None
            if value.shape[0] != MAX_AREAS:
                raise VoxNavError(f"area_cost needs {MAX_AREAS} values, got {value.shape[0]}")
            _check_area_costs(value)
        elif name in ("include_flags", "exclude_flags"):
            value = _poly_flags(value, name)
        object.__setattr__(self, name, value)

    def set_area_cost(self, area: int, cost: float) -> None:
        index = whole_number(area, "area", f"an area id 0..{MAX_AREAS - 1}")
        if not 0 <= index < MAX_AREAS:
            raise VoxNavError(f"area must be an area id 0..{MAX_AREAS - 1}, got {area!r}")
        if isinstance(cost, (bool, np.bool_)) or not isinstance(cost, (int, float, np.number)):
            raise VoxNavError(f"the cost of area {index} must be a number, got {cost!r}")
        value = F32(cost)
        if not _area_costs_ok(value):
            raise VoxNavError(f"the cost of area {index} is {cost!r}: {_AREA_COST_RULE}")
        self.area_cost[index] = value

    def check(self) -> QueryFilter:
        """This filter, after checking area_cost again (`VoxNavError`)."""
        _check_area_costs(self.area_cost)
        return self

    def pass_filter(self, flags) -> np.ndarray | bool:
        """Polygon flags (scalar or array) -> passes the filter."""
        f = np.asarray(flags).astype(np.int64)
        ok = ((f & self.include_flags) != 0) & ((f & self.exclude_flags) == 0)
        return bool(ok) if ok.ndim == 0 else ok

    def get_cost(self, pa, pb, area: int) -> np.float32:
        """dtVdist(pa, pb) * area_cost[area] (float32, Y-up or Z-up alike)."""
        return _vdist(pa, pb) * self.area_cost[int(area)]


# ------------------------------------------------------------------- float32 helpers (scalar)
def _vdist(a, b) -> np.float32:
    dx = b[0] - a[0]
    dy = b[1] - a[1]
    dz = b[2] - a[2]
    return np.sqrt(dx * dx + dy * dy + dz * dz)


def _vdist_sqr(a, b) -> np.float32:
    dx = b[0] - a[0]
    dy = b[1] - a[1]
    dz = b[2] - a[2]
    return dx * dx + dy * dy + dz * dz


_EQUAL_THR = F32(1.0 / 16384.0) * F32(1.0 / 16384.0)


def _vequal(a, b) -> bool:
    return bool(_vdist_sqr(a, b) < _EQUAL_THR)


def _vlerp(a, b, t) -> np.ndarray:
    return np.array([a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t])


def _tri_area_2d(a, b, c) -> np.float32:
    abx = b[0] - a[0]
    abz = b[2] - a[2]
    acx = c[0] - a[0]
    acz = c[2] - a[2]
    return acx * abz - abx * acz


def _dist_pt_seg_sqr_2d(pt, p, q):
    """dtDistancePtSegSqr2D -> (squared distance, t along p->q)."""
    pqx = q[0] - p[0]
    pqz = q[2] - p[2]
    dx = pt[0] - p[0]
    dz = pt[2] - p[2]
    d = pqx * pqx + pqz * pqz
    t = pqx * dx + pqz * dz
    if d > _ZERO:
        t = t / d
    if t < _ZERO:
        t = _ZERO
    elif t > _ONE:
        t = _ONE
    dx = p[0] + t * pqx - pt[0]
    dz = p[2] + t * pqz - pt[2]
    return dx * dx + dz * dz, t


def _point_in_polygon(pt, verts, nv: int) -> bool:
    c = False
    j = nv - 1
    for i in range(nv):
        vi = verts[i]
        vj = verts[j]
        if ((vi[2] > pt[2]) != (vj[2] > pt[2])) and (
            pt[0] < (vj[0] - vi[0]) * (pt[2] - vi[2]) / (vj[2] - vi[2]) + vi[0]
        ):
            c = not c
        j = i
    return c


_HEIGHT_EPS = F32(1e-6)


def _closest_height_point_triangle(p, a, b, c):
    v0x, v0y, v0z = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    v1x, v1y, v1z = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    v2x, v2z = p[0] - a[0], p[2] - a[2]
    denom = v0x * v1z - v0z * v1x
    if abs(denom) < _HEIGHT_EPS:
        return False, _ZERO
    u = v1z * v2x - v1x * v2z
    v = v0x * v2z - v0z * v2x
    if denom < _ZERO:
        denom, u, v = -denom, -u, -v
    if u >= _ZERO and v >= _ZERO and (u + v) <= denom:
        return True, a[1] + (v0y * u + v1y * v) / denom
    return False, _ZERO


_SEG_EPS = F32(0.000001)


def _intersect_segment_poly_2d(p0, p1, verts, nv: int):
    """dtIntersectSegmentPoly2D -> (hit, tmin, tmax, seg_min, seg_max)."""
    tmin, tmax = _ZERO, _ONE
    seg_min = seg_max = -1
    dirx, dirz = p1[0] - p0[0], p1[2] - p0[2]
    j = nv - 1
    for i in range(nv):
        ex, ez = verts[i][0] - verts[j][0], verts[i][2] - verts[j][2]
        dx, dz = p0[0] - verts[j][0], p0[2] - verts[j][2]
        n = ez * dx - ex * dz
        d = dirz * ex - dirx * ez
        if abs(d) < _SEG_EPS:
            if n < _ZERO:
                return False, tmin, tmax, seg_min, seg_max
            j = i
            continue
        t = n / d
        if d < _ZERO:
            if t > tmin:
                tmin = t
                seg_min = j
                if tmin > tmax:
                    return False, tmin, tmax, seg_min, seg_max
        else:
            if t < tmax:
                tmax = t
                seg_max = j
                if tmax < tmin:
                    return False, tmin, tmax, seg_min, seg_max
        j = i
    return True, tmin, tmax, seg_min, seg_max


def _intersect_seg_seg_2d(ap, aq, bp, bq):
    ux, uz = aq[0] - ap[0], aq[2] - ap[2]
    vx, vz = bq[0] - bp[0], bq[2] - bp[2]
    wx, wz = ap[0] - bp[0], ap[2] - bp[2]
    d = ux * vz - uz * vx
    if abs(d) < F32(1e-6):
        return False, _ZERO, _ZERO
    s = (vx * wz - vz * wx) / d
    t = (ux * wz - uz * wx) / d
    return True, s, t


def _normalize(v) -> np.ndarray:
    v = np.asarray(v, dtype=F32)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero vector gives NaN, as in C
        d = _ONE / np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
        return np.array([v[0] * d, v[1] * d, v[2] * d], dtype=F32)


# ------------------------------------------------------------------------- typed results
@dataclass
class NearestPoly:
    """find_nearest_poly: status, ref (-1 none), point (Z-up, NaN when none), over_poly."""

    status: int
    ref: int
    point: np.ndarray
    over_poly: bool


@dataclass
class PolyHeight:
    status: int
    #: Z-up height (the up coordinate) of the detail surface; NaN on failure. [Units: wu]
    height: float


@dataclass
class WallHit:
    """find_distance_to_wall: distance, the wall point and normal (Z-up); NaN if no wall."""

    status: int
    distance: float
    position: np.ndarray
    normal: np.ndarray


@dataclass
class PathResult:
    """find_path: status and the polygon corridor (refs, start first)."""

    status: int
    polys: np.ndarray


@dataclass
class StraightPath:
    """find_straight_path: corner points (k, 3) Z-up, flags uint8 (k,), refs int64 (k,)."""

    status: int
    points: np.ndarray
    flags: np.ndarray
    refs: np.ndarray


@dataclass
class RaycastHit:
    """raycast: t along start->end (FLT_MAX when the end is reached), the wall normal (Z-up,
    zeros when none), visited polygons."""

    status: int
    t: float
    normal: np.ndarray
    polys: np.ndarray


@dataclass
class SurfaceMove:
    """move_along_surface: where the agent ends (Z-up) and the polygons it visited."""

    status: int
    position: np.ndarray
    visited: np.ndarray


@dataclass
class RandomPoint:
    status: int
    ref: int
    point: np.ndarray


# ---------------------------------------------------------------------------- the queries
class NavMeshQuery:
    """``dtNavMeshQuery`` on a NavMesh.

    navmesh: the `NavMesh` to query.
    max_nodes: A* / Dijkstra node pool size (Detour's ``init(nav, maxNodes)``). [Limit: 1..65535]
    """

    def __init__(self, navmesh: NavMesh, max_nodes: int = 2048):
        nodes = whole_number(max_nodes, "max_nodes (the node pool size, 1..65535)")
        if not 1 <= nodes <= 65535:
            raise VoxNavError(f"max_nodes must be in 1..65535, got {max_nodes}")
        self.nav = navmesh
        self.max_nodes = nodes
        self.default_filter = QueryFilter()
        self._bv_cache: dict[int, tuple[object, list]] = {}

    # ----------------------------------------------------------------- polygon geometry
    def _poly_verts(self, ref: int) -> np.ndarray:
        nv = int(self.nav.poly_vert_count[ref])
        return self.nav.poly_pos[ref, :nv]

    def _poly_height_yup(self, ref: int, pos) -> tuple[bool, np.float32]:
        """dtNavMesh::getPolyHeight (ground polygons)."""
        nav = self.nav
        if int(nav.poly_type[ref]) == POLYTYPE_OFFMESH_CONNECTION:
            return False, _ZERO
        nv = int(nav.poly_vert_count[ref])
        verts = nav.poly_pos[ref]
        if not _point_in_polygon(pos, verts, nv):
            return False, _ZERO
        base = int(nav.detail_tri_base[ref])
        for j in range(int(nav.detail_tri_count[ref])):
            a, b, c = nav.detail_tri_pos[base + j]
            ok, h = _closest_height_point_triangle(pos, a, b, c)
            if ok:
                return True, h
        closest = self._closest_point_on_detail_edges(ref, pos, False)
        return True, closest[1]

    def _closest_point_on_detail_edges(self, ref: int, pos, only_boundary: bool) -> np.ndarray:
        nav = self.nav
        dmin = FLT_MAX
        tmin = _ZERO
        pmin = pmax = None
        base = int(nav.detail_tri_base[ref])
        any_boundary = 1 | (1 << 2) | (1 << 4)
        for i in range(int(nav.detail_tri_count[ref])):
            tri = nav.detail_tris[base + i]
            flags = int(tri[3])
            if only_boundary and (flags & any_boundary) == 0:
                continue
            v = nav.detail_tri_pos[base + i]
            j = 2
            for k in range(3):
                boundary = ((flags >> (j * 2)) & 0x3) & 1
                if boundary == 0 and (only_boundary or int(tri[j]) < int(tri[k])):
                    j = k
                    continue
                d, t = _dist_pt_seg_sqr_2d(pos, v[j], v[k])
                if d < dmin:
                    dmin, tmin, pmin, pmax = d, t, v[j], v[k]
                j = k
        if pmin is None:
            return np.asarray(pos, dtype=F32).copy()
        return _vlerp(pmin, pmax, tmin)

    def _closest_point_on_poly_yup(self, ref: int, pos) -> tuple[np.ndarray, bool]:
        """dtNavMesh::closestPointOnPoly -> (closest Y-up, pos over poly)."""
        closest = np.array(pos, dtype=F32)
        ok, h = self._poly_height_yup(ref, pos)
        if ok:
            closest[1] = h
            return closest, True
        if int(self.nav.poly_type[ref]) == POLYTYPE_OFFMESH_CONNECTION:
            v = self._poly_verts(ref)
            _, t = _dist_pt_seg_sqr_2d(pos, v[0], v[1])
            return _vlerp(v[0], v[1], t), False
        return self._closest_point_on_detail_edges(ref, pos, True), False

    def _boundary_point_yup(self, ref: int, pos) -> np.ndarray:
        """closestPointOnPolyBoundary (Y-up)."""
        nv = int(self.nav.poly_vert_count[ref])
        verts = self.nav.poly_pos[ref]
        inside = False
        ed = []
        et = []
        j = nv - 1
        for i in range(nv):
            vi, vj = verts[i], verts[j]
            if ((vi[2] > pos[2]) != (vj[2] > pos[2])) and (
                pos[0] < (vj[0] - vi[0]) * (pos[2] - vi[2]) / (vj[2] - vi[2]) + vi[0]
            ):
                inside = not inside
            j = i
        for j in range(nv):
            d, t = _dist_pt_seg_sqr_2d(pos, verts[j], verts[(j + 1) % nv])
            ed.append(d)
            et.append(t)
        if inside:
            return np.array(pos, dtype=F32)
        imin = 0
        for i in range(1, nv):
            if ed[i] < ed[imin]:
                imin = i
        return _vlerp(verts[imin], verts[(imin + 1) % nv], et[imin])

    def _query_polygons_yup(self, center, half, flt: QueryFilter) -> list[int]:
        """queryPolygons: refs whose BV box overlaps center +- half, Detour's order."""
        nav = self.nav
        qmin = np.array([center[i] - half[i] for i in range(3)], dtype=F32)
        qmax = np.array([center[i] + half[i] for i in range(3)], dtype=F32)
        # Only the grid cells that hold tiles: Detour visits every cell the box spans, which
        # for a box of half extents 1e30 is some 10^60 cells (the same tiles, in its order).
        minx, miny, maxx, maxy = nav.tile_range(qmin, qmax)
        out: list[int] = []
        for y in range(miny, maxy + 1):
            for x in range(minx, maxx + 1):
                for tile in nav.tiles_at(x, y):
                    out.extend(self._query_polygons_in_tile(tile, qmin, qmax, flt))
        return out

    def _query_polygons_in_tile(self, tile: int, qmin, qmax, flt: QueryFilter) -> list[int]:
        nav = self.nav
        data = nav.tiles[tile]
        base = int(nav.tile_poly_base[tile])
        out = []
        if data.bv_i.shape[0]:
            tbmin, tbmax = nav.tile_bmin[tile], nav.tile_bmax[tile]
            qfac = F32(data.bv_quant_factor)
            bmin = []
            bmax = []
            for a in range(3):
                lo = min(max(qmin[a], tbmin[a]), tbmax[a]) - tbmin[a]
                hi = min(max(qmax[a], tbmin[a]), tbmax[a]) - tbmin[a]
                bmin.append(int(qfac * lo) & 0xFFFE)
                bmax.append(int(qfac * hi + _ONE) | 1)
            nodes = self._bv_lists(tile)
            passes = self._pass_list(flt)
            node = 0
            end = len(nodes)
            b0, b1, b2 = bmin
            x0, x1, x2 = bmax
            while node < end:
                n0, n1, n2, m0, m1, m2, i = nodes[node]
                overlap = not (b0 > m0 or x0 < n0 or b1 > m1 or x1 < n1 or b2 > m2 or x2 < n2)
                if i >= 0:
                    if overlap and passes[base + i]:
                        out.append(base + i)
                    node += 1
                elif overlap:
                    node += 1
                else:
                    node -= i
            return out
        for i in range(data.npolys):
            ref = base + i
            if int(nav.poly_type[ref]) == POLYTYPE_OFFMESH_CONNECTION:
                continue
            if not flt.pass_filter(nav.poly_flags[ref]):
                continue
            v = self._poly_verts(ref)
            pmin, pmax = v.min(axis=0), v.max(axis=0)
            if not (
                qmin[0] > pmax[0]
                or qmax[0] < pmin[0]
                or qmin[1] > pmax[1]
                or qmax[1] < pmin[1]
                or qmin[2] > pmax[2]
                or qmax[2] < pmin[2]
            ):
                out.append(ref)
        return out

    def _bv_lists(self, tile: int) -> list:
        """The tile's BV nodes as Python tuples (bmin xyz, bmax xyz, i) for the scalar walk."""
        data = self.nav.tiles[tile]
        hit = self._bv_cache.get(tile)
        nodes = hit[1] if hit is not None and hit[0] is data else None
        if nodes is None:
            table = np.concatenate(
                [data.bv_bmin.astype(np.int64), data.bv_bmax.astype(np.int64),
                 data.bv_i.astype(np.int64)[:, None]], axis=1,
            )  # fmt: skip
            nodes = [tuple(row) for row in table.tolist()]
            self._bv_cache[tile] = (data, nodes)
        return nodes

    def _nearest_yup(self, center, half, flt: QueryFilter):
        """findNearestPoly core -> (status, ref, point Y-up or None, over)."""
        if not (_finite(center) and _finite(half)):
            return FAILURE | INVALID_PARAM, NO_POLY, None, False
        nearest = NO_POLY
        best_d = FLT_MAX
        best_pt = None
        best_over = False
        for ref in self._query_polygons_yup(center, half, flt):
            closest, over = self._closest_point_on_poly_yup(ref, center)
            if over:
                d = (
                    abs(center[1] - closest[1])
                    - self.nav.tile_walkable_climb[self.nav.poly_tile[ref]]
                )
                d = d * d if d > _ZERO else _ZERO
            else:
                dx = center[0] - closest[0]
                dy = center[1] - closest[1]
                dz = center[2] - closest[2]
                d = dx * dx + dy * dy + dz * dz
            if d < best_d:
                best_d, nearest, best_pt, best_over = d, ref, closest, over
        return SUCCESS, nearest, best_pt, best_over

    # ----------------------------------------------------------------- public: single query
    def _filter(self, flt: QueryFilter | None) -> QueryFilter:
        if flt is None:
            return self.default_filter
        if not isinstance(flt, QueryFilter):
            raise VoxNavError(f"flt must be a QueryFilter or None, got {type(flt).__name__}")
        return flt.check()

    def find_nearest_poly(
        self, center, half_extents=(2.0, 2.0, 4.0), flt: QueryFilter | None = None
    ) -> NearestPoly:
        """``findNearestPoly``: the polygon nearest to `center` inside the box center +-
        half_extents (Z-up, [Units: wu]). A point over a polygon and within the agent's climb of
        its surface counts as distance 0. status SUCCESS with ref -1 when no polygon is in the
        box; FAILURE | INVALID_PARAM for NaN or infinite input, or input beyond
        +-`limits.MAX_COORDINATE`."""
        c = _yup(center, "center")
        h = _yup(half_extents, "half_extents")
        status, ref, pt, over = self._nearest_yup(c, h, self._filter(flt))
        point = _zup(pt) if pt is not None else np.full(3, np.nan, dtype=F32)
        return NearestPoly(int(status), int(ref), point, bool(over) if pt is not None else False)

    def closest_point_on_poly(self, ref: int, pos) -> tuple[int, np.ndarray, bool]:
        """``closestPointOnPoly``: (status, closest point Z-up on the detail surface, pos is
        over the polygon)."""
        ref, p = as_ref(ref), _yup(pos, "pos")
        if not self.nav.is_valid_ref(ref) or not _finite(p):
            return FAILURE | INVALID_PARAM, np.full(3, np.nan, dtype=F32), False
        closest, over = self._closest_point_on_poly_yup(ref, p)
        return SUCCESS, _zup(closest), over

    def closest_point_on_poly_boundary(self, ref: int, pos) -> tuple[int, np.ndarray]:
        """``closestPointOnPolyBoundary``: pos itself when inside the polygon (2D), else the
        nearest point of its edges (status, point Z-up)."""
        ref, p = as_ref(ref), _yup(pos, "pos")
        if not self.nav.is_valid_ref(ref) or not _finite(p):
            return FAILURE | INVALID_PARAM, np.full(3, np.nan, dtype=F32)
        return SUCCESS, _zup(self._boundary_point_yup(ref, p))

    def get_poly_height(self, ref: int, pos) -> PolyHeight:
        """``getPolyHeight``: the detail-mesh height under pos (x, y of a Z-up point); on an
        off-mesh link's polygon, the height along the link at its point nearest pos (as
        dtNavMeshQuery's). FAILURE | INVALID_PARAM when pos is not over the polygon or the
        ref is invalid."""
        ref, p = as_ref(ref), _yup(pos, "pos")
        if not self.nav.is_valid_ref(ref) or not (_finite(p[0]) and _finite(p[2])):
            return PolyHeight(FAILURE | INVALID_PARAM, float("nan"))
        if int(self.nav.poly_type[ref]) == POLYTYPE_OFFMESH_CONNECTION:
            # dtNavMeshQuery::getPolyHeight answers for a link: the height along it at the
            # point of its segment nearest pos (dtNavMesh::getPolyHeight does not).
            v = self._poly_verts(ref)
            _, t = _dist_pt_seg_sqr_2d(p, v[0], v[1])
            return PolyHeight(SUCCESS, float(v[0][1] + (v[1][1] - v[0][1]) * t))
        ok, h = self._poly_height_yup(ref, p)
        if not ok:
            return PolyHeight(FAILURE | INVALID_PARAM, float("nan"))
        return PolyHeight(SUCCESS, float(h))

    def find_distance_to_wall(
        self, ref: int, center, max_radius: float, flt: QueryFilter | None = None
    ) -> WallHit:
        """``findDistanceToWall``: distance from center to the nearest wall edge reachable
        within max_radius [Units: wu] [Limit: >= 0]. With no wall in range: distance =
        max_radius and position/normal NaN (Detour leaves them unwritten)."""
        status, dist, pos, normal = self._wall_yup(
            as_ref(ref), _yup(center, "center"), _radius(max_radius), flt
        )
        return WallHit(int(status), float(dist), _zup(pos), _zup(normal))

    def _wall_yup(self, start_ref, center, max_radius, flt):
        nav = self.nav
        flt = self._filter(flt)
        nan3 = np.full(3, np.nan, dtype=F32)
        if (
            not nav.is_valid_ref(start_ref)
            or not _finite(center)
            or not (max_radius >= _ZERO)
            or not np.isfinite(max_radius)
        ):
            return FAILURE | INVALID_PARAM, F32(np.nan), nan3, nan3
        pool = _NodePool(self.max_nodes)
        heap = _NodeQueue(pool)
        start = pool.get(start_ref, 0)
        pool.pos[start] = center
        pool.total[start] = _ZERO
        pool.flags[start] = _NODE_OPEN
        heap.push(start)
        radius_sqr = max_radius * max_radius
        hit_pos = nan3.copy()
        status = SUCCESS
        link_start, link_ref, link_edge = nav.link_start, nav.link_ref, nav.link_edge
        while heap.size:
            best = heap.pop()
            pool.flags[best] = (pool.flags[best] & ~_NODE_OPEN) | _NODE_CLOSED
            best_ref = pool.id[best]
            parent_ref = pool.id[pool.pidx[best] - 1] if pool.pidx[best] else NO_POLY
            nv = int(nav.poly_vert_count[best_ref])
            verts = nav.poly_pos[best_ref]
            lo, hi = int(link_start[best_ref]), int(link_start[best_ref + 1])
            tile_base = int(nav.tile_poly_base[nav.poly_tile[best_ref]])
            j = nv - 1
            for i in range(nv):
                nei = int(nav.poly_neis[best_ref, j])
                if nei & EXT_LINK:
                    solid = True
                    for k in range(lo, hi):
                        if int(link_edge[k]) == j:
                            if flt.pass_filter(nav.poly_flags[link_ref[k]]):
                                solid = False
                            break
                    if not solid:
                        j = i
                        continue
                elif nei:
                    if flt.pass_filter(nav.poly_flags[tile_base + nei - 1]):
                        j = i
                        continue
                vj, vi = verts[j], verts[i]
                dist_sqr, tseg = _dist_pt_seg_sqr_2d(center, vj, vi)
                if dist_sqr > radius_sqr:
                    j = i
                    continue
                radius_sqr = dist_sqr
                hit_pos = np.array(
                    [
                        vj[0] + (vi[0] - vj[0]) * tseg,
                        vj[1] + (vi[1] - vj[1]) * tseg,
                        vj[2] + (vi[2] - vj[2]) * tseg,
                    ],
                    dtype=F32,
                )
                j = i
            for k in range(lo, hi):
                nref = int(link_ref[k])
                if nref == parent_ref:
                    continue
                if int(nav.poly_type[nref]) == POLYTYPE_OFFMESH_CONNECTION:
                    continue
                e = int(link_edge[k])
                va = verts[e]
                vb = verts[(e + 1) % nv]
                dist_sqr, _ = _dist_pt_seg_sqr_2d(center, va, vb)
                if dist_sqr > radius_sqr:
                    continue
                if not flt.pass_filter(nav.poly_flags[nref]):
                    continue
                node = pool.get(nref, 0)
                if node < 0:
                    status |= OUT_OF_NODES
                    continue
                if pool.flags[node] & _NODE_CLOSED:
                    continue
                if pool.flags[node] == 0:
                    pool.pos[node] = nav.link_mid[k]
                total = pool.total[best] + _vdist(pool.pos[best], pool.pos[node])
                if (pool.flags[node] & _NODE_OPEN) and total >= pool.total[node]:
                    continue
                pool.flags[node] &= ~_NODE_CLOSED
                pool.pidx[node] = best + 1
                pool.total[node] = total
                if pool.flags[node] & _NODE_OPEN:
                    heap.modify(node)
                else:
                    pool.flags[node] |= _NODE_OPEN
                    heap.push(node)
        normal = _normalize(
            np.array([center[0] - hit_pos[0], center[1] - hit_pos[1], center[2] - hit_pos[2]])
        )
        return status, np.sqrt(radius_sqr), hit_pos, normal

    def find_path(
        self, start_ref: int, end_ref: int, start_pos, end_pos, flt: QueryFilter | None = None,
        max_path: int = 256,
    ) -> PathResult:  # fmt: skip
        """``findPath``: A* over polygons from start_ref to end_ref, costs between edge mid
        points (the start and end positions at the ends), Detour's node pool of max_nodes and
        open list. When end_ref is not reached: the path to the node closest to the end, status
        | PARTIAL_RESULT (| OUT_OF_NODES when the pool ran out). At most max_path polygons
        (| BUFFER_TOO_SMALL). Invalid refs or non-finite positions: FAILURE | INVALID_PARAM."""
        status, polys = self._find_path_fast(
            as_ref(start_ref, "start_ref"), as_ref(end_ref, "end_ref"),
            _yup(start_pos, "start_pos"), _yup(end_pos, "end_pos"), self._filter(flt),
            whole_number(max_path, "max_path"),
        )  # fmt: skip
        return PathResult(int(status), np.asarray(polys, dtype=np.int64))

    def _search_tables(self):
        from .search import SearchTables

        tables = getattr(self, "_tables", None)
        if tables is None or tables.nav is not self.nav:
            tables = self._tables = SearchTables(self.nav)
        return tables

    def _find_path_fast(self, start_ref, end_ref, start_pos, end_pos, flt, max_path):
        """findPath on precomputed tables (`core.nav.search`); same answers as the literal
        port `_find_path_literal`."""
        from . import search

        nav = self.nav
        if (
            not nav.is_valid_ref(start_ref)
            or not nav.is_valid_ref(end_ref)
            or not _finite(start_pos)
            or not _finite(end_pos)
            or max_path <= 0
        ):
            return FAILURE | INVALID_PARAM, []
        pass_ok = self._pass_list(flt)
        return search.find_path(
            self._search_tables(), start_ref, end_ref, start_pos, end_pos, pass_ok,
            flt.area_cost, self.max_nodes, max_path,
        )  # fmt: skip

    def _pass_list(self, flt: QueryFilter) -> list:
        key = (flt.include_flags, flt.exclude_flags, id(self.nav.poly_flags))
        cache = getattr(self, "_pass_cache", None)
        if cache is None or cache[0] != key:
            cache = (key, np.asarray(flt.pass_filter(self.nav.poly_flags), bool).tolist())
            self._pass_cache = cache
        return cache[1]

    def _find_path_literal(self, start_ref, end_ref, start_pos, end_pos, flt, max_path):
        nav = self.nav
        if (
            not nav.is_valid_ref(start_ref)
            or not nav.is_valid_ref(end_ref)
            or not _finite(start_pos)
            or not _finite(end_pos)
            or max_path <= 0
        ):
            return FAILURE | INVALID_PARAM, []
        if start_ref == end_ref:
            return SUCCESS, [start_ref]
        pool = _NodePool(self.max_nodes)
        heap = _NodeQueue(pool)
        start = pool.get(start_ref, 0)
        pool.pos[start] = start_pos
        pool.cost[start] = _ZERO
        pool.total[start] = _vdist(start_pos, end_pos) * H_SCALE
        pool.flags[start] = _NODE_OPEN
        heap.push(start)
        last_best = start
        last_best_cost = pool.total[start]
        out_of_nodes = False
        link_start, link_ref, link_side, link_mid = (
            nav.link_start, nav.link_ref, nav.link_side, nav.link_mid,
        )  # fmt: skip
        flags_ok = flt.pass_filter(nav.poly_flags)
        area_cost = flt.area_cost
        poly_area = nav.poly_area
        end_cost_area = area_cost[int(poly_area[end_ref])]
        ex, ey, ez = end_pos[0], end_pos[1], end_pos[2]
        pos = pool.pos
        while heap.size:
            best = heap.pop()
            pool.flags[best] = (pool.flags[best] & ~_NODE_OPEN) | _NODE_CLOSED
            best_ref = pool.id[best]
            if best_ref == end_ref:
                last_best = best
                break
            parent_ref = pool.id[pool.pidx[best] - 1] if pool.pidx[best] else NO_POLY
            best_pos = pos[best]
            best_cost_area = area_cost[int(poly_area[best_ref])]
            for k in range(int(link_start[best_ref]), int(link_start[best_ref + 1])):
                nref = int(link_ref[k])
                if nref == parent_ref:
                    continue
                if not flags_ok[nref]:
                    continue
                side = int(link_side[k])
                cross = side >> 1 if side != SIDE_INTERNAL else 0
                node = pool.get(nref, cross)
                if node < 0:
                    out_of_nodes = True
                    continue
                if pool.flags[node] == 0:
                    pos[node] = link_mid[k]
                npos = pos[node]
                cur_cost = _vdist(best_pos, npos) * best_cost_area
                if nref == end_ref:
                    end_cost = _vdist(npos, end_pos) * end_cost_area
                    cost = pool.cost[best] + cur_cost + end_cost
                    heuristic = _ZERO
                else:
                    cost = pool.cost[best] + cur_cost
                    dx, dy, dz = ex - npos[0], ey - npos[1], ez - npos[2]
                    heuristic = np.sqrt(dx * dx + dy * dy + dz * dz) * H_SCALE
                total = cost + heuristic
                nflags = pool.flags[node]
                if (nflags & _NODE_OPEN) and total >= pool.total[node]:
                    continue
                if (nflags & _NODE_CLOSED) and total >= pool.total[node]:
                    continue
                pool.pidx[node] = best + 1
                nflags &= ~_NODE_CLOSED
                pool.cost[node] = cost
                pool.total[node] = total
                if nflags & _NODE_OPEN:
                    pool.flags[node] = nflags
                    heap.modify(node)
                else:
                    pool.flags[node] = nflags | _NODE_OPEN
                    heap.push(node)
                if heuristic < last_best_cost:
                    last_best_cost = heuristic
                    last_best = node
        path = []
        node = last_best
        while node >= 0:
            path.append(pool.id[node])
            node = pool.pidx[node] - 1
        path.reverse()
        status = SUCCESS
        if len(path) > max_path:
            path = path[:max_path]
            status |= BUFFER_TOO_SMALL
        if pool.id[last_best] != end_ref:
            status |= PARTIAL_RESULT
        if out_of_nodes:
            status |= OUT_OF_NODES
        return status, path

    def _portal_yup(self, from_ref: int, to_ref: int):
        """getPortalPoints -> (left, right, link row) or None when not linked."""
        nav = self.nav
        for k in range(int(nav.link_start[from_ref]), int(nav.link_start[from_ref + 1])):
            if int(nav.link_ref[k]) == to_ref:
                return nav.link_left[k], nav.link_right[k], k
        return None

    def find_straight_path(
        self, start_pos, end_pos, path, max_straight_path: int = 256, options: int = 0
    ) -> StraightPath:
        """``findStraightPath``: string-pull the corridor `path` (refs) from start_pos to
        end_pos (Z-up) into corner points. flags: STRAIGHTPATH_START / END per point; refs: the
        polygon each point enters (-1 for the end). options: STRAIGHTPATH_AREA_CROSSINGS adds a
        point where the area changes, STRAIGHTPATH_ALL_CROSSINGS at every portal."""
        status, pts, flags, refs = self._straight_yup(
            _yup(start_pos, "start_pos"), _yup(end_pos, "end_pos"),
            as_ref_array(path, "path").reshape(-1).tolist(),
            whole_number(max_straight_path, "max_straight_path"),
            whole_number(options, "options"),
        )  # fmt: skip
        pts_arr = np.asarray(pts, dtype=F32).reshape(-1, 3)
        return StraightPath(
            int(status), _zup(pts_arr), np.asarray(flags, dtype=np.uint8),
            np.asarray(refs, dtype=np.int64),
        )  # fmt: skip

    def _straight_yup(self, start_pos, end_pos, path, max_straight, options):
        nav = self.nav
        pts: list[np.ndarray] = []
        flags: list[int] = []
        refs: list[int] = []
        if (
            not _finite(start_pos)
            or not _finite(end_pos)
            or len(path) == 0
            or not nav.is_valid_ref(path[0])
            or max_straight <= 0
        ):
            return FAILURE | INVALID_PARAM, pts, flags, refs
        for r in (path[0], path[-1]):
            if not nav.is_valid_ref(r):
                return FAILURE | INVALID_PARAM, pts, flags, refs

        def append(pos, flag, ref):
            if pts and _vequal(pts[-1], pos):
                flags[-1] = flag
                refs[-1] = ref
            else:
                pts.append(np.array(pos, dtype=F32))
                flags.append(flag)
                refs.append(ref)
                if len(pts) >= max_straight:
                    return SUCCESS | BUFFER_TOO_SMALL
                if flag == STRAIGHTPATH_END:
                    return SUCCESS
            return IN_PROGRESS

        crossings = options & (STRAIGHTPATH_AREA_CROSSINGS | STRAIGHTPATH_ALL_CROSSINGS)

        def append_portals(start_idx, end_idx, end):
            start = pts[-1]
            for i in range(start_idx, end_idx):
                fr, to = path[i], path[i + 1]
                if not (nav.is_valid_ref(fr) and nav.is_valid_ref(to)):
                    return FAILURE | INVALID_PARAM
                portal = self._portal_yup(fr, to)
                if portal is None:
                    break
                left, right, _ = portal
                if options & STRAIGHTPATH_AREA_CROSSINGS:
                    if nav.poly_area[fr] == nav.poly_area[to]:
                        continue
                ok, s, t = _intersect_seg_seg_2d(start, end, left, right)
                if ok:
                    st = append(_vlerp(left, right, t), 0, to)
                    if st != IN_PROGRESS:
                        return st
            return IN_PROGRESS

        start_c = self._boundary_point_yup(path[0], start_pos)
        end_c = self._boundary_point_yup(path[-1], end_pos)
        st = append(start_c, STRAIGHTPATH_START, path[0])
        if st != IN_PROGRESS:
            return st, pts, flags, refs
        n = len(path)
        if n > 1:
            apex = start_c.copy()
            p_left = apex.copy()
            p_right = apex.copy()
            apex_i = left_i = right_i = 0
            left_type = right_type = POLYTYPE_GROUND
            left_ref = right_ref = path[0]
            i = 0
            while i < n:
                if i + 1 < n:
                    portal = (
                        self._portal_yup(path[i], path[i + 1])
                        if nav.is_valid_ref(path[i + 1])
                        else None
                    )
                    if portal is None:
                        if not nav.is_valid_ref(path[i]):
                            return FAILURE | INVALID_PARAM, pts, flags, refs
                        end_c = self._boundary_point_yup(path[i], end_pos)
                        if crossings:
                            append_portals(apex_i, i, end_c)
                        append(end_c, 0, path[i])
                        st = SUCCESS | PARTIAL_RESULT
                        if len(pts) >= max_straight:
                            st |= BUFFER_TOO_SMALL
                        return st, pts, flags, refs
                    left, right, _ = portal
                    to_type = int(nav.poly_type[path[i + 1]])
                    if i == 0:
                        d, _t = _dist_pt_seg_sqr_2d(apex, left, right)
                        if d < F32(0.001) * F32(0.001):
                            i += 1
                            continue
                else:
                    left = end_c
                    right = end_c
                    to_type = POLYTYPE_GROUND
                # Right vertex.
                if _tri_area_2d(apex, p_right, right) <= _ZERO:
                    if _vequal(apex, p_right) or _tri_area_2d(apex, p_left, right) > _ZERO:
                        p_right = np.array(right, dtype=F32)
                        right_ref = path[i + 1] if i + 1 < n else NO_POLY
                        right_type = to_type
                        right_i = i
                    else:
                        if crossings:
                            st = append_portals(apex_i, left_i, p_left)
                            if st != IN_PROGRESS:
                                return st, pts, flags, refs
                        apex = p_left.copy()
                        apex_i = left_i
                        flag = 0
                        if left_ref == NO_POLY:
                            flag = STRAIGHTPATH_END
                        elif left_type == POLYTYPE_OFFMESH_CONNECTION:
                            flag = STRAIGHTPATH_OFFMESH_CONNECTION
                        st = append(apex, flag, left_ref)
                        if st != IN_PROGRESS:
                            return st, pts, flags, refs
                        p_left = apex.copy()
                        p_right = apex.copy()
                        left_i = right_i = apex_i
                        i = apex_i + 1
                        continue
                # Left vertex.
                if _tri_area_2d(apex, p_left, left) >= _ZERO:
                    if _vequal(apex, p_left) or _tri_area_2d(apex, p_right, left) < _ZERO:
                        p_left = np.array(left, dtype=F32)
                        left_ref = path[i + 1] if i + 1 < n else NO_POLY
                        left_type = to_type
                        left_i = i
                    else:
                        if crossings:
                            st = append_portals(apex_i, right_i, p_right)
                            if st != IN_PROGRESS:
                                return st, pts, flags, refs
                        apex = p_right.copy()
                        apex_i = right_i
                        flag = 0
                        if right_ref == NO_POLY:
                            flag = STRAIGHTPATH_END
                        elif right_type == POLYTYPE_OFFMESH_CONNECTION:
                            flag = STRAIGHTPATH_OFFMESH_CONNECTION
                        st = append(apex, flag, right_ref)
                        if st != IN_PROGRESS:
                            return st, pts, flags, refs
                        p_left = apex.copy()
                        p_right = apex.copy()
                        left_i = right_i = apex_i
                        i = apex_i + 1
                        continue
                i += 1
            if crossings:
                st = append_portals(apex_i, n - 1, end_c)
                if st != IN_PROGRESS:
                    return st, pts, flags, refs
        append(end_c, STRAIGHTPATH_END, NO_POLY)
        st = SUCCESS
        if len(pts) >= max_straight:
            st |= BUFFER_TOO_SMALL
        return st, pts, flags, refs

    def raycast(
        self, start_ref: int, start_pos, end_pos, flt: QueryFilter | None = None,
        max_path: int = 256,
    ) -> RaycastHit:  # fmt: skip
        """``raycast``: walk the straight segment start->end (2D, on the polygons) from
        start_ref. t = FLT_MAX when the end is reached, else the fraction where a wall (or a
        filtered polygon) is hit, with the wall's normal (Z-up); polys: the polygons crossed
        (at most max_path, then | BUFFER_TOO_SMALL | PARTIAL_RESULT)."""
        status, t, normal, polys = self._raycast_yup(
            as_ref(start_ref, "start_ref"), _yup(start_pos, "start_pos"),
            _yup(end_pos, "end_pos"), self._filter(flt), whole_number(max_path, "max_path"),
        )  # fmt: skip
        return RaycastHit(int(status), float(t), _zup(normal), np.asarray(polys, dtype=np.int64))

    def _raycast_yup(self, start_ref, start_pos, end_pos, flt, max_path):
        nav = self.nav
        normal = np.zeros(3, dtype=F32)
        if not nav.is_valid_ref(start_ref) or not _finite(start_pos) or not _finite(end_pos):
            return FAILURE | INVALID_PARAM, _ZERO, normal, []
        t_hit = _ZERO
        path: list[int] = []
        status = SUCCESS
        cur = start_ref
        while cur != NO_POLY:
            nv = int(nav.poly_vert_count[cur])
            verts = nav.poly_pos[cur]
            ok, tmin, tmax, seg_min, seg_max = _intersect_segment_poly_2d(
                start_pos, end_pos, verts, nv
            )
            if not ok:
                return status, t_hit, normal, path
            if tmax > t_hit:
                t_hit = tmax
            if len(path) < max_path:
                path.append(cur)
            else:
                status |= BUFFER_TOO_SMALL
            if seg_max == -1:
                return status, FLT_MAX, normal, path
            next_ref = NO_POLY
            for k in range(int(nav.link_start[cur]), int(nav.link_start[cur + 1])):
                if int(nav.link_edge[k]) != seg_max:
                    continue
                lref = int(nav.link_ref[k])
                if int(nav.poly_type[lref]) == POLYTYPE_OFFMESH_CONNECTION:
                    continue
                if not flt.pass_filter(nav.poly_flags[lref]):
                    continue
                side = int(nav.link_side[k])
                bmin, bmax = int(nav.link_bmin[k]), int(nav.link_bmax[k])
                if side == SIDE_INTERNAL or (bmin == 0 and bmax == 255):
                    next_ref = lref
                    break
                e = int(nav.link_edge[k])
                left, right = verts[e], verts[(e + 1) % nv]
                s = F32(1.0) / F32(255.0)
                a = 2 if side in (0, 4) else 0
                lmin = left[a] + (right[a] - left[a]) * (F32(bmin) * s)
                lmax = left[a] + (right[a] - left[a]) * (F32(bmax) * s)
                if lmin > lmax:
                    lmin, lmax = lmax, lmin
                x = start_pos[a] + (end_pos[a] - start_pos[a]) * tmax
                if lmin <= x <= lmax:
                    next_ref = lref
                    break
            if next_ref == NO_POLY:
                va = verts[seg_max]
                vb = verts[seg_max + 1 if seg_max + 1 < nv else 0]
                dx = vb[0] - va[0]
                dz = vb[2] - va[2]
                normal = _normalize(np.array([dz, _ZERO, -dx], dtype=F32))
                return status, t_hit, normal, path
            cur = next_ref
            if status & BUFFER_TOO_SMALL:
                status |= PARTIAL_RESULT
                break
        return status, t_hit, normal, path

    def move_along_surface(
        self, start_ref: int, start_pos, end_pos, flt: QueryFilter | None = None,
        max_visited: int = 16,
    ) -> SurfaceMove:  # fmt: skip
        """``moveAlongSurface``: slide from start_pos towards end_pos (Z-up) staying on the
        navmesh (a breadth-first search of at most 64 polygons within the circle around the
        move); returns the reachable position nearest to end_pos (2D; its height is not
        adjusted, as in Detour) and the visited corridor (at most max_visited)."""
        status, pos, visited = self._move_yup(
            as_ref(start_ref, "start_ref"), _yup(start_pos, "start_pos"),
            _yup(end_pos, "end_pos"), self._filter(flt), whole_number(max_visited, "max_visited"),
        )  # fmt: skip
        return SurfaceMove(int(status), _zup(pos), np.asarray(visited, dtype=np.int64))

    def _move_yup(self, start_ref, start_pos, end_pos, flt, max_visited):
        nav = self.nav
        if (
            not nav.is_valid_ref(start_ref)
            or not _finite(start_pos)
            or not _finite(end_pos)
            or max_visited <= 0
        ):
            return FAILURE | INVALID_PARAM, np.full(3, np.nan, dtype=F32), []
        status = SUCCESS
        max_stack = 48
        pool = _NodePool(64)
        start = pool.get(start_ref, 0)
        pool.flags[start] = _NODE_CLOSED
        stack = [start]
        best_pos = np.array(start_pos, dtype=F32)
        best_dist = FLT_MAX
        best_node = -1
        search_pos = _vlerp(start_pos, end_pos, _HALF)
        r = _vdist(start_pos, end_pos) / F32(2.0) + F32(0.001)
        search_rad_sqr = r * r
        while stack:
            cur = stack.pop(0)
            cur_ref = pool.id[cur]
            nv = int(nav.poly_vert_count[cur_ref])
            verts = nav.poly_pos[cur_ref]
            if _point_in_polygon(end_pos, verts, nv):
                best_node = cur
                best_pos = np.array(end_pos, dtype=F32)
                break
            lo, hi = int(nav.link_start[cur_ref]), int(nav.link_start[cur_ref + 1])
            tile_base = int(nav.tile_poly_base[nav.poly_tile[cur_ref]])
            j = nv - 1
            for i in range(nv):
                neis: list[int] = []
                nei = int(nav.poly_neis[cur_ref, j])
                if nei & EXT_LINK:
                    for k in range(lo, hi):
                        if int(nav.link_edge[k]) == j:
                            lref = int(nav.link_ref[k])
                            if flt.pass_filter(nav.poly_flags[lref]) and len(neis) < 8:
                                neis.append(lref)
                elif nei:
                    ref = tile_base + nei - 1
                    if flt.pass_filter(nav.poly_flags[ref]):
                        neis.append(ref)
                vj, vi = verts[j], verts[i]
                if not neis:
                    d, tseg = _dist_pt_seg_sqr_2d(end_pos, vj, vi)
                    if d < best_dist:
                        best_pos = _vlerp(vj, vi, tseg)
                        best_dist = d
                        best_node = cur
                else:
                    for nref in neis:
                        node = pool.get(nref, 0)
                        if node < 0:
                            continue
                        if pool.flags[node] & _NODE_CLOSED:
                            continue
                        d, _ = _dist_pt_seg_sqr_2d(search_pos, vj, vi)
                        if d > search_rad_sqr:
                            continue
                        if len(stack) < max_stack:
                            pool.pidx[node] = cur + 1
                            pool.flags[node] |= _NODE_CLOSED
                            stack.append(node)
                j = i
        visited: list[int] = []
        if best_node >= 0:
            chain = []
            node = best_node
            while node >= 0:
                chain.append(pool.id[node])
                node = pool.pidx[node] - 1
            chain.reverse()
            if len(chain) >= max_visited:
                chain = chain[:max_visited]
                status |= BUFFER_TOO_SMALL
            visited = chain
        return status, np.asarray(best_pos, dtype=F32), visited

    def find_random_point(
        self, rng: np.random.Generator, flt: QueryFilter | None = None
    ) -> RandomPoint:
        """``findRandomPoint``: a tile chosen uniformly (Detour's rule), a ground polygon of it
        chosen with probability proportional to its 2D area, then a uniform point in that
        polygon, moved onto the detail surface. rng: a seeded numpy Generator (its float32
        draws replace Detour's frand, in Detour's order)."""
        status, ref, pt = self._random_yup(_generator(rng), self._filter(flt))
        point = _zup(pt) if pt is not None else np.full(3, np.nan, dtype=F32)
        return RandomPoint(int(status), int(ref), point)

    def _random_yup(self, rng, flt):
        nav = self.nav

        def frand() -> np.float32:
            return F32(rng.random(dtype=np.float32))

        tile = -1
        tsum = _ZERO
        for t in range(nav.tile_count):
            tsum = tsum + _ONE
            if frand() * tsum <= _ONE:
                tile = t
        if tile < 0:
            return FAILURE, NO_POLY, None
        base = int(nav.tile_poly_base[tile])
        chosen = NO_POLY
        area_sum = _ZERO
        for i in range(nav.tiles[tile].npolys):
            ref = base + i
            if int(nav.poly_type[ref]) != POLYTYPE_GROUND:
                continue
            if not flt.pass_filter(nav.poly_flags[ref]):
                continue
            v = self._poly_verts(ref)
            area = _ZERO
            for j in range(2, v.shape[0]):
                area = area + _tri_area_2d(v[0], v[j - 1], v[j])
            area_sum = area_sum + area
            if frand() * area_sum <= area:
                chosen = ref
        if chosen == NO_POLY:
            return FAILURE, NO_POLY, None
        v = self._poly_verts(chosen)
        s = frand()
        t = frand()
        pt = _random_point_in_convex_poly(v, s, t)
        closest, _ = self._closest_point_on_poly_yup(chosen, pt)
        return SUCCESS, chosen, closest

    # ------------------------------------------------------------------------ batch forms
    def _pass_flags(self, flt: QueryFilter | None) -> np.ndarray:
        return np.asarray(self._filter(flt).pass_filter(self.nav.poly_flags), dtype=bool)

    def _refs(self, refs, n: int, name: str, what: str = "refs") -> np.ndarray:
        r = as_ref_array(refs, f"{name} {what}").reshape(-1)
        if r.shape[0] != n:
            raise VoxNavError(f"{name} needs {n} {what} (one per query), got {r.shape[0]}")
        return r

    def _valid_refs(self, refs: np.ndarray) -> np.ndarray:
        return (refs >= 0) & (refs < self.nav.poly_count)

    def find_nearest_poly_batch(
        self, points, half_extents=(2.0, 2.0, 4.0), flt: QueryFilter | None = None
    ) -> NearestPolyBatch:
        """Batch `find_nearest_poly`: points float32 (n, 3) Z-up [Units: wu], one box half
        size (3,) or one per point (n, 3). Vectorized across points."""
        from . import batch

        p = _points(points, "points")
        n = p.shape[0]
        c = _zup(p)
        h = _points(np.atleast_2d(half_extents), "half_extents", "box half sizes")
        if h.shape[0] not in (1, n):
            raise VoxNavError(
                f"half_extents must be one box half size (3,) or one per point ({n}, 3), got "
                f"{h.shape[0]} rows"
            )
        h = np.broadcast_to(_zup(h), (n, 3)).astype(F32)
        finite = _finite_rows(c) & _finite_rows(h)
        pass_flags = self._pass_flags(flt)
        if finite.all():  # the common case: no gathers and scatters
            ref, point, over = batch.find_nearest_poly(self.nav, c, h, pass_flags)
            status = np.full(n, SUCCESS, dtype=np.uint32)
            return NearestPolyBatch(status, ref, _zup(point), over)
        ref = np.full(n, NO_POLY, dtype=np.int64)
        point = np.full((n, 3), np.nan, dtype=F32)
        over = np.zeros(n, dtype=bool)
        idx = np.nonzero(finite)[0]
        r, pt, ov = batch.find_nearest_poly(self.nav, c[idx], h[idx], pass_flags)
        ref[idx], point[idx], over[idx] = r, pt, ov
        status = np.where(finite, SUCCESS, FAILURE | INVALID_PARAM).astype(np.uint32)
        return NearestPolyBatch(status, ref, _zup(point), over)

    def get_poly_height_batch(self, refs, points) -> PolyHeightBatch:
        """Batch `get_poly_height`: refs (n,), points float32 (n, 3) Z-up. Height NaN and
        FAILURE | INVALID_PARAM where the ref is invalid or the point is not over it."""
        from . import batch

        p = _zup(_points(points, "points"))
        n = p.shape[0]
        r = self._refs(refs, n, "get_poly_height_batch")
        ok = self._valid_refs(r) & _within(p[:, 0]) & _within(p[:, 2])
        idx = np.nonzero(ok)[0]
        inside, h = batch.query_poly_height(self.nav, r[idx], p[idx])
        height = np.full(n, np.nan, dtype=F32)
        height[idx[inside]] = h[inside]
        ok[idx[~inside]] = False
        status = np.where(ok, SUCCESS, FAILURE | INVALID_PARAM).astype(np.uint32)
        return PolyHeightBatch(status, height)

    def find_distance_to_wall_batch(
        self, refs, centers, max_radius: float, flt: QueryFilter | None = None
    ) -> WallHitBatch:
        """Batch `find_distance_to_wall`: Detour's Dijkstra search for every query in
        lockstep (`core.nav.lockstep`), its heap order and node limit kept per query."""
        from . import lockstep

        c = _zup(_points(centers, "centers"))
        n = c.shape[0]
        r = self._refs(refs, n, "find_distance_to_wall_batch")
        radius = _radius(max_radius)
        ok = self._valid_refs(r) & _finite_rows(c)
        ok &= bool(radius >= _ZERO and np.isfinite(radius))
        out = WallHitBatch(
            np.where(ok, SUCCESS, FAILURE | INVALID_PARAM).astype(np.uint32),
            np.full(n, np.nan, F32), np.full((n, 3), np.nan, F32), np.full((n, 3), np.nan, F32),
        )  # fmt: skip
        idx = np.nonzero(ok)[0]
        if idx.shape[0]:
            st, d, p, nm = lockstep.find_distance_to_wall(
                self.nav, r[idx], c[idx], radius, self._pass_flags(flt), self.max_nodes
            )
            out.status[idx] = st
            out.distance[idx] = d
            out.position[idx] = _zup(p)
            out.normal[idx] = _zup(nm)
        return out

    def closest_point_on_poly_batch(self, refs, points):
        """Batch `closest_point_on_poly` -> (status uint32 (n,), closest float32 (n, 3) Z-up,
        NaN where invalid, over_poly bool (n,)). Vectorized across queries."""
        from . import batch

        p = _zup(_points(points, "points"))
        n = p.shape[0]
        r = self._refs(refs, n, "closest_point_on_poly_batch")
        ok = self._valid_refs(r) & _finite_rows(p)
        idx = np.nonzero(ok)[0]
        closest = np.full((n, 3), np.nan, dtype=F32)
        over = np.zeros(n, dtype=bool)
        c, o = batch.closest_point_on_poly(self.nav, r[idx], p[idx])
        closest[idx], over[idx] = c, o
        status = np.where(ok, SUCCESS, FAILURE | INVALID_PARAM).astype(np.uint32)
        return status, _zup(closest), over

    def move_along_surface_batch(
        self, start_refs, starts, ends, flt: QueryFilter | None = None, max_visited: int = 16
    ) -> SurfaceMoveBatch:
        """Batch `move_along_surface`: end positions (n, 3) Z-up and the visited refs (ragged).
        A per-query loop over the literal port (a 64-node breadth-first search each)."""
        s = _points(starts, "starts")
        e = _points(ends, "ends")
        n = s.shape[0]
        r = self._refs(start_refs, n, "move_along_surface_batch", "start_refs")
        max_visited = whole_number(max_visited, "move_along_surface_batch max_visited")
        status = np.zeros(n, dtype=np.uint32)
        lists = []
        positions = np.full((n, 3), np.nan, dtype=F32)
        for i in range(n):
            m = self.move_along_surface(int(r[i]), s[i], e[i], flt, max_visited)
            status[i] = m.status
            positions[i] = m.position
            lists.append(m.visited)
        count, start, flat = _ragged(lists)
        return SurfaceMoveBatch(status, positions, count, start, flat)

    def find_random_points(
        self, n: int, rng: np.random.Generator, flt: QueryFilter | None = None
    ) -> NearestPolyBatch:
        """`n` random points on the navmesh, vectorized: a tile uniformly (Detour's rule), a
        ground polygon of it with probability proportional to its 2D area, a uniform point in
        it (dtRandomPointInConvexPoly, float32) moved onto the detail surface. Same
        distribution as `find_random_point`, not the same draws. Returns a NearestPolyBatch
        (status, ref, point Z-up, over_poly True). [Limit: n >= 0]"""
        from . import batch

        nav = self.nav
        n = whole_number(n, "find_random_points n")
        rng = _generator(rng)
        if n < 0:
            raise VoxNavError(f"find_random_points needs n >= 0, got {n}")
        ok_poly = np.asarray(self._pass_flags(flt)) & (nav.poly_type == POLYTYPE_GROUND)
        # Polygon areas, Detour's fan sum in float32.
        v = nav.poly_pos
        area = np.zeros(nav.poly_count, dtype=F32)
        for j in range(2, 6):
            tri = batch._tri_area(v[:, 0], v[:, j - 1], v[:, j])
            area = np.where(j < nav.poly_vert_count, area + tri, area).astype(F32)
        weight = np.where(ok_poly, np.maximum(area.astype(np.float64), 0.0), 0.0)
        ref = np.full(n, NO_POLY, dtype=np.int64)
        point = np.full((n, 3), np.nan, dtype=F32)
        status = np.full(n, FAILURE, dtype=np.uint32)
        if nav.tile_count == 0 or n == 0:
            return NearestPolyBatch(status, ref, point, np.zeros(n, bool))
        tile = rng.integers(0, nav.tile_count, n)
        lo, hi = nav.tile_poly_base[tile], nav.tile_poly_base[tile + 1]
        cum = np.concatenate([[0.0], np.cumsum(weight)])
        tile_total = cum[hi] - cum[lo]
        has = tile_total > 0
        u = rng.random(n) * tile_total + cum[lo]
        pick = np.clip(np.searchsorted(cum, u, side="right") - 1, lo, hi - 1)
        pick = np.where(weight[pick] > 0, pick, lo)  # guard the u == total edge
        idx = np.nonzero(has)[0]
        if idx.shape[0] == 0:
            return NearestPolyBatch(status, ref, point, np.zeros(n, bool))
        r = pick[idx]
        s_draw = rng.random(idx.shape[0], dtype=np.float32)
        t_draw = rng.random(idx.shape[0], dtype=np.float32)
        pt = _random_points_in_convex_polys(v[r], nav.poly_vert_count[r], s_draw, t_draw)
        closest, _ = batch.closest_point_on_poly(nav, r, pt)
        ref[idx] = r
        point[idx] = _zup(closest)
        status[idx] = SUCCESS
        return NearestPolyBatch(status, ref, point, has.copy())

    def raycast_batch(
        self, start_refs, starts, ends, flt: QueryFilter | None = None, max_path: int = 256
    ) -> RaycastBatch:
        """Batch `raycast`: rays walk polygon by polygon in lockstep (vectorized across rays).
        Ray j's visited refs are ``polys[start[j] : start[j] + count[j]]``."""
        from . import batch

        s = _zup(_points(starts, "starts"))
        e = _zup(_points(ends, "ends"))
        n = s.shape[0]
        if e.shape[0] != n:
            raise VoxNavError(f"raycast_batch: {n} starts but {e.shape[0]} ends")
        r = self._refs(start_refs, n, "raycast_batch", "start_refs")
        max_path = whole_number(max_path, "raycast_batch max_path")
        ok = self._valid_refs(r) & _finite_rows(s) & _finite_rows(e)
        run = np.where(ok, r, NO_POLY)
        extra, t, normal, q, polys = batch.raycast(
            self.nav, run, s, e, self._pass_flags(flt), max_path
        )
        status = np.where(ok, SUCCESS | extra, FAILURE | INVALID_PARAM).astype(np.uint32)
        t = np.where(ok, t, _ZERO).astype(F32)
        count = np.bincount(q, minlength=n).astype(np.int32)
        start = (np.cumsum(count, dtype=np.int64) - count).astype(np.int64)
        return RaycastBatch(status, t, _zup(normal), count, start, polys)

    def find_path_batch(
        self, start_refs, end_refs, starts, ends, flt: QueryFilter | None = None,
        max_path: int = 256,
    ) -> CorridorBatch:  # fmt: skip
        """Batch `find_path`: Detour's A* for every query in lockstep (`core.nav.lockstep`:
        per-query node state and open lists as array rows, one pop per query per round; ties
        between equal totals are broken by Detour's heap layout)."""
        s = _points(starts, "starts")
        e = _points(ends, "ends")
        n = s.shape[0]
        a = self._refs(start_refs, n, "find_path_batch", "start_refs")
        b = self._refs(end_refs, n, "find_path_batch", "end_refs")
        max_path = whole_number(max_path, "find_path_batch max_path")
        from . import lockstep

        flt = self._filter(flt)
        sy, ey = _zup(s), _zup(e)
        ok = self._valid_refs(a) & self._valid_refs(b) & (max_path > 0)
        ok &= _finite_rows(sy) & _finite_rows(ey)
        status = np.where(ok, SUCCESS, FAILURE | INVALID_PARAM).astype(np.int64)
        count = np.where(ok & (a == b), 1, 0).astype(np.int64)
        run = np.nonzero(ok & (a != b))[0]
        flat_run = np.zeros(0, np.int64)
        if run.shape[0]:
            st, cnt, flat_run = lockstep.find_paths(
                self.nav, a[run], b[run], sy[run], ey[run], self._pass_flags(flt),
                flt.area_cost, self.max_nodes, max_path,
            )  # fmt: skip
            status[run] = st
            count[run] = cnt
        start = (np.cumsum(count) - count).astype(np.int64)
        flat = np.zeros(int(count.sum()), dtype=np.int64)
        same = np.nonzero(ok & (a == b))[0]
        flat[start[same]] = a[same]
        if run.shape[0]:
            flat[batch_ranges(start[run], count[run])] = flat_run
        status = status.astype(np.uint32)
        count = count.astype(np.int32)
        return CorridorBatch(status, count, start, flat)

    def find_straight_path_batch(
        self, starts, ends, corridors: CorridorBatch, max_straight_path: int = 256,
        options: int = 0,
    ) -> StraightPathBatch:  # fmt: skip
        """Batch `find_straight_path` over the corridors of a CorridorBatch (queries with an
        empty corridor get FAILURE | INVALID_PARAM and no points). String pulling runs in
        lockstep across queries (options 0); other options use the literal port per query."""
        from . import batch

        if not isinstance(corridors, CorridorBatch):
            raise VoxNavError(
                "corridors must be the CorridorBatch find_path_batch returns, got "
                f"{type(corridors).__name__}"
            )
        s = _zup(_points(starts, "starts"))
        e = _zup(_points(ends, "ends"))
        n = s.shape[0]
        nav = self.nav
        max_straight_path = whole_number(max_straight_path, "max_straight_path")
        options = whole_number(options, "options")
        ccount = np.asarray(corridors.count, dtype=np.int64)
        cstart = np.asarray(corridors.start, dtype=np.int64)
        cpolys = np.asarray(corridors.polys, dtype=np.int64)
        # Lockstep for the common case; the literal port for the rest (options, tiny buffers,
        # invalid input, corridors with unlinked steps: Detour's partial branch).
        fast = (ccount >= 1) & (options == 0) & (max_straight_path >= 2)
        fast &= _finite_rows(s) & _finite_rows(e)
        if cpolys.shape[0]:
            valid = (cpolys >= 0) & (cpolys < nav.poly_count)
            owner = np.repeat(np.arange(n), ccount)
            bad = np.zeros(n, dtype=bool)
            # Consecutive corridor entries of one query must be linked polygons.
            same = owner[:-1] == owner[1:]
            if valid.all():
                link = batch.portal_links(nav, cpolys[:-1], cpolys[1:])
            else:
                bad[owner[~valid]] = True
                ok_pair = valid[:-1] & valid[1:]
                frm = np.where(ok_pair, cpolys[:-1], 0)
                to = np.where(ok_pair, cpolys[1:], 0)
                link = np.where(ok_pair, batch.portal_links(nav, frm, to), -1)
            bad[owner[:-1][same & (link < 0)]] = True
            fast &= ~bad
        fq = np.nonzero(fast)[0]
        status = np.zeros(n, dtype=np.uint32)
        count = np.zeros(n, dtype=np.int32)
        slow = {}
        for qi in np.nonzero(~fast)[0]:
            c0, c = int(cstart[qi]), int(ccount[qi])
            path = [int(x) for x in cpolys[c0 : c0 + c]]
            st, p, f, r = self._straight_yup(s[qi], e[qi], path, max_straight_path, options)
            status[qi] = st
            count[qi] = len(r)
            slow[int(qi)] = (np.asarray(p, F32).reshape(-1, 3), f, r)
        if fq.shape[0]:
            sub_count = ccount[fq]
            sub_start = np.cumsum(sub_count) - sub_count
            if fq.shape[0] == n and np.array_equal(cstart, sub_start):
                sub_polys = cpolys[: int(sub_count.sum())]
            else:
                sub_polys = cpolys[batch._ranges(cstart[fq], sub_count)]
            st, cnt, pts_w, fl_w, rf_w = batch.straight_paths(
                nav, sub_count, sub_start, sub_polys, s[fq], e[fq], max_straight_path
            )
            status[fq] = st
            count[fq] = cnt
        start = (np.cumsum(count, dtype=np.int64) - count).astype(np.int64)
        total = int(count.sum())
        points = np.zeros((total, 3), dtype=F32)
        flat_flags = np.zeros(total, dtype=np.uint8)
        flat_refs = np.full(total, NO_POLY, dtype=np.int64)
        if fq.shape[0]:
            width = pts_w.shape[1]
            src = batch._ranges(np.arange(fq.shape[0]) * width, cnt)
            rows = batch._ranges(start[fq], cnt) if slow else np.arange(total)
            points[rows] = pts_w.reshape(-1, 3)[src]
            flat_flags[rows] = fl_w.reshape(-1)[src]
            flat_refs[rows] = rf_w.reshape(-1)[src]
        for query, (p, f, r) in slow.items():
            lo, hi = int(start[query]), int(start[query]) + len(r)
            points[lo:hi], flat_flags[lo:hi], flat_refs[lo:hi] = p, f, r
        return StraightPathBatch(status, count, start, _zup(points), flat_flags, flat_refs)


def _random_point_in_convex_poly(pts, s, t) -> np.ndarray:
    npts = pts.shape[0]
    areas = [_ZERO] * npts
    areasum = _ZERO
    for i in range(2, npts):
        areas[i] = _tri_area_2d(pts[0], pts[i - 1], pts[i])
        areasum = areasum + max(F32(0.001), areas[i])
    thr = s * areasum
    acc = _ZERO
    u = _ONE
    tri = npts - 1
    for i in range(2, npts):
        dacc = areas[i]
        if thr >= acc and thr < (acc + dacc):
            u = (thr - acc) / dacc
            tri = i
            break
        acc = acc + dacc
    v = np.sqrt(t)
    a = _ONE - v
    b = (_ONE - u) * v
    c = u * v
    pa, pb, pc = pts[0], pts[tri - 1], pts[tri]
    return np.array([a * pa[k] + b * pb[k] + c * pc[k] for k in range(3)], dtype=F32)


def _random_points_in_convex_polys(pts, nv, s, t) -> np.ndarray:
    """dtRandomPointInConvexPoly for many polygons (pts (m, 6, 3), nv (m,), s, t float32)."""
    from . import batch

    m = pts.shape[0]
    nv = nv.astype(np.int64)
    areas = np.zeros((m, 6), dtype=F32)
    areasum = np.zeros(m, dtype=F32)
    for i in range(2, 6):
        a = batch._tri_area(pts[:, 0], pts[:, i - 1], pts[:, i])
        areas[:, i] = a
        areasum = np.where(i < nv, areasum + np.maximum(F32(0.001), a), areasum).astype(F32)
    thr = s * areasum
    acc = np.zeros(m, dtype=F32)
    u = np.ones(m, dtype=F32)
    tri = nv - 1
    found = np.zeros(m, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(2, 6):
            dacc = areas[:, i]
            hit = ~found & (i < nv) & (thr >= acc) & (thr < (acc + dacc))
            u = np.where(hit, (thr - acc) / dacc, u).astype(F32)
            tri = np.where(hit, i, tri)
            found |= hit
            acc = np.where(~found & (i < nv), acc + dacc, acc).astype(F32)
    v = np.sqrt(t)
    a = _ONE - v
    b = (_ONE - u) * v
    c = u * v
    rows = np.arange(m)
    pa, pb, pc = pts[:, 0], pts[rows, tri - 1], pts[rows, tri]
    return (a[:, None] * pa + b[:, None] * pb + c[:, None] * pc).astype(F32)


class _NodePool:
    """dtNodePool: nodes keyed by (ref, state), at most max_nodes; pidx is 1-based (0 none)."""

    def __init__(self, max_nodes: int):
        self.max_nodes = max_nodes
        self.index: dict[tuple[int, int], int] = {}
        self.id: list[int] = []
        self.pidx: list[int] = []
        self.cost: list[np.float32] = []
        self.total: list[np.float32] = []
        self.flags: list[int] = []
        self.pos: list = []

    def get(self, ref: int, state: int) -> int:
        key = (ref, state)
        node = self.index.get(key)
        if node is not None:
            return node
        if len(self.id) >= self.max_nodes:
            return -1
        node = len(self.id)
        self.index[key] = node
        self.id.append(ref)
        self.pidx.append(0)
        self.cost.append(_ZERO)
        self.total.append(_ZERO)
        self.flags.append(0)
        self.pos.append(None)
        return node


class _NodeQueue:
    """dtNodeQueue: Detour's binary heap on node total cost (its exact sift order)."""

    def __init__(self, pool: _NodePool):
        self.pool = pool
        self.heap: list[int] = []
        self.size = 0

    def _bubble_up(self, i: int, node: int) -> None:
        heap, total = self.heap, self.pool.total
        t = total[node]
        parent = (i - 1) // 2
        while i > 0 and total[heap[parent]] > t:
            heap[i] = heap[parent]
            i = parent
            parent = (i - 1) // 2
        heap[i] = node

    def _trickle_down(self, i: int, node: int) -> None:
        heap, total = self.heap, self.pool.total
        child = i * 2 + 1
        while child < self.size:
            if child + 1 < self.size and total[heap[child]] > total[heap[child + 1]]:
                child += 1
            heap[i] = heap[child]
            i = child
            child = i * 2 + 1
        self._bubble_up(i, node)

    def push(self, node: int) -> None:
        self.size += 1
        if len(self.heap) < self.size:
            self.heap.append(node)
        self._bubble_up(self.size - 1, node)

    def pop(self) -> int:
        result = self.heap[0]
        self.size -= 1
        self._trickle_down(0, self.heap[self.size])
        return result

    def modify(self, node: int) -> None:
        for i in range(self.size):
            if self.heap[i] == node:
                self._bubble_up(i, node)
                return


# ------------------------------------------------------------------------------ batch forms
@dataclass
class NearestPolyBatch:
    """Per query: status uint32, ref int64 (-1 none), point float32 (n, 3) Z-up (NaN when
    none), over_poly bool."""

    status: np.ndarray
    ref: np.ndarray
    point: np.ndarray
    over_poly: np.ndarray


@dataclass
class PolyHeightBatch:
    status: np.ndarray
    height: np.ndarray


@dataclass
class WallHitBatch:
    status: np.ndarray
    distance: np.ndarray
    position: np.ndarray
    normal: np.ndarray


def _generator(rng) -> np.random.Generator:
    """``rng`` when it is a numpy Generator; `VoxNavError` saying how to make one otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise VoxNavError(
            "rng must be a numpy random Generator (np.random.default_rng(seed)), got "
            f"{type(rng).__name__}"
        )
    return rng


@dataclass
class CorridorBatch:
    """Ragged polygon lists: query j's refs are ``polys[start[j] : start[j] + count[j]]``."""

    status: np.ndarray
    count: np.ndarray
    start: np.ndarray
    polys: np.ndarray


@dataclass
class SurfaceMoveBatch:
    """Per query: status, end position (n, 3) Z-up; visited refs ragged (count, start, polys)."""

    status: np.ndarray
    position: np.ndarray
    count: np.ndarray
    start: np.ndarray
    polys: np.ndarray


@dataclass
class RaycastBatch:
    status: np.ndarray
    t: np.ndarray
    normal: np.ndarray
    count: np.ndarray
    start: np.ndarray
    polys: np.ndarray


@dataclass
class StraightPathBatch:
    """Ragged corner lists: query j's points are ``points[start[j] : start[j] + count[j]]``."""

    status: np.ndarray
    count: np.ndarray
    start: np.ndarray
    points: np.ndarray
    flags: np.ndarray
    refs: np.ndarray


def batch_ranges(starts, counts) -> np.ndarray:
    from .navdata import _ranges

    return _ranges(np.asarray(starts), np.asarray(counts))


def _ragged(lists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    count = np.array([len(x) for x in lists], dtype=np.int32)
    start = (np.cumsum(count, dtype=np.int64) - count).astype(np.int64)
    flat = (
        np.concatenate([np.asarray(x, dtype=np.int64) for x in lists])
        if len(lists) and count.sum()
        else np.zeros(0, dtype=np.int64)
    )
    return count, start, flat


def _points(points, name: str, what: str = "positions") -> np.ndarray:
    try:
        p = np.asarray(points, dtype=F32)
    except (TypeError, ValueError):
        raise VoxNavError(f"{name} must be an (n, 3) array of {what} (numbers)") from None
    if p.ndim != 2 or p.shape[1] != 3:
        raise VoxNavError(f"{name} must be an (n, 3) array of {what}, got shape {p.shape}")
    return p
