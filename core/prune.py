"""Island pruning: drop (or disable) the navmesh polygons no agent can reach from given points.

RecastDemo's prune tool floods the navmesh from a clicked polygon over polygon links and marks
every polygon the flood never reaches with the flag ``SAMPLE_POLYFLAGS_DISABLED``. Here the
flood runs over the polygon mesh's own links (`PolyMesh.polys`' neighbour half: a polygon id,
0xFFFF for none, 0x8000 | dir for a tile-border portal, which links to no polygon of this mesh)
one frontier at a time, from the polygons under or nearest to the "reachable from" points
(found with Detour's ``findNearestPoly``, `core.nav.query`). Then, by ``mode``:

- ``"remove"``: the unreached polygons are deleted: the polygon arrays are compacted, the
  neighbour links renumbered, vertices no kept polygon uses dropped, and the detail sub-meshes of
  the removed polygons dropped with them. Exports and queries see a smaller navmesh.
- ``"disable"``: every polygon stays; the unreached ones get area 0 (Recast's null area) and flag
  `DISABLED_FLAG` (RecastDemo's 0x10). Detour's .bin then gives them flag 0 (RecastDemo's rule,
  `core.nav.navdata.poly_area_and_flags`), so no query filter walks them.

`flood_with_links` also follows off-mesh links; `prune_tiled` prunes a tiled bake over the
multi-tile navmesh's links (across tile borders too).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from .context import BuildContext
from .errors import VoxNavError
from .limits import MAX_COORDINATE, within_reach, xyz_rows
from .polymesh import MESH_NULL_IDX, PolyMesh

if TYPE_CHECKING:
    from .detail import PolyMeshDetail
    from .tiles import TiledBake

#: What `prune_islands` does with the unreached polygons.
PRUNE_MODES = ("remove", "disable")
#: RecastDemo's SAMPLE_POLYFLAGS_DISABLED: the flag a disabled polygon gets.
DISABLED_FLAG = 0x10
#: A neighbour value with this bit is a tile-border portal (or none, 0xFFFF), not a polygon id.
_EXTERNAL_LINK = 0x8000
#: findNearestPoly's search box around each point, Z-up (x, y, z) half sizes (RecastDemo's
#: (2, 4, 2) in Y-up). [Units: wu]
DEFAULT_HALF_EXTENTS = (2.0, 2.0, 4.0)


@dataclass
class PruneReport:
    """What `prune_islands` did."""

    #: "remove" or "disable".
    mode: str
    #: Polygons reached from the points (kept as they were). [Limit: >= 0]
    polys_kept: int
    #: Polygons not reached (removed or disabled). [Limit: >= 0]
    polys_cut: int
    #: Area of the cut polygons on the ground plane (X/Y). [Units: wu^2]
    area_cut: float
    #: Per point, the polygon the flood started from (the input mesh's id; -1: none found).
    seed_polys: list[int] = field(default_factory=list)
    #: bool (npolys of the input mesh,) polygons the flood reached.
    reached: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: uint32 user ids of the off-mesh links attached to a removed polygon ("remove" mode):
    #: they go with it (kept, Detour attached them to whatever polygon was left within their
    #: radius: paths that did not exist before).
    links_cut: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))

    def summary(self) -> str:
        """One line for the user, e.g. "pruned 12 polygons (34.5 m^2 ...)"."""
        verb = "removed" if self.mode == "remove" else "disabled"
        return (
            f"island pruning {verb} {self.polys_cut} of {self.polys_kept + self.polys_cut} "
            f"polygons ({self.area_cut:.2f} square units) not reachable from the given points"
        )


def flood_polys(pmesh: PolyMesh, seeds) -> np.ndarray:
    """bool (npolys,): the polygons reachable from ``seeds`` (polygon ids, int) over polygon
    links. One NumPy round per frontier (breadth-first layers), no per-polygon Python loop."""
    npolys = pmesh.npolys
    nvp = int(pmesh.nvp)
    reached = np.zeros(npolys, dtype=bool)
    frontier = np.unique(np.asarray(seeds, dtype=np.int64).reshape(-1))
    frontier = frontier[(frontier >= 0) & (frontier < npolys)]
    neis = pmesh.polys[:, nvp : 2 * nvp].astype(np.int64)
    reached[frontier] = True
    while frontier.size:
        links = neis[frontier].reshape(-1)
        links = links[links < _EXTERNAL_LINK]  # drops none (0xFFFF) and portals
        links = links[links < npolys]
        links = np.unique(links[~reached[links]])
        reached[links] = True
        frontier = links
    return reached


def flood_with_links(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    seeds,
    offmesh_links,
    *,
    walkable_height: float,
    walkable_radius: float,
    walkable_climb: float,
) -> np.ndarray:
    """bool (npolys,): the polygons reachable from ``seeds`` over polygon links and the
    off-mesh links (`core.offmesh.OffMeshLinks`), each connected to the navmesh as Detour
    connects it (`core.nav.navmesh`: endpoint polygon within the link's radius, one-way links
    only from start to end). One NumPy round per frontier over Detour's link lists."""
    nav = _links_navmesh(
        pmesh, detail, offmesh_links, walkable_height, walkable_radius, walkable_climb
    )
    return _flood_with_links_nav(pmesh, seeds, nav)[0]


