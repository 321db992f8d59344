"""Detour's queries: parity with the real Detour on dungeon, batch forms against the literal
single-query ports, and hand-built navmeshes for each query's behaviour."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from core.__main__ import main
from core.errors import VoxNavError
from core.nav import query as Q
from core.nav.navdata import create_nav_mesh_data
from core.nav.navmesh import NavMesh, NavMeshParams
from core.nav.query import NavMeshQuery, QueryFilter

from .refdata import load_reference, mesh_path

F32 = np.float32
NONE = 0xFFFF


# ------------------------------------------------------------------------ hand-built meshes
def polymesh(verts, polys, areas=None, cs=1.0, ch=1.0, bmin=(0.0, 0.0, 0.0)):
    """A Recast PolyMesh from cell-unit verts (x, height, z) and polygons given as
    (vertex ids, neighbour per edge) with neighbours a poly index, None, or ("border", dir)."""
    nvp = 6
    rows = []
    for ids, neis in polys:
        row = [NONE] * (2 * nvp)
        row[: len(ids)] = ids
        for j, n in enumerate(neis):
            if n is None:
                continue
            row[nvp + j] = (0x8000 | n[1]) if isinstance(n, tuple) else n
        rows.append(row)
    npolys = len(rows)
    bmin_zup = np.array([bmin[0], bmin[2], bmin[1]], dtype=F32)
    v = np.asarray(verts, dtype=np.uint16)
    top = v.max(axis=0).astype(F32)
    bmax_zup = bmin_zup + np.array([top[0] * cs, top[2] * cs, top[1] * ch + 1], dtype=F32)
    return SimpleNamespace(
        verts=v,
        polys=np.asarray(rows, dtype=np.uint16),
        regs=np.ones(npolys, np.uint16),
        flags=np.zeros(npolys, np.uint16),
        areas=np.asarray(areas if areas is not None else [63] * npolys, dtype=np.uint8),
        nvp=nvp,
        bmin=bmin_zup,
        bmax=bmax_zup,
        cs=F32(cs),
        ch=F32(ch),
        border_size=0,
        max_edge_error=F32(1.3),
        max_polys=npolys,
        npolys=npolys,
        nverts=v.shape[0],
    )


def tile_data(pm, **kw):
    return create_nav_mesh_data(
        pm, None, walkable_height=2.0, walkable_radius=0.6, walkable_climb=0.9, **kw
    )


def two_squares(connected=True):
    """Polygon 0 = x 0..10, polygon 1 = x 10..30 (twice the area), z 0..10, flat at 0."""
    verts = [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0), (30, 0, 10), (30, 0, 0)]
    shared = 1 if connected else None
    back = 0 if connected else None
    polys = [
        ([0, 1, 2, 3], [None, None, shared, None]),
        ([3, 2, 4, 5], [back, None, None, None]),
    ]
    return NavMesh.from_data(tile_data(polymesh(verts, polys)))


def corridor(n=12):
    """n unit squares in a row along x (a straight corridor), 2 wide in z."""
    verts = []
    for i in range(n + 1):
        verts += [(i * 2, 0, 0), (i * 2, 0, 2)]
    polys = []
    for i in range(n):
        a, b, c, d = 2 * i, 2 * i + 1, 2 * i + 3, 2 * i + 2
        polys.append(
            ([a, b, c, d], [i - 1 if i else None, None, i + 1 if i + 1 < n else None, None])
        )
    return NavMesh.from_data(tile_data(polymesh(verts, polys)))


def l_shape():
    """An L: squares (0,0)-(10,10), (10,0)-(20,10), (10,10)-(20,20); the corner forces a turn."""
    verts = [
        (0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0), (20, 0, 10), (20, 0, 0),
        (10, 0, 20), (20, 0, 20),
    ]  # fmt: skip
    polys = [
        ([0, 1, 2, 3], [None, None, 1, None]),
        ([3, 2, 4, 5], [0, 2, None, None]),
        ([2, 6, 7, 4], [None, None, None, 1]),
    ]
    return NavMesh.from_data(tile_data(polymesh(verts, polys)))


def ring():
    """A 3 x 3 grid of 10-unit squares without the middle one: from one corner to the opposite
    corner two mirror-image routes cost exactly the same (A* meets equal totals)."""
    verts = [(10 * i, 0, 10 * j) for i in range(4) for j in range(4)]
    cells = [(i, j) for i in range(3) for j in range(3) if (i, j) != (1, 1)]
    index = {c: k for k, c in enumerate(cells)}
    polys = []
    for i, j in cells:
        ids = [4 * i + j, 4 * i + j + 1, 4 * (i + 1) + j + 1, 4 * (i + 1) + j]
        neis = [index.get(c) for c in ((i - 1, j), (i, j + 1), (i + 1, j), (i, j - 1))]
        polys.append((ids, neis))
    return NavMesh.from_data(tile_data(polymesh(verts, polys)))


def zpt(x, z, up=0.0):
    """A Z-up point from Detour's (x, z) ground coordinates."""
    return np.array([x, z, up], dtype=F32)


# ------------------------------------------------------------------------------- parity
REF_SKIP = ("q_", "meta_")


