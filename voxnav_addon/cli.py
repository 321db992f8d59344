"""Headless batch command: open (or build) a scene, bake, write the outputs.

With a real Blender (the add-on registers the command)::

    blender --background --command voxnav level.blend --set cell_size=0.2 \\
        --obj navmesh.obj --png preview.png --save-blend baked.blend
    blender --background --command voxnav level.blend --tile-size 64 --workers 2 \\
        --obj navmesh.obj --save-blend baked.blend     # tiled, tile cache beside baked.blend

With the bpy wheel, call `main(argv)` after enabling the extension (tests/blender/harness.py
``cli`` does this). `main` returns the exit code, the same table as ``python -m core``
(core.cliutil): 0 success, 1 the bake or an input/output failed (an empty navmesh included),
2 bad flags or settings. The reason is one ``voxnav: error:`` line on stderr; warnings print as
``voxnav: warning:``; an unexpected exception adds a hint to rerun with ``--verbose``.
Outputs are checked before the bake (an output equal to the input .blend, a folder or a device
is refused) and replace the old files only when all of them are complete (`core.atomic`): on
any failure no old file changes.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import bpy
import numpy as np

from ..core import atomic
from ..core.cliutil import (
    EXIT_CODES_TEXT,
    EXIT_FAILED,
    EXIT_OK,
    SuggestingParser,
    print_warnings,
    run_guarded,
    setting_help,
    whole_number_at_least,
)
from ..core.config import NavConfig
from ..core.errors import UsageError, VoxNavError
from ..core.limits import MAX_COORDINATE, within_reach
from . import bake, demo, live, properties, writeback

PREVIEW_CAMERA = "VoxNav Preview Camera"
#: Preview sides Blender renders (RenderSettings.resolution_x/y clamp to them). [Units: pixels]
MIN_PREVIEW_SIDE, MAX_PREVIEW_SIDE = 4, 65536


def settings_epilog() -> str:
    """The ``--set`` settings with meaning, unit, default and limits (core units)."""
    lines = [
        "settings for --set NAME=VALUE (NavConfig names and core units; wu = world units, "
        "metres in Blender):"
    ]
    for name in NavConfig.field_names():
        lines.append(f"  {name}")
        lines.append(f"      {setting_help(name).replace('%%', '%')}")
    lines += ["", EXIT_CODES_TEXT]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = SuggestingParser(
        prog="voxnav",
        description="Bake VoxNav voxels and a navigation mesh headlessly and write the results.",
        epilog=settings_epilog().replace("%", "%%"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("blend", nargs="?", help=".blend file to open (default: the current scene)")
    p.add_argument("--demo", action="store_true", help="build the VoxNav demo level first")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a setting (NavConfig name and units, e.g. cell_size=0.2, "
        "agent_max_slope=45, partition=monotone, memory_limit=8GB, bounds_min=-5,-5,-1); "
        "repeatable; the settings are listed below",
    )
    p.add_argument(
        "--verbose", action="store_true", help="print the traceback of an unexpected error"
    )
    p.add_argument(
        "--voxels-only", action="store_true", help="stop after the heightfield (voxelize)"
    )
    p.add_argument("--save-blend", metavar="PATH", help="write the baked scene as a .blend")
    p.add_argument("--npz", metavar="PATH", help="write the voxel heightfield as .npz")
    p.add_argument(
        "--obj", metavar="PATH", help="write the navmesh (or the walkable overlay) as .obj"
    )
    p.add_argument("--json", metavar="PATH", help="write the navmesh as .json")
    p.add_argument("--png", metavar="PATH", help="render a Workbench preview picture")
    p.add_argument(
        "--path",
        dest="test_paths",
        action="append",
        default=[],
        metavar="X,Y,Z:X,Y,Z",
        help="add a test path from START to GOAL (world units, Z-up) on the baked navmesh: "
        'drawn in the --png picture and the saved .blend, listed under "paths" in the '
        "--json; repeatable (the last one stays live in the .blend)",
    )
    p.add_argument(
        "--reachable-from",
        action="append",
        default=[],
        metavar="X,Y,Z",
        help="a point agents start from (world units, Z-up; repeatable): added as an empty "
        'tagged "Reachable From", so polygons not connected to any such point are pruned '
        "(a negative X needs the = form: --reachable-from=-5,2,0)",
    )
    p.add_argument(
        "--prune-mode",
        choices=("remove", "disable"),
        default=None,
        help="with --reachable-from: remove the unreachable polygons, or keep them disabled "
        "(area 0, flag 0x10); default: the scene's Prune setting (Remove)",
    )
    p.add_argument(
        "--tile-size",
        type=whole_number_at_least(0),
        default=None,
        metavar="CELLS",
        help="bake in square tiles of this many cells (RecastDemo's tile mesh, e.g. 32..128; "
        "0 bakes one solo mesh; default: the scene's Tile Size). Tiled, --obj writes every "
        "tile's polygons and --save-blend writes the tile cache beside the .blend "
        "(NAME.voxnav-tiles.SCENE.npz) so dynamic obstacles rebuild without a rebake",
    )
    p.add_argument(
        "--workers",
        type=whole_number_at_least(0, properties.MAX_TILE_WORKERS),
        default=None,
        metavar="N",
        help="tiles baked at once in worker processes (0: one per core; default: the scene's "
        "Tile Workers, 1 = in this process)",
    )
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME[:KEY=VALUE,...]",
        help="bake for this agent type (repeatable; keys radius, height, max_climb, max_slope "
        "in wu / degrees, omitted keys from the scene's Agent settings, e.g. "
        "small:radius=0.3,height=1.8): replaces the scene's agent rows; each agent gets its own "
        "overlay, and --obj/--json write one file per agent, its name before the extension "
        "(nav.obj -> nav_small.obj)",
    )
    p.add_argument(
        "--auto-links",
        action="store_true",
        help="find jump and drop off-mesh links automatically (the same as --set "
        "auto_links=on; tune with --set max_drop=.., max_jump_distance=.., link_spacing=..): "
        "drawn as arcs in the overlay, counted in the summary",
    )
    p.add_argument("--resolution", default=None, metavar="WxH", help="--png's size (1280x720)")
    p.add_argument(
        "--png-voxels",
        action="store_true",
        help="show the voxels in the preview too (default: scene and navmesh only)",
    )
    return p


#: The --png picture's size when --resolution is not given.
DEFAULT_RESOLUTION = "1280x720"
#: Outputs that read the solo bake's heightfield or polygon mesh: refused with tiles.
SOLO_ONLY = {
    "npz": "--npz writes the solo bake's voxel heightfield",
    "json": "--json writes one polygon mesh",
    "voxels_only": "--voxels-only stops before the tiles' navmesh",
    "png_voxels": "--png-voxels draws the solo bake's voxels (a tiled bake keeps none)",
}


def parse_overrides(items: Sequence[str]) -> dict:
    """``["cell_size=0.2", ...]`` -> {name: value} typed as NavConfig's fields (core units).

    Raises `UsageError` (exit code 2) naming the setting, with a close match for a misspelt
    name."""
    out: dict = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep:
            raise UsageError(f"--set expects NAME=VALUE, got {item!r}")
        try:
            out[name] = NavConfig.parse(name, text)
        except VoxNavError as exc:
            raise UsageError(f"--set {item}: {exc}") from None
    return out


def _progress_printer():
    last = {"stage": None}

    def progress(fraction: float, stage: str) -> None:
        if stage != last["stage"]:
            last["stage"] = stage
            print(f"voxnav: {fraction * 100:5.1f}% {stage}", flush=True)

    return progress


def write_npz(path: str, outcome: bake.BakeOutcome) -> None:
    """The solid heightfield (CSR arrays), per-triangle areas and counts."""
    hf = outcome.result.heightfield
    # Any: numpy 2's stubs would match these keywords against savez's allow_pickle: bool.
    counts: dict[str, Any] = {f"count_{k}": np.int64(v) for k, v in outcome.counts.items()}
    np.savez_compressed(
        path,
        width=np.int64(hf.width),
        height=np.int64(hf.height),
        bmin=np.asarray(hf.bmin, np.float32),
        bmax=np.asarray(hf.bmax, np.float32),
        cs=np.float32(hf.cs),
        ch=np.float32(hf.ch),
        col_start=hf.col_start,
        smin=hf.smin,
        smax=hf.smax,
        area=hf.area,
        tri_areas=np.asarray(outcome.result.tri_areas, np.uint8),
        tri_source=outcome.gathered.tri_source,
        **counts,
    )


def write_overlay_obj(path: str, outcome: bake.BakeOutcome) -> None:
    """The overlay polygons (walkable span tops before the navmesh stages) as OBJ, with
    ``core.export``'s axis convention: Y-up, Blender's OBJ axes, world (x, y, z) -> (x, z, -y)."""
    verts, sizes, face_verts, _region, _poly = outcome.result.overlay()
    verts = np.asarray(verts, np.float64).reshape(-1, 3)
    sizes = np.asarray(sizes, np.int64)
    idx = np.asarray(face_verts, np.int64) + 1
    lines = [
        "# VoxNav walkable overlay (one quad per walkable span top)",
        "# Y-up, Blender OBJ convention: Z-up world (x, y, z) written as (x, z, -y)",
        "o overlay",
    ]
    lines += [f"v {x:.6f} {z:.6f} {-y:.6f}" for x, y, z in verts.tolist()]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    flat = idx.tolist()
    lines += [
        "f " + " ".join(map(str, flat[s : s + n]))
        for s, n in zip(starts, sizes.tolist(), strict=True)
    ]
    with open(path, "w", encoding="ascii") as fh:
        fh.write("\n".join(lines) + "\n")


def frame_camera(scene, lo, hi, direction=(-0.5, -0.8, 1.0)) -> bpy.types.Object:
    """A perspective camera looking along -``direction`` that frames the box [lo, hi]."""
    import mathutils

    cam: Any = bpy.data.objects.get(PREVIEW_CAMERA)
    if cam is None or cam.type != "CAMERA":
        cam = bpy.data.objects.new(PREVIEW_CAMERA, bpy.data.cameras.new(PREVIEW_CAMERA))
        cam[writeback.OUTPUT_TAG] = True
    coll = writeback.output_collection(scene)
    if coll.objects.get(cam.name) is None:
        coll.objects.link(cam)
    cam.data.lens = 40
    d = mathutils.Vector(direction).normalized()
    cam.rotation_euler = (-d).to_track_quat("-Z", "Y").to_euler()
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    center = (lo + hi) / 2
    half = (hi - lo) / 2 * 1.06
    corners = [center + half * (2 * np.array(s) - 1) for s in np.ndindex(2, 2, 2)]
    scene.camera = cam
    context: Any = bpy.context
    context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    flat = [float(v) for c in corners for v in c]
    location, _scale = cam.camera_fit_coords(depsgraph, flat)
    cam.location = location
    # Clip to the framed box, however large: a fixed 10000-unit far plane left a 100 m level
    # in a centimetre scene wholly beyond it (a blank picture).
    reach = [(mathutils.Vector(c) - location).length for c in corners]
    cam.data.clip_end = max(reach) * 1.05 + 1.0
    cam.data.clip_start = max(1e-4, min(min(reach) * 0.5, cam.data.clip_end * 1e-4))
    return cam


def render_preview(scene, path: str, lo, hi, resolution=(1280, 720)) -> None:
    """Workbench picture of the scene framed on [lo, hi]: material colours, outlines."""
    frame_camera(scene, lo, hi)
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "Standard"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "MATERIAL"
    shading.show_cavity = True
    shading.cavity_type = "WORLD"
    shading.show_object_outline = True
    shading.show_shadows = False
    if scene.world is None:
        scene.world = bpy.data.worlds.new("VoxNav World")
    scene.world.color = (0.09, 0.10, 0.12)
    scene.render.filepath = os.path.abspath(path)
    bpy.ops.render.render(write_still=True, scene=scene.name)


def _has_exporter() -> bool:
    import importlib.util

    return importlib.util.find_spec(f"{__package__.rpartition('.')[0]}.core.export") is not None


def _open(args, batch: atomic.Batch | None = None) -> None:
    """Open the input .blend (or build the demo) and add the reachable-from empties. Its
    linked libraries become inputs of ``batch`` (no output may overwrite one); a missing one
    is a warning naming it (its objects are not there to bake)."""
    points = parse_points(args.reachable_from)  # a usage error before anything opens
    if args.blend:
        path = os.path.abspath(args.blend)
        try:
            bpy.ops.wm.open_mainfile(filepath=path)
        except RuntimeError as exc:  # an OBJ, an empty file, random bytes: Blender's report
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise VoxNavError(f"cannot open {path} as a .blend file ({why})") from None
        libraries = writeback.linked_libraries()
        if batch is not None:
            batch.add_inputs(os.path.normpath(file) for _lib, file in libraries)
        missing = [file for lib, file in libraries if getattr(lib, "is_missing", False)]
        if missing:
            print_warnings(
                [
                    f"linked library {file} is missing: the objects linked from it are not "
                    "in the scene and are not baked; restore the file or relink it"
                    for file in missing
                ]
            )
    if args.demo:
        demo.build_demo(bpy.context.scene)
    context: Any = bpy.context
    for i, point in enumerate(points, start=1):
        empty: Any = bpy.data.objects.new(f"VoxNav Reachable From {i}", None)
        empty.location = point
        empty.voxnav.reachable_from = True
        context.scene.collection.objects.link(empty)
    if args.prune_mode:
        context.scene.voxnav.prune_mode = args.prune_mode.upper()


def parse_points(items: Sequence[str]) -> list[tuple[float, float, float]]:
    """``["1,2,3", ...]`` -> [(1.0, 2.0, 3.0), ...]; `UsageError` (exit 2) for a bad one."""
    points = []
    for item in items:
        try:
            x, y, z = (float(v) for v in item.split(","))
        except ValueError:
            raise UsageError(
                f"--reachable-from expects X,Y,Z (three numbers), got {item!r}"
            ) from None
        if not within_reach(np.array([x, y, z])).all():  # NaN too: a bad flag value, exit 2
            raise UsageError(
                f"--reachable-from needs finite coordinates within +-{MAX_COORDINATE:g}, got "
                f"{item!r}"
            )
        points.append((x, y, z))
    return points


def _targets(args) -> dict[str, str]:
    """{flag: path as it will be written} of every requested output, in the order written."""
    out = {}
    for attr in ("npz", "obj", "json", "png", "save_blend"):
        path = getattr(args, attr)
        if path is not None and not str(path).strip():  # --obj "": it was silently skipped
            raise UsageError(f"--{attr.replace('_', '-')} needs a file name, got an empty one")
        if path:
            flag = "--" + attr.replace("_", "-")
            if attr == "npz":
                path = os.fspath(atomic.ensure_suffix(path, ".npz", flag))  # np.savez's name
            elif attr == "png":
                path = png_path(path, flag)
            out[flag] = path
    return out


@contextlib.contextmanager
def _blender_write_errors():
    """Blender's operators report a failed write as RuntimeError: make it an OSError, which
    `core.atomic.replacing` turns into "cannot write PATH: ...; the previous file is unchanged"."""
    try:
        yield
    except RuntimeError as exc:
        raise OSError(str(exc).strip().removeprefix("Error: ").strip()) from None


def _check_complete(path, kind: str) -> None:
    """Blender reports success even when a full disk cut the file short: check its end."""
    with open(path, "rb") as fh:
        head = fh.read(8)
        fh.seek(max(0, os.path.getsize(path) - 64))
        tail = fh.read()
    if kind == "png":
        ok = head.startswith(b"\x89PNG") and tail.endswith(b"IEND\xaeB`\x82")
    else:  # .blend: plain (ends with the ENDB block) or zstd (seekable-format footer magic)
        ok = (head.startswith(b"BLENDER") and b"ENDB" in tail) or (
            head.startswith(b"\x28\xb5\x2f\xfd") and tail.endswith(b"\xb1\xea\x92\x8f")
        )
    if not ok:
        raise OSError(f"Blender wrote an incomplete {kind} file (is the disk full?)")


def run(args) -> int:
    overrides = parse_overrides(args.overrides)
    if args.auto_links:
        overrides["auto_links"] = True
    unused = [  # --png's options do nothing without it: said, not silently dropped
        "--" + attr.replace("_", "-")
        for attr in ("resolution", "png_voxels")
        if getattr(args, attr) and not args.png
    ]
    if unused:
        flags = " and ".join(unused)
        print_warnings([f"{flags} set(s) up the --png picture: without --png nothing is drawn"])
    resolution = args.resolution or DEFAULT_RESOLUTION
    try:
        width, height = (int(v) for v in resolution.lower().split("x"))
    except ValueError:
        raise UsageError(f"--resolution expects WIDTHxHEIGHT, got {resolution!r}") from None
    if not all(MIN_PREVIEW_SIDE <= side <= MAX_PREVIEW_SIDE for side in (width, height)):
        raise UsageError(
            f"--resolution {width}x{height}: each side must be {MIN_PREVIEW_SIDE}.."
            f"{MAX_PREVIEW_SIDE} pixels"
        )
    try:
        test_paths = [live.parse_path_option(text) for text in args.test_paths]
    except VoxNavError as exc:
        raise UsageError(str(exc)) from None
    if test_paths and args.voxels_only:
        raise UsageError("--path needs a navmesh: drop --voxels-only")
    if args.json and args.voxels_only:
        raise UsageError("--json writes the navmesh: drop --voxels-only (or write --npz)")
    if args.tile_size:
        for attr, why in SOLO_ONLY.items():
            if getattr(args, attr):
                flag = "--" + attr.replace("_", "-")
                raise UsageError(
                    f"{flag} with --tile-size {args.tile_size}: {why}; bake solo (--tile-size 0) "
                    f"or drop {flag}"
                )
    if args.blend and os.path.isdir(os.path.abspath(args.blend)):
        raise VoxNavError(f"{os.path.abspath(args.blend)} is a folder: give a .blend file")
    if args.blend and not os.path.isfile(os.path.abspath(args.blend)):
        raise VoxNavError(f"no such .blend file: {os.path.abspath(args.blend)}")
    targets = _targets(args)
    # Every output is checked (and reserved) before the bake and replaced only after all of
    # them are complete; none may be the input .blend (or the file open in this session).
    with atomic.Batch(inputs=[args.blend, bpy.data.filepath]) as batch:
        for flag, path in targets.items():
            batch.add(path, flag)
        written = _bake_and_write(args, targets, batch, (width, height), overrides, test_paths)
    if written is None:
        return EXIT_FAILED
    for path in written:
        print(f"voxnav: wrote {path}")
    return EXIT_OK


def _bake_and_write(args, targets, batch, resolution, overrides, test_paths) -> list | None:
    """Open or build the scene, bake, write every output into ``batch`` and commit it; the
    paths written, or None for an empty navmesh (nothing written). The add-on writes no tile
    cache beside the input .blend or a temp name meanwhile (`obstacles.SIDECAR`)."""
    from . import obstacles

    obstacles.SIDECAR[0] = False
    try:
        return _bake_and_write_outputs(args, targets, batch, resolution, overrides, test_paths)
    finally:
        obstacles.SIDECAR[0] = True


def _bake_and_write_outputs(args, targets, batch, resolution, overrides, test_paths):
    _open(args, batch)
    context: Any = bpy.context
    scene = context.scene
    if overrides:
        try:
            config = properties.to_config(scene.voxnav).replace(**overrides).validate()
        except VoxNavError as exc:
            raise UsageError(f"--set: {exc}") from None
        try:
            properties.set_from_config(scene.voxnav, config)
        except VoxNavError as exc:
            raise UsageError(f"--set: {exc}") from None
    if args.agent:
        _set_agent_rows(scene.voxnav, args.agent)
    stop_after = "heightfield" if args.voxels_only else "navmesh"
    if args.tile_size is not None:
        if args.tile_size:
            from ..core.tiles import check_tile_size

            try:
                check_tile_size(args.tile_size)
            except VoxNavError as exc:
                raise UsageError(f"--tile-size: {exc}") from None
        scene.voxnav.tile_size = args.tile_size
    if args.workers is not None:
        scene.voxnav.tile_workers = args.workers
        scene.voxnav.tile_parallel = "PROCESSES"
    tiled = scene.voxnav.tile_size > 0 and stop_after == "navmesh"
    if tiled:
        for attr, why in SOLO_ONLY.items():
            if getattr(args, attr):
                flag = "--" + attr.replace("_", "-")
                raise UsageError(
                    f"{flag} with the scene's Tile Size {scene.voxnav.tile_size}: {why}; pass "
                    f"--tile-size 0 to bake solo, or drop {flag}"
                )
    if tiled:  # their per-agent and tile-cache files too, checked before any tile bakes
        _reserve_tiled_outputs(scene, targets, batch)
    outcome = bake.bake_scene(context, stop_after, _progress_printer(), tiles=tiled)
    if tiled:
        return _write_tiled(args, targets, batch, resolution, outcome, test_paths)
    print_warnings(outcome.warnings)
    if outcome.empty:
        _print_empty(scene, outcome)
        return None
    print(f"voxnav: {outcome.summary()}")
    for name, seconds in outcome.timings.items():
        print(f"voxnav:   {name:<24s} {seconds * 1000:9.1f} ms")
    scene_docs = []
    for start, goal in test_paths:
        report = live.add_path_test(scene, start, goal)
        print(
            f"voxnav: path {start} -> {goal}: {report.status}, {report.length:.2f} wu, "
            f"{report.polys} polygons, {report.points.shape[0]} corners"
        )
        scene_docs.append(report.as_json(start, goal))
    path_docs: list | dict = scene_docs
    agents = dict(getattr(outcome, "agents", None) or {})
    if test_paths and agents:  # each agent's JSON: the paths on its own navmesh
        path_docs = {
            name: [
                live.compute_path(live.result_query(result), start, goal).as_json(start, goal)
                for start, goal in test_paths
            ]
            for name, result in agents.items()
        }
    if "--npz" in targets:
        with atomic.replacing(targets["--npz"], batch=batch) as temp:
            write_npz(os.fspath(temp), outcome)
    pmesh = outcome.result.polymesh
    if "--obj" in targets:
        if pmesh is not None and _has_exporter():
            from . import operators

            operators.export_navmesh(outcome, targets["--obj"], "OBJ", batch=batch)
        else:
            with atomic.replacing(targets["--obj"], batch=batch) as temp:
                write_overlay_obj(os.fspath(temp), outcome)
    if "--json" in targets:
        from . import operators

        operators.export_navmesh(outcome, targets["--json"], "JSON", paths=path_docs, batch=batch)
    if "--png" in targets:
        hf = outcome.result.heightfield
        shown = scene.voxnav.show_voxels
        if not args.png_voxels:
            scene.voxnav.show_voxels = False
        t0 = time.perf_counter()
        with atomic.replacing(targets["--png"], batch=batch) as temp:
            with _blender_write_errors():
                render_preview(scene, os.fspath(temp), hf.bmin, hf.bmax, resolution)
            _check_complete(temp, "png")
        scene.render.filepath = os.path.abspath(targets["--png"])  # not the temp's name
        scene.voxnav.show_voxels = shown
        print(f"voxnav: preview rendered in {time.perf_counter() - t0:.2f} s")
    if "--save-blend" in targets:
        _save_blend_copy(targets["--save-blend"], batch)
    return batch.commit()


def _print_empty(scene, outcome) -> None:
    """The empty navmesh's error line, pointing at the warnings printed above it (if any)."""
    hint = "; see the warning above for the likely cause" if outcome.warnings else ""
    print(
        f"voxnav: error: the navigation mesh is empty: nothing written "
        f"({scene.voxnav.last_message}{hint})",
        file=sys.stderr,
    )


