"""Island pruning in Blender: an empty ticked "Reachable From" on the ground makes an
unreachable rooftop island disappear from the navmesh and its overlay."""

from __future__ import annotations

import numpy as np

from .test_obstacles import _box, _overlay


def _scene(bpy):
    _box(bpy, "Floor", (-10, -10, -0.5), (10, 10, 0))
    _box(bpy, "House", (4, 4, 0), (9, 9, 5))  # its flat roof is a walkable island


def _roof_polys(outcome) -> int:
    pm = outcome.result.polymesh
    world = pm.world_verts()
    ids = pm.polys[:, : pm.nvp]
    lowest = np.where(ids != 0xFFFF, world[np.minimum(ids, pm.nverts - 1), 2], np.inf).min(axis=1)
    return int((lowest > 3.0).sum())


def test_reachable_from_empty_removes_the_rooftop_island(bpy, ext):
    _scene(bpy)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    before = ext.bake.LAST[scene.session_uid]
    assert _roof_polys(before) > 0  # the roof is baked without pruning
    assert _overlay(bpy, ext)[:, 2].max() > 3.0
    start = bpy.data.objects.new("Start", None)
    start.location = (-5.0, -5.0, 0.1)
    start.voxnav.reachable_from = True
    scene.collection.objects.link(start)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    after = ext.bake.LAST[scene.session_uid]
    assert _roof_polys(after) == 0
    assert after.result.prune.polys_cut == before.result.polymesh.npolys - (
        after.result.polymesh.npolys
    )
    assert after.counts["polys_pruned"] > 0 and after.counts["pruned_area"] > 0
    assert _overlay(bpy, ext)[:, 2].max() < 3.0
    assert "island pruning removed" in after.summary()
