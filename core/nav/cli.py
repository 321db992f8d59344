"""``python -m core query`` and ``python -m core path``: Detour's queries on a fresh bake.

    python -m core query MESH.obj --recast-frame --queries Q.npz --out OUT.npz [settings]
    python -m core path MESH.obj --from X Y Z --to X Y Z [--recast-frame] [settings]

``query`` runs the queries exactly as ``shared/reference/README.md`` describes (RecastDemo's
navmesh: agent height/radius/climb from the settings, Detour's default filter, 2048 nodes) and
writes the answers under the reference names and dtypes plus ``time_query_<kind>`` (float64
seconds per batch). Positions in Q.npz and OUT.npz are in the OBJ's own frame: Recast's Y-up
with --recast-frame, else VoxNav's Z-up.
"""

from __future__ import annotations

import functools
import io
import stat
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .. import atomic
from ..cliutil import add_link_flag, offmesh_links_from_args, positive_int, print_warnings
from ..errors import ARCHIVE_READ_ERRORS, UsageError, VoxNavError
from ..limits import MAX_COORDINATE, within_reach
from .navdata import create_nav_mesh_data
from .navmesh import NavMesh
from .query import FAILURE, INVALID_PARAM, PARTIAL_RESULT, SUCCESS, NavMeshQuery

F32 = np.float32
QUERY_ARRAYS = ("q_points", "q_pairs", "q_ray_start", "q_ray_end", "q_half_extents")
#: findDistanceToWall radius and the corridor / straight path / ray limits of the reference.
WALL_RADIUS = 5.0
MAX_PATH = 256


def build_navmesh(
    mesh_path,
    recast_frame: bool,
    config,
    tile_size: int = 0,
    workers: int | None = None,
    offmesh_links=None,
) -> NavMesh:
    """Bake an OBJ with `config` and make the navmesh RecastDemo makes from it: solo, or
    with ``tile_size`` > 0 RecastDemo's tile mesh (`core.tiles`, ``workers`` processes).
    ``offmesh_links``: hand-made `core.offmesh.OffMeshLinks` (Z-up) added to the navmesh as
    Detour's off-mesh connections (with any automatic links of the bake), or None."""
    from .. import pipeline
    from ..objio import read_obj

    verts, tris = read_obj(mesh_path, recast_frame=recast_frame)
    if tile_size:
        from ..tiles import bake_tiled

        tiled = bake_tiled(verts, tris, config, tile_size, workers=workers)
        tiled.offmesh_links = offmesh_links
        from ..offmesh import link_warnings

        if tiled.empty:
            print_warnings(tiled.warnings)
            raise VoxNavError(
                f"{mesh_path}: the tiled bake made no walkable polygons, so there is nothing "
                "to query; check the agent settings and that the mesh has floors"
            )
        # As `bake` says them: a hand link that starts off the navmesh is left out, one that
        # ends off it leads nowhere (a path then goes without it, and only this says why).
        nav = tiled.navmesh()
        print_warnings([*tiled.warnings, *link_warnings(offmesh_links, lambda: nav)])
        return nav
    result = pipeline.bake(verts, tris, config, offmesh_links=offmesh_links)
    if result.polymesh is not None and int(result.polymesh.npolys) > 0:
        print_warnings(result.warnings)  # an unplaced hand link among them, as `bake` says
    if result.polymesh is None or int(result.polymesh.npolys) == 0:
        # The bake's warnings name the likely cause (regions below region_min_size, say).
        why = "; ".join(result.warnings) or "check the agent settings and that the mesh has floors"
        raise VoxNavError(
            f"{mesh_path}: the bake made no walkable polygons, so there is nothing to query: {why}"
        )
    data = create_nav_mesh_data(
        result.polymesh,
        result.detail,
        walkable_height=float(F32(config.agent_height)),
        walkable_radius=float(F32(config.agent_radius)),
        walkable_climb=float(F32(config.agent_max_climb)),
        offmesh=result.offmesh_links,
    )
    return NavMesh.from_data(data)


