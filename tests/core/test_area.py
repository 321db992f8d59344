"""Erosion, median filter and volume marks: Recast parity, slow oracles, small cases."""

from __future__ import annotations

import numpy as np
import pytest

from core.area import (
    chamfer_distance,
    erode_walkable_area,
    mark_box_area,
    mark_convex_poly_area,
    mark_cylinder_area,
    median_filter_walkable_area,
)
from core.compact import NOT_CONNECTED, build_compact_heightfield
from core.errors import VoxNavError

from .refdata import MESHES, load_reference, ref_compact
from .test_compact import make_heightfield, random_heightfield


def _nb(chf, i, d):
    """Neighbour span of ``i`` in direction ``d`` by Recast's cells + con arithmetic, or -1."""
    c = int(chf.con[i, d])
    if c == NOT_CONNECTED:
        return -1
    dx, dy = (-1, 0, 1, 0)[d], (0, 1, 0, -1)[d]
    col = int(chf.span_x[i]) + dx + (int(chf.span_y[i]) + dy) * chf.width
    return int(chf.cell_start[col]) + c


def _raster(chf, reverse=False):
    """Span indices in Recast's raster order (rows, columns, spans) or its reverse by cells."""
    w, h = chf.width, chf.height
    ys = range(h - 1, -1, -1) if reverse else range(h)
    for y in ys:
        xs = range(w - 1, -1, -1) if reverse else range(w)
        for x in xs:
            c = x + y * w
            yield from range(int(chf.cell_start[c]), int(chf.cell_start[c + 1]))


def slow_chamfer(chf, dist, cap=None):
    """Recast's two raster passes, literally (in place on a Python list)."""
    dist = list(dist)

    def relax(i, a, cost):
        v = dist[a] + cost
        if cap is not None:
            v = min(v, cap)
        if v < dist[i]:
            dist[i] = v

    for i in _raster(chf):
        for d, d2 in ((0, 3), (3, 2)):
            a = _nb(chf, i, d)
            if a >= 0:
                relax(i, a, 2)
                b = _nb(chf, a, d2)
                if b >= 0:
                    relax(i, b, 3)
    for i in _raster(chf, reverse=True):
        for d, d2 in ((2, 1), (1, 0)):
            a = _nb(chf, i, d)
            if a >= 0:
                relax(i, a, 2)
                b = _nb(chf, a, d2)
                if b >= 0:
                    relax(i, b, 3)
    return dist


def slow_erode(chf, radius):
    n = chf.span_count
    area = chf.area
    dist = [255] * n
    for i in range(n):
        if area[i] == 0:
            dist[i] = 0
            continue
        count = 0
        for d in range(4):
            a = _nb(chf, i, d)
            if a < 0 or area[a] == 0:
                break
            count += 1
        if count != 4:
            dist[i] = 0
    dist = slow_chamfer(chf, dist, cap=255)
    out = area.copy()
    for i in range(n):
        if dist[i] < radius * 2:
            out[i] = 0
    return out


def slow_median(chf):
    area = chf.area
    out = area.copy()
    for i in range(chf.span_count):
        if area[i] == 0:
            continue
        samples = [int(area[i])] * 9
        for d in range(4):
            a = _nb(chf, i, d)
            if a < 0:
                continue
            if area[a] != 0:
                samples[2 * d] = int(area[a])
            b = _nb(chf, a, (d + 1) & 3)
            if b >= 0 and area[b] != 0:
                samples[2 * d + 1] = int(area[b])
        out[i] = sorted(samples)[4]
    return out


def random_compact(seed, areas=(0, 63, 63, 63)):
    rng = np.random.default_rng(seed)
    hf = random_heightfield(rng, int(rng.integers(3, 14)), int(rng.integers(3, 14)), 3, areas)
    return build_compact_heightfield(hf, int(rng.integers(1, 8)), int(rng.integers(0, 6)))


def flat_compact(mask, area=63):
    """Compact heightfield of a flat floor on the cells where ``mask[iy, ix]`` is true."""
    height, width = mask.shape
    cols = {(x, y): [(0, 1, area)] for y in range(height) for x in range(width) if mask[y, x]}
    return build_compact_heightfield(make_heightfield(width, height, cols), 10, 4)


