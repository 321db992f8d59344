"""Scene.voxnav: the bake settings (VOXNAV_PG_settings) and the last bake's figures.

Every ``NavConfig`` setting is a property of the same name with RecastDemo's default. Two are
stored in Blender's natural unit and converted by `to_config` / `set_from_config`:

- ``agent_max_slope`` is an ANGLE property (radians inside Blender, degrees in the UI); the core
  takes degrees.
- ``memory_limit`` is in MiB here (a Blender IntProperty is 32-bit); the core takes bytes.

``bounds_min``/``bounds_max`` are used only when ``use_bounds`` is on.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..core.config import NavConfig

MIB = 1024 * 1024

#: Settings whose Blender value differs in unit from the core's: name -> (to core, to Blender).
_UNIT_CONVERSIONS = {
    "agent_max_slope": (lambda v: round(math.degrees(v), 4), lambda v: math.radians(v)),
    "memory_limit": (lambda v: int(v) * MIB, lambda v: max(1, int(round(v / MIB)))),
}

_DEFAULTS = NavConfig()


def _distance(name: str, description: str, minimum: float, soft_max: float, **kw) -> Any:
    return FloatProperty(
        name=name,
        description=description,
        default=getattr(_DEFAULTS, kw.pop("field")),
        min=minimum,
        soft_max=soft_max,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=3,
        **kw,
    )


def _update_visibility(self, context) -> None:
    from . import writeback

    writeback.apply_visibility(self.id_data)


def _update_voxel_display(self, context) -> None:
    from . import bake

    bake.redraw_voxels(self.id_data)


class VOXNAV_PG_figure(bpy.types.PropertyGroup):
    """One figure of the last bake: a count or a stage time."""

    # ``name`` (from PropertyGroup) is the figure's name: "spans", "rasterize", ...
    count: IntProperty(name="Count", default=0)  # type: ignore[valid-type]
    seconds: FloatProperty(name="Seconds", default=0.0, precision=4)  # type: ignore[valid-type]


class VOXNAV_PG_settings(bpy.types.PropertyGroup):
    """VoxNav bake settings of a scene (Recast's names, RecastDemo's defaults)."""

    # --- Rasterization ------------------------------------------------------------------
    cell_size: _distance(  # type: ignore[valid-type]
        "Cell Size",
        "Horizontal voxel size (Recast cs). Smaller is more precise and slower",
        0.001,
        2.0,
        field="cell_size",
        soft_min=0.01,
        step=1,
    )
    cell_height: _distance(  # type: ignore[valid-type]
        "Cell Height",
        "Vertical voxel size (Recast ch)",
        0.001,
        2.0,
        field="cell_height",
        soft_min=0.01,
        step=1,
    )
    # --- Agent --------------------------------------------------------------------------
    agent_height: _distance(  # type: ignore[valid-type]
        "Height",
        "Agent height: spans with less free space above are not walkable",
        0.001,
        5.0,
        field="agent_height",
        soft_min=0.1,
    )
    agent_radius: _distance(  # type: ignore[valid-type]
        "Radius",
        "Agent radius: the walkable area is eroded away from walls by this much",
        0.0,
        5.0,
        field="agent_radius",
    )
    agent_max_climb: _distance(  # type: ignore[valid-type]
        "Max Climb",
        "Highest ledge or step the agent can climb",
        0.0,
        5.0,
        field="agent_max_climb",
    )
    agent_max_slope: FloatProperty(  # type: ignore[valid-type]
        name="Max Slope",
        description="Steepest walkable slope (the core takes degrees)",
        default=math.radians(_DEFAULTS.agent_max_slope),
        min=0.0,
        max=math.radians(89.9),
        subtype="ANGLE",
        unit="ROTATION",
        precision=1,
    )
    # --- Region -------------------------------------------------------------------------
    region_min_size: FloatProperty(  # type: ignore[valid-type]
        name="Min Region Size",
        description="Regions with fewer than this squared cells are removed [Units: cells]",
        default=_DEFAULTS.region_min_size,
        min=0.0,
        soft_max=150.0,
        precision=1,
    )
    region_merge_size: FloatProperty(  # type: ignore[valid-type]
        name="Merged Region Size",
        description="Regions with fewer than this squared cells merge into a neighbour "
        "[Units: cells]",
        default=_DEFAULTS.region_merge_size,
        min=0.0,
        soft_max=150.0,
        precision=1,
    )
    partition: EnumProperty(  # type: ignore[valid-type]
        name="Partitioning",
        description="How the walkable area is split into regions",
        items=[
            ("watershed", "Watershed", "Best regions, slowest (RecastDemo's default)"),
            ("monotone", "Monotone", "Fast; long thin polygons"),
            ("layers", "Layers", "Non-overlapping layers; good for tiles"),
        ],
        default=_DEFAULTS.partition,
    )
    # --- Polygonization -----------------------------------------------------------------
    edge_max_len: _distance(  # type: ignore[valid-type]
        "Max Edge Length",
        "Longest contour edge along a wall; 0 = no limit",
        0.0,
        50.0,
        field="edge_max_len",
    )
    edge_max_error: FloatProperty(  # type: ignore[valid-type]
        name="Max Edge Error",
        description="How far a simplified contour may stray from the voxel outline",
        default=_DEFAULTS.edge_max_error,
        min=0.0,
        soft_min=0.1,
        soft_max=3.0,
        precision=2,
    )
    verts_per_poly: IntProperty(  # type: ignore[valid-type]
        name="Verts Per Poly",
        description="Most vertices in one navmesh polygon",
        default=_DEFAULTS.verts_per_poly,
        min=3,
        max=6,
    )
    # --- Detail mesh --------------------------------------------------------------------
    detail_sample_dist: FloatProperty(  # type: ignore[valid-type]
        name="Sample Distance",
        description="Detail mesh sample spacing in cells; below 0.9 no extra samples",
        default=_DEFAULTS.detail_sample_dist,
        min=0.0,
        soft_max=16.0,
        precision=1,
    )
    detail_sample_max_error: FloatProperty(  # type: ignore[valid-type]
        name="Max Sample Error",
        description="Largest height error of the detail mesh, in cell heights",
        default=_DEFAULTS.detail_sample_max_error,
        min=0.0,
        soft_max=16.0,
        precision=1,
    )
    # --- Filters ------------------------------------------------------------------------
    filter_low_hanging_obstacles: BoolProperty(  # type: ignore[valid-type]
        name="Low Hanging Obstacles",
        description="Blocked spans within climb above walkable ones become walkable (curbs)",
        default=_DEFAULTS.filter_low_hanging_obstacles,
    )
    filter_ledge_spans: BoolProperty(  # type: ignore[valid-type]
        name="Ledge Spans",
        description="Spans next to a drop higher than the climb are not walkable",
        default=_DEFAULTS.filter_ledge_spans,
    )
    filter_walkable_low_height_spans: BoolProperty(  # type: ignore[valid-type]
        name="Walkable Low Height Spans",
        description="Spans with less than agent height of free space are not walkable",
        default=_DEFAULTS.filter_walkable_low_height_spans,
    )
    # --- Build volume and memory --------------------------------------------------------
    use_bounds: BoolProperty(  # type: ignore[valid-type]
        name="Limit Bounds",
        description="Bake only inside the box Bounds Min..Bounds Max",
        default=False,
    )
    bounds_min: FloatVectorProperty(  # type: ignore[valid-type]
        name="Bounds Min",
        size=3,
        default=(-10.0, -10.0, -10.0),
        subtype="XYZ_LENGTH",
        unit="LENGTH",
    )
    bounds_max: FloatVectorProperty(  # type: ignore[valid-type]
        name="Bounds Max",
        size=3,
        default=(10.0, 10.0, 10.0),
        subtype="XYZ_LENGTH",
        unit="LENGTH",
    )
    memory_limit: IntProperty(  # type: ignore[valid-type]
        name="Memory Limit (MiB)",
        description="Refuse grids whose working memory would exceed this [Units: MiB]",
        default=_DEFAULTS.memory_limit // MIB,
        min=1,
        soft_max=65536,
    )
    # --- Geometry source ----------------------------------------------------------------
    source: EnumProperty(  # type: ignore[valid-type]
        name="Geometry",
        description="Which objects the navmesh is built from",
        items=[
            ("VISIBLE", "All Visible", "Every visible mesh-like object and instance"),
            ("SELECTED", "Selected", "Selected objects (and what they instance)"),
            ("COLLECTION", "Collection", "The objects of one collection"),
        ],
        default="VISIBLE",
    )
    source_collection: PointerProperty(  # type: ignore[valid-type]
        name="Collection",
        type=bpy.types.Collection,
        description="Collection to build from when Geometry is Collection",
    )
    # --- Display ------------------------------------------------------------------------
    show_voxels: BoolProperty(  # type: ignore[valid-type]
        name="Show Voxels",
        description="Draw the voxel heightfield",
        default=True,
        update=_update_visibility,
    )
    show_navmesh: BoolProperty(  # type: ignore[valid-type]
        name="Show Navmesh",
        description="Draw the navigation overlay",
        default=True,
        update=_update_visibility,
    )
    voxel_display: EnumProperty(  # type: ignore[valid-type]
        name="Voxels As",
        items=[
            ("VOXELS", "Cubes", "One cube per voxel"),
            ("SPANS", "Spans", "One stretched box per span (far fewer instances)"),
        ],
        default="VOXELS",
        update=_update_voxel_display,
    )
    max_voxels_drawn: IntProperty(  # type: ignore[valid-type]
        name="Max Drawn",
        description="Draw at most this many cubes (the top of every span first)",
        default=1_000_000,
        min=1,
        soft_max=10_000_000,
        update=_update_voxel_display,
    )
    # --- Last bake (written by the operators) -------------------------------------------
    last_stage: StringProperty(name="Last Bake", default="")  # type: ignore[valid-type]
    last_message: StringProperty(name="Last Message", default="")  # type: ignore[valid-type]
    path_status: StringProperty(  # type: ignore[valid-type]
        name="Path", description="Result of the last path query between Start and Goal", default=""
    )
    path_length: FloatProperty(  # type: ignore[valid-type]
        name="Path Length",
        description="Length of the straight path from Start to Goal",
        default=0.0,
        unit="LENGTH",
    )
    path_polys: IntProperty(  # type: ignore[valid-type]
        name="Path Polygons", description="Navmesh polygons the path crosses", default=0
    )
    last_seconds: FloatProperty(name="Total Seconds", default=0.0)  # type: ignore[valid-type]
    last_counts: CollectionProperty(type=VOXNAV_PG_figure)  # type: ignore[valid-type]
    last_timings: CollectionProperty(type=VOXNAV_PG_figure)  # type: ignore[valid-type]


def to_config(settings) -> NavConfig:
    """A validated ``NavConfig`` from ``Scene.voxnav`` (units converted for the core)."""
    values: dict[str, Any] = {}
    for name in NavConfig.field_names():
        if name in ("bounds_min", "bounds_max"):
            values[name] = tuple(getattr(settings, name)) if settings.use_bounds else None
            continue
        value = getattr(settings, name)
        if name in _UNIT_CONVERSIONS:
            value = _UNIT_CONVERSIONS[name][0](value)
        elif isinstance(value, float):
            # Blender stores float32: give the core the shortest decimal that round-trips,
            # so 0.3 in the UI is 0.3 in the core, as in RecastDemo.
            value = float(f"{value:.7g}")
        values[name] = value
    return NavConfig(**values).validate()


def set_from_config(settings, config: NavConfig) -> None:
    """Write a ``NavConfig``'s values into ``Scene.voxnav`` (units converted for Blender)."""
    for name in NavConfig.field_names():
        value = getattr(config, name)
        if name in ("bounds_min", "bounds_max"):
            if value is not None:
                setattr(settings, name, tuple(float(v) for v in value))
                settings.use_bounds = True
            continue
        if name in _UNIT_CONVERSIONS:
            value = _UNIT_CONVERSIONS[name][1](value)
        setattr(settings, name, value)


