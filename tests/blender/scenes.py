"""Scene helpers shared by the Blender tests (tests-only; test modules import from here, never
from each other)."""

from __future__ import annotations

import numpy as np


def box(bpy, name, lo, hi, collection=None, **transform):
    """An axis-aligned box mesh object, linked to ``collection`` or the scene."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    verts = [(x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0)]
    verts += [(x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)]
    faces = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    for key, value in transform.items():
        setattr(obj, key, value)
    (collection or bpy.context.scene.collection).objects.link(obj)
    return obj


def overlay_verts(bpy, ext) -> np.ndarray:
    """float32 (n, 3) vertices of the VoxNav Navmesh overlay object."""
    mesh = bpy.data.objects[ext.writeback.NAVMESH_NAME].data
    co = np.zeros(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)
