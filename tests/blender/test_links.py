"""Automatic off-mesh links in Blender: Auto Links on the gap-and-ledge scene draws every link
as an arc in the "VoxNav Links" object, Show Links hides it, Clear removes it, and a bake with
Auto Links off leaves no arcs."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from .scenes import box


def _scene(bpy):
    # tests/core/linkscenes.py's scene: floors 1.5 m apart, a ledge 2 m above floor A.
    box(bpy, "FloorA", (0, 0, -1), (10, 8, 0))
    box(bpy, "FloorB", (11.5, 0, -1), (21.5, 8, 0))
    box(bpy, "Ledge", (0, 8, -1), (10, 14, 2))
    box(bpy, "Pit", (-2, -2, -11), (24, 16, -10))


def _arc_verts(obj) -> np.ndarray:
    co = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def test_auto_links_draw_arcs_that_clear_removes(bpy, ext):
    _scene(bpy)
    scene = bpy.context.scene
    scene.voxnav.auto_links = True
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[scene.session_uid]
    links = outcome.result.offmesh_links
    assert len(links) > 0 and outcome.counts["auto_links"] == len(links)
    obj = bpy.data.objects[ext.writeback.LINKS_NAME]
    segments = importlib.import_module(f"{ext.root.__name__}.core.jumplinks").ARC_SEGMENTS
    assert len(obj.data.edges) == len(links) * segments
    assert len(obj.data.vertices) == len(links) * (segments + 1)
    verts = _arc_verts(obj).reshape(len(links), segments + 1, 3)
    lift = ext.bake.overlay_lift(scene.voxnav.cell_height)
    np.testing.assert_allclose(verts[:, 0], links.start + [0, 0, lift], atol=1e-5)
    np.testing.assert_allclose(verts[:, -1], links.end + [0, 0, lift], atol=1e-5)
    assert (verts[:, 1:-1, 2] > np.minimum(verts[:, :1, 2], verts[:, -1:, 2])).all()  # arcs
    two_way = np.zeros(len(obj.data.edges), dtype=bool)
    obj.data.attributes["voxnav_two_way"].data.foreach_get("value", two_way)
    assert two_way.any() and not two_way.all()  # jumps and drops
    scene.voxnav.show_links = False
    assert obj.hide_viewport
    scene.voxnav.show_links = True
    assert not obj.hide_viewport
    assert bpy.ops.voxnav.clear() == {"FINISHED"}
    assert ext.writeback.LINKS_NAME not in bpy.data.objects


def test_no_arcs_without_auto_links(bpy, ext):
    _scene(bpy)
    scene = bpy.context.scene
    scene.voxnav.auto_links = True
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert ext.writeback.LINKS_NAME in bpy.data.objects
    scene.voxnav.auto_links = False
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert ext.writeback.LINKS_NAME not in bpy.data.objects


def test_each_agent_gets_its_own_link_arcs(bpy, ext):
    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    _scene(bpy)
    scene = bpy.context.scene
    scene.voxnav.auto_links = True
    for name, radius in (("small", 0.3), ("big", 0.6)):
        assert bpy.ops.voxnav.agent_add() == {"FINISHED"}
        row = scene.voxnav.agents[-1]
        row.name, row.radius = name, radius
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[scene.session_uid]
    assert ext.writeback.LINKS_NAME not in bpy.data.objects  # replaced by one per agent
    objs = {n: bpy.data.objects[agents.links_name(n)] for n in ("small", "big")}
    for name, obj in objs.items():
        links = outcome.agents[name].offmesh_links
        assert len(links) > 0
        assert len(obj.data.edges) == len(links) * 8
    scene.voxnav.agents[0].show = False
    assert objs["small"].hide_viewport and not objs["big"].hide_viewport
    scene.voxnav.show_links = False
    assert objs["big"].hide_viewport
    assert not bpy.data.objects[agents.overlay_name("big")].hide_viewport
    assert bpy.ops.voxnav.clear() == {"FINISHED"}
    assert not [o for o in bpy.data.objects if o.name.startswith(ext.writeback.LINKS_NAME)]


def test_tiled_bake_draws_auto_links_and_obstacles_block_them(bpy, ext):
    """With Tile Size set, Auto Links finds the links of a core tiled bake (also those across
    tile borders), draws them and the live path takes them; a dynamic obstacle standing in
    the gap blocks the jumps its box meets (the arcs redrawn without them)."""
    from core import tiles
    from core.config import NavConfig
    from tests.core.linkscenes import gap_and_ledge_scene

    _scene(bpy)
    scene = bpy.context.scene
    scene.voxnav.auto_links = True
    scene.voxnav.tile_size = 32
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    warnings = [w.text for w in scene.voxnav.last_warnings]
    assert not any("solo bakes only" in w for w in warnings), warnings
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    cache = obstacles.CACHES[scene.session_uid].cache
    links = cache.links()
    assert links is not None and len(links) > 0
    # The scene is the core tests' gap-and-ledge scene: the same links as its tiled bake.
    core_bake = tiles.bake_tiled(*gap_and_ledge_scene(), NavConfig(auto_links=True), 32,
                                 workers=1)  # fmt: skip
    assert len(links) == len(core_bake.navmesh_links())
    arcs = bpy.data.objects[ext.writeback.LINKS_NAME]
    drawn = len(arcs.data.edges)
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    report = live.add_path_test(scene, (3.0, 4.0, 0.0), (18.0, 4.0, 0.0))
    assert report.status == live.STATUS_REACHED, report.status
    block = box(bpy, "Block", (-0.55, -1.5, -2.0), (0.55, 1.5, 3.0), location=(10.75, 4.5, 0.0))
    block.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()  # the depsgraph handler rebuilds and relinks
    obstacles.rebuild(scene)
    assert 0 < len(cache.links()) < len(links)
    arcs = bpy.data.objects[ext.writeback.LINKS_NAME]
    assert len(arcs.data.edges) < drawn


def test_hand_made_nav_link_is_baked_drawn_and_taken_by_the_live_path(bpy, ext):
    """Add Nav Link, its empties moved across the gap: the bake carries the link (drawn as an
    arc), and a path test from floor A to floor B reaches B only with it."""
    _scene(bpy)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    report = live.add_path_test(scene, (3.0, 4.0, 0.0), (18.0, 4.0, 0.0))
    assert report.status == live.STATUS_PARTIAL
    assert bpy.ops.voxnav.add_nav_link() == {"FINISHED"}
    start, end = bpy.data.objects["Nav Link Start"], bpy.data.objects["Nav Link End"]
    assert start.voxnav.nav_link and start.voxnav.nav_link_end == end
    start.location, end.location = (9.5, 4.0, 0.0), (12.0, 4.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    links = ext.bake.LAST[scene.session_uid].result.offmesh_links
    assert len(links) == 1 and bool(links.bidirectional[0])
    np.testing.assert_allclose(links.start[0], (9.5, 4.0, 0.0))
    assert ext.writeback.LINKS_NAME in bpy.data.objects
    report = live.update_path(scene)
    assert report.status == live.STATUS_REACHED, report.status
    start.voxnav.nav_link_end = None  # a link without an end is left out, with a warning
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[scene.session_uid]
    assert len(outcome.result.offmesh_links) == 0
    assert any("Nav Link" in w and "Link End" in w for w in outcome.warnings)


def _tiled_scene_with_a_nav_link(bpy):
    """The gap scene in 32-cell tiles with a Nav Link across the gap: (scene, start, end)."""
    _scene(bpy)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.add_nav_link() == {"FINISHED"}
    start, end = bpy.data.objects["Nav Link Start"], bpy.data.objects["Nav Link End"]
    start.location, end.location = (9.5, 4.0, 0.0), (12.0, 4.0, 0.0)
    scene.voxnav.tile_size = 32
    bpy.context.view_layer.update()
    return scene, start, end


def test_tiled_bake_carries_nav_links_through_obstacle_rebuilds(bpy, ext):
    """With Tile Size set, the Nav Link is in the tiles that hold its start: drawn, and the
    live path crosses the gap; a dynamic obstacle's rebuild keeps it."""
    scene, start, end = _tiled_scene_with_a_nav_link(bpy)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    warnings = [item.text for item in scene.voxnav.last_warnings]
    assert not any("Nav Link" in w for w in warnings), warnings
    assert ext.writeback.LINKS_NAME in bpy.data.objects
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    report = live.add_path_test(scene, (3.0, 4.0, 0.0), (18.0, 4.0, 0.0))
    assert report.status == live.STATUS_REACHED, report.status
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    cache = obstacles.CACHES[scene.session_uid].cache
    count = cache.rebuild_count
    block = box(bpy, "Block", (-0.5, -0.5, 0), (0.5, 0.5, 2), location=(16.0, 6.8, 0.0))
    block.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()  # the depsgraph handler rebuilds the block's tiles
    assert cache.rebuild_count > count and len(cache.offmesh_links) == 1
    assert live.update_path(scene).status == live.STATUS_REACHED


