"""Contours (core.contours): Recast parity, hand-built cases, and the fast walk vs the exact one."""

from __future__ import annotations

import time

import numpy as np
import pytest

from core import contours as C
from core.compact import BORDER_REG, CompactHeightfield
from core.contours import (
    RC_AREA_BORDER,
    RC_BORDER_VERTEX,
    ContourSet,
    boundary_flags,
    build_contours,
)
from core.errors import VoxNavError

from .refdata import MESHES, load_reference, ref_compact

# ----------------------------------------------------------------------------------------------
# Hand-built compact heightfields


def make_chf(
    reg: np.ndarray,
    heights: np.ndarray | None = None,
    area: np.ndarray | None = None,
    border_size: int = 0,
    climb: int = 4,
) -> CompactHeightfield:
    """One-layer compact heightfield from grids indexed [iy, ix].

    ``reg`` int (h, w): region id per cell, -1 = no span (solid/void), 0 = span without region.
    ``heights`` floor per cell (default 0); neighbours connect when within ``climb``.
    """
    reg = np.asarray(reg)
    h, w = reg.shape
    heights = np.zeros((h, w), dtype=np.int64) if heights is None else np.asarray(heights)
    area = np.full((h, w), 63, dtype=np.int64) if area is None else np.asarray(area)
    has = reg >= 0
    iy, ix = np.nonzero(has)  # row-major = column index ix + iy*w order
    n = ix.shape[0]
    span_of = np.full((h, w), -1, dtype=np.int64)
    span_of[iy, ix] = np.arange(n)
    counts = has.ravel().astype(np.int64)
    cell_start = np.zeros(w * h + 1, dtype=np.int64)
    np.cumsum(counts, out=cell_start[1:])
    con = np.full((n, 4), 63, dtype=np.uint8)
    neighbor = np.full((n, 4), -1, dtype=np.int32)
    for d, (dx, dy) in enumerate(((-1, 0), (0, 1), (1, 0), (0, -1))):
        nx, ny = ix + dx, iy + dy
        inside = (nx >= 0) & (nx < w) & (ny >= 0) & (ny < h)
        nb = np.full(n, -1, dtype=np.int64)
        nb[inside] = span_of[ny[inside], nx[inside]]
        ok = nb >= 0
        ok[ok] &= np.abs(heights[iy[ok], ix[ok]] - heights[ny[ok], nx[ok]]) <= climb
        neighbor[ok, d] = nb[ok]
        con[ok, d] = 0
    return CompactHeightfield(
        width=w,
        height=h,
        border_size=border_size,
        walkable_height=10,
        walkable_climb=climb,
        bmin=np.array([1.0, 2.0, 3.0], dtype=np.float32),
        bmax=np.array([1.0 + 0.3 * w, 2.0 + 0.3 * h, 10.0], dtype=np.float32),
        cs=np.float32(0.3),
        ch=np.float32(0.2),
        cell_start=cell_start,
        y=heights[iy, ix].astype(np.uint16),
        h=np.full(n, 255, dtype=np.uint8),
        con=con,
        neighbor=neighbor,
        area=area[iy, ix].astype(np.uint8),
        span_x=ix.astype(np.int32),
        span_y=iy.astype(np.int32),
        dist=np.zeros(n, dtype=np.uint16),
        reg=np.maximum(reg[iy, ix], 0).astype(np.uint16),
        max_distance=0,
        max_regions=int(reg.max()) + 1,
    )


