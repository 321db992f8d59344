"""NavConfig: the user's settings in world units, and the voxel-unit integers Recast derives.

Every setting carries Recast/RecastDemo's name (snake_case), default, units and limits. The
derived integers are computed in float32 in the same operation order as RecastDemo's
``Sample_SoloMesh::build`` so they match Recast bit for bit (in float64, floor(0.9/0.1) is 8
where Recast gets 9).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from .errors import VoxNavError

F32 = np.float32

#: Area id of a blocked (non-walkable) span or triangle. [Recast: RC_NULL_AREA]
NULL_AREA = 0
#: Area id of a walkable span or triangle. [Recast: RC_WALKABLE_AREA]
WALKABLE_AREA = 63
#: Largest span height Recast can store. [Units: ch] [Recast: RC_SPAN_MAX_HEIGHT]
SPAN_MAX_HEIGHT = 8191
#: Refuse grids whose estimated working memory exceeds this many bytes unless told otherwise.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3

PARTITIONS = ("watershed", "monotone", "layers")


@dataclass
class NavConfig:
    """User settings for one bake, in world units (metres in Blender).

    Defaults are RecastDemo's. ``validate()`` raises `VoxNavError` naming the setting and a
    value that works; ``derived()`` gives Recast's voxel-unit integers.
    """

    #: Horizontal voxel size. [Units: wu] [Limit: > 0]
    cell_size: float = 0.3
    #: Vertical voxel size. [Units: wu] [Limit: > 0]
    cell_height: float = 0.2
    #: Height of the agent; spans with less clearance are not walkable. [Units: wu] [Limit: > 0]
    agent_height: float = 2.0
    #: Radius of the agent; the walkable area is eroded by it. [Units: wu] [Limit: >= 0]
    agent_radius: float = 0.6
    #: Highest ledge the agent can step up. [Units: wu] [Limit: >= 0]
    agent_max_climb: float = 0.9
    #: Steepest walkable slope. [Units: degrees] [Limit: 0 <= value < 90]
    agent_max_slope: float = 45.0
    #: Regions smaller than this side length squared are removed. [Units: cells] [Limit: >= 0]
    region_min_size: float = 8.0
    #: Regions smaller than this side length squared merge into neighbours. [Units: cells]
    region_merge_size: float = 20.0
    #: Longest contour edge along a wall; 0 = no limit. [Units: wu] [Limit: >= 0]
    edge_max_len: float = 12.0
    #: Largest distance a simplified contour may stray from the raw one. [Units: wu] [Limit: >= 0]
    edge_max_error: float = 1.3
    #: Most vertices in one navmesh polygon. [Limit: 3 <= value <= 6]
    verts_per_poly: int = 6
    #: Detail mesh sample spacing, in cells; below 0.9 the detail mesh only follows the polygons.
    detail_sample_dist: float = 6.0
    #: Largest height error of the detail mesh, in cell heights. [Limit: >= 0]
    detail_sample_max_error: float = 1.0
    #: Region partitioning: "watershed" (Recast's default), "monotone" or "layers".
    partition: str = "watershed"
    #: Let a blocked span just above a walkable one (within climb) become walkable: curbs, steps.
    filter_low_hanging_obstacles: bool = True
    #: Mark spans next to a drop larger than the climb as not walkable.
    filter_ledge_spans: bool = True
    #: Mark spans with less than agent height of clearance as not walkable.
    filter_walkable_low_height_spans: bool = True
    #: Optional build volume (x, y, z) min/max corners, Z-up; None = the geometry's bounds.
    bounds_min: tuple[float, float, float] | None = None
    bounds_max: tuple[float, float, float] | None = None
    #: Refuse a grid whose estimated working memory exceeds this. [Units: bytes] [Limit: > 0]
    memory_limit: int = DEFAULT_MEMORY_LIMIT

    # ------------------------------------------------------------------
    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def as_dict(self) -> dict:
        return asdict(self)

    def replace(self, **changes) -> NavConfig:
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            raise VoxNavError(
                f"unknown setting(s) {', '.join(unknown)}; known settings: "
                f"{', '.join(self.field_names())}"
            )
        data = self.as_dict()
        data.update(changes)
        return NavConfig(**data)

    def validate(self) -> NavConfig:
        """Check every setting; raise `VoxNavError` naming the first bad one. Returns self."""
        positive = ("cell_size", "cell_height", "agent_height")
        non_negative = (
            "agent_radius",
            "agent_max_climb",
            "region_min_size",
            "region_merge_size",
            "edge_max_len",
            "edge_max_error",
            "detail_sample_dist",
            "detail_sample_max_error",
        )
        for name in positive + non_negative + ("agent_max_slope",):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise VoxNavError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(float(value)):
                raise VoxNavError(f"{name} must be finite, got {value!r}")
        for name in positive:
            if float(getattr(self, name)) <= 0:
                raise VoxNavError(
                    f"{name} must be greater than 0, got {getattr(self, name)!r} "
                    f"(RecastDemo's default is {getattr(NavConfig, name)})"
                )
        for name in non_negative:
            if float(getattr(self, name)) < 0:
                raise VoxNavError(
                    f"{name} must not be negative, got {getattr(self, name)!r} "
                    f"(RecastDemo's default is {getattr(NavConfig, name)})"
                )
        if not 0 <= float(self.agent_max_slope) < 90:
            raise VoxNavError(
                f"agent_max_slope must be in [0, 90) degrees, got {self.agent_max_slope!r}"
            )
        if int(self.verts_per_poly) != self.verts_per_poly or not 3 <= self.verts_per_poly <= 6:
            raise VoxNavError(
                f"verts_per_poly must be a whole number from 3 to 6, got {self.verts_per_poly!r}"
            )
        if self.partition not in PARTITIONS:
            raise VoxNavError(
                f"partition must be one of {', '.join(PARTITIONS)}, got {self.partition!r}"
            )
        if (self.bounds_min is None) != (self.bounds_max is None):
            raise VoxNavError("give both bounds_min and bounds_max, or neither")
        if self.bounds_min is not None:
            lo = np.asarray(self.bounds_min, dtype=np.float64)
            hi = np.asarray(self.bounds_max, dtype=np.float64)
            if lo.shape != (3,) or hi.shape != (3,):
                raise VoxNavError("bounds_min and bounds_max must each be three numbers (x, y, z)")
            if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
                raise VoxNavError("bounds_min and bounds_max must be finite")
            if not (hi > lo).all():
                raise VoxNavError(
                    f"bounds_max {tuple(hi)} must be greater than bounds_min {tuple(lo)} "
                    "on every axis"
                )
        if not self.memory_limit > 0:
            raise VoxNavError(f"memory_limit must be positive bytes, got {self.memory_limit!r}")
        derived = self.derived()
        if derived.walkable_height < 3:
            raise VoxNavError(
                f"agent_height {self.agent_height} is less than 3 cell heights "
                f"({3 * self.cell_height:g}); raise agent_height or lower cell_height"
            )
        return self

    def derived(self) -> DerivedConfig:
        """Recast's rcConfig integers, computed in float32 as RecastDemo does."""
        cs, ch = F32(self.cell_size), F32(self.cell_height)
        detail_dist = F32(self.detail_sample_dist)
        return DerivedConfig(
            cs=cs,
            ch=ch,
            walkable_slope_angle=F32(self.agent_max_slope),
            walkable_height=int(np.ceil(F32(self.agent_height) / ch)),
            walkable_climb=int(np.floor(F32(self.agent_max_climb) / ch)),
            walkable_radius=int(np.ceil(F32(self.agent_radius) / cs)),
            max_edge_len=int(F32(self.edge_max_len) / cs),
            max_simplification_error=F32(self.edge_max_error),
            min_region_area=int(F32(self.region_min_size) * F32(self.region_min_size)),
            merge_region_area=int(F32(self.region_merge_size) * F32(self.region_merge_size)),
            max_verts_per_poly=int(self.verts_per_poly),
            detail_sample_dist=F32(0.0) if detail_dist < F32(0.9) else F32(cs * detail_dist),
            detail_sample_max_error=F32(ch * F32(self.detail_sample_max_error)),
        )


