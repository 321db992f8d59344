"""Marking, clipping and span merging: hand-built cases and the slow oracle on random soups."""

from __future__ import annotations

import numpy as np
import pytest

from core import filters, rasterize
from core.config import NavConfig, grid_size
from core.rasterize import (
    mark_walkable_triangles,
    merge_fragments,
    rasterize_fragments,
    rasterize_triangles,
)

from . import oracle

F32 = np.float32


def raster(verts, tris, areas=None, bmin=(0, 0, 0), bmax=(1, 1, 1), cs=1.0, ch=1.0, climb=1):
    verts = np.asarray(verts, dtype=F32)
    tris = np.asarray(tris, dtype=np.int32)
    areas = np.full(len(tris), 63, np.uint8) if areas is None else np.asarray(areas, np.uint8)
    bmin, bmax = np.asarray(bmin, F32), np.asarray(bmax, F32)
    w, h = grid_size(bmin, bmax, cs)
    return rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)


def spans(hf):
    ix, iy = hf.span_cells()
    return sorted(
        zip(
            ix.tolist(),
            iy.tolist(),
            hf.smin.tolist(),
            hf.smax.tolist(),
            hf.area.tolist(),
            strict=True,
        )  # fmt: skip
    )


FLOOR = [[0, 0, 0.5], [1, 0, 0.5], [1, 1, 0.5]]  # counter-clockwise seen from +Z


def test_floor_triangle_is_walkable_and_one_span():
    areas = mark_walkable_triangles(np.array(FLOOR, F32), np.array([[0, 1, 2]]), 45.0)
    assert areas.tolist() == [63]
    hf = raster(FLOOR, [[0, 1, 2]], areas)
    assert spans(hf) == [(0, 0, 0, 1, 63)]


def test_vertical_triangle_is_not_walkable_but_rasterizes():
    wall = np.array([[0.2, 0.5, 0.0], [0.8, 0.5, 0.0], [0.5, 0.5, 3.0]], F32)
    areas = mark_walkable_triangles(wall, np.array([[0, 1, 2]]), 45.0)
    assert areas.tolist() == [0]
    hf = raster(wall, [[0, 1, 2]], areas, bmax=(1, 1, 3))
    assert spans(hf) == [(0, 0, 0, 3, 0)]


def test_degenerate_triangle_is_not_walkable():
    line = np.array([[0, 0, 0], [1, 1, 0], [2, 2, 0]], F32)
    assert mark_walkable_triangles(line, np.array([[0, 1, 2]]), 45.0).tolist() == [0]


def test_slope_limit_is_strict():
    # A 45 degree ramp: the up component equals cos(45) only approximately; 60 deg passes.
    ramp = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 1]], F32)
    assert mark_walkable_triangles(ramp, np.array([[0, 1, 2]]), 60.0).tolist() == [63]
    assert mark_walkable_triangles(ramp, np.array([[0, 1, 2]]), 30.0).tolist() == [0]


def test_triangle_outside_bounds_adds_nothing():
    tri = np.array([[5, 5, 0], [6, 5, 0], [6, 6, 0]], F32)
    hf = raster(tri, [[0, 1, 2]], bmax=(2, 2, 1))
    assert hf.span_count == 0


def test_triangle_exactly_on_cell_boundary_touches_both_cells():
    # The edge x = 1 lies on the cut line: the vertex on the line goes to both sides, but a
    # sliver of fewer than 3 vertices is skipped, so only the cell that holds the area gets it.
    tri = np.array([[0, 0, 0.5], [1, 0, 0.5], [1, 1, 0.5]], F32)
    hf = raster(tri, [[0, 1, 2]], bmax=(2, 1, 1))
    assert [s[:2] for s in spans(hf)] == [(0, 0)]


def test_span_above_span_stays_separate_and_touching_spans_merge():
    col_start, smin, smax, area = merge_fragments(
        1, 1, [0, 0, 0], [0, 0, 0], [0, 5, 2], [2, 7, 5], [63, 0, 0], merge_threshold=1
    )
    # [0,2) then [5,7) are apart; [2,5) touches both and merges all three.
    assert col_start.tolist() == [0, 1]
    assert (smin.tolist(), smax.tolist()) == ([0], [7])
    # The walkable floor's top (2) is more than 1 below the merged top (7): its area is lost.
    assert area.tolist() == [0]


def test_area_merge_depends_on_order_as_in_recast():
    # Wall first, then a floor fragment near the wall top: the floor's area survives.
    args = dict(merge_threshold=1)
    _, _, _, a1 = merge_fragments(1, 1, [0, 0], [0, 0], [0, 9], [10, 10], [0, 63], **args)
    assert a1.tolist() == [63]
    # Floor first at the bottom, then the wall: the low floor's area is dropped.
    _, _, _, a2 = merge_fragments(1, 1, [0, 0], [0, 0], [0, 0], [1, 10], [63, 0], **args)
    assert a2.tolist() == [0]