def _links_navmesh(pmesh, detail, offmesh_links, walkable_height, walkable_radius, walkable_climb):
    """The one-tile `core.nav.navmesh.NavMesh` of a solo mesh with its off-mesh links, which
    the flood walks (Detour's connections)."""
    from .nav.navdata import create_nav_mesh_data
    from .nav.navmesh import NavMesh

    data = create_nav_mesh_data(
        pmesh,
        detail,
        walkable_height=walkable_height,
        walkable_radius=walkable_radius,
        walkable_climb=walkable_climb,
        offmesh=offmesh_links,
    )
    return NavMesh.from_data(data)


def _flood_with_links_nav(pmesh: PolyMesh, seeds, nav) -> tuple[np.ndarray, np.ndarray]:
    """`flood_with_links` on its navmesh ``nav`` (ground polygons keep their ids; links come
    after them): (reached ground polygons (npolys,), the links attached to an unreached
    polygon: their user ids, `links_touching`)."""
    frontier = np.asarray(seeds, dtype=np.int64).reshape(-1)
    reached = _flood_navmesh(nav, frontier[(frontier >= 0) & (frontier < pmesh.npolys)])
    ground = np.ones(reached.shape[0], dtype=bool)  # connection polygons count as reached
    ground[: pmesh.npolys] = reached[: pmesh.npolys]
    return reached[: pmesh.npolys], links_touching(nav, ground)


def links_touching(nav, reached: np.ndarray) -> np.ndarray:
    """uint32 user ids of the off-mesh connections of the `core.nav.navmesh.NavMesh` ``nav``
    with a link to a polygon not ``reached`` (bool (poly_count,)): each connection polygon's
    links lead to the ground polygons its ends attach to."""
    from .nav.navdata import POLYTYPE_OFFMESH_CONNECTION

    connections = np.flatnonzero(np.asarray(nav.poly_type) == POLYTYPE_OFFMESH_CONNECTION)
    if not connections.size:
        return np.zeros(0, dtype=np.uint32)
    user = np.zeros(int(nav.poly_count), dtype=np.int64)
    for t, data in enumerate(nav.tiles):  # a connection polygon's user id, by tile
        if data.off_mesh_count:
            polys = nav.tile_poly_base[t] + np.asarray(data.off_mesh_poly, dtype=np.int64)
            user[polys] = np.asarray(data.off_mesh_user_id, dtype=np.int64)
    starts = nav.link_start[connections]
    counts = nav.link_start[connections + 1] - starts
    owner = np.repeat(connections, counts)
    targets = np.asarray(nav.link_ref, dtype=np.int64)[_ranges(starts, counts)]
    bad = owner[(targets >= 0) & ~reached[np.maximum(targets, 0)]]
    return np.unique(user[bad]).astype(np.uint32)


