"""Benchmarks of the Blender side, through the built and installed extension (not pytest).

    .venvs/bpy-5.0/bin/python tests/blender/bench_blender.py [--zip dist/voxnav-0.1.0.zip]

1. gather: 1M triangles from one mesh, and from 1,000 instances of a 1,000-triangle mesh
   (target <= 0.5 s);
2. writeback: 1M voxel instances written to the voxel object (target <= 1 s), plus the time
   Blender then takes to evaluate the instancing;
3. operator overhead: voxnav.build_navmesh on dungeon.obj versus the core's own time on the
   same triangles (target <= 20 %);
4. ``--tiles [N]`` (only this): parallel tiles inside Blender's Python: Build Navmesh with tiles
   of 32 cells on N x N copies of dungeon.obj (default 1), tile after tile in Blender's thread,
   in 2 threads and in 2 worker processes, interleaved ``--runs`` times: wall and main-process
   CPU seconds of the tile stage, and the ratio to tile after tile.

Prints each figure and its ratio to the target.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402


def best_of(fn, repeat=3):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), out


def mesh_from_arrays(bpy, name, verts, tris):
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(verts.shape[0])
    mesh.vertices.foreach_set("co", np.ascontiguousarray(verts, np.float32).ravel())
    n = tris.shape[0]
    mesh.loops.add(3 * n)
    mesh.loops.foreach_set("vertex_index", np.ascontiguousarray(tris, np.int32).ravel())
    mesh.polygons.add(n)
    mesh.polygons.foreach_set("loop_start", np.arange(0, 3 * n, 3, dtype=np.int32))
    mesh.polygons.foreach_set("loop_total", np.full(n, 3, np.int32))
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def grid(nx, ny, size=100.0):
    xs = np.linspace(0, size, nx + 1, dtype=np.float32)
    ys = np.linspace(0, size, ny + 1, dtype=np.float32)
    X, Y = np.meshgrid(xs, ys, indexing="xy")
    Z = (np.sin(X * 0.3) * np.cos(Y * 0.2)).astype(np.float32)
    verts = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    i = np.arange(nx)[None, :] + (nx + 1) * np.arange(ny)[:, None]
    a, b, c, d = i, i + 1, i + nx + 2, i + nx + 1
    tris = np.concatenate(
        [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
    )
    return verts, tris.astype(np.int32)


def report(label, seconds, target):
    print(f"{label:<58s} {seconds:8.3f} s   target {target:5.2f} s   ratio {seconds / target:5.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zip", help="a built extension zip (default: build one)")
    parser.add_argument(
        "--dungeon",
        default=str(
            Path(os.environ.get("VOXNAV_SHARED", harness.REPO.parent / "shared"))
            / "meshes"
            / "dungeon.obj"
        ),
    )
    parser.add_argument("--tiles", type=int, nargs="?", const=1, default=None, metavar="N")
    parser.add_argument("--runs", type=int, default=3, help="runs per kind with --tiles")
    args = parser.parse_args()
    zip_path = args.zip or harness.build_zip(Path(tempfile.mkdtemp(prefix="voxnav_bench_")))
    ext = harness.install_extension(zip_path)
    name = ext.__name__
    if args.tiles is not None:
        return bench_parallel_tiles(ext, Path(args.dungeon), args.tiles, args.runs)
    gather = importlib.import_module(f"{name}.voxnav_addon.gather")
    writeback = importlib.import_module(f"{name}.voxnav_addon.writeback")
    properties = importlib.import_module(f"{name}.voxnav_addon.properties")
    pipeline = importlib.import_module(f"{name}.core.pipeline")
    hf_mod = importlib.import_module(f"{name}.core.heightfield")
    objio = importlib.import_module(f"{name}.core.objio")
    import bpy

    # 1. gather ------------------------------------------------------------------------------
    bpy.ops.wm.read_homefile(use_empty=True)
    verts, tris = grid(708, 708)
    mesh_from_arrays(bpy, "Big", verts, tris)
    g = gather.gather(bpy.context)  # first call also builds Blender's loop-triangle cache
    best, med, g = best_of(lambda: gather.gather(bpy.context))
    report(f"gather {g.triangle_count:,} triangles, one mesh (best)", best, 0.5)

    bpy.ops.wm.read_homefile(use_empty=True)
    v_small, t_small = grid(25, 20, 2.0)
    src = mesh_from_arrays(bpy, "Tile", v_small, t_small)
    for i in range(999):
        inst = bpy.data.objects.new(f"Tile{i}", src.data)
        inst.location = ((i % 32) * 2.2, (i // 32) * 2.2, 0)
        bpy.context.scene.collection.objects.link(inst)
    gather.gather(bpy.context)
    best, med, g = best_of(lambda: gather.gather(bpy.context))
    report(f"gather {g.triangle_count:,} triangles, {g.instances:,} instances (best)", best, 0.5)

    # 2. writeback of 1M voxel instances -----------------------------------------------------
    bpy.ops.wm.read_homefile(use_empty=True)
    w = h = 1000
    hf = hf_mod.Heightfield(
        width=w,
        height=h,
        bmin=np.zeros(3, np.float32),
        bmax=np.array([w * 0.3, h * 0.3, 10], np.float32),
        cs=np.float32(0.3),
        ch=np.float32(0.2),
        col_start=np.arange(w * h + 1, dtype=np.int64),
        smin=np.zeros(w * h, np.uint16),
        smax=np.ones(w * h, np.uint16),
        area=np.where(np.arange(w * h) % 3 == 0, 0, 63).astype(np.uint8),
    )
    scene = bpy.context.scene

    def write():
        return writeback.write_voxels(scene, hf, "VOXELS", 2_000_000)

    write()
    best, med, out = best_of(write)
    report(f"write {out.drawn:,} voxel instances (best)", best, 1.0)
    t0 = time.perf_counter()
    bpy.context.view_layer.update()
    evaluated = bpy.data.objects[writeback.VOXELS_NAME].evaluated_get(
        bpy.context.evaluated_depsgraph_get()
    )
    n_inst = -1
    if hasattr(evaluated, "evaluated_geometry"):
        geometry = evaluated.evaluated_geometry()
        cloud = geometry.instances_pointcloud()
        n_inst = len(cloud.points) if cloud is not None else 0
    print(
        f"{'  then Blender evaluates the instancing (' + format(n_inst, ',') + ' instances)':<58s}"
        f" {time.perf_counter() - t0:8.3f} s"
    )

    # 3. operator overhead on dungeon.obj ----------------------------------------------------
    if not Path(args.dungeon).exists():
        print(f"skipping operator overhead: {args.dungeon} not found (set VOXNAV_SHARED)")
        return 0
    bpy.ops.wm.read_homefile(use_empty=True)
    dv, dt = objio.read_obj(args.dungeon)
    mesh_from_arrays(bpy, "Dungeon", dv, dt)
    config = properties.to_config(bpy.context.scene.voxnav)
    g = gather.gather(bpy.context)
    assert g.triangle_count == dt.shape[0]
    bpy.ops.voxnav.build_navmesh()  # warm-up (imports, node group, materials)
    core_times, op_times, own_times = [], [], []
    for _ in range(5):
        t0 = time.perf_counter()
        pipeline.bake(g.verts, g.tris, config)
        core_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        bpy.ops.voxnav.build_navmesh()
        wall = time.perf_counter() - t0
        op_times.append(wall)
        stages = {i.name: i.seconds for i in bpy.context.scene.voxnav.last_timings}
        inside = sum(v for k, v in stages.items() if k not in ("gather", "writeback"))
        own_times.append(wall - inside)
    core_t, op_t, own_t = min(core_times), min(op_times), min(own_times)
    print(
        f"dungeon.obj: core alone {core_t:.3f} s (best of 5), operator {op_t:.3f} s; "
        f"the operator's own work (gather, writeback, reports) {own_t:.3f} s; last run: "
        f"gather {stages['gather']:.3f} s, writeback {stages['writeback']:.3f} s"
    )
    print(
        f"{'operator overhead: own work / core time':<58s} {own_t / core_t * 100:7.1f} %   "
        f"target 20 %   ratio {own_t / core_t / 0.2:5.2f}"
    )
    print(
        f"{'operator overhead: best wall / best core - 1 (noisy)':<58s} "
        f"{(op_t / core_t - 1) * 100:7.1f} %"
    )
    return 0


def bench_parallel_tiles(ext, dungeon: Path, copies: int, runs: int) -> int:
    """Section 4 of the module docstring."""
    import bpy

    name = ext.__name__
    bake = importlib.import_module(f"{name}.voxnav_addon.bake")
    parallel = importlib.import_module(f"{name}.voxnav_addon.parallel")
    objio = importlib.import_module(f"{name}.core.objio")
    bench = importlib.import_module(f"{name}.core.bench")
    bpy.ops.wm.read_homefile(use_empty=True)
    verts, tris = objio.read_obj(dungeon)
    if copies > 1:
        verts, tris = bench.tile_mesh(verts, tris, copies)
    mesh_from_arrays(bpy, "Dungeon", verts, tris)
    bpy.context.scene.voxnav.tile_size = 32
    print(f"sys.executable {sys.executable}; worker Python: {parallel.worker_python()[1]}")
    kinds = (("NONE", 1), ("THREADS", 2), ("PROCESSES", 2))
    figures: dict[str, list[tuple[float, float]]] = {k: [] for k, _ in kinds}
    for run in range(runs):
        for kind, workers in kinds if run % 2 == 0 else kinds[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            steps = bake.tiled_bake_steps(bpy.context, workers=workers, kind=kind)
            while True:
                try:
                    next(steps)
                except StopIteration as stop:
                    outcome = stop.value
                    break
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            tiles = outcome.timings["tiles"]
            figures[kind].append((tiles, cpu))
            print(
                f"  {kind:9s} x{workers}: tiles {tiles:6.2f} s wall (bake {wall:6.2f} s), "
                f"main-process CPU {cpu:6.2f} s, {outcome.counts['tiles']} tiles",
                flush=True,
            )
    base = statistics.median(t for t, _ in figures["NONE"])
    print(f"{len(tris):,} triangles, tile size 32, median of {runs}:")
    for kind, workers in kinds:
        wall = statistics.median(t for t, _ in figures[kind])
        cpu = statistics.median(c for _, c in figures[kind])
        print(
            f"  {kind:9s} x{workers}: tiles {wall:6.2f} s wall ({base / wall:4.2f}x tile after "
            f"tile), main-process CPU {cpu:6.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
