"""``python -m core``: bake an OBJ, dump every stage in Recast's reference format, benchmark.

    python -m core dump MESH.obj --recast-frame --out OUT.npz [--cell-size 0.3 ...]
    python -m core dump MESH.obj --recast-frame --tile-size 32 --out OUT.npz   (tiled arrays)
    python -m core bake MESH.obj --out navmesh.obj|.json|.bin [--json navmesh.json] [settings]
    python -m core bake MESH.obj --out navmesh.bin --tile-size 32 [--workers N]
    python -m core bake MESH.obj --out navmesh.obj --agent small:radius=0.3 --agent large:radius=1.2
    python -m core bench [--runs 5] [--quick]
    python -m core bench --obstacles [--runs 20]   (obstacle rebuild ms per tile, before/after)
    python -m core query MESH.obj --recast-frame --queries Q.npz --out OUT.npz [settings]
    python -m core path MESH.obj --from X Y Z --to X Y Z [settings]
    python -m core bench-queries [--meshes DIR]

Settings: one flag per NavConfig field, dashes for underscores (``--cell-size 0.15``,
``--filter-ledge-spans off``, ``--memory-limit 8GB``, ``--bounds-min X Y Z``); ``--help`` of a
command lists each with its meaning, unit, default and limits. Exit codes (see core.cliutil):
0 success, 1 bake or I/O error (an empty navmesh included), 2 bad flags or settings.

A new command is one ``_add_NAME(sub)`` function that adds its subparser and sets
``func=cmd_NAME``; `build_parser` calls each function in `COMMANDS`.
Outputs are checked before the bake and replace the old files only when all are complete
(core.atomic): a refused or failed output exits 1 and leaves every old file as it was.
"""

from __future__ import annotations

# isort: off
from . import _quiet_start  # noqa: F401  (first: a Ctrl-C during the imports below)

# isort: on
import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import atomic, limits, pipeline
from .agents import agent_output
from .cliutil import (
    EXIT_CODES_TEXT,
    EXIT_FAILED,
    EXIT_OK,
    SuggestingParser,
    add_link_flag,
    offmesh_links_from_args,
    positive_int,
    print_warnings,
    run_guarded,
    setting_help,
    whole_number_at_least,
)
from .config import NavConfig
from .context import BuildContext
from .errors import UsageError, VoxNavError
from .limits import MAX_COORDINATE, MAX_WORKERS, within_reach
from .objio import read_obj
from .offmesh import link_warnings


def _setting_type(name: str) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return NavConfig.parse(name, text)
        except VoxNavError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = name  # argparse names the type in its message
    return parse


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per NavConfig setting, its help from the setting's documentation."""
    group = parser.add_argument_group(
        "settings (NavConfig; RecastDemo's defaults; wu = world units, metres in Blender)"
    )
    for f in dataclasses.fields(NavConfig):
        flag = "--" + f.name.replace("_", "-")
        help_text = setting_help(f.name)
        if f.name in ("bounds_min", "bounds_max"):
            group.add_argument(
                flag, type=float, nargs=3, metavar=("X", "Y", "Z"), default=None, help=help_text
            )
        elif isinstance(f.default, bool):
            group.add_argument(
                flag, type=_setting_type(f.name), default=None, metavar="on|off", help=help_text
            )
        elif f.name == "memory_limit":
            group.add_argument(
                flag, type=_setting_type(f.name), default=None, metavar="SIZE", help=help_text
            )
        elif f.name == "partition":
            group.add_argument(
                flag,
                type=_setting_type(f.name),
                default=None,
                metavar="{watershed,monotone,layers}",
                help=help_text,
            )
        else:
            group.add_argument(
                flag,
                type=_setting_type(f.name),
                default=None,
                metavar="INT" if isinstance(f.default, int) else "FLOAT",
                help=help_text,
            )


def config_from_args(args: argparse.Namespace) -> NavConfig:
    """The validated NavConfig of the setting flags; `UsageError` (exit 2) when invalid."""
    changes = {}
    for name in NavConfig.field_names():
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = tuple(value) if name.startswith("bounds_") else value
    try:
        agents = bool(getattr(args, "agent", None))  # checked whole with their own fields
        config = NavConfig().replace(**changes).validate(agent_height=not agents)
        if not agents:
            # Recast's 8-bit agent fields: a setting fix, so a usage error as `--agent`'s is
            # (the bake refused the same value as a failed bake, exit 1).
            limits.check_agent_fields(config, config.derived(), None)
        return config
    except VoxNavError as exc:
        raise UsageError(str(exc)) from None


