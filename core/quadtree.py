"""The seed's quadtree of moving objects, in flat arrays (no Python object per node or item).

Items are axis-aligned boxes on the X/Y plane (Z-up world): float64 (k, 4) rows
``(xmin, ymin, xmax, ymax)`` [Units: wu], closed (touching boxes overlap). The tree is *loose*:
a node's region is its square scaled by `LOOSENESS` about its centre, and each item lives in
the deepest node holding its centre whose loose region contains its box (an item too large for
a child stays in the parent; an item reaching outside the world stays in the root, which holds
anything).

Nodes are rows of flat arrays; the four children of a node are four consecutive rows, quadrant
``q = (x >= mid.x) + 2 * (y >= mid.y)``. A leaf holding more than ``capacity`` items of its own
splits (unless at ``max_depth``); an internal node whose whole subtree holds fewer than
``merge_below`` items takes them back and drops its children. ``merge_below <= capacity``
keeps a merged node from splitting again at once (hysteresis).

`move` re-inserts an item only when its new box leaves its node's loose region; otherwise it only
updates the box (so a moving object mostly costs one containment test). Queries read a per-node
item order (items sorted by node, CSR) that is rebuilt lazily after re-insertions, so batches of
moves followed by batches of queries cost one sort.
"""

from __future__ import annotations

import numpy as np

from .errors import VoxNavError
from .limits import number_rows

_NO = -1
#: A node's items lie within its square scaled by this about its centre (a loose quadtree):
#: a small item on a split line still goes down, so few items pile up in the upper nodes and
#: a moving item leaves its node less often.
LOOSENESS = 2.0


def _boxes(boxes, name: str = "boxes") -> np.ndarray:
    b = number_rows(boxes, 4, name, "(xmin, ymin, xmax, ymax)")
    if not np.isfinite(b).all():
        raise VoxNavError(f"{name} has a non-finite coordinate; give finite world positions")
    if (b[:, 2] < b[:, 0]).any() or (b[:, 3] < b[:, 1]).any():
        raise VoxNavError(f"{name} has a row with max < min; give (xmin, ymin, xmax, ymax)")
    return b