def _diff_report(ours: dict, ref: dict) -> list[str]:
    problems = []
    for name, want in ref.items():
        if name.startswith(REF_SKIP):
            continue
        if name not in ours:
            problems.append(f"{name}: missing")
            continue
        got = ours[name]
        if got.dtype != want.dtype or got.shape != want.shape:
            problems.append(f"{name}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
            continue
        if want.dtype.kind == "f":
            equal = (got == want) | (np.isnan(got) & np.isnan(want))
        else:
            equal = got == want
        equal = equal.reshape(len(want), -1).all(axis=1) if want.ndim else equal
        if not np.all(equal):
            rows = np.nonzero(~np.atleast_1d(equal))[0]
            problems.append(f"{name}: {rows.shape[0]} rows differ, first {rows[:12].tolist()}")
    return problems


def test_dungeon_queries_equal_detour(tmp_path):
    ref = load_reference("dungeon_queries")
    out = tmp_path / "answers.npz"
    qfile = tmp_path / "q.npz"
    np.savez(qfile, **{k: v for k, v in ref.items() if k.startswith("q_")})
    argv = ["query", str(mesh_path("dungeon")), "--recast-frame", "--queries", str(qfile)]
    assert main([*argv, "--out", str(out)]) == 0
    with np.load(out) as z:
        ours = {k: z[k] for k in z.files}
    problems = _diff_report(ours, ref)
    assert not problems, "queries differing from Detour:\n" + "\n".join(problems)
    for kind in ("nearest", "height", "wall", "path", "straight", "raycast"):
        assert ours[f"time_query_{kind}"].dtype == np.float64


@pytest.fixture(scope="module")
def dungeon_query():
    from core.config import NavConfig
    from core.nav.cli import build_navmesh

    nav = build_navmesh(mesh_path("dungeon"), True, NavConfig())
    return NavMeshQuery(nav)


def _random_points(query, n, seed):
    rng = np.random.default_rng(seed)
    nav = query.nav
    lo = nav.verts.min(axis=0)[[0, 2, 1]]
    hi = nav.verts.max(axis=0)[[0, 2, 1]]
    pts = (lo + (hi - lo) * rng.random((n, 3))).astype(F32)
    # Half of them near polygon vertices, so most land on or just off the surface.
    k = n // 2
    v = nav.verts[rng.integers(0, nav.verts.shape[0], k)][:, [0, 2, 1]]
    pts[:k] = v + rng.normal(0, 1.5, (k, 3)).astype(F32)
    return pts


def test_batch_nearest_height_raycast_match_single_ports(dungeon_query):
    q = dungeon_query
    pts = _random_points(q, 600, 7)
    pts[5] = np.nan
    half = np.array([2.0, 2.0, 4.0], dtype=F32)
    near = q.find_nearest_poly_batch(pts, half)
    for i, p in enumerate(pts):
        one = q.find_nearest_poly(p, half)
        assert (near.status[i], near.ref[i], near.over_poly[i]) == (
            one.status,
            one.ref,
            one.over_poly,
        ), i
        np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
    assert near.status[5] == Q.FAILURE | Q.INVALID_PARAM
    # Heights at the nearest points and at the raw points (many not over their polygon).
    for probe in (near.point, pts):
        hb = q.get_poly_height_batch(near.ref, probe)
        for i in range(len(pts)):
            one = q.get_poly_height(int(near.ref[i]), probe[i])
            assert hb.status[i] == one.status, i
            np.testing.assert_array_equal(hb.height[i], F32(one.height), err_msg=str(i))
    rng = np.random.default_rng(3)
    ok = np.nonzero(near.ref >= 0)[0]
    starts = ok[rng.integers(0, ok.shape[0], 400)]
    ends = (near.point[starts] + rng.normal(0, 8, (400, 3))).astype(F32)
    rb = q.raycast_batch(near.ref[starts], near.point[starts], ends, max_path=6)
    for j, s in enumerate(starts):
        one = q.raycast(int(near.ref[s]), near.point[s], ends[j], max_path=6)
        got = rb.polys[rb.start[j] : rb.start[j] + rb.count[j]]
        assert rb.status[j] == one.status and F32(one.t) == rb.t[j], j
        np.testing.assert_array_equal(rb.normal[j], one.normal, err_msg=str(j))
        np.testing.assert_array_equal(got, one.polys, err_msg=str(j))
    assert np.any(rb.status & Q.BUFFER_TOO_SMALL), "max_path 6 should cut some rays"


def test_batch_nearest_and_height_match_single_ports_over_many_boxes(dungeon_query):
    """The pruned batch nearest search and the flat height test against the literal ports on
    points near, above, below and far from the surface, with small, default and large boxes
    (one per point)."""
    q = dungeon_query
    rng = np.random.default_rng(41)
    from core.nav.bench import _surface_points

    pts = np.concatenate([_random_points(q, 1000, 17), _surface_points(q, 1000, rng)])
    pts[::7, 2] += rng.normal(0, 3, pts[::7].shape[0]).astype(F32)  # far above / below
    half = rng.choice(np.array([[0.2, 0.2, 0.3], [2, 2, 4], [6, 6, 9]], F32), pts.shape[0])
    near = q.find_nearest_poly_batch(pts, half)
    for i, p in enumerate(pts):
        one = q.find_nearest_poly(p, half[i])
        assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), i
        np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
    found = near.ref >= 0
    assert np.count_nonzero(~found) > 10 and np.count_nonzero(found & near.over_poly) > 500
    assert np.count_nonzero(found & ~near.over_poly) > 100
    probe = (near.point + rng.normal(0, 0.5, near.point.shape)).astype(F32)
    hb = q.get_poly_height_batch(near.ref, probe)
    for i in range(pts.shape[0]):
        one = q.get_poly_height(int(near.ref[i]), probe[i])
        assert hb.status[i] == one.status, i
        np.testing.assert_array_equal(hb.height[i], F32(one.height), err_msg=str(i))


# -------------------------------------------------------------------- hand-built behaviour
def test_links_and_refs_two_squares():
    nav = two_squares()
    assert nav.poly_count == 2
    assert nav.link_ref.tolist() == [1, 0]
    assert nav.link_edge.tolist() == [2, 0]
    np.testing.assert_array_equal(nav.link_mid[0], [10, 0, 5])
    assert nav.tile_poly([1, -1]).tolist() == [[0, 0, 1], [-1, -1, -1]]


def test_nearest_poly_and_height():
    q = NavMeshQuery(two_squares())
    r = q.find_nearest_poly(zpt(5, 5, 0.5), (2, 2, 4))
    assert (r.status, r.ref, r.over_poly) == (Q.SUCCESS, 0, True)
    np.testing.assert_array_equal(r.point, zpt(5, 5, 0))
    r = q.find_nearest_poly(zpt(20, 11, 0.0), (2, 2, 4))
    assert r.ref == 1 and not r.over_poly
    np.testing.assert_allclose(r.point, zpt(20, 10, 0))
    r = q.find_nearest_poly(zpt(100, 100, 0), (2, 2, 4))
    assert (r.status, r.ref) == (Q.SUCCESS, -1) and np.isnan(r.point).all()
    r = q.find_nearest_poly(np.array([np.nan, 1, 1]), (2, 2, 4))
    assert r.status == Q.FAILURE | Q.INVALID_PARAM
    assert q.get_poly_height(0, zpt(3, 3, 9)).height == 0.0
    h = q.get_poly_height(0, zpt(20, 3))
    assert h.status == Q.FAILURE | Q.INVALID_PARAM and np.isnan(h.height)
    status, p = q.closest_point_on_poly_boundary(0, zpt(-3, 5))
    assert status == Q.SUCCESS
    np.testing.assert_array_equal(p, zpt(0, 5))


def test_nearest_poly_with_a_huge_search_box_visits_only_the_tiles(monkeypatch):
    # Half extents of 1e9 (the largest a query takes) span some 10^15 tile cells: the query
    # looks up only the cells that hold tiles (it never finished before), and finds what a
    # box around the whole navmesh finds.
    nav = two_squares()
    q = NavMeshQuery(nav)
    looked_up = []
    tiles_at = nav.tiles_at

    def counted(x, y):
        looked_up.append((x, y))
        assert len(looked_up) < 100, "the query walks empty tile cells"
        return tiles_at(x, y)

    monkeypatch.setattr(nav, "tiles_at", counted)
    huge = q.find_nearest_poly(zpt(20, 11, 0.0), (1e9, 1e9, 1e9))
    wide = q.find_nearest_poly(zpt(20, 11, 0.0), (100, 100, 100))
    assert (huge.ref, huge.status) == (wide.ref, wide.status) == (1, Q.SUCCESS)
    np.testing.assert_array_equal(huge.point, wide.point)
    assert len(looked_up) == 2  # the one tile, once per query
    # Beyond +-1e9 (a box whose corners overflow float32 raised OverflowError, a point at
    # 3e38 came back "found" at a made-up place): Detour's invalid parameter, as for NaN,
    # single and batch. The tile range of a NaN or an overflowing corner: no exception.
    for center, half in (((3e38, 0, 0), (3e38, 3e38, 3e38)), ((20, 11, 0), (2e9, 1, 1))):
        single = q.find_nearest_poly(center, half)
        assert (single.status, single.ref) == (Q.FAILURE | Q.INVALID_PARAM, -1)
        batch = q.find_nearest_poly_batch(np.array([center], np.float32), half)
        assert batch.status.tolist() == [Q.FAILURE | Q.INVALID_PARAM] and batch.ref[0] == -1
    assert nav.tile_range(np.array([np.nan, 0, 0]), np.zeros(3)) == (0, 0, -1, -1)
    with np.errstate(over="ignore"):
        far = np.float32(3e38) * np.float32(2)
    assert nav.tile_range(np.zeros(3), np.array([far, 0, far]))[2] == 0  # the one tile


