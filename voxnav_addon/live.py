"""Live test paths: a Start and a Goal empty, and the path between them on the navmesh.

"Add Path Test" creates the two empties and a path curve. A depsgraph handler re-runs only the
Detour query (never the bake) whenever either empty moves, and rewrites the curve. The navmesh
it queries is the last navmesh bake, kept in the .blend as Detour's navmesh-set bytes
(``Scene["voxnav_navmesh"]``), so paths keep following after the file is saved and reopened.
"Sample Heights" and "Voxel Path" draw the seed articles' two other queries between the same
empties: the ground under the straight line (on the scene's own triangles) and the voxel path
that climbs.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from ..core.errors import VoxNavError
from .gather import OUTPUT_TAG

START_NAME = "VoxNav Start"
GOAL_NAME = "VoxNav Goal"
PATH_NAME = "VoxNav Path"
HEIGHTS_NAME = "VoxNav Height Samples"
VOXEL_PATH_NAME = "VoxNav Voxel Path"
#: Scene custom property holding the last navmesh (Detour navmesh-set bytes, base64 text).
NAVMESH_KEY = "voxnav_navmesh"
#: What reading a damaged `NAVMESH_KEY` says (an edited or cut custom property).
STORED_DAMAGED = (
    "the navmesh stored in this file is damaged and cannot be read: Build Navmesh again"
)
#: Marks the path-test objects (so the handler and Clear find them by tag, not by name).
PATH_TAG = "voxnav_path_test"
PATH_COLOR = (1.0, 0.35, 0.05, 1.0)
HEIGHTS_COLOR = (0.95, 0.9, 0.1, 1.0)
VOXEL_PATH_COLOR = (0.85, 0.15, 0.85, 1.0)
#: Box around each empty searched for its polygon: Recast Demo's pick extents, Z-up. [Units: wu]
HALF_EXTENTS = (2.0, 2.0, 4.0)
#: Height samples drawn along the line from Start to Goal.
HEIGHT_SAMPLES = 200

#: Status texts shown in the panel.
STATUS_REACHED = "reached"
STATUS_PARTIAL = "partial: Goal not reachable, path to the nearest point"
STATUS_NO_START = "no navmesh polygon under Start"
STATUS_NO_GOAL = "no navmesh polygon under Goal"
STATUS_NO_NAVMESH = "no navmesh: build one first"


@dataclass
class PathReport:
    """One path query: status text, straight-path corners (k, 3) Z-up world, corridor size."""

    status: str
    points: np.ndarray
    polys: int
    length: float

    def as_json(self, start, goal) -> dict:
        """The JSON export's ``paths`` entry for this path (plain numbers, Z-up world)."""
        return {
            "start": [float(v) for v in start],
            "goal": [float(v) for v in goal],
            "status": self.status,
            "length": float(self.length),
            "polygons": int(self.polys),
            "points": np.asarray(self.points, dtype=np.float64).round(6).tolist(),
        }


# -------------------------------------------------------------------------------------------
# The navmesh, stored in the scene and rebuilt for queries on demand

#: Query objects by scene, with the stored text they were built from (rebuilt when it changes).
_QUERIES: dict[int, tuple[str, Any]] = {}


def _result_tile(result) -> Any:
    """A solo bake result's Detour tile (`core.nav.navdata.NavMeshData`), its links in."""
    from ..core.nav import navdata

    config = result.config
    return navdata.create_nav_mesh_data(
        result.polymesh,
        result.detail,
        walkable_height=config.agent_height,
        walkable_radius=config.agent_radius,
        walkable_climb=config.agent_max_climb,
        offmesh=getattr(result, "offmesh_links", None),
    )


def navmesh_text(result) -> str:
    """The text `store_navmesh` keeps of a bake's navmesh (Detour's navmesh-set bytes, base64).
    Raises `VoxNavError` where Detour cannot hold it (a tile of more than 65535 detail
    vertices, say): made before a bake replaces anything in the scene."""
    from ..core.nav import binio

    return base64.b64encode(binio.navmesh_set_bytes([_result_tile(result)])).decode("ascii")


