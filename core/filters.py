"""The three solid-heightfield filters, in Recast's order (RecastFilter.cpp).

Each takes a `Heightfield` and returns a new uint8 area array (n,); geometry never changes.
Heights, climb and agent height are in cell heights [Units: ch]. A column's top span has an
open ceiling of 0xFFFF.
"""

from __future__ import annotations

import numpy as np

from . import threads
from .arrays import select
from .config import NULL_AREA, SPAN_MAX_HEIGHT
from .context import BuildContext
from .heightfield import Heightfield
from .rasterize import WORKERS

#: Ceiling of the open sky above a column's top span. [Units: ch]
OPEN_CEILING = 0xFFFF
#: The ledge filter's heights are int16 when spans stay within `SPAN_MAX_HEIGHT` (8191) and
#: the agent's height and climb within `_NARROW_LIMIT`: half the memory traffic of int32 and
#: twice the values per vector instruction (the filter, medians of 30: nav_test 4.7 -> 4.0
#: ms, undulating 4.3 -> 3.7, dungeon 1.9 -> 1.6). The open ceiling is then
#: `_OPEN_CEILING_16`: a clearance under it is still at least 32767 - 8191, above any such
#: height, so every test reads as with `OPEN_CEILING`, and no difference leaves int16.
_OPEN_CEILING_16 = np.int16(0x7FFF)
_NARROW_LIMIT = 0x3FFF
#: Above every span floor: a neighbour floor that does not count, for a minimum (int16 with
#: narrow heights, int32 otherwise).
_ABOVE_ANY_FLOOR_16 = np.int16(SPAN_MAX_HEIGHT + 1)
_ABOVE_ANY_FLOOR_32 = np.int32(1 << 20)
#: Walkable spans from which the ledge filter splits its work over two threads.
PARALLEL_SPANS = 200_000
#: Walkable spans the ledge filter checks together.
LEDGE_BLOCK = 1 << 16
#: Share of a block's spans still looking at a neighbour column's j-th span above which that
#: round runs over whole arrays (masked) rather than through the list of those spans.
LEDGE_WHOLE_ROUNDS_FROM = 0.4


def _ceilings(hf: Heightfield, dtype=np.int32, open_ceiling=OPEN_CEILING) -> np.ndarray:
    """(n,) of ``dtype``: the bottom of the next span up in the column, or ``open_ceiling``
    for the top span (int32 and 0xFFFF by default; the ledge filter's narrow heights take
    int16 and `_OPEN_CEILING_16`)."""
    n = hf.span_count
    ceiling = np.full(n, open_ceiling, dtype=dtype)
    if n:
        is_top = np.zeros(n, dtype=bool)
        # Occupied columns by comparison: no grid-sized integer temporary.
        is_top[hf.col_start[1:][hf.col_start[1:] > hf.col_start[:-1]] - 1] = True
        ceiling[:-1] = select(is_top[:-1], open_ceiling, hf.smin[1:].astype(dtype))
    return ceiling


def filter_low_hanging_obstacles(
    hf: Heightfield, walkable_climb: int, *, ctx: BuildContext | None = None
) -> np.ndarray:
    """Let a blocked span become walkable when the span right below it was walkable.

    Rule: a span with area 0 whose lower neighbour in the column had a non-null area in the
    original state, and whose top is at most ``walkable_climb`` above that span's top, takes
    that span's area. It does not chain: the lower span's *original* state counts.
    walkable_climb [Units: ch] [Limit: >= 0]. Returns uint8 (n,).
    """
    area = hf.area.copy()
    if hf.span_count < 2:
        return area
    first_in_column = np.zeros(hf.span_count, dtype=bool)
    first_in_column[hf.col_start[:-1][hf.col_start[1:] > hf.col_start[:-1]]] = True
    below_area = hf.area[:-1]
    rises = hf.smax[1:].astype(np.int32) - hf.smax[:-1].astype(np.int32)
    take = (
        ~first_in_column[1:]
        & (hf.area[1:] == NULL_AREA)
        & (below_area != NULL_AREA)
        & (rises <= walkable_climb)
    )
    area[1:][take] = below_area[take]
    return area


