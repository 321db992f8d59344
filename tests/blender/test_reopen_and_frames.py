"""A reopened file's navmesh exports, Voxelize forgets the navmesh the Path Test walked, agent
overlays after their rows change, and animated obstacles and path ends follow the frame:
found by fuzzing the add-on headless (2026-11-27)."""

from __future__ import annotations

import numpy as np
import pytest

from .scenes import box
from .test_agents import _add_agent
from .test_live_path import _bake_demo, _live, _path_points
from .test_obstacles import _mod, _scene


def test_a_reopened_solo_bake_exports_the_navmesh_its_file_keeps(bpy, ext, tmp_path):
    # Export said "Build the navmesh first" after the file was reopened, though the navmesh
    # showed and the Path Test walked it (a tiled bake's file exported: its cache reloads).
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    box(bpy, "Step", (-1, -1, 0), (1, 1, 0.4))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    fresh = tmp_path / "fresh.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(fresh), file_format="BIN") == {"FINISHED"}
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert bpy.context.scene.session_uid not in ext.bake.LAST
    assert bpy.ops.voxnav.export_navmesh.poll()
    again = tmp_path / "again.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(again), file_format="BIN") == {"FINISHED"}
    assert again.read_bytes() == fresh.read_bytes()
    for fmt in ("OBJ", "JSON"):
        with pytest.raises(RuntimeError, match="Build Navmesh again"):
            bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "x"), file_format=fmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.bin", "fresh.bin", "level.blend"]


def test_voxelize_after_a_navmesh_bake_leaves_the_path_test_no_old_navmesh(bpy, ext):
    # The overlay showed Voxelize's walkable surface while the Path Test kept walking the
    # navmesh of the bake before.
    live = _live(ext)
    _bake_demo(bpy, ext)
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    scene = bpy.context.scene
    _start, _goal, path_obj = live.path_test_objects(scene)
    assert live.has_navmesh(scene) and _path_points(path_obj).shape[0] > 0
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    assert not live.has_navmesh(scene)
    assert scene.voxnav.path_status == live.STATUS_NO_NAVMESH
    assert _path_points(path_obj).shape[0] == 0


def test_an_agent_overlay_whose_row_changed_follows_show_navmesh(bpy, ext):
    # Matched to rows by name: after a rename (or removing the rows), Show Navmesh off and on
    # hid the overlay for good.
    agents = _mod(ext, "agents")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    row = _add_agent(bpy, "small", 0.3)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    overlay = bpy.data.objects[agents.overlay_name("small")]
    settings = bpy.context.scene.voxnav
    row.name = "tiny"
    settings.show_navmesh = False
    assert overlay.hide_viewport
    settings.show_navmesh = True
    assert not overlay.hide_viewport
    row.name = "small"
    row.show = False
    assert overlay.hide_viewport  # its own row's toggle still rules it


def test_animated_obstacles_and_path_ends_follow_the_frame(bpy, ext):
    # depsgraph_update_post does not run for frame changes: a keyframed obstacle left its old
    # hole in the tiles, and an animated Goal its old path.
    obstacles = _mod(ext, "obstacles")
    live = _live(ext)
    scene = bpy.context.scene
    crate = _scene(bpy, ext)
    crate.keyframe_insert("location", frame=1)
    crate.location = (7.0, 7.0, 0.0)
    crate.keyframe_insert("location", frame=20)
    scene.frame_set(1)
    live_tiles = obstacles.CACHES[scene.session_uid]
    ((_id, shape),) = live_tiles.obstacles.values()
    assert np.allclose(shape.box_xy(), (-8.0, -8.0, -6.0, -6.0))
    scene.frame_set(20)
    ((_id, shape),) = obstacles.CACHES[scene.session_uid].obstacles.values()
    assert np.allclose(shape.box_xy(), (6.0, 6.0, 8.0, 8.0))
    assert scene.voxnav.obstacle_tiles_rebuilt > 0

    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    start, goal, path_obj = live.path_test_objects(scene)
    start.location, goal.location = (-10.0, 0.0, 0.0), (10.0, 0.0, 0.0)
    goal.keyframe_insert("location", frame=20)
    goal.location = (0.0, 10.0, 0.0)
    goal.keyframe_insert("location", frame=30)
    scene.frame_set(20)
    assert abs(_path_points(path_obj)[-1, 0] - 10.0) < 0.5
    scene.frame_set(30)
    end = _path_points(path_obj)[-1]
    assert abs(end[0]) < 0.5 and abs(end[1] - 10.0) < 0.5
    # Voxel Path after a tiled bake said "no voxels in this session: Voxelize or Build
    # Navmesh first", right after Build Navmesh.
    with pytest.raises(RuntimeError, match="tiled bake keeps no voxel grid"):
        bpy.ops.voxnav.voxel_path()


