"""VoxNav operators: voxelize, build navmesh, clear, export, add demo scene.

Errors from the core (``VoxNavError``) become ``self.report({'ERROR'}, msg)`` and
``{'CANCELLED'}``; nothing is written then. Each warning of a bake (the core's build context,
the voxel cap) becomes a WARNING report and a line in the Last Bake panel. A navmesh bake with 0
polygons keeps the previous result and reports why. Operators that change data have UNDO.
"""

from __future__ import annotations

import os

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ..core.errors import VoxNavError
from . import bake, demo, writeback


def _object_mode_poll(cls, context) -> bool:
    if context.scene is None:
        cls.poll_message_set("No scene")
        return False
    if context.mode != "OBJECT":
        cls.poll_message_set("Switch to Object Mode first (edits are not evaluated yet)")
        return False
    return True


class _BakeOperator:
    stop_after = "navmesh"

    @classmethod
    def poll(cls, context):
        return _object_mode_poll(cls, context)

    def execute(self, context):
        wm = context.window_manager
        wm.progress_begin(0, 1000)

        def progress(fraction: float, stage: str) -> None:
            wm.progress_update(int(max(0.0, min(1.0, float(fraction))) * 1000))

        try:
            outcome = bake.bake_scene(context, self.stop_after, progress)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except MemoryError:
            self.report(
                {"ERROR"}, "out of memory: raise Cell Size / Cell Height or limit the bounds"
            )
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        for warning in outcome.warnings:
            self.report({"WARNING"}, warning)
        if outcome.empty:
            self.report({"WARNING"}, f"VoxNav: {context.scene.voxnav.last_message}")
            return {"FINISHED"}
        stages = ", ".join(f"{k} {v:.3f}s" for k, v in outcome.timings.items())
        self.report({"INFO"}, f"VoxNav {bake.STAGES[self.stop_after]}: {outcome.summary()}")
        print(f"VoxNav {bake.STAGES[self.stop_after]}: {outcome.summary()} [{stages}]")
        return {"FINISHED"}


class VOXNAV_OT_voxelize(_BakeOperator, bpy.types.Operator):
    """Voxelize the scene (solid heightfield and its filters) and show the voxels"""

    bl_idname = "voxnav.voxelize"
    bl_label = "Voxelize"
    bl_options = {"REGISTER", "UNDO"}
    stop_after = "heightfield"


class VOXNAV_OT_build_navmesh(_BakeOperator, bpy.types.Operator):
    """Build the navigation mesh of the scene with the VoxNav settings"""

    bl_idname = "voxnav.build_navmesh"
    bl_label = "Build Navmesh"
    bl_options = {"REGISTER", "UNDO"}
    stop_after = "navmesh"


class VOXNAV_OT_clear(bpy.types.Operator):
    """Remove VoxNav's voxels and navmesh overlay from the scene"""

    bl_idname = "voxnav.clear"
    bl_label = "Clear"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if context.scene is None or not writeback.output_objects(context.scene):
            cls.poll_message_set("Nothing to clear: no VoxNav result in this scene")
            return False
        return True

    def execute(self, context):
        removed = writeback.clear(context.scene)
        bake.LAST.pop(context.scene.session_uid, None)
        context.scene.voxnav.last_counts.clear()
        context.scene.voxnav.last_timings.clear()
        context.scene.voxnav.last_warnings.clear()
        context.scene.voxnav.last_message = ""
        context.scene.voxnav.last_stage = ""
        self.report({"INFO"}, f"VoxNav: removed {removed} object(s)")
        return {"FINISHED"}


class VOXNAV_OT_export_navmesh(bpy.types.Operator, ExportHelper):  # type: ignore[misc]
    """Export the last built navigation mesh (polygons and detail mesh) as OBJ or JSON"""

    bl_idname = "voxnav.export_navmesh"
    bl_label = "Export Navmesh"
    bl_options = {"REGISTER"}

    filename_ext = ".obj"
    filter_glob: StringProperty(default="*.obj;*.json", options={"HIDDEN"})  # type: ignore[valid-type]
    file_format: EnumProperty(  # type: ignore[valid-type]
        name="Format",
        items=[
            ("OBJ", "OBJ", "Wavefront OBJ: the detail mesh if any, else the polygons"),
            ("JSON", "JSON", "Polygons, adjacency, regions and detail mesh as JSON"),
        ],
        default="OBJ",
    )

    @classmethod
    def poll(cls, context):
        scene = context.scene
        outcome = bake.LAST.get(scene.session_uid) if scene is not None else None
        if (
            outcome is None
            or scene.voxnav.last_stage != "navmesh"
            or outcome.result.polymesh is None
        ):
            cls.poll_message_set("Build the navmesh first (Build Navmesh)")
            return False
        return True

    def check(self, context):
        """Keep the file extension in step with the chosen format."""
        ext = ".json" if self.file_format == "JSON" else ".obj"
        root, old = os.path.splitext(self.filepath)
        path = root + ext if old.lower() in (".obj", ".json") else self.filepath + ext
        if path != self.filepath:
            self.filepath = path
            return True
        return False

    def execute(self, context):
        path = bpy.path.abspath(self.filepath)
        if path.lower().endswith(".json"):
            self.file_format = "JSON"
        elif path.lower().endswith(".obj"):
            self.file_format = "OBJ"
        else:
            path += ".json" if self.file_format == "JSON" else ".obj"
        try:
            export_navmesh(bake.LAST[context.scene.session_uid], path, self.file_format)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write {path}: {exc.strerror or exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"VoxNav: navmesh written to {path}")
        return {"FINISHED"}


def export_navmesh(outcome: bake.BakeOutcome, path: str, file_format: str = "OBJ") -> None:
    """Write the navmesh of ``outcome`` with ``core.export``; VoxNavError if there is none."""
    try:
        from ..core import export
    except ImportError as exc:  # pragma: no cover - the exporter lands separately
        message = f"this VoxNav build has no navmesh exporter (core.export): {exc}"
        raise VoxNavError(message) from exc

    result = outcome.result
    pmesh = result.polymesh
    if pmesh is None:
        raise VoxNavError(
            "no navigation polygons to export: build the navmesh first (this core stops before "
            "the polygon mesh)"
        )
    dmesh = result.detail
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise VoxNavError(f"cannot write {path}: folder {directory} does not exist")
    if file_format == "JSON":
        export.write_json(path, pmesh, dmesh)
    else:
        export.write_obj(path, pmesh, dmesh)


class VOXNAV_OT_add_demo_scene(bpy.types.Operator):
    """Add VoxNav's demo level: floors, stairs, a steep ramp, a low ceiling, a bridge,
    a mirrored object and a collection instance"""

    bl_idname = "voxnav.add_demo_scene"
    bl_label = "Add Demo Scene"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _object_mode_poll(cls, context)

    def execute(self, context):
        coll = demo.build_demo(context.scene)
        self.report({"INFO"}, f"VoxNav: demo scene in collection '{coll.name}'")
        return {"FINISHED"}


classes = (
    VOXNAV_OT_voxelize,
    VOXNAV_OT_build_navmesh,
    VOXNAV_OT_clear,
    VOXNAV_OT_export_navmesh,
    VOXNAV_OT_add_demo_scene,
)

register, unregister = bpy.utils.register_classes_factory(classes)
