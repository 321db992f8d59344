"""The live path tool: Start and Goal empties, a path that follows them without a rebake."""

from __future__ import annotations

import importlib

import numpy as np
import pytest


def _live(ext):
    return importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")


def _path_points(obj) -> np.ndarray:
    if not obj.data.splines:
        return np.zeros((0, 3))
    spline = obj.data.splines[0]
    co = np.zeros(len(spline.points) * 4, dtype=np.float32)
    spline.points.foreach_get("co", co)
    return co.reshape(-1, 4)[:, :3]


def _bake_demo(bpy, ext):
    ext.demo.build_demo(bpy.context.scene, labels=False)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}


def test_path_follows_goal_without_rebake(bpy, ext, monkeypatch):
    live = _live(ext)
    _bake_demo(bpy, ext)
    scene = bpy.context.scene
    assert live.has_navmesh(scene)
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    start, goal, path_obj = live.path_test_objects(scene)
    start.location = ext.demo.PATH_START
    goal.location = ext.demo.PATH_GOAL
    bakes = []
    monkeypatch.setattr(ext.pipeline, "bake", lambda *a, **k: bakes.append(1))
    bpy.context.view_layer.update()
    first = _path_points(path_obj)
    settings = scene.voxnav
    assert settings.path_status == live.STATUS_REACHED
    assert first.shape[0] >= 3 and settings.path_polys >= 3
    # The path climbs the west stairs to the 3 m platform.
    assert first[0, 2] < 0.8 and first[-1, 2] > 2.9
    assert first[:, 0].min() < -6.9 and settings.path_length > 10

    goal.location = (5.5, 3.0, 0.0)  # somewhere else on the ground floor
    bpy.context.view_layer.update()
    moved = _path_points(path_obj)
    assert settings.path_status == live.STATUS_REACHED
    assert not np.array_equal(first, moved)
    assert abs(moved[-1, 0] - 5.5) < 0.5 and abs(moved[-1, 1] - 3.0) < 0.5
    assert bakes == []  # the handler ran the query only

    goal.location = (100.0, 100.0, 0.0)  # off the navmesh
    bpy.context.view_layer.update()
    assert settings.path_status == live.STATUS_NO_GOAL
    assert _path_points(path_obj).shape[0] == 0


def test_path_keeps_working_after_reload(bpy, ext, tmp_path):
    live = _live(ext)
    _bake_demo(bpy, ext)
    bpy.ops.voxnav.add_path_test()
    start, goal, _ = live.path_test_objects(bpy.context.scene)
    start.location = ext.demo.PATH_START
    goal.location = ext.demo.PATH_GOAL
    bpy.context.view_layer.update()
    blend = tmp_path / "path.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    start, goal, path_obj = live.path_test_objects(scene)
    assert live.has_navmesh(scene)
    goal.location = (5.5, 3.0, 0.0)
    bpy.context.view_layer.update()
    assert scene.voxnav.path_status == live.STATUS_REACHED
    end = _path_points(path_obj)[-1]
    assert abs(end[0] - 5.5) < 0.5


def test_height_samples_and_voxel_path(bpy, ext):
    live = _live(ext)
    _bake_demo(bpy, ext)
    bpy.ops.voxnav.add_path_test()
    scene = bpy.context.scene
    start, goal, _ = live.path_test_objects(scene)
    start.location = ext.demo.PATH_START
    goal.location = ext.demo.PATH_GOAL
    assert bpy.ops.voxnav.sample_heights() == {"FINISHED"}
    heights = _path_points(bpy.data.objects[live.HEIGHTS_NAME])
    assert heights.shape[0] == live.HEIGHT_SAMPLES  # the line lies over the level everywhere
    assert heights[0, 2] < 0.5 and heights[-1, 2] > 3.0
    assert bpy.ops.voxnav.voxel_path() == {"FINISHED"}
    voxels = _path_points(bpy.data.objects[live.VOXEL_PATH_NAME])
    assert voxels.shape[0] > 10 and voxels[-1, 2] > 3.0


def test_add_path_test_needs_a_navmesh(bpy, ext):
    assert not bpy.ops.voxnav.add_path_test.poll()


