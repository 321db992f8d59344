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
(`solo_volumes`); moving one then needs a rebake. A solo bake or Clear ends the tiled bake's
live cache and its record (`forget`): the old tiles never come back on an obstacle change.

The tile cache is saved after every tiled bake (`core.tilecache_io`, one .npz, written
atomically) in the extension's user folder under the bake's key (the newest `USER_CACHE_FILES`
kept), and next to the .blend when it has a path (``NAME.voxnav-tiles.SCENE.npz``, written again
when the .blend is saved under a new name). ``Scene.voxnav.tile_cache_key`` names the bake in
the .blend. Opening the .blend loads the cache that carries that key (next to the .blend first),
so obstacles rebuild their tiles without a rebake; when it is missing, stale or damaged, the
panel says so and the next obstacle change rebakes all tiles once (and saves a new cache).
With agent rows every agent's cache is saved so (``NAME.voxnav-tiles.SCENE.AGENT.npz`` beside
the .blend; ``Scene.voxnav.tile_cache_agent_keys`` holds their keys) and loaded together: if
one of them cannot be loaded, none is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
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
#: Scene custom property: the tiled bake's pruning inputs (JSON: points and mode).
PRUNING_KEY = "voxnav_tile_pruning"
#: Tile cache files kept in the extension's user folder (the newest; one per bake key).
USER_CACHE_FILES = 8
#: False while a caller writes the cache beside a .blend itself (the batch command: it never
#: writes beside its input .blend, and saves its output .blend under a temp name).
SIDECAR = [True]


@dataclass
class LiveTiles:
    """One scene's tile cache and its obstacles: object session uid -> (obstacle id, shape)."""

    cache: Any
    obstacles: dict[int, tuple[int, core_obstacles.Obstacle]] = field(default_factory=dict)
    #: Last problem per object name (e.g. outside every tile), shown in the panel.
    problems: dict[str, str] = field(default_factory=dict)
    #: The bake key (`core.tilecache_io.bake_key`) of the cache's bake.
    key: str = ""
    #: Reachable From points (float64 (k, 3) Z-up) and prune mode: with points, the overlay,
    #: the stored navmesh and the exports are the cache's tiles pruned (`core.prune.
    #: prune_tiled`), again after every rebuild. [Units: wu]
    reachable: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    prune_mode: str = "remove"
    #: The navmesh shown and stored: the cache's, or its pruned copy (`view`).
    navmesh: Any = None
    #: The last pruning's report (`core.prune.PruneReport`), or None without points.
    prune_report: Any = None
    #: With agent rows: this cache is the first agent's (its name here), and ``agents``
    #: holds every agent's live cache by name, this one first (same obstacles each).
    agent_name: str = ""
    agents: dict[str, LiveTiles] = field(default_factory=dict)

    def every(self) -> list[LiveTiles]:
        """This live cache and the other agents' (one entry without agent rows)."""
        return list(self.agents.values()) if self.agents else [self]

    def view(self) -> tuple:
        """(overlay arrays, navmesh, warnings): the cache's tiles, pruned from the Reachable
        From points when there are any (the cache itself stays whole, so later obstacle
        changes rebuild from it); also sets ``navmesh`` and ``prune_report``."""
        cache = self.cache
        if not len(self.reachable):
            self.navmesh, self.prune_report = cache.navmesh, None
            return cache.overlay(), cache.navmesh, []
        from ..core.tilecache import tile_overlay

        pruned, warnings = self.shown_bake()
        self.navmesh = pruned.navmesh()
        return tile_overlay(pruned.tiles), self.navmesh, warnings

    def shown_bake(self) -> tuple[Any, list[str]]:
        """(`core.tiles.TiledBake`, warnings): the cache's current tiles in build order, with
        its off-mesh links, pruned from the Reachable From points when there are any (also
        sets ``prune_report``): the navmesh the overlay shows, for exports."""
        from ..core.context import BuildContext
        from ..core.prune import prune_tiled
        from ..core.tiles import TiledBake

        cache = self.cache
        keys = sorted(cache.tiles, key=lambda k: (k[1], k[0]))  # build order
        tiles = [dataclasses.replace(cache.tiles[k]) for k in keys]  # pruning replaces fields
        shown = TiledBake(cache.config, cache.grid, tiles)
        shown.offmesh_links = cache.links()
        if not len(self.reachable):
            return shown, []
        ctx = BuildContext()
        self.prune_report = prune_tiled(shown, self.reachable, mode=self.prune_mode, ctx=ctx)
        return shown, list(ctx.warnings)


#: The live tile cache of each scene (by ``Scene.session_uid``), in memory only; read it
#: through `live_cache`.
CACHES: dict[int, LiveTiles] = {}


