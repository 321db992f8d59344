"""Region partitioning of the compact heightfield: distance field, watershed, monotone, layers.

Inputs and outputs are per-span arrays in the compact heightfield's span order:
``dist`` uint16 (n,) distance to the nearest area border in half cells (straight step 2,
diagonal step 3), ``reg`` uint16 (n,) region id (0 = none; ``BORDER_REG`` flag on the tile
border strips). The compact heightfield itself is never modified; assign the results to
``chf.dist``/``chf.reg``/``chf.max_distance``/``chf.max_regions`` yourself.

Watershed (Recast's default) is order-sensitive by design: regions are flooded one at a time
from the highest distance level down, and the result depends on which seed comes first. This
port keeps Recast's order exactly while vectorizing each step:

- levels and expansion iterations are Python loops (at most (max_distance/2) levels, at most 8
  Jacobi iterations each); every iteration updates the whole level stack at once, which is
  exactly Recast's ``expandRegions`` (it reads the previous iteration's state and writes all
  updates afterwards);
- flooding a new region is a loop over the regions created (tens to hundreds), each a
  vectorized breadth-first frontier expansion. Recast's depth-first flood gives the same set
  in any order: a span joins the region iff it is reachable from the seed through free spans
  of the same area with ``dist >= level - 2`` none of which touches (8-neighbourhood, Recast's
  L-shaped diagonals) another region, and "touches another region" cannot change while one
  region floods;
- merging and filtering walks region contours and merges regions one by one (Recast's
  ``mergeAndFilterRegions``); that is a loop over regions and contour steps, on Python ints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .area import _check_chf, _neighbors_with_sentinel, chamfer_distance, layout_cached
from .arrays import lowest_labels, select
from .compact import BORDER_REG, CompactHeightfield, all_of_4, any_of_4, per_direction, rows_of
from .context import BuildContext
from .errors import VoxNavError
from .memory import REGIONS_BYTES_PER_FLOOR_PAIR

NULL_AREA = 0
#: Number of level stacks and distance levels per stack (Recast: NB_STACKS, loglevelsPerStack).
_NB_STACKS = 8
#: The watershed's level sorts read the free spans' bands from one sort made when it begins
#: (`_LevelBands`; the 4x4 tiling's regions 54-57 -> 51 ms); False: every sort goes over
#: every free span again (Recast's sortCellsByLevel as written, the tests' oracle).
SORT_BY_BANDS = True
#: Watershed expansion iterations per level. [Recast: expandIters]
_EXPAND_ITERS = 8
_BIG = 1 << 30
#: Spans of a level's stack and the group below it up to which a flood batch finds its regions
#: as connected sets (`_flood_batch_sets`: work in proportion to those spans) rather than
#: breadth first (`_flood_batch_bfs`: about 25 NumPy calls per ring of the widest region). Per
#: batch on the shared meshes and the 4x4 tiling (2026-11-26), with half of those spans free:
#: 0.1-0.2 ms against 0.2-1.8 ms up to 5,000 free spans, 0.7-2.3 against 0.4-1.7 from 20,000.
FLOOD_SETS_MAX_SPANS = 1 << 15
#: Spans from which `_expand` reads the four directions in separate passes.
EXPAND_COLUMN_PASSES_FROM = 2048
#: Recast's walkContour stops after this many states (its `iter` limit).
_WALK_MAX_STATES = 40000
#: `_region_walks` steps through pieces of at most 2**this many states that emit one region.
_WALK_PIECE_ROUNDS = 6
#: Walk the regions' outlines over solid states only (`_region_walks`); False: the state
#: machine one state at a time (`_walk_contour`, the literal port and the tests' oracle).
BATCH_WALKS = True


# --------------------------------------------------------------------------------------------
# Distance field


def build_distance_field(
    chf: CompactHeightfield, *, progress=None, ctx: BuildContext | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Distance of every span to the nearest area border, raw and box-blurred.

    [Recast: rcBuildDistanceField (calculateDistanceField + boxBlur)]

    Rule: a span whose 4 neighbours are all connected and of its own area starts at 0xFFFF,
    every other span at 0 (null-area spans included, by the same rule). Two chamfer passes in
    raster order (straight 2, diagonal 3 through Recast's L-shaped paths; see
    :func:`core.area.chamfer_distance`) give ``dist_raw``. The blur keeps values <= 2; any
    other span becomes ``(sum + 5) // 9`` over its 3x3 neighbourhood, an unconnected direction
    counting the span's own value twice and a missing diagonal counting it once.

    Returns:
        (dist_raw uint16 (n,), dist uint16 (n,), max_distance int = dist_raw.max()).
        [Units: half cells]
    """
    return build_distance_fields(chf, [chf.area], progress=progress)[0]