def store_navmesh(scene, result, text: str | None = None) -> None:
    """Keep the bake's navmesh in the scene for path queries: ``text`` (`navmesh_text` of
    ``result``, made already) or made here."""
    scene[NAVMESH_KEY] = navmesh_text(result) if text is None else text
    _QUERIES.pop(scene.session_uid, None)


def result_query(result) -> Any:
    """A `core.nav.query.NavMeshQuery` on a solo bake result's navmesh (an agent's, say: the
    scene keeps the first agent's only)."""
    from ..core.nav.navmesh import NavMesh
    from ..core.nav.query import NavMeshQuery

    return NavMeshQuery(NavMesh.from_data(_result_tile(result)))


def store_navmesh_tiles(scene, navmesh) -> None:
    """Keep a multi-tile `core.nav.navmesh.NavMesh` (a tiled bake, or one just relinked after a
    dynamic obstacle moved) in the scene, and query it directly (no re-parse)."""
    from ..core.nav import binio
    from ..core.nav.query import NavMeshQuery

    p = navmesh.params
    params = binio.NavMeshParams(
        orig=np.asarray(p.orig, dtype=np.float32),
        tile_width=float(p.tile_width),
        tile_height=float(p.tile_height),
        max_tiles=int(p.max_tiles),
        max_polys=int(p.max_polys),
    )
    text = base64.b64encode(binio.navmesh_set_bytes(list(navmesh.tiles), params)).decode("ascii")
    scene[NAVMESH_KEY] = text
    _QUERIES[scene.session_uid] = (text, NavMeshQuery(navmesh))


def forget_navmesh(scene) -> None:
    """Drop the stored navmesh (Clear)."""
    if NAVMESH_KEY in scene:
        del scene[NAVMESH_KEY]
    _QUERIES.pop(scene.session_uid, None)


def has_navmesh(scene) -> bool:
    return isinstance(scene.get(NAVMESH_KEY), str)


def stored_navmesh_set(scene):
    """The navmesh kept in the scene as a `core.nav.binio.NavMeshSet` (Detour's data, Z-up
    world as `store_navmesh` wrote it), or None; VoxNavError if the text is damaged."""
    from ..core.nav import binio

    text = scene.get(NAVMESH_KEY)
    if not isinstance(text, str):
        return None
    try:
        data = base64.b64decode(text, validate=True)
        return binio.navmesh_set_from_bytes(data, "the scene's stored navmesh")
    except (ValueError, VoxNavError):
        # Not the .bin reader's advice (export the navmesh again): the file keeps this one.
        raise VoxNavError(STORED_DAMAGED) from None


def navmesh_query(scene) -> Any:
    """A `core.nav.query.NavMeshQuery` on the scene's stored navmesh, or None."""
    from ..core.nav.navmesh import NavMesh
    from ..core.nav.query import NavMeshQuery

    text = scene.get(NAVMESH_KEY)
    if not isinstance(text, str):
        return None
    cached = _QUERIES.get(scene.session_uid)
    if cached is not None and cached[0] == text:
        return cached[1]
    nav_set = stored_navmesh_set(scene)
    assert nav_set is not None, "the text was checked above"
    try:
        if len(nav_set.tiles) == 1:
            query = NavMeshQuery(NavMesh.from_data(nav_set.tiles[0]))
        else:  # a tiled bake: the tiles on their grid, linked across their borders
            mesh = NavMesh(nav_set.params)
            mesh.replace_tiles([], list(nav_set.tiles))
            query = NavMeshQuery(mesh)
    except VoxNavError:
        raise VoxNavError(STORED_DAMAGED) from None
    _QUERIES[scene.session_uid] = (text, query)
    return query


