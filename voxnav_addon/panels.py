"""VoxNav sidebar tab in the 3D View: settings grouped as in RecastDemo, buttons, last figures."""

from __future__ import annotations

import textwrap
from typing import Any

import bpy

#: Characters per warning line in the Last Bake panel (the sidebar is narrow).
WARNING_WRAP = 48


class _VoxNavPanel:
    bl_space_type: Any = "VIEW_3D"
    bl_region_type: Any = "UI"
    bl_category = "VoxNav"


class VOXNAV_PT_main(_VoxNavPanel, bpy.types.Panel):
    bl_label = "VoxNav"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.voxnav
        col = layout.column(align=True)
        col.prop(settings, "source")
        if settings.source == "COLLECTION":
            col.prop(settings, "source_collection", text="")
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.operator("voxnav.voxelize", icon="MESH_GRID")
        row.operator("voxnav.build_navmesh", icon="MOD_REMESH")
        row = layout.row(align=True)
        row.operator("voxnav.clear", icon="TRASH")
        row.operator("voxnav.export_navmesh", icon="EXPORT", text="Export")
        layout.operator("voxnav.add_demo_scene", icon="SCENE_DATA")


def _sub(label: str, order: int, closed: bool = True):
    def decorate(cls):
        cls.bl_label = label
        cls.bl_parent_id = "VOXNAV_PT_main"
        cls.bl_order = order
        if closed:
            cls.bl_options = {"DEFAULT_CLOSED"}
        return cls

    return decorate


def _props(layout, settings, names) -> None:
    col = layout.column(align=True)
    col.use_property_split = True
    col.use_property_decorate = False
    for name in names:
        col.prop(settings, name)