class QuadTree:
    """A region quadtree over a square of the X/Y plane, holding item boxes by integer id.

    ``bounds``: (xmin, ymin, xmax, ymax) of the world [Units: wu] (made square around its
    centre); ``capacity``: items a leaf holds before it splits [Limit: >= 1];
    ``merge_below``: a subtree with fewer items than this collapses into its root
    [Limit: 0..capacity]; ``max_depth``: deepest level (root = 0) [Limit: 0..30].
    """

    def __init__(self, bounds, capacity: int = 8, merge_below: int = 4, max_depth: int = 12):
        rows = _boxes(bounds, "bounds")
        if rows.shape[0] != 1:  # the first was taken, the others ignored without a word
            raise VoxNavError(
                f"bounds must be one box (min x, min y, max x, max y), got {rows.shape[0]}"
            )
        b = rows[0]
        for name, value in (("capacity", capacity), ("merge_below", merge_below),
                            ("max_depth", max_depth)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise VoxNavError(f"{name} must be a whole number, got {value!r}")
        if int(capacity) < 1:
            raise VoxNavError(f"capacity must be >= 1, got {capacity}")
        if not 0 <= int(merge_below) <= int(capacity):
            raise VoxNavError(
                f"merge_below must be between 0 and capacity ({capacity}), got {merge_below}"
            )
        if not 0 <= int(max_depth) <= 30:
            raise VoxNavError(f"max_depth must be 0..30, got {max_depth}")
        self.capacity = int(capacity)
        self.merge_below = int(merge_below)
        self.max_depth = int(max_depth)
        half = max(b[2] - b[0], b[3] - b[1], 1e-9) / 2.0
        cx, cy = (b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0
        # Nodes: centre and half size of the square, first child (-1 = leaf), parent, depth,
        # items held by the node itself and by its whole subtree.
        self._ncap = 16
        self.node_center = np.zeros((self._ncap, 2))
        self.node_half = np.zeros(self._ncap)
        self.node_child = np.full(self._ncap, _NO, dtype=np.int64)
        self.node_parent = np.full(self._ncap, _NO, dtype=np.int64)
        self.node_depth = np.zeros(self._ncap, dtype=np.int64)
        self.node_own = np.zeros(self._ncap, dtype=np.int64)
        self.node_total = np.zeros(self._ncap, dtype=np.int64)
        self.node_used = np.zeros(self._ncap, dtype=bool)
        self._n_nodes = 1
        self._free_blocks: list[int] = []
        self.node_center[0] = (cx, cy)
        self.node_half[0] = half
        self.node_used[0] = True
        # Items: box, node (-1 = free id).
        self._icap = 16
        self.item_box = np.zeros((self._icap, 4))
        self.item_node = np.full(self._icap, _NO, dtype=np.int64)
        self._n_items = 0
        self._free_ids: list[int] = []
        self._order: np.ndarray | None = None
        self._start: np.ndarray | None = None
        #: Re-insertions done by `move` (items that left their node). For tests and benches.
        self.reinserts = 0

    # -- size and inspection -----------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.node_total[0])

    @property
    def ids_handed_out(self) -> int:
        """Ids ever handed out, in use or freed: a tree with none hands out 0, 1, 2, ..."""
        return self._n_items

    @property
    def node_count(self) -> int:
        """Nodes in use (root, internal and leaves)."""
        return int(self.node_used[: self._n_nodes].sum())

    def ids(self) -> np.ndarray:
        """int64 (n,): the ids in use, ascending."""
        return np.nonzero(self.item_node[: self._n_items] >= 0)[0]

    def box(self, ids) -> np.ndarray:
        """float64 (k, 4) boxes of the given ids."""
        return self.item_box[self._check_ids(ids)].copy()

    def leaf_nodes(self) -> np.ndarray:
        n = self._n_nodes
        return np.nonzero(self.node_used[:n] & (self.node_child[:n] < 0))[0]

    def check(self) -> None:
        """Assert the structure's invariants (for tests): counts, containment, thresholds."""
        n = self._n_nodes
        used = np.nonzero(self.node_used[:n])[0]
        live = self.ids()
        own = np.bincount(self.item_node[live], minlength=n)
        assert np.array_equal(own[used], self.node_own[used])
        total = self.node_own[:n].copy()
        for depth in range(int(self.node_depth[used].max()), 0, -1):
            at = used[self.node_depth[used] == depth]
            np.add.at(total, self.node_parent[at], total[at])
        assert np.array_equal(total[used], self.node_total[used])
        nodes = self.item_node[live]
        inside = self._contains(nodes, self.item_box[live]) | (nodes == 0)
        assert inside.all()
        internal = used[self.node_child[used] >= 0]
        assert (self.node_total[internal] >= self.merge_below).all()
        leaves = used[self.node_child[used] < 0]
        over = leaves[self.node_own[leaves] > self.capacity]
        # A leaf may stay over capacity only at max depth or when no item fits a child.
        for node in over:
            if self.node_depth[node] < self.max_depth:
                mine = live[self.item_node[live] == node]
                assert (self._quadrant(np.full(mine.shape[0], node), self.item_box[mine]) < 0).all()

    # -- storage -------------------------------------------------------------------------------

    def _grow_items(self, need: int) -> None:
        if need <= self._icap:
            return
        cap = max(need, 2 * self._icap)
        box = np.zeros((cap, 4))
        box[: self._icap] = self.item_box
        node = np.full(cap, _NO, dtype=np.int64)
        node[: self._icap] = self.item_node
        self.item_box, self.item_node, self._icap = box, node, cap

    def _grow_nodes(self, need: int) -> None:
        if need <= self._ncap:
            return
        cap = max(need, 2 * self._ncap)

        def grow(a, fill):
            out = np.full((cap,) + a.shape[1:], fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self.node_center = grow(self.node_center, 0.0)
        self.node_half = grow(self.node_half, 0.0)
        self.node_child = grow(self.node_child, _NO)
        self.node_parent = grow(self.node_parent, _NO)
        self.node_depth = grow(self.node_depth, 0)
        self.node_own = grow(self.node_own, 0)
        self.node_total = grow(self.node_total, 0)
        self.node_used = grow(self.node_used, False)
        self._ncap = cap

    def _alloc_ids(self, k: int) -> np.ndarray:
        reuse = sorted(self._free_ids)[:k]
        self._free_ids = sorted(set(self._free_ids) - set(reuse))
        fresh = k - len(reuse)
        self._grow_items(self._n_items + fresh)
        new = np.arange(self._n_items, self._n_items + fresh, dtype=np.int64)
        self._n_items += fresh
        return np.concatenate([np.asarray(reuse, dtype=np.int64), new])

    def _check_ids(self, ids) -> np.ndarray:
        i = np.atleast_1d(np.asarray(ids))
        if i.size and not np.issubdtype(i.dtype, np.integer):
            raise VoxNavError(f"item ids must be integers, got {i.dtype}")
        given = i.ravel()
        # Past int64 (uint64): unknown, named as given (a cast to int64 wrapped it negative).
        beyond = given > np.iinfo(np.int64).max if given.dtype.kind == "u" else None
        if beyond is not None and beyond.any():
            raise VoxNavError(
                f"unknown quadtree item id(s) {given[beyond].tolist()}: not inserted or already "
                "removed"
            )
        i = given.astype(np.int64)
        bad = (i < 0) | (i >= self._n_items)
        bad[~bad] = self.item_node[i[~bad]] < 0
        if bad.any():
            raise VoxNavError(
                f"unknown quadtree item id(s) {i[bad].tolist()}: not inserted or already removed"
            )
        if np.unique(i).shape[0] != i.shape[0]:
            raise VoxNavError(f"item ids repeat in one call: {i.tolist()}")
        return i

    # -- geometry ------------------------------------------------------------------------------

    def _contains(self, nodes: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """Is each box inside its node's loose square (``LOOSENESS`` x the node's square)?"""
        c = self.node_center[nodes]
        h = LOOSENESS * self.node_half[nodes][:, None]
        return ((boxes[:, :2] >= c - h) & (boxes[:, 2:] <= c + h)).all(axis=1)

    def _quadrant(self, nodes: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """The child quadrant 0..3 of each box's centre when the box fits that child's loose
        square, or -1 (too large for a child, or outside the node: possible only in the
        root)."""
        c = self.node_center[nodes]
        h = self.node_half[nodes][:, None]
        hi = (boxes[:, :2] + boxes[:, 2:]) * 0.5 >= c
        child_c = c + np.where(hi, 0.5, -0.5) * h
        loose = LOOSENESS * 0.5 * h
        fits = ((boxes[:, :2] >= child_c - loose) & (boxes[:, 2:] <= child_c + loose)).all(axis=1)
        fits &= self._contains(nodes, boxes) | (nodes == 0)
        q = hi[:, 0].astype(np.int64) + 2 * hi[:, 1].astype(np.int64)
        return np.where(fits, q, -1)

    def _descend(self, start: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """The deepest existing node at or below each start node that contains its box."""
        cur = start.copy()
        active = np.ones(cur.shape[0], dtype=bool)
        while active.any():
            idx = np.nonzero(active)[0]
            child = self.node_child[cur[idx]]
            q = np.where(child >= 0, self._quadrant(cur[idx], boxes[idx]), -1)
            go = q >= 0
            cur[idx[go]] = child[go] + q[go]
            active[idx[~go]] = False
        return cur

    def _add_counts(self, nodes: np.ndarray, delta: int) -> None:
        """Add delta to the own count of each node and the total of it and its ancestors."""
        if not nodes.shape[0]:
            return
        np.add.at(self.node_own, nodes, delta)
        cur = nodes
        while cur.shape[0]:
            np.add.at(self.node_total, cur, delta)
            cur = self.node_parent[cur]
            cur = cur[cur >= 0]

    # -- updates -------------------------------------------------------------------------------

    def insert(self, boxes) -> np.ndarray:
        """Insert boxes float (k, 4); returns their new ids int64 (k,) (freed ids are reused,
        lowest first)."""
        b = _boxes(boxes)
        ids = self._alloc_ids(b.shape[0])
        self._place(ids, b)
        return ids

    def remove(self, ids) -> None:
        """Remove items by id; an unknown or already removed id is a `VoxNavError`."""
        i = self._check_ids(ids)
        nodes = self.item_node[i]
        self.item_node[i] = _NO
        self._free_ids.extend(i.tolist())
        self._add_counts(nodes, -1)
        self._order = None
        self._merge_up(nodes)

    def move(self, ids, boxes) -> np.ndarray:
        """Give items new boxes float (k, 4). Items still inside their node's square only
        update their box; the others are re-inserted. Returns bool (k,): re-inserted."""
        i = self._check_ids(ids)
        b = _boxes(boxes)
        if b.shape[0] != i.shape[0]:
            raise VoxNavError(f"move got {i.shape[0]} ids but {b.shape[0]} boxes")
        nodes = self.item_node[i]
        stays = self._contains(nodes, b) | (nodes == 0)
        self.item_box[i[stays]] = b[stays]
        leave = ~stays
        if leave.any():
            self.reinserts += int(leave.sum())
            gone = nodes[leave]
            self.item_node[i[leave]] = _NO
            self._add_counts(gone, -1)
            self._place(i[leave], b[leave])
            self._merge_up(gone)
        return leave

    def _place(self, ids: np.ndarray, boxes: np.ndarray) -> None:
        self.item_box[ids] = boxes
        nodes = self._descend(np.zeros(ids.shape[0], dtype=np.int64), boxes)
        self.item_node[ids] = nodes
        self._add_counts(nodes, 1)
        self._order = None
        # Splitting can overfill a child (all items in one quadrant): repeat on the children.
        todo = np.unique(nodes)
        while todo.shape[0]:
            over = todo[
                (self.node_child[todo] < 0)
                & (self.node_own[todo] > self.capacity)
                & (self.node_depth[todo] < self.max_depth)
            ]
            made = [self._split(int(node)) for node in over]  # one per overflowing leaf
            todo = np.concatenate(made) if made else np.zeros(0, dtype=np.int64)

    def _split(self, node: int) -> np.ndarray:
        """Give a leaf four children and push down the items that fit one; returns the
        children that received items."""
        if self._free_blocks:
            first = self._free_blocks.pop()
        else:
            first = self._n_nodes
            self._grow_nodes(first + 4)
            self._n_nodes += 4
        kids = np.arange(first, first + 4)
        h = self.node_half[node] / 2.0
        c = self.node_center[node]
        self.node_center[kids] = c + h * np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]])
        self.node_half[kids] = h
        self.node_child[kids] = _NO
        self.node_parent[kids] = node
        self.node_depth[kids] = self.node_depth[node] + 1
        self.node_own[kids] = 0
        self.node_total[kids] = 0
        self.node_used[kids] = True
        self.node_child[node] = first
        mine = np.nonzero(self.item_node[: self._n_items] == node)[0]
        q = self._quadrant(np.full(mine.shape[0], node), self.item_box[mine])
        down = q >= 0
        target = first + q[down]
        self.item_node[mine[down]] = target
        counts = np.bincount(q[down], minlength=4)
        self.node_own[kids] = counts
        self.node_total[kids] = counts
        self.node_own[node] -= int(down.sum())
        self._order = None
        return kids[counts > 0]

    def _merge_up(self, nodes: np.ndarray) -> None:
        """Collapse the highest ancestor of each touched node whose subtree fell below
        ``merge_below`` (walks up one level per round; a path's length bounds it)."""
        if not nodes.shape[0] or self.merge_below == 0:
            return
        cur = np.unique(nodes)
        collapse: set[int] = set()
        while cur.shape[0]:
            internal = cur[(self.node_child[cur] >= 0) & (self.node_total[cur] < self.merge_below)]
            collapse.update(internal.tolist())
            cur = np.unique(self.node_parent[cur])
            cur = cur[cur >= 0]
        # Collapse top-down; a node inside an already collapsed subtree is gone.
        for node in sorted(collapse, key=lambda n: self.node_depth[n]):
            if self.node_used[node] and self.node_child[node] >= 0:
                self._collapse(node)

    def _collapse(self, node: int) -> None:
        sub = []
        frontier = np.array([self.node_child[node]])
        while frontier.shape[0]:
            kids = (frontier[:, None] + np.arange(4)).ravel()
            sub.append(kids)
            frontier = self.node_child[kids]
            frontier = frontier[frontier >= 0]
        sub_nodes = np.concatenate(sub)
        n = self._n_items
        moved = np.nonzero(np.isin(self.item_node[:n], sub_nodes))[0]
        self.item_node[moved] = node
        self.node_own[node] += moved.shape[0]
        blocks = np.unique(sub_nodes[::4])
        self._free_blocks.extend(blocks.tolist())
        self.node_used[sub_nodes] = False
        self.node_child[sub_nodes] = _NO
        self.node_own[sub_nodes] = 0
        self.node_total[sub_nodes] = 0
        self.node_child[node] = _NO
        self._order = None

    # -- queries -------------------------------------------------------------------------------

    def _csr(self) -> tuple[np.ndarray, np.ndarray]:
        if self._order is None or self._start is None:
            n = self._n_items
            live = np.nonzero(self.item_node[:n] >= 0)[0]
            nodes = self.item_node[live]
            order = live[np.argsort(nodes, kind="stable")]
            start = np.zeros(self._n_nodes + 1, dtype=np.int64)
            np.cumsum(np.bincount(nodes, minlength=self._n_nodes), out=start[1:])
            self._order, self._start = order, start
        return self._order, self._start

    def query(self, box) -> np.ndarray:
        """int64 ids (ascending) of the items whose boxes overlap ``box`` (xmin, ymin, xmax,
        ymax) [Units: wu]; touching counts."""
        one = _boxes(box, "box")
        if one.shape[0] != 1:
            raise VoxNavError(
                f"box must be one (xmin, ymin, xmax, ymax), got {one.shape[0]} rows: use "
                "query_many for several"
            )
        return self.query_many(one)[0]

    def query_many(self, boxes) -> list[np.ndarray]:
        """`query` for each row of boxes float (q, 4), all queries descending together."""
        ids, owner = self.query_pairs(boxes)
        q = _boxes(boxes).shape[0]
        if not q:
            return []
        split = np.searchsorted(owner, np.arange(1, q))
        return np.split(ids, split)

    def query_pairs(self, boxes) -> tuple[np.ndarray, np.ndarray]:
        """All overlaps of the query boxes float (q, 4) as flat pairs (item ids, query index),
        sorted by query then id."""
        b = _boxes(boxes)
        if not b.shape[0]:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        order, start = self._csr()
        q_idx = np.arange(b.shape[0], dtype=np.int64)
        nodes = np.zeros(b.shape[0], dtype=np.int64)
        visit_q, visit_n = [], []
        while nodes.shape[0]:
            c = self.node_center[nodes]
            h = LOOSENESS * self.node_half[nodes][:, None]
            # The root holds items reaching outside the world, so it is always visited.
            hit = ((b[q_idx, :2] <= c + h).all(axis=1) & (b[q_idx, 2:] >= c - h).all(axis=1)) | (
                nodes == 0
            )
            q_idx, nodes = q_idx[hit], nodes[hit]
            visit_q.append(q_idx)
            visit_n.append(nodes)
            child = self.node_child[nodes]
            inner = child >= 0
            q_idx = np.repeat(q_idx[inner], 4)
            nodes = (child[inner][:, None] + np.arange(4)).ravel()
        vq = np.concatenate(visit_q)
        vn = np.concatenate(visit_n)
        counts = start[vn + 1] - start[vn]
        pair_q = np.repeat(vq, counts)
        first = np.repeat(start[vn] - np.cumsum(counts) + counts, counts)
        items = order[first + np.arange(pair_q.shape[0])]
        ib = self.item_box[items]
        qb = b[pair_q]
        keep = (ib[:, :2] <= qb[:, 2:]).all(axis=1) & (ib[:, 2:] >= qb[:, :2]).all(axis=1)
        items, pair_q = items[keep], pair_q[keep]
        sort = np.lexsort((items, pair_q))
        return items[sort], pair_q[sort]