def compute_path(query, start, goal) -> PathReport:
    """The straight path from start to goal (Z-up world points) on ``query``'s navmesh."""
    from ..core.nav.query import PARTIAL_RESULT, status_failed

    empty = np.zeros((0, 3), dtype=np.float32)
    if query is None:
        return PathReport(STATUS_NO_NAVMESH, empty, 0, 0.0)
    a = query.find_nearest_poly(start, HALF_EXTENTS)
    if status_failed(a.status) or a.ref < 0:
        return PathReport(STATUS_NO_START, empty, 0, 0.0)
    b = query.find_nearest_poly(goal, HALF_EXTENTS)
    if status_failed(b.status) or b.ref < 0:
        return PathReport(STATUS_NO_GOAL, empty, 0, 0.0)
    corridor = query.find_path(a.ref, b.ref, a.point, b.point)
    if status_failed(corridor.status) or corridor.polys.shape[0] == 0:
        return PathReport(STATUS_NO_GOAL, empty, 0, 0.0)
    end = b.point
    partial = bool(corridor.status & PARTIAL_RESULT)
    if partial:
        # Detour's rule: a partial path ends at the closest point of its last polygon.
        _, end, _ = query.closest_point_on_poly(int(corridor.polys[-1]), b.point)
    straight = query.find_straight_path(a.point, end, corridor.polys)
    points = np.asarray(straight.points, dtype=np.float32).reshape(-1, 3)
    length = float(np.linalg.norm(np.diff(points.astype(np.float64), axis=0), axis=1).sum())
    status = STATUS_PARTIAL if partial else STATUS_REACHED
    return PathReport(status, points, int(corridor.polys.shape[0]), length)


# -------------------------------------------------------------------------------------------
# Objects


def _tagged(scene, name: str, kind: str = "") -> Any:
    """``scene``'s path-test object ``name`` (each scene has its own), or None."""
    obj = scene.objects.get(name)
    local = obj is not None and obj.library is None  # a linked one is another file's
    if local and obj.get(PATH_TAG) and (not kind or obj.type == kind):
        return obj
    for candidate in scene.objects:
        if (
            candidate.library is None
            and candidate.get(PATH_TAG) == name
            and (not kind or candidate.type == kind)
        ):
            return candidate
    return None


def _link(scene, obj) -> None:
    from . import writeback

    coll = writeback.output_collection(scene)
    if obj.name not in coll.objects:
        coll.objects.link(obj)


def _path_material(name: str, color) -> Any:
    mat = bpy.data.materials.get(name)
    if mat is None or not mat.get(PATH_TAG):
        mat = bpy.data.materials.new(name)
        mat[PATH_TAG] = name
        mat[OUTPUT_TAG] = True
    mat.diffuse_color = color
    return mat


def _curve_object(scene, name: str, color, radius: float) -> Any:
    """A poly-line curve object (a tube of ``radius`` that renders) tagged as VoxNav's."""
    obj = _tagged(scene, name, "CURVE")
    if obj is None:
        curve: Any = bpy.data.curves.new(name, "CURVE")
        curve.dimensions = "3D"
        curve[PATH_TAG] = name
        curve[OUTPUT_TAG] = True
        obj = bpy.data.objects.new(name, curve)
        obj[PATH_TAG] = name
        obj[OUTPUT_TAG] = True  # VoxNav's own: never gathered as geometry, removed by Clear
        _link(scene, obj)
    curve = obj.data
    curve.bevel_depth = radius
    curve.bevel_resolution = 2
    if not curve.materials:
        curve.materials.append(_path_material(name, color))
    return obj


def _set_polyline(obj, points: np.ndarray) -> None:
    """Replace the curve's splines by one poly-line through points (k, 3); none if k < 2."""
    # The points are world-space: a curve the user moved (selecting all and moving the level,
    # say) goes back to the origin, as the overlays do (`writeback._output_object`).
    if obj.matrix_world != Matrix.Identity(4):
        obj.matrix_world = Matrix.Identity(4)
    curve = obj.data
    curve.splines.clear()
    if points.shape[0] < 2:
        return
    spline = curve.splines.new("POLY")
    spline.points.add(points.shape[0] - 1)
    co = np.ones((points.shape[0], 4), dtype=np.float32)
    co[:, :3] = points
    spline.points.foreach_set("co", co.ravel())


