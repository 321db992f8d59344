"""``python -m core bench --obstacles [--runs 10]`` (or ``python -m core.bench_obstacles``):
obstacle rebuild speed, before and after the tile cache's shortcuts, in one process.

Builds the dungeon tiled (tile size 32, RecastDemo's settings) into a `TileCache`, then, per
run, adds a cylinder (radius 1, height 2) on the floor of a random polygon, moves it 2 units,
and removes it; each change is one `TileCache.update`. Every change runs twice, interleaved on
two copies of the cache: "before" re-runs the stages for every dirty tile with a one-entry
chamfer plan cache (the tile cache as first built); "after" reuses a tile's obstacle-free or
current result when its marked areas equal them (`TileCache.reuse_equal_areas`) and keeps the
chamfer plans of recent tiles (`core.area`). Prints, per change kind, the median wall and
process CPU milliseconds per dirty tile (rebuild + relink; the issue's target is <= 20 ms per
tile) and how many tiles ran the stages. The CPU time is what the wall time would be on an
idle core; on a shared machine the wall time carries other processes' load.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import numpy as np

from . import area as area_mod
from . import obstacles as ob
from .cliutil import positive_int, run_guarded
from .config import NavConfig
from .objio import read_obj
from .tilecache import TileCache

KINDS = ("add", "move", "remove")
MODES = ("before", "after")


def _timed_update(cache: TileCache, mode: str) -> tuple[float, float, int, int]:
    """(wall ms, CPU ms, dirty tiles, tiles that ran the stages) of one update in a mode."""
    cache.reuse_equal_areas = mode == "after"
    saved = area_mod._PLAN_CACHE_SPANS
    if mode == "before":
        area_mod._PLAN_CACHE_SPANS = 0  # only the newest entry stays: the old one-entry cache
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        report = cache.update()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        area_mod._PLAN_CACHE_SPANS = saved
    return 1000 * wall, 1000 * cpu, len(report.rebuilt), len(report.rebuilt) - len(report.reused)


def run(meshes: Path, runs: int, seed: int = 0) -> dict:
    """Figures per mode and change kind: lists of (wall ms, CPU ms, dirty, computed)."""
    verts, tris = read_obj(meshes / "dungeon.obj")
    start = time.perf_counter()
    built = TileCache.build(verts, tris, NavConfig(), 32, workers=1)
    build_s = time.perf_counter() - start
    caches = {mode: copy.deepcopy(built) for mode in MODES}
    rng = np.random.default_rng(seed)
    nm = built.navmesh
    out: dict = {mode: {kind: [] for kind in KINDS} for mode in MODES}
    for i in range(runs):
        p = int(rng.integers(nm.poly_count))
        n = int(nm.poly_vert_count[p])
        c = nm.poly_pos[p, :n].astype(np.float64).mean(axis=0)
        floor = np.array([c[0], c[2], c[1] - 0.5])
        order = MODES if i % 2 == 0 else MODES[::-1]  # interleaved: neither mode always first
        ids = {mode: caches[mode].add(ob.cylinder(floor, 1.0, 2.0)) for mode in MODES}
        for kind in KINDS:
            if kind == "move":
                for mode in MODES:
                    caches[mode].move(ids[mode], floor + [2.0, 0.0, 0.0])
            elif kind == "remove":
                for mode in MODES:
                    caches[mode].remove(ids[mode])
            for mode in order:
                out[mode][kind].append(_timed_update(caches[mode], mode))
    out["build_s"] = build_s
    out["tiles"] = len(built.tiles)
    return out


def _per_tile(rows, column: int) -> float:
    return statistics.median(r[column] / max(r[2], 1) for r in rows)


def report(figures: dict) -> list[str]:
    lines = [
        f"dungeon tile 32: {figures['tiles']} tiles baked in {figures['build_s']:.2f} s; per "
        "dirty tile, median (rebuild + relink; target <= 20 ms):"
    ]
    for kind in (*KINDS, "all"):
        cells = []
        per_mode = {}
        for mode in MODES:
            rows = figures[mode][kind] if kind != "all" else sum(figures[mode].values(), [])
            wall, cpu = _per_tile(rows, 0), _per_tile(rows, 1)
            dirty = sum(r[2] for r in rows)
            ran = sum(r[3] for r in rows)
            per_mode[mode] = (wall, cpu)
            cells.append(f"{mode} wall {wall:5.1f} ms CPU {cpu:5.1f} ms ({ran}/{dirty} ran)")
        ratio = per_mode["before"][1] / max(per_mode["after"][1], 1e-9)
        lines.append(f"  {kind:6s}  " + "  |  ".join(cells) + f"  CPU ratio {ratio:.2f}x")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bench_obstacles", description=__doc__)
    parser.add_argument("--runs", type=positive_int, default=10, help="obstacles placed (>= 1)")
    default = Path(__file__).resolve().parents[2] / "shared" / "meshes"
    parser.add_argument("--meshes", type=Path, default=default, help="folder with dungeon.obj")
    args = parser.parse_args(argv)
    print("\n".join(report(run(args.meshes, args.runs))))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main, verbose=False))