@pytest.mark.parametrize("mesh", MESHES)
def test_erosion_matches_recast(mesh):
    ref = load_reference(mesh)
    chf = ref_compact(ref, with_regions=False)
    chf.area = ref["chf_area_initial"].astype(np.uint8)
    before = chf.area.copy()
    out = erode_walkable_area(chf, int(ref["cfg_walkableRadius"]))
    np.testing.assert_array_equal(out, ref["chf_area"])
    assert out.dtype == np.uint8
    assert int((out != 0).sum()) == int(ref["count_chf_walkable_after_erode"])
    np.testing.assert_array_equal(chf.area, before)  # input untouched


@pytest.mark.parametrize("seed", range(15))
def test_erosion_matches_slow_oracle(seed):
    chf = random_compact(seed)
    for radius in (1, 2, 3):
        np.testing.assert_array_equal(erode_walkable_area(chf, radius), slow_erode(chf, radius))


@pytest.mark.parametrize("seed", range(10))
def test_chamfer_matches_slow_oracle_with_shared_left_neighbours(seed):
    # Low walkable_height and big climb: spans of one column can share a left neighbour.
    rng = np.random.default_rng(100 + seed)
    hf = random_heightfield(rng, 10, 10, 4)
    chf = build_compact_heightfield(hf, 1, 6)
    init = np.where(rng.random(chf.span_count) < 0.15, 0, 0xFFFF)
    np.testing.assert_array_equal(chamfer_distance(chf, init), slow_chamfer(chf, init))


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.uint32, np.int64])
def test_chamfer_reads_span_coordinates_of_any_integer_type(dtype):
    # The pass plans read columns and rows per path position; coordinates held in another
    # integer type, unsigned ones included, give the same transform.
    import dataclasses

    rng = np.random.default_rng(7)
    chf = build_compact_heightfield(random_heightfield(rng, 12, 9, 3), 2, 2)
    init = np.where(rng.random(chf.span_count) < 0.15, 0, 0xFFFF)
    other = dataclasses.replace(
        chf, span_x=chf.span_x.astype(dtype), span_y=chf.span_y.astype(dtype)
    )
    np.testing.assert_array_equal(chamfer_distance(other, init), slow_chamfer(chf, init))


@pytest.mark.parametrize("seed", range(3))
def test_neighbors_with_sentinel_follow_recast_links(seed):
    from core.area import _neighbors_with_sentinel

    chf = random_compact(seed)
    n = int(chf.y.shape[0])
    got = _neighbors_with_sentinel(chf)
    want = [[_nb(chf, i, d) if _nb(chf, i, d) >= 0 else n for d in range(4)] for i in range(n)]
    assert got.shape == (n + 1, 4)
    assert np.array_equal(got[:n], np.array(want, dtype=np.int64).reshape(n, 4))
    assert (got[n] == n).all()
    assert (got[:n] == n).any() and (got[:n] < n).any()  # both kinds present


def test_thin_wall_gap_is_closed_by_erosion():
    # A 3-cell wide corridor between walls: radius 2 closes it, radius 1 keeps the middle line.
    mask = np.zeros((9, 12), dtype=bool)
    mask[3:6, :] = True
    chf = flat_compact(mask)
    assert (erode_walkable_area(chf, 2) == 0).all()
    kept = erode_walkable_area(chf, 1) != 0
    np.testing.assert_array_equal(np.nonzero(kept)[0].size, 10)  # middle row minus its ends
    assert set(chf.span_y[kept].tolist()) == {4}


def test_room_with_pillar_erodes_around_the_pillar():
    mask = np.ones((11, 11), dtype=bool)
    mask[5, 5] = False  # pillar
    chf = flat_compact(mask)
    out = erode_walkable_area(chf, 1)
    kept = {(int(x), int(y)) for x, y, a in zip(chf.span_x, chf.span_y, out, strict=True) if a}
    assert (4, 5) not in kept and (5, 4) not in kept  # next to the pillar
    assert (4, 4) in kept  # diagonal: distance 3 >= 2
    assert (0, 3) not in kept and (1, 3) in kept  # the outer edge


