"""One Detour navmesh tile, exactly as Detour's ``dtCreateNavMeshData`` lays it out.

`create_nav_mesh_data` ports ``dtCreateNavMeshData`` (DetourNavMeshBuilder.cpp, recastnavigation
9f4ce644): polygon vertices in world units, polygons with Detour's neighbour encoding, the detail
sub-meshes with only their detail-only vertices, the bounding-volume tree and the off-mesh
connections (`core.offmesh.OffMeshLinks`) whose start point lies in the tile. Every float is
float32, computed in Detour's operation order, so the arrays (and the bytes `core.nav.binio`
writes from them) equal what the C++ produces.

**Frame**: Detour's, Y-up. VoxNav's Z-up world point (x, y, z) is Detour's (x, z, y) (the parity
mirror; polygon winding and 2D cross-product signs are unchanged when Detour's (x, z) is read as
VoxNav's (x, y)). VoxNav's ``PolyMesh.verts`` (x, height, grid row) already are Recast's (x, y, z)
cell coordinates, so polygons need no conversion; bounds and detail vertices are swapped.

**Areas and flags**: RecastDemo's rule (`poly_area_and_flags`): Recast's walkable area 63 becomes
Detour area 0 "ground" with flag 1 "walk"; user areas 1..62 keep their id, flag 1; a null area 0
polygon (Recast never makes one) gets flag 0, so no default query filter accepts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import VoxNavError

if TYPE_CHECKING:
    from ..detail import PolyMeshDetail
    from ..offmesh import OffMeshLinks
    from ..polymesh import PolyMesh

F32 = np.float32

#: Detour's DT_VERTS_PER_POLYGON: the most vertices a navmesh polygon may have.
VERTS_PER_POLYGON = 6
#: Recast's "no vertex / no neighbour" marker in rcPolyMesh.polys.
MESH_NULL_IDX = 0xFFFF
#: Detour's DT_EXT_LINK: a polygon edge on the tile border (| the portal direction 0..7).
EXT_LINK = 0x8000
#: Recast's RC_WALKABLE_AREA and RecastDemo's SAMPLE_POLYAREA_GROUND / SAMPLE_POLYFLAGS_WALK.
RC_WALKABLE_AREA = 63
GROUND_AREA = 0
WALK_FLAG = 1
#: dtPolyTypes.
POLYTYPE_GROUND = 0
POLYTYPE_OFFMESH_CONNECTION = 1
#: dtOffMeshConnection::flags bit: the connection may be taken from either end.
OFFMESH_CON_BIDIR = 1
#: classifyOffMeshPoint's answer for a point inside the tile's xz bounds.
OFFMESH_INSIDE = 0xFF

# Recast's border-edge direction (low 4 bits of a 0x8000 neighbour) -> Detour's portal side:
# 0 (x-) -> 4, 1 (z+) -> 2, 2 (x+) -> 0, 3 (z-) -> 6; 0xF (outer border, no portal) -> no link.
_PORTAL_SIDE = {0: 4, 1: 2, 2: 0, 3: 6}


@dataclass
class NavMeshData:
    """One navmesh tile as ``dtCreateNavMeshData`` builds it, Detour's Y-up frame.

    Array shapes and dtypes follow Detour's structs. The float scalars hold float32 values.
    Links are not stored: Detour allocates ``max_link_count`` zeroed links and fills them when
    the tile is added to a navmesh.
    """

    tile_x: int
    tile_y: int
    layer: int
    user_id: int
    #: float32 (3,) tile bounds, Y-up (x, up, z). [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    #: Agent height, radius and climb, float32 values. [Units: wu]
    walkable_height: float
    walkable_radius: float
    walkable_climb: float
    #: 1 / cell size (float32): BV-tree node bounds are (world - bmin) * this. [Units: 1/wu]
    bv_quant_factor: float
    #: Links Detour reserves: every polygon edge + 2 per portal edge (+ off-mesh links).
    max_link_count: int
    #: float32 (nverts, 3) polygon vertices, Y-up world. [Units: wu]
    verts: np.ndarray
    #: uint16 (npolys, 6) vertex ids; slots past poly_vert_count are 0.
    poly_verts: np.ndarray
    #: uint16 (npolys, 6) per edge j (vertex j -> j+1): 0 = none (wall), i + 1 = polygon i in
    #: this tile, EXT_LINK | side = an edge on the tile border (portal side 0..7).
    poly_neis: np.ndarray
    #: uint16 (npolys,) polygon flags (query filters include/exclude on them).
    poly_flags: np.ndarray
    #: uint8 (npolys,) vertex count. [Limit: 3..6]
    poly_vert_count: np.ndarray
    #: uint8 (npolys,) Detour area id. [Limit: 0..63]
    poly_area: np.ndarray
    #: uint8 (npolys,) POLYTYPE_GROUND (0) or POLYTYPE_OFFMESH_CONNECTION (1).
    poly_type: np.ndarray
    #: uint32 (ground polygons, 4): vert_base, tri_base, vert_count, tri_count (dtPolyDetail's
    #: order); off-mesh polygons have none, as in Detour.
    #: A sub-mesh's vertex k < poly_vert_count is polygon vertex k; vertex k >= poly_vert_count
    #: is detail_verts[vert_base + k - poly_vert_count]; tri_base indexes detail_tris.
    detail_meshes: np.ndarray
    #: float32 (k, 3) the detail-only vertices, Y-up world. [Units: wu]
    detail_verts: np.ndarray
    #: uint8 (t, 4) sub-mesh-local vertex ids a, b, c and edge flags (Recast's).
    detail_tris: np.ndarray
    #: uint16 (nb, 3) BV node bounds, quantized: (world - bmin) * bv_quant_factor on every
    #: axis. nb = 2 * npolys (Detour's bvNodeCount) or 0 without a tree; the tree uses the
    #: first 2 * npolys - 1 nodes in depth-first order, the last node stays zero as in Detour
    #: (whose queryPolygons walks all nb nodes, so it meets that node as a leaf of polygon 0
    #: with the box (0,0,0)-(0,0,0) and can report polygon 0 twice near bmin).
    bv_bmin: np.ndarray
    bv_bmax: np.ndarray
    #: int32 (nb,) leaf: polygon index (>= 0); inner node: -(nodes in its subtree).
    bv_i: np.ndarray
    #: Off-mesh connections (dtOffMeshConnection), the links whose start lies in this tile; their
    #: polygons are the last ones (from ``off_mesh_base``), 2 vertices each (start, end), type
    #: POLYTYPE_OFFMESH_CONNECTION, no detail sub-mesh and no BV node.
    #: float32 (k, 6) start xyz then end xyz, Y-up world. [Units: wu]
    off_mesh_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 6), dtype=F32))
    #: float32 (k,) endpoint snap radius. [Units: wu]
    off_mesh_rad: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=F32))
    #: uint16 (k,) the connection's polygon index in this tile.
    off_mesh_poly: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint16))
    #: uint8 (k,) OFFMESH_CON_BIDIR or 0 (start -> end only).
    off_mesh_flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    #: uint8 (k,) where the end point lies: 0xff inside the tile, else the neighbour tile's
    #: side 0..7 (Detour's portal sides: 0 x+, 2 z+, 4 x-, 6 z-, odd = corners).
    off_mesh_side: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    #: uint32 (k,) the link's user id.
    off_mesh_user_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))

    @property
    def off_mesh_count(self) -> int:
        return int(self.off_mesh_pos.shape[0])

    @property
    def off_mesh_base(self) -> int:
        """Index of the first off-mesh polygon (= the ground polygon count)."""
        return self.npolys - self.off_mesh_count

    @property
    def npolys(self) -> int:
        return int(self.poly_verts.shape[0])

    @property
    def nverts(self) -> int:
        return int(self.verts.shape[0])


def poly_area_and_flags(areas) -> tuple[np.ndarray, np.ndarray]:
    """Detour area ids and polygon flags from Recast area ids, RecastDemo's rule.

    areas: uint8 (npolys,) Recast areas (0 null, 63 walkable, 1..62 user types).
    Returns (area uint8 (npolys,), flags uint16 (npolys,)): 63 -> (0 "ground", 1 "walk");
    1..62 -> (same id, 1 "walk"); 0 -> (0, 0: no flag, so no query filter accepts it).
    """
    areas = np.asarray(areas, dtype=np.uint8)
    out_area = np.where(areas == RC_WALKABLE_AREA, np.uint8(GROUND_AREA), areas).astype(np.uint8)
    flags = np.where(areas != 0, np.uint16(WALK_FLAG), np.uint16(0)).astype(np.uint16)
    return out_area, flags


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated integer ranges [starts[i], starts[i] + counts[i]), int64."""
    counts = counts.astype(np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts.astype(np.int64) - offsets, counts) + np.arange(total, dtype=np.int64)