def build_distance_fields(
    chf: CompactHeightfield, areas, *, progress=None
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """`build_distance_field` of ``chf`` with each of ``areas`` (uint8 (n,) each) as its area
    array, all at once: several agents' eroded areas on one compact heightfield go through the
    chamfer's row loop and the blur together, for much less than one call each.

    Returns one (dist_raw, dist, max_distance) per area array, in order.
    """
    n = _check_chf(chf)
    nbx = _neighbors_with_sentinel(chf)
    init = np.empty((len(areas), n), dtype=np.int64)
    for row, area in zip(init, areas, strict=True):
        area = np.asarray(area, dtype=np.uint8)
        if area.shape != (n,):
            raise VoxNavError(f"an area array holds {area.shape} values, not one per span ({n})")
        area_x = np.append(area, np.uint8(255)).astype(np.int16)
        area_x[n] = -1  # the sentinel never matches an area
        same = all_of_4(per_direction(np.equal, area_x.take(nbx[:n]), area))
        np.multiply(same, 0xFFFF, out=row)
    # One field takes the 1-D passes (a row of one field is cheaper to step flat).
    raw = chamfer_distance(chf, init[0] if len(areas) == 1 else init, nbx).reshape(len(areas), n)
    del init
    max_distance = raw.max(axis=1) if n else np.zeros(raw.shape[0], dtype=np.int64)
    if progress is not None:
        progress(0.7, "distance field: chamfer")

    # The 3x3 sum: a missing straight neighbour counts the span itself for it and for its
    # diagonal, a missing diagonal the span itself. So the sum is the span's value times one
    # plus its missing terms, plus the values of the terms present (the sentinel reads 0).
    # int32 throughout (9 * 0xFFFF fits) and one direction at a time: this stage's peak. The
    # missing terms depend on the links alone, so all fields share them.
    raw32 = raw.astype(np.int32)
    src = np.zeros((raw.shape[0], n + 1), dtype=np.int32)
    src[:, :n] = raw32
    missing = np.ones(n, dtype=np.int32)
    total = np.zeros((raw.shape[0], n), dtype=np.int32)
    # One field reads through 1-D takes (cheaper than a take along the last axis).
    flat = src[0] if src.shape[0] == 1 else None
    for d in range(4):
        a = nbx[:n, d].copy()  # contiguous: the takes below read it cheaper than the column
        b = a * 4
        b += (d + 1) & 3
        b = nbx.take(b)  # nbx[a, d + 1]: its row n is all sentinels
        total += flat.take(a) if flat is not None else src.take(a, axis=1)
        total += flat.take(b) if flat is not None else src.take(b, axis=1)
        missing += a == n
        missing += b == n
        del b
    raw32 *= missing
    total += raw32
    del missing, src, flat, raw32
    blurred = select(raw <= 2, raw, (total + 5) // 9)
    if progress is not None:
        progress(1.0, "distance field: blur")
    return [
        (raw[k].astype(np.uint16), blurred[k].astype(np.uint16), int(max_distance[k]))
        for k in range(raw.shape[0])
    ]


# --------------------------------------------------------------------------------------------
# Shared helpers


@dataclass
class _Links:
    """What merging and filtering read of the span graph (`_Graph` has the same): the span
    count ``n``, the neighbours (n+1, 4) (``n``: none; a sentinel row) and the areas (n,)."""

    n: int
    nbx: np.ndarray
    area: np.ndarray


def _links_not_returned(nbx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The links of a neighbour table (n+1, 4) (``n``: none) whose target does not link back
    in the opposite direction: int64 (source span, direction) pairs, row-major (read-only)."""
    n = nbx.shape[0] - 1
    nbx_flat = nbx.reshape(-1)
    idx = np.arange(n, dtype=nbx.dtype)
    one_way = np.empty((n, 4), dtype=bool)
    for d in range(4):
        target = nbx[:n, d]
        back = nbx_flat.take(target * 4 + ((d + 2) & 3))
        one_way[:, d] = (target != n) & (back != idx)
    rows = np.flatnonzero(any_of_4(one_way))
    row_at, direction = np.nonzero(one_way[rows])
    pairs = rows[row_at].astype(np.int64), direction.astype(np.int64)
    for array in pairs:
        array.flags.writeable = False
    return pairs


#: Per direction d, the direction of the diagonal's second step (Recast's d + 1).
_NEXT_DIRECTION = np.array([1, 2, 3, 0], dtype=np.intp)
#: Spans below which `_Graph` keeps a table of every span's diagonals. A bake asks for the
#: diagonals of some of its spans (dungeon 14k of 24k, nav_test 44k of 57k, the 4x4 tiling
#: 115k of 377k): on small fields the table costs less than making them per call (nav_test's
#: regions 12.8 against 13.1 ms), on large ones more, and it is 16 bytes a span (the 4x4's
#: regions 52.8-54.4 against 51.4-52.8 ms; the 10x10's, 2.35M spans: 217 -> 181 MiB traced).
DIAG_TABLE_MAX_SPANS = 1 << 18


class _Graph:
    """Neighbour tables restricted to same-area links, with a sentinel span ``n``."""

    def __init__(self, chf: CompactHeightfield):
        _check_chf(chf)
        nbx = _neighbors_with_sentinel(chf)
        links_back = layout_cached(chf, "links not returned", lambda: _links_not_returned(nbx))
        self._link(np.asarray(chf.area, dtype=np.uint8), nbx, links_back)

    @classmethod
    def of_links(cls, area: np.ndarray, nbx: np.ndarray) -> _Graph:
        """The graph of spans with areas uint8 (n,) and neighbours (n+1, 4) (``n``: none,
        and a sentinel row of ``n``), as `_neighbors_with_sentinel` gives them."""
        g = cls.__new__(cls)
        g._link(area, nbx)
        return g

    def _link(self, area: np.ndarray, nbx: np.ndarray, links_back=None) -> None:
        """The tables from the areas and the neighbour table; ``links_back``: the layout's
        `_links_not_returned` (made here when not given)."""
        n = int(area.shape[0])
        self.n = n
        self.area = area
        # int32 tables where they fit: three (n+1, 4) tables are most of this stage's memory.
        index = np.int32 if 4 * (n + 1) < 2**31 else np.int64
        nbx = nbx.astype(index, copy=False)
        self.nbx = nbx
        area_x = np.append(self.area, 0).astype(np.int16)
        area_x[n] = -1
        same = per_direction(np.equal, area_x.take(nbx), area_x)
        same[n] = False
        #: (n+1, 4) neighbour of the same area, n otherwise: nbx + (n - nbx) where not the
        #: same area, by arithmetic (np.where with a scalar branch costs 3x here).
        nsa = np.subtract(index(n), nbx)
        nsa *= ~same
        nsa += nbx
        self.nsa = nsa
        del same, nsa
        # (span, d) at 4 * span + d: 1-D takes are several times faster than 2-D indexing.
        nsa_flat = self.nsa.reshape(-1)
        self._nsa_flat = nsa_flat
        # The tables as one 16- or 32-byte record per span: row gathers as 1-D takes.
        record = np.dtype((np.void, 4 * self.nsa.itemsize))
        self._nsa_rows = self.nsa.view(record).reshape(-1)
        #: Recast's diagonals (same-area neighbour d, then its same-area neighbour d + 1) as
        #: such records, for fields below `DIAG_TABLE_MAX_SPANS` (None: `diag_of` makes them
        #: for the spans it is asked for).
        self._diag_rows = None
        if n < DIAG_TABLE_MAX_SPANS:
            diag = np.empty_like(self.nsa)
            for d in range(4):
                diag[:, d] = nsa_flat.take(self.nsa[:, d] * 4 + ((d + 1) & 3))
            self._diag_rows = diag.view(record).reshape(-1)
        #: Scratch of `_flood`: per-span stamp of the last flood that saw it, and a slot table.
        # int32 like the tables (slots and labels count spans; stamps count floods, and
        # `next_stamp` starts over before they outgrow the type): half the fresh memory of
        # int64.
        # (A frontier's candidates, 4 per span plus the one-way links, stay below 8 (n + 1).)
        scratch = np.int32 if 8 * (n + 1) < 2**31 else np.int64
        self.flood_stamp = 0
        self.flood_stamp_limit = int(np.iinfo(scratch).max)
        self.flood_seen = np.zeros(n + 1, dtype=scratch)
        self.flood_slot = np.empty(n + 1, dtype=scratch)
        #: Scratch of `_flood_batch`: a span's place among the spans a flood may enter, then
        #: its region; -1 outside the call (the sentinel ``n`` always).
        self.flood_label = np.full(n + 1, -1, dtype=scratch)
        # Links need not be symmetric: a link in direction d is returned when the neighbour's
        # link in the opposite direction (the only one back to this column) leads back. A
        # same-area link a -> b (areas equal) is returned exactly when the layout's link b ->
        # a exists (then the areas are equal, and it is a same-area link too): so the
        # same-area links not returned are the layout's links not returned that are
        # same-area links (usually none: the layout's are kept per layout).
        if links_back is None:
            links_back = _links_not_returned(nbx)
        back_src, back_dir = links_back
        at = back_src * 4 + back_dir
        same_area = nsa_flat.take(at) != n
        #: The one-way links as (source, target) pairs, row-major (source, direction):
        #: `linked_from` adds them to the returned links, which it reads forward.
        self.ow_src = back_src[same_area]
        self.ow_dst = nsa_flat.take(at[same_area]).astype(np.int64)
        #: bool (n+1,): the span has a same-area link that is not returned, or is the target of
        #: one. Floods through such spans depend on where they start (see `_flood_batch`).
        self.one_way = np.zeros(n + 1, dtype=bool)
        self.one_way[self.ow_src] = True
        self.one_way[self.ow_dst] = True

    def next_stamp(self) -> int:
        """A stamp no span of ``flood_seen`` carries yet (the marks are cleared, and stamps
        start over, before they would outgrow its integer type)."""
        if self.flood_stamp >= self.flood_stamp_limit:
            self.flood_seen[:] = 0
            self.flood_stamp = 0
        self.flood_stamp += 1
        return self.flood_stamp

    def nsa_of(self, spans) -> np.ndarray:
        """``nsa[spans]`` (k, 4) as intp, each row read as one record (`compact.rows_of`).

        intp because the results index other arrays: NumPy indexes by int32 arrays through a
        slow path (gathers twice, scatters three times the time of intp indices), and one cast
        costs much less than that."""
        rows = self._nsa_rows.take(spans).view(self.nsa.dtype).reshape(-1, 4)
        return rows.astype(np.intp, copy=False)

    def diag_of(self, spans, rows=None) -> np.ndarray:
        """Recast's diagonals of ``spans`` (k, 4) as intp, as `nsa_of`: in direction d the
        same-area neighbour d, then its same-area neighbour d + 1 (``n`` where either is
        missing). ``rows``: ``nsa_of(spans)`` where the caller has it (read when there is
        no table of diagonals)."""
        if self._diag_rows is not None:
            table = self._diag_rows.take(spans).view(self.nsa.dtype).reshape(-1, 4)
            return table.astype(np.intp, copy=False)
        if rows is None:
            rows = self.nsa_of(spans)
        return self._nsa_flat.take(rows * 4 + _NEXT_DIRECTION).astype(np.intp, copy=False)

    def free_flood_scratch(self) -> None:
        """Drop the flood scratch arrays (three of n+1) before merging."""
        self.flood_seen = self.flood_slot = self.flood_label = np.zeros(0, dtype=np.int64)

    def linked_from(self, spans, within: np.ndarray | None = None):
        """int64: every span with a same-area link to one of ``spans``, and perhaps others
        (with repeats): the returned links of ``spans`` read forward, plus the one-way ones.
        ``within``: bool (n+1,) false at the sentinel n; only the spans it marks are returned
        (one selection instead of two)."""
        out = self.nsa_of(spans).ravel()
        if within is None:
            out = out[out != self.n]
        if self.ow_src.shape[0]:
            out = np.concatenate([out, self.ow_src[np.isin(self.ow_dst, spans)]])
        return out if within is None else out[within.take(out)]


def _paint_border(chf: CompactHeightfield, reg: np.ndarray, border_size: int, first_id: int):
    """Recast's paintRectRegion for the four tile border strips; returns the next free id."""
    if border_size <= 0:
        return first_id
    w, h = chf.width, chf.height
    bw, bh = min(w, border_size), min(h, border_size)
    xs = np.asarray(chf.span_x)
    ys = np.asarray(chf.span_y)
    walk = np.asarray(chf.area) != NULL_AREA
    rid = first_id
    for x0, x1, y0, y1 in ((0, bw, 0, h), (w - bw, w, 0, h), (0, w, 0, bh), (0, w, h - bh, h)):
        m = walk & (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
        reg[: len(m)][m] = rid | BORDER_REG
        rid += 1
    return rid


def _check_region_params(min_region_area, merge_region_area, border_size):
    for name, value in (
        ("min_region_area", min_region_area),
        ("merge_region_area", merge_region_area),
        ("border_size", border_size),
    ):
        if int(value) < 0:
            raise VoxNavError(f"{name} is {value}; it must be >= 0 (cells)")
    return int(min_region_area), int(merge_region_area), int(border_size)


# --------------------------------------------------------------------------------------------
# Watershed


def _expand(g: _Graph, reg, sdist, active, level: int, max_iter: int):
    """Recast's expandRegions on the stack ``active`` (spans with reg 0 only).

    Each pass is Jacobi-style, as in Recast: every free span takes, among its same-area
    neighbours that have a (non-border) region, the one with the smallest flood distance
    (+2; the first direction wins ties), all reading the state before the pass. A span that
    found nothing can only succeed once a neighbour changed, so after the first pass only the
    spans that link to newly assigned spans are re-examined; the result is the same.
    """
    nsa_flat = g.nsa.reshape(-1)  # (span, d) at 4 * span + d: 1-D takes
    in_stack = np.zeros(g.n + 1, dtype=bool)
    in_stack[active] = True
    cand_spans = active
    it = 0
    while cand_spans.shape[0]:
        # The first strict minimum in direction order (Recast's "<" in direction order) of
        # the neighbours' flood distances; ``sdist`` holds _BIG for a span without a region
        # or with a tile border's (see `_watershed`), so those never win.
        if cand_spans.shape[0] >= EXPAND_COLUMN_PASSES_FROM:
            # Four column passes: cheaper per span than an argmin over a short last axis.
            # The running choice by arithmetic, not a masked copy: `better` changes from span
            # to span, and a masked copy then branches per element (several times slower).
            at = cand_spans * 4
            best_at = nsa_flat.take(at)
            best_d = sdist.take(best_at)
            for d in range(1, 4):
                nb = nsa_flat.take(at + d)
                dd = sdist.take(nb)
                better = dd < best_d
                np.minimum(best_d, dd, out=best_d)  # ties keep the value: the same
                nb -= best_at
                nb *= better
                best_at += nb
        else:
            # Few spans: one (k, 4) pass, a third of the calls (argmin keeps the first).
            nb = g.nsa_of(cand_spans)
            dd = sdist.take(nb)
            pick = dd.argmin(axis=1)
            pick += np.arange(0, 4 * pick.shape[0], 4)  # (row, pick) at 4 * row + pick
            best_d = dd.reshape(-1).take(pick)
            best_at = nb.reshape(-1).take(pick)
        found = (best_d < 0xFFFF - 2).nonzero()[0]
        if not found.shape[0]:
            break
        # Takes by the found rows: cheaper than three boolean selections on these short
        # arrays (the rounds are many: nav_test's watershed runs some 180 of them).
        hit = cand_spans.take(found)
        reg[hit] = reg.take(best_at.take(found))
        best_d = best_d.take(found)
        best_d += 2
        sdist[hit] = best_d
        in_stack[hit] = False
        if level > 0:
            it += 1
            if it >= max_iter:
                break
        nxt = g.linked_from(hit, in_stack)  # (the sentinel n is never in the stack)
        # Drop repeats without sorting (the order of a Jacobi pass does not matter): of equal
        # entries only the last write survives.
        slot = np.arange(nxt.shape[0], dtype=g.flood_slot.dtype)
        g.flood_slot[nxt] = slot
        cand_spans = nxt[g.flood_slot[nxt] == slot]


def _touching(g: _Graph, reg, spans):
    """bool per span: an 8-neighbour (Recast's floodRegion test) already has another region."""
    nb = g.nsa_of(spans)
    rn = reg[nb]
    rd = reg[g.diag_of(spans, nb)]
    hit = (nb != g.n) & ((rn & BORDER_REG) == 0) & ((rn != 0) | (rd != 0))
    return any_of_4(hit)


def _flood(g: _Graph, reg, sdist, dist_x, seed: int, lev: int, rid: int):
    """Recast's floodRegion for a seed known to be free and not touching another region."""
    n = g.n
    # Visited marks live across floods: a span is seen in this flood when it carries this
    # flood's stamp, so no array of n is cleared per seed.
    stamp = g.next_stamp()
    seen = g.flood_seen
    seen[n] = stamp
    seen[seed] = stamp
    members = [np.array([seed], dtype=np.int64)]
    frontier = members[0]
    while frontier.shape[0]:
        cand = g.nsa_of(frontier).ravel()
        cand = cand[seen[cand] != stamp]
        if cand.shape[0] == 0:
            break
        # Drop repeats without sorting: of equal entries only the last write survives.
        slot = np.arange(cand.shape[0], dtype=g.flood_slot.dtype)
        g.flood_slot[cand] = slot
        cand = cand[g.flood_slot[cand] == slot]
        seen[cand] = stamp
        cand = cand[(reg[cand] == 0) & (dist_x[cand] >= lev)]
        if cand.shape[0] == 0:
            break
        cand = cand[~_touching(g, reg, cand)]
        members.append(cand)
        frontier = cand
    region = np.concatenate(members)
    reg[region] = rid
    sdist[region] = _flood_distance(rid)


@dataclass
class _Floods:
    """Regions flooded at once (`_flood_batch`), to be numbered in order: their spans region
    after region and per span its region's place (0, 1, ...); its length is their count."""

    spans: np.ndarray
    place: np.ndarray
    count: int

    def __len__(self) -> int:
        return self.count


def _floods_by_region(spans: np.ndarray, region: np.ndarray) -> _Floods:
    """The spans grouped by ``region`` (a key per span, the regions in ascending key order;
    a stable sort keeps each region's spans in their order)."""
    order = np.argsort(region, kind="stable")
    ordered = spans[order]
    ids = region[order]
    starts = np.empty(ids.shape[0], dtype=bool)
    starts[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=starts[1:])
    place = np.cumsum(starts) - 1
    return _Floods(ordered, place, int(place[-1]) + 1 if place.shape[0] else 0)


def _flood_distance(rid):
    """A new region's flood distance in `_watershed`'s ``sdist``: 0, or _BIG when its id
    carries the border flag (ids past 0x7FFF), a region Recast's expansion never grows.
    ``rid``: an id, or an int array of them (the distances then per id)."""
    return np.where(np.asarray(rid) < BORDER_REG, 0, _BIG)


def _flood_batch_bfs(g: _Graph, reg, dist_x, seeds, lev: int):
    """Recast's floodRegion for every seed of ``seeds`` at once, breadth first (one ring of
    every flood per round), valid while the floods do not see each other.

    ``seeds``: the stack spans still free and not touching another region, in stack order.
    Floods them all as one multi-source search on the state before any of them: each region
    is the connected set of free spans with ``dist >= lev`` that touch no other region, and
    seeds in one set make one region (the first seed's). Taken in order of their first seed,
    these regions are what one flood after the other gives, up to the first region that could
    see an earlier one: one of its spans has a 4-neighbour or a diagonal in it (that span
    would now touch a region), or it holds a one-way link (`_Graph.one_way`: a flood through
    it depends on where it starts).

    Returns (floods, stop): ``floods`` the regions to number in order (`_Floods`), and
    ``stop`` the position in ``seeds`` of the first seed of the first region left out (None:
    every seed was handled).
    """
    n = g.n
    stamp = g.next_stamp()
    seen = g.flood_seen
    label = g.flood_label
    seen[n] = stamp
    label[n] = -1
    seen[seeds] = stamp
    label[seeds] = np.arange(seeds.shape[0], dtype=label.dtype)
    members = [seeds]
    same_a: list[np.ndarray] = []  # label pairs of one region
    same_b: list[np.ndarray] = []
    frontier = seeds
    while frontier.shape[0]:
        cand = g.nsa_of(frontier).ravel()
        lab = label[frontier].repeat(4)
        old = seen[cand] == stamp
        met = old & (label[cand] >= 0) & (label[cand] != lab)
        if met.any():
            same_a.append(lab[met])
            same_b.append(label[cand[met]])
        fresh = ~old
        cand, lab = cand[fresh], lab[fresh]
        if cand.shape[0] == 0:
            break
        # One entry per span, labelled with the lowest label reaching it this round.
        slot = np.arange(cand.shape[0], dtype=g.flood_slot.dtype)
        g.flood_slot[cand] = slot
        first = g.flood_slot[cand] == slot
        label[cand] = _BIG
        np.minimum.at(label, cand, lab)
        seen[cand] = stamp
        uniq = cand[first]
        ok = (reg[uniq] == 0) & (dist_x[uniq] >= lev)
        ok[ok] = ~_touching(g, reg, uniq[ok])
        label[uniq[~ok]] = -1
        accepted = uniq[ok]
        # Several labels reaching one accepted span: one region.
        joined = (label[cand] >= 0) & (label[cand] != lab)
        if joined.any():
            same_a.append(lab[joined])
            same_b.append(label[cand[joined]])
        members.append(accepted)
        frontier = accepted
    spans = np.concatenate(members)
    # Regions: labels joined by the pairs above, each named by its lowest label (first seed).
    region_of = np.arange(seeds.shape[0], dtype=np.int64)
    if same_a:
        region_of = lowest_labels(seeds.shape[0], np.concatenate(same_a), np.concatenate(same_b))
    region = region_of[label[spans]]
    # Could a region see an earlier one? Its spans' 4-neighbours and diagonals (Recast's
    # touching test) in another region of this batch, with a lower first seed.
    nb_rows = g.nsa_of(spans)
    look = np.concatenate([nb_rows, g.diag_of(spans, nb_rows)], axis=1)
    inside = (seen[look] == stamp) & (label[look] >= 0) & (look != n)
    other = np.where(inside, region_of[np.where(inside, label[look], 0)], _BIG)
    earlier = (other < region[:, None]).any(axis=1) | g.one_way[spans]
    label[spans] = -1  # the scratch is -1 outside a call (`_flood_batch_sets`)
    stop_region = int(region[earlier].min()) if earlier.any() else None
    take = region < stop_region if stop_region is not None else np.ones(spans.shape[0], bool)
    return _floods_by_region(spans[take], region[take]), stop_region


def _flood_batch(g: _Graph, reg, dist_x, seeds, lev: int, pool):
    """Recast's floodRegion for every seed of ``seeds`` at once, valid while the floods do not
    see each other: `_flood_batch_sets` or, when ``pool`` holds more than
    `FLOOD_SETS_MAX_SPANS` spans, `_flood_batch_bfs` (same result).

    ``seeds``: the stack spans still free and not touching another region, in stack order.
    ``pool``: span arrays that together hold every free span with ``dist >= lev``.

    Returns (floods, stop): ``floods`` the regions to number in order (`_Floods`), and
    ``stop`` the position in ``seeds`` of the first seed of the first region left out (None:
    every seed was handled).
    """
    if sum(part.shape[0] for part in pool) > FLOOD_SETS_MAX_SPANS:
        return _flood_batch_bfs(g, reg, dist_x, seeds, lev)
    spans = np.concatenate(pool)
    return _flood_batch_sets(g, reg, seeds, spans[(reg[spans] == 0) & (dist_x[spans] >= lev)])


def _flood_batch_sets(g: _Graph, reg, seeds, open_spans):
    """Recast's floodRegion for every seed of ``seeds`` at once, valid while the floods do not
    see each other.

    ``seeds``: the stack spans still free and not touching another region, in stack order.
    ``open_spans``: every free span with ``dist >= lev`` (the flood level) and no other; the
    seeds are among them (stack spans have ``dist >= level``, and ``lev <= level``). Floods
    them all on the state before any of them. A flood enters a span when it is free, has
    ``dist >= lev`` and touches no other region, which the floods of this batch do not
    change; so each region is a connected set of such spans (over same-area links) holding
    seeds, and seeds in one set make one region (the first seed's). Taken in order of their
    first seed, these regions are what one flood after the other gives, up to the first
    region that could see an earlier one: one of its spans has a 4-neighbour or a diagonal in
    it (that span would now touch a region), or it holds or is the target of a one-way link
    (`_Graph.one_way`: a flood through it depends on where it starts, where the sets here
    follow links both ways).

    The sets are found all at once (connected components: each round hooks every set onto its
    lowest-numbered neighbouring set, then pointer jumping flattens the trees), in a number of
    rounds logarithmic in the spans, where a breadth-first flood needs as many rounds as the
    widest region.

    Returns (floods, stop): ``floods`` the regions to number in order (`_Floods`), and
    ``stop`` the position in ``seeds`` of the first seed of the first region left out (None:
    every seed was handled).
    """
    enter = open_spans[~_touching(g, reg, open_spans)]
    m = enter.shape[0]
    local = g.flood_label  # -1 outside this call
    local[enter] = np.arange(m, dtype=local.dtype)
    seed_at = local[seeds].astype(np.int64)
    assert seed_at.min(initial=0) >= 0, "a seed is not among the spans its flood may enter"
    links: np.ndarray = local.take(g.nsa_of(enter).ravel())
    local[enter] = -1
    at = (links >= 0).nonzero()[0]
    lo = at >> 2
    hi = links[at].astype(np.int64)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    root = np.arange(m, dtype=np.int64)
    while lo.shape[0]:
        root_lo, root_hi = root[lo], root[hi]
        apart = root_lo != root_hi
        if not apart.any():
            break
        lo, hi, root_lo, root_hi = lo[apart], hi[apart], root_lo[apart], root_hi[apart]
        # Roots only: the higher root of each link joins the lowest root linked to it.
        np.minimum.at(root, np.maximum(root_lo, root_hi), np.minimum(root_lo, root_hi))
        while True:
            up = root[root]
            if not np.logical_or.reduce(up != root):  # (ufunc direct: a hot loop)
                break
            root = up
    # Each set's first seed names its region; sets without a seed are no flood's.
    first_seed = np.full(m, _BIG, dtype=np.int64)
    np.minimum.at(first_seed, root[seed_at], np.arange(seeds.shape[0], dtype=np.int64))
    region_at = first_seed[root]
    flooded = (region_at < _BIG).nonzero()[0]
    spans = enter[flooded]
    region = region_at[flooded]
    # Could a region see an earlier one? Its spans' 4-neighbours and diagonals (Recast's
    # touching test) in another region of this batch, with a lower first seed.
    local[spans] = region
    nb_rows = g.nsa_of(spans)
    look = np.concatenate([nb_rows, g.diag_of(spans, nb_rows)], axis=1)
    other = local[look]
    local[spans] = -1
    earlier = ((other >= 0) & (other < region[:, None])).any(axis=1) | g.one_way[spans]
    stop_region = int(region[earlier].min()) if earlier.any() else None
    if stop_region is not None:
        keep = region < stop_region
        spans, region = spans[keep], region[keep]
    return _floods_by_region(spans, region), stop_region


# --------------------------------------------------------------------------------------------
# Merge and filter (Recast's mergeAndFilterRegions)


def _contour_machine(g: _Graph | _Links, reg):
    """Successor and emitted neighbour region of every (span, dir) state of walkContour."""
    n = g.n
    nbx = g.nbx[:n]
    emit = reg.take(nbx).astype(np.int32)  # (n, 4), sentinel -> 0; ids fit 17 bits
    solid = emit != reg[:n, None]
    # Not solid: move to the neighbour and turn left; solid: turn right on the spot. Built
    # in place (one (n, 4) table each): on a big grid these are the stage's largest arrays.
    succ = 4 * nbx
    succ += np.array([3, 0, 1, 2], dtype=succ.dtype)[None, :]
    rows, dirs = np.nonzero(solid)
    succ[rows, dirs] = 4 * rows + ((dirs + 1) & 3)
    del rows, dirs
    emit[~solid] = -1
    # Walked with .item(): cheaper than turning every state into a list when, on a large
    # grid, only the states along region borders are visited.
    return succ.ravel(), emit.ravel()


def _walk_contour(start: int, succ, emit, first_reg: int):
    """Recast's walkContour from state ``start``: the cyclic list of neighbour regions."""
    succ, emit = succ.item, emit.item
    cont = [first_reg]
    cur = first_reg
    s = start
    it = 0
    while True:
        it += 1
        if it >= _WALK_MAX_STATES:
            break
        e = emit(s)
        if e >= 0 and e != cur:
            cur = e
            cont.append(e)
        s = succ(s)
        if s == start:
            break
    _drop_walk_repeats(cont)
    return cont


def _drop_walk_repeats(cont: list[int]) -> None:
    """walkContour's last step, in place: drop cyclic repeats (unlike `_remove_adjacent`,
    a list of equal ids can end up empty, as Recast's loop does)."""
    if len(cont) > 1:
        j = 0
        while j < len(cont):
            nj = (j + 1) % len(cont)
            if cont[j] == cont[nj]:
                del cont[j]
            else:
                j += 1


def _region_walks(g: _Graph | _Links, reg, starts: np.ndarray, first_regs: list[int]):
    """`_walk_contour` from state (span, 0) of every span in ``starts``, walking only the
    solid states: the state after a solid one is found for all of them at once (turn, then
    step through open directions), so the Python loop visits each border edge once. Returns
    the neighbour lists, or None when some walk would not settle in a few steps (malformed
    links: use the state machine). A walk longer than Recast's 40000 states is redone by
    `_walk_contour` (which stops there, as Recast does)."""
    n = g.n
    nbx = g.nbx[:n]
    reg32 = reg.astype(np.int32)  # ids fit 17 bits: half the memory of the (n, 4) table
    nb_reg = reg32.take(nbx)  # (n, 4); a take, not fancy indexing: a third faster
    solid = nb_reg != reg32[:n, None]
    del reg32
    # Spans of the walked regions with a solid direction (few), then their solid states in
    # row-major order: state keys 4 * span + d ascending. (Other spans are never reached: a
    # walk stays in its region; a span without a region may even step off the grid.)
    walked = np.zeros(int(reg.max()) + 1, dtype=bool)
    walked[reg[np.asarray(starts, dtype=np.int64)]] = True
    has_solid = any_of_4(solid)
    border = np.flatnonzero(has_solid & walked[reg[:n]])
    rows, d = np.nonzero(solid.take(border, axis=0))
    span = border[rows]
    keys = span.astype(np.int64) * 4 + d
    cur = span.astype(np.int64)
    cdir = (d + 1) & 3
    steps = np.ones(span.shape[0], dtype=np.int64)
    active = np.arange(span.shape[0])
    # States (span, direction) read as 4 * span + direction: 1-D takes, not 2-D indexing.
    solid_flat, nbx_flat = solid.reshape(-1), nbx.reshape(-1)
    for _ in range(16):
        active = active[~solid_flat.take(cur[active] * 4 + cdir[active])]
        if active.size == 0:
            break
        cur[active] = nbx_flat.take(cur[active] * 4 + cdir[active])
        cdir[active] = (cdir[active] + 3) & 3
        steps[active] += 1
    else:
        return None
    nxt_a = np.searchsorted(keys, cur * 4 + cdir)
    emit_a = nb_reg.reshape(-1).take(keys)
    start_at_a = np.searchsorted(keys, np.asarray(starts, dtype=np.int64) * 4)
    # Along a walk most states emit what the state before did, and a Python step per state
    # is most of this function's time. So the walks step through pieces: a state and the
    # ones after it up to the last one emitting the same region (or at most
    # 2**_WALK_PIECE_ROUNDS states), never past a walk's start; a piece adds its states'
    # steps and emits its first state's region, which is what stepping through it did.
    # Pieces by pointer doubling: a piece not yet closed by a run's end takes the piece after
    # it (each right-hand side is read before its array is written).
    closed = emit_a.take(nxt_a) != emit_a
    closed[np.isin(nxt_a, start_at_a)] = True
    piece_next, piece_steps = nxt_a, steps  # (both this function's own)
    for _ in range(_WALK_PIECE_ROUNDS):
        grow = (~closed).nonzero()[0]
        if not grow.size:
            break
        after = piece_next.take(grow)
        piece_steps[grow] += piece_steps.take(after)
        closed[grow] = closed.take(after)
        piece_next[grow] = piece_next.take(after)
    nxt = piece_next.tolist()
    emit = emit_a.tolist()
    steps_l = piece_steps.tolist()
    start_at = start_at_a.tolist()
    walks = []
    machine = None
    for s, e0, first in zip(np.asarray(starts).tolist(), start_at, first_regs, strict=True):
        cont = [first]
        last = first
        e = e0
        visited = 0
        while True:
            visited += steps_l[e]
            if visited >= _WALK_MAX_STATES:
                break
            v = emit[e]
            if v != last:
                last = v
                cont.append(v)
            e = nxt[e]
            if e == e0:
                break
        if visited >= _WALK_MAX_STATES:  # Recast stops mid-walk: replay it state by state
            if machine is None:
                machine = _contour_machine(g, reg)
            walks.append(_walk_contour(4 * s, machine[0], machine[1], first))
            continue
        _drop_walk_repeats(cont)
        walks.append(cont)
    return walks


def _remove_adjacent(cons):
    """Recast's removeAdjacentNeighbours: drop cyclic repeats, never below one entry."""
    i = 0
    while i < len(cons) and len(cons) > 1:
        ni = (i + 1) % len(cons)
        if cons[i] == cons[ni]:
            del cons[i]
        else:
            i += 1


class _Region:
    __slots__ = ("span_count", "id", "area", "overlap", "connections", "floors", "visited")

    def __init__(self, i):
        self.span_count = 0
        self.id = i
        self.area = 0
        self.overlap = False
        self.connections = []
        self.floors = set()
        self.visited = False


def _can_merge(a: _Region, b: _Region) -> bool:
    if a.area != b.area:
        return False
    if a.connections.count(b.id) > 1:
        return False
    return b.id not in a.floors


def _merge_regions(a: _Region, b: _Region) -> bool:
    acon = list(a.connections)
    bcon = b.connections
    if b.id not in acon or a.id not in bcon:
        return False
    insa = acon.index(b.id)
    insb = bcon.index(a.id)
    na, nb = len(acon), len(bcon)
    a.connections = [acon[(insa + 1 + i) % na] for i in range(na - 1)]
    a.connections += [bcon[(insb + 1 + i) % nb] for i in range(nb - 1)]
    _remove_adjacent(a.connections)
    a.floors |= b.floors
    a.span_count += b.span_count
    b.span_count = 0
    b.connections = []
    return True


def _replace_neighbour(r: _Region, old: int, new: int):
    changed = False
    cons = r.connections
    for i, c in enumerate(cons):
        if c == old:
            cons[i] = new
            changed = True
    if old in r.floors:
        r.floors.discard(old)
        r.floors.add(new)
    if changed:
        _remove_adjacent(cons)


#: Pairs of spans sharing a column reduced to their region pairs at once (`_add_floors`).
FLOOR_PAIR_CHUNK = 1 << 18


def _same_column_pairs(chf: CompactHeightfield):
    """(a, b), each (p,): every pair of spans a < b in one column, for columns holding more
    than one span (few: only those columns are read); int32 where the span ids fit. Read-only:
    kept per span layout (`layout_cached`), so c (c - 1) / 2 pairs for a column of c spans (30
    floors stacked: 435 a column) are held as 8 bytes each."""
    return layout_cached(chf, "same-column pairs", lambda: _column_pairs(chf))


def _column_pairs(chf: CompactHeightfield):
    """`_same_column_pairs` made afresh."""
    start = np.asarray(chf.cell_start, dtype=np.int64)
    # The columns found from the spans (stored column by column: a span shares its column
    # with the next one), not from a grid-sized count array: on a large grid that array's
    # fresh memory cost more than the rest of this function.
    sx, sy = np.asarray(chf.span_x), np.asarray(chf.span_y)
    shares = (sx[1:] == sx[:-1]) & (sy[1:] == sy[:-1])
    opens = shares.copy()
    opens[1:] &= ~shares[:-1]  # the first span of each column shared
    firsts = np.flatnonzero(opens)
    multi = sx[firsts].astype(np.int64) + sy[firsts].astype(np.int64) * int(chf.width)
    per_col = start[multi + 1] - start[multi]
    # Every span of the multi-span columns, and how many spans of its column follow it.
    column_first = np.repeat(start[multi], per_col)
    below = np.arange(column_first.shape[0]) - np.repeat(np.cumsum(per_col) - per_col, per_col)
    spans = column_first + below
    above = np.repeat(per_col, per_col) - 1 - below
    index = np.int32 if int(start[-1]) < 2**31 else np.int64
    a = np.repeat(spans.astype(index), above)
    b = np.arange(a.shape[0], dtype=np.int64) - np.repeat(np.cumsum(above) - above, above)
    b += a
    b += 1
    b = b.astype(index)
    a.flags.writeable = b.flags.writeable = False
    return a, b


def _add_floors(
    regs: list[_Region], chf: CompactHeightfield, r_: np.ndarray, keep_of, ctx=None
) -> np.ndarray:
    """Add to each region's ``floors`` the regions of the spans sharing a column with its
    spans (`_same_column_pairs`, both ways round) where ``keep_of(ra, rb)`` (bool per pair of
    the spans' regions ``r_``) keeps the pair, each region's in ascending order. Returns the
    regions paired with themselves (int64, sorted: two spans of one column). ``ctx``'s
    ``memory_check`` (if any) is asked for the floor sets before they are filled.

    The pairs are reduced to their distinct region pairs in chunks, and each region's floors
    added at once: a tall stack's span pairs are many (30 floors on 10k columns: 4.4 M) and
    their region pairs few, and no Python object is made per pair but the sets' own."""
    a, b = _same_column_pairs(chf)
    found = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, a.shape[0], FLOOR_PAIR_CHUNK):
        ra = r_[a[lo : lo + FLOOR_PAIR_CHUNK]].astype(np.int64)
        rb = r_[b[lo : lo + FLOOR_PAIR_CHUNK]].astype(np.int64)
        keep = keep_of(ra, rb)
        ra, rb = ra[keep], rb[keep]
        found.append(np.unique(np.concatenate([ra << 32 | rb, rb << 32 | ra])))
    key = np.unique(np.concatenate(found))
    del found
    if ctx is not None and ctx.memory_check is not None and key.shape[0]:
        ctx.memory_check(
            "regions",
            key.shape[0] * REGIONS_BYTES_PER_FLOOR_PAIR,
            f"{key.shape[0] // 2:,} pairs of regions sharing a grid column (floors stacked "
            f"over {chf.width:,} x {chf.height:,} columns)",
        )
    region, floor = key >> 32, key & 0xFFFFFFFF
    firsts = np.flatnonzero(np.diff(region, prepend=-1))
    ends = np.append(firsts[1:], key.shape[0])[: firsts.shape[0]]
    for at, lo, hi in zip(region[firsts].tolist(), firsts.tolist(), ends.tolist(), strict=True):
        regs[at].floors.update(floor[lo:hi].tolist())
    return region[region == floor]


def _merge_and_filter(
    chf, g: _Graph | _Links, reg, max_region_id: int, min_area: int, merge_area: int, ctx=None
):
    """Recast's mergeAndFilterRegions; rewrites ``reg`` in place, returns (max id, overlaps)."""
    n = g.n
    nreg = max_region_id + 1
    regs = [_Region(i) for i in range(nreg)]
    r_ = reg[:n]
    valid = (r_ > 0) & (r_ < nreg)
    counts = np.bincount(r_[valid], minlength=nreg)
    for i in np.nonzero(counts)[0].tolist():
        regs[i].span_count = int(counts[i])

    # Floors: other spans of the same column (overlap when it is the same region).
    def both_valid(ra, rb):
        return (ra > 0) & (ra < nreg) & (rb > 0) & (rb < nreg)

    for i in _add_floors(regs, chf, r_, both_valid, ctx).tolist():
        regs[i].overlap = True

    # Connections: walk the contour from each region's first span in raster order.
    present = np.nonzero(counts)[0]
    if present.shape[0]:
        # Each region's first span: the spans written last to first, so the first one's id
        # is what stays (a scatter, where a sort by region cost 4 ms on the 4x4).
        order = np.flatnonzero(valid)
        first_at = np.empty(nreg, dtype=np.int64)
        first_at[r_[order[::-1]]] = order[::-1]
        uniq = present
        first_span = first_at[uniq]
        nbx = g.nbx
        first_regs = reg[nbx[first_span, 0]].tolist()
        walks = _region_walks(g, reg, first_span, first_regs) if BATCH_WALKS else None
        if walks is None:
            succ, emit = _contour_machine(g, reg)
            walks = [
                _walk_contour(4 * s, succ, emit, fr)
                for s, fr in zip(first_span.tolist(), first_regs, strict=True)
            ]
        for region, s, cons in zip(uniq.tolist(), first_span.tolist(), walks, strict=True):
            regs[region].area = int(g.area[s])
            regs[region].connections = cons

    # Remove too small regions (whole connected groups smaller than min_area).
    for i in range(nreg):
        reg_i = regs[i]
        if reg_i.id == 0 or (reg_i.id & BORDER_REG) or reg_i.span_count == 0 or reg_i.visited:
            continue
        connects_to_border = False
        span_count = 0
        stack = [i]
        trace = []
        reg_i.visited = True
        while stack:
            ri = stack.pop()
            creg = regs[ri]
            span_count += creg.span_count
            trace.append(ri)
            for c in creg.connections:
                if c & BORDER_REG:
                    connects_to_border = True
                    continue
                nei = regs[c]
                if nei.visited or nei.id == 0 or (nei.id & BORDER_REG):
                    continue
                stack.append(nei.id)
                nei.visited = True
        if span_count < min_area and not connects_to_border:
            for t in trace:
                regs[t].span_count = 0
                regs[t].id = 0

    # Merge too small regions into their smallest mergeable neighbour. After each merge Recast
    # visits every region to rename the merged id; only the regions holding that id (as their
    # own id, a connection or a floor) can change, so they are indexed (supersets suffice: a
    # region not holding the id is left as it is).
    holders: dict[int, set[int]] = {}
    members: dict[int, set[int]] = {}
    for i, r in enumerate(regs):
        members.setdefault(r.id, set()).add(i)
        for v in (*r.connections, *r.floors):
            holders.setdefault(v, set()).add(i)
    while True:
        merge_count = 0
        for i in range(nreg):
            rg = regs[i]
            if rg.id == 0 or (rg.id & BORDER_REG) or rg.overlap or rg.span_count == 0:
                continue
            if rg.span_count > merge_area and 0 in rg.connections:
                continue
            smallest = 0xFFFFFFF
            merge_id = rg.id
            for c in rg.connections:
                if c & BORDER_REG:
                    continue
                m = regs[c]
                if m.id == 0 or (m.id & BORDER_REG) or m.overlap:
                    continue
                if m.span_count < smallest and _can_merge(rg, m) and _can_merge(m, rg):
                    smallest = m.span_count
                    merge_id = m.id
            if merge_id != rg.id:
                old = rg.id
                target = regs[merge_id]
                if _merge_regions(target, rg):
                    for v in (*target.connections, *target.floors):
                        holders.setdefault(v, set()).add(merge_id)
                    for j in members.pop(old, ()):
                        if regs[j].id == old:
                            regs[j].id = merge_id
                            members.setdefault(merge_id, set()).add(j)
                    renamed = holders.setdefault(merge_id, set())
                    for j in holders.pop(old, ()):
                        other = regs[j]
                        if other.id == 0 or (other.id & BORDER_REG):
                            continue
                        _replace_neighbour(other, old, merge_id)
                        renamed.add(j)
                    merge_count += 1
        if merge_count == 0:
            break

    return _compress(regs, reg, n), [r.id for r in regs if r.overlap]


def _compress(regs, reg, n):
    """Recast's "compress region ids": surviving ids become 1..k; remaps ``reg``, returns k.

    Recast rescans every later region for each id it renumbers (quadratic in the number of
    regions: minutes for tens of thousands). Its result is each distinct surviving id, in the
    order of the first region holding it, numbered 1, 2, ...: when number g is handed out, no
    region still waits with old id g (after merging an id in use is the index of a live root
    region, so g's holders come no later; layer ids grow with their root's index, so g was
    renumbered first). The literal scan is the test oracle (tests/core/oracle.py).
    """
    ids = np.fromiter((r.id for r in regs), dtype=np.int64, count=len(regs))
    live = np.nonzero((ids != 0) & ((ids & BORDER_REG) == 0))[0]
    uniq, first = np.unique(ids[live], return_index=True)
    gen = int(uniq.shape[0])
    new_of_old = np.zeros(int(uniq[-1]) + 1 if gen else 1, dtype=np.int64)
    new_of_old[uniq[np.argsort(first)]] = np.arange(1, gen + 1)
    ids[live] = new_of_old[ids[live]]
    for r, v in zip(regs, ids.tolist(), strict=True):
        r.id = v
    r_ = reg[:n]
    plain = (r_ & BORDER_REG) == 0
    r_[plain] = ids[r_[plain]]
    return gen


def build_regions(
    chf: CompactHeightfield,
    dist,
    max_distance: int,
    min_region_area: int,
    merge_region_area: int,
    border_size: int = 0,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> tuple[np.ndarray, int]:
    """Watershed partitioning of the walkable spans into regions. [Recast: rcBuildRegions]

    Rule (Recast's, order included): paint the tile border strips as border regions; then from
    level ``(max_distance + 1) & ~1`` down in steps of 2, sort the free walkable spans into 8
    level stacks (every 8 levels; between sorts a stack inherits the previous stack's
    leftovers), grow the existing regions into the current stack (at most 8 Jacobi passes, a
    span taking the same-area neighbour region with the smallest flood distance + 2, first
    direction on ties), then flood a new region from every stack span, in stack order, that is
    still free and does not touch another region. After the last level the regions grow until
    nothing changes. Finally regions (with the regions they connect to) smaller than
    ``min_region_area`` are removed, regions of at most ``merge_region_area`` spans (or not
    touching a null border) merge into their smallest compatible neighbour, and ids are
    renumbered 1..max_regions.

    Parameters:
        chf: compact heightfield (not modified).
        dist: uint16 (n,) blurred distance field from :func:`build_distance_field`.
        max_distance: the UN-blurred maximum (third result of build_distance_field).
        min_region_area: [Units: spans] [Limit: >= 0]
        merge_region_area: [Units: spans] [Limit: >= 0]
        border_size: tile border. [Units: cells] [Limit: >= 0]
        progress: optional callable ``progress(fraction: float, message: str)``.

    Returns:
        (reg uint16 (n,), max_regions int).
    """
    min_area, merge_area, border_size = _check_region_params(
        min_region_area, merge_region_area, border_size
    )
    g = _Graph(chf)
    n = g.n
    dist = np.asarray(dist)
    if dist.shape != (n,):
        raise VoxNavError(f"dist has shape {dist.shape}; expected ({n},), one per compact span")
    # int32: ids stay below 2**17 (border flag included), and the expansion's gathers of
    # regions and flood distances move half the bytes (regions 1.07x on the 4x4).
    reg = np.zeros(n + 1, dtype=np.int32)
    first = _paint_border(chf, reg, border_size, 1)
    rid = _watershed(g, dist, max_distance, reg, first, progress)
    g.free_flood_scratch()
    out = _merged_regions(chf, g, reg, rid, min_area, merge_area, ctx)
    if progress is not None:
        progress(1.0, "regions: done")
    return out


def _merged_regions(chf, g: _Graph | _Links, reg, rid: int, min_area: int, merge_area: int, ctx):
    """`build_regions` after the watershed (``rid``: the next free id): merged, filtered and
    renumbered regions (reg uint16 (n,), max_regions), the overlap warning in ``ctx``."""
    max_regions, overlaps = _merge_and_filter(chf, g, reg, rid, min_area, merge_area, ctx)
    if overlaps and ctx is not None:
        ctx.warn(
            f"watershed regions: {len(overlaps)} regions overlap another region in the same "
            "column; their polygons may overlap (try the monotone or layers partitioning)"
        )
    return reg[: g.n].astype(np.uint16), int(max_regions)


#: Spans of all fields together up to which `build_regions_together` runs one watershed over
#: their union. The union pays each level's NumPy calls once, where its tables, three times
#: as large as one field's, are fresh memory: three agents' fields of dungeon (3 x 24k spans)
#: 21.9 -> 16.1 ms of watershed and 2.9 -> 5.1 ms of tables, of nav_test (3 x 57k) 37.5 ->
#: 28.9 and 5.5 -> 9.0 ms, of the 4x4 tiling (3 x 377k) 140 -> 155 ms and 37 -> 70 ms
#: (2026-11-26).
TOGETHER_MAX_SPANS = 1 << 18


#: Ids a watershed over several fields at once hands out below: past it a field's own
#: numbering could reach the border flag where the union's did (`build_regions_together`).
_UNION_ID_LIMIT = BORDER_REG


class _OutOfUnionIds(Exception):
    """A watershed over several fields at once reached `_UNION_ID_LIMIT` ids together."""


def build_regions_together(
    chfs: list[CompactHeightfield],
    dists: list[np.ndarray],
    max_distances: list[int],
    min_region_area: int,
    merge_region_area: int,
    *,
    ctxs: list[BuildContext | None] | None = None,
) -> list[tuple[np.ndarray, int]]:
    """`build_regions` (no tile border) of several compact heightfields that share one span
    layout and links (equal ``neighbor`` arrays: agents baked together, `core.agents`) and
    differ in their areas and distance fields; each result equals its own `build_regions`.

    The watershed runs once over the disjoint union of their span graphs, so its per-level
    work (about 30 NumPy calls per level, expansion pass and flood batch) is paid once: no
    link joins two fields, and each field's level schedule is aligned on the highest one by
    adding the difference of their start levels (even) to its distances (a stack bucket
    ``(level >> 1) - (dist >> 1)`` and a flood test ``dist >= level - 2`` read the same), so
    each field sees exactly its own sequence of stacks, passes and floods. On a field's own
    level 0 its expansion goes on past the 8-pass cap, as at level 0; after it the field
    leaves the stacks (its free spans all touch a region by then, so no flood starts there
    and only the last expansion, run for all, changes them). Region ids are handed out in
    one sequence and renumbered per field in the order they were given (each field's floods
    come in its own order); merging and filtering run per field. Above `TOGETHER_MAX_SPANS`
    spans together, or should the union run out of ids below `BORDER_REG`
    (`_UNION_ID_LIMIT`), each field is partitioned alone.

    chfs, dists (uint16 (n,) each), max_distances: as `build_regions` takes them, one per
    field. min_region_area, merge_region_area: [Units: spans] [Limit: >= 0]. ``ctxs``: each
    field's context for `build_regions`' warning. Returns (reg uint16 (n,), max_regions) per
    field.
    """
    min_area, merge_area, _border = _check_region_params(min_region_area, merge_region_area, 0)
    k = len(chfs)
    ctxs = list(ctxs) if ctxs is not None else [None] * k
    if not (len(dists) == len(max_distances) == len(ctxs) == k):
        raise VoxNavError("build_regions_together: one distance field and maximum per field")
    if k == 0:
        return []
    n = _check_chf(chfs[0])
    for chf, dist in zip(chfs, dists, strict=True):
        if _check_chf(chf) != n or not (
            chf.neighbor is chfs[0].neighbor or np.array_equal(chf.neighbor, chfs[0].neighbor)
        ):
            raise VoxNavError(
                "build_regions_together: the compact heightfields must share one span layout "
                "(the same spans and links; only their areas may differ)"
            )
        if np.shape(dist) != (n,):
            raise VoxNavError(
                f"dist has shape {np.shape(dist)}; expected ({n},), one per compact span"
            )

    def alone() -> list[tuple[np.ndarray, int]]:
        return [
            build_regions(chf, dist, m, min_area, merge_area, ctx=ctx)
            for chf, dist, m, ctx in zip(chfs, dists, max_distances, ctxs, strict=True)
        ]

    if k == 1 or k * n > TOGETHER_MAX_SPANS:
        return alone()
    nbx = _neighbors_with_sentinel(chfs[0])
    areas = [np.asarray(chf.area, dtype=np.uint8) for chf in chfs]
    starts = [(int(m) + 1) & ~1 for m in max_distances]
    top = max(starts)
    # Fields in the union by their last level (top - start) ascending: the fields still
    # running at a level are a prefix of the union.
    order = sorted(range(k), key=lambda i: top - starts[i])
    total = k * n
    union_nbx = np.empty((total + 1, 4), dtype=np.int32 if 4 * (total + 1) < 2**31 else np.int64)
    union_nbx[total] = total
    union_dist = np.empty(total, dtype=np.int64)
    linked = nbx[:n] != n
    for place, i in enumerate(order):
        block = slice(place * n, (place + 1) * n)
        np.copyto(union_nbx[block], total)
        np.add(nbx[:n], place * n, out=union_nbx[block], where=linked, casting="unsafe")
        np.add(np.asarray(dists[i], dtype=np.int64), top - starts[i], out=union_dist[block])
    g = _Graph.of_links(np.concatenate([areas[i] for i in order]), union_nbx)
    del union_nbx
    reg = np.zeros(total + 1, dtype=np.int32)
    ends = [((place + 1) * n, top - starts[i]) for place, i in enumerate(order)]
    try:
        rid = _watershed(g, union_dist, max(max_distances), reg, 1, ends=ends)
    except _OutOfUnionIds:
        return alone()
    del g, union_dist
    # Each field's ids in the order they were handed out, renumbered from 1.
    owner = np.full(rid, -1, dtype=np.int64)
    spans = np.flatnonzero(reg[:total] > 0)  # no border strips here: every id is a region
    owner[reg[spans]] = spans // n
    out: list[tuple[np.ndarray, int]] = [(np.zeros(0, np.uint16), 0)] * k
    for place, i in enumerate(order):
        ids = np.flatnonzero(owner == place)
        renumber = np.zeros(rid, dtype=np.int32)
        renumber[ids] = np.arange(1, ids.shape[0] + 1, dtype=np.int32)
        field_reg = np.zeros(n + 1, dtype=np.int32)
        field_reg[:n] = renumber.take(reg[place * n : (place + 1) * n])
        links = _Links(n, nbx, areas[i])
        out[i] = _merged_regions(
            chfs[i], links, field_reg, ids.shape[0] + 1, min_area, merge_area, ctxs[i]
        )
    return out


class _LevelBands:
    """The watershed's free spans by band (flood distance >> 1: a level's spans), bands from
    the top down, spans in span order within a band; made once, when the watershed begins.

    A band below the current level's is untouched until its level comes: floods at level L
    take spans of distance >= L - 2 only, and the expansion only the stacks' spans (band >=
    L / 2). So a sort's groups below its level are these bands as they were at the start,
    and only its first group (the bands above) needs the spans' regions.
    """

    def __init__(self, free: np.ndarray, dist_x: np.ndarray):
        band = dist_x.take(free) >> 1  # below 2**15: distances are uint16
        self.top = int(band.max(initial=0))
        depth = (self.top - band).astype(np.uint16)  # 0 for the top band
        self.spans = free.take(np.argsort(depth, kind="stable"))  # radix: 16-bit keys
        self.ends = np.cumsum(np.bincount(depth, minlength=self.top + 1)).tolist()

    def band(self, b: int) -> np.ndarray:
        """The spans of band ``b`` (int64, span order; empty outside the bands)."""
        if not 0 <= b <= self.top:
            return self.spans[:0]
        depth = self.top - b
        return self.spans[self.ends[depth - 1] if depth else 0 : self.ends[depth]]

    def from_top(self, b: int) -> np.ndarray:
        """The spans of every band >= ``b`` (int64, band by band from the top)."""
        if b > self.top:
            return self.spans[:0]
        return self.spans[: self.ends[self.top - max(b, 0)]]


def _watershed(g: _Graph, dist, max_distance: int, reg, first_id: int, progress=None, *, ends=None):
    """Recast's rcBuildRegions loop up to (not including) merging; returns the next free id.

    ``ends`` (`build_regions_together`'s union of fields): (end span, last level) per field,
    in the union's order, last levels ascending: a field's spans are in the stacks while
    ``level`` is at least its last level, where its expansion runs uncapped (its level 0).
    Raises `_OutOfUnionIds` rather than handing out the id `_UNION_ID_LIMIT`.
    """
    n = g.n
    walk = g.area != NULL_AREA
    dist_x = np.append(np.asarray(dist, dtype=np.int64), 0)
    # Flood distances (level steps of 2, below 2**16) of the spans in a region the expansion
    # grows from; _BIG for the others (no region, a tile border's, or an id past the border
    # flag, which Recast's expandRegions skips), so it needs not read their regions.
    sdist = np.full(n + 1, _BIG, dtype=np.int32)
    rid = first_id
    level = (int(max_distance) + 1) & ~1
    top = max(level, 1)
    sid = -1
    stacks = [np.zeros(0, dtype=np.int64)] * _NB_STACKS
    bands = _LevelBands(np.flatnonzero(walk & (reg[:n] == 0)), dist_x) if SORT_BY_BANDS else None
    groups: list[np.ndarray] = []
    while level > 0:
        level = level - 2 if level >= 2 else 0
        sid = (sid + 1) & (_NB_STACKS - 1)
        if sid == 0:
            # Recast's sortCellsByLevel: the free spans by level, each group in span order;
            # one group more than the stacks: the floods of the last stack's level enter the
            # spans of the level below it. Group k > 0 is band level / 2 - k, untouched since
            # the watershed began (see `_LevelBands`); group 0 holds the free spans of all
            # the bands above, which are the last sort's group 8 and the leftovers its stacks
            # passed down to the last one.
            half = level >> 1
            if bands is None:  # the literal sort: every free span again
                free = np.flatnonzero(walk & (reg[:n] == 0))
                s = np.maximum(half - (dist_x[free] >> 1), 0)
                groups = [free[s == k] for k in range(_NB_STACKS + 1)]
            else:
                if groups:
                    above = np.concatenate([stacks[-1], groups[-1]])
                    above = above[reg.take(above) == 0]
                else:
                    above = bands.from_top(half)
                groups = [np.sort(above)]
                groups += [bands.band(half - k) for k in range(1, _NB_STACKS + 1)]
            stacks = groups[:_NB_STACKS]
        else:
            prev = stacks[sid - 1]
            stacks[sid] = np.concatenate([stacks[sid], prev[reg[prev] == 0]])
        stack = stacks[sid]
        if ends is not None:
            running = [(end, last) for end, last in ends if last <= level]
            if running[-1][0] < n:
                stack = stacks[sid] = stack[stack < running[-1][0]]
        _expand(g, reg, sdist, stack[reg[stack] == 0], level, _EXPAND_ITERS)
        if ends is not None and level > 0:
            begin = 0
            for end, last in running:
                if last == level:  # this field's level 0: its expansion goes on to the end
                    rest = stack[(stack >= begin) & (stack < end)]
                    _expand(g, reg, sdist, rest[reg[rest] == 0], 0, _EXPAND_ITERS)
                begin = end

        lev = level - 2 if level >= 2 else 0
        # Every free span with dist >= lev: the stack (dist >= level) and the next group.
        pool = (stack, groups[sid + 1])
        pos = 0
        while pos < stack.shape[0]:
            rest = stack[pos:]
            idx = (reg[rest] == 0).nonzero()[0]
            if idx.shape[0] == 0:
                break
            idx = idx[~_touching(g, reg, rest[idx])]
            if idx.shape[0] == 0:
                break
            floods, stop = _flood_batch(g, reg, dist_x, rest[idx], lev, pool)
            if ends is not None and rid + len(floods) + 1 >= _UNION_ID_LIMIT:
                raise _OutOfUnionIds
            if len(floods):
                # Ids rid, rid + 1, ... in order.
                if rid + len(floods) - 1 >= 0xFFFF:
                    raise VoxNavError(
                        "watershed ran out of region ids (65535); raise cell_size or use tiles"
                    )
                ids = floods.place + rid
                reg[floods.spans] = ids
                sdist[floods.spans] = _flood_distance(ids)
                rid += len(floods)
            if stop is None:
                break
            j = int(idx[stop])
            if not len(floods):
                # The first region cannot be batched (a one-way link): flood it alone.
                _flood(g, reg, sdist, dist_x, int(rest[j]), lev, rid)
                if rid == 0xFFFF:
                    raise VoxNavError(
                        "watershed ran out of region ids (65535); raise cell_size or use tiles"
                    )
                rid += 1
                j += 1
            pos += j
        if progress is not None:
            progress(0.8 * (1.0 - level / top), "regions: watershed")
    free = np.nonzero(walk & (reg[:n] == 0))[0]
    _expand(g, reg, sdist, free, 0, _EXPAND_ITERS * 8)
    return rid


# --------------------------------------------------------------------------------------------
# Monotone and layer partitioning (row sweeps)


def _left_roots(g: _Graph, reg, spans_mask):
    """Root of every span along same-area, non-border left links (links stay in one row)."""
    n = g.n
    left = g.nsa[:, 0].copy()
    ok = spans_mask[left[:n]] & ((reg[left[:n]] & BORDER_REG) == 0) & (left[:n] != n)
    parent = np.arange(n + 1, dtype=np.int64)
    parent[:n] = np.where(ok & spans_mask[:n], left[:n], parent[:n])
    while True:
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            return parent
        parent = nxt


def _sweep(chf: CompactHeightfield, g: _Graph, reg, border_size: int, first_id: int):
    """Recast's monotone row sweep (rcBuildRegionsMonotone / rcBuildLayerRegions); returns id.

    One Python step per row (each row needs the previous row's final ids); inside a row the
    left-to-right scan is expressed with left-link roots and per-run event counts.
    """
    n = g.n
    w, h = chf.width, chf.height
    xs = np.asarray(chf.span_x, dtype=np.int64)
    ys = np.asarray(chf.span_y, dtype=np.int64)
    inside = (
        (g.area != NULL_AREA)
        & (xs >= border_size)
        & (xs < w - border_size)
        & (ys >= border_size)
        & (ys < h - border_size)
    )
    inside_x = np.append(inside, False)
    root = _left_roots(g, reg, inside_x)
    down = g.nsa[:n, 3]
    row_start = np.searchsorted(ys, np.arange(h + 1))
    nid = first_id
    for y in range(border_size, h - border_size):
        a, b = row_start[y], row_start[y + 1]
        spans = a + np.nonzero(inside[a:b])[0]
        if spans.shape[0] == 0:
            continue
        rts = root[spans]
        is_root = rts == spans
        roots = spans[is_root]
        chain = np.searchsorted(roots, rts)  # row-local id - 1, roots in span order
        nchain = roots.shape[0]
        bd = down[spans]
        nr = reg[bd]
        ev = (bd != n) & (nr != 0) & ((nr & BORDER_REG) == 0)
        ev_chain = chain[ev]
        ev_nr = nr[ev]
        order = np.argsort(ev_chain, kind="stable")
        ev_chain = ev_chain[order]
        ev_nr = ev_nr[order]
        count = np.bincount(ev_chain, minlength=nchain)
        first = np.cumsum(count) - count
        pos = np.arange(ev_chain.shape[0]) - first[ev_chain]
        has = count > 0
        f = np.zeros(nchain, dtype=np.int64)
        f[has] = ev_nr[first[has]]
        differs = ev_nr != f[ev_chain]
        k = count.copy()
        np.minimum.at(k, ev_chain[differs], pos[differs])
        diverged = k < count
        prev = np.bincount(f[has], weights=k[has], minlength=nid + 1).astype(np.int64)
        keep = has & ~diverged & (prev[f] == k)
        new = ~keep
        ids = np.where(keep, f, nid + np.cumsum(new) - 1)
        nid += int(new.sum())
        if nid > 0xFFFF:
            # Recast's unsigned short id would wrap to 0 and mix unrelated regions.
            raise VoxNavError(
                f"region partitioning ran out of region ids (65535) at grid row {y} of "
                f"{h}: raise cell_size or bake in tiles"
            )
        reg[spans] = ids[chain]
    return nid


def _warn_flagged_sweep_ids(name: str, reg, painted, nid: int, ctx) -> None:
    """Warn when the sweep numbered regions into the tile-border flag range (id >= 0x8000).

    Recast's ids are 16 bits with the top bit meaning "tile border": such regions are never
    merged or filtered, keep their flagged id and get no contour, so their spans have no
    polygons. This port keeps that behaviour (exact parity) and says so.
    """
    if ctx is None or nid <= BORDER_REG:
        return
    lost = int(np.count_nonzero((reg >= BORDER_REG) & ~painted))
    ctx.warn(
        f"{name} partitioning: the row sweep needed {nid - 1} region ids, more than 32767; "
        f"as in Recast, the {lost} spans of the regions numbered above 32767 are treated as "
        "tile border and get no navmesh polygons. Raise cell_size or bake in tiles."
    )


def _warn_column_overlaps(name: str, chf: CompactHeightfield, reg, ctx) -> None:
    """Warn when a region holds two spans of one column.

    Recast's row sweep joins every span whose left neighbour is in a run, and two spans of a
    column can share a left neighbour (a ramp ending beside the floor under it links down to
    that floor), so monotone and layer regions can cover a column twice. Recast keeps them
    silently; the contour of such a region is unreliable there, so the user is told.
    """
    if ctx is None:
        return
    a, b = _same_column_pairs(chf)
    r = reg[: chf.span_count]
    twice = (r[a] == r[b]) & (r[a] != 0) & ((r[a] & BORDER_REG) == 0)
    if not twice.any():
        return
    count = int(np.unique(r[a[twice]]).shape[0])
    ctx.warn(
        f"{name} partitioning: {count} region(s) hold two spans of one grid column, where a "
        "ramp or step ends beside the floor under it (Recast builds the same); the navmesh "
        "may have holes or overlaps there. Check those spots, or try the watershed "
        "partitioning."
    )


def build_regions_monotone(
    chf: CompactHeightfield,
    dist,
    max_distance: int,
    min_region_area: int,
    merge_region_area: int,
    border_size: int = 0,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> tuple[np.ndarray, int]:
    """Monotone partitioning: row sweeps, then Recast's merge and filter.

    [Recast: rcBuildRegionsMonotone]

    Rule: rows are swept bottom-up; in a row, runs of same-area spans linked leftwards share a
    row id; a run continues the region below it when the spans of the run that have a
    same-area region below all see the same region (counted up to the first different one)
    and no other run of the row samples that region; otherwise it starts a new region. Small
    regions are then removed and merged as in :func:`build_regions`. Two spans of one column
    that link left to the same span (a ramp ending beside the floor under it) join one run,
    so a region can cover a column twice; Recast keeps that silently, this port warns.

    Parameters:
        chf: compact heightfield (not modified).
        dist, max_distance: accepted for the call shape shared with :func:`build_regions`;
            not used (Recast's monotone partitioning needs no distance field).
        min_region_area: [Units: spans] [Limit: >= 0]
        merge_region_area: [Units: spans] [Limit: >= 0]
        border_size: tile border. [Units: cells] [Limit: >= 0]
        progress: optional callable ``progress(fraction: float, message: str)``.
        ctx: optional build context; receives a warning when the sweep numbers regions past
            32767 (Recast then treats them as tile border: no polygons) and when a region
            covers a column twice.

    Returns:
        (reg uint16 (n,), max_regions int).

    Raises:
        VoxNavError: the sweep needs more than 65535 region ids (Recast's 16-bit ids wrap).
    """
    min_area, merge_area, border_size = _check_region_params(
        min_region_area, merge_region_area, border_size
    )
    g = _Graph(chf)
    n = g.n
    reg = np.zeros(n + 1, dtype=np.int64)
    first = _paint_border(chf, reg, border_size, 1)
    painted = reg[:n] != 0
    nid = _sweep(chf, g, reg, border_size, first)
    _warn_flagged_sweep_ids("monotone", reg[:n], painted, nid, ctx)
    if progress is not None:
        progress(0.5, "regions: sweep")
    max_regions, _ = _merge_and_filter(chf, g, reg, nid, min_area, merge_area, ctx)
    _warn_column_overlaps("monotone", chf, reg, ctx)
    if progress is not None:
        progress(1.0, "regions: done")
    return reg[:n].astype(np.uint16), int(max_regions)


def _merge_layer_regions(chf, g: _Graph, reg, max_region_id: int, min_area: int, ctx=None):
    """Recast's mergeAndFilterLayerRegions; rewrites ``reg`` in place, returns the max id."""
    n = g.n
    nreg = max_region_id + 1
    regs = [_Region(i) for i in range(nreg)]
    r_ = reg[:n]
    valid = (r_ > 0) & (r_ < nreg)
    idx = np.nonzero(valid)[0]
    counts = np.bincount(r_[idx], minlength=nreg)
    y = np.asarray(chf.y, dtype=np.int64)
    ymin = np.full(nreg, 0xFFFF, dtype=np.int64)
    ymax = np.zeros(nreg, dtype=np.int64)
    np.minimum.at(ymin, r_[idx], y[idx])
    np.maximum.at(ymax, r_[idx], y[idx])
    last_area = np.zeros(nreg, dtype=np.int64)
    # Recast keeps the area of the region's last span; a sweep region has one area (runs link
    # same-area spans only), so any span's area is that one.
    last_area[r_[idx]] = g.area[idx]
    # Connections in discovery order (span order, then direction), any area.
    nb = rows_of(g.nbx, idx)
    rn = reg[nb]
    ok = (nb != n) & (rn > 0) & (rn < nreg) & (rn != r_[idx][:, None])
    border = np.zeros(nreg, dtype=bool)
    bmask = (nb != n) & ((rn & BORDER_REG) != 0)
    border[r_[idx][bmask.any(axis=1)]] = True
    src = np.repeat(r_[idx], 4).reshape(-1, 4)[ok]
    dst = rn[ok]
    if src.shape[0]:
        key = src * (1 << 20) + dst
        _, first = np.unique(key, return_index=True)
        first.sort()
        for a, b in zip(src[first].tolist(), dst[first].tolist(), strict=True):
            regs[a].connections.append(b)

    # Floors: distinct regions sharing a column.
    def distinct_valid(ra, rb):
        return (ra > 0) & (ra < nreg) & (rb > 0) & (rb < nreg) & (ra != rb)

    _add_floors(regs, chf, r_, distinct_valid, ctx)

    span_count = counts.astype(np.int64).tolist()
    area_l = last_area.tolist()
    ymin_l, ymax_l = ymin.tolist(), ymax.tolist()
    border_l = border.tolist()
    ids = [0] * nreg
    layer = 1
    for i in range(1, nreg):
        if ids[i] != 0:
            continue
        ids[i] = layer
        root = regs[i]
        queue = [i]
        qi = 0
        while qi < len(queue):
            cur = queue[qi]
            qi += 1
            for nei in regs[cur].connections:
                if ids[nei] != 0 or area_l[cur] != area_l[nei] or nei in root.floors:
                    continue
                queue.append(nei)
                ids[nei] = layer
                root.floors |= regs[nei].floors
                ymin_l[i] = min(ymin_l[i], ymin_l[nei])
                ymax_l[i] = max(ymax_l[i], ymax_l[nei])
                span_count[i] += span_count[nei]
                span_count[nei] = 0
                border_l[i] = border_l[i] or border_l[nei]
        layer += 1
    # Recast zeroes, for each small root in turn, every region holding the root's layer id;
    # ids only ever become 0 there, so that is one pass over the set of those layer ids.
    dead = {ids[i] for i in range(nreg) if 0 < span_count[i] < min_area and not border_l[i]}
    ids = [0 if v in dead else v for v in ids]
    for i, v in enumerate(ids):
        regs[i].id = v
    return _compress(regs, reg, n)


def build_regions_layers(
    chf: CompactHeightfield,
    dist,
    max_distance: int,
    min_region_area: int,
    merge_region_area: int = 0,
    border_size: int = 0,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> tuple[np.ndarray, int]:
    """Layer partitioning: monotone row sweeps merged into non-overlapping 2D layers.

    [Recast: rcBuildLayerRegions]

    Rule: the monotone sweep of :func:`build_regions_monotone`, then regions are grouped
    breadth-first from the lowest id: a neighbour region of the same area joins the group
    unless it shares a column with a region already in it. Groups smaller than
    ``min_region_area`` spans that do not touch the tile border are removed; ids are
    renumbered 1..max_regions in group order. As in Recast, each of the 4 tile border strips
    (``border_size > 0``) also takes one of those ids, which no span carries.

    Parameters:
        chf: compact heightfield (not modified).
        dist, max_distance, merge_region_area: accepted for the call shape shared with
            :func:`build_regions`; not used (Recast's layer partitioning needs no distance
            field and has no merge step).
        min_region_area: [Units: spans] [Limit: >= 0]
        border_size: tile border. [Units: cells] [Limit: >= 0]
        progress: optional callable ``progress(fraction: float, message: str)``.
        ctx: optional build context; receives a warning when the sweep numbers regions past
            32767 (Recast then treats them as tile border: no polygons) and when a region
            covers a column twice.

    Returns:
        (reg uint16 (n,), max_regions int).

    Raises:
        VoxNavError: the sweep needs more than 65535 region ids (Recast's 16-bit ids wrap).
    """
    min_area, _, border_size = _check_region_params(min_region_area, merge_region_area, border_size)
    g = _Graph(chf)
    n = g.n
    reg = np.zeros(n + 1, dtype=np.int64)
    first = _paint_border(chf, reg, border_size, 1)
    painted = reg[:n] != 0
    nid = _sweep(chf, g, reg, border_size, first)
    _warn_flagged_sweep_ids("layers", reg[:n], painted, nid, ctx)
    if progress is not None:
        progress(0.5, "regions: sweep")
    max_regions = _merge_layer_regions(chf, g, reg, nid, min_area, ctx)
    _warn_column_overlaps("layers", chf, reg, ctx)
    if progress is not None:
        progress(1.0, "regions: done")
    return reg[:n].astype(np.uint16), int(max_regions)
