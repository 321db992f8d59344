"""Tiled bakes and live dynamic obstacles in the viewport (DetourTileCache's workflow).

With ``Scene.voxnav.tile_size`` > 0, Build Navmesh bakes in tiles (`core.tilecache.TileCache`,
RecastDemo's tile mesh) and keeps each tile's cached compact heightfield in memory
(`CACHES`, by scene). Objects ticked **Dynamic Obstacle** (``Object.voxnav.dynamic_obstacle``)
are not geometry: each becomes an obstacle shape (`core.obstacles`) from its bounding box and
world matrix, painting its Area id (0 blocks). A persistent depsgraph handler notices when such
an object moves, changes, appears or disappears (or its tick changes) and, debounced by
`DEBOUNCE` seconds, rebuilds only the tiles it touched, rewrites the overlay, relinks the stored
navmesh and re-runs the live test path (`live.update_path`); never a full rebake. The panel
shows how many tiles the last change rebuilt and how long it took. Headless (``bpy.app.background``,
no event loop to run timers) the rebuild runs at once.

Without tiles (Tile Size 0) dynamic obstacles are painted as area volumes during the solo bake
(`solo_volumes`); moving one then needs a rebake. The cache lives in memory: after reopening a
.blend, Build Navmesh once to make obstacles live again.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ..core import obstacles as core_obstacles
from ..core.errors import VoxNavError
from . import gather as gather_mod
from . import live

#: Seconds the handler waits after a change before rebuilding (changes meanwhile join in).
DEBOUNCE = 0.15
#: AUTO picks a cylinder when the footprint is square within this share and every vertex lies
#: within the inscribed circle (1 + this) (a cylinder's or sphere's do; a cube's corners not).
ROUND_TOLERANCE = 0.02
#: A turn about Z within this many radians of a multiple of 90 degrees counts as unturned.
YAW_TOLERANCE = 1e-4


@dataclass
class LiveTiles:
    """One scene's tile cache and its obstacles: object session uid -> (obstacle id, shape)."""

    cache: Any
    obstacles: dict[int, tuple[int, core_obstacles.Obstacle]] = field(default_factory=dict)
    #: Last problem per object name (e.g. outside every tile), shown in the panel.
    problems: dict[str, str] = field(default_factory=dict)


#: The live tile cache of each scene (by ``Scene.session_uid``), in memory only.
CACHES: dict[int, LiveTiles] = {}


# -------------------------------------------------------------------------------------------
# Shapes from objects


def _round_footprint(obj, half: np.ndarray) -> bool:
    """Is the object's mesh round in its local X/Y (a cylinder, a sphere)?"""
    if obj.type != "MESH" or obj.data is None or len(obj.data.vertices) < 8:
        return False
    if abs(half[0] - half[1]) > ROUND_TOLERANCE * max(half[0], half[1], 1e-9):
        return False
    flat = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", flat)
    co = flat.reshape(-1, 3).astype(np.float64)
    centre = (co.min(axis=0) + co.max(axis=0)) / 2
    radial = np.hypot(co[:, 0] - centre[0], co[:, 1] - centre[1])
    return bool(radial.max() <= half[0] * (1 + ROUND_TOLERANCE))