def test_agent_rows_take_nav_links(bpy, ext):
    """With agent rows, every agent's navmesh carries the Nav Link (and draws its arc)."""
    _scene(bpy)
    scene = bpy.context.scene
    assert bpy.ops.voxnav.add_nav_link() == {"FINISHED"}
    start, end = bpy.data.objects["Nav Link Start"], bpy.data.objects["Nav Link End"]
    start.location, end.location = (9.5, 4.0, 0.0), (12.0, 4.0, 0.0)
    for name, radius in (("small", 0.3), ("big", 0.6)):
        assert bpy.ops.voxnav.agent_add() == {"FINISHED"}
        row = scene.voxnav.agents[-1]
        row.name, row.radius = name, radius
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[scene.session_uid]
    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    for name in ("small", "big"):
        links = outcome.agents[name].offmesh_links
        assert len(links) == 1
        np.testing.assert_allclose(links.start[0], (9.5, 4.0, 0.0))
        assert agents.links_name(name) in bpy.data.objects
    assert not any("Nav Link" in w for w in outcome.warnings)


def test_a_moved_nav_link_reopens_where_it_was_last_baked(bpy, ext, tmp_path):
    """Tiled bakes: the bake key holds the hand-made links. Moving a Nav Link and baking
    again kept the key, so the saved file's tile cache (same key: not written again) brought
    the old link back when the .blend was reopened."""
    scene, start, end = _tiled_scene_with_a_nav_link(bpy)
    blend = tmp_path / "links.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    first_key = scene.voxnav.tile_cache_key
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    end.location = (12.0, 6.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert scene.voxnav.tile_cache_key != first_key
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    live_tiles = obstacles.CACHES[bpy.context.scene.session_uid]
    links = live_tiles.cache.offmesh_links
    assert len(links) == 1
    np.testing.assert_allclose(links.end[0], (12.0, 6.0, 0.0))


def test_a_tiled_obj_export_has_the_links_as_lines(bpy, ext, tmp_path):
    """The tiled OBJ wrote an off-mesh link as a two-vertex face of its tile; the solo OBJ
    has it as a line element in object offmesh_links."""
    _tiled_scene_with_a_nav_link(bpy)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    out = tmp_path / "tiled.obj"
    assert bpy.ops.voxnav.export_navmesh(filepath=str(out), file_format="OBJ") == {"FINISHED"}
    lines = out.read_text().splitlines()
    faces = [ln for ln in lines if ln.startswith("f ")]
    assert faces and all(len(ln.split()) >= 4 for ln in faces)  # three corners or more
    assert "o offmesh_links" in lines
    assert sum(ln.startswith("l ") for ln in lines) == 1


def test_a_collection_instance_places_copies_of_its_nav_links_and_reachable_points(bpy, ext):
    """A prefab (a collection placed by collection instances) holding a Nav Link pair, a
    two-point curve Nav Link and a Reachable From empty: each instance places a link and a
    point of its own, where the instance puts them (they were left out without a word)."""
    gather = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.gather")
    scene = bpy.context.scene
    prefab = bpy.data.collections.new("Prefab")  # not in the scene: placed by instances only
    prefab.instance_offset = (1.0, 0.0, 0.0)

    def empty(name, location):
        obj = bpy.data.objects.new(name, None)
        obj.location = location
        prefab.objects.link(obj)
        return obj

    start, end = empty("Ladder", (0.0, 0.0, 0.0)), empty("Ladder End", (2.0, 0.0, 1.0))
    start.voxnav.nav_link, start.voxnav.nav_link_end = True, end
    empty("Spawn", (1.0, 1.0, 0.0)).voxnav.reachable_from = True
    curve_data = bpy.data.curves.new("Rope", "CURVE")
    spline = curve_data.splines.new("POLY")
    spline.points.add(1)
    spline.points[0].co, spline.points[1].co = (0, 0, 0, 1), (0, 3, 0, 1)
    rope = bpy.data.objects.new("Rope", curve_data)
    rope.location = (0.0, 0.0, 2.0)
    rope.voxnav.nav_link = True
    prefab.objects.link(rope)
    for name, location, turn in (("Copy A", (10.0, 0.0, 0.0), 0.0), ("Copy B", (0, 5, 0), 90.0)):
        copy = bpy.data.objects.new(name, None)
        copy.instance_type, copy.instance_collection = "COLLECTION", prefab
        copy.location, copy.rotation_euler = location, (0.0, 0.0, np.radians(turn))
        scene.collection.objects.link(copy)
    bpy.context.view_layer.update()

    links, skipped = gather.nav_links(bpy.context)
    assert skipped == []
    # Copy A: shifted by (10, 0, 0) less the offset; copy B: turned a quarter about z at (0, 5).
    got = sorted(zip(map(tuple, links.start.round(4)), map(tuple, links.end.round(4)), strict=True))
    want = sorted([
        ((9.0, 0.0, 0.0), (11.0, 0.0, 1.0)), ((9.0, 0.0, 2.0), (9.0, 3.0, 2.0)),
        ((0.0, 4.0, 0.0), (0.0, 6.0, 1.0)), ((0.0, 4.0, 2.0), (-3.0, 4.0, 2.0)),
    ])  # fmt: skip
    np.testing.assert_allclose(np.array(got), np.array(want), atol=1e-4)
    points = gather.reachable_points(bpy.context)
    np.testing.assert_allclose(
        sorted(map(tuple, points.round(4))), [(-1.0, 5.0, 0.0), (10.0, 1.0, 0.0)], atol=1e-4
    )
    bpy.data.objects["Copy B"].hide_set(True)  # a hidden instance places nothing
    bpy.context.view_layer.update()
    assert len(gather.nav_links(bpy.context)[0]) == 2
    assert gather.reachable_points(bpy.context).shape == (1, 3)


def test_a_bad_nav_link_is_named_by_its_object(bpy, ext):
    """A Nav Link end moved to 1e20: the refusal named "off-mesh link 1", a number the
    user never sees; it names the object, and the previous bake stays."""
    _scene(bpy)
    assert bpy.ops.voxnav.add_nav_link() == {"FINISHED"}
    bpy.data.objects["Nav Link Start"].location = (9.5, 4.0, 0.0)
    bpy.data.objects["Nav Link End"].location = (12.0, 4.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    bpy.data.objects["Nav Link End"].location = (1e20, 4.0, 0.0)
    bpy.context.view_layer.update()
    with pytest.raises(RuntimeError, match="Nav Link 'Nav Link Start': its end point"):
        bpy.ops.voxnav.build_navmesh()
    assert ext.writeback.scene_output(bpy.context.scene, ext.writeback.NAVMESH_NAME) is not None
