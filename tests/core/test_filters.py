"""The three filters on tiny hand-built heightfields (in the spirit of Tests_RecastFilter.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from core.filters import (
    filter_ledge_spans,
    filter_low_hanging_obstacles,
    filter_walkable_low_height_spans,
)
from core.heightfield import Heightfield


def make_hf(width, height, columns):
    """columns: {(ix, iy): [(smin, smax, area), ...]} bottom-up."""
    counts = np.zeros(width * height, dtype=np.int64)
    smin, smax, area = [], [], []
    for c in range(width * height):
        col = columns.get((c % width, c // width), [])
        counts[c] = len(col)
        for s in col:
            smin.append(s[0]), smax.append(s[1]), area.append(s[2])
    col_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    z = np.zeros(3, np.float32)
    return Heightfield(
        width, height, z, z + 1, np.float32(1), np.float32(1), col_start,
        np.array(smin, np.uint16), np.array(smax, np.uint16), np.array(area, np.uint8),
    )  # fmt: skip


def test_low_hanging_span_above_walkable_becomes_walkable():
    hf = make_hf(1, 1, {(0, 0): [(0, 1, 63), (2, 4, 0)]})
    assert filter_low_hanging_obstacles(hf, 3).tolist() == [63, 63]
    assert filter_low_hanging_obstacles(hf, 2).tolist() == [63, 0]


def test_low_hanging_does_not_chain():
    hf = make_hf(1, 1, {(0, 0): [(0, 1, 63), (2, 3, 0), (4, 5, 0)]})
    assert filter_low_hanging_obstacles(hf, 5).tolist() == [63, 63, 0]


def test_ledge_at_grid_edge_is_removed():
    hf = make_hf(1, 1, {(0, 0): [(0, 1, 63)]})
    assert filter_ledge_spans(hf, 2, 1).tolist() == [0]


def test_flat_floor_keeps_interior_and_loses_border():
    cols = {(x, y): [(0, 1, 63)] for x in range(3) for y in range(3)}
    hf = make_hf(3, 3, cols)
    area = filter_ledge_spans(hf, 2, 1).reshape(3, 3)
    assert area[1, 1] == 63 and area.sum() == 63


def test_ledge_next_to_a_drop():
    cols = {(x, y): [(0, 5, 63)] for x in range(3) for y in range(3)}
    cols[(2, 1)] = [(0, 1, 63)]  # a hole 4 cells deep east of the centre
    hf = make_hf(3, 3, cols)
    assert filter_ledge_spans(hf, 2, 3).reshape(3, 3)[1, 1] == 0
    cols[(2, 1)] = [(0, 3, 63)]  # a step of 2, within climb
    assert filter_ledge_spans(make_hf(3, 3, cols), 2, 3).reshape(3, 3)[1, 1] == 63


def test_ledge_sees_a_drop_past_an_uncounted_neighbour_span():
    """The neighbour's first span (floor 7) is too close under the next one to count; its
    second (floor 9, open above) counts and is a drop from floor 10 with climb 0. The filter
    stops walking a neighbour column only when a floor reaches this span's ceiling minus the
    agent height (10 here), not earlier."""
    cols = {(x, y): [(0, 10, 63), (14, 16, 0)] for x in range(3) for y in range(3)}
    cols[(2, 1)] = [(0, 7, 63), (8, 9, 63)]
    area = filter_ledge_spans(make_hf(3, 3, cols), 4, 0)
    assert area[2 * (1 * 3 + 1)] == 0  # the centre column's floor span
    cols[(2, 1)] = [(0, 7, 63), (8, 10, 63)]  # level with it instead: no drop
    area = filter_ledge_spans(make_hf(3, 3, cols), 4, 0)
    assert area[2 * (1 * 3 + 1)] == 63


def test_low_height_span_under_a_ceiling():
    hf = make_hf(1, 1, {(0, 0): [(0, 1, 63), (3, 4, 63)]})
    assert filter_walkable_low_height_spans(hf, 3).tolist() == [0, 63]
    assert filter_walkable_low_height_spans(hf, 2).tolist() == [63, 63]


# ------------------------------------------------------------------------------------------
# The ledge filter against a literal port of Recast's rcFilterLedgeSpans on random fields

#: Recast's direction offsets (rcGetDirOffsetX / rcGetDirOffsetY).
_DIRS = ((-1, 0), (0, 1), (1, 0), (0, -1))


def _slow_ledges(hf: Heightfield, walkable_height: int, walkable_climb: int) -> np.ndarray:
    """rcFilterLedgeSpans span by span: the new area array (the old one is read throughout)."""
    top_of_grid = 0xFFFF
    area = hf.area.copy()

    def column(x, y):
        c = x + y * hf.width
        return range(int(hf.col_start[c]), int(hf.col_start[c + 1]))

    def ceiling(spans, k):
        return int(hf.smin[spans[k + 1]]) if k + 1 < len(spans) else top_of_grid

    for y in range(hf.height):
        for x in range(hf.width):
            spans = list(column(x, y))
            for k, s in enumerate(spans):
                if hf.area[s] == 0:
                    continue
                bottom, top = int(hf.smax[s]), ceiling(spans, k)
                lowest = top_of_grid  # the deepest drop to a neighbour floor with clearance
                reach_min = reach_max = bottom  # the neighbour floors within a climb
                for dx, dy in _DIRS:
                    nx, ny = x + dx, y + dy
                    if not (0 <= nx < hf.width and 0 <= ny < hf.height):
                        lowest = min(lowest, -walkable_climb - bottom)
                        continue
                    nspans = list(column(nx, ny))
                    # The open gap below the neighbour column's first span.
                    first_top = int(hf.smin[nspans[0]]) if nspans else top_of_grid
                    if min(top, first_top) - max(bottom, -walkable_climb) >= walkable_height:
                        lowest = min(lowest, -walkable_climb - bottom)
                    for j, ns in enumerate(nspans):
                        nbottom, ntop = int(hf.smax[ns]), ceiling(nspans, j)
                        if min(top, ntop) - max(bottom, nbottom) >= walkable_height:
                            lowest = min(lowest, nbottom - bottom)
                            if abs(nbottom - bottom) <= walkable_climb:
                                reach_min = min(reach_min, nbottom)
                                reach_max = max(reach_max, nbottom)
                if lowest < -walkable_climb or reach_max - reach_min > walkable_climb:
                    area[s] = 0
    return area


def _random_hf(rng, width, height, base=0, step=1):
    columns = {}
    for y in range(height):
        for x in range(width):
            spans, floor = [], base + int(rng.integers(0, 6)) * step
            for _ in range(int(rng.integers(0, 5))):
                smin = floor + int(rng.integers(0, 8)) * step
                smax = smin + int(rng.integers(1, 4)) * step
                spans.append((smin, smax, int(rng.choice([0, 63, 63, 63, 5]))))
                floor = smax + 1
            columns[(x, y)] = spans
    return make_hf(width, height, columns)


@pytest.mark.parametrize("whole_from", [0.0, 0.4, 1.0], ids=["whole", "mixed", "listed"])
def test_ledge_filter_matches_the_literal_port_on_random_fields(whole_from, monkeypatch):
    """Each round over whole arrays, over the list of the spans still looking, or both."""
    from core import filters

    monkeypatch.setattr(filters, "LEDGE_WHOLE_ROUNDS_FROM", whole_from)
    # Empty columns, stacked spans with little room between them and climbs up to the
    # spans' own steps, on grids down to one cell.
    rng = np.random.default_rng(7)
    for _ in range(200):
        hf = _random_hf(rng, int(rng.integers(1, 20)), int(rng.integers(1, 20)))
        walkable_height, walkable_climb = int(rng.integers(1, 10)), int(rng.integers(0, 9))
        got = filter_ledge_spans(hf, walkable_height, walkable_climb)
        np.testing.assert_array_equal(got, _slow_ledges(hf, walkable_height, walkable_climb))


@pytest.mark.parametrize(
    ("base", "step", "height_range", "climb_range"),
    [
        (7000, 40, (1, 400), (0, 300)),  # tall spans up to Recast's 8191: int16 heights
        (0, 1, (16_000, 70_000), (0, 40_000)),  # agents beyond int16: int32 heights
        (0, 1000, (1, 3000), (16_000, 20_000)),  # a climb beyond the narrow limit
    ],
    ids=["tall-spans", "huge-agent", "huge-climb"],
)
def test_ledge_filter_matches_the_literal_port_at_the_height_limits(
    base, step, height_range, climb_range
):
    """The filter reads heights as int16 only where nothing can leave that range, with an
    open ceiling of 0x7FFF; agent heights or climbs where that would change a test, as the
    open ceiling of 0xFFFF does, go through int32."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        hf = _random_hf(rng, int(rng.integers(1, 12)), int(rng.integers(1, 12)), base, step)
        if hf.span_count and int(hf.smax.max()) > 8191:
            continue
        walkable_height = int(rng.integers(*height_range))
        walkable_climb = int(rng.integers(*climb_range))
        got = filter_ledge_spans(hf, walkable_height, walkable_climb)
        np.testing.assert_array_equal(got, _slow_ledges(hf, walkable_height, walkable_climb))


def test_a_filtered_heightfield_shares_the_layout_and_leaves_the_input_as_it_was():
    # The pipeline's filters chain through `with_area`: the span layout is shared (never
    # written), the area is the filter's own array, and the heightfield filtered keeps its own.
    hf = make_hf(2, 1, {(0, 0): [(0, 1, 63), (2, 4, 0)], (1, 0): [(0, 2, 63)]})
    before = hf.area.copy()
    lowhang = filter_low_hanging_obstacles(hf, 3)
    out = hf.with_area(lowhang)
    assert out.area is not hf.area and out.area.tolist() == lowhang.tolist()
    assert out.col_start is hf.col_start and out.smin is hf.smin and out.smax is hf.smax
    assert hf.area.tolist() == before.tolist()
    with pytest.raises(ValueError, match="an area per span"):
        hf.with_area(np.zeros(2, np.uint8))
