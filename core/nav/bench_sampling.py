"""Benchmark of the seed's two queries: height sampling and voxel path finding.

    python -m core.nav.bench_sampling [--meshes FOLDER] [--points 1000000]

Height sampling on the dungeon 10x10 tiling (1.01M triangles): index build time and points
per second (random points over the bounds; issue 12's targets: build <= 1 s, >= 2M points/s).
Voxel path finding across dungeon at 0.3 m: stayable-voxel precomputation, BFS and A* between
the two walkable spans farthest apart in the span order (target: BFS <= 0.5 s), and the
walking-only search on the compact heightfield. Figures are wall seconds of one run each, min
of ``--runs``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .. import pipeline
from ..bench import _find_meshes, tile_mesh
from ..cliutil import positive_int, run_guarded
from ..config import NavConfig
from ..objio import read_obj
from .heights import HeightIndex
from .voxel_path import VoxelNavigator, walk_path


def _best(fn, runs: int):
    best, out = float("inf"), None
    for _ in range(runs):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.nav.bench_sampling")
    parser.add_argument("--meshes", default=None, help="folder with dungeon.obj")
    parser.add_argument("--points", type=positive_int, default=1_000_000)
    parser.add_argument("--runs", type=positive_int, default=3)
    args = parser.parse_args(argv)
    verts, tris = read_obj(_find_meshes(args.meshes) / "dungeon.obj", recast_frame=False)

    big_v, big_t = tile_mesh(verts, tris, 10)
    build, index = _best(lambda: HeightIndex(big_v, big_t), args.runs)
    assert index is not None
    rng = np.random.default_rng(0)
    lo, hi = big_v.min(axis=0), big_v.max(axis=0)
    points = rng.uniform(lo[:2], hi[:2], size=(args.points, 2))
    query, hits = _best(lambda: index.heights(points), args.runs)
    rate = args.points / query
    print(f"height sampling, dungeon 10x10 ({big_t.shape[0]:,} triangles, grid {index.shape}, "
          f"{index.entries.shape[0]:,} cell entries):")  # fmt: skip
    print(f"  index build {build:.3f} s (target <= 1 s: {_verdict(build <= 1.0)})")
    hit = np.isfinite(hits.height).mean()
    print(f"  {args.points:,} points in {query:.3f} s = {rate / 1e6:.2f} M points/s (target "
          f">= 2 M/s: {rate / 2e6:.2f}x, {_verdict(rate >= 2e6)}); {hit:.0%} hit")  # fmt: skip

    result = pipeline.bake(verts, tris, NavConfig())
    chf = result.compact
    assert chf is not None
    walk = np.nonzero(chf.area)[0]
    a, b = int(walk[0]), int(walk[-1])

    def floor_point(i: int) -> np.ndarray:
        return np.array(
            [
                result.bmin[0] + (chf.span_x[i] + 0.5) * chf.cs,
                result.bmin[1] + (chf.span_y[i] + 0.5) * chf.cs,
                result.bmin[2] + (chf.y[i] + 0.5) * chf.ch,
            ]
        )

    grid = result.voxel_grid()
    prep, nav = _best(lambda: VoxelNavigator(grid), args.runs)
    assert nav is not None
    print(f"voxel paths, dungeon at cell 0.3 m ({grid.width}x{grid.height}x{grid.depth} voxels):")
    print(f"  stayable voxels precomputed in {prep:.3f} s ({int(nav.stayable.sum()):,} stayable)")
    for method in ("bfs", "astar"):
        seconds, path = _best(lambda m=method: nav.find_path(floor_point(a), floor_point(b), m), 1)
        assert path is not None
        goal = f" (target <= 0.5 s: {_verdict(seconds <= 0.5)})" if method == "bfs" else ""
        print(f"  {method}: {path.status}, {path.steps} steps, {path.expanded:,} voxels "
              f"expanded, {seconds:.3f} s{goal}")  # fmt: skip
    seconds, w = _best(lambda: walk_path(chf, floor_point(a), floor_point(b)), args.runs)
    assert w is not None
    print(f"  walking (compact spans): {w.status}, {w.steps} steps, {seconds * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main, verbose=False))