def test_voxelize_draws_a_bounded_walkable_surface_and_the_cap_warning_follows_max_drawn(
    bpy, ext, monkeypatch
):
    # A 200 m plane at 0.05 m cells gave a 16 M-quad surface overlay (7.7 GB, a crash); and
    # after raising Max Drawn the old "drawing 100 of ..." warning stayed in Last Bake.
    monkeypatch.setattr(ext.bake, "MAX_SURFACE_QUADS", 50)
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    settings = bpy.context.scene.voxnav
    settings.max_voxels_drawn = 100
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    overlay = ext.writeback.scene_output(bpy.context.scene, ext.writeback.NAVMESH_NAME)
    assert 0 < len(overlay.data.polygons) <= 50
    texts = [w.text for w in settings.last_warnings]
    assert any("walkable span tops" in t for t in texts)
    assert any(t.startswith("drawing 100 of") for t in texts)
    settings.last_message = "kept"
    settings.max_voxels_drawn = 10_000_000
    texts = [w.text for w in settings.last_warnings]
    assert not any(t.startswith("drawing") for t in texts)
    assert any("walkable span tops" in t for t in texts) and settings.last_message == "kept"
    settings.max_voxels_drawn = 1
    assert sum(t.startswith("drawing 1 of") for t in (w.text for w in settings.last_warnings)) == 1


def test_results_linked_from_another_file_are_never_written_or_removed(bpy, ext, tmp_path):
    # A "VoxNav" collection linked from a baked level: Voxelize crashed Blender writing into
    # it, Build Navmesh filled its meshes, Clear deleted its objects; in a scene linked from
    # a library every operator ran (a crash, or a traceback from Sample Heights).
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    bpy.context.scene.name = "Level"
    library = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (data_from, data_to):
        data_to.collections = ["VoxNav"]
        data_to.scenes = ["Level"]
    linked = data_to.collections[0]
    bpy.context.scene.collection.children.link(linked)

    def faces(collection) -> dict:
        return {o.name: len(o.data.polygons) for o in collection.objects if o.type == "MESH"}

    linked_polys = faces(linked)
    box(bpy, "Other", (0, 0, 0), (3, 3, 0.2))
    assert not bpy.ops.voxnav.clear.poll()  # nothing of this file's own to clear
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert {
        o.name: len(o.data.polygons) for o in linked.objects if o.type == "MESH"
    } == linked_polys
    own = ext.writeback.output_collection(bpy.context.scene, create=False)
    assert own is not None and own.library is None and own is not linked
    assert bpy.ops.voxnav.clear() == {"FINISHED"}
    assert {o.name for o in linked.objects} >= set(linked_polys)
    bpy.context.window.scene = data_to.scenes[0]
    for name in ("voxelize", "build_navmesh", "add_path_test", "agent_add"):
        assert not getattr(bpy.ops.voxnav, name).poll(), name


def test_a_reopened_tiled_bake_without_its_cache_says_why_it_cannot_export(bpy, ext, tmp_path):
    """Tile Size set to 0 before saving a tiled bake: reopened, the Path Test walks the stored
    tiles but Export said "no navmesh stored in this scene", which was false."""
    bpy.ops.mesh.primitive_plane_add(size=24)
    scene = bpy.context.scene
    scene.voxnav.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    scene.voxnav.tile_size = 0
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    with pytest.raises(RuntimeError, match="keeps its tiled navmesh for the Path Test only"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.bin"), file_format="BIN")
    assert not (tmp_path / "nav.bin").exists()


def test_voxel_display_settings_on_a_reopened_file_say_they_wait_for_a_bake(bpy, ext, tmp_path):
    """Voxels As and Max Drawn redraw from the bake in memory; on a reopened file they did
    nothing, silently, while the panel showed a setting the viewport did not."""
    bake = _mod(ext, "bake")
    box(bpy, "Floor", (-5, -5, -0.5), (5, 5, 0))
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    voxels = bpy.data.objects[ext.writeback.VOXELS_NAME]
    drawn = len(voxels.data.vertices)
    bpy.context.scene.voxnav.max_voxels_drawn = 10  # redrawn at once: the bake is in memory
    assert len(voxels.data.vertices) < drawn
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "voxels.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "voxels.blend"))
    settings = bpy.context.scene.voxnav
    settings.max_voxels_drawn = 1000
    settings.max_voxels_drawn = 2000  # said once
    assert [w.text for w in settings.last_warnings].count(bake.STALE_VOXELS) == 1
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    assert bake.STALE_VOXELS not in [w.text for w in settings.last_warnings]
    # A tiled bake keeps no bake in memory and draws no voxels: nothing waits (a review found
    # the line said so after one).
    settings.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    settings.max_voxels_drawn = 500
    assert bake.STALE_VOXELS not in [w.text for w in settings.last_warnings]