def test_path_straight_and_partial():
    q = NavMeshQuery(l_shape())
    a, b = zpt(5, 5), zpt(15, 15)
    path = q.find_path(0, 2, a, b)
    assert path.status == Q.SUCCESS and path.polys.tolist() == [0, 1, 2]
    sp = q.find_straight_path(a, b, path.polys)
    assert sp.status == Q.SUCCESS
    np.testing.assert_array_equal(sp.points, [zpt(5, 5), zpt(10, 10), zpt(15, 15)])
    assert sp.flags.tolist() == [Q.STRAIGHTPATH_START, 0, Q.STRAIGHTPATH_END]
    assert sp.refs.tolist() == [0, 2, -1]  # a corner's ref: the polygon entered next
    line = NavMeshQuery(corridor(4))
    every = line.find_straight_path(zpt(1, 1), zpt(7, 1), [0, 1, 2, 3], options=2)
    np.testing.assert_array_equal(every.points[:, 0], [1, 2, 4, 6, 7])  # one per portal
    assert every.refs.tolist() == [0, 1, 2, 3, -1]
    plain = line.find_straight_path(zpt(1, 1), zpt(7, 1), [0, 1, 2, 3])
    assert len(plain.points) == 2
    same_area = q.find_straight_path(a, b, path.polys, options=Q.STRAIGHTPATH_AREA_CROSSINGS)
    assert len(same_area.points) == len(sp.points)  # one area: no crossings added
    apart = NavMeshQuery(two_squares(connected=False))
    part = apart.find_path(0, 1, zpt(5, 5), zpt(20, 5))
    assert part.status == Q.SUCCESS | Q.PARTIAL_RESULT and part.polys.tolist() == [0]
    bad = q.find_path(0, 7, a, b)
    assert bad.status == Q.FAILURE | Q.INVALID_PARAM and len(bad.polys) == 0


def test_area_crossings_add_a_point_where_the_area_changes():
    verts = [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0), (30, 0, 10), (30, 0, 0)]
    polys = [([0, 1, 2, 3], [None, None, 1, None]), ([3, 2, 4, 5], [0, None, None, None])]
    q = NavMeshQuery(NavMesh.from_data(tile_data(polymesh(verts, polys, areas=[63, 5]))))
    sp = q.find_straight_path(zpt(5, 5), zpt(25, 5), [0, 1], options=1)
    np.testing.assert_array_equal(sp.points, [zpt(5, 5), zpt(10, 5), zpt(25, 5)])
    assert sp.refs.tolist() == [0, 1, -1]


def test_out_of_nodes_with_a_tiny_pool():
    nav = corridor(12)
    full = NavMeshQuery(nav).find_path(0, 11, zpt(1, 1), zpt(23, 1))
    assert full.status == Q.SUCCESS and full.polys.tolist() == list(range(12))
    tiny = NavMeshQuery(nav, max_nodes=4).find_path(0, 11, zpt(1, 1), zpt(23, 1))
    assert tiny.status & Q.PARTIAL_RESULT and tiny.status & Q.OUT_OF_NODES
    assert tiny.polys.tolist() == [0, 1, 2, 3]
    short = NavMeshQuery(nav).find_path(0, 11, zpt(1, 1), zpt(23, 1), max_path=5)
    assert short.status & Q.BUFFER_TOO_SMALL and short.polys.tolist() == [0, 1, 2, 3, 4]


def test_raycast_and_wall_distance():
    q = NavMeshQuery(two_squares())
    through = q.raycast(0, zpt(5, 5), zpt(25, 5))
    assert through.t == float(Q.FLT_MAX) and through.polys.tolist() == [0, 1]
    wall = q.raycast(0, zpt(5, 5), zpt(5, 15))
    assert wall.t == pytest.approx(0.5) and wall.polys.tolist() == [0]
    np.testing.assert_allclose(wall.normal, [0, -1, 0])  # the wall at y=10 faces back, -y
    w = q.find_distance_to_wall(1, zpt(20, 3), 5.0)
    assert w.status == Q.SUCCESS and w.distance == pytest.approx(3.0)
    np.testing.assert_allclose(w.position, zpt(20, 0))
    np.testing.assert_allclose(w.normal, [0, 1, 0])
    far = q.find_distance_to_wall(1, zpt(20, 5), 1.0)
    assert far.distance == 1.0 and np.isnan(far.position).all()


def test_move_along_surface_slides_along_walls():
    q = NavMeshQuery(l_shape())
    inside = q.move_along_surface(0, zpt(5, 5), zpt(15, 5))
    assert inside.status == Q.SUCCESS and inside.visited.tolist() == [0, 1]
    np.testing.assert_array_equal(inside.position, zpt(15, 5))
    blocked = q.move_along_surface(0, zpt(5, 5), zpt(5, 14))
    np.testing.assert_allclose(blocked.position, zpt(5, 10))
    assert blocked.visited.tolist() == [0]


def test_random_points_are_area_weighted_and_seeded():
    q = NavMeshQuery(two_squares())
    draws = [q.find_random_point(np.random.default_rng(s)) for s in range(1500)]
    refs = np.array([d.ref for d in draws])
    pts = np.array([d.point for d in draws])
    share = np.mean(refs == 1)  # polygon 1 has 2/3 of the area
    assert abs(share - 2 / 3) < 0.05
    inside0 = (pts[:, 0] >= 0) & (pts[:, 0] <= 10)
    inside1 = (pts[:, 0] >= 10) & (pts[:, 0] <= 30)
    assert np.all(np.where(refs == 0, inside0, inside1))
    again = q.find_random_point(np.random.default_rng(11))
    np.testing.assert_array_equal(again.point, draws[11].point)


def test_two_tiles_link_across_the_border():
    # Tile (0,0): x 0..10; tile (1,0): x 10..20; the shared edge x = 10 is a tile border.
    params = NavMeshParams(np.zeros(3, F32), 10.0, 10.0, 4, 8)
    nav = NavMesh(params)
    left = polymesh(
        [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0)],
        [([0, 1, 2, 3], [None, None, ("border", 2), None])],
    )
    right = polymesh(
        [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0)],
        [([0, 1, 2, 3], [("border", 0), None, None, None])],
        bmin=(10.0, 0.0, 0.0),
    )
    nav.add_tile(tile_data(left, tile_x=0))
    nav.add_tile(tile_data(right, tile_x=1))
    assert nav.link_ref.tolist() == [1, 0]
    assert nav.link_side.tolist() == [0, 4]
    q = NavMeshQuery(nav)
    path = q.find_path(0, 1, zpt(5, 5), zpt(15, 5))
    assert path.status == Q.SUCCESS and path.polys.tolist() == [0, 1]
    assert nav.tile_poly(path.polys).tolist() == [[0, 0, 0], [1, 0, 0]]
    r = q.find_nearest_poly(zpt(15, 5, 0.2), (2, 2, 4))
    assert r.ref == 1
    assert q.raycast(0, zpt(5, 5), zpt(15, 5)).polys.tolist() == [0, 1]