def obstacle_shape(obj, depsgraph=None) -> core_obstacles.Obstacle:
    """The obstacle of an object from its local bounding box and world matrix (Z-up world).

    BOX: the world-axis-aligned box around the 8 transformed corners. ORIENTED_BOX: the local
    box's X/Y half sizes scaled by the matrix, turned by the yaw of the object's X axis, its Z
    the world extent. CYLINDER: an upright cylinder on the world extent's bottom, radius the
    larger scaled half size. AUTO: CYLINDER for a round mesh, else BOX when the yaw is a
    multiple of 90 degrees, else ORIENTED_BOX. Area: ``Object.voxnav.area_id`` (0 blocks).
    """
    evaluated = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    corners = np.array([tuple(c) for c in evaluated.bound_box], dtype=np.float64)
    matrix = np.array(evaluated.matrix_world, dtype=np.float64)
    world = corners @ matrix[:3, :3].T + matrix[:3, 3]
    lo, hi = world.min(axis=0), world.max(axis=0)
    local_lo, local_hi = corners.min(axis=0), corners.max(axis=0)
    half_local = (local_hi - local_lo) / 2
    axis_x, axis_y = matrix[:3, 0], matrix[:3, 1]
    half = np.array(
        [half_local[0] * np.linalg.norm(axis_x), half_local[1] * np.linalg.norm(axis_y)]
    )
    yaw = math.atan2(axis_x[1], axis_x[0])
    area = int(obj.voxnav.area_id)
    kind = obj.voxnav.obstacle_shape
    if kind == "AUTO":
        quarter = abs(yaw / (math.pi / 2) - round(yaw / (math.pi / 2))) * (math.pi / 2)
        if _round_footprint(obj, half_local):
            kind = "CYLINDER"
        elif quarter < YAW_TOLERANCE:
            kind = "BOX"
        else:
            kind = "ORIENTED_BOX"
    # Keep every size > 0 (a flat plane as an obstacle still has a footprint).
    tiny = 1e-3
    if kind == "CYLINDER":
        centre = (lo + hi) / 2
        radius = max(float(half.max()), tiny)
        height = max(float(hi[2] - lo[2]), tiny)
        return core_obstacles.cylinder((centre[0], centre[1], lo[2]), radius, height, area)
    if kind == "ORIENTED_BOX":
        centre_local = (local_lo + local_hi) / 2
        centre = matrix[:3, :3] @ centre_local + matrix[:3, 3]
        extents = (max(half[0], tiny), max(half[1], tiny), max((hi[2] - lo[2]) / 2, tiny))
        return core_obstacles.oriented_box(
            (centre[0], centre[1], (lo[2] + hi[2]) / 2), extents, yaw, area
        )
    hi = np.maximum(hi, lo + tiny)
    return core_obstacles.box(lo, hi, area)


def dynamic_objects(scene, view_layer=None) -> list:
    """The scene's visible objects ticked Dynamic Obstacle."""
    out = []
    for obj in scene.objects:
        if not gather_mod.is_dynamic_obstacle(obj) or gather_mod.is_output(obj):
            continue
        if view_layer is not None and not obj.visible_get(view_layer=view_layer):
            continue
        out.append(obj)
    return out


def solo_volumes(context) -> tuple:
    """AreaVolumes of the dynamic obstacles, for a solo bake (no live rebuilds)."""
    depsgraph = context.evaluated_depsgraph_get()
    return tuple(
        obstacle_shape(obj, depsgraph).volume()
        for obj in dynamic_objects(context.scene, context.view_layer)
    )


# -------------------------------------------------------------------------------------------
# The tiled bake


def bake_tiled(context, gathered, config, volumes, timings: dict, progress=None) -> Any:
    """Build Navmesh with tiles: the tile cache, the scene's obstacles, overlay, live path.

    Returns the bake's `bake.BakeOutcome` (its ``result`` is None: a tiled bake has no single
    heightfield; the voxels are not drawn). Raises VoxNavError with nothing written."""
    from ..core.tilecache import TileCache
    from . import bake, properties, writeback

    scene = context.scene
    settings = scene.voxnav
    total_tiles = [1]

    def tile_progress(done: int, total: int) -> None:
        total_tiles[0] = total
        if progress is not None:
            progress(done / max(total, 1), "tiles")

    t0 = time.perf_counter()
    cache = TileCache.build(
        gathered.verts,
        gathered.tris,
        config,
        int(settings.tile_size),
        volumes=tuple(volumes),
        workers=1,  # in Blender's process: no pool of Blender processes
        progress=tile_progress,
    )
    timings["tiles"] = time.perf_counter() - t0
    live_tiles = LiveTiles(cache)
    t0 = time.perf_counter()
    _sync(scene, live_tiles, context.evaluated_depsgraph_get(), context.view_layer)
    cache.update()
    timings["obstacles"] = time.perf_counter() - t0
    npolys = sum(t.npolys for t in cache.tiles.values())
    outcome = bake.BakeOutcome(None, gathered, config, timings=timings)  # type: ignore[arg-type]
    outcome.warnings = [w for t in cache.tiles.values() for w in t.warnings]
    if config.auto_links:
        outcome.warnings.append(
            "Auto Links finds jump and drop links on solo bakes only: set Tile Size to 0 to "
            "find them (this tiled bake has none)"
        )
    outcome.counts = {
        "triangles": gathered.triangle_count,
        "tiles": len(cache.tiles),
        "polys": npolys,
        "obstacles": len(live_tiles.obstacles),
        "objects": len(gathered.sources),
    }
    if npolys == 0:
        outcome.empty = True
        message = "Empty navmesh: no tile has a polygon (check the agent and walkable settings)"
        properties.store_warnings(settings, outcome.warnings, message)
        return outcome
    t0 = time.perf_counter()
    CACHES[scene.session_uid] = live_tiles
    bake.LAST.pop(scene.session_uid, None)  # the solo bake's result no longer matches
    from ..core.heightfield import Heightfield

    empty_hf = Heightfield(
        0, 0, np.asarray(cache.grid.bmin), np.asarray(cache.grid.bmax), cache.grid.cs,
        np.float32(config.derived().ch), np.zeros(1, np.int64), np.zeros(0, np.uint16),
        np.zeros(0, np.uint16), np.zeros(0, np.uint8),
    )  # fmt: skip
    writeback.write_voxels(scene, empty_hf, settings.voxel_display, 1)
    _write(scene, live_tiles)
    writeback.apply_visibility(scene)
    writeback.use_material_colors(context, scene)
    timings["writeback"] = time.perf_counter() - t0
    properties.store_figures(settings, "navmesh", outcome.counts, timings, "")
    properties.store_warnings(settings, outcome.warnings)
    settings.obstacle_status = f"{len(live_tiles.obstacles)} obstacle(s), {len(cache.tiles)} tiles"
    settings.obstacle_tiles_rebuilt = 0
    settings.obstacle_seconds = 0.0
    return outcome


