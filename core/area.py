"""Area stage on the compact heightfield: erosion by the agent radius, median filter, volume marks.

Every function takes a :class:`~core.compact.CompactHeightfield` and returns a NEW ``area``
array, uint8 (n,) (one value per compact span; 0 = null, 63 = walkable, 1..62 user types); the
input is never modified. Assign the result to ``chf.area`` yourself.

Also home of :func:`chamfer_distance`, the two-pass 2/3 chamfer transform in raster order that
Recast uses both for erosion (here) and for the region distance field (core/regions.py).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np

from . import threads
from .compact import CompactHeightfield, all_of_4
from .context import BuildContext
from .errors import VoxNavError

NULL_AREA = 0
#: Sentinel distance of "no such neighbour"; larger than any real distance (<= 0xFFFF).
_INF = 1 << 30
#: Offset that keeps the per-path running minima apart (see _ChamferPlan).
_SEG = 1 << 32


def _check_chf(chf: CompactHeightfield) -> int:
    n = int(chf.y.shape[0])
    if np.shape(chf.neighbor) != (n, 4) or np.shape(chf.area) != (n,):
        raise VoxNavError(
            f"compact heightfield is inconsistent: {n} spans but neighbor has shape "
            f"{np.shape(chf.neighbor)} and area {np.shape(chf.area)}; build it with "
            "build_compact_heightfield"
        )
    if np.shape(chf.cell_start) != (chf.width * chf.height + 1,):
        raise VoxNavError(
            f"compact heightfield cell_start has shape {np.shape(chf.cell_start)}, expected "
            f"({chf.width * chf.height + 1},)"
        )
    return n


def _neighbors_with_sentinel(chf: CompactHeightfield) -> np.ndarray:
    """int32 (int64 past 2**31 entries) (n+1, 4): neighbour span per direction, ``n`` (a
    sentinel row) when unconnected. Read-only: kept per span layout (`layout_cached`; the
    erosion, distance field and regions of a bake, and every agent sharing the layout, read
    the same table)."""
    return layout_cached(chf, "neighbours with sentinel", lambda: _neighbor_table(chf))


def _neighbor_table(chf: CompactHeightfield) -> np.ndarray:
    """`_neighbors_with_sentinel` made afresh (read-only)."""
    n = int(chf.y.shape[0])
    nb = np.asarray(chf.neighbor)
    out = np.empty((n + 1, 4), dtype=np.int32 if 4 * (n + 1) < 2**31 else np.int64)
    # Arithmetic, not a masked copy (3x slower: the mask changes from entry to entry):
    # "none" is -1 (`CompactHeightfield.neighbor`), and -1 + (n + 1) is the sentinel.
    body = out[:n]
    np.less(nb, 0, out=body)
    body *= n + 1
    body += nb
    out[n] = n
    out.flags.writeable = False
    return out


class _ChamferPlan:
    """Index tables for one raster pass of the chamfer transform.

    Pass 1 walks rows bottom-up (y ascending) and each row left to right; a span takes the
    minimum of its own value, its left neighbour + 2 (same row, already final), and three spans
    of the previous row: down + 2, left-then-down + 3, down-then-right + 3 (Recast's L-shaped
    diagonal paths). Pass 2 mirrors it (y descending, right to left; right + 2, up + 2,
    right-then-up + 3, up-then-left + 3).

    The previous-row terms and the spans' own values are gathered for the whole row at once,
    in path order (``terms``: one take per row). The same-row term is a
    min-plus scan along "left" links, which form a forest (two spans of one column may share a
    left neighbour). Every root-to-leaf path of that forest is laid out as one segment of
    ``seq``; a segmented running minimum of ``value - 2*x`` along each segment is exactly the
    sequential left-to-right recurrence ``d = min(c, d_left + 2)``. Shared path prefixes are
    duplicated, so every copy of a span gets the same value.
    """

    def __init__(self, chf: CompactHeightfield, nbx: np.ndarray, forward: bool):
        n = int(chf.y.shape[0])
        same, first, second, diag_a, diag_b = (0, 3, 2, 3, 2) if forward else (2, 1, 0, 1, 0)
        # Previous-row sources: straight (cost 2) and the two L-shaped diagonals (cost 3).
        # The plans are kept for the distance field, so their gather tables (``terms``) are
        # int32 where they fit.
        index = np.int32 if 2 * (n + 1) < 2**31 else np.int64
        # The diagonals by 1-D takes of (span, direction) at 4 * span + direction: indexing
        # the table by (spans, direction) takes NumPy's general 2-D path, about 3x slower.
        nbx_flat = nbx.reshape(-1)
        straight = nbx[:n, first]
        prev = (
            straight,
            nbx_flat.take(nbx[:n, same] * 4 + diag_a),
            nbx_flat.take(straight * 4 + diag_b),
        )
        parent = nbx[:, same].copy()  # sentinel n maps to n
        children = np.bincount(parent[:n], minlength=n + 1)[:n]
        if n and children.max() <= 1:
            # No span is the left neighbour of two: the forest is disjoint chains, each path
            # is one chain, and a span's place is its chain's start plus its depth.
            seq, seg = _chain_paths(parent, n)
        else:
            seq, seg = _tree_paths(parent, children, n)
        del parent, children
        total = int(seq.shape[0])
        if 4 * total >= 2**31:
            index = np.int64
        # The path's spans stay intp: every row writes its results through them, and NumPy
        # scatters through int32 indices three times slower (the 4x4 tiling's two passes:
        # 29.8 -> 25.7 ms).
        self.seq = seq.astype(np.intp, copy=False)
        # Per path position, the four terms of a span in the order `_TERM_COSTS` adds to them
        # (previous row straight, the two diagonals, the span's own value), gathered in one
        # take per row; and the offset that turns the same-row recurrence into a running
        # minimum: segment * _SEG (segments apart) plus 2 * x (one step's cost per column).
        self.terms: np.ndarray = np.empty((4, total), dtype=index)
        for k, source in enumerate(prev):
            np.take(source, seq, out=self.terms[k], mode="clip")
        self.terms[3] = seq
        # In place, and the columns and rows read per path position in their own int32: on
        # large grids every fresh span-sized array costs its first touch (the 10x10 tiling's
        # two plans made four int64 copies of the span coordinates, 75 MB).
        off = seg.astype(np.int64, copy=False)
        off *= _SEG
        del seg, prev
        x2 = np.asarray(chf.span_x).take(seq).astype(np.int32, copy=False)  # signed
        x2 *= 2 if forward else -2
        off += x2
        self.off = off
        del x2
        # Rows: path range per row (paths never leave their row).
        span_row = np.asarray(chf.span_y).take(seq).astype(np.int32, copy=False)
        self.row_seq = np.searchsorted(span_row, np.arange(chf.height + 1, dtype=np.int32))
        if forward:
            self.row_order = range(chf.height)
        else:
            self.row_order = range(chf.height - 1, -1, -1)


#: Step cost added to each of `_ChamferPlan.terms`' four rows: straight 2, diagonals 3, self 0.
_TERM_COSTS = np.array([[2], [3], [3], [0]], dtype=np.int64)


def _chain_paths(parent: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Root-to-end order of every chain of ``parent`` links (each span has at most one child),
    chains in the order of their roots: (spans int64, chain number int64 per position)."""
    # Spans are in row, column, layer order, so a left link is most often to the span just
    # before (a right link to the span just after): runs of such links are pieces, ranges of
    # span ids, and the work is done per piece. A piece's head is the span whose link leaves
    # the run (its first span for runs of links to the span before, its last for runs of links
    # to the span after); pointer jumping from head to head finds each piece's root piece and
    # the depth of its head (after round k, jump[p] is 2**k head links up or the root piece,
    # ``up`` the depth of the head of p walked so far). Then the pieces are laid out by
    # (chain, depth) and each is written as its range, in chain order.
    itype = np.int32 if n + 1 < 2**31 else np.int64
    idx: np.ndarray = np.arange(n, dtype=itype)
    link = parent[:n]
    # Left links point to lower span ids, right links to higher ones (n: no link).
    linked = link != n
    descending = bool(np.logical_and(link > idx, linked).any())
    del linked
    is_head = ~((link == idx + 1) & (link != n)) if descending else link != idx - 1
    heads = np.flatnonzero(is_head)
    # Piece number of every span (ends are heads in descending runs: counted from the span
    # after them).
    piece_of: np.ndarray = np.cumsum(is_head, dtype=itype)
    piece_of -= is_head if descending else 1
    del is_head
    n_pieces = heads.shape[0]
    if descending:  # a piece ends at its head
        starts = np.concatenate([[0], heads[:-1] + 1])
        ends = heads + 1
    else:  # a piece starts at its head
        starts = heads
        ends = np.append(heads[1:], n)
    head_link = link[heads].astype(np.int64)
    is_root = head_link == n
    target = np.where(is_root, 0, head_link)
    into = piece_of[target].astype(np.int64)  # the piece the link enters
    del piece_of
    # The depth of the link's target below its piece's head, + 1 for the head itself.
    below = (ends[into] - 1 - target) if descending else (target - starts[into])
    jump = np.where(is_root, np.arange(n_pieces), into)
    up = np.where(is_root, 0, below + 1)
    del head_link, target, into, below
    while True:
        nxt = jump.take(jump)  # takes: 1-D gathers, cheaper than fancy indexing
        if np.array_equal(nxt, jump):
            break
        up += up.take(jump)
        jump = nxt
    chain_of_piece = (np.cumsum(is_root) - 1)[jump]  # roots in span order = pieces' order
    # A chain stays in its row and steps one column per link, so its pieces' depths follow
    # their span ids (up for left links, down for right links): a stable sort by chain of the
    # pieces in that order lays them out by (chain, depth). The ids are nearly sorted already.
    if descending:
        order = n_pieces - 1 - np.argsort(chain_of_piece[::-1], kind="stable")
    else:
        order = np.argsort(chain_of_piece, kind="stable")
    length = (ends - starts)[order]
    first = np.cumsum(length) - length
    if descending:
        seq = np.repeat((ends - 1)[order] + first, length)
        seq -= np.arange(n, dtype=np.int64)
    else:
        seq = np.repeat(starts[order] - first, length)
        seq += np.arange(n, dtype=np.int64)
    seg = np.repeat(chain_of_piece[order], length)
    return seq, seg