def _recast(vec) -> np.ndarray:
    """Z-up VoxNav vector -> Recast's Y-up frame (the mirror swaps y and z)."""
    return np.asarray(vec, dtype=np.float32)[..., [0, 2, 1]].copy()


def config_arrays(
    config: NavConfig, width: int, height: int, bmin, bmax, border: int = 0, tile_size: int = 0
) -> dict[str, np.ndarray | np.generic]:
    """The reference format's settings: ``param_*`` (NavConfig's numeric fields), ``cfg_*``
    (Recast's rcConfig: a tile's grid of width x height cells [Units: cells] with ``border``
    cells a side, or the solo grid; ``bmin``/``bmax`` the world grid's Z-up corners) and
    ``count_width`` / ``count_height``."""
    d = config.derived()
    out: dict[str, np.ndarray | np.generic] = {}
    for name in NavConfig.field_names():
        value = getattr(config, name)
        if isinstance(value, bool) or value is None or isinstance(value, (str, tuple)):
            continue
        out[f"param_{name}"] = np.int64(value) if isinstance(value, int) else np.float32(value)
    out.update(
        cfg_width=np.int64(width),
        cfg_height=np.int64(height),
        cfg_bmin=_recast(bmin),
        cfg_bmax=_recast(bmax),
        cfg_cs=d.cs,
        cfg_ch=d.ch,
        cfg_walkableSlopeAngle=d.walkable_slope_angle,
        cfg_walkableHeight=np.int64(d.walkable_height),
        cfg_walkableClimb=np.int64(d.walkable_climb),
        cfg_walkableRadius=np.int64(d.walkable_radius),
        cfg_maxEdgeLen=np.int64(d.max_edge_len),
        cfg_maxSimplificationError=d.max_simplification_error,
        cfg_minRegionArea=np.int64(d.min_region_area),
        cfg_mergeRegionArea=np.int64(d.merge_region_area),
        cfg_maxVertsPerPoly=np.int64(d.max_verts_per_poly),
        cfg_detailSampleDist=d.detail_sample_dist,
        cfg_detailSampleMaxError=d.detail_sample_max_error,
        cfg_borderSize=np.int64(border),
        cfg_tileSize=np.int64(tile_size),
        count_width=np.int64(width),
        count_height=np.int64(height),
    )
    return out


def dump_arrays(
    verts, tris, config: NavConfig, result: pipeline.BakeResult
) -> dict[str, np.ndarray | np.generic]:
    """Every array of the reference format that VoxNav produces, under Recast's names.

    The ``frag_*`` arrays (every fragment before merging, in Recast's call order) come from a
    second, untimed clipping pass: the pipeline itself never keeps them.
    """
    from .rasterize import rasterize_fragments

    d = config.derived()
    hf = result.heightfield
    out: dict[str, np.ndarray | np.generic] = {
        "mesh_verts": _recast(verts),
        "mesh_tris": np.asarray(tris, dtype=np.int32)[:, [0, 2, 1]],
        "tri_areas": result.tri_areas,
    }
    out.update(config_arrays(config, result.width, result.height, result.bmin, result.bmax))
    out.update(
        count_ntris=np.int64(len(tris)),
        count_nverts=np.int64(len(verts)),
        count_walkable_tris=np.int64(np.count_nonzero(result.tri_areas)),
    )
    tri, fx, fy, fmin, fmax, farea = rasterize_fragments(
        verts, tris, result.tri_areas, result.bmin, result.bmax, d.cs, d.ch,
        result.width, result.height,
    )  # fmt: skip
    out.update(
        frag_tri=tri.astype(np.int32), frag_x=fx, frag_z=fy, frag_smin=fmin, frag_smax=fmax,
        frag_area=farea,
    )  # fmt: skip
    ix, iy = hf.span_cells()
    for stage, area in result.stage_areas.items():
        out[f"hf_{stage}_x"] = ix
        out[f"hf_{stage}_z"] = iy
        out[f"hf_{stage}_smin"] = hf.smin
        out[f"hf_{stage}_smax"] = hf.smax
        out[f"hf_{stage}_area"] = area
        out[f"count_hf_{stage}_spans"] = np.int64(hf.span_count)
        out[f"count_hf_{stage}_walkable"] = np.int64(np.count_nonzero(area))
    out.update(_navmesh_arrays(result))
    out.update(link_arrays(result.offmesh_links, int(result.auto_link_count or 0)))
    for stage, seconds in result.timings.items():
        out[f"time_{stage}"] = np.float64(seconds)
    return out


