"""RecastDemo's triangle chunking (``PartitionedMesh``, formerly ``rcChunkyTriMesh``).

A k-d tree over the triangles' 2D bounds (VoxNav's X/Y = Recast's X/Z): a node of more than
``tris_per_chunk`` triangles sorts its triangles by the minimum corner along the longer side of
its bounds and splits them in half (left half first); a leaf (a *chunk*) keeps its triangles in
that order. Nodes are stored depth first, an inner node's ``tri_index`` is minus the size of its
subtree (Recast's escape index). A tiled bake rasterizes the leaves overlapping a tile, leaf by
leaf, so the chunk order sets the triangle order and with it which area wins a span merge.

**Sort order, exactly as RecastDemo on glibc**: RecastDemo sorts with ``qsort`` and a comparator
that returns ``(int)(a.bmin - b.bmin)`` (a float32 difference truncated toward zero), so keys
less than one unit apart compare equal, and the comparator is not transitive: the order depends
on the exact sequence of merges. glibc's ``qsort`` is a stable top-down merge sort
(``msort_with_tmp``: halves of ``n / 2`` and ``n - n / 2``, take from the left run while
``cmp(left, right) <= 0``); `_msort_runs` replays it, so the resulting order equals RecastDemo's
on Linux. The comparator is exact: ``float32(a - b) >= 1`` holds exactly when the real a - b >=
1 - 2**-25, i.e. when ``a`` is at or above a float32 bound computed per ``b``
(`_take_right_bound`); keys are compared as ordered integers.

**How the merge sort is vectorized.** A merge of a left run L and a right run R puts right item j
after exactly those left items whose running maximum of keys is below the running maximum of
the right items' bounds up to j (proof in `_merge_round`); both running maxima are
non-decreasing, so one stable sort of the two sequences side by side interleaves them as the
sequential merge does. glibc's recursion splits every node into halves of ``n // 2`` and
``n - n // 2``, so on one level of it all nodes hold ``a`` or ``a + 1`` items: each level is a
2-D array of rows (nodes) of equal width, the shorter rows padded at their end with keys above
every real one (pads merge to the end of their row and never move a real item). A whole level is
then merged with one stable argsort (two sorted runs: NumPy's timsort merges them in linear
time) and two gathers (the ids, and both keys packed in one int64). The lower levels run block
by block (`_BLOCK_ITEMS` items, on `WORKERS` threads), so their state stays cache-sized.
Work: O(n log n) per sort and one sort per tree depth, O(n log^2 n) in all as in RecastDemo
(about 15 ns per item and level here, some 20 times C's: 3-4 s of CPU for 1M triangles, 60-70
s for 9M).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import threads
from .arrays import select

#: RecastDemo's triangles per chunk.
TRIS_PER_CHUNK = 256
#: ``(int)(float32(a - b)) > 0`` exactly when the exact difference a - b is at least this: the
#: float32 rounding of a difference in [1 - 2**-25, 1) is 1.0 (ties to even).
_ONE_IN_F32 = 1.0 - 2.0**-25
#: Order keys of the pads that fill short rows: above the order key of any float32 but NaN
#: (the input is checked finite), the right pad above the left one.
_PAD_OKEY = np.int32(0x7FFFFFFE)
_PAD_TKEY = np.int32(0x7FFFFFFF)
#: Both pads in one `_pack_keys` value.
_PAD_KEYS = np.array([[_PAD_OKEY, _PAD_TKEY]], dtype=np.int32).view(np.int64)[0, 0]
#: The merge keys: row << 33 | (order key + 2**31), so each row's keys lie above the previous
#: row's (order keys are int32).
_ROW_SHIFT = np.int64(33)
_KEY_BIAS = np.int64(1) << np.int64(31)
#: Threads merging the lower levels' blocks at once.
WORKERS = min(2, os.cpu_count() or 1)
#: Triangles from which `partition_mesh` sorts subtrees on its executor (on a 2-process pool
#: already started: 40k triangles 56 -> 45 ms, 91k 128 -> 82 ms, 162k 233 -> 170 ms; below,
#: sending the work costs about what the second core saves).
PARALLEL_MIN_TRIANGLES = 1 << 15
#: Items per block of the merge sort's lower levels (merged block after block; a block's
#: state, about 32 bytes an item, stays within the last-level cache). Measured in one process
#: on this VM: a 500k-triangle subtree 728-734 ms of CPU with 2^16, 664-675 with 2^18, 722
#: with 2^19 and 2^20; the 10x10 tiling's whole tree 1.34-1.37 s wall with 2^16, 1.08-1.12 s
#: with 2^18 (per level a block pays some 70 NumPy calls, the running maxima's included).
_BLOCK_ITEMS = 1 << 18


def _f32_order_keys(values: np.ndarray) -> np.ndarray:
    """int32 keys ordered as the float32 values are (the IEEE bits, negatives flipped)."""
    bits = np.asarray(values, dtype=np.float32).view(np.int32)
    return np.where(bits >= 0, bits, -(bits & np.int32(0x7FFFFFFF))).astype(np.int32)


def _msort_keys(values: np.ndarray) -> np.ndarray:
    """`_pack_keys` of float32 ``values`` (n,): each one's order key and take-right bound, what
    `_msort_runs` compares."""
    return _pack_keys(_f32_order_keys(values), _take_right_bound(values))


def _take_right_bound(values: np.ndarray) -> np.ndarray:
    """int32 order keys of the smallest float32 x with x - v >= 1 - 2**-25 exactly, per v.

    The comparator's ``(int)(a - b) > 0`` is ``float32(a - b) >= 1``, which (round to nearest,
    ties to even) holds exactly when the real difference is at least 1 - 2**-25; as ``a`` is a
    float32, that is ``a >= x`` for this x.
    """
    v = np.asarray(values, dtype=np.float32).astype(np.float64)
    target = v + _ONE_IN_F32  # exact in float64 for |v| < 2**28
    with np.errstate(over="ignore"):
        x = target.astype(np.float32)
    low = x.astype(np.float64) < target
    x[low] = np.nextafter(x[low], np.float32(np.inf))
    return _f32_order_keys(x)


#: The unsigned integer type of each item size (the pair merge's wrapping arithmetic).
_UNSIGNED = {4: np.uint32, 8: np.uint64}
#: Row widths up to which `_merge_round` runs its running maxima column by column.
_COLUMN_MAX_WIDTH = 32
#: Items per block of `_running_max`'s passes, and the length from which it takes them.
_MAX_BLOCK = 32
_BLOCKED_MAX_FROM = 1 << 12


def _running_max(values: np.ndarray) -> None:
    """``np.maximum.accumulate`` of a contiguous 1-D array, in place.

    NumPy's running maximum is one dependency chain, item after item (about 3.2 ns an item
    here). From `_BLOCKED_MAX_FROM` items the array runs as blocks of `_MAX_BLOCK`: one pass
    per place in a block takes the maximum with the place before it in every block at once
    (independent items: 1.8 ns an item in all), then each block takes the maximum of all
    blocks before it. Integer maxima: the same values.
    """
    n = values.shape[0]
    if n < _BLOCKED_MAX_FROM:
        np.maximum.accumulate(values, out=values)
        return
    body = n - n % _MAX_BLOCK
    places = values[:body].reshape(-1, _MAX_BLOCK).T  # (place in block, block), a view
    for i in range(1, _MAX_BLOCK):
        np.maximum(places[i - 1], places[i], out=places[i])
    before = np.maximum.accumulate(places[-1])  # the maximum up to each block's end
    np.maximum(places[:, 1:], before[None, :-1], out=places[:, 1:])
    if body < n:
        tail = values[body:]
        tail[0] = max(tail[0], before[-1])
        np.maximum.accumulate(tail, out=tail)


def _merge_round(ids, keys, n_rows: int, width: int, out_width: int, odd_even: bool):
    """One level of glibc's merges: row r of the output merges left run L = row r of the
    second half of the input with right run R = row r of its first half.

    ids int (2 * n_rows * width,) and keys: `_pack_keys` of the same items: 2 * n_rows rows
    of ``width`` items, the right runs' rows first, then the left runs' (each row padded at
    its end). Returns the same two for the n_rows merged rows of ``out_width`` items (their
    pads cut off where the row is longer), rows in natural order, or with ``odd_even`` the odd
    rows first then the even ones (the next level's input).

    The sequential merge takes R[j] before L[i] exactly when key(L[i]) >= bound(R[j]). Its stop
    s_j (left items output before R[j]) is the first i >= s_{j-1} with L[i] >= bound_j. With
    f_j the first i with L[i] >= bound_j: if f_j >= s_{j-1}, s_j = f_j. Else s_{j-1} = f_k for
    some k < j with f_k > f_j; were L[f_k] < bound_j, then bound_k <= L[f_k] < bound_j <=
    L[f_j] with f_j < f_k, so f_k would not be the first item at or above bound_k: hence
    L[f_k] >= bound_j and s_j = f_k. So s_j = max_{k<=j} f_k = #{i: pm_i < rt_j} with pm the
    running maximum of the left keys and rt the running maximum of the right bounds: R[j]
    comes before L[i] exactly when rt_j <= pm_i, which is where a stable sort of the rt
    sequence followed by the pm sequence places it.
    """
    half = n_rows * width
    pairs = keys.view(np.int32).reshape(-1, 2)  # (order key, take-right bound) per item
    if width == 1:
        # Runs of one item (the deepest level, which has the most rows): R goes first exactly
        # when key(L) >= bound(R), a pads' comparison included (see `_PAD_OKEY`).
        right_first = pairs[half:, 0] >= pairs[:half, 1]
        # Rows written straight to their places in the next level's layout (odd rows first,
        # then the even ones), the pair's first item by a branch-free selection and its
        # second as the sum less the first (integer bits, wrapping: exact).
        parts = (slice(1, None, 2), slice(0, None, 2)) if odd_even else (slice(None),)
        merged = []
        for values in (ids, keys):
            right, left = values[:half], values[half:]
            out = np.empty((n_rows, 2), dtype=values.dtype)
            bits = _UNSIGNED[values.dtype.itemsize]
            at = 0
            for pick in parts:
                first = select(right_first[pick], right[pick], left[pick])
                end = at + first.shape[0]
                out[at:end, 0] = first
                second = out[at:end, 1].view(bits)
                np.add(right[pick].view(bits), left[pick].view(bits), out=second)
                second -= first.view(bits)
                at = end
            merged.append(out.reshape(-1))
        return merged[0][: n_rows * out_width], merged[1][: n_rows * out_width]
    row_key = np.arange(n_rows, dtype=np.int64) << _ROW_SHIFT
    row_key += _KEY_BIAS
    merge_key = np.empty(2 * half, dtype=np.int64)
    for part, column in ((slice(0, half), 1), (slice(half, 2 * half), 0)):
        rows = merge_key[part].reshape(n_rows, width)
        np.add(pairs[part, column].reshape(n_rows, width), row_key[:, None], out=rows)
        if width <= _COLUMN_MAX_WIDTH:
            # Narrow rows: the running maximum column after column (width - 1 passes over
            # every row at once; each row's keys lie above all earlier rows', so per row is
            # the same as over the whole run).
            for k in range(1, width):
                np.maximum(rows[:, k - 1], rows[:, k], out=rows[:, k])
        else:
            _running_max(merge_key[part])
    del row_key
    perm = np.argsort(merge_key, kind="stable").reshape(n_rows, 2 * width)
    del merge_key
    if odd_even:  # the odd rows, then the even ones: two strided copies, no row gather
        take = np.concatenate([perm[1::2, :out_width], perm[0::2, :out_width]]).reshape(-1)
    else:
        take = np.ascontiguousarray(perm[:, :out_width]).reshape(-1)
    del perm
    return np.take(ids, take), np.take(keys, take)


def _pack_keys(okeys, tkeys) -> np.ndarray:
    """int64 (n,): each item's int32 order key and take-right bound in one value (moved
    together; read back through an int32 (n, 2) view: column 0 the key, 1 the bound)."""
    pairs = np.empty((np.shape(okeys)[0], 2), dtype=np.int32)
    pairs[:, 0] = okeys
    pairs[:, 1] = tkeys
    return pairs.view(np.int64).reshape(-1)


def _split(starts: np.ndarray, sizes: np.ndarray, levels: int):
    """Node starts and sizes ``levels`` levels down glibc's recursion (halves n // 2 and
    n - n // 2), children in order."""
    for _ in range(levels):
        half = sizes // 2
        starts = np.stack([starts, starts + half], axis=1).reshape(-1)
        sizes = np.stack([half, sizes - half], axis=1).reshape(-1)
    return starts, sizes