def _write(scene, live_tiles: LiveTiles) -> None:
    """Overlay and stored navmesh from the cache, then the live test path."""
    from . import bake, live, writeback

    writeback.write_overlay(
        scene, live_tiles.cache.overlay(), bake.overlay_lift(scene.voxnav.cell_height), True
    )
    writeback.write_links(scene, None, 0.0)  # tiled bakes have no automatic links
    live.store_navmesh_tiles(scene, live_tiles.cache.navmesh)
    live.update_path(scene)


def _sync(scene, live_tiles: LiveTiles, depsgraph, view_layer) -> bool:
    """Bring the cache's obstacles in line with the scene's dynamic objects; True when some
    tile is dirty. An obstacle the cache refuses (outside every tile) is left out and
    recorded in ``problems``."""
    cache = live_tiles.cache
    current = {obj.session_uid: obj for obj in dynamic_objects(scene, view_layer)}
    for uid in [u for u in live_tiles.obstacles if u not in current]:
        obstacle_id, _ = live_tiles.obstacles.pop(uid)
        cache.remove(obstacle_id)
    live_tiles.problems.clear()
    for uid, obj in current.items():
        try:
            shape = obstacle_shape(obj, depsgraph)
            known = live_tiles.obstacles.get(uid)
            if known is None:
                live_tiles.obstacles[uid] = (cache.add(shape), shape)
            elif known[1] != shape:
                cache.replace(known[0], shape)
                live_tiles.obstacles[uid] = (known[0], shape)
        except VoxNavError as exc:
            live_tiles.problems[obj.name] = str(exc)
            if uid in live_tiles.obstacles:
                cache.remove(live_tiles.obstacles.pop(uid)[0])
    return bool(cache.dirty)


def changed(scene, depsgraph=None, view_layer=None) -> bool:
    """Would `rebuild` change anything (an obstacle moved, appeared, went or changed)?"""
    live_tiles = CACHES.get(scene.session_uid)
    if live_tiles is None:
        return False
    current = {obj.session_uid: obj for obj in dynamic_objects(scene, view_layer)}
    if set(current) != set(live_tiles.obstacles):
        return True
    for uid, obj in current.items():
        try:
            if obstacle_shape(obj, depsgraph) != live_tiles.obstacles[uid][1]:
                return True
        except VoxNavError:
            return True
    return False