@dataclass(frozen=True)
class DerivedConfig:
    """Recast's rcConfig values in voxel units (float32 where Recast uses float)."""

    cs: np.float32
    ch: np.float32
    walkable_slope_angle: np.float32
    #: [Units: ch]
    walkable_height: int
    #: [Units: ch] also the span merge threshold of rasterization
    walkable_climb: int
    #: [Units: cells]
    walkable_radius: int
    #: [Units: cells]
    max_edge_len: int
    #: [Units: wu]
    max_simplification_error: np.float32
    #: [Units: cells]
    min_region_area: int
    #: [Units: cells]
    merge_region_area: int
    max_verts_per_poly: int
    #: [Units: wu]
    detail_sample_dist: np.float32
    #: [Units: wu]
    detail_sample_max_error: np.float32


def walkable_threshold(slope_degrees: float) -> np.float32:
    """cos of the max slope in float32, as Recast: cosf(angle / 180.0f * RC_PI)."""
    angle = F32(F32(slope_degrees) / F32(180.0)) * F32(math.pi)
    return F32(math.cos(float(F32(angle))))


def grid_size(bmin, bmax, cs) -> tuple[int, int]:
    """Columns along X and Y: int((bmax - bmin) / cs + 0.5) in float32 (Recast's rcCalcGridSize).

    ``bmin``/``bmax`` are Z-up world corners (float32 (3,)); returns (width, height).
    """
    bmin = np.asarray(bmin, dtype=F32)
    bmax = np.asarray(bmax, dtype=F32)
    cs = F32(cs)
    width = int(F32(F32(bmax[0] - bmin[0]) / cs) + F32(0.5))
    height = int(F32(F32(bmax[1] - bmin[1]) / cs) + F32(0.5))
    return width, height
