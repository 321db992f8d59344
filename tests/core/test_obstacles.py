"""Temporary obstacles (core/obstacles.py): shapes, the obstacle index, voxel blocking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import obstacles as ob
from core.errors import VoxNavError
from core.heightfield import VoxelGrid
from core.nav.voxel_path import VoxelNavigator


def test_shapes_bounds_and_volumes():
    cyl = ob.cylinder((1.0, 2.0, 0.5), 0.75, 2.0, area=0)
    lo, hi = cyl.bounds()
    assert np.allclose(lo, [0.25, 1.25, 0.5]) and np.allclose(hi, [1.75, 2.75, 2.5])
    vol = cyl.volume()
    assert (vol.kind, vol.radius, vol.height) == ("cylinder", 0.75, 2.0)
    b = ob.box((0, 0, 0), (2, 1, 3), area=5)
    assert b.volume().kind == "box" and b.volume().area == 5
    assert np.allclose(b.box_xy(), [0, 0, 2, 1])
    turned = ob.oriented_box((0, 0, 1), (2.0, 1.0, 1.0), math.pi / 2)
    lo, hi = turned.bounds()
    assert np.allclose(lo, [-1, -2, 0]) and np.allclose(hi, [1, 2, 2])
    v = turned.volume()
    assert v.kind == "convex" and (v.zmin, v.zmax) == (0.0, 2.0)
    assert np.allclose(np.abs(np.asarray(v.points)).max(axis=0), [1, 2])
    moved = b.moved_to((5, 5, 0))
    assert np.allclose(moved.box_xy(), [5, 5, 7, 6])


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: ob.cylinder((0, 0, 0), 0.0, 1.0), "size > 0"),
        (lambda: ob.cylinder((0, 0, float("nan")), 1.0, 1.0), "finite"),
        (lambda: ob.box((0, 0, 0), (1, -1, 1)), "above its min corner"),
        (lambda: ob.oriented_box((0, 0, 0), (1, 1), 0.0), "three numbers"),
        (lambda: ob.box((0, 0, 0), (1, 1, 1), area=64), "0..63"),
    ],
)
def test_bad_shapes_are_clear_errors(make, match):
    with pytest.raises(VoxNavError, match=match):
        make()


def test_obstacle_set_add_move_remove_and_changes():
    obs = ob.ObstacleSet(bounds=(0, 0, 64, 64), capacity=2, merge_below=1)
    a = obs.add(ob.cylinder((10, 10, 0), 1.0, 2.0))
    b = obs.add(ob.box((30, 30, 0), (32, 33, 2)))
    c = obs.add(ob.oriented_box((50, 10, 1), (2, 1, 1), 0.3))
    assert obs.ids() == [a, b, c]
    assert obs.touching((0, 0, 20, 20)) == [a]
    assert obs.touching((0, 0, 64, 64)) == [a, b, c]
    changes = obs.take_changes()
    assert changes.shape == (3, 4) and obs.take_changes().shape == (0, 4)
    obs.move(a, (40, 40, 0))
    assert obs.touching((0, 0, 20, 20)) == []
    assert obs.touching((38, 38, 42, 42)) == [a]
    # A move touches the old and the new place.
    assert np.allclose(obs.take_changes(), [[9, 9, 11, 11], [39, 39, 41, 41]])
    obs.remove(b)
    assert obs.ids() == [a, c] and b not in obs
    assert len(obs.volumes()) == 2
    obs.tree.check()
    for action in (lambda: obs.remove(b), lambda: obs.move(b, (0, 0, 0)), lambda: obs.get(99)):
        with pytest.raises(VoxNavError, match=f"no such obstacle.*ids in use: {a}, {c}"):
            action()
    # A fractional id named the obstacle it truncated to (remove(c + 0.7) removed c).
    for action in (lambda: obs.remove(c + 0.7), lambda: obs.move(a + 0.5, (0, 0, 0))):
        with pytest.raises(VoxNavError, match="no such obstacle"):
            action()
    assert obs.ids() == [a, c]
    obs.move(float(a), (41, 41, 0))  # a whole-number float is that id


def test_obstacle_fields_are_checked_and_made_plain_numbers():
    """An Obstacle built directly (not by the factories): a yaw given as text raised a bare
    TypeError; an array position was accepted and then broke the tile cache's save."""
    with pytest.raises(VoxNavError, match="obstacle yaw must be a number"):
        ob.ObstacleSet().add(ob.Obstacle(ob.ORIENTED_BOX, (0, 0, 0), (1, 1, 1), yaw="x"))
    obs = ob.ObstacleSet()
    i = obs.add(ob.Obstacle(ob.BOX, np.array([1.0, 2.0, 0.0]), np.float32([1, 1, 1]), area=2.0))
    kept = obs.get(i)
    assert kept.position == (1.0, 2.0, 0.0) and kept.size == (1.0, 1.0, 1.0)
    assert type(kept.area) is int and type(kept.yaw) is float


