"""RecastDemo's triangle chunking (``PartitionedMesh``, formerly ``rcChunkyTriMesh``).

A k-d tree over the triangles' 2D bounds (VoxNav's X/Y = Recast's X/Z): a node of more than
``tris_per_chunk`` triangles sorts its triangles by the minimum corner along the longer side of
its bounds and splits them in half (left half first); a leaf (a *chunk*) keeps its triangles in
that order. Nodes are stored depth first, an inner node's ``tri_index`` is minus the size of its
subtree (Recast's escape index). A tiled bake rasterizes the leaves overlapping a tile, leaf by
leaf, so the chunk order sets the triangle order and with it which area wins a span merge.

**Sort order, exactly as RecastDemo on glibc**: RecastDemo sorts with ``qsort`` and a comparator
that returns ``(int)(a.bmin - b.bmin)`` (a float32 difference truncated toward zero), so keys
less than one unit apart compare equal, and the comparator is not transitive. glibc's ``qsort``
is a stable top-down merge sort (``msort_with_tmp``: halves of ``n / 2`` and ``n - n / 2``,
take from the left run while ``cmp(left, right) <= 0``); `_msort_segments` replays it, so the
resulting order equals RecastDemo's on Linux. The comparator is exact: ``float32(a - b) >= 1``
holds exactly when the real a - b >= 1 - 2**-25, i.e. when ``a`` is at or above a float32
bound computed per ``b`` (`_take_right_bound`); keys are compared as ordered integers.

Vectorized: each merge round of every node of a tree depth runs at once. A right item's place
in a merge is the running maximum of "the first left item at or above its bound", which equals
the sequential merge's even for runs that are not monotone (proof in `_msort_level`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: RecastDemo's triangles per chunk.
TRIS_PER_CHUNK = 256
#: ``(int)(float32(a - b)) > 0`` exactly when the exact difference a - b is at least this: the
#: float32 rounding of a difference in [1 - 2**-25, 1) is 1.0 (ties to even).
_ONE_IN_F32 = 1.0 - 2.0**-25


def _f32_order_keys(values: np.ndarray) -> np.ndarray:
    """int64 keys ordered as the float32 values are (the IEEE bits, negatives flipped)."""
    bits = np.asarray(values, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(bits >= 0, bits, -(bits & 0x7FFFFFFF))


def _take_right_bound(values: np.ndarray) -> np.ndarray:
    """Order keys of the smallest float32 x with x - v >= 1 - 2**-25 exactly, per v.

    The comparator's ``(int)(a - b) > 0`` is ``float32(a - b) >= 1``, which (round to nearest,
    ties to even) holds exactly when the real difference is at least 1 - 2**-25; as ``a`` is a
    float32, that is ``a >= x`` for this x.
    """
    v = np.asarray(values, dtype=np.float32).astype(np.float64)
    target = v + _ONE_IN_F32  # exact in float64 for |v| < 2**28
    x = target.astype(np.float32)
    low = x.astype(np.float64) < target
    x[low] = np.nextafter(x[low], np.float32(np.inf))
    return _f32_order_keys(x)


#: Segment offset of the order keys (above any float32 order key's magnitude).
_SEG = np.int64(1) << np.int64(33)


def _msort_level(order, okey, tkey, lo, n1, n2):
    """One round of glibc's merges: for each entry, merge the runs order[lo : lo+n1] and
    order[lo+n1 : lo+n1+n2] (n1, n2 >= 1; sorted or not), all entries at once.

    okey/tkey: int64 order key of each item and of its take-right bound (both per item id).
    The merge takes the right item before left item L exactly when okey[L] >= tkey[R].
    Returns nothing; ``order`` is rewritten in place.
    """
    ne = lo.shape[0]
    merges = np.arange(ne, dtype=np.int64)
    e_l = np.repeat(merges, n1)
    e_r = np.repeat(merges, n2)
    l_start = np.zeros(ne, dtype=np.int64)
    np.cumsum(n1[:-1], out=l_start[1:])
    r_start = np.zeros(ne, dtype=np.int64)
    np.cumsum(n2[:-1], out=r_start[1:])
    n_left = e_l.shape[0]
    n_right = e_r.shape[0]
    # Positions in ``order``: left item i of merge e at lo[e] + i, right item j at lo[e]+n1[e]+j.
    left_pos = np.repeat(lo - l_start, n1) + np.arange(n_left, dtype=np.int64)
    right_pos = np.repeat(lo + n1 - r_start, n2) + np.arange(n_right, dtype=np.int64)
    left = order[left_pos]
    right = order[right_pos]
    # f_j: the first left item at or above right item j's bound; the prefix maximum pm is
    # non-decreasing in each merge, so f_j = F(bound_j) with F(b) = #{i: pm[i] < b} monotone.
    lk = okey[left]
    lk += e_l * _SEG
    pm = np.maximum.accumulate(lk)
    del lk
    # The stop of each right item (left items output before it) is the running max of f.
    # Sequentially the stop s_j is the first i >= s_{j-1} with L[i] >= bound_j. If f_j >= the
    # previous stop that is f_j. Else the previous stop is some f_k (k < j) > f_j; were
    # L[f_k] < bound_j, then bound_k <= L[f_k] < bound_j <= L[f_j] with f_j < f_k, so f_k
    # would not be the first item at or above bound_k: hence L[f_k] >= bound_j, s_j = f_k.
    # As F is monotone, max_{k<=j} F(bound_k) = F(max_{k<=j} bound_k): one search with the
    # running maximum of the bounds, whose needles are sorted (a cheaper search).
    rt = tkey[right]
    rt += e_r * _SEG
    np.maximum.accumulate(rt, out=rt)
    c = np.searchsorted(pm, rt, side="left")
    del pm, rt
    c -= l_start[e_r]
    # Output places: right item j goes after c[j] left items, to lo + c[j] + j; left item i
    # goes after the right items whose stop is <= i, to lo + i + #{j: c[j] <= i}. That count
    # is a running sum of stops, bucketed by merge (n1 + 1 buckets per merge: stops 0..n1).
    bucket = l_start[e_r]
    bucket += e_r
    bucket += c
    del e_r
    before = np.cumsum(np.bincount(bucket, minlength=n_left + ne))
    del bucket
    right_pos -= np.repeat(n1, n2)
    right_pos += c
    del c
    order[right_pos] = right
    del right_pos, right
    left_pos += before[np.arange(n_left, dtype=np.int64) + e_l]
    left_pos -= r_start[e_l]
    del before, e_l
    order[left_pos] = left


def _msort_segments(order: np.ndarray, okey, tkey, seg_lo, seg_n) -> None:
    """glibc's msort of every segment order[lo : lo+n] (in place), all segments at once."""
    levels = []
    lo = np.asarray(seg_lo, dtype=np.int64)
    n = np.asarray(seg_n, dtype=np.int64)
    while True:
        split = n > 1
        lo, n = lo[split], n[split]
        if lo.shape[0] == 0:
            break
        n1 = n // 2
        # Stored narrow (the deepest rounds hold one entry per pair of items: at 9M items
        # int64 would keep ~200 MB of bookkeeping alive).
        levels.append((lo.astype(np.int32), n1.astype(np.int32), (n - n1).astype(np.int32)))
        lo = np.stack([lo, lo + n1], axis=1).ravel()  # children stay in position order
        n = np.stack([n1, n - n1], axis=1).ravel()
    while levels:
        lo, n1, n2 = (a.astype(np.int64) for a in levels.pop())
        _msort_level(order, okey, tkey, lo, n1, n2)