def _odd_even(values: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``width`` items reordered: the odd rows first, then the even ones."""
    rows = values.reshape(-1, width)
    return np.concatenate([rows[1::2], rows[0::2]]).reshape(-1)


def _msort_runs(ids, keys, seg_n, workers: int | None = None) -> np.ndarray:
    """glibc's msort of every run of ``ids`` (runs of seg_n items, back to back), all at once.

    ids int (n,); keys int64 (n,) the `_pack_keys` of the items at each place; seg_n int
    (runs,) [Limit: >= 0]. Returns the ids, each run in glibc's sorted order. The lower levels'
    blocks are merged on ``workers`` threads (default `WORKERS`; NumPy releases the GIL in
    its loops, but the merges hold it for much of their time: 2 threads gain about 10 %).
    Memory: about 32 bytes per item and level slot (a slot per item, plus one per node of
    the level).
    """
    seg_n = np.asarray(seg_n, dtype=np.int64)
    top = int(seg_n.max(initial=0))
    if top <= 1:
        return ids.copy()
    depth = top.bit_length()  # 2**depth > top: the deepest level's nodes hold 0 or 1 items
    n_items = ids.shape[0]
    seg_lo = np.cumsum(seg_n) - seg_n
    # The levels below ``upper`` run block by block: whole subtrees of the upper level's nodes.
    upper = max(0, depth - _BLOCK_ITEMS.bit_length() + 1)
    up_starts, up_sizes = _split(seg_lo, seg_n, upper)
    per_block = max(1, _BLOCK_ITEMS // ((top >> upper) + 1))
    n_upper = up_starts.shape[0]

    def merge_block(first: int) -> tuple[np.ndarray, np.ndarray, int]:
        """The block of upper-level nodes first.. merged up to the upper level."""
        starts, sizes = _split(
            up_starts[first : first + per_block], up_sizes[first : first + per_block],
            depth - upper,
        )  # fmt: skip
        real = sizes > 0
        at = np.minimum(starts, n_items - 1)
        some_ids = _odd_even(np.where(real, ids[at], 0), 1)
        some_keys = _odd_even(np.where(real, keys[at], _PAD_KEYS), 1)
        del starts, sizes, real, at
        n_nodes = min(per_block, n_upper - first)
        width = 1
        for level in range(depth - 1, upper - 1, -1):
            out_width = (top >> level) + 1
            some_ids, some_keys = _merge_round(
                some_ids, some_keys, n_nodes << (level - upper), width, out_width, level > upper
            )
            width = out_width
        return some_ids, some_keys, width

    firsts = range(0, n_upper, per_block)
    workers = WORKERS if workers is None else workers
    if workers > 1 and len(firsts) > 1:
        with ThreadPoolExecutor(workers) as pool:
            blocks = list(pool.map(merge_block, firsts))
    else:
        blocks = [merge_block(first) for first in firsts]
    width = blocks[0][2]
    ids = np.concatenate([b[0] for b in blocks])
    keys = np.concatenate([b[1] for b in blocks])
    del blocks
    for level in range(upper - 1, -1, -1):
        if level == upper - 1:
            ids, keys = _odd_even(ids, width), _odd_even(keys, width)
        out_width = (top >> level) + 1
        ids, keys = _merge_round(ids, keys, seg_n.shape[0] << level, width, out_width, level > 0)
        width = out_width
    valid = np.arange(width)[None, :] < seg_n[:, None]
    return ids.reshape(-1, width)[valid]


def _msort_segments(order: np.ndarray, okey, tkey, seg_lo, seg_n) -> None:
    """glibc's msort of every segment order[lo : lo+n] (in place), all segments at once.

    okey/tkey: the order keys and take-right bounds by item id (`_msort_runs`)."""
    seg_lo = np.asarray(seg_lo, dtype=np.int64)
    seg_n = np.asarray(seg_n, dtype=np.int64)
    if seg_n.shape[0] == 0:
        return
    pos = np.repeat(seg_lo - np.cumsum(seg_n) + seg_n, seg_n) + np.arange(int(seg_n.sum()))
    ids = order[pos]
    keys = _pack_keys(np.asarray(okey)[ids], np.asarray(tkey)[ids])
    order[pos] = _msort_runs(ids, keys, seg_n)


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
    #: CPU seconds of the sort that made the tree (a reused tree keeps its first sort's)
    #: [Units: s]: in the process that called `partition_mesh` (all its threads), and on
    #: the executor's workers as each reports it (the CPU of the thread that ran its part).
    #: With an executor of this process's own threads the workers' seconds are counted in
    #: both; with a process pool, the sum is the sort's whole CPU.
    sort_cpu_seconds: float = 0.0
    sort_worker_cpu_seconds: float = 0.0

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


#: Triangles per piece of `_triangle_bounds` (pieces run on `WORKERS` threads).
_BOUNDS_PIECE = 1 << 18


def _triangle_bounds(verts, tris) -> np.ndarray:
    """float32 (m, 4): each triangle's X/Y minimum then maximum. Pairwise over the three
    corners (a reduction over a middle axis is several times slower); pieces of
    `_BOUNDS_PIECE` triangles on `WORKERS` threads (gathers and ufuncs without the GIL: the
    planning process works alone here, before anything is sent to a pool)."""
    m = tris.shape[0]
    bounds = np.empty((m, 4), dtype=np.float32)
    coords = [np.ascontiguousarray(verts[:, k]) for k in range(2)]

    def fill(rows: slice) -> None:
        # Takes through contiguous corner columns (half the time of fancy indexing here).
        corners = [np.ascontiguousarray(tris[rows, j], dtype=np.intp) for j in range(3)]
        for k in range(2):
            a, b, c = (coords[k].take(corner) for corner in corners)
            np.minimum(np.minimum(a, b), c, out=bounds[rows, k])
            np.maximum(np.maximum(a, b), c, out=bounds[rows, 2 + k])

    threads.map_pieces(
        fill, [slice(i, i + _BOUNDS_PIECE) for i in range(0, m, _BOUNDS_PIECE)], WORKERS
    )
    return bounds


class NodeTable:
    """Every sorted node's first place, triangle count and bounds, appended depth by depth
    (RecastDemo's recursion visits nodes by place and count, so the depth-first numbering
    looks them up by these two)."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, lo, n, boxes) -> None:
        """Nodes first place ``lo`` and size ``n`` (int (k,)), bounds ``boxes`` float32
        (k, 4): X/Y minimum then maximum."""
        self._parts.append((
            np.asarray(lo, dtype=np.int64), np.asarray(n, dtype=np.int64),
            np.asarray(boxes, dtype=np.float32).reshape(-1, 4),
        ))  # fmt: skip

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first places int64, sizes int64, bounds float32 (k, 4)) of every node added."""
        if not self._parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4), np.float32)
        lo, n, boxes = zip(*self._parts, strict=True)
        return np.concatenate(lo), np.concatenate(n), np.concatenate(boxes)

    def clear(self) -> None:
        self._parts.clear()


def _sort_depths(
    bounds: np.ndarray,
    order: np.ndarray,
    lo: np.ndarray,
    n: np.ndarray,
    tris_per_chunk: int,
    found: NodeTable,
    *,
    depths: int | None = None,
    workers: int | None = None,
    sort_first=None,
    bounds_stay: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Sort the nodes (first place ``lo``, size ``n``) depth after depth, in place.

    bounds float32 (m, 4) and order (m,) are rows by place; each node of a depth is sorted by
    `_msort_runs` (all at once), then split in halves for the next depth. Records every
    node's bounds in ``found``. Stops after ``depths`` depths (None: at the leaves) and
    returns the nodes left to sort (empty at the leaves). ``workers``: threads of the merge
    sort's lower levels (default `WORKERS`). ``sort_first(keys, sizes, dtype)``: sorts the
    first depth instead, given the nodes' float32 keys in place order and their sizes;
    returns the permutation of places (``dtype``) `_msort_runs` would. ``bounds_stay``: one
    depth only, which moves ``order`` and leaves ``bounds`` as given (the caller reads the
    rows it needs through ``order``).
    """
    if bounds_stay and depths != 1:
        raise ValueError("bounds_stay sorts one depth only")
    m = bounds.shape[0]
    done = 0
    while lo.shape[0] and (depths is None or done < depths):
        starts = np.cumsum(n) - n
        # The nodes cover every place unless an earlier depth left some leaves.
        whole = int(n.sum()) == m
        pos = None
        if not whole:
            pos = np.repeat(lo - starts, n).astype(order.dtype)
            np.add(pos, np.arange(pos.shape[0], dtype=order.dtype), out=pos)
        here = bounds if pos is None else bounds[pos]
        bmin = np.stack([np.minimum.reduceat(here[:, k], starts) for k in (0, 1)], axis=1)
        bmax = np.stack([np.maximum.reduceat(here[:, k], starts) for k in (2, 3)], axis=1)
        found.add(lo, n, np.concatenate([bmin, bmax], axis=1))
        inner = n > tris_per_chunk
        if not inner.any():
            return lo[:0], n[:0]
        use_x = (bmax[:, 0] - bmin[:, 0]) >= (bmax[:, 1] - bmin[:, 1])  # float32, as Recast
        if not inner.all():
            in_inner = np.repeat(inner, n)
            if pos is None:
                pos = np.nonzero(in_inner)[0].astype(order.dtype)
            else:
                pos = pos[in_inner]
            here = here[in_inner]
            lo, n, use_x = lo[inner], n[inner], use_x[inner]
        key = np.where(np.repeat(use_x, n), here[:, 0], here[:, 1])
        # Sort places (not triangles): one permutation moves both the order and the bounds.
        if sort_first is not None and not done:
            perm = sort_first(key, n, order.dtype)
        else:
            keys = _msort_keys(key)
            perm = _msort_runs(np.arange(keys.shape[0], dtype=order.dtype), keys, n, workers)
            del keys
        del key
        packed = here.view(np.complex128).reshape(-1)
        if pos is None:
            order[:] = order[perm]
            if not bounds_stay:
                bounds[:] = packed[perm].view(np.float32).reshape(-1, 4)
        else:
            order[pos] = order[pos][perm]
            if not bounds_stay:
                bounds[pos] = packed[perm].view(np.float32).reshape(-1, 4)
        del perm, packed, here, pos
        half = n // 2
        lo = np.stack([lo, lo + half], axis=1).ravel()
        n = np.stack([half, n - half], axis=1).ravel()
        done += 1
    return lo, n


