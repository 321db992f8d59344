"""Tiled bakes and live dynamic obstacles: moving an obstacle object rebuilds only its tiles."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from .scenes import box, overlay_verts


def _mod(ext, name):
    return importlib.import_module(f"{ext.root.__name__}.voxnav_addon.{name}")


def _scene(bpy, ext):
    """A 24 x 24 floor, tile size 16 cells (4.8 units at cell size 0.3): 5 x 5 tiles; a crate
    ticked Dynamic Obstacle in one corner."""
    box(bpy, "Floor", (-12, -12, -0.5), (12, 12, 0))
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2), location=(-7.0, -7.0, 0.0))
    crate.voxnav.dynamic_obstacle = True
    settings = bpy.context.scene.voxnav
    settings.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    return crate


def _walkable_under(live_tiles, xy) -> bool:
    """Does some navmesh polygon of the cache lie under the world point (x, y)?"""
    from_query = live_tiles.cache.navmesh
    pos = from_query.poly_pos.astype(np.float64)[:, :, [0, 2]]  # Detour (x, z) = our (x, y)
    n = from_query.poly_vert_count.astype(np.int64)
    for p in range(pos.shape[0]):
        v = pos[p, : n[p]]
        a, b = v, np.roll(v, -1, axis=0)
        cross = (b[:, 0] - a[:, 0]) * (xy[1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (xy[0] - a[:, 0])
        if (cross >= 0).all() or (cross <= 0).all():
            return True
    return False


def test_moving_an_obstacle_rebuilds_only_its_tiles_and_the_overlay_changes(bpy, ext, monkeypatch):
    obstacles = _mod(ext, "obstacles")
    live = _mod(ext, "live")
    crate = _scene(bpy, ext)
    scene = bpy.context.scene
    settings = scene.voxnav
    live_tiles = obstacles.CACHES[scene.session_uid]
    cache = live_tiles.cache
    assert (cache.grid.tiles_w, cache.grid.tiles_h) == (5, 5)
    assert len(live_tiles.obstacles) == 1
    # The crate is not geometry: the floor under it is a hole in the navmesh, not a roof.
    assert not _walkable_under(live_tiles, (-7.0, -7.0))
    assert _walkable_under(live_tiles, (7.0, 7.0))
    before = overlay_verts(bpy, ext)
    old_box = cache.obstacles.get(next(iter(live_tiles.obstacles.values()))[0]).box_xy()

    # No full rebake from here on; the live path is re-run after each rebuild.
    def no_bake(*args, **kwargs):
        raise AssertionError("a full rebake ran")

    monkeypatch.setattr(ext.pipeline, "bake", no_bake)
    monkeypatch.setattr(type(cache), "build", no_bake)
    paths = []
    monkeypatch.setattr(live, "update_path", lambda s, *a: paths.append(s.name))
    rebuilt_before = cache.rebuild_count

    crate.location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    new_box = cache.obstacles.get(next(iter(live_tiles.obstacles.values()))[0]).box_xy()
    expect = (set(cache.tiles_touched(old_box)) | set(cache.tiles_touched(new_box))) & set(
        cache.compact
    )
    assert settings.obstacle_tiles_rebuilt == len(expect) == cache.rebuild_count - rebuilt_before
    assert 0 < len(expect) < 25
    assert settings.obstacle_seconds > 0 and "rebuilt" in settings.obstacle_status
    assert paths == [scene.name]
    after = overlay_verts(bpy, ext)
    assert before.shape != after.shape or not np.array_equal(before, after)
    assert _walkable_under(live_tiles, (-7.0, -7.0))
    assert not _walkable_under(live_tiles, (7.0, 7.0))
    # The stored navmesh (what the live path queries) is the relinked one.
    query = live.navmesh_query(scene)
    assert query.nav.poly_count == cache.navmesh.poly_count

    # An update that does not move the crate rebuilds nothing.
    count = cache.rebuild_count
    bpy.context.view_layer.update()
    assert cache.rebuild_count == count

    # Deleting the obstacle object rebuilds its tiles: the floor is whole again.
    bpy.data.objects.remove(crate)
    bpy.context.view_layer.update()
    assert not live_tiles.obstacles and cache.rebuild_count > count
    assert _walkable_under(live_tiles, (7.0, 7.0))

    # Adding a new ticked object (here: an existing box ticked) rebuilds its tiles.
    post = box(bpy, "Post", (-0.5, -0.5, 0), (0.5, 0.5, 3), location=(0.0, 0.0, 0.0))
    bpy.context.view_layer.update()  # not ticked yet: geometry, ignored by the live cache
    assert not live_tiles.obstacles
    post.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()
    assert len(live_tiles.obstacles) == 1
    assert not _walkable_under(live_tiles, (0.0, 0.0))


def test_shapes_from_objects(bpy, ext):
    obstacles = _mod(ext, "obstacles")
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2), location=(3.0, 4.0, 1.0))
    bpy.context.view_layer.update()  # world matrices follow the next evaluation
    shape = obstacles.obstacle_shape(crate)
    assert shape.kind == "box"
    assert np.allclose(shape.box_xy(), [2, 3, 4, 5]) and np.allclose(shape.z_range(), [1, 3])
    crate.rotation_euler = (0.0, 0.0, 0.5)
    bpy.context.view_layer.update()
    shape = obstacles.obstacle_shape(crate)
    assert shape.kind == "oriented_box" and abs(shape.yaw - 0.5) < 1e-6
    assert np.allclose(shape.position, [3, 4, 2]) and np.allclose(shape.size, [1, 1, 1])
    crate.voxnav.obstacle_shape = "CYLINDER"
    shape = obstacles.obstacle_shape(crate)
    assert shape.kind == "cylinder" and np.isclose(shape.size[0], 1.0)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.7, depth=2.0, location=(0, 0, 1))
    cyl = bpy.context.active_object
    bpy.context.view_layer.update()
    shape = obstacles.obstacle_shape(cyl)
    assert shape.kind == "cylinder" and np.isclose(shape.size[0], 0.7, atol=1e-4)
    assert np.allclose(shape.position, [0, 0, 0], atol=1e-6)


def test_shapes_of_objects_tipped_over_cover_their_footprint(bpy, ext):
    """A board modelled standing (4 x 0.2 x 2) and turned 90 degrees about X lies as a 4 x 2
    slab: its oriented box was 4 x 0.2 (local X/Y), and the navmesh ran under it. A cylinder
    lying on its side was an upright disc."""
    import math

    obstacles = _mod(ext, "obstacles")
    board = box(bpy, "Board", (-2, -0.1, -1), (2, 0.1, 1), location=(1.0, 2.0, 0.1))
    board.rotation_euler = (math.radians(90), 0.0, math.radians(30))
    bpy.context.view_layer.update()
    shape = obstacles.obstacle_shape(board)
    assert shape.kind == "oriented_box" and abs(shape.yaw - math.radians(30)) < 1e-6
    assert np.allclose(shape.size[:2], [2, 1], atol=1e-6)
    assert np.allclose(shape.position[:2], [1, 2], atol=1e-6)
    board.rotation_euler = (math.radians(90), 0.0, 0.0)
    bpy.context.view_layer.update()
    shape = obstacles.obstacle_shape(board)
    assert shape.kind == "box" and np.allclose(shape.box_xy(), [-1, 1, 3, 3], atol=1e-6)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.5, depth=4.0, location=(0, 0, 0.5))
    log = bpy.context.active_object
    log.rotation_euler = (0.0, math.radians(90), 0.0)  # its axis along X
    bpy.context.view_layer.update()
    shape = obstacles.obstacle_shape(log)
    assert shape.kind == "box"
    assert np.allclose(shape.box_xy(), [-2, -0.5, 2, 0.5], atol=1e-4)


def test_empties_as_obstacles_and_area_volumes_take_what_they_instance_or_their_size(bpy, ext):
    """An empty has no bounding box of its own (Blender gives eight zeros): a crate placed as
    a collection instance, ticked Dynamic Obstacle, was a 1 mm box at its origin (blocking
    nothing), and a cube-drawn empty as an area volume painted nothing. Now the box around
    what the empty instances (offset, scale and nested instances followed), else its drawn
    size."""
    obstacles = _mod(ext, "obstacles")
    gather = _mod(ext, "gather")
    crates = bpy.data.collections.new("Crates")
    crates.instance_offset = (1.0, 0.0, 0.0)
    box(bpy, "Crate", (0, -1, 0), (2, 1, 2), collection=crates)
    outer = bpy.data.collections.new("Stack")
    inner = bpy.data.objects.new("Nested", None)
    inner.instance_type, inner.instance_collection = "COLLECTION", crates
    inner.location = (0.0, 0.0, 2.0)
    outer.objects.link(inner)
    placed = bpy.data.objects.new("CrateInstance", None)
    placed.instance_type, placed.instance_collection = "COLLECTION", crates
    placed.location, placed.scale = (5.0, 5.0, 0.0), (2.0, 2.0, 2.0)
    stacked = bpy.data.objects.new("StackInstance", None)
    stacked.instance_type, stacked.instance_collection = "COLLECTION", outer
    stacked.location = (-5.0, 0.0, 0.0)
    zone = bpy.data.objects.new("Zone", None)
    zone.empty_display_type, zone.empty_display_size = "CUBE", 1.5
    zone.location = (0.0, -6.0, 0.0)
    for obj in (placed, stacked, zone):
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    shape = obstacles.obstacle_shape(placed, depsgraph)
    assert shape.kind == "box"
    assert np.allclose(shape.box_xy(), [3, 3, 7, 7]) and np.allclose(shape.z_range(), [0, 4])
    shape = obstacles.obstacle_shape(stacked, depsgraph)
    assert np.allclose(shape.box_xy(), [-6, -1, -4, 1]) and np.allclose(shape.z_range(), [2, 4])
    zone.voxnav.area_volume = True
    ((lo, hi, area),) = gather.area_volumes(bpy.context)
    assert np.allclose(lo, [-1.5, -7.5, -1.5]) and np.allclose(hi, [1.5, -4.5, 1.5])

    # What the instance does not show stays out of its box: a light and a camera (their
    # boxes are eight zeros at their origins), an object and a child collection disabled in
    # viewports (not instanced). They widened a 2 m crate's box to 13 m.
    lamp = bpy.data.objects.new("Lamp", bpy.data.lights.new("Lamp", "POINT"))
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    lamp.location, camera.location = (7.0, 0.0, 3.0), (0.0, -6.0, 2.0)
    hidden = box(bpy, "Hidden", (-8, 0, 0), (-7, 1, 1), collection=crates)
    hidden.hide_viewport = True
    spare = bpy.data.collections.new("Spare")
    spare.hide_viewport = True
    crates.children.link(spare)
    box(bpy, "Spare", (0, 9, 0), (1, 10, 1), collection=spare)
    for obj in (lamp, camera):
        crates.objects.link(obj)
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    shape = obstacles.obstacle_shape(placed, depsgraph)
    assert np.allclose(shape.box_xy(), [3, 3, 7, 7]) and np.allclose(shape.z_range(), [0, 4])


def test_solo_bake_paints_obstacles_and_tile_size_zero_keeps_the_solo_path(bpy, ext):
    obstacles = _mod(ext, "obstacles")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2))
    crate.voxnav.dynamic_obstacle = True
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    scene = bpy.context.scene
    assert scene.session_uid not in obstacles.CACHES
    result = ext.bake.LAST[scene.session_uid].result
    # The crate is painted (a hole), not rasterized (no walkable roof at z = 2).
    overlay = result.overlay()[0]
    assert overlay[:, 2].max() < 1.0
    near = np.hypot(overlay[:, 0], overlay[:, 1]) < 0.5
    assert not near.any()


def test_live_path_follows_a_moved_obstacle_on_the_tiled_navmesh(bpy, ext, monkeypatch):
    live = _mod(ext, "live")
    box(bpy, "Floor", (-12, -6, -0.5), (12, 6, 0))
    wall = box(bpy, "Wall", (-0.5, -3, 0), (0.5, 3, 2.5), location=(0.0, 9.0, 0.0))
    wall.voxnav.dynamic_obstacle = True
    scene = bpy.context.scene
    scene.voxnav.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    report = live.add_path_test(scene, (-8.0, 0.0, 0.0), (8.0, 0.0, 0.0))
    assert report.status == live.STATUS_REACHED and abs(report.length - 16.0) < 0.5
    start, goal, _ = live.path_test_objects(scene)
    bpy.context.view_layer.update()
    monkeypatch.setattr(ext.pipeline, "bake", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    # The wall moves onto the straight line: the path walks around it, without a rebake.
    wall.location = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    assert scene.voxnav.path_status == live.STATUS_REACHED
    assert scene.voxnav.path_length > 16.5
    # ... and moves away again: straight once more.
    wall.location = (0.0, 9.0, 0.0)
    bpy.context.view_layer.update()
    assert abs(scene.voxnav.path_length - 16.0) < 0.5


def test_voxel_path_goes_around_a_dynamic_obstacle(bpy, ext):
    live = _mod(ext, "live")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 3))
    crate.voxnav.dynamic_obstacle = True  # not geometry: the bake's voxels have no crate
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    # Ends just above the floor (a closed box rasterizes hollow: its inside is free voxels).
    live.add_path_test(bpy.context.scene, (-4.0, 0.0, 0.3), (4.0, 0.0, 0.3))
    bpy.context.view_layer.update()
    crate.voxnav.dynamic_obstacle = False  # neither geometry nor obstacle: straight through
    straight = live.voxel_path(bpy.context)
    assert straight.found and (straight.points[:, 2] > 0).all()
    # A shortest route with nothing in the way: as many steps as the ends are apart.
    assert straight.steps == int(np.abs(straight.voxels[-1] - straight.voxels[0]).sum())
    crate.voxnav.dynamic_obstacle = True  # the obstacle blocks its voxels
    around = live.voxel_path(bpy.context)
    assert around.found and around.steps > straight.steps
    inside = (np.abs(around.points[:, 0]) < 1) & (np.abs(around.points[:, 1]) < 1)
    assert not inside.any()


def test_a_too_small_tile_size_is_a_clear_error_and_keeps_the_navmesh(bpy, ext):
    obstacles = _mod(ext, "obstacles")
    _scene(bpy, ext)
    scene = bpy.context.scene
    live_tiles = obstacles.CACHES[scene.session_uid]
    before = overlay_verts(bpy, ext)
    scene.voxnav.tile_size = 4
    with pytest.raises(RuntimeError, match="tiles must be 8..4096 cells wide.*tile_size >= 8"):
        bpy.ops.voxnav.build_navmesh()
    assert obstacles.CACHES[scene.session_uid] is live_tiles
    assert np.array_equal(overlay_verts(bpy, ext), before)


def test_an_obstacle_outside_every_tile_is_named_after_the_bake(bpy, ext):
    box(bpy, "Floor", (-12, -12, -0.5), (12, 12, 0))
    stray = box(bpy, "Stray", (-1, -1, 0), (1, 1, 2), location=(5000.0, 0.0, 0.0))
    stray.voxnav.dynamic_obstacle = True
    settings = bpy.context.scene.voxnav
    settings.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    warnings = [w.text for w in settings.last_warnings]
    assert any(w.startswith("Dynamic Obstacle Stray was left out: ") for w in warnings), warnings
    assert any("outside every tile" in w for w in warnings)


@pytest.mark.parametrize("replace_with", ["solo bake", "clear"])
def test_after_a_solo_bake_or_clear_obstacles_do_not_bring_the_tiles_back(bpy, ext, replace_with):
    obstacles = _mod(ext, "obstacles")
    crate = _scene(bpy, ext)  # a tiled bake with the crate live
    scene = bpy.context.scene
    settings = scene.voxnav
    assert scene.session_uid in obstacles.CACHES and settings.tile_cache_key
    if replace_with == "solo bake":
        settings.tile_size = 0
        assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    else:
        assert bpy.ops.voxnav.clear() == {"FINISHED"}
    shown = overlay_verts(bpy, ext) if replace_with == "solo bake" else None
    assert scene.session_uid not in obstacles.CACHES and not settings.tile_cache_key
    # Moving the crate, even with Tile Size back on, no longer rebuilds the old tiles.
    settings.tile_size = 16
    crate.location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    assert scene.session_uid not in obstacles.CACHES
    if shown is not None:
        assert np.array_equal(overlay_verts(bpy, ext), shown)
    else:
        assert ext.writeback.NAVMESH_NAME not in bpy.data.objects


def test_export_writes_the_tiles_as_the_obstacles_left_them(bpy, ext, tmp_path):
    # Detour .bin with one tile per tile and OBJ with every tile's polygons, from the live
    # cache (after an obstacle moved, without a rebake); JSON has no tiled form.
    from importlib import import_module

    binio = import_module(f"{ext.root.__name__}.core.nav.binio")
    obstacles = _mod(ext, "obstacles")
    crate = _scene(bpy, ext)
    scene = bpy.context.scene
    crate.location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    cache = obstacles.CACHES[scene.session_uid].cache
    assert bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.bin")) == {"FINISHED"}
    nav_set = binio.read_navmesh_set(tmp_path / "nav.bin")
    assert len(nav_set.tiles) == len(cache.navmesh.tiles)
    assert sum(t.npolys for t in nav_set.tiles) == cache.navmesh.poly_count
    assert bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.obj")) == {"FINISHED"}
    text = (tmp_path / "nav.obj").read_text()
    assert text.count("\no tile_") == len(cache.navmesh.tiles)
    assert text.count("\nf ") == cache.navmesh.poly_count
    with pytest.raises(RuntimeError, match="a tiled navmesh exports as Detour .bin"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.json"))
    assert not (tmp_path / "nav.json").exists()
    with pytest.raises(RuntimeError, match="output folder .*missing does not exist"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "missing" / "nav.bin"))


def test_an_obstacle_placed_by_a_collection_instance_is_geometry_with_a_warning(bpy, ext):
    # Left out as an obstacle's shape, and no shape either (only the scene's own objects are):
    # the navmesh ran through the crate, silently.
    gather = _mod(ext, "gather")
    crates = bpy.data.collections.new("Crates")
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2), collection=crates)
    crate.voxnav.dynamic_obstacle = True
    placed = bpy.data.objects.new("CrateInstance", None)
    placed.instance_type, placed.instance_collection = "COLLECTION", crates
    bpy.context.scene.collection.objects.link(placed)
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    bpy.context.view_layer.update()
    gathered = gather.gather(bpy.context)
    assert "CrateInstance" in gathered.sources  # the crate's triangles, by their instancer
    assert len(gathered.warnings) == 1 and "'Crate'" in gathered.warnings[0]
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    texts = [w.text for w in bpy.context.scene.voxnav.last_warnings]
    assert any("placed by a collection instance" in t for t in texts)
    placed.voxnav.dynamic_obstacle = True  # the instance ticked: a shape, no geometry
    bpy.context.view_layer.update()
    assert "CrateInstance" not in gather.gather(bpy.context).sources


def test_an_undone_tiled_bake_is_not_exported_nor_redrawn(bpy, ext, tmp_path):
    # Undo brings the scene back to before the bake (no overlay, no tile cache key): the
    # tile cache in memory must not be exported, nor redraw the overlay when an obstacle
    # moves.
    obstacles = _mod(ext, "obstacles")
    writeback = _mod(ext, "writeback")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    crate = box(bpy, "Crate", (-0.5, -0.5, 0), (0.5, 0.5, 2))
    crate.voxnav.dynamic_obstacle = True
    bpy.context.scene.voxnav.tile_size = 16
    bpy.ops.ed.undo_push(message="before the bake")
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="the bake")
    assert obstacles.live_cache(bpy.context.scene) is not None
    bpy.ops.ed.undo()
    scene = bpy.context.scene
    assert not scene.voxnav.tile_cache_key and not writeback.output_objects(scene)
    assert not bpy.ops.voxnav.export_navmesh.poll()
    with pytest.raises(RuntimeError):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.bin"), file_format="BIN")
    bpy.data.objects["Crate"].location = (2.0, 2.0, 0.0)
    bpy.context.view_layer.update()
    assert not writeback.output_objects(scene) and obstacles.live_cache(scene) is None
    assert list(tmp_path.iterdir()) == []


def test_an_undone_rebake_is_not_exported(bpy, ext, tmp_path):
    # A second bake undone: the first bake's overlay shows again, and the second bake still
    # in memory must not be what Export writes: the shown one is, from the file's stored
    # navmesh (as for a reopened file).
    bake = _mod(ext, "bake")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    box(bpy, "Pillar", (-1, -1, 0), (1, 1, 3))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    first = tmp_path / "first.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(first), file_format="BIN") == {"FINISHED"}
    bpy.ops.ed.undo_push(message="the first bake")
    bpy.context.scene.voxnav.agent_radius = 2.0
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="the second bake")
    second = tmp_path / "second.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(second), file_format="BIN") == {"FINISHED"}
    second_outcome = bake.last_outcome(bpy.context.scene)
    assert second.read_bytes() != first.read_bytes()
    bpy.ops.ed.undo()
    scene = bpy.context.scene
    assert scene.voxnav.agent_radius == pytest.approx(0.6)
    assert bake.last_outcome(scene) is None  # the undone bake is not the scene's
    with pytest.raises(RuntimeError, match="Detour"):  # OBJ needs the bake's arrays
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.obj"), file_format="OBJ")
    again = tmp_path / "again.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(again), file_format="BIN") == {"FINISHED"}
    assert again.read_bytes() == first.read_bytes()
    bpy.ops.ed.redo()  # the second bake again: the bake in memory is the scene's once more
    assert bake.last_outcome(bpy.context.scene) is second_outcome
    redone = tmp_path / "redone.bin"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(redone), file_format="BIN") == {"FINISHED"}
    assert redone.read_bytes() == second.read_bytes()
