"""The detail stage's fast delaunayHull (pair-keyed edge lookup, vectorized overlap test,
candidate scans resumed across one polygon's calls) against the literal port, triangle for
triangle: on random and grid (cocircular) point sets grown one point at a time as the detail
stage grows them, and on whole bakes of every shared mesh."""

from __future__ import annotations

import concurrent.futures as cf
import math
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from core import detail, pipeline
from core.config import NavConfig
from core.context import BuildContext
from core.objio import read_obj

from .detail_oracle import delaunay_hull_literal, height_gap_literal, poly_min_extent_literal
from .refdata import mesh_path

F32 = np.float32


def _grown(points: np.ndarray, nhull: int):
    """Yield the point arrays the detail stage would pass: the hull, then one more point."""
    for n in range(nhull + 1, points.shape[0] + 1):
        yield points[:n]


def _polygon_points(rng, kind: str, n_inner: int):
    if kind == "grid":  # many cocircular quadruples: the class-2 (on the circle) paths
        hull = np.array([[0, 0], [0, 6], [6, 6], [6, 0]], dtype=F32)  # Recast's winding
        gx, gz = np.meshgrid(np.arange(1, 6), np.arange(1, 6))
        inner = np.stack([gx.ravel(), gz.ravel()], axis=1).astype(F32)
        inner = inner[rng.permutation(inner.shape[0])[:n_inner]]
    else:
        angles = np.sort(rng.uniform(0, 2 * np.pi, 9))[::-1]
        hull = (np.stack([np.cos(angles), np.sin(angles)], axis=1) * 5).astype(F32)
        inner = rng.uniform(-3, 3, (n_inner, 2)).astype(F32)
    return np.concatenate([hull, inner]), hull.shape[0]


def _fast_delaunay(*args):
    """`detail._delaunay_hull`'s triangles (tuples) as the literal port's lists."""
    return [list(tri) for tri in detail._delaunay_hull(*args)]


