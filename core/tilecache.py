"""DetourTileCache's idea on VoxNav's tiles: obstacles rebuild only the tiles they touch.

`TileCache.build` bakes a world tiled (`core.tiles`) once and keeps, per tile, its compact
heightfield right after erosion and the bake's own area volumes (``TileResult.compact``): the
cached intermediate data. DetourTileCache caches compressed heightfield layers instead; a
compact heightfield is what VoxNav's stages read, so a rebuild starts from it, never from the
triangles.

Obstacles (`core.obstacles`) are added, moved, replaced or removed by id; each change marks
**dirty** the tiles whose heightfield (tile + border) its X/Y bounds overlap, before and after
the change. `TileCache.update` rebuilds each dirty tile with geometry: a copy of its cached
compact heightfield, every obstacle overlapping the tile painted in id order (a quadtree range
query), then distance field, regions, contours, polygons, detail and Detour data
(`core.tiles.bake_tile_from_compact`), and finally swaps the tiles in the multi-tile `NavMesh`
(``removeTile`` + ``addTile``: the neighbours relink). The result equals a full tiled bake with
the same obstacles as area volumes (`ObstacleSet.volumes`), tile for tile.

Dirty test: Recast's markers turn world positions into cells by truncation toward zero, so a
shape ending less than one cell before a heightfield's min corner still marks its first column;
the overlap test therefore widens the obstacle's bounds by one cell on each side (a tile rebuilt
for nothing is identical to the old one, a tile missed would be wrong).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from .compact import CompactHeightfield
from .config import NavConfig
from .errors import VoxNavError
from .nav.navdata import NavMeshData
from .nav.navmesh import NavMesh
from .obstacles import Obstacle, ObstacleSet, checked
from .offmesh import OffMeshLinks
from .tiles import (
    TileGrid,
    TileResult,
    bake_tile_from_compact,
    iter_tiles,
    plan_tiles,
    tile_navdata,
)

F32 = np.float32


@dataclass
class UpdateReport:
    """What one `TileCache.update` did."""

    #: (tx, ty) of the tiles rebuilt, in build order (row by row).
    rebuilt: list[tuple[int, int]] = field(default_factory=list)
    #: Those of ``rebuilt`` whose marked areas equal the obstacle-free bake's or the tile's
    #: current ones: their result is that bake's (or the current) tile, no stage re-runs.
    reused: list[tuple[int, int]] = field(default_factory=list)
    #: Wall time of the rebuilds and of the relink. [Units: s]
    rebuild_seconds: float = 0.0
    relink_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        return self.rebuild_seconds + self.relink_seconds


class TileCache:
    """A tiled navmesh with temporary obstacles. Build with `TileCache.build`."""

    def __init__(
        self,
        config: NavConfig,
        grid: TileGrid,
        compact: dict[tuple[int, int], CompactHeightfield],
        tiles: dict[tuple[int, int], TileResult],
        navmesh: NavMesh,
        offmesh_links: OffMeshLinks | None = None,
        auto_links: OffMeshLinks | None = None,
    ):
        self.config = config
        #: Hand-made off-mesh links (Z-up): each tile's Detour data carries the links starting
        #: in it (`core.tiles.tile_navdata`), after every rebuild too. None: no links.
        self.offmesh_links = offmesh_links
        #: The automatic links the bake found (``config.auto_links``; user ids after the
        #: hand-made ones'), or None. Rebuilds start from the compact heightfield, without the
        #: solid one finding links needs, so these are kept: `links` leaves out those an
        #: obstacle blocks (`blocked_links`) and `update` relinks the tiles they start in.
        self.auto_links = auto_links
        self._auto_active = np.ones(0 if auto_links is None else len(auto_links), dtype=bool)
        self.grid = grid
        #: The cached compact heightfields, one per tile with geometry (never modified).
        self.compact = compact
        #: The current tile results, one per tile with polygons.
        self.tiles = tiles
        self.navmesh = navmesh
        lo_x, lo_y, hi_x, hi_y = self._tile_rects()
        pad = float(grid.cs)
        self.obstacles = ObstacleSet(
            bounds=(lo_x.min() - pad, lo_y.min() - pad, hi_x.max() + pad, hi_y.max() + pad)
        )
        self._dirty: set[tuple[int, int]] = set()
        #: Tiles rebuilt since the cache was built (counts every `update`).
        self.rebuild_count = 0
        #: The world's warnings of the bake that built the cache (`core.tiles.check_world`:
        #: float32 steps far from the origin, say); a loaded cache has none.
        self.warnings: list[str] = []
        #: The obstacle-free result of every tile with geometry (None: no polygons), and the
        #: marked area array behind each current tile that has obstacles: the stages are a
        #: pure function of the areas, so equal areas give the same tile without re-running.
        self._clean: dict[tuple[int, int], TileResult | None] = {
            key: tiles.get(key) for key in compact
        }
        self._marked: dict[tuple[int, int], np.ndarray] = {}
        #: False re-runs the stages for every dirty tile (benchmarks compare both).
        self.reuse_equal_areas = True

    def links(self) -> OffMeshLinks | None:
        """The off-mesh links in the tiles' Detour data now: the hand-made ones, then the
        automatic ones no obstacle blocks (None: no link at all)."""
        auto = self.auto_links
        if auto is None or not len(auto):
            return self.offmesh_links
        active = auto.subset(self._auto_active)
        if self.offmesh_links is None:
            return active
        return self.offmesh_links.concatenate(active)

    #: How near a tile border (a fraction of the tile's width) a link's start counts as lying
    #: on both tiles: Detour keeps a link in the tile whose float32 bounds (computed from the
    #: tile's border-padded grid) hold its start, and those bounds miss the exact multiple of
    #: the tile width by a few float32 steps.
    BORDER_SHARE = 1e-4

    def _tiles_holding(self, points: np.ndarray) -> set[tuple[int, int]]:
        """The (tx, ty) of the tiles that may keep each Z-up point in plan: its tile, and the
        neighbour across a border it lies within `BORDER_SHARE` of (the tile's Detour data
        is made again for every one of them, which keeps the links whose start it holds)."""
        g = self.grid
        size = float(g.tile_world_size)
        out: set[tuple[int, int]] = set()
        if not points.shape[0]:
            return out
        at = (points[:, :2].astype(np.float64) - np.asarray(g.bmin[:2], np.float64)) / size
        lows = np.floor(at - self.BORDER_SHARE).astype(np.int64).tolist()
        highs = np.floor(at + self.BORDER_SHARE).astype(np.int64).tolist()
        for lo, hi in zip(lows, highs, strict=True):
            for tx in range(lo[0], hi[0] + 1):
                for ty in range(lo[1], hi[1] + 1):
                    out.add((tx, ty))
        return out

    @classmethod
    def build(
        cls,
        verts,
        tris,
        config: NavConfig | None = None,
        tile_size: int | None = None,
        *,
        volumes: tuple = (),
        executor: cf.Executor | None = None,
        workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        offmesh_links: OffMeshLinks | None = None,
    ) -> TileCache:
        """Bake tiled (see `core.tiles.bake_tiled`; same arguments) and keep every tile's
        compact heightfield for rebuilds. verts float32 (n, 3) Z-up [Units: wu].
        ``progress(done, total)`` after each tile with geometry (total: the tiles that may
        meet a triangle, `TilePlan.tiles_to_bake`)."""
        steps = cls.build_steps(
            verts, tris, config, tile_size, volumes=volumes, executor=executor, workers=workers,
            offmesh_links=offmesh_links,
        )  # fmt: skip
        while True:
            try:
                done, total = next(steps)
            except StopIteration as stop:
                return cast(TileCache, stop.value)
            if progress is not None:
                progress(done, total)

    @classmethod
    def build_steps(
        cls,
        verts,
        tris,
        config: NavConfig | None = None,
        tile_size: int | None = None,
        *,
        volumes: tuple = (),
        executor: cf.Executor | None = None,
        workers: int | None = None,
        offmesh_links: OffMeshLinks | None = None,
    ) -> Generator[tuple[int, int], None, TileCache]:
        """`build` one tile at a time: a generator yielding (done, total) after each tile with
        geometry and returning the cache (``StopIteration.value``). A caller that stops early
        (``close()``) keeps nothing; an interactive caller runs other work between steps."""
        plan = plan_tiles(
            verts, tris, config, tile_size, volumes=volumes, executor=executor, workers=workers
        )
        compact: dict[tuple[int, int], CompactHeightfield] = {}
        tiles: dict[tuple[int, int], TileResult] = {}
        total = len(plan.tiles_to_bake())
        for done, result in enumerate(
            iter_tiles(plan, executor=executor, workers=workers, keep_compact=True), 1
        ):
            key = (result.tx, result.ty)
            if result.compact is not None:
                compact[key] = result.compact
                result.compact = None
            if result.has_data:
                tiles[key] = result
            yield done, total
        from .tiles import TiledBake, check_link_landings, drop_links_detour_leaves_out

        bake = TiledBake(plan.config, plan.grid, list(tiles.values()))
        bake.offmesh_links = offmesh_links
        auto = None
        left_out = ""
        if plan.config.auto_links:
            check_link_landings(bake)
            left_out = drop_links_detour_leaves_out(bake)
            every = bake.navmesh_links()
            n_hand = 0 if offmesh_links is None else len(offmesh_links)
            if every is not None and len(every) > n_hand:
                auto = every.subset(np.arange(n_hand, len(every)))
            for result in tiles.values():
                result.auto_links = None  # the cache holds them (`links`)
            bake.offmesh_links = every
        cache = cls(plan.config, plan.grid, compact, tiles, bake.navmesh(), offmesh_links, auto)
        cache.warnings = list(plan.warnings) + ([left_out] if left_out else [])
        return cache

    def save(self, path, *, key: str = ""):
        """Write this cache to one ``.npz`` (see `core.tilecache_io.save`); returns the path."""
        from .tilecache_io import save

        return save(self, path, key=key)

    @classmethod
    def load(cls, path, *, key: str | None = None, obstacles: bool = True) -> TileCache:
        """A cache saved by `save` (see `core.tilecache_io.load`: ``key`` the expected bake
        key, a stale or damaged file is a `VoxNavError` saying to rebake)."""
        from .tilecache_io import load

        return load(path, key=key, obstacles=obstacles)

    # -- tiles ----------------------------------------------------------------------------------

    def _tile_rects(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """float32 heightfield rectangles (tile + border) of every tile column and row, as
        `TileGrid.build_bounds` computes them: lo_x, lo_y (per tx, per ty), hi_x, hi_y."""
        g = self.grid
        tcs = g.tile_world_size
        pad = F32(F32(g.border_size) * g.cs)
        tx = np.arange(g.tiles_w, dtype=F32)
        ty = np.arange(g.tiles_h, dtype=F32)
        lo_x = (g.bmin[0] + tx * tcs).astype(F32) - pad
        hi_x = (g.bmin[0] + (tx + F32(1)) * tcs).astype(F32) + pad
        lo_y = (g.bmin[1] + ty * tcs).astype(F32) - pad
        hi_y = (g.bmin[1] + (ty + F32(1)) * tcs).astype(F32) + pad
        return lo_x, lo_y, hi_x, hi_y

    def tiles_touched(self, box_xy) -> list[tuple[int, int]]:
        """(tx, ty) of every tile of the grid whose heightfield (tile + border) an X/Y box
        (xmin, ymin, xmax, ymax) [Units: wu], widened by one cell, overlaps; row by row."""
        try:
            b = np.asarray(box_xy, dtype=np.float64)
        except (TypeError, ValueError):
            b = np.zeros(0)
        if b.shape != (4,) or not np.isfinite(b).all():  # NaN touched no tile, silently
            raise VoxNavError(
                f"a box is four finite numbers (xmin, ymin, xmax, ymax), got {box_xy!r}"
            )
        pad = float(self.grid.cs)
        lo_x, lo_y, hi_x, hi_y = (r.astype(np.float64) for r in self._tile_rects())
        xs = np.nonzero((lo_x <= b[2] + pad) & (hi_x >= b[0] - pad))[0]
        ys = np.nonzero((lo_y <= b[3] + pad) & (hi_y >= b[1] - pad))[0]
        return [(int(x), int(y)) for y in ys for x in xs]

    def _check_inside(self, obstacle: Obstacle) -> None:
        obstacle = checked(obstacle)  # its fields as plain numbers
        if self.tiles_touched(obstacle.box_xy()):
            return
        g = self.grid
        lo_x, lo_y, hi_x, hi_y = self._tile_rects()
        x0, y0, x1, y1 = obstacle.box_xy()
        raise VoxNavError(
            f"the {obstacle.kind} obstacle at x {x0:g}..{x1:g}, y {y0:g}..{y1:g} is outside every "
            f"tile: the {g.tiles_w} x {g.tiles_h} tiles cover x {lo_x.min():g}..{hi_x.max():g}, "
            f"y {lo_y.min():g}..{hi_y.max():g}; place it over the baked world"
        )

    @property
    def dirty(self) -> list[tuple[int, int]]:
        """Tiles waiting for `update`, row by row."""
        return sorted(self._dirty, key=lambda k: (k[1], k[0]))

    def _mark(self, boxes: np.ndarray) -> None:
        for box_xy in boxes:
            self._dirty.update(self.tiles_touched(box_xy))

    # -- obstacles ------------------------------------------------------------------------------

    def add(self, obstacle: Obstacle) -> int:
        """Add an obstacle (checked; outside every tile is a `VoxNavError`); returns its id.
        Its tiles are dirty until `update`."""
        self._check_inside(obstacle)
        obstacle_id = self.obstacles.add(obstacle)
        self._mark(self.obstacles.take_changes())
        return obstacle_id

    def remove(self, obstacle_id: int) -> Obstacle:
        """Remove an obstacle by id (unknown: `VoxNavError`); returns its shape."""
        shape = self.obstacles.remove(obstacle_id)
        self._mark(self.obstacles.take_changes())
        return shape

    def replace(self, obstacle_id: int, obstacle: Obstacle) -> None:
        """Give an obstacle a new shape or place, keeping its id."""
        self.obstacles.get(obstacle_id, "replace")
        self._check_inside(obstacle)
        self.obstacles.replace(obstacle_id, obstacle)
        self._mark(self.obstacles.take_changes())

    def move(self, obstacle_id: int, position) -> None:
        """Move an obstacle's position (see `Obstacle.position`). [Units: wu]"""
        self.replace(obstacle_id, self.obstacles.get(obstacle_id, "move").moved_to(position))

    def overlay(self) -> tuple[np.ndarray, ...]:
        """The current navigation overlay (see `tile_overlay`), tiles in build order."""
        keys = sorted(self.tiles, key=lambda k: (k[1], k[0]))
        return tile_overlay([self.tiles[k] for k in keys])

    # -- rebuilding -----------------------------------------------------------------------------

    def rebuild_tile(self, tx: int, ty: int) -> TileResult | None:
        """The tile rebuilt from its cache with the obstacles overlapping it, or None when the
        tile has no geometry. Changes nothing here (see `update`). A tile outside the grid is
        a `VoxNavError`."""
        g = self.grid
        for value in (tx, ty):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise VoxNavError(f"a tile is two whole numbers (tx, ty), got ({tx!r}, {ty!r})")
        if not (0 <= tx < g.tiles_w and 0 <= ty < g.tiles_h):
            raise VoxNavError(
                f"tile ({tx}, {ty}) is outside the {g.tiles_w} x {g.tiles_h} tile grid"
            )
        tx, ty = int(tx), int(ty)
        chf = self.compact.get((tx, ty))
        if chf is None:
            return None
        return bake_tile_from_compact(
            tx, ty, _with_area(chf, self.marked_area(tx, ty)), self.config
        )

    def marked_area(self, tx: int, ty: int) -> np.ndarray:
        """uint8 (n,) the area of every span of a tile's cached compact heightfield with the
        obstacles overlapping the tile painted, in id order (the cached array itself when no
        obstacle touches the tile). The tile must have geometry."""
        chf = self.compact[(tx, ty)]
        lo_x, lo_y, hi_x, hi_y = self._tile_rects()
        pad = float(self.grid.cs)
        rect = (lo_x[tx] - pad, lo_y[ty] - pad, hi_x[tx] + pad, hi_y[ty] + pad)
        area = chf.area
        for volume in self.obstacles.volumes(self.obstacles.touching(rect)):
            area = volume.apply(_with_area(chf, area))
        return area

    def _fresh_tile(
        self, key: tuple[int, int]
    ) -> tuple[TileResult | None, np.ndarray | None, bool]:
        """(result, marked areas or None when obstacle-free, reused?) of a dirty tile."""
        area = self.marked_area(*key)
        base = self.compact[key].area
        if self.reuse_equal_areas and (area is base or np.array_equal(area, base)):
            return self._clean[key], None, True
        current = self._marked.get(key)
        if self.reuse_equal_areas and current is not None and np.array_equal(area, current):
            return self.tiles.get(key), area, True
        chf = _with_area(self.compact[key], area)
        return bake_tile_from_compact(key[0], key[1], chf, self.config), area, False

    def _links_now(self) -> tuple[np.ndarray, set[tuple[int, int]]]:
        """Which automatic links the obstacles leave unblocked now (bool mask), and the tiles
        holding the start of a link that changed (their Detour data must be made again)."""
        auto = self.auto_links
        if auto is None or not len(auto):
            return self._auto_active, set()
        from .jumplinks import link_settings

        settings = link_settings(self.config, self.config.derived())
        # Only blocking obstacles (area 0) stand in a link's way; others repaint the floor.
        shapes = [o for o in map(self.obstacles.get, self.obstacles.ids()) if int(o.area) == 0]
        active = ~blocked_links(auto, shapes, settings["agent_height"], settings["agent_radius"])
        flipped = np.flatnonzero(active != self._auto_active)
        return active, self._tiles_holding(auto.start[flipped])

    def update(self) -> UpdateReport:
        """Rebuild the dirty tiles and relink them into a new `navmesh` (a copy of the old one
        with those tiles replaced; the old object is not modified, so queries made on it stay
        valid; make a new query object for the new one; when no tile's result changed, the
        navmesh stays the same object). All tiles are rebuilt before the
        navmesh changes: if one fails, the error propagates, the navmesh and the tiles stay as
        they were and the tiles stay dirty."""
        report = UpdateReport()
        start = time.perf_counter()
        active, relink = self._links_now()
        fresh: dict[tuple[int, int], TileResult | None] = {}
        marked: dict[tuple[int, int], np.ndarray | None] = {}
        for key in self.dirty:
            if key in self.compact:
                fresh[key], marked[key], reused = self._fresh_tile(key)
                if reused:
                    report.reused.append(key)
        report.rebuild_seconds = time.perf_counter() - start
        start = time.perf_counter()
        self._auto_active = active  # every rebuild went through
        # A tile whose result is its current one (equal areas) needs no relink, unless the
        # automatic links starting in it changed.
        changed = {k: r for k, r in fresh.items() if r is not self.tiles.get(k)}
        for key in relink:
            if key not in changed and key in self.tiles:
                changed[key] = self.tiles[key]
        gone = [key for key in changed if key in self.tiles]
        kept = {k: r for k, r in changed.items() if r is not None and r.has_data}
        if changed:
            # Relink a copy and swap it in: the previous navmesh (and queries on it) stay valid.
            navmesh = self.navmesh.copy()
            links = self.links()
            navmesh.replace_tiles(
                gone, [cast(NavMeshData, tile_navdata(r, links)) for r in kept.values()]
            )
            self.navmesh = navmesh
        for key in gone:
            del self.tiles[key]
        self.tiles.update(kept)
        report.relink_seconds = time.perf_counter() - start
        for key, area in marked.items():
            if area is None:
                self._marked.pop(key, None)
            else:
                self._marked[key] = area
        report.rebuilt = list(fresh)
        self.rebuild_count += len(fresh)
        self._dirty.clear()
        return report