def test_batch_raycast_follows_partial_border_links():
    """A tile edge facing two polygons of the next tile: its two links cover half the edge
    each, so a ray takes the link whose interval holds its crossing (batch = single port)."""
    params = NavMeshParams(np.zeros(3, F32), 10.0, 10.0, 4, 8)
    nav = NavMesh(params)
    left = polymesh(
        [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0)],
        [([0, 1, 2, 3], [None, None, ("border", 2), None])],
    )
    right = polymesh(
        [(0, 0, 0), (0, 0, 5), (0, 0, 10), (10, 0, 10), (10, 0, 5), (10, 0, 0)],
        [
            ([0, 1, 4, 5], [("border", 0), 1, None, None]),
            ([1, 2, 3, 4], [("border", 0), None, None, 0]),
        ],
        bmin=(10.0, 0.0, 0.0),
    )
    nav.add_tile(tile_data(left, tile_x=0))
    nav.add_tile(tile_data(right, tile_x=1))
    own = nav.link_owner == 0
    assert np.count_nonzero(own) == 2
    assert np.all((nav.link_bmin[own] != 0) | (nav.link_bmax[own] != 255)), "partial links"
    q = NavMeshQuery(nav)
    rng = np.random.default_rng(2)
    n = 300
    starts = np.stack([rng.uniform(1, 9, n), rng.uniform(0.5, 9.5, n), np.zeros(n)], 1)
    ends = np.stack([rng.uniform(11, 19, n), rng.uniform(-2, 12, n), np.zeros(n)], 1)
    starts, ends = starts.astype(F32), ends.astype(F32)
    rb = q.raycast_batch(np.zeros(n, np.int64), starts, ends)
    seconds = set()
    for j in range(n):
        one = q.raycast(0, starts[j], ends[j])
        got = rb.polys[rb.start[j] : rb.start[j] + rb.count[j]]
        assert rb.status[j] == one.status and F32(one.t) == rb.t[j], j
        np.testing.assert_array_equal(rb.normal[j], one.normal, err_msg=str(j))
        np.testing.assert_array_equal(got, one.polys, err_msg=str(j))
        if len(one.polys) > 1:
            seconds.add(int(one.polys[1]))
    assert seconds == {1, 2}, "rays should cross into both polygons of the second tile"


def test_filter_excludes_polygons():
    nav = two_squares()
    flt = QueryFilter(exclude_flags=1)
    q = NavMeshQuery(nav)
    assert q.find_nearest_poly(zpt(5, 5), (2, 2, 4), flt).ref == -1
    assert flt.get_cost(zpt(0, 0), zpt(3, 4), 0) == 5.0
    with pytest.raises(VoxNavError):
        QueryFilter(area_cost=np.ones(3))


def test_filter_checks_and_copies_its_costs_and_flags():
    """Negative area costs made find_path_batch run forever (A* improving nodes without end),
    infinite or overflowing ones made it answer PARTIAL where find_path said SUCCESS, and
    include_flags "1" raised a raw TypeError: each a VoxNavError now, also through
    set_area_cost, an assignment, or an in-place write seen by the next query. The filter
    copies the caller's array (set_area_cost wrote into it and every filter made from it)."""
    q = NavMeshQuery(l_shape())
    a, b = zpt(5, 5), zpt(15, 15)
    for cost in (-1.0, np.inf, np.nan, 3e38):
        with pytest.raises(
            VoxNavError, match=r"area_cost\[0\] is .*area costs must be 0\.\.1e\+20"
        ):
            QueryFilter(area_cost=np.full(64, cost))
    refused = {
        "include_flags must be a whole number": lambda: QueryFilter(include_flags="1"),
        "include_flags must be a whole number.*1.5": lambda: QueryFilter(include_flags=1.5),
        r"exclude_flags must be 0\.\.0xFFFF.*65536": lambda: QueryFilter(exclude_flags=0x10000),
        r"exclude_flags must be 0\.\.0xFFFF.*-1": lambda: setattr(
            QueryFilter(), "exclude_flags", -1
        ),
        "area_cost must be 64 numbers": lambda: QueryFilter(area_cost="cheap"),
        "the cost of area 3 is -2": lambda: QueryFilter().set_area_cost(3, -2),
        r"area must be an area id 0\.\.63": lambda: QueryFilter().set_area_cost(64, 1),
        "flt must be a QueryFilter": lambda: q.find_path(0, 2, a, b, flt=2),
    }
    for message, call in refused.items():
        with pytest.raises(VoxNavError, match=message):
            call()
    written = QueryFilter()
    written.area_cost[5] = -1
    with pytest.raises(VoxNavError, match=r"area_cost\[5\] is -1"):
        q.find_path_batch([0], [2], a[None], b[None], flt=written)
    costs = np.ones(64, F32)
    first, second = QueryFilter(area_cost=costs), QueryFilter(area_cost=costs)
    first.set_area_cost(0, 10.0)
    assert costs[0] == 1 and second.area_cost[0] == 1 and first.area_cost[0] == 10
    # Costs from 0 to the largest: single and batch agree.
    for cost in (0.0, 0.5, 1e20):
        flt = QueryFilter(area_cost=np.full(64, cost))
        one = q.find_path(0, 2, a, b, flt=flt)
        batch = q.find_path_batch([0], [2], a[None], b[None], flt=flt)
        assert one.status == batch.status[0] == Q.SUCCESS, cost
        assert one.polys.tolist() == batch.polys.tolist() == [0, 1, 2], cost


# ----------------------------------------------------------------------------- bad input
def test_query_cli_reports_missing_arrays(tmp_path, capsys):
    qfile = tmp_path / "q.npz"
    np.savez(qfile, q_points=np.zeros((2, 3), F32))
    out = tmp_path / "o.npz"
    argv = ["query", str(mesh_path("dungeon")), "--queries", str(qfile), "--out", str(out)]
    assert main(argv) == 1  # a bad input file: core.cliutil.EXIT_FAILED
    err = capsys.readouterr().err
    assert "q_pairs" in err and "q_ray_end" in err and not out.exists()


def test_query_cli_nan_and_outside_points(tmp_path):
    pts = np.array([[np.nan, 0, 0], [1e4, 1e4, 1e4], [0, 0, 0]], dtype=F32)
    qfile = tmp_path / "q.npz"
    np.savez(
        qfile,
        q_points=pts,
        q_pairs=np.array([[0, 1], [1, 2]], np.int32),
        q_ray_start=np.array([0, 1], np.int32),
        q_ray_end=np.zeros((2, 3), F32),
        q_half_extents=np.array([2, 4, 2], F32),
    )
    out = tmp_path / "o.npz"
    argv = ["query", str(mesh_path("dungeon")), "--recast-frame", "--queries", str(qfile)]
    assert main([*argv, "--out", str(out)]) == 0
    with np.load(out) as z:
        assert z["near_status"][0] == Q.FAILURE | Q.INVALID_PARAM
        assert z["near_status"][1] == Q.SUCCESS and z["near_poly"][1] == -1
        assert np.all(z["path_status"] == Q.FAILURE | Q.INVALID_PARAM)
        assert np.all(z["ray_status"] == Q.FAILURE | Q.INVALID_PARAM)


def test_path_cli_prints_the_path(capsys):
    argv = ["path", str(mesh_path("dungeon")), "--recast-frame"]
    ref = load_reference("dungeon_queries")
    a, b = ref["near_pt"][ref["q_pairs"][1]]
    assert main([*argv, "--from", *map(str, a), "--to", *map(str, b)]) == 0
    text = capsys.readouterr().out
    assert "reached" in text and f"{int(ref['straight_count'][1])} points" in text


def test_fast_path_search_matches_literal_port(dungeon_query):
    q = dungeon_query
    pts = _random_points(q, 400, 21)
    near = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    ok = np.nonzero(near.ref >= 0)[0]
    rng = np.random.default_rng(5)
    flt = QueryFilter()
    for pool in (2048, 12):
        small = NavMeshQuery(q.nav, max_nodes=pool)
        for _ in range(150):
            a, b = ok[rng.integers(0, ok.shape[0], 2)]
            args = (int(near.ref[a]), int(near.ref[b]), near.point[a], near.point[b])
            fast = small.find_path(*args)
            yup = [Q._yup(args[2]), Q._yup(args[3])]
            st, lit = small._find_path_literal(args[0], args[1], *yup, flt, 256)
            assert fast.status == st and fast.polys.tolist() == lit, (pool, a, b)