def link_arrays(links, auto_count: int) -> dict[str, np.ndarray | np.generic]:
    """The navmesh's off-mesh links (hand-made first, then ``auto_count`` automatic ones) as
    ``links_*`` arrays, Recast's Y-up frame: start and end float32 (n, 3), radius, bidir,
    area, flags, user_id (n,), and ``count_links`` / ``count_auto_links`` (none: empty
    arrays; not in the reference format, which has no links)."""
    from .offmesh import OffMeshLinks

    links = links if links is not None else OffMeshLinks.empty()
    return {
        "links_start": _recast(np.asarray(links.start, np.float32).reshape(-1, 3)),
        "links_end": _recast(np.asarray(links.end, np.float32).reshape(-1, 3)),
        "links_radius": np.asarray(links.radius, np.float32),
        "links_bidir": np.asarray(links.bidirectional, bool),
        "links_area": np.asarray(links.area, np.uint8),
        "links_flags": np.asarray(links.flags, np.uint16),
        "links_user_id": np.asarray(links.user_id, np.uint32),
        "count_links": np.int64(len(links)),
        "count_auto_links": np.int64(auto_count),
    }


def _navmesh_arrays(result: pipeline.BakeResult) -> dict[str, np.ndarray | np.generic]:
    out: dict[str, np.ndarray | np.generic] = {}
    chf = result.compact
    area_initial, dist_raw = result.area_initial, result.dist_raw
    if chf is None or chf.reg is None or chf.dist is None or area_initial is None:
        return out
    if dist_raw is None:
        return out
    from .compact import recast_cells

    cell_index, cell_count = recast_cells(chf, result.heightfield)
    out.update(
        chf_x=chf.span_x.astype(np.int32),
        chf_z=chf.span_y.astype(np.int32),
        chf_y=chf.y,
        chf_h=chf.h,
        chf_con=chf.con,
        chf_neighbor=chf.neighbor,
        chf_cell_index=np.asarray(cell_index).reshape(chf.height, chf.width).astype(np.uint32),
        chf_cell_count=np.asarray(cell_count).reshape(chf.height, chf.width).astype(np.uint8),
        chf_area_initial=area_initial,
        chf_area=chf.area,
        chf_dist_raw=dist_raw,
        chf_dist=chf.dist,
        chf_reg=chf.reg,
        chf_max_distance=np.int64(chf.max_distance),
        chf_max_regions=np.int64(chf.max_regions),
        chf_span_count=np.int64(chf.span_count),
        chf_bmin=_recast(chf.bmin),
        chf_bmax=_recast(chf.bmax),
        chf_border_size=np.int64(chf.border_size),
        chf_walkable_height=np.int64(chf.walkable_height),
        chf_walkable_climb=np.int64(chf.walkable_climb),
        count_chf_spans=np.int64(chf.span_count),
        count_chf_walkable_after_erode=np.int64(np.count_nonzero(chf.area)),
        count_chf_max_distance=np.int64(chf.max_distance),
        count_chf_max_regions=np.int64(chf.max_regions),
        count_regions=np.int64(np.unique(chf.reg[(chf.reg != 0) & (chf.reg < 0x8000)]).shape[0]),
    )
    cset = result.contours
    if cset is not None:
        out.update(
            cset_nconts=np.int64(cset.nconts),
            cont_nverts=cset.nverts,
            cont_nrverts=cset.nrverts,
            cont_reg=cset.reg.astype(np.uint16),
            cont_area=cset.area.astype(np.uint8),
            cont_verts=cset.verts.astype(np.int32),
            cont_rverts=cset.rverts.astype(np.int32),
            cont_verts_start=cset.verts_start[:-1].astype(np.int64),
            cont_rverts_start=cset.rverts_start[:-1].astype(np.int64),
            count_contours=np.int64(cset.nconts),
            count_contour_verts=np.int64(cset.verts.shape[0]),
            count_contour_raw_verts=np.int64(cset.rverts.shape[0]),
        )
    pmesh = result.polymesh
    if pmesh is not None:
        out.update(
            pmesh_verts=pmesh.verts.astype(np.uint16),
            pmesh_polys=pmesh.polys.astype(np.uint16),
            pmesh_regs=pmesh.regs.astype(np.uint16),
            pmesh_areas=pmesh.areas.astype(np.uint8),
            pmesh_flags=pmesh.flags.astype(np.uint16),
            pmesh_npolys=np.int64(pmesh.npolys),
            pmesh_nverts=np.int64(pmesh.nverts),
            pmesh_nvp=np.int64(pmesh.nvp),
            pmesh_maxpolys=np.int64(pmesh.max_polys),
            pmesh_bmin=_recast(pmesh.bmin),
            pmesh_bmax=_recast(pmesh.bmax),
            pmesh_border_size=np.int64(pmesh.border_size),
            pmesh_max_edge_error=np.float32(pmesh.max_edge_error),
            count_polys=np.int64(pmesh.npolys),
            count_poly_verts=np.int64(pmesh.nverts),
        )
    if result.detail is not None:
        out.update(result.detail.to_reference_arrays())
    return out


