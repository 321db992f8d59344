"""Detour's runtime navigation mesh (``dtNavMesh``): tiles, polygon links, poly refs.

A `NavMesh` holds `core.nav.navdata.NavMeshData` tiles and connects them as ``dtNavMesh::addTile``
does (recastnavigation 9f4ce644): internal links from each polygon's neighbour ids
(``connectIntLinks``) and external links across tile borders (``connectExtLinks`` /
``findConnectingPolys``, portal limits packed into bytes) and off-mesh connections
(``baseOffMeshLinks`` / ``connectExtOffMeshLinks``: each endpoint snaps to the nearest polygon
within the link's radius, as Detour does, and the off-mesh polygon's vertex moves onto it).

**Frame**: everything stored here is Detour's Y-up frame (x, up, z). The public position
arguments of `core.nav.query` are VoxNav's Z-up (x, y, z); the two are a column swap (exact).

**Poly refs**: a documented simpler scheme than Detour's salt/tile/poly bits: a polygon's ref is
its row in the concatenated polygon arrays of all tiles (int, ``tile_poly_base[tile] + index``);
-1 means "no polygon" (Detour's 0). `tile_poly` turns refs into (tile x, tile y, index in tile).

**Links** live in flat arrays in Detour's traversal order (``poly->firstLink`` then ``next``):
polygon ``p``'s links are rows ``link_start[p] : link_start[p + 1]`` of ``link_ref``,
``link_edge``, ``link_side``, ``link_bmin``, ``link_bmax``. Detour prepends every new link to the
polygon's list, so internal links come out edge-ascending and external links added later come
first; this order decides A* ties and is kept exactly.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import VoxNavError
from .navdata import (
    EXT_LINK,
    OFFMESH_CON_BIDIR,
    POLYTYPE_OFFMESH_CONNECTION,
    NavMeshData,
    _ranges,
)

F32 = np.float32
#: Detour's link side for an internal link (no tile border crossed).
SIDE_INTERNAL = 0xFF
#: No polygon.
NO_POLY = -1
#: Refs of larger magnitude are out of every navmesh's range; float refs beyond it become
#: NO_POLY before the cast to int64 (whose result is undefined past 2^63).
_REF_REACH = float(1 << 62)


def whole_number(value, what: str, kind: str = "a whole number") -> int:
    """``value`` as an int when it is a whole number (a Python or NumPy integer, a finite
    float with no fraction, or a one-element array of them); `VoxNavError` "``what`` must be
    ``kind``" otherwise. int() would truncate 100.5 to 100 and raise TypeError for None."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return int(value)
    shown = value.item() if isinstance(value, np.generic) else value
    raise VoxNavError(f"{what} must be {kind}, got {shown!r}")


def as_ref(ref, what: str = "ref") -> int:
    """A polygon ref as an int: a whole number (`whole_number`); the range is not checked (a
    ref outside the navmesh is Detour's invalid parameter, a status). `VoxNavError` for
    None, NaN, 12.7 or text."""
    return whole_number(ref, what, "a polygon ref (a whole number, -1 for none)")


def as_ref_array(refs, what: str) -> np.ndarray:
    """Polygon refs as int64 (same shape): integers, or floats that are whole numbers (floats
    beyond +-2^62 become NO_POLY: no navmesh has such a ref). `VoxNavError` naming ``what``
    and the first bad value for fractions, NaN, bools, None or text: a cast would answer ref
    12 for 12.7."""
    try:
        r = np.asarray(refs)
    except (TypeError, ValueError, OverflowError) as exc:
        raise VoxNavError(
            f"{what} must be an array of polygon refs (whole numbers): {exc}"
        ) from None
    if r.dtype.kind in "iu":
        return r.astype(np.int64)
    if r.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(r) | (r != np.floor(r))
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise VoxNavError(
                f"{what} must be polygon refs (whole numbers, -1 for none), got "
                f"{r.reshape(-1)[i].item()!r} at index {i}"
            )
        return np.where(np.abs(r) < _REF_REACH, r, NO_POLY).astype(np.int64)
    raise VoxNavError(
        f"{what} must be an array of polygon refs (whole numbers, -1 for none), got "
        f"{'bools' if r.dtype.kind == 'b' else f'dtype {r.dtype}'}"
    )


@dataclass
class NavMeshParams:
    """``dtNavMeshParams``: where tile (0, 0) starts and how large a tile is, Y-up frame.

    orig: float32 (3,) world origin of the tile grid (Y-up). [Units: wu]
    tile_width, tile_height: tile size on Detour's x and z. [Units: wu] [Limit: > 0]
    max_tiles, max_polys: capacity (kept for Detour's binary format). [Limit: >= 1]
    """

    orig: np.ndarray
    tile_width: float
    tile_height: float
    max_tiles: int
    max_polys: int


def _opposite_side(side: int) -> int:
    return (side + 4) & 7


def _slab_coord(v: np.ndarray, side: int) -> np.float32:
    if side in (0, 4):
        return v[0]
    if side in (2, 6):
        return v[2]
    return F32(0)