def _brute_block(grid: VoxelGrid, occ: np.ndarray, shapes) -> np.ndarray:
    """Literal rule: each voxel centre tested against each shape."""
    out = occ.copy()
    for shape in shapes:
        z0, z1 = shape.z_range()
        for iy in range(out.shape[0]):
            for ix in range(out.shape[1]):
                x = float(grid.bmin[0]) + (ix + 0.5) * float(grid.cs)
                y = float(grid.bmin[1]) + (iy + 0.5) * float(grid.cs)
                if not shape.inside_xy(np.array(x), np.array(y)):
                    continue
                for iz in range(out.shape[2]):
                    z = float(grid.bmin[2]) + (iz + 0.5) * float(grid.ch)
                    if z0 <= z <= z1:
                        out[iy, ix, iz] = True
    return out


@pytest.mark.parametrize("seed", range(4))
def test_block_voxels_matches_the_literal_rule(seed):
    rng = np.random.default_rng(seed)
    occ = rng.random((9, 11, 20)) < 0.2
    grid = VoxelGrid.from_dense(occ, (-1.0, -2.0, 0.5), 0.5, 0.25)
    shapes = [
        ob.cylinder((rng.uniform(-1, 4), rng.uniform(-2, 2), 1.0), 1.3, 2.0),
        ob.box((0.2, -1.0, 0.0), (2.1, 0.6, 6.0)),  # reaches above the grid: it grows
        ob.oriented_box((3.0, 1.0, 2.0), (1.5, 0.5, 0.6), rng.uniform(0, math.pi)),
        ob.box((50, 50, 0), (51, 51, 1)),  # off the grid: dropped
    ]
    blocked = ob.block_voxels(grid, shapes)
    assert blocked.depth > grid.depth
    dense = np.zeros(occ.shape[:2] + (blocked.depth,), dtype=bool)
    dense[:, :, : occ.shape[2]] = occ
    expect = _brute_block(grid, dense, shapes)
    got = np.unpackbits(blocked.bits.view(np.uint8), axis=2, bitorder="little")[
        :, :, : blocked.depth
    ].astype(bool)
    assert np.array_equal(got, expect)
    # The input grid is untouched.
    again = np.unpackbits(grid.bits.view(np.uint8), axis=2, bitorder="little")[:, :, :20]
    assert np.array_equal(again.astype(bool), occ)


