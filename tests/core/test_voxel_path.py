"""Voxel path finding (core/nav/voxel_path.py): the seed's stayable rule, shortest paths."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from core import pipeline
from core.config import NavConfig
from core.errors import VoxNavError
from core.heightfield import VoxelGrid
from core.nav.voxel_path import (
    FOUND,
    NO_START,
    UNREACHABLE,
    VoxelNavigator,
    walk_path,
)
from core.objio import read_obj

from ..conftest import require_shared
from .oracle import queue_bfs, stayable_voxels


def _grid(occupied):
    return VoxelGrid.from_dense(occupied, np.zeros(3), 1.0, 1.0)


def _centre(cell):
    return np.asarray(cell, dtype=np.float64) + 0.5


def _check_steps(nav, path):
    """Every step moves to a 6-neighbour and every voxel is stayable."""
    v = path.voxels
    assert nav.is_stayable(v).all()
    assert (np.abs(np.diff(v, axis=0)).sum(axis=1) == 1).all()


def test_from_dense_round_trips():
    rng = np.random.default_rng(0)
    occ = rng.random((4, 5, 40)) < 0.3
    grid = _grid(occ)
    again = VoxelGrid.from_heightfield(grid.to_heightfield())
    depth = again.depth
    assert np.array_equal(
        np.unpackbits(grid.bits.view(np.uint8), axis=2, bitorder="little")[:, :, :depth],
        np.unpackbits(again.bits.view(np.uint8), axis=2, bitorder="little")[:, :, :depth],
    )
    assert grid.voxel_count() == int(occ.sum())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("clearance", [1, 2])
def test_random_grids_match_the_literal_rule_and_queue_bfs(seed, clearance):
    rng = np.random.default_rng(seed)
    occ = rng.random((5, 6, 5)) < 0.35
    nav = VoxelNavigator(_grid(occ), clearance=clearance)
    expected = stayable_voxels(occ, clearance)
    cells = np.array([(x, y, z) for y in range(-1, 6) for x in range(-1, 7) for z in range(-1, 7)])
    got = nav.is_stayable(cells)
    assert {tuple(c) for c in cells[got].tolist()} == set(expected)
    stay = sorted(expected)
    for _ in range(12):
        a, b = (stay[i] for i in rng.choice(len(stay), 2))
        want = queue_bfs(expected, a, b)
        for method in ("bfs", "astar"):
            path = nav.find_path(_centre(a), _centre(b), method)
            if want is None:
                assert path.status == UNREACHABLE
            else:
                assert path.status == FOUND
                assert path.steps == want
                assert tuple(path.voxels[0]) == a and tuple(path.voxels[-1]) == b
                _check_steps(nav, path)


def _wall_scene():
    """A floor (z = 0) 9 x 9 voxels, a wall 4 voxels high at x = 4 across the whole floor (the
    way round it, along the floor's outer edge, is longer than the way over it)."""
    occ = np.zeros((9, 9, 8), dtype=bool)
    occ[:, :, 0] = True
    occ[:, 4, 1:5] = True
    return occ


def test_climbs_up_and_down_a_wall():
    nav = VoxelNavigator(_grid(_wall_scene()))
    path = nav.find_path(_centre((1, 4, 1)), _centre((7, 4, 1)))
    assert path.found
    # Up the wall's west face, over its top (z = 5), down the east face: 6 across + 2 * 4.
    assert path.steps == 6 + 2 * 4
    assert path.voxels[:, 2].max() == 5
    _check_steps(nav, path)
    top = [tuple(v) for v in path.voxels.tolist() if v[0] == 4]
    assert top == [(4, 4, 5)]
    assert path.steps == queue_bfs(stayable_voxels(_wall_scene()), (1, 4, 1), (7, 4, 1))


def test_climbs_down_over_an_edge_from_a_platform():
    occ = np.zeros((1, 6, 6), dtype=bool)
    occ[0, :, 0] = True
    occ[0, :3, 1:4] = True  # a platform 3 voxels high at x = 0..2
    nav = VoxelNavigator(_grid(occ))
    start, goal = (0, 0, 4), (5, 0, 1)
    path = nav.find_path(_centre(start), _centre(goal))
    assert path.found and path.steps == queue_bfs(stayable_voxels(occ), start, goal)
    # Beside-and-below holds the agent at (3, 0, 4) over the edge of the platform.
    assert nav.is_stayable(np.array([[3, 0, 4]]))[0]
    assert not nav.is_stayable(np.array([[4, 0, 4]]))[0]
    _check_steps(nav, path)


def test_points_drop_to_the_ground_and_bad_points():
    nav = VoxelNavigator(_grid(_wall_scene()))
    high = nav.find_path([1.5, 1.5, 7.5], [2.5, 1.5, 1.5])
    assert high.found and tuple(high.voxels[0]) == (1, 1, 1)
    assert nav.find_path([np.nan, 0, 0], [1.5, 1.5, 1.5]).status == NO_START
    assert nav.find_path([100, 0, 0], [1.5, 1.5, 1.5]).status == NO_START
    with pytest.raises(VoxNavError, match="method"):
        nav.find_path([1.5, 1.5, 1.5], [2.5, 1.5, 1.5], "dijkstra")
    with pytest.raises(VoxNavError, match="clearance"):
        VoxelNavigator(_grid(_wall_scene()), clearance=0)
    for point in ([1.5, 1.5], "here"):
        with pytest.raises(VoxNavError, match="a point is three numbers"):
            nav.find_path(point, [2.5, 1.5, 1.5])
    with pytest.raises(VoxNavError, match="cells must hold whole-number voxel indices"):
        nav.is_stayable([[0, 1, "a"]])  # a raw ValueError before
    with pytest.raises(VoxNavError, match="cells must hold whole-number voxel indices"):
        nav.is_stayable([[1.5, 1, 1]])  # truncated to voxel 1 before
    assert nav.is_stayable([[1.0, 1.0, 1.0]]).tolist() == nav.is_stayable([[1, 1, 1]]).tolist()


@pytest.mark.parametrize("seed", range(4))
def test_an_agent_taller_than_the_grid_stands_on_its_top(seed):
    # Headroom above the grid is free, so a clearance far past its depth tests the same voxels
    # as depth + 1 (and does not size the arrays: 10**9 would need exabytes).
    rng = np.random.default_rng(seed)
    occ = rng.random((5, 6, 4)) < 0.4
    tall = VoxelNavigator(_grid(occ), clearance=10**9)
    expected = stayable_voxels(occ, occ.shape[2] + 1)
    cells = np.array([(x, y, z) for y in range(-1, 6) for x in range(-1, 7) for z in range(-1, 6)])
    assert {tuple(c) for c in cells[tall.is_stayable(cells)].tolist()} == set(expected)
    assert set(expected) == set(stayable_voxels(occ, occ.shape[2] + 3))


def test_taller_agent_cannot_pass_a_low_gap():
    occ = np.zeros((1, 7, 5), dtype=bool)
    occ[0, :, 0] = True
    occ[0, 2:5, 2:] = True  # a roof over x = 2..4 leaves a gap 1 voxel high
    occ[0, 2:5, 3:] = True
    one = VoxelNavigator(_grid(occ), clearance=1).find_path(_centre((0, 0, 1)), _centre((6, 0, 1)))
    two = VoxelNavigator(_grid(occ), clearance=2).find_path(_centre((0, 0, 1)), _centre((6, 0, 1)))
    in_gap = (one.voxels[:, 1] == 0) & (one.voxels[:, 0] >= 2) & (one.voxels[:, 0] <= 4)
    assert one.found and one.steps == 6 and in_gap.sum() == 3
    # Two voxels tall: not through the gap; round the outside of the scene instead.
    assert two.found and two.steps > 6
    assert not ((two.voxels[:, 1] == 0) & (two.voxels[:, 0] >= 2) & (two.voxels[:, 0] <= 4)).any()


def _chf_bfs(chf, s, t):
    dist = {s: 0}
    queue = deque([s])
    while queue:
        v = queue.popleft()
        if v == t:
            return dist[v]
        for n in chf.neighbor[v].tolist():
            if n >= 0 and chf.area[n] != 0 and n not in dist:
                dist[n] = dist[v] + 1
                queue.append(n)
    return None


def test_dungeon_voxel_and_walking_paths():
    verts, tris = read_obj(require_shared("meshes/dungeon.obj"), recast_frame=False)
    result = pipeline.bake(verts, tris, NavConfig())
    chf = result.compact
    walk = np.nonzero(chf.area)[0]
    rng = np.random.default_rng(1)

    def floor_point(i):
        return np.array(
            [
                result.bmin[0] + (chf.span_x[i] + 0.5) * chf.cs,
                result.bmin[1] + (chf.span_y[i] + 0.5) * chf.cs,
                result.bmin[2] + (chf.y[i] + 0.5) * chf.ch,
            ]
        )

    nav = VoxelNavigator(result.voxel_grid())
    for a, b in rng.choice(walk, size=(3, 2)):
        w = walk_path(chf, floor_point(a), floor_point(b))
        want = _chf_bfs(chf, int(a), int(b))
        assert (w.steps if w.found else None) == want
        if w.found:
            col = w.voxels[:, 0] + w.voxels[:, 1] * chf.width
            assert (np.abs(np.diff(w.voxels[:, :2], axis=0)).sum(axis=1) == 1).all()
            assert (col >= 0).all()
        v = nav.find_path(floor_point(a), floor_point(b))
        astar = nav.find_path(floor_point(a), floor_point(b), "astar")
        assert v.status == astar.status
        if v.found:
            assert v.steps == astar.steps
            _check_steps(nav, v)
            _check_steps(nav, astar)


def test_walk_path_names_an_end_point_that_is_not_three_numbers():
    # A 2-number point raised NumPy's reshape ValueError.
    verts = np.array([[0, 0, 0], [6, 0, 0], [6, 6, 0], [0, 6, 0]], np.float32)
    chf = pipeline.bake(verts, np.array([[0, 1, 2], [0, 2, 3]]), NavConfig()).compact
    with pytest.raises(VoxNavError, match="a path end point is three numbers"):
        walk_path(chf, (1.0, 1.0), (5.0, 5.0, 0.0))


def test_a_grid_too_large_for_the_navigator_is_refused_before_anything_is_allocated(
    monkeypatch,
):
    # One walkable triangle 1,500 m above a level made 1.4e9 voxels: a MemoryError.
    from core.nav import voxel_path

    grid = VoxelGrid.from_dense(np.zeros((6, 5, 40), dtype=bool), (0.0, 0.0, 0.0), 0.3, 0.2)
    VoxelNavigator(grid)  # (6 + 4) x (5 + 4) x (40 + 3) = 3,870 padded voxels
    monkeypatch.setattr(voxel_path, "MAX_NAVIGATOR_VOXELS", 3869)
    unpacked = []
    monkeypatch.setattr(voxel_path, "_unpack", lambda g: unpacked.append(g))
    with pytest.raises(VoxNavError, match=r"5 x 6 x 40 voxels \(3,870 padded\)"):
        VoxelNavigator(grid)
    assert unpacked == []


def test_a_tall_obstacle_is_refused_before_its_voxels_are_allocated(monkeypatch):
    """block_voxels grew the grid to an obstacle's top with no size check: a crate 100 km tall
    on a 60 m level allocated 58 GiB (a MemoryError) before the navigator's refusal."""
    from core import obstacles as ob
    from core.heightfield import WORD_BITS
    from core.nav import voxel_path

    monkeypatch.setattr(voxel_path, "MAX_NAVIGATOR_VOXELS", 10**5)  # a 6 x 5 grid 1,000 deep
    grid = VoxelGrid.from_dense(np.ones((6, 5, 4), dtype=bool), (0.0, 0.0, 0.0), 0.3, 0.2)
    tall = ob.box((0.0, 0.0, 0.0), (1.0, 1.0, 1e5))
    allocated = []
    real_zeros = np.zeros
    monkeypatch.setattr(
        ob.np, "zeros", lambda shape, *a, **k: allocated.append(shape) or real_zeros(shape, *a, **k)
    )
    with pytest.raises(VoxNavError, match=r"a dynamic obstacle reaches .* above the top"):
        ob.block_voxels(grid, [tall])
    assert not any(isinstance(s, tuple) and len(s) == 3 and s[2] > 1000 for s in allocated)
    short = ob.box((0.0, 0.0, 0.0), (1.0, 1.0, 2.0))  # 10 voxels: the grid grows to hold it
    assert ob.block_voxels(grid, [short]).depth == 10 <= WORD_BITS


def test_voxel_grid_conversions_refuse_what_they_cannot_hold():
    """to_heightfield wrapped spans deeper than uint16 (65530..65540 came back as 65530..4);
    a grid of no columns raised NumPy's reshape error; occupied read (n, 2) points as other
    points."""
    deep = VoxelGrid.from_dense(np.zeros((1, 1, 70000), dtype=bool), (0, 0, 0), 1.0, 1.0)
    with pytest.raises(VoxNavError, match="70000 voxels deep has no heightfield"):
        deep.to_heightfield()
    empty = VoxelGrid.from_dense(np.zeros((0, 3, 8), dtype=bool), (0, 0, 0), 1.0, 1.0)
    assert empty.to_heightfield().span_count == 0
    grid = VoxelGrid.from_dense(np.ones((2, 2, 2), dtype=bool), (0, 0, 0), 1.0, 1.0)
    with pytest.raises(VoxNavError, match=r"points must be \(x, y, z\) each"):
        grid.occupied(np.zeros((3, 2)))
    assert grid.occupied([0.5, 0.5, 0.5]).tolist() == [True]


def _floor_grid(cs=1.0):
    occupied = np.zeros((3, 3, 3), bool)
    occupied[:, :, 0] = True  # a 3 x 3 floor
    return VoxelGrid.from_dense(occupied, (0, 0, 0), cs, 1.0)


@pytest.mark.parametrize("cs", [-1.0, 0.0, float("nan"), float("inf"), True])
def test_a_grid_of_a_bad_cell_size_is_refused(cs):
    # -1 or inf made occupied() True off the grid, and find_path "found".
    with pytest.raises(VoxNavError, match="cs must be a positive finite number"):
        _floor_grid(cs)


def test_a_grid_of_a_bad_corner_or_area_is_refused():
    occupied = np.ones((2, 2, 2), bool)
    with pytest.raises(VoxNavError, match="bmin"):
        VoxelGrid.from_dense(occupied, (0, 0), 1.0, 1.0)
    with pytest.raises(VoxNavError, match="bmin"):
        VoxelGrid.from_dense(occupied, (0, 0, float("nan")), 1.0, 1.0)
    grid = _floor_grid()
    for area in (300, -1, "x", 1.7, True):  # 1.7 was area 1; 300 an OverflowError
        with pytest.raises(VoxNavError, match="area must be a whole area id 0..63"):
            grid.to_heightfield(area=area)
    assert int(grid.to_heightfield(area=np.uint8(5)).area[0]) == 5


def test_navigator_refuses_scrambled_cells_a_bad_method_and_a_bool_clearance():
    nav = VoxelNavigator(_floor_grid())
    with pytest.raises(VoxNavError, match=r"\(k, 3\)"):
        nav.is_stayable(np.zeros((2, 6), np.int64))  # was read as 4 scrambled cells
    assert nav.is_stayable(np.zeros((0, 3), np.int64)).shape == (0,)
    assert nav.is_stayable((1, 1, 1)).tolist() == [True]
    with pytest.raises(VoxNavError, match="method must be"):  # was "no goal" off the grid
        nav.find_path((0.5, 0.5, 1.5), (500.0, 500.0, 500.0), method="dijkstra")
    with pytest.raises(VoxNavError, match="clearance"):
        VoxelNavigator(_floor_grid(), clearance=True)