def rebuild(scene, depsgraph=None, view_layer=None) -> Any:
    """Rebuild the tiles the scene's obstacle changes touched; update overlay, navmesh, path
    and the panel figures. Returns the `core.tilecache.UpdateReport`, or None without a tile
    cache."""
    live_tiles = CACHES.get(scene.session_uid)
    if live_tiles is None:
        return None
    settings = scene.voxnav
    start = time.perf_counter()
    _sync(scene, live_tiles, depsgraph, view_layer)
    try:
        report = live_tiles.cache.update()
    except VoxNavError as exc:
        settings.obstacle_status = f"rebuild failed, navmesh unchanged: {exc}"
        return None
    if report.rebuilt:
        _write(scene, live_tiles)
    seconds = time.perf_counter() - start
    settings.obstacle_tiles_rebuilt = len(report.rebuilt)
    settings.obstacle_seconds = seconds
    problems = "; ".join(f"{name}: {text}" for name, text in live_tiles.problems.items())
    settings.obstacle_status = problems or (
        f"{len(report.rebuilt)} tile(s) rebuilt in {seconds * 1000:.0f} ms"
    )
    return report


# -------------------------------------------------------------------------------------------
# The handler (debounced)

_updating = False
_pending: set[int] = set()


def _flush() -> None:
    """Rebuild every scene waiting for it (the timer's callback; also called headless)."""
    global _updating
    scenes = {s.session_uid: s for s in bpy.data.scenes}
    waiting = list(_pending)
    _pending.clear()
    _updating = True
    try:
        for uid in waiting:
            scene = scenes.get(uid)
            if scene is None:
                continue
            view_layer = bpy.context.view_layer if bpy.context.scene == scene else None
            depsgraph = bpy.context.evaluated_depsgraph_get() if view_layer is not None else None
            rebuild(scene, depsgraph, view_layer)
    finally:
        _updating = False


def _timer() -> None:
    _flush()
    return None  # run once


@bpy.app.handlers.persistent
def _on_depsgraph_update(scene, depsgraph) -> None:
    """Notice obstacle changes; rebuild after `DEBOUNCE` seconds (at once when headless)."""
    if _updating or scene.session_uid not in CACHES:
        return
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else None
    if not changed(scene, depsgraph, view_layer):
        return
    _pending.add(scene.session_uid)
    if bpy.app.background:
        _flush()
    elif not bpy.app.timers.is_registered(_timer):
        bpy.app.timers.register(_timer, first_interval=DEBOUNCE)


@bpy.app.handlers.persistent
def _on_load_post(*_args) -> None:
    CACHES.clear()
    _pending.clear()


# -------------------------------------------------------------------------------------------
# Panel


class VOXNAV_PT_tiles_obstacles(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "VoxNav"
    bl_label = "Tiles & Obstacles"
    bl_parent_id = "VOXNAV_PT_main"
    bl_order = 8
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        settings = scene.voxnav
        col = layout.column(align=True)
        col.use_property_split = True
        col.prop(settings, "tile_size")
        obj = context.active_object
        if obj is not None and not gather_mod.is_output(obj):
            col = layout.column(align=True)
            col.prop(obj.voxnav, "dynamic_obstacle", text=f"{obj.name}: Dynamic Obstacle")
            sub = col.column(align=True)
            sub.active = obj.voxnav.dynamic_obstacle
            sub.prop(obj.voxnav, "obstacle_shape")
            sub.prop(obj.voxnav, "area_id")
        count = len(dynamic_objects(scene))
        live_tiles = CACHES.get(scene.session_uid)
        if settings.tile_size == 0:
            layout.label(text=f"{count} obstacle(s); Tile Size > 0 makes them live", icon="INFO")
        elif live_tiles is None:
            layout.label(text=f"{count} obstacle(s): Build Navmesh to make them live", icon="INFO")
        else:
            col = layout.column(align=True)
            col.label(text=f"{count} obstacle(s), {len(live_tiles.cache.tiles)} tiles")
            col.label(
                text=f"Last change: {settings.obstacle_tiles_rebuilt} tile(s) in "
                f"{settings.obstacle_seconds * 1000:.0f} ms"
            )
            if settings.obstacle_status:
                col.label(text=settings.obstacle_status)


classes = (VOXNAV_PT_tiles_obstacles,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    live.install_handler(bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update)
    live.install_handler(bpy.app.handlers.load_post, _on_load_post)


def unregister() -> None:
    for handlers, fn in (
        (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
        (bpy.app.handlers.load_post, _on_load_post),
    ):
        if fn in handlers:
            handlers.remove(fn)
    if bpy.app.timers.is_registered(_timer):
        bpy.app.timers.unregister(_timer)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    CACHES.clear()
    _pending.clear()