def _flood_navmesh(nav, seeds: np.ndarray) -> np.ndarray:
    """bool (poly_count,): the polygons of a `core.nav.navmesh.NavMesh` reached from the
    polygon refs ``seeds`` over its links (Detour's: inside and across tiles, off-mesh), one
    NumPy round per frontier."""
    reached = np.zeros(int(nav.link_start.shape[0] - 1), dtype=bool)
    frontier = np.unique(seeds)
    reached[frontier] = True
    link_ref = np.asarray(nav.link_ref, dtype=np.int64)
    while frontier.size:
        starts = nav.link_start[frontier]
        targets = link_ref[_ranges(starts, nav.link_start[frontier + 1] - starts)]
        targets = targets[targets >= 0]
        targets = np.unique(targets[~reached[targets]])
        reached[targets] = True
        frontier = targets
    return reached


def poly_ground_areas(pmesh: PolyMesh) -> np.ndarray:
    """float64 (npolys,) each polygon's area on the ground plane (X/Y). [Units: wu^2]"""
    nvp = int(pmesh.nvp)
    if pmesh.npolys == 0:
        return np.zeros(0, dtype=np.float64)
    world = pmesh.world_verts().astype(np.float64)
    ids = pmesh.polys[:, :nvp].astype(np.int64)
    used = ids != MESH_NULL_IDX
    counts = used.sum(axis=1)
    first = ids[:, :1]
    safe = np.where(used, ids, first)  # unused slots repeat vertex 0: zero-area terms
    nxt_slot = (np.arange(nvp)[None, :] + 1) % np.maximum(counts[:, None], 1)
    nxt = np.take_along_axis(safe, nxt_slot, axis=1)
    nxt = np.where(used, nxt, first)
    x0, y0 = world[safe, 0], world[safe, 1]
    x1, y1 = world[nxt, 0], world[nxt, 1]
    return np.abs((x0 * y1 - x1 * y0).sum(axis=1)) * 0.5


def find_seed_polys(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    points,
    *,
    walkable_height: float,
    walkable_radius: float,
    walkable_climb: float,
    half_extents=DEFAULT_HALF_EXTENTS,
) -> list[int]:
    """Per point (Z-up world, [Units: wu]), the polygon Detour's findNearestPoly picks in the
    box point +- half_extents, or -1 when no polygon is in it."""
    from .nav.navdata import create_nav_mesh_data
    from .nav.navmesh import NavMesh
    from .nav.query import NavMeshQuery

    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    if pts.shape[0] == 0 or pmesh.npolys == 0:
        return [-1] * pts.shape[0]
    data = create_nav_mesh_data(
        pmesh,
        detail,
        walkable_height=walkable_height,
        walkable_radius=walkable_radius,
        walkable_climb=walkable_climb,
    )
    query = NavMeshQuery(NavMesh.from_data(data))
    seeds = []
    for point in pts:  # a handful of user-placed points
        nearest = query.find_nearest_poly(point, half_extents)
        seeds.append(int(nearest.ref) if nearest.ref >= 0 else -1)
    return seeds


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """int64: concatenated arange(start, start + count) for each pair."""
    counts = counts.astype(np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts.astype(np.int64), counts) + np.arange(total) - offsets


