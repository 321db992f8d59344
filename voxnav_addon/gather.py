"""Scene -> triangle soup for the core.

``gather(context, ...)`` walks the *evaluated* depsgraph (modifiers, Geometry Nodes, collection
instances and particle/vertex instances all included) and returns:

- ``verts``  float32 (n, 3): world-space positions, Z-up. [Units: wu]
- ``tris``   int32 (m, 3): indices into ``verts``; counter-clockwise seen from the walkable side.
- ``tri_source`` int32 (m,): index into ``sources`` of the object each triangle came from.
- ``sources`` list[str]: names of the source objects (the instancer for instances).

World matrices are applied in float64 and the result is cast once to float32. Each distinct
evaluated mesh has its loop triangles read once with ``foreach_get`` into typed arrays, however
many times it is instanced.

Only the depsgraph's *mesh* instances carry triangles. A curve, text, NURBS surface or metaball
object evaluates to a geometry set whose mesh the depsgraph yields as a separate mesh instance
(its parent is the object itself) next to the object; reading the object too (``to_mesh``) would
count its triangles twice (checked on bpy 4.2.23, 5.0.1 and 5.2.3).

A matrix with a negative determinant (mirrored object) flips the triangles' winding, so the
winding is reversed back: a mirrored floor stays walkable.

Excluded: VoxNav's own output objects (anything carrying the ``voxnav_output`` custom property,
and everything they instance), objects hidden in the viewport, the own mesh of an instancer
with "Show Instancer: Viewport" off (its instances are kept), geometry that evaluates to no
mesh (empties, lights, a curve without bevel or extrusion), area volumes
(``Object.voxnav.area_volume``), which ``area_volumes`` returns as boxes instead, and dynamic
obstacles (``Object.voxnav.dynamic_obstacle``, voxnav_addon/obstacles.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import VoxNavError

#: Custom property set on every object VoxNav writes; such objects are never gathered.
OUTPUT_TAG = "voxnav_output"


@dataclass
class Gathered:
    """The triangle soup of a scene. See the module docstring for shapes and dtypes."""

    verts: np.ndarray
    tris: np.ndarray
    tri_source: np.ndarray
    sources: list[str] = field(default_factory=list)
    #: Number of object instances that contributed triangles.
    instances: int = 0
    #: What the bake should say about the gathering (objects it could not use as marked).
    warnings: list[str] = field(default_factory=list)

    @property
    def triangle_count(self) -> int:
        return int(self.tris.shape[0])


def is_output(obj) -> bool:
    """True for objects VoxNav wrote (never gathered, removed by voxnav.clear)."""
    return obj is not None and bool(obj.get(OUTPUT_TAG, False))


def _mesh_arrays(mesh, cache: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """(positions float32 (n,3), triangles int32 (m,3)) of an evaluated mesh, cached per mesh."""
    key = mesh.as_pointer()
    if key in cache:
        return cache[key]
    n_verts = len(mesh.vertices)
    n_tris = len(mesh.loop_triangles)
    if n_verts == 0 or n_tris == 0:
        cache[key] = None
        return None
    co = np.empty(n_verts * 3, dtype=np.float32)
    position = mesh.attributes.get("position")
    if position is not None and position.data_type == "FLOAT_VECTOR":
        position.data.foreach_get("vector", co)
    else:  # pragma: no cover - older Blender
        mesh.vertices.foreach_get("co", co)
    tri = np.empty(n_tris * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    arrays = (co.reshape(-1, 3), tri.reshape(-1, 3))
    cache[key] = arrays
    return arrays


def is_area_volume(obj) -> bool:
    """True for objects whose bounding box paints an area type instead of being geometry."""
    settings = getattr(obj, "voxnav", None)
    return settings is not None and bool(settings.area_volume)


def is_dynamic_obstacle(obj) -> bool:
    """True for dynamic obstacles (voxnav_addon/obstacles.py): shapes, never geometry."""
    settings = getattr(obj, "voxnav", None)
    return settings is not None and bool(settings.dynamic_obstacle)


#: Collection instances inside collection instances followed by `local_corners`.
MAX_INSTANCE_DEPTH = 8


def _box_corners(lo, hi) -> np.ndarray:
    """float64 (8, 3): the corners of the axis-aligned box lo..hi."""
    return np.array(
        [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])],
        dtype=np.float64,
    )


#: Object types a collection instance shows with a shape of their own (`_instanced_points`).
SHAPED_TYPES = frozenset(
    {"MESH", "CURVE", "CURVES", "SURFACE", "META", "FONT", "POINTCLOUD", "VOLUME"}
)


def _instanced_members(collection) -> list:
    """The objects a collection instance of ``collection`` shows: its objects and its child
    collections', each once, without those disabled in viewports (an object's or a child
    collection's "Disable in Viewports": Blender does not instance them)."""
    seen: dict[int, Any] = {}
    pending = [collection]
    while pending:
        each = pending.pop()
        for obj in each.objects:
            if not obj.hide_viewport:
                seen.setdefault(obj.as_pointer(), obj)
        pending += [child for child in each.children if not child.hide_viewport]
    return list(seen.values())