def _bake_progress(args) -> pipeline.Progress | None:
    if not args.verbose:
        return None
    return lambda fraction, stage: print(f"  [{fraction:4.0%}] {stage}")


def cmd_dump(args) -> int:
    config = config_from_args(args)
    if args.tile_size and args.heightfield_only:
        raise UsageError("--heightfield-only: not available with --tile-size")
    with atomic.Batch(inputs=[args.mesh]) as batch:  # the output is checked before baking
        out = batch.add(atomic.ensure_suffix(args.out, ".npz", "--out"), "--out")  # savez's name
        verts, tris = read_obj(args.mesh, recast_frame=args.recast_frame)
        if args.tile_size:
            return _dump_tiled(args, verts, tris, config, out, batch)
        stop = "heightfield" if args.heightfield_only else "navmesh"
        result = pipeline.bake(verts, tris, config, stop_after=stop, progress=_bake_progress(args))
        print_warnings(result.warnings)
        arrays = dump_arrays(verts, tris, config, result)
        with atomic.replacing(out, batch=batch) as temp:
            np.savez_compressed(temp, **arrays)  # type: ignore[arg-type]
        batch.commit()
    print(f"wrote {len(arrays)} arrays to {out}")
    for stage, seconds in result.timings.items():
        print(f"  {stage:<20} {seconds * 1000:8.2f} ms")
    return EXIT_OK


def _tiled_bake(args, verts, tris, config: NavConfig):
    from . import tiles

    progress = None
    if args.verbose:

        def progress(done: int, total: int, tile) -> None:
            print(f"  tile ({tile.tx}, {tile.ty}): {tile.npolys} polygons [{done} baked]")

    result = tiles.bake_tiled(
        verts, tris, config, args.tile_size, workers=args.workers, progress=progress
    )
    print_warnings(result.warnings)
    return result


def _dump_tiled(args, verts, tris, config: NavConfig, out: Path, batch: atomic.Batch) -> int:
    from . import tiles

    result = _tiled_bake(args, verts, tris, config)
    arrays: dict[str, np.ndarray | np.generic] = {
        "mesh_verts": _recast(verts),
        "mesh_tris": np.asarray(tris, dtype=np.int32)[:, [0, 2, 1]],
        "count_nverts": np.int64(len(verts)),
        "count_ntris": np.int64(len(tris)),
    }
    g = result.grid
    side = int(g.tile_size) + 2 * int(g.border_size)  # each tile's grid, as Recast's cfg
    arrays.update(
        config_arrays(config, side, side, g.bmin, g.bmax, int(g.border_size), int(g.tile_size))
    )
    arrays.update(tiles.tiled_dump_arrays(result))
    arrays.update(link_arrays(result.navmesh_links(), result.auto_link_count))
    for stage, seconds in result.timings.items():
        arrays[f"time_{stage}"] = np.float64(seconds)
    with atomic.replacing(out, batch=batch) as temp:
        np.savez_compressed(temp, **arrays)  # type: ignore[arg-type]
    batch.commit()
    print(
        f"wrote {len(arrays)} arrays to {out} ({g.tiles_w} x {g.tiles_h} tiles, "
        f"{len(result.tiles)} with polygons, {result.npolys} polygons)"
    )
    return EXIT_OK


