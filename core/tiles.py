"""Tiled bakes: RecastDemo's tile-mesh pipeline (``Sample_TileMesh::buildTileMesh``), exact.

The world's grid (``bmin``..``bmax`` of all vertices, or the config's bounds) is cut into square
tiles of ``tile_size`` cells; tile (tx, ty) covers columns ``tx*tile_size ..`` on X and rows
``ty*tile_size ..`` on Y. Each tile is baked on its own heightfield of
``tile_size + 2*border_size`` cells a side, ``border_size = walkable_radius + 3`` cells, whose
bounds are the tile's bounds widened by the border (float32, Recast's arithmetic):

    tile bmin.x = world bmin.x + tx * (tile_size * cs)        (same for y with ty)
    heightfield bmin.x = tile bmin.x - border_size * cs       (bmax likewise, + border)

The tile rasterizes the triangle chunks of `core.chunky` (RecastDemo's ``PartitionedMesh``,
256 triangles each) whose bounds overlap the widened tile, chunk after chunk, then runs the
solo pipeline's stages with the border: regions paint the border strips as border regions,
contours drop them and shift vertices by the border, the polygon mesh removes border vertices
and marks the edges on the tile's sides as portals (``0x8000 | dir``), the detail mesh samples
the bordered compact heightfield. A tile whose widened bounds meet no chunk, or that ends with
no contour, has no data (RecastDemo skips it).

Work units are picklable (`TileJob` carries only its own triangles; `bake_tile_job` is a
top-level function), so any `concurrent.futures.Executor` runs them: a process pool by
default, or a Dask ``distributed`` client's executor, Ray's, ... `iter_tiles` streams results in
build order (row by row) while keeping at most ``max_in_flight`` tiles submitted, so memory is
bounded by the tiles in flight, not the world. `bake_tiled` collects every tile's
`TileResult` (polygon mesh, detail mesh, Detour tile data) and `TiledBake.navmesh` links them
into one multi-tile `core.nav.navmesh.NavMesh`.

Cached intermediate data (for rebuilding a tile, e.g. temporary obstacles): with
``keep_compact=True`` a `TileResult` keeps its compact heightfield right after erosion and the
area volumes (``TileResult.compact``, before the distance field); `bake_tile_from_compact`
runs the remaining stages (distance field, regions, contours, polygons, detail, Detour data)
from such a copy, so a caller may mark areas on ``compact.area`` and rebuild the tile without
touching the triangles.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from . import filters, limits, memory, rasterize, threads
from .area import erode_walkable_area
from .chunky import TRIS_PER_CHUNK, PartitionedMesh, partition_mesh
from .compact import CompactHeightfield, build_compact_heightfield
from .config import DerivedConfig, NavConfig, grid_size
from .context import BuildContext
from .contours import build_contours
from .detail import PolyMeshDetail, build_poly_mesh_detail
from .errors import VoxNavError
from .jumplinks import LinkWindow
from .offmesh import OffMeshLinks
from .polymesh import PolyMesh, build_poly_mesh
from .regions import build_distance_field

F32 = np.float32
#: Smallest tile size. [Units: cells] Below this a tile's border outweighs its interior (and
#: RecastDemo's slider starts at 16).
MIN_TILE_SIZE = 8
#: Largest tile size. [Units: cells] A Detour tile holds fewer than 65535 vertices.
MAX_TILE_SIZE = 4096
#: Most tiles a tiled bake takes (those that may meet the geometry,
#: `TilePlan.tiles_to_bake_bound`): each is a bake of its own (a few milliseconds at the least,
#: about an hour for this many on one core), and RecastDemo's navmesh holds at most 2**14.
#: Dungeon at cell_size 0.001 in 8-cell tiles laid 114,889,430 (some three days). [Units: tiles]
MAX_TILES = 1 << 18
#: Detour's polygon ref bits shared by the tile and polygon indices (RecastDemo's rule).
REF_BITS = 22
MAX_TILE_BITS = 14

TileProgress = Callable[[int, int, "TileResult"], None]


# ------------------------------------------------------------------------------------- tiling
@dataclass(frozen=True)
class TileGrid:
    """The tile layout of a world. Z-up world frame; tile (tx, ty) is tile_x tx, tile_y ty.

    bmin/bmax float32 (3,) the world grid's corners [Units: wu]; cs cell size [Units: wu];
    width/height the world grid [Units: cells]; tile_size, border_size [Units: cells];
    tiles_w, tiles_h the tile counts on X and Y.
    """

    bmin: np.ndarray
    bmax: np.ndarray
    cs: np.float32
    width: int
    height: int
    tile_size: int
    border_size: int
    tiles_w: int
    tiles_h: int

    @classmethod
    def create(cls, bmin, bmax, config: NavConfig, tile_size: int) -> TileGrid:
        """The grid RecastDemo lays over bmin..bmax (``buildAllTiles``)."""
        tile_size = check_tile_size(tile_size)
        derived = config.derived()
        bmin = np.asarray(bmin, dtype=F32).copy()
        bmax = np.asarray(bmax, dtype=F32).copy()
        width, height = grid_size(bmin, bmax, derived.cs)
        return cls(
            bmin=bmin,
            bmax=bmax,
            cs=F32(derived.cs),
            width=width,
            height=height,
            tile_size=tile_size,
            border_size=derived.walkable_radius + 3,
            tiles_w=(width + tile_size - 1) // tile_size,
            tiles_h=(height + tile_size - 1) // tile_size,
        )

    @property
    def tile_world_size(self) -> np.float32:
        """tile_size * cs in float32 (RecastDemo's tileCellSize). [Units: wu]"""
        return F32(F32(self.tile_size) * self.cs)

    @property
    def max_tiles(self) -> int:
        """RecastDemo's maxTiles: 2**min(ilog2(nextPow2(tiles_w * tiles_h)), 14)."""
        return 1 << self._tile_bits()

    @property
    def max_polys(self) -> int:
        """RecastDemo's maxPolysPerTile: 2**(22 - tile bits)."""
        return 1 << (REF_BITS - self._tile_bits())

    def _tile_bits(self) -> int:
        n = max(self.tiles_w * self.tiles_h, 1)
        return min((n - 1).bit_length(), MAX_TILE_BITS)

    def tile_bounds(self, tx: int, ty: int) -> tuple[np.ndarray, np.ndarray]:
        """The tile's own bounds (no border), float32 Z-up, z = the world's. [Units: wu]"""
        tcs = self.tile_world_size
        lo = self.bmin.copy()
        hi = self.bmax.copy()
        lo[0] = self.bmin[0] + F32(tx) * tcs
        lo[1] = self.bmin[1] + F32(ty) * tcs
        hi[0] = self.bmin[0] + F32(tx + 1) * tcs
        hi[1] = self.bmin[1] + F32(ty + 1) * tcs
        return lo, hi

    def build_bounds(self, tx: int, ty: int) -> tuple[np.ndarray, np.ndarray]:
        """The tile's heightfield bounds: its bounds widened by the border. [Units: wu]"""
        lo, hi = self.tile_bounds(tx, ty)
        pad = F32(F32(self.border_size) * self.cs)
        lo[:2] = lo[:2] - pad
        hi[:2] = hi[:2] + pad
        return lo, hi

    def tiles(self) -> Iterator[tuple[int, int]]:
        """(tx, ty) in RecastDemo's build order: row by row (ty outer), x inner."""
        for ty in range(self.tiles_h):
            for tx in range(self.tiles_w):
                yield tx, ty


@dataclass(frozen=True)
class EveryTile(Collection[tuple[int, int]]):
    """Every (tx, ty) of a tile grid in build order, made as it is read (a grid may hold
    millions of tiles)."""

    grid: TileGrid

    def __len__(self) -> int:
        return self.grid.tiles_w * self.grid.tiles_h

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return self.grid.tiles()

    def __contains__(self, tile: object) -> bool:
        if not (isinstance(tile, tuple) and len(tile) == 2):
            return False
        tx, ty = tile
        return 0 <= tx < self.grid.tiles_w and 0 <= ty < self.grid.tiles_h


def check_tile_size(tile_size) -> int:
    """A valid tile size as int; `VoxNavError` otherwise. [Limit: 8..4096 cells]"""
    try:
        value = int(tile_size)
    except (TypeError, ValueError):
        raise VoxNavError(f"tile_size must be a whole number of cells, got {tile_size!r}") from None
    if value != tile_size:
        raise VoxNavError(f"tile_size must be a whole number of cells, got {tile_size!r}")
    if not MIN_TILE_SIZE <= value <= MAX_TILE_SIZE:
        fix = f">= {MIN_TILE_SIZE}" if value < MIN_TILE_SIZE else f"<= {MAX_TILE_SIZE}"
        raise VoxNavError(
            f"tiles must be {MIN_TILE_SIZE}..{MAX_TILE_SIZE} cells wide, got tile_size "
            f"{tile_size!r}: use tile_size {fix} (RecastDemo uses 32..128), or bake one solo "
            "mesh (tile size 0 on the command line and the panel; core.pipeline.bake)"
        )
    return value


# -------------------------------------------------------------------------------- tile work
@dataclass
class TileJob:
    """One tile's input, self-contained and picklable (what an executor ships to a worker).

    verts float32 (k, 3) Z-up [Units: wu] and tris int32 (m, 3) are only the triangles of the
    chunks overlapping the widened tile, in chunk order (indices local to ``verts``).
    """

    tx: int
    ty: int
    config: NavConfig
    #: float32 (3,) heightfield corners (tile + border), Z-up. [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    tile_size: int
    border_size: int
    verts: np.ndarray
    tris: np.ndarray
    volumes: tuple = ()
    keep_compact: bool = False
    make_navdata: bool = True
    #: With automatic links: the tile's link window (`LinkWindowInput`), else None.
    link_window: LinkWindowInput | None = None
    #: The stages may use threads (`core.threads`): only when tiles are baked one at a time
    #: in this process; beside other tiles the workers already fill every core.
    inner_threads: bool = True
    #: With bounds_min/bounds_max given: the world grid's columns in this tile's heightfield,
    #: (x0, y0, x1, y1), half-open; spans outside are dropped after rasterizing, as the solo
    #: grid ends there (the last tile's full width baked past bounds_max). [Units: cells]
    columns: tuple[int, int, int, int] | None = None


@dataclass
class LinkWindowInput:
    """What a tile needs to find links landing in its neighbours: the tile widened by
    ``margin`` cells (`link_margin`; less on a side where the triangles end sooner,
    `window_reach`), and the triangles of the chunks overlapping that, in chunk order.
    bmin/bmax float32 (3,) the window's heightfield corners; core_min/core_max the tile's
    own bounds [Units: wu]; verts/tris as `TileJob`'s."""

    bmin: np.ndarray
    bmax: np.ndarray
    core_min: np.ndarray
    core_max: np.ndarray
    #: The window's width and height. [Units: cells]
    width: int
    height: int
    verts: np.ndarray
    tris: np.ndarray


def link_margin(config: NavConfig, derived: DerivedConfig) -> int:
    """Cells a tile's link window reaches past the tile: the longest jump, the agent's
    radius to either side of its arc, and a cell of slack for the half-cell probe steps.
    [Units: cells]"""
    cs = float(derived.cs)
    reach = float(np.float32(config.max_jump_distance)) + float(np.float32(config.agent_radius))
    return int(np.ceil(reach / cs)) + 2


#: Cells a link window keeps past the last triangle on a side it crops (`window_reach`):
#: its filters, compact heightfield and erosion see empty columns there, as beyond any grid.
WINDOW_SLACK_CELLS = 2
#: Margins (`link_margin`) up to which a link window's low sides are never cropped: cropping
#: there moves the window's corner, whose float32 cell lines then fall a rounding apart and
#: can, rarely, move a link (nav_test in 64-cell tiles, 40 wu jumps: 120 links against 119);
#: 256 cells keep every bake with jumps up to 76 wu at 0.3 wu cells as it was. [Units: cells]
WINDOW_EXACT_MARGIN = 256


def window_reach(margin: int, core_min, core_max, verts: np.ndarray, cs) -> tuple:
    """Cells a tile's link window reaches past the tile's bounds core_min/core_max (float32
    (3,) [Units: wu]) on the low and on the high side, each int64 (2,) for x and y: ``margin``
    (`link_margin`), or fewer on a side where the window's triangles (``verts`` float32
    (n, 3) [Units: wu]) end sooner, plus `WINDOW_SLACK_CELLS`; a low side only when
    ``margin`` exceeds `WINDOW_EXACT_MARGIN` (a high side keeps the window's cell lines).
    Uncropped, every tile of a bake with a long max_jump_distance rasterized a window twice
    that wide whatever the world's size (1000 wu at 0.3 wu cells: 6,700 x 6,700 cells, a
    1.3 GB tile)."""
    cs = float(cs)
    if verts.shape[0] == 0:
        lowest = np.asarray(core_min[:2], dtype=np.float64)
        highest = np.asarray(core_max[:2], dtype=np.float64)
    else:
        lowest = verts[:, :2].min(axis=0).astype(np.float64)
        highest = verts[:, :2].max(axis=0).astype(np.float64)
    to_lowest = np.ceil((np.asarray(core_min[:2], dtype=np.float64) - lowest) / cs)
    to_highest = np.ceil((highest - np.asarray(core_max[:2], dtype=np.float64)) / cs)
    above = np.minimum(margin, np.maximum(to_highest, 0) + WINDOW_SLACK_CELLS).astype(np.int64)
    if margin <= WINDOW_EXACT_MARGIN:
        return np.full(2, margin, dtype=np.int64), above
    below = np.minimum(margin, np.maximum(to_lowest, 0) + WINDOW_SLACK_CELLS).astype(np.int64)
    return below, above


@dataclass
class TileResult:
    """One baked tile. ``polymesh`` is None (and the tile has no data) when RecastDemo would
    skip it: no chunk overlaps it or it has no contour.

    polymesh/detail: in the tile's own frame (`PolyMesh` cell coordinates from the tile's
    polymesh bmin = tile bounds, ``border_size`` set; vertex ids local to the tile; an edge on
    the tile's side has neighbour ``0x8000 | dir``). navdata: Detour's tile data
    (`core.nav.navdata.NavMeshData`, tile_x = tx, tile_y = ty) or None.
    """

    tx: int
    ty: int
    #: Triangles rasterized (the overlapping chunks' sizes summed).
    input_tris: int = 0
    #: Spans of the tile's solid heightfield.
    hf_spans: int = 0
    nconts: int = 0
    polymesh: PolyMesh | None = None
    detail: PolyMeshDetail | None = None
    navdata: object | None = None
    #: The compact heightfield after erosion and volumes (only with keep_compact).
    compact: CompactHeightfield | None = None
    #: Automatic jump and drop links starting in this tile (``config.auto_links``), also
    #: those landing in a neighbour (found on the tile's link window), or None.
    auto_links: OffMeshLinks | None = None
    #: float64 (n, 2) per automatic link: the outward normal (plan) of the tile border edge
    #: it starts on, NaN for another edge (`core.jumplinks.find_tile_links`); read and
    #: cleared by `check_link_landings`.
    auto_link_across: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: CPU seconds of the process that baked the tile, while it did (every thread of it).
    cpu_seconds: float = 0.0
    #: That process's peak resident memory so far (VmHWM; 0 where /proc is missing). [bytes]
    peak_rss: int = 0
    #: The job baked (`job_key`): checked against the job it answers (`_collect`).
    job_key: tuple = ()

    @property
    def has_data(self) -> bool:
        return self.polymesh is not None and self.polymesh.npolys > 0

    @property
    def npolys(self) -> int:
        return 0 if self.polymesh is None else self.polymesh.npolys


def bake_tile_job(job: TileJob) -> TileResult:
    """Bake one tile (``buildTileMesh``): picklable top-level entry point for executors.

    Also records the baking process's CPU time for the tile and its peak resident memory."""
    start = time.process_time()
    if job.inner_threads:
        result = _bake_tile(job)
    else:
        with threads.single_threaded():
            result = _bake_tile(job)
    result.cpu_seconds = time.process_time() - start
    result.peak_rss = process_peak_rss()
    result.job_key = job_key(job)
    return result


def job_key(job: TileJob) -> tuple:
    """What identifies a tile job's result: the tile, its bake's settings and its grid (an
    executor that answered a job with another tile's result, or another bake's, wrote a
    wrong .bin without a word)."""
    return (
        int(job.tx), int(job.ty), job.config, tuple(np.asarray(job.bmin).tolist()),
        tuple(np.asarray(job.bmax).tolist()), int(job.tile_size), int(job.border_size),
    )  # fmt: skip


def process_peak_rss() -> int:
    """This process's peak resident memory (VmHWM of /proc/self/status), 0 where there is no
    /proc. [Units: bytes]"""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _bake_tile(job: TileJob) -> TileResult:
    config = job.config
    derived = config.derived()
    ctx = BuildContext()
    result = TileResult(tx=job.tx, ty=job.ty, input_tris=int(job.tris.shape[0]))
    if job.tris.shape[0] == 0:
        return result
    width = height = job.tile_size + 2 * job.border_size
    # The solo bake's up-front check, with this tile's triangles and grid (the plan checked
    # the grid alone): nothing large is allocated before it.
    check_tile_memory(
        job.verts, job.tris, job.bmin, job.bmax, config, job.tile_size, job.border_size
    )
    with ctx.stage("mark"):
        areas = rasterize.mark_walkable_triangles(
            job.verts, job.tris, config.agent_max_slope, ctx=ctx
        )
    with ctx.stage("rasterize"):
        hf = rasterize.rasterize_triangles(
            job.verts, job.tris, areas, job.bmin, job.bmax, derived.cs, derived.ch,
            width, height, derived.walkable_climb, ctx=ctx,
        )  # fmt: skip
    if job.columns is not None:
        hf = _cropped(hf, *job.columns)
    hf = _filtered(hf, config, derived, ctx)
    result.hf_spans = hf.span_count
    with ctx.stage("compact"):
        chf = build_compact_heightfield(
            hf, derived.walkable_height, derived.walkable_climb, ctx=ctx
        )
    solid = hf if config.auto_links else None  # the links' arc clearance reads it
    del hf
    with ctx.stage("erode"):
        chf.area = erode_walkable_area(chf, derived.walkable_radius, ctx=ctx)
    for volume in job.volumes:
        chf.area = volume.apply(chf)
    chf.border_size = job.border_size
    if job.keep_compact:
        result.compact = replace(chf, area=chf.area.copy())
    window = None
    if solid is not None:

        def window():
            with ctx.stage("link_window"):
                return _link_window(job, derived, ctx)

    _finish_tile(result, chf, config, derived, ctx, job.make_navdata, solid, window)
    return result


def grid_columns_in_tile(grid: TileGrid, tx: int, ty: int) -> tuple[int, int, int, int]:
    """The world grid's columns in tile (tx, ty)'s heightfield (its border included), as
    (x0, y0, x1, y1) in that heightfield's cells: [x0, x1) x [y0, y1). [Units: cells]"""
    first_x = tx * grid.tile_size - grid.border_size
    first_y = ty * grid.tile_size - grid.border_size
    return (-first_x, -first_y, grid.width - first_x, grid.height - first_y)


def _cropped(hf, x0: int, y0: int, x1: int, y1: int):
    """``hf`` without the spans of its columns outside [x0, x1) x [y0, y1) [Units: cells]."""
    ix, iy = hf.span_cells()
    keep = (ix >= x0) & (ix < x1) & (iy >= y0) & (iy < y1)
    if keep.all():
        return hf
    counts = np.bincount(hf.span_columns()[keep], minlength=hf.col_start.shape[0] - 1)
    col_start = np.zeros(hf.col_start.shape[0], dtype=np.int64)
    np.cumsum(counts, out=col_start[1:])
    return replace(
        hf, col_start=col_start, smin=hf.smin[keep], smax=hf.smax[keep], area=hf.area[keep]
    )


def _filtered(hf, config: NavConfig, derived: DerivedConfig, ctx: BuildContext):
    """The solid heightfield after the config's three filters (stages 3a-3c)."""
    if config.filter_low_hanging_obstacles:
        with ctx.stage("filter_low_hanging"):
            hf = hf.with_area(filters.filter_low_hanging_obstacles(hf, derived.walkable_climb))
    if config.filter_ledge_spans:
        with ctx.stage("filter_ledge"):
            hf = hf.with_area(
                filters.filter_ledge_spans(hf, derived.walkable_height, derived.walkable_climb)
            )
    if config.filter_walkable_low_height_spans:
        with ctx.stage("filter_low_height"):
            hf = hf.with_area(filters.filter_walkable_low_height_spans(hf, derived.walkable_height))
    return hf


def _link_window(job: TileJob, derived: DerivedConfig, ctx: BuildContext):
    """The `core.jumplinks.LinkWindow` of a tile: stages 1-5 (to erosion and the area
    volumes) on the window's own grid. None without one."""
    win = job.link_window
    if win is None:
        return None
    config = job.config
    check_window_memory(win, config)
    areas = rasterize.mark_walkable_triangles(win.verts, win.tris, config.agent_max_slope)
    solid = rasterize.rasterize_triangles(
        win.verts, win.tris, areas, win.bmin, win.bmax, derived.cs, derived.ch, win.width,
        win.height, derived.walkable_climb,
    )  # fmt: skip
    solid = _filtered(solid, config, derived, BuildContext())
    floor = build_compact_heightfield(solid, derived.walkable_height, derived.walkable_climb)
    floor.area = erode_walkable_area(floor, derived.walkable_radius)
    for volume in job.volumes:
        floor.area = volume.apply(floor)
    core_min = np.asarray(win.core_min[:2], dtype=np.float64)
    core_max = np.asarray(win.core_max[:2], dtype=np.float64)
    return LinkWindow(solid, floor, core_min, core_max)


#: The stages a link window runs (`_link_window`), as `memory.estimate_bake` names them.
_WINDOW_STAGES = ("rasterize", "filters", "compact", "erode")


def check_window_memory(win: LinkWindowInput, config: NavConfig) -> None:
    """Refuse (`VoxNavError`) a tile's link window whose stages (rasterized, filtered,
    compacted and eroded on the window's own grid: the tile and `window_reach` cells around
    it) are predicted to exceed ``config.memory_limit``, as a tile's own are checked. A long
    max_jump_distance makes the window far larger than its tile."""
    estimates = memory.estimate_bake(win.verts, win.tris, win.bmin, win.bmax, config)
    worst = max((e for e in estimates if e.stage in _WINDOW_STAGES), key=lambda e: e.bytes)
    memory.check(
        replace(worst, stage=f"automatic links' window ({worst.stage})"),
        config,
        advice=(
            f"lower max_jump_distance (the window reaches {config.max_jump_distance:g} wu and "
            "more past each tile) or tile_size"
        ),
    )


def bake_tile_from_compact(
    tx: int,
    ty: int,
    chf: CompactHeightfield,
    config: NavConfig,
    *,
    make_navdata: bool = True,
) -> TileResult:
    """Rebuild a tile from its cached compact heightfield (after erosion; areas may have been
    changed since, e.g. obstacles marked with area 0): distance field, regions with the
    border, contours, polygons, detail and Detour data. ``chf`` is not modified; its
    ``border_size`` must be the tile's border. [Units: cells]
    """
    derived = config.derived()
    work = replace(chf, area=chf.area.copy(), dist=None, reg=None)
    result = TileResult(tx=tx, ty=ty)
    ctx = BuildContext()
    _finish_tile(result, work, config, derived, ctx, make_navdata)
    return result


def _finish_tile(
    result: TileResult,
    chf: CompactHeightfield,
    config: NavConfig,
    derived: DerivedConfig,
    ctx: BuildContext,
    make_navdata: bool,
    solid=None,
    window: Callable[[], LinkWindow | None] | None = None,
) -> None:
    """Stages 6-10 of a tile, then its automatic links (with ``config.auto_links`` and the
    tile's solid heightfield ``solid``; ``window()`` builds its `core.jumplinks.LinkWindow`
    for links into the neighbours, after the tile's own stages, so their heightfields are
    never held together) and its Detour data."""
    from .pipeline import PARTITION_BUILDERS

    border = int(chf.border_size)
    if config.partition == "watershed":
        with ctx.stage("distance"):
            _, dist, max_distance = build_distance_field(chf, ctx=ctx)
        chf.dist, chf.max_distance = dist, max_distance
    else:
        dist = np.zeros(chf.span_count, dtype=np.uint16)
        max_distance = 0
    with ctx.stage("regions"):
        partition = PARTITION_BUILDERS[config.partition]
        reg, max_regions = partition(
            chf, dist, max_distance, derived.min_region_area, derived.merge_region_area,
            border, ctx=ctx,
        )  # fmt: skip
    chf.reg, chf.max_regions = reg, max_regions
    with ctx.stage("contours"):
        cset = build_contours(
            chf, float(derived.max_simplification_error), derived.max_edge_len, ctx=ctx
        )
    result.nconts = cset.nconts
    if cset.nconts == 0:
        result.timings, result.warnings = ctx.timings, ctx.warnings
        return
    with ctx.stage("polymesh"):
        pmesh = build_poly_mesh(cset, derived.max_verts_per_poly, ctx=ctx)
    with ctx.stage("detail"):
        dmesh = build_poly_mesh_detail(
            pmesh,
            chf,
            float(derived.detail_sample_dist),
            float(derived.detail_sample_max_error),
            ctx=ctx,
        )
    result.polymesh, result.detail = pmesh, dmesh
    if solid is not None and pmesh.npolys > 0:
        from .jumplinks import find_tile_links, link_settings

        link_window = window() if window is not None else None
        with ctx.stage("links"):
            result.auto_links, result.auto_link_across = find_tile_links(
                pmesh, dmesh, chf, solid, **link_settings(config, derived), window=link_window
            )
        del link_window
    if make_navdata and pmesh.npolys > 0:
        from .nav.navdata import create_nav_mesh_data

        with ctx.stage("navdata"):
            result.navdata = create_nav_mesh_data(
                pmesh,
                dmesh,
                walkable_height=float(config.agent_height),
                walkable_radius=float(config.agent_radius),
                walkable_climb=float(config.agent_max_climb),
                tile_x=result.tx,
                tile_y=result.ty,
                offmesh=result.auto_links,
            )
    result.timings, result.warnings = ctx.timings, ctx.warnings


# ------------------------------------------------------------------------------- the planner
@dataclass
class TilePlan:
    """A world prepared for tiled baking: checked input, tile grid and triangle chunks."""

    config: NavConfig
    grid: TileGrid
    verts: np.ndarray
    tris: np.ndarray
    chunks: PartitionedMesh
    volumes: tuple = ()
    #: The world's warnings (`check_world`), which every bake of the plan repeats.
    warnings: tuple[str, ...] = ()
    #: `tiles_to_bake`, made once (a bake reads it for its progress total, then its tiles).
    _to_bake: Collection[tuple[int, int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def tiles_to_bake(self) -> Collection[tuple[int, int]]:
        """(tx, ty) in build order (row by row) of every tile whose heightfield may meet a
        chunk: each leaf's tile range, widened by a tile each way (the float32 bounds'
        rounding; `job` then tests the tile exactly). The grid's other tiles meet no triangle:
        a stray vertex far from the level lays a grid of millions of them (one unused vertex
        100 km away: 10^8 tiles of 32 cells), and a Python step per tile would take hours
        to pass over them. The whole grid (`EveryTile`, made as it is read) when the leaves'
        ranges add up to more tiles."""
        if self._to_bake is None:
            self._to_bake = self._tiles_to_bake()
        return self._to_bake

    def _tiles_to_bake(self) -> Collection[tuple[int, int]]:
        g = self.grid
        every = g.tiles_w * g.tiles_h
        first, span = self._leaf_tile_ranges()
        if first.shape[0] == 0:
            return []
        per_leaf = span[:, 0] * span[:, 1]
        if int(per_leaf.sum()) >= every:
            return EveryTile(g)
        owner = np.repeat(np.arange(first.shape[0]), per_leaf)
        k = np.arange(owner.shape[0]) - np.repeat(np.cumsum(per_leaf) - per_leaf, per_leaf)
        width = span[owner, 0]
        tx = first[owner, 0] + k % width
        ty = first[owner, 1] + k // width
        keys = np.unique(ty * g.tiles_w + tx)
        return list(zip((keys % g.tiles_w).tolist(), (keys // g.tiles_w).tolist(), strict=True))

    def _leaf_tile_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """int64 (leaves, 2) each: the first tile (tx, ty) and the tile counts on X and Y of
        each chunk leaf's range (`tiles_to_bake`)."""
        g = self.grid
        leaf = np.flatnonzero(self.chunks.node_tri_index >= 0)
        tcs = float(g.tile_world_size)
        pad = float(g.border_size) * float(g.cs)
        origin = g.bmin[:2].astype(np.float64)
        lo = (self.chunks.node_bmin[leaf].astype(np.float64) - pad - origin) / tcs
        hi = (self.chunks.node_bmax[leaf].astype(np.float64) + pad - origin) / tcs
        limit = np.array([g.tiles_w - 1, g.tiles_h - 1])
        first = np.clip(np.floor(lo).astype(np.int64) - 1, 0, limit)
        last = np.clip(np.floor(hi).astype(np.int64) + 1, 0, limit)
        return first, last - first + 1

    def tiles_to_bake_bound(self) -> int:
        """An upper bound on ``len(tiles_to_bake())`` without making the list: the leaves'
        ranges added up (they may overlap), at most the whole grid. [Units: tiles]"""
        _first, span = self._leaf_tile_ranges()
        every = self.grid.tiles_w * self.grid.tiles_h
        return min(int((span[:, 0] * span[:, 1]).sum()), every)

    def job(self, tx: int, ty: int, keep_compact: bool = False, make_navdata: bool = True):
        """The `TileJob` of tile (tx, ty), or None when no chunk overlaps its widened bounds."""
        if not (0 <= tx < self.grid.tiles_w and 0 <= ty < self.grid.tiles_h):
            raise VoxNavError(
                f"tile ({tx}, {ty}) is outside the {self.grid.tiles_w} x {self.grid.tiles_h} "
                "tile grid"
            )
        lo, hi = self.grid.build_bounds(tx, ty)
        nodes = self.chunks.nodes_overlapping_rect(lo[:2], hi[:2])
        if nodes.shape[0] == 0:
            return None
        tri_ids = self.chunks.chunk_triangles(nodes)
        used, local = _local_mesh(self.verts.shape[0], self.tris.take(tri_ids, axis=0))
        link_window = None
        if self.config.auto_links and make_navdata and self.config.max_jump_distance > 0:
            link_window = self.link_window(tx, ty)
        columns = None
        if self.config.bounds_max is not None:  # `TileJob.columns`
            columns = grid_columns_in_tile(self.grid, tx, ty)
        return TileJob(
            tx=tx,
            ty=ty,
            columns=columns,
            config=self.config,
            bmin=lo,
            bmax=hi,
            tile_size=self.grid.tile_size,
            border_size=self.grid.border_size,
            verts=self.verts.take(used, axis=0),
            tris=local,
            volumes=self.volumes,
            keep_compact=keep_compact,
            make_navdata=make_navdata,
            link_window=link_window,
        )

    def link_window(self, tx: int, ty: int) -> LinkWindowInput:
        """The `LinkWindowInput` of tile (tx, ty): its bounds widened by `link_margin` cells,
        or on each side by `window_reach` cells where the triangles end sooner (float32, as
        the border is added), and the chunks overlapping them."""
        config = self.config
        cs = self.grid.cs
        margin = link_margin(config, config.derived())
        core_min, core_max = self.grid.tile_bounds(tx, ty)
        pad = F32(F32(margin) * cs)
        lo, hi = core_min.copy(), core_max.copy()
        lo[:2] = lo[:2] - pad
        hi[:2] = hi[:2] + pad
        nodes = self.chunks.nodes_overlapping_rect(lo[:2], hi[:2])
        tri_ids = self.chunks.chunk_triangles(nodes)
        used, local = _local_mesh(self.verts.shape[0], self.tris.take(tri_ids, axis=0))
        verts = self.verts.take(used, axis=0)
        below, above = window_reach(margin, core_min, core_max, verts, cs)
        lo[:2] = core_min[:2] - (F32(below) * cs).astype(F32)
        hi[:2] = core_max[:2] + (F32(above) * cs).astype(F32)
        size = self.grid.tile_size
        return LinkWindowInput(
            bmin=lo,
            bmax=hi,
            core_min=core_min,
            core_max=core_max,
            width=int(size + below[0] + above[0]),
            height=int(size + below[1] + above[1]),
            verts=verts,
            tris=local,
        )


def _local_mesh(n_verts: int, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertex ids used by ``tris`` ascending, int32 (m, 3) triangles renumbered into them):
    what ``np.unique(tris, return_inverse=True)`` gives, by marking the used vertices instead
    of sorting every corner (the planning process makes one per tile while the workers bake:
    on the 10x10 tiling 28 ms a 1024-cell tile sorted, about 5 marked)."""
    corners = tris.reshape(-1)
    used = np.zeros(n_verts, dtype=bool)
    used[corners] = True
    ids = np.flatnonzero(used)
    renumber = np.empty(n_verts, dtype=np.int32)
    renumber[ids] = np.arange(ids.shape[0], dtype=np.int32)
    return ids, renumber.take(corners).reshape(-1, 3)


def plan_tiles(
    verts,
    tris,
    config: NavConfig | None = None,
    tile_size: int | None = None,
    *,
    volumes: tuple = (),
    tris_per_chunk: int = TRIS_PER_CHUNK,
    executor: cf.Executor | None = None,
    workers: int | None = None,
    reuse_chunks: bool = True,
) -> TilePlan:
    """Check the input, lay the tile grid and chunk the triangles (RecastDemo's load step).

    verts float32 (n, 3) Z-up [Units: wu]; tris int (m, 3); tile_size [Units: cells]
    [Limit: 8..4096] (default: ``config.tile_size``; 0 is refused here: use the solo bake).
    executor: a process pool (or any `concurrent.futures.Executor`) that sorts the chunk
    tree's subtrees of large worlds, one per worker (``workers`` [Limit:
    1..`limits.MAX_WORKERS`], default 2); the tree is the
    same as without it. ``reuse_chunks``: a plan of the same triangles as the previous one
    (rebaking with other settings) takes that plan's chunk tree (`core.chunky`'s ``reuse``).
    """
    from .pipeline import check_input, grid_bounds

    config = (config or NavConfig()).validate()
    if workers is not None:
        workers = limits.check_workers(workers)
    if tile_size is None:
        tile_size = int(getattr(config, "tile_size", 0))
    tile_size = check_tile_size(tile_size)
    for volume in volumes:
        volume.validate()
    verts, tris = check_input(verts, tris)
    bmin, bmax = grid_bounds(verts, config)
    # The world's checks before chunking (every tile's bake would refuse the same way).
    warnings = check_world(verts, tris, bmin, bmax, config)
    grid = TileGrid.create(bmin, bmax, config, tile_size)
    check_tile_grid(grid, config)
    chunks = partition_mesh(
        verts, tris, tris_per_chunk, executor=executor, subtrees=max(2, workers or 2),
        reuse=reuse_chunks,
    )  # fmt: skip
    plan = TilePlan(config, grid, verts, tris, chunks, tuple(volumes), warnings)
    check_tile_count(plan)
    return plan


def check_tile_grid(grid: TileGrid, config: NavConfig) -> None:
    """Refuse (`VoxNavError`) a tile grid under one cell, or whose tile's grid alone (its
    columns, no triangle yet) would not fit ``config.memory_limit``: the solo bake's up-front
    refusal, for the grid every tile has, before anything is chunked or baked."""
    if grid.width < 1 or grid.height < 1:
        raise VoxNavError(
            f"the geometry is smaller than one cell ({grid.width} x {grid.height} columns at "
            f"cell_size {config.cell_size:g}): lower cell_size"
        )
    lo, hi = grid.build_bounds(0, 0)
    check_tile_memory(
        np.zeros((0, 3), F32), np.zeros((0, 3), np.int32), lo, hi, config, grid.tile_size,
        grid.border_size, "each tile's grid alone",
    )  # fmt: skip


def check_tile_count(plan: TilePlan) -> None:
    """Refuse (`VoxNavError`) a plan whose tiles that may meet the geometry
    (`TilePlan.tiles_to_bake_bound`) are more than `MAX_TILES`, saying a tile_size and a
    cell_size that fit."""
    count = plan.tiles_to_bake_bound()
    if count <= MAX_TILES:
        return
    grid, config = plan.grid, plan.config
    # Tiles scale with 1 / (tile_size * cell_size)^2 over the same geometry.
    grow = (count / MAX_TILES) ** 0.5 * 1.05
    tile_fit = int(np.ceil(grid.tile_size * grow / 8.0)) * 8
    fits = f"use tile_size >= {tile_fit}, " if tile_fit <= MAX_TILE_SIZE else ""
    fits += f"cell_size >= {limits.round_up(config.cell_size * grow):g}"
    ext = grid.bmax.astype(np.float64) - grid.bmin.astype(np.float64)
    raise VoxNavError(
        f"a tiled bake at tile_size {grid.tile_size} and cell_size {config.cell_size:g} lays up "
        f"to {count:,} tiles over the geometry ({grid.tiles_w:,} x {grid.tiles_h:,} tiles over "
        f"{ext[0]:,.6g} x {ext[1]:,.6g} m), more than the {MAX_TILES:,} a bake takes (each "
        f"tile is a bake of its own: far too long); {fits}, or bake a smaller region with "
        "bounds_min/bounds_max"
    )


def check_tile_memory(
    verts,
    tris,
    bmin,
    bmax,
    config: NavConfig,
    tile_size: int,
    border_size: int,
    what: str = "this tile",
) -> None:
    """Refuse (`VoxNavError`) a tile whose predicted peak (`memory.estimate_bake` on its
    heightfield's bounds ``bmin``/``bmax`` [Units: wu], as the solo bake predicts its own)
    exceeds ``config.memory_limit``, saying a tile_size that fits. verts float32 (n, 3),
    tris int (m, 3): the tile's triangles (none: its grid alone); tile_size, border_size
    [Units: cells]; ``what``: the tile as the message names it."""
    estimates = memory.estimate_bake(verts, tris, bmin, bmax, config)
    worst = max(estimates, key=lambda e: e.bytes)
    limit = int(config.memory_limit)
    if worst.bytes <= limit:
        return
    # A tile's grid is tile_size plus the border cells a side whatever the cell size, so a
    # smaller tile fits, not a larger cell; what a stage holds grows with its columns.
    side = tile_size + 2 * border_size
    fixed = memory.RUNTIME_BYTES + memory.STAGE_FIXED_BYTES
    share = max(0.0, (limit - fixed) / max(worst.bytes - fixed, 1))
    tile_fit = (int(side * share**0.5) - 2 * border_size) // 8 * 8
    fits = f"use tile_size <= {tile_fit}, or " if tile_fit >= MIN_TILE_SIZE else ""
    raise VoxNavError(
        f"{what} would need about {memory.format_bytes(worst.bytes)} in the {worst.stage} "
        f"stage (memory_limit is {memory.format_bytes(limit)}), driven by {worst.drivers}: a "
        f"tile is {side} x {side} cells (tile_size {tile_size} and a border of "
        f"{border_size} each side) whatever the cell size; {fits}raise memory_limit (to "
        f"at least {memory.format_bytes(worst.bytes * 1.05)} for these settings)"
    )


def check_world(verts, tris, bmin, bmax, config: NavConfig) -> tuple[str, ...]:
    """The checks of `core.limits` a solo bake makes of the world, made once for all its
    tiles (a tile's heightfield spans the world's heights and lies in its float32 frame):
    the grid's extent and the agent's 8-bit fields, float32 precision far from the origin,
    walkable surfaces above the 13-bit span height range. Raises `VoxNavError` where the
    navmesh would be wrong; returns the warnings. verts float32 (n, 3) Z-up, bmin/bmax the
    world grid's corners [Units: wu]; tris int (m, 3) (checked input)."""
    derived = config.derived()
    ctx = BuildContext()
    limits.check_grid(bmin, bmax, config, derived, ctx)
    limits.check_precision(bmin, bmax, derived, ctx)
    if limits.exceeds_height_range(bmin, bmax, derived):  # else no triangle can
        areas = rasterize.mark_walkable_triangles(verts, tris, config.agent_max_slope)
        limits.check_heights(verts, tris, areas, bmin, bmax, config, derived, ctx)
    return tuple(ctx.warnings)


# ------------------------------------------------------------------------------- execution
def _cause_text(cause: BaseException) -> str:
    """A tile's failure for the user: VoxNav's own message as it is, anything else with the
    kind of exception (a worker's crash says little without it)."""
    if isinstance(cause, VoxNavError):
        return str(cause)
    return f"{type(cause).__name__}: {cause}"


class TileBakeError(VoxNavError):
    """A tile failed to bake (its tile coordinates are in the message and attributes)."""

    def __init__(self, tx: int, ty: int, cause: BaseException):
        super().__init__(
            f"tile ({tx}, {ty}) failed to bake: {_cause_text(cause)}; nothing was "
            "written (the previous navmesh, if any, is unchanged)"
        )
        self.tx, self.ty, self.cause = tx, ty, cause


def default_workers() -> int:
    """Processes of the default pool: every core the process may use, at most
    `limits.MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, limits.MAX_WORKERS))


def worker_count(workers: int | None) -> int:
    """``workers``, or every core (`default_workers`) for None; `VoxNavError` for anything
    but a whole number from 1 to `limits.MAX_WORKERS` (`limits.check_workers`)."""
    return default_workers() if workers is None else limits.check_workers(workers)


#: Linux's PR_SET_PDEATHSIG (prctl): a signal the kernel sends a process when the thread
#: that started it ends.
_PR_SET_PDEATHSIG = 1


class WorkerPool(cf.ProcessPoolExecutor):
    """`worker_pool`'s process pool: leaving its ``with`` block by an exception (an error,
    Ctrl-C, SIGTERM) stops it at once (`stop`) instead of waiting for the tiles in hand."""

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.stop()
            return False
        return super().__exit__(exc_type, exc, tb)

    def stop(self) -> None:
        """Kill the workers, then shut down: a hung or very slow tile held an interrupted
        bake for ever (the shutdown waited for every running tile), and their results are not
        wanted any more."""
        for process in list((getattr(self, "_processes", None) or {}).values()):
            try:
                process.kill()
            except (OSError, ValueError, AttributeError):
                pass  # ended already
        # Waiting now costs nothing (no worker is left to finish a tile), and lets the pool's
        # thread close its pipes before the interpreter's exit handler writes to them (not
        # waiting printed "Exception ignored ... Bad file descriptor" after a SIGTERM).
        self.shutdown(wait=True, cancel_futures=True)


def worker_pool(n_workers: int, mp_context=None) -> WorkerPool:
    """A process pool for VoxNav's own work (tiles, agents, the detail mesh) whose workers
    end with this process (`end_with_parent`): a parent killed outright (SIGKILL, the OOM
    killer) left its forked workers idle for ever, holding their copy of the world. An
    exception out of its ``with`` block kills them (`WorkerPool.stop`)."""
    return WorkerPool(
        max_workers=n_workers,
        mp_context=mp_context,
        initializer=end_with_parent,
        initargs=(os.getpid(),),
    )


def end_with_parent(parent_pid: int) -> None:
    """In a worker process: end it when ``parent_pid`` ends (Linux: the kernel's parent-death
    signal; elsewhere nothing), and give SIGTERM and SIGHUP their default action again (a
    forked worker inherits the command line's handler, `errors.Terminated`, which would only
    fail the job in hand)."""
    import signal

    try:
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
    except (ValueError, OSError):
        return
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent ended before the signal was set
        os._exit(1)


def check_executor(executor: cf.Executor | None) -> cf.Executor | None:
    """``executor`` when it is None or has a ``submit`` (a `concurrent.futures.Executor` or
    one alike: Dask's, Ray's); `VoxNavError` otherwise (a string or a pool class raised a
    bare AttributeError at the first tile)."""
    if executor is not None and (
        isinstance(executor, type) or not callable(getattr(executor, "submit", None))
    ):
        raise VoxNavError(
            "executor must be a concurrent.futures.Executor (a ThreadPoolExecutor, a "
            f"ProcessPoolExecutor, a Dask client's get_executor(), ...), got {executor!r}"
        )
    return executor


@contextlib.contextmanager
def tile_executor(executor: cf.Executor | None, n_workers: int) -> Iterator[cf.Executor | None]:
    """``executor`` itself; with none, a process pool of ``n_workers`` made for the block and
    shut down after it (the platform's start method, see `iter_tiles`; stopped at once when
    the block ends by an exception, `WorkerPool`), or None (this process) for one worker."""
    if executor is not None or n_workers == 1:
        yield check_executor(executor)
        return
    with worker_pool(n_workers) as pool:  # an exception stops it without waiting
        yield pool


def iter_tiles(
    plan: TilePlan,
    *,
    executor: cf.Executor | None = None,
    workers: int | None = None,
    max_in_flight: int | None = None,
    keep_compact: bool = False,
    make_navdata: bool = True,
) -> Iterator[TileResult]:
    """Bake every tile with data, yielding `TileResult` s in build order (row by row).

    executor: any `concurrent.futures.Executor` (a Dask ``distributed`` client's
    ``get_executor()``, Ray's, a thread or process pool); None = a process pool of
    ``workers`` processes (default: all cores; the platform's start method: forked workers
    share this process's memory, the whole world's, and count it in their resident size), or
    in this process when ``workers`` is 1. For workers that hold only their tiles, pass
    ``ProcessPoolExecutor(mp_context=multiprocessing.get_context("forkserver"))`` (the calling
    script then needs an ``if __name__ == "__main__":`` guard).
    At most ``max_in_flight`` tiles (default 2 per worker, at least 2) are submitted at a
    time, so memory holds only those tiles' inputs and results plus what the caller keeps.
    A failing tile raises `TileBakeError` naming the tile; the remaining tiles are cancelled.
    """
    jobs = (
        job
        for tx, ty in plan.tiles_to_bake()
        if (job := plan.job(tx, ty, keep_compact, make_navdata)) is not None
    )
    n_workers = worker_count(workers)
    if executor is None and n_workers == 1:
        for job in jobs:
            yield _run_local(job)
        return
    jobs = (replace(job, inner_threads=False) for job in jobs)
    window = max_in_flight if max_in_flight is not None else max(2, 2 * n_workers)
    pending: deque[tuple[TileJob, cf.Future]] = deque()
    with tile_executor(executor, n_workers) as pool:
        assert pool is not None
        try:
            for job in jobs:
                try:  # a pool shut down or broken (a worker killed) refuses the job
                    future = pool.submit(bake_tile_job, job)
                except Exception as exc:
                    raise TileBakeError(job.tx, job.ty, exc) from exc
                pending.append((job, future))
                if len(pending) >= window:
                    yield _collect(*pending.popleft())
            while pending:
                yield _collect(*pending.popleft())
        finally:
            for _, future in pending:
                future.cancel()


def _run_local(job: TileJob) -> TileResult:
    try:
        return bake_tile_job(job)
    except Exception as exc:
        raise TileBakeError(job.tx, job.ty, exc) from exc


def _collect(job: TileJob, future: cf.Future) -> TileResult:
    try:
        result = future.result()
    except Exception as exc:
        raise TileBakeError(job.tx, job.ty, exc) from exc
    if not isinstance(result, TileResult) or result.job_key != job_key(job):
        what = (
            f"a {type(result).__name__}"
            if not isinstance(result, TileResult)
            else f"the result of tile {result.tx, result.ty}"
            if (result.tx, result.ty) != (job.tx, job.ty)
            else "a result of another bake (other settings, grid or VoxNav version)"
        )
        raise TileBakeError(job.tx, job.ty, VoxNavError(f"the executor answered with {what}"))
    return result


@dataclass
class TiledBake:
    """A whole tiled bake: the grid and every tile with data, in build order."""

    config: NavConfig
    grid: TileGrid
    tiles: list[TileResult]
    #: Tiles whose widened bounds met a chunk (baked, with or without data).
    tiles_built: int = 0
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    #: CPU seconds of the baking processes, summed over tiles (`TileResult.cpu_seconds`).
    tile_cpu_seconds: float = 0.0
    #: The largest peak resident memory of a baking process (`TileResult.peak_rss`). [bytes]
    tile_peak_rss: int = 0
    #: Off-mesh links (`core.offmesh.OffMeshLinks`, Z-up) added to the Detour tiles, or None.
    offmesh_links: OffMeshLinks | None = None

    @property
    def npolys(self) -> int:
        return sum(t.npolys for t in self.tiles)

    @property
    def empty(self) -> bool:
        return self.npolys == 0

    def navmesh_params(self):
        """Detour's dtNavMeshParams as RecastDemo sets them (Y-up orig = world bmin)."""
        from .nav.navmesh import NavMeshParams

        g = self.grid
        return NavMeshParams(
            orig=np.asarray(g.bmin, dtype=F32)[[0, 2, 1]].copy(),
            tile_width=float(g.tile_world_size),
            tile_height=float(g.tile_world_size),
            max_tiles=g.max_tiles,
            max_polys=g.max_polys,
        )

    @property
    def auto_link_count(self) -> int:
        """Automatic links found in the tiles (``config.auto_links``)."""
        return sum(len(t.auto_links) for t in self.tiles if t.auto_links is not None)

    def navmesh_links(self) -> OffMeshLinks | None:
        """Every off-mesh link of the navmesh: the hand-made ``offmesh_links``, then each
        tile's automatic links in tile order, their user ids following the hand-made ones'
        (None: no link at all)."""
        autos = [t.auto_links for t in self.tiles if t.auto_links is not None]
        autos = [a for a in autos if len(a)]
        if not autos:
            return self.offmesh_links
        links = self.offmesh_links if self.offmesh_links is not None else OffMeshLinks.empty()
        next_id = int(links.user_id.max()) + 1 if len(links) else 0
        for found in autos:
            ids = (np.arange(len(found)) + next_id).astype(np.uint32)
            links = links.concatenate(replace(found, user_id=ids))
            next_id += len(found)
        return links

    def navdata(self) -> list:
        """The Detour tiles (`NavMeshData`) in build order; with links (`navmesh_links`),
        each tile is made again with the links whose start lies in it (as RecastDemo passes
        every link to every tile's dtCreateNavMeshData)."""
        links = self.navmesh_links()
        return [data for t in self.tiles if (data := tile_navdata(t, links)) is not None]

    def navmesh(self):
        """A multi-tile `core.nav.navmesh.NavMesh` with every tile added (and linked)."""
        from .nav.navmesh import NavMesh

        mesh = NavMesh(self.navmesh_params())
        for data in self.navdata():
            mesh.add_tile(data)
        return mesh


def tile_navdata(tile: TileResult, links: OffMeshLinks | None):
    """A tile's Detour data (`NavMeshData`, or None when it has none) with the off-mesh links
    of ``links`` whose start lies in the tile (`create_nav_mesh_data` keeps those), made again
    from its meshes; the stored ``tile.navdata`` when there are no links and it holds none
    (it holds the tile's own automatic links as found, before `check_link_landings` may drop
    them: kept, a dropped one stayed in the .bin when it was the bake's only link)."""
    if tile.navdata is None or tile.polymesh is None:
        return tile.navdata
    from .nav.navdata import NavMeshData, create_nav_mesh_data

    data = tile.navdata
    assert isinstance(data, NavMeshData)
    if (links is None or len(links) == 0) and int(data.off_mesh_count) == 0:
        return data
    return create_nav_mesh_data(
        tile.polymesh,
        tile.detail,
        walkable_height=data.walkable_height,
        walkable_radius=data.walkable_radius,
        walkable_climb=data.walkable_climb,
        tile_x=data.tile_x,
        tile_y=data.tile_y,
        build_bv_tree=data.bv_i.shape[0] > 0,
        offmesh=links,
    )


def bake_tiled(
    verts,
    tris,
    config: NavConfig | None = None,
    tile_size: int | None = None,
    *,
    executor: cf.Executor | None = None,
    workers: int | None = None,
    volumes: tuple = (),
    keep_compact: bool = False,
    progress: TileProgress | None = None,
) -> TiledBake:
    """Tiled bake of a Z-up triangle soup (see the module docstring); tiles with data only.

    `plan_tiles` then `bake_plan`, both on the same executor (with none and more than one
    worker, a process pool of ``workers`` made here). Raises `VoxNavError` for bad input and
    `TileBakeError` when a tile fails.
    """
    n_workers = worker_count(workers)
    with tile_executor(executor, n_workers) as pool:
        start = time.perf_counter()
        plan = plan_tiles(
            verts, tris, config, tile_size, volumes=volumes, executor=pool, workers=n_workers
        )
        seconds = time.perf_counter() - start
        out = bake_plan(
            plan, executor=pool, workers=n_workers, keep_compact=keep_compact, progress=progress
        )
    out.timings = {"plan": seconds, **out.timings}
    out.timings["total"] += seconds
    return out


def bake_plan(
    plan: TilePlan,
    *,
    executor: cf.Executor | None = None,
    workers: int | None = None,
    keep_compact: bool = False,
    progress: TileProgress | None = None,
) -> TiledBake:
    """Bake every tile of a `TilePlan` (see `iter_tiles` for ``executor`` and ``workers``)
    and keep each tile's results (not its inputs or intermediates, unless ``keep_compact``).

    ``progress(done, total, tile)`` is called after each tile in build order (total = the
    tiles that may meet a triangle, `TilePlan.tiles_to_bake`; those that meet none are not
    baked and not reported).
    """
    start = time.perf_counter()
    total = len(plan.tiles_to_bake())
    tiles: list[TileResult] = []
    warnings: list[str] = list(plan.warnings)
    built = 0
    timings: dict[str, float] = {}
    cpu, peak = 0.0, 0
    for result in iter_tiles(plan, executor=executor, workers=workers, keep_compact=keep_compact):
        built += 1
        cpu += result.cpu_seconds
        peak = max(peak, result.peak_rss)
        for w in result.warnings:
            text = f"tile ({result.tx}, {result.ty}): {w}"
            if text not in warnings:
                warnings.append(text)
        for stage, seconds in result.timings.items():
            timings[stage] = timings.get(stage, 0.0) + seconds
        if result.has_data:
            tiles.append(result)
        if progress is not None:
            progress(built, total, result)
    out = TiledBake(plan.config, plan.grid, tiles, built, warnings)
    out.tile_cpu_seconds, out.tile_peak_rss = cpu, peak
    if plan.config.auto_links:
        t0 = time.perf_counter()
        check_link_landings(out)
        left_out = drop_links_detour_leaves_out(out)
        if left_out:
            out.warnings.append(left_out)
        timings["links_check"] = time.perf_counter() - t0
    #: Stage times are summed over tiles (CPU seconds across workers); total is wall time.
    out.timings = {**timings, "total": time.perf_counter() - start}
    if out.empty:
        from .pipeline import explain_empty_geometry

        cause = explain_empty_geometry(plan.config, plan.verts, plan.tris)
        out.warnings.append(
            "the navigation mesh is empty (0 polygons in every tile): "
            + (
                cause
                or "check the walkable settings, or bake without tiles to see the likely cause"
            )
        )
    return out


def check_link_landings(bake: TiledBake) -> int:
    """Check the tiles' automatic links on the assembled navmesh, as a solo bake would have
    them, and drop those it would not: a link landing in a tile other than its own whose end
    Detour does not connect (`core.jumplinks.connects_on`; a tile finds them on its link
    window, where the neighbour's walkable floor stands in for its polygons: a small region
    Recast removed, say), and a link starting on a tile border edge across which the
    neighbour's navmesh goes on (`ACROSS_CELLS` past the border, at the link's height: a
    solo bake has no edge there, and a slope running across the border gave a drop link at
    every border; where nothing goes on, a ledge along the border or a strip too small for
    a polygon, the link stays). Clears the tiles' ``auto_link_across``. Returns how many
    links were dropped."""
    from .jumplinks import connects_on, link_settings

    checks = []
    for tile in bake.tiles:
        links, across = tile.auto_links, tile.auto_link_across
        tile.auto_link_across = None
        if links is None or not len(links):
            continue
        lo, hi = bake.grid.tile_bounds(tile.tx, tile.ty)
        x, y = links.end[:, 0], links.end[:, 1]
        away = (x < lo[0]) | (x >= hi[0]) | (y < lo[1]) | (y >= hi[1])
        on_border = np.zeros(len(links), dtype=bool) if across is None else ~np.isnan(across[:, 0])
        if away.any() or on_border.any():
            checks.append((tile, np.flatnonzero(away), np.flatnonzero(on_border), across))
    if not checks:
        return 0
    from .nav.navdata import NavMeshData
    from .nav.navmesh import NavMesh

    settings = link_settings(bake.config, bake.config.derived())
    climb = settings["agent_climb"]
    step = ACROSS_CELLS * float(bake.grid.cs)
    # The tiles' own data: their link polygons are never a nearest polygon.
    nav = NavMesh(bake.navmesh_params())
    for tile in bake.tiles:
        if isinstance(tile.navdata, NavMeshData):
            nav.add_tile(tile.navdata)
    dropped = 0
    for tile, away, on_border, across in checks:
        links = tile.auto_links
        assert links is not None
        keep = np.ones(len(links), dtype=bool)
        keep[away] = connects_on(
            nav, links.end[away].astype(np.float64), float(links.radius[0]), climb
        )
        if on_border.shape[0]:
            assert across is not None
            point = links.start[on_border].astype(np.float64)
            point[:, :2] += across[on_border] * step
            # Within less than the step of the point: the tile's own polygons, which end at
            # the border, are a step away; a neighbour's polygon there holds the point.
            keep[on_border] &= ~connects_on(nav, point, 0.8 * step, climb)
        if keep.all():
            continue
        tile.auto_links = links.subset(keep)
        dropped += int((~keep).sum())
    return dropped


def drop_links_detour_leaves_out(bake: TiledBake) -> str:
    """Take out of ``bake``'s tiles the automatic links its Detour tiles would not store
    (`pipeline.drop_links_detour_leaves_out`'s rule: a link is stored by the tile its start
    lies in, within the agent's climb of that tile's heights; every link when
    agent_max_climb is below one cell height); returns the warning saying so, "" when none
    was. A link its own tile does not store may start on the tile's far border, in the next
    tile (RecastDemo gives every tile every link): every tile is asked for those."""
    from .nav.navdata import stored_links
    from .pipeline import links_left_out_warning

    climb = float(np.float32(bake.config.agent_max_climb))
    pending = []  # (tile, its links, stored by its own data)
    total = 0
    for tile in bake.tiles:
        links = tile.auto_links
        if links is None or not len(links) or tile.polymesh is None:
            continue
        total += len(links)
        own = stored_links(tile.polymesh, tile.detail, links, climb)
        if not own.all():
            pending.append((tile, links, own))
    if not pending:
        return ""
    others = OffMeshLinks.empty()
    for _tile, links, own in pending:
        others = others.concatenate(links.subset(~own))
    elsewhere = np.zeros(len(others), dtype=bool)
    for tile in bake.tiles:
        if tile.polymesh is not None and tile.polymesh.npolys:
            elsewhere |= stored_links(tile.polymesh, tile.detail, others, climb)
    dropped = at = 0
    for tile, links, own in pending:
        keep = own.copy()
        count = int((~own).sum())
        keep[~own] = elsewhere[at : at + count]
        at += count
        if not keep.all():
            tile.auto_links = links.subset(keep)
            dropped += int((~keep).sum())
    return links_left_out_warning(dropped, total, bake.config) if dropped else ""


#: How far past a tile border `check_link_landings` looks for the neighbour's navmesh going
#: on across a border edge a link starts on (a quarter cell: the near side's own polygons
#: end at the border). [Units: cells]
ACROSS_CELLS = 0.25


def tiled_dump_arrays(bake: TiledBake) -> dict[str, np.ndarray | np.generic]:
    """The ``tiled_*``, ``tilegrid_npolys``, ``tile_*`` and ``count_tile*`` arrays of the
    reference format (``../shared/reference/README.md``), Recast's Y-up frame."""
    g = bake.grid
    tiles = bake.tiles
    grid_polys = np.zeros((g.tiles_h, g.tiles_w), dtype=np.int32)
    for t in tiles:
        grid_polys[t.ty, t.tx] = t.npolys
    pm: list[PolyMesh] = [t.polymesh for t in tiles if t.polymesh is not None]
    dm: list[PolyMeshDetail] = [t.detail for t in tiles if t.detail is not None]
    if len(pm) != len(tiles) or len(dm) != len(tiles):
        raise VoxNavError("a tile with polygons lacks its polygon or detail mesh")

    def starts(counts: list[int]) -> np.ndarray:
        out = np.zeros(len(counts), dtype=np.int64)
        if counts:
            out[1:] = np.cumsum(counts)[:-1]
        return out

    def cat(arrays: list[np.ndarray], shape: tuple[int, ...], dtype) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(shape, dtype)

    nverts = [p.nverts for p in pm]
    npolys = [p.npolys for p in pm]
    nvp2 = 2 * int(pm[0].nvp) if pm else 12
    ids = np.arange(len(tiles), dtype=np.int32)
    return {
        "tiled_tile_size": np.int64(g.tile_size),
        "tiled_border_size": np.int64(g.border_size),
        "tiled_tiles_w": np.int64(g.tiles_w),
        "tiled_tiles_h": np.int64(g.tiles_h),
        "tiled_max_tiles": np.int64(g.max_tiles),
        "tiled_max_polys": np.int64(g.max_polys),
        "tilegrid_npolys": grid_polys,
        "tile_x": np.array([t.tx for t in tiles], dtype=np.int32),
        "tile_y": np.array([t.ty for t in tiles], dtype=np.int32),
        "tile_pmesh_nverts": np.array(nverts, dtype=np.int32),
        "tile_pmesh_npolys": np.array(npolys, dtype=np.int32),
        "tile_dmesh_nverts": np.array([d.nverts for d in dm], dtype=np.int32),
        "tile_dmesh_ntris": np.array([d.ntris for d in dm], dtype=np.int32),
        "tile_nconts": np.array([t.nconts for t in tiles], dtype=np.int32),
        "tile_input_tris": np.array([t.input_tris for t in tiles], dtype=np.int32),
        "tile_hf_spans": np.array([t.hf_spans for t in tiles], dtype=np.int32),
        "tile_pmesh_bmin": np.array(
            [np.asarray(p.bmin, F32)[[0, 2, 1]] for p in pm],
            dtype=F32,
        ).reshape(-1, 3),
        "tile_pmesh_bmax": np.array(
            [np.asarray(p.bmax, F32)[[0, 2, 1]] for p in pm],
            dtype=F32,
        ).reshape(-1, 3),
        "tile_pmesh_verts_start": starts(nverts),
        "tile_pmesh_polys_start": starts(npolys),
        "tile_pmesh_verts": cat([p.verts for p in pm], (0, 3), np.uint16),
        "tile_pmesh_verts_tile": np.repeat(ids, nverts),
        "tile_pmesh_polys": cat([p.polys for p in pm], (0, nvp2), np.uint16),
        "tile_pmesh_polys_tile": np.repeat(ids, npolys),
        "tile_pmesh_regs": cat([p.regs for p in pm], (0,), np.uint16),
        "tile_pmesh_areas": cat([p.areas for p in pm], (0,), np.uint8),
        "tile_dmesh_meshes_start": starts([d.nmeshes for d in dm]),
        "tile_dmesh_verts_start": starts([d.nverts for d in dm]),
        "tile_dmesh_tris_start": starts([d.ntris for d in dm]),
        "tile_dmesh_meshes": cat([d.meshes for d in dm], (0, 4), np.uint32),
        "tile_dmesh_verts": cat(
            [np.asarray(d.verts, F32)[:, [0, 2, 1]] for d in dm],
            (0, 3),
            F32,
        ),
        "tile_dmesh_tris": cat([d.tris for d in dm], (0, 4), np.uint8),
        "count_tiles": np.int64(len(tiles)),
        "count_tiled_polys": np.int64(sum(npolys)),
        "count_tiled_verts": np.int64(sum(nverts)),
        "count_tiled_detail_verts": np.int64(sum(d.nverts for d in dm)),
        "count_tiled_detail_tris": np.int64(sum(d.ntris for d in dm)),
    }


__all__ = [
    "MAX_TILES",
    "MIN_TILE_SIZE",
    "TileBakeError",
    "TileGrid",
    "TileJob",
    "TilePlan",
    "TileResult",
    "TiledBake",
    "bake_tile_from_compact",
    "bake_plan",
    "bake_tile_job",
    "bake_tiled",
    "check_tile_count",
    "check_tile_grid",
    "check_tile_memory",
    "check_tile_size",
    "iter_tiles",
    "plan_tiles",
    "tile_executor",
    "tiled_dump_arrays",
    "worker_count",
]