@dataclass
class PartitionedMesh:
    """The chunk tree. Node arrays are in Recast's depth-first node order.

    ``node_bmin``/``node_bmax`` float32 (nodes, 2) X/Y bounds [Units: wu]; ``node_tri_index``
    int64 (nodes,): a leaf's first row in ``tri_order``, minus the subtree size for an inner
    node; ``node_num_tris`` int64 (nodes,) (a leaf's triangle count). ``tri_order`` int64 (m,)
    the input triangle ids in chunk order.
    """

    node_bmin: np.ndarray
    node_bmax: np.ndarray
    node_tri_index: np.ndarray
    node_num_tris: np.ndarray
    tri_order: np.ndarray
    max_tris_per_chunk: int

    @property
    def nnodes(self) -> int:
        return int(self.node_tri_index.shape[0])

    def leaves(self) -> np.ndarray:
        """int64 ids of the leaf nodes, in node order."""
        return np.nonzero(self.node_tri_index >= 0)[0]

    def nodes_overlapping_rect(self, bmin, bmax) -> np.ndarray:
        """Leaf ids whose bounds overlap the closed rectangle bmin..bmax (X/Y), in node order.

        Equals Recast's escape-index traversal: a node's bounds contain its children's, so a
        leaf overlaps only if its ancestors do.
        """
        lo = np.asarray(bmin, dtype=np.float32)[:2]
        hi = np.asarray(bmax, dtype=np.float32)[:2]
        leaf = self.node_tri_index >= 0
        hit = (
            leaf
            & (lo[0] <= self.node_bmax[:, 0])
            & (hi[0] >= self.node_bmin[:, 0])
            & (lo[1] <= self.node_bmax[:, 1])
            & (hi[1] >= self.node_bmin[:, 1])
        )
        return np.nonzero(hit)[0]

    def chunk_triangles(self, nodes) -> np.ndarray:
        """int64 input triangle ids of the given leaves, leaf after leaf, in chunk order."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        starts = self.node_tri_index[nodes]
        counts = self.node_num_tris[nodes]
        total = int(counts.sum())
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
        return self.tri_order[offsets + np.arange(total)]


def partition_mesh(verts, tris, tris_per_chunk: int = TRIS_PER_CHUNK) -> PartitionedMesh:
    """RecastDemo's ``PartitionedMesh::PartitionMesh`` on a Z-up triangle soup.

    verts float32 (n, 3) [Units: wu]; tris int (m, 3) [Limit: m < 2**31]; tris_per_chunk
    [Limit: >= 1].
    The k-d tree is built depth by depth: every node of one depth is sorted at once by
    `_msort_segments` (glibc's merge sort, each merge round vectorized over all nodes), then
    the nodes are numbered depth first as RecastDemo's recursion numbers them.
    """
    verts = np.asarray(verts, dtype=np.float32)
    tris = np.asarray(tris, dtype=np.int64)
    m = int(tris.shape[0])
    if tris_per_chunk < 1:
        raise ValueError(f"tris_per_chunk must be >= 1, got {tris_per_chunk}")
    corners = verts[:, :2][tris]  # (m, 3, 2)
    tmin = corners.min(axis=1)
    tmax = corners.max(axis=1)
    del corners
    order = np.arange(m, dtype=np.int64)
    found: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    lo = np.zeros(1 if m else 0, dtype=np.int64)
    n = np.full(lo.shape[0], m, dtype=np.int64)
    while lo.shape[0]:
        pos = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
        starts = np.zeros(n.shape[0], dtype=np.int64)
        np.cumsum(n[:-1], out=starts[1:])
        items = order[pos]
        bmin = np.stack([np.minimum.reduceat(tmin[items, k], starts) for k in range(2)], axis=1)
        bmax = np.stack([np.maximum.reduceat(tmax[items, k], starts) for k in range(2)], axis=1)
        for k in range(lo.shape[0]):
            found[(int(lo[k]), int(n[k]))] = (bmin[k], bmax[k])
        inner = n > tris_per_chunk
        if not inner.any():
            break
        use_x = (bmax[:, 0] - bmin[:, 0]) >= (bmax[:, 1] - bmin[:, 1])  # float32, as Recast
        item_x = np.repeat(use_x, n)
        del pos
        # The sort keys by triangle id (free the per-level temporaries first: at 9M triangles
        # each is 72 MB, and the merge rounds need their own).
        # (Computed per depth from the chosen axis's minima, not kept for both axes.)
        key = np.where(item_x, tmin[items, 0], tmin[items, 1])
        del item_x
        full_okey = np.zeros(m, dtype=np.int64)
        full_okey[items] = _f32_order_keys(key)
        full_tkey = np.zeros(m, dtype=np.int64)
        full_tkey[items] = _take_right_bound(key)
        del items, key
        _msort_segments(order, full_okey, full_tkey, lo[inner], n[inner])
        del full_okey, full_tkey
        lo, n = lo[inner], n[inner]
        half = n // 2
        lo = np.stack([lo, lo + half], axis=1).ravel()
        n = np.stack([half, n - half], axis=1).ravel()

    n_chunks = int(math.ceil(np.float32(m) / np.float32(tris_per_chunk)))
    max_nodes = n_chunks * 4
    rows: list[tuple[np.ndarray, np.ndarray, int, int]] = []

    def visit(start: int, count: int) -> None:
        icur = len(rows)
        if icur >= max_nodes:  # Recast's guard; the halving tree never reaches it
            return
        bmin, bmax = found[(start, count)]
        rows.append((bmin, bmax, start, count))
        if count > tris_per_chunk:
            half = count // 2
            visit(start, half)
            visit(start + half, count - half)
            rows[icur] = (bmin, bmax, icur - len(rows), count)

    if m:
        visit(0, m)
    node_bmin = np.array([r[0] for r in rows], dtype=np.float32).reshape(-1, 2)
    node_bmax = np.array([r[1] for r in rows], dtype=np.float32).reshape(-1, 2)
    node_tri = np.array([r[2] for r in rows], dtype=np.int64)
    node_num = np.array([r[3] for r in rows], dtype=np.int64)
    leaf_counts = np.where(node_tri >= 0, node_num, 0)
    return PartitionedMesh(
        node_bmin=node_bmin,
        node_bmax=node_bmax,
        node_tri_index=node_tri,
        node_num_tris=np.where(node_tri >= 0, node_num, 0),
        tri_order=order,
        max_tris_per_chunk=int(leaf_counts.max(initial=0)),
    )


__all__ = ["TRIS_PER_CHUNK", "PartitionedMesh", "partition_mesh"]