def test_batch_paths_and_straight_paths_match_single_ports(dungeon_query):
    q = dungeon_query
    pts = _random_points(q, 500, 33)
    near = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    ok = np.nonzero(near.ref >= 0)[0]
    rng = np.random.default_rng(8)
    a, b = ok[rng.integers(0, ok.shape[0], 300)], ok[rng.integers(0, ok.shape[0], 300)]
    b[:5] = 0  # some with no polygon at the end (invalid param)
    corr = q.find_path_batch(near.ref[a], near.ref[b], near.point[a], near.point[b], max_path=20)
    ends = near.point[b].copy()
    ends[10] = np.nan
    for options, limit in ((0, 256), (0, 4), (Q.STRAIGHTPATH_ALL_CROSSINGS, 256)):
        sb = q.find_straight_path_batch(near.point[a], ends, corr, limit, options)
        for j in range(300):
            c0, c = corr.start[j], corr.count[j]
            one_path = q.find_path(near.ref[a[j]], near.ref[b[j]], near.point[a[j]],
                                   near.point[b[j]], max_path=20)  # fmt: skip
            assert corr.status[j] == one_path.status, j
            assert corr.polys[c0 : c0 + c].tolist() == one_path.polys.tolist(), j
            one = q.find_straight_path(near.point[a[j]], ends[j], one_path.polys, limit, options)
            s0, sc = sb.start[j], sb.count[j]
            assert sb.status[j] == one.status, (options, limit, j)
            np.testing.assert_array_equal(sb.points[s0 : s0 + sc], one.points)
            assert sb.flags[s0 : s0 + sc].tolist() == one.flags.tolist()
            assert sb.refs[s0 : s0 + sc].tolist() == one.refs.tolist()


def test_batch_straight_paths_all_on_the_lockstep_path_match_single_port(dungeon_query):
    """Every query valid and linked (no query falls back to the single-query port): the
    packed output of the lockstep string pulling equals the single port query by query."""
    q = dungeon_query
    pts = _random_points(q, 300, 71)
    near = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    ok = np.nonzero(near.ref >= 0)[0]
    rng = np.random.default_rng(72)
    a, b = ok[rng.integers(0, ok.shape[0], 200)], ok[rng.integers(0, ok.shape[0], 200)]
    corr = q.find_path_batch(near.ref[a], near.ref[b], near.point[a], near.point[b])
    assert np.all(corr.count >= 1)
    for limit in (256, 3):
        sb = q.find_straight_path_batch(near.point[a], near.point[b], corr, limit)
        for j in range(200):
            polys = corr.polys[corr.start[j] : corr.start[j] + corr.count[j]]
            one = q.find_straight_path(near.point[a[j]], near.point[b[j]], polys, limit)
            s0, sc = sb.start[j], sb.count[j]
            assert sb.status[j] == one.status, (limit, j)
            np.testing.assert_array_equal(sb.points[s0 : s0 + sc], one.points)
            assert sb.flags[s0 : s0 + sc].tolist() == one.flags.tolist()
            assert sb.refs[s0 : s0 + sc].tolist() == one.refs.tolist()


@pytest.mark.parametrize("one_by_one", [48, 0])
def test_batch_paths_with_equal_totals_break_ties_as_the_heap(monkeypatch, one_by_one):
    """Queries whose A* meets two open nodes of equal least total are answered again with
    Detour's heap layout (one by one, or in lockstep when many): same corridors as the
    single-query port, whose heap is Detour's."""
    from core.nav import lockstep

    monkeypatch.setattr(lockstep, "TIES_ONE_BY_ONE", one_by_one)
    q = NavMeshQuery(ring())
    centers = [zpt(10 * i + 5, 10 * j + 5) for i in range(3) for j in range(3) if (i, j) != (1, 1)]
    pairs = [(a, b) for a in range(8) for b in range(8) if a != b]
    starts = np.array([centers[a] for a, _ in pairs], F32)
    ends = np.array([centers[b] for _, b in pairs], F32)
    sref = np.array([a for a, _ in pairs])
    eref = np.array([b for _, b in pairs])
    tie = lockstep._find_paths_open(
        q.nav, sref, eref, starts[:, [0, 2, 1]], ends[:, [0, 2, 1]], q._pass_flags(q._filter(None)),
        QueryFilter().area_cost, q.max_nodes, 256, 1,
    )[3]  # fmt: skip
    assert tie.any() and not tie.all()
    corr = q.find_path_batch(sref, eref, starts, ends)
    for k, (a, b) in enumerate(pairs):
        one = q.find_path(a, b, starts[k], ends[k])
        got = corr.polys[corr.start[k] : corr.start[k] + corr.count[k]]
        assert corr.status[k] == one.status and got.tolist() == one.polys.tolist(), (a, b)


def test_batch_wall_distance_matches_single_port(dungeon_query):
    q = dungeon_query
    pts = _random_points(q, 300, 44)
    near = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    refs = near.ref.copy()
    at = np.where(np.isnan(near.point), pts, near.point)
    for radius, pool in ((5.0, 2048), (12.0, 2048), (12.0, 6)):
        small = NavMeshQuery(q.nav, max_nodes=pool)
        wb = small.find_distance_to_wall_batch(refs, at, radius)
        for i in range(len(pts)):
            one = small.find_distance_to_wall(int(refs[i]), at[i], radius)
            assert wb.status[i] == one.status, (radius, pool, i)
            np.testing.assert_array_equal(wb.distance[i], F32(one.distance))
            np.testing.assert_array_equal(wb.position[i], one.position)
            np.testing.assert_array_equal(wb.normal[i], one.normal)
        if pool == 6:
            assert np.any(wb.status & Q.OUT_OF_NODES)


def test_batch_wall_distance_with_off_mesh_links_matches_single_port(dungeon_query):
    """Links into off-mesh connections have edge 0xff: the wall table's key owner * 6 + 255
    fell past its end (IndexError) or, for the first polygons, on another polygon's tile-border
    edge, whose wall then followed the link's flags; the search read the edge's vertices."""
    import dataclasses

    from core import pipeline, tiles
    from core.config import NavConfig
    from core.objio import read_obj
    from core.offmesh import OffMeshLinks

    config = NavConfig()
    verts, tris = read_obj(mesh_path("dungeon"))
    result = pipeline.bake(verts, tris, config)
    pts = _random_points(dungeon_query, 400, 7)
    near = dungeon_query.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    found = np.flatnonzero(near.ref >= 0)
    # Link starts on the lowest-numbered polygons found (whose bad keys stayed in the table);
    # flagged 0x8, which no ground polygon has: the second filter shuts the links alone.
    starts = found[np.argsort(near.ref[found], kind="stable")][:12]
    ends = found[-12:]
    links = OffMeshLinks.create(near.point[starts], near.point[ends], 0.6, True, flags=0x8)
    data = create_nav_mesh_data(
        result.polymesh, result.detail, walkable_height=config.agent_height,
        walkable_radius=config.agent_radius, walkable_climb=config.agent_max_climb,
        offmesh=links,
    )  # fmt: skip
    tiled = dataclasses.replace(tiles.bake_tiled(verts, tris, config, 32), offmesh_links=links)
    no_links = QueryFilter()
    no_links.exclude_flags = 0x8
    for nav in (NavMesh.from_data(data), tiled.navmesh()):
        q = NavMeshQuery(nav)
        assert (q.nav.link_edge == 0xFF).any()
        refs = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
        at = np.where(np.isnan(refs.point), pts, refs.point)
        for flt in (QueryFilter(), no_links):
            wb = q.find_distance_to_wall_batch(refs.ref, at, 6.0, flt)
            for i in range(len(pts)):
                one = q.find_distance_to_wall(int(refs.ref[i]), at[i], 6.0, flt)
                assert wb.status[i] == one.status, i
                np.testing.assert_array_equal(wb.distance[i], F32(one.distance))
                np.testing.assert_array_equal(wb.position[i], one.position)