def _slab_end_points(va: np.ndarray, vb: np.ndarray, side: int):
    """calcSlabEndPoints: the edge as (along, up) pairs sorted along the border."""
    k = 2 if side in (0, 4) else 0
    if va[k] < vb[k]:
        return (va[k], va[1]), (vb[k], vb[1])
    return (vb[k], vb[1]), (va[k], va[1])


def _overlap_slabs(amin, amax, bmin, bmax, px: np.float32, py: np.float32) -> bool:
    """overlapSlabs: do two border edges touch (shrunk by px along, within climb py up)?"""
    minx = max(amin[0] + px, bmin[0] + px)
    maxx = min(amax[0] - px, bmax[0] - px)
    if minx > maxx:
        return False
    ad = (amax[1] - amin[1]) / (amax[0] - amin[0])
    ak = amin[1] - ad * amin[0]
    bd = (bmax[1] - bmin[1]) / (bmax[0] - bmin[0])
    bk = bmin[1] - bd * bmin[0]
    aminy = ad * minx + ak
    amaxy = ad * maxx + ak
    bminy = bd * minx + bk
    bmaxy = bd * maxx + bk
    dmin = bminy - aminy
    dmax = bmaxy - amaxy
    if dmin * dmax < F32(0):
        return True
    thr = (py * F32(2)) * (py * F32(2))
    return bool(dmin * dmin <= thr or dmax * dmax <= thr)