def _bake_tiled_out(args, verts, tris, config: NavConfig, batch: atomic.Batch) -> int:
    from . import export

    # The flags' points first: a bad one is a usage error before the tiles bake, as solo.
    links = offmesh_links_from_args(args)
    reachable = _reachable_points(args)
    result = _tiled_bake(args, verts, tris, config)
    result.offmesh_links = links  # each tile: the links starting in it
    print_warnings(link_warnings(result.offmesh_links, result.navmesh))
    if reachable is not None:  # over the tiles' links, across tile borders and off-mesh links
        from .prune import prune_tiled

        ctx = BuildContext()
        report = prune_tiled(result, reachable, mode=args.prune_mode, ctx=ctx)
        print_warnings(ctx.warnings)
        print(report.summary())
    g = result.grid
    autos = f" auto_links={result.auto_link_count}" if config.auto_links else ""
    print(
        f"tiles={g.tiles_w}x{g.tiles_h} tiles_with_polys={len(result.tiles)} "
        f"polys={result.npolys}{autos}"
    )
    print("time " + " ".join(f"{k}={v * 1000:.1f}ms" for k, v in result.timings.items()))
    if result.empty:
        print("voxnav: error: the navigation mesh is empty: nothing written", file=sys.stderr)
        return EXIT_FAILED
    export.write_tiled_detour_bin(
        args.out, result, frame="recast" if args.recast_frame else "engine", batch=batch
    )
    for path in batch.commit():
        count = len(result.tiles)
        print(f"wrote {path} ({count} tile{'' if count == 1 else 's'})")
    return EXIT_OK


@contextlib.contextmanager
def _detail_pool(workers: int | None):
    """The process pool of a solo bake (None with one worker): the detail mesh sends it the
    polygons that add interior samples when they are many. Its processes start on first use,
    so a bake that does not need them pays nothing."""
    from .tiles import worker_count, worker_pool

    n_workers = worker_count(workers)
    if n_workers <= 1:
        yield None
        return
    with worker_pool(n_workers) as pool:
        yield pool


def cmd_bake(args) -> int:
    from . import export

    config = config_from_args(args)
    try:
        export.navmesh_format(args.out)
    except VoxNavError as exc:
        raise UsageError(f"--out: {exc}") from None
    if args.tile_size and (export.navmesh_format(args.out) != ".bin" or args.json):
        raise UsageError(
            "--tile-size: a tiled navmesh is written as Detour's .bin (one tile per tile); "
            "use --out NAME.bin without --json, or bake without --tile-size"
        )
    _reachable_points(args)  # a bad --reachable-from is a usage error before any bake
    if args.agent:
        return _bake_agents_out(args, config)
    with atomic.Batch(inputs=[args.mesh]) as batch:  # every output checked before baking
        batch.add(args.out, "--out")
        if args.json:
            batch.add(args.json, "--json")
        verts, tris = read_obj(args.mesh, recast_frame=args.recast_frame)
        if args.tile_size:
            return _bake_tiled_out(args, verts, tris, config, batch)
        reachable = _reachable_points(args)
        with _detail_pool(args.workers) as executor:
            result = pipeline.bake(
                verts,
                tris,
                config,
                reachable_from=reachable,
                prune_mode=args.prune_mode or "remove",
                offmesh_links=offmesh_links_from_args(args),
                ctx=BuildContext(progress_fn=_bake_progress(args), executor=executor),
            )
        print_warnings(result.warnings)
        if result.prune is not None:
            print(result.prune.summary())
        print(" ".join(f"{k}={v}" for k, v in result.counts.items()))
        print("time " + " ".join(f"{k}={v * 1000:.1f}ms" for k, v in result.timings.items()))
        if result.empty or result.polymesh is None:
            print(
                "voxnav: error: the navigation mesh is empty: nothing written (see the warning "
                "above for the likely cause)",
                file=sys.stderr,
            )
            return EXIT_FAILED
        export.write_navmesh(
            args.out,
            result.polymesh,
            result.detail,
            config=config,
            recast_frame=args.recast_frame,
            offmesh=result.offmesh_links,
            batch=batch,
        )
        if args.json:
            export.write_json(
                args.json, result.polymesh, result.detail, offmesh=result.offmesh_links,
                batch=batch, frame="recast" if args.recast_frame else "engine",
            )  # fmt: skip
        written = batch.commit()  # every output replaced only now, all together
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def _reachable_points(args) -> np.ndarray | None:
    """--reachable-from points as float64 (k, 3) Z-up, or None when none were given (then
    --prune-mode is a usage error: it did nothing, silently)."""
    if not args.reachable_from:
        if args.prune_mode is not None:
            raise UsageError(
                f"--prune-mode {args.prune_mode} needs --reachable-from X Y Z: pruning keeps "
                "what those points reach; give one, or leave --prune-mode out"
            )
        return None
    args.prune_mode = args.prune_mode or "remove"
    reachable = np.asarray(args.reachable_from, dtype=np.float64).reshape(-1, 3)
    if not within_reach(reachable).all():  # (NaN too) a bad flag value: exit 2
        raise UsageError(
            f"--reachable-from needs finite coordinates within +-{MAX_COORDINATE:g}, got "
            f"{np.asarray(args.reachable_from).tolist()}"
        )
    if args.recast_frame:  # the points are in the OBJ's (Recast's) frame
        reachable = reachable[:, [0, 2, 1]]
    return reachable


