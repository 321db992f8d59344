"""One bake, shared by the operators and the command line: gather -> core -> writeback.

`bake_scene(context, stop_after)` reads ``Scene.voxnav``, gathers the scene's triangles, runs
``core.pipeline.bake`` and writes the voxels and the overlay into the "VoxNav" collection,
replacing the previous result. It raises ``VoxNavError`` (nothing written) when there is no
geometry or the core refuses the input, and records the figures and the core's warnings on the
scene. A navmesh bake that ends with 0 polygons writes nothing: the previous result and its
figures stay, ``outcome.empty`` is set and the warnings (with the likely cause) are stored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core import pipeline
from ..core.config import NavConfig
from ..core.errors import VoxNavError
from . import gather as gather_mod
from . import properties, writeback

#: The last bake of each scene (by ``Scene.session_uid``), in memory only: export without
#: re-baking, redraw the voxels when a display setting changes. Dropped by voxnav.clear.
LAST: dict[int, BakeOutcome] = {}

#: Display names of the bake stages.
STAGES = {"heightfield": "Voxelize", "navmesh": "Build Navmesh"}

#: Overlay lift above the walkable surface. [Units: fraction of cell height, with a floor]
LIFT_CELL_HEIGHTS = 0.25
LIFT_MIN = 0.01


@dataclass
class BakeOutcome:
    """Everything one bake produced, for reports, the CLI and tests."""

    result: pipeline.BakeResult
    gathered: gather_mod.Gathered
    config: NavConfig
    counts: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    #: The core's warnings, then the add-on's (voxel cap): full sentences for the user.
    warnings: list = field(default_factory=list)
    #: True when a navmesh bake found no polygon: nothing was written (the previous result
    #: stays) and ``warnings`` says why.
    empty: bool = False
    #: With agent types (agents.py): every agent's result by name (``result`` is the first's).
    agents: dict = field(default_factory=dict)
    #: The scene's ``bake_token`` when this bake was stored (`last_outcome`).
    token: str = ""

    @property
    def total_seconds(self) -> float:
        return float(sum(self.timings.values()))

    def summary(self) -> str:
        keys = ("triangles", "spans", "walkable_spans", "voxels", "regions", "polys")
        parts = [f"{k.replace('_', ' ')} {self.counts[k]:,}" for k in keys if k in self.counts]
        text = f"{', '.join(parts)} in {self.total_seconds:.2f} s"
        prune = getattr(self.result, "prune", None) if self.result is not None else None
        if prune is not None:
            text += "; " + prune.summary()
        return text


def overlay_lift(cell_height: float) -> float:
    return max(LIFT_CELL_HEIGHTS * float(cell_height), LIFT_MIN)


def bake_scene(
    context,
    stop_after: str = "navmesh",
    progress: Callable[[float, str], None] | None = None,
    tiles: bool = True,
) -> BakeOutcome:
    """Bake ``context.scene`` with its VoxNav settings; replace the previous result.

    tiles: with a Tile Size > 0, bake in tiles with live obstacles (obstacles.py; the
    outcome's ``result`` is then None); False bakes solo whatever the Tile Size."""
    if stop_after not in STAGES:
        raise VoxNavError(f"stop_after must be one of {', '.join(STAGES)}, got {stop_after!r}")
    scene = context.scene
    settings = scene.voxnav
    config = properties.to_config(settings)
    timings: dict[str, float] = {}

    suspended = writeback.suspend_instancing(scene)
    try:
        return _bake(context, stop_after, progress, config, timings, tiles)
    finally:
        writeback.resume_instancing(suspended)


def _gather_input(context, timings: dict) -> tuple:
    """The scene's triangles and area volumes for a bake; VoxNavError when there are none."""
    settings = context.scene.voxnav
    t0 = time.perf_counter()
    gathered = gather_mod.gather(context, settings.source, settings.source_collection)
    timings["gather"] = time.perf_counter() - t0
    background = context.scene.background_set
    # The viewport draws a Background Scene's objects, the bake takes this scene's own only:
    # said, where a bake came out empty blaming the agent's size.
    unbaked = (
        f"the Background Scene {background.name!r} is drawn but not baked (only this "
        "scene's own objects are): link its objects into this scene to bake them"
        if background is not None
        else ""
    )
    if gathered.triangle_count == 0:
        where = {
            "VISIBLE": "no visible mesh objects",
            "SELECTED": "no selected mesh objects",
            "COLLECTION": "no mesh objects in the chosen collection",
        }.get(settings.source, "no mesh objects")
        raise VoxNavError(
            f"nothing to bake: {where} with triangles (Geometry: {settings.source.title()}); "
            "add or show a mesh, or change the Geometry source in the VoxNav panel"
            + (f"; {unbaked}" if unbaked else "")
        )
    if unbaked:
        gathered.warnings.append(unbaked)
    flat: list[str] = []
    volumes = tuple(
        pipeline.AreaVolume("box", (tuple(lo), tuple(hi)), area=area_id)
        for lo, hi, area_id in gather_mod.area_volumes(context, flat)
    )
    if flat:
        gathered.warnings.append(
            f"Area Volume(s) {gather_mod._listed(flat)} are flat (no height): a volume marks the "
            "spans whose floor lies inside it, which a flat one hardly ever holds; give them a "
            "height (a cube, or a Solidify modifier) that holds the floor they stand on"
        )
    return gathered, volumes


def tiled_bake_steps(context, workers=None, kind=None):
    """Build Navmesh with tiles one tile at a time (for a modal operator that keeps the UI
    responsive): a generator that gathers the scene on its first step, yields (fraction,
    "tile k of n") after each tile and returns the `BakeOutcome`. Closing it early writes
    nothing. ``workers``/``kind``: see `obstacles.bake_tiled_steps` (one tile cache per agent
    row). VoxNavError when the scene has no tile size or nothing to bake."""
    scene = context.scene
    settings = scene.voxnav
    if int(settings.tile_size) <= 0:
        raise VoxNavError("Tile Size is 0: a solo bake has no tiles (set Tile Size, e.g. 32)")
    config = properties.to_config(settings)
    timings: dict[str, float] = {}
    suspended = writeback.suspend_instancing(scene)
    try:
        gathered, volumes = _gather_input(context, timings)
    finally:
        writeback.resume_instancing(suspended)
    from . import obstacles

    return (
        yield from obstacles.bake_tiled_steps(
            context, gathered, config, volumes, timings, workers=workers, kind=kind
        )
    )


def _bake(context, stop_after, progress, config, timings, tiles=True) -> BakeOutcome:
    scene = context.scene
    settings = scene.voxnav
    gathered, volumes = _gather_input(context, timings)
    use_agents = stop_after == "navmesh" and len(settings.agents) > 0
    if stop_after == "navmesh" and tiles and int(settings.tile_size) > 0:
        # Tiles, and dynamic obstacles that rebuild only their tiles (obstacles.py).
        from . import obstacles

        return obstacles.bake_tiled(context, gathered, config, volumes, timings, progress)
    if stop_after == "navmesh":
        from . import obstacles

        volumes += obstacles.solo_volumes(context)  # painted, not live, without tiles
    agent_results: dict = {}
    reachable = gather_mod.reachable_points(context) if stop_after == "navmesh" else None
    if reachable is not None and not len(reachable):
        reachable = None
    prune_mode = str(settings.prune_mode).lower()
    links, unusable = gather_mod.nav_links(context) if stop_after == "navmesh" else (None, [])
    if use_agents:  # one navmesh per agent row (agents.py); the first one's is `result`
        from . import agents

        agent_results, agent_ctx = agents.bake(
            gathered, config, volumes, settings, progress, offmesh_links=links
        )
        result = next(iter(agent_results.values()))
        if reachable is not None:  # island pruning (core.prune) of every agent's navmesh
            for agent_result in agent_results.values():
                if not agent_result.empty:
                    pipeline.prune_bake(agent_result, reachable, prune_mode, ctx=agent_ctx)
        timings.update({str(k): float(v) for k, v in agent_ctx.timings.items()})
        warnings = list(agent_ctx.warnings)
    else:
        result = pipeline.bake(
            gathered.verts,
            gathered.tris,
            config,
            stop_after=stop_after,
            progress=progress,
            volumes=volumes,
            reachable_from=reachable,
            prune_mode=prune_mode,
            offmesh_links=links,
        )
        timings.update({str(k): float(v) for k, v in result.timings.items()})
        warnings = list(result.warnings)
    warnings = list(gathered.warnings) + warnings
    if unusable:
        warnings.append(
            f"Nav Link object(s) {', '.join(unusable)} have no end: set their Link End "
            "object (or use a curve with two points); they were left out"
        )
    outcome = BakeOutcome(result, gathered, config, timings=timings, warnings=warnings)
    outcome.agents = agent_results
    if stop_after == "navmesh" and any(r.empty for r in [result, *agent_results.values()]):
        outcome.empty = True
        outcome.counts = {str(k): int(v) for k, v in result.counts.items()}
        kept = (
            "nothing baked: the previous result is kept"
            if writeback.output_objects(scene)
            else ("nothing baked")
        )
        properties.store_warnings(settings, outcome.warnings, f"Empty navmesh: {kept}")
        return outcome

    t0 = time.perf_counter()
    write_result(scene, outcome, context)
    # A solo result now shows (a navmesh, or Voxelize's voxels and walkable surface in the
    # overlay's place): the tiles' cache is stale, and a dynamic obstacle must not rewrite
    # the overlay from it, nor Export or the path test read it.
    from . import obstacles

    obstacles.forget(scene)
    from . import agents

    if agent_results:
        agents.write_overlays(scene, agent_results, overlay_lift)
    else:
        agents.remove_overlays(scene)  # a former bake's agent overlays (none: no-op)
    timings["writeback"] = time.perf_counter() - t0

    counts = {str(k): int(v) for k, v in result.counts.items()}
    counts.setdefault("triangles", gathered.triangle_count)
    counts.setdefault("walkable_triangles", int(np.count_nonzero(result.tri_areas)))
    hf = result.heightfield
    counts.setdefault("spans", hf.span_count)
    counts.setdefault("walkable_spans", int(np.count_nonzero(hf.area)))
    counts.setdefault("voxels", int((hf.smax.astype(np.int64) - hf.smin.astype(np.int64)).sum()))
    if result.prune is not None:  # the Last Bake panel shows what pruning cut
        counts["pruned_area"] = int(round(result.prune.area_cut))
    counts["objects"] = len(gathered.sources)
    counts["instances"] = gathered.instances
    outcome.counts = counts
    properties.store_figures(settings, stop_after, counts, timings, "")
    properties.store_warnings(settings, outcome.warnings)
    outcome.token = uuid.uuid4().hex
    settings.bake_token = outcome.token
    LAST[scene.session_uid] = outcome
    return outcome


def last_outcome(scene) -> BakeOutcome | None:
    """The scene's bake in memory (`LAST`), or None when there is none or it is not the one
    the scene shows: an undo brought back the scene as it was before that bake (its
    ``bake_token`` differs), and exporting or drawing from the undone bake would be wrong.
    Reads only (polls call it)."""
    outcome = LAST.get(scene.session_uid)
    if outcome is not None and outcome.token != scene.voxnav.bake_token:
        return None  # kept: a redo brings its token back (the next bake replaces it)
    return outcome


#: Quads of Voxelize's walkable-surface overlay at most (one per walkable span top): about
#: 0.5 GB in Blender. [Units: quads]
MAX_SURFACE_QUADS = 1 << 21


#: The Last Bake panel's line when Voxels As or Max Drawn change with no bake in memory.
STALE_VOXELS = (
    "Voxels As and Max Drawn apply at the next Voxelize or Build Navmesh: the voxels shown "
    "were baked before this file was opened (or that bake was undone)"
)


def redraw_voxels(scene) -> str:
    """Redraw the voxels of the scene's last bake with the current display settings.

    Returns the cap warning ("" if none). Without the bake in memory (a reopened file, an
    undone bake) the voxels shown cannot be redrawn: the Last Bake panel says so (the
    settings silently did nothing)."""
    outcome = last_outcome(scene)
    if outcome is None:
        drawn = writeback.scene_output(scene, writeback.VOXELS_NAME)
        # A tiled bake keeps no bake in memory and draws no voxels (an empty object): nothing
        # waits to be redrawn then.
        if drawn is not None and drawn.data is not None and len(drawn.data.vertices):
            settings = scene.voxnav
            kept = [w.text for w in settings.last_warnings if w.text != STALE_VOXELS]
            properties.store_warnings(settings, [*kept, STALE_VOXELS])
        return ""
    if not writeback.output_objects(scene):
        return ""
    settings = scene.voxnav
    vox = writeback.write_voxels(
        scene, outcome.result.heightfield, settings.voxel_display, int(settings.max_voxels_drawn)
    )
    writeback.apply_visibility(scene)
    # The cap's warning follows what is drawn now; the bake's other warnings and status stay
    # (the old cap's warning stayed in the list, and the status line was overwritten).
    kept = [w.text for w in settings.last_warnings if writeback.CAP_MARK not in w.text]
    properties.store_warnings(settings, kept + ([vox.warning] if vox.warning else []))
    return vox.warning


def write_result(scene, outcome: BakeOutcome, context=None) -> None:
    """Voxels and overlay into the VoxNav collection (replacing the previous objects).
    Raises `VoxNavError`, with nothing replaced, for a navmesh Detour cannot hold."""
    from . import live

    settings = scene.voxnav
    result = outcome.result
    hf = result.heightfield
    pmesh = getattr(result, "polymesh", None)
    # Detour's data first: its limits (65535 detail vertices a tile) refused the navmesh
    # after the voxels and overlay were replaced, and Export then wrote the previous bake.
    stored = live.navmesh_text(result) if pmesh is not None and pmesh.npolys > 0 else None
    # The overlay's arrays first, then anything is replaced: Voxelize's walkable surface is a
    # quad per walkable span (a 200 m plane at 0.05 m cells: 16 M quads, 7.7 GB and a crash
    # in Blender), at most `MAX_SURFACE_QUADS`.
    overlay = result.overlay(max_quads=MAX_SURFACE_QUADS)
    if result.polymesh is None:
        walkable = int(np.count_nonzero(hf.area))
        if walkable > MAX_SURFACE_QUADS:
            outcome.warnings.append(
                f"the overlay shows {overlay[1].shape[0]:,} of {walkable:,} walkable span tops "
                f"(evenly spread; at most {MAX_SURFACE_QUADS:,}): Build Navmesh shows the "
                "navmesh, or bake a smaller region or with a larger Cell Size"
            )
    vox = writeback.write_voxels(scene, hf, settings.voxel_display, int(settings.max_voxels_drawn))
    if vox.warning:
        outcome.warnings.append(vox.warning)
    by_region = result.polymesh is not None
    writeback.write_overlay(scene, overlay, overlay_lift(hf.ch), by_region)
    writeback.write_links(scene, getattr(result, "offmesh_links", None), overlay_lift(hf.ch))
    writeback.apply_visibility(scene)
    writeback.use_material_colors(context, scene)
    if stored is not None:
        live.store_navmesh(scene, result, stored)
    else:  # Voxelize's walkable surface now shows: the Path Test must not walk the old navmesh
        live.forget_navmesh(scene)
    live.update_path(scene)
