"""The VoxNav demo level, built procedurally (no assets) into the collection "VoxNav Demo".

A 24 x 16 m ground floor (Z-up, top at z = 0) with every case a navmesh must get right:

- two flights of stairs (0.2 m steps, under RecastDemo's 0.9 m climb) up to two 3 m platforms;
  the east flight is the west one's mesh with scale x = -1 (a negative-scaled object);
- a bridge joining the platforms at 3 m, high enough to walk under;
- a 60 degree ramp (too steep: not walkable) and a 20 degree ramp (walkable) to a 2 m deck;
- a low ceiling (1.2 m) on four pillars made by Array modifiers: nothing walkable beneath it;
- crates placed as instances of the collection "VoxNav Demo Crate" (collection instances).

`build_demo(scene)` replaces a previous demo; nothing accumulates.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

DEMO_COLLECTION = "VoxNav Demo"
CRATE_COLLECTION = "VoxNav Demo Crate"

FLOOR_COLOR = (0.62, 0.62, 0.60, 1.0)
WALL_COLOR = (0.48, 0.47, 0.45, 1.0)
CRATE_COLOR = (0.55, 0.40, 0.25, 1.0)

#: The demo's path test: from the ground floor up the west stairs onto the west platform.
PATH_START = (1.0, -2.0, 0.0)
PATH_GOAL = (-10.0, 4.0, 3.0)

#: Stairs: 15 steps of 0.2 m rise and 0.4 m run climb 3 m over 6 m.
STEPS, RISE, RUN = 15, 0.2, 0.4


def _box_geometry(lo, hi, offset=0):
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    verts = [
        (x0, y0, z0),
        (x1, y0, z0),
        (x1, y1, z0),
        (x0, y1, z0),
        (x0, y0, z1),
        (x1, y0, z1),
        (x1, y1, z1),
        (x0, y1, z1),
    ]
    faces = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    return verts, [tuple(i + offset for i in f) for f in faces]


def _mesh(name, boxes=(), extra=None) -> Any:
    """A mesh made of axis-aligned boxes [(lo, hi), ...] plus optional (verts, faces)."""
    verts: list = []
    faces: list = []
    for lo, hi in boxes:
        v, f = _box_geometry(lo, hi, len(verts))
        verts += v
        faces += f
    if extra is not None:
        off = len(verts)
        verts += list(extra[0])
        faces += [tuple(i + off for i in f) for f in extra[1]]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    return mesh


def _material(name, color):
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = color
    return mat


def _object(coll, name, mesh, material, location=(0, 0, 0), scale=(1, 1, 1)):
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    obj.scale = scale
    if material is not None:
        mesh.materials.append(material)
    coll.objects.link(obj)
    return obj


def _wedge(x0, x1, y0, y1, z_top):
    """A ramp: rises from z=0 at x0 to z_top at x1 (a triangular prism)."""
    verts = [(x0, y0, 0), (x1, y0, 0), (x1, y0, z_top), (x0, y1, 0), (x1, y1, 0), (x1, y1, z_top)]
    if x1 < x0:
        faces = [(0, 2, 1), (3, 4, 5), (0, 3, 5, 2), (1, 2, 5, 4), (0, 1, 4, 3)]
    else:
        faces = [(0, 1, 2), (3, 5, 4), (0, 2, 5, 3), (1, 4, 5, 2), (0, 3, 4, 1)]
    return verts, faces


def remove_demo() -> None:
    """Remove a previous demo (objects, their meshes, the crate collection)."""
    for name in (DEMO_COLLECTION, CRATE_COLLECTION):
        coll = bpy.data.collections.get(name)
        if coll is None:
            continue
        for obj in list(coll.objects):
            data = obj.data
            bpy.data.objects.remove(obj)
            if isinstance(data, bpy.types.Mesh) and data.users == 0:
                bpy.data.meshes.remove(data)
            elif isinstance(data, bpy.types.Curve) and data.users == 0:
                bpy.data.curves.remove(data)
        bpy.data.collections.remove(coll)


#: Labels floating over the features: (text, location). Tagged so they are never gathered.
LABELS = (
    ("60° ramp: too steep", (-6.9, -6.0, 3.6)),
    ("20° ramp", (2.8, -5.5, 1.6)),
    ("low ceiling 1.2 m", (-2.0, -5.0, 1.9)),
    ("bridge, walkable beneath", (0.0, 4.6, 3.9)),
    ("mirrored stairs (scale x -1)", (4.6, 0.4, 3.2)),
    ("crates: collection instances", (3.4, -0.4, 1.9)),
)


def add_labels(coll, facing=(-0.5, -0.8, 1.0)) -> None:
    """Dark text labels over the demo's features, turned towards ``facing`` (a direction)."""
    import mathutils

    from .gather import OUTPUT_TAG

    mat = _material("VoxNav Demo Label", (0.02, 0.02, 0.03, 1.0))
    rotation = mathutils.Vector(facing).normalized().to_track_quat("Z", "Y").to_euler()
    for text, location in LABELS:
        curve: Any = bpy.data.curves.new(f"Label {text}", "FONT")
        curve.body = text
        curve.align_x = "CENTER"
        curve.size = 0.6
        curve.extrude = 0.02
        curve.materials.append(mat)
        obj = bpy.data.objects.new(f"Label: {text}", curve)
        obj.location = location
        obj.rotation_euler = rotation
        obj[OUTPUT_TAG] = True  # never gathered as geometry
        coll.objects.link(obj)