def _empty_agents(names: list[str]) -> int:
    """Say that these agents' navmeshes are empty (nothing is written); EXIT_FAILED."""
    print(
        f"voxnav: error: the navigation mesh of agent(s) {', '.join(names)} is empty: "
        "nothing written (see the warnings above for the likely cause)",
        file=sys.stderr,
    )
    return EXIT_FAILED


def _bake_agents_out(args, config: NavConfig) -> int:
    """``bake --agent ...``: one navmesh (and JSON) per agent, all written or none."""
    from . import export
    from .agents import bake_agents, check_agents, parse_agent_spec

    try:
        agents = [parse_agent_spec(spec, config) for spec in args.agent]
        check_agents(agents, config)
    except VoxNavError as exc:
        raise UsageError(f"--agent: {exc}") from None
    if args.tile_size:
        return _bake_agents_tiled_out(args, config, agents)
    with atomic.Batch(inputs=[args.mesh]) as batch:  # every output checked before baking
        for agent in agents:
            batch.add(agent_output(args.out, agent.name), f"--out (agent {agent.name})")
            if args.json:
                batch.add(agent_output(args.json, agent.name), f"--json (agent {agent.name})")
        verts, tris = read_obj(args.mesh, recast_frame=args.recast_frame)
        ctx = BuildContext(progress_fn=_bake_progress(args))
        results = bake_agents(
            verts, tris, config, agents, ctx=ctx, workers=args.workers,
            offmesh_links=offmesh_links_from_args(args),
        )  # fmt: skip
        reachable = _reachable_points(args)
        if reachable is not None:  # island pruning of each agent's navmesh
            for name, result in results.items():
                if not result.empty and result.polymesh is not None:
                    # Its own context: the warnings name the agent ("nothing was pruned" of
                    # one agent read as said of all).
                    pruned = BuildContext()
                    report = pipeline.prune_bake(result, reachable, args.prune_mode, ctx=pruned)
                    for message in pruned.warnings:
                        ctx.warn(f"agent {name}: {message}")
                    for stage, seconds in pruned.timings.items():
                        ctx.add_time(stage, seconds)
                    if report is not None:
                        print(f"agent {name}: {report.summary()}")
        print_warnings(ctx.warnings)
        empty = []
        for name, result in results.items():
            print(f"agent {name}: " + " ".join(f"{k}={v}" for k, v in result.counts.items()))
            if result.empty or result.polymesh is None:
                empty.append(name)
        print("time " + " ".join(f"{k}={v * 1000:.1f}ms" for k, v in ctx.timings.items()))
        if empty:
            return _empty_agents(empty)
        for name, result in results.items():
            export.write_navmesh(
                agent_output(args.out, name),
                result.polymesh,
                result.detail,
                config=result.config,
                recast_frame=args.recast_frame,
                offmesh=result.offmesh_links,
                batch=batch,
            )
            if args.json:
                export.write_json(
                    agent_output(args.json, name), result.polymesh, result.detail,
                    offmesh=result.offmesh_links, batch=batch,
                    frame="recast" if args.recast_frame else "engine",
                )  # fmt: skip
        written = batch.commit()  # every output replaced only now, all together
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def _bake_agents_tiled_out(args, config: NavConfig, agents) -> int:
    """``bake --agent ... --tile-size N``: one tiled Detour .bin per agent, all or none."""
    from . import export
    from .agents import bake_agents_tiled
    from .prune import prune_tiled

    with atomic.Batch(inputs=[args.mesh]) as batch:  # every output checked before baking
        for agent in agents:
            batch.add(agent_output(args.out, agent.name), f"--out (agent {agent.name})")
        verts, tris = read_obj(args.mesh, recast_frame=args.recast_frame)
        # The flags' points first: a bad one is a usage error before the tiles bake.
        links = offmesh_links_from_args(args)
        reachable = _reachable_points(args)
        results = bake_agents_tiled(
            verts, tris, config, agents, args.tile_size, workers=args.workers
        )
        for result in results.values():  # each tile: the links starting in it
            result.offmesh_links = links
        empty = []
        for name, result in results.items():
            ctx = BuildContext()
            # As a separate tiled bake says them (before pruning).
            for warning in link_warnings(result.offmesh_links, result.navmesh):
                ctx.warn(warning)
            if reachable is not None and not result.empty:
                report = prune_tiled(result, reachable, mode=args.prune_mode, ctx=ctx)
                print(f"agent {name}: {report.summary()}")
            print_warnings([f"agent {name}: {w}" for w in [*result.warnings, *ctx.warnings]])
            g = result.grid
            print(
                f"agent {name}: tiles={g.tiles_w}x{g.tiles_h} "
                f"tiles_with_polys={len(result.tiles)} polys={result.npolys}"
            )
            if result.empty:
                empty.append(name)
        if empty:
            return _empty_agents(empty)
        frame = "recast" if args.recast_frame else "engine"
        for name, result in results.items():
            export.write_tiled_detour_bin(
                agent_output(args.out, name), result, frame=frame, batch=batch
            )
        written = batch.commit()  # every output replaced only now, all together
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


