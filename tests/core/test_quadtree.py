"""The seed's quadtree (core/quadtree.py) against brute force on random moving objects."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import VoxNavError
from core.quadtree import QuadTree


def _random_boxes(rng, k, world=100.0, size=6.0):
    lo = rng.uniform(-5.0, world, size=(k, 2))  # a few reach outside the world
    ext = rng.uniform(0.0, size, size=(k, 2))
    return np.concatenate([lo, lo + ext], axis=1)


def _brute(boxes: dict[int, np.ndarray], query: np.ndarray) -> np.ndarray:
    hits = [
        i
        for i, b in boxes.items()
        if b[0] <= query[2] and b[2] >= query[0] and b[1] <= query[3] and b[3] >= query[1]
    ]
    return np.array(sorted(hits), dtype=np.int64)


def _check_queries(tree, live, rng, n=25):
    queries = _random_boxes(rng, n, size=30.0)
    many = tree.query_many(queries)
    for q, got in zip(queries, many, strict=True):
        assert np.array_equal(got, _brute(live, q))
    for q in queries[:3]:
        assert np.array_equal(tree.query(q), _brute(live, q))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("capacity,merge_below", [(1, 0), (4, 2), (8, 8)])
def test_random_moving_objects_match_brute_force(seed, capacity, merge_below):
    rng = np.random.default_rng(seed)
    tree = QuadTree((0, 0, 100, 100), capacity=capacity, merge_below=merge_below, max_depth=6)
    live: dict[int, np.ndarray] = {}
    for _round in range(12):
        new = _random_boxes(rng, int(rng.integers(1, 30)))
        ids = tree.insert(new)
        assert not set(ids.tolist()) & set(live)
        live.update(zip(ids.tolist(), new, strict=True))
        tree.check()
        _check_queries(tree, live, rng)
        if live:
            keys = np.array(sorted(live))
            moving = rng.choice(keys, size=max(1, keys.shape[0] // 2), replace=False)
            step = rng.normal(0, 3.0, size=(moving.shape[0], 2))
            boxes = np.array([live[i] for i in moving]) + np.concatenate([step, step], axis=1)
            tree.move(moving, boxes)
            live.update(zip(moving.tolist(), boxes, strict=True))
            tree.check()
            _check_queries(tree, live, rng)
            gone = rng.choice(keys, size=keys.shape[0] // 3, replace=False)
            tree.remove(gone)
            for i in gone.tolist():
                del live[i]
            tree.check()
            _check_queries(tree, live, rng)
    assert len(tree) == len(live)
    assert np.array_equal(tree.ids(), np.array(sorted(live), dtype=np.int64))


def test_split_at_capacity_and_merge_below_threshold():
    tree = QuadTree((0, 0, 64, 64), capacity=4, merge_below=2, max_depth=8)
    # Four small boxes in the lower-left quadrant: a leaf at capacity does not split.
    ids = tree.insert([[x, 1, x + 1, 2] for x in (1.0, 5.0, 9.0, 13.0)])
    assert tree.node_count == 1
    # The fifth splits the root; all five fit the lower-left child, which is then over
    # capacity too and splits again.
    ids = np.append(ids, tree.insert([[17.0, 1, 18, 2]]))
    assert tree.node_count > 1
    assert tree.node_child[0] >= 0
    assert (tree.item_node[ids] != 0).all()
    tree.check()
    # Removing down to two items keeps the split (2 is not below merge_below 2) ...
    tree.remove(ids[:3])
    assert tree.node_child[0] >= 0
    tree.check()
    # ... one more and the whole tree collapses into the root.
    tree.remove(ids[3:4])
    assert tree.node_count == 1
    assert tree.item_node[ids[4]] == 0
    tree.check()
    assert np.array_equal(tree.query((0, 0, 64, 64)), ids[4:])


def test_large_items_stay_in_the_parent_and_max_depth_stops_splits():
    tree = QuadTree((0, 0, 64, 64), capacity=1, merge_below=0, max_depth=2)
    large = tree.insert([[10, 10, 50, 50]] * 3)  # larger than a child's loose square
    assert (tree.item_node[large] == 0).all()
    small = tree.insert([[31, 31, 33, 33]])  # on the split lines, but small: goes down
    assert tree.item_node[small[0]] != 0
    deep = tree.insert([[1, 1, 1.5, 1.5]] * 5)  # same spot: splits stop at depth 2
    assert (tree.node_depth[tree.item_node[deep]] == 2).all()
    tree.check()


def test_move_reinserts_only_when_leaving_the_node():
    tree = QuadTree((0, 0, 64, 64), capacity=1, merge_below=0, max_depth=3)
    ids = tree.insert([[1, 1, 2, 2], [40, 40, 41, 41]])
    node = tree.item_node[ids[0]]
    left = tree.move(ids[:1], [[2, 2, 3, 3]])  # stays in its node's loose square
    assert not left.any() and tree.item_node[ids[0]] == node and tree.reinserts == 0
    left = tree.move(ids[:1], [[50, 2, 51, 3]])
    assert left.all() and tree.item_node[ids[0]] != node and tree.reinserts == 1
    assert np.array_equal(tree.query((49, 1, 52, 4)), ids[:1])
    tree.check()


def test_bad_input_is_a_clear_error():
    tree = QuadTree((0, 0, 10, 10))
    ids = tree.insert([[1, 1, 2, 2]])
    tree.remove(ids)
    with pytest.raises(VoxNavError, match="unknown quadtree item id"):
        tree.remove(ids)
    with pytest.raises(VoxNavError, match="unknown quadtree item id"):
        tree.move([7], [[1, 1, 2, 2]])
    with pytest.raises(VoxNavError, match="max < min"):
        tree.insert([[2, 2, 1, 1]])
    with pytest.raises(VoxNavError, match=r"boxes must be \(xmin, ymin, xmax, ymax\) each"):
        tree.insert([[1, 2, 3]])
    with pytest.raises(VoxNavError, match="merge_below"):
        QuadTree((0, 0, 1, 1), capacity=2, merge_below=3)
    for settings in ({"capacity": "x"}, {"max_depth": None}, {"merge_below": 1.5}):
        with pytest.raises(VoxNavError, match="must be a whole number"):
            QuadTree((0, 0, 1, 1), **settings)
    with pytest.raises(VoxNavError, match="boxes must be numbers"):
        tree.insert("abcd")
    # query() of two boxes answered the first only; no boxes raised a NumPy ValueError.
    tree.insert([[6, 6, 7, 7]])
    with pytest.raises(VoxNavError, match="use query_many for several"):
        tree.query([[0, 0, 3, 3], [5, 5, 8, 8]])
    assert tree.query_many(np.zeros((0, 4))) == []
    ids, owner = tree.query_pairs(np.zeros((0, 4)))
    assert ids.shape == owner.shape == (0,)
    with pytest.raises(VoxNavError, match="boxes must be numbers"):
        tree.query_many([["a", 1, 2, 3]])


def test_quadtree_refuses_several_bounds_and_names_a_uint64_id_as_given():
    with pytest.raises(VoxNavError, match="bounds must be one box"):
        QuadTree(np.array([[0, 0, 1, 1], [0, 0, 10, 10]], np.float64))
    tree = QuadTree(np.array([0, 0, 10, 10], np.float64))
    huge = np.array([2**63 + 5], np.uint64)
    with pytest.raises(VoxNavError, match=str(2**63 + 5)):
        tree.remove(huge)
