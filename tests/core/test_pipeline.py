"""The pipeline's overlay: what the add-on draws as the navigation mesh."""

from __future__ import annotations

import numpy as np

from core import pipeline
from core.config import NavConfig

# A 6 x 6 m floor with a 2 x 2 x 3 m block in the middle.
FLOOR = [[0, 0, 0], [6, 0, 0], [6, 6, 0], [0, 6, 0]]
BLOCK = [[2, 2, 0], [4, 2, 0], [4, 4, 0], [2, 4, 0], [2, 2, 3], [4, 2, 3], [4, 4, 3], [2, 4, 3]]
RAMP_TOP = float(np.tan(np.radians(20)) * 6)
# A 20 degree ramp beside the floor, rising along y from 0 to RAMP_TOP.
RAMP = [[6, 0, 0], [12, 0, 0], [12, 6, RAMP_TOP], [6, 6, RAMP_TOP]]


def scene():
    verts = np.array(FLOOR + BLOCK, np.float32)
    tris = [[0, 1, 2], [0, 2, 3]]
    quads = [(4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    for a, b, c, d in quads:
        tris += [[a + 4, b + 4, c + 4], [a + 4, c + 4, d + 4]]
    tris += [[12, 13, 14], [12, 14, 15]]
    return np.vstack([verts, np.array(RAMP, np.float32)]), np.array(tris, np.int32)


def test_overlay_follows_the_walkable_surface():
    verts, tris = scene()
    result = pipeline.bake(verts, tris, NavConfig(cell_size=0.2, cell_height=0.1))
    over_verts, sizes, face_verts, region, poly = result.overlay()
    assert sizes.shape == region.shape == poly.shape
    assert int(sizes.sum()) == face_verts.shape[0]
    assert int(sizes.shape[0]) == result.counts["detail_tris"]
    assert set(np.unique(region)) <= set(result.polymesh.regs.tolist())
    # Every face points up, and every vertex lies on the floor or the ramp, not under it.
    tri = over_verts[face_verts.reshape(-1, 3)]
    up = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])[:, 2]
    assert np.all(up > 0)
    on_ramp = over_verts[:, 0] > 6.2
    ramp_height = over_verts[on_ramp, 1] / 6 * RAMP_TOP
    assert np.all(np.abs(over_verts[on_ramp, 2] - ramp_height) < 0.25)
    assert np.all(np.abs(over_verts[~on_ramp, 2]) < 0.25)
    # Nothing inside the block's footprint (eroded by the agent radius).
    inside = (np.abs(over_verts[:, 0] - 3) < 1.0) & (np.abs(over_verts[:, 1] - 3) < 1.0)
    assert not inside.any()


def test_overlay_before_the_navmesh_is_span_tops():
    verts, tris = scene()
    result = pipeline.bake(verts, tris, NavConfig(cell_size=0.2, cell_height=0.1),
                           stop_after="heightfield")  # fmt: skip
    over_verts, sizes, face_verts, region, poly = result.overlay()
    assert np.all(sizes == 4) and sizes.shape[0] == result.counts["walkable_spans"]
    assert np.all(region == 0)