def _instanced_points(collection, to_local: np.ndarray, depsgraph, depth: int) -> list:
    """Bounding-box corners (float64 (8, 3) each) of what ``collection`` holds, nested
    collection instances included, in the frame ``to_local`` (4x4) maps its space to."""
    offset = np.eye(4)
    offset[:3, 3] = -np.array(tuple(collection.instance_offset), dtype=np.float64)
    to_local = to_local @ offset
    points = []
    for member in _instanced_members(collection):
        placed = to_local @ np.array(member.matrix_world, dtype=np.float64)
        nested = member.instance_collection if member.instance_type == "COLLECTION" else None
        if member.type == "EMPTY":
            if nested is not None and depth < MAX_INSTANCE_DEPTH:
                points += _instanced_points(nested, placed, depsgraph, depth + 1)
            continue
        if member.type not in SHAPED_TYPES:  # a light or camera: no shape, its box is zeros
            continue
        evaluated = member.evaluated_get(depsgraph) if depsgraph is not None else member
        corners = np.array([tuple(c) for c in evaluated.bound_box], dtype=np.float64)
        points.append(corners @ placed[:3, :3].T + placed[:3, 3])
    return points


def local_corners(obj, depsgraph=None) -> np.ndarray:
    """float64 (8, 3): the corners of ``obj``'s evaluated bounding box in its local frame. An
    empty has none (Blender gives eight zeros): one instancing a collection has the box
    around what it instances (a crate placed as a collection instance), any other its drawn
    size (``empty_display_size`` to either side)."""
    evaluated = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    if obj.type != "EMPTY":
        return np.array([tuple(c) for c in evaluated.bound_box], dtype=np.float64)
    if obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
        points = _instanced_points(obj.instance_collection, np.eye(4), depsgraph, 0)
        if points:
            stacked = np.concatenate(points)
            return _box_corners(stacked.min(axis=0), stacked.max(axis=0))
    size = float(obj.empty_display_size)
    return _box_corners((-size, -size, -size), (size, size, size))


#: An area volume at most this tall is flat (`area_volumes`). [Units: wu]
FLAT_VOLUME_HEIGHT = 1e-6


