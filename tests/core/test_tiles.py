"""Tiled bakes (core.tiles, core.chunky) against RecastDemo's tile mesh (dungeon_tiled.npz)."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import itertools
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from core import chunky, limits, pipeline, tiles
from core.__main__ import main
from core.config import NavConfig
from core.errors import VoxNavError
from core.objio import read_obj

from .refdata import load_reference, mesh_path

TILE_KEYS_PREFIX = ("tile_", "tilegrid_", "tiled_", "count_tile")


@functools.cache
def dungeon():
    return read_obj(mesh_path("dungeon"), recast_frame=True)


@functools.cache
def dungeon_tiled() -> tiles.TiledBake:
    verts, tris = dungeon()
    return tiles.bake_tiled(verts, tris, NavConfig(), 32, workers=1)


def _literal_msort(keys, items):
    """glibc's msort_with_tmp, literally, with RecastDemo's (int)(a - b) comparator."""
    items = list(items)
    if len(items) <= 1:
        return items
    n1 = len(items) // 2
    left = _literal_msort(keys, items[:n1])
    right = _literal_msort(keys, items[n1:])
    out = []
    while left and right:
        diff = np.float32(np.float32(keys[left[0]]) - np.float32(keys[right[0]]))
        if int(diff) <= 0:
            out.append(left.pop(0))
        else:
            out.append(right.pop(0))
    return out + left + right


def test_msort_matches_literal_glibc_order():
    rng = np.random.default_rng(3)
    for trial in range(12):
        sizes = rng.integers(1, 300, rng.integers(1, 6))
        # Keys clustered within a unit, so the comparator's ties and non-transitivity matter
        # (and the vectorized merge's first guess is often wrong).
        keys = (rng.integers(0, 4, sizes.sum()) + rng.random(sizes.sum()) * 1.6).astype(np.float32)
        if trial % 3 == 0:
            keys = np.round(keys * 4) / 4  # exact differences of 1.0 and below
        order = rng.permutation(keys.shape[0]).astype(np.int64)
        lo = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        expect = np.concatenate(
            [
                _literal_msort(keys, order[a : a + n].tolist())
                for a, n in zip(lo, sizes, strict=True)
            ]
        )
        okey, tkey = chunky._f32_order_keys(keys), chunky._take_right_bound(keys)
        chunky._msort_segments(order, okey, tkey, lo, sizes)
        assert order.tolist() == expect.tolist()


def _literal_partition(verts, tris, per_chunk=chunky.TRIS_PER_CHUNK):
    """RecastDemo's PartitionMesh recursion, literally; returns (tri order, leaf sizes)."""
    xy = verts[:, :2][tris]
    tmin, tmax = xy.min(axis=1), xy.max(axis=1)
    order, leaves = [], []

    def subdivide(ids):
        bmin, bmax = tmin[ids].min(axis=0), tmax[ids].max(axis=0)
        if len(ids) <= per_chunk:
            order.extend(ids)
            leaves.append(len(ids))
            return
        axis = 0 if (bmax[0] - bmin[0]) >= (bmax[1] - bmin[1]) else 1
        ids = _literal_msort(tmin[:, axis], ids)
        subdivide(ids[: len(ids) // 2])
        subdivide(ids[len(ids) // 2 :])

    subdivide(list(range(tris.shape[0])))
    return np.array(order), np.array(leaves)


def test_partition_matches_literal_recursion():
    verts, tris = dungeon()
    tris = tris[:3000]
    pm = chunky.partition_mesh(verts, tris, 64)
    order, leaves = _literal_partition(verts, tris, 64)
    assert np.array_equal(pm.tri_order, order)
    assert np.array_equal(pm.node_num_tris[pm.leaves()], leaves)


def _escape_traversal(pm: chunky.PartitionedMesh, lo, hi) -> list[int]:
    """RecastDemo's GetNodesOverlappingRect, literally (escape indices)."""
    out, i = [], 0
    while i < pm.nnodes:
        overlap = (
            lo[0] <= pm.node_bmax[i, 0]
            and hi[0] >= pm.node_bmin[i, 0]
            and lo[1] <= pm.node_bmax[i, 1]
            and hi[1] >= pm.node_bmin[i, 1]
        )
        leaf = pm.node_tri_index[i] >= 0
        if leaf and overlap:
            out.append(i)
        i = i + 1 if (overlap or leaf) else i - int(pm.node_tri_index[i])
    return out


def test_chunk_tree_shape_and_rect_query():
    verts, tris = dungeon()
    pm = chunky.partition_mesh(verts, tris)
    leaves = pm.leaves()
    assert sorted(pm.tri_order.tolist()) == list(range(tris.shape[0]))
    assert pm.node_num_tris[leaves].sum() == tris.shape[0]
    assert pm.max_tris_per_chunk <= chunky.TRIS_PER_CHUNK
    rng = np.random.default_rng(5)
    bmin, bmax = verts.min(axis=0), verts.max(axis=0)
    for _ in range(40):
        a = rng.uniform(bmin[:2], bmax[:2]).astype(np.float32)
        b = (a + rng.uniform(0, 15, 2)).astype(np.float32)
        assert pm.nodes_overlapping_rect(a, b).tolist() == _escape_traversal(pm, a, b)


@pytest.mark.parametrize("local_min_cells", [None, 0])
def test_tiled_dungeon_equals_recastdemo(local_min_cells, monkeypatch):
    """RecastDemo's tiled dungeon, array for array; also with every tile's detail heights read
    locally (its 32-cell tiles' patches are below `LOCAL_MIN_CELLS`: whole by default), where
    the tile border shifts every cell read."""
    from core import detail

    ref = load_reference("dungeon_tiled")
    if local_min_cells is None:
        bake = dungeon_tiled()
    else:
        monkeypatch.setattr(detail, "LOCAL_MIN_CELLS", local_min_cells)
        bake = tiles.bake_tiled(*dungeon(), NavConfig(), 32, workers=1)
    got = tiles.tiled_dump_arrays(bake)
    names = [k for k in ref if k.startswith(TILE_KEYS_PREFIX)]
    assert sorted(names) == sorted(got)
    for name in names:
        assert got[name].shape == ref[name].shape, name
        assert np.array_equal(got[name], ref[name]), name


def test_dump_cli_writes_the_reference_arrays(tmp_path):
    ref = load_reference("dungeon_tiled")
    out = tmp_path / "tiled.npz"
    args = ["dump", str(mesh_path("dungeon")), "--recast-frame", "--tile-size", "32"]
    assert main([*args, "--workers", "1", "--out", str(out)]) == 0
    with np.load(out) as got:
        for name in ref:
            if name.startswith(TILE_KEYS_PREFIX):
                assert np.array_equal(got[name], ref[name]), name
        # Every reference array but the query answers and the reference's own metadata, to
        # the bit: the tiled dump had no param_*, cfg_* nor count_width .. count_ntris.
        queries = ("q_", "near_", "path_", "straight_", "ray_", "wall_", "height", "meta_")
        for name in ref:
            if not name.startswith(queries):
                assert name in got.files and np.array_equal(got[name], ref[name]), name


def test_tile_size_too_small_names_the_minimum(tmp_path, capsys):
    verts, tris = dungeon()
    with pytest.raises(VoxNavError, match=f"{tiles.MIN_TILE_SIZE}..4096"):
        tiles.bake_tiled(verts, tris, NavConfig(), 4, workers=1)
    out = tmp_path / "x.bin"
    code = main(["bake", str(mesh_path("dungeon")), "--tile-size", "4", "--out", str(out)])
    assert code == 2 and not out.exists()
    assert f"tile_size >= {tiles.MIN_TILE_SIZE}" in capsys.readouterr().err


class _FailingExecutor(cf.Executor):
    """Runs tiles in this thread, raising on one tile."""

    def __init__(self, bad: tuple[int, int]):
        self.bad = bad

    def submit(self, fn, /, *args, **kwargs):
        future: cf.Future = cf.Future()
        job = args[0]
        if (job.tx, job.ty) == self.bad:
            future.set_exception(MemoryError("worker ran out of memory"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


def test_tiles_far_from_the_origin_bake():
    """nav_test 1000 km away: every triangle takes the polygon-by-polygon clipping path there,
    and a tile whose chunks' triangles only touch its border makes no fragment at all (this
    failed with an IndexError before). The tiled bake finishes and builds polygons."""
    verts, tris = read_obj(mesh_path("nav_test"))
    verts = verts + np.array([1e6, 1e6, 0], np.float32)
    bake = tiles.bake_tiled(verts, tris, NavConfig(), 64, workers=1)
    assert bake.npolys > 100


def test_failing_tile_is_named_and_nothing_written(tmp_path):
    from core.export import write_tiled_detour_bin

    verts, tris = dungeon()
    target = tmp_path / "nav.bin"
    target.write_bytes(b"previous navmesh")
    with pytest.raises(tiles.TileBakeError, match=r"tile \(3, 2\) failed.*MemoryError"):
        bake = tiles.bake_tiled(verts, tris, NavConfig(), 32, executor=_FailingExecutor((3, 2)))
        write_tiled_detour_bin(target, bake)
    assert target.read_bytes() == b"previous navmesh"


@pytest.mark.parametrize(
    ("size", "needle"),
    [
        (0, "got tile_size 0: use tile_size >= 8"),
        (4097, "got tile_size 4097: use tile_size <= 4096"),
        (32.5, "tile_size must be a whole number of cells, got 32.5"),
    ],
)
def test_tile_size_messages_point_the_right_way(size, needle):
    # 4097 said "use tile_size >= 8"; 0 in the API said "must be 0 (one solo mesh) or ...".
    with pytest.raises(VoxNavError, match=re.escape(needle)):
        tiles.check_tile_size(size)


def test_a_shut_down_or_wrong_executor_is_named():
    """A pool that refuses jobs (shut down, or broken by a killed worker) raised its own
    RuntimeError / BrokenProcessPool at the first tile's submit (outside the tile's error
    handling); a string or a pool class, an AttributeError. Now TileBakeError naming the
    tile, and VoxNavError naming the executor, before any work."""
    verts, tris = dungeon()
    pool = cf.ThreadPoolExecutor(2)
    pool.shutdown()
    with pytest.raises(tiles.TileBakeError, match=r"tile \(\d+, \d+\) failed.*after shutdown"):
        tiles.bake_tiled(verts, tris, NavConfig(), 32, executor=pool)
    for wrong in ("pool", cf.ThreadPoolExecutor):
        with pytest.raises(VoxNavError, match="executor must be a concurrent.futures.Executor"):
            tiles.bake_tiled(verts, tris, NavConfig(), 32, executor=wrong)


def test_executor_bake_equals_local_bake():
    verts, tris = dungeon()
    with cf.ThreadPoolExecutor(2) as pool:
        threaded = tiles.bake_tiled(verts, tris, NavConfig(), 32, executor=pool)
    a = tiles.tiled_dump_arrays(threaded)
    b = tiles.tiled_dump_arrays(dungeon_tiled())
    assert all(np.array_equal(a[k], b[k]) for k in b)


def test_rebuild_from_cached_compact_equals_tile():
    verts, tris = dungeon()
    plan = tiles.plan_tiles(verts, tris, NavConfig(), 32)
    first = dungeon_tiled().tiles[0]
    job = plan.job(first.tx, first.ty, keep_compact=True)
    baked = tiles.bake_tile_job(job)
    assert baked.compact is not None
    again = tiles.bake_tile_from_compact(baked.tx, baked.ty, baked.compact, NavConfig())
    for name in ("verts", "polys", "regs", "areas"):
        assert np.array_equal(getattr(again.polymesh, name), getattr(first.polymesh, name))
    assert np.array_equal(again.detail.verts, first.detail.verts)


QUERY_PREFIXES = ("near_", "height", "wall_", "path_", "straight_", "ray_")


def test_tiled_queries_equal_detour(tmp_path):
    ref = load_reference("dungeon_tiled")
    queries = tmp_path / "q.npz"
    np.savez(queries, **{k: v for k, v in ref.items() if k.startswith("q_")})
    out = tmp_path / "answers.npz"
    args = ["query", str(mesh_path("dungeon")), "--recast-frame", "--tile-size", "32"]
    assert main([*args, "--workers", "1", "--queries", str(queries), "--out", str(out)]) == 0
    with np.load(out) as got:
        names = [k for k in ref if k.startswith(QUERY_PREFIXES)]
        assert len(names) == 31
        for name in names:
            assert got[name].shape == ref[name].shape, name
            assert np.array_equal(got[name], ref[name], equal_nan=got[name].dtype.kind == "f"), name


def test_tiled_navmesh_links_across_tiles():
    bake = dungeon_tiled()
    nav = bake.navmesh()
    params = bake.navmesh_params()
    assert (params.max_tiles, params.max_polys) == (128, 32768)
    # Polygons of different tiles are linked across the shared borders, and both ways.
    owner = np.repeat(np.arange(nav.poly_tile.shape[0]), np.diff(nav.link_start))
    cross = nav.poly_tile[nav.link_ref] != nav.poly_tile[owner]
    ext = set(zip(owner[cross].tolist(), nav.link_ref[cross].tolist(), strict=True))
    assert len(ext) > 50
    assert {(b, a) for a, b in ext} == ext


def test_tiled_bin_round_trip(tmp_path):
    from core.export import write_tiled_detour_bin
    from core.nav import binio
    from core.nav.navmesh import NavMesh, NavMeshParams

    bake = dungeon_tiled()
    for frame in ("recast", "engine"):
        path = tmp_path / f"{frame}.bin"
        write_tiled_detour_bin(path, bake, frame=frame)
        mset = binio.read_navmesh_set(path)
        assert len(mset.tiles) == len(bake.tiles) == 41
        assert mset.params.max_tiles == 128 and mset.params.max_polys == 32768
        assert np.isclose(mset.params.tile_width, 32 * 0.3)
        xs = sorted((t.tile_x, t.tile_y) for t in mset.tiles)
        if frame == "recast":
            assert xs == sorted((t.tx, t.ty) for t in bake.tiles)
            for a, b in zip(mset.tiles, bake.navdata(), strict=True):
                assert np.array_equal(a.poly_neis, b.poly_neis)
                assert np.array_equal(a.verts, b.verts)
        else:
            assert xs == sorted((t.tx, 10 - t.ty) for t in bake.tiles)
        # Loaded back, the tiles link across their borders as many times as the bake's own.
        nav = NavMesh(NavMeshParams(**vars(mset.params)))
        for tile in mset.tiles:
            nav.add_tile(tile)
        assert _external_links(nav) == _external_links(bake.navmesh())


def _external_links(nav) -> int:
    owner = np.repeat(nav.poly_tile, np.diff(nav.link_start))
    return int(np.count_nonzero(nav.poly_tile[nav.link_ref] != owner))


def _require_distributed():
    try:
        import distributed
    except ImportError:
        message = "dask distributed is not installed (pip install -e .[dev])"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return distributed


def test_dask_local_cluster_bakes_the_4x4_tiling_like_a_local_bake():
    distributed = _require_distributed()
    from core.bench import tile_mesh

    verts, tris = read_obj(mesh_path("dungeon"))
    verts, tris = tile_mesh(verts, tris, 4)
    plan = tiles.plan_tiles(verts, tris, NavConfig(), 256)
    local = tiles.bake_plan(plan, workers=1)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = tiles.bake_plan(plan, executor=client.get_executor())
    assert len(local.tiles) == len(remote.tiles) > 10
    a, b = tiles.tiled_dump_arrays(local), tiles.tiled_dump_arrays(remote)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def _literal_merge(keys, left, right):
    out = []
    while left and right:
        diff = np.float32(np.float32(keys[left[0]]) - np.float32(keys[right[0]]))
        out.append(left.pop(0) if int(diff) <= 0 else right.pop(0))
    return out + left + right


def _merge_rows(keys, runs, width):
    """chunky._merge_round on rows of item ids [(left run, right run), ...], each run padded
    to ``width``; returns each merged row without its pads."""
    okey, tkey = chunky._f32_order_keys(keys), chunky._take_right_bound(keys)
    n_rows = len(runs)
    ids = np.zeros((2, n_rows, width), dtype=np.int64)
    packed = np.full((2, n_rows, width), chunky._PAD_KEYS, dtype=np.int64)
    for r, (left, right) in enumerate(runs):
        for side, run in ((1, left), (0, right)):
            ids[side, r, : len(run)] = run
            packed[side, r, : len(run)] = chunky._pack_keys(okey[run], tkey[run])
    out_ids, _ = chunky._merge_round(ids.ravel(), packed.ravel(), n_rows, width, 2 * width, False)
    rows = out_ids.reshape(n_rows, 2 * width)
    return [rows[r, : len(left) + len(right)].tolist() for r, (left, right) in enumerate(runs)]


def test_merge_round_on_arbitrary_runs_is_the_sequential_merge():
    # Runs that are not sorted: the running maxima must still give glibc's sequential merge.
    rng = np.random.default_rng(11)
    for _ in range(30):
        n1, n2 = (int(x) for x in rng.integers(1, 60, 2))
        keys = (rng.random(n1 + n2) * 4).astype(np.float32)
        left, right = list(range(n1)), list(range(n1, n1 + n2))
        expect = _literal_merge(keys, list(left), list(right))
        assert _merge_rows(keys, [(left, right)], max(n1, n2)) == [expect]


def test_process_pool_bake_equals_local_bake():
    verts, tris = dungeon()
    pooled = tiles.bake_tiled(verts, tris, NavConfig(), 32, workers=2)
    a = tiles.tiled_dump_arrays(pooled)
    b = tiles.tiled_dump_arrays(dungeon_tiled())
    assert all(np.array_equal(a[k], b[k]) for k in b)
    # Each worker reports its CPU time and peak memory with its tiles (an executor's workers
    # need not be this process's children, e.g. a forkserver's or a cluster's).
    assert pooled.tile_cpu_seconds > 0
    if os.path.exists("/proc/self/status"):
        assert pooled.tile_peak_rss > 2**20


def test_merge_round_of_many_padded_rows_is_the_sequential_merge():
    # One round merging many rows of runs of unequal lengths (the rest of each row padded),
    # with negative and clustered keys: every row must be glibc's sequential merge.
    rng = np.random.default_rng(17)
    for trial in range(20):
        n_rows = int(rng.integers(1, 40))
        width = int(rng.integers(1, 30))
        lengths = rng.integers(0, width + 1, (n_rows, 2))
        size = int(lengths.sum())
        keys = (rng.integers(-3, 3, size) + rng.random(size) * 1.5).astype(np.float32)
        if trial % 2:
            keys = np.round(keys * 2) / 2  # exact differences of 1.0
        items = rng.permutation(size).tolist()
        runs = []
        for n1, n2 in lengths:
            runs.append((items[:n1], items[n1 : n1 + n2]))
            items = items[n1 + n2 :]
        expect = [_literal_merge(keys, list(left), list(right)) for left, right in runs]
        assert _merge_rows(keys, runs, width) == expect


@pytest.mark.parametrize("workers", [1, 2])
def test_msort_in_blocks_matches_literal_glibc_order(monkeypatch, workers):
    # Tiny blocks: the lower levels of the merge sort run block by block (on one or two
    # threads), the upper ones on the whole; the order must not change.
    monkeypatch.setattr(chunky, "_BLOCK_ITEMS", 16)
    monkeypatch.setattr(chunky, "WORKERS", workers)
    rng = np.random.default_rng(29)
    for _ in range(6):
        sizes = rng.integers(1, 400, rng.integers(1, 4))
        keys = (rng.integers(0, 6, sizes.sum()) + rng.random(sizes.sum()) * 1.6).astype(np.float32)
        order = rng.permutation(keys.shape[0]).astype(np.int64)
        lo = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        runs = zip(lo, sizes, strict=True)
        expect = np.concatenate([_literal_msort(keys, order[a : a + n].tolist()) for a, n in runs])
        okey, tkey = chunky._f32_order_keys(keys), chunky._take_right_bound(keys)
        chunky._msort_segments(order, okey, tkey, lo, sizes)
        assert order.tolist() == expect.tolist()


def test_partition_of_random_soups_matches_literal_recursion():
    # Random triangles around the origin with coordinates clustered within a unit, several
    # chunk sizes: the vectorized tree equals RecastDemo's recursion with glibc's qsort.
    rng = np.random.default_rng(23)
    for trial in range(6):
        n_tris = int(rng.integers(50, 1500))
        centers = rng.integers(-4, 4, (n_tris, 1, 3)) + rng.random((n_tris, 1, 3)) * 1.3
        corners = centers + rng.normal(0, 0.4 + trial * 0.3, (n_tris, 3, 3))
        verts = corners.reshape(-1, 3).astype(np.float32)
        tris = np.arange(n_tris * 3, dtype=np.int64).reshape(-1, 3)
        per_chunk = int(rng.choice([1, 3, 16, 64]))
        pm = chunky.partition_mesh(verts, tris, per_chunk)
        order, leaves = _literal_partition(verts, tris, per_chunk)
        assert np.array_equal(pm.tri_order, order)
        assert np.array_equal(pm.node_num_tris[pm.leaves()], leaves)


@pytest.mark.parametrize("subtrees", [2, 3, 4])
def test_partition_on_an_executor_matches_the_serial_tree(monkeypatch, subtrees):
    # The root's halves and the subtrees sorted on worker processes (one thread each), merged
    # and stitched here: the same tree as sorting every depth in this process.
    verts, tris = dungeon()
    monkeypatch.setattr(chunky, "PARALLEL_MIN_TRIANGLES", 0)
    serial = chunky.partition_mesh(verts, tris, 64)
    with cf.ProcessPoolExecutor(2) as pool:
        split = chunky.partition_mesh(verts, tris, 64, executor=pool, subtrees=subtrees)
    for field in ("node_bmin", "node_bmax", "node_tri_index", "node_num_tris", "tri_order"):
        assert np.array_equal(getattr(split, field), getattr(serial, field)), field
    # The workers report the CPU of their parts with them (another process's CPU is not
    # this one's to see); a tree sorted here has none.
    assert split.sort_worker_cpu_seconds > 0 and split.sort_cpu_seconds > 0
    assert serial.sort_worker_cpu_seconds == 0 and serial.sort_cpu_seconds > 0
    order, leaves = _literal_partition(verts, tris[:3000], 64)
    first = chunky.partition_mesh(verts, tris[:3000], 64, executor=cf.ThreadPoolExecutor(2))
    assert np.array_equal(first.tri_order, order)
    assert np.array_equal(first.node_num_tris[first.leaves()], leaves)


def test_running_max_matches_numpy_accumulate():
    # The blocked running maximum of the merge rounds: lengths below, at and around the
    # blocked path's start and its block size, random, rising and falling values.
    rng = np.random.default_rng(12)
    for n in (0, 1, 31, 32, 33, 4095, 4096, 4097, 4127, 70_001):
        for values in (
            rng.integers(-(1 << 40), 1 << 40, n),
            np.sort(rng.integers(0, 1000, n)),
            np.sort(rng.integers(0, 1000, n))[::-1].copy(),
        ):
            got = values.astype(np.int64)
            chunky._running_max(got)
            assert np.array_equal(got, np.maximum.accumulate(values)), n


def test_last_merge_of_halves_matches_glibc_msort():
    # Keys within a unit of each other (the comparator's non-transitive ties) in runs of odd
    # and even lengths: sorting the halves apart and merging them equals one msort.
    rng = np.random.default_rng(8)
    for n in (2, 3, 17, 256, 1001):
        key = (rng.integers(0, 6, n) + rng.random(n) * 1.5).astype(np.float32)
        keys = chunky._pack_keys(chunky._f32_order_keys(key), chunky._take_right_bound(key))
        ids = np.arange(n, dtype=np.int32)
        whole = chunky._msort_runs(ids, keys, np.array([n]))
        half = n // 2
        left = chunky._msort_runs(ids[:half], keys[:half], np.array([half]))
        right = chunky._msort_runs(ids[half:], keys[half:], np.array([n - half]))
        assert np.array_equal(chunky._merge_sorted_runs(left, right, keys), whole)


def test_worker_msort_of_float_keys_matches_msort_of_packed_keys():
    # A worker's part of the root's sort gets the float keys and makes their order keys and
    # take-right bounds itself: the same order as the packed keys give (ties within a unit,
    # negatives, both zeros).
    rng = np.random.default_rng(41)
    for n in (1, 2, 3, 17, 1000):
        key = (rng.integers(-3, 3, n) + rng.random(n) * 1.5).astype(np.float32)
        key[: min(n, 3)] = np.array([-0.0, 0.0, -0.5], dtype=np.float32)[: min(n, 3)]
        keys = chunky._pack_keys(chunky._f32_order_keys(key), chunky._take_right_bound(key))
        expect = chunky._msort_runs(np.arange(n, dtype=np.int32), keys, np.array([n]))
        got = chunky._msort_values(key)
        assert got.dtype == np.int32 and np.array_equal(got, expect), n


def test_node_numbering_matches_the_literal_recursion():
    # The depth-first numbering worked out depth by depth from the counts equals RecastDemo's
    # recursion (bounds, escape indices, counts) for odd and even sizes and small chunks; the
    # nodes' bounds are found by (first place, count) whatever order they were recorded in.
    rng = np.random.default_rng(31)
    for m, per_chunk in ((1, 1), (2, 1), (3, 16), (257, 256), (1000, 3), (5000, 64), (70_001, 256)):
        table = chunky.NodeTable()
        lo, n = np.zeros(1, dtype=np.int64), np.full(1, m, dtype=np.int64)
        while lo.size:
            table.add(lo[::-1], n[::-1], rng.random((lo.size, 4)).astype(np.float32))
            inner = n > per_chunk
            lo, n = lo[inner], n[inner]
            half = n // 2
            lo = np.stack([lo, lo + half], axis=1).ravel()
            n = np.stack([half, n - half], axis=1).ravel()
        fast = chunky._number_nodes(m, per_chunk, table)
        literal = chunky._visit_nodes(m, per_chunk, table)
        for got, expect in zip(fast, literal, strict=True):
            assert got.dtype == expect.dtype and np.array_equal(got, expect), (m, per_chunk)


def test_triangle_bounds_in_pieces_on_threads(monkeypatch):
    verts, tris = dungeon()
    corners = verts[:, :2][tris]
    expect = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    monkeypatch.setattr(chunky, "_BOUNDS_PIECE", 1000)  # 11 pieces on two threads
    got = chunky._triangle_bounds(verts, tris)
    assert got.dtype == np.float32 and np.array_equal(got, expect)


def test_mesh_key_reads_every_byte_whether_hashed_on_threads_or_not(monkeypatch):
    # The reuse key hashes the bytes in two halves (on two threads from a size on): the same
    # key either way, and any changed value, shape or chunk size gives another.
    verts, tris = dungeon()
    key = chunky._mesh_key(verts, tris, 256)
    monkeypatch.setattr(chunky, "_PARALLEL_DIGEST_BYTES", 0)
    assert chunky._mesh_key(verts, tris, 256) == key
    keys = {key, chunky._mesh_key(verts, tris, 128), chunky._mesh_key(verts, tris[:-1], 256)}
    for array, place in ((verts, 0), (verts, -1), (tris, 0), (tris, -1)):
        changed = array.copy()
        changed.reshape(-1)[place] += 1
        pair = (changed, tris) if array is verts else (verts, changed)
        keys.add(chunky._mesh_key(*pair, 256))
    assert len(keys) == 7


TREE_FIELDS = ("node_bmin", "node_bmax", "node_tri_index", "node_num_tris", "tri_order")


def test_partition_reuse_keeps_the_tree_of_the_same_triangles():
    # A rebake of the same triangles takes the kept tree (the same object, read-only); any
    # change to the triangles, or the chunk size, sorts again and gives the fresh tree.
    verts, tris = dungeon()
    chunky.forget_reused()
    first = chunky.partition_mesh(verts, tris, 64, reuse=True)
    again = chunky.partition_mesh(verts.copy(), tris.copy(), 64, reuse=True)
    assert again is first
    with pytest.raises(ValueError):
        first.tri_order[0] = 1
    moved = verts.copy()
    moved[tris[5, 0], 0] += 3.0
    for args in ((moved, tris, 64), (verts, tris[::-1].copy(), 64), (verts, tris, 32)):
        tree = chunky.partition_mesh(*args, reuse=True)
        assert tree is not first
        fresh = chunky.partition_mesh(*args)
        for field in TREE_FIELDS:
            assert np.array_equal(getattr(tree, field), getattr(fresh, field)), field
    chunky.forget_reused()
    assert chunky.partition_mesh(verts, tris, 64, reuse=True) is not first
    chunky.forget_reused()


def test_tiled_rebake_reuses_the_chunk_tree():
    # Two plans of the same triangles with other settings share the chunk tree; their tiles
    # equal bakes planned without reuse.
    verts, tris = dungeon()
    chunky.forget_reused()
    plan = tiles.plan_tiles(verts, tris, NavConfig(), 32)
    other = tiles.plan_tiles(verts, tris, NavConfig(cell_size=0.25, agent_radius=0.4), 48)
    assert other.chunks is plan.chunks
    alone = tiles.plan_tiles(verts, tris, other.config, 48, reuse_chunks=False)
    assert alone.chunks is not plan.chunks
    reused = tiles.bake_plan(other, workers=1)
    fresh = tiles.bake_plan(alone, workers=1)
    assert [(t.tx, t.ty) for t in reused.tiles] == [(t.tx, t.ty) for t in fresh.tiles]
    for a, b in zip(reused.tiles, fresh.tiles, strict=True):
        assert np.array_equal(a.polymesh.polys, b.polymesh.polys)
        assert np.array_equal(a.polymesh.verts, b.polymesh.verts)
        assert np.array_equal(a.detail.verts, b.detail.verts)
    chunky.forget_reused()


class _BrokenPool(cf.Executor):
    """Runs the first ``good`` jobs, then fails: at submit, or in the future's result."""

    def __init__(self, good: int, at_submit: bool):
        self.good, self.at_submit, self.calls = good, at_submit, 0

    def submit(self, fn, /, *args, **kwargs):
        self.calls += 1
        future: cf.Future = cf.Future()
        if self.calls > self.good:
            if self.at_submit:
                raise RuntimeError("the cluster went away")
            future.set_exception(RuntimeError("a worker died"))
            return future
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.parametrize(("good", "at_submit"), [(0, True), (1, False), (2, False), (3, True)])
def test_partition_on_a_failing_executor_sorts_here(monkeypatch, good, at_submit):
    # A broken executor at any point of the chunk sort: the tree is sorted in this process,
    # the same tree.
    verts, tris = dungeon()
    monkeypatch.setattr(chunky, "PARALLEL_MIN_TRIANGLES", 0)
    serial = chunky.partition_mesh(verts, tris, 64)
    failing = _BrokenPool(good, at_submit)
    split = chunky.partition_mesh(verts, tris, 64, executor=failing)
    assert failing.calls > good
    for field in ("node_bmin", "node_bmax", "node_tri_index", "node_num_tris", "tri_order"):
        assert np.array_equal(getattr(split, field), getattr(serial, field)), field


def _floor(z: float, size: float = 20.0):
    quad = np.array([[0, 0, z], [size, 0, z], [size, size, z], [0, size, z]], np.float32)
    return quad, np.array([[0, 1, 2], [0, 2, 3]], np.int32)


def test_tiled_bake_refuses_floors_above_the_height_range_as_the_solo_bake_does():
    # A floor at z = 2000 over one at 0: at cell_height 0.2 the 13-bit span heights end at
    # 1638.2, so the upper floor's navmesh would be clamped there without a word.
    low, tris = _floor(0.0)
    high, _ = _floor(2000.0)
    verts = np.concatenate([low, high])
    tris = np.concatenate([tris, tris + 4])
    from core.pipeline import bake

    with pytest.raises(VoxNavError, match="walkable triangles reach up to z = 2000") as solo:
        bake(verts, tris, NavConfig())
    with pytest.raises(VoxNavError) as tiled:
        tiles.plan_tiles(verts, tris, NavConfig(), 32)
    assert str(tiled.value) == str(solo.value)
    # Below the range: no refusal, and only then is the marking needed.
    bake_ok = tiles.bake_tiled(verts, tris, NavConfig(cell_height=0.25), 32, workers=1)
    heights = np.concatenate([t.polymesh.world_verts()[:, 2] for t in bake_ok.tiles])
    assert heights.max() > 1999.0


def test_tiled_bake_checks_float32_precision_as_the_solo_bake_does():
    from core.pipeline import bake

    verts, tris = _floor(0.0)
    far = verts + np.array([3e7, 0, 0], np.float32)  # float32 steps of 2 m there
    with pytest.raises(VoxNavError, match="recentre the geometry") as solo:
        bake(far, tris, NavConfig())
    with pytest.raises(VoxNavError) as tiled:
        tiles.bake_tiled(far, tris, NavConfig(), 32, workers=1)
    assert str(tiled.value) == str(solo.value)
    # Closer (float32 steps of 1/16 m): baked, with the solo bake's warning in the bake's.
    near = verts + np.array([1e6, 0, 0], np.float32)
    warned = bake(near, tris, NavConfig()).warnings
    assert any("from the origin" in w for w in warned)
    assert set(warned) <= set(tiles.bake_tiled(near, tris, NavConfig(), 32, workers=1).warnings)


def test_a_stray_vertex_far_away_bakes_only_the_tiles_near_the_level():
    # One unused vertex 100 km away lays a grid of 10^8 tiles of 32 cells: the bake visits
    # only the tiles near the chunks (it took hours, one Python step per empty tile) and
    # gives the level's tiles as without the vertex.
    verts, tris = dungeon()
    plain = tiles.bake_tiled(verts, tris, NavConfig(), 32, workers=1)
    stray = np.concatenate([verts, np.array([[1e5, 1e5, 0]], np.float32)])
    plan = tiles.plan_tiles(stray, tris, NavConfig(), 32)
    assert plan.grid.tiles_w * plan.grid.tiles_h > 10**8
    assert len(plan.tiles_to_bake()) < 1000
    # A giant triangle under it all: every tile, listed as it is read.
    every = tiles.EveryTile(plan.grid)
    assert len(every) == plan.grid.tiles_w * plan.grid.tiles_h
    assert (0, 0) in every and (plan.grid.tiles_w, 0) not in every
    assert list(itertools.islice(every, 3)) == [(0, 0), (1, 0), (2, 0)]
    seen = []
    bake = tiles.bake_plan(plan, workers=1, progress=lambda done, total, t: seen.append(total))
    assert seen and set(seen) == {len(plan.tiles_to_bake())}
    assert [(t.tx, t.ty) for t in bake.tiles] == [(t.tx, t.ty) for t in plain.tiles]
    for a, b in zip(plain.tiles, bake.tiles, strict=True):
        assert np.array_equal(a.polymesh.verts, b.polymesh.verts)
        assert np.array_equal(a.polymesh.polys, b.polymesh.polys)
        assert np.array_equal(a.detail.tris, b.detail.tris)


def _small_soups():
    """Small triangle sets (one chunk each, so no neighbour's range covers for another's),
    and the dungeon."""
    rng = np.random.default_rng(7)
    for n in (1, 3, 40):
        verts = rng.uniform(0, 30, (3 * n, 3)).astype(np.float32)
        verts[:, 2] = rng.uniform(0, 2, 3 * n)
        # A stray vertex far off (the grid reaches it, no triangle does).
        verts = np.concatenate([verts, np.array([[-60, -50, 0]], np.float32)])
        yield verts, np.arange(3 * n, dtype=np.int32).reshape(-1, 3)
    yield dungeon()


@pytest.mark.parametrize("tile_size", [8, 16, 64])
def test_tiles_to_bake_holds_every_tile_with_triangles(tile_size):
    # Against every tile of the grid: a tile left out has no job (no chunk overlaps it).
    for verts, tris in _small_soups():
        plan = tiles.plan_tiles(verts, tris, NavConfig(), tile_size)
        listed = list(plan.tiles_to_bake())
        assert listed == sorted(listed, key=lambda t: (t[1], t[0]))
        with_jobs = [t for t in plan.grid.tiles() if plan.job(*t) is not None]
        assert with_jobs and set(with_jobs) <= set(listed)


def test_an_empty_tiled_bake_names_the_cause_the_geometry_shows():
    # "bake without tiles to see the likely cause": now the bounds that miss the geometry,
    # or floors facing down, as the solo bake says them.
    verts, tris = _floor(0.0)
    missing = NavConfig(bounds_min=(100, 100, -1), bounds_max=(110, 110, 1))
    bake = tiles.bake_tiled(verts, tris, missing, 32, workers=1)
    assert bake.empty and any("miss the geometry" in w for w in bake.warnings)
    down = tiles.bake_tiled(verts, tris[:, ::-1].copy(), NavConfig(), 32, workers=1)
    assert down.empty and any("face down" in w for w in down.warnings)


class _NoPool:
    """A process pool class that must never be made (a stand-in for ProcessPoolExecutor)."""

    def __init__(self, max_workers=None, *args, **kwargs):
        raise AssertionError(f"a process pool of {max_workers!r} workers was being made")


@pytest.mark.parametrize("workers", [10**6, limits.MAX_WORKERS + 1, 0, 1.5, "2", True, None])
def test_bad_worker_counts_are_refused_before_any_pool(workers, monkeypatch):
    # A million workers forked thousands of processes (23 GB) before failing; 1.5 and "2"
    # were multiprocessing's TypeError. One maximum for every bake and command line.
    monkeypatch.setattr(tiles.cf, "ProcessPoolExecutor", _NoPool)
    monkeypatch.setattr(tiles.WorkerPool, "__init__", _NoPool.__init__)
    verts, tris = _floor(0.0)
    if workers is None:  # every core, but never more than the maximum
        monkeypatch.setattr(tiles.os, "sched_getaffinity", lambda _: range(10**5), raising=False)
        monkeypatch.setattr(tiles.os, "cpu_count", lambda: 10**5)
        assert tiles.worker_count(None) == limits.MAX_WORKERS
        return
    with pytest.raises(
        VoxNavError, match=f"workers must be a whole number from 1 to {limits.MAX_WORKERS}"
    ):
        tiles.bake_tiled(verts, tris, NavConfig(), 32, workers=workers)
    with pytest.raises(VoxNavError, match="workers"):
        tiles.plan_tiles(verts, tris, NavConfig(), 32, workers=workers)


def test_cli_workers_flag_has_the_same_maximum(capsys):
    assert main(["bake", "x.obj", "--out", "x.bin", "--workers", str(limits.MAX_WORKERS + 1)]) == 2
    assert f"must be at most {limits.MAX_WORKERS}" in capsys.readouterr().err


def test_too_many_tiles_are_refused_up_front_with_sizes_that_fit(monkeypatch):
    # Dungeon at cell_size 0.001 in 8-cell tiles laid 114,889,430 tiles (some three days).
    monkeypatch.setattr(tiles, "MAX_TILES", 100)
    verts, tris = _floor(0.0)  # 20 x 20 m: 625 tiles of 8 cells at 0.1
    config = NavConfig(cell_size=0.1)
    with pytest.raises(
        VoxNavError, match=r"up to 625 tiles .* the 100 .*tile_size >= 24, cell_size >= 0\.27"
    ):
        tiles.plan_tiles(verts, tris, config, 8)
    plan = tiles.plan_tiles(verts, tris, config, 24)  # the suggestions fit
    tiles.plan_tiles(verts, tris, NavConfig(cell_size=0.27), 8)
    assert plan.tiles_to_bake_bound() <= 100
    assert len(plan.tiles_to_bake()) <= plan.tiles_to_bake_bound()


def test_a_tile_grid_over_memory_limit_is_refused_before_chunking(monkeypatch):
    # 4096-cell tiles at cell_size 0.01 with memory_limit 512 MiB peaked at 2.35 GB where the
    # solo bake refuses at once: every tile's grid alone is 4222 x 4222 columns.
    def no_chunks(*args, **kwargs):
        raise AssertionError("chunked before the tile's grid was checked")

    monkeypatch.setattr(tiles, "partition_mesh", no_chunks)
    verts, tris = _floor(0.0)
    config = NavConfig(cell_size=0.01, memory_limit="512MiB")
    with pytest.raises(VoxNavError, match=r"each tile's grid alone would need .*tile_size <= \d+"):
        tiles.plan_tiles(verts, tris, config, 4096)


def test_a_tile_over_memory_limit_is_refused_before_it_rasterizes(monkeypatch):
    # 300 stacked 5 x 5 m floors in one tile: its grid fits, its span fragments do not.
    floor, quad = _floor(0.0, 5.0)
    verts = np.concatenate([floor + np.float32([0, 0, 0.5 * k]) for k in range(300)])
    tris = np.concatenate([quad + 4 * k for k in range(300)])
    config = NavConfig(cell_size=0.05, memory_limit="150MiB")

    def no_raster(*args, **kwargs):
        raise AssertionError("rasterized a tile over memory_limit")

    monkeypatch.setattr(tiles.rasterize, "rasterize_triangles", no_raster)
    with pytest.raises(tiles.TileBakeError, match=r"this tile would need .*fragments from 600"):
        tiles.bake_tiled(verts, tris, config, 128, workers=1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal")
def test_workers_end_when_their_parent_is_killed_outright(tmp_path):
    """A bake's worker pool when its process is killed outright (SIGKILL, the OOM killer):
    forked workers stayed idle for ever, holding their copy of the world."""
    import os
    import subprocess
    import time

    pids = tmp_path / "pids.txt"
    script = f"""
import os, signal
from core.tiles import worker_pool

def pid(_):
    return os.getpid()

if __name__ == "__main__":
    pool = worker_pool(2)
    workers = sorted(set(pool.map(pid, range(16))))
    open({str(pids)!r}, "w").write(" ".join(map(str, workers)))
    os.kill(os.getpid(), signal.SIGKILL)
"""
    (tmp_path / "killed.py").write_text(script)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(tmp_path / "killed.py")], env=env, timeout=60)
    assert done.returncode == -9
    workers = [int(p) for p in pids.read_text().split()]
    assert workers

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.split(")")[-1].split()[0] != "Z"  # a zombie has ended

    deadline = time.monotonic() + 20
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in workers if alive(p)]
    for p in left:
        os.kill(p, 9)
    assert not left


def test_an_exception_out_of_the_tile_pool_stops_its_workers_at_once():
    """An interrupted bake (Ctrl-C, SIGTERM, an error) waited for every running tile: a hung
    or slow worker held it for ever. The pool's workers are killed instead."""
    import time as _time

    from core import tiles

    start = _time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with tiles.tile_executor(None, 2) as pool:
            assert pool is not None
            busy = pool.submit(_time.sleep, 60)
            while not busy.running():
                _time.sleep(0.01)
            workers = list(pool._processes.values())  # type: ignore[attr-defined]
            raise KeyboardInterrupt
    assert _time.perf_counter() - start < 20

    def ended(pid: int) -> bool:  # gone, or a zombie (is_alive() can miss a pid another
        try:  # thread of the pool reaped)
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                return any(line.startswith("State:\tZ") for line in status)
        except FileNotFoundError:
            return True

    if sys.platform.startswith("linux"):
        deadline = _time.perf_counter() + 10
        while not all(ended(p.pid) for p in workers) and _time.perf_counter() < deadline:
            _time.sleep(0.05)
        assert all(ended(p.pid) for p in workers)


class _MixUp(cf.ThreadPoolExecutor):
    """An executor answering each tile job with the result of the job before it (a cluster
    that mixed up its replies), or of another bake's jobs (``other``)."""

    def __init__(self, other=None):
        super().__init__(1)
        self.other, self.last = other, None

    def submit(self, fn, job, *args, **kwargs):
        if self.other is not None:
            job = dataclasses.replace(job, config=self.other)
        answer = self.last if self.last is not None else job
        self.last = job
        return super().submit(fn, answer, *args, **kwargs)


def test_an_executor_answering_with_another_tile_or_bake_is_refused():
    """A mixed-up result was taken: the .bin held one tile twice (and failed to load) or a
    tile of another bake, silently."""
    verts, tris = _floor(0.0)
    with pytest.raises(tiles.TileBakeError, match="answered with the result of tile"):
        tiles.bake_tiled(verts, tris, NavConfig(), 16, executor=_MixUp())
    with pytest.raises(tiles.TileBakeError, match="a result of another bake"):
        tiles.bake_tiled(verts, tris, NavConfig(), 16, executor=_MixUp(NavConfig(agent_radius=0.3)))


def test_a_tiled_bake_stays_inside_bounds_max_as_the_solo_bake():
    """The last tile column was baked to its full width with the floor beyond bounds_max:
    the tiled navmesh reached 19.2 m where the build volume ends at 10.5 m."""
    verts, tris = _floor(0.0, size=30.0)
    config = NavConfig(bounds_min=(0.0, 0.0, -1.0), bounds_max=(10.5, 10.5, 1.0))
    solo = pipeline.bake(verts, tris, config)
    bake = tiles.bake_tiled(verts, tris, config, 32, workers=1)
    points = np.vstack([data.verts for data in bake.navdata()])  # Detour's Y-up
    reach = np.array([points[:, 0].max(), points[:, 2].max()])
    solo_reach = solo.polymesh.bmin[:2] + solo.polymesh.verts[:, [0, 2]].max(0) * solo.polymesh.cs
    assert (reach <= 10.5).all()
    np.testing.assert_allclose(reach, solo_reach, atol=1e-5)
    beyond = tiles.bake_tiled(verts, tris, config.replace(bounds_min=None, bounds_max=None), 32)
    assert np.vstack([d.verts for d in beyond.navdata()])[:, 0].max() > 20.0