def random_grid(rng: np.random.Generator, h: int = 28, w: int = 34, nseeds: int = 7):
    """Voronoi regions with some holes (no span) and some unassigned spans."""
    sy = rng.integers(0, h, nseeds)
    sx = rng.integers(0, w, nseeds)
    yy, xx = np.mgrid[0:h, 0:w]
    dist = (yy[..., None] - sy) ** 2 + (xx[..., None] - sx) ** 2
    reg = dist.argmin(axis=2) + 1
    reg[rng.random((h, w)) < 0.04] = -1
    reg[rng.random((h, w)) < 0.02] = 0
    blocks = rng.integers(0, 3)
    for _ in range(blocks):
        y0, x0 = rng.integers(2, h - 6), rng.integers(2, w - 6)
        reg[y0 : y0 + rng.integers(2, 5), x0 : x0 + rng.integers(2, 5)] = -1
    heights = rng.integers(0, 3, (h, w)) + (xx // 6)
    return reg, heights


def bordered_regions(bs: int = 2) -> np.ndarray:
    """A 12 x 12 region grid: tile-border strips of width ``bs`` (four BORDER_REG regions)
    around two plain regions side by side."""
    reg = np.zeros((12, 12), dtype=np.int64)
    reg[:, :bs] = 1 | BORDER_REG
    reg[:, -bs:] = 2 | BORDER_REG
    reg[:bs, bs:-bs] = 3 | BORDER_REG
    reg[-bs:, bs:-bs] = 4 | BORDER_REG
    reg[bs:-bs, bs:6] = 1
    reg[bs:-bs, 6:-bs] = 2
    return reg


def area2x(v: np.ndarray) -> int:
    """Twice the signed area on (x, row) with Recast's sign (outlines positive)."""
    x = v[:, 0].astype(np.int64)
    z = v[:, 2].astype(np.int64)
    return int((x * np.roll(z, 1) - np.roll(x, 1) * z).sum())


def cset_from_ref(ref: dict) -> ContourSet:
    """The reference contour set as a ContourSet (Z-up bounds)."""
    from .refdata import zup

    vs = np.append(ref["cont_verts_start"], ref["cont_verts"].shape[0]).astype(np.int64)
    rs = np.append(ref["cont_rverts_start"], ref["cont_rverts"].shape[0]).astype(np.int64)
    return ContourSet(
        verts=ref["cont_verts"].astype(np.int32),
        verts_start=vs,
        rverts=ref["cont_rverts"].astype(np.int32),
        rverts_start=rs,
        reg=ref["cont_reg"].astype(np.uint16),
        area=ref["cont_area"].astype(np.uint8),
        bmin=zup(ref["chf_bmin"]),
        bmax=zup(ref["chf_bmax"]),
        cs=np.float32(ref["cfg_cs"]),
        ch=np.float32(ref["cfg_ch"]),
        width=int(ref["cfg_width"]),
        height=int(ref["cfg_height"]),
        border_size=int(ref["chf_border_size"]),
        max_error=np.float32(ref["cfg_maxSimplificationError"]),
    )


def ref_contours(name: str) -> tuple[dict, ContourSet]:
    ref = load_reference(name)
    cset = build_contours(
        ref_compact(ref), float(ref["cfg_maxSimplificationError"]), int(ref["cfg_maxEdgeLen"])
    )
    return ref, cset


# ----------------------------------------------------------------------------------------------
# Parity with Recast


@pytest.mark.parametrize("name", MESHES)
def test_parity_with_recast(name):
    ref, cset = ref_contours(name)
    assert cset.nconts == int(ref["cset_nconts"])
    np.testing.assert_array_equal(cset.nverts, ref["cont_nverts"])
    np.testing.assert_array_equal(cset.nrverts, ref["cont_nrverts"])
    np.testing.assert_array_equal(cset.reg, ref["cont_reg"])
    np.testing.assert_array_equal(cset.area, ref["cont_area"])
    np.testing.assert_array_equal(cset.verts_start[:-1], ref["cont_verts_start"])
    np.testing.assert_array_equal(cset.rverts_start[:-1], ref["cont_rverts_start"])
    np.testing.assert_array_equal(cset.verts, ref["cont_verts"])
    np.testing.assert_array_equal(cset.rverts, ref["cont_rverts"])
    assert cset.verts.dtype == np.int32 and cset.rverts.dtype == np.int32
    assert cset.reg.dtype == np.uint16 and cset.area.dtype == np.uint8
    assert cset.width == int(ref["cfg_width"]) and cset.height == int(ref["cfg_height"])


@pytest.mark.parametrize("name", MESHES)
def test_fast_walk_matches_exact_walk_on_reference(name):
    chf = ref_compact(load_reference(name))
    _check_fast_equals_exact(chf)


def _check_fast_equals_exact(chf):
    flags = boundary_flags(chf)
    espan, edir = np.nonzero((flags[:, None] >> np.arange(4, dtype=np.uint8)) & 1)
    espan = espan.astype(np.int64)
    edir = edir.astype(np.int64)
    res = C._edge_successors(chf, flags, espan, edir)
    assert res is not None
    fast = C._walk_order_fast(flags, espan, edir, *res)
    exact = C._walk_order_exact(chf, flags, espan, edir)
    assert fast is not None
    walks = [w for w in exact if w.shape[0]]
    assert fast.start.shape[0] == len(walks) + 1
    for k, b in enumerate(walks):
        np.testing.assert_array_equal(fast.every[fast.start[k] : fast.start[k + 1]], b)


def test_reference_speed():
    ref = load_reference("dungeon")
    chf = ref_compact(ref)
    build_contours(chf, 1.3, 40)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        build_contours(chf, 1.3, 40)
        times.append(time.perf_counter() - t)
    assert min(times) < 0.2  # target < 0.04 s; loose here for shared CI machines


# ----------------------------------------------------------------------------------------------
# Hand-built cases


def test_square_room_is_four_corners():
    reg = np.ones((10, 10), dtype=np.int64)
    cset = build_contours(make_chf(reg, heights=np.full((10, 10), 5)), 1.3, 0)
    assert cset.nconts == 1
    v = cset.contour_verts(0)
    assert {(int(a), int(c)) for a, _, c, _ in v} == {(0, 0), (10, 0), (10, 10), (0, 10)}
    assert (v[:, 1] == 5).all()  # column 1 is the height
    assert (v[:, 3] == 0).all()  # all walls
    assert cset.nrverts[0] == 40  # one raw vertex per boundary cell edge
    assert area2x(v) > 0  # outlines wind positively (Recast's sign)
    assert cset.reg[0] == 1 and cset.area[0] == 63


def test_columns_are_x_height_row():
    # A 3 x 5 room (3 rows, 5 columns): x spans 0..5, the row (column 2) spans 0..3.
    reg = np.ones((3, 5), dtype=np.int64)
    heights = np.arange(5)[None, :].repeat(3, axis=0)
    cset = build_contours(make_chf(reg, heights=heights), 0.0, 0)
    raw = cset.contour_rverts(0)
    assert raw[:, 0].min() == 0 and raw[:, 0].max() == 5
    assert raw[:, 2].min() == 0 and raw[:, 2].max() == 3
    # A corner's height is the highest floor of the spans around it.
    for x, y, _, _ in raw:
        cells = [c for c in (x - 1, x) if 0 <= c < 5]
        assert y == max(cells)


def test_room_with_pillar_merges_hole():
    reg = np.ones((12, 12), dtype=np.int64)
    reg[5:7, 5:7] = -1  # pillar
    cset = build_contours(make_chf(reg), 1.3, 0)
    assert cset.nconts == 2
    nv = cset.nverts
    assert sorted(nv.tolist()) == [0, 10]  # hole merged: 4 + 4 + 2 bridge vertices
    outline = cset.contour_verts(int(np.argmax(nv)))
    assert area2x(outline) == 2 * (144 - 4)
    assert cset.nrverts.sum() == 48 + 8


def test_two_regions_portal_and_wall_tessellation():
    reg = np.ones((4, 40), dtype=np.int64)
    reg[:, 20:] = 2
    cset = build_contours(make_chf(reg), 1.3, 6)
    assert cset.nconts == 2
    for c in range(2):
        v = cset.contour_verts(c)
        nxt = np.roll(v, -1, axis=0)
        seg2 = (nxt[:, 0] - v[:, 0]) ** 2 + (nxt[:, 2] - v[:, 2]) ** 2
        wall = (v[:, 3] & 0xFFFF) == 0
        assert (seg2[wall] <= 36).all()
        other = 2 if cset.reg[c] == 1 else 1
        portal = v[(v[:, 3] & 0xFFFF) != 0]
        assert (portal[:, 3] & 0xFFFF == other).all() and portal.shape[0] == 1
        assert (portal[:, 0] == 20).all()


def test_area_border_flag():
    reg = np.ones((6, 8), dtype=np.int64)
    reg[:, 4:] = 2
    area = np.full((6, 8), 63)
    area[:, 4:] = 5
    cset = build_contours(make_chf(reg, area=area), 1.3, 0)
    for c in range(cset.nconts):
        v = cset.contour_verts(c)
        portal = (v[:, 3] & 0xFFFF) != 0
        assert ((v[portal, 3] & RC_AREA_BORDER) != 0).all()
        assert ((v[~portal, 3] & RC_AREA_BORDER) == 0).all()


def test_border_regions_give_border_vertices():
    bs = 2
    reg = bordered_regions(bs)
    cset = build_contours(make_chf(reg, border_size=bs), 1.3, 0)
    assert cset.nconts == 2  # border regions have no contours
    assert cset.width == 8 and cset.height == 8 and cset.border_size == bs
    np.testing.assert_allclose(cset.bmin[:2], np.float32([1.0, 2.0]) + np.float32(0.6))
    assert cset.verts[:, 0].min() == 0 and cset.verts[:, 0].max() == 8  # offset removed
    flagged = cset.verts[(cset.verts[:, 3] & RC_BORDER_VERTEX) != 0]
    # Where the two regions' shared edge meets the top and bottom tile sides.
    assert {(int(x), int(z)) for x, _, z, _ in flagged} == {(4, 0), (4, 8)}


def test_single_cell_region_and_enclosed_island_get_no_contour():
    reg = np.full((5, 5), -1, dtype=np.int64)
    reg[2, 2] = 1  # one span, boundary on all four sides: Recast skips it
    assert build_contours(make_chf(reg), 1.3, 0).nconts == 0
    # An island wholly inside another region has only portal edges: Recast seeds it with
    # its lower-left and upper-right corners, never adds a vertex to a portal edge, and drops
    # the 2-vertex result; the same happens to the surrounding region's hole around it.
    reg = np.full((6, 6), 2, dtype=np.int64)
    reg[2:4, 2:4] = 1
    cset = build_contours(make_chf(reg), 1.3, 0)
    assert cset.reg.tolist() == [2] and cset.nverts.tolist() == [4]


def test_bad_input():
    chf = make_chf(np.ones((4, 4), dtype=np.int64))
    with pytest.raises(VoxNavError, match="max_error"):
        build_contours(chf, -1.0, 0)
    with pytest.raises(VoxNavError, match="max_edge_len"):
        build_contours(chf, 1.0, -3)
    chf.reg = None
    with pytest.raises(VoxNavError, match="regions"):
        build_contours(chf, 1.0, 0)


def test_progress_and_input_untouched():
    chf = make_chf(np.ones((6, 6), dtype=np.int64))
    before = chf.reg.copy()
    calls = []
    build_contours(chf, 1.3, 12, progress=lambda f, m: calls.append((f, m)))
    assert calls and calls[-1][0] == 1.0
    np.testing.assert_array_equal(chf.reg, before)


# ----------------------------------------------------------------------------------------------
# Random grids: the vectorized walk against Recast's step-by-step walk


@pytest.mark.parametrize("seed", range(12))
def test_fast_walk_matches_exact_walk_random(seed):
    rng = np.random.default_rng(seed)
    reg, heights = random_grid(rng)
    chf = make_chf(reg, heights=heights, climb=1)
    _check_fast_equals_exact(chf)
    cset = build_contours(chf, 1.3, 8)
    assert cset.verts_start[-1] == cset.verts.shape[0]
    assert cset.rverts_start[-1] == cset.rverts.shape[0]


def test_one_way_connection_falls_back_to_exact_walk(monkeypatch):
    reg = np.ones((6, 6), dtype=np.int64)
    reg[:, 3:] = 2
    chf = make_chf(reg)
    # Break the link from span (1, 2) to (2, 2), same region, in one direction only.
    s = int(chf.cell_start[1 + 2 * 6])
    chf.neighbor[s, 2] = -1
    chf.con[s, 2] = 63
    flags = boundary_flags(chf)
    espan, edir = np.nonzero((flags[:, None] >> np.arange(4, dtype=np.uint8)) & 1)
    res = C._edge_successors(chf, flags, espan.astype(np.int64), edir.astype(np.int64))
    assert res is None or np.bincount(res[0]).max() > 1  # not a permutation: no fast path
    cset = build_contours(chf, 0.0, 0)
    calls = []
    real = C._walk_order_exact
    monkeypatch.setattr(C, "_walk_order_exact", lambda *a: calls.append(1) or real(*a))
    again = build_contours(chf, 0.0, 0)
    assert calls == [1]
    np.testing.assert_array_equal(cset.rverts, again.rverts)
    assert cset.nconts >= 2


# ----------------------------------------------------------------------------------------------
# Every contour simplified at once (_simplify_all) against one by one (_simplify, literal)

FIELDS = ("verts", "verts_start", "rverts", "rverts_start", "reg", "area")


def _both_ways(monkeypatch, chf, *args, **kwargs):
    fast = build_contours(chf, *args, **kwargs)
    monkeypatch.setattr(C, "BATCH_SIMPLIFY", False)
    slow = build_contours(chf, *args, **kwargs)
    monkeypatch.setattr(C, "BATCH_SIMPLIFY", True)
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)
    return fast