def test_batch_queries_on_a_navmesh_without_links_match_single_ports():
    # Two squares side by side but not linked: no polygon has a link, so the batched searches'
    # portal tables are empty (they once indexed them anyway and failed).
    q = NavMeshQuery(two_squares(connected=False))
    assert q.nav.link_ref.shape[0] == 0
    pts = np.array([zpt(5, 5), zpt(20, 5), zpt(2, 8), zpt(25, 2)], F32)
    near = q.find_nearest_poly_batch(pts, np.array([2.0, 2.0, 4.0], F32))
    assert near.ref.tolist() == [0, 1, 0, 1]
    wb = q.find_distance_to_wall_batch(near.ref, near.point, 5.0)
    for i in range(len(pts)):
        one = q.find_distance_to_wall(int(near.ref[i]), near.point[i], 5.0)
        assert wb.status[i] == one.status
        np.testing.assert_array_equal(wb.distance[i], F32(one.distance))
        np.testing.assert_array_equal(wb.position[i], one.position)
    a, b = np.array([0, 0, 1, 2]), np.array([1, 2, 3, 0])
    corr = q.find_path_batch(near.ref[a], near.ref[b], near.point[a], near.point[b])
    sb = q.find_straight_path_batch(near.point[a], near.point[b], corr, 256)
    rb = q.raycast_batch(near.ref[a], near.point[a], near.point[b])
    for j in range(a.shape[0]):
        one_path = q.find_path(near.ref[a[j]], near.ref[b[j]], near.point[a[j]], near.point[b[j]])
        got = corr.polys[corr.start[j] : corr.start[j] + corr.count[j]]
        assert corr.status[j] == one_path.status and got.tolist() == one_path.polys.tolist()
        one = q.find_straight_path(near.point[a[j]], near.point[b[j]], one_path.polys, 256)
        assert sb.status[j] == one.status
        np.testing.assert_array_equal(
            sb.points[sb.start[j] : sb.start[j] + sb.count[j]], one.points
        )
        ray = q.raycast(int(near.ref[a[j]]), near.point[a[j]], near.point[b[j]])
        assert rb.status[j] == ray.status and rb.t[j] == F32(ray.t)
    # Across the gap the path is partial: it ends on the start's own square.
    assert corr.status[0] & Q.PARTIAL_RESULT and corr.count[0] == 1


def _tiled_navmesh_from_reference(ref) -> NavMesh:
    """RecastDemo's tiled dungeon navmesh from the reference's per-tile Recast meshes, tiles
    added in build order (row by row) as Sample_TileMesh does."""
    cs, ch = F32(ref["cfg_cs"]), F32(ref["cfg_ch"])
    size = float(F32(int(ref["tiled_tile_size"])) * cs)
    params = NavMeshParams(
        ref["cfg_bmin"].astype(F32), size, size, int(ref["tiled_max_tiles"]),
        int(ref["tiled_max_polys"]),
    )  # fmt: skip
    nav = NavMesh(params)

    def part(name, i, n):
        s = int(ref[name + "_start"][i])
        return slice(s, s + int(n))

    for i in range(int(ref["count_tiles"])):
        npolys = ref["tile_pmesh_npolys"][i]
        verts = ref["tile_pmesh_verts"][part("tile_pmesh_verts", i, ref["tile_pmesh_nverts"][i])]
        ps = part("tile_pmesh_polys", i, npolys)
        pm = SimpleNamespace(
            verts=verts, polys=ref["tile_pmesh_polys"][ps], regs=ref["tile_pmesh_regs"][ps],
            flags=np.zeros(int(npolys), np.uint16), areas=ref["tile_pmesh_areas"][ps], nvp=6,
            bmin=ref["tile_pmesh_bmin"][i][[0, 2, 1]], bmax=ref["tile_pmesh_bmax"][i][[0, 2, 1]],
            cs=cs, ch=ch, border_size=int(ref["tiled_border_size"]), max_edge_error=F32(1.3),
            max_polys=int(npolys),
        )  # fmt: skip
        dm = SimpleNamespace(
            meshes=ref["tile_dmesh_meshes"][part("tile_dmesh_meshes", i, npolys)],
            verts=ref["tile_dmesh_verts"][part("tile_dmesh_verts", i, ref["tile_dmesh_nverts"][i])][
                :, [0, 2, 1]
            ],
            tris=ref["tile_dmesh_tris"][part("tile_dmesh_tris", i, ref["tile_dmesh_ntris"][i])],
        )
        data = create_nav_mesh_data(
            pm, dm, walkable_height=2.0, walkable_radius=0.6, walkable_climb=0.9,
            tile_x=int(ref["tile_x"][i]), tile_y=int(ref["tile_y"][i]),
        )  # fmt: skip
        nav.add_tile(data)
    return nav


def test_tiled_dungeon_queries_equal_detour():
    """The same queries on RecastDemo's 41-tile navmesh: links across tile borders, tiles
    in the query box, crossed-side node states."""
    from core.nav.cli import run_queries

    ref = load_reference("dungeon_tiled")
    nav = _tiled_navmesh_from_reference(ref)
    assert (nav.tile_count, nav.poly_count) == (41, 143)
    assert np.count_nonzero(nav.link_side != 0xFF) > 0
    ours = run_queries(NavMeshQuery(nav), ref, recast_frame=True)
    kinds = ("near_", "height", "wall_", "path_", "straight_", "ray_")
    answers = {k: v for k, v in ref.items() if k.startswith(kinds)}
    assert len(answers) == 31
    problems = _diff_report(ours, answers)
    assert not problems, "tiled queries differing from Detour:\n" + "\n".join(problems)


def test_tiled_batch_nearest_height_raycast_match_single_ports():
    """Random queries on the 41-tile navmesh (multi-tile candidates, partial border links):
    batch nearest, height and raycast equal the literal single-query ports."""
    from core.nav.bench import _surface_points

    q = NavMeshQuery(_tiled_navmesh_from_reference(load_reference("dungeon_tiled")))
    rng = np.random.default_rng(12)
    pts = np.concatenate([_random_points(q, 600, 4), _surface_points(q, 600, rng)])
    half = np.array([2.0, 2.0, 4.0], dtype=F32)
    near = q.find_nearest_poly_batch(pts, half)
    for i, p in enumerate(pts):
        one = q.find_nearest_poly(p, half)
        assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), i
        np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
    hb = q.get_poly_height_batch(near.ref, pts)
    for i in range(pts.shape[0]):
        one = q.get_poly_height(int(near.ref[i]), pts[i])
        assert hb.status[i] == one.status, i
        np.testing.assert_array_equal(hb.height[i], F32(one.height), err_msg=str(i))
    ok = np.nonzero(near.ref >= 0)[0]
    starts = ok[rng.integers(0, ok.shape[0], 800)]
    ends = (near.point[starts] + rng.normal(0, 12, (800, 3)) * [1, 1, 0]).astype(F32)
    for limit in (256, 5):
        rb = q.raycast_batch(near.ref[starts], near.point[starts], ends, max_path=limit)
        for j, s in enumerate(starts):
            one = q.raycast(int(near.ref[s]), near.point[s], ends[j], max_path=limit)
            got = rb.polys[rb.start[j] : rb.start[j] + rb.count[j]]
            assert rb.status[j] == one.status and F32(one.t) == rb.t[j], (limit, j)
            np.testing.assert_array_equal(rb.normal[j], one.normal, err_msg=str(j))
            np.testing.assert_array_equal(got, one.polys, err_msg=str(j))
    assert np.count_nonzero(rb.count >= 4) > 50, "rays should cross several polygons"