def live_cache(scene) -> LiveTiles | None:
    """The scene's live tile cache, or None when there is none or it is not the bake the
    scene shows: an undo brought back the scene as it was before that bake (its
    ``tile_cache_key`` differs), and exporting it, or redrawing its overlays after an obstacle
    change, would bring the undone bake back. Such a cache is kept for a redo (a saved one of
    the scene's own key loads on the next obstacle change, see `rebuild`). Reads only (polls
    and the panel call it)."""
    live_tiles = CACHES.get(scene.session_uid)
    if live_tiles is not None and live_tiles.key != scene.voxnav.tile_cache_key:
        return None  # kept: a redo brings its key back (a bake or a restore replaces it)
    return live_tiles


# -------------------------------------------------------------------------------------------
# Shapes from objects


def forget(scene) -> None:
    """The scene's navmesh is no longer a tiled bake (a solo bake replaced it, or Clear
    removed it): drop its live tile cache and the record of its saved one, so an obstacle
    change does not bring the old tiles back."""
    CACHES.pop(scene.session_uid, None)
    _pending.discard(scene.session_uid)
    settings = scene.voxnav
    settings.tile_cache_key = ""
    settings.tile_cache_agent_keys = ""
    settings.obstacle_status = ""


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


def _is_upright(matrix: np.ndarray) -> bool:
    """Does the object's local Z axis point straight up or down (turned about Z only)?"""
    axis_z = matrix[:3, 2]
    length = float(np.linalg.norm(axis_z))
    return length > 0 and abs(float(axis_z[2])) >= length * (1 - YAW_TOLERANCE**2)


