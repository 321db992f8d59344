"""Agent types in Blender: a list of agents on ``Scene.voxnav.agents``, one navmesh each.

With rows in the list, Build Navmesh bakes once for every agent (``core.agents.bake_agents``:
the stages agents have in common run once) and writes one overlay object per agent, "VoxNav
Navmesh <name>", tagged as VoxNav's output (never gathered, removed by Clear), shown or hidden
by the row's eye toggle (and Show Navmesh). The voxels and the path test use the first agent.
With the list empty, everything is as without this module.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import bpy
from bpy.props import BoolProperty, FloatProperty, StringProperty

from ..core import agents as core_agents
from ..core.config import NavConfig
from ..core.context import BuildContext
from ..core.settings_doc import tooltip
from . import writeback
from .gather import OUTPUT_TAG

#: Custom property on an agent's overlay object: the agent's name.
AGENT_TAG = "voxnav_agent"
_DEFAULTS = NavConfig()


#: Bytes of an ID name Blender 4.2 keeps (5.0 on: 255); a longer name is cut, and the
#: object is then not found by its name again (every rebake added another overlay).
MAX_ID_NAME_BYTES = 63


def _fitted(name: str) -> str:
    """``name``, or when it is longer than `MAX_ID_NAME_BYTES` its start and a short hash of
    it (agent names are ASCII: a character is a byte), the same in every Blender."""
    if len(name.encode("utf-8")) <= MAX_ID_NAME_BYTES:
        return name
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{name[: MAX_ID_NAME_BYTES - 9]}~{digest}"


def overlay_name(agent_name: str) -> str:
    """The overlay object's name of agent ``agent_name`` (`_fitted`)."""
    return _fitted(f"{writeback.NAVMESH_NAME} {agent_name}")


def links_name(agent_name: str) -> str:
    """The off-mesh link arcs object's name of agent ``agent_name`` (`_fitted`)."""
    return _fitted(f"{writeback.LINKS_NAME} {agent_name}")


def _update_visibility(self, context) -> None:
    writeback.apply_visibility(self.id_data)


class VOXNAV_PG_agent(bpy.types.PropertyGroup):
    """One agent row: its name and its four agent settings (world units; slope an angle)."""

    name: StringProperty(  # type: ignore[valid-type]
        name="Name",
        description="Agent name: letters, digits, _ and - (its overlay is 'VoxNav Navmesh NAME')",
        default="agent",
    )
    radius: FloatProperty(  # type: ignore[valid-type]
        name="Radius", description=tooltip("agent_radius"), default=_DEFAULTS.agent_radius,
        min=0.0, soft_max=5.0, subtype="DISTANCE", unit="LENGTH", precision=3,
    )  # fmt: skip
    height: FloatProperty(  # type: ignore[valid-type]
        name="Height", description=tooltip("agent_height"), default=_DEFAULTS.agent_height,
        min=0.001, soft_max=5.0, subtype="DISTANCE", unit="LENGTH", precision=3,
    )  # fmt: skip
    max_climb: FloatProperty(  # type: ignore[valid-type]
        name="Max Climb", description=tooltip("agent_max_climb"),
        default=_DEFAULTS.agent_max_climb, min=0.0, soft_max=5.0, subtype="DISTANCE",
        unit="LENGTH", precision=3,
    )  # fmt: skip
    max_slope: FloatProperty(  # type: ignore[valid-type]
        name="Max Slope", description=tooltip("agent_max_slope"),
        default=math.radians(_DEFAULTS.agent_max_slope), min=0.0, max=math.radians(89.99),
        subtype="ANGLE",
    )  # fmt: skip
    show: BoolProperty(  # type: ignore[valid-type]
        name="Show",
        description="Draw this agent's navmesh overlay",
        default=True,
        update=_update_visibility,
    )


def _short(value: float) -> float:
    """Blender's float32 as the shortest decimal that round-trips (0.3 stays 0.3)."""
    return float(f"{value:.7g}")


def agent_types(settings) -> list[core_agents.AgentType]:
    """The core's agents of ``Scene.voxnav.agents``, in row order (not validated here)."""
    return [
        core_agents.AgentType(
            row.name,
            radius=_short(row.radius),
            height=_short(row.height),
            max_climb=_short(row.max_climb),
            max_slope=round(math.degrees(row.max_slope), 4),
        )
        for row in settings.agents
    ]


def bake(gathered, config: NavConfig, volumes, settings, progress=None, offmesh_links=None):
    """Bake every agent row, each navmesh with the hand-made ``offmesh_links`` (Nav Links).
    Returns ({name: BakeResult}, the build context)."""
    ctx = BuildContext(progress_fn=progress)
    results = core_agents.bake_agents(
        gathered.verts, gathered.tris, config, agent_types(settings), ctx=ctx, volumes=volumes,
        offmesh_links=offmesh_links,
    )  # fmt: skip
    return results, ctx


def _remove_object(obj) -> None:
    data = obj.data
    bpy.data.objects.remove(obj)
    if data is not None and data.users == 0:
        bpy.data.meshes.remove(data)


def remove_overlays(scene, keep: tuple[str, ...] = ()) -> None:
    """Remove the agent overlays of ``scene`` whose agent is not in ``keep``, and those of
    agents in ``keep`` not named as this version names them (`overlay_name`, `links_name`):
    a file baked before long names were shortened kept its overlay beside the new one."""
    for obj in writeback.output_objects(scene):
        agent = obj.get(AGENT_TAG)
        if agent is None:
            continue
        if agent not in keep or obj.name not in (overlay_name(agent), links_name(agent)):
            _remove_object(obj)


