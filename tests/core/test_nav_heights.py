"""Height sampling on source triangles (core/nav/heights.py) against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import VoxNavError
from core.nav.heights import HeightIndex, brute_force_heights
from core.objio import read_obj

from ..conftest import require_shared

SHARED_MESHES = ("dungeon", "nav_test", "undulating", "house", "bridge")


def _same(a, b):
    assert np.array_equal(a.height, b.height, equal_nan=True)
    assert np.array_equal(a.triangle, b.triangle)


def _points(verts, n, rng, margin=1.0):
    lo, hi = verts.min(axis=0) - margin, verts.max(axis=0) + margin
    return rng.uniform(lo[:2], hi[:2], size=(n, 2))


@pytest.mark.parametrize("name", SHARED_MESHES)
def test_index_equals_brute_force_on_shared_meshes(name):
    verts, tris = read_obj(require_shared(f"meshes/{name}.obj"), recast_frame=False)
    rng = np.random.default_rng(len(name))
    points = _points(verts, 400, rng)
    index = HeightIndex(verts, tris)
    hits = index.heights(points)
    _same(hits, brute_force_heights(verts, tris, points))
    assert np.isfinite(hits.height).any()
    # Below a height: halfway between the scene's bottom and top.
    z_max = rng.uniform(verts[:, 2].min(), verts[:, 2].max(), size=points.shape[0])
    _same(index.heights(points, z_max), brute_force_heights(verts, tris, points, z_max))
    # On the vertices themselves (points on edges and corners of several triangles).
    corners = verts[rng.choice(verts.shape[0], 200)][:, :2].astype(np.float64)
    _same(index.heights(corners), brute_force_heights(verts, tris, corners))


@pytest.mark.parametrize("cell_size", [0.05, 0.7, 50.0])
def test_any_cell_size_gives_the_same_answers(cell_size):
    rng = np.random.default_rng(3)
    verts = rng.uniform(-5, 5, size=(300, 3)).astype(np.float32)
    tris = rng.integers(0, 300, size=(200, 3))
    points = _points(verts, 500, rng)
    _same(
        HeightIndex(verts, tris, cell_size).heights(points),
        brute_force_heights(verts, tris, points),
    )


def test_far_from_origin():
    rng = np.random.default_rng(4)
    verts = (rng.uniform(-20, 20, size=(200, 3)) + [1e5, -1e5, 300]).astype(np.float32)
    tris = rng.integers(0, 200, size=(150, 3))
    points = _points(verts, 300, rng)
    _same(HeightIndex(verts, tris).heights(points), brute_force_heights(verts, tris, points))


def _two_floors():
    """A 2 x 2 m square at z = 0 and a 1 x 1 m square at z = 3 over its corner, and a wall."""
    verts = np.array(
        [[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0],
         [0, 0, 3], [1, 0, 3], [1, 1, 3], [0, 1, 3],
         [1.5, 0, 0], [1.5, 2, 0], [1.5, 2, 5]],
        dtype=np.float32,
    )  # fmt: skip
    tris = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7], [8, 9, 10]])
    return verts, tris


def test_highest_surface_and_below_a_height():
    verts, tris = _two_floors()
    index = HeightIndex(verts, tris)
    points = np.array([[0.5, 0.5], [1.5, 1.5], [1.0, 1.0], [5, 5], [np.nan, 0.0]])
    hits = index.heights(points)
    assert hits.height[:3].tolist() == [3.0, 0.0, 3.0]
    assert np.isnan(hits.height[3:]).all() and hits.triangle[3:].tolist() == [-1, -1]
    assert hits.triangle[0] in (2, 3)
    below = index.heights(points, z_max=2.0)
    assert below.height[:3].tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(index.heights(points, z_max=-1.0).height).all()
    # The vertical wall (x = 1.5) is no surface from above, and the diagonal edge shared by
    # triangles 0 and 1 is covered.
    assert index.height_at(1.5, 1.0) == 0.0
    assert index.height_at(1.0, 1.0, z_max=0.5) == 0.0
    assert index.height_at(7.0, 7.0) is None
    assert index.triangle_count == 4


def test_single_point_equals_batch():
    verts, tris = read_obj(require_shared("meshes/nav_test.obj"), recast_frame=False)
    index = HeightIndex(verts, tris)
    points = _points(verts, 50, np.random.default_rng(5))
    batch = index.heights(points).height
    single = [index.height_at(x, y) for x, y in points]
    assert [np.nan if s is None else s for s in single] == pytest.approx(
        batch.tolist(), nan_ok=True, abs=0
    )


def test_bad_input():
    verts, tris = _two_floors()
    index = HeightIndex(verts, tris)
    with pytest.raises(VoxNavError, match="points must have shape"):
        index.heights(np.zeros((3, 4)))
    with pytest.raises(VoxNavError, match="points must be numbers"):
        index.heights([["a", "b"]])
    with pytest.raises(VoxNavError, match="outside"):
        HeightIndex(verts, np.array([[0, 1, 99]]))
    with pytest.raises(VoxNavError, match="cell_size"):
        HeightIndex(verts, tris, cell_size=0.0)
    with pytest.raises(VoxNavError, match="cell_size must be a positive number.*'a'"):
        HeightIndex(verts, tris, cell_size="a")  # a raw ValueError before
    with pytest.raises(VoxNavError, match="cell_size"):
        HeightIndex(np.zeros((0, 3)), np.zeros((0, 3)), cell_size=-1.0)  # accepted when empty
    # 0.9 was truncated to vertex 0: heights of a triangle nobody gave.
    for call in (HeightIndex, lambda v, t: brute_force_heights(v, t, np.zeros((1, 2)))):
        with pytest.raises(VoxNavError, match="tris must hold whole-number vertex indices"):
            call(verts, tris + 0.5)
        with pytest.raises(VoxNavError, match="whole-number vertex indices, got text"):
            call(verts, np.full((1, 3), "0"))
    assert HeightIndex(verts, tris.astype(np.float64)).heights([[2.0, 2.0]]).height.shape == (1,)
    with pytest.raises(VoxNavError, match="z_max must be one number or one per point"):
        index.heights(np.zeros((3, 2)), z_max=[1.0, 2.0])  # a raw NumPy ValueError before
    empty = HeightIndex(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64))
    assert np.isnan(empty.heights(np.zeros((4, 2))).height).all()


@pytest.mark.parametrize("cell_size", [None, 0.1, 0.25, 0.3, 1 / 3])
def test_points_on_the_far_edges_find_their_surface(cell_size):
    # Columns counted as extent // cell_size could be one fewer than the queries' floor(p *
    # (1 / cell_size)) reaches on the far X and Y edges (1.0 // 0.1 is 9.0): points there
    # got no height. Squares of several sizes, their corners and far edges.
    rng = np.random.default_rng(3)
    for size in (1.0, 1.2, 3.0, float(np.float32(4.07)), 10.0):
        verts = np.array([[0, 0, 0], [size, 0, 0], [size, size, 0], [0, size, 0]], np.float32)
        tris = np.array([[0, 1, 2], [0, 2, 3]])
        s = float(verts[1, 0])
        edge = np.concatenate([
            [[s, s], [s, 0.0], [0.0, s], [0.0, 0.0]],
            np.column_stack([np.full(5, s), rng.uniform(0, s, 5)]),
            np.column_stack([rng.uniform(0, s, 5), np.full(5, s)]),
        ])  # fmt: skip
        index = HeightIndex(verts, tris, cell_size=cell_size)
        _same(index.heights(edge), brute_force_heights(verts, tris, edge))
        assert not np.isnan(index.heights(edge).height).any()


def test_a_fine_cell_size_under_large_triangles_keeps_the_entries_bounded(monkeypatch):
    # Each triangle is listed in every cell its box covers: a 100 x 100 m floor at a given
    # cell size of 0.05 wu was 4M entries a triangle (an 8-storey building: 64M, over 3
    # GiB). Past MAX_GRID_ENTRIES the cells double; the answers stay the same.
    from core.nav import heights

    monkeypatch.setattr(heights, "MAX_GRID_ENTRIES", 5000)
    verts = np.array([[0, 0, 0], [100, 0, 0], [100, 100, 0], [0, 100, 0]], np.float32)
    floors = [verts + np.array([0, 0, 3.0 * k], np.float32) for k in range(4)]
    tris = np.concatenate([np.array([[0, 1, 2], [0, 2, 3]]) + 4 * k for k in range(4)])
    verts = np.concatenate(floors)
    index = HeightIndex(verts, tris, cell_size=0.05)
    assert index.entries.shape[0] <= 5000 and index.cell_size > 0.05
    points = np.random.default_rng(5).uniform(-1, 101, (200, 2))
    _same(index.heights(points), brute_force_heights(verts, tris, points))
    _same(index.heights(points, 4.0), brute_force_heights(verts, tris, points, 4.0))


def test_points_in_runs_of_bounded_pairs_give_the_same_answers(monkeypatch):
    # 2,000 stacked floors paired a block's 131,072 points with 4,000 triangles each (5e8
    # pairs, a MemoryError): points now go in runs of at most PAIRS_PER_BLOCK pairs.
    from core.nav import heights

    rng = np.random.default_rng(7)
    floors = 40
    z = np.repeat(np.arange(floors) * 0.5, 4)
    corners = np.tile([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]], (floors, 1))
    verts = np.c_[corners, z].astype(np.float32)
    base = np.arange(floors) * 4
    tris = np.concatenate([np.c_[base, base + 1, base + 2], np.c_[base, base + 2, base + 3]])
    points = rng.uniform(-1.0, 11.0, size=(700, 2))
    z_max = rng.uniform(-1.0, 21.0, size=700)
    index = HeightIndex(verts, tris)
    whole = index.heights(points, z_max)
    monkeypatch.setattr(heights, "PAIRS_PER_BLOCK", 57)  # a point or two per run; one alone
    _same(index.heights(points, z_max), whole)
    _same(whole, brute_force_heights(verts, tris, points, z_max))


@pytest.mark.parametrize("bad", [1e39, float("nan")])
def test_a_vertex_float32_cannot_hold_is_named_not_dropped(bad):
    # The triangle was left out of the index: "no surface" under it, without a word.
    verts = np.array([[0, 0, 0], [10, 0, 0], [0, 10, bad]], np.float64)
    with pytest.raises(VoxNavError, match="vertex 2 of verts"):
        HeightIndex(verts, np.array([[0, 1, 2]]))
    unused = np.vstack([verts[:2], [[0, 10, 0], [5, 5, bad]]])  # only in no triangle: fine
    assert HeightIndex(unused, np.array([[0, 1, 2]])).height_at(1, 1) == 0.0


def test_heights_refuse_a_nan_limit_and_text_and_take_an_empty_list():
    index = HeightIndex(np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0]], np.float32), [[0, 1, 2]])
    with pytest.raises(VoxNavError, match="z_max must be numbers"):
        index.heights([[1.0, 1.0]], z_max=float("nan"))  # every answer read NaN
    assert index.heights([]).height.shape == (0,)
    with pytest.raises(VoxNavError, match="x and y must be numbers"):
        index.height_at("a", 0)