def _quantize(values: np.ndarray, origin: np.ndarray, factor: np.float32) -> np.ndarray:
    """(int)((v - origin) * factor) clamped to [0, 0xffff], float32 as Detour computes it."""
    scaled = (values.astype(F32) - origin.astype(F32)).astype(F32) * factor
    return np.clip(np.trunc(scaled.astype(F32)).astype(np.int64), 0, 0xFFFF).astype(np.uint16)


def bv_items(
    pmesh_verts: np.ndarray,
    poly_vert_ids: np.ndarray,
    vert_count: np.ndarray,
    detail_meshes_recast: np.ndarray | None,
    detail_verts: np.ndarray | None,
    bmin: np.ndarray,
    cs: np.float32,
    ch: np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Quantized polygon bounds for the BV tree, as ``createBVTree`` computes them.

    With a detail mesh: the float bounds of the polygon's detail vertices (Y-up world),
    quantized by 1/cs on every axis. Without: the integer cell bounds of its vertices, the
    height rescaled to cs units (floor for the minimum, ceil for the maximum).
    Returns (bmin uint16 (npolys, 3), bmax uint16 (npolys, 3)).
    """
    if detail_meshes_recast is not None and detail_verts is not None:
        quant = F32(1) / F32(cs)
        vb = detail_meshes_recast[:, 0].astype(np.int64)
        ndv = detail_meshes_recast[:, 1].astype(np.int64)
        gathered = detail_verts[_ranges(vb, ndv)]
        starts = np.cumsum(ndv) - ndv
        fmin = np.minimum.reduceat(gathered, starts, axis=0)
        fmax = np.maximum.reduceat(gathered, starts, axis=0)
        return _quantize(fmin, bmin, quant), _quantize(fmax, bmin, quant)
    nvp = poly_vert_ids.shape[1]
    used = np.arange(nvp)[None, :] < vert_count[:, None]
    cells = pmesh_verts.astype(np.int64)[np.where(used, poly_vert_ids, poly_vert_ids[:, :1])]
    imin = cells.min(axis=1)
    imax = cells.max(axis=1)
    ymin = (imin[:, 1].astype(F32) * F32(ch)).astype(F32) / F32(cs)
    ymax = (imax[:, 1].astype(F32) * F32(ch)).astype(F32) / F32(cs)
    imin[:, 1] = np.floor(ymin.astype(F32)).astype(np.int64)
    imax[:, 1] = np.ceil(ymax.astype(F32)).astype(np.int64)
    return (imin & 0xFFFF).astype(np.uint16), (imax & 0xFFFF).astype(np.uint16)


def bv_tree(
    item_bmin: np.ndarray, item_bmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Detour's BV tree (``subdivide``) over quantized item bounds, one tree level at a time.

    Each inner node covers a run of items: its bounds are their union; the items are sorted
    (stably, as glibc's merge-sort qsort does) by bmin on the node's longest axis (ties: x
    before y before z) and split at half (the left half gets inum // 2). Nodes are numbered
    depth first; an inner node stores -(nodes in its subtree), a leaf its item (polygon) id.

    item_bmin, item_bmax: uint16 (n, 3). [Limit: n >= 1]
    Returns (node_bmin uint16 (2n, 3), node_bmax uint16 (2n, 3), node_i int32 (2n,)); the
    last node is unused and zero, as in Detour's buffer of 2n nodes.
    """
    n = int(item_bmin.shape[0])
    node_bmin = np.zeros((2 * n, 3), dtype=np.uint16)
    node_bmax = np.zeros((2 * n, 3), dtype=np.uint16)
    node_i = np.zeros(2 * n, dtype=np.int32)
    if n == 0:
        return node_bmin, node_bmax, node_i
    order = np.arange(n, dtype=np.int64)  # item at each position, re-sorted per level
    ibmin = item_bmin.astype(np.int64)
    ibmax = item_bmax.astype(np.int64)
    # The segments of the current level: positions [start, start + size) and their node.
    seg_start = np.zeros(1, dtype=np.int64)
    seg_size = np.full(1, n, dtype=np.int64)
    seg_node = np.zeros(1, dtype=np.int64)
    while seg_start.size:
        leaf = seg_size == 1
        if leaf.any():
            items = order[seg_start[leaf]]
            nodes = seg_node[leaf]
            node_bmin[nodes] = item_bmin[items]
            node_bmax[nodes] = item_bmax[items]
            node_i[nodes] = items
        inner = ~leaf
        start, size, node = seg_start[inner], seg_size[inner], seg_node[inner]
        if start.size == 0:
            break
        positions = _ranges(start, size)
        seg_of_pos = np.repeat(np.arange(start.size), size)
        offsets = np.cumsum(size) - size
        lo = np.minimum.reduceat(ibmin[order[positions]], offsets, axis=0)
        hi = np.maximum.reduceat(ibmax[order[positions]], offsets, axis=0)
        node_bmin[node] = lo
        node_bmax[node] = hi
        node_i[node] = -(2 * size - 1)
        extent = hi - lo
        axis = np.zeros(start.size, dtype=np.int64)
        best = extent[:, 0].copy()
        take_y = extent[:, 1] > best
        axis[take_y] = 1
        best[take_y] = extent[take_y, 1]
        axis[extent[:, 2] > best] = 2
        key = ibmin[order[positions], axis[seg_of_pos]]
        resorted = np.lexsort((key, seg_of_pos))  # stable: equal keys keep their order
        order[positions] = order[positions[resorted]]
        half = size // 2
        seg_start = np.concatenate([start, start + half])
        seg_size = np.concatenate([half, size - half])
        seg_node = np.concatenate([node + 1, node + 2 * half])
    return node_bmin, node_bmax, node_i


def _y_up(vec) -> np.ndarray:
    """VoxNav Z-up (..., 3) -> Detour Y-up: (x, y, z) -> (x, z, y), float32."""
    return np.ascontiguousarray(np.asarray(vec, dtype=F32)[..., [0, 2, 1]])


def create_nav_mesh_data(
    pmesh: PolyMesh,
    dmesh: PolyMeshDetail | None = None,
    *,
    walkable_height: float,
    walkable_radius: float,
    walkable_climb: float,
    tile_x: int = 0,
    tile_y: int = 0,
    layer: int = 0,
    build_bv_tree: bool = True,
    offmesh: OffMeshLinks | None = None,
) -> NavMeshData:
    """``dtCreateNavMeshData`` for one tile from a polygon mesh and its detail mesh.

    pmesh: `core.polymesh.PolyMesh` (verts uint16 (n, 3) cells as (x, height, row); polys
        uint16 (npolys, 2*nvp); areas; nvp [Limit: <= 6]; bmin/bmax float32 Z-up; cs, ch).
        A neighbour of 0x8000 | dir marks a tile-border edge (portal when dir != 0xF).
    dmesh: `core.detail.PolyMeshDetail` or None (then each polygon is fan-triangulated, as
        Detour does, and the BV tree uses the polygon's cell bounds).
    walkable_height, walkable_radius, walkable_climb: the agent, stored in the header (RecastDemo
        passes its agent settings). [Units: wu]
    tile_x, tile_y, layer: the tile's place in a tiled navmesh (0 for a solo mesh).
    offmesh: off-mesh links (VoxNav Z-up) or None. As Detour does, each endpoint is classified
        against the tile's x/z bounds (and, for the start, the height range of the tile's
        detail vertices +- climb); only links whose start is inside are stored (as
        polygons after the ground polygons and dtOffMeshConnection records), and 2 links
        are reserved per endpoint inside the tile.
    Raises VoxNavError for an empty mesh, nvp > 6 or 65535+ vertices (Detour's limits).
    """
    verts = np.asarray(pmesh.verts, dtype=np.uint16)
    polys = np.asarray(pmesh.polys, dtype=np.uint16)
    nvp = int(pmesh.nvp)
    if nvp > VERTS_PER_POLYGON:
        raise VoxNavError(
            f"Detour polygons have at most {VERTS_PER_POLYGON} vertices, the polygon mesh has "
            f"up to {nvp}: bake with max_verts_per_poly <= {VERTS_PER_POLYGON}"
        )
    if verts.shape[0] >= 0xFFFF:
        raise VoxNavError(
            f"a Detour tile holds fewer than 65535 vertices, this mesh has {verts.shape[0]}: "
            "use tiles or a larger cell size"
        )
    if verts.shape[0] == 0 or polys.shape[0] == 0:
        raise VoxNavError(
            "the navigation mesh is empty (no walkable polygons): nothing to export; check the "
            "walkable settings (agent height, radius, slope) and that the geometry has floors"
        )
    npolys = polys.shape[0]
    cs, ch = F32(pmesh.cs), F32(pmesh.ch)
    bmin, bmax = _y_up(pmesh.bmin), _y_up(pmesh.bmax)
    con = _classify_offmesh(offmesh, verts, dmesh, bmin, bmax, ch, F32(walkable_climb))

    ids = polys[:, :nvp]
    neis = polys[:, nvp:]
    # A polygon's vertices end at the first MESH_NULL_IDX.
    used = np.cumprod(ids != MESH_NULL_IDX, axis=1).astype(bool)
    vert_count = used.sum(axis=1).astype(np.uint8)

    border = (neis & 0x8000) != 0
    direction = neis & 0xF
    portal = used & border & (direction != 0xF)
    edge_count = int(used.sum())
    max_link_count = edge_count + 2 * int(portal.sum()) + 2 * con.link_count

    # Vertices: bmin + cell * cs (ch for the height), float32 in Detour's order.
    cell = verts.astype(F32)
    nav_verts = np.empty((verts.shape[0], 3), dtype=F32)
    nav_verts[:, 0] = bmin[0] + cell[:, 0] * cs
    nav_verts[:, 1] = bmin[1] + cell[:, 1] * ch
    nav_verts[:, 2] = bmin[2] + cell[:, 2] * cs

    poly_verts = np.zeros((npolys, VERTS_PER_POLYGON), dtype=np.uint16)
    poly_verts[:, :nvp] = np.where(used, ids, 0)
    side = np.zeros_like(neis)
    for recast_dir, detour_side in _PORTAL_SIDE.items():
        side[direction == recast_dir] = EXT_LINK | detour_side
    encoded = np.where(border, side, (neis.astype(np.int64) + 1) & 0xFFFF).astype(np.uint16)
    poly_neis = np.zeros((npolys, VERTS_PER_POLYGON), dtype=np.uint16)
    poly_neis[:, :nvp] = np.where(used, encoded, 0)
    poly_area, poly_flags = poly_area_and_flags(pmesh.areas)
    if poly_area.shape != (npolys,):
        raise VoxNavError(f"polygon mesh areas must have shape ({npolys},), got {poly_area.shape}")

    detail_meshes = np.zeros((npolys, 4), dtype=np.uint32)
    nv = vert_count.astype(np.int64)
    recast_meshes = None
    recast_dverts = None
    if dmesh is not None:
        recast_meshes = np.asarray(dmesh.meshes, dtype=np.int64)
        recast_dverts = _y_up(dmesh.verts)
        detail_tris = np.ascontiguousarray(np.asarray(dmesh.tris, dtype=np.uint8))
        if recast_meshes.shape != (npolys, 4):
            raise VoxNavError(
                f"detail mesh has {recast_meshes.shape[0]} sub-meshes for {npolys} polygons: "
                "pass the detail mesh of the same bake"
            )
        vb, ndv = recast_meshes[:, 0], recast_meshes[:, 1]
        extra = ndv - nv
        if (extra < 0).any():
            raise VoxNavError("detail mesh has fewer vertices than its polygon: a broken bake")
        vbase = np.cumsum(extra) - extra
        if int(extra.sum()) > 0xFFFF:
            raise VoxNavError(
                f"a Detour tile holds at most 65535 detail vertices, this one needs "
                f"{int(extra.sum())}: use tiles or a larger detail sample distance"
            )
        detail_meshes[:, 0] = vbase
        detail_meshes[:, 1] = recast_meshes[:, 2]
        detail_meshes[:, 2] = extra & 0xFF
        detail_meshes[:, 3] = recast_meshes[:, 3] & 0xFF
        detail_verts = recast_dverts[_ranges(vb + nv, extra)]
    else:
        ntri = nv - 2
        tri_base = np.cumsum(ntri) - ntri
        detail_meshes[:, 1] = tri_base
        detail_meshes[:, 3] = ntri
        detail_verts = np.zeros((0, 3), dtype=F32)
        local = _ranges(np.full(npolys, 2), ntri)  # j = 2 .. nv-1 per polygon
        last = np.repeat(nv - 1, ntri)
        detail_tris = np.zeros((local.size, 4), dtype=np.uint8)
        detail_tris[:, 1] = local - 1
        detail_tris[:, 2] = local
        detail_tris[:, 3] = 1 << 2 | np.where(local == 2, 1, 0) | np.where(local == last, 1 << 4, 0)

    if build_bv_tree:
        item_min, item_max = bv_items(
            verts, ids, vert_count, recast_meshes, recast_dverts, bmin, cs, ch
        )
        bv_bmin, bv_bmax, bv_i = bv_tree(item_min, item_max)
    else:
        bv_bmin = np.zeros((0, 3), dtype=np.uint16)
        bv_bmax = np.zeros((0, 3), dtype=np.uint16)
        bv_i = np.zeros(0, dtype=np.int32)

    nstored = con.pos.shape[0]
    if nstored:
        if verts.shape[0] + 2 * nstored > 0xFFFF:
            raise VoxNavError(
                f"a Detour tile holds at most 65535 vertices, this one needs "
                f"{verts.shape[0] + 2 * nstored} with its off-mesh links: use tiles"
            )
        nav_verts = np.concatenate([nav_verts, con.pos.reshape(-1, 3)]).astype(F32)
        link_verts = np.zeros((nstored, VERTS_PER_POLYGON), dtype=np.uint16)
        link_verts[:, 0] = verts.shape[0] + 2 * np.arange(nstored)
        link_verts[:, 1] = link_verts[:, 0] + 1
        poly_verts = np.concatenate([poly_verts, link_verts])
        poly_neis = np.concatenate([poly_neis, np.zeros_like(link_verts)])
        poly_flags = np.concatenate([poly_flags, con.flags])
        vert_count = np.concatenate([vert_count, np.full(nstored, 2, dtype=np.uint8)])
        poly_area = np.concatenate([poly_area, con.area])
    poly_type = np.full(npolys + nstored, POLYTYPE_GROUND, dtype=np.uint8)
    poly_type[npolys:] = POLYTYPE_OFFMESH_CONNECTION

    return NavMeshData(
        tile_x=int(tile_x),
        tile_y=int(tile_y),
        layer=int(layer),
        user_id=0,
        bmin=bmin,
        bmax=bmax,
        walkable_height=float(F32(walkable_height)),
        walkable_radius=float(F32(walkable_radius)),
        walkable_climb=float(F32(walkable_climb)),
        bv_quant_factor=float(F32(1) / cs),
        max_link_count=max_link_count,
        verts=nav_verts,
        poly_verts=poly_verts,
        poly_neis=poly_neis,
        poly_flags=poly_flags,
        poly_vert_count=vert_count,
        poly_area=poly_area,
        poly_type=poly_type,
        detail_meshes=detail_meshes,
        detail_verts=np.ascontiguousarray(detail_verts, dtype=F32),
        detail_tris=detail_tris,
        bv_bmin=bv_bmin,
        bv_bmax=bv_bmax,
        bv_i=bv_i,
        off_mesh_pos=con.pos,
        off_mesh_rad=con.rad,
        off_mesh_poly=(npolys + np.arange(nstored)).astype(np.uint16),
        off_mesh_flags=con.con_flags,
        off_mesh_side=con.side,
        off_mesh_user_id=con.user_id,
    )


@dataclass
class _StoredLinks:
    """The off-mesh links one tile stores (Detour Y-up), and the links it reserves for them."""

    pos: np.ndarray  # float32 (k, 6)
    rad: np.ndarray  # float32 (k,)
    con_flags: np.ndarray  # uint8 (k,)
    side: np.ndarray  # uint8 (k,)
    user_id: np.ndarray  # uint32 (k,)
    area: np.ndarray  # uint8 (k,)
    flags: np.ndarray  # uint16 (k,)
    link_count: int


def classify_offmesh_point(pt: np.ndarray, bmin: np.ndarray, bmax: np.ndarray) -> np.ndarray:
    """classifyOffMeshPoint for (n, 3) Y-up points: 0xff inside the x/z bounds, else the side
    (0 x+, 1 x+z+, 2 z+, 3 x-z+, 4 x-, 5 x-z-, 6 z-, 7 x+z-) of the neighbour tile. uint8 (n,)."""
    outcode = (
        (pt[:, 0] >= bmax[0]).astype(np.int64) * 1
        | (pt[:, 2] >= bmax[2]).astype(np.int64) * 2
        | (pt[:, 0] < bmin[0]).astype(np.int64) * 4
        | (pt[:, 2] < bmin[2]).astype(np.int64) * 8
    )
    table = np.full(16, OFFMESH_INSIDE, dtype=np.uint8)
    for code, side in ((1, 0), (3, 1), (2, 2), (6, 3), (4, 4), (12, 5), (8, 6), (9, 7)):
        table[code] = side
    return table[outcode]


def _stored_mask(offmesh, verts, dmesh, bmin, bmax, ch, climb) -> np.ndarray:
    """bool per link: does a tile of these bounds (Y-up) and vertices store it (its start
    inside the x/z bounds and within ``climb`` of the tile's heights)?"""
    # Tight height bounds of the tile (detail vertices, else polygon vertices) +- climb.
    if dmesh is not None and np.asarray(dmesh.verts).shape[0]:
        heights = np.asarray(dmesh.verts, dtype=F32)[:, 2]
    else:
        heights = (bmin[1] + verts[:, 1].astype(F32) * ch).astype(F32)
    hmin = F32(heights.min()) - climb
    hmax = F32(heights.max()) + climb
    p0 = _y_up(offmesh.start)
    inside = classify_offmesh_point(p0, bmin, bmax) == OFFMESH_INSIDE
    return inside & ~((p0[:, 1] < hmin) | (p0[:, 1] > hmax))


def stored_links(pmesh: PolyMesh, dmesh, offmesh: OffMeshLinks, walkable_climb: float):
    """bool per link of ``offmesh``: would `create_nav_mesh_data` of this tile (``pmesh``,
    ``dmesh``, the agent's climb [Units: wu]) store it? (Detour stores a link in the tile its
    start lies in, within the climb of the tile's heights.)"""
    verts = np.asarray(pmesh.verts, dtype=np.uint16)
    if len(offmesh) == 0 or verts.shape[0] == 0:
        return np.zeros(len(offmesh), dtype=bool)
    bmin, bmax = _y_up(pmesh.bmin), _y_up(pmesh.bmax)
    return _stored_mask(offmesh, verts, dmesh, bmin, bmax, F32(pmesh.ch), F32(walkable_climb))


def _classify_offmesh(offmesh, verts, dmesh, bmin, bmax, ch, climb) -> _StoredLinks:
    """dtCreateNavMeshData's off-mesh classification: which links this tile stores."""
    if offmesh is None or len(offmesh) == 0:
        return _StoredLinks(
            np.zeros((0, 6), F32), np.zeros(0, F32), np.zeros(0, np.uint8),
            np.zeros(0, np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.uint8),
            np.zeros(0, np.uint16), 0,
        )  # fmt: skip
    stored = _stored_mask(offmesh, verts, dmesh, bmin, bmax, ch, climb)
    p0 = _y_up(offmesh.start)
    p1 = _y_up(offmesh.end)
    c1 = classify_offmesh_point(p1, bmin, bmax)
    link_count = int(stored.sum()) + int((c1 == OFFMESH_INSIDE).sum())
    return _StoredLinks(
        pos=np.ascontiguousarray(np.concatenate([p0, p1], axis=1)[stored], dtype=F32),
        rad=np.asarray(offmesh.radius, F32)[stored].copy(),
        con_flags=np.where(np.asarray(offmesh.bidirectional)[stored], OFFMESH_CON_BIDIR, 0).astype(
            np.uint8
        ),
        side=c1[stored].copy(),
        user_id=np.asarray(offmesh.user_id, np.uint32)[stored].copy(),
        area=(np.asarray(offmesh.area, np.uint8)[stored] & 0x3F).astype(np.uint8),
        flags=np.asarray(offmesh.flags, np.uint16)[stored].copy(),
        link_count=link_count,
    )


def _mirror_side(side: np.ndarray) -> np.ndarray:
    """Detour portal side (0 x+, 2 z+, 4 x-, 6 z-, odd = diagonals) after z -> -z."""
    return ((8 - side.astype(np.int64)) % 8).astype(side.dtype)


def mirror_z(tile: NavMeshData) -> NavMeshData:
    """The same tile mirrored in Detour's z (z -> -z), still a valid Detour tile.

    Used to write a navmesh in a game engine's Y-up frame (x, z, -y) of VoxNav's Z-up world
    (glTF's and Blender's OBJ convention) instead of the parity frame (x, z, y). A mirror
    reverses winding, so each polygon's vertices are reversed (edge k of the result is edge
    n-2-k of the input, its neighbour moves with it), portal sides swap z+ and z-, detail
    triangles are re-wound and re-indexed, and the BV tree is rebuilt: node x and y bounds
    are the input leaves' (unchanged by the mirror), z bounds come from the mirrored polygon
    and detail vertices, quantized as Detour does. Polygon indices do not change.
    tile_x/tile_y are kept: a tiled navmesh must renumber its tile rows itself.
    """
    npolys = tile.npolys
    n = tile.poly_vert_count.astype(np.int64)[:, None]
    k = np.arange(VERTS_PER_POLYGON)[None, :]
    used = k < n
    rows = np.arange(npolys)[:, None]
    # Off-mesh polygons keep (start, end): reversing them would turn a link around.
    ground = (tile.poly_type == POLYTYPE_GROUND)[:, None]
    src_vert = np.where(used, np.where(ground, n - 1 - k, k), 0)
    src_edge = np.where(used, (n - 2 - k) % np.maximum(n, 1), 0)
    poly_verts = np.where(used, tile.poly_verts[rows, src_vert], 0).astype(np.uint16)
    neis = tile.poly_neis[rows, src_edge]
    portal = (neis & EXT_LINK) != 0
    neis = np.where(portal, EXT_LINK | _mirror_side(neis & 0xFF), neis)
    poly_neis = np.where(used, neis, 0).astype(np.uint16)

    flip = np.array([1, 1, -1], dtype=F32)
    verts = (tile.verts * flip).astype(F32)
    detail_verts = (tile.detail_verts * flip).astype(F32)
    bmin = np.array([tile.bmin[0], tile.bmin[1], -tile.bmax[2]], dtype=F32)
    bmax = np.array([tile.bmax[0], tile.bmax[1], -tile.bmin[2]], dtype=F32)

    # Detail triangles: polygon-vertex ids follow the reversal, then (a, b, c) -> (a, c, b)
    # with the edge flags of ab, bc, ca moving to ca, bc, ab.
    nground = tile.detail_meshes.shape[0]
    tri_poly = np.repeat(np.arange(nground), tile.detail_meshes[:, 3].astype(np.int64))
    tri_rows = _ranges(tile.detail_meshes[:, 1].astype(np.int64), tile.detail_meshes[:, 3])
    tris = tile.detail_tris.copy()
    ids = tris[tri_rows, :3].astype(np.int64)
    nv = n[tri_poly, 0][:, None]
    ids = np.where(ids < nv, nv - 1 - ids, ids)
    flags = tris[tri_rows, 3].astype(np.int64)
    tris[tri_rows, 0] = ids[:, 0]
    tris[tri_rows, 1] = ids[:, 2]
    tris[tri_rows, 2] = ids[:, 1]
    tris[tri_rows, 3] = ((flags >> 4) & 3) | (flags & 0xC) | ((flags & 3) << 4)

    bv_bmin, bv_bmax, bv_i = tile.bv_bmin, tile.bv_bmax, tile.bv_i
    if bv_i.size:
        leaves = np.nonzero(bv_i >= 0)[0]
        leaves = leaves[:nground]  # Detour's unused last node is a zero "leaf"; skip it
        item_min = np.zeros((nground, 3), dtype=np.uint16)
        item_max = np.zeros((nground, 3), dtype=np.uint16)
        item_min[bv_i[leaves]] = tile.bv_bmin[leaves]
        item_max[bv_i[leaves]] = tile.bv_bmax[leaves]
        # z bounds of each polygon's vertices and detail-only vertices, mirrored.
        gused, gverts = used[:nground], poly_verts[:nground]
        pz = np.where(gused, verts[:, 2][gverts], np.inf)
        zmin, zmax = pz.min(axis=1), np.where(gused, verts[:, 2][gverts], -np.inf).max(axis=1)
        dcount = tile.detail_meshes[:, 2].astype(np.int64)
        if dcount.sum():
            dz = detail_verts[_ranges(tile.detail_meshes[:, 0].astype(np.int64), dcount), 2]
            owner = np.repeat(np.arange(nground), dcount)
            np.minimum.at(zmin, owner, dz)
            np.maximum.at(zmax, owner, dz)
        quant = F32(tile.bv_quant_factor)
        item_min[:, 2] = _quantize(zmin.astype(F32), bmin[2:3], quant)
        item_max[:, 2] = _quantize(zmax.astype(F32), bmin[2:3], quant)
        bv_bmin, bv_bmax, bv_i = bv_tree(item_min, item_max)

    off_pos = (tile.off_mesh_pos * np.tile(flip, 2)).astype(F32)
    inside = tile.off_mesh_side == OFFMESH_INSIDE
    off_side = np.where(inside, tile.off_mesh_side, _mirror_side(tile.off_mesh_side))
    return NavMeshData(
        tile_x=tile.tile_x,
        tile_y=tile.tile_y,
        layer=tile.layer,
        user_id=tile.user_id,
        bmin=bmin,
        bmax=bmax,
        walkable_height=tile.walkable_height,
        walkable_radius=tile.walkable_radius,
        walkable_climb=tile.walkable_climb,
        bv_quant_factor=tile.bv_quant_factor,
        max_link_count=tile.max_link_count,
        verts=verts,
        poly_verts=poly_verts,
        poly_neis=poly_neis,
        poly_flags=tile.poly_flags.copy(),
        poly_vert_count=tile.poly_vert_count.copy(),
        poly_area=tile.poly_area.copy(),
        poly_type=tile.poly_type.copy(),
        detail_meshes=tile.detail_meshes.copy(),
        detail_verts=detail_verts,
        detail_tris=tris,
        bv_bmin=bv_bmin,
        bv_bmax=bv_bmax,
        bv_i=bv_i,
        off_mesh_pos=off_pos,
        off_mesh_rad=tile.off_mesh_rad.copy(),
        off_mesh_poly=tile.off_mesh_poly.copy(),
        off_mesh_flags=tile.off_mesh_flags.copy(),
        off_mesh_side=off_side.astype(np.uint8),
        off_mesh_user_id=tile.off_mesh_user_id.copy(),
    )