def build_demo(scene, labels: bool = True) -> bpy.types.Collection:
    """Build the demo level into ``scene`` (replacing a previous one); return its collection.

    ``labels``: add dark text labels naming the features (never gathered as geometry)."""
    remove_demo()
    coll = bpy.data.collections.new(DEMO_COLLECTION)
    scene.collection.children.link(coll)
    floor = _material("VoxNav Demo Floor", FLOOR_COLOR)
    wall = _material("VoxNav Demo Wall", WALL_COLOR)

    _object(coll, "Ground", _mesh("Ground", [((-12, -8, -0.2), (12, 8, 0))]), floor)
    _object(
        coll,
        "Platforms",
        _mesh("Platforms", [((-12, 0, 0), (-7, 8, 3)), ((7, 0, 0), (12, 8, 3))]),
        wall,
    )
    # West stairs rise towards -x from x = -1 to x = -7; the east flight mirrors them.
    steps = [
        ((-1 - (i + 1) * RUN, 1.0, 0.0), (-1 - i * RUN, 4.0, (i + 1) * RISE)) for i in range(STEPS)
    ]
    stairs_mesh = _mesh("Stairs", steps)
    _object(coll, "Stairs West", stairs_mesh, floor)
    _object(coll, "Stairs East (mirrored)", stairs_mesh, None, scale=(-1.0, 1.0, 1.0))
    # The bridge: 0.3 m thick, its underside 2.7 m above the ground (walkable beneath).
    _object(coll, "Bridge", _mesh("Bridge", [((-7, 5, 2.7), (7, 7.5, 3.0))]), floor)

    # Ramps on the south side: 60 degrees (blocked), 20 degrees (walkable) up to a 2 m deck.
    steep_run = 3.0 / math.tan(math.radians(60))
    _object(
        coll,
        "Ramp 60deg (too steep)",
        _mesh("Ramp Steep", extra=_wedge(-6.0, -6.0 - steep_run, -7.5, -4.5, 3.0)),
        wall,
    )
    gentle_run = 2.0 / math.tan(math.radians(20))
    _object(
        coll,
        "Ramp 20deg",
        _mesh(
            "Ramp Gentle",
            boxes=[((6.0, -7.5, 0.0), (12.0, -3.5, 2.0))],
            extra=_wedge(6.0 - gentle_run, 6.0, -7.5, -3.5, 2.0),
        ),
        floor,
    )

    # Low ceiling: a slab at 1.2 m on four pillars (one pillar and two Array modifiers).
    slab = _mesh("Low Ceiling", [((-4.5, -7.5, 1.2), (0.5, -2.5, 1.4))])
    _object(coll, "Low Ceiling", slab, wall)
    pillar = _object(
        coll, "Pillars (Array)", _mesh("Pillar", [((-4.5, -7.5, 0), (-4.2, -7.2, 1.2))]), wall
    )
    for axis, offset in ((0, 4.7), (1, 4.7)):
        mod = pillar.modifiers.new(f"Array {'XY'[axis]}", "ARRAY")
        mod.count = 2
        mod.use_relative_offset = False
        mod.use_constant_offset = True
        vec = [0.0, 0.0, 0.0]
        vec[axis] = offset
        mod.constant_offset_displace = vec

    # Crates: a collection (not linked to the scene) instanced by empties.
    crate_coll = bpy.data.collections.new(CRATE_COLLECTION)
    crate = _mesh("Crate", [((-0.6, -0.6, 0), (0.6, 0.6, 1.2))])
    _object(crate_coll, "Crate", crate, _material("VoxNav Demo Crate", CRATE_COLOR))
    for i, (x, y) in enumerate(((2.5, -1.5), (4.2, -1.0), (3.2, 0.6), (-8.5, -1.5))):
        empty = bpy.data.objects.new(f"Crate Instance {i + 1}", None)
        empty.instance_type = "COLLECTION"
        empty.instance_collection = crate_coll
        empty.location = (x, y, 0.0)
        empty.rotation_euler[2] = math.radians(17 * i)
        coll.objects.link(empty)
    if labels:
        add_labels(coll)
    return coll