def remove_polys(
    pmesh: PolyMesh, detail: PolyMeshDetail | None, keep: np.ndarray
) -> tuple[PolyMesh, PolyMeshDetail | None]:
    """Copies of the meshes holding only the polygons where ``keep`` (bool (npolys,)) is set:
    polygon rows compacted (order kept), neighbour ids renumbered (a link to a dropped polygon
    becomes 0xFFFF; portals stay), unused vertices dropped (order kept), detail sub-meshes of
    the kept polygons only, with their vertex and triangle bases recomputed."""
    keep = np.asarray(keep, dtype=bool)
    nvp = int(pmesh.nvp)
    if keep.shape != (pmesh.npolys,):
        raise VoxNavError(f"keep must have shape ({pmesh.npolys},), got {keep.shape}")
    new_poly = np.full(pmesh.npolys, MESH_NULL_IDX, dtype=np.int64)
    new_poly[keep] = np.arange(int(keep.sum()))
    polys = pmesh.polys[keep].astype(np.int64)
    vids = polys[:, :nvp]
    used_v = np.zeros(pmesh.nverts, dtype=bool)
    used_v[vids[vids != MESH_NULL_IDX]] = True
    new_vert = np.full(pmesh.nverts, MESH_NULL_IDX, dtype=np.int64)
    new_vert[used_v] = np.arange(int(used_v.sum()))
    has_vert = vids != MESH_NULL_IDX
    polys[:, :nvp] = np.where(has_vert, new_vert[np.where(has_vert, vids, 0)], MESH_NULL_IDX)
    neis = polys[:, nvp:]
    internal = (neis < _EXTERNAL_LINK) & (neis < pmesh.npolys)
    polys[:, nvp:] = np.where(internal, new_poly[np.where(internal, neis, 0)], neis)
    out = replace(
        pmesh,
        verts=pmesh.verts[used_v].copy(),
        polys=polys.astype(np.uint16),
        regs=pmesh.regs[keep].copy(),
        flags=pmesh.flags[keep].copy(),
        areas=pmesh.areas[keep].copy(),
    )
    if detail is None:
        return out, None
    from .detail import PolyMeshDetail

    meshes = detail.meshes[keep].astype(np.int64)
    vrows = _ranges(meshes[:, 0], meshes[:, 1])
    trows = _ranges(meshes[:, 2], meshes[:, 3])
    new_meshes = np.zeros_like(meshes)
    new_meshes[:, 1] = meshes[:, 1]
    new_meshes[:, 3] = meshes[:, 3]
    new_meshes[:, 0] = np.cumsum(meshes[:, 1]) - meshes[:, 1]
    new_meshes[:, 2] = np.cumsum(meshes[:, 3]) - meshes[:, 3]
    out_detail = PolyMeshDetail(
        meshes=new_meshes.astype(detail.meshes.dtype),
        verts=detail.verts[vrows].copy(),
        tris=detail.tris[trows].copy(),
    )
    return out, out_detail


def checked_points(points, mode: str = "remove") -> np.ndarray:
    """The reachable-from points as float64 (k, 3) from one (x, y, z), k of them or none;
    `VoxNavError` for a bad mode, shape or point (a (3, 4) array was reshaped into four
    scrambled points, text failed after every stage had run). [Units: wu]"""
    if mode not in PRUNE_MODES:
        raise VoxNavError(f"unknown prune mode {mode!r}: use one of {', '.join(PRUNE_MODES)}")
    pts = xyz_rows(points, "reachable-from points")
    if not within_reach(pts).all():
        raise VoxNavError(
            f"reachable-from points must be finite numbers (x, y, z) within +-{MAX_COORDINATE:g}"
        )
    return pts


#: Reachable-from points off the navmesh warned about one by one; the rest in one line.
OFF_NAVMESH_NAMED = 5


def _warn_off_navmesh(ctx: BuildContext, points, half_extents) -> None:
    """Warn of the reachable-from ``points`` with no polygon near them: the first
    `OFF_NAVMESH_NAMED` each, the others counted (20,000 points gave 16,168 lines)."""
    ext = ", ".join(f"{v:g}" for v in np.asarray(half_extents, dtype=float))
    for point in points[:OFF_NAVMESH_NAMED]:
        ctx.warn(
            "reachable-from point ({}) has no navmesh polygon within ({}) of it: it is ignored; "
            "move it onto a walkable floor".format(", ".join(f"{v:g}" for v in point), ext)
        )
    if len(points) > OFF_NAVMESH_NAMED:
        ctx.warn(
            f"{len(points) - OFF_NAVMESH_NAMED:,} more reachable-from points have no navmesh "
            f"polygon within ({ext}) of them: they are ignored too"
        )