def _merge_sorted_runs(left, right, keys) -> np.ndarray:
    """glibc's last merge of one msort: ``left`` (its first n // 2 items) and ``right`` (the
    rest), each already in msort order (item ids); keys: `_pack_keys` by id. R[j] goes before
    L[i] exactly when the running maximum of the right bounds up to j is at most that of
    the left keys up to i (see `_merge_round`), so a stable sort of the right maxima followed
    by the left ones (two sorted runs: merged in linear time; on 1M items 15 ms against 25
    for binary searches) lays the items out."""
    pairs = keys.view(np.int32).reshape(-1, 2)
    right_max = pairs[:, 1].take(right)
    left_max = pairs[:, 0].take(left)
    np.maximum.accumulate(right_max, out=right_max)
    np.maximum.accumulate(left_max, out=left_max)
    place = np.argsort(np.concatenate([right_max, left_max]), kind="stable")
    return np.concatenate([right, left]).take(place)


def _timed(function, *args):
    """(``function(*args)``, the CPU seconds of the thread that ran it): a worker reports its
    share of the work with its result (the caller cannot see another process's CPU). For
    functions that start no threads of their own."""
    start = time.thread_time()
    out = function(*args)
    return out, time.thread_time() - start


def _msort_values(values: np.ndarray) -> np.ndarray:
    """`_msort_runs` of one run of float32 ``values`` (k,) (a worker's part of a sort: sent
    4 bytes an item, its order keys and take-right bounds made here). Returns int32 (k,): the
    places 0..k-1 in glibc's sorted order."""
    k = values.shape[0]
    keys = _msort_keys(values)
    return _msort_runs(np.arange(k, dtype=np.int32), keys, np.array([k]), 1)


