"""Scene.voxnav: the bake settings (VOXNAV_PG_settings) and the last bake's figures.

Every ``NavConfig`` setting is a property of the same name with RecastDemo's default. Two are
stored in Blender's natural unit and converted by `to_config` / `set_from_config`:

- ``agent_max_slope`` is an ANGLE property (radians inside Blender, degrees in the UI); the core
  takes degrees.
- ``memory_limit`` is in MiB here (a Blender IntProperty is 32-bit); the core takes bytes.

Descriptions (tooltips) and hard limits come from NavConfig's field documentation
(`core.settings_doc`), so the panel, the README and both command lines agree; a value outside
the core's working range cannot be typed in (no silent clamping by the core later).

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
from ..core.errors import VoxNavError
from ..core.limits import MAX_WORKERS
from ..core.settings_doc import tooltip
from .agents import VOXNAV_PG_agent

MIB = 1024 * 1024
#: Most tile worker processes the panel and the batch command's --workers take: the core's
#: one maximum (`core.limits.MAX_WORKERS`).
MAX_TILE_WORKERS = MAX_WORKERS

#: Settings whose Blender value differs in unit from the core's: name -> (to core, to Blender).
_UNIT_CONVERSIONS = {
    "agent_max_slope": (lambda v: round(math.degrees(v), 4), lambda v: math.radians(v)),
    "memory_limit": (lambda v: int(v) * MIB, lambda v: max(1, int(round(v / MIB)))),
}

_DEFAULTS = NavConfig()


def _hard_limits(name: str) -> dict[str, Any]:
    """Blender min/max from the core's working range; an excluded 0 becomes 0.001."""
    doc = NavConfig.doc(name)
    out: dict[str, Any] = {}
    if doc.lo is not None:
        out["min"] = doc.lo if not doc.lo_open else doc.lo + 0.001
    if doc.hi is not None and not doc.hi_open:
        out["max"] = doc.hi
    return out


