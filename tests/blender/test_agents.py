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


@pytest.mark.parametrize(
    ("name", "needle"), [("bad name", "agent name"), ("dup", "two agents are named")]
)
def test_bad_agent_rows_report_an_error(bpy, ext, name, needle):
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    _add_agent(bpy, name, 0.3)
    if name == "dup":
        _add_agent(bpy, name, 0.6)
    with pytest.raises(RuntimeError, match=needle):
        bpy.ops.voxnav.build_navmesh()