def _footprint(world_xy: np.ndarray, matrix: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(yaw, centre (2,), half sizes (2,)) of the smallest rectangle around the corners'
    (8, 2) plan positions whose sides follow one of the object's axes seen from above (its X
    axis first): the footprint of an object turned about X or Y. Axis-aligned when every axis
    stands vertical in plan (none has a direction there)."""
    best: tuple[float, float, np.ndarray, np.ndarray] | None = None
    scale = float(np.abs(matrix[:3, :3]).max()) or 1.0
    for k in range(3):
        axis = matrix[:2, k]
        if float(np.hypot(axis[0], axis[1])) <= 1e-9 * scale:
            continue
        yaw = math.atan2(axis[1], axis[0])
        along = np.array([math.cos(yaw), math.sin(yaw)])
        across = np.array([-along[1], along[0]])
        u, v = world_xy @ along, world_xy @ across
        half = np.array([u.max() - u.min(), v.max() - v.min()]) / 2
        centre = along * (u.max() + u.min()) / 2 + across * (v.max() + v.min()) / 2
        size = float(half[0] * half[1])
        if best is None or size < best[0] * (1 - 1e-9):
            best = (size, yaw, centre, half)
    if best is None:
        lo, hi = world_xy.min(axis=0), world_xy.max(axis=0)
        return 0.0, (lo + hi) / 2, (hi - lo) / 2
    return best[1], best[2], best[3]


def obstacle_shape(obj, depsgraph=None) -> core_obstacles.Obstacle:
    """The obstacle of an object from its local bounding box (`gather.local_corners`: an
    empty's is what it instances, or its drawn size) and world matrix (Z-up world).

    BOX: the world-axis-aligned box around the 8 transformed corners. ORIENTED_BOX: the local
    box's X/Y half sizes scaled by the matrix, turned by the yaw of the object's X axis, its Z
    the world extent; for an object tipped over (its Z axis not vertical) the rectangle around
    the corners seen from above along one of its axes (`_footprint`). CYLINDER: an upright
    cylinder on the world extent's bottom, radius the larger half size. AUTO: CYLINDER for a
    round mesh standing upright, else BOX when the yaw is a multiple of 90 degrees, else
    ORIENTED_BOX. Area: ``Object.voxnav.area_id`` (0 blocks).
    """
    evaluated = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    corners = gather_mod.local_corners(obj, depsgraph)
    matrix = np.array(evaluated.matrix_world, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        world = corners @ matrix[:3, :3].T + matrix[:3, 3]
    gather_mod.check_placed(obj, world, "Dynamic Obstacle")
    lo, hi = world.min(axis=0), world.max(axis=0)
    local_lo, local_hi = corners.min(axis=0), corners.max(axis=0)
    half_local = (local_hi - local_lo) / 2
    axis_x, axis_y = matrix[:3, 0], matrix[:3, 1]
    upright = _is_upright(matrix)
    if upright:
        half = np.array(
            [half_local[0] * np.linalg.norm(axis_x), half_local[1] * np.linalg.norm(axis_y)]
        )
        yaw = math.atan2(axis_x[1], axis_x[0])
        centre_xy = (matrix[:3, :3] @ ((local_lo + local_hi) / 2) + matrix[:3, 3])[:2]
    else:  # tipped over: the rectangle around its corners seen from above
        yaw, centre_xy, half = _footprint(world[:, :2], matrix)
    area = int(obj.voxnav.area_id)
    kind = obj.voxnav.obstacle_shape
    if kind == "AUTO":
        quarter = abs(yaw / (math.pi / 2) - round(yaw / (math.pi / 2))) * (math.pi / 2)
        if upright and _round_footprint(obj, half_local):
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
        extents = (max(half[0], tiny), max(half[1], tiny), max((hi[2] - lo[2]) / 2, tiny))
        return core_obstacles.oriented_box(
            (centre_xy[0], centre_xy[1], (lo[2] + hi[2]) / 2), extents, yaw, area
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
    heightfield; the voxels are not drawn). Raises VoxNavError with nothing written.
    ``progress(fraction, "tile k of n")`` after each tile."""
    steps = bake_tiled_steps(context, gathered, config, volumes, timings)
    while True:
        try:
            fraction, text = next(steps)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(fraction, text)


def tile_workers(settings) -> int:
    """Tiles at once in a tiled bake: ``Scene.voxnav.tile_workers`` (0: one per core)."""
    value = int(settings.tile_workers)
    return max(1, os.cpu_count() or 1) if value <= 0 else value


def bake_tiled_steps(context, gathered, config, volumes, timings: dict, workers=None, kind=None):
    """`bake_tiled` one tile at a time: a generator yielding (fraction, "tile k of n") after
    each tile (also shown in ``Scene.voxnav.tile_progress`` and the panel) and returning the
    outcome. Closing it before the end writes nothing (a cancelled modal bake). ``workers``:
    tiles at once (default `tile_workers`; 1 bakes in this thread), ``kind`` "PROCESSES" or
    "THREADS" (default ``Scene.voxnav.tile_parallel``; see `parallel.parallel_executor`)."""
    from ..core.tilecache import TileCache
    from . import bake, properties, writeback

    scene = context.scene
    settings = scene.voxnav
    t0 = time.perf_counter()
    from .parallel import hidden_main, parallel_executor

    executor, note = parallel_executor(
        tile_workers(settings) if workers is None else int(workers),
        str(settings.tile_parallel) if kind is None else kind,
    )
    if note:
        print(f"VoxNav: {note}")
    from .gather import nav_links

    links, unusable = nav_links(context)  # each tile carries the links starting in it
    from ..core.tilecache_io import bake_key
    from . import agents as agents_mod

    # One tile cache per agent row (each an ordinary tiled bake with that agent's settings),
    # or one with the scene's settings.
    configs: list[tuple[str, Any]] = [("", config)]
    if len(settings.agents) > 0:
        from ..core.agents import check_agents

        pairs = check_agents(agents_mod.agent_types(settings), config)
        configs = [(agent.name, agent_config) for agent, agent_config in pairs]
    built: list[LiveTiles] = []
    try:
        for index, (name, agent_config) in enumerate(configs):
            steps = TileCache.build_steps(
                gathered.verts,
                gathered.tris,
                agent_config,
                int(settings.tile_size),
                volumes=tuple(volumes),
                executor=executor,
                workers=1 if executor is None else None,
                offmesh_links=links,
            )
            while True:
                try:
                    with hidden_main():  # worker processes start inside next()
                        done, total = next(steps)
                except StopIteration as stop:
                    agent_cache = stop.value
                    break
                text = f"tile {done} of {total}" + (f" ({name})" if name else "")
                settings.tile_progress = text
                yield (index + done / max(total, 1)) / len(configs), text
            key = bake_key(
                gathered.verts, gathered.tris, agent_config, int(settings.tile_size), volumes,
                offmesh_links=links,
            )  # fmt: skip
            built.append(LiveTiles(agent_cache, key=key, agent_name=name))
    finally:
        settings.tile_progress = ""
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    timings["tiles"] = time.perf_counter() - t0
    live_tiles = built[0]
    cache = live_tiles.cache
    if len(settings.agents) > 0:
        live_tiles.agents = {lt.agent_name: lt for lt in built}
    t0 = time.perf_counter()
    _sync(scene, live_tiles, context.evaluated_depsgraph_get(), context.view_layer)
    for each in live_tiles.every():
        each.cache.update()
    timings["obstacles"] = time.perf_counter() - t0
    npolys = sum(t.npolys for t in cache.tiles.values())
    outcome = bake.BakeOutcome(None, gathered, config, timings=timings)  # type: ignore[arg-type]
    # Every agent's tiles, not the first's only: an agent whose navmesh is empty makes the
    # bake empty, as a solo bake with agent rows does (the previous result is kept).
    empty_agents = [
        each.agent_name for each in built if not any(t.npolys for t in each.cache.tiles.values())
    ]
    outcome.warnings = list(gathered.warnings) + list(cache.warnings)  # the world's too
    outcome.warnings += [
        f"agent {each.agent_name}: {w}" if len(built) > 1 else w
        for each in built
        for t in each.cache.tiles.values()
        for w in t.warnings
    ]
    if unusable:
        outcome.warnings.append(
            f"Nav Link object(s) {', '.join(unusable)} have no end: set their Link End "
            "object (or use a curve with two points); they were left out"
        )
    for name, problem in live_tiles.problems.items():  # refused by the cache: say so now
        outcome.warnings.append(f"Dynamic Obstacle {name} was left out: {problem}")
    from ..core.offmesh import link_warnings

    for each in built:  # every agent's navmesh: a link may land on one and not another
        said = link_warnings(each.cache.offmesh_links, lambda c=each.cache: c.navmesh)
        outcome.warnings += [f"agent {each.agent_name}: {w}" if len(built) > 1 else w for w in said]
    from .gather import reachable_points

    for each in live_tiles.every():
        each.reachable = reachable_points(context)
        each.prune_mode = str(settings.prune_mode).lower()
    outcome.counts = {
        "triangles": gathered.triangle_count,
        "tiles": len(cache.tiles),
        "polys": npolys,
        "obstacles": len(live_tiles.obstacles),
        "objects": len(gathered.sources),
    }
    if cache.auto_links is not None:
        outcome.counts["auto_links"] = len(cache.auto_links)
    if npolys == 0 or empty_agents:
        outcome.empty = True
        from ..core.pipeline import explain_empty_geometry

        cause = explain_empty_geometry(config, gathered.verts, gathered.tris)
        if cause is not None:  # the solo bake's likely cause, where the geometry shows it
            outcome.warnings.append(f"the navigation mesh is empty (0 polygons): {cause}")
        message = "Empty navmesh: no tile has a polygon (check the agent and walkable settings)"
        if len(built) > 1:
            message = (
                f"Empty navmesh for agent(s) {', '.join(empty_agents)}: no tile has a polygon "
                "(check their radius, height, climb and slope); nothing baked, the previous "
                "result is kept"
            )
        properties.store_warnings(settings, outcome.warnings, message)
        return outcome
    t0 = time.perf_counter()
    CACHES[scene.session_uid] = live_tiles
    settings.tile_cache_key = live_tiles.key  # the cache is the scene's (`live_cache`)
    bake.LAST.pop(scene.session_uid, None)  # the solo bake's result no longer matches
    from ..core.heightfield import Heightfield

    empty_hf = Heightfield(
        0, 0, np.asarray(cache.grid.bmin), np.asarray(cache.grid.bmax), cache.grid.cs,
        np.float32(config.derived().ch), np.zeros(1, np.int64), np.zeros(0, np.uint16),
        np.zeros(0, np.uint16), np.zeros(0, np.uint8),
    )  # fmt: skip
    writeback.write_voxels(scene, empty_hf, settings.voxel_display, 1)
    outcome.warnings += _write(scene, live_tiles)
    report = live_tiles.prune_report
    if report is not None:
        outcome.counts["polys"] = report.polys_kept if report.mode == "remove" else npolys
        outcome.counts["polys_pruned"] = int(report.polys_cut)
        outcome.counts["pruned_area"] = int(round(report.area_cut))
    writeback.apply_visibility(scene)
    writeback.use_material_colors(context, scene)
    timings["writeback"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # The pruning the overlay shows, for a reopened file (`_baked_pruning`): read from the
    # scene's settings then, a Prune mode or Reachable From changed since made exports differ
    # from the overlay and the Path Test.
    scene[PRUNING_KEY] = json.dumps(
        {"points": live_tiles.reachable.tolist(), "mode": live_tiles.prune_mode}
    )
    settings.tile_cache_agent_keys = (
        json.dumps([[name, each.key] for name, each in live_tiles.agents.items()])
        if live_tiles.agents
        else ""
    )
    saved = save_cache(scene, live_tiles)
    timings["tile_cache_save"] = time.perf_counter() - t0
    properties.store_figures(settings, "navmesh", outcome.counts, timings, "")
    properties.store_warnings(settings, outcome.warnings)
    settings.obstacle_status = f"{len(live_tiles.obstacles)} obstacle(s), {len(cache.tiles)} tiles"
    if saved:
        settings.obstacle_status += f"; cache not saved: {saved}"
    settings.obstacle_tiles_rebuilt = 0
    settings.obstacle_seconds = 0.0
    return outcome


def _write(scene, live_tiles: LiveTiles) -> list[str]:
    """Overlay and stored navmesh from the cache (pruned from the Reachable From points, if
    any), then the live test path. Returns the pruning's warnings."""
    from . import bake, live, writeback

    lift = bake.overlay_lift(scene.voxnav.cell_height)
    if live_tiles.agents:  # one overlay per agent; the live path on the first agent's
        from . import agents

        views = {name: lt.view() for name, lt in live_tiles.agents.items()}
        agents.write_tile_overlays(
            scene, {name: (view[0], lt.cache.links()) for (name, view), lt in
                    zip(views.items(), live_tiles.agents.values(), strict=True)}, lift,
        )  # fmt: skip
        live.store_navmesh_tiles(scene, views[live_tiles.agent_name][1])
        live.update_path(scene)
        return [w for view in views.values() for w in view[2]]
    overlay, navmesh, warnings = live_tiles.view()
    from . import agents

    agents.remove_overlays(scene)  # a former agent bake's overlays (none: no-op)
    writeback.write_overlay(scene, overlay, lift, True)
    # Hand-made links and the automatic ones no obstacle blocks.
    writeback.write_links(scene, live_tiles.cache.links(), lift)
    live.store_navmesh_tiles(scene, navmesh)
    live.update_path(scene)
    return warnings


def _sync(scene, live_tiles: LiveTiles, depsgraph, view_layer) -> bool:
    """Bring the cache's obstacles in line with the scene's dynamic objects; True when some
    tile is dirty. An obstacle the cache refuses (outside every tile) is left out and
    recorded in ``problems``."""
    if live_tiles.agents:  # every agent's cache takes the same obstacles
        dirty = False
        for each in live_tiles.agents.values():
            each_agents, each.agents = each.agents, {}
            dirty |= _sync(scene, each, depsgraph, view_layer)
            each.agents = each_agents
        return dirty
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
    live_tiles = live_cache(scene)
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
    live_tiles = live_cache(scene)
    # A cache loaded here (after a reload, or in a scene not shown since the file opened) has
    # the obstacles as they are now, its tiles rebuilt for them by `restore`: the overlay,
    # written before the change, is rewritten below even though nothing is left to rebuild.
    restored = False
    if live_tiles is None:
        if scene.voxnav.tile_cache_key and scene.voxnav.tile_size > 0:
            live_tiles = restore(scene, view_layer, depsgraph)
            if live_tiles is None:
                _rebake(scene, "no usable tile cache")
                return None
            restored = True
        else:
            return None
    settings = scene.voxnav
    start = time.perf_counter()
    _sync(scene, live_tiles, depsgraph, view_layer)
    try:
        # Every agent's cache (the first is this one); the report is the first's.
        reports = [each.cache.update() for each in live_tiles.every()]
    except VoxNavError as exc:
        settings.obstacle_status = f"rebuild failed, navmesh unchanged: {exc}"
        return None
    report = (
        reports[0]
        if not live_tiles.agents
        else reports[list(live_tiles.agents).index(live_tiles.agent_name)]
    )
    if restored or any(r.rebuilt for r in reports):
        _write(scene, live_tiles)
    if restored and not report.rebuilt:
        return report  # `restore`'s status line stands ("tile cache loaded from ...")
    seconds = time.perf_counter() - start
    settings.obstacle_tiles_rebuilt = len(report.rebuilt)
    settings.obstacle_seconds = seconds
    problems = "; ".join(f"{name}: {text}" for name, text in live_tiles.problems.items())
    settings.obstacle_status = problems or (
        f"{len(report.rebuilt)} tile(s) rebuilt in {seconds * 1000:.0f} ms"
    )
    return report


# -------------------------------------------------------------------------------------------
# The saved tile cache


def sidecar_path(
    scene, blend_path: str | None = None, agent: str = "", *, legacy: bool = False
) -> str | None:
    """The tile cache file beside a .blend (default: the open one), or None when unsaved:
    ``DIR/NAME.blend`` -> ``DIR/NAME.voxnav-tiles.SCENE.npz`` (an agent's:
    ``...SCENE@AGENT.npz``: neither a scene's part, `_file_name_part`, nor an agent's name
    holds an ``@``, so scene "Scene" with agent "001" and scene "Scene.001" never share one;
    ``legacy``: ``...SCENE.AGENT.npz``, as files saved before were named)."""
    blend = blend_path if blend_path is not None else bpy.data.filepath
    if not blend:
        return None
    safe = _file_name_part(scene.name)
    if agent:
        safe += ("." if legacy else "@") + _file_name_part(agent)
    return f"{os.path.splitext(os.path.abspath(blend))[0]}.voxnav-tiles.{safe}.npz"


def _file_name_part(name: str) -> str:
    """``name`` as it may stand in a file name: itself when it is only letters, digits and
    ``._-``, else with the rest replaced by ``_`` and a short hash of the name added, so two
    names never share a file ("Level 1" and "Level_1" shared one sidecar: the second bake
    overwrote the first's tile cache)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:8]}"


def user_cache_dir() -> str:
    """The folder of tile caches keyed by bake: the extension's user folder (never its own
    folder, which upgrades wipe), or the system temp folder outside an extension."""
    package = __package__.rpartition(".")[0] if __package__ else ""
    try:
        return bpy.utils.extension_path_user(package, path="tile_cache", create=True)
    except (ValueError, OSError, AttributeError):
        folder = os.path.join(tempfile.gettempdir(), "voxnav-tile-cache")
        os.makedirs(folder, exist_ok=True)
        return folder


def user_cache_path(key: str) -> str:
    return os.path.join(user_cache_dir(), f"{key}.npz")


def save_cache(scene, live_tiles: LiveTiles, blend_path: str | None = None) -> str:
    """Save the scene's tile cache under its key in the user folder and beside the .blend
    (or ``blend_path``); returns "" or the reason a file could not be written (the bake
    stands either way)."""
    _remove_stale_sidecars(scene, blend_path, set(live_tiles.agents))
    if live_tiles.agents:  # every agent's cache, each under its own key and file name
        problems = [
            _save_one(scene, each, blend_path, name) for name, each in live_tiles.agents.items()
        ]
        return "; ".join(p for p in problems if p)
    return _save_one(scene, live_tiles, blend_path)


def _remove_stale_sidecars(scene, blend_path: str | None, agents: set[str]) -> None:
    """Delete the agent tile caches beside the .blend (``...SCENE@AGENT.npz``) of agents not
    in ``agents`` (the rows removed since their bake): nothing reads them again, and each can
    be hundreds of MB. Files of older VoxNav versions (``...SCENE.AGENT.npz``) are left: their
    names cannot be told from another scene's."""
    own = sidecar_path(scene, blend_path) if SIDECAR[0] else None
    if own is None:
        return
    stem = own[: -len(".npz")] + "@"
    keep = {sidecar_path(scene, blend_path, name) for name in agents}
    for path in glob.glob(glob.escape(stem) + "*.npz"):
        if path not in keep:
            with contextlib.suppress(OSError):  # gone already, or read-only: it stays
                os.remove(path)


def _save_one(scene, live_tiles: LiveTiles, blend_path: str | None, agent: str = "") -> str:
    from ..core import atomic
    from ..core.tilecache_io import read_key, save

    problems = []
    targets = [user_cache_path(live_tiles.key)]
    beside = sidecar_path(scene, blend_path, agent) if SIDECAR[0] else None
    if beside is not None:
        targets.append(beside)
    written = None  # a complete file of this bake: the other targets are copies of it
    for target in targets:
        try:
            if os.path.isfile(target) and read_key(target) == live_tiles.key:
                os.utime(target)  # the newest for `_prune_user_cache`
                written = written or target
                continue  # the same bake: the same file
        except (VoxNavError, OSError):
            pass  # damaged or another format: write it again
        try:
            if written is None:
                save(live_tiles.cache, target, key=live_tiles.key)
            else:  # a byte copy: compressing once is the slow part
                with atomic.replacing(target) as temp:
                    shutil.copyfile(written, temp)
            written = target
        except (VoxNavError, OSError) as exc:
            problems.append(str(exc))
    _prune_user_cache()
    return "; ".join(problems)


def _prune_user_cache() -> None:
    folder = user_cache_dir()
    try:
        files = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".npz")]
        files.sort(key=os.path.getmtime, reverse=True)
        for old in files[USER_CACHE_FILES:]:
            os.remove(old)
    except OSError:
        pass  # another process pruned it first: nothing to do