def filter_ledge_spans(
    hf: Heightfield,
    walkable_height: int,
    walkable_climb: int,
    *,
    ctx: BuildContext | None = None,
) -> np.ndarray:
    """Mark walkable spans next to a drop deeper than ``walkable_climb`` as blocked.

    For each non-null span and each of the 4 neighbour columns, neighbour spans (whatever their
    area) with clearance min(ceilings) - max(floors) >= walkable_height count. The span is a
    ledge when a counted neighbour floor is more than ``walkable_climb`` below it, when the
    neighbour column is off the grid, when the gap below the neighbour's first span is open
    enough to fall into, or when the reachable neighbour floors differ by more than the climb.
    walkable_height, walkable_climb [Units: ch]. Returns uint8 (n,).
    """
    area = hf.area.copy()
    candidates = np.nonzero(hf.area != NULL_AREA)[0]
    if candidates.shape[0] == 0:
        return area
    narrow = (
        max(walkable_height, walkable_climb) <= _NARROW_LIMIT
        and int(hf.smax.max()) <= SPAN_MAX_HEIGHT
    )
    if narrow:
        # uint16 heights up to SPAN_MAX_HEIGHT have the same bits as int16.
        heights = hf.smin.view(np.int16), hf.smax.view(np.int16)
        ceiling_all = _ceilings(hf, np.int16, _OPEN_CEILING_16)
    else:
        heights = hf.smin.astype(np.int32), hf.smax.astype(np.int32)
        ceiling_all = _ceilings(hf)

    def ledges(subset):
        return _ledges(hf, subset, heights, ceiling_all, walkable_height, walkable_climb)

    # Blocks keep the temporaries cache-sized; NumPy releases the GIL in its loops, so large
    # heightfields run their blocks on two cores.
    blocks = [candidates[i : i + LEDGE_BLOCK] for i in range(0, candidates.shape[0], LEDGE_BLOCK)]
    parallel = candidates.shape[0] >= PARALLEL_SPANS
    ledge = np.concatenate(threads.map_pieces(ledges, blocks, WORKERS if parallel else 1))
    area[candidates[ledge]] = NULL_AREA
    return area