def test_clear_removes_the_path_test_and_stored_navmesh(bpy, ext):
    live = _live(ext)
    _bake_demo(bpy, ext)
    bpy.ops.voxnav.add_path_test()
    assert bpy.ops.voxnav.clear() == {"FINISHED"}
    scene = bpy.context.scene
    assert not live.has_navmesh(scene)
    assert live.path_test_objects(scene) == (None, None, None)
    # Rebaking does not gather the (removed) path tube, and the counts are unchanged.
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}


def test_path_curve_moved_with_the_level_is_drawn_from_start(bpy, ext):
    """Selecting everything (VoxNav's objects too) and moving it, then baking again: the path
    is redrawn in world space from Start to Goal, not offset by the curve's own move."""
    live = _live(ext)
    _bake_demo(bpy, ext)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    start, goal, path_obj = live.path_test_objects(scene)
    start.location = ext.demo.PATH_START
    goal.location = (5.5, 3.0, 0.0)
    bpy.context.view_layer.update()
    for obj in scene.objects:
        obj.location.x += 5.0
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    live.update_path(scene)
    bpy.context.view_layer.update()
    assert scene.voxnav.path_status == live.STATUS_REACHED
    to_world = np.array(path_obj.matrix_world)
    points = _path_points(path_obj) @ to_world[:3, :3].T + to_world[:3, 3]
    assert np.abs(points[0, :2] - np.array(start.matrix_world.translation)[:2]).max() < 0.5
    assert np.abs(points[-1, :2] - np.array(goal.matrix_world.translation)[:2]).max() < 0.5


def test_add_path_test_places_a_parented_start_in_world_space(bpy, ext):
    live = _live(ext)
    _bake_demo(bpy, ext)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    start, _goal, _path = live.path_test_objects(scene)
    holder = bpy.data.objects.new("Holder", None)
    scene.collection.objects.link(holder)
    holder.location = (0.0, 5.0, 0.0)
    bpy.context.view_layer.update()
    start.parent = holder
    wanted = tuple(ext.demo.PATH_START)
    live.add_path_test(scene, wanted, tuple(ext.demo.PATH_GOAL))
    bpy.context.view_layer.update()
    assert np.allclose(np.array(start.matrix_world.translation), wanted, atol=1e-4)


def test_height_samples_gather_without_the_drawn_voxels(bpy, ext, monkeypatch):
    """Sample Heights gathered the scene with the voxel cubes' instancing on: gathering walks
    every drawn cube in Python (2.4 s with a million). It is off while gathering, as a bake's."""
    live = _live(ext)
    gather = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.gather")
    ext.demo.build_demo(bpy.context.scene, labels=False)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}  # Start and Goal stay
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}  # the cubes drawn
    scene = bpy.context.scene

    def instancing() -> list[bool]:
        return [
            mod.show_viewport
            for obj in ext.writeback.output_objects(scene)
            for mod in obj.modifiers
            if mod.type == "NODES"
        ]

    assert instancing() and all(instancing())
    seen = []
    real = gather.gather

    def recording(*args, **kwargs):
        seen.append(instancing())
        return real(*args, **kwargs)

    monkeypatch.setattr(gather, "gather", recording)
    live.sample_heights(bpy.context)
    assert seen and not any(any(states) for states in seen)
    assert all(instancing())  # back on afterwards


def test_voxel_path_refuses_a_grid_too_large_before_building_it(bpy, ext, monkeypatch):
    """Voxel Path built the whole dense grid (30 GiB for a 4000 x 4000 x 8191 Voxelize) before
    the navigator's size refusal: now the refusal comes first, through the operator's report."""
    voxel_path = importlib.import_module(f"{ext.root.__name__}.core.nav.voxel_path")
    pipeline = importlib.import_module(f"{ext.root.__name__}.core.pipeline")
    _bake_demo(bpy, ext)
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    monkeypatch.setattr(voxel_path, "MAX_NAVIGATOR_VOXELS", 1000)

    def no_grid(*args, **kwargs):
        raise AssertionError("the dense grid was built before the size check")

    monkeypatch.setattr(pipeline.BakeResult, "voxel_grid", no_grid)
    with pytest.raises(RuntimeError, match="more than voxel path finding handles"):
        bpy.ops.voxnav.voxel_path()