def blocked_links(links: OffMeshLinks, obstacles, agent_height: float, agent_radius: float):
    """bool (n,): an obstacle stands in the way of each link: a point of its arc (`core.
    jumplinks.arc_points`, its ends included), or one agent_radius to either side of it
    across the link, lies in an obstacle's footprint while the agent's height above the arc
    meets the obstacle's height range. obstacles: `core.obstacles.Obstacle` s (few: one
    vectorized test over every link and arc point each). [Units: wu]"""
    from .jumplinks import ARC_SEGMENTS, arc_points

    n = len(links)
    blocked = np.zeros(n, dtype=bool)
    if n == 0 or not obstacles:
        return blocked
    start = links.start.astype(np.float64)
    end = links.end.astype(np.float64)
    arc = arc_points(start, end, 2 * ARC_SEGMENTS)  # (n, k, 3)
    plan = end[:, :2] - start[:, :2]
    across = np.stack([-plan[:, 1], plan[:, 0]], axis=1)
    across /= np.maximum(np.hypot(across[:, 0], across[:, 1]), 1e-12)[:, None]
    for obstacle in obstacles:
        z0, z1 = obstacle.z_range()
        meets = (arc[:, :, 2] + agent_height > z0) & (arc[:, :, 2] < z1)
        for side in (0.0, -1.0, 1.0):
            x = arc[:, :, 0] + side * agent_radius * across[:, None, 0]
            y = arc[:, :, 1] + side * agent_radius * across[:, None, 1]
            blocked |= (obstacle.inside_xy(x, y) & meets).any(axis=1)
    return blocked