def _msort_halves(executor: Executor, worker_cpu: list[float]):
    """A first-depth sort for `_sort_depths` (``sort_first``): a single run's two halves
    sorted on ``executor`` (one thread each, sent their float32 keys), while this process
    makes the keys the last merge reads, then merged here; several runs are sorted here. The
    CPU seconds the workers report are added to ``worker_cpu[0]``."""

    def msort(values: np.ndarray, seg_n: np.ndarray, dtype) -> np.ndarray:
        if np.shape(seg_n)[0] != 1:
            keys = _msort_keys(values)
            return _msort_runs(np.arange(values.shape[0], dtype=dtype), keys, seg_n)
        half = values.shape[0] // 2
        futures = [
            executor.submit(_timed, _msort_values, np.ascontiguousarray(values[part]))
            for part in (slice(0, half), slice(half, None))
        ]
        try:
            keys = _msort_keys(values)
            (left, left_cpu), (right, right_cpu) = (future.result() for future in futures)
        finally:
            for future in futures:
                future.cancel()
        worker_cpu[0] += left_cpu + right_cpu
        right = right.astype(dtype)
        right += half
        return _merge_sorted_runs(left.astype(dtype), right, keys)

    return msort


def _sort_subtree(rows: np.ndarray, tris_per_chunk: int):
    """One subtree sorted from its node down to the leaves, on one thread (a worker process
    of `partition_mesh`). rows float32 (k, 4): the node's triangle bounds in place order.
    Returns (permutation int32 (k,) of the places, node firsts int64, node sizes int64,
    node bounds float32 (nodes, 4)), places relative to the node."""
    if not rows.flags.writeable:  # sorted in place (an unpickled array is this worker's own)
        rows = rows.copy()
    perm = np.arange(rows.shape[0], dtype=np.int32)
    found = NodeTable()
    _sort_depths(
        rows, perm, np.zeros(1, dtype=np.int64), np.full(1, rows.shape[0], dtype=np.int64),
        tris_per_chunk, found, workers=1,
    )  # fmt: skip
    return (perm, *found.arrays())