def prune_islands(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    points,
    *,
    mode: str = "remove",
    walkable_height: float = 2.0,
    walkable_radius: float = 0.6,
    walkable_climb: float = 0.9,
    half_extents=DEFAULT_HALF_EXTENTS,
    ctx: BuildContext | None = None,
    offmesh_links=None,
) -> tuple[PolyMesh, PolyMeshDetail | None, PruneReport]:
    """Remove or disable the polygons not reachable from ``points`` over polygon links.

    points: float (k, 3) Z-up world positions [Units: wu] (k >= 0); each finds the polygon
        under or nearest to it within point +- half_extents (Z-up half sizes) [Units: wu].
    mode: "remove" or "disable" (see the module docstring).
    walkable_*: the agent (Detour stores it; findNearestPoly uses the climb to decide that a
        point is on a polygon). [Units: wu]
    ctx: warnings go here: a point with no polygon near it is named and skipped. With no
        points, or no point on the navmesh, nothing is pruned (the meshes come back as they
        were, and the report cuts 0).
    offmesh_links: `core.offmesh.OffMeshLinks` the flood also follows (Detour's connection
        rules, `flood_with_links`), or None.
    Returns (polygon mesh, detail mesh, `PruneReport`); the inputs are never modified.
    """
    pts = checked_points(points, mode)
    ctx = ctx if ctx is not None else BuildContext()
    npolys = pmesh.npolys
    seeds = find_seed_polys(
        pmesh,
        detail,
        pts,
        walkable_height=walkable_height,
        walkable_radius=walkable_radius,
        walkable_climb=walkable_climb,
        half_extents=half_extents,
    )
    _warn_off_navmesh(
        ctx, [point for point, seed in zip(pts, seeds, strict=True) if seed < 0], half_extents
    )
    found = [s for s in seeds if s >= 0]
    if not found:
        if pts.shape[0]:
            ctx.warn("no reachable-from point is on the navmesh: nothing was pruned")
        keep_all = np.ones(npolys, dtype=bool)
        report = PruneReport(mode, npolys, 0, 0.0, seeds, keep_all)
        return pmesh, detail, report
    links_cut = np.zeros(0, dtype=np.uint32)
    if offmesh_links is not None and len(offmesh_links):
        nav = _links_navmesh(
            pmesh, detail, offmesh_links, walkable_height, walkable_radius, walkable_climb
        )
        reached, links_cut = _flood_with_links_nav(pmesh, found, nav)
    else:
        reached = flood_polys(pmesh, found)
    cut = ~reached
    area_cut = float(poly_ground_areas(pmesh)[cut].sum())
    report = PruneReport(
        mode, int(reached.sum()), int(cut.sum()), area_cut, seeds, reached,
        links_cut if mode == "remove" else np.zeros(0, dtype=np.uint32),
    )  # fmt: skip
    if not cut.any():
        return pmesh, detail, report
    if mode == "remove":
        out, out_detail = remove_polys(pmesh, detail, reached)
        return out, out_detail, report
    areas = pmesh.areas.copy()
    flags = pmesh.flags.copy()
    areas[cut] = 0
    flags[cut] = flags[cut] | DISABLED_FLAG
    return replace(pmesh, areas=areas, flags=flags), detail, report


