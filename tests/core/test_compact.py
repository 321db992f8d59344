"""build_compact_heightfield: Recast parity, a slow oracle on random heightfields, small cases."""

from __future__ import annotations

import numpy as np
import pytest

from core import compact
from core.compact import (
    DIR_OFFSET_X,
    DIR_OFFSET_Y,
    NOT_CONNECTED,
    build_compact_heightfield,
    recast_cells,
)
from core.context import BuildContext
from core.errors import VoxNavError
from core.heightfield import Heightfield

from .refdata import MESHES, load_reference, ref_heightfield, zup


def make_heightfield(width, height, columns, cs=0.3, ch=0.2):
    """Heightfield from ``columns[(ix, iy)] = [(smin, smax, area), ...]`` (bottom-up)."""
    col_start = np.zeros(width * height + 1, dtype=np.int64)
    smin, smax, area = [], [], []
    for c in range(width * height):
        spans = columns.get((c % width, c // width), [])
        for lo, hi, a in spans:
            smin.append(lo)
            smax.append(hi)
            area.append(a)
        col_start[c + 1] = col_start[c] + len(spans)
    return Heightfield(
        width,
        height,
        np.zeros(3, dtype=np.float32),
        np.array([width * cs, height * cs, 10.0], dtype=np.float32),
        np.float32(cs),
        np.float32(ch),
        col_start,
        np.array(smin, dtype=np.uint16),
        np.array(smax, dtype=np.uint16),
        np.array(area, dtype=np.uint8),
    )


def random_heightfield(rng, width=None, height=None, max_spans=3, areas=(0, 63, 63, 63)):
    """Small random heightfield: up to ``max_spans`` spans per column, heights within ~30."""
    width = width or int(rng.integers(3, 12))
    height = height or int(rng.integers(3, 12))
    columns = {}
    for iy in range(height):
        for ix in range(width):
            k = int(rng.integers(0, max_spans + 1))
            top = int(rng.integers(0, 4))
            spans = []
            for _ in range(k):
                lo = top + int(rng.integers(1, 14)) if spans else top
                hi = lo + int(rng.integers(1, 4))
                spans.append((lo, hi, int(rng.choice(areas))))
                top = hi
            columns[(ix, iy)] = spans
    return make_heightfield(width, height, columns)


def slow_compact(hf, walkable_height, walkable_climb):
    """Obviously-correct loop version of rcBuildCompactHeightfield (Recast cells layout)."""
    w, h = hf.width, hf.height
    ys, hs, areas, xs, zs = [], [], [], [], []
    cell_index = np.zeros((h, w), dtype=np.int64)
    cell_count = np.zeros((h, w), dtype=np.int64)
    for c in range(w * h):
        a, b = int(hf.col_start[c]), int(hf.col_start[c + 1])
        if a == b:
            continue
        cell_index[c // w, c % w] = len(ys)
        for s in range(a, b):
            if hf.area[s] == 0:
                continue
            bot = int(hf.smax[s])
            top = int(hf.smin[s + 1]) if s + 1 < b else 0xFFFF
            ys.append(bot)
            hs.append(min(max(top - bot, 0), 255))
            areas.append(int(hf.area[s]))
            xs.append(c % w)
            zs.append(c // w)
            cell_count[c // w, c % w] += 1
    n = len(ys)
    con = np.full((n, 4), NOT_CONNECTED, dtype=np.int64)
    nbr = np.full((n, 4), -1, dtype=np.int64)
    for i in range(n):
        for d in range(4):
            nx, nz = xs[i] + DIR_OFFSET_X[d], zs[i] + DIR_OFFSET_Y[d]
            if not (0 <= nx < w and 0 <= nz < h):
                continue
            k0 = cell_index[nz, nx]
            for k in range(k0, k0 + cell_count[nz, nx]):
                bot = max(ys[i], ys[k])
                top = min(ys[i] + hs[i], ys[k] + hs[k])
                if top - bot >= walkable_height and abs(ys[k] - ys[i]) <= walkable_climb:
                    if k - k0 > 62:
                        continue
                    con[i, d] = k - k0
                    nbr[i, d] = k
                    break
    return dict(
        y=np.array(ys),
        h=np.array(hs),
        area=np.array(areas),
        x=np.array(xs),
        z=np.array(zs),
        con=con,
        neighbor=nbr,
        cell_index=cell_index,
        cell_count=cell_count,
    )


@pytest.mark.parametrize("mesh", MESHES)
def test_compact_matches_recast(mesh):
    ref = load_reference(mesh)
    hf = ref_heightfield(ref, "lowheight")
    chf = build_compact_heightfield(
        hf, int(ref["cfg_walkableHeight"]), int(ref["cfg_walkableClimb"])
    )
    assert chf.span_count == int(ref["chf_span_count"])
    np.testing.assert_array_equal(chf.span_x, ref["chf_x"])
    np.testing.assert_array_equal(chf.span_y, ref["chf_z"])
    np.testing.assert_array_equal(chf.y, ref["chf_y"])
    np.testing.assert_array_equal(chf.h, ref["chf_h"])
    np.testing.assert_array_equal(chf.con, ref["chf_con"])
    np.testing.assert_array_equal(chf.neighbor, ref["chf_neighbor"])
    np.testing.assert_array_equal(chf.area, ref["chf_area_initial"])
    index, count = recast_cells(chf, hf)
    np.testing.assert_array_equal(index, ref["chf_cell_index"])
    np.testing.assert_array_equal(count, ref["chf_cell_count"])
    np.testing.assert_array_equal(chf.bmin, zup(ref["chf_bmin"]))
    np.testing.assert_array_equal(chf.bmax, zup(ref["chf_bmax"]))
    assert chf.y.dtype == np.uint16 and chf.h.dtype == np.uint8 and chf.con.dtype == np.uint8
    assert chf.neighbor.dtype == np.int32 and chf.area.dtype == np.uint8


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chunk", [None, 5])
@pytest.mark.parametrize("workers", [1, 2])
def test_compact_matches_slow_oracle(seed, chunk, workers, monkeypatch):
    if chunk is not None:  # links built a few spans at a time, as a large heightfield is
        monkeypatch.setattr(compact, "LINK_CHUNK_SPANS", chunk)
    monkeypatch.setattr(compact, "LINK_WORKERS", workers)  # 2: chunks on two threads
    rng = np.random.default_rng(seed)
    hf = random_heightfield(rng, max_spans=4)
    wh, wc = int(rng.integers(1, 8)), int(rng.integers(0, 5))
    chf = build_compact_heightfield(hf, wh, wc)
    want = slow_compact(hf, wh, wc)
    np.testing.assert_array_equal(chf.y, want["y"])
    np.testing.assert_array_equal(chf.h, want["h"])
    np.testing.assert_array_equal(chf.area, want["area"])
    np.testing.assert_array_equal(chf.span_x, want["x"])
    np.testing.assert_array_equal(chf.span_y, want["z"])
    np.testing.assert_array_equal(chf.con, want["con"])
    np.testing.assert_array_equal(chf.neighbor, want["neighbor"])
    index, count = recast_cells(chf, hf)
    np.testing.assert_array_equal(index, want["cell_index"])
    np.testing.assert_array_equal(count, want["cell_count"])


def test_single_column_two_spans():
    # One column: floor 0..2 walkable, a ceiling 12..13 walkable on top.
    hf = make_heightfield(1, 1, {(0, 0): [(0, 2, 63), (12, 13, 63)]})
    chf = build_compact_heightfield(hf, 10, 4)
    np.testing.assert_array_equal(chf.y, [2, 13])
    np.testing.assert_array_equal(chf.h, [10, 255])  # top span: ceiling 0xFFFF
    assert (chf.con == NOT_CONNECTED).all() and (chf.neighbor == -1).all()
    np.testing.assert_array_equal(chf.cell_start, [0, 2])


def test_unwalkable_spans_are_dropped_but_bound_the_clearance():
    hf = make_heightfield(1, 1, {(0, 0): [(0, 2, 63), (5, 6, 0), (20, 21, 63)]})
    chf = build_compact_heightfield(hf, 2, 1)
    np.testing.assert_array_equal(chf.y, [2, 21])
    np.testing.assert_array_equal(chf.h, [3, 255])


def test_corridor_connections():
    # A 5 x 1 corridor on flat floor: a chain of left/right links.
    hf = make_heightfield(5, 1, {(x, 0): [(0, 1, 63)] for x in range(5)})
    chf = build_compact_heightfield(hf, 10, 4)
    np.testing.assert_array_equal(chf.neighbor[:, 0], [-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(chf.neighbor[:, 2], [1, 2, 3, 4, -1])
    assert (chf.neighbor[:, [1, 3]] == -1).all()


def test_ramp_joins_two_floors_and_climb_limits_it():
    # Two floors 0 and 12 high, joined by a ramp rising 3 per cell; a step of 5 is too high.
    heights = [0, 3, 6, 9, 12]
    cols = {(x, 0): [(0, hgt + 1, 63)] for x, hgt in enumerate(heights)}
    chf = build_compact_heightfield(make_heightfield(5, 1, cols), 10, 4)
    np.testing.assert_array_equal(chf.neighbor[:, 2], [1, 2, 3, 4, -1])
    cols[(2, 0)] = [(0, 9, 63)]  # floor 9: a step of 5 up from 4 (too high), 1 down from 10
    chf = build_compact_heightfield(make_heightfield(5, 1, cols), 10, 4)
    np.testing.assert_array_equal(chf.neighbor[:, 2], [1, -1, 3, 4, -1])


def test_connects_to_lowest_qualifying_layer():
    # Neighbour column has two floors both within climb and clearance: the lower one wins.
    cols = {(0, 0): [(0, 5, 63)], (1, 0): [(0, 3, 63), (6, 7, 63)]}
    chf = build_compact_heightfield(make_heightfield(2, 1, cols), 2, 4)
    # Span 0 (y 5) sees y 3 (clearance 6-5=1 < 2: no) and y 7 (ok): connects to layer 1.
    assert chf.con[0, 2] == 1 and chf.neighbor[0, 2] == 2
    chf = build_compact_heightfield(make_heightfield(2, 1, cols), 1, 4)
    assert chf.con[0, 2] == 0 and chf.neighbor[0, 2] == 1


def test_too_many_layers_warns_and_skips():
    # 70 stacked floors in both columns, 2 apart; connection only to the same height.
    spans = [(2 * k, 2 * k + 1, 63) for k in range(70)]
    hf = make_heightfield(2, 1, {(0, 0): spans, (1, 0): spans})
    for chunk in (compact.LINK_CHUNK_SPANS, 7):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(compact, "LINK_CHUNK_SPANS", chunk)
            ctx = BuildContext()
            chf = build_compact_heightfield(hf, 1, 0, ctx=ctx)
        assert len(ctx.warnings) == 1 and "too many layers 69 (max: 62)" in ctx.warnings[0]
    con = chf.con[:70, 2].astype(int)
    np.testing.assert_array_equal(con[:63], np.arange(63))
    assert (con[63:] == NOT_CONNECTED).all()
    assert (chf.neighbor[63:70, 2] == -1).all()


def test_bad_heightfield_raises():
    hf = make_heightfield(2, 2, {(0, 0): [(0, 1, 63)]})
    hf.col_start = hf.col_start[:-1]
    with pytest.raises(VoxNavError, match="col_start"):
        build_compact_heightfield(hf, 10, 4)
    hf = make_heightfield(2, 2, {(0, 0): [(0, 1, 63)]})
    with pytest.raises(VoxNavError, match="walkable_height"):
        build_compact_heightfield(hf, -1, 4)


def test_bits_of_4_matches_packbits():
    """The four directions of a mask row as bits 0..3, also for a strided (non-contiguous)
    mask and no rows at all."""
    from core.compact import bits_of_4

    rng = np.random.default_rng(4)
    for rows in (0, 1, 7, 500):
        wide = rng.random((rows, 8)) < 0.5
        for mask in (wide[:, :4], wide[:, ::2], np.ascontiguousarray(wide[:, 4:])):
            want = np.packbits(mask, axis=1, bitorder="little").reshape(rows)
            got = bits_of_4(mask)
            assert got.dtype == np.uint8
            np.testing.assert_array_equal(got, want)


def test_per_direction_matches_broadcasting():
    from core.compact import per_direction

    rng = np.random.default_rng(5)
    table = rng.integers(0, 4, (50, 4)).astype(np.int16)
    values = rng.integers(0, 4, 50).astype(np.uint8)
    np.testing.assert_array_equal(per_direction(np.equal, table, values), table == values[:, None])
    np.testing.assert_array_equal(
        per_direction(np.add, table, values, dtype=np.int32), table + values[:, None]
    )
    assert per_direction(np.not_equal, table[:0], values[:0]).shape == (0, 4)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_rows_of_equals_row_indexing(dtype):
    """`rows_of` (rows read as records by a 1-D take) gives ``table[index]``: any dtype,
    repeated and empty indices, and a non-contiguous table."""
    from core.compact import rows_of

    rng = np.random.default_rng(5)
    table = rng.integers(0, 1000, (50, 4)).astype(dtype)
    for index in (rng.integers(0, 50, 200), np.zeros(0, dtype=np.int64), np.array([49, 0, 49])):
        got = rows_of(table, index)
        assert got.dtype == table.dtype and np.array_equal(got, table[index])
    strided = rng.integers(0, 1000, (50, 8)).astype(dtype)[:, ::2]
    assert np.array_equal(rows_of(strided, np.arange(50)[::-1]), strided[::-1])


@pytest.mark.parametrize("mesh", ["dungeon", "nav_test"])
def test_walkable_spans_by_index_or_by_mask_are_the_same(mesh, monkeypatch):
    """The walkable spans selected by index (small heightfields) and by mask (large ones,
    `TAKE_WALKABLE_MAX_SPANS`) give the same compact heightfield."""
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(mesh))
    by_index = pipeline.bake(verts, tris, NavConfig(), stop_after="heightfield")
    hf = by_index.heightfield
    assert 0 < int((hf.area == 0).sum()) < hf.span_count  # some spans are not walkable
    got = build_compact_heightfield(hf, 10, 4)
    monkeypatch.setattr(compact, "TAKE_WALKABLE_MAX_SPANS", 0)
    want = build_compact_heightfield(hf, 10, 4)
    for name in ("cell_start", "y", "h", "area", "con", "neighbor", "span_x", "span_y"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