@pytest.mark.parametrize("kind", ["random", "grid"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_delaunay_equals_literal_as_points_are_added(kind, seed):
    rng = np.random.default_rng(seed)
    points, nhull = _polygon_points(rng, kind, 14)
    hull = list(range(nhull))
    fast_cache: dict = {}
    literal_cache: dict = {}
    for pts in _grown(points, nhull):
        vx, vz = pts[:, 0].copy(), pts[:, 1].copy()
        fast = _fast_delaunay(vx, vz, hull, fast_cache)
        literal = delaunay_hull_literal(vx, vz, hull, literal_cache)
        assert fast == literal
        assert _fast_delaunay(vx, vz, hull) == literal  # and without a cache
        assert len(literal) >= pts.shape[0] - 2  # a real triangulation (not an empty one)


@pytest.mark.parametrize("kind", ["random", "grid"])
@pytest.mark.parametrize("seed", range(6))
def test_resumed_walks_equal_the_literal_delaunay(kind, seed, monkeypatch):
    """Every call resumes the polygon's previous walk where its new point first changes a
    step (`_resumed_walk`), or keeps its triangles when the point changes none (a point off
    the hull): triangle for triangle the literal delaunayHull, points on circles included."""
    monkeypatch.setattr(detail, "RESUME_MIN_STEPS", 1)
    outcomes = []
    resumed_walk = detail._resumed_walk

    def spy(*args):
        found = resumed_walk(*args)
        outcomes.append(None if found is None else len(found[-1]))
        return found

    monkeypatch.setattr(detail, "_resumed_walk", spy)
    rng = np.random.default_rng(40 + seed)
    points, nhull = _polygon_points(rng, kind, 25 if kind == "grid" else 30)
    # A point far below the hull: right of the edges along its bottom, far outside every
    # circle (the grid's circles are small): on the grid, no scan takes it.
    points = np.insert(points, nhull + 4, np.array([3, -1000], dtype=F32), axis=0)
    hull = list(range(nhull))
    cache: dict = {}
    literal_cache: dict = {}
    for pts in _grown(points, nhull):
        vx, vz = pts[:, 0].copy(), pts[:, 1].copy()
        assert _fast_delaunay(vx, vz, hull, cache) == delaunay_hull_literal(
            vx, vz, hull, literal_cache
        )
    assert len(outcomes) == points.shape[0] - nhull - 1  # every call after the first
    assert any(outcomes)  # walks resumed past their first step
    assert None in outcomes or kind == "random"  # and the grid's triangles kept


@pytest.mark.parametrize("kind", ["random", "grid"])
def test_fold_tables_give_the_literal_delaunay(kind):
    """Scans read from `_fold_tables` (built for many point sets at once, padded to the
    largest) give the literal delaunayHull triangle for triangle; scans that meet a point on
    a circle are left to `_delaunay_hull`."""
    rng = np.random.default_rng(7 if kind == "grid" else 8)
    sets, hulls = [], []
    for _ in range(12):
        points, nhull = _polygon_points(rng, kind, int(rng.integers(1, 15)))
        sets.append((points[:, 0].copy(), points[:, 1].copy()))
        hulls.append(list(range(nhull)))
    folds = detail._fold_tables(sets)
    literal_scans = known = 0
    for (vx, vz), hull, fold in zip(sets, hulls, folds, strict=True):
        literal_scans += sum(row.count(detail._FOLD_LITERAL) for row in fold)
        known += sum(v >= 0 for row in fold for v in row)
        assert _fast_delaunay(vx, vz, hull, {}, fold) == delaunay_hull_literal(vx, vz, hull)
    # Both kinds put points on circles (the random hulls lie on one circle), and most scans
    # are known from the tables.
    assert 0 < literal_scans < known


@pytest.mark.parametrize("kind", ["random", "grid"])
def test_grown_fold_scans_equal_fresh_ones(kind):
    """A point set that gained one point: its old scans extended by that point, and the new
    point's pairs scanned, equal the scans of the grown set built from the start (points on
    circles included), several sets of different sizes at once."""
    rng = np.random.default_rng(17 if kind == "grid" else 18)
    on_circles = 0
    for _ in range(6):
        sets = []
        for _ in range(int(rng.integers(1, 8))):
            points, _ = _polygon_points(rng, kind, int(rng.integers(1, 12)))
            sets.append((points[:, 0].copy(), points[:, 1].copy()))
        before = detail._fold_scans([(vx[:-1], vz[:-1]) for vx, vz in sets])
        grown = detail._fold_scans_grown(sets, before)
        for (pt, on), (want_pt, want_on) in zip(grown, detail._fold_scans(sets), strict=True):
            assert np.array_equal(pt, want_pt)
            assert np.array_equal(on, want_on)
            on_circles += int(want_on.sum())
    assert on_circles > 0


def _settled(scan) -> dict:
    """The scans of a `_fold_scans` entry that met no point on a circle, as
    `_extend_pure_scans` keeps them: {s << _PAIR_SHIFT | t: pt or -1}."""
    pt, on_circle = scan
    n = pt.shape[0]
    return {
        s << detail._PAIR_SHIFT | t: int(pt[s, t])
        for s in range(n)
        for t in range(n)
        if s != t and not on_circle[s, t]
    }


@pytest.mark.parametrize("kind", ["random", "grid"])
def test_settled_scans_extended_by_a_point_equal_fresh_scans(kind):
    """`_extend_pure_scans`: the settled scans of a point set, extended by one more point,
    are the settled scans of the grown set (among the old pairs): a scan the new point lands
    on the circle of leaves the map, the others take it where they should."""
    rng = np.random.default_rng(27 if kind == "grid" else 28)
    dropped = taken = 0
    for _ in range(8):
        points, _ = _polygon_points(rng, kind, int(rng.integers(2, 14)))
        vx, vz = points[:, 0].copy(), points[:, 1].copy()
        q = points.shape[0] - 1
        settled = _settled(detail._fold_scans([(vx[:q], vz[:q])])[0])
        before = dict(settled)
        detail._extend_pure_scans(settled, vx, vz, q)
        grown = _settled(detail._fold_scans([(vx, vz)])[0])
        shift = detail._PAIR_SHIFT
        pairs = {key: (key >> shift, key & ((1 << shift) - 1)) for key in grown}
        assert settled == {key: pt for key, pt in grown.items() if q not in pairs[key]}
        dropped += len(before) - len(settled)
        taken += sum(pt == q for pt in settled.values())
    assert taken and (dropped or kind == "random")


@pytest.mark.parametrize("seed", range(4))
def test_poly_min_extent_equals_the_literal(seed):
    """`_poly_min_extent` (polygons grouped by vertex count) against Recast's polyMinExtent
    one polygon at a time: padded (P, 6) vertices, 0 to 6 of them used, grid coordinates
    (ties, collinear and repeated vertices) and random ones."""
    rng = np.random.default_rng(seed)
    npoly = rng.integers(0, 7, 200)
    if seed % 2:
        xs = rng.uniform(-5, 5, (200, 6)).astype(F32)
        zs = rng.uniform(-5, 5, (200, 6)).astype(F32)
    else:
        xs = (rng.integers(0, 4, (200, 6)) * F32(0.3)).astype(F32)
        zs = (rng.integers(0, 4, (200, 6)) * F32(0.3)).astype(F32)
    got = detail._poly_min_extent(xs, zs, npoly)
    want = [poly_min_extent_literal(xs[p, :n], zs[p, :n]) for p, n in enumerate(npoly.tolist())]
    assert got.dtype == F32
    np.testing.assert_array_equal(got, np.array(want, dtype=F32))


@pytest.mark.parametrize("seed", range(20))
def test_vectorized_overlap_equals_scalar(seed):
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, 6, (12, 2)).astype(F32) * F32(0.5)  # collinear and touching cases
    edges = [[int(a), int(b), 0, 0] for a, b in rng.integers(0, 12, (15, 2)) if a != b]
    ends = np.array(edges, dtype=np.int64)
    as_tuples = [tuple(p) for p in pts.tolist()]
    for s1, t1 in rng.integers(0, 12, (30, 2)).tolist():
        want = detail._overlap_edges(as_tuples, edges, s1, t1)
        got = detail._overlap_edges_np(pts[:, 0], pts[:, 1], ends[:, 0], ends[:, 1], s1, t1)
        assert got == want


@pytest.mark.parametrize("seed", range(20))
def test_both_overlap_tests_at_once_equal_the_scalar_pair(seed):
    """`_overlaps_either` (completeFacet's two tests of a point on the circle in one pass)
    equals overlapEdges(s, u) || overlapEdges(t, u), shared ends and touching cases included."""
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, 6, (12, 2)).astype(F32) * F32(0.5)
    edges = [[int(a), int(b), 0, 0] for a, b in rng.integers(0, 12, (15, 2)) if a != b]
    ends = np.array(edges, dtype=np.int64)
    segments = detail._edge_segments(pts[:, 0], pts[:, 1], ends[:, 0], ends[:, 1])
    as_tuples = [tuple(p) for p in pts.tolist()]
    hits = 0
    for s, t, u in rng.integers(0, 12, (40, 3)).tolist():
        want = detail._overlap_edges(as_tuples, edges, s, u) or detail._overlap_edges(
            as_tuples, edges, t, u
        )
        crossed = detail._overlaps_either(segments, pts[:, 0], pts[:, 1], s, t, u)
        assert (crossed >= 0) == want
        if want:  # the edge named crosses one of the two segments
            a, b = edges[crossed][:2]
            assert any(detail._overlap_edges(as_tuples, [[a, b, 0, 0]], c, u) for c in (s, t))
        hits += want
    assert 0 < hits < 40


