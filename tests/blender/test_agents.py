"""Agent types in Blender: one overlay object per agent row, toggled, cleared, never gathered."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from .scenes import box


def _overlay_xy(obj) -> np.ndarray:
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _add_agent(bpy, name: str, radius: float):
    assert bpy.ops.voxnav.agent_add() == {"FINISHED"}
    row = bpy.context.scene.voxnav.agents[-1]
    row.name = name
    row.radius = radius
    return row


def test_two_agents_give_two_overlays(bpy, ext):
    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    small = _add_agent(bpy, "small", 0.3)
    _add_agent(bpy, "large", 1.2)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}

    wb = ext.writeback
    assert bpy.data.objects.get(wb.NAVMESH_NAME) is None  # replaced by one object per agent
    objs = {n: bpy.data.objects[agents.overlay_name(n)] for n in ("small", "large")}
    for name, obj in objs.items():
        assert obj.get(ext.gather.OUTPUT_TAG) and obj.get(agents.AGENT_TAG) == name
        assert len(obj.data.polygons) > 0
        assert ext.gather.is_output(obj)
    # Each overlay is its agent's navmesh: the larger radius keeps further from the edges.
    reach = {n: float(np.abs(_overlay_xy(o)[:, :2]).max()) for n, o in objs.items()}
    assert reach["large"] < reach["small"] - 0.5
    # Each equals the core's bake with that agent's settings.
    outcome = ext.bake.LAST[bpy.context.scene.session_uid]
    assert list(outcome.agents) == ["small", "large"]
    config = ext.properties.to_config(bpy.context.scene.voxnav)
    solo = ext.pipeline.bake(
        outcome.gathered.verts, outcome.gathered.tris, config.replace(agent_radius=1.2)
    )
    np.testing.assert_array_equal(outcome.agents["large"].polymesh.polys, solo.polymesh.polys)
    np.testing.assert_array_equal(outcome.agents["large"].polymesh.verts, solo.polymesh.verts)

    # The overlays are never gathered as geometry: a second bake gives the same triangles.
    triangles = outcome.gathered.triangle_count
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert ext.bake.LAST[bpy.context.scene.session_uid].gathered.triangle_count == triangles

    # Toggled per row (and by Show Navmesh).
    small.show = False
    assert objs["small"].hide_viewport and not objs["large"].hide_viewport
    bpy.context.scene.voxnav.show_navmesh = False
    assert objs["large"].hide_viewport
    bpy.context.scene.voxnav.show_navmesh = True
    small.show = True
    assert not objs["small"].hide_viewport

    # A removed row's overlay goes at the next bake; an empty list bakes as before.
    bpy.context.scene.voxnav.agent_index = 1
    assert bpy.ops.voxnav.agent_remove() == {"FINISHED"}
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.data.objects.get(agents.overlay_name("large")) is None
    assert bpy.data.objects.get(agents.overlay_name("small")) is not None
    bpy.context.scene.voxnav.agent_index = 0
    assert bpy.ops.voxnav.agent_remove() == {"FINISHED"}
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.data.objects.get(agents.overlay_name("small")) is None
    assert bpy.data.objects.get(wb.NAVMESH_NAME) is not None

    # Clear removes agent overlays too.
    _add_agent(bpy, "small", 0.3)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert bpy.data.objects.get(agents.overlay_name("small")) is not None
    bpy.ops.voxnav.clear()
    assert bpy.data.objects.get(agents.overlay_name("small")) is None


@pytest.mark.parametrize("tile_size", [0, 16])
def test_an_older_files_overlay_of_an_agent_is_replaced_not_doubled(bpy, ext, tile_size):
    """Files baked on Blender 5.x before long agent names were shortened hold that agent's
    overlay under its whole name: the next bake added a second overlay beside it."""
    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    bpy.context.scene.voxnav.tile_size = tile_size
    _add_agent(bpy, "small", 0.3)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    bpy.data.objects[agents.overlay_name("small")].name = "VoxNav Navmesh small (older)"
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    tagged = [o.name for o in bpy.data.objects if o.get(agents.AGENT_TAG) == "small"]
    assert tagged == [agents.overlay_name("small")]


@pytest.mark.parametrize("tile_size", [0, 16])
@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("bad name", "agent name"),
        ("dup", "two agents are named"),
        ("Dup", "differ only in letter case"),  # the second row is "dup"
    ],
)
def test_bad_agent_rows_report_an_error(bpy, ext, name, needle, tile_size):
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    bpy.context.scene.voxnav.tile_size = tile_size
    _add_agent(bpy, name, 0.3)
    if name.lower() == "dup":
        _add_agent(bpy, "dup", 0.6)
    with pytest.raises(RuntimeError, match=needle):
        bpy.ops.voxnav.build_navmesh()


def _tiled_two_agents(bpy):
    """A floor, agent rows "small" (radius 0.3) and "large" (1.2), Tile Size 16: built."""
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    _add_agent(bpy, "small", 0.3)
    _add_agent(bpy, "large", 1.2)
    scene = bpy.context.scene
    scene.voxnav.tile_size = 16
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    return scene


def test_tiled_agents_and_rebakes_sort_the_chunk_tree_once(bpy, ext, monkeypatch):
    """Each agent row's tile cache plans the same triangles: the first sorts RecastDemo's
    chunk tree, the other agent and a rebake with another cell size take it; a changed
    scene sorts again."""
    chunky = importlib.import_module(f"{ext.root.__name__}.core.chunky")
    sorts = []
    sort_tree = chunky._partition

    def counted(*args, **kwargs):
        sorts.append(args[1].shape[0])
        return sort_tree(*args, **kwargs)

    monkeypatch.setattr(chunky, "_partition", counted)
    chunky.forget_reused()
    scene = _tiled_two_agents(bpy)
    assert len(sorts) == 1
    scene.voxnav.cell_size = 0.25
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert len(sorts) == 1
    box(bpy, "Step", (0, 0, 0), (1, 1, 0.2))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert len(sorts) == 2 and sorts[1] > sorts[0]
    # Clear gives the kept tree's memory back: the next bake sorts again.
    assert bpy.ops.voxnav.clear() == {"FINISHED"}
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert len(sorts) == 3
    chunky.forget_reused()


def test_agent_rows_with_tiles_bake_one_tile_cache_per_agent(bpy, ext, tmp_path):
    """Tile Size with agent rows: one overlay per agent, each the core's tiled bake with that
    agent's settings; a dynamic obstacle rebuilds every agent's tiles; the batch command's
    --obj writes one file per agent."""
    from core import tiles

    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    scene = _tiled_two_agents(bpy)
    assert bpy.data.objects.get(ext.writeback.NAVMESH_NAME) is None
    live_tiles = obstacles.CACHES[scene.session_uid]
    assert list(live_tiles.agents) == ["small", "large"]
    outcome = ext.bake.LAST.get(scene.session_uid)
    assert outcome is None  # a tiled bake keeps its tile caches instead
    config = ext.properties.to_config(scene.voxnav)
    gathered = ext.gather.gather(bpy.context, "VISIBLE", None)
    for name, radius in (("small", 0.3), ("large", 1.2)):
        obj = bpy.data.objects[agents.overlay_name(name)]
        assert obj.get(agents.AGENT_TAG) == name and len(obj.data.polygons) > 0
        core = tiles.bake_tiled(
            gathered.verts, gathered.tris, config.replace(agent_radius=radius), 16, workers=1
        )
        cache = live_tiles.agents[name].cache
        assert sum(t.npolys for t in cache.tiles.values()) == core.npolys
    counts = {name: lt.cache.rebuild_count for name, lt in live_tiles.agents.items()}
    block = box(bpy, "Block", (-0.5, -0.5, 0), (0.5, 0.5, 2), location=(0.0, 0.0, 0.0))
    block.voxnav.dynamic_obstacle = True
    bpy.context.view_layer.update()
    obstacles.rebuild(scene)
    for name, lt in live_tiles.agents.items():
        assert lt.cache.rebuild_count > counts[name] and len(lt.obstacles) == 1
    out = tmp_path / "nav.obj"
    assert ext.cli.main(["--tile-size", "16", "--obj", str(out)]) == 0
    for name in ("small", "large"):
        assert (tmp_path / f"nav_{name}.obj").is_file()
    assert not out.exists()


def test_a_long_agent_name_keeps_one_overlay_over_rebakes(bpy, ext):
    # "VoxNav Navmesh " + a 50-letter name is past Blender 4.2's 63-byte names: the name was
    # cut, the overlay not found again, and every rebake added one more.
    agents = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.agents")
    box(bpy, "Floor", (-5, -5, -0.5), (5, 5, 0))
    _add_agent(bpy, "n" * 50, 0.3)
    for _ in range(3):
        assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
        outputs = ext.writeback.output_objects(bpy.context.scene)
        tagged = [o for o in outputs if o.get(agents.AGENT_TAG)]
        assert len(tagged) == 1
        assert len(tagged[0].name.encode()) <= 63 and tagged[0][agents.AGENT_TAG] == "n" * 50