def prune_tiled(
    bake: TiledBake,
    points,
    *,
    mode: str = "remove",
    half_extents=DEFAULT_HALF_EXTENTS,
    ctx: BuildContext | None = None,
) -> PruneReport:
    """Island pruning of a tiled bake (`core.tiles.TiledBake`), in place: the flood runs over
    the multi-tile navmesh's links (`core.nav.navmesh.NavMesh`: links inside tiles, across tile
    borders as ``dtNavMesh::addTile`` connects them, and the bake's off-mesh links), so an
    island is cut only when no tile reaches it.

    Each tile's polygon and detail meshes then lose (``"remove"``) or disable their unreached
    polygons exactly as `prune_islands` does to a solo mesh, and its Detour data is made again;
    a tile left with no polygon is dropped from ``bake.tiles``. points, half_extents, ctx: as
    `prune_islands` (Z-up world points; a point with no polygon near it is warned about and
    skipped; with no point on the navmesh nothing is pruned). Returns the report over all
    tiles: ``reached`` and ``seed_polys`` index the polygons in tile order (every tile's
    polygons in ``bake.tiles`` order, before pruning).
    """
    from .nav.navdata import create_nav_mesh_data
    from .nav.query import NavMeshQuery

    pts = checked_points(points, mode)
    ctx = ctx if ctx is not None else BuildContext()
    tiles = [t for t in bake.tiles if t.navdata is not None and t.polymesh is not None]
    counts = np.array([t.npolys for t in tiles], dtype=np.int64)
    total = int(counts.sum())
    # Row of each tile's first ground polygon in the tile-order numbering of the report.
    first = np.concatenate([[0], np.cumsum(counts)])
    nav = bake.navmesh()  # tiles added in `tiles` order: navmesh tile k is tiles[k]
    query = NavMeshQuery(nav)
    seed_refs: list[int] = []
    seeds: list[int] = []
    off = []
    for point in pts:  # a handful of user-placed points
        ref = int(query.find_nearest_poly(point.astype(np.float32), half_extents).ref)
        seed_refs.append(ref)
        if ref < 0:
            seeds.append(-1)
            off.append(point)
        else:
            seeds.append(int(first[nav.poly_tile[ref]] + nav.poly_index[ref]))
    _warn_off_navmesh(ctx, off, half_extents)
    found = [r for r in seed_refs if r >= 0]
    if not found:
        if pts.shape[0]:
            ctx.warn("no reachable-from point is on the navmesh: nothing was pruned")
        return PruneReport(mode, total, 0, 0.0, seeds, np.ones(total, dtype=bool))
    reached_refs = _flood_navmesh(nav, np.asarray(found, dtype=np.int64))
    # Ground polygons only (a tile's off-mesh polygons follow its ground ones), tile order.
    ground = nav.poly_index < counts[nav.poly_tile]
    reached = np.zeros(total, dtype=bool)
    rows_of = first[nav.poly_tile[ground]] + nav.poly_index[ground]
    reached[rows_of] = reached_refs[ground]
    areas = np.concatenate(
        [np.zeros(0)] + [poly_ground_areas(t.polymesh) for t in tiles if t.polymesh is not None]
    )
    cut = ~reached
    report = PruneReport(
        mode, int(reached.sum()), int(cut.sum()), float(areas[cut].sum()), seeds,
        reached,
    )  # fmt: skip
    if not cut.any():
        return report
    if mode == "remove":  # the links attached to removed polygons go with them
        report.links_cut = links_touching(nav, reached_refs | ~ground)
        _drop_links(bake, report.links_cut)
    index_of = {id(tile): k for k, tile in enumerate(tiles)}
    kept_tiles = []
    for tile in bake.tiles:  # build order kept: it is the navmesh's tile and link order
        k = index_of.get(id(tile))
        if k is None:  # no Detour data: nothing of it was in the flood
            kept_tiles.append(tile)
            continue
        keep = reached[first[k] : first[k + 1]]
        if not keep.all():
            if mode == "remove" and not keep.any():
                continue  # the whole tile was an island: no tile data left
            _prune_tile(tile, keep, mode, create_nav_mesh_data)
        kept_tiles.append(tile)
    bake.tiles = kept_tiles
    return report


def _drop_links(bake: TiledBake, user_ids: np.ndarray) -> None:
    """Remove the links of ``user_ids`` (as `TiledBake.navmesh_links` numbers them) from the
    bake's hand-made links and its tiles' automatic ones."""
    if not user_ids.size:
        return
    hand = bake.offmesh_links
    if hand is not None and len(hand):
        bake.offmesh_links = hand.subset(~np.isin(hand.user_id, user_ids))
    next_id = int(hand.user_id.max()) + 1 if hand is not None and len(hand) else 0
    for tile in bake.tiles:  # automatic links: numbered on from the hand-made ones
        found = tile.auto_links
        if found is None or not len(found):
            continue
        ids = np.arange(len(found)) + next_id
        next_id += len(found)
        tile.auto_links = found.subset(~np.isin(ids, user_ids))


def _prune_tile(tile, keep: np.ndarray, mode: str, create_nav_mesh_data) -> None:
    """Remove or disable a tile's polygons where ``keep`` is False, then make its Detour data
    again with the agent it had."""
    from .nav.navdata import NavMeshData

    pmesh, detail, old = tile.polymesh, tile.detail, tile.navdata
    assert pmesh is not None and isinstance(old, NavMeshData)
    if mode == "remove":
        pmesh, detail = remove_polys(pmesh, detail, keep)
    else:
        flags = pmesh.flags.copy()
        areas = pmesh.areas.copy()
        areas[~keep] = 0
        flags[~keep] = flags[~keep] | DISABLED_FLAG
        pmesh = replace(pmesh, areas=areas, flags=flags)
    tile.polymesh, tile.detail = pmesh, detail
    tile.navdata = create_nav_mesh_data(
        pmesh,
        detail,
        walkable_height=float(old.walkable_height),
        walkable_radius=float(old.walkable_radius),
        walkable_climb=float(old.walkable_climb),
        tile_x=tile.tx,
        tile_y=tile.ty,
        build_bv_tree=old.bv_i.shape[0] > 0,
    )