@pytest.mark.parametrize("seed", range(10))
def test_batched_simplification_equals_one_by_one_random(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    reg, heights = random_grid(rng)
    area = rng.choice([63, 63, 63, 5, 7], size=reg.shape)  # area borders inside regions
    chf = make_chf(reg, heights=heights, area=area, climb=1, border_size=int(seed % 3))
    wall, area_edges = C.RC_CONTOUR_TESS_WALL_EDGES, C.RC_CONTOUR_TESS_AREA_EDGES
    for flags in (wall, wall | area_edges, area_edges):
        for max_error, max_edge in ((0.0, 0), (1.3, 4), (3.0, 12), (0.5, 1)):
            _both_ways(monkeypatch, chf, max_error, max_edge, flags)


@pytest.mark.parametrize("mesh", ["dungeon", "nav_test", "undulating", "house", "bridge"])
def test_batched_simplification_equals_one_by_one_on_meshes(mesh, monkeypatch):
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(mesh))
    result = pipeline.bake(verts, tris, NavConfig(), stop_after="navmesh")
    d = result.config.derived()
    for max_error, max_edge in ((float(d.max_simplification_error), d.max_edge_len), (0.4, 3)):
        cset = _both_ways(monkeypatch, result.compact, max_error, max_edge)
        assert cset.nconts > 0