def write_overlays(scene, results: dict, lift_of) -> None:
    """One overlay object per agent (replacing the single "VoxNav Navmesh" and overlays of
    agents no longer listed). ``lift_of(cell_height)``: the overlay lift [Units: wu]."""
    for single in (writeback.NAVMESH_NAME, writeback.LINKS_NAME):
        main = writeback.scene_output(scene, single)
        if main is not None:
            _remove_object(main)
    remove_overlays(scene, keep=tuple(results))
    for name, result in results.items():
        lift = lift_of(result.heightfield.ch)
        obj = writeback.write_overlay(
            scene, result.overlay(), lift, result.polymesh is not None, name=overlay_name(name)
        )
        obj[AGENT_TAG] = name
        obj[OUTPUT_TAG] = True
        # The agent's off-mesh links as arcs, "VoxNav Links NAME" (none: removed).
        arcs = writeback.write_links(scene, result.offmesh_links, lift, name=links_name(name))
        if arcs is not None:
            arcs[AGENT_TAG] = name
    writeback.apply_visibility(scene)


def write_tile_overlays(scene, views: dict, lift: float) -> None:
    """`write_overlays` for tiled bakes: ``views`` {agent name: (tile overlay arrays (`core.
    tilecache.tile_overlay`), off-mesh links or None)}; lift [Units: wu]."""
    for single in (writeback.NAVMESH_NAME, writeback.LINKS_NAME):
        main = writeback.scene_output(scene, single)
        if main is not None:
            _remove_object(main)
    remove_overlays(scene, keep=tuple(views))
    for name, (overlay, links) in views.items():
        obj = writeback.write_overlay(scene, overlay, lift, True, name=overlay_name(name))
        obj[AGENT_TAG] = name
        obj[OUTPUT_TAG] = True
        arcs = writeback.write_links(scene, links, lift, name=links_name(name))
        if arcs is not None:
            arcs[AGENT_TAG] = name
    writeback.apply_visibility(scene)


def apply_visibility(scene) -> None:
    """Show each agent overlay (and its link arcs, with Show Links) when Show Navmesh and its
    row's toggle are on; one whose row was renamed or removed since the bake follows Show
    Navmesh alone (it was hidden for good, no toggle bringing it back)."""
    settings = scene.voxnav
    shown = {row.name: bool(row.show) for row in settings.agents}
    for obj in writeback.output_objects(scene):
        agent = obj.get(AGENT_TAG)
        if agent is not None:
            visible = bool(settings.show_navmesh) and shown.get(agent, True)
            if obj.get(writeback.LINKS_TAG) is not None:
                visible = visible and bool(settings.show_links)
            obj.hide_viewport = not visible
            obj.hide_render = not visible


class VOXNAV_UL_agents(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop(item, "name", text="", emboss=False)
        row.prop(item, "show", text="", icon="HIDE_OFF" if item.show else "HIDE_ON", emboss=False)


class VOXNAV_OT_agent_add(bpy.types.Operator):
    """Add an agent row (its settings start as the Agent panel's)"""

    bl_idname = "voxnav.agent_add"
    bl_label = "Add Agent"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return writeback.scene_writable(cls, context)

    def execute(self, context):
        settings = context.scene.voxnav
        names = {row.name for row in settings.agents}
        number = len(settings.agents) + 1
        while f"agent_{number}" in names:
            number += 1
        row = settings.agents.add()
        row.name = f"agent_{number}"
        row.radius = settings.agent_radius
        row.height = settings.agent_height
        row.max_climb = settings.agent_max_climb
        row.max_slope = settings.agent_max_slope
        settings.agent_index = len(settings.agents) - 1
        return {"FINISHED"}


class VOXNAV_OT_agent_remove(bpy.types.Operator):
    """Remove the selected agent row"""

    bl_idname = "voxnav.agent_remove"
    bl_label = "Remove Agent"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not writeback.scene_writable(cls, context):
            return False
        settings = context.scene.voxnav
        return 0 <= settings.agent_index < len(settings.agents)

    def execute(self, context):
        settings = context.scene.voxnav
        settings.agents.remove(settings.agent_index)
        settings.agent_index = min(settings.agent_index, len(settings.agents) - 1)
        return {"FINISHED"}


class VOXNAV_PT_agents(bpy.types.Panel):
    bl_space_type: Any = "VIEW_3D"
    bl_region_type: Any = "UI"
    bl_category = "VoxNav"
    bl_label = "Agent Types"
    bl_parent_id = "VOXNAV_PT_main"
    bl_order = 2
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.voxnav
        layout.label(text="One navmesh per agent (empty: the Agent panel)")
        row = layout.row()
        row.template_list(
            "VOXNAV_UL_agents", "", settings, "agents", settings, "agent_index", rows=3
        )
        col = row.column(align=True)
        col.operator("voxnav.agent_add", icon="ADD", text="")
        col.operator("voxnav.agent_remove", icon="REMOVE", text="")
        if 0 <= settings.agent_index < len(settings.agents):
            item = settings.agents[settings.agent_index]
            col = layout.column(align=True)
            for name in ("radius", "height", "max_climb", "max_slope"):
                col.prop(item, name)


#: Registered by properties.register (the PropertyGroup must exist before Scene.voxnav).
property_classes = (VOXNAV_PG_agent,)
classes = (VOXNAV_UL_agents, VOXNAV_OT_agent_add, VOXNAV_OT_agent_remove, VOXNAV_PT_agents)
register, unregister = bpy.utils.register_classes_factory(classes)