def restore(scene, view_layer=None, depsgraph=None) -> LiveTiles | None:
    """Load the scene's saved tile cache (beside the .blend, then the user folder) when the
    scene has a tiled bake (``tile_cache_key``), add the scene's obstacles and rebuild their
    tiles: obstacles are live again without a rebake. Returns the live cache, or None with
    the reason in ``obstacle_status``. ``depsgraph``: an evaluated one (right after loading a
    file the objects' world matrices are not evaluated yet)."""

    settings = scene.voxnav
    key = settings.tile_cache_key
    if not key or settings.tile_size == 0:
        return None
    agent_keys = _agent_keys(settings)
    if agent_keys:
        return _restore_agents(scene, agent_keys, view_layer, depsgraph)
    candidates = [p for p in (sidecar_path(scene), user_cache_path(key)) if p is not None]
    reasons: list[str] = []
    for path, cache in _loadable(candidates, key, reasons):
        live_tiles = LiveTiles(cache, key=key)
        live_tiles.reachable, live_tiles.prune_mode = _baked_pruning(scene, view_layer)
        _sync(scene, live_tiles, depsgraph, view_layer)
        try:
            cache.update()
        except VoxNavError as exc:
            reasons.append(f"{path}: {exc}")
            continue
        cache.rebuild_count = 0
        CACHES[scene.session_uid] = live_tiles
        settings.obstacle_status = (
            f"tile cache loaded from {os.path.basename(path)}: {len(live_tiles.obstacles)} "
            f"obstacle(s), {len(cache.tiles)} tiles"
        )
        return live_tiles
    settings.obstacle_status = (
        "no usable tile cache (" + " | ".join(reasons) + "): the next obstacle change rebakes "
        "all tiles once (or Build Navmesh now)"
    )
    return None


