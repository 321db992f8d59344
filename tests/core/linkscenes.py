"""Hand-made scenes for off-mesh link tests (#15): a 1.5 m gap and a 2 m ledge.

Z-up, metres. Solid boxes (closed, outward faces), so the heightfield sees walls and floors:

- ``floor_a``: x 0..10, y 0..8, top at z 0 (the ground the agent starts on).
- ``floor_b``: x 11.5..21.5, y 0..8, top at z 0: across a 1.5 m gap from ``floor_a``; the gap's
  bottom is 10 m below (``pit``), far beyond any climb or drop.
- ``ledge``: x 0..10, y 8..14, top at z 2: a platform 2 m above ``floor_a``'s level that
  shares ``floor_a``'s y = 8 edge as its wall. No stairs: up or down needs a link.
"""

from __future__ import annotations

import numpy as np

GAP = 1.5
LEDGE_HEIGHT = 2.0

#: Points on each walkable surface (x, y, z), for path tests.
ON_FLOOR_A = (3.0, 4.0, 0.0)
ON_FLOOR_B = (18.0, 4.0, 0.0)
ON_LEDGE = (5.0, 11.0, LEDGE_HEIGHT)


def box(bmin, bmax) -> tuple[np.ndarray, np.ndarray]:
    """A closed axis-aligned box: 8 float32 vertices, 12 triangles with outward normals."""
    (x0, y0, z0), (x1, y1, z1) = bmin, bmax
    verts = np.array(
        [
            (x0, y0, z0),
            (x1, y0, z0),
            (x1, y1, z0),
            (x0, y1, z0),
            (x0, y0, z1),
            (x1, y0, z1),
            (x1, y1, z1),
            (x0, y1, z1),
        ],
        dtype=np.float32,
    )
    quads = [
        (0, 3, 2, 1),  # bottom, facing -z
        (4, 5, 6, 7),  # top, facing +z
        (0, 1, 5, 4),  # y0 side
        (2, 3, 7, 6),  # y1 side
        (1, 2, 6, 5),  # x1 side
        (3, 0, 4, 7),  # x0 side
    ]
    tris = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
    return verts, np.array(tris, dtype=np.int32)


def merge(*meshes) -> tuple[np.ndarray, np.ndarray]:
    """One triangle soup from several (verts, tris) meshes."""
    verts, tris, offset = [], [], 0
    for mesh_verts, mesh_tris in meshes:
        verts.append(mesh_verts)
        tris.append(mesh_tris + offset)
        offset += len(mesh_verts)
    return np.concatenate(verts), np.concatenate(tris)


def gap_and_ledge_scene() -> tuple[np.ndarray, np.ndarray]:
    """The scene described in the module docstring, as float32 verts and int32 tris."""
    return merge(
        box((0.0, 0.0, -1.0), (10.0, 8.0, 0.0)),
        box((10.0 + GAP, 0.0, -1.0), (20.0 + GAP, 8.0, 0.0)),
        box((0.0, 8.0, -1.0), (10.0, 14.0, LEDGE_HEIGHT)),
        box((-2.0, -2.0, -11.0), (24.0, 16.0, -10.0)),
    )


def write_obj(path, verts, tris):
    """Write a Z-up soup as a Y-up OBJ, (x, y, z) -> (x, z, -y) as Blender's exporter does (so
    the core CLI reads it back, without --recast-frame, in the same Z-up frame)."""
    lines = [f"v {x:g} {z:g} {-y:g}" for x, y, z in np.asarray(verts).tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in np.asarray(tris).tolist()]
    path.write_text("\n".join(lines) + "\n")
    return path