def tile_overlay(tiles) -> tuple[np.ndarray, ...]:
    """The navigation overlay of tile results (`TileResult` s with data): every tile's detail
    triangles in world units, Z-up, at the walkable surface, as
    `core.pipeline.BakeResult.overlay` returns them (verts float32 (k, 3), face_sizes,
    face_verts, face_region, face_poly int32); regions and polygon ids are made unique across
    tiles (tile order) so neighbouring tiles' regions colour apart."""
    from .pipeline import _detail_overlay

    parts = [_detail_overlay(t.detail, t.polymesh) for t in tiles if t.has_data]
    if not parts:
        empty = np.zeros(0, dtype=np.int32)
        return np.zeros((0, 3), dtype=np.float32), empty, empty, empty, empty
    vbase = np.cumsum([0] + [p[0].shape[0] for p in parts])
    rbase = np.cumsum([0] + [int(p[3].max()) + 1 if p[3].size else 0 for p in parts])
    pbase = np.cumsum([0] + [int(p[4].max()) + 1 if p[4].size else 0 for p in parts])
    return (
        np.concatenate([p[0] for p in parts]).astype(np.float32),
        np.concatenate([p[1] for p in parts]).astype(np.int32),
        np.concatenate([p[2] + vbase[i] for i, p in enumerate(parts)]).astype(np.int32),
        np.concatenate([p[3] + rbase[i] for i, p in enumerate(parts)]).astype(np.int32),
        np.concatenate([p[4] + pbase[i] for i, p in enumerate(parts)]).astype(np.int32),
    )


def _with_area(chf: CompactHeightfield, area: np.ndarray) -> CompactHeightfield:
    from dataclasses import replace

    return replace(chf, area=area)
