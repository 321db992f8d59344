"""``python -m core bench``: per-stage wall times (median of runs) and peak memory.

Memory: each stage's peak traced memory (tracemalloc) beside the `core.memory` estimate the
pipeline checked before it, on every mesh and on a 1 km plane (2 triangles; cell 0.5 m, or
2 m with --quick).

Meshes: the shared dungeon and nav_test, and dungeon tiled 4x4 and 10x10 (copies on an N x N
grid in the horizontal plane, each offset by the mesh's bounding-box size plus 1 unit). Recast's
own C++ times on this machine class (recast-parity.md) are printed beside ours as ratios.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from . import memory, pipeline
from .config import NavConfig
from .context import BuildContext
from .errors import UsageError, VoxNavError
from .heightfield import VoxelGrid
from .objio import read_obj

#: Recast C++ median ms on this machine class: (mark+rasterize+filters, whole pipeline).
RECAST_MS = {
    "dungeon": (8.0, 13.3),
    "nav_test": (7.1, 18.3),
    "dungeon 4x4": (141.0, 231.0),
    "dungeon 10x10": (887.0, 1597.0),
}
#: The issue's ceilings, ms: (heightfield stages, whole pipeline).
TARGET_MS = {
    "dungeon": (60.0, 150.0),
    "dungeon 4x4": (500.0, 1500.0),
    "dungeon 10x10": (3500.0, None),
}


def tile_mesh(verts, tris, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n x n copies of a Z-up mesh on the X/Y plane, each offset by its bounding box + 1."""
    verts = np.asarray(verts, dtype=np.float32)
    size = verts.max(axis=0) - verts.min(axis=0)
    step = size[:2].astype(np.float64) + 1.0
    gx, gy = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    offsets = np.zeros((n * n, 3), dtype=np.float64)
    offsets[:, 0] = gx.ravel() * step[0]
    offsets[:, 1] = gy.ravel() * step[1]
    all_verts = (verts[None].astype(np.float64) + offsets[:, None]).astype(np.float32)
    all_tris = tris[None] + (np.arange(n * n) * verts.shape[0])[:, None, None]
    return all_verts.reshape(-1, 3), all_tris.reshape(-1, 3).astype(np.int32)


def _find_meshes(folder: str | None) -> Path:
    """The folder with dungeon.obj and nav_test.obj: ``folder`` if given (and only it), else
    $VOXNAV_SHARED/meshes, else ../shared/meshes beside the repository."""
    names = ("dungeon.obj", "nav_test.obj")
    if folder:
        missing = [n for n in names if not (Path(folder) / n).is_file()]
        if missing:
            raise VoxNavError(
                f"--meshes {folder}: no {' or '.join(missing)} there; pass the folder that holds "
                "dungeon.obj and nav_test.obj (the shared meshes)"
            )
        return Path(folder)
    candidates = []
    if os.environ.get("VOXNAV_SHARED"):
        candidates.append(Path(os.environ["VOXNAV_SHARED"]) / "meshes")
    candidates.append(Path(__file__).resolve().parent.parent.parent / "shared" / "meshes")
    for candidate in candidates:
        if all((candidate / n).is_file() for n in names):
            return candidate
    raise VoxNavError(
        "dungeon.obj and nav_test.obj not found: pass --meshes FOLDER or set VOXNAV_SHARED"
    )


def _navmesh_available() -> bool:
    import importlib.util

    names = ("area", "regions", "contours", "polymesh", "detail")
    return all(importlib.util.find_spec(f"core.{m}") is not None for m in names)


def plane(size: float) -> tuple[np.ndarray, np.ndarray]:
    """A size x size square at z = 0 as two up-facing triangles. [Units: wu]"""
    verts = np.array([[0, 0, 0], [size, 0, 0], [size, size, 0], [0, size, 0]], np.float32)
    return verts, np.array([[0, 1, 2], [0, 2, 3]], np.int32)


class StagePeakContext(BuildContext):
    """A build context that also records each stage's peak traced memory (tracemalloc must
    be running): the highest total of traced allocations while the stage ran. [Units: bytes]"""

    def __init__(self) -> None:
        super().__init__()
        self.peaks: dict[str, int] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        tracemalloc.reset_peak()
        with super().stage(name):
            yield
        self.peaks[name] = tracemalloc.get_traced_memory()[1]


#: Stage name -> the `core.memory` estimate that covers it.
ESTIMATE_OF = {
    "mark": "rasterize",
    "filter_low_hanging": "filters",
    "filter_ledge": "filters",
    "filter_low_height": "filters",
}