def _frame(a: np.ndarray, recast_frame: bool) -> np.ndarray:
    """OBJ frame <-> VoxNav Z-up: the parity mirror swaps y and z (its own inverse). Values
    beyond float32 become infinite (`_beyond_float32` says so), as Detour's floats would."""
    with np.errstate(over="ignore"):
        a = np.asarray(a, dtype=F32)
    return a[..., [0, 2, 1]].copy() if recast_frame else a.copy()


def _beyond_float32(arrays: dict[str, np.ndarray]) -> list[str]:
    """Warnings for the query positions whose finite values float32 cannot hold (they are
    answered as Detour answers infinite positions: invalid); NumPy printed its own
    RuntimeWarning and source line for them."""
    out = []
    for name in ("q_points", "q_ray_end", "q_half_extents"):
        values = np.asarray(arrays[name], dtype=np.float64)
        beyond = np.isfinite(values) & (np.abs(values) > float(np.finfo(F32).max))
        if beyond.any():
            rows = int(beyond.reshape(-1, 3).any(axis=1).sum()) if values.size % 3 == 0 else 1
            out.append(
                f"{rows} row(s) of {name} hold values beyond float32 (about 3.4e38): "
                "they are infinite to Detour and answered as invalid positions"
            )
    return out


#: The most bytes a queries .npz read through a pipe may hold (it is read into memory).
MAX_PIPED_QUERIES = 1 << 30