def _reserve_tiled_outputs(scene, targets, batch) -> None:
    """Reserve in ``batch`` the files a tiled bake writes besides the flags' own: one OBJ per
    agent row, and the tile cache beside --save-blend (one per agent row), so that a name
    that cannot be written is refused before the tiles bake (`_write_tiled` writes them)."""
    from ..core.agents import agent_output
    from . import obstacles

    names = [row.name for row in scene.voxnav.agents]
    if "--obj" in targets and names:
        batch.release(targets["--obj"])
        for name in names:
            batch.add(agent_output(targets["--obj"], name), f"--obj ({name})")
    if "--save-blend" in targets:
        for name in names or [""]:
            sidecar = obstacles.sidecar_path(scene, targets["--save-blend"], name)
            assert sidecar is not None
            batch.add(sidecar, "--save-blend (tile cache)")


def _reserved(batch, path: str, flag: str):
    """``path`` reserved in ``batch`` (by `_reserve_tiled_outputs`, or now)."""
    return path if batch.find(path) is not None else batch.add(path, flag)


def _write_tiled(args, targets, batch, resolution, outcome, test_paths) -> list | None:
    """The outputs of a tiled bake (its tile cache, `obstacles.CACHES`): OBJ of every tile's
    polygons, PNG, test paths, .blend with the tile cache beside it."""
    from . import obstacles

    context: Any = bpy.context
    scene = context.scene
    print_warnings(outcome.warnings)
    if outcome.empty:
        _print_empty(scene, outcome)
        return None
    live_tiles = obstacles.live_cache(scene)
    assert live_tiles is not None, "a tiled bake that was not empty holds its tiles"
    cache = live_tiles.cache
    print(
        f"voxnav: {outcome.counts.get('tiles', 0)} tiles of {cache.grid.tile_size} cells, "
        f"{outcome.counts.get('polys', 0):,} polygons, {outcome.counts.get('obstacles', 0)} "
        f"obstacle(s) in {outcome.total_seconds:.2f} s"
    )
    for name, seconds in outcome.timings.items():
        print(f"voxnav:   {name:<24s} {seconds * 1000:9.1f} ms")
    for start, goal in test_paths:
        report = live.add_path_test(scene, start, goal)
        print(
            f"voxnav: path {start} -> {goal}: {report.status}, {report.length:.2f} wu, "
            f"{report.polys} polygons, {report.points.shape[0]} corners"
        )
    if "--obj" in targets and live_tiles.agents:  # one file per agent, as solo bakes do
        from ..core.agents import agent_output

        batch.release(targets["--obj"])
        for name, agent_tiles in live_tiles.agents.items():
            target = agent_output(targets["--obj"], name)
            _reserved(batch, target, f"--obj ({name})")
            with atomic.replacing(target, batch=batch) as temp:
                write_tiled_obj(os.fspath(temp), agent_tiles.navmesh or agent_tiles.cache.navmesh)
    elif "--obj" in targets:
        with atomic.replacing(targets["--obj"], batch=batch) as temp:
            write_tiled_obj(os.fspath(temp), live_tiles.navmesh or cache.navmesh)
    if "--png" in targets:
        t0 = time.perf_counter()
        shown = scene.voxnav.show_voxels
        scene.voxnav.show_voxels = False
        with atomic.replacing(targets["--png"], batch=batch) as temp:
            with _blender_write_errors():
                render_preview(scene, os.fspath(temp), cache.grid.bmin, cache.grid.bmax, resolution)
            _check_complete(temp, "png")
        scene.render.filepath = os.path.abspath(targets["--png"])
        scene.voxnav.show_voxels = shown
        print(f"voxnav: preview rendered in {time.perf_counter() - t0:.2f} s")
    if "--save-blend" in targets:
        # The tile cache beside the .blend (with agent rows, every agent's).
        each_agent = list(live_tiles.agents.items()) or [("", live_tiles)]
        for name, agent_tiles in each_agent:
            sidecar = obstacles.sidecar_path(scene, targets["--save-blend"], name)
            assert sidecar is not None
            _reserved(batch, sidecar, "--save-blend (tile cache)")
            with atomic.replacing(sidecar, batch=batch) as temp:
                agent_tiles.cache.save(temp, key=agent_tiles.key)
        _save_blend_copy(targets["--save-blend"], batch)
    return batch.commit()