def test_erosion_radius_zero_keeps_everything_and_bad_radius_raises():
    chf = random_compact(3)
    np.testing.assert_array_equal(erode_walkable_area(chf, 0), chf.area)
    with pytest.raises(VoxNavError, match="radius"):
        erode_walkable_area(chf, 200)


@pytest.mark.parametrize("seed", range(10))
def test_median_filter_matches_slow_oracle(seed):
    chf = random_compact(seed, areas=(0, 5, 9, 63, 63))
    np.testing.assert_array_equal(median_filter_walkable_area(chf), slow_median(chf))


def test_median_filter_removes_a_lone_area_id():
    mask = np.ones((5, 5), dtype=bool)
    chf = flat_compact(mask)
    chf.area = chf.area.copy()
    centre = int(np.nonzero((chf.span_x == 2) & (chf.span_y == 2))[0][0])
    chf.area[centre] = 7
    out = median_filter_walkable_area(chf)
    assert out[centre] == 63 and chf.area[centre] == 7


def _cell_centres(chf):
    cs = np.float32(chf.cs)
    return (
        np.float32(chf.bmin[0]) + (chf.span_x.astype(np.float32) + 0.5) * cs,
        np.float32(chf.bmin[1]) + (chf.span_y.astype(np.float32) + 0.5) * cs,
    )


def test_mark_box_area():
    chf = flat_compact(np.ones((6, 8), dtype=bool))
    # World box over cells x 2..4, y 1..2 (cs 0.3), floor height 1 (ch 0.2 -> z 0.2).
    out = mark_box_area(chf, (0.61, 0.31, 0.0), (1.49, 0.89, 0.5), 3)
    hit = out == 3
    assert set(zip(chf.span_x[hit].tolist(), chf.span_y[hit].tolist(), strict=True)) == {
        (x, y) for x in range(2, 5) for y in range(1, 3)
    }
    # A box above the floor marks nothing; null spans stay null.
    assert (mark_box_area(chf, (0, 0, 1.0), (9, 9, 2.0), 3) == 63).all()
    chf.area = np.where(chf.span_x == 3, 0, 63).astype(np.uint8)
    out = mark_box_area(chf, (0, 0, 0), (9, 9, 1), 5)
    np.testing.assert_array_equal(out, np.where(chf.span_x == 3, 0, 5))


def test_mark_convex_poly_area_matches_crossing_test():
    chf = flat_compact(np.ones((10, 10), dtype=bool))
    tri = np.array([[0.2, 0.2], [2.8, 0.5], [1.0, 2.6]], dtype=np.float32)
    out = mark_convex_poly_area(chf, tri, -1.0, 1.0, 4)
    px, py = _cell_centres(chf)
    inside = np.zeros(chf.span_count, dtype=bool)
    for k in range(chf.span_count):
        c = False
        for i in range(3):
            j = (i - 1) % 3
            xi, yi, xj, yj = tri[i, 0], tri[i, 1], tri[j, 0], tri[j, 1]
            if (yi > py[k]) == (yj > py[k]):
                continue
            if px[k] >= (xj - xi) * (py[k] - yi) / (yj - yi) + xi:
                continue
            c = not c
        inside[k] = c
    np.testing.assert_array_equal(out == 4, inside)
    assert inside.sum() > 10
    with pytest.raises(VoxNavError, match="verts_xy"):
        mark_convex_poly_area(chf, tri[:2], 0, 1, 4)


def test_mark_convex_poly_area_in_blocks_of_spans_marks_the_same(monkeypatch):
    # A 100k-point outline was one (spans x points) array of 6 GiB: spans go in blocks now.
    from core import area

    chf = flat_compact(np.ones((40, 40), dtype=bool))
    angle = np.linspace(0.0, 2.0 * np.pi, 500, endpoint=False)
    circle = np.c_[6.0 + 5.0 * np.cos(angle), 6.0 + 5.0 * np.sin(angle)]
    whole = mark_convex_poly_area(chf, circle, -1.0, 1.0, 4)
    assert 0 < int((whole == 4).sum()) < chf.span_count
    monkeypatch.setattr(area, "CROSSING_PAIRS_PER_BLOCK", 7 * 500 + 3)  # 7 spans a block
    np.testing.assert_array_equal(mark_convex_poly_area(chf, circle, -1.0, 1.0, 4), whole)


