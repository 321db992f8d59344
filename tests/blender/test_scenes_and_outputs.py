"""Results per scene, result objects back at the origin, exports that need a file name, and a
Voxelize after a tiled bake: found by fuzzing the add-on headless (2026-11-27)."""

from __future__ import annotations

import numpy as np
import pytest

from .scenes import box
from .test_obstacles import _mod, _scene


def _extent(obj) -> tuple[list[float], list[float]]:
    co = np.array([(obj.matrix_world @ v.co)[:] for v in obj.data.vertices])
    return co.min(axis=0).round(1).tolist(), co.max(axis=0).round(1).tolist()


def test_each_scene_keeps_its_own_result(bpy, ext):
    # Outputs were found by name in the whole file: baking scene B refilled scene A's navmesh
    # with B's floor and linked it into both, and Clear in B removed A's result.
    writeback = _mod(ext, "writeback")
    a = bpy.context.scene
    box(bpy, "FloorA", (-5, -5, -0.2), (5, 5, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    navmesh_a = writeback.scene_output(a, writeback.NAVMESH_NAME)
    extent_a = _extent(navmesh_a)
    b = bpy.data.scenes.new("B")
    bpy.context.window.scene = b
    assert not bpy.ops.voxnav.clear.poll()  # B has no result yet
    box(bpy, "FloorB", (100, 100, -0.2), (120, 120, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    navmesh_b = writeback.scene_output(b, writeback.NAVMESH_NAME)
    assert navmesh_b is not None and navmesh_b != navmesh_a
    assert [s.name for s in navmesh_a.users_scene] == [a.name]
    assert _extent(navmesh_a) == extent_a and _extent(navmesh_b)[0][0] > 99
    assert writeback.output_collection(a, create=False) != writeback.output_collection(b)
    bpy.ops.voxnav.clear()
    assert not writeback.output_objects(b)
    assert writeback.scene_output(a, writeback.NAVMESH_NAME) == navmesh_a
    assert _extent(navmesh_a) == extent_a


def test_a_moved_result_object_goes_back_to_the_origin_on_rebake(bpy, ext):
    # The results are world-space: a navmesh object moved with the level (select all, move)
    # kept its offset, and the rebaked navmesh sat 30 m beside its floor.
    writeback = _mod(ext, "writeback")
    floor = box(bpy, "Floor", (-10, -10, -0.2), (10, 10, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    navmesh = writeback.scene_output(bpy.context.scene, writeback.NAVMESH_NAME)
    for obj in (floor, navmesh):
        obj.location.x += 30.0
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    navmesh = writeback.scene_output(bpy.context.scene, writeback.NAVMESH_NAME)
    assert tuple(navmesh.location) == (0.0, 0.0, 0.0)
    low, high = _extent(navmesh)
    assert 20.0 <= low[0] and high[0] <= 40.0


def test_export_without_a_file_name_is_refused(bpy, ext, tmp_path):
    # "" or "folder/" wrote a hidden ".obj" and reported success.
    import pytest

    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    bpy.ops.voxnav.build_navmesh()
    for target in ("", str(tmp_path) + "/"):
        with pytest.raises(RuntimeError, match="no file name"):
            bpy.ops.voxnav.export_navmesh(filepath=target, file_format="OBJ")
    assert list(tmp_path.iterdir()) == []


def test_voxelize_after_a_tiled_bake_ends_the_tile_cache(bpy, ext):
    # Voxelize replaced the overlay but left the tiles' cache live: the next obstacle move
    # wrote the old tiles over it, and Export still exported them.
    obstacles = _mod(ext, "obstacles")
    crate = _scene(bpy, ext)
    scene = bpy.context.scene
    assert scene.session_uid in obstacles.CACHES
    assert bpy.ops.voxnav.voxelize() == {"FINISHED"}
    assert scene.session_uid not in obstacles.CACHES
    assert not bpy.ops.voxnav.export_navmesh.poll()
    crate.location = (5.0, 5.0, 0.0)
    bpy.context.view_layer.update()
    assert scene.session_uid not in obstacles.CACHES


def test_a_tiled_agent_with_an_empty_navmesh_keeps_the_previous_result(bpy, ext):
    # Only the first agent's tiles were checked: a second agent too wide for the floor baked
    # "finished" with an empty overlay, where the solo bake keeps the previous result and
    # warns (and Export then failed for every agent).
    from .test_agents import _tiled_two_agents

    agents, obstacles = _mod(ext, "agents"), _mod(ext, "obstacles")
    scene = _tiled_two_agents(bpy)
    before = {name: len(bpy.data.objects[agents.overlay_name(name)].data.polygons)
              for name in ("small", "large")}  # fmt: skip
    live_tiles = obstacles.CACHES[scene.session_uid]
    scene.voxnav.agents[1].radius = 9.0  # "large": wider than the 12 m floor
    bpy.ops.voxnav.build_navmesh()
    assert "Empty navmesh for agent(s) large" in scene.voxnav.last_message
    assert obstacles.CACHES[scene.session_uid] is live_tiles
    for name, polygons in before.items():
        assert len(bpy.data.objects[agents.overlay_name(name)].data.polygons) == polygons


def test_a_reloaded_tile_cache_rewrites_the_overlay_for_the_change_that_loaded_it(bpy, ext):
    # The live cache lost (the add-on re-enabled, say), an obstacle moves: the cache is
    # loaded from disk with the obstacle where it is now, but the overlay kept the old hole
    # until some later change ("0 tile(s) rebuilt").
    obstacles, writeback = _mod(ext, "obstacles"), _mod(ext, "writeback")
    crate = _scene(bpy, ext)
    scene = bpy.context.scene

    def overlay():
        mesh = writeback.scene_output(scene, writeback.NAVMESH_NAME).data
        co = np.zeros(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        return co

    before = overlay()
    obstacles.CACHES.clear()
    crate.location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    assert "tile cache loaded from" in scene.voxnav.obstacle_status
    assert scene.session_uid in obstacles.CACHES
    assert not np.array_equal(before, overlay())  # rewritten for the crate's new place


def test_a_nan_vertex_is_named_by_its_object(bpy, ext):
    # The core names vertices by their place in the gathered soup ("vertex 8"), which no
    # user can find: the add-on names the object.
    import pytest

    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    bad = box(bpy, "Broken Crate", (1, 1, 0), (2, 2, 1))
    bad.data.vertices[0].co = (float("nan"), 1.0, 0.0)
    with pytest.raises(RuntimeError, match="'Broken Crate' have vertices with NaN"):
        bpy.ops.voxnav.build_navmesh()
    assert not _mod(ext, "writeback").output_objects(bpy.context.scene)


def test_a_tiled_bake_far_from_the_origin_warns_as_the_solo_bake_does(bpy, ext):
    box(bpy, "Floor", (1e6, 0, -0.2), (1e6 + 12, 12, 0))
    scene = bpy.context.scene
    scene.voxnav.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert any("from the origin" in w.text for w in scene.voxnav.last_warnings)


def test_an_empty_tiled_bake_names_the_likely_cause(bpy, ext):
    # Bounds that miss the geometry: the solo bake named them, the tiled one said nothing.
    box(bpy, "Floor", (-6, -6, -0.2), (6, 6, 0))
    scene = bpy.context.scene
    scene.voxnav.tile_size = 16
    scene.voxnav.use_bounds = True
    scene.voxnav.bounds_min = (100, 100, -1)
    scene.voxnav.bounds_max = (110, 110, 1)
    bpy.ops.voxnav.build_navmesh()
    assert any("miss the geometry" in w.text for w in scene.voxnav.last_warnings)


def test_a_background_scene_is_named_as_not_baked(bpy, ext):
    # Drawn in the viewport, not gathered: the bake came out empty blaming the agent's size.
    import pytest

    level = bpy.data.scenes.new("Level")
    floor = box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0), collection=level.collection)
    scene = bpy.context.scene
    scene.background_set = level
    with pytest.raises(RuntimeError, match="Background Scene 'Level' is drawn but not baked"):
        bpy.ops.voxnav.build_navmesh()
    box(bpy, "Own", (-2, -2, -0.2), (2, 2, 0))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    texts = [w.text for w in scene.voxnav.last_warnings]
    assert any("Background Scene 'Level'" in t for t in texts) and floor.name == "Floor"


def test_export_never_replaces_a_linked_library(bpy, ext, tmp_path):
    """The batch command refused an output named as a linked library; Export Navmesh only
    knew the open .blend, and replaced a library through a symlink named nav.obj."""
    import hashlib
    import os

    box(bpy, "Floor", (-5, -5, -0.5), (5, 5, 0))
    library = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (_src, dst):
        dst.objects = ["Floor"]
    bpy.context.scene.collection.objects.link(dst.objects[0])
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    before = hashlib.sha256(library.read_bytes()).hexdigest()
    os.symlink(library, tmp_path / "nav.obj")
    with pytest.raises(RuntimeError, match=f"it is the input {library}"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.obj"))
    assert hashlib.sha256(library.read_bytes()).hexdigest() == before