@pytest.mark.parametrize("seed", range(4))
def test_kept_triangle_gaps_equal_measuring_every_triangle(seed):
    """`_TriangleGaps` (each triangle's gaps kept while it stays) against distToTriMesh over
    all triangles, step by step as a polygon gains points; the table fills, is remade and
    drops the rows of triangles gone."""
    rng = np.random.default_rng(seed)
    points, nhull = _polygon_points(rng, "random", 40)
    heights = rng.uniform(-1, 1, points.shape[0]).astype(F32)
    verts = np.stack([points[:, 0], heights, points[:, 1]], axis=1)
    samples = tuple(rng.uniform(-4, 4, (3, 300)).astype(F32))
    samples[1][:] = rng.uniform(-1, 1, 300).astype(F32)
    gaps = detail._TriangleGaps(samples)
    hull = list(range(nhull))
    cache: dict = {}
    tables, seen = set(), set()
    for n in range(nhull, points.shape[0] + 1):
        tris = detail._delaunay_hull(verts[:n, 0], verts[:n, 2], hull, cache)
        want = detail._dist_to_tri_mesh(*samples, verts[:n], np.asarray(tris, dtype=np.int64))
        got = gaps.distances(verts[:n], tris)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        tables.add(id(gaps.table))
        seen.update(map(tuple, tris))
    assert len(tables) > 1 and len(gaps.rows) < len(seen)  # remade, rows of gone ones dropped
    assert np.array_equal(gaps.distances(verts, []), np.full(300, F32(-1)))