def _loadable(paths, key: str, reasons: list[str]):
    """(path, `core.tilecache.TileCache`) of each of ``paths`` holding the bake ``key``, in
    order; why the others could not be loaded goes to ``reasons``."""
    from ..core.tilecache import TileCache

    for path in paths:
        try:
            yield path, TileCache.load(path, key=key, obstacles=False)
        except VoxNavError as exc:
            reasons.append(str(exc))


def _agent_keys(settings) -> list[tuple[str, str]]:
    """(agent name, bake key) of each agent's saved tile cache, [] without agent rows (or
    an unreadable record)."""
    try:
        pairs = json.loads(settings.tile_cache_agent_keys or "[]")
        return [(str(name), str(key)) for name, key in pairs]
    except (ValueError, TypeError):
        return []


def _restore_agents(scene, agent_keys, view_layer=None, depsgraph=None) -> LiveTiles | None:
    """`restore` with agent rows: every agent's cache (beside the .blend, then the user
    folder), or none of them."""

    settings = scene.voxnav
    loaded: dict[str, LiveTiles] = {}
    for name, key in agent_keys:
        reasons: list[str] = []
        # The file of an older VoxNav last: its bake key says whether it is this agent's.
        beside = (sidecar_path(scene, agent=name), sidecar_path(scene, agent=name, legacy=True))
        paths = [p for p in (beside[0], user_cache_path(key), beside[1]) if p]
        for _path, cache in _loadable(paths, key, reasons):
            loaded[name] = LiveTiles(cache, key=key, agent_name=name)
            break
        if name not in loaded:
            settings.obstacle_status = (
                f"no usable tile cache for agent {name!r} (" + " | ".join(reasons) + "): the "
                "next obstacle change rebakes all tiles once (or Build Navmesh now)"
            )
            return None
    live_tiles = next(iter(loaded.values()))
    live_tiles.agents = loaded
    for each in loaded.values():
        each.reachable, each.prune_mode = _baked_pruning(scene, view_layer)
    _sync(scene, live_tiles, depsgraph, view_layer)
    try:
        for each in loaded.values():
            each.cache.update()
            each.cache.rebuild_count = 0
    except VoxNavError as exc:
        settings.obstacle_status = f"tile caches could not rebuild their obstacles: {exc}"
        return None
    CACHES[scene.session_uid] = live_tiles
    settings.obstacle_status = (
        f"tile caches of {len(loaded)} agents loaded: {len(live_tiles.obstacles)} obstacle(s), "
        f"{len(live_tiles.cache.tiles)} tiles"
    )
    return live_tiles