def _empty(scene, name: str, location, color) -> Any:
    obj = _tagged(scene, name, "EMPTY")
    if obj is None:
        obj = bpy.data.objects.new(name, None)
        obj[PATH_TAG] = name
        obj[OUTPUT_TAG] = True
        obj.empty_display_type = "SINGLE_ARROW"
        obj.empty_display_size = 1.5
        _link(scene, obj)
    obj.color = color
    # In world space, also for an empty the user parented to something.
    placed = obj.matrix_world.copy()
    placed.translation = location
    obj.matrix_world = placed
    return obj


#: A scene's chosen Length unit (Unit panel; "ADAPTIVE" picks one per value): metres per
#: unit and its symbol.
LENGTH_UNITS = {
    "KILOMETERS": (1000.0, "km"), "METERS": (1.0, "m"), "CENTIMETERS": (0.01, "cm"),
    "MILLIMETERS": (0.001, "mm"), "MICROMETERS": (1e-6, "µm"), "MILES": (1609.344, "mi"),
    "FEET": (0.3048, "ft"), "INCHES": (0.0254, "in"), "THOU": (2.54e-5, "thou"),
}  # fmt: skip


def scene_units_text(scene, value: float, category: str = "LENGTH") -> str:
    """``value`` in Blender units (``category`` "LENGTH", or "AREA" in square units) as the
    scene's unit settings show it (Unit Scale and system: 12 units at scale 0.01 are "12 cm";
    a chosen Length unit: that unit, as Blender's fields show it; no unit system: the bare
    number)."""
    units = scene.unit_settings
    if units.system == "NONE" or not math.isfinite(value):
        return f"{value:.2f}"
    power = 2 if category == "AREA" else 1
    scaled = value * units.scale_length**power
    chosen = LENGTH_UNITS.get(str(getattr(units, "length_unit", "ADAPTIVE")))
    if chosen is not None:  # "6.50 m" read so with Centimeters chosen: 650 cm
        metres, symbol = chosen
        return f"{scaled / metres**power:.2f} {symbol}{'²' if power == 2 else ''}"
    return bpy.utils.units.to_string(units.system, category, scaled, precision=2).strip()