def test_voxel_path_goes_around_a_placed_obstacle():
    # The seed's RTS case: a 21 x 9 floor; a building placed on the straight line between
    # start and goal blocks its voxels, and the path walks around it (climbing over a
    # 10-voxel tower costs more than the detour).
    occ = np.zeros((9, 21, 12), dtype=bool)
    occ[:, :, 0] = True
    grid = VoxelGrid.from_dense(occ, (0.0, 0.0, 0.0), 1.0, 1.0)
    start, goal = (1.5, 4.5, 1.5), (19.5, 4.5, 1.5)
    before = VoxelNavigator(grid).find_path(start, goal)
    assert before.found and before.steps == 18
    building = ob.box((9.0, 3.0, 1.0), (12.0, 6.0, 11.0))
    inside = building.inside_xy(before.points[:, 0], before.points[:, 1])
    assert inside.any()  # the old path crosses where the building goes
    nav = VoxelNavigator(ob.block_voxels(grid, [building]))
    after = nav.find_path(start, goal)
    assert after.found and after.steps > before.steps
    assert not building.inside_xy(after.points[:, 0], after.points[:, 1]).any()
    assert (after.voxels[:, 2] == 1).all()  # around it on the floor, not over it
    assert nav.is_stayable(after.voxels).all()


def test_restore_keeps_saved_ids_and_frees_the_gaps_in_two_batches():
    # A saved cache's obstacle ids, one of them large: restored at once (one quadtree insert
    # per id below it took 4.8 s for 20,000, and a hand-edited 3,000,000 hung), the gaps
    # free for the next adds, lowest first, as if they had been added and removed.
    shapes = {5: ob.cylinder((1, 1, 0), 0.5, 2), 50_000: ob.box((2, 2, 0), (3, 3, 1))}
    restored = ob.ObstacleSet()
    restored.restore(shapes)
    assert restored.ids() == [5, 50_000] and restored.get(50_000) == shapes[50_000]
    assert len(restored.tree) == 2 and restored.touching((2.5, 2.5, 2.6, 2.6)) == [50_000]
    assert restored.take_changes().shape == (2, 4)
    assert [restored.add(ob.cylinder((0, 0, 0), 1, 1)) for _ in range(6)] == [0, 1, 2, 3, 4, 6]
    with pytest.raises(VoxNavError, match="empty obstacle set"):
        restored.restore({7: shapes[5]})
    with pytest.raises(VoxNavError, match="obstacle ids must be 0.."):
        ob.ObstacleSet().restore({ob.MAX_RESTORED_ID + 1: shapes[5]})


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: ob.cylinder((0, 0, 0), 1, 2, area=None), "area id must be a number"),
        (lambda: ob.cylinder((0, 0, 0), "x", 2), "cylinder radius must be a number"),
        (lambda: ob.box((0, 0, 0), (1, 1, 1), area=1.7), "area id must be a whole number"),
        (lambda: ob.oriented_box((0, 0, 0), (1, 1, 1), "left"), "yaw must be a number"),
        (lambda: ob.cylinder((0, 0, 0), 1, 2, area=64), "area id must be a whole number 0..63"),
    ],
)
def test_obstacle_values_that_are_not_numbers_are_named(make, words):
    # Raw TypeError / ValueError before, and an area id of 1.7 became 1.
    with pytest.raises(VoxNavError, match=words):
        make()


def test_block_voxels_checks_its_obstacles():
    grid = VoxelGrid.from_dense(np.ones((4, 4, 2), bool), (0, 0, 0), 1.0, 1.0)
    crate = ob.box((1.5, 1.5, 0.0), (2.5, 2.5, 1.0))
    for bad, needle in (
        (["crate"], "Obstacle values"),
        (crate, "a list of Obstacle values"),
        ([ob.Obstacle("box", (float("nan"), 0, 0), (1, 1, 1))], "finite"),
        ([ob.Obstacle("box", (0, 0, 0), (-1, 1, 1))], "size > 0"),  # was 0 voxels blocked
    ):
        with pytest.raises(VoxNavError, match=needle):
            ob.block_voxels(grid, bad)
    assert ob.block_voxels(grid, [crate]).voxel_count() >= grid.voxel_count()


def test_an_obstacle_set_does_not_take_true_for_id_1():
    obstacles = ob.ObstacleSet()
    first = obstacles.add(ob.box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)))
    obstacles.add(ob.box((5.0, 0.0, 0.0), (6.0, 1.0, 1.0)))
    with pytest.raises(VoxNavError, match="cannot remove obstacle True"):
        obstacles.remove(True)
    assert first == 0
