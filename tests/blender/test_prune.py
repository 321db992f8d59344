"""Island pruning in Blender: an empty ticked "Reachable From" on the ground makes an
unreachable rooftop island disappear from the navmesh and its overlay."""

from __future__ import annotations

import importlib

import numpy as np

from .scenes import box, overlay_verts


def _scene(bpy):
    box(bpy, "Floor", (-10, -10, -0.5), (10, 10, 0))
    box(bpy, "House", (4, 4, 0), (9, 9, 5))  # its flat roof is a walkable island


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
    assert overlay_verts(bpy, ext)[:, 2].max() > 3.0
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
    assert overlay_verts(bpy, ext)[:, 2].max() < 3.0
    assert "island pruning removed" in after.summary()


def test_disable_mode_keeps_the_roof_with_area_0(bpy, ext):
    _scene(bpy)
    scene = bpy.context.scene
    scene.voxnav.prune_mode = "DISABLE"
    start = bpy.data.objects.new("Start", None)
    start.location = (-5.0, -5.0, 0.1)
    start.voxnav.reachable_from = True
    scene.collection.objects.link(start)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[scene.session_uid]
    pm = outcome.result.polymesh
    assert _roof_polys(outcome) > 0
    cut = ~outcome.result.prune.reached
    assert cut.any() and (pm.areas[cut] == 0).all() and (pm.flags[cut] & 0x10).all()
    assert (pm.areas[~cut] != 0).all()


def test_cli_reachable_from(bpy, ext, tmp_path, capsys):
    _scene(bpy)
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    full, pruned = tmp_path / "full.json", tmp_path / "pruned.json"
    assert ext.cli.main([str(blend), "--json", str(full)]) == 0
    assert ext.cli.main([str(blend), "--json", str(pruned), "--reachable-from=-5,-5,0.1"]) == 0
    read = importlib.import_module(f"{ext.root.__name__}.core.export").read_navmesh_json
    n_full, n_pruned = len(read(full)[0].polys), len(read(pruned)[0].polys)
    assert 0 < n_pruned < n_full
    capsys.readouterr()
    assert ext.cli.main([str(blend), "--json", str(pruned), "--reachable-from", "1,2"]) == 2
    assert "--reachable-from expects X,Y,Z" in capsys.readouterr().err
    assert ext.cli.main([str(blend), "--json", str(pruned), "--prune-mode", "drop"]) == 2
    # A point far from any floor: a warning naming it, nothing pruned.
    assert ext.cli.main([str(blend), "--json", str(pruned), "--reachable-from", "50,50,0"]) == 0
    assert "(50, 50, 0)" in capsys.readouterr().err
    assert len(read(pruned)[0].polys) == n_full


def _scene_reachable_from_the_ground(bpy):
    """`_scene` with a Reachable From empty on the ground (the roof is an island); the scene."""
    _scene(bpy)
    scene = bpy.context.scene
    start = bpy.data.objects.new("Start", None)
    start.location = (-5.0, -5.0, 0.1)
    start.voxnav.reachable_from = True
    scene.collection.objects.link(start)
    return scene


def test_tiled_bake_prunes_and_stays_pruned_through_obstacle_rebuilds(bpy, ext):
    """With Tile Size set, the Reachable From empty prunes the tiled navmesh too: the roof
    island leaves the overlay and the stored navmesh; a dynamic obstacle's live rebuild keeps
    it pruned (the tile cache itself stays whole)."""
    scene = _scene_reachable_from_the_ground(bpy)
    scene.voxnav.tile_size = 32
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert overlay_verts(bpy, ext)[:, 2].max() < 3.0  # the roof island is gone
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    live_tiles = obstacles.CACHES[scene.session_uid]
    report = live_tiles.prune_report
    assert report is not None and report.polys_cut > 0
    whole = sum(t.npolys for t in live_tiles.cache.tiles.values())
    assert live_tiles.navmesh.poly_count == whole - report.polys_cut
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    assert live.navmesh_query(scene).nav.poly_count == live_tiles.navmesh.poly_count
    count = live_tiles.cache.rebuild_count
    crate = box(bpy, "Crate", (-0.5, -0.5, 0), (0.5, 0.5, 1), location=(-6.0, 2.0, 0.0))
    crate.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()  # the handler rebuilds the crate's tiles
    assert live_tiles.cache.rebuild_count > count
    assert overlay_verts(bpy, ext)[:, 2].max() < 3.0
    assert live_tiles.prune_report.polys_cut >= report.polys_cut


def test_a_reopened_tiled_bake_exports_the_pruning_its_overlay_shows(bpy, ext, tmp_path):
    """Prune mode changed after a tiled bake (no rebake), the file saved and reopened: the
    overlay and the Path Test kept the bake's pruning, but Export wrote the navmesh pruned with
    the current mode (the reopened cache read the scene's settings, not the bake's)."""
    scene = _scene_reachable_from_the_ground(bpy)
    scene.voxnav.tile_size = 16
    scene.voxnav.prune_mode = "REMOVE"
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    before = tmp_path / "before.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(before), file_format="BIN") == {"FINISHED"}
    scene.voxnav.prune_mode = "DISABLE"  # changed, not baked
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    after = tmp_path / "after.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(after), file_format="BIN") == {"FINISHED"}
    assert after.read_bytes() == before.read_bytes()
