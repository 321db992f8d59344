"""VoxNav operators: voxelize, build navmesh, clear, export, add demo scene.

Errors from the core (``VoxNavError``) become ``self.report({'ERROR'}, msg)`` and
``{'CANCELLED'}``; nothing is written then. Each warning of a bake (the core's build context,
the voxel cap) becomes a WARNING report and a line in the Last Bake panel. A navmesh bake with 0
polygons keeps the previous result and reports why. Operators that change data have UNDO.
"""

from __future__ import annotations

import os
import time

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ..core import chunky
from ..core.errors import VoxNavError
from . import bake, demo, live, obstacles, writeback


def _object_mode_poll(cls, context) -> bool:
    if not writeback.scene_writable(cls, context):
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

    #: Seconds of tile work per timer event of the modal tiled bake (the UI redraws between).
    STEP_SECONDS = 0.05

    def invoke(self, context, event):
        """From the UI with tiles: bake tile by tile in a modal loop (the viewport stays
        responsive, the status bar and the panel say "tile k of n", Esc cancels with nothing
        written; with agent rows each agent's tiles in turn). Headless or solo: `execute` at
        once."""
        settings = context.scene.voxnav
        if bpy.app.background or settings.tile_size == 0:
            return self.execute(context)
        try:
            self._steps = bake.tiled_bake_steps(bpy.context)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 1000)
        return {"RUNNING_MODAL"}

    def _end_modal(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        context.scene.voxnav.tile_progress = ""
        _redraw_panels(context)

    def modal(self, context, event):
        if event.type == "ESC":
            self._steps.close()  # nothing written
            self._end_modal(context)
            self.report({"WARNING"}, "VoxNav: tiled bake cancelled, nothing changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        deadline = time.perf_counter() + self.STEP_SECONDS
        text = ""
        try:
            while True:  # at least one step per event, more while the time slice lasts
                fraction, text = next(self._steps)
                context.window_manager.progress_update(int(max(0.0, min(1.0, fraction)) * 1000))
                if time.perf_counter() >= deadline:
                    break
        except StopIteration as stop:
            self._end_modal(context)
            return self._finished(context, stop.value)
        except VoxNavError as exc:
            self._end_modal(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except MemoryError:
            self._end_modal(context)
            self.report({"ERROR"}, "out of memory: raise Cell Size / Tile Size or limit the bounds")
            return {"CANCELLED"}
        if context.workspace is not None and text:
            context.workspace.status_text_set(f"VoxNav: baking {text} (Esc cancels)")
        _redraw_panels(context)
        return {"RUNNING_MODAL"}

    def _finished(self, context, outcome):
        for warning in outcome.warnings:
            self.report({"WARNING"}, warning)
        if outcome.empty:
            self.report({"WARNING"}, f"VoxNav: {context.scene.voxnav.last_message}")
            return {"FINISHED"}
        self.report({"INFO"}, f"VoxNav {bake.STAGES[self.stop_after]}: {outcome.summary()}")
        return {"FINISHED"}


def _redraw_panels(context) -> None:
    screen = getattr(context, "screen", None)
    for area in screen.areas if screen is not None else ():
        if area.type == "VIEW_3D":
            area.tag_redraw()


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
        obstacles.forget(context.scene)
        live.forget_navmesh(context.scene)
        chunky.forget_reused()  # the chunk tree kept for a tiled rebake: its memory back
        context.scene.voxnav.last_counts.clear()
        context.scene.voxnav.last_timings.clear()
        context.scene.voxnav.last_warnings.clear()
        context.scene.voxnav.last_message = ""
        context.scene.voxnav.last_stage = ""
        self.report({"INFO"}, f"VoxNav: removed {removed} object(s)")
        return {"FINISHED"}


#: Export formats and their file extensions.
FORMAT_EXTENSIONS = {"OBJ": ".obj", "JSON": ".json", "BIN": ".bin"}


class VOXNAV_OT_export_navmesh(bpy.types.Operator, ExportHelper):  # type: ignore[misc]
    """Export the navigation mesh shown as OBJ, JSON or Detour's binary navmesh (.bin); a
    tiled one (with its obstacles' current tiles) as .bin, one tile per tile, or OBJ"""

    bl_idname = "voxnav.export_navmesh"
    bl_label = "Export Navmesh"
    bl_options = {"REGISTER"}

    filename_ext = ".obj"
    filter_glob: StringProperty(default="*.obj;*.json;*.bin", options={"HIDDEN"})  # type: ignore[valid-type]
    file_format: EnumProperty(  # type: ignore[valid-type]
        name="Format",
        items=[
            ("OBJ", "OBJ", "Wavefront OBJ: the detail mesh if any, else the polygons"),
            ("JSON", "JSON", "Polygons, adjacency, regions and detail mesh as JSON"),
            ("BIN", "Detour .bin", "RecastDemo's navmesh set (MSET) for Detour runtimes, Y-up"),
        ],
        default="OBJ",
    )

    @classmethod
    def poll(cls, context):
        scene = context.scene
        if scene is not None and obstacles.live_cache(scene) is not None:
            return True  # a tiled bake, its tiles live
        outcome = bake.last_outcome(scene) if scene is not None else None
        if outcome is None and scene is not None and scene.voxnav.last_stage == "navmesh":
            if live.has_navmesh(scene):
                return True  # the file's stored navmesh, reopened (`export_stored_navmesh`)
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
        ext = FORMAT_EXTENSIONS[self.file_format]
        root, old = os.path.splitext(self.filepath)
        known = old.lower() in FORMAT_EXTENSIONS.values()
        path = root + ext if known else self.filepath + ext
        if path != self.filepath:
            self.filepath = path
            return True
        return False

    def execute(self, context):
        path = bpy.path.abspath(self.filepath)
        if not os.path.splitext(os.path.basename(path))[0]:  # "" or "folder/": a hidden ".obj"
            self.report({"ERROR"}, f"no file name in {path!r}: give the navmesh file a name")
            return {"CANCELLED"}
        by_extension = {ext: name for name, ext in FORMAT_EXTENSIONS.items()}
        suffix = os.path.splitext(path)[1].lower()
        if suffix in by_extension:
            self.file_format = by_extension[suffix]
        else:
            path += FORMAT_EXTENSIONS[self.file_format]
        live_tiles = obstacles.live_cache(context.scene)
        outcome = bake.last_outcome(context.scene)
        try:
            if live_tiles is not None:
                written = export_tiled_navmesh(live_tiles, path, self.file_format)
            elif outcome is not None:
                written = export_navmesh(outcome, path, self.file_format)
            else:
                written = export_stored_navmesh(context.scene, path, self.file_format)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write {path}: {exc.strerror or exc}")
            return {"CANCELLED"}
        what = "navmesh" if len(written) == 1 else f"{len(written)} agents' navmeshes"
        self.report({"INFO"}, f"VoxNav: {what} written to {', '.join(written)}")
        return {"FINISHED"}


def export_navmesh(
    outcome: bake.BakeOutcome,
    path: str,
    file_format: str = "OBJ",
    paths=None,
    batch=None,
) -> list[str]:
    """Write the navmesh of ``outcome`` with ``core.export``; VoxNavError if there is none.

    With agent types (``outcome.agents``), one file per agent, its name inserted before the
    extension (``navmesh.obj`` -> ``navmesh_small.obj``, `core.agents.agent_output`), all
    written or none. paths: test paths for the JSON's ``paths`` entry
    (`live.PathReport.as_json` dicts), or {agent name: such a list} with agent types (each
    agent's file its own paths). The files replace their targets only when complete
    (``core.atomic``; with ``batch``, when the batch commits; ``path`` reserved in it is
    released for the agents' files); the .blend open in this session is never overwritten.
    Returns the paths written (or to be written by ``batch``).
    """

    agents = dict(getattr(outcome, "agents", None) or {})
    names = {id(result): name for name, result in agents.items()}

    def write(target, result, into):
        docs = paths.get(names.get(id(result)), []) if isinstance(paths, dict) else paths
        _export_one(result, target, file_format, docs, into)

    return _write_per_agent(path, agents, outcome.result, write, batch)


def export_stored_navmesh(scene, path: str, file_format: str = "BIN") -> list[str]:
    """The navmesh kept in the .blend (`live.stored_navmesh_set`), for a solo bake of an
    earlier session (the file reopened): Detour .bin, the same bytes the bake's export wrote
    (the stored tile mirrored into the engine frame). OBJ and JSON are written from the
    bake's polygon and detail meshes, which the file does not keep, and agent rows want one
    file per agent: VoxNavError saying to bake again. Returns the path written."""
    from ..core import atomic
    from ..core.nav import binio, navdata

    if file_format != "BIN":
        raise VoxNavError(
            "this file keeps its navmesh as Detour data only (for the Path Test), which exports "
            "as Detour .bin: choose .bin, or Build Navmesh again for OBJ or JSON"
        )
    if len(scene.voxnav.agents):
        raise VoxNavError(
            "this file keeps only the first agent's navmesh: Build Navmesh again to export "
            "each agent's"
        )
    stored = live.stored_navmesh_set(scene)
    if stored is None:
        raise VoxNavError("no navmesh stored in this scene: Build Navmesh first")
    if len(stored.tiles) != 1:  # it said "no navmesh stored", of a navmesh the Path Test walks
        raise VoxNavError(
            "this file keeps its tiled navmesh for the Path Test only, and its tile cache is "
            "not loaded (Tile Size is 0, or the cache file beside the .blend is gone): Build "
            "Navmesh again to export it"
        )
    data = binio.navmesh_set_bytes([navdata.mirror_z(stored.tiles[0])])

    def write(target, payload: bytes, into) -> None:
        with atomic.open_replacing(target, "wb", batch=into) as fh:
            fh.write(payload)

    return _write_per_agent(path, {}, data, write)


def export_tiled_navmesh(live_tiles, path: str, file_format: str = "BIN") -> list[str]:
    """Write the tiled navmesh the scene shows (`obstacles.LiveTiles`: the tiles as the
    obstacles left them, pruned as shown): BIN, Detour's navmesh set with one tile per tile
    (`core.export.write_tiled_detour_bin`, in a Y-up engine's frame); OBJ, every tile's
    polygons (one object per tile). JSON has no tiled form (VoxNavError). With agent rows,
    one file per agent (``navmesh.bin`` -> ``navmesh_small.bin``), all written or none.
    Returns the paths written."""
    from ..core import atomic, export
    from .cli import write_tiled_obj

    if file_format == "JSON":
        raise VoxNavError(
            "a tiled navmesh exports as Detour .bin (one tile per tile) or OBJ (every tile's "
            "polygons): choose one of those, or bake without tiles (Tile Size 0) for JSON"
        )

    def write(target, lt, into):
        shown, _warnings = lt.shown_bake()
        if shown.empty:
            raise VoxNavError(
                "the tiled navigation mesh is empty (no tile has polygons): nothing to export"
            )
        if file_format == "BIN":
            export.write_tiled_detour_bin(target, shown, frame="engine", batch=into)
        else:
            with atomic.replacing(target, batch=into) as temp:
                write_tiled_obj(os.fspath(temp), shown.navmesh())

    return _write_per_agent(path, dict(live_tiles.agents or {}), live_tiles, write)


def _write_per_agent(path: str, agents: dict, single, write, batch=None) -> list[str]:
    """``write(target, item, batch)`` for each agent's item of ``agents`` ({name: item}) at
    its own file (`core.agents.agent_output`), or for ``single`` at ``path`` when there are
    no agents; all files or none. With a caller's ``batch`` (``path`` reserved in it), the
    files join it (``path`` is released for the agents' files); else they go through a batch
    of their own, every target checked before the first is written, committed at the end.
    Returns the paths written (or to be written by the caller's batch)."""
    from ..core import atomic
    from ..core.agents import agent_output

    each = [(agent_output(path, name), item) for name, item in agents.items()]
    if not each:
        each = [(path, single)]
    if batch is not None:
        if agents:
            batch.release(path)
            for target, _item in each:
                # Checked and reserved here: another output of the run (--json c_a.obj
                # beside --obj c.obj's agent "a", say) naming the file is refused, where
                # writing through its reservation lost one of the two files.
                batch.add(target)
        for target, item in each:
            write(target, item, batch)
    else:
        with atomic.Batch(inputs=open_files()) as own:
            for target, _item in each:
                own.add(target)  # a missing folder, a folder or the open .blend: refused here
            for target, item in each:
                write(target, item, own)
            own.commit()
    return [target for target, _item in each]


def open_files() -> list[str]:
    """The files an export must never replace: the open .blend and every library it links
    (an export named as a linked library, or through a symlink to one, replaced it)."""
    files = [bpy.data.filepath] if bpy.data.filepath else []
    return files + [os.path.normpath(path) for _lib, path in writeback.linked_libraries()]


def _export_one(result, path: str, file_format: str, paths, batch) -> None:
    """One bake result's navmesh to ``path`` (see `export_navmesh`)."""
    from ..core import atomic, export

    pmesh = result.polymesh
    if pmesh is None:
        raise VoxNavError(
            "no navigation polygons to export: build the navmesh first (this core stops before "
            "the polygon mesh)"
        )
    dmesh = result.detail
    links = getattr(result, "offmesh_links", None)  # automatic jump/drop links of the bake
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise VoxNavError(f"cannot write {path}: folder {directory} does not exist")
    atomic.check_target(path, inputs=open_files())
    if file_format == "JSON":
        export.write_json(path, pmesh, dmesh, paths=paths, offmesh=links, batch=batch)
    elif file_format == "BIN":
        # Blender's Z-up scene in a Y-up engine's frame (x, z, -y), as glTF exports it.
        cfg = result.config
        export.write_detour_bin(
            path,
            pmesh,
            dmesh,
            agent_height=cfg.agent_height,
            agent_radius=cfg.agent_radius,
            agent_max_climb=cfg.agent_max_climb,
            frame="engine",
            offmesh=links,
            batch=batch,
        )
    else:
        export.write_obj(path, pmesh, dmesh, offmesh=links, batch=batch)


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


class VOXNAV_OT_add_path_test(bpy.types.Operator):
    """Add a Start and a Goal empty and a path that follows them on the navmesh as they move"""

    bl_idname = "voxnav.add_path_test"
    bl_label = "Add Path Test"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not live.has_navmesh(context.scene):
            cls.poll_message_set("Build the navmesh first")
            return False
        return _object_mode_poll(cls, context)

    def execute(self, context):
        try:
            report = live.add_path_test(context.scene)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        length = live.scene_units_text(context.scene, report.length)
        self.report({"INFO"}, f"VoxNav: path {report.status}, {length}")
        return {"FINISHED"}


class _PathToolOperator:
    @classmethod
    def poll(cls, context):
        # Object Mode as the bakes: in Edit Mode the mesh's edits are not evaluated (Sample
        # Heights found no ground and replaced the samples with an empty line).
        if not _object_mode_poll(cls, context):
            return False
        start, goal, _ = live.path_test_objects(context.scene)
        if start is None or goal is None:
            cls.poll_message_set("Add a path test first")  # type: ignore[attr-defined]
            return False
        return True


class VOXNAV_OT_sample_heights(_PathToolOperator, bpy.types.Operator):
    """Drop points of the line from Start to Goal onto the highest surface of the scene's own
    geometry (height sampling with a spatial index)"""

    bl_idname = "voxnav.sample_heights"
    bl_label = "Sample Heights"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            hits = live.sample_heights(context)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"VoxNav: {hits} of {live.HEIGHT_SAMPLES} samples hit ground")
        return {"FINISHED"}


class VOXNAV_OT_voxel_path(_PathToolOperator, bpy.types.Operator):
    """Find the shortest voxel path from Start to Goal that walks on floors and climbs walls"""

    bl_idname = "voxnav.voxel_path"
    bl_label = "Voxel Path"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            found = live.voxel_path(context)
        except VoxNavError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if not found.found:
            hint = live.voxel_path_hint(context, found)
            self.report({"WARNING"}, f"VoxNav: voxel path: {found.status}{hint}")
        else:
            self.report({"INFO"}, f"VoxNav: voxel path of {found.steps} steps")
        return {"FINISHED"}


class VOXNAV_OT_add_nav_link(bpy.types.Operator):
    """Add a hand-made off-mesh link: a Start empty tagged Nav Link at the 3D cursor and its
    End empty 2 m along X; move them onto the two floors the link joins, then bake"""

    bl_idname = "voxnav.add_nav_link"
    bl_label = "Add Nav Link"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _object_mode_poll(cls, context)

    def execute(self, context):
        scene = context.scene
        cursor = scene.cursor.location.copy()
        made = []
        for name, offset in (("Nav Link Start", 0.0), ("Nav Link End", 2.0)):
            empty = bpy.data.objects.new(name, None)
            empty.empty_display_type = "SINGLE_ARROW" if offset == 0.0 else "SPHERE"
            empty.empty_display_size = 0.3
            empty.location = (cursor.x + offset, cursor.y, cursor.z)
            context.collection.objects.link(empty)
            made.append(empty)
        start, end = made
        start.voxnav.nav_link = True
        start.voxnav.nav_link_end = end
        self.report({"INFO"}, f"VoxNav: added {start.name} -> {end.name}; bake to use it")
        return {"FINISHED"}


classes = (
    VOXNAV_OT_voxelize,
    VOXNAV_OT_build_navmesh,
    VOXNAV_OT_clear,
    VOXNAV_OT_export_navmesh,
    VOXNAV_OT_add_demo_scene,
    VOXNAV_OT_add_path_test,
    VOXNAV_OT_add_nav_link,
    VOXNAV_OT_sample_heights,
    VOXNAV_OT_voxel_path,
)

register, unregister = bpy.utils.register_classes_factory(classes)