def _save_blend_copy(target: str, batch) -> None:
    """The scene as a .blend copy under a temp name, renamed over ``target`` on commit (no
    .blend1 backup)."""
    with atomic.replacing(target, batch=batch, fresh=True) as temp:
        with _blender_write_errors():
            bpy.ops.wm.save_as_mainfile(filepath=os.fspath(temp), copy=True)
        _check_complete(temp, "blend")


def write_tiled_obj(path: str, navmesh) -> None:
    """Every tile's polygons as OBJ, one object per tile, in ``core.export``'s axis convention
    (Y-up, Blender's OBJ axes: world (x, y, z) written as (x, z, -y)), and the off-mesh links
    as line elements of object ``offmesh_links``, as the solo OBJ has them (they were written
    as two-vertex faces). The navmesh is in Detour's frame (x, up, y), so a vertex (x, u, y) is
    written as (x, u, -y)."""
    from ..core.nav.navdata import POLYTYPE_OFFMESH_CONNECTION

    verts = np.asarray(navmesh.verts, np.float64)
    lines = [
        "# VoxNav tiled navmesh: the polygons of every tile",
        "# Y-up, Blender OBJ convention: Z-up world (x, y, z) written as (x, z, -y)",
    ]
    lines += [f"v {x:.6f} {u:.6f} {-y:.6f}" for x, u, y in verts.tolist()]
    counts = navmesh.poly_vert_count.astype(np.int64).tolist()
    rows = (navmesh.poly_verts + 1).tolist()
    bases = navmesh.tile_poly_base.tolist()
    links = np.asarray(navmesh.poly_type) == POLYTYPE_OFFMESH_CONNECTION
    for t, (tx, ty, _layer) in enumerate(navmesh.tile_xy.tolist()):
        lines.append(f"o tile_{tx}_{ty}")
        for p in range(bases[t], bases[t + 1]):
            if not links[p]:
                lines.append("f " + " ".join(map(str, rows[p][: counts[p]])))
    if links.any():
        lines.append("o offmesh_links")
        lines += [f"l {rows[p][0]} {rows[p][1]}" for p in np.flatnonzero(links).tolist()]
    with open(path, "w", encoding="ascii") as fh:
        fh.write("\n".join(lines) + "\n")