@pytest.mark.parametrize("name", ["undulating", "bridge", "house", "nav_test"])
def test_whole_detail_mesh_equals_the_literal_delaunay(name, monkeypatch):
    verts, tris = read_obj(mesh_path(name))
    fast = pipeline.bake(verts, tris, NavConfig()).detail
    monkeypatch.setattr(
        detail,
        "_delaunay_hull",
        lambda vx, vz, hull, cache=None, fold=None: delaunay_hull_literal(vx, vz, hull, cache),
    )
    slow = pipeline.bake(verts, tris, NavConfig()).detail
    np.testing.assert_array_equal(fast.meshes, slow.meshes)
    np.testing.assert_array_equal(fast.verts, slow.verts)
    np.testing.assert_array_equal(fast.tris, slow.tris)


@pytest.mark.parametrize("seed", range(5))
def test_lockstep_hull_triangulation_equals_one_by_one(seed):
    rng = np.random.default_rng(seed)
    hxs, hzs, ids, starts, nins, expected = [], [], [], [0], [], []
    for _ in range(40):
        n = int(rng.integers(3, 9))
        extra = int(rng.integers(0, 12))
        pts = rng.integers(0, 8, (n + extra, 2)).astype(F32) * F32(0.3)  # ties in d
        hull = list(range(n + extra))
        rng.shuffle(hull)
        vx, vz = pts[:, 0], pts[:, 1]
        expected.append(detail._triangulate_hull(vx, vz, hull, n))
        hxs.append(vx[hull])
        hzs.append(vz[hull])
        ids.extend(hull)
        starts.append(starts[-1] + len(hull))
        nins.append(n)
    tris, tstart = detail._triangulate_hulls(
        np.concatenate(hxs), np.concatenate(hzs), np.array(ids, np.int64),
        np.array(starts, np.int64), np.array(nins, np.int64),
    )  # fmt: skip
    for p, want in enumerate(expected):
        assert tris[tstart[p] : tstart[p + 1]].tolist() == want


def _detail_args(name: str, config: NavConfig):
    """A bake of a shared mesh and `build_poly_mesh_detail`'s arguments from it."""
    verts, tris = read_obj(mesh_path(name))
    result = pipeline.bake(verts, tris, config)
    d = result.config.derived()
    args = (result.polymesh, result.compact, float(d.detail_sample_dist),
            float(d.detail_sample_max_error))  # fmt: skip
    return result, args


CASES = [(name, sd) for name in ("dungeon", "nav_test", "undulating", "house", "bridge")
         for sd in (0.0, 6.0)] + [("dungeon", 3.0), ("house", 1.0), ("bridge", 1.0)]  # fmt: skip


@pytest.mark.parametrize(("name", "sample_dist"), CASES)
def test_batched_hulls_equal_the_one_polygon_path(name, sample_dist, monkeypatch):
    config = NavConfig(detail_sample_dist=sample_dist, detail_sample_max_error=0.5)
    _, args = _detail_args(name, config)
    fast = detail.build_poly_mesh_detail(*args)
    monkeypatch.setattr(detail, "BATCH_HULLS", False)
    slow = detail.build_poly_mesh_detail(*args)
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)


ROUND_CASES = [("undulating", 6.0, {}), ("nav_test", 6.0, {}), ("house", 1.0, {}),
               ("undulating", 6.0, {"ROUNDS_MIN_POLYGONS": 1, "ROUND_MAX_PAIRS": 1 << 40,
                                    "FOLD_TABLE_MAX_POINTS": 40, "FOLD_TABLES_PER_BATCH": 5}),
               ("dungeon", 3.0, {"ROUNDS_MIN_POLYGONS": 2, "GAP_PAIRS_PER_BATCH": 64}),
               ("bridge", 1.0, {"ROUNDS_MIN_POLYGONS": 1, "GAP_PAIRS_PER_BATCH": 1})]  # fmt: skip