@_sub("Rasterization", 1, closed=False)
class VOXNAV_PT_rasterization(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        settings = context.scene.voxnav
        _props(self.layout, settings, ("cell_size", "cell_height"))
        col = self.layout.column(align=True)
        col.use_property_split = True
        col.prop(settings, "use_bounds")
        if settings.use_bounds:
            col.prop(settings, "bounds_min")
            col.prop(settings, "bounds_max")
        col.prop(settings, "memory_limit")


@_sub("Agent", 2, closed=False)
class VOXNAV_PT_agent(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        _props(
            self.layout,
            context.scene.voxnav,
            ("agent_height", "agent_radius", "agent_max_climb", "agent_max_slope"),
        )


@_sub("Region", 3)
class VOXNAV_PT_region(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        _props(
            self.layout, context.scene.voxnav, ("region_min_size", "region_merge_size", "partition")
        )


@_sub("Polygonization", 4)
class VOXNAV_PT_polygonization(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        _props(
            self.layout, context.scene.voxnav, ("edge_max_len", "edge_max_error", "verts_per_poly")
        )


@_sub("Detail Mesh", 5)
class VOXNAV_PT_detail(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        _props(self.layout, context.scene.voxnav, ("detail_sample_dist", "detail_sample_max_error"))


@_sub("Filtering", 6)
class VOXNAV_PT_filters(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        col = self.layout.column(align=True)
        settings = context.scene.voxnav
        for name in (
            "filter_low_hanging_obstacles",
            "filter_ledge_spans",
            "filter_walkable_low_height_spans",
        ):
            col.prop(settings, name)


@_sub("Off-Mesh Links", 7)
class VOXNAV_PT_links(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        settings = context.scene.voxnav
        self.layout.prop(settings, "auto_links")
        col = self.layout.column(align=True)
        col.use_property_split = True
        col.use_property_decorate = False
        col.active = settings.auto_links
        for name in ("max_drop", "max_jump_distance", "link_spacing"):
            col.prop(settings, name)
        layout = self.layout
        layout.operator("voxnav.add_nav_link", icon="EMPTY_SINGLE_ARROW")
        obj = context.active_object
        if obj is not None:  # hand-made links: this object as a link's start
            layout.prop(obj.voxnav, "nav_link", text=f"{obj.name}: Nav Link")
            col = layout.column(align=True)
            col.active = obj.voxnav.nav_link
            col.prop(obj.voxnav, "nav_link_end")
            col.prop(obj.voxnav, "nav_link_radius")
            col.prop(obj.voxnav, "nav_link_one_way")
        count = sum(1 for o in context.scene.objects if o.voxnav.nav_link)
        layout.label(text=f"{count} Nav Link(s), used by solo bakes")


@_sub("Display", 7)
class VOXNAV_PT_display(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        settings = context.scene.voxnav
        layout = self.layout
        row = layout.row(align=True)
        row.prop(settings, "show_voxels", toggle=True)
        row.prop(settings, "show_navmesh", toggle=True)
        row.prop(settings, "show_links", toggle=True)
        _props(layout, settings, ("voxel_display", "max_voxels_drawn"))


#: Counts shown in the figures panel, in this order.
FIGURES = (
    ("triangles", "Triangles"),
    ("walkable_triangles", "Walkable Triangles"),
    ("spans", "Spans"),
    ("walkable_spans", "Walkable Spans"),
    ("voxels", "Voxels"),
    ("regions", "Regions"),
    ("polys", "Polygons"),
    ("detail_tris", "Detail Triangles"),
    ("polys_pruned", "Pruned Polygons"),
    ("auto_links", "Auto Links"),
    ("pruned_area", "Pruned Area"),
)


def warning_lines(settings, width: int = WARNING_WRAP) -> list[str]:
    """The last bake's warnings wrapped into panel lines (a warning's first line starts with
    "! ")."""
    lines: list[str] = []
    for item in settings.last_warnings:
        wrapped = textwrap.wrap(item.text, width) or [""]
        lines.append("! " + wrapped[0])
        lines += ["  " + line for line in wrapped[1:]]
    return lines


def draw_warnings(layout, settings) -> None:
    if not len(settings.last_warnings):
        return
    col = layout.box().column(align=True)
    for line in warning_lines(settings):
        col.label(text=line, icon="ERROR" if line.startswith("! ") else "BLANK1")


@_sub("Last Bake", 8, closed=False)
class VOXNAV_PT_figures(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        from . import live

        settings = context.scene.voxnav
        layout = self.layout
        if settings.last_message:
            layout.label(text=settings.last_message, icon="ERROR")
        draw_warnings(layout, settings)
        if not settings.last_stage:
            layout.label(text="Not baked yet", icon="INFO")
            return
        stage = "Navmesh" if settings.last_stage == "navmesh" else "Voxels"
        layout.label(text=f"{stage} in {settings.last_seconds:.3f} s")
        grid = layout.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
        for key, label in FIGURES:
            item = settings.last_counts.get(key)
            if item is not None:
                grid.label(text=label)
                if key == "pruned_area":  # square scene units, rounded
                    grid.label(text=live.scene_units_text(context.scene, item.count, "AREA"))
                else:
                    grid.label(text=f"{item.count:,}")
        box = layout.box()
        box.label(text="Time per stage")
        grid = box.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
        for item in settings.last_timings:
            grid.label(text=item.name.replace("_", " "))
            grid.label(text=f"{item.seconds * 1000:.1f} ms")


@_sub("Area Volumes", 8)
class VOXNAV_PT_area_volumes(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None:
            layout.label(text="Select an object to make it an area volume")
        else:
            col = layout.column(align=True)
            col.prop(obj.voxnav, "area_volume", text=f"{obj.name}: Area Volume")
            sub = col.row()
            sub.active = obj.voxnav.area_volume
            sub.prop(obj.voxnav, "area_id")
        count = sum(1 for o in context.scene.objects if o.voxnav.area_volume)
        layout.label(text=f"{count} area volume(s): bounding boxes, applied after erosion")
        if obj is not None:  # island pruning (core.prune): a start point, usually an empty
            layout.prop(obj.voxnav, "reachable_from", text=f"{obj.name}: Reachable From")
        layout.prop(context.scene.voxnav, "prune_mode")


@_sub("Path Test", 9, closed=False)
class VOXNAV_PT_path_test(_VoxNavPanel, bpy.types.Panel):
    def draw(self, context):
        from . import live

        layout = self.layout
        settings = context.scene.voxnav
        start, goal, _ = live.path_test_objects(context.scene)
        layout.operator("voxnav.add_path_test", icon="CURVE_PATH")
        if start is None or goal is None:
            layout.label(text="Move Start or Goal: the path follows on the navmesh")
            return
        col = layout.column(align=True)
        icon = "CHECKMARK" if settings.path_status == live.STATUS_REACHED else "INFO"
        col.label(text=f"Status: {settings.path_status or '-'}", icon=icon)
        col.label(text=f"Length: {live.scene_units_text(context.scene, settings.path_length)}")
        col.label(text=f"Polygons: {settings.path_polys}")
        row = layout.row(align=True)
        row.operator("voxnav.sample_heights", icon="SNAP_FACE")
        row.operator("voxnav.voxel_path", icon="MESH_CUBE")


classes = (
    VOXNAV_PT_main,
    VOXNAV_PT_rasterization,
    VOXNAV_PT_agent,
    VOXNAV_PT_region,
    VOXNAV_PT_polygonization,
    VOXNAV_PT_detail,
    VOXNAV_PT_filters,
    VOXNAV_PT_links,
    VOXNAV_PT_display,
    VOXNAV_PT_figures,
    VOXNAV_PT_area_volumes,
    VOXNAV_PT_path_test,
)

register, unregister = bpy.utils.register_classes_factory(classes)