#: ``bench --runs`` when not given.
DEFAULT_BENCH_RUNS = 5


def cmd_bench(args) -> int:
    from .bench import run_bench, run_tiled_bench

    # Flags a mode does not use are refused by name (they were ignored, silently).
    if args.obstacles:
        unused = [
            flag
            for flag, given in (
                ("--tile-size", bool(args.tile_size)), ("--workers", args.workers is not None),
                ("--quick", args.quick),
            )
            if given
        ]  # fmt: skip
        if unused:
            raise UsageError(
                f"bench --obstacles times obstacle rebuilds on the dungeon in 32-cell tiles, in "
                f"this process: {', '.join(unused)} do(es) not apply; leave it out"
            )
    elif args.tile_size and args.runs is not None:
        raise UsageError(
            "bench --tile-size times one tiled bake: --runs does not apply; leave it out (or "
            "run the command again)"
        )
    elif not args.tile_size and args.workers is not None:
        raise UsageError(
            "--workers applies to bench --tile-size N (a tiled bake on N processes); bench "
            "alone times one process against Recast's single thread, and its 2-process check "
            "always uses 2"
        )
    if args.runs is None:
        args.runs = DEFAULT_BENCH_RUNS
    if args.obstacles:
        from .bench import _find_meshes
        from .bench_obstacles import report
        from .bench_obstacles import run as run_obstacles

        folder = _find_meshes(args.meshes, ("dungeon.obj",))  # the only mesh it bakes
        print("\n".join(report(run_obstacles(folder, args.runs))))
        return EXIT_OK
    if args.tile_size:
        return run_tiled_bench(args)
    return run_bench(args)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verbose", action="store_true", help="print progress, and the traceback of an error"
    )


def _tile_size(text: str) -> int:
    from .tiles import check_tile_size

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value == 0:
        return 0
    try:
        return check_tile_size(value)
    except VoxNavError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_tile_flags(parser: argparse.ArgumentParser) -> None:
    """``--tile-size`` and ``--workers`` (the tiled bake of core.tiles)."""
    group = parser.add_argument_group("tiles (RecastDemo's tile mesh; core.tiles)")
    group.add_argument(
        "--tile-size",
        type=_tile_size,
        default=0,
        metavar="CELLS",
        help="bake in square tiles of this many cells (0 = one solo mesh, the default; "
        "otherwise 8..4096, RecastDemo uses 32..128); each tile adds a border of "
        "agent radius + 3 cells",
    )
    group.add_argument(
        "--workers",
        type=whole_number_at_least(1, MAX_WORKERS),
        default=None,
        metavar="N",
        help="processes baking tiles at once, or (solo bakes) adding the detail mesh's "
        "interior samples of many polygons (default: every core; 1 = in this process; at most "
        f"{MAX_WORKERS})",
    )


def _add_dump(sub) -> None:
    dump = sub.add_parser(
        "dump",
        help="run the pipeline and write every stage's arrays (.npz)",
        epilog=EXIT_CODES_TEXT,
    )
    dump.add_argument("mesh", help="Wavefront OBJ to bake")
    dump.add_argument("--out", required=True, help=".npz to write (.npz is appended if missing)")
    dump.add_argument("--recast-frame", action="store_true", help="read the OBJ as RecastDemo")
    dump.add_argument("--heightfield-only", action="store_true", help="stop after the filters")
    _common(dump)
    add_tile_flags(dump)
    add_setting_flags(dump)
    dump.set_defaults(func=cmd_dump)