@pytest.mark.parametrize(("name", "sample_dist", "knobs"), ROUND_CASES)
def test_sample_rounds_equal_one_polygon_at_a_time(name, sample_dist, knobs, monkeypatch):
    """Interior samples added in rounds over many polygons (gaps measured for all at once,
    large polygons and the last few finishing alone) against `_build_poly_detail` polygon by
    polygon; the knobs force every polygon through the rounds, or tiny batches."""
    config = NavConfig(detail_sample_dist=sample_dist, detail_sample_max_error=0.2)
    result, args = _detail_args(name, config)
    for knob, value in knobs.items():
        monkeypatch.setattr(detail, knob, value)
    fast = detail.build_poly_mesh_detail(*args)
    monkeypatch.setattr(detail, "BATCH_INSERTS", False)
    monkeypatch.setattr(detail, "BATCH_FOLDS", False)
    monkeypatch.setattr(detail, "CACHE_GAPS", False)
    slow = detail.build_poly_mesh_detail(*args)
    assert slow.ntris > result.polymesh.polys.shape[0]  # interior samples were added
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)


@pytest.mark.parametrize("name", ["nav_test", "undulating"])
@pytest.mark.parametrize("max_samples", [64, 10**6])
def test_polygons_finishing_in_lockstep_equal_one_by_one(name, max_samples, monkeypatch):
    """The polygons finishing outside the rounds grow in lockstep (`_grow_poly_details`: the
    new triangles' gap rows of all of them at once), all of them or those of at most
    ``max_samples`` samples: the same detail mesh as one polygon after the other."""
    config = NavConfig(detail_sample_dist=6.0, detail_sample_max_error=0.2)
    _, args = _detail_args(name, config)
    monkeypatch.setattr(detail, "LOCKSTEP_MAX_SAMPLES", max_samples)
    groups = []
    grow = detail._grow_poly_details

    def spy(polygons, sample_max_error):
        groups.append(len(polygons))
        grow(polygons, sample_max_error)

    monkeypatch.setattr(detail, "_grow_poly_details", spy)
    fast = detail.build_poly_mesh_detail(*args)
    assert max(groups) > 1  # polygons grew side by side
    monkeypatch.setattr(detail, "LOCKSTEP_FINISH", False)
    one_by_one = detail.build_poly_mesh_detail(*args)
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(one_by_one, field))


@pytest.mark.parametrize(
    ("name", "knobs"),
    [
        ("nav_test", {}),
        ("undulating", {}),
        ("nav_test", {"FOLD_TABLE_MAX_POINTS": 20, "ROUNDS_MIN_POLYGONS": 3}),
    ],
)
def test_polygons_leaving_the_rounds_keep_their_scans(name, knobs, monkeypatch):
    """Polygons that leave the rounds (grown past the fold tables, or among the last few)
    take their last tables' settled scans into their own Delaunay calls
    (`_seed_settled_scans`): the detail mesh equals `_build_poly_detail` polygon by polygon,
    and scans were seeded."""
    config = NavConfig(detail_sample_dist=6.0, detail_sample_max_error=0.2)
    _, args = _detail_args(name, config)
    for knob, value in knobs.items():
        monkeypatch.setattr(detail, knob, value)
    seeded = []
    seed = detail._seed_settled_scans

    def spy(polygons, verts, scans, caches):
        before = {i: caches[i].get("pure") for i in polygons}
        seed(polygons, verts, scans, caches)
        for i in polygons:
            if caches[i].get("pure") is not before[i]:  # seeded: the scans that met no circle
                assert caches[i]["pure"] == (verts[i].shape[0], _settled(scans[i]))
                seeded.append(len(caches[i]["pure"][1]))

    monkeypatch.setattr(detail, "_seed_settled_scans", spy)
    fast = detail.build_poly_mesh_detail(*args)
    assert seeded and min(seeded) > 0
    monkeypatch.setattr(detail, "BATCH_INSERTS", False)
    monkeypatch.setattr(detail, "BATCH_FOLDS", False)
    slow = detail.build_poly_mesh_detail(*args)
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_detail_pool_gives_the_same_mesh(pool, monkeypatch):
    """The polygons adding interior samples sent to a build context's executor in pieces (as
    `python -m core bake --workers N` does for big ones) give the in-process detail mesh."""
    result, args = _detail_args("undulating", NavConfig())
    monkeypatch.setattr(detail, "POOL_MIN_WORK", 0)
    monkeypatch.setattr(detail, "POOL_PIECES", 3)
    sent = []
    real = detail._details_in_pool
    monkeypatch.setattr(detail, "_details_in_pool", lambda *a: sent.append(len(a[1])) or real(*a))
    make = cf.ThreadPoolExecutor if pool == "threads" else cf.ProcessPoolExecutor
    with make(max_workers=2) as executor:
        pooled = detail.build_poly_mesh_detail(*args, ctx=BuildContext(executor=executor))
    assert sent and sent[0] > 0
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(
            getattr(pooled, field), getattr(result.detail, field), err_msg=field
        )