def _baked_pruning(scene, view_layer=None) -> tuple[np.ndarray, str]:
    """(Reachable From points, prune mode) of the scene's tiled bake, as it stored them
    (`PRUNING_KEY`); the scene's current ones for a file saved before they were stored."""
    try:
        stored = json.loads(scene.get(PRUNING_KEY, ""))
        points = np.asarray(stored["points"], dtype=np.float64).reshape(-1, 3)
        mode = str(stored["mode"])
        if mode in ("remove", "disable") and np.isfinite(points).all():
            return points, mode
    except (ValueError, TypeError, KeyError):
        pass
    return _reachable_in(scene, view_layer), str(scene.voxnav.prune_mode).lower()


def _reachable_in(scene, view_layer=None) -> np.ndarray:
    """The scene's Reachable From points as `gather.reachable_points` finds them, for a scene
    outside the current context (a file just loaded)."""
    layer = view_layer if view_layer is not None else scene.view_layers[0]
    points = [
        tuple(obj.matrix_world.translation)
        for obj in scene.objects
        if getattr(getattr(obj, "voxnav", None), "reachable_from", False)
        and obj.visible_get(view_layer=layer)
    ]
    return np.asarray(points, dtype=np.float64).reshape(-1, 3)


def _rebake(scene, reason: str) -> None:
    """The fallback without a usable cache: a full tiled bake of the active scene."""
    from . import bake

    settings = scene.voxnav
    context: Any = bpy.context
    if context.scene != scene:
        settings.obstacle_status = f"{reason}: Build Navmesh in this scene to make obstacles live"
        return
    start = time.perf_counter()
    try:
        outcome = bake.bake_scene(context, "navmesh")
    except VoxNavError as exc:
        settings.obstacle_status = f"{reason}; the rebake failed: {exc}"
        return
    if outcome.empty or live_cache(scene) is None:  # it said "rebaked (cache saved)"
        settings.obstacle_status = (
            f"{reason}; the rebake made an empty navmesh (see Last Bake), so nothing changed "
            "and no obstacle is live: fix the settings and Build Navmesh"
        )
        return
    settings.obstacle_status = (
        f"{reason}: rebaked all tiles in {time.perf_counter() - start:.2f} s (cache saved)"
    )


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
    if _updating:
        return
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else None
    if live_cache(scene) is None:
        # A tiled bake whose cache did not load: an obstacle change rebakes (`rebuild`).
        if not (scene.voxnav.tile_cache_key and scene.voxnav.tile_size > 0):
            return
        if not any(
            isinstance(u.id, bpy.types.Object)
            and gather_mod.is_dynamic_obstacle(u.id.original)
            and u.is_updated_transform | u.is_updated_geometry
            for u in depsgraph.updates
        ):
            return
    elif not changed(scene, depsgraph, view_layer):
        return
    _schedule(scene)