def parse_path_option(text: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``"X,Y,Z:X,Y,Z"`` (Z-up world units) -> (start, goal); VoxNavError naming the problem."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, goal = (tuple(float(v) for v in part.split(",")) for part in parts)
        if len(start) != 3 or len(goal) != 3:
            raise ValueError
    except ValueError:
        raise VoxNavError(
            f"--path expects START:GOAL as X,Y,Z:X,Y,Z in world units, got {text!r}"
        ) from None
    if not all(math.isfinite(v) for v in start + goal):
        raise VoxNavError(f"--path needs finite coordinates, got {text!r}")
    return start, goal


def path_test_objects(scene) -> tuple[Any, Any, Any]:
    """(Start, Goal, path curve) of the scene's path test, any of them None when missing."""
    return (
        _tagged(scene, START_NAME, "EMPTY"),
        _tagged(scene, GOAL_NAME, "EMPTY"),
        _tagged(scene, PATH_NAME, "CURVE"),
    )


def _location(obj) -> tuple[float, float, float]:
    x, y, z = obj.matrix_world.translation
    return (float(x), float(y), float(z))


def _lift(scene) -> float:
    from .bake import overlay_lift

    return overlay_lift(scene.voxnav.cell_height) * 2.0


def _radius(scene) -> float:
    return max(float(scene.voxnav.cell_size) * 0.4, 0.03)


def add_path_test(scene, start=None, goal=None) -> PathReport:
    """Create (or move) the Start and Goal empties and the path; return the first path.

    Default places: on the navmesh's largest connected piece (by ground area, over its
    polygon links), the centres of its polygons farthest apart along X: the first path is
    one the navmesh can walk."""
    query = navmesh_query(scene)
    if query is None:
        raise VoxNavError("no navmesh to test paths on: build the navmesh first")
    if start is None or goal is None:
        west, east = _default_ends(query.nav)
        start = west if start is None else start
        goal = east if goal is None else goal
    _empty(scene, START_NAME, tuple(start), (0.1, 0.9, 0.2, 1.0))
    _empty(scene, GOAL_NAME, tuple(goal), (0.95, 0.15, 0.1, 1.0))
    _curve_object(scene, PATH_NAME, PATH_COLOR, _radius(scene))
    # The empties' world matrices are only refreshed by the next depsgraph evaluation.
    return update_path(scene, (tuple(start), tuple(goal)))


def _default_ends(nav) -> tuple[tuple, tuple]:
    """Z-up centres of the westmost and eastmost ground polygons of ``nav``'s largest piece
    connected by its links (by ground area). (The middle of the bounds floated above the
    demo's floor, and its nearest polygons were a piece cut off from the rest.)"""
    from ..core.arrays import lowest_labels
    from ..core.nav.navdata import POLYTYPE_OFFMESH_CONNECTION

    n = int(nav.poly_type.shape[0])
    ground = np.asarray(nav.poly_type) != POLYTYPE_OFFMESH_CONNECTION
    count = np.asarray(nav.poly_vert_count, dtype=np.int64)
    used = np.arange(6)[None, :] < count[:, None]
    pos = np.asarray(nav.poly_pos, dtype=np.float64)  # Detour Y-up, (n, 6, 3)
    centre = (pos * used[:, :, None]).sum(axis=1) / np.maximum(count, 1)[:, None]
    x, z = pos[:, :, 0], pos[:, :, 2]
    area = 0.5 * np.abs((x * np.roll(z, -1, axis=1) - np.roll(x, -1, axis=1) * z).sum(axis=1))
    # The pieces the polygon links join, each named by its lowest polygon.
    owner, target = np.asarray(nav.link_owner), np.asarray(nav.link_ref)
    linked = target >= 0
    label = lowest_labels(n, owner[linked], target[linked])
    size = np.bincount(label[ground], weights=area[ground], minlength=n)
    piece = ground & (label == int(np.argmax(size)))
    polys = np.flatnonzero(piece)
    if not polys.size:
        raise VoxNavError("the navmesh has no ground polygon to place Start and Goal on")
    west = polys[int(np.argmin(centre[polys, 0]))]
    east = polys[int(np.argmax(centre[polys, 0]))]
    return tuple(centre[west][[0, 2, 1]].tolist()), tuple(centre[east][[0, 2, 1]].tolist())


def update_path(scene, ends=None) -> PathReport:
    """Re-run the path query between the empties (or ``ends``: (start, goal) Z-up points) and
    rewrite the curve and the panel figures."""
    start, goal, path_obj = path_test_objects(scene)
    settings = scene.voxnav
    if start is None or goal is None or path_obj is None:
        return PathReport("no path test: add one", np.zeros((0, 3), np.float32), 0, 0.0)
    _PATH_ENDS[scene.session_uid] = _ends_key(start, goal)
    try:
        if ends is None:
            ends = _location(start), _location(goal)
        report = compute_path(navmesh_query(scene), *ends)
    except VoxNavError as exc:
        report = PathReport(str(exc), np.zeros((0, 3), np.float32), 0, 0.0)
    lifted = report.points.copy()
    if lifted.shape[0]:
        lifted[:, 2] += _lift(scene)
    _set_polyline(path_obj, lifted)
    settings.path_status = report.status
    settings.path_length = report.length
    settings.path_polys = report.polys
    return report


def sample_heights(context) -> int:
    """Drop HEIGHT_SAMPLES points of the Start-Goal line onto the scene's triangles (the
    highest surface under each); draw them as a poly-line. Returns how many hit ground."""
    from ..core.nav.heights import HeightIndex
    from . import gather as gather_mod
    from . import writeback

    scene = context.scene
    start, goal, _ = path_test_objects(scene)
    if start is None or goal is None:
        raise VoxNavError("no path test: use Add Path Test first")
    settings = scene.voxnav
    # The drawn voxels' instancing off while gathering, as a bake does: gathering walks every
    # instance in Python (2.4 s with a million cubes drawn).
    suspended = writeback.suspend_instancing(scene)
    try:
        gathered = gather_mod.gather(context, settings.source, settings.source_collection)
    finally:
        writeback.resume_instancing(suspended)
    index = HeightIndex(gathered.verts, gathered.tris)
    a = np.asarray(_location(start), dtype=np.float64)
    b = np.asarray(_location(goal), dtype=np.float64)
    t = np.linspace(0.0, 1.0, HEIGHT_SAMPLES)[:, None]
    line = a + (b - a) * t
    hits = index.heights(line[:, :2])
    ground = np.isfinite(hits.height)
    points = line[ground].copy()
    points[:, 2] = hits.height[ground] + _lift(scene)
    obj = _curve_object(scene, HEIGHTS_NAME, HEIGHTS_COLOR, _radius(scene) * 0.6)
    _set_polyline(obj, points.astype(np.float32))
    return int(ground.sum())


def voxel_path(context) -> Any:
    """The seed's voxel path (BFS with climbing) between the empties on the last bake's voxels,
    with the dynamic obstacles' voxels blocked; drawn as a poly-line. Returns the
    `core.nav.voxel_path.VoxelPath`."""
    from ..core.nav.voxel_path import VoxelNavigator, check_grid_size
    from . import bake

    scene = context.scene
    start, goal, _ = path_test_objects(scene)
    if start is None or goal is None:
        raise VoxNavError("no path test: use Add Path Test first")
    from . import obstacles

    outcome = bake.last_outcome(scene)
    if outcome is None and obstacles.live_cache(scene) is not None:
        raise VoxNavError(
            "a tiled bake keeps no voxel grid of the whole scene: Voxelize first (or Build "
            "Navmesh with Tile Size 0)"
        )
    if outcome is None:
        raise VoxNavError("no voxels in this session: Voxelize or Build Navmesh first")

    # The seed's RTS case: dynamic obstacles block their voxels (they are not geometry).
    hf = outcome.result.heightfield
    depth = int(hf.smax.max()) if hf.span_count else 0
    check_grid_size(hf.width, hf.height, depth)  # before the dense grid is built
    grid = outcome.result.voxel_grid()
    # The obstacles the bake sees: visible in this view layer, as evaluated.
    depsgraph = context.evaluated_depsgraph_get()
    shapes = [
        obstacles.obstacle_shape(o, depsgraph)
        for o in obstacles.dynamic_objects(scene, context.view_layer)
    ]
    if shapes:
        from ..core.obstacles import block_voxels

        grid = block_voxels(grid, shapes)  # refused before allocating when it grows too tall
    nav = VoxelNavigator(grid)
    found = nav.find_path(_location(start), _location(goal))
    obj = _curve_object(scene, VOXEL_PATH_NAME, VOXEL_PATH_COLOR, _radius(scene) * 0.6)
    _set_polyline(obj, found.points.astype(np.float32))
    _VOXEL_TOPS[scene.session_uid] = (  # the padded grid's top: an end above it is outside
        float(grid.bmin[2]) + float(nav.shape[2] - 1) * float(grid.ch),
        np.asarray(grid.bmin, dtype=np.float64),
        np.asarray(grid.bmin, dtype=np.float64)
        + np.array([grid.width, grid.height, 0.0]) * float(grid.cs),
    )
    return found


#: The last voxel path's grid per scene: (the highest z an end is placed from, grid min
#: corner, max corner x/y), for `voxel_path_hint`. [Units: wu]
_VOXEL_TOPS: dict[int, tuple] = {}


def voxel_path_hint(context, found) -> str:
    """Why Start or Goal has no voxel, when it stands over the voxels but above them (a flat
    level's grid is a voxel or two deep: an end a metre above the floor is outside it):
    ": Start is above the voxels ...", else ""."""
    from ..core.nav.voxel_path import NO_GOAL, NO_START

    start, goal, _ = path_test_objects(context.scene)
    top = _VOXEL_TOPS.get(context.scene.session_uid)
    end = {NO_START: ("Start", start), NO_GOAL: ("Goal", goal)}.get(found.status)
    if end is None or end[1] is None or top is None:
        return ""
    z_top, lo, hi = top
    x, y, z = _location(end[1])
    if lo[0] <= x <= hi[0] and lo[1] <= y <= hi[1] and z >= z_top:
        return (
            f": {end[0]} is above the voxels (they end at z {z_top:.3g}): move it down onto "
            "the floor it stands over"
        )
    return ""


# -------------------------------------------------------------------------------------------
# The handlers

_updating = False
#: Where Start and Goal stood (world) at each scene's last path query (`update_path`).
_PATH_ENDS: dict[int, tuple] = {}


def _ends_key(start, goal) -> tuple:
    return tuple(start.matrix_world.translation) + tuple(goal.matrix_world.translation)


@bpy.app.handlers.persistent
def _on_depsgraph_update(scene, depsgraph) -> None:
    """Follow the empties: re-query only when Start or Goal moved (not on our own edits)."""
    if _updating:
        return
    start, goal, path_obj = path_test_objects(scene)
    if start is None or goal is None or path_obj is None:
        return
    watched = {start.name_full, goal.name_full}
    moved = any(
        getattr(update.id, "name_full", None) in watched and update.is_updated_transform
        for update in depsgraph.updates
    )
    if not moved:
        return
    _requery(scene)


def _requery(scene) -> None:
    """`update_path`, its own edits not re-entering the handlers."""
    global _updating
    _updating = True
    try:
        update_path(scene)
    finally:
        _updating = False


@bpy.app.handlers.persistent
def _on_frame_change(scene, *_args) -> None:
    """Animated Start or Goal (playback, scrubbing, ``frame_set``, which depsgraph_update_post
    does not report): re-query when either stands elsewhere than at the last query."""
    if _updating:
        return
    start, goal, path_obj = path_test_objects(scene)
    if start is None or goal is None or path_obj is None:
        return
    if _PATH_ENDS.get(scene.session_uid) == _ends_key(start, goal):
        return
    _requery(scene)


@bpy.app.handlers.persistent
def _on_load_post(*_args) -> None:
    _QUERIES.clear()
    _PATH_ENDS.clear()


def install_handler(handlers, fn) -> None:
    """Append ``fn`` to a ``bpy.app.handlers`` list, replacing an earlier copy of it (a
    reloaded add-on registers new function objects with the same name and module)."""
    for existing in list(handlers):
        if (
            getattr(existing, "__name__", None) == fn.__name__
            and getattr(existing, "__module__", None) == fn.__module__
        ):
            handlers.remove(existing)
    handlers.append(fn)


def register() -> None:
    install_handler(bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update)
    install_handler(bpy.app.handlers.frame_change_post, _on_frame_change)
    install_handler(bpy.app.handlers.load_post, _on_load_post)


def unregister() -> None:
    for handlers, fn in (
        (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
        (bpy.app.handlers.frame_change_post, _on_frame_change),
        (bpy.app.handlers.load_post, _on_load_post),
    ):
        if fn in handlers:
            handlers.remove(fn)
    _QUERIES.clear()
    _PATH_ENDS.clear()