def test_solo_cli_bake_with_workers_writes_the_same_navmesh(tmp_path, monkeypatch):
    """`python -m core bake --workers 2` (no tiles): the detail mesh's big work goes to a
    process pool; the .bin is byte for byte the one baked in one process."""
    from core.__main__ import main

    monkeypatch.setattr(detail, "POOL_MIN_WORK", 0)
    pooled = []
    real = detail._details_in_pool
    monkeypatch.setattr(detail, "_details_in_pool", lambda *a: pooled.append(len(a[1])) or real(*a))
    mesh = str(mesh_path("nav_test"))
    assert main(["bake", mesh, "--out", str(tmp_path / "one.bin"), "--workers", "1"]) == 0
    assert not pooled
    assert main(["bake", mesh, "--out", str(tmp_path / "two.bin"), "--workers", "2"]) == 0
    assert pooled and pooled[0] > 0  # polygons that add interior samples went to the pool
    assert (tmp_path / "one.bin").read_bytes() == (tmp_path / "two.bin").read_bytes()


class _BrokenPool(cf.Executor):
    """An executor whose workers always die (as a killed or unforkable pool's do)."""

    def submit(self, fn, /, *args, **kwargs):
        future: cf.Future = cf.Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future


def test_a_broken_detail_pool_finishes_in_this_process_with_a_warning(monkeypatch):
    result, args = _detail_args("nav_test", NavConfig())
    monkeypatch.setattr(detail, "POOL_MIN_WORK", 0)
    ctx = BuildContext(executor=_BrokenPool())
    built = detail.build_poly_mesh_detail(*args, ctx=ctx)
    assert any("worker processes failed" in w and "BrokenProcessPool" in w for w in ctx.warnings)
    for field in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(built, field), getattr(result.detail, field))


def test_insertion_rounds_pause_the_collector_and_restore_it(monkeypatch):
    """The rounds run with the cyclic collector off; afterwards it is as it was, on or off,
    also when the rounds fail."""
    import gc

    seen = []

    def rounds(fail):
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("a round failed")
        return "built"

    paused = detail._collector_paused(rounds)
    was_on = gc.isenabled()
    try:
        gc.enable()
        assert paused(False) == "built" and gc.isenabled()
        with pytest.raises(ValueError):
            paused(True)
        assert gc.isenabled()
        gc.disable()
        assert paused(False) == "built" and not gc.isenabled()
    finally:
        (gc.enable if was_on else gc.disable)()
    assert seen == [False, False, False]
    assert detail._details_with_samples.__wrapped__ is not None


