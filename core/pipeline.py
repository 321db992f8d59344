"""The numbered-step driver: triangles in, heightfield and navigation mesh out, each stage timed.

    1 mark         walkable-slope triangle marking           rasterize.mark_walkable_triangles
    2 rasterize    triangles -> solid heightfield            rasterize.rasterize_triangles
    3 filters      low hanging, ledge, low height            filters.*
    4 compact      open spans and neighbour links            compact.build_compact_heightfield
    5 erode        erosion by agent radius                   area.erode_walkable_area
    6 distance     distance field                            regions.build_distance_field
    7 regions      watershed / monotone / layers             regions.build_regions*
    8 contours     region outlines                           contours.build_contours
    9 polymesh     convex polygons                           polymesh.build_poly_mesh
   10 detail       height detail triangles                   detail.build_poly_mesh_detail
   11 links        automatic jump/drop links (auto_links)    jumplinks.find_auto_links

Input is a triangle soup in world units, Z-up: verts float32 (n, 3), tris int32 (m, 3). It is
validated first (`VoxNavError` on anything unusable) and the grid's memory is estimated before
anything large is allocated.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from . import filters, limits, memory, rasterize
from .area import erode_by_distance, erode_walkable_area
from .compact import CompactHeightfield, build_compact_heightfield
from .config import NULL_AREA, DerivedConfig, NavConfig, grid_size
from .context import BuildContext
from .contours import ContourSet, build_contours
from .detail import PolyMeshDetail, build_poly_mesh_detail
from .errors import VoxNavError
from .heightfield import Heightfield, VoxelGrid
from .jumplinks import find_auto_links, link_settings, link_work
from .offmesh import OffMeshLinks
from .polymesh import PolyMesh, build_poly_mesh
from .prune import PruneReport, checked_points, prune_islands
from .regions import (
    build_distance_field,
    build_regions,
    build_regions_layers,
    build_regions_monotone,
)

Progress = Callable[[float, str], None]


class PartitionBuilder(Protocol):
    """The shared call shape of the three region partitionings (see core.regions)."""

    def __call__(
        self,
        chf: CompactHeightfield,
        dist: np.ndarray,
        max_distance: int,
        min_region_area: int,
        merge_region_area: int,
        border_size: int = 0,
        *,
        ctx: BuildContext | None = None,
    ) -> tuple[np.ndarray, int]: ...


#: NavConfig.partition -> the region builder that implements it.
PARTITION_BUILDERS: dict[str, PartitionBuilder] = {
    "watershed": build_regions,
    "monotone": build_regions_monotone,
    "layers": build_regions_layers,
}


@dataclass(frozen=True)
class AreaVolume:
    """A volume that paints an area id onto the walkable spans inside it (RecastDemo's convex
    volumes), applied after erosion. Z-up world units.

    kind "box": ``points`` = (min corner, max corner). kind "convex": ``points`` = the convex
    polygon's (x, y) outline, ``zmin``/``zmax`` its prism. kind "cylinder": ``points`` =
    (bottom centre,), with ``radius`` and ``height``. ``area`` [Limit: 0..63]; 0 blocks.
    """

    kind: str
    points: tuple
    area: int
    zmin: float = 0.0
    zmax: float = 0.0
    radius: float = 0.0
    height: float = 0.0

    def validate(self) -> AreaVolume:
        """Check the volume's shape; `VoxNavError` says what a volume of this kind needs."""
        needs = {
            "box": "two points (min corner, max corner), each x, y, z",
            "convex": "at least three (x, y) outline points",
            "cylinder": "one (x, y, z) bottom centre point, radius > 0 and height > 0",
        }
        if self.kind not in needs:
            raise VoxNavError(
                f"area volume kind must be box, convex or cylinder, got {self.kind!r}"
            )
        try:
            points = np.asarray(self.points, dtype=np.float64)
        except (TypeError, ValueError):
            points = np.zeros((0, 0))
        widths = {"box": (3,), "convex": (2, 3), "cylinder": (3,)}[self.kind]
        count_ok = {
            "box": points.ndim == 2 and points.shape[0] == 2,
            "convex": points.ndim == 2 and points.shape[0] >= 3,
            "cylinder": points.ndim == 2 and points.shape[0] == 1,
        }[self.kind]
        shape_ok = bool(count_ok and points.shape[1] in widths and np.isfinite(points).all())
        if self.kind == "cylinder":
            shape_ok = shape_ok and float(self.radius) > 0 and float(self.height) > 0
        if not shape_ok:
            got = points.shape[0] if points.ndim == 2 else np.size(points)
            raise VoxNavError(
                f"a {self.kind} area volume needs {needs[self.kind]}; got {got} point(s) "
                f"{self.points!r}"
            )
        numbers = [self.zmin, self.zmax] if self.kind == "convex" else []
        numbers += [self.radius, self.height] if self.kind == "cylinder" else []
        limits.check_shape_values(points, f"a {self.kind} area volume's points")
        limits.check_shape_values(numbers, f"a {self.kind} area volume's heights and sizes")
        try:
            whole = float(self.area).is_integer()
        except (TypeError, ValueError):
            whole = False
        if not whole or not 0 <= int(self.area) <= 63:
            raise VoxNavError(f"area volume area id must be a whole number 0..63, got {self.area}")
        return self

    def apply(self, chf: CompactHeightfield) -> np.ndarray:
        from . import area as area_module

        if self.kind == "box":
            return area_module.mark_box_area(chf, self.points[0], self.points[1], self.area)
        if self.kind == "convex":
            return area_module.mark_convex_poly_area(
                chf, np.asarray(self.points, dtype=np.float32), self.zmin, self.zmax, self.area
            )
        if self.kind == "cylinder":
            return area_module.mark_cylinder_area(
                chf, self.points[0], self.radius, self.height, self.area
            )
        raise VoxNavError(f"area volume kind must be box, convex or cylinder, got {self.kind!r}")