def _sort_apart(
    executor: Executor, verts, tris, tris_per_chunk: int, found, subtrees: int,
    worker_cpu: list[float],
):  # fmt: skip
    """The chunk order of the whole tree (`_sort_depths` from the root, filling ``found``),
    the root's halves and the subtrees below the top depths (``subtrees`` of them) sorted on
    ``executor`` (see `partition_mesh`); the CPU seconds the workers report are added to
    ``worker_cpu[0]``. The triangle bounds are dropped here once sent."""
    bounds = _triangle_bounds(verts, tris)
    m = bounds.shape[0]
    order = np.arange(m, dtype=np.int32 if m < 1 << 31 else np.int64)
    top = (subtrees - 1).bit_length()
    lo, n = _sort_depths(
        bounds, order, np.zeros(1, dtype=np.int64), np.full(1, m, dtype=np.int64),
        tris_per_chunk, found, depths=top, sort_first=_msort_halves(executor, worker_cpu),
        bounds_stay=top == 1,
    )  # fmt: skip
    # Below the root alone the bounds stayed by triangle: each subtree's rows are gathered
    # through the order just before they are sent (the first is on its way while the next is
    # gathered), instead of moving all of them first.
    by_triangle = bounds.view(np.complex128).reshape(-1) if top == 1 else None
    futures = []
    rows = None
    for first, size in zip(lo.tolist(), n.tolist(), strict=True):
        if by_triangle is None:
            rows = bounds[first : first + size]
        else:
            rows = by_triangle[order[first : first + size]].view(np.float32).reshape(-1, 4)
        futures.append(executor.submit(_timed, _sort_subtree, rows, tris_per_chunk))
    del bounds, by_triangle, rows  # the workers' rows hold what they need until sent
    try:
        for first, future in zip(lo.tolist(), futures, strict=True):
            (perm, firsts, sizes, boxes), cpu = future.result()
            worker_cpu[0] += cpu
            places = order[first : first + perm.shape[0]]
            places[:] = places[perm]
            found.add(firsts + first, sizes, boxes)
    finally:
        for future in futures:
            future.cancel()
    return order