@pytest.mark.parametrize("seed", range(4))
def test_flagged_fragments_go_in_as_the_stable_sort_by_triangle_places_them(seed):
    """The walk's fragments (in triangle order) and a few others (any order, some of the same
    triangles): merged in place as a stable sort of all of them by triangle would order them."""
    from core import rasterize

    rng = np.random.default_rng(seed)

    def piece(n, tris, ordered):
        tri = rng.choice(tris, n)
        tri = np.sort(tri) if ordered else tri
        heights = rng.integers(0, 99, (2, n)).astype(np.uint16)
        return tri, rng.integers(0, 9, n), rng.integers(0, 9, n), heights[0], heights[1]

    main = piece(300, np.arange(40), True)
    extra = [piece(int(rng.integers(0, 30)), np.arange(45), False) for _ in range(2)]
    got = rasterize._in_triangle_order(main, extra)
    want = rasterize._sorted_by_triangle([main, *extra])
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_triangle_touching_the_grid_only_at_its_edge_adds_nothing(offset):
    """A triangle whose bounds meet the grid's only on its +x side (a tile's neighbour): it
    passes the bounds test but makes no cell. Far from the origin every triangle takes the
    polygon-by-polygon path, which then yields no fragments at all: no spans, no error."""
    off = F32(offset)
    bmin = np.array([off, -1, off], F32)
    bmax = np.array([off + F32(2), 1, off + F32(2)], F32)
    verts = np.array(
        [[bmax[0], 0, off + 1], [bmax[0] + 1, 0, off + 1], [bmax[0] + 1, 0, off + F32(1.5)]], F32
    )
    hf = rasterize_triangles(
        verts, np.array([[0, 1, 2]], np.int32), np.full(1, 63, np.uint8), bmin, bmax,
        F32(0.25), F32(0.2), 8, 8, 1,
    )  # fmt: skip
    assert hf.span_count == 0 and hf.col_start.tolist() == [0] * 65


def test_merge_refuses_a_fragment_whose_top_lies_below_its_bottom():
    # The merge's rounds rely on smax >= smin (the rasterizer's fragments have smax > smin).
    with pytest.raises(ValueError, match="smax lies below its smin"):
        merge_fragments(1, 1, [0, 0], [0, 0], [0, 5], [2, 4], [63, 0], merge_threshold=1)