#: Stage names in order, as used in timings and `time_<stage>` dump keys.
STAGES = (
    "mark",
    "rasterize",
    "filter_low_hanging",
    "filter_ledge",
    "filter_low_height",
    "compact",
    "erode",
    "distance",
    "regions",
    "contours",
    "polymesh",
    "detail",
)
HEIGHTFIELD_STAGES = STAGES[:5]


@dataclass
class BakeResult:
    """Everything one bake produced. Arrays are Z-up world or grid units as documented."""

    config: NavConfig
    #: float32 (3,) grid corners, Z-up. [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    width: int
    height: int
    #: uint8 (m,) after walkable-slope marking.
    tri_areas: np.ndarray
    #: The solid heightfield after the enabled filters.
    heightfield: Heightfield
    #: Area arrays of the solid heightfield after each heightfield stage (raster, lowhang, ...).
    stage_areas: dict[str, np.ndarray] = field(default_factory=dict)
    #: The navmesh stages' results; None after a heightfield-only bake.
    compact: CompactHeightfield | None = None
    #: uint8 (n,) compact span areas before erosion.
    area_initial: np.ndarray | None = None
    #: uint16 (n,) distance field before blurring.
    dist_raw: np.ndarray | None = None
    contours: ContourSet | None = None
    polymesh: PolyMesh | None = None
    detail: PolyMeshDetail | None = None
    #: Wall seconds per stage, in order (the build context's). [Units: s]
    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    #: Warnings of the build context, in order: full sentences for the user.
    warnings: list[str] = field(default_factory=list)
    #: True when the bake produced nothing usable: a navmesh bake with 0 polygons, or a
    #: heightfield bake with no walkable span. A warning then says the likely cause.
    empty: bool = False
    #: Estimated peak memory per stage ("rasterize", "filters", "compact", ..., "detail"),
    #: from the real counts of the stages before it (`core.memory`). [Units: bytes]
    memory_estimates: dict[str, int] = field(default_factory=dict)
    #: What island pruning did (`prune_bake`, ``bake(reachable_from=...)``); None: not run.
    prune: PruneReport | None = None
    #: Off-mesh links of the navmesh (``bake(offmesh_links=...)`` by hand, then any automatic
    #: jump/drop links), Z-up world; empty when there are none.
    offmesh_links: OffMeshLinks = field(default_factory=OffMeshLinks.empty)
    #: How many of ``offmesh_links`` the auto-links stage found (the last ones); 0 without it.
    auto_link_count: int = 0

    def voxel_grid(self, walkable_only: bool = False) -> VoxelGrid:
        return VoxelGrid.from_heightfield(self.heightfield, walkable_only)

    def overlay(self, max_quads: int | None = None):
        """The navigation overlay as a mesh in world units, Z-up, at the walkable surface.

        Returns verts float32 (k, 3), face_sizes int32 (f,), face_verts int32 (sum sizes,),
        face_region int32 (f,), face_poly int32 (f,). With a detail mesh: its triangles, which
        follow slopes and stairs (a polygon is only flat-ish and can dip under a ramp), each
        with its polygon's region and id. With polygons only: the polygons. Before that: one
        quad per walkable span top, region 0; at most ``max_quads`` of them [Limit: >= 1]
        when given, evenly spread over the spans (every k-th).
        """
        if self.detail is not None and self.polymesh is not None and self.detail.ntris > 0:
            return _detail_overlay(self.detail, self.polymesh)
        if self.polymesh is not None:
            return _polymesh_overlay(self.polymesh)
        return _span_top_overlay(self.heightfield, max_quads)