def _add_bake(sub) -> None:
    bake = sub.add_parser(
        "bake",
        help="bake an OBJ into a navigation mesh (.obj, .json, Detour .bin)",
        epilog=EXIT_CODES_TEXT,
    )
    bake.add_argument("mesh", help="Wavefront OBJ to bake")
    bake.add_argument(
        "--out",
        required=True,
        help="navmesh to write, format by extension: .obj, .json or .bin (Detour's navmesh set)",
    )
    bake.add_argument("--json", help="also write the navmesh as JSON for game engines")
    bake.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE,...",
        help="bake for this agent (repeatable): keys radius, height, max_climb, max_slope "
        "(wu / degrees; an omitted key takes the setting flag's value), e.g. "
        "small:radius=0.3,height=1.8. One bake shares the stages agents have in common and "
        "writes one output per agent, its name inserted before the extension: --out "
        "navmesh.obj writes navmesh_small.obj, navmesh_large.obj (--json likewise); all "
        "outputs are written or none. --workers N runs the per-agent stages in N processes "
        "(default: every core where the platform forks, on levels large enough to pay; 1 = "
        "in this process)",
    )
    bake.add_argument(
        "--recast-frame",
        action="store_true",
        help="read the OBJ as RecastDemo (mirrored, cell-aligned with Recast); by default it is "
        "rotated to Z-up as Blender's importer does, so the written navmesh overlays the input",
    )
    _add_prune_flags(bake)
    _common(bake)
    add_tile_flags(bake)
    add_setting_flags(bake)
    bake.set_defaults(func=cmd_bake)


def _add_prune_flags(parser: argparse.ArgumentParser) -> None:
    """Island pruning (core.prune): --reachable-from X Y Z (repeatable), --prune-mode."""
    group = parser.add_argument_group("island pruning (core.prune)")
    group.add_argument(
        "--reachable-from",
        type=float,
        nargs=3,
        action="append",
        metavar=("X", "Y", "Z"),
        default=None,
        help="a point agents start from (wu, Z-up as Blender shows the OBJ, or the file's own "
        "coordinates with --recast-frame, as --from of `path`; repeatable): "
        "polygons not connected to any such point through polygon links are pruned",
    )
    add_link_flag(group)
    group.add_argument(
        "--prune-mode",
        choices=("remove", "disable"),
        default=None,
        help="with --reachable-from: remove the unreachable polygons (default), or keep them "
        "with area 0 and flag disabled (0x10) as RecastDemo's prune tool does",
    )


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="per-stage times and peak memory", epilog=EXIT_CODES_TEXT)
    bench.add_argument(
        "--runs", type=positive_int, default=None,
        help=f"runs per mesh (>= 1; default {DEFAULT_BENCH_RUNS}; not with --tile-size)",
    )  # fmt: skip
    bench.add_argument("--quick", action="store_true", help="skip the 10x10 tiling")
    bench.add_argument(
        "--obstacles",
        action="store_true",
        help="obstacle rebuild ms per tile on the dungeon (before/after the tile cache's "
        "shortcuts, --runs obstacles)",
    )
    bench.add_argument("--meshes", default=None, help="folder with dungeon.obj and nav_test.obj")
    _common(bench)
    add_tile_flags(bench)
    bench.set_defaults(func=cmd_bench)


def _add_nav(sub) -> None:
    """``query``, ``path`` and ``bench-queries`` (Detour's queries; code in core.nav.cli)."""
    from .nav import cli as nav_cli

    nav_cli.add_parsers(sub, add_setting_flags, config_from_args, _common)
    add_tile_flags(sub.choices["query"])
    add_tile_flags(sub.choices["path"])


#: Subcommand builders, in the order ``--help`` lists them.
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_dump, _add_bake, _add_bench, _add_nav,
]  # fmt: skip


def build_parser() -> SuggestingParser:
    parser = SuggestingParser(
        prog="python -m core",
        description=(__doc__ or "").splitlines()[0],
        epilog=EXIT_CODES_TEXT,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=SuggestingParser)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or usage errors (2)
        return int(exc.code or 0)
    return run_guarded(lambda: args.func(args), verbose=bool(getattr(args, "verbose", False)))


if __name__ == "__main__":
    sys.exit(main())