def stage_memory(verts, tris, config: NavConfig, stop_after: str = "navmesh"):
    """One bake under tracemalloc: (result, {stage: (traced peak, estimate)}) in bytes, the
    estimate without `memory.RUNTIME_BYTES` (the traced peak counts arrays only)."""
    ctx = StagePeakContext()
    tracemalloc.start()
    try:
        result = pipeline.bake(verts, tris, config, stop_after=stop_after, ctx=ctx)
    finally:
        tracemalloc.stop()
    table = {}
    for stage, peak in ctx.peaks.items():
        estimate = result.memory_estimates[ESTIMATE_OF.get(stage, stage)] - memory.RUNTIME_BYTES
        table[stage] = (peak, estimate)
    return result, table


def print_stage_memory(verts, tris, config: NavConfig, stop_after: str) -> None:
    start = time.perf_counter()
    result, table = stage_memory(verts, tris, config, stop_after)
    seconds = time.perf_counter() - start
    over = [stage for stage, (peak, estimate) in table.items() if peak > estimate]
    worst = max(peak for peak, _ in table.values())
    print(f"  memory per stage (tracemalloc peak / estimate, MiB; {seconds:.1f} s traced, "
          f"{result.width}x{result.height} grid, highest {worst / 2**20:.0f} MiB): "
          + ("all within the estimate" if not over else "OVER in " + ", ".join(over)))  # fmt: skip
    print("  " + "  ".join(f"{stage}={peak / 2**20:.1f}/{estimate / 2**20:.1f}"
                           for stage, (peak, estimate) in table.items()))  # fmt: skip


def run_bench(args) -> int:
    if args.runs < 1:
        raise UsageError(f"--runs must be at least 1, got {args.runs}")
    folder = _find_meshes(args.meshes)
    dungeon = read_obj(folder / "dungeon.obj")
    scenes = [
        ("dungeon", dungeon),
        ("nav_test", read_obj(folder / "nav_test.obj")),
        ("dungeon 4x4", tile_mesh(*dungeon, 4)),
    ]
    if not args.quick:
        scenes.append(("dungeon 10x10", tile_mesh(*dungeon, 10)))
    config = NavConfig(memory_limit=16 * 1024**3)
    full = _navmesh_available()
    print(f"VoxNav core benchmark: numpy {np.__version__}, median of {args.runs} runs")
    for name, (verts, tris) in scenes:
        runs = args.runs if len(tris) < 500_000 else max(1, min(args.runs, 3))
        modes = [("heightfield", 0)] + ([("navmesh", 1)] if full and len(tris) < 500_000 else [])
        for stop, which in modes:
            timings: dict[str, list[float]] = {}
            totals = []
            result = None
            for _ in range(runs):
                start = time.perf_counter()
                result = pipeline.bake(verts, tris, config, stop_after=stop)
                totals.append(time.perf_counter() - start)
                for stage, seconds in result.timings.items():
                    timings.setdefault(stage, []).append(seconds)
            assert result is not None
            stage_ms = {k: statistics.median(v) * 1000 for k, v in timings.items()}
            total_ms = sum(stage_ms.values())
            recast = RECAST_MS.get(name, (None, None))[which]
            target = TARGET_MS.get(name, (None, None))[which]
            ratio = f"{total_ms / recast:5.1f}x Recast ({recast:.0f} ms)" if recast else ""
            goal = f", target <= {target:.0f} ms" if target else ""
            grid = f"{result.width}x{result.height} grid"
            print(f"\n{name}: {len(tris):,} tris, {grid}, stages 1-{len(stage_ms)} ({stop}): "
                  f"{total_ms:.1f} ms  {ratio}{goal}")  # fmt: skip
            print("  " + "  ".join(f"{k}={v:.1f}" for k, v in stage_ms.items()))
            print(f"  wall incl. validation: {statistics.median(totals) * 1000:.1f} ms; counts: "
                  + " ".join(f"{k}={v}" for k, v in result.counts.items()))  # fmt: skip
        assert result is not None
        hf = result.heightfield
        span_bytes = hf.col_start.nbytes + hf.smin.nbytes + hf.smax.nbytes + hf.area.nbytes
        voxels = VoxelGrid.from_heightfield(hf)
        print(f"  spans {span_bytes / 2**20:.2f} MiB vs dense bit grid {voxels.nbytes / 2**20:.2f} "
              f"MiB ({voxels.depth} voxels deep, {voxels.voxel_count():,} voxels set)")  # fmt: skip
        print_stage_memory(verts, tris, config, modes[-1][0])
    # The 1 km plane of issue 11 (two triangles, 4 million columns at 0.5 m): memory only.
    cell = 2.0 if args.quick else 0.5
    verts, tris = plane(1000.0)
    print(f"\nplane 1 km at cell_size {cell:g}: 2 tris")
    print_stage_memory(
        verts, tris, config.replace(cell_size=cell), "navmesh" if full else "heightfield"
    )
    return 0