def _schedule(scene) -> None:
    """Rebuild ``scene``'s changed tiles after `DEBOUNCE` seconds (at once when headless)."""
    _pending.add(scene.session_uid)
    if bpy.app.background:
        _flush()
    elif not bpy.app.timers.is_registered(_timer):
        bpy.app.timers.register(_timer, first_interval=DEBOUNCE)


@bpy.app.handlers.persistent
def _on_frame_change(scene, depsgraph=None) -> None:
    """An animated obstacle moved with the frame (playback, scrubbing, ``frame_set``), which
    ``depsgraph_update_post`` does not report: rebuild as for a move by hand (its tiles,
    after `DEBOUNCE` seconds; at once when headless)."""
    if _updating or live_cache(scene) is None:
        return
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else None
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    if not changed(scene, depsgraph, view_layer):
        return
    _schedule(scene)


@bpy.app.handlers.persistent
def _on_load_post(*_args) -> None:
    """A new file: forget the old caches, load the saved one of the active scene's tiled bake
    (the obstacles read from the evaluated depsgraph; another scene's cache loads when one of
    its obstacles changes, see `rebuild`)."""
    global _updating
    CACHES.clear()
    _pending.clear()
    scene: Any = bpy.context.scene
    if scene is None or not scene.voxnav.tile_cache_key:
        return
    _updating = True  # evaluating the depsgraph must not re-enter the handler
    try:
        restore(scene, bpy.context.view_layer, bpy.context.evaluated_depsgraph_get())
    finally:
        _updating = False