def _tree_paths(parent: np.ndarray, children: np.ndarray, n: int):
    """Every root-to-leaf path of the ``parent`` forest, leaves in span order, shared prefixes
    repeated: (spans, path number per position)."""
    leaves = np.flatnonzero(children == 0)
    # Binary-lifting tables: lift[k][i] = ancestor 2**k steps up (n when there is none);
    # depth by pointer jumping alongside.
    lift = [parent]
    depth = (parent != n).astype(np.int64)
    while (lift[-1][:n] != n).any():
        depth += depth[lift[-1]]
        lift.append(lift[-1][lift[-1]])
    # Paths root..leaf for every leaf (leaves in span order keep rows contiguous).
    lengths = depth[leaves] + 1
    total = int(lengths.sum())
    seg = np.repeat(np.arange(leaves.shape[0], dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    pos = np.arange(total, dtype=np.int64) - starts[seg]
    up = depth[leaves][seg] - pos  # ancestor distance from the leaf
    node = leaves[seg]
    for k in range(len(lift)):
        bit = (up >> k) & 1
        if bit.any():
            node = np.where(bit == 1, lift[k][node], node)
    return node, seg


def _run_pass(plan: _ChamferPlan, d: np.ndarray) -> None:
    """One raster pass over ``d``: int64 (n + 1,), or (k, n + 1) for k fields on the same
    heightfield at once (the same row steps, k times the elements: the rows are a Python
    loop, so k fields cost much less than k passes)."""
    terms, off, seq = plan.terms, plan.off, plan.seq
    row_seq = plan.row_seq.tolist()  # Python ints: cheaper slice bounds
    many = d.ndim == 2
    # The ufunc methods straight (ndarray.min goes through a Python wrapper: the rows are a
    # Python loop of a few small calls each, so the wrapper is a share of the time).
    smallest, running = np.minimum.reduce, np.minimum.accumulate
    for r in plan.row_order:
        p, q = row_seq[r], row_seq[r + 1]
        if p == q:
            continue
        # Each path position's best start (own value or a previous-row term + its cost),
        # less its offset; the running minimum along the path is the same-row recurrence.
        row_off = off[p:q]
        if many:
            values = d.take(terms[:, p:q], axis=1)
            values += _TERM_COSTS
            best = smallest(values, axis=1)
            best -= row_off
            running(best, axis=1, out=best)
            best += row_off
            d[:, seq[p:q]] = best
        else:
            values = d.take(terms[:, p:q])
            values += _TERM_COSTS
            best = smallest(values, axis=0)
            best -= row_off
            running(best, out=best)
            best += row_off
            d[seq[p:q]] = best


def chamfer_distance(
    chf: CompactHeightfield, init: np.ndarray, nbx: np.ndarray | None = None
) -> np.ndarray:
    """Recast's two-pass chamfer transform (2 straight, 3 diagonal) over the span graph.

    ``init``: (n,) integer start values (0 on boundaries, a large value elsewhere; at most
    0xFFFF), or (k, n) for k transforms on the same heightfield at once (several agents'
    distance fields: one pass over the rows for all of them). Returns int64 of ``init``'s
    shape, bit-identical to Recast's in-place raster passes (see :class:`_ChamferPlan` for why
    the vectorized form is exact). Rows are a Python loop (the recurrence is sequential from
    row to row); everything inside a row is vectorized.
    """
    n = _check_chf(chf)
    init = np.asarray(init, dtype=np.int64)
    if init.shape[-1] != n or init.ndim not in (1, 2):
        raise VoxNavError(f"init must hold (n,) or (k, n) values for n = {n} spans")
    d = np.empty((*init.shape[:-1], n + 1), dtype=np.int64)
    d[..., :n] = init
    d[..., n] = _INF
    for plan in _chamfer_plans(chf, nbx):
        _run_pass(plan, d)
    return d[..., :n]


#: Values derived from the span layout and links alone of recent compact heightfields (the
#: chamfer's pass plans, the neighbour table, ...), keyed by the identity of their link array:
#: erosion, the distance field and the regions of one bake read the same links, every agent
#: sharing a compact heightfield's layout reads them again, a tile cache rebuilds the same
#: tiles' distance fields again and again, and building the plans is most of a chamfer's
#: cost. An entry is (weak references to the layout's links, columns and rows; values by
#: name; spans): it dies with its heightfield's arrays, which no stage modifies, and the
#: entries hold at most `_PLAN_CACHE_SPANS` spans in all (the newest entry always stays).
_PLAN_CACHE: OrderedDict[int, tuple[tuple, dict[str, Any], int]] = OrderedDict()
_PLAN_CACHE_SPANS = 1 << 18
#: Threads building the two pass plans (2: at once), and the spans from which they do.
PLAN_WORKERS = min(2, os.cpu_count() or 1)
PARALLEL_PLAN_SPANS = 1 << 16


#: Guards the cache (tiles may bake in threads); re-entrant because a weakref callback may run
#: during a garbage collection inside the guarded block.
_PLAN_LOCK = threading.RLock()

_Value = TypeVar("_Value")


def _layout_of(chf: CompactHeightfield) -> tuple:
    """The arrays a cache entry stands for: the links, span columns and span rows."""
    return (chf.neighbor, chf.span_x, chf.span_y)


def _entry_values(key: int, layout: tuple) -> dict[str, Any] | None:
    """The values kept for ``layout`` (under `_PLAN_LOCK`), None when there are none; a
    stale entry (its arrays gone, the key reused) is dropped."""
    entry = _PLAN_CACHE.get(key)
    if entry is None:
        return None
    if all(ref() is array for ref, array in zip(entry[0], layout, strict=True)):
        _PLAN_CACHE.move_to_end(key)
        return entry[1]
    _PLAN_CACHE.pop(key, None)
    return None


def layout_cached(chf: CompactHeightfield, name: str, build: Callable[[], _Value]) -> _Value:
    """``build()``, a value derived from ``chf``'s span layout and links alone, kept for that
    layout under ``name`` (see `_PLAN_CACHE`); later calls on a heightfield with the same
    layout arrays return it. Values are shared: never modify one (arrays are made
    read-only where they are built)."""
    key = id(chf.neighbor)
    layout = _layout_of(chf)
    with _PLAN_LOCK:
        values = _entry_values(key, layout)
        if values is not None and name in values:
            return cast(_Value, values[name])
    value = build()
    try:
        refs = tuple(weakref.ref(a, _forget_plans(key)) for a in layout)
    except TypeError:  # not weakly referenceable (a plain sequence): do not cache
        return value
    with _PLAN_LOCK:
        values = _entry_values(key, layout)
        if values is not None:
            values.setdefault(name, value)
            return cast(_Value, values[name])
        _PLAN_CACHE[key] = (refs, {name: value}, int(chf.y.shape[0]))
        total = sum(e[2] for e in _PLAN_CACHE.values())
        while len(_PLAN_CACHE) > 1 and total > _PLAN_CACHE_SPANS:
            total -= _PLAN_CACHE.popitem(last=False)[1][2]
    return value


def _chamfer_plans(
    chf: CompactHeightfield, nbx: np.ndarray | None = None
) -> tuple[_ChamferPlan, _ChamferPlan]:
    """The two pass plans of ``chf`` (kept per layout, `layout_cached`); ``nbx``: its
    `_neighbors_with_sentinel` if the caller has it already."""

    def build() -> tuple[_ChamferPlan, _ChamferPlan]:
        links = _neighbors_with_sentinel(chf) if nbx is None else nbx
        if threads.allowed(PLAN_WORKERS) > 1 and int(chf.y.shape[0]) >= PARALLEL_PLAN_SPANS:
            # The two passes' plans are independent, and mostly NumPy work without the GIL.
            with ThreadPoolExecutor(2) as pool:
                backward = pool.submit(_ChamferPlan, chf, links, False)
                return (_ChamferPlan(chf, links, True), backward.result())
        return (_ChamferPlan(chf, links, True), _ChamferPlan(chf, links, False))

    return layout_cached(chf, "chamfer plans", build)


def _forget_plans(key: int):
    """A weakref callback dropping the cache entry ``key`` once one of its arrays dies."""

    def forget(ref) -> None:
        with _PLAN_LOCK:
            entry = _PLAN_CACHE.get(key)
            if entry is not None and any(r is ref for r in entry[0]):
                _PLAN_CACHE.pop(key, None)

    return forget


def erode_walkable_area(
    chf: CompactHeightfield, radius: int, *, progress=None, ctx: BuildContext | None = None
) -> np.ndarray:
    """Null every walkable span closer than ``radius`` cells to an unwalkable boundary.

    [Recast: rcErodeWalkableArea]

    Rule: a span is a boundary (distance 0) if its area is null, or one of its 4 directions is
    unconnected or leads to a null-area span; others start at 255. Two chamfer passes in raster
    order (see :func:`chamfer_distance`; straight steps cost 2, diagonal steps 3, capped at 255)
    give the distance; a span whose distance is below ``2 * radius`` becomes null.

    Parameters:
        chf: compact heightfield (not modified).
        radius: erosion radius, normally the agent radius. [Units: cells] [Limit: 0..127]
        progress: optional callable ``progress(fraction: float, message: str)``.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    radius = int(radius)
    if not 0 <= radius <= 127:
        raise VoxNavError(
            f"erosion radius {radius} cells is out of range 0..127; lower agent_radius or "
            "raise cell_size"
        )
    if progress is not None:
        progress(0.2, "erode: boundaries")
    out = erode_by_distance(chf.area, erosion_distance(chf, cap=2 * radius), radius)
    if progress is not None:
        progress(1.0, "erode: done")
    return out


#: Most relaxation rounds per pass `erosion_distance` spends on a capped distance before it
#: runs the row-by-row passes instead (a round costs a few gathers over every span; a pass
#: of rows about as much as 15 rounds on the shared meshes).
CAPPED_ROUNDS_LIMIT = 8


def erosion_distance(chf: CompactHeightfield, cap: int | None = None) -> np.ndarray:
    """The radius-independent part of `erode_walkable_area`: each span's chamfer distance to
    the nearest boundary (straight step 2, diagonal 3, capped at 255). [Units: half cells]

    Returns an integer array (n,); `erode_by_distance` thresholds it for a radius, so agents
    that share a compact heightfield and differ in radius compute it once. ``cap``: only
    ``min(distance, cap)`` is wanted (erosion by radii up to cap / 2 [Limit: >= 0]), which
    small caps compute by relaxation rounds (`_capped_chamfer`) instead of the row passes.
    """
    n = _check_chf(chf)
    area = np.asarray(chf.area, dtype=np.uint8)
    nbx = _neighbors_with_sentinel(chf)
    area_x = np.append(area, np.uint8(NULL_AREA))  # the sentinel counts as null
    inner = (area != NULL_AREA) & all_of_4(area_x.take(nbx[:n]) != NULL_AREA)
    if cap is not None and 0 <= int(cap) < 255 and _capped_rounds(int(cap)) <= CAPPED_ROUNDS_LIMIT:
        return _capped_chamfer(nbx, inner, int(cap))
    init = np.multiply(inner, 255, dtype=np.int64)
    return chamfer_distance(chf, init, nbx)


def _capped_rounds(cap: int) -> int:
    """Relaxation rounds per pass for distances below ``cap``: a path of weight < cap has at
    most (cap - 1) // 2 steps (each step costs 2 or 3)."""
    return max(0, (cap - 1) // 2)


def _capped_chamfer(nbx: np.ndarray, inner: np.ndarray, cap: int) -> np.ndarray:
    """min(cap, Recast's two-pass erosion distance) of every span, by relaxation rounds.

    Each raster pass sets every span to the minimum of its value and its pass neighbours'
    final values + step cost (`_ChamferPlan`'s four: straight 2, the L-shaped diagonals 3),
    all of them earlier in the pass's order: so the pass's result is the cheapest path
    through those links in an acyclic graph, from the span's starting value. Jacobi rounds
    find, after k of them, the cheapest path of at most k links; a value below ``cap`` comes
    from a path of at most `_capped_rounds` links, and min-plus steps commute with capping
    (min(cap, a + w) = min(cap, min(cap, a) + w) for w >= 0), as they do with Recast's 255.
    So `_capped_rounds` rounds per pass give every value below cap exactly and the rest as
    cap. int64 (n,), values 0..cap. (Equal to `chamfer_distance` capped: tests/core/test_area.)
    """
    n = inner.shape[0]
    dist = np.full(n + 1, cap, dtype=np.int16)  # the sentinel row n: no neighbour
    np.multiply(inner, cap, out=dist[:n])
    rounds = _capped_rounds(cap)
    for same, first, diag_a, diag_b in ((0, 3, 3, 2), (2, 1, 1, 0)):  # forward, backward
        if rounds == 0:
            break
        # Contiguous index arrays read by takes: indexing by the tables' strided columns
        # takes NumPy's general path (the 4x4 tiling's rounds: 21 -> 13 ms at cap 8).
        straight_a, straight_b = nbx[:n, same].copy(), nbx[:n, first].copy()
        links = nbx.reshape(-1)  # (span, direction) at 4 * span + direction: 1-D takes
        corner_a = links.take(straight_a * 4 + diag_a)
        corner_b = links.take(straight_b * 4 + diag_b)
        for _ in range(rounds):
            best = np.minimum(dist.take(straight_a), dist.take(straight_b))
            best += 2
            corner = np.minimum(dist.take(corner_a), dist.take(corner_b))
            corner += 3
            np.minimum(best, corner, out=best)
            np.minimum(best, dist[:n], out=best)
            np.minimum(best, cap, out=best)
            if np.array_equal(best, dist[:n]):
                break
            dist[:n] = best
    return dist[:n].astype(np.int64)


def erode_by_distance(area: np.ndarray, dist: np.ndarray, radius: int) -> np.ndarray:
    """``area`` (uint8 (n,)) with every span whose `erosion_distance` is below ``2 * radius``
    nulled. ``radius`` [Units: cells] [Limit: 0..127]. Returns a new uint8 array."""
    if not 0 <= int(radius) <= 127:
        raise VoxNavError(
            f"erosion radius {int(radius)} cells is out of range 0..127; lower agent_radius or "
            "raise cell_size"
        )
    # NULL_AREA is 0: a product by the kept mask, not a boolean assignment (several times
    # slower where the mask changes from span to span, as it does along every border).
    return np.multiply(
        np.asarray(area, dtype=np.uint8), np.asarray(dist) >= 2 * int(radius), dtype=np.uint8
    )


def median_filter_walkable_area(chf: CompactHeightfield, *, progress=None) -> np.ndarray:
    """Median of each walkable span's area over its 3x3 neighbourhood.

    [Recast: rcMedianFilterWalkableArea]

    Rule: null spans stay null. For a walkable span, nine samples start as its own area; for
    each connected direction d, sample 2d becomes the neighbour's area and sample 2d+1 the area
    of that neighbour's neighbour in direction (d+1) % 4 (Recast's L-shaped diagonal), each only
    if that area is not null. The result is the 5th smallest sample.

    Returns:
        uint8 (n,): the new area array.
    """
    n = _check_chf(chf)
    area = np.asarray(chf.area, dtype=np.uint8)
    nbx = _neighbors_with_sentinel(chf)
    area_x = np.append(area, np.uint8(NULL_AREA))
    samples = np.repeat(area[:, None], 9, axis=1)
    for d in range(4):
        a = nbx[:n, d]
        va = area_x[a]
        samples[:, 2 * d] = np.where(va != NULL_AREA, va, samples[:, 2 * d])
        b = nbx[a, (d + 1) & 3]  # sentinel row of nbx points to the sentinel
        vb = area_x[b]
        samples[:, 2 * d + 1] = np.where(vb != NULL_AREA, vb, samples[:, 2 * d + 1])
    med = np.partition(samples, 4, axis=1)[:, 4]
    out = np.where(area == NULL_AREA, area, med).astype(np.uint8)
    if progress is not None:
        progress(1.0, "median filter: done")
    return out


def _to_cell(value) -> int:
    """C's ``(int)`` of a float32 cell coordinate (toward zero). Beyond C's int range (up to
    infinity, where a shape larger than any grid overflows float32) Recast's conversion is
    undefined: clamped to that range, which still covers every cell. NaN is refused."""
    if np.isnan(value):
        raise VoxNavError("an area shape's coordinates must be finite numbers, got NaN")
    return int(np.clip(np.float64(value), -(2.0**31), 2.0**31 - 1))


def _grid_range(chf, lo: float, hi: float, axis: int):
    """Recast's ``(int)((v - bmin) / cs)`` in float32 for both ends along X (0) or Y (1)."""
    cs = np.float32(chf.cs)
    b = np.float32(chf.bmin[axis])
    with np.errstate(over="ignore"):
        i0 = _to_cell((np.float32(lo) - b) / cs)
        i1 = _to_cell((np.float32(hi) - b) / cs)
    return i0, i1


def _height_range(chf, lo: float, hi: float):
    ch = np.float32(chf.ch)
    b = np.float32(chf.bmin[2])
    with np.errstate(over="ignore"):
        return _to_cell((np.float32(lo) - b) / ch), _to_cell((np.float32(hi) - b) / ch)


def _spans_in_rect(chf, x0: int, x1: int, y0: int, y1: int):
    """Span indices of the columns x0..x1, y0..y1 (inclusive, clamped), or None if outside."""
    if x1 < 0 or x0 >= chf.width or y1 < 0 or y0 >= chf.height:
        return None
    x0, x1 = max(x0, 0), min(x1, chf.width - 1)
    y0, y1 = max(y0, 0), min(y1, chf.height - 1)
    xs = np.asarray(chf.span_x)
    ys = np.asarray(chf.span_y)
    start = np.asarray(chf.cell_start)
    lo, hi = int(start[y0 * chf.width]), int(start[(y1 + 1) * chf.width])
    idx = np.arange(lo, hi, dtype=np.int64)
    keep = (xs[lo:hi] >= x0) & (xs[lo:hi] <= x1) & (ys[lo:hi] >= y0) & (ys[lo:hi] <= y1)
    return idx[keep]


def _check_area_id(area_id: int) -> int:
    area_id = int(area_id)
    if not 0 <= area_id <= 63:
        raise VoxNavError(f"area id {area_id} is out of range 0..63 (0 = null, 63 = walkable)")
    return area_id


def mark_box_area(chf: CompactHeightfield, bmin, bmax, area_id: int) -> np.ndarray:
    """Area ids after marking the walkable spans whose floor lies inside an axis-aligned box.

    [Recast: rcMarkBoxArea]

    ``bmin``/``bmax``: float (3,) world corners, Z-up (x, y, z). [Units: wu] Cells are
    ``(int)((v - chf.bmin) / cs)`` per axis in float32 (truncation toward zero), floors
    ``(int)((z - chf.bmin.z) / ch)``, both ends inclusive; null spans stay null.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    try:
        corners = np.asarray([bmin, bmax], dtype=np.float32).reshape(2, 3)
    except (TypeError, ValueError):
        raise VoxNavError(
            f"a box's corners are three numbers (x, y, z) each, got {bmin!r} and {bmax!r}"
        ) from None
    bmin, bmax = corners
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, bmin[0], bmax[0], 0)
    y0, y1 = _grid_range(chf, bmin[1], bmax[1], 1)
    z0, z1 = _height_range(chf, bmin[2], bmax[2])
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    fy = np.asarray(chf.y)[idx].astype(np.int64)
    hit = idx[(fy >= z0) & (fy <= z1) & (out[idx] != NULL_AREA)]
    out[hit] = area_id
    return out


def mark_convex_poly_area(
    chf: CompactHeightfield, verts_xy, zmin: float, zmax: float, area_id: int
) -> np.ndarray:
    """Area ids after marking walkable spans inside a vertical prism over a convex polygon.

    [Recast: rcMarkConvexPolyArea]

    ``verts_xy``: float (m, 2) or (m, 3) polygon in world X/Y (Z-up; a third column is
    ignored). [Units: wu] ``zmin``/``zmax``: world heights of the prism. [Units: wu] A span is
    marked if its area is not null, its floor is within the prism's height cells (inclusive)
    and its cell centre is inside the polygon by Recast's crossing test in float32.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    v = np.asarray(verts_xy, dtype=np.float32)
    if v.ndim != 2 or v.shape[1] not in (2, 3) or v.shape[0] < 3:
        raise VoxNavError(
            f"verts_xy has shape {v.shape}; expected (m, 2) polygon corners with m >= 3"
        )
    vx, vy = v[:, 0], v[:, 1]
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, vx.min(), vx.max(), 0)
    y0, y1 = _grid_range(chf, vy.min(), vy.max(), 1)
    z0, z1 = _height_range(chf, zmin, zmax)
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    fy = np.asarray(chf.y)[idx].astype(np.int64)
    idx = idx[(out[idx] != NULL_AREA) & (fy >= z0) & (fy <= z1)]
    cs = np.float32(chf.cs)
    px = np.float32(chf.bmin[0]) + (np.asarray(chf.span_x)[idx].astype(np.float32) + 0.5) * cs
    py = np.float32(chf.bmin[1]) + (np.asarray(chf.span_y)[idx].astype(np.float32) + 0.5) * cs
    px = px.astype(np.float32)[:, None]
    py = py.astype(np.float32)[:, None]
    j = np.roll(np.arange(v.shape[0]), 1)
    xi, yi, xj, yj = vx[None, :], vy[None, :], vx[j][None, :], vy[j][None, :]
    inside = np.empty(idx.shape[0], dtype=bool)
    # Spans in blocks of at most CROSSING_PAIRS_PER_BLOCK (span, edge) pairs: a 100k-point
    # outline over its spans was one 6 GiB array.
    rows = max(1, CROSSING_PAIRS_PER_BLOCK // v.shape[0])
    for lo in range(0, idx.shape[0], rows):
        bx, by = px[lo : lo + rows], py[lo : lo + rows]
        straddle = (yi > by) != (yj > by)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross_x = (xj - xi) * (by - yi) / (yj - yi) + xi
        flip = straddle & ~(bx >= cross_x)
        inside[lo : lo + rows] = (flip.sum(axis=1) & 1) == 1
    out[idx[inside]] = area_id
    return out


#: (span, outline edge) pairs `mark_convex_poly_area` tests at once (about 100 MiB of
#: temporaries).
CROSSING_PAIRS_PER_BLOCK = 1 << 22


def mark_cylinder_area(
    chf: CompactHeightfield, center, radius: float, height: float, area_id: int
) -> np.ndarray:
    """Area ids after marking walkable spans inside an upright cylinder.

    [Recast: rcMarkCylinderArea]

    ``center``: float (3,) world position of the bottom centre, Z-up. [Units: wu]
    ``radius``, ``height``: [Units: wu] [Limit: >= 0]. A column is inside if its cell centre is
    strictly closer than ``radius`` (float32); its non-null spans whose floor cell is within
    ``(int)((center.z - bmin.z)/ch) .. (int)((center.z + height - bmin.z)/ch)`` are marked.

    Returns:
        uint8 (n,): the new area array.
    """
    _check_chf(chf)
    area_id = _check_area_id(area_id)
    c = np.asarray(center, dtype=np.float32).reshape(3)
    r = np.float32(radius)
    if not r >= 0 or not np.float32(height) >= 0:
        raise VoxNavError(f"cylinder radius {radius} and height {height} must be >= 0")
    out = np.asarray(chf.area, dtype=np.uint8).copy()
    x0, x1 = _grid_range(chf, c[0] - r, c[0] + r, 0)
    y0, y1 = _grid_range(chf, c[1] - r, c[1] + r, 1)
    z0, z1 = _height_range(chf, c[2], c[2] + np.float32(height))
    idx = _spans_in_rect(chf, x0, x1, y0, y1)
    if idx is None:
        return out
    cs = np.float32(chf.cs)
    cx = (np.float32(chf.bmin[0]) + (chf.span_x[idx].astype(np.float32) + 0.5) * cs).astype(
        np.float32
    )
    cy = (np.float32(chf.bmin[1]) + (chf.span_y[idx].astype(np.float32) + 0.5) * cs).astype(
        np.float32
    )
    dx = (cx - c[0]).astype(np.float32)
    dy = (cy - c[1]).astype(np.float32)
    with np.errstate(over="ignore"):  # a radius beyond float32's square root: every cell
        near = (dx * dx + dy * dy) < r * r
    fy = np.asarray(chf.y)[idx].astype(np.int64)
    hit = idx[near & (out[idx] != NULL_AREA) & (fy >= z0) & (fy <= z1)]
    out[hit] = area_id
    return out