def _set_agent_rows(settings, specs: Sequence[str]) -> None:
    """Replace the scene's agent rows by the ``--agent`` specs (`UsageError` for a bad one)."""
    from ..core.agents import check_agents, parse_agent_spec

    base = properties.to_config(settings)
    try:
        agents = [parse_agent_spec(spec, base) for spec in specs]
        check_agents(agents, base)
    except VoxNavError as exc:
        raise UsageError(f"--agent: {exc}") from None
    settings.agents.clear()
    for agent in agents:
        row = settings.agents.add()
        row.name = agent.name
        fields = (
            ("radius", agent.radius, agent.radius, ""),
            ("height", agent.height, agent.height, ""),
            ("max_climb", agent.max_climb, agent.max_climb, ""),
            ("max_slope", math.radians(agent.max_slope), agent.max_slope, "angle"),
        )
        for field_name, value, given, unit in fields:
            setattr(row, field_name, value)
            try:  # a value Blender clamped would bake silently as another
                properties.check_kept(row, field_name, value, given, field_name, unit)
            except VoxNavError as exc:
                raise UsageError(f"--agent {agent.name}: {exc}") from None


def png_path(path: str, flag: str = "--png") -> str:
    """The file the render really writes: Blender appends ``.png`` when it is missing (a
    path ending with a folder separator names no file: `OutputError`)."""
    if path.lower().endswith(".png"):
        return path
    return os.fspath(atomic.ensure_suffix(path, ".png", flag))