def area_volumes(
    context, flat: list[str] | None = None
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(world min corner float64 (3,), max corner, area id) of every visible area volume.

    The box is the evaluated object's bounding box (`local_corners`) in world space (its 8
    corners transformed by the world matrix, then their axis-aligned extent). [Units: wu]
    ``flat`` (if given) receives the names of those with no height (a plane: it holds no
    span's floor, so it marks nothing).
    """
    depsgraph = context.evaluated_depsgraph_get()
    view_layer = context.view_layer
    boxes = []
    for obj in context.scene.objects:
        if not is_area_volume(obj) or not obj.visible_get(view_layer=view_layer):
            continue
        evaluated = obj.evaluated_get(depsgraph)
        corners = local_corners(obj, depsgraph)
        matrix = np.array(evaluated.matrix_world, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            world = corners @ matrix[:3, :3].T + matrix[:3, 3]
        check_placed(obj, world, "Area Volume")
        lo, hi = world.min(axis=0), world.max(axis=0)
        if flat is not None and hi[2] - lo[2] <= FLAT_VOLUME_HEIGHT:
            flat.append(obj.name_full)
        boxes.append((lo, hi, int(obj.voxnav.area_id)))
    return boxes


def _is_reachable_from(obj) -> bool:
    return bool(getattr(getattr(obj, "voxnav", None), "reachable_from", False))


def _is_nav_link(obj) -> bool:
    return bool(getattr(getattr(obj, "voxnav", None), "nav_link", False))


def _instanced(context, tagged: Callable[[Any], bool]) -> list:
    """(world matrix, original object) of every copy of an object ``tagged`` selects that a
    visible collection instance places (a prefab's spawn point or ladder: each copy is a
    point or link of its own), in the depsgraph's order."""
    depsgraph = context.evaluated_depsgraph_get()
    view_layer = context.view_layer
    found = []
    for inst in depsgraph.object_instances:
        if not inst.is_instance or inst.parent is None:
            continue
        original = inst.object.original
        if tagged(original) and inst.parent.original.visible_get(view_layer=view_layer):
            found.append((inst.matrix_world.copy(), original))
    return found


def reachable_points(context) -> np.ndarray:
    """float64 (k, 3) world positions of the visible objects tagged "Reachable From" (their
    origins), in scene order, then of their copies placed by collection instances; (0, 3)
    when there are none. [Units: wu]"""
    view_layer = context.view_layer
    placed = [
        (obj, tuple(obj.matrix_world.translation))
        for obj in context.scene.objects
        if _is_reachable_from(obj) and obj.visible_get(view_layer=view_layer)
    ]
    copies = _instanced(context, _is_reachable_from)
    placed += [(obj, tuple(matrix.translation)) for matrix, obj in copies]
    for obj, point in placed:
        check_placed(obj, point, "Reachable From")
    return np.asarray([point for _obj, point in placed], dtype=np.float64).reshape(-1, 3)


def check_placed(obj, points, role: str) -> None:
    """Refuse (`VoxNavError` naming ``obj``) world ``points`` of a marked object (``role``:
    "Area Volume", say) that are NaN, infinite or farther than the core takes: the core's own
    refusal could not say which object. [Units: wu]"""
    from ..core.limits import MAX_COORDINATE

    values = np.asarray(points, dtype=np.float64)
    if not np.isfinite(values).all():
        raise VoxNavError(
            f"{role} {obj.name_full!r} has a NaN or infinite position or size (its transform, "
            f"or an empty's display size): fix it, or untick {role}"
        )
    farthest = float(np.abs(values).max(initial=0.0))
    if farthest > MAX_COORDINATE:
        raise VoxNavError(
            f"{role} {obj.name_full!r} reaches {farthest:.3g} m from the origin, beyond "
            f"+-{MAX_COORDINATE:g} m: check its units, scale and position"
        )


def nav_links(context):
    """The visible objects tagged "Nav Link" as `core.offmesh.OffMeshLinks` (Z-up world), in
    scene order, then their copies placed by collection instances; and the names of tagged
    objects that could not be used (no Link End, a curve with fewer than two points); None
    when no object is tagged."""
    from mathutils import Vector

    from ..core.offmesh import OffMeshLinks

    view_layer = context.view_layer
    starts, ends, radii, two_way, skipped, names = [], [], [], [], [], []
    tagged = [
        (obj, None)
        for obj in context.scene.objects
        if _is_nav_link(obj) and obj.visible_get(view_layer=view_layer)
    ]
    # A copy's end is placed as its start is: the instance's matrix over the original's.
    tagged += [
        (obj, matrix @ obj.matrix_world.inverted_safe())
        for matrix, obj in _instanced(context, _is_nav_link)
    ]
    for obj, place in tagged:
        settings = obj.voxnav
        points = _link_points(obj)
        if points is None:
            skipped.append(obj.name)
            continue
        if place is not None:
            points = tuple(tuple(place @ Vector(p)) for p in points)
        starts.append(points[0])
        ends.append(points[1])
        radii.append(float(settings.nav_link_radius))
        two_way.append(not settings.nav_link_one_way)
        names.append(obj.name)
    if not starts and not skipped:
        return None, skipped
    if not starts:
        return OffMeshLinks.empty(), skipped
    try:
        return OffMeshLinks.create(starts, ends, radii, two_way), skipped
    except VoxNavError:
        # The core numbers the links; the user knows the objects: the first bad one named.
        for i, name in enumerate(names):
            try:
                OffMeshLinks.create(starts[i : i + 1], ends[i : i + 1], radii[i : i + 1])
            except VoxNavError as exc:
                why = str(exc).removeprefix("off-mesh link 0: ")
                raise VoxNavError(f"Nav Link {name!r}: {why}") from None
        raise


def _link_points(obj):
    """(start, end) world positions of a Nav Link object, or None when it has no end."""
    matrix = obj.matrix_world
    end = obj.voxnav.nav_link_end
    if end is not None:
        return tuple(matrix.translation), tuple(end.matrix_world.translation)
    if obj.type == "CURVE" and len(obj.data.splines):
        spline = obj.data.splines[0]
        pts = spline.bezier_points if spline.type == "BEZIER" else spline.points
        if len(pts) >= 2:
            first, last = pts[0].co, pts[len(pts) - 1].co
            return (
                tuple(matrix @ first.to_3d()),
                tuple(matrix @ last.to_3d()),
            )
    return None


def _wanted(inst, source: str, allowed: set | None, view_layer) -> tuple[bool, Any]:
    """Whether a depsgraph instance is gathered, and the original object it counts as."""
    obj = inst.object
    owner = inst.parent if inst.is_instance and inst.parent is not None else obj
    owner_orig = owner.original
    if is_output(owner_orig) or is_output(obj.original):
        return False, owner_orig
    # A volume or obstacle is a shape, not geometry; but one inside a collection instance
    # (its instancer not ticked) is no shape either (those are the scene's own objects), so
    # it stays geometry, named by `gather` (it vanished: neither, the navmesh ran through it).
    marked = is_area_volume(obj.original) or is_dynamic_obstacle(obj.original)
    if is_area_volume(owner_orig) or is_dynamic_obstacle(owner_orig):
        return False, owner_orig
    if marked and not inst.is_instance:
        return False, owner_orig
    if obj.type != "MESH":  # a curve, text, surface or metaball's mesh is its own instance
        return False, owner_orig
    # An instancer (particles, vertices, faces) with "Show Instancer: Viewport" off: the
    # depsgraph still yields it, for its instances, but its own mesh is not drawn.
    if not getattr(inst, "show_self", True):
        return False, owner_orig
    # The object (or, for an instance, its instancer) must be visible in this view layer.
    if not owner_orig.visible_get(view_layer=view_layer):
        return False, owner_orig
    if source == "SELECTED" and not owner_orig.select_get(view_layer=view_layer):
        return False, owner_orig
    if allowed is not None and owner_orig.as_pointer() not in allowed:
        return False, owner_orig
    return True, owner_orig


def _listed(names) -> str:
    """Object names for a message: sorted, quoted, the first five (then "and more")."""
    ordered = sorted(set(names))
    more = " and more" if len(ordered) > 5 else ""
    return ", ".join(repr(n) for n in ordered[:5]) + more


def gather(context, source: str = "VISIBLE", collection=None) -> Gathered:
    """Triangles of every mesh-like instance of ``context``'s evaluated depsgraph.

    ``source``: "VISIBLE" (every visible object), "SELECTED" (selected objects, and what they
    instance) or "COLLECTION" (objects of ``collection`` and its children).
    """
    depsgraph = context.evaluated_depsgraph_get()
    view_layer = context.view_layer
    allowed: set | None = None
    if source == "COLLECTION":  # by identity: a library's object may share a local one's name
        allowed = set() if collection is None else {o.as_pointer() for o in collection.all_objects}

    cache: dict = {}
    sources: list[str] = []
    source_index: dict[int, int] = {}  # by identity, as ``allowed``
    parts_v: list[np.ndarray] = []
    parts_t: list[np.ndarray] = []
    parts_s: list[np.ndarray] = []
    bad_objects: list[str] = []
    instanced_marked: set[str] = set()
    offset = 0
    instances = 0
    for inst in depsgraph.object_instances:
        ok, owner = _wanted(inst, source, allowed, view_layer)
        if not ok:
            continue
        original = inst.object.original
        if is_area_volume(original) or is_dynamic_obstacle(original):
            instanced_marked.add(original.name)
        arrays = _mesh_arrays(inst.object.data, cache)
        if arrays is None:
            continue
        co, tri = arrays
        matrix = np.array(inst.matrix_world, dtype=np.float64)
        world = co.astype(np.float64) @ matrix[:3, :3].T
        world += matrix[:3, 3]
        if np.linalg.det(matrix[:3, :3]) < 0:
            tri = tri[:, ::-1]
        name = owner.name_full  # "Floor [lib.blend]" for a library's object
        with np.errstate(over="ignore", invalid="ignore"):
            placed = world.astype(np.float32)
        if not np.isfinite(placed).all():  # named here: the core knows vertex numbers only
            bad_objects.append(name)
        parts_v.append(placed)
        parts_t.append(tri + offset if offset else tri.copy())
        key = owner.as_pointer()
        if key not in source_index:
            source_index[key] = len(sources)
            sources.append(name)
        parts_s.append(np.full(tri.shape[0], source_index[key], dtype=np.int32))
        offset += co.shape[0]
        instances += 1

    if bad_objects:
        raise VoxNavError(
            f"object(s) {_listed(bad_objects)} have vertices with NaN or infinite coordinates "
            "(after their modifiers and transform): fix or hide that geometry"
        )
    notes = []
    if instanced_marked:
        notes.append(
            f"{_listed(instanced_marked)} ticked Dynamic Obstacle or Area Volume but placed by a "
            "collection instance: baked as geometry (an instanced copy is no shape of its own); "
            "tick it on the instance (the empty) instead"
        )
    if not parts_t:
        return Gathered(
            np.zeros((0, 3), np.float32),
            np.zeros((0, 3), np.int32),
            np.zeros(0, np.int32),
            sources,
            0,
            notes,
        )
    return Gathered(
        np.concatenate(parts_v),
        np.ascontiguousarray(np.concatenate(parts_t), dtype=np.int32),
        np.concatenate(parts_s),
        sources,
        instances,
        notes,
    )


def gather_scene(context) -> Gathered:
    """``gather`` with the scene's VoxNav source settings."""
    settings = context.scene.voxnav
    return gather(context, settings.source, settings.source_collection)