def read_queries(path) -> dict[str, np.ndarray]:
    """The query arrays of a queries .npz (`QUERY_ARRAYS`), checked: shapes, numbers, whole
    indices into ``q_points``. `VoxNavError` says what is wrong. Positions may be NaN or out of
    every polygon's reach: Detour answers those (with its invalid-parameter or not-found
    status), and so does ``query``."""
    path = Path(path)
    source: Path | io.BytesIO = path
    try:
        if stat.S_ISREG(path.stat().st_mode):
            empty = path.stat().st_size == 0
        else:  # a pipe (``<(cat q.npz)``, a FIFO): read once, its size unknown beforehand
            with open(path, "rb") as fh:
                data = fh.read(MAX_PIPED_QUERIES + 1)
            if len(data) > MAX_PIPED_QUERIES:
                raise VoxNavError(
                    f"{path} holds more than {MAX_PIPED_QUERIES >> 20} MiB: give the queries "
                    "as a file, not through a pipe"
                )
            source, empty = io.BytesIO(data), not data
        is_npz = zipfile.is_zipfile(source)
    except OSError as exc:
        raise VoxNavError(f"cannot read queries file {path}: {exc.strerror or exc}") from exc
    if not is_npz:  # NumPy would call it pickled data
        raise VoxNavError(
            f"{path} is not a NumPy .npz archive (write it with numpy.savez)"
            + (": it is empty" if empty else "")
        )
    if isinstance(source, io.BytesIO):
        source.seek(0)
    try:
        with np.load(source, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except MemoryError:  # a member's header declaring a shape of terabytes
        raise VoxNavError(
            f"cannot read queries file {path}: an array in it is larger than this machine's "
            "memory (the file is damaged, or not the queries meant): write it again with "
            "numpy.savez"
        ) from None
    except ARCHIVE_READ_ERRORS as exc:
        raise VoxNavError(
            f"cannot read queries file {path}, it is damaged ({type(exc).__name__}: {exc}): "
            "write it again with numpy.savez"
        ) from exc
    missing = [k for k in QUERY_ARRAYS if k not in arrays]
    if missing:
        raise VoxNavError(
            f"{path} lacks the query arrays {', '.join(missing)} (needs {', '.join(QUERY_ARRAYS)})"
        )
    for name in QUERY_ARRAYS:
        kind = np.asarray(arrays[name]).dtype.kind
        if kind not in "iuf":
            raise VoxNavError(f"{path}: {name} must hold numbers, got {arrays[name].dtype} data")
    for name in ("q_pairs", "q_ray_start"):
        idx = np.asarray(arrays[name])
        if idx.dtype.kind == "f" and not np.array_equal(idx, np.trunc(idx)):
            raise VoxNavError(f"{path}: {name} must hold whole indices into q_points")
    pts = np.asarray(arrays["q_points"])
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise VoxNavError(f"{path}: q_points must be (n, 3), got shape {pts.shape}")
    n = pts.shape[0]
    pairs = np.asarray(arrays["q_pairs"])
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise VoxNavError(f"{path}: q_pairs must be (m, 2), got shape {pairs.shape}")
    rs = np.asarray(arrays["q_ray_start"]).reshape(-1)
    re = np.asarray(arrays["q_ray_end"])
    if re.ndim != 2 or re.shape[1] != 3 or re.shape[0] != rs.shape[0]:
        raise VoxNavError(
            f"{path}: q_ray_end must be (k, 3) with one row per q_ray_start entry, got "
            f"{re.shape} for {rs.shape[0]} starts"
        )
    for name, idx in (("q_pairs", pairs), ("q_ray_start", rs)):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise VoxNavError(f"{path}: {name} holds indices outside q_points (0..{n - 1})")
    if np.asarray(arrays["q_half_extents"]).size != 3:
        raise VoxNavError(f"{path}: q_half_extents must hold 3 values")
    return arrays


def run_queries(
    query: NavMeshQuery, arrays: dict[str, np.ndarray], recast_frame: bool
) -> dict[str, Any]:
    """Run the reference's query protocol; returns the answer arrays (reference names)."""
    nav = query.nav
    out: dict[str, Any] = {}
    print_warnings(_beyond_float32(arrays))
    pts = _frame(arrays["q_points"], recast_frame)
    half = _frame(np.asarray(arrays["q_half_extents"]).reshape(3), recast_frame)
    pairs = np.asarray(arrays["q_pairs"], dtype=np.int64)
    ray_start = np.asarray(arrays["q_ray_start"], dtype=np.int64).reshape(-1)
    ray_end = _frame(arrays["q_ray_end"], recast_frame)
    n = pts.shape[0]

    t0 = time.perf_counter()
    near = query.find_nearest_poly_batch(pts, half)
    out["time_query_nearest"] = np.float64(time.perf_counter() - t0)
    has = near.ref >= 0
    out.update(
        near_status=near.status.astype(np.uint32),
        near_poly=nav.tile_poly(near.ref)[:, 2].astype(np.int32),
        near_tile_poly=nav.tile_poly(near.ref),
        near_pt=_frame(near.point, recast_frame),
        near_over_poly=near.over_poly.astype(np.uint8),
    )

    # Heights and walls: only where a polygon was found (status 0 = not run, as the reference).
    t0 = time.perf_counter()
    hb = query.get_poly_height_batch(near.ref, np.where(has[:, None], near.point, 0))
    out["time_query_height"] = np.float64(time.perf_counter() - t0)
    out["height_status"] = np.where(has, hb.status, 0).astype(np.uint32)
    out["height"] = np.where(has, hb.height, np.nan).astype(F32)

    t0 = time.perf_counter()
    idx = np.nonzero(has)[0]
    wall = query.find_distance_to_wall_batch(near.ref[idx], near.point[idx], WALL_RADIUS)
    out["time_query_wall"] = np.float64(time.perf_counter() - t0)
    wall_status = np.zeros(n, np.uint32)
    wall_dist = np.full(n, np.nan, F32)
    wall_pos = np.full((n, 3), np.nan, F32)
    wall_normal = np.full((n, 3), np.nan, F32)
    wall_status[idx], wall_dist[idx] = wall.status, wall.distance
    wall_pos[idx], wall_normal[idx] = wall.position, wall.normal
    out.update(
        wall_status=wall_status,
        wall_dist=wall_dist,
        wall_pos=_frame(wall_pos, recast_frame),
        wall_normal=_frame(wall_normal, recast_frame),
    )

    # Paths: findPath(ref[a], ref[b], near_pt[a], near_pt[b]); a missing ref is Detour's 0,
    # an invalid param (NaN positions stand in for the unset points).
    a, b = pairs[:, 0], pairs[:, 1]
    t0 = time.perf_counter()
    corr = query.find_path_batch(near.ref[a], near.ref[b], near.point[a], near.point[b])
    out["time_query_path"] = np.float64(time.perf_counter() - t0)
    out.update(
        path_status=corr.status.astype(np.uint32),
        path_count=corr.count.astype(np.int32),
        path_start=corr.start.astype(np.int64),
        path_poly=nav.tile_poly(corr.polys)[:, 2].astype(np.int32).reshape(-1),
        path_tile_poly=nav.tile_poly(corr.polys).reshape(-1, 3),
    )

    # Straight paths: end = near_pt[b], or for a partial corridor the closest point on its
    # last polygon (RecastDemo's rule); not run for an empty corridor.
    t0 = time.perf_counter()
    m = pairs.shape[0]
    end_pos = np.full((m, 3), np.nan, F32)
    run = corr.count > 0
    last = np.where(run, corr.polys[np.minimum(corr.start + corr.count - 1, len(corr.polys) - 1)]
                    if len(corr.polys) else -1, -1)  # fmt: skip
    reached = run & (last == near.ref[b])
    end_pos[reached] = near.point[b[reached]]
    cut = np.nonzero(run & ~reached)[0]
    if cut.shape[0]:
        end_pos[cut] = query.closest_point_on_poly_batch(last[cut], near.point[b[cut]])[1]
    straight = query.find_straight_path_batch(near.point[a], end_pos, corr, MAX_PATH, 0)
    out["time_query_straight"] = np.float64(time.perf_counter() - t0)
    out.update(
        straight_status=np.where(run, straight.status, 0).astype(np.uint32),
        straight_count=straight.count.astype(np.int32),
        straight_start=straight.start.astype(np.int64),
        straight_end_pos=_frame(end_pos, recast_frame),
        straight_pts=_frame(straight.points, recast_frame),
        straight_flags=straight.flags.astype(np.uint8),
        straight_poly=nav.tile_poly(straight.refs)[:, 2].astype(np.int32).reshape(-1),
        straight_tile_poly=nav.tile_poly(straight.refs).reshape(-1, 3),
    )

    t0 = time.perf_counter()
    rays = query.raycast_batch(near.ref[ray_start], near.point[ray_start], ray_end)
    out["time_query_raycast"] = np.float64(time.perf_counter() - t0)
    out.update(
        ray_status=rays.status.astype(np.uint32),
        ray_t=rays.t.astype(F32),
        ray_normal=_frame(rays.normal, recast_frame),
        ray_count=rays.count.astype(np.int32),
        ray_start=rays.start.astype(np.int64),
        ray_poly=nav.tile_poly(rays.polys)[:, 2].astype(np.int32).reshape(-1),
        ray_tile_poly=nav.tile_poly(rays.polys).reshape(-1, 3),
    )
    return out


def navmesh_from_args(args, config) -> NavMesh:
    """The navmesh a ``query``/``path`` command asks for: its mesh baked with its settings,
    tiles (``--tile-size``, ``--workers``) and hand-made off-mesh links (``--offmesh-link``)."""
    return build_navmesh(
        args.mesh,
        args.recast_frame,
        config,
        getattr(args, "tile_size", 0),
        getattr(args, "workers", None),
        offmesh_links_from_args(args),
    )


def _per_agent(command, args, config) -> int:
    from .agent_cli import per_agent

    return per_agent(command, args, config)


def cmd_query(
    args,
    config,
    nav: NavMesh | None = None,
    batch: atomic.Batch | None = None,
    arrays: dict[str, np.ndarray] | None = None,
) -> int:
    """``query``: answers of the queries file on the mesh's navmesh (``nav`` when given), or
    on each ``--agent``'s. The file is read (and a bad one refused) before any bake, once;
    ``arrays``: its `read_queries` arrays when the caller has them. The output is checked
    before the bake and replaced only when every answer is ready (``batch``: a caller's
    `atomic.Batch` holding it, committed by the caller)."""
    if arrays is None:
        arrays = read_queries(args.queries)
    if nav is None and getattr(args, "agent", None):
        return _per_agent(functools.partial(cmd_query, arrays=arrays), args, config)
    if batch is None:
        with atomic.Batch(inputs=[args.mesh, args.queries]) as own:
            own.add(args.out, "--out")
            status = cmd_query(args, config, nav, own, arrays)
            own.commit()
        return status
    if nav is None:
        nav = navmesh_from_args(args, config)
    out = run_queries(NavMeshQuery(nav, 2048), arrays, args.recast_frame)
    # An open file, so NumPy writes the name given (it appends .npz to a path without it).
    with atomic.replacing(args.out, batch=batch) as temp, open(temp, "wb") as f:
        np.savez_compressed(f, **out)
    times = " ".join(
        f"{k[len('time_query_') :]}={float(v) * 1000:.1f}ms"
        for k, v in out.items()
        if k.startswith("time_query_")
    )
    print(f"wrote {len(out)} arrays to {args.out}  ({times})")
    return 0


def _status_text(status: int) -> str:
    if status & FAILURE:
        return "failed" + (" (invalid input)" if status & INVALID_PARAM else "")
    if status & PARTIAL_RESULT:
        return "partial (goal not reachable; path ends as close as it gets)"
    return "reached" if status & SUCCESS else f"status {status:#x}"


def _path_points(args):
    """``path``'s start, goal and search half extents in VoxNav's frame (float32 (3,) each),
    and the half extents as given; `UsageError` for coordinates that are not finite or a
    half extent that is not positive (checked before anything is baked)."""
    given = np.asarray([args.start, args.goal], dtype=np.float64)
    if not within_reach(given).all():  # NaN too; checked before float32
        raise UsageError(f"--from and --to need finite coordinates within +-{MAX_COORDINATE:g}")
    start = _frame(given[0].astype(F32), args.recast_frame)
    goal = _frame(given[1].astype(F32), args.recast_frame)
    half_arg = args.half_extents
    if half_arg is None:
        half_arg = (2.0, 4.0, 2.0) if args.recast_frame else (2.0, 2.0, 4.0)
    given_half = np.asarray(half_arg, dtype=np.float64)
    if not (np.all(given_half <= MAX_COORDINATE) and np.all(given_half > 0)):  # NaN too
        raise UsageError(
            f"--half-extents must be three positive sizes (wu) up to {MAX_COORDINATE:g}, got "
            f"{' '.join(map(str, half_arg))}"
        )
    half = _frame(given_half.astype(F32), args.recast_frame)
    if not (np.all(np.isfinite(half)) and np.all(half > 0)):
        raise UsageError(
            f"--half-extents must be three positive sizes (wu), got {' '.join(map(str, half_arg))}"
        )
    return start, goal, half, half_arg


def cmd_path(args, config, nav: NavMesh | None = None, batch=None, points=None) -> int:
    """``path``: the straight path between two points on the mesh's navmesh (``nav`` when
    given), or on each ``--agent``'s. ``batch`` is unused (``path`` writes nothing);
    ``points``: `_path_points` when the caller has checked them (before any bake, once)."""
    if points is None:
        points = _path_points(args)
    if nav is None and getattr(args, "agent", None):
        return _per_agent(functools.partial(cmd_path, points=points), args, config)
    start, goal, half, half_arg = points
    if nav is None:
        nav = navmesh_from_args(args, config)
    query = NavMeshQuery(nav, 2048)
    s = query.find_nearest_poly(start, half)
    g = query.find_nearest_poly(goal, half)
    for name, r, p in (("start", s, args.start), ("goal", g, args.goal)):
        if r.ref < 0:
            raise VoxNavError(
                f"no navmesh polygon near the {name} {tuple(p)} (within half extents "
                f"{tuple(half_arg)}); move it onto a walkable floor or enlarge "
                "--half-extents"
            )
    path = query.find_path(s.ref, g.ref, s.point, g.point)
    end = g.point
    if len(path.polys) and int(path.polys[-1]) != g.ref:
        end = query.closest_point_on_poly(int(path.polys[-1]), g.point)[1]
    straight = query.find_straight_path(s.point, end, path.polys)
    pts = _frame(straight.points, args.recast_frame)
    length = float(np.sum(np.linalg.norm(np.diff(pts.astype(np.float64), axis=0), axis=1)))
    print(
        f"path: {_status_text(path.status)}; {len(path.polys)} polygons, {len(pts)} points, "
        f"length {length:.3f}"
    )
    for p, f in zip(pts, straight.flags, strict=True):
        tag = " start" if f & 1 else (" end" if f & 2 else (" off-mesh link" if f & 4 else ""))
        print(f"  {p[0]:10.4f} {p[1]:10.4f} {p[2]:10.4f}{tag}")
    return 0


def add_parsers(sub, add_setting_flags, config_from_args, common=None) -> None:
    """Register ``query``, ``path`` and ``bench-queries`` on an argparse subparsers object;
    each sets ``func`` (args -> exit code; VoxNavError is left to the caller)."""
    q = sub.add_parser("query", help="run Detour's queries from Q.npz, write the answers (.npz)")
    q.add_argument("mesh", help="Wavefront OBJ to bake")
    q.add_argument("--queries", required=True, help=".npz with q_points, q_pairs, q_ray_*")
    q.add_argument("--out", required=True, help=".npz to write (atomically)")
    q.add_argument("--recast-frame", action="store_true", help="read the OBJ as RecastDemo")
    add_link_flag(q)
    add_setting_flags(q)
    q.set_defaults(func=lambda args: cmd_query(args, config_from_args(args)))
    p = sub.add_parser("path", help="print the straight path between two points")
    p.add_argument("mesh", help="Wavefront OBJ to bake")
    where = (
        "(wu, Z-up as Blender shows the OBJ; with --recast-frame the file's own coordinates, Y up)"
    )
    p.add_argument(
        "--from", dest="start", type=float, nargs=3, required=True, metavar="X",
        help=f"the start point {where}",
    )  # fmt: skip
    p.add_argument(
        "--to", dest="goal", type=float, nargs=3, required=True, metavar="X",
        help=f"the goal point {where}",
    )  # fmt: skip
    p.add_argument(
        "--half-extents", type=float, nargs=3, default=None, metavar="X",
        help="search box half size around each point, in the frame of --from (default 2 "
        "wide, 4 up)",
    )  # fmt: skip
    p.add_argument("--recast-frame", action="store_true", help="read the OBJ as RecastDemo")
    add_link_flag(p)
    add_setting_flags(p)
    p.set_defaults(func=lambda args: cmd_path(args, config_from_args(args)))
    b = sub.add_parser("bench-queries", help="query rates on dungeon next to Detour's")
    b.add_argument("--meshes", default=None, help="folder with dungeon.obj")
    b.add_argument("--pairs", type=positive_int, default=10000, help="batch size [Limit: >= 1]")
    b.add_argument(
        "--runs", type=positive_int, default=3, help="runs per batch, best counts [Limit: >= 1]"
    )
    b.set_defaults(func=lambda args: _bench(args))
    for parser, what in (
        (q, "writes one OUT per agent, its name before the extension (out_small.npz)"),
        (p, "prints each agent's path"),
    ):
        parser.add_argument(
            "--agent",
            action="append",
            default=[],
            metavar="NAME[:KEY=VALUE,...]",
            help="run on this agent's navmesh (repeatable; keys radius, height, max_climb, "
            "max_slope as in bake --agent, omitted keys from the setting flags): the agents "
            f"are baked at once (shared stages) and the command {what}",
        )
    if common is not None:
        for parser in (q, p, b):
            common(parser)


def _bench(args) -> int:
    from .bench import run_query_bench

    return run_query_bench(args.meshes, args.pairs, args.runs)