#: The newest tree `partition_mesh` made with ``reuse=True``, by `_shape_key`, with its
#: `_mesh_key`: a rebake of the same triangles (another cell size, agent or tile size: the
#: tree reads only the triangles' X/Y bounds) takes it instead of sorting again (the 10x10
#: tiling's tree: some 2.5 s of CPU; kept, 8 bytes a triangle). One entry; guarded (bakes may
#: plan in threads).
_REUSED: dict[tuple, tuple[bytes, PartitionedMesh]] = {}
_REUSE_LOCK = threading.Lock()


#: Bytes from which `_mesh_key` hashes its two halves on two threads.
_PARALLEL_DIGEST_BYTES = 1 << 22


def _shape_key(verts: np.ndarray, tris: np.ndarray, tris_per_chunk: int) -> tuple:
    """What two meshes with equal `_mesh_key` s have in common, cheap to compare first: the
    arrays' dtypes and shapes, and the chunk size."""
    return (verts.dtype.str, verts.shape, tris.dtype.str, tris.shape, int(tris_per_chunk))


def _mesh_key(
    verts: np.ndarray, tris: np.ndarray, tris_per_chunk: int, parallel: bool = True
) -> bytes:
    """A digest of the triangles as `partition_mesh` reads them (the bytes of both arrays,
    their shapes and dtypes) and the chunk size: equal keys, equal trees. The bytes are
    hashed as two halves, on two threads when large and ``parallel`` (hashlib releases the
    GIL there), and the key is the digest of both halves' digests (SHA-256: 1.9 GB/s here,
    BLAKE2b 1.3)."""
    digest = hashlib.sha256()
    views = []
    for array in (verts, tris):
        digest.update(f"{array.dtype.str}{array.shape};".encode())
        views.append(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)
    digest.update(str(int(tris_per_chunk)).encode())
    total = sum(view.nbytes for view in views)
    cut = total // 2
    halves: list[list[memoryview]] = [[], []]
    offset = 0
    for view in views:  # the bytes of both arrays in turn, split at ``cut``
        at = min(max(cut - offset, 0), view.nbytes)
        halves[0].append(view[:at])
        halves[1].append(view[at:])
        offset += view.nbytes

    def hashed(pieces: list[memoryview]) -> bytes:
        part = hashlib.sha256()
        for piece in pieces:
            part.update(piece)
        return part.digest()

    if parallel and total >= _PARALLEL_DIGEST_BYTES:
        with ThreadPoolExecutor(2) as pool:
            parts = list(pool.map(hashed, halves))
    else:
        parts = [hashed(half) for half in halves]
    for part in parts:
        digest.update(part)
    return digest.digest()