def overlap_scene(n_tris: int, size: float = 10.0, seed: int = 0):
    """Dense overlapping geometry: n_tris triangles with every vertex uniform in a cube of
    ``size`` wu [Units: wu]. At the default cell size each column holds about 12 fragments per
    100 triangles (1e6 triangles: about 1.2e8 fragments, 3e5 in the fullest column)."""
    rng = np.random.default_rng(seed)
    verts = rng.uniform(0.0, size, size=(n_tris * 3, 3)).astype(np.float32)
    return verts, np.arange(n_tris * 3, dtype=np.int32).reshape(-1, 3)


def run_dense_bench(counts, memory: bool = False) -> int:
    """Whole bakes of `overlap_scene` for each triangle count: wall and CPU seconds, per-stage
    seconds, and with ``memory`` the traced peak (a second bake; tracing slows it down)."""
    config = NavConfig(memory_limit=64 * 1024**3)
    print(f"VoxNav dense-overlap benchmark (10 m box): numpy {np.__version__}")
    for n in counts:
        verts, tris = overlap_scene(int(n))
        wall, cpu = time.perf_counter(), time.process_time()
        result = pipeline.bake(verts, tris, config)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        stages = "  ".join(f"{k}={v:.2f}" for k, v in result.timings.items() if v >= 0.01)
        print(f"{int(n):>9,} tris: bake {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{result.heightfield.span_count:,} spans; {stages}")  # fmt: skip
        if memory:
            tracemalloc.start()
            pipeline.bake(verts, tris, config)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"           traced peak {peak / 2**20:.0f} MiB")
    return 0


def run_tiled_bench(args) -> int:
    """The 10x10 tiling (4x4 with --quick) baked in tiles on ``--workers`` processes: wall
    time next to Recast's single-threaded solo pipeline, CPU time, and peak memory (resident
    set of this process, and the largest of the worker processes as each reports it)."""
    import concurrent.futures as cf
    import multiprocessing
    import resource

    from . import tiles

    folder = _find_meshes(args.meshes)
    n = 4 if args.quick else 10
    verts, tris = tile_mesh(*read_obj(folder / "dungeon.obj"), n)
    config = NavConfig(memory_limit=16 * 1024**3)
    name = f"dungeon {n}x{n}"
    print(
        f"VoxNav tiled benchmark: {name}, {len(tris):,} tris, tile size {args.tile_size} cells, "
        f"{args.workers or tiles.default_workers()} workers, numpy {np.__version__}"
    )
    start, cpu0 = time.perf_counter(), time.process_time()
    plan = tiles.plan_tiles(verts, tris, config, args.tile_size)
    planned, cpu1 = time.perf_counter(), time.process_time()
    # Workers from a forkserver: a forked worker would count this process's memory (the whole
    # world's triangles and chunk tree) in its own resident size.
    n_workers = args.workers or tiles.default_workers()
    context = multiprocessing.get_context("forkserver")
    with cf.ProcessPoolExecutor(max_workers=n_workers, mp_context=context) as pool:
        bake = tiles.bake_plan(plan, executor=pool, workers=n_workers)
    done = time.perf_counter()
    g = plan.grid
    recast = RECAST_MS[name][1]
    total_ms = (done - start) * 1000
    print(
        f"  {g.tiles_w}x{g.tiles_h} tiles ({g.width}x{g.height} cells), {bake.tiles_built} "
        f"baked, {len(bake.tiles)} with polygons, {bake.npolys} polygons"
    )
    print(
        f"  wall: {total_ms:.0f} ms = chunking {(planned - start) * 1000:.0f} ms + tiles "
        f"{(done - planned) * 1000:.0f} ms; {total_ms / recast:.2f}x Recast's solo pipeline "
        f"({recast:.0f} ms, one thread)"
    )
    print(
        f"  CPU: chunking {cpu1 - cpu0:.1f} s; tiles {bake.tile_cpu_seconds:.1f} s (summed over "
        "tiles; wall above CPU / workers means other processes shared the cores)"
    )
    stages = {k: v for k, v in bake.timings.items() if k != "total"}
    print(
        "  stage wall s summed over tiles: " + " ".join(f"{k}={v:.2f}" for k, v in stages.items())
    )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker = bake.tile_peak_rss / 2**20
    print(f"  peak resident memory: this process {own:.0f} MiB, largest worker {worker:.0f} MiB")
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m core.bench", description="dense-overlap benchmark (see run_dense_bench)"
    )
    parser.add_argument("counts", nargs="*", type=float, default=[1e4, 3e4, 1e5, 1e6])
    parser.add_argument("--memory", action="store_true", help="also trace the peak memory")
    cli = parser.parse_args()
    raise SystemExit(run_dense_bench(cli.counts, cli.memory))