def test_add_path_test_places_start_and_goal_on_the_demo_s_walkable_floor(bpy, ext):
    """The default ends stood at the middle height of the navmesh's bounds (1.7 m over the
    demo's floor), over a piece cut off from the rest: the first path was partial."""
    live = _live(ext)
    _bake_demo(bpy, ext)
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    scene = bpy.context.scene
    assert scene.voxnav.path_status == live.STATUS_REACHED
    query = live.navmesh_query(scene)
    start, goal, _ = live.path_test_objects(scene)
    for end in (start, goal):
        at = np.array(end.location)
        hit = query.find_nearest_poly(at)
        assert np.linalg.norm(np.asarray(hit.point, dtype=np.float64) - at) < 0.05
    assert goal.location.x - start.location.x > 10.0


def test_voxel_path_ignores_a_hidden_obstacle_as_the_bake_does(bpy, ext):
    live = _live(ext)
    bpy.ops.mesh.primitive_plane_add(size=10)
    bpy.ops.mesh.primitive_cube_add(size=1, location=(0, 0, 0.5))
    wall = bpy.context.active_object
    wall.scale = (0.4, 12, 1.0)  # a 1 m wall across the floor
    wall.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    live.add_path_test(bpy.context.scene, (-3.0, 0.0, 0.1), (3.0, 0.0, 0.1))
    assert bpy.ops.voxnav.voxel_path() == {"FINISHED"}
    over = _path_points(bpy.data.objects[live.VOXEL_PATH_NAME])
    assert over[:, 2].max() > 0.9  # climbs the wall
    wall.hide_set(True)  # the bake ignores it (the path test reaches): so does Voxel Path
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.ops.voxnav.voxel_path() == {"FINISHED"}
    across = _path_points(bpy.data.objects[live.VOXEL_PATH_NAME])
    assert across[:, 2].max() < 0.5 and across.shape[0] < over.shape[0]


def test_voxel_path_says_an_end_above_the_voxels_is_to_be_lowered(bpy, ext, capsys):
    from .scenes import box

    live = _live(ext)
    box(bpy, "Floor", (-6, -2, -0.5), (6, 2, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    live.add_path_test(bpy.context.scene, (-4.0, 0.0, 1.5), (4.0, 0.0, 0.1))
    assert bpy.ops.voxnav.voxel_path() == {"FINISHED"}
    scene = bpy.context.scene
    start, _goal, _ = live.path_test_objects(scene)
    found = live.voxel_path(bpy.context)
    assert not found.found
    assert "Start is above the voxels" in live.voxel_path_hint(bpy.context, found)


def test_path_tools_wait_for_object_mode(bpy, ext):
    """Sample Heights ran in Edit Mode (the edits not evaluated), found no ground and
    replaced the samples with an empty line."""
    live = _live(ext)
    _bake_demo(bpy, ext)
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    assert bpy.ops.voxnav.sample_heights() == {"FINISHED"}
    floor = next(o for o in bpy.context.scene.objects if o.type == "MESH" and o.visible_get())
    bpy.context.view_layer.objects.active = floor
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        assert not bpy.ops.voxnav.sample_heights.poll()
        assert not bpy.ops.voxnav.voxel_path.poll()
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    assert _path_points(bpy.data.objects[live.HEIGHTS_NAME]).shape[0] == live.HEIGHT_SAMPLES


@pytest.mark.parametrize(
    "stored", [b"MSET" + bytes(8), b"MSET" + bytes(2000), b"not a navmesh", "%%% not base64"]
)
def test_a_damaged_stored_navmesh_says_to_build_again(bpy, ext, stored):
    """An edited or cut stored navmesh was reported with the .bin reader's advice ("export
    the navmesh again as Detour .bin"), which the file's navmesh is not."""
    import base64

    live = _live(ext)
    bpy.ops.mesh.primitive_plane_add(size=10)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    scene = bpy.context.scene
    text = stored if isinstance(stored, str) else base64.b64encode(stored).decode("ascii")
    scene[live.NAVMESH_KEY] = text
    report = live.update_path(scene)
    assert report.status == live.STORED_DAMAGED
    with pytest.raises(RuntimeError, match="damaged and cannot be read: Build Navmesh again"):
        bpy.ops.voxnav.add_path_test()