@bpy.app.handlers.persistent
def _on_save_post(filepath=None, *_args) -> None:
    """Saved (also as a copy): write each live tile cache beside the saved .blend."""
    if not SIDECAR[0]:
        return
    blend = filepath if isinstance(filepath, str) and filepath else None
    scene: Any
    for scene in bpy.data.scenes:
        live_tiles = live_cache(scene)
        if live_tiles is not None and live_tiles.key:
            problem = save_cache(scene, live_tiles, blend)
            if problem:
                scene.voxnav.obstacle_status = f"tile cache not saved: {problem}"


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
        sub = col.column(align=True)
        sub.active = settings.tile_size > 0
        sub.prop(settings, "tile_workers")
        if settings.tile_workers != 1:
            sub.prop(settings, "tile_parallel")
        if settings.tile_progress:
            layout.label(text=f"Baking {settings.tile_progress}", icon="TIME")
        obj = context.active_object
        if obj is not None and not gather_mod.is_output(obj):
            col = layout.column(align=True)
            col.prop(obj.voxnav, "dynamic_obstacle", text=f"{obj.name}: Dynamic Obstacle")
            sub = col.column(align=True)
            sub.active = obj.voxnav.dynamic_obstacle
            sub.prop(obj.voxnav, "obstacle_shape")
            sub.prop(obj.voxnav, "area_id")
        count = len(dynamic_objects(scene))
        live_tiles = live_cache(scene)
        if settings.tile_size == 0:
            layout.label(text=f"{count} obstacle(s); Tile Size > 0 makes them live", icon="INFO")
        elif live_tiles is None:
            layout.label(text=f"{count} obstacle(s): Build Navmesh to make them live", icon="INFO")
            if settings.obstacle_status:
                layout.label(text=settings.obstacle_status)
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
    live.install_handler(bpy.app.handlers.frame_change_post, _on_frame_change)
    live.install_handler(bpy.app.handlers.load_post, _on_load_post)
    live.install_handler(bpy.app.handlers.save_post, _on_save_post)


def unregister() -> None:
    for handlers, fn in (
        (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
        (bpy.app.handlers.frame_change_post, _on_frame_change),
        (bpy.app.handlers.load_post, _on_load_post),
        (bpy.app.handlers.save_post, _on_save_post),
    ):
        if fn in handlers:
            handlers.remove(fn)
    if bpy.app.timers.is_registered(_timer):
        bpy.app.timers.unregister(_timer)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    CACHES.clear()
    _pending.clear()