def test_mark_cylinder_area():
    chf = flat_compact(np.ones((10, 10), dtype=bool))
    out = mark_cylinder_area(chf, (1.5, 1.5, 0.0), 0.7, 1.0, 2)
    px, py = _cell_centres(chf)
    near = (px - np.float32(1.5)) ** 2 + (py - np.float32(1.5)) ** 2 < np.float32(0.7) ** 2
    np.testing.assert_array_equal(out == 2, near)
    assert near.sum() > 0
    # Cylinder standing above the floor: nothing.
    assert (mark_cylinder_area(chf, (1.5, 1.5, 0.5), 0.7, 1.0, 2) == 63).all()
    with pytest.raises(VoxNavError, match="area id"):
        mark_cylinder_area(chf, (1.5, 1.5, 0.0), 0.7, 1.0, 99)


def test_chamfer_plans_are_kept_per_heightfield_bounded_and_die_with_it(monkeypatch):
    import gc

    from core import area

    monkeypatch.setattr(area, "_PLAN_CACHE", type(area._PLAN_CACHE)())
    chfs = [random_compact(seed) for seed in range(3)]
    init = [np.where(np.asarray(c.area) != 0, 255, 0) for c in chfs]
    first = [chamfer_distance(c, i) for c, i in zip(chfs, init, strict=True)]
    assert len(area._PLAN_CACHE) == 3
    # Interleaved heightfields reuse their own plans and give the same distances.
    for c, i, d in zip(chfs[::-1], init[::-1], first[::-1], strict=True):
        assert np.array_equal(chamfer_distance(c, i), d)
        assert np.array_equal(d, slow_chamfer(c, i))
    # Over the span budget a new entry evicts the older ones (the newest always stays).
    monkeypatch.setattr(area, "_PLAN_CACHE_SPANS", 0)
    extra = random_compact(3)
    chamfer_distance(extra, np.where(np.asarray(extra.area) != 0, 255, 0))
    assert list(area._PLAN_CACHE) == [id(extra.neighbor)]
    # An entry dies with its heightfield's arrays.
    del chfs, first, extra
    gc.collect()
    assert len(area._PLAN_CACHE) == 0


@pytest.mark.parametrize("seed", range(12))
def test_capped_erosion_distance_equals_the_row_passes_capped(seed):
    """Relaxation rounds (small caps) give the row passes' distance capped at the cap, on
    random compact heightfields whose spans may share a left neighbour."""
    from core.area import CAPPED_ROUNDS_LIMIT, erosion_distance

    rng = np.random.default_rng(300 + seed)
    hf = random_heightfield(rng, int(rng.integers(4, 16)), int(rng.integers(4, 16)), 4)
    chf = build_compact_heightfield(hf, int(rng.integers(1, 4)), int(rng.integers(0, 7)))
    full = erosion_distance(chf)
    for cap in range(0, 2 * CAPPED_ROUNDS_LIMIT + 2):
        np.testing.assert_array_equal(erosion_distance(chf, cap=cap), np.minimum(full, cap))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("threads", [False, True])
def test_chamfer_matches_slow_oracle_on_layered_grids(seed, threads, monkeypatch):
    """Several layers per column and gaps: left and right links that skip span ids (the
    chains' pieces) in both passes; the two pass plans built one after the other or on two
    threads."""
    import core.area as area_module

    monkeypatch.setattr(area_module, "PLAN_WORKERS", 2 if threads else 1)
    monkeypatch.setattr(area_module, "PARALLEL_PLAN_SPANS", 0)
    rng = np.random.default_rng(500 + seed)
    hf = random_heightfield(rng, int(rng.integers(6, 24)), int(rng.integers(6, 24)), 5)
    chf = build_compact_heightfield(hf, int(rng.integers(1, 4)), int(rng.integers(0, 8)))
    init = np.where(rng.random(chf.span_count) < 0.1, 0, 0xFFFF)
    np.testing.assert_array_equal(chamfer_distance(chf, init), slow_chamfer(chf, init))