#: Options whose value is a list of coordinates and so may start with a minus sign.
COORDINATE_OPTIONS = ("--path", "--reachable-from")


#: What may follow a coordinate's minus sign: a digit or a decimal point ("-.5").
_NUMBER_START = frozenset("0123456789.")


def join_coordinate_values(argv: Sequence[str]) -> list[str]:
    """``["--path", "-10,4,3:1,2,0"]`` -> ``["--path=-10,4,3:1,2,0"]``: argparse would take a
    value starting with ``-`` and holding commas for an option of its own."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        item = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if item in COORDINATE_OPTIONS and following[:1] == "-" and following[1:2] in _NUMBER_START:
            out.append(f"{item}={following}")
            i += 2
            continue
        out.append(item)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the batch command with ``argv`` (without the program name); return the exit code."""
    parser = _parser()
    try:
        raw = list(argv) if argv is not None else sys.argv[1:]
        args = parser.parse_args(join_coordinate_values(raw))
    except SystemExit as exc:  # argparse: --help (0) or bad arguments (2)
        return int(exc.code or 0)
    return run_guarded(lambda: run(args), verbose=args.verbose)


def cli_command(argv: list[str]) -> int:
    """Handler for ``bpy.utils.register_cli_command("voxnav", ...)``."""
    return main(argv)
