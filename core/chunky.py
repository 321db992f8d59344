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
take from the left run while ``cmp(left, right) <= 0``); `_glibc_msort_order` replays it, so the
resulting order equals RecastDemo's on Linux.
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


def _glibc_msort_order(keys: list[float], idx: list[int]) -> list[int]:
    """``idx`` reordered by glibc's stable merge sort with RecastDemo's truncating comparator.

    ``keys[i]`` is the float32 sort key of item ``idx[i]``; returns the new order of ``idx``.
    """
    n = len(idx)
    if n <= 1:
        return list(idx)
    order = list(range(n))
    tmp = [0] * n
    thresh = _ONE_IN_F32

    def msort(lo: int, n_items: int) -> None:
        if n_items <= 1:
            return
        n1 = n_items // 2
        n2 = n_items - n1
        msort(lo, n1)
        msort(lo + n1, n2)
        i, end1 = lo, lo + n1
        j, end2 = lo + n1, lo + n_items
        out = 0
        # Take the right item only when cmp(left, right) > 0: left key - right key >= 1.
        while i < end1 and j < end2:
            a, b = order[i], order[j]
            if keys[a] - keys[b] >= thresh:
                tmp[out] = b
                j += 1
            else:
                tmp[out] = a
                i += 1
            out += 1
        while i < end1:
            tmp[out] = order[i]
            i += 1
            out += 1
        order[lo : lo + out] = tmp[:out]

    msort(0, n)
    return [idx[k] for k in order]


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

    verts float32 (n, 3) [Units: wu]; tris int (m, 3); tris_per_chunk [Limit: >= 1].
    """
    verts = np.asarray(verts, dtype=np.float32)
    tris = np.asarray(tris, dtype=np.int64)
    m = int(tris.shape[0])
    xy = verts[:, :2]
    corners = xy[tris]  # (m, 3, 2)
    tmin = corners.min(axis=1)
    tmax = corners.max(axis=1)
    n_chunks = int(math.ceil(np.float32(m) / np.float32(tris_per_chunk)))
    max_nodes = n_chunks * 4
    node_bmin = np.zeros((max_nodes, 2), dtype=np.float32)
    node_bmax = np.zeros((max_nodes, 2), dtype=np.float32)
    node_tri = np.zeros(max_nodes, dtype=np.int64)
    node_num = np.zeros(max_nodes, dtype=np.int64)
    tri_order: list[np.ndarray] = []
    key_x = tmin[:, 0].astype(np.float64)
    key_y = tmin[:, 1].astype(np.float64)
    state = {"node": 0, "tri": 0}

    def subdivide(ids: np.ndarray) -> None:
        icur = state["node"]
        if icur >= max_nodes:
            return
        state["node"] += 1
        node_bmin[icur] = tmin[ids].min(axis=0)
        node_bmax[icur] = tmax[ids].max(axis=0)
        count = ids.shape[0]
        if count <= tris_per_chunk:
            node_tri[icur] = state["tri"]
            node_num[icur] = count
            state["tri"] += count
            tri_order.append(ids)
            return
        x_len = np.float32(node_bmax[icur, 0] - node_bmin[icur, 0])
        y_len = np.float32(node_bmax[icur, 1] - node_bmin[icur, 1])
        keys = key_x if x_len >= y_len else key_y
        ids = np.asarray(_glibc_msort_order(keys[ids].tolist(), ids.tolist()), dtype=np.int64)
        split = count // 2
        subdivide(ids[:split])
        subdivide(ids[split:])
        node_tri[icur] = icur - state["node"]

    if m:
        subdivide(np.arange(m, dtype=np.int64))
    nnodes = state["node"]
    leaf_counts = np.where(node_tri >= 0, node_num, 0)
    return PartitionedMesh(
        node_bmin=node_bmin[:nnodes].copy(),
        node_bmax=node_bmax[:nnodes].copy(),
        node_tri_index=node_tri[:nnodes].copy(),
        node_num_tris=node_num[:nnodes].copy(),
        tri_order=np.concatenate(tri_order) if tri_order else np.zeros(0, dtype=np.int64),
        max_tris_per_chunk=int(leaf_counts.max(initial=0)),
    )


__all__ = ["TRIS_PER_CHUNK", "PartitionedMesh", "partition_mesh"]