def store_figures(settings, stage: str, counts: dict, timings: dict, message: str) -> None:
    """Record the last bake's counts and stage times on the scene (replacing the previous)."""
    settings.last_stage = stage
    settings.last_message = message
    settings.last_counts.clear()
    for key, value in counts.items():
        item = settings.last_counts.add()
        item.name = str(key)
        item.count = int(min(int(value), 2**31 - 1))
    settings.last_timings.clear()
    for key, value in timings.items():
        item = settings.last_timings.add()
        item.name = str(key)
        item.seconds = float(value)
    settings.last_seconds = float(sum(float(v) for v in timings.values()))


def figure(settings, name: str) -> int | None:
    """A count of the last bake by name, or None."""
    item = settings.last_counts.get(name)
    return None if item is None else int(item.count)


class VOXNAV_PG_object(bpy.types.PropertyGroup):
    """Per-object VoxNav settings (Object.voxnav): an object can paint an area type."""

    area_volume: BoolProperty(  # type: ignore[valid-type]
        name="Area Volume",
        description=(
            "Use this object's bounding box to paint an area type onto the navmesh (Recast's "
            "box volume) instead of baking it as geometry"
        ),
        default=False,
    )
    area_id: IntProperty(  # type: ignore[valid-type]
        name="Area",
        description="Area id painted inside the box: 0 removes the navmesh, 1-62 are your "
        "area types, 63 is plain walkable",
        default=0,
        min=0,
        max=63,
    )


classes = (VOXNAV_PG_figure, VOXNAV_PG_settings, VOXNAV_PG_object)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.voxnav = PointerProperty(type=VOXNAV_PG_settings)  # type: ignore[attr-defined]
    bpy.types.Object.voxnav = PointerProperty(type=VOXNAV_PG_object)  # type: ignore[attr-defined]


def unregister() -> None:
    del bpy.types.Object.voxnav  # type: ignore[attr-defined]
    del bpy.types.Scene.voxnav  # type: ignore[attr-defined]
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