class NavMesh:
    """``dtNavMesh``: tiles of polygons with links, Detour's Y-up frame.

    Build with `NavMesh.from_data` (one tile, a solo mesh) or `NavMesh(params)` then `add_tile`
    per tile. All arrays below are rebuilt after each `add_tile` (construction is not a hot path).

    Polygon arrays (one row per polygon of every tile, ref order):
      ``poly_tile`` int32 tile index; ``poly_index`` int32 index inside its tile;
      ``poly_verts`` int64 (n, 6) rows of ``verts``; ``poly_neis`` uint16 (n, 6) Detour's
      neighbour codes (in-tile); ``poly_vert_count``, ``poly_area``, ``poly_type`` uint8;
      ``poly_flags`` uint16; ``detail_vert_base``, ``detail_tri_base``, ``detail_vert_count``,
      ``detail_tri_count`` int64 into ``detail_verts`` / ``detail_tris``.
    Vertex arrays: ``verts`` float32 (nv, 3), ``detail_verts`` float32 (nd, 3), ``detail_tris``
      uint8 (nt, 4), all tiles concatenated.
    """

    def __init__(self, params: NavMeshParams):
        if not (params.tile_width > 0 and params.tile_height > 0):
            raise VoxNavError(
                f"navmesh tile size must be > 0, got {params.tile_width} x {params.tile_height}"
            )
        self.params = NavMeshParams(
            orig=np.asarray(params.orig, dtype=F32).reshape(3),
            tile_width=float(F32(params.tile_width)),
            tile_height=float(F32(params.tile_height)),
            max_tiles=int(params.max_tiles),
            max_polys=int(params.max_polys),
        )
        self.tiles: list[NavMeshData] = []
        self._tile_at: dict[tuple[int, int, int], int] = {}
        # Per polygon (global ref): list of links (ref, edge, side, bmin, bmax), front = first.
        self._links: list[list[tuple[int, int, int, int, int]]] = []
        self._tile_link_count: list[int] = []
        self._tile_base_list: list[int] = []
        #: Tile data whose vertices this navmesh alone holds (by id; the value keeps the id
        #: from being reused): Detour's snapping of off-mesh ends writes only into these.
        self._own_tiles: dict[int, NavMeshData] = {}
        #: True inside `replace_tiles`: the flat arrays are rebuilt once at its end.
        self._deferred = False
        self._rebuild()

    # ----------------------------------------------------------------------------- building
    @classmethod
    def from_data(cls, data: NavMeshData) -> NavMesh:
        """A solo navmesh from one tile, as ``dtNavMesh::init(data, ...)`` sets it up.

        The tile grid starts at the tile's bmin and one tile spans its bounds.
        """
        params = NavMeshParams(
            orig=np.asarray(data.bmin, dtype=F32),
            tile_width=float(F32(data.bmax[0]) - F32(data.bmin[0])),
            tile_height=float(F32(data.bmax[2]) - F32(data.bmin[2])),
            max_tiles=1,
            max_polys=max(1, data.npolys),
        )
        mesh = cls(params)
        mesh.add_tile(data)
        return mesh

    def add_tile(self, data: NavMeshData) -> int:
        """``dtNavMesh::addTile``: add a tile, link it inside and to its neighbours.

        Returns the tile index. Raises VoxNavError when a tile already sits at
        (tile_x, tile_y, layer) or the navmesh is full.
        """
        key = (int(data.tile_x), int(data.tile_y), int(data.layer))
        if key in self._tile_at:
            raise VoxNavError(f"a tile already sits at (x, y, layer) = {key}")
        if len(self.tiles) >= self.params.max_tiles:
            raise VoxNavError(
                f"the navmesh holds at most {self.params.max_tiles} tiles; raise max_tiles"
            )
        tile = len(self.tiles)
        if data.off_mesh_count:
            # Detour moves the off-mesh endpoints onto the mesh in the tile's own data: work
            # on a copy of the vertices so the caller's tile stays as it was.
            data = dataclasses.replace(data, verts=data.verts.copy())
            self._own_tiles[id(data)] = data
        self.tiles.append(data)
        self._tile_at[key] = tile
        base = len(self._links)
        self._links.extend([] for _ in range(data.npolys))
        self._tile_link_count.append(0)
        self._tile_base_list.append(base)
        x, y = key[0], key[1]
        layers = [t for t in self._tiles_at(x, y) if t != tile]
        sides = [(side, self._neighbour_tiles_at(x, y, side)) for side in range(8)]
        touched = [tile, *layers] + [t for _, ts in sides for t in ts]
        offmesh = any(self.tiles[t].off_mesh_count for t in touched)
        if offmesh:
            self._rebuild()  # polygon geometry for the endpoint snapping (nearest polygon)
        self._connect_int_links(tile)
        if offmesh:
            self._base_off_mesh_links(tile)
            self._connect_ext_off_mesh_links(tile, tile, -1)
        for other in layers:
            self._connect_ext_links(tile, other, -1)
            self._connect_ext_links(other, tile, -1)
            if offmesh:
                self._connect_ext_off_mesh_links(tile, other, -1)
                self._connect_ext_off_mesh_links(other, tile, -1)
        for side, others in sides:
            for other in others:
                self._connect_ext_links(tile, other, side)
                self._connect_ext_links(other, tile, _opposite_side(side))
                if offmesh:
                    self._connect_ext_off_mesh_links(tile, other, side)
                    self._connect_ext_off_mesh_links(other, tile, _opposite_side(side))
        if not self._deferred or offmesh:
            self._rebuild()
        return tile

    # ------------------------------------------------------------------ off-mesh connections
    def _query_polygons_in_tile(self, tile: int, qmin, qmax, max_polys: int = 128) -> list[int]:
        """dtNavMesh::queryPolygonsInTile: tile polygon indices whose bounds overlap the box
        (BV tree when the tile has one, else every ground polygon), no filter, at most 128."""
        data = self.tiles[tile]
        out: list[int] = []
        if data.bv_i.shape[0]:
            tbmin, tbmax = self.tile_bmin[tile], self.tile_bmax[tile]
            qfac = F32(data.bv_quant_factor)
            bmin, bmax = [], []
            for a in range(3):
                lo = min(max(qmin[a], tbmin[a]), tbmax[a]) - tbmin[a]
                hi = min(max(qmax[a], tbmin[a]), tbmax[a]) - tbmin[a]
                bmin.append(int(qfac * lo) & 0xFFFE)
                bmax.append(int(qfac * hi + F32(1)) | 1)
            nb, xb, iv = data.bv_bmin.tolist(), data.bv_bmax.tolist(), data.bv_i.tolist()
            node, end = 0, len(iv)
            while node < end:
                n0, n1, n2 = nb[node]
                m0, m1, m2 = xb[node]
                overlap = not (
                    bmin[0] > m0 or bmax[0] < n0 or bmin[1] > m1 or bmax[1] < n1
                    or bmin[2] > m2 or bmax[2] < n2
                )  # fmt: skip
                leaf = iv[node] >= 0
                if leaf and overlap and len(out) < max_polys:
                    out.append(iv[node])
                node += 1 if (overlap or leaf) else -iv[node]
            return out
        for i in range(data.npolys):
            if int(data.poly_type[i]) == POLYTYPE_OFFMESH_CONNECTION:
                continue
            v = data.verts[data.poly_verts[i, : int(data.poly_vert_count[i])]]
            pmin, pmax = v.min(axis=0), v.max(axis=0)
            if (qmin <= pmax).all() and (qmax >= pmin).all() and len(out) < max_polys:
                out.append(i)
        return out

    def _nearest_poly_in_tile(self, tile: int, center, half):
        """dtNavMesh::findNearestPolyInTile -> (global ref or NO_POLY, nearest point Y-up)."""
        from .query import NavMeshQuery

        query = NavMeshQuery(self)
        center = np.asarray(center, dtype=F32)
        half = np.asarray(half, dtype=F32)
        qmin = (center - half).astype(F32)
        qmax = (center + half).astype(F32)
        base = self._tile_base_list[tile]
        climb = F32(self.tiles[tile].walkable_climb)
        nearest, best_pt, best_d = NO_POLY, None, F32(3.4028234663852886e38)
        for i in self._query_polygons_in_tile(tile, qmin, qmax):
            closest, over = query._closest_point_on_poly_yup(base + i, center)
            diff = (center - closest).astype(F32)
            if over:
                d = abs(diff[1])
                d = d - climb if d > climb else F32(0)
                d = d * d
            else:
                d = diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2]
            if d < best_d:
                nearest, best_pt, best_d = base + i, closest, d
        return nearest, best_pt

    def off_mesh_landings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every stored off-mesh connection's user id (uint32), whether its start and whether
        its end joined a polygon (bool each): Detour links a connection's start in its tile
        (`_base_off_mesh_links`) and its end in that tile or one of the 8 around it
        (`_connect_ext_off_mesh_links`); one whose end joined nothing leads nowhere."""
        ids, starts, ends = [], [], []
        for tile, data in enumerate(self.tiles):
            base = self._tile_base_list[tile]
            for c in range(int(data.off_mesh_count)):
                edges = {rec[1] for rec in self._links[base + int(data.off_mesh_poly[c])]}
                ids.append(int(data.off_mesh_user_id[c]))
                starts.append(0 in edges)
                ends.append(1 in edges)
        return (
            np.asarray(ids, dtype=np.uint32),
            np.asarray(starts, dtype=bool),
            np.asarray(ends, dtype=bool),
        )

    def _base_off_mesh_links(self, tile: int) -> None:
        """baseOffMeshLinks: each stored link's start to its nearest polygon in the tile."""
        data = self.tiles[tile]
        base = self._tile_base_list[tile]
        climb = F32(data.walkable_climb)
        for c in range(data.off_mesh_count):
            poly = int(data.off_mesh_poly[c])
            rad = F32(data.off_mesh_rad[c])
            p = data.off_mesh_pos[c, :3]
            ref, nearest = self._nearest_poly_in_tile(tile, p, (rad, climb, rad))
            if ref == NO_POLY:
                continue
            dx, dz = nearest[0] - p[0], nearest[2] - p[2]
            if dx * dx + dz * dz > rad * rad:
                continue
            self._set_link_vertex(tile, poly, 0, nearest)
            if self._alloc_link(tile):
                self._links[base + poly].insert(0, (ref, 0, SIDE_INTERNAL, 0, 0))
            if self._alloc_link(tile):
                self._links[ref].insert(0, (base + poly, 0xFF, SIDE_INTERNAL, 0, 0))

    def _set_link_vertex(self, tile: int, poly: int, end: int, point) -> None:
        """Move off-mesh polygon ``poly``'s ``end`` (0 start, 1 end) vertex in tile ``tile``
        to ``point`` (Detour snaps it so), on this navmesh's own copy of the tile's vertices:
        tile data may be shared with a navmesh `copy` was made from, or with the tile cache
        (`update` changed the previous navmesh's data)."""
        data = self.tiles[tile]
        vertex = int(data.poly_verts[poly, end])
        if np.array_equal(data.verts[vertex], point):
            return
        if self._own_tiles.get(id(data)) is not data:
            data = dataclasses.replace(data, verts=data.verts.copy())
            self.tiles[tile] = data
            self._own_tiles[id(data)] = data
        data.verts[vertex] = point

    def _restore_link_ends(self, lo: int, hi: int, owner_tile) -> None:
        """Put back, at their given end points, the off-mesh links whose end was snapped onto
        a polygon of rows [lo, hi) (a tile being removed): a fresh bake without that tile
        leaves them there (Detour keeps the snapped point; the tile cache equals a full bake
        instead)."""
        for p, links in enumerate(self._links):
            if lo <= p < hi or not any(lo <= r < hi and e == 1 for r, e, *_ in links):
                continue
            tile = int(owner_tile[p])
            data = self.tiles[tile]
            poly = p - self._tile_base_list[tile]
            if int(data.poly_type[poly]) != POLYTYPE_OFFMESH_CONNECTION:
                continue
            c = poly - int(data.off_mesh_base)
            self._set_link_vertex(tile, poly, 1, data.off_mesh_pos[c, 3:].copy())

    def _connect_ext_off_mesh_links(self, tile: int, target: int, side: int) -> None:
        """connectExtOffMeshLinks: the links of `target` whose end lands in `tile` (seen from
        target: side `side`'s opposite, or inside when side is -1), to the nearest polygon."""
        tdata = self.tiles[target]
        tbase = self._tile_base_list[target]
        opposite = SIDE_INTERNAL if side == -1 else _opposite_side(side)
        climb = F32(tdata.walkable_climb)
        for c in range(tdata.off_mesh_count):
            if int(tdata.off_mesh_side[c]) != opposite:
                continue
            poly = int(tdata.off_mesh_poly[c])
            if not self._links[tbase + poly]:
                continue  # its start did not connect
            rad = F32(tdata.off_mesh_rad[c])
            p = tdata.off_mesh_pos[c, 3:]
            ref, nearest = self._nearest_poly_in_tile(tile, p, (rad, climb, rad))
            if ref == NO_POLY:
                continue
            dx, dz = nearest[0] - p[0], nearest[2] - p[2]
            if dx * dx + dz * dz > rad * rad:
                continue
            self._set_link_vertex(target, poly, 1, nearest)
            if self._alloc_link(target):
                self._links[tbase + poly].insert(0, (ref, 1, opposite, 0, 0))
            if int(tdata.off_mesh_flags[c]) & OFFMESH_CON_BIDIR and self._alloc_link(tile):
                land_side = SIDE_INTERNAL if side == -1 else side
                self._links[ref].insert(0, (tbase + poly, 0xFF, land_side, 0, 0))

    def remove_tile(self, x: int, y: int, layer: int = 0) -> NavMeshData:
        """``dtNavMesh::removeTile``: drop the tile at (x, y, layer) and every link into it.

        Returns the tile's data. Tiles after it move down one index and polygon refs after its
        polygons move down by its polygon count (refs are rows, see the module docstring);
        links kept keep their order, as Detour's ``unconnectLinks`` keeps them. Adding a tile
        back (`add_tile`) links it again: a changed tile is replaced by remove + add.
        Raises VoxNavError when no tile sits there.
        """
        key = (int(x), int(y), int(layer))
        if key not in self._tile_at:
            raise VoxNavError(f"no tile sits at (x, y, layer) = {key}")
        tile = self._tile_at.pop(key)
        data = self.tiles[tile]
        lo = self._tile_base_list[tile]
        hi = lo + data.npolys
        owner_tile = np.repeat(
            np.arange(len(self._tile_base_list)),
            np.diff(self._tile_base_list + [len(self._links)]),
        )
        self._restore_link_ends(lo, hi, owner_tile)
        data = self.tiles.pop(tile)
        self._own_tiles.pop(id(data), None)  # not held for ever by a long-lived navmesh
        del self._links[lo:hi]
        owner_tile = np.delete(owner_tile, np.arange(lo, hi))
        # One pass over the link lists (construction, not a query hot path): drop the links
        # into the removed tile, count them per owning tile, shift the refs after it.
        dropped = np.zeros(len(self._tile_base_list), dtype=np.int64)
        n = hi - lo
        for p, links in enumerate(self._links):
            if not links:
                continue
            kept = [
                (r - n if r >= hi else r, e, s, b0, b1)
                for r, e, s, b0, b1 in links
                if not lo <= r < hi
            ]
            dropped[owner_tile[p]] += len(links) - len(kept)
            self._links[p] = kept
        counts = [c - int(d) for c, d in zip(self._tile_link_count, dropped, strict=True)]
        del counts[tile]
        self._tile_link_count = counts
        bases = self._tile_base_list
        self._tile_base_list = bases[:tile] + [b - n for b in bases[tile + 1 :]]
        self._tile_at = {k: (t - 1 if t > tile else t) for k, t in self._tile_at.items()}
        if not self._deferred:
            self._rebuild()
        return data

    def copy(self) -> NavMesh:
        """A navmesh that shares the (never modified) tile data and flat arrays but owns its
        tile list and links, so `remove_tile` / `add_tile` on it leave this one, and any query
        object holding this one, untouched."""
        out = copy.copy(self)
        out.tiles = list(self.tiles)
        out._tile_at = dict(self._tile_at)
        out._links = [list(links) for links in self._links]
        out._tile_link_count = list(self._tile_link_count)
        out._tile_base_list = list(self._tile_base_list)
        # Both now share every tile's data: neither may write into it any more.
        out._own_tiles = {}
        self._own_tiles = {}
        return out

    def replace_tiles(self, remove: list[tuple[int, int]], add: list[NavMeshData]) -> None:
        """Remove the tiles at (x, y) (layer 0) then add the new tiles, as that many
        `remove_tile` and `add_tile` calls would, but rebuilding the flat arrays once."""
        self._deferred = True
        try:
            for x, y in remove:
                self.remove_tile(x, y)
            for data in add:
                self.add_tile(data)
        finally:
            self._deferred = False
            self._rebuild()

    def _alloc_link(self, tile: int) -> bool:
        if self._tile_link_count[tile] >= int(self.tiles[tile].max_link_count):
            return False
        self._tile_link_count[tile] += 1
        return True

    def _connect_int_links(self, tile: int) -> None:
        data = self.tiles[tile]
        base = self._tile_base_list[tile]
        for i in range(data.npolys):
            if int(data.poly_type[i]) == POLYTYPE_OFFMESH_CONNECTION:
                continue
            links = self._links[base + i]
            for j in range(int(data.poly_vert_count[i]) - 1, -1, -1):
                nei = int(data.poly_neis[i, j])
                if nei == 0 or nei & EXT_LINK:
                    continue
                if self._alloc_link(tile):
                    links.insert(0, (base + nei - 1, j, SIDE_INTERNAL, 0, 0))

    def _tiles_at(self, x: int, y: int) -> list[int]:
        # Detour's position lookup chain lists the newest tile first.
        found = [t for (tx, ty, _), t in self._tile_at.items() if tx == x and ty == y]
        return sorted(found, reverse=True)

    def _neighbour_tiles_at(self, x: int, y: int, side: int) -> list[int]:
        nx, ny = x, y
        if side == 0:
            nx += 1
        elif side == 1:
            nx += 1
            ny += 1
        elif side == 2:
            ny += 1
        elif side == 3:
            nx -= 1
            ny += 1
        elif side == 4:
            nx -= 1
        elif side == 5:
            nx -= 1
            ny -= 1
        elif side == 6:
            ny -= 1
        elif side == 7:
            nx += 1
            ny -= 1
        return self._tiles_at(nx, ny)

    def _find_connecting_polys(self, va, vb, target: int, side: int, maxcon: int = 4):
        """findConnectingPolys: target polygons whose border edge on `side` touches va-vb."""
        data = self.tiles[target]
        amin, amax = _slab_end_points(va, vb, side)
        apos = _slab_coord(va, side)
        m = EXT_LINK | side
        out: list[tuple[int, np.float32, np.float32]] = []
        climb = F32(data.walkable_climb)
        for i in range(data.npolys):
            nv = int(data.poly_vert_count[i])
            for j in range(nv):
                if int(data.poly_neis[i, j]) != m:
                    continue
                vc = data.verts[int(data.poly_verts[i, j])]
                vd = data.verts[int(data.poly_verts[i, (j + 1) % nv])]
                bpos = _slab_coord(vc, side)
                if abs(apos - bpos) > F32(0.01):
                    continue
                bmin, bmax = _slab_end_points(vc, vd, side)
                if not _overlap_slabs(amin, amax, bmin, bmax, F32(0.01), climb):
                    continue
                if len(out) < maxcon:
                    out.append((i, max(amin[0], bmin[0]), min(amax[0], bmax[0])))
                break
        return out

    def _connect_ext_links(self, tile: int, target: int, side: int) -> None:
        data = self.tiles[tile]
        base = self._tile_base_list[tile]
        tbase = self._tile_base_list[target]
        for i in range(data.npolys):
            nv = int(data.poly_vert_count[i])
            for j in range(nv):
                nei = int(data.poly_neis[i, j])
                if (nei & EXT_LINK) == 0:
                    continue
                direction = nei & 0xFF
                if side != -1 and direction != side:
                    continue
                va = data.verts[int(data.poly_verts[i, j])]
                vb = data.verts[int(data.poly_verts[i, (j + 1) % nv])]
                found = self._find_connecting_polys(va, vb, target, _opposite_side(direction))
                for poly, cmin, cmax in found:
                    if not self._alloc_link(tile):
                        continue
                    k = 2 if direction in (0, 4) else 0
                    tmin = (cmin - va[k]) / (vb[k] - va[k])
                    tmax = (cmax - va[k]) / (vb[k] - va[k])
                    if tmin > tmax:
                        tmin, tmax = tmax, tmin
                    # roundf (half away from zero) of a value >= 0, exact in float64.
                    lo = int(np.floor(float(min(max(tmin, F32(0)), F32(1)) * F32(255)) + 0.5))
                    hi = int(np.floor(float(min(max(tmax, F32(0)), F32(1)) * F32(255)) + 0.5))
                    self._links[base + i].insert(0, (tbase + poly, j, direction, lo, hi))

    def _rebuild(self) -> None:
        """Concatenate the tiles' arrays and flatten the link lists (refs in tile order)."""
        tiles = self.tiles
        base_list = self._tile_base_list
        counts = [t.npolys for t in tiles]
        self.tile_poly_base = np.array(base_list + [sum(counts)], dtype=np.int64)
        self.tile_xy = np.array(
            [(t.tile_x, t.tile_y, t.layer) for t in tiles], dtype=np.int64
        ).reshape(-1, 3)
        vbase = np.cumsum([0] + [t.nverts for t in tiles])
        dvbase = np.cumsum([0] + [t.detail_verts.shape[0] for t in tiles])
        dtbase = np.cumsum([0] + [t.detail_tris.shape[0] for t in tiles])
        n = int(self.tile_poly_base[-1])
        self.poly_count = n

        def cat(arrays, dtype, shape):
            arrays = [np.asarray(a) for a in arrays]
            return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(shape, dtype)

        self.poly_tile = cat(
            [np.full(c, i, dtype=np.int32) for i, c in enumerate(counts)], np.int32, (0,)
        )
        self.poly_index = cat([np.arange(c, dtype=np.int32) for c in counts], np.int32, (0,))
        self.verts = cat([t.verts for t in tiles], F32, (0, 3))
        self.poly_verts = cat(
            [t.poly_verts.astype(np.int64) + vbase[i] for i, t in enumerate(tiles)],
            np.int64,
            (0, 6),
        )
        self.poly_neis = cat([t.poly_neis for t in tiles], np.uint16, (0, 6))
        self.poly_vert_count = cat([t.poly_vert_count for t in tiles], np.uint8, (0,))
        self.poly_area = cat([t.poly_area for t in tiles], np.uint8, (0,))
        self.poly_type = cat([t.poly_type for t in tiles], np.uint8, (0,))
        self.poly_flags = cat([t.poly_flags for t in tiles], np.uint16, (0,))
        # Off-mesh polygons have no detail sub-mesh in Detour's data: zero rows for them here.
        dm = cat(
            [
                np.concatenate([t.detail_meshes, np.zeros((t.off_mesh_count, 4), np.uint32)])
                for t in tiles
            ],
            np.int64,
            (0, 4),
        )
        tile_of = self.poly_tile.astype(np.int64)
        self.detail_vert_base = dm[:, 0] + dvbase[:-1][tile_of] if n else dm[:, 0]
        self.detail_tri_base = dm[:, 1] + dtbase[:-1][tile_of] if n else dm[:, 1]
        self.detail_vert_count = dm[:, 2]
        self.detail_tri_count = dm[:, 3]
        self.detail_verts = cat([t.detail_verts for t in tiles], F32, (0, 3))
        self.detail_tris = cat([t.detail_tris for t in tiles], np.uint8, (0, 4))
        self.tile_walkable_climb = np.array([F32(t.walkable_climb) for t in tiles], dtype=F32)
        self.tile_bmin = cat([np.asarray(t.bmin).reshape(1, 3) for t in tiles], F32, (0, 3))
        self.tile_bmax = cat([np.asarray(t.bmax).reshape(1, 3) for t in tiles], F32, (0, 3))
        # Polygon vertex positions padded to 6 (unused slots repeat vertex 0): (n, 6, 3).
        if n:
            ids = np.where(
                np.arange(6)[None, :] < self.poly_vert_count[:, None].astype(np.int64),
                self.poly_verts,
                self.poly_verts[:, :1],
            )
            self.poly_pos = self.verts[ids]
        else:
            self.poly_pos = np.zeros((0, 6, 3), dtype=F32)
        # Detail triangles as vertex positions (nt, 3, 3), sub-mesh ids resolved.
        self.detail_tri_pos = self._detail_triangle_positions()
        # Links.
        lens = np.array([len(lst) for lst in self._links], dtype=np.int64)
        self.link_start = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        flat = [rec for lst in self._links for rec in lst]
        arr = np.array(flat, dtype=np.int64).reshape(-1, 5)
        self.link_owner = np.repeat(np.arange(n, dtype=np.int64), lens)
        self.link_ref = arr[:, 0]
        self.link_edge = arr[:, 1].astype(np.int64)
        self.link_side = arr[:, 2].astype(np.int64)
        self.link_bmin = arr[:, 3].astype(np.int64)
        self.link_bmax = arr[:, 4].astype(np.int64)
        self._compute_portals()

    def _compute_portals(self) -> None:
        """Per link: the portal (left, right) and the edge mid point, as getPortalPoints and
        getEdgeMidPoint compute them (float32, Detour's operation order). A link from an
        off-mesh polygon: its endpoint vertex ``edge`` (0 start, 1 end) twice; a link into one:
        the endpoint of the off-mesh polygon's first link back to the owner."""
        owner = self.link_owner
        edge = self.link_edge
        nvc = self.poly_vert_count.astype(np.int64)[owner]
        offmesh = self.poly_type == POLYTYPE_OFFMESH_CONNECTION
        from_off = offmesh[owner] if owner.size else np.zeros(0, bool)
        to_off = offmesh[self.link_ref] if owner.size else np.zeros(0, bool)
        safe_edge = np.where(edge < 6, edge, 0)
        v0 = self.poly_verts[owner, safe_edge]
        v1 = self.poly_verts[owner, (safe_edge + 1) % np.maximum(nvc, 1)]
        v1 = np.where(from_off, v0, v1)
        if to_off.any():
            # getPortalPoints into an off-mesh polygon: its first link back to `from`.
            back = np.full(owner.shape[0], 0, dtype=np.int64)
            rows = np.nonzero(to_off)[0]
            for k in rows.tolist():
                target, frm = int(self.link_ref[k]), int(owner[k])
                for j in range(int(self.link_start[target]), int(self.link_start[target + 1])):
                    if int(self.link_ref[j]) == frm:
                        back[k] = int(self.link_edge[j])
                        break
            vt = self.poly_verts[self.link_ref[rows], back[rows]]
            v0 = v0.copy()
            v0[rows] = vt
            v1[rows] = vt
        left = self.verts[v0].copy()
        right = self.verts[v1].copy()
        partial = (
            (self.link_side != SIDE_INTERNAL)
            & ~from_off
            & ~to_off
            & ((self.link_bmin != 0) | (self.link_bmax != 255))
        )
        if np.any(partial):
            s = F32(1.0) / F32(255.0)
            tmin = (self.link_bmin[partial].astype(F32) * s)[:, None]
            tmax = (self.link_bmax[partial].astype(F32) * s)[:, None]
            a, b = self.verts[v0[partial]], self.verts[v1[partial]]
            left[partial] = a + (b - a) * tmin
            right[partial] = a + (b - a) * tmax
        self.link_left = left.astype(F32)
        self.link_right = right.astype(F32)
        self.link_mid = ((left + right) * F32(0.5)).astype(F32)

    def _detail_triangle_positions(self) -> np.ndarray:
        nt = self.detail_tris.shape[0]
        if nt == 0:
            return np.zeros((0, 3, 3), dtype=F32)
        owner = np.zeros(nt, dtype=np.int64)
        owner[_ranges(self.detail_tri_base, self.detail_tri_count)] = np.repeat(
            np.arange(self.poly_count), self.detail_tri_count
        )
        local = self.detail_tris[:, :3].astype(np.int64)
        nvc = self.poly_vert_count.astype(np.int64)[owner][:, None]
        poly_ids = self.poly_verts[owner[:, None], np.minimum(local, 5)]
        detail_ids = self.detail_vert_base[owner][:, None] + local - nvc
        from_poly = local < nvc
        pos = np.where(
            from_poly[..., None],
            self.verts[np.where(from_poly, poly_ids, 0)],
            self.detail_verts[np.where(from_poly, 0, detail_ids)]
            if self.detail_verts.shape[0]
            else F32(0),
        )
        return pos.astype(F32)

    # ----------------------------------------------------------------------------- lookups
    @property
    def tile_count(self) -> int:
        return len(self.tiles)

    def tile_at(self, x: int, y: int, layer: int = 0) -> int:
        """Tile index at grid cell (x, y, layer), or -1."""
        return self._tile_at.get((int(x), int(y), int(layer)), -1)

    def tiles_at(self, x: int, y: int) -> list[int]:
        """Tile indices at grid cell (x, y), every layer, in Detour's lookup order."""
        return self._tiles_at(int(x), int(y))

    def calc_tile_loc(self, pos_yup) -> tuple[int, int]:
        """``calcTileLoc``: tile grid cell of a Y-up position (floor, float32)."""
        p = self.params
        tx = int(np.floor((F32(pos_yup[0]) - p.orig[0]) / F32(p.tile_width)))
        ty = int(np.floor((F32(pos_yup[2]) - p.orig[2]) / F32(p.tile_height)))
        return tx, ty

    def tile_range(self, lo_yup, hi_yup) -> tuple[int, int, int, int]:
        """`calc_tile_loc` of a box's corners (min x, min y, max x, max y), limited to the
        cells that hold tiles: a box of finite corners may still overflow float32 (half
        extents of 3e38), and its cells beyond the tiles are empty. A NaN corner, or no
        tile, gives an empty range (max < min)."""
        p = self.params
        held = self.tile_xy
        with np.errstate(over="ignore", invalid="ignore"):
            cells = [
                np.floor((F32(corner[axis]) - p.orig[axis]) / F32(size))
                for corner in (lo_yup, hi_yup)
                for axis, size in ((0, p.tile_width), (2, p.tile_height))
            ]
        if not held.shape[0] or np.isnan(cells).any():
            return 0, 0, -1, -1
        low, high = held[:, :2].min(axis=0), held[:, :2].max(axis=0)
        minx, miny, maxx, maxy = (
            int(np.clip(c, low[i % 2] - 1, high[i % 2] + 1)) for i, c in enumerate(cells)
        )
        return (
            max(minx, int(low[0])),
            max(miny, int(low[1])),
            min(maxx, int(high[0])),
            min(maxy, int(high[1])),
        )

    def is_valid_ref(self, ref) -> bool:
        """A ref of one of this navmesh's polygons; `VoxNavError` when ``ref`` is not a whole
        number (`as_ref`)."""
        return 0 <= as_ref(ref) < self.poly_count

    def tile_poly(self, refs) -> np.ndarray:
        """int32 (..., 3): (tile x, tile y, index in tile) per ref; (-1, -1, -1) for -1."""
        refs = np.asarray(refs, dtype=np.int64)
        ok = (refs >= 0) & (refs < self.poly_count)
        safe = np.where(ok, refs, 0)
        out = np.full(refs.shape + (3,), -1, dtype=np.int32)
        if self.poly_count:
            t = self.poly_tile[safe]
            out[..., 0] = np.where(ok, self.tile_xy[t, 0], -1)
            out[..., 1] = np.where(ok, self.tile_xy[t, 1], -1)
            out[..., 2] = np.where(ok, self.poly_index[safe], -1)
        return out

    def ref_of(self, tile_x: int, tile_y: int, index: int, layer: int = 0) -> int:
        """The ref of polygon `index` in tile (tile_x, tile_y, layer), or -1."""
        t = self.tile_at(tile_x, tile_y, layer)
        if t < 0 or not 0 <= index < self.tiles[t].npolys:
            return NO_POLY
        return int(self.tile_poly_base[t]) + int(index)

    def links_of(self, ref: int) -> range:
        """Rows of the link arrays of polygon `ref`, in Detour's traversal order."""
        return range(int(self.link_start[ref]), int(self.link_start[ref + 1]))