def test_batch_random_points_closest_points_and_moves():
    q = NavMeshQuery(two_squares())
    rp = q.find_random_points(3000, np.random.default_rng(4))
    assert np.all(rp.status == Q.SUCCESS)
    assert abs(np.mean(rp.ref == 1) - 2 / 3) < 0.04
    x = rp.point[:, 0]
    assert np.all(np.where(rp.ref == 0, (x >= 0) & (x <= 10), (x >= 10) & (x <= 30)))
    assert np.all((rp.point[:, 1] >= 0) & (rp.point[:, 1] <= 10) & (rp.point[:, 2] == 0))
    again = q.find_random_points(3000, np.random.default_rng(4))
    np.testing.assert_array_equal(again.point, rp.point)
    pts = np.array([zpt(5, 5, 2), zpt(-3, 5), zpt(20, 12), zpt(np.nan, 1)], dtype=F32)
    status, closest, over = q.closest_point_on_poly_batch([0, 0, 1, 0], pts)
    for i in range(4):
        st, c, o = q.closest_point_on_poly([0, 0, 1, 0][i], pts[i])
        assert status[i] == st and over[i] == o
        np.testing.assert_array_equal(closest[i], c)
    moves = NavMeshQuery(l_shape()).move_along_surface_batch(
        [0, 0], [zpt(5, 5), zpt(5, 5)], [zpt(15, 5), zpt(5, 14)]
    )
    np.testing.assert_allclose(moves.position, [zpt(15, 5), zpt(5, 10)])
    assert moves.polys[moves.start[0] : moves.start[0] + moves.count[0]].tolist() == [0, 1]


@pytest.mark.parametrize("tiled", [False, True])
def test_batch_nearest_grid_edge_cases_match_single_port(tiled):
    """The candidate grid of the batch nearest search against the literal port where it is
    easy to get wrong: boxes beyond a tile's bounds (Detour clamps them onto its edge), far
    above and below the surface, on tile borders, tiny, zero and large boxes in one batch,
    and a filter that rejects some polygons."""
    from core.config import NavConfig
    from core.nav.bench import _surface_points
    from core.nav.cli import build_navmesh

    if tiled:
        nav = _tiled_navmesh_from_reference(load_reference("dungeon_tiled"))
    else:
        nav = build_navmesh(mesh_path("dungeon"), True, NavConfig())
    nav.poly_flags[::5] = 2  # rejected by the filter below (include 1)
    q = NavMeshQuery(nav)
    flt = QueryFilter(include_flags=1)
    rng = np.random.default_rng(5)
    pts = np.concatenate([_random_points(q, 500, 9), _surface_points(q, 500, rng)])
    lo = nav.tile_bmin.min(axis=0)[[0, 2, 1]]
    hi = nav.tile_bmax.max(axis=0)[[0, 2, 1]]
    # Beyond the bounds by up to 3 wu on every side, and far above / below.
    edge = (lo + (hi - lo) * rng.random((300, 3))).astype(F32)
    side = rng.integers(0, 6, 300)
    for k in range(3):
        edge[side == k, k] = lo[k] - rng.random(np.count_nonzero(side == k)) * 3
        edge[side == k + 3, k] = hi[k] + rng.random(np.count_nonzero(side == k + 3)) * 3
    # On tile borders (x or y exactly on a tile's grid line).
    p = nav.params
    border = pts[:200].copy()
    border[:100, 0] = p.orig[0] + p.tile_width * rng.integers(0, 4, 100)
    border[100:, 1] = p.orig[2] + p.tile_height * rng.integers(0, 4, 100)
    pts = np.concatenate([pts, edge.astype(F32), border.astype(F32)])
    pts[::9, 2] += rng.normal(0, 20, pts[::9].shape[0]).astype(F32)
    halves = np.array([[0.05, 0.05, 0.1], [2, 2, 4], [6, 6, 9], [0, 0, 0], [2, 2, 40]], F32)
    for half in (rng.choice(halves, pts.shape[0]), halves[1]):
        near = q.find_nearest_poly_batch(pts, half, flt)
        per_point = half.ndim == 2
        for i, pt in enumerate(pts):
            one = q.find_nearest_poly(pt, half[i] if per_point else half, flt)
            assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), i
            np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
        found = near.ref >= 0
        assert np.count_nonzero(found) > 500 and np.count_nonzero(~found) > 50
        assert np.all(nav.poly_flags[near.ref[found]] == 1)


def test_batch_nearest_box_clamped_onto_tile_edge_matches_single_port():
    """A tile grid cell wider than the tile's bounds: Detour clamps a query box lying wholly
    beyond the bounds onto the tile's edge, so polygons on that edge are candidates for
    points several units away; the batch search's grid must list them too."""
    data = tile_data(polymesh(
        [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0), (30, 0, 10), (30, 0, 0)],
        [([0, 1, 2, 3], [None, None, 1, None]), ([3, 2, 4, 5], [0, None, None, None])],
    ))  # fmt: skip
    params = NavMeshParams(np.asarray(data.bmin, F32) - F32(8), 50.0, 50.0, 1, 2)
    nav = NavMesh(params)
    nav.add_tile(data)
    q = NavMeshQuery(nav)
    rng = np.random.default_rng(2)
    pts = np.stack([rng.uniform(-8, 40, 3000), rng.uniform(-8, 20, 3000),
                    rng.uniform(-3, 3, 3000)], axis=1).astype(F32)  # fmt: skip
    half = rng.choice(np.array([[0.5, 0.5, 1], [2, 2, 4]], F32), pts.shape[0])
    near = q.find_nearest_poly_batch(pts, half)
    for i, p in enumerate(pts):
        one = q.find_nearest_poly(p, half[i])
        assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), i
        np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
    beyond = (pts[:, 0] > 30 + half[:, 0] + 1) | (pts[:, 1] > 10 + half[:, 1] + 1)
    assert np.count_nonzero(beyond & (near.ref >= 0)) > 100, "the clamp quirk is not exercised"


def test_batch_nearest_without_bv_tree_matches_single_port():
    """A tile built without a BV tree (Detour then tests every polygon's own box in float):
    the batch search's fallback path against the literal port."""
    data = tile_data(polymesh(
        [(0, 0, 0), (0, 0, 10), (10, 0, 10), (10, 0, 0), (30, 0, 10), (30, 0, 0)],
        [([0, 1, 2, 3], [None, None, 1, None]), ([3, 2, 4, 5], [0, None, None, None])],
    ), build_bv_tree=False)  # fmt: skip
    assert data.bv_i.shape[0] == 0
    q = NavMeshQuery(NavMesh.from_data(data))
    rng = np.random.default_rng(8)
    pts = np.stack([rng.uniform(-5, 35, 2000), rng.uniform(-5, 15, 2000),
                    rng.uniform(-3, 3, 2000)], axis=1).astype(F32)  # fmt: skip
    near = q.find_nearest_poly_batch(pts, (2, 2, 4))
    for i, p in enumerate(pts):
        one = q.find_nearest_poly(p, (2, 2, 4))
        assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), i
        np.testing.assert_array_equal(near.point[i], one.point, err_msg=str(i))
    assert np.count_nonzero(near.ref >= 0) > 500 and np.count_nonzero(near.ref < 0) > 100