def _ledges(hf, candidates, heights, ceiling_all, walkable_height, walkable_climb):
    """bool per candidate span (ascending): is it a ledge (see `filter_ledge_spans`).
    ``heights``: the spans' bottoms and tops, and ``ceiling_all`` their ceilings, all int16 or
    all int32 (the open ceiling and the floor above any span's follow that type)."""
    width, height = hf.width, hf.height
    # Columns of the block's own span range only: no per-span or per-column array of the
    # whole heightfield is made (on large grids that memory costs more to touch than to use).
    first, last = int(candidates[0]), int(candidates[-1])
    c0 = int(np.searchsorted(hf.col_start, first, side="right")) - 1
    c1 = int(np.searchsorted(hf.col_start, last, side="right")) - 1
    bounds = np.clip(hf.col_start[c0 : c1 + 2], first, last + 1)
    local = np.repeat(np.arange(c0, c1 + 1, dtype=np.int64), np.diff(bounds))
    col = local.take(candidates - first)
    cx, cy = col % width, col // width
    smin, smax = heights
    narrow = ceiling_all.dtype == np.int16
    open_ceiling = _OPEN_CEILING_16 if narrow else np.int32(OPEN_CEILING)
    above_any = _ABOVE_ANY_FLOOR_16 if narrow else _ABOVE_ANY_FLOOR_32
    floor = smax.take(candidates)
    ceiling = ceiling_all.take(candidates)
    # A neighbour floor at or above this is too close under the span's ceiling to count.
    too_high = ceiling - walkable_height
    n = candidates.shape[0]
    drop = np.zeros(n, dtype=bool)
    lowest_ok = floor.copy()
    highest_ok = floor.copy()
    for dx, dy in ((-1, 0), (0, 1), (1, 0), (0, -1)):
        # One coordinate moves: the neighbour is off the grid on that side's edge only.
        if dx:
            off_grid = cx == (0 if dx < 0 else width - 1)
        else:
            off_grid = cy == (0 if dy < 0 else height - 1)
        drop |= off_grid
        ncol = col + (dx + dy * width)
        ncol[off_grid] = 0
        # Takes: a third faster than fancy indexing on these arrays.
        nstart = hf.col_start.take(ncol)
        ncount = hf.col_start.take(ncol + 1)
        ncount -= nstart
        ncount[off_grid] = 0
        has = ncount > 0
        first = np.minimum(nstart, hf.span_count - 1)
        first_bottom = select(has, smin.take(first), open_ceiling)
        drop |= ~off_grid & (np.minimum(ceiling, first_bottom) - floor >= walkable_height)
        del first_bottom
        # The j-th span of every neighbour column holding more than j, j = 0, 1, ...: over
        # whole arrays while most candidates still look (on layered levels most neighbour
        # columns hold two spans or more), then through the list of those that do. Floors
        # rise up a column: once one is within walkable_height of this span's ceiling, no
        # span further up can count. A column with fewer spans reads some other span in a
        # whole-array round, which ``looking`` masks out.
        looking = has
        j = 0
        while np.count_nonzero(looking) > LEDGE_WHOLE_ROUNDS_FROM * n:
            neighbour = np.minimum(nstart + j, hf.span_count - 1)
            n_floor = smax.take(neighbour)
            clear = np.minimum(ceiling, ceiling_all.take(neighbour))
            clear -= np.maximum(floor, n_floor)
            clear = clear >= walkable_height
            clear &= looking
            diff = n_floor - floor
            drop |= clear & (diff < -walkable_climb)
            step = clear & (np.abs(diff) <= walkable_climb)
            # The step floors into the running extremes without a mask (a masked ufunc or
            # np.where branches per element, several times slower where the mask changes
            # often; here the stage gained 1-11 %): the other floors count as 0 for the
            # highest (which is >= floor >= 0) and as above any height for the lowest.
            stepped = np.multiply(n_floor, step)
            np.maximum(highest_ok, stepped, out=highest_ok)
            stepped += np.multiply(~step, above_any)
            np.minimum(lowest_ok, stepped, out=lowest_ok)
            j += 1
            looking &= ncount > j
            looking &= n_floor < too_high
        live = looking.nonzero()[0]
        while live.shape[0]:
            neighbour = nstart.take(live) + j
            n_floor = smax.take(neighbour)
            p_floor = floor.take(live)
            clear = np.minimum(ceiling.take(live), ceiling_all.take(neighbour))
            clear -= np.maximum(p_floor, n_floor)
            clear = clear >= walkable_height
            diff = n_floor - p_floor
            drop[live.take((clear & (diff < -walkable_climb)).nonzero()[0])] = True
            # Selections by nonzero and takes: a boolean selection of these lengths (tens
            # of thousands, the mask changing from item to item) costs several times as much.
            step = (clear & (np.abs(diff) <= walkable_climb)).nonzero()[0]
            at = live.take(step)
            stepped = n_floor.take(step)
            lowest_ok[at] = np.minimum(lowest_ok.take(at), stepped)
            highest_ok[at] = np.maximum(highest_ok.take(at), stepped)
            j += 1
            more = (ncount.take(live) > j) & (n_floor < too_high.take(live))
            live = live.take(more.nonzero()[0])
    return drop | (highest_ok - lowest_ok > walkable_climb)


def filter_walkable_low_height_spans(
    hf: Heightfield, walkable_height: int, *, ctx: BuildContext | None = None
) -> np.ndarray:
    """Mark spans with less than ``walkable_height`` of open space above them as blocked.

    Rule: ceiling - floor < walkable_height, with the top span's ceiling 0xFFFF.
    walkable_height [Units: ch]. Returns uint8 (n,).
    """
    area = hf.area.copy()
    low = _ceilings(hf) - hf.smax.astype(np.int32) < walkable_height
    area[low] = NULL_AREA
    return area