@pytest.mark.parametrize("kind", ["random", "grid", "near_circle", "degenerate"])
def test_double_precision_circle_class_equals_float32(kind):
    """`_class_by_distance` decides in double precision only where the float32 test cannot
    differ: on every kind of point set, including points within a few float32 steps of the
    tolerance radii and collinear triples (zero-radius circles), where it decides it equals
    `_circle_class_f32` (and it leaves the cases on a tolerance radius to that test)."""
    rng = np.random.default_rng(11)
    if kind == "random":
        pts = rng.uniform(-50, 50, (24, 2))
    elif kind == "grid":  # cocircular quadruples everywhere
        gx, gz = np.meshgrid(np.arange(5), np.arange(5))
        pts = np.stack([gx.ravel(), gz.ravel()], axis=1) * 0.3
    elif kind == "degenerate":  # collinear and repeated points
        pts = np.concatenate([np.stack([np.arange(8), np.arange(8)], axis=1), [[3, 3], [0, 1]]])
    else:  # points on circles of radius 1 around 0, scaled by the tolerance +- a few ulps
        angles = rng.uniform(0, 2 * np.pi, 24)
        scale = np.array([1.0, 1.001, 0.999])[rng.integers(0, 3, 24)]
        scale = scale * (1 + rng.integers(-4, 5, 24) * 2.0**-23)
        pts = np.stack([np.cos(angles), np.sin(angles)], axis=1) * scale[:, None]
        pts[:3] = [[1, 0], [0, 1], [-1, 0]]  # the circle through them: radius 1 about 0
    pts = pts.astype(F32)
    vx, vz = pts[:, 0].copy(), pts[:, 1].copy()
    scalars = list(zip(vx, vz, strict=True))
    floats = list(zip(vx.tolist(), vz.tolist(), strict=True))
    n = pts.shape[0]
    exact_cache: dict = {}
    counts = [0, 0, 0]
    undecided = 0
    for s, t, v in rng.integers(0, n, (60, 3)).tolist() + [[0, 1, 2]]:
        cx, cz, r_hi, r_lo = detail._circle_of(scalars, {}, s, t, v)[4:]
        for u in range(n):
            want = detail._circle_class_f32(scalars, exact_cache, s, t, v, u)
            dx, dz = floats[u][0] - cx, floats[u][1] - cz
            got = detail._class_by_distance(math.sqrt(dx * dx + dz * dz), r_hi, r_lo)
            assert got in (want, -1)
            undecided += got < 0
            counts[want] += 1
    assert counts[0] and counts[1]
    if kind in ("grid", "near_circle", "degenerate"):
        assert counts[2]  # points on a circle within the tolerance were met
    if kind == "near_circle":
        assert undecided  # some lie within a few float32 steps of a tolerance radius


@pytest.mark.parametrize("scale", [1.0, 100.0, 1e-3, 1e6])
def test_height_gap_matches_the_literal_test_bit_for_bit(scale):
    """The stacked height gap (`_height_gap`, `_height_gap_stacked`) against distToTriMesh's
    test written out, on random triangles and points: degenerate triangles (repeated or
    collinear corners), points on a corner, coordinates on whole numbers; samples against
    triangles (the broadcast `_TriangleGaps` and `_dist_to_tri_mesh` use) and pair by pair."""
    rng = np.random.default_rng(int(scale * 1000) % 9973)
    for trial in range(300):
        m, s = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        corners = (rng.normal(size=(m, 1, 3, 3)) * scale).astype(np.float32)
        if trial % 7 == 0:
            corners[..., 1, :] = corners[..., 0, :]
        if trial % 11 == 0:
            corners[..., :, 0] = np.round(corners[..., :, 0])
        if trial % 13 == 0:
            corners[..., 2, :] = corners[..., 0, :] * np.float32(2)
        px, py, pz = (rng.normal(size=(3, s)) * scale).astype(np.float32)
        if trial % 5 == 0:
            px[:], pz[:] = corners[0, 0, 0, 0], corners[0, 0, 0, 2]
        a, b, c = corners[..., 0, :], corners[..., 1, :], corners[..., 2, :]
        want = height_gap_literal(px, py, pz, a, b, c)
        got = detail._height_gap(px, py, pz, a, b, c)
        stacked = detail._height_gap_stacked(px, py, pz, a, np.stack((c, b)))
        for result in (got, stacked):
            assert result.dtype == want.dtype and result.shape == want.shape
            assert np.array_equal(result.view(np.uint32), want.view(np.uint32))
        k = min(m, s)
        pair = (px[:k], py[:k], pz[:k], a[:k, 0], b[:k, 0], c[:k, 0])
        assert np.array_equal(
            detail._height_gap(*pair).view(np.uint32), height_gap_literal(*pair).view(np.uint32)
        )