def add_spans_one_by_one(width, height, ix, iy, smin, smax, area, climb):
    """The literal merge: Recast's addSpan per fragment, in order. Spans in column order."""
    columns: list[list] = [[] for _ in range(width * height)]
    for c, a, b, ar in zip((np.asarray(ix) + np.asarray(iy) * width).tolist(), np.asarray(smin)
                           .tolist(), np.asarray(smax).tolist(), np.asarray(area).tolist(),
                           strict=True):  # fmt: skip
        oracle.add_span(columns[c], a, b, ar, climb)
    return columns


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dense_from", [64, 3])
def test_span_merge_matches_recasts_add_span_on_dense_columns(seed, dense_from, monkeypatch):
    """Many fragments per column, often inside or just past the column's previous one, several
    area ids: the vectorized merge (contained fragments folded, rounds, slot widening, and with
    a low dense threshold the split of fragments that only raise an area) against addSpan one
    by one."""
    from core import rasterize

    monkeypatch.setattr(rasterize, "DENSE_COLUMN_FRAGMENTS", dense_from)
    monkeypatch.setattr(rasterize, "DENSE_UNITS_PER_FRAGMENT", 64 // dense_from)
    rng = np.random.default_rng(seed)
    width, height, n = 6, 5, 600
    ix = rng.integers(0, width, n)
    iy = rng.integers(0, height, n)
    smin = rng.integers(0, 400, n)
    smax = smin + rng.integers(1, 12, n)
    previous: dict[int, int] = {}
    for i, c in enumerate((ix + iy * width).tolist()):
        # Often inside (or equal to) the column's previous fragment: the folded case.
        if c in previous and rng.random() < 0.4:
            j = previous[c]
            smin[i] = smin[j] + rng.integers(-1, 2)
            smax[i] = max(smin[i] + 1, smax[j] + rng.integers(-1, 2))
        previous[c] = i
    # Odd seeds add an area id past Recast's 6 bits, which takes the wide payload.
    area = rng.choice(np.array([0, 1, 5, 63, 200][: 4 + seed % 2], np.uint8), n)
    for climb in (0, 1, 4):
        col_start, out_min, out_max, out_area = merge_fragments(
            width, height, ix, iy, smin, smax, area, merge_threshold=climb
        )
        columns: list[list] = [[] for _ in range(width * height)]
        for c, a, b, ar in zip((ix + iy * width).tolist(), smin.tolist(), smax.tolist(),
                               area.tolist(), strict=True):  # fmt: skip
            oracle.add_span(columns[c], a, b, ar, climb)
        expected = [tuple(s) for column in columns for s in column]
        got = list(zip(out_min.tolist(), out_max.tolist(), out_area.tolist(), strict=True))
        assert got == expected
        assert np.diff(col_start).tolist() == [len(column) for column in columns]


def test_heights_are_clamped_to_the_bounds():
    tri = np.array([[0, 0, -5], [1, 0, -5], [1, 1, 20]], F32)
    hf = raster(tri, [[0, 1, 2]], bmax=(1, 1, 4))
    assert hf.smin.tolist() == [0] and hf.smax.tolist() == [4]


def random_soup(rng, n_tris, extent=6.0):
    verts = rng.uniform(0, extent, size=(n_tris * 3, 3)).astype(F32)
    # Some vertices snapped exactly onto cell boundaries to exercise the on-line rules.
    snap = rng.random(verts.shape) < 0.2
    verts[snap] = np.round(verts[snap] / F32(0.5)) * F32(0.5)
    tris = np.arange(n_tris * 3, dtype=np.int32).reshape(-1, 3)
    return verts, tris


@pytest.mark.parametrize("seed", range(6))
def test_fast_rasterizer_matches_slow_oracle(seed):
    rng = np.random.default_rng(seed)
    verts, tris = random_soup(rng, 40)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    areas[rng.random(len(areas)) < 0.2] = 7  # a user area id
    bmin = np.array([0.5, 0.25, 0.0], F32)
    bmax = np.array([5.5, 5.0, 4.0], F32)  # partly outside the soup: clipping at the edges
    cs, ch, climb = 0.5, 0.25, 2
    w, h = grid_size(bmin, bmax, cs)
    columns, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags
    hf = rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    expected = [(i % w, i // w, *s) for i, c in enumerate(columns) for s in c]
    assert spans(hf) == sorted(expected)
    # and the filters, on the same heightfield
    stages = oracle.filters(columns, w, h, walkable_height=4, climb=climb)
    lowhang = filters.filter_low_hanging_obstacles(hf, climb)
    assert lowhang.tolist() == stages["lowhang"]
    ledge = filters.filter_ledge_spans(hf.copy(area=lowhang), 4, climb)
    assert ledge.tolist() == stages["ledge"]
    lowheight = filters.filter_walkable_low_height_spans(hf.copy(area=ledge), 4)
    assert lowheight.tolist() == stages["lowheight"]


@pytest.mark.parametrize("seed", range(8))
def test_edge_chains_match_slow_oracle_on_long_and_thin_triangles(seed):
    """Unsnapped soups of large, thin and vertical triangles crossing many rows and columns, so
    the per-edge crossing chains run for many rounds; bounds cut through the soup."""
    rng = np.random.default_rng(100 + seed)
    n_tris = 80
    centre = rng.uniform(-1.0, 9.0, size=(n_tris, 1, 3))
    spread = rng.uniform(0.05, 6.0, size=(n_tris, 1, 3)) * rng.uniform(-1, 1, size=(n_tris, 3, 3))
    verts = (centre + spread).reshape(-1, 3).astype(F32)
    walls = rng.random(n_tris) < 0.3  # vertical: one horizontal axis constant
    axis = rng.integers(0, 2, size=n_tris)
    for t in np.nonzero(walls)[0]:
        verts[3 * t : 3 * t + 3, axis[t]] = verts[3 * t, axis[t]]
    tris = np.arange(n_tris * 3, dtype=np.int32).reshape(-1, 3)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    bmin = np.array([0.3, 0.1, -2.0], F32)
    bmax = np.array([8.7, 7.9, 9.0], F32)
    cs, ch, climb = 0.3, 0.2, 3
    w, h = grid_size(bmin, bmax, cs)
    _, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert len(frags) > 1000
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags


def test_config_derives_recast_integers_in_float32():
    d = NavConfig(cell_height=0.1, agent_max_climb=0.9).derived()
    assert d.walkable_climb == 9  # float64 would give 8
    d = NavConfig().derived()
    assert (d.walkable_height, d.walkable_climb, d.walkable_radius, d.max_edge_len) == (
        10,
        4,
        2,
        40,
    )
    assert (d.min_region_area, d.merge_region_area) == (64, 400)
    assert d.detail_sample_dist == F32(0.3) * F32(6.0)


@pytest.mark.parametrize("blocks", [4096, 3])
def test_chunked_and_threaded_paths_give_the_same_spans(blocks, monkeypatch):
    """Tiny chunks force the threaded clipping, the threaded range-by-range span merge of the
    pieces (one column per block, or blocks of many columns) and the split ledge filter that
    large scenes take; they must give exactly the oracle's results."""
    from core import rasterize

    rng = np.random.default_rng(7)
    verts, tris = random_soup(rng, 60)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    bmin = np.array([0.5, 0.25, 0.0], F32)
    bmax = np.array([5.5, 5.0, 4.0], F32)
    cs, ch, climb = 0.5, 0.25, 2
    w, h = grid_size(bmin, bmax, cs)
    columns, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    monkeypatch.setattr(rasterize, "WORKERS", 2)
    monkeypatch.setattr(rasterize, "CHUNK_TRIANGLES", 5)
    monkeypatch.setattr(rasterize, "PARALLEL_CHUNK_TRIANGLES", 7)
    monkeypatch.setattr(rasterize, "CHUNK_FRAGMENTS", 16)
    monkeypatch.setattr(rasterize, "MERGE_BLOCKS", blocks)
    merged = []
    merge_sorted = rasterize._merge_sorted
    monkeypatch.setattr(rasterize, "_merge_sorted", lambda *a: merged.append(1) or merge_sorted(*a))
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags
    hf = rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    expected = [(i % w, i // w, *s) for i, c in enumerate(columns) for s in c]
    assert spans(hf) == sorted(expected)
    assert len(merged) > 2  # several column ranges, each from several pieces
    monkeypatch.setattr(filters, "WORKERS", 2)
    monkeypatch.setattr(filters, "PARALLEL_SPANS", 1)
    monkeypatch.setattr(filters, "LEDGE_BLOCK", 3)
    stages = oracle.filters(columns, w, h, walkable_height=4, climb=climb)
    lowhang = filters.filter_low_hanging_obstacles(hf, climb)
    ledge = filters.filter_ledge_spans(hf.copy(area=lowhang), 4, climb)
    assert ledge.tolist() == stages["ledge"]


def test_small_cells_far_from_the_origin_use_recasts_own_arithmetic():
    """Cells under about 2**14 float32 steps of the coordinates: the edge walk is not trusted
    there, the polygon-by-polygon path takes every triangle and still matches the oracle."""
    rng = np.random.default_rng(3)
    verts = (rng.uniform(0, 2, size=(30, 3)) + np.array([30000, 30000, 0])).astype(F32)
    tris = np.arange(30, dtype=np.int32).reshape(-1, 3)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    bmin, bmax, cs, ch = verts.min(axis=0), verts.max(axis=0), 0.05, 0.1
    w, h = grid_size(bmin, bmax, cs)
    _, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, 2)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert len(frags) > 1000
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags


def literal_spans(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb):
    """The literal path: every fragment in call order, merged one by one as addSpan does."""
    fragments = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    return merge_fragments(w, h, *fragments[1:], merge_threshold=climb)


def assert_fast_equals_literal(verts, tris, areas, bmin, bmax, cs, ch, climb):
    w, h = grid_size(bmin, bmax, cs)
    hf = rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    col_start, smin, smax, area = literal_spans(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    assert np.array_equal(hf.col_start, col_start)
    assert np.array_equal(hf.smin, smin)
    assert np.array_equal(hf.smax, smax)
    assert np.array_equal(hf.area, area)
    return hf


def assert_equals_oracle(verts, tris, areas, bmin, bmax, cs, ch, climb):
    """Fragments as the one-triangle-at-a-time oracle gives them, spans and areas as the
    literal merge and the oracle's columns. Returns the fast fragments."""
    w, h = grid_size(bmin, bmax, cs)
    columns, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags
    hf = assert_fast_equals_literal(verts, tris, areas, bmin, bmax, cs, ch, climb)
    expected = [(i % w, i // w, *s) for i, c in enumerate(columns) for s in c]
    assert spans(hf) == sorted(expected)
    return fast


@pytest.mark.parametrize("name", ["bridge", "dungeon", "house", "nav_test", "undulating"])
@pytest.mark.parametrize("recast_frame", [True, False])
def test_fast_rasterizer_equals_literal_merge_on_every_shared_mesh(name, recast_frame):
    """Undulating lies near 5000 wu, where the cells are too small for the edge walk and every
    triangle takes the polygon path; its cells must still reach the merge in triangle order."""
    from core.objio import read_obj
    from core.pipeline import grid_bounds

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(name), recast_frame=recast_frame)
    config = NavConfig()
    derived = config.derived()
    bmin, bmax = grid_bounds(verts, config)
    areas = mark_walkable_triangles(verts, tris, config.agent_max_slope)
    hf = assert_fast_equals_literal(
        verts, tris, areas, bmin, bmax, derived.cs, derived.ch, derived.walkable_climb
    )
    assert hf.span_count > 1000


@pytest.mark.parametrize("scene", ["dungeon", "grid-aligned"])
def test_small_chunks_and_kept_sets_groups_give_the_same_spans(scene, monkeypatch):
    """On one thread the triangles the edge walks flag in `KEPT_SETS_GROUP_CHUNKS` chunks go
    through the kept-sets path in one call and their cells back to their chunks: with small
    chunks (many of them, in groups of 4, 1 and 3) the spans equal those of one chunk. The
    grid-aligned soup (every vertex on a cut line) flags many triangles in every chunk."""
    from core import threads

    cs, ch, climb = F32(0.3), F32(0.2), 2
    if scene == "dungeon":
        from core.objio import read_obj
        from core.pipeline import grid_bounds

        from .refdata import mesh_path

        verts, tris = read_obj(mesh_path("dungeon"))
        bmin, bmax = grid_bounds(verts, NavConfig())
        w, h = grid_size(bmin, bmax, cs)
    else:
        w = h = 40
        rng = np.random.default_rng(11)
        tri, rc_bmin = grid_aligned_triangles(rng, 1500, cs, w, h, 0.3)
        # Every other triangle moved off the cut lines: each chunk holds walked and flagged
        # triangles in turn.
        tri[::2, :, [0, 2]] += rng.uniform(0.05, 0.25, (750, 3, 2)).astype(F32) * cs
        verts = np.ascontiguousarray(tri[:, :, [0, 2, 1]]).reshape(-1, 3)  # Z-up
        tris = np.arange(verts.shape[0], dtype=np.int32).reshape(-1, 3)
        bmin = rc_bmin[[0, 2, 1]]
        bmax = bmin + np.array([w * cs, h * cs, 20], F32)
    areas = mark_walkable_triangles(verts, tris, 45.0)

    def bake():
        with threads.single_threaded():
            return rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)

    def fragment_triangles():
        """The triangle of every fragment, pieces one after the other (the merge's order)."""
        with threads.single_threaded():
            pieces = rasterize._clip_pieces(verts, tris, bmin, bmax, cs, ch, w, h)
        return np.concatenate([piece[0] for piece in pieces])

    one_chunk = bake()
    n_fragments = fragment_triangles().shape[0]
    flagged: list[int] = []
    kept_sets = rasterize._clip_by_kept_sets

    def counted(tri_verts, *args):
        flagged.append(tri_verts.shape[0])
        return kept_sets(tri_verts, *args)

    monkeypatch.setattr(rasterize, "_clip_by_kept_sets", counted)
    for chunk, group in ((100, 4), (100, 1), (230, 3)):
        monkeypatch.setattr(rasterize, "CHUNK_TRIANGLES", chunk)
        monkeypatch.setattr(rasterize, "KEPT_SETS_GROUP_CHUNKS", group)
        hf = bake()
        for field in ("col_start", "smin", "smax", "area"):
            assert np.array_equal(getattr(hf, field), getattr(one_chunk, field)), field
        order = fragment_triangles()
        assert order.shape[0] == n_fragments and (np.diff(order) >= 0).all()
    assert one_chunk.span_count > 1000
    assert scene == "dungeon" or sum(flagged) > 100  # the groups carried flagged triangles


def offset_soup(rng, offset, cs, n_tris=90):
    """A soup around (offset, offset, offset / 10): dense overlapping floors and walls in a few
    cells (so the merge's order matters), long and thin triangles, vertical ones, unsnapped
    vertices and vertices exactly on cut lines (computed as Recast computes the lines)."""
    base = np.array([offset, offset, offset / 10], np.float64)
    kind = rng.choice(3, size=n_tris, p=[0.5, 0.25, 0.25])
    centre = rng.uniform(0, 3.0, size=(n_tris, 1, 3))
    spread = np.where(
        (kind == 0)[:, None, None],
        rng.uniform(-0.4, 0.4, size=(n_tris, 3, 3)),  # small, piled in a few cells
        rng.uniform(-3.0, 3.0, size=(n_tris, 3, 3)) * rng.uniform(0.02, 1, size=(n_tris, 3, 1)),
    )
    local = centre + spread
    # The piled ones span a few cells around (1, 1), whatever the cell size.
    local[kind == 0, :, :2] = spread[kind == 0, :, :2] * (5 * cs) + 1.0
    walls = kind == 1
    axis = rng.integers(0, 2, size=n_tris)
    for t in np.nonzero(walls)[0]:
        local[t, :, axis[t]] = local[t, 0, axis[t]]
    verts = (local.reshape(-1, 3) + base).astype(F32)
    bmin = (base + np.array([0.2, 0.1, -1.0])).astype(F32)
    bmax = (base + np.array([3.3, 3.4, 4.0])).astype(F32)
    # Some coordinates exactly on a cut line: Recast's (bmin + float(k) * cs) + cs in float32.
    on_line = rng.random(verts.shape[:1]) < 0.15
    for j in (0, 1):
        k = rng.integers(-1, 10, size=verts.shape[0]).astype(F32)
        lines = (bmin[j] + k * F32(cs)) + F32(cs)
        pick = on_line & (rng.random(verts.shape[0]) < 0.6)
        verts[pick, j] = lines[pick]
    tris = np.arange(n_tris * 3, dtype=np.int32).reshape(-1, 3)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    areas[rng.random(n_tris) < 0.25] = rng.choice(np.array([1, 7, 40], np.uint8))
    return verts, tris, areas, bmin, bmax


@pytest.mark.parametrize("offset", [1e3, 1e4, 1e5])
@pytest.mark.parametrize("cs", [0.3, 0.05])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("split_from", [0, 1 << 30])
def test_fast_rasterizer_equals_literal_far_from_the_origin(
    monkeypatch, offset, cs, seed, split_from
):
    """Random soups offset by 1e3-1e5 wu, on cells large enough for the edge walk and on cells
    small enough that every triangle takes the polygon path: fragments as the one-triangle-at-
    a-time oracle gives them, spans and areas as the literal merge gives them. The polygon
    path's sweeps both ways: only the polygons a line cuts through dividePoly, and all."""
    monkeypatch.setattr(rasterize, "SWEEP_SPLIT_FROM", split_from)
    rng = np.random.default_rng(1000 + seed)
    # Fewer triangles on the small cells, where the one-by-one oracle is slow.
    verts, tris, areas, bmin, bmax = offset_soup(rng, offset, cs, n_tris=90 if cs > 0.1 else 40)
    w, _ = grid_size(bmin, bmax, cs)
    fast = assert_equals_oracle(verts, tris, areas, bmin, bmax, cs, 0.2, 2)
    # Dense: some column holds many fragments, so their order decides areas.
    assert np.bincount(fast[1] + fast[2] * w).max() >= 10


@pytest.mark.parametrize(("offset", "cs"), [(5000.0, 0.3), (3e4, 0.25), (1e5, 0.8)])
def test_edge_walk_far_from_the_origin_equals_the_oracle(monkeypatch, offset, cs):
    """Cells between 2**-17 and 2**-14 of the coordinates' magnitude (undulating.obj: 0.3 wu
    cells 5 km out) take the edge walk, and give the oracle's fragments and spans; so do
    cells 2**-19 of it when the walk is forced there (the guard's margin)."""
    rng = np.random.default_rng(int(offset) + 7)
    verts, tris, areas, bmin, bmax = offset_soup(rng, offset, cs, n_tris=70)
    ch, climb = 0.2, 2
    w, h = grid_size(bmin, bmax, cs)
    assert cs > float(np.abs(verts).max()) / rasterize.EDGE_WALK_MIN_CELL_STEPS
    walked = []
    chains = rasterize._clip_by_chains
    monkeypatch.setattr(rasterize, "_clip_by_chains", lambda *a: walked.append(1) or chains(*a))
    columns, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert walked
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags
    assert_fast_equals_literal(verts, tris, areas, bmin, bmax, cs, ch, climb)
    small = float(F32(offset * 2.0**-19))
    verts, tris, areas, bmin, bmax = offset_soup(rng, offset, small, n_tris=30)
    w, h = grid_size(bmin, bmax, small)
    monkeypatch.setattr(rasterize, "EDGE_WALK_MIN_CELL_STEPS", 2.0**40)
    _, frags = oracle.rasterize(verts, tris, areas, bmin, bmax, small, ch, w, h, climb)
    fast = rasterize_fragments(verts, tris, areas, bmin, bmax, small, ch, w, h)
    assert list(zip(*(a.tolist() for a in fast), strict=False)) == frags


def dense_columns(rng, width, height, n, top, longest):
    """Fragments heaped on few columns: heights in [0, top), lengths up to ``longest``; some
    runs inside the previous one, some climbing just past the column's top so far (late shape
    changes between folded fragments), area ids including a wide one."""
    ix = rng.integers(0, width, n)
    iy = rng.integers(0, height, n)
    smin = rng.integers(0, top, n)
    smax = np.minimum(smin + rng.integers(1, longest + 1, n), top + longest)
    climbing = rng.random(n) < 0.02
    smin[climbing] = top + rng.integers(0, 2 * longest, climbing.sum())
    smax[climbing] = smin[climbing] + rng.integers(1, 4, climbing.sum())
    area = rng.choice(np.array([0, 0, 1, 5, 63, 70], np.uint8), n)
    return ix, iy, smin, smax, area


@pytest.mark.parametrize("seed", range(5))
def test_span_merge_on_heaped_columns_matches_add_span(seed):
    """Thousands of fragments per column (the merge sets apart those that only raise an area,
    folds them in between rounds or into the final spans), beside thin columns and columns
    whose height range is too tall for that: identical to addSpan one by one, for several
    climbs."""
    from core import rasterize

    rng = np.random.default_rng(500 + seed)
    width, height = 4, 3
    ix, iy, smin, smax, area = dense_columns(rng, width, height, 5000, top=40 + 30 * seed,
                                             longest=3 + 4 * seed)  # fmt: skip
    # One tall sparse column (range above its fragment count) and one thin one.
    extra = 120
    ix = np.concatenate([ix, np.zeros(extra, np.int64), [1]])
    iy = np.concatenate([iy, np.full(extra, 2), [2]])
    tall_min = rng.integers(0, 8000, extra)
    smin = np.concatenate([smin, tall_min, [5]])
    smax = np.concatenate([smax, tall_min + rng.integers(1, 30, extra), [9]])
    area = np.concatenate([area, rng.choice(np.array([0, 63], np.uint8), extra + 1)])
    order = rng.permutation(ix.shape[0])
    ix, iy, smin, smax, area = ix[order], iy[order], smin[order], smax[order], area[order]
    by_column = np.argsort(ix + iy * width, kind="stable")
    col = (ix + iy * width)[by_column]
    first = np.flatnonzero(np.diff(col, prepend=-1))
    per_col = np.diff(first, append=col.shape[0])
    split = rasterize._split_dense(
        col, smin[by_column], smax[by_column], area[by_column], first, per_col
    )
    assert split is not None and split[0].shape[0] < ix.shape[0] // 4  # the split is taken
    for climb in (0, 2, 8):
        col_start, out_min, out_max, out_area = merge_fragments(
            width, height, ix, iy, smin, smax, area, merge_threshold=climb
        )
        columns = add_spans_one_by_one(width, height, ix, iy, smin, smax, area, climb)
        expected = [tuple(s) for column in columns for s in column]
        got = list(zip(out_min.tolist(), out_max.tolist(), out_area.tolist(), strict=True))
        assert got == expected
        assert np.diff(col_start).tolist() == [len(column) for column in columns]


def overlap_soup(rng, n_tris, size):
    """Triangles with every vertex anywhere in a cube of ``size`` wu: heaps of overlapping
    geometry, hundreds of fragments per column (the dense-overlap benchmark's scene)."""
    verts = rng.uniform(0, size, size=(n_tris * 3, 3)).astype(F32)
    return verts, np.arange(n_tris * 3, dtype=np.int32).reshape(-1, 3)


@pytest.mark.parametrize("seed", range(3))
def test_dense_overlap_rasterizes_as_add_span_one_by_one(seed):
    """Overlapping triangles in a small box: the fast rasterizer's spans equal addSpan applied
    to its fragments in call order (the fragments themselves are checked against the oracle
    elsewhere), and the densest columns are dense enough to take the split merge."""
    rng = np.random.default_rng(900 + seed)
    verts, tris = overlap_soup(rng, 600, 3.0)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    areas[rng.random(areas.shape[0]) < 0.1] = 9
    bmin, bmax = verts.min(axis=0), verts.max(axis=0)
    cs, ch = 0.3, 0.2
    w, h = grid_size(bmin, bmax, cs)
    fragments = rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, w, h)
    assert np.bincount(fragments[1] + fragments[2] * w).max() > 200
    for climb in (1, 4):
        hf = rasterize_triangles(verts, tris, areas, bmin, bmax, cs, ch, w, h, climb)
        columns = add_spans_one_by_one(w, h, *fragments[1:], climb)
        assert hf.smin.tolist() == [s[0] for c in columns for s in c]
        assert hf.smax.tolist() == [s[1] for c in columns for s in c]
        assert hf.area.tolist() == [s[2] for c in columns for s in c]
        assert np.diff(hf.col_start).tolist() == [len(c) for c in columns]


def test_heaped_column_with_flat_fragments_matches_add_span():
    """Fragments without height (smax == smin, which only merge_fragments' callers can pass)
    in a heaped column: they cover no unit of height yet may add or join spans."""
    rng = np.random.default_rng(77)
    n = 400
    smin = rng.integers(0, 60, n)
    smax = smin + rng.integers(0, 6, n)
    area = rng.choice(np.array([0, 63], np.uint8), n)
    ix, iy = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for climb in (0, 2):
        col_start, out_min, out_max, out_area = merge_fragments(
            1, 1, ix, iy, smin, smax, area, merge_threshold=climb
        )
        (column,) = add_spans_one_by_one(1, 1, ix, iy, smin, smax, area, climb)
        got = list(zip(out_min.tolist(), out_max.tolist(), out_area.tolist(), strict=True))
        assert got == [tuple(s) for s in column]


def grid_aligned_triangles(rng, n, cs, width, height, degenerate):
    """float32 (n, 3, 3) triangles in Recast's frame (x, height, row) around a grid at a random
    bmin, every horizontal coordinate on a cut line as Recast computes the lines, some corners
    sharing a coordinate (edges along a line, walls standing on one, collapsed corners) and
    some triangles shrunk to a cell or two. Returns (triangles, bmin)."""
    bmin = np.array([rng.uniform(-50, 50), rng.uniform(-5, 5), rng.uniform(-50, 50)], F32)
    verts = np.empty((n, 3, 3), F32)
    verts[:, :, 1] = bmin[1] + rng.uniform(-1, 5, (n, 3))
    for axis, cells in ((0, width), (2, height)):
        lines = rasterize._cut_lines(bmin[axis], F32(cs), cells)
        verts[:, :, axis] = lines[rng.integers(0, lines.shape[0], (n, 3))]
        shared = rng.random(n) < degenerate
        src, dst = rng.integers(0, 3, n), rng.integers(0, 3, n)
        verts[shared, dst[shared], axis] = verts[shared, src[shared], axis]
    small = rng.random(n) < 0.3
    corner = verts[small, :1, :]
    near = verts[small] - corner
    near[:, :, [0, 2]] = np.sign(near[:, :, [0, 2]]) * F32(cs)
    verts[small] = corner + near
    return verts, bmin


def clip_setup(verts, bmin, cs, height):
    ics = F32(F32(1) / F32(cs))
    row_lo = np.trunc((verts[:, :, 2].min(axis=1) - bmin[2]) * ics)
    row_hi = np.trunc((verts[:, :, 2].max(axis=1) - bmin[2]) * ics)
    return (
        ics,
        np.clip(row_lo, -1, height - 1).astype(np.int64),
        np.clip(row_hi, 0, height - 1).astype(np.int64),
    )


@pytest.mark.parametrize("seed", range(40))
def test_kept_sets_equal_dividepoly_on_grid_aligned_triangles(seed):
    """Every vertex on cut lines, corners sharing lines, tiny triangles: the kept-sets path
    gives each cell Recast's dividePoly cells give (`_clip_triangles`, itself checked against
    the one-triangle oracle), float for float; it hands on at most a rare triangle."""
    rng = np.random.default_rng(7000 + seed)
    cs = float(rng.choice([1.0, 0.3, 0.25, 0.2, 0.05]))
    width, height = (int(v) for v in rng.integers(2, 30, 2))
    verts, bmin = grid_aligned_triangles(rng, 30, cs, width, height, degenerate=0.5)
    ics, row_lo, row_hi = clip_setup(verts, bmin, cs, height)
    handed_on, owner, *cells = rasterize._clip_by_kept_sets(
        verts, row_lo, row_hi, bmin, F32(cs), ics, width, height
    )
    ref = rasterize._clip_triangles(verts, np.arange(30), row_lo, row_hi, bmin, F32(cs), ics, width)
    assert handed_on.sum() <= 1
    mine = ~handed_on[ref[0]]
    expected = sorted(zip(*(a[mine].tolist() for a in ref), strict=True))
    got = sorted(zip(*(a.tolist() for a in (owner, *cells)), strict=True))
    assert got == expected
    assert len(expected) > 100


@pytest.mark.parametrize("seed", range(4))
def test_grid_aligned_scene_rasterizes_as_the_oracle_without_the_polygon_path(monkeypatch, seed):
    """A blocky level snapped to the grid (floors whose corners set the bounds, walls standing
    on cut lines, stair steps): fragments as the one-triangle oracle gives them, spans and
    areas as the literal merge, and no triangle left for the polygon-by-polygon path."""
    rng = np.random.default_rng(200 + seed)
    cs = float(rng.choice([0.3, 0.2, 0.1]))
    boxes = []
    for _ in range(12):
        lo = np.round(rng.uniform(0, 6, 3) / cs) * cs
        size = np.round(rng.uniform(0.2, 3, 3) / cs) * cs + cs
        boxes.append((lo, lo + size))
    verts, tris = [], []
    for lo, hi in [(np.zeros(3), np.array([6.0, 6.0, 0.0]))] + boxes:
        corners = np.array([[x, y, z] for z in (lo[2], hi[2]) for y in (lo[1], hi[1])
                            for x in (lo[0], hi[0])])  # fmt: skip
        base = len(verts) * 8
        verts.append(corners)
        faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        for a, b, c, d in faces:
            tris += [(base + a, base + b, base + c), (base + a, base + c, base + d)]
    verts = np.concatenate(verts).astype(F32)
    tris = np.array(tris, dtype=np.int32)
    areas = mark_walkable_triangles(verts, tris, 45.0)
    bmin, bmax = verts.min(axis=0), verts.max(axis=0) + F32(1)
    polygon_path = []
    clip = rasterize._clip_triangles
    monkeypatch.setattr(
        rasterize, "_clip_triangles", lambda *a: polygon_path.append(len(a[1])) or clip(*a)
    )
    assert_equals_oracle(verts, tris, areas, bmin, bmax, cs, 0.2, 2)
    assert not polygon_path


@pytest.mark.parametrize("n_cols", [1, 2, 1 << 16, (1 << 16) + 1, 1 << 20, (1 << 33) + 5])
def test_sorted_column_keys_follow_a_stable_sort_by_column(n_cols):
    # The clipping pieces' keys are sorted by column with their positions in input order:
    # whatever sort makes them, they must be NumPy's stable order by column, its positions in
    # the low bits, for any column range.
    shift = rasterize._position_bits(n_cols, 1)
    rng = np.random.default_rng(n_cols % 1000)
    for size in (0, 1, 7, 5000):
        columns = rng.integers(0, n_cols, size).astype(np.int64)
        if size > 2:
            columns[: size // 3] = columns[size // 3]  # many ties
        order = np.argsort(columns, kind="stable")
        expected = columns[order] << shift | order
        assert np.array_equal(rasterize._sorted_column_keys(columns, n_cols, shift), expected)


def test_sorted_column_keys_refuse_columns_beyond_the_key():
    with pytest.raises(ValueError, match="position bits"):
        rasterize._sorted_column_keys(np.zeros(3, dtype=np.int64), 1 << 40, 30)


@pytest.mark.parametrize(("n_ahead", "n_back"), [(40, 25), (30, 0), (0, 12), (1, 1)])
def test_walk_of_both_directions_equals_one_direction_at_a_time(n_ahead, n_back):
    """`_walk_sides` (both directions in shared rounds) writes the same float32 crossings as
    a `_walk_chains` call per direction, whichever direction has the longer edges."""
    rng = np.random.default_rng(n_ahead * 100 + n_back)
    lines = np.sort(rng.uniform(0.0, 60.0, 64)).astype(F32)

    def edges(n, offset):
        first = rng.integers(0, 20, n).astype(np.int64)
        n_cross = rng.integers(1, 40, n).astype(np.int64)
        # The ends lie beyond the lines they span: near below line first, far above the last.
        near_axis = lines[first] - rng.uniform(0.01, 1.0, n).astype(F32)
        far_axis = lines[first + n_cross - 1] + rng.uniform(0.01, 1.0, n).astype(F32)
        near = [near_axis.astype(F32), *(rng.uniform(-9, 9, (2, n)).astype(F32))]
        far = [far_axis.astype(F32), *(rng.uniform(-9, 9, (2, n)).astype(F32))]
        dest = offset + np.cumsum(n_cross) - n_cross
        return near, far, first, n_cross, dest, int(n_cross.sum())

    *ahead, total_ahead = edges(n_ahead, 0)
    *back, total_back = edges(n_back, total_ahead)
    total = total_ahead + total_back
    one_by_one = np.full((2, total), np.nan, F32)
    for forward, (near, far, first, n_cross, dest) in ((True, ahead), (False, back)):
        near, far = [c.copy() for c in near], [c.copy() for c in far]
        rasterize._walk_chains(near, far, forward, first, n_cross, dest, lines, one_by_one)
    together = np.full((2, total), np.nan, F32)
    rasterize._walk_sides(tuple(ahead), tuple(back), lines, together)
    assert not np.isnan(one_by_one).any()
    np.testing.assert_array_equal(together.view(np.uint32), one_by_one.view(np.uint32))