def forget_reused() -> None:
    """Drop the tree kept by ``partition_mesh(..., reuse=True)``: its memory, and the next
    such call sorts again (the benchmark times the whole planning step)."""
    with _REUSE_LOCK:
        _REUSED.clear()


def partition_mesh(
    verts,
    tris,
    tris_per_chunk: int = TRIS_PER_CHUNK,
    *,
    executor: Executor | None = None,
    subtrees: int = 2,
    reuse: bool = False,
) -> PartitionedMesh:
    """RecastDemo's ``PartitionedMesh::PartitionMesh`` on a Z-up triangle soup.

    verts float32 (n, 3) [Units: wu]; tris int (m, 3) [Limit: m < 2**31]; tris_per_chunk
    [Limit: >= 1].
    The k-d tree is built depth by depth: every node of one depth is sorted at once by
    `_msort_runs` (glibc's merge sort, each level of its recursion one vectorized round over
    all nodes), then the nodes are numbered depth first as RecastDemo's recursion numbers them.
    With an ``executor`` (a process pool: the sorts hold the GIL for much of their time) and
    at least `PARALLEL_MIN_TRIANGLES` triangles, the root's two halves are sorted on the
    executor and merged here, the top depths are sorted here until there are ``subtrees``
    nodes [Limit: >= 1], and each of their subtrees is sorted on the executor (no node's sort
    reads another's, so the tree is the same). Should the executor fail, the tree is sorted
    here instead (same tree).
    ``reuse``: the tree of the previous ``reuse=True`` call when the triangles and chunk size
    are the same (a digest of their bytes, made before sorting only when the kept tree's
    arrays have the same shapes, else beside the sort; the tree's arrays are then
    read-only), else this one sorted and kept in its place (`forget_reused` drops it).
    Memory: about 80 bytes per triangle besides the input (at most 32 of them per slot in the
    merge sort's largest levels).
    """
    verts = np.asarray(verts, dtype=np.float32)
    tris = np.asarray(tris)
    if tris.dtype.kind not in "iu":
        tris = tris.astype(np.int64)
    if tris_per_chunk < 1:
        raise ValueError(f"tris_per_chunk must be >= 1, got {tris_per_chunk}")
    if not reuse:
        return _partition(verts, tris, tris_per_chunk, executor, subtrees)
    shape = _shape_key(verts, tris, tris_per_chunk)
    parallel = threads.allowed(WORKERS) > 1
    with _REUSE_LOCK:
        same_shape = _REUSED.get(shape)
        _REUSED.clear()  # another world's tree goes before this one is sorted
    if same_shape is not None:
        key = _mesh_key(verts, tris, tris_per_chunk, parallel)
        if key == same_shape[0]:
            kept = same_shape[1]
        else:
            kept = _partition(verts, tris, tris_per_chunk, executor, subtrees)
    else:
        # No kept tree can match: the digest this one is kept by is made beside its sort.
        with ThreadPoolExecutor(1) as pool:
            digest = pool.submit(_mesh_key, verts, tris, tris_per_chunk, parallel)
            kept = _partition(verts, tris, tris_per_chunk, executor, subtrees)
            key = digest.result()
    for array in (
        kept.node_bmin, kept.node_bmax, kept.node_tri_index, kept.node_num_tris,
        kept.tri_order,
    ):  # fmt: skip
        array.flags.writeable = False
    with _REUSE_LOCK:
        _REUSED.clear()
        _REUSED[shape] = (key, kept)
    return kept


def _visit_nodes(m: int, tris_per_chunk: int, found: NodeTable):
    """RecastDemo's recursion numbering the nodes depth first, literally (the oracle of
    `_number_nodes`, and its path should Recast's node limit ever cut the tree): the node
    arrays (bmin, bmax, tri_index, num_tris) as `_number_nodes` returns them."""
    lo, n, boxes = found.arrays()
    by_node = {(a, b): k for k, (a, b) in enumerate(zip(lo.tolist(), n.tolist(), strict=True))}
    n_chunks = int(math.ceil(np.float32(m) / np.float32(tris_per_chunk)))
    max_nodes = n_chunks * 4
    rows: list[tuple[int, int, int]] = []

    def visit(start: int, count: int) -> None:
        icur = len(rows)
        if icur >= max_nodes:  # Recast's guard; the halving tree never reaches it
            return
        rows.append((by_node[(start, count)], start, count))
        if count > tris_per_chunk:
            half = count // 2
            visit(start, half)
            visit(start + half, count - half)
            rows[icur] = (rows[icur][0], icur - len(rows), count)

    if m:
        visit(0, m)
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    box = boxes[table[:, 0]]
    return box[:, :2].copy(), box[:, 2:].copy(), table[:, 1].copy(), table[:, 2].copy()