def _span_top_overlay(hf: Heightfield, max_quads: int | None = None):
    walk = np.nonzero(hf.area != NULL_AREA)[0]
    if max_quads is not None and walk.shape[0] > max(1, int(max_quads)):
        step = -(-walk.shape[0] // max(1, int(max_quads)))
        walk = walk[::step]
    ix, iy = hf.span_cells()
    x0 = hf.bmin[0] + ix[walk].astype(np.float32) * hf.cs
    y0 = hf.bmin[1] + iy[walk].astype(np.float32) * hf.cs
    z = hf.bmin[2] + hf.smax[walk].astype(np.float32) * hf.ch
    x1, y1 = x0 + hf.cs, y0 + hf.cs
    corners = np.stack(
        [
            np.stack([x0, y0, z], axis=1),
            np.stack([x1, y0, z], axis=1),
            np.stack([x1, y1, z], axis=1),
            np.stack([x0, y1, z], axis=1),
        ],
        axis=1,
    ).reshape(-1, 3)
    n = walk.shape[0]
    return (
        corners.astype(np.float32),
        np.full(n, 4, dtype=np.int32),
        np.arange(4 * n, dtype=np.int32),
        np.zeros(n, dtype=np.int32),
        np.arange(n, dtype=np.int32),
    )


def _detail_overlay(detail, pmesh):
    meshes = np.asarray(detail.meshes, dtype=np.int64)
    tris = np.asarray(detail.tris, dtype=np.int64)
    poly = np.repeat(np.arange(meshes.shape[0], dtype=np.int64), meshes[:, 3])
    tri_verts = tris[:, :3] + meshes[poly, 0][:, None]
    verts = np.array(detail.verts, dtype=np.float32).reshape(-1, 3)
    # Recast stores detail vertices one cell height above the span top ("is this offset
    # necessary?" says its source); the overlay sits on the span top, like the polygons.
    verts[:, 2] -= np.float32(pmesh.ch)
    a, b, c = (verts[tri_verts[:, i]].astype(np.float64) for i in range(3))
    up = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    tri_verts[up < 0] = tri_verts[up < 0][:, ::-1]
    return (
        verts,
        np.full(tri_verts.shape[0], 3, dtype=np.int32),
        tri_verts.astype(np.int32).ravel(),
        np.asarray(pmesh.regs, dtype=np.int32)[poly],
        poly.astype(np.int32),
    )


def _polymesh_overlay(pmesh):
    verts = pmesh.world_verts()
    nvp = int(pmesh.nvp)
    ids = pmesh.polys[:, :nvp].astype(np.int64)
    used = ids != 0xFFFF
    return (
        verts.astype(np.float32),
        used.sum(axis=1).astype(np.int32),
        ids[used].astype(np.int32),
        pmesh.regs.astype(np.int32),
        np.arange(ids.shape[0], dtype=np.int32),
    )


def check_input(verts, tris) -> tuple[np.ndarray, np.ndarray]:
    """Validate a triangle soup; return float32 (n, 3) verts and int32 (m, 3) tris (copies)."""
    try:
        v = np.array(verts, dtype=np.float32)
        t = np.array(tris)
    except (TypeError, ValueError) as exc:
        raise VoxNavError(f"verts/tris must be numeric arrays: {exc}") from exc
    if v.ndim != 2 or v.shape[1] != 3:
        raise VoxNavError(f"verts must have shape (n, 3), got {v.shape}")
    if t.size == 0:
        raise VoxNavError(
            "the scene has no triangles to voxelize: add or select mesh objects (or check the "
            "geometry source setting)"
        )
    if t.ndim != 2 or t.shape[1] != 3:
        raise VoxNavError(f"tris must have shape (m, 3), got {t.shape}")
    limits.whole_indices(t)
    # Bounds first (no temporaries): a per-element mask of a 9 M-triangle soup costs 50 MiB
    # plus an int64 copy, and is only needed to name the first bad triangle. In the given
    # dtype: a cast to int64 first would wrap 2**63 (uint64) or 1e20 to -9223372036854775808.
    if t.min() < 0 or t.max() >= v.shape[0]:
        bad = (t < 0) | (t >= v.shape[0])
        row = int(np.nonzero(bad.any(axis=1))[0][0])
        raise VoxNavError(
            f"triangle {row} refers to vertex {int(t[row][bad[row]][0])}, but there are only "
            f"{v.shape[0]} vertices (valid indices are 0..{v.shape[0] - 1})"
        )
    # The whole array first (a flat reduction); the per-vertex test only to name the bad ones.
    if not np.isfinite(v).all():
        finite = np.isfinite(v).all(axis=1)
        bad_vert = int(np.nonzero(~finite)[0][0])
        used = np.isin(t, np.nonzero(~finite)[0]).any(axis=1)
        raise VoxNavError(
            f"{int((~finite).sum())} vertices have NaN or infinite coordinates (first: vertex "
            f"{bad_vert} = {tuple(float(c) for c in v[bad_vert])}), used by "
            f"{int(used.sum())} triangles: fix or remove that geometry"
        )
    return v, t.astype(np.int32, copy=False)  # t is already this function's own copy


def grid_bounds(verts, config: NavConfig) -> tuple[np.ndarray, np.ndarray]:
    """The build volume: the config's bounds, else all vertices' bounding box (no padding)."""
    if config.bounds_min is not None and config.bounds_max is not None:
        return (
            np.asarray(config.bounds_min, dtype=np.float32),
            np.asarray(config.bounds_max, dtype=np.float32),
        )
    # Per coordinate over a contiguous copy: a reduction over the long axis of an (n, 3)
    # array runs three values at a time (510k vertices: 27 ms against 0.7 ms).
    by_axis = np.ascontiguousarray(np.asarray(verts).T)
    return by_axis.min(axis=1), by_axis.max(axis=1)


def estimate_memory(verts, tris, bmin, bmax, cs: float) -> tuple[int, int, int]:
    """(columns, fragment bound, estimated rasterization peak bytes): see `core.memory`."""
    return memory.estimate_memory(verts, tris, bmin, bmax, cs)


def bake(
    verts,
    tris,
    config: NavConfig | None = None,
    *,
    stop_after: str = "navmesh",
    progress: Progress | None = None,
    volumes: tuple[AreaVolume, ...] = (),
    ctx: BuildContext | None = None,
    reachable_from=None,
    prune_mode: str = "remove",
    offmesh_links: OffMeshLinks | None = None,
) -> BakeResult:
    """Run the stages on a triangle soup and return a `BakeResult`.

    verts float32 (n, 3) world Z-up [Units: wu]; tris int (m, 3); stop_after "heightfield"
    (stages 1-3) or "navmesh" (every stage). ``volumes``: `AreaVolume` s painted after
    erosion, in order. ``ctx``: the build context that collects warnings and stage timings (a
    new one when None; ``progress(fraction 0..1, stage name)`` becomes its progress callback).
    The result's ``warnings`` and ``timings`` are the context's. An empty navigation mesh is
    not an error: ``result.empty`` is set and a warning names the likely cause.
    ``reachable_from``: None (no pruning) or float (k, 3) Z-up points [Units: wu]; after the
    navmesh stages, `prune_bake` removes (``prune_mode`` "remove") or disables ("disable") the
    polygons not reachable from them (`core.prune`). The Recast stages are untouched by it.
    ``offmesh_links``: hand-made off-mesh links (`core.offmesh.OffMeshLinks`), kept in
    ``result.offmesh_links`` for the navmesh; None: none.
    """
    config = (config or NavConfig()).validate()
    if stop_after not in ("heightfield", "navmesh"):
        raise VoxNavError(f"stop_after must be 'heightfield' or 'navmesh', got {stop_after!r}")
    stages = HEIGHTFIELD_STAGES if stop_after == "heightfield" else STAGES
    if ctx is None:
        ctx = BuildContext(progress_fn=progress, stages=stages)
    else:
        if progress is not None and ctx.progress_fn is None:
            ctx.progress_fn = progress
        if not ctx.stages:
            ctx.stages = stages
    for volume in volumes:
        volume.validate()
    if reachable_from is not None:  # before the stages, not after them
        reachable_from = checked_points(reachable_from, prune_mode)
    verts, tris = check_input(verts, tris)
    derived = config.derived()
    bmin, bmax = grid_bounds(verts, config)
    if not (bmax > bmin).any():
        raise VoxNavError("the geometry has no extent: all vertices are at the same point")
    limits.check_grid(bmin, bmax, config, derived, ctx)
    estimates: dict[str, int] = {}
    memory.check_bake(verts, tris, bmin, bmax, config, stop_after == "navmesh", estimates)
    limits.check_columns(bmin, bmax, config)
    if stop_after == "navmesh":
        limits.check_navmesh_extent(bmin, bmax, config)
    limits.check_precision(bmin, bmax, derived, ctx)
    width, height = grid_size(bmin, bmax, derived.cs)
    result = _heightfield_stages(
        verts, tris, config, derived, bmin, bmax, width, height, ctx, estimates
    )
    if offmesh_links is not None:
        result.offmesh_links = offmesh_links
    if stop_after == "navmesh":
        inputs = memory.input_bytes(verts, tris)
        open_stages(result, derived, volumes, ctx, estimates, inputs).finish()
        warn_unplaced_links(result, offmesh_links, ctx)
        if reachable_from is not None:
            prune_bake(result, reachable_from, prune_mode, ctx=ctx)
    result.memory_estimates = estimates
    result.counts = _counts(result, tris.shape[0])
    _warn_if_empty(result, verts, tris, ctx)
    ctx.done()
    result.timings = ctx.timings
    result.warnings = ctx.warnings
    return result


def _heightfield_stages(
    verts: np.ndarray,
    tris: np.ndarray,
    config: NavConfig,
    derived: DerivedConfig,
    bmin: np.ndarray,
    bmax: np.ndarray,
    width: int,
    height: int,
    ctx: BuildContext,
    estimates: dict[str, int],
) -> BakeResult:
    """Stages 1-3: walkable marking, rasterization and the enabled filters."""
    with ctx.stage("mark"):
        tri_areas = rasterize.mark_walkable_triangles(verts, tris, config.agent_max_slope, ctx=ctx)
    limits.check_heights(verts, tris, tri_areas, bmin, bmax, config, derived, ctx)
    with ctx.stage("rasterize"):
        hf = rasterize.rasterize_triangles(
            verts, tris, tri_areas, bmin, bmax, derived.cs, derived.ch, width, height,
            derived.walkable_climb, ctx=ctx,
        )  # fmt: skip
    hf, stage_areas = filter_stages(
        hf, config, derived, ctx, estimates, memory.input_bytes(verts, tris)
    )
    return BakeResult(
        config=config,
        bmin=np.asarray(bmin, dtype=np.float32),
        bmax=np.asarray(bmax, dtype=np.float32),
        width=width,
        height=height,
        tri_areas=tri_areas,
        heightfield=hf,
        stage_areas=stage_areas,
    )


def filter_stages(
    hf: Heightfield,
    config: NavConfig,
    derived: DerivedConfig,
    ctx: BuildContext,
    estimates: dict[str, int],
    inputs: int,
) -> tuple[Heightfield, dict[str, np.ndarray]]:
    """Stage 3 on a freshly rasterized heightfield: the enabled filters (they depend on
    walkable_climb, walkable_height and the filter switches only). Returns the filtered
    heightfield and the area array after rasterization and after each filter ("raster",
    "lowhang", "ledge", "lowheight"). ``inputs``: bytes held of the input triangles."""
    stage_areas = {"raster": hf.area}
    memory.check(memory.estimate_filters(hf, inputs), config, record=estimates)
    if config.filter_low_hanging_obstacles:
        with ctx.stage("filter_low_hanging"):
            area = filters.filter_low_hanging_obstacles(hf, derived.walkable_climb, ctx=ctx)
        hf = hf.with_area(area)
    stage_areas["lowhang"] = hf.area
    if config.filter_ledge_spans:
        with ctx.stage("filter_ledge"):
            area = filters.filter_ledge_spans(
                hf, derived.walkable_height, derived.walkable_climb, ctx=ctx
            )
        hf = hf.with_area(area)
    stage_areas["ledge"] = hf.area
    if config.filter_walkable_low_height_spans:
        with ctx.stage("filter_low_height"):
            area = filters.filter_walkable_low_height_spans(hf, derived.walkable_height, ctx=ctx)
        hf = hf.with_area(area)
    stage_areas["lowheight"] = hf.area
    return hf, stage_areas


def open_stages(
    result: BakeResult,
    derived: DerivedConfig,
    volumes: tuple[AreaVolume, ...],
    ctx: BuildContext,
    estimates: dict[str, int],
    inputs: int,
    compact: CompactHeightfield | None = None,
    erosion_distance: np.ndarray | None = None,
) -> OpenBake:
    """Stages 4-5 of a navmesh bake: the compact heightfield, erosion and the volumes' marks
    (then the returned `OpenBake`'s stages: the distance field, regions, contours, polygons and
    detail).

    Before each large stage its memory estimate (`core.memory`, from the real counts so far;
    ``inputs``: bytes held of the input) is recorded in ``estimates`` and checked; here those
    of the stages up to contours. With ``compact`` (stage 4's result for this heightfield,
    walkable_height and walkable_climb, from `compact_stage`; taken over and modified) stage
    4 is skipped; with ``erosion_distance`` (`area.erosion_distance` of that compact
    heightfield) erosion only thresholds it. Sets ``result.area_initial``. Returns the bake
    with its compact heightfield's areas opened for partitioning."""
    config = result.config
    solid = result.heightfield.span_count
    guard = functools.partial(memory.check, config=config, record=estimates)
    if compact is None:
        chf = compact_stage(result.heightfield, config, derived, ctx, estimates, inputs)
    else:
        chf = compact
    result.area_initial = chf.area.copy()
    for name in ("erode", "distance", "regions", "contours"):
        guard(memory.estimate_open_stage(name, chf, solid, inputs))
    # The regions' floor sets are sized once the regions are known.
    ctx.memory_check = functools.partial(memory.check_more, config=config, record=estimates)
    with ctx.stage("erode"):
        if erosion_distance is None:
            chf.area = erode_walkable_area(chf, derived.walkable_radius, ctx=ctx)
        else:
            chf.area = erode_by_distance(chf.area, erosion_distance, derived.walkable_radius)
    for volume in volumes:
        chf.area = volume.apply(chf)
    return OpenBake(result, chf, derived, ctx, estimates, inputs)


@dataclass
class OpenBake:
    """A navmesh bake between stages 5 and 6 (`open_stages`): the result being filled, the
    compact heightfield with its areas opened, the settings, the context, the memory estimates
    and the bytes held of the input. `finish` runs the later stages in order; a caller baking
    several navmeshes at once may run a stage for all of them in between (`core.agents`)."""

    result: BakeResult
    chf: CompactHeightfield
    derived: DerivedConfig
    ctx: BuildContext
    estimates: dict[str, int]
    inputs: int

    def finish(self) -> None:
        """Stages 6-10: `distance_stage`, `regions_stage`, `contours_stage`,
        `polymesh_stage`, `detail_stages`."""
        self.distance_stage()
        self.regions_stage()
        self.contours_stage()
        self.polymesh_stage()
        self.detail_stages()

    def distance_stage(self, distance: tuple[np.ndarray, np.ndarray, int] | None = None) -> None:
        """The distance field. With ``distance`` (`build_distance_field`'s result for the
        compact heightfield, made by the caller, who records its time) it is not run again."""
        result, chf, ctx = self.result, self.chf, self.ctx
        if distance is None:
            with ctx.stage("distance"):
                distance = build_distance_field(chf, ctx=ctx)
        dist_raw, dist, max_distance = distance
        result.dist_raw = dist_raw
        chf.dist, chf.max_distance = dist, max_distance

    def regions_stage(self, regions: tuple[np.ndarray, int] | None = None) -> None:
        """The regions (the configured partitioning) on the distance field. With ``regions``
        ((reg, max_regions) of this compact heightfield and settings, made by the caller, who
        records its time) they are not built again."""
        result, chf, derived, ctx = self.result, self.chf, self.derived, self.ctx
        if regions is None:
            assert chf.dist is not None, "the distance stage comes first"
            with ctx.stage("regions"):
                partition = PARTITION_BUILDERS[result.config.partition]
                regions = partition(
                    chf, chf.dist, chf.max_distance, derived.min_region_area,
                    derived.merge_region_area, ctx=ctx,
                )  # fmt: skip
        chf.reg, chf.max_regions = regions
        result.compact = chf

    def contours_stage(self, contours: ContourSet | None = None) -> None:
        """The contours, then the polygon mesh's memory check. With ``contours``
        (`build_contours`' result for the compact heightfield and settings, made by the caller,
        who records its time) they are not built again."""
        result, chf, derived, ctx = self.result, self.chf, self.derived, self.ctx
        if contours is None:
            with ctx.stage("contours"):
                contours = build_contours(
                    chf, float(derived.max_simplification_error), derived.max_edge_len, ctx=ctx
                )
        result.contours = contours
        solid = result.heightfield.span_count
        estimate = memory.estimate_polymesh(result.contours, chf, solid, self.inputs)
        memory.check(estimate, config=result.config, record=self.estimates)

    @property
    def contours(self) -> ContourSet:
        """The contours `contours_stage` made."""
        contours = self.result.contours
        assert contours is not None
        return contours

    def polymesh_stage(self) -> None:
        """The polygon mesh from the contours."""
        with self.ctx.stage("polymesh"):
            self.result.polymesh = build_poly_mesh(
                self.contours, self.derived.max_verts_per_poly, ctx=self.ctx
            )

    def detail_memory_check(self) -> None:
        """The detail mesh's memory check (`core.memory`), on ``result.polymesh``."""
        result = self.result
        solid = result.heightfield.span_count
        estimate = memory.estimate_detail(result.polymesh, self.chf, solid, self.inputs)
        memory.check(estimate, config=result.config, record=self.estimates)

    def detail_stages(self, detail: PolyMeshDetail | None = None) -> None:
        """The detail mesh's memory check, the detail mesh and (with ``auto_links``) the jump
        and drop links, on ``result.polymesh``. With ``detail`` (this bake's detail mesh,
        made by the caller after `detail_memory_check`, who records its time) the detail mesh
        is not built again."""
        result, chf, derived = self.result, self.chf, self.derived
        config = result.config
        if detail is not None:
            result.detail = detail
        else:
            self.detail_memory_check()
            with self.ctx.stage("detail"):
                result.detail = build_poly_mesh_detail(
                    result.polymesh,
                    chf,
                    float(derived.detail_sample_dist),
                    float(derived.detail_sample_max_error),
                    ctx=self.ctx,
                )
        if config.auto_links:
            auto_links_stage(result, derived, self.ctx, self.estimates, self.inputs)


def auto_links_stage(
    result: BakeResult,
    derived: DerivedConfig,
    ctx: BuildContext,
    estimates: dict[str, int] | None = None,
    inputs: int = 0,
) -> None:
    """Stage 11 (with ``auto_links``): jump and drop links found from the navmesh's boundary
    edges (`core.jumplinks`), appended to ``result.offmesh_links`` after the hand-made ones
    with user ids following theirs; ``result.auto_link_count`` says how many. Its memory is
    checked first (`memory.estimate_links`; ``estimates`` records it)."""
    config = result.config
    pmesh, chf = result.polymesh, result.compact
    if pmesh is None or chf is None or pmesh.npolys == 0:
        result.auto_link_count = 0
        return
    spacing, reach = float(config.link_spacing), float(config.max_jump_distance)
    samples, probes = link_work(pmesh, chf, spacing, reach)
    solid = result.heightfield.span_count
    memory.check(
        memory.estimate_links(samples, probes, chf, solid, inputs),
        config,
        record=estimates,
        advice=(  # they grow with the samples and probes, not with the grid
            f"raise link_spacing (now {config.link_spacing:g}) or lower max_jump_distance "
            f"(now {config.max_jump_distance:g})"
        ),
    )
    with ctx.stage("links"):
        links = find_auto_links(
            pmesh, result.detail, chf, result.heightfield, **link_settings(config, derived)
        )
    hand = result.offmesh_links
    first_id = int(hand.user_id.max()) + 1 if len(hand) else 0
    links = dataclasses.replace(links, user_id=(links.user_id + first_id).astype(np.uint32))
    result.offmesh_links = hand.concatenate(links)
    result.auto_link_count = len(links)
    drop_links_detour_leaves_out(result, ctx)


def drop_links_detour_leaves_out(result: BakeResult, ctx: BuildContext) -> None:
    """Take out of ``result`` the automatic links its Detour data would not store (their start
    not within the agent's climb of the navmesh's height range, dtCreateNavMeshData's rule:
    they start on the voxel floor, one cell height under the surface, so an agent_max_climb
    below one cell height lost them all, while the count, the arcs and the JSON kept them),
    with a warning."""
    links, count = result.offmesh_links, int(result.auto_link_count)
    pmesh = result.polymesh
    if not count or pmesh is None or pmesh.npolys == 0:
        return
    from .nav.navdata import stored_links

    config = result.config
    hand = len(links) - count
    # What its one Detour tile stores, read without making the tile's data.
    stored = stored_links(pmesh, result.detail, links, float(np.float32(config.agent_max_climb)))
    stored[:hand] = True  # hand-made ones are the user's (`warn_unplaced_links` names them)
    if stored.all():
        return
    result.offmesh_links = links.subset(stored)
    result.auto_link_count = int(stored[hand:].sum())
    ctx.warn(links_left_out_warning(int((~stored).sum()), count, config))


def links_left_out_warning(dropped: int, count: int, config: NavConfig) -> str:
    """The warning for ``dropped`` of ``count`` automatic links Detour would not keep."""
    return (
        f"{dropped} of {count} automatic link(s) left out: they start more than "
        f"agent_max_climb ({config.agent_max_climb:g}) outside the navmesh's heights, where "
        "Detour does not keep them (links start on the voxel floor, one cell height under the "
        "surface): raise agent_max_climb to at least cell_height"
    )


def _links_navdata(result: BakeResult, links: OffMeshLinks):
    """The Detour data (`core.nav.navdata.NavMeshData`, no BV tree) of ``result``'s solo
    navmesh with ``links``, its agent as the .bin stores it: which links it keeps."""
    from .nav.navdata import create_nav_mesh_data

    config = result.config
    assert result.polymesh is not None, "a navmesh bake"
    return create_nav_mesh_data(
        result.polymesh,
        result.detail,
        walkable_height=float(np.float32(config.agent_height)),
        walkable_radius=float(np.float32(config.agent_radius)),
        walkable_climb=float(np.float32(config.agent_max_climb)),
        build_bv_tree=False,
        offmesh=links,
    )


def warn_unplaced_links(result: BakeResult, links: OffMeshLinks | None, ctx: BuildContext):
    """Warn about the hand-made ``links`` whose start is off the baked navmesh (Detour leaves
    them out of the .bin and of queries) or whose end joins no polygon (no path takes them;
    `core.offmesh.link_warnings`)."""
    pmesh = result.polymesh
    if links is None or len(links) == 0 or pmesh is None or pmesh.npolys == 0:
        return
    from .nav.navmesh import NavMesh
    from .offmesh import link_warnings

    for message in link_warnings(links, lambda: NavMesh.from_data(_links_navdata(result, links))):
        ctx.warn(message)


def prune_bake(
    result: BakeResult, points, mode: str = "remove", *, ctx: BuildContext | None = None
) -> PruneReport | None:
    """Island pruning on a finished navmesh bake, in place: ``result.polymesh`` / ``detail``
    become the pruned meshes, ``result.prune`` the report, ``counts`` are updated and the
    pruning's warnings appended to ``result.warnings``. points: float (k, 3) Z-up [Units: wu];
    none (k = 0) prunes nothing. mode: "remove" | "disable" (`core.prune.prune_islands`).
    Returns the report, or None when the bake has no polygon mesh (a heightfield bake)."""
    if result.polymesh is None:
        return None
    own_ctx = ctx is None
    ctx = ctx if ctx is not None else BuildContext(warnings=list(result.warnings))
    config = result.config
    with ctx.stage("prune"):
        pmesh, detail, report = prune_islands(
            result.polymesh,
            result.detail,
            checked_points(points, mode),
            mode=mode,
            walkable_height=float(np.float32(config.agent_height)),
            walkable_radius=float(np.float32(config.agent_radius)),
            walkable_climb=float(np.float32(config.agent_max_climb)),
            ctx=ctx,
            offmesh_links=result.offmesh_links,
        )
    result.polymesh, result.detail, result.prune = pmesh, detail, report
    links = result.offmesh_links
    if links is not None and report.links_cut.size:  # they go with the removed polygons
        keep = ~np.isin(links.user_id, report.links_cut)
        hand = len(links) - int(result.auto_link_count)  # automatic links come last
        result.auto_link_count = int(keep[hand:].sum())
        result.offmesh_links = links.subset(keep)
    if report.polys_cut and mode == "remove":  # the heights Detour keeps links within moved
        drop_links_detour_leaves_out(result, ctx)
    if result.counts:
        if "auto_links" in result.counts:
            result.counts["auto_links"] = int(result.auto_link_count)
        result.counts["polys"] = int(pmesh.npolys)
        result.counts["poly_verts"] = int(pmesh.nverts)
        result.counts["polys_pruned"] = int(report.polys_cut)
        if detail is not None:
            result.counts["detail_tris"] = int(detail.ntris)
            result.counts["detail_verts"] = int(detail.nverts)
    if own_ctx:
        result.warnings = ctx.warnings
        result.timings = {**result.timings, "prune": ctx.timings.get("prune", 0.0)}
    return report


def compact_stage(
    hf: Heightfield,
    config: NavConfig,
    derived: DerivedConfig,
    ctx: BuildContext,
    estimates: dict[str, int],
    inputs: int,
) -> CompactHeightfield:
    """Stage 4: the compact heightfield of a filtered heightfield (depends on walkable_height
    and walkable_climb only), after its memory estimate is recorded and checked."""
    memory.check(memory.estimate_compact(hf, inputs), config, record=estimates)
    with ctx.stage("compact"):
        return build_compact_heightfield(
            hf, derived.walkable_height, derived.walkable_climb, ctx=ctx
        )


def _warn_if_empty(result: BakeResult, verts: np.ndarray, tris: np.ndarray, ctx: BuildContext):
    """Mark an empty result and warn with its likely cause (see `explain_empty`)."""
    if result.polymesh is not None:
        result.empty = result.polymesh.npolys == 0
        what = "the navigation mesh is empty (0 polygons)"
    else:
        result.empty = result.counts.get("walkable_spans", 0) == 0
        what = "no span is walkable"
    if result.empty:
        ctx.warn(f"{what}: {explain_empty(result, verts, tris)}")


def _bounds_miss_text(config: NavConfig, verts: np.ndarray) -> str:
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    return (
        f"the bounds {_xyz(config.bounds_min)}..{_xyz(config.bounds_max)} miss the "
        f"geometry, which spans {_xyz(lo)}..{_xyz(hi)}: move or widen the bounds"
    )


def _no_walkable_text(config: NavConfig, down: int, n_tris: int) -> str:
    if down > 0:
        return (
            f"{down} of {n_tris} triangles face down; only up-facing surfaces are walkable: "
            "flip the normals of the floors (Blender: Mesh > Normals > Recalculate Outside)"
        )
    return (
        f"no triangle is flatter than agent_max_slope ({config.agent_max_slope:g} degrees): "
        "raise agent_max_slope or check the geometry's orientation (Z is up)"
    )


def explain_empty_geometry(config: NavConfig, verts, tris) -> str | None:
    """`explain_empty`'s causes that the geometry shows without a bake (a tiled bake has no
    whole-world counts): bounds that miss it, or no walkable triangle (facing down, or
    steeper than the slope limit); None when neither. verts (n, 3) Z-up [Units: wu]."""
    v = np.asarray(verts, dtype=np.float32)
    if v.shape[0] == 0:
        return None
    if config.bounds_min is not None and config.bounds_max is not None:
        lo, hi = v.min(axis=0), v.max(axis=0)
        bmin = np.asarray(config.bounds_min, dtype=np.float32)
        bmax = np.asarray(config.bounds_max, dtype=np.float32)
        if (bmax < lo).any() or (bmin > hi).any():
            return _bounds_miss_text(config, v)
    areas = rasterize.mark_walkable_triangles(v, tris, config.agent_max_slope)
    if not areas.any():
        return _no_walkable_text(config, count_down_facing(v, tris), int(np.shape(tris)[0]))
    return None


def explain_empty(result: BakeResult, verts: np.ndarray, tris: np.ndarray) -> str:
    """The likely cause of an empty bake, as a sentence a user can act on.

    Checked in pipeline order: bounds that miss the geometry, triangles facing down, slopes
    steeper than the limit, no clearance, the agent radius eroding everything, regions too small.
    """
    config = result.config
    counts = result.counts
    n_tris = int(tris.shape[0])
    if counts.get("spans", 0) == 0:
        if config.bounds_min is not None:
            return _bounds_miss_text(config, verts)
        return "no triangle was rasterized: check the geometry"
    down = count_down_facing(verts, tris)
    if counts.get("walkable_triangles", 0) == 0:
        return _no_walkable_text(config, down, n_tris)
    hint = ""
    if down * 2 > n_tris:
        hint = (
            f" ({down} of {n_tris} triangles face down; only up-facing surfaces are walkable: "
            "flip normals/recalculate outside)"
        )
    if counts.get("walkable_spans", 0) == 0:
        return (
            f"no walkable surface has agent_height ({config.agent_height:g}) of clearance and "
            f"stays within agent_max_climb ({config.agent_max_climb:g}) of its neighbours: lower "
            f"agent_height or check the floors{hint}"
        )
    if "walkable_after_erode" in counts and counts["walkable_after_erode"] == 0:
        return (
            f"the agent is wider than every passage: agent_radius {config.agent_radius:g} "
            f"erodes all {counts['walkable_spans']:,} walkable spans (passages narrower than "
            f"{2 * config.agent_radius:g} are closed): lower agent_radius{hint}"
        )
    if counts.get("regions", 1) == 0:
        compact = getattr(result, "compact", None)
        widest = getattr(compact, "max_distance", None)
        if config.partition == "watershed" and (
            config.region_min_size <= 0 or (widest is not None and int(widest) == 0)
        ):
            # Recast's watershed floods from the highest even level of the distance field
            # down to 0 exclusive: where every span lies on an edge (distance 0) it starts
            # none, whatever region_min_size is.
            return (
                "the walkable surfaces are too narrow for the watershed partitioning to start "
                "a region (it starts them away from every edge): try partition monotone or "
                f"layers, a smaller cell_size ({config.cell_size:g}), or wider floors{hint}"
            )
        return (
            f"every walkable region is smaller than region_min_size ({config.region_min_size:g}"
            f" cells squared): lower region_min_size{hint}"
        )
    return f"no polygon could be built from the walkable regions: check the settings{hint}"


def count_down_facing(verts: np.ndarray, tris: np.ndarray) -> int:
    """Triangles whose normal (counter-clockwise winding, Z-up) points down."""
    v = np.asarray(verts, dtype=np.float64)
    t = np.asarray(tris, dtype=np.int64)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    nz = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    return int(np.count_nonzero(nz < 0))


def _xyz(values) -> str:
    return "(" + ", ".join(f"{float(v) + 0.0:g}" for v in values) + ")"


def _counts(result: BakeResult, n_tris: int) -> dict[str, int]:
    hf = result.heightfield
    counts = {
        "triangles": int(n_tris),
        "walkable_triangles": int(np.count_nonzero(result.tri_areas)),
        "width": int(result.width),
        "height": int(result.height),
        "spans": hf.span_count,
        "walkable_spans": int(np.count_nonzero(hf.area)),
        # Sums apart: no span-sized int64 temporary.
        "voxels": int(hf.smax.sum(dtype=np.int64)) - int(hf.smin.sum(dtype=np.int64)),
    }
    if result.compact is not None:
        chf = result.compact
        counts["compact_spans"] = chf.span_count
        counts["walkable_after_erode"] = int(np.count_nonzero(chf.area))
        reg = chf.reg if chf.reg is not None else np.zeros(0, dtype=np.uint16)
        # Ids are 16-bit: a histogram, not a sort of every span.
        counts["regions"] = int(np.count_nonzero(np.bincount(reg, minlength=1)[1:]))
    if result.polymesh is not None:
        counts["polys"] = int(result.polymesh.polys.shape[0])
        counts["poly_verts"] = int(result.polymesh.verts.shape[0])
    if result.detail is not None:
        counts["detail_tris"] = int(result.detail.tris.shape[0])
        counts["detail_verts"] = int(result.detail.verts.shape[0])
    if result.prune is not None:
        counts["polys_pruned"] = int(result.prune.polys_cut)
    if result.config.auto_links:
        counts["auto_links"] = int(result.auto_link_count)
    return counts