@pytest.mark.parametrize("seed", range(4))
def test_contours_of_many_fields_equal_each_alone(seed):
    # Several compact heightfields at once (agents baked together) equal one call each,
    # with a field without a single outline among them and tile borders.
    rng = np.random.default_rng(700 + seed)
    chfs = []
    for k in range(4):
        reg, heights = random_grid(rng)
        if k == 2:
            reg[:] = 0  # no region: no outline to walk
        area = rng.choice([63, 63, 5], size=reg.shape)
        chfs.append(make_chf(reg, heights=heights, area=area, climb=1, border_size=k % 2))
    wall, area_edges = C.RC_CONTOUR_TESS_WALL_EDGES, C.RC_CONTOUR_TESS_AREA_EDGES
    for flags in (wall, wall | area_edges):
        for max_error, max_edge in ((0.0, 0), (1.3, 4)):
            together = C.build_contours_many(chfs, max_error, max_edge, flags)
            assert len(together) == len(chfs)
            for chf, cset in zip(chfs, together, strict=True):
                alone = build_contours(chf, max_error, max_edge, flags)
                for field in FIELDS:
                    np.testing.assert_array_equal(
                        getattr(cset, field), getattr(alone, field), err_msg=field
                    )
    assert C.build_contours_many([], 1.3, 4) == []
    with pytest.raises(VoxNavError, match="max_error"):
        C.build_contours_many(chfs, -1.0, 4)


def test_an_outline_longer_than_recasts_walk_is_warned_about():
    """A 3300 x 5 m strip: its one region's outline takes over 40,000 steps; Recast's walk
    stops there (and VoxNav's, to match it) and leaves the navmesh incomplete, silently. Each
    agent baked together is told as well."""
    from core import pipeline
    from core.agents import AgentType, bake_agents
    from core.config import NavConfig

    verts = np.array([[0, 0, 0], [3300, 0, 0], [3300, 5, 0], [0, 5, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    config = NavConfig(agent_radius=0.0)
    assert C.CUT_SHORT_WARNING in pipeline.bake(verts, tris, config).warnings
    short = pipeline.bake(verts * np.float32([0.1, 1, 1]), tris, config)
    assert C.CUT_SHORT_WARNING not in short.warnings
    agents = [AgentType("a", radius=0.0), AgentType("b", radius=0.0, height=1.5)]
    for result in bake_agents(verts, tris, config, agents).values():
        assert C.CUT_SHORT_WARNING in result.warnings