def _subtree_nodes(tris_per_chunk: int):
    """A function: node counts int64 (k,) -> the nodes in each one's subtree (itself
    included), int64 (k,). Looked up per distinct count (a depth holds at most two)."""

    @functools.cache
    def size(count: int) -> int:
        if count <= tris_per_chunk:
            return 1
        half = count // 2
        return 1 + size(half) + size(count - half)

    def sizes(counts: np.ndarray) -> np.ndarray:
        distinct, at = np.unique(counts, return_inverse=True)
        return np.array([size(c) for c in distinct.tolist()], dtype=np.int64)[at.reshape(-1)]

    return sizes


def _number_nodes(m: int, tris_per_chunk: int, found: NodeTable):
    """The nodes in RecastDemo's depth-first order: (bmin float32 (nodes, 2), bmax, tri_index
    int64 (a leaf's first place; minus its subtree's size for an inner node), num_tris int64).

    Depth by depth: a left child follows its parent, a right child follows the parent's left
    subtree, whose size depends on its count alone (at most two counts a depth). Bounds come
    from ``found`` by (first place, count). Equals `_visit_nodes`, which it falls back on
    where Recast's node limit (4 per chunk) would cut the tree (never for a halving tree)."""
    if m == 0:
        return _visit_nodes(m, tris_per_chunk, found)
    sizes = _subtree_nodes(tris_per_chunk)
    total = int(sizes(np.array([m]))[0])
    n_chunks = int(math.ceil(np.float32(m) / np.float32(tris_per_chunk)))
    if total > n_chunks * 4:
        return _visit_nodes(m, tris_per_chunk, found)
    node_lo = np.empty(total, dtype=np.int64)
    node_n = np.empty(total, dtype=np.int64)
    lo = np.zeros(1, dtype=np.int64)
    n = np.full(1, m, dtype=np.int64)
    at = np.zeros(1, dtype=np.int64)
    while lo.shape[0]:
        node_lo[at], node_n[at] = lo, n
        inner = n > tris_per_chunk
        lo, n, at = lo[inner], n[inner], at[inner]
        half = n // 2
        left_size = sizes(half)
        lo = np.stack([lo, lo + half], axis=1).ravel()
        at = np.stack([at + 1, at + 1 + left_size], axis=1).ravel()
        n = np.stack([half, n - half], axis=1).ravel()
    inner = node_n > tris_per_chunk
    tri_index = node_lo.copy()
    tri_index[inner] = -sizes(node_n[inner])
    # Each node's bounds by its (first place, count): both fit a key below (m + 1)**2.
    f_lo, f_n, boxes = found.arrays()
    keys = f_lo * (m + 1) + f_n
    sort = np.argsort(keys, kind="stable")
    want = node_lo * (m + 1) + node_n
    hit = np.minimum(np.searchsorted(keys, want, sorter=sort), keys.shape[0] - 1)
    row = sort[hit]
    if not np.array_equal(keys[row], want):
        raise AssertionError("chunk tree: a node was not sorted")
    box = boxes[row]
    return box[:, :2].copy(), box[:, 2:].copy(), tri_index, node_n


def _partition(verts, tris, tris_per_chunk: int, executor, subtrees: int) -> PartitionedMesh:
    """`partition_mesh` after its checks and without reuse: the tree sorted from scratch."""
    start_cpu = time.process_time()
    worker_cpu = [0.0]
    m = int(tris.shape[0])
    found = NodeTable()
    order = None
    if executor is not None and m >= PARALLEL_MIN_TRIANGLES and subtrees > 1:
        try:
            order = _sort_apart(executor, verts, tris, tris_per_chunk, found, subtrees, worker_cpu)
        except Exception:  # a broken executor: the same sort here from the start, slower
            found.clear()
    if order is None:
        # Each triangle's bounds, one row of 16 bytes per triangle kept in chunk order (moved
        # with it as one complex128: reading per-triangle data through the order would be a
        # random gather per depth and column).
        bounds = _triangle_bounds(verts, tris)
        order = np.arange(m, dtype=np.int32 if m < 1 << 31 else np.int64)
        root_lo = np.zeros(1 if m else 0, dtype=np.int64)
        root_n = np.full(root_lo.shape[0], m, dtype=np.int64)
        _sort_depths(bounds, order, root_lo, root_n, tris_per_chunk, found)
        del bounds
    node_bmin, node_bmax, node_tri, node_num = _number_nodes(m, tris_per_chunk, found)
    leaf_counts = np.where(node_tri >= 0, node_num, 0)
    return PartitionedMesh(
        node_bmin=node_bmin,
        node_bmax=node_bmax,
        node_tri_index=node_tri,
        node_num_tris=leaf_counts,
        tri_order=order.astype(np.int64),
        max_tris_per_chunk=int(leaf_counts.max(initial=0)),
        sort_cpu_seconds=time.process_time() - start_cpu,
        sort_worker_cpu_seconds=worker_cpu[0],
    )


__all__ = ["TRIS_PER_CHUNK", "PartitionedMesh", "forget_reused", "partition_mesh"]
