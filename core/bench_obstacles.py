"""``python -m core.bench_obstacles [--runs 20] [--meshes DIR]``: obstacle rebuild speed.

Builds the dungeon tiled (tile size 32, RecastDemo's settings) into a `TileCache`, then adds a
cylinder (radius 1, height 2) on the floor of a random polygon, moves it 2 units, and removes
it, ``--runs`` times; each change is one `TileCache.update`. Prints the median milliseconds per
rebuilt tile (from cache to Detour data) and per relinked tile (remove + add in the navmesh),
and their sum, which the issue's target bounds at 20 ms per tile, plus the process CPU time per
tile (the wall time on an idle core; the shared machine's load inflates wall times).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from . import obstacles as ob
from .config import NavConfig
from .objio import read_obj
from .tilecache import TileCache


def run(meshes: Path, runs: int, seed: int = 0) -> dict[str, float]:
    verts, tris = read_obj(meshes / "dungeon.obj")
    start = time.perf_counter()
    cache = TileCache.build(verts, tris, NavConfig(), 32, workers=1)
    build = time.perf_counter() - start
    rng = np.random.default_rng(seed)
    nm = cache.navmesh
    rebuild, relink, counts, cpu = [], [], [], []

    def update():
        before = time.process_time()
        report = cache.update()
        cpu.append(1000 * (time.process_time() - before) / max(len(report.rebuilt), 1))
        return report

    for _ in range(runs):
        p = int(rng.integers(nm.poly_count))
        n = int(nm.poly_vert_count[p])
        c = nm.poly_pos[p, :n].astype(np.float64).mean(axis=0)
        floor = np.array([c[0], c[2], c[1] - 0.5])
        oid = cache.add(ob.cylinder(floor, 1.0, 2.0))
        steps = [update()]
        cache.move(oid, floor + [2.0, 0.0, 0.0])
        steps.append(update())
        cache.remove(oid)
        steps.append(update())
        for report in steps:
            k = max(len(report.rebuilt), 1)
            counts.append(len(report.rebuilt))
            rebuild.append(1000 * report.rebuild_seconds / k)
            relink.append(1000 * report.relink_seconds / k)
    out = {
        "build_s": build,
        "tiles": float(len(cache.tiles)),
        "tiles_per_change": statistics.mean(counts),
        "rebuild_ms_per_tile": statistics.median(rebuild),
        "relink_ms_per_tile": statistics.median(relink),
        "total_ms_per_tile": statistics.median(
            [a + b for a, b in zip(rebuild, relink, strict=True)]
        ),
        "cpu_ms_per_tile": statistics.median(cpu),
    }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bench_obstacles", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="obstacles placed (>= 1)")
    default = Path(__file__).resolve().parents[2] / "shared" / "meshes"
    parser.add_argument("--meshes", type=Path, default=default, help="folder with dungeon.obj")
    args = parser.parse_args(argv)
    figures = run(args.meshes, max(1, args.runs))
    print(
        f"dungeon tile 32: {figures['tiles']:.0f} tiles baked in {figures['build_s']:.2f} s; "
        f"{figures['tiles_per_change']:.2f} tiles rebuilt per change"
    )
    print(
        f"per tile (median): rebuild {figures['rebuild_ms_per_tile']:.1f} ms + relink "
        f"{figures['relink_ms_per_tile']:.1f} ms = {figures['total_ms_per_tile']:.1f} ms "
        f"(target <= 20 ms); process CPU {figures['cpu_ms_per_tile']:.1f} ms per tile (what the "
        f"wall time would be on an idle core)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