def _distance(name: str, soft_max: float, **kw) -> Any:
    field = kw.pop("field")
    return FloatProperty(
        name=name,
        description=tooltip(field),
        default=getattr(_DEFAULTS, field),
        soft_max=soft_max,
        subtype="DISTANCE",
        unit="LENGTH",
        precision=3,
        **_hard_limits(field),
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


class VOXNAV_PG_warning(bpy.types.PropertyGroup):
    """One warning of the last bake (shown in the Last Bake panel)."""

    text: StringProperty(name="Warning", default="")  # type: ignore[valid-type]


class VOXNAV_PG_settings(bpy.types.PropertyGroup):
    """VoxNav bake settings of a scene (Recast's names, RecastDemo's defaults)."""

    # --- Rasterization ------------------------------------------------------------------
    cell_size: _distance(  # type: ignore[valid-type]
        "Cell Size",
        2.0,
        field="cell_size",
        soft_min=0.01,
        step=1,
    )
    cell_height: _distance(  # type: ignore[valid-type]
        "Cell Height",
        2.0,
        field="cell_height",
        soft_min=0.01,
        step=1,
    )
    # --- Agent --------------------------------------------------------------------------
    agent_height: _distance(  # type: ignore[valid-type]
        "Height",
        5.0,
        field="agent_height",
        soft_min=0.1,
    )
    agent_radius: _distance(  # type: ignore[valid-type]
        "Radius",
        5.0,
        field="agent_radius",
    )
    agent_max_climb: _distance(  # type: ignore[valid-type]
        "Max Climb",
        5.0,
        field="agent_max_climb",
    )
    agent_max_slope: FloatProperty(  # type: ignore[valid-type]
        name="Max Slope",
        description=tooltip("agent_max_slope"),
        default=math.radians(_DEFAULTS.agent_max_slope),
        min=0.0,
        max=math.radians(89.99),
        subtype="ANGLE",
        unit="ROTATION",
        precision=1,
    )
    # --- Region -------------------------------------------------------------------------
    region_min_size: FloatProperty(  # type: ignore[valid-type]
        name="Min Region Size",
        description=tooltip("region_min_size"),
        default=_DEFAULTS.region_min_size,
        **_hard_limits("region_min_size"),
        soft_max=150.0,
        precision=1,
    )
    region_merge_size: FloatProperty(  # type: ignore[valid-type]
        name="Merged Region Size",
        description=tooltip("region_merge_size"),
        default=_DEFAULTS.region_merge_size,
        **_hard_limits("region_merge_size"),
        soft_max=150.0,
        precision=1,
    )
    partition: EnumProperty(  # type: ignore[valid-type]
        name="Partitioning",
        description=tooltip("partition"),
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
        50.0,
        field="edge_max_len",
    )
    edge_max_error: FloatProperty(  # type: ignore[valid-type]
        name="Max Edge Error",
        description=tooltip("edge_max_error"),
        default=_DEFAULTS.edge_max_error,
        **_hard_limits("edge_max_error"),
        soft_min=0.1,
        soft_max=3.0,
        precision=2,
    )
    verts_per_poly: IntProperty(  # type: ignore[valid-type]
        name="Verts Per Poly",
        description=tooltip("verts_per_poly"),
        default=_DEFAULTS.verts_per_poly,
        min=3,
        max=6,
    )
    # --- Detail mesh --------------------------------------------------------------------
    detail_sample_dist: FloatProperty(  # type: ignore[valid-type]
        name="Sample Distance",
        description=tooltip("detail_sample_dist"),
        default=_DEFAULTS.detail_sample_dist,
        **_hard_limits("detail_sample_dist"),
        soft_max=16.0,
        precision=1,
    )
    detail_sample_max_error: FloatProperty(  # type: ignore[valid-type]
        name="Max Sample Error",
        description=tooltip("detail_sample_max_error"),
        default=_DEFAULTS.detail_sample_max_error,
        **_hard_limits("detail_sample_max_error"),
        soft_max=16.0,
        precision=1,
    )
    # --- Filters ------------------------------------------------------------------------
    filter_low_hanging_obstacles: BoolProperty(  # type: ignore[valid-type]
        name="Low Hanging Obstacles",
        description=tooltip("filter_low_hanging_obstacles"),
        default=_DEFAULTS.filter_low_hanging_obstacles,
    )
    filter_ledge_spans: BoolProperty(  # type: ignore[valid-type]
        name="Ledge Spans",
        description=tooltip("filter_ledge_spans"),
        default=_DEFAULTS.filter_ledge_spans,
    )
    filter_walkable_low_height_spans: BoolProperty(  # type: ignore[valid-type]
        name="Walkable Low Height Spans",
        description=tooltip("filter_walkable_low_height_spans"),
        default=_DEFAULTS.filter_walkable_low_height_spans,
    )
    # --- Automatic off-mesh links (core.jumplinks) ---------------------------------------
    auto_links: BoolProperty(  # type: ignore[valid-type]
        name="Auto Links",
        description=tooltip("auto_links"),
        default=_DEFAULTS.auto_links,
    )
    max_drop: _distance(  # type: ignore[valid-type]
        "Max Drop",
        10.0,
        field="max_drop",
    )
    max_jump_distance: _distance(  # type: ignore[valid-type]
        "Max Jump Distance",
        10.0,
        field="max_jump_distance",
    )
    link_spacing: _distance(  # type: ignore[valid-type]
        "Link Spacing",
        5.0,
        field="link_spacing",
        soft_min=0.1,
    )
    # --- Build volume and memory --------------------------------------------------------
    use_bounds: BoolProperty(  # type: ignore[valid-type]
        name="Limit Bounds",
        description="Bake only inside the box Bounds Min..Bounds Max",
        default=False,
    )
    bounds_min: FloatVectorProperty(  # type: ignore[valid-type]
        name="Bounds Min",
        description=tooltip("bounds_min"),
        size=3,
        default=(-10.0, -10.0, -10.0),
        subtype="XYZ_LENGTH",
        unit="LENGTH",
    )
    bounds_max: FloatVectorProperty(  # type: ignore[valid-type]
        name="Bounds Max",
        description=tooltip("bounds_max"),
        size=3,
        default=(10.0, 10.0, 10.0),
        subtype="XYZ_LENGTH",
        unit="LENGTH",
    )
    memory_limit: IntProperty(  # type: ignore[valid-type]
        name="Memory Limit (MiB)",
        description=tooltip("memory_limit"),
        default=_DEFAULTS.memory_limit // MIB,
        min=max(1, NavConfig.doc("memory_limit").lo // MIB),
        max=NavConfig.doc("memory_limit").hi // MIB,
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
    # --- Agent types (agents.py): one navmesh per row; empty = the Agent settings above --
    agents: CollectionProperty(type=VOXNAV_PG_agent)  # type: ignore[valid-type]
    agent_index: IntProperty(name="Agent", default=0, min=0)  # type: ignore[valid-type]
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
    show_links: BoolProperty(  # type: ignore[valid-type]
        name="Show Links",
        description="Draw the navmesh's off-mesh links (jumps, drops) as arcs",
        default=True,
        update=_update_visibility,
    )
    prune_mode: EnumProperty(  # type: ignore[valid-type]
        name="Prune",
        description=(
            "What a navmesh bake does with the polygons not reachable from any object ticked "
            "Reachable From (core.prune)"
        ),
        items=[
            ("REMOVE", "Remove", "Delete the unreachable polygons from the navmesh"),
            (
                "DISABLE",
                "Disable",
                "Keep them with area 0 and flag disabled (0x10), as RecastDemo's prune tool",
            ),
        ],
        default="REMOVE",
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
    # --- Tiles and dynamic obstacles (voxnav_addon/obstacles.py) -------------------------
    tile_size: IntProperty(  # type: ignore[valid-type]
        name="Tile Size",
        description=(
            "Bake in square tiles of this many cells (RecastDemo's tile mesh; 32-128 is usual). "
            "0 bakes one solo mesh. With tiles, moving, adding or deleting a Dynamic Obstacle "
            "rebuilds only the tiles it touches, live"
        ),
        default=0,
        min=0,
        max=4096,
        soft_max=256,
    )
    tile_workers: IntProperty(  # type: ignore[valid-type]
        name="Tile Workers",
        description=(
            "Tiles baked at once by Build Navmesh with tiles (0: one per core). Worker "
            "processes start with Blender's bundled Python (about a second); 1 bakes tile after "
            "tile in Blender, which suits small scenes"
        ),
        default=1,
        min=0,
        max=MAX_TILE_WORKERS,
        soft_max=32,
    )
    tile_parallel: EnumProperty(  # type: ignore[valid-type]
        name="Parallel Tiles",
        description="How tiles run in parallel when Tile Workers is not 1",
        items=[
            (
                "PROCESSES",
                "Processes",
                "Worker processes (Blender's bundled Python): real speed-up",
            ),
            ("THREADS", "Threads", "Threads in Blender: start at once, small speed-up (the GIL)"),
        ],
        default="PROCESSES",
    )
    tile_cache_agent_keys: StringProperty(  # type: ignore[valid-type]
        name="Agent Tile Cache Keys",
        description=(
            "With agent rows: the bake key of each agent's tile cache, as JSON [[name, key], "
            "...] in row order (their files carry the agent's name)"
        ),
        default="",
        options={"HIDDEN"},
    )
    bake_token: StringProperty(  # type: ignore[valid-type]
        name="Bake Token",
        description=(
            "Names the bake this session holds in memory for the scene (Voxelize or Build "
            "Navmesh without tiles); an undo brings back an older token, and the bake in "
            "memory is then no longer the one shown"
        ),
        default="",
        options={"HIDDEN"},
    )
    tile_cache_key: StringProperty(  # type: ignore[valid-type]
        name="Tile Cache Key",
        description=(
            "Names the last tiled bake's input; its tile cache file (next to the .blend, or in "
            "the extension's user folder) carries the same key"
        ),
        default="",
        options={"HIDDEN"},
    )
    tile_progress: StringProperty(  # type: ignore[valid-type]
        name="Tile Progress", description="Tile k of n of the running tiled bake", default=""
    )
    obstacle_status: StringProperty(  # type: ignore[valid-type]
        name="Obstacles", description="Result of the last live obstacle rebuild", default=""
    )
    obstacle_tiles_rebuilt: IntProperty(  # type: ignore[valid-type]
        name="Tiles Rebuilt", description="Tiles the last obstacle change rebuilt", default=0
    )
    obstacle_seconds: FloatProperty(  # type: ignore[valid-type]
        name="Rebuild Time", description="Wall time of the last obstacle rebuild", default=0.0
    )
    last_counts: CollectionProperty(type=VOXNAV_PG_figure)  # type: ignore[valid-type]
    last_timings: CollectionProperty(type=VOXNAV_PG_figure)  # type: ignore[valid-type]
    last_warnings: CollectionProperty(type=VOXNAV_PG_warning)  # type: ignore[valid-type]


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


def check_kept(holder, name: str, value, given, label: str = "", unit: str = "") -> None:
    """`VoxNavError` when Blender clamped ``value`` (Blender's units) into the property's
    range as it was set (the bake would silently use another value than ``given``, in the
    core's units); ``label``: the setting as the message names it (default ``name``);
    ``unit``: "angle" for a property in radians shown in degrees."""
    kept = getattr(holder, name)
    if not isinstance(value, float | int) or isinstance(value, bool):
        return
    # A few float32 steps apart is a round trip through the core's decimals (`to_config`),
    # not a clamp.
    if abs(float(kept) - float(value)) <= 4e-7 * max(1.0, abs(float(value))):
        return
    if unit == "angle":
        shown = round(math.degrees(kept), 4)
    else:
        shown = _UNIT_CONVERSIONS[name][0](kept) if name in _UNIT_CONVERSIONS else kept
    raise VoxNavError(
        f"{label or name} {given:g} is beyond what the panel holds (it would bake {shown:g}): "
        "give a value within the panel's range"
    )


def set_from_config(settings, config: NavConfig) -> None:
    """Write a ``NavConfig``'s values into ``Scene.voxnav`` (units converted for Blender)."""
    for name in NavConfig.field_names():
        value = getattr(config, name)
        if name in ("bounds_min", "bounds_max"):
            if value is not None:
                setattr(settings, name, tuple(float(v) for v in value))
                settings.use_bounds = True
            continue
        given = value
        if name in _UNIT_CONVERSIONS:
            value = _UNIT_CONVERSIONS[name][1](value)
        setattr(settings, name, value)
        check_kept(settings, name, value, given)


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


def store_warnings(settings, warnings, message: str | None = None) -> None:
    """Record the last bake's warnings on the scene (replacing the previous ones); with
    ``message``, also the Last Bake panel's status line."""
    settings.last_warnings.clear()
    for warning in warnings:
        settings.last_warnings.add().text = str(warning)
    if message is not None:
        settings.last_message = message


def figure(settings, name: str) -> int | None:
    """A count of the last bake by name, or None."""
    item = settings.last_counts.get(name)
    return None if item is None else int(item.count)


def _tag_object(self, context) -> None:
    """A changed obstacle setting re-evaluates the object, so the live obstacle handler
    (voxnav_addon/obstacles.py) sees it."""
    self.id_data.update_tag()


class VOXNAV_PG_object(bpy.types.PropertyGroup):
    """Per-object VoxNav settings (Object.voxnav): an object can paint an area type, or be a
    dynamic obstacle."""

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
        update=_tag_object,
    )
    reachable_from: BoolProperty(  # type: ignore[valid-type]
        name="Reachable From",
        description=(
            "Agents start here (use an empty): after a navmesh bake, polygons not connected to "
            "any Reachable From object through polygon links are pruned (islands such as "
            "rooftops): removed or disabled, as the Prune setting says"
        ),
        default=False,
    )
    nav_link: BoolProperty(  # type: ignore[valid-type]
        name="Nav Link",
        description=(
            "An off-mesh link (Detour's dtOffMeshConnection) that paths may take, e.g. a jump "
            "or a ladder: from this object's origin to the Link End object's origin, or for a "
            "curve from its first to its last point. Used by solo navmesh bakes"
        ),
        default=False,
    )
    nav_link_end: PointerProperty(  # type: ignore[valid-type]
        name="Link End",
        description="The object whose origin is the link's end point (not needed for a curve)",
        type=bpy.types.Object,
    )
    nav_link_radius: FloatProperty(  # type: ignore[valid-type]
        name="Link Radius",
        description="How far from each end the navmesh may be for the link to connect to it",
        default=0.6,
        min=0.01,
        soft_max=5.0,
        unit="LENGTH",
    )
    nav_link_one_way: BoolProperty(  # type: ignore[valid-type]
        name="One Way",
        description="Agents take the link only from its start to its end (a drop, say)",
        default=False,
    )
    dynamic_obstacle: BoolProperty(  # type: ignore[valid-type]
        name="Dynamic Obstacle",
        description=(
            "A temporary obstacle (DetourTileCache's): not baked as geometry; its shape paints "
            "the Area id (0 blocks) onto the navmesh. With a Tile Size, moving, adding or "
            "deleting it rebuilds only the tiles it touches"
        ),
        default=False,
        update=_tag_object,
    )
    obstacle_shape: EnumProperty(  # type: ignore[valid-type]
        name="Shape",
        description="The obstacle's shape, from the object's bounding box",
        items=[
            ("AUTO", "Auto", "Cylinder for a round object, box when unturned, else oriented box"),
            ("BOX", "Box", "The world-axis-aligned box around the object"),
            ("ORIENTED_BOX", "Oriented Box", "The object's box turned with it about Z"),
            ("CYLINDER", "Cylinder", "An upright cylinder around the object"),
        ],
        default="AUTO",
        update=_tag_object,
    )


classes = (
    VOXNAV_PG_figure, VOXNAV_PG_warning, VOXNAV_PG_agent, VOXNAV_PG_settings, VOXNAV_PG_object,
)  # fmt: skip


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