def test_batch_nearest_grid_stays_small_for_elongated_boxes(dungeon_query, monkeypatch):
    """Cells sized from the smaller half extent put every BV leaf of a long, thin box in
    millions of cells (a (500, 0.05, 4) box on a 3 x 3 dungeon: MemoryError, the single query
    answers at once). The cells grow until the grid's entries fit its budget; the answers
    stay the literal port's."""
    from core.nav import batch

    q = dungeon_query
    monkeypatch.setattr(batch, "GRID_MAX_ENTRIES", 20_000, raising=False)
    monkeypatch.setattr(q.nav, "_candidate_grid_cache", None, raising=False)
    build = batch._build_candidate_grid
    entries = []

    def counted(nav, hx, hz):
        grid = build(nav, hx, hz)
        entries.append(grid["near"]["poly"].shape[0] + grid["out"]["poly"].shape[0])
        return grid

    monkeypatch.setattr(batch, "_build_candidate_grid", counted)
    pts = _random_points(q, 300, 23)
    for half in ((8.0, 0.5, 4.0), (0.5, 8.0, 4.0)):
        near = q.find_nearest_poly_batch(pts, half)
        for i, p in enumerate(pts):
            one = q.find_nearest_poly(p, half)
            assert (near.ref[i], near.over_poly[i]) == (one.ref, one.over_poly), (half, i)
            np.testing.assert_array_equal(near.point[i], one.point, err_msg=f"{half} {i}")
        assert np.count_nonzero(near.ref >= 0) > 100
    assert len(entries) == 2 and max(entries) <= 20_000, entries


def test_single_queries_refuse_malformed_positions_refs_and_counts():
    """A position of 2 or 4 numbers or None raised NumPy's "cannot reshape", a ref of None or
    NaN a raw TypeError / ValueError from int(), and 12.7 as a ref or 100.5 as a count was
    truncated silently (ref 12 answered). Now a VoxNavError naming the argument; NaN
    positions keep Detour's INVALID_PARAM status and whole-number floats stay accepted."""
    nav = two_squares()
    q = NavMeshQuery(nav)
    a, b = zpt(5, 5), zpt(20, 5)
    refused = {
        "center": lambda: q.find_nearest_poly(a[:2]),
        "half_extents": lambda: q.find_nearest_poly(a, (2, 2)),
        "pos": lambda: q.get_poly_height(0, None),
        "end_pos": lambda: q.find_path(0, 1, a, np.r_[b, 1]),
        "start_pos": lambda: q.raycast(0, "abc", b),
        "ref must be a polygon ref": lambda: q.closest_point_on_poly(None, a),
        "start_ref must be a polygon ref.*got nan": lambda: q.find_path(np.nan, 1, a, b),
        "end_ref must be a polygon ref.*got 0.5": lambda: q.find_path(0, 0.5, a, b),
        "max_path must be a whole number": lambda: q.find_path(0, 1, a, b, max_path=2.5),
        "max_visited": lambda: q.move_along_surface(0, a, b, max_visited=None),
        "max_radius": lambda: q.find_distance_to_wall(0, a, None),
        "path must be polygon refs.*1.5 at index 1": lambda: q.find_straight_path(a, b, [0, 1.5]),
        "options": lambda: q.find_straight_path(a, b, [0, 1], options=0.5),
        "max_nodes": lambda: NavMeshQuery(nav, max_nodes=100.5),
        "ref must be a polygon ref.*got None": lambda: nav.is_valid_ref(None),
        "get_poly_height_batch refs.*0.7 at index 1": lambda: q.get_poly_height_batch(
            [0, 0.7], np.stack([a, a])
        ),
        "find_path_batch end_refs.*bools": lambda: q.find_path_batch(
            [0], np.array([True]), a[None], b[None]
        ),
        "find_path_batch max_path": lambda: q.find_path_batch(
            [0], [1], a[None], b[None], max_path=9.5
        ),
        "find_random_points n": lambda: q.find_random_points(2.5, np.random.default_rng(0)),
        "rng must be a numpy random Generator.*NoneType": lambda: q.find_random_points(3, None),
        "rng must be a numpy random Generator.*int": lambda: q.find_random_point(7),
        "corridors must be the CorridorBatch.*str": lambda: q.find_straight_path_batch(
            a[None], b[None], "x"
        ),
        r"half_extents must be .* \(3,\) or one per point": lambda: q.find_nearest_poly_batch(
            np.stack([a, a, b]), np.ones((2, 3))
        ),
    }
    for message, call in refused.items():
        with pytest.raises(VoxNavError, match=message):
            call()
    # Still answered: whole-number floats and NumPy scalars, NaN positions (a status).
    assert q.find_path(0.0, np.int64(1), a, b, max_path=np.float32(8)).polys.tolist() == [0, 1]
    assert NavMeshQuery(nav, max_nodes=100.0).max_nodes == 100
    assert nav.is_valid_ref(1.0) and not nav.is_valid_ref(-1)
    assert q.get_poly_height_batch([1.0, -1], np.stack([b, b])).status.tolist() == [
        Q.SUCCESS, Q.FAILURE | Q.INVALID_PARAM,
    ]  # fmt: skip
    assert q.get_poly_height(0, zpt(np.nan, 5)).status == Q.FAILURE | Q.INVALID_PARAM


def test_a_path_back_through_the_start_polygon_keeps_the_start_unparented():
    """Area 5 costs nothing and area 0 two: the search reaches the start polygon again from
    a neighbour; it priced the start there at the mesh's last link (link -1), found it
    cheaper, re-parented it, and the walk back along the path never ended (memory grew until
    the process died). The answer is Detour's (checked on the real Detour), as the batch."""
    from core import pipeline
    from core.config import NavConfig
    from core.pipeline import AreaVolume

    from .linkscenes import box

    verts, tris = box((0, 0, -1), (20, 20, 0))
    cheap = AreaVolume("box", ((4.0, 4.0, -1.0), (11.0, 11.0, 3.0)), 5)
    result = pipeline.bake(verts, tris, NavConfig(), volumes=(cheap,))
    cfg = result.config
    tile = create_nav_mesh_data(
        result.polymesh, result.detail, walkable_height=cfg.agent_height,
        walkable_radius=cfg.agent_radius, walkable_climb=cfg.agent_max_climb,
    )  # fmt: skip
    query = NavMeshQuery(NavMesh.from_data(tile))
    costs = QueryFilter()
    costs.set_area_cost(0, 2.0)
    costs.set_area_cost(5, 0.0)
    start = query.find_nearest_poly((8.65700912475586, 1.4221105575561523, 0.2))
    end = query.find_nearest_poly((12.551545143127441, 16.0084285736084, 0.2))
    single = query.find_path(start.ref, end.ref, start.point, end.point, costs)
    batch = query.find_path_batch([start.ref], [end.ref], start.point[None], end.point[None], costs)
    assert single.polys.tolist() == batch.polys.tolist() == [1, 2, 6, 4, 10, 11]
    assert single.status == int(batch.status[0])
